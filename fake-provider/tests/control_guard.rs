//! The control plane is not open: Host and Origin checked, no change from a simple
//! cross-origin request, a token on non-loopback addresses, uploads checked strictly.

use stampede_provider::config::{
    CredentialConfig, DurationMs, LatencyConfig, ProviderConfig, ScopeLimits,
};
use stampede_provider::server::{spawn_with, ServerHandle, ServerOptions};
use std::net::SocketAddr;
use std::time::Duration;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

fn config() -> ProviderConfig {
    ProviderConfig {
        latency: LatencyConfig::fixed_ms(0),
        tool_latency: LatencyConfig::fixed_ms(0),
        reject_latency: DurationMs(0),
        scopes: vec![ScopeLimits::unlimited("a")],
        credentials: vec![CredentialConfig {
            key: "sk-a-test-key-0123".into(),
            scope: "a".into(),
            scopes: Vec::new(),
        }],
        ..ProviderConfig::default()
    }
}

async fn start(options: ServerOptions, addr: &str) -> (SocketAddr, ServerHandle) {
    let (bound, h) = spawn_with(config(), options, addr.parse().unwrap())
        .await
        .expect("server starts");
    (SocketAddr::from(([127, 0, 0, 1], bound.port())), h)
}

/// One raw request (`head` without the request line's end); returns status and body.
async fn call(
    addr: SocketAddr,
    method: &str,
    path: &str,
    headers: &str,
    body: &str,
) -> (u16, String) {
    let mut s = TcpStream::connect(addr).await.unwrap();
    let raw = format!(
        "{method} {path} HTTP/1.1\r\n{headers}Content-Length: {}\r\nConnection: close\r\n\r\n{body}",
        body.len()
    );
    s.write_all(raw.as_bytes()).await.unwrap();
    let mut out = Vec::new();
    tokio::time::timeout(Duration::from_secs(5), s.read_to_end(&mut out))
        .await
        .expect("answered")
        .unwrap();
    let text = String::from_utf8_lossy(&out).into_owned();
    let status = text[9..12].parse().unwrap();
    let body = text.split("\r\n\r\n").nth(1).unwrap_or("").to_string();
    (status, body)
}

async fn attempts(addr: SocketAddr, extra: &str) -> u64 {
    let (status, body) = call(
        addr,
        "GET",
        "/_stampede/stats",
        &format!("Host: {addr}\r\n{extra}"),
        "",
    )
    .await;
    assert_eq!(status, 200, "{body}");
    let v: serde_json::Value = serde_json::from_str(&body).unwrap();
    v["attempts"].as_u64().unwrap()
}

#[tokio::test]
async fn host_and_origin_are_checked_and_a_simple_cross_origin_post_changes_nothing() {
    let (addr, _h) = start(ServerOptions::default(), "127.0.0.1:0").await;
    let host = format!("Host: {addr}\r\n");
    let (s, _) = call(
        addr,
        "GET",
        "/v1/items/1",
        &format!("{host}Authorization: Bearer sk-a-test-key-0123\r\n"),
        "",
    )
    .await;
    assert_eq!(s, 200);
    assert_eq!(attempts(addr, "").await, 1);
    for h in ["localhost:1234", "127.0.0.1", "[::1]:9"] {
        let (s, b) = call(
            addr,
            "GET",
            "/_stampede/stats",
            &format!("Host: {h}\r\n"),
            "",
        )
        .await;
        assert_eq!(s, 200, "{h}: {b}");
    }
    // DNS rebinding: a page on attacker.example resolving to 127.0.0.1.
    let (s, b) = call(
        addr,
        "GET",
        "/_stampede/journal",
        "Host: attacker.example:8080\r\n",
        "",
    )
    .await;
    assert_eq!(s, 403, "{b}");
    assert!(b.contains("host_not_allowed"), "{b}");
    let (s, _) = call(addr, "GET", "/_stampede/stats", "", "").await;
    assert_eq!(s, 400);
    // A page elsewhere: refused by Origin, whatever the method.
    let (s, b) = call(
        addr,
        "GET",
        "/_stampede/journal",
        &format!("{host}Origin: http://attacker.example\r\n"),
        "",
    )
    .await;
    assert_eq!(s, 403, "{b}");
    let (s, _) = call(
        addr,
        "GET",
        "/_stampede/stats",
        &format!("{host}Origin: http://{addr}\r\n"),
        "",
    )
    .await;
    assert_eq!(s, 200);
    // A form POST (text/plain, no Origin as some old clients send it): no reset.
    let (s, b) = call(
        addr,
        "POST",
        "/_stampede/reset",
        &format!("{host}Content-Type: text/plain\r\n"),
        "x=1",
    )
    .await;
    assert_eq!(s, 415, "{b}");
    let (s, _) = call(addr, "POST", "/_stampede/reset", &host, "").await;
    assert_eq!(s, 415);
    assert_eq!(
        attempts(addr, "").await,
        1,
        "the refused resets changed nothing"
    );
    let (s, _) = call(
        addr,
        "POST",
        "/_stampede/reset",
        &format!("{host}Content-Type: application/json\r\n"),
        "",
    )
    .await;
    assert_eq!(s, 200);
    assert_eq!(attempts(addr, "").await, 0);
    // The API itself is not a control route: no Host rule there.
    let (s, _) = call(
        addr,
        "GET",
        "/v1/items/1",
        "Host: anything.example\r\nAuthorization: Bearer sk-a-test-key-0123\r\n",
        "",
    )
    .await;
    assert_eq!(s, 200);
}

