//! Answers a request asks to have a shape: JSON output (`response_format`) and forced tool
//! calls (`tool_choice`). The provider's text (`stampede fake completion #N`) is no JSON and
//! no tool call, so a client that parses structured output (the openai SDK's
//! `chat.completions.parse`) or needs a tool call could never succeed against it, and
//! would fail, or improvise, where against the real API it goes on.
//!
//! The shape changes what a 200 says, never whether there is one, how long it takes or what
//! it bills: the model decides those as for any call. A JSON answer is an instance of the
//! request's JSON Schema made by [`instance`] (every property, each of its type's simplest
//! value: `""`, `0`, `false`, the first `enum` value, a `$ref` followed); a tool call calls
//! the tool named, or the first one, with arguments made the same way from its parameters.
//! A model free to answer in text (`tool_choice` `auto` or absent) answers in text.

use serde_json::{json, Map, Value};

use super::parse::{invalid_type, missing, BadRequest};

/// What a 200 to this request must be.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Shape {
    /// The message's content is this JSON text (`response_format` `json_object` or
    /// `json_schema`).
    Json(String),
    /// The message calls tool `name` with `arguments` (JSON text).
    Tool {
        /// The tool's name.
        name: String,
        /// Its arguments, as JSON text (OpenAI sends them as a string).
        arguments: String,
    },
}

/// The deltas a stream broken off after `chunks` sends, and the pieces its text is cut
/// into: a shaped stream stops a piece short of its whole (see [`Shape::most_deltas`]),
/// whatever the model drew; a text stream sends its `chunks` tokens.
pub(crate) fn broken(chunks: u32, shape: Option<&Shape>) -> (u32, u32) {
    match shape {
        None => (chunks, chunks),
        Some(s) => {
            let sent = chunks.min(s.most_deltas().saturating_sub(1));
            (sent, sent.saturating_add(1))
        }
    }
}

impl Shape {
    /// How many deltas a stream of this shape sends at most: one about every 4 bytes of its
    /// JSON text or arguments (a token's worth). A stream of more would send empty deltas,
    /// which the real APIs never do: the model's drawn length can be hundreds of tokens for
    /// a JSON object of ten.
    pub(crate) fn most_deltas(&self) -> u32 {
        let text = match self {
            Shape::Json(text) => text,
            Shape::Tool { arguments, .. } => arguments,
        };
        u32::try_from(text.len().div_ceil(4))
            .unwrap_or(u32::MAX)
            .max(1)
    }
}

/// How deep a structured answer follows nested schemas (and `$ref`s, which may recurse):
/// past it a value is `null`. Every property, list item, `$ref` and `anyOf` is a step, so
/// a pydantic model nests three steps a level (a property, its `anyOf` when optional, the
/// `$ref`): 64 serves the 10 levels of nesting OpenAI's structured outputs allow, which 16
/// had cut off at the fifth with a `null` the SDK's parse refused. [`MAX_VALUES`] still
/// bounds the answer's size.
pub const MAX_DEPTH: u32 = 64;

/// The shape an OpenAI chat body asks for: a forced tool call (`tool_choice` `required`, or
/// naming a function) first, then `response_format`; `None` for text. A body the real API
/// refuses is refused in its words: a forced call with no tools or of a function it does
/// not list, a `json_schema` format without its schema, a format type it does not know.
pub(crate) fn openai(body: &Value) -> Result<Option<Shape>, BadRequest> {
    let tools = body
        .get("tools")
        .and_then(Value::as_array)
        .filter(|t| !t.is_empty());
    let functions = || {
        tools
            .into_iter()
            .flatten()
            .filter_map(|tool| tool.get("function"))
    };
    let forced = match body.get("tool_choice") {
        Some(Value::String(s)) if s == "required" => match tools {
            Some(_) => functions().next(),
            None => return Err(choice_without_tools()),
        },
        Some(choice @ Value::Object(_)) => {
            if tools.is_none() {
                return Err(choice_without_tools());
            }
            let name = choice.pointer("/function/name").and_then(Value::as_str);
            Some(named_function(name, functions())?)
        }
        _ => None,
    };
    if let Some(f) = forced {
        let schema = f.get("parameters").cloned().unwrap_or(json!({}));
        return Ok(Some(tool(f, &schema)));
    }
    let Some(format) = body.get("response_format").filter(|f| !f.is_null()) else {
        return Ok(None);
    };
    let schema = format.pointer("/json_schema/schema");
    format_shape(
        format,
        schema,
        ("response_format", "response_format.json_schema"),
    )
}

