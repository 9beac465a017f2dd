//! Prints how many submit -> dispatch -> outcome -> terminal cycles per second the core runs
//! with a few thousand jobs queued (wall clock, one thread). The criterion bench
//! (`benches/cycle.rs`) measures the same cycle with statistics; this one is quick to run
//! under `perf stat`: `cargo run --release -p stampede-core --example cycle_rate -- 2000000`.

use std::time::Instant;

#[path = "../benches/support/mod.rs"]
mod support;

use support::job;

use rand::SeedableRng;
use rand_chacha::ChaCha8Rng;
use stampede_core::{
    Command, InMemoryLedger, Job, Outcome, Policy, Response, Scheduler, ScopeBudget, Usage,
};

const QUEUED: u64 = 4_096;

fn main() {
    let cycles: u64 = std::env::args()
        .nth(1)
        .and_then(|a| a.parse().ok())
        .unwrap_or(1_000_000);
    let audit = std::env::args().nth(2).map_or(true, |a| a != "no-audit");
    let mut policy = Policy {
        workers: 1,
        audit,
        ..Policy::default()
    };
    let budget = ScopeBudget {
        rpm: Some(u32::MAX),
        tpm: Some(u32::MAX),
        concurrency: None,
        reserve: None,
    };
    policy.scopes.insert("account:bench".into(), budget);
    let mut s = Scheduler::new(
        policy,
        InMemoryLedger::forgetting_terminal(),
        ChaCha8Rng::seed_from_u64(1),
    )
    .expect("valid policy");
    for id in 0..QUEUED {
        s.submit(job(id), 0).expect("admitted");
    }
    let ok = Outcome::Response(Response {
        status: 200,
        headers: Vec::new(),
        retry_after_ms: None,
        rate: None,
        error_code: None,
        usage: Some(Usage {
            prompt_tokens: 300,
            completion_tokens: 120,
        }),
        operation_id: None,
    });
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
            let Some(Command::Send(send)) = s.poll(now) else {
                panic!("a send was due")
            };
            s.on_outcome(send.attempt, ok.clone(), now);
            let Some(Command::Finish(_)) = s.poll(now) else {
                panic!("a terminal was due")
            };
            if i % 1024 == 0 {
                std::hint::black_box(s.drain_audit());
            }
        }
        timed += start.elapsed();
        done += chunk;
    }
    let secs = timed.as_secs_f64();
    println!(
        "{cycles} cycles with {QUEUED} queued (audit {}): {:.3} s wall in the core, {:.0} cycles/s",
        if audit { "on" } else { "off" },
        secs,
        cycles as f64 / secs
    );
}
