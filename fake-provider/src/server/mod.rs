//! The HTTP shell around the model: axum routes, served with hyper directly so a decision to
//! drop a connection really closes it with no response.
//!
//! Time: model time is real ms since the server started (or was reset or given a new
//! scenario) times `time_scale`; latencies are slept in real time (model ms / scale).
//! Memory: the journal lives in a ring of `ServerOptions::journal_ring` entries; evictions are
//! counted in `/_stampede/stats` (`journal_ring_lost`) and `/metrics`.

mod anthropic;
mod cli;
mod control;
mod parse;
mod respond;
mod routes;
mod state;

pub use cli::serve_cli;
pub use state::{DEFAULT_JOURNAL_RING, TRANSIT_ALLOWANCE_REAL_MS};

use crate::config::ProviderConfig;
use crate::ConfigError;
use axum::routing::{get, post, put};
use axum::Router;
use hyper::server::conn::http1;
use hyper_util::rt::TokioIo;
use respond::stopped;
use state::Shared;
use std::future::Future;
use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::Arc;
use tokio::net::TcpListener;
use tokio::sync::watch;
use tower::ServiceExt;

/// Largest request body accepted by default, bytes (larger gets 413).
pub const DEFAULT_BODY_LIMIT: usize = 1 << 20;

/// How the server runs, beyond the provider config.
#[derive(Debug, Clone)]
pub struct ServerOptions {
    /// Seed of the model's random streams.
    pub seed: u64,
    /// Largest request body, bytes.
    pub body_limit: usize,
    /// Journal entries kept for `GET /_stampede/journal`.
    pub journal_ring: usize,
}

impl Default for ServerOptions {
    fn default() -> Self {
        ServerOptions {
            seed: 0,
            body_limit: DEFAULT_BODY_LIMIT,
            journal_ring: DEFAULT_JOURNAL_RING,
        }
    }
}

/// Why the server could not start or stopped.
#[derive(Debug, thiserror::Error)]
pub enum ServeError {
    /// The provider config is invalid.
    #[error("invalid provider config: {0}")]
    Config(#[from] ConfigError),
    /// The address could not be bound.
    #[error(
        "cannot listen on {addr}: {source} (is another server using it? try --addr 127.0.0.1:0)"
    )]
    Bind {
        /// The address asked for.
        addr: SocketAddr,
        /// The OS error.
        source: std::io::Error,
    },
    /// The scenario file could not be read.
    #[error("cannot read scenario {path}: {source}")]
    Read {
        /// The file.
        path: PathBuf,
        /// The OS error.
        source: std::io::Error,
    },
    /// Listening failed after start.
    #[error("server I/O error: {0}")]
    Io(#[from] std::io::Error),
}

/// What every handler sees.
#[derive(Clone)]
pub(crate) struct App {
    pub(crate) shared: Arc<Shared>,
    pub(crate) stop: watch::Receiver<bool>,
    pub(crate) body_limit: usize,
}

/// The service error that makes hyper close the connection without a response.
#[derive(Debug)]
struct ClosedOnPurpose;

impl std::fmt::Display for ClosedOnPurpose {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("connection closed by a scheduled fault")
    }
}

impl std::error::Error for ClosedOnPurpose {}

fn router(app: App) -> Router {
    Router::new()
        .route("/v1/chat/completions", post(routes::chat_completions))
        .route("/v1/messages", post(anthropic::messages))
        .route("/v1/embeddings", post(routes::embeddings))
        .route(
            "/v1/records",
            post(routes::create_record).get(routes::find_records),
        )
        .route("/v1/records/{id}", get(routes::get_record))
        .route("/v1/items/{id}", get(routes::get_item))
        .route("/_stampede/journal", get(control::journal))
        .route("/_stampede/stats", get(control::stats))
        .route("/_stampede/reset", post(control::reset))
        .route("/_stampede/scenario", put(control::scenario))
        .route("/metrics", get(control::metrics))
        .fallback(routes::not_found)
        .method_not_allowed_fallback(routes::method_not_allowed)
        .with_state(app)
}

/// Serves on `addr` until `shutdown` resolves (seed 0, default options).
pub async fn serve(
    config: ProviderConfig,
    addr: SocketAddr,
    shutdown: impl Future<Output = ()> + Send + 'static,
) -> Result<(), ServeError> {
    let listener = TcpListener::bind(addr)
        .await
        .map_err(|source| ServeError::Bind { addr, source })?;
    serve_listener(config, ServerOptions::default(), listener, shutdown).await
}

