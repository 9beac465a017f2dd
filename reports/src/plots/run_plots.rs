//! The plots of one run, from its time buckets: attempts and retries (see `attempts_plot`),
//! the backlog beside what is in flight, tokens reserved and used, service time and queue
//! wait apart, end-to-end latency, and per-tenant goodput. One unit per axis: quantities in
//! different units get panels of their own.

use std::collections::BTreeMap;

use plotters::style::RGBColor;

use super::attempts_plot::{attempts_plot, AttemptsInput};
use super::chart::{draw, draw_panels, ChartSpec, Series, Style, XLabels, XUnit};
use super::downsample::{envelope, MAX_POINTS};
use super::fine_retries::FineRetries;
use crate::error::ReportError;
use crate::report::RunReport;
use crate::schema::TimeseriesRow;

/// Series colours: distinct within every plot (the SVG classes rely on it), colour-blind-safe
/// pairs for the series read against each other (attempts/retries, p50/p99).
pub(crate) const BLUE: RGBColor = RGBColor(31, 119, 180);
pub(crate) const ORANGE: RGBColor = RGBColor(255, 127, 14);
pub(crate) const RED: RGBColor = RGBColor(214, 39, 40);
pub(crate) const PURPLE: RGBColor = RGBColor(148, 103, 189);
pub(crate) const GREEN: RGBColor = RGBColor(44, 160, 44);
pub(crate) const BROWN: RGBColor = RGBColor(140, 86, 75);
pub(crate) const PINK: RGBColor = RGBColor(227, 119, 194);
pub(crate) const OLIVE: RGBColor = RGBColor(188, 189, 34);
pub(crate) const CYAN: RGBColor = RGBColor(23, 190, 207);
pub(crate) const GREY: RGBColor = RGBColor(127, 127, 127);

/// Ten distinct colours for lines of one kind (tenants, sweep values).
pub(crate) const PALETTE: [RGBColor; 10] = [
    BLUE, ORANGE, GREEN, RED, PURPLE, BROWN, PINK, GREY, OLIVE, CYAN,
];

/// Tenants drawn one by one; beyond this the smallest are summed into "other tenants" so the
/// legend stays readable.
const MAX_TENANT_LINES: usize = 9;

/// One rendered plot.
pub(crate) struct Plot {
    /// File name in the run directory (`attempts.svg`).
    pub file: String,
    /// Caption for the page.
    pub title: String,
    pub svg: String,
}

/// How virtual time is shown on the x axis: seconds for short runs, minutes for long ones.
pub(crate) struct TimeAxis {
    ms_per_unit: f64,
    pub desc: &'static str,
    /// Tick decimals: a short span needs fractions to tell its ticks apart.
    pub decimals: usize,
    /// Minutes or seconds, for naming a point's time.
    pub unit: XUnit,
}

impl TimeAxis {
    fn for_span(last_ms: u64) -> Self {
        let (ms_per_unit, desc, unit) = if last_ms > 20 * 60_000 {
            (60_000.0, "virtual time (min)", XUnit::Minutes)
        } else {
            (1000.0, "virtual time (s)", XUnit::Seconds)
        };
        let decimals = if (last_ms as f64) / ms_per_unit <= 10.0 {
            1
        } else {
            0
        };
        TimeAxis {
            ms_per_unit,
            desc,
            decimals,
            unit,
        }
    }
    pub(crate) fn x(&self, t_ms: u64) -> f64 {
        t_ms as f64 / self.ms_per_unit
    }
}

/// Bucket width (ms): given by the report, or the smallest gap between buckets, or 1 s.
pub(crate) fn bucket_ms(report: &RunReport) -> u64 {
    if let Some(b) = report.bucket_ms.filter(|b| *b > 0) {
        return b;
    }
    let mut ts: Vec<u64> = report.timeseries.iter().map(|r| r.t_ms).collect();
    ts.sort_unstable();
    ts.windows(2)
        .map(|w| w[1] - w[0])
        .filter(|d| *d > 0)
        .min()
        .unwrap_or(1000)
}

