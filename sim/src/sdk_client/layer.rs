//! One retry layer of a client that is not Stampede's core: an SDK's built-in retries, a
//! framework's retry wrapper. Written as data, like the core's presets, each preset read
//! from the source of the version it names.

use rand::Rng;
use rand_chacha::ChaCha8Rng;
use serde::{Deserialize, Serialize};

use super::cubic::{aws_adaptive, CubicParams};
use super::router::{litellm_defaults, RouterSpec};

/// How a layer spreads its backoff.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum LayerJitter {
    /// `delay * (1 - 0.25 * U)`: the openai and anthropic SDKs.
    ReduceUpToQuarter,
    /// `delay + U(0, max_ms)`: tenacity's `wait_exponential_jitter`.
    AddUpTo {
        /// Largest jitter added (ms).
        max_ms: u64,
    },
    /// `U(0, delay)`: full jitter (the AWS SDKs, gRPC, Envoy).
    Full,
    /// No jitter.
    None,
}

/// A budget one layer instance keeps across all its calls: what lets a client stop
/// retrying when retries stop helping, rather than per call.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum RetryBudget {
    /// The AWS SDKs' retry quota: `capacity` tokens; a retry costs `retry_cost` (a timeout
    /// or connection error `timeout_cost`) and is not made without them. A call that
    /// succeeds gives back what its last retry took, or `success_refund` when it made no
    /// retry (botocore's `release_retry_quota`).
    Quota {
        /// Tokens in a full quota, and at the start (tokens).
        capacity: u32,
        /// Tokens a retry after an error status takes (tokens).
        retry_cost: u32,
        /// Tokens a retry after a timeout or connection error takes (tokens).
        timeout_cost: u32,
        /// Tokens a call that succeeds without a retry gives back, never above `capacity`
        /// (tokens).
        success_refund: u32,
    },
    /// gRPC retry throttling (gRFC A6): a token count starting at `max_tokens`; a failure
    /// takes 1, a success gives `token_ratio` back; retries stop while the count is at or
    /// below half of `max_tokens`.
    TokenRatio {
        /// The count it starts at and never exceeds (tokens).
        max_tokens: f64,
        /// Tokens a success gives back (tokens).
        token_ratio: f64,
    },
    /// Envoy's retry budget: retries in flight at most `percent` of the requests in flight,
    /// and never fewer than `min_concurrent`.
    ActiveShare {
        /// Most retries in flight, as a share of the requests in flight (%).
        percent: f64,
        /// Retries in flight always allowed, whatever the share (retries).
        min_concurrent: u32,
    },
    /// Google SRE's adaptive throttling: over the last `window_ms`, a new request is rejected
    /// in the client with probability `max(0, (requests - k * accepts) / (requests + 1))`,
    /// where accepts are requests the provider did not refuse for load (429, 503, 529).
    AdaptiveThrottle {
        /// The multiplier K of accepts: higher rejects less (2 in the SRE book).
        k: f64,
        /// How far back requests are counted (ms).
        window_ms: u64,
    },
}

/// The state of one layer's [`RetryBudget`] in a client.
#[derive(Debug, Clone, Default)]
pub struct BudgetState {
    tokens: f64,
    /// Requests in flight and retries in flight (Envoy).
    active_requests: u32,
    active_retries: u32,
    /// `(when, accepted)` of the requests in the window (SRE).
    history: std::collections::VecDeque<(u64, bool)>,
    /// How many of `history` were accepted, kept as entries come and go: counting them at
    /// every request made a backlog's run quadratic (a million requests at once: minutes).
    accepts: usize,
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
    /// Most backoff before a retry, before the jitter (ms).
    pub cap_ms: u64,
    /// How the backoff is spread.
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
    /// Base of the backoff after a throttling answer (429, 503), when it differs (AWS).
    #[serde(default)]
    pub throttle_base_ms: Option<u64>,
    /// A budget shared by all the layer's calls, if it keeps one.
    #[serde(default)]
    pub budget: Option<RetryBudget>,
    /// A client-side rate limiter every attempt (first and retries) takes a token from
    /// before it leaves, waiting in the client for one (the AWS SDKs' adaptive mode).
    #[serde(default)]
    pub rate_limiter: Option<CubicParams>,
    /// Deployment routing and cooldowns (LiteLLM's Router): the layer picks the
    /// credential of each of its attempts and decides its retries by the router's rules.
    #[serde(default)]
    pub router: Option<RouterSpec>,
}

