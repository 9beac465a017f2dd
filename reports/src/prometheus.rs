//! `metrics.prom`: a run's figures in the Prometheus text exposition format (version 0.0.4),
//! with the metric names and labels of seed 003's list ("Observabilidad: las métricas que
//! realmente ayudan"), so a dashboard built for the live client reads a simulated run too.
//!
//! Every value comes from the summary; a label the summary cannot split by is the empty
//! string (Prometheus reads it as "not split"), never a guessed name:
//!
//! - `provider`: the `by_provider` key in a run with several providers, else `"provider"`
//!   (the scenario's one `[provider]`, as the case files name it); `""` for a figure the
//!   summary does not split by provider in a run with several (tokens reserved, rate-limit
//!   hits);
//! - `model`: the one model of `by_model` when every attempt named it, else `""`
//!   (`llm_tokens_used_total` is split by `by_model` where the summary has it);
//! - `task_type`: the request class; `priority`: `critical`, `normal`, `bulk`;
//! - `status`: as `status_counts` (`200`, `429`, `dropped`, ...); `error_type`: the failure
//!   group of `retries_by_group`; `limit_type`: as `rate_limit_hits`; `reason`: as
//!   `fallbacks`.
//!
//! Deterministic: families in a fixed order, series in `BTreeMap` order, labels in the
//! seed's order, integers printed as integers and seconds with exactly three decimals.

use std::collections::BTreeMap;
use std::fmt::Write as _;

use crate::schema::Summary;

/// The metric families `metrics.prom` holds, with their labels, in the order written.
pub const METRICS: [(&str, &[&str]); 10] = [
    ("llm_requests_total", &["provider", "model", "status"]),
    ("llm_tokens_reserved_total", &["provider", "model"]),
    ("llm_tokens_used_total", &["provider", "model"]),
    ("llm_retries_total", &["provider", "model", "error_type"]),
    ("llm_queue_depth", &["priority", "task_type"]),
    ("llm_queue_depth_peak", &["priority", "task_type"]),
    ("llm_queue_wait_seconds", &["priority", "task_type"]),
    (
        "llm_rate_limit_hits_total",
        &["provider", "model", "limit_type"],
    ),
    (
        "llm_fallbacks_total",
        &["from_provider", "to_provider", "reason"],
    ),
    ("llm_duplicate_suppressed_total", &["task_type"]),
];

/// The quantiles `llm_queue_wait_seconds` gives, with the summary's percentile they read.
const QUANTILES: [&str; 3] = ["0.5", "0.95", "0.99"];

/// One metric family: its series by label values (in the family's label order).
struct Family {
    name: &'static str,
    kind: &'static str,
    help: &'static str,
    labels: &'static [&'static str],
    series: BTreeMap<Vec<String>, String>,
}

impl Family {
    fn new(name: &'static str, kind: &'static str, help: &'static str) -> Self {
        let labels = METRICS
            .iter()
            .find(|(n, _)| *n == name)
            .map_or(&[][..], |(_, l)| *l);
        Family {
            name,
            kind,
            help,
            labels,
            series: BTreeMap::new(),
        }
    }

    /// Adds `value` to the series `values` (a counter split twice adds up).
    fn add(&mut self, values: &[&str], value: u64) {
        let key: Vec<String> = values.iter().map(|v| v.to_string()).collect();
        let slot = self.series.entry(key).or_insert_with(|| "0".to_string());
        let sum = slot.parse::<u64>().unwrap_or(0).saturating_add(value);
        *slot = sum.to_string();
    }

    fn write(&self, out: &mut String) {
        let _ = writeln!(out, "# HELP {} {}", self.name, escape_help(self.help));
        let _ = writeln!(out, "# TYPE {} {}", self.name, self.kind);
        for (values, value) in &self.series {
            sample(out, self.name, self.labels, values, &[], value);
        }
    }
}

/// One sample line: `name{label="value",...} value`.
fn sample(
    out: &mut String,
    name: &str,
    labels: &[&str],
    values: &[String],
    extra: &[(&str, &str)],
    value: &str,
) {
    out.push_str(name);
    let pairs = labels
        .iter()
        .copied()
        .zip(values.iter().map(String::as_str))
        .chain(extra.iter().copied());
    let mut first = true;
    for (label, v) in pairs {
        out.push(if first { '{' } else { ',' });
        first = false;
        let _ = write!(out, "{label}=\"{}\"", escape_label(v));
    }
    if !first {
        out.push('}');
    }
    let _ = writeln!(out, " {value}");
}

