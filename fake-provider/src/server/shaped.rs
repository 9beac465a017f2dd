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

/// How deep [`instance`] follows nested schemas (and `$ref`s, which may recurse): past it a
/// value is `null`.
const MAX_DEPTH: u32 = 16;

/// The shape an OpenAI chat body asks for: a forced tool call (`tool_choice` `required`, or
/// naming a function) first, then `response_format`; `None` for text.
pub(crate) fn openai(body: &Value) -> Option<Shape> {
    let tools = body.get("tools").and_then(Value::as_array);
    let function = |tool: &Value| tool.get("function").cloned().unwrap_or(Value::Null);
    let forced = match body.get("tool_choice") {
        Some(Value::String(s)) if s == "required" => tools.and_then(|t| t.first()).map(function),
        Some(choice @ Value::Object(_)) => {
            let name = choice.pointer("/function/name").and_then(Value::as_str);
            tools
                .into_iter()
                .flatten()
                .map(function)
                .find(|f| f.get("name").and_then(Value::as_str) == name)
        }
        _ => None,
    };
    if let Some(f) = forced {
        let schema = f.get("parameters").cloned().unwrap_or(json!({}));
        return Some(tool(&f, &schema));
    }
    let format = body.get("response_format")?;
    match format.get("type").and_then(Value::as_str)? {
        "json_object" => Some(Shape::Json(
            json!({ "answer": "stampede fake completion" }).to_string(),
        )),
        "json_schema" => {
            let schema = format
                .pointer("/json_schema/schema")
                .unwrap_or(&Value::Null);
            Some(Shape::Json(instance(schema, schema, 0).to_string()))
        }
        _ => None,
    }
}

/// The shape an Anthropic Messages body asks for: a forced tool call (`tool_choice`
/// `{"type": "any"}`, or `{"type": "tool", "name": ...}`); `None` for text.
pub(crate) fn anthropic(body: &Value) -> Option<Shape> {
    let tools = body.get("tools").and_then(Value::as_array)?;
    let choice = body.get("tool_choice")?;
    let t = match choice.get("type").and_then(Value::as_str)? {
        "any" => tools.first()?,
        "tool" => {
            let name = choice.get("name").and_then(Value::as_str);
            tools
                .iter()
                .find(|t| t.get("name").and_then(Value::as_str) == name)?
        }
        _ => return None,
    };
    let schema = t.get("input_schema").cloned().unwrap_or(json!({}));
    Some(tool(t, &schema))
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

/// The simplest value `schema` admits (see the module's doc); `root` holds the `$defs` a
/// `$ref` names (`#/$defs/Name`, or any JSON pointer into the root).
pub(crate) fn instance(schema: &Value, root: &Value, depth: u32) -> Value {
    if depth > MAX_DEPTH {
        return Value::Null;
    }
    let deeper = |s: &Value| instance(s, root, depth + 1);
    let Some(obj) = schema.as_object() else {
        return Value::Null;
    };
    if let Some(target) = obj
        .get("$ref")
        .and_then(Value::as_str)
        .and_then(|r| r.strip_prefix('#'))
        .and_then(|pointer| root.pointer(pointer))
    {
        return deeper(target);
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
            return deeper(first);
        }
    }
    let kind = match obj.get("type") {
        Some(Value::String(t)) => t.as_str(),
        // A list of types (`["string", "null"]`): the first.
        Some(Value::Array(types)) => types.first().and_then(Value::as_str).unwrap_or("null"),
        _ if obj.contains_key("properties") => "object",
        _ if obj.contains_key("items") => "array",
        _ => "null",
    };
    match kind {
        "object" => {
            let mut out = Map::new();
            if let Some(props) = obj.get("properties").and_then(Value::as_object) {
                for (name, prop) in props {
                    out.insert(name.clone(), deeper(prop));
                }
            }
            Value::Object(out)
        }
        "array" => {
            let least = obj
                .get("minItems")
                .and_then(Value::as_u64)
                .unwrap_or(0)
                .min(8);
            let item = obj.get("items").map_or(Value::Null, deeper);
            Value::Array(vec![item; least as usize])
        }
        "string" => {
            let least = obj
                .get("minLength")
                .and_then(Value::as_u64)
                .unwrap_or(0)
                .min(64);
            Value::String("s".repeat(least as usize))
        }
        "integer" => json!(least_number(obj).ceil() as i64),
        "number" => json!(least_number(obj)),
        "boolean" => Value::Bool(false),
        _ => Value::Null,
    }
}

/// The number nearest 0 a numeric schema's bounds admit (`minimum`, `exclusiveMinimum`,
/// `maximum`).
fn least_number(obj: &Map<String, Value>) -> f64 {
    let bound = |k: &str| obj.get(k).and_then(Value::as_f64);
    let mut n = 0.0f64;
    if let Some(min) = bound("minimum") {
        n = n.max(min);
    }
    if let Some(min) = bound("exclusiveMinimum") {
        n = n.max(min + 1.0);
    }
    if let Some(max) = bound("maximum") {
        n = n.min(max);
    }
    n
}

/// Piece `i` of `text` cut into `n` pieces of about equal length, on character boundaries
/// (a stream's `i`-th delta); the pieces, in order, are `text`. Past the text's length a
/// piece is empty.
pub(crate) fn piece(text: &str, i: u32, n: u32) -> &str {
    let chars = text.chars().count();
    let n = n.max(1) as usize;
    let at = |k: usize| -> usize {
        let c = (k * chars).div_ceil(n).min(chars);
        text.char_indices().nth(c).map_or(text.len(), |(b, _)| b)
    };
    let i = i as usize;
    if i >= n {
        return "";
    }
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
            choice["message"]["content"] = Value::String(text.clone());
        }
        Shape::Tool { name, arguments } => {
            choice["message"] = json!({
                "role": "assistant",
                "content": null,
                "tool_calls": [{
                    "id": format!("call_{seq:012}"),
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
        let required = openai(&json!({ "tools": tools, "tool_choice": "required" }));
        assert_eq!(
            required,
            Some(Shape::Tool {
                name: "search".into(),
                arguments: r#"{"q":""}"#.into()
            })
        );
        let named = openai(
            &json!({ "tools": tools, "tool_choice": { "type": "function", "function": { "name": "fetch" } } }),
        );
        assert_eq!(
            named,
            Some(Shape::Tool {
                name: "fetch".into(),
                arguments: r#"{"id":0}"#.into()
            })
        );
        assert_eq!(
            openai(&json!({ "tools": tools, "tool_choice": "auto" })),
            None
        );
        assert_eq!(openai(&json!({ "tools": tools })), None);
        let any = anthropic(&json!({
            "tools": [{ "name": "lookup", "input_schema": { "type": "object", "properties": { "city": { "type": "string" } } } }],
            "tool_choice": { "type": "any" }
        }));
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
            openai(&json!({ "response_format": { "type": "json_object" } }))
        else {
            panic!("json_object gives JSON");
        };
        assert!(serde_json::from_str::<Value>(&object).unwrap().is_object());
        let schema = openai(
            &json!({ "response_format": { "type": "json_schema", "json_schema": { "name": "x", "schema": { "type": "object", "properties": { "a": { "type": "integer" } } } } } }),
        );
        assert_eq!(schema, Some(Shape::Json(r#"{"a":0}"#.into())));
        assert_eq!(
            openai(&json!({ "response_format": { "type": "text" } })),
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
}
