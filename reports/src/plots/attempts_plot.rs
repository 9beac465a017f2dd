//! `attempts.svg`: what the client did to the provider, in up to three panels on one time
//! story.
//!
//! 1. Attempts per second as a line over a stacked breakdown by answer (2xx, 429, 503,
//!    other): under a storm the red band fills most of the area under the line, in a calm
//!    run it is a rare dot. A mark per bucket would cover the whole plot under a storm.
//! 2. Retries per second as a filled area, on its own scale so a calm run's few retries are
//!    not flattened by the attempts.
//! 3. When the run directory has `attempts.csv`: retries per 100 ms over up to 30 s around
//!    the busiest 100 ms. Sub-second retry waves (a fixed sleep across many workers) average
//!    out in 1 s buckets; this is where they show as a comb.

use plotters::style::RGBColor;

use super::chart::{draw_panels, ChartSpec, Series, Style, XLabels, XUnit, SPARSE_MARKS};
use super::downsample::{envelope, envelope_indices, merge_indices, MAX_POINTS};
use super::fine_retries::{FineRetries, FINE_BIN_MS};
use super::run_plots::{Plot, TimeAxis, BLUE, GREEN, GREY, ORANGE, PURPLE, RED};
use crate::error::ReportError;
use crate::schema::TimeseriesRow;

/// The fine retries panel's colour: a darker orange than the 1 s retries (colours name the
/// series in the SVG, so the two must differ).
const DARK_ORANGE: RGBColor = RGBColor(217, 95, 2);

/// Panel heights (px): the breakdown gets the most room; the retries panels are each tall
/// enough for a wave to rise over a third of a 420 px plot's height.
const BREAKDOWN_PX: u32 = 400;
const RETRIES_PX: u32 = 300;

/// What the attempts plot is drawn from.
pub(crate) struct AttemptsInput<'a> {
    pub name: &'a str,
    /// Time buckets in time order.
    pub rows: &'a [&'a TimeseriesRow],
    pub axis: &'a TimeAxis,
    pub x_range: (f64, f64),
    /// Bucket width (ms).
    pub bucket_ms: u64,
    /// Run end (ms): the end of the last bucket.
    pub last_ms: u64,
    pub empty_note: &'a Option<String>,
    pub fine: Option<&'a FineRetries>,
    /// Fault windows on the time axis, shaded.
    pub shaded: &'a [(f64, f64)],
}

/// Attempts of a bucket that got neither 2xx, 429 nor 503 (other 4xx/5xx, drops, hangs).
fn other(r: &TimeseriesRow) -> u64 {
    r.attempts
        .saturating_sub(r.status_2xx + r.status_429 + r.status_503)
}