/// Every plot of the run, in page order. `tenants.svg` only when there are several tenants.
/// `fine` (retries per 100 ms, from `attempts.csv`) adds a panel to `attempts.svg`.
pub(crate) fn run_plots(
    report: &RunReport,
    fine: Option<&FineRetries>,
) -> Result<Vec<Plot>, ReportError> {
    let mut rows: Vec<&TimeseriesRow> = report.timeseries.iter().collect();
    rows.sort_by_key(|r| r.t_ms);
    let bucket = bucket_ms(report);
    let last_ms = rows.last().map(|r| r.t_ms + bucket).unwrap_or(0);
    let axis = TimeAxis::for_span(last_ms);
    let x_range = (0.0, axis.x(last_ms));
    let per_s = 1000.0 / bucket as f64;
    let empty_note = rows
        .is_empty()
        .then(|| "no time buckets in this run".to_string());
    let name = &report.summary.scenario;
    // When the provider was injecting faults, shaded on every time plot.
    let shaded: Vec<(f64, f64)> = report
        .fault_windows
        .iter()
        .map(|w| {
            (
                axis.x(w.from_ms),
                axis.x(w.until_ms.unwrap_or(last_ms).min(last_ms)),
            )
        })
        .collect();

    // Each line thinned to its envelope on its own: long runs stay readable, spikes stay.
    let series_of = |f: &dyn Fn(&TimeseriesRow) -> f64| -> Vec<(f64, f64)> {
        let all: Vec<(f64, f64)> = rows.iter().map(|r| (axis.x(r.t_ms), f(r))).collect();
        envelope(&all, MAX_POINTS)
    };
    let spec = |title: String, y_desc: &str, y_unit: &str, series: Vec<Series>| ChartSpec {
        title,
        x_desc: axis.desc.to_string(),
        y_desc: y_desc.to_string(),
        y2_desc: String::new(),
        x_range,
        x_labels: XLabels::Numeric(axis.decimals),
        x_unit: axis.unit,
        y_unit: y_unit.to_string(),
        y2_unit: String::new(),
        series,
        empty_note: empty_note.clone(),
        shaded: shaded.clone(),
    };

    let mut plots = Vec::new();

    plots.push(attempts_plot(&AttemptsInput {
        name,
        rows: &rows,
        axis: &axis,
        x_range,
        bucket_ms: bucket,
        last_ms,
        empty_note: &empty_note,
        fine,
        shaded: &shaded,
    })?);

    // What waits in the client (everything arrived and not yet sent, and the part of it
    // the client's own bounded queue holds) above what is out at the provider: one unit,
    // two panels, so a backlog of thousands does not flatten a few dozen in flight.
    let waiting = spec(
        format!("{name}: requests waiting in the client"),
        "requests waiting",
        " requests",
        vec![
            Series::new(
                "backlog: arrived, not yet sent",
                "backlog",
                BLUE,
                Style::Area,
                series_of(&|r| r.backlog as f64),
            ),
            Series::new(
                "of which in the client's queue",
                "queue_depth",
                PURPLE,
                Style::Line,
                series_of(&|r| r.queue_depth as f64),
            ),
        ],
    );
    let in_flight = spec(
        format!("{name}: requests in flight"),
        "requests in flight",
        " requests",
        vec![Series::new(
            "in flight",
            "in_flight",
            GREEN,
            Style::Line,
            series_of(&|r| r.in_flight as f64),
        )],
    );
    plots.push(plot_panels(
        "queue.svg",
        "Backlog and in flight",
        &[(QUEUE_PANEL_PX, &waiting), (IN_FLIGHT_PANEL_PX, &in_flight)],
    )?);

    // Tokens held in reservations (a level, tokens) and tokens billed (a rate, tokens/s):
    // two units, so two panels.
    let reserved = spec(
        format!("{name}: tokens reserved, outstanding"),
        "tokens reserved (tokens)",
        " tokens",
        vec![Series::new(
            "tokens reserved",
            "tokens_reserved",
            CYAN,
            Style::Area,
            series_of(&|r| r.tokens_reserved as f64),
        )],
    );
    let used = spec(
        format!("{name}: tokens used"),
        "tokens used (tokens/s)",
        " tokens/s",
        vec![Series::new(
            "tokens used/s",
            "tokens_used",
            ORANGE,
            Style::Line,
            series_of(&|r| r.tokens_used as f64 * per_s),
        )],
    );
    plots.push(plot_panels(
        "tokens.svg",
        "Tokens reserved and used",
        &[(QUEUE_PANEL_PX, &reserved), (IN_FLIGHT_PANEL_PX, &used)],
    )?);

    let frame = PercentileFrame {
        rows: &rows,
        axis: &axis,
        x_range,
        empty_note: &empty_note,
        shaded: &shaded,
    };
    plots.push(frame.plot(&PercentilePlot {
        file: "service.svg",
        caption: "Service time at the provider",
        title: format!("{name}: service time, arrival at the provider to its answer"),
        what: "service time",
        class: "service",
        p50: |r| r.service_p50_ms,
        p99: |r| r.service_p99_ms,
    })?);
    plots.push(frame.plot(&PercentilePlot {
        file: "queue_wait.svg",
        caption: "Queue wait in the client",
        title: format!("{name}: queue wait, submit to first send"),
        what: "queue wait",
        class: "queue_wait",
        p50: |r| r.queue_wait_p50_ms,
        p99: |r| r.queue_wait_p99_ms,
    })?);
    plots.push(frame.plot(&PercentilePlot {
        file: "latency.svg",
        caption: "Latency percentiles",
        title: format!("{name}: latency, submit to outcome, per bucket"),
        what: "latency",
        class: "latency",
        p50: |r| r.latency_p50_ms,
        p99: |r| r.latency_p99_ms,
    })?);

    if let Some(tenants) = tenants_plot(report, &axis, x_range, bucket, &shaded)? {
        plots.push(tenants);
    }
    Ok(plots)
}

