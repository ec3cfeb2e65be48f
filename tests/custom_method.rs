//! A method defined outside the engine, through the `Method` trait and a registry line
//! (`common/bfs.rs`): a breadth-first walk that asks the model only for the final answer, with a
//! prompt template and a reply shape of its own (listed in its registry entry, nowhere else).
//! It runs through `ask`'s driver with replies free or structured, a prompts directory may
//! rewrite its template, it is recorded into a session saved on disk, and replays from that file
//! alone. `custom_method_program.rs` runs it in a program of its own: `ask`, `eval` and the UI.

#[path = "common/bfs.rs"]
mod bfs;

use async_trait::async_trait;
use bfs::{BFS_ANSWER, BFS_REPLY, BFS_SHAPE, ENTRY, registry};
use ongraph::engine::{
    EngineError, MethodEntry, MethodId, Offer, Override, Registry, RegistryError, ReplyShape, Run, Settings, Topics,
};
use ongraph::kg::KnowledgeGraph;
use ongraph::llm::{ChatRequest, Completion, LanguageModel, LlmError};
use ongraph::prompts::{Template, TemplateDef};
use ongraph::testing::driver::Driver;
use ongraph::testing::kg::demo_graph;
use ongraph::testing::session::{Session, SessionError};
use serde_json::json;
use std::sync::{Arc, Mutex};

const QUESTION: &str = "In which time zone is Canberra?";

/// Reads its prompt only: answers with the object of the numbered triple whose relation is a
/// time zone, or says it does not know; in JSON of the shape asked for, when one is. Keeps
/// the requests it was sent.
#[derive(Default)]
struct TimeZoneReader {
    requests: Mutex<Vec<ChatRequest>>,
}

