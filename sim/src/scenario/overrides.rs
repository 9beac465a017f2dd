//! `--set KEY=VALUE`: override any scenario key by its dotted path before the file is
//! type-checked, so an override is checked exactly like the file.
//!
//! Values are TOML literals (`8`, `true`, `"x"`, `{ rate = "5/s" }`) with a fallback to a
//! plain string (`naive`). Array elements are addressed by index (`provider.scopes.0.rpm`).
//! Missing tables and keys are created, so `client.policy.backoff.base=1s` works on a file
//! that never mentions the policy; a created key the format does not know is then refused by
//! the type check, which lists the keys that exist there.

use toml::{Table, Value};

/// One parsed `--set` argument.
#[derive(Debug, Clone, PartialEq)]
pub struct Override {
    /// Dotted path, as given.
    pub path: String,
    /// The path's parts, as [`segments`] reads them (quotes removed): read once, here.
    pub parts: Vec<String>,
    /// The text after `=`, as given.
    pub raw: String,
    /// The text after `=` as a TOML literal, or as a plain string when it is not one.
    pub value: Value,
}

/// The value `raw` of setting `path` as an error, a sweep's lines, its CSV and its plots show
/// it, keys masked (`sk-...abcd`): every word of a setting that names credentials (its last
/// part `credential`, `key`, `deployments`, `fallbacks` or `primary`), and anywhere else
/// (a whole table, `client={deployments=[...]}`) every word that is one of the `known` keys
/// or starts `sk-`, word by word as [`stampede_secret::mask_words`] cuts them.
pub fn shown_value(path: &str, raw: &str, known: &[&str]) -> String {
    let last = path.rsplit('.').next().unwrap_or(path);
    let names_keys = matches!(
        last,
        "credential" | "key" | "deployments" | "fallbacks" | "primary"
    );
    stampede_secret::mask_words(raw, |word| {
        names_keys || word.starts_with("sk-") || known.contains(&word)
    })
}

/// Parses `KEY=VALUE`.
pub fn parse_override(arg: &str) -> Result<Override, String> {
    let (path, raw) = arg.split_once('=').ok_or_else(|| {
        format!("--set {arg:?}: expected KEY=VALUE, e.g. --set client.preset=naive")
    })?;
    let path = path.trim();
    let Some(parts) = segments(path) else {
        return Err(format!(
            "--set {arg:?}: the key {path:?} is not a dotted path like client.workers (quote a \
             part holding dots or colons as TOML does: client.policy.scopes.\"account:acme\".rpm)"
        ));
    };
    let value = format!("v = {raw}")
        .parse::<Table>()
        .ok()
        .and_then(|mut t| t.remove("v"));
    // A whole number TOML cannot hold would otherwise be taken as text, and refused as
    // "invalid type: string" where the key wants a number.
    let digits = raw.trim().trim_start_matches(['-', '+']).replace('_', "");
    if value.is_none() && !digits.is_empty() && digits.bytes().all(|b| b.is_ascii_digit()) {
        return Err(format!(
            "--set {path}={raw}: {} is past the whole numbers a scenario holds (TOML's, from {} to {})",
            raw.trim(),
            i64::MIN,
            i64::MAX
        ));
    }
    let value = value.unwrap_or_else(|| Value::String(raw.to_string()));
    Ok(Override {
        path: path.to_string(),
        parts,
        raw: raw.to_string(),
        value,
    })
}

/// Applies one override to a parsed scenario.
pub fn apply(root: &mut Table, ov: &Override) -> Result<(), String> {
    // A scenario of several providers names them under `providers.<name>`.
    if let (Some(rest), None, Some(Value::Table(providers))) = (
        ov.path.strip_prefix("provider."),
        root.get("provider"),
        root.get("providers"),
    ) {
        let names: Vec<&str> = providers.keys().map(String::as_str).collect();
        return Err(format!(
            "--set {}: this scenario has several providers ({}), each under providers.<name>: \
             write --set providers.{}.{rest}={}",
            ov.path,
            names.join(", "),
            names.first().copied().unwrap_or("NAME"),
            ov.raw
        ));
    }
    let segs: Vec<&str> = ov.parts.iter().map(String::as_str).collect();
    // Work on a copy so an error leaves `root` untouched.
    let mut whole = Value::Table(root.clone());
    set_in(&mut whole, (&segs, &segs), &ov.value, &ov.path)?;
    if let Value::Table(t) = whole {
        *root = t;
    }
    Ok(())
}

