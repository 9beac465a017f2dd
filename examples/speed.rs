//! The README's Speed table, measured: runs every benchmark of the workspace and prints the
//! table in markdown, each figure the median of several runs, with the command that made it.
//!
//! ```text
//! cargo run --release --example speed                # every row, 3 runs each (a few minutes)
//! cargo run --release --example speed -- --runs 5    # more runs per figure
//! cargo run --release --example speed -- --quick     # one run each, small inputs: checks the command works
//! speed --quick --profile dev                         # the programs built in another cargo profile (CI)
//! cargo run --release --example speed -- --pgo      # the profile-guided build of scripts/pgo.sh
//! ```
//!
//! It builds the programs it runs first ([`PROGRAMS`], in the release profile unless
//! `--profile` names another), then runs each benchmark in its own process (so a peak-memory
//! figure is that benchmark's alone). Rows whose tool is missing (`wrk` for the HTTP server)
//! say so instead of a figure. Speed is measured here and never asserted in a test: these
//! machines are shared and noisy.
//!
//! The table's header names the CPU, and any `CARGO_PROFILE_<PROFILE>_*` (for the profile
//! built) or `RUSTFLAGS` set in the environment: each makes another build than the README's,
//! as `CARGO_PROFILE_RELEASE_LTO=false` would. The programs are looked for under
//! `CARGO_TARGET_DIR` when it is set, where cargo builds them.
//!
//! `--profile NAME` builds and runs the programs in cargo's profile `NAME` instead of
//! `release`, with every feature on, as `cargo test --workspace --all-features` builds: CI
//! runs `--quick --profile dev` after its tests, so the command is checked on the build the
//! tests already made instead of a release build of its own. The header then names that
//! profile, and its figures are that build's, not the README's.
//!
//! `--pgo` builds the same programs with `scripts/pgo.sh` (a release build optimised with
//! the profile of a training on the shipped scenarios, not on these benchmark programs) and
//! measures those, from `target/pgo/release/`; the header says so.

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// What `--help` prints.
const USAGE: &str = "\
Prints the README's Speed table: runs every benchmark, each in its own process, and prints
each figure as the median of several runs, with the command that made it.

