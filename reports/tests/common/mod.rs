//! Synthetic run reports for the renderer tests: a run with a 429 burst followed by
//! synchronized retry waves and a 503 window, two tenants, and a set of expectations.
#![allow(dead_code)]

use std::collections::BTreeMap;

use stampede_reports::{
    Expectation, Percentiles, RunReport, Summary, SweepRow, TenantRow, TimeseriesRow,
};

/// A tiny deterministic generator (64-bit LCG) so the synthetic data needs no RNG crate.
pub struct Lcg(u64);

impl Lcg {
    pub fn new(seed: u64) -> Self {
        Lcg(seed
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407))
    }
    /// Uniform in [0, n).
    pub fn below(&mut self, n: u64) -> u64 {
        self.0 = self
            .0
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        (self.0 >> 33) % n.max(1)
    }
}

pub fn expectation(name: &str, limit: &str, actual: f64, pass: bool) -> Expectation {
    Expectation {
        name: name.to_string(),
        limit: limit.to_string(),
        actual,
        pass,
    }
}

/// A 300 s run in 1 s buckets. Retry waves every 8 s after a 429 burst at 60 s; 503s from
/// 120 s to 180 s.
pub fn synthetic_report(seed: u64) -> RunReport {
    synthetic_report_of(seed, 300)
}

/// The same shape over `buckets` one-second buckets (for size and speed checks).
pub fn synthetic_report_of(seed: u64, buckets: u64) -> RunReport {
    let mut rng = Lcg::new(seed);
    let mut timeseries = Vec::new();
    let mut tenants = Vec::new();
    let (mut attempts_total, mut retries_total, mut n429, mut n503) = (0, 0, 0, 0);
    for i in 0..buckets {
        let t_ms = i * 1000;
        let base = 10 + rng.below(4);
        let status_429 = if (60..66).contains(&i) {
            8 + rng.below(4)
        } else {
            0
        };
        let wave = if i > 66 && (i - 66) % 8 == 0 && i < 140 {
            40 - (i - 66) / 4
        } else {
            0
        };
        let status_503 = if (120..180).contains(&i) { base / 3 } else { 0 };
        let retries = wave + status_503;
        let attempts = base + retries + status_429;
        attempts_total += attempts;
        retries_total += retries;
        n429 += status_429;
        n503 += status_503;
        let completed = attempts - status_429 - status_503;
        timeseries.push(TimeseriesRow {
            t_ms,
            attempts,
            retries,
            status_2xx: completed,
            status_429,
            status_503,
            queue_depth: 20 + wave * 2 + rng.below(5),
            in_flight: 8 + rng.below(3),
            tokens_reserved: 12_000 + rng.below(2_000),
            tokens_used: completed * 700,
            completed,
            latency_p50_ms: 2_800 + rng.below(200),
            latency_p99_ms: 9_000 + rng.below(1_000),
            service_p50_ms: 2_500 + rng.below(300),
            service_p99_ms: 8_000 + rng.below(1_000),
            queue_wait_p50_ms: 100 * i,
            queue_wait_p99_ms: 120 * i,
            // 3,000 requests arrive at once and drain at 10 a second.
            backlog: 3_000u64.saturating_sub(10 * i),
            ..Default::default()
        });
        for (k, tenant) in ["acme", "globex"].iter().enumerate() {
            tenants.push(TenantRow {
                t_ms,
                tenant: tenant.to_string(),
                completed: completed / 2 + (k as u64) * (i % 2),
                attempts: attempts / 2,
            });
        }
    }
    let mut status_counts = BTreeMap::new();
    status_counts.insert("200".to_string(), attempts_total - n429 - n503);
    status_counts.insert("429".to_string(), n429);
    status_counts.insert("503".to_string(), n503);
    let summary = Summary {
        scenario: "synthetic-waves".to_string(),
        seed,
        mode: "virtual".to_string(),
        preset: "naive".to_string(),
        logical_requests: 3_000,
        completed: 2_950,
        failed: 50,
        outbound_attempts: attempts_total,
        attempts_per_logical: attempts_total as f64 / 3_000.0,
        status_counts,
        retries: retries_total,
        retry_waves: 9,
        peak_retries_per_100ms: 40,
        deadline_misses: 3,
        virtual_duration_ms: 300_000,
        wall_ms: 1234,
        latency_ms: Percentiles {
            p50: 2_900,
            p95: 8_000,
            p99: 9_800,
            max: 14_000,
        },
        queue_wait_ms: Percentiles {
            p50: 100,
            p95: 900,
            p99: 2_000,
            max: 4_000,
        },
        tokens_reserved: 3_600_000,
        tokens_used: 2_065_000,
        goodput_per_min: 590.0,
        expectations: vec![
            expectation("duplicates", "<= 0", 0.0, true),
            expectation(
                "attempts_per_logical",
                "<= 1.2",
                attempts_total as f64 / 3_000.0,
                false,
            ),
            expectation("deadline_misses", "<= 0", 3.0, false),
            // Text that must be escaped everywhere it appears.
            expectation("latency_ms.p99", "<= 10000 & \"soon\" <ok>", 9_800.0, true),
        ],
        ..Default::default()
    };
    RunReport {
        summary,
        timeseries,
        tenants,
        title: Some("Synthetic <waves> & friends".to_string()),
        description: Some("A fixed-sleep client after a 429 burst.".to_string()),
        preset_text: Some("naive: fixed 1 s sleep, 5 attempts".to_string()),
        bucket_ms: Some(1000),
        left_out: Vec::new(),
        fault_windows: Vec::new(),
        baseline: None,
        case_files: Vec::new(),
        retries_per_100ms: None,
    }
}

