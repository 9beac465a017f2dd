//! The provider a live run plays against: started in-process on an ephemeral loopback
//! port, or one already running at a URL (`--provider`), driven through its control plane
//! (`PUT /_stampede/scenario`, `GET /_stampede/journal`, `GET /_stampede/stats`).

use bytes::Bytes;
use http_body_util::{BodyExt, Full, LengthLimitError, Limited};
use hyper::Method;
use hyper_util::client::legacy::connect::HttpConnector;
use hyper_util::client::legacy::Client;
use hyper_util::rt::TokioExecutor;
use stampede_provider::model::JournalEntry;
use stampede_provider::server::{generate_control_token, spawn_on_thread, ServerOptions};
use stampede_provider::{ProviderConfig, ServerHandle};
use std::net::SocketAddr;
use std::time::Duration;

use super::LiveError;

/// What `--provider` must be, said when it is not.
const BASE_URL_HINT: &str =
    "give the provider's base URL, like http://127.0.0.1:8080 (what `stampede serve` prints)";

/// Checks `url` as a base URL this client can reach: `http://HOST[:PORT]`, parsed as the
/// client parses the URLs it sends to, over plain HTTP (its connector has no TLS, so an
/// `https://` base would fail at the first call instead of here).
pub fn check_base_url(url: &str) -> Result<(), String> {
    let uri: hyper::Uri = url.parse().map_err(|_| BASE_URL_HINT.to_string())?;
    match (uri.scheme_str(), uri.authority()) {
        (Some("http"), Some(_)) => Ok(()),
        (Some("https"), _) => Err(format!(
            "{BASE_URL_HINT}: plain http, the live client has no TLS"
        )),
        _ => Err(BASE_URL_HINT.to_string()),
    }
}

/// What a provider's `/_stampede/stats` says of its clock and journal.
#[derive(Debug, Clone, PartialEq)]
pub struct ProviderStatus {
    /// Model ms since its last reset.
    pub at: u64,
    /// Model ms per real ms.
    pub scale: f64,
    /// Its journal's id, new whenever the journal starts afresh (`None` from a provider
    /// that gives none).
    pub journal_id: Option<String>,
}

/// A provider's base URL and, when this run started it, the server itself.
pub struct Provider {
    /// `http://127.0.0.1:PORT`, no trailing slash.
    pub base: String,
    /// The in-process server (dropped: stopped).
    server: Option<ServerHandle>,
    control: Control,
}

/// A provider's control plane, as a client calls it: cheap to clone, so a task of its own
/// can read the journal while the run plays (see `JournalTail`).
#[derive(Clone)]
pub(crate) struct Control {
    /// `http://HOST:PORT`, no trailing slash.
    base: String,
    client: Client<HttpConnector, Full<Bytes>>,
    /// Sent as `x-stampede-control-token` on control calls (a provider serving a
    /// non-loopback address, or started with `--control-token`, requires it).
    token: Option<String>,
}

impl Provider {
    /// Starts the scenario's provider in-process on 127.0.0.1 with an ephemeral port, on a
    /// thread of its own: sharing the run's runtime, it would take 41% of the client's one
    /// thread (its share of the instructions of `live_overhead 3000 64` under callgrind).
    pub async fn in_process(config: ProviderConfig, seed: u64) -> Result<Self, LiveError> {
        // Its control plane answers only this run: a client under test (`--client`) that
        // reset the provider, or gave it another scenario, would change the journal the
        // run is measured from.
        let token = generate_control_token();
        let options = ServerOptions {
            seed,
            control_token: Some(token.clone()),
            ..ServerOptions::default()
        };
        let loopback = SocketAddr::from(([127, 0, 0, 1], 0));
        let (addr, server) = spawn_on_thread(config, options, loopback).map_err(|e| {
            LiveError::Provider(format!("cannot start the in-process provider: {e}"))
        })?;
        let base = format!("http://{addr}");
        Ok(Self {
            control: Control::new(base.clone(), Some(token)),
            base,
            server: Some(server),
        })
    }

    /// A provider already running at `url`, given the scenario's provider config
    /// (`PUT /_stampede/scenario`, which also restarts its clock and empties its journal).
    /// Its random streams keep the seed it was started with.
    pub async fn remote(url: &str, config: &ProviderConfig) -> Result<Self, LiveError> {
        Self::remote_with_token(url, config, None).await
    }

    /// [`Provider::remote`] for a provider whose control plane needs `token`.
    pub async fn remote_with_token(
        url: &str,
        config: &ProviderConfig,
        token: Option<String>,
    ) -> Result<Self, LiveError> {
        let base = url.trim_end_matches('/').to_string();
        let p = Self {
            control: Control::new(base.clone(), token),
            base,
            server: None,
        };
        let body = serde_json::to_vec(config)
            .map_err(|e| LiveError::Provider(format!("cannot encode the provider config: {e}")))?;
        p.call(Method::PUT, "/_stampede/scenario", body).await?;
        Ok(p)
    }

