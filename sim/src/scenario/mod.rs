//! The scenario format (TOML): what a run plays. See `load` for reading one with overrides,
//! and the submodules for each table.

pub mod client;
pub mod crashes;
pub mod error;
pub mod expect;
pub mod locate;
pub mod overrides;
pub mod providers;
pub mod units;
pub mod workload;

use std::path::Path;

use serde::Deserialize;
use stampede_core::Policy;
use stampede_provider::config::ProviderConfig;

pub use client::{ClientSpec, PRESETS};
pub use crashes::{CrashPoint, CrashSpec, CrashTrigger};
pub use error::ScenarioError;
pub use expect::ExpectSpec;
pub use overrides::{parse_override, Override};
pub use units::DurationMs;
pub use workload::{Arrival, TokenCount, WorkloadSpec};

use locate::KeyIndex;

/// The file as written, before cross-checks.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct ScenarioFile {
    name: String,
    #[serde(default = "default_seed")]
    seed: u64,
    duration: DurationMs,
    #[serde(default)]
    description: Option<String>,
    #[serde(default)]
    provider: ProviderConfig,
    /// `[providers.<name>]`: several providers, by name (instead of `[provider]`).
    #[serde(default)]
    providers: std::collections::BTreeMap<String, ProviderConfig>,
    workload: Vec<WorkloadSpec>,
    #[serde(default)]
    client: ClientSpec,
    #[serde(default)]
    expect: toml::Table,
    #[serde(default)]
    measure: MeasureSpec,
    /// Crash-and-restore runs: when the runner dies and how long it stays down.
    #[serde(default)]
    crashes: Vec<crashes::CrashFile>,
    #[serde(default)]
    output: OutputSpec,
}

fn default_seed() -> u64 {
    1
}

/// `[measure]`: how figures are bucketed.
#[derive(Debug, Clone, Copy, PartialEq, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct MeasureSpec {
    /// Width of a timeseries.csv bucket.
    pub bucket: DurationMs,
}

impl Default for MeasureSpec {
    fn default() -> Self {
        Self {
            bucket: DurationMs(1_000),
        }
    }
}

/// `[output]`: files a run writes only when asked, because they grow with every event.
/// `--set output.audit=true` works on any scenario.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct OutputSpec {
    /// Write the audit trail of a virtual run (`audit.jsonl`, hash-chained, and its head
    /// `audit.jsonl.head`), as `stampede run --audit` does. Off by default: a simulated
    /// client's trail is several records per attempt (hundreds of bytes each, with two
    /// hashes), ten times the rest of the run directory. A live run with `--ledger` always
    /// writes its trail: there it is the safety record of real side effects.
    pub audit: bool,
}

/// A scenario ready to run: checked, with the client's policy resolved.
#[derive(Debug, Clone)]
pub struct Scenario {
    /// The scenario's `name`: names its run directory (`runs/<name>/`) and its reports.
    pub name: String,
    /// Seed of every random stream of the run (the `seed` key, 1 when absent; `--seed`
    /// replaces it).
    pub seed: u64,
    /// Virtual-time cap (ms).
    pub duration_ms: u64,
    /// Free text on what the scenario plays (its `description` key).
    pub description: Option<String>,
    /// The provider, or with `[providers.<name>]` every provider's scopes, credentials and
    /// faults in one table: what the harness reads to find a key's scope and the limits the
    /// client knows. A run plays `providers` when it is not empty.
    pub provider: ProviderConfig,
    /// The named providers (`[providers.<name>]`), by name; empty for a scenario with one
    /// `[provider]` table.
    pub providers: Vec<providers::NamedProvider>,
    /// The `[[workload]]` entries, in file order.
    pub workloads: Vec<WorkloadSpec>,
    /// The `[client]` table: the client under test and its options.
    pub client: ClientSpec,
    /// The preset with the scenario's overrides and known provider limits applied.
    pub policy: Policy,
    /// The `[expect]` limits on summary figures, checked when the run ends.
    pub expectations: Vec<ExpectSpec>,
    /// timeseries.csv bucket width (ms).
    pub bucket_ms: u64,
    /// When the simulated runner crashes and restarts from its ledger (`[[crashes]]`).
    pub crashes: Vec<CrashSpec>,
    /// The retry layers of an SDK client, outermost first (`client.preset` an SDK's, and
    /// `[[client.layers]]`); empty when the core is the client.
    pub sdk_layers: Vec<crate::sdk_client::RetryLayer>,
    /// What the run directory holds beyond the files always written (`[output]`).
    pub output: OutputSpec,
    /// What the scenario sets that its run will not read or play, said for the user before
    /// it plays (a `[client.policy]` under an SDK preset, which plays the SDK's own logic;
    /// arrivals planned past `duration`, which are never sent).
    pub notes: Vec<String>,
}