/// The parts of a dotted key as TOML reads one: bare parts split at dots, and a part in
/// double or single quotes taken whole (`scopes."account:acme".rpm`, a scope id holding a
/// dot or a colon), quotes removed. `None` for an empty part or an unclosed quote.
pub fn segments(path: &str) -> Option<Vec<String>> {
    let mut parts = Vec::new();
    let mut rest = path;
    loop {
        let (part, after) = match rest.chars().next() {
            Some(quote @ ('"' | '\'')) => {
                let end = rest[1..].find(quote)? + 1;
                (rest[1..end].to_string(), &rest[end + 1..])
            }
            _ => match rest.find('.') {
                Some(dot) => (rest[..dot].to_string(), &rest[dot..]),
                None => (rest.to_string(), ""),
            },
        };
        if part.is_empty() {
            return None;
        }
        parts.push(part);
        match after.strip_prefix('.') {
            Some(next) => rest = next,
            None if after.is_empty() => return Some(parts),
            None => return None,
        }
    }
}

/// Parts joined as a dotted key, a part holding a dot in double quotes (as it must be
/// written to be read back as one part).
fn dotted(parts: &[&str]) -> String {
    let quoted: Vec<String> = parts
        .iter()
        .map(|p| {
            if p.contains('.') {
                format!("\"{p}\"")
            } else {
                (*p).to_string()
            }
        })
        .collect();
    quoted.join(".")
}

