//! Pruning tools and topic linking end to end: embeddings over HTTP, rejected inventions,
//! ambiguous and fuzzy names, and the driver's concurrency limit.

mod common;

use async_trait::async_trait;
use common::*;
use ongraph::engine::beam::{NodeKind, Status};
use ongraph::engine::{Fallback, PruneTool, Request, Settings, Topics};
use ongraph::kg::{KgProfile, Term};
use ongraph::llm::{ChatRequest, Completion, LanguageModel, LlmError, Usage};
use ongraph::testing::driver::Driver;
use ongraph::testing::kg::GraphBuilder;
use ongraph::testing::llm::{OpenAiClient, OpenAiConfig, ScriptedModel};
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;
use wiremock::{Mock, MockServer, Respond, ResponseTemplate};

const APPLE_TZ: &str = "In which time zone is the headquarters of Apple Inc.?";

/// A toy embedding: words hashed into 64 buckets, so texts sharing words point the same way.
struct BagOfWords;

impl Respond for BagOfWords {
    fn respond(&self, request: &wiremock::Request) -> ResponseTemplate {
        let body: serde_json::Value = serde_json::from_slice(&request.body).unwrap();
        let data: Vec<serde_json::Value> = body["input"]
            .as_array()
            .unwrap()
            .iter()
            .enumerate()
            .map(|(i, text)| {
                let mut v = vec![0.0f32; 64];
                for w in ongraph::testing::engine::tokens(text.as_str().unwrap()) {
                    let h = w.bytes().fold(7u32, |h, b| h.wrapping_mul(31).wrapping_add(b as u32));
                    v[(h % 64) as usize] += 1.0;
                }
                serde_json::json!({"index": i, "embedding": v})
            })
            .collect();
        ResponseTemplate::new(200).set_body_json(serde_json::json!({ "data": data }))
    }
}

#[tokio::test]
async fn embedding_pruning_scores_by_similarity_without_prune_calls() {
    let server = MockServer::start().await;
    Mock::given(wiremock::matchers::path("/v1/embeddings")).respond_with(BagOfWords).mount(&server).await;
    let settings =
        Settings { prune: PruneTool::Embedding, depth: 1, fallback: Fallback::OwnKnowledge, ..Settings::default() };
    let script = r#"
[[reply]]
step = "reasoning"
contains = ["Q: In which time zone is the headquarters of Apple Inc.?"]
text = "{No}."
[[reply]]
step = "answer_own_knowledge"
contains = ["Q: In which time zone is the headquarters of Apple Inc.?"]
text = "{Pacific Time Zone}"
"#;
    let embedder = Arc::new(OpenAiClient::new(OpenAiConfig::new(format!("{}/v1", server.uri()), "embed")).unwrap());
    let model = Arc::new(ScriptedModel::from_toml("t", script).unwrap());
    let driver = Driver::new(Arc::new(ongraph::testing::kg::demo_graph()), model).with_embedder(embedder);
    let mut run = new_run(&driver, APPLE_TZ, named(&["Apple Inc."]), settings);
    run_to_end(&driver, &mut run).await;
    let steps: Vec<String> = run.trace().iter().flat_map(|e| e.calls.iter().map(|c| c.step.clone())).collect();
    assert_eq!(steps, vec!["reasoning", "answer_own_knowledge"], "no LLM call in pruning");
    let hq = run
        .beam()
        .nodes
        .iter()
        .find(|n| matches!(&n.kind, NodeKind::Relation { shown, .. } if shown == "organization.organization.headquarters"))
        .unwrap();
    assert_eq!(hq.status, Status::Kept, "the relation sharing a word with the question is kept");
    assert!(run.trace().iter().any(|e| e.lookups.iter().any(|l| l.what.starts_with("embeddings of"))));
}

#[tokio::test]
async fn embedding_pruning_without_an_endpoint_is_a_clear_error() {
    let driver = demo_driver("");
    let mut run = new_run(
        &driver,
        APPLE_TZ,
        named(&["Apple Inc."]),
        Settings { prune: PruneTool::Embedding, ..Settings::default() },
    );
    let err = driver.run(&mut run, |_, _| {}).await.unwrap_err();
    assert!(err.to_string().contains("needs an embedding endpoint"), "{err}");
}

#[tokio::test]
async fn a_relation_the_model_invents_is_never_queried() {
    let script = r#"
[[reply]]
step = "relation_prune"
contains = ["Q: Who leads Apple?"]
text = "{organization.organization.ceo (Score: 0.9)} {organization.organization.leadership (Score: 0.1)}"
[[reply]]
step = "reasoning"
contains = ["Q: Who leads Apple?"]
text = "{No}"
"#;
    let driver = demo_driver(script);
    let mut run = new_run(&driver, "Who leads Apple?", named(&["Apple Inc."]), Settings::default());
    run_until(&driver, &mut run, "entity_search").await;
    let notes: Vec<&String> = run.trace().iter().flat_map(|e| &e.notes).collect();
    assert!(
        notes.iter().any(|n| n.contains("rejected relations not offered: organization.organization.ceo")),
        "{notes:?}"
    );
    let ongraph::engine::Poll::Need(requests) = run.poll() else { panic!("the run needs entity search") };
    let queried: Vec<&str> = requests
        .iter()
        .filter_map(|r| match r {
            Request::Neighbours { relation, .. } => Some(relation.relation.as_str()),
            _ => None,
        })
        .collect();
    assert_eq!(queried, vec!["organization.organization.leadership"]);
}

