//! Readers for PoG's replies: the question analysis (indicator chain, split questions), the
//! numbered selections of precise and branch-reduced pruning, path summaries and the sufficiency
//! verdict. Every reader takes any text and never panics; what it cannot read is an `Err` with
//! the reason, for the trace.

use crate::engine::parse::{parse_answers, parse_yes_no};
use regex::Regex;
use std::sync::LazyLock;

/// One position of the indicator chain.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Slot {
    /// A quoted topic entity: `"Nijmegen"`.
    Topic(String),
    /// The answer, with its type when given: `answer(country)`.
    Answer(String),
    /// An intermediate entity the chain passes through: `airport`.
    Between(String),
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Analysis {
    /// The chain as the model wrote it.
    pub indicator: String,
    /// Entity positions of the chain, in order (relations sit between consecutive ones).
    pub slots: Vec<Slot>,
    pub sub_questions: Vec<String>,
}

impl Analysis {
    /// The largest number of hops between the answer and a topic entity on the chain; `None`
    /// when the chain has no answer slot. (The reference counts every hyphen in the reply.)
    pub fn predicted_depth(&self) -> Option<u32> {
        let answer = self.slots.iter().position(|s| matches!(s, Slot::Answer(_)))?;
        let hops = self
            .slots
            .iter()
            .enumerate()
            .filter(|(_, s)| matches!(s, Slot::Topic(_)))
            .map(|(i, _)| i.abs_diff(answer))
            .max()
            // No topic entity in the chain: the farthest end of it.
            .unwrap_or_else(|| answer.max(self.slots.len() - 1 - answer));
        Some(hops as u32)
    }

    /// The topic entities in the order the chain visits them.
    pub fn topic_order(&self) -> Vec<&str> {
        self.slots
            .iter()
            .filter_map(|s| match s {
                Slot::Topic(t) => Some(t.as_str()),
                _ => None,
            })
            .collect()
    }
}

static INDICATOR_LABEL: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"(?i)^\s*(?:thinking\s*cot|indicator)\s*:\s*(.*)$")
        .unwrap_or_else(|e| unreachable!("constant regex: {e}"))
});
static LIST_MARK: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"(?i)^\s*(?:[-*•]|\d+[.)]|(?:split|sub)[\s_-]*questions?\s*\d*\s*:)\s*")
        .unwrap_or_else(|e| unreachable!("constant regex: {e}"))
});

/// Reads the question analysis: a `Thinking CoT:` (or `Indicator:`) chain of the form
/// `"Topic" - relation - entity - relation - answer(type) - …`, and the split questions (the
/// lines after it that end with a question mark, list marks and labels removed).
pub fn parse_analysis(reply: &str) -> Result<Analysis, String> {
    let lines: Vec<&str> = reply.lines().collect();
    let (at, inline) = lines
        .iter()
        .enumerate()
        .find_map(|(i, l)| INDICATOR_LABEL.captures(l).map(|c| (i, c[1].trim().to_string())))
        .ok_or("no `Thinking CoT:` line with the indicator chain")?;
    let (indicator, rest_from) = if inline.is_empty() {
        let next = lines.iter().enumerate().skip(at + 1).find(|(_, l)| !l.trim().is_empty());
        match next {
            Some((i, l)) => (l.trim().to_string(), i + 1),
            None => return Err("the `Thinking CoT:` line is empty".into()),
        }
    } else {
        (inline, at + 1)
    };
    let parts: Vec<&str> = indicator.split(" - ").map(str::trim).collect();
    if parts.len() < 3 {
        return Err(format!("the indicator {indicator:?} is not a chain `entity - relation - entity …`"));
    }
    let slots: Vec<Slot> = parts
        .iter()
        .step_by(2)
        .map(|p| {
            let unquoted = p.trim_matches(|c| c == '"' || c == '“' || c == '”');
            if p.len() > unquoted.len() {
                Slot::Topic(unquoted.trim().to_string())
            } else if p.to_lowercase().starts_with("answer") {
                let kind = p.find('(').and_then(|i| p[i + 1..].split(')').next()).unwrap_or_default();
                Slot::Answer(kind.trim().to_string())
            } else {
                Slot::Between(p.to_string())
            }
        })
        .collect();
    if !slots.iter().any(|s| matches!(s, Slot::Answer(_))) {
        return Err(format!("the indicator {indicator:?} has no `answer(…)` position"));
    }
    let sub_questions = lines[rest_from.min(lines.len())..]
        .iter()
        .map(|l| LIST_MARK.replace(l.trim(), "").trim().to_string())
        .filter(|l| l.ends_with('?'))
        .collect();
    Ok(Analysis { indicator, slots, sub_questions })
}

