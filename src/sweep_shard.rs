//! Sharded sweeps: `stampede sweep SCENARIO ... --shard I/N --out DIR` plays only shard I of N
//! of the sweep's runs and writes what a merge needs into DIR; `stampede sweep merge DIR...`
//! reads every shard back and writes the outputs the unsharded sweep would have written, byte
//! for byte.
//!
//! The runs are the cross product of configurations x seeds in the sweep's fixed order (run
//! `r` is configuration `r / seeds`, seed number `r % seeds`); shard `I` of `N` plays the runs
//! with `r % N == I`. A shard folder holds:
//!
//! - `manifest.json`: which sweep (scenario name, a hash of the resolved configurations, the
//!   varied values and the seeds, the stampede version), which shard (`I`, `N`), the run
//!   count, the configurations in order and the default output folder of the merge;
//! - `runs.jsonl`: one line per run of the shard, in run order: `run`, `config`, `seed`, and
//!   either the run's full `summary` (as `summary.json` holds it, but for `wall_ms`, written as
//!   0 so that the same shard writes the same bytes) or the `error` it ended in.
//!
//! A float whose shortest decimal text the JSON reader would not read back to the same bits
//! (its number parser is fast, not always exact) is also given as its bits under `exact_f64`,
//! keyed by JSON pointer, so a merged sweep computes from exactly the figures the shard saw.

use std::collections::{BTreeMap, BTreeSet};
use std::fmt;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use clap::Args;
use serde_json::{json, Map, Value};
use stampede_reports::{recommend, Recommendation, Summary, SweepRow};

use crate::exit;
use crate::sweep::{print_configs, write_outputs};

/// `manifest.json`'s `format`: bumped when the shard files change shape.
const FORMAT: &str = "stampede-sweep-shard/1";
pub const MANIFEST: &str = "manifest.json";
pub const RUNS: &str = "runs.jsonl";

/// `--shard I/N`: shard `index` (from 0) of `count`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub struct Shard {
    pub index: u32,
    pub count: u32,
}

impl Shard {
    /// Whether run `run` of the sweep belongs to this shard.
    pub fn owns(&self, run: usize) -> bool {
        run as u64 % u64::from(self.count) == u64::from(self.index)
    }
}

impl fmt::Display for Shard {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}/{}", self.index, self.count)
    }
}

/// Parses `I/N` (clap value parser of `--shard`).
pub fn parse_shard(text: &str) -> Result<Shard, String> {
    let hint = "give I/N, shard I of N counting from 0: --shard 0/4 ... --shard 3/4";
    let (i, n) = text
        .split_once('/')
        .ok_or_else(|| format!("expected I/N; {hint}"))?;
    let number = |s: &str, what: &str| {
        let s = s.trim();
        s.parse::<u32>().map_err(|_| {
            if !s.is_empty() && s.bytes().all(|b| b.is_ascii_digit()) {
                format!(
                    "{what} {s} is too large: a sweep splits into at most {} shards; {hint}",
                    crate::sweep::MAX_RUNS
                )
            } else {
                format!("{what} {s:?} is not a whole number; {hint}")
            }
        })
    };
    let (index, count) = (number(i, "I")?, number(n, "N")?);
    if count == 0 {
        return Err(format!(
            "N must be at least 1 (one shard is the whole sweep); {hint}"
        ));
    }
    if index >= count {
        return Err(format!(
            "there is no shard {index} of {count}: shards count from 0, so the last is {}/{count}",
            count - 1
        ));
    }
    Ok(Shard { index, count })
}

/// What identifies a sweep and what a merge needs besides the runs.
#[derive(Debug, Clone, PartialEq)]
pub struct Manifest {
    pub scenario: String,
    /// `stable_hash` of the stampede version, the resolved configurations, the varied values
    /// and the seeds, as 16 hex digits.
    pub sweep_hash: String,
    pub stampede_version: String,
    pub shard: Shard,
    /// Runs of the whole sweep (configurations x seeds).
    pub total_runs: usize,
    pub first_seed: u64,
    pub seeds: usize,
    /// The varied keys in `--vary` order (the first is the plots' x axis).
    pub varied_keys: Vec<String>,
    /// Every configuration in sweep order.
    pub configs: Vec<BTreeMap<String, String>>,
    /// Where the unsharded sweep writes by default (`runs/<scenario>-sweep`).
    pub default_out: String,
}

