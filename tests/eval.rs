//! `ongraph eval` on real records (tests/fixtures/pathquestion/eval: 40 PQ-2H questions and
//! their KB; tests/fixtures/gog: GoG's IKG records): interrupted runs resume with no duplicate
//! and nothing skipped, a torn last record is cut off and re-run, failures are counted, each
//! question's hidden triples apply to it alone (GoG IKG sets too), and the binary's summary,
//! compare, Ctrl-C and loopback latency work as a user runs them.

mod common;

use ongraph::engine::{MethodId, Settings};
use ongraph::kg::{KgProfile, KnowledgeGraph, Term};
use ongraph::testing::dataset::{Format, Item, gold_paths, pathquestion};
use ongraph::testing::eval::record::{self, RecordWriter};
use ongraph::testing::eval::{Evaluator, Finished, summarise};
use ongraph::testing::kg::load_file;
use ongraph::testing::llm::{GoldPathModel, OpenAiClient, OpenAiConfig};
use std::collections::BTreeSet;
use std::path::Path;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

const DIR: &str = "tests/fixtures/pathquestion/eval";

fn pq() -> (Arc<dyn KnowledgeGraph>, Vec<Item>) {
    let dir = Path::new(DIR);
    let (graph, _) = load_file(&dir.join("2H-kb.txt"), KgProfile::named_ids(), false).unwrap();
    let items = pathquestion::load(&dir.join("PQ-2H.txt")).unwrap();
    assert_eq!(items.len(), 40);
    (Arc::new(graph), items)
}

fn evaluator(kg: Arc<dyn KnowledgeGraph>, items: &[Item], method: MethodId) -> Evaluator {
    let model = Arc::new(GoldPathModel::new(gold_paths(items)));
    Evaluator::new(kg, model, Arc::new(ongraph::engine::builtin_prompts()), Settings { method, ..Settings::default() })
}

fn indices(path: &Path) -> Vec<usize> {
    record::read(path).unwrap().0.iter().map(|r| r.index).collect()
}

