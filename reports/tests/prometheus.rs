//! `metrics.prom`: seed 003's metric names and labels, from a summary with every figure the
//! metrics read, in a well-formed exposition text.

use std::collections::{BTreeMap, BTreeSet};

use stampede_reports::prometheus::{parse, render, METRICS};
use stampede_reports::{
    GroupOutcomes, ModelFigures, Percentiles, ProviderFigures, QueueFigures, Summary,
};

/// Seed 003, section "Observabilidad: las métricas que realmente ayudan" ("Registra al
/// menos:"), copied here because the seed documents are not shipped with the repository:
/// every name with its label set.
pub const SEED_003_METRICS: [(&str, &[&str]); 9] = [
    ("llm_requests_total", &["provider", "model", "status"]),
    ("llm_tokens_reserved_total", &["provider", "model"]),
    ("llm_tokens_used_total", &["provider", "model"]),
    ("llm_retries_total", &["provider", "model", "error_type"]),
    ("llm_queue_depth", &["priority", "task_type"]),
    ("llm_queue_wait_seconds", &["priority", "task_type"]),
    (
        "llm_rate_limit_hits_total",
        &["provider", "model", "limit_type"],
    ),
    (
        "llm_fallbacks_total",
        &["from_provider", "to_provider", "reason"],
    ),
    ("llm_duplicate_suppressed_total", &["task_type"]),
];

/// A run with several providers, one model, queues, retries, limits and fallbacks.
fn full() -> Summary {
    let mut s = Summary {
        outbound_attempts: 10,
        tokens_reserved: 900,
        tokens_used: 400,
        duplicates_suppressed: 2,
        ..Summary::default()
    };
    for (name, ok, limited) in [("openai", 5u64, 1u64), ("anthropic", 3, 1)] {
        let mut f = ProviderFigures {
            outbound_attempts: ok + limited,
            tokens_used: 200,
            ..ProviderFigures::default()
        };
        f.status_counts.insert("200".into(), ok);
        f.status_counts.insert("429".into(), limited);
        f.retries_by_group.insert("never_arrived".into(), limited);
        s.by_provider.insert(name.into(), f);
    }
    s.by_model.insert(
        "gpt-\"5\"".into(),
        ModelFigures {
            outbound_attempts: 10,
            completions: 8,
            tokens_used: 400,
            billed_usd: 0.0,
        },
    );
    s.rate_limit_hits.insert("tpm".into(), 2);
    s.fallbacks.insert("provider_5xx".into(), 1);
    s.fallback_routes
        .push(stampede_reports::FallbackRouteCount {
            from_provider: "openai".into(),
            to_provider: "anthropic".into(),
            reason: "provider_5xx".into(),
            count: 1,
        });
    s.by_class.insert(
        "llm".into(),
        GroupOutcomes {
            duplicates_suppressed: 2,
            ..GroupOutcomes::default()
        },
    );
    s.queues.insert(
        "bulk/llm".into(),
        QueueFigures {
            arrived: 4,
            depth_end: 1,
            depth_peak: 3,
            sent: 3,
            wait_total_ms: 4_500,
            wait_ms: Percentiles {
                p50: 1_000,
                p95: 2_000,
                p99: 2_500,
                max: 2_500,
            },
        },
    );
    s
}

/// Label names of every series of each family (the summary's `quantile` left out).
fn label_sets(text: &str) -> BTreeMap<String, BTreeSet<Vec<String>>> {
    let mut out: BTreeMap<String, BTreeSet<Vec<String>>> = BTreeMap::new();
    for sample in parse(text).unwrap_or_else(|e| panic!("{e}\n{text}")) {
        let names = sample
            .labels
            .iter()
            .map(|(n, _)| n.clone())
            .filter(|n| n != "quantile")
            .collect();
        out.entry(sample.family).or_default().insert(names);
    }
    out
}

