//! One run of a scenario, start to finish: play it, measure it, check its expectations and
//! write the run directory (`summary.json`, `timeseries.csv`, `attempts.csv`, `tenants.csv`,
//! then the plots, `index.html`, `junit.xml` and `summary.md` from stampede-reports; the
//! audit trail `audit.jsonl` when asked, see [`RunOptions::audit`]).

use std::path::{Path, PathBuf};
use std::time::Instant;

use stampede_reports::{AttemptsCsv, LeftOut, RenderOptions, RunReport, Summary};

use crate::driver_common::case_file as case_files;
use crate::measure::{round4, Measured};
use crate::progress::ProgressHandle;
use crate::scenario::{expect, Scenario};
use crate::sink::background::BackgroundCsv;
use crate::sink::{AttemptSink, AuditFile, NoAttempts, NoAudit};
use crate::staging::Staging;
use crate::virtual_driver::{self, DriverError, VirtualRun};

/// A figure as an expectation shows it: to 4 decimals, or to as many more as it takes for a
/// failed figure not to read as its own limit (`actual 3.0188, limit <= 3.0188` was a
/// failure of 3.018836).
fn shown_actual(actual: f64, pass: bool, spec: &expect::ExpectSpec) -> f64 {
    let rounded = round4(actual);
    if pass || !actual.is_finite() {
        return rounded;
    }
    (5..=15)
        .map(|decimals| {
            let scale = 10f64.powi(decimals);
            (actual * scale).round() / scale
        })
        .chain([actual])
        .find(|&shown| !spec.passes(shown))
        .map_or(
            rounded,
            |shown| {
                if spec.passes(rounded) {
                    shown
                } else {
                    rounded
                }
            },
        )
}

/// How to run and what to write.
#[derive(Debug, Clone, Default)]
pub struct RunOptions {
    /// The run directory; `None` writes nothing (benchmarks, sweeps that keep only figures).
    pub out_dir: Option<PathBuf>,
    /// Draw plots and the HTML page (off: data files only).
    pub render: bool,
    /// With `render`: also write every plot as PNG beside its SVG.
    pub png: bool,
    /// Append the markdown summary here (`$GITHUB_STEP_SUMMARY`, passed in by the command).
    pub github_step_summary: Option<PathBuf>,
    /// Write a virtual run's audit trail (`audit.jsonl` and `audit.jsonl.head`), as
    /// `--audit` asks; the scenario's `output.audit` asks too. Off, the page and
    /// `summary.md` say it was not written and how to get it.
    pub audit: bool,
    /// Where the run reports how far it has got while it plays (a terminal display; see
    /// [`crate::progress`]). Nothing it shows reaches the run directory.
    pub progress: Option<ProgressHandle>,
    /// An earlier run's summary (`run --baseline`): the rendered page, `summary.md` and the
    /// step summary compare this run with it.
    pub baseline: Option<Summary>,
}

/// A finished run.
#[derive(Debug, Clone)]
pub struct RunOutcome {
    /// Summary (with expectations checked), timeseries and tenant rows.
    pub report: RunReport,
    /// Useful events the loop handled (arrivals admitted, cancellations, answers, sends,
    /// terminal outcomes).
    pub events: u64,
    /// Arrival offers the core refused under backpressure, apart from `events`.
    pub refused_offers: u64,
    /// Files written, in order.
    pub files: Vec<PathBuf>,
}

impl RunOutcome {
    /// Whether every expectation held.
    pub fn passed(&self) -> bool {
        self.report.summary.expectations.iter().all(|e| e.pass)
    }
}

/// A run that could not be carried out.
#[derive(Debug, thiserror::Error)]
pub enum RunError {
    /// The run could not be played; see [`DriverError`].
    #[error(transparent)]
    Driver(#[from] DriverError),
    /// A file or folder of the run directory could not be written.
    #[error("cannot write the run directory {path}: {message}")]
    Output {
        /// The file or folder that could not be written.
        path: PathBuf,
        /// Why, as the writer said.
        message: String,
    },
}

fn output_err(path: &Path, e: impl std::fmt::Display) -> RunError {
    RunError::Output {
        path: path.to_path_buf(),
        message: e.to_string(),
    }
}

/// The default run directory of a scenario: `runs/<name>/`.
pub fn default_out_dir(scenario: &Scenario) -> PathBuf {
    let safe: String = scenario
        .name
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '-' || c == '_' {
                c
            } else {
                '_'
            }
        })
        .collect();
    PathBuf::from("runs").join(safe)
}

