//! Comparing two runs (`stampede run ... --baseline DIR`, `stampede diff A B`): every figure's
//! change, and the expectations whose verdict changed, so a pull request shows what a policy
//! change did.

use std::collections::BTreeMap;

use crate::figures::figures;
use crate::number::{fmt_actual, fmt_figure, fmt_num};
use crate::schema::Summary;

/// One figure in both runs.
#[derive(Debug, Clone, PartialEq)]
pub struct FigureChange {
    /// `summary.json` key (dotted for nested values).
    pub key: String,
    /// Display unit (`ms`, `tokens`, `per min`, or empty).
    pub unit: &'static str,
    /// The figure's value in the earlier run (the baseline), in `unit`.
    pub before: f64,
    /// The figure's value in the later run, in `unit`.
    pub after: f64,
}

impl FigureChange {
    /// `after - before`, in the figure's unit.
    pub fn change(&self) -> f64 {
        self.after - self.before
    }

    /// Relative change in percent; `None` when `before` is zero (no base to divide by).
    pub fn percent(&self) -> Option<f64> {
        (self.before != 0.0).then(|| self.change() / self.before.abs() * 100.0)
    }

    /// Which way this figure is better (see [`better_when`]).
    pub fn better(&self) -> Better {
        better_when(&self.key)
    }

    /// `Some(true)` when the change makes the run better, `Some(false)` when worse, `None`
    /// when unchanged or when the figure has no better direction.
    pub fn improved(&self) -> Option<bool> {
        let up = match self.after.total_cmp(&self.before) {
            std::cmp::Ordering::Greater => true,
            std::cmp::Ordering::Less => false,
            std::cmp::Ordering::Equal => return None,
        };
        match self.better() {
            Better::Lower => Some(!up),
            Better::Higher => Some(up),
            Better::Neither => None,
        }
    }

    /// How far the figure moved the wrong way, in percent of `before` (infinite when it moved
    /// off zero); `None` when it did not get worse or has no better direction.
    pub fn regression_percent(&self) -> Option<f64> {
        if self.improved() != Some(false) {
            return None;
        }
        Some(self.percent().map_or(f64::INFINITY, f64::abs))
    }

    /// The change as the comparison tables show it: `+12` and `+4.5%` (`new` when it
    /// moved off zero).
    pub fn change_text(&self) -> (String, String) {
        let pct = match self.percent() {
            Some(p) if p > 0.0 => format!("+{}%", fmt_num(p, 1)),
            Some(p) => format!("{}%", fmt_num(p, 1)),
            None if self.after == 0.0 => "0.0%".to_string(),
            None => "new".to_string(),
        };
        (signed(self.change()), pct)
    }

    /// The direction word: `↓ better`, `↑ worse`, or the bare arrow for a figure with no
    /// better direction or no change.
    pub fn direction_text(&self) -> String {
        match self.improved() {
            Some(true) => format!("{} better", self.arrow()),
            Some(false) => format!("{} worse", self.arrow()),
            None => self.arrow().to_string(),
        }
    }

    /// `↑`, `↓` or `=`.
    pub fn arrow(&self) -> &'static str {
        match self.after.total_cmp(&self.before) {
            std::cmp::Ordering::Greater => "↑",
            std::cmp::Ordering::Less => "↓",
            std::cmp::Ordering::Equal => "=",
        }
    }
}

/// Which way a figure is better, for the comparison's arrows and `diff --fail-on-regression`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Better {
    /// Fewer is better: attempts, retries, duplicates, violations, deadline misses, latency.
    Lower,
    /// More is better: completed, goodput.
    Higher,
    /// Neither way is better in itself (counts of the workload, tokens, status codes, time).
    Neither,
}

/// Which way the figure with this `summary.json` key is better.
pub fn better_when(key: &str) -> Better {
    match key {
        "completed" | "goodput_per_min" => Better::Higher,
        "failed"
        | "outbound_attempts"
        | "attempts_per_logical"
        | "retries"
        | "retry_waves"
        | "peak_retries_per_100ms"
        | "duplicates"
        | "duplicate_writes"
        | "duplicate_completions"
        | "reconciliation_required"
        | "deadline_misses"
        | "retry_after_violations"
        | "scope_wait_violations"
        | "unfinished" => Better::Lower,
        k if k.starts_with("latency_ms.") || k.starts_with("queue_wait_ms.") => Better::Lower,
        _ => Better::Neither,
    }
}

