//! The lives of a live run on a ledger: how many of the runner's processes died before
//! their run ended, and when it was down, kept in the ledger's run facts so a resumed
//! run's summary (`crashes`) and page (the shaded spans) cover every life, as its journal
//! does. A process that was SIGKILLed, crashed or stopped on an error leaves its life
//! `running` in the ledger; one whose run returns (it ended, or a signal stopped it in
//! order) writes `ended` as its last act on the ledger, before its report is written. A
//! life that failed before it sent anything (its provider unreachable) counts as a crash
//! too: the ledger cannot tell it from one killed at that point.

use stampede_core::Millis;

/// The fact saying whether the latest life is `running` or `ended`.
pub(super) const LIFE: &str = "life";
/// The fact counting the lives that died before their run ended.
pub(super) const CRASHES: &str = "crashes";
/// The fact listing when the runner was down, as `from-to` spans in scenario ms.
pub(super) const DOWNS: &str = "downs";
/// Every fact of the lives, as [`Lives::facts`] writes them.
pub(super) const FACTS: [&str; 3] = [LIFE, CRASHES, DOWNS];

/// What the ledger says of the lives before this one.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(super) struct Lives {
    /// Lives that died before their run ended.
    pub crashes: u64,
    /// When the runner was down (scenario ms, from the dead life's last ledger write to
    /// the restart), in order.
    pub downs: Vec<(Millis, Millis)>,
}

impl Lives {
    /// The lives `stored` (a ledger's run facts) records, with the one that wrote them
    /// last counted as dead unless it recorded its end: `reached` is its last ledger write
    /// and `at` the time this life resumes at (scenario ms). A ledger from before lives
    /// were recorded says nothing of its last life: it counts as dead when it left work
    /// unfinished (`unfinished`), as a life that ended would not have.
    pub(super) fn after_restart(
        stored: &[(String, String)],
        (reached, at): (Millis, Millis),
        unfinished: bool,
    ) -> Self {
        let fact = |name: &str| {
            stored
                .iter()
                .find(|(fact, _)| fact == name)
                .map(|(_, value)| value.as_str())
        };
        let mut lives = Lives {
            crashes: fact(CRASHES).and_then(|n| n.parse().ok()).unwrap_or(0),
            downs: fact(DOWNS).map(parse_downs).unwrap_or_default(),
        };
        let died = match fact(LIFE) {
            Some(life) => life != "ended",
            None => unfinished,
        };
        if died {
            lives.crashes = lives.crashes.saturating_add(1);
            lives.downs.push((reached.min(at), at));
        }
        lives
    }

    /// The facts to record for these lives, with this one `running`.
    pub(super) fn facts(&self) -> [(&'static str, String); 3] {
        let downs: Vec<String> = self
            .downs
            .iter()
            .map(|(from, to)| format!("{from}-{to}"))
            .collect();
        [
            (LIFE, "running".to_string()),
            (CRASHES, self.crashes.to_string()),
            (DOWNS, downs.join(",")),
        ]
    }
}

/// `from-to` spans separated by commas; a span that does not parse is left out (the
/// facts are this module's own writing, so only an edited ledger holds one).
fn parse_downs(text: &str) -> Vec<(Millis, Millis)> {
    text.split(',')
        .filter_map(|span| {
            let (from, to) = span.split_once('-')?;
            Some((from.parse().ok()?, to.parse().ok()?))
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn stored(facts: &[(&str, &str)]) -> Vec<(String, String)> {
        facts
            .iter()
            .map(|(f, v)| (f.to_string(), v.to_string()))
            .collect()
    }

    #[test]
    fn a_life_left_running_died_and_one_that_ended_did_not() {
        let first = Lives::after_restart(&stored(&[(LIFE, "running")]), (1_200, 1_900), false);
        assert_eq!(first.crashes, 1);
        assert_eq!(first.downs, vec![(1_200, 1_900)]);
        // Its facts, read back by the next restart, keep the count and the spans.
        let facts: Vec<(String, String)> = first
            .facts()
            .iter()
            .map(|(f, v)| (f.to_string(), v.clone()))
            .collect();
        let second = Lives::after_restart(&facts, (4_000, 4_500), true);
        assert_eq!(second.crashes, 2);
        assert_eq!(second.downs, vec![(1_200, 1_900), (4_000, 4_500)]);
        let mut ended = facts.clone();
        ended[0].1 = "ended".to_string();
        let after_an_end = Lives::after_restart(&ended, (9_000, 9_100), true);
        assert_eq!(after_an_end, first, "an ended life is no crash");
    }

    #[test]
    fn a_ledger_that_recorded_no_lives_died_if_it_left_work_open() {
        assert_eq!(Lives::after_restart(&[], (10, 20), true).crashes, 1);
        assert_eq!(Lives::after_restart(&[], (10, 20), false), Lives::default());
    }

    #[test]
    fn an_edited_span_is_left_out() {
        let facts = stored(&[(LIFE, "ended"), (CRASHES, "3"), (DOWNS, "5-9,x-2,20-30")]);
        let lives = Lives::after_restart(&facts, (0, 0), true);
        assert_eq!(lives.crashes, 3);
        assert_eq!(lives.downs, vec![(5, 9), (20, 30)]);
    }
}