/// Sets `value` at the parts `segs` left of the key's parts `all`, below `cur`.
fn set_in(
    cur: &mut Value,
    (segs, all): (&[&str], &[&str]),
    value: &Value,
    full: &str,
) -> Result<(), String> {
    let (seg, rest) = match segs.split_first() {
        Some(x) => x,
        None => return Ok(()),
    };
    // The paths down to `seg` and to the value that holds it, as errors name them.
    let depth = all.len() - rest.len();
    let here_owned = dotted(&all[..depth]);
    let here = here_owned.as_str();
    let parent = dotted(&all[..depth - 1]);
    match cur {
        Value::Table(t) => {
            if rest.is_empty() {
                t.insert((*seg).to_string(), value.clone());
                return Ok(());
            }
            // An index under a key the file does not write addresses an entry of a list that
            // does not exist: say so, rather than make a table whose key is a number. Under
            // `expect`, a number is a key (`status_counts.429`), and no list is there.
            let in_expect = full.starts_with("expect.");
            if !in_expect && !t.contains_key(*seg) && rest[0].parse::<usize>().is_ok() {
                return Err(format!(
                    "--set {full}: `{here}` is not in the file, so it has no entry {}; set a list's entries where the file writes the list",
                    rest[0]
                ));
            }
            let next = t
                .entry((*seg).to_string())
                .or_insert_with(|| Value::Table(Table::new()));
            set_in(next, (rest, all), value, full)
        }
        Value::Array(items) => {
            let idx: usize = seg.parse().map_err(|_| {
                format!(
                    "--set {full}: `{parent}` is a list of {} entries; address one by index, e.g. {parent}.0",
                    items.len()
                )
            })?;
            let len = items.len();
            let slot = items.get_mut(idx).ok_or_else(|| {
                let entries = match len {
                    0 => "no entries".to_string(),
                    1 => "1 entry, numbered 0".to_string(),
                    n => format!("{n} entries, numbered 0 to {}", n - 1),
                };
                format!("--set {full}: `{parent}` has {entries}; there is no entry {idx}")
            })?;
            if rest.is_empty() {
                *slot = value.clone();
                return Ok(());
            }
            set_in(slot, (rest, all), value, full)
        }
        other => Err(format!(
            "--set {full}: `{parent}` is a {} ({}), it has no key `{seg}`",
            other.type_str(),
            other
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn doc() -> Table {
        "name = \"x\"\n[client]\npreset = \"stampede\"\n[[provider.scopes]]\nid = \"a\"\nrpm = 600\n".parse().unwrap()
    }

    /// A setting's value as errors and sweeps show it: keys masked word by word, in a
    /// setting that names credentials and in a whole table alike, the rest as written.
    #[test]
    fn a_shown_value_masks_every_key_in_it() {
        let key = "sk-proj-ABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789abcd";
        let azure = "0123456789abcdef0123456789abcdef";
        let cases = [
            (
                "workload.0.credential",
                key.to_string(),
                "sk-...abcd".to_string(),
            ),
            (
                "client.deployments",
                format!("[\"{key}\", \"sk-a\"]"),
                "[\"sk-...abcd\", \"****\"]".to_string(),
            ),
            (
                "client",
                format!("{{preset=\"litellm-router\", deployments=[\"{key}\", \"{azure}\"]}}"),
                "{preset=\"litellm-router\", deployments=[\"sk-...abcd\", \"012...cdef\"]}"
                    .to_string(),
            ),
            ("client.workers", "32".to_string(), "32".to_string()),
        ];
        for (path, raw, shown) in cases {
            assert_eq!(shown_value(path, &raw, &[azure]), shown, "{path}");
        }
    }

    /// A part in quotes is one key, as in TOML: the README's
    /// `client.policy.scopes."account:acme".max_delayed_requests` had set a key named
    /// `"account:acme"`, quotes and all, which no scope has.
    #[test]
    fn a_quoted_part_is_one_key_as_in_toml() {
        let mut t = doc();
        for arg in [
            "client.policy.scopes.\"account:acme\".max_delayed_requests=3",
            "client.policy.scopes.'v1.2'.rpm=9",
            "client.policy.scopes.plain:id.reserve=0.5",
        ] {
            apply(&mut t, &parse_override(arg).unwrap()).unwrap();
        }
        let scopes = t["client"]["policy"]["scopes"].as_table().unwrap();
        let keys: Vec<&str> = scopes.keys().map(String::as_str).collect();
        assert_eq!(keys, ["account:acme", "plain:id", "v1.2"]);
        assert_eq!(
            scopes["account:acme"]["max_delayed_requests"].as_integer(),
            Some(3)
        );
        // An error names the value holding a quoted part by its whole key, quotes and all.
        t.insert("notes".into(), Value::Table(Table::new()));
        t["notes"]
            .as_table_mut()
            .unwrap()
            .insert("v1.2".into(), Value::String("x".into()));
        let err = apply(&mut t, &parse_override("notes.'v1.2'.rpm=9").unwrap()).unwrap_err();
        assert!(err.contains("`notes.\"v1.2\"` is a string"), "{err}");
        let err = apply(&mut t, &parse_override("notes.'v1.2'.0=9").unwrap()).unwrap_err();
        assert!(err.contains("`notes.\"v1.2\"` is a string"), "{err}");
        for bad in ["a..b", "a.\"b", "a.\"\".c", "a.\"b\"c", ".a"] {
            assert!(parse_override(&format!("{bad}=1")).is_err(), "{bad}");
        }
    }

    #[test]
    fn values_are_toml_literals_with_string_fallback() {
        let mut t = doc();
        apply(&mut t, &parse_override("client.preset=naive").unwrap()).unwrap();
        apply(&mut t, &parse_override("client.workers=8").unwrap()).unwrap();
        apply(
            &mut t,
            &parse_override("provider.scopes.0.rpm=1200").unwrap(),
        )
        .unwrap();
        assert_eq!(t["client"]["preset"].as_str(), Some("naive"));
        assert_eq!(t["client"]["workers"].as_integer(), Some(8));
        assert_eq!(t["provider"]["scopes"][0]["rpm"].as_integer(), Some(1200));
    }

    #[test]
    fn out_of_range_index_names_the_list_and_its_length() {
        let mut t = doc();
        let err = apply(&mut t, &parse_override("provider.scopes.3.rpm=1").unwrap()).unwrap_err();
        assert!(
            err.contains("provider.scopes") && err.contains("1 entry, numbered 0"),
            "{err}"
        );
        let err = apply(&mut t, &parse_override("name.first=1").unwrap()).unwrap_err();
        assert!(err.contains("`name` is a string"), "{err}");
        // A list the file does not write has no entries to set (a table keyed "0" was made).
        let err = apply(
            &mut t,
            &parse_override("client.layers.0.preset=naive").unwrap(),
        )
        .unwrap_err();
        assert!(
            err.contains("`client.layers` is not in the file, so it has no entry 0"),
            "{err}"
        );
        // Under `expect` a number is a key of a map (a status), set where the file has none.
        apply(
            &mut t,
            &parse_override("expect.status_counts.429=0").unwrap(),
        )
        .unwrap();
        assert_eq!(t["expect"]["status_counts"]["429"].as_integer(), Some(0));
    }

    #[test]
    fn a_whole_number_past_toml_is_refused_as_too_large_not_as_text() {
        let err = parse_override("seed=18446744073709551615").unwrap_err();
        assert!(
            err.contains("18446744073709551615 is past the whole numbers a scenario holds"),
            "{err}"
        );
        assert!(parse_override("seed=9223372036854775807").is_ok());
        // Text that is not a number stays text.
        assert_eq!(
            parse_override("client.preset=naive")
                .unwrap()
                .value
                .as_str(),
            Some("naive")
        );
    }

    #[test]
    fn a_bad_argument_says_how_to_write_one() {
        assert!(parse_override("client.preset")
            .unwrap_err()
            .contains("KEY=VALUE"));
        assert!(parse_override("client..x=1").is_err());
    }
}
