//! Correction overlay: neighbour-lookup overhead with 10,000 corrections vs none, on a local
//! graph of 1,000,000 triples; and the latency of one durable correction write (flush included).
//!
//! `cargo bench --bench overlay`
#![allow(clippy::print_stdout, clippy::print_stderr)] // a bench prints its figures

use ongraph::kg::{KgProfile, KnowledgeGraph, RelationRef, Term};
use ongraph::testing::kg::GraphBuilder;
use ongraph::testing::overlay::{Correction, CorrectionStore, Draft, Op, OverlayKg, SledStore};
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use std::sync::Arc;
use std::time::Instant;

const ENTITIES: usize = 200_000;
const EDGES: usize = 800_000;

fn correction(id: u64, op: Op) -> Correction {
    Correction {
        id,
        kg: "bench".into(),
        op,
        reason: "bench".into(),
        generated: None,
        author: "bench".into(),
        created: String::new(),
        active: true,
        context: None,
        history: Vec::new(),
        team: None,
    }
}

fn percentile(sorted: &[u128], q: f64) -> f64 {
    sorted[((sorted.len() - 1) as f64 * q) as usize] as f64 / 1000.0
}

fn main() {
    let mut rng = ChaCha8Rng::seed_from_u64(42);
    let mut b = GraphBuilder::new();
    let mut edges = Vec::with_capacity(EDGES);
    for e in 0..ENTITIES {
        b.add(&format!("m.{e:x}"), "type.object.name", &Term::Literal(format!("Entity {e}")));
    }
    for _ in 0..EDGES {
        let (h, r, o) = (rng.random_range(0..ENTITIES), rng.random_range(0..400), rng.random_range(0..ENTITIES));
        let (h, r, o) = (format!("m.{h:x}"), format!("d{}.t.r{r}", r % 40), format!("m.{o:x}"));
        b.add(&h, &r, &Term::Entity(o.clone()));
        edges.push((h, r, o));
    }
    let graph: Arc<dyn KnowledgeGraph> = Arc::new(b.finish("bench", KgProfile::freebase()));

    // 10,000 corrections touching the graph: retractions of real edges, assertions, relabels.
    let mut corrections = Vec::new();
    for i in 0..10_000u64 {
        let (h, r, o) = &edges[rng.random_range(0..edges.len())];
        let op = match i % 3 {
            0 => Op::Retract { subject: h.clone(), relation: r.clone(), object: Term::Entity(o.clone()) },
            1 => Op::Assert { subject: h.clone(), relation: r.clone(), object: Term::Entity(format!("m.new{i}")) },
            _ => Op::Relabel { entity: o.clone(), label: format!("Renamed {i}") },
        };
        corrections.push(correction(i + 1, op));
    }
    let overlay: Arc<dyn KnowledgeGraph> = Arc::new(OverlayKg::new(graph.clone(), &corrections));

    // The same 50,000 lookups of existing (entity, relation) pairs, plain and through the overlay,
    // interleaved in rounds so drift on the machine hits both alike.
    let pairs: Vec<(String, RelationRef)> = (0..50_000)
        .map(|_| edges[rng.random_range(0..edges.len())].clone())
        .map(|(h, r, _)| (h, RelationRef::out(r)))
        .collect();
    let (mut plain, mut through) = (Vec::new(), Vec::new());
    for _ in 0..3 {
        for (kg, times) in [(&graph, &mut plain), (&overlay, &mut through)] {
            for (e, r) in &pairs {
                let t = Instant::now();
                let n = futures::executor::block_on(kg.neighbours(e, r)).expect("lookup");
                times.push(t.elapsed().as_nanos());
                std::hint::black_box(n);
            }
        }
    }
    plain.sort_unstable();
    through.sort_unstable();
    let mean = |v: &[u128]| v.iter().sum::<u128>() as f64 / v.len() as f64 / 1000.0;
    println!(
        "neighbour lookup, 1M-triple local graph: no overlay p50 {:.2} µs, mean {:.2} µs; with 10,000 corrections p50 {:.2} µs, mean {:.2} µs: {:.2}× (p50), {:.2}× (mean)",
        percentile(&plain, 0.5),
        mean(&plain),
        percentile(&through, 0.5),
        mean(&through),
        percentile(&through, 0.5) / percentile(&plain, 0.5),
        mean(&through) / mean(&plain)
    );

    // Durable writes: each add returns only after sled's flush (fsync) and the ack file's fsync.
    let dir = tempfile::tempdir().expect("temp dir");
    let store = SledStore::open(&dir.path().join("overlay")).expect("store");
    let mut times = Vec::new();
    for i in 0..2_000 {
        let draft = Draft {
            op: Op::Relabel { entity: format!("m.{i:x}"), label: format!("Name {i}") },
            reason: "bench".into(),
            generated: false,
            author: "bench".into(),
            context: None,
            origin: None,
        };
        let t = Instant::now();
        store.add("bench", draft).expect("write");
        times.push(t.elapsed().as_nanos());
    }
    times.sort_unstable();
    println!(
        "correction write incl. flush, 2,000 writes ({}): p50 {:.0} µs, p99 {:.0} µs, max {:.0} µs",
        dir.path().display(),
        percentile(&times, 0.5),
        percentile(&times, 0.99),
        percentile(&times, 1.0)
    );
}
