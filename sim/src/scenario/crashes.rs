//! `[[crashes]]`: when the simulated runner process dies, and how long it stays down.
//!
//! A crash happens either at a virtual time (`at = "90s"`) or when a logical action reaches a
//! named point of its life (`point = "after_send_before_response"`), picked by `nth = N` (the
//! Nth action to reach that point, 1-based) or `action = ID` (that action's first time there).
//! The runner restarts `restart_after` later from what its ledger persisted (default 5 s).
//!
//! ```toml
//! [[crashes]]
//! point = "after_commit_before_response"
//! nth = 3
//! restart_after = "5s"
//! ```

use std::fmt;

use serde::{Deserialize, Serialize};

use super::units::DurationMs;

/// A named point in the life of one attempt where the runner can die.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum CrashPoint {
    /// The attempt is in the ledger (state in flight) but never left the process.
    AfterPersistBeforeSend,
    /// The attempt reached the provider; its answer is lost with the process.
    AfterSendBeforeResponse,
    /// The provider committed the side effect; its answer is lost with the process.
    AfterCommitBeforeResponse,
    /// The answer arrived but the process died before recording it in the ledger.
    AfterResponseBeforePersist,
}

impl CrashPoint {
    /// Every point, in the order an attempt passes them.
    pub const ALL: [CrashPoint; 4] = [
        Self::AfterPersistBeforeSend,
        Self::AfterSendBeforeResponse,
        Self::AfterCommitBeforeResponse,
        Self::AfterResponseBeforePersist,
    ];

    /// The name scenario files use.
    pub fn name(self) -> &'static str {
        match self {
            Self::AfterPersistBeforeSend => "after_persist_before_send",
            Self::AfterSendBeforeResponse => "after_send_before_response",
            Self::AfterCommitBeforeResponse => "after_commit_before_response",
            Self::AfterResponseBeforePersist => "after_response_before_persist",
        }
    }
}

impl fmt::Display for CrashPoint {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// One `[[crashes]]` entry as written.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct CrashFile {
    #[serde(default)]
    at: Option<DurationMs>,
    #[serde(default)]
    point: Option<CrashPoint>,
    #[serde(default)]
    nth: Option<u64>,
    #[serde(default)]
    action: Option<u64>,
    #[serde(default = "default_restart_after")]
    restart_after: DurationMs,
}

fn default_restart_after() -> DurationMs {
    DurationMs(5_000)
}

/// What makes a crash happen.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CrashTrigger {
    /// At this virtual time (ms), whatever is going on.
    At(u64),
    /// When the `nth` logical action (1-based, counted at this point) reaches `point`.
    Nth {
        /// The point counted.
        point: CrashPoint,
        /// Which action to reach `point` crashes the runner: the nth distinct one (1-based).
        nth: u64,
    },
    /// When logical action `action` first reaches `point`.
    Action {
        /// The point the action must reach.
        point: CrashPoint,
        /// The logical action's id.
        action: u64,
    },
}

/// One crash of the runner, checked.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CrashSpec {
    /// What makes the runner die.
    pub trigger: CrashTrigger,
    /// How long the runner stays down before it restores from its ledger (ms).
    pub restart_after_ms: u64,
}

impl CrashSpec {
    /// The entry as a scenario file writes it (a `[[crashes]]` table, durations in ms).
    pub fn to_toml(&self) -> String {
        let trigger = match self.trigger {
            CrashTrigger::At(ms) => format!("at = \"{ms}ms\"\n"),
            CrashTrigger::Nth { point, nth } => format!("point = \"{point}\"\nnth = {nth}\n"),
            CrashTrigger::Action { point, action } => {
                format!("point = \"{point}\"\naction = {action}\n")
            }
        };
        format!(
            "[[crashes]]\n{trigger}restart_after = \"{}ms\"\n",
            self.restart_after_ms
        )
    }
}

