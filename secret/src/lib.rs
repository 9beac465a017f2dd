//! How an API key may be shown. The provider's journal, its banner and control plane, the
//! run's case files and the durable ledger's credential references all show a key masked,
//! by the one rule here, so a key never appears whole and two places never disagree on how
//! much of it shows.
#![deny(missing_docs)]

/// `key` as it may be shown: its first three and last four characters when at least 12 more
/// stay hidden (a key of 19 characters or more; real keys have 40 to 200), its first three
/// when it has 12 to 18, else `****` (not even its length).
pub fn mask(key: &str) -> String {
    let chars: Vec<char> = key.chars().collect();
    // At least 9 characters stay hidden whatever is shown (12 when the last four show), and
    // a short key shows nothing, not even its length: a key of 9 shown as `abc...fghi` gave
    // away 7 of its 9.
    match chars.len() {
        19.. => {
            let head: String = chars[..3].iter().collect();
            let tail: String = chars[chars.len() - 4..].iter().collect();
            format!("{head}...{tail}")
        }
        12..=18 => format!("{}...", chars[..3].iter().collect::<String>()),
        _ => "****".to_string(),
    }
}

/// Each of `keys` [`mask`]ed, joined with `, ` (`none` when there are none): how an error
/// message lists the keys a value could have named.
pub fn mask_all<'a>(keys: impl IntoIterator<Item = &'a &'a str>) -> String {
    let shown: Vec<String> = keys.into_iter().map(|k| mask(k)).collect();
    if shown.is_empty() {
        "none".to_string()
    } else {
        shown.join(", ")
    }
}

#[cfg(test)]
mod tests {
    use super::mask;

    /// No mask shows more than 7 characters or leaves fewer than 9 hidden (12 when it shows
    /// the last four); a short key shows nothing, not even its length.
    #[test]
    fn a_mask_never_shows_most_of_a_key() {
        for len in 0..64 {
            let key: String = "sk-".chars().chain(('a'..='z').cycle()).take(len).collect();
            let shown = mask(&key);
            let visible = shown.chars().filter(|&c| c != '.' && c != '*').count();
            assert!(visible <= 7, "{key} -> {shown}");
            let hidden = key.chars().count() - visible;
            assert!(visible == 0 || hidden >= 9, "{key} -> {shown}");
            let shows_tail = shown.ends_with(|c: char| c.is_alphanumeric());
            assert!(!shows_tail || hidden >= 12, "{key} -> {shown}");
        }
        assert_eq!(mask("sk-abcdef"), "****");
        assert_eq!(mask("x"), "****");
        assert_eq!(mask("sk-acme-shared"), "sk-...");
        assert_eq!(mask("sk-proj-abcdefghijklmnopqrstuvwxyz0123"), "sk-...0123");
        assert_eq!(mask("sk-é-ключ-0123456789"), "sk-...6789");
    }
}