usage: cargo run --release --example speed [-- OPTIONS]

  --runs N        runs per figure (default 3; the README's table used 5)
  --quick         one run each, small inputs, no million-request rows: checks the command works
  --profile NAME  builds and runs the programs in cargo's profile NAME (every feature on)
                  instead of release; the figures are then that build's, not the README's
  --pgo           builds the programs with scripts/pgo.sh (profile-guided, trained on the
                  shipped scenarios) and measures that build
  --help, -h      prints this";

struct Row {
    what: String,
    figure: String,
    command: String,
}

struct Opts {
    runs: usize,
    quick: bool,
    /// The cargo profile the programs are built and run in: `release` for the README's table.
    profile: String,
    /// Build and measure the profile-guided build of `scripts/pgo.sh` instead.
    pgo: bool,
}

fn main() {
    let mut opts = Opts {
        runs: 3,
        quick: false,
        profile: "release".into(),
        pgo: false,
    };
    let mut args = std::env::args().skip(1);
    while let Some(a) = args.next() {
        match a.as_str() {
            "--quick" => {
                opts.quick = true;
                opts.runs = 1;
            }
            "--runs" => match args.next().and_then(|n| n.parse().ok()) {
                Some(n) if n > 0 => opts.runs = n,
                _ => fail("--runs takes a number of runs above 0, e.g. --runs 5"),
            },
            "--profile" => match args.next() {
                Some(name) if !name.is_empty() && !name.starts_with('-') => opts.profile = name,
                _ => fail("--profile takes a cargo profile's name, e.g. --profile dev"),
            },
            "--pgo" => opts.pgo = true,
            "--help" | "-h" => {
                println!("{USAGE}");
                return;
            }
            other => fail(&format!(
                "unknown argument {other:?}: use --runs N, --quick, --profile NAME or --pgo \
                 (--help says what each does)"
            )),
        }
    }
    if opts.pgo && opts.profile != "release" {
        fail("--pgo builds in the release profile (scripts/pgo.sh): give it without --profile");
    }
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR"));
    build(&root, &opts);
    let mut rows = Vec::new();
    core_cycles(&root, &opts, &mut rows);
    simulator(&root, &opts, &mut rows);
    python_model(&root, &opts, &mut rows);
    whole_run(&root, &opts, &mut rows);
    server(&root, &opts, &mut rows);
    live_driver(&root, &opts, &mut rows);
    ledger(&root, &opts, &mut rows);

    println!();
    println!(
        "Measured {} on {} ({} cores, {}), median of {} run{} each:",
        today(),
        hostname(),
        std::thread::available_parallelism().map_or(0, |n| n.get()),
        cpu(),
        opts.runs,
        if opts.runs == 1 { "" } else { "s" }
    );
    if opts.pgo {
        println!();
        println!(
            "Built with profile-guided optimisation by `scripts/pgo.sh`, trained on the shipped \
             scenarios (backlog-38k among them) and a live run of the quickstart, not on these \
             benchmark programs; each row's program is that build's, in target/pgo/release/, \
             not the one its command builds."
        );
    }
    if opts.profile != "release" {
        println!();
        println!(
            "Built in cargo's `{}` profile with every feature on, not the release profile: \
             not comparable with a table built as `Cargo.toml` sets the release profile.",
            opts.profile
        );
    }
    let overrides = profile_overrides(&opts.profile);
    if !overrides.is_empty() {
        println!();
        println!(
            "Built with the `{}` profile overridden ({}): not comparable with a table \
             built as `Cargo.toml` sets the release profile.",
            opts.profile,
            overrides.join(", ")
        );
    }
    println!();
    println!("| what | figure | command |");
    println!("| --- | --- | --- |");
    for r in &rows {
        println!("| {} | {} | `{}` |", r.what, r.figure, r.command);
    }
}

fn fail(message: &str) -> ! {
    eprintln!("error: {message}");
    std::process::exit(2);
}

/// The release programs the table runs: the `stampede` binary and five examples. Only
/// these are built: every release binary is linked with whole-program optimisation, and the
/// workspace's other examples (four more) were as many more such links, about two minutes
/// each on the slower of the CPUs the README's Speed section names.
const PROGRAMS: [&str; 12] = [
    "--bin",
    "stampede",
    "--example",
    "cycle_rate",
    "--example",
    "bench_run",
    "--example",
    "live_overhead",
    "--example",
    "bench_server",
    "--example",
    "ledger_puts",
];

fn build(root: &Path, opts: &Opts) {
    if opts.pgo {
        eprintln!("building the binary and the examples the table runs with scripts/pgo.sh...");
        let status = Command::new(root.join("scripts/pgo.sh"))
            .current_dir(root)
            .args(PROGRAMS)
            .status()
            .unwrap_or_else(|e| fail(&format!("cannot run scripts/pgo.sh: {e}")));
        if !status.success() {
            fail("scripts/pgo.sh failed");
        }
        return;
    }
    eprintln!(
        "building the binary and the examples the table runs, profile {}...",
        opts.profile
    );
    let mut cargo = Command::new(env!("CARGO"));
    cargo
        .current_dir(root)
        // The whole workspace selected, as CI and scripts/instructions.sh build: the
        // features of shared dependencies are unified over the packages selected, so any
        // other selection would be a second build of them.
        .args(["build", "--profile", &opts.profile, "--workspace"]);
    if opts.profile != "release" {
        // As `cargo test --workspace --all-features` builds, so its build is reused.
        cargo.arg("--all-features");
    }
    let status = cargo
        .args(PROGRAMS)
        .status()
        .unwrap_or_else(|e| fail(&format!("cannot run cargo: {e}")));
    if !status.success() {
        fail(&format!("the build in profile {} failed", opts.profile));
    }
}

/// Where cargo put the build: `CARGO_TARGET_DIR` when set (relative to the repository, as
/// cargo reads it here), else `target/`.
fn target_dir(root: &Path) -> PathBuf {
    match std::env::var_os("CARGO_TARGET_DIR") {
        Some(dir) if !dir.is_empty() => root.join(dir),
        _ => root.join("target"),
    }
}

/// The directory cargo builds `profile` into, under the target directory: cargo's own
/// `dev` and `test` profiles build into `debug`, `bench` into `release`, any other into
/// its own name.
fn profile_dir(profile: &str) -> &str {
    match profile {
        "dev" | "test" => "debug",
        "bench" => "release",
        other => other,
    }
}

/// Binary `name` of the profile built (`examples/NAME` for an example).
fn binary(root: &Path, opts: &Opts, name: &str) -> PathBuf {
    if opts.pgo {
        // Where scripts/pgo.sh links its optimised build's release directory.
        return target_dir(root).join("pgo/release").join(name);
    }
    target_dir(root).join(profile_dir(&opts.profile)).join(name)
}

fn example(root: &Path, opts: &Opts, name: &str) -> PathBuf {
    binary(root, opts, "examples").join(name)
}

/// Runs a program to the end and gives its stdout; a failure stops the table.
fn output(program: &Path, args: &[&str], dir: &Path) -> String {
    let out = Command::new(program)
        .args(args)
        .current_dir(dir)
        .stderr(Stdio::inherit())
        .output()
        .unwrap_or_else(|e| fail(&format!("cannot run {}: {e}", program.display())));
    if !out.status.success() {
        fail(&format!(
            "{} {} exited with {}",
            program.display(),
            args.join(" "),
            out.status
        ));
    }
    String::from_utf8_lossy(&out.stdout).into_owned()
}

fn median(v: Vec<f64>) -> f64 {
    stampede_reports::number::median(&v).unwrap_or(f64::NAN)
}

/// The number just before `unit` in `text` (`"... 1234 cycles/s"` -> 1234).
fn number_before(text: &str, unit: &str) -> f64 {
    let at = text
        .find(unit)
        .unwrap_or_else(|| fail(&format!("no {unit:?} in the output:\n{text}")));
    text[..at]
        .split_whitespace()
        .last()
        .and_then(|w| w.trim_end_matches(',').parse().ok())
        .unwrap_or_else(|| fail(&format!("no number before {unit:?} in:\n{text}")))
}

/// `12345.6` as `12,346`.
fn thousands(x: f64) -> String {
    stampede_reports::number::fmt_grouped(x, 0)
}

fn core_cycles(root: &Path, opts: &Opts, rows: &mut Vec<Row>) {
    let cycles = if opts.quick { "100000" } else { "2000000" };
    let bin = example(root, opts, "cycle_rate");
    let rate = |extra: &[&str]| {
        let mut args = vec![cycles];
        args.extend_from_slice(extra);
        number_before(&output(&bin, &args, root), "cycles/s")
    };
    // Audit on, audit off and the ledger keeping nothing alternate, so a slow minute on this
    // shared machine weighs on every figure of the row alike (run one after the other, off
    // could come out slower than on).
    let (mut on, mut off, mut bare) = (Vec::new(), Vec::new(), Vec::new());
    for _ in 0..opts.runs {
        on.push(rate(&[]));
        off.push(rate(&["no-audit"]));
        bare.push(rate(&["keep-nothing"]));
    }
    let (on, off, bare) = (median(on), median(off), median(bare));
    rows.push(Row {
        what: "core: submit, dispatch and outcome cycles, 4,096 jobs queued".into(),
        figure: format!(
            "{:.2} M cycles/s with audit on; {:.2} M/s with audit off; {:.2} M/s with audit on \
             and an in-memory ledger that keeps nothing",
            on / 1e6,
            off / 1e6,
            bare / 1e6
        ),
        command: format!(
            "cargo run --release -p stampede-core --example cycle_rate {cycles} [no-audit] [keep-nothing]"
        ),
    });
}

/// One `bench_run` line: wall ms, useful events, events/s, refused offers, VmHWM MiB.
fn bench_run(root: &Path, opts: &Opts, runs: usize, spec: &str) -> (f64, f64, f64, f64, String) {
    let runs = runs.to_string();
    let text = output(&example(root, opts, "bench_run"), &[&runs, spec], root);
    let line = text
        .lines()
        .find(|l| l.starts_with(spec))
        .unwrap_or_else(|| fail(&format!("bench_run printed no line for {spec}:\n{text}")));
    let cols: Vec<&str> = line.split_whitespace().collect();
    let n = |i: usize| -> f64 { cols[i].parse().unwrap_or(f64::NAN) };
    (n(2), n(3), n(4), n(5), cols[6].to_string())
}

fn simulator(root: &Path, opts: &Opts, rows: &mut Vec<Row>) {
    let mut specs = vec![
        ("backlog-38k, stampede preset", "scenarios/backlog-38k.toml"),
        (
            "backlog-38k, naive preset",
            "scenarios/backlog-38k.toml@client.preset=naive",
        ),
    ];
    if !opts.quick {
        specs.push(("one million requests", "sim/examples/bench-1m.toml"));
    }
    for (what, spec) in specs {
        let (wall, events, rate, refused, hwm) = bench_run(root, opts, opts.runs, spec);
        rows.push(Row {
            what: format!("simulator loop: {what}"),
            figure: format!(
                "{} ms wall, {} K useful events/s ({} events; {} refused offers apart), {hwm} MiB peak RSS",
                thousands(wall),
                thousands(rate / 1e3),
                thousands(events),
                thousands(refused)
            ),
            command: format!(
                "cargo run --release -p stampede-sim --example bench_run -- {} {spec}",
                opts.runs
            ),
        });
    }
}

/// The naive backlog played by a hand-written Python model (`scripts/backlog_model.py`, a
/// lean heapq loop that counts what the scenario's expectations need and nothing more)
/// against the simulator's loop on the same scenario, alternating, so a slow minute weighs
/// on both. What a user would otherwise write by hand is the yardstick the simulator's
/// speed is for.
fn python_model(root: &Path, opts: &Opts, rows: &mut Vec<Row>) {
    let what = "hand-written Python model of the same naive backlog, against the simulator loop";
    let command = "python3 scripts/backlog_model.py --json, alternating with bench_run -- 1 scenarios/backlog-38k.toml@client.preset=naive";
    if !on_path("python3") {
        rows.push(Row {
            what: what.into(),
            figure: "not measured: python3 is not installed".into(),
            command: command.into(),
        });
        return;
    }
    let python = PathBuf::from("python3");
    let script = root.join("scripts/backlog_model.py").display().to_string();
    let spec = "scenarios/backlog-38k.toml@client.preset=naive";
    let (mut model, mut process, mut ours) = (Vec::new(), Vec::new(), Vec::new());
    for _ in 0..opts.runs {
        let started = Instant::now();
        let text = output(&python, &[&script, "--json"], root);
        process.push(started.elapsed().as_secs_f64() * 1e3);
        let figures: serde_json::Value = serde_json::from_str(text.trim())
            .unwrap_or_else(|e| fail(&format!("backlog_model.py printed no JSON ({e}):\n{text}")));
        let loop_s = figures["loop_s"]
            .as_f64()
            .unwrap_or_else(|| fail(&format!("no loop_s in backlog_model.py's output:\n{text}")));
        model.push(loop_s * 1e3);
        ours.push(bench_run(root, opts, 1, spec).0);
    }
    let (model, process, ours) = (median(model), median(process), median(ours));
    rows.push(Row {
        what: what.into(),
        figure: format!(
            "Python loop {} ms (whole process {} ms); simulator loop {} ms in the same alternation: {:.1}x the Python model's speed",
            thousands(model),
            thousands(process),
            thousands(ours),
            model / ours
        ),
        command: command.into(),
    });
}

/// Bytes under `dir`, recursively.
fn size_of(dir: &Path) -> u64 {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return 0;
    };
    entries
        .flatten()
        .map(|e| match e.metadata() {
            Ok(m) if m.is_dir() => size_of(&e.path()),
            Ok(m) => m.len(),
            Err(_) => 0,
        })
        .sum()
}

