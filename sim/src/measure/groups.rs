//! Outcomes by group: each logical request counted under its class, its tenant, its route
//! and its priority (`summary.json`'s `by_class`, `by_tenant`, `by_route`, `by_priority`),
//! with its attempts and tokens used from the provider's journal, the tokens the client
//! reserved for it, and its latency and queue wait, like Gatling's OK/KO table.

use std::collections::BTreeMap;

use stampede_core::{Route, TerminalStatus};
use stampede_provider::model::RequestRoute;
use stampede_reports::GroupOutcomes;

use super::percentiles::Distribution;

/// Who a logical request belongs to: the harness's own record of what it submitted, never
/// the client's claims. Empty strings leave a request out of that grouping.
#[derive(Debug, Clone, Copy, Default)]
pub struct Group<'a> {
    /// The tenant the harness submitted it for (`""`: left out of `by_tenant`).
    pub tenant: &'a str,
    /// Its class, as the workload named it (`""`: left out of `by_class`).
    pub class: &'a str,
    /// `METHOD /path/template`, see [`action_route`].
    pub route: &'a str,
}

/// The route of an action of our core, as `by_route` names it.
pub fn action_route(route: Route) -> &'static str {
    match route {
        Route::ChatCompletion => "POST /v1/chat/completions",
        Route::CreateRecord => "POST /v1/records",
        Route::GetItem => "GET /v1/items/{id}",
    }
}

/// The route of a provider request, as `by_route` names it (method and path template,
/// the journal's route).
pub fn request_route(route: &RequestRoute) -> &'static str {
    match route {
        RequestRoute::ChatCompletions => "POST /v1/chat/completions",
        RequestRoute::Messages => "POST /v1/messages",
        RequestRoute::Responses => "POST /v1/responses",
        RequestRoute::CountTokens => "POST /v1/messages/count_tokens",
        RequestRoute::Embeddings => "POST /v1/embeddings",
        RequestRoute::CreateRecord => "POST /v1/records",
        RequestRoute::GetRecord { .. } => "GET /v1/records/{id}",
        RequestRoute::FindRecords { .. } => match route.template() {
            "/v1/records?external_ref" => "GET /v1/records?external_ref",
            _ => "GET /v1/records?idempotency_key",
        },
        RequestRoute::GetItem { .. } => "GET /v1/items/{id}",
    }
}

/// One group's figures while the run plays.
#[derive(Debug, Default)]
struct Tally {
    outcomes: GroupOutcomes,
    latency: Distribution,
    queue_wait: Distribution,
}

impl Tally {
    /// The group's outcomes, its goodput over the run's service window of `window_ms`.
    fn finish(self, window_ms: u64) -> GroupOutcomes {
        let goodput = if window_ms == 0 {
            0.0
        } else {
            self.outcomes.completed as f64 * 60_000.0 / window_ms as f64
        };
        GroupOutcomes {
            latency_ms: self.latency.percentiles(),
            queue_wait_ms: self.queue_wait.percentiles(),
            goodput_per_min: super::round4(goodput),
            ..self.outcomes
        }
    }
}

/// What one logical request's end adds to its groups.
#[derive(Debug, Clone, Copy)]
pub(crate) enum GroupEnd {
    /// A terminal outcome, its latency as the summary counts it (ms), and its queue wait
    /// (ms) if it was sent.
    Terminal {
        status: TerminalStatus,
        latency_ms: Option<u64>,
        queue_wait_ms: Option<u64>,
    },
    /// Open at the duration cap, with the latency it counts with (ms).
    Unfinished { latency_ms: u64 },
}

/// Every group's tally. A handful of classes, tenants and routes per grouping: each kept in
/// the order first seen and found by one scan that compares lengths before bytes (cheaper
/// than a sorted map's two searches per lookup), sorted by name once at the end.
#[derive(Debug, Default)]
pub(crate) struct Groups {
    by_class: Vec<(Box<str>, Tally)>,
    by_tenant: Vec<(Box<str>, Tally)>,
    by_route: Vec<(Box<str>, Tally)>,
    by_priority: Vec<(Box<str>, Tally)>,
    /// The latencies and queue waits of the first [`CELLS`] combinations of groups seen.
    cells: Vec<Cell>,
    /// Attempts of one combination of groups (a key and a route) not yet added to its four
    /// tallies: `(attempts, tokens used, idempotent replays)`. Consecutive attempts are
    /// mostly of one combination, so its tallies are written once a run of them ends (or
    /// at [`Groups::finish`]), not four times an attempt; nothing reads these counts before
    /// the end.
    attempts_pending: Option<((GroupKey, u32), AttemptCounts)>,
}

