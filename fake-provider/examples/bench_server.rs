//! Starts the fake provider on 127.0.0.1 for a load tool (wrk, oha) to hit.
//!
//! ```text
//! cargo run --release -p stampede-provider --example bench_server -- admit 127.0.0.1:18080
//! cargo run --release -p stampede-provider --example bench_server -- reject 127.0.0.1:18080
//! cargo run --release -p stampede-provider --example bench_server -- path/to/scenario.toml 127.0.0.1:18080
//! ```
//! `admit`: one scope with no limits and zero latency, so every attempt is answered 200.
//! `reject`: the same scope with `rpm = 100`, so nearly every attempt gets a 429.
//! The journal is on in both (the server's ring); stats are printed on Ctrl-C.

use stampede_provider::config::{
    CredentialConfig, DurationMs, LatencyConfig, ProviderConfig, ScopeLimits,
};
use stampede_provider::server::{serve_listener, ServerOptions};
use std::net::SocketAddr;

fn config(rpm: Option<u64>) -> ProviderConfig {
    ProviderConfig {
        latency: LatencyConfig::fixed_ms(0),
        tool_latency: LatencyConfig::fixed_ms(0),
        reject_latency: DurationMs(0),
        scopes: vec![ScopeLimits {
            rpm,
            ..ScopeLimits::unlimited("account:bench")
        }],
        credentials: vec![CredentialConfig {
            key: "sk-bench".into(),
            scope: "account:bench".into(),
            scopes: Vec::new(),
        }],
        ..ProviderConfig::default()
    }
}

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let mut args = std::env::args().skip(1);
    let mode = args.next().unwrap_or_else(|| "admit".to_string());
    let addr: SocketAddr = args
        .next()
        .unwrap_or_else(|| "127.0.0.1:18080".to_string())
        .parse()?;
    let config = match mode.as_str() {
        "admit" => config(None),
        "reject" => config(Some(100)),
        path => {
            let text = std::fs::read_to_string(path)?;
            ProviderConfig::from_scenario_toml(&text, path)?
        }
    };
    let listener = tokio::net::TcpListener::bind(addr).await?;
    println!(
        "bench_server ({mode}) on http://{}  key: Bearer sk-bench",
        listener.local_addr()?
    );
    serve_listener(config, ServerOptions::default(), listener, async {
        let _ = tokio::signal::ctrl_c().await;
    })
    .await?;
    Ok(())
}
