//! `[expect]`: limits on summary figures. A number is a maximum; `{ min, max }` is a range
//! (either bound may be left out). Keys are summary.json keys, dotted for nested figures
//! (`latency_ms.p99`, `status_counts.429`); TOML's own dotted keys and quoted keys both work.
//!
//! `abort = true` beside a `max` (`failed = { max = 10, abort = true }`, or `[expect.failed]`
//! with `max = 10` and `abort = true`) ends the run early, k6-style, as soon as the figure
//! passes its maximum: allowed only on figures that never fall while a run plays (counts
//! such as `failed`, `duplicates`, `outbound_attempts`; see [`monotone`]), so once over the
//! limit the expectation can no longer hold.

use std::collections::BTreeSet;

use stampede_reports::{Expectation, Summary};

/// One limit on one summary figure.
#[derive(Debug, Clone, PartialEq)]
pub struct ExpectSpec {
    /// Dotted summary key.
    pub key: String,
    /// Least value that passes (inclusive); `None`: no lower bound.
    pub min: Option<f64>,
    /// Greatest value that passes (inclusive); `None`: no upper bound.
    pub max: Option<f64>,
    /// `abort = true`: end the run as soon as the figure passes `max` (a figure that only
    /// grows while the run plays, so the expectation can no longer hold).
    pub abort: bool,
}

impl ExpectSpec {
    /// The limit as people read it: `<= 1.2`, `>= 10`, `10..=20`.
    pub fn limit_text(&self) -> String {
        match (self.min, self.max) {
            (Some(lo), Some(hi)) => format!("{}..={}", fmt_num(lo), fmt_num(hi)),
            (Some(lo), None) => format!(">= {}", fmt_num(lo)),
            (None, Some(hi)) => format!("<= {}", fmt_num(hi)),
            (None, None) => "any".to_string(),
        }
    }

    /// Whether a measured value passes.
    pub fn passes(&self, actual: f64) -> bool {
        self.min.map_or(true, |lo| actual >= lo) && self.max.map_or(true, |hi| actual <= hi)
    }

    /// Checks a measured value.
    pub fn check(&self, actual: f64) -> Expectation {
        let pass = self.passes(actual);
        Expectation {
            name: self.key.clone(),
            limit: self.limit_text(),
            actual,
            pass,
        }
    }
}

fn fmt_num(v: f64) -> String {
    if v.fract() == 0.0 && v.abs() < 1e15 {
        format!("{}", v as i64)
    } else {
        format!("{v}")
    }
}

/// Numeric keys of summary.json an expectation may name, dotted. Map-valued figures
/// (`status_counts`) accept any sub-key and are listed as `status_counts.<status>`.
pub fn summary_keys() -> (BTreeSet<String>, BTreeSet<String>) {
    let (mut leaves, mut maps) = numeric_keys(serde_json::to_value(Summary::default()));
    // Present only in `--client` runs, so absent from the default summary.
    leaves.insert("client_exit_code".to_string());
    // Real time, not a figure of the scenario: refused by name (see `walk`).
    leaves.remove("wall_ms");
    leaves.extend(OPTIONAL_FIGURES.iter().map(|k| k.to_string()));
    maps.extend(OPTIONAL_MAPS.iter().map(|k| k.to_string()));
    (leaves, maps)
}

/// The numbers of a serialized value, dotted one level deep (`latency_ms.p99`), and its
/// maps that are empty (which take any entry).
fn numeric_keys(
    value: Result<serde_json::Value, serde_json::Error>,
) -> (BTreeSet<String>, BTreeSet<String>) {
    let mut leaves = BTreeSet::new();
    let mut maps = BTreeSet::new();
    if let Ok(serde_json::Value::Object(top)) = value {
        for (k, v) in top {
            match v {
                serde_json::Value::Number(_) => {
                    leaves.insert(k);
                }
                serde_json::Value::Object(inner) if inner.is_empty() => {
                    maps.insert(k);
                }
                serde_json::Value::Object(inner) => {
                    for (ik, iv) in inner {
                        if iv.is_number() {
                            leaves.insert(format!("{k}.{ik}"));
                        }
                    }
                }
                _ => {}
            }
        }
    }
    (leaves, maps)
}

/// The figures one entry of a map of groups holds (`by_tenant.<name>.failed`): an
/// expectation naming any other could never be judged, and failed with "actual 0".
struct GroupFigures {
    /// What one entry is, for messages: `a tenant`.
    what: &'static str,
    /// Its figures, dotted (`failed`, `latency_ms.p99`).
    leaves: BTreeSet<String>,
    /// Its maps, which take any entry (`status_counts.<status>`).
    maps: BTreeSet<String>,
}