/// The SDK and framework presets, in the order reports list them.
pub const SDK_PRESETS: [&str; 10] = [
    "openai-python",
    "anthropic-python",
    "openai-node",
    "langchain-retry",
    "litellm-router",
    "aws-standard",
    "aws-adaptive",
    "grpc-throttling",
    "envoy-budget",
    "sre-throttling",
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
        throttle_base_ms: None,
        budget: None,
        rate_limiter: None,
        router: None,
    };
    // Budgeted infrastructure clients: full jitter, no Retry-After, 5xx, 429 and connection
    // errors retried.
    let infra = RetryLayer {
        jitter: LayerJitter::Full,
        retry_after_max_ms: None,
        above_max: AboveMax::OwnBackoff,
        retry_statuses: vec![429],
        obeys_should_retry: false,
        timeout_ms: 60_000,
        ..sdk.clone()
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
        // The AWS SDKs' "standard" retry mode: see `aws_standard`.
        "aws-standard" => aws_standard(infra),
        // The AWS SDKs' "adaptive" retry mode: "standard" plus the client-side rate limiter
        // (botocore 1.43.67 `botocore/retries/adaptive.py`, `throttling.py`, `bucket.py`;
        // smithy-rs aws-smithy-runtime `client_rate_limiter.rs`; see `cubic.rs`): a token
        // bucket whose fill rate CUBIC sets (beta 0.7, C 0.4, the send rate measured in
        // 0.5 s buckets smoothed by 0.8, at least 0.5 tokens/s, capacity max(rate, 1)),
        // enabled on the first throttling answer (429 or 503 here: botocore tells them by
        // error code), after which every attempt, first and retries, waits in the client
        // for a token. The rate is capped at twice the measured send rate on every answer.
        "aws-adaptive" => RetryLayer {
            rate_limiter: Some(aws_adaptive()),
            ..aws_standard(infra)
        },
        // LiteLLM's Router (litellm 1.80.0 `litellm/router.py`,
        // `litellm/router_utils/cooldown_handlers.py`, `litellm/utils.py`
        // `_calculate_retry_after`, `litellm/constants.py`; see `router.rs`): num_retries 2
        // (3 attempts), the deployments' own SDK clients built with max_retries 0; a retry
        // goes at once to another healthy deployment, else after the first failure's
        // Retry-After when 0 < s <= 60 s, else `min(0.5 s * 2^n, 8 s)`, plus U(0, 0.75 s);
        // failures cool deployments down (a Retry-After, else 5 s) by the router's rules;
        // any error is retried after the first (404 and a lone 401 are not), the first
        // only while a deployment is healthy. Per-attempt timeout 600 s (the openai SDK's).
        "litellm-router" => RetryLayer {
            max_attempts: 3,
            base_ms: 500,
            cap_ms: 8_000,
            jitter: LayerJitter::AddUpTo { max_ms: 750 },
            retry_after_max_ms: Some(60_000),
            above_max: AboveMax::OwnBackoff,
            retry_statuses: Vec::new(),
            retry_any_status: true,
            obeys_should_retry: false,
            router: Some(litellm_defaults()),
            ..sdk
        },
        // gRPC retries with throttling (gRFC A6): maxAttempts 4, initial backoff 100 ms,
        // multiplier 2, max 1 s, full jitter, UNAVAILABLE and RESOURCE_EXHAUSTED (503, 429);
        // retryThrottling maxTokens 10, tokenRatio 0.1.
        "grpc-throttling" => RetryLayer {
            max_attempts: 4,
            base_ms: 100,
            cap_ms: 1_000,
            retry_statuses: vec![429, 503],
            retry_5xx: false,
            budget: Some(RetryBudget::TokenRatio {
                max_tokens: 10.0,
                token_ratio: 0.1,
            }),
            ..infra
        },
        // Envoy's router retries (retry_on 5xx, reset, connect-failure, 429 as a retriable
        // status): num_retries 3, base interval 25 ms, max 250 ms, full jitter; retry budget
        // 20% of active requests, at least 3 concurrent retries.
        "envoy-budget" => RetryLayer {
            max_attempts: 4,
            base_ms: 25,
            cap_ms: 250,
            budget: Some(RetryBudget::ActiveShare {
                percent: 20.0,
                min_concurrent: 3,
            }),
            ..infra
        },
        // Google SRE adaptive throttling ("Handling Overload", SRE book ch. 21): K = 2 over
        // the last two minutes, on a client that retries 3 times with full jitter.
        "sre-throttling" => RetryLayer {
            base_ms: 100,
            cap_ms: 10_000,
            budget: Some(RetryBudget::AdaptiveThrottle {
                k: 2.0,
                window_ms: 120_000,
            }),
            ..infra
        },
        _ => return None,
    })
}