/// The shape an OpenAI Responses body asks for: a forced call of a function tool
/// (`tool_choice` `required`, or `{"type": "function", "name": ...}`) first, then
/// `text.format` (`json_object`, or `json_schema` with its `schema`, which the SDK's
/// `responses.parse` sends); `None` for text, and for a call forced among built-in tools
/// only (a web search has no arguments to make). Refused in OpenAI's words: `tools`,
/// `tool_choice` or `text` of the wrong type, a function tool without a name, a forced
/// call with no tools or of a function it does not list, a `json_schema` format without
/// its name or schema, a format type it does not know.
pub(crate) fn responses(body: &Value) -> Result<Option<Shape>, BadRequest> {
    let tools = match body.get("tools") {
        None | Some(Value::Null) => &[][..],
        Some(Value::Array(tools)) => tools.as_slice(),
        Some(other) => return Err(invalid_type("tools", "an array", other)),
    };
    for (i, tool) in tools.iter().enumerate() {
        let kind = match tool.get("type") {
            Some(Value::String(kind)) => kind,
            Some(other) => {
                return Err(invalid_type(&format!("tools[{i}].type"), "a string", other))
            }
            None if tool.is_object() => return Err(missing(&format!("tools[{i}].type"))),
            None => return Err(invalid_type(&format!("tools[{i}]"), "an object", tool)),
        };
        if kind == "function" && !tool.get("name").is_some_and(Value::is_string) {
            return Err(missing(&format!("tools[{i}].name")));
        }
    }
    let functions = || {
        tools
            .iter()
            .filter(|t| t.get("type").and_then(Value::as_str) == Some("function"))
    };
    let forced = match body.get("tool_choice") {
        None | Some(Value::Null) => None,
        Some(Value::String(s)) => match s.as_str() {
            "none" | "auto" => None,
            "required" if tools.is_empty() => return Err(choice_without_tools()),
            "required" => functions().next(),
            other => {
                return Err(BadRequest::at(
                    "tool_choice",
                    Some("invalid_value"),
                    format!(
                        "Invalid value: '{other}'. Supported values are: 'none', 'auto', and \
                         'required'."
                    ),
                ))
            }
        },
        Some(choice @ Value::Object(_)) => match choice.get("type").and_then(Value::as_str) {
            Some("function") if tools.is_empty() => return Err(choice_without_tools()),
            Some("function") => {
                let name = choice.get("name").and_then(Value::as_str);
                Some(named_function(name, functions())?)
            }
            // A built-in tool's, or an allowed list: answered in text.
            Some(_) => None,
            None => return Err(missing("tool_choice.type")),
        },
        Some(other) => {
            return Err(invalid_type(
                "tool_choice",
                "one of a string or an object",
                other,
            ))
        }
    };
    if let Some(f) = forced {
        let schema = f.get("parameters").cloned().unwrap_or(json!({}));
        return Ok(Some(tool(f, &schema)));
    }
    let format = match body.get("text") {
        None | Some(Value::Null) => return Ok(None),
        Some(text @ Value::Object(_)) => match text.get("format") {
            None | Some(Value::Null) => return Ok(None),
            Some(format @ Value::Object(_)) => format,
            Some(other) => return Err(invalid_type("text.format", "an object", other)),
        },
        Some(other) => return Err(invalid_type("text", "an object", other)),
    };
    let schema = format.get("schema");
    if format.get("type").and_then(Value::as_str) == Some("json_schema") {
        if !format.get("name").is_some_and(Value::is_string) {
            return Err(missing("text.format.name"));
        }
        if let Some(other) = schema.filter(|s| !s.is_object()) {
            return Err(invalid_type("text.format.schema", "an object", other));
        }
    }
    format_shape(format, schema, ("text.format", "text.format.schema"))
}