/// Largest scenario file read, in bytes. The shipped ones are a few KB; a file past this is
/// refused after reading this much of it, not read whole (`/dev/zero` given by mistake
/// would take every byte of memory).
pub const MAX_SCENARIO_BYTES: u64 = 16 * 1024 * 1024;

/// Longest scenario name, in characters: it names the run folder, and file systems cap a
/// name at 255 bytes.
pub const MAX_NAME_CHARS: usize = 100;

/// Reads a scenario file, applies `--seed` and `--set`, and checks it.
pub fn load(path: &Path, seed: Option<u64>, sets: &[Override]) -> Result<Scenario, ScenarioError> {
    let file = path.display().to_string();
    let error = |message: String| ScenarioError {
        file: file.clone(),
        line: None,
        key: None,
        message,
    };
    let text =
        read_bounded(path).map_err(|e| error(format!("cannot read the scenario file: {e}")))?;
    let Some(text) = text else {
        return Err(error(format!(
            "the file is larger than {} MiB, which no scenario is: is it the scenario file you meant?",
            MAX_SCENARIO_BYTES / (1024 * 1024)
        )));
    };
    let mut scenario = parse(&text, &file, sets)?;
    if let Some(seed) = seed {
        scenario.seed = seed;
    }
    Ok(scenario)
}

/// The text of `path`, or `None` when it holds more than [`MAX_SCENARIO_BYTES`].
fn read_bounded(path: &Path) -> std::io::Result<Option<String>> {
    use std::io::Read;
    let file = std::fs::File::open(path)?;
    // Sized from the file's length, as `read_to_string` sizes it (a `Take` gives no hint):
    // one allocation, not a doubling series.
    let hint = file
        .metadata()
        .map_or(0, |m| m.len())
        .min(MAX_SCENARIO_BYTES)
        + 1;
    let mut bytes = Vec::with_capacity(usize::try_from(hint).unwrap_or(0));
    file.take(MAX_SCENARIO_BYTES + 1).read_to_end(&mut bytes)?;
    if bytes.len() as u64 > MAX_SCENARIO_BYTES {
        return Ok(None);
    }
    String::from_utf8(bytes).map(Some).map_err(|e| {
        let at = e.utf8_error().valid_up_to();
        std::io::Error::new(
            std::io::ErrorKind::InvalidData,
            format!("it is not UTF-8 text (byte {at} is not); save it as UTF-8"),
        )
    })
}

/// The keys of every credential a scenario's text lists (`[[provider.credentials]]` and each
/// `[[providers.<name>.credentials]]`), when it reads as TOML.
fn credential_keys(text: &str) -> Vec<String> {
    let Ok(doc) = text.parse::<toml::Table>() else {
        return Vec::new();
    };
    let single = doc.get("provider").into_iter();
    let named = doc
        .get("providers")
        .and_then(toml::Value::as_table)
        .into_iter()
        .flat_map(|t| t.values());
    single
        .chain(named)
        .filter_map(|p| p.get("credentials").and_then(toml::Value::as_array))
        .flatten()
        .filter_map(|c| c.get("key").and_then(toml::Value::as_str))
        .map(str::to_string)
        .collect()
}

