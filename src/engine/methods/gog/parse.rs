//! Readers for GoG's replies: a Thought / Action step, the action grammar, the relation filter,
//! generated triples and the verification. Every reader takes any text and never panics; what it
//! cannot read is an `Err` with the reason, for the trace (never a silent fallback).

use crate::engine::parse::match_candidate;
use regex::Regex;
use std::sync::LazyLock;

#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(tag = "action", content = "args", rename_all = "snake_case")]
pub enum Action {
    /// One-hop triples of these entities (names or ids).
    Search(Vec<String>),
    /// Triples the model writes from its own knowledge, for this thought.
    Generate(String),
    /// The answer(s); empty is not an answer.
    Finish(Vec<String>),
}

impl Action {
    pub fn text(&self) -> String {
        match self {
            Action::Search(e) => format!("Search[{}]", e.join(" | ")),
            Action::Generate(t) => format!("Generate[{t}]"),
            Action::Finish(a) => format!("Finish[{}]", a.join(" | ")),
        }
    }
}

static ACTION: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"(?is)\b(search|generate|finish)\s*\[(.*)\]").unwrap_or_else(|e| unreachable!("constant regex: {e}"))
});

/// Reads one action: `Search[e1 | e2]`, `Generate[thought]`, `Finish[a1 | a2]` (any case; the
/// last `]` on the line closes it).
pub fn parse_action(text: &str) -> Result<Action, String> {
    let line = text.lines().map(str::trim).find(|l| !l.is_empty()).unwrap_or_default();
    let cap = ACTION.captures(line).ok_or_else(|| {
        format!(
            "{:?} is not an action (Search[…], Generate[…] or Finish[…])",
            line.chars().take(60).collect::<String>()
        )
    })?;
    let inner = cap[2].trim();
    let items = || -> Vec<String> {
        inner.split('|').map(|s| s.trim().trim_matches('"').trim().to_string()).filter(|s| !s.is_empty()).collect()
    };
    match cap[1].to_lowercase().as_str() {
        "search" => {
            let entities = items();
            if entities.is_empty() { Err("Search[] names no entity".into()) } else { Ok(Action::Search(entities)) }
        }
        "generate" => {
            if inner.is_empty() {
                Err("Generate[] has no thought".into())
            } else {
                Ok(Action::Generate(inner.into()))
            }
        }
        _ => Ok(Action::Finish(items())),
    }
}

static STEP_LABEL: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"(?im)^\s*(thought|action|observation)\s*(\d*)\s*:\s*")
        .unwrap_or_else(|e| unreachable!("constant regex: {e}"))
});

/// Reads step `n` the model wrote after `Thought n:`. A small model often writes the whole
/// transcript again from `Thought 1:`, its earlier steps (already run) before the new one: such
/// a reply is read from the label after the last one numbered below `n` (numbered `n` or not),
/// and one that writes only earlier steps again is no step (asked again, not run twice).
/// Without earlier numbers in it, the reply is read as [`parse_step`] reads it.
pub fn parse_step_at(reply: &str, n: usize) -> Result<(String, Action), String> {
    let labels: Vec<(usize, Option<usize>)> =
        STEP_LABEL.captures_iter(reply).filter_map(|c| Some((c.get(0)?.start(), c[2].parse::<usize>().ok()))).collect();
    let Some(last_echo) = labels.iter().rposition(|&(_, k)| k.is_some_and(|k| k < n)) else {
        return parse_step(reply);
    };
    match labels.get(last_echo + 1) {
        Some(&(start, _)) => parse_step(&reply[start..]),
        None => Err(format!("the reply writes earlier steps again and no step {n}")),
    }
}

