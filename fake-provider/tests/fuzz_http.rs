//! A fuzz harness for the provider on stable Rust (proptest): the HTTP edge over a real
//! loopback connection, and the model in process.
//!
//! - `tcp_random_bytes` and `tcp_mutated_requests` write raw bytes to a server started with
//!   `spawn_ephemeral` (random bytes; valid requests with mutated methods, paths, headers,
//!   framing and bodies, then byte-level flips and cuts). After every case the server must
//!   answer a fresh `GET /_stampede/stats` with 200, and no panic may have happened anywhere
//!   in the process (a panic hook counts them: tokio would otherwise hide a handler's panic
//!   by ending only its connection).
//! - `model_sequences` drives `ProviderModel` directly with arbitrary `Request`s at
//!   non-decreasing times (below 2^48 ms), `depart`s and unknown routes, and checks the
//!   journal and the stats after every call.
//!
//! Cases: `STAMPEDE_FUZZ_CASES` (default 64): that many model cases (each 1 to 63 calls,
//! 32 on average) and 32 times as many TCP cases per TCP test (each one input). Each test
//! prints how many inputs it ran. The 10^6 run (about 96 inputs per configured case):
//! `STAMPEDE_FUZZ_CASES=11000 cargo test --release -p stampede-provider --test integration fuzz_http -- --nocapture`

use proptest::prelude::*;
use proptest::test_runner::{Config, TestCaseError, TestRunner};
use stampede_provider::config::{
    ConnectionFault, CredentialConfig, DurationMs, FaultRule, LatencyConfig, ProviderConfig,
    RouteName, ScopeLimits,
};
use stampede_provider::model::{FindBy, JournalEntry, ProviderStats};
use stampede_provider::{Answer, ProviderModel, Request, RequestRoute};
use std::io::{Read, Write};
use std::net::{Shutdown, SocketAddr, TcpStream};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::OnceLock;
use std::time::{Duration, Instant};

const KEY: &str = "sk-fuzz-key-0001";

fn cases() -> u32 {
    std::env::var("STAMPEDE_FUZZ_CASES")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(64)
}

/// A runner for `scale` times the configured cases.
fn runner(scale: u32) -> TestRunner {
    TestRunner::new(Config {
        cases: cases().saturating_mul(scale),
        failure_persistence: None,
        max_shrink_iters: 2_000,
        ..Config::default()
    })
}

/// Panics anywhere in this process since the hook was installed.
static PANICS: AtomicU64 = AtomicU64::new(0);

fn count_panics() {
    static HOOK: OnceLock<()> = OnceLock::new();
    HOOK.get_or_init(|| {
        let default = std::panic::take_hook();
        std::panic::set_hook(Box::new(move |info| {
            PANICS.fetch_add(1, Ordering::SeqCst);
            default(info);
        }));
    });
}

fn scope(id: &str, rpm: Option<u64>, concurrency: Option<u64>) -> ScopeLimits {
    ScopeLimits {
        id: id.into(),
        rpm,
        tpm: rpm.map(|r| r * 100_000),
        rpd: None,
        tpd: None,
        concurrency,
        count_rejected: rpm.is_some(),
        model: None,
    }
}

fn rule(f: impl FnOnce(&mut FaultRule)) -> FaultRule {
    let mut r = FaultRule::default();
    f(&mut r);
    r
}

/// Every kind of fault, each on a few percent of attempts, and limits that refuse some.
fn faulty_config(latency_ms: u64) -> ProviderConfig {
    let p = |fault: ConnectionFault, prob: f64| {
        rule(|r| {
            r.fault = Some(fault);
            r.probability = Some(prob);
        })
    };
    ProviderConfig {
        latency: LatencyConfig::fixed_ms(latency_ms),
        tool_latency: LatencyConfig::fixed_ms(latency_ms),
        reject_latency: DurationMs(0),
        scopes: vec![scope("a", None, Some(64)), scope("b", Some(30), Some(4))],
        credentials: vec![
            CredentialConfig {
                key: KEY.into(),
                scope: "a".into(),
                scopes: Vec::new(),
            },
            CredentialConfig {
                key: "sk-fuzz-key-0002".into(),
                scope: "b".into(),
                scopes: Vec::new(),
            },
        ],
        faults: vec![
            rule(|r| {
                r.status = Some(429);
                r.probability = Some(0.03);
            }),
            rule(|r| {
                r.status = Some(503);
                r.probability = Some(0.03);
                r.should_retry = Some(false);
            }),
            rule(|r| {
                r.status = Some(529);
                r.route = Some(RouteName::Messages);
                r.probability = Some(0.05);
            }),
            rule(|r| {
                r.class = Some("flaky".into());
                r.sequence = vec![
                    stampede_provider::config::SequenceStep {
                        status: Some(500),
                        ..Default::default()
                    },
                    stampede_provider::config::SequenceStep {
                        fault: Some(ConnectionFault::DropAfterCommit),
                        ..Default::default()
                    },
                ];
            }),
            p(ConnectionFault::DropBeforeCommit, 0.02),
            p(ConnectionFault::DropAfterCommit, 0.02),
            p(ConnectionFault::StreamCut, 0.03),
            p(ConnectionFault::StreamError, 0.03),
            p(ConnectionFault::Hang, 0.002),
            p(ConnectionFault::HangAfterCommit, 0.002),
        ],
        ..ProviderConfig::default()
    }
}

