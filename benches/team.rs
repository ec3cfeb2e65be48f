//! Team-shared corrections (issue 26) against a real Oxigraph server on loopback: the time to
//! pull a set of 10,000 records into an empty store (`fix sync --full` on a new machine), and
//! the per-step overhead of the terminal UI's team check (send the empty queue, pull nothing
//! new, see the store unchanged) with those 10,000 records on the server and in the store.
//! Needs the Oxigraph binary (`bash scripts/install-sparql-servers`).
//!
//! `cargo bench --bench team` (`ONGRAPH_BENCH_LOG=1` also prints each pull's log line: where its
//! time went, listing, reading and storing).
#![allow(clippy::print_stdout, clippy::print_stderr)] // a bench prints its figures

#[path = "../tests/common/servers.rs"]
mod servers;

use ongraph::kg::Term;
use ongraph::testing::config::Config;
use ongraph::testing::kg::{SparqlClient, SparqlConfig};
use ongraph::testing::overlay::{CorrectionStore, Op, SledStore};
use ongraph::testing::team::{Kind, Record, Team, new_iri, now_millis};
use ongraph::testing::tui::{Corrections, StoreCorrections};
use std::sync::Arc;
use std::time::{Duration, Instant};

const GRAPH: &str = "http://example.org/ongraph/corrections/bench";
const RECORDS: usize = 10_000;
/// Records per update when the server is filled (not what is measured).
const PER_UPDATE: usize = 500;
const STEPS: usize = 200;

fn record(i: usize) -> Record {
    Record {
        iri: new_iri(),
        kind: Kind::Correction {
            op: Op::Assert {
                subject: format!("m.e{i}"),
                relation: "common.topic.alias".into(),
                object: Term::Literal(format!("alias {i}")),
            },
        },
        kg: "demo".into(),
        author: format!("author {}", i % 7),
        created: now_millis(),
        reason: format!("bench record {i}"),
        context: None,
        generated: false,
        based_on: None,
        agent: Some(format!("agent-{}", i % 7)),
    }
}

fn config(store: &std::path::Path, server: &servers::OxigraphRw, graph: &str) -> Config {
    let text = format!(
        "[defaults]\nauthor = \"bench\"\nshared = \"team\"\noverlay = \"{}\"\n\n[shared.team]\nquery_endpoint = \"{}\"\n\
         update_endpoint = \"{}\"\ngraph = \"{graph}\"\n",
        store.display(),
        server.query,
        server.update
    );
    Config::parse("bench.toml", &text).expect("bench config")
}

fn stats(mut ms: Vec<f64>) -> String {
    ms.sort_by(f64::total_cmp);
    let median = ms[ms.len() / 2];
    let p95 = ms[ms.len() * 95 / 100];
    format!("median {median:.2} ms, p95 {p95:.2} ms, max {:.2} ms", ms[ms.len() - 1])
}

/// Fills `graph` with 10,000 records: published one a minute over the last week (`spread`: a
/// team's pace, so the pull's ten-minute overlap holds a few), or all in the same second (the
/// worst case: every record is in the overlap, and listed again at every pull).
fn fill(runtime: &tokio::runtime::Runtime, server: &servers::OxigraphRw, graph: &str, spread: bool) {
    let update = SparqlClient::new(SparqlConfig::new(&server.update)).expect("client");
    let now = std::time::SystemTime::now();
    let filled = Instant::now();
    for chunk in (0..RECORDS).collect::<Vec<_>>().chunks(PER_UPDATE) {
        let text: Vec<String> = chunk
            .iter()
            .map(|&i| {
                let ago = if spread { Duration::from_secs(60 * (RECORDS - i) as u64) } else { Duration::ZERO };
                let published = humantime::format_rfc3339_millis(now - ago).to_string();
                record(i).insert_data(graph, &published).expect("a record")
            })
            .collect();
        runtime.block_on(update.update(&text.join(" ;\n"))).expect("the server takes them");
    }
    println!("  (filled in {:.1} s, not measured)", filled.elapsed().as_secs_f64());
}

