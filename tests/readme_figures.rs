//! Every figure the README quotes comes from a fresh run: each block between
//! `<!-- figures:NAME -->` and `<!-- /figures:NAME -->` is generated here from the runs it
//! describes and must match the README byte for byte. A change that moves a figure fails
//! until the README moves with it:
//!
//! ```sh
//! STAMPEDE_BLESS=1 cargo test --test integration readme_figures    # rewrite the blocks from fresh runs
//! ```

use crate::common;

use common::thousands;

use std::path::Path;

use stampede_reports::Summary;
use stampede_sim::run::{run_virtual, RunOptions};
use stampede_sim::scenario::{self, parse_override};

fn summary(file: &str, sets: &[&str]) -> Summary {
    let path = common::repo().join("scenarios").join(file);
    let sets: Vec<_> = sets
        .iter()
        .map(|s| parse_override(s).expect("override parses"))
        .collect();
    let scenario = scenario::load(&path, None, &sets).expect("shipped scenario loads");
    run_virtual(&scenario, &RunOptions::default())
        .expect("run plays")
        .report
        .summary
}

fn status(s: &Summary, key: &str) -> u64 {
    s.status_counts.get(key).copied().unwrap_or(0)
}

/// The quickstart's console output, as `stampede run` prints it, without the lines that
/// change from run to run (wall time) or machine to machine (the report path).
fn quickstart_tour() -> String {
    let dir = tempfile::tempdir().unwrap();
    let out = common::stampede(&[
        "run",
        &common::quickstart(),
        "--out",
        common::a_str(dir.path()),
    ]);
    assert!(out.status.success(), "{}", common::text(&out.stderr));
    let text = common::text(&out.stdout);
    let mut lines: Vec<String> =
        vec!["$ cargo run --release -- run scenarios/quickstart.toml".into()];
    let mut in_figures = true;
    for line in text.lines() {
        if line.starts_with("expectations:") {
            lines.push("  ...".into());
            in_figures = false;
        }
        if line.starts_with("report:") {
            lines.push("report: runs/quickstart/index.html".into());
            continue;
        }
        // The wall time is this machine's, never the same twice: the `...` stands for it.
        if in_figures && line.contains("wall") {
            continue;
        }
        lines.push(line.to_string());
    }
    format!("```\n{}\n```", lines.join("\n"))
}

fn quickstart_naive() -> String {
    let s = summary("quickstart.toml", &["client.preset=naive"]);
    format!(
        "Run it with `--set client.preset=naive` to see the same 600 calls without those rules: \
         {:.1} attempts per request, {} retries, {} retry waves, {} Retry-After violations \
         (retries sent before the wait the provider gave that same request), and {} of {} \
         calls fail.",
        s.attempts_per_logical,
        thousands(s.retries),
        s.retry_waves,
        thousands(s.retry_after_violations),
        s.failed,
        s.logical_requests
    )
}

/// The backlog's table: `naive` is its summary under the naive preset.
fn backlog_table(naive: &Summary) -> String {
    let stampede = summary("backlog-38k.toml", &[]);
    let exit = |s: &Summary| u8::from(s.expectations.iter().any(|e| !e.pass));
    let row = |label: &str, f: &dyn Fn(&Summary) -> String| {
        format!("| {label} | {} | {} |", f(naive), f(&stampede))
    };
    let rows = [
        "| seed 7 | naive | stampede |".to_string(),
        "| --- | --- | --- |".to_string(),
        row("completed / failed", &|s| {
            format!("{} / {}", thousands(s.completed), thousands(s.failed))
        }),
        row("outbound attempts", &|s| thousands(s.outbound_attempts)),
        row("attempts per logical request", &|s| {
            format!("{:.2}", s.attempts_per_logical)
        }),
        row("429s", &|s| thousands(status(s, "429"))),
        row("retries", &|s| thousands(s.retries)),
        row("retry waves (peak retries per 100 ms)", &|s| {
            format!("{} ({})", s.retry_waves, s.peak_retries_per_100ms)
        }),
        row("Retry-After violations (own wait / scope's wait)", &|s| {
            format!(
                "{} / {}",
                thousands(s.retry_after_violations),
                thousands(s.scope_wait_violations)
            )
        }),
        row("deadline misses (deadline 75 min)", &|s| {
            thousands(s.deadline_misses)
        }),
        row("goodput", &|s| {
            format!("{:.1} completed/min", s.goodput_per_min)
        }),
        row(
            "latency p50 / p99 (a failed call counts at its deadline)",
            &|s| {
                format!(
                    "{:.1} / {:.1} min",
                    s.latency_ms.p50 as f64 / 60_000.0,
                    s.latency_ms.p99 as f64 / 60_000.0
                )
            },
        ),
        row("exit code", &|s| exit(s).to_string()),
    ];
    rows.join("\n")
}

