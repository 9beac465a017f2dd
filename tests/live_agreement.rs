//! Agreement between the drivers: the same scenario and seed played in virtual time and
//! live over loopback HTTP end the same way (completed, failed, cancelled, duplicates,
//! reconciliations, escalations) with outbound attempts within 5%.
//!
//! Scenarios where they cannot agree are left out on purpose: a provider that reads a
//! request and drops it without committing is "never arrived" to the virtual driver (the
//! model says so) but "may have executed" to an HTTP client, which cannot tell; see
//! `stampede_sim::live_driver::transport` and tests/live/drops.toml.

use std::path::Path;

use stampede_reports::Summary;
use stampede_sim::live_driver::{run_live, LiveOptions};
use stampede_sim::run::{run_virtual, RunOptions};
use stampede_sim::scenario;

fn agree(relative: &str, scale: Option<f64>) {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join(relative);
    let scenario = scenario::load(&path, None, &[]).expect("scenario loads");
    let virt = run_virtual(&scenario, &RunOptions::default()).expect("virtual run");
    let opts = LiveOptions {
        time_scale: scale,
        ..LiveOptions::default()
    };
    let (live, _) = run_live(&scenario, &opts, &RunOptions::default()).expect("live run");
    let (v, l): (&Summary, &Summary) = (&virt.report.summary, &live.report.summary);
    assert_eq!(v.mode, "virtual");
    assert_eq!(l.mode, "live");
    let logical = |s: &Summary| {
        (
            s.logical_requests,
            s.completed,
            s.failed,
            s.cancelled,
            s.duplicates,
            s.reconciliations,
            s.escalations,
        )
    };
    assert_eq!(
        logical(v),
        logical(l),
        "{relative}: (logical, completed, failed, cancelled, duplicates, reconciliations, \
         escalations) virtual vs live"
    );
    let (va, la) = (v.outbound_attempts as f64, l.outbound_attempts as f64);
    assert!(
        (la - va).abs() <= 0.05 * va,
        "{relative}: outbound attempts virtual {va} vs live {la}, more than 5% apart"
    );
}

#[test]
fn quickstart_agrees() {
    // The default live scale, as `stampede run scenarios/quickstart.toml --live` uses.
    agree("scenarios/quickstart.toml", None);
}

/// The five steps run at a scale of 5: a scheduling stall of 20 real ms on a busy machine is
/// then 100 ms of scenario time, well inside the margins the steps' budgets and deadlines
/// leave (at 20 it was 400 ms, and a budget could run out live where it did not virtually).
#[test]
fn five_step_safety_agrees() {
    let shipped = Path::new(env!("CARGO_MANIFEST_DIR")).join("scenarios/five-step-safety.toml");
    if shipped.exists() {
        agree("scenarios/five-step-safety.toml", Some(5.0));
    }
    // The five steps as the live safety tests play them.
    for step in [
        "tests/live/retry-after.toml",
        "tests/live/spread.toml",
        "tests/live/reconcile.toml",
        "tests/live/escalate.toml",
        "tests/live/cancel.toml",
    ] {
        agree(step, Some(5.0));
    }
}