/// Parses scenario text; `file` names it in errors.
pub fn parse(text: &str, file: &str, sets: &[Override]) -> Result<Scenario, ScenarioError> {
    let original = KeyIndex::new(text);
    let err = |key: Option<String>, message: String| {
        let line = key
            .as_deref()
            .and_then(|k| original.as_ref().and_then(|idx| written_line(idx, k)));
        // What a message quotes of a bad value may be a key (one put in a number's or a
        // scope's place): shown masked, as every key the tool shows.
        let known = credential_keys(text);
        let known: Vec<&str> = known.iter().map(String::as_str).collect();
        ScenarioError {
            file: file.to_string(),
            line,
            key,
            message: stampede_secret::mask_keys_in(&message, &known),
        }
    };

    let mut table: toml::Table = text.parse().map_err(|e: toml::de::Error| {
        let line = e.span().map(|s| line_at(text, s.start));
        ScenarioError {
            file: file.to_string(),
            line,
            key: None,
            message: format!("not valid TOML: {}", toml_words(e.message().trim())),
        }
    })?;
    for ov in sets {
        overrides::apply(&mut table, ov).map_err(|m| err(Some(ov.path.clone()), m))?;
    }
    let checked_text = if sets.is_empty() {
        text.to_string()
    } else {
        toml::to_string(&table)
            .map_err(|e| err(None, format!("overrides produced an invalid document: {e}")))?
    };

    let raw: ScenarioFile = toml::from_str(&checked_text).map_err(|e: toml::de::Error| {
        let message = plain_words(e.message().trim());
        // A field missing from the whole file is reported at the file's start, where the
        // first key written sits: it is no fault of that key.
        let whole_file =
            message.starts_with("missing field") && e.span().is_some_and(|s| s.start == 0);
        let key = e.span().filter(|_| !whole_file).and_then(|s| {
            KeyIndex::new(&checked_text).and_then(|idx| idx.key_at(s.start).map(str::to_string))
        });
        match key
            .as_deref()
            .and_then(|k| sets.iter().find(|ov| related(&ov.path, k)))
        {
            Some(ov) => err(
                Some(ov.path.clone()),
                format!(
                    "--set {}={}: {message}",
                    ov.path,
                    overrides::shown_value(&ov.path, &ov.raw, &[])
                ),
            ),
            None if whole_file => err(None, with_hint(&message)),
            None => err(key, message),
        }
    })?;

    let has_provider = table.contains_key("provider");
    resolve(raw, has_provider).map_err(|(key, message)| {
        match sets.iter().find(|ov| related(&ov.path, &key)) {
            Some(ov) => err(
                Some(ov.path.clone()),
                format!(
                    "--set {}={}: {message}",
                    ov.path,
                    overrides::shown_value(&ov.path, &ov.raw, &[])
                ),
            ),
            None => err(Some(key), message),
        }
    })
}

/// Whether an error at `key` concerns an override at `path`.
fn related(path: &str, key: &str) -> bool {
    path == key || key.starts_with(&format!("{path}.")) || path.starts_with(&format!("{key}."))
}

/// The line of `key`, or of the first key written under it (a quoted dotted key holds
/// it), or of the nearest enclosing key written in the file (a key the preset supplies is
/// blamed where its table is written).
fn written_line(idx: &KeyIndex, key: &str) -> Option<usize> {
    if let Some(line) = idx
        .first_line_under(key)
        .filter(|_| idx.line_of(key).is_none())
    {
        return Some(line);
    }
    let mut k = key;
    loop {
        if let Some(line) = idx.line_of(k) {
            return Some(line);
        }
        k = k.rsplit_once('.')?.0;
    }
}

/// The whole numbers a scenario can write for a 64-bit count or seed.
const TOML_WHOLE: &str = "a whole number from 0 to 9223372036854775807";

/// The TOML parser's own message, with what to write where it leaves that out: an integer
/// past the format's range is refused before any key is read.
fn toml_words(message: &str) -> String {
    if message.contains("number too large to fit in target type") {
        format!("{message}: a TOML integer goes up to 9223372036854775807")
    } else {
        message.to_string()
    }
}

/// Serde's messages in the words of the scenario format: no Rust type names.
pub fn plain_words(message: &str) -> String {
    let mut m = message
        .replace(
            "number would be zero for non-zero type",
            "must be at least 1",
        )
        .replace("unknown variant", "unknown value");
    for (ty, words) in [
        ("u8", "a whole number from 0 to 255"),
        ("u16", "a whole number from 0 to 65535"),
        ("u32", "a whole number from 0 to 4294967295"),
        // Not u64's own range: a TOML integer is a signed 64-bit number, so a scenario
        // cannot write one above i64's (`--seed` on the command line takes any u64).
        ("u64", TOML_WHOLE),
        ("usize", TOML_WHOLE),
        ("i32", "a whole number from -2147483648 to 2147483647"),
        ("i64", "a whole number"),
        ("f32", "a number"),
        ("f64", "a number"),
        ("a boolean", "true or false"),
    ] {
        m = m.replace(&format!("expected {ty}"), &format!("expected {words}"));
    }
    m = m
        .replace(
            "expected a sequence",
            "expected a list: [a, b], or a list of tables written as [[key]] blocks",
        )
        .replace("expected a map", "expected a table like { key = value }")
        .replace("invalid type: map,", "invalid type: a table,")
        .replace("invalid type: sequence,", "invalid type: a list,");
    for (rust, words) in [
        ("expected struct ", "expected a table"),
        ("expected enum ", "expected a name"),
    ] {
        while let Some(at) = m.find(rust) {
            let name_end = m[at + rust.len()..]
                .find(|c: char| !(c.is_alphanumeric() || c == '_'))
                .map_or(m.len(), |n| at + rust.len() + n);
            m.replace_range(at..name_end, words);
        }
    }
    m
}