#[async_trait]
impl LanguageModel for TimeZoneReader {
    fn describe(&self) -> String {
        "time-zone reader".into()
    }
    async fn complete(&self, request: &ChatRequest) -> Result<Completion, LlmError> {
        self.requests.lock().unwrap().push(request.clone());
        let found = request
            .prompt
            .lines()
            .filter_map(|l| l.split_once(". "))
            .map(|(n, triple)| (n, triple.split(", ").collect::<Vec<_>>()))
            .find(|(_, parts)| parts.len() == 3 && parts[1].contains("time_zones"))
            .map(|(n, parts)| (n.to_string(), parts[2].to_string()));
        let text = match (found, &request.schema) {
            (Some((n, t)), Some(_)) => format!(r#"{{"answer": "{t}", "triple": {n}}}"#),
            (Some((_, t)), None) => format!("The triples say so: {{{t}}}."),
            (None, _) => "I do not know.".into(),
        };
        Ok(Completion { text, ..Completion::default() })
    }
}

fn settings() -> Settings {
    Settings { method: MethodId::from("bfs"), depth: 1, ..Settings::default() }
}

fn topics() -> Topics {
    Topics::Linked(vec![("m.canberra".into(), Some("Canberra".into()))])
}

#[tokio::test]
async fn a_method_from_outside_runs_is_recorded_and_replays_from_its_file() {
    for structured in [false, true] {
        runs_is_recorded_and_replays(structured).await;
    }
}

async fn runs_is_recorded_and_replays(structured: bool) {
    let kg = Arc::new(demo_graph());
    let profile = kg.profile().clone();
    let registry = registry();
    assert_eq!(registry.step_in_words("bfs_answer"), "answering from the breadth-first triples", "its own words");
    let prompts = Arc::new(registry.prompts(None).unwrap());
    let settings = Settings { structured, ..settings() };
    let mut run =
        Run::new_in(&registry, QUESTION, topics(), settings.clone(), prompts.clone(), profile.clone(), "demo").unwrap();
    let model = Arc::new(TimeZoneReader::default());
    let driver = Driver::new(kg, model.clone());
    let mut session = Session::new("demo", "time-zone reader", settings.clone(), profile, &prompts);
    session.begin(QUESTION, topics(), &settings);
    driver.run_recorded(&mut run, &mut session).await.unwrap();

    // The one call rendered the method's own template and asked for its own shape.
    let requests = model.requests.lock().unwrap().clone();
    let [request] = requests.as_slice() else { panic!("one call: {requests:#?}") };
    assert!(request.prompt.starts_with("Numbered triples:\n1. "), "{}", request.prompt);
    let shown = request.prompt.contains(BFS_SHAPE);
    match &request.schema {
        Some(schema) => {
            assert!(structured && shown, "the shape shown with its schema");
            assert_eq!(schema.name, "bfs_answer");
            // Built from what the call offers: the numbers of the triples it shows.
            let triples = request
                .prompt
                .lines()
                .filter(|l| l.split_once(". ").is_some_and(|(n, _)| n.parse::<usize>().is_ok()))
                .count();
            assert_eq!(schema.schema["properties"]["triple"]["enum"], json!((1..=triples).collect::<Vec<_>>()));
            assert_eq!(schema.schema, (BFS_REPLY.schema)(&Offer::numbered(triples, 1)));
        }
        None => assert!(!structured && !shown, "free text asks for no shape"),
    }
    let step = &run.trace()[2];
    assert_eq!(step.summary.contains("(triple "), structured, "its JSON reached the method: {}", step.summary);

    let answer = run.answer().expect("answered");
    assert_eq!(run.trace().len(), 3, "relations, neighbours, answer: {:#?}", run.trace());
    assert_eq!(answer.answers.len(), 1, "{answer:?}");
    assert!(answer.answers[0].contains("AEST") || answer.answers[0].contains("Australian"), "{answer:?}");
    assert_eq!(run.costs().llm_calls, 1, "the model is asked only for the answer");
    assert_eq!(run.progress(), "BFS d1/1 N=3", "the registry's label and progress line");
    // The method listed its paths worst first; the run lists those that name the answer
    // first, then each group best first.
    let supports: Vec<bool> = answer.paths.iter().map(|p| run.reaches_answer(p.leaf)).collect();
    assert!(supports[0] && supports.windows(2).all(|w| w[0] || !w[1]), "{supports:?}");
    for group in [true, false] {
        let scores: Vec<f64> =
            answer.paths.iter().zip(&supports).filter(|(_, s)| **s == group).map(|(p, _)| p.score).collect();
        assert!(scores.windows(2).all(|w| w[0] > w[1]), "{group}: {scores:?}");
    }
    assert!(answer.paths.len() > 2, "{:?}", answer.paths);

    // The session on disk is all replay needs.
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("bfs.json");
    session.save(&path).unwrap();
    let loaded = Session::load(&path).unwrap();
    assert_eq!(loaded.settings.method, MethodId::from("bfs"));
    assert_eq!(loaded.prompts.get("bfs_answer").map(String::as_str), Some(BFS_ANSWER.default_text()));
    let replayed = loaded.replay_in(&registry, 0).unwrap();
    assert_eq!(replayed.trace(), run.trace());
    assert_eq!(replayed.answer(), run.answer());
    assert_eq!(loaded.runs[0].trace, run.trace(), "the recorder kept the trace");

    // Without its registry line, the method is unknown, by name.
    match loaded.replay(0) {
        Err(SessionError::Engine { error: EngineError::UnknownMethod { name, known }, .. }) => {
            assert_eq!(name, "bfs");
            assert!(known.contains("tog-r"), "{known}");
        }
        other => panic!("expected an unknown method, got {:?}", other.map(|r| r.trace().len())),
    }
}

#[tokio::test]
async fn a_method_without_overrides_refuses_them_in_words() {
    let kg = Arc::new(demo_graph());
    let prompts = Arc::new(registry().prompts(None).unwrap());
    let mut run =
        Run::new_in(&registry(), QUESTION, topics(), settings(), prompts, kg.profile().clone(), "demo").unwrap();
    let ongraph::engine::Poll::Need(requests) = run.poll() else { panic!("a first batch") };
    let err = run.apply(Override::ForceSufficient).unwrap_err().to_string();
    assert_eq!(err, "cannot force \"sufficient\" now: this method takes no changes between steps");
    assert!(run.trace().is_empty(), "a refused change is not recorded");
    // The batch handed out before the refusal can still be fed.
    let driver = Driver::new(kg, Arc::new(TimeZoneReader::default()));
    let responses = driver.perform(&requests).await.unwrap();
    assert_eq!(run.feed(responses).unwrap(), ongraph::engine::Fed::Step(0));
}

/// The demo script's replies, until `budget` calls have been made; then the endpoint is down.
struct FailsAfter {
    model: ongraph::testing::llm::ScriptedModel,
    budget: std::sync::atomic::AtomicUsize,
    made: std::sync::atomic::AtomicUsize,
}

#[async_trait]
impl LanguageModel for FailsAfter {
    fn describe(&self) -> String {
        "demo, failing".into()
    }
    async fn complete(&self, request: &ChatRequest) -> Result<Completion, LlmError> {
        use std::sync::atomic::Ordering::SeqCst;
        if self.made.load(SeqCst) >= self.budget.load(SeqCst) {
            return Err(LlmError::Unreachable {
                url: "http://127.0.0.1:9/v1".into(),
                message: "connection refused".into(),
            });
        }
        self.made.fetch_add(1, SeqCst);
        self.model.complete(request).await
    }
}

#[tokio::test]
async fn a_run_cut_short_is_taken_up_again_without_repeating_a_call() {
    use ongraph::testing::session::Player;
    use std::sync::atomic::Ordering::SeqCst;
    let question = "What is the majority party now in the country where Canberra is located?";
    let kg = Arc::new(demo_graph());
    let prompts = Arc::new(ongraph::engine::builtin_prompts());
    let settings = Settings::default();
    let model = Arc::new(FailsAfter {
        model: ongraph::testing::llm::ScriptedModel::demo().unwrap(),
        budget: 3.into(),
        made: 0.into(),
    });
    let driver = Driver::new(kg.clone(), model.clone());
    let start = || Run::new(question, Topics::Extract, settings.clone(), prompts.clone(), kg.profile().clone(), "demo");

    // The first try fails at its fourth call; the session keeps what was answered.
    let mut first = start().unwrap();
    let mut session = Session::new("demo", "demo", settings.clone(), kg.profile().clone(), &prompts);
    session.begin(question, Topics::Extract, &settings);
    assert!(driver.run_recorded(&mut first, &mut session).await.is_err());
    assert_eq!(model.made.load(SeqCst), 3);

    // Taken up again by a fresh driver (no memo of the first try): the three answered calls
    // come from the recording.
    model.budget.store(usize::MAX, SeqCst);
    let driver = Driver::new(kg.clone(), model.clone());
    let mut again = start().unwrap();
    let mut earlier = Player::new(&session.runs[0]);
    while driver.step_with(&mut again, Some(&mut earlier), None).await.unwrap().is_some() {}
    assert!(earlier.at_end(), "every recorded batch was used, in order (the same KG answers)");
    let full = {
        let mut run = start().unwrap();
        Driver::new(kg.clone(), Arc::new(ongraph::testing::llm::ScriptedModel::demo().unwrap()))
            .run(&mut run, |_, _| {})
            .await
            .unwrap();
        run
    };
    let (a, b) = (again.costs(), full.costs());
    assert_eq!(again.answer().map(|a| &a.answers), full.answer().map(|a| &a.answers));
    assert_eq!(model.made.load(SeqCst) - 3, (b.llm_calls - 3) as usize, "only the missing calls were made");
    assert_eq!(a.llm_calls, b.llm_calls - 3);
    assert_eq!(a.llm_calls_saved, b.llm_calls_saved + 3, "the reused ones count as saved");
}

#[tokio::test]
async fn a_prompts_directory_rewrites_the_methods_own_template() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("bfs_answer.txt"), "MINE\n{{triples}}\nQ: {{question}}").unwrap();
    // Only a registry with the method knows its template.
    let err = Registry::builtin().prompts(Some(dir.path())).unwrap_err().to_string();
    assert!(err.contains("bfs_answer.txt: not a known template"), "{err}");
    let registry = registry();
    let prompts = Arc::new(registry.prompts(Some(dir.path())).unwrap());
    let kg = Arc::new(demo_graph());
    let mut run =
        Run::new_in(&registry, QUESTION, topics(), settings(), prompts.clone(), kg.profile().clone(), "demo").unwrap();
    let model = Arc::new(TimeZoneReader::default());
    Driver::new(kg, model.clone()).run(&mut run, |_, _| {}).await.unwrap();
    let requests = model.requests.lock().unwrap();
    assert!(requests[0].prompt.starts_with("MINE\n1. "), "{}", requests[0].prompt);
    assert!(run.answer().is_some_and(|a| !a.answers.is_empty()), "the rewritten prompt still answers");
    assert_eq!(prompts.texts().get("bfs_answer").map(String::as_str), Some("MINE\n{{triples}}\nQ: {{question}}"));
}