static TOP_LIST: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"(?is)top[\s_-]*list\s*:\s*\{([^{}]*)\}").unwrap_or_else(|e| unreachable!("constant regex: {e}"))
});
static NUMBER: LazyLock<Regex> =
    LazyLock::new(|| Regex::new(r"\d+").unwrap_or_else(|e| unreachable!("constant regex: {e}")));

/// Reads a selection `top_list:{Candidate Edge 1, Candidate Edge 3}` of `n` numbered candidates
/// (1-based in the prompt): 0-based indices, first mention first, repeats and out-of-range
/// numbers dropped. An `Err` when there is no `top_list:{…}` or it names no valid candidate.
pub fn parse_top_list(reply: &str, n: usize) -> Result<Vec<usize>, String> {
    let inner = TOP_LIST.captures(reply).map(|c| c[1].to_string()).ok_or("no `top_list:{…}` in the reply")?;
    let mut picked = Vec::new();
    let mut out_of_range = Vec::new();
    for item in inner.split([',', ';']) {
        let Some(m) = NUMBER.find(item) else { continue };
        match m.as_str().parse::<usize>() {
            Ok(k) if (1..=n).contains(&k) => {
                if !picked.contains(&(k - 1)) {
                    picked.push(k - 1);
                }
            }
            _ => out_of_range.push(m.as_str().to_string()),
        }
    }
    if picked.is_empty() {
        return Err(if out_of_range.is_empty() {
            "the top_list names no candidate".into()
        } else {
            format!("the top_list names only candidates that do not exist ({})", out_of_range.join(", "))
        });
    }
    Ok(picked)
}

static COT_LINE: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"(?i)^\s*cot\s*\d*\s*:\s*(.+)$").unwrap_or_else(|e| unreachable!("constant regex: {e}"))
});

/// Reads a path summary: the `CoT1: …` lines; a reply without them gives its non-empty lines.
pub fn parse_summary(reply: &str) -> Vec<String> {
    let cots: Vec<String> =
        reply.lines().filter_map(|l| COT_LINE.captures(l).map(|c| c[1].trim().to_string())).collect();
    if !cots.is_empty() {
        return cots;
    }
    reply.lines().map(str::trim).filter(|l| !l.is_empty()).map(str::to_string).collect()
}

/// Reads a sufficiency verdict: `{Yes}`/`{No}` and the answers after `answer:` (in braces, split
/// on ` | `). No verdict is an `Err`.
pub fn parse_sufficiency(reply: &str) -> Result<(bool, Vec<String>), String> {
    let verdict = parse_yes_no(reply).ok_or("no Yes/No verdict in the reply")?;
    // ASCII case only, so the offset found is the reply's own (see `parse_answers`).
    let lower = reply.to_ascii_lowercase();
    let tail = lower.find("answer:").map(|i| &reply[i..]).unwrap_or(reply);
    let answers = parse_answers(tail).unwrap_or_default();
    Ok((verdict, answers))
}