/// The function a forced `tool_choice` names among `functions` (each the object holding a
/// function's `name` and `parameters`), or OpenAI's 400 when it is none of them.
fn named_function<'t>(
    name: Option<&str>,
    mut functions: impl Iterator<Item = &'t Value>,
) -> Result<&'t Value, BadRequest> {
    functions
        .find(|f| f.get("name").and_then(Value::as_str) == name)
        .ok_or_else(|| {
            BadRequest::at(
                "tool_choice",
                Some("invalid_value"),
                format!(
                    "Invalid value for 'tool_choice': function '{}' is not one of 'tools'.",
                    name.unwrap_or_default()
                ),
            )
        })
}

/// The shape an output format asks for (chat's `response_format`, the Responses API's
/// `text.format`): JSON for `json_object`, an instance of `schema` for `json_schema`, text
/// for `text`. `at` names the format and `schema_at` where its schema belongs, in errors.
fn format_shape(
    format: &Value,
    schema: Option<&Value>,
    (at, schema_at): (&str, &str),
) -> Result<Option<Shape>, BadRequest> {
    match format.get("type") {
        Some(Value::String(kind)) => match kind.as_str() {
            "text" => Ok(None),
            "json_object" => Ok(Some(Shape::Json(
                json!({ "answer": "stampede fake completion" }).to_string(),
            ))),
            "json_schema" => match schema {
                Some(schema) => Ok(Some(Shape::Json(instance(schema, schema, 0).to_string()))),
                None => Err(missing(schema_at)),
            },
            other => Err(BadRequest::at(
                format!("{at}.type"),
                Some("invalid_value"),
                format!(
                    "Invalid value: '{other}'. Supported values are: 'json_object', \
                     'json_schema', and 'text'."
                ),
            )),
        },
        Some(other) => Err(invalid_type(&format!("{at}.type"), "a string", other)),
        None => Err(missing(&format!("{at}.type"))),
    }
}

/// OpenAI's 400 for a `tool_choice` with no `tools`.
fn choice_without_tools() -> BadRequest {
    BadRequest::at(
        "tool_choice",
        Some("invalid_value"),
        "Invalid value for 'tool_choice': 'tool_choice' is only allowed when 'tools' are \
         specified.",
    )
}

/// The shape an Anthropic Messages body asks for: a forced tool call (`tool_choice`
/// `{"type": "any"}`, or `{"type": "tool", "name": ...}`), then JSON output
/// (`output_config.format` of type `json_schema`, which the SDK's `messages.parse` sends);
/// `None` for text. A forced call with no tools, or of a tool it does not list, is refused
/// in Anthropic's words.
pub(crate) fn anthropic(body: &Value) -> Result<Option<Shape>, BadRequest> {
    let tools = body
        .get("tools")
        .and_then(Value::as_array)
        .filter(|t| !t.is_empty());
    if let Some(choice) = body.get("tool_choice") {
        let forced = match choice.get("type").and_then(Value::as_str) {
            Some("any") => Some(tools.and_then(|t| t.first()).ok_or_else(|| {
                BadRequest::new("tool_choice: tool_choice.type any needs tools".into())
            })?),
            Some("tool") => {
                let name = choice.get("name").and_then(Value::as_str);
                let found = tools
                    .into_iter()
                    .flatten()
                    .find(|t| t.get("name").and_then(Value::as_str) == name);
                Some(found.ok_or_else(|| {
                    BadRequest::new(format!(
                        "tool_choice: tool '{}' is not one of tools",
                        name.unwrap_or_default()
                    ))
                })?)
            }
            _ => None,
        };
        if let Some(t) = forced {
            let schema = t.get("input_schema").cloned().unwrap_or(json!({}));
            return Ok(Some(tool(t, &schema)));
        }
    }
    let format = body
        .pointer("/output_config/format")
        .or_else(|| body.get("output_format"))
        .filter(|f| f.get("type").and_then(Value::as_str) == Some("json_schema"));
    Ok(format.map(|f| {
        let schema = f.get("schema").unwrap_or(&Value::Null);
        Shape::Json(instance(schema, schema, 0).to_string())
    }))
}

