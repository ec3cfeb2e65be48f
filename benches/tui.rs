//! Terminal UI benchmark.
//!
//! 1. Frame time (state → buffer, ratatui `TestBackend`) at 120×40 for a beam tree of about
//!    10,000 nodes: a synthetic graph (22 relations per entity, 335 neighbours per relation),
//!    N=10, BM25 pruning, run to the second entity prune. Goal: < 10 ms.
//! 2. Key-press-to-frame latency while 10 LLM calls are in flight against a loopback
//!    OpenAI-compatible server that answers after 5 s: keys go through the same channel as the
//!    executor's results to a loop task that updates and draws, which reports back when the frame
//!    is drawn. Goal: < 16 ms.
//!
//! `cargo bench --bench tui`
#![allow(clippy::print_stdout, clippy::print_stderr)] // a bench prints its figures

use crossterm::event::{KeyCode, KeyEvent};
use ongraph::engine::{PruneTool, Request, Run, Settings, Topics};
use ongraph::kg::{KgProfile, KnowledgeGraph, Term};
use ongraph::llm::ChatRequest;
use ongraph::testing::driver::Driver;
use ongraph::testing::kg::GraphBuilder;
use ongraph::testing::llm::{OpenAiClient, OpenAiConfig, ScriptedModel};
use ongraph::testing::tui::{Action, App, Effect, Executor, update, view};
use ratatui::Terminal;
use ratatui::backend::TestBackend;
use serde_json::json;
use std::sync::Arc;
use std::time::{Duration, Instant};
use tokio::sync::mpsc;
use wiremock::{Mock, MockServer, ResponseTemplate};

const RELATIONS: usize = 22;
const NEIGHBOURS: usize = 335;

/// A graph where every entity has `RELATIONS` relations of `NEIGHBOURS` entities each, three
/// levels deep from `Root`.
fn wide_graph() -> Arc<dyn KnowledgeGraph> {
    let mut b = GraphBuilder::new();
    let mut frontier = vec!["Root".to_string()];
    for level in 0..2 {
        let mut next = Vec::new();
        for (i, head) in frontier.iter().enumerate() {
            for r in 0..RELATIONS {
                for n in 0..NEIGHBOURS {
                    let tail = format!("Entity_{level}_{i}_{r}_{n}");
                    b.add(head, &format!("domain.type.relation_{r}"), &Term::Entity(tail.clone()));
                    next.push(tail);
                }
            }
        }
        // Only the first few entities of a level get their own relations: enough for a beam of
        // width 10, and the graph stays small.
        next.truncate(12);
        frontier = next;
    }
    Arc::new(b.finish("wide", KgProfile::named_ids()))
}

fn percentile(sorted: &[f64], q: f64) -> f64 {
    sorted[((sorted.len() - 1) as f64 * q) as usize]
}

fn summary(label: &str, mut ms: Vec<f64>, goal: f64) {
    ms.sort_by(f64::total_cmp);
    println!(
        "{label}: p50 {:.2} ms · p99 {:.2} ms · max {:.2} ms over {} (goal < {goal} ms)",
        percentile(&ms, 0.5),
        percentile(&ms, 0.99),
        ms[ms.len() - 1],
        ms.len()
    );
}

/// An app showing a run on the wide graph, stepped (BM25, no model needed) to the second prune.
async fn big_beam_app(driver: &Driver) -> App {
    let kg = driver.kg();
    let settings =
        Settings { width: 10, depth: 2, prune: PruneTool::Bm25, sample_threshold: 10_000, ..Settings::default() };
    let mut run = Run::new(
        "Which entity is related to Root through relation_3 and then relation_7?",
        Topics::Named(vec!["Root".into()]),
        settings.clone(),
        Arc::new(ongraph::engine::builtin_prompts()),
        kg.profile().clone(),
        kg.name(),
    )
    .expect("run");
    while !(run.depth() == 2 && run.next_phase() == "reasoning") {
        driver.step(&mut run).await.expect("step");
    }
    let mut app =
        App::new(settings, Arc::new(ongraph::engine::builtin_prompts()), kg.profile().clone(), kg.name(), "bench");
    app.run = Some(run);
    app.focus = ongraph::testing::tui::Focus::Tree;
    app.size = (120, 40);
    app.selected = app.visible_rows().len() / 2;
    app
}