/// Attempts counted together: `(attempts, tokens used, idempotent replays)`.
pub(crate) type AttemptCounts = (u64, u64, u64);

/// Combinations of groups whose requests' latencies are recorded once, in a [`Cell`]. Most
/// runs' requests fall in a handful (one class, tenant, route and priority: one cell); a
/// run of many tenants records the requests of combinations past these straight into their
/// groups, so it keeps no histogram per combination (each is tens of KB).
const CELLS: usize = 16;

/// The latencies (ms) and queue waits (ms) of the requests of one combination of groups
/// (a key and a route): recorded here once instead of into each of its four groups, a
/// quarter of the histogram records, and added into each of the four at the end, which
/// gives every group the counts recording there would have.
#[derive(Debug)]
struct Cell {
    key: GroupKey,
    route: u32,
    latency: Distribution,
    queue_wait: Distribution,
}

/// Where a logical request's figures go: its tallies by class, tenant and priority, by
/// position, so an attempt's figures are added without comparing names. A driver makes it
/// once per request ([`super::Measurement::group_key`]) and hands it back with each
/// attempt ([`super::SentBy::group`]).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct GroupKey {
    class: u32,
    tenant: u32,
    priority: u32,
}

impl GroupKey {
    /// The tenant's position in the tenant grouping (one per tenant name).
    pub(crate) fn tenant(self) -> u32 {
        self.tenant
    }
}

/// The position of a name left out of its grouping (an empty name): no tally is there.
const LEFT_OUT: u32 = u32::MAX;

/// The position of `name`'s tally in `named`, made on first sight; [`LEFT_OUT`] for `""`.
fn position(named: &mut Vec<(Box<str>, Tally)>, name: &str) -> u32 {
    if name.is_empty() {
        return LEFT_OUT;
    }
    let i = match named.iter().position(|(n, _)| **n == *name) {
        Some(i) => i,
        None => {
            named.push((name.into(), Tally::default()));
            named.len() - 1
        }
    };
    u32::try_from(i).expect("fewer than 2^32 names in a grouping")
}

/// Records a request's latency and queue wait (ms), those it has.
fn record(
    latency: &mut Distribution,
    queue_wait: &mut Distribution,
    latency_ms: Option<u64>,
    queue_wait_ms: Option<u64>,
) {
    if let Some(ms) = latency_ms {
        latency.record(ms);
    }
    if let Some(ms) = queue_wait_ms {
        queue_wait.record(ms);
    }
}

/// `n` attempts that used `tokens_used` in all, `replays` of them idempotent replays.
fn count_attempts(t: &mut Tally, n: u64, tokens_used: u64, replays: u64) {
    t.outcomes.attempts += n;
    t.outcomes.tokens_used += tokens_used;
    t.outcomes.duplicates_suppressed += replays;
}

impl Groups {
    /// The key of a request of class `class`, tenant `tenant` and priority `priority`
    /// (empty names are left out of their grouping); the names' tallies are made here.
    pub(crate) fn key(&mut self, class: &str, tenant: &str, priority: &str) -> GroupKey {
        GroupKey {
            class: position(&mut self.by_class, class),
            tenant: position(&mut self.by_tenant, tenant),
            priority: position(&mut self.by_priority, priority),
        }
    }

    /// The position of route `route`'s tally (`METHOD /template`; `""` is left out).
    pub(crate) fn route(&mut self, route: &str) -> u32 {
        position(&mut self.by_route, route)
    }

    /// The tallies `key` and `route` point at (a grouping left out has none).
    fn each_at(&mut self, key: GroupKey, route: u32, mut f: impl FnMut(&mut Tally)) {
        for (named, at) in [
            (&mut self.by_class, key.class),
            (&mut self.by_tenant, key.tenant),
            (&mut self.by_route, route),
            (&mut self.by_priority, key.priority),
        ] {
            if let Some((_, tally)) = named.get_mut(at as usize) {
                f(tally);
            }
        }
    }

    /// An attempt reached the provider for a request of groups `key` on the route at
    /// position `route` (the journal's, `METHOD /template`): it used `tokens_used` and was
    /// an idempotent replay or not.
    #[inline]
    pub(crate) fn attempt_at(&mut self, at: (GroupKey, u32), tokens_used: u64, replayed: bool) {
        self.attempts_at(at, (1, tokens_used, u64::from(replayed)));
    }

    /// [`Groups::attempt_at`] for `(attempts, tokens used, idempotent replays)` at once.
    #[inline]
    pub(crate) fn attempts_at(&mut self, at: (GroupKey, u32), counts: AttemptCounts) {
        match &mut self.attempts_pending {
            Some((pending, (n, tokens, replays))) if *pending == at => {
                *n += counts.0;
                *tokens += counts.1;
                *replays += counts.2;
            }
            _ => self.attempts_at_other(at, counts),
        }
    }

