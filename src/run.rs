//! `stampede run SCENARIO [--seed N] [--out DIR] [--set KEY=VALUE]... [--audit] [--live
//! [--provider URL] [--time-scale SCALE] [--ledger FILE]]`

use std::path::PathBuf;
use std::process::ExitCode;

use clap::Args;
use stampede_reports::{compare, read_summary, render_comparison, Summary};
use stampede_sim::client_process::run_client;
use stampede_sim::live_driver::{run_live, LiveOptions};
use stampede_sim::run::{default_out_dir, run_virtual, RunOptions};
use stampede_sim::scenario::{self, parse_override};

use crate::exit;
use crate::progress_bar::TerminalProgress;

/// `println!` that ends quietly on a closed stdout. `run` keeps SIGPIPE ignored (a live run
/// holds sockets), so writing to a closed pipe (`stampede run ... | head`) is an error here,
/// and this drops it instead of panicking.
macro_rules! outln {
    ($($arg:tt)*) => {{
        use std::io::Write as _;
        let _ = writeln!(std::io::stdout(), $($arg)*);
    }};
}

#[derive(Debug, Args)]
pub struct RunArgs {
    /// The scenario file (TOML).
    #[arg(value_name = "SCENARIO")]
    scenario: PathBuf,
    /// Use this seed instead of the scenario's.
    #[arg(long)]
    seed: Option<u64>,
    /// Run directory (default: runs/<scenario name>/).
    #[arg(long, value_name = "DIR")]
    out: Option<PathBuf>,
    /// Override a scenario key by its dotted path, type-checked like the file
    /// (`--set client.preset=naive`, `--set provider.scopes.0.rpm=1200`). Repeatable.
    #[arg(long = "set", value_name = "KEY=VALUE")]
    sets: Vec<String>,
    /// Write only the data files (summary.json and the CSVs), no plots or HTML page.
    #[arg(long)]
    no_render: bool,
    /// Also write every plot as PNG beside its SVG (text in an embedded font, so a machine
    /// without fonts draws the same image).
    #[arg(long, conflicts_with = "no_render")]
    png: bool,
    /// Also write the client's audit trail of this virtual run: audit.jsonl, hash-chained
    /// (`stampede audit verify`), and its head audit.jsonl.head. Left out by default, as it
    /// is several records per attempt; the same as --set output.audit=true. A live run
    /// writes its trail with --ledger.
    #[arg(long, conflicts_with_all = ["live", "client"])]
    audit: bool,
    /// An earlier run directory (or its summary.json): print each figure's change against it,
    /// and show both runs side by side on the page, in summary.md and in the step summary.
    #[arg(long, value_name = "DIR")]
    baseline: Option<PathBuf>,
    /// Play in real time over HTTP against the fake provider (started in-process on an
    /// ephemeral loopback port unless --provider names one), instead of in virtual time.
    #[arg(long)]
    live: bool,
    /// With --live: the base URL of a provider already running (`stampede serve`); it is
    /// given the scenario's [provider] table and reset before the run.
    #[arg(long, value_name = "URL", requires = "live", value_parser = provider_url)]
    provider: Option<String>,
    /// With --live: scenario ms per real ms (default: the scenario's provider.time_scale,
    /// else 30, a scenario minute in two real seconds).
    #[arg(long, value_name = "SCALE", requires = "live")]
    time_scale: Option<f64>,
    /// With --live: persist every logical action to this SQLite ledger (written before the
    /// first send and at every state change) and the audit trail to audit.jsonl in the run
    /// directory. If FILE already holds actions, the run is a restart of a runner that died:
    /// the provider (give the same --provider URL and --time-scale) is not reset, in-flight
    /// uncertain writes are looked up with their original idempotency key before anything is
    /// re-sent, actions already in the ledger are not submitted again, and the audit trail is
    /// continued. Use a new FILE for a fresh run.
    #[arg(long, value_name = "FILE", requires = "live")]
    ledger: Option<PathBuf>,
    /// With --provider: the control token that provider requires (`stampede serve` prints
    /// it); default: the STAMPEDE_CONTROL_TOKEN environment variable.
    #[arg(long, value_name = "TOKEN", requires = "provider")]
    control_token: Option<String>,
    /// Put any client under test instead of Stampede's core: the command after `--` (or
    /// the scenario's [client] command) runs against the provider, started on a loopback
    /// port, with OPENAI_BASE_URL, ANTHROPIC_BASE_URL, the keys and STAMPEDE_WORKLOAD in
    /// its environment; its output goes to client.log; the run is measured from the
    /// provider's journal.
    #[arg(long, conflicts_with = "live")]
    client: bool,
    /// Print nothing but failed expectations (and errors, on stderr): for scripts that read
    /// the exit code and the run directory.
    #[arg(long, conflicts_with = "json")]
    quiet: bool,
    /// Print the run's summary.json on stdout, and nothing else there: for scripts
    /// (`stampede run s.toml --json | jq .attempts_per_logical`).
    #[arg(long)]
    json: bool,
    /// With --client: the command and its arguments, after `--`.
    #[arg(last = true, value_name = "CMD", requires = "client")]
    command: Vec<String>,
}

