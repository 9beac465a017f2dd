//! How a `--client` run's workload fared, read from the provider's journal.
//!
//! Every prompt of the workload file starts `request N:` (see `workload_file`), and the
//! provider journals the item a request's prompt names (`JournalEntry::workload_item`):
//! the work itself, as the provider reads it, never a header the client sends about
//! itself. So each attempt is the workload item whose prompt it carried, whatever key,
//! route or SDK sent it. An item completed when one of its attempts had a success answer
//! delivered; its queue wait runs from when the workload made it due (`at_ms`) to its
//! first attempt's arrival, its latency to that answer, and its deadline is the
//! workload's. Requests that carry no item's prompt are the client's own (a health check,
//! work it made up): counted apart, as `foreign_requests`, never as the workload's.
//!
//! Items without a prompt (record writes and item reads) are matched as before: by the
//! provider's identity of logical requests, in the order they first arrived.

use std::collections::{BTreeMap, BTreeSet, HashMap};

use stampede_core::{JobId, Millis};
use stampede_provider::model::{IdentifiedBy, JournalEntry};
use stampede_provider::RequestRoute;

use crate::measure::queues::priority_name;
use crate::measure::{action_route, answered_success, Measurement, SentBy};
use crate::sdk_client::{end_unseen, Unseen};
use crate::sink::attempts::Numbering;
use crate::sink::AttemptSink;
use crate::workload::Arrival;

/// What the journal showed of one workload item.
#[derive(Debug, Default, Clone, Copy)]
struct Seen {
    /// When its first attempt reached the provider (scenario ms).
    first_at: Option<Millis>,
    /// When a success answer to it was delivered, first (scenario ms).
    answered_at: Option<Millis>,
    attempts: u32,
    last_status: Option<u16>,
}

/// Whether `e` is a success whose answer reached the client whole.
fn delivered_success(e: &JournalEntry) -> bool {
    answered_success(e.status, &e.outcome) && !e.undelivered
}

/// Measures `items` (the workload, in file order) from `journal`, writing each attempt's
/// row to `sink`; the run ended at `end_ms` (scenario ms), or was stopped by the user at
/// `stopped_at`. When the client was ended with its work open (`open_at`: stopped by the
/// user, or its duration ran out), an item not completed is still open then (unfinished,
/// sent or not), not failed.
pub(super) fn judge(
    items: &[Arrival],
    journal: &[JournalEntry],
    (end_ms, stopped_at, open_at): (Millis, Option<Millis>, Option<Millis>),
    measure: &mut Measurement,
    sink: &mut dyn AttemptSink,
) -> Result<Apart, String> {
    if let Some(at) = stopped_at {
        measure.stopped_early(at);
    }
    // Items a prompt can name, by their id (the `request N:` of their prompt).
    let prompted: HashMap<JobId, usize> = items
        .iter()
        .enumerate()
        .filter(|(_, a)| a.job.route == stampede_core::Route::ChatCompletion)
        .map(|(i, a)| (a.job.id, i))
        .collect();
    for a in items {
        measure.on_submit();
        measure.on_arrival(a.job.id, a.job.priority, &a.job.class);
        measure.on_tenant_arrival(a.job.id, &a.job.tenant, a.at);
    }
    let mut seen = vec![Seen::default(); items.len()];
    // Logical requests (the provider's identity) that named no item, by id: when each
    // first arrived and when a success to it was delivered.
    let mut unnamed: BTreeMap<u64, (Millis, Option<Millis>)> = BTreeMap::new();
    // The client's own requests that are known to be its own: a prompt naming an item the
    // workload does not have, and token counts, which do no item's work whatever prompt
    // they count (never matched to an item without a prompt).
    let mut foreign_named: BTreeSet<u64> = BTreeSet::new();
    let count_route = RequestRoute::CountTokens.template();
    let mut catalog_reads = 0;
    for e in journal {
        if e.is_catalog_read() {
            // No logical request and no work: counted apart, never as an attempt.
            catalog_reads += 1;
            continue;
        }
        let item = e.workload_item.and_then(|n| prompted.get(&n).copied());
        let Some(i) = item else {
            measure.on_journal(e, None, &SentBy::default());
            crate::sink::attempts::with_row(e, None, "", Numbering::default(), |row| {
                sink.attempt(row)
            })?;
            if e.logical != 0 && e.identified_by != IdentifiedBy::Lookup {
                if e.workload_item.is_some() || e.route == count_route {
                    foreign_named.insert(e.logical);
                } else {
                    let slot = unnamed.entry(e.logical).or_insert((e.at_ms, None));
                    if delivered_success(e) && slot.1.is_none() {
                        slot.1 = Some(e.done_ms.max(e.at_ms));
                    }
                }
            }
            continue;
        };
        let a = &items[i];
        let s = &mut seen[i];
        s.attempts = s.attempts.saturating_add(1);
        s.first_at.get_or_insert(e.at_ms);
        s.last_status = e.status.or(s.last_status);
        if delivered_success(e) && s.answered_at.is_none() {
            s.answered_at = Some(e.done_ms.max(e.at_ms));
        }
        let by = SentBy {
            tenant: &a.job.tenant,
            class: &a.job.class,
            priority: priority_name(a.job.priority),
            provider: 0,
            group: None,
        };
        measure.on_journal(e, None, &by);
        let numbering = Numbering {
            action: a.job.id,
            attempt_no: s.attempts,
        };
        crate::sink::attempts::with_row(e, None, &a.job.tenant, numbering, |row| {
            sink.attempt(row)
        })?;
    }
    // Items without a prompt take the unnamed logical requests, in the order they first
    // arrived; what is left of those is the client's own.
    let mut unnamed = unnamed.into_values().collect::<Vec<_>>();
    unnamed.sort_by_key(|(first, _)| *first);
    let mut unnamed = unnamed.into_iter();
    for (i, a) in items.iter().enumerate() {
        if prompted.contains_key(&a.job.id) {
            let s = &seen[i];
            let first_sent_at = s.first_at.map(|first| first.max(a.at));
            if let Some(first) = first_sent_at {
                measure.on_first_dispatch(a.job.id, a.at, first);
            }
            let route = action_route(a.job.route);
            match (open_at, s.answered_at) {
                (Some(at), None) => {
                    crate::sdk_client::open(measure, at.max(a.at), a, s.attempts > 0, route);
                }
                (_, answered_at) => {
                    let unseen = Unseen {
                        attempts: s.attempts,
                        last_status: s.last_status,
                        first_sent_at,
                    };
                    let at = answered_at.unwrap_or(end_ms).max(a.at);
                    end_unseen(measure, a, unseen, (at, answered_at.is_some()), route);
                }
            }
        } else {
            let (first, answered) = unnamed.next().map_or((None, None), |(f, d)| (Some(f), d));
            measure.on_external(first, answered);
        }
    }
    Ok(Apart {
        foreign: unnamed.len() as u64 + foreign_named.len() as u64,
        catalog_reads,
    })
}

/// What the provider saw of a `--client` run besides its workload, counted apart.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct Apart {
    /// Logical requests that were not the workload's (`foreign_requests`).
    pub foreign: u64,
    /// Reads of the model catalog (`catalog_reads`): no logical request, no work.
    pub catalog_reads: u64,
}