/// Plays `scenario` in virtual time and writes its run directory, whole or not at all:
/// the files go to a partial folder inside it first, and only a finished run replaces an
/// earlier one's (see [`crate::staging`]).
pub fn run_virtual(scenario: &Scenario, opts: &RunOptions) -> Result<RunOutcome, RunError> {
    let Some(dir) = &opts.out_dir else {
        return play_virtual(scenario, opts, None);
    };
    let staging = Staging::begin(dir).map_err(|e| output_err(dir, e))?;
    let mut outcome = match play_virtual(scenario, opts, Some(staging.path())) {
        Ok(outcome) => outcome,
        Err(e) => {
            staging.abandon();
            return Err(e);
        }
    };
    outcome.files = staging
        .publish(std::mem::take(&mut outcome.files))
        .map_err(|e| output_err(dir, e))?;
    Ok(outcome)
}

/// Plays `scenario` in virtual time, writing its files into `dir` when one is given.
fn play_virtual(
    scenario: &Scenario,
    opts: &RunOptions,
    dir: Option<&Path>,
) -> Result<RunOutcome, RunError> {
    if !scenario.sdk_layers.is_empty() {
        return run_sdk(scenario, opts, dir);
    }
    let started = Instant::now();
    let mut files = Vec::new();
    let mut left_out = Vec::new();
    let progress = opts.progress.as_ref().map(ProgressHandle::get);
    let run = match dir {
        Some(dir) if opts.audit || scenario.output.audit => {
            // The runner's audit trail, hash-chained; it survives simulated crashes.
            let audit_path = dir.join(AUDIT_FILE);
            let mut audit =
                AuditFile::create(&audit_path).map_err(|e| output_err(&audit_path, e))?;
            let run = with_attempts_csv(dir, &mut files, |sink| {
                virtual_driver::run_observed(scenario, sink, &mut audit, progress)
            })?;
            audit.close().map_err(|e| output_err(&audit_path, e))?;
            files.push(audit_path);
            run
        }
        Some(dir) => {
            // Not asked for: the core records no audit events at all (the driver turns its
            // audit off for a sink that keeps nothing). An earlier run's trail in this
            // folder is removed when this run is published, not left to pass for its own.
            left_out.push(audit_left_out());
            with_attempts_csv(dir, &mut files, |sink| {
                virtual_driver::run_observed(scenario, sink, &mut NoAudit, progress)
            })?
        }
        None => virtual_driver::run_observed(scenario, &mut NoAttempts, &mut NoAudit, progress)?,
    };
    let refused_offers = run.refused_offers;
    let mut outcome = finish_run_with(
        scenario,
        run.measured,
        run.events,
        started,
        (files, left_out),
        (opts, dir),
    )?;
    outcome.refused_offers = refused_offers;
    Ok(outcome)
}

/// The audit trail's name in the run directory (its head is `audit.jsonl.head`).
pub const AUDIT_FILE: &str = "audit.jsonl";

/// What the report says about a virtual run's audit trail when it was not asked for.
fn audit_left_out() -> LeftOut {
    LeftOut {
        file: AUDIT_FILE.to_string(),
        why: "a virtual run writes its client's audit trail only on request (it holds \
              several hash-chained records per attempt, ten times the rest of the run \
              directory; every figure here is measured without it)"
            .to_string(),
        how: "run again with --audit (or --set output.audit=true, or output.audit = true in \
              the scenario); stampede audit verify checks it"
            .to_string(),
    }
}

/// Plays a scenario whose client is an SDK's retry layers (see `sdk_client`), writing its
/// files into `dir` when one is given. An SDK's retry layers keep no audit trail.
fn run_sdk(
    scenario: &Scenario,
    opts: &RunOptions,
    dir: Option<&Path>,
) -> Result<RunOutcome, RunError> {
    let started = Instant::now();
    let mut files = Vec::new();
    let run = match dir {
        Some(dir) => with_attempts_csv(dir, &mut files, |sink| {
            crate::sdk_client::run(scenario, &scenario.sdk_layers, sink)
        })?,
        None => crate::sdk_client::run(scenario, &scenario.sdk_layers, &mut NoAttempts)?,
    };
    finish_run_with(
        scenario,
        run.measured,
        run.events,
        started,
        (files, Vec::new()),
        (opts, dir),
    )
}

/// Plays `play` with `attempts.csv` in `dir` as its attempt sink (buffered, flushed after),
/// and lists the file in `files`.
fn with_attempts_csv(
    dir: &Path,
    files: &mut Vec<PathBuf>,
    play: impl FnOnce(&mut dyn AttemptSink) -> Result<VirtualRun, DriverError>,
) -> Result<VirtualRun, RunError> {
    // `dir` is the staged run's partial folder, made by `Staging::begin`.
    let path = dir.join("attempts.csv");
    // Rows are encoded on a thread of their own into the writer's buffer and reach the file
    // in 256 KiB writes; nothing is flushed per row.
    let csv = AttemptsCsv::create(&path).map_err(|e| output_err(&path, e))?;
    let mut sink = BackgroundCsv::start(csv).map_err(|e| output_err(&path, e))?;
    let run = play(&mut sink)?;
    sink.finish().map_err(|e| output_err(&path, e))?;
    files.push(path);
    Ok(run)
}

