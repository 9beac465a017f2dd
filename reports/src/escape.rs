//! Escaping for the text formats we write by hand (HTML, XML, markdown table cells).

/// Escapes text for HTML/XML element content and double- or single-quoted attributes.
pub fn escape_xml(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        match c {
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '&' => out.push_str("&amp;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&apos;"),
            // XML 1.0 forbids most control characters even when escaped: drop them rather than
            // write a file no parser accepts.
            c if !xml_allows(c) => {}
            c => out.push(c),
        }
    }
    out
}

/// Whether XML 1.0 allows `c` in a document at all, escaped or not (its `Char` production:
/// tab, newline, carriage return, and U+0020 up, less the surrogates Rust's `char` never
/// holds and the two noncharacters U+FFFE and U+FFFF).
pub fn xml_allows(c: char) -> bool {
    matches!(c, '\t' | '\n' | '\r') || (c >= ' ' && !matches!(c, '\u{fffe}' | '\u{ffff}'))
}

/// Escapes text for a markdown table cell: pipes would split the cell, newlines the row, and
/// HTML-looking text would be rendered by GitHub.
pub fn escape_md_cell(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        match c {
            '|' => out.push_str("\\|"),
            '\n' | '\r' => out.push(' '),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '&' => out.push_str("&amp;"),
            '`' => out.push_str("\\`"),
            '*' | '_' | '[' | ']' => {
                out.push('\\');
                out.push(c);
            }
            c => out.push(c),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn xml_special_characters_are_escaped() {
        assert_eq!(
            escape_xml(r#"<a href="x">&'</a>"#),
            "&lt;a href=&quot;x&quot;&gt;&amp;&apos;&lt;/a&gt;"
        );
        assert_eq!(escape_xml("bell\u{7}"), "bell");
        // Noncharacters XML forbids too: a scenario named with one made junit.xml unreadable.
        assert_eq!(escape_xml("a\u{fffe}b\u{ffff}c\u{fffd}"), "abc\u{fffd}");
    }

    #[test]
    fn markdown_cells_keep_pipes_and_newlines_inside() {
        assert_eq!(escape_md_cell("a|b\nc"), "a\\|b c");
        assert_eq!(escape_md_cell("<= 1.2"), "&lt;= 1.2");
    }
}
