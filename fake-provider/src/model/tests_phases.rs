//! `[[provider.phases]]`: latency and limits that change over the run.

use super::*;
use crate::config::{
    CredentialConfig, DurationMs, LatencyConfig, Phase, ScopeLimits, ScopeOverride,
};

const EPOCH: u64 = 1_700_000_000_000;

fn scope(id: &str, f: impl FnOnce(&mut ScopeLimits)) -> ScopeLimits {
    let mut s = ScopeLimits::unlimited(id);
    f(&mut s);
    s
}

fn with_phases(scopes: Vec<ScopeLimits>, phases: Vec<Phase>) -> ProviderConfig {
    ProviderConfig {
        credentials: scopes
            .iter()
            .map(|s| CredentialConfig {
                key: format!("sk-{}-key1", s.id),
                scope: s.id.clone(),
                scopes: Vec::new(),
            })
            .collect(),
        scopes,
        phases,
        latency: LatencyConfig::fixed_ms(100),
        ..ProviderConfig::default()
    }
}

fn phase(from_ms: u64, until_ms: Option<u64>) -> Phase {
    Phase {
        from: DurationMs(from_ms),
        until: until_ms.map(DurationMs),
        latency: None,
        scopes: Vec::new(),
    }
}

fn cut(id: &str, f: impl FnOnce(&mut ScopeOverride)) -> ScopeOverride {
    let mut o = ScopeOverride {
        id: id.into(),
        rpm: None,
        tpm: None,
        rpd: None,
        tpd: None,
        concurrency: None,
    };
    f(&mut o);
    o
}

fn chat(scope: &str, body: u64) -> Request {
    Request {
        route: RequestRoute::ChatCompletions,
        credential: Some(format!("sk-{scope}-key1").into()),
        prompt_tokens: 100,
        max_tokens: 50,
        body_hash: body,
        ..Request::default()
    }
}

fn model(c: ProviderConfig) -> ProviderModel {
    ProviderModel::new(c, 42, EPOCH).unwrap()
}

fn header(d: &Decision, name: &str) -> Option<String> {
    d.answer.header(name)
}

#[test]
fn a_latency_spike_phase_changes_latencies_only_inside_its_window() {
    let mut spike = phase(60_000, Some(120_000));
    spike.latency = Some(LatencyConfig::fixed_ms(90_000));
    let mut m = model(with_phases(vec![scope("a", |_| {})], vec![spike]));
    let mut at = |t: u64, body: u64| m.arrive(&chat("a", body), t).latency_ms;
    assert_eq!(at(0, 1), 100);
    assert_eq!(at(59_999, 2), 100, "before `from`");
    assert_eq!(at(60_000, 3), 90_000, "`from` is inclusive");
    assert_eq!(at(119_999, 4), 90_000);
    assert_eq!(at(120_000, 5), 100, "`until` is exclusive");
}

#[test]
fn a_phase_latency_keeps_the_draw_order_of_the_other_completions() {
    // Lognormal latency outside the phase and inside it: each completion still takes
    // exactly one draw (two words of the latency stream for a lognormal), so the
    // completions after the spike get the same latencies as without the phase. (A fixed
    // latency takes no word and a uniform one may reject some, as a model's own latency
    // does today: only shapes of one kind keep the stream aligned word for word.)
    let lognormal = |median: u64, p99: u64| LatencyConfig {
        median: Some(DurationMs(median)),
        p99: Some(DurationMs(p99)),
        ..LatencyConfig::default()
    };
    let run = |phases: Vec<Phase>| {
        let mut c = with_phases(vec![scope("a", |_| {})], phases);
        c.latency = lognormal(200, 1_000);
        let mut m = model(c);
        (0..20u64)
            .map(|i| m.arrive(&chat("a", i), i * 1_000).latency_ms)
            .collect::<Vec<_>>()
    };
    let plain = run(Vec::new());
    let mut spike = phase(5_000, Some(10_000));
    spike.latency = Some(lognormal(60_000, 90_000));
    let spiked = run(vec![spike]);
    assert_eq!(plain[..5], spiked[..5]);
    assert!(spiked[5..10].iter().all(|l| *l > 10_000), "{spiked:?}");
    assert_eq!(plain[10..], spiked[10..]);
}

