//! `stampede validate SCENARIO...`: parse and check scenario files without running them.

use std::path::PathBuf;
use std::process::ExitCode;

use clap::Args;
use stampede_sim::scenario;

use crate::exit;

#[derive(Debug, Args)]
pub struct ValidateArgs {
    /// Scenario files (TOML).
    #[arg(required = true, value_name = "SCENARIO")]
    scenarios: Vec<PathBuf>,
}

pub fn main(args: ValidateArgs) -> ExitCode {
    let mut bad = 0;
    for path in &args.scenarios {
        match scenario::load(path, None, &[]) {
            Ok(s) => println!(
                "ok {}: {} ({} workload entries, {} expectations, preset {})",
                path.display(),
                s.name,
                s.workloads.len(),
                s.expectations.len(),
                s.client.preset
            ),
            Err(e) => {
                eprintln!("error: {e}");
                bad += 1;
            }
        }
    }
    if bad == 0 {
        ExitCode::from(exit::PASSED)
    } else {
        ExitCode::from(exit::BAD_INPUT)
    }
}
