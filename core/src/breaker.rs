//! Circuit breaker on identical normalized failures.
//!
//! When the same request fails the same way N times in a row, retrying it again only adds
//! load: the breaker stops that path for a while and the scheduler hands the error back as a
//! constraint. Identity is a normalized fingerprint (method, endpoint template, request
//! class, stable payload hash, failure label), free of credentials and volatile values.

use std::collections::BTreeMap;

use crate::job::Route;
use crate::time::Millis;

/// `METHOD /endpoint/template` for a route; never a concrete id.
pub fn route_template(route: Route) -> &'static str {
    match route {
        Route::ChatCompletion => "POST /v1/chat/completions",
        Route::CreateRecord => "POST /v1/records",
        Route::GetItem => "GET /v1/items/{id}",
    }
}

/// The normalized identity of a failure: method and endpoint template, request class,
/// the payload's stable hash and the failure label (see `FailureKind::label`), joined by `|`.
/// Takes no credential, key, time or id, so none can leak into it, and two attempts that
/// differ only in those fingerprint the same.
pub fn fingerprint(route: Route, class: &str, payload_hash: u64, failure_label: &str) -> String {
    format!(
        "{}|{}|{:016x}|{}",
        route_template(route),
        class,
        payload_hash,
        failure_label
    )
}

/// The wider path a failure that no change of payload will fix is also counted on (seed
/// 000: "if the same endpoint, method and normalized error code fail several times in one
/// run, stop that route", so an agent cannot reorder fields, change a filter or pick a
/// nearby id and call it a new option):
///
/// - a refused credential (401, 403): the key, on every endpoint template of the route,
///   named by a hash of the key, never the key itself;
/// - any other 4xx the provider answered (400, 404, 422, ...): the task, on that endpoint
///   template and request class.
///
/// `None` for every other failure (transient ones, rate refusals, a prompt too long or
/// content refused, which a different payload can fix). The returned text is the path
/// without its failure label; the fingerprint is `<path>|<label>`.
pub fn wide_path(job: &crate::job::Job, kind: crate::classify::FailureKind) -> Option<String> {
    use crate::classify::FailureKind;
    let template = route_template(job.route);
    match kind {
        FailureKind::ClientError {
            status: 401 | 403, ..
        } => Some(format!(
            "{template}|key {:016x}",
            crate::idempotency::stable_hash(&["credential", &job.credential])
        )),
        FailureKind::ClientError { .. } => Some(format!(
            "{template}|{}|task {}/{}",
            job.class, job.tenant, job.task
        )),
        _ => None,
    }
}

/// Whether a job's wide paths (see [`wide_path`]) include `path`: the key path or the task
/// path it would take. Allocates the two candidate paths; called only while a wide path is
/// open.
pub fn wide_paths_of(job: &crate::job::Job) -> [String; 2] {
    use crate::classify::FailureKind;
    let key = FailureKind::ClientError {
        status: 401,
        code: None,
    };
    let task = FailureKind::ClientError {
        status: 422,
        code: None,
    };
    [
        wide_path(job, key).expect("401 has a key path"),
        wide_path(job, task).expect("422 has a task path"),
    ]
}

/// The fingerprint of a job's failure: reads only its route, class and payload hash.
#[cfg(test)]
pub fn job_fingerprint(job: &crate::job::Job, failure_label: &str) -> String {
    fingerprint(job.route, &job.class, job.payload_hash, failure_label)
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
struct Path {
    /// Identical failures in a row since the last success or opening.
    consecutive: u32,
    /// While open: the end of the open period (ms).
    open_until: Option<Millis>,
}

/// Counts identical failures per fingerprint and opens the circuit for `open_ms` after
/// `threshold` of them in a row. After the open period one trial attempt is let through
/// (half-open): its failure reopens at once, its success closes the path.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Breaker {
    threshold: u32,
    open_ms: Millis,
    paths: BTreeMap<String, Path>,
}

impl Breaker {
    /// A breaker opening after `threshold` identical failures in a row, for `open_ms` ms.
    /// A threshold of 0 disables it: nothing ever opens.
    pub fn new(threshold: u32, open_ms: Millis) -> Breaker {
        Breaker {
            threshold,
            open_ms,
            paths: BTreeMap::new(),
        }
    }

    /// Records one failure with fingerprint `fp` at `now` (ms). Returns true when this
    /// failure opens the circuit (so the caller can audit it once).
    pub fn record_failure(&mut self, fp: &str, now: Millis) -> bool {
        if self.threshold == 0 {
            return false;
        }
        // Look up before inserting so a known path costs no allocation.
        let path = match self.paths.get_mut(fp) {
            Some(path) => path,
            None => self.paths.entry(fp.to_owned()).or_default(),
        };
        match path.open_until {
            // Still open: an attempt that was already in flight when it opened.
            Some(until) if now < until => false,
            // Half-open trial failed: reopen at once.
            Some(_) => {
                path.open_until = Some(now.saturating_add(self.open_ms));
                true
            }
            None => {
                path.consecutive = path.consecutive.saturating_add(1);
                if path.consecutive >= self.threshold {
                    path.consecutive = 0;
                    path.open_until = Some(now.saturating_add(self.open_ms));
                    true
                } else {
                    false
                }
            }
        }
    }

    /// Records a success on the path `fp`: the failure streak ends and the circuit closes.
    pub fn record_success(&mut self, fp: &str) {
        self.paths.remove(fp);
    }

