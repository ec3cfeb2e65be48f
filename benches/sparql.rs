//! One ToG question (N=3, D=3, the demo script's replies) against a real Oxigraph server loaded
//! with the demo KG: KG queries and wall time one query per lookup, batched, batched with a
//! cold cache and with a warm one, in the same run. Needs the Oxigraph binary
//! (`bash scripts/install-sparql-servers`).
//!
//! `cargo bench --bench sparql`
#![allow(clippy::print_stdout, clippy::print_stderr)] // a bench prints its figures

#[path = "../tests/common/servers.rs"]
mod servers;

use ongraph::engine::{Run, Settings, Topics};
use ongraph::kg::{KgProfile, KnowledgeGraph};
use ongraph::testing::driver::Driver;
use ongraph::testing::kg::{Namespaces, QueryCache, SparqlClient, SparqlConfig, SparqlKg};
use ongraph::testing::llm::ScriptedModel;
use std::sync::Arc;
use std::time::Instant;

const QUESTION: &str = "What is the majority party now in the country where Canberra is located?";

async fn ask(url: &str, batching: bool, cache: Option<QueryCache>) -> (u64, u64, u64, f64, String) {
    let client = SparqlClient::new(SparqlConfig::new(url)).expect("client").with_cache(cache);
    let kg = SparqlKg::new("ox", client, KgProfile::freebase(), Namespaces::freebase(), "en")
        .expect("kg")
        .with_batching(batching);
    let kg: Arc<dyn KnowledgeGraph> = Arc::new(kg);
    let model = ScriptedModel::demo().expect("demo script");
    let driver = Driver::new(kg.clone(), Arc::new(model));
    let mut run = Run::new(
        QUESTION,
        Topics::Named(vec!["Canberra".into()]),
        Settings::default(),
        Arc::new(ongraph::engine::builtin_prompts()),
        kg.profile().clone(),
        kg.name(),
    )
    .expect("run");
    let started = Instant::now();
    driver.run(&mut run, |_, _| {}).await.expect("answered");
    let wall = started.elapsed().as_secs_f64() * 1000.0;
    let net = kg.network();
    let answer = run.answer().map(|a| a.answers.join(", ")).unwrap_or_default();
    (run.costs().kg_lookups, net.queries, net.cache_hits, wall, answer)
}

#[tokio::main]
async fn main() {
    let server = servers::Oxigraph::start(&servers::fixture("freebase-demo.nt"));
    let cache_dir = tempfile::tempdir().expect("temp dir");
    let cache_path = cache_dir.path().join("cache");
    println!("ToG, N=3, D=3, Canberra question, Oxigraph {} on loopback", server.url);
    let (lookups, one_each, _, wall, answer) = ask(&server.url, false, None).await;
    println!("one query per lookup: {lookups} lookups, {one_each} queries, {wall:.1} ms -> {answer}");
    let (lookups, batched, _, wall, answer) = ask(&server.url, true, None).await;
    println!(
        "batched:              {lookups} lookups, {batched} queries ({:.2} of one-per-lookup), {wall:.1} ms -> {answer}",
        batched as f64 / one_each as f64
    );
    let (_, cold, _, wall, answer) = ask(&server.url, true, QueryCache::open(&cache_path).ok()).await;
    println!("batched, cold cache:  {cold} queries, {wall:.1} ms -> {answer}");
    let (_, warm, hits, wall, answer) = ask(&server.url, true, QueryCache::open(&cache_path).ok()).await;
    println!("batched, warm cache:  {warm} queries, {hits} answered from the cache, {wall:.1} ms -> {answer}");
}