// ---------------------------------------------------------------------------------------
// Over TCP.
// ---------------------------------------------------------------------------------------

/// One server for the whole file, on its own runtime.
fn server() -> SocketAddr {
    static ADDR: OnceLock<SocketAddr> = OnceLock::new();
    *ADDR.get_or_init(|| start(faulty_config(0)))
}

/// A server with no faults and no limits, for the regression tests.
fn plain_server() -> SocketAddr {
    static ADDR: OnceLock<SocketAddr> = OnceLock::new();
    *ADDR.get_or_init(|| {
        let mut c = faulty_config(0);
        c.faults.clear();
        c.scopes[0].concurrency = None;
        start(c)
    })
}

fn start(config: ProviderConfig) -> SocketAddr {
    {
        let rt = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .enable_all()
            .build()
            .expect("runtime");
        let (addr, handle) = rt
            .block_on(stampede_provider::spawn_ephemeral(config, 7))
            .expect("server starts");
        // Kept for the life of the test process.
        std::mem::forget(handle);
        std::mem::forget(rt);
        addr
    }
}

/// How a case's connection ends after the bytes are written.
#[derive(Debug, Clone, Copy)]
enum Ending {
    /// Half-close, then read until the server closes (or 2 s).
    HalfCloseAndDrain,
    /// Read what comes within a few ms, then close abruptly (the client went away).
    Abandon,
}

fn ending() -> impl Strategy<Value = Ending> {
    prop_oneof![
        8 => Just(Ending::HalfCloseAndDrain),
        2 => Just(Ending::Abandon),
    ]
}

/// Writes `bytes` on a new connection and ends it as told. Client-side errors (the server
/// closing first, a reset) are part of the game.
fn play(addr: SocketAddr, bytes: &[u8], end: Ending) {
    let Ok(mut s) = TcpStream::connect(addr) else {
        return;
    };
    let _ = s.set_nodelay(true);
    let _ = s.set_write_timeout(Some(Duration::from_secs(2)));
    let _ = s.write_all(bytes);
    let mut buf = [0u8; 16 * 1024];
    match end {
        Ending::HalfCloseAndDrain => {
            let _ = s.shutdown(Shutdown::Write);
            let deadline = Instant::now() + Duration::from_secs(2);
            let mut total = 0usize;
            while Instant::now() < deadline && total < (4 << 20) {
                let _ =
                    s.set_read_timeout(Some(deadline - Instant::now() + Duration::from_millis(1)));
                match s.read(&mut buf) {
                    Ok(0) | Err(_) => break,
                    Ok(n) => total += n,
                }
            }
        }
        Ending::Abandon => {
            let _ = s.set_read_timeout(Some(Duration::from_millis(3)));
            let _ = s.read(&mut buf);
        }
    }
}

/// The server answers `GET /_stampede/stats` with 200 on a fresh connection.
fn stats_ok(addr: SocketAddr) -> Result<(), TestCaseError> {
    let mut s =
        TcpStream::connect(addr).map_err(|e| TestCaseError::fail(format!("connect: {e}")))?;
    s.set_read_timeout(Some(Duration::from_secs(10))).ok();
    let req = format!("GET /_stampede/stats HTTP/1.1\r\nHost: {addr}\r\nConnection: close\r\n\r\n");
    s.write_all(req.as_bytes())
        .map_err(|e| TestCaseError::fail(format!("write: {e}")))?;
    let mut out = Vec::new();
    let _ = s.read_to_end(&mut out);
    if !out.starts_with(b"HTTP/1.1 200") {
        return Err(TestCaseError::fail(format!(
            "stats answered {:?}",
            String::from_utf8_lossy(&out[..out.len().min(200)])
        )));
    }
    Ok(())
}

fn no_panics() -> Result<(), TestCaseError> {
    let n = PANICS.load(Ordering::SeqCst);
    if n > 0 {
        return Err(TestCaseError::fail(format!("{n} panic(s) in the process")));
    }
    Ok(())
}

/// TCP cases per configured case (a model case is up to 64 calls, a TCP case one input).
const TCP_SCALE: u32 = 32;

/// Inputs run by each TCP test.
static RANDOM_INPUTS: AtomicU64 = AtomicU64::new(0);
static MUTATED_INPUTS: AtomicU64 = AtomicU64::new(0);

fn run_tcp_case(bytes: &[u8], end: Ending, inputs: &AtomicU64) -> Result<(), TestCaseError> {
    let addr = server();
    inputs.fetch_add(1, Ordering::Relaxed);
    play(addr, bytes, end);
    stats_ok(addr)?;
    no_panics()
}

