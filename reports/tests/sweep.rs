//! Sweep outputs on a small synthetic grid: the CSV rows, the plots and the recommendation.

use crate::common;

use std::collections::BTreeMap;

use common::xml::{parse, texts, with_class};
use common::{sweep_grid, sweep_summary};
use stampede_reports::{recommend, render_sweep_plots, write_sweep_csv, SweepRow};

fn keys() -> Vec<String> {
    vec![
        "client.max_attempts".to_string(),
        "provider.scopes.0.rpm".to_string(),
    ]
}

#[test]
fn sweep_csv_has_one_row_per_configuration_and_seed() {
    let dir = tempfile::tempdir().unwrap();
    let rows = sweep_grid();
    let path = dir.path().join("sweep.csv");
    write_sweep_csv(&path, &rows).unwrap();

    let mut reader = csv::Reader::from_path(&path).unwrap();
    let header: Vec<String> = reader.headers().unwrap().iter().map(String::from).collect();
    assert_eq!(
        &header[..5],
        [
            "client.max_attempts",
            "provider.scopes.0.rpm",
            "seed",
            "pass",
            "failed_expectations"
        ]
    );
    for figure in [
        "outbound_attempts",
        "attempts_per_logical",
        "goodput_per_min",
        "deadline_misses",
        "duplicates",
    ] {
        assert!(header.iter().any(|h| h == figure), "no {figure} column");
    }
    let col = |name: &str| header.iter().position(|h| h == name).unwrap();
    let records: Vec<csv::StringRecord> = reader.records().map(|r| r.unwrap()).collect();
    assert_eq!(records.len(), rows.len());
    assert_eq!(records.len(), 5 * 2 * 3);
    for (rec, row) in records.iter().zip(&rows) {
        assert_eq!(&rec[0], row.config["client.max_attempts"]);
        assert_eq!(&rec[1], row.config["provider.scopes.0.rpm"]);
        assert_eq!(rec[2].parse::<u64>().unwrap(), row.seed);
        let pass = row.summary.expectations.iter().all(|e| e.pass);
        assert_eq!(&rec[3], if pass { "true" } else { "false" });
        assert_eq!(
            rec[col("outbound_attempts")].parse::<u64>().unwrap(),
            row.summary.outbound_attempts
        );
        assert_eq!(
            rec[col("deadline_misses")].parse::<u64>().unwrap(),
            row.summary.deadline_misses
        );
        if row.summary.deadline_misses > 0 {
            assert!(rec[4].contains("deadline_misses"));
        }
    }
}

/// The configuration with the fewest median outbound attempts among those whose every seed
/// passed, found by brute force over the grid.
fn brute_force_best(rows: &[SweepRow]) -> Option<(BTreeMap<String, String>, f64)> {
    let mut best: Option<(BTreeMap<String, String>, f64)> = None;
    for r in rows {
        let runs: Vec<&SweepRow> = rows.iter().filter(|o| o.config == r.config).collect();
        if !runs
            .iter()
            .all(|o| o.summary.expectations.iter().all(|e| e.pass))
        {
            continue;
        }
        let mut a: Vec<f64> = runs
            .iter()
            .map(|o| o.summary.outbound_attempts as f64)
            .collect();
        a.sort_by(f64::total_cmp);
        let med = a[a.len() / 2]; // three seeds: the middle one
        if best.as_ref().map_or(true, |b| med < b.1) {
            best = Some((r.config.clone(), med));
        }
    }
    best
}

#[test]
fn recommendation_is_the_passing_configuration_with_fewest_median_attempts() {
    let rows = sweep_grid();
    let rec = recommend(&rows);
    let (best, median) = brute_force_best(&rows).expect("the grid has a passing config");
    assert_eq!(rec.config.as_ref(), Some(&best));
    assert_eq!(rec.median_outbound_attempts, median);
    assert_eq!(rec.seeds, 3);
    assert_eq!(rec.configs, 10);
    // In this grid fewer attempts miss deadlines and more attempts break the attempts budget:
    // only max_attempts=3 passes, and the higher rpm needs fewer attempts.
    assert_eq!(best["client.max_attempts"], "3");
    assert_eq!(best["provider.scopes.0.rpm"], "1200");
    let line = rec.line();
    assert!(
        line.starts_with("recommended: client.max_attempts=3, provider.scopes.0.rpm=1200 "),
        "{line}"
    );
    assert!(
        line.contains(&format!("median {median} outbound attempts")),
        "{line}"
    );
}

