//! Dataset loaders on real records (tests/fixtures/tog: cut from ToG's question files;
//! WebQSP written from its schema), including each file's odd fields.

use ongraph::testing::dataset::Format;
use ongraph::testing::dataset::tog::{TopicIds, format_of, load};
use ongraph::testing::eval::GoldAnswer;
use std::path::Path;

fn fixture(name: &str, ids: TopicIds) -> Vec<ongraph::testing::dataset::Item> {
    let path = Path::new("tests/fixtures/tog").join(name);
    let format = format_of(&path).unwrap();
    load(&path, format, ids).unwrap()
}

#[test]
fn cwq_has_one_string_answer_and_topics_in_file_order() {
    let items = fixture("cwq.json", TopicIds::Freebase);
    assert_eq!(items.len(), 2);
    assert_eq!(items[0].id, "WebQTest-832_c334509bb5e02cacae1ba2e80c176499");
    assert_eq!(items[0].answers, vec![GoldAnswer::new("2014 World Series")]);
    assert_eq!(items[0].topics, vec![("m.03_dwn".to_string(), Some("Lou Seal".to_string()))]);
    let ids: Vec<&str> = items[1].topics.iter().map(|(id, _)| id.as_str()).collect();
    assert_eq!(ids, ["m.010qhfmm", "m.019v9k"]);
    // The first record has no Wikidata topic: an empty list, not an error.
    assert!(fixture("cwq.json", TopicIds::Wikidata)[0].topics.is_empty());
}

#[test]
fn webqsp_answers_are_the_union_of_its_parses() {
    let items = fixture("WebQSP.json", TopicIds::Freebase);
    let names: Vec<&str> = items[0].answers.iter().map(|a| a.name.as_str()).collect();
    assert_eq!(names, ["Jamaican English", "Jamaican Creole English Language"]);
    assert_eq!(items[0].answers[0].aliases, ["m.01428y"]);
    // A value answer has no entity name: the argument is the answer.
    assert_eq!(items[1].answers, vec![GoldAnswer::new("2014")]);
    assert_eq!(items[1].id, "WebQTest-1");
}

#[test]
fn grailqa_reads_answer_arguments_and_hops() {
    let items = fixture("graliqa.json", TopicIds::Freebase);
    assert_eq!(items[0].answers, vec![GoldAnswer { name: "The Illusion".into(), aliases: vec!["m.0yrltsn".into()] }]);
    assert_eq!(items[0].hops, Some(1));
    assert_eq!(items[2].answers, vec![GoldAnswer::new("1")], "a literal answer_argument");
}

#[test]
fn qald_maps_ids_to_labels_and_keeps_every_answer() {
    let items = fixture("qald_10-en.json", TopicIds::Wikidata);
    assert_eq!(items[0].answers, vec![GoldAnswer { name: "Bernhard Riemann".into(), aliases: vec!["Q42299".into()] }]);
    assert_eq!(items[0].topics, vec![("Q761383".to_string(), Some("Riemannian geometry".to_string()))]);
    assert!(items[2].answers.len() > 1, "{:?}", items[2].answers);
    assert_eq!(items[2].answers[0].name, "New York Stock Exchange");
}

#[test]
fn the_other_files() {
    let trex = fixture("T-REX.json", TopicIds::Wikidata);
    assert_eq!(trex[0].question, "Cirith Ungol [SEP] genre");
    assert_eq!(trex[0].answers, vec![GoldAnswer { name: "heavy metal".into(), aliases: vec!["heavy metal".into()] }]);
    let zsre = fixture("Zero_Shot_RE.json", TopicIds::Wikidata);
    assert_eq!(zsre[0].topics[0].0, "Q6179056");
    let creak = fixture("creak.json", TopicIds::Wikidata);
    assert_eq!((creak[0].id.as_str(), creak[0].answers[0].name.as_str()), ("dev_0", "false"));
    let wq = fixture("WebQuestions.json", TopicIds::Freebase);
    assert_eq!(wq[0].answers.len(), 2);
    let sq = fixture("SimpleQA.json", TopicIds::Freebase);
    assert_eq!(sq[0].answers, vec![GoldAnswer::new("United States of America")]);
    assert_eq!(sq[0].id, "#1");
}

#[test]
fn a_broken_file_names_the_record() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("cwq.json");
    std::fs::write(&path, r#"[{"question": "ok?", "answer": "a"}, {"answer": "no question"}]"#).unwrap();
    let err = load(&path, Format::Cwq, TopicIds::Freebase).unwrap_err().to_string();
    assert!(err.ends_with("cwq.json, record 2: no `question` text"), "{err}");
    // A record without a gold answer is kept (to be counted wrong), not an error.
    std::fs::write(&path, r#"[{"question": "ok?", "answer": "a"}, {"question": "no answer?"}]"#).unwrap();
    assert!(load(&path, Format::Cwq, TopicIds::Freebase).unwrap()[1].answers.is_empty());
    std::fs::write(&path, "[{").unwrap();
    let err = load(&path, Format::Cwq, TopicIds::Freebase).unwrap_err().to_string();
    assert!(err.contains("cwq.json:1:"), "{err}");
}

#[test]
fn an_empty_dataset_is_an_error_and_a_byte_order_mark_is_ignored() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("cwq.json");
    std::fs::write(&path, "[]").unwrap();
    let err = ongraph::testing::dataset::load(&path, Format::Cwq, TopicIds::Freebase).unwrap_err().to_string();
    assert!(err.ends_with("cwq.json holds no questions"), "{err}");
    std::fs::write(&path, "\u{feff}[{\"question\": \"ok?\", \"answer\": \"a\"}]").unwrap();
    assert_eq!(ongraph::testing::dataset::load(&path, Format::Cwq, TopicIds::Freebase).unwrap()[0].question, "ok?");
    let pq = dir.path().join("PQ-2H.txt");
    std::fs::write(&pq, "").unwrap();
    let err = ongraph::testing::dataset::load(&pq, Format::Pathquestion, TopicIds::Freebase).unwrap_err().to_string();
    assert!(err.ends_with("PQ-2H.txt holds no questions"), "{err}");
    std::fs::write(&pq, "\u{feff}which nationality is x 's couple ?\tuk(uk/)\tx#spouse#y#nationality#uk#<end>#uk\n")
        .unwrap();
    let items = ongraph::testing::dataset::load(&pq, Format::Pathquestion, TopicIds::Freebase).unwrap();
    assert!(items[0].question.starts_with("which"), "{:?}", items[0].question);
}
