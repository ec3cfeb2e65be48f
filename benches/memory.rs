//! Heap memory of single engine runs: a 6-step GoG run, a 3-hop PoG run and a 3-hop ToG run on a
//! generated graph, driven step by step with the gold-path simulation (no network, zero latency).
//! A counting global allocator (over the system one) tracks the bytes live and their peak.
//!
//! For each run: the trace events (steps fed), the peak heap during the run and the heap the
//! `Run` still holds after its last step (both over the heap before `Run::new`), the live heap's
//! growth per step (mean over the steps, and the last step's), the size of a deep copy of the
//! trace (what a snapshot that copies the trace copies at the end) and of the beam and answer,
//! and the peak RSS (VmHWM) with the RSS before the run. Each run has a child process of its
//! own; its peak RSS is reset through /proc/self/clear_refs once the graph is built (where the
//! kernel allows it), but the graph stays resident, so it is the process's peak, not the run's.
//!
//! Each step is taken by a fresh `Driver` that is dropped before the heap is read, so nothing
//! but the run holds memory between steps (the driver's memo of identical calls would).
//!
//! `cargo bench --bench memory` (deterministic: the same counts every time, RSS aside).
#![allow(clippy::print_stdout, clippy::print_stderr)] // a bench prints its figures
#![allow(unsafe_code)] // the counting global allocator

use ongraph::engine::{GogSettings, MethodId, Run, Settings, Topics};
use ongraph::kg::{KgProfile, KnowledgeGraph, Term};
use ongraph::testing::driver::Driver;
use ongraph::testing::kg::{GraphBuilder, LocalGraph};
use ongraph::testing::llm::{GoldPath, GoldPathModel};
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use std::alloc::{GlobalAlloc, Layout, System};
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering::Relaxed};

/// The system allocator, counting the bytes live and their peak.
struct Counting;

static CURRENT: AtomicUsize = AtomicUsize::new(0);
static PEAK: AtomicUsize = AtomicUsize::new(0);
static ALLOCATIONS: AtomicUsize = AtomicUsize::new(0);

fn grew(bytes: usize) {
    let now = CURRENT.fetch_add(bytes, Relaxed) + bytes;
    PEAK.fetch_max(now, Relaxed);
}

fn shrank(bytes: usize) {
    CURRENT.fetch_sub(bytes, Relaxed);
}

unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        let p = unsafe { System.alloc(layout) };
        if !p.is_null() {
            ALLOCATIONS.fetch_add(1, Relaxed);
            grew(layout.size());
        }
        p
    }

    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        let p = unsafe { System.alloc_zeroed(layout) };
        if !p.is_null() {
            ALLOCATIONS.fetch_add(1, Relaxed);
            grew(layout.size());
        }
        p
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        unsafe { System.dealloc(ptr, layout) };
        shrank(layout.size());
    }

    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        let p = unsafe { System.realloc(ptr, layout, new_size) };
        if !p.is_null() {
            ALLOCATIONS.fetch_add(1, Relaxed);
            if new_size >= layout.size() {
                grew(new_size - layout.size());
            } else {
                shrank(layout.size() - new_size);
            }
        }
        p
    }
}

#[global_allocator]
static GLOBAL: Counting = Counting;

fn live() -> usize {
    CURRENT.load(Relaxed)
}

/// Starts a new peak at the bytes live now.
fn reset_peak() {
    PEAK.store(live(), Relaxed);
}

/// Entities of the generated graph; each has `RELATIONS_EACH` relations of `TAILS_EACH` tails.
const ENTITIES: usize = 40_000;
const RELATIONS_EACH: usize = 3;
const TAILS_EACH: usize = 3;
const RELATIONS: &[&str] = &[
    "spouse",
    "parents",
    "children",
    "place_of_birth",
    "nationality",
    "employer",
    "team",
    "located_in",
    "founded_by",
    "educated_at",
    "influenced_by",
    "award_won",
    "genre",
    "capital",
    "language",
    "religion",
];
const SYLLABLES: &[&str] =
    &["ka", "ro", "mi", "len", "dar", "vo", "shi", "tal", "bre", "no", "qui", "san", "el", "mor", "ith", "ga"];

/// A generated graph: `ENTITIES` entities with two-word names (ids `Word_Word_n`, labels from
/// the ids), each with `RELATIONS_EACH` distinct relations to `TAILS_EACH` random entities (seed
/// 7), so an entity has about 9 outgoing and 9 incoming edges; and its outgoing edges in order.
struct Generated {
    graph: LocalGraph,
    ids: Vec<String>,
    out: Vec<Vec<(usize, usize)>>,
}

fn word(rng: &mut ChaCha8Rng) -> String {
    let n = rng.random_range(2..=3);
    let mut w: String = (0..n).map(|_| SYLLABLES[rng.random_range(0..SYLLABLES.len())]).collect();
    w[..1].make_ascii_uppercase();
    w
}

