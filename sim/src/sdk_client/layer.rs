//! One retry layer of a client that is not Stampede's core: an SDK's built-in retries, a
//! framework's retry wrapper. Written as data, like the core's presets, each preset read
//! from the source of the version it names.

use rand::Rng;
use rand_chacha::ChaCha8Rng;
use serde::{Deserialize, Serialize};

/// How a layer spreads its backoff.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum LayerJitter {
    /// `delay * (1 - 0.25 * U)`: the openai and anthropic SDKs.
    ReduceUpToQuarter,
    /// `delay + U(0, max_ms)`: tenacity's `wait_exponential_jitter`.
    AddUpTo { max_ms: u64 },
    /// No jitter.
    None,
}

/// What a layer does with a Retry-After above the most it honours.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum AboveMax {
    /// Gives up (openai-python: "Not retrying because Retry-After exceeds the maximum").
    GiveUp,
    /// Ignores it and backs off on its own (openai-node).
    OwnBackoff,
}

/// One retry layer's policy. Times in ms.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RetryLayer {
    /// The preset it came from (reports and messages).
    pub name: String,
    /// Attempts of what is under it, the first included.
    pub max_attempts: u32,
    /// Backoff before retry n (0-based): `min(base_ms * 2^n, cap_ms)`, then the jitter.
    pub base_ms: u64,
    pub cap_ms: u64,
    pub jitter: LayerJitter,
    /// Retry-After honoured as the wait when `0 < Retry-After <= this` (`None`: ignored).
    pub retry_after_max_ms: Option<u64>,
    /// A Retry-After above `retry_after_max_ms`.
    pub above_max: AboveMax,
    /// Statuses it retries (besides 5xx when `retry_5xx`).
    pub retry_statuses: Vec<u16>,
    /// Whether every 5xx is retried.
    pub retry_5xx: bool,
    /// Whether every error status is retried (a framework that retries any exception).
    pub retry_any_status: bool,
    /// Whether connection errors and timeouts are retried (POST included).
    pub retry_connection: bool,
    /// Whether `x-should-retry` decides over the status rules.
    pub obeys_should_retry: bool,
    /// Per-attempt timeout (the SDK's read timeout).
    pub timeout_ms: u64,
}

/// The SDK and framework presets, in the order reports list them.
pub const SDK_PRESETS: [&str; 4] = [
    "openai-python",
    "anthropic-python",
    "openai-node",
    "langchain-retry",
];

/// A preset by name.
pub fn sdk_preset(name: &str) -> Option<RetryLayer> {
    let sdk = RetryLayer {
        name: name.to_string(),
        max_attempts: 3,
        base_ms: 500,
        cap_ms: 8_000,
        jitter: LayerJitter::ReduceUpToQuarter,
        retry_after_max_ms: Some(120_000),
        above_max: AboveMax::GiveUp,
        retry_statuses: vec![408, 409, 429],
        retry_5xx: true,
        retry_any_status: false,
        retry_connection: true,
        obeys_should_retry: true,
        timeout_ms: 600_000,
    };
    Some(match name {
        // openai-python 3.57.0, src/openai/_base_client.py (`_should_retry`,
        // `_calculate_retry_timeout`) and _constants.py: DEFAULT_MAX_RETRIES = 2,
        // INITIAL_RETRY_DELAY = 0.5 s, MAX_RETRY_DELAY = 8 s, MAX_RETRY_AFTER_DELAY = 120 s
        // (above it: no retry), jitter `1 - 0.25 * random()`, retry-after-ms first, then
        // Retry-After seconds, then an HTTP-date; 408, 409, 429, >= 500, timeouts and
        // connection errors, POST included; x-should-retry obeyed; DEFAULT_TIMEOUT 600 s.
        "openai-python" => sdk,
        // anthropic-python 2.14.0, src/anthropic/_base_client.py: the same, but any
        // positive Retry-After is waited out (no cap).
        "anthropic-python" => RetryLayer {
            retry_after_max_ms: Some(u64::MAX),
            ..sdk
        },
        // openai-node (src/core.ts `retryRequest`): the same delays, but a Retry-After
        // above 60 s falls back to its own backoff instead of giving up.
        "openai-node" => RetryLayer {
            retry_after_max_ms: Some(60_000),
            above_max: AboveMax::OwnBackoff,
            ..sdk
        },
        // LangChain's Runnable.with_retry (langchain_core/runnables/retry.py): tenacity
        // `stop_after_attempt(3)` and `wait_exponential_jitter(initial=1, max=60, jitter=1)`,
        // retrying any exception, Retry-After never read.
        "langchain-retry" => RetryLayer {
            max_attempts: 3,
            base_ms: 1_000,
            cap_ms: 60_000,
            jitter: LayerJitter::AddUpTo { max_ms: 1_000 },
            retry_after_max_ms: None,
            above_max: AboveMax::OwnBackoff,
            retry_statuses: Vec::new(),
            retry_5xx: true,
            retry_any_status: true,
            obeys_should_retry: false,
            ..sdk
        },
        _ => return None,
    })
}

/// How an attempt under a layer ended, as the layer sees it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Failure {
    /// An error status, its Retry-After (ms) and `x-should-retry`.
    Status {
        status: u16,
        retry_after_ms: Option<u64>,
        should_retry: Option<bool>,
    },
    /// No answer: a drop, a reset, a cut stream, or the timeout.
    Connection,
}