/// Reads the LLM supplement: candidate answers (braced, on a line starting `Candidate answers`
/// or anywhere) and the entity names on the chains it predicts (`Chain 1: A - rel - B - …`).
/// Returns every entity name mentioned, answers first, without repeats.
pub fn parse_supplement(reply: &str) -> Vec<String> {
    let mut names: Vec<String> = Vec::new();
    let mut push = |n: &str| {
        let n = n.trim().trim_matches('"').trim();
        if !n.is_empty() && !n.to_lowercase().starts_with("answer") && !names.iter().any(|x| x == n) {
            names.push(n.to_string());
        }
    };
    for line in reply.lines() {
        let lower = line.to_lowercase();
        if lower.trim_start().starts_with("candidate answer") || lower.trim_start().starts_with("answers") {
            for a in parse_answers(line).unwrap_or_default() {
                push(&a);
            }
        }
    }
    for line in reply.lines() {
        let lower = line.trim_start().to_lowercase();
        if !lower.starts_with("chain") {
            continue;
        }
        let body = line.split_once(':').map(|(_, r)| r).unwrap_or_default();
        for (i, part) in body.split(" - ").enumerate() {
            if i % 2 == 0 {
                push(part);
            }
        }
    }
    names
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn analysis_reads_the_chain_and_predicts_depth_from_its_structure() {
        let reply = "Thinking CoT: \"Nijmegen\" - served by - airport - owned by - answer(country) - border with - \"France\"\nSplit questions:\n1. Which airport serves Nijmegen?\n2. Which country borders France?\n";
        let a = parse_analysis(reply).unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(a.slots.len(), 4);
        assert_eq!(a.slots[2], Slot::Answer("country".into()));
        assert_eq!(a.topic_order(), vec!["Nijmegen", "France"]);
        // Two hops to Nijmegen, one to France: the larger. (Hyphen counting would say 6.)
        assert_eq!(a.predicted_depth(), Some(2));
        assert_eq!(a.sub_questions, vec!["Which airport serves Nijmegen?", "Which country borders France?"]);
        // The chain on the next line, labelled sub-questions.
        let b = parse_analysis(
            "Indicator:\n\"Canberra\" - contained by - answer(country)\nsub_question 1: Where is Canberra?",
        )
        .unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(b.predicted_depth(), Some(1));
        assert_eq!(b.sub_questions, vec!["Where is Canberra?"]);
    }

    #[test]
    fn malformed_analyses_are_errors_that_say_why() {
        assert!(parse_analysis("I think the answer is France.").unwrap_err().contains("Thinking CoT"));
        assert!(parse_analysis("Thinking CoT:").unwrap_err().contains("empty"));
        assert!(parse_analysis("Thinking CoT: Nijmegen").unwrap_err().contains("not a chain"));
        assert!(parse_analysis("Thinking CoT: \"A\" - r - b").unwrap_err().contains("answer"));
    }

    #[test]
    fn top_lists_give_valid_indices_in_order() {
        assert_eq!(
            parse_top_list("top_list:{Candidate Edge 3, Candidate Edge 1, Candidate Edge 3}", 4),
            Ok(vec![2, 0])
        );
        assert_eq!(parse_top_list("Reason…\nTop List: { 2 ; 9 }", 4), Ok(vec![1]));
        assert!(parse_top_list("top_list:{Candidate Edge 9}", 4).unwrap_err().contains("do not exist"));
        assert!(parse_top_list("top_list:{}", 4).unwrap_err().contains("no candidate"));
        assert!(parse_top_list("I pick edge 2", 4).unwrap_err().contains("top_list"));
    }

    #[test]
    fn summaries_verdicts_and_supplements() {
        assert_eq!(parse_summary("CoT1: A won B.\nCoT2: B lost.\n"), vec!["A won B.", "B lost."]);
        assert_eq!(parse_summary("\nA won B.\n"), vec!["A won B."]);
        assert_eq!(
            parse_sufficiency("{Yes}\nanswer: {2010 World Series | 2012}\nreason: paths say so"),
            Ok((true, vec!["2010 World Series".to_string(), "2012".to_string()]))
        );
        assert_eq!(parse_sufficiency("{No}. reason: missing"), Ok((false, vec![])));
        assert!(parse_sufficiency("maybe").is_err());
        // A character whose lower case is shorter in bytes never shifts the cut.
        let kelvins = "\u{212A}\u{212A} {Yes}. {O}Answer: {東京}";
        assert_eq!(parse_sufficiency(kelvins), Ok((true, vec!["東京".to_string()])));
        let names = parse_supplement(
            "Candidate answers: {Australian Labor Party}, {Liberal Party}\nChain 1: \"Canberra\" - capital of - Australia - governed by - answer(party)\n",
        );
        assert_eq!(names, vec!["Australian Labor Party", "Liberal Party", "Canberra", "Australia"]);
    }

    proptest! {
        #[test]
        fn readers_never_panic(reply in "\\PC{0,200}", n in 0usize..50) {
            let _ = parse_analysis(&reply).map(|a| (a.predicted_depth(), a.topic_order().len()));
            let _ = parse_top_list(&reply, n);
            let _ = parse_summary(&reply);
            let _ = parse_sufficiency(&reply);
            let _ = parse_supplement(&reply);
        }

        #[test]
        fn chain_readers_never_panic(parts in proptest::collection::vec("[\"a-z() ]{0,8}", 0..9)) {
            let reply = format!("Thinking CoT: {}\n1. why?", parts.join(" - "));
            if let Ok(a) = parse_analysis(&reply) {
                prop_assert!(a.predicted_depth().is_some());
            }
        }
    }
}