fn twin_graph_driver(script: &str) -> Driver {
    let mut b = GraphBuilder::new();
    for (h, r, t) in [
        ("m.paris_fr", "type.object.name", Term::Literal("Paris".into())),
        ("m.paris_tx", "type.object.name", Term::Literal("Paris".into())),
        ("m.paris_fr", "location.location.containedby", Term::Entity("m.france".into())),
        ("m.paris_tx", "location.location.containedby", Term::Entity("m.texas".into())),
        ("m.france", "type.object.name", Term::Literal("France".into())),
        ("m.texas", "type.object.name", Term::Literal("Texas".into())),
    ] {
        b.add(h, r, &t);
    }
    let model = ScriptedModel::from_toml("t", script).unwrap();
    Driver::new(Arc::new(b.finish("twins", KgProfile::freebase())), Arc::new(model))
}

#[tokio::test]
async fn an_ambiguous_name_lists_the_candidates_and_chooses_deterministically() {
    let driver = twin_graph_driver("");
    for _ in 0..3 {
        let mut run = new_run(&driver, "Where is Paris?", named(&["paris"]), Settings::default());
        driver.step(&mut run).await.unwrap();
        let linking = &run.trace()[0];
        assert_eq!(linking.summary, "topic entity: Paris (m.paris_fr)");
        assert_eq!(linking.notes, vec!["\"paris\" is ambiguous; chose Paris (m.paris_fr) over Paris (m.paris_tx)"]);
    }
}

#[tokio::test]
async fn model_named_topics_are_linked_fuzzily_and_say_so() {
    let script = r#"
[[reply]]
step = "topic_entities"
text = "The question is about {Franse}."
"#;
    let driver = twin_graph_driver(script);
    let mut run = new_run(&driver, "What is in Franse?", Topics::Extract, Settings::default());
    driver.step(&mut run).await.unwrap();
    driver.step(&mut run).await.unwrap();
    let root = run.beam().roots().next().unwrap();
    assert_eq!(root.term(), Some(&Term::Entity("m.france".into())));
    assert!(
        run.trace()[1].notes.iter().any(|n| n.contains("linked by fuzzy match to France")),
        "{:?}",
        run.trace()[1].notes
    );

    // A name the user types must match exactly.
    let mut run = new_run(&driver, "What is in Franse?", named(&["Franse"]), Settings::default());
    let err = driver.step(&mut run).await.unwrap_err().to_string();
    assert!(err.contains("unknown topic entity \"Franse\"; closest labels: France"), "{err}");
}

/// A model that records how many calls are in flight at once.
struct Gauge {
    now: AtomicUsize,
    peak: AtomicUsize,
}

#[async_trait]
impl LanguageModel for Gauge {
    fn describe(&self) -> String {
        "gauge".into()
    }
    async fn complete(&self, r: &ChatRequest) -> Result<Completion, LlmError> {
        let now = self.now.fetch_add(1, Ordering::SeqCst) + 1;
        self.peak.fetch_max(now, Ordering::SeqCst);
        tokio::time::sleep(Duration::from_millis(20)).await;
        self.now.fetch_sub(1, Ordering::SeqCst);
        Ok(Completion {
            text: format!("echo {}", r.prompt.len()),
            reasoning: None,
            usage: Usage::default(),
            latency_ms: 20,
            notes: vec!["a note about this request".into()],
            ..Default::default()
        })
    }
}

#[tokio::test]
async fn the_driver_respects_its_concurrency_limit_and_makes_duplicates_once() {
    let gauge = Arc::new(Gauge { now: AtomicUsize::new(0), peak: AtomicUsize::new(0) });
    let driver = Driver::new(Arc::new(ongraph::testing::kg::demo_graph()), gauge.clone()).with_concurrency(3);
    let call = |p: &str| {
        Request::Llm(ChatRequest {
            step: "s".into(),
            system: String::new(),
            prompt: p.into(),
            temperature: 0.0,
            max_tokens: 8,
            sample: 0,
            schema: None,
            extract: None,
        })
    };
    let batch: Vec<Request> = (0..10).map(|i| call(&"x".repeat(i + 1))).chain([call("x"), call("x")]).collect();
    let out = driver.perform(&batch).await.unwrap();
    assert_eq!(out.len(), 12);
    assert_eq!(gauge.peak.load(Ordering::SeqCst), 3, "never more than 3 calls in flight");
    let cached: Vec<bool> = out
        .iter()
        .map(|r| match r {
            // A reused reply made no request: the client's notes about one are not repeated.
            ongraph::engine::Response::Llm { completion } => {
                assert_eq!(completion.notes.is_empty(), completion.cached, "{completion:?}");
                completion.cached
            }
            _ => panic!("LLM responses expected"),
        })
        .collect();
    assert_eq!(cached.iter().filter(|c| **c).count(), 2, "the two repeats of prompt \"x\" were not made again");
    // A later batch repeating a call is answered from the memo.
    let again = driver.perform(&[call("xx")]).await.unwrap();
    assert!(
        matches!(&again[0], ongraph::engine::Response::Llm { completion } if completion.cached && completion.notes.is_empty())
    );
}
