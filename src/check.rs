//! `stampede check PATH...`: every scenario under the paths, each played in virtual time, one
//! line each, the failed expectations, and one combined `junit.xml` for CI.
//!
//! A malformed scenario does not stop the others: it is reported where it stands in the list,
//! everything else still runs (nothing already measured is lost), and the exit code is 2.

use std::collections::BTreeSet;
use std::num::NonZeroUsize;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use clap::Args;
use stampede_reports::{check_line, failed_expectation_lines, junit_check, CheckedFile, Summary};
use stampede_sim::run::{default_out_dir, run_scenario, RunOptions};
use stampede_sim::scenario::{self, parse_override, Override, Scenario};

use crate::count_arg::at_least_one;
use crate::exit;
use crate::work_queue::{run_in_order, thread_count};

#[derive(Debug, Args)]
pub struct CheckArgs {
    /// Scenario files, or folders searched recursively for `*.toml` (sorted by path).
    #[arg(required = true, value_name = "PATH")]
    paths: Vec<PathBuf>,
    /// The combined JUnit file, one test case per expectation and an error test case per
    /// scenario that could not run (default: junit.xml in the --out folder, runs/check/;
    /// with --no-write, only when given).
    #[arg(long, value_name = "FILE")]
    junit: Option<PathBuf>,
    /// Folder for each scenario's run directory, written as DIR/<scenario name>/
    /// (default: runs/check/).
    #[arg(long, value_name = "DIR", conflicts_with = "no_write")]
    out: Option<PathBuf>,
    /// Write no run directories, and no JUnit file unless --junit is given.
    #[arg(long)]
    no_write: bool,
    /// Write only the data files in each run directory, no plots or HTML page.
    #[arg(long)]
    no_render: bool,
    /// Also write every plot as PNG beside its SVG in each run directory.
    #[arg(long, conflicts_with_all = ["no_render", "no_write"])]
    png: bool,
    /// Override a key in every scenario, as `stampede run --set` does. Repeatable.
    #[arg(long = "set", value_name = "KEY=VALUE")]
    sets: Vec<String>,
    /// Scenarios run at once (default: the machine's cores).
    #[arg(long, short = 'j', value_name = "N", value_parser = at_least_one::<NonZeroUsize>)]
    jobs: Option<NonZeroUsize>,
}

/// One entry of the list: a scenario ready to run, or why it cannot be.
enum Entry {
    Ready {
        file: PathBuf,
        scenario: Box<Scenario>,
        out_dir: Option<PathBuf>,
    },
    /// The file or folder, and why it cannot run.
    Malformed(PathBuf, String),
}

impl Entry {
    fn path(&self) -> &Path {
        match self {
            Entry::Ready { file, .. } | Entry::Malformed(file, _) => file,
        }
    }
}

