//! `scripts/pairs.sh`, the command behind the README's alternating before/after timings:
//! given two builds it must read each benchmark's figure, alternate the builds and count the
//! pairs the new one did better in the benchmark's own direction (cycles up, wall time
//! down). Fake builds that print fixed figures stand in for the release examples, so the
//! test times nothing and stops at once.

use std::path::Path;

use crate::common;

/// A fake build in `dir`: `cycle_rate` printing `cycles` a second and `bench_run` printing a
/// table whose scenario row has `wall_ms`, each in the example's own format.
fn fake_build(dir: &Path, cycles: u64, wall_ms: u64) {
    std::fs::create_dir_all(dir).unwrap();
    let cycle_rate = format!(
        "#!/bin/sh\necho '2000000 cycles with 4096 queued (audit on): 0.5 s wall in the core, {cycles} cycles/s'\n"
    );
    let bench_run = format!(
        "#!/bin/sh\necho 'scenario runs wall ms events events/s refused VmHWM MiB'\necho \"$2 3 {wall_ms} 894248 4428856 18616 13.7\"\n"
    );
    for (name, text) in [("cycle_rate", cycle_rate), ("bench_run", bench_run)] {
        let path = dir.join(name);
        std::fs::write(&path, text).unwrap();
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt;
            std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755)).unwrap();
        }
    }
}

fn pairs(args: &[&str]) -> (i32, String) {
    let out = common::script("scripts/pairs.sh")
        .args(args)
        .output()
        .expect("bash runs the script");
    let text = common::both(&out);
    (out.status.code().unwrap_or(-1), text)
}

#[test]
fn counts_the_pairs_each_way_and_reports_medians() {
    let dir = std::env::temp_dir().join(format!("pairs-{}", std::process::id()));
    let (slow, fast) = (dir.join("slow"), dir.join("fast"));
    // The fast build: more cycles a second and fewer ms of wall time.
    fake_build(&slow, 3_000_000, 250);
    fake_build(&fast, 4_200_000, 200);
    let (s, f) = (slow.to_str().unwrap(), fast.to_str().unwrap());

    let (code, text) = pairs(&["-n", "3", "cycle", s, f]);
    assert_eq!(code, 0, "{text}");
    assert!(
        text.contains("pair 1: base 3.00, new 4.20 (M cycles/s)"),
        "{text}"
    );
    assert!(
        text.contains(
            "cycle: medians base 3.00, new 4.20 (M cycles/s); new better in 3 of 3 pairs"
        ),
        "{text}"
    );

    // Wall time: lower is better, so the slow build as the new one wins no pair.
    let (code, text) = pairs(&["-n", "2", "naive", f, s]);
    assert_eq!(code, 0, "{text}");
    assert!(
        text.contains("naive: medians base 200, new 250 (ms); new better in 0 of 2 pairs"),
        "{text}"
    );
    let (_, text) = pairs(&["-n", "2", "million", s, f]);
    assert!(text.contains("new better in 2 of 2 pairs"), "{text}");

    // Bad input says what to do.
    let (code, text) = pairs(&["latency", s, f]);
    assert_eq!(code, 2, "{text}");
    assert!(text.contains("unknown benchmark 'latency'"), "{text}");
    let (code, text) = pairs(&["cycle", s, dir.join("missing").to_str().unwrap()]);
    assert_eq!(code, 2, "{text}");
    assert!(text.contains("build the release examples first"), "{text}");
    let _ = std::fs::remove_dir_all(&dir);
}

/// Writes an executable script `text` at `path`.
fn script(path: &Path, text: &str) {
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    std::fs::write(path, text).unwrap();
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o755)).unwrap();
    }
}

/// `live` reads live_overhead's median line; `naive-out` times the build's own `stampede`
/// (beside its examples directory), takes exit 1 (failed expectations) as a run and stops at
/// a broken one. The timed fake sleeps a whole second, so its figure has a floor that no
/// load on the machine can break, and nothing asserts which build was faster.
#[test]
fn live_and_naive_out_read_their_own_figures() {
    let dir = std::env::temp_dir().join(format!("pairs-out-{}", std::process::id()));
    let (slow, fast) = (dir.join("slow"), dir.join("fast"));
    for (build, attempts, stampede) in [
        (&slow, 30_000, "#!/bin/sh\nsleep 1\nexit 1\n"),
        (&fast, 90_000, "#!/bin/sh\nexit 0\n"),
    ] {
        script(
            &build.join("examples/live_overhead"),
            &format!("#!/bin/sh\necho 'run 1: ...'\necho 'median of 3: {attempts} attempts/s sustained, overhead per attempt p50 400 µs'\n"),
        );
        script(&build.join("stampede"), stampede);
    }
    let examples = |b: &Path| b.join("examples").to_str().unwrap().to_string();
    let (s, f) = (examples(&slow), examples(&fast));

    let (code, text) = pairs(&["-n", "2", "live", &s, &f]);
    assert_eq!(code, 0, "{text}");
    assert!(
        text.contains(
            "live: medians base 30000, new 90000 (attempts/s); new better in 2 of 2 pairs"
        ),
        "{text}"
    );

    let (code, text) = pairs(&["-n", "1", "naive-out", &s, &f]);
    assert_eq!(code, 0, "{text}");
    let base_ms: u64 = text
        .lines()
        .find_map(|l| l.strip_prefix("pair 1: base "))
        .and_then(|rest| rest.split(',').next())
        .and_then(|ms| ms.parse().ok())
        .unwrap_or_else(|| panic!("no pair line:\n{text}"));
    assert!(
        base_ms >= 1000,
        "the 1 s run timed at {base_ms} ms:\n{text}"
    );
    assert!(text.contains("naive-out: medians base"), "{text}");

    script(
        &fast.join("stampede"),
        "#!/bin/sh\necho broken >&2\nexit 3\n",
    );
    let (code, text) = pairs(&["-n", "1", "naive-out", &s, &f]);
    assert_eq!(code, 2, "{text}");
    assert!(text.contains("broken"), "{text}");
    let _ = std::fs::remove_dir_all(&dir);
}