/// `--provider`'s URL, checked as the live client will use it
/// ([`stampede_sim::live_driver::provider::check_base_url`]), so a typo is refused here
/// instead of as an HTTP client's "invalid format" mid-run.
fn provider_url(text: &str) -> Result<String, String> {
    stampede_sim::live_driver::provider::check_base_url(text).map(|()| text.to_string())
}

pub fn main(args: RunArgs) -> ExitCode {
    if args.png && !stampede_reports::PNG_SUPPORTED {
        return exit::bad_input(format!("--png: {}", stampede_reports::PNG_UNSUPPORTED));
    }
    let mut sets = Vec::with_capacity(args.sets.len());
    for arg in &args.sets {
        match parse_override(arg) {
            Ok(ov) => sets.push(ov),
            Err(message) => return exit::bad_input(message),
        }
    }
    let scenario = match scenario::load(&args.scenario, args.seed, &sets) {
        Ok(s) => s,
        Err(e) => return exit::bad_input(e),
    };
    for note in &scenario.notes {
        eprintln!("{note}");
    }
    // Read before the run: the run may write into the same folder.
    let baseline = match args.baseline.as_deref().map(read_summary).transpose() {
        Ok(b) => b,
        Err(e) => return exit::bad_input(format!("--baseline: {e}")),
    };
    let out_dir = args
        .out
        .clone()
        .unwrap_or_else(|| default_out_dir(&scenario));
    // On a terminal, unless asked to be quiet: requests done, attempts, 429s, time.
    let progress = TerminalProgress::for_terminal(!(args.quiet || args.json));
    let opts = RunOptions {
        progress: progress.as_ref().map(TerminalProgress::handle),
        out_dir: Some(out_dir.clone()),
        render: !args.no_render,
        png: args.png,
        // The library never reads the environment; the command passes CI's summary file in.
        github_step_summary: crate::step_summary::from_env(),
        audit: args.audit,
        // The page, summary.md and the step summary show the comparison too.
        baseline: baseline.clone(),
    };
    let client_run = args.client || !scenario.client.command.is_empty() && !args.live;
    let live_only = [
        (args.time_scale.is_some(), "--time-scale"),
        (args.provider.is_some(), "--provider"),
        (args.ledger.is_some(), "--ledger"),
    ];
    if let Some((_, flag)) = live_only.iter().find(|(given, _)| client_run && *given) {
        return exit::bad_input(format!(
            "{flag} is for --live runs: a --client run starts its own provider, at the \
             scenario's provider.time_scale (--set provider.time_scale=N), and keeps no ledger"
        ));
    }
    if client_run || args.live {
        // This process ends with its run: the run's stop signals stay caught to the end,
        // so one still coming cannot kill it while it prints the last lines.
        stampede_sim::signals::keep_until_exit();
    }
    // A live or --client run writes in place: it holds the run directory's lock as a
    // virtual run does (see stampede_sim::staging), so two runs never write into one.
    let _writing = if client_run || args.live {
        match stampede_sim::staging::lock_if_there(&out_dir) {
            Ok(lock) => lock,
            Err(e) => return exit::bad_input(e.to_string()),
        }
    } else {
        None
    };
    let outcome = if client_run {
        match run_client(&scenario, &args.command, &opts) {
            Ok((o, exit)) => {
                let (replica, replicas) = exit.replica;
                let how = match (exit.interrupted, exit.ended_at_deadline.contains(&replica)) {
                    (Some(_), _) => {
                        " (killed with every process it started: the run was interrupted)"
                    }
                    (None, true) => " (ended by the runner: the scenario's duration ran out)",
                    (None, false) => "",
                };
                if !(args.quiet || args.json) {
                    let log = exit
                        .log
                        .clone()
                        .unwrap_or_else(|| out_dir.join("client.log"));
                    let who = if replicas > 1 {
                        format!("client replica {replica} of {replicas}")
                    } else {
                        "client".to_string()
                    };
                    outln!(
                        "{who} exited with {} after {} ms{how}; its output: {}",
                        exit.code,
                        exit.replica_ms,
                        log.display()
                    );
                    let others: Vec<String> = exit
                        .ended_at_deadline
                        .iter()
                        .filter(|&&r| replicas > 1 && r != replica)
                        .map(|r| r.to_string())
                        .collect();
                    if exit.interrupted.is_none() && !others.is_empty() {
                        outln!(
                            "the runner ended replica(s) {} when the scenario's duration ran out",
                            others.join(", ")
                        );
                    }
                    if exit.left_behind > 0 {
                        outln!(
                            "note: {} process(es) the client started outlived it outside its \
                             process group (setsid, a daemon): killed",
                            exit.left_behind
                        );
                    }
                    if exit.links_removed > 0 {
                        outln!(
                            "note: {} symbolic link(s) the client left in {} were removed \
                             before the run's files were written there",
                            exit.links_removed,
                            out_dir.display()
                        );
                    }
                    if exit.run_dir_remade {
                        outln!(
                            "note: {} was removed while the client ran (by the client?): made \
                             again for what the provider measured; the client's log and \
                             workload copy are lost",
                            out_dir.display()
                        );
                    }
                    for note in client_notes(&o.report.summary) {
                        outln!("{note}");
                    }
                }
                o
            }
            Err(e) => return exit::bad_input(e),
        }
    } else if args.live {
        let live = LiveOptions {
            provider: args.provider.clone(),
            time_scale: args.time_scale,
            ledger: args.ledger.clone(),
            control_token: args
                .control_token
                .clone()
                .or_else(|| std::env::var("STAMPEDE_CONTROL_TOKEN").ok()),
            stop_on_signals: true,
            ..LiveOptions::default()
        };
        match run_live(&scenario, &live, &opts) {
            Ok((o, run)) => {
                if let (Some(restart), false) = (&run.restart, args.quiet || args.json) {
                    outln!("{restart}");
                }
                if args.ledger.is_some() && !(args.quiet || args.json) {
                    outln!("{}", run.ledger_commits.note_line(run.scale, run.end_ms));
                }
                for warning in &run.ledger_warnings {
                    eprintln!("{warning}");
                }
                o
            }
            Err(e) => return exit::bad_input(e),
        }
    } else {
        match run_virtual(&scenario, &opts) {
            Ok(o) => o,
            Err(e) => return exit::bad_input(e),
        }
    };
    if let Some(p) = &progress {
        p.clear();
    }
    let summary = &outcome.report.summary;
    if args.json {
        match serde_json::to_string_pretty(summary) {
            Ok(text) => outln!("{text}"),
            Err(e) => return exit::bad_input(format!("cannot print the summary: {e}")),
        }
    } else if args.quiet {
        if let Some(interrupted) = &summary.interrupted {
            outln!("{}", interrupted.line());
        }
        for e in summary.expectations.iter().filter(|e| !e.pass) {
            outln!(
                "FAIL {}: actual {}, limit {}{}",
                e.name,
                e.actual,
                e.limit,
                ended_run(summary, &e.name)
            );
        }
    } else {
        print_table(summary);
        outln!("report: {}", out_dir.join("index.html").display());
    }
    if let (Some(before), false) = (&baseline, args.quiet || args.json) {
        outln!();
        let comparison = compare(before, &outcome.report.summary);
        outln!("{}", render_comparison(&comparison).trim_end_matches('\n'));
    }
    if let Some(interrupted) = &outcome.report.summary.interrupted {
        match (&args.ledger, &args.provider, args.json) {
            (Some(ledger), Some(_), false) => outln!(
                "the unfinished actions are in {}: to finish them, run the same command again",
                ledger.display()
            ),
            (Some(ledger), None, false) => outln!(
                "the unfinished actions are in {}, but the provider they were sent to ran in \
                 this process and is gone: nothing can look them up again. To be able to \
                 resume an interrupted run, play it against `stampede serve` with --provider URL",
                ledger.display()
            ),
            _ => {}
        }
        // Stopped by the user: neither passed nor failed, as a shell tells a process a
        // signal ended (the report of the part played is written).
        ExitCode::from(interrupted.exit_status())
    } else if outcome.passed() {
        ExitCode::from(exit::PASSED)
    } else {
        ExitCode::from(exit::EXPECTATION_FAILED)
    }
}