/// Raw random bytes, alone or after a plausible request line.
fn random_bytes() -> impl Strategy<Value = Vec<u8>> {
    let prefix = prop_oneof![
        Just(Vec::new()),
        Just(b"POST /v1/chat/completions HTTP/1.1\r\n".to_vec()),
        Just(b"POST /v1/records HTTP/1.1\r\nHost: 127.0.0.1\r\n".to_vec()),
        Just(b"GET /_stampede/journal?after_seq=".to_vec()),
        Just(
            b"POST /v1/messages HTTP/1.1\r\nx-api-key: sk-fuzz-key-0001\r\ncontent-length: "
                .to_vec()
        ),
    ];
    (prefix, prop::collection::vec(any::<u8>(), 0..2_048)).prop_map(|(mut p, tail)| {
        p.extend(tail);
        p
    })
}

fn method() -> impl Strategy<Value = String> {
    prop_oneof![
        6 => Just("POST".to_string()),
        4 => Just("GET".to_string()),
        1 => prop::sample::select(vec!["PUT", "DELETE", "HEAD", "OPTIONS", "PATCH", "CONNECT", "TRACE", "get", "", "P\u{d8}ST"]).prop_map(str::to_string),
        1 => "[A-Z]{1,12}",
    ]
}

/// Odd strings: empty, long, unicode, percent-escapes, control characters.
fn odd() -> impl Strategy<Value = String> {
    prop_oneof![
        4 => "[a-z0-9_-]{1,16}",
        1 => Just(String::new()),
        1 => "\\PC{0,40}",
        1 => "[%0-9A-F]{0,30}",
        1 => (200usize..300).prop_map(|n| "k".repeat(n)),
        1 => Just("rec_000001".to_string()),
        1 => Just("99999999999999999999999".to_string()),
        1 => Just("%00%ff%2F..%2f".to_string()),
    ]
}

fn path() -> impl Strategy<Value = String> {
    prop_oneof![
        4 => Just("/v1/chat/completions".to_string()),
        3 => Just("/v1/messages".to_string()),
        2 => Just("/v1/responses".to_string()),
        1 => Just("/v1/messages/count_tokens".to_string()),
        2 => Just("/v1/embeddings".to_string()),
        4 => Just("/v1/records".to_string()),
        2 => odd().prop_map(|id| format!("/v1/records/{id}")),
        2 => odd().prop_map(|k| format!("/v1/records?idempotency_key={k}")),
        2 => odd().prop_map(|r| format!("/v1/records?external_ref={r}")),
        1 => (odd(), odd()).prop_map(|(a, b)| format!("/v1/records?external_ref={a}&idempotency_key={b}")),
        1 => odd().prop_map(|id| format!("/v1/items/{id}")),
        1 => odd().prop_map(|id| format!("/v1/models/{id}")),
        1 => (odd(), odd(), odd()).prop_map(|(l, a, b)| format!("/v1/models?limit={l}&after_id={a}&before_id={b}")),
        2 => (any::<i64>(), any::<u64>()).prop_map(|(a, l)| format!("/_stampede/journal?after_seq={a}&limit={l}")),
        1 => any::<u64>().prop_map(|s| format!("/_stampede/journal?since={s}")),
        1 => prop::sample::select(vec![
            "/_stampede/stats", "/_stampede/journal", "/_stampede/reset", "/_stampede/scenario",
            "/_stampede/", "/metrics", "*", "http://127.0.0.1/v1/records", "//v1//records", "/v1/records/",
            "/v1/chat/completions?stream=true", "/../../etc/passwd", "",
        ]).prop_map(str::to_string),
        1 => "/[\\x21-\\x7e]{0,60}",
    ]
}

fn header_value() -> impl Strategy<Value = Vec<u8>> {
    prop_oneof![
        4 => "[ -~]{0,40}".prop_map(String::into_bytes),
        1 => Just(Vec::new()),
        1 => (200usize..300).prop_map(|n| vec![b'k'; n]),
        1 => (60_000usize..70_000).prop_map(|n| vec![b'A'; n]),
        1 => prop::collection::vec(any::<u8>(), 0..40),
        1 => any::<u64>().prop_map(|n| n.to_string().into_bytes()),
        1 => any::<i64>().prop_map(|n| n.to_string().into_bytes()),
    ]
}