impl GroupFigures {
    /// The figures of an entry of `map`, when `map` holds groups.
    fn of(map: &str) -> Option<Self> {
        use stampede_reports::schema::{GroupOutcomes, ModelFigures, ProviderFigures};
        let (what, value) = match map {
            "by_tenant" => ("a tenant", serde_json::to_value(GroupOutcomes::default())),
            "by_class" => ("a class", serde_json::to_value(GroupOutcomes::default())),
            "by_route" => ("a route", serde_json::to_value(GroupOutcomes::default())),
            "by_priority" => ("a priority", serde_json::to_value(GroupOutcomes::default())),
            "by_provider" => (
                "a provider",
                serde_json::to_value(ProviderFigures::default()),
            ),
            "by_model" => ("a model", serde_json::to_value(ModelFigures::default())),
            _ => return None,
        };
        let (leaves, mut maps) = numeric_keys(value);
        if map == "by_provider" {
            // Left out of a provider's figures when it had no retries.
            maps.insert("retries_by_group".to_string());
        }
        Some(Self { what, leaves, maps })
    }

    /// Whether `figure` is one of an entry's figures.
    fn has(&self, figure: &str) -> bool {
        // A map's entry is one it can hold: `retries_by_group.<group>` names one of the
        // groups, as at the top level (any other always read 0, and so always passed).
        self.leaves.contains(figure)
            || figure
                .split_once('.')
                .is_some_and(|(m, e)| !e.is_empty() && self.maps.contains(m) && known_entry(m, e))
    }

    /// Whether `sub` (`<name>.<figure>`, a name may hold dots) names a figure of an entry.
    fn names_figure(&self, sub: &str) -> bool {
        sub.match_indices('.').any(|(i, _)| self.has(&sub[i + 1..]))
    }

    /// `Ok` if `sub` names a figure of an entry; `written` is the key as written.
    fn check(&self, sub: &str, written: &str) -> Result<(), (String, String)> {
        if self.names_figure(sub) {
            return Ok(());
        }
        let listed: Vec<String> = (self.leaves.iter().cloned())
            .chain(self.maps.iter().map(|m| format!("{m}.<key>")))
            .collect();
        let message = match sub.split_once('.') {
            None => format!(
                "`{written}` names no figure: an expectation on {} names one of its \
                 figures, `{written}.<figure>`: {}",
                self.what,
                listed.join(", ")
            ),
            Some((_, figure)) => format!(
                "`{figure}` is not a figure of {}, so it could never be judged; {} has: {}",
                self.what,
                self.what,
                listed.join(", ")
            ),
        };
        Err((format!("expect.{written}"), message))
    }
}

/// Figures summary.json leaves out when 0 (features a run may not use): an expectation on
/// one reads 0 when it is absent.
pub const OPTIONAL_FIGURES: [&str; 7] = [
    "billed_usd",
    // `--client` runs: reads of the model catalog.
    "catalog_reads",
    "cross_provider_duplicates",
    "duplicate_billed_usd",
    // `--client` runs: requests whose prompt names no item of the workload.
    "foreign_requests",
    "starvation_ms",
    "uncertain_usage",
];

/// Map-valued figures summary.json leaves out when empty; an entry that is absent reads 0
/// (`fallbacks.provider_5xx`, `rate_limit_hits.tpm`, `failures_by_reason.circuit_open`),
/// except under `by_provider` and `by_model`, whose names must exist in the run. (`queues`,
/// like `by_class`, holds tables, which an expectation cannot name yet.)
pub const OPTIONAL_MAPS: [&str; 11] = [
    "agent_runs",
    "by_model",
    "by_provider",
    "degraded",
    "failures_by_reason",
    "fallbacks",
    "improvised",
    "rate_limit_hits",
    "refusal_wait_ms",
    "rejected_by_reason",
    "retries_by_group",
];

/// The entries a map-valued figure can hold, for the maps whose entries the tool names: an
/// expectation naming any other (`failures_by_reason.deadline_exceeeded`) could only ever
/// read 0, and passed in silence. `failures_by_reason` also takes `wont_improve_<status>`.
pub fn fixed_entries(map: &str) -> Option<&'static [&'static str]> {
    Some(match map {
        "agent_runs" => &crate::measure::agents::FIGURES,
        "degraded" => &stampede_core::RungKind::LABELS,
        "failures_by_reason" => &[
            "attempts_exhausted",
            "cancelled",
            "circuit_open",
            "conflict",
            "deadline_exceeded",
            "deadline_passed",
            "degraded",
            "execution_budget_exhausted",
            "limit_below_request",
            "quota_exhausted",
            "reconciliation_unavailable",
            "scope_budget_exhausted",
            "scope_delayed_full",
            "stream_interrupted",
            "task_budget_exhausted",
            "wait_budget_exhausted",
        ],
        "fallbacks" => &stampede_core::FallbackWhen::LABELS,
        "improvised" => &["reorder", "filter", "nearby", "stopped"],
        "rate_limit_hits" => &crate::measure::billing::LIMITS,
        "refusal_wait_ms" => &["count", "p50", "p99", "max"],
        "rejected_by_reason" => &stampede_core::RejectionCause::LABELS,
        "retries_by_group" => &crate::measure::retry_groups::GROUPS,
        _ => return None,
    })
}

