//! The server's bounds over loopback, with raw sockets: idle and slow-head connections are
//! closed, a never-ending body gets 408, connections past the cap wait, oversized fields get
//! 400, and attempts no credential admitted keep nothing they sent in the journal.

use stampede_provider::config::ScopeLimits;
use stampede_provider::config::{CredentialConfig, DurationMs, LatencyConfig, ProviderConfig};
use stampede_provider::server::{spawn_with, ServerHandle, ServerOptions};
use std::net::SocketAddr;
use std::time::{Duration, Instant};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

fn config() -> ProviderConfig {
    ProviderConfig {
        latency: LatencyConfig::fixed_ms(1),
        tool_latency: LatencyConfig::fixed_ms(1),
        reject_latency: DurationMs(0),
        scopes: vec![ScopeLimits::unlimited("a")],
        credentials: vec![CredentialConfig {
            key: "sk-a-test-key".into(),
            scope: "a".into(),
            scopes: Vec::new(),
        }],
        ..ProviderConfig::default()
    }
}

fn short() -> ServerOptions {
    ServerOptions {
        header_read_timeout: Duration::from_millis(300),
        idle_timeout: Duration::from_millis(300),
        body_read_timeout: Duration::from_millis(300),
        ..ServerOptions::default()
    }
}

async fn start(options: ServerOptions) -> (SocketAddr, ServerHandle) {
    spawn_with(config(), options, SocketAddr::from(([127, 0, 0, 1], 0)))
        .await
        .expect("server starts")
}

/// Reads until the server closes (Ok with what came) or `limit` passes (Err).
async fn read_until_closed(s: &mut TcpStream, limit: Duration) -> Result<String, String> {
    let mut out = Vec::new();
    let mut buf = [0u8; 4096];
    let end = Instant::now() + limit;
    loop {
        match tokio::time::timeout_at(end.into(), s.read(&mut buf)).await {
            Err(_) => return Err(String::from_utf8_lossy(&out).into_owned()),
            Ok(Ok(0)) | Ok(Err(_)) => return Ok(String::from_utf8_lossy(&out).into_owned()),
            Ok(Ok(n)) => out.extend_from_slice(&buf[..n]),
        }
    }
}

/// `GET /v1/items/1` on a connection of its own, answered and closed.
async fn get_item(addr: SocketAddr) -> String {
    request(
        addr,
        format!("GET /v1/items/1 HTTP/1.1\r\nHost: {addr}\r\nAuthorization: Bearer sk-a-test-key\r\nConnection: close\r\n\r\n"),
    )
    .await
}

async fn request(addr: SocketAddr, raw: String) -> String {
    let mut s = TcpStream::connect(addr).await.unwrap();
    s.write_all(raw.as_bytes()).await.unwrap();
    read_until_closed(&mut s, Duration::from_secs(5))
        .await
        .expect("answered and closed")
}

#[tokio::test]
async fn an_idle_connection_is_closed_after_the_idle_timeout() {
    let (addr, _h) = start(short()).await;
    let mut s = TcpStream::connect(addr).await.unwrap();
    let t = Instant::now();
    read_until_closed(&mut s, Duration::from_secs(3))
        .await
        .expect("the server closes an idle connection");
    assert!(
        t.elapsed() >= Duration::from_millis(250),
        "{:?}",
        t.elapsed()
    );
}

#[tokio::test]
async fn a_keep_alive_connection_is_closed_once_idle_after_its_answer() {
    let (addr, _h) = start(short()).await;
    let mut s = TcpStream::connect(addr).await.unwrap();
    s.write_all(format!("GET /v1/items/1 HTTP/1.1\r\nHost: {addr}\r\nAuthorization: Bearer sk-a-test-key\r\n\r\n").as_bytes())
        .await
        .unwrap();
    let got = read_until_closed(&mut s, Duration::from_secs(3))
        .await
        .expect("closed after the idle timeout");
    assert!(got.starts_with("HTTP/1.1 200"), "{got}");
}