fn headers() -> impl Strategy<Value = Vec<(String, Vec<u8>)>> {
    let name = prop_oneof![
        Just("authorization"),
        Just("Authorization"),
        Just("x-api-key"),
        Just("anthropic-version"),
        Just("Idempotency-Key"),
        Just("x-stampede-tenant"),
        Just("x-stampede-class"),
        Just("x-stampede-action"),
        Just("x-stampede-attempt"),
        Just("x-stainless-retry-count"),
        Just("content-type"),
        Just("origin"),
        Just("host"),
        Just("connection"),
        Just("expect"),
        Just("transfer-encoding"),
        Just("content-length"),
        Just("x-odd header"),
    ]
    .prop_map(str::to_string);
    let auth = prop_oneof![
        Just(format!("Bearer {KEY}").into_bytes()),
        Just(b"Bearer sk-fuzz-key-0002".to_vec()),
        Just(format!("bearer {KEY}").into_bytes()),
        header_value().prop_map(|v| [b"Bearer ".to_vec(), v].concat()),
    ];
    let chosen = (
        prop::option::weighted(0.85, auth),
        prop::option::weighted(
            0.3,
            prop::sample::select(vec![
                "application/json",
                "text/plain",
                "application/toml",
                "application/json; charset=utf-8",
                "",
            ]),
        ),
        prop::option::weighted(0.4, header_value()),
        prop::option::weighted(0.2, Just("flaky".to_string())),
        // What every Anthropic client sends: without it, Anthropic's routes refuse the
        // request before its body is checked, and the fuzzer would seldom reach the checks.
        prop::option::weighted(0.7, Just("2023-06-01")),
    );
    (chosen, prop::collection::vec((name, header_value()), 0..4)).prop_map(
        |((auth, ct, key, class, version), extra)| {
            let mut h = Vec::new();
            if let Some(a) = auth {
                h.push(("Authorization".to_string(), a));
            }
            if let Some(c) = ct {
                h.push(("Content-Type".to_string(), c.as_bytes().to_vec()));
            }
            if let Some(k) = key {
                h.push(("Idempotency-Key".to_string(), k));
            }
            if let Some(c) = class {
                h.push(("x-stampede-class".to_string(), c.into_bytes()));
            }
            if let Some(v) = version {
                h.push(("anthropic-version".to_string(), v.as_bytes().to_vec()));
            }
            h.extend(extra);
            h
        },
    )
}

/// JSON numbers and values the parser may choke on.
fn json_scalar() -> impl Strategy<Value = String> {
    prop_oneof![
        // Numbers, most in the range a u32 field accepts, and its edges.
        3 => any::<u32>().prop_map(|n| n.to_string()),
        2 => prop::sample::select(vec![
            "0", "1", "16", "4294967294", "4294967295", "4294967296", "-1", "1e999999", "-0.0",
            "1.5", "18446744073709551616",
        ])
        .prop_map(str::to_string),
        1 => any::<i64>().prop_map(|n| n.to_string()),
        1 => any::<u64>().prop_map(|n| n.to_string()),
        1 => prop::sample::select(vec!["null", "true", "\"\"", "[]", "{}"]).prop_map(str::to_string),
        1 => "\\PC{0,20}".prop_map(|s| serde_json::Value::String(s).to_string()),
    ]
}

fn body() -> impl Strategy<Value = Vec<u8>> {
    let chat = (
        prop::option::of(json_scalar()),
        prop::option::of(json_scalar()),
        prop::option::weighted(
            0.75,
            prop_oneof![
                3 => Just("true"),
                1 => Just("false"),
                1 => Just("1"),
                1 => Just("\"yes\"")
            ],
        ),
        prop::option::of(prop_oneof![
            Just("{\"include_usage\":true}"),
            Just("7"),
            Just("{\"include_usage\":\"x\"}")
        ]),
        prop_oneof![
            "\\PC{0,60}".prop_map(|s| format!(
                "[{{\"role\":\"user\",\"content\":{}}}]",
                serde_json::Value::String(s)
            )),
            json_scalar(),
            Just(
                "[{\"role\":\"user\",\"content\":[{\"type\":\"text\",\"text\":\"hi\"}]}]"
                    .to_string()
            ),
            Just("[{\"content\":\"no role\"}]".to_string()),
        ],
    )
        .prop_map(|(max, mct, stream, opts, messages)| {
            let mut fields = vec![
                format!("\"messages\":{messages}"),
                "\"model\":\"m\"".to_string(),
            ];
            if let Some(m) = max {
                fields.push(format!("\"max_tokens\":{m}"));
            }
            if let Some(m) = mct {
                fields.push(format!("\"max_completion_tokens\":{m}"));
            }
            if let Some(s) = stream {
                fields.push(format!("\"stream\":{s}"));
            }
            if let Some(o) = opts {
                fields.push(format!("\"stream_options\":{o}"));
            }
            format!("{{{}}}", fields.join(",")).into_bytes()
        });
    let record = (
        prop::option::of(prop_oneof![
            odd().prop_map(|s| serde_json::Value::String(s).to_string()),
            json_scalar()
        ]),
        json_scalar(),
    )
        .prop_map(|(r, amount)| match r {
            Some(r) => format!("{{\"external_ref\":{r},\"amount\":{amount}}}").into_bytes(),
            None => format!("{{\"amount\":{amount}}}").into_bytes(),
        });
    let embed = prop_oneof![
        json_scalar(),
        Just("[\"a\",\"b\"]".to_string()),
        Just("[1,[2]]".to_string())
    ]
    .prop_map(|i| format!("{{\"input\":{i},\"model\":\"e\"}}").into_bytes());
    let responses = (
        prop_oneof![
            "\\PC{0,60}".prop_map(|s| serde_json::Value::String(s).to_string()),
            json_scalar(),
            Just(
                "[{\"role\":\"user\",\"content\":[{\"type\":\"input_text\",\"text\":\"hi\"}]}]"
                    .to_string()
            ),
            Just(
                "[{\"type\":\"function_call_output\",\"call_id\":\"c\",\"output\":7}]".to_string()
            ),
            Just("[{\"role\":\"robot\"},3]".to_string()),
        ],
        prop::option::of(json_scalar()),
        prop::option::of(prop_oneof![Just("true"), Just("false"), Just("1")]),
    )
        .prop_map(|(input, max, stream)| {
            let mut fields = vec![format!("\"input\":{input}"), "\"model\":\"m\"".to_string()];
            if let Some(m) = max {
                fields.push(format!("\"max_output_tokens\":{m}"));
            }
            if let Some(s) = stream {
                fields.push(format!("\"stream\":{s}"));
            }
            format!("{{{}}}", fields.join(",")).into_bytes()
        });
    let deep = (1usize..20_000, any::<bool>()).prop_map(|(n, obj)| {
        if obj {
            let mut s = "{\"a\":".repeat(n);
            s.push('1');
            s.push_str(&"}".repeat(n));
            s.into_bytes()
        } else {
            format!("{}{}", "[".repeat(n), "]".repeat(n)).into_bytes()
        }
    });
    let invalid_utf8 = prop::collection::vec(any::<u8>(), 0..64).prop_map(|junk| {
        let mut b = b"{\"messages\":[{\"role\":\"user\",\"content\":\"".to_vec();
        b.extend(junk);
        b.extend_from_slice(b"\xff\xfe\xc3\"}]}");
        b
    });
    prop_oneof![
        5 => chat,
        4 => record,
        2 => responses,
        2 => embed,
        1 => deep,
        1 => invalid_utf8,
        1 => Just(Vec::new()),
        1 => (1usize..(1 << 20) + 100).prop_map(|n| vec![b' '; n]),
    ]
}

