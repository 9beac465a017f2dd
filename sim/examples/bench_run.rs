//! Wall time and events per second of virtual runs, with peak memory.
//!
//! ```text
//! cargo run --release -p stampede-sim --example bench_run -- [RUNS] [SCENARIO[@KEY=VALUE,...]]...
//! ```
//!
//! With no scenarios it measures the standard set: `backlog-38k` under the `stampede` and
//! `naive` presets and `sim/examples/bench-1m.toml` (one million requests). Each is run RUNS times (default 3)
//! and the median is reported. Peak memory is the process's VmHWM (Linux) read after the
//! first run of a scenario: one run's peak. (Read after several runs it climbs with the
//! allocator's fragmentation between runs, not with anything a run holds.) Run one
//! scenario per process for a clean per-scenario figure.
//!
//! Events are useful work only: arrivals admitted, cancellations, answers, sends and terminal
//! outcomes. Arrival offers the client refused under backpressure are counted apart
//! (`refused`), since an offer made again moves nothing.

use std::path::{Path, PathBuf};
use std::time::Instant;

use stampede_sim::run::{run_virtual, RunOptions};
use stampede_sim::scenario::{self, parse_override};

fn vm_hwm_kib() -> Option<u64> {
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    let line = status.lines().find(|l| l.starts_with("VmHWM:"))?;
    line.split_whitespace().nth(1)?.parse().ok()
}

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    v[v.len() / 2]
}

fn main() {
    let mut args: Vec<String> = std::env::args().skip(1).collect();
    let runs: usize = match args.first().and_then(|a| a.parse().ok()) {
        Some(n) => {
            args.remove(0);
            n
        }
        None => 3,
    };
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    if args.is_empty() {
        args = vec![
            "scenarios/backlog-38k.toml".into(),
            "scenarios/backlog-38k.toml@client.preset=naive".into(),
            "sim/examples/bench-1m.toml".into(),
        ];
    }
    println!(
        "{:<55} {:>6} {:>10} {:>12} {:>14} {:>10} {:>10}",
        "scenario", "runs", "wall ms", "events", "events/s", "refused", "VmHWM MiB"
    );
    for spec in &args {
        let (file, sets) = match spec.split_once('@') {
            Some((f, s)) => (f, s.split(',').map(str::to_string).collect::<Vec<_>>()),
            None => (spec.as_str(), Vec::new()),
        };
        let path = if Path::new(file).exists() {
            PathBuf::from(file)
        } else {
            root.join(file)
        };
        let overrides: Vec<_> = match sets
            .iter()
            .map(|s| parse_override(s))
            .collect::<Result<_, _>>()
        {
            Ok(o) => o,
            Err(e) => {
                eprintln!("{spec}: {e}");
                std::process::exit(2);
            }
        };
        let scenario = match scenario::load(&path, None, &overrides) {
            Ok(s) => s,
            Err(e) => {
                eprintln!("{e}");
                std::process::exit(2);
            }
        };
        let mut walls = Vec::new();
        let mut rates = Vec::new();
        let mut events = 0;
        let mut refused = 0;
        let mut hwm = None;
        for _ in 0..runs {
            let started = Instant::now();
            let outcome = match run_virtual(&scenario, &RunOptions::default()) {
                Ok(o) => o,
                Err(e) => {
                    eprintln!("{spec}: {e}");
                    std::process::exit(2);
                }
            };
            let wall = started.elapsed().as_secs_f64();
            events = outcome.events;
            refused = outcome.refused_offers;
            walls.push(wall * 1_000.0);
            rates.push(outcome.events as f64 / wall.max(1e-9));
            drop(outcome);
            if hwm.is_none() {
                hwm = Some(vm_hwm_kib());
            }
        }
        let hwm = hwm
            .flatten()
            .map_or("n/a".to_string(), |k| format!("{:.1}", k as f64 / 1024.0));
        println!(
            "{:<55} {:>6} {:>10.0} {:>12} {:>14.0} {:>10} {:>10}",
            spec,
            runs,
            median(walls),
            events,
            median(rates),
            refused,
            hwm
        );
    }
}