/// Checks the `[[crashes]]` entries. Errors are `(dotted key, message)`.
pub(crate) fn resolve(raw: Vec<CrashFile>) -> Result<Vec<CrashSpec>, (String, String)> {
    raw.into_iter()
        .enumerate()
        .map(|(i, c)| {
            let at = |k: &str| format!("crashes.{i}.{k}");
            let trigger = match (c.at, c.point, c.nth, c.action) {
                (Some(t), None, None, None) => CrashTrigger::At(t.ms()),
                (Some(_), ..) => {
                    return Err((
                        at("at"),
                        "a crash happens either at a time (`at`) or at a point (`point` with `nth` or `action`), not both".into(),
                    ))
                }
                (None, Some(_), Some(0), _) => {
                    return Err((at("nth"), "nth counts from 1 (the first action to reach the point)".into()))
                }
                (None, Some(point), Some(nth), None) => CrashTrigger::Nth { point, nth },
                (None, Some(point), None, Some(action)) => CrashTrigger::Action { point, action },
                (None, Some(_), Some(_), Some(_)) => {
                    return Err((at("action"), "give either nth or action, not both".into()))
                }
                (None, Some(point), None, None) => CrashTrigger::Nth { point, nth: 1 },
                (None, None, ..) => {
                    return Err((
                        at("point"),
                        format!(
                            "say when the runner crashes: `at = \"90s\"` or `point = ...` (one of {})",
                            CrashPoint::ALL.map(CrashPoint::name).join(", ")
                        ),
                    ))
                }
            };
            Ok(CrashSpec {
                trigger,
                restart_after_ms: c.restart_after.ms(),
            })
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(text: &str) -> Result<Vec<CrashSpec>, (String, String)> {
        #[derive(Deserialize)]
        struct Doc {
            crashes: Vec<CrashFile>,
        }
        let doc: Doc = toml::from_str(text).map_err(|e| (String::new(), e.to_string()))?;
        resolve(doc.crashes)
    }

    #[test]
    fn time_and_point_crashes_parse_with_a_default_restart_delay() {
        let crashes = parse(
            "[[crashes]]\nat = \"90s\"\n[[crashes]]\npoint = \"after_commit_before_response\"\nnth = 3\nrestart_after = \"2s\"\n[[crashes]]\npoint = \"after_persist_before_send\"\naction = 7\n",
        )
        .unwrap();
        assert_eq!(
            crashes,
            vec![
                CrashSpec {
                    trigger: CrashTrigger::At(90_000),
                    restart_after_ms: 5_000
                },
                CrashSpec {
                    trigger: CrashTrigger::Nth {
                        point: CrashPoint::AfterCommitBeforeResponse,
                        nth: 3
                    },
                    restart_after_ms: 2_000
                },
                CrashSpec {
                    trigger: CrashTrigger::Action {
                        point: CrashPoint::AfterPersistBeforeSend,
                        action: 7
                    },
                    restart_after_ms: 5_000
                },
            ]
        );
    }

    #[test]
    fn printed_entries_parse_back_to_the_same_crash() {
        for point in CrashPoint::ALL {
            for spec in [
                CrashSpec {
                    trigger: CrashTrigger::Nth { point, nth: 2 },
                    restart_after_ms: 1_500,
                },
                CrashSpec {
                    trigger: CrashTrigger::Action { point, action: 11 },
                    restart_after_ms: 0,
                },
                CrashSpec {
                    trigger: CrashTrigger::At(12_345),
                    restart_after_ms: 10,
                },
            ] {
                assert_eq!(parse(&spec.to_toml()).unwrap(), vec![spec]);
            }
        }
    }

    #[test]
    fn a_crash_without_a_when_names_the_key_and_the_points() {
        let (key, message) = parse("[[crashes]]\nrestart_after = \"1s\"\n").unwrap_err();
        assert_eq!(key, "crashes.0.point");
        assert!(
            message.contains("after_response_before_persist"),
            "{message}"
        );
        let (key, _) =
            parse("[[crashes]]\nat = \"1s\"\npoint = \"after_persist_before_send\"\n").unwrap_err();
        assert_eq!(key, "crashes.0.at");
        let (key, _) =
            parse("[[crashes]]\npoint = \"after_persist_before_send\"\nnth = 0\n").unwrap_err();
        assert_eq!(key, "crashes.0.nth");
    }

    #[test]
    fn an_unknown_point_is_refused() {
        let (_, message) = parse("[[crashes]]\npoint = \"mid_air\"\n").unwrap_err();
        assert!(message.contains("after_persist_before_send"), "{message}");
    }
}
