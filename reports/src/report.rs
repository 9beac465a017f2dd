//! A run's report and `render`: everything a person or CI looks at, written into the run
//! directory (plots, `index.html`, `junit.xml`, `summary.md`).

use std::fs::{self, OpenOptions};
use std::io::Write;
use std::path::{Path, PathBuf};

use crate::error::ReportError;
use crate::html::render_html;
use crate::junit::junit_run;
use crate::markdown::render_markdown;
use crate::plots::fine_retries::FineRetries;
#[cfg(feature = "png")]
use crate::plots::raster::svg_to_png;
use crate::plots::run_plots::run_plots;
use crate::schema::{Summary, TenantRow, TimeseriesRow};

/// Everything the renderers need about one run.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct RunReport {
    /// The run's figures, as written to `summary.json`.
    pub summary: Summary,
    /// One row per time bucket, in time order.
    pub timeseries: Vec<TimeseriesRow>,
    /// Per-tenant completions per bucket (may be empty; a plot is drawn only for 2+ tenants).
    pub tenants: Vec<TenantRow>,
    /// Page heading; the scenario name when `None`.
    pub title: Option<String>,
    /// The scenario's description, shown under the heading.
    pub description: Option<String>,
    /// What the client preset does (shown as preformatted text).
    pub preset_text: Option<String>,
    /// Width of a time bucket (ms). When `None`, the smallest gap between rows (or 1000 ms).
    pub bucket_ms: Option<u64>,
    /// Files this run did not write although a run can: the page and the markdown summary
    /// list each with how to get it, so nothing is missing without saying so.
    pub left_out: Vec<LeftOut>,
    /// When the provider was injecting faults, from the scenario: shaded on every time plot
    /// and listed on the page.
    pub fault_windows: Vec<FaultWindow>,
    /// An earlier run to compare with (`run --baseline`): the page, `summary.md` and the
    /// step summary show both runs side by side, each figure marked better or worse.
    pub baseline: Option<Summary>,
    /// Files of cases left for a person (dead letters, escalation case files) in the run
    /// directory: the page and the markdown summary link each that holds any.
    pub case_files: Vec<CaseFileLink>,
    /// Retries per 100 ms over the run, as the run counted them (bin `i` = `[i*100,
    /// (i+1)*100)` ms) for the panel of retry waves. `None`: read from the run directory's
    /// `attempts.csv`, when it is there (a report rendered again from files).
    pub retries_per_100ms: Option<Vec<u64>>,
}

/// A file of the run directory that holds cases for a person, one per line.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CaseFileLink {
    /// Its name in the run directory (`dead_letter.jsonl`).
    pub file: String,
    /// How many cases (lines) it holds.
    pub lines: u64,
    /// What each line is, for the page.
    pub what: String,
}

/// A span of the run in which the provider injected a fault.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FaultWindow {
    /// Start (ms since run start).
    pub from_ms: u64,
    /// End (ms since run start); `None`: to the end of the run.
    pub until_ms: Option<u64>,
    /// What was injected, for the page (`429, Retry-After 5 s, probability 0.5`).
    pub what: String,
}

/// A file the run directory could hold but this run did not write.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LeftOut {
    /// Its name in the run directory (`audit.jsonl`).
    pub file: String,
    /// Why it is not there.
    pub why: String,
    /// How to get it (a flag or a scenario key).
    pub how: String,
}

/// How to render.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RenderOptions {
    /// Draw the plots (SVG) and inline them in the page. Default true.
    pub plots: bool,
    /// Also write every plot as PNG beside its SVG (`attempts.png` next to `attempts.svg`),
    /// for places that show no SVG. Text uses the embedded font, never the machine's, so a
    /// fresh machine gives the same bytes. Default false: rasterising costs time.
    pub png: bool,
    /// Append the markdown summary to this file. The CLI fills it from `$GITHUB_STEP_SUMMARY`
    /// (the library never reads the environment itself).
    pub github_step_summary: Option<PathBuf>,
}

impl Default for RenderOptions {
    fn default() -> Self {
        RenderOptions {
            plots: true,
            png: false,
            github_step_summary: None,
        }
    }
}

/// What `render` wrote.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Rendered {
    /// Every file written into the run directory, in writing order.
    pub files: Vec<PathBuf>,
    /// The markdown summary (also in `summary.md`), for printing.
    pub markdown: String,
}

fn write(
    path: PathBuf,
    contents: impl AsRef<[u8]>,
    files: &mut Vec<PathBuf>,
) -> Result<(), ReportError> {
    fs::write(&path, contents).map_err(|e| ReportError::io("writing", &path, e))?;
    files.push(path);
    Ok(())
}

