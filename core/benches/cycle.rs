//! One full submit -> dispatch -> outcome -> terminal cycle through the core, with a few
//! thousand jobs queued behind it. Run: `cargo bench -p stampede-core --bench cycle`.
//! Criterion's `thrpt` line is cycles per second. Jobs are built outside the measured time:
//! they are the driver's input, not the core's work.

use std::time::{Duration, Instant};

mod support;

use support::{completed, job, loaded};

use criterion::{criterion_group, criterion_main, BatchSize, Criterion, Throughput};
use stampede_core::{Command, Job, Outcome, Scheduler};

/// Jobs kept queued behind the one being cycled.
const QUEUED: u64 = 4_096;

struct Cycler {
    s: Scheduler,
    next_id: u64,
    now: u64,
    outcome: Outcome,
}

impl Cycler {
    fn cycle(&mut self, job: Job) {
        self.now += 1;
        self.s.submit(job, self.now).expect("admitted");
        // Read where they lie and consumed, as both drivers do (`peek`, then `consume`).
        let Some(Command::Send(send)) = self.s.peek(self.now) else {
            panic!("a send was due")
        };
        let attempt = send.attempt;
        self.s.consume();
        self.s.on_outcome(attempt, &self.outcome, self.now);
        let Some(Command::Finish(_)) = self.s.peek(self.now) else {
            panic!("a terminal was due")
        };
        self.s.consume();
        if self.now % 1024 == 0 {
            // Read where they lie, as both drivers do (`drain_audit_with`).
            self.s
                .drain_audit_with(|events| std::hint::black_box(events.len()));
        }
    }

    /// Runs `iters` cycles and returns the time spent in them only.
    fn run(&mut self, iters: u64) -> Duration {
        let jobs: Vec<Job> = (0..iters).map(|i| job(self.next_id + i)).collect();
        self.next_id += iters;
        let start = Instant::now();
        for job in jobs {
            self.cycle(job);
        }
        start.elapsed()
    }
}

fn bench(c: &mut Criterion) {
    let mut group = c.benchmark_group("cycle");
    group.throughput(Throughput::Elements(1));
    for (name, audit) in [
        ("submit_dispatch_outcome/audit_on", true),
        ("submit_dispatch_outcome/audit_off", false),
    ] {
        let mut cycler = Cycler {
            s: loaded(audit, QUEUED),
            next_id: QUEUED,
            now: 0,
            outcome: completed(None),
        };
        group.bench_function(name, |b| b.iter_custom(|iters| cycler.run(iters)));
    }
    group.bench_function("setup_4096_queued", |b| {
        b.iter_batched(|| (), |()| loaded(true, QUEUED), BatchSize::LargeInput)
    });
    group.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
