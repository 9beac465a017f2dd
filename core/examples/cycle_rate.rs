//! Prints how many submit -> dispatch -> outcome -> terminal cycles per second the core runs
//! with a few thousand jobs queued (wall clock, one thread). The criterion bench
//! (`benches/cycle.rs`) measures the same cycle with statistics; this one is quick to run
//! under `perf stat`: `cargo run --release -p stampede-core --example cycle_rate -- 2000000`.
//!
//! Options after the count, in any order: `no-audit` (the policy records no audit events)
//! and `keep-nothing` (the in-memory ledger keeps nothing, as a run no one restores from
//! has it: the core still writes ahead of every send, and alternating the two measures what
//! the keeping ledger's writes cost the cycle).

use std::time::Instant;

#[path = "../benches/support/mod.rs"]
mod support;

use support::{completed, job, loaded, loaded_on};

use stampede_core::{Command, InMemoryLedger, Job};

const QUEUED: u64 = 4_096;

fn main() {
    let cycles: u64 = std::env::args()
        .nth(1)
        .and_then(|a| a.parse().ok())
        .unwrap_or(1_000_000);
    let options: Vec<String> = std::env::args().skip(2).collect();
    if let Some(unknown) = options
        .iter()
        .find(|o| !matches!(o.as_str(), "no-audit" | "keep-nothing"))
    {
        eprintln!("cycle_rate: unknown option {unknown:?}; usage: cycle_rate [CYCLES] [no-audit] [keep-nothing]");
        std::process::exit(2);
    }
    let audit = !options.iter().any(|o| o == "no-audit");
    let keep_nothing = options.iter().any(|o| o == "keep-nothing");
    let mut s = if keep_nothing {
        loaded_on(audit, QUEUED, InMemoryLedger::keeping_nothing())
    } else {
        loaded(audit, QUEUED)
    };
    let ok = completed(None);
    // Jobs are built outside the timed sections (they are the driver's input, not the core's
    // work), in chunks so memory stays small.
    let mut timed = std::time::Duration::ZERO;
    let mut done = 0;
    while done < cycles {
        let chunk = (cycles - done).min(65_536);
        let jobs: Vec<Job> = (0..chunk).map(|i| job(QUEUED + done + i)).collect();
        let start = Instant::now();
        for (i, job) in (done..).zip(jobs) {
            let now = i + 1;
            s.submit(job, now).expect("admitted");
            // Read where they lie and consumed, as both drivers do (`peek`, then `consume`).
            let Some(Command::Send(send)) = s.peek(now) else {
                panic!("a send was due")
            };
            let attempt = send.attempt;
            s.consume();
            s.on_outcome(attempt, &ok, now);
            let Some(Command::Finish(_)) = s.peek(now) else {
                panic!("a terminal was due")
            };
            s.consume();
            if i % 1024 == 0 {
                // Read where they lie, as both drivers do (`drain_audit_with`).
                s.drain_audit_with(|events| std::hint::black_box(events.len()));
            }
        }
        timed += start.elapsed();
        done += chunk;
    }
    let secs = timed.as_secs_f64();
    println!(
        "{cycles} cycles with {QUEUED} queued (audit {}{}): {:.3} s wall in the core, {:.0} cycles/s",
        if audit { "on" } else { "off" },
        if keep_nothing { ", ledger keeping nothing" } else { "" },
        secs,
        cycles as f64 / secs
    );
}
