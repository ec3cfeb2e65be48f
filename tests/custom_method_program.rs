//! A program of one's own with a method of one's own: `ongraph::main_with` and the BFS method of
//! `common/bfs.rs` (its prompt, reply shape, view and simulated replies are all there, added by
//! one registry line). Run as a user would run it: `ask` answers with it and saves a session
//! that `replay --check` reproduces (and that ongraph itself, which lacks the method, refuses
//! in words), `eval --llm gold-path` follows its simulation, and the terminal UI (in tmux) runs
//! it to the answer and shows its own pane.
//!
//! This test file is that program: started with `ONGRAPH_TEST_AS_PROGRAM` set, it is the command;
//! otherwise it runs the tests below, each starting itself as the program (no test harness: a
//! program has one `main`).

#[path = "common/bfs.rs"]
mod bfs;

use std::path::{Path, PathBuf};
use std::process::{Command, ExitCode, Output};
use std::time::{Duration, Instant};

/// Set when this binary is to be the program rather than its tests.
const AS_PROGRAM: &str = "ONGRAPH_TEST_AS_PROGRAM";

const QUESTION: &str = "In which time zone is Canberra?";

/// The offline model the program is run with: names the topic, and answers the method's own
/// prompt only when it shows the time-zone triple (a reply chooses among what the prompt shows).
const SCRIPT: &str = r#"
[[question]]
text = "In which time zone is Canberra?"

[[reply]]
step = "topic_entities"
contains = ["In which time zone is Canberra?"]
text = "{Canberra}"

[[reply]]
step = "bfs_answer"
contains = ["Canberra, location.location.time_zones, Australian Eastern Time Zone"]
text = "The numbered triples say so: {Australian Eastern Time Zone}."
"#;

// A harness of its own reports as libtest does, on stdout.
#[allow(clippy::print_stdout)]
fn main() -> ExitCode {
    if std::env::var_os(AS_PROGRAM).is_some() {
        return ongraph::main_with(bfs::registry());
    }
    let tests: [(&str, fn()); 4] = [
        ("ask_answers_with_the_method_and_its_session_replays", ask_answers_with_the_method_and_its_session_replays),
        ("eval_follows_the_methods_own_simulation", eval_follows_the_methods_own_simulation),
        ("help_lists_the_method", help_lists_the_method),
        ("the_ui_runs_the_method_and_shows_its_pane", the_ui_runs_the_method_and_shows_its_pane),
    ];
    // Like libtest: arguments that are not flags filter the tests by name (`--exact`: the whole
    // name), `--skip NAME` leaves some out, `--list` lists them, `--ignored` runs the ignored
    // ones (there are none), and the other flags (with their values) change nothing here.
    let (mut filters, mut skips, mut exact, mut list, mut ignored) = (Vec::new(), Vec::new(), false, false, false);
    let mut args = std::env::args().skip(1);
    while let Some(arg) = args.next() {
        match arg.as_str() {
            "--skip" => skips.extend(args.next()),
            "--exact" => exact = true,
            "--list" => list = true,
            "--ignored" => ignored = true,
            "--test-threads" | "--color" | "--format" | "--logfile" | "--shuffle-seed" | "-Z" => drop(args.next()),
            flag if flag.starts_with("--skip=") => skips.push(flag["--skip=".len()..].to_string()),
            flag if flag.starts_with('-') => {}
            filter => filters.push(filter.to_string()),
        }
    }
    let matches = |name: &str, f: &String| if exact { name == f } else { name.contains(f.as_str()) };
    let chosen: Vec<_> = tests
        .iter()
        .filter(|_| !ignored)
        .filter(|(name, _)| filters.is_empty() || filters.iter().any(|f| matches(name, f)))
        .filter(|(name, _)| !skips.iter().any(|s| matches(name, s)))
        .collect();
    if list {
        for (name, _) in &chosen {
            println!("{name}: test");
        }
        return ExitCode::SUCCESS;
    }
    println!("\nrunning {} tests", chosen.len());
    let mut failed = Vec::new();
    for (name, test) in chosen {
        let outcome = std::panic::catch_unwind(test);
        println!("test {name} ... {}", if outcome.is_ok() { "ok" } else { "FAILED" });
        if outcome.is_err() {
            failed.push(*name);
        }
    }
    println!("\ntest result: {}. {} failed: {failed:?}", if failed.is_empty() { "ok" } else { "FAILED" }, failed.len());
    if failed.is_empty() { ExitCode::SUCCESS } else { ExitCode::FAILURE }
}

