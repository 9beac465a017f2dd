//! A live run of a scenario whose provider lists its models asks for those models: a call
//! that names none asks for the first listed (the one a virtual run's provider serves it),
//! and a call that names one asks for it. The live driver sent `stampede-fake` for every
//! call, so every call of such a scenario was refused 404 `model_not_found` live while the
//! virtual run passed.

use std::path::Path;

use stampede_sim::live_driver::{run_live, LiveOptions};
use stampede_sim::run::RunOptions;
use stampede_sim::scenario;

#[test]
fn a_live_run_asks_for_the_models_its_provider_lists() {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("scenarios/latency-spike.toml");
    let scenario = scenario::load(&path, None, &[]).expect("the shipped scenario loads");
    let listed: Vec<&str> = scenario
        .provider
        .models
        .iter()
        .map(|m| m.name.as_str())
        .collect();
    assert!(
        !listed.is_empty(),
        "the scenario lists models: the test proves nothing"
    );
    let opts = LiveOptions {
        time_scale: Some(400.0),
        ..LiveOptions::default()
    };
    let (outcome, run) = run_live(&scenario, &opts, &RunOptions::default()).expect("live run");
    let refused: Vec<_> = run
        .journal
        .iter()
        .filter(|e| e.status == Some(404))
        .collect();
    assert!(
        refused.is_empty(),
        "{} calls refused, first {:?}",
        refused.len(),
        refused.first()
    );
    assert!(
        run.journal
            .iter()
            .all(|e| e.model.as_deref() == Some(listed[0])),
        "every call asks for the first listed model, {}",
        listed[0]
    );
    let s = &outcome.report.summary;
    assert_eq!(s.completed, s.logical_requests, "{s:?}");
}
