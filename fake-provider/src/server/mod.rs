//! The HTTP shell around the model: axum routes, served with hyper directly so a decision to
//! drop a connection really closes it with no response.
//!
//! Time: model time is real ms since the server started (or was reset or given a new
//! scenario) times `time_scale`; latencies are slept in real time (model ms / scale).
//! Memory: the journal lives in a ring of `ServerOptions::journal_ring` entries; evictions are
//! counted in `/_stampede/stats` (`journal_ring_lost`) and `/metrics`.
//!
//! Bounds: at most `max_connections` connections are served at once (more wait in the
//! kernel's accept queue, so descriptors are never exhausted); a connection idle for
//! `idle_timeout` (`pressed_idle_timeout` while a new one waits for a slot), or taking more
//! than `header_read_timeout` to send a request head, is closed; a body not read whole within `body_read_timeout` gets 408 and the connection
//! closes; request heads are capped at `max_header_bytes` and every string the journal keeps
//! (idempotency key, external reference, tenant, class, looked-up id) at `max_field_bytes`.

mod anthropic;
mod anthropic_body;
mod anthropic_version;
mod catalog;
mod cli;
mod conn;
mod control;
mod guard;
pub mod known_fields;
mod openai_tools;
mod own_thread;
mod parse;
mod pending;
mod plain_chat;
mod respond;
mod responses;
mod routes;
mod shaped;
mod state;

pub use anthropic_body::{MAX_CACHE_BREAKPOINTS, MIN_THINKING_BUDGET, MIN_THINKING_TOP_P};
pub use anthropic_version::VERSIONS as ANTHROPIC_VERSIONS;
pub use anthropic_version::VERSION_REQUIRED as ANTHROPIC_VERSION_REQUIRED;
pub use catalog::{DEFAULT_PAGE_LIMIT, MAX_PAGE_LIMIT, MODEL_CREATED_UNIX_S, MODEL_OWNER};
pub use cli::serve_cli;
pub use control::DEFAULT_JOURNAL_PAGE;
pub use own_thread::spawn_on_thread;
pub use respond::MAX_STREAM_GROUPS;
pub use shaped::{MAX_DEPTH as MAX_SHAPED_DEPTH, MAX_VALUES as MAX_SHAPED_VALUES};
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
use std::time::Duration;
use tokio::net::TcpListener;
use tokio::sync::watch;
use tower::ServiceExt;

/// Largest request body accepted by default, bytes (larger gets 413): Anthropic's documented
/// limit on a Messages request, 32 MiB. At 1 MiB, a long context or a base64 image the real
/// APIs take got 413 here. A body is held only while it is read (the journal keeps its
/// hash), so the cost is per request in flight.
pub const DEFAULT_BODY_LIMIT: usize = 32 << 20;

/// Longest time, by default, between a request head's first byte and its end (or for an
/// unread body to stop arriving after its answer).
pub const DEFAULT_HEADER_READ_TIMEOUT: Duration = Duration::from_secs(10);
/// Longest time, by default, a keep-alive connection may sit idle between requests.
pub const DEFAULT_IDLE_TIMEOUT: Duration = Duration::from_secs(60);
/// Longest time, by default, a connection may sit idle while a new one waits for a slot
/// (every slot taken): idle clients then make room within about this long.
pub const DEFAULT_PRESSED_IDLE_TIMEOUT: Duration = Duration::from_secs(1);
/// Longest time, by default, a client may refuse an answer's bytes (its socket takes no
/// write) before its connection is closed: a stream whose client stopped reading then
/// frees its concurrency slot.
pub const DEFAULT_WRITE_STALL_TIMEOUT: Duration = Duration::from_secs(30);
/// Longest time, by default, to read a whole request body.
pub const DEFAULT_BODY_READ_TIMEOUT: Duration = Duration::from_secs(30);
/// Connections served at once, by default (more wait in the accept queue).
pub const DEFAULT_MAX_CONNECTIONS: usize = 1_024;
/// Largest request head by default, bytes (hyper's read buffer; 8 KiB at least).
pub const DEFAULT_MAX_HEADER_BYTES: usize = 64 * 1_024;
/// Longest journaled string by default, bytes: Stripe's limit on idempotency keys.
pub const DEFAULT_MAX_FIELD_BYTES: usize = 255;

/// A fresh control token: 128 random bits as hex (rand's thread RNG is a CSPRNG seeded by
/// the OS). `stampede serve` makes one for a non-loopback address; a harness that starts
/// the provider in-process makes one so the client under test cannot reset it.
pub fn generate_control_token() -> String {
    format!("stc_{:032x}", rand::random::<u128>())
}

