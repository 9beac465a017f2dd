//! What a live run on a ledger records about itself (its scenario's name, seed, and a hash
//! of each table that decides what it sends and what it measures), so that a restart
//! resumes only the run its ledger belongs to. A ledger resumed under another scenario,
//! seed or configuration mixed the two runs: a report titled with one scenario counted
//! the other's actions, under a preset neither had alone.

use stampede_provider::model::Fnv;

use crate::scenario::Scenario;

/// The fact naming the provider journal a first life wrote to (its `journal_id`): not one
/// of [`of`]'s, since it is the provider's, recorded once the provider is up, and a restart
/// checks it against the provider it attaches to.
pub(super) const PROVIDER_JOURNAL: &str = "provider_journal";

/// The facts, by name: `scenario`, `seed`, then hashes of the `workload`, the `client`
/// (its table and the policy resolved from it) and the `provider` table. The scenario's
/// duration is left out (a restart may lengthen it to finish what is open), and so is the
/// time scale (a restart checks it against the provider's clock).
pub(super) fn of(scenario: &Scenario) -> Vec<(&'static str, String)> {
    let hash = |parts: &[String]| {
        let fnv = parts.iter().fold(Fnv::new(), |fnv, part| {
            fnv.bytes(part.as_bytes()).bytes(&[0])
        });
        format!("{:016x}", fnv.finish())
    };
    let mut provider = scenario.provider.clone();
    provider.time_scale = 1.0;
    vec![
        ("scenario", scenario.name.clone()),
        ("seed", scenario.seed.to_string()),
        ("workload", hash(&[json(&scenario.workloads)])),
        ("client", hash(&[client(scenario), json(&scenario.policy)])),
        ("provider", hash(&[json(&provider)])),
    ]
}

/// The client table's keys that the resolved policy and retry layers do not already say
/// (the command, replicas, claims, the retry layer under it, ...), as JSON. The preset,
/// workers, timeouts and `[client.policy]` overrides are left to the resolved policy, so
/// one setting written two ways (`30s` and `30000ms`, or a preset's own value set again)
/// is the same run.
fn client(scenario: &Scenario) -> String {
    let mut table = serde_json::to_value(&scenario.client).unwrap_or_default();
    if let serde_json::Value::Object(keys) = &mut table {
        for resolved in [
            "preset",
            "workers",
            "know_provider_limits",
            "policy",
            "timeout",
            "layers",
        ] {
            keys.remove(resolved);
        }
    }
    json(&(table, &scenario.sdk_layers))
}

/// What differs between the facts a ledger holds and this run's, said for people: empty
/// when they agree. A ledger that holds none (new, or written before runs recorded them)
/// agrees with every run.
pub(super) fn differences(stored: &[(String, String)], ours: &[(&str, String)]) -> Vec<String> {
    if stored.is_empty() {
        return Vec::new();
    }
    let mut out = Vec::new();
    for (fact, value) in ours {
        let theirs = stored
            .iter()
            .find(|(f, _)| f == fact)
            .map(|(_, v)| v.as_str());
        if theirs == Some(value.as_str()) {
            continue;
        }
        out.push(match *fact {
            "scenario" | "seed" => format!(
                "{fact} ({}; this run's: {value})",
                theirs.unwrap_or("not recorded")
            ),
            "workload" => "[[workload]] entries".to_string(),
            "client" => "[client] table or its policy (a preset, --set client.*)".to_string(),
            "provider" => "[provider] table (limits, faults, --set provider.*)".to_string(),
            other => other.to_string(),
        });
    }
    out
}

/// `value` as JSON text, for the hash. Only a map with keys that are not strings fails,
/// which no scenario table has; it would hash as empty, the same on both lives.
fn json<T: serde::Serialize>(value: &T) -> String {
    serde_json::to_string(value).unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn scenario(sets: &[&str]) -> Scenario {
        let sets: Vec<_> = sets
            .iter()
            .map(|s| crate::scenario::parse_override(s).unwrap())
            .collect();
        crate::scenario::parse(
            r#"
name = "facts"
seed = 3
duration = "10m"

[[provider.scopes]]
id = "s"
rpm = 60

[[provider.credentials]]
key = "sk-s-key-0123456789"
scope = "s"

[[workload]]
tenant = "t"
credential = "sk-s-key-0123456789"
count = 10
arrival = "backlog"
"#,
            "facts.toml",
            &sets,
        )
        .unwrap()
    }

    fn stored(facts: Vec<(&'static str, String)>) -> Vec<(String, String)> {
        facts.into_iter().map(|(f, v)| (f.to_string(), v)).collect()
    }

    #[test]
    fn the_same_scenario_agrees_even_with_a_longer_duration_or_another_time_scale() {
        let first = stored(of(&scenario(&[])));
        let again = of(&scenario(&["duration=1h", "provider.time_scale=10"]));
        assert!(differences(&first, &again).is_empty());
        assert!(
            differences(&[], &again).is_empty(),
            "an old ledger holds none"
        );
    }

    /// One setting written two ways is one run: the policy is compared as resolved.
    #[test]
    fn a_setting_written_another_way_is_the_same_run() {
        let first = stored(of(&scenario(&[
            "client.policy.classes.llm.max_wait=\"30s\"",
        ])));
        let again = of(&scenario(&[
            "client.policy.classes.llm.max_wait=\"30000ms\"",
        ]));
        assert!(differences(&first, &again).is_empty());
        let other = of(&scenario(&["client.policy.classes.llm.max_wait=\"31s\""]));
        assert!(!differences(&first, &other).is_empty());
    }

    #[test]
    fn another_seed_workload_client_or_provider_is_named() {
        let first = stored(of(&scenario(&[])));
        let cases = [
            ("seed=4", "seed (3; this run's: 4)"),
            ("workload.0.count=100", "[[workload]] entries"),
            ("client.preset=naive", "[client] table"),
            ("provider.scopes.0.rpm=600", "[provider] table"),
        ];
        for (set, named) in cases {
            let said = differences(&first, &of(&scenario(&[set]))).join("; ");
            assert!(said.contains(named), "{set}: {said}");
        }
    }
}
