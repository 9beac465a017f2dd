//! Goodput and latency cannot flatter failure: on the quickstart, a preset that fails calls
//! never shows better goodput or latency than the one that completes them all.

use crate::common;

use stampede_reports::Summary;
use stampede_sim::run::{run_virtual, RunOptions};
use stampede_sim::scenario::{self, parse_override};

fn quickstart(preset: &str) -> Summary {
    let path = common::repo().join("scenarios/quickstart.toml");
    let set = parse_override(&format!("client.preset={preset}")).unwrap();
    let s = scenario::load(&path, None, &[set]).unwrap();
    run_virtual(&s, &RunOptions::default())
        .unwrap()
        .report
        .summary
}

#[test]
fn a_preset_that_fails_calls_never_looks_better_than_one_that_completes_them() {
    let best = quickstart("stampede");
    assert_eq!(best.completed, best.logical_requests, "{best:?}");
    for preset in ["naive", "full-jitter", "exponential"] {
        let s = quickstart(preset);
        assert!(
            s.failed > 0,
            "{preset} no longer fails calls: the test proves little"
        );
        assert!(
            s.goodput_per_min < best.goodput_per_min,
            "{preset}: goodput {} against stampede's {}",
            s.goodput_per_min,
            best.goodput_per_min
        );
        let (l, b) = (s.latency_ms, best.latency_ms);
        for (name, a, z) in [
            ("p50", l.p50, b.p50),
            ("p95", l.p95, b.p95),
            ("p99", l.p99, b.p99),
            ("max", l.max, b.max),
        ] {
            assert!(
                a >= z,
                "{preset}: latency {name} {a} ms better than stampede's {z} ms"
            );
        }
        // The survivors alone may well look faster: that view is kept apart, by name.
        assert!(s.completed_latency_ms.max <= s.latency_ms.max);
        assert!(s.failed_latency_ms.max > 0);
        // The window failures cannot shorten: until the failed calls' deadline.
        assert!(s.goodput_window_ms >= 300_000, "{}", s.goodput_window_ms);
    }
}
