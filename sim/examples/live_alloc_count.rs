//! Heap allocations of the live driver per attempt, split between the client (the driver's
//! loop and its HTTP client, on the thread that calls `run_live`) and the in-process
//! provider (its own thread, `stampede-provider`), counted by a `#[global_allocator]`
//! wrapper around the system allocator.
//!
//! ```text
//! cargo run --release -p stampede-sim --example live_alloc_count [-- ATTEMPTS WORKERS]
//! ```
//!
//! The scenario is `live_overhead`'s: answers at once, no limits, 20,000 attempts and 64
//! workers unless told. Unlike `alloc_count`'s virtual runs the figure moves a little from
//! run to run (connections, timers and the runtime's own bookkeeping follow real time), so
//! it is printed to one decimal and compared between versions, never asserted. Everything
//! the client thread allocates is counted, including reading the provider's journal at the
//! end of the run.

use std::alloc::{GlobalAlloc, Layout, System};
use std::cell::Cell;
use std::sync::atomic::{AtomicU64, Ordering};

use stampede_sim::live_driver::{run_live, LiveOptions};
use stampede_sim::run::RunOptions;
use stampede_sim::scenario;

#[path = "support/live_bench.rs"]
mod live_bench;

use live_bench::scenario_text;

/// The system allocator, counting calls by the thread that makes them.
struct Counting;

/// Allocations by the thread marked as the client, and by the provider's thread.
static CLIENT: AtomicU64 = AtomicU64::new(0);
static PROVIDER: AtomicU64 = AtomicU64::new(0);

thread_local! {
    /// Whether this thread is the client's (set by `main` around the run).
    static IS_CLIENT: Cell<bool> = const { Cell::new(false) };
    /// 0: not looked at yet; 1: some other thread; 2: the provider's. Looked up once per
    /// thread, with `LOOKING` set, since reading the thread's name may allocate.
    static KIND: Cell<u8> = const { Cell::new(0) };
    static LOOKING: Cell<bool> = const { Cell::new(false) };
}

fn count() {
    if IS_CLIENT.with(Cell::get) {
        CLIENT.fetch_add(1, Ordering::Relaxed);
        return;
    }
    if LOOKING.with(Cell::get) {
        return;
    }
    let kind = KIND.with(|k| {
        if k.get() == 0 {
            LOOKING.with(|l| l.set(true));
            let provider = std::thread::current()
                .name()
                .is_some_and(|n| n.starts_with("stampede-provider"));
            k.set(if provider { 2 } else { 1 });
            LOOKING.with(|l| l.set(false));
        }
        k.get()
    });
    if kind == 2 {
        PROVIDER.fetch_add(1, Ordering::Relaxed);
    }
}

// SAFETY: every call is forwarded unchanged to `System`, which upholds the contract.
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        count();
        System.alloc(layout)
    }

    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        count();
        System.alloc_zeroed(layout)
    }

    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        count();
        System.realloc(ptr, layout, new_size)
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        System.dealloc(ptr, layout)
    }
}

#[global_allocator]
static GLOBAL: Counting = Counting;

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let mut args = std::env::args().skip(1);
    let attempts: u64 = args.next().map_or(Ok(20_000), |a| a.parse())?;
    let workers: u64 = args.next().map_or(Ok(64), |a| a.parse())?;
    let text = scenario_text(attempts, workers);
    let scenario = scenario::parse(&text, "live_alloc_count", &[])?;
    let opts = LiveOptions {
        time_scale: Some(1.0),
        ..LiveOptions::default()
    };
    IS_CLIENT.with(|c| c.set(true));
    let (_, run) = run_live(&scenario, &opts, &RunOptions::default())?;
    IS_CLIENT.with(|c| c.set(false));
    let sent = run.journal.len().max(1) as f64;
    let (client, provider) = (
        CLIENT.load(Ordering::Relaxed),
        PROVIDER.load(Ordering::Relaxed),
    );
    println!(
        "{} attempts, {workers} workers: client {client} allocations ({:.1} per attempt), provider {provider} ({:.1} per attempt)",
        run.journal.len(),
        client as f64 / sent,
        provider as f64 / sent
    );
    Ok(())
}