/// Plays a scenario the way its file says: with its `[client] command` as the client
/// under test when it names one (see `client_process`), else in virtual time. What
/// `check` and `sweep` run.
pub fn run_scenario(scenario: &Scenario, opts: &RunOptions) -> Result<RunOutcome, String> {
    if scenario.client.command.is_empty() {
        run_virtual(scenario, opts).map_err(|e| e.to_string())
    } else {
        crate::client_process::run_client(scenario, &[], opts)
            .map(|(outcome, _)| outcome)
            .map_err(|e| e.to_string())
    }
}

/// Completes a played run (either driver): checks expectations, stamps scenario, seed,
/// preset and `wall_ms` (real ms since `started`), and writes summary.json, the CSVs and,
/// when asked, the rendered report after the `files` already written (attempts.csv).
pub fn finish_run(
    scenario: &Scenario,
    measured: Measured,
    events: u64,
    started: Instant,
    files: Vec<PathBuf>,
    opts: &RunOptions,
) -> Result<RunOutcome, RunError> {
    let outcome = finish_run_with(
        scenario,
        measured,
        events,
        started,
        (files, Vec::new()),
        (opts, opts.out_dir.as_deref()),
    )?;
    // Written in place: an earlier run's page, plots or trail this run did not write go
    // now, as a virtual run's publishing removes them.
    if let Some(dir) = &opts.out_dir {
        let names: Vec<_> = outcome.files.iter().filter_map(|f| f.file_name()).collect();
        crate::staging::remove_stale(dir, &names).map_err(|e| output_err(dir, e))?;
    }
    Ok(outcome)
}

/// [`finish_run`], with the files already written and those the run left out (listed in
/// the report with how to get them), writing into `dir` (a virtual run's partial folder,
/// or `opts.out_dir`).
fn finish_run_with(
    scenario: &Scenario,
    measured: Measured,
    events: u64,
    started: Instant,
    (mut files, left_out): (Vec<PathBuf>, Vec<LeftOut>),
    (opts, dir): (&RunOptions, Option<&Path>),
) -> Result<RunOutcome, RunError> {
    let mut summary = measured.summary;
    let measured_unfinished = measured.unfinished;
    let measured_cases = measured.cases;
    let measured_downs = measured.downs;
    let retries_per_100ms = measured.retries_per_100ms;
    summary.scenario = scenario.name.clone();
    summary.seed = scenario.seed;
    summary.preset = scenario.client.preset.clone();
    summary.expectations = expect::evaluate(&scenario.expectations, &summary);
    for (e, spec) in summary.expectations.iter_mut().zip(&scenario.expectations) {
        e.actual = shown_actual(e.actual, e.pass, spec);
    }
    summary.wall_ms = u64::try_from(started.elapsed().as_millis()).unwrap_or(u64::MAX);
    let report = RunReport {
        summary,
        timeseries: measured.timeseries,
        tenants: measured.tenants,
        title: None,
        description: scenario.description.clone(),
        preset_text: Some(format!(
            "preset {} with {} workers{}",
            scenario.client.preset,
            scenario.policy.workers,
            if scenario.client.policy.is_some() {
                " and [client.policy] overrides"
            } else {
                ""
            }
        )),
        bucket_ms: Some(scenario.bucket_ms),
        left_out,
        fault_windows: fault_windows(scenario, &measured_downs),
        baseline: opts.baseline.clone(),
        case_files: case_files::links(&measured_cases),
        retries_per_100ms: Some(retries_per_100ms),
    };
    if let Some(dir) = dir {
        // The case files (a naive backlog's dead letters are 15 MB of JSON) are written on a
        // thread of their own while this one writes the data files and renders the page:
        // the two share no file, and the loop's second core is idle by now. The files are
        // listed in the same order either way.
        let (written, cases) = std::thread::scope(|s| {
            let cases = s.spawn(|| case_files::write(dir, &measured_cases));
            let written = write_report_files(dir, &report, &measured_unfinished, opts);
            let cases = cases
                .join()
                .unwrap_or_else(|_| Err(std::io::Error::other("the case file writer panicked")));
            (written, cases)
        });
        let (data, rendered) = written?;
        files.extend(data);
        files.extend(cases.map_err(|e| output_err(dir, e))?);
        files.extend(rendered);
    }
    Ok(RunOutcome {
        report,
        events,
        refused_offers: 0,
        files,
    })
}

