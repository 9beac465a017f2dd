//! `GET /_stampede/journal` in pages (`after_seq`, `limit`), and unchanged without them.

use stampede_provider::config::{
    CredentialConfig, DurationMs, LatencyConfig, ProviderConfig, ScopeLimits,
};
use stampede_provider::spawn_ephemeral;

fn config() -> ProviderConfig {
    ProviderConfig {
        latency: LatencyConfig::fixed_ms(0),
        tool_latency: LatencyConfig::fixed_ms(0),
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

async fn page(client: &reqwest::Client, base: &str, query: &str) -> (Vec<u64>, Option<String>) {
    let resp = client
        .get(format!("{base}/_stampede/journal{query}"))
        .send()
        .await
        .unwrap();
    assert_eq!(resp.status(), 200, "{query}");
    let more = resp
        .headers()
        .get("x-stampede-journal-more")
        .map(|v| v.to_str().unwrap().to_string());
    let text = resp.text().await.unwrap();
    let seqs = text
        .lines()
        .map(|l| {
            serde_json::from_str::<serde_json::Value>(l).unwrap()["seq"]
                .as_u64()
                .unwrap()
        })
        .collect();
    (seqs, more)
}

#[tokio::test]
async fn the_journal_pages_by_after_seq_and_limit_and_streams_everything_without_them() {
    let (addr, _h) = spawn_ephemeral(config(), 1).await.unwrap();
    let base = format!("http://{addr}");
    let client = reqwest::Client::new();
    for i in 0..1_234 {
        let r = client
            .get(format!("{base}/v1/items/{i}"))
            .bearer_auth("sk-a-test-key")
            .send()
            .await
            .unwrap();
        assert_eq!(r.status(), 200);
    }
    // Everything, as before (more than one internal chunk).
    let (all, more) = page(&client, &base, "").await;
    assert_eq!(all, (1..=1_234).collect::<Vec<_>>());
    assert_eq!(more, None);
    let (tail, _) = page(&client, &base, "?since=1200").await;
    assert_eq!(tail, (1_201..=1_234).collect::<Vec<_>>());
    // Pages of 500: 500, 500, 234, then nothing.
    let mut after = 0;
    let mut seen = Vec::new();
    let mut pages = Vec::new();
    loop {
        let (seqs, more) = page(&client, &base, &format!("?after_seq={after}&limit=500")).await;
        pages.push((seqs.len(), more.clone()));
        if seqs.is_empty() {
            break;
        }
        after = *seqs.last().unwrap();
        seen.extend(seqs);
    }
    assert_eq!(seen, all);
    assert_eq!(
        pages,
        vec![
            (500, Some("true".into())),
            (500, Some("true".into())),
            (234, Some("false".into())),
            (0, Some("false".into())),
        ]
    );
    // The default page when only after_seq is given holds all 1,234 (under 10,000).
    let (first, more) = page(&client, &base, "?after_seq=0").await;
    assert_eq!(first.len(), 1_234);
    assert_eq!(more.as_deref(), Some("false"));
    let bad = client
        .get(format!("{base}/_stampede/journal?after_seq=x"))
        .send()
        .await
        .unwrap();
    assert_eq!(bad.status(), 400);
}