/// A home of its own: config, state, data and cache, and the model's script.
struct Home {
    dir: tempfile::TempDir,
}

impl Home {
    fn new() -> Self {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("script.toml"), SCRIPT).unwrap();
        Self { dir }
    }

    fn path(&self) -> &Path {
        self.dir.path()
    }

    fn script(&self) -> String {
        format!("scripted:{}", self.path().join("script.toml").display())
    }

    fn envs(&self) -> Vec<(&'static str, PathBuf)> {
        let home = self.path();
        vec![
            ("XDG_CONFIG_HOME", home.join("config")),
            ("XDG_STATE_HOME", home.join("state")),
            ("XDG_DATA_HOME", home.join("data")),
            ("XDG_CACHE_HOME", home.join("cache")),
        ]
    }

    /// This binary as the program, or (`own: false`) ongraph itself, which lacks the method.
    fn run(&self, own: bool, args: &[&str]) -> Output {
        let exe = if own { std::env::current_exe().unwrap() } else { PathBuf::from(env!("CARGO_BIN_EXE_ongraph")) };
        let mut command = Command::new(exe);
        command
            .args(args)
            .envs(self.envs())
            .env_remove("ONGRAPH_CONFIG")
            .env_remove("ONGRAPH_KG")
            .env_remove("ONGRAPH_LLM");
        if own {
            command.env(AS_PROGRAM, "1");
        }
        command.output().unwrap()
    }
}

fn text(o: &Output) -> (String, String) {
    (String::from_utf8_lossy(&o.stdout).into_owned(), String::from_utf8_lossy(&o.stderr).into_owned())
}

fn ask_answers_with_the_method_and_its_session_replays() {
    let home = Home::new();
    let session = home.path().join("bfs.json").display().to_string();
    let script = home.script();
    let o = home
        .run(true, &["ask", QUESTION, "--method", "bfs", "--depth", "1", "--llm", &script, "--save-session", &session]);
    let (out, err) = text(&o);
    assert_eq!(o.status.code(), Some(0), "{out}{err}");
    assert!(out.contains("Australian Eastern Time Zone"), "{out}");
    assert!(out.contains("BFS"), "the method by the name people know it: {out}");

    let o = home.run(true, &["replay", "--check", &session]);
    let (out, err) = text(&o);
    assert_eq!(o.status.code(), Some(0), "the saved run replays in the program that has the method: {out}{err}");
    assert!(out.contains("Australian Eastern Time Zone"), "{out}");

    // ongraph itself does not know the method: one line saying so, nothing replayed.
    let o = home.run(false, &["replay", "--check", &session]);
    let (out, err) = text(&o);
    assert_eq!(o.status.code(), Some(1), "{out}{err}");
    assert!(err.contains("bfs") && err.lines().count() == 1, "{err}");
}

fn eval_follows_the_methods_own_simulation() {
    let home = Home::new();
    let dataset = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/pathquestion/eval/PQ-2H.txt");
    let out_dir = home.path().join("run").display().to_string();
    let args = ["eval", "--dataset", &dataset.display().to_string(), "--llm", "gold-path", "--method", "bfs"];
    let o = home.run(true, &[&args[..], &["--depth", "2", "--limit", "6", "--out", &out_dir]].concat());
    let (out, err) = text(&o);
    assert_eq!(o.status.code(), Some(0), "{out}{err}");
    // Its simulation says sufficient only when the shown triples chain the topic to the answer:
    // two hops of every relation always show it.
    assert!(out.contains("Strict       Hits@1 100.0% (6/6;"), "{out}");
    assert!(out.contains("not an LLM's accuracy"), "{out}");
    // At one hop the triples never reach the answer, and the simulation does not make it up.
    let shallow = home.path().join("shallow").display().to_string();
    let o = home.run(true, &[&args[..], &["--depth", "1", "--limit", "6", "--out", &shallow, "--json"]].concat());
    let (out, err) = text(&o);
    assert_eq!(o.status.code(), Some(0), "{out}{err}");
    let summary: serde_json::Value = serde_json::from_str(&out).unwrap();
    assert_eq!(summary["summary"]["questions"], 6, "{out}");
    assert_eq!(summary["summary"]["errors"], 0, "every question was asked and answered: {out}");
    assert_eq!(summary["summary"]["strict"]["hits"], 0, "{out}");
}

