//! The gold-path simulation on real PathQuestion records (tests/fixtures/pathquestion): every
//! graph method, following the gold path, reaches every gold answer from KG paths; with a gold
//! triple hidden, GoG generates it, verification keeps it, and the answer follows.

use ongraph::dataset::{Item, gold_paths, pathquestion};
use ongraph::driver::Driver;
use ongraph::engine::{AnswerSource, Method, Run, Settings, Topics};
use ongraph::eval::metrics::score;
use ongraph::kg::load::load_file;
use ongraph::kg::{KgProfile, KnowledgeGraph, Term};
use ongraph::llm::gold_path::GoldPathModel;
use ongraph::overlay::OverlayKg;
use ongraph::prompts::Prompts;
use std::path::Path;
use std::sync::Arc;

const FIXTURES: &[(&str, &str)] =
    &[("2H-kb.txt", "PQ-2H.txt"), ("3H-kb.txt", "PQ-3H.txt"), ("PQL2-kb.txt", "PQL-2H.txt")];

fn fixture(kb: &str, questions: &str) -> (Arc<dyn KnowledgeGraph>, Vec<Item>) {
    let dir = Path::new("tests/fixtures/pathquestion");
    let (graph, _) = load_file(&dir.join(kb), KgProfile::named_ids(), false).unwrap();
    (Arc::new(graph), pathquestion::load(&dir.join(questions)).unwrap())
}

fn model(items: &[Item]) -> Arc<GoldPathModel> {
    assert!(items.iter().all(|i| i.gold.is_some()), "PathQuestion gives every question a gold path");
    Arc::new(GoldPathModel::new(gold_paths(items)))
}

async fn answer(driver: &Driver, item: &Item, method: Method) -> Run {
    let kg = driver.kg();
    let settings = Settings { method, ..Settings::default() };
    let topics = Topics::Linked(item.topics.clone());
    let mut run =
        Run::new(&item.question, topics, settings, Arc::new(Prompts::builtin()), kg.profile().clone(), kg.name())
            .unwrap();
    driver.run(&mut run, |_, _| {}).await.unwrap();
    run
}

#[tokio::test]
async fn every_graph_method_reaches_every_gold_answer_along_the_gold_path() {
    for (kb, questions) in FIXTURES {
        let (kg, items) = fixture(kb, questions);
        assert!(!items.is_empty());
        for method in [Method::Tog, Method::TogR, Method::Pog, Method::PogE, Method::Gog] {
            let driver = Driver::new(kg.clone(), model(&items));
            for item in &items {
                let run = answer(&driver, item, method).await;
                let a = run.answer().unwrap();
                assert!(
                    score(&a.answers, &item.answers).f1 > 0.0,
                    "{method:?} on {questions} {:?}: {:?} (gold {:?})",
                    item.question,
                    a.answers,
                    item.answers
                );
                assert_eq!(a.source, AnswerSource::KgPaths, "{method:?} {:?}", item.question);
                let hops = item.hops.unwrap() as u64;
                let calls = run.costs().llm_calls;
                // Each method's own bound for a path of this length, with every choice right.
                let bound = match method {
                    Method::Tog | Method::TogR => 2 * hops + hops + 1,
                    Method::Pog | Method::PogE => 4 + 2 * hops,
                    _ => hops + 2 + hops,
                };
                assert!(calls <= bound, "{method:?} {:?}: {calls} calls > {bound}", item.question);
            }
        }
    }
}

#[tokio::test]
async fn the_baselines_know_nothing_beyond_the_path() {
    let (kg, items) = fixture("2H-kb.txt", "PQ-2H.txt");
    let driver = Driver::new(kg, model(&items));
    let run = answer(&driver, &items[0], Method::Io).await;
    assert_eq!(run.answer().unwrap().answers, vec!["unknown"]);
}

#[tokio::test]
async fn with_a_gold_triple_hidden_gog_generates_it_and_verification_keeps_it() {
    let (kg, items) = fixture("3H-kb.txt", "PQ-3H.txt");
    let item = &items[0];
    // sylvia_brett → spouse → charles_vyner_brooke → parents → …: hide the second hop.
    let gold = item.gold.clone().unwrap();
    let (rel, parent) = gold.hops[1].clone();
    let hidden = vec![("charles_vyner_brooke".to_string(), rel.clone(), Term::Entity(parent.replace(' ', "_")))];
    let local = load_file(Path::new("tests/fixtures/pathquestion/3H-kb.txt"), KgProfile::named_ids(), false).unwrap().0;
    let overlay = OverlayKg::new(Arc::new(local), &[]).with_hidden(&hidden);
    assert!(kg.name().contains("3H"));
    let driver = Driver::new(Arc::new(overlay), model(&items));
    let run = answer(&driver, item, Method::Gog).await;
    let actions: Vec<&str> = run.gog_steps().iter().map(|s| s.action.as_str()).collect();
    assert!(actions.iter().any(|a| a.starts_with("Generate[")), "{actions:?}");
    let generated = run.generated();
    assert!(generated.iter().any(|g| g.kept && g.relation == rel && g.tail == parent), "{generated:?}");
    // The generated tail is linked to the KG entity, so the next Search reaches the answer.
    assert!(generated.iter().any(|g| g.tail_term == Some(Term::Entity(parent.replace(' ', "_")))));
    let names: Vec<&str> = item.answers.iter().map(|a| a.name.as_str()).collect();
    assert_eq!(run.answer().unwrap().answers, names);
}