/// The hash that tells sweeps apart: same scenario, overrides, varied values and seeds (and
/// the same stampede), same hash.
pub fn sweep_hash(
    resolved: &[String],
    varied: &[(String, Vec<String>)],
    first_seed: u64,
    seeds: usize,
) -> String {
    let mut parts: Vec<String> = vec![
        "stampede sweep".to_string(),
        env!("CARGO_PKG_VERSION").to_string(),
        format!("seeds {first_seed} x {seeds}"),
    ];
    for (key, values) in varied {
        parts.push(format!("vary {key}"));
        parts.extend(values.iter().cloned());
    }
    parts.extend(resolved.iter().cloned());
    let refs: Vec<&str> = parts.iter().map(String::as_str).collect();
    format!("{:016x}", stampede_core::idempotency::stable_hash(&refs))
}

impl Manifest {
    /// The runs of the sweep that this shard plays, in order.
    pub fn runs(&self) -> impl Iterator<Item = usize> + '_ {
        (0..self.total_runs).filter(|&r| self.shard.owns(r))
    }

    /// The seed of run `run`.
    pub fn seed_of(&self, run: usize) -> u64 {
        self.first_seed
            .wrapping_add((run % self.seeds.max(1)) as u64)
    }

    fn to_json(&self) -> Value {
        json!({
            "format": FORMAT,
            "scenario": self.scenario,
            "sweep_hash": self.sweep_hash,
            "stampede_version": self.stampede_version,
            "shard": self.shard.index,
            "shards": self.shard.count,
            "total_runs": self.total_runs,
            "runs_in_shard": self.runs().count(),
            "first_seed": self.first_seed,
            "seeds": self.seeds,
            "varied_keys": self.varied_keys,
            "configs": self.configs,
            "default_out": self.default_out,
        })
    }

    fn from_json(v: &Value, file: &Path) -> Result<Self, String> {
        let bad = |what: &str| {
            format!(
                "{}: {what}; the file is damaged or not a sweep shard manifest: run the shard again",
                file.display()
            )
        };
        let format = v.get("format").and_then(Value::as_str).unwrap_or("");
        if format != FORMAT {
            return Err(format!(
                "{}: format {format:?}, this stampede reads {FORMAT:?}: write every shard and merge them with the same stampede version",
                file.display()
            ));
        }
        let text = |k: &str| {
            v.get(k)
                .and_then(Value::as_str)
                .map(String::from)
                .ok_or_else(|| bad(&format!("no text \"{k}\"")))
        };
        let whole = |k: &str| {
            v.get(k)
                .and_then(Value::as_u64)
                .ok_or_else(|| bad(&format!("no whole number \"{k}\"")))
        };
        let (index, count) = (whole("shard")?, whole("shards")?);
        let shard = match (u32::try_from(index), u32::try_from(count)) {
            (Ok(index), Ok(count)) if index < count => Shard { index, count },
            _ => return Err(bad(&format!("shard {index} of {count} does not exist"))),
        };
        let varied_keys: Vec<String> =
            serde_json::from_value(v.get("varied_keys").cloned().unwrap_or(Value::Null))
                .map_err(|_| bad("\"varied_keys\" is not a list of keys"))?;
        let configs: Vec<BTreeMap<String, String>> =
            serde_json::from_value(v.get("configs").cloned().unwrap_or(Value::Null))
                .map_err(|_| bad("\"configs\" is not a list of configurations"))?;
        let manifest = Manifest {
            scenario: text("scenario")?,
            sweep_hash: text("sweep_hash")?,
            stampede_version: text("stampede_version")?,
            shard,
            total_runs: usize::try_from(whole("total_runs")?)
                .map_err(|_| bad("\"total_runs\" is too large"))?,
            first_seed: whole("first_seed")?,
            seeds: usize::try_from(whole("seeds")?).map_err(|_| bad("\"seeds\" is too large"))?,
            varied_keys,
            configs,
            default_out: text("default_out")?,
        };
        if manifest.seeds == 0
            || manifest.configs.len().checked_mul(manifest.seeds) != Some(manifest.total_runs)
        {
            return Err(bad(&format!(
                "{} configurations x {} seeds is not {} runs",
                manifest.configs.len(),
                manifest.seeds,
                manifest.total_runs
            )));
        }
        let most = crate::sweep::MAX_RUNS;
        if manifest.total_runs as u64 > most || u64::from(manifest.shard.count) > most {
            // `stampede sweep` writes neither: the manifest was made or changed by hand.
            return Err(bad(&format!(
                "{} runs in {} shards is not a sweep stampede writes (at most {most} runs, in at most {most} shards)",
                manifest.total_runs, manifest.shard.count
            )));
        }
        Ok(manifest)
    }
}

