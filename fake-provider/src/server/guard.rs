//! Who may use the control plane (`/_stampede/*` and `/metrics`).
//!
//! - `Host` must name loopback (`localhost`, `127.x.x.x`, `::1`) or the bound address (any IP
//!   literal when bound to `0.0.0.0`/`::`): a DNS-rebound name never gets through.
//! - An `Origin` other than the server's own (`http://` + its `Host`) is refused, as is a
//!   `Sec-Fetch-Site` of `cross-site` or `same-site`: browsers cannot drive it from a page.
//! - A token is required whenever one is configured, and always when the server listens on
//!   a non-loopback address (without one configured, every control call is refused).
//!   Sent as `Authorization: Bearer TOKEN` or `x-stampede-control-token: TOKEN`.
//! - `POST`/`PUT` need `content-type: application/json` (or `application/toml` for a
//!   scenario): neither is a type a cross-origin form or `fetch` may send without a preflight.

use super::respond::json_response;
use super::App;
use crate::model::error_body;
use axum::body::Body;
use axum::extract::{Request, State};
use axum::http::{header, Method, Response};
use axum::middleware::Next;
use std::net::{IpAddr, SocketAddr};

fn refuse(status: u16, code: &str, message: &str) -> Response<Body> {
    json_response(
        status,
        &[],
        &error_body(message, "invalid_request_error", code),
    )
}

/// The host part of a `Host` value (`[::1]:80` -> `::1`, `localhost:8080` -> `localhost`).
fn host_part(host: &str) -> &str {
    if let Some(rest) = host.strip_prefix('[') {
        return rest.split(']').next().unwrap_or("");
    }
    match host.rsplit_once(':') {
        Some((h, port)) if port.chars().all(|c| c.is_ascii_digit()) => h,
        _ => host,
    }
}

/// Whether `Host` names this server without going through a name an attacker controls.
pub(crate) fn host_allowed(host: &str, bound: SocketAddr) -> bool {
    let name = host_part(host.trim()).to_ascii_lowercase();
    if name == "localhost" || name.ends_with(".localhost") {
        return true;
    }
    match name.parse::<IpAddr>() {
        Ok(ip) => ip.is_loopback() || ip == bound.ip() || bound.ip().is_unspecified(),
        Err(_) => false,
    }
}

/// Whether a control token must be presented.
pub(crate) fn token_required(bound: SocketAddr, token: Option<&str>) -> bool {
    token.is_some() || !bound.ip().is_loopback()
}

/// Compares in time independent of where the strings differ.
fn same_secret(a: &[u8], b: &[u8]) -> bool {
    if a.len() != b.len() {
        return false;
    }
    a.iter().zip(b).fold(0u8, |acc, (x, y)| acc | (x ^ y)) == 0
}

/// The middleware in front of `/_stampede/*`.
pub(crate) async fn control_guard(
    State(app): State<App>,
    req: Request,
    next: Next,
) -> Response<Body> {
    let headers = req.headers();
    let text = |name: header::HeaderName| {
        headers
            .get(name)
            .and_then(|v| v.to_str().ok())
            .map(str::trim)
    };
    let Some(host) = text(header::HOST) else {
        return refuse(400, "host_required", "control routes need a Host header");
    };
    if !host_allowed(host, app.bound) {
        return refuse(
            403,
            "host_not_allowed",
            &format!(
                "control routes answer only to Host localhost, a loopback IP or {} (got {host:?})",
                app.bound.ip()
            ),
        );
    }
    if let Some(origin) = text(header::ORIGIN) {
        let own = format!("http://{host}");
        if !origin.eq_ignore_ascii_case(&own) {
            return refuse(
                403,
                "cross_origin",
                &format!("control routes refuse cross-origin requests (Origin {origin:?})"),
            );
        }
    }
    if let Some(site) = headers.get("sec-fetch-site").and_then(|v| v.to_str().ok()) {
        if site.eq_ignore_ascii_case("cross-site") || site.eq_ignore_ascii_case("same-site") {
            return refuse(
                403,
                "cross_origin",
                "control routes refuse cross-site browser requests",
            );
        }
    }
    let configured = app.options.control_token.as_deref();
    if token_required(app.bound, configured) {
        let Some(expected) = configured else {
            return refuse(
                403,
                "control_token_required",
                "this server listens on a non-loopback address without a control token: \
                 restart it with --control-token",
            );
        };
        let given = text(header::AUTHORIZATION)
            .and_then(|a| {
                a.strip_prefix("Bearer ")
                    .or_else(|| a.strip_prefix("bearer "))
            })
            .map(str::trim)
            .or_else(|| text(header::HeaderName::from_static("x-stampede-control-token")));
        if !given.is_some_and(|g| same_secret(g.as_bytes(), expected.as_bytes())) {
            return refuse(
                401,
                "control_token_invalid",
                "control routes need the server's control token \
                 (`Authorization: Bearer TOKEN` or `x-stampede-control-token: TOKEN`)",
            );
        }
    }
    if matches!(
        *req.method(),
        Method::POST | Method::PUT | Method::DELETE | Method::PATCH
    ) {
        let media = text(header::CONTENT_TYPE)
            .and_then(|c| c.split(';').next())
            .map(|m| m.trim().to_ascii_lowercase());
        if !matches!(
            media.as_deref(),
            Some("application/json") | Some("application/toml")
        ) {
            return refuse(
                415,
                "unsupported_media_type",
                "control changes need `content-type: application/json` (or application/toml \
                 for a scenario file), so a cross-origin form cannot make them",
            );
        }
    }
    next.run(req).await
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hosts() {
        let lo: SocketAddr = "127.0.0.1:8080".parse().unwrap();
        let any: SocketAddr = "0.0.0.0:8080".parse().unwrap();
        let lan: SocketAddr = "10.0.0.5:8080".parse().unwrap();
        assert!(host_allowed("127.0.0.1:8080", lo));
        assert!(host_allowed("localhost:8080", lo));
        assert!(host_allowed("[::1]:8080", lo));
        assert!(!host_allowed("evil.example:8080", lo));
        assert!(!host_allowed("10.0.0.5:8080", lo));
        assert!(host_allowed("10.0.0.5:8080", lan));
        assert!(host_allowed("192.168.1.9:8080", any));
        assert!(!host_allowed("rebind.example", any));
        assert!(token_required(lan, None));
        assert!(!token_required(lo, None));
        assert!(token_required(lo, Some("t")));
    }
}
