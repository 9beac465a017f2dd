//! LiteLLM's Router as a retry layer: deployments (credentials of the scenario) picked at
//! random among the healthy ones, cooled down on failures, retried at once on another
//! healthy deployment and backed off otherwise, then a fallback group.
//!
//! Read from litellm 1.80.0 (the last line whose Router is Python; 1.110 moved it to a
//! compiled core): `litellm/router.py` (`Router.__init__`: num_retries =
//! `openai.DEFAULT_MAX_RETRIES` = 2, cooldown_time = `DEFAULT_COOLDOWN_TIME_SECONDS` = 5 s,
//! retry_after = 0, the deployments' own client `max_retries` 0;
//! `async_function_with_retries`, `should_retry_this_error`, `_time_to_sleep_before_retry`,
//! `deployment_callback_on_failure`: a Retry-After header is the cooldown time),
//! `litellm/router_utils/cooldown_handlers.py` (`_is_cooldown_required`,
//! `_should_cooldown_deployment`), `litellm/router_strategy/simple_shuffle.py`,
//! `litellm/utils.py` (`_calculate_retry_after`, `_should_retry`) and
//! `litellm/constants.py` (INITIAL_RETRY_DELAY 0.5 s, MAX_RETRY_DELAY 8 s, JITTER 0.75 s,
//! DEFAULT_FAILURE_THRESHOLD_PERCENT 0.5, SINGLE_DEPLOYMENT_TRAFFIC_FAILURE_THRESHOLD 1000).
//!
//! The rules, for the default router (no allowed_fails or allowed_fails_policy set):
//! - an attempt goes to a deployment picked uniformly among the healthy ones (not cooling
//!   down); with none healthy it fails in the client ("No deployments available") without
//!   reaching the provider;
//! - a failure counts in the deployment's failures of the current minute and cools it down
//!   (for the answer's Retry-After, else 5 s) when the status calls for it
//!   (`_is_cooldown_required`: 429, 401, 408, 404 and 5xx; not other 4xx nor connection
//!   errors) and: it is a 429 and the group has more than one deployment; or every one of
//!   at least 1,000 requests this minute failed; or over half of this minute's requests
//!   failed and the group has more than one deployment; or the status is not retryable
//!   (401, 404: `_should_retry` retries 408, 409, 429, 5xx);
//! - after the first failure it does not retry on a 404, on a 401 with a single deployment,
//!   nor when no deployment is healthy; later failures are retried whatever they are, up to
//!   num_retries;
//! - the sleep before a retry is 0 when the group has several deployments and one is
//!   healthy; otherwise `_calculate_retry_after` on the *first* failure's headers: its
//!   Retry-After when `0 < s <= 60`, else `min(0.5 * 2^n, 8)` s, plus `U(0, 0.75)` s, where
//!   `n` is 0 before the first two retries and then 1, 2, ... (the loop passes
//!   `remaining_retries = num_retries - current_attempt`);
//! - when the retries are spent, the fallback group (`fallbacks`) runs the same sequence,
//!   after the sleep the last failure's loop took.
//!
//! Not modelled: weights (`weight`, `rpm`, `tpm`) in the shuffle, other routing strategies,
//! allowed_fails policies, retry policies per exception type, context-window and
//! content-policy fallbacks, more than one fallback group, the sleep after the final
//! failure when there is no fallback (it delays the failure, it sends nothing), and timeouts
//! (litellm's 408, which can cool down) as distinct from connection errors (never).

use std::collections::BTreeMap;

use rand::Rng;
use rand_chacha::ChaCha8Rng;
use serde::{Deserialize, Serialize};

use super::layer::{Failure, LayerJitter, RetryLayer};

/// The router's options: the deployments it balances over and its cooldown rules. Times
/// in ms.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RouterSpec {
    /// The deployments of the model group, as credentials of the scenario; empty: the
    /// job's own credential, one deployment.
    #[serde(default)]
    pub deployments: Vec<String>,
    /// A fallback model group, tried with its own retries when the first is spent.
    #[serde(default)]
    pub fallbacks: Vec<String>,
    /// Cooldown when the answer gives no Retry-After (`cooldown_time`).
    pub cooldown_ms: u64,
    /// Fraction of a minute's requests that must fail to cool a deployment down.
    pub failure_threshold: f64,
    /// Requests in a minute, all failed, that cool down even a single deployment.
    pub single_deployment_min_requests: u32,
    /// The "current minute" of the failure counts.
    pub minute_ms: u64,
}