pub fn main(args: CheckArgs) -> ExitCode {
    if args.png && !stampede_reports::PNG_SUPPORTED {
        return exit::bad_input(format!("--png: {}", stampede_reports::PNG_UNSUPPORTED));
    }
    let mut sets: Vec<Override> = Vec::with_capacity(args.sets.len());
    for arg in &args.sets {
        match parse_override(arg) {
            Ok(ov) => sets.push(ov),
            Err(message) => return exit::bad_input(message),
        }
    }
    let out_root = (!args.no_write).then(|| {
        args.out
            .clone()
            .unwrap_or_else(|| PathBuf::from("runs").join("check"))
    });
    // A folder that cannot be made fails here, once, rather than as every scenario's error
    // after all of them have played.
    if let Some(root) = &out_root {
        if let Err(e) = std::fs::create_dir_all(root) {
            let what = if root.is_file() {
                "it is a file, not a folder".to_string()
            } else {
                format!("it cannot be made: {e}")
            };
            return exit::bad_input(format!(
                "--out {}: {what}; give a folder to write the run folders and junit.xml in",
                root.display()
            ));
        }
    }
    let junit_path = match (&args.junit, args.no_write) {
        (Some(p), _) => Some(p.clone()),
        (None, false) => out_root.as_ref().map(|root| root.join("junit.xml")),
        (None, true) => None,
    };
    // So is a JUnit file that cannot be written: it failed only after every scenario had
    // played, with the tally claiming it written.
    if let Some(path) = &junit_path {
        let flag = if args.junit.is_some() {
            "--junit"
        } else {
            "the JUnit file under --out,"
        };
        if let Err(message) = junit_can_be_written(flag, path) {
            return exit::bad_input(message);
        }
    }

    let entries = load_entries(&args.paths, &sets, out_root.as_deref());
    // What `stampede run` would say of each scenario (a policy its SDK preset does not read).
    for entry in &entries {
        if let Entry::Ready { file, scenario, .. } = entry {
            for note in &scenario.notes {
                eprintln!("{}: {note}", file.display());
            }
        }
    }
    let threads = thread_count(args.jobs, entries.len());
    let render = !args.no_render;

    let mut suites: Vec<CheckedFile> = Vec::new();
    // The printed lines again, for CI's step summary.
    let mut report: Vec<String> = Vec::new();
    let (mut passed, mut failed, mut malformed) = (0usize, 0usize, Vec::<String>::new());
    run_in_order(
        &entries,
        threads,
        |entry| match entry {
            Entry::Malformed(_, message) => Err(message.clone()),
            Entry::Ready {
                file,
                scenario,
                out_dir,
            } => {
                let opts = RunOptions {
                    out_dir: out_dir.clone(),
                    render,
                    png: args.png,
                    github_step_summary: None,
                    // A scenario's own output.audit still asks for its trail.
                    audit: false,
                    progress: None,
                    baseline: None,
                };
                run_scenario(scenario, &opts)
                    .map(|outcome| outcome.report.summary)
                    .map_err(|e| format!("{}: {}: {e}", file.display(), scenario.name))
            }
        },
        |i, result| match result.and_then(|r| r) {
            Ok(summary) => {
                for line in result_lines(&summary) {
                    println!("{line}");
                    report.push(line);
                }
                if summary.expectations.iter().all(|e| e.pass) {
                    passed += 1;
                } else {
                    failed += 1;
                }
                suites.push(CheckedFile {
                    scenario: Some(summary.scenario.clone()),
                    path: entries[i].path().display().to_string(),
                    outcome: Ok(summary.expectations),
                    aborted: summary.aborted,
                });
            }
            Err(message) => {
                let scenario = match &entries[i] {
                    Entry::Ready { scenario, .. } => Some(scenario.name.clone()),
                    Entry::Malformed(..) => None,
                };
                suites.push(CheckedFile {
                    scenario,
                    path: entries[i].path().display().to_string(),
                    outcome: Err(message.clone()),
                    aborted: None,
                });
                println!("ERROR {message}");
                report.push(format!("ERROR {message}"));
                malformed.push(message);
            }
        },
    );

    let mut code = if !malformed.is_empty() {
        exit::BAD_INPUT
    } else if failed > 0 {
        exit::EXPECTATION_FAILED
    } else {
        exit::PASSED
    };
    if let Some(path) = &junit_path {
        if let Err(message) = write_junit(path, &suites) {
            eprintln!("error: {message}");
            code = exit::BAD_INPUT;
        }
    }
    let mut tally = format!(
        "{} scenarios: {passed} passed, {failed} failed",
        passed + failed + malformed.len()
    );
    if !malformed.is_empty() {
        tally.push_str(&format!(", {} could not run", malformed.len()));
    }
    if let Some(path) = &junit_path {
        tally.push_str(&format!("; junit: {}", path.display()));
    }
    if let Some(root) = &out_root {
        tally.push_str(&format!("; runs: {}", root.display()));
    }
    println!("{tally}");
    if let Some(path) = crate::step_summary::from_env() {
        if let Err(e) = append_step_summary(&path, &tally, &report) {
            eprintln!("warning: cannot append to $GITHUB_STEP_SUMMARY: {e}");
        }
    }
    if !malformed.is_empty() {
        eprintln!(
            "error: {} scenario(s) could not run (listed above as ERROR); fix them and check again",
            malformed.len()
        );
    }
    ExitCode::from(code)
}

