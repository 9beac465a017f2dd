//! `stampede serve` as a process, against clients that misbehave: one that closes before its
//! answer is written must cost that connection only, never the server (it used to die of
//! SIGPIPE, status 141).

#![cfg(unix)]

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::process::{Child, Command, Stdio};
use std::sync::{Arc, Mutex};
use std::time::Duration;

/// A `stampede serve` process on an ephemeral port, killed when dropped.
struct Served {
    child: Child,
    /// Where to reach it (loopback, with the bound port).
    addr: SocketAddr,
    stdout: Arc<Mutex<String>>,
    stderr: Arc<Mutex<String>>,
}

impl Served {
    /// Waits (a few seconds at most) until stdout holds `what`, and returns stdout.
    fn stdout_with(&self, what: &str) -> String {
        for _ in 0..100 {
            let out = self.stdout.lock().unwrap().clone();
            if out.contains(what) {
                return out;
            }
            std::thread::sleep(Duration::from_millis(50));
        }
        panic!(
            "stdout never showed {what:?}: {}",
            self.stdout.lock().unwrap()
        );
    }
}

fn collect(mut from: impl Read + Send + 'static, into: Arc<Mutex<String>>) {
    std::thread::spawn(move || {
        let mut buf = [0u8; 1024];
        while let Ok(n) = from.read(&mut buf) {
            if n == 0 {
                break;
            }
            into.lock()
                .unwrap()
                .push_str(&String::from_utf8_lossy(&buf[..n]));
        }
    });
}

impl Drop for Served {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn serve(addr: &str, extra: &[&str]) -> Served {
    serve_with_env(addr, extra, &[])
}

fn serve_with_env(addr: &str, extra: &[&str], env: &[(&str, &str)]) -> Served {
    let mut child = Command::new(env!("CARGO_BIN_EXE_stampede"))
        .args(["serve", "--addr", addr])
        .args(extra)
        .env_remove("STAMPEDE_CONTROL_TOKEN")
        .envs(env.iter().copied())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("stampede serve starts");
    let mut lines = BufReader::new(child.stdout.take().expect("stdout"));
    let mut first = String::new();
    lines
        .read_line(&mut first)
        .expect("serve prints its address");
    let bound: SocketAddr = first
        .trim()
        .rsplit("http://")
        .next()
        .and_then(|a| a.parse().ok())
        .unwrap_or_else(|| panic!("no address in {first:?}"));
    let stdout = Arc::new(Mutex::new(first.clone()));
    let stderr = Arc::new(Mutex::new(String::new()));
    // Keep draining both so the banner never blocks the server.
    collect(lines, stdout.clone());
    collect(child.stderr.take().expect("stderr"), stderr.clone());
    Served {
        child,
        addr: SocketAddr::from(([127, 0, 0, 1], bound.port())),
        stdout,
        stderr,
    }
}

/// A raw request with `Connection: close`; the whole answer.
fn call(addr: SocketAddr, method: &str, path: &str, headers: &str, body: &str) -> String {
    let mut s = TcpStream::connect(addr).expect("connect");
    s.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
    write!(
        s,
        "{method} {path} HTTP/1.1\r\nHost: {addr}\r\n{headers}Content-Length: {}\r\nConnection: close\r\n\r\n{body}",
        body.len()
    )
    .unwrap();
    let mut out = String::new();
    let _ = s.read_to_string(&mut out);
    out
}

fn get_stats(addr: SocketAddr) -> String {
    let mut s = TcpStream::connect(addr).expect("connect");
    s.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
    write!(
        s,
        "GET /_stampede/stats HTTP/1.1\r\nHost: {addr}\r\nConnection: close\r\n\r\n"
    )
    .unwrap();
    let mut out = String::new();
    let _ = s.read_to_string(&mut out);
    out
}

#[test]
fn serve_survives_clients_that_close_before_the_answer() {
    let mut served = serve("127.0.0.1:0", &[]);
    let addr = served.addr;
    assert!(get_stats(addr).starts_with("HTTP/1.1 200"));
    for _ in 0..200 {
        let mut s = TcpStream::connect(addr).expect("connect");
        // A request, then junk the server answers with a 400, then gone: the server's
        // writes meet a reset socket.
        let _ = write!(
            s,
            "GET /_stampede/stats HTTP/1.1\r\nHost: {addr}\r\n\r\n\x01\x02junk junk\r\n\r\n"
        );
        drop(s);
    }
    std::thread::sleep(Duration::from_millis(200));
    assert!(
        served.child.try_wait().expect("try_wait").is_none(),
        "stampede serve died: {:?}",
        served.child.try_wait()
    );
    let answer = get_stats(addr);
    assert!(
        answer.starts_with("HTTP/1.1 200"),
        "serve no longer answers: {answer:?}"
    );
}

#[test]
fn a_non_loopback_serve_warns_and_its_control_plane_needs_the_printed_token() {
    let served = serve("0.0.0.0:0", &[]);
    let out = served.stdout_with("control token (generated");
    let token = out
        .lines()
        .find(|l| l.contains("control token (generated"))
        .and_then(|l| l.rsplit(' ').next())
        .expect("a token")
        .to_string();
    assert!(token.len() >= 32, "{token}");
    std::thread::sleep(Duration::from_millis(100));
    let err = served.stderr.lock().unwrap().clone();
    assert!(
        err.contains("WARNING") && err.contains("NOT a loopback"),
        "{err}"
    );
    let answer = call(served.addr, "GET", "/_stampede/stats", "", "");
    assert!(answer.starts_with("HTTP/1.1 401"), "{answer}");
    let answer = call(
        served.addr,
        "GET",
        "/_stampede/stats",
        &format!("Authorization: Bearer {token}\r\n"),
        "",
    );
    assert!(answer.starts_with("HTTP/1.1 200"), "{answer}");
}

#[test]
fn a_whole_scenario_uploaded_to_serve_is_checked_as_validate_checks_it() {
    let served = serve("127.0.0.1:0", &[]);
    let quickstart = std::fs::read_to_string(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/scenarios/quickstart.toml"
    ))
    .unwrap();
    let toml = "Content-Type: application/toml\r\n";
    let answer = call(served.addr, "PUT", "/_stampede/scenario", toml, &quickstart);
    assert!(answer.starts_with("HTTP/1.1 200"), "{answer}");
    let broken = format!("no_such_key = 1\n{quickstart}");
    let answer = call(served.addr, "PUT", "/_stampede/scenario", toml, &broken);
    assert!(answer.starts_with("HTTP/1.1 400"), "{answer}");
    assert!(answer.contains("no_such_key"), "{answer}");
}

