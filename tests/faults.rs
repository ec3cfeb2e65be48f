//! The standing adversary: the real binary, every method, against a loopback fault server that
//! damages a seeded share of replies (HTTP faults and reply texts, see `common/faults.rs`) in
//! front of the gold-path simulation on real PathQuestion records. Every run must end — within a
//! bound, never by a panic — with an answer or one clear error line, print no control character
//! and no secret, and note every parser fallback in its trace.
//!
//! `ONGRAPH_FAULT_RUNS=N` sets the runs per method (default 36: 288 in all); the counts printed
//! (`-- --nocapture`) are the figures in docs/RELIABILITY.md.

mod common;

use common::faults::{Fault, FaultServer, Plan};
use common::ongraph_cmd;
use ongraph::llm::{ChatRequest, LanguageModel, LlmError};
use ongraph::testing::dataset::{gold_paths, pathquestion};
use ongraph::testing::llm::{GoldPathModel, OpenAiClient, OpenAiConfig};
use std::io::Read;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

const METHODS: &[&str] = &["tog", "tog-r", "pog", "pog-e", "gog", "io", "cot", "sc"];
const SECRET: &str = "sk-fault-8c1f0e7d-NEVER-PRINT";
/// Far beyond what a run needs (seconds, even with every wait the faults cause): past it, a hang.
const HANG: Duration = Duration::from_secs(90);

fn fixtures() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/pathquestion")
}

struct Outcome {
    code: Option<i32>,
    hung: bool,
    stdout: String,
    stderr: String,
    /// The child's peak resident memory (VmHWM), in MB, as last read before it ended.
    peak_mb: u64,
}

/// A process's peak resident memory so far, in MB (0 once it is gone).
fn peak_mb(pid: u32) -> u64 {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap_or_default();
    let kb = status.lines().find_map(|l| l.strip_prefix("VmHWM:")).and_then(|v| v.split_whitespace().next());
    kb.and_then(|k| k.parse::<u64>().ok()).unwrap_or(0) / 1024
}

/// Runs `cmd` to its end or kills it at `limit`.
fn run_bounded(mut cmd: Command, limit: Duration) -> Outcome {
    let mut child = cmd.stdin(Stdio::null()).stdout(Stdio::piped()).stderr(Stdio::piped()).spawn().unwrap();
    // Read both pipes while waiting, so a large output cannot block the child.
    let mut out = child.stdout.take().unwrap();
    let mut err = child.stderr.take().unwrap();
    let out_reader = std::thread::spawn(move || {
        let mut s = Vec::new();
        let _ = out.read_to_end(&mut s);
        s
    });
    let err_reader = std::thread::spawn(move || {
        let mut s = Vec::new();
        let _ = err.read_to_end(&mut s);
        s
    });
    let started = Instant::now();
    let mut peak = 0;
    let (status, hung) = loop {
        peak = peak.max(peak_mb(child.id()));
        if let Some(status) = child.try_wait().unwrap() {
            break (Some(status), false);
        }
        if started.elapsed() > limit {
            let _ = child.kill();
            let _ = child.wait();
            break (None, true);
        }
        std::thread::sleep(Duration::from_millis(20));
    };
    let text = |b: Vec<u8>| String::from_utf8_lossy(&b).into_owned();
    Outcome {
        code: status.and_then(|s| s.code()),
        hung,
        stdout: text(out_reader.join().unwrap()),
        stderr: text(err_reader.join().unwrap()),
        peak_mb: peak,
    }
}

/// A control character a terminal would act on (newline and tab aside), or one that turns text
/// around or breaks a line where a terminal shows none (bidi controls, line separators).
fn has_control(text: &str) -> bool {
    text.chars().any(|c| {
        (c.is_control() && c != '\n' && c != '\t')
            || matches!(c, '\u{202a}'..='\u{202e}' | '\u{2066}'..='\u{2069}' | '\u{200e}' | '\u{200f}' | '\u{61c}')
            || matches!(c, '\u{2028}' | '\u{2029}')
    })
}

#[derive(Default)]
struct Tally {
    runs: AtomicUsize,
    answered: AtomicUsize,
    unanswered: AtomicUsize,
    clear_errors: AtomicUsize,
    failures: Mutex<Vec<String>>,
}

