//! Engine overhead and ceiling: PathQuestion questions (PQ-2H and PQ-3H with their KBs, from
//! ../shared/datasets) answered by every graph method with the gold-path simulation
//! (`src/llm/gold_path.rs`, zero latency), which picks what lies on each question's gold path.
//! Reports questions per second (engine + driver + local KG + prompt rendering + reply parsing,
//! no model time), LLM calls, rounds and KG lookups per question, and the share answered: the
//! engine's ceiling when every choice is right, not any LLM's accuracy.
//!
//! `cargo bench --bench engine [-- LIMIT]` (default 500 questions per file; needs ../shared).
#![allow(clippy::print_stdout, clippy::print_stderr)] // a bench prints its figures

#[path = "common/pathquestion.rs"]
mod pathquestion;

use ongraph::engine::{AnswerSource, MethodId, Run};
use ongraph::testing::dataset::Item;
use ongraph::testing::eval::score;
use std::sync::Arc;
use std::time::Instant;

const METHODS: &[MethodId] = &[MethodId::TOG, MethodId::TOG_R, MethodId::POG, MethodId::POG_E, MethodId::GOG];

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
    let Some(samples) = pathquestion::samples(limit) else { return };
    let rt = tokio::runtime::Builder::new_current_thread().build().expect("runtime");
    let prompts = Arc::new(ongraph::engine::builtin_prompts());
    println!(
        "| file | method | questions | questions/s | ms each | LLM calls | rounds | KG lookups | answered | from KG paths |"
    );
    println!("|---|---|---|---|---|---|---|---|---|---|");
    for sample in &samples {
        for &method in METHODS {
            let driver = sample.driver();
            let (mut calls, mut rounds, mut lookups, mut correct, mut by_kg, mut misses) = (0, 0, 0, 0, 0, 0);
            let started = Instant::now();
            for item in &sample.items {
                let run = rt.block_on(sample.answer(&driver, item, method, &prompts));
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
            let n = sample.items.len() as f64;
            println!(
                "| {} | {} | {} | {:.0} | {:.2} | {:.1} | {:.1} | {:.1} | {:.1}% | {:.1}% |",
                sample.file,
                method.label(),
                sample.items.len(),
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
