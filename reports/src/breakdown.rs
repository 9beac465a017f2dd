//! The breakdown tables shared by the page and the markdown summary: outcomes by class,
//! tenant, route and priority (Gatling's OK/KO with percentiles), and errors by status and message.
//! Each table is header and rows of plain text cells; the renderers escape and lay them out.

use std::collections::BTreeMap;

use crate::number::fmt_grouped;
use crate::schema::{ErrorCount, GroupOutcomes, Summary};

/// One table: an id for the page (`by-class`), a heading, the header and the rows. The
/// first cell of a row names it.
#[derive(Debug, Clone, PartialEq)]
pub struct Table {
    /// The table's HTML id on the page (`by-class`, `errors`).
    pub id: &'static str,
    /// Heading shown above the table.
    pub heading: &'static str,
    /// Column titles, left to right.
    pub header: Vec<&'static str>,
    /// The rows, each a list of plain-text cells; the first cell names the row.
    pub rows: Vec<Vec<String>>,
    /// Which columns are numbers (right-aligned).
    pub numeric: Vec<bool>,
}

const GROUP_HEADER: [&str; 13] = [
    "name",
    "requests",
    "completed (OK)",
    "failed (KO)",
    "escalated",
    "cancelled",
    "unfinished",
    "attempts",
    "latency p50 (ms)",
    "latency p95 (ms)",
    "latency p99 (ms)",
    "queue wait p50 (ms)",
    "queue wait p99 (ms)",
];

fn count(n: u64) -> String {
    fmt_grouped(n as f64, 0)
}

fn group_row(name: &str, g: &GroupOutcomes) -> Vec<String> {
    vec![
        name.to_string(),
        count(g.logical_requests),
        count(g.completed),
        count(g.failed),
        count(g.escalations),
        count(g.cancelled),
        count(g.unfinished),
        count(g.attempts),
        count(g.latency_ms.p50),
        count(g.latency_ms.p95),
        count(g.latency_ms.p99),
        count(g.queue_wait_ms.p50),
        count(g.queue_wait_ms.p99),
    ]
}

fn group_table(
    id: &'static str,
    heading: &'static str,
    groups: &BTreeMap<String, GroupOutcomes>,
) -> Table {
    Table {
        id,
        heading,
        header: GROUP_HEADER.to_vec(),
        rows: groups.iter().map(|(n, g)| group_row(n, g)).collect(),
        numeric: (0..GROUP_HEADER.len()).map(|i| i > 0).collect(),
    }
}

/// The outcome tables that have rows: by class, by tenant, by route, by priority (a
/// `--client` run has none).
pub fn outcome_tables(s: &Summary) -> Vec<Table> {
    [
        group_table("by-class", "By class", &s.by_class),
        group_table("by-tenant", "By tenant", &s.by_tenant),
        group_table("by-route", "By route", &s.by_route),
        group_table("by-priority", "By priority", &s.by_priority),
    ]
    .into_iter()
    .filter(|t| !t.rows.is_empty())
    .collect()
}

/// A time since the run's start in seconds, to a tenth.
fn seconds(ms: u64) -> String {
    let decimals = if ms % 1000 == 0 { 0 } else { 1 };
    format!("{} s", fmt_grouped(ms as f64 / 1000.0, decimals))
}

fn error_row(e: &ErrorCount) -> Vec<String> {
    vec![
        e.status.clone(),
        if e.message.is_empty() {
            "(no error code)".to_string()
        } else {
            e.message.clone()
        },
        count(e.count),
        seconds(e.first_ms),
        seconds(e.last_ms),
    ]
}

/// Errors by status and message, most frequent first; no rows when every attempt was
/// answered with success.
pub fn error_table(s: &Summary) -> Table {
    Table {
        id: "errors",
        heading: "Errors",
        header: vec!["status", "message", "attempts", "first seen", "last seen"],
        rows: s.errors.iter().map(error_row).collect(),
        numeric: vec![false, false, true, true, true],
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_groupings_with_requests_get_a_table() {
        let mut s = Summary::default();
        assert!(outcome_tables(&s).is_empty());
        s.by_tenant.insert(
            "acme".into(),
            GroupOutcomes {
                logical_requests: 38_000,
                completed: 38_000,
                ..GroupOutcomes::default()
            },
        );
        let tables = outcome_tables(&s);
        assert_eq!(tables.len(), 1);
        assert_eq!(tables[0].id, "by-tenant");
        assert_eq!(tables[0].rows[0][..3], ["acme", "38,000", "38,000"]);
        s.by_priority
            .insert("bulk".into(), GroupOutcomes::default());
        let ids: Vec<&str> = outcome_tables(&s).iter().map(|t| t.id).collect();
        assert_eq!(ids, ["by-tenant", "by-priority"]);
    }
}