fn plot(file: &str, title: &str, spec: &ChartSpec) -> Result<Plot, ReportError> {
    Ok(Plot {
        file: file.to_string(),
        title: title.to_string(),
        svg: draw(file, spec)?,
    })
}

/// Heights (px) of the upper and lower panel of a two-panel plot.
const QUEUE_PANEL_PX: u32 = 300;
const IN_FLIGHT_PANEL_PX: u32 = 240;

fn plot_panels(file: &str, title: &str, panels: &[(u32, &ChartSpec)]) -> Result<Plot, ReportError> {
    Ok(Plot {
        file: file.to_string(),
        title: title.to_string(),
        svg: draw_panels(file, panels)?,
    })
}

/// What the percentile plots share: the run's buckets and time axis.
struct PercentileFrame<'a> {
    rows: &'a [&'a TimeseriesRow],
    axis: &'a TimeAxis,
    x_range: (f64, f64),
    empty_note: &'a Option<String>,
    shaded: &'a [(f64, f64)],
}

/// One plot of a p50 and a p99 column per bucket (ms).
struct PercentilePlot {
    file: &'static str,
    caption: &'static str,
    title: String,
    /// What is measured, for the axis (`service time`).
    what: &'static str,
    /// Series class prefix: `{class}_p50`, `{class}_p99`.
    class: &'static str,
    p50: fn(&TimeseriesRow) -> u64,
    p99: fn(&TimeseriesRow) -> u64,
}

impl PercentileFrame<'_> {
    fn plot(&self, p: &PercentilePlot) -> Result<Plot, ReportError> {
        // Buckets with nothing measured carry 0: leave them out rather than draw a false dip.
        let measured: Vec<&&TimeseriesRow> = self
            .rows
            .iter()
            .filter(|r| (p.p50)(r) > 0 || (p.p99)(r) > 0)
            .collect();
        let max_ms = measured.iter().map(|r| (p.p99)(r)).max().unwrap_or(0);
        let (div, unit) = if max_ms >= 20 * 60_000 {
            (60_000.0, "min")
        } else if max_ms >= 10_000 {
            (1000.0, "s")
        } else {
            (1.0, "ms")
        };
        let pts = |f: fn(&TimeseriesRow) -> u64| -> Vec<(f64, f64)> {
            let all: Vec<(f64, f64)> = measured
                .iter()
                .map(|r| (self.axis.x(r.t_ms), f(r) as f64 / div))
                .collect();
            envelope(&all, MAX_POINTS)
        };
        let spec = ChartSpec {
            title: p.title.clone(),
            x_desc: self.axis.desc.to_string(),
            y_desc: format!("{} ({unit})", p.what),
            y2_desc: String::new(),
            x_range: self.x_range,
            x_labels: XLabels::Numeric(self.axis.decimals),
            x_unit: self.axis.unit,
            y_unit: format!(" {unit}"),
            y2_unit: String::new(),
            // p99 first so p50 stays visible on top where the two meet (a backlog whose
            // latency is all queueing has them on one line).
            series: vec![
                Series::new(
                    "p99",
                    format!("{}_p99", p.class),
                    RED,
                    Style::Line,
                    pts(p.p99),
                ),
                Series::new(
                    "p50",
                    format!("{}_p50", p.class),
                    BLUE,
                    Style::Line,
                    pts(p.p50),
                ),
            ],
            empty_note: self.empty_note.clone(),
            shaded: self.shaded.to_vec(),
        };
        plot(p.file, p.caption, &spec)
    }
}