fn line_at(text: &str, offset: usize) -> usize {
    text[..offset.min(text.len())].matches('\n').count() + 1
}

fn with_hint(message: &str) -> String {
    if message.starts_with("missing field") {
        format!("{message} (every scenario needs name, duration and at least one [[workload]])")
    } else {
        message.to_string()
    }
}

/// A character no name or description needs, which rewrites what a terminal or a page
/// shows: a control character (an escape sequence, a carriage return), or a bidirectional
/// override or isolate, which shows text in another order than it is stored (U+202A to
/// U+202E, U+2066 to U+2069).
fn unprintable(c: char) -> bool {
    c.is_control() || matches!(c, '\u{202A}'..='\u{202E}' | '\u{2066}'..='\u{2069}')
}

/// Cross-checks that serde cannot express. Errors are `(dotted key, message)`.
fn resolve(raw: ScenarioFile, has_provider: bool) -> Result<Scenario, (String, String)> {
    // The name is the run folder's (runs/<name>/): an empty one would write into runs/.
    if raw.name.trim().is_empty() {
        return Err((
            "name".into(),
            "the name is empty: give the scenario a name, e.g. name = \"checkout-backlog\" \
             (its run folder is runs/<name>/)"
                .into(),
        ));
    }
    // Names are printed on terminals and written into CSV, XML, markdown and folder names:
    // a control character in one (an escape sequence, a carriage return) rewrote a
    // terminal's lines and broke the XML files, and no name needs one.
    // (The key is written only for the name refused.)
    let names = std::iter::once((None, "name", raw.name.as_str())).chain(
        raw.workload.iter().enumerate().flat_map(|(i, w)| {
            [
                (Some(i), "tenant", w.tenant.as_str()),
                (Some(i), "class", w.class.as_str()),
            ]
        }),
    );
    for (entry, field, name) in names {
        let key = || entry.map_or(field.to_string(), |i| format!("workload.{i}.{field}"));
        if let Some(c) = name.chars().find(|&c| unprintable(c)) {
            return Err((
                key(),
                format!(
                    "{name:?} holds the control character U+{:04X}: names are printed on \
                     terminals and written into CSV, XML and markdown; remove it",
                    u32::from(c)
                ),
            ));
        }
        // A CSV cell that starts so is a formula to a spreadsheet (`=HYPERLINK(...)`,
        // `@SUM(...)`): a name written into tenants.csv, attempts.csv and sweep.csv must
        // not run as one on the machine of whoever opens them.
        if let Some(c) = name.chars().next().filter(|c| "=+-@".contains(*c)) {
            return Err((
                key(),
                format!(
                    "{name:?} starts with {c:?}, which a spreadsheet reads as a formula in the \
                     CSV files the name is written into; start it with a letter or a digit"
                ),
            ));
        }
        // An empty tenant has no row of its own in by_tenant, and an empty class no rules.
        if entry.is_some() && name.trim().is_empty() {
            return Err((
                key(),
                format!("the {field} is empty: give it a name, e.g. {field} = \"acme\""),
            ));
        }
    }
    // The description is shown in summary.md and the CI step summary as it is: lines and
    // tabs are its own, any other control character (an escape sequence) is not text.
    if let Some(c) = raw
        .description
        .iter()
        .flat_map(|d| d.chars())
        .find(|&c| unprintable(c) && c != '\n' && c != '\t')
    {
        return Err((
            "description".into(),
            format!(
                "the description holds the control character U+{:04X}: it is shown in \
                 summary.md, the page and the CI step summary; remove it (new lines and tabs \
                 are kept)",
                u32::from(c)
            ),
        ));
    }
    let name_chars = raw.name.chars().count();
    if name_chars > MAX_NAME_CHARS {
        return Err((
            "name".into(),
            format!(
                "the name is {name_chars} characters long: give at most {MAX_NAME_CHARS} (it names the run folder)"
            ),
        ));
    }
    if raw.duration.ms() == 0 {
        return Err((
            "duration".into(),
            "the virtual-time cap must be above zero, e.g. \"15m\"".into(),
        ));
    }
    if raw.duration.ms() > MAX_DURATION_MS {
        return Err((
            "duration".into(),
            format!(
                "{} is longer than the {} a scenario may play (MAX_DURATION_MS in \
                 sim/src/scenario/mod.rs; raise it and rebuild to lift the limit)",
                units::format_duration_ms(raw.duration.ms()),
                units::format_duration_ms(MAX_DURATION_MS)
            ),
        ));
    }
    if raw.measure.bucket.ms() == 0 {
        return Err((
            "measure.bucket".into(),
            "the bucket must be above zero, e.g. \"1s\"".into(),
        ));
    }
    let rows = raw.duration.ms() / raw.measure.bucket.ms();
    if rows > MAX_TIMESERIES_ROWS {
        let smallest = raw.duration.ms().div_ceil(MAX_TIMESERIES_ROWS);
        return Err((
            "measure.bucket".into(),
            format!(
                "{} buckets over a duration of {} would be {rows} timeseries rows, more than the \
                 {MAX_TIMESERIES_ROWS} a run may hold (MAX_TIMESERIES_ROWS in \
                 sim/src/scenario/mod.rs); give measure.bucket = \"{}\" or more, or a shorter \
                 duration",
                units::format_duration_ms(raw.measure.bucket.ms()),
                units::format_duration_ms(raw.duration.ms()),
                units::format_duration_ms(smallest)
            ),
        ));
    }
    if raw.workload.is_empty() {
        return Err((
            "workload".into(),
            "add at least one [[workload]] entry".into(),
        ));
    }
    let (provider_view, named) = providers::resolve(raw.provider, has_provider, raw.providers)?;
    if named.is_empty() {
        provider(&provider_view, has_provider)?;
    }
    let raw = ScenarioFile {
        provider: provider_view,
        providers: Default::default(),
        ..raw
    };
    limits(&raw.workload)?;
    let arrival_notes = arrivals_fit(&raw.workload, raw.duration.ms())?;
    let mut policy = client::resolve_policy(&raw.client, &raw.provider)?;
    routes(&mut policy, &raw.provider)?;
    let credentials: Vec<&str> = raw
        .provider
        .credentials
        .iter()
        .map(|c| c.key.as_str())
        .collect();
    for (i, w) in raw.workload.iter().enumerate() {
        let at = |k: &str| format!("workload.{i}.{k}");
        if !credentials.is_empty() && !credentials.contains(&w.credential.as_str()) {
            return Err((
                at("credential"),
                format!(
                    "credential {} is not one of provider.credentials ({}); add it there or use \
                     one of those (keys are shown masked: an error message goes to CI logs)",
                    stampede_secret::mask(&w.credential),
                    stampede_secret::mask_all(&credentials)
                ),
            ));
        }
        if policy.class(&w.class).is_none() {
            let known: Vec<&str> = policy.classes.keys().map(String::as_str).collect();
            return Err((
                at("class"),
                format!(
                    "class {:?} is not a client policy class ({}); define it under [client.policy.classes.{}]",
                    w.class,
                    known.join(", "),
                    w.class
                ),
            ));
        }
        if let Some(model) = &w.model {
            let models = providers::models_of(&raw.provider, &named, &w.credential);
            if !models.is_empty() && !models.iter().any(|m| &m.name == model) {
                let names: Vec<&str> = models.iter().map(|m| m.name.as_str()).collect();
                return Err((
                    at("model"),
                    format!(
                        "model {model:?} is not one of the models its key's provider serves \
                         ({}); name one of those, or add it to that provider's models",
                        names.join(", ")
                    ),
                ));
            }
        }
        if w.tasks == Some(0) {
            return Err((
                at("tasks"),
                "tasks must be 1 or more (or left out: one task per action)".into(),
            ));
        }
        if w.resources == Some(0) {
            return Err((at("resources"), "resources must be 1 or more".into()));
        }
        if let (Some(list), Some(tasks)) = (&w.cancel_tasks, w.tasks.or(Some(w.count))) {
            if let Some(bad) = list.iter().find(|&&t| t >= tasks) {
                return Err((
                    at("cancel_tasks"),
                    format!("task index {bad} is not below tasks = {tasks}"),
                ));
            }
        }
        if w.cancel_tasks.is_some() && w.cancel_at.is_none() {
            return Err((
                at("cancel_tasks"),
                "cancel_tasks needs cancel_at (when to cancel)".into(),
            ));
        }
    }
    let expectations = expect::parse_expect_as_written(&raw.expect)?;
    let groups = expect::Groups {
        tenants: raw.workload.iter().map(|w| w.tenant.as_str()).collect(),
        classes: (raw.workload.iter().map(|w| w.class.as_str()))
            .chain(policy.classes.keys().map(String::as_str))
            .collect(),
        providers: named
            .iter()
            .filter(|p| p.name != providers::SINGLE)
            .map(|p| p.name.as_str())
            .collect(),
    };
    groups.check(&expectations)?;
    let expectations: Vec<expect::ExpectSpec> =
        expectations.into_iter().map(|(spec, _)| spec).collect();
    let crashes = crashes::resolve(raw.crashes)?;
    let sdk_layers = client::sdk_layers(&raw.client, &raw.provider)?;
    if !sdk_layers.is_empty() && !crashes.is_empty() {
        return Err((
            "crashes".into(),
            "an SDK client keeps no ledger to restart from: [[crashes]] need one of the core's \
             presets"
                .into(),
        ));
    }
    if let Some(i) = raw
        .workload
        .iter()
        .position(|w| w.agent.is_some() || w.improvise.is_some())
        .filter(|_| !crashes.is_empty() || !sdk_layers.is_empty())
    {
        return Err((
            format!("workload.{i}"),
            "agent runs and improvisation follow each call's outcome in the core's client; they cannot be combined with [[crashes]] or an SDK preset yet: remove one of the two"
                .into(),
        ));
    }
    if !crashes.is_empty() && raw.client.transport_retries > 0 {
        return Err((
            "client.transport_retries".into(),
            "a hidden retry layer cannot be combined with [[crashes]] yet (a crash would have \
             to kill its pending re-sends); remove one of the two"
                .into(),
        ));
    }
    replicas(&raw.client, !sdk_layers.is_empty(), !crashes.is_empty())?;
    let mut notes = arrival_notes;
    if raw.client.policy.is_some() && !sdk_layers.is_empty() {
        notes.push(format!(
            "note: client.policy is not read under the SDK preset {:?}, which plays the SDK's \
             own retries (its routing plans, degradation ladder and budgets with it); play it \
             under a core preset (naive, exponential, full-jitter, stampede) to use them",
            raw.client.preset
        ));
    }
    Ok(Scenario {
        name: raw.name,
        seed: raw.seed,
        duration_ms: raw.duration.ms(),
        description: raw.description,
        provider: raw.provider,
        providers: named,
        workloads: raw.workload,
        client: raw.client,
        policy,
        expectations,
        bucket_ms: raw.measure.bucket.ms(),
        crashes,
        sdk_layers,
        output: raw.output,
        notes,
    })
}

