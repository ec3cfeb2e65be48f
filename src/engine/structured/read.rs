//! Reading a structured reply back into the text the methods' parsers read, as its shape reads
//! it: the JSON found in the reply, cut-off JSON closed, names restored from their enum forms.

use super::generic::GENERIC;
use super::shape::{ReplyShape, json_text};
use crate::llm::ReplySchema;
use serde_json::Value;

/// The result of reading a structured reply back.
#[derive(Debug, PartialEq)]
pub(crate) struct Reading {
    /// The reply as the method's parser reads it.
    pub text: String,
    /// How it was read, for the trace (e.g. the JSON was cut off and closed, an answer was not
    /// among the choices).
    pub notes: Vec<String>,
}

/// Reads `reply`, asked for as `schema`, into the text the method's parser reads, as its shape
/// (a generic one, or one of the method's `shapes`) reads it; `None` when it is not JSON of
/// the shape (the parser then reads the reply as it is). A shape no one defines is read as
/// its JSON text.
pub(crate) fn read(schema: &ReplySchema, reply: &str, shapes: &[ReplyShape]) -> Option<Reading> {
    let body = json_body(reply)?;
    // A raw control character inside a string (llama-cpp-python's grammar for a string with
    // `maxLength` lets a newline through) is not JSON, but is plainly the model's text.
    let escaped = escape_raw_controls(body);
    let body = escaped.as_deref().unwrap_or(body);
    let (mut value, mut notes) = match serde_json::from_str::<Value>(body) {
        Ok(v) => (v, Vec::new()),
        // Cut off at the token limit: closed where it stopped, and read if that parses.
        Err(e) if e.is_eof() => (
            serde_json::from_str::<Value>(&close_truncated(body)).ok()?,
            vec!["the JSON reply was cut off (token limit); read as far as it went".to_string()],
        ),
        Err(_) => return None,
    };
    restore_names(&mut value, &schema.renamed);
    let read = GENERIC.iter().chain(shapes).find(|s| s.name == schema.name).map_or(json_text as _, |s| s.read);
    let text = read(value, schema, &mut notes)?;
    Some(Reading { text, notes })
}

/// `text` with each control character inside a JSON string written as its escape; `None` when
/// there is none (the text is read as it is).
fn escape_raw_controls(text: &str) -> Option<String> {
    let (mut in_string, mut escaped, mut found) = (false, false, false);
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        match (in_string, escaped, c) {
            (true, true, _) => escaped = false,
            (true, false, '\\') => escaped = true,
            (true, false, '"') => in_string = false,
            (true, false, c) if c.is_control() => {
                found = true;
                out.push_str(&format!("\\u{:04x}", c as u32));
                continue;
            }
            (false, _, '"') => in_string = true,
            _ => {}
        }
        out.push(c);
    }
    found.then_some(out)
}

/// Every string of `value` that is a name's form in the schema's enums (see
/// [`super::shape::enum_form`]) becomes the name again.
fn restore_names(value: &mut Value, renamed: &[(String, String)]) {
    if renamed.is_empty() {
        return;
    }
    match value {
        Value::String(s) => {
            if let Some((_, name)) = renamed.iter().find(|(sent, _)| sent == s) {
                *s = name.clone();
            }
        }
        Value::Array(items) => items.iter_mut().for_each(|v| restore_names(v, renamed)),
        Value::Object(fields) => fields.values_mut().for_each(|v| restore_names(v, renamed)),
        _ => {}
    }
}

/// The JSON object in a reply: the whole reply, or inside a ```json fence some models add.
fn json_body(reply: &str) -> Option<&str> {
    let t = reply.trim();
    let t = match t.strip_prefix("```") {
        Some(rest) => {
            let rest = rest.trim_start_matches(|c: char| c.is_ascii_alphabetic());
            rest.rsplit_once("```").map_or(rest, |(inner, _)| inner).trim()
        }
        None => t,
    };
    t.starts_with('{').then_some(t)
}

/// Closes a JSON text cut off mid-way: an open string, then the open arrays and objects (a
/// dangling key or comma is dropped first).
pub(super) fn close_truncated(text: &str) -> String {
    let mut out = text.to_string();
    let (mut stack, mut in_string, mut escaped) = (Vec::new(), false, false);
    for c in text.chars() {
        match (in_string, escaped, c) {
            (true, true, _) => escaped = false,
            (true, false, '\\') => escaped = true,
            (true, false, '"') => in_string = false,
            (true, false, _) => {}
            (false, _, '"') => in_string = true,
            (false, _, '{') => stack.push('}'),
            (false, _, '[') => stack.push(']'),
            (false, _, '}' | ']') => {
                stack.pop();
            }
            _ => {}
        }
    }
    if escaped {
        out.pop();
    }
    if in_string {
        out.push('"');
    }
    // `{"a": 1, "b` → `{"a": 1`; `[1, ` → `[1`; `{"a": ` → `{`.
    loop {
        let trimmed = out.trim_end().to_string();
        if let Some(rest) = trimmed.strip_suffix(',') {
            out = rest.to_string();
        } else if let Some(rest) = trimmed.strip_suffix(':') {
            // Drop the key that had no value.
            let rest = rest.trim_end();
            out = match rest.strip_suffix('"').and_then(|s| s.rfind('"')) {
                Some(start) => rest[..start].to_string(),
                None => rest.to_string(),
            };
        } else {
            break;
        }
    }
    // A key with no colon yet at the end of an object (`{"a": 1, "b"`).
    if stack.last() == Some(&'}') {
        let trimmed = out.trim_end();
        let before_key = trimmed.strip_suffix('"').and_then(|s| s.rfind('"')).map(|i| trimmed[..i].trim_end());
        if let Some(before) = before_key
            && (before.ends_with(',') || before.ends_with('{'))
        {
            out = before.trim_end_matches(',').to_string();
        }
    }
    while let Some(close) = stack.pop() {
        out.push(close);
    }
    out
}