    /// A provider already running at `url`, left exactly as it is (no new config, no reset):
    /// a restarted runner resumes against the provider its dead process talked to, whose
    /// records and journal hold what that process did.
    pub fn attach(url: &str) -> Self {
        let base = url.trim_end_matches('/').to_string();
        Self {
            control: Control::new(base.clone(), None),
            base,
            server: None,
        }
    }

    /// Sends `token` as `x-stampede-control-token` on every control call.
    pub fn with_control_token(mut self, token: Option<String>) -> Self {
        self.control.token = token;
        self
    }

    /// The provider's clock: model ms since its last reset, and its time scale (model ms
    /// per real ms), from `GET /_stampede/stats`.
    pub async fn clock(&self) -> Result<(u64, f64), LiveError> {
        self.status().await.map(|s| (s.at, s.scale))
    }

    /// The id of the provider's journal (`journal_id` of `/_stampede/stats`), new whenever
    /// its journal starts afresh; `None` from a provider that does not give one.
    pub async fn journal_id(&self) -> Result<Option<String>, LiveError> {
        self.status().await.map(|s| s.journal_id)
    }

    /// The provider's clock and journal, read in one `GET /_stampede/stats`.
    pub async fn status(&self) -> Result<ProviderStatus, LiveError> {
        let v = self.stats().await?;
        let now = v.get("model_time_ms").and_then(serde_json::Value::as_u64);
        let scale = v.get("time_scale").and_then(serde_json::Value::as_f64);
        let journal_id = v
            .get("journal_id")
            .and_then(serde_json::Value::as_str)
            .map(String::from);
        match now.zip(scale) {
            Some((at, scale)) => Ok(ProviderStatus {
                at,
                scale,
                journal_id,
            }),
            None => Err(LiveError::Provider(format!(
                "{}/_stampede/stats has no model_time_ms and time_scale; is it a stampede \
                 provider (`stampede serve`)?",
                self.base
            ))),
        }
    }

    /// `GET /_stampede/stats`, as JSON.
    async fn stats(&self) -> Result<serde_json::Value, LiveError> {
        let text = self
            .call(Method::GET, "/_stampede/stats", Vec::new())
            .await?;
        serde_json::from_str(&text).map_err(|e| {
            LiveError::Provider(format!("{}/_stampede/stats is not JSON: {e}", self.base))
        })
    }

    /// Restarts the provider's clock at 0 with a fresh model and an empty journal, right
    /// before the run's own clock starts (so the provider's clock is never behind it).
    pub async fn reset(&self) -> Result<(), LiveError> {
        self.call(Method::POST, "/_stampede/reset", Vec::new())
            .await
            .map(drop)
    }

    /// Every journal entry after `since` (a seq), in seq order.
    pub async fn journal(&self, since: u64) -> Result<Vec<JournalEntry>, LiveError> {
        let (text, _) = self.control.journal_text(since).await?;
        parse_journal(&self.base, &text)
    }

    /// The control plane, to read the journal from a task of its own.
    pub(crate) fn control(&self) -> &Control {
        &self.control
    }

    /// Stops the in-process server, if this run started one.
    pub async fn stop(mut self) {
        if let Some(server) = self.server.take() {
            let _ = server.shutdown().await;
        }
    }

    async fn call(&self, method: Method, path: &str, body: Vec<u8>) -> Result<String, LiveError> {
        self.control.call(method, path, body).await
    }
}

impl Control {
    fn new(base: String, token: Option<String>) -> Self {
        Control {
            base,
            client: control_client(),
            token,
        }
    }

    /// The journal's entries after `since` (a seq) as the provider sends them: JSON lines,
    /// in seq order, not parsed (see [`parse_journal`]), and the last one's seq (`since`
    /// when there are none). Read in pages of [`JOURNAL_PAGE`] entries, each one answer, so
    /// no answer is larger than a page.
    pub(crate) async fn journal_text(&self, since: u64) -> Result<(String, u64), LiveError> {
        let mut text = String::new();
        let mut after = since;
        loop {
            let path = format!("/_stampede/journal?after_seq={after}&limit={JOURNAL_PAGE}");
            let (page, more) = self.request(Method::GET, &path, Vec::new()).await?;
            let last = page.lines().rev().find(|line| !line.trim().is_empty());
            let Some(seq) = last.map(|line| last_seq(&self.base, line)).transpose()? else {
                return Ok((text, after));
            };
            text.push_str(&page);
            if !text.ends_with('\n') {
                text.push('\n');
            }
            if !more.is_some_and(|m| m == "true") {
                return Ok((text, seq));
            }
            if seq <= after {
                return Err(LiveError::Provider(format!(
                    "{}/_stampede/journal: a page after seq {after} ended at seq {seq}; a \
                     provider's journal numbers its entries one by one",
                    self.base
                )));
            }
            after = seq;
        }
    }

    /// `GET /_stampede/abandoned`: the seqs of 2xx answers their clients abandoned after
    /// they were journaled, and the attempts still in flight.
    pub(crate) async fn abandoned(&self) -> Result<Abandoned, LiveError> {
        let text = self
            .call(Method::GET, "/_stampede/abandoned", Vec::new())
            .await?;
        serde_json::from_str(&text).map_err(|e| {
            LiveError::Provider(format!(
                "{}/_stampede/abandoned: not the answer a stampede provider gives: {e}",
                self.base
            ))
        })
    }