fn whole_run(root: &Path, opts: &Opts, rows: &mut Vec<Row>) {
    let bin = binary(root, opts, "stampede");
    let tmp = std::env::temp_dir().join(format!("stampede-speed-{}", std::process::id()));
    let mut cases = vec![(
        "backlog-38k, naive preset",
        vec!["scenarios/backlog-38k.toml", "--set", "client.preset=naive"],
    )];
    if !opts.quick {
        cases.push(("one million requests", vec!["sim/examples/bench-1m.toml"]));
    }
    for (what, args) in cases {
        let (mut walls, mut loops, mut rests) = (Vec::new(), Vec::new(), Vec::new());
        let mut size = 0;
        for _ in 0..opts.runs {
            let _ = std::fs::remove_dir_all(&tmp);
            let mut full = vec!["run"];
            full.extend(args.iter().copied());
            let out_dir = tmp.display().to_string();
            full.extend(["--out", &out_dir]);
            let started = Instant::now();
            // The run's exit code is its verdict (a failed expectation is 1), not an error.
            let output = Command::new(&bin)
                .args(&full)
                .current_dir(root)
                .stderr(Stdio::inherit())
                .output()
                .unwrap_or_else(|e| fail(&format!("cannot run {}: {e}", bin.display())));
            let wall = started.elapsed().as_secs_f64() * 1e3;
            walls.push(wall);
            if !matches!(output.status.code(), Some(0 | 1)) {
                let status = output.status;
                fail(&format!("stampede {} exited with {status}", full.join(" ")));
            }
            // The loop's own wall time, which the run prints; the rest is start-up and the
            // files written after the loop, which move far less from run to run.
            let loop_ms = loop_wall_ms(&String::from_utf8_lossy(&output.stdout));
            loops.push(loop_ms);
            rests.push(wall - loop_ms);
            size = size_of(&tmp);
        }
        let _ = std::fs::remove_dir_all(&tmp);
        rows.push(Row {
            what: format!("`stampede run --out` (every file written), whole process: {what}"),
            figure: format!(
                "{} ms wall (the loop {} ms, the rest {} ms), run directory {:.1} MB",
                thousands(median(walls)),
                thousands(median(loops)),
                thousands(median(rests)),
                size as f64 / 1e6
            ),
            command: format!("target/release/stampede run {} --out DIR", args.join(" ")),
        });
    }
}