    /// [`Groups::attempts_at`] of another combination than the pending one's: the pending
    /// attempts are added to their tallies, and these are pending.
    #[cold]
    #[inline(never)]
    fn attempts_at_other(&mut self, at: (GroupKey, u32), counts: AttemptCounts) {
        self.add_pending_attempts();
        self.attempts_pending = Some((at, counts));
    }

    /// Adds the pending attempts to their tallies.
    fn add_pending_attempts(&mut self) {
        if let Some(((key, route), (n, tokens_used, replays))) = self.attempts_pending.take() {
            self.each_at(key, route, |t| count_attempts(t, n, tokens_used, replays));
        }
    }

    /// The client reserved `tokens` for an attempt of a request of groups `key` on the route
    /// at position `route`.
    pub(crate) fn reserved_at(&mut self, (key, route): (GroupKey, u32), tokens: u64) {
        self.each_at(key, route, |t| t.outcomes.tokens_reserved += tokens);
    }

    /// A logical request of `group` and `priority` ended (or was left open at the cap).
    pub(crate) fn end(&mut self, group: Group<'_>, priority: &str, end: GroupEnd) {
        let at = self.at(group, priority);
        self.end_at(at, end);
    }

    /// Where the tallies of `group` and `priority` are: the key and the route's position
    /// (the names' tallies are made here).
    pub(crate) fn at(&mut self, group: Group<'_>, priority: &str) -> (GroupKey, u32) {
        let key = self.key(group.class, group.tenant, priority);
        (key, self.route(group.route))
    }

    /// A logical request ended whose groups are `key` and the route at position `route`.
    pub(crate) fn end_at(&mut self, (key, route): (GroupKey, u32), end: GroupEnd) {
        let (latency_ms, queue_wait_ms) = match end {
            GroupEnd::Terminal {
                latency_ms,
                queue_wait_ms,
                ..
            } => (latency_ms, queue_wait_ms),
            GroupEnd::Unfinished { latency_ms } => (Some(latency_ms), None),
        };
        let cell = self.cell(key, route);
        let direct = cell.is_none();
        if let Some(cell) = cell {
            record(
                &mut cell.latency,
                &mut cell.queue_wait,
                latency_ms,
                queue_wait_ms,
            );
        }
        self.each_at(key, route, |t| {
            let o = &mut t.outcomes;
            o.logical_requests += 1;
            match end {
                GroupEnd::Terminal { status, .. } => match status {
                    TerminalStatus::Completed => o.completed += 1,
                    TerminalStatus::Failed => o.failed += 1,
                    TerminalStatus::Cancelled => o.cancelled += 1,
                    TerminalStatus::Escalated | TerminalStatus::ReconciliationRequired => {
                        o.escalations += 1
                    }
                },
                GroupEnd::Unfinished { .. } => o.unfinished += 1,
            }
            if direct {
                record(&mut t.latency, &mut t.queue_wait, latency_ms, queue_wait_ms);
            }
        });
    }

    /// The cell of the combination `key` and `route`, made on first sight while there are
    /// fewer than [`CELLS`]; `None` past them (its requests are recorded in their groups).
    fn cell(&mut self, key: GroupKey, route: u32) -> Option<&mut Cell> {
        let at = match self
            .cells
            .iter()
            .position(|c| c.key == key && c.route == route)
        {
            Some(at) => at,
            None if self.cells.len() < CELLS => {
                self.cells.push(Cell {
                    key,
                    route,
                    latency: Distribution::default(),
                    queue_wait: Distribution::default(),
                });
                self.cells.len() - 1
            }
            None => return None,
        };
        self.cells.get_mut(at)
    }

