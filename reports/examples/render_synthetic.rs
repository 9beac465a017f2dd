//! Renders the synthetic run and sweep used by the tests into a folder, to look at the
//! plots and the page: `cargo run -p stampede-reports --example render_synthetic -- OUT_DIR
//! [BUCKETS] [--png]` (BUCKETS one-second time buckets, default 300; `--png` also writes every
//! plot as PNG).
//! Prints the size of each file written and the time rendering took.

#[path = "../tests/common/mod.rs"]
mod common;

use std::path::PathBuf;
use std::time::Instant;

use stampede_reports::{
    recommend, render, render_sweep_plots_with, write_sweep_csv, RenderOptions,
};

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let png = args.iter().any(|a| a == "--png");
    let mut positional = args.iter().filter(|a| *a != "--png");
    let out = PathBuf::from(
        positional
            .next()
            .cloned()
            .unwrap_or_else(|| "target/synthetic-report".into()),
    );
    let buckets = positional
        .next()
        .and_then(|b| b.parse().ok())
        .unwrap_or(300);
    let opts = RenderOptions {
        png,
        ..RenderOptions::default()
    };
    let report = common::synthetic_report_of(7, buckets);
    let started = Instant::now();
    let rendered = render(&out, &report, &opts)?;
    let run_ms = started.elapsed().as_secs_f64() * 1000.0;
    for f in &rendered.files {
        println!("{:>9} bytes  {}", std::fs::metadata(f)?.len(), f.display());
    }
    println!(
        "rendered {} buckets in {run_ms:.1} ms",
        report.timeseries.len()
    );

    let rows = common::sweep_grid();
    let keys = vec![
        "client.max_attempts".to_string(),
        "provider.scopes.0.rpm".to_string(),
    ];
    let sweep_dir = out.join("sweep");
    for f in render_sweep_plots_with(&sweep_dir, &rows, &keys, &opts)? {
        println!("{:>9} bytes  {}", std::fs::metadata(&f)?.len(), f.display());
    }
    write_sweep_csv(&sweep_dir.join("sweep.csv"), &rows)?;
    println!("{}", recommend(&rows));
    Ok(())
}
