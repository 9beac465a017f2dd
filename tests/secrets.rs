//! API keys are kept: masked in `serve`'s banner and in the `PUT /_stampede/scenario`
//! answer, and the SQLite ledger a live run writes holds a reference, never the key.

#![cfg(unix)]

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::Duration;

use crate::common;

const KEY: &str = "sk-acme-shared";

fn scenario() -> String {
    let p = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/live/reconcile.toml");
    p.to_str().unwrap().to_string()
}

#[test]
fn a_live_run_with_a_ledger_leaves_no_key_in_the_ledger_file() {
    let dir = tempfile::tempdir().unwrap();
    let ledger = dir.path().join("ledger.sqlite");
    let out = common::stampede(&[
        "run",
        &scenario(),
        "--live",
        "--time-scale",
        "60",
        "--ledger",
        common::a_str(&ledger),
        "--out",
        common::a_str(&dir.path().join("out")),
        "--no-render",
    ]);
    assert!(
        out.status.code().is_some_and(|c| c <= 1),
        "the run failed: {}",
        common::text(&out.stderr)
    );
    let mut bytes = std::fs::read(&ledger).expect("the ledger exists");
    for side in ["-wal", "-shm"] {
        if let Ok(b) = std::fs::read(format!("{}{side}", ledger.display())) {
            bytes.extend(b);
        }
    }
    assert!(bytes.len() > 1_000, "the ledger holds the run's actions");
    assert!(
        !bytes.windows(KEY.len()).any(|w| w == KEY.as_bytes()),
        "the full API key is in the ledger file"
    );
    assert!(bytes.windows(11).any(|w| w == b"credref:v1:"));
    use std::os::unix::fs::PermissionsExt;
    let mode = std::fs::metadata(&ledger).unwrap().permissions().mode() & 0o777;
    assert_eq!(mode, 0o600, "ledger mode {mode:o}");
}

#[test]
fn serve_masks_keys_in_its_banner_and_its_scenario_answer() {
    let mut child = Command::new(env!("CARGO_BIN_EXE_stampede"))
        .args(["serve", "--addr", "127.0.0.1:0", "--scenario", &scenario()])
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .expect("serve starts");
    let mut lines = BufReader::new(child.stdout.take().unwrap());
    let mut banner = String::new();
    let mut addr: Option<SocketAddr> = None;
    // The banner ends with the control line.
    for _ in 0..10 {
        let mut line = String::new();
        if lines.read_line(&mut line).unwrap_or(0) == 0 {
            break;
        }
        if addr.is_none() {
            addr = line
                .trim()
                .rsplit("http://")
                .next()
                .and_then(|a| a.parse().ok());
        }
        banner.push_str(&line);
        if line.contains("control:") {
            break;
        }
    }
    let addr = addr.expect("an address");
    assert!(banner.contains("sk-..."), "{banner}");
    assert!(!banner.contains(KEY), "{banner}");
    let body = std::fs::read_to_string(scenario()).unwrap();
    let mut s = TcpStream::connect(addr).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
    write!(
        s,
        "PUT /_stampede/scenario HTTP/1.1\r\nHost: {addr}\r\nContent-Type: application/toml\r\n\
         Content-Length: {}\r\nConnection: close\r\n\r\n{body}",
        body.len()
    )
    .unwrap();
    let mut answer = String::new();
    let _ = s.read_to_string(&mut answer);
    let _ = child.kill();
    let _ = child.wait();
    assert!(answer.starts_with("HTTP/1.1 200"), "{answer}");
    assert!(answer.contains("sk-..."), "{answer}");
    assert!(!answer.contains(KEY), "{answer}");
}
