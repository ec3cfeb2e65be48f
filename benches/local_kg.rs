//! Local KG benchmark: load a generated 1,000,000-triple file (TSV and N-Triples), report load
//! time, peak RSS and bytes per triple, then neighbour-lookup latency percentiles.
//!
//! `cargo bench --bench local_kg` (each load runs in a child process so its peak RSS is its own).
#![allow(clippy::print_stdout, clippy::print_stderr)] // a bench prints its figures

use ongraph::kg::{KgProfile, KnowledgeGraph, RelationRef};
use ongraph::testing::kg::load_file;
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use std::io::{BufWriter, Write};
use std::path::Path;
use std::time::Instant;

const TRIPLES: usize = 1_000_000;
const ENTITIES: usize = 200_000;
const RELATIONS: usize = 400;

fn main() {
    let args: Vec<String> = std::env::args().collect();
    if let Some(i) = args.iter().position(|a| a == "--child") {
        child(Path::new(&args[i + 1]));
        return;
    }
    let dir = std::env::temp_dir().join("ongraph-bench-kg");
    std::fs::create_dir_all(&dir).expect("temp dir");
    let (tsv, nt) = (dir.join("graph.tsv"), dir.join("graph.nt"));
    generate(&tsv, &nt);
    println!("generated {TRIPLES} triples ({ENTITIES} entities, {RELATIONS} relations, names for every entity)");
    for file in [&tsv, &nt] {
        let out = std::process::Command::new(std::env::current_exe().expect("own path"))
            .args(["--child", file.to_str().expect("utf-8 path")])
            .output()
            .expect("child runs");
        print!("{}", String::from_utf8_lossy(&out.stdout));
        eprint!("{}", String::from_utf8_lossy(&out.stderr));
    }
}

/// A power-law-ish graph: a few hub entities get many edges, as in real KGs.
fn generate(tsv: &Path, nt: &Path) {
    let mut rng = ChaCha8Rng::seed_from_u64(42);
    let mut t = BufWriter::new(std::fs::File::create(tsv).expect("create"));
    let mut n = BufWriter::new(std::fs::File::create(nt).expect("create"));
    let pick = |rng: &mut ChaCha8Rng| {
        let u: f64 = rng.random();
        ((u * u * u) * ENTITIES as f64) as usize
    };
    for e in 0..ENTITIES {
        writeln!(t, "m.{e:x}\ttype.object.name\t\"Entity number {e}\"").expect("write");
        writeln!(n, "<http://rdf.freebase.com/ns/m.{e:x}> <http://rdf.freebase.com/ns/type.object.name> \"Entity number {e}\"@en .")
            .expect("write");
    }
    for _ in ENTITIES..TRIPLES {
        let (h, r, o) = (pick(&mut rng), rng.random_range(0..RELATIONS), rng.random_range(0..ENTITIES));
        writeln!(t, "m.{h:x}\tdomain{}.type.rel{r}\tm.{o:x}", r % 40).expect("write");
        writeln!(
            n,
            "<http://rdf.freebase.com/ns/m.{h:x}> <http://rdf.freebase.com/ns/domain{}.type.rel{r}> <http://rdf.freebase.com/ns/m.{o:x}> .",
            r % 40
        )
        .expect("write");
    }
}

fn status_kib(field: &str) -> u64 {
    let status = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
    status
        .lines()
        .find(|l| l.starts_with(field))
        .and_then(|l| l.split_whitespace().nth(1))
        .and_then(|v| v.parse().ok())
        .unwrap_or(0)
}

fn child(path: &Path) {
    let before = status_kib("VmRSS:");
    let started = Instant::now();
    let (graph, report) = load_file(path, KgProfile::freebase(), false).expect("load");
    let load = started.elapsed();
    let peak = status_kib("VmHWM:");
    let after = status_kib("VmRSS:");
    let name = path.file_name().and_then(|n| n.to_str()).unwrap_or("?");
    println!(
        "{name}: {} triples loaded in {:.2} s; peak RSS {:.0} MiB ({:.0} B/triple over the start), resident after load {:.0} B/triple, index+strings {:.0} B/triple",
        report.triples,
        load.as_secs_f64(),
        peak as f64 / 1024.0,
        (peak - before) as f64 * 1024.0 / report.triples as f64,
        (after - before) as f64 * 1024.0 / report.triples as f64,
        graph.heap_bytes() as f64 / report.triples as f64,
    );
    lookups(&graph, name);
}

fn lookups(graph: &ongraph::testing::kg::LocalGraph, name: &str) {
    let prefix = if name.ends_with(".nt") { "http://rdf.freebase.com/ns/" } else { "" };
    let mut rng = ChaCha8Rng::seed_from_u64(7);
    // Pairs that exist: an entity and one of its relations.
    let mut pairs: Vec<(String, RelationRef)> = Vec::new();
    while pairs.len() < 20_000 {
        let e = format!("{prefix}m.{:x}", rng.random_range(0..ENTITIES));
        let rels = futures::executor::block_on(graph.relations(&e)).expect("relations");
        if !rels.is_empty() {
            let r = rels[rng.random_range(0..rels.len())].clone();
            pairs.push((e, r));
        }
    }
    let mut times: Vec<u128> = Vec::with_capacity(pairs.len() * 5);
    let mut found = 0usize;
    for _ in 0..5 {
        for (e, r) in &pairs {
            let t = Instant::now();
            let n = futures::executor::block_on(graph.neighbours(e, r)).expect("neighbours");
            times.push(t.elapsed().as_nanos());
            found += n.len();
        }
    }
    times.sort_unstable();
    let p = |q: f64| times[((times.len() - 1) as f64 * q) as usize] as f64 / 1000.0;
    println!(
        "{name}: neighbour lookup (with labels) over {} calls: p50 {:.2} µs, p99 {:.2} µs, max {:.1} µs ({:.1} neighbours/call)",
        times.len(),
        p(0.5),
        p(0.99),
        p(1.0),
        found as f64 / times.len() as f64
    );
}
