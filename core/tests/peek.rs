//! Reading commands where they lie: `peek` lends the next command, `consume` takes it; and
//! the hint of which action goes next.

use crate::common;

use common::{job, ok, scheduler};
use stampede_core::{preset, Command};

#[test]
fn peek_lends_the_command_poll_would_give_until_consumed() {
    let mut s = scheduler(preset("stampede").unwrap());
    s.submit(job(1, "llm"), 0).unwrap();
    let Some(Command::Send(send)) = s.peek(0).cloned() else {
        panic!("a send was due")
    };
    assert_eq!(send.job, 1);
    assert_eq!(s.peek(0), Some(&Command::Send(send.clone())), "lent again");
    s.consume();
    assert_eq!(s.peek(0), None, "nothing else is due");
    s.on_outcome(send.attempt, ok(), 10);
    let Some(Command::Finish(terminal)) = s.peek(10) else {
        panic!("a terminal was due")
    };
    assert_eq!(terminal.job, 1);
    s.consume();
    assert_eq!(s.peek(10), None);
    assert_eq!(s.poll(10), None);
}

#[test]
fn poll_takes_a_lent_command_rather_than_losing_it() {
    let mut s = scheduler(preset("stampede").unwrap());
    s.submit(job(1, "llm"), 0).unwrap();
    s.submit(job(2, "llm"), 0).unwrap();
    let lent = s.peek(0).cloned().expect("a send was due");
    assert_eq!(s.poll(0), Some(lent), "poll hands out the lent command");
    let Some(Command::Send(second)) = s.peek(0) else {
        panic!("the second send was due")
    };
    assert_eq!(second.job, 2);
    s.consume();
}

#[test]
#[should_panic(expected = "consume without a command lent by peek")]
fn consume_without_a_lent_command_panics() {
    let mut s = scheduler(preset("stampede").unwrap());
    s.submit(job(1, "llm"), 0).unwrap();
    // The send is due, but the driver never saw it: consuming it would hold its slot
    // forever.
    s.consume();
}

#[test]
#[should_panic(expected = "consume without a command lent by peek")]
fn consume_twice_panics() {
    let mut s = scheduler(preset("stampede").unwrap());
    s.submit(job(1, "llm"), 0).unwrap();
    s.submit(job(2, "llm"), 0).unwrap();
    assert!(s.peek(0).is_some());
    s.consume();
    s.consume();
}

#[test]
fn the_next_send_hint_names_the_head_behind_the_last_send() {
    let mut s = scheduler(preset("stampede").unwrap());
    assert_eq!(s.next_send_hint(), None, "nothing sent yet");
    for id in 1..=3 {
        s.submit(job(id, "llm"), 0).unwrap();
    }
    let mut sent = Vec::new();
    let mut hints = Vec::new();
    while let Some(Command::Send(send)) = s.poll(0) {
        sent.push(send.job);
        hints.push(s.next_send_hint());
    }
    assert_eq!(sent, [1, 2, 3]);
    // After each send, the hint is the next one sent; after the last, none is left behind it.
    assert_eq!(hints, [Some(2), Some(3), None]);
}