/// A label value as the exposition format wants it: `\`, `"` and line feeds escaped.
pub fn escape_label(v: &str) -> String {
    let mut out = String::with_capacity(v.len());
    for c in v.chars() {
        match c {
            '\\' => out.push_str("\\\\"),
            '"' => out.push_str("\\\""),
            '\n' => out.push_str("\\n"),
            c => out.push(c),
        }
    }
    out
}

/// HELP text: `\` and line feeds escaped.
fn escape_help(v: &str) -> String {
    v.replace('\\', "\\\\").replace('\n', "\\n")
}

/// Milliseconds as seconds with exactly three decimals (exact: no float).
fn seconds(ms: u64) -> String {
    format!("{}.{:03}", ms / 1000, ms % 1000)
}

/// The `model` label of figures the summary does not split by model: the one model every
/// attempt named, else `""`.
fn whole_run_model(s: &Summary) -> &str {
    match s.by_model.iter().next() {
        Some((name, m)) if s.by_model.len() == 1 && m.outbound_attempts == s.outbound_attempts => {
            name
        }
        _ => "",
    }
}

/// The `provider` label of figures the summary does not split by provider.
fn whole_run_provider(s: &Summary) -> &'static str {
    if s.by_provider.is_empty() {
        "provider"
    } else {
        ""
    }
}

/// `metrics.prom` of a run: seed 003's metrics from `summary` (see the module's notes).
pub fn render(s: &Summary) -> String {
    let model = whole_run_model(s);
    let mut families = Vec::new();

    let mut requests = Family::new(
        "llm_requests_total",
        "counter",
        "Attempts that reached the provider's edge, by the answer's status (from its journal).",
    );
    if s.by_provider.is_empty() {
        for (status, n) in &s.status_counts {
            requests.add(&["provider", model, status], *n);
        }
    } else {
        for (provider, f) in &s.by_provider {
            for (status, n) in &f.status_counts {
                requests.add(&[provider, model, status], *n);
            }
        }
    }
    families.push(requests);

    let mut reserved = Family::new(
        "llm_tokens_reserved_total",
        "counter",
        "Tokens the client reserved at each send (prompt plus maximum output).",
    );
    reserved.add(&[whole_run_provider(s), model], s.tokens_reserved);
    families.push(reserved);

    let mut used = Family::new(
        "llm_tokens_used_total",
        "counter",
        "Tokens of the completions the provider committed (from its journal).",
    );
    if !s.by_provider.is_empty() {
        for (provider, f) in &s.by_provider {
            used.add(&[provider, model], f.tokens_used);
        }
    } else if !s.by_model.is_empty() {
        let mut named = 0u64;
        for (name, m) in &s.by_model {
            used.add(&["provider", name], m.tokens_used);
            named = named.saturating_add(m.tokens_used);
        }
        let rest = s.tokens_used.saturating_sub(named);
        if rest > 0 {
            used.add(&["provider", ""], rest);
        }
    } else {
        used.add(&["provider", ""], s.tokens_used);
    }
    families.push(used);

    let mut retries = Family::new(
        "llm_retries_total",
        "counter",
        "Retries (attempts after the first of a logical request), by the failure group of the \
         previous attempt's answer.",
    );
    if s.by_provider.is_empty() {
        for (group, n) in &s.retries_by_group {
            retries.add(&["provider", model, group], *n);
        }
    } else {
        for (provider, f) in &s.by_provider {
            for (group, n) in &f.retries_by_group {
                retries.add(&[provider, model, group], *n);
            }
        }
    }
    families.push(retries);

    let mut depth = Family::new(
        "llm_queue_depth",
        "gauge",
        "Logical requests arrived and not yet sent (held at admission or queued in the \
         client) at the run's end.",
    );
    let mut peak = Family::new(
        "llm_queue_depth_peak",
        "gauge",
        "The most logical requests that waited unsent at once during the run.",
    );
    for (key, q) in &s.queues {
        let (priority, class) = key.split_once('/').unwrap_or((key, ""));
        depth.add(&[priority, class], q.depth_end);
        peak.add(&[priority, class], q.depth_peak);
    }
    families.push(depth);
    families.push(peak);

    let mut rate_limits = Family::new(
        "llm_rate_limit_hits_total",
        "counter",
        "Refusals by the limit that refused them (429s and quota refusals, from the provider's \
         journal).",
    );
    for (limit, n) in &s.rate_limit_hits {
        rate_limits.add(&[whole_run_provider(s), model, limit], *n);
    }

    let mut fallbacks = Family::new(
        "llm_fallbacks_total",
        "counter",
        "Logical requests the client moved to a fallback route, from which provider to which, \
         by the condition that moved them.",
    );
    for r in &s.fallback_routes {
        fallbacks.add(&[&r.from_provider, &r.to_provider, &r.reason], r.count);
    }

    let mut suppressed = Family::new(
        "llm_duplicate_suppressed_total",
        "counter",
        "Attempts the provider answered as an idempotent replay (same Idempotency-Key and \
         body): a duplicate suppressed.",
    );
    if s.by_class.is_empty() {
        suppressed.add(&[""], s.duplicates_suppressed);
    } else {
        for (class, g) in &s.by_class {
            suppressed.add(&[class], g.duplicates_suppressed);
        }
    }

    let mut out = String::new();
    for f in &families {
        f.write(&mut out);
    }
    queue_wait(&mut out, s);
    rate_limits.write(&mut out);
    fallbacks.write(&mut out);
    suppressed.write(&mut out);
    out
}

