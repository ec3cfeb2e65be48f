//! The gold-path simulation on real PathQuestion records (tests/fixtures/pathquestion): every
//! graph method, choosing along the gold path, reaches every gold answer from KG paths; no reply
//! names a gold answer its prompt does not show; with a gold triple hidden, nothing makes it up.
//! Then one regression test per engine defect the simulation exposed (fixtures/regressions).

use async_trait::async_trait;
use ongraph::engine::{AnswerSource, MethodId, Run, Settings, Topics};
use ongraph::kg::{KgProfile, KnowledgeGraph, Term};
use ongraph::llm::{ChatRequest, Completion, LanguageModel, LlmError};
use ongraph::testing::dataset::{Item, gold_paths, pathquestion};
use ongraph::testing::driver::Driver;
use ongraph::testing::eval::score;
use ongraph::testing::kg::load_file;
use ongraph::testing::llm::GoldPathModel;
use ongraph::testing::overlay::OverlayKg;
use std::path::Path;
use std::sync::{Arc, Mutex};

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

async fn answer(driver: &Driver, item: &Item, method: MethodId) -> Run {
    let settings = Settings { method, ..Settings::default() };
    run_with(driver, &item.question, Topics::Linked(item.topics.clone()), settings).await
}

async fn run_with(driver: &Driver, question: &str, topics: Topics, settings: Settings) -> Run {
    let kg = driver.kg();
    let mut run = Run::new(
        question,
        topics,
        settings,
        Arc::new(ongraph::engine::builtin_prompts()),
        kg.profile().clone(),
        kg.name(),
    )
    .unwrap();
    driver.run(&mut run, |_, _| {}).await.unwrap();
    run
}

#[tokio::test]
async fn every_graph_method_reaches_every_gold_answer_along_the_gold_path() {
    for (kb, questions) in FIXTURES {
        let (kg, items) = fixture(kb, questions);
        assert!(!items.is_empty());
        for method in [MethodId::TOG, MethodId::TOG_R, MethodId::POG, MethodId::POG_E, MethodId::GOG] {
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
                    MethodId::TOG | MethodId::TOG_R => 2 * hops + hops + 1,
                    MethodId::POG | MethodId::POG_E => 4 + 2 * hops,
                    _ => hops + 2 + hops,
                };
                assert!(calls <= bound, "{method:?} {:?}: {calls} calls > {bound}", item.question);
            }
        }
    }
}

/// The simulation, recording the system message of every call.
struct Systems {
    inner: GoldPathModel,
    seen: Mutex<Vec<String>>,
}

#[async_trait]
impl LanguageModel for Systems {
    fn describe(&self) -> String {
        self.inner.describe()
    }

    async fn complete(&self, request: &ChatRequest) -> Result<Completion, LlmError> {
        self.seen.lock().unwrap().push(request.system.clone());
        self.inner.complete(request).await
    }
}

/// Issue 34: the shared-prefix layout moves each kind's instructions and examples into one
/// system message; what each call asks is unchanged. The simulation, reading only the call's
/// own paragraph, answers every question as under the per-call layout, with the same calls,
/// and every call of a run has the same system message. (The simulation reads the free-text
/// prompts; the structured ones are checked in src/engine/context.rs and against the real
/// server in tests/real_llm.rs.)
#[tokio::test]
async fn the_shared_prefix_layout_asks_the_same_calls() {
    use ongraph::engine::PromptLayout;
    let (kg, items) = fixture("2H-kb.txt", "PQ-2H.txt");
    let model = Arc::new(Systems { inner: GoldPathModel::new(gold_paths(&items)), seen: Mutex::default() });
    // PoG's selections take the width from the instructions, which move to the system message.
    let runs = [(MethodId::TOG, 3), (MethodId::TOG_R, 3), (MethodId::POG, 3), (MethodId::POG, 5), (MethodId::GOG, 3)];
    for (method, width) in runs {
        for item in items.iter().take(8) {
            let what = format!("{method:?} width {width} {:?}", item.question);
            // A driver each: its memo would answer a question met before without a call.
            let run_in = |prompt_layout| {
                let settings = Settings { method, width, prompt_layout, ..Settings::default() };
                let driver = Driver::new(kg.clone(), model.clone());
                async move { run_with(&driver, &item.question, Topics::Linked(item.topics.clone()), settings).await }
            };
            let per_call = run_in(PromptLayout::PerCall).await;
            model.seen.lock().unwrap().clear();
            let shared = run_in(PromptLayout::SharedPrefix).await;
            assert_eq!(shared.answer().unwrap().answers, per_call.answer().unwrap().answers, "{what}");
            let steps = |run: &Run| calls(run).into_iter().map(|(step, _)| step).collect::<Vec<_>>();
            assert_eq!(steps(&shared), steps(&per_call), "{what}");
            let systems = std::mem::take(&mut *model.seen.lock().unwrap());
            assert!(!systems.is_empty() && systems.windows(2).all(|w| w[0] == w[1]), "{what}: {systems:?}");
            for ((_, shared_prompt), (_, full_prompt)) in calls(&shared).iter().zip(calls(&per_call).iter()) {
                // The call's own paragraph, after its task's name, ends the per-call prompt;
                // its instructions are in the system message.
                let (task, own) = shared_prompt.split_once('\n').unwrap_or_default();
                assert!(task.starts_with("Task: ") && systems[0].contains(&format!("{task}\n")), "{what}: {task}");
                assert!(full_prompt.ends_with(own) && own.len() < full_prompt.len(), "{what}: {shared_prompt}");
                let instructions = &full_prompt[..full_prompt.len() - own.len()];
                assert!(
                    systems[0].contains(instructions.trim_end()),
                    "{what}: {instructions}\n=====SYSTEM\n{}",
                    systems[0]
                );
            }
        }
    }
}