/// How the server runs, beyond the provider config.
#[derive(Debug, Clone)]
pub struct ServerOptions {
    /// Seed of the model's random streams.
    pub seed: u64,
    /// Largest request body, bytes (larger gets 413).
    pub body_limit: usize,
    /// Journal entries kept for `GET /_stampede/journal`.
    pub journal_ring: usize,
    /// A request head must be read whole within this time of its first byte.
    pub header_read_timeout: Duration,
    /// A connection with no request in progress and no byte arriving is closed after this.
    pub idle_timeout: Duration,
    /// The same, while a new connection waits for a slot (`max_connections` served): idle
    /// connections, such as ones opened and never used, cannot keep other clients out.
    pub pressed_idle_timeout: Duration,
    /// A request body must be read whole within this time (else 408 and the connection
    /// closes), so a never-ending chunked body cannot hold a connection.
    pub body_read_timeout: Duration,
    /// A connection whose client takes none of an answer's bytes for this long is closed
    /// (the answer is dropped and its request departs): a client that stops reading a
    /// stream cannot hold its scope's concurrency slot for ever.
    pub write_stall_timeout: Duration,
    /// Connections served at once; more wait in the kernel's accept queue.
    pub max_connections: usize,
    /// Largest request head, bytes (at least 8192).
    pub max_header_bytes: usize,
    /// Longest idempotency key, external reference, tenant, class or looked-up id, bytes
    /// (longer gets 400, as Stripe answers keys over 255 characters).
    pub max_field_bytes: usize,
    /// Token `/_stampede/*` requires (`Authorization: Bearer TOKEN`). Without one, the
    /// control plane is open on a loopback address and closed on any other.
    pub control_token: Option<String>,
    /// A stricter check of a TOML scenario uploaded to `PUT /_stampede/scenario` (the
    /// command-line server checks it as `stampede validate` does); `None`: the provider
    /// table's own checks only.
    pub scenario_check: Option<ScenarioCheck>,
}

/// Checks a whole scenario's text; `Err` is the message to answer with.
#[derive(Clone)]
pub struct ScenarioCheck(pub Arc<ScenarioCheckFn>);

/// The function behind a [`ScenarioCheck`].
pub type ScenarioCheckFn = dyn Fn(&str) -> Result<(), String> + Send + Sync;

impl std::fmt::Debug for ScenarioCheck {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("ScenarioCheck(..)")
    }
}