/// An expectation whose verdict differs between the runs (or that exists in only one).
#[derive(Debug, Clone, PartialEq)]
pub struct VerdictChange {
    /// The expectation's name: the summary key it constrains (`latency_ms.p99`).
    pub name: String,
    /// Verdict before (`None`: the earlier run did not have this expectation).
    pub before: Option<bool>,
    /// Verdict after, `true` when it held (`None`: the later run does not have this expectation).
    pub after: Option<bool>,
    /// Measured value in the earlier run (`None`: it did not have this expectation).
    pub actual_before: Option<f64>,
    /// Measured value in the later run (`None`: it does not have this expectation).
    pub actual_after: Option<f64>,
    /// The limit as the later run states it (the earlier one's if the later has none).
    pub limit: String,
}

/// Two runs side by side.
#[derive(Debug, Clone, PartialEq)]
pub struct Comparison {
    /// `scenario seed N preset P (mode)` of the earlier run.
    pub before_label: String,
    /// `scenario seed N preset P (mode)` of the later run.
    pub after_label: String,
    /// Every numeric figure of either run, in the summary's order; a status code seen in only
    /// one run counts as 0 in the other.
    pub figures: Vec<FigureChange>,
    /// Expectations whose verdict changed, by name.
    pub verdicts: Vec<VerdictChange>,
}

fn label(s: &Summary) -> String {
    format!(
        "{} seed {} preset {} ({})",
        s.scenario, s.seed, s.preset, s.mode
    )
}

/// Compares an earlier run (`before`) with a later one (`after`).
pub fn compare(before: &Summary, after: &Summary) -> Comparison {
    let b = figures(before);
    let a = figures(after);
    let mut changes: Vec<FigureChange> = b
        .iter()
        .map(|f| FigureChange {
            key: f.key.clone(),
            unit: f.unit,
            before: f.value,
            after: a.iter().find(|x| x.key == f.key).map_or(0.0, |x| x.value),
        })
        .collect();
    // Figures only the later run has (a status code that did not occur before), placed
    // before wall_ms so the non-deterministic figure stays last.
    let wall = changes.iter().position(|c| c.key == "wall_ms");
    let extra: Vec<FigureChange> = a
        .iter()
        .filter(|f| !b.iter().any(|x| x.key == f.key))
        .map(|f| FigureChange {
            key: f.key.clone(),
            unit: f.unit,
            before: 0.0,
            after: f.value,
        })
        .collect();
    let at = wall.unwrap_or(changes.len());
    changes.splice(at..at, extra);

    let mut names: BTreeMap<&str, ()> = BTreeMap::new();
    for e in before.expectations.iter().chain(&after.expectations) {
        names.insert(e.name.as_str(), ());
    }
    // Keep the later run's expectation order, then any the earlier run alone had.
    let mut ordered: Vec<&str> = after.expectations.iter().map(|e| e.name.as_str()).collect();
    for name in names.keys() {
        if !ordered.contains(name) {
            ordered.push(name);
        }
    }
    let mut verdicts = Vec::new();
    for name in ordered {
        let eb = before.expectations.iter().find(|e| e.name == name);
        let ea = after.expectations.iter().find(|e| e.name == name);
        let (vb, va) = (eb.map(|e| e.pass), ea.map(|e| e.pass));
        if vb != va {
            verdicts.push(VerdictChange {
                name: name.to_string(),
                before: vb,
                after: va,
                actual_before: eb.map(|e| e.actual),
                actual_after: ea.map(|e| e.actual),
                limit: ea.or(eb).map(|e| e.limit.clone()).unwrap_or_default(),
            });
        }
    }
    Comparison {
        before_label: label(before),
        after_label: label(after),
        figures: changes,
        verdicts,
    }
}