/// A CSS-safe class suffix from a tenant name.
fn class_of(tenant: &str) -> String {
    tenant
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '-' || c == '_' {
                c
            } else {
                '_'
            }
        })
        .collect()
}

fn tenants_plot(
    report: &RunReport,
    axis: &TimeAxis,
    x_range: (f64, f64),
    bucket: u64,
    shaded: &[(f64, f64)],
) -> Result<Option<Plot>, ReportError> {
    // tenant -> bucket start -> completions (BTreeMaps: stable order).
    let mut by_tenant: BTreeMap<&str, BTreeMap<u64, u64>> = BTreeMap::new();
    for row in &report.tenants {
        *by_tenant
            .entry(row.tenant.as_str())
            .or_default()
            .entry(row.t_ms)
            .or_default() += row.completed;
    }
    if by_tenant.len() < 2 {
        return Ok(None);
    }
    // Every bucket any tenant or the timeseries has, so a quiet tenant draws as zero there.
    let mut buckets: Vec<u64> = report.timeseries.iter().map(|r| r.t_ms).collect();
    buckets.extend(by_tenant.values().flat_map(|m| m.keys().copied()));
    buckets.sort_unstable();
    buckets.dedup();

    // Busiest tenants first (name breaks ties), the rest summed.
    let mut order: Vec<(&str, u64)> = by_tenant
        .iter()
        .map(|(t, m)| (*t, m.values().sum()))
        .collect();
    order.sort_by(|a, b| b.1.cmp(&a.1).then(a.0.cmp(b.0)));
    let shown = if order.len() > MAX_TENANT_LINES + 1 {
        MAX_TENANT_LINES
    } else {
        order.len()
    };
    let per_min = 60_000.0 / bucket as f64;
    let mut series = Vec::new();
    let mut used_classes = Vec::new();
    for (i, (tenant, _)) in order.iter().take(shown).enumerate() {
        let counts = &by_tenant[tenant];
        let pts: Vec<(f64, f64)> = buckets
            .iter()
            .map(|t| {
                let n = counts.get(t).copied().unwrap_or(0);
                (axis.x(*t), n as f64 * per_min)
            })
            .collect();
        let pts = envelope(&pts, MAX_POINTS);
        let mut class = format!("tenant-{}", class_of(tenant));
        if used_classes.contains(&class) {
            class = format!("{class}-{i}");
        }
        used_classes.push(class.clone());
        series.push(Series::new(
            *tenant,
            class,
            PALETTE[i % PALETTE.len()],
            Style::Line,
            pts,
        ));
    }
    if shown < order.len() {
        let rest: Vec<&str> = order[shown..].iter().map(|o| o.0).collect();
        let pts = buckets
            .iter()
            .map(|t| {
                let n: u64 = rest
                    .iter()
                    .map(|tenant| by_tenant[tenant].get(t).copied().unwrap_or(0))
                    .sum();
                (axis.x(*t), n as f64 * per_min)
            })
            .collect::<Vec<(f64, f64)>>();
        let pts = envelope(&pts, MAX_POINTS);
        series.push(Series::new(
            format!("{} other tenants", rest.len()),
            "tenant-others",
            RGBColor(0, 0, 128),
            Style::Line,
            pts,
        ));
    }
    let spec = ChartSpec {
        title: format!("{}: goodput per tenant", report.summary.scenario),
        x_desc: axis.desc.to_string(),
        y_desc: "completed requests per minute (1/min)".to_string(),
        y2_desc: String::new(),
        x_range,
        x_labels: XLabels::Numeric(axis.decimals),
        x_unit: axis.unit,
        y_unit: "/min".to_string(),
        y2_unit: String::new(),
        series,
        empty_note: None,
        shaded: shaded.to_vec(),
    };
    plot("tenants.svg", "Goodput per tenant", &spec).map(Some)
}