#[test]
fn a_phase_latency_replaces_a_models_own_latency() {
    let mut c = with_phases(vec![scope("a", |_| {})], Vec::new());
    c.models = vec![crate::config::ModelConfig {
        name: "m".into(),
        context_window: None,
        max_output_tokens: None,
        latency: Some(LatencyConfig::fixed_ms(7)),
        price: None,
    }];
    let mut spike = phase(1_000, None);
    spike.latency = Some(LatencyConfig::fixed_ms(5_000));
    c.phases = vec![spike];
    let mut m = model(c);
    assert_eq!(m.arrive(&chat("a", 1), 0).latency_ms, 7);
    assert_eq!(m.arrive(&chat("a", 2), 1_000).latency_ms, 5_000);
    assert_eq!(
        m.arrive(&chat("a", 3), 600_000).latency_ms,
        5_000,
        "no `until`: to the end"
    );
}

#[test]
fn an_rpm_cut_refuses_inside_its_window_and_not_after() {
    let mut quota_cut = phase(60_000, Some(120_000));
    quota_cut.scopes = vec![cut("a", |o| o.rpm = Some(2))];
    let mut m = model(with_phases(
        vec![scope("a", |s| s.rpm = Some(10))],
        vec![quota_cut],
    ));
    for i in 0..5 {
        assert_eq!(
            m.arrive(&chat("a", i), 1_000 + i).answer.status(),
            Some(200)
        );
    }
    for i in 0..2 {
        assert_eq!(
            m.arrive(&chat("a", 10 + i), 60_000 + i).answer.status(),
            Some(200)
        );
    }
    let d = m.arrive(&chat("a", 20), 61_000);
    assert_eq!(d.answer.status(), Some(429));
    assert_eq!(
        d.answer.retry_after_ms(),
        Some(59_000),
        "until the minute resets"
    );
    let j = m.drain_journal();
    assert_eq!(j.last().unwrap().limit.as_deref(), Some("rpm"));
    for i in 0..10 {
        assert_eq!(
            m.arrive(&chat("a", 30 + i), 120_000 + i).answer.status(),
            Some(200),
            "after the phase the scope's own 10 rpm is back"
        );
    }
    assert_eq!(m.arrive(&chat("a", 50), 120_500).answer.status(), Some(429));
}

#[test]
fn a_cut_mid_window_applies_to_what_the_window_already_counted() {
    let mut quota_cut = phase(30_000, None);
    quota_cut.scopes = vec![cut("a", |o| o.rpm = Some(3))];
    let mut m = model(with_phases(
        vec![scope("a", |s| s.rpm = Some(10))],
        vec![quota_cut],
    ));
    for i in 0..5 {
        assert_eq!(m.arrive(&chat("a", i), i).answer.status(), Some(200));
    }
    // 5 of the minute used, the limit now 3: refused until the minute resets.
    let d = m.arrive(&chat("a", 9), 30_000);
    assert_eq!(d.answer.status(), Some(429));
    assert_eq!(
        header(&d, "x-ratelimit-limit-requests").as_deref(),
        Some("3")
    );
    assert_eq!(
        header(&d, "x-ratelimit-remaining-requests").as_deref(),
        Some("0")
    );
    assert_eq!(m.arrive(&chat("a", 10), 60_000).answer.status(), Some(200));
}

#[test]
fn rate_limit_headers_show_the_limit_in_force() {
    let mut first = phase(10_000, Some(20_000));
    first.scopes = vec![cut("a", |o| {
        o.rpm = Some(50);
        o.tpm = Some(5_000);
    })];
    let mut later = phase(15_000, Some(20_000));
    later.scopes = vec![cut("a", |o| o.rpm = Some(20))];
    let mut m = model(with_phases(
        vec![scope("a", |s| {
            s.rpm = Some(100);
            s.tpm = Some(10_000);
        })],
        vec![first, later],
    ));
    let limits = |d: &Decision| {
        (
            header(d, "x-ratelimit-limit-requests").unwrap(),
            header(d, "x-ratelimit-limit-tokens").unwrap(),
        )
    };
    let d = m.arrive(&chat("a", 1), 0);
    assert_eq!(limits(&d), ("100".into(), "10000".into()));
    let d = m.arrive(&chat("a", 2), 10_000);
    assert_eq!(limits(&d), ("50".into(), "5000".into()));
    let d = m.arrive(&chat("a", 3), 15_000);
    assert_eq!(
        limits(&d),
        ("20".into(), "5000".into()),
        "the later phase wins for rpm, the earlier one still sets tpm"
    );
    assert_eq!(
        header(&d, "x-ratelimit-remaining-requests").as_deref(),
        Some("17")
    );
    let d = m.arrive(&chat("a", 4), 20_000);
    assert_eq!(
        limits(&d),
        ("100".into(), "10000".into()),
        "back after both"
    );
}

