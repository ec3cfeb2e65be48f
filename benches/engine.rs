//! Engine overhead: 3-hop PathQuestion questions (PQ-3H with its KB, from ../shared/datasets)
//! answered with a zero-latency model that follows each question's gold path. Reports questions
//! per second (engine + driver + local KG + prompt rendering + reply parsing, no model time),
//! calls per question, and the share answered correctly: the engine's ceiling when every
//! choice is right, not any LLM's accuracy.
//!
//! `cargo bench --bench engine [-- LIMIT]` (default 1000 questions; needs ../shared).

use async_trait::async_trait;
use ongraph::driver::Driver;
use ongraph::engine::{Method, Run, Settings, Topics};
use ongraph::kg::load::load_file;
use ongraph::kg::{KgProfile, KnowledgeGraph};
use ongraph::llm::{ChatRequest, Completion, LanguageModel, LlmError, Usage};
use ongraph::prompts::Prompts;
use std::collections::HashMap;
use std::path::Path;
use std::sync::Arc;
use std::time::Instant;

/// A question's gold path: topic, then (relation, entity) hops; and its answers.
#[derive(Clone)]
struct Gold {
    topic: String,
    hops: Vec<(String, String)>,
    answers: Vec<String>,
}

fn label(id: &str) -> String {
    id.replace('_', " ")
}

/// Follows the gold path: picks the gold relation and entity when offered, says Yes once the
/// answer is among the triples.
struct GoldPathModel {
    gold: HashMap<String, Gold>,
}

fn between<'a>(text: &'a str, start: &str, end: &str) -> Option<&'a str> {
    let from = text.rfind(start)? + start.len();
    let rest = &text[from..];
    Some(&rest[..rest.find(end).unwrap_or(rest.len())])
}

#[async_trait]
impl LanguageModel for GoldPathModel {
    fn describe(&self) -> String {
        "gold-path oracle".into()
    }
    async fn complete(&self, r: &ChatRequest) -> Result<Completion, LlmError> {
        let q = between(&r.prompt, "\nQ: ", "\n").unwrap_or_default().trim();
        let gold = self.gold.get(q).ok_or_else(|| LlmError::Config(format!("no gold path for {q:?}")))?;
        let text = match r.step.as_str() {
            "relation_prune" => {
                let relations: Vec<&str> =
                    between(&r.prompt, "\nRelations: ", "\n").unwrap_or_default().split("; ").collect();
                let entity = between(&r.prompt, "\nTopic Entity: ", "\n").unwrap_or_default();
                // Every gold hop that starts at this entity (a path may pass an entity twice).
                let heads = std::iter::once(&gold.topic).chain(gold.hops.iter().map(|(_, e)| e));
                let wanted: Vec<&str> = heads
                    .zip(&gold.hops)
                    .filter(|(head, (rel, _))| label(head) == entity && relations.contains(&rel.as_str()))
                    .map(|(_, (rel, _))| rel.as_str())
                    .collect();
                if wanted.is_empty() {
                    format!("{{{} (Score: 1.0)}}", relations[0])
                } else {
                    wanted.iter().map(|rel| format!("{{{rel} (Score: 1.0)}}")).collect::<Vec<_>>().join(" ")
                }
            }
            "entity_prune" => {
                let entities: Vec<&str> =
                    between(&r.prompt, "\nEntities: ", "\n").unwrap_or_default().split("; ").collect();
                let scores: Vec<&str> = entities
                    .iter()
                    .map(|e| if gold.hops.iter().any(|(_, g)| label(g) == *e) { "1.0" } else { "0.0" })
                    .collect();
                format!("Score: {}", scores.join(", "))
            }
            "reasoning" => {
                let triples = between(&r.prompt, "Knowledge Triplets: ", "\nA:")
                    .or_else(|| between(&r.prompt, "Candidate Entities:\n", "\nA:"))
                    .unwrap_or_default();
                let final_rel = gold.hops.last().map(|(r, _)| r.as_str()).unwrap_or_default();
                match gold.answers.iter().find(|a| {
                    triples.contains(&format!("{final_rel}, {}", label(a)))
                        || triples.contains(&format!("{final_rel}: {}", label(a)))
                }) {
                    Some(a) => format!("{{Yes}}. The answer is {{{}}}.", label(a)),
                    None => "{No}.".into(),
                }
            }
            _ => "{unknown}".into(),
        };
        Ok(Completion { usage: Usage { prompt_tokens: 0, completion_tokens: 0 }, text, latency_ms: 0, cached: false })
    }
}

