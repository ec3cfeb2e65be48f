//! GoG's incomplete-KG question sets (`data_with_ct_{p}.json`, CWQ and WebQSP): a JSON array of
//! records with the question, an answer list, Freebase topic entities and
//! `mid_crucial_triples`, the gold edges dropped for that question. Those are hidden while the
//! question runs, so each question sees its own incomplete KG.

use super::GoldAnswer;
use super::tog::{id_map, text};
use super::{DatasetError, Item};
use crate::kg::Term;
use serde_json::Value;
use std::path::Path;

pub fn load(path: &Path) -> Result<Vec<Item>, DatasetError> {
    super::load_json_array(path, item)
}

/// Whether a file looks like one of GoG's sets: `data_with_ct_0.4.json` and the like.
pub fn is_gog_file(path: &Path) -> bool {
    path.file_name().and_then(|n| n.to_str()).is_some_and(|n| n.starts_with("data_with_ct_") && n.ends_with(".json"))
}

/// One record; `index` (0-based) names it when it has no id.
pub fn item(r: &Value, index: usize) -> Result<Item, String> {
    let question = ["question", "RawQuestion"]
        .iter()
        .find_map(|k| r.get(k).and_then(text))
        .ok_or("no `question` (CWQ) or `RawQuestion` (WebQSP) text")?;
    // Answers are a list (RoG's answer lists), but a single string is accepted too.
    let answers: Vec<GoldAnswer> = match r.get("answer") {
        Some(Value::Array(a)) => a.iter().filter_map(text).map(GoldAnswer::new).collect(),
        Some(v) => text(v).map(GoldAnswer::new).into_iter().collect(),
        None => Vec::new(),
    };
    // No answer: kept, counted and scored wrong (see `tog::item`).
    let hidden = match r.get("mid_crucial_triples") {
        None | Some(Value::Null) => Vec::new(),
        Some(Value::Array(triples)) => triples
            .iter()
            .map(|t| match t.as_array().map(|a| a.iter().map(Value::as_str).collect::<Vec<_>>()).as_deref() {
                Some([Some(h), Some(rel), Some(tail)]) => {
                    Ok((h.to_string(), rel.to_string(), Term::Entity(tail.to_string())))
                }
                _ => Err(format!("`mid_crucial_triples` holds {t}, not [head, relation, tail]")),
            })
            .collect::<Result<_, _>>()?,
        Some(other) => return Err(format!("`mid_crucial_triples` is {other}, not a list")),
    };
    let id =
        ["ID", "QuestionId"].iter().find_map(|k| r.get(k).and_then(text)).unwrap_or_else(|| format!("#{}", index + 1));
    Ok(Item {
        id,
        question,
        answers,
        topics: id_map(r.get("topic_entity")),
        topics_named: false,
        hops: None,
        gold: None,
        hidden,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn broken_triples_are_named() {
        let r: Value =
            serde_json::from_str(r#"{"question": "q?", "answer": ["a"], "mid_crucial_triples": [["m.a", "r"]]}"#)
                .unwrap();
        assert!(item(&r, 0).unwrap_err().contains("not [head, relation, tail]"));
        let r: Value = serde_json::from_str(r#"{"question": "q?", "answer": []}"#).unwrap();
        assert!(item(&r, 0).unwrap().answers.is_empty(), "kept, to be counted");
        let r: Value = serde_json::from_str(r#"{"answer": ["a"]}"#).unwrap();
        assert!(item(&r, 0).unwrap_err().starts_with("no `question`"));
        let r: Value = serde_json::from_str(r#"{"RawQuestion": "q?", "answer": "a"}"#).unwrap();
        let i = item(&r, 4).unwrap();
        assert_eq!((i.id.as_str(), i.hidden.len()), ("#5", 0));
    }
}