/// The router's defaults (litellm 1.80.0).
pub fn litellm_defaults() -> RouterSpec {
    RouterSpec {
        deployments: Vec::new(),
        fallbacks: Vec::new(),
        cooldown_ms: 5_000,
        failure_threshold: 0.5,
        single_deployment_min_requests: 1_000,
        minute_ms: 60_000,
    }
}

/// One deployment's health, shared by all the router's calls.
#[derive(Debug, Clone, Default)]
struct Health {
    cooldown_until: u64,
    minute: u64,
    successes: u32,
    fails: u32,
}

/// The router's state across calls (one `Router` instance).
#[derive(Debug, Clone, Default)]
pub struct Router {
    health: BTreeMap<String, Health>,
}

/// One call's place in the router: its group (0 the model group, 1 the fallbacks), the
/// deployment of the attempt in flight, and the first failure of the group's sequence
/// (whose headers LiteLLM reads for every sleep).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct RouterCall {
    /// 0 while the call is in the model group, 1 once it moved to the fallbacks.
    pub group: usize,
    /// The deployment (a credential of the scenario) of the attempt in flight; `None`
    /// between attempts.
    pub picked: Option<String>,
    /// The first failure of the current group's sequence, whose Retry-After LiteLLM reads
    /// for every sleep; cleared on the move to the fallbacks.
    pub origin: Option<Failure>,
}

/// What the router does after a failure.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Verdict {
    /// Another attempt in the same group after this long (ms).
    Retry(u64),
    /// The fallback group's first attempt after this long (ms).
    Fallback(u64),
    /// The error goes out.
    GiveUp,
}

/// The status LiteLLM's client answers with when no deployment is healthy
/// (`RouterRateLimitError`).
pub const NO_DEPLOYMENT_STATUS: u16 = 429;

impl Router {
    /// The deployments of `group` for a job sent with `own`.
    pub fn members<'a>(spec: &'a RouterSpec, group: usize, own: &'a str) -> Vec<&'a str> {
        match group {
            0 if spec.deployments.is_empty() => vec![own],
            0 => spec.deployments.iter().map(String::as_str).collect(),
            _ => spec.fallbacks.iter().map(String::as_str).collect(),
        }
    }

    /// Whether `deployment` is not cooling down at `now`.
    pub fn healthy(&self, deployment: &str, now: u64) -> bool {
        self.health
            .get(deployment)
            .map_or(true, |h| h.cooldown_until <= now)
    }

    /// The healthy deployments of `group` at `now`.
    pub fn healthy_members(&self, spec: &RouterSpec, group: usize, own: &str, now: u64) -> usize {
        Self::members(spec, group, own)
            .into_iter()
            .filter(|d| self.healthy(d, now))
            .count()
    }

    /// Picks the call's deployment among the healthy ones (simple-shuffle); `None` when
    /// every one is cooling down.
    pub fn pick(
        &self,
        spec: &RouterSpec,
        call: &mut RouterCall,
        own: &str,
        now: u64,
        rng: &mut ChaCha8Rng,
    ) -> Option<String> {
        let healthy: Vec<&str> = Self::members(spec, call.group, own)
            .into_iter()
            .filter(|d| self.healthy(d, now))
            .collect();
        if healthy.is_empty() {
            return None;
        }
        let d = healthy[rng.gen_range(0..healthy.len())].to_string();
        call.picked = Some(d.clone());
        Some(d)
    }

    fn counts(&mut self, spec: &RouterSpec, deployment: &str, now: u64) -> &mut Health {
        let minute = now / spec.minute_ms.max(1);
        let h = self.health.entry(deployment.to_string()).or_default();
        if h.minute != minute {
            h.minute = minute;
            h.successes = 0;
            h.fails = 0;
        }
        h
    }

    /// A success on `deployment` at `now`.
    pub fn on_success(&mut self, spec: &RouterSpec, deployment: &str, now: u64) {
        self.counts(spec, deployment, now).successes += 1;
    }

