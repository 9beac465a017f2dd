//! `stampede sweep SCENARIO --vary KEY=V1,V2,... [--vary ...] [--seeds N] [--out DIR]`: one
//! scenario over the cross product of the varied values, each configuration over N seeds, run
//! in parallel in virtual time; writes `sweep.csv`, the sweep plots and `recommendation.txt`.
//!
//! With `--shard I/N` it plays only shard I of N of the runs and writes a shard folder instead;
//! `stampede sweep merge DIR...` (`sweep_shard`) turns the shards into the same outputs.
//!
//! Every configuration is loaded (and so type-checked, exactly like `--set`) before the first
//! run starts, so a bad key or value costs nothing. Rows are in configuration order then seed
//! order whatever thread ran them, so the same sweep writes the same `sweep.csv`.

use std::collections::BTreeMap;
use std::io::IsTerminal;
use std::num::{NonZeroU32, NonZeroUsize};
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use clap::{Args, Subcommand};
use indicatif::{ProgressBar, ProgressStyle};
use stampede_reports::number::median;
use stampede_reports::{
    fmt_num, render_sweep_plots_with, write_sweep_csv, RenderOptions, Summary, SweepRow,
};
use stampede_sim::run::{default_out_dir, run_scenario, RunOptions};
use stampede_sim::scenario::{self, parse_override, Override, Scenario};

use crate::count_arg::at_least_one;
use crate::exit;
use crate::sweep_shard::{self, parse_shard, Manifest, MergeArgs, Shard, ShardRun};
use crate::work_queue::{run_in_order, thread_count};

/// `stampede sweep SCENARIO ...`, or `stampede sweep merge DIR...`.
#[derive(Debug, Args)]
#[command(args_conflicts_with_subcommands = true, subcommand_negates_reqs = true)]
pub struct SweepCli {
    #[command(subcommand)]
    command: Option<SweepCommand>,
    #[command(flatten)]
    sweep: SweepArgs,
}

#[derive(Debug, Subcommand)]
enum SweepCommand {
    /// Merge the folders of `stampede sweep ... --shard I/N --out DIR` (every shard once) into
    /// the sweep.csv, plots and recommendation the unsharded sweep writes, byte for byte.
    Merge(MergeArgs),
}

#[derive(Debug, Args)]
pub struct SweepArgs {
    /// The scenario file (TOML).
    #[arg(value_name = "SCENARIO", required = true)]
    scenario: Option<PathBuf>,
    /// A key to vary and its values, comma-separated (`--vary client.workers=8,32,96`); values
    /// are checked like `--set`. Repeatable: the sweep runs the cross product.
    #[arg(long = "vary", value_name = "KEY=V1,V2,...")]
    vary: Vec<String>,
    /// Seeds per configuration: the scenario's seed (or --seed), then seed+1, seed+2, ...
    #[arg(long, default_value = "3", value_name = "N", value_parser = at_least_one::<NonZeroU32>)]
    seeds: NonZeroU32,
    /// First seed (default: the scenario's).
    #[arg(long, value_name = "N")]
    seed: Option<u64>,
    /// Output folder (default: runs/<scenario name>-sweep/).
    #[arg(long, value_name = "DIR")]
    out: Option<PathBuf>,
    /// Override a scenario key for every run of the sweep, as `stampede run --set`. Repeatable.
    #[arg(long = "set", value_name = "KEY=VALUE")]
    sets: Vec<String>,
    /// Runs at once (default: the machine's cores).
    #[arg(long, short = 'j', value_name = "N", value_parser = at_least_one::<NonZeroUsize>)]
    jobs: Option<NonZeroUsize>,
    /// Also write every sweep plot as PNG beside its SVG.
    #[arg(long)]
    png: bool,
    /// Play only shard I of N (from 0) of the runs (run r = configuration x seed in sweep
    /// order; shard I plays the runs with r % N == I) and write a shard folder for
    /// `stampede sweep merge` instead of the outputs (default folder:
    /// runs/<scenario name>-sweep-shard-I-of-N/).
    #[arg(long, value_name = "I/N", value_parser = parse_shard)]
    shard: Option<Shard>,
}

/// One `--vary`: the key and its values as written.
#[derive(Debug, Clone, PartialEq)]
struct Varied {
    key: String,
    values: Vec<String>,
}

/// One run of the sweep.
struct Job {
    /// Its place in the sweep (configuration x seeds + seed number).
    run: usize,
    config: usize,
    scenario: Scenario,
}