impl Comparison {
    /// The figures that are the same for the same seed (all but wall-clock time): what the
    /// page and `summary.md` show, so they stay byte-identical per seed.
    pub fn deterministic_figures(&self) -> impl Iterator<Item = &FigureChange> {
        let wall: Vec<String> = figures(&Summary::default())
            .into_iter()
            .filter(|f| !f.deterministic)
            .map(|f| f.key)
            .collect();
        self.figures.iter().filter(move |f| !wall.contains(&f.key))
    }

    /// Expectations that held in the earlier run and fail in the later one.
    pub fn flipped_to_fail(&self) -> Vec<&VerdictChange> {
        self.verdicts
            .iter()
            .filter(|v| v.before == Some(true) && v.after == Some(false))
            .collect()
    }

    /// Figures that moved the wrong way by more than `percent` percent of their earlier value
    /// (any move off zero counts as more).
    pub fn regressions(&self, percent: f64) -> Vec<&FigureChange> {
        self.figures
            .iter()
            .filter(|f| f.regression_percent().is_some_and(|p| p > percent))
            .collect()
    }
}

/// `pass`, `FAIL` or `absent` for a verdict in one run.
pub fn verdict_word(v: Option<bool>) -> &'static str {
    match v {
        Some(true) => "pass",
        Some(false) => "FAIL",
        None => "absent",
    }
}

fn signed(x: f64) -> String {
    let s = fmt_figure(x);
    if x > 0.0 {
        format!("+{s}")
    } else {
        s
    }
}

/// Longest figure name the table shows whole, in characters: a summary's keys include the
/// provider's status labels, which a run directory from elsewhere may make arbitrarily long.
const SHOWN_KEY_CHARS: usize = 120;

/// `key`, cut to [`SHOWN_KEY_CHARS`] with an ellipsis when longer.
fn shown_key(key: &str) -> String {
    match key.char_indices().nth(SHOWN_KEY_CHARS) {
        Some((cut, _)) => format!("{}…", &key[..cut]),
        None => key.to_string(),
    }
}

/// Appends `n` spaces.
fn pad(line: &mut String, n: usize) {
    line.extend(std::iter::repeat(' ').take(n));
}

/// The comparison as an aligned text table followed by the verdict changes. The last column
/// is the direction of the change, with `better` or `worse` for figures that have a better
/// direction (see [`better_when`]).
pub fn render_comparison(c: &Comparison) -> String {
    let mut rows: Vec<[String; 6]> = vec![[
        "figure".into(),
        "before".into(),
        "after".into(),
        "change".into(),
        "change %".into(),
        String::new(),
    ]];
    for f in &c.figures {
        let key = if f.unit.is_empty() {
            shown_key(&f.key)
        } else {
            format!("{} ({})", shown_key(&f.key), f.unit)
        };
        let (change, pct) = f.change_text();
        rows.push([
            key,
            fmt_figure(f.before),
            fmt_figure(f.after),
            change,
            pct,
            f.direction_text(),
        ]);
    }
    let mut widths = [0usize; 6];
    for r in &rows {
        for (w, cell) in widths.iter_mut().zip(r) {
            *w = (*w).max(cell.chars().count());
        }
    }
    let mut out = format!("before: {}\nafter:  {}\n\n", c.before_label, c.after_label);
    for r in &rows {
        // Padded by hand: `format!`'s width is a u16 and panics past it.
        let mut line = r[0].clone();
        pad(&mut line, widths[0] - r[0].chars().count());
        for (i, cell) in r.iter().enumerate().skip(1).take(4) {
            line.push_str("  ");
            pad(&mut line, widths[i] - cell.chars().count());
            line.push_str(cell);
        }
        line.push_str(&format!("  {}", r[5]));
        out.push_str(line.trim_end());
        out.push('\n');
    }
    out.push('\n');
    if c.verdicts.is_empty() {
        out.push_str("no expectation changed verdict\n");
    } else {
        out.push_str("expectations that changed verdict:\n");
        for v in &c.verdicts {
            let actual = |x: Option<f64>| x.map_or("-".to_string(), fmt_actual);
            out.push_str(&format!(
                "  {}: {} -> {} (actual {} -> {}, limit {})\n",
                v.name,
                verdict_word(v.before),
                verdict_word(v.after),
                actual(v.actual_before),
                actual(v.actual_after),
                v.limit
            ));
        }
    }
    out
}
