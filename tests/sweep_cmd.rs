//! `stampede sweep`: one CSV row per configuration and seed, values equal to a direct run of
//! the same configuration, the recommendation, byte-identical output whatever the thread
//! count, and a bad `--vary` refused before any run.

use std::collections::BTreeMap;
use std::path::Path;
use std::process::Output;

use crate::common;
use common::{a_str, quickstart, stampede, text};

fn sweep(out: &Path, jobs: &str) -> Output {
    let qs = quickstart();
    let args = vec![
        "sweep",
        qs.as_str(),
        "--vary",
        "client.workers=4,16",
        "--vary",
        "client.preset=naive,stampede",
        "--seeds",
        "2",
        "--out",
        a_str(out),
        "--jobs",
        jobs,
    ];
    stampede(&args)
}

type Row = BTreeMap<String, String>;

fn read_csv(path: &Path) -> Vec<Row> {
    let mut r = csv::Reader::from_path(path).expect("sweep.csv exists");
    let header: Vec<String> = r.headers().unwrap().iter().map(String::from).collect();
    r.records()
        .map(|rec| {
            header
                .iter()
                .cloned()
                .zip(rec.unwrap().iter().map(String::from))
                .collect()
        })
        .collect()
}

fn num(row: &Row, key: &str) -> f64 {
    row[key]
        .parse()
        .unwrap_or_else(|_| panic!("{key} is a number"))
}

#[test]
fn a_small_grid_writes_a_row_per_configuration_and_seed_and_recommends_a_passing_one() {
    let tmp = tempfile::tempdir().unwrap();
    let out_dir = tmp.path().join("sweep");
    let out = sweep(&out_dir, "2");
    let stdout = text(&out.stdout);
    assert!(
        matches!(out.status.code(), Some(0 | 1)),
        "stdout:\n{stdout}\nstderr:\n{}",
        text(&out.stderr)
    );
    assert!(
        stdout.contains("4 configurations x 2 seeds = 8 runs"),
        "{stdout}"
    );

    let csv_path = out_dir.join("sweep.csv");
    let header = std::fs::read_to_string(&csv_path).unwrap();
    let header = header.lines().next().unwrap();
    assert!(
        header.starts_with("client.preset,client.workers,seed,pass,failed_expectations,"),
        "{header}"
    );
    for column in [
        "outbound_attempts",
        "attempts_per_logical",
        "goodput_per_min",
        "retry_waves",
        "deadline_misses",
    ] {
        assert!(
            header.split(',').any(|c| c == column),
            "{column} in {header}"
        );
    }
    let rows = read_csv(&csv_path);
    assert_eq!(rows.len(), 4 * 2, "configurations x seeds");
    // Configuration order (first --vary slowest), then seed order from the scenario's seed.
    let keys: Vec<(String, String, String)> = rows
        .iter()
        .map(|r| {
            (
                r["client.workers"].clone(),
                r["client.preset"].clone(),
                r["seed"].clone(),
            )
        })
        .collect();
    let mut expected = Vec::new();
    for w in ["4", "16"] {
        for p in ["naive", "stampede"] {
            for s in ["42", "43"] {
                expected.push((w.to_string(), p.to_string(), s.to_string()));
            }
        }
    }
    assert_eq!(keys, expected);

    // One configuration run directly gives the same figures.
    let direct = tmp.path().join("direct");
    let qs = quickstart();
    let args = vec![
        "run",
        qs.as_str(),
        "--seed",
        "43",
        "--set",
        "client.workers=16",
        "--set",
        "client.preset=naive",
        "--out",
        a_str(&direct),
        "--no-render",
    ];
    let run = stampede(&args);
    assert!(
        matches!(run.status.code(), Some(0 | 1)),
        "{}",
        text(&run.stderr)
    );
    let summary: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(direct.join("summary.json")).unwrap())
            .unwrap();
    let row = rows
        .iter()
        .find(|r| r["client.workers"] == "16" && r["client.preset"] == "naive" && r["seed"] == "43")
        .unwrap();
    for key in [
        "logical_requests",
        "completed",
        "outbound_attempts",
        "retries",
        "retry_waves",
        "duplicates",
        "deadline_misses",
    ] {
        assert_eq!(num(row, key), summary[key].as_f64().unwrap(), "{key}");
    }
    let apl = summary["attempts_per_logical"].as_f64().unwrap();
    assert!((num(row, "attempts_per_logical") - apl).abs() < 1e-3);
    let passed = summary["expectations"]
        .as_array()
        .unwrap()
        .iter()
        .all(|e| e["pass"].as_bool().unwrap());
    assert_eq!(row["pass"], passed.to_string());
    assert_eq!(
        out.status.code() == Some(0),
        rows.iter().any(|r| r["pass"] == "true")
    );

    // The recommendation: printed and written, naming a configuration that passed on every
    // seed with no more median outbound attempts than any other such configuration.
    let line = std::fs::read_to_string(out_dir.join("recommendation.txt")).unwrap();
    let line = line.trim_end();
    assert!(stdout.lines().any(|l| l == line), "{stdout}");
    let mut by_config: BTreeMap<(String, String), Vec<&Row>> = BTreeMap::new();
    for r in &rows {
        by_config
            .entry((r["client.preset"].clone(), r["client.workers"].clone()))
            .or_default()
            .push(r);
    }
    let median_attempts = |runs: &[&Row]| {
        let mut v: Vec<f64> = runs.iter().map(|r| num(r, "outbound_attempts")).collect();
        v.sort_by(f64::total_cmp);
        (v[0] + v[v.len() - 1]) / 2.0
    };
    let passing: Vec<(&(String, String), f64)> = by_config
        .iter()
        .filter(|(_, runs)| runs.iter().all(|r| r["pass"] == "true"))
        .map(|(c, runs)| (c, median_attempts(runs)))
        .collect();
    if passing.is_empty() {
        assert!(
            line.starts_with("no configuration met the expectations"),
            "{line}"
        );
    } else {
        let named = passing
            .iter()
            .find(|((p, w), _)| {
                line.starts_with(&format!(
                    "recommended: client.preset={p}, client.workers={w} "
                ))
            })
            .unwrap_or_else(|| panic!("a passing configuration is named: {line}"));
        assert!(passing.iter().all(|(_, a)| named.1 <= *a), "{line}");
        assert!(line.contains(&format!("{} of 4 configurations passed", passing.len())));
    }

    // The plots of the figures against the first varied key.
    for plot in [
        "sweep-attempts_per_logical.svg",
        "sweep-goodput_per_min.svg",
    ] {
        let svg = std::fs::read_to_string(out_dir.join(plot)).unwrap();
        assert!(svg.contains("<svg"), "{plot}");
    }
}