#[tokio::test]
async fn a_configured_token_is_required_and_checked() {
    let (addr, _h) = start(
        ServerOptions {
            control_token: Some("tok-123".into()),
            ..ServerOptions::default()
        },
        "127.0.0.1:0",
    )
    .await;
    let host = format!("Host: {addr}\r\n");
    let (s, b) = call(addr, "GET", "/_stampede/stats", &host, "").await;
    assert_eq!(s, 401, "{b}");
    let (s, _) = call(
        addr,
        "GET",
        "/_stampede/stats",
        &format!("{host}Authorization: Bearer tok-124\r\n"),
        "",
    )
    .await;
    assert_eq!(s, 401);
    let (s, _) = call(
        addr,
        "GET",
        "/_stampede/stats",
        &format!("{host}Authorization: Bearer tok-123\r\n"),
        "",
    )
    .await;
    assert_eq!(s, 200);
    let (s, _) = call(
        addr,
        "GET",
        "/_stampede/stats",
        &format!("{host}x-stampede-control-token: tok-123\r\n"),
        "",
    )
    .await;
    assert_eq!(s, 200);
    // `/metrics` is the control plane's too: its counters and scope names need the token.
    let (s, b) = call(addr, "GET", "/metrics", &host, "").await;
    assert_eq!(s, 401, "{b}");
    let (s, b) = call(
        addr,
        "GET",
        "/metrics",
        &format!("{host}Authorization: Bearer tok-123\r\n"),
        "",
    )
    .await;
    assert_eq!(s, 200, "{b}");
    assert!(b.contains("stampede_provider_attempts_total"), "{b}");
}

#[tokio::test]
async fn a_non_loopback_address_without_a_token_keeps_the_control_plane_shut() {
    let (addr, _h) = start(ServerOptions::default(), "0.0.0.0:0").await;
    let (s, b) = call(
        addr,
        "GET",
        "/_stampede/stats",
        &format!("Host: {addr}\r\n"),
        "",
    )
    .await;
    assert_eq!(s, 403, "{b}");
    assert!(b.contains("control_token_required"), "{b}");
    let (addr, _h2) = start(
        ServerOptions {
            control_token: Some("tok".into()),
            ..ServerOptions::default()
        },
        "0.0.0.0:0",
    )
    .await;
    let (s, _) = call(
        addr,
        "GET",
        "/_stampede/stats",
        &format!("Host: {addr}\r\n"),
        "",
    )
    .await;
    assert_eq!(s, 401);
    let (s, _) = call(
        addr,
        "GET",
        "/_stampede/stats",
        &format!("Host: {addr}\r\nAuthorization: Bearer tok\r\n"),
        "",
    )
    .await;
    assert_eq!(s, 200);
}

#[tokio::test]
async fn scenario_uploads_are_checked_strictly() {
    let (addr, _h) = start(ServerOptions::default(), "127.0.0.1:0").await;
    let json = format!("Host: {addr}\r\nContent-Type: application/json\r\n");
    let toml = format!("Host: {addr}\r\nContent-Type: application/toml\r\n");
    let (s, b) = call(addr, "PUT", "/_stampede/scenario", &toml, "").await;
    assert_eq!(s, 400, "{b}");
    assert!(b.contains("empty"), "{b}");
    let (s, b) = call(addr, "PUT", "/_stampede/scenario", &json, "  \n").await;
    assert_eq!(s, 400, "{b}");
    let scoped = "[[provider.scopes]]\nid = \"z\"\n[[provider.credentials]]\nkey = \"sk-zz-new-key\"\nscope = \"z\"\n";
    for bad in ["1e308", "0", "-1", "nan", "10001"] {
        let body = format!("[provider]\ntime_scale = {bad}\n{scoped}");
        let (s, b) = call(addr, "PUT", "/_stampede/scenario", &toml, &body).await;
        assert_eq!(s, 400, "time_scale {bad}: {b}");
        assert!(b.contains("provider.time_scale"), "{b}");
    }
    let (s, b) = call(
        addr,
        "PUT",
        "/_stampede/scenario",
        &toml,
        "[provider]\n[[provider.scopes]]\nid = \"z\"\n",
    )
    .await;
    assert_eq!(s, 400, "{b}");
    assert!(b.contains("provider.credentials"), "{b}");
    let (s, b) = call(
        addr,
        "PUT",
        "/_stampede/scenario",
        &json,
        r#"{"scopes":[],"credentials":[]}"#,
    )
    .await;
    assert_eq!(s, 400, "{b}");
    // Still the original provider.
    let (s, _) = call(
        addr,
        "GET",
        "/v1/items/1",
        &format!("Host: {addr}\r\nAuthorization: Bearer sk-a-test-key-0123\r\n"),
        "",
    )
    .await;
    assert_eq!(s, 200);
    let body = format!("[provider]\ntime_scale = 10000\n{scoped}");
    let (s, b) = call(addr, "PUT", "/_stampede/scenario", &toml, &body).await;
    assert_eq!(s, 200, "{b}");
}