fn generate() -> Generated {
    let mut rng = ChaCha8Rng::seed_from_u64(7);
    let ids: Vec<String> = (0..ENTITIES).map(|i| format!("{}_{}_{i}", word(&mut rng), word(&mut rng))).collect();
    let mut b = GraphBuilder::new();
    let mut out = vec![Vec::new(); ENTITIES];
    for (h, edges) in out.iter_mut().enumerate() {
        let mut rels: Vec<usize> = Vec::new();
        while rels.len() < RELATIONS_EACH {
            let r = rng.random_range(0..RELATIONS.len());
            if !rels.contains(&r) {
                rels.push(r);
            }
        }
        for r in rels {
            for _ in 0..TAILS_EACH {
                let t = rng.random_range(0..ENTITIES);
                if t != h {
                    b.add(&ids[h], RELATIONS[r], &Term::Entity(ids[t].clone()));
                    edges.push((r, t));
                }
            }
        }
    }
    Generated { graph: b.finish("generated", KgProfile::named_ids()), ids, out }
}

impl Generated {
    fn label(&self, e: usize) -> String {
        self.ids[e].replace('_', " ")
    }

    /// A `hops`-hop gold path from `topic` through stored edges, visiting no entity twice (the
    /// first edge that does not), with its question.
    fn gold(&self, topic: usize, hops: usize) -> (String, GoldPath) {
        let mut at = topic;
        let mut seen = vec![topic];
        let mut path = Vec::new();
        for _ in 0..hops {
            let &(r, t) = self.out[at].iter().find(|(_, t)| !seen.contains(t)).expect("a fresh tail");
            path.push((RELATIONS[r].to_string(), self.label(t)));
            seen.push(t);
            at = t;
        }
        let mut q = self.label(topic);
        for (r, _) in &path {
            q = format!("the {} of {q}", r.replace('_', " "));
        }
        let question = format!("what is {q} ?");
        let answers = vec![path.last().expect("hops").1.clone()];
        (question, GoldPath { topic: self.label(topic), hops: path, answers })
    }
}

/// Sets the peak RSS (VmHWM) to the RSS now; says whether the kernel allowed it.
fn reset_hwm() -> bool {
    std::fs::write("/proc/self/clear_refs", "5").is_ok()
}

/// A `/proc/self/status` field in KiB (`VmHWM`, `VmRSS`).
fn status_kib(field: &str) -> Option<u64> {
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    let line = status.lines().find(|l| l.strip_prefix(field).is_some_and(|r| r.starts_with(':')))?;
    line.split_whitespace().nth(1)?.parse().ok()
}

fn kib(bytes: usize) -> String {
    format!("{:.1} KiB", bytes as f64 / 1024.0)
}

fn mib(bytes: usize) -> String {
    format!("{:.2} MiB", bytes as f64 / (1024.0 * 1024.0))
}

struct Case {
    name: &'static str,
    question: String,
    settings: Settings,
}

/// Set in the child process that measures one case (its index).
const CASE_VAR: &str = "ONGRAPH_MEMORY_CASE";
/// The child's table row starts with this.
const ROW: &str = "ROW ";

/// Each case runs in a child process of its own (this program again, with `CASE_VAR`), so its
/// peak RSS is its own; the parent prints their reports and one table.
fn main() {
    if let Some(case) = std::env::var(CASE_VAR).ok().and_then(|c| c.parse().ok()) {
        measure(case);
        return;
    }
    let exe = std::env::current_exe().expect("this program's path");
    let mut rows = Vec::new();
    for case in 0..3 {
        let out = std::process::Command::new(&exe).env(CASE_VAR, case.to_string()).output().expect("a child runs");
        assert!(out.status.success(), "case {case} failed: {}", String::from_utf8_lossy(&out.stderr));
        for line in String::from_utf8_lossy(&out.stdout).lines() {
            match line.strip_prefix(ROW) {
                Some(row) => rows.push(row.to_string()),
                // The graph and the questions once, from the first child.
                None if case > 0 && (line.starts_with("graph: ") || line.contains(" question (")) => {}
                None => println!("{line}"),
            }
        }
    }
    println!();
    println!(
        "| run | trace events | shape | peak heap | held after | growth/step (mean) | last step | trace copy | peak RSS (before run) |"
    );
    println!("|---|---|---|---|---|---|---|---|---|");
    for row in rows {
        println!("{row}");
    }
}