/// A call of the tool `t` (its `name`) with arguments made from `schema`.
fn tool(t: &Value, schema: &Value) -> Shape {
    let name = t
        .get("name")
        .and_then(Value::as_str)
        .unwrap_or("tool")
        .to_string();
    let mut arguments = instance(schema, schema, 0);
    if !arguments.is_object() {
        // Tool arguments are an object, whatever the schema says.
        arguments = Value::Object(Map::new());
    }
    Shape::Tool {
        name,
        arguments: arguments.to_string(),
    }
}

/// Most values a structured answer holds (JSON output, a tool call's arguments): a schema
/// of nested lists or of `$ref`s that fan out multiplies the values it asks for at every
/// level (16 levels of `minItems: 8` in 800 bytes of request), and an answer past this is
/// cut short (the values left are `null`) rather than built whole in memory.
pub const MAX_VALUES: usize = 4_096;

/// Most items a list, or characters a string, is given to meet its `minItems` or
/// `minLength`.
const MAX_LEAST: u64 = 1_024;

/// Makes an answer from a schema within a budget of values.
struct Maker<'a> {
    /// The schema a `$ref` points into.
    root: &'a Value,
    /// Values it may still make.
    budget: usize,
}

/// The simplest value `schema` admits (see the module's doc); `root` holds the `$defs` a
/// `$ref` names (`#/$defs/Name`, or any JSON pointer into the root). At most
/// [`MAX_VALUES`] values, [`MAX_DEPTH`] deep.
pub(crate) fn instance(schema: &Value, root: &Value, depth: u32) -> Value {
    Maker {
        root,
        budget: MAX_VALUES,
    }
    .make(schema, depth)
}

impl Maker<'_> {
    fn make(&mut self, schema: &Value, depth: u32) -> Value {
        if depth > MAX_DEPTH || self.budget == 0 {
            return Value::Null;
        }
        self.budget -= 1;
        let Some(obj) = schema.as_object() else {
            return Value::Null;
        };
        if let Some(target) = obj
            .get("$ref")
            .and_then(Value::as_str)
            .and_then(|r| r.strip_prefix('#'))
            .and_then(|pointer| self.root.pointer(pointer))
        {
            return self.make(target, depth + 1);
        }
        if let Some(value) = obj.get("const") {
            return value.clone();
        }
        if let Some(first) = obj
            .get("enum")
            .and_then(Value::as_array)
            .and_then(|e| e.first())
        {
            return first.clone();
        }
        if let Some(value) = obj.get("default") {
            return value.clone();
        }
        for key in ["anyOf", "oneOf", "allOf"] {
            if let Some(first) = obj
                .get(key)
                .and_then(Value::as_array)
                .and_then(|a| a.first())
            {
                return self.make(first, depth + 1);
            }
        }
        let kind = match obj.get("type") {
            Some(Value::String(t)) => t.as_str(),
            // A list of types (`["string", "null"]`): the first.
            Some(Value::Array(types)) => types.first().and_then(Value::as_str).unwrap_or("null"),
            _ if obj.contains_key("properties") => "object",
            _ if obj.contains_key("items") || obj.contains_key("prefixItems") => "array",
            _ => "null",
        };
        match kind {
            "object" => {
                let mut out = Map::new();
                if let Some(props) = obj.get("properties").and_then(Value::as_object) {
                    for (name, prop) in props {
                        out.insert(name.clone(), self.make(prop, depth + 1));
                    }
                }
                Value::Object(out)
            }
            "array" => self.list(obj, depth),
            "string" => Value::String(string(obj)),
            "integer" => json!(integer(obj)),
            "number" => json!(number(obj)),
            "boolean" => Value::Bool(false),
            _ => Value::Null,
        }
    }

    /// A list: the `prefixItems` (a tuple), then `items` up to `minItems`, each made on
    /// its own; with `uniqueItems`, simple items told apart by their place.
    fn list(&mut self, obj: &Map<String, Value>, depth: u32) -> Value {
        let least = obj
            .get("minItems")
            .and_then(Value::as_u64)
            .unwrap_or(0)
            .min(MAX_LEAST);
        let mut out: Vec<Value> = obj
            .get("prefixItems")
            .and_then(Value::as_array)
            .map(|prefix| prefix.iter().map(|s| self.make(s, depth + 1)).collect())
            .unwrap_or_default();
        let unique = obj.get("uniqueItems").and_then(Value::as_bool) == Some(true);
        while (out.len() as u64) < least && self.budget > 0 {
            let i = out.len();
            let item = obj
                .get("items")
                .map_or(Value::Null, |s| self.make(s, depth + 1));
            out.push(if unique { distinct(item, i) } else { item });
        }
        Value::Array(out)
    }
}

