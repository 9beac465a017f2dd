//! `stampede serve` as a process, against clients that misbehave: one that closes before its
//! answer is written must cost that connection only, never the server (it used to die of
//! SIGPIPE, status 141).

#![cfg(unix)]

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::process::{Child, Command, Stdio};
use std::time::Duration;

/// A `stampede serve` process on an ephemeral loopback port, killed when dropped.
struct Served {
    child: Child,
    addr: SocketAddr,
}

impl Drop for Served {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn serve(extra: &[&str]) -> Served {
    let mut child = Command::new(env!("CARGO_BIN_EXE_stampede"))
        .args(["serve", "--addr", "127.0.0.1:0"])
        .args(extra)
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .expect("stampede serve starts");
    let mut lines = BufReader::new(child.stdout.take().expect("stdout"));
    let mut first = String::new();
    lines
        .read_line(&mut first)
        .expect("serve prints its address");
    let addr = first
        .trim()
        .rsplit("http://")
        .next()
        .and_then(|a| a.parse().ok())
        .unwrap_or_else(|| panic!("no address in {first:?}"));
    // Keep draining stdout so the banner never blocks the server.
    std::thread::spawn(move || {
        let mut sink = Vec::new();
        let _ = lines.read_to_end(&mut sink);
    });
    Served { child, addr }
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
    let mut served = serve(&[]);
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
