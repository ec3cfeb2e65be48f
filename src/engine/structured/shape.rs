//! What a reply shape is: a value a method defines (its schema built from what the call offers,
//! the line that shows the model its shape, how a reply of it reads back), and a call's reply,
//! the shape with what that call offers. The engine's generic shapes are in `generic.rs`; each
//! method's own are in its folder, listed in its registry entry.

use crate::llm::ReplySchema;
use serde_json::{Value, json};
use std::fmt;

/// What a call offers the model to choose among, which its reply shape's schema is built from:
/// lists of names (candidates, options, groups; which list means what is the shape's business),
/// a number of numbered items, and the most a reply may hold.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Offer<'a> {
    /// The lists of names the schema's enums offer.
    pub lists: Vec<&'a [String]>,
    /// How many numbered items the prompt lists (a reply chooses among `1..=count`).
    pub count: usize,
    /// The most items a reply may choose.
    pub width: usize,
}

impl<'a> Offer<'a> {
    /// One list of names, up to `width` of them chosen.
    pub fn names(list: &'a [String], width: usize) -> Self {
        Self { lists: vec![list], count: 0, width }
    }

    /// Up to `width` of `count` numbered items.
    pub fn numbered(count: usize, width: usize) -> Self {
        Self { lists: Vec::new(), count, width }
    }
}

/// Whether a call of a shape reasons before it answers, and how its answer is then read.
#[derive(Clone, Copy)]
pub enum Reasons {
    /// Asked as JSON of its shape.
    No,
    /// Asked as free text (its prose exemplars kept); a reply without an answer in braces has
    /// its answer extracted into this shape (the generic answer).
    Then(&'static ReplyShape),
    /// Asked as free text; a reply that `readable` cannot read has it extracted into this same
    /// shape (GoG's thought and action).
    ThenItself { readable: fn(&str) -> bool },
}

/// A reply shape: what a call asks the model's reply to be. Under structured replies the
/// request carries its schema and the prompt shows its shape; a reply that is JSON of the shape
/// reaches the method as `read` writes it, one that is not as the model wrote it (with a note
/// in the trace), so the method reads both.
#[derive(Clone, Copy)]
pub struct ReplyShape {
    /// The schema's name: `[a-z_]`, neither a generic shape's nor another method's.
    pub name: &'static str,
    /// The JSON schema a reply must follow (an object), built from what the call offers.
    pub schema: fn(&Offer<'_>) -> Value,
    /// The reply's shape as the prompt shows it, e.g. `{"time_zone": "<a zone>"}`.
    pub shape: fn(&Offer<'_>) -> String,
    /// A reply of the shape (names restored from their enum forms) as the method's parser reads
    /// it; `None` when it is not of the shape. [`json_text`] passes it on as its JSON text.
    pub read: fn(Value, &ReplySchema, &mut Vec<String>) -> Option<String>,
    /// The offer's first list travels with the request, for reading the reply against it
    /// (entity scores in the prompt's order, the options a judgment may answer).
    pub labelled: bool,
    pub reasons: Reasons,
}

impl fmt::Debug for ReplyShape {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ReplyShape").field("name", &self.name).finish_non_exhaustive()
    }
}

impl ReplyShape {
    /// A shape read back as its JSON text, when the reply fits `schema`: what a method from
    /// outside usually wants (it reads its own JSON).
    pub const fn json(name: &'static str, schema: fn(&Offer<'_>) -> Value, shape: fn(&Offer<'_>) -> String) -> Self {
        Self { name, schema, shape, read: json_text, labelled: false, reasons: Reasons::No }
    }