/// Missing shards a failed merge names (it counts the rest).
const SHOWN_MISSING: usize = 20;

/// One run of a shard: its place in the sweep, and its summary or the error it ended in.
#[derive(Debug, Clone, PartialEq)]
pub struct ShardRun {
    pub run: usize,
    pub config: BTreeMap<String, String>,
    pub seed: u64,
    pub result: Result<Summary, String>,
}

/// Writes `runs.jsonl`, then `manifest.json` (last, so a folder with a manifest is a shard
/// that finished writing).
pub fn write_shard(dir: &Path, manifest: &Manifest, runs: &[ShardRun]) -> Result<(), String> {
    std::fs::create_dir_all(dir)
        .map_err(|e| format!("cannot create the shard folder {}: {e}", dir.display()))?;
    let mut lines = String::new();
    for run in runs {
        let mut line = Map::new();
        line.insert("run".into(), json!(run.run));
        line.insert("config".into(), json!(run.config));
        line.insert("seed".into(), json!(run.seed));
        match &run.result {
            Ok(summary) => {
                // wall_ms is the one figure that changes from run to run; no sweep output
                // reads it, and without it the same shard writes the same bytes.
                let summary = Summary {
                    wall_ms: 0,
                    ..summary.clone()
                };
                let summary = serde_json::to_value(&summary)
                    .map_err(|e| format!("run {}: cannot write its summary: {e}", run.run))?;
                let mut exact = BTreeMap::new();
                inexact_floats(&summary, "/summary".to_string(), &mut exact);
                line.insert("summary".into(), summary);
                if !exact.is_empty() {
                    line.insert("exact_f64".into(), json!(exact));
                }
            }
            Err(message) => {
                line.insert("error".into(), json!(message));
            }
        }
        lines.push_str(&Value::Object(line).to_string());
        lines.push('\n');
    }
    let runs_path = dir.join(RUNS);
    std::fs::write(&runs_path, lines)
        .map_err(|e| format!("cannot write {}: {e}", runs_path.display()))?;
    let manifest_path = dir.join(MANIFEST);
    let mut text = serde_json::to_string_pretty(&manifest.to_json())
        .map_err(|e| format!("cannot write {}: {e}", manifest_path.display()))?;
    text.push('\n');
    std::fs::write(&manifest_path, text)
        .map_err(|e| format!("cannot write {}: {e}", manifest_path.display()))
}

/// Floats under `v` whose JSON text does not read back to the same bits: pointer -> bits.
fn inexact_floats(v: &Value, pointer: String, out: &mut BTreeMap<String, String>) {
    match v {
        Value::Number(n) if n.is_f64() => {
            let Some(x) = n.as_f64() else { return };
            let back: Option<f64> = serde_json::from_str(&n.to_string()).ok();
            if back.map(f64::to_bits) != Some(x.to_bits()) {
                out.insert(pointer, format!("{:016x}", x.to_bits()));
            }
        }
        Value::Object(m) => {
            for (k, v) in m {
                let k = k.replace('~', "~0").replace('/', "~1");
                inexact_floats(v, format!("{pointer}/{k}"), out);
            }
        }
        Value::Array(a) => {
            for (i, v) in a.iter().enumerate() {
                inexact_floats(v, format!("{pointer}/{i}"), out);
            }
        }
        _ => {}
    }
}