#[test]
#[allow(clippy::print_stdout)] // the counts are its report (cargo shows them with --nocapture)
fn seeded_faults_never_panic_hang_leak_or_go_unnoted() {
    let per_method: usize = std::env::var("ONGRAPH_FAULT_RUNS").ok().and_then(|v| v.parse().ok()).unwrap_or(36);
    let items = pathquestion::load(&fixtures().join("PQ-2H.txt")).unwrap();
    let model = Arc::new(GoldPathModel::new(gold_paths(&items)));
    let runtime = tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build().unwrap();
    let jobs: Vec<(usize, usize)> =
        (0..per_method).flat_map(|seed| (0..METHODS.len()).map(move |m| (seed, m))).collect();
    let next = AtomicUsize::new(0);
    let tally = Tally::default();
    let served: Mutex<Vec<(Fault, u64)>> = Mutex::new(Fault::ALL.iter().map(|f| (*f, 0)).collect());
    let requests = AtomicUsize::new(0);
    let started = Instant::now();
    std::thread::scope(|scope| {
        for _ in 0..2 {
            scope.spawn(|| {
                while let Some(&(seed, m)) = jobs.get(next.fetch_add(1, Ordering::Relaxed)) {
                    let (method, plan) = (METHODS[m], Plan::Mutate { seed: (seed * 100 + m) as u64, rate: 0.35 });
                    let server = runtime.block_on(FaultServer::start(model.clone(), plan));
                    let question = &items[seed % items.len()].question;
                    check_run(&server, seed, method, question, &tally);
                    let mut total = served.lock().unwrap();
                    for ((_, n), (_, m)) in total.iter_mut().zip(server.counts().by_fault()) {
                        *n += m;
                    }
                    requests.fetch_add(server.counts().requests() as usize, Ordering::Relaxed);
                }
            });
        }
    });
    let served = served.into_inner().unwrap();
    let faults: Vec<String> =
        served.iter().filter(|(f, _)| *f != Fault::None).map(|(f, n)| format!("{f:?} {n}")).collect();
    let failures = tally.failures.into_inner().unwrap();
    println!(
        "fault runs: {} runs ({} methods × {per_method}) in {:.0} s; {} answered, {} without an answer, {} clear errors; {} failures \
         (panics, hangs, unclear errors, control characters, secrets, unnoted fallbacks)\n\
         requests: {} ({} untouched); faults served: {}",
        tally.runs.load(Ordering::Relaxed),
        METHODS.len(),
        started.elapsed().as_secs_f64(),
        tally.answered.load(Ordering::Relaxed),
        tally.unanswered.load(Ordering::Relaxed),
        tally.clear_errors.load(Ordering::Relaxed),
        failures.len(),
        requests.load(Ordering::Relaxed),
        served[0].1,
        faults.join(", "),
    );
    assert!(failures.is_empty(), "{} of the runs failed:\n{}", failures.len(), failures.join("\n"));
    // The run measured something: most faults were served, and most runs still ended normally.
    assert!(served.iter().filter(|(_, n)| *n > 0).count() >= Fault::ALL.len() - 2, "{served:?}");
    let ended = tally.answered.load(Ordering::Relaxed) + tally.unanswered.load(Ordering::Relaxed);
    assert!(ended * 2 > tally.runs.load(Ordering::Relaxed), "most runs end with or without an answer");
}