pub(crate) fn attempts_plot(input: &AttemptsInput) -> Result<Plot, ReportError> {
    let rows = input.rows;
    let axis = input.axis;
    let per_s = 1000.0 / input.bucket_ms.max(1) as f64;

    // One set of buckets for the breakdown and the attempts line, so the line is the top of
    // the stack: the envelope of attempts, plus every bucket with a 429 or 503 while those
    // are rare enough to get a dot each (a thinned-out rare event would vanish).
    let totals: Vec<f64> = rows.iter().map(|r| r.attempts as f64).collect();
    let mut keep = envelope_indices(&totals, MAX_POINTS);
    for status in [
        (|r: &TimeseriesRow| r.status_429) as fn(&TimeseriesRow) -> u64,
        |r: &TimeseriesRow| r.status_503,
    ] {
        let hits: Vec<usize> = (0..rows.len()).filter(|i| status(rows[*i]) > 0).collect();
        if hits.len() <= SPARSE_MARKS {
            keep = merge_indices(&keep, &hits);
        }
    }
    let pts = |f: &dyn Fn(&TimeseriesRow) -> u64| -> Vec<(f64, f64)> {
        keep.iter()
            .map(|i| (axis.x(rows[*i].t_ms), f(rows[*i]) as f64 * per_s))
            .collect()
    };
    let mut breakdown = vec![
        Series::new(
            "2xx/s",
            "2xx",
            GREEN,
            Style::Stacked,
            pts(&|r| r.status_2xx),
        ),
        Series::new("429/s", "429", RED, Style::Stacked, pts(&|r| r.status_429)),
        Series::new(
            "503/s",
            "503",
            PURPLE,
            Style::Stacked,
            pts(&|r| r.status_503),
        ),
    ];
    if rows.iter().any(|r| other(r) > 0) {
        breakdown.push(Series::new(
            "other answers/s (4xx, 5xx, dropped)",
            "other",
            GREY,
            Style::Stacked,
            pts(&other),
        ));
    }
    breakdown.push(Series::new(
        "attempts/s",
        "attempts",
        BLUE,
        Style::Line,
        pts(&|r| r.attempts),
    ));
    let top = ChartSpec {
        title: format!("{}: attempts per second, by answer", input.name),
        x_desc: axis.desc.to_string(),
        y_desc: "attempts per second (1/s)".to_string(),
        y2_desc: String::new(),
        x_range: input.x_range,
        x_labels: XLabels::Numeric(axis.decimals),
        x_unit: axis.unit,
        y_unit: "/s".to_string(),
        y2_unit: String::new(),
        series: breakdown,
        empty_note: input.empty_note.clone(),
        shaded: input.shaded.to_vec(),
    };

    let retries_1s: Vec<(f64, f64)> = rows
        .iter()
        .map(|r| (axis.x(r.t_ms), r.retries as f64 * per_s))
        .collect();
    let retries = ChartSpec {
        title: format!(
            "retries per second ({} s buckets)",
            crate::number::fmt_num(input.bucket_ms as f64 / 1000.0, 1)
        ),
        x_desc: axis.desc.to_string(),
        y_desc: "retries per second (1/s)".to_string(),
        y2_desc: String::new(),
        x_range: input.x_range,
        x_labels: XLabels::Numeric(axis.decimals),
        x_unit: axis.unit,
        y_unit: " retries/s".to_string(),
        y2_unit: String::new(),
        series: vec![Series::new(
            "retries/s",
            "retries",
            ORANGE,
            Style::Area,
            envelope(&retries_1s, MAX_POINTS),
        )],
        empty_note: None,
        shaded: input.shaded.to_vec(),
    };

    let fine = input.fine.map(|fine| fine_panel(fine, input.last_ms));
    let mut panels: Vec<(u32, &ChartSpec)> = vec![(BREAKDOWN_PX, &top), (RETRIES_PX, &retries)];
    if let Some(f) = &fine {
        panels.push((RETRIES_PX, f));
    }
    Ok(Plot {
        file: "attempts.svg".to_string(),
        title: "Attempts and retries".to_string(),
        svg: draw_panels("attempts.svg", &panels)?,
    })
}

/// Retries per 100 ms over the window around the busiest 100 ms, drawn as steps (each bin
/// flat across its 100 ms) so a one-bin wave is a bar, not a needle.
fn fine_panel(fine: &FineRetries, last_ms: u64) -> ChartSpec {
    let start = fine.window_start_ms();
    let bins = fine.window(start, last_ms.max(start + FINE_BIN_MS));
    let end = bins.last().map(|b| b.0 + FINE_BIN_MS).unwrap_or(start);
    let mut steps = Vec::with_capacity(bins.len() * 2);
    for (t, n) in &bins {
        steps.push((*t as f64 / 1000.0, *n as f64));
        steps.push(((t + FINE_BIN_MS) as f64 / 1000.0, *n as f64));
    }
    let total: u64 = bins.iter().map(|b| b.1).sum();
    let what = if total == 0 {
        "none in this run".to_string()
    } else if start == 0 && end >= last_ms {
        "the whole run".to_string()
    } else {
        format!(
            "{}-{} s, around the busiest 100 ms",
            crate::number::fmt_num(start as f64 / 1000.0, 0),
            crate::number::fmt_num(end as f64 / 1000.0, 0)
        )
    };
    ChartSpec {
        title: format!("retries per 100 ms, {what}"),
        x_desc: "virtual time (s)".to_string(),
        y_desc: "retries per 100 ms".to_string(),
        y2_desc: String::new(),
        x_range: (start as f64 / 1000.0, end as f64 / 1000.0),
        x_labels: XLabels::Numeric(0),
        x_unit: XUnit::Seconds,
        y_unit: " retries per 100 ms".to_string(),
        y2_unit: String::new(),
        series: vec![Series::new(
            "retries per 100 ms",
            "retries_100ms",
            DARK_ORANGE,
            Style::Area,
            steps,
        )],
        empty_note: None,
        shaded: Vec::new(),
    }
}