pub fn main(cli: SweepCli) -> ExitCode {
    match cli.command {
        Some(SweepCommand::Merge(args)) => sweep_shard::merge_main(args),
        None if cli.sweep.png && !stampede_reports::PNG_SUPPORTED => {
            exit::bad_input(format!("--png: {}", stampede_reports::PNG_UNSUPPORTED))
        }
        None => sweep(cli.sweep),
    }
}

fn sweep(args: SweepArgs) -> ExitCode {
    let Some(scenario_path) = args.scenario.clone() else {
        return exit::bad_input(
            "give the scenario file: stampede sweep SCENARIO --vary KEY=V1,V2,...",
        );
    };
    let mut sets: Vec<Override> = Vec::with_capacity(args.sets.len());
    for arg in &args.sets {
        match parse_override(arg) {
            Ok(ov) => sets.push(ov),
            Err(message) => return exit::bad_input(message),
        }
    }
    let mut varied: Vec<Varied> = Vec::with_capacity(args.vary.len());
    for arg in &args.vary {
        let v = match parse_vary(arg) {
            Ok(v) => v,
            Err(message) => return exit::bad_input(message),
        };
        if v.key == "seed" {
            return exit::bad_input(
                "--vary seed: a sweep plays every configuration with the same seeds, so the \
                 seed is not one of its settings; give the first with --seed N and how many, \
                 one after another, with --seeds N",
            );
        }
        if varied.iter().any(|o| o.key == v.key) {
            return exit::bad_input(format!(
                "--vary {}: the key is varied twice; give all its values in one --vary",
                v.key
            ));
        }
        if sets.iter().any(|s| s.path == v.key) {
            return exit::bad_input(format!(
                "--vary {}: the key is also fixed by --set; drop one of them",
                v.key
            ));
        }
        varied.push(v);
    }
    let base = match scenario::load(&scenario_path, args.seed, &sets) {
        Ok(s) => s,
        Err(e) => return exit::bad_input(e),
    };
    let size = match SweepSize::of(&varied, args.seeds.get(), base.seed, args.shard) {
        Ok(size) => size,
        Err(message) => return exit::bad_input(message),
    };

    // Every key a provider of the scenario issued: shown masked wherever a value holds one.
    let known_keys: Vec<&str> = base
        .providers
        .iter()
        .flat_map(|p| p.config.credentials.iter().map(|c| c.key.as_str()))
        .chain(base.provider.credentials.iter().map(|c| c.key.as_str()))
        .collect();
    // Load every configuration before running any, so a bad value fails fast.
    let configs = cross_product(&varied);
    let mut loaded: Vec<(BTreeMap<String, String>, Scenario)> = Vec::with_capacity(configs.len());
    for config in configs {
        let mut config_sets = sets.clone();
        for (key, value) in &config {
            match parse_override(&format!("{key}={value}")) {
                Ok(ov) => config_sets.push(ov),
                Err(message) => return exit::bad_input(format!("--vary {key}: {message}")),
            }
        }
        // As the sweep's outputs show it: a credential masked.
        let shown: BTreeMap<String, String> = config
            .iter()
            .map(|(k, v)| (k.clone(), shown_value(&varied, &known_keys, k, v)))
            .collect();
        match scenario::load(&scenario_path, Some(base.seed), &config_sets) {
            Ok(s) => loaded.push((shown, s)),
            Err(e) => {
                let settings: Vec<String> = shown.iter().map(|(k, v)| format!("{k}={v}")).collect();
                return exit::bad_input(format!("--vary {}: {e}", settings.join(" ")));
            }
        }
    }

    // What `stampede run` would say of a configuration, once each: most notes hold for all.
    let mut said: Vec<&str> = Vec::new();
    for note in loaded.iter().flat_map(|(_, s)| &s.notes) {
        if !said.contains(&note.as_str()) {
            eprintln!("{note}");
            said.push(note);
        }
    }
    // `SweepSize::of` checked that the last seed fits.
    debug_assert_eq!(loaded.len() as u64, size.configs);
    let seeds: Vec<u64> = (0..u64::from(args.seeds.get()))
        .map(|i| base.seed + i)
        .collect();
    // Counted by `SweepSize::of`, within MAX_RUNS.
    let total_runs = size.runs as usize;
    debug_assert_eq!(total_runs, loaded.len() * seeds.len());
    let seed_count = seeds.len();
    let seeds = &seeds;
    let jobs: Vec<Job> = loaded
        .iter()
        .enumerate()
        .flat_map(|(config, (_, scenario))| {
            seeds
                .iter()
                .enumerate()
                .map(move |(n, &seed)| (config * seed_count + n, seed))
                // A shard copies only its own runs' scenarios.
                .filter(|&(run, _)| args.shard.map_or(true, |shard| shard.owns(run)))
                .map(move |(run, seed)| {
                    let mut scenario = scenario.clone();
                    scenario.seed = seed;
                    Job {
                        run,
                        config,
                        scenario,
                    }
                })
        })
        .collect();

    let mut default_out = default_out_dir(&base).into_os_string();
    default_out.push("-sweep");
    let default_out = PathBuf::from(default_out);
    let out_dir = args.out.clone().unwrap_or_else(|| match args.shard {
        None => default_out.clone(),
        Some(shard) => {
            let mut dir = default_out.clone().into_os_string();
            dir.push(format!("-shard-{}-of-{}", shard.index, shard.count));
            PathBuf::from(dir)
        }
    });
    // Before any run: a folder that cannot be made failed only once every run had played,
    // and the sweep's measurements were lost with it.
    if let Err(message) = make_out_dir(&out_dir) {
        return exit::bad_input(message);
    }
    let threads = thread_count(args.jobs, jobs.len());
    match args.shard {
        None => println!(
            "sweep {}: {} configurations x {} seeds = {} runs on {threads} threads",
            base.name,
            loaded.len(),
            seeds.len(),
            jobs.len()
        ),
        Some(shard) => println!(
            "sweep {} shard {shard}: {} of the {} runs ({} configurations x {} seeds) on {threads} threads",
            base.name,
            jobs.len(),
            total_runs,
            loaded.len(),
            seeds.len()
        ),
    }

    let progress = if std::io::stdout().is_terminal() {
        let bar = ProgressBar::new(jobs.len() as u64);
        if let Ok(style) =
            ProgressStyle::with_template("{elapsed_precise} [{bar:40}] {pos}/{len} runs, eta {eta}")
        {
            bar.set_style(style.progress_chars("=> "));
        }
        bar
    } else {
        ProgressBar::hidden()
    };
    let mut results: Vec<(usize, Result<Summary, String>)> = Vec::with_capacity(jobs.len());
    run_in_order(
        &jobs,
        threads,
        |job| {
            let result = run_scenario(&job.scenario, &RunOptions::default())
                .map(|outcome| outcome.report.summary);
            progress.inc(1);
            result
        },
        |i, result| results.push((i, result.and_then(|r| r))),
    );
    progress.finish_and_clear();

    let configs: Vec<BTreeMap<String, String>> = loaded.iter().map(|(c, _)| c.clone()).collect();
    let keys: Vec<String> = varied.iter().map(|v| v.key.clone()).collect();
    if let Some(shard) = args.shard {
        let resolved: Vec<String> = loaded.iter().map(|(_, s)| format!("{s:?}")).collect();
        let varied: Vec<(String, Vec<String>)> = varied
            .iter()
            .map(|v| (v.key.clone(), v.values.clone()))
            .collect();
        let manifest = Manifest {
            scenario: base.name.clone(),
            sweep_hash: sweep_shard::sweep_hash(&resolved, &varied, base.seed, seeds.len()),
            stampede_version: env!("CARGO_PKG_VERSION").to_string(),
            shard,
            total_runs,
            first_seed: base.seed,
            seeds: seeds.len(),
            varied_keys: keys,
            configs,
            default_out: default_out.display().to_string(),
        };
        let runs: Vec<ShardRun> = results
            .into_iter()
            .map(|(i, result)| {
                let job = &jobs[i];
                ShardRun {
                    run: job.run,
                    config: loaded[job.config].0.clone(),
                    seed: job.scenario.seed,
                    result,
                }
            })
            .collect();
        return sweep_shard::finish_shard(&out_dir, &manifest, &runs, args.png);
    }

    let (rows, errors) = sweep_shard::split_runs(results.into_iter().map(|(i, result)| {
        let job = &jobs[i];
        (loaded[job.config].0.clone(), job.scenario.seed, result)
    }));
    sweep_shard::finish(&out_dir, &configs, &keys, &rows, &errors, args.png)
}

