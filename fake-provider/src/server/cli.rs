//! `stampede serve`: a provider any HTTP client can be pointed at.

use super::{control, guard, serve_listener, ScenarioCheck, ServeError, ServerOptions};
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
            model: None,
        }],
        credentials: vec![CredentialConfig {
            key: "sk-demo".into(),
            scope: "account:demo".into(),
            scopes: Vec::new(),
        }],
        ..ProviderConfig::default()
    }
}

/// Reads the scenario's `[provider]` table, or its `[providers.<provider_name>]` (other tables ignored; its top-level `seed` seeds
/// the model), prints the address and credentials (masked), and serves until Ctrl-C.
///
/// On a non-loopback address it warns on stderr, and the control plane needs a token: the
/// one given, or one generated and printed once here.
pub async fn serve_cli(
    scenario_path: Option<&Path>,
    provider_name: Option<&str>,
    addr: SocketAddr,
    control_token: Option<String>,
    scenario_check: Option<ScenarioCheck>,
) -> Result<(), ServeError> {
    let (config, seed) = match scenario_path {
        Some(path) => {
            let text = std::fs::read_to_string(path).map_err(|source| ServeError::Read {
                path: path.to_path_buf(),
                source,
            })?;
            let name = path.display().to_string();
            let config = ProviderConfig::from_scenario_toml_named(&text, &name, provider_name)?;
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
    let control_token = control_token.filter(|t| !t.is_empty());
    let generated = control_token.is_none() && guard::token_required(bound, None);
    let control_token = if generated {
        Some(super::generate_control_token())
    } else {
        control_token
    };
    println!("stampede fake provider listening on http://{bound}");
    if !bound.ip().is_loopback() {
        eprintln!(
            "WARNING: stampede serve listens on {bound}, which is NOT a loopback address: anyone \
             who can reach it can spend its credentials. The control plane (/_stampede/*) needs \
             the control token. Use --addr 127.0.0.1:PORT unless you mean it."
        );
    }
    print!("{}", control::banner(&config));
    println!("  control: GET /_stampede/journal, /_stampede/stats, /metrics; POST /_stampede/reset; PUT /_stampede/scenario");
    match (&control_token, generated) {
        (Some(t), true) => println!(
            "  control token (generated, shown once; send `Authorization: Bearer TOKEN` on /_stampede/*): {t}"
        ),
        (Some(_), false) => println!("  control token: required on /_stampede/* (the one given)"),
        (None, _) => {}
    }
    let options = ServerOptions {
        seed,
        control_token,
        scenario_check,
        ..ServerOptions::default()
    };
    serve_listener(config, options, listener, async {
        let _ = tokio::signal::ctrl_c().await;
    })
    .await
}
