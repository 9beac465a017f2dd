//! The issue-16 scenarios (`fallback.toml`, `models.toml`, `degradation.toml`): each passes
//! under the stampede preset, and the naive client shows the harm it exists to show (a
//! logical request billed at two providers, a per-model bucket hammered, an overload no
//! ladder absorbs), each figure read from the providers' journals.

use crate::common;

use stampede_reports::Summary;
use stampede_sim::run::{run_virtual, RunOptions};

fn summary(name: &str, set: Option<&str>) -> Summary {
    let scenario = common::shipped(name, set);
    run_virtual(&scenario, &RunOptions::default())
        .expect("run plays")
        .report
        .summary
}

fn failed_expectations(s: &Summary) -> Vec<String> {
    s.expectations
        .iter()
        .filter(|e| !e.pass)
        .map(|e| format!("{} = {} ({})", e.name, e.actual, e.limit))
        .collect()
}

#[test]
fn fallback_bills_once_under_stampede_and_twice_under_a_naive_fallback() {
    let s = summary("fallback", None);
    assert_eq!(failed_expectations(&s), Vec::<String>::new());
    // Three providers, each with its own figures; the outage moved calls to the second.
    let names: Vec<&str> = s.by_provider.keys().map(String::as_str).collect();
    assert_eq!(names, ["longctx", "primary", "secondary"]);
    let primary = &s.by_provider["primary"];
    assert!(primary.status_counts["503"] > 0 && primary.status_counts["dropped"] > 0);
    assert!(s.by_provider["secondary"].outbound_attempts > 0);
    // The drops were retried at the primary with their key and replayed, not re-billed.
    assert_eq!((s.duplicates, s.cross_provider_duplicates), (0, 0));
    assert_eq!(s.duplicate_billed_usd, 0.0);
    let moves: Vec<(&str, &str, &str)> = s
        .fallback_routes
        .iter()
        .map(|r| {
            (
                r.from_provider.as_str(),
                r.to_provider.as_str(),
                r.reason.as_str(),
            )
        })
        .collect();
    assert!(
        moves.contains(&("primary", "secondary", "provider_5xx")),
        "{moves:?}"
    );
    assert!(
        moves.contains(&("primary", "longctx", "context_length_needed")),
        "{moves:?}"
    );
    let per_provider: u64 = s.by_provider.values().map(|p| p.outbound_attempts).sum();
    assert_eq!(per_provider, s.outbound_attempts);

    let naive = summary("fallback", Some("client.preset=naive"));
    assert!(
        naive.cross_provider_duplicates > 0,
        "a naive fallback after a drop after commit bills at two providers"
    );
    assert_eq!(naive.duplicates, naive.cross_provider_duplicates);
    assert!(naive.duplicate_billed_usd > 0.0 && naive.billed_usd > s.billed_usd);
    assert!(
        naive
            .expectations
            .iter()
            .any(|e| e.name == "cross_provider_duplicates" && !e.pass),
        "the scenario's own expectation catches it"
    );
}

#[test]
fn models_are_limited_apart_and_long_prompts_move_to_a_long_context_model() {
    let s = summary("models", None);
    assert_eq!(failed_expectations(&s), Vec::<String>::new());
    let models: Vec<&str> = s.by_model.keys().map(String::as_str).collect();
    assert_eq!(models, ["large", "long", "small"]);
    assert_eq!(s.fallbacks.get("context_length_needed"), Some(&40));
    assert_eq!(s.by_model["long"].completions, 40);
    // Each model billed at its own price: the small model's tokens cost far less.
    let per_mtok =
        |m: &str| s.by_model[m].billed_usd * 1e6 / s.by_model[m].tokens_used.max(1) as f64;
    assert!(per_mtok("small") < per_mtok("large") / 5.0);

    let naive = summary("models", Some("client.preset=naive"));
    let tpm = naive.rate_limit_hits.get("tpm").copied().unwrap_or(0);
    assert!(
        tpm > 1_000,
        "naive hammers the large model's bucket: {tpm} refusals"
    );
    assert_eq!(tpm, naive.status_counts["429"], "every 429 names its limit");
    assert!(!failed_expectations(&naive).is_empty());
}

