//! `stampede serve [--scenario SCENARIO] [--addr 127.0.0.1:8080]`: the fake provider over HTTP,
//! for pointing any client at it. Runs until Ctrl-C.

use std::net::SocketAddr;
use std::path::PathBuf;
use std::process::ExitCode;

use clap::Args;

use crate::exit;

#[derive(Debug, Args)]
pub struct ServeArgs {
    /// Scenario whose `[provider]` table configures the provider (default: a demo account).
    #[arg(long, value_name = "SCENARIO")]
    scenario: Option<PathBuf>,
    /// Address to bind. Loopback unless you say otherwise.
    #[arg(long, default_value = "127.0.0.1:8080")]
    addr: SocketAddr,
}

pub fn main(args: ServeArgs) -> ExitCode {
    let runtime = match tokio::runtime::Runtime::new() {
        Ok(rt) => rt,
        Err(e) => return exit::bad_input(format!("cannot start the async runtime: {e}")),
    };
    match runtime.block_on(stampede_provider::server::serve_cli(
        args.scenario.as_deref(),
        args.addr,
    )) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => exit::bad_input(e),
    }
}