#[test]
fn the_same_sweep_writes_the_same_csv_whatever_the_thread_count() {
    let tmp = tempfile::tempdir().unwrap();
    let (one, two) = (tmp.path().join("one"), tmp.path().join("two"));
    sweep(&one, "1");
    sweep(&two, "2");
    for file in [
        "sweep.csv",
        "recommendation.txt",
        "sweep-outbound_attempts.svg",
    ] {
        let a = std::fs::read(one.join(file)).unwrap();
        let b = std::fs::read(two.join(file)).unwrap();
        assert!(a == b, "{file} differs between --jobs 1 and --jobs 2");
    }
}

#[test]
fn a_bad_vary_key_or_value_exits_2_before_any_run() {
    let tmp = tempfile::tempdir().unwrap();
    let qs = quickstart();
    for (vary, named) in [
        ("client.wrkers=4,8", "client.wrkers"),
        ("client.workers=4,lots", "client.workers"),
        ("client.workers", "client.workers"),
        // Every configuration plays the same seeds: varying it played seed 42 twice.
        ("seed=1,2", "--seeds N"),
    ] {
        let out_dir = tmp.path().join("never");
        let args = ["sweep", &qs, "--vary", vary, "--out", a_str(&out_dir)];
        common::assert_refused(&args, named, &out_dir);
    }
}