    /// Whether `other` is this shape: the same name, the same schema and shape line for a probe
    /// offer (two lists, a count and a width that differ), and the same reading of what it
    /// is sent and of reasoning first.
    pub(crate) fn same_as(&self, other: &ReplyShape) -> bool {
        let (a, b) = (["a".to_string()], ["b".to_string(), "c".to_string()]);
        let probe = Offer { lists: vec![&a, &b], count: 3, width: 2 };
        let reasons = |s: &ReplyShape| match s.reasons {
            Reasons::No => 0,
            Reasons::Then(_) => 1,
            Reasons::ThenItself { .. } => 2,
        };
        self.name == other.name
            && self.labelled == other.labelled
            && reasons(self) == reasons(other)
            && (self.schema)(&probe) == (other.schema)(&probe)
            && (self.shape)(&probe) == (other.shape)(&probe)
    }
}

/// A reply that fits its schema, as its JSON text (compact, in the order written), its names as
/// they are (not the forms the enums sent).
pub fn json_text(value: Value, schema: &ReplySchema, _: &mut Vec<String>) -> Option<String> {
    // The schema holds the forms sent: checked as the model wrote it.
    let mut sent = value.clone();
    to_forms(&mut sent, &schema.renamed);
    if crate::llm::schema_check::departure(&schema.schema, &sent).is_some() {
        return None;
    }
    Some(value.to_string())
}

/// Every string of `value` that is a renamed name becomes the form its enum sent.
fn to_forms(value: &mut Value, renamed: &[(String, String)]) {
    match value {
        Value::String(s) => {
            if let Some((form, _)) = renamed.iter().find(|(_, name)| name == s) {
                *s = form.clone();
            }
        }
        Value::Array(items) => items.iter_mut().for_each(|v| to_forms(v, renamed)),
        Value::Object(fields) => fields.values_mut().for_each(|v| to_forms(v, renamed)),
        _ => {}
    }
}

/// One call's reply: its shape and what the call offers.
#[derive(Clone, Debug)]
pub struct Reply<'a> {
    pub shape: &'a ReplyShape,
    pub offer: Offer<'a>,
}

impl<'a> From<&'a ReplyShape> for Reply<'a> {
    fn from(shape: &'a ReplyShape) -> Self {
        Self { shape, offer: Offer::default() }
    }
}

impl<'a> Reply<'a> {
    pub fn new(shape: &'a ReplyShape, offer: Offer<'a>) -> Self {
        Self { shape, offer }
    }

    pub fn name(&self) -> &'static str {
        self.shape.name
    }

    /// The JSON schema a reply must follow.
    pub fn schema(&self) -> Value {
        (self.shape.schema)(&self.offer)
    }

    /// Whether a call of this shape reasons before it answers (chain of thought, an answer from
    /// the model's own knowledge, GoG's thoughts): under structured replies it is asked as free
    /// text, its prose exemplars kept, and only a reply that cannot be read so has its answer
    /// extracted by a second call constrained to [`Reply::extracted`] (reason, then format: a
    /// JSON string field is a poor scratchpad for a small model).
    pub fn reasons_first(&self) -> bool {
        !matches!(self.shape.reasons, Reasons::No)
    }

    /// The reply a reason-first reply's answer is extracted into.
    pub fn extracted(&self) -> Reply<'a> {
        match self.shape.reasons {
            Reasons::Then(shape) => Reply::from(shape),
            Reasons::No | Reasons::ThenItself { .. } => self.clone(),
        }
    }

    /// What the request carries: the schema, and the names a reply is read against.
    pub fn reply_schema(&self) -> ReplySchema {
        let labels = match (self.shape.labelled, self.offer.lists.first()) {
            (true, Some(list)) => list.to_vec(),
            _ => Vec::new(),
        };
        ReplySchema { name: self.name().into(), schema: self.schema(), labels, renamed: self.renamed() }
    }

    /// The names its enums hold in another form (see [`enum_form`]): (form sent, name).
    fn renamed(&self) -> Vec<(String, String)> {
        Forms::of(&self.offer.lists).changed.into_iter().map(|(name, form)| (form, name.to_string())).collect()
    }

    /// The line appended to the prompt in structured mode: the reply's JSON shape, which takes
    /// the place of the exemplars' brace format.
    pub fn instruction(&self) -> String {
        let shape = (self.shape.shape)(&self.offer);
        format!(
            "\n\nReply with one JSON object only, of this shape (it replaces the format of the examples above):\n{shape}\n"
        )
    }
}

impl PartialEq for Reply<'_> {
    /// Same name, same schema.
    fn eq(&self, other: &Self) -> bool {
        self.name() == other.name() && self.schema() == other.schema()
    }
}