/// How the body is framed.
#[derive(Debug, Clone)]
enum Framing {
    Length,
    LengthOff(i64),
    LengthText(String),
    NoLength,
    Chunked { pieces: usize, terminated: bool },
    ChunkedBadSize(String),
    Both,
}

fn framing() -> impl Strategy<Value = Framing> {
    prop_oneof![
        8 => Just(Framing::Length),
        2 => (-5i64..5).prop_map(Framing::LengthOff),
        1 => prop::sample::select(vec!["-1", "abc", "18446744073709551616", "1, 2", " 5 ", "+3", "0x10"]).prop_map(|s| Framing::LengthText(s.to_string())),
        1 => Just(Framing::NoLength),
        3 => (1usize..6, prop::bool::weighted(0.8)).prop_map(|(pieces, terminated)| Framing::Chunked { pieces, terminated }),
        1 => prop::sample::select(vec!["ffffffffffffffffffff", "-1", "zz", "1;ext=1", ""]).prop_map(|s| Framing::ChunkedBadSize(s.to_string())),
        1 => Just(Framing::Both),
    ]
}

/// Byte-level damage after assembly.
#[derive(Debug, Clone)]
enum Damage {
    None,
    Flip(Vec<(usize, u8)>),
    Cut(usize),
    Insert(usize, Vec<u8>),
    Twice,
}

fn damage() -> impl Strategy<Value = Damage> {
    prop_oneof![
        20 => Just(Damage::None),
        2 => prop::collection::vec((any::<usize>(), any::<u8>()), 1..4).prop_map(Damage::Flip),
        2 => any::<usize>().prop_map(Damage::Cut),
        1 => (any::<usize>(), prop::collection::vec(any::<u8>(), 1..16)).prop_map(|(at, b)| Damage::Insert(at, b)),
        1 => Just(Damage::Twice),
    ]
}

