//! `fix impact` over 10,000 kept runs (issue 38): building the index beside the store from an
//! eval run's records, then the impact of one correction with the index up to date (the check
//! of every file's stamp included), against reading every record from its file.
//!
//! `cargo bench --bench impact`
#![allow(clippy::print_stdout, clippy::print_stderr)] // a bench prints its figures

use ongraph::kg::Term;
use ongraph::testing::impact::{Kept, load};
use ongraph::testing::overlay::Op;
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use std::fmt::Write as _;
use std::time::Instant;

const RUNS: usize = 10_000;
const ENTITIES: usize = 50_000;

/// One eval record as `ongraph eval` writes it, its footprint drawn at random: a topic, three
/// relation lists, six neighbour lookups, forty names shown, one search, a two-hop answer path.
fn record(index: usize, rng: &mut ChaCha8Rng) -> String {
    let mut e = || format!("m.{}", rng.random_range(0..ENTITIES));
    let (topic, middle, answer) = (e(), e(), e());
    let named: Vec<String> = (0..40).map(|_| e()).chain([middle.clone(), answer.clone()]).collect();
    let neighbours: Vec<serde_json::Value> =
        (0..6).map(|i| serde_json::json!([if i < 3 { &topic } else { &middle }, format!("rel.{i}"), "out"])).collect();
    serde_json::json!({
        "index": index, "id": format!("q{index}"), "question": format!("question {index} about {topic}?"),
        "gold": [{"name": "x"}], "prediction": [answer.clone()], "source": "kg_paths",
        "score": {"hit": true, "f1": 1.0, "lenient": true},
        "llm_calls": 6, "llm_calls_saved": 0, "llm_rounds": 5, "prompt_tokens": 1800, "completion_tokens": 200,
        "kg_lookups": 9, "wall_ms": 1000, "method": "ToG", "settings": ongraph::engine::Settings::default(),
        "footprint": {
            "relations_of": [topic.clone(), middle.clone(), e()],
            "neighbours": neighbours,
            "searched": [name(rng.random_range(0..ENTITIES))],
            "named": named,
            "rests_on": [[topic, "rel.0", middle.clone()], [middle, "rel.3", answer]],
        }
    })
    .to_string()
}

/// A made-up name for entity `n`: three syllables, as labels differ.
fn name(n: usize) -> String {
    const SYLLABLES: &[&str] =
        &["ka", "lo", "mi", "ren", "sa", "tor", "vel", "an", "bri", "dus", "el", "fio", "gu", "ha"];
    let s = |i: usize| SYLLABLES[(n / SYLLABLES.len().pow(i as u32)) % SYLLABLES.len()];
    format!("{}{} {}{}", s(0), s(1), s(2), s(3))
}

fn median(mut ms: Vec<f64>) -> f64 {
    ms.sort_by(f64::total_cmp);
    ms[ms.len() / 2]
}

fn main() {
    let dir = tempfile::tempdir().expect("a temporary directory");
    let runs = dir.path().join("runs");
    std::fs::create_dir_all(&runs).expect("runs/");
    let mut rng = ChaCha8Rng::seed_from_u64(38);
    let mut text = String::new();
    for i in 0..RUNS {
        writeln!(text, "{}", record(i, &mut rng)).expect("a line");
    }
    std::fs::write(runs.join("records.jsonl"), &text).expect("records");
    std::fs::write(
        runs.join("run.json"),
        r#"{"dataset": "none", "format": "pathquestion", "kg": "kb.txt", "llm": "bench"}"#,
    )
    .expect("run.json");
    println!("{RUNS} kept runs, {:.1} MB of records", text.len() as f64 / 1e6);
    let (all, skipped) = load(std::slice::from_ref(&runs));
    assert!(skipped.is_empty() && all.len() == RUNS, "every record reads: {} read, {skipped:?}", all.len());
    drop(all);
    let places = vec![runs.clone()];
    let index = dir.path().join("impact-index");

    let started = Instant::now();
    let kept = Kept::open(&index, &places);
    assert!(matches!(kept, Kept::Indexed(..)), "the index opens");
    println!("  index built from the records: {:.0} ms", started.elapsed().as_secs_f64() * 1e3);
    drop(kept);

    // A fact the first record's answer rests on, and a new name a search may now find.
    let first: serde_json::Value = serde_json::from_str(text.lines().next().expect("a record")).expect("JSON");
    let fact = &first["footprint"]["rests_on"][0];
    let text_of = |v: &serde_json::Value| v.as_str().expect("a string").to_string();
    let ops = [
        (
            "retract a fact an answer rests on",
            Op::Retract {
                subject: text_of(&fact[0]),
                relation: text_of(&fact[1]),
                object: Term::Entity(text_of(&fact[2])),
            },
        ),
        ("relabel an entity", Op::Relabel { entity: "m.999".into(), label: name(12_345) }),
    ];
    let ours = |kg: &str| kg == "kb.txt";
    for (what, op) in &ops {
        let (mut indexed, mut found) = (Vec::new(), 0);
        for _ in 0..7 {
            let started = Instant::now();
            let kept = Kept::open(&index, &places);
            found = kept.touched(op, &[], ours).len();
            indexed.push(started.elapsed().as_secs_f64() * 1e3);
        }
        // The UI keeps the index open: every file's stamp checked again, then the query.
        let mut kept = Kept::open(&index, &places);
        let mut queries = Vec::new();
        for _ in 0..7 {
            let started = Instant::now();
            kept = kept.refreshed(&places);
            assert_eq!(kept.touched(op, &[], ours).len(), found);
            queries.push(started.elapsed().as_secs_f64() * 1e3);
        }
        drop(kept);
        let started = Instant::now();
        let (all, skipped) = load(&places);
        assert!(skipped.is_empty(), "{skipped:?}");
        let read = Kept::Read(all, Vec::new());
        let linear = read.touched(op, &[], ours).len();
        let linear_ms = started.elapsed().as_secs_f64() * 1e3;
        assert_eq!(found, linear, "the index finds what reading every record finds");
        println!(
            "  {what}: {found} runs touched; {:.1} ms through the index (median of 7, opening it and checking \
             every file's stamp included), {:.1} ms with the index kept open (the UI; stamps checked again), {linear_ms:.0} ms reading \
             every record",
            median(indexed),
            median(queries)
        );
    }
}
