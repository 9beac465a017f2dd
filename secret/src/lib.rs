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

/// `text` (an error message) with every key in it masked: each of the `known` keys, and
/// any word that starts `sk-`, the prefix of the keys the APIs issue (see [`mask_words`]).
/// What a message quotes of a bad value (`invalid type: string "sk-..."` when a key went in
/// a number's place) is then no key whole.
pub fn mask_keys_in(text: &str, known: &[&str]) -> String {
    mask_words(text, |word| {
        word.starts_with("sk-") || known.contains(&word)
    })
}

/// `text` with every word `is_key` picks [`mask`]ed. A word is a run of characters between
/// quotes, spaces, commas, colons, semicolons, brackets and equals signs, so a list keeps
/// its length (`["sk-...abcd", "****"]`); a word masked already (`sk-...abcd`, `****`) is
/// left as it is.
pub fn mask_words(text: &str, is_key: impl Fn(&str) -> bool) -> String {
    let is_delimiter = |c: char| "[]{}()\"'`,=:;".contains(c) || c.is_whitespace();
    let push = |out: &mut String, word: &str| {
        let masked = word.contains("...") || word == "****";
        if !word.is_empty() && !masked && is_key(word) {
            out.push_str(&mask(word));
        } else {
            out.push_str(word);
        }
    };
    let mut out = String::with_capacity(text.len());
    let mut start = 0;
    for (i, c) in text.char_indices() {
        if is_delimiter(c) {
            push(&mut out, &text[start..i]);
            out.push(c);
            start = i + c.len_utf8();
        }
    }
    push(&mut out, &text[start..]);
    out
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

    #[test]
    fn keys_in_a_message_are_masked() {
        let key = "sk-HUNTSECRETzq7XwvB3kP9mN2rT5yL8jF4dH6sA1cE0gQ";
        let message = format!("invalid type: string \"{key}\", expected a whole number");
        assert_eq!(
            super::mask_keys_in(&message, &[]),
            "invalid type: string \"sk-...E0gQ\", expected a whole number"
        );
        // Masked once, not twice.
        assert_eq!(
            super::mask_keys_in("--set a=sk-...E0gQ: bad", &[]),
            "--set a=sk-...E0gQ: bad"
        );
        let azure = "0123456789abcdef0123456789abcdef";
        assert_eq!(
            super::mask_keys_in(&format!("unknown scope {azure:?} (known: a)"), &[azure]),
            "unknown scope \"012...cdef\" (known: a)"
        );
    }
}