#[tokio::test]
async fn an_interrupted_run_resumes_with_no_duplicate_and_none_skipped() {
    let (kg, items) = pq();
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("records.jsonl");
    let eval = evaluator(kg, &items, MethodId::TOG);
    let all: Vec<(usize, &Item)> = items.iter().enumerate().collect();

    // Interrupted once 12 questions are written (Ctrl-C stands in as a notification).
    let written = AtomicUsize::new(0);
    let stop_now = tokio::sync::Notify::new();
    let (mut writer, before) = RecordWriter::open(&path).unwrap();
    assert!(before.is_empty());
    let finished = eval
        .run(all.clone(), 4, &mut writer, stop_now.notified(), |_| {
            if written.fetch_add(1, Ordering::SeqCst) + 1 == 12 {
                stop_now.notify_one();
            }
        })
        .await
        .unwrap();
    drop(writer);
    assert_eq!(finished, Finished::Interrupted);
    let first = indices(&path);
    assert!(first.len() >= 12 && first.len() < 40, "{}", first.len());

    // The process died while writing a record: half a line at the end.
    let mut text = std::fs::read_to_string(&path).unwrap();
    text.push_str(r#"{"index":39,"id":"line 40","question":"half a rec"#);
    std::fs::write(&path, text).unwrap();

    // Resume: the torn line is cut off, the recorded questions are skipped.
    let (mut writer, done) = RecordWriter::open(&path).unwrap();
    assert_eq!(done.iter().map(|r| r.index).collect::<Vec<_>>(), first);
    let done: BTreeSet<usize> = done.iter().map(|r| r.index).collect();
    let todo: Vec<(usize, &Item)> = all.into_iter().filter(|(i, _)| !done.contains(i)).collect();
    let mut resumed = Vec::new();
    let finished = eval.run(todo, 4, &mut writer, std::future::pending(), |r| resumed.push(r.index)).await.unwrap();
    assert_eq!(finished, Finished::All);
    assert!(resumed.iter().all(|i| !done.contains(i)), "a recorded question ran again");

    let after = indices(&path);
    let unique: BTreeSet<usize> = after.iter().copied().collect();
    assert_eq!(after.len(), 40, "no duplicate");
    assert_eq!(unique, (0..40).collect(), "none skipped");
    let (records, torn) = record::read(&path).unwrap();
    assert_eq!(torn, None);
    let summary = summarise(&records, Some(40));
    assert_eq!((summary.questions, summary.errors), (40, 0));
    assert_eq!(summary.strict.hits, 40, "the gold-path simulation answers every PQ-2H question");
    assert!(summary.llm_calls.mean >= 3.0, "{:?}", summary.llm_calls);
}

#[tokio::test]
async fn a_dead_endpoint_is_counted_as_errors_not_dropped() {
    let (kg, items) = pq();
    let port = std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port();
    let mut config = OpenAiConfig::new(format!("http://127.0.0.1:{port}/v1"), "nobody");
    config.max_retries = 0;
    let llm = Arc::new(OpenAiClient::new(config).unwrap());
    let eval = Evaluator::new(kg, llm, Arc::new(ongraph::engine::builtin_prompts()), Settings::default());
    let dir = tempfile::tempdir().unwrap();
    let (mut writer, _) = RecordWriter::open(&dir.path().join("r.jsonl")).unwrap();
    let mut records = Vec::new();
    let todo: Vec<(usize, &Item)> = items.iter().enumerate().take(5).collect();
    let finished = eval.run(todo, 2, &mut writer, std::future::pending(), |r| records.push(r.clone())).await.unwrap();
    // Three failures in a row: the endpoint went away, and the run stops there (the questions
    // left are not asked, so not counted wrong; --resume asks them).
    assert!(
        matches!(&finished, Finished::EndpointGone { error, .. } if error.contains("cannot reach")),
        "{finished:?}"
    );
    let summary = summarise(&records, Some(5));
    assert_eq!((summary.questions, summary.errors, summary.strict.hits), (3, 3, 0));
    assert_eq!(summary.sources.get("none"), Some(&3));
    assert!(records[0].error.as_deref().unwrap().contains("cannot reach the LLM endpoint"), "{:?}", records[0].error);
}

#[tokio::test]
async fn a_resumed_run_asks_again_the_questions_a_dead_endpoint_failed() {
    let (kg, items) = pq();
    let port = std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port();
    let mut config = OpenAiConfig::new(format!("http://127.0.0.1:{port}/v1"), "nobody");
    config.max_retries = 0;
    let dead = Evaluator::new(
        kg.clone(),
        Arc::new(OpenAiClient::new(config).unwrap()),
        Arc::new(ongraph::engine::builtin_prompts()),
        Settings::default(),
    );
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("records.jsonl");
    let todo: Vec<(usize, &Item)> = items.iter().enumerate().take(4).collect();
    // Two answered, then the server dies for the next two.
    let (mut writer, _) = RecordWriter::open(&path).unwrap();
    evaluator(kg.clone(), &items, MethodId::TOG)
        .run(todo[..2].to_vec(), 1, &mut writer, std::future::pending(), |_| {})
        .await
        .unwrap();
    dead.run(todo[2..].to_vec(), 1, &mut writer, std::future::pending(), |_| {}).await.unwrap();
    drop(writer);
    assert_eq!(record::read(&path).unwrap().0.iter().filter(|r| r.error.is_some()).count(), 2);

    let (mut writer, done) = RecordWriter::open(&path).unwrap();
    let (done, retried) = writer.drop_failed(done).unwrap();
    assert_eq!((done.iter().map(|r| r.index).collect::<Vec<_>>(), retried), (vec![0, 1], 2));
    assert_eq!(indices(&path), vec![0, 1], "the failed records are out of the file");
    let again: Vec<(usize, &Item)> = todo.into_iter().filter(|(i, _)| !done.iter().any(|r| r.index == *i)).collect();
    evaluator(kg, &items, MethodId::TOG).run(again, 1, &mut writer, std::future::pending(), |_| {}).await.unwrap();
    drop(writer);
    let (records, torn) = record::read(&path).unwrap();
    assert_eq!(torn, None);
    assert_eq!(records.iter().map(|r| r.index).collect::<Vec<_>>(), vec![0, 1, 2, 3], "each question once");
    let summary = summarise(&records, Some(4));
    assert_eq!((summary.errors, summary.strict.hits), (0, 4));
}

#[tokio::test]
async fn hidden_triples_apply_to_their_own_question_only() {
    let (kg, mut items) = pq();
    // Hide the first hop of question 1's gold path for question 1 alone.
    let gold = items[0].gold.clone().unwrap();
    let topic = items[0].topics[0].0.clone();
    let (relation, next) = gold.hops[0].clone();
    let next = next.replace(' ', "_");
    let kb = std::fs::read_to_string(Path::new(DIR).join("2H-kb.txt")).unwrap();
    assert!(kb.lines().any(|l| l == format!("{topic}\t{relation}\t{next}")), "the fixture has the triple");
    let hidden = (topic, relation, Term::Entity(next));
    items[0].hidden = vec![hidden];
    let eval = evaluator(kg, &items, MethodId::GOG);
    let hiding = eval.answer(0, &items[0]).await;
    assert_eq!(hiding.hidden_triples, 1);
    // The simulation reads only its prompts: it cannot know, nor write, the hidden hop.
    assert!(!hiding.score.hit, "answered without the hidden hop: {hiding:?}");
    assert!(hiding.generated.is_empty(), "{:?}", hiding.generated);
    // Question 2 starts from the same entity with the same first hop: nothing hidden for it.
    let plain = eval.answer(1, &items[1]).await;
    assert_eq!((plain.hidden_triples, plain.generated.len()), (0, 0));
    assert!(plain.score.hit);
}

#[test]
fn gog_ikg_records_carry_their_hidden_triples() {
    let path = Path::new("tests/fixtures/gog/data_with_ct_0.4.json");
    assert_eq!(Format::detect(path), Some(Format::Gog));
    let items =
        ongraph::testing::dataset::load(path, Format::Gog, ongraph::testing::dataset::tog::TopicIds::Freebase).unwrap();
    let counts: Vec<usize> = items.iter().map(|i| i.hidden.len()).collect();
    assert_eq!(counts, [0, 3, 5]);
    assert_eq!(items[1].answers[0].name, "Belmont University");
    assert_eq!(items[1].topics[0], ("m.010qhfmm".to_string(), Some("Country Nation World Tour".to_string())));
    assert_eq!(
        items[1].hidden[0],
        ("m.01qdhx".to_string(), "common.topic.notable_types".to_string(), Term::Entity("m.01y2hnl".into()))
    );
    assert_eq!(Format::detect(Path::new("tests/fixtures/pathquestion/eval/PQ-2H.txt")), Some(Format::Pathquestion));
    assert_eq!(Format::detect(Path::new("x/cwq.json")), Some(Format::Cwq));
    assert_eq!(Format::detect(Path::new("mine.jsonl")), Some(Format::Jsonl));
}

fn ongraph(home: &Path, args: &[&str]) -> std::process::Output {
    common::ongraph_cmd(home, args).output().expect("the binary runs")
}

#[test]
fn the_binary_runs_summarises_and_compares() {
    let home = tempfile::tempdir().unwrap();
    let out_dir = |name: &str| home.path().join(name).display().to_string();
    let dataset = std::fs::canonicalize(Path::new(DIR).join("PQ-2H.txt")).unwrap().display().to_string();
    let (tog, togr) = (out_dir("tog"), out_dir("togr"));
    let run = |method: &str, out: &str, extra: &[&str]| {
        let mut args = vec!["eval", "--dataset", &dataset, "--llm", "gold-path", "--method", method, "--out", out];
        args.extend_from_slice(extra);
        ongraph(home.path(), &args)
    };
    let o = run("tog", &tog, &["--limit", "10"]);
    let stdout = String::from_utf8_lossy(&o.stdout);
    assert_eq!(o.status.code(), Some(0), "{}", String::from_utf8_lossy(&o.stderr));
    assert!(stdout.contains("Strict       Hits@1 100.0% (10/10; 95% CI 72.2–100.0)"), "{stdout}");
    assert!(stdout.contains("not an LLM's accuracy"), "the simulation is labelled: {stdout}");
    assert!(!stdout.contains('\u{1b}'), "no progress bar when stdout is not a terminal");

    // The same directory again: refused without --resume, extended with it.
    let o = run("tog", &tog, &["--limit", "25"]);
    assert_eq!(o.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&o.stderr).contains("--resume"));
    let o = run("tog", &tog, &["--limit", "25", "--resume", "--json"]);
    assert_eq!(o.status.code(), Some(0), "{}", String::from_utf8_lossy(&o.stderr));
    let summary: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(summary["summary"]["questions"], 25);
    assert_eq!(summary["run"]["simulation"], true);
    assert_eq!(indices(&Path::new(&tog).join("records.jsonl")).len(), 25);
    // Resuming with another method would mix two runs.
    let o = run("tog-r", &tog, &["--limit", "25", "--resume"]);
    assert!(String::from_utf8_lossy(&o.stderr).contains("different settings"));

    // Through the loopback server with a latency per call, two questions at once.
    let o = run("tog-r", &togr, &["--limit", "25", "--latency", "5ms", "--concurrency", "2"]);
    assert_eq!(o.status.code(), Some(0), "{}", String::from_utf8_lossy(&o.stderr));
    let (records, _) = record::read(&Path::new(&togr).join("records.jsonl")).unwrap();
    assert!(records.iter().all(|r| r.error.is_none() && r.wall_ms >= 5 * r.llm_rounds), "latency is felt");

    let o = ongraph(home.path(), &["eval", "compare", &tog, &togr]);
    let text = String::from_utf8_lossy(&o.stdout);
    assert_eq!(o.status.code(), Some(0), "{}", String::from_utf8_lossy(&o.stderr));
    assert!(text.contains("On the 25 questions in both (strict)"), "{text}");
    assert!(text.contains("ToG-R"), "{text}");
    let o = ongraph(home.path(), &["eval", "summary", &togr]);
    assert!(String::from_utf8_lossy(&o.stdout).contains("LLM calls"));

    // --latency is for simulations only; a broken dataset names its line.
    let o = ongraph(home.path(), &["eval", "--dataset", &dataset, "--latency", "5ms", "--llm", "nope"]);
    assert_eq!(o.status.code(), Some(1));
    // A latency that would only hang the run is refused at once.
    let o = ongraph(home.path(), &["eval", "--dataset", &dataset, "--latency", "100000000h", "--llm", "gold-path"]);
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(2), "{err}");
    assert!(err.contains("100000000h is too long: at most 10m a call"), "{err}");
    let broken = home.path().join("PQ-2H.txt");
    std::fs::write(&broken, "q?\tx(x/)\tt#r#x\nbroken line\n").unwrap();
    std::fs::write(home.path().join("2H-kb.txt"), "t\tr\tx\n").unwrap();
    let o = ongraph(home.path(), &["eval", "--dataset", &broken.display().to_string(), "--llm", "gold-path"]);
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(err.contains("PQ-2H.txt:2: expected 3 tab-separated fields"), "{err}");
}

