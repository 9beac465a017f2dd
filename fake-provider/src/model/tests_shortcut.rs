//! The refusal shortcut (`ProviderModel::refused_at_once`, `refuse_at_once`) answers and
//! journals every attempt exactly as the general path (`decide`) does: it repeats that
//! path's work for the common case of a client storming a full scope, so a rule changed on
//! one path and not the other would show here first.

use super::*;
use crate::config::{CredentialConfig, ScopeLimits};
use proptest::prelude::*;

const EPOCH: u64 = 1_700_000_000_000;

/// Two scopes, tight enough that most of a storm is refused by one limit or another; a key
/// of each, and a third key counted against both (which the shortcut leaves to `decide`).
fn config(rpm: u64, tpm: u64, count_rejected: bool) -> ProviderConfig {
    let scope = |id: &str| ScopeLimits {
        rpm: Some(rpm),
        tpm: Some(tpm),
        count_rejected,
        ..ScopeLimits::unlimited(id)
    };
    let key = |key: &str, scope: &str, also: &[&str]| CredentialConfig {
        key: key.into(),
        scope: scope.into(),
        scopes: also.iter().map(|s| s.to_string()).collect(),
    };
    ProviderConfig {
        credentials: vec![
            key("sk-a-key-0001", "a", &[]),
            key("sk-b-key-0001", "b", &[]),
            key("sk-ab-key-001", "a", &["b"]),
        ],
        scopes: vec![scope("a"), scope("b")],
        ..ProviderConfig::default()
    }
}

/// One attempt of the storm: after `gap` ms, with key `key` (the last one unknown), a body
/// of logical request `body` (a retry sends its body again), on `route`.
#[derive(Debug, Clone)]
struct Step {
    gap: u64,
    key: usize,
    body: u64,
    prompt: u32,
    max: u32,
    idempotency_key: bool,
    route: u8,
}

fn step() -> impl Strategy<Value = Step> {
    (
        0u64..400,
        0usize..4,
        0u64..12,
        0u32..400,
        0u32..200,
        any::<bool>(),
        0u8..4,
    )
        .prop_map(
            |(gap, key, body, prompt, max, idempotency_key, route)| Step {
                gap,
                key,
                body,
                prompt,
                max,
                idempotency_key,
                route,
            },
        )
}

fn request(s: &Step) -> Request {
    let key = [
        "sk-a-key-0001",
        "sk-b-key-0001",
        "sk-ab-key-001",
        "sk-none-00001",
    ][s.key];
    let route = match s.route {
        0 => RequestRoute::ChatCompletions,
        1 => RequestRoute::Messages,
        2 => RequestRoute::CreateRecord,
        _ => RequestRoute::GetItem {
            id: format!("item-{}", s.body),
        },
    };
    Request {
        route,
        credential: Some(key.into()),
        prompt_tokens: s.prompt,
        max_tokens: s.max,
        body_hash: s.body,
        idempotency_key: s.idempotency_key.then(|| format!("key-{}", s.body).into()),
        ..Request::default()
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(64))]

    #[test]
    fn the_refusal_shortcut_answers_and_journals_as_the_general_path(
        steps in proptest::collection::vec(step(), 1..300),
        rpm in 1u64..8,
        tpm in 100u64..2_000,
        count_rejected in any::<bool>(),
    ) {
        let c = config(rpm, tpm, count_rejected);
        let mut shortcut = ProviderModel::new(c.clone(), 42, EPOCH).unwrap();
        let mut general = ProviderModel::new(c, 42, EPOCH).unwrap();
        general.general_path_only = true;
        let mut now = 0;
        for (i, s) in steps.iter().enumerate() {
            now += s.gap;
            let req = request(s);
            let (a, b) = (shortcut.arrive(&req, now), general.arrive(&req, now));
            prop_assert_eq!(a, b, "attempt {}: {:?}", i, s);
        }
        prop_assert_eq!(shortcut.drain_journal(), general.drain_journal());
        prop_assert_eq!(
            serde_json::to_value(shortcut.stats()).unwrap(),
            serde_json::to_value(general.stats()).unwrap()
        );
    }
}