#[allow(clippy::type_complexity)]
fn assemble(
    (method, path, version, headers, body, framing, damage, host): (
        String,
        String,
        &str,
        Vec<(String, Vec<u8>)>,
        Vec<u8>,
        Framing,
        Damage,
        u8,
    ),
    addr: SocketAddr,
) -> Vec<u8> {
    let mut out = format!("{method} {path} {version}\r\n").into_bytes();
    match host {
        0 => out.extend_from_slice(format!("Host: {addr}\r\n").as_bytes()),
        1 => out.extend_from_slice(b"Host: evil.example\r\n"),
        _ => {}
    }
    for (n, v) in &headers {
        out.extend_from_slice(n.as_bytes());
        out.extend_from_slice(b": ");
        out.extend_from_slice(v);
        out.extend_from_slice(b"\r\n");
    }
    let chunked = |pieces: usize, terminated: bool, size: Option<&str>| {
        let mut b = Vec::new();
        let step = body.len().div_ceil(pieces.max(1)).max(1);
        for part in body.chunks(step) {
            match size {
                Some(s) => b.extend_from_slice(s.as_bytes()),
                None => b.extend_from_slice(format!("{:x}", part.len()).as_bytes()),
            }
            b.extend_from_slice(b"\r\n");
            b.extend_from_slice(part);
            b.extend_from_slice(b"\r\n");
        }
        if terminated {
            b.extend_from_slice(b"0\r\n\r\n");
        }
        b
    };
    let payload = match &framing {
        Framing::Length => {
            out.extend_from_slice(format!("Content-Length: {}\r\n", body.len()).as_bytes());
            body.clone()
        }
        Framing::LengthOff(d) => {
            let n = (body.len() as i64 + d).max(0);
            out.extend_from_slice(format!("Content-Length: {n}\r\n").as_bytes());
            body.clone()
        }
        Framing::LengthText(t) => {
            out.extend_from_slice(format!("Content-Length: {t}\r\n").as_bytes());
            body.clone()
        }
        Framing::NoLength => body.clone(),
        Framing::Chunked { pieces, terminated } => {
            out.extend_from_slice(b"Transfer-Encoding: chunked\r\n");
            chunked(*pieces, *terminated, None)
        }
        Framing::ChunkedBadSize(s) => {
            out.extend_from_slice(b"Transfer-Encoding: chunked\r\n");
            chunked(2, true, Some(s))
        }
        Framing::Both => {
            out.extend_from_slice(
                format!(
                    "Content-Length: {}\r\nTransfer-Encoding: chunked\r\n",
                    body.len()
                )
                .as_bytes(),
            );
            chunked(1, true, None)
        }
    };
    out.extend_from_slice(b"\r\n");
    out.extend_from_slice(&payload);
    match damage {
        Damage::None => {}
        Damage::Flip(flips) => {
            if !out.is_empty() {
                let len = out.len();
                for (at, b) in flips {
                    out[at % len] ^= b;
                }
            }
        }
        Damage::Cut(at) => out.truncate(at % (out.len() + 1)),
        Damage::Insert(at, bytes) => {
            let at = at % (out.len() + 1);
            out.splice(at..at, bytes);
        }
        Damage::Twice => {
            let again = out.clone();
            out.extend(again);
        }
    }
    out
}

#[test]
fn tcp_random_bytes() {
    count_panics();
    let start = Instant::now();
    runner(TCP_SCALE)
        .run(&(random_bytes(), ending()), |(bytes, end)| {
            run_tcp_case(&bytes, end, &RANDOM_INPUTS)
        })
        .unwrap();
    eprintln!(
        "fuzz_http tcp_random_bytes: {} inputs, 0 crashes, {:.1} s",
        RANDOM_INPUTS.load(Ordering::Relaxed),
        start.elapsed().as_secs_f64()
    );
}

#[test]
fn tcp_mutated_requests() {
    count_panics();
    let addr = server();
    let start = Instant::now();
    let version = prop_oneof![
        10 => Just("HTTP/1.1"),
        1 => Just("HTTP/1.0"),
        1 => Just("HTTP/2.0"),
        1 => Just("HTTP/1.1 extra"),
        1 => Just("HTTX/1.1"),
    ];
    let request = (
        method(),
        path(),
        version,
        headers(),
        body(),
        framing(),
        damage(),
        prop_oneof![8 => Just(0u8), 1 => Just(1u8), 1 => Just(2u8)],
    );
    runner(TCP_SCALE)
        .run(&(request, ending()), |(parts, end)| {
            let bytes = assemble(parts, addr);
            run_tcp_case(&bytes, end, &MUTATED_INPUTS)
        })
        .unwrap();
    eprintln!(
        "fuzz_http tcp_mutated_requests: {} inputs, 0 crashes, {:.1} s",
        MUTATED_INPUTS.load(Ordering::Relaxed),
        start.elapsed().as_secs_f64()
    );
}

/// Regression: a streamed completion asking for `max_tokens` near `u32::MAX` made the server
/// build every SSE frame up front (billions of them: the allocation aborted the process).
/// The frames are now made as the client reads them.
#[test]
fn regression_a_huge_streamed_completion_is_made_as_it_is_read() {
    count_panics();
    let addr = plain_server();
    let responses = r#"{"model":"m","input":"x","max_output_tokens":4294967295,"stream":true}"#;
    let chat = r#"{"model":"m","messages":[{"role":"user","content":"x"}],"max_tokens":4294967295,"stream":true,"stream_options":{"include_usage":true}}"#;
    for (path, body) in [
        ("/v1/chat/completions", chat),
        ("/v1/messages", chat),
        ("/v1/responses", responses),
    ] {
        let req = format!(
            "POST {path} HTTP/1.1\r\nHost: {addr}\r\nAuthorization: Bearer {KEY}\r\nanthropic-version: 2023-06-01\r\nContent-Type: application/json\r\nContent-Length: {}\r\n\r\n{body}",
            body.len()
        );
        for _ in 0..4 {
            play(addr, req.as_bytes(), Ending::Abandon);
        }
        stats_ok(addr).unwrap();
    }
    no_panics().unwrap();
}

// ---------------------------------------------------------------------------------------
// In process: the model.
// ---------------------------------------------------------------------------------------

#[derive(Debug, Clone)]
enum Call {
    Arrive(Request, u64),
    Depart(usize, u64),
    Unknown(String, String, Option<String>, u64),
}

fn opt_text() -> impl Strategy<Value = Option<String>> {
    prop_oneof![
        3 => Just(None),
        3 => prop::sample::select(vec!["k1", "k2", "k3", "ref-1", "ref-2", "flaky", "t1"]).prop_map(|s| Some(s.to_string())),
        1 => "\\PC{0,12}".prop_map(Some),
        1 => Just(Some(String::new())),
    ]
}

