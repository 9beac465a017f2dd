//! The run's data files: `summary.json` and the CSVs, written and read back with the same
//! schema (serde, `BTreeMap`s), so their bytes depend only on the figures.

use std::fs;
use std::path::{Path, PathBuf};

use serde::Serialize;

use crate::attempts_csv::AttemptsCsv;
use crate::error::ReportError;
use crate::schema::{AttemptRow, Summary};

/// Writes `summary` as pretty JSON with a trailing newline.
pub fn write_summary_json(path: &Path, summary: &Summary) -> Result<(), ReportError> {
    let mut text = serde_json::to_string_pretty(summary).map_err(|source| ReportError::Json {
        path: path.to_path_buf(),
        source,
    })?;
    text.push('\n');
    fs::write(path, text).map_err(|e| ReportError::io("writing", path, e))
}

/// Writes `metrics.prom`: the run's figures as Prometheus metrics (`prometheus::render`).
pub fn write_metrics_prom(path: &Path, summary: &Summary) -> Result<(), ReportError> {
    fs::write(path, crate::prometheus::render(summary))
        .map_err(|e| ReportError::io("writing", path, e))
}

/// Reads a `summary.json`. `path` may be the file or a run directory holding one (so
/// `--baseline DIR` and `stampede diff A B` can pass directories). Errors name the file.
pub fn read_summary(path: &Path) -> Result<Summary, ReportError> {
    let file: PathBuf = if path.is_dir() {
        let file = path.join("summary.json");
        // Known to be absent (not merely unreadable, which the read below reports).
        if matches!(file.try_exists(), Ok(false)) {
            return Err(ReportError::NotARunDirectory {
                path: path.to_path_buf(),
            });
        }
        file
    } else {
        path.to_path_buf()
    };
    let text = fs::read_to_string(&file).map_err(|e| ReportError::io("reading", &file, e))?;
    serde_json::from_str(&text).map_err(|source| ReportError::Json { path: file, source })
}

/// Writes `rows` as CSV with a header row named after the struct fields (`timeseries.csv`
/// from `TimeseriesRow`, `attempts.csv` from `AttemptRow`, `tenants.csv` from `TenantRow`).
pub fn write_csv<T: Serialize>(path: &Path, rows: &[T]) -> Result<(), ReportError> {
    let csv_err = |source| ReportError::Csv {
        path: path.to_path_buf(),
        source,
    };
    let mut w = csv::Writer::from_path(path).map_err(csv_err)?;
    for row in rows {
        w.serialize(row).map_err(csv_err)?;
    }
    w.flush().map_err(|e| ReportError::io("writing", path, e))
}

/// Writes `rows` as `attempts.csv` at `path` (with [`AttemptsCsv`], the encoder a run's
/// streamed rows go through too).
pub fn write_attempts_csv(path: &Path, rows: &[AttemptRow]) -> Result<(), ReportError> {
    let write = || -> std::io::Result<()> {
        let mut w = AttemptsCsv::create(path)?;
        for row in rows {
            w.write(row)?;
        }
        w.finish().map(drop)
    };
    write().map_err(|e| ReportError::io("writing", path, e))
}

/// Writes a run's data files into `dir` (created if missing): `summary.json`,
/// `timeseries.csv`, `attempts.csv`, `tenants.csv` when there are tenant rows, and
/// `metrics.prom`. Returns the
/// files written. The renderers (`render`) write the human-facing files separately.
pub fn write_run_data(
    dir: &Path,
    report: &crate::report::RunReport,
    attempts: &[AttemptRow],
) -> Result<Vec<PathBuf>, ReportError> {
    fs::create_dir_all(dir).map_err(|e| ReportError::io("creating folder", dir, e))?;
    let summary = dir.join("summary.json");
    write_summary_json(&summary, &report.summary)?;
    let timeseries = dir.join("timeseries.csv");
    write_csv(&timeseries, &report.timeseries)?;
    let attempts_csv = dir.join("attempts.csv");
    write_attempts_csv(&attempts_csv, attempts)?;
    let mut files = vec![summary, timeseries, attempts_csv];
    if !report.tenants.is_empty() {
        let tenants = dir.join("tenants.csv");
        write_csv(&tenants, &report.tenants)?;
        files.push(tenants);
    }
    let metrics = dir.join("metrics.prom");
    write_metrics_prom(&metrics, &report.summary)?;
    files.push(metrics);
    Ok(files)
}
