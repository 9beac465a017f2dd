//! One chart frame for every plot: white background, title, labelled axes (with units), an
//! optional right-hand axis, lines, filled areas, markers and min/max bands, a legend, and the
//! series classes (see `series_tag`). Returns the SVG document as a string.
//!
//! A y axis fits the bulk of its data, not a few points far above it (see `y_scale`): those
//! are drawn at the top edge with a black triangle each, and a note in the plot's upper left
//! names the highest (`peak 10,611/s at 74:59 (clipped)`), so nothing is hidden.

use plotters::coord::Shift;
use plotters::prelude::*;

use super::hover::{hover_layer, value_text, Hover};
use super::series_tag::{hex, tag_series, SeriesColour};
use super::y_scale::{y_scale, YScale};
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
    /// A line with a dot at every point (few points, e.g. sweep values).
    Dotted,
    /// A filled band stacked on the `Stacked` series before it (they must share x points):
    /// a breakdown of a total. Buckets above zero also get a dot on the band's top while
    /// there are at most `SPARSE_MARKS` of them, so a rare event is not a hairline.
    Stacked,
}

/// Most buckets above zero for which a `Stacked` series still draws dots; beyond this the
/// dots merge into a wall that hides everything under it.
pub(crate) const SPARSE_MARKS: usize = 40;

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

/// What a numeric x value is, for naming a point in a note ("at 74:59").
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum XUnit {
    /// Minutes, named as minutes:seconds.
    Minutes,
    /// Seconds, named with an `s`.
    Seconds,
    /// Anything else, named with the tick labels' decimals.
    Plain,
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
    pub x_unit: XUnit,
    /// What follows a left-axis value in a note, with its space if it needs one (`/s`,
    /// ` jobs`).
    pub y_unit: String,
    /// The same for the right axis.
    pub y2_unit: String,
    pub series: Vec<Series>,
    /// Text drawn in the middle when there is nothing to plot.
    pub empty_note: Option<String>,
    /// X ranges shaded behind the series: when the provider was injecting faults (429s,
    /// 503s, drops), so a reader sees what the client answered to.
    pub shaded: Vec<(f64, f64)>,
}

/// The fault bands' colour and legend label.
const FAULT_SHADE: RGBColor = RGBColor(214, 39, 40);
const FAULT_LABEL: &str = "provider faults injected";

fn plot_err(file: &str) -> impl Fn(String) -> ReportError + '_ {
    move |message| ReportError::Plot {
        file: file.to_string(),
        message,
    }
}

/// A y axis (see `y_scale`) with headroom above its top value that grows with the legend's
/// entries (so the legend, upper right, does not sit on a peak), and at least 1 so an all-zero
/// series still gets an axis.
fn y_axis(series: &[(&Series, &[f64])], legend_entries: usize) -> YScale {
    let drawn: Vec<Vec<(f64, f64)>> = series
        .iter()
        .map(|(s, base)| {
            s.points
                .iter()
                .enumerate()
                .map(|(i, p)| (p.0, p.1 + base.get(i).copied().unwrap_or(0.0)))
                .chain(s.band.iter().map(|b| (b.0, b.2)))
                .collect()
        })
        .collect();
    y_scale(&drawn, 1.1 + 0.08 * legend_entries as f64)
}

/// `y` drawn on an axis that ends at `top`: clipped points sit on the top edge. NaN stays NaN.
fn at_most(y: f64, top: f64) -> f64 {
    if y > top {
        top
    } else {
        y
    }
}

/// Names a point's x in a note: `74:59`, `12.5 s`, a category, or a plain number.
fn x_text(spec: &ChartSpec, x: f64) -> String {
    match (&spec.x_labels, spec.x_unit) {
        (XLabels::Categories(names), _) => {
            let i = x.round();
            if i >= 0.0 && (i as usize) < names.len() {
                names[i as usize].clone()
            } else {
                fmt_num(x, 2)
            }
        }
        (XLabels::Numeric(_), XUnit::Minutes) => {
            let s = (x * 60.0).round().max(0.0) as u64;
            format!("{}:{:02}", s / 60, s % 60)
        }
        (XLabels::Numeric(_), XUnit::Seconds) => {
            let tenths = (x * 10.0).round();
            let decimals = if tenths % 10.0 == 0.0 { 0 } else { 1 };
            format!("{} s", fmt_num(x, decimals))
        }
        (XLabels::Numeric(d), XUnit::Plain) => fmt_num(x, *d),
    }
}

