//! Finding where a key is written: dotted key paths and their lines, from toml_edit's spans.
//!
//! serde errors carry a byte span; people want a line and a key. This index maps one to the
//! other in both directions.

use std::ops::Range;

use toml_edit::{ImDocument, InlineTable, Item, Table, Value};

/// One key: its dotted path, the span of the key and the span of its value.
type Entry = (String, Option<Range<usize>>, Option<Range<usize>>);

/// Every key of a TOML document with the byte span of its key and of its value.
#[derive(Debug, Default)]
pub struct KeyIndex {
    entries: Vec<Entry>,
    line_starts: Vec<usize>,
}

impl KeyIndex {
    /// Indexes a document; `None` when the text is not valid TOML.
    pub fn new(text: &str) -> Option<Self> {
        let doc = ImDocument::parse(text).ok()?;
        let mut index = KeyIndex {
            entries: Vec::new(),
            line_starts: std::iter::once(0)
                .chain(text.match_indices('\n').map(|(i, _)| i + 1))
                .collect(),
        };
        index.table(doc.as_table(), "");
        Some(index)
    }

    fn push(&mut self, path: String, key: Option<Range<usize>>, value: Option<Range<usize>>) {
        self.entries.push((path, key, value));
    }

    fn table(&mut self, t: &Table, prefix: &str) {
        for (k, item) in t.iter() {
            let path = join(prefix, k);
            let key_span = t.get_key_value(k).and_then(|(key, _)| key.span());
            self.item(item, path, key_span);
        }
    }

    fn inline(&mut self, t: &InlineTable, prefix: &str) {
        for (k, v) in t.iter() {
            let path = join(prefix, k);
            let key_span = t.get_key_value(k).and_then(|(key, _)| key.span());
            self.value(v, path, key_span);
        }
    }

    fn item(&mut self, item: &Item, path: String, key_span: Option<Range<usize>>) {
        match item {
            Item::Table(t) => {
                self.push(path.clone(), key_span, t.span());
                self.table(t, &path);
            }
            Item::ArrayOfTables(a) => {
                self.push(path.clone(), key_span, a.span());
                for (i, t) in a.iter().enumerate() {
                    let p = format!("{path}.{i}");
                    self.push(p.clone(), t.span(), t.span());
                    self.table(t, &p);
                }
            }
            Item::Value(v) => self.value(v, path, key_span),
            Item::None => {}
        }
    }

    fn value(&mut self, v: &Value, path: String, key_span: Option<Range<usize>>) {
        self.push(path.clone(), key_span, v.span());
        match v {
            Value::InlineTable(t) => self.inline(t, &path),
            Value::Array(a) => {
                for (i, el) in a.iter().enumerate() {
                    self.value(el, format!("{path}.{i}"), el.span());
                }
            }
            _ => {}
        }
    }

    /// The deepest key whose key or value span holds `offset`.
    pub fn key_at(&self, offset: usize) -> Option<&str> {
        let mut best: Option<(&str, usize)> = None;
        for (path, key, value) in &self.entries {
            for span in [key, value].into_iter().flatten() {
                let inside = span.contains(&offset) || (span.is_empty() && span.start == offset);
                let width = span.end - span.start;
                if inside && best.map_or(true, |(_, w)| width <= w) {
                    best = Some((path, width));
                }
            }
        }
        best.map(|(p, _)| p)
    }

    /// The 1-based line where a dotted key is written (its key, or its value when the key
    /// has no span, as for array elements).
    pub fn line_of(&self, path: &str) -> Option<usize> {
        let (_, key, value) = self.entries.iter().find(|(p, _, _)| p == path)?;
        let offset = key.as_ref().or(value.as_ref())?.start;
        Some(self.line_at(offset))
    }

    /// The 1-based line of the first key written under a dotted path that is not itself a
    /// key of the file: `expect.by_tenant.tt` in `[expect]` `"by_tenant.tt.failed" = 0`.
    pub fn first_line_under(&self, path: &str) -> Option<usize> {
        let under = format!("{path}.");
        let (_, key, value) = self
            .entries
            .iter()
            .find(|(p, _, _)| p.starts_with(&under))?;
        let offset = key.as_ref().or(value.as_ref())?.start;
        Some(self.line_at(offset))
    }

    /// The 1-based line holding a byte offset.
    pub fn line_at(&self, offset: usize) -> usize {
        self.line_starts.partition_point(|&s| s <= offset)
    }
}

fn join(prefix: &str, key: &str) -> String {
    if prefix.is_empty() {
        key.to_string()
    } else {
        format!("{prefix}.{key}")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const DOC: &str = "name = \"x\"\n\n[client]\nworkers = 8\n\n[[workload]]\ntenant = \"a\"\n\n[[workload]]\ntenant = \"b\"\narrival = { rate = \"1/s\" }\n";

    #[test]
    fn keys_map_to_lines_and_back() {
        let idx = KeyIndex::new(DOC).unwrap();
        assert_eq!(idx.line_of("client.workers"), Some(4));
        assert_eq!(idx.line_of("workload.1.tenant"), Some(10));
        assert_eq!(idx.line_of("workload.1.arrival.rate"), Some(11));
        let offset = DOC.find("\"1/s\"").unwrap();
        assert_eq!(idx.key_at(offset), Some("workload.1.arrival.rate"));
    }
}
