//! The README's promises about the fake provider quote figures the code sets: the bounds
//! of `stampede serve` (its `ServerOptions` defaults), how much of a key a mask shows, and
//! the bounds of the runs that put a client under test. This holds each figure written
//! there to the value or behaviour it names.

use std::path::Path;

use crate::common;
use common::thousands;

use stampede_provider::model::mask_credential;
use stampede_provider::server::{
    ServerOptions, DEFAULT_BODY_LIMIT, DEFAULT_BODY_READ_TIMEOUT, DEFAULT_HEADER_READ_TIMEOUT,
    DEFAULT_IDLE_TIMEOUT, DEFAULT_MAX_CONNECTIONS, DEFAULT_MAX_FIELD_BYTES,
    DEFAULT_MAX_HEADER_BYTES, DEFAULT_PAGE_LIMIT, DEFAULT_PRESSED_IDLE_TIMEOUT,
    DEFAULT_WRITE_STALL_TIMEOUT, MAX_CACHE_BREAKPOINTS, MAX_PAGE_LIMIT, MAX_SHAPED_DEPTH,
    MAX_SHAPED_VALUES, MAX_STREAM_GROUPS, MIN_THINKING_BUDGET, MIN_THINKING_TOP_P,
    MODEL_CREATED_UNIX_S, MODEL_OWNER,
};

fn readme() -> String {
    let text = std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("README.md"))
        .expect("README.md");
    // Lines are wrapped anywhere: compare the words alone.
    text.split_whitespace().collect::<Vec<_>>().join(" ")
}

fn says(readme: &str, words: &str) {
    assert!(
        readme.contains(words),
        "the README no longer says {words:?}"
    );
}

#[test]
fn the_server_bounds_the_readme_quotes_are_the_defaults() {
    let r = readme();
    let secs = |d: std::time::Duration| d.as_secs();
    says(
        &r,
        &format!(
            "At most {} are served at once",
            thousands(DEFAULT_MAX_CONNECTIONS as u64)
        ),
    );
    says(
        &r,
        &format!("A connection idle for {} s", secs(DEFAULT_IDLE_TIMEOUT)),
    );
    says(
        &r,
        &format!(
            "slower than {} s to send a request head",
            secs(DEFAULT_HEADER_READ_TIMEOUT)
        ),
    );
    says(
        &r,
        &format!(
            "one connection idle for {} s is closed to make room",
            secs(DEFAULT_PRESSED_IDLE_TIMEOUT)
        ),
    );
    says(
        &r,
        &format!(
            "body not read whole within {} s gets `408`",
            secs(DEFAULT_BODY_READ_TIMEOUT)
        ),
    );
    says(
        &r,
        &format!(
            "A client that takes none of an answer's bytes for {} s has its connection closed",
            secs(DEFAULT_WRITE_STALL_TIMEOUT)
        ),
    );
    says(
        &r,
        &format!(
            "Request heads are capped at {} KiB, bodies at {} MiB (`413`)",
            DEFAULT_MAX_HEADER_BYTES / 1024,
            DEFAULT_BODY_LIMIT / (1024 * 1024)
        ),
    );
    says(
        &r,
        &format!("An `Idempotency-Key` over {DEFAULT_MAX_FIELD_BYTES} bytes gets `400`"),
    );
    says(
        &r,
        &format!(
            "An answer holds at most {} values",
            thousands(MAX_SHAPED_VALUES as u64)
        ),
    );
    says(
        &r,
        &format!("its pieces leave in at most {MAX_STREAM_GROUPS} groups a step apart"),
    );
    says(
        &r,
        &format!("Schemas are followed {MAX_SHAPED_DEPTH} steps deep"),
    );
    // And they are what a server is given unless told otherwise.
    let o = ServerOptions::default();
    assert_eq!(
        (
            o.max_connections,
            o.idle_timeout,
            o.pressed_idle_timeout,
            o.write_stall_timeout,
            o.body_limit
        ),
        (
            DEFAULT_MAX_CONNECTIONS,
            DEFAULT_IDLE_TIMEOUT,
            DEFAULT_PRESSED_IDLE_TIMEOUT,
            DEFAULT_WRITE_STALL_TIMEOUT,
            DEFAULT_BODY_LIMIT
        )
    );
}