/// Names as a schema's `enum` holds them, deduplicated in order (an `enum` lists each value
/// once): each name with its form in the enum (see [`Forms`]).
pub(crate) fn distinct(items: &[String]) -> Vec<(String, &str)> {
    Forms::of(&[items]).list(items)
}

/// The form each name of a schema takes in its enums: the name itself, or where it holds a
/// character no enum may, [`enum_form`]'s, numbered when another name of the schema already
/// is (or takes) that form. One map for every list of the schema, so a form reads back as one
/// name wherever it stands.
pub(crate) struct Forms<'a> {
    changed: Vec<(&'a str, String)>,
}

impl<'a> Forms<'a> {
    pub(crate) fn of(lists: &[&'a [String]]) -> Self {
        let names: Vec<&str> = lists.iter().flat_map(|list| list.iter()).map(String::as_str).collect();
        let mut changed: Vec<(&str, String)> = Vec::new();
        for &name in &names {
            let form = enum_form(name);
            if form == name || changed.iter().any(|(n, _)| *n == name) {
                continue;
            }
            let (base, mut sent, mut k) = (form.to_string(), form.into_owned(), 1);
            while names.contains(&sent.as_str()) || changed.iter().any(|(_, f)| *f == sent) {
                k += 1;
                sent = format!("{base} ({k})");
            }
            changed.push((name, sent));
        }
        Self { changed }
    }

    fn form(&self, name: &str) -> String {
        self.changed.iter().find(|(n, _)| *n == name).map_or_else(|| name.to_string(), |(_, f)| f.clone())
    }

    /// `items` deduplicated in order, each with its form.
    pub(crate) fn list<'b>(&self, items: &'b [String]) -> Vec<(String, &'b str)> {
        let mut out: Vec<(String, &str)> = Vec::new();
        for item in items {
            if !out.iter().any(|(_, name)| *name == item.as_str()) {
                out.push((self.form(item), item));
            }
        }
        out
    }
}

/// The enum's values of `distinct` names.
pub(crate) fn enum_of(names: &[(String, &str)]) -> Value {
    json!({"enum": names.iter().map(|(sent, _)| sent.as_str()).collect::<Vec<_>>()})
}

/// A name as an `enum` may hold it. Grammar-based servers compile an enum into a grammar, and
/// llama-cpp-python 0.3.36 does it wrongly: a `"` makes a grammar it cannot parse, and its server
/// then dies (a segmentation fault); a `\` comes back unescaped, so the reply is not JSON. Real
/// KGs are full of such names (`David "Buck" Wheat`), and a user's server is not ongraph's to
/// crash: so an enum holds `'` for `"`, `/` for `\` and a space for a control character, and a
/// reply's choice is read back as the name ([`ReplySchema::renamed`]).
pub(crate) fn enum_form(name: &str) -> std::borrow::Cow<'_, str> {
    if !name.chars().any(|c| c == '"' || c == '\\' || c.is_control()) {
        return std::borrow::Cow::Borrowed(name);
    }
    std::borrow::Cow::Owned(
        name.chars()
            .map(|c| match c {
                '"' => '\'',
                '\\' => '/',
                c if c.is_control() => ' ',
                c => c,
            })
            .collect(),
    )
}

/// An object schema with every property required and nothing else allowed (what OpenAI's
/// strict mode demands; the grammar-based servers take it as it is).
pub(crate) fn object(properties: &[(&str, Value)]) -> Value {
    let mut props = serde_json::Map::new();
    for (name, schema) in properties {
        props.insert((*name).to_string(), schema.clone());
    }
    let required: Vec<&str> = properties.iter().map(|(n, _)| *n).collect();
    json!({"type": "object", "properties": props, "required": required, "additionalProperties": false})
}

pub(crate) fn array(items: Value, max: Option<usize>) -> Value {
    let mut a = json!({"type": "array", "items": items});
    if let Some(max) = max {
        a["maxItems"] = json!(max.max(1));
    }
    a
}

pub(crate) fn string() -> Value {
    json!({"type": "string"})
}

pub(crate) fn number() -> Value {
    json!({"type": "number"})
}

pub(crate) fn numbers_up_to(n: usize) -> Value {
    json!({"type": "integer", "enum": (1..=n.max(1)).collect::<Vec<_>>()})
}