#[test]
fn the_degradation_ladder_absorbs_an_overload_under_stampede_only() {
    let s = summary("degradation", None);
    assert_eq!(failed_expectations(&s), Vec::<String>::new());
    for rung in ["trim_output", "smaller_model", "cached"] {
        assert!(s.degraded.get(rung).copied().unwrap_or(0) > 0, "{rung}");
    }
    // Cached answers send nothing: fewer attempts than requests.
    assert!(s.outbound_attempts < s.logical_requests);
    // The smaller model served what the smaller_model rung moved.
    assert!(s.by_model["small"].completions > 0);
    let naive = summary("degradation", Some("client.preset=naive"));
    assert!(naive.completed < s.completed);
    assert!(!failed_expectations(&naive).is_empty());
}

#[test]
fn several_providers_play_the_same_bytes_for_the_same_seed() {
    let a = serde_json::to_string(&summary("fallback", Some("client.preset=naive"))).unwrap();
    let b = serde_json::to_string(&summary("fallback", Some("client.preset=naive"))).unwrap();
    let strip = |s: &str| {
        let mut v: serde_json::Value = serde_json::from_str(s).unwrap();
        v.as_object_mut().unwrap().remove("wall_ms");
        v
    };
    assert_eq!(strip(&a), strip(&b));
}

#[test]
fn litellm_router_falls_back_its_own_way_across_providers() {
    let scenario = {
        let path = common::repo().join("scenarios/fallback.toml");
        let sets: Vec<_> = [
            "client.preset=litellm-router",
            "client.deployments=[\"sk-primary-support\"]",
            "client.fallbacks=[\"sk-secondary-support\"]",
        ]
        .iter()
        .map(|s| stampede_sim::scenario::parse_override(s).unwrap())
        .collect();
        stampede_sim::scenario::load(&path, None, &sets).unwrap()
    };
    let s = run_virtual(&scenario, &RunOptions::default())
        .unwrap()
        .report
        .summary;
    // The router sends no Idempotency-Key: its retries after a drop bill again at the
    // primary, and its fallback group takes calls to the secondary.
    assert!(s.by_provider["primary"].duplicates > 0);
    assert!(s.by_provider["secondary"].outbound_attempts > 0);
    assert!(s.duplicates > 0 && s.duplicate_billed_usd > 0.0);
}

/// An SDK preset plays the SDK's own retries and reads no `[client.policy]`: the run says
/// so (fallback.toml's routing plans, under openai-python, had been dropped without a
/// word), and says nothing when there is nothing it leaves unread.
#[test]
fn a_policy_an_sdk_preset_does_not_read_is_named() {
    let dir = tempfile::tempdir().expect("a temporary directory");
    let out_dir = dir.path().join("run");
    let run = |sets: &[&str]| {
        let mut args = vec![
            "run",
            "scenarios/quickstart.toml",
            "--no-render",
            "--quiet",
            "--out",
            common::a_str(&out_dir),
        ];
        for set in sets {
            args.extend(["--set", set]);
        }
        common::stampede(&args)
    };
    let noted = run(&[
        "client.preset=openai-python",
        "client.policy.default_scope.max_delayed_requests=3",
    ]);
    let stderr = common::text(&noted.stderr);
    assert!(
        stderr.contains("note: client.policy is not read under the SDK preset \"openai-python\""),
        "{stderr}"
    );
    // `check` names the file it says it of; a sweep says it once, not once a run.
    let sets = [
        "--set",
        "client.preset=openai-python",
        "--set",
        "client.policy.default_scope.max_delayed_requests=3",
    ];
    let mut args = vec![
        "check",
        "scenarios/quickstart.toml",
        "--no-write",
        "--no-render",
    ];
    args.extend(sets);
    let checked = common::text(&common::stampede(&args).stderr);
    assert!(
        checked.contains("scenarios/quickstart.toml: note: client.policy is not read"),
        "{checked}"
    );
    let sweep_dir = dir.path().join("sweep");
    let mut args = vec![
        "sweep",
        "scenarios/quickstart.toml",
        "--vary",
        "client.workers=4,8",
        "--seeds",
        "1",
        "--out",
        common::a_str(&sweep_dir),
    ];
    args.extend(sets);
    let swept = common::text(&common::stampede(&args).stderr);
    assert_eq!(
        swept.matches("note: client.policy is not read").count(),
        1,
        "{swept}"
    );
    for quiet in [
        run(&["client.preset=openai-python"]),
        run(&["client.policy.default_scope.max_delayed_requests=3"]),
    ] {
        assert!(
            !common::text(&quiet.stderr).contains("note:"),
            "{}",
            common::text(&quiet.stderr)
        );
    }
}
