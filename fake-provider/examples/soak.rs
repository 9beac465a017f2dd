//! A soak of the fake provider: full load from many keep-alive connections for MINUTES, the
//! server's resident memory printed every 30 s.
//!
//! ```text
//! cargo run --release -p stampede-provider --example soak -- MINUTES [CONNECTIONS] [--window DUR]
//! ```
//!
//! The server runs in a child process (this program re-executed with `__serve`), so only
//! its memory is measured (VmRSS from /proc/PID/status). Its provider is the default one
//! (journal ring, record retention and cap, identity window, connection bounds as shipped)
//! with zero latency, two scopes (one limited to 120,000 requests a minute, so it answers
//! 429s under load) and a few percent of faults: 503, 429, drops after commit, stream cuts
//! and stream errors. `--window DUR` sets both `provider.identity_window` and
//! `provider.record_retention` (default: theirs, 15m and 24h) so every bounded structure
//! fills within the warm-up.
//!
//! The mix, per connection: chat completions plain (30 %) and streamed (15 %), Anthropic
//! messages (5 %), embeddings (10 %), record writes with an idempotency key and an external
//! reference (25 %; one in ten re-sends an earlier key, one in twenty an earlier reference
//! with a new key), look-ups by key, reference and id (15 %). Every body is distinct.
//!
//! Each line: elapsed, answers so far, answers a second over the last 30 s, the server's
//! RSS in MiB, and what it holds (records, records evicted, journal ring). At the end:
//! min and max RSS after a 2-minute warm-up and their spread in %.

use stampede_provider::config::{
    ConnectionFault, CredentialConfig, DurationMs, FaultRule, LatencyConfig, ProviderConfig,
    RouteName, ScopeLimits,
};
use stampede_provider::server::{serve_listener, ServerOptions};
use std::io::{BufRead, BufReader};
use std::process::{Command, Stdio};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

const KEY_A: &str = "sk-soak-a-0001";
const KEY_B: &str = "sk-soak-b-0002";
const WARM_UP: Duration = Duration::from_secs(120);
const EVERY: Duration = Duration::from_secs(30);

fn config(window: Option<DurationMs>) -> ProviderConfig {
    let scope = |id: &str, rpm: Option<u64>| ScopeLimits {
        rpm,
        ..ScopeLimits::unlimited(id)
    };
    let fault = |f: &dyn Fn(&mut FaultRule)| {
        let mut r = FaultRule::default();
        f(&mut r);
        r
    };
    let mut c = ProviderConfig {
        latency: LatencyConfig::fixed_ms(0),
        tool_latency: LatencyConfig::fixed_ms(0),
        reject_latency: DurationMs(0),
        scopes: vec![scope("account:a", None), scope("account:b", Some(120_000))],
        credentials: vec![
            CredentialConfig {
                key: KEY_A.into(),
                scope: "account:a".into(),
                scopes: Vec::new(),
            },
            CredentialConfig {
                key: KEY_B.into(),
                scope: "account:b".into(),
                scopes: Vec::new(),
            },
        ],
        faults: vec![
            fault(&|r| {
                r.status = Some(503);
                r.probability = Some(0.01);
            }),
            fault(&|r| {
                r.status = Some(429);
                r.probability = Some(0.01);
            }),
            fault(&|r| {
                r.fault = Some(ConnectionFault::DropAfterCommit);
                r.route = Some(RouteName::CreateRecord);
                r.probability = Some(0.005);
            }),
            fault(&|r| {
                r.fault = Some(ConnectionFault::StreamCut);
                r.route = Some(RouteName::ChatCompletions);
                r.probability = Some(0.02);
            }),
            fault(&|r| {
                r.fault = Some(ConnectionFault::StreamError);
                r.route = Some(RouteName::ChatCompletions);
                r.probability = Some(0.01);
            }),
        ],
        ..ProviderConfig::default()
    };
    if let Some(w) = window {
        c.identity_window = w;
        c.record_retention = w;
    }
    c
}

/// The child: serves until killed, after printing its address.
async fn serve_child(window: Option<DurationMs>) -> Result<(), Box<dyn std::error::Error>> {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
    println!("ADDR {}", listener.local_addr()?);
    serve_listener(
        config(window),
        ServerOptions::default(),
        listener,
        std::future::pending(),
    )
    .await?;
    Ok(())
}

fn rss_mib(pid: u32) -> Option<f64> {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
    let line = status.lines().find(|l| l.starts_with("VmRSS:"))?;
    let kib: f64 = line.split_whitespace().nth(1)?.parse().ok()?;
    Some(kib / 1024.0)
}

/// A small xorshift, seeded per connection.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }
    fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }
}

#[derive(Default)]
struct Counters {
    answered: AtomicU64,
    errors: AtomicU64,
    rate_limited: AtomicU64,
}