/// Serves on a bound listener until `shutdown` resolves; hangs and streams end then too.
pub async fn serve_listener(
    config: ProviderConfig,
    options: ServerOptions,
    listener: TcpListener,
    shutdown: impl Future<Output = ()> + Send + 'static,
) -> Result<(), ServeError> {
    let shared = Arc::new(Shared::new(config, options.seed, options.journal_ring)?);
    let (stop_tx, stop_rx) = watch::channel(false);
    let app = router(App {
        shared,
        stop: stop_rx.clone(),
        body_limit: options.body_limit,
    });
    tokio::pin!(shutdown);
    loop {
        let (stream, _) = tokio::select! {
            _ = &mut shutdown => break,
            accepted = listener.accept() => match accepted {
                Ok(a) => a,
                // Out of file descriptors or a reset during accept: back off briefly.
                Err(_) => {
                    tokio::time::sleep(std::time::Duration::from_millis(5)).await;
                    continue;
                }
            },
        };
        let _ = stream.set_nodelay(true);
        let app = app.clone();
        let mut stop = stop_rx.clone();
        tokio::spawn(async move {
            let service =
                hyper::service::service_fn(move |req: hyper::Request<hyper::body::Incoming>| {
                    let app = app.clone();
                    async move {
                        let resp = app
                            .oneshot(req.map(axum::body::Body::new))
                            .await
                            .unwrap_or_else(|never| match never {});
                        if resp.extensions().get::<respond::DropConnection>().is_some() {
                            Err(ClosedOnPurpose)
                        } else {
                            Ok(resp)
                        }
                    }
                });
            let conn = http1::Builder::new().serve_connection(TokioIo::new(stream), service);
            tokio::pin!(conn);
            tokio::select! {
                _ = conn.as_mut() => {}
                _ = stopped(&mut stop) => {
                    conn.as_mut().graceful_shutdown();
                    let _ = tokio::time::timeout(std::time::Duration::from_secs(2), conn).await;
                }
            }
        });
    }
    let _ = stop_tx.send(true);
    Ok(())
}

/// A server running in the background; stops when [`ServerHandle::shutdown`] is called or
/// the handle is dropped.
pub struct ServerHandle {
    stop: Option<tokio::sync::oneshot::Sender<()>>,
    task: Option<tokio::task::JoinHandle<Result<(), ServeError>>>,
    addr: SocketAddr,
}

impl ServerHandle {
    /// Where it listens.
    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    /// Stops accepting, ends hangs and streams, and waits for the accept loop to finish.
    pub async fn shutdown(mut self) -> Result<(), ServeError> {
        if let Some(tx) = self.stop.take() {
            let _ = tx.send(());
        }
        match self.task.take() {
            Some(t) => t.await.unwrap_or(Ok(())),
            None => Ok(()),
        }
    }
}

impl Drop for ServerHandle {
    fn drop(&mut self) {
        if let Some(tx) = self.stop.take() {
            let _ = tx.send(());
        }
    }
}

/// Starts a server on 127.0.0.1 with an ephemeral port (for tests and the live harness).
pub async fn spawn_ephemeral(
    config: ProviderConfig,
    seed: u64,
) -> Result<(SocketAddr, ServerHandle), ServeError> {
    spawn_with(
        config,
        ServerOptions {
            seed,
            ..ServerOptions::default()
        },
        SocketAddr::from(([127, 0, 0, 1], 0)),
    )
    .await
}

/// Starts a server in the background on `addr` (port 0 picks one) with these options.
pub async fn spawn_with(
    config: ProviderConfig,
    options: ServerOptions,
    addr: SocketAddr,
) -> Result<(SocketAddr, ServerHandle), ServeError> {
    config.validate()?;
    let listener = TcpListener::bind(addr)
        .await
        .map_err(|source| ServeError::Bind { addr, source })?;
    let bound = listener.local_addr()?;
    let (tx, rx) = tokio::sync::oneshot::channel::<()>();
    let task = tokio::spawn(serve_listener(config, options, listener, async move {
        let _ = rx.await;
    }));
    Ok((
        bound,
        ServerHandle {
            stop: Some(tx),
            task: Some(task),
            addr: bound,
        },
    ))
}