fn restarts_counts() -> String {
    let stampede = summary("restarts.toml", &[]);
    let naive = summary("restarts.toml", &["client.preset=naive"]);
    format!(
        "With the stampede preset it shows {} records created twice and {} blind re-sends \
         ({} LLM calls billed twice: a call that may have executed when the runner died is \
         retried by design); with the naive one, {} records created twice and {} blind \
         re-sends.",
        stampede.duplicate_writes,
        stampede.blind_resends,
        stampede.duplicate_completions,
        naive.duplicate_writes,
        naive.blind_resends
    )
}

fn virtual_table() -> String {
    let mut rows = vec![
        "| scenario | completed | failed | reconciliations | outbound attempts | duplicates |"
            .to_string(),
        "| --- | --- | --- | --- | --- | --- |".to_string(),
    ];
    for name in [
        "quickstart",
        "five-step-safety",
        "rpm-vs-tpm",
        "shared-credential",
        "backlog-38k",
        "uncertain-writes",
    ] {
        let s = summary(&format!("{name}.toml"), &[]);
        rows.push(format!(
            "| {name} | {} | {} | {} | {} | {} |",
            s.completed, s.failed, s.reconciliations, s.outbound_attempts, s.duplicates
        ));
    }
    rows.join("\n")
}

/// `scenarios/amplification.toml` under the stack it ships with and under the core, on one
/// replica and on four, with and without a shared scope record.
/// The issue-16 scenarios under stampede and naive: billing across providers, per-model
/// refusals and the ladder.
fn routing_table() -> String {
    let mut rows = vec![
        "| scenario | client | completed | outbound attempts | fallbacks | degraded | 429 by limit | duplicates (across providers) | billed (of it twice) |"
            .to_string(),
        "| --- | --- | --- | --- | --- | --- | --- | --- | --- |".to_string(),
    ];
    let join = |m: &std::collections::BTreeMap<String, u64>| {
        if m.is_empty() {
            "-".to_string()
        } else {
            m.iter()
                .map(|(k, v)| format!("{k} {}", thousands(*v)))
                .collect::<Vec<_>>()
                .join(", ")
        }
    };
    let router = vec![
        "client.preset=litellm-router",
        "client.deployments=[\"sk-primary-support\"]",
        "client.fallbacks=[\"sk-secondary-support\"]",
    ];
    for file in ["fallback.toml", "models.toml", "degradation.toml"] {
        let mut clients = vec![("stampede", vec![]), ("naive", vec!["client.preset=naive"])];
        if file == "fallback.toml" {
            clients.push(("litellm-router", router.clone()));
        }
        for (client, sets) in clients {
            let s = summary(file, &sets);
            rows.push(format!(
                "| {} | {client} | {} | {} | {} | {} | {} | {} ({}) | ${:.2} (${:.2}) |",
                file.trim_end_matches(".toml"),
                thousands(s.completed),
                thousands(s.outbound_attempts),
                join(&s.fallbacks),
                join(&s.degraded),
                join(&s.rate_limit_hits),
                s.duplicates,
                s.cross_provider_duplicates,
                s.billed_usd,
                s.duplicate_billed_usd,
            ));
        }
    }
    rows.join("\n")
}

fn amplification_table() -> String {
    let mut rows = vec![
        "| client | replicas | completed | outbound attempts | attempts per logical | retry waves | Retry-After violations (own / scope) |"
            .to_string(),
        "| --- | --- | --- | --- | --- | --- | --- |".to_string(),
    ];
    let stack = "LangChain x2 over openai-python";
    for (client, replicas, sets) in [
        (stack, "1", vec!["client.replicas=1"]),
        (stack, "4", vec![]),
        (
            "stampede",
            "4",
            vec!["client.preset=stampede", "client.layers=[]"],
        ),
        (
            "stampede, `share_scope = \"fleet\"`",
            "4",
            vec![
                "client.preset=stampede",
                "client.layers=[]",
                "client.share_scope=fleet",
            ],
        ),
    ] {
        let s = summary("amplification.toml", &sets);
        rows.push(format!(
            "| {client} | {replicas} | {} | {} | {:.3} | {} | {} / {} |",
            thousands(s.completed),
            thousands(s.outbound_attempts),
            s.attempts_per_logical,
            s.retry_waves,
            s.retry_after_violations,
            s.scope_wait_violations
        ));
    }
    rows.join("\n")
}

