//! One chart frame for every plot: white background, title, labelled axes (with units), an
//! optional right-hand axis, lines, filled areas, markers and min/max bands, a legend, and the
//! series classes (see `series_tag`). Returns the SVG document as a string.

use plotters::coord::Shift;
use plotters::prelude::*;

use super::series_tag::{hex, tag_series, SeriesColour};
use crate::error::ReportError;
use crate::number::fmt_num;

/// Plot size (px). Wide enough to see retry waves second by second over several minutes.
pub(crate) const PLOT_SIZE: (u32, u32) = (960, 420);

/// Which y axis a series is measured on.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Axis {
    Left,
    Right,
}

/// How a series is drawn.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Style {
    /// A plain line.
    Line,
    /// A line with the area under it filled lightly: for the series the eye should find first.
    Area,
    /// A stick from zero with a dot on top at every point above zero, nothing elsewhere:
    /// events that must not be missed (429s, 503s) and must not hide under a zero line.
    Marked,
    /// A line with a dot at every point (few points, e.g. sweep values).
    Dotted,
}

/// One series of a chart.
pub(crate) struct Series {
    /// Legend text, with the unit when it is not on the axis (`attempts/s`).
    pub label: String,
    /// Class suffix in the SVG: `series-{class}`.
    pub class: String,
    pub colour: RGBColor,
    pub style: Style,
    pub axis: Axis,
    /// (x, y) points in axis units, in increasing x.
    pub points: Vec<(f64, f64)>,
    /// Optional (x, low, high) band drawn behind the line (min and max over seeds).
    pub band: Vec<(f64, f64, f64)>,
}

impl Series {
    pub(crate) fn new(
        label: impl Into<String>,
        class: impl Into<String>,
        colour: RGBColor,
        style: Style,
        points: Vec<(f64, f64)>,
    ) -> Self {
        Series {
            label: label.into(),
            class: class.into(),
            colour,
            style,
            axis: Axis::Left,
            points,
            band: Vec::new(),
        }
    }
}

/// How x values are labelled.
pub(crate) enum XLabels {
    /// Numbers with this many decimals.
    Numeric(usize),
    /// Category names at x = 0, 1, 2, ...
    Categories(Vec<String>),
}

/// A whole chart.
pub(crate) struct ChartSpec {
    pub title: String,
    pub x_desc: String,
    pub y_desc: String,
    /// Description of the right axis; only used when a series is on `Axis::Right`.
    pub y2_desc: String,
    pub x_range: (f64, f64),
    pub x_labels: XLabels,
    pub series: Vec<Series>,
    /// Text drawn in the middle when there is nothing to plot.
    pub empty_note: Option<String>,
}

fn plot_err(file: &str) -> impl Fn(String) -> ReportError + '_ {
    move |message| ReportError::Plot {
        file: file.to_string(),
        message,
    }
}

/// Top of a y axis: headroom above the highest value that grows with the legend's entries
/// (so the legend, upper right, does not sit on a peak), and at least 1 so an all-zero series
/// still gets an axis.
fn y_top(series: &[&Series], legend_entries: usize) -> f64 {
    let max = series
        .iter()
        .flat_map(|s| {
            s.points
                .iter()
                .map(|p| p.1)
                .chain(s.band.iter().map(|b| b.2))
        })
        .filter(|v| v.is_finite())
        .fold(0.0f64, f64::max);
    (max * (1.1 + 0.08 * legend_entries as f64)).max(1.0)
}

/// Decimals for tick labels: whole numbers unless the axis spans only a few units.
fn tick_decimals(top: f64) -> usize {
    if top <= 5.0 {
        2
    } else if top <= 50.0 {
        1
    } else {
        0
    }
}

/// Draws `spec` and returns the SVG. `file` names the plot in errors.
pub(crate) fn draw(file: &str, spec: &ChartSpec) -> Result<String, ReportError> {
    let mut svg = String::new();
    {
        let root = SVGBackend::with_string(&mut svg, PLOT_SIZE).into_drawing_area();
        draw_on(&root, spec).map_err(plot_err(file))?;
        root.present().map_err(|e| plot_err(file)(e.to_string()))?;
    }
    let colours: Vec<SeriesColour> = spec
        .series
        .iter()
        .map(|s| SeriesColour {
            hex: hex((s.colour.0, s.colour.1, s.colour.2)),
            class: s.class.clone(),
        })
        .collect();
    Ok(tag_series(&svg, &colours))
}

