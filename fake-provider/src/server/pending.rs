//! Which attempts' answers have not departed yet, by seq.
//!
//! Seqs rise one by one, so this is a window over them, one flag a seq, from the oldest
//! still pending to the newest: an arrival pushes a flag, a departure clears one, and
//! cleared flags at the front are dropped. Each step is O(1) on every request of the
//! server's hot path; memory follows the span from the oldest pending answer (a hang held
//! for minutes) to the newest, a byte a seq.

use std::collections::VecDeque;

/// Seqs whose answer has not departed.
#[derive(Debug, Default)]
pub(crate) struct Pending {
    /// The seq of `flags[0]`.
    first: u64,
    /// Whether each seq from `first` on is pending.
    flags: VecDeque<bool>,
    /// Flags set.
    count: u64,
}

impl Pending {
    /// Attempt `seq` was journaled; `departs`: its answer will depart (a route the provider
    /// lacks is answered at once and never is pending).
    pub(crate) fn arrived(&mut self, seq: u64, departs: bool) {
        if self.flags.is_empty() {
            self.first = seq;
        }
        let next = self.first + self.flags.len() as u64;
        if seq < next {
            // Not a seq after the window's: nothing to track it by. The server's seqs rise
            // one by one and a reset starts a fresh window, so this is never taken there.
            return;
        }
        for _ in next..seq {
            self.flags.push_back(false);
        }
        self.flags.push_back(departs);
        self.count += u64::from(departs);
        self.trim();
    }

    /// Attempt `seq`'s answer departed.
    pub(crate) fn departed(&mut self, seq: u64) {
        let Some(i) = seq.checked_sub(self.first) else {
            return;
        };
        if let Some(flag) = usize::try_from(i).ok().and_then(|i| self.flags.get_mut(i)) {
            if *flag {
                *flag = false;
                self.count -= 1;
            }
        }
        self.trim();
    }

    /// Answers not departed.
    pub(crate) fn count(&self) -> u64 {
        self.count
    }

    /// Their seqs, rising.
    pub(crate) fn seqs(&self) -> Vec<u64> {
        (self.first..)
            .zip(&self.flags)
            .filter(|(_, pending)| **pending)
            .map(|(seq, _)| seq)
            .collect()
    }

    fn trim(&mut self) {
        while self.flags.front() == Some(&false) {
            self.flags.pop_front();
            self.first += 1;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_window_holds_the_seqs_not_departed() {
        let mut p = Pending::default();
        for seq in 1..=5 {
            p.arrived(seq, seq != 3);
        }
        assert_eq!((p.count(), p.seqs()), (4, vec![1, 2, 4, 5]));
        p.departed(1);
        p.departed(4);
        p.departed(4);
        assert_eq!((p.count(), p.seqs()), (2, vec![2, 5]));
        p.departed(2);
        p.departed(5);
        assert_eq!((p.count(), p.seqs(), p.flags.len()), (0, vec![], 0));
        // A seq skipped (journaled elsewhere) is not pending; an old one is ignored.
        p.arrived(9, true);
        p.arrived(12, true);
        p.arrived(4, true);
        p.departed(100);
        assert_eq!((p.count(), p.seqs()), (2, vec![9, 12]));
    }
}