fn check_run(server: &FaultServer, seed: usize, method: &str, question: &str, tally: &Tally) {
    let home = tempfile::tempdir().unwrap();
    // Half the runs ask for structured replies (the server ignores the schema: every reply is
    // then read as free text, with a note), half ask for free text.
    let structured = if seed % 4 < 2 { "auto" } else { "off" };
    let config = home.path().join("config.toml");
    std::fs::write(
        &config,
        format!(
            "[llm.fault]\nbase_url = \"{}\"\nmodel = \"fault\"\napi_key_env = \"ONGRAPH_FAULT_KEY\"\n\
             timeout_secs = 1\nmax_retries = 1\nbackoff_ms = 10\nmax_retry_after_secs = 1\nstructured = \"{structured}\"\n",
            server.base_url()
        ),
    )
    .unwrap();
    let log = home.path().join("ongraph.log");
    let kg = fixtures().join("2H-kb.txt");
    let json = seed.is_multiple_of(2);
    let (config, log, kg) = (config.display().to_string(), log.display().to_string(), kg.display().to_string());
    let seed_text = seed.to_string();
    let mut args = vec![
        "--config",
        &config,
        "--log",
        &log,
        "ask",
        "--kg",
        &kg,
        "--llm",
        "fault",
        "--method",
        method,
        "--seed",
        &seed_text,
        "--samples",
        "3",
        "--no-overlay",
    ];
    if json {
        args.push("--json");
    }
    args.push(question);
    let mut cmd = ongraph_cmd(home.path(), &args);
    cmd.env("ONGRAPH_FAULT_KEY", SECRET);
    let outcome = run_bounded(cmd, HANG);
    tally.runs.fetch_add(1, Ordering::Relaxed);
    let log_text = std::fs::read_to_string(&log).unwrap_or_default();
    // `ONGRAPH_FAULT_KEEP=DIR` keeps every run's output there, to read a failure.
    if let Some(dir) = std::env::var_os("ONGRAPH_FAULT_KEEP") {
        let name = Path::new(&dir).join(format!("{seed}-{method}"));
        let _ = std::fs::create_dir_all(&dir);
        let _ = std::fs::write(name.with_extension("out"), &outcome.stdout);
        let _ = std::fs::write(name.with_extension("err"), &outcome.stderr);
    }
    let mut problems = Vec::new();
    if outcome.hung {
        problems.push(format!("no end after {} s", HANG.as_secs()));
    }
    match outcome.code {
        Some(0) => {
            tally.answered.fetch_add(1, Ordering::Relaxed);
        }
        // The run ended without an answer (the model gave none).
        Some(3) => {
            tally.unanswered.fetch_add(1, Ordering::Relaxed);
        }
        Some(1) => {
            tally.clear_errors.fetch_add(1, Ordering::Relaxed);
            let lines: Vec<&str> = outcome.stderr.lines().collect();
            if lines.len() != 1 || !lines[0].starts_with("error: ") {
                problems.push(format!("an error that is not one `error:` line: {:?}", outcome.stderr));
            }
        }
        other if !outcome.hung => problems.push(format!("exit {other:?}")),
        _ => {}
    }
    // The engine notes a fallback its step forgot to note, and logs it: that is a defect here.
    if log_text.contains("a fallback without a note") {
        problems.push("a step fell back without its own note (the engine's generic note stood in)".into());
    }
    if outcome.stderr.contains("panicked") {
        problems.push("a panic".into());
    }
    for (place, text) in [("stdout", &outcome.stdout), ("stderr", &outcome.stderr), ("the log", &log_text)] {
        if text.contains(SECRET) || text.contains(&SECRET[..16]) {
            problems.push(format!("the API key in {place}"));
        }
    }
    // --json too: its strings carry C1 and bidi controls as \u escapes.
    if [&outcome.stdout, &outcome.stderr].iter().any(|t| has_control(t)) {
        problems.push("a control character printed to the terminal".into());
    }
    if json && matches!(outcome.code, Some(0 | 3)) {
        match serde_json::from_str::<serde_json::Value>(&outcome.stdout) {
            Ok(trace) => {
                for event in trace["trace"].as_array().into_iter().flatten() {
                    let fell_back = event["calls"].as_array().into_iter().flatten().any(|c| c["fell_back"] == true);
                    let noted = event["notes"].as_array().is_some_and(|n| !n.is_empty());
                    if fell_back && !noted {
                        problems.push(format!("a fallback without a note in event {}", event["index"]));
                    }
                }
            }
            Err(e) => problems.push(format!("--json printed no JSON: {e}")),
        }
    }
    if !problems.is_empty() {
        let tail: String = outcome.stderr.chars().rev().take(300).collect::<Vec<_>>().into_iter().rev().collect();
        tally.failures.lock().unwrap().push(format!(
            "seed {seed} {method} ({structured}{}): {} — stderr: {tail}",
            if json { ", json" } else { "" },
            problems.join("; ")
        ));
    }
}

fn client(server: &FaultServer) -> OpenAiClient {
    let mut c = OpenAiConfig::new(server.base_url(), "fault");
    c.timeout = Duration::from_secs(1);
    c.max_retries = 1;
    c.backoff = Duration::from_millis(10);
    OpenAiClient::new(c).unwrap()
}

fn gold_request() -> ChatRequest {
    let items = pathquestion::load(&fixtures().join("PQ-2H.txt")).unwrap();
    ChatRequest {
        step: "answer_own_knowledge".into(),
        system: String::new(),
        prompt: ongraph::engine::builtin_prompts()
            .render(ongraph::engine::Registry::builtin().template("io").unwrap(), &[("question", &items[0].question)]),
        temperature: 0.0,
        max_tokens: 64,
        sample: 0,
        schema: None,
        extract: None,
    }
}

