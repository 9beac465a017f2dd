//! What the live driver costs: sustained attempts per second against the in-process
//! provider over loopback HTTP, and the overhead it adds per attempt (client-side round
//! trip minus the latency the provider planned), p50 and p99. Medians of 3 runs.
//!
//!     cargo run --release -p stampede-sim --example live_overhead [-- ATTEMPTS WORKERS]
//!
//! The provider answers at once (`fixed = "0ms"`) with no limits, at time scale 1, so the
//! figures are the harness's own: HTTP encode and parse, hyper's connection handling,
//! the tokio task per attempt, the loop's turn around the core, and the server's model lock.

use std::time::Instant;

use stampede_sim::live_driver::{run_live, LiveOptions, LiveRun};
use stampede_sim::run::RunOptions;
use stampede_sim::scenario;

#[path = "support/live_bench.rs"]
mod live_bench;

use live_bench::scenario_text;

fn quantile(sorted: &[u64], q: f64) -> u64 {
    if sorted.is_empty() {
        return 0;
    }
    sorted[((sorted.len() - 1) as f64 * q).round() as usize]
}

/// (attempts per second, overhead p50 µs, overhead p99 µs) of one run. The provider plans
/// no latency (`fixed = "0ms"`), so an attempt's overhead is its whole round trip. That is
/// checked on the provider's own times in its journal, not matched attempt by attempt: the
/// only per-attempt link between the journal and the client's timings would be the
/// attempt numbers the client claims in its headers, and no figure rests on a claim.
fn figures(run: &LiveRun) -> (f64, u64, u64) {
    assert!(
        run.journal.iter().all(|e| e.done_ms == e.at_ms),
        "the provider planned a latency: the overhead would include it"
    );
    let mut overhead: Vec<u64> = run
        .attempts
        .iter()
        .map(|a| a.done_real_us.saturating_sub(a.sent_real_us))
        .collect();
    overhead.sort_unstable();
    let per_s = run.journal.len() as f64 * 1_000.0 / run.real_ms.max(1) as f64;
    (per_s, quantile(&overhead, 0.5), quantile(&overhead, 0.99))
}

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    v[v.len() / 2]
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let mut args = std::env::args().skip(1);
    let attempts: u64 = args.next().map_or(Ok(20_000), |a| a.parse())?;
    let workers: u64 = args.next().map_or(Ok(64), |a| a.parse())?;
    let scenario = scenario::parse(&scenario_text(attempts, workers), "live_overhead", &[])?;
    let opts = LiveOptions {
        time_scale: Some(1.0),
        ..LiveOptions::default()
    };
    let mut rates = Vec::new();
    let mut p50s = Vec::new();
    let mut p99s = Vec::new();
    for i in 1..=3 {
        let started = Instant::now();
        let (_, run) = run_live(&scenario, &opts, &RunOptions::default())?;
        let (rate, p50, p99) = figures(&run);
        assert_eq!(run.journal.len() as u64, run.sends);
        println!(
            "run {i}: {} attempts in {} ms ({:.0} attempts/s), overhead p50 {p50} µs, p99 {p99} µs (wall {} ms)",
            run.journal.len(),
            run.real_ms,
            rate,
            started.elapsed().as_millis()
        );
        rates.push(rate);
        p50s.push(p50 as f64);
        p99s.push(p99 as f64);
    }
    println!(
        "median of 3: {:.0} attempts/s sustained, overhead per attempt p50 {:.0} µs, p99 {:.0} µs ({attempts} attempts, {workers} workers, in-process provider, loopback HTTP/1.1)",
        median(rates),
        median(p50s),
        median(p99s)
    );
    Ok(())
}
