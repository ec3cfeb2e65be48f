//! The question files of ToG's evaluation (`cwq.json`, `WebQSP.json`, `graliqa.json`,
//! `SimpleQA.json`, `WebQuestions.json`, `qald_10-en.json`, `T-REX.json`, `Zero_Shot_RE.json`,
//! `creak.json`): a JSON array of records whose question, answer and topic fields differ by file.
//! Topic entities come from `topic_entity` (Freebase ids) or `qid_topic_entity` /
//! `topic_entity_ids` (Wikidata ids), as the KG in use needs.

use super::GoldAnswer;
use super::{DatasetError, Format, Item};
use serde_json::Value;
use std::path::Path;

/// The layout ToG's file names imply (`cwq.json` → CWQ, and the misspelt `graliqa.json`).
pub fn format_of(path: &Path) -> Option<Format> {
    let name = path.file_stem()?.to_str()?.to_lowercase();
    Some(match name.as_str() {
        "cwq" => Format::Cwq,
        "webqsp" => Format::Webqsp,
        "graliqa" | "grailqa" => Format::Grailqa,
        "simpleqa" => Format::Simpleqa,
        "webquestions" => Format::Webquestions,
        n if n.starts_with("qald") => Format::Qald,
        "t-rex" | "trex" => Format::Trex,
        "zero_shot_re" => Format::ZeroShotRe,
        "creak" => Format::Creak,
        _ => return None,
    })
}

/// Which ids the topic entities should be.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TopicIds {
    Freebase,
    Wikidata,
}

pub fn load(path: &Path, format: Format, ids: TopicIds) -> Result<Vec<Item>, DatasetError> {
    super::load_json_array(path, |r, i| item(r, i, format, ids))
}

pub(super) fn text(v: &Value) -> Option<String> {
    match v {
        Value::String(s) if !s.trim().is_empty() => Some(s.trim().to_string()),
        Value::Number(n) => Some(n.to_string()),
        _ => None,
    }
}

/// `{"m.03_r3": "Jamaica"}` → `[("m.03_r3", Some("Jamaica"))]`, in the file's order.
pub(super) fn id_map(v: Option<&Value>) -> Vec<(String, Option<String>)> {
    match v {
        Some(Value::Object(m)) => m.iter().map(|(id, label)| (id.clone(), text(label))).collect(),
        _ => Vec::new(),
    }
}

/// One record as an item; `index` (0-based) names it when the record has no id of its own.
pub fn item(r: &Value, index: usize, format: Format, ids: TopicIds) -> Result<Item, String> {
    let key = question_key(format);
    let question = r.get(key).and_then(text).ok_or_else(|| format!("no `{key}` text"))?;
    let answers = gold_answers(r, format)?;
    // A record without a gold answer (QALD-10 has one) is kept: it is counted, never run, and
    // scored wrong, rather than dropped or stopping the whole file.
    let topics = topic_entities(r, ids);
    let id = ["ID", "QuestionId", "qid", "ex_id"]
        .iter()
        .find_map(|k| r.get(k).and_then(text))
        .unwrap_or_else(|| format!("#{}", index + 1));
    let hops = r.get("num_edge").and_then(Value::as_u64).map(|n| n as usize);
    Ok(Item { id, question, answers, topics, topics_named: false, hops, gold: None, hidden: Vec::new() })
}

/// The field holding the question's text in this layout.
fn question_key(format: Format) -> &'static str {
    match format {
        Format::Webqsp => "RawQuestion",
        Format::Trex | Format::ZeroShotRe => "input",
        Format::Creak => "sentence",
        _ => "question",
    }
}

