//! LLM calls, dependent rounds and tokens per question for every method, side by side, on the
//! demo questions with the demo script (`sessions/demo-model.toml`; zero-latency, so only the
//! counts mean anything). A method the script has no replies for on a question shows `—`.
//!
//! `cargo bench --bench methods` prints a Markdown table (docs/BENCHMARKS.md keeps the latest).

use ongraph::driver::Driver;
use ongraph::engine::{Method, Run, Settings, Topics};
use ongraph::kg::Term;
use ongraph::kg::load::demo_graph;
use ongraph::llm::scripted::ScriptedModel;
use ongraph::overlay::OverlayKg;
use ongraph::prompts::Prompts;
use std::sync::Arc;

const QUESTIONS: &[(&str, &str, bool)] = &[
    ("Canberra", "What is the majority party now in the country where Canberra is located?", false),
    ("Phanatic", "Which ballpark hosts spring training for the team whose mascot is the Phillie Phanatic?", false),
    ("Lou Seal", "In which years did the team whose mascot is Lou Seal win the World Series?", false),
    ("Apple (IKG)", "In which time zone is the headquarters of Apple Inc.?", true),
    ("Giants–Rangers", "Which World Series did the San Francisco Giants win against the Texas Rangers?", false),
];

const METHODS: &[Method] =
    &[Method::Io, Method::Cot, Method::Sc, Method::Tog, Method::TogR, Method::Pog, Method::PogE, Method::Gog];

#[tokio::main(flavor = "current_thread")]
async fn main() {
    let script = ScriptedModel::demo().expect("the demo script parses");
    let model = Arc::new(script);
    let prompts = Arc::new(Prompts::builtin());
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
}