/// A summary of one sweep run: attempts fall and misses rise as `max_attempts` shrinks.
pub fn sweep_summary(max_attempts: u64, rpm: u64, seed: u64) -> Summary {
    let outbound = 1_000 + max_attempts * 300 - rpm / 10 + seed * 7;
    let misses = if max_attempts < 3 { 5 + seed } else { 0 };
    let pass_attempts = (outbound as f64 / 1_000.0) <= 2.0;
    Summary {
        scenario: "grid".to_string(),
        seed,
        mode: "virtual".to_string(),
        preset: "stampede".to_string(),
        logical_requests: 1_000,
        completed: 1_000 - misses,
        outbound_attempts: outbound,
        attempts_per_logical: outbound as f64 / 1_000.0,
        deadline_misses: misses,
        goodput_per_min: (1_000 - misses) as f64 / 5.0,
        expectations: vec![
            expectation("deadline_misses", "<= 0", misses as f64, misses == 0),
            expectation(
                "attempts_per_logical",
                "<= 2",
                outbound as f64 / 1_000.0,
                pass_attempts,
            ),
        ],
        ..Default::default()
    }
}

/// A grid: max_attempts in {1,2,3,4,6} x rpm in {600,1200}, 3 seeds each.
pub fn sweep_grid() -> Vec<SweepRow> {
    let mut rows = Vec::new();
    for max_attempts in [1u64, 2, 3, 4, 6] {
        for rpm in [600u64, 1200] {
            for seed in 1..=3 {
                let mut config = BTreeMap::new();
                config.insert("client.max_attempts".to_string(), max_attempts.to_string());
                config.insert("provider.scopes.0.rpm".to_string(), rpm.to_string());
                rows.push(SweepRow {
                    config,
                    seed,
                    summary: sweep_summary(max_attempts, rpm, seed),
                });
            }
        }
    }
    rows
}

/// Helpers to read the SVG and page outputs as XML trees.
pub mod xml {
    use roxmltree::{Document, Node};

    /// Parses `text` as XML, with the file name in the panic message.
    pub fn parse<'a>(file: &str, text: &'a str) -> Document<'a> {
        let opts = roxmltree::ParsingOptions {
            allow_dtd: true,
            ..Default::default()
        };
        Document::parse_with_options(text, opts)
            .unwrap_or_else(|e| panic!("{file} is not well-formed XML: {e}"))
    }

    /// The text of every `<text>` element (legend labels, axis descriptions, ticks).
    pub fn texts(doc: &Document) -> Vec<String> {
        doc.descendants()
            .filter(|n| n.has_tag_name("text"))
            .map(|n| {
                n.descendants()
                    .filter(|d| d.is_text())
                    .filter_map(|d| d.text())
                    .collect::<String>()
                    .trim()
                    .to_string()
            })
            .collect()
    }

    /// Elements carrying `class` among their classes.
    pub fn with_class<'a, 'i>(doc: &'a Document<'i>, class: &str) -> Vec<Node<'a, 'i>> {
        doc.descendants()
            .filter(|n| {
                n.attribute("class")
                    .is_some_and(|c| c.split_whitespace().any(|c| c == class))
            })
            .collect()
    }

    /// The (x, y) points of a `<polyline>`.
    pub fn points(node: &Node) -> Vec<(f64, f64)> {
        node.attribute("points")
            .unwrap_or("")
            .split_whitespace()
            .filter_map(|p| {
                let (x, y) = p.split_once(',')?;
                Some((x.parse().ok()?, y.parse().ok()?))
            })
            .collect()
    }

    /// Concatenated text below `node`.
    pub fn text_of(node: &Node) -> String {
        node.descendants()
            .filter(|d| d.is_text())
            .filter_map(|d| d.text())
            .collect()
    }
}