fn help_lists_the_method() {
    let home = Home::new();
    let (out, _) = text(&home.run(true, &["ask", "--help"]));
    assert!(out.contains("bfs") && out.contains("breadth-first walk; the model only answers"), "{out}");
    let o = home.run(false, &["ask", "--help"]);
    let (out, _) = text(&o);
    assert!(o.status.success() && out.contains("--method"), "{out}");
    assert!(!out.contains("breadth-first walk"), "ongraph itself lists only its own: {out}");
}

fn the_ui_runs_the_method_and_shows_its_pane() {
    assert!(
        Command::new("tmux").arg("-V").output().is_ok_and(|o| o.status.success()),
        "tmux is not installed: run `bash scripts/install-test-tools` (or `apt-get install -y tmux`)"
    );
    let home = Home::new();
    let session = format!("ongraph-program-{}", std::process::id());
    // The program alone in a home of its own: none of the caller's ongraph settings.
    let quoted = |s: &str| format!("'{}'", s.replace('\'', r"'\''"));
    let mut command = format!("env -u ONGRAPH_CONFIG -u ONGRAPH_KG -u ONGRAPH_LLM {AS_PROGRAM}=1");
    for (name, value) in home.envs() {
        command.push_str(&format!(" {name}={}", quoted(&value.display().to_string())));
    }
    command.push_str(&format!(
        " {} tui --method bfs --depth 1 --llm {} {}",
        quoted(&std::env::current_exe().unwrap().display().to_string()),
        quoted(&home.script()),
        quoted(QUESTION)
    ));
    let started =
        Command::new("tmux").args(["new-session", "-d", "-s", &session, "-x", "120", "-y", "36", &command]).status();
    assert!(started.is_ok_and(|s| s.success()), "tmux could not start a session");
    let _kill = KillOnDrop(session.clone());
    let screen = || {
        let out = Command::new("tmux").args(["capture-pane", "-p", "-t", &session]).output().unwrap();
        String::from_utf8_lossy(&out.stdout).into_owned()
    };
    let keys = |k: &str| {
        assert!(Command::new("tmux").args(["send-keys", "-t", &session, k]).status().is_ok_and(|s| s.success()))
    };
    // Waits until `text` is on screen (the UI works in the background; this is no timing test).
    let wait_for = |text: &str| {
        let started = Instant::now();
        loop {
            let s = screen();
            if s.contains(text) {
                return s;
            }
            assert!(started.elapsed() < Duration::from_secs(20), "{text:?} never appeared; the screen:\n{s}");
            std::thread::sleep(Duration::from_millis(50));
        }
    };
    wait_for("topic_linking");
    keys("r");
    let s = wait_for("from knowledge-graph paths");
    assert!(s.contains("Australian Eastern Time Zone"), "{s}");
    // Its own pane, drawn from the view it gives.
    for _ in 0..8 {
        if screen().contains(bfs::VIEW_TITLE) {
            break;
        }
        keys("Tab");
        std::thread::sleep(Duration::from_millis(200));
    }
    let s = wait_for(bfs::VIEW_TITLE);
    assert!(s.contains("hop 1 of 1"), "{s}");
    keys("q");
}

struct KillOnDrop(String);

impl Drop for KillOnDrop {
    fn drop(&mut self) {
        let _ = Command::new("tmux").args(["kill-session", "-t", &self.0]).status();
    }
}