#[tokio::test]
async fn the_baselines_know_nothing_beyond_the_path() {
    let (kg, items) = fixture("2H-kb.txt", "PQ-2H.txt");
    let driver = Driver::new(kg, model(&items));
    let run = answer(&driver, &items[0], MethodId::IO).await;
    assert_eq!(run.answer().unwrap().answers, vec!["unknown"]);
}

#[tokio::test]
async fn with_a_gold_triple_hidden_the_simulation_does_not_write_it() {
    let (kg, items) = fixture("3H-kb.txt", "PQ-3H.txt");
    let item = &items[0];
    // sylvia_brett → spouse → charles_vyner_brooke → parents → …: hide the second hop.
    let gold = item.gold.clone().unwrap();
    let (rel, parent) = gold.hops[1].clone();
    let hidden = vec![("charles_vyner_brooke".to_string(), rel.clone(), Term::Entity(parent.replace(' ', "_")))];
    let local = load_file(Path::new("tests/fixtures/pathquestion/3H-kb.txt"), KgProfile::named_ids(), false).unwrap().0;
    let overlay = OverlayKg::new(Arc::new(local), &[]).with_hidden(&hidden);
    assert!(kg.name().contains("3H"));
    let model = Arc::new(Watched::new(item));
    let driver = Driver::new(Arc::new(overlay), model.clone());
    let run = answer(&driver, item, MethodId::GOG).await;
    // A reader of its prompt cannot know the hidden fact: no gold answer, not from the KG.
    let a = run.answer().unwrap();
    assert_eq!(score(&a.answers, &item.answers).f1, 0.0, "{:?}", a.answers);
    assert_ne!(a.source, AnswerSource::KgPaths);
    model.assert_no_leak();
}

/// Wraps the simulation for one question and records every reply that names one of its gold
/// answers that the prompt does not show.
struct Watched {
    inner: GoldPathModel,
    answers: Vec<String>,
    leaks: Mutex<Vec<String>>,
}

impl Watched {
    fn new(item: &Item) -> Self {
        Self {
            inner: GoldPathModel::new(gold_paths(std::slice::from_ref(item))),
            answers: item.answers.iter().map(|a| a.name.clone()).collect(),
            leaks: Mutex::new(Vec::new()),
        }
    }

    fn assert_no_leak(&self) {
        let leaks = self.leaks.lock().unwrap();
        assert!(leaks.is_empty(), "replies naming a gold answer their prompt does not show:\n{}", leaks.join("\n"));
    }
}

/// Whether `text` names `name` as a whole word (case, `_` and spaces aside).
fn names(text: &str, name: &str) -> bool {
    let (text, name) = (text.replace('_', " ").to_lowercase(), name.replace('_', " ").to_lowercase());
    let glued = |c: Option<char>| c.is_some_and(char::is_alphanumeric);
    text.match_indices(&name)
        .any(|(at, _)| !glued(text[..at].chars().next_back()) && !glued(text[at + name.len()..].chars().next()))
}

#[async_trait]
impl LanguageModel for Watched {
    fn describe(&self) -> String {
        self.inner.describe()
    }

    async fn complete(&self, request: &ChatRequest) -> Result<Completion, LlmError> {
        let c = self.inner.complete(request).await?;
        for a in &self.answers {
            if names(&c.text, a) && !names(&request.prompt, a) {
                self.leaks.lock().unwrap().push(format!("{a:?} in {:?} (step {})", c.text, request.step));
            }
        }
        Ok(c)
    }
}