    /// A failure on `deployment` (one of a group of `group_size`) at `now`: counts it and
    /// cools the deployment down when the rules say. Returns whether it did.
    pub fn on_failure(
        &mut self,
        spec: &RouterSpec,
        deployment: &str,
        group_size: usize,
        failure: &Failure,
        now: u64,
    ) -> bool {
        let h = self.counts(spec, deployment, now);
        h.fails += 1;
        let Failure::Status {
            status,
            retry_after_ms,
            ..
        } = failure
        else {
            // APIConnectionError: never cooled down.
            return false;
        };
        let status = *status;
        // `_is_cooldown_required`.
        if (400..500).contains(&status) && !matches!(status, 429 | 401 | 408 | 404) {
            return false;
        }
        let cooldown = retry_after_ms.unwrap_or(spec.cooldown_ms);
        if cooldown == 0 {
            return false;
        }
        // `_should_cooldown_deployment`, v2 logic.
        let single = group_size <= 1;
        let total = h.successes + h.fails;
        let percent_fails = f64::from(h.fails) / f64::from(total.max(1));
        let cool = (status == 429 && !single)
            || (percent_fails >= 1.0 && total >= spec.single_deployment_min_requests)
            || (percent_fails > spec.failure_threshold && !single)
            || !retryable(status);
        if cool {
            h.cooldown_until = h.cooldown_until.max(now.saturating_add(cooldown));
        }
        cool
    }

    /// The router's verdict on `failure`, the attempt `attempts` of the call's group (the
    /// first included), after the failure was counted (`on_failure`).
    #[allow(clippy::too_many_arguments)]
    pub fn decide(
        &self,
        spec: &RouterSpec,
        layer: &RetryLayer,
        call: &mut RouterCall,
        failure: &Failure,
        attempts: u32,
        own: &str,
        now: u64,
        rng: &mut ChaCha8Rng,
    ) -> Verdict {
        let origin = call.origin.get_or_insert_with(|| failure.clone()).clone();
        let size = Self::members(spec, call.group, own).len();
        let healthy = self.healthy_members(spec, call.group, own, now);
        let retry = if attempts >= layer.max_attempts {
            false
        } else if attempts == 1 {
            // `should_retry_this_error`.
            let status = match failure {
                Failure::Status { status, .. } => Some(*status),
                Failure::Connection => None,
            };
            !(status == Some(404) || (status == Some(401) && size <= 1) || healthy == 0)
        } else {
            true
        };
        let sleep = |rng: &mut ChaCha8Rng| {
            if size > 1 && healthy > 0 {
                0
            } else {
                backoff(layer, &origin, attempts, rng)
            }
        };
        call.picked = None;
        if retry {
            return Verdict::Retry(sleep(rng));
        }
        if call.group == 0 && !spec.fallbacks.is_empty() {
            // The loop sleeps after its last failure before the error reaches the
            // fallbacks; the first failure's refusal does not.
            let delay = if attempts > 1 { sleep(rng) } else { 0 };
            call.group = 1;
            call.origin = None;
            return Verdict::Fallback(delay);
        }
        Verdict::GiveUp
    }
}

/// `litellm._should_retry`: 408, 409, 429 and 5xx.
fn retryable(status: u16) -> bool {
    matches!(status, 408 | 409 | 429) || status >= 500
}