/// The scenario's check line, then each failed expectation indented under it.
fn result_lines(summary: &Summary) -> Vec<String> {
    let mut lines = vec![check_line(summary)];
    if summary.expectations.is_empty() {
        lines.push(
            "    no [expect] table: nothing was checked, so it passes whatever happens; add \
             the limits it must hold"
                .to_string(),
        );
    }
    if let Some(aborted) = &summary.aborted {
        lines.push(format!("    {}", aborted.line()));
    }
    lines.extend(
        failed_expectation_lines(&summary.expectations)
            .into_iter()
            .map(|l| format!("    {l}")),
    );
    lines
}

/// Appends the check's lines to CI's step summary as a markdown code block.
fn append_step_summary(path: &Path, tally: &str, lines: &[String]) -> std::io::Result<()> {
    use std::io::Write;
    let mut file = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(path)?;
    file.write_all(step_summary_block(tally, lines).as_bytes())
}

/// The check's lines as a markdown code block no line can leave: the lines carry names a
/// scenario chose (its name, tenants, expectations), and a name holding a fence of three
/// backticks closed a fence of three and put its own headings and links on the CI page. The
/// fence is longer than any run of backticks inside (CommonMark closes a fence only with
/// one at least as long), and control characters are shown as U+FFFD.
fn step_summary_block(tally: &str, lines: &[String]) -> String {
    let body: Vec<String> = lines
        .iter()
        .map(String::as_str)
        .chain([tally])
        .map(|line| {
            line.chars()
                .map(|c| if c.is_control() { '\u{fffd}' } else { c })
                .collect()
        })
        .collect();
    let longest = body
        .iter()
        .flat_map(|line| line.split(|c| c != '`'))
        .map(str::len)
        .max()
        .unwrap_or(0);
    let fence = "`".repeat(longest.max(2) + 1);
    format!(
        "### stampede check\n\n{fence}\n{}\n{fence}\n\n",
        body.join("\n")
    )
}

/// Every scenario under `paths`, loaded, in a stable order, each with its run directory
/// (`<out_root>/<name>/`, made unique when two scenarios share a name).
fn load_entries(paths: &[PathBuf], sets: &[Override], out_root: Option<&Path>) -> Vec<Entry> {
    let mut files: Vec<Result<PathBuf, (PathBuf, String)>> = Vec::new();
    for path in paths {
        if path.is_dir() {
            let mut found = Vec::new();
            if let Err(e) = find_scenarios(path, &mut found) {
                files.push(Err((path.clone(), e)));
                continue;
            }
            if found.is_empty() {
                files.push(Err((
                    path.clone(),
                    format!(
                        "{}: no scenario files (*.toml) in this folder",
                        path.display()
                    ),
                )));
            }
            found.sort();
            files.extend(found.into_iter().map(Ok));
        } else if path.exists() {
            files.push(Ok(path.clone()));
        } else {
            files.push(Err((
                path.clone(),
                format!(
                    "{}: no such file or folder; pass scenario files or folders that hold them",
                    path.display()
                ),
            )));
        }
    }

    let mut used_dirs: BTreeSet<PathBuf> = BTreeSet::new();
    files
        .into_iter()
        .map(|file| {
            let file = match file {
                Ok(f) => f,
                Err((path, message)) => return Entry::Malformed(path, message),
            };
            match scenario::load(&file, None, sets) {
                Ok(scenario) => {
                    let out_dir = out_root.map(|root| {
                        let name = default_out_dir(&scenario)
                            .file_name()
                            .map(PathBuf::from)
                            .unwrap_or_else(|| PathBuf::from("scenario"));
                        unique_dir(root, &name, &mut used_dirs)
                    });
                    Entry::Ready {
                        file,
                        scenario: Box::new(scenario),
                        out_dir,
                    }
                }
                Err(e) => Entry::Malformed(file, e.to_string()),
            }
        })
        .collect()
}

