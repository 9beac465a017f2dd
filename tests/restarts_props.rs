//! Property tests of restarts and idempotency: random small workloads, fault schedules
//! (drops before and after commit, hangs, 429s, 500s, 503s) and crash points, played by the
//! virtual driver with the `stampede` preset. For every case:
//!
//! - no side effect is committed twice for one logical action (the provider honours keys);
//! - no uncertain write is re-sent without a look-up showing it absent (`blind_resends`);
//! - every logical action ends in exactly one terminal state (or is left
//!   `reconciliation_required`, counted with the escalations);
//! - attempt budgets hold across restarts: no LLM call reaches the provider more often than
//!   its class allows, however many times the runner died;
//! - cancelled work never wakes after a restart: no attempt of a cancelled task reaches the
//!   provider once the cancellation could be applied.
//!
//! Cases: 48 by default (a few seconds in a debug build). Run many more with
//! `STAMPEDE_PROPTEST_CASES=5000 cargo test --release --test restarts_props` (the standard
//! `PROPTEST_CASES` works too). A failing case shrinks and its message is a scenario file:
//! save it as `case.toml` and `stampede run case.toml` replays it exactly.

use std::collections::BTreeMap;

use proptest::prelude::*;
use proptest::test_runner::{Config, TestRunner};
use stampede_reports::AttemptRow;
use stampede_sim::scenario::{self, CrashPoint, CrashSpec, CrashTrigger};
use stampede_sim::virtual_driver::{self, AttemptSink};

/// One provider fault rule of a case.
#[derive(Debug, Clone, PartialEq)]
struct Fault {
    /// `fault = "..."` or `status = N`.
    what: FaultKind,
    /// Whether it only hits record writes (else every route).
    writes_only: bool,
    /// Percent of matching attempts hit (1..=40).
    percent: u32,
}

#[derive(Debug, Clone, Copy, PartialEq)]
enum FaultKind {
    Connection(&'static str),
    Status(u16),
}

/// A generated case: everything needed to print its scenario.
#[derive(Debug, Clone, PartialEq)]
struct Case {
    seed: u64,
    /// Uncertain writes (one attempt, then reconciliation).
    writes: u64,
    /// Arrivals per second of the writes.
    write_rate: u32,
    /// LLM calls (retried within their class budget).
    llms: u64,
    /// LLM calls of a tenant whose tasks are all cancelled at `cancel_at_ms`.
    cancelled: u64,
    cancel_at_ms: u64,
    faults: Vec<Fault>,
    crashes: Vec<CrashSpec>,
}

const DURATION_MS: u64 = 600_000;

impl Case {
    /// The case as a scenario file that `stampede run` plays.
    fn to_toml(&self) -> String {
        let mut s = format!(
            "name = \"restarts-case\"\nseed = {}\nduration = \"{DURATION_MS}ms\"\n\n\
             [provider]\nlatency = {{ median = \"200ms\", p99 = \"1s\" }}\n\n\
             [[provider.scopes]]\nid = \"account:acme\"\nrpm = 600\nconcurrency = 20\n\n\
             [[provider.credentials]]\nkey = \"sk-acme\"\nscope = \"account:acme\"\n",
            self.seed
        );
        for f in &self.faults {
            s.push_str("\n[[provider.faults]]\n");
            match f.what {
                FaultKind::Connection(name) => s.push_str(&format!("fault = \"{name}\"\n")),
                FaultKind::Status(code) => s.push_str(&format!("status = {code}\n")),
            }
            if f.writes_only {
                s.push_str("route = \"create_record\"\n");
            }
            s.push_str(&format!("probability = {}\n", f.percent as f64 / 100.0));
        }
        s.push_str(&format!(
            "\n[[workload]]\ntenant = \"acme\"\ncredential = \"sk-acme\"\nclass = \"uncertain_write\"\n\
             count = {}\narrival = {{ rate = \"{}/s\" }}\n",
            self.writes, self.write_rate
        ));
        if self.llms > 0 {
            s.push_str(&format!(
                "\n[[workload]]\ntenant = \"acme\"\ncredential = \"sk-acme\"\nclass = \"llm\"\n\
                 count = {}\narrival = \"backlog\"\nprompt_tokens = 100\nmax_output_tokens = 50\n",
                self.llms
            ));
        }
        if self.cancelled > 0 {
            s.push_str(&format!(
                "\n[[workload]]\ntenant = \"cancelme\"\ncredential = \"sk-acme\"\nclass = \"llm\"\n\
                 count = {}\narrival = \"backlog\"\nprompt_tokens = 100\nmax_output_tokens = 50\n\
                 cancel_at = \"{}ms\"\n",
                self.cancelled, self.cancel_at_ms
            ));
        }
        s.push_str("\n[client]\npreset = \"stampede\"\nworkers = 4\n");
        for c in &self.crashes {
            s.push('\n');
            s.push_str(&c.to_toml());
        }
        s.push_str("\n[expect]\nduplicate_writes = 0\nblind_resends = 0\n");
        s
    }

