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
//! `STAMPEDE_PROPTEST_CASES=5000 cargo test --release --test integration restarts_props` (the standard
//! `PROPTEST_CASES` works too). A failing case shrinks and its message is a scenario file:
//! save it as `case.toml` and `stampede run case.toml` replays it exactly.
//!
//! Sharding (docs/sharding.md): `STAMPEDE_SHARD=I/N` checks only cases I, I+N, I+2N, ... of
//! the campaign's case stream, so N machines (a CI matrix, a Kubernetes indexed Job) together
//! check exactly the cases one machine would. Every shard must draw the same stream, so a
//! sharded campaign uses a fixed seed: `STAMPEDE_PROPTEST_SEED` (or proptest's
//! `PROPTEST_RNG_SEED`), else 0. Give every shard the same seed and the same case count
//! (`STAMPEDE_PROPTEST_CASES=6000 STAMPEDE_SHARD=2/4 STAMPEDE_PROPTEST_SEED=$RUN_ID`); a new
//! seed per CI run explores new cases while the shards still split one stream. Unsharded, the
//! seed is random unless one is given, as before.

use std::cell::{Cell, RefCell};
use std::collections::BTreeMap;

use proptest::prelude::*;
use proptest::test_runner::{Config, RngSeed, TestRunner};
use stampede_reports::AttemptRow;
use stampede_sim::scenario::{self, CrashPoint, CrashSpec, CrashTrigger};
use stampede_sim::sink::AttemptSink;
use stampede_sim::virtual_driver;

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
struct Journal(Vec<AttemptRow<'static>>);

impl AttemptSink for Journal {
    fn attempt(&mut self, row: &AttemptRow<'_>) -> Result<(), String> {
        self.0.push(row.clone().into_owned());
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

/// `STAMPEDE_SHARD=I/N`: shard `I` (from 0) of `N`.
#[derive(Debug, Clone, Copy, PartialEq)]
struct Shard {
    index: u64,
    count: u64,
}

impl Shard {
    fn owns(&self, case: u64) -> bool {
        case % self.count == self.index
    }
}

/// Parses `I/N`; `Err` says what is wrong and what to write.
fn parse_shard(text: &str) -> Result<Shard, String> {
    let hint =
        "write STAMPEDE_SHARD=I/N, shard I of N counting from 0 (STAMPEDE_SHARD=0/4 ... 3/4)";
    let (i, n) = text
        .split_once('/')
        .ok_or_else(|| format!("STAMPEDE_SHARD={text:?}: expected I/N; {hint}"))?;
    let (index, count) = match (i.trim().parse::<u64>(), n.trim().parse::<u64>()) {
        (Ok(i), Ok(n)) => (i, n),
        _ => {
            return Err(format!(
                "STAMPEDE_SHARD={text:?}: I and N are whole numbers; {hint}"
            ))
        }
    };
    if count == 0 || index >= count {
        return Err(format!(
            "STAMPEDE_SHARD={text:?}: there is no shard {index} of {count}; {hint}"
        ));
    }
    Ok(Shard { index, count })
}

/// The shard from the environment, if any. A bad value fails the test with what to write.
fn env_shard() -> Option<Shard> {
    let text = std::env::var("STAMPEDE_SHARD").ok()?;
    Some(parse_shard(&text).unwrap_or_else(|why| panic!("{why}")))
}

/// The campaign's seed: `STAMPEDE_PROPTEST_SEED`, else `PROPTEST_RNG_SEED` (proptest reads
/// it into `Config::default()`), else random unsharded and 0 sharded.
fn campaign_config(cases: u32, shard: Option<Shard>) -> Config {
    let mut config = Config {
        cases,
        failure_persistence: None,
        ..Config::default()
    };
    if let Some(seed) = std::env::var("STAMPEDE_PROPTEST_SEED").ok().map(|s| {
        s.trim().parse::<u64>().unwrap_or_else(|_| {
            panic!("STAMPEDE_PROPTEST_SEED={s:?}: expected a whole number (a u64)")
        })
    }) {
        config.rng_seed = RngSeed::Fixed(seed);
    } else if shard.is_some() && config.rng_seed == RngSeed::Random {
        config.rng_seed = RngSeed::Fixed(0);
    }
    config
}

/// Plays the campaign: `config.cases` cases drawn from its seed, of which `check` sees case
/// `n` (counting from 0) when `shard` owns it (every case unsharded). Once a case fails,
/// every call is checked, so proptest shrinks it as usual.
fn campaign(
    config: Config,
    shard: Option<Shard>,
    check: impl Fn(u64, &Case) -> Result<(), String>,
) -> Result<(), String> {
    let (next, failing) = (Cell::new(0u64), Cell::new(false));
    let mut runner = TestRunner::new(config);
    runner
        .run(&case(), |case| {
            let n = next.get();
            next.set(n + 1);
            if !failing.get() && shard.is_some_and(|s| !s.owns(n)) {
                return Ok(());
            }
            check(n, &case).map_err(|why| {
                failing.set(true);
                TestCaseError::fail(why)
            })
        })
        .map_err(|e| e.to_string())
}

#[test]
fn restarts_never_duplicate_never_resend_blindly_and_keep_budgets() {
    let shard = env_shard();
    let config = campaign_config(cases(), shard);
    if let Some(s) = shard {
        eprintln!(
            "restarts_props: shard {}/{} of {} cases, seed {:?}",
            s.index, s.count, config.cases, config.rng_seed
        );
    }
    let result = campaign(config, shard, |_, case| {
        check(case).map_err(|why| {
            format!(
                "{why}\n--- reproduce: save as case.toml, then `stampede run case.toml` ---\n{}",
                case.to_toml()
            )
        })
    });
    if let Err(e) = result {
        panic!("{e}");
    }
}

/// The shards of a campaign see disjoint parts of one case stream that together are the
/// unsharded campaign's, in order. (Cases are only drawn here, not played.)
#[test]
fn shards_split_one_case_stream_between_them() {
    let draw = |shard: Option<Shard>| {
        let seen = RefCell::new(Vec::new());
        let config = Config {
            rng_seed: RngSeed::Fixed(7),
            ..campaign_config(40, shard)
        };
        campaign(config, shard, |n, case| {
            seen.borrow_mut().push((n, case.clone()));
            Ok(())
        })
        .unwrap();
        seen.into_inner()
    };
    let whole = draw(None);
    assert_eq!(whole.len(), 40);
    let mut joined = Vec::new();
    for index in 0..3 {
        let part = draw(Some(Shard { index, count: 3 }));
        assert!(part.iter().all(|(n, _)| n % 3 == index), "shard {index}");
        joined.extend(part);
    }
    joined.sort_by_key(|(n, _)| *n);
    assert_eq!(joined, whole);

    assert_eq!(parse_shard("2/3"), Ok(Shard { index: 2, count: 3 }));
    for bad in ["3/3", "0/0", "a/b", "1", ""] {
        assert!(
            parse_shard(bad).unwrap_err().contains("STAMPEDE_SHARD=I/N"),
            "{bad}"
        );
    }
}

/// A case that fails in a shard shrinks as it would unsharded: the shrunk candidates are
/// checked whatever their number.
#[test]
fn a_failing_case_of_a_shard_still_shrinks() {
    let shard = Some(Shard { index: 1, count: 3 });
    let config = Config {
        rng_seed: RngSeed::Fixed(7),
        ..campaign_config(200, shard)
    };
    let err = campaign(config, shard, |_, case| {
        if case.writes >= 5 {
            Err(format!("writes {}", case.writes))
        } else {
            Ok(())
        }
    })
    .unwrap_err();
    assert!(err.contains("writes 5"), "{err}");
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
