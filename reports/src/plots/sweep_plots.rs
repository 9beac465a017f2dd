//! Sweep plots: each main figure against the first varied key, median over seeds as a line
//! with a min-max band; with more varied keys, one line per combination of the others.

use std::collections::BTreeMap;

use super::chart::{draw, ChartSpec, Series, Style, XLabels, XUnit};
use super::run_plots::{Plot, PALETTE};
use crate::error::ReportError;
use crate::figures::figure;
use crate::number::median;
use crate::sweep::SweepRow;

/// Every file a sweep's plots may be written as (`sweep-<figure>.svg`, and `.png` with
/// `--png`): a sweep that replaces an earlier one in its folder removes those it did not
/// write, so no plot of the earlier sweep sits beside the new sweep's figures.
pub fn plot_files() -> impl Iterator<Item = String> {
    SWEEP_FIGURES
        .iter()
        .flat_map(|(key, _)| ["svg", "png"].map(|ext| format!("sweep-{key}.{ext}")))
}

/// The plotted figures: `summary.json` key and axis description (with unit).
const SWEEP_FIGURES: [(&str, &str); 6] = [
    (
        "attempts_per_logical",
        "outbound attempts per logical request",
    ),
    ("goodput_per_min", "goodput (completed requests/min)"),
    ("deadline_misses", "deadline misses (requests)"),
    ("outbound_attempts", "outbound attempts (at the provider)"),
    ("duplicates", "duplicate side effects"),
    (
        "scope_wait_violations",
        "attempts on a scope told to wait (Retry-After of another request)",
    ),
];

/// Distinct values of a key in order of first appearance, sorted numerically when every value
/// is a number (so `rpm=1200` comes after `rpm=600`).
fn ordered_values<'a>(values: impl Iterator<Item = &'a str>) -> (Vec<String>, bool) {
    let mut out: Vec<String> = Vec::new();
    for v in values {
        if !out.iter().any(|o| o == v) {
            out.push(v.to_string());
        }
    }
    let numeric = !out.is_empty() && out.iter().all(|v| v.trim().parse::<f64>().is_ok());
    if numeric {
        out.sort_by(|a, b| {
            let (x, y) = (
                a.trim().parse::<f64>().unwrap_or(0.0),
                b.trim().parse::<f64>().unwrap_or(0.0),
            );
            x.total_cmp(&y)
        });
    }
    (out, numeric)
}

/// The label of a row's line: the values of every varied key but the first.
fn group_of(row: &SweepRow, others: &[String]) -> String {
    others
        .iter()
        .map(|k| format!("{k}={}", row.config.get(k).map_or("", |v| v.as_str())))
        .collect::<Vec<_>>()
        .join(", ")
}

pub(crate) fn sweep_plots(
    rows: &[SweepRow],
    varied_keys: &[String],
) -> Result<Vec<Plot>, ReportError> {
    let (x_key, others) = match varied_keys.split_first() {
        Some((first, rest)) => (Some(first.as_str()), rest),
        None => (None, &[][..]),
    };
    let x_of = |r: &SweepRow| -> String {
        x_key
            .and_then(|k| r.config.get(k).cloned())
            .unwrap_or_else(|| "as written".to_string())
    };
    let xs: Vec<String> = rows.iter().map(x_of).collect();
    let (x_values, numeric) = ordered_values(xs.iter().map(|s| s.as_str()));
    let position = |v: &str| -> f64 {
        if numeric {
            v.trim().parse().unwrap_or(0.0)
        } else {
            x_values.iter().position(|x| x == v).unwrap_or(0) as f64
        }
    };
    let (x_range, x_labels) = if numeric {
        let lo = position(&x_values[0]);
        let hi = position(&x_values[x_values.len() - 1]);
        let pad = ((hi - lo) * 0.05).max(0.5);
        let whole = x_values
            .iter()
            .all(|v| position(v).fract() == 0.0 && position(v).abs() < 1e12);
        (
            (lo - pad, hi + pad),
            XLabels::Numeric(if whole { 0 } else { 2 }),
        )
    } else if x_values.is_empty() {
        ((-0.5, 0.5), XLabels::Categories(Vec::new()))
    } else {
        (
            (-0.5, x_values.len() as f64 - 0.5),
            XLabels::Categories(x_values.clone()),
        )
    };
    let (groups, _) = ordered_values(
        rows.iter()
            .map(|r| group_of(r, others))
            .collect::<Vec<_>>()
            .iter()
            .map(|s| s.as_str()),
    );
    let seeds = {
        let mut s: Vec<u64> = rows.iter().map(|r| r.seed).collect();
        s.sort_unstable();
        s.dedup();
        s.len()
    };
    let x_desc = x_key.unwrap_or("configuration").to_string();

    let mut plots = Vec::new();
    for (key, y_desc) in SWEEP_FIGURES {
        let mut series = Vec::new();
        for (gi, group) in groups.iter().enumerate() {
            // x value -> the figure over seeds.
            let mut at: BTreeMap<usize, Vec<f64>> = BTreeMap::new();
            for r in rows.iter().filter(|r| &group_of(r, others) == group) {
                let xi = x_values.iter().position(|x| *x == x_of(r)).unwrap_or(0);
                at.entry(xi)
                    .or_default()
                    .push(figure(&r.summary, key).unwrap_or(0.0));
            }
            let mut points = Vec::new();
            let mut band = Vec::new();
            for (xi, vals) in &at {
                let x = position(&x_values[*xi]);
                let lo = vals.iter().copied().fold(f64::INFINITY, f64::min);
                let hi = vals.iter().copied().fold(f64::NEG_INFINITY, f64::max);
                points.push((x, median(vals).unwrap_or(0.0)));
                band.push((x, lo, hi));
            }
            let label = if group.is_empty() {
                "median".to_string()
            } else {
                format!("{group} (median)")
            };
            let mut s = Series::new(
                label,
                format!("group-{gi}"),
                PALETTE[gi % PALETTE.len()],
                Style::Dotted,
                points,
            );
            s.band = band;
            series.push(s);
        }
        let spec = ChartSpec {
            title: format!("{key} against {x_desc} (median, band: min-max over {seeds} seeds)"),
            x_desc: x_desc.clone(),
            y_desc: y_desc.to_string(),
            y2_desc: String::new(),
            x_range,
            x_labels: match &x_labels {
                XLabels::Numeric(d) => XLabels::Numeric(*d),
                XLabels::Categories(c) => XLabels::Categories(c.clone()),
            },
            x_unit: XUnit::Plain,
            // Sweeps have a few points per line, too few for the outlier rule to clip.
            y_unit: String::new(),
            y2_unit: String::new(),
            series,
            empty_note: rows.is_empty().then(|| "no runs in this sweep".to_string()),
            shaded: Vec::new(),
        };
        let file = format!("sweep-{key}.svg");
        let svg = draw(&file, &spec)?;
        plots.push(Plot {
            title: format!("{key} against {x_desc}"),
            file,
            svg,
        });
    }
    Ok(plots)
}
