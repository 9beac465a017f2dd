//! The commands waiting for the driver, in the order `poll` and `peek` hand them out.
//!
//! Nearly always the outbox holds one command at a time: a send, taken before the next is
//! made, then a terminal. Those are written over the last send and the last terminal the
//! driver consumed, which the outbox keeps for the purpose: a command built and then
//! pushed was built on the stack and copied in (160 bytes), and the copy's loads stalled on
//! the narrower stores that had just built it. Consuming a kept command drops nothing; its
//! fields are dropped when the next command of its kind is written over them. Anything
//! made while a command already waits queues behind it, as before.

use std::collections::VecDeque;

use smallvec::SmallVec;
use stampede_name::Name;

use crate::command::{Command, Reason, SendAttempt, SendKind, Terminal, TerminalStatus};
use crate::job::Route;

/// Which kept command is the outbox's front.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Front {
    /// Neither: the front, if any, is the queue's.
    Queue,
    /// The kept send.
    Send,
    /// The kept terminal.
    Finish,
}

/// The commands waiting for the driver.
pub(super) struct Outbox {
    /// The last send written (always a `Command::Send`), kept to be written over.
    send: Command,
    /// The last terminal written (always a `Command::Finish`), kept to be written over.
    finish: Command,
    /// Which kept command waits at the front. Only an empty outbox writes one, so the
    /// queue holds what was made after it.
    front: Front,
    /// Commands waiting behind the front one (or all of them, when no kept one waits).
    queue: VecDeque<Command>,
}

impl Default for Outbox {
    fn default() -> Self {
        Self {
            send: Command::Send(unwritten_send()),
            finish: Command::Finish(unwritten_terminal()),
            front: Front::Queue,
            queue: VecDeque::new(),
        }
    }
}

/// A send to be written over at once (it allocates nothing).
fn unwritten_send() -> SendAttempt {
    SendAttempt {
        attempt: 0,
        job: 0,
        attempt_no: 0,
        kind: SendKind::Action,
        credential: Name::default(),
        scope: Name::default(),
        route: Route::ChatCompletion,
        idempotency_key: None,
        reserved_tokens: 0,
        timeout_ms: 0,
        model: None,
        fallback: None,
        degraded: None,
        trimmed: None,
    }
}

/// A terminal to be written over at once (it allocates nothing).
fn unwritten_terminal() -> Terminal {
    Terminal {
        job: 0,
        status: TerminalStatus::Completed,
        reason: Reason::Succeeded,
        sent: false,
        last_status: None,
        attempts: 0,
        waited_ms: 0,
        operation_id: None,
        next_actions: SmallVec::new(),
    }
}

impl Outbox {
    /// Whether no command waits.
    #[inline(always)]
    pub(super) fn is_empty(&self) -> bool {
        self.front == Front::Queue && self.queue.is_empty()
    }

    /// The command due first, lent where it lies.
    #[inline(always)]
    pub(super) fn front(&self) -> Option<&Command> {
        match self.front {
            Front::Queue => self.queue.front(),
            Front::Send => Some(&self.send),
            Front::Finish => Some(&self.finish),
        }
    }

    /// Takes the command due first out. A kept command is handed out as a clone and stays to
    /// be written over: no heap allocation for a usual action's send or terminal (inline
    /// names and key), but a shared text's count is bumped, and a look-up's `LookupBy`, a
    /// fallback or an operation id over 24 bytes is allocated again. The drivers' hot path
    /// uses `peek` and `consume`, which copy nothing; `poll` serves several replicas.
    pub(super) fn pop_front(&mut self) -> Option<Command> {
        match std::mem::replace(&mut self.front, Front::Queue) {
            Front::Queue => self.queue.pop_front(),
            Front::Send => Some(self.send.clone()),
            Front::Finish => Some(self.finish.clone()),
        }
    }

    /// Drops the command due first (the driver carried it out); nothing when none waits.
    #[inline(always)]
    pub(super) fn consume(&mut self) {
        if self.front != Front::Queue {
            // Kept: its fields are dropped when the next one is written over it.
            self.front = Front::Queue;
        } else if self.queue.len() == 1 {
            // Dropped where it lies: `pop_front` copies the command out first.
            self.queue.clear();
        } else {
            self.consume_one_of_several();
        }
    }

    /// [`Outbox::consume`] when other commands wait behind the one lent (rare: a terminal's
    /// followers): kept out of line, so the common case saves no registers for it.
    #[cold]
    #[inline(never)]
    fn consume_one_of_several(&mut self) {
        drop(self.queue.pop_front());
    }

