//! Reading a structured reply back into the text the methods' parsers read, and the answers a
//! judgment may give.

use super::shape::{Shape, UNKNOWN};
use crate::llm::ReplySchema;
use serde::Deserialize;
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

/// Reads `reply`, asked for as `schema`, into the text the method's parser reads; `None` when
/// it is not JSON of the shape (the parser then reads the reply as it is).
pub(crate) fn read(schema: &ReplySchema, reply: &str) -> Option<Reading> {
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
    if !Shape::BUILTIN_NAMES.contains(&schema.name.as_str()) {
        return read_own(schema, &value, notes);
    }
    restore_names(&mut value, &schema.renamed);
    let text = render(&schema.name, &schema.labels, value, &mut notes)?;
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

/// A reply of a method's own shape: its JSON text, when it fits the schema (the method reads
/// it); `None` otherwise, and the method reads the reply as the model wrote it.
fn read_own(schema: &ReplySchema, value: &Value, notes: Vec<String>) -> Option<Reading> {
    if crate::llm::schema_check::departure(&schema.schema, value).is_some() {
        return None;
    }
    Some(Reading { text: value.to_string(), notes })
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

/// One answer as [`braced_answers`] writes it.
fn as_braced(answer: &str) -> String {
    clean(answer).replace(" | ", " / ")
}

/// A list of answers as the parsers read it: `{A | B}`. A sentence in the list is not an answer
/// (small models put their prose there).
fn braced_answers(answers: &[String]) -> String {
    let kept: Vec<String> = answers.iter().map(|a| as_braced(a)).filter(|a| is_name_like(a)).collect();
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
pub(super) fn render(name: &str, labels: &[String], value: Value, notes: &mut Vec<String>) -> Option<String> {
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
pub(super) fn judgment(options: &[String], reason: &str, answers: Vec<String>, notes: &mut Vec<String>) -> String {
    let taken = reachable_answers(options, &answers, notes);
    // Options, not prose: a long name is still a name.
    let forms = written_forms(options);
    let written = |a: &String| options.iter().position(|o| o == a).map_or_else(|| as_braced(a), |i| forms[i].clone());
    let answer = if taken.is_empty() {
        String::new()
    } else {
        format!("{{{}}}", taken.iter().map(written).collect::<Vec<_>>().join(" | "))
    };
    let mut text = if answer.is_empty() { "{No}".to_string() } else { format!("{{Yes}}\nanswer: {answer}") };
    if !reason.trim().is_empty() {
        text.push_str(&format!("\nreason: {}", clean(reason)));
    }
    text
}

/// How each option is written in a judgment's brace text, one form per option and no two
/// alike: [`as_braced`] of it, numbered like the enum forms when another option already has
/// that form or is named so (`Line\nBreak` beside `Line Break` is `Line Break (2)`). Options
/// written as they are named keep their form first.
fn written_forms(options: &[String]) -> Vec<String> {
    let braced: Vec<String> = options.iter().map(|o| as_braced(o)).collect();
    let mut forms: Vec<Option<String>> = vec![None; options.len()];
    let plain_first = (0..options.len()).filter(|&i| braced[i] == options[i].trim());
    let changed = (0..options.len()).filter(|&i| braced[i] != options[i].trim());
    for i in plain_first.chain(changed) {
        let taken = |form: &str| {
            forms.iter().flatten().any(|f| f == form) || options.iter().any(|o| o.trim() == form && *o != options[i])
        };
        let (base, mut form, mut k) = (&braced[i], braced[i].clone(), 1);
        while taken(&form) {
            k += 1;
            form = format!("{base} ({k})");
        }
        forms[i] = Some(form);
    }
    forms.into_iter().map(Option::unwrap_or_default).collect()
}

/// The answers among `options`, each written as the option is (an exact match first, then one
/// that differs only in case: two entities may differ only in case); `unknown` and empty
/// answers are dropped, and an answer outside the options is noted, not taken. The engine
/// applies it to every judgment reply, however it was read: a server that does not enforce
/// the schema must not make an answer the triples do not reach sufficient.
pub(crate) fn reachable_answers(options: &[String], answers: &[String], notes: &mut Vec<String>) -> Vec<String> {
    let mut taken: Vec<String> = Vec::new();
    let forms = std::cell::OnceCell::new();
    for answer in answers {
        let answer = answer.trim();
        if clean(answer).is_empty() || answer.eq_ignore_ascii_case(UNKNOWN) {
            continue;
        }
        // Then as the brace text wrote it: a name with braces, a line break or ` | ` reaches
        // the parser changed (`Brace {d}` as `Brace (d)`), and is still that name.
        let written = |same: &dyn Fn(&str, &str) -> bool| {
            options.iter().find(|o| same(o.trim(), answer)).or_else(|| {
                forms.get_or_init(|| written_forms(options)).iter().position(|f| same(f, answer)).map(|i| &options[i])
            })
        };
        let option = written(&|a, b| a == b)
            .or_else(|| written(&|a, b| a.eq_ignore_ascii_case(b)))
            .or_else(|| options.iter().find(|o| as_braced(o).eq_ignore_ascii_case(&as_braced(answer))));
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
pub(super) fn score(s: f64) -> String {
    let s = if s.is_finite() { s.max(0.0) } else { 0.0 };
    format!("{s}")
}