/// The short terminal table: the figures people look at first, then each expectation.
fn print_table(s: &Summary) {
    let status = |code: &str| s.status_counts.get(code).copied().unwrap_or(0);
    outln!(
        "{} (seed {}, preset {}, {})",
        s.scenario,
        s.seed,
        s.preset,
        s.mode
    );
    let mut rows: Vec<(&str, String)> = vec![
        ("logical requests", s.logical_requests.to_string()),
        (
            "completed / failed / cancelled / escalated",
            format!(
                "{} / {} / {} / {}",
                s.completed, s.failed, s.cancelled, s.escalations
            ),
        ),
        (
            "held back at admission, offered again",
            s.rejected.to_string(),
        ),
        ("outbound attempts", s.outbound_attempts.to_string()),
        (
            "attempts per logical",
            format!("{:.3}", s.attempts_per_logical),
        ),
        (
            "429 / 503 / dropped",
            format!(
                "{} / {} / {}",
                status("429"),
                status("503"),
                status("dropped")
            ),
        ),
        (
            "retries (waves, peak per 100 ms)",
            format!(
                "{} ({}, {})",
                s.retries, s.retry_waves, s.peak_retries_per_100ms
            ),
        ),
        (
            "duplicates (writes / completions, tokens)",
            format!(
                "{} ({} / {}, {})",
                s.duplicates, s.duplicate_writes, s.duplicate_completions, s.duplicate_tokens
            ),
        ),
        ("reconciliations", s.reconciliations.to_string()),
        ("deadline misses", s.deadline_misses.to_string()),
    ];
    if s.crashes > 0 {
        // Only a run whose runner died says so: every other run's lines stay as they were.
        rows.push(("runner crashes", s.crashes.to_string()));
    }
    rows.extend([
        (
            "Retry-After violations (own / scope)",
            format!("{} / {}", s.retry_after_violations, s.scope_wait_violations),
        ),
        (
            "unfinished at the cap (sent)",
            format!("{} ({})", s.unfinished, s.unfinished_sent),
        ),
        (
            "latency p50 / p99 / max (ms)",
            format!(
                "{} / {} / {}",
                s.latency_ms.p50, s.latency_ms.p99, s.latency_ms.max
            ),
        ),
        (
            "first send to completion p50 / p99 (ms)",
            format!("{} / {}", s.service_ms.p50, s.service_ms.p99),
        ),
        (
            "queue wait p50 / p99 (ms)",
            format!("{} / {}", s.queue_wait_ms.p50, s.queue_wait_ms.p99),
        ),
        (
            "tokens reserved / used",
            format!("{} / {}", s.tokens_reserved, s.tokens_used),
        ),
        (
            "goodput (completed/min)",
            format!("{:.1}", s.goodput_per_min),
        ),
        (
            "virtual time / wall (ms)",
            format!("{} / {}", s.virtual_duration_ms, s.wall_ms),
        ),
    ]);
    let width = rows.iter().map(|(k, _)| k.len()).max().unwrap_or(0);
    for (k, v) in rows {
        outln!("  {k:<width$}  {v}");
    }
    if let Some(aborted) = &s.aborted {
        outln!("{}", aborted.line());
    }
    if let Some(interrupted) = &s.interrupted {
        outln!("{}", interrupted.line());
    }
    if !s.expectations.is_empty() {
        outln!("expectations:");
        for e in &s.expectations {
            let verdict = if e.pass { "pass" } else { "FAIL" };
            outln!(
                "  {verdict} {}: actual {}, limit {}{}",
                e.name,
                e.actual,
                e.limit,
                ended_run(s, &e.name)
            );
        }
    } else {
        outln!("expectations: none (no [expect] table: the run passes whatever happens)");
    }
}

/// ` (aborted the run at 12.3 s)` after the expectation that ended the run early.
fn ended_run(s: &Summary, name: &str) -> String {
    match &s.aborted {
        Some(a) if a.expectation == name => format!(
            " (aborted the run at {} s)",
            stampede_reports::fmt_figure(a.at_ms as f64 / 1000.0)
        ),
        _ => String::new(),
    }
}

/// What a `--client` run's figures cannot say by themselves: that the client sent nothing
/// at all, or sent requests that named no item of its workload. Both leave the workload's
/// items failed, which reads as the provider's doing unless it is said.
fn client_notes(s: &Summary) -> Vec<String> {
    let mut notes = Vec::new();
    if s.outbound_attempts == 0 {
        notes.push(
            "note: the client sent no request to the provider: does it read its workload \
             (STAMPEDE_WORKLOAD) and send to OPENAI_BASE_URL or ANTHROPIC_BASE_URL?"
                .to_string(),
        );
    } else if s.foreign_requests > 0 {
        notes.push(format!(
            "note: {} request(s) the provider saw named no item of the workload (counted apart \
             as foreign_requests): a request counts for an item when one of its messages \
             starts with the `request N:` of the item's prompt",
            s.foreign_requests
        ));
    }
    notes
}