/// The note for an axis with clipped points: the highest, where, and how many others.
fn clipped_note(spec: &ChartSpec, scale: &YScale, unit: &str) -> Option<String> {
    let (x, y) = scale.peak()?;
    let mut note = format!(
        "peak {}{unit} at {} (clipped",
        value_text(y),
        x_text(spec, x)
    );
    match scale.clipped.len() - 1 {
        0 => {}
        1 => note.push_str("; 1 more point above the axis"),
        n => note.push_str(&format!("; {n} more points above the axis")),
    }
    note.push(')');
    Some(note)
}

/// Colour of the clipped-point markers and their note: black, which no series uses.
const CLIPPED_MARK: RGBColor = BLACK;

/// A clipped point's marker, in pixels from the point on the top edge: a triangle pointing up
/// out of the plot.
fn clipped_marker() -> Vec<(i32, i32)> {
    vec![(0, -4), (-6, 7), (6, 7)]
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
    draw_panels(file, &[(PLOT_SIZE.1, spec)])
}

/// Draws several charts stacked top to bottom in one SVG, `PLOT_SIZE.0` wide, each
/// `(height px, chart)`. Series colours must be distinct across all panels unless they share
/// a class, since the colour is what tags a shape with its series.
pub(crate) fn draw_panels(file: &str, panels: &[(u32, &ChartSpec)]) -> Result<String, ReportError> {
    let height: u32 = panels.iter().map(|p| p.0).sum();
    let mut svg = String::new();
    let mut hovers = Vec::new();
    {
        let root =
            SVGBackend::with_string(&mut svg, (PLOT_SIZE.0, height.max(1))).into_drawing_area();
        root.fill(&WHITE)
            .map_err(|e| plot_err(file)(e.to_string()))?;
        let mut rest = root.clone();
        for (h, spec) in panels {
            let (area, below) = rest.split_vertically(*h);
            hovers.extend(draw_on(&area, spec).map_err(plot_err(file))?);
            rest = below;
        }
        root.present().map_err(|e| plot_err(file)(e.to_string()))?;
    }
    let colours: Vec<SeriesColour> = panels
        .iter()
        .flat_map(|p| p.1.series.iter())
        .map(|s| SeriesColour {
            hex: hex((s.colour.0, s.colour.1, s.colour.2)),
            class: s.class.clone(),
        })
        .collect();
    // Titles and labels carry names a scenario chose; plotters escapes markup in them but
    // writes characters XML 1.0 forbids (U+0001, U+FFFE) as they are, and no parser then
    // reads the file.
    svg.retain(crate::escape::xml_allows);
    Ok(hover_layer(&tag_series(&svg, &colours), &hovers))
}

/// Each point's stack base: the sum of the `Stacked` series drawn before it (by index),
/// per series, empty for unstacked series.
fn stack_bases(series: &[Series]) -> Vec<Vec<f64>> {
    let mut running: Vec<f64> = Vec::new();
    series
        .iter()
        .map(|s| {
            if s.style != Style::Stacked {
                return Vec::new();
            }
            running.resize(running.len().max(s.points.len()), 0.0);
            let base = running[..s.points.len()].to_vec();
            for (r, p) in running.iter_mut().zip(&s.points) {
                *r += p.1;
            }
            base
        })
        .collect()
}