impl RetryLayer {
    /// Whether this layer retries after `failure` with `attempts` made so far (the first
    /// included), and after how long (ms).
    pub fn retry_after(
        &self,
        failure: &Failure,
        attempts: u32,
        rng: &mut ChaCha8Rng,
    ) -> Option<u64> {
        if attempts >= self.max_attempts {
            return None;
        }
        let mut server_wait = None;
        match failure {
            Failure::Connection => {
                if !self.retry_connection {
                    return None;
                }
            }
            Failure::Status {
                status,
                retry_after_ms,
                should_retry,
            } => {
                if let (Some(max), Some(ra)) = (self.retry_after_max_ms, retry_after_ms) {
                    if *ra > max {
                        if self.above_max == AboveMax::GiveUp {
                            return None;
                        }
                    } else if *ra > 0 {
                        server_wait = Some(*ra);
                    }
                }
                let by_status = self.retry_any_status
                    || self.retry_statuses.contains(status)
                    || (self.retry_5xx && *status >= 500);
                let retry = match should_retry {
                    Some(told) if self.obeys_should_retry => *told,
                    _ => by_status,
                };
                if !retry {
                    return None;
                }
            }
        }
        if let Some(wait) = server_wait {
            return Some(wait);
        }
        let n = attempts.saturating_sub(1).min(30);
        let delay = self.base_ms.saturating_mul(1u64 << n).min(self.cap_ms);
        Some(match self.jitter {
            LayerJitter::ReduceUpToQuarter => {
                let u: f64 = rng.gen();
                (delay as f64 * (1.0 - 0.25 * u)) as u64
            }
            LayerJitter::AddUpTo { max_ms } => delay + rng.gen_range(0..=max_ms),
            LayerJitter::None => delay,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::SeedableRng;

    fn rng() -> ChaCha8Rng {
        ChaCha8Rng::seed_from_u64(1)
    }

    fn status(s: u16, ra: Option<u64>) -> Failure {
        Failure::Status {
            status: s,
            retry_after_ms: ra,
            should_retry: None,
        }
    }

    #[test]
    fn openai_python_backs_off_half_a_second_doubling_to_eight_less_up_to_a_quarter() {
        let p = sdk_preset("openai-python").unwrap();
        let mut r = rng();
        for _ in 0..200 {
            let first = p.retry_after(&status(503, None), 1, &mut r).unwrap();
            assert!((375..=500).contains(&first), "{first}");
            let second = p.retry_after(&status(503, None), 2, &mut r).unwrap();
            assert!((750..=1_000).contains(&second), "{second}");
        }
        let capped = RetryLayer {
            max_attempts: 10,
            ..p.clone()
        };
        let late = capped.retry_after(&Failure::Connection, 8, &mut r).unwrap();
        assert!((6_000..=8_000).contains(&late), "{late}");
        assert_eq!(
            p.retry_after(&status(503, None), 3, &mut r),
            None,
            "3 attempts"
        );
    }

    #[test]
    fn openai_python_waits_a_retry_after_up_to_two_minutes_and_gives_up_above() {
        let p = sdk_preset("openai-python").unwrap();
        let mut r = rng();
        assert_eq!(
            p.retry_after(&status(429, Some(7_000)), 1, &mut r),
            Some(7_000)
        );
        assert_eq!(
            p.retry_after(&status(429, Some(120_000)), 1, &mut r),
            Some(120_000)
        );
        assert_eq!(p.retry_after(&status(429, Some(121_000)), 1, &mut r), None);
        let node = sdk_preset("openai-node").unwrap();
        let own = node
            .retry_after(&status(429, Some(61_000)), 1, &mut r)
            .unwrap();
        assert!(
            (375..=500).contains(&own),
            "node falls back to its backoff: {own}"
        );
        let anthropic = sdk_preset("anthropic-python").unwrap();
        assert_eq!(
            anthropic.retry_after(&status(429, Some(600_000)), 1, &mut r),
            Some(600_000),
            "anthropic waits any Retry-After"
        );
    }

    #[test]
    fn the_sdks_retry_408_409_429_5xx_and_connections_and_obey_x_should_retry() {
        let p = sdk_preset("openai-python").unwrap();
        let mut r = rng();
        for s in [408, 409, 429, 500, 502, 503, 504, 529] {
            assert!(p.retry_after(&status(s, None), 1, &mut r).is_some(), "{s}");
        }
        for s in [400, 401, 403, 404, 422] {
            assert_eq!(p.retry_after(&status(s, None), 1, &mut r), None, "{s}");
        }
        assert!(p.retry_after(&Failure::Connection, 1, &mut r).is_some());
        let told = |should| Failure::Status {
            status: 503,
            retry_after_ms: None,
            should_retry: Some(should),
        };
        assert_eq!(p.retry_after(&told(false), 1, &mut r), None);
        let bad = Failure::Status {
            status: 400,
            retry_after_ms: None,
            should_retry: Some(true),
        };
        assert!(p.retry_after(&bad, 1, &mut r).is_some());
    }

    #[test]
    fn langchain_retries_anything_three_times_with_tenacity_jitter_ignoring_retry_after() {
        let p = sdk_preset("langchain-retry").unwrap();
        let mut r = rng();
        let first = p
            .retry_after(&status(400, Some(30_000)), 1, &mut r)
            .unwrap();
        assert!((1_000..=2_000).contains(&first), "{first}");
        let second = p
            .retry_after(&status(429, Some(30_000)), 2, &mut r)
            .unwrap();
        assert!((2_000..=3_000).contains(&second), "{second}");
        assert_eq!(p.retry_after(&status(429, None), 3, &mut r), None);
    }
}
