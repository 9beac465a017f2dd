//! What Anthropic's API refuses of a Messages body (or of a token count's, which is the same
//! body without `max_tokens`), in its words.

use serde_json::Value;

/// What Anthropic's API refuses of a Messages body beyond its shape, in its words (its
/// messages name the field by a dotted path, `messages.0.role`): the model and (with
/// `max_tokens_required`, a Messages request's) `max_tokens` are required, roles are
/// `user` or `assistant`, content and `system` are text or blocks.
pub(super) fn check_messages_body(v: &Value, max_tokens_required: bool) -> Result<(), String> {
    let Value::Object(body) = v else {
        return Err("Input should be a valid dictionary or object to extract fields from".into());
    };
    match body.get("model") {
        None => return Err("model: Field required".into()),
        Some(Value::String(name)) if !name.is_empty() => {}
        Some(Value::String(_)) => {
            return Err("model: String should have at least 1 character".into())
        }
        Some(_) => return Err("model: Input should be a valid string".into()),
    }
    match body.get("max_tokens") {
        None if !max_tokens_required => {}
        None => return Err("max_tokens: Field required".into()),
        Some(Value::Number(n)) if n.as_u64().is_some_and(|n| n >= 1) => {}
        Some(Value::Number(n)) if n.as_i64().is_some_and(|n| n < 1) => {
            return Err("max_tokens: Input should be greater than or equal to 1".into())
        }
        Some(_) => return Err("max_tokens: Input should be a valid integer".into()),
    }
    let blocks = |at: &str, content: &Value, what: &str| -> Result<(), String> {
        match content {
            Value::String(_) => Ok(()),
            Value::Array(items) => {
                for (i, item) in items.iter().enumerate() {
                    if !item.get("type").is_some_and(Value::is_string) {
                        return Err(format!(
                            "{at}.{i}: Input should be a content block, an object with a `type`"
                        ));
                    }
                }
                Ok(())
            }
            _ => Err(format!(
                "{at}: Input should be a valid string or a list of {what}"
            )),
        }
    };
    if let Some(system) = body.get("system") {
        blocks("system", system, "text blocks")?;
    }
    if let Some(Value::Array(messages)) = body.get("messages") {
        for (i, m) in messages.iter().enumerate() {
            match m.get("role") {
                Some(Value::String(role)) if role == "user" || role == "assistant" => {}
                None => return Err(format!("messages.{i}.role: Field required")),
                Some(_) => {
                    return Err(format!(
                        "messages.{i}.role: Input should be 'user' or 'assistant'"
                    ))
                }
            }
            match m.get("content") {
                None => return Err(format!("messages.{i}.content: Field required")),
                Some(content) => {
                    blocks(&format!("messages.{i}.content"), content, "content blocks")?
                }
            }
        }
    }
    Ok(())
}
