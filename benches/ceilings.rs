//! The engine's ceiling on whole PathQuestion files, and why each question below it is missed.
//! Every graph method answers every question of PQ-2H, PQ-3H, PQL-2H and PQL-3H with the
//! gold-path simulation (which chooses along the gold path but reads only its prompts, see
//! `src/llm/gold_path.rs`); each miss is put down to one cause, read off the run's beam (ToG,
//! ToG-R), the gold path (PoG) or the KG (GoG), and counted, with one example each.
//!
//! `cargo bench --bench ceilings [-- FILE…]` (default all four; needs ../shared/datasets).
#![allow(clippy::print_stdout, clippy::print_stderr)] // a bench prints its figures

use ongraph::engine::beam::{Beam, NodeId, NodeKind};
use ongraph::engine::{MethodId, Run, Settings, Topics};
use ongraph::kg::{Direction, KgProfile, KnowledgeGraph, RelationRef};
use ongraph::testing::dataset::{Item, gold_paths, pathquestion};
use ongraph::testing::driver::Driver;
use ongraph::testing::eval::score;
use ongraph::testing::kg::load_file;
use ongraph::testing::llm::{GoldPath, GoldPathModel};
use std::collections::BTreeMap;
use std::path::Path;
use std::sync::Arc;

const FILES: &[(&str, &str)] = &[
    ("PQ-2H.txt", "2H-kb.txt"),
    ("PQ-3H.txt", "3H-kb.txt"),
    ("PQL-2H.txt", "PQL2-KB.txt"),
    ("PQL-3H.txt", "PQL3-KB.txt"),
];
const METHODS: &[MethodId] = &[MethodId::TOG, MethodId::TOG_R, MethodId::POG, MethodId::GOG];
/// GoG's Search shows at most this many triples of a relation (the paper's setting).
const GOG_TRIPLES_PER_RELATION: usize = 5;

/// As the simulation compares names: `_` and spaces alike, case kept (PQL's ids are names).
fn norm_name(n: &str) -> String {
    n.trim().replace('_', " ")
}

fn norm_rel(r: &str) -> String {
    r.trim().trim_start_matches("__").replace("__", ".")
}

fn arrives(gold: &GoldPath, i: usize, name: &str) -> bool {
    let name = norm_name(name);
    if i + 1 == gold.hops.len() {
        gold.answers.iter().any(|a| norm_name(a) == name)
    } else {
        norm_name(&gold.hops[i].1) == name
    }
}

/// ToG and ToG-R: follows the gold path down the beam and says where and why it left it.
fn beam_cause(beam: &Beam, gold: &GoldPath) -> String {
    let label = |n: NodeId| norm_name(beam.nodes[n].shown());
    let mut frontier: Vec<NodeId> =
        beam.roots().filter(|r| label(r.id) == norm_name(&gold.topic)).map(|r| r.id).collect();
    for (i, (rel, _)) in gold.hops.iter().enumerate() {
        let (mut next, mut lost, mut searched) = (Vec::new(), Vec::new(), false);
        for &e in &frontier {
            for &r in &beam.nodes[e].children {
                let NodeKind::Relation { relation, direction: Direction::Out, .. } = &beam.nodes[r].kind else {
                    continue;
                };
                if norm_rel(relation) != norm_rel(rel) {
                    continue;
                }
                searched = true;
                if !beam.is_live_path(r) {
                    lost.push(format!("relation {}", beam.nodes[r].reason.clone().unwrap_or_default()));
                    continue;
                }
                for &t in &beam.nodes[r].children {
                    if !arrives(gold, i, beam.nodes[t].shown()) {
                        continue;
                    }
                    if beam.is_live_path(t) {
                        next.push(t);
                    } else {
                        lost.push(format!("entity {}", beam.nodes[t].reason.clone().unwrap_or_default()));
                    }
                }
            }
        }
        if next.is_empty() {
            let why = match (searched, lost.first()) {
                (false, _) => "the gold relation was never searched (the beam stopped before it)".to_string(),
                (true, None) => "the gold entity is not among the neighbours shown".to_string(),
                (true, Some(w)) => w.clone(),
            };
            return format!("hop {}: {why}", i + 1);
        }
        frontier = next;
    }
    "the whole gold path is on the beam, yet no sufficient check".into()
}

/// PoG: its candidates are simple paths, so a gold path that visits an entity twice (PQL's
/// names as ids make `Believe -tracks-> Believe` one node) has none.
fn pog_cause(gold: &GoldPath) -> String {
    let mut seen = vec![norm_name(&gold.topic)];
    for (_, e) in &gold.hops {
        if seen.contains(&norm_name(e)) {
            return "the gold path visits an entity twice; PoG's candidate paths are simple".into();
        }
        seen.push(norm_name(e));
    }
    "other".into()
}

