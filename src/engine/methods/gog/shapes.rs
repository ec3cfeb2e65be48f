//! GoG's reply shapes: a step's thought and action, the relations a search keeps, the triples
//! Generate writes and the ones verification keeps. Each reads back into the text GoG's
//! parsers read.

use crate::engine::structured::{
    Offer, Reasons, Reply, ReplyShape, array, clean, distinct, enum_of, numbers_up_to, object, string,
};
use crate::llm::ReplySchema;
use serde::Deserialize;
use serde_json::{Value, json};

pub(crate) const SHAPES: &[ReplyShape] = &[STEP, CHOICE, TRIPLES, KEPT];

/// A step's Thought and Action. It reasons first: asked as free text, and extracted into this
/// shape only when its action cannot be read.
pub(crate) const STEP: ReplyShape = ReplyShape {
    name: "gog_step",
    schema: |_| {
        object(&[
            ("thought", string()),
            ("action", json!({"enum": ["Search", "Generate", "Finish"]})),
            ("arguments", array(string(), Some(6))),
        ])
    },
    shape: |_| {
        r#"{"thought": "<your next thought>", "action": "Search" | "Generate" | "Finish", "arguments": ["<entity, thought or answer>", ...]}"#.into()
    },
    read: read_step,
    labelled: false,
    reasons: Reasons::ThenItself { readable: |reply| super::parse::parse_step(reply).is_ok() },
};

/// Up to `width` of the offered relations (a search's relation filter).
const CHOICE: ReplyShape = ReplyShape {
    name: "choice",
    schema: |offer| {
        let candidates = offer.lists.first().copied().unwrap_or_default();
        object(&[("relations", array(enum_of(&distinct(candidates)), Some(offer.width)))])
    },
    shape: |offer| {
        format!(r#"{{"relations": ["<a relation from the list>", ...]}} with at most {} relations"#, offer.width)
    },
    read: read_choice,
    labelled: false,
    reasons: Reasons::No,
};

/// Triples the model writes (Generate).
pub(crate) const TRIPLES: ReplyShape = ReplyShape {
    name: "triples",
    schema: |_| {
        object(&[(
            "triples",
            array(object(&[("head", string()), ("relation", string()), ("tail", string())]), Some(8)),
        )])
    },
    shape: |_| r#"{"triples": [{"head": "<entity>", "relation": "<relation>", "tail": "<entity>"}, ...]}"#.into(),
    read: read_triples,
    labelled: false,
    reasons: Reasons::No,
};

/// Which of `count` numbered triples are correct (verification).
const KEPT: ReplyShape = ReplyShape {
    name: "kept",
    schema: |offer| object(&[("keep", array(numbers_up_to(offer.count), Some(offer.count)))]),
    shape: |_| r#"{"keep": [<triple number>, ...]} ([] when none is correct)"#.into(),
    read: read_kept,
    labelled: false,
    reasons: Reasons::No,
};

/// Up to `keep` of `candidates`.
pub(crate) fn choice(candidates: &[String], keep: usize) -> Reply<'_> {
    Reply::new(&CHOICE, Offer::names(candidates, keep))
}

/// Which of `n` numbered triples are correct.
pub(crate) fn kept(n: usize) -> Reply<'static> {
    Reply::new(&KEPT, Offer::numbered(n, n))
}

fn read_step(value: Value, _: &ReplySchema, _: &mut Vec<String>) -> Option<String> {
    #[derive(Deserialize)]
    struct Body {
        #[serde(default)]
        thought: String,
        action: String,
        #[serde(default)]
        arguments: Vec<String>,
    }
    let Body { thought, action, arguments } = serde_json::from_value(value).ok()?;
    let args: Vec<String> = arguments.iter().map(|a| clean(a).replace('|', "/")).filter(|a| !a.is_empty()).collect();
    let action = match action.to_lowercase().as_str() {
        "search" => format!("Search[{}]", args.join(" | ")),
        "generate" => format!("Generate[{}]", args.join(" ")),
        "finish" => format!("Finish[{}]", args.join(" | ")),
        _ => return None,
    };
    Some(format!("Thought: {}\nAction: {action}", clean(&thought)))
}

fn read_choice(value: Value, _: &ReplySchema, _: &mut Vec<String>) -> Option<String> {
    #[derive(Deserialize)]
    struct Body {
        relations: Vec<String>,
    }
    let Body { relations } = serde_json::from_value(value).ok()?;
    // An empty choice reads as no reply of the shape (the parser then says it chose nothing),
    // as it did before shapes were the methods' own: saved sessions replay that reading.
    if relations.is_empty() {
        return None;
    }
    Some(format!("[{}]", relations.iter().map(|r| clean(r).replace(',', " ")).collect::<Vec<_>>().join(", ")))
}

fn read_triples(value: Value, _: &ReplySchema, _: &mut Vec<String>) -> Option<String> {
    #[derive(Deserialize)]
    struct Triple {
        head: String,
        relation: String,
        tail: String,
    }
    #[derive(Deserialize)]
    struct Body {
        triples: Vec<Triple>,
    }
    let Body { triples } = serde_json::from_value(value).ok()?;
    let lines: Vec<String> = triples
        .iter()
        .map(|t| [clean(&t.head), clean(&t.relation), clean(&t.tail)])
        .filter(|t| t.iter().all(|part| !part.is_empty()))
        .map(|t| t.join("\t"))
        .collect();
    Some(lines.join("\n"))
}

fn read_kept(value: Value, _: &ReplySchema, _: &mut Vec<String>) -> Option<String> {
    #[derive(Deserialize)]
    struct Body {
        keep: Vec<usize>,
    }
    let Body { keep } = serde_json::from_value(value).ok()?;
    Some(format!("keep:{{{}}}", keep.iter().map(usize::to_string).collect::<Vec<_>>().join(", ")))
}
