//! The provider's journal, read while a run plays.
//!
//! A provider keeps its journal in a ring (100,000 entries by default, `journal_ring`), and
//! a harness that read it only once the run was over lost every entry the ring had dropped
//! by then: a live run of more attempts than the ring holds ended in an error after playing
//! it all, and a `--client` run undercounted without a word. A [`JournalTail`] reads the
//! new entries every [`READ_EVERY`] on a task of its own, so the ring has to hold only what
//! arrives between two reads. Pages are kept as the provider sent them and parsed once, at
//! the end, so the reads cost the run's loop next to nothing.
//!
//! Entries are numbered without gaps (every arrival at the provider's edge takes the next
//! seq), so an entry dropped before it was read shows as a gap, and [`JournalTail::finish`]
//! refuses a journal with one rather than measure from part of it.

use std::time::Duration;

use stampede_provider::model::JournalEntry;
use tokio::sync::oneshot;
use tokio::task::JoinHandle;

use super::provider::{parse_journal, Control};
use super::LiveError;

/// How often the journal is read while a run plays (real time). At the fake provider's
/// fastest (about 150 k attempts/s over loopback, README's Speed table) this is well inside
/// what its default ring of 100,000 entries holds.
pub const READ_EVERY: Duration = Duration::from_millis(250);

/// Longest a run's end waits for the answers still in flight to depart before the last read
/// (real time): a connection the client closed is noticed within milliseconds.
const SETTLE: Duration = Duration::from_secs(2);

/// The journal read so far: pages as the provider sent them, and the last seq among them.
struct Pages {
    texts: Vec<String>,
    last_seq: u64,
}

impl Pages {
    /// Reads the entries after the last seen and keeps their pages.
    async fn read(&mut self, control: &Control) -> Result<(), LiveError> {
        let (text, last_seq) = control.journal_text(self.last_seq).await?;
        if !text.is_empty() {
            self.last_seq = last_seq;
            self.texts.push(text);
        }
        Ok(())
    }
}

/// A task reading a provider's journal as it grows (see the module).
pub struct JournalTail {
    stop: Option<oneshot::Sender<()>>,
    /// Taken by [`Self::finish`]; a tail dropped without it (a run that failed part way)
    /// stops its task.
    task: Option<JoinHandle<Result<Pages, LiveError>>>,
    control: Control,
    /// The seq the reading started after.
    after: u64,
}

impl JournalTail {
    /// Starts reading the journal after seq `after`, every `every` until [`Self::finish`].
    pub(crate) fn start(control: &Control, after: u64, every: Duration) -> Self {
        let (stop, mut stopped) = oneshot::channel::<()>();
        let reader = control.clone();
        let task = tokio::spawn(async move {
            let mut pages = Pages {
                texts: Vec::new(),
                last_seq: after,
            };
            let mut tick = tokio::time::interval(every);
            tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
            loop {
                tokio::select! {
                    _ = &mut stopped => return Ok(pages),
                    _ = tick.tick() => pages.read(&reader).await?,
                }
            }
        });
        JournalTail {
            stop: Some(stop),
            task: Some(task),
            control: control.clone(),
            after,
        }
    }

