//! ongraph against a real model: llama.cpp's OpenAI-compatible server (llama-cpp-python) with
//! SmolLM2-135M-Instruct, started on a loopback port and stopped by PID. Every method runs the
//! demo's Canberra question through the real binary, HTTP client and parsers, with structured
//! replies on and off. A 135M model answers badly; what must hold is that nothing breaks: exit 0
//! (answered) or 3 (no answer), never 1 or a panic, a well-formed trace with every call recorded
//! with its mode, and, with structured replies, no parse fallback on the steps that decide.
//! A missing server or model fails with the command that installs them, never skips.

mod common;

use serde_json::Value;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

const CANBERRA: &str = "What is the majority party now in the country where Canberra is located?";
const PHANATIC: &str = "Which ballpark hosts spring training for the team whose mascot is the Phillie Phanatic?";

/// The tests here take turns: each starts a llama.cpp server, and three evaluating at once on
/// two cores had calls time out.
static ONE_SERVER_AT_A_TIME: std::sync::Mutex<()> = std::sync::Mutex::new(());

/// This test's turn with the machine (a test that failed before lets go all the same).
fn turn() -> std::sync::MutexGuard<'static, ()> {
    ONE_SERVER_AT_A_TIME.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
}

/// The llama.cpp server, stopped (by PID) when dropped.
struct LlamaServer {
    base_url: String,
    child: Child,
}

impl Drop for LlamaServer {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn installed(path: &str) -> PathBuf {
    let p = Path::new(env!("CARGO_MANIFEST_DIR")).join(path);
    assert!(
        p.exists(),
        "{} is missing: run `bash scripts/install-test-llm` (llama-cpp-python[server] into target/llm-venv, \
         SmolLM2-135M-Instruct into target/test-models)",
        p.display()
    );
    p
}

impl LlamaServer {
    fn start() -> Self {
        Self::start_logging(None)
    }

    /// Started with its log (where it says how many prompt tokens each call evaluated) in
    /// `log`.
    fn start_logging(log: Option<&Path>) -> Self {
        Self::start_with(log, &[])
    }

    /// Started with more of the server's options (`extra`).
    fn start_with(log: Option<&Path>, extra: &[&str]) -> Self {
        let python = installed("target/llm-venv/bin/python");
        let model = installed("target/test-models/SmolLM2-135M-Instruct.Q4_1.gguf");
        let port = std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port();
        let child = Command::new(python)
            .args(["-m", "llama_cpp.server", "--model"])
            .arg(model)
            .args(["--host", "127.0.0.1", "--port", &port.to_string(), "--n_ctx", "4096", "--seed", "1"])
            .args(extra)
            .stdout(Stdio::null())
            .stderr(log.map_or_else(Stdio::null, |path| std::fs::File::create(path).unwrap().into()))
            .spawn()
            .expect("the llama.cpp server starts");
        let server = Self { base_url: format!("http://127.0.0.1:{port}/v1"), child };
        server.wait_ready(port);
        server
    }