#[tokio::test]
async fn a_head_sent_a_byte_at_a_time_is_cut_off() {
    let (addr, _h) = start(short()).await;
    let mut s = TcpStream::connect(addr).await.unwrap();
    let t = Instant::now();
    let writer = async {
        for b in b"GET /v1/items/1 HTTP/1.1\r\nX-Slow: aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa"
        {
            if s.write_all(&[*b]).await.is_err() {
                return;
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    };
    tokio::time::timeout(Duration::from_secs(5), writer)
        .await
        .ok();
    let _ = read_until_closed(&mut s, Duration::from_secs(1)).await;
    assert!(
        t.elapsed() < Duration::from_millis(2_000),
        "the slow head held the connection for {:?}",
        t.elapsed()
    );
}

#[tokio::test]
async fn a_never_ending_chunked_body_gets_408_and_the_connection_closes() {
    let (addr, _h) = start(short()).await;
    let mut s = TcpStream::connect(addr).await.unwrap();
    s.write_all(
        format!(
            "POST /v1/records HTTP/1.1\r\nHost: {addr}\r\nAuthorization: Bearer sk-a-test-key\r\n\
             Content-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\n1\r\n{{\r\n"
        )
        .as_bytes(),
    )
    .await
    .unwrap();
    // Keep the body coming, a chunk every 50 ms, while reading the answer.
    let (mut rd, mut wr) = s.into_split();
    let feeder = tokio::spawn(async move {
        for _ in 0..200 {
            if wr.write_all(b"1\r\n \r\n").await.is_err() {
                return;
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    });
    let mut out = Vec::new();
    let got = tokio::time::timeout(Duration::from_secs(5), rd.read_to_end(&mut out)).await;
    feeder.abort();
    assert!(got.is_ok(), "the connection was still open after 5 s");
    let text = String::from_utf8_lossy(&out);
    assert!(text.starts_with("HTTP/1.1 408"), "{text}");
    assert!(text.contains("request_timeout"), "{text}");
}

#[tokio::test]
async fn connections_past_the_cap_wait_for_a_slot() {
    let (addr, _h) = start(ServerOptions {
        max_connections: 2,
        idle_timeout: Duration::from_millis(500),
        ..ServerOptions::default()
    })
    .await;
    let _a = TcpStream::connect(addr).await.unwrap();
    let _b = TcpStream::connect(addr).await.unwrap();
    tokio::time::sleep(Duration::from_millis(50)).await;
    let t = Instant::now();
    let got = get_item(addr).await;
    assert!(got.starts_with("HTTP/1.1 200"), "{got}");
    // It was served only once an idle connection was closed and freed its slot.
    assert!(
        t.elapsed() >= Duration::from_millis(300),
        "{:?}",
        t.elapsed()
    );
}

#[tokio::test]
async fn an_idempotency_key_over_255_bytes_is_a_400_and_is_not_stored() {
    let (addr, _h) = start(ServerOptions::default()).await;
    let key = "k".repeat(256);
    let got = request(
        addr,
        format!(
            "POST /v1/records HTTP/1.1\r\nHost: {addr}\r\nAuthorization: Bearer sk-a-test-key\r\n\
             Idempotency-Key: {key}\r\nContent-Type: application/json\r\nContent-Length: 2\r\n\
             Connection: close\r\n\r\n{{}}"
        ),
    )
    .await;
    assert!(got.starts_with("HTTP/1.1 400"), "{got}");
    assert!(got.contains("255 characters"), "{got}");
    let ok_key = "k".repeat(255);
    let got = request(
        addr,
        format!(
            "POST /v1/records HTTP/1.1\r\nHost: {addr}\r\nAuthorization: Bearer sk-a-test-key\r\n\
             Idempotency-Key: {ok_key}\r\nContent-Type: application/json\r\nContent-Length: 2\r\n\
             Connection: close\r\n\r\n{{}}"
        ),
    )
    .await;
    assert!(got.starts_with("HTTP/1.1 200"), "{got}");
    for (what, raw) in [
        (
            "external_ref",
            format!("{{\"external_ref\":\"{}\"}}", "r".repeat(300)),
        ),
        ("tenant", "{}".to_string()),
    ] {
        let tenant = if what == "tenant" {
            format!("X-Stampede-Tenant: {}\r\n", "t".repeat(300))
        } else {
            String::new()
        };
        let got = request(
            addr,
            format!(
                "POST /v1/records HTTP/1.1\r\nHost: {addr}\r\nAuthorization: Bearer sk-a-test-key\r\n\
                 {tenant}Content-Type: application/json\r\nContent-Length: {}\r\n\
                 Connection: close\r\n\r\n{raw}",
                raw.len()
            ),
        )
        .await;
        assert!(got.starts_with("HTTP/1.1 400"), "{what}: {got}");
    }
    let got = request(
        addr,
        format!("GET /_stampede/journal HTTP/1.1\r\nHost: {addr}\r\nConnection: close\r\n\r\n"),
    )
    .await;
    assert!(!got.contains(&key), "the oversized key reached the journal");
}

#[tokio::test]
async fn an_unauthenticated_attempt_keeps_nothing_it_sent_in_the_journal() {
    let (addr, _h) = start(ServerOptions::default()).await;
    let key = format!("secret-key-{}", "x".repeat(200));
    let got = request(
        addr,
        format!(
            "POST /v1/records HTTP/1.1\r\nHost: {addr}\r\nAuthorization: Bearer sk-wrong-{}\r\n\
             Idempotency-Key: {key}\r\nContent-Type: application/json\r\nContent-Length: 26\r\n\
             Connection: close\r\n\r\n{{\"external_ref\":\"ref-xyz\"}}",
            "w".repeat(100)
        ),
    )
    .await;
    assert!(got.starts_with("HTTP/1.1 401"), "{got}");
    let journal = request(
        addr,
        format!("GET /_stampede/journal HTTP/1.1\r\nHost: {addr}\r\nConnection: close\r\n\r\n"),
    )
    .await;
    assert!(journal.contains("\"seq\":1"), "{journal}");
    assert!(!journal.contains(&key), "{journal}");
    assert!(!journal.contains("ref-xyz"), "{journal}");
    assert!(!journal.contains("wwwwwwww"), "{journal}");
}

/// Clients that open connections and never use them cannot keep others out: while a new
/// connection waits for a slot, idle ones are closed after `pressed_idle_timeout`, not after
/// the minute of `idle_timeout` (1,100 such connections stalled every other client for it).
#[tokio::test]
async fn idle_connections_make_room_for_a_waiting_one() {
    let (addr, _h) = start(ServerOptions {
        max_connections: 4,
        idle_timeout: Duration::from_secs(60),
        pressed_idle_timeout: Duration::from_millis(200),
        ..ServerOptions::default()
    })
    .await;
    let mut idle = Vec::new();
    for _ in 0..4 {
        idle.push(TcpStream::connect(addr).await.unwrap());
    }
    tokio::time::sleep(Duration::from_millis(50)).await;
    let t = Instant::now();
    let got = get_item(addr).await;
    assert!(got.starts_with("HTTP/1.1 200"), "{got}");
    // Served once an idle connection was closed: long before the minute (the bound leaves
    // a busy machine its scheduling noise).
    assert!(t.elapsed() < Duration::from_secs(20), "{:?}", t.elapsed());
    // One waiting connection closed one idle one; without a waiting connection, the others
    // stay.
    let mut open = 0;
    for s in &mut idle {
        let mut buf = [0u8; 1];
        // Still open: the read waits (a closed one reads 0 or fails at once).
        let read = tokio::time::timeout(Duration::from_millis(20), s.read(&mut buf)).await;
        open += usize::from(read.is_err());
    }
    assert_eq!(open, 3, "idle connections left open");
}

/// A Content-Length past the body limit is answered 413 at once, before any of the body
/// comes (it used to wait for the body, which may never come whole); a body that ends
/// before its Content-Length is a 400 that says so.
#[tokio::test]
async fn a_declared_oversize_body_is_refused_up_front_and_a_short_one_is_named() {
    let (addr, _h) = start(ServerOptions::default()).await;
    let mut s = TcpStream::connect(addr).await.unwrap();
    s.write_all(
        format!(
            "POST /v1/chat/completions HTTP/1.1\r\nHost: {addr}\r\nAuthorization: Bearer sk-a-test-key\r\n\
             Content-Type: application/json\r\nContent-Length: 50000000\r\n\r\n"
        )
        .as_bytes(),
    )
    .await
    .unwrap();
    let got = read_until_closed(&mut s, Duration::from_secs(20))
        .await
        .expect("answered and closed with no body sent");
    assert!(got.starts_with("HTTP/1.1 413"), "{got}");
    assert!(got.contains("payload_too_large"), "{got}");

    let mut s = TcpStream::connect(addr).await.unwrap();
    s.write_all(
        format!(
            "POST /v1/chat/completions HTTP/1.1\r\nHost: {addr}\r\nAuthorization: Bearer sk-a-test-key\r\n\
             Content-Type: application/json\r\nContent-Length: 100\r\n\r\n{{\"model\":"
        )
        .as_bytes(),
    )
    .await
    .unwrap();
    s.shutdown().await.unwrap();
    let got = read_until_closed(&mut s, Duration::from_secs(20))
        .await
        .unwrap();
    assert!(got.starts_with("HTTP/1.1 400"), "{got}");
    assert!(
        got.contains("end of file before message length reached"),
        "{got}"
    );
}

/// A client that stops reading a stream: the socket refuses the answer's bytes, and after
/// `write_stall_timeout` the connection is closed, so the stream departs and its scope's
/// only concurrency slot is free again. Until then the slot is held (a second request is
/// refused 429): the stream is in progress, not lost.
#[tokio::test]
async fn a_stream_whose_client_stopped_reading_frees_its_slot() {
    let mut config = config();
    config.scopes[0].concurrency = Some(1);
    let options = ServerOptions {
        write_stall_timeout: Duration::from_millis(500),
        ..ServerOptions::default()
    };
    let (addr, _h) = spawn_with(config, options, SocketAddr::from(([127, 0, 0, 1], 0)))
        .await
        .expect("server starts");
    let chat = |body: &str| {
        format!(
            "POST /v1/chat/completions HTTP/1.1\r\nHost: {addr}\r\nAuthorization: Bearer sk-a-test-key\r\nContent-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
            body.len()
        )
    };
    // A stream of billions of chunks, whose first bytes are read and no more.
    let mut stalled = TcpStream::connect(addr).await.unwrap();
    let endless = r#"{"model":"m","stream":true,"max_tokens":4000000000,"messages":[{"role":"user","content":"hi"}]}"#;
    stalled.write_all(chat(endless).as_bytes()).await.unwrap();
    let mut head = [0u8; 64];
    let n = stalled.read(&mut head).await.unwrap();
    assert!(
        String::from_utf8_lossy(&head[..n]).starts_with("HTTP/1.1 200"),
        "{}",
        String::from_utf8_lossy(&head[..n])
    );
    let one = r#"{"model":"m","max_tokens":1,"messages":[{"role":"user","content":"hi"}]}"#;
    let status = |answer: &str| answer.get(9..12).unwrap_or_default().to_string();
    let first = request(addr, chat(one)).await;
    assert_eq!(status(&first), "429", "the stream holds the slot: {first}");
    // Then, within a bound that leaves a busy machine plenty of room, the slot comes back.
    let end = Instant::now() + Duration::from_secs(20);
    loop {
        let answer = request(addr, chat(one)).await;
        match status(&answer).as_str() {
            "200" => break,
            "429" if Instant::now() < end => {
                tokio::time::sleep(Duration::from_millis(100)).await;
            }
            other => panic!("the stalled stream's slot was not freed ({other}): {answer}"),
        }
    }
    drop(stalled);
}

/// A head past `max_header_bytes` (64 KiB) is refused with 431 and the connection closes,
/// whatever hyper's read buffer lets through (it reads in blocks: a head of 100,000 bytes
/// had passed); one under the cap is served.
#[tokio::test]
async fn a_head_past_the_cap_is_refused_with_431() {
    let (addr, _h) = start(ServerOptions::default()).await;
    let cap = stampede_provider::server::DEFAULT_MAX_HEADER_BYTES;
    let body = r#"{"model":"m","messages":[{"role":"user","content":"hi"}]}"#;
    let with_pad = |pad: usize| {
        format!(
            "POST /v1/chat/completions HTTP/1.1\r\nHost: {addr}\r\nAuthorization: Bearer sk-a-test-key\r\n\
             Content-Type: application/json\r\nX-Pad: {}\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
            "a".repeat(pad),
            body.len()
        )
    };
    let under = request(addr, with_pad(cap - 1_024)).await;
    assert!(
        under.starts_with("HTTP/1.1 200"),
        "{}",
        &under[..under.len().min(200)]
    );
    for over in [cap + 1_024, cap + 40_000] {
        let got = request(addr, with_pad(over)).await;
        assert!(
            got.starts_with("HTTP/1.1 431"),
            "{over}: {}",
            &got[..got.len().min(300)]
        );
    }
}
