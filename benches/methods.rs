//! LLM calls, dependent rounds and tokens per question for every method, side by side, on the
//! demo questions with the demo script (`sessions/demo-model.toml`; zero-latency, so only the
//! counts mean anything; a method the script has no replies for on a question shows `—`), then
//! on PathQuestion samples (when ../shared/datasets/pathquestion is there) with the gold-path
//! simulation, as means per question with the share of gold answers reached.
//!
//! `cargo bench --bench methods [-- SAMPLE]` prints one Markdown table (default sample: the
//! first 100 questions of PQ-2H and of PQ-3H; docs/BENCHMARKS.md keeps the latest).
#![allow(clippy::print_stdout, clippy::print_stderr)] // a bench prints its figures

#[path = "common/pathquestion.rs"]
mod pathquestion;

use ongraph::engine::{MethodId, Run, Settings, Topics};
use ongraph::kg::Term;
use ongraph::prompts::Prompts;
use ongraph::testing::driver::Driver;
use ongraph::testing::eval::score;
use ongraph::testing::kg::demo_graph;
use ongraph::testing::llm::ScriptedModel;
use ongraph::testing::overlay::OverlayKg;
use std::sync::Arc;

const QUESTIONS: &[(&str, &str, bool)] = &[
    ("Canberra", "What is the majority party now in the country where Canberra is located?", false),
    ("Phanatic", "Which ballpark hosts spring training for the team whose mascot is the Phillie Phanatic?", false),
    ("Lou Seal", "In which years did the team whose mascot is Lou Seal win the World Series?", false),
    ("Apple (IKG)", "In which time zone is the headquarters of Apple Inc.?", true),
    ("Giants–Rangers", "Which World Series did the San Francisco Giants win against the Texas Rangers?", false),
];

const METHODS: &[MethodId] = &[
    MethodId::IO,
    MethodId::COT,
    MethodId::SC,
    MethodId::TOG,
    MethodId::TOG_R,
    MethodId::POG,
    MethodId::POG_E,
    MethodId::GOG,
];

#[tokio::main(flavor = "current_thread")]
async fn main() {
    let script = ScriptedModel::demo().expect("the demo script parses");
    let model = Arc::new(script);
    let prompts = Arc::new(ongraph::engine::builtin_prompts());
    println!("| question | {} |", METHODS.iter().map(|m| m.label()).collect::<Vec<_>>().join(" | "));
    println!("|---|{}", "---|".repeat(METHODS.len()));
    for (name, question, incomplete) in QUESTIONS {
        let mut cells = Vec::new();
        for &method in METHODS {
            let hidden: Vec<(String, String, Term)> = if *incomplete {
                vec![("m.cupertino".into(), "location.location.time_zones".into(), Term::Entity("m.pacific_tz".into()))]
            } else {
                Vec::new()
            };
            let kg = OverlayKg::new(Arc::new(demo_graph()), &[]).with_hidden(&hidden);
            let driver = Driver::new(Arc::new(kg), model.clone());
            let profile = driver.kg().profile().clone();
            let settings = Settings { method, ..Settings::default() };
            let mut run = Run::new(question, Topics::Extract, settings, prompts.clone(), profile, "demo").expect("run");
            cells.push(match driver.run(&mut run, |_, _| {}).await {
                Ok(()) => {
                    let c = run.costs();
                    let answer = run.answer().map(|a| a.answers.join(" / ")).unwrap_or_default();
                    format!(
                        "{} calls, {} rounds, {} tok ({answer})",
                        c.llm_calls,
                        c.llm_rounds,
                        c.usage.prompt_tokens + c.usage.completion_tokens
                    )
                }
                Err(_) => "—".into(),
            });
        }
        println!("| {name} | {} |", cells.join(" | "));
    }
    pathquestion_rows(&prompts).await;
}

/// Means per question on the first SAMPLE questions of PQ-2H and PQ-3H, gold-path simulation.
async fn pathquestion_rows(prompts: &Arc<Prompts>) {
    let sample: usize = std::env::args().skip(1).find_map(|a| a.parse().ok()).unwrap_or(100);
    let Some(samples) = pathquestion::samples(sample) else { return };
    for sample in &samples {
        let mut cells = Vec::new();
        for &method in METHODS {
            let driver = sample.driver();
            let (mut calls, mut rounds, mut tokens, mut reached) = (0, 0, 0, 0);
            for item in &sample.items {
                let run = sample.answer(&driver, item, method, prompts).await;
                let c = run.costs();
                calls += c.llm_calls + c.llm_calls_saved;
                rounds += c.llm_rounds;
                tokens += c.usage.prompt_tokens + c.usage.completion_tokens;
                reached += usize::from(run.answer().is_some_and(|a| score(&a.answers, &item.answers).f1 > 0.0));
            }
            let n = sample.items.len().max(1) as f64;
            cells.push(format!(
                "{:.1} calls, {:.1} rounds, {:.0} tok ({:.0}% reached)",
                calls as f64 / n,
                rounds as f64 / n,
                tokens as f64 / n,
                100.0 * reached as f64 / n
            ));
        }
        println!("| {} first {} (gold-path sim.) | {} |", sample.file, sample.items.len(), cells.join(" | "));
    }
}
