//! Starvation: the longest any tenant waited with work queued while other tenants were
//! served (seed 001's fairness, as a figure an expectation can bound).
//!
//! A tenant's wait starts when it has work arrived and not yet sent (its backlog goes from
//! empty to one) or when it last sent while work stayed queued, and ends at its next send.
//! The wait counts only if at least one other tenant sent during it: a tenant waiting
//! alone is waiting on the provider, not starved. A wait still open when the run stops
//! counts up to the stop.

use stampede_core::{JobId, Millis};

use super::queues::MAX_TRACKED;

/// Most tenants followed; actions of later ones are not.
const MAX_TENANTS: usize = u16::MAX as usize - 1;

/// No tenant recorded for an action (never arrived here, or past the caps).
const NONE: u16 = u16::MAX;

#[derive(Debug, Default)]
struct Waiting {
    /// Actions arrived and not yet sent (or ended unsent).
    queued: u64,
    /// Start of the current wait (ms), while `queued > 0`.
    since: Millis,
    /// `sends` when the wait started: every send since was another tenant's (a send of
    /// this tenant's ends the wait).
    sends_at_start: u64,
}

/// Longest starvation per tenant, kept while a run plays.
#[derive(Debug, Default)]
pub struct Starvation {
    names: Vec<String>,
    tenants: Vec<Waiting>,
    /// Tenant index of each action, by id (1 byte pair per id).
    of_job: Vec<u16>,
    /// First sends of every tenant so far.
    sends: u64,
    /// Longest wait so far (ms) and whose.
    longest: (Millis, Option<u16>),
}

impl Starvation {
    /// Job `job` of `tenant` arrived at `at` (ms).
    pub fn arrive(&mut self, job: JobId, tenant: &str, at: Millis) {
        if job >= MAX_TRACKED {
            return;
        }
        let ix = match self.names.iter().position(|n| n == tenant) {
            Some(i) => i,
            None if self.names.len() < MAX_TENANTS => {
                self.names.push(tenant.to_string());
                self.tenants.push(Waiting::default());
                self.names.len() - 1
            }
            None => return,
        };
        let slot = usize::try_from(job).unwrap_or(usize::MAX);
        if self.of_job.len() <= slot {
            self.of_job.resize(slot + 1, NONE);
        }
        self.of_job[slot] = ix as u16;
        let sends = self.sends;
        let w = &mut self.tenants[ix];
        if w.queued == 0 {
            w.since = at;
            w.sends_at_start = sends;
        }
        w.queued += 1;
    }

    fn tenant_of(&mut self, job: JobId) -> Option<usize> {
        let slot = usize::try_from(job).ok()?;
        let ix = *self.of_job.get(slot)?;
        // Each action leaves the queue once.
        self.of_job[slot] = NONE;
        (ix != NONE).then_some(usize::from(ix))
    }

    /// Job `job` was first sent at `at` (ms).
    pub fn sent(&mut self, job: JobId, at: Millis) {
        let Some(ix) = self.tenant_of(job) else {
            self.sends += 1;
            return;
        };
        self.close_wait(ix, at);
        let sends = self.sends;
        let w = &mut self.tenants[ix];
        w.queued -= 1;
        // Work still queued: a new wait starts now.
        w.since = at;
        w.sends_at_start = sends + 1;
        self.sends += 1;
    }

    /// Job `job` ended without being sent (failed or cancelled in the queue).
    pub fn ended_unsent(&mut self, job: JobId) {
        if let Some(ix) = self.tenant_of(job) {
            self.tenants[ix].queued -= 1;
        }
    }

    /// Ends tenant `ix`'s current wait at `at`, counting it if others were served in it.
    fn close_wait(&mut self, ix: usize, at: Millis) {
        let w = &self.tenants[ix];
        let others = self.sends - w.sends_at_start;
        if w.queued > 0 && others > 0 {
            let span = at.saturating_sub(w.since);
            if span > self.longest.0 {
                self.longest = (span, Some(ix as u16));
            }
        }
    }

    /// The longest starvation (ms) and the tenant it was, with the waits still open at `end`.
    pub fn finish(mut self, end: Millis) -> (Millis, Option<String>) {
        for ix in 0..self.tenants.len() {
            self.close_wait(ix, end);
        }
        let who = self.longest.1.map(|i| self.names[usize::from(i)].clone());
        (self.longest.0, who)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_tenant_waiting_while_another_is_served_is_starved_for_that_span() {
        let mut s = Starvation::default();
        s.arrive(1, "bulk", 0);
        s.arrive(2, "small", 0);
        s.arrive(3, "bulk", 0);
        s.sent(1, 10); // bulk served; small waits from 0
        s.sent(3, 20);
        s.sent(2, 500); // small waited 500 ms while bulk was served twice
        assert_eq!(s.finish(1_000), (500, Some("small".into())));
    }

    #[test]
    fn waiting_alone_is_not_starvation() {
        let mut s = Starvation::default();
        s.arrive(1, "only", 0);
        s.arrive(2, "only", 0);
        s.sent(1, 400);
        s.sent(2, 900);
        assert_eq!(s.finish(1_000), (0, None));
    }

    #[test]
    fn a_wait_still_open_at_the_end_counts_to_the_end() {
        let mut s = Starvation::default();
        s.arrive(1, "a", 0);
        s.arrive(2, "b", 100);
        s.sent(1, 200);
        assert_eq!(s.finish(5_000), (4_900, Some("b".into())));
    }

    #[test]
    fn an_action_ended_unsent_leaves_the_queue() {
        let mut s = Starvation::default();
        s.arrive(1, "a", 0);
        s.arrive(2, "b", 0);
        s.ended_unsent(2);
        s.sent(1, 300);
        assert_eq!(s.finish(1_000), (0, None));
    }
}