/// Checks the routing plans against the providers' keys, and gives a fallback without a
/// `scope` the scope its key is limited on (the model's own, when its key has one), so the
/// client paces it on the provider's real limit rather than a shared `"account"`.
fn routes(policy: &mut Policy, view: &ProviderConfig) -> Result<(), (String, String)> {
    let known = |key: &str| view.credentials.iter().any(|c| c.key == key);
    for (i, plan) in policy.routing.plans.iter_mut().enumerate() {
        let at = |k: String| format!("client.policy.routing.plans.{i}.{k}");
        if !known(&plan.primary) {
            return Err((
                at("primary".into()),
                format!(
                    "{} is not a key any provider issued; a plan's primary is the key of the \
                     actions it routes",
                    stampede_secret::mask(&plan.primary)
                ),
            ));
        }
        for (j, f) in plan.fallbacks.iter_mut().enumerate() {
            if !known(&f.credential) {
                return Err((
                    at(format!("fallbacks.{j}.credential")),
                    format!(
                        "{} is not a key any provider issued",
                        stampede_secret::mask(&f.credential)
                    ),
                ));
            }
            if f.scope.is_none() {
                f.scope = providers::client_scope(view, &f.credential, f.model.as_deref());
            }
        }
    }
    Ok(())
}

/// Checks the `[provider]` table as the provider will (so its errors carry the file, line and
/// key like the rest), and that it has what a run needs: a scope and a credential.
fn provider(p: &ProviderConfig, written: bool) -> Result<(), (String, String)> {
    use stampede_provider::config::ConfigError;
    p.validate().map_err(|e| match e {
        ConfigError::Invalid { key, message } => (key, message),
        ConfigError::Parse { message, .. } => ("provider".to_string(), message),
    })?;
    if p.credentials.is_empty() {
        let (key, what) = if written {
            (
                "provider.credentials",
                "[provider] has no [[provider.credentials]]",
            )
        } else {
            ("provider", "the scenario has no [provider] table")
        };
        return Err((
            key.to_string(),
            format!(
                "{what}: the provider would refuse every call with 401. Add a scope and a key \
                 that counts against it, and name the key in each [[workload]]: \
                 [[provider.scopes]] id = \"account:acme\" rpm = 300, \
                 [[provider.credentials]] key = \"sk-acme\" scope = \"account:acme\", \
                 and credential = \"sk-acme\" under [[workload]]"
            ),
        ));
    }
    Ok(())
}