/// Most configurations one sweep loads: each is a scenario held in memory for the whole
/// sweep.
pub(crate) const MAX_CONFIGS: u64 = 10_000;
/// Most runs (configurations x seeds) one sweep plays, over all its shards.
pub(crate) const MAX_RUNS: u64 = 1_000_000;

/// How large a sweep is, checked before anything is loaded or allocated for it: a grid or
/// a seed count past the limits is refused with what to change, where it was built and ran
/// the machine out of memory.
#[derive(Debug, Clone, Copy, PartialEq)]
struct SweepSize {
    configs: u64,
    runs: u64,
}

impl SweepSize {
    fn of(
        varied: &[Varied],
        seeds: u32,
        first_seed: u64,
        shard: Option<Shard>,
    ) -> Result<Self, String> {
        let configs = varied
            .iter()
            .try_fold(1u64, |n, v| n.checked_mul(v.values.len() as u64))
            .filter(|&n| n <= MAX_CONFIGS);
        let Some(configs) = configs else {
            let sizes: Vec<String> = varied.iter().map(|v| v.values.len().to_string()).collect();
            return Err(format!(
                "--vary: {} configurations ({}) is more than the {MAX_CONFIGS} one sweep loads; vary fewer values, or split the grid into several sweeps",
                sizes.join(" x "),
                varied.iter().map(|v| v.key.as_str()).collect::<Vec<_>>().join(", ")
            ));
        };
        let runs = configs * u64::from(seeds);
        if runs > MAX_RUNS {
            return Err(format!(
                "--seeds {seeds}: {configs} configuration{} x {seeds} seeds is {runs} runs, more than the {MAX_RUNS} one sweep plays; give fewer seeds or vary fewer values",
                if configs == 1 { "" } else { "s" }
            ));
        }
        if first_seed.checked_add(u64::from(seeds) - 1).is_none() {
            return Err(format!(
                "--seeds {seeds}: from the first seed {first_seed}, the last would pass {}; give a lower --seed",
                u64::MAX
            ));
        }
        // More shards than runs is allowed (a CI matrix of a fixed width leaves some shards
        // empty), up to the most runs a sweep plays.
        if let Some(shard) = shard.filter(|shard| u64::from(shard.count) > MAX_RUNS) {
            return Err(format!(
                "--shard {shard}: a sweep splits into at most {MAX_RUNS} shards (it plays at most {MAX_RUNS} runs); give a smaller N"
            ));
        }
        Ok(Self { configs, runs })
    }
}

