//! The reply shapes: for each kind of prompt, its JSON schema and the line that shows the model
//! its shape.

use crate::llm::ReplySchema;
use serde_json::{Value, json};

/// A reply shape a method defines for its own prompts, listed in its registry entry. Under
/// structured replies the request carries its schema and the prompt shows `shape`; a reply that
/// fits the schema reaches the method as its JSON text, one that does not as the model wrote it
/// (with a note in the trace), so the method reads both.
#[derive(Clone, Copy, Debug)]
pub struct ReplyShape {
    /// The schema's name: `[a-z_]`, neither a built-in shape's ([`Shape::BUILTIN_NAMES`]) nor
    /// another method's.
    pub name: &'static str,
    /// The JSON schema a reply must follow (an object; what the endpoint constrains replies to).
    pub schema: fn() -> Value,
    /// The reply's shape as the prompt shows it, e.g. `{"time_zone": "<a zone>"}`.
    pub shape: &'static str,
}

/// The kinds of reply the methods ask for. Each names its schema.
#[derive(Clone, Debug)]
pub(crate) enum Shape<'a> {
    /// Topic entities named in the question.
    Topics,
    /// Up to `width` of `candidates` (relations), each scored.
    Relations { candidates: &'a [String], width: usize },
    /// Up to `width` relations per topic entity: (entity, its relations).
    UnifiedRelations { entities: &'a [(String, Vec<String>)], width: usize },
    /// A score for each of `candidates` (entities).
    EntityScores { candidates: &'a [String] },
    /// A score for each entity of each group.
    EntityGroups { groups: &'a [Vec<String>] },
    /// Whether the knowledge suffices, and the answer if it does (free-text prompts' reading,
    /// and sessions recorded before [`Shape::Judgment`]).
    Verdict,
    /// A judgment by its answer: a short reason, then the answer chosen among `options` (what
    /// the shown triples reach) or `unknown`. Sufficient means an answer other than unknown.
    Judgment { options: &'a [String] },
    /// The answer(s) only.
    Answer,
    /// Reasoning, then the answer(s) (chain of thought, own knowledge; IO's answer is read so
    /// too, though its prompt asks for no reasoning).
    ReasonedAnswer,
    /// PoG's question analysis: indicator chain and split questions.
    Analysis,
    /// Up to `width` of `n` numbered candidates (PoG's precise and branch pruning).
    Selection { n: usize, width: usize },
    /// PoG's path summary: reasoning chains.
    Summary,
    /// PoG's supplement: candidate answers and chains from the model's knowledge.
    Supplement,
    /// GoG's Thought and Action.
    GogStep,
    /// Up to `keep` of `candidates` (GoG's relation filter).
    Choice { candidates: &'a [String], keep: usize },
    /// Triples the model writes (GoG's Generate).
    Triples,
    /// Which of `n` numbered triples are correct (GoG's verification).
    Kept { n: usize },
    /// A shape a method defines (see [`ReplyShape`]).
    Own(&'a ReplyShape),
}

impl PartialEq for Shape<'_> {
    /// Same name, same schema (an own shape's schema is a function: compared by its value).
    fn eq(&self, other: &Self) -> bool {
        self.name() == other.name() && self.schema() == other.schema()
    }
}

/// The judgment's answer when the shown knowledge does not lead to one.
pub(crate) const UNKNOWN: &str = "unknown";

/// The most characters a judgment's reason may take (one short line).
pub(super) const REASON_CHARS: usize = 200;

/// Names as a schema's `enum` holds them, deduplicated in order (an `enum` lists each value
/// once): each name with its form in the enum (see [`Forms`]).
fn distinct(items: &[String]) -> Vec<(String, &str)> {
    Forms::of(&[items]).list(items)
}

/// The form each name of a schema takes in its enums: the name itself, or where it holds a
/// character no enum may, [`enum_form`]'s, numbered when another name of the schema already
/// is (or takes) that form. One map for every list of the schema, so a form reads back as one
/// name wherever it stands.
struct Forms<'a> {
    changed: Vec<(&'a str, String)>,
}

impl<'a> Forms<'a> {
    fn of(lists: &[&'a [String]]) -> Self {
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
    fn list<'b>(&self, items: &'b [String]) -> Vec<(String, &'b str)> {
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
fn enum_of(names: &[(String, &str)]) -> Value {
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
pub(super) fn object(properties: &[(&str, Value)]) -> Value {
    let mut props = serde_json::Map::new();
    for (name, schema) in properties {
        props.insert((*name).to_string(), schema.clone());
    }
    let required: Vec<&str> = properties.iter().map(|(n, _)| *n).collect();
    json!({"type": "object", "properties": props, "required": required, "additionalProperties": false})
}

fn array(items: Value, max: Option<usize>) -> Value {
    let mut a = json!({"type": "array", "items": items});
    if let Some(max) = max {
        a["maxItems"] = json!(max.max(1));
    }
    a
}

pub(super) fn string() -> Value {
    json!({"type": "string"})
}

fn number() -> Value {
    json!({"type": "number"})
}

fn numbers_up_to(n: usize) -> Value {
    json!({"type": "integer", "enum": (1..=n.max(1)).collect::<Vec<_>>()})
}

impl Shape<'_> {
    /// The names of the built-in shapes: a method's own shape takes none of them.
    pub const BUILTIN_NAMES: &'static [&'static str] = &[
        "topics",
        "relations",
        "unified_relations",
        "entity_scores",
        "entity_groups",
        "verdict",
        "judgment",
        "answer",
        "reasoned_answer",
        "analysis",
        "selection",
        "summary",
        "supplement",
        "gog_step",
        "choice",
        "triples",
        "kept",
    ];

    pub fn name(&self) -> &'static str {
        match self {
            Shape::Topics => "topics",
            Shape::Relations { .. } => "relations",
            Shape::UnifiedRelations { .. } => "unified_relations",
            Shape::EntityScores { .. } => "entity_scores",
            Shape::EntityGroups { .. } => "entity_groups",
            Shape::Verdict => "verdict",
            Shape::Judgment { .. } => "judgment",
            Shape::Answer => "answer",
            Shape::ReasonedAnswer => "reasoned_answer",
            Shape::Analysis => "analysis",
            Shape::Selection { .. } => "selection",
            Shape::Summary => "summary",
            Shape::Supplement => "supplement",
            Shape::GogStep => "gog_step",
            Shape::Choice { .. } => "choice",
            Shape::Triples => "triples",
            Shape::Kept { .. } => "kept",
            Shape::Own(own) => own.name,
        }
    }

    /// The JSON schema a reply must follow.
    pub fn schema(&self) -> Value {
        let answers = || array(string(), Some(8));
        match self {
            Shape::Topics => object(&[("entities", array(string(), Some(8)))]),
            Shape::Relations { candidates, width } => object(&[(
                "relations",
                array(object(&[("relation", enum_of(&distinct(candidates))), ("score", number())]), Some(*width)),
            )]),
            Shape::UnifiedRelations { entities, width } => {
                let forms = Forms::of(&self.name_lists());
                let choices: Vec<Value> = entities
                    .iter()
                    .map(|(entity, relations)| {
                        object(&[
                            ("entity", enum_of(&forms.list(std::slice::from_ref(entity)))),
                            ("relation", enum_of(&forms.list(relations))),
                            ("score", number()),
                        ])
                    })
                    .collect();
                object(&[("choices", array(json!({"anyOf": choices}), Some(width * entities.len())))])
            }
            Shape::EntityScores { candidates } => object(&[(
                "scores",
                array(
                    object(&[("entity", enum_of(&distinct(candidates))), ("score", number())]),
                    Some(candidates.len()),
                ),
            )]),
            Shape::EntityGroups { groups } => {
                let forms = Forms::of(&self.name_lists());
                let per_group: Vec<Value> = groups
                    .iter()
                    .enumerate()
                    .map(|(k, names)| {
                        object(&[
                            ("group", json!({"enum": [k + 1]})),
                            (
                                "scores",
                                array(
                                    object(&[("entity", enum_of(&forms.list(names))), ("score", number())]),
                                    Some(names.len()),
                                ),
                            ),
                        ])
                    })
                    .collect();
                object(&[("groups", array(json!({"anyOf": per_group}), Some(groups.len())))])
            }
            // The verdict first, as in ToG's exemplars, and the answer before the reason: a
            // rambling reason cut off at the token limit then costs nothing that matters.
            Shape::Verdict => {
                object(&[("sufficient", json!({"type": "boolean"})), ("answer", answers()), ("reason", string())])
            }
            // The reason first, so a model constrained by a grammar writes it before it
            // commits to an answer (llama.cpp's grammars keep the schema's order of properties);
            // capped, so it stays one short line.
            Shape::Judgment { options } => {
                let mut choices: Vec<String> = distinct(options)
                    .into_iter()
                    .filter(|(_, name)| !name.eq_ignore_ascii_case(UNKNOWN))
                    .map(|(sent, _)| sent)
                    .collect();
                choices.push(UNKNOWN.to_string());
                object(&[
                    ("reason", json!({"type": "string", "maxLength": REASON_CHARS})),
                    ("answer", json!({"type": "array", "items": {"enum": choices}, "minItems": 1, "maxItems": 8})),
                ])
            }
            Shape::Answer => object(&[("answer", answers())]),
            Shape::ReasonedAnswer => object(&[("reasoning", string()), ("answer", answers())]),
            Shape::Analysis => object(&[("thinking_cot", string()), ("split_questions", array(string(), Some(6)))]),
            Shape::Selection { n, width } => object(&[("top_list", array(numbers_up_to(*n), Some(*width)))]),
            Shape::Summary => object(&[("chains", array(string(), Some(6)))]),
            Shape::Supplement => {
                object(&[("candidate_answers", array(string(), Some(3))), ("chains", array(string(), Some(3)))])
            }
            Shape::GogStep => object(&[
                ("thought", string()),
                ("action", json!({"enum": ["Search", "Generate", "Finish"]})),
                ("arguments", array(string(), Some(6))),
            ]),
            Shape::Choice { candidates, keep } => {
                object(&[("relations", array(enum_of(&distinct(candidates)), Some(*keep)))])
            }
            Shape::Triples => object(&[(
                "triples",
                array(object(&[("head", string()), ("relation", string()), ("tail", string())]), Some(8)),
            )]),
            Shape::Kept { n } => object(&[("keep", array(numbers_up_to(*n), Some(*n)))]),
            Shape::Own(own) => (own.schema)(),
        }
    }

    /// Whether a call of this shape reasons before it answers (chain of thought, an answer from
    /// the model's own knowledge, GoG's thoughts): under structured replies it is asked as free
    /// text, its prose exemplars kept, and only a reply that cannot be read so has its answer
    /// extracted by a second call constrained to [`Shape::extracted`] (reason, then format: a
    /// JSON string field is a poor scratchpad for a small model).
    pub fn reasons_first(&self) -> bool {
        matches!(self, Shape::ReasonedAnswer | Shape::GogStep)
    }

    /// The shape a reason-first reply's answer is extracted into.
    pub fn extracted(&self) -> Shape<'static> {
        match self {
            Shape::GogStep => Shape::GogStep,
            _ => Shape::Answer,
        }
    }

    /// What the request carries: the schema, and the candidates a reply is read against.
    pub fn reply_schema(&self) -> ReplySchema {
        let labels = match self {
            Shape::EntityScores { candidates } => candidates.to_vec(),
            Shape::Judgment { options } => options.to_vec(),
            _ => Vec::new(),
        };
        ReplySchema { name: self.name().into(), schema: self.schema(), labels, renamed: self.renamed() }
    }

    /// The names its enums hold in another form (see [`enum_form`]): (form sent, name).
    fn renamed(&self) -> Vec<(String, String)> {
        Forms::of(&self.name_lists()).changed.into_iter().map(|(name, form)| (form, name.to_string())).collect()
    }

    /// The lists of names its enums offer.
    fn name_lists(&self) -> Vec<&[String]> {
        match self {
            Shape::Relations { candidates, .. } | Shape::Choice { candidates, .. } => vec![candidates],
            Shape::EntityScores { candidates } => vec![candidates],
            Shape::Judgment { options } => vec![options],
            Shape::EntityGroups { groups } => groups.iter().map(Vec::as_slice).collect(),
            Shape::UnifiedRelations { entities, .. } => entities
                .iter()
                .flat_map(|(entity, relations)| [std::slice::from_ref(entity), relations.as_slice()])
                .collect(),
            _ => Vec::new(),
        }
    }

    /// The line appended to the prompt in structured mode: the reply's JSON shape, which takes
    /// the place of the exemplars' brace format.
    pub fn instruction(&self) -> String {
        let shape = match self {
            Shape::Topics => r#"{"entities": ["<name as written in the question>", ...]}"#.to_string(),
            Shape::Relations { width, .. } => format!(
                r#"{{"relations": [{{"relation": "<a relation from the list>", "score": <0 to 1>}}, ...]}} with at most {width} relations, scores summing to 1"#
            ),
            Shape::UnifiedRelations { width, .. } => format!(
                r#"{{"choices": [{{"entity": "<topic entity>", "relation": "<one of its relations>", "score": <0 to 1>}}, ...]}} with at most {width} relations per entity"#
            ),
            Shape::EntityScores { .. } => {
                r#"{"scores": [{"entity": "<an entity from the list>", "score": <0 to 1>}, ...]} with every entity listed, scores summing to 1"#.to_string()
            }
            Shape::EntityGroups { .. } => {
                r#"{"groups": [{"group": <k>, "scores": [{"entity": "<an entity of group k>", "score": <0 to 1>}, ...]}, ...]} with every group, scores summing to 1 within a group"#.to_string()
            }
            Shape::Verdict => {
                r#"{"sufficient": <true or false>, "answer": ["<answer>", ...], "reason": "<one sentence>"} (answer [] when not sufficient)"#.to_string()
            }
            Shape::Judgment { .. } => format!(
                r#"{{"reason": "<one short sentence>", "answer": ["<an entity or value of the triplets>", ...]}}, or "answer": ["{UNKNOWN}"] when the triplets do not lead to the answer"#
            ),
            Shape::Answer => r#"{"answer": ["<answer>", ...]}"#.to_string(),
            Shape::ReasonedAnswer => r#"{"reasoning": "<step by step>", "answer": ["<answer>", ...]}"#.to_string(),
            Shape::Analysis => {
                r#"{"thinking_cot": "\"<topic>\" - <relation> - <entity> - ... - answer(<type>)", "split_questions": ["<question>?", ...]}"#.to_string()
            }
            Shape::Selection { width, .. } => format!(
                r#"{{"top_list": [<candidate number>, ...]}} with at most {width} numbers"#
            ),
            Shape::Summary => r#"{"chains": ["<reasoning chain>", ...]}"#.to_string(),
            Shape::Supplement => {
                r#"{"candidate_answers": ["<answer>", ...], "chains": ["<Entity - relation - Entity - relation - answer>", ...]}"#.to_string()
            }
            Shape::GogStep => {
                r#"{"thought": "<your next thought>", "action": "Search" | "Generate" | "Finish", "arguments": ["<entity, thought or answer>", ...]}"#.to_string()
            }
            Shape::Choice { keep, .. } => {
                format!(r#"{{"relations": ["<a relation from the list>", ...]}} with at most {keep} relations"#)
            }
            Shape::Triples => {
                r#"{"triples": [{"head": "<entity>", "relation": "<relation>", "tail": "<entity>"}, ...]}"#.to_string()
            }
            Shape::Kept { .. } => r#"{"keep": [<triple number>, ...]} ([] when none is correct)"#.to_string(),
            Shape::Own(own) => own.shape.to_string(),
        };
        format!(
            "\n\nReply with one JSON object only, of this shape (it replaces the format of the examples above):\n{shape}\n"
        )
    }
}
