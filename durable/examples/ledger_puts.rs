//! Puts per second for the SQLite ledger with `synchronous = FULL` (the default) and
//! `NORMAL`, the median of 3 runs each, on this machine's disk.
//!
//! ```text
//! cargo run --release -p stampede-durable --example ledger_puts [-- PUTS [DIR]]
//! ```
//!
//! Each run writes PUTS puts (default 600) to a fresh ledger in a temporary directory under
//! DIR (default: the current directory, so the figure is for the disk the runner would use;
//! a tmpfs would make fsync free and the figure meaningless). The puts follow an action's life
//! as the scheduler writes it: planned, in flight, completed, so two thirds are updates.

use std::path::PathBuf;
use std::time::Instant;

use stampede_core::{ActionState, Job, Ledger, LedgerEntry, Priority, Route};
use stampede_durable::{LedgerOptions, SqliteLedger, Synchronous};

const RUNS: usize = 3;
const LIFE: [ActionState; 3] = [
    ActionState::Planned,
    ActionState::InFlight,
    ActionState::Completed,
];

fn entry(id: u64, step: usize) -> LedgerEntry {
    LedgerEntry {
        job: Job {
            id,
            tenant: "acme".into(),
            task: format!("task-{}", id / 10).into(),
            credential: "sk-acme-shared".into(),
            scope: Some("account:acme".into()),
            class: "uncertain_write".into(),
            route: Route::CreateRecord,
            resource: None,
            priority: Priority::Normal,
            prompt_tokens: 0,
            max_output_tokens: 0,
            deadline: Some(60_000),
            idempotency_key: Some(format!("acme/task-{}/{id:016x}", id / 10).into()),
            payload_hash: id,
            external_ref: Some(format!("ref-{id}")),
            coalescable: false,
            stream: false,
            model: None,
            sole_task: false,
        },
        state: LIFE[step],
        attempts: step as u32,
        waited_ms: 0,
        operation_id: (step > 1).then(|| format!("op-{id}").into()),
        updated_at: id * 10 + step as u64,
    }
}

/// Puts per second for one run on a fresh file.
fn one_run(
    dir: &std::path::Path,
    sync: Synchronous,
    puts: u64,
) -> Result<f64, Box<dyn std::error::Error>> {
    let run_dir = tempfile::tempdir_in(dir)?;
    let mut ledger = SqliteLedger::open_with(
        run_dir.path().join("ledger.sqlite"),
        LedgerOptions { synchronous: sync },
    )?;
    let started = Instant::now();
    for n in 0..puts {
        ledger.put(&entry(n / 3, (n % 3) as usize))?;
    }
    Ok(puts as f64 / started.elapsed().as_secs_f64())
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let mut args = std::env::args().skip(1);
    let puts: u64 = match args.next() {
        Some(text) => text
            .parse()
            .map_err(|_| format!("PUTS must be a whole number, got {text:?}"))?,
        None => 600,
    };
    let dir = args
        .next()
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from("."));
    println!(
        "ledger puts/s, median of {RUNS} runs of {puts} puts, in {}",
        dir.display()
    );
    for sync in [Synchronous::Full, Synchronous::Normal] {
        let mut rates = (0..RUNS)
            .map(|_| one_run(&dir, sync, puts))
            .collect::<Result<Vec<_>, _>>()?;
        rates.sort_by(f64::total_cmp);
        let shown: Vec<String> = rates.iter().map(|r| format!("{r:.0}")).collect();
        println!(
            "synchronous={sync:?}: {:.0} puts/s (runs: {})",
            rates[RUNS / 2],
            shown.join(", ")
        );
    }
    Ok(())
}
