//! Comparing two runs (`stampede run ... --baseline DIR`, `stampede diff A B`): every figure's
//! change, and the expectations whose verdict changed, so a pull request shows what a policy
//! change did.

use std::collections::BTreeMap;

use crate::figures::figures;
use crate::number::{fmt_figure, fmt_num};
use crate::schema::Summary;

/// One figure in both runs.
#[derive(Debug, Clone, PartialEq)]
pub struct FigureChange {
    /// `summary.json` key (dotted for nested values).
    pub key: String,
    /// Display unit (`ms`, `tokens`, `per min`, or empty).
    pub unit: &'static str,
    pub before: f64,
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

    /// `↑`, `↓` or `=`.
    pub fn arrow(&self) -> &'static str {
        match self.after.total_cmp(&self.before) {
            std::cmp::Ordering::Greater => "↑",
            std::cmp::Ordering::Less => "↓",
            std::cmp::Ordering::Equal => "=",
        }
    }
}

/// An expectation whose verdict differs between the runs (or that exists in only one).
#[derive(Debug, Clone, PartialEq)]
pub struct VerdictChange {
    pub name: String,
    /// Verdict before (`None`: the earlier run did not have this expectation).
    pub before: Option<bool>,
    pub after: Option<bool>,
    pub actual_before: Option<f64>,
    pub actual_after: Option<f64>,
    /// The limit as the later run states it (the earlier one's if the later has none).
    pub limit: String,
}

/// Two runs side by side.
#[derive(Debug, Clone, PartialEq)]
pub struct Comparison {
    /// `scenario seed N preset P (mode)` of the earlier run.
    pub before_label: String,
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

fn verdict_word(v: Option<bool>) -> &'static str {
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

/// The comparison as an aligned text table followed by the verdict changes.
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
            f.key.clone()
        } else {
            format!("{} ({})", f.key, f.unit)
        };
        let pct = match f.percent() {
            Some(p) if p > 0.0 => format!("+{}%", fmt_num(p, 1)),
            Some(p) => format!("{}%", fmt_num(p, 1)),
            None if f.after == 0.0 => "0.0%".to_string(),
            None => "new".to_string(),
        };
        rows.push([
            key,
            fmt_figure(f.before),
            fmt_figure(f.after),
            signed(f.change()),
            pct,
            f.arrow().to_string(),
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
        let mut line = format!("{:<w$}", r[0], w = widths[0]);
        for (i, cell) in r.iter().enumerate().skip(1).take(4) {
            line.push_str(&format!("  {:>w$}", cell, w = widths[i]));
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
            let actual = |x: Option<f64>| x.map_or("-".to_string(), fmt_figure);
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