fn gold_model() -> Arc<GoldPathModel> {
    Arc::new(GoldPathModel::new(gold_paths(&pathquestion::load(&fixtures().join("PQ-2H.txt")).unwrap())))
}

#[tokio::test]
async fn a_reply_that_stalls_stops_short_or_is_no_completion_is_asked_again() {
    for fault in [Fault::Stall, Fault::ShortBody, Fault::Hangup, Fault::Html, Fault::ServerError] {
        let server = FaultServer::start(gold_model(), Plan::Once(fault)).await;
        let got = client(&server).complete(&gold_request()).await;
        assert!(got.is_ok(), "{fault:?}: {got:?}");
        assert_eq!(server.counts().requests(), 2, "{fault:?}: one retry");
    }
    // Stalling every time: a timeout, as an error that says so.
    let server = FaultServer::start(gold_model(), Plan::Always(Fault::Stall)).await;
    let got = client(&server).complete(&gold_request()).await;
    assert!(matches!(got, Err(LlmError::Timeout { .. })), "{got:?}");
}

#[tokio::test]
async fn token_counts_that_are_not_counts_are_estimated_with_a_note() {
    // Each request draws afresh among negative, huge, non-numeric and null counts.
    let server = FaultServer::start(gold_model(), Plan::Always(Fault::BadUsage)).await;
    let client = client(&server);
    for _ in 0..8 {
        let got = client.complete(&gold_request()).await.unwrap();
        assert!(got.usage.prompt_tokens > 10 && got.usage.prompt_tokens < 10_000, "{:?}", got.usage);
        assert!(got.notes.iter().any(|n| n.contains("token counts")), "{:?}", got.notes);
    }
}

/// The SPARQL side: `ask` against each hostile reply of the fault endpoint
/// (`common/sparql_faults.rs`), human and `--json`. Each run ends within its time limit with
/// one error line naming the limit it met, in bounded memory (an endless reply reached 17.8 GB).
#[test]
fn hostile_sparql_replies_end_in_one_error_in_bounded_time_and_memory() {
    use common::sparql_faults::{SparqlFault, SparqlFaultServer};
    let server = SparqlFaultServer::start();
    let home = tempfile::tempdir().unwrap();
    let h = home.path();
    let mut toml = String::new();
    let entry = |name: &str, fault: SparqlFault, extra: &str| {
        format!(
            "[kg.{name}]\nendpoint = \"{}\"\nprofile = \"freebase\"\ntimeout_secs = 3\n{extra}\n",
            server.url(fault)
        )
    };
    for fault in SparqlFault::ALL {
        toml.push_str(&entry(fault.path(), fault, "max_reply_mb = 4"));
    }
    toml.push_str(&entry("manyrows", SparqlFault::Many, "max_reply_mb = 100"));
    let config = h.join("config.toml");
    std::fs::write(&config, toml).unwrap();
    let config = config.to_str().unwrap();
    for (kg, expected) in [
        ("endless", "max_reply_mb in [kg.endless]"),
        ("big", "max_reply_mb in [kg.big]"),
        ("bigundeclared", "max_reply_mb in [kg.bigundeclared]"),
        ("many", "max_reply_mb in [kg.many]"),
        ("manyrows", "max_bindings in [kg.manyrows]"),
        ("drip", "no complete answer within 3 s (1 attempt) (timeout_secs in [kg.drip]"),
    ] {
        for json in [false, true] {
            let mut args = vec!["--config", config, "ask", "Who is Lou Seal?", "--kg", kg, "--topic", "m.lou_seal"];
            if json {
                args.push("--json");
            }
            let started = Instant::now();
            let outcome = run_bounded(ongraph_cmd(h, &args), HANG);
            let what = format!("{kg}{}", if json { " --json" } else { "" });
            assert!(!outcome.hung && started.elapsed() < Duration::from_secs(10), "{what}: {:?}", started.elapsed());
            assert_eq!(outcome.code, Some(1), "{what}: {}", outcome.stderr);
            assert_eq!(outcome.stderr.lines().count(), 1, "{what}: {}", outcome.stderr);
            assert!(
                outcome.stderr.starts_with("error: ") && outcome.stderr.contains(expected),
                "{what}: {}",
                outcome.stderr
            );
            assert!(
                !has_control(&outcome.stderr) && !outcome.stderr.contains("panicked"),
                "{what}: {}",
                outcome.stderr
            );
            assert!(outcome.peak_mb < 400, "{what}: {} MB", outcome.peak_mb);
        }
    }
}
