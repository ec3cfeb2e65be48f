//! What README.md promises, kept by tests that read the README itself, so the two cannot drift:
//! its table of which method answers which demo question offline is run pair by pair through
//! the binary, and every command in its `sh` blocks must be run by a named test here or
//! elsewhere, or be one the tests cannot run (a user's own server or data), said in the README.

mod common;

use std::path::Path;
use std::process::Output;

const README: &str = include_str!("../README.md");
/// How the table's header starts: the question column, then a column per method (checked against
/// the methods the Options list).
const TABLE_START: &str = "| question | tog |";
/// A table cell for a pair the offline demo does not answer.
const NEEDS_A_MODEL: &str = "needs a model";

fn ongraph(home: &Path, args: &[&str]) -> Output {
    common::ongraph_cmd(home, args).output().expect("the binary runs")
}

/// One row of the README's table: the question, the flags it is asked with (in backticks after
/// it), and for each method the answer the demo prints, or `None` where it needs a model.
struct Row {
    question: String,
    flags: Vec<String>,
    cells: Vec<Option<String>>,
}

/// Splits a Markdown table line into cells; `\|` is a `|` inside a cell.
fn cells(line: &str) -> Vec<String> {
    let inner = line
        .trim()
        .strip_prefix('|')
        .and_then(|l| l.strip_suffix('|'))
        .unwrap_or_else(|| panic!("not a table row: {line}"));
    let mut out = vec![String::new()];
    let mut chars = inner.chars().peekable();
    while let Some(c) = chars.next() {
        match c {
            '\\' if chars.peek() == Some(&'|') => {
                out.last_mut().unwrap().push('|');
                chars.next();
            }
            '|' => out.push(String::new()),
            c => out.last_mut().unwrap().push(c),
        }
    }
    out.into_iter().map(|c| c.trim().to_string()).collect()
}

/// The README's method × demo question table; panics where it is missing or malformed.
fn table() -> (Vec<String>, Vec<Row>) {
    let mut lines = README.lines().skip_while(|l| !l.starts_with(TABLE_START));
    let header = lines.next().unwrap_or_else(|| panic!("README.md has no table starting {TABLE_START:?}"));
    let methods: Vec<String> = cells(header)[1..].to_vec();
    assert!(lines.next().is_some_and(|l| l.starts_with("|---")), "the table's separator line");
    let rows: Vec<Row> = lines
        .take_while(|l| l.starts_with('|'))
        .map(|line| {
            let mut cells = cells(line);
            assert_eq!(cells.len(), methods.len() + 1, "a cell per method: {line}");
            let first = cells.remove(0);
            let (question, flags) = match first.split_once(" `") {
                Some((q, flags)) => {
                    let flags = flags.strip_suffix('`').unwrap_or_else(|| panic!("flags in backticks: {line}"));
                    (q.to_string(), flags.split_whitespace().map(String::from).collect())
                }
                None => (first, Vec::new()),
            };
            assert!(question.ends_with('?'), "a question first: {line}");
            let cells = cells
                .into_iter()
                .map(|c| {
                    assert!(!c.is_empty(), "an empty cell: {line}");
                    (c != NEEDS_A_MODEL).then_some(c)
                })
                .collect();
            Row { question, flags, cells }
        })
        .collect();
    assert!(rows.len() >= 6, "the five demo questions and GoG's incomplete KG: {} rows", rows.len());
    (methods, rows)
}

/// The methods the README's Options list for `--method`.
fn methods_in_options() -> Vec<String> {
    let at = README.find("[--method ").expect("the Options name --method") + "[--method ".len();
    let list = &README[at..at + README[at..].find(']').expect("a closing bracket")];
    list.split('|').map(String::from).collect()
}

/// The questions the README says the demo model answers (the list after "The demo model answers").
fn demo_questions() -> Vec<String> {
    let at = README.find("The demo model answers ").expect("the README lists the demo's questions");
    README[at..]
        .lines()
        .skip_while(|l| !l.starts_with("- "))
        .take_while(|l| !l.is_empty())
        .filter_map(|l| l.strip_prefix("- "))
        // A note may follow the question on its line, in parentheses.
        .map(|l| l.split(" (").next().unwrap_or(l).to_string())
        .collect()
}

