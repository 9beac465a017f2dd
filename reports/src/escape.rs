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
            c if (c as u32) < 0x20 && c != '\n' && c != '\t' && c != '\r' => {}
            c => out.push(c),
        }
    }
    out
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
    }

    #[test]
    fn markdown_cells_keep_pipes_and_newlines_inside() {
        assert_eq!(escape_md_cell("a|b\nc"), "a\\|b c");
        assert_eq!(escape_md_cell("<= 1.2"), "&lt;= 1.2");
    }
}