/// `llm_queue_wait_seconds`: a summary per queue, submit to first send.
fn queue_wait(out: &mut String, s: &Summary) {
    let name = "llm_queue_wait_seconds";
    let labels: &[&str] = &["priority", "task_type"];
    let _ = writeln!(
        out,
        "# HELP {name} Submit to first send of logical requests, by priority and class \
         (quantiles from an HdrHistogram, 3 significant digits)."
    );
    let _ = writeln!(out, "# TYPE {name} summary");
    for (key, q) in &s.queues {
        let (priority, class) = key.split_once('/').unwrap_or((key, ""));
        let values = [priority.to_string(), class.to_string()];
        let p = &q.wait_ms;
        for (quantile, ms) in QUANTILES.iter().zip([p.p50, p.p95, p.p99]) {
            sample(
                out,
                name,
                labels,
                &values,
                &[("quantile", quantile)],
                &seconds(ms),
            );
        }
        sample(
            out,
            &format!("{name}_sum"),
            labels,
            &values,
            &[],
            &seconds(q.wait_total_ms),
        );
        sample(
            out,
            &format!("{name}_count"),
            labels,
            &values,
            &[],
            &q.sent.to_string(),
        );
    }
}

/// One sample line of an exposition text, as [`parse`] read it.
#[derive(Debug, Clone, PartialEq)]
pub struct ParsedSample {
    /// The family its `# TYPE` line declared (`llm_queue_wait_seconds` for its `_sum`).
    pub family: String,
    /// The sample's own name (`llm_queue_wait_seconds_count`).
    pub name: String,
    /// Its labels, in the order written, values unescaped.
    pub labels: Vec<(String, String)>,
    /// The sample's value (seconds for a `_seconds` family's quantiles and `_sum`).
    pub value: f64,
}

fn valid_name(name: &str, colon: bool) -> bool {
    let mut chars = name.chars();
    chars
        .next()
        .is_some_and(|c| c.is_ascii_alphabetic() || c == '_' || (colon && c == ':'))
        && chars.all(|c| c.is_ascii_alphanumeric() || c == '_' || (colon && c == ':'))
}

/// Label names and values, in the order written.
type Labels = Vec<(String, String)>;

/// Reads `{a="x",b="y"}` at the start of `rest`: the labels and what follows them.
fn parse_labels(rest: &str) -> Result<(Labels, &str), String> {
    let mut labels = Vec::new();
    let mut s = rest.strip_prefix('{').ok_or("no `{`")?;
    if let Some(after) = s.strip_prefix('}') {
        return Ok((labels, after));
    }
    loop {
        let eq = s.find("=\"").ok_or("a label without `=\"`")?;
        let name = &s[..eq];
        if !valid_name(name, false) {
            return Err(format!("bad label name {name:?}"));
        }
        let mut value = String::new();
        let mut chars = s[eq + 2..].char_indices();
        let end = loop {
            match chars.next() {
                Some((i, '"')) => break eq + 2 + i + 1,
                Some((_, '\\')) => match chars.next() {
                    Some((_, '\\')) => value.push('\\'),
                    Some((_, '"')) => value.push('"'),
                    Some((_, 'n')) => value.push('\n'),
                    other => return Err(format!("bad escape {other:?} in label {name}")),
                },
                Some((_, '\n')) | None => return Err(format!("label {name} not closed")),
                Some((_, c)) => value.push(c),
            }
        };
        if labels.iter().any(|(n, _)| n == name) {
            return Err(format!("label {name} twice"));
        }
        labels.push((name.to_string(), value));
        s = &s[end..];
        if let Some(after) = s.strip_prefix('}') {
            return Ok((labels, after));
        }
        s = s.strip_prefix(',').ok_or("labels not separated by `,`")?;
    }
}