/// The router and the AWS SDKs' budgets on their scenarios.
fn sdk_presets_table() -> String {
    let mut rows = vec![
        "| scenario | client | completed | failed | unfinished at the cap | outbound attempts |"
            .to_string(),
        "| --- | --- | --- | --- | --- | --- |".to_string(),
    ];
    let s = summary("router-failover.toml", &[]);
    rows.push(format!(
        "| `router-failover.toml` (sk-a refuses everything) | litellm-router over sk-a and sk-b | {} | {} | {} | {} |",
        s.completed, s.failed, s.unfinished, s.outbound_attempts
    ));
    for preset in ["aws-standard", "aws-adaptive"] {
        let set = format!("client.preset={preset}");
        let s = summary(
            "layers.toml",
            &[
                &set,
                "client.layers=[]",
                "workload.0.count=600",
                "workload.0.arrival={ rate = \"5/s\" }",
                "duration=2m",
            ],
        );
        rows.push(format!(
            "| `layers.toml`, 600 calls at 5/s for 2 min, persistent 429 | {preset} | {} | {} | {} | {} |",
            s.completed, s.failed, s.unfinished, s.outbound_attempts
        ));
    }
    rows.join("\n")
}

/// Replaces the body of block `name` in `readme`; `None` when the markers are missing.
/// How far the naive backlog's client could run ahead of its provider (a refusal's latency,
/// the shortest answer), and how many attempts that span holds: the README's reason a
/// second core has little to overlap. `s` is the backlog's summary under the naive preset.
fn second_core(s: &Summary) -> String {
    let path = common::repo().join("scenarios/backlog-38k.toml");
    let naive = parse_override("client.preset=naive").expect("override parses");
    let scenario = scenario::load(&path, None, &[naive]).expect("shipped scenario loads");
    let lead = scenario.provider.reject_latency.ms();
    let per_lead = |attempts: u64, span_ms: u64| attempts as f64 * lead as f64 / span_ms as f64;
    format!(
        "- **Little to overlap.** The client can run ahead of the provider model only by the\n  \
         shortest time an answer takes, a refusal's {lead} ms (the provider's `reject_latency`): an\n  \
         answer heard at t comes from a send at t - {lead} ms or before. The naive run makes {}\n  \
         attempts in {} virtual ms: {:.2} attempts per {lead} ms on average, and {:.1} at its peak\n  \
         ({} re-sends in its busiest 100 ms).",
        thousands(s.outbound_attempts),
        thousands(s.virtual_duration_ms),
        per_lead(s.outbound_attempts, s.virtual_duration_ms),
        per_lead(s.peak_retries_per_100ms, 100),
        s.peak_retries_per_100ms,
    )
}

fn with_block(readme: &str, name: &str, body: &str) -> Option<String> {
    let open = format!("<!-- figures:{name} -->\n");
    let close = format!("\n<!-- /figures:{name} -->");
    let start = readme.find(&open)? + open.len();
    let end = start + readme[start..].find(&close)?;
    Some(format!("{}{body}{}", &readme[..start], &readme[end..]))
}

#[test]
fn the_readme_quotes_the_figures_of_a_fresh_run() {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("README.md");
    let readme = std::fs::read_to_string(&path).expect("README.md");
    // Two blocks quote the naive backlog: it is played once for both.
    let naive = summary("backlog-38k.toml", &["client.preset=naive"]);
    let blocks: [(&str, String); 9] = [
        ("quickstart-tour", quickstart_tour()),
        ("quickstart-naive", quickstart_naive()),
        ("backlog-table", backlog_table(&naive)),
        ("restarts-counts", restarts_counts()),
        ("virtual-table", virtual_table()),
        ("amplification-table", amplification_table()),
        ("routing-table", routing_table()),
        ("sdk-presets-table", sdk_presets_table()),
        ("second-core", second_core(&naive)),
    ];
    let mut expected = readme.clone();
    for (name, body) in &blocks {
        expected = with_block(&expected, name, body)
            .unwrap_or_else(|| panic!("README.md has no block <!-- figures:{name} -->"));
    }
    if std::env::var_os("STAMPEDE_BLESS").is_some() {
        std::fs::write(&path, &expected).expect("write README.md");
        return;
    }
    for (name, body) in &blocks {
        let open = format!("<!-- figures:{name} -->\n");
        let start = readme.find(&open).unwrap() + open.len();
        let got = &readme[start..start + readme[start..].find("\n<!-- /figures:").unwrap()];
        assert_eq!(
            got, body,
            "README block `{name}` is stale; rerun with STAMPEDE_BLESS=1 cargo test --test integration \
             readme_figures and review the diff"
        );
    }
}