/// Reads a shard folder: its manifest and its runs, checked against each other.
pub fn read_shard(dir: &Path) -> Result<(Manifest, Vec<ShardRun>), String> {
    let manifest_path = dir.join(MANIFEST);
    if !dir.is_dir() {
        let what = if dir.exists() {
            "not a folder"
        } else {
            "no such folder"
        };
        return Err(format!(
            "{}: {what}; give the folders written by `stampede sweep ... --shard I/N --out DIR`",
            dir.display()
        ));
    }
    let text = std::fs::read_to_string(&manifest_path).map_err(|e| {
        format!(
            "{}: cannot read {MANIFEST} ({e}); is this a folder written by `stampede sweep ... --shard I/N --out DIR`, and did that shard finish?",
            dir.display()
        )
    })?;
    let value: Value = serde_json::from_str(&text).map_err(|e| {
        format!(
            "{}: not valid JSON ({e}); run the shard again",
            manifest_path.display()
        )
    })?;
    let manifest = Manifest::from_json(&value, &manifest_path)?;

    let runs_path = dir.join(RUNS);
    let text = std::fs::read_to_string(&runs_path).map_err(|e| {
        format!(
            "{}: cannot read it ({e}); run shard {} again",
            runs_path.display(),
            manifest.shard
        )
    })?;
    let expected: Vec<usize> = manifest.runs().collect();
    let mut runs = Vec::with_capacity(expected.len());
    for (n, line) in text.lines().enumerate() {
        let at = format!("{}:{}", runs_path.display(), n + 1);
        let bad = |what: String| format!("{at}: {what}; run shard {} again", manifest.shard);
        let mut v: Value =
            serde_json::from_str(line).map_err(|e| bad(format!("not valid JSON ({e})")))?;
        let run = v
            .get("run")
            .and_then(Value::as_u64)
            .and_then(|r| usize::try_from(r).ok())
            .ok_or_else(|| bad("no run number".into()))?;
        if expected.get(n) != Some(&run) {
            return Err(bad(match expected.get(n) {
                Some(next) => format!(
                    "run {run} where shard {} holds run {next} next (a line repeated, missing or out of order)",
                    manifest.shard
                ),
                None => format!(
                    "run {run} after the shard's last run, {} (a line repeated or added)",
                    expected.last().map_or_else(|| "none".to_string(), |r| r.to_string())
                ),
            }));
        }
        let config: BTreeMap<String, String> =
            serde_json::from_value(v.get("config").cloned().unwrap_or(Value::Null))
                .map_err(|_| bad("no configuration".into()))?;
        let seed = v.get("seed").and_then(Value::as_u64);
        let (want_config, want_seed) = (
            &manifest.configs[run / manifest.seeds],
            manifest.seed_of(run),
        );
        if &config != want_config || seed != Some(want_seed) {
            return Err(bad(format!(
                "run {run} is not configuration {} with seed {want_seed}",
                settings(want_config)
            )));
        }
        let result = if let Some(message) = v.get("error").and_then(Value::as_str) {
            Err(message.to_string())
        } else {
            let exact: BTreeMap<String, String> =
                serde_json::from_value(v.get("exact_f64").cloned().unwrap_or(json!({})))
                    .map_err(|_| bad("\"exact_f64\" is not a map of pointers to bits".into()))?;
            for (pointer, bits) in &exact {
                let x = u64::from_str_radix(bits, 16)
                    .map(f64::from_bits)
                    .map_err(|_| bad(format!("\"exact_f64\" {pointer}: {bits:?} is not hex")))?;
                let slot = v
                    .pointer_mut(pointer)
                    .ok_or_else(|| bad(format!("\"exact_f64\" {pointer}: no such figure")))?;
                *slot = json!(x);
            }
            let summary = v.get_mut("summary").map(Value::take).unwrap_or(Value::Null);
            Ok(serde_json::from_value::<Summary>(summary)
                .map_err(|e| bad(format!("no readable summary ({e})")))?)
        };
        runs.push(ShardRun {
            run,
            config,
            seed: want_seed,
            result,
        });
    }
    if runs.len() != expected.len() {
        return Err(format!(
            "{}: {} of the shard's {} runs; the shard did not finish writing: run shard {} again",
            runs_path.display(),
            runs.len(),
            expected.len(),
            manifest.shard
        ));
    }
    Ok((manifest, runs))
}

fn settings(config: &BTreeMap<String, String>) -> String {
    if config.is_empty() {
        return "as written".to_string();
    }
    let s: Vec<String> = config.iter().map(|(k, v)| format!("{k}={v}")).collect();
    s.join(", ")
}