    /// Latest time (ms) a cancellation can take effect: its time, pushed back by downtime.
    fn cancel_effective_by(&self) -> u64 {
        let downtime: u64 = self.crashes.iter().map(|c| c.restart_after_ms).sum();
        self.cancel_at_ms + downtime
    }
}

fn fault() -> impl Strategy<Value = Fault> {
    let what = prop_oneof![
        Just(FaultKind::Connection("drop_before_commit")),
        Just(FaultKind::Connection("drop_after_commit")),
        Just(FaultKind::Connection("hang")),
        Just(FaultKind::Connection("hang_after_commit")),
        Just(FaultKind::Status(429)),
        Just(FaultKind::Status(500)),
        Just(FaultKind::Status(503)),
    ];
    (what, any::<bool>(), 1u32..=40).prop_map(|(what, writes_only, percent)| Fault {
        what,
        writes_only,
        percent,
    })
}

fn crash() -> impl Strategy<Value = CrashSpec> {
    let point = prop_oneof![
        Just(CrashPoint::AfterPersistBeforeSend),
        Just(CrashPoint::AfterSendBeforeResponse),
        Just(CrashPoint::AfterCommitBeforeResponse),
        Just(CrashPoint::AfterResponseBeforePersist),
    ];
    let trigger = prop_oneof![
        (0u64..30_000).prop_map(CrashTrigger::At),
        (point.clone(), 1u64..8).prop_map(|(point, nth)| CrashTrigger::Nth { point, nth }),
        (point, 1u64..10).prop_map(|(point, action)| CrashTrigger::Action { point, action }),
    ];
    (trigger, 0u64..6_000).prop_map(|(trigger, restart_after_ms)| CrashSpec {
        trigger,
        restart_after_ms,
    })
}

fn case() -> impl Strategy<Value = Case> {
    (
        0u64..1_000,
        1u64..12,
        1u32..5,
        0u64..5,
        0u64..4,
        500u64..8_000,
        prop::collection::vec(fault(), 0..4),
        prop::collection::vec(crash(), 0..4),
    )
        .prop_map(
            |(seed, writes, write_rate, llms, cancelled, cancel_at_ms, faults, crashes)| Case {
                seed,
                writes,
                write_rate,
                llms,
                cancelled,
                cancel_at_ms,
                faults,
                crashes,
            },
        )
}

/// Keeps every attempt the provider saw.
#[derive(Default)]
struct Journal(Vec<AttemptRow>);

impl AttemptSink for Journal {
    fn attempt(&mut self, row: &AttemptRow) -> Result<(), String> {
        self.0.push(row.clone());
        Ok(())
    }
}

/// Plays one case and checks every invariant; `Err` says which one broke.
fn check(case: &Case) -> Result<(), String> {
    let text = case.to_toml();
    let scenario = scenario::parse(&text, "case.toml", &[])
        .map_err(|e| format!("the generated scenario does not parse: {e}"))?;
    let mut journal = Journal::default();
    let run = virtual_driver::run(&scenario, &mut journal).map_err(|e| e.to_string())?;
    let s = &run.measured.summary;
    // Side effects in the world: records. A completion billed twice after a crash is the
    // accepted cost of retrying an LLM call that may have executed (it is counted in
    // `duplicate_completions`, not hidden), not a second effect.
    if s.duplicate_writes != 0 {
        return Err(format!(
            "{} side effects committed twice",
            s.duplicate_writes
        ));
    }
    if s.blind_resends != 0 {
        return Err(format!(
            "{} uncertain writes re-sent blindly",
            s.blind_resends
        ));
    }
    let ended = s.completed + s.failed + s.cancelled + s.escalations;
    if ended != s.logical_requests {
        return Err(format!(
            "{} logical actions but {ended} terminal outcomes (completed {}, failed {}, cancelled {}, escalated {})",
            s.logical_requests, s.completed, s.failed, s.cancelled, s.escalations
        ));
    }
    let llm_budget = scenario
        .policy
        .class("llm")
        .map(|c| c.max_attempts)
        .unwrap_or(0);
    let mut llm_attempts: BTreeMap<u64, u32> = BTreeMap::new();
    for row in journal
        .0
        .iter()
        .filter(|r| r.route == "/v1/chat/completions")
    {
        *llm_attempts.entry(row.action).or_default() += 1;
    }
    if let Some((action, n)) = llm_attempts.iter().find(|(_, n)| **n > llm_budget) {
        return Err(format!(
            "LLM action {action} reached the provider {n} times; its class allows {llm_budget}"
        ));
    }
    let woke = journal
        .0
        .iter()
        .find(|r| r.tenant == "cancelme" && r.at_ms > case.cancel_effective_by());
    if let Some(row) = woke {
        return Err(format!(
            "cancelled action {} woke: an attempt reached the provider at {} ms, after its cancellation at {} ms",
            row.action, row.at_ms, case.cancel_at_ms
        ));
    }
    Ok(())
}

fn cases() -> u32 {
    ["STAMPEDE_PROPTEST_CASES", "PROPTEST_CASES"]
        .iter()
        .find_map(|k| std::env::var(k).ok()?.parse().ok())
        .unwrap_or(48)
}

#[test]
fn restarts_never_duplicate_never_resend_blindly_and_keep_budgets() {
    let config = Config {
        cases: cases(),
        failure_persistence: None,
        ..Config::default()
    };
    let mut runner = TestRunner::new(config);
    let result = runner.run(&case(), |case| {
        check(&case).map_err(|why| {
            TestCaseError::fail(format!(
                "{why}\n--- reproduce: save as case.toml, then `stampede run case.toml` ---\n{}",
                case.to_toml()
            ))
        })
    });
    if let Err(e) = result {
        panic!("{e}");
    }
}

/// The printer is what a failure reports, so it must print what `stampede run` reads back.
#[test]
fn a_printed_case_parses_back_to_the_same_scenario() {
    let mut runner = TestRunner::new(Config {
        cases: 64,
        failure_persistence: None,
        ..Config::default()
    });
    runner
        .run(&case(), |case| {
            let s = scenario::parse(&case.to_toml(), "case.toml", &[])
                .map_err(|e| TestCaseError::fail(e.to_string()))?;
            prop_assert_eq!(s.seed, case.seed);
            prop_assert_eq!(s.duration_ms, DURATION_MS);
            prop_assert_eq!(&s.crashes, &case.crashes);
            let counts: Vec<u64> = s.workloads.iter().map(|w| w.count).collect();
            let mut expected = vec![case.writes];
            if case.llms > 0 {
                expected.push(case.llms);
            }
            if case.cancelled > 0 {
                expected.push(case.cancelled);
            }
            prop_assert_eq!(counts, expected);
            let cancel = s.workloads.iter().find_map(|w| w.cancel_at);
            prop_assert_eq!(
                cancel.map(|d| d.ms()),
                (case.cancelled > 0).then_some(case.cancel_at_ms)
            );
            prop_assert_eq!(s.provider.faults.len(), case.faults.len());
            for (parsed, generated) in s.provider.faults.iter().zip(&case.faults) {
                let expected_status = match generated.what {
                    FaultKind::Status(code) => Some(code),
                    FaultKind::Connection(_) => None,
                };
                prop_assert_eq!(parsed.status, expected_status);
                prop_assert_eq!(parsed.fault.is_some(), expected_status.is_none());
                prop_assert_eq!(parsed.route.is_some(), generated.writes_only);
                prop_assert_eq!(parsed.probability, Some(generated.percent as f64 / 100.0));
            }
            prop_assert_eq!(s.expectations.len(), 2);
            Ok(())
        })
        .unwrap();
}
