//! The simulator's SDK presets against the real SDKs: each fault mix in tests/calibration/
//! is played by the official SDK through `--client` and by its preset in virtual time, and
//! the two must end the same way (completed, failed, duplicates) with attempts per logical
//! request within 5%. The table of both is the README's block `calibration-table`
//! (`STAMPEDE_BLESS=1 cargo test --test integration calibration` rewrites it).
//!
//! Without the SDKs the real side is skipped (and the README left alone), unless
//! `STAMPEDE_REQUIRE_SDKS=1`, as in CI.

use std::path::Path;
use std::process::Command;

use stampede_reports::Summary;
use stampede_sim::client_process::run_client;
use stampede_sim::run::{run_virtual, RunOptions};
use stampede_sim::scenario;

fn sdk_installed(module: &str) -> bool {
    let ok = Command::new("python3")
        .args(["-c", &format!("import {module}")])
        .output()
        .is_ok_and(|o| o.status.success());
    if !ok {
        assert!(
            std::env::var_os("STAMPEDE_REQUIRE_SDKS").is_none(),
            "python3 cannot import {module}: pip install -r examples/clients/requirements.txt"
        );
    }
    ok
}

fn mixes() -> Vec<String> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/calibration");
    let mut names: Vec<String> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|n| n.ends_with(".toml"))
        .collect();
    names.sort();
    names
}

fn both(file: &str) -> (Summary, Summary) {
    let path = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/calibration")
        .join(file);
    let real_scenario = scenario::load(&path, None, &[]).unwrap();
    let mut sim_scenario = real_scenario.clone();
    sim_scenario.client.command.clear();
    let sim = run_virtual(&sim_scenario, &RunOptions::default())
        .unwrap()
        .report
        .summary;
    let (real, exit) = run_client(&real_scenario, &[], &RunOptions::default())
        .unwrap_or_else(|e| panic!("{file}: {e}"));
    assert_eq!(exit.code, 0, "{file}: the SDK driver failed");
    (sim, real.report.summary)
}

#[test]
fn the_sdk_presets_agree_with_the_real_sdks() {
    if !(sdk_installed("openai") && sdk_installed("anthropic")) {
        eprintln!("skipped: the official SDKs are not installed");
        return;
    }
    let mut rows = vec![
        "| fault mix | SDK | completed (sim / real) | failed | duplicates | attempts per logical | difference |".to_string(),
        "| --- | --- | --- | --- | --- | --- | --- |".to_string(),
    ];
    for file in mixes() {
        let (sim, real) = both(&file);
        let outcome = |s: &Summary| (s.completed, s.failed, s.duplicates);
        assert_eq!(
            outcome(&sim),
            outcome(&real),
            "{file}: (completed, failed, duplicates) sim vs real"
        );
        let (a, b) = (sim.attempts_per_logical, real.attempts_per_logical);
        let diff = (a - b).abs() / b.max(1e-9);
        assert!(
            diff <= 0.05,
            "{file}: attempts per logical sim {a} vs real {b}"
        );
        let (sdk, mix) = file
            .trim_end_matches(".toml")
            .split_once('-')
            .unwrap_or(("?", &file));
        rows.push(format!(
            "| {mix} | {sdk} | {} / {} | {} / {} | {} / {} | {:.2} / {:.2} | {:.1}% |",
            sim.completed,
            real.completed,
            sim.failed,
            real.failed,
            sim.duplicates,
            real.duplicates,
            a,
            b,
            diff * 100.0
        ));
    }
    let table = rows.join("\n");
    let readme_path = Path::new(env!("CARGO_MANIFEST_DIR")).join("README.md");
    let readme = std::fs::read_to_string(&readme_path).unwrap();
    let open = "<!-- figures:calibration-table -->\n";
    let close = "\n<!-- /figures:calibration-table -->";
    let start = readme.find(open).expect("README has the calibration block") + open.len();
    let end = start + readme[start..].find(close).unwrap();
    if std::env::var_os("STAMPEDE_BLESS").is_some() {
        let updated = format!("{}{table}{}", &readme[..start], &readme[end..]);
        std::fs::write(&readme_path, updated).unwrap();
        return;
    }
    assert_eq!(
        &readme[start..end],
        table,
        "README calibration table is stale: STAMPEDE_BLESS=1 cargo test --test integration calibration"
    );
}

#[test]
fn stacked_layers_multiply_attempts_layer_by_layer() {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("scenarios/layers.toml");
    let base = scenario::load(&path, None, &[]).unwrap();
    let mut per_layers = Vec::new();
    for n in 1..=3 {
        let mut s = base.clone();
        s.sdk_layers = s.sdk_layers[s.sdk_layers.len() - n..].to_vec();
        let summary = run_virtual(&s, &RunOptions::default())
            .unwrap()
            .report
            .summary;
        per_layers.push(summary.attempts_per_logical);
    }
    assert_eq!(per_layers, vec![3.0, 9.0, 27.0]);
}