/// A live run against a `serve` that requires a control token: refused without it, with a
/// message that names the flag; played with `--control-token`.
#[test]
fn a_live_run_brings_the_control_token_a_provider_requires() {
    let served = serve("127.0.0.1:0", &["--control-token", "t0ken-for-tests"]);
    let url = format!("http://{}", served.addr);
    let scenario = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/live/retry-after.toml");
    let dir = std::env::temp_dir().join(format!("stampede-token-{}", std::process::id()));
    let run = |extra: &[&str]| {
        Command::new(env!("CARGO_BIN_EXE_stampede"))
            .args(["run", scenario, "--live", "--provider", &url, "--out"])
            .arg(&dir)
            .args(extra)
            .env_remove("STAMPEDE_CONTROL_TOKEN")
            .output()
            .expect("stampede run")
    };
    let refused = run(&[]);
    assert_eq!(refused.status.code(), Some(2));
    let err = String::from_utf8_lossy(&refused.stderr);
    assert!(err.contains("control"), "{err}");
    let played = run(&["--control-token", "t0ken-for-tests"]);
    assert!(
        played.status.code().is_some_and(|c| c <= 1),
        "{}",
        String::from_utf8_lossy(&played.stderr)
    );
    assert!(dir.join("summary.json").exists());
    let _ = std::fs::remove_dir_all(&dir);
}

/// `serve` takes its control token from STAMPEDE_CONTROL_TOKEN, as `run` does, so it need not
/// be on the command line, where every user of the machine reads it in the process list.
#[test]
fn serve_takes_its_control_token_from_the_environment() {
    let served = serve_with_env(
        "127.0.0.1:0",
        &[],
        &[("STAMPEDE_CONTROL_TOKEN", "t0ken-from-env")],
    );
    let stats = |headers: &str| call(served.addr, "GET", "/_stampede/stats", headers, "");
    let refused = stats("");
    assert!(refused.starts_with("HTTP/1.1 401"), "{refused}");
    let answered = stats("Authorization: Bearer t0ken-from-env\r\n");
    assert!(answered.starts_with("HTTP/1.1 200"), "{answered}");
}