/// Whether `entry` can be in `map` (see [`fixed_entries`]); maps the tool does not name
/// the entries of take any.
fn known_entry(map: &str, entry: &str) -> bool {
    let wont_improve = |e: &str| {
        e.strip_prefix("wont_improve_")
            .is_some_and(|s| s.len() == 3 && s.bytes().all(|b| b.is_ascii_digit()))
    };
    match fixed_entries(map) {
        Some(entries) => {
            entries.contains(&entry) || (map == "failures_by_reason" && wont_improve(entry))
        }
        None => true,
    }
}

/// The names a scenario gives its groups, which `by_tenant`, `by_class`, `by_priority` and
/// `by_provider` expectations name: one naming a group the scenario does not have could
/// only read 0 (`tenants.acmee.failed`, a typo, passed `failed = 0` in silence).
#[derive(Debug, Default)]
pub struct Groups<'a> {
    /// The workload's tenants.
    pub tenants: BTreeSet<&'a str>,
    /// The workload's classes and the policy's.
    pub classes: BTreeSet<&'a str>,
    /// The providers of a scenario with several (`[providers.<name>]`); empty with one,
    /// whose figures are the summary's own.
    pub providers: BTreeSet<&'a str>,
}

impl Groups<'_> {
    /// Refuses an expectation that names a group the scenario does not have, or no figure a
    /// group has, naming the key as `expect` writes it (`tenants.<name>` or
    /// `by_tenant.<name>`): `specs` are [`parse_expect_as_written`]'s.
    pub fn check(&self, specs: &[(ExpectSpec, String)]) -> Result<(), (String, String)> {
        const PRIORITIES: [&str; 3] = ["critical", "normal", "bulk"];
        for (spec, written) in specs {
            let Some((map, rest)) = spec.key.split_once('.') else {
                continue;
            };
            // The group's name comes first, then its figure (`by_tenant.acme.latency_ms.p99`);
            // a name may hold dots (`acme.eu`), so the longest that is one comes first.
            // A group the name check below does not know the names of still names a figure.
            let figure_check = || match GroupFigures::of(map) {
                Some(group) => group.check(rest, written),
                None => Ok(()),
            };
            let Some((first, _)) = rest.split_once('.') else {
                figure_check()?;
                continue;
            };
            let (known, what): (Vec<&str>, &str) = match map {
                "by_tenant" => (
                    self.tenants.iter().copied().collect(),
                    "a tenant of the workload",
                ),
                "by_class" => (
                    self.classes.iter().copied().collect(),
                    "a class of the workload or the policy",
                ),
                "by_priority" => (PRIORITIES.to_vec(), "a priority"),
                "by_provider" => (
                    self.providers.iter().copied().collect(),
                    "a provider of [providers.<name>]",
                ),
                _ => {
                    figure_check()?;
                    continue;
                }
            };
            let named = |n: &&str| rest.strip_prefix(*n).is_some_and(|r| r.starts_with('.'));
            if known.iter().any(named) {
                figure_check()?;
                continue;
            }
            let name = first;
            let written_map = if map == "by_tenant" && written.starts_with("tenants.") {
                "tenants"
            } else {
                map
            };
            return Err((
                format!("expect.{written_map}.{name}"),
                format!(
                    "`{name}` is not {what}, so its figures would always read 0; the scenario \
                     has: {}",
                    if known.is_empty() {
                        "none (by_provider is for a scenario with several [providers.<name>])"
                            .to_string()
                    } else {
                        known.join(", ")
                    }
                ),
            ));
        }
        Ok(())
    }
}

/// Flattens the `[expect]` table into specs. Errors name the key as written and say what
/// is expected.
pub fn parse_expect(table: &toml::Table) -> Result<Vec<ExpectSpec>, (String, String)> {
    Ok(parse_expect_as_written(table)?
        .into_iter()
        .map(|(spec, _)| spec)
        .collect())
}

