//! `stampede serve`: a provider any HTTP client can be pointed at.

use super::{control, serve_listener, ServeError, ServerOptions};
use crate::config::{CredentialConfig, ProviderConfig, ScopeLimits};
use std::net::SocketAddr;
use std::path::Path;
use tokio::net::TcpListener;

/// The provider `stampede serve` runs without `--scenario`: one demo scope and key.
pub fn demo_config() -> ProviderConfig {
    ProviderConfig {
        scopes: vec![ScopeLimits {
            id: "account:demo".into(),
            rpm: Some(600),
            tpm: Some(300_000),
            rpd: None,
            tpd: None,
            concurrency: Some(50),
            count_rejected: false,
        }],
        credentials: vec![CredentialConfig {
            key: "sk-demo".into(),
            scope: "account:demo".into(),
        }],
        ..ProviderConfig::default()
    }
}

/// Reads the scenario's `[provider]` table (other tables ignored; its top-level `seed` seeds
/// the model), prints the address and credentials, and serves until Ctrl-C.
pub async fn serve_cli(scenario_path: Option<&Path>, addr: SocketAddr) -> Result<(), ServeError> {
    let (config, seed) = match scenario_path {
        Some(path) => {
            let text = std::fs::read_to_string(path).map_err(|source| ServeError::Read {
                path: path.to_path_buf(),
                source,
            })?;
            let name = path.display().to_string();
            let config = ProviderConfig::from_scenario_toml(&text, &name)?;
            let seed = toml::from_str::<toml::Table>(&text)
                .ok()
                .and_then(|t| t.get("seed").and_then(toml::Value::as_integer))
                .map_or(0, |s| s as u64);
            (config, seed)
        }
        None => (demo_config(), 0),
    };
    let listener = TcpListener::bind(addr)
        .await
        .map_err(|source| ServeError::Bind { addr, source })?;
    let bound = listener.local_addr()?;
    println!("stampede fake provider listening on http://{bound}");
    print!("{}", control::banner(&config));
    println!("  control: GET /_stampede/journal, /_stampede/stats, /metrics; POST /_stampede/reset; PUT /_stampede/scenario");
    let options = ServerOptions {
        seed,
        ..ServerOptions::default()
    };
    serve_listener(config, options, listener, async {
        let _ = tokio::signal::ctrl_c().await;
    })
    .await
}