fn request() -> impl Strategy<Value = Request> {
    let route = prop_oneof![
        4 => Just(RequestRoute::ChatCompletions),
        2 => Just(RequestRoute::Messages),
        2 => Just(RequestRoute::Responses),
        1 => Just(RequestRoute::CountTokens),
        1 => Just(RequestRoute::Embeddings),
        4 => Just(RequestRoute::CreateRecord),
        2 => prop_oneof![
            (1u32..12).prop_map(|n| format!("rec_{n:06}")),
            "\\PC{0,12}",
            Just("rec_18446744073709551617".to_string()),
            Just("rec_0".to_string()),
        ].prop_map(|id| RequestRoute::GetRecord { id }),
        2 => opt_text().prop_map(|t| RequestRoute::FindRecords { by: FindBy::ExternalRef(t.unwrap_or_default()) }),
        2 => opt_text().prop_map(|t| RequestRoute::FindRecords { by: FindBy::IdempotencyKey(t.unwrap_or_default().into()) }),
        1 => "\\PC{0,8}".prop_map(|id| RequestRoute::GetItem { id }),
    ];
    let credential = prop_oneof![
        6 => Just(Some(KEY.to_string())),
        2 => Just(Some("sk-fuzz-key-0002".to_string())),
        1 => Just(None),
        1 => "\\PC{0,20}".prop_map(Some),
    ];
    let tokens = prop_oneof![4 => 0u32..2_000, 1 => any::<u32>(), 1 => Just(u32::MAX)];
    (
        (
            route,
            credential,
            opt_text(),
            prop_oneof![3 => 0u64..6, 1 => any::<u64>()],
            opt_text(),
        ),
        (tokens.clone(), tokens, any::<bool>(), any::<bool>()),
        (
            opt_text(),
            opt_text(),
            prop::option::of(prop_oneof![0u64..4, any::<u64>()]),
            prop::option::of(prop_oneof![0u32..4, any::<u32>()]),
            prop::option::of(any::<u32>()),
        ),
    )
        .prop_map(
            |(
                (route, credential, idempotency_key, body_hash, external_ref),
                (prompt_tokens, max_tokens, stream, stream_usage),
                (class, tenant, action, attempt_no, sdk_retry_count),
            )| Request {
                route,
                credential: credential.map(Into::into),
                idempotency_key: idempotency_key.map(Into::into),
                body_hash,
                external_ref,
                prompt_tokens,
                max_tokens,
                max_tokens_assumed: false,
                stream,
                stream_usage,
                class: class.map(Into::into),
                tenant: tenant.map(Into::into),
                action,
                attempt_no,
                sdk_retry_count,
                model: None,
                workload_item: None,
            },
        )
}

fn calls() -> impl Strategy<Value = Vec<Call>> {
    // Time steps: mostly small, sometimes a jump past the identity window or the retention.
    let step = prop_oneof![6 => 0u64..50, 3 => 50u64..5_000, 1 => 5_000u64..400_000];
    let call = prop_oneof![
        12 => (request(), step.clone()).prop_map(|(r, dt)| Call::Arrive(r, dt)),
        4 => (any::<usize>(), step.clone()).prop_map(|(i, dt)| Call::Depart(i, dt)),
        1 => ("\\PC{0,6}", "\\PC{0,300}", prop::option::of(Just(KEY.to_string())), step).prop_map(|(m, p, c, dt)| Call::Unknown(m, p, c, dt)),
    ];
    prop::collection::vec(call, 1..64)
}

static MODEL_INPUTS: AtomicU64 = AtomicU64::new(0);

/// What the journal says, summed, to check against the stats.
#[derive(Default)]
struct Seen {
    entries: u64,
    committed: u64,
    duplicates: u64,
    tokens: u64,
    record_commits: u64,
    per_outcome: std::collections::BTreeMap<String, u64>,
}

fn check(cond: bool, what: impl FnOnce() -> String) -> Result<(), TestCaseError> {
    if cond {
        Ok(())
    } else {
        Err(TestCaseError::fail(what()))
    }
}

fn one_entry(m: &mut ProviderModel, seq: u64) -> Result<JournalEntry, TestCaseError> {
    let mut j = m.drain_journal();
    check(j.len() == 1, || {
        format!("{} journal entries for one call", j.len())
    })?;
    let e = j.remove(0);
    check(e.seq == seq, || {
        format!("journal seq {} after {}", e.seq, seq - 1)
    })?;
    Ok(e)
}