/// Reads a step the model wrote after `Thought n:`: the thought (with or without its label) and
/// the action after `Action n:`; anything from `Observation` on (which the model should not
/// write) is ignored.
pub fn parse_step(reply: &str) -> Result<(String, Action), String> {
    let mut thought = String::new();
    let mut action = None;
    let labels: Vec<(usize, usize, String)> = STEP_LABEL
        .captures_iter(reply)
        .filter_map(|c| Some((c.get(0)?.start(), c.get(0)?.end(), c[1].to_lowercase())))
        .collect();
    if labels.first().is_none_or(|(start, _, _)| !reply[..*start].trim().is_empty()) {
        // The reply starts with the thought itself, unlabelled.
        let end = labels.first().map(|l| l.0).unwrap_or(reply.len());
        thought = reply[..end].trim().to_string();
    }
    for (i, (_, end, label)) in labels.iter().enumerate() {
        let until = labels.get(i + 1).map(|l| l.0).unwrap_or(reply.len());
        let body = reply[*end..until].trim();
        match label.as_str() {
            "thought" if thought.is_empty() => thought = body.to_string(),
            "action" if action.is_none() => action = Some(parse_action(body)),
            "observation" => break,
            _ => {}
        }
    }
    let action = match action {
        Some(a) => a?,
        // No `Action n:` label: an action written bare on its own line.
        None => {
            let line = reply.lines().find(|l| ACTION.is_match(l)).ok_or("no `Action:` line in the reply")?;
            thought = thought.replace(line, "").trim().to_string();
            parse_action(line)?
        }
    };
    Ok((thought, action))
}

/// Reads the relation filter's reply `[a, c]`: the chosen ones among `candidates`, at most
/// `keep`, as indices.
pub fn parse_relation_choice(reply: &str, candidates: &[String], keep: usize) -> Result<Vec<usize>, String> {
    let open = reply.rfind('[').ok_or("no [relation, …] list in the reply")?;
    let close = reply[open..].find(']').map(|c| open + c).ok_or("the [relation, …] list is not closed")?;
    let mut picked: Vec<usize> = Vec::new();
    for name in reply[open + 1..close].split(',') {
        if let Some(i) = match_candidate(name, candidates)
            && !picked.contains(&i)
        {
            picked.push(i);
        }
    }
    if picked.is_empty() {
        return Err("the list names none of the relations offered".into());
    }
    picked.truncate(keep);
    Ok(picked)
}

/// A triple the model wrote: `head<TAB>relation<TAB>tail`, or `(head, relation, tail)` /
/// `head, relation, tail` with exactly three parts.
pub fn parse_triples(reply: &str) -> Vec<(String, String, String)> {
    let mut out: Vec<(String, String, String)> = Vec::new();
    for line in reply.lines() {
        let line = line
            .trim()
            .trim_start_matches(|c: char| c == '-' || c == '*' || c.is_ascii_digit() || c == '.' || c == ')');
        let line = line.trim().trim_start_matches('(').trim_end_matches([')', '.']).trim();
        let parts: Vec<&str> =
            if line.contains('\t') { line.split('\t').collect() } else { line.split(", ").collect() };
        if let [h, r, t] = parts[..] {
            let t = (h.trim(), r.trim(), t.trim());
            if !t.0.is_empty() && !t.1.is_empty() && !t.2.is_empty() {
                let t = (t.0.to_string(), t.1.to_string(), t.2.to_string());
                if !out.contains(&t) {
                    out.push(t);
                }
            }
        }
    }
    out
}

static KEEP: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"(?is)keep\s*:\s*\{([^{}]*)\}").unwrap_or_else(|e| unreachable!("constant regex: {e}"))
});