#[test]
fn the_key_mask_the_readme_describes_is_the_one_applied() {
    let r = readme();
    says(
        &r,
        "key as `sk-...1234` (its first three and last four characters) when at least 12 more stay hidden",
    );
    says(&r, "a key of 12 to 18 as `sk-...`, a shorter one as `****`");
    let key = |len: usize| -> String {
        "sk-"
            .chars()
            .chain("a".repeat(len).chars())
            .take(len)
            .collect()
    };
    // 19 characters: 3 + 4 shown, 12 hidden.
    assert_eq!(mask_credential(&format!("{}1234", key(15))), "sk-...1234");
    assert_eq!(mask_credential(&key(18)), "sk-...");
    assert_eq!(mask_credential(&key(12)), "sk-...");
    assert_eq!(mask_credential(&key(11)), "****");
}

#[test]
fn the_client_run_bounds_the_readme_quotes_are_the_codes() {
    use stampede_provider::config::{MAX_TIME_SCALE, MIN_TIME_SCALE};
    use stampede_sim::client_process::{GRACE, MAX_LOG_BYTES};
    use stampede_sim::live_driver::JOURNAL_READ_EVERY;
    let r = readme();
    says(
        &r,
        &format!(
            "Its output goes to `client.log` (up to {} MiB;",
            MAX_LOG_BYTES >> 20
        ),
    );
    says(
        &r,
        &format!("(SIGTERM, then SIGKILL {} s later)", GRACE.as_secs()),
    );
    says(
        &r,
        &format!(
            "reads the journal every {} ms while it plays",
            JOURNAL_READ_EVERY.as_millis()
        ),
    );
    says(
        &r,
        &format!("`time_scale` must lie in [{MIN_TIME_SCALE}, {MAX_TIME_SCALE}]"),
    );
}

/// The Anthropic rules the README quotes are the ones the Messages checks hold requests
/// to: the least thinking budget, the most `cache_control` blocks, the least `top_p` while
/// thinking.
#[test]
fn the_readme_quotes_the_messages_checks_numbers() {
    let r = readme();
    let budget = format!(
        "{},{:03}",
        MIN_THINKING_BUDGET / 1_000,
        MIN_THINKING_BUDGET % 1_000
    );
    says(&r, &format!("`thinking` budget under {budget} tokens"));
    let words = [
        "zero", "one", "two", "three", "four", "five", "six", "seven", "eight", "nine",
    ];
    says(
        &r,
        &format!(
            "more than {} `cache_control` blocks",
            words[MAX_CACHE_BREAKPOINTS]
        ),
    );
    says(&r, &format!("a `top_p` under {MIN_THINKING_TOP_P}"));
}

/// The model catalog's paging bounds, its fixed creation time and its owner, as the README
/// quotes them, are the catalog's own constants.
#[test]
fn the_readme_quotes_the_catalogs_numbers() {
    let r = readme();
    says(
        &r,
        &format!(
            "paged by `limit` (1 to {}, default {DEFAULT_PAGE_LIMIT})",
            thousands(MAX_PAGE_LIMIT as u64)
        ),
    );
    says(&r, &format!("owned_by: \"{MODEL_OWNER}\"}}"));
    // The instant both forms name: Unix seconds and the date Anthropic's form writes.
    assert_eq!(MODEL_CREATED_UNIX_S % 86_400, 0, "a midnight, UTC");
    assert_eq!(
        MODEL_CREATED_UNIX_S / 86_400,
        19_723,
        "2024-01-01 is day 19,723"
    );
    says(
        &r,
        &format!("fixed, 2024-01-01T00:00:00Z (`created` {MODEL_CREATED_UNIX_S})"),
    );
}