/// `item`, made the `i`-th of a list whose items must differ: a number `+ i`, a string
/// with `i` after it (anything else as it is).
fn distinct(item: Value, i: usize) -> Value {
    match item {
        Value::Number(n) if n.is_i64() => json!(n.as_i64().unwrap_or(0).saturating_add(i as i64)),
        Value::Number(n) => json!(n.as_f64().unwrap_or(0.0) + i as f64),
        Value::String(s) => Value::String(format!("{s}{i}")),
        other => other,
    }
}

/// A string its schema admits: a value of its `format` (a date, a time, a UUID, an e-mail,
/// a URI), else `s` repeated to its `minLength`. (A `pattern` is not followed.)
fn string(obj: &Map<String, Value>) -> String {
    let formatted = match obj.get("format").and_then(Value::as_str) {
        Some("date-time") => Some("1970-01-01T00:00:00Z"),
        Some("date") => Some("1970-01-01"),
        Some("time") => Some("00:00:00Z"),
        Some("duration") => Some("P1D"),
        Some("uuid") => Some("00000000-0000-4000-8000-000000000000"),
        Some("email") => Some("stampede@example.com"),
        Some("hostname") => Some("example.com"),
        Some("ipv4") => Some("127.0.0.1"),
        Some("ipv6") => Some("::1"),
        Some("uri" | "url" | "iri") => Some("https://example.com/"),
        _ => None,
    };
    if let Some(text) = formatted {
        return text.to_string();
    }
    let least = obj
        .get("minLength")
        .and_then(Value::as_u64)
        .unwrap_or(0)
        .min(MAX_LEAST);
    "s".repeat(least as usize)
}

/// One end of a numeric range: the value, and whether it is itself admitted (`minimum`)
/// or not (`exclusiveMinimum`).
type Bound = Option<(f64, bool)>;

/// The bounds a numeric schema sets: its least and greatest values.
fn bounds(obj: &Map<String, Value>) -> (Bound, Bound) {
    let bound = |k: &str| obj.get(k).and_then(Value::as_f64);
    let low = match (bound("minimum"), bound("exclusiveMinimum")) {
        (Some(a), Some(b)) if b >= a => Some((b, false)),
        (Some(a), _) => Some((a, true)),
        (None, Some(b)) => Some((b, false)),
        (None, None) => None,
    };
    let high = match (bound("maximum"), bound("exclusiveMaximum")) {
        (Some(a), Some(b)) if b <= a => Some((b, false)),
        (Some(a), _) => Some((a, true)),
        (None, Some(b)) => Some((b, false)),
        (None, None) => None,
    };
    (low, high)
}

/// The integer nearest 0 within the schema's bounds and a multiple of its `multipleOf`.
fn integer(obj: &Map<String, Value>) -> i64 {
    let (low, high) = bounds(obj);
    let step = obj
        .get("multipleOf")
        .and_then(Value::as_f64)
        .filter(|m| *m >= 1.0)
        .map_or(1, |m| m as i64);
    let least = match low {
        Some((b, true)) => b.ceil() as i64,
        // Saturating: a bound past i64 (`exclusiveMinimum: 1e19`) casts to its end, and
        // one more had overflowed.
        Some((b, false)) => (b.floor() as i64).saturating_add(1),
        None => i64::MIN,
    };
    let most = match high {
        Some((b, true)) => b.floor() as i64,
        Some((b, false)) => (b.ceil() as i64).saturating_sub(1),
        None => i64::MAX,
    };
    // The multiple of `step` nearest 0 in [least, most].
    let n = 0i64.clamp(least, most.max(least));
    let up = n.div_euclid(step).saturating_mul(step);
    let mut m = if up < n { up.saturating_add(step) } else { up };
    if m > most {
        m = n;
    }
    m
}