async fn connection(
    client: reqwest::Client,
    base: String,
    worker: u64,
    until: Instant,
    counters: Arc<Counters>,
) {
    let mut rng = Rng(0x9e37_79b9_7f4a_7c15 ^ (worker + 1).wrapping_mul(0x2545_f491_4f6c_dd1d));
    let key = if worker % 8 == 7 { KEY_B } else { KEY_A };
    let mut n = 0u64;
    let mut writes: Vec<(String, String)> = Vec::new();
    while Instant::now() < until {
        n += 1;
        let unique = format!("w{worker}-n{n}");
        let roll = rng.below(100);
        let req = if roll < 30 {
            client
                .post(format!("{base}/v1/chat/completions"))
                .json(&serde_json::json!({
                    "model": "m", "max_tokens": 16,
                    "messages": [{ "role": "user", "content": format!("question {unique}") }],
                }))
        } else if roll < 45 {
            client
                .post(format!("{base}/v1/chat/completions"))
                .json(&serde_json::json!({
                    "model": "m", "max_tokens": 16, "stream": true,
                    "stream_options": { "include_usage": true },
                    "messages": [{ "role": "user", "content": format!("stream {unique}") }],
                }))
        } else if roll < 50 {
            client
                .post(format!("{base}/v1/messages"))
                .header("x-api-key", key)
                .header("anthropic-version", "2023-06-01")
                .json(&serde_json::json!({
                    "model": "m", "max_tokens": 16,
                    "messages": [{ "role": "user", "content": format!("claude {unique}") }],
                }))
        } else if roll < 60 {
            client
                .post(format!("{base}/v1/embeddings"))
                .json(&serde_json::json!({ "model": "e", "input": format!("embed {unique}") }))
        } else if roll < 85 {
            let pick = rng.below(100);
            let (k, r) = match writes.len() {
                len if len > 0 && pick < 10 => writes[rng.below(len as u64) as usize].clone(),
                len if len > 0 && pick < 15 => {
                    let (_, r) = writes[rng.below(len as u64) as usize].clone();
                    (format!("k-{unique}"), r)
                }
                _ => (format!("k-{unique}"), format!("ord-{unique}")),
            };
            if writes.len() < 64 {
                writes.push((k.clone(), r.clone()));
            } else {
                let at = rng.below(64) as usize;
                writes[at] = (k.clone(), r.clone());
            }
            client
                .post(format!("{base}/v1/records"))
                .header("idempotency-key", &k)
                .json(&serde_json::json!({ "external_ref": r, "amount": 100 }))
        } else {
            let (k, r) = writes
                .get(rng.below(writes.len().max(1) as u64) as usize)
                .cloned()
                .unwrap_or_else(|| ("k-none".into(), "ord-none".into()));
            match rng.below(3) {
                0 => client.get(format!("{base}/v1/records?idempotency_key={k}")),
                1 => client.get(format!("{base}/v1/records?external_ref={r}")),
                _ => client.get(format!(
                    "{base}/v1/records/rec_{:06}",
                    1 + rng.below(n * 64)
                )),
            }
        };
        let req = req
            .bearer_auth(key)
            .header("x-stampede-tenant", format!("t{}", worker % 4));
        match req.send().await {
            Ok(resp) => {
                if resp.status() == 429 {
                    counters.rate_limited.fetch_add(1, Ordering::Relaxed);
                }
                match resp.bytes().await {
                    Ok(_) => counters.answered.fetch_add(1, Ordering::Relaxed),
                    Err(_) => counters.errors.fetch_add(1, Ordering::Relaxed),
                };
            }
            Err(_) => {
                counters.errors.fetch_add(1, Ordering::Relaxed);
            }
        }
    }
}

async fn server_stats(client: &reqwest::Client, base: &str) -> Option<serde_json::Value> {
    client
        .get(format!("{base}/_stampede/stats"))
        .send()
        .await
        .ok()?
        .json()
        .await
        .ok()
}

/// Kills the child when the load generator ends, however it ends.
struct Child(std::process::Child);

impl Drop for Child {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

fn usage() -> ! {
    eprintln!("usage: soak MINUTES [CONNECTIONS] [--window DUR]");
    std::process::exit(2);
}

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let window = match args.iter().position(|a| a == "--window") {
        Some(i) => Some(DurationMs::parse(
            args.get(i + 1).map_or("", String::as_str),
        )?),
        None => None,
    };
    if args.first().map(String::as_str) == Some("__serve") {
        return serve_child(window).await;
    }
    let positional: Vec<&String> = args
        .iter()
        .enumerate()
        .filter(|(i, a)| !(a.starts_with("--") || *i > 0 && args[i - 1] == "--window"))
        .map(|(_, a)| a)
        .collect();
    let minutes: f64 = positional
        .first()
        .and_then(|m| m.parse().ok())
        .unwrap_or_else(|| usage());
    let connections: u64 = positional.get(1).map_or(Ok(64), |c| c.parse())?;