/// `root/name`, or `root/name-2`, `-3`... when an earlier scenario of this check took it.
fn unique_dir(root: &Path, name: &Path, used: &mut BTreeSet<PathBuf>) -> PathBuf {
    let mut dir = root.join(name);
    let mut n = 2;
    while used.contains(&dir) {
        dir = root.join(format!("{}-{n}", name.display()));
        n += 1;
    }
    used.insert(dir.clone());
    dir
}

/// Collects `*.toml` files under `dir`, recursively. Symbolic links to folders are not
/// followed, so a link cycle cannot loop.
pub(crate) fn find_scenarios(dir: &Path, found: &mut Vec<PathBuf>) -> Result<(), String> {
    let read_err = |e: std::io::Error| format!("{}: cannot read this folder: {e}", dir.display());
    for entry in std::fs::read_dir(dir).map_err(read_err)? {
        let entry = entry.map_err(read_err)?;
        let path = entry.path();
        let kind = entry.file_type().map_err(read_err)?;
        if kind.is_dir() {
            find_scenarios(&path, found)?;
        } else if path.extension().is_some_and(|e| e == "toml") && !path.is_dir() {
            // A link to a file that is not there is listed too: reading it fails naming
            // it, where skipping it had passed a check that played one scenario fewer.
            found.push(path);
        }
    }
    Ok(())
}

/// `Ok` when `path` (`--junit`, or the default under `--out`) can be written as a file:
/// not a folder, in a folder that is or can be made (made here).
fn junit_can_be_written(flag: &str, path: &Path) -> Result<(), String> {
    let fix = "give --junit the path of a file for the combined JUnit report (junit.xml)";
    if path.is_dir() {
        return Err(format!("{flag} {}: it is a folder; {fix}", path.display()));
    }
    if let Some(parent) = path.parent().filter(|p| !p.as_os_str().is_empty()) {
        std::fs::create_dir_all(parent).map_err(|e| {
            format!(
                "{flag} {}: cannot be made, its folder {} cannot ({e}); {fix}",
                path.display(),
                parent.display()
            )
        })?;
    }
    Ok(())
}

fn write_junit(path: &Path, suites: &[CheckedFile]) -> Result<(), String> {
    if let Some(parent) = path.parent().filter(|p| !p.as_os_str().is_empty()) {
        std::fs::create_dir_all(parent)
            .map_err(|e| format!("cannot create the folder {}: {e}", parent.display()))?;
    }
    std::fs::write(path, junit_check(suites))
        .map_err(|e| format!("cannot write the JUnit file {}: {e}", path.display()))
}

#[cfg(test)]
mod tests {
    use super::step_summary_block;

    /// A scenario named to close the block and write its own "passed" heading stays inside
    /// the block: the only lines that are fences of the block's length are its own two.
    #[test]
    fn a_name_cannot_leave_the_step_summarys_code_block() {
        let name = "x\n```\n## All 12 scenarios passed\n[details](https://evil.example)\n````";
        let lines = vec![format!("FAIL {name}"), "    by_tenant.`a`: 1".to_string()];
        let block = step_summary_block("1 scenario: 0 passed", &lines);
        let fence = block.lines().nth(2).unwrap();
        assert_eq!(fence, "`````", "{block}");
        let fences: Vec<&str> = block.lines().filter(|l| l.starts_with(fence)).collect();
        assert_eq!(fences, [fence, fence], "{block}");
        assert!(!block.contains("\n## "), "{block}");
        assert!(
            block.contains("FAIL x\u{fffd}```\u{fffd}## All 12"),
            "{block}"
        );
        // Plain lines keep the usual fence.
        let plain = step_summary_block("tally", &["PASS a".to_string()]);
        assert!(plain.contains("\n```\nPASS a\ntally\n```\n"), "{plain}");
    }
}