/// Draws one chart on `root`; returns a hover target (pixel position and value) for every
/// point of every series.
fn draw_on<DB: DrawingBackend>(
    root: &DrawingArea<DB, Shift>,
    spec: &ChartSpec,
) -> Result<Vec<Hover>, String> {
    let e = |err: DrawingAreaErrorKind<DB::ErrorType>| err.to_string();
    root.fill(&WHITE).map_err(e)?;
    let bases = stack_bases(&spec.series);
    let left: Vec<(&Series, &[f64])> = spec
        .series
        .iter()
        .zip(&bases)
        .filter(|(s, _)| s.axis == Axis::Left)
        .map(|(s, b)| (s, b.as_slice()))
        .collect();
    let right: Vec<(&Series, &[f64])> = spec
        .series
        .iter()
        .zip(&bases)
        .filter(|(s, _)| s.axis == Axis::Right)
        .map(|(s, b)| (s, b.as_slice()))
        .collect();
    let (x0, mut x1) = spec.x_range;
    if x1 <= x0 {
        x1 = x0 + 1.0;
    }
    let left_scale = y_axis(&left, spec.series.len());
    let right_scale = y_axis(&right, spec.series.len());
    let (y1, y2) = (left_scale.top, right_scale.top);

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

    // Fault windows first, under everything: a pale band over the whole height.
    let bands: Vec<Rectangle<(f64, f64)>> = spec
        .shaded
        .iter()
        .map(|(a, b)| (a.max(x0), b.min(x1)))
        .filter(|(a, b)| b > a)
        .map(|(a, b)| Rectangle::new([(a, 0.0), (b, y1)], FAULT_SHADE.mix(0.10).filled()))
        .collect();
    if !bands.is_empty() {
        chart
            .draw_series(bands)
            .map_err(e)?
            .label(FAULT_LABEL)
            .legend(|(x, y)| {
                Rectangle::new(
                    [(x, y - 6), (x + 22, y + 6)],
                    FAULT_SHADE.mix(0.25).filled(),
                )
            });
    }

    let mut hovers = Vec::new();
    for (s, base) in spec.series.iter().zip(&bases) {
        let colour = s.colour;
        let line = colour.stroke_width(2);
        let top = match s.axis {
            Axis::Left => y1,
            Axis::Right => y2,
        };
        // A hover target on each point where it is drawn (a stacked band's top), naming
        // the series' own value.
        let unit = match s.axis {
            Axis::Left => &spec.y_unit,
            Axis::Right => &spec.y2_unit,
        };
        for (i, p) in s.points.iter().enumerate() {
            if !p.0.is_finite() || !p.1.is_finite() {
                continue;
            }
            let drawn_at = (p.0, at_most(p.1 + base.get(i).copied().unwrap_or(0.0), top));
            let (x_px, y_px) = match s.axis {
                Axis::Left => chart.plotting_area().map_coordinate(&drawn_at),
                Axis::Right => chart
                    .borrow_secondary()
                    .plotting_area()
                    .map_coordinate(&drawn_at),
            };
            hovers.push(Hover {
                x_px,
                y_px,
                text: format!(
                    "{}: {}{unit} at {}",
                    s.label,
                    value_text(p.1),
                    x_text(spec, p.0)
                ),
            });
        }
        if s.style == Style::Stacked {
            draw_stacked(&mut chart, s, base, top).map_err(e)?;
            continue;
        }
        let points: Vec<(f64, f64)> = s.points.iter().map(|p| (p.0, at_most(p.1, top))).collect();
        // Bands and areas first, so lines stay on top.
        if !s.band.is_empty() {
            let mut outline: Vec<(f64, f64)> =
                s.band.iter().map(|b| (b.0, at_most(b.1, top))).collect();
            outline.extend(s.band.iter().rev().map(|b| (b.0, at_most(b.2, top))));
            let band = Polygon::new(outline, colour.mix(0.18).filled());
            match s.axis {
                Axis::Left => chart.draw_series(std::iter::once(band)).map_err(e)?,
                Axis::Right => chart
                    .draw_secondary_series(std::iter::once(band))
                    .map_err(e)?,
            };
        }
        if s.style == Style::Area && points.len() > 1 {
            let area = AreaSeries::new(points.iter().copied(), 0.0, colour.mix(0.25));
            match s.axis {
                Axis::Left => chart.draw_series(area).map_err(e)?,
                Axis::Right => chart.draw_secondary_series(area).map_err(e)?,
            };
        }
        let lines = LineSeries::new(points.iter().copied(), line);
        let anno = match s.axis {
            Axis::Left => chart.draw_series(lines).map_err(e)?,
            Axis::Right => chart.draw_secondary_series(lines).map_err(e)?,
        };
        anno.label(s.label.as_str()).legend(move |(x, y)| {
            PathElement::new(vec![(x, y), (x + 22, y)], colour.stroke_width(3))
        });
        let dots: Vec<(f64, f64)> = match s.style {
            Style::Dotted => points,
            Style::Line | Style::Area | Style::Stacked => Vec::new(),
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

    // Clipped points last, over the legend: a marker on the top edge at each, and a note
    // per axis in the upper left, keyed by the same marker.
    let marker_style = CLIPPED_MARK.filled();
    let markers = |scale: &YScale| -> Vec<_> {
        scale
            .clipped
            .iter()
            .map(|p| {
                EmptyElement::at((p.0, scale.top)) + Polygon::new(clipped_marker(), marker_style)
            })
            .collect()
    };
    chart.draw_series(markers(&left_scale)).map_err(e)?;
    chart
        .draw_secondary_series(markers(&right_scale))
        .map_err(e)?;
    let notes = [
        clipped_note(spec, &left_scale, &spec.y_unit),
        clipped_note(spec, &right_scale, &spec.y2_unit),
    ];
    let font = ("sans-serif", 13).into_font().color(&CLIPPED_MARK);
    for (row, note) in notes.iter().flatten().enumerate() {
        let dy = 6 + 20 * row as i32;
        // About 7 px a character at 13 px: a white backing so a line under the note does
        // not run through its text.
        let width = 28 + 7 * note.chars().count() as i32;
        let element = EmptyElement::at((x0, y1))
            + Rectangle::new([(4, dy - 2), (width, dy + 16)], WHITE.mix(0.85).filled())
            + Polygon::new(
                clipped_marker()
                    .into_iter()
                    .map(|(x, y)| (x + 14, y + dy + 5))
                    .collect::<Vec<_>>(),
                marker_style,
            )
            + Text::new(note.clone(), (26, dy), font.clone());
        chart.plotting_area().draw(&element).map_err(e)?;
    }
    Ok(hovers)
}

/// One `Stacked` series: the band from `base` to `base + y`, a filled square in the legend,
/// and dots on the band's top where it is above zero while that is rare.
fn draw_stacked<DB: DrawingBackend>(
    chart: &mut plotters::chart::DualCoordChartContext<
        '_,
        DB,
        plotters::coord::cartesian::Cartesian2d<
            plotters::coord::types::RangedCoordf64,
            plotters::coord::types::RangedCoordf64,
        >,
        plotters::coord::cartesian::Cartesian2d<
            plotters::coord::types::RangedCoordf64,
            plotters::coord::types::RangedCoordf64,
        >,
    >,
    s: &Series,
    base: &[f64],
    top: f64,
) -> Result<(), DrawingAreaErrorKind<DB::ErrorType>> {
    let colour = s.colour;
    let at = |i: usize| base.get(i).copied().unwrap_or(0.0);
    let mut outline: Vec<(f64, f64)> = s
        .points
        .iter()
        .enumerate()
        .map(|(i, p)| (p.0, at_most(at(i) + p.1, top)))
        .collect();
    outline.extend(
        s.points
            .iter()
            .enumerate()
            .rev()
            .map(|(i, p)| (p.0, at_most(at(i), top))),
    );
    let band = Polygon::new(outline, colour.mix(0.55).filled());
    let anno = match s.axis {
        Axis::Left => chart.draw_series(std::iter::once(band))?,
        Axis::Right => chart.draw_secondary_series(std::iter::once(band))?,
    };
    anno.label(s.label.as_str()).legend(move |(x, y)| {
        Rectangle::new([(x, y - 5), (x + 22, y + 5)], colour.mix(0.55).filled())
    });
    let tops: Vec<(f64, f64)> = s
        .points
        .iter()
        .enumerate()
        .filter(|(_, p)| p.1 > 0.0)
        .map(|(i, p)| (p.0, at_most(at(i) + p.1, top)))
        .collect();
    if !tops.is_empty() && tops.len() <= SPARSE_MARKS {
        let dots = tops.into_iter().map(|p| Circle::new(p, 3, colour.filled()));
        match s.axis {
            Axis::Left => chart.draw_series(dots)?,
            Axis::Right => chart.draw_secondary_series(dots)?,
        };
    }
    Ok(())
}