#[derive(Debug, Args)]
pub struct MergeArgs {
    /// The shard folders (`--out` of each `stampede sweep ... --shard I/N`), every shard
    /// exactly once, in any order.
    #[arg(value_name = "DIR", required = true, num_args = 1..)]
    shards: Vec<PathBuf>,
    /// Output folder (default: runs/<scenario name>-sweep/, as the unsharded sweep).
    #[arg(long, value_name = "DIR")]
    out: Option<PathBuf>,
    /// Also write every sweep plot as PNG beside its SVG.
    #[arg(long)]
    png: bool,
}

/// Checks that `shards` are every shard of one sweep, once each; returns every run in sweep
/// order.
pub fn combine(
    shards: Vec<(PathBuf, Manifest, Vec<ShardRun>)>,
) -> Result<(Manifest, Vec<ShardRun>), String> {
    let Some((first_dir, first, _)) = shards.first() else {
        return Err("no shard folders given: stampede sweep merge DIR...".to_string());
    };
    let (first_dir, first) = (first_dir.clone(), first.clone());
    let mut seen: BTreeMap<u32, PathBuf> = BTreeMap::new();
    for (dir, m, _) in &shards {
        let differ = |what: String| {
            format!(
                "{} and {} are shards of different sweeps ({what}); merge the shards of one sweep, all run with the same scenario, --vary, --set, --seed and --seeds",
                first_dir.display(),
                dir.display()
            )
        };
        if m.stampede_version != first.stampede_version {
            return Err(differ(format!(
                "written by stampede {} and {}; write every shard with the same version",
                first.stampede_version, m.stampede_version
            )));
        }
        if m.scenario != first.scenario {
            return Err(differ(format!(
                "scenario {:?} and {:?}",
                first.scenario, m.scenario
            )));
        }
        let same_sweep = Manifest {
            shard: first.shard,
            ..m.clone()
        } == first;
        if m.sweep_hash != first.sweep_hash || !same_sweep {
            return Err(differ(format!(
                "sweep hash {} and {}",
                first.sweep_hash, m.sweep_hash
            )));
        }
        if m.shard.count != first.shard.count {
            return Err(format!(
                "{} is shard {} and {} is shard {}: one sweep split in {} and in {} shards; merge shards of one split (the same N in every --shard I/N)",
                first_dir.display(),
                first.shard,
                dir.display(),
                m.shard,
                first.shard.count,
                m.shard.count
            ));
        }
        if let Some(other) = seen.insert(m.shard.index, dir.clone()) {
            return Err(format!(
                "shard {} is given twice: {} and {}; give each shard folder once",
                m.shard,
                other.display(),
                dir.display()
            ));
        }
    }
    let missing_count = first.shard.count as usize - seen.len();
    // The first few named: a split in thousands of shards would otherwise list them all.
    let missing: Vec<String> = (0..first.shard.count)
        .filter(|i| !seen.contains_key(i))
        .take(SHOWN_MISSING)
        .map(|i| format!("{i}/{}", first.shard.count))
        .collect();
    if !missing.is_empty() {
        let given: BTreeSet<String> = seen.values().map(|d| d.display().to_string()).collect();
        let more = match missing_count - missing.len() {
            0 => String::new(),
            n => format!(" and {n} more"),
        };
        return Err(format!(
            "{} {}{more} of sweep {} {} missing (given: {}); run `stampede sweep ... --shard {}` with the same arguments and pass its folder too",
            if missing_count == 1 { "shard" } else { "shards" },
            missing.join(", "),
            first.sweep_hash,
            if missing_count == 1 { "is" } else { "are" },
            given.into_iter().collect::<Vec<_>>().join(", "),
            missing[0]
        ));
    }
    let mut all: BTreeMap<usize, ShardRun> = BTreeMap::new();
    for (_, _, runs) in shards {
        for run in runs {
            all.insert(run.run, run);
        }
    }
    // Each shard held exactly its own runs (read_shard checks), so this is every run.
    if all.len() != first.total_runs {
        return Err(format!(
            "the shards hold {} of the sweep's {} runs; run the shards again",
            all.len(),
            first.total_runs
        ));
    }
    Ok((first, all.into_values().collect()))
}