/// The AWS SDKs' "standard" retry mode (smithy-rs aws-smithy-runtime `standard_retries`,
/// botocore `retries/standard.py`): 3 attempts, full jitter over `min(base * 2^n, 20 s)`
/// with base 100 ms, 500 ms after throttling; a retry quota of 500 tokens, 5 per retry, 10
/// per timeout or connection retry, 1 back per success.
fn aws_standard(infra: RetryLayer) -> RetryLayer {
    RetryLayer {
        base_ms: 100,
        cap_ms: 20_000,
        throttle_base_ms: Some(500),
        budget: Some(RetryBudget::Quota {
            capacity: 500,
            retry_cost: 5,
            timeout_cost: 10,
            success_refund: 1,
        }),
        ..infra
    }
}

impl BudgetState {
    /// A fresh budget.
    pub fn new(budget: &RetryBudget) -> Self {
        let tokens = match budget {
            RetryBudget::Quota { capacity, .. } => f64::from(*capacity),
            RetryBudget::TokenRatio { max_tokens, .. } => *max_tokens,
            _ => 0.0,
        };
        BudgetState {
            tokens,
            ..BudgetState::default()
        }
    }

    /// Whether a new request may leave at `now` (SRE throttling rejects some in the client);
    /// `draw` is a uniform sample in [0, 1).
    pub fn admit(&mut self, budget: &RetryBudget, now: u64, draw: f64) -> bool {
        let RetryBudget::AdaptiveThrottle { k, window_ms } = budget else {
            return true;
        };
        while let Some(&(t, accepted)) = self.history.front() {
            if t + window_ms > now {
                break;
            }
            self.history.pop_front();
            self.accepts -= usize::from(accepted);
        }
        let requests = self.history.len() as f64;
        let accepts = self.accepts as f64;
        let p = ((requests - k * accepts) / (requests + 1.0)).max(0.0);
        let admitted = draw >= p;
        if !admitted {
            // A request rejected in the client still counts as a request.
            self.history.push_back((now, false));
        }
        admitted
    }

    /// Whether the budget allows a retry after `failure`; takes its cost when it does.
    pub fn allow_retry(&mut self, budget: &RetryBudget, failure: &Failure) -> bool {
        self.take_retry(budget, failure).is_some()
    }

    /// [`BudgetState::allow_retry`], saying what the retry took: `Some(tokens)` when it is
    /// allowed (0 for budgets that take no tokens), `None` when not.
    pub fn take_retry(&mut self, budget: &RetryBudget, failure: &Failure) -> Option<u32> {
        let allowed = match budget {
            RetryBudget::Quota {
                retry_cost,
                timeout_cost,
                ..
            } => {
                let cost = match failure {
                    Failure::Connection => *timeout_cost,
                    Failure::Status { .. } => *retry_cost,
                };
                if self.tokens < f64::from(cost) {
                    return None;
                }
                self.tokens -= f64::from(cost);
                return Some(cost);
            }
            RetryBudget::TokenRatio { max_tokens, .. } => self.tokens > max_tokens / 2.0,
            RetryBudget::ActiveShare {
                percent,
                min_concurrent,
            } => {
                let allowed = (f64::from(self.active_requests) * percent / 100.0)
                    .max(f64::from(*min_concurrent));
                f64::from(self.active_retries) < allowed
            }
            RetryBudget::AdaptiveThrottle { .. } => true,
        };
        allowed.then_some(0)
    }

    /// An attempt's answer: `ok` when it succeeded, `refused` when the provider refused it
    /// for load (429, 503, 529), at `now`. `last_taken`: what the call's last retry took
    /// from this budget (tokens, 0 when it made none), which a quota gives back on success.
    pub fn on_answer(
        &mut self,
        budget: &RetryBudget,
        ok: bool,
        refused: bool,
        last_taken: u32,
        now: u64,
    ) {
        match budget {
            RetryBudget::Quota {
                capacity,
                success_refund,
                ..
            } if ok => {
                let refund = if last_taken > 0 {
                    last_taken
                } else {
                    *success_refund
                };
                self.tokens = (self.tokens + f64::from(refund)).min(f64::from(*capacity));
            }
            RetryBudget::TokenRatio {
                max_tokens,
                token_ratio,
            } => {
                if ok {
                    self.tokens = (self.tokens + token_ratio).min(*max_tokens);
                } else {
                    self.tokens = (self.tokens - 1.0).max(0.0);
                }
            }
            RetryBudget::AdaptiveThrottle { .. } => {
                self.history.push_back((now, !refused));
                self.accepts += usize::from(!refused);
            }
            _ => {}
        }
    }