/// Reads a verification `keep:{1, 3}` over `n` numbered triples: 0-based indices; `keep:{}`
/// keeps none. No `keep:{…}` is an `Err`.
pub fn parse_kept(reply: &str, n: usize) -> Result<Vec<usize>, String> {
    let inner = KEEP.captures(reply).map(|c| c[1].to_string()).ok_or("no `keep:{…}` in the reply")?;
    let mut kept = Vec::new();
    for item in inner.split([',', ';']) {
        let digits: String = item.chars().filter(char::is_ascii_digit).collect();
        if let Ok(k) = digits.parse::<usize>()
            && (1..=n).contains(&k)
            && !kept.contains(&(k - 1))
        {
            kept.push(k - 1);
        }
    }
    Ok(kept)
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn steps_with_and_without_labels() {
        let (t, a) = parse_step(
            "I need the headquarters first.\nAction 1: Search[Apple Inc. | cvt.apple_hq]\nObservation 1: made up",
        )
        .unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(t, "I need the headquarters first.");
        assert_eq!(a, Action::Search(vec!["Apple Inc.".into(), "cvt.apple_hq".into()]));
        let (t, a) =
            parse_step("Thought 4: The KG lacks it.\nAction 4: Generate[Cupertino is in the Pacific Time Zone]")
                .unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(
            (t.as_str(), a),
            ("The KG lacks it.", Action::Generate("Cupertino is in the Pacific Time Zone".into()))
        );
        let (_, a) = parse_step("So it is.\nFinish[Pacific Time Zone]").unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(a, Action::Finish(vec!["Pacific Time Zone".into()]));
        assert_eq!(parse_step("Action: finish[]").map(|s| s.1), Ok(Action::Finish(vec![])));
    }

    #[test]
    fn a_reply_that_writes_the_transcript_again_is_read_at_the_step_asked_for() {
        let echo = "Thought 1: Look up Canberra.\nAction 1: Search[Canberra]\nObservation 1: Canberra, containedby, Australia\nThought 2: Now the country.\nAction 2: Search[Australia]";
        let (t, a) = parse_step_at(echo, 2).unwrap_or_else(|e| panic!("{e}"));
        assert_eq!((t.as_str(), a), ("Now the country.", Action::Search(vec!["Australia".into()])));
        // Only earlier steps written again: no step to run (asked again).
        assert!(parse_step_at(echo, 3).unwrap_err().contains("no step 3"));
        // A new thought left unnumbered after the echo is read with its action.
        let unnumbered = "Thought 1: Look up Canberra.\nAction 1: Search[Canberra]\nObservation 1: x\nThought: Now the country.\nAction 2: Search[Australia]";
        let (t, a) = parse_step_at(unnumbered, 2).unwrap_or_else(|e| panic!("{e}"));
        assert_eq!((t.as_str(), a), ("Now the country.", Action::Search(vec!["Australia".into()])));
        assert_eq!(
            parse_step_at("Thought: go.\nAction: Finish[Australia]", 2).map(|s| s.1),
            Ok(Action::Finish(vec!["Australia".into()]))
        );
        // An unlabelled thought before `Action n:` is the step's own.
        let (t, _) = parse_step_at("The address node next.\nAction 2: Search[cvt.apple_hq]", 2)
            .unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(t, "The address node next.");
    }

    #[test]
    fn malformed_steps_and_actions_say_why() {
        assert!(parse_step("I am not sure.").unwrap_err().contains("Action"));
        assert!(parse_step("Action 1: Look[Apple]").unwrap_err().contains("not an action"));
        assert!(parse_action("Search[]").unwrap_err().contains("no entity"));
        assert!(parse_action("Generate[ ]").unwrap_err().contains("no thought"));
        assert!(parse_action("Search[Apple").is_err());
    }

    #[test]
    fn relation_choices_triples_and_verification() {
        let rels =
            vec!["organization.organization.headquarters".to_string(), "organization.organization.founders".into()];
        assert_eq!(
            parse_relation_choice("[organization.organization.founders, headquarters]", &rels, 3),
            Ok(vec![1, 0])
        );
        assert_eq!(parse_relation_choice("[founders, headquarters]", &rels, 1), Ok(vec![1]));
        assert!(parse_relation_choice("none", &rels, 3).is_err());
        assert!(parse_relation_choice("[sports]", &rels, 3).is_err());
        let t = parse_triples(
            "Cupertino\tlocation.location.time_zones\tPacific Time Zone\n(Cupertino, located in, California)\nnot a triple\n1. a, b, c, d",
        );
        assert_eq!(t.len(), 2);
        assert_eq!(t[1], ("Cupertino".into(), "located in".into(), "California".into()));
        assert_eq!(parse_kept("keep:{2, 9, 1}", 3), Ok(vec![1, 0]));
        assert_eq!(parse_kept("keep:{}", 3), Ok(vec![]));
        assert!(parse_kept("all good", 3).is_err());
    }

    proptest! {
        #[test]
        fn readers_never_panic(reply in "\\PC{0,200}", n in 0usize..20) {
            let _ = parse_step(&reply);
            let _ = parse_step_at(&reply, n);
            let _ = parse_action(&reply);
            let _ = parse_relation_choice(&reply, &["a.b".to_string(), "c".to_string()], 3);
            let _ = parse_triples(&reply);
            let _ = parse_kept(&reply, n);
        }

        #[test]
        fn labelled_steps_never_panic(t in "[A-Za-z \\[\\]|:\n0-9]{0,80}") {
            let reply = format!("Thought 2: {t}\nAction 2: {t}");
            let _ = parse_step(&reply);
        }
    }
}
