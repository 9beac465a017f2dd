//! stampede-reports: the run report schema that `stampede-sim` fills, and its renderers:
//! plots (SVG, and PNG on request), `index.html`, `junit.xml`, the markdown summary, run comparison, and sweep
//! outputs. Every output is a pure function of its input: same input, same bytes.

#![deny(missing_docs)]

pub mod attempts_csv;
pub mod breakdown;
pub mod compare;
pub mod console;
pub mod data_files;
pub mod error;
pub mod escape;
pub mod figures;
mod html;
pub mod junit;
pub mod markdown;
pub mod number;
mod plots;
pub mod prometheus;
pub mod report;
pub mod schema;
pub mod sweep;

pub use attempts_csv::AttemptsCsv;
pub use compare::{
    better_when, compare, render_comparison, Better, Comparison, FigureChange, VerdictChange,
};
pub use console::{check_line, failed_expectation_lines};
pub use data_files::{
    read_summary, write_attempts_csv, write_csv, write_metrics_prom, write_run_data,
    write_summary_json,
};
pub use error::ReportError;
pub use figures::{describe, figure, figures, Figure, FigureGroup};
pub use junit::{junit_check, junit_run, junit_suite, CheckedFile};
pub use markdown::{render_markdown, verdict_line};
pub use number::{fmt_actual, fmt_figure, fmt_num};
pub use report::{
    render, CaseFileLink, FaultWindow, LeftOut, RenderOptions, Rendered, RunReport, PNG_SUPPORTED,
    PNG_UNSUPPORTED, RENDERED_FILES,
};
pub use schema::{
    Aborted, AttemptRow, Backoff, ErrorCount, Expectation, FallbackRouteCount, GroupOutcomes,
    Interrupted, ModelFigures, Percentiles, ProviderFigures, QueueFigures, Summary, TenantRow,
    TimeseriesRow, UnfinishedRow, WaitsGiven,
};
pub use sweep::{
    recommend, render_sweep_plots, render_sweep_plots_with, sweep_plot_files, write_sweep_csv,
    Recommendation, SweepRow,
};
