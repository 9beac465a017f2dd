//! `scripts/outside_loop.sh`, which the README's speed history quotes: it runs, alternates
//! the two binaries it is given, and splits each run's wall time into the loop's own (the
//! line the run prints) and the rest. Only that it works and adds up is checked here: its
//! times are a benchmark's, never asserted.

use crate::common;

#[test]
fn outside_loop_splits_each_run_into_the_loop_and_the_rest() {
    let bin = env!("CARGO_BIN_EXE_stampede");
    let out = common::script("scripts/outside_loop.sh")
        .args([bin, bin, "2", "scenarios/quickstart.toml"])
        .output()
        .expect("bash runs the script");
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "outside_loop.sh failed: {text}{}",
        String::from_utf8_lossy(&out.stderr)
    );
    for which in ["before", "after"] {
        let line = text
            .lines()
            .find(|l| l.starts_with(&format!("{which}: ")))
            .unwrap_or_else(|| panic!("no {which} line in:\n{text}"));
        // "whole W ms, loop L ms, rest R ms; rests [..]": medians of two runs each, so
        // halves may appear; whole = loop + rest holds run by run, and so within one ms for
        // the medians of two.
        let figure = |name: &str| -> f64 {
            let after = line.split(&format!("{name} ")).nth(1).expect("the figure");
            after.split(' ').next().unwrap().parse().expect("a number")
        };
        let (whole, looped, rest) = (figure("whole"), figure("loop"), figure("rest"));
        assert!(whole > 0.0 && looped >= 0.0, "{line}");
        assert!((whole - looped - rest).abs() <= 1.0, "{line}");
    }
    assert!(
        text.contains("after rest smaller in") && text.contains("of 2 pairs"),
        "{text}"
    );
}