/// Runs case `index` and prints its report and its table row.
fn measure(index: usize) {
    let g = generate();
    let (graph_bytes, triples) = (g.graph.heap_bytes(), g.graph.triple_count());
    let topic = 0;
    let (gog_q, gog_gold) = g.gold(topic, 6);
    let (tog_q, tog_gold) = g.gold(topic, 3);
    let model = Arc::new(GoldPathModel::new([(gog_q.clone(), gog_gold), (tog_q.clone(), tog_gold)]));
    let prompts = Arc::new(ongraph::engine::builtin_prompts());
    let rt = tokio::runtime::Builder::new_current_thread().build().expect("runtime");
    let Generated { graph, ids, .. } = g;
    let kg: Arc<dyn KnowledgeGraph> = Arc::new(graph);
    let label = |e: usize| ids[e].replace('_', " ");
    println!(
        "graph: {} entities, {triples} triples, {} heap; seed 7, {RELATIONS_EACH} relations of {TAILS_EACH} tails an entity",
        ids.len(),
        mib(graph_bytes)
    );
    println!("6-hop question (GoG): {gog_q}");
    println!("3-hop question (PoG, ToG): {tog_q}");

    let case = match index {
        0 => Case {
            name: "GoG, 6 steps",
            question: gog_q,
            settings: Settings {
                method: MethodId::GOG,
                gog: GogSettings { gog_steps: 6, ..GogSettings::default() },
                ..Settings::default()
            },
        },
        1 => Case {
            name: "PoG, depth 3",
            question: tog_q,
            settings: Settings { method: MethodId::POG, depth: 3, ..Settings::default() },
        },
        _ => Case {
            name: "ToG, depth 3",
            question: tog_q,
            settings: Settings { method: MethodId::TOG, depth: 3, width: 3, ..Settings::default() },
        },
    };
    let topics = Topics::Linked(vec![(ids[topic].clone(), Some(label(topic)))]);
    let rss_before = status_kib("VmRSS");
    let hwm_reset = reset_hwm();
    let base = live();
    reset_peak();
    let allocations = ALLOCATIONS.load(Relaxed);
    let mut run = Run::new(&case.question, topics, case.settings.clone(), prompts, kg.profile().clone(), kg.name())
        .expect("run starts");
    let mut after = vec![live() - base];
    loop {
        // A driver per step, dropped before the heap is read: its memo would hold replies.
        let stepped = {
            let driver = Driver::new(kg.clone(), model.clone());
            rt.block_on(driver.step(&mut run)).expect("the simulation answers every prompt")
        };
        if stepped.is_none() {
            break;
        }
        after.push(live() - base);
    }
    let peak = PEAK.load(Relaxed) - base;
    let allocations = ALLOCATIONS.load(Relaxed) - allocations;
    let held = live() - base;
    let hwm = status_kib("VmHWM");
    let steps = after.len() - 1;
    let mean = (after[steps] - after[0]) / steps;
    let last = after[steps].saturating_sub(after[steps - 1]);
    // What one deep copy of the trace takes: what a snapshot that copied it copied at the end.
    let before_copy = live();
    let copy = run.trace().to_vec();
    let trace_bytes = live() - before_copy;
    drop(copy);
    // And of the beam and the answer, which every snapshot's context copies.
    let before_copy = live();
    let copy = (run.beam().clone(), run.answer().cloned());
    let beam_answer_bytes = live() - before_copy;
    drop(copy);

    let trace = run.trace();
    let max_depth = trace.iter().map(|e| e.depth).max().unwrap_or(0);
    let answer = run.answer().expect("answered");
    println!();
    println!("== {}", case.name);
    println!(
        "trace events {}, deepest event depth {max_depth}, LLM calls {}, KG lookups {}; answer {:?} ({:?})",
        trace.len(),
        run.costs().llm_calls,
        run.costs().kg_lookups,
        answer.answers,
        answer.source
    );
    let shape = match case.settings.method {
        // What the method's pane shows of it: GoG's steps, PoG's report.
        MethodId::GOG => {
            let view = run.view();
            let actions: Vec<&str> = view.items.iter().map(|i| i.row.as_str()).collect();
            println!("GoG steps {}: {}", actions.len(), actions.join(" / "));
            format!("{} T/A/O steps", actions.len())
        }
        MethodId::POG => {
            let report: Vec<String> = run.view().report.iter().map(|l| format!("{}{}", l.label, l.text)).collect();
            println!("PoG {}", report.join(" | "));
            report.iter().find(|l| l.contains("subgraph")).cloned().unwrap_or_else(|| "no subgraph".into())
        }
        _ => format!("beam {} nodes", run.beam().nodes.len()),
    };
    let rss = match (hwm, rss_before) {
        (Some(peak), Some(before)) if hwm_reset => {
            format!("{:.1} MiB ({:.1})", peak as f64 / 1024.0, before as f64 / 1024.0)
        }
        (Some(peak), Some(before)) => {
            format!("{:.1} MiB ({:.1}; not reset)", peak as f64 / 1024.0, before as f64 / 1024.0)
        }
        _ => "n/a".into(),
    };
    println!(
        "Run::new {}, peak heap {}, held after {}, per step mean {} / last {}, trace copy {}, beam and answer copy {}, {allocations} allocations, peak RSS {rss}",
        kib(after[0]),
        mib(peak),
        mib(held),
        kib(mean),
        kib(last),
        kib(trace_bytes),
        kib(beam_answer_bytes),
    );
    println!("live heap after each step (KiB): {:?}", after.iter().map(|b| b / 1024).collect::<Vec<_>>());
    println!(
        "{ROW}| {} | {} | {shape} | {} | {} | {} | {} | {} | {rss} |",
        case.name,
        trace.len(),
        mib(peak),
        mib(held),
        kib(mean),
        kib(last),
        kib(trace_bytes),
    );
}