#[test]
fn a_configuration_failing_on_one_seed_is_not_recommended() {
    let mut rows = sweep_grid();
    let (best, _) = brute_force_best(&rows).unwrap();
    // Break one seed of the best configuration.
    let victim = rows.iter_mut().find(|r| r.config == best).unwrap();
    victim.summary.expectations[0].pass = false;
    let rec = recommend(&rows);
    assert_ne!(rec.config.as_ref(), Some(&best));
    assert_eq!(rec.config, brute_force_best(&rows).map(|b| b.0));
}

#[test]
fn no_passing_configuration_says_so() {
    let rows: Vec<SweepRow> = (1..=2)
        .map(|seed| SweepRow {
            config: BTreeMap::from([("client.max_attempts".to_string(), "1".to_string())]),
            seed,
            summary: sweep_summary(1, 600, seed),
        })
        .collect();
    let rec = recommend(&rows);
    assert_eq!(rec.config, None);
    assert!(rec
        .line()
        .starts_with("no configuration met the expectations"));
}

#[test]
fn sweep_plots_show_median_and_band_per_second_key_value() {
    let dir = tempfile::tempdir().unwrap();
    let rows = sweep_grid();
    let files = render_sweep_plots(dir.path(), &rows, &keys()).unwrap();
    let names: Vec<String> = files
        .iter()
        .map(|f| f.file_name().unwrap().to_string_lossy().into_owned())
        .collect();
    assert_eq!(
        names,
        [
            "sweep-attempts_per_logical.svg",
            "sweep-goodput_per_min.svg",
            "sweep-deadline_misses.svg",
            "sweep-outbound_attempts.svg",
            "sweep-duplicates.svg",
            "sweep-scope_wait_violations.svg"
        ]
    );
    let svg = std::fs::read_to_string(&files[2]).unwrap();
    let doc = parse("sweep-deadline_misses.svg", &svg);
    let labels = texts(&doc);
    for l in [
        "provider.scopes.0.rpm=600 (median)",
        "provider.scopes.0.rpm=1200 (median)",
        "client.max_attempts",
    ] {
        assert!(labels.iter().any(|t| t == l), "no {l:?} in {labels:?}");
    }
    // Every max_attempts value is a tick.
    for tick in ["1", "2", "3", "4", "6"] {
        assert!(labels.iter().any(|t| t == tick), "no tick {tick}");
    }
    for group in ["series-group-0", "series-group-1"] {
        let nodes = with_class(&doc, group);
        // The median line through the five values, a dot per value, and the min-max band.
        let line = nodes
            .iter()
            .find(|n| n.has_tag_name("polyline"))
            .expect("median line");
        assert_eq!(common::xml::points(line).len(), 5);
        assert!(nodes.iter().filter(|n| n.has_tag_name("circle")).count() >= 5);
        assert!(nodes.iter().any(|n| n.has_tag_name("polygon")), "band");
    }
}

#[test]
fn a_sweep_over_words_plots_them_as_categories() {
    let dir = tempfile::tempdir().unwrap();
    let rows: Vec<SweepRow> = ["naive", "full-jitter", "stampede"]
        .iter()
        .enumerate()
        .flat_map(|(i, preset)| {
            (1..=2).map(move |seed| SweepRow {
                config: BTreeMap::from([("client.preset".to_string(), preset.to_string())]),
                seed,
                summary: sweep_summary(i as u64 + 2, 600, seed),
            })
        })
        .collect();
    let files = render_sweep_plots(dir.path(), &rows, &["client.preset".to_string()]).unwrap();
    let svg = std::fs::read_to_string(&files[0]).unwrap();
    let doc = parse("sweep plot", &svg);
    let labels = texts(&doc);
    // Categories keep the order they were given in.
    let pos = |w: &str| labels.iter().position(|t| t == w).unwrap();
    assert!(pos("naive") < pos("full-jitter") && pos("full-jitter") < pos("stampede"));
    assert!(labels.iter().any(|t| t == "median"));
}