    /// Ready once `/v1/models` answers (the model is loaded before the server listens).
    fn wait_ready(&self, port: u16) {
        use std::io::{Read, Write};
        let started = Instant::now();
        while started.elapsed() < Duration::from_secs(120) {
            if let Ok(mut s) = std::net::TcpStream::connect(("127.0.0.1", port)) {
                let _ = s.write_all(b"GET /v1/models HTTP/1.0\r\nHost: 127.0.0.1\r\n\r\n");
                let mut reply = String::new();
                let _ = s.read_to_string(&mut reply);
                if reply.starts_with("HTTP/1.1 200") || reply.starts_with("HTTP/1.0 200") {
                    return;
                }
            }
            std::thread::sleep(Duration::from_millis(250));
        }
        panic!("the llama.cpp server did not come up within 120 s");
    }
}

/// The steps that reason before they answer, and IO's own-knowledge answer: with structured
/// replies they are asked as free text, and only a reply that cannot be read so has its answer
/// extracted by a second call.
const REASONS_FIRST: &[&str] = &["answer", "answer_own_knowledge", "io", "cot", "gog_step"];

/// The steps whose replies decide the run: with structured replies none may need a fallback
/// (the others are read as JSON).
const DECISIVE: &[&str] = &[
    "relation_prune",
    "entity_prune",
    "reasoning",
    "answer",
    "answer_own_knowledge",
    "io",
    "cot",
    "pog_sufficiency",
    "pog_answer",
    "pog_answer_own",
];

#[test]
fn every_method_runs_on_a_real_small_model_without_breaking() {
    let _turn = turn();
    let server = LlamaServer::start();
    let home = tempfile::tempdir().unwrap();
    let config = home.path().join("config.toml");
    std::fs::write(
        &config,
        format!(
            "[llm.smol]\nbase_url = \"{}\"\nmodel = \"smollm2\"\ntimeout_secs = 300\nmax_retries = 1\n",
            server.base_url
        ),
    )
    .unwrap();
    let mut calls_seen = [0; 2];
    for (m, structured) in ["auto", "off"].into_iter().enumerate() {
        for method in ["tog", "tog-r", "pog", "gog", "io", "cot"] {
            let what = format!("{method} (structured {structured})");
            let out = common::ongraph_cmd(
                home.path(),
                &[
                    "--config",
                    config.to_str().unwrap(),
                    "ask",
                    CANBERRA,
                    "--llm",
                    "smol",
                    "--method",
                    method,
                    "--depth",
                    "2",
                    "--structured",
                    structured,
                    "--json",
                ],
            )
            .output()
            .expect("the binary runs");
            let stderr = String::from_utf8_lossy(&out.stderr);
            let code = out.status.code();
            assert!(matches!(code, Some(0) | Some(3)), "{what}: exit {code:?}: {stderr}");
            assert!(!stderr.contains("panicked"), "{what}: {stderr}");
            let json: Value = serde_json::from_slice(&out.stdout).unwrap_or_else(|e| panic!("{what}: not JSON ({e})"));
            let trace = json["trace"].as_array().unwrap_or_else(|| panic!("{what}: no trace"));
            assert!(!trace.is_empty(), "{what}: empty trace");
            for event in trace {
                for call in event["calls"].as_array().into_iter().flatten() {
                    calls_seen[m] += 1;
                    let step = call["step"].as_str().unwrap_or_default();
                    assert!(!step.is_empty(), "{what}: {call}");
                    assert!(call["prompt"].as_str().is_some_and(|p| !p.is_empty()), "{what}: {call}");
                    assert!(call["reply"].is_string() && call["parsed"].is_string(), "{what}: {call}");
                    // Real usage from the server: the prompt is never free.
                    assert!(call["usage"]["prompt_tokens"].as_u64().is_some_and(|n| n > 0), "{what}: {call}");
                    if structured == "auto" && REASONS_FIRST.contains(&step) {
                        let extracted = call["read"] == "extracted";
                        assert!(
                            call.get("read").is_none() || (extracted && call["mode"] == "json_object"),
                            "{what}: {call}"
                        );
                        if DECISIVE.contains(&step) {
                            assert_ne!(call["fell_back"], true, "{what}: a fallback on {step}: {call}");
                        }
                    } else if structured == "auto" {
                        // llama-cpp-python's server takes `json_object` with a schema (after
                        // refusing `json_schema` once), and the grammar holds the reply to it.
                        assert_eq!(call["mode"], "json_object", "{what}: {call}");
                        if DECISIVE.contains(&step) {
                            assert_eq!(call["read"], "json", "{what}: a parse fallback on {step}: {call}");
                        }
                        if step == "reasoning" {
                            // The judgment's shape round-trips: a reason, then an answer among
                            // what the shown triples reach (or unknown), and the verdict read
                            // from it.
                            let reply: Value = serde_json::from_str(call["reply"].as_str().unwrap_or_default())
                                .unwrap_or_else(|e| panic!("{what}: the judgment is not JSON ({e}): {call}"));
                            assert!(reply["reason"].is_string(), "{what}: {call}");
                            let answers = reply["answer"].as_array().unwrap_or_else(|| panic!("{what}: {call}"));
                            assert!(!answers.is_empty(), "{what}: {call}");
                            let parsed = call["parsed"].as_str().unwrap_or_default();
                            match parsed.strip_prefix("Yes: answered ") {
                                // Every answer taken is one the reply named ("A | B" for several).
                                Some(named) => assert!(
                                    named.split(" | ").all(|n| answers.iter().any(|a| a == n)),
                                    "{what}: {call}"
                                ),
                                None => assert_eq!(parsed, "No: no answer the shown triples reach", "{what}: {call}"),
                            }
                        }
                    } else {
                        assert!(call.get("mode").is_none() && call.get("read").is_none(), "{what}: {call}");
                    }
                }
            }
            if code == Some(0) {
                assert!(json["answer"]["answers"].as_array().is_some_and(|a| !a.is_empty()), "{what}: {json}");
            }
        }
    }
    assert!(calls_seen.iter().all(|&n| n >= 8), "{calls_seen:?} calls over six methods, each mode");

    // Asked for people (no --json), by a user who never asked this endpoint (a fresh state
    // directory): how the server had to be asked is said beside the answer (llama-cpp-python
    // refuses `json_schema`; `json_object` follows), and remembered: the next run is not
    // refused again (found by a trial: every `ask` paid the refusal and said it).
    let fresh = tempfile::tempdir().unwrap();
    let ask = || {
        let args =
            ["--config", config.to_str().unwrap(), "ask", CANBERRA, "--llm", "smol", "--method", "tog", "--depth", "1"];
        let out = common::ongraph_cmd(fresh.path(), &args).output().expect("the binary runs");
        let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
        assert!(matches!(out.status.code(), Some(0) | Some(3)), "{stdout}{}", String::from_utf8_lossy(&out.stderr));
        stdout
    };
    let stdout = ask();
    let said: Vec<&str> = stdout.lines().filter(|l| l.starts_with("Endpoint: ")).collect();
    assert_eq!(
        said,
        ["Endpoint: the endpoint refused structured replies as json_schema (HTTP 500); asked again as json_object, \
             remembered for later runs (structured = \"json_object\" in the endpoint's [llm] entry asks so at once)"],
        "{stdout}"
    );
    let again = ask();
    assert!(!again.contains("Endpoint: "), "asked as json_object at once: {again}");
}

/// Whether the server still answers (its process alive and `/v1/models` 200).
fn alive(server: &mut LlamaServer) -> bool {
    use std::io::{Read, Write};
    if !matches!(server.child.try_wait(), Ok(None)) {
        return false;
    }
    let port = server.base_url.trim_end_matches("/v1").rsplit(':').next().and_then(|p| p.parse::<u16>().ok());
    let Some(Ok(mut s)) = port.map(|p| std::net::TcpStream::connect(("127.0.0.1", p))) else { return false };
    let _ = s.write_all(b"GET /v1/models HTTP/1.0\r\nHost: 127.0.0.1\r\n\r\n");
    let mut reply = String::new();
    let _ = s.read_to_string(&mut reply);
    reply.starts_with("HTTP/1.1 200") || reply.starts_with("HTTP/1.0 200")
}

/// Issue 34: names with quotes, backslashes, braces, a newline, a control character, non-ASCII
/// and 300 characters (tests/data/hostile-names.nt) in every structured prompt that offers
/// names. llama-cpp-python 0.3.36 compiles a schema's enum into a grammar: a `"` in one killed
/// the server, a `\` came back as JSON no parser reads. The server must stay up after every
/// run, every constrained reply must be read as JSON, and an answer read as a KG name.
#[test]
fn names_that_break_naive_grammars_never_break_the_server() {
    let _turn = turn();
    let mut server = LlamaServer::start();
    let home = tempfile::tempdir().unwrap();
    let config = home.path().join("config.toml");
    // Up to 1,024 tokens a reply (below): minutes on two busy cores, not a hang.
    std::fs::write(
        &config,
        format!(
            "[llm.smol]\nbase_url = \"{}\"\nmodel = \"smollm2\"\ntimeout_secs = 300\nmax_retries = 0\n",
            server.base_url
        ),
    )
    .unwrap();
    let kg = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/hostile-names.nt");
    let text = std::fs::read_to_string(&kg).unwrap();
    let names: Vec<String> = text
        .lines()
        .filter(|l| l.contains("type.object.name"))
        .filter_map(|l| {
            let literal = l.split_once("> \"")?.1.rsplit_once("\"@en")?.0;
            serde_json::from_str::<String>(&format!("\"{literal}\"")).ok()
        })
        .collect();
    assert_eq!(names.len(), 9, "{names:?}");
    let mut hostile_calls = 0;
    for method in ["tog", "tog-r", "pog", "gog"] {
        let out = common::ongraph_cmd(
            home.path(),
            &[
                "--config",
                config.to_str().unwrap(),
                "ask",
                "What does Quoteville contain?",
                "--kg",
                kg.to_str().unwrap(),
                "--topic",
                "Quoteville",
                "--llm",
                "smol",
                "--method",
                method,
                "--depth",
                "1",
                "--structured",
                "auto",
                // Scores for nine names, one of 300 characters, take more than the default 256.
                "--max-tokens",
                "1024",
                "--json",
            ],
        )
        .output()
        .expect("the binary runs");
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(alive(&mut server), "{method}: the llama.cpp server died: {stderr}");
        assert!(matches!(out.status.code(), Some(0) | Some(3)), "{method}: exit {:?}: {stderr}", out.status.code());
        let json: Value = serde_json::from_slice(&out.stdout).unwrap_or_else(|e| panic!("{method}: not JSON ({e})"));
        for call in
            json["trace"].as_array().into_iter().flatten().flat_map(|e| e["calls"].as_array().into_iter().flatten())
        {
            let step = call["step"].as_str().unwrap_or_default();
            let prompt = call["prompt"].as_str().unwrap_or_default();
            if call["mode"] != "json_object" || REASONS_FIRST.contains(&step) {
                continue;
            }
            // Constrained by a grammar: the reply is JSON the reader took as such, unless the
            // model spent every token it may (a 135M model repeats a 300-character name).
            let cut = call["usage"]["completion_tokens"].as_u64().is_some_and(|n| n >= 1024);
            assert!(call["read"] == "json" || cut, "{method}: {step} not read as JSON: {call}");
            if prompt.contains("David \"Buck\" Wheat") || prompt.contains("back\\slash") {
                hostile_calls += 1;
            }
        }
        // An answer taken from the graph is one of its names, exactly.
        if json["answer"]["source"] == "kg_paths" {
            for answer in json["answer"]["answers"].as_array().into_iter().flatten() {
                let answer = answer.as_str().unwrap_or_default();
                assert!(names.iter().any(|n| n == answer), "{method}: {answer:?} is not a KG name");
            }
        }
    }
    assert!(hostile_calls >= 3, "only {hostile_calls} constrained calls offered the hostile names");
}

/// The prompt tokens each call evaluated, as the server's log says ("prompt eval time = … /
/// N tokens"), after the first `skip` lines of the kind.
fn evaluated(log: &Path, skip: usize) -> Vec<u64> {
    let text = std::fs::read_to_string(log).unwrap_or_default();
    text.lines()
        .filter(|l| l.contains("prompt eval time ="))
        .filter_map(|l| l.split(" / ").nth(1)?.split_whitespace().next()?.parse().ok())
        .skip(skip)
        .collect()
}

/// The server options the README gives for llama-cpp-python's cache of many prompt prefixes.
const RAM_CACHE: &[&str] = &["--cache", "true", "--logits_all", "false", "--cache_size", "150000000"];

/// A config in `home` naming `server` as `smol`, asked for JSON as llama-cpp-python takes it.
fn smol_json_config(home: &Path, server: &LlamaServer) -> PathBuf {
    let config = home.join("config.toml");
    std::fs::write(
        &config,
        format!(
            "[llm.smol]\nbase_url = \"{}\"\nmodel = \"smollm2\"\ntimeout_secs = 300\nmax_retries = 0\nstructured = \"json_object\"\n",
            server.base_url
        ),
    )
    .unwrap();
    config
}

/// `ongraph ask QUESTION` with ToG at depth 2 on `smol`, structured, and `extra`: its `--json`.
fn ask_tog(home: &Path, config: &Path, question: &str, extra: &[&str]) -> Value {
    let mut args = vec!["--config", config.to_str().unwrap(), "ask", question, "--llm", "smol", "--method", "tog"];
    args.extend(["--depth", "2", "--structured", "auto", "--json"]);
    args.extend(extra);
    let out = common::ongraph_cmd(home, &args).output().expect("the binary runs");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(matches!(out.status.code(), Some(0) | Some(3)), "{extra:?}: exit {:?}: {stderr}", out.status.code());
    serde_json::from_slice(&out.stdout).unwrap_or_else(|e| panic!("{extra:?}: not JSON ({e})"))
}

/// The calls a run's `--json` says were made (not answered from the memo).
fn made_calls(json: &Value) -> Vec<&Value> {
    json["trace"]
        .as_array()
        .into_iter()
        .flatten()
        .flat_map(|e| e["calls"].as_array().into_iter().flatten())
        .filter(|c| c["cached"] != true)
        .collect()
}

/// Issue 34 part 4: with llama-cpp-python's RAM cache (the README's options), each kind of
/// call's instructions and examples are evaluated once a server, though ToG's calls alternate
/// kinds: the default per-call layout then has much of what it sends served from the cache.
#[test]
fn the_ram_cache_serves_each_kind_of_calls_fixed_part_once() {
    // The options the README's command gives are the ones this test runs.
    let readme = include_str!("../README.md");
    let command = readme.lines().find(|l| l.starts_with("python -m llama_cpp.server")).expect("the README's command");
    assert!(command.ends_with(&RAM_CACHE.join(" ")), "{command}");
    let _turn = turn();
    let home = tempfile::tempdir().unwrap();
    let log = home.path().join("server.log");
    let server = LlamaServer::start_with(Some(&log), RAM_CACHE);
    let config = smol_json_config(home.path(), &server);
    let mut sent = 0;
    // Two questions, so the second finds the first's kinds of call cached.
    for question in [CANBERRA, PHANATIC] {
        let json = ask_tog(home.path(), &config, question, &[]);
        let calls = made_calls(&json);
        assert!(calls.len() >= 3, "{} calls", calls.len());
        sent += calls.iter().filter_map(|c| c["usage"]["prompt_tokens"].as_u64()).sum::<u64>();
    }
    let evaluated: u64 = evaluated(&log, 0).iter().sum();
    let hits = std::fs::read_to_string(&log).unwrap_or_default().matches("cache hit").count();
    assert!(hits >= 3, "{hits} cache hits");
    // The default server evaluates most of what the per-call layout sends (931 of 969 tokens
    // in the shared-prefix test's per-call run): here a quarter or more is served from the cache.
    assert!(evaluated * 4 < sent * 3, "{evaluated} of {sent} prompt tokens evaluated");
}

/// Issue 34: under `--prompt-layout shared-prefix` every call of a run opens with the same
/// system message, and the real server (llama-cpp-python, which keeps only the previous
/// prompt's prefix) evaluates it once: over a run, under half the prompt tokens sent, where the
/// per-call layout has most of each prompt evaluated again.
#[test]
fn the_real_server_evaluates_a_shared_prefix_once() {
    let _turn = turn();
    let home = tempfile::tempdir().unwrap();
    let log = home.path().join("server.log");
    let server = LlamaServer::start_logging(Some(&log));
    let config = smol_json_config(home.path(), &server);
    let mut ratios = Vec::new();
    for layout in ["per-call", "shared-prefix"] {
        let before = evaluated(&log, 0).len();
        let json = ask_tog(home.path(), &config, CANBERRA, &["--prompt-layout", layout]);
        let calls = made_calls(&json);
        let sent: u64 = calls.iter().filter_map(|c| c["usage"]["prompt_tokens"].as_u64()).sum();
        let evaluated: u64 = evaluated(&log, before).iter().sum();
        assert!(calls.len() >= 3, "{layout}: {} calls", calls.len());
        for call in &calls {
            let prompt = call["prompt"].as_str().unwrap_or_default();
            assert_eq!(prompt.starts_with("Task: "), layout == "shared-prefix", "{layout}: {prompt}");
            assert_eq!(call["read"], "json", "{layout}: {call}");
        }
        // What --json says was sent as the system message is what was shared.
        let system = json["system_prompt"].as_str().unwrap_or_default();
        assert_eq!(system.contains("Task: relation_prune\n"), layout == "shared-prefix", "{layout}: {system}");
        ratios.push((layout, evaluated, sent, evaluated as f64 / sent as f64));
    }
    let [(_, _, _, per_call), (_, _, _, shared)] = ratios[..] else { unreachable!() };
    assert!(shared < 0.5 && shared + 0.2 < per_call, "evaluated / sent: {ratios:?}");
}

/// Each request carries a seed drawn from its content, so the real server answers the same
/// question's calls the same way whatever it was asked before: its own seed moves on with every
/// call (and a cached prefix would restore an older one), which made re-asks and A/B arms differ
/// by chance. Asked, then another question, then asked again: the same calls, the same replies.
#[test]
fn the_same_question_gets_the_same_replies_whatever_was_asked_before() {
    let _turn = turn();
    let home = tempfile::tempdir().unwrap();
    let server = LlamaServer::start();
    let config = smol_json_config(home.path(), &server);
    let exchanges = |json: &Value| -> Vec<(String, String, f64)> {
        made_calls(json)
            .iter()
            .map(|c| {
                let text = |k: &str| c[k].as_str().unwrap_or_default().to_string();
                (text("prompt"), text("reply"), c["temperature"].as_f64().unwrap_or(-1.0))
            })
            .collect()
    };
    let first = exchanges(&ask_tog(home.path(), &config, CANBERRA, &[]));
    let between = exchanges(&ask_tog(home.path(), &config, PHANATIC, &[]));
    let again = exchanges(&ask_tog(home.path(), &config, CANBERRA, &[]));
    assert!(!between.is_empty());
    // Sampled calls are among them, where the server's own seed would have had its say.
    assert!(first.len() >= 3 && first.iter().any(|(_, _, t)| *t > 0.0), "{first:?}");
    assert_eq!(first, again);
}