/// Ctrl-C as a user sends it: the binary stops, says how to go on, keeps what it wrote, and
/// `--resume` finishes the run with every question once.
#[test]
fn ctrl_c_keeps_what_was_written_and_resume_finishes() {
    let home = tempfile::tempdir().unwrap();
    let out = home.path().join("run").display().to_string();
    let dataset = std::fs::canonicalize(Path::new(DIR).join("PQ-2H.txt")).unwrap().display().to_string();
    let args =
        ["eval", "--dataset", &dataset, "--llm", "gold-path", "--latency", "40ms", "--concurrency", "2", "--out", &out];
    let child = common::ongraph_cmd(home.path(), &args)
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let records = Path::new(&out).join("records.jsonl");
    let started = std::time::Instant::now();
    while std::fs::read_to_string(&records).map_or(0, |t| t.lines().count()) < 3 {
        assert!(started.elapsed() < std::time::Duration::from_secs(60), "no record written");
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    let killed = std::process::Command::new("kill").args(["-INT", &child.id().to_string()]).status().unwrap();
    assert!(killed.success());
    let o = child.wait_with_output().unwrap();
    assert_eq!(o.status.code(), Some(130), "{}", String::from_utf8_lossy(&o.stderr));
    assert!(String::from_utf8_lossy(&o.stderr).contains("--resume"));
    let first = indices(&records);
    assert!(first.len() >= 3 && first.len() < 40, "{}", first.len());
    assert!(String::from_utf8_lossy(&o.stdout).contains(&format!("{} of 40", first.len())));

    let mut resume = args.to_vec();
    resume.push("--resume");
    let o = ongraph(home.path(), &resume);
    assert_eq!(o.status.code(), Some(0), "{}", String::from_utf8_lossy(&o.stderr));
    let all = indices(&records);
    assert_eq!(all.len(), 40, "no duplicate");
    assert_eq!(all.iter().copied().collect::<BTreeSet<_>>(), (0..40).collect(), "none skipped");
    assert!(all.starts_with(&first), "what was written stays as it was");
}

/// A GoG incomplete-KG set through the binary (a record in GoG's layout over the demo KG):
/// the dropped edge is hidden for its question, GoG generates it and answers; the same record
/// with nothing dropped answers from the KG and generates nothing.
#[test]
fn a_gog_ikg_set_hides_each_questions_edges() {
    let home = tempfile::tempdir().unwrap();
    let record = |dropped: &str| {
        format!(
            r#"[{{"ID": "demo-apple", "index": 0, "question": "In which time zone is the headquarters of Apple Inc.?", "answer": ["Pacific Time Zone"], "topic_entity": {{}}, "mid_crucial_triples": [{dropped}]}}]"#
        )
    };
    let run = |file: &str, dropped: &str| {
        let path = home.path().join(file);
        std::fs::write(&path, record(dropped)).unwrap();
        let out = home.path().join(format!("out-{file}"));
        let (d, o) = (path.display().to_string(), out.display().to_string());
        let args = ["eval", "--dataset", &d, "--kg", "demo", "--llm", "demo", "--method", "gog", "--out", &o];
        let output = ongraph(home.path(), &args);
        assert_eq!(output.status.code(), Some(0), "{}", String::from_utf8_lossy(&output.stderr));
        record::read(&out.join("records.jsonl")).unwrap().0.remove(0)
    };
    let ikg = run("data_with_ct_0.4.json", r#"["m.cupertino", "location.location.time_zones", "m.pacific_tz"]"#);
    assert_eq!((ikg.hidden_triples, ikg.score.hit), (1, true), "{ikg:?}");
    assert_eq!(ikg.generated, ["Cupertino, location.location.time_zones, Pacific Time Zone"]);
    let complete = run("data_with_ct_0.json", "");
    assert_eq!((complete.hidden_triples, complete.score.hit), (0, true), "{complete:?}");
    assert!(complete.generated.is_empty(), "the KG has the edge: {complete:?}");
}

/// An evaluator as `eval --with-corrections --llm demo` builds it, over the demo KG and a
/// correction store in `dir` (returned: another process's writes go there).
fn eval_with_corrections(dir: &std::path::Path) -> (Evaluator, std::path::PathBuf) {
    use ongraph::testing::overlay::LiveOverlay;
    let path = dir.join("overlay");
    let mut config = ongraph::testing::config::Config::default();
    config.defaults.overlay = Some(path.clone());
    let base: Arc<dyn KnowledgeGraph> = Arc::new(ongraph::testing::kg::demo_graph());
    let live = Arc::new(LiveOverlay::open(base, &config, &Default::default(), true).unwrap());
    let model = ongraph::testing::llm::ScriptedModel::from_toml("demo", common::DEMO_SCRIPT).unwrap();
    let eval = Evaluator::new(
        live.current().kg,
        Arc::new(model),
        Arc::new(ongraph::engine::builtin_prompts()),
        Settings::default(),
    )
    .with_kg_source(live);
    (eval, path)
}

/// `eval --with-corrections`: each question sees the corrections as the store holds them when
/// it starts, so a correction made (or undone) by another process during a long run applies to
/// the questions after it.
#[tokio::test]
async fn each_question_sees_the_corrections_as_they_are_when_it_starts() {
    use ongraph::testing::eval::GoldAnswer;
    use ongraph::testing::overlay::{CorrectionStore, SledStore};
    use ongraph::testing::overlay::{Draft, Op};
    let dir = tempfile::tempdir().unwrap();
    let (eval, path) = eval_with_corrections(dir.path());
    let item = Item {
        id: "phanatic".into(),
        question: "Which ballpark hosts spring training for the team whose mascot is the Phillie Phanatic?".into(),
        answers: vec![GoldAnswer::new("BayCare Ballpark")],
        topics: Vec::new(),
        topics_named: false,
        hops: None,
        gold: None,
        hidden: Vec::new(),
    };
    let before = eval.answer(0, &item).await;
    assert_eq!(before.prediction, ["Bright House Field"], "{:?}", before.error);
    let none = before.corrections.clone().expect("the record says which corrections it saw");
    assert_eq!(none.active, 0);

    // Another process corrects the stadium while the run goes on.
    let replace = Op::Replace {
        subject: "m.phillies".into(),
        relation: "baseball.baseball_team.spring_training_stadium".into(),
        old: Term::Entity("m.bright_house_field".into()),
        new: Term::Entity("new.baycare_ballpark".into()),
        label: Some("BayCare Ballpark".into()),
    };
    let draft = Draft {
        op: replace,
        reason: "Renamed".into(),
        generated: false,
        author: "t".into(),
        context: None,
        origin: None,
    };
    let id = SledStore::open(&path).unwrap().add("demo", draft).unwrap().id;
    let after = eval.answer(1, &item).await;
    assert_eq!(after.prediction, ["BayCare Ballpark"], "{:?}", after.error);
    assert!(after.score.hit);
    let one = after.corrections.clone().unwrap();
    assert_eq!(one.active, 1);
    assert_ne!(one.digest, none.digest);
    assert!(one.generation > none.generation);

    // And undoes it: the same (no) corrections as the first question, later in the store.
    SledStore::open(&path).unwrap().undo("demo", id).unwrap();
    let undone = eval.answer(2, &item).await;
    assert_eq!(undone.prediction, ["Bright House Field"]);
    let again = undone.corrections.clone().unwrap();
    assert_eq!((again.active, &again.digest), (0, &none.digest));
    assert!(again.generation > one.generation);

    // The summary says the questions were answered under two sets.
    let summary = summarise(&[before, after, undone], Some(3));
    let counts: Vec<_> = summary.corrections.iter().map(|g| (g.active, g.questions)).collect();
    assert_eq!(counts, [(0, 2), (1, 1)]);
    assert!(summary.render().contains("answered under 2 different sets of corrections"), "{}", summary.render());
}

/// A question's hidden triples (GoG's incomplete-KG sets) hide the KG's own triples, never one
/// a correction asserted: under `eval --with-corrections` a user who restored a fact the
/// scenario removes sees it, as `ask` and the UI do.
#[tokio::test]
async fn a_question_s_hidden_triples_never_hide_what_a_correction_asserted() {
    use ongraph::testing::eval::GoldAnswer;
    use ongraph::testing::overlay::{CorrectionStore, SledStore};
    use ongraph::testing::overlay::{Draft, Op};
    let dir = tempfile::tempdir().unwrap();
    let (eval, path) = eval_with_corrections(dir.path());
    let (subject, relation, object) = (
        "m.phillies".to_string(),
        "baseball.baseball_team.spring_training_stadium".to_string(),
        Term::Entity("m.bright_house_field".into()),
    );
    let item = Item {
        id: "phanatic".into(),
        question: "Which ballpark hosts spring training for the team whose mascot is the Phillie Phanatic?".into(),
        answers: vec![GoldAnswer::new("Bright House Field")],
        topics: Vec::new(),
        topics_named: false,
        hops: None,
        gold: None,
        hidden: vec![(subject.clone(), relation.clone(), object.clone())],
    };
    let hidden = eval.answer(0, &item).await;
    assert!(!hidden.score.hit, "the scenario hides the stadium: {hidden:?}");
    assert_eq!(hidden.hidden_triples, 1);

    // The user asserts the fact the scenario hides.
    let draft = Draft {
        op: Op::Assert { subject, relation, object },
        reason: "It is the stadium".into(),
        generated: false,
        author: "t".into(),
        context: None,
        origin: None,
    };
    SledStore::open(&path).unwrap().add("demo", draft).unwrap();
    let restored = eval.answer(1, &item).await;
    assert_eq!(restored.prediction, ["Bright House Field"], "{:?}", restored.error);
    assert_eq!(restored.corrections.map(|c| c.active), Some(1));
}

/// `eval --with-corrections --resume` after a correction was made elsewhere: said in one line,
/// not refused, and the summary counts the records under each set. Without corrections the
/// records say nothing of them.
#[test]
fn a_resume_under_changed_corrections_says_so() {
    let home = tempfile::tempdir().unwrap();
    let question = "Which ballpark hosts spring training for the team whose mascot is the Phillie Phanatic?";
    let record = |i: usize| {
        format!(
            r#"{{"ID": "q{i}", "index": {i}, "question": "{question}", "answer": ["BayCare Ballpark"], "topic_entity": {{}}, "mid_crucial_triples": []}}"#
        )
    };
    let dataset = home.path().join("data_with_ct_0.json");
    std::fs::write(&dataset, format!("[{}, {}, {}]", record(0), record(1), record(2))).unwrap();
    let (d, out) = (dataset.display().to_string(), home.path().join("run"));
    let o = out.display().to_string();
    let run = |extra: &[&str]| {
        let mut args = vec!["eval", "--dataset", &d, "--kg", "demo", "--llm", "demo", "--out", &o];
        args.extend_from_slice(extra);
        let output = ongraph(home.path(), &args);
        assert_eq!(output.status.code(), Some(0), "{}", String::from_utf8_lossy(&output.stderr));
        (String::from_utf8_lossy(&output.stdout).into_owned(), String::from_utf8_lossy(&output.stderr).into_owned())
    };
    let (stdout, stderr) = run(&["--with-corrections", "--limit", "1"]);
    assert!(!stderr.contains("note:") && !stdout.contains("Corrections"), "{stderr}{stdout}");
    // Nothing changed: resumed without a note.
    let (_, stderr) = run(&["--with-corrections", "--limit", "2", "--resume"]);
    assert!(!stderr.contains("note:"), "{stderr}");

    let fixed =
        ongraph(home.path(), &["fix", "relabel", "m.bright_house_field", "BayCare Ballpark", "--reason", "Renamed"]);
    assert!(fixed.status.success(), "{}", String::from_utf8_lossy(&fixed.stderr));
    let (stdout, stderr) = run(&["--with-corrections", "--limit", "3", "--resume"]);
    let notes: Vec<&str> = stderr.lines().filter(|l| l.starts_with("note:")).collect();
    assert_eq!(notes.len(), 1, "{stderr}");
    assert!(notes[0].contains("the corrections changed since 2 of the 2 records being resumed"), "{stderr}");
    assert!(notes[0].contains("1 active"), "{stderr}");
    assert!(stdout.contains("answered under 2 different sets of corrections"), "{stdout}");
    let (records, _) = record::read(&out.join("records.jsonl")).unwrap();
    let active: Vec<usize> = records.iter().map(|r| r.corrections.as_ref().unwrap().active).collect();
    assert_eq!(active, [0, 0, 1]);
    let o2 = ongraph(home.path(), &["eval", "summary", &o]);
    assert!(String::from_utf8_lossy(&o2.stdout).contains("2 question(s)  0 active"));

    // Whether corrections apply at all is a setting: a resume that changes it is refused.
    let args = ["eval", "--dataset", &d, "--kg", "demo", "--llm", "demo", "--out", &o, "--limit", "3", "--resume"];
    let refused = ongraph(home.path(), &args);
    assert_eq!(refused.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&refused.stderr).contains("different settings"));
    // Without corrections a record says nothing of them.
    let plain = home.path().join("plain").display().to_string();
    let output = ongraph(home.path(), &["eval", "--dataset", &d, "--kg", "demo", "--llm", "demo", "--out", &plain]);
    assert!(output.status.success(), "{}", String::from_utf8_lossy(&output.stderr));
    let (records, _) = record::read(&Path::new(&plain).join("records.jsonl")).unwrap();
    assert!(records.iter().all(|r| r.corrections.is_none()));
}

/// Issue 34: the fixed splits. A file of 40 questions is all dev (its dev split is a sample
/// of 50), so it has no test split, and says so; the dev split runs, and is named in the
/// summary.
#[test]
fn splits_run_and_a_file_too_small_for_a_test_split_says_so() {
    let home = tempfile::tempdir().unwrap();
    let dataset = Path::new(DIR).join("PQ-2H.txt").display().to_string();
    let out = home.path().join("dev").display().to_string();
    let o = ongraph(
        home.path(),
        &["eval", "--dataset", &dataset, "--llm", "gold-path", "--split", "dev", "--take", "5", "--out", &out],
    );
    let stdout = String::from_utf8_lossy(&o.stdout);
    assert_eq!(o.status.code(), Some(0), "{}", String::from_utf8_lossy(&o.stderr));
    assert!(stdout.contains("(dev split)") && stdout.contains("(5/5; 95% CI"), "{stdout}");
    assert_eq!(indices(&Path::new(&out).join("records.jsonl")).len(), 5);
    let o = ongraph(home.path(), &["eval", "--dataset", &dataset, "--llm", "gold-path", "--split", "test"]);
    let stderr = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(1), "{stderr}");
    assert!(stderr.contains("has 40 question(s): its dev split takes them all and leaves no test split"), "{stderr}");
    let o =
        ongraph(home.path(), &["eval", "--dataset", &dataset, "--llm", "gold-path", "--split", "dev", "--sample", "3"]);
    assert_eq!(o.status.code(), Some(2), "--split and --sample conflict");
    // No question at all is said as such (found by a review: it said the file had no test split).
    let o =
        ongraph(home.path(), &["eval", "--dataset", &dataset, "--llm", "gold-path", "--split", "dev", "--take", "0"]);
    let stderr = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(1), "{stderr}");
    assert!(stderr.contains("--take 0 chooses no question: give at least 1"), "{stderr}");
    // A run is resumed only as the questions it chose: a refused resume asks nothing.
    let refused = |chosen: &[&str], out: &str, recorded: usize| {
        let args = [&["eval", "--dataset", &dataset, "--llm", "gold-path", "--out", out, "--resume"], chosen].concat();
        let o = ongraph(home.path(), &args);
        let stderr = String::from_utf8_lossy(&o.stderr);
        assert_eq!(o.status.code(), Some(1), "{chosen:?}: {stderr}");
        assert!(stderr.contains("different settings, so --resume would mix two runs"), "{chosen:?}: {stderr}");
        assert_eq!(indices(&Path::new(out).join("records.jsonl")).len(), recorded, "{chosen:?}: nothing asked");
    };
    refused(&["--sample", "5"], &out, 5);
    // Nor a sample as a split (found by a review: it was taken, and the records mixed both).
    let sampled = home.path().join("sampled").display().to_string();
    let args = ["eval", "--dataset", &dataset, "--llm", "gold-path", "--sample", "3", "--out", &sampled];
    assert_eq!(ongraph(home.path(), &args).status.code(), Some(0));
    refused(&["--split", "dev"], &sampled, 3);
    refused(&["--sample", "4"], &sampled, 3);
}