/// Writes `svg` as `dir/file`, and with `png` also its rasterisation beside it (same base
/// name, `.png`).
pub(crate) fn write_plot(
    dir: &Path,
    file: &str,
    svg: &str,
    png: bool,
    files: &mut Vec<PathBuf>,
) -> Result<(), ReportError> {
    let path = dir.join(file);
    if png {
        write_png(path, file, svg, files)
    } else {
        write(path, svg, files)
    }
}

/// Whether this build can draw PNG plots (the `png` cargo feature).
pub const PNG_SUPPORTED: bool = cfg!(feature = "png");

/// What `--png` says in a build without the `png` feature.
pub const PNG_UNSUPPORTED: &str = "this stampede was built without PNG support: rebuild with \
    `cargo build --release --features png` (or `cargo install --features png`); the SVG plots \
    are always written";

#[cfg(feature = "png")]
fn write_png(
    path: PathBuf,
    file: &str,
    svg: &str,
    files: &mut Vec<PathBuf>,
) -> Result<(), ReportError> {
    let png_path = path.with_extension("png");
    let name = png_path
        .file_name()
        .map_or_else(|| file.to_string(), |n| n.to_string_lossy().into_owned());
    let bytes = svg_to_png(&name, svg)?;
    write(path, svg, files)?;
    write(png_path, bytes, files)
}

#[cfg(not(feature = "png"))]
fn write_png(_: PathBuf, file: &str, _: &str, _: &mut Vec<PathBuf>) -> Result<(), ReportError> {
    Err(ReportError::Plot {
        file: file.to_string(),
        message: PNG_UNSUPPORTED.to_string(),
    })
}

/// Every file [`render`] may write into a run directory: the page, `junit.xml`,
/// `summary.md` and each plot (with `png`, each also as `.png`). Not every render writes
/// every one (`tenants.svg` needs several tenants, the plots can be left out): a run
/// directory that replaces an earlier run removes those of them it did not write, so no
/// page or plot of the earlier run sits beside the new run's figures.
pub const RENDERED_FILES: [&str; 17] = [
    "index.html",
    "junit.xml",
    "summary.md",
    "attempts.svg",
    "queue.svg",
    "tokens.svg",
    "service.svg",
    "queue_wait.svg",
    "latency.svg",
    "tenants.svg",
    "attempts.png",
    "queue.png",
    "tokens.png",
    "service.png",
    "queue_wait.png",
    "latency.png",
    "tenants.png",
];

/// Writes the plots (`attempts.svg`, `queue.svg`, `tokens.svg`, `latency.svg`, and
/// `tenants.svg` for several tenants; with `opts.png` each also as `.png`), `index.html`, `junit.xml` and `summary.md` into `dir`
/// (created if missing), and appends the markdown to `opts.github_step_summary` if set.
/// `attempts.svg` gets a panel of retries per 100 ms from `report.retries_per_100ms`, or,
/// without them, when `dir` already holds the run's `attempts.csv` (a file whose row count
/// is not `summary.outbound_attempts` is ignored). Same report and same `attempts.csv`,
/// same bytes.
pub fn render(
    dir: &Path,
    report: &RunReport,
    opts: &RenderOptions,
) -> Result<Rendered, ReportError> {
    fs::create_dir_all(dir).map_err(|e| ReportError::io("creating folder", dir, e))?;
    let mut files = Vec::new();
    let plots = if opts.plots {
        // Counted by the run when it can say, so a run does not read back the file it just
        // wrote (a naive backlog's is 54 MB).
        let fine = match &report.retries_per_100ms {
            Some(bins) => Some(FineRetries { bins: bins.clone() }),
            None => FineRetries::from_attempts_csv(
                &dir.join("attempts.csv"),
                report.summary.outbound_attempts,
            ),
        };
        run_plots(report, fine.as_ref())?
    } else {
        Vec::new()
    };
    for p in &plots {
        write_plot(dir, &p.file, &p.svg, opts.png, &mut files)?;
    }
    write(
        dir.join("index.html"),
        render_html(report, &plots),
        &mut files,
    )?;
    let junit = junit_run(&report.summary);
    write(dir.join("junit.xml"), &junit, &mut files)?;
    let markdown = render_markdown(report);
    write(dir.join("summary.md"), &markdown, &mut files)?;
    if let Some(path) = &opts.github_step_summary {
        append(path, &markdown)?;
    }
    Ok(Rendered { files, markdown })
}

/// Appends `text` to `path` (created if missing): `$GITHUB_STEP_SUMMARY` collects every step's
/// output, so never truncate it.
pub fn append(path: &Path, text: &str) -> Result<(), ReportError> {
    let mut f = OpenOptions::new()
        .create(true)
        .append(true)
        .open(path)
        .map_err(|e| ReportError::io("appending to", path, e))?;
    f.write_all(text.as_bytes())
        .map_err(|e| ReportError::io("appending to", path, e))
}