impl Default for ServerOptions {
    fn default() -> Self {
        ServerOptions {
            seed: 0,
            body_limit: DEFAULT_BODY_LIMIT,
            journal_ring: DEFAULT_JOURNAL_RING,
            header_read_timeout: DEFAULT_HEADER_READ_TIMEOUT,
            idle_timeout: DEFAULT_IDLE_TIMEOUT,
            pressed_idle_timeout: DEFAULT_PRESSED_IDLE_TIMEOUT,
            body_read_timeout: DEFAULT_BODY_READ_TIMEOUT,
            write_stall_timeout: DEFAULT_WRITE_STALL_TIMEOUT,
            max_connections: DEFAULT_MAX_CONNECTIONS,
            max_header_bytes: DEFAULT_MAX_HEADER_BYTES,
            max_field_bytes: DEFAULT_MAX_FIELD_BYTES,
            control_token: None,
            scenario_check: None,
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
        /// The address `--addr` asked for.
        addr: SocketAddr,
        /// Why the OS refused it (in use, permission denied, not a local address).
        source: std::io::Error,
    },
    /// The scenario file could not be read.
    #[error("cannot read scenario {path}: {source}")]
    Read {
        /// The scenario file named on the command line.
        path: PathBuf,
        /// Why it could not be read (missing, permission denied).
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
    pub(crate) options: Arc<ServerOptions>,
    /// The address the listener is bound to (for the control plane's Host check).
    pub(crate) bound: SocketAddr,
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
    let control = Router::new()
        .route("/_stampede/journal", get(control::journal))
        .route("/_stampede/stats", get(control::stats))
        .route("/_stampede/abandoned", get(control::abandoned))
        .route("/_stampede/reset", post(control::reset))
        .route("/_stampede/scenario", put(control::scenario))
        // Its counters and scope names are the control plane's too (the contract lists it
        // there): behind the same guard, so a token set is a token asked for.
        .route("/metrics", get(control::metrics))
        .route_layer(axum::middleware::from_fn_with_state(
            app.clone(),
            guard::control_guard,
        ));
    Router::new()
        .route("/v1/chat/completions", post(routes::chat_completions))
        .route("/v1/messages", post(anthropic::messages))
        .route("/v1/messages/count_tokens", post(anthropic::count_tokens))
        .route("/v1/responses", post(responses::responses))
        .route("/v1/embeddings", post(routes::embeddings))
        // The model catalog, which both APIs serve on one path (see `catalog`).
        .route("/v1/models", get(catalog::list))
        .route("/v1/models/{id}", get(catalog::retrieve))
        .route(
            "/v1/records",
            post(routes::create_record).get(routes::find_records),
        )
        .route("/v1/records/{id}", get(routes::get_record))
        .route("/v1/items/{id}", get(routes::get_item))
        .merge(control)
        .fallback(routes::not_found)
        .method_not_allowed_fallback(routes::method_not_allowed)
        .with_state(app)
}

/// Where a request goes: straight to the chat-completions handler, or through the router.
enum To {
    ChatCompletions(App),
    Router(Router),
    /// A head past `max_header_bytes` that hyper's read buffer let through (it reads in
    /// blocks, and a head of 100,000 bytes had passed a cap of 64 KiB): refused with 431.
    HeadTooLarge(usize),
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
    let options = Arc::new(options);
    let bound = listener.local_addr()?;
    let slots = Arc::new(tokio::sync::Semaphore::new(options.max_connections.max(1)));
    let state = App {
        shared,
        stop: stop_rx.clone(),
        options: options.clone(),
        bound,
    };
    let app = router(state.clone());
    let max_head = options.max_header_bytes;
    let mut http = http1::Builder::new();
    http.max_buf_size(options.max_header_bytes.max(8_192));
    // Raised while an accepted connection waits for a slot: the served connections'
    // watchdogs then close an idle one after `pressed_idle_timeout`, not `idle_timeout`.
    let pressure = conn::Pressure::new();
    let timeouts = conn::Timeouts {
        header: options.header_read_timeout,
        idle: options.idle_timeout,
        pressed_idle: options.pressed_idle_timeout,
        write_stall: options.write_stall_timeout,
    };
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
        // Then a slot: at the cap, this one connection waits for a served one to end, and
        // the rest wait in the kernel's accept queue (no descriptor is taken for them).
        let slot = match slots.clone().try_acquire_owned() {
            Ok(slot) => slot,
            Err(tokio::sync::TryAcquireError::Closed) => break,
            Err(tokio::sync::TryAcquireError::NoPermits) => {
                pressure.set_waiting(true);
                let slot = tokio::select! {
                    _ = &mut shutdown => break,
                    slot = slots.clone().acquire_owned() => match slot {
                        Ok(s) => s,
                        Err(_) => break,
                    },
                };
                pressure.set_waiting(false);
                slot
            }
        };
        let _ = stream.set_nodelay(true);
        let app = app.clone();
        let state = state.clone();
        let mut stop = stop_rx.clone();
        let http = http.clone();
        let pressure = pressure.clone();
        tokio::spawn(async move {
            let _slot = slot;
            let clock = conn::ConnClock::new();
            let service_clock = clock.clone();
            let service =
                hyper::service::service_fn(move |req: hyper::Request<hyper::body::Incoming>| {
                    // Chat completions, nearly all the traffic, go straight to their handler:
                    // the router would give them to it too, after matching the path, boxing
                    // the handler's service and future, and recording the match and the URI
                    // in the request's extensions (nothing here reads them): about eight
                    // allocations a request. The body is read as the connection gives it,
                    // not boxed as axum's.
                    let to = if routes::head_bytes(&req) > max_head {
                        To::HeadTooLarge(max_head)
                    } else if routes::is_chat_completion(&req) {
                        To::ChatCompletions(state.clone())
                    } else {
                        To::Router(app.clone())
                    };
                    let in_flight = conn::InFlight::new(service_clock.clone());
                    async move {
                        let resp = match to {
                            To::ChatCompletions(state) => routes::chat_completion(state, req).await,
                            To::HeadTooLarge(limit) => routes::head_too_large(limit),
                            To::Router(app) => app
                                .oneshot(req.map(axum::body::Body::new))
                                .await
                                .unwrap_or_else(|never| match never {}),
                        };
                        if resp.extensions().get::<respond::DropConnection>().is_some() {
                            Err(ClosedOnPurpose)
                        } else {
                            Ok(resp.map(|b| conn::GuardedBody::new(b, in_flight)))
                        }
                    }
                });
            let io = TokioIo::new(conn::TrackedIo::new(stream, clock.clone()));
            let conn = http.serve_connection(io, service);
            tokio::pin!(conn);
            tokio::select! {
                _ = conn.as_mut() => {}
                // Idle, too slow sending a head, or not taking an answer's bytes: dropping
                // the connection closes it.
                _ = conn::watchdog(clock, timeouts, pressure) => {}
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