/// `KEY=V1,V2,...` -> the key and its values. Commas inside quotes, `[]` or `{}` belong to
/// the value, so TOML arrays and inline tables can be varied too.
fn parse_vary(arg: &str) -> Result<Varied, String> {
    let (key, list) = arg.split_once('=').ok_or_else(|| {
        format!("--vary {arg:?}: expected KEY=V1,V2,..., e.g. --vary client.workers=8,32,96")
    })?;
    let key = key.trim();
    if scenario::overrides::segments(key).is_none() {
        return Err(format!(
            "--vary {arg:?}: the key {key:?} is not a dotted path like client.workers"
        ));
    }
    let mut values: Vec<String> = Vec::new();
    let (mut depth, mut quote, mut current) = (0i32, None::<char>, String::new());
    for c in list.chars() {
        match (quote, c) {
            (Some(q), c) if c == q => quote = None,
            (Some(_), _) => {}
            (None, '"' | '\'') => quote = Some(c),
            (None, '[' | '{') => depth += 1,
            (None, ']' | '}') if depth == 0 => {
                return Err(format!(
                    "--vary {key}: {list:?} closes a bracket ({c}) it never opened; close only \
                     the brackets a value opens"
                ));
            }
            (None, ']' | '}') => depth -= 1,
            (None, ',') if depth == 0 => {
                values.push(std::mem::take(&mut current).trim().to_string());
                continue;
            }
            _ => {}
        }
        current.push(c);
    }
    values.push(current.trim().to_string());
    // An open quote or bracket would have taken every comma after it into one value: the
    // grid would shrink without a word.
    if let Some(q) = quote {
        return Err(format!(
            "--vary {key}: {list:?} opens a quote ({q}) it never closes, so its commas would \
             not part values; close it, or quote the whole argument for the shell only \
             (--vary '{key}=a,b')"
        ));
    }
    if depth != 0 {
        return Err(format!(
            "--vary {key}: the brackets in {list:?} do not pair up ([ with ], {{ with }}); \
             close each one inside its value"
        ));
    }
    if values.iter().any(String::is_empty) {
        return Err(format!(
            "--vary {key}: an empty value in {list:?}; separate values with single commas"
        ));
    }
    for (i, v) in values.iter().enumerate() {
        if values[..i].contains(v) {
            return Err(format!("--vary {key}: the value {v:?} is given twice"));
        }
    }
    Ok(Varied {
        key: key.to_string(),
        values,
    })
}