    /// The provider's base URL.
    pub(crate) fn base(&self) -> &str {
        &self.base
    }

    async fn call(&self, method: Method, path: &str, body: Vec<u8>) -> Result<String, LiveError> {
        self.request(method, path, body).await.map(|(text, _)| text)
    }

    /// One control call: the answer's text and its `x-stampede-journal-more` header. Bounded
    /// in time ([`CONTROL_TIMEOUT`]) and size ([`MAX_CONTROL_ANSWER`]): a provider that
    /// never answers, or answers without end, is an error naming the call.
    async fn request(
        &self,
        method: Method,
        path: &str,
        body: Vec<u8>,
    ) -> Result<(String, Option<String>), LiveError> {
        let url = format!("{}{path}", self.base);
        let fail = |what: String| LiveError::Provider(format!("{method} {url}: {what}"));
        let mut builder = hyper::Request::builder()
            .method(method.clone())
            .uri(&url)
            .header("content-type", "application/json");
        if let Some(token) = &self.token {
            builder = builder.header("x-stampede-control-token", token);
        }
        let req = builder
            .body(Full::new(Bytes::from(body)))
            .map_err(|e| fail(e.to_string()))?;
        let answered = async {
            let resp = self
                .client
                .request(req)
                .await
                .map_err(|e| fail(format!("{e} (is the provider running there?)")))?;
            let status = resp.status();
            let more = resp
                .headers()
                .get("x-stampede-journal-more")
                .and_then(|v| v.to_str().ok())
                .map(str::to_string);
            let bytes = Limited::new(resp.into_body(), MAX_CONTROL_ANSWER)
                .collect()
                .await
                .map_err(|e| {
                    if e.downcast_ref::<LengthLimitError>().is_some() {
                        fail(format!(
                            "the answer is larger than {} MiB; is it a stampede provider?",
                            MAX_CONTROL_ANSWER >> 20
                        ))
                    } else {
                        fail(e.to_string())
                    }
                })?
                .to_bytes();
            Ok::<_, LiveError>((status, more, bytes))
        };
        let (status, more, bytes) = tokio::time::timeout(CONTROL_TIMEOUT, answered)
            .await
            .map_err(|_| {
                fail(format!(
                    "no whole answer within {} s (is the provider stuck, or is something \
                     between the run and it holding the answer?)",
                    CONTROL_TIMEOUT.as_secs()
                ))
            })??;
        let text = String::from_utf8_lossy(&bytes).into_owned();
        if !status.is_success() {
            return Err(fail(format!("answered {status}: {text}")));
        }
        Ok((text, more))
    }
}

/// What `GET /_stampede/abandoned` says.
#[derive(Debug, serde::Deserialize)]
pub(crate) struct Abandoned {
    /// Seqs of 2xx answers journaled and then abandoned by their client.
    pub abandoned: Vec<u64>,
    /// Seqs whose answer has not departed yet.
    #[serde(default)]
    pub pending: Vec<u64>,
    /// Attempts whose answer has not departed yet.
    pub in_flight: u64,
    /// Abandonments past the provider's list cap, not listed.
    pub abandoned_lost: u64,
}

/// Entries asked for in one journal answer.
pub const JOURNAL_PAGE: usize = 10_000;

/// Longest a control call may take, whole answer included.
pub const CONTROL_TIMEOUT: Duration = Duration::from_secs(30);

/// Largest control answer read (bytes): a page of [`JOURNAL_PAGE`] entries is a few MB.
pub const MAX_CONTROL_ANSWER: usize = 64 << 20;

/// The seq of a journal line, read alone (`base` names the provider in errors).
fn last_seq(base: &str, line: &str) -> Result<u64, LiveError> {
    #[derive(serde::Deserialize)]
    struct Seq {
        seq: u64,
    }
    serde_json::from_str::<Seq>(line)
        .map(|Seq { seq }| seq)
        .map_err(|e| {
            LiveError::Provider(format!(
                "{base}/_stampede/journal: a line is not a journal entry: {e}"
            ))
        })
}

fn control_client() -> Client<HttpConnector, Full<Bytes>> {
    Client::builder(TokioExecutor::new())
        .retry_canceled_requests(false)
        .build(HttpConnector::new())
}

/// The entries of a journal answer's JSON lines (`base` names the provider in errors).
pub(crate) fn parse_journal(base: &str, text: &str) -> Result<Vec<JournalEntry>, LiveError> {
    let mut out = Vec::new();
    for (i, line) in text
        .lines()
        .enumerate()
        .filter(|(_, l)| !l.trim().is_empty())
    {
        let entry: JournalEntry = serde_json::from_str(line).map_err(|e| {
            LiveError::Provider(format!(
                "{base}/_stampede/journal line {}: not a journal entry: {e}",
                i + 1
            ))
        })?;
        out.push(entry);
    }
    Ok(out)
}