/// An `--out` that cannot be a folder (a file, or under one) is refused before any run,
/// naming the flag and saying what to give: the sweep, a shard and a merge played or read
/// every run first and then failed to write, so a long sweep's measurements were lost.
#[test]
fn an_out_that_cannot_be_a_folder_is_refused_before_any_run() {
    let tmp = tempfile::tempdir().unwrap();
    let file = tmp.path().join("a-file");
    std::fs::write(&file, "mine\n").unwrap();
    let under = file.join("sub");
    let qs = quickstart();
    let shards = tmp.path().join("shard");
    let made = stampede(&[
        "sweep",
        &qs,
        "--vary",
        "client.workers=4",
        "--seeds",
        "1",
        "--shard",
        "0/1",
        "--out",
        a_str(&shards),
    ]);
    assert_eq!(made.status.code(), Some(0), "{}", common::both(&made));
    for (args, out) in [
        (
            vec!["sweep", &qs, "--vary", "client.workers=4,8", "--seeds", "1"],
            &file,
        ),
        (
            vec![
                "sweep",
                &qs,
                "--vary",
                "client.workers=4,8",
                "--seeds",
                "1",
                "--shard",
                "1/2",
            ],
            &under,
        ),
        (vec!["sweep", "merge", a_str(&shards)], &file),
    ] {
        let mut args = args.clone();
        args.extend(["--out", a_str(out)]);
        let got = stampede(&args);
        let (stdout, stderr) = (text(&got.stdout), text(&got.stderr));
        assert_eq!(got.status.code(), Some(2), "{args:?}: {stdout}{stderr}");
        assert!(
            stderr.contains(&format!("--out {}", out.display())) && stderr.contains("folder"),
            "{args:?}: {stderr}"
        );
        assert!(!stdout.contains("seeds passed"), "no run played: {stdout}");
        assert!(!stdout.contains(" runs on "), "no run started: {stdout}");
    }
    assert_eq!(std::fs::read_to_string(&file).unwrap(), "mine\n");
}