/// The number nearest 0 within the schema's bounds (between two, their midpoint when 0 is
/// outside them and an end is excluded), a multiple of its `multipleOf` when it has one.
fn number(obj: &Map<String, Value>) -> f64 {
    let (low, high) = bounds(obj);
    let step = obj
        .get("multipleOf")
        .and_then(Value::as_f64)
        .filter(|m| *m > 0.0);
    let inside = |x: f64| {
        low.map_or(true, |(b, incl)| if incl { x >= b } else { x > b })
            && high.map_or(true, |(b, incl)| if incl { x <= b } else { x < b })
    };
    let mut candidates = vec![0.0];
    if let Some((b, _)) = low {
        candidates.push(b);
        candidates.push(b + 1.0);
        if let Some((h, _)) = high {
            candidates.push((b + h) / 2.0);
        }
    }
    if let Some((b, _)) = high {
        candidates.push(b);
        candidates.push(b - 1.0);
    }
    if let Some(m) = step {
        candidates = candidates
            .into_iter()
            .flat_map(|x| [(x / m).ceil() * m, (x / m).floor() * m])
            .collect();
    }
    candidates
        .into_iter()
        .filter(|x| x.is_finite() && inside(*x))
        .min_by(|a, b| a.abs().total_cmp(&b.abs()))
        .unwrap_or(0.0)
}

/// Piece `i` of `text` cut into `n` pieces of about equal length, on character boundaries
/// (a stream's `i`-th delta); the pieces, in order, are `text`. Past the text's length a
/// piece is empty. Cut by bytes, so each piece costs the same whatever `i` (a count of
/// characters from the start made a long stream's pieces quadratic).
pub(crate) fn piece(text: &str, i: u32, n: u32) -> &str {
    let n = u64::from(n.max(1));
    let i = u64::from(i);
    if i >= n {
        return "";
    }
    // The boundary at or before `k / n` of the text.
    let at = |k: u64| -> usize {
        let mut b = ((k as u128 * text.len() as u128) / u128::from(n)) as usize;
        while !text.is_char_boundary(b) {
            b -= 1;
        }
        b
    };
    &text[at(i)..at(i + 1)]
}

