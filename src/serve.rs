//! `stampede serve [--scenario SCENARIO] [--addr 127.0.0.1:8080]`: the fake provider over HTTP,
//! for pointing any client at it. Runs until Ctrl-C.

use std::net::SocketAddr;
use std::path::PathBuf;
use std::process::ExitCode;

use std::sync::Arc;

use clap::Args;
use stampede_sim::scenario;

use crate::exit;

#[derive(Debug, Args)]
pub struct ServeArgs {
    /// Scenario whose `[provider]` table configures the provider (default: a demo account).
    #[arg(long, value_name = "SCENARIO")]
    scenario: Option<PathBuf>,
    /// With a scenario that names several providers (`[providers.<name>]`): which one to
    /// serve.
    #[arg(long, value_name = "NAME", requires = "scenario")]
    provider: Option<String>,
    /// Address to bind. Loopback unless you say otherwise (a non-loopback address is warned
    /// about, and its control plane needs a token).
    #[arg(long, default_value = "127.0.0.1:8080", value_parser = socket_addr)]
    addr: SocketAddr,
    /// Token `/_stampede/*` requires (`Authorization: Bearer TOKEN`); default: the
    /// STAMPEDE_CONTROL_TOKEN environment variable, which, unlike a flag, other users of
    /// the machine cannot read from the process list. On a non-loopback address without
    /// one, a token is generated and printed once.
    #[arg(long, value_name = "TOKEN")]
    control_token: Option<String>,
}

/// `--addr`: an IP address and a port (1 to 65535, or 0 for any free one), refused with an
/// example of what to write instead of the parser's "invalid socket address syntax".
fn socket_addr(text: &str) -> Result<SocketAddr, String> {
    text.parse().map_err(|_| {
        "give an IP address and a port, like 127.0.0.1:8080 (port 0 picks a free one; \
         [::1]:8080 for IPv6)"
            .to_string()
    })
}

pub fn main(args: ServeArgs) -> ExitCode {
    let runtime = match tokio::runtime::Runtime::new() {
        Ok(rt) => rt,
        Err(e) => return exit::bad_input(format!("cannot start the async runtime: {e}")),
    };
    // A whole scenario uploaded to `PUT /_stampede/scenario` is checked as `stampede validate`
    // checks a file.
    let check = stampede_provider::server::ScenarioCheck(Arc::new(|text: &str| {
        scenario::parse(text, "request body", &[])
            .map(drop)
            .map_err(|e| e.to_string())
    }));
    match runtime.block_on(stampede_provider::server::serve_cli(
        args.scenario.as_deref(),
        args.provider.as_deref(),
        args.addr,
        args.control_token
            .or_else(|| std::env::var("STAMPEDE_CONTROL_TOKEN").ok())
            .filter(|t| !t.is_empty()),
        Some(check),
    )) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => exit::bad_input(e),
    }
}