    /// The four maps for the summary: (by class, by tenant, by route, by priority), goodput
    /// over the run's service window of `window_ms`.
    pub(crate) fn finish(mut self, window_ms: u64) -> [BTreeMap<String, GroupOutcomes>; 4] {
        self.add_pending_attempts();
        for cell in std::mem::take(&mut self.cells) {
            self.each_at(cell.key, cell.route, |t| {
                t.latency.add(&cell.latency);
                t.queue_wait.add(&cell.queue_wait);
            });
        }
        let done = |named: Vec<(Box<str>, Tally)>| {
            named
                .into_iter()
                .map(|(k, t)| (k.into(), t.finish(window_ms)))
                .collect()
        };
        [
            done(self.by_class),
            done(self.by_tenant),
            done(self.by_route),
            done(self.by_priority),
        ]
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_request_counts_once_under_each_of_its_names() {
        let mut groups = Groups::default();
        let llm = Group {
            tenant: "acme",
            class: "llm",
            route: "POST /v1/chat/completions",
        };
        let at = (groups.key("llm", "acme", "bulk"), groups.route(llm.route));
        assert_eq!(
            at.0,
            groups.key("llm", "acme", "bulk"),
            "a name is kept once"
        );
        groups.attempt_at(at, 30, false);
        groups.attempt_at(at, 0, true);
        groups.reserved_at(at, 50);
        groups.end(
            llm,
            "bulk",
            GroupEnd::Terminal {
                status: TerminalStatus::Completed,
                latency_ms: Some(800),
                queue_wait_ms: Some(100),
            },
        );
        groups.end(
            Group {
                class: "tool",
                route: "POST /v1/records",
                ..llm
            },
            "",
            GroupEnd::Unfinished { latency_ms: 60_000 },
        );
        let [class, tenant, route, priority] = groups.finish(30_000);
        assert_eq!(priority.len(), 1, "no priority, no group");
        let bulk = &priority["bulk"];
        assert_eq!((bulk.completed, bulk.attempts), (1, 2));
        assert_eq!((bulk.tokens_reserved, bulk.tokens_used), (50, 30));
        assert_eq!(bulk.duplicates_suppressed, 1);
        assert_eq!(bulk.goodput_per_min, 2.0, "one completion in half a minute");
        assert_eq!(class["llm"].completed, 1);
        assert_eq!(class["llm"].attempts, 2);
        assert_eq!(class["llm"].latency_ms.p50, 800);
        assert_eq!(class["llm"].queue_wait_ms.p50, 100);
        assert_eq!(class["tool"].unfinished, 1);
        assert_eq!(tenant["acme"].logical_requests, 2);
        assert_eq!(
            (tenant["acme"].completed, tenant["acme"].unfinished),
            (1, 1)
        );
        assert_eq!(route["POST /v1/records"].logical_requests, 1);
        assert_eq!(route.len(), 2);
    }

    /// A group's latency and queue-wait percentiles are those of its own requests' values,
    /// whether they went through a cell (the first `CELLS` combinations) or straight into
    /// the group (past them): 40 tenants, 2 classes and 3 priorities make 240 combinations.
    #[test]
    fn percentiles_are_the_groups_own_with_cells_and_past_them() {
        use std::collections::HashMap;

        let mut groups = Groups::default();
        let mut expected: HashMap<String, (Distribution, Distribution)> = HashMap::new();
        let route = "POST /v1/chat/completions";
        let mut value = 7u64;
        for n in 0..4_800u64 {
            let tenant = format!("t{}", n % 40);
            let class = ["llm", "tool"][(n / 40 % 2) as usize];
            let priority = ["critical", "normal", "bulk"][(n / 80 % 3) as usize];
            // A spread of values, some far apart (a Weyl sequence over 0..600,000 ms).
            value = (value + 262_139) % 600_000;
            let (latency, queue_wait) = (value, value / 3);
            let end = if n % 11 == 0 {
                GroupEnd::Unfinished {
                    latency_ms: latency,
                }
            } else {
                GroupEnd::Terminal {
                    status: TerminalStatus::Completed,
                    latency_ms: Some(latency),
                    queue_wait_ms: (n % 7 != 0).then_some(queue_wait),
                }
            };
            let at = groups.at(
                Group {
                    tenant: &tenant,
                    class,
                    route,
                },
                priority,
            );
            groups.end_at(at, end);
            for name in [
                format!("class {class}"),
                format!("tenant {tenant}"),
                format!("route {route}"),
                format!("priority {priority}"),
            ] {
                let (l, q) = expected.entry(name).or_default();
                match end {
                    GroupEnd::Unfinished { latency_ms } => l.record(latency_ms),
                    GroupEnd::Terminal {
                        latency_ms,
                        queue_wait_ms,
                        ..
                    } => record(l, q, latency_ms, queue_wait_ms),
                }
            }
        }
        assert_eq!(
            groups.cells.len(),
            CELLS,
            "combinations past the cells went direct"
        );
        let [class, tenant, route, priority] = groups.finish(60_000);
        let mut checked = 0;
        for (kind, map) in [
            ("class", class),
            ("tenant", tenant),
            ("route", route),
            ("priority", priority),
        ] {
            for (name, outcomes) in map {
                let (l, q) = &expected[&format!("{kind} {name}")];
                assert_eq!(outcomes.latency_ms, l.percentiles(), "{kind} {name}");
                assert_eq!(outcomes.queue_wait_ms, q.percentiles(), "{kind} {name}");
                checked += 1;
            }
        }
        assert_eq!(checked, 2 + 40 + 1 + 3);
    }
}