fn stats_agree(s: &ProviderStats, seen: &Seen, max_records: usize) -> Result<(), TestCaseError> {
    check(s.attempts == seen.entries, || {
        format!("stats attempts {} vs journal {}", s.attempts, seen.entries)
    })?;
    check(s.committed == seen.committed, || {
        format!(
            "stats committed {} vs journal {}",
            s.committed, seen.committed
        )
    })?;
    check(s.duplicates == seen.duplicates, || {
        format!(
            "stats duplicates {} vs journal {}",
            s.duplicates, seen.duplicates
        )
    })?;
    check(s.tokens_used == seen.tokens, || {
        format!("stats tokens {} vs journal {}", s.tokens_used, seen.tokens)
    })?;
    check(s.status_counts == seen.per_outcome, || {
        format!(
            "status counts {:?} vs journal {:?}",
            s.status_counts, seen.per_outcome
        )
    })?;
    check(s.records + s.records_evicted == seen.record_commits, || {
        format!(
            "records {} + evicted {} vs record commits {}",
            s.records, s.records_evicted, seen.record_commits
        )
    })?;
    check(s.records as usize <= max_records, || {
        format!("{} records kept over the cap {max_records}", s.records)
    })?;
    let scope_attempts: u64 = s.scopes.values().map(|x| x.attempts).sum();
    check(scope_attempts <= s.attempts, || {
        "scope attempts exceed attempts".into()
    })?;
    Ok(())
}

fn run_model_case(calls: &[Call], max_records: usize) -> Result<(), TestCaseError> {
    let mut config = faulty_config(10);
    config.identity_window = DurationMs(60_000);
    config.record_retention = DurationMs(120_000);
    let mut m = ProviderModel::new(config, 11, 1_700_000_000_000).unwrap();
    m.set_max_records(max_records);
    let mut now = 0u64;
    let mut seq = 0u64;
    let mut seqs: Vec<u64> = Vec::new();
    let mut seen = Seen::default();
    for call in calls {
        MODEL_INPUTS.fetch_add(1, Ordering::Relaxed);
        match call {
            Call::Arrive(req, dt) => {
                now = (now + dt).min(1 << 48);
                let d = m.arrive(req, now);
                seq += 1;
                check(d.seq == seq, || {
                    format!("decision seq {} expected {seq}", d.seq)
                })?;
                seqs.push(d.seq);
                let e = one_entry(&mut m, seq)?;
                let lookup = matches!(
                    req.route,
                    RequestRoute::GetRecord { .. } | RequestRoute::FindRecords { .. }
                );
                check((e.logical_attempt == 0) == lookup, || {
                    format!("logical_attempt {} on {:?}", e.logical_attempt, req.route)
                })?;
                check(e.status == d.answer.status(), || {
                    "journal status differs from the answer".into()
                })?;
                check(!e.committed || !lookup, || "a look-up committed".into())?;
                check(!(e.duplicate && e.replayed), || {
                    "a replay counted as a duplicate".into()
                })?;
                if let Answer::Respond { status: 429, .. } = d.answer {
                    check(e.retry_after_ms.is_some(), || {
                        "a 429 without Retry-After".into()
                    })?;
                }
                if e.committed && !e.replayed && req.route == RequestRoute::CreateRecord {
                    seen.record_commits += 1;
                    check(e.record_id.is_some(), || {
                        "a committed write without a record id".into()
                    })?;
                }
                seen.entries += 1;
                seen.committed += u64::from(e.committed);
                seen.duplicates += u64::from(e.duplicate);
                seen.tokens += e.tokens_used;
                *seen.per_outcome.entry(e.outcome.to_string()).or_insert(0) += 1;
            }
            Call::Depart(i, dt) => {
                now = (now + dt).min(1 << 48);
                let target = if seqs.is_empty() {
                    *i as u64
                } else {
                    seqs[i % seqs.len()]
                };
                m.depart(target, now);
                check(m.drain_journal().is_empty(), || {
                    "depart journaled something".into()
                })?;
            }
            Call::Unknown(method, path, credential, dt) => {
                now = (now + dt).min(1 << 48);
                let s = m.arrive_unknown_route(method, path, credential.as_deref(), now);
                seq += 1;
                check(s == seq, || format!("unknown-route seq {s} expected {seq}"))?;
                let e = one_entry(&mut m, seq)?;
                check(e.route.len() <= 200 && e.status == Some(404), || {
                    "unknown route journaled wrong".into()
                })?;
                seen.entries += 1;
                *seen.per_outcome.entry(e.outcome.to_string()).or_insert(0) += 1;
            }
        }
        stats_agree(&m.stats(), &seen, max_records)?;
    }
    // Everything departed: nothing is held.
    for s in &seqs {
        m.depart(*s, now);
    }
    let s = m.stats();
    check(s.in_flight == 0, || {
        format!("{} in flight after every departure", s.in_flight)
    })?;
    check(s.scopes.values().all(|x| x.in_flight == 0), || {
        "a scope holds a slot after every departure".into()
    })?;
    Ok(())
}

#[test]
fn model_sequences() {
    count_panics();
    let start = Instant::now();
    runner(1)
        .run(
            &(calls(), prop_oneof![Just(3usize), Just(1_000_000)]),
            |(calls, cap)| run_model_case(&calls, cap),
        )
        .unwrap();
    no_panics().unwrap();
    eprintln!(
        "fuzz_http model_sequences: {} inputs, 0 crashes, {:.1} s",
        MODEL_INPUTS.load(Ordering::Relaxed),
        start.elapsed().as_secs_f64()
    );
}