/// `value` of `key` as the sweep's outputs (its lines, sweep.csv, the plots, a shard's
/// manifest) show it: keys masked (see `overrides::shown_value`; `known` are the
/// scenario's), with the value's place in the `--vary` list when anything was masked, so
/// that two values masked alike stay two configurations (`sk-...abcd#2`); any other value
/// as written.
fn shown_value(varied: &[Varied], known: &[&str], key: &str, value: &str) -> String {
    let shown = scenario::overrides::shown_value(key, value, known);
    if shown == value {
        return shown;
    }
    let place = varied
        .iter()
        .find(|v| v.key == key)
        .and_then(|v| v.values.iter().position(|x| x == value))
        .map_or(0, |i| i + 1);
    format!("{shown}#{place}")
}

/// Every combination of the varied values, the first `--vary` changing slowest. With nothing
/// varied, one empty configuration: the scenario as written.
fn cross_product(varied: &[Varied]) -> Vec<Vec<(String, String)>> {
    let mut configs: Vec<Vec<(String, String)>> = vec![Vec::new()];
    for v in varied {
        configs = configs
            .into_iter()
            .flat_map(|c| {
                v.values.iter().map(move |value| {
                    let mut c = c.clone();
                    c.push((v.key.clone(), value.clone()));
                    c
                })
            })
            .collect();
    }
    configs
}

/// One line per configuration: seeds that met the expectations and the median figures.
pub(crate) fn print_configs(configs: &[BTreeMap<String, String>], rows: &[SweepRow]) {
    for config in configs {
        let runs: Vec<&Summary> = rows
            .iter()
            .filter(|r| &r.config == config)
            .map(|r| &r.summary)
            .collect();
        if runs.is_empty() {
            continue;
        }
        let med = |f: fn(&Summary) -> f64| {
            median(&runs.iter().map(|s| f(s)).collect::<Vec<_>>()).unwrap_or(0.0)
        };
        let passed = runs
            .iter()
            .filter(|s| s.expectations.iter().all(|e| e.pass))
            .count();
        let settings: Vec<String> = config.iter().map(|(k, v)| format!("{k}={v}")).collect();
        let settings = if settings.is_empty() {
            "as written".to_string()
        } else {
            settings.join(", ")
        };
        println!(
            "  {settings}: {passed}/{} seeds passed; median {} attempts/logical, {} retry waves, {} deadline misses, {} completed/min",
            runs.len(),
            fmt_num(med(|s| s.attempts_per_logical), 3),
            fmt_num(med(|s| s.retry_waves as f64), 1),
            fmt_num(med(|s| s.deadline_misses as f64), 1),
            fmt_num(med(|s| s.goodput_per_min), 1),
        );
    }
}

/// Makes the output folder `dir` (`--out`) if it is missing; `Err` says why it cannot be
/// one and what to give instead.
pub(crate) fn make_out_dir(dir: &Path) -> Result<(), String> {
    std::fs::create_dir_all(dir).map_err(|e| {
        let why = if dir.is_file() {
            "it is a file, not a folder".to_string()
        } else {
            format!("it cannot be made a folder: {e}")
        };
        format!(
            "--out {}: {why}; give a folder to write the sweep's files in (made if missing)",
            dir.display()
        )
    })
}

