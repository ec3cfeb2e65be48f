//! PathQuestion (PQ, PQL; Zhou et al., COLING 2018): `question<TAB>answer(ans1/ans2/)<TAB>path`,
//! the path `topic#r1#e1#r2#e2…` (PQ appends `#<end>#answer`). Entities are names with `_` for
//! spaces; their labels are the names with spaces, as the `named-ids` KG profile shows them.

use super::GoldAnswer;
use super::GoldPath;
use super::{DatasetError, Item};
use std::path::{Path, PathBuf};

/// The label the `named-ids` profile gives an id.
pub fn label(id: &str) -> String {
    id.replace('_', " ")
}

/// The KB file beside a PathQuestion question file (`PQ-2H.txt` → `2H-kb.txt`, `PQL-3H.txt` and
/// `PQL-3H_more.txt` → `PQL3-KB.txt`), matched case-insensitively; `None` when the name is not
/// a PathQuestion one or no such file is there.
pub fn kb_for(questions: &Path) -> Option<PathBuf> {
    let stem = questions.file_stem()?.to_str()?.to_uppercase();
    let kb = match stem.as_str() {
        "PQ-2H" => "2H-KB.TXT",
        "PQ-3H" => "3H-KB.TXT",
        "PQL-2H" => "PQL2-KB.TXT",
        s if s.starts_with("PQL-3H") => "PQL3-KB.TXT",
        _ => return None,
    };
    let dir = questions.parent().filter(|d| !d.as_os_str().is_empty()).unwrap_or(Path::new("."));
    std::fs::read_dir(dir)
        .ok()?
        .filter_map(Result::ok)
        .map(|e| e.path())
        .find(|p| p.file_name().and_then(|n| n.to_str()).is_some_and(|n| n.to_uppercase() == kb))
}

pub fn load(path: &Path) -> Result<Vec<Item>, DatasetError> {
    let shown = path.display().to_string();
    let text = super::read_text(path)?;
    text.lines()
        .enumerate()
        .filter(|(_, l)| !l.trim().is_empty())
        .map(|(i, l)| {
            parse_line(l, i + 1).map_err(|message| DatasetError::Line { path: shown.clone(), line: i + 1, message })
        })
        .collect()
}

/// One question line; `line` becomes the item's id.
pub fn parse_line(line: &str, number: usize) -> Result<Item, String> {
    let fields: Vec<&str> = line.trim_end_matches('\r').split('\t').collect();
    let [question, answers, path] = fields.as_slice() else {
        return Err(format!("expected 3 tab-separated fields (question, answers, path), found {}", fields.len()));
    };
    let question = question.trim();
    if question.is_empty() {
        return Err("the question is empty".into());
    }
    let answers = parse_answers(answers)?;
    let parts: Vec<&str> = path.trim().split('#').collect();
    let topic = parts[0].trim();
    if topic.is_empty() {
        return Err(format!("the path {path:?} has no topic entity"));
    }
    let mut hops = Vec::new();
    for pair in parts[1..].chunks(2) {
        match pair {
            ["<end>", ..] => break,
            [relation, entity] if !relation.is_empty() && !entity.is_empty() => {
                hops.push((relation.to_string(), label(entity)));
            }
            _ => return Err(format!("the path {path:?} is not topic#relation#entity#…")),
        }
    }
    if hops.is_empty() {
        return Err(format!("the path {path:?} has no hop"));
    }
    let answer_labels: Vec<String> = answers.iter().map(|a| label(a)).collect();
    Ok(Item {
        id: format!("line {number}"),
        question: question.to_string(),
        topics: vec![(topic.to_string(), Some(label(topic)))],
        hops: Some(hops.len()),
        answers: answer_labels.iter().map(GoldAnswer::new).collect(),
        gold: Some(GoldPath { topic: label(topic), hops, answers: answer_labels }),
        topics_named: false,
        hidden: Vec::new(),
    })
}

/// `answer(ans1/ans2/)`: the list in the parentheses after one of its answers (not always the
/// first: `female(male/female/)`). Names may hold parentheses themselves, so the list is the
/// one that contains the text before it.
fn parse_answers(field: &str) -> Result<Vec<String>, String> {
    let field = field.trim();
    let bad = || format!("the answers {field:?} are not first_answer(answer1/answer2/)");
    let inner = field.strip_suffix(')').ok_or_else(bad)?;
    for (i, _) in inner.match_indices('(') {
        let (first, list) = (&inner[..i], &inner[i + 1..]);
        let all: Vec<String> = list.split('/').filter(|a| !a.is_empty()).map(String::from).collect();
        if all.iter().any(|a| a == first) {
            return Ok(all);
        }
    }
    Err(bad())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_pq_and_pql_lines() {
        let pq = "which nationality is frederica_of_mecklenburg-strelitz 's couple ?\tunited_kingdom(united_kingdom/)\tfrederica_of_mecklenburg-strelitz#spouse#ernest_augustus_i_of_hanover#nationality#united_kingdom#<end>#united_kingdom";
        let item = parse_line(pq, 1).unwrap();
        assert_eq!(
            item.topics,
            vec![("frederica_of_mecklenburg-strelitz".into(), Some("frederica of mecklenburg-strelitz".into()))]
        );
        assert_eq!(item.answers, vec![GoldAnswer::new("united kingdom")]);
        let gold = item.gold.unwrap();
        assert_eq!(
            gold.hops,
            vec![
                ("spouse".into(), "ernest augustus i of hanover".into()),
                ("nationality".into(), "united kingdom".into())
            ]
        );
        let pql = " what is the notable_types of Kenneth_Peach 's film ?\tAdaptation(Adaptation/Biopic/)\tKenneth_Peach#__film__cinematographer__film#Dirty_Work#__common__topic__notable_types#Adaptation";
        let item = parse_line(pql, 2).unwrap();
        assert_eq!(item.question, "what is the notable_types of Kenneth_Peach 's film ?");
        assert_eq!(item.answers, vec![GoldAnswer::new("Adaptation"), GoldAnswer::new("Biopic")]);
        assert_eq!(item.hops, Some(2));
    }

    #[test]
    fn names_with_parentheses_and_broken_lines() {
        assert_eq!(parse_answers("paris_(france)(paris_(france)/lyon/)").unwrap(), vec!["paris_(france)", "lyon"]);
        assert_eq!(parse_answers("female(male/female/)").unwrap(), vec!["male", "female"]);
        for bad in [
            "only a question",
            "q\tx(y/)\tt#r#e",
            "q\tnone\tt#r#e",
            "q\tx(x/)\tt#r",
            "q\tx(x/)\t#r#e",
            "\tx(x/)\tt#r#x",
        ] {
            assert!(parse_line(bad, 1).is_err(), "{bad:?}");
        }
    }
}