    /// Whether the path `fp` is open (no attempt should be sent) at `now` (ms).
    pub fn is_open(&self, fp: &str, now: Millis) -> bool {
        self.paths
            .get(fp)
            .and_then(|path| path.open_until)
            .is_some_and(|until| now < until)
    }

    /// When the path `fp` closes again for a trial (ms), if it is open at `now`.
    pub fn open_until(&self, fp: &str, now: Millis) -> Option<Millis> {
        self.paths
            .get(fp)
            .and_then(|path| path.open_until)
            .filter(|&until| now < until)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::job::{Job, Priority};

    fn job(credential: &str, key: Option<&str>) -> Job {
        Job {
            id: 7,
            tenant: "acme".into(),
            task: "task-1".into(),
            credential: credential.into(),
            scope: Some("account:acme".into()),
            class: "llm".into(),
            route: Route::ChatCompletion,
            resource: None,
            priority: Priority::Normal,
            prompt_tokens: 100,
            max_output_tokens: 200,
            deadline: Some(60_000),
            idempotency_key: key.map(Into::into),
            payload_hash: 0xfeed,
            external_ref: Some("ref-123".into()),
            coalescable: false,
            stream: false,
            model: None,
            sole_task: false,
        }
    }

    #[test]
    fn breaker_opens_after_n_identical_failures() {
        let mut breaker = Breaker::new(3, 30_000);
        let fp = fingerprint(Route::CreateRecord, "tool", 1, "400");
        assert!(!breaker.record_failure(&fp, 0));
        assert!(!breaker.record_failure(&fp, 10));
        assert!(!breaker.is_open(&fp, 10));
        assert!(
            breaker.record_failure(&fp, 20),
            "the third identical failure opens it"
        );
        assert!(breaker.is_open(&fp, 20));
        assert!(breaker.is_open(&fp, 30_019));
        assert_eq!(breaker.open_until(&fp, 20), Some(30_020));
        assert!(
            !breaker.is_open(&fp, 30_020),
            "closed for a trial after open_ms"
        );
    }

    #[test]
    fn different_failures_do_not_count_together() {
        let mut breaker = Breaker::new(2, 1_000);
        assert!(!breaker.record_failure(&fingerprint(Route::GetItem, "read", 1, "500"), 0));
        assert!(!breaker.record_failure(&fingerprint(Route::GetItem, "read", 1, "502"), 0));
        assert!(!breaker.record_failure(&fingerprint(Route::GetItem, "read", 2, "500"), 0));
        assert!(!breaker.is_open(&fingerprint(Route::GetItem, "read", 1, "500"), 0));
    }

    #[test]
    fn success_resets_the_failure_streak() {
        let mut breaker = Breaker::new(2, 1_000);
        let fp = fingerprint(Route::GetItem, "read", 1, "500");
        assert!(!breaker.record_failure(&fp, 0));
        breaker.record_success(&fp);
        assert!(!breaker.record_failure(&fp, 1));
        assert!(breaker.record_failure(&fp, 2));
    }

    #[test]
    fn failed_half_open_trial_reopens_at_once() {
        let mut breaker = Breaker::new(2, 1_000);
        let fp = fingerprint(Route::GetItem, "read", 1, "500");
        breaker.record_failure(&fp, 0);
        assert!(breaker.record_failure(&fp, 0));
        assert!(
            !breaker.record_failure(&fp, 500),
            "failures while open do not reopen"
        );
        assert!(
            breaker.record_failure(&fp, 1_000),
            "the trial's failure reopens"
        );
        assert!(breaker.is_open(&fp, 1_999));
        breaker.record_success(&fp);
        assert!(!breaker.is_open(&fp, 1_999), "a success closes it");
    }

    #[test]
    fn zero_threshold_disables_the_breaker() {
        let mut breaker = Breaker::new(0, 1_000);
        let fp = fingerprint(Route::GetItem, "read", 1, "500");
        for t in 0..100 {
            assert!(!breaker.record_failure(&fp, t));
        }
        assert!(!breaker.is_open(&fp, 100));
    }

    #[test]
    fn fingerprint_contains_no_credential() {
        let secret = "sk-acme-very-secret";
        let failing = job(secret, Some("stk_0123456789abcdef0123456789abcdef"));
        let fp = job_fingerprint(&failing, "429");
        assert!(!fp.contains(secret), "{fp}");
        assert!(!fp.contains("sk-"), "{fp}");
        assert!(
            !fp.contains("stk_"),
            "idempotency keys are volatile per action: {fp}"
        );
        assert!(!fp.contains("ref-123") && !fp.contains("60000"), "{fp}");
        // Same path, other credential, key and deadline: the same fingerprint.
        let mut other = job("sk-other", None);
        other.deadline = None;
        other.id = 8;
        assert_eq!(job_fingerprint(&other, "429"), fp);
    }

    #[test]
    fn fingerprint_is_normalized_on_method_template_class_payload_and_label() {
        let fp = fingerprint(Route::GetItem, "read", 0xab, "404");
        assert_eq!(fp, "GET /v1/items/{id}|read|00000000000000ab|404");
        assert_ne!(fp, fingerprint(Route::GetItem, "read", 0xac, "404"));
        assert_ne!(fp, fingerprint(Route::GetItem, "llm", 0xab, "404"));
        assert_ne!(fp, fingerprint(Route::CreateRecord, "read", 0xab, "404"));
    }
}
