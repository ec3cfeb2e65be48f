//! ongraph's own question format, for user datasets: one JSON object per line,
//! `{"question": "…", "topic_entities": {"id": "label"} or ["name", …], "answers": ["…"],
//! "aliases": {"answer": ["other name", …]}, "id": "…", "hops": 2}`; only `question` and
//! `answers` are required. Blank lines and lines starting with `//` are skipped.

use super::GoldAnswer;
use super::{DatasetError, Item};
use serde::Deserialize;
use std::collections::BTreeMap;
use std::path::Path;

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Record {
    question: String,
    answers: Vec<String>,
    #[serde(default)]
    topic_entities: Option<Topics>,
    #[serde(default)]
    aliases: BTreeMap<String, Vec<String>>,
    #[serde(default)]
    id: Option<String>,
    #[serde(default)]
    hops: Option<usize>,
}

#[derive(Deserialize)]
#[serde(untagged)]
enum Topics {
    /// KG ids with their labels, in order (serde_json keeps objects in file order).
    Ids(serde_json::Map<String, serde_json::Value>),
    /// Names to link by label.
    Names(Vec<String>),
}

pub fn load(path: &Path) -> Result<Vec<Item>, DatasetError> {
    let shown = path.display().to_string();
    let text = super::read_text(path)?;
    text.lines()
        .enumerate()
        .filter(|(_, l)| !l.trim().is_empty() && !l.trim_start().starts_with("//"))
        .map(|(i, l)| {
            parse_line(l, i + 1).map_err(|message| DatasetError::Line { path: shown.clone(), line: i + 1, message })
        })
        .collect()
}

pub fn parse_line(line: &str, number: usize) -> Result<Item, String> {
    let r: Record = serde_json::from_str(line).map_err(|e| e.to_string())?;
    if r.question.trim().is_empty() {
        return Err("the question is empty".into());
    }
    let answers: Vec<GoldAnswer> = r
        .answers
        .iter()
        .filter(|a| !a.trim().is_empty())
        .map(|a| GoldAnswer { name: a.clone(), aliases: r.aliases.get(a).cloned().unwrap_or_default() })
        .collect();
    if answers.is_empty() {
        return Err("no answer in `answers`".into());
    }
    if let Some(stray) = r.aliases.keys().find(|k| !r.answers.contains(k)) {
        return Err(format!("aliases for {stray:?}, which is not one of the answers"));
    }
    let topics_named = matches!(r.topic_entities, Some(Topics::Names(_)));
    let topics = match r.topic_entities {
        Some(Topics::Ids(m)) => m
            .into_iter()
            .map(|(id, label)| match label {
                serde_json::Value::String(l) => Ok((id, Some(l))),
                other => Err(format!("topic entity {id:?}: the label must be a string, not {other}")),
            })
            .collect::<Result<_, _>>()?,
        Some(Topics::Names(names)) => names.into_iter().map(|n| (n, None)).collect(),
        None => Vec::new(),
    };
    Ok(Item {
        id: r.id.unwrap_or_else(|| format!("line {number}")),
        question: r.question.trim().to_string(),
        answers,
        topics,
        topics_named,
        hops: r.hops,
        gold: None,
        hidden: Vec::new(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_full_record_and_a_minimal_one() {
        let item = parse_line(
            r#"{"id": "q1", "question": "Where is Canberra?", "topic_entities": {"m.canberra": "Canberra", "m.au": "Australia"}, "answers": ["Australia"], "aliases": {"Australia": ["Commonwealth of Australia"]}, "hops": 1}"#,
            1,
        )
        .unwrap();
        assert_eq!(item.id, "q1");
        assert_eq!(item.topics[0], ("m.canberra".to_string(), Some("Canberra".to_string())));
        assert_eq!(item.topics[1].0, "m.au", "file order");
        assert_eq!(item.answers[0].aliases, ["Commonwealth of Australia"]);
        let item = parse_line(r#"{"question": "q?", "answers": ["a"], "topic_entities": ["Lou Seal"]}"#, 7).unwrap();
        assert_eq!((item.id.as_str(), item.topics[0].1.clone()), ("line 7", None));
    }

    #[test]
    fn mistakes_are_named() {
        for (line, says) in [
            (r#"{"question": "q?"}"#, "missing field `answers`"),
            (r#"{"question": " ", "answers": ["a"]}"#, "the question is empty"),
            (r#"{"question": "q?", "answers": [""]}"#, "no answer"),
            (r#"{"question": "q?", "answers": ["a"], "aliases": {"b": ["c"]}}"#, "not one of the answers"),
            (r#"{"question": "q?", "answers": ["a"], "answer": "a"}"#, "unknown field `answer`"),
            ("not json", "expected"),
            (r#"{"question": "q?", "answers": ["a"], "topic_entities": {"m.x": 3}}"#, "label must be a string"),
        ] {
            let err = parse_line(line, 1).unwrap_err();
            assert!(err.contains(says), "{line}: {err}");
        }
    }
}
