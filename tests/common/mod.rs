//! Shared helpers: the demo graph, scripted models and a compact beam rendering for snapshots.
#![allow(dead_code)]

use ongraph::engine::beam::{Beam, NodeKind};
use ongraph::engine::{Run, Settings, Topics};
use ongraph::testing::driver::Driver;
use ongraph::testing::kg::demo_graph;
use ongraph::testing::llm::ScriptedModel;
use std::path::Path;
use std::process::Command;
use std::sync::Arc;

pub mod faults;
pub mod servers;
pub mod sparql_faults;

pub const DEMO_SCRIPT: &str = include_str!("../../sessions/demo-model.toml");

/// A driver over the demo graph with the demo script plus `extra` replies (checked first).
pub fn demo_driver(extra: &str) -> Driver {
    let script = format!("{extra}\n{DEMO_SCRIPT}");
    let model = ScriptedModel::from_toml("test script", &script).expect("test script parses");
    Driver::new(Arc::new(demo_graph()), Arc::new(model))
}

pub fn new_run(driver: &Driver, question: &str, topics: Topics, settings: Settings) -> Run {
    let kg = driver.kg();
    Run::new(question, topics, settings, Arc::new(ongraph::engine::builtin_prompts()), kg.profile().clone(), kg.name())
        .expect("run starts")
}

pub fn named(names: &[&str]) -> Topics {
    Topics::Named(names.iter().map(|s| s.to_string()).collect())
}

/// Steps until the next step would be `phase` (or the run ends).
pub async fn run_until(driver: &Driver, run: &mut Run, phase: &str) {
    while !run.is_finished() && run.next_phase() != phase {
        driver.step(run).await.expect("step");
    }
}

/// Steps until the next step would be `phase` at `depth` (or the run ends).
pub async fn run_until_depth(driver: &Driver, run: &mut Run, depth: u32, phase: &str) {
    let there = |run: &Run| run.is_finished() || (run.depth() == depth && run.next_phase() == phase);
    while !there(run) {
        driver.step(run).await.expect("step");
    }
}

pub async fn run_to_end(driver: &Driver, run: &mut Run) {
    driver.run(run, |_, _| {}).await.expect("run");
}

/// Runs to the end, recording after every step its phase, summary and the whole beam.
pub async fn step_transcript(driver: &Driver, run: &mut Run) -> String {
    let mut transcript = String::new();
    while let Some(i) = driver.step(run).await.expect("step") {
        let e = &run.trace()[i];
        transcript.push_str(&format!(
            "== step {i} {}: {}\n{}",
            e.phase().unwrap_or("-"),
            e.summary,
            render(run.beam())
        ));
    }
    transcript
}

/// One line per node: indentation by depth, status symbol, what it is, score and path score.
pub fn render(beam: &Beam) -> String {
    let mut out = String::new();
    for root in beam.roots() {
        render_node(beam, root.id, 0, &mut out);
    }
    out
}

fn render_node(beam: &Beam, id: usize, indent: usize, out: &mut String) {
    let n = &beam.nodes[id];
    let what = match &n.kind {
        NodeKind::Entity { term, .. } => format!("{} [{}]", n.shown(), term),
        NodeKind::Relation { direction, shown, .. } => format!("{} {shown}", direction.arrow()),
    };
    let score = n.score.map(|s| format!(" s={s:.3}")).unwrap_or_default();
    out.push_str(&format!("{}{} {what}{score} p={:.4}\n", "  ".repeat(indent), n.status.symbol(), n.path_score));
    for &c in &n.children {
        render_node(beam, c, indent + 1, out);
    }
}

/// The `ongraph` binary with private config, state and data directories under `home`, so the
/// user's own config, logs and corrections never leak in.
pub fn ongraph_cmd(home: &Path, args: &[&str]) -> Command {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_ongraph"));
    cmd.args(args)
        .env("XDG_CONFIG_HOME", home.join("config"))
        .env("XDG_STATE_HOME", home.join("state"))
        .env("XDG_DATA_HOME", home.join("data"))
        .env("XDG_CACHE_HOME", home.join("cache"))
        .env_remove("ONGRAPH_CONFIG")
        .env_remove("ONGRAPH_LLM")
        .env_remove("ONGRAPH_KG")
        .env_remove("ONGRAPH_LOG");
    cmd
}

/// One GoG step as its pane shows it.
#[derive(Debug, Default)]
pub struct GogRow {
    pub thought: String,
    pub action: String,
    /// Empty until the step has run.
    pub observation: String,
}

/// GoG's steps, read from the method's view (what the UI draws).
pub fn gog_steps(run: &Run) -> Vec<GogRow> {
    use ongraph::engine::Tone;
    run.view()
        .items
        .iter()
        .map(|item| {
            let mut row = GogRow::default();
            let mut observing = false;
            for line in item.detail.iter().filter(|l| l.tone != Tone::Dim) {
                match line.label.as_str() {
                    "Thought: " => row.thought = line.text.clone(),
                    "Action: " => row.action = line.text.clone(),
                    "Observation:" => observing = true,
                    _ if observing => {
                        if !row.observation.is_empty() {
                            row.observation.push('\n');
                        }
                        row.observation.push_str(&line.text);
                    }
                    _ => {}
                }
            }
            row
        })
        .collect()
}

/// Whether GoG's last step is written and not run yet (the pane offers it for editing).
pub fn gog_editable(run: &Run) -> bool {
    run.view().items.iter().any(|i| i.edit.is_some())
}

/// The report lines of the method's pane (PoG's analysis, subgraph and stages).
pub fn report_lines(run: &Run) -> Vec<String> {
    run.view().report.iter().map(|l| format!("{}{}", l.label, l.text)).collect()
}