/// Most logical actions one scenario may generate, over all `[[workload]]` entries: ten
/// million already take minutes of simulation (and the run directory grows with them).
/// Raise it here and rebuild to lift the limit.
pub const MAX_ACTIONS: u64 = 10_000_000;

/// Longest span of virtual time a scenario may write (for `duration`, and a workload's
/// `start`, `deadline`, `cancel_at` and burst interval): a year. Raise it here and rebuild.
pub const MAX_DURATION_MS: u64 = 366 * 86_400_000;

/// Most `timeseries.csv` rows (duration / `measure.bucket`) a run may hold: every bucket is
/// kept in memory, and two million already make a CSV of a hundred megabytes (a 1 ms bucket
/// over ten days took gigabytes). Raise it here and rebuild.
pub const MAX_TIMESERIES_ROWS: u64 = 2_000_000;

/// Fastest arrival rate (`rate` or `poisson`) of one workload entry, per second: a
/// hundred thousand actions a second is far beyond any provider's limits already.
/// Raise it here and rebuild.
pub const MAX_RATE_PER_SECOND: f64 = 100_000.0;

/// Whether every workload's arrivals fall inside the run: the run ends at `duration_ms`
/// (an arrival at that instant still plays), and an action planned after it is never
/// sent, nor counted by any figure. A workload that starts after the end would send
/// nothing at all: refused. One whose `count` its rate cannot place before the end is
/// played up to it, as a `--set duration=...` that cuts a run short asks, and said in a
/// note (returned), so that no one takes the figures for the whole count's. A Poisson
/// workload is held to its mean: its last arrivals may still fall past the end by chance.
fn arrivals_fit(
    workloads: &[WorkloadSpec],
    duration_ms: u64,
) -> Result<Vec<String>, (String, String)> {
    let mut notes = Vec::new();
    for (i, w) in workloads.iter().enumerate() {
        let start = w.start.ms();
        if start > duration_ms {
            return Err((
                format!("workload.{i}.start"),
                format!(
                    "the workload starts at {}, after the run's duration of {} is over: none \
                     of its {} actions would be sent; start it earlier or lengthen duration",
                    units::format_duration_ms(start),
                    units::format_duration_ms(duration_ms),
                    w.count
                ),
            ));
        }
        // The arrival stream's own schedule (a Poisson rate's mean).
        let last = w.arrival.planned_at(start, w.count.saturating_sub(1));
        if last > duration_ms as f64 {
            let lasts = if last >= MAX_DURATION_MS as f64 {
                "past a year".to_string()
            } else {
                format!("until {}", units::format_duration_ms(last as u64))
            };
            notes.push(format!(
                "note: workload.{i}: {} actions arriving from {} go on {lasts}, after the run's \
                 duration of {}: those planned past it are never sent, and no figure counts \
                 them (lower count, raise the rate or lengthen duration to play them all)",
                w.count,
                units::format_duration_ms(start),
                units::format_duration_ms(duration_ms),
            ));
        }
    }
    Ok(notes)
}

