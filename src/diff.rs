//! `stampede diff BEFORE AFTER`: every figure's change between two runs, and the expectations
//! whose verdict changed, so a pull request can show what a policy change did.

use std::path::PathBuf;
use std::process::ExitCode;

use clap::Args;
use stampede_reports::{compare, read_summary, render_comparison};

use crate::exit;

#[derive(Debug, Args)]
pub struct DiffArgs {
    /// The earlier run: its run directory or its summary.json.
    #[arg(value_name = "BEFORE")]
    before: PathBuf,
    /// The later run: its run directory or its summary.json.
    #[arg(value_name = "AFTER")]
    after: PathBuf,
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
    print!("{}", render_comparison(&compare(&before, &after)));
    ExitCode::from(exit::PASSED)
}