/// Every question of every fixture, every graph method: no reply names a gold answer its
/// prompt does not show (the simulation reads only its prompt).
#[tokio::test]
async fn no_simulated_reply_names_an_answer_its_prompt_does_not_show() {
    let sets = FIXTURES
        .iter()
        .map(|&(kb, q)| (String::new(), kb, q))
        .chain(REGRESSIONS.iter().map(|&(kb, q)| ("regressions/".to_string(), kb, q)))
        .chain([("eval/".to_string(), "2H-kb.txt", "PQ-2H.txt")]);
    let mut runs = 0;
    for (dir, kb, questions) in sets {
        let (kg, items) = fixture(&format!("{dir}{kb}"), &format!("{dir}{questions}"));
        for item in &items {
            for method in [MethodId::TOG, MethodId::TOG_R, MethodId::POG, MethodId::POG_E, MethodId::GOG] {
                let model = Arc::new(Watched::new(item));
                let driver = Driver::new(kg.clone(), model.clone());
                answer(&driver, item, method).await;
                model.assert_no_leak();
                runs += 1;
            }
        }
    }
    assert!(runs >= 5 * 49, "{runs} runs");
}

const REGRESSIONS: &[(&str, &str)] =
    &[("3H-kb.txt", "PQ-3H.txt"), ("2H-kb.txt", "PQ-2H.txt"), ("PQL3-KB.txt", "PQL-3H.txt")];

/// The prompts of every call of a run, in order, with their step.
fn calls(run: &Run) -> Vec<(String, String)> {
    run.trace().iter().flat_map(|e| e.calls.iter().map(|c| (c.step.clone(), c.prompt.clone()))).collect()
}

fn regression(kb: &str, questions: &str) -> (Arc<dyn KnowledgeGraph>, Vec<Item>) {
    fixture(&format!("regressions/{kb}"), &format!("regressions/{questions}"))
}

/// The simulation with some replies replaced: a prompt whose question block contains the key
/// gets the reply given (a real model may weigh things the simulation would not).
struct Steered {
    inner: GoldPathModel,
    replies: Vec<(&'static str, &'static str)>,
}

#[async_trait]
impl LanguageModel for Steered {
    fn describe(&self) -> String {
        "the gold-path simulation, steered".into()
    }

    async fn complete(&self, request: &ChatRequest) -> Result<Completion, LlmError> {
        let block = &request.prompt[request.prompt.rfind("Q: ").unwrap_or(0)..];
        match self.replies.iter().find(|(key, _)| block.contains(key)) {
            Some((_, text)) => {
                let mut c = self.inner.complete(request).await?;
                c.text = text.to_string();
                Ok(c)
            }
            None => self.inner.complete(request).await,
        }
    }
}

/// PQ-3H line 31, "what is the parent of claudius 's father 's kid ?" (antonia minor). A model
/// that also follows `parents` back from antonia minor reaches livilla at depth 2 twice, with the
/// same score: through `nero claudius drusus -> children` (the gold path) and from `antonia
/// minor <- parents`. The older copy (antonia's) holds the beam slot; the other path is merged
/// into it, so its triples reach the model and the next hop (back to antonia minor across
/// antonia's own triple, forward along the gold path) stays legal.
#[tokio::test]
async fn an_entity_reached_twice_keeps_both_paths() {
    let (kg, items) = regression("3H-kb.txt", "PQ-3H.txt");
    let item = items.iter().find(|i| i.question.contains("claudius")).unwrap();
    let steered = Steered {
        inner: GoldPathModel::new(gold_paths(&items)),
        replies: vec![
            ("Topic Entity: antonia minor\n", "{parents (incoming) (Score: 1.0)}"),
            ("Relation: parents (incoming)\nEntities: claudius; livilla\n", "Score: 0.0, 1.0"),
        ],
    };
    let driver = Driver::new(kg, Arc::new(steered));
    let run = answer(&driver, item, MethodId::TOG).await;
    let merged = run.beam().nodes.iter().filter(|n| !n.also_via.is_empty()).count();
    assert_eq!(merged, 1, "livilla is reached twice and merged");
    let a = run.answer().unwrap();
    assert_eq!(a.answers, vec!["antonia minor"]);
    assert_eq!(a.source, AnswerSource::KgPaths);
    // The answer's paths include the merged one: together they chain the topic to the answer.
    let shown: Vec<&str> = a.paths.iter().map(|p| p.text.as_str()).collect();
    assert!(shown.iter().any(|p| p.contains("nero claudius drusus -> children -> livilla")), "{shown:?}");
    let (_, last) = calls(&run).into_iter().rfind(|(step, _)| step == "reasoning").unwrap();
    for triple in [
        "claudius, parents, nero claudius drusus",
        "nero claudius drusus, children, livilla",
        "livilla, parents, antonia minor",
    ] {
        assert!(last.contains(triple), "the sufficient check does not show {triple:?}:\n{last}");
    }
    // The plain simulation reaches it too, along the gold path alone.
    let driver = Driver::new(regression("3H-kb.txt", "PQ-3H.txt").0, model(&items));
    assert_eq!(answer(&driver, item, MethodId::TOG).await.answer().unwrap().answers, vec!["antonia minor"]);
}