    /// A call started (`+1`) or ended (`-1`); a retry went out (`+1`) or came back (`-1`).
    pub fn track(&mut self, calls: i32, retries: i32) {
        self.active_requests = self.active_requests.saturating_add_signed(calls);
        self.active_retries = self.active_retries.saturating_add_signed(retries);
    }
}

/// How an attempt under a layer ended, as the layer sees it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Failure {
    /// An error status, its Retry-After (ms) and `x-should-retry`.
    Status {
        /// The HTTP status.
        status: u16,
        /// Its Retry-After (ms), if it gave one.
        retry_after_ms: Option<u64>,
        /// Its `x-should-retry` header, if it sent one.
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
        let throttled = matches!(
            failure,
            Failure::Status {
                status: 429 | 503,
                ..
            }
        );
        let base = match self.throttle_base_ms {
            Some(b) if throttled => b,
            _ => self.base_ms,
        };
        let delay = base.saturating_mul(1u64 << n).min(self.cap_ms);
        Some(match self.jitter {
            LayerJitter::ReduceUpToQuarter => {
                let u: f64 = rng.gen();
                (delay as f64 * (1.0 - 0.25 * u)) as u64
            }
            LayerJitter::AddUpTo { max_ms } => delay + rng.gen_range(0..=max_ms),
            LayerJitter::Full => rng.gen_range(0..=delay),
            LayerJitter::None => delay,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn aws_standard_spends_its_quota_and_stops_retrying_when_it_is_gone() {
        let p = sdk_preset("aws-standard").unwrap();
        let budget = p.budget.clone().unwrap();
        let mut b = BudgetState::new(&budget);
        let throttle = Failure::Status {
            status: 429,
            retry_after_ms: Some(5_000),
            should_retry: None,
        };
        let mut allowed = 0;
        while b.allow_retry(&budget, &throttle) {
            allowed += 1;
        }
        assert_eq!(allowed, 100, "500 tokens at 5 a retry");
        for _ in 0..9 {
            b.on_answer(&budget, true, false, 0, 0);
        }
        assert!(
            !b.allow_retry(&budget, &Failure::Connection),
            "a timeout costs 10"
        );
        assert!(b.allow_retry(&budget, &throttle));
        // A call that succeeds after retrying gives back what its last retry took
        // (botocore's release_retry_quota), not the 1 of a call that never retried.
        let mut b = BudgetState::new(&budget);
        assert_eq!(b.take_retry(&budget, &Failure::Connection), Some(10));
        b.on_answer(&budget, true, false, 10, 0);
        assert_eq!(b.tokens, 500.0, "the timeout's 10 came back");
        assert_eq!(b.take_retry(&budget, &throttle), Some(5));
        b.on_answer(&budget, true, false, 0, 0);
        assert_eq!(b.tokens, 496.0, "a call without a retry gives back 1");
        // Throttling backs off from 500 ms, fully jittered; Retry-After is not read.
        let mut r = rng();
        for _ in 0..100 {
            let d = p.retry_after(&throttle, 1, &mut r).unwrap();
            assert!(d <= 500, "{d}");
            let d = p.retry_after(&Failure::Connection, 2, &mut r).unwrap();
            assert!(d <= 200, "{d}");
        }
    }

    #[test]
    fn aws_adaptive_is_aws_standard_with_the_cubic_rate_limiter() {
        let standard = sdk_preset("aws-standard").unwrap();
        let adaptive = sdk_preset("aws-adaptive").unwrap();
        let limiter = adaptive.rate_limiter.clone().unwrap();
        assert_eq!(
            RetryLayer {
                name: standard.name.clone(),
                rate_limiter: None,
                ..adaptive.clone()
            },
            standard,
            "the same retries, delays and quota"
        );
        assert_eq!(
            (
                limiter.beta,
                limiter.scale_constant,
                limiter.smooth,
                limiter.bucket_ms,
                limiter.min_fill_rate,
                limiter.min_capacity,
                limiter.max_rate_adjust_scale
            ),
            (0.7, 0.4, 0.8, 500, 0.5, 1.0, 2.0)
        );
        // Statuses and delays: 429, 5xx and connections retried, 400 not; throttling
        // backs off from 500 ms, the rest from 100 ms, fully jittered, capped at 20 s;
        // Retry-After not read; 3 attempts.
        let mut r = rng();
        for s in [429, 500, 502, 503, 504] {
            assert!(
                adaptive.retry_after(&status(s, None), 1, &mut r).is_some(),
                "{s}"
            );
        }
        for s in [400, 401, 403, 404, 409] {
            assert_eq!(
                adaptive.retry_after(&status(s, None), 1, &mut r),
                None,
                "{s}"
            );
        }
        for _ in 0..100 {
            let d = adaptive
                .retry_after(&status(429, Some(30_000)), 2, &mut r)
                .unwrap();
            assert!(d <= 1_000, "{d}");
            let d = adaptive
                .retry_after(&status(500, Some(30_000)), 1, &mut r)
                .unwrap();
            assert!(d <= 100, "{d}");
        }
        let long = RetryLayer {
            max_attempts: 30,
            ..adaptive.clone()
        };
        assert!(long.retry_after(&status(429, None), 20, &mut r).unwrap() <= 20_000);
        assert_eq!(adaptive.retry_after(&Failure::Connection, 3, &mut r), None);
    }

    #[test]
    fn litellm_router_retries_anything_twice_and_reads_retry_after_up_to_a_minute() {
        let p = sdk_preset("litellm-router").unwrap();
        let spec = p.router.clone().unwrap();
        assert_eq!(p.max_attempts, 3);
        assert_eq!((p.base_ms, p.cap_ms), (500, 8_000));
        assert_eq!(p.jitter, LayerJitter::AddUpTo { max_ms: 750 });
        assert_eq!(p.retry_after_max_ms, Some(60_000));
        assert!(p.retry_any_status && p.retry_connection && !p.obeys_should_retry);
        assert!(spec.deployments.is_empty() && spec.fallbacks.is_empty());
        assert_eq!(
            (spec.cooldown_ms, spec.failure_threshold, spec.minute_ms),
            (5_000, 0.5, 60_000)
        );
        assert_eq!(spec.single_deployment_min_requests, 1_000);
        assert_eq!(p.timeout_ms, 600_000);
    }

    #[test]
    fn grpc_throttling_stops_at_half_its_tokens_and_recovers_by_the_ratio() {
        let p = sdk_preset("grpc-throttling").unwrap();
        let budget = p.budget.clone().unwrap();
        let mut b = BudgetState::new(&budget);
        for _ in 0..5 {
            assert!(b.allow_retry(&budget, &Failure::Connection));
            b.on_answer(&budget, false, true, 0, 0);
        }
        assert!(
            !b.allow_retry(&budget, &Failure::Connection),
            "5 of 10 tokens left"
        );
        for _ in 0..10 {
            b.on_answer(&budget, true, false, 0, 0);
        }
        assert!(
            b.allow_retry(&budget, &Failure::Connection),
            "6 tokens after 10 successes"
        );
    }

    #[test]
    fn envoy_allows_retries_up_to_a_fifth_of_active_requests_and_three_at_least() {
        let p = sdk_preset("envoy-budget").unwrap();
        let budget = p.budget.clone().unwrap();
        let mut b = BudgetState::new(&budget);
        b.track(5, 3);
        assert!(
            !b.allow_retry(&budget, &Failure::Connection),
            "3 retries is the floor"
        );
        b.track(15, 0);
        assert!(
            b.allow_retry(&budget, &Failure::Connection),
            "20 active: 4 retries"
        );
        b.track(0, 1);
        assert!(!b.allow_retry(&budget, &Failure::Connection));
    }

    #[test]
    fn sre_throttling_rejects_in_the_client_as_accepts_fall_behind_requests() {
        let p = sdk_preset("sre-throttling").unwrap();
        let budget = p.budget.clone().unwrap();
        let mut b = BudgetState::new(&budget);
        for t in 0..10 {
            b.on_answer(&budget, true, false, 0, t);
        }
        assert!(b.admit(&budget, 10, 0.0), "all accepted: p = 0");
        for t in 0..90 {
            b.on_answer(&budget, false, true, 0, 20 + t);
        }
        // 100 requests, 10 accepts: p = (100 - 20) / 101.
        assert!(!b.admit(&budget, 200, 0.5));
        assert!(b.admit(&budget, 200, 0.9));
        // Two minutes later the window has forgotten them.
        assert!(b.admit(&budget, 200_000, 0.0));
        // The accepts kept as entries come and go are the ones the window holds.
        assert_eq!(b.accepts, b.history.iter().filter(|(_, a)| *a).count());
        for t in 0..50 {
            b.on_answer(&budget, t % 3 == 0, t % 3 != 0, 0, 200_000 + t);
        }
        assert!(b.admit(&budget, 200_100, 0.99));
        assert_eq!((b.history.len(), b.accepts), (50, 17));
        assert!(b.admit(&budget, 400_000, 0.0));
        assert_eq!((b.history.len(), b.accepts), (0, 0));
    }

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