    /// The place of a new send, last in the outbox, for the caller to write over whole at
    /// once (it holds an earlier send until then). With the outbox empty, the kept send.
    #[inline(always)]
    pub(super) fn send_slot(&mut self) -> &mut SendAttempt {
        let slot = if self.is_empty() {
            self.front = Front::Send;
            &mut self.send
        } else {
            self.queue.push_back(Command::Send(unwritten_send()));
            self.queue.back_mut().expect("just pushed")
        };
        match slot {
            Command::Send(send) => send,
            Command::Finish(_) => unreachable!("the kept send is a send"),
        }
    }

    /// The place of a new terminal, last in the outbox, for the caller to write over whole
    /// at once. With the outbox empty, the kept terminal.
    #[inline(always)]
    pub(super) fn finish_slot(&mut self) -> &mut Terminal {
        let slot = if self.is_empty() {
            self.front = Front::Finish;
            &mut self.finish
        } else {
            self.queue.push_back(Command::Finish(unwritten_terminal()));
            self.queue.back_mut().expect("just pushed")
        };
        match slot {
            Command::Finish(terminal) => terminal,
            Command::Send(_) => unreachable!("the kept terminal is a terminal"),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn send(attempt: u64) -> SendAttempt {
        SendAttempt {
            attempt,
            ..unwritten_send()
        }
    }

    fn terminal(job: u64) -> Terminal {
        Terminal {
            job,
            ..unwritten_terminal()
        }
    }

    /// Commands come out in the order they were written, whether kept or queued, through
    /// `consume` or `pop_front`.
    #[test]
    fn commands_leave_in_the_order_they_were_written() {
        let mut outbox = Outbox::default();
        assert!(outbox.is_empty());
        assert_eq!(outbox.front(), None);
        *outbox.send_slot() = send(1);
        *outbox.finish_slot() = terminal(2);
        *outbox.send_slot() = send(3);
        assert_eq!(outbox.front(), Some(&Command::Send(send(1))));
        outbox.consume();
        assert_eq!(outbox.front(), Some(&Command::Finish(terminal(2))));
        assert_eq!(outbox.pop_front(), Some(Command::Finish(terminal(2))));
        assert!(!outbox.is_empty());
        // A kept terminal is written while a send still waits: it queues behind it.
        *outbox.finish_slot() = terminal(4);
        assert_eq!(outbox.pop_front(), Some(Command::Send(send(3))));
        assert_eq!(outbox.front(), Some(&Command::Finish(terminal(4))));
        outbox.consume();
        assert!(outbox.is_empty());
        assert_eq!(outbox.pop_front(), None);
        // The kept ones are written over, and handed out again.
        *outbox.finish_slot() = terminal(5);
        assert_eq!(outbox.front(), Some(&Command::Finish(terminal(5))));
        assert_eq!(outbox.pop_front(), Some(Command::Finish(terminal(5))));
        *outbox.send_slot() = send(6);
        *outbox.send_slot() = send(7);
        assert_eq!(outbox.pop_front(), Some(Command::Send(send(6))));
        assert_eq!(outbox.pop_front(), Some(Command::Send(send(7))));
        assert!(outbox.is_empty());
        outbox.consume();
        assert!(outbox.is_empty());
    }

    /// What a driver can do to the outbox.
    #[derive(Debug, Clone)]
    enum Op {
        Send(u64),
        Finish(u64),
        Consume,
        Pop,
    }

    fn op() -> impl Strategy<Value = Op> {
        prop_oneof![
            (0..1_000u64).prop_map(Op::Send),
            (0..1_000u64).prop_map(Op::Finish),
            Just(Op::Consume),
            Just(Op::Pop),
        ]
    }

    proptest! {
        /// The outbox hands out what a plain queue of the same commands would, in any mix
        /// of writes, `consume` and `pop_front`: the kept commands change where a command
        /// lies, never which one is due.
        #[test]
        fn the_outbox_is_a_queue(ops in proptest::collection::vec(op(), 0..64)) {
            let mut outbox = Outbox::default();
            let mut queue = VecDeque::new();
            for op in ops {
                match op {
                    Op::Send(attempt) => {
                        *outbox.send_slot() = send(attempt);
                        queue.push_back(Command::Send(send(attempt)));
                    }
                    Op::Finish(job) => {
                        *outbox.finish_slot() = terminal(job);
                        queue.push_back(Command::Finish(terminal(job)));
                    }
                    Op::Consume => {
                        outbox.consume();
                        queue.pop_front();
                    }
                    Op::Pop => prop_assert_eq!(outbox.pop_front(), queue.pop_front()),
                }
                prop_assert_eq!(outbox.front(), queue.front());
                prop_assert_eq!(outbox.is_empty(), queue.is_empty());
            }
        }
    }
}
