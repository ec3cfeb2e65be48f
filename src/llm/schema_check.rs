//! Whether a reply fits the JSON schema it was asked for, over the subset of JSON Schema the
//! engine's reply shapes use (object, array, string, number, integer, boolean, enum, anyOf,
//! required, additionalProperties, minItems/maxItems, maxLength). A server that accepts a
//! `response_format` but does not enforce it (a flat `json_schema` on llama-server, a schema
//! llama-cpp-python could not turn into a grammar) is told apart by a reply that does not fit.

use serde_json::Value;

/// Where `reply` first departs from `schema`, in words; `None` when it fits. A reply that is
/// not JSON at all departs at the start.
pub(crate) fn violation(schema: &Value, reply: &str) -> Option<String> {
    let body = reply.trim();
    let body = body.strip_prefix("```json").or_else(|| body.strip_prefix("```")).unwrap_or(body);
    let body = body.strip_suffix("```").unwrap_or(body).trim();
    match serde_json::from_str::<Value>(body) {
        Ok(value) => check(schema, &value, "the reply"),
        Err(_) => Some("the reply is not JSON".into()),
    }
}

/// Where `value` first departs from `schema`, in words; `None` when it fits.
pub(crate) fn departure(schema: &Value, value: &Value) -> Option<String> {
    check(schema, value, "the reply")
}

fn check(schema: &Value, value: &Value, at: &str) -> Option<String> {
    if let Some(options) = schema.get("anyOf").and_then(Value::as_array) {
        return options.iter().all(|o| check(o, value, at).is_some()).then(|| format!("{at} fits none of its forms"));
    }
    if let Some(allowed) = schema.get("enum").and_then(Value::as_array) {
        return (!allowed.contains(value)).then(|| format!("{at} is not one of the choices"));
    }
    let fits_type = match schema.get("type").and_then(Value::as_str) {
        Some("object") => value.is_object(),
        Some("array") => value.is_array(),
        Some("string") => value.is_string(),
        Some("number") => value.is_number(),
        Some("integer") => value.is_i64() || value.is_u64(),
        Some("boolean") => value.is_boolean(),
        _ => true,
    };
    if !fits_type {
        return Some(format!("{at} is not of type {}", schema["type"]));
    }
    let limit = |key: &str| schema.get(key).and_then(Value::as_u64).map(|n| n as usize);
    match value {
        Value::Object(fields) => {
            let properties = schema.get("properties").and_then(Value::as_object);
            for name in schema.get("required").and_then(Value::as_array).into_iter().flatten().filter_map(Value::as_str)
            {
                if !fields.contains_key(name) {
                    return Some(format!("{at} has no \"{name}\""));
                }
            }
            for (name, field) in fields {
                let departs = match properties.and_then(|p| p.get(name)) {
                    Some(s) => check(s, field, &format!("\"{name}\"")),
                    None if schema.get("additionalProperties") == Some(&Value::Bool(false)) => {
                        Some(format!("{at} has a field \"{name}\" the schema does not allow"))
                    }
                    None => None,
                };
                if departs.is_some() {
                    return departs;
                }
            }
            None
        }
        Value::Array(items) => {
            if limit("maxItems").is_some_and(|max| items.len() > max) {
                return Some(format!("{at} has more items than allowed"));
            }
            if limit("minItems").is_some_and(|min| items.len() < min) {
                return Some(format!("{at} has fewer items than required"));
            }
            let item = schema.get("items")?;
            items.iter().find_map(|v| check(item, v, &format!("an item of {at}")))
        }
        Value::String(text) => {
            limit("maxLength").filter(|&max| text.chars().count() > max).map(|_| format!("{at} is longer than allowed"))
        }
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn replies_that_fit_and_where_others_depart() {
        let schema = json!({"type": "object", "properties": {
            "reason": {"type": "string", "maxLength": 5},
            "answer": {"type": "array", "items": {"enum": ["a", "unknown"]}, "minItems": 1, "maxItems": 2}},
            "required": ["reason", "answer"], "additionalProperties": false});
        assert_eq!(violation(&schema, r#"{"reason": "ok", "answer": ["a"]}"#), None);
        assert_eq!(violation(&schema, "```json\n{\"reason\": \"\", \"answer\": [\"unknown\"]}\n```"), None);
        let departs = |reply: &str| violation(&schema, reply).unwrap();
        assert_eq!(departs("The answer is a."), "the reply is not JSON");
        assert_eq!(departs(r#"{"answer": ["a"]}"#), "the reply has no \"reason\"");
        assert_eq!(departs(r#"{"reason": "", "answer": ["b"]}"#), "an item of \"answer\" is not one of the choices");
        assert_eq!(departs(r#"{"reason": "", "answer": []}"#), "\"answer\" has fewer items than required");
        assert_eq!(departs(r#"{"reason": "too long", "answer": ["a"]}"#), "\"reason\" is longer than allowed");
        assert_eq!(
            departs(r#"{"reason": "", "answer": ["a"], "x": 1}"#),
            "the reply has a field \"x\" the schema does not allow"
        );
        let any = json!({"anyOf": [{"type": "integer"}, {"type": "boolean"}]});
        assert_eq!(violation(&any, "true"), None);
        assert_eq!(violation(&any, "\"x\"").unwrap(), "the reply fits none of its forms");
    }
}