pub(crate) fn write_outputs(
    dir: &Path,
    rows: &[SweepRow],
    keys: &[String],
    recommendation: &str,
    png: bool,
) -> Result<(), String> {
    std::fs::create_dir_all(dir)
        .map_err(|e| format!("cannot create the sweep folder {}: {e}", dir.display()))?;
    write_sweep_csv(&dir.join("sweep.csv"), rows).map_err(|e| e.to_string())?;
    let opts = RenderOptions {
        png,
        ..RenderOptions::default()
    };
    let plots = render_sweep_plots_with(dir, rows, keys, &opts).map_err(|e| e.to_string())?;
    // An earlier sweep's plots this one did not draw (its PNGs, when this one drew none)
    // would sit beside this sweep's figures as if they were its own.
    stampede_sim::staging::remove_unwritten(dir, stampede_reports::sweep_plot_files(), |name| {
        plots.contains(&dir.join(name))
    })
    .map_err(|e| {
        format!(
            "cannot remove an earlier sweep's plot in {}: {e}",
            dir.display()
        )
    })?;
    let path = dir.join("recommendation.txt");
    std::fs::write(&path, format!("{recommendation}\n"))
        .map_err(|e| format!("cannot write {}: {e}", path.display()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn vary_splits_values_at_top_level_commas_only() {
        let v = parse_vary("client.workers=4, 16,64").unwrap();
        assert_eq!(v.key, "client.workers");
        assert_eq!(v.values, ["4", "16", "64"]);
        let v = parse_vary(r#"workload.0.arrival={ rate = "5/s" },"backlog""#).unwrap();
        assert_eq!(v.values, [r#"{ rate = "5/s" }"#, r#""backlog""#]);
    }

    #[test]
    fn vary_refuses_empty_and_repeated_values_and_bad_keys() {
        assert!(parse_vary("client.workers").unwrap_err().contains("KEY=V1"));
        assert!(parse_vary("client.workers=4,,8")
            .unwrap_err()
            .contains("empty"));
        assert!(parse_vary("client.workers=4,4")
            .unwrap_err()
            .contains("twice"));
        assert!(parse_vary("client..workers=4")
            .unwrap_err()
            .contains("dotted"));
        // A stray quote or bracket had taken the commas after it into one value.
        assert!(parse_vary(r#"workload.0.tenant=it"s,other"#)
            .unwrap_err()
            .contains("never closes"));
        assert!(parse_vary("workload.0.arrival={ rate = 1,backlog")
            .unwrap_err()
            .contains("do not pair up"));
        assert!(parse_vary("client.deployments=a],[b")
            .unwrap_err()
            .contains("never opened"));
    }

    fn varied(sizes: &[usize]) -> Vec<Varied> {
        sizes
            .iter()
            .enumerate()
            .map(|(i, &n)| Varied {
                key: format!("k{i}"),
                values: (0..n).map(|v| v.to_string()).collect(),
            })
            .collect()
    }

    #[test]
    fn a_sweep_past_its_limits_is_refused_before_anything_is_built() {
        let size = SweepSize::of(&varied(&[10, 10]), 3, 7, None).unwrap();
        assert_eq!(
            size,
            SweepSize {
                configs: 100,
                runs: 300
            }
        );
        // Three grids of 1,000 values: 10^9 configurations, refused by count (no overflow).
        let err = SweepSize::of(&varied(&[1_000, 1_000, 1_000]), 1, 7, None).unwrap_err();
        assert!(
            err.contains("1000 x 1000 x 1000 configurations (k0, k1, k2)"),
            "{err}"
        );
        // Twenty grids of 100 values, 10^40 configurations, overflow a u64: refused, not wrapped.
        let err = SweepSize::of(&varied(&[100; 20]), 1, 7, None).unwrap_err();
        assert!(err.contains("more than the 10000"), "{err}");
        let err = SweepSize::of(&varied(&[4]), 1_000_000, 7, None).unwrap_err();
        assert!(
            err.contains("--seeds 1000000: 4 configurations x 1000000 seeds is 4000000 runs"),
            "{err}"
        );
        let err = SweepSize::of(&[], 2, u64::MAX, None).unwrap_err();
        assert!(err.contains("give a lower --seed"), "{err}");
        assert!(SweepSize::of(&[], 1, u64::MAX, None).is_ok());
        let shard = |index, count| Some(Shard { index, count });
        // More shards than runs leaves some empty, as a fixed-width CI matrix may.
        assert!(SweepSize::of(&varied(&[2]), 2, 7, shard(4, 5)).is_ok());
        let err = SweepSize::of(&varied(&[2]), 2, 7, shard(0, 4_000_000_000)).unwrap_err();
        assert!(
            err.contains("--shard 0/4000000000: a sweep splits into at most 1000000 shards"),
            "{err}"
        );
    }

    #[test]
    fn cross_product_has_every_combination_first_key_slowest() {
        let configs = cross_product(&[
            Varied {
                key: "a".into(),
                values: vec!["1".into(), "2".into()],
            },
            Varied {
                key: "b".into(),
                values: vec!["x".into(), "y".into(), "z".into()],
            },
        ]);
        assert_eq!(configs.len(), 6);
        assert_eq!(
            configs[0],
            [("a".into(), "1".into()), ("b".into(), "x".into())]
        );
        assert_eq!(
            configs[5],
            [("a".into(), "2".into()), ("b".into(), "z".into())]
        );
        assert_eq!(cross_product(&[]), vec![Vec::new()]);
    }
}