/// [`parse_expect`], each spec with its key as `[expect]` writes it: `tenants.<name>...`
/// is the spec `by_tenant.<name>...`, and a message about it names what the user wrote.
pub fn parse_expect_as_written(
    table: &toml::Table,
) -> Result<Vec<(ExpectSpec, String)>, (String, String)> {
    let (leaves, maps) = summary_keys();
    let mut out = Vec::new();
    walk(table, ("", ""), &leaves, &maps, &mut out)?;
    out.sort_by(|a, b| a.0.key.cmp(&b.0.key));
    Ok(out)
}

/// Walks `table` under `prefix`: the summary's key so far and the same key as written.
fn walk(
    table: &toml::Table,
    prefix: (&str, &str),
    leaves: &BTreeSet<String>,
    maps: &BTreeSet<String>,
    out: &mut Vec<(ExpectSpec, String)>,
) -> Result<(), (String, String)> {
    for (k, v) in table {
        let (key, written) = if prefix.0.is_empty() {
            // `tenants.<name>.<figure>`: per-tenant expectations, read from `by_tenant`.
            if k == "tenants" {
                ("by_tenant".to_string(), k.clone())
            } else {
                (k.clone(), k.clone())
            }
        } else {
            (format!("{}.{k}", prefix.0), format!("{}.{k}", prefix.1))
        };
        let in_map = maps
            .iter()
            .find_map(|m| key.strip_prefix(&format!("{m}.")).map(|sub| (m, sub)));
        if key == "wall_ms" {
            return Err((
                "expect.wall_ms".into(),
                "wall_ms is the real time the run took on this machine: it differs from run to \
                 run, so a limit on it would pass and fail the same scenario by chance; the \
                 Speed benchmarks measure it (README, Speed)"
                    .into(),
            ));
        }
        if let Some((map, sub)) = in_map {
            let entry = sub.split('.').next().unwrap_or(sub);
            if !known_entry(map, entry) {
                let entries = fixed_entries(map).unwrap_or_default();
                return Err((
                    format!("expect.{map}.{entry}"),
                    format!(
                        "`{entry}` is not an entry {map} can have, so the figure would always \
                         read 0; it takes: {}{}",
                        entries.join(", "),
                        if map == "failures_by_reason" {
                            ", wont_improve_<status> (wont_improve_422)"
                        } else {
                            ""
                        }
                    ),
                ));
            }
            if map == "status_counts" && !is_status_label(sub) {
                return Err((
                    format!("expect.{key}"),
                    format!(
                        "`{sub}` is not an answer the provider journals; status_counts takes an \
                         HTTP status (`429`, `503`, `200`, ...) or one of: {}",
                        OUTCOME_LABELS.join(", ")
                    ),
                ));
            }
        }
        // Inside a map, a table that is not a bound (`{ min, max, abort }`) holds figures
        // of one entry (`[expect.tenants.bulk]` with `failed = 0`).
        let entry_table = matches!(v, toml::Value::Table(t)
            if t.keys().any(|k| !matches!(k.as_str(), "min" | "max" | "abort")));
        let group = in_map.and_then(|(map, sub)| Some((GroupFigures::of(map)?, sub)));
        // A group's figure with a table: its bounds, one of them misspelt (`{ mix = 0 }`),
        // which parse_limit names; not an entry table holding figures `mix`.
        let bounds_of_figure = group.as_ref().is_some_and(|(g, sub)| g.names_figure(sub));
        if in_map.is_some() && entry_table && !bounds_of_figure {
            if let toml::Value::Table(inner) = v {
                walk(inner, (&key, &written), leaves, maps, out)?;
            }
            continue;
        }
        let is_leaf = leaves.contains(&key) || in_map.is_some();
        if is_leaf {
            // Checked and named as written; kept under the summary's key.
            let mut spec = parse_limit(&written, v)?;
            spec.key = key;
            out.push((spec, written));
            continue;
        }
        let is_parent =
            leaves.iter().any(|l| l.starts_with(&format!("{key}."))) || maps.contains(&key);
        match v {
            toml::Value::Table(inner) if is_parent => {
                walk(inner, (&key, &written), leaves, maps, out)?
            }
            _ => {
                let known: Vec<&str> = leaves.iter().map(String::as_str).collect();
                let extra: Vec<String> = maps.iter().map(|m| format!("{m}.<key>")).collect();
                return Err((
                    format!("expect.{written}"),
                    format!(
                        "`{written}` is not a summary.json figure; expectations can name: {}, {}",
                        known.join(", "),
                        extra.join(", ")
                    ),
                ));
            }
        }
    }
    Ok(())
}

