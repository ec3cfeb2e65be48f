//! The reply shapes every method may ask for: topic entities, a sufficiency verdict or judgment,
//! and answers. Each reads back into the brace text the engine's parsers read.

use super::shape::{Offer, Reasons, ReplyShape, array, distinct, object, string};
use super::text::{AnswerList, UNKNOWN, braced_answers, clean, judgment_text};
use crate::llm::ReplySchema;
use serde::Deserialize;
use serde_json::{Value, json};

/// The most characters a judgment's reason may take (one short line).
pub(crate) const REASON_CHARS: usize = 200;

/// The generic shapes; a method's own shape takes none of their names.
pub(crate) const GENERIC: &[ReplyShape] = &[TOPICS, VERDICT, JUDGMENT, ANSWER, REASONED_ANSWER];

/// Topic entities named in the question.
pub(crate) const TOPICS: ReplyShape = ReplyShape {
    name: "topics",
    schema: |_| object(&[("entities", array(string(), Some(8)))]),
    shape: |_| r#"{"entities": ["<name as written in the question>", ...]}"#.into(),
    read: read_topics,
    labelled: false,
    reasons: Reasons::No,
};

/// Whether the knowledge suffices, and the answer if it does (free-text prompts' reading, and
/// sessions recorded before [`JUDGMENT`]). The verdict first, as in ToG's exemplars, and the
/// answer before the reason: a rambling reason cut off at the token limit then costs nothing
/// that matters.
pub(crate) const VERDICT: ReplyShape = ReplyShape {
    name: "verdict",
    schema: |_| object(&[("sufficient", json!({"type": "boolean"})), ("answer", answers()), ("reason", string())]),
    shape: |_| {
        r#"{"sufficient": <true or false>, "answer": ["<answer>", ...], "reason": "<one sentence>"} (answer [] when not sufficient)"#.into()
    },
    read: read_verdict,
    labelled: false,
    reasons: Reasons::No,
};

/// A judgment by its answer: a short reason, then the answer chosen among the offer's one list
/// (what the shown triples reach) or `unknown`. Sufficient means an answer other than unknown.
/// The reason first, so a model constrained by a grammar writes it before it commits to an
/// answer (llama.cpp's grammars keep the schema's order of properties); capped, so it stays one
/// short line.
pub(crate) const JUDGMENT: ReplyShape = ReplyShape {
    name: "judgment",
    schema: judgment_schema,
    shape: |_| {
        format!(
            r#"{{"reason": "<one short sentence>", "answer": ["<an entity or value of the triplets>", ...]}}, or "answer": ["{UNKNOWN}"] when the triplets do not lead to the answer"#
        )
    },
    read: read_judgment,
    labelled: true,
    reasons: Reasons::No,
};

/// The answer(s) only.
pub(crate) const ANSWER: ReplyShape = ReplyShape {
    name: "answer",
    schema: |_| object(&[("answer", answers())]),
    shape: |_| r#"{"answer": ["<answer>", ...]}"#.into(),
    read: read_answer,
    labelled: false,
    reasons: Reasons::No,
};

/// Reasoning, then the answer(s) (chain of thought, own knowledge; IO's answer is read so too,
/// though its prompt asks for no reasoning).
pub(crate) const REASONED_ANSWER: ReplyShape = ReplyShape {
    name: "reasoned_answer",
    schema: |_| object(&[("reasoning", string()), ("answer", answers())]),
    shape: |_| r#"{"reasoning": "<step by step>", "answer": ["<answer>", ...]}"#.into(),
    read: read_answer,
    labelled: false,
    reasons: Reasons::Then(&ANSWER),
};

/// A judgment among `options`.
pub(crate) fn judgment(options: &[String]) -> super::Reply<'_> {
    super::Reply::new(&JUDGMENT, Offer::names(options, 0))
}

fn answers() -> Value {
    array(string(), Some(8))
}

fn judgment_schema(offer: &Offer<'_>) -> Value {
    let options = offer.lists.first().copied().unwrap_or_default();
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

fn read_topics(value: Value, _: &ReplySchema, _: &mut Vec<String>) -> Option<String> {
    #[derive(Deserialize)]
    struct Body {
        entities: Vec<String>,
    }
    let body: Body = serde_json::from_value(value).ok()?;
    Some(body.entities.iter().map(|e| clean(e)).filter(|e| !e.is_empty()).map(|e| format!("{{{e}}}")).collect())
}

fn read_verdict(value: Value, _: &ReplySchema, _: &mut Vec<String>) -> Option<String> {
    #[derive(Deserialize)]
    struct Body {
        #[serde(default)]
        reason: String,
        sufficient: bool,
        #[serde(default)]
        answer: Vec<String>,
    }
    let Body { reason, sufficient, answer } = serde_json::from_value(value).ok()?;
    let verdict = if sufficient { "{Yes}" } else { "{No}" };
    let answer = if sufficient { braced_answers(&answer) } else { String::new() };
    let mut text = verdict.to_string();
    if !answer.is_empty() {
        text.push_str(&format!("\nanswer: {answer}"));
    }
    if !reason.trim().is_empty() {
        text.push_str(&format!("\nreason: {}", clean(&reason)));
    }
    Some(text)
}

/// Its own read: a judgment that also says `"sufficient"` is still a judgment, and one with
/// both `reason` and `reasoning` reads the first that says something.
fn read_judgment(value: Value, schema: &ReplySchema, notes: &mut Vec<String>) -> Option<String> {
    #[derive(Deserialize)]
    struct Body {
        #[serde(default)]
        reason: String,
        #[serde(default)]
        reasoning: String,
        answer: AnswerList,
    }
    let body: Body = serde_json::from_value(value).ok()?;
    let reason = if body.reason.trim().is_empty() { body.reasoning } else { body.reason };
    Some(judgment_text(&schema.labels, &reason, body.answer.into_vec(), notes))
}

fn read_answer(value: Value, _: &ReplySchema, _: &mut Vec<String>) -> Option<String> {
    #[derive(Deserialize)]
    struct Body {
        #[serde(default, alias = "reason")]
        reasoning: String,
        answer: AnswerList,
    }
    let Body { reasoning, answer } = serde_json::from_value(value).ok()?;
    let answer = braced_answers(&answer.into_vec());
    Some(match (clean(&reasoning), answer.is_empty()) {
        (_, true) => String::new(),
        (r, false) if r.is_empty() => answer,
        (r, false) => format!("{r}\nThe answer is {answer}."),
    })
}

/// The answers a judgment request offered (`unknown` aside), when `schema` is a judgment's.
pub(crate) fn judgment_options(schema: Option<&ReplySchema>) -> Option<&[String]> {
    schema.filter(|s| s.name == JUDGMENT.name).map(|s| s.labels.as_slice())
}