#[test]
fn a_phase_can_lower_concurrency_and_in_flight_attempts_finish() {
    let mut squeeze = phase(1_000, None);
    squeeze.scopes = vec![cut("a", |o| o.concurrency = Some(1))];
    let mut m = model(with_phases(
        vec![scope("a", |s| s.concurrency = Some(3))],
        vec![squeeze],
    ));
    let a = m.arrive(&chat("a", 1), 0);
    let b = m.arrive(&chat("a", 2), 0);
    assert_eq!(
        (a.answer.status(), b.answer.status()),
        (Some(200), Some(200))
    );
    assert_eq!(m.arrive(&chat("a", 3), 1_000).answer.status(), Some(429));
    m.depart(a.seq, 1_050);
    assert_eq!(
        m.arrive(&chat("a", 4), 1_060).answer.status(),
        Some(429),
        "one still in flight"
    );
    m.depart(b.seq, 1_070);
    assert_eq!(m.arrive(&chat("a", 5), 1_080).answer.status(), Some(200));
}

#[test]
fn a_phase_that_adds_a_limit_the_scope_has_not_got_takes_it_away_again() {
    let mut cap = phase(0, Some(60_000));
    cap.scopes = vec![cut("a", |o| o.rpm = Some(1))];
    let mut m = model(with_phases(vec![scope("a", |_| {})], vec![cap]));
    assert_eq!(m.arrive(&chat("a", 1), 0).answer.status(), Some(200));
    assert_eq!(m.arrive(&chat("a", 2), 1).answer.status(), Some(429));
    let d = m.arrive(&chat("a", 3), 60_000);
    assert_eq!(d.answer.status(), Some(200));
    assert_eq!(header(&d, "x-ratelimit-limit-requests"), None);
}

#[test]
fn reset_starts_again_from_the_configured_limits() {
    let mut cap = phase(0, Some(60_000));
    cap.scopes = vec![cut("a", |o| o.rpm = Some(1))];
    let mut m = model(with_phases(
        vec![scope("a", |s| s.rpm = Some(5))],
        vec![cap],
    ));
    assert_eq!(m.arrive(&chat("a", 1), 70_000).answer.status(), Some(200));
    m.reset();
    assert_eq!(m.arrive(&chat("a", 1), 0).answer.status(), Some(200));
    assert_eq!(m.arrive(&chat("a", 2), 1).answer.status(), Some(429));
}

#[test]
fn no_phases_serializes_no_phases_key_and_changes_nothing() {
    let c = with_phases(vec![scope("a", |s| s.rpm = Some(3))], Vec::new());
    let json = serde_json::to_string(&c).unwrap();
    assert!(!json.contains("phases"), "{json}");
    let toml_text = toml::to_string(&c).unwrap();
    assert!(!toml_text.contains("phases"), "{toml_text}");
    // A phase that is never active leaves every answer and journal entry as without it.
    let mut never = phase(10_000_000, None);
    never.scopes = vec![cut("a", |o| o.rpm = Some(1))];
    never.latency = Some(LatencyConfig::fixed_ms(1));
    let mut with = c.clone();
    with.phases = vec![never];
    let run = |c: ProviderConfig| {
        let mut m = model(c);
        let out: Vec<_> = (0..6u64)
            .map(|i| {
                let d = m.arrive(&chat("a", i), i * 7_000);
                (d.latency_ms, d.answer.status(), d.answer.headers())
            })
            .collect();
        (out, format!("{:?}", m.drain_journal()))
    };
    assert_eq!(run(c), run(with));
}