/// The journal's outcome labels that are not HTTP statuses.
pub const OUTCOME_LABELS: [&str; 4] = ["dropped", "hang", "stream_cut", "stream_error"];

/// Whether `label` can appear in `status_counts`: a three-digit HTTP status or an outcome.
fn is_status_label(label: &str) -> bool {
    let status = label.len() == 3
        && label.bytes().all(|b| b.is_ascii_digit())
        && (b'1'..=b'5').contains(&label.as_bytes()[0]);
    status || OUTCOME_LABELS.contains(&label)
}

/// A bound's number; `nan` is none (no figure compares with it, so it could never pass).
fn as_number(v: &toml::Value) -> Option<f64> {
    match v {
        toml::Value::Integer(i) => Some(*i as f64),
        toml::Value::Float(f) if !f.is_nan() => Some(*f),
        _ => None,
    }
}

fn parse_limit(key: &str, v: &toml::Value) -> Result<ExpectSpec, (String, String)> {
    let hint = "write a number (a maximum) or { min = .., max = .. }";
    let nan = |at: String| {
        Err((
            at,
            format!("`{key}` has the limit nan, which no figure passes: {hint}"),
        ))
    };
    if matches!(v, toml::Value::Float(f) if f.is_nan()) {
        return nan(format!("expect.{key}"));
    }
    if let Some(max) = as_number(v) {
        let spec = ExpectSpec {
            key: key.to_string(),
            min: None,
            max: Some(max),
            abort: false,
        };
        return decides(spec, hint);
    }
    let toml::Value::Table(t) = v else {
        return Err((
            format!("expect.{key}"),
            format!("`{key}` has a {} limit: {hint}", v.type_str()),
        ));
    };
    let mut spec = ExpectSpec {
        key: key.to_string(),
        min: None,
        max: None,
        abort: false,
    };
    for (k, bound) in t {
        if k == "abort" {
            spec.abort = bound.as_bool().ok_or_else(|| {
                (
                    format!("expect.{key}.abort"),
                    format!(
                        "`{key}.abort` must be true or false (true: end the run as soon as \
                         `{key}` passes its max)"
                    ),
                )
            })?;
            continue;
        }
        // The name first: `abrt = true` is a misspelt key, not a bound that must be a number.
        if !matches!(k.as_str(), "min" | "max") {
            return Err((
                format!("expect.{key}.{k}"),
                format!(
                    "unknown bound `{k}` for `{key}`: {hint} (and abort = true to end the run \
                     early)"
                ),
            ));
        }
        if matches!(bound, toml::Value::Float(f) if f.is_nan()) {
            return nan(format!("expect.{key}.{k}"));
        }
        let n = as_number(bound).ok_or_else(|| {
            (
                format!("expect.{key}.{k}"),
                format!("`{key}.{k}` must be a number: {hint}"),
            )
        })?;
        if k == "min" {
            spec.min = Some(n);
        } else {
            spec.max = Some(n);
        }
    }
    if spec.min.is_none() && spec.max.is_none() {
        return Err((
            format!("expect.{key}"),
            format!("`{key}` has no bound: {hint}"),
        ));
    }
    let spec = decides(spec, hint)?;
    let key = spec.key.as_str();
    if let (Some(min), Some(max)) = (spec.min, spec.max) {
        if min > max {
            return Err((
                format!("expect.{key}"),
                format!(
                    "`{key}` has min {} above max {}: no figure can pass; swap them",
                    fmt_num(min),
                    fmt_num(max)
                ),
            ));
        }
    }
    if spec.abort {
        abortable(&spec)?;
    }
    Ok(spec)
}

/// `spec` if its bounds can both pass and fail some figure; refused, naming its key, if
/// not.
fn decides(spec: ExpectSpec, hint: &str) -> Result<ExpectSpec, (String, String)> {
    let key = spec.key.as_str();
    // Every figure but a client's exit code (-15: ended by SIGTERM) is a count, a time, a
    // rate or a share, never below 0: a bound no figure can fail, or none can pass, is a
    // mistake to name, not a check to run.
    let signed = key == "client_exit_code";
    if let Some(bad) = [spec.min, spec.max]
        .into_iter()
        .flatten()
        .find(|n| n.is_infinite())
    {
        return Err((
            format!("expect.{key}"),
            format!("`{key}` has the limit {bad}, which no figure reaches: {hint}"),
        ));
    }
    if !signed && spec.max.is_some_and(|max| max < 0.0) {
        return Err((
            format!("expect.{key}"),
            format!(
                "`{key}` has a max below 0, which no figure passes (figures are never \
                 negative): {hint}"
            ),
        ));
    }
    if !signed && spec.max.is_none() && spec.min.is_some_and(|min| min <= 0.0) {
        return Err((
            format!("expect.{key}"),
            format!(
                "`{key}` has only a min of 0 or less, which every figure passes (figures are \
                 never negative), so it checks nothing: give a min above 0, or a max"
            ),
        ));
    }
    Ok(spec)
}

