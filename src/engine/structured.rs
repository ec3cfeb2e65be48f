//! Structured replies: for every kind of prompt, the JSON schema that constrains the reply, the
//! line that shows the model its shape, and the reader that turns a reply of that shape back
//! into the text the method's parsers read.
//!
//! Why render back to text instead of a second set of parsers: one reading path for both modes,
//! so every rule the parsers enforce (only offered candidates, at most the width, scores
//! normalised, Yes/No defaults) holds for a structured reply exactly as for a free-text one,
//! and the free-text parser is the fallback for a reply that is not JSON of the shape. The
//! model's own reply stays in the trace.

use crate::llm::ReplySchema;
use serde::Deserialize;
use serde_json::{Value, json};

/// The kinds of reply the methods ask for. Each names its schema.
#[derive(Clone, Debug, PartialEq)]
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
    /// Reasoning, then the answer(s) (chain of thought, own knowledge).
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
}

/// The judgment's answer when the shown knowledge does not lead to one.
pub(crate) const UNKNOWN: &str = "unknown";

/// The most characters a judgment's reason may take (one short line).
const REASON_CHARS: usize = 200;

/// Strings, deduplicated in order (a JSON schema's `enum` lists each value once).
fn distinct(items: &[String]) -> Vec<&str> {
    let mut out: Vec<&str> = Vec::new();
    for item in items {
        if !out.contains(&item.as_str()) {
            out.push(item);
        }
    }
    out
}