#[test]
fn every_metric_of_seed_003_is_there_with_its_labels() {
    let text = render(&full());
    let sets = label_sets(&text);
    for (name, labels) in SEED_003_METRICS {
        let want: Vec<String> = labels.iter().map(|l| l.to_string()).collect();
        let got = sets
            .get(name)
            .unwrap_or_else(|| panic!("{name} has no series:\n{text}"));
        assert_eq!(
            got,
            &BTreeSet::from([want]),
            "{name}'s labels are the seed's"
        );
        assert!(
            METRICS.iter().any(|(n, l)| n == &name && l == &labels),
            "{name} is in the documented list with the seed's labels"
        );
    }
}

#[test]
fn the_values_are_the_summarys() {
    let text = render(&full());
    for line in [
        "llm_requests_total{provider=\"openai\",model=\"gpt-\\\"5\\\"\",status=\"429\"} 1",
        "llm_tokens_reserved_total{provider=\"\",model=\"gpt-\\\"5\\\"\"} 900",
        "llm_tokens_used_total{provider=\"anthropic\",model=\"gpt-\\\"5\\\"\"} 200",
        "llm_retries_total{provider=\"anthropic\",model=\"gpt-\\\"5\\\"\",error_type=\"never_arrived\"} 1",
        "llm_queue_depth{priority=\"bulk\",task_type=\"llm\"} 1",
        "llm_queue_depth_peak{priority=\"bulk\",task_type=\"llm\"} 3",
        "llm_queue_wait_seconds{priority=\"bulk\",task_type=\"llm\",quantile=\"0.95\"} 2.000",
        "llm_queue_wait_seconds_sum{priority=\"bulk\",task_type=\"llm\"} 4.500",
        "llm_queue_wait_seconds_count{priority=\"bulk\",task_type=\"llm\"} 3",
        "llm_rate_limit_hits_total{provider=\"\",model=\"gpt-\\\"5\\\"\",limit_type=\"tpm\"} 2",
        "llm_fallbacks_total{from_provider=\"openai\",to_provider=\"anthropic\",reason=\"provider_5xx\"} 1",
        "llm_duplicate_suppressed_total{task_type=\"llm\"} 2",
    ] {
        assert!(text.lines().any(|l| l == line), "no {line}\n{text}");
    }
}

#[test]
fn a_run_with_one_provider_is_labelled_provider() {
    let mut s = Summary {
        tokens_used: 70,
        ..Summary::default()
    };
    s.status_counts.insert("200".into(), 3);
    s.retries_by_group.insert("may_have_executed".into(), 1);
    let text = render(&s);
    parse(&text).unwrap();
    assert!(text.contains("llm_requests_total{provider=\"provider\",model=\"\",status=\"200\"} 3"));
    assert!(text.contains(
        "llm_retries_total{provider=\"provider\",model=\"\",error_type=\"may_have_executed\"} 1"
    ));
    assert!(text.contains("llm_tokens_used_total{provider=\"provider\",model=\"\"} 70"));
}

#[test]
fn the_same_summary_gives_the_same_bytes() {
    let s = full();
    let again: Summary = serde_json::from_str(&serde_json::to_string(&s).unwrap()).unwrap();
    assert_eq!(render(&s), render(&again));
}

#[test]
fn malformed_text_is_refused() {
    for bad in [
        "llm_x_total 1\n", // no TYPE
        "# HELP a_total x\n# TYPE a_total counter\na_total{l=\"v\"} 1\na_total{l=\"v\"} 2\n", // twice
        "# HELP a x\n# TYPE a counter\na 1\n", // counter not *_total
        "# HELP a x\n# TYPE a gauge\na{l=\"v} 1\n", // label not closed
        "# HELP a x\n# TYPE a gauge\na{l=\"\\q\"} 1\n", // bad escape
        "# HELP a x\n# TYPE a gauge\na{l=\"v\"}\n", // no value
        "# HELP a x\n# TYPE a gauge\nb 1\n",   // another family's sample
        "# HELP a x\n# TYPE a summary\na 1\n", // summary without quantile
        "# HELP a x\n# TYPE a gauge\na 1",     // no final line feed
    ] {
        assert!(parse(bad).is_err(), "accepted {bad:?}");
    }
}