/// The record's gold answers, read as its layout gives them; an error for a layout not ToG's.
fn gold_answers(r: &Value, format: Format) -> Result<Vec<GoldAnswer>, String> {
    let names = |v: &Value| text(v).map(GoldAnswer::new);
    Ok(match format {
        Format::Cwq | Format::Simpleqa => r.get("answer").and_then(names).into_iter().collect(),
        Format::Webquestions => {
            r.get("answers").and_then(Value::as_array).map(|a| a.iter().filter_map(names).collect()).unwrap_or_default()
        }
        Format::Grailqa => grailqa_answers(r),
        Format::Qald => qald_answers(r),
        Format::Trex | Format::ZeroShotRe => {
            let aliases: Vec<String> = r
                .get("alias")
                .and_then(Value::as_array)
                .map(|a| a.iter().filter_map(text).collect())
                .unwrap_or_default();
            r.get("answer").and_then(text).map(|name| GoldAnswer { aliases, name }).into_iter().collect()
        }
        Format::Creak => r.get("label").and_then(names).into_iter().collect(),
        Format::Webqsp => webqsp_answers(r),
        Format::Gog | Format::Pathquestion | Format::Jsonl => {
            return Err(format!("{format:?} is not one of ToG's layouts"));
        }
    })
}

/// GrailQA: an entity by its name (its id as an alias); a value as written.
fn grailqa_answers(r: &Value) -> Vec<GoldAnswer> {
    r.get("answer")
        .and_then(Value::as_array)
        .map(|a| {
            a.iter()
                .filter_map(|x| {
                    let arg = x.get("answer_argument").and_then(text)?;
                    Some(match x.get("entity_name").and_then(text) {
                        Some(name) => GoldAnswer { name, aliases: vec![arg] },
                        None => GoldAnswer::new(arg),
                    })
                })
                .collect()
        })
        .unwrap_or_default()
}

/// QALD: `{id: label}` (the id an alias of the label), or a list of names.
fn qald_answers(r: &Value) -> Vec<GoldAnswer> {
    match r.get("answer") {
        Some(Value::Object(m)) => m
            .iter()
            .map(|(id, label)| match text(label) {
                Some(name) => GoldAnswer { name, aliases: vec![id.clone()] },
                None => GoldAnswer::new(id.clone()),
            })
            .collect(),
        Some(other) => other
            .as_array()
            .map(|a| a.iter().filter_map(|v| text(v).map(GoldAnswer::new)).collect())
            .unwrap_or_default(),
        None => Vec::new(),
    }
}

/// WebQSP: every parse's answers, each once.
fn webqsp_answers(r: &Value) -> Vec<GoldAnswer> {
    let mut out: Vec<GoldAnswer> = Vec::new();
    for parse in r.get("Parses").and_then(Value::as_array).into_iter().flatten() {
        for a in parse.get("Answers").and_then(Value::as_array).into_iter().flatten() {
            let arg = a.get("AnswerArgument").and_then(text);
            let g = match (a.get("EntityName").and_then(text), arg) {
                (Some(name), Some(arg)) => GoldAnswer { name, aliases: vec![arg] },
                (Some(name), None) => GoldAnswer::new(name),
                (None, Some(arg)) => GoldAnswer::new(arg),
                (None, None) => continue,
            };
            if !out.iter().any(|o| o.name == g.name) {
                out.push(g);
            }
        }
    }
    out
}

/// The topic entities, with the ids the KG in use names them by.
fn topic_entities(r: &Value, ids: TopicIds) -> Vec<(String, Option<String>)> {
    match ids {
        TopicIds::Freebase => id_map(r.get("topic_entity")),
        TopicIds::Wikidata => {
            let q = id_map(r.get("qid_topic_entity"));
            if q.is_empty() { id_map(r.get("topic_entity_ids")) } else { q }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn broken_records_say_what_is_missing() {
        let f = Format::Cwq;
        assert_eq!(item(&json!({"answer": "x"}), 0, f, TopicIds::Freebase).unwrap_err(), "no `question` text");
        assert!(item(&json!({"question": "q?", "answer": ""}), 0, f, TopicIds::Freebase).unwrap().answers.is_empty());
        assert_eq!(item(&json!({"question": "q?", "answer": 7}), 3, f, TopicIds::Freebase).unwrap().id, "#4");
        assert_eq!(format_of(Path::new("x/graliqa.json")), Some(Format::Grailqa));
        assert_eq!(format_of(Path::new("qald_10-en.json")), Some(Format::Qald));
        assert_eq!(format_of(Path::new("mine.json")), None);
    }
}