/// The demo's one line for a step it did not record: its start, and how it ends (how to connect
/// a model, naming where this home reads its config).
fn off_script(home: &Path, step_in_words: &str) -> (String, String) {
    let config = home.join("config/ongraph/config.toml");
    (
        format!(
            "error: the question could not be answered: this step ({step_in_words}) is outside the offline demo's recording: the demo model replies only to the steps it recorded (the README lists the moves it knows). "
        ),
        format!(
            "To go on, connect a model: add [llm.local] with base_url = \"http://127.0.0.1:8080/v1\" and model = \"NAME\" to {} (llama.cpp's llama-server, or any OpenAI-compatible server: Ollama, vLLM, OpenAI), then run with --llm local (README: \"Pointing it at a real model\").",
            config.display()
        ),
    )
}

#[test]
fn the_table_of_methods_and_demo_questions_is_what_the_binary_does() {
    let (methods, rows) = table();
    assert_eq!(methods, methods_in_options(), "a column for every method the Options list, in their order");
    let asked: Vec<&str> = rows.iter().filter(|r| r.flags.is_empty()).map(|r| r.question.as_str()).collect();
    let questions = demo_questions();
    assert!(questions.len() >= 5, "the README's list of demo questions: {questions:?}");
    for q in questions {
        assert!(asked.contains(&q.as_str()), "the demo question {q:?} has a row of its own");
    }
    assert!(rows.iter().any(|r| r.flags == ["--scenario", "sessions/demo-ikg.tsv"]), "GoG's incomplete-KG row");

    let home = tempfile::tempdir().unwrap();
    let mut answered = 0;
    for row in &rows {
        for (method, cell) in methods.iter().zip(&row.cells) {
            let mut args = vec!["ask", "--method", method.as_str()];
            args.extend(row.flags.iter().map(String::as_str));
            args.push(&row.question);
            let out = ongraph(home.path(), &args);
            let (stdout, stderr) = (String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
            let pair = format!("{method} on {:?} {:?}", row.question, row.flags);
            match cell {
                Some(answer) => {
                    assert_eq!(out.status.code(), Some(0), "{pair}: {stderr}");
                    assert_eq!(stdout.lines().next(), Some(format!("Answer: {answer}").as_str()), "{pair}: {stdout}");
                    // The README: on the incomplete KG GoG "generates the hidden time zone".
                    if method == "gog" && !row.flags.is_empty() {
                        assert!(stdout.contains("\nSource: from LLM-generated triples"), "{pair}: {stdout}");
                    }
                    args.insert(1, "--json");
                    let traced = ongraph(home.path(), &args);
                    assert_answer_was_shown(&String::from_utf8_lossy(&traced.stdout), &pair);
                    answered += 1;
                }
                None => {
                    assert_eq!(out.status.code(), Some(1), "{pair} needs a model: {stdout}");
                    assert!(stdout.is_empty(), "{pair}: {stdout}");
                    assert_eq!(stderr.lines().count(), 1, "{pair}: one line: {stderr}");
                    // The baselines' step is named exactly; a graph method's is the step it stopped at.
                    let words = match method.as_str() {
                        "io" => "IO: answering from the model's own knowledge",
                        "cot" => "CoT: reasoning from the model's own knowledge",
                        // SC's samples are `cot` steps, said as SC's.
                        "sc" => "SC: sampling step-by-step answers from the model's own knowledge",
                        _ => "",
                    };
                    let (start, end) = off_script(home.path(), words);
                    let line = stderr.trim_end();
                    if words.is_empty() {
                        let (head, tail) = start.split_once("()").expect("the step's place in the line");
                        assert!(
                            line.starts_with(head) && line.contains(tail) && line.ends_with(&end),
                            "{pair}: {line}"
                        );
                    } else {
                        assert_eq!(line, format!("{start}{end}"), "{pair}");
                    }
                }
            }
        }
    }
    assert!(answered >= 30, "the demo answers every graph method's pairs: {answered}");
}

/// The rule the demo script keeps: the reply that gave the answer names only what its prompt
/// shows (a scripted model chooses among what it is offered; it never knows an answer).
fn assert_answer_was_shown(json: &str, pair: &str) {
    let run: serde_json::Value = serde_json::from_str(json).unwrap_or_else(|e| panic!("{pair}: --json: {e}"));
    // GoG keeps its answering reply without the step's "Action N: " label.
    let unlabelled = |text: &str| -> String {
        text.lines()
            .map(|l| l.split_once(": ").filter(|(head, _)| head.starts_with("Action ")).map_or(l, |(_, rest)| rest))
            .collect::<Vec<_>>()
            .join("\n")
    };
    let reply = run["answer"]["reply"].as_str().map(unlabelled).unwrap_or_else(|| panic!("{pair}: no answering reply"));
    let calls = run["trace"].as_array().into_iter().flatten().flat_map(|e| e["calls"].as_array().into_iter().flatten());
    let prompt = calls
        .filter(|c| c["reply"].as_str().map(unlabelled).as_deref() == Some(reply.as_str()))
        .find_map(|c| c["prompt"].as_str())
        .unwrap_or_else(|| panic!("{pair}: no call gave the answer's reply {reply}"));
    let answers =
        run["answer"]["answers"].as_array().filter(|a| !a.is_empty()).unwrap_or_else(|| panic!("{pair}: no answers"));
    for answer in answers {
        let answer = answer.as_str().unwrap_or_default();
        assert!(
            !answer.is_empty() && prompt.contains(answer),
            "{pair}: {answer:?} is not in the prompt it answered:\n{prompt}"
        );
    }
}

/// How a README command is kept: run by a named test (`file.rs::function`), or one the tests
/// cannot run, with what it needs (the README says so beside it).
enum Kept {
    By(&'static str),
    Needs(&'static str),
}

/// Every command in README.md's `sh` blocks (comments dropped, continuation lines joined, spaces
/// collapsed), with the test that runs it; a command shown twice is one entry. A command added to
/// the README without an entry here fails `every_readme_command_is_run_by_a_test_or_marked`.
const COMMANDS: &[(&str, Kept)] = &[
    (
        r#"cargo run --release -- ask "What is the majority party now in the country where Canberra is located?""#,
        Kept::By("readme.rs::the_first_command_prints_what_the_readme_shows"),
    ),
    ("bash scripts/test", Kept::Needs("it is the test suite itself")),
    (
        "python -m llama_cpp.server --model MODEL.gguf --n_ctx 8192 --cache true --logits_all false --cache_size 150000000",
        Kept::By("real_llm.rs::the_ram_cache_serves_each_kind_of_calls_fixed_part_once"),
    ),
    ("ongraph replay sessions/canberra.json", Kept::By("tui.rs::demo_sessions_replay")),
    ("ongraph replay sessions/phillie-phanatic.json", Kept::By("tui.rs::demo_sessions_replay")),
    ("ongraph replay sessions/pog-giants-rangers.json", Kept::By("tui.rs::demo_sessions_replay")),
    ("ongraph replay sessions/gog-apple-incomplete-kg.json", Kept::By("tui.rs::demo_sessions_replay")),
    ("ongraph replay FILE --live", Kept::By("tui.rs::a_live_replay_performs_the_steps_off_its_recording")),
    ("ongraph replay FILE --check", Kept::By("readme.rs::every_committed_session_replays_to_its_trace")),
    (
        r#"ongraph ask "Which ballpark hosts spring training for the team whose mascot is the Phillie Phanatic?""#,
        Kept::By("readme.rs::the_figure_4_commands_run_as_written"),
    ),
    (
        r#"ongraph fix retract m.phillies baseball.baseball_team.spring_training_stadium m.bright_house_field --reason "Renamed Spectrum Field in 2017, BayCare Ballpark in 2021""#,
        Kept::By("readme.rs::the_figure_4_commands_run_as_written"),
    ),
    (
        r#"ongraph fix assert m.phillies baseball.baseball_team.spring_training_stadium m.baycare_ballpark --reason "Current name""#,
        Kept::By("readme.rs::the_figure_4_commands_run_as_written"),
    ),
    (
        r#"ongraph fix assert m.baycare_ballpark type.object.name '"BayCare Ballpark"' --reason "Name of the new entity""#,
        Kept::By("readme.rs::the_figure_4_commands_run_as_written"),
    ),
    ("ongraph fix list", Kept::By("readme.rs::the_figure_4_commands_run_as_written")),
    ("ongraph fix undo 3", Kept::By("readme.rs::the_figure_4_commands_run_as_written")),
    (
        "ongraph fix export --format sparql-update > fixes.ru",
        Kept::By("readme.rs::the_figure_4_commands_run_as_written"),
    ),
    (
        r#"ongraph fix replace m.phillies baseball.baseball_team.spring_training_stadium m.bright_house_field new.baycare_ballpark --label "BayCare Ballpark" --reason "Renamed in 2021""#,
        Kept::By("readme.rs::the_impact_story_prints_what_the_readme_shows"),
    ),
    (
        "ongraph fix impact 1 --runs sessions --rerun",
        Kept::By("readme.rs::the_impact_story_prints_what_the_readme_shows"),
    ),
    (
        r#"ongraph fix relabel m.bright_house_field "BayCare Ballpark" --reason "Renamed in 2021""#,
        Kept::By("team_sync.rs::a_teammates_relabel_changes_the_next_answer_and_fix_list_names_its_author"),
    ),
    ("ongraph fix sync", Kept::By("team_sync.rs::a_conflict_is_shown_to_both_and_settled_by_a_supersede")),
    (
        "ongraph fix review",
        Kept::By("team_sync.rs::reviews_decide_what_applies_under_apply_approved_and_the_latest_wins"),
    ),
    (
        r#"ongraph fix review approve 1 --reason "checked on the team's site""#,
        Kept::By("team_sync.rs::reviews_decide_what_applies_under_apply_approved_and_the_latest_wins"),
    ),
    (
        r#"ongraph fix review reject 1 --reason "not official yet""#,
        Kept::By("team_sync.rs::reviews_decide_what_applies_under_apply_approved_and_the_latest_wins"),
    ),
    (
        "ongraph fix export --format sparql-update --approved > approved.ru",
        Kept::By("team_sync.rs::approved_corrections_export_as_an_update_the_maintainers_can_apply"),
    ),
    ("mkdir my-prompts", Kept::By("readme.rs::the_prompt_rewrite_commands_run_as_written")),
    ("cp prompts/reasoning.txt my-prompts/", Kept::By("readme.rs::the_prompt_rewrite_commands_run_as_written")),
    (
        r#"ongraph ask --prompts my-prompts --json "What is the majority party now in the country where Canberra is located?" > trace.json"#,
        Kept::By("readme.rs::the_prompt_rewrite_commands_run_as_written"),
    ),
    (
        "cargo run --release -- eval --dataset ../shared/datasets/pathquestion/PQ-2H.txt --llm gold-path --method tog",
        Kept::By("eval.rs::the_binary_runs_summarises_and_compares"),
    ),
    (
        "ongraph eval --dataset ../shared/datasets/tog/cwq.json --kg freebase --llm openai --method tog --sample 200 --seed 1 --concurrency 4 --out runs/cwq-tog",
        Kept::Needs("it needs your own Freebase endpoint and OpenAI-compatible model"),
    ),
];

/// The commands of README.md's `sh` blocks, in order, each with the `# Answer: …` comment line
/// that follows it, if any.
fn readme_commands() -> Vec<(String, Option<String>)> {
    let mut out: Vec<(String, Option<String>)> = Vec::new();
    let mut in_sh = false;
    let mut pending = String::new();
    for line in README.lines() {
        if line.starts_with("```") {
            in_sh = line == "```sh";
            continue;
        }
        if !in_sh {
            continue;
        }
        if let Some(answer) = line.strip_prefix("# Answer: ") {
            let answer = answer.split("   (").next().unwrap_or(answer).trim();
            if let Some(last) = out.last_mut() {
                last.1 = Some(answer.to_string());
            }
            continue;
        }
        let code = strip_comment(line);
        if code.trim().is_empty() {
            continue;
        }
        pending.push_str(code.trim_end().trim_end_matches('\\'));
        pending.push(' ');
        if !code.trim_end().ends_with('\\') {
            out.push((pending.split_whitespace().collect::<Vec<_>>().join(" "), None));
            pending.clear();
        }
    }
    out
}

/// A shell line without its comment: from a `#` after a space, outside quotes.
fn strip_comment(line: &str) -> &str {
    let (mut quote, mut prev) = (None, ' ');
    for (i, c) in line.char_indices() {
        match (quote, c) {
            (None, '"' | '\'') => quote = Some(c),
            (Some(q), c) if c == q => quote = None,
            (None, '#') if prev.is_whitespace() => return &line[..i],
            _ => {}
        }
        prev = c;
    }
    line
}

/// A command's words as a shell splits them (double and single quotes; no expansions).
fn words(command: &str) -> Vec<String> {
    let (mut out, mut word, mut quote, mut any) = (Vec::new(), String::new(), None, false);
    for c in command.chars() {
        match (quote, c) {
            (None, '"' | '\'') => (quote, any) = (Some(c), true),
            (Some(q), c) if c == q => quote = None,
            (None, c) if c.is_whitespace() => {
                if any || !word.is_empty() {
                    out.push(std::mem::take(&mut word));
                }
                any = false;
            }
            (_, c) => word.push(c),
        }
    }
    if any || !word.is_empty() {
        out.push(word);
    }
    out
}

#[test]
fn every_readme_command_is_run_by_a_test_or_marked() {
    let commands = readme_commands();
    assert!(commands.len() >= 15, "the README's sh blocks were read: {commands:?}");
    for (command, _) in &commands {
        let kept = COMMANDS.iter().find(|(c, _)| c == command);
        let Some((_, kept)) = kept else {
            panic!(
                "README.md shows `{command}`, which no test is listed as running: add it to COMMANDS in tests/readme.rs"
            )
        };
        match kept {
            Kept::By(test) => {
                let (file, function) = test.split_once("::").expect("file.rs::function");
                let source =
                    std::fs::read_to_string(Path::new("tests").join(file)).unwrap_or_else(|e| panic!("{test}: {e}"));
                assert!(source.contains(&format!("fn {function}(")), "{test} does not exist (for `{command}`)");
            }
            Kept::Needs(what) => assert!(
                README.contains(&format!("(not run by the tests: {what})")),
                "the README marks `{command}` as needing {what}"
            ),
        }
    }
    for (command, _) in COMMANDS {
        assert!(
            commands.iter().any(|(c, _)| c == command),
            "COMMANDS lists `{command}`, which the README no longer shows"
        );
    }
}

/// The ToG paper's Figure 4 as the README shows it, command by command in a fresh home, each
/// `# Answer:` under a command being its first line.
#[test]
fn the_figure_4_commands_run_as_written() {
    let commands = readme_commands();
    let first =
        commands.iter().position(|(c, _)| c.starts_with("ongraph fix retract")).expect("the Figure 4 block") - 1;
    let block = &commands[first..];
    let end = block.iter().position(|(c, _)| c.starts_with("ongraph fix export")).expect("it ends with an export") + 1;
    let home = tempfile::tempdir().unwrap();
    let mut answers = 0;
    for (command, answer) in &block[..end] {
        let words = words(command);
        let (args, to_file) = match words.iter().position(|w| w == ">") {
            Some(at) => (&words[1..at], words.get(at + 1)),
            None => (&words[1..], None),
        };
        assert_eq!(words[0], "ongraph", "{command}");
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        let out = ongraph(home.path(), &args);
        let stdout = String::from_utf8_lossy(&out.stdout);
        assert_eq!(out.status.code(), Some(0), "{command}: {}", String::from_utf8_lossy(&out.stderr));
        if let Some(answer) = answer {
            assert_eq!(stdout.lines().next(), Some(format!("Answer: {answer}").as_str()), "{command}");
            answers += 1;
        }
        if command == "ongraph fix list" {
            assert_eq!(stdout.lines().count(), 3, "three corrections listed: {stdout}");
        }
        if let Some(file) = to_file {
            assert_eq!(file, "fixes.ru");
            assert!(stdout.starts_with("DELETE DATA {") && stdout.contains("INSERT DATA {"), "{stdout}");
        }
    }
    assert_eq!(answers, 2, "the answer before the fix and after it");
}

/// "What a correction changes" (issue 38): the Phanatic's ballpark replaced, in a fresh home,
/// then `fix impact --rerun` over the demo sessions prints the README's block, line for line.
#[test]
fn the_impact_story_prints_what_the_readme_shows() {
    let commands = readme_commands();
    let first = commands.iter().position(|(c, _)| c.starts_with("ongraph fix replace")).expect("the impact block");
    let home = tempfile::tempdir().unwrap();
    let mut printed = String::new();
    for (command, _) in &commands[first..first + 2] {
        let words = words(command);
        assert_eq!(words[0], "ongraph", "{command}");
        let args: Vec<&str> = words[1..].iter().map(String::as_str).collect();
        let out = ongraph(home.path(), &args);
        assert_eq!(out.status.code(), Some(0), "{command}: {}", String::from_utf8_lossy(&out.stderr));
        printed = String::from_utf8_lossy(&out.stdout).into_owned();
    }
    let at = README.find("### What a correction changes").expect("the section");
    let block = README[at..].split("```text").nth(1).and_then(|b| b.split("```").next()).expect("its output block");
    assert_eq!(printed.trim_end(), block.trim(), "fix impact --rerun printed otherwise");
    assert!(printed.contains("→ BayCare Ballpark  (changes"), "{printed}");
}

/// `ongraph replay --check` on every session in sessions/: each still replays to its trace.
#[test]
fn every_committed_session_replays_to_its_trace() {
    let home = tempfile::tempdir().unwrap();
    let mut checked = 0;
    for entry in std::fs::read_dir("sessions").unwrap() {
        let path = entry.unwrap().path();
        if path.extension().is_some_and(|e| e == "json") {
            let out = ongraph(home.path(), &["replay", "--check", path.to_str().unwrap()]);
            let stdout = String::from_utf8_lossy(&out.stdout);
            assert_eq!(out.status.code(), Some(0), "{}: {}", path.display(), String::from_utf8_lossy(&out.stderr));
            assert!(stdout.contains("same trace"), "{}: {stdout}", path.display());
            checked += 1;
        }
    }
    assert!(checked >= 4, "the demo sessions: {checked}");
}

/// The first command of the README (the main job, `cargo run --release -- ask "…"`) prints what
/// "What `ask` prints" shows: every line of it but the elided ones and the time.
#[test]
fn the_first_command_prints_what_the_readme_shows() {
    let (command, _) = readme_commands().into_iter().next().expect("a first command");
    let words = words(&command);
    assert_eq!(words[..4], ["cargo", "run", "--release", "--"], "{command}");
    let args: Vec<&str> = words[4..].iter().map(String::as_str).collect();
    let home = tempfile::tempdir().unwrap();
    let out = ongraph(home.path(), &args);
    assert_eq!(out.status.code(), Some(0), "{}", String::from_utf8_lossy(&out.stderr));
    let stdout = String::from_utf8_lossy(&out.stdout);
    let printed: Vec<&str> = stdout.lines().collect();
    let at = README.find("## What `ask` prints").expect("the section");
    let block = README[at..].split("```").nth(1).expect("its fenced block");
    let mut shown = 0;
    for line in block.lines().filter(|l| !l.trim().is_empty() && l.trim() != "..." && !l.starts_with("Time: ")) {
        assert!(printed.contains(&line), "the README shows {line:?}; ask printed:\n{stdout}");
        shown += 1;
    }
    assert!(shown >= 4, "the answer, its source, a path and the cost: {block}");
}

/// Every flag the Options synopsis shows for `ongraph ask` is one `ongraph ask --help` names.
#[test]
fn every_option_the_readme_shows_exists() {
    let at = README.find("ongraph ask QUESTION [").expect("the Options synopsis");
    let synopsis = &README[at..at + README[at..].find("```").expect("its end")];
    let home = tempfile::tempdir().unwrap();
    let help = String::from_utf8_lossy(&ongraph(home.path(), &["ask", "--help"]).stdout).into_owned();
    let flags: Vec<&str> = synopsis
        .split(|c: char| !(c.is_ascii_alphanumeric() || c == '-'))
        .filter(|w| w.starts_with("--") && w.len() > 2)
        .collect();
    assert!(flags.len() >= 30, "the synopsis was read: {flags:?}");
    for flag in flags {
        let named = help.split(|c: char| !(c.is_ascii_alphanumeric() || c == '-')).any(|w| w == flag);
        assert!(named, "README's Options show {flag}, which `ongraph ask --help` does not name");
    }
}

#[test]
fn every_option_of_ask_is_in_the_readme_synopsis() {
    // The other way round from the test above: a newcomer reading the Options did not find
    // --scenario, which the README's table and examples use, nor --no-overlay.
    let at = README.find("ongraph ask QUESTION [").expect("the Options synopsis");
    let synopsis = &README[at..at + README[at..].find("```").expect("its end")];
    let home = tempfile::tempdir().unwrap();
    let help = String::from_utf8_lossy(&ongraph(home.path(), &["ask", "--help"]).stdout).into_owned();
    let flags: Vec<&str> = help
        .lines()
        .filter_map(|l| l.trim_start().strip_prefix("-h, ").or(Some(l.trim_start())))
        .filter(|l| l.starts_with("--"))
        .filter_map(|l| l.split(|c: char| !(c.is_ascii_alphanumeric() || c == '-')).next())
        .filter(|f| *f != "--help")
        .collect();
    assert!(flags.len() >= 35, "the help was read: {flags:?}");
    for flag in flags {
        let shown = synopsis.split(|c: char| !(c.is_ascii_alphanumeric() || c == '-')).any(|w| w == flag);
        assert!(shown, "`ongraph ask --help` names {flag}, which README's Options synopsis does not show");
    }
}

/// "Rewriting the prompts" as a newcomer follows it, in a fresh directory: make the directory,
/// copy the template, edit it as the comment says, ask; the edited text is what the trace shows
/// the model was given, at every call of that template and no other.
#[test]
fn the_prompt_rewrite_commands_run_as_written() {
    let commands = readme_commands();
    let first = commands.iter().position(|(c, _)| c == "mkdir my-prompts").expect("the block");
    let work = tempfile::tempdir().unwrap();
    let home = tempfile::tempdir().unwrap();
    let mut asked = false;
    for (command, _) in &commands[first..first + 3] {
        let words = words(command);
        match words[0].as_str() {
            "mkdir" => std::fs::create_dir(work.path().join(&words[1])).unwrap(),
            "cp" => {
                let to = work.path().join(&words[2]).join(Path::new(&words[1]).file_name().unwrap());
                std::fs::copy(&words[1], &to).unwrap();
                // The edit the comment asks for: reworded, the placeholders kept.
                let text = std::fs::read_to_string(&to).unwrap();
                let edited = text.replacen("Given a question", "Reworded: given a question", 1);
                assert!(edited.contains("{{question}}") && edited.contains("{{triples}}"), "{edited}");
                std::fs::write(&to, edited).unwrap();
            }
            "ongraph" => {
                let at = words.iter().position(|w| w == ">").expect("> trace.json");
                let args: Vec<&str> = words[1..at].iter().map(String::as_str).collect();
                let out = common::ongraph_cmd(home.path(), &args).current_dir(work.path()).output().unwrap();
                assert_eq!(out.status.code(), Some(0), "{command}: {}", String::from_utf8_lossy(&out.stderr));
                let trace: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
                let calls: Vec<&serde_json::Value> = trace["trace"]
                    .as_array()
                    .unwrap()
                    .iter()
                    .flat_map(|e| e["calls"].as_array().into_iter().flatten())
                    .collect();
                let reasoning: Vec<&str> =
                    calls.iter().filter(|c| c["step"] == "reasoning").filter_map(|c| c["prompt"].as_str()).collect();
                assert!(!reasoning.is_empty(), "the check ran");
                assert!(reasoning.iter().all(|p| p.starts_with("Reworded: given a question")), "{reasoning:?}");
                assert!(calls.iter().all(|c| c["step"] == "reasoning" || !c.to_string().contains("Reworded")));
                assert!(trace["system_prompt"].as_str().is_some_and(|s| !s.is_empty()), "the system message");
                asked = true;
            }
            other => panic!("a command the test does not know: {other}"),
        }
    }
    assert!(asked, "the block ends with the ask");
}

/// The README's table of which template each method renders is the registry's: every method
/// named once, each row's files its templates, the first row the ones every method shares, and
/// every file in prompts/ named.
#[test]
fn the_table_of_templates_is_the_registrys() {
    let registry = ongraph::engine::Registry::builtin();
    let at = README.find("| methods | templates |").expect("the table");
    let files_in = |cell: &str| -> std::collections::BTreeSet<String> {
        cell.split('`').skip(1).step_by(2).filter(|w| w.ends_with(".txt")).map(str::to_string).collect()
    };
    let names = |ts: &[ongraph::prompts::Template]| -> std::collections::BTreeSet<String> {
        ts.iter().map(|t| format!("{}.txt", t.name())).collect()
    };
    let mut methods_seen = Vec::new();
    let mut every = std::collections::BTreeSet::new();
    let mut all = std::collections::BTreeSet::new();
    for line in README[at..].lines().skip(2).take_while(|l| l.starts_with('|')) {
        let cells = cells(line);
        let files = files_in(&cells[1]);
        all.extend(files.clone());
        if cells[0] == "every method" {
            every = files;
            continue;
        }
        for id in cells[0].split(',').map(|m| m.trim().trim_matches('`')) {
            let entry = registry.entries().iter().find(|e| e.id == id).unwrap_or_else(|| panic!("no method {id}"));
            assert_eq!(files, names(entry.templates), "{id}: {line}");
            methods_seen.push(id.to_string());
        }
    }
    let mut ids: Vec<String> = registry.entries().iter().map(|e| e.id.to_string()).collect();
    ids.sort();
    methods_seen.sort();
    assert_eq!(methods_seen, ids, "every method, once");
    let shared: std::collections::BTreeSet<String> = names(&registry.templates())
        .into_iter()
        .filter(|n| registry.entries().iter().all(|e| !names(e.templates).contains(n)))
        .collect();
    assert_eq!(every, shared, "the templates every method shares");
    let on_disk: std::collections::BTreeSet<String> = std::fs::read_dir("prompts")
        .unwrap()
        .filter_map(|e| e.ok()?.file_name().into_string().ok())
        .filter(|n| n.ends_with(".txt"))
        .collect();
    assert_eq!(all, on_disk, "every file in prompts/ is in the table");
}

/// The README's config example, with every key it shows commented out switched on, is a config
/// ongraph reads: a key it documents and the config does not know would be an error with its line.
#[test]
fn the_config_example_reads_with_every_key_it_shows() {
    let at = README.find("## Pointing it at a real model").expect("the section");
    let start = at + README[at..].find("```toml\n").expect("its config block") + "```toml\n".len();
    let block = &README[start..start + README[start..].find("```").expect("its end")];
    let mut config = String::new();
    let mut live_section = true;
    let mut switched_on = 0;
    for line in block.lines() {
        let bare = line.trim_start_matches('#').trim_start();
        let key = bare.split(['=', ' ']).next().unwrap_or_default();
        if line.starts_with('[') {
            live_section = true;
        } else if line.starts_with("# [") {
            // A section shown commented out: its keys stay comments.
            live_section = false;
        } else if line.starts_with("# ")
            && bare.contains(" = ")
            && key.chars().all(|c| c.is_ascii_lowercase() || c == '_')
        {
            if live_section {
                config.push_str(bare);
                config.push('\n');
                switched_on += 1;
            }
            continue;
        }
        config.push_str(line);
        config.push('\n');
    }
    assert!(switched_on >= 15 && config.contains("\nsend_seed = false"), "{switched_on} keys switched on:\n{config}");
    let home = tempfile::tempdir().unwrap();
    let file = home.path().join("config.toml");
    std::fs::write(&file, &config).unwrap();
    let out = ongraph(home.path(), &["--config", file.to_str().unwrap(), "cache", "stats"]);
    assert!(out.status.success(), "{}\n{config}", String::from_utf8_lossy(&out.stderr));
}