/// A count of 0 is refused in the user's words, naming the flag, not a Rust type's.
#[test]
fn a_count_of_zero_is_refused_saying_at_least_1() {
    let tmp = tempfile::tempdir().unwrap();
    let qs = quickstart();
    let out_dir = tmp.path().join("never");
    for flag in ["--seeds", "--jobs", "-j"] {
        let args = ["sweep", &qs, flag, "0", "--out", a_str(&out_dir)];
        common::assert_refused(&args, "N>': must be at least 1", &out_dir);
    }
    let out = stampede(&["check", &qs, "--jobs", "0"]);
    let stderr = text(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert!(
        stderr.contains("'--jobs <N>': must be at least 1"),
        "{stderr}"
    );
}

#[test]
fn a_sweep_varies_the_whole_client_and_its_replicas_and_plots_the_scope_waits() {
    let tmp = tempfile::tempdir().unwrap();
    let out_dir = tmp.path().join("amp");
    let scenario = common::repo().join("scenarios/amplification.toml");
    let core = r#"{preset="stampede",workers=8}"#;
    let stack =
        r#"{preset="openai-python",workers=8,layers=["langchain-retry","langchain-retry"]}"#;
    let vary_client = format!("client={core},{stack}");
    let out = stampede(&[
        "sweep",
        a_str(&scenario),
        "--vary",
        &vary_client,
        "--vary",
        "client.replicas=1,4",
        "--seeds",
        "1",
        "--out",
        a_str(&out_dir),
    ]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let rows = read_csv(&out_dir.join("sweep.csv"));
    assert_eq!(rows.len(), 4);
    let waits = |client: &str, replicas: &str| {
        let row = rows
            .iter()
            .find(|r| r["client"] == client && r["client.replicas"] == replicas)
            .expect("a row per configuration");
        num(row, "scope_wait_violations")
    };
    assert_eq!(waits(core, "1"), 0.0, "one core hears every 429");
    assert!(waits(core, "4") > 0.0, "four cores do not");
    assert!(waits(stack, "4") > waits(core, "4"));
    let svg = std::fs::read_to_string(out_dir.join("sweep-scope_wait_violations.svg")).unwrap();
    assert!(svg.contains("<svg"));
}

/// A sweep that varies a credential shows each key masked, numbered by its place in the
/// `--vary` list, in its lines, sweep.csv and the plots: it had written every key whole.
#[test]
fn a_varied_credential_is_shown_masked() {
    let key = "sk-proj-ABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789abcd";
    let tmp = tempfile::tempdir().unwrap();
    let text_of = std::fs::read_to_string(quickstart()).unwrap();
    let second = format!("[[provider.credentials]]\nkey = \"{key}\"\nscope = \"account:acme\"\n\n[[provider.faults]]");
    let scenario = tmp.path().join("two-keys.toml");
    std::fs::write(
        &scenario,
        text_of.replacen("[[provider.faults]]", &second, 1),
    )
    .unwrap();
    let out_dir = tmp.path().join("out");
    let vary = format!("workload.0.credential={key},sk-acme-shared");
    let out = stampede(&[
        "sweep",
        a_str(&scenario),
        "--vary",
        &vary,
        "--seeds",
        "1",
        "--out",
        a_str(&out_dir),
    ]);
    let printed = format!("{}{}", text(&out.stdout), text(&out.stderr));
    assert_eq!(out.status.code(), Some(0), "{printed}");
    assert!(
        printed.contains("workload.0.credential=sk-...abcd#1"),
        "{printed}"
    );
    assert!(
        printed.contains("workload.0.credential=sk-...#2"),
        "{printed}"
    );
    assert!(!printed.contains(&key[8..40]), "{printed}");
    for entry in std::fs::read_dir(&out_dir).unwrap() {
        let path = entry.unwrap().path();
        let bytes = std::fs::read(&path).unwrap();
        let hidden = &key.as_bytes()[8..40];
        let whole = bytes.windows(32).any(|w| w == hidden);
        assert!(!whole, "{} holds the key whole", path.display());
    }
}

/// A sweep none of whose runs could play measured nothing: it leaves the folder's earlier
/// sweep as it was, where it had replaced that sweep's sweep.csv with an empty one.
#[test]
fn a_sweep_that_measured_nothing_leaves_an_earlier_sweep_whole() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("sweep");
    let qs = quickstart();
    let first = stampede(&[
        "sweep",
        qs.as_str(),
        "--vary",
        "client.workers=4,16",
        "--out",
        a_str(&out),
    ]);
    assert_eq!(first.status.code(), Some(0), "{}", text(&first.stderr));
    let before = std::fs::read(out.join("sweep.csv")).unwrap();
    let recommendation = std::fs::read(out.join("recommendation.txt")).unwrap();
    let none = stampede(&[
        "sweep",
        qs.as_str(),
        "--vary",
        r#"client.command=["/nonexistent-stampede-client"],["/nonexistent-stampede-client","-v"]"#,
        "--out",
        a_str(&out),
    ]);
    let stderr = text(&none.stderr);
    assert_eq!(none.status.code(), Some(2), "{stderr}");
    assert!(stderr.contains("nonexistent-stampede-client"), "{stderr}");
    assert!(
        stderr.contains("none of the sweep's 6 runs could play (above): nothing was written"),
        "{stderr}"
    );
    assert_eq!(std::fs::read(out.join("sweep.csv")).unwrap(), before);
    assert_eq!(
        std::fs::read(out.join("recommendation.txt")).unwrap(),
        recommendation
    );
}

/// A sweep replacing an earlier one in its folder removes the earlier sweep's plots it did
/// not draw: an earlier `--png` sweep's PNGs had stayed beside the new sweep's SVGs, showing
/// the earlier sweep's figures as this one's.
#[test]
fn a_sweep_removes_the_plots_of_an_earlier_sweep_it_did_not_draw() {
    if !stampede_reports::PNG_SUPPORTED {
        eprintln!("skipped: this build draws no PNG (--features png)");
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("sweep");
    let qs = quickstart();
    let sweep = |png: bool| {
        let mut args = vec![
            "sweep",
            qs.as_str(),
            "--vary",
            "client.workers=4,16",
            "--seeds",
            "1",
            "--out",
            a_str(&out),
        ];
        if png {
            args.push("--png");
        }
        let run = stampede(&args);
        assert_eq!(run.status.code(), Some(0), "{}", text(&run.stderr));
    };
    let plots = |ext: &str| -> Vec<String> {
        let mut names: Vec<String> = std::fs::read_dir(&out)
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .filter(|n| n.starts_with("sweep-") && n.ends_with(ext))
            .collect();
        names.sort();
        names
    };
    sweep(true);
    assert!(!plots(".png").is_empty(), "the --png sweep drew PNGs");
    let svgs = plots(".svg");
    sweep(false);
    assert_eq!(
        plots(".png"),
        Vec::<String>::new(),
        "no earlier PNG is left"
    );
    assert_eq!(plots(".svg"), svgs, "this sweep's SVGs are there");
    // A folder of a plot's name is the user's: it stays.
    std::fs::create_dir(out.join("sweep-duplicates.png")).unwrap();
    sweep(false);
    assert!(out.join("sweep-duplicates.png").is_dir());
}