/// GoG: a Search shows at most 5 triples a relation; the gold entity may be beyond them. The
/// cause, and how many triples the relation has.
async fn gog_cause(kg: &dyn KnowledgeGraph, gold: &GoldPath) -> (String, usize) {
    let mut head = gold.topic.replace(' ', "_");
    for (i, (rel, entity)) in gold.hops.iter().enumerate() {
        let relation = RelationRef { relation: rel.clone(), direction: Direction::Out, label: None };
        let tails = kg.neighbours(&head, &relation).await.unwrap_or_default();
        let shown = &tails[..tails.len().min(GOG_TRIPLES_PER_RELATION)];
        if !shown.iter().any(|n| arrives(gold, i, n.label.as_deref().unwrap_or(n.term.as_str()))) {
            let cause = format!(
                "hop {}: the gold entity is not among the {GOG_TRIPLES_PER_RELATION} triples of its relation a Search shows",
                i + 1
            );
            return (cause, tails.len());
        }
        head = entity.replace(' ', "_");
    }
    ("other".into(), 0)
}

fn main() {
    let wanted: Vec<String> = std::env::args().skip(1).filter(|a| a.ends_with(".txt")).collect();
    let dir = Path::new(concat!(env!("CARGO_MANIFEST_DIR"), "/../shared/datasets/pathquestion"));
    let rt = tokio::runtime::Builder::new_current_thread().build().expect("runtime");
    let prompts = Arc::new(ongraph::engine::builtin_prompts());
    for &(file, kb) in FILES {
        if !wanted.is_empty() && !wanted.iter().any(|w| w == file) {
            continue;
        }
        let Ok((graph, _)) = load_file(&dir.join(kb), KgProfile::named_ids(), true) else {
            println!("(PathQuestion not found at {}: nothing measured)", dir.display());
            return;
        };
        let kg: Arc<dyn KnowledgeGraph> = Arc::new(graph);
        let items: Vec<Item> = pathquestion::load(&dir.join(file)).expect("PathQuestion questions load");
        // The first line of each question text: the path a reader of the text follows.
        let mut first: BTreeMap<&str, &Item> = BTreeMap::new();
        for item in &items {
            first.entry(item.question.trim()).or_insert(item);
        }
        for &method in METHODS {
            let driver = Driver::new(kg.clone(), Arc::new(GoldPathModel::new(gold_paths(&items))));
            let mut causes: BTreeMap<String, (usize, String)> = BTreeMap::new();
            let mut hits = 0;
            for item in &items {
                let settings = Settings { method, ..Settings::default() };
                let topics = Topics::Linked(item.topics.clone());
                let mut run =
                    Run::new(&item.question, topics, settings, prompts.clone(), kg.profile().clone(), kg.name())
                        .expect("run starts");
                rt.block_on(driver.run(&mut run, |_, _| {})).expect("the simulation answers every prompt");
                let answer = run.answer().expect("answered");
                if score(&answer.answers, &item.answers).hit {
                    hits += 1;
                    continue;
                }
                // A reader of the text follows the first line's path: judge the run by that path;
                // when that line's answers are not this line's, nothing could have scored.
                let followed = first[item.question.trim()];
                let gold = followed.gold.as_ref().expect("PathQuestion gives a gold path");
                let other =
                    followed.answers.iter().all(|a| score(std::slice::from_ref(&a.name), &item.answers).f1 == 0.0);
                let mut example = format!("{}: {}", item.id, item.question);
                let cause = if other {
                    "the question text repeats on an earlier line with other answers; a reader follows that one".into()
                } else {
                    match method {
                        MethodId::POG => pog_cause(gold),
                        MethodId::GOG => {
                            let (cause, triples) = rt.block_on(gog_cause(kg.as_ref(), gold));
                            example.push_str(&format!(" ({triples} triples)"));
                            cause
                        }
                        _ => beam_cause(run.beam(), gold),
                    }
                };
                let entry = causes.entry(cause).or_insert((0, example));
                entry.0 += 1;
            }
            let n = items.len();
            println!(
                "{file} {:?}: strict Hits@1 {:.1}% ({hits}/{n}); misses by cause:",
                method,
                100.0 * hits as f64 / n as f64
            );
            let mut rows: Vec<_> = causes.into_iter().collect();
            rows.sort_by_key(|row| std::cmp::Reverse(row.1.0));
            for (cause, (count, example)) in rows {
                println!("  {count:5}  {cause}  (e.g. {example})");
            }
        }
    }
}
