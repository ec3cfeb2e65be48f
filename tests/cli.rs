//! The `ongraph` binary as a user runs it: answers, exit codes and one-line errors.

mod common;

use std::path::Path;
use std::process::Output;
use wiremock::matchers::method;
use wiremock::{Mock, MockServer, ResponseTemplate};

const CANBERRA: &str = "What is the majority party now in the country where Canberra is located?";

fn ongraph(home: &Path, args: &[&str]) -> Output {
    common::ongraph_cmd(home, args).output().expect("the binary runs")
}

fn stdout(o: &Output) -> String {
    String::from_utf8_lossy(&o.stdout).into_owned()
}
fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

/// A failure: exit 1, exactly one line on stderr containing `needle`, no panic.
fn assert_one_line_error(o: &Output, needle: &str) {
    let err = stderr(o);
    assert_eq!(o.status.code(), Some(1), "stderr: {err}");
    assert_eq!(err.lines().count(), 1, "one line expected: {err}");
    assert!(err.starts_with("error: ") && err.contains(needle), "{needle:?} not in: {err}");
    assert!(!err.contains("panicked"));
}

#[test]
fn the_demo_answers_offline() {
    let home = tempfile::tempdir().unwrap();
    let out = ongraph(home.path(), &["ask", CANBERRA]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let text: String = stdout(&out).lines().filter(|l| !l.starts_with("Time: ")).map(|l| format!("{l}\n")).collect();
    insta::assert_snapshot!("ask_canberra_human", text);
    // The supporting paths are listed best path score first; then, headed, the routes merged
    // into their entities' slots, best first too.
    let (on_beam, routes) = text
        .split_once("  Other routes to entities on these paths (merged into them):\n")
        .unwrap_or_else(|| panic!("{text}"));
    let scores = |part: &str| -> Vec<f64> {
        part.lines().filter_map(|l| l.split_once(". [")?.1.split_once(']')?.0.parse().ok()).collect()
    };
    for part in [on_beam, routes] {
        let scores = scores(part);
        assert!(scores.len() >= 2 && scores.windows(2).all(|w| w[0] >= w[1]), "{text}");
    }
    assert!(stdout(&out).contains("\nTime: "));
    // The log went to the state directory, not to the terminal.
    let log = std::fs::read_to_string(home.path().join("state/ongraph/ongraph.log")).unwrap();
    assert!(log.contains("step"), "{log}");

    let out = ongraph(
        home.path(),
        &["ask", "Which ballpark hosts spring training for the team whose mascot is the Phillie Phanatic?"],
    );
    assert!(
        stdout(&out).starts_with("Answer: Bright House Field\nSource: from knowledge-graph paths\n"),
        "{}",
        stdout(&out)
    );
}

/// The demo model forgives wording: case, punctuation and spacing, and the ToG paper's own
/// phrasing of the Phanatic question. Off its script it says so in one line, names its
/// questions and points to a real model, instead of printing a prompt's tail.
#[test]
fn the_demo_forgives_wording_and_says_what_it_knows() {
    let home = tempfile::tempdir().unwrap();
    for (question, answer) in [
        ("what is the majority party now in the country where Canberra is located", "Australian Labor Party"),
        ("  WHAT is the majority party now, in the country where Canberra is located ??", "Australian Labor Party"),
        ("What is mascot Phillie Phanatic's team's spring training stadium?", "Bright House Field"),
    ] {
        let out = ongraph(home.path(), &["ask", question]);
        assert_eq!(out.status.code(), Some(0), "{question}: {}", stderr(&out));
        assert!(stdout(&out).starts_with(&format!("Answer: {answer}\n")), "{question}: {}", stdout(&out));
    }
    let out = ongraph(home.path(), &["ask", "Who is the CEO of Apple?"]);
    assert_one_line_error(&out, "the offline demo model knows only its recorded steps");
    let err = stderr(&out);
    assert!(err.contains(CANBERRA) && err.contains("Pointing it at a real model"), "{err}");
    assert!(!err.contains("Knowledge Triplets") && !err.contains("Topic Entity"), "no prompt tail: {err}");
}

#[test]
fn json_output_is_the_full_trace() {
    let home = tempfile::tempdir().unwrap();
    let out = ongraph(home.path(), &["ask", CANBERRA, "--topic", "Canberra", "--json"]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let v: serde_json::Value = serde_json::from_str(&stdout(&out)).unwrap();
    assert_eq!(v["answer"]["answers"][0], "Australian Labor Party");
    assert_eq!(v["answer"]["source"], "kg_paths");
    assert_eq!(v["trace"][0]["phase"], "topic_linking");
    let calls: u64 =
        v["trace"].as_array().unwrap().iter().map(|e| e["calls"].as_array().map_or(0, |c| c.len() as u64)).sum();
    assert_eq!(calls, v["costs"]["llm_calls"].as_u64().unwrap() + v["costs"]["llm_calls_saved"].as_u64().unwrap());
    assert!(v["beam"]["nodes"].as_array().unwrap().len() > 20);
    // The answer's fields are what they were (no `why` for an answer from the paths).
    let keys: Vec<&str> = v["answer"].as_object().unwrap().keys().map(String::as_str).collect();
    assert_eq!(keys, ["answers", "source", "reply", "paths"]);
}

#[test]
fn unknown_topic_suggests_the_closest_labels() {
    let home = tempfile::tempdir().unwrap();
    let out = ongraph(home.path(), &["ask", "Where is it?", "--topic", "Canbera"]);
    assert_one_line_error(&out, "unknown topic entity \"Canbera\"; closest labels: Canberra, ");
}

#[test]
fn bad_inputs_are_one_line_errors() {
    let home = tempfile::tempdir().unwrap();
    let dir = home.path();
    assert_one_line_error(&ongraph(dir, &["ask", "   "]), "the question is empty");

    std::fs::write(dir.join("bad.tsv"), "a\tr\tb\nb\tr\tc\nthis line is broken\n").unwrap();
    let bad = dir.join("bad.tsv");
    let out = ongraph(dir, &["ask", "q?", "--topic", "a", "--kg", bad.to_str().unwrap()]);
    assert_one_line_error(&out, &format!("{}:3: expected 3 tab-separated fields", bad.display()));

    assert_one_line_error(
        &ongraph(dir, &["ask", "q?", "--kg", "/nonexistent/kb.tsv"]),
        "no knowledge graph \"/nonexistent/kb.tsv\"",
    );

    std::fs::create_dir(dir.join("prompts")).unwrap();
    std::fs::write(dir.join("prompts/relation_prune.txt"), "Q: {{question}} {{topic}}\n").unwrap();
    let prompts = dir.join("prompts");
    let out = ongraph(dir, &["ask", CANBERRA, "--prompts", prompts.to_str().unwrap()]);
    assert_one_line_error(&out, "relation_prune.txt:1: unknown placeholder {{topic}}");

    std::fs::write(dir.join("config.toml"), "[defaults]\nwidht = 3\n").unwrap();
    let config = dir.join("config.toml");
    let out = ongraph(dir, &["--config", config.to_str().unwrap(), "ask", CANBERRA]);
    assert_one_line_error(&out, "config.toml:2: unknown field `widht`");

    assert_one_line_error(&ongraph(dir, &["ask", "q?", "--llm", "nope"]), "no LLM named \"nope\"");
    // A name the user did not type says where it came from, and how to define one (found by a
    // trial).
    let out = ongraph(dir, &["ask", "q?", "--llm", "local"]);
    assert_one_line_error(&out, "no LLM named \"local\" (known: demo, scripted:FILE); an [llm.local] entry in ");
    std::fs::write(dir.join("named.toml"), "[defaults]\nkg = \"pq3\"\n").unwrap();
    let named = dir.join("named.toml");
    let out = ongraph(dir, &["--config", named.to_str().unwrap(), "ask", "q?"]);
    assert_one_line_error(&out, &format!("no knowledge graph \"pq3\" (from [defaults] kg in {})", named.display()));
    let out = common::ongraph_cmd(dir, &["ask", "q?"]).env("ONGRAPH_KG", "pq22").output().unwrap();
    assert_one_line_error(&out, "no knowledge graph \"pq22\" (from ONGRAPH_KG)");
    std::fs::write(
        dir.join("zero.toml"),
        "[llm.x]\nbase_url = \"http://127.0.0.1:9/v1\"\nmodel = \"m\"\ntimeout_secs = 0\n",
    )
    .unwrap();
    let zero = dir.join("zero.toml");
    let out = ongraph(dir, &["--config", zero.to_str().unwrap(), "ask", CANBERRA, "--llm", "x"]);
    assert_one_line_error(&out, "LLM \"x\": timeout_secs must be at least 1");
    assert_one_line_error(&ongraph(dir, &["ask", "q?", "--width", "0"]), "--width and --depth must be at least 1");

    // The methods as the papers write them are the methods (the UI's palette reads any case).
    let out = ongraph(dir, &["ask", "--method", "ToG-R", CANBERRA]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert!(stdout(&out).starts_with("Answer: Australian Labor Party"), "{}", stdout(&out));
    let out = ongraph(dir, &["ask", "--method", "PoG", CANBERRA, "--json"]);
    let json: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(json["settings"]["method"], "pog", "{json}");

    // A mistyped dataset path is said as such, not as a file name that tells no format.
    assert_one_line_error(
        &ongraph(dir, &["eval", "--dataset", "/nonexistent/questions.json", "--llm", "gold-path"]),
        "cannot read the dataset /nonexistent/questions.json: no such file",
    );

    // A search that finds nothing says so (it printed nothing and exited 0).
    assert_one_line_error(
        &ongraph(dir, &["kg", "search", "zzzzqqq"]),
        "demo has no entity named like \"zzzzqqq\" (--no-overlay searches the names before corrections)",
    );
    assert_one_line_error(
        &ongraph(dir, &["kg", "search", "zzzzqqq", "--no-overlay"]),
        "demo has no entity named like \"zzzzqqq\"",
    );
}

#[test]
fn lenient_loading_counts_skipped_lines() {
    let home = tempfile::tempdir().unwrap();
    let dir = home.path();
    std::fs::write(dir.join("kb.txt"), "alice\tspouse\tbob\nbroken\nbob\tplace_of_birth\tparis\n").unwrap();
    std::fs::write(
        dir.join("script.toml"),
        r#"
[[reply]]
step = "relation_prune"
contains = ["Topic Entity: alice\nRelations: spouse\n"]
text = "{spouse (Score: 1.0)}"

[[reply]]
step = "reasoning"
contains = ["alice, spouse, bob"]
text = "{Yes}. The answer is {bob}."
"#,
    )
    .unwrap();
    let kb = dir.join("kb.txt");
    let script = format!("scripted:{}", dir.join("script.toml").display());
    let out = ongraph(
        dir,
        &[
            "ask",
            "who is alice 's spouse ?",
            "--topic",
            "alice",
            "--kg",
            kb.to_str().unwrap(),
            "--lenient",
            "--llm",
            &script,
        ],
    );
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let text = stdout(&out);
    assert!(text.starts_with("Skipped 1 malformed KG line(s), e.g. "), "{text}");
    assert!(text.contains("kb.txt:2:"), "{text}");
    assert!(text.contains("Answer: bob\n"), "{text}");
}

fn dead_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port()
}

fn endpoint_config(dir: &Path, base_url: &str) -> std::path::PathBuf {
    let path = dir.join("llm.toml");
    std::fs::write(
        &path,
        format!("[defaults]\nllm = \"remote\"\n[llm.remote]\nbase_url = \"{base_url}\"\nmodel = \"m\"\nmax_retries = 0\ntimeout_secs = 5\n"),
    )
    .unwrap();
    path
}

#[test]
fn unreachable_llm_endpoint() {
    let home = tempfile::tempdir().unwrap();
    let config = endpoint_config(home.path(), &format!("http://127.0.0.1:{}/v1", dead_port()));
    let out = ongraph(home.path(), &["--config", config.to_str().unwrap(), "ask", CANBERRA, "--topic", "Canberra"]);
    assert_one_line_error(&out, "cannot reach the LLM endpoint");
}

#[test]
fn a_base_url_with_credentials_is_refused_without_being_shown() {
    // A newcomer pasting `https://user:key@host/v1` or `…/v1?key=…` must not see the secret
    // in the error (nor find it in the log): the endpoint is refused before any call.
    let home = tempfile::tempdir().unwrap();
    let port = dead_port();
    for url in [format!("http://ada:s3cret@127.0.0.1:{port}/v1"), format!("http://127.0.0.1:{port}/v1?key=s3cret")] {
        let config = endpoint_config(home.path(), &url);
        let out = ongraph(home.path(), &["--config", config.to_str().unwrap(), "ask", CANBERRA, "--topic", "Canberra"]);
        assert_one_line_error(&out, "base_url has credentials or a query string in it");
        assert!(!stderr(&out).contains("s3cret"), "{}", stderr(&out));
        let log = std::fs::read_to_string(home.path().join("state/ongraph/ongraph.log")).unwrap_or_default();
        assert!(!log.contains("s3cret"), "{log}");
    }
}

#[test]
fn llm_endpoint_failures_are_one_line_errors() {
    let rt = tokio::runtime::Runtime::new().unwrap();
    for (status, body, needle) in [
        (401, "", "refused the key (HTTP 401)"),
        (200, "{\"choices\": []}", "no choices in the reply"),
        (200, "<html>oops</html>", "invalid JSON"),
    ] {
        let server = rt.block_on(async {
            let server = MockServer::start().await;
            Mock::given(method("POST"))
                .respond_with(ResponseTemplate::new(status).set_body_string(body))
                .mount(&server)
                .await;
            server
        });
        let home = tempfile::tempdir().unwrap();
        let config = endpoint_config(home.path(), &format!("{}/v1", server.uri()));
        let out = ongraph(home.path(), &["--config", config.to_str().unwrap(), "ask", CANBERRA, "--topic", "Canberra"]);
        assert_one_line_error(&out, needle);
    }
}

#[test]
fn replay_check_reproduces_the_demo_sessions_and_bad_files_say_why() {
    let home = tempfile::tempdir().unwrap();
    let out = ongraph(home.path(), &["replay", "--check", "sessions/phillie-phanatic.json"]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let text = stdout(&out);
    assert!(text.contains("run 1: ") && text.contains("→ Bright House Field") && text.contains("same trace"), "{text}");
    assert!(text.contains("run 2: ") && text.contains("→ BayCare Ballpark"), "{text}");
    assert!(text.contains("correction 1: replace m.phillies"), "{text}");
    assert!(text.contains("), made in run 1\n"), "when it was made: {text}");
    // An undo in the session is said too.
    let mut session: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string("sessions/phillie-phanatic.json").unwrap()).unwrap();
    session["corrections"][0]["undone_after_runs"] = 2.into();
    let undone = home.path().join("undone.json");
    std::fs::write(&undone, session.to_string()).unwrap();
    let text = stdout(&ongraph(home.path(), &["replay", "--check", undone.to_str().unwrap()]));
    assert!(text.contains("), made in run 1, undone in run 2\n"), "{text}");

    let corrupt = home.path().join("corrupt.json");
    std::fs::write(&corrupt, "{\"format\": \"ongraph-session\", \"version\": 1, \"runs\": [{\"question\": ").unwrap();
    let out = ongraph(home.path(), &["replay", corrupt.to_str().unwrap()]);
    assert_one_line_error(&out, "corrupt.json is corrupt: EOF while parsing");
    assert!(stderr(&out).matches("line 1").count() == 1, "the place is said once: {}", stderr(&out));
    // A file that is not JSON at all (a newcomer's wrong file) is not called a corrupt session.
    let text = home.path().join("notes.json");
    std::fs::write(&text, "not json\n").unwrap();
    for args in [&["replay", "--check"][..], &["replay"], &["ask", CANBERRA, "--resume"]] {
        let out = ongraph(home.path(), &[args, &[text.to_str().unwrap()]].concat());
        assert_one_line_error(&out, "notes.json is not an ongraph session: it is not JSON (expected ident at line 1");
    }
    let newer = home.path().join("newer.json");
    std::fs::write(&newer, "{\"format\": \"ongraph-session\", \"version\": 7}").unwrap();
    let out = ongraph(home.path(), &["replay", "--check", newer.to_str().unwrap()]);
    assert_one_line_error(&out, "saved by a newer ongraph");
    // A session of no runs checks nothing: said, not passed in silence.
    let mut session: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string("sessions/phillie-phanatic.json").unwrap()).unwrap();
    session["runs"] = serde_json::json!([]);
    let empty = home.path().join("empty.json");
    std::fs::write(&empty, session.to_string()).unwrap();
    let out = ongraph(home.path(), &["replay", "--check", empty.to_str().unwrap()]);
    assert_one_line_error(&out, "empty.json records no runs: there is nothing to check");
}

#[test]
fn a_bad_key_binding_or_theme_in_the_config_is_a_clear_error() {
    let home = tempfile::tempdir().unwrap();
    let config = home.path().join("config.toml");
    std::fs::write(&config, "[keys]\nstep = [\"hyper-q\"]\n").unwrap();
    let out = ongraph(home.path(), &["--config", config.to_str().unwrap(), "tui"]);
    assert_one_line_error(&out, "[keys] step: unknown key \"hyper-q\"");
    std::fs::write(&config, "[defaults]\ntheme = \"solarized\"\n").unwrap();
    let out = ongraph(home.path(), &["--config", config.to_str().unwrap(), "tui"]);
    assert_one_line_error(&out, "no theme \"solarized\" (themes: dark, light, high-contrast)");
}

#[test]
fn baselines_from_the_command_line() {
    let home = tempfile::tempdir().unwrap();
    // The demo records no baseline replies (they would name answers no prompt shows): a script
    // of the tests' own gives them.
    let script = format!("scripted:{}/tests/fixtures/baselines-model.toml", env!("CARGO_MANIFEST_DIR"));
    let out = ongraph(home.path(), &["ask", "--llm", &script, "--method", "sc", "--samples", "3", CANBERRA]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let text = stdout(&out);
    assert!(text.contains("Answer: Australian Labor Party"), "{text}");
    assert!(text.contains("from the LLM alone") && text.contains("3 LLM call(s) in 1 round(s)"), "{text}");
    let out = ongraph(home.path(), &["ask", "--method", "sc", "--samples", "0", CANBERRA]);
    assert_one_line_error(&out, "--samples must be at least 1");
}

/// Found by a trial with a small local model: a CoT reply in prose with no answer in braces
/// printed "the model gave none", though it had replied; the line says its reply could not be read.
#[test]
fn an_unreadable_reply_is_not_said_to_be_no_reply() {
    let home = tempfile::tempdir().unwrap();
    let script = home.path().join("prose.toml");
    let reply = "Canberra is in Australia, and the party in power there holds the majority.";
    let text = format!("[[reply]]\nstep = \"cot\"\ncontains = [\"Q: {CANBERRA}\"]\ntext = \"{reply}\"\n");
    std::fs::write(&script, text).unwrap();
    let script = format!("scripted:{}", script.display());
    let out = ongraph(home.path(), &["ask", "--llm", &script, "--method", "cot", CANBERRA]);
    assert_eq!(out.status.code(), Some(3), "{}", stderr(&out));
    let text = stdout(&out);
    assert!(text.contains("No answer: none could be read from the model's reply"), "{text}");
    assert!(!text.contains("the model gave none"), "{text}");
}

/// Found by a new-user trial: self-consistency off the demo's recording said "CoT" (it asks its
/// samples with CoT's prompt, recorded as `cot` steps). Every line names the method asked for;
/// the trace still records `cot` steps (what sessions and scripts match).
#[test]
fn sc_without_a_model_says_sc_not_cot() {
    let home = tempfile::tempdir().unwrap();
    let out = ongraph(home.path(), &["ask", "--method", "sc", CANBERRA]);
    assert_one_line_error(
        &out,
        "this step (SC: sampling step-by-step answers from the model's own knowledge) is outside the offline demo's recording",
    );
    assert!(!stderr(&out).contains("CoT"), "{}", stderr(&out));
    // A question the demo does not know: the questions it knows, though not by SC.
    let out = ongraph(home.path(), &["ask", "--method", "sc", "Who is the CEO of Apple?"]);
    assert_one_line_error(&out, "the offline demo model knows only its recorded steps");
    let err = stderr(&out);
    assert!(err.contains("but not with SC, whose steps it records for none of them"), "{err}");
    assert!(!err.contains("CoT"), "{err}");
    // CoT is still said as CoT; a graph method's unknown question lists the questions alone.
    let out = ongraph(home.path(), &["ask", "--method", "cot", CANBERRA]);
    assert_one_line_error(&out, "this step (CoT: reasoning from the model's own knowledge) is outside");
    let out = ongraph(home.path(), &["ask", "--method", "cot", "Who is the CEO of Apple?"]);
    assert_one_line_error(&out, "but not with CoT, whose steps");
    let out = ongraph(home.path(), &["ask", "Who is the CEO of Apple?"]);
    assert!(!stderr(&out).contains("but not with"), "{}", stderr(&out));
    // A script of one's own without the reply: the step to write in it, and who asked.
    let script = home.path().join("empty.toml");
    std::fs::write(&script, "").unwrap();
    let script = format!("scripted:{}", script.display());
    let out = ongraph(home.path(), &["ask", "--llm", &script, "--method", "sc", CANBERRA]);
    assert_one_line_error(&out, "the scripted model has no reply for this cot prompt, asked by SC (ends: ");
    let out = ongraph(home.path(), &["ask", "--llm", &script, "--method", "cot", CANBERRA]);
    assert_one_line_error(&out, "the scripted model has no reply for this cot prompt (ends: ");
    // What is recorded is unchanged: SC's samples are `cot` steps in the trace.
    let baselines = format!("scripted:{}/tests/fixtures/baselines-model.toml", env!("CARGO_MANIFEST_DIR"));
    let out = ongraph(home.path(), &["ask", "--llm", &baselines, "--method", "sc", "--json", CANBERRA]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let v: serde_json::Value = serde_json::from_str(&stdout(&out)).unwrap();
    let steps: Vec<&str> =
        v["trace"][0]["calls"].as_array().unwrap().iter().filter_map(|c| c["step"].as_str()).collect();
    assert_eq!(steps, ["cot"; 5]);
}

#[test]
fn the_ui_without_a_terminal_says_so_instead_of_panicking() {
    // Regression: `ongraph </dev/null >out`, `tui` and `replay FILE` exited 101.
    let home = tempfile::tempdir().unwrap();
    for args in [&[][..], &["tui"][..], &["replay", "sessions/canberra.json"][..]] {
        let out = common::ongraph_cmd(home.path(), args)
            .stdin(std::process::Stdio::null())
            .output()
            .expect("the binary runs");
        let err = stderr(&out);
        assert_eq!(out.status.code(), Some(1), "{args:?}: {err}");
        assert!(err.contains("the terminal UI needs a terminal"), "{args:?}: {err}");
        assert!(!err.contains("panicked"), "{args:?}: {err}");
    }
}

#[test]
fn escape_sequences_in_labels_are_shown_not_obeyed() {
    // Regression: a label with OSC/CSI sequences retitled and cleared the user's terminal.
    let home = tempfile::tempdir().unwrap();
    let kg = home.path().join("evil.tsv");
    std::fs::write(
        &kg,
        "m.evil\ttype.object.name\t\"Evil\u{1b}]0;PWNED\u{7}\u{1b}[2J\u{9b}1m\"\nm.evil\tpeople.person.nationality\tm.x\n",
    )
    .unwrap();
    let kg = kg.to_str().unwrap();
    for args in [&["kg", "--kg", kg, "search", "Evil"][..], &["kg", "--kg", kg, "relations", "m.evil"][..]] {
        let out = ongraph(home.path(), args);
        let text = stdout(&out);
        assert_eq!(out.status.code(), Some(0), "{args:?}: {}", stderr(&out));
        assert!(!text.contains(['\u{1b}', '\u{7}', '\u{9b}']), "{args:?}: {text:?}");
    }
    let text = stdout(&ongraph(home.path(), &["kg", "--kg", kg, "search", "Evil"]));
    assert!(text.contains("Evil␛]0;PWNED"), "{text:?}");
}

#[test]
fn a_damaged_query_cache_is_named_as_damaged_and_cache_clear_removes_it() {
    let home = tempfile::tempdir().unwrap();
    let o = ongraph(home.path(), &["cache", "stats"]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let cache = home.path().join("cache/ongraph/query-cache");
    for entry in std::fs::read_dir(&cache).unwrap() {
        let entry = entry.unwrap();
        if entry.file_type().unwrap().is_file() {
            std::fs::write(entry.path(), b"\x00\x01 garbage \xff\xff\xff\xff\xff\xff\xff\xff").unwrap();
        }
    }
    let o = ongraph(home.path(), &["cache", "stats"]);
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(1));
    assert!(err.contains("is damaged") && err.contains("`ongraph cache clear` removes it"), "{err}");
    assert!(!err.contains("another ongraph process"), "{err}");
    let o = ongraph(home.path(), &["cache", "clear"]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    assert!(String::from_utf8_lossy(&o.stdout).contains("removed the damaged query cache"));
    let o = ongraph(home.path(), &["cache", "stats"]);
    assert!(String::from_utf8_lossy(&o.stdout).starts_with("0 cached result(s)"));
}

#[test]
fn a_reader_that_stops_reading_is_not_an_error() {
    // `ongraph … | head`: the pipe closes before the output is written.
    let home = tempfile::tempdir().unwrap();
    for args in [
        &["ask", CANBERRA][..],
        &["ask", "--json", CANBERRA],
        &["kg", "search", "a"],
        &["fix", "list"],
        &["fix", "list", "--json"],
        &["cache", "stats"],
    ] {
        let mut child = common::ongraph_cmd(home.path(), args)
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::piped())
            .spawn()
            .unwrap();
        drop(child.stdout.take());
        let out = child.wait_with_output().unwrap();
        assert_eq!(out.status.code(), Some(0), "{args:?}: {}", stderr(&out));
        assert_eq!(stderr(&out), "", "{args:?}");
    }
}

/// Every engine setting is a config key and a flag: the defaults, then the config, then the
/// flags; and the calls are made with them.
#[test]
fn engine_settings_come_from_the_config_then_the_flags() {
    let home = tempfile::tempdir().unwrap();
    let config = home.path().join("config.toml");
    std::fs::write(&config, "[defaults]\nmax_tokens = 300\nprune_temperature = 0.3\nsample_size = 4\nrollbacks = 1\n")
        .unwrap();
    let c = config.to_str().unwrap();
    let args = ["--config", c, "ask", CANBERRA, "--json", "--sample-size", "6", "--reason-temperature", "0.1"];
    let out = ongraph(home.path(), &args);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let json: serde_json::Value = serde_json::from_str(&stdout(&out)).unwrap();
    let s = &json["settings"];
    let got = [&s["max_tokens"], &s["prune_temperature"], &s["sample_size"], &s["rollbacks"], &s["reason_temperature"]];
    assert_eq!(got.map(ToString::to_string), ["300", "0.3", "6", "1", "0.1"], "{s}");
    assert_eq!(s["sample_threshold"], 20, "a default");
    let calls: Vec<(String, f64)> = json["trace"]
        .as_array()
        .unwrap()
        .iter()
        .flat_map(|e| e["calls"].as_array().cloned().unwrap_or_default())
        .map(|c| (c["step"].as_str().unwrap().to_string(), c["temperature"].as_f64().unwrap()))
        .collect();
    assert!(calls.iter().any(|(step, _)| step.ends_with("_prune")), "a scoring call was made: {calls:?}");
    assert!(calls.iter().all(|(step, t)| *t == if step.ends_with("_prune") { 0.3 } else { 0.1 }), "{calls:?}");

    std::fs::write(&config, "[defaults]\nmax_tokens = 0\n").unwrap();
    assert_one_line_error(&ongraph(home.path(), &["--config", c, "ask", CANBERRA]), ":2: `max_tokens` is at least 1");
}

#[test]
fn files_saved_with_a_byte_order_mark_read_as_without() {
    let home = tempfile::tempdir().unwrap();
    let config = home.path().join("config.toml");
    std::fs::write(&config, "\u{feff}[defaults]\nwidth = 2\n").unwrap();
    let session = home.path().join("session.json");
    let saved = std::fs::read_to_string("sessions/phillie-phanatic.json").unwrap();
    std::fs::write(&session, format!("\u{feff}{saved}")).unwrap();
    let out =
        ongraph(home.path(), &["--config", config.to_str().unwrap(), "replay", "--check", session.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert!(stdout(&out).contains("same trace"), "{}", stdout(&out));
}

#[test]
fn ask_saves_a_session_that_replays_offline() {
    let home = tempfile::tempdir().unwrap();
    let path = home.path().join("saved/canberra.json");
    let out = ongraph(
        home.path(),
        &[
            "ask",
            "What is the majority party now in the country where Canberra is located?",
            "--save-session",
            path.to_str().unwrap(),
        ],
    );
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let session = ongraph::testing::session::Session::load(&path).unwrap();
    assert_eq!(session.runs.len(), 1);
    assert!(session.runs[0].answer.is_some(), "the answer is in the session");
    // Indexed as it is saved, for `fix impact` (issue 38).
    let index =
        std::fs::read(home.path().join("data/ongraph/impact-index")).expect("the impact index beside the store");
    let saved = std::fs::canonicalize(&path).unwrap();
    let saved = saved.as_os_str().as_encoded_bytes();
    assert!(index.windows(saved.len()).any(|w| w == saved), "the saved session is in the index");
    let check = ongraph(home.path(), &["replay", "--check", path.to_str().unwrap()]);
    assert!(
        check.status.success(),
        "{}{}",
        String::from_utf8_lossy(&check.stdout),
        String::from_utf8_lossy(&check.stderr)
    );

    // A question the run cannot answer still leaves the steps it took.
    let failed = home.path().join("failed.json");
    let out =
        ongraph(home.path(), &["ask", "What is the capital of Atlantis?", "--save-session", failed.to_str().unwrap()]);
    assert!(!out.status.success());
    assert!(ongraph::testing::session::Session::load(&failed).is_ok(), "{}", String::from_utf8_lossy(&out.stderr));

    // Both failures are said when the session cannot be written either.
    let blocked = home.path().join("saved/canberra.json/inside.json");
    let out =
        ongraph(home.path(), &["ask", "What is the capital of Atlantis?", "--save-session", blocked.to_str().unwrap()]);
    assert_one_line_error(&out, "the question could not be answered");
    assert!(stderr(&out).contains("(and the session could not be saved: cannot write"), "{}", stderr(&out));
}

#[test]
fn ask_prints_what_the_method_reports_of_the_run() {
    let home = tempfile::tempdir().unwrap();
    let q = "Which World Series did the San Francisco Giants win against the Texas Rangers?";
    let out = ongraph(home.path(), &["ask", "--method", "pog", q]);
    assert!(out.status.success(), "{}", stderr(&out));
    let text = stdout(&out);
    assert!(text.contains("PoG:\n  indicator \"San Francisco Giants\""), "{text}");
    assert!(text.contains("answered by topic-entity paths (depth 1)"), "{text}");
    // Its supporting path in arrows, as every method prints them (not its prompts' braces).
    let path = "San Francisco Giants -> sports.sports_team.championships -> 2010 World Series -> sports.sports_championship_event.runner_up -> Texas Rangers\n";
    assert!(text.contains(&format!("  1. [1.000] {path}")), "{text}");
    let tog =
        ongraph(home.path(), &["ask", "What is the majority party now in the country where Canberra is located?"]);
    assert!(tog.status.success(), "{}", stderr(&tog));
    assert!(stdout(&tog).starts_with("Answer: "), "{}", stdout(&tog));
    assert!(!stdout(&tog).contains("ToG:"), "ToG reports nothing beyond its paths: {}", stdout(&tog));
}

#[test]
fn ask_resume_answers_from_the_saved_session_without_calling_again() {
    let home = tempfile::tempdir().unwrap();
    let saved = home.path().join("canberra.json");
    let q = "What is the majority party now in the country where Canberra is located?";
    let first = ongraph(home.path(), &["ask", q, "--save-session", saved.to_str().unwrap(), "--json"]);
    assert!(first.status.success(), "{}", stderr(&first));
    let again = ongraph(home.path(), &["ask", q, "--resume", saved.to_str().unwrap(), "--json"]);
    assert!(again.status.success(), "{}", stderr(&again));
    let json = |o: &Output| serde_json::from_slice::<serde_json::Value>(&o.stdout).unwrap();
    let (first, again) = (json(&first), json(&again));
    assert_eq!(again["answer"]["answers"], first["answer"]["answers"]);
    assert_eq!(again["costs"]["llm_calls"], 0, "every reply came from the session");
    let saved_of = |v: &serde_json::Value| v["costs"]["llm_calls_saved"].as_u64().unwrap();
    assert_eq!(saved_of(&again), first["costs"]["llm_calls"].as_u64().unwrap() + saved_of(&first));

    let other = ongraph(home.path(), &["ask", "What is the capital of Atlantis?", "--resume", saved.to_str().unwrap()]);
    assert_one_line_error(&other, "recorded no run of this question (it has: What is the majority party");
    let same = ongraph(
        home.path(),
        &["ask", q, "--resume", saved.to_str().unwrap(), "--save-session", saved.to_str().unwrap()],
    );
    assert_one_line_error(&same, "--resume and --save-session name the same file");
    let script = home.path().join("model.toml");
    std::fs::write(&script, "").unwrap();
    let other_model = ongraph(
        home.path(),
        &["ask", q, "--resume", saved.to_str().unwrap(), "--llm", &format!("scripted:{}", script.display())],
    );
    assert_one_line_error(&other_model, "its replies are not this model's");
}

/// A prompts directory as a newcomer makes one: a template copied from prompts/ and edited is
/// what the model is shown (the system message too, in `--json`'s `system_prompt`); one saved
/// under another extension or case is an error naming the file it should be, never silently
/// left out.
#[test]
fn a_copied_and_edited_template_is_what_the_model_is_shown_and_a_misnamed_one_is_said() {
    let home = tempfile::tempdir().unwrap();
    let dir = home.path().join("my-prompts");
    std::fs::create_dir(&dir).unwrap();
    let reasoning = std::fs::read_to_string("prompts/reasoning.txt").unwrap();
    std::fs::write(dir.join("reasoning.txt"), format!("Answer tersely.\n{reasoning}")).unwrap();
    std::fs::write(dir.join("system.txt"), "You are a careful assistant.\n").unwrap();
    let out = ongraph(home.path(), &["ask", "--prompts", dir.to_str().unwrap(), "--json", CANBERRA]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(v["system_prompt"], "You are a careful assistant.");
    let calls: Vec<&serde_json::Value> =
        v["trace"].as_array().unwrap().iter().flat_map(|e| e["calls"].as_array().into_iter().flatten()).collect();
    let checks: Vec<&str> =
        calls.iter().filter(|c| c["step"] == "reasoning").filter_map(|c| c["prompt"].as_str()).collect();
    assert!(
        !checks.is_empty() && checks.iter().all(|p| p.starts_with("Answer tersely.\nGiven a question")),
        "{checks:?}"
    );
    assert!(
        calls.iter().filter(|c| c["step"] != "reasoning").all(|c| !c["prompt"].as_str().unwrap().contains("tersely"))
    );
    // Without the directory, the built-in system message.
    let out = ongraph(home.path(), &["ask", "--json", CANBERRA]);
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(v["system_prompt"], "You are an AI assistant that helps people find information.");

    std::fs::rename(dir.join("reasoning.txt"), dir.join("reasoning.TXT")).unwrap();
    let out = ongraph(home.path(), &["ask", "--prompts", dir.to_str().unwrap(), CANBERRA]);
    assert_one_line_error(&out, "reasoning.TXT: not read: a template's file is named exactly reasoning.txt");
    std::fs::rename(dir.join("reasoning.TXT"), dir.join("reasonning.txt")).unwrap();
    let out = ongraph(home.path(), &["ask", "--prompts", dir.to_str().unwrap(), CANBERRA]);
    assert_one_line_error(&out, "reasonning.txt: not a known template; did you mean reasoning.txt?");
}

/// Off its recording, the demo names the config the command reads (`--config FILE`, not the
/// default location) and the endpoints that file configures already (found by a trial).
#[test]
fn the_demo_off_its_recording_names_the_config_in_use_and_its_endpoints() {
    let home = tempfile::tempdir().unwrap();
    let config = home.path().join("mine.toml");
    std::fs::write(&config, "[llm.qwen]\nbase_url = \"http://127.0.0.1:9/v1\"\nmodel = \"q\"\n").unwrap();
    let args = ["--config", config.to_str().unwrap(), "ask", "--llm", "demo", "Who is the CEO of Apple?"];
    let out = ongraph(home.path(), &args);
    let said = format!("To go on, run with --llm qwen (configured in {}), or connect another model", config.display());
    assert_one_line_error(&out, &said);
}

/// Issue 36: a model that judges the paths sufficient and then names something no path shows
/// (a hallucination, scripted here as a fault) answered from its own knowledge, and `ask` says
/// so, not "from knowledge-graph paths"; the same answer named by a path keeps that source.
#[test]
fn an_answer_no_path_names_is_not_said_to_come_from_kg_paths() {
    let home = tempfile::tempdir().unwrap();
    let dir = home.path();
    std::fs::write(dir.join("kb.txt"), "alice\tspouse\tbob\nbob\tplace_of_birth\tparis\n").unwrap();
    let kb = dir.join("kb.txt");
    for (answer, source) in [
        ("carol", "Source: from the LLM's own knowledge (no path the model was shown names its answer)"),
        ("bob", "Source: from knowledge-graph paths"),
    ] {
        std::fs::write(
            dir.join("script.toml"),
            format!(
                "[[reply]]\nstep = \"relation_prune\"\ncontains = [\"Topic Entity: alice\\n\"]\ntext = \"{{spouse (Score: 1.0)}}\"\n\n\
                 [[reply]]\nstep = \"reasoning\"\ncontains = [\"alice, spouse, bob\"]\ntext = \"{{Yes}}. The answer is {{{answer}}}.\"\n"
            ),
        )
        .unwrap();
        let script = format!("scripted:{}", dir.join("script.toml").display());
        let out = ongraph(
            dir,
            &[
                "ask",
                "who is alice 's spouse ?",
                "--topic",
                "alice",
                "--kg",
                kb.to_str().unwrap(),
                "--llm",
                &script,
                "--structured",
                "off",
            ],
        );
        assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
        let text = stdout(&out);
        assert!(text.contains(&format!("Answer: {answer}\n")), "{text}");
        assert!(text.contains(&format!("{source}\n")), "{text}");
    }
}

/// `ask --method sc --samples 4294967295` aborted the process asking for 900 GB; a count over
/// its limit is now refused before anything runs, by flag or by config key.
#[test]
fn a_huge_count_is_refused_at_once_by_flag_or_config() {
    let home = tempfile::tempdir().unwrap();
    let dir = home.path();
    let started = std::time::Instant::now();
    let out = ongraph(dir, &["ask", "--method", "sc", "--samples", "4294967295", CANBERRA]);
    let err = stderr(&out);
    assert_eq!(out.status.code(), Some(2), "a usage error: {err}");
    assert!(err.contains("'--samples <K>': 4294967295 is too large: at most 1000"), "{err}");
    let out = ongraph(dir, &["ask", "--concurrency", "18446744073709551615", CANBERRA]);
    assert!(stderr(&out).contains("is too large: at most 1000"), "{}", stderr(&out));
    let out = ongraph(dir, &["ask", "--concurrency", "0", CANBERRA]);
    assert!(stderr(&out).contains("'--concurrency <CONCURRENCY>': 0 is too small: at least 1"), "{}", stderr(&out));
    for (key, value) in [("samples", "4294967295"), ("gog_steps", "4294967295"), ("concurrency", "100000")] {
        let config = dir.join(format!("{key}.toml"));
        std::fs::write(&config, format!("[defaults]\n{key} = {value}\n")).unwrap();
        let out = ongraph(dir, &["--config", config.to_str().unwrap(), "ask", CANBERRA]);
        assert_one_line_error(&out, &format!("`{key}` is at most"));
        assert!(stderr(&out).contains(".toml:2: "), "the line: {}", stderr(&out));
    }
    assert!(started.elapsed() < std::time::Duration::from_secs(30), "refused at once");
}

/// The first segment of an error line (split at ": ") that the line says again, if any: an
/// error whose message ends with its source's text, printed by anyhow with its chain, said it
/// twice ("no step 9 to rewind to: no step 9 to rewind to").
fn repeated_segment(line: &str) -> Option<&str> {
    let segments: Vec<&str> = line.trim().split(": ").filter(|s| s.len() > 3).collect();
    segments.iter().enumerate().find(|(i, s)| segments[i + 1..].contains(s)).map(|(_, s)| *s)
}

#[test]
fn errors_say_where_once_and_repeat_nothing() {
    assert_eq!(repeated_segment("error: a: no step 9 to go: no step 9 to go"), Some("no step 9 to go"));
    assert_eq!(repeated_segment("error: cannot read x: No such file"), None);
    let home = tempfile::tempdir().unwrap();
    let dir = home.path();
    let once = |out: &Output, needle: &str| {
        assert_one_line_error(out, needle);
        let err = stderr(out);
        assert_eq!(repeated_segment(&err), None, "said twice: {err}");
    };
    let config = |name: &str, text: &str| {
        let path = dir.join(name);
        std::fs::write(&path, text).unwrap();
        path.to_str().unwrap().to_string()
    };

    // Endpoints that are no http(s) URL are refused as the config is read, naming the entry
    // (not after the retries of a first request), without showing the URL.
    let started = std::time::Instant::now();
    let file = config("llm_file.toml", "[llm.x]\nbase_url = \"file:///etc/passwd\"\nmodel = \"m\"\n");
    let out = ongraph(dir, &["--config", &file, "ask", CANBERRA, "--llm", "x"]);
    once(&out, "[llm.x] base_url must be an http:// or https:// URL, not file:");
    assert!(!stderr(&out).contains("/etc/passwd"), "{}", stderr(&out));
    let relative = config("kg_rel.toml", "[kg.x]\nendpoint = \"sparql\"\n");
    let out = ongraph(dir, &["--config", &relative, "kg", "search", "x", "--kg", "x"]);
    once(&out, "[kg.x] endpoint is not an absolute http(s) URL");
    let hang = config(
        "backoff.toml",
        "[llm.x]\nbase_url = \"http://127.0.0.1:9/v1\"\nmodel = \"m\"\nbackoff_ms = 18446744073709551615\n",
    );
    once(&ongraph(dir, &["--config", &hang, "ask", CANBERRA, "--llm", "x"]), "[llm.x] backoff_ms is at most 600000");
    assert!(started.elapsed() < std::time::Duration::from_secs(3), "at once: {:?}", started.elapsed());

    // A missing file: the OS's words once.
    let missing = config("missing.toml", "[kg.m]\npath = \"/nonexistent/kb.nt\"\n");
    once(&ongraph(dir, &["--config", &missing, "kg", "search", "x", "--kg", "m"]), "No such file or directory");

    // A literal longer than the parser's buffer: its file and line, once, strict or lenient.
    let big = dir.join("big.nt");
    let mut text =
        String::from("<http://e/a> <http://e/r> <http://e/b> .\n# a comment\n<http://e/a> <http://e/name> \"");
    text.push_str(&"x".repeat(17 << 20));
    text.push_str("\" .\n<http://e/b> <http://e/r> <http://e/c> .\n");
    std::fs::write(&big, text).unwrap();
    let shown = big.display().to_string();
    for lenient in [false, true] {
        let kg = config("big.toml", &format!("[kg.big]\npath = \"{shown}\"\nlenient = {lenient}\n"));
        let out = ongraph(dir, &["--config", &kg, "kg", "search", "a", "--kg", "big"]);
        once(&out, &format!("{shown}:3: a term on this line is too long to read"));
    }

    // A session whose rewind names no step: the engine's words once.
    let mut session: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string("sessions/phillie-phanatic.json").unwrap()).unwrap();
    let moments = session["runs"][0]["moments"].as_array_mut().unwrap();
    moments.insert(5, serde_json::json!({"moment": "rewind", "to": 999999}));
    let path = dir.join("rewind.json");
    std::fs::write(&path, session.to_string()).unwrap();
    let out = ongraph(dir, &["replay", "--check", path.to_str().unwrap()]);
    once(&out, "no step 999999 to rewind to");
}

/// Ctrl-C during `ask --save-session` with a slow model: the steps answered so far are saved,
/// said with how to go on, and `--resume` answers from them without asking them again (found
/// by a trial: the file was not written and the work was lost).
#[test]
fn ctrl_c_during_ask_keeps_the_steps_answered_and_resume_goes_on() {
    let runtime = tokio::runtime::Runtime::new().unwrap();
    let model = std::sync::Arc::new(ongraph::testing::llm::ScriptedModel::demo().unwrap());
    let server = runtime
        .block_on(ongraph::testing::llm::LoopbackServer::start(model, std::time::Duration::from_millis(300)))
        .unwrap();
    let home = tempfile::tempdir().unwrap();
    let config = home.path().join("slow.toml");
    std::fs::write(
        &config,
        format!("[llm.slow]\nbase_url = \"{}\"\nmodel = \"demo\"\nstructured = \"off\"\n", server.base_url()),
    )
    .unwrap();
    let saved = home.path().join("partial.json");
    let (c, s) = (config.to_str().unwrap(), saved.to_str().unwrap());
    let args = ["--config", c, "ask", CANBERRA, "--llm", "slow", "--save-session", s];
    let child = common::ongraph_cmd(home.path(), &args)
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    // Once a step is done (the log says so: the command is in its loop, Ctrl-C is its to
    // handle), and well before the last of the demo's dozen calls, Ctrl-C.
    let log = home.path().join("state").join("ongraph").join("ongraph.log");
    let started = std::time::Instant::now();
    while !std::fs::read_to_string(&log).is_ok_and(|t| t.contains("summary=")) {
        assert!(started.elapsed() < std::time::Duration::from_secs(60), "no step was logged");
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    let killed = std::process::Command::new("kill").args(["-INT", &child.id().to_string()]).status().unwrap();
    assert!(killed.success());
    let o = child.wait_with_output().unwrap();
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(130), "{err}");
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(err.starts_with("interrupted before the answer; the ") && err.contains("--resume"), "{err}");
    let session: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(&saved).unwrap()).unwrap();
    let moments = session["runs"][0]["moments"].as_array().map_or(0, Vec::len);
    assert!(moments > 0, "the steps answered are saved: {session}");
    // Going on from them: answered, the saved replies not asked again.
    let o = ongraph(home.path(), &["--config", c, "ask", CANBERRA, "--llm", "slow", "--resume", s, "--json"]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let json: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(json["answer"]["answers"][0], "Australian Labor Party");
}
