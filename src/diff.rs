//! `stampede diff BEFORE AFTER`: every figure's change between two runs, and the expectations
//! whose verdict changed, so a pull request can show what a policy change did. Exits 1 when an
//! expectation that held fails now, or (with `--fail-on-regression PCT`) when a figure moved
//! the wrong way by more than PCT percent.

use std::path::PathBuf;
use std::process::ExitCode;

use clap::Args;
use stampede_reports::{compare, fmt_figure, read_summary, render_comparison, Better};

use crate::exit;

#[derive(Debug, Args)]
pub struct DiffArgs {
    /// The earlier run: its run directory or its summary.json.
    #[arg(value_name = "BEFORE")]
    before: PathBuf,
    /// The later run: its run directory or its summary.json.
    #[arg(value_name = "AFTER")]
    after: PathBuf,
    /// Also exit 1 when a lower-is-better figure (attempts, retries, duplicates, violations,
    /// deadline misses, latency) rises, or a higher-is-better one (completed, goodput) falls,
    /// by more than PCT percent of its earlier value; any move off zero counts as more.
    #[arg(long, value_name = "PCT", value_parser = percent)]
    fail_on_regression: Option<f64>,
}

fn percent(text: &str) -> Result<f64, String> {
    let p: f64 = text
        .trim()
        .trim_end_matches('%')
        .parse()
        .map_err(|_| format!("{text:?} is not a percentage; write it like 5 or 12.5"))?;
    if p.is_finite() && p >= 0.0 {
        Ok(p)
    } else {
        Err(format!("{text:?}: give a percentage of 0 or more"))
    }
}

pub fn main(args: DiffArgs) -> ExitCode {
    let before = match read_summary(&args.before) {
        Ok(s) => s,
        Err(e) => return exit::bad_input(format!("the earlier run: {e}")),
    };
    let after = match read_summary(&args.after) {
        Ok(s) => s,
        Err(e) => return exit::bad_input(format!("the later run: {e}")),
    };
    let comparison = compare(&before, &after);
    print!("{}", render_comparison(&comparison));
    let mut regressed = false;
    let flipped = comparison.flipped_to_fail();
    if !flipped.is_empty() {
        regressed = true;
        let names: Vec<&str> = flipped.iter().map(|v| v.name.as_str()).collect();
        println!(
            "\nREGRESSION: {} expectation(s) held before and fail now: {}",
            names.len(),
            names.join(", ")
        );
    }
    if let Some(pct) = args.fail_on_regression {
        let worse = comparison.regressions(pct);
        if !worse.is_empty() {
            regressed = true;
            println!(
                "\nREGRESSION: {} figure(s) moved the wrong way by more than {pct}%:",
                worse.len()
            );
            for f in worse {
                let way = match f.better() {
                    Better::Higher => "lower is worse",
                    _ => "higher is worse",
                };
                let by = f
                    .percent()
                    .map_or("from zero".to_string(), |p| format!("{p:+.1}%"));
                println!(
                    "  {}: {} -> {} ({by}; {way})",
                    f.key,
                    fmt_figure(f.before),
                    fmt_figure(f.after)
                );
            }
        }
    }
    if regressed {
        ExitCode::from(exit::EXPECTATION_FAILED)
    } else {
        ExitCode::from(exit::PASSED)
    }
}