/// `_calculate_retry_after` on the first failure's headers, before the retry that follows
/// attempt `attempts` (ms).
pub fn backoff(layer: &RetryLayer, origin: &Failure, attempts: u32, rng: &mut ChaCha8Rng) -> u64 {
    let jitter = match layer.jitter {
        LayerJitter::AddUpTo { max_ms } => rng.gen_range(0..=max_ms),
        _ => 0,
    };
    if let (
        Failure::Status {
            retry_after_ms: Some(ra),
            ..
        },
        Some(max),
    ) = (origin, layer.retry_after_max_ms)
    {
        if *ra > 0 && *ra <= max {
            return ra + jitter;
        }
    }
    let n = attempts.saturating_sub(2).min(30);
    layer.base_ms.saturating_mul(1u64 << n).min(layer.cap_ms) + jitter
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sdk_client::layer::sdk_preset;
    use rand::SeedableRng;

    fn rng() -> ChaCha8Rng {
        ChaCha8Rng::seed_from_u64(7)
    }

    fn status(s: u16, ra: Option<u64>) -> Failure {
        Failure::Status {
            status: s,
            retry_after_ms: ra,
            should_retry: None,
        }
    }

    fn two() -> (RetryLayer, RouterSpec) {
        let layer = sdk_preset("litellm-router").unwrap();
        let mut spec = layer.router.clone().unwrap();
        spec.deployments = vec!["sk-a".into(), "sk-b".into()];
        (layer, spec)
    }

    #[test]
    fn the_preset_is_two_retries_half_a_second_doubling_to_eight_plus_up_to_750_ms() {
        let layer = sdk_preset("litellm-router").unwrap();
        assert_eq!(layer.max_attempts, 3, "num_retries 2");
        let spec = layer.router.clone().unwrap();
        assert_eq!(spec.cooldown_ms, 5_000);
        let mut r = rng();
        let origin = status(500, None);
        for _ in 0..100 {
            // n is 0 before the first two retries, then 1, 2, ...
            let d = backoff(&layer, &origin, 1, &mut r);
            assert!((500..=1_250).contains(&d), "{d}");
            let d = backoff(&layer, &origin, 2, &mut r);
            assert!((500..=1_250).contains(&d), "{d}");
            let d = backoff(&layer, &origin, 3, &mut r);
            assert!((1_000..=1_750).contains(&d), "{d}");
            let d = backoff(&layer, &origin, 10, &mut r);
            assert!((8_000..=8_750).contains(&d), "capped at 8 s: {d}");
        }
    }

    #[test]
    fn a_retry_after_up_to_60_s_is_waited_plus_jitter_and_ignored_above() {
        let layer = sdk_preset("litellm-router").unwrap();
        let mut r = rng();
        for _ in 0..100 {
            let d = backoff(&layer, &status(429, Some(7_000)), 1, &mut r);
            assert!((7_000..=7_750).contains(&d), "{d}");
            let d = backoff(&layer, &status(429, Some(60_000)), 1, &mut r);
            assert!((60_000..=60_750).contains(&d), "{d}");
            let d = backoff(&layer, &status(429, Some(61_000)), 1, &mut r);
            assert!((500..=1_250).contains(&d), "own backoff above 60 s: {d}");
        }
    }

    #[test]
    fn a_429_cools_one_of_several_deployments_for_its_retry_after_else_five_seconds() {
        let (_, spec) = two();
        let mut router = Router::default();
        assert!(router.on_failure(&spec, "sk-a", 2, &status(429, Some(2_000)), 1_000));
        assert!(!router.healthy("sk-a", 2_999));
        assert!(router.healthy("sk-a", 3_000));
        assert!(router.healthy("sk-b", 1_000));
        assert!(router.on_failure(&spec, "sk-b", 2, &status(429, None), 1_000));
        assert!(!router.healthy("sk-b", 5_999));
        assert!(router.healthy("sk-b", 6_000));
        // A single deployment is not cooled down by a 429 (until 1,000 requests a minute
        // all fail).
        assert!(!router.on_failure(&spec, "sk-own", 1, &status(429, None), 1_000));
        assert!(router.healthy("sk-own", 1_000));
    }

    #[test]
    fn statuses_that_cool_down_and_those_that_do_not() {
        let (_, spec) = two();
        let fresh = |s: u16| {
            let mut router = Router::default();
            // One success first, so a single failure is exactly half of the minute.
            router.on_success(&spec, "sk-a", 0);
            router.on_failure(&spec, "sk-a", 2, &status(s, None), 0)
        };
        // Non-retryable and cooldown-required: 401, 404 cool down at once.
        assert!(fresh(401));
        assert!(fresh(404));
        // 5xx and 408 are retryable: half the minute failing is not over half.
        assert!(!fresh(500));
        assert!(!fresh(503));
        assert!(!fresh(408));
        // Other 4xx never.
        assert!(!fresh(400));
        assert!(!fresh(422));
        // Over half of the minute failed: a 500 cools down.
        let mut router = Router::default();
        router.on_success(&spec, "sk-a", 0);
        router.on_failure(&spec, "sk-a", 2, &status(500, None), 0);
        assert!(router.on_failure(&spec, "sk-a", 2, &status(500, None), 10));
        // A first request that fails is all of its minute: over half (1.80.0 has no
        // minimum count).
        assert!(router.on_failure(&spec, "sk-b", 2, &status(500, None), 60_000 - 1));
        // A new minute forgets the counts: one success, one failure is half.
        router.on_success(&spec, "sk-b", 60_000);
        assert!(!router.on_failure(&spec, "sk-b", 2, &status(500, None), 60_001));
        // Connection errors never cool down.
        let mut router = Router::default();
        for t in 0..10 {
            assert!(!router.on_failure(&spec, "sk-a", 2, &Failure::Connection, t));
        }
    }

    #[test]
    fn it_retries_at_once_on_another_healthy_deployment_and_backs_off_when_none_is() {
        let (layer, spec) = two();
        let mut router = Router::default();
        let mut r = rng();
        let mut call = RouterCall {
            picked: Some("sk-a".into()),
            ..RouterCall::default()
        };
        let f = status(429, Some(3_000));
        router.on_failure(&spec, "sk-a", 2, &f, 0);
        assert_eq!(
            router.decide(&spec, &layer, &mut call, &f, 1, "own", 0, &mut r),
            Verdict::Retry(0)
        );
        assert_eq!(
            router.pick(&spec, &mut call, "own", 0, &mut r).as_deref(),
            Some("sk-b"),
            "the only healthy one"
        );
        router.on_failure(&spec, "sk-b", 2, &status(429, None), 10);
        // None healthy, not the first failure: it sleeps on the first failure's headers.
        match router.decide(
            &spec,
            &layer,
            &mut call,
            &status(429, None),
            2,
            "own",
            10,
            &mut r,
        ) {
            Verdict::Retry(d) => assert!((3_000..=3_750).contains(&d), "{d}"),
            v => panic!("{v:?}"),
        }
        assert_eq!(router.pick(&spec, &mut call, "own", 10, &mut r), None);
        // Three attempts: spent.
        assert_eq!(
            router.decide(
                &spec,
                &layer,
                &mut call,
                &status(429, None),
                3,
                "own",
                20,
                &mut r
            ),
            Verdict::GiveUp
        );
        // A first failure with nothing healthy is not retried.
        let mut late = RouterCall::default();
        assert_eq!(
            router.decide(
                &spec,
                &layer,
                &mut late,
                &status(429, None),
                1,
                "own",
                20,
                &mut r
            ),
            Verdict::GiveUp
        );
    }

    #[test]
    fn a_single_deployment_backs_off_and_404_or_a_lone_401_is_not_retried() {
        let layer = sdk_preset("litellm-router").unwrap();
        let spec = layer.router.clone().unwrap();
        let router = Router::default();
        let mut r = rng();
        let mut call = RouterCall::default();
        match router.decide(
            &spec,
            &layer,
            &mut call,
            &status(503, None),
            1,
            "own",
            0,
            &mut r,
        ) {
            Verdict::Retry(d) => assert!((500..=1_250).contains(&d), "{d}"),
            v => panic!("{v:?}"),
        }
        // Later failures are retried whatever they are.
        assert!(matches!(
            router.decide(
                &spec,
                &layer,
                &mut call,
                &status(400, None),
                2,
                "own",
                0,
                &mut r
            ),
            Verdict::Retry(_)
        ));
        for s in [404, 401] {
            let mut call = RouterCall::default();
            assert_eq!(
                router.decide(
                    &spec,
                    &layer,
                    &mut call,
                    &status(s, None),
                    1,
                    "own",
                    0,
                    &mut r
                ),
                Verdict::GiveUp,
                "{s}"
            );
        }
        // A 401 with another deployment to go to is retried.
        let (layer, spec) = two();
        let mut call = RouterCall::default();
        assert!(matches!(
            router.decide(
                &spec,
                &layer,
                &mut call,
                &status(401, None),
                1,
                "own",
                0,
                &mut r
            ),
            Verdict::Retry(0)
        ));
    }

    #[test]
    fn spent_retries_move_to_the_fallback_group_once() {
        let (layer, mut spec) = two();
        spec.fallbacks = vec!["sk-c".into()];
        let router = Router::default();
        let mut r = rng();
        let mut call = RouterCall::default();
        assert!(matches!(
            router.decide(
                &spec,
                &layer,
                &mut call,
                &status(500, None),
                3,
                "own",
                0,
                &mut r
            ),
            Verdict::Fallback(0)
        ));
        assert_eq!(call.group, 1);
        assert_eq!(
            router.pick(&spec, &mut call, "own", 0, &mut r).as_deref(),
            Some("sk-c")
        );
        // The fallback group is one deployment: it backs off, then gives up for good.
        assert!(matches!(
            router.decide(&spec, &layer, &mut call, &status(500, None), 1, "own", 0, &mut r),
            Verdict::Retry(d) if d >= 500
        ));
        assert_eq!(
            router.decide(
                &spec,
                &layer,
                &mut call,
                &status(500, None),
                3,
                "own",
                0,
                &mut r
            ),
            Verdict::GiveUp
        );
    }

    #[test]
    fn the_shuffle_spreads_over_the_healthy_deployments_and_is_seeded() {
        let (_, spec) = two();
        let router = Router::default();
        let picks = |seed| {
            let mut r = ChaCha8Rng::seed_from_u64(seed);
            (0..200)
                .map(|_| {
                    let mut c = RouterCall::default();
                    router.pick(&spec, &mut c, "own", 0, &mut r).unwrap()
                })
                .collect::<Vec<_>>()
        };
        let a = picks(1);
        assert_eq!(a, picks(1));
        let on_a = a.iter().filter(|d| *d == "sk-a").count();
        assert!((60..=140).contains(&on_a), "{on_a}");
    }
}
