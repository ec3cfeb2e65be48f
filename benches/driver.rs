//! Driver benchmark: questions at N=3, D=3 against a loopback OpenAI-compatible server that
//! waits 200 ms per call. Wall time with concurrency 1 vs the default, in the same run, against
//! the number of dependent rounds of calls.
//!
//! `cargo bench --bench driver`
#![allow(clippy::print_stdout, clippy::print_stderr)] // a bench prints its figures

use ongraph::engine::{Run, Settings, Topics};
use ongraph::kg::KnowledgeGraph;
use ongraph::llm::ChatRequest;
use ongraph::testing::driver::Driver;
use ongraph::testing::kg::demo_graph;
use ongraph::testing::llm::{OpenAiClient, OpenAiConfig, ScriptedModel};
use serde_json::json;
use std::sync::Arc;
use std::time::{Duration, Instant};
use wiremock::{Mock, MockServer, Request, Respond, ResponseTemplate};

const LATENCY: Duration = Duration::from_millis(200);

/// Replies that never find the paths sufficient: a run goes to Dmax and makes every call.
const PESSIMIST: &str = include_str!("../tests/data/never-sufficient.toml");

/// Serves the scripted replies over HTTP after a fixed delay. The step is recognised from the
/// template's opening words (the engine does not send it).
struct ScriptServer(ScriptedModel);

fn step_of(prompt: &str) -> &'static str {
    [
        ("Please retrieve", "relation_prune"),
        ("For each topic entity below", "relation_prune_unified"),
        ("Please score the entities", "entity_prune"),
        ("Each group below", "entity_prune_unified"),
        ("Given a question and the associated retrieved knowledge graph triplets (entity, relation, entity), you are asked to answer whether", "reasoning"),
        ("Given a question, its topic entities", "reasoning"),
        ("Given a question and the associated", "answer"),
        ("Answer the question from your own knowledge", "answer_own_knowledge"),
        ("List the named entities", "topic_entities"),
    ]
    .iter()
    .find(|(opening, _)| prompt.starts_with(opening))
    .map(|(_, step)| *step)
    .unwrap_or("unknown")
}

impl Respond for ScriptServer {
    fn respond(&self, request: &Request) -> ResponseTemplate {
        let body: serde_json::Value = serde_json::from_slice(&request.body).unwrap_or_default();
        let prompt = body["messages"][1]["content"].as_str().unwrap_or_default().to_string();
        let chat = ChatRequest {
            step: step_of(&prompt).into(),
            system: String::new(),
            prompt,
            temperature: 0.0,
            max_tokens: 0,
            sample: 0,
            schema: None,
            extract: None,
        };
        match self.0.reply_for(&chat) {
            Some(reply) => ResponseTemplate::new(200)
                .set_body_json(json!({
                    "choices": [{"message": {"role": "assistant", "content": reply.text}}],
                    "usage": {"prompt_tokens": 100, "completion_tokens": 20}
                }))
                .set_delay(LATENCY),
            None => ResponseTemplate::new(500).set_body_string(format!("no scripted reply for {}", chat.step)),
        }
    }
}

async fn measure(
    base_url: &str,
    question: &str,
    topic: &str,
    concurrency: usize,
    speculate: bool,
) -> (Duration, u64, u64) {
    let kg: Arc<dyn KnowledgeGraph> = Arc::new(demo_graph());
    let llm = Arc::new(OpenAiClient::new(OpenAiConfig::new(base_url, "bench")).expect("client"));
    let driver = Driver::new(kg.clone(), llm).with_concurrency(concurrency);
    let mut run = Run::new(
        question,
        Topics::Named(vec![topic.into()]),
        Settings { speculate, ..Settings::default() },
        Arc::new(ongraph::engine::builtin_prompts()),
        kg.profile().clone(),
        kg.name(),
    )
    .expect("run");
    let started = Instant::now();
    driver.run(&mut run, |_, _| {}).await.expect("run completes");
    let c = run.costs();
    (started.elapsed(), c.llm_calls, c.llm_rounds)
}

#[tokio::main]
async fn main() {
    ongraph::testing::llm::install_crypto_provider();
    let script = format!("{PESSIMIST}\n{}", include_str!("../sessions/demo-model.toml"));
    let model = ScriptedModel::from_toml("bench", &script).expect("script");
    let server = MockServer::start().await;
    Mock::given(wiremock::matchers::method("POST")).respond_with(ScriptServer(model)).mount(&server).await;
    let base = format!("{}/v1", server.uri());
    println!("loopback OpenAI-compatible server, {} ms per call; N=3, D=3, ToG", LATENCY.as_millis());
    for (label, question, topic) in [
        (
            "demo: Canberra (answered at depth 3)",
            "What is the majority party now in the country where Canberra is located?",
            "Canberra",
        ),
        ("worst case: never sufficient (to Dmax)", "How long?", "Canberra"),
        (
            "early answer: Phillie Phanatic (depth 2)",
            "Which ballpark hosts spring training for the team whose mascot is the Phillie Phanatic?",
            "Phillie Phanatic",
        ),
    ] {
        for (concurrency, speculate) in [(1, false), (8, false), (8, true)] {
            let (wall, calls, rounds) = measure(&base, question, topic, concurrency, speculate).await;
            let ideal = LATENCY.as_secs_f64() * rounds as f64;
            let mode = if speculate { " --speculate" } else { "" };
            println!(
                "{label}: concurrency {concurrency}{mode}: {calls} calls, {rounds} dependent rounds, wall {:.2} s = {:.2} × (rounds × 200 ms)",
                wall.as_secs_f64(),
                wall.as_secs_f64() / ideal
            );
        }
    }
}