/// Issue 34: an eval whose model endpoint goes away stops after three questions in a row fail
/// on it, with one line naming the question and the command that goes on; it does not count
/// the rest wrong.
#[test]
fn an_endpoint_that_goes_away_stops_the_run_with_the_command_that_resumes_it() {
    let home = tempfile::tempdir().unwrap();
    let port = std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port();
    let config = home.path().join("config.toml");
    std::fs::write(
        &config,
        format!(
            "[llm.gone]\nbase_url = \"http://127.0.0.1:{port}/v1\"\nmodel = \"m\"\ntimeout_secs = 5\nmax_retries = 0\n"
        ),
    )
    .unwrap();
    let dataset = Path::new(DIR).join("PQ-2H.txt").display().to_string();
    let out = home.path().join("gone").display().to_string();
    let o = ongraph(
        home.path(),
        &[
            "--config",
            config.to_str().unwrap(),
            "eval",
            "--dataset",
            &dataset,
            "--llm",
            "gone",
            "--concurrency",
            "1",
            "--out",
            &out,
        ],
    );
    let stderr = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(1), "{stderr}");
    let line = stderr.lines().find(|l| l.starts_with("stopped:")).unwrap_or_else(|| panic!("{stderr}"));
    assert!(
        line.starts_with("stopped: the model's endpoint failed on 3 questions in a row, from question 1 (line 1) on: cannot reach the LLM endpoint"),
        "{line}"
    );
    assert!(line.ends_with(&format!("--out {out} --resume")), "{line}");
    assert_eq!(indices(&Path::new(&out).join("records.jsonl")).len(), 3, "the rest were not asked");
}

/// Issue 36: off the demo, the UI's first screen suggests a question the KG can answer, made of
/// one of its own named entities and relations.
#[test]
fn a_kg_suggests_a_question_about_its_own_entities() {
    let (kg, _) = pq();
    let (entity, relation) = kg.example_fact().expect("a named entity with a relation");
    assert_eq!((entity.as_str(), relation.as_str()), ("philippe ii duke of orleans", "gender"));
    assert_eq!(
        ongraph::testing::tui::suggestion_from(&entity, &relation),
        "What is the gender of philippe ii duke of orleans?"
    );
    assert_eq!(
        ongraph::testing::tui::suggestion_from("Canberra", "location.location.containedby"),
        "What is the containedby of Canberra?"
    );
    assert_eq!(ongraph::testing::tui::suggestion_from("ludwig", "parents"), "What are the parents of ludwig?");
    assert_eq!(ongraph::testing::tui::suggestion_from("x", "people.person.status"), "What is the status of x?");
}