/// `stampede sweep merge DIR... [--out DIR] [--png]`.
pub fn merge_main(args: MergeArgs) -> ExitCode {
    if args.png && !stampede_reports::PNG_SUPPORTED {
        return exit::bad_input(format!("--png: {}", stampede_reports::PNG_UNSUPPORTED));
    }
    let mut shards = Vec::with_capacity(args.shards.len());
    for dir in &args.shards {
        match read_shard(dir) {
            Ok((manifest, runs)) => shards.push((dir.clone(), manifest, runs)),
            Err(message) => return exit::bad_input(message),
        }
    }
    let (manifest, runs) = match combine(shards) {
        Ok(merged) => merged,
        Err(message) => return exit::bad_input(message),
    };
    let out_dir = match out_dir(args.out, &manifest) {
        Ok(dir) => dir,
        Err(message) => return exit::bad_input(message),
    };
    if let Err(message) = crate::sweep::make_out_dir(&out_dir) {
        return exit::bad_input(message);
    }
    println!(
        "sweep {}: merged {} shards: {} configurations x {} seeds = {} runs",
        manifest.scenario,
        manifest.shard.count,
        manifest.configs.len(),
        manifest.seeds,
        manifest.total_runs
    );
    let (rows, errors) = split_runs(runs.into_iter().map(|r| (r.config, r.seed, r.result)));
    finish(
        &out_dir,
        &manifest.configs,
        &manifest.varied_keys,
        &rows,
        &errors,
        args.png,
    )
}

/// The merged sweep's folder: `--out`, or the one the shards' manifest names when it is a
/// folder under this one.
fn out_dir(out: Option<PathBuf>, manifest: &Manifest) -> Result<PathBuf, String> {
    if let Some(dir) = out {
        return Ok(dir);
    }
    // Read from a shard's folder, which may have come from anywhere: the sweep wrote a
    // folder under runs/, so anything else (`/etc`, `../..`) is refused.
    let default = PathBuf::from(&manifest.default_out);
    // And not empty: that wrote the merged files into the working directory itself.
    let inside = default.components().next().is_some()
        && default
            .components()
            .all(|c| matches!(c, std::path::Component::Normal(_)));
    if !inside {
        return Err(format!(
            "the shards' manifest names {} as the merged sweep's folder, which is not a folder \
             under this one as a sweep writes it; give the folder with --out",
            default.display()
        ));
    }
    Ok(default)
}

/// The end of a shard: writes its folder and says how to merge. Exit 0, or 2 when the folder
/// cannot be written or a run could not play (its error is printed, and kept for the merge).
pub fn finish_shard(out_dir: &Path, manifest: &Manifest, runs: &[ShardRun], png: bool) -> ExitCode {
    if let Err(message) = write_shard(out_dir, manifest, runs) {
        return exit::bad_input(message);
    }
    println!(
        "wrote {} (shard {}); merge every shard with: stampede sweep merge DIR... --out DIR",
        out_dir.display(),
        manifest.shard
    );
    if png {
        println!("note: a shard writes no plots; give --png to `stampede sweep merge`");
    }
    let mut failed = false;
    for run in runs {
        if let Err(message) = &run.result {
            let run = FailedRun {
                config: run.config.clone(),
                seed: run.seed,
                message: message.clone(),
            };
            eprintln!("error: {run}");
            failed = true;
        }
    }
    ExitCode::from(if failed {
        exit::BAD_INPUT
    } else {
        exit::PASSED
    })
}

/// A run of a sweep that could not play: its configuration, its seed and why.
pub struct FailedRun {
    config: BTreeMap<String, String>,
    seed: u64,
    message: String,
}

impl std::fmt::Display for FailedRun {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let settings: Vec<String> = self
            .config
            .iter()
            .map(|(k, v)| format!("{k}={v}"))
            .collect();
        if settings.is_empty() {
            write!(
                f,
                "the scenario as written, seed {}: {}",
                self.seed, self.message
            )
        } else {
            write!(
                f,
                "{}, seed {}: {}",
                settings.join(", "),
                self.seed,
                self.message
            )
        }
    }
}

/// A sweep's runs, `(configuration, seed, what it measured or why it could not play)` in
/// run order, as the rows it measured and the runs that failed.
pub fn split_runs(
    runs: impl Iterator<Item = (BTreeMap<String, String>, u64, Result<Summary, String>)>,
) -> (Vec<SweepRow>, Vec<FailedRun>) {
    let mut rows = Vec::new();
    let mut failed = Vec::new();
    for (config, seed, result) in runs {
        match result {
            Ok(summary) => rows.push(SweepRow {
                config,
                seed,
                summary,
            }),
            Err(message) => failed.push(FailedRun {
                config,
                seed,
                message,
            }),
        }
    }
    (rows, failed)
}