fn frame_times(app: &App, frames: usize) -> Vec<f64> {
    let mut terminal = Terminal::new(TestBackend::new(120, 40)).expect("test backend");
    (0..frames)
        .map(|_| {
            let started = Instant::now();
            terminal.draw(|f| view::draw(f, app)).expect("draw");
            started.elapsed().as_secs_f64() * 1000.0
        })
        .collect()
}

#[tokio::main(flavor = "multi_thread", worker_threads = 2)]
async fn main() {
    ongraph::testing::llm::install_crypto_provider();
    let kg = wide_graph();
    let model = ScriptedModel::from_toml("bench", "[[reply]]\ntext = \"{No}\"\n").expect("script");
    let local = Driver::new(kg.clone(), Arc::new(model));
    let mut app = big_beam_app(&local).await;
    let nodes = app.run.as_ref().map_or(0, |r| r.beam().nodes.len());
    println!("beam of {nodes} nodes, {} rows visible in the tree", app.visible_rows().len());
    summary("frame time at 120×40", frame_times(&app, 300), 10.0);

    // 10 calls in flight against a server that takes 5 s to answer.
    let server = MockServer::start().await;
    Mock::given(wiremock::matchers::method("POST"))
        .respond_with(
            ResponseTemplate::new(200)
                .set_body_json(json!({"choices": [{"message": {"role": "assistant", "content": "{No}"}}]}))
                .set_delay(Duration::from_secs(5)),
        )
        .mount(&server)
        .await;
    let llm = Arc::new(OpenAiClient::new(OpenAiConfig::new(format!("{}/v1", server.uri()), "bench")).expect("client"));
    let driver = Arc::new(Driver::new(kg.clone(), llm).with_concurrency(10));
    let (tx, mut rx) = mpsc::unbounded_channel::<Action>();
    let mut executor = Executor::new(Some(driver), None, None, tx.clone());
    let requests: Vec<Request> = (0..10)
        .map(|i| {
            Request::Llm(ChatRequest {
                step: "relation_prune".into(),
                system: String::new(),
                prompt: format!("call {i}"),
                temperature: 0.0,
                max_tokens: 16,
                sample: 0,
                schema: None,
                extract: None,
            })
        })
        .collect();
    app.in_flight = Some(Instant::now());
    executor.execute(Effect::Perform { generation: app.generation, requests, method: app.settings.method });
    let started = Instant::now();
    while server.received_requests().await.map_or(0, |r| r.len()) < 10 {
        assert!(started.elapsed() < Duration::from_secs(4), "the 10 calls never reached the server");
        tokio::time::sleep(Duration::from_millis(5)).await;
    }

    // The UI loop: actions in, update, draw, say when the frame is done.
    let (drawn_tx, mut drawn) = mpsc::unbounded_channel::<Instant>();
    let ui = tokio::spawn(async move {
        let mut terminal = Terminal::new(TestBackend::new(120, 40)).expect("test backend");
        while let Some(action) = rx.recv().await {
            let is_key = matches!(action, Action::Key(_));
            for effect in update(&mut app, action) {
                executor.execute(effect);
            }
            terminal.draw(|f| view::draw(f, &app)).expect("draw");
            if is_key {
                let _ = drawn_tx.send(Instant::now());
            }
        }
    });
    let mut latencies = Vec::new();
    for i in 0..400 {
        let code = if i % 2 == 0 { KeyCode::Char('j') } else { KeyCode::Char('k') };
        let pressed = Instant::now();
        tx.send(Action::Key(KeyEvent::from(code))).expect("ui loop alive");
        let frame = drawn.recv().await.expect("frame drawn");
        latencies.push((frame - pressed).as_secs_f64() * 1000.0);
    }
    let in_flight_the_whole_time = started.elapsed() < Duration::from_secs(5);
    summary("key-press-to-frame with 10 LLM calls in flight", latencies, 16.0);
    println!("all 10 calls still in flight while measuring: {in_flight_the_whole_time}");
    ui.abort();
}