fn draw_on<DB: DrawingBackend>(
    root: &DrawingArea<DB, Shift>,
    spec: &ChartSpec,
) -> Result<(), String> {
    let e = |err: DrawingAreaErrorKind<DB::ErrorType>| err.to_string();
    root.fill(&WHITE).map_err(e)?;
    let left: Vec<&Series> = spec
        .series
        .iter()
        .filter(|s| s.axis == Axis::Left)
        .collect();
    let right: Vec<&Series> = spec
        .series
        .iter()
        .filter(|s| s.axis == Axis::Right)
        .collect();
    let (x0, mut x1) = spec.x_range;
    if x1 <= x0 {
        x1 = x0 + 1.0;
    }
    let y1 = y_top(&left, spec.series.len());
    let y2 = y_top(&right, spec.series.len());

    let mut builder = ChartBuilder::on(root);
    builder
        .caption(&spec.title, ("sans-serif", 20))
        .margin(12)
        .x_label_area_size(44)
        .y_label_area_size(70);
    if !right.is_empty() {
        builder.right_y_label_area_size(70);
    }
    let mut chart = builder
        .build_cartesian_2d(x0..x1, 0f64..y1)
        .map_err(e)?
        .set_secondary_coord(x0..x1, 0f64..y2);

    let y_dec = tick_decimals(y1);
    let y_fmt = move |v: &f64| fmt_num(*v, y_dec);
    let x_fmt = |v: &f64| match &spec.x_labels {
        XLabels::Numeric(d) => fmt_num(*v, *d),
        XLabels::Categories(names) => {
            let i = v.round();
            if (v - i).abs() < 1e-6 && i >= 0.0 && (i as usize) < names.len() {
                names[i as usize].clone()
            } else {
                String::new()
            }
        }
    };
    let mut mesh = chart.configure_mesh();
    mesh.x_desc(spec.x_desc.as_str())
        .y_desc(spec.y_desc.as_str())
        .x_label_formatter(&x_fmt)
        .y_label_formatter(&y_fmt)
        .axis_desc_style(("sans-serif", 15))
        .label_style(("sans-serif", 13))
        // Fine grid lines only add bytes and noise at this size.
        .light_line_style(TRANSPARENT);
    if let XLabels::Categories(names) = &spec.x_labels {
        mesh.x_labels(names.len() * 2 + 1);
    }
    mesh.draw().map_err(e)?;
    if !right.is_empty() {
        let y2_dec = tick_decimals(y2);
        let y2_fmt = move |v: &f64| fmt_num(*v, y2_dec);
        chart
            .configure_secondary_axes()
            .y_desc(spec.y2_desc.as_str())
            .y_label_formatter(&y2_fmt)
            .axis_desc_style(("sans-serif", 15))
            .label_style(("sans-serif", 13))
            .draw()
            .map_err(e)?;
    }

    for s in &spec.series {
        let colour = s.colour;
        let line = colour.stroke_width(2);
        // Bands and areas first, so lines stay on top.
        if !s.band.is_empty() {
            let mut outline: Vec<(f64, f64)> = s.band.iter().map(|b| (b.0, b.1)).collect();
            outline.extend(s.band.iter().rev().map(|b| (b.0, b.2)));
            let band = Polygon::new(outline, colour.mix(0.18).filled());
            match s.axis {
                Axis::Left => chart.draw_series(std::iter::once(band)).map_err(e)?,
                Axis::Right => chart
                    .draw_secondary_series(std::iter::once(band))
                    .map_err(e)?,
            };
        }
        if s.style == Style::Area && s.points.len() > 1 {
            let area = AreaSeries::new(s.points.iter().copied(), 0.0, colour.mix(0.25));
            match s.axis {
                Axis::Left => chart.draw_series(area).map_err(e)?,
                Axis::Right => chart.draw_secondary_series(area).map_err(e)?,
            };
        }
        let anno = if s.style == Style::Marked {
            let sticks: Vec<PathElement<(f64, f64)>> = s
                .points
                .iter()
                .filter(|p| p.1 > 0.0)
                .map(|p| PathElement::new(vec![(p.0, 0.0), *p], line))
                .collect();
            match s.axis {
                Axis::Left => chart.draw_series(sticks).map_err(e)?,
                Axis::Right => chart.draw_secondary_series(sticks).map_err(e)?,
            }
        } else {
            let lines = LineSeries::new(s.points.iter().copied(), line);
            match s.axis {
                Axis::Left => chart.draw_series(lines).map_err(e)?,
                Axis::Right => chart.draw_secondary_series(lines).map_err(e)?,
            }
        };
        anno.label(s.label.as_str()).legend(move |(x, y)| {
            PathElement::new(vec![(x, y), (x + 22, y)], colour.stroke_width(3))
        });
        let dots: Vec<(f64, f64)> = match s.style {
            Style::Marked => s.points.iter().copied().filter(|p| p.1 > 0.0).collect(),
            Style::Dotted => s.points.clone(),
            Style::Line | Style::Area => Vec::new(),
        };
        if !dots.is_empty() {
            let circles = dots.into_iter().map(|p| Circle::new(p, 3, colour.filled()));
            match s.axis {
                Axis::Left => chart.draw_series(circles).map_err(e)?,
                Axis::Right => chart.draw_secondary_series(circles).map_err(e)?,
            };
        }
    }

    if let Some(note) = &spec.empty_note {
        let (w, h) = root.dim_in_pixel();
        root.draw_text(
            note,
            &TextStyle::from(("sans-serif", 18).into_font())
                .color(&BLACK)
                .pos(plotters::style::text_anchor::Pos::new(
                    plotters::style::text_anchor::HPos::Center,
                    plotters::style::text_anchor::VPos::Center,
                )),
            (w as i32 / 2, h as i32 / 2),
        )
        .map_err(e)?;
    }

    if !spec.series.is_empty() {
        chart
            .configure_series_labels()
            .position(SeriesLabelPosition::UpperRight)
            .background_style(WHITE.mix(0.85))
            .border_style(BLACK)
            .label_font(("sans-serif", 14))
            .draw()
            .map_err(e)?;
    }
    Ok(())
}
