//! Heap allocations of virtual runs: per logical request, per outbound attempt and per loop
//! event, counted by a `#[global_allocator]` wrapper around the system allocator.
//!
//! ```text
//! cargo run --release -p stampede-sim --example alloc_count -- [SCENARIO[@KEY=VALUE,...]]...
//! ```
//!
//! With no scenarios it counts `backlog-38k` under the `naive` and `stampede` presets. Only
//! the run itself is counted (loading the scenario is not); the count is of allocation
//! calls (`alloc`, `alloc_zeroed` and `realloc`), not bytes, since a hot path that
//! allocates often is slow whatever the sizes. Each figure is the same on every run of a
//! scenario (same seed, same allocations).

use std::alloc::{GlobalAlloc, Layout, System};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};

use stampede_sim::run::{run_virtual, RunOptions};
use stampede_sim::scenario::{self, parse_override};

/// The system allocator, counting calls and bytes asked for.
struct Counting;

static ALLOCS: AtomicU64 = AtomicU64::new(0);
static BYTES: AtomicU64 = AtomicU64::new(0);

// SAFETY: every call is forwarded unchanged to `System`, which upholds the contract.
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        ALLOCS.fetch_add(1, Ordering::Relaxed);
        BYTES.fetch_add(layout.size() as u64, Ordering::Relaxed);
        System.alloc(layout)
    }

    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        ALLOCS.fetch_add(1, Ordering::Relaxed);
        BYTES.fetch_add(layout.size() as u64, Ordering::Relaxed);
        System.alloc_zeroed(layout)
    }

    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        ALLOCS.fetch_add(1, Ordering::Relaxed);
        BYTES.fetch_add(new_size as u64, Ordering::Relaxed);
        System.realloc(ptr, layout, new_size)
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        System.dealloc(ptr, layout)
    }
}

#[global_allocator]
static GLOBAL: Counting = Counting;

fn main() {
    let mut args: Vec<String> = std::env::args().skip(1).collect();
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    if args.is_empty() {
        args = vec![
            "scenarios/backlog-38k.toml@client.preset=naive".into(),
            "scenarios/backlog-38k.toml".into(),
        ];
    }
    println!(
        "{:<50} {:>12} {:>9} {:>9} {:>12} {:>10} {:>11} {:>9}",
        "scenario",
        "allocations",
        "logical",
        "attempts",
        "events",
        "/logical",
        "/attempt",
        "/event"
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
        let before = ALLOCS.load(Ordering::Relaxed);
        let outcome = match run_virtual(&scenario, &RunOptions::default()) {
            Ok(o) => o,
            Err(e) => {
                eprintln!("{spec}: {e}");
                std::process::exit(2);
            }
        };
        let allocs = ALLOCS.load(Ordering::Relaxed) - before;
        let s = &outcome.report.summary;
        let per = |n: u64| allocs as f64 / n.max(1) as f64;
        println!(
            "{:<50} {:>12} {:>9} {:>9} {:>12} {:>10.1} {:>11.1} {:>9.2}",
            spec,
            allocs,
            s.logical_requests,
            s.outbound_attempts,
            outcome.events,
            per(s.logical_requests),
            per(s.outbound_attempts),
            per(outcome.events)
        );
    }
}
