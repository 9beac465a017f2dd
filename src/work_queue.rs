//! Runs independent jobs (scenarios for `check`, configurations for `sweep`) on the machine's
//! cores with a simple shared work queue, and hands the results back in input order, so the
//! output never depends on which thread finished first.

use std::collections::BTreeMap;
use std::num::NonZeroUsize;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::mpsc;

/// Worker threads to use: `requested`, else the machine's cores, never more than `jobs`
/// and never fewer than one.
pub fn thread_count(requested: Option<NonZeroUsize>, jobs: usize) -> usize {
    let cores = requested
        .or_else(|| std::thread::available_parallelism().ok())
        .map_or(1, NonZeroUsize::get);
    cores.min(jobs).max(1)
}

/// Runs `job` on every item over `threads` threads. `on_result` is called on the calling
/// thread, in input order, as soon as every earlier item is done (so a long list prints as it
/// goes). A job that panics yields `Err(message)` for that item; the others still run.
pub fn run_in_order<T, R>(
    items: &[T],
    threads: usize,
    job: impl Fn(&T) -> R + Sync,
    mut on_result: impl FnMut(usize, Result<R, String>),
) where
    T: Sync,
    R: Send,
{
    let next = AtomicUsize::new(0);
    let (tx, rx) = mpsc::channel::<(usize, Result<R, String>)>();
    std::thread::scope(|scope| {
        for _ in 0..threads.max(1) {
            let tx = tx.clone();
            let (next, job) = (&next, &job);
            scope.spawn(move || loop {
                let i = next.fetch_add(1, Ordering::Relaxed);
                let Some(item) = items.get(i) else { break };
                let result = catch_unwind(AssertUnwindSafe(|| job(item))).map_err(panic_text);
                if tx.send((i, result)).is_err() {
                    break;
                }
            });
        }
        // Only the workers hold senders now: the loop below ends when they all have.
        drop(tx);
        let mut pending: BTreeMap<usize, Result<R, String>> = BTreeMap::new();
        let mut due = 0;
        for (i, result) in rx {
            pending.insert(i, result);
            while let Some(result) = pending.remove(&due) {
                on_result(due, result);
                due += 1;
            }
        }
    });
}

fn panic_text(payload: Box<dyn std::any::Any + Send>) -> String {
    let text = payload
        .downcast_ref::<&str>()
        .map(|s| s.to_string())
        .or_else(|| payload.downcast_ref::<String>().cloned())
        .unwrap_or_else(|| "a panic without a message".to_string());
    format!("the run panicked (a bug in stampede, please report it): {text}")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn results_come_back_in_input_order_from_several_threads() {
        let items: Vec<u64> = (0..50).collect();
        let mut seen = Vec::new();
        run_in_order(
            &items,
            4,
            // Later items are cheaper, so they tend to finish first.
            |&n| (0..(50 - n) * 1000).fold(n, |acc, x| acc.wrapping_add(x % 3)) - n,
            |i, r| seen.push((i, r.is_ok())),
        );
        let order: Vec<usize> = seen.iter().map(|s| s.0).collect();
        assert_eq!(order, (0..50).collect::<Vec<_>>());
        assert!(seen.iter().all(|s| s.1));
    }

    #[test]
    fn a_panicking_job_is_reported_and_the_others_still_run() {
        let items = [1, 2, 3];
        let mut results = Vec::new();
        let hook = std::panic::take_hook();
        std::panic::set_hook(Box::new(|_| {}));
        run_in_order(
            &items,
            2,
            |&n| {
                if n == 2 {
                    panic!("boom");
                }
                n * 10
            },
            |_, r| results.push(r),
        );
        std::panic::set_hook(hook);
        assert_eq!(results[0], Ok(10));
        assert!(results[1].as_ref().unwrap_err().contains("boom"));
        assert_eq!(results[2], Ok(30));
    }

    #[test]
    fn thread_count_is_bounded_by_the_jobs() {
        assert_eq!(thread_count(NonZeroUsize::new(8), 3), 3);
        assert_eq!(thread_count(NonZeroUsize::new(2), 10), 2);
        assert_eq!(thread_count(None, 0), 1);
    }
}
