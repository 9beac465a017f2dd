//! Sweep outputs (`stampede sweep`): one row per configuration and seed, `sweep.csv`, plots of
//! the main figures against the varied key, and the recommendation line.

use std::cmp::Ordering;
use std::collections::BTreeMap;
use std::fmt;
use std::path::{Path, PathBuf};

use crate::error::ReportError;
use crate::figures::figure;
use crate::number::{fmt_figure, fmt_num, median};
use crate::report::{write_plot, RenderOptions};
use crate::schema::Summary;

/// One run of a sweep: one configuration of the varied keys, one seed.
#[derive(Debug, Clone, PartialEq)]
pub struct SweepRow {
    /// Varied key (dotted scenario path, as given to `--vary`) -> the value used, as written.
    pub config: BTreeMap<String, String>,
    /// The seed this run played.
    pub seed: u64,
    /// The run's figures (its `summary.json`).
    pub summary: Summary,
}

/// The figures `sweep.csv` carries after the varied keys and the seed, by `summary.json` key.
/// New figures go at the end, so a column keeps its place.
pub const SWEEP_CSV_FIGURES: [&str; 17] = [
    "logical_requests",
    "completed",
    "failed",
    "outbound_attempts",
    "attempts_per_logical",
    "goodput_per_min",
    "retries",
    "retry_waves",
    "peak_retries_per_100ms",
    "duplicates",
    "deadline_misses",
    "retry_after_violations",
    "status_counts.429",
    "status_counts.503",
    "latency_ms.p50",
    "latency_ms.p99",
    "scope_wait_violations",
];

/// Whether every expectation of a run held.
pub(crate) fn passed(s: &Summary) -> bool {
    s.expectations.iter().all(|e| e.pass)
}

/// Writes `sweep.csv`: one row per element of `rows` (in the given order), columns: every
/// varied key (sorted), `seed`, `pass` (every expectation held), `failed_expectations`
/// (names, `;`-separated), then `SWEEP_CSV_FIGURES`. A status code a run never saw is 0.
pub fn write_sweep_csv(path: &Path, rows: &[SweepRow]) -> Result<(), ReportError> {
    let keys: Vec<&String> = {
        let mut k: Vec<&String> = rows.iter().flat_map(|r| r.config.keys()).collect();
        k.sort();
        k.dedup();
        k
    };
    let csv_err = |source| ReportError::Csv {
        path: path.to_path_buf(),
        source,
    };
    let mut w = csv::Writer::from_path(path).map_err(csv_err)?;
    let mut header: Vec<String> = keys.iter().map(|k| k.to_string()).collect();
    header.extend(["seed", "pass", "failed_expectations"].map(String::from));
    header.extend(SWEEP_CSV_FIGURES.iter().map(|f| f.to_string()));
    w.write_record(&header).map_err(csv_err)?;
    for row in rows {
        let mut rec: Vec<String> = keys
            .iter()
            .map(|k| row.config.get(*k).cloned().unwrap_or_default())
            .collect();
        rec.push(row.seed.to_string());
        rec.push(passed(&row.summary).to_string());
        let failed: Vec<&str> = row
            .summary
            .expectations
            .iter()
            .filter(|e| !e.pass)
            .map(|e| e.name.as_str())
            .collect();
        rec.push(failed.join(";"));
        for f in SWEEP_CSV_FIGURES {
            rec.push(fmt_figure(figure(&row.summary, f).unwrap_or(0.0)));
        }
        w.write_record(&rec).map_err(csv_err)?;
    }
    w.flush().map_err(|e| ReportError::io("writing", path, e))
}

/// Draws `sweep-<figure>.svg` into `dir` for attempts_per_logical, goodput_per_min,
/// deadline_misses, outbound_attempts and duplicates, against the first of `varied_keys`
/// (one line per value of the others), median over seeds with a min-max band. Returns the
/// files written. SVG only: `render_sweep_plots_with` also writes PNG.
pub fn render_sweep_plots(
    dir: &Path,
    rows: &[SweepRow],
    varied_keys: &[String],
) -> Result<Vec<PathBuf>, ReportError> {
    render_sweep_plots_with(dir, rows, varied_keys, &RenderOptions::default())
}

/// `render_sweep_plots` as `opts` asks: nothing when `opts.plots` is false, and with
/// `opts.png` every `sweep-<figure>.svg` also as `sweep-<figure>.png`
/// (`opts.github_step_summary` is not used here). Returns the files written, in order.
pub fn render_sweep_plots_with(
    dir: &Path,
    rows: &[SweepRow],
    varied_keys: &[String],
    opts: &RenderOptions,
) -> Result<Vec<PathBuf>, ReportError> {
    let mut files = Vec::new();
    if !opts.plots {
        return Ok(files);
    }
    std::fs::create_dir_all(dir).map_err(|e| ReportError::io("creating folder", dir, e))?;
    for plot in crate::plots::sweep_plots::sweep_plots(rows, varied_keys)? {
        write_plot(dir, &plot.file, &plot.svg, opts.png, &mut files)?;
    }
    Ok(files)
}

/// Every file [`render_sweep_plots_with`] may write (see `plots::sweep_plots::plot_files`).
pub fn sweep_plot_files() -> impl Iterator<Item = String> {
    crate::plots::sweep_plots::plot_files()
}

/// The configuration a sweep recommends: every seed met the scenario's expectations, with the
/// fewest median outbound attempts (ties: more median goodput, then the cheaper configuration:
/// varied values compared as numbers where they are numbers, the smaller first).
#[derive(Debug, Clone, PartialEq)]
pub struct Recommendation {
    /// The chosen configuration, `None` when none met the expectations on every seed.
    pub config: Option<BTreeMap<String, String>>,
    /// Seeds the chosen configuration ran with.
    pub seeds: usize,
    /// Median outbound attempts over those seeds.
    pub median_outbound_attempts: f64,
    /// Median goodput over those seeds (completed requests per minute).
    pub median_goodput_per_min: f64,
    /// Configurations that met the expectations on every seed.
    pub passing_configs: usize,
    /// Configurations in the sweep.
    pub configs: usize,
}

