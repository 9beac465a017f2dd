//! `stampede validate PATH...`: parse and check scenario files without running them. Folders
//! are searched recursively for `*.toml`, as `check` does.

use std::path::PathBuf;
use std::process::ExitCode;

use clap::Args;
use stampede_sim::scenario::{self, parse_override, Override};

use crate::check::find_scenarios;
use crate::exit;

#[derive(Debug, Args)]
pub struct ValidateArgs {
    /// Scenario files (TOML), or folders searched recursively for `*.toml` (sorted by path).
    #[arg(required = true, value_name = "PATH")]
    scenarios: Vec<PathBuf>,
    /// Override a key in every scenario, as `stampede run --set` does. Repeatable.
    #[arg(long = "set", value_name = "KEY=VALUE")]
    sets: Vec<String>,
}

pub fn main(args: ValidateArgs) -> ExitCode {
    let mut sets: Vec<Override> = Vec::with_capacity(args.sets.len());
    for arg in &args.sets {
        match parse_override(arg) {
            Ok(ov) => sets.push(ov),
            Err(message) => return exit::bad_input(message),
        }
    }
    let mut bad = 0;
    let mut files = Vec::new();
    for path in &args.scenarios {
        if path.is_dir() {
            let mut found = Vec::new();
            if let Err(e) = find_scenarios(path, &mut found) {
                eprintln!("error: {e}");
                bad += 1;
                continue;
            }
            if found.is_empty() {
                eprintln!(
                    "error: {}: no scenario files (*.toml) in this folder",
                    path.display()
                );
                bad += 1;
            }
            found.sort();
            files.extend(found);
        } else {
            files.push(path.clone());
        }
    }
    for path in &files {
        match scenario::load(path, None, &sets) {
            Ok(s) => {
                println!(
                    "ok {}: {} ({} workload entries, {} expectations, preset {})",
                    path.display(),
                    s.name,
                    s.workloads.len(),
                    s.expectations.len(),
                    s.client.preset
                );
                // What the run will not read or play, as `check` says it, with the file.
                for note in &s.notes {
                    eprintln!("{}: {note}", path.display());
                }
            }
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