/// PQ-2H line 4: rudolf christian count of ostfriesland has `children` only as incoming (anna
/// of holstein-gottorp's child); every prompt that lists it says so.
#[tokio::test]
async fn incoming_relations_are_marked_in_every_prompt() {
    let (kg, items) = regression("2H-kb.txt", "PQ-2H.txt");
    let item = &items[0];
    for method in [MethodId::TOG, MethodId::TOG_R] {
        let driver = Driver::new(kg.clone(), model(&items));
        let run = answer(&driver, item, method).await;
        assert_eq!(run.answer().unwrap().answers, vec!["enno iii count of ostfriesland"], "{method:?}");
        let (_, offered) = calls(&run)
            .into_iter()
            .find(|(step, p)| {
                step == "relation_prune"
                    && p.contains("Topic Entity: rudolf christian count of ostfriesland\nRelations")
            })
            .unwrap_or_else(|| panic!("{method:?}: no relation prompt for rudolf"));
        let list = offered.rsplit("\nRelation").next().unwrap();
        assert!(list.contains("children (incoming)"), "{method:?}: {list}");
        assert!(list.contains("parents") && !list.contains("parents (incoming)"), "{method:?}: {list}");
    }
}

/// PQ-2H line 19, "who is the child of shah_shuja 's parent ?": the answer is the topic. GoG
/// observes both triples between shah shuja and mumtaz mahal in one search and finishes; the
/// two paths close a cycle through the topic, so the answer is from KG paths, not "no path the
/// model was shown names its answer". ToG and ToG-R walk the loop to a second shah shuja node
/// and say so too (PoG's candidate paths visit no entity twice, a limit BENCHMARKS counts).
#[tokio::test]
async fn an_answer_that_walks_back_to_the_topic_is_from_kg_paths() {
    let (kg, items) = regression("2H-kb.txt", "PQ-2H.txt");
    let item = items.iter().find(|i| i.question.contains("shah_shuja")).unwrap();
    for method in [MethodId::GOG, MethodId::TOG, MethodId::TOG_R] {
        let driver = Driver::new(kg.clone(), model(&items));
        let run = answer(&driver, item, method).await;
        let a = run.answer().unwrap();
        assert_eq!(
            (a.answers.as_slice(), a.source),
            (&["shah shuja".to_string()][..], AnswerSource::KgPaths),
            "{method:?}"
        );
        assert!(a.paths.iter().any(|p| run.reaches_answer(p.leaf)), "{method:?}: a path listed as supporting it");
    }
}

/// PQ-3H line 91 (ToG-R): `male`, reached with its only relation the incoming `gender` of 285
/// people, is judged like any entity (one call) instead of being expanded unasked into a pool
/// that crowds the gold chain out of the draw.
#[tokio::test]
async fn tog_r_is_not_flooded_by_an_attribute_node() {
    let (kg, items) = regression("3H-kb.txt", "PQ-3H.txt");
    let item = items.iter().find(|i| i.question.contains("carlos_thompson")).unwrap();
    for seed in 0..8 {
        let driver = Driver::new(kg.clone(), model(&items));
        let settings = Settings { method: MethodId::TOG_R, seed, ..Settings::default() };
        let run = run_with(&driver, &item.question, Topics::Linked(item.topics.clone()), settings).await;
        let a = run.answer().unwrap();
        assert_eq!(a.answers, vec!["male"], "seed {seed}");
        assert_eq!(a.source, AnswerSource::KgPaths, "seed {seed}");
        let (_, last) = calls(&run).into_iter().rfind(|(step, _)| step == "reasoning").unwrap();
        assert!(last.contains("carlos thompson -> spouse -> spouse -> gender: male"), "seed {seed}: {last}");
    }
}

/// PQL-3H: `Believe` is both an id and (case aside) the label of `BELIEVE`; the exact id wins.
#[tokio::test]
async fn an_exact_id_links_before_a_case_variant() {
    let (kg, items) = regression("PQL3-KB.txt", "PQL-3H.txt");
    let driver = Driver::new(kg, model(&items));
    for item in &items {
        let topics = Topics::Named(vec!["Believe".into()]);
        let run = run_with(&driver, &item.question, topics, Settings::default()).await;
        let root = run.beam().roots().next().unwrap().term().unwrap().as_str().to_string();
        assert_eq!(root, "Believe");
        let a = run.answer().unwrap();
        assert!(score(&a.answers, &item.answers).hit, "{:?}: {:?} (gold {:?})", item.question, a.answers, item.answers);
    }
}