/// `body` (OpenAI's `chat.completion`, as the model's numbers make it) as `shape` has it:
/// the JSON text as the content, or the tool call, with `finish_reason` `tool_calls`.
pub(crate) fn apply(body: &mut Value, shape: &Shape, seq: u64) {
    let Some(choice) = body.pointer_mut("/choices/0") else {
        return;
    };
    match shape {
        Shape::Json(text) => {
            // The JSON is whole, whatever length the model drew: `length` made the SDK's
            // parse raise where the real answer (a short object) stops.
            choice["message"]["content"] = Value::String(text.clone());
            choice["finish_reason"] = json!("stop");
        }
        Shape::Tool { name, arguments } => {
            choice["message"] = json!({
                "role": "assistant",
                "content": null,
                "tool_calls": [{
                    "id": super::respond::id("call", seq),
                    "type": "function",
                    "function": { "name": name, "arguments": arguments },
                }],
            });
            choice["finish_reason"] = json!("tool_calls");
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A pydantic model's schema (`$defs`, `$ref`, `anyOf` for an optional field, an enum,
    /// bounds) gets a value of every property, each of the type the schema names.
    #[test]
    fn a_pydantic_schema_gets_a_value_of_every_property() {
        let schema = json!({
            "$defs": {
                "Kind": { "enum": ["bug", "feature"], "type": "string" },
                "Step": { "properties": { "n": { "type": "integer", "minimum": 1 } }, "required": ["n"], "type": "object" }
            },
            "properties": {
                "title": { "type": "string" },
                "kind": { "$ref": "#/$defs/Kind" },
                "steps": { "items": { "$ref": "#/$defs/Step" }, "type": "array", "minItems": 2 },
                "score": { "type": "number", "exclusiveMinimum": 0.5 },
                "note": { "anyOf": [{ "type": "string" }, { "type": "null" }] },
                "done": { "type": "boolean" }
            },
            "required": ["title", "kind", "steps", "score", "note", "done"],
            "type": "object"
        });
        let v = instance(&schema, &schema, 0);
        assert_eq!(
            v,
            json!({ "title": "", "kind": "bug", "steps": [{ "n": 1 }, { "n": 1 }], "score": 1.5, "note": "", "done": false })
        );
    }

    /// Ten levels of nested models, each optional and in a list as pydantic writes them (a
    /// property, `anyOf`, the list, its `$ref`): the innermost still gets its values.
    #[test]
    fn ten_levels_of_nested_models_are_made_whole() {
        let mut defs = serde_json::Map::new();
        for level in 0..10 {
            let mut properties = json!({ "name": { "type": "string" } });
            if level < 9 {
                properties["subs"] = json!({ "anyOf": [
                    { "type": "array", "minItems": 1, "items": { "$ref": format!("#/$defs/L{}", level + 1) } },
                    { "type": "null" } ] });
            }
            defs.insert(
                format!("L{level}"),
                json!({ "type": "object", "properties": properties, "required": ["name"] }),
            );
        }
        let schema = json!({ "$defs": defs, "$ref": "#/$defs/L0" });
        let mut v = instance(&schema, &schema, 0);
        for _ in 0..9 {
            assert_eq!(v["name"], "", "{v}");
            v = v["subs"][0].clone();
        }
        assert_eq!(v, json!({ "name": "" }));
    }

    /// Bounds past i64 saturate: `exclusiveMinimum: 1e19` had overflowed (a panic in debug
    /// builds, a wrapped 0 that broke the schema in release).
    #[test]
    fn integer_bounds_past_i64_saturate() {
        let high = json!({ "type": "integer", "exclusiveMinimum": 1e19 });
        assert_eq!(instance(&high, &high, 0), json!(i64::MAX));
        let low = json!({ "type": "integer", "exclusiveMaximum": -1e19 });
        assert_eq!(instance(&low, &low, 0), json!(i64::MIN));
    }

    /// A schema that names itself ends at the depth bound, not in a stack overflow.
    #[test]
    fn a_recursive_schema_ends() {
        let schema = json!({
            "$defs": { "Node": { "type": "object", "properties": { "next": { "$ref": "#/$defs/Node" } } } },
            "$ref": "#/$defs/Node"
        });
        let v = instance(&schema, &schema, 0);
        assert!(v.is_object());
    }

    #[test]
    fn a_forced_tool_is_called_and_a_free_one_is_not() {
        let tools = json!([
            { "type": "function", "function": { "name": "search", "parameters": { "type": "object", "properties": { "q": { "type": "string" } } } } },
            { "type": "function", "function": { "name": "fetch", "parameters": { "type": "object", "properties": { "id": { "type": "integer" } } } } }
        ]);
        let required = openai(&json!({ "tools": tools, "tool_choice": "required" })).unwrap();
        assert_eq!(
            required,
            Some(Shape::Tool {
                name: "search".into(),
                arguments: r#"{"q":""}"#.into()
            })
        );
        let named = openai(
            &json!({ "tools": tools, "tool_choice": { "type": "function", "function": { "name": "fetch" } } }),
        )
        .unwrap();
        assert_eq!(
            named,
            Some(Shape::Tool {
                name: "fetch".into(),
                arguments: r#"{"id":0}"#.into()
            })
        );
        assert_eq!(
            openai(&json!({ "tools": tools, "tool_choice": "auto" })).unwrap(),
            None
        );
        assert_eq!(openai(&json!({ "tools": tools })).unwrap(), None);
        let any = anthropic(&json!({
            "tools": [{ "name": "lookup", "input_schema": { "type": "object", "properties": { "city": { "type": "string" } } } }],
            "tool_choice": { "type": "any" }
        })).unwrap();
        assert_eq!(
            any,
            Some(Shape::Tool {
                name: "lookup".into(),
                arguments: r#"{"city":""}"#.into()
            })
        );
    }

    #[test]
    fn response_formats_give_json() {
        let Some(Shape::Json(object)) =
            openai(&json!({ "response_format": { "type": "json_object" } })).unwrap()
        else {
            panic!("json_object gives JSON");
        };
        assert!(serde_json::from_str::<Value>(&object).unwrap().is_object());
        let schema = openai(
            &json!({ "response_format": { "type": "json_schema", "json_schema": { "name": "x", "schema": { "type": "object", "properties": { "a": { "type": "integer" } } } } } }),
        )
        .unwrap();
        assert_eq!(schema, Some(Shape::Json(r#"{"a":0}"#.into())));
        assert_eq!(
            openai(&json!({ "response_format": { "type": "text" } })).unwrap(),
            None
        );
    }

    /// The pieces of a text, in order, are the text, whatever their count.
    #[test]
    fn pieces_make_the_text() {
        for text in ["", "a", r#"{"q":"été"}"#, &"x".repeat(100)] {
            for n in [1, 2, 3, 7, 200] {
                let joined: String = (0..n).map(|i| piece(text, i, n)).collect();
                assert_eq!(joined, text, "{n}");
            }
        }
    }

    /// A schema that asks for more values than an answer may hold (16 levels of
    /// `minItems: 8`, 8^16 values in 800 bytes) gets an answer cut short, in a bounded time
    /// and size: it had run the server out of memory.
    #[test]
    fn a_schema_bomb_is_cut_short() {
        let mut schema = json!({ "type": "integer" });
        for _ in 0..16 {
            schema = json!({ "type": "array", "items": schema, "minItems": 8 });
        }
        let text = instance(&schema, &schema, 0).to_string();
        assert!(text.len() < 64 * 1024, "{} bytes", text.len());
        let fan: Map<String, Value> = (0..10)
            .map(|i| (format!("p{i}"), json!({ "$ref": "#/$defs/L" })))
            .collect();
        let schema = json!({ "$defs": { "L": { "type": "object", "properties": fan } }, "$ref": "#/$defs/L" });
        let text = instance(&schema, &schema, 0).to_string();
        assert!(text.len() < 256 * 1024, "{} bytes", text.len());
    }

    /// Formats, exclusive bounds, multiples, tuples and unique items get values the schema
    /// admits, as pydantic checks them.
    #[test]
    fn constraints_are_met() {
        let schema = json!({
            "type": "object",
            "properties": {
                "at": { "type": "string", "format": "date-time" },
                "id": { "type": "string", "format": "uuid" },
                "ratio": { "type": "number", "exclusiveMinimum": 0.5, "exclusiveMaximum": 0.7 },
                "below": { "type": "integer", "exclusiveMaximum": 0 },
                "step": { "type": "integer", "minimum": 7, "multipleOf": 5 },
                "pair": { "type": "array", "prefixItems": [{ "type": "integer" }, { "type": "string" }] },
                "tags": { "type": "array", "items": { "type": "integer" }, "minItems": 3, "uniqueItems": true }
            }
        });
        let v = instance(&schema, &schema, 0);
        assert_eq!(v["at"], "1970-01-01T00:00:00Z");
        assert_eq!(v["id"].as_str().unwrap().len(), 36);
        let ratio = v["ratio"].as_f64().unwrap();
        assert!(ratio > 0.5 && ratio < 0.7, "{ratio}");
        assert_eq!(v["below"], -1);
        assert_eq!(v["step"], 10);
        assert_eq!(v["pair"], json!([0, ""]));
        assert_eq!(v["tags"], json!([0, 1, 2]));
    }

    /// What the real APIs refuse is refused, naming the parameter.
    #[test]
    fn a_choice_or_format_the_api_refuses_is_refused() {
        let tools = json!([{ "type": "function", "function": { "name": "search" } }]);
        for body in [
            json!({ "tool_choice": "required" }),
            json!({ "tools": [], "tool_choice": "required" }),
            json!({ "tools": tools, "tool_choice": { "type": "function", "function": { "name": "nope" } } }),
            json!({ "response_format": { "type": "json_schema" } }),
            json!({ "response_format": { "type": "bogus" } }),
        ] {
            let e = openai(&body).expect_err(&body.to_string());
            assert!(e.param.is_some(), "{body}");
        }
        for body in [
            json!({ "tool_choice": { "type": "any" } }),
            json!({ "tools": [{ "name": "a" }], "tool_choice": { "type": "tool", "name": "b" } }),
        ] {
            assert!(anthropic(&body).is_err(), "{body}");
        }
        // The SDK's messages.parse asks for JSON by output_config.
        let json_out = anthropic(
            &json!({ "output_config": { "format": { "type": "json_schema", "schema": { "type": "object", "properties": { "a": { "type": "boolean" } } } } } }),
        );
        assert_eq!(
            json_out.unwrap(),
            Some(Shape::Json(r#"{"a":false}"#.into()))
        );
    }
}