    let mut cmd = Command::new(std::env::current_exe()?);
    cmd.arg("__serve");
    if let Some(w) = window {
        cmd.args(["--window", &w.to_string()]);
    }
    let mut child = cmd.stdout(Stdio::piped()).spawn()?;
    let pid = child.id();
    let stdout = child.stdout.take().ok_or("no child stdout")?;
    let child = Child(child);
    let mut line = String::new();
    BufReader::new(stdout).read_line(&mut line)?;
    let addr = line
        .trim()
        .strip_prefix("ADDR ")
        .ok_or_else(|| format!("child said {line:?}"))?
        .to_string();
    let base = format!("http://{addr}");
    let defaults = ProviderConfig::default();
    println!(
        "soak: {minutes} min, {connections} keep-alive connections, server pid {pid} on {base}; \
         identity_window {}, record_retention {}, record cap {}, journal ring {}",
        window.unwrap_or(defaults.identity_window),
        window.unwrap_or(defaults.record_retention),
        stampede_provider::model::DEFAULT_MAX_RECORDS,
        stampede_provider::server::DEFAULT_JOURNAL_RING,
    );

    let client = reqwest::Client::builder()
        .pool_max_idle_per_host(connections as usize + 4)
        .pool_idle_timeout(Duration::from_secs(30))
        .timeout(Duration::from_secs(10))
        .build()?;
    let counters = Arc::new(Counters::default());
    let start = Instant::now();
    let until = start + Duration::from_secs_f64(minutes * 60.0);
    let workers: Vec<_> = (0..connections)
        .map(|w| {
            tokio::spawn(connection(
                client.clone(),
                base.clone(),
                w,
                until,
                counters.clone(),
            ))
        })
        .collect();

    let mut samples: Vec<(Duration, f64)> = Vec::new();
    // When the record store first evicted (retention or cap): from then on every store
    // the server keeps is at its bound.
    let mut bounded_from: Option<Duration> = None;
    let mut last = (start, 0u64);
    let mut next = start + EVERY;
    let stats_client = reqwest::Client::new();
    loop {
        let now = Instant::now();
        if now >= until {
            break;
        }
        tokio::time::sleep((next.min(until)) - now).await;
        let t = Instant::now();
        let answered = counters.answered.load(Ordering::Relaxed);
        let rate = (answered - last.1) as f64 / (t - last.0).as_secs_f64();
        last = (t, answered);
        next += EVERY;
        let rss = rss_mib(pid).unwrap_or(f64::NAN);
        let elapsed = t - start;
        samples.push((elapsed, rss));
        let s = server_stats(&stats_client, &base).await.unwrap_or_default();
        if bounded_from.is_none() && s["records_evicted"].as_u64().is_some_and(|e| e > 0) {
            bounded_from = Some(elapsed);
        }
        println!(
            "{:>5.1} min  answers {:>10}  {:>7.0} req/s  RSS {:>7.1} MiB  records {:>8} evicted {:>9}  ring {:>6}  429s {:>8}  client errors {}",
            elapsed.as_secs_f64() / 60.0,
            answered,
            rate,
            rss,
            s["records"],
            s["records_evicted"],
            s["journal_ring_len"],
            counters.rate_limited.load(Ordering::Relaxed),
            counters.errors.load(Ordering::Relaxed),
        );
    }
    for w in workers {
        let _ = w.await;
    }
    let total = counters.answered.load(Ordering::Relaxed);
    let secs = start.elapsed().as_secs_f64();
    println!(
        "done: {total} answers in {:.1} min, {:.0} req/s on average, {} client errors (drops and cuts included)",
        secs / 60.0,
        total as f64 / secs,
        counters.errors.load(Ordering::Relaxed)
    );
    let spread = |from: Duration, what: &str| {
        let after: Vec<f64> = samples
            .iter()
            .filter(|(t, r)| *t >= from && r.is_finite())
            .map(|(_, r)| *r)
            .collect();
        if after.is_empty() {
            println!("no RSS sample {what}");
        } else {
            let min = after.iter().copied().fold(f64::INFINITY, f64::min);
            let max = after.iter().copied().fold(0.0, f64::max);
            println!(
                "RSS {what} ({} samples): min {min:.1} MiB, max {max:.1} MiB, spread {:.1} %",
                after.len(),
                (max - min) / min * 100.0
            );
        }
    };
    spread(WARM_UP, "after the 2-minute warm-up");
    match bounded_from {
        Some(t) => spread(
            t,
            &format!(
                "from {:.1} min, when the record store first evicted",
                t.as_secs_f64() / 60.0
            ),
        ),
        None => println!("the record store never evicted: it was still filling"),
    }
    drop(child);
    Ok(())
}