#[test]
fn a_registry_refuses_a_method_whose_templates_or_shapes_clash() {
    const TAKEN: ReplyShape = ReplyShape::json("answer", |_| json!({"type": "object"}), |_| "{}".into());
    let taken_shape = MethodEntry { id: "x", shapes: &[TAKEN], ..ENTRY };
    assert_eq!(
        Registry::builtin().clone().with(taken_shape).unwrap_err(),
        RegistryError::ShapeTaken { method: "x".into(), shape: "answer".into() }
    );
    const OTHER_ANSWER: Template = Template::new(&TemplateDef {
        name: "answer",
        step: "answering",
        placeholders: &["question"],
        reply: Some("answer"),
        text: "{{question}}",
        json_text: None,
    });
    let taken_template = MethodEntry { id: "x", templates: &[OTHER_ANSWER], shapes: &[], ..ENTRY };
    let err = Registry::builtin().clone().with(taken_template).unwrap_err();
    assert_eq!(err.to_string(), "method x: its template answer differs from another template of that name");
    let no_shape = MethodEntry { id: "x", shapes: &[], ..ENTRY };
    assert_eq!(
        Registry::builtin().clone().with(no_shape).unwrap_err(),
        RegistryError::UnknownShape { method: "x".into(), template: "bfs_answer".into(), shape: "bfs_answer".into() }
    );
    // A shape of the same name built otherwise from what a call offers is another shape.
    const WIDER: ReplyShape = ReplyShape::json(
        "bfs_answer",
        |offer| {
            let numbers: Vec<usize> = (1..=offer.width.max(1)).collect();
            json!({"type": "object", "properties": {"answer": {"type": "string"}, "triple": {"enum": numbers}},
                   "required": ["answer", "triple"], "additionalProperties": false})
        },
        |_| BFS_SHAPE.into(),
    );
    let wider = MethodEntry { id: "bfs-wider", shapes: &[WIDER], ..ENTRY };
    assert_eq!(
        registry().with(wider).unwrap_err(),
        RegistryError::ShapeTaken { method: "bfs-wider".into(), shape: "bfs_answer".into() }
    );
    // A simulation is of a template the method renders.
    let stray = MethodEntry { id: "x", templates: &[], shapes: &[], ..ENTRY };
    assert_eq!(
        Registry::builtin().clone().with(stray).unwrap_err().to_string(),
        "method x: it simulates the template bfs_answer, which it does not render"
    );
    // The same template and shape under two ids is one template and one shape.
    let twin = MethodEntry { id: "bfs-twin", ..ENTRY };
    let both = registry().with(twin).unwrap();
    assert_eq!(both.templates().iter().filter(|t| t.name() == "bfs_answer").count(), 1);
}
