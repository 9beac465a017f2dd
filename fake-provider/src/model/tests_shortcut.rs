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
    /// Picks the client's own fields (tenant, class, action, claims, external reference),
    /// which an entry copies from its attempt whatever its kind.
    tag: u64,
}

fn step() -> impl Strategy<Value = Step> {
    (
        0u64..400,
        0usize..4,
        0u64..12,
        0u32..400,
        0u32..200,
        any::<bool>(),
        0u8..5,
        any::<u64>(),
    )
        .prop_map(
            |(gap, key, body, prompt, max, idempotency_key, route, tag)| Step {
                gap,
                key,
                body,
                prompt,
                max,
                idempotency_key,
                route,
                tag,
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
        3 => RequestRoute::GetItem {
            id: format!("item-{}", s.body),
        },
        _ => RequestRoute::GetRecord {
            id: format!("rec_{:06}", s.body),
        },
    };
    // Each field of its own bits of the tag, absent about a third of the time.
    let pick = |shift: u32| Some((s.tag >> shift) % 3).filter(|&v| v > 0);
    let name = |shift: u32| pick(shift).map(|v| Arc::<str>::from(format!("name-{v}")));
    Request {
        route,
        credential: Some(key.into()),
        prompt_tokens: s.prompt,
        max_tokens: s.max,
        body_hash: s.body,
        idempotency_key: s.idempotency_key.then(|| format!("key-{}", s.body).into()),
        tenant: name(0),
        class: name(4),
        action: pick(8),
        attempt_no: pick(12).map(|v| v as u32),
        sdk_retry_count: pick(16).map(|v| v as u32),
        workload_item: pick(20),
        external_ref: pick(24).map(|v| format!("order-{v}")),
        ..Request::default()
    }
}

/// Every journal entry not yet drained, read in place (as the simulator drains, so the
/// next entry is written over the slot just read).
fn drained(model: &mut ProviderModel) -> Vec<JournalEntry> {
    let mut read = Vec::new();
    let done: Result<(), ()> = model.drain_journal_with(|e| {
        read.push(e.clone());
        Ok(())
    });
    assert!(done.is_ok());
    read
}

/// How the journal is read in a storm: all at the end, after every attempt in place (each
/// entry written over the last, as the simulator reads it), or never, in a buffer of a few
/// entries that evicts the oldest.
#[derive(Debug, Clone, Copy)]
enum Drain {
    AtEnd,
    EachInPlace,
    Evicting(usize),
}

fn drain() -> impl Strategy<Value = Drain> {
    prop_oneof![
        Just(Drain::AtEnd),
        Just(Drain::EachInPlace),
        (1usize..4).prop_map(Drain::Evicting),
    ]
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(64))]

    #[test]
    fn the_refusal_shortcut_answers_and_journals_as_the_general_path(
        steps in proptest::collection::vec(step(), 1..300),
        rpm in 1u64..8,
        tpm in 100u64..2_000,
        count_rejected in any::<bool>(),
        drain in drain(),
        // Lean bodies, as a simulated run's, or whole ones, as the HTTP edge's: the
        // shortcut is built for each (`refuse_at_once::<LEAN>`).
        lean in any::<bool>(),
    ) {
        let c = config(rpm, tpm, count_rejected);
        let mut shortcut = ProviderModel::new(c.clone(), 42, EPOCH).unwrap();
        let mut general = ProviderModel::new(c, 42, EPOCH).unwrap();
        general.general_path_only = true;
        shortcut.set_lean_bodies(lean);
        general.set_lean_bodies(lean);
        if let Drain::Evicting(capacity) = drain {
            shortcut.set_journal_capacity(capacity);
            general.set_journal_capacity(capacity);
        }
        let mut now = 0;
        for (i, s) in steps.iter().enumerate() {
            now += s.gap;
            let req = request(s);
            let (a, b) = (shortcut.arrive(&req, now), general.arrive(&req, now));
            prop_assert_eq!(a, b, "attempt {}: {:?}", i, s);
            if let Drain::EachInPlace = drain {
                prop_assert_eq!(drained(&mut shortcut), drained(&mut general), "attempt {}", i);
            }
        }
        prop_assert_eq!(drained(&mut shortcut), drained(&mut general));
        prop_assert_eq!(
            serde_json::to_value(shortcut.stats()).unwrap(),
            serde_json::to_value(general.stats()).unwrap()
        );
    }
}

/// The shortcut counts its refusals under the 429's place among the usual outcomes.
#[test]
fn a_refusal_is_counted_as_a_429() {
    assert_eq!(usual_status(429), Some(REFUSED_OUTCOME));
}

/// What a known key says once of the shortcut (`KnownKey::plain`) is what the tests it
/// replaced said at every attempt: no fault rules, no listed models, no scope filtering a
/// model, and no scope but the key's own counting it.
#[test]
fn a_key_is_plain_as_the_config_tests_at_every_attempt_said() {
    use crate::config::{FaultRule, ModelConfig};
    let served = |name: &str| ModelConfig {
        name: name.into(),
        context_window: None,
        max_output_tokens: None,
        latency: None,
        price: None,
    };
    let fault = FaultRule {
        status: Some(503),
        ..FaultRule::default()
    };
    let mut filtered = config(5, 500, false);
    filtered.models = vec![served("m")];
    filtered.scopes[1].model = Some("m".into());
    let configs = [
        config(5, 500, false),
        ProviderConfig {
            faults: vec![fault],
            ..config(5, 500, false)
        },
        ProviderConfig {
            models: vec![served("m")],
            ..config(5, 500, false)
        },
        filtered,
    ];
    for c in configs {
        let m = ProviderModel::new(c, 42, EPOCH).unwrap();
        for (text, known) in &m.credentials {
            let per_attempt = m.faults.is_empty()
                && m.models.is_empty()
                && m.scope_models[known.scope].is_none()
                && m.counted_scopes(known.ordinal) == 1;
            assert_eq!(known.plain, per_attempt, "{text}");
            assert_eq!(&*known.scope_id, &*m.scope_ids[known.scope], "{text}");
            assert_eq!(
                refusal_kind_base(known.scope, known.ordinal),
                known.kind_base,
                "{text}"
            );
        }
    }
    // The plain config's own keys: its two single-scope keys are, the key counted on both
    // scopes is not.
    let m = ProviderModel::new(config(5, 500, false), 42, EPOCH).unwrap();
    let plain = |key: &str| m.credentials[key].plain;
    assert!(plain("sk-a-key-0001") && plain("sk-b-key-0001") && !plain("sk-ab-key-001"));
}