fn measure(runtime: &tokio::runtime::Runtime, server: &servers::OxigraphRw, spread: bool) {
    let graph = format!("{GRAPH}/{}", if spread { "spread" } else { "burst" });
    let dir = tempfile::tempdir().expect("temp dir");
    let config = config(&dir.path().join("overlay"), server, &graph);
    let team = Team::open("team", &config.shared["team"]).expect("team");
    if spread {
        println!("{RECORDS} records published one a minute over the last week:");
    } else {
        println!("{RECORDS} records published at once (all within the pull's overlap, the worst case):");
    }
    fill(runtime, server, &graph, spread);

    // The full pull into an empty store, three times (a fresh store each time).
    let mut pulls = Vec::new();
    for round in 0..3 {
        let path = dir.path().join(format!("pull-{round}"));
        let open = || SledStore::open(&path);
        let started = Instant::now();
        let new = runtime.block_on(team.pull(&open, true)).expect("pulled").new;
        pulls.push(started.elapsed().as_secs_f64() * 1000.0);
        assert_eq!(new, RECORDS);
        assert_eq!(open().expect("store").list("demo").expect("listed").len(), RECORDS);
    }
    println!("  full pull into an empty store: {} (3 runs)", stats(pulls));

    // The UI's per-step check, as the UI makes it, with the 10,000 records here and there.
    let corrections = StoreCorrections::new(
        Arc::new(ongraph::testing::kg::demo_graph()),
        Arc::new(ongraph::testing::llm::ScriptedModel::demo().expect("demo script")),
        &config,
        &Default::default(),
        None,
        config.defaults.concurrency,
    )
    .expect("corrections");
    let _inside = runtime.enter();
    let first = Instant::now();
    assert!(corrections.sync().is_none(), "the server answers");
    corrections.refresh().expect("read");
    println!("  the UI's first step (pulls all, reads them): {:.0} ms", first.elapsed().as_secs_f64() * 1000.0);
    let mut sync_ms = Vec::new();
    let mut refresh_ms = Vec::new();
    for _ in 0..STEPS {
        let started = Instant::now();
        assert!(corrections.sync().is_none());
        let synced = started.elapsed();
        assert!(corrections.refresh().expect("read").is_none(), "nothing new");
        sync_ms.push(synced.as_secs_f64() * 1000.0);
        refresh_ms.push((started.elapsed() - synced).as_secs_f64() * 1000.0);
        std::thread::sleep(Duration::from_millis(2));
    }
    let total: Vec<f64> = sync_ms.iter().zip(&refresh_ms).map(|(a, b)| a + b).collect();
    println!("  per-step team check, {STEPS} steps, nothing new: {}", stats(total));
    println!("    of which the sync (nothing to send; the pull: one COUNT of the overlap): {}", stats(sync_ms));
    println!("    of which the store's generation check: {}", stats(refresh_ms));
    let open = Instant::now();
    let store = SledStore::open(&dir.path().join("overlay")).expect("store");
    println!("  (opening the store of {RECORDS} corrections: {:.1} ms)", open.elapsed().as_secs_f64() * 1000.0);
    assert_eq!(store.list("demo").expect("listed").len(), RECORDS);
}

fn main() {
    // The pull's own log line says where its time went (listing, reading, storing).
    if std::env::var_os("ONGRAPH_BENCH_LOG").is_some() {
        tracing_subscriber::fmt().with_env_filter("ongraph=info").with_writer(std::io::stderr).init();
    }
    let runtime = tokio::runtime::Runtime::new().expect("runtime");
    let server = servers::OxigraphRw::start();
    println!("Oxigraph at {} on loopback", server.query);
    measure(&runtime, &server, true);
    measure(&runtime, &server, false);
}