/// An object schema with every property required and nothing else allowed (what OpenAI's
/// strict mode demands; the grammar-based servers take it as it is).
fn object(properties: &[(&str, Value)]) -> Value {
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

fn string() -> Value {
    json!({"type": "string"})
}

fn number() -> Value {
    json!({"type": "number"})
}

fn numbers_up_to(n: usize) -> Value {
    json!({"type": "integer", "enum": (1..=n.max(1)).collect::<Vec<_>>()})
}

impl Shape<'_> {
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
        }
    }

    /// The JSON schema a reply must follow.
    pub fn schema(&self) -> Value {
        let answers = || array(string(), Some(8));
        match self {
            Shape::Topics => object(&[("entities", array(string(), Some(8)))]),
            Shape::Relations { candidates, width } => object(&[(
                "relations",
                array(
                    object(&[("relation", json!({"enum": distinct(candidates)})), ("score", number())]),
                    Some(*width),
                ),
            )]),
            Shape::UnifiedRelations { entities, width } => {
                let choices: Vec<Value> = entities
                    .iter()
                    .map(|(entity, relations)| {
                        object(&[
                            ("entity", json!({"enum": [entity]})),
                            ("relation", json!({"enum": distinct(relations)})),
                            ("score", number()),
                        ])
                    })
                    .collect();
                object(&[("choices", array(json!({"anyOf": choices}), Some(width * entities.len())))])
            }
            Shape::EntityScores { candidates } => object(&[(
                "scores",
                array(
                    object(&[("entity", json!({"enum": distinct(candidates)})), ("score", number())]),
                    Some(candidates.len()),
                ),
            )]),
            Shape::EntityGroups { groups } => {
                let per_group: Vec<Value> = groups
                    .iter()
                    .enumerate()
                    .map(|(k, names)| {
                        object(&[
                            ("group", json!({"enum": [k + 1]})),
                            (
                                "scores",
                                array(
                                    object(&[("entity", json!({"enum": distinct(names)})), ("score", number())]),
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
                let mut choices = distinct(options);
                choices.retain(|c| !c.eq_ignore_ascii_case(UNKNOWN));
                choices.push(UNKNOWN);
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
                object(&[("relations", array(json!({"enum": distinct(candidates)}), Some(*keep)))])
            }
            Shape::Triples => object(&[(
                "triples",
                array(object(&[("head", string()), ("relation", string()), ("tail", string())]), Some(8)),
            )]),
            Shape::Kept { n } => object(&[("keep", array(numbers_up_to(*n), Some(*n)))]),
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
        ReplySchema { name: self.name().into(), schema: self.schema(), labels }
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
        };
        format!(
            "\n\nReply with one JSON object only, of this shape (it replaces the format of the examples above):\n{shape}\n"
        )
    }
}

/// Whether a free reply to a call of shape `name` can be read as it is: an answer in braces (or
/// "the answer is …"), or a GoG step with its action. Otherwise a reason-first call has the
/// reply extracted by a second call.
pub(crate) fn readable_as_text(name: &str, reply: &str) -> bool {
    match name {
        "gog_step" => crate::engine::gog::parse::parse_step(reply).is_ok(),
        _ => crate::engine::parse::parse_answers(reply).is_some_and(|a| !a.is_empty()),
    }
}

/// The result of reading a structured reply back.
#[derive(Debug, PartialEq)]
pub(crate) struct Reading {
    /// The reply as the method's parser reads it.
    pub text: String,
    /// How it was read, for the trace (e.g. the JSON was cut off and closed, an answer was not
    /// among the choices).
    pub notes: Vec<String>,
}

/// Reads `reply`, asked for as `schema`, into the text the method's parser reads; `None` when
/// it is not JSON of the shape (the parser then reads the reply as it is).
pub(crate) fn read(schema: &ReplySchema, reply: &str) -> Option<Reading> {
    let body = json_body(reply)?;
    let (value, mut notes) = match serde_json::from_str::<Value>(body) {
        Ok(v) => (v, Vec::new()),
        // Cut off at the token limit: closed where it stopped, and read if that parses.
        Err(e) if e.is_eof() => (
            serde_json::from_str::<Value>(&close_truncated(body)).ok()?,
            vec!["the JSON reply was cut off (token limit); read as far as it went".to_string()],
        ),
        Err(_) => return None,
    };
    let text = render(&schema.name, &schema.labels, value, &mut notes)?;
    Some(Reading { text, notes })
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
fn close_truncated(text: &str) -> String {
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

/// Text safe inside the parsers' formats: no braces, brackets or newlines of its own. A
/// placeholder copied from the shape line (`<answer>`) is no text at all.
fn clean(text: &str) -> String {
    let t = text.trim();
    if t.starts_with('<') && t.ends_with('>') {
        return String::new();
    }
    t.replace(['{', '['], "(").replace(['}', ']'], ")").replace(['\n', '\r', '\t'], " ").trim().to_string()
}

/// Whether an answer the model listed reads as a name or value ("Washington, D.C.", "1956"),
/// not a sentence ("The party in Canberra is the ALP.").
fn is_name_like(answer: &str) -> bool {
    let words = answer.split_whitespace().count();
    words > 0 && words <= 8 && answer.chars().count() <= 80 && !(words > 4 && answer.ends_with(['.', '?', '!']))
}

/// A list of answers as the parsers read it: `{A | B}`. A sentence in the list is not an answer
/// (small models put their prose there).
fn braced_answers(answers: &[String]) -> String {
    let kept: Vec<String> =
        answers.iter().map(|a| clean(a).replace(" | ", " / ")).filter(|a| is_name_like(a)).collect();
    if kept.is_empty() { String::new() } else { format!("{{{}}}", kept.join(" | ")) }
}

#[derive(Deserialize)]
struct Scored {
    #[serde(alias = "entity")]
    relation: String,
    score: f64,
}
#[derive(Deserialize)]
struct UnifiedChoice {
    entity: String,
    relation: String,
    score: f64,
}
#[derive(Deserialize)]
struct GroupScores {
    group: usize,
    scores: Vec<Scored>,
}
#[derive(Deserialize)]
struct Triple {
    head: String,
    relation: String,
    tail: String,
}

/// Serde reads of each shape. Missing lists are empty; a wrong type is not the shape.
#[derive(Deserialize)]
#[serde(untagged)]
enum Body {
    Topics {
        entities: Vec<String>,
    },
    Relations {
        relations: Vec<Scored>,
    },
    Unified {
        choices: Vec<UnifiedChoice>,
    },
    EntityScores {
        scores: Vec<Scored>,
    },
    Groups {
        groups: Vec<GroupScores>,
    },
    Verdict {
        #[serde(default)]
        reason: String,
        sufficient: bool,
        #[serde(default)]
        answer: Vec<String>,
    },
    Answer {
        #[serde(default, alias = "reason")]
        reasoning: String,
        answer: AnswerList,
    },
    Analysis {
        thinking_cot: String,
        #[serde(default)]
        split_questions: Vec<String>,
    },
    Selection {
        top_list: Vec<usize>,
    },
    Summary {
        chains: Vec<String>,
        #[serde(default)]
        candidate_answers: Vec<String>,
    },
    GogStep {
        #[serde(default)]
        thought: String,
        action: String,
        #[serde(default)]
        arguments: Vec<String>,
    },
    Choice {
        relations: Vec<String>,
    },
    Triples {
        triples: Vec<Triple>,
    },
    Kept {
        keep: Vec<usize>,
    },
}

/// One answer or several (models constrained only loosely write either).
#[derive(Deserialize)]
#[serde(untagged)]
enum AnswerList {
    One(String),
    Many(Vec<String>),
}

impl AnswerList {
    fn into_vec(self) -> Vec<String> {
        match self {
            AnswerList::One(a) => vec![a],
            AnswerList::Many(v) => v,
        }
    }
}

/// A judgment: a reason, then its answers (other fields are ignored).
#[derive(Deserialize)]
struct JudgmentBody {
    #[serde(default)]
    reason: String,
    #[serde(default)]
    reasoning: String,
    answer: AnswerList,
}

/// Renders a reply of shape `name` in the brace format its parser reads; `None` when the value
/// is not of that shape.
fn render(name: &str, labels: &[String], value: Value, notes: &mut Vec<String>) -> Option<String> {
    // The shape decides which fields must be there: `untagged` alone would take any object
    // that happens to fit an earlier variant.
    let has = |field: &str| value.get(field).is_some();
    let fits = match name {
        "topics" => has("entities"),
        "relations" | "choice" => has("relations"),
        "unified_relations" => has("choices"),
        "entity_scores" => has("scores"),
        "entity_groups" => has("groups"),
        "verdict" => has("sufficient"),
        "judgment" => has("answer"),
        "answer" | "reasoned_answer" => has("answer"),
        "analysis" => has("thinking_cot"),
        "selection" => has("top_list"),
        "summary" | "supplement" => has("chains"),
        "gog_step" => has("action"),
        "triples" => has("triples"),
        "kept" => has("keep"),
        _ => false,
    };
    if !fits {
        return None;
    }
    if name == "judgment" {
        // Its own read: the untagged `Body` would take a judgment that also says
        // `"sufficient"` as a verdict, and one with both `reason` and `reasoning` as nothing.
        let body: JudgmentBody = serde_json::from_value(value).ok()?;
        let reason = if body.reason.trim().is_empty() { body.reasoning } else { body.reason };
        return Some(judgment(labels, &reason, body.answer.into_vec(), notes));
    }
    let body: Body = serde_json::from_value(value).ok()?;
    let lines = |items: Vec<String>| items.join("\n");
    Some(match (name, body) {
        ("topics", Body::Topics { entities }) => {
            entities.iter().map(|e| clean(e)).filter(|e| !e.is_empty()).map(|e| format!("{{{e}}}")).collect()
        }
        ("relations", Body::Relations { relations }) => {
            lines(relations.iter().map(|r| format!("{{{} (Score: {})}}", clean(&r.relation), score(r.score))).collect())
        }
        ("unified_relations", Body::Unified { choices }) => lines(
            choices
                .iter()
                .map(|c| format!("{{{} | {} (Score: {})}}", clean(&c.entity), clean(&c.relation), score(c.score)))
                .collect(),
        ),
        ("entity_scores", Body::EntityScores { scores } | Body::Relations { relations: scores }) => {
            // In the order the prompt listed the entities; one it left out scores 0.
            let values: Vec<String> = labels
                .iter()
                .map(|l| score(scores.iter().find(|s| s.relation.trim() == l.trim()).map_or(0.0, |s| s.score)))
                .collect();
            if scores.is_empty() { String::new() } else { format!("Score: {}", values.join(", ")) }
        }
        ("entity_groups", Body::Groups { groups }) => lines(
            groups
                .iter()
                .map(|g| {
                    let items: Vec<String> = g
                        .scores
                        .iter()
                        .map(|s| format!("{{{} (Score: {})}}", clean(&s.relation), score(s.score)))
                        .collect();
                    format!("Group {}: {}", g.group, items.join("; "))
                })
                .collect(),
        ),
        ("verdict", Body::Verdict { reason, sufficient, answer }) => {
            let verdict = if sufficient { "{Yes}" } else { "{No}" };
            let answer = if sufficient { braced_answers(&answer) } else { String::new() };
            let mut text = verdict.to_string();
            if !answer.is_empty() {
                text.push_str(&format!("\nanswer: {answer}"));
            }
            if !reason.trim().is_empty() {
                text.push_str(&format!("\nreason: {}", clean(&reason)));
            }
            text
        }
        ("answer" | "reasoned_answer", Body::Answer { reasoning, answer }) => {
            let answer = braced_answers(&answer.into_vec());
            match (clean(&reasoning), answer.is_empty()) {
                (_, true) => String::new(),
                (r, false) if r.is_empty() => answer,
                (r, false) => format!("{r}\nThe answer is {answer}."),
            }
        }
        ("analysis", Body::Analysis { thinking_cot, split_questions }) => {
            let questions: Vec<String> = split_questions
                .iter()
                .map(|q| clean(q))
                .filter(|q| !q.is_empty())
                .enumerate()
                .map(|(i, q)| format!("{}. {}{}", i + 1, q, if q.ends_with('?') { "" } else { "?" }))
                .collect();
            format!("Thinking CoT: {}\nSplit questions:\n{}", clean(&thinking_cot), questions.join("\n"))
        }
        ("selection", Body::Selection { top_list }) => {
            let items: Vec<String> = top_list.iter().map(|k| format!("Candidate Edge {k}")).collect();
            format!("top_list:{{{}}}", items.join(", "))
        }
        ("summary", Body::Summary { chains, .. }) => lines(
            chains
                .iter()
                .map(|c| clean(c))
                .filter(|c| !c.is_empty())
                .enumerate()
                .map(|(i, c)| format!("CoT{}: {c}", i + 1))
                .collect(),
        ),
        ("supplement", Body::Summary { chains, candidate_answers }) => {
            let answers: Vec<String> = candidate_answers
                .iter()
                .map(|a| clean(a))
                .filter(|a| !a.is_empty())
                .map(|a| format!("{{{a}}}"))
                .collect();
            let mut text = format!("Candidate answers: {}", answers.join(", "));
            for (i, c) in chains.iter().map(|c| clean(c)).filter(|c| !c.is_empty()).enumerate() {
                text.push_str(&format!("\nChain {}: {c}", i + 1));
            }
            text
        }
        ("gog_step", Body::GogStep { thought, action, arguments }) => {
            let args: Vec<String> =
                arguments.iter().map(|a| clean(a).replace('|', "/")).filter(|a| !a.is_empty()).collect();
            let action = match action.to_lowercase().as_str() {
                "search" => format!("Search[{}]", args.join(" | ")),
                "generate" => format!("Generate[{}]", args.join(" ")),
                "finish" => format!("Finish[{}]", args.join(" | ")),
                _ => return None,
            };
            format!("Thought: {}\nAction: {action}", clean(&thought))
        }
        ("choice", Body::Choice { relations }) => {
            format!("[{}]", relations.iter().map(|r| clean(r).replace(',', " ")).collect::<Vec<_>>().join(", "))
        }
        ("triples", Body::Triples { triples }) => lines(
            triples
                .iter()
                .map(|t| [clean(&t.head), clean(&t.relation), clean(&t.tail)])
                .filter(|t| t.iter().all(|part| !part.is_empty()))
                .map(|t| t.join("\t"))
                .collect(),
        ),
        ("kept", Body::Kept { keep }) => {
            format!("keep:{{{}}}", keep.iter().map(usize::to_string).collect::<Vec<_>>().join(", "))
        }
        _ => return None,
    })
}

/// A judgment read back as a verdict: `{Yes}` with the answers that are among `options` (what
/// the shown triples reach), else `{No}`. An answer the model named outside them is not taken,
/// and said.
fn judgment(options: &[String], reason: &str, answers: Vec<String>, notes: &mut Vec<String>) -> String {
    let taken = reachable_answers(options, &answers, notes);
    let answer = braced_answers(&taken);
    let mut text = if answer.is_empty() { "{No}".to_string() } else { format!("{{Yes}}\nanswer: {answer}") };
    if !reason.trim().is_empty() {
        text.push_str(&format!("\nreason: {}", clean(reason)));
    }
    text
}

/// The answers among `options`, each written as the option is (an exact match first, then one
/// that differs only in case: two entities may differ only in case); `unknown` and empty
/// answers are dropped, and an answer outside the options is noted, not taken. The engine
/// applies it to every judgment reply, however it was read: a server that does not enforce
/// the schema must not make an answer the triples do not reach sufficient.
pub(crate) fn reachable_answers(options: &[String], answers: &[String], notes: &mut Vec<String>) -> Vec<String> {
    let mut taken: Vec<String> = Vec::new();
    for answer in answers {
        let answer = answer.trim();
        if clean(answer).is_empty() || answer.eq_ignore_ascii_case(UNKNOWN) {
            continue;
        }
        let option = options
            .iter()
            .find(|o| o.trim() == answer)
            .or_else(|| options.iter().find(|o| o.trim().eq_ignore_ascii_case(answer)));
        match option {
            Some(option) if !taken.contains(option) => taken.push(option.clone()),
            Some(_) => {}
            None => notes.push(format!(
                "the model answered \"{}\", which the shown triples do not reach: not taken",
                clean(answer).chars().take(80).collect::<String>()
            )),
        }
    }
    taken
}

/// The answers a judgment request offered (`unknown` aside), when `schema` is a judgment's.
pub(crate) fn judgment_options(schema: Option<&ReplySchema>) -> Option<&[String]> {
    schema.filter(|s| s.name == Shape::Judgment { options: &[] }.name()).map(|s| s.labels.as_slice())
}

/// A score as the parsers read it (finite, not negative).
fn score(s: f64) -> String {
    let s = if s.is_finite() { s.max(0.0) } else { 0.0 };
    format!("{s}")
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::engine::parse;

    fn read_as(shape: &Shape<'_>, reply: &str) -> Option<String> {
        read(&shape.reply_schema(), reply).map(|r| r.text)
    }

    #[test]
    fn relations_read_back_through_the_parser() {
        let cands = vec!["a.b".to_string(), "c.d".to_string(), "e.f".to_string()];
        let shape = Shape::Relations { candidates: &cands, width: 2 };
        let schema = shape.schema();
        assert_eq!(schema["properties"]["relations"]["maxItems"], 2);
        assert_eq!(schema["properties"]["relations"]["items"]["properties"]["relation"]["enum"], json!(cands));
        let text =
            read_as(&shape, r#"{"relations": [{"relation": "c.d", "score": 0.7}, {"relation": "a.b", "score": 0.3}]}"#)
                .unwrap();
        let parsed = parse::parse_scored_choices(&text, &cands, 2);
        assert_eq!(parsed.items, vec![(1, 0.7), (0, 0.3)]);
        assert!(parsed.notes.is_empty(), "{:?}", parsed.notes);
    }

    #[test]
    fn entity_scores_follow_the_prompt_order() {
        let cands = vec!["Paris".to_string(), "Lyon".to_string(), "Nice".to_string()];
        let shape = Shape::EntityScores { candidates: &cands };
        let text =
            read_as(&shape, r#"{"scores": [{"entity": "Nice", "score": 0.25}, {"entity": "Paris", "score": 0.75}]}"#)
                .unwrap();
        assert_eq!(text, "Score: 0.75, 0, 0.25");
        let (scores, notes) = parse::parse_score_list(&text, &cands).unwrap();
        assert_eq!(scores, vec![0.75, 0.0, 0.25]);
        assert!(notes.is_empty(), "{notes:?}");
    }

    #[test]
    fn verdicts_answers_and_steps() {
        let text =
            read_as(&Shape::Verdict, r#"{"reason": "a {b}", "sufficient": true, "answer": ["Labor Party"]}"#).unwrap();
        assert_eq!(parse::parse_yes_no(&text), Some(true));
        assert_eq!(parse::parse_answers(&text), Some(vec!["Labor Party".to_string()]));
        let text = read_as(&Shape::Verdict, r#"{"reason": "", "sufficient": false, "answer": ["x"]}"#).unwrap();
        assert_eq!((parse::parse_yes_no(&text), parse::parse_answers(&text)), (Some(false), None));
        let text =
            read_as(&Shape::ReasonedAnswer, r#"{"reasoning": "First {x}.", "answer": ["Washington, D.C."]}"#).unwrap();
        assert_eq!(parse::parse_answers(&text), Some(vec!["Washington, D.C.".to_string()]));
        // Placeholders copied from the shape line and sentences are not answers.
        let text = read_as(&Shape::Answer, r#"{"answer": ["<answer>", "The party in Canberra is the ALP.", "ALP"]}"#);
        assert_eq!(text.as_deref(), Some("{ALP}"));
        let text = read_as(&Shape::Answer, r#"{"answer": ["<answer>"]}"#).unwrap();
        assert_eq!(parse::parse_answers(&text), None);
        let text =
            read_as(&Shape::GogStep, r#"{"thought": "t", "action": "Search", "arguments": ["Canberra"]}"#).unwrap();
        let (_, action) = crate::engine::gog::parse::parse_step(&text).unwrap();
        assert_eq!(action, crate::engine::gog::parse::Action::Search(vec!["Canberra".into()]));
        let text = read_as(&Shape::Kept { n: 3 }, r#"{"keep": [3, 1]}"#).unwrap();
        assert_eq!(crate::engine::gog::parse::parse_kept(&text, 3).unwrap(), vec![2, 0]);
    }

    #[test]
    fn a_judgment_is_its_answer_among_what_the_triples_reach() {
        let options = vec!["Australian Labor Party".to_string(), "Anthony Albanese".to_string()];
        let shape = Shape::Judgment { options: &options };
        let schema = shape.schema();
        // The reason is asked first (a grammar keeps this order), capped to a short line.
        let order: Vec<&String> = schema["properties"].as_object().unwrap().keys().collect();
        assert_eq!(order, ["reason", "answer"]);
        assert_eq!(schema["properties"]["reason"]["maxLength"], REASON_CHARS);
        assert_eq!(
            schema["properties"]["answer"]["items"]["enum"],
            json!(["Australian Labor Party", "Anthony Albanese", "unknown"])
        );
        let reading = |reply: &str| read(&shape.reply_schema(), reply).unwrap();
        let yes = reading(r#"{"reason": "Albanese leads {Labor}.", "answer": ["australian labor party"]}"#);
        assert_eq!(parse::parse_yes_no(&yes.text), Some(true));
        assert_eq!(parse::parse_answers(&yes.text), Some(vec!["Australian Labor Party".to_string()]), "as offered");
        assert!(yes.notes.is_empty(), "{:?}", yes.notes);
        let unknown = reading(r#"{"reason": "Not yet.", "answer": ["unknown"]}"#);
        assert_eq!((parse::parse_yes_no(&unknown.text), parse::parse_answers(&unknown.text)), (Some(false), None));
        // An answer outside the choices (a server that does not enforce the enum) is not taken.
        let outside = reading(r#"{"reason": "", "answer": ["Liberal Party", "unknown"]}"#);
        assert_eq!(parse::parse_yes_no(&outside.text), Some(false));
        assert_eq!(
            outside.notes,
            ["the model answered \"Liberal Party\", which the shown triples do not reach: not taken"]
        );
        let mixed = reading(r#"{"reason": "", "answer": ["Liberal Party", "Anthony Albanese"]}"#);
        assert_eq!(parse::parse_answers(&mixed.text), Some(vec!["Anthony Albanese".to_string()]));
        assert_eq!(read(&shape.reply_schema(), r#"{"reason": "no answer field"}"#), None);
    }

    #[test]
    fn reason_first_shapes_are_readable_as_text_or_extracted() {
        assert!(Shape::ReasonedAnswer.reasons_first() && Shape::GogStep.reasons_first());
        assert!(!Shape::Answer.reasons_first() && !Shape::Judgment { options: &[] }.reasons_first());
        assert_eq!(Shape::ReasonedAnswer.extracted(), Shape::Answer);
        assert!(readable_as_text("answer", "First, … The answer is {Canberra}."));
        assert!(!readable_as_text("answer", "I am not sure."));
        assert!(readable_as_text("gog_step", "Thought: look it up\nAction: Search[Canberra]"));
        assert!(!readable_as_text("gog_step", "Thought: look it up"));
    }

    #[test]
    fn not_the_shape_is_none_and_truncated_json_is_closed() {
        assert_eq!(read_as(&Shape::Answer, "The answer is {Paris}."), None);
        assert_eq!(read_as(&Shape::Answer, r#"{"entities": ["x"]}"#), None, "another shape");
        assert_eq!(read_as(&Shape::Verdict, r#"{"sufficient": "maybe"}"#), None, "a wrong type");
        let cut = read(&Shape::Verdict.reply_schema(), r#"{"reason": "The chain joins Canb"#);
        assert_eq!(cut, None, "cut before the verdict: nothing to read");
        let cut = read(&Shape::Verdict.reply_schema(), r#"{"sufficient": true, "answer": ["Labor Par"#).unwrap();
        assert!(!cut.notes.is_empty());
        assert_eq!(parse::parse_answers(&cut.text), Some(vec!["Labor Par".to_string()]));
        assert_eq!(close_truncated(r#"{"a": 1, "b"#), r#"{"a": 1}"#);
        assert_eq!(close_truncated(r#"{"a": [1, "#), r#"{"a": [1]}"#);
        assert_eq!(close_truncated(r#"{"a": 1, "b": "#), r#"{"a": 1}"#);
        let fenced = "```json\n{\"answer\": [\"Paris\"]}\n```";
        assert_eq!(read_as(&Shape::Answer, fenced).as_deref(), Some("{Paris}"));
    }

    #[test]
    fn every_shape_has_a_strict_object_schema() {
        let c = vec!["x".to_string()];
        let e = vec![("E".to_string(), c.clone())];
        let g = vec![c.clone()];
        let mut names = Vec::new();
        for shape in [
            Shape::Topics,
            Shape::Relations { candidates: &c, width: 1 },
            Shape::UnifiedRelations { entities: &e, width: 1 },
            Shape::EntityScores { candidates: &c },
            Shape::EntityGroups { groups: &g },
            Shape::Verdict,
            Shape::Judgment { options: &c },
            Shape::Answer,
            Shape::ReasonedAnswer,
            Shape::Analysis,
            Shape::Selection { n: 3, width: 1 },
            Shape::Summary,
            Shape::Supplement,
            Shape::GogStep,
            Shape::Choice { candidates: &c, keep: 1 },
            Shape::Triples,
            Shape::Kept { n: 2 },
        ] {
            let s = shape.schema();
            assert_eq!(s["type"], "object", "{}", shape.name());
            assert_eq!(s["additionalProperties"], false, "{}", shape.name());
            assert_eq!(
                s["required"].as_array().map(Vec::len),
                s["properties"].as_object().map(|p| p.len()),
                "{}: every property required",
                shape.name()
            );
            assert!(shape.instruction().contains("JSON"));
            names.push(shape.name());
        }
        // The prompt registry names the shape each template's calls ask for: a shape there is.
        for &t in crate::prompts::Template::ALL {
            assert!(t.reply().is_none_or(|r| names.contains(&r)), "{t}: {:?}", t.reply());
        }
    }
}