/// The recommendation among the configurations every run of which played, counting every
/// configuration of the sweep as tried.
fn recommend_played(
    configs: &[BTreeMap<String, String>],
    rows: &[SweepRow],
    errors: &[FailedRun],
) -> Recommendation {
    let whole: Vec<SweepRow> = rows
        .iter()
        .filter(|r| !errors.iter().any(|e| e.config == r.config))
        .cloned()
        .collect();
    let mut recommendation = recommend(&whole);
    recommendation.configs = configs.len();
    recommendation
}

/// Prints each run that could not play, a line each.
fn print_failed(errors: &[FailedRun]) {
    for e in errors {
        eprintln!("error: {e}");
    }
}

/// The end of an unsharded sweep or a merge: the per-configuration lines, the outputs, the
/// recommendation, the exit code. A configuration with a run that could not play is never
/// recommended (its other seeds alone said nothing of that one), and the recommendation
/// counts every configuration of the sweep as tried.
pub fn finish(
    out_dir: &Path,
    configs: &[BTreeMap<String, String>],
    keys: &[String],
    rows: &[SweepRow],
    errors: &[FailedRun],
    png: bool,
) -> ExitCode {
    print_configs(configs, rows);
    if rows.is_empty() && !errors.is_empty() {
        // Nothing was measured: an earlier sweep's files in the folder stay as they were,
        // where an empty sweep.csv had replaced them.
        print_failed(errors);
        eprintln!(
            "error: none of the sweep's {} runs could play (above): nothing was written into {}",
            errors.len(),
            out_dir.display()
        );
        return ExitCode::from(exit::BAD_INPUT);
    }
    let recommendation = recommend_played(configs, rows, errors);
    let line = recommendation.line();
    if let Err(message) = write_outputs(out_dir, rows, keys, &line, png) {
        return exit::bad_input(message);
    }
    println!("wrote {}", out_dir.display());
    println!("{line}");
    if !errors.is_empty() {
        print_failed(errors);
        eprintln!(
            "error: {} of the sweep's runs could not play (above): they are not in sweep.csv, \
             and no configuration with one is recommended",
            errors.len()
        );
        return ExitCode::from(exit::BAD_INPUT);
    }
    if recommendation.config.is_none() {
        ExitCode::from(exit::EXPECTATION_FAILED)
    } else {
        ExitCode::from(exit::PASSED)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shard_text_is_i_of_n_from_zero() {
        assert_eq!(parse_shard("0/3"), Ok(Shard { index: 0, count: 3 }));
        assert_eq!(parse_shard("2/3"), Ok(Shard { index: 2, count: 3 }));
        assert_eq!(parse_shard("0/1"), Ok(Shard { index: 0, count: 1 }));
        assert!(parse_shard("3/3").unwrap_err().contains("last is 2/3"));
        assert!(parse_shard("0/0").unwrap_err().contains("at least 1"));
        assert!(parse_shard("a/b")
            .unwrap_err()
            .contains("not a whole number"));
        assert!(parse_shard("1").unwrap_err().contains("expected I/N"));
        assert!(parse_shard("0/18446744073709551616")
            .unwrap_err()
            .contains("N 18446744073709551616 is too large"));
        let file = tempfile::NamedTempFile::new().unwrap();
        assert!(read_shard(file.path())
            .unwrap_err()
            .contains(": not a folder;"));
        assert!(parse_shard("-1/3")
            .unwrap_err()
            .contains("not a whole number"));
    }

    #[test]
    fn shards_split_the_runs_into_disjoint_parts_that_cover_them() {
        for count in 1..6u32 {
            let mut owners = vec![0; 23];
            for index in 0..count {
                let shard = Shard { index, count };
                for (run, n) in owners.iter_mut().enumerate() {
                    if shard.owns(run) {
                        *n += 1;
                    }
                }
            }
            assert!(owners.iter().all(|&n| n == 1), "{count}: {owners:?}");
        }
    }

    #[test]
    fn a_float_the_reader_would_round_comes_back_with_the_same_bits() {
        // serde_json's default reader reads this shortest text one bit off.
        let awkward = f64::from_bits(0x3fba_5de6_a347_228d);
        let text = serde_json::to_string(&awkward).unwrap();
        let misread: f64 = serde_json::from_str(&text).unwrap();
        assert_ne!(
            misread.to_bits(),
            awkward.to_bits(),
            "the reader got exact: {text}"
        );

        let summary = Summary {
            scenario: "s".into(),
            attempts_per_logical: awkward,
            goodput_per_min: 1.5,
            ..Summary::default()
        };
        let manifest = Manifest {
            scenario: "s".into(),
            sweep_hash: "00".into(),
            stampede_version: "v".into(),
            shard: Shard { index: 1, count: 2 },
            total_runs: 4,
            first_seed: 7,
            seeds: 2,
            varied_keys: vec!["k".into()],
            configs: vec![
                BTreeMap::from([("k".to_string(), "a/b~".to_string())]),
                BTreeMap::from([("k".to_string(), "2".to_string())]),
            ],
            default_out: "runs/s-sweep".into(),
        };
        let runs = vec![
            ShardRun {
                run: 1,
                config: manifest.configs[0].clone(),
                seed: 8,
                result: Ok(summary),
            },
            ShardRun {
                run: 3,
                config: manifest.configs[1].clone(),
                seed: 8,
                result: Err("it broke".into()),
            },
        ];
        let dir = tempfile::tempdir().unwrap();
        write_shard(dir.path(), &manifest, &runs).unwrap();
        let (read_manifest, read_runs) = read_shard(dir.path()).unwrap();
        assert_eq!(read_manifest, manifest);
        assert_eq!(read_runs, runs);
        let mut slow = runs.clone();
        if let Ok(s) = &mut slow[0].result {
            s.wall_ms = 1234;
        }
        let again = tempfile::tempdir().unwrap();
        write_shard(again.path(), &manifest, &slow).unwrap();
        for file in [MANIFEST, RUNS] {
            assert_eq!(
                std::fs::read(dir.path().join(file)).unwrap(),
                std::fs::read(again.path().join(file)).unwrap(),
                "{file}: wall time is left out"
            );
        }
        let Ok(s) = &read_runs[0].result else {
            panic!("a summary")
        };
        assert_eq!(s.attempts_per_logical.to_bits(), awkward.to_bits());

        // A manifest changed by hand to more shards than runs is refused when read, where
        // the merge then listed every one of its shards missing (4 billion of them).
        let mut split = manifest.clone();
        split.shard = Shard {
            index: 1,
            count: 4_000_000_000,
        };
        let hand = tempfile::tempdir().unwrap();
        write_shard(hand.path(), &split, &runs).unwrap();
        let err = read_shard(hand.path()).unwrap_err();
        assert!(
            err.contains("4 runs in 4000000000 shards is not a sweep stampede writes"),
            "{err}"
        );
    }

    /// A configuration one of whose runs could not play is not recommended on its other
    /// seeds, and every configuration counts as tried: a sweep had recommended a
    /// configuration "on all 1 seeds" of its 2, and said "0 configurations tried" of 2.
    #[test]
    fn a_configuration_with_a_run_that_could_not_play_is_not_recommended() {
        let config =
            |workers: &str| BTreeMap::from([("client.workers".to_string(), workers.to_string())]);
        let summary = |attempts: u64| Summary {
            outbound_attempts: attempts,
            ..Summary::default()
        };
        let runs = vec![
            (config("8"), 1, Ok(summary(100))),
            (config("8"), 2, Ok(summary(100))),
            (config("4"), 1, Ok(summary(50))),
            (config("4"), 2, Err("cannot start the client".to_string())),
        ];
        let (rows, errors) = split_runs(runs.into_iter());
        let configs = [config("4"), config("8")];
        let rec = recommend_played(&configs, &rows, &errors);
        assert_eq!(rec.config, Some(config("8")), "{}", rec.line());
        assert_eq!(rec.configs, 2);
        assert_eq!(
            errors[0].to_string(),
            "client.workers=4, seed 2: cannot start the client"
        );
        let none = recommend_played(&configs, &[], &errors);
        assert!(
            none.line().contains("(2 configurations tried)"),
            "{}",
            none.line()
        );
    }
}