/// `Ok` if `spec` (with `abort = true`) may end a run early: its figure only grows and it
/// has a max.
fn abortable(spec: &ExpectSpec) -> Result<(), (String, String)> {
    let key = spec.key.as_str();
    if monotone(key).is_none() {
        return Err((
            format!("expect.{key}.abort"),
            format!(
                "`{key}` can fall as well as rise while a run plays (or is known only at \
                 its end), so no moment proves it will end over its limit: abort = true \
                 works on figures that only grow: {}, status_counts.<status>; remove \
                 abort here",
                MONOTONE_KEYS.join(", ")
            ),
        ));
    }
    if spec.max.is_none() {
        return Err((
            format!("expect.{key}.abort"),
            format!(
                "abort = true needs a max: `{key}` only grows while the run plays, so only \
                 passing a maximum proves early that it fails (a minimum can still be \
                 reached until the end); write {{ max = .., abort = true }}"
            ),
        ));
    }
    Ok(())
}

/// Summary figures that never fall while a run plays: each counts events as they happen
/// (at the provider's edge or at a terminal outcome), so a value over a maximum at any
/// moment stays over it. What `abort = true` may name, with `status_counts.<status>`.
/// Figures known only at the end (`unfinished`, `crashes`, `retry_waves`), ratios and
/// percentiles are not here.
pub const MONOTONE_KEYS: [&str; 23] = [
    "blind_resends",
    "cancelled",
    "claim_mismatches",
    "completed",
    "deadline_misses",
    "duplicate_completions",
    "duplicate_tokens",
    "duplicate_writes",
    "duplicates",
    "escalations",
    "failed",
    "logical_requests",
    "outbound_attempts",
    "provider_logical_requests",
    "reconciliation_required",
    "reconciliations",
    "rejected",
    "retries",
    "retry_after_violations",
    "scope_wait_violations",
    "tokens_reserved",
    "tokens_used",
    "undelivered_tokens",
];

/// A figure a run can watch while it plays (see [`MONOTONE_KEYS`]).
#[derive(Debug, Clone)]
pub enum Monotone {
    /// A top-level count of the summary.
    Count(fn(&Summary) -> u64),
    /// `status_counts.<status>`.
    Status(String),
}

impl Monotone {
    /// Its value in a summary of the figures so far.
    pub fn read(&self, s: &Summary) -> u64 {
        match self {
            Monotone::Count(f) => f(s),
            Monotone::Status(label) => s.status_counts.get(label).copied().unwrap_or(0),
        }
    }
}

/// How to read `key` while the run plays, when it is a figure that only grows.
pub fn monotone(key: &str) -> Option<Monotone> {
    if let Some(label) = key.strip_prefix("status_counts.") {
        return Some(Monotone::Status(label.to_string()));
    }
    let read: fn(&Summary) -> u64 = match key {
        "blind_resends" => |s| s.blind_resends,
        "cancelled" => |s| s.cancelled,
        "claim_mismatches" => |s| s.claim_mismatches,
        "completed" => |s| s.completed,
        "deadline_misses" => |s| s.deadline_misses,
        "duplicate_completions" => |s| s.duplicate_completions,
        "duplicate_tokens" => |s| s.duplicate_tokens,
        "duplicate_writes" => |s| s.duplicate_writes,
        "duplicates" => |s| s.duplicates,
        "escalations" => |s| s.escalations,
        "failed" => |s| s.failed,
        "logical_requests" => |s| s.logical_requests,
        "outbound_attempts" => |s| s.outbound_attempts,
        "provider_logical_requests" => |s| s.provider_logical_requests,
        "reconciliation_required" => |s| s.reconciliation_required,
        "reconciliations" => |s| s.reconciliations,
        "rejected" => |s| s.rejected,
        "retries" => |s| s.retries,
        "retry_after_violations" => |s| s.retry_after_violations,
        "scope_wait_violations" => |s| s.scope_wait_violations,
        "tokens_reserved" => |s| s.tokens_reserved,
        "tokens_used" => |s| s.tokens_used,
        "undelivered_tokens" => |s| s.undelivered_tokens,
        _ => return None,
    };
    Some(Monotone::Count(read))
}

/// The value of a dotted key in a summary (`status_counts.<missing>` is 0, as is an
/// optional figure the run did not have: see [`OPTIONAL_FIGURES`], [`OPTIONAL_MAPS`]).
pub fn summary_value(summary: &Summary, key: &str) -> Option<f64> {
    value_at(&serde_json::to_value(summary).ok()?, key)
}