/// Reads a text in the exposition format (0.0.4) and checks it is well formed: every line
/// a `# HELP`, a `# TYPE` right after its family's HELP, or a sample `name{labels} value`
/// of the family declared last; names and label names valid, label values escaped, counters
/// named `*_total` and not negative, a summary's samples its quantiles, `_sum` and
/// `_count`; no family declared twice, no series (name and labels) given twice.
pub fn parse(text: &str) -> Result<Vec<ParsedSample>, String> {
    let mut out = Vec::new();
    let mut declared: BTreeMap<String, String> = BTreeMap::new();
    let mut current: Option<(String, String)> = None;
    let mut help_for: Option<String> = None;
    let mut seen = std::collections::BTreeSet::new();
    if !text.is_empty() && !text.ends_with('\n') {
        return Err("the text does not end with a line feed".into());
    }
    for (n, line) in text.lines().enumerate() {
        let at = |m: String| format!("line {}: {m}: {line:?}", n + 1);
        if let Some(rest) = line.strip_prefix("# HELP ") {
            let name = rest.split(' ').next().unwrap_or_default();
            if !valid_name(name, true) || declared.contains_key(name) {
                return Err(at(format!(
                    "HELP of {name:?}: a bad name or declared twice"
                )));
            }
            help_for = Some(name.to_string());
            continue;
        }
        if let Some(rest) = line.strip_prefix("# TYPE ") {
            let (name, kind) = rest
                .split_once(' ')
                .ok_or_else(|| at("TYPE without a kind".into()))?;
            if help_for.as_deref() != Some(name) {
                return Err(at("TYPE not right after its HELP".into()));
            }
            if !["counter", "gauge", "summary", "histogram", "untyped"].contains(&kind) {
                return Err(at(format!("unknown type {kind}")));
            }
            if kind == "counter" && !name.ends_with("_total") {
                return Err(at("a counter not named *_total".into()));
            }
            declared.insert(name.to_string(), kind.to_string());
            current = Some((name.to_string(), kind.to_string()));
            help_for = None;
            continue;
        }
        if line.starts_with('#') || line.is_empty() {
            return Err(at("a comment or blank line".into()));
        }
        let (family, kind) = current
            .clone()
            .ok_or_else(|| at("a sample before any TYPE".into()))?;
        let name_end = line.find(['{', ' ']).ok_or_else(|| at("no value".into()))?;
        let name = &line[..name_end];
        let (labels, rest) = if line[name_end..].starts_with('{') {
            parse_labels(&line[name_end..]).map_err(at)?
        } else {
            (Vec::new(), &line[name_end..])
        };
        let value_text = rest
            .strip_prefix(' ')
            .ok_or_else(|| at("no space before the value".into()))?;
        let value: f64 = value_text
            .parse()
            .map_err(|_| at(format!("value {value_text:?} is not a number")))?;
        let belongs = name == family
            || (kind == "summary"
                && (name == format!("{family}_sum") || name == format!("{family}_count")));
        if !belongs {
            return Err(at(format!("sample of {name} under family {family}")));
        }
        if kind == "summary" && name == family && !labels.iter().any(|(l, _)| l == "quantile") {
            return Err(at("a summary sample without a quantile".into()));
        }
        if kind == "counter" && (value.is_nan() || value < 0.0) {
            return Err(at("a negative counter".into()));
        }
        let mut key: Vec<(String, String)> = labels.clone();
        key.sort();
        if !seen.insert((name.to_string(), key)) {
            return Err(at("a series given twice".into()));
        }
        out.push(ParsedSample {
            family,
            name: name.to_string(),
            labels,
            value,
        });
    }
    if let Some(name) = help_for {
        return Err(format!("HELP of {name} without its TYPE"));
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn label_values_are_escaped() {
        assert_eq!(escape_label(r#"a"b\c"#), r#"a\"b\\c"#);
        assert_eq!(escape_label("x\ny"), "x\\ny");
    }

    #[test]
    fn seconds_are_exact() {
        assert_eq!(seconds(0), "0.000");
        assert_eq!(seconds(1_234), "1.234");
        assert_eq!(seconds(60_005), "60.005");
    }
}