/// Bounds on sizes, spans and rates that would run until killed or mean nothing.
fn limits(workloads: &[WorkloadSpec]) -> Result<(), (String, String)> {
    let mut total: u64 = 0;
    for (i, w) in workloads.iter().enumerate() {
        let at = |k: &str| format!("workload.{i}.{k}");
        // Each arrival may make an agent run's calls, and each request as many improvised
        // ones again: all are actions (10 million arrivals of 1,000 calls had passed as 10
        // million, and played until killed).
        let calls = w.agent.map_or(1, |a| u64::from(a.calls.max(1)));
        let improvised = w.improvise.map_or(0, |v| u64::from(v.times));
        let actions = w.count.saturating_mul(calls).saturating_mul(1 + improvised);
        total = total.saturating_add(actions);
        if total > MAX_ACTIONS {
            let times = if improvised == 1 {
                "once".to_string()
            } else {
                format!("{improvised} times")
            };
            let each = match (calls, improvised) {
                (1, 0) => String::new(),
                (c, 0) => format!(" ({} arrivals of {c} agent calls)", w.count),
                (1, _) => format!(" ({} requests, each improvised at most {times})", w.count),
                (c, _) => format!(
                    " ({} arrivals of {c} agent calls, each improvised at most {times})",
                    w.count
                ),
            };
            return Err((
                at("count"),
                format!(
                    "{total} actions in all{each} is more than the {MAX_ACTIONS} a scenario may \
                     generate (MAX_ACTIONS in sim/src/scenario/mod.rs: raise it and rebuild to \
                     lift the limit, or split the workload across runs)"
                ),
            ));
        }
        let least_output = match w.max_output_tokens {
            TokenCount::Fixed(n) => n,
            TokenCount::Uniform { lo, .. } => lo,
            // Clamped to 1 and up.
            TokenCount::LogNormal { .. } => 1,
        };
        let completes = matches!(w.route, None | Some(stampede_core::Route::ChatCompletion));
        if completes && least_output == 0 {
            return Err((
                at("max_output_tokens"),
                "a completion may not ask for 0 tokens (the real APIs refuse max_tokens 0, so a \
                 live run would get 400s a virtual one does not): give 1 or more"
                    .into(),
            ));
        }
        if w.deadline.is_some_and(|d| d.ms() == 0) {
            return Err((
                at("deadline"),
                "a deadline of 0s expires every action as it arrives; give a span such as \
                 \"5m\", or leave deadline out for none"
                    .into(),
            ));
        }
        if let Some(agent) = &w.agent {
            if agent.calls == 0 || agent.calls > 1_000 {
                return Err((
                    at("agent.calls"),
                    format!("{} calls per run: give 1 to 1000", agent.calls),
                ));
            }
            if agent.budget.ms() == 0 {
                return Err((
                    at("agent.budget"),
                    "a run budget of 0s ends every run before its first call; give a span such as \"300s\""
                        .into(),
                ));
            }
            if w.effective_route() != stampede_core::Route::ChatCompletion {
                return Err((
                    at("agent"),
                    "an agent run chains LLM calls: give the workload class \"llm\" (or route = \"chat_completion\")"
                        .into(),
                ));
            }
        }
        if w.improvise.is_some_and(|i| i.times > 100) {
            return Err((
                at("improvise.times"),
                "more than 100 changed requests per request; give 1 to 100".into(),
            ));
        }
        let mut spans = vec![
            ("start", Some(w.start)),
            ("age", w.age),
            ("deadline", w.deadline),
            ("cancel_at", w.cancel_at),
        ];
        if let Arrival::Bursts { every, .. } = &w.arrival {
            spans.push(("arrival", Some(*every)));
        }
        for (key, span) in spans {
            if let Some(d) = span.filter(|d| d.ms() > MAX_DURATION_MS) {
                return Err((
                    at(key),
                    format!(
                        "{} is longer than the {} a scenario may play (MAX_DURATION_MS in \
                         sim/src/scenario/mod.rs; raise it and rebuild to lift the limit)",
                        units::format_duration_ms(d.ms()),
                        units::format_duration_ms(MAX_DURATION_MS)
                    ),
                ));
            }
        }
        if let Arrival::Rate(r) | Arrival::Poisson(r) = &w.arrival {
            if r.per_second > MAX_RATE_PER_SECOND {
                return Err((
                    at("arrival"),
                    format!(
                        "{}/s is faster than the {MAX_RATE_PER_SECOND}/s an arrival may be \
                         (MAX_RATE_PER_SECOND in sim/src/scenario/mod.rs; raise it and rebuild \
                         to lift the limit)",
                        r.per_second
                    ),
                ));
            }
        }
    }
    Ok(())
}

/// Checks `client.replicas` and what the replicas share.
fn replicas(spec: &ClientSpec, sdk: bool, crashes: bool) -> Result<(), (String, String)> {
    let max = crate::virtual_driver::fleet::MAX_REPLICAS;
    if spec.replicas == 0 || spec.replicas > max {
        return Err((
            "client.replicas".into(),
            format!("{} replicas: give 1 to {max}", spec.replicas),
        ));
    }
    if spec.replicas > 1 && crashes {
        return Err((
            "client.replicas".into(),
            "[[crashes]] crash the one runner; they cannot be combined with replicas yet: \
             remove one of the two"
                .into(),
        ));
    }
    if spec.share_scope == client::ShareScope::Fleet && sdk {
        return Err((
            "client.share_scope".into(),
            "an SDK keeps no scope record to share: \"fleet\" needs one of the core's presets \
             (stampede, naive, exponential, full-jitter)"
                .into(),
        ));
    }
    Ok(())
}