impl Recommendation {
    /// One line for the terminal and the sweep report.
    pub fn line(&self) -> String {
        self.to_string()
    }
}

impl fmt::Display for Recommendation {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.config {
            None => write!(
                f,
                "no configuration met the expectations ({} configurations tried)",
                self.configs
            ),
            Some(config) => {
                let settings: Vec<String> =
                    config.iter().map(|(k, v)| format!("{k}={v}")).collect();
                let settings = if settings.is_empty() {
                    "the scenario as written".to_string()
                } else {
                    settings.join(", ")
                };
                write!(
                    f,
                    "recommended: {settings} (met the expectations on all {} seeds; median {} outbound attempts, {} completed/min; {} of {} configurations passed)",
                    self.seeds,
                    fmt_figure(self.median_outbound_attempts),
                    fmt_num(self.median_goodput_per_min, 1),
                    self.passing_configs,
                    self.configs
                )
            }
        }
    }
}

/// Orders configurations cheapest first, key by key (sorted): values that are both numbers
/// compare as numbers, the smaller first (`client.workers=8` before `16`); other values as
/// written.
fn cheaper(a: &BTreeMap<String, String>, b: &BTreeMap<String, String>) -> Ordering {
    let number = |v: &str| v.trim().replace('_', "").parse::<f64>().ok();
    for ((ka, va), (kb, vb)) in a.iter().zip(b) {
        let by = ka.cmp(kb).then_with(|| match (number(va), number(vb)) {
            (Some(x), Some(y)) => x.total_cmp(&y),
            _ => va.cmp(vb),
        });
        if by != Ordering::Equal {
            return by;
        }
    }
    a.len().cmp(&b.len())
}

/// Picks the configuration to recommend from a sweep's rows.
pub fn recommend(rows: &[SweepRow]) -> Recommendation {
    let mut by_config: BTreeMap<&BTreeMap<String, String>, Vec<&Summary>> = BTreeMap::new();
    for r in rows {
        by_config.entry(&r.config).or_default().push(&r.summary);
    }
    let mut best: Option<(&BTreeMap<String, String>, usize, f64, f64)> = None;
    let mut passing = 0;
    for (config, runs) in &by_config {
        if !runs.iter().all(|s| passed(s)) {
            continue;
        }
        passing += 1;
        let attempts: Vec<f64> = runs.iter().map(|s| s.outbound_attempts as f64).collect();
        let goodput: Vec<f64> = runs.iter().map(|s| s.goodput_per_min).collect();
        let (a, g) = (
            median(&attempts).unwrap_or(0.0),
            median(&goodput).unwrap_or(0.0),
        );
        // On a full tie the cheaper configuration wins: fewer workers, lower limits.
        let better = match &best {
            None => true,
            Some((bc, _, ba, bg)) => {
                a < *ba
                    || (a == *ba && g > *bg)
                    || (a == *ba && g == *bg && cheaper(config, bc) == Ordering::Less)
            }
        };
        if better {
            best = Some((config, runs.len(), a, g));
        }
    }
    match best {
        Some((config, seeds, a, g)) => Recommendation {
            config: Some(config.clone()),
            seeds,
            median_outbound_attempts: a,
            median_goodput_per_min: g,
            passing_configs: passing,
            configs: by_config.len(),
        },
        None => Recommendation {
            config: None,
            seeds: 0,
            median_outbound_attempts: 0.0,
            median_goodput_per_min: 0.0,
            passing_configs: 0,
            configs: by_config.len(),
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn row(workers: &str, preset: &str, seed: u64) -> SweepRow {
        let summary = Summary {
            outbound_attempts: 600,
            goodput_per_min: 300.0,
            ..Summary::default()
        };
        SweepRow {
            config: BTreeMap::from([
                ("client.preset".to_string(), preset.to_string()),
                ("client.workers".to_string(), workers.to_string()),
            ]),
            seed,
            summary,
        }
    }

    #[test]
    fn a_tie_recommends_the_cheaper_configuration() {
        // As strings "16" < "8" < "96": the tie went to 16 workers.
        let rows: Vec<SweepRow> = ["96", "16", "8", "32"]
            .iter()
            .flat_map(|w| (1..=3).map(move |seed| row(w, "stampede", seed)))
            .collect();
        let rec = recommend(&rows);
        assert_eq!(rec.config.unwrap()["client.workers"], "8");
        assert_eq!(rec.passing_configs, 4);
    }

    #[test]
    fn fewer_attempts_still_beat_a_cheaper_configuration() {
        let mut rows = vec![row("8", "stampede", 1), row("64", "stampede", 1)];
        rows[1].summary.outbound_attempts = 599;
        assert_eq!(recommend(&rows).config.unwrap()["client.workers"], "64");
        rows[1].summary.outbound_attempts = 600;
        rows[1].summary.goodput_per_min = 301.0;
        assert_eq!(recommend(&rows).config.unwrap()["client.workers"], "64");
    }

    #[test]
    fn cheaper_compares_numbers_as_numbers_and_names_as_written() {
        let a = row("8", "stampede", 1).config;
        let b = row("1_000", "stampede", 1).config;
        assert_eq!(cheaper(&a, &b), Ordering::Less);
        let c = row("8", "naive", 1).config;
        assert_eq!(cheaper(&c, &a), Ordering::Less);
        assert_eq!(cheaper(&a, &a), Ordering::Equal);
    }
}