/// [`summary_value`] in a summary already serialized.
fn value_at(summary: &serde_json::Value, key: &str) -> Option<f64> {
    let mut cur = summary;
    let mut rest = key;
    while !rest.is_empty() {
        // A name may hold dots (a tenant `acme.eu`): the fewest parts that make a key here.
        let ends = rest.match_indices('.').map(|(i, _)| i).chain([rest.len()]);
        let step = ends
            .into_iter()
            .find_map(|end| cur.get(&rest[..end]).map(|next| (next, end)));
        match step {
            Some((next, end)) => {
                cur = next;
                rest = rest.get(end + 1..).unwrap_or("");
            }
            None => return zero_when_absent(key).then_some(0.0),
        }
    }
    cur.as_f64()
}

/// Whether a figure missing from a summary reads 0: a status never answered, and the
/// optional figures of features a run did not use.
fn zero_when_absent(key: &str) -> bool {
    let top = key.split('.').next().unwrap_or_default();
    key.starts_with("status_counts.")
        || OPTIONAL_FIGURES.contains(&key)
        || (OPTIONAL_MAPS.contains(&top) && top != "by_provider" && top != "by_model")
}

/// Checks every expectation against a summary.
pub fn evaluate(specs: &[ExpectSpec], summary: &Summary) -> Vec<Expectation> {
    // Serialized once for all: it was serialized again for every expectation.
    let value = serde_json::to_value(summary).unwrap_or_default();
    specs
        .iter()
        .map(|s| s.check(value_at(&value, &s.key).unwrap_or(f64::NAN)))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(text: &str) -> Result<Vec<ExpectSpec>, (String, String)> {
        parse_expect(&text.parse::<toml::Table>().unwrap())
    }

    #[test]
    fn numbers_are_maxima_and_tables_are_ranges() {
        let specs = parse("duplicates = 0\nlatency_ms.p99 = 5000\nretries = { min = 1, max = 9 }\nqueue_wait_ms = { max = 7 }")
            .unwrap();
        let keys: Vec<_> = specs
            .iter()
            .map(|s| (s.key.as_str(), s.min, s.max))
            .collect();
        assert!(keys.contains(&("duplicates", None, Some(0.0))));
        assert!(keys.contains(&("latency_ms.p99", None, Some(5000.0))));
        assert!(keys.contains(&("queue_wait_ms.max", None, Some(7.0))));
        assert!(keys.contains(&("retries", Some(1.0), Some(9.0))));
    }

    #[test]
    fn tenants_name_a_tenants_figures() {
        let specs =
            parse("tenants.support.completed = { min = 5 }\n[tenants.bulk]\nfailed = 0").unwrap();
        let keys: Vec<_> = specs.iter().map(|s| s.key.as_str()).collect();
        assert_eq!(
            keys,
            ["by_tenant.bulk.failed", "by_tenant.support.completed"]
        );
        let mut summary = Summary::default();
        summary.by_tenant.insert(
            "support".into(),
            stampede_reports::GroupOutcomes {
                completed: 7,
                ..Default::default()
            },
        );
        let verdict = evaluate(&specs[1..], &summary);
        assert!(verdict[0].pass && verdict[0].actual == 7.0);
    }

    #[test]
    fn unknown_expect_key_lists_the_valid_ones() {
        let (key, msg) = parse("dupes = 0").unwrap_err();
        assert_eq!(key, "expect.dupes");
        assert!(
            msg.contains("duplicates") && msg.contains("latency_ms.p99"),
            "{msg}"
        );
    }

    #[test]
    fn the_seeds_figures_can_be_expected() {
        let specs = parse(
            "failures_by_reason.circuit_open = 0\nrejected_by_reason.queue_full = 0\n\
             retries_by_group.never_arrived = 0\nbackoff_ms.p99 = 0\nbackoff_ms.total = 0\n\
             uncertain_usage = 0\nduplicates_suppressed = 0",
        )
        .unwrap();
        let verdict = evaluate(&specs, &Summary::default());
        let by_key: std::collections::BTreeMap<&str, bool> = specs
            .iter()
            .zip(&verdict)
            .map(|(s, v)| (s.key.as_str(), v.pass))
            .collect();
        // Absent causes read 0.
        assert!(by_key.values().all(|pass| *pass), "{by_key:?}");
        assert_eq!(by_key.len(), 7);
    }

    #[test]
    fn status_counts_accept_any_status_and_missing_is_zero() {
        let specs = parse("status_counts.429 = 10").unwrap();
        let verdict = evaluate(&specs, &Summary::default());
        assert!(verdict[0].pass);
        assert_eq!(verdict[0].actual, 0.0);
    }

    #[test]
    fn a_misspelt_status_is_refused_with_the_valid_ones() {
        let (key, msg) = parse("status_counts.dropepd = 0").unwrap_err();
        assert_eq!(key, "expect.status_counts.dropepd");
        assert!(msg.contains("dropped") && msg.contains("429"), "{msg}");
        assert!(parse("status_counts.dropped = 0\nstatus_counts.503 = 1").is_ok());
        assert!(parse("status_counts.4290 = 0").is_err());
    }

    #[test]
    fn a_failing_limit_reports_limit_and_actual() {
        let specs = parse("retries = 3").unwrap();
        let summary = Summary {
            retries: 5,
            ..Summary::default()
        };
        let verdict = evaluate(&specs, &summary);
        assert_eq!(
            (
                verdict[0].pass,
                verdict[0].limit.as_str(),
                verdict[0].actual
            ),
            (false, "<= 3", 5.0)
        );
    }

    /// Every entry the shipped scenarios' golden summaries hold in a map whose entries the
    /// tool names is one an expectation may name: the lists are the runs' own names.
    #[test]
    fn the_named_entries_cover_every_golden_summary() {
        let golden = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../tests/golden");
        let mut seen = 0;
        for file in std::fs::read_dir(&golden).unwrap() {
            let path = file.unwrap().path();
            let text = std::fs::read_to_string(&path).unwrap();
            let summary: serde_json::Value = serde_json::from_str(&text).unwrap();
            for map in OPTIONAL_MAPS.iter().filter(|m| fixed_entries(m).is_some()) {
                let Some(entries) = summary[map].as_object() else {
                    continue;
                };
                for entry in entries.keys() {
                    assert!(known_entry(map, entry), "{}: {map}.{entry}", path.display());
                    seen += 1;
                }
            }
        }
        assert!(seen > 50, "only {seen} entries seen");
    }

    #[test]
    fn a_misspelt_entry_and_wall_ms_are_refused() {
        for (text, key) in [
            (
                "\"failures_by_reason.deadline_exceeeded\" = 0",
                "expect.failures_by_reason.deadline_exceeeded",
            ),
            ("[agent_runs]\nrunz = 0", "expect.agent_runs.runz"),
            (
                "\"improvised.reorderr\" = { max = 1 }",
                "expect.improvised.reorderr",
            ),
            ("wall_ms = 100", "expect.wall_ms"),
        ] {
            let (at, message) = parse(text).unwrap_err();
            assert_eq!(at, key, "{message}");
        }
        for text in [
            "\"failures_by_reason.wont_improve_422\" = 0",
            "\"failures_by_reason.deadline_exceeded\" = 0",
            "\"rate_limit_hits.tpm\" = { min = 1 }",
            "\"refusal_wait_ms.p99\" = 100",
            "[tenants.anyone]\nfailed = 0",
        ] {
            parse(text).unwrap_or_else(|e| panic!("{text}: {e:?}"));
        }
    }

    /// Bounds that could never fail or never pass are refused, naming the key; a misspelt
    /// `abort` is an unknown bound, not a bound that must be a number.
    #[test]
    fn bounds_that_decide_nothing_are_refused() {
        for (text, says) in [
            ("failed = { max = 10, abrt = true }", "unknown bound `abrt`"),
            ("failed = { min = -inf }", "no figure reaches"),
            ("failed = -1", "max below 0"),
            ("completed = { min = 0 }", "checks nothing"),
        ] {
            let (_, message) = parse(text).unwrap_err();
            assert!(message.contains(says), "{text}: {message}");
        }
        for text in [
            "completed = { min = 1 }",
            "failed = 0",
            "client_exit_code = { min = -15, max = -15 }",
        ] {
            parse(text).unwrap_or_else(|e| panic!("{text}: {e:?}"));
        }
    }

    /// A provider's retries by group name the groups the top level names: any other entry
    /// would always read 0, and an expectation of it could never fail.
    #[test]
    fn a_providers_retry_groups_are_the_known_groups() {
        let provider = GroupFigures::of("by_provider").expect("a map of groups");
        assert!(provider.has("retries_by_group.never_arrived"));
        assert!(provider.has("retries_by_group.after_success"));
        assert!(!provider.has("retries_by_group.nevr_arrived"));
        assert!(provider.has("status_counts.429"), "any status");
        assert!(provider
            .check(
                "a.retries_by_group.typo",
                "by_provider.a.retries_by_group.typo"
            )
            .is_err());
    }
}