/// The loop's wall time (ms) from a run's summary line `virtual time / wall (ms)  V / W`.
fn loop_wall_ms(stdout: &str) -> f64 {
    stdout
        .lines()
        .find(|line| line.contains("virtual time / wall (ms)"))
        .and_then(|line| line.split_whitespace().last())
        .and_then(|w| w.parse().ok())
        .unwrap_or_else(|| fail(&format!("no loop wall time in the run's output:\n{stdout}")))
}

fn on_path(tool: &str) -> bool {
    Command::new(tool)
        .arg("--version")
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .is_ok()
}

struct Killed(Child);

impl Drop for Killed {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

fn server(root: &Path, opts: &Opts, rows: &mut Vec<Row>) {
    let command = "bench_server -- admit (or reject) 127.0.0.1:PORT, then wrk -t2 -c64 -d8s --latency -s fake-provider/bench/chat.lua URL/v1/chat/completions";
    if !on_path("wrk") {
        rows.push(Row {
            what: "fake provider over HTTP".into(),
            figure: "not measured: wrk is not installed (`apt-get install wrk`)".into(),
            command: command.into(),
        });
        return;
    }
    for (mode, port, what) in [
        ("admit", "18091", "quota admits everything, journal on"),
        ("reject", "18092", "quota rejects most (429)"),
    ] {
        let addr = format!("127.0.0.1:{port}");
        let _server = Killed(
            Command::new(example(root, opts, "bench_server"))
                .args([mode, &addr])
                .current_dir(root)
                .stdout(Stdio::null())
                .stderr(Stdio::null())
                .spawn()
                .unwrap_or_else(|e| fail(&format!("cannot start bench_server: {e}"))),
        );
        let deadline = Instant::now() + Duration::from_secs(10);
        while std::net::TcpStream::connect(&addr).is_err() {
            if Instant::now() > deadline {
                fail("bench_server did not listen within 10 s");
            }
            std::thread::sleep(Duration::from_millis(50));
        }
        let secs = if opts.quick { "2s" } else { "8s" };
        let url = format!("http://{addr}/v1/chat/completions");
        let mut rates = Vec::new();
        let mut p99s = Vec::new();
        for _ in 0..opts.runs {
            let text = output(
                Path::new("wrk"),
                &[
                    "-t2",
                    "-c64",
                    "-d",
                    secs,
                    "--latency",
                    "-s",
                    "fake-provider/bench/chat.lua",
                    &url,
                ],
                root,
            );
            let rate = text
                .lines()
                .find_map(|l| l.strip_prefix("Requests/sec:"))
                .and_then(|v| v.trim().parse::<f64>().ok())
                .unwrap_or_else(|| fail(&format!("no Requests/sec in wrk's output:\n{text}")));
            let p99 = text
                .lines()
                .find_map(|l| l.trim().strip_prefix("99%"))
                .map(|v| wrk_ms(v.trim()))
                .unwrap_or(f64::NAN);
            rates.push(rate);
            p99s.push(p99);
        }
        rows.push(Row {
            what: format!("fake provider over HTTP, chat-completions POST, {what}"),
            figure: format!(
                "{} req/s, p99 {:.2} ms",
                thousands(median(rates)),
                median(p99s)
            ),
            command: command.into(),
        });
    }
}

/// A wrk latency (`"812.00us"`, `"3.21ms"`, `"1.02s"`) in ms.
fn wrk_ms(v: &str) -> f64 {
    let (num, scale) = if let Some(n) = v.strip_suffix("us") {
        (n, 1e-3)
    } else if let Some(n) = v.strip_suffix("ms") {
        (n, 1.0)
    } else if let Some(n) = v.strip_suffix('s') {
        (n, 1e3)
    } else {
        (v, 1.0)
    };
    num.parse::<f64>().map_or(f64::NAN, |x| x * scale)
}

fn live_driver(root: &Path, opts: &Opts, rows: &mut Vec<Row>) {
    let bin = example(root, opts, "live_overhead");
    let attempts = if opts.quick { "2000" } else { "20000" };
    for workers in ["64", "8"] {
        // Each live_overhead takes its own median of 3 runs; the row is the median of
        // `runs` of those, with the spread of their rates (this figure moves the most on a
        // shared machine: a busy neighbour slows both halves of every exchange).
        let (mut rates, mut p50s, mut p99s) = (Vec::new(), Vec::new(), Vec::new());
        for _ in 0..opts.runs {
            let text = output(&bin, &[attempts, workers], root);
            let line = text
                .lines()
                .find(|l| l.starts_with("median of"))
                .unwrap_or_else(|| fail(&format!("live_overhead printed no median:\n{text}")));
            rates.push(number_before(line, "attempts/s"));
            p50s.push(number_before(&line[line.find("p50").unwrap_or(0)..], "µs"));
            p99s.push(number_before(&line[line.find("p99").unwrap_or(0)..], "µs"));
        }
        let (slowest, fastest) = rates.iter().fold((f64::INFINITY, 0.0_f64), |(lo, hi), &r| {
            (lo.min(r), hi.max(r))
        });
        let spread = if opts.runs > 1 {
            format!(
                " (runs from {} to {} attempts/s)",
                thousands(slowest),
                thousands(fastest)
            )
        } else {
            String::new()
        };
        rows.push(Row {
            what: format!("live driver against the in-process provider, {workers} workers"),
            figure: format!(
                "{} attempts/s, overhead per attempt p50 {:.0} µs, p99 {:.0} µs{spread}",
                thousands(median(rates)),
                median(p50s),
                median(p99s)
            ),
            command: format!(
                "cargo run --release -p stampede-sim --example live_overhead -- {attempts} {workers}"
            ),
        });
    }
}

fn ledger(root: &Path, opts: &Opts, rows: &mut Vec<Row>) {
    // On the repository's disk, not a tmpfs where fsync would be free.
    let dir = target_dir(root).join(format!("speed-ledger-{}", std::process::id()));
    let _ = std::fs::create_dir_all(&dir);
    let puts = if opts.quick { "200" } else { "2000" };
    let dir_text = dir.display().to_string();
    let text = output(
        &example(root, opts, "ledger_puts"),
        &[puts, &dir_text],
        root,
    );
    let _ = std::fs::remove_dir_all(&dir);
    let full = text
        .lines()
        .find(|l| l.starts_with("synchronous=Full"))
        .map_or(f64::NAN, |l| number_before(l, "puts/s"));
    let normal = text
        .lines()
        .find(|l| l.starts_with("synchronous=Normal"))
        .map_or(f64::NAN, |l| number_before(l, "puts/s"));
    rows.push(Row {
        what: "SQLite ledger puts".into(),
        figure: format!(
            "{}/s with `synchronous=FULL`; {}/s with `NORMAL`",
            thousands(full),
            thousands(normal)
        ),
        command: format!(
            "cargo run --release -p stampede-durable --example ledger_puts -- {puts} DIR"
        ),
    });
}

/// The variables set in the environment that change the build, as `NAME=value`: cargo
/// applies `CARGO_PROFILE_<PROFILE>_*` over `Cargo.toml`'s `profile`
/// (`CARGO_PROFILE_RELEASE_LTO` for the release profile) and `RUSTFLAGS` to every
/// compilation, so a table built under one measures another build than the README's.
fn profile_overrides(profile: &str) -> Vec<String> {
    let prefix = format!(
        "CARGO_PROFILE_{}_",
        profile.to_ascii_uppercase().replace('-', "_")
    );
    let mut set: Vec<String> = std::env::vars()
        .filter(|(name, _)| name.starts_with(&prefix) || name == "RUSTFLAGS")
        .map(|(name, value)| format!("{name}={value}"))
        .collect();
    set.sort();
    set
}

fn today() -> String {
    Command::new("date")
        .arg("+%F")
        .output()
        .ok()
        .map(|o| String::from_utf8_lossy(&o.stdout).trim().to_string())
        .filter(|d| !d.is_empty())
        .unwrap_or_else(|| "today".into())
}

/// The CPU's model as the kernel names it (`/proc/cpuinfo`), with its family, model and
/// stepping where given: the VMs these figures come from change CPU between sessions (the
/// same commit ran its naive backlog loop in 192 ms on one and 680 ms on another), so a
/// table is comparable only with one made on the same kind of CPU.
fn cpu() -> String {
    let info = std::fs::read_to_string("/proc/cpuinfo").unwrap_or_default();
    let field = |key: &str| {
        info.lines()
            .find_map(|line| {
                let (k, v) = line.split_once(':')?;
                (k.trim() == key).then(|| v.trim().to_string())
            })
            .filter(|v| !v.is_empty())
    };
    let Some(model) = field("model name") else {
        return "CPU unknown".into();
    };
    match (field("cpu family"), field("model"), field("stepping")) {
        (Some(family), Some(number), Some(stepping)) => {
            format!("{model}, family {family} model {number} stepping {stepping}")
        }
        _ => model,
    }
}

fn hostname() -> String {
    std::fs::read_to_string("/proc/sys/kernel/hostname")
        .map(|h| h.trim().to_string())
        .unwrap_or_else(|_| "this machine".into())
}
