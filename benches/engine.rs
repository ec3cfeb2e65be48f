//! Engine overhead and ceiling: PathQuestion questions (PQ-2H and PQ-3H with their KBs, from
//! ../shared/datasets) answered by every graph method with the gold-path simulation
//! (`ongraph::llm::gold_path`, zero latency), which picks what lies on each question's gold path.
//! Reports questions per second (engine + driver + local KG + prompt rendering + reply parsing,
//! no model time), LLM calls, rounds and KG lookups per question, and the share answered: the
//! engine's ceiling when every choice is right, not any LLM's accuracy.
//!
//! `cargo bench --bench engine [-- LIMIT]` (default 500 questions per file; needs ../shared).

use ongraph::dataset::{Item, pathquestion};
use ongraph::driver::Driver;
use ongraph::engine::{AnswerSource, Method, Run, Settings, Topics};
use ongraph::eval::metrics::score;
use ongraph::kg::load::load_file;
use ongraph::kg::{KgProfile, KnowledgeGraph};
use ongraph::llm::gold_path::GoldPathModel;
use ongraph::prompts::Prompts;
use std::path::Path;
use std::sync::Arc;
use std::time::Instant;

const METHODS: &[Method] = &[Method::Tog, Method::TogR, Method::Pog, Method::PogE, Method::Gog];

/// With ONGRAPH_BENCH_DEBUG set: the trace of a question the simulation did not answer.
fn print_miss(item: &Item, run: &Run) {
    println!("MISS {} gold {:?} -> {:?}", item.question, item.gold, run.answer().map(|a| &a.answers));
    for e in run.trace() {
        println!("  {} | {} {:?}", e.phase().unwrap_or("-"), e.summary, e.notes);
        for c in &e.calls {
            let tail = c.prompt.rsplit("\n\n").next().unwrap_or_default().replace('\n', " / ");
            println!("     > {tail} | {}", c.reply);
        }
    }
}

fn main() {
    let limit: usize = std::env::args().skip(1).find_map(|a| a.parse().ok()).unwrap_or(500);
    let dir = Path::new(concat!(env!("CARGO_MANIFEST_DIR"), "/../shared/datasets/pathquestion"));
    let rt = tokio::runtime::Builder::new_current_thread().build().expect("runtime");
    let prompts = Arc::new(Prompts::builtin());
    println!(
        "| file | method | questions | questions/s | ms each | LLM calls | rounds | KG lookups | answered | from KG paths |"
    );
    println!("|---|---|---|---|---|---|---|---|---|---|");
    for (kb, questions) in [("2H-kb.txt", "PQ-2H.txt"), ("3H-kb.txt", "PQ-3H.txt")] {
        let (kb, questions_path) = (dir.join(kb), dir.join(questions));
        if !kb.exists() || !questions_path.exists() {
            println!("PathQuestion not found at {}: nothing to measure", dir.display());
            return;
        }
        let (graph, _) = load_file(&kb, KgProfile::named_ids(), false).expect("KB loads");
        let mut items = pathquestion::load(&questions_path).expect("questions load");
        items.truncate(limit);
        let kg: Arc<dyn KnowledgeGraph> = Arc::new(graph);
        let model =
            Arc::new(GoldPathModel::new(items.iter().filter_map(|i| Some((i.question.clone(), i.gold.clone()?)))));
        for &method in METHODS {
            // A driver per method: its memo of identical calls must not carry one method's
            // replies into another's counts.
            let driver = Driver::new(kg.clone(), model.clone());
            let (mut calls, mut rounds, mut lookups, mut correct, mut by_kg, mut misses) = (0, 0, 0, 0, 0, 0);
            let started = Instant::now();
            for item in &items {
                let settings = Settings { method, ..Settings::default() };
                let topics = Topics::Linked(item.topics.clone());
                let mut run =
                    Run::new(&item.question, topics, settings, prompts.clone(), kg.profile().clone(), kg.name())
                        .expect("run");
                rt.block_on(driver.run(&mut run, |_, _| {})).expect("run completes");
                let c = run.costs();
                calls += c.llm_calls + c.llm_calls_saved;
                rounds += c.llm_rounds;
                lookups += c.kg_lookups;
                let answer = run.answer().expect("answered");
                // Reached: some predicted answer is a gold one (strict match).
                if score(&answer.answers, &item.answers).f1 > 0.0 {
                    correct += 1;
                } else if std::env::var_os("ONGRAPH_BENCH_DEBUG").is_some() && misses < 2 {
                    misses += 1;
                    print_miss(item, &run);
                }
                if matches!(answer.source, AnswerSource::KgPaths) {
                    by_kg += 1;
                }
            }
            let secs = started.elapsed().as_secs_f64();
            let n = items.len() as f64;
            println!(
                "| {questions} | {} | {} | {:.0} | {:.2} | {:.1} | {:.1} | {:.1} | {:.1}% | {:.1}% |",
                method.label(),
                items.len(),
                n / secs,
                1000.0 * secs / n,
                calls as f64 / n,
                rounds as f64 / n,
                lookups as f64 / n,
                100.0 * correct as f64 / n,
                100.0 * by_kg as f64 / n
            );
        }
    }
}