/// With ONGRAPH_BENCH_DEBUG set: the trace of a question the oracle got wrong.
fn print_miss(q: &str, g: &Gold, run: &Run) {
    println!("MISS {q} gold {:?} -> {:?}", g.hops, run.answer().map(|a| &a.answers));
    for e in run.trace() {
        println!("  {} | {} {:?}", e.phase().unwrap_or("-"), e.summary, e.notes);
        for c in &e.calls {
            let tail = c.prompt.rsplit("\n\n").next().unwrap_or_default().replace('\n', " / ");
            println!("     > {tail} | {}", c.reply);
        }
    }
}

fn main() {
    let limit: usize = std::env::args().skip(1).find_map(|a| a.parse().ok()).unwrap_or(1000);
    let dir = Path::new(concat!(env!("CARGO_MANIFEST_DIR"), "/../shared/datasets/pathquestion"));
    let (kb, questions) = (dir.join("3H-kb.txt"), dir.join("PQ-3H.txt"));
    if !kb.exists() || !questions.exists() {
        println!("PathQuestion not found at {}: nothing to measure", dir.display());
        return;
    }
    let (graph, report) = load_file(&kb, KgProfile::named_ids(), false).expect("KB loads");
    println!("PQ-3H KB: {} triples", report.triples);
    let text = std::fs::read_to_string(&questions).expect("questions");
    let mut items: Vec<(String, Gold)> = Vec::new();
    for line in text.lines().take(limit) {
        let f: Vec<&str> = line.split('\t').collect();
        let (q, answers, path) = (f[0].trim(), f[1], f[2]);
        let answers: Vec<String> = between(answers, "(", ")")
            .unwrap_or_default()
            .split('/')
            .filter(|a| !a.is_empty())
            .map(String::from)
            .collect();
        let parts: Vec<&str> = path.split('#').collect();
        let hops = parts[1..]
            .chunks(2)
            .filter(|c| c.len() == 2 && c[0] != "<end>")
            .map(|c| (c[0].to_string(), c[1].to_string()))
            .collect();
        items.push((q.to_string(), Gold { topic: parts[0].to_string(), hops, answers }));
    }
    let gold: HashMap<String, Gold> = items.iter().cloned().collect();
    let kg: Arc<dyn KnowledgeGraph> = Arc::new(graph);
    let prompts = Arc::new(Prompts::builtin());
    let rt = tokio::runtime::Builder::new_current_thread().build().expect("runtime");
    for method in [Method::Tog, Method::TogR] {
        let driver = Driver::new(kg.clone(), Arc::new(GoldPathModel { gold: gold.clone() }));
        let (mut calls, mut lookups, mut correct, mut by_kg, mut misses) = (0u64, 0u64, 0usize, 0usize, 0usize);
        let started = Instant::now();
        for (q, g) in &items {
            let settings = Settings { method, ..Settings::default() };
            let topics = Topics::Linked(vec![(g.topic.clone(), Some(label(&g.topic)))]);
            let mut run = Run::new(q, topics, settings, prompts.clone(), kg.profile().clone(), kg.name()).expect("run");
            rt.block_on(driver.run(&mut run, |_, _| {})).expect("run completes");
            let c = run.costs();
            calls += c.llm_calls + c.llm_calls_saved;
            lookups += c.kg_lookups;
            let answer = run.answer().expect("answered");
            if answer.answers.iter().any(|a| g.answers.iter().any(|g| label(g) == *a)) {
                correct += 1;
            } else if std::env::var_os("ONGRAPH_BENCH_DEBUG").is_some() && misses < 2 {
                misses += 1;
                print_miss(q, g, &run);
            }
            if answer.source == ongraph::engine::AnswerSource::KgPaths {
                by_kg += 1;
            }
        }
        let secs = started.elapsed().as_secs_f64();
        let n = items.len() as f64;
        println!(
            "{method:?}: {} questions in {secs:.2} s = {:.0} questions/s ({:.2} ms each); {:.1} LLM calls and {:.1} KG lookups per question; gold-path ceiling {:.1}% correct, {:.1}% from KG paths",
            items.len(),
            n / secs,
            1000.0 * secs / n,
            calls as f64 / n,
            lookups as f64 / n,
            100.0 * correct as f64 / n,
            100.0 * by_kg as f64 / n
        );
    }
}