    /// Stops reading, reads what arrived since the last read, and gives every entry after
    /// the start in seq order. `Err` when a read failed, or when entries are missing: the
    /// provider's ring dropped them before they were read, and figures made without them
    /// would undercount.
    pub(crate) async fn finish(mut self) -> Result<Vec<JournalEntry>, LiveError> {
        // The task may have ended on an error already; then there is no one to tell.
        if let Some(stop) = self.stop.take() {
            let _ = stop.send(());
        }
        let task = self
            .task
            .take()
            .expect("finish is called once, as it takes the tail");
        let mut pages = task
            .await
            .map_err(|e| LiveError::Provider(format!("the journal reader failed: {e}")))??;
        // Answers still on their way when the run ended depart as their connections close:
        // give them a moment, so the entries read last are final.
        let settle_until = tokio::time::Instant::now() + SETTLE;
        let abandoned = loop {
            let abandoned = self.control.abandoned().await?;
            if abandoned.in_flight == 0 || tokio::time::Instant::now() >= settle_until {
                break abandoned;
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        };
        pages.read(&self.control).await?;
        let mut entries = Vec::new();
        for text in &pages.texts {
            entries.extend(parse_journal(self.control.base(), text)?);
        }
        check_whole(self.after, &entries, self.control.base())?;
        if abandoned.abandoned_lost > 0 {
            return Err(LiveError::Provider(format!(
                "{} answers {}'s clients abandoned went unlisted, so entries read before \
                 that could count them as delivered",
                abandoned.abandoned_lost,
                self.control.base()
            )));
        }
        mark_abandoned(&mut entries, &abandoned.abandoned);
        // Answers still on their way once the run is over were not delivered within it.
        mark_abandoned(&mut entries, &abandoned.pending);
        Ok(entries)
    }
}

/// Marks the 2xx entries of `seqs` undelivered: read while their answer was pending, they
/// said a 2xx their client then never received (a client timeout shorter than the latency,
/// or an answer still on its way when the run ended), which no figure may count as a
/// request the provider answered.
fn mark_abandoned(entries: &mut [JournalEntry], seqs: &[u64]) {
    for seq in seqs {
        if let Ok(i) = entries.binary_search_by_key(seq, |e| e.seq) {
            if matches!(entries[i].status, Some(200..=299)) {
                entries[i].undelivered = true;
            }
        }
    }
}

/// `Err` naming how many entries are missing when `entries` (in seq order) do not follow
/// seq `after` one by one.
fn check_whole(after: u64, entries: &[JournalEntry], base: &str) -> Result<(), LiveError> {
    let mut previous = after;
    let mut missing = 0u64;
    for entry in entries {
        if entry.seq <= previous {
            // Counting it would count an attempt twice (a repeated entry), or mistake a
            // journal that went back for a gap.
            return Err(LiveError::Provider(format!(
                "{base}'s journal gave seq {} after seq {previous}: a provider's journal \
                 numbers its entries one by one, so the figures cannot be made from it (is \
                 something between the run and the provider rewriting its answers?)",
                entry.seq
            )));
        }
        missing += entry.seq - previous - 1;
        previous = entry.seq;
    }
    if missing > 0 {
        return Err(LiveError::Provider(format!(
            "{missing} entries of {base}'s journal were dropped from its ring before they \
             could be read, so the figures would undercount: start the provider with a \
             larger journal ring, or keep other traffic off it during the run"
        )));
    }
    Ok(())
}

impl Drop for JournalTail {
    fn drop(&mut self) {
        if let Some(task) = self.task.take() {
            task.abort();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn entries(seqs: &[u64]) -> Vec<JournalEntry> {
        seqs.iter()
            .map(|&seq| JournalEntry {
                seq,
                ..JournalEntry::default()
            })
            .collect()
    }

    fn missing(after: u64, seqs: &[u64]) -> Option<String> {
        check_whole(after, &entries(seqs), "http://p")
            .err()
            .map(|e| e.to_string())
    }

    #[test]
    fn a_journal_that_follows_its_start_one_by_one_is_whole() {
        assert_eq!(missing(0, &[]), None);
        assert_eq!(missing(0, &[1, 2, 3]), None);
        assert_eq!(missing(7, &[8, 9]), None);
    }

    /// A repeated or backward seq is refused by name: counted, it doubled the attempts
    /// (a proxy that repeated the journal), or read as entries dropped.
    #[test]
    fn a_seq_that_repeats_or_goes_back_is_refused() {
        let repeated = missing(0, &[1, 2, 2, 3]).expect("a repeat");
        assert!(repeated.contains("gave seq 2 after seq 2"), "{repeated}");
        let back = missing(0, &[1, 5, 3]).expect("back");
        assert!(back.contains("gave seq 3 after seq 5"), "{back}");
        let before_start = missing(10, &[10, 11]).expect("at the start");
        assert!(
            before_start.contains("gave seq 10 after seq 10"),
            "{before_start}"
        );
    }

    #[test]
    fn entries_dropped_at_the_start_or_between_reads_are_counted() {
        let at_start = missing(0, &[4, 5]).expect("entries 1 to 3 are missing");
        assert!(at_start.contains("3 entries of http://p"), "{at_start}");
        let between = missing(0, &[1, 2, 10, 11, 20]).expect("gaps");
        assert!(between.contains("15 entries"), "{between}");
    }
}
