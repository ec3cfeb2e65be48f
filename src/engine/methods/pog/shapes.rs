//! PoG's reply shapes: the question's analysis, a selection among numbered candidate paths,
//! the path summary and the supplement. Each reads back into the text PoG's parsers read.

use crate::engine::structured::{Offer, Reasons, Reply, ReplyShape, array, clean, numbers_up_to, object, string};
use crate::llm::ReplySchema;
use serde::Deserialize;
use serde_json::Value;

pub(crate) const SHAPES: &[ReplyShape] = &[ANALYSIS, SELECTION, SUMMARY, SUPPLEMENT];

/// The question's analysis: indicator chain and split questions.
pub(crate) const ANALYSIS: ReplyShape = ReplyShape {
    name: "analysis",
    schema: |_| object(&[("thinking_cot", string()), ("split_questions", array(string(), Some(6)))]),
    shape: |_| {
        r#"{"thinking_cot": "\"<topic>\" - <relation> - <entity> - ... - answer(<type>)", "split_questions": ["<question>?", ...]}"#.into()
    },
    read: read_analysis,
    labelled: false,
    reasons: Reasons::No,
};

/// Up to `width` of `count` numbered candidates (precise and branch pruning).
const SELECTION: ReplyShape = ReplyShape {
    name: "selection",
    schema: |offer| object(&[("top_list", array(numbers_up_to(offer.count), Some(offer.width)))]),
    shape: |offer| format!(r#"{{"top_list": [<candidate number>, ...]}} with at most {} numbers"#, offer.width),
    read: read_selection,
    labelled: false,
    reasons: Reasons::No,
};

/// The path summary: reasoning chains.
pub(crate) const SUMMARY: ReplyShape = ReplyShape {
    name: "summary",
    schema: |_| object(&[("chains", array(string(), Some(6)))]),
    shape: |_| r#"{"chains": ["<reasoning chain>", ...]}"#.into(),
    read: read_summary,
    labelled: false,
    reasons: Reasons::No,
};

/// The supplement: candidate answers and chains from the model's knowledge.
pub(crate) const SUPPLEMENT: ReplyShape = ReplyShape {
    name: "supplement",
    schema: |_| object(&[("candidate_answers", array(string(), Some(3))), ("chains", array(string(), Some(3)))]),
    shape: |_| {
        r#"{"candidate_answers": ["<answer>", ...], "chains": ["<Entity - relation - Entity - relation - answer>", ...]}"#.into()
    },
    read: read_supplement,
    labelled: false,
    reasons: Reasons::No,
};

/// Up to `width` of `n` numbered candidates.
pub(crate) fn selection(n: usize, width: usize) -> Reply<'static> {
    Reply::new(&SELECTION, Offer::numbered(n, width))
}

fn read_analysis(value: Value, _: &ReplySchema, _: &mut Vec<String>) -> Option<String> {
    #[derive(Deserialize)]
    struct Body {
        thinking_cot: String,
        #[serde(default)]
        split_questions: Vec<String>,
    }
    let Body { thinking_cot, split_questions } = serde_json::from_value(value).ok()?;
    let questions: Vec<String> = split_questions
        .iter()
        .map(|q| clean(q))
        .filter(|q| !q.is_empty())
        .enumerate()
        .map(|(i, q)| format!("{}. {}{}", i + 1, q, if q.ends_with('?') { "" } else { "?" }))
        .collect();
    Some(format!("Thinking CoT: {}\nSplit questions:\n{}", clean(&thinking_cot), questions.join("\n")))
}

fn read_selection(value: Value, _: &ReplySchema, _: &mut Vec<String>) -> Option<String> {
    #[derive(Deserialize)]
    struct Body {
        top_list: Vec<usize>,
    }
    let Body { top_list } = serde_json::from_value(value).ok()?;
    let items: Vec<String> = top_list.iter().map(|k| format!("Candidate Edge {k}")).collect();
    Some(format!("top_list:{{{}}}", items.join(", ")))
}

#[derive(Deserialize)]
struct Chains {
    chains: Vec<String>,
    #[serde(default)]
    candidate_answers: Vec<String>,
}

fn read_summary(value: Value, _: &ReplySchema, _: &mut Vec<String>) -> Option<String> {
    let Chains { chains, .. } = serde_json::from_value(value).ok()?;
    let lines: Vec<String> = chains
        .iter()
        .map(|c| clean(c))
        .filter(|c| !c.is_empty())
        .enumerate()
        .map(|(i, c)| format!("CoT{}: {c}", i + 1))
        .collect();
    Some(lines.join("\n"))
}

fn read_supplement(value: Value, _: &ReplySchema, _: &mut Vec<String>) -> Option<String> {
    let Chains { chains, candidate_answers } = serde_json::from_value(value).ok()?;
    let answers: Vec<String> =
        candidate_answers.iter().map(|a| clean(a)).filter(|a| !a.is_empty()).map(|a| format!("{{{a}}}")).collect();
    let mut text = format!("Candidate answers: {}", answers.join(", "));
    for (i, c) in chains.iter().map(|c| clean(c)).filter(|c| !c.is_empty()).enumerate() {
        text.push_str(&format!("\nChain {}: {c}", i + 1));
    }
    Some(text)
}