/// Writes `report`'s data files into `dir` (summary, metrics, timeseries, tenants and the
/// unfinished requests), then, when `opts.render` asks, its plots and page; returns the
/// data files' paths and the rendered ones apart.
fn write_report_files(
    dir: &Path,
    report: &RunReport,
    unfinished: &[stampede_reports::UnfinishedRow],
    opts: &RunOptions,
) -> Result<(Vec<PathBuf>, Vec<PathBuf>), RunError> {
    let mut files = Vec::with_capacity(5);
    let summary_path = dir.join("summary.json");
    stampede_reports::write_summary_json(&summary_path, &report.summary)
        .map_err(|e| output_err(dir, e))?;
    files.push(summary_path);
    // The same figures as Prometheus metrics, with seed 003's names and labels.
    let metrics = dir.join("metrics.prom");
    stampede_reports::write_metrics_prom(&metrics, &report.summary)
        .map_err(|e| output_err(dir, e))?;
    files.push(metrics);
    let ts = dir.join("timeseries.csv");
    stampede_reports::write_csv(&ts, &report.timeseries).map_err(|e| output_err(dir, e))?;
    files.push(ts);
    let tenants = dir.join("tenants.csv");
    stampede_reports::write_csv(&tenants, &report.tenants).map_err(|e| output_err(dir, e))?;
    files.push(tenants);
    // Requests open at the cap, with their next safe action, so nobody re-runs blind what
    // may have executed (header only when every request finished).
    let unfinished_path = dir.join("unfinished.csv");
    stampede_reports::write_csv(&unfinished_path, unfinished).map_err(|e| output_err(dir, e))?;
    files.push(unfinished_path);
    if !opts.render {
        return Ok((files, Vec::new()));
    }
    let render_opts = RenderOptions {
        plots: true,
        png: opts.png,
        github_step_summary: opts.github_step_summary.clone(),
    };
    let rendered =
        stampede_reports::render(dir, report, &render_opts).map_err(|e| output_err(dir, e))?;
    Ok((files, rendered.files))
}

/// The scenario's faults that have a time window (`from` or `until`), and the spans the
/// client's process was down after a crash (`downs`, ms), for the report.
fn fault_windows(scenario: &Scenario, downs: &[(u64, u64)]) -> Vec<stampede_reports::FaultWindow> {
    let crashes = downs
        .iter()
        .map(|&(from, until)| stampede_reports::FaultWindow {
            from_ms: from,
            until_ms: Some(until),
            what: "the client's process crashed; down until it restarts from its ledger"
                .to_string(),
        });
    scenario
        .provider
        .faults
        .iter()
        .filter(|f| f.from.is_some() || f.until.is_some())
        .map(|f| {
            let mut what = match (&f.status, &f.fault) {
                (Some(status), _) => status.to_string(),
                (None, Some(fault)) => format!("{fault:?}").to_lowercase(),
                (None, None) => "sequence".to_string(),
            };
            if let Some(ra) = f.retry_after {
                what.push_str(&format!(", Retry-After {} ms", ra.0));
            }
            if let Some(p) = f.probability {
                what.push_str(&format!(", probability {p}"));
            }
            for (key, value) in [
                (
                    "credential",
                    f.credential
                        .as_deref()
                        .map(stampede_provider::model::mask_credential),
                ),
                ("scope", f.scope.clone()),
                ("tenant", f.tenant.clone()),
            ] {
                if let Some(v) = value {
                    what.push_str(&format!(", {key} {v}"));
                }
            }
            stampede_reports::FaultWindow {
                from_ms: f.from.map_or(0, |d| d.0),
                until_ms: f.until.map(|d| d.0),
                what,
            }
        })
        .chain(crashes)
        .collect()
}

#[cfg(test)]
mod tests {
    use super::shown_actual;
    use crate::scenario::expect::ExpectSpec;

    /// A failed figure never reads as its own limit; a passing one, and a failure rounding
    /// does not hide, keep 4 decimals.
    #[test]
    fn a_failed_figure_shows_the_digits_that_fail() {
        let at_most = |max: f64| ExpectSpec {
            key: "billed_usd".into(),
            min: None,
            max: Some(max),
            abort: false,
        };
        assert_eq!(shown_actual(3.018836, false, &at_most(3.0188)), 3.01884);
        assert_eq!(
            shown_actual(3.018800001, false, &at_most(3.0188)),
            3.018800001
        );
        assert_eq!(shown_actual(3.5, false, &at_most(3.0188)), 3.5);
        assert_eq!(shown_actual(2.123456, true, &at_most(3.0)), 2.1235);
        let at_least = ExpectSpec {
            key: "completed".into(),
            min: Some(10.0),
            max: None,
            abort: false,
        };
        assert_eq!(shown_actual(9.99996, false, &at_least), 9.99996);
    }
}
