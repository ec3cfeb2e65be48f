//! `fix impact` (issue 38): the kept runs a correction touches. Correct by construction: on a
//! generated PathQuestion-shaped KB of 1,200 two-hop questions, answered by ToG with the
//! gold-path simulation, random corrections (retract, assert, relabel, replace) are applied
//! one at a time and every question is asked again: every run whose answer changes is in the
//! impact list (recall 100%); how many listed runs kept their answer is printed (precision).

mod common;

use ongraph::engine::{Footprint, MethodId, Run, Settings, Topics};
use ongraph::kg::{KgProfile, KnowledgeGraph, Term};
use ongraph::testing::dataset::{Item, gold_paths, pathquestion};
use ongraph::testing::driver::Driver;
use ongraph::testing::impact::touch;
use ongraph::testing::kg::load_file;
use ongraph::testing::llm::GoldPathModel;
use ongraph::testing::overlay::{Correction, Op, OverlayKg};
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use std::collections::BTreeSet;
use std::fmt::Write as _;
use std::sync::Arc;

const SYLLABLES: &[&str] = &["ka", "lo", "mi", "ren", "sa", "tor", "vel", "an", "bri", "dus", "el", "fio"];

/// A KB of people, cities and countries, and two-hop questions over it with their gold paths,
/// as PathQuestion writes them.
fn generated(people: usize) -> (String, String) {
    let mut rng = ChaCha8Rng::seed_from_u64(38);
    let word = |rng: &mut ChaCha8Rng, parts: usize| -> String {
        (0..parts).map(|_| SYLLABLES[rng.random_range(0..SYLLABLES.len())]).collect()
    };
    let countries: Vec<String> = (0..12).map(|i| format!("{}_land_{i}", word(&mut rng, 2))).collect();
    let cities: Vec<String> = (0..40).map(|i| format!("{}_city_{i}", word(&mut rng, 2))).collect();
    let persons: Vec<String> =
        (0..people).map(|i| format!("{}_{}_{i}", word(&mut rng, 2), word(&mut rng, 3))).collect();
    let (mut kb, mut questions) = (String::new(), String::new());
    let mut city_country = Vec::new();
    for city in &cities {
        let country = &countries[rng.random_range(0..countries.len())];
        writeln!(kb, "{city}\tlocated_in\t{country}").unwrap();
        city_country.push(country.clone());
    }
    for (i, person) in persons.iter().enumerate() {
        let spouse = &persons[(i + 1 + rng.random_range(0..people - 1)) % people];
        let child = &persons[(i + 1 + rng.random_range(0..people - 1)) % people];
        let nationality = &countries[rng.random_range(0..countries.len())];
        let born = rng.random_range(0..cities.len());
        writeln!(kb, "{person}\tspouse\t{spouse}").unwrap();
        writeln!(kb, "{person}\tchild\t{child}").unwrap();
        writeln!(kb, "{person}\tnationality\t{nationality}").unwrap();
        writeln!(kb, "{person}\tborn_in\t{}", cities[born]).unwrap();
        writeln!(kb, "{person}\tgender\t{}", if i % 2 == 0 { "male" } else { "female" }).unwrap();
        // A second spouse now and then: a choice the search has to make.
        if i % 5 == 0 {
            writeln!(kb, "{person}\tspouse\t{}", persons[(i + 7) % people]).unwrap();
        }
    }
    // The facts the questions' second hops read, as the KB holds them.
    let fact = |kb: &str, s: &str, r: &str| -> Option<String> {
        kb.lines().find_map(|l| {
            let mut parts = l.split('\t');
            (parts.next() == Some(s) && parts.next() == Some(r)).then(|| parts.next().unwrap().to_string())
        })
    };
    for person in &persons {
        let spouse = fact(&kb, person, "spouse").unwrap();
        let child = fact(&kb, person, "child").unwrap();
        let city = fact(&kb, person, "born_in").unwrap();
        let asked = [
            (format!("what is the nationality of {person} 's spouse ?"), "spouse", spouse.clone(), "nationality"),
            (format!("where was {person} 's child born ?"), "child", child.clone(), "born_in"),
            (format!("which country is {person} 's birthplace in ?"), "born_in", city.clone(), "located_in"),
        ];
        for (question, first, middle, second) in asked {
            let answer = fact(&kb, &middle, second).unwrap();
            writeln!(
                questions,
                "{question}\t{answer}({answer}/)\t{person}#{first}#{middle}#{second}#{answer}#<end>#{answer}"
            )
            .unwrap();
        }
    }
    (kb, questions)
}

fn correction(id: u64, op: Op) -> Correction {
    Correction {
        id,
        kg: "kb".into(),
        op,
        reason: "test".into(),
        generated: None,
        author: "tester".into(),
        created: "2026-11-27T00:00:00Z".into(),
        active: true,
        context: None,
        history: vec![],
        team: None,
    }
}

/// Every question answered over `kg`: its answers and what its run read.
async fn answer_all(
    kg: Arc<dyn KnowledgeGraph>,
    items: &[Item],
    model: Arc<GoldPathModel>,
) -> Vec<(Vec<String>, Footprint)> {
    let driver = Driver::new(kg.clone(), model);
    let mut out = Vec::with_capacity(items.len());
    for item in items {
        let mut run = Run::new(
            &item.question,
            Topics::Linked(item.topics.clone()),
            Settings { method: MethodId::TOG, ..Settings::default() },
            Arc::new(ongraph::engine::builtin_prompts()),
            kg.profile().clone(),
            kg.name(),
        )
        .unwrap();
        driver.run(&mut run, |_, _| {}).await.unwrap();
        out.push((run.answer().map(|a| a.answers.clone()).unwrap_or_default(), run.footprint()));
    }
    out
}

/// Random corrections of every kind, each aimed at what one random kept run read: a fact its
/// answer rests on, a candidate next to its path, a name it was shown, or anywhere in the KB.
fn corrections(kb: &str, kept: &[(Vec<String>, Footprint)], rng: &mut ChaCha8Rng, each: usize) -> Vec<Op> {
    let triples: Vec<Vec<&str>> = kb.lines().map(|l| l.split('\t').collect()).collect();
    let entities: Vec<&str> = triples.iter().flat_map(|t| [t[0], t[2]]).collect::<BTreeSet<_>>().into_iter().collect();
    let pick = |rng: &mut ChaCha8Rng, n: usize| rng.random_range(0..n);
    let mut ops = Vec::new();
    for _ in 0..each {
        let footprint = &kept[pick(rng, kept.len())].1;
        let rests_on: Vec<_> = footprint.rests_on.iter().collect();
        // Names it was shown off the path its answer rests on.
        let on_path: BTreeSet<&str> = footprint.rests_on.iter().flat_map(|f| [f.0.as_str(), f.2.as_str()]).collect();
        let named: Vec<_> = footprint.named.iter().filter(|e| !on_path.contains(e.as_str())).collect();
        let anywhere = &triples[pick(rng, triples.len())];
        let (s, r, o) = match rests_on.get(pick(rng, rests_on.len().max(1))) {
            Some(f) if rng.random_bool(0.7) => (f.0.as_str(), f.1.as_str(), f.2.as_str()),
            _ => (anywhere[0], anywhere[1], anywhere[2]),
        };
        ops.push(Op::Retract { subject: s.into(), relation: r.into(), object: Term::Entity(o.into()) });
        let new = entities[pick(rng, entities.len())];
        ops.push(Op::Replace {
            subject: s.into(),
            relation: r.into(),
            old: Term::Entity(o.into()),
            new: Term::Entity(new.into()),
            label: None,
        });
        // A new candidate beside the path (or anywhere).
        let lookup = footprint.neighbours.iter().nth(pick(rng, footprint.neighbours.len().max(1)));
        let (subject, relation) = match lookup {
            Some(l) if l.2 == ongraph::kg::Direction::Out => (l.0.as_str(), l.1.as_str()),
            _ => (anywhere[0], anywhere[1]),
        };
        ops.push(Op::Assert { subject: subject.into(), relation: relation.into(), object: Term::Entity(new.into()) });
        // A name it was shown, renamed as the entity its answer rests on (two now answer to
        // it), or to a name of its own.
        let entity = named.get(pick(rng, named.len().max(1))).map_or(anywhere[2], |e| e.as_str());
        let label = match rests_on.get(pick(rng, rests_on.len().max(1))) {
            Some(f) if rng.random_bool(0.7) => f.2.replace('_', " "),
            _ => format!("renamed {}", pick(rng, 1000)),
        };
        ops.push(Op::Relabel { entity: entity.into(), label });
    }
    ops
}

#[tokio::test]
#[allow(clippy::print_stderr)] // the precision is its report (cargo shows it with --nocapture)
async fn every_run_a_correction_changes_is_in_its_impact_list() {
    let dir = tempfile::tempdir().unwrap();
    let (kb, questions) = generated(340);
    std::fs::write(dir.path().join("kb.txt"), &kb).unwrap();
    std::fs::write(dir.path().join("questions.txt"), &questions).unwrap();
    let (graph, _) = load_file(&dir.path().join("kb.txt"), KgProfile::named_ids(), false).unwrap();
    let base: Arc<dyn KnowledgeGraph> = Arc::new(graph);
    let items = pathquestion::load(&dir.path().join("questions.txt")).unwrap();
    assert!(items.len() >= 1_000, "{} questions", items.len());
    let model = Arc::new(GoldPathModel::new(gold_paths(&items)));
    let kept = answer_all(base.clone(), &items, model.clone()).await;
    let answered = kept.iter().filter(|(a, _)| !a.is_empty()).count();
    assert!(answered * 10 >= items.len() * 9, "the simulation answers most questions: {answered}");

    let mut rng = ChaCha8Rng::seed_from_u64(7);
    let (mut changed_total, mut listed_total, mut rests_on_changed) = (0, 0, 0);
    let mut changed_by_kind = std::collections::BTreeMap::<&str, usize>::new();
    for (i, op) in corrections(&kb, &kept, &mut rng, 4).into_iter().enumerate() {
        let kind = match &op {
            Op::Retract { .. } => "retract",
            Op::Assert { .. } => "assert",
            Op::Relabel { .. } => "relabel",
            Op::Replace { .. } => "replace",
        };
        let seen: Arc<dyn KnowledgeGraph> =
            Arc::new(OverlayKg::new(base.clone(), &[correction(i as u64 + 1, op.clone())]));
        let again = answer_all(seen, &items, model.clone()).await;
        let mut listed = 0;
        for (q, ((before, footprint), (after, _))) in kept.iter().zip(&again).enumerate() {
            let reach = touch(&op, footprint);
            listed += usize::from(reach.is_some());
            if before != after {
                changed_total += 1;
                *changed_by_kind.entry(kind).or_default() += 1;
                assert!(
                    reach.is_some(),
                    "{op:?} changed {:?} ({before:?} → {after:?}) but its impact list leaves it out",
                    items[q].question
                );
                rests_on_changed += usize::from(reach == Some(ongraph::testing::impact::Touch::RestsOn));
            }
        }
        listed_total += listed;
    }
    // Retracts, replacements and relabels changed answers (an assertion adds a candidate the simulation, choosing along the gold path,
    // passes over: it is checked all the same).
    for kind in ["retract", "replace", "relabel"] {
        assert!(changed_by_kind.get(kind).is_some_and(|n| *n > 0), "{kind}: {changed_by_kind:?}");
    }
    eprintln!(
        "impact recall 100%: {changed_total} changed answers {changed_by_kind:?}, all listed ({rests_on_changed} as \
         resting on the correction); {listed_total} listed in all, {} of them unchanged",
        listed_total - changed_total
    );
}

/// `ongraph eval` of the gold-path simulation over the first `limit` questions of the
/// PathQuestion fixture, into `out` (going on with `resume`).
/// `fix retract` of the first question's second hop (Ernest Augustus I's nationality) on `kb`.
fn retract_nationality(kb: &str) -> [&str; 9] {
    ["fix", "retract", "ernest_augustus_i_of_hanover", "nationality", "united_kingdom", "--reason", "test", "--kg", kb]
}

fn gold_path_eval(home: &std::path::Path, limit: usize, out: &std::path::Path, resume: bool) {
    gold_path_eval_on("tests/fixtures/pathquestion/eval/2H-kb.txt", home, limit, out, resume);
}

fn gold_path_eval_on(kb: &str, home: &std::path::Path, limit: usize, out: &std::path::Path, resume: bool) {
    let more: &[&str] = if resume { &["--resume"] } else { &[] };
    let (code, _, err) = gold_path_eval_with(kb, home, limit, out, more);
    assert_eq!(code, 0, "{err}");
}

/// `ongraph eval` of the first `limit` PQ-2H fixture questions on `kb` with the gold-path
/// simulation into `out`, with `more` options: its exit code, stdout and stderr.
fn gold_path_eval_with(
    kb: &str,
    home: &std::path::Path,
    limit: usize,
    out: &std::path::Path,
    more: &[&str],
) -> (i32, String, String) {
    let limit = limit.to_string();
    let dataset = "tests/fixtures/pathquestion/eval/PQ-2H.txt";
    let out = out.to_str().unwrap();
    let args = ["eval", "--dataset", dataset, "--kg", kb, "--llm", "gold-path", "--limit", &limit, "--out", out];
    ongraph(home, &[&args[..], more].concat())
}

fn ongraph(home: &std::path::Path, args: &[&str]) -> (i32, String, String) {
    let out = common::ongraph_cmd(home, args).output().expect("the binary runs");
    let text = |b: &[u8]| String::from_utf8_lossy(b).into_owned();
    (out.status.code().unwrap_or(-1), text(&out.stdout), text(&out.stderr))
}

/// Runs keep their KG's canonical file: a copy of the KB elsewhere, of the same file name, is
/// another KG, and its runs are left out and counted, never listed.
#[test]
fn a_kb_of_the_same_name_elsewhere_is_another_kg() {
    let home = tempfile::tempdir().unwrap();
    let runs = home.path().join("runs");
    let kb = "tests/fixtures/pathquestion/eval/2H-kb.txt";
    gold_path_eval(home.path(), 2, &runs.join("here"), false);
    let copy = home.path().join("copy/2H-kb.txt");
    std::fs::create_dir_all(copy.parent().unwrap()).unwrap();
    std::fs::copy(kb, &copy).unwrap();
    gold_path_eval_on(copy.to_str().unwrap(), home.path(), 2, &runs.join("there"), false);
    let retract = retract_nationality(kb);
    let (code, _, err) = ongraph(home.path(), &retract);
    assert_eq!(code, 0, "{err}");
    let (code, out, err) = ongraph(home.path(), &["fix", "impact", "1", "--runs", runs.to_str().unwrap(), "--kg", kb]);
    assert_eq!(code, 0, "{err}");
    assert!(out.contains("runs/here/records.jsonl #0") && !out.contains("runs/there"), "{out}");
    let last = out.lines().last().unwrap();
    assert!(last.starts_with("2 of 2 kept runs touched (in ") && last.ends_with("; 2 of other KGs left out)"), "{out}");
    // Nor does a run on one go on with the other's questions.
    let (code, _, err) = gold_path_eval_with(copy.to_str().unwrap(), home.path(), 3, &runs.join("here"), &["--resume"]);
    assert_eq!(code, 1, "{err}");
    assert!(err.contains("was run with different settings"), "{err}");

    // A run's records rewritten after the index read them (an eval resumed meanwhile): the
    // offsets it holds are stale, and the file is read whole instead.
    use ongraph::testing::impact::Kept;
    let places = vec![runs.join("here")];
    let kept = Kept::open(&home.path().join("impact-index"), &places);
    let records = runs.join("here/records.jsonl");
    let text = std::fs::read_to_string(&records).unwrap();
    let rest: String = text.lines().skip(1).map(|l| format!("{l}\n")).collect();
    std::fs::write(&records, format!("\n\n{rest}")).unwrap();
    let retract = Op::Retract {
        subject: "ernest_augustus_i_of_hanover".into(),
        relation: "nationality".into(),
        object: Term::Entity("united_kingdom".into()),
    };
    let found: Vec<usize> = kept.touched(&retract, &[], |_| true).iter().map(|(r, _)| r.at).collect();
    assert_eq!(found, [1], "the record left, read at its new place");
}

/// An eval record is re-run with the prompts its run was made with: run.json keeps the
/// directory, and one gone since is said, never replaced by the built-in prompts.
#[test]
fn an_eval_record_is_rerun_with_its_own_prompts() {
    let home = tempfile::tempdir().unwrap();
    let kb = "tests/fixtures/pathquestion/eval/2H-kb.txt";
    let prompts = home.path().join("my-prompts");
    std::fs::create_dir_all(&prompts).unwrap();
    std::fs::copy("prompts/answer.txt", prompts.join("answer.txt")).unwrap();
    let out = home.path().join("runs/pq");
    let (code, _, err) = gold_path_eval_with(kb, home.path(), 1, &out, &["--prompts", prompts.to_str().unwrap()]);
    assert_eq!(code, 0, "{err}");
    let meta: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(out.join("run.json")).unwrap()).unwrap();
    let kept = std::fs::canonicalize(&prompts).unwrap().display().to_string();
    assert_eq!(meta["prompts"].as_str(), Some(kept.as_str()), "{meta}");
    assert_eq!(meta["topic_ids"].as_str(), Some("freebase"), "{meta}");
    let retract = retract_nationality(kb);
    assert_eq!(ongraph(home.path(), &retract).0, 0);
    let rerun = ["fix", "impact", "1", "--rerun", "--runs", out.to_str().unwrap(), "--kg", kb];
    let (code, with_them, err) = ongraph(home.path(), &rerun);
    assert_eq!(code, 0, "{err}");
    assert!(with_them.contains("re-run: united kingdom → "), "{with_them}");
    std::fs::remove_dir_all(&prompts).unwrap();
    let (code, gone, err) = ongraph(home.path(), &rerun);
    assert_eq!(code, 0, "{err}");
    assert!(gone.contains("not re-run: its prompts (") && gone.contains("my-prompts"), "{gone}");
}

/// A kept run is re-run with the model it was made with, where this machine can name it (an
/// endpoint of the config with that model and URL, the script it ran on); `--llm` overrides.
#[test]
fn a_session_is_rerun_with_its_own_model() {
    let home = tempfile::tempdir().unwrap();
    let runs = home.path().join("runs");
    std::fs::create_dir_all(&runs).unwrap();
    // The README's session, as if made with a script that has none of the replies asked now.
    let script = home.path().join("other-model.toml");
    std::fs::write(&script, "[[reply]]\nstep = \"nothing\"\ncontains = [\"nothing at all\"]\ntext = \"x\"\n").unwrap();
    let mut session: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string("sessions/phillie-phanatic.json").unwrap()).unwrap();
    session["llm"] = serde_json::json!(format!("scripted model ({})", script.display()));
    std::fs::write(runs.join("phanatic.json"), session.to_string()).unwrap();
    let replace = [
        "fix",
        "replace",
        "m.phillies",
        "baseball.baseball_team.spring_training_stadium",
        "m.bright_house_field",
        "new.baycare_ballpark",
        "--label",
        "BayCare Ballpark",
        "--reason",
        "Renamed",
    ];
    assert_eq!(ongraph(home.path(), &replace).0, 0);
    let rerun = ["fix", "impact", "1", "--runs", runs.to_str().unwrap(), "--rerun"];
    let (code, own, err) = ongraph(home.path(), &rerun);
    assert_eq!(code, 0, "{err}");
    assert!(
        own.contains("not re-run: ") && own.contains("other-model.toml"),
        "its own script, which has no reply: {own}"
    );
    let (code, demo, err) = ongraph(home.path(), &[&rerun[..], &["--llm", "demo"]].concat());
    assert_eq!(code, 0, "{err}");
    assert!(demo.contains("re-run: Bright House Field → BayCare Ballpark  (changes; 1 LLM call(s))"), "{demo}");
}

/// From outside: eval records keep what each question read, `fix impact --rerun` asks the
/// touched ones again (of the gold-path simulation, as they were made), and what cannot be
/// counted (a damaged session, records written before footprints, a run of another KG) is
/// said, never counted as untouched.
#[test]
fn fix_impact_lists_and_reruns_eval_records_and_says_what_it_skipped() {
    let home = tempfile::tempdir().unwrap();
    let runs = home.path().join("runs");
    let kb = "tests/fixtures/pathquestion/eval/2H-kb.txt";
    let pq = &["--kg", kb];
    let eval = runs.join("pq");
    gold_path_eval(home.path(), 3, &eval, false);
    // The first question's second hop, retracted.
    let retract =
        ["fix", "retract", "ernest_augustus_i_of_hanover", "nationality", "united_kingdom", "--reason", "test"];
    let (code, _, err) = ongraph(home.path(), &[&retract[..], pq].concat());
    assert_eq!(code, 0, "{err}");
    // Beside it: records written before footprints were kept, a damaged session, and a run of
    // the demo KG.
    let old = runs.join("old");
    std::fs::create_dir_all(&old).unwrap();
    std::fs::copy(eval.join("run.json"), old.join("run.json")).unwrap();
    let records = std::fs::read_to_string(eval.join("records.jsonl")).unwrap();
    let stripped: String = records
        .lines()
        .map(|l| {
            let mut v: serde_json::Value = serde_json::from_str(l).unwrap();
            v.as_object_mut().unwrap().remove("footprint").expect("records keep a footprint");
            format!("{v}\n")
        })
        .collect();
    std::fs::write(old.join("records.jsonl"), stripped).unwrap();
    std::fs::write(runs.join("broken.json"), "{\"format\": \"ongraph-session\", \"version\": 3, \"runs\": [").unwrap();
    std::fs::copy("sessions/phillie-phanatic.json", runs.join("phanatic.json")).unwrap();

    let (code, out, err) =
        ongraph(home.path(), &[&["fix", "impact", "1", "--rerun", "--runs", runs.to_str().unwrap()][..], pq].concat());
    assert_eq!(code, 0, "{err}");
    assert!(out.contains("the answer rests on it (3):"), "the three questions of the same path: {out}");
    assert!(out.contains("re-run: united kingdom → "), "{out}");
    assert!(out.contains("(changes; "), "{out}");
    assert!(out.contains("skipped") && out.contains("broken.json"), "{out}");
    assert!(out.contains("old/records.jsonl: written before ongraph kept what each run read"), "{out}");
    assert!(out.lines().last().unwrap().starts_with("3 of 3 kept answers change (3 re-run; in "), "{out}");
    assert!(out.lines().last().unwrap().ends_with("2 of other KGs left out)"), "{out}");

    // The index beside the store follows the files: records added since are read, and a
    // damaged index is rebuilt from the files.
    let index = home.path().join("data/ongraph/impact-index");
    assert!(index.is_file(), "the index is kept beside the store");
    gold_path_eval(home.path(), 4, &eval, true);
    // An eval run's records are indexed as the run ends, not at the next `fix impact`.
    let records = std::fs::canonicalize(eval.join("records.jsonl")).unwrap();
    let indexed = std::fs::read(&index).unwrap();
    assert!(
        indexed.windows(records.as_os_str().len()).any(|w| w == records.as_os_str().as_encoded_bytes()),
        "the eval's records are in the index"
    );
    let only_eval = |home: &std::path::Path| {
        let (code, out, err) =
            ongraph(home, &[&["fix", "impact", "1", "--runs", eval.to_str().unwrap()][..], pq].concat());
        assert_eq!(code, 0, "{err}");
        out.lines().last().unwrap().to_string()
    };
    assert!(only_eval(home.path()).starts_with("3 of 4 kept runs touched"), "{}", only_eval(home.path()));
    // Damaged (a byte flipped), torn (a crash mid-write), not an index at all: rebuilt.
    let whole = std::fs::read(&index).unwrap();
    let mut flipped = whole.clone();
    let middle = flipped.len() / 2;
    flipped[middle] ^= 1;
    let mut rebuilt = Vec::new();
    for damaged in [flipped, whole[..whole.len() / 3].to_vec(), b"not an index".to_vec()] {
        std::fs::write(&index, damaged).unwrap();
        assert!(only_eval(home.path()).starts_with("3 of 4 kept runs touched"), "a damaged index is rebuilt");
        rebuilt.push(std::fs::read(&index).unwrap());
    }
    assert!(rebuilt[0].starts_with(b"ONGIMP") && rebuilt.iter().all(|r| *r == rebuilt[0]), "written again whole");

    // eval --affected-only: only the touched questions are asked again, with the earlier run's
    // dataset and settings, into a run `eval compare` reads beside the original.
    let (code, _, err) = ongraph(
        home.path(),
        &[
            &["eval", "--with-corrections", "--affected-only", "--from", eval.to_str().unwrap(), "--llm", "gold-path"]
                [..],
            pq,
        ]
        .concat(),
    );
    assert_eq!(code, 0, "{err}");
    assert!(err.contains("3 of the 4 questions of"), "{err}");
    let corrected = format!("{}-corrected", eval.display());
    let records = std::fs::read_to_string(format!("{corrected}/records.jsonl")).unwrap();
    assert_eq!(records.lines().count(), 3, "{records}");
    let (code, out, err) = ongraph(home.path(), &["eval", "compare", eval.to_str().unwrap(), &corrected]);
    assert_eq!(code, 0, "{err}");
    assert!(out.contains("On the 3 questions in both (strict): both right 0, only A 3"), "{out}");
    // Records that do not say what they read are never taken for untouched.
    let (code, _, err) =
        ongraph(
            home.path(),
            &[
                &[
                    "eval",
                    "--with-corrections",
                    "--affected-only",
                    "--from",
                    old.to_str().unwrap(),
                    "--llm",
                    "gold-path",
                ][..],
                pq,
            ]
            .concat(),
        );
    assert_eq!(code, 1);
    assert!(err.contains("were written before eval kept what each question read"), "{err}");
    // A correction no kept run read: one line (with correction 1 undone, no other changed what
    // the runs read).
    assert_eq!(ongraph(home.path(), &[&["fix", "undo", "1"][..], pq].concat()).0, 0);
    // The run made with it, asked again after the undo: the questions it touched go back.
    let undone = home.path().join("undone");
    let (code, _, err) = ongraph(
        home.path(),
        &[
            &["eval", "--with-corrections", "--affected-only", "--from", &corrected, "--llm", "gold-path", "--out"][..],
            &[undone.to_str().unwrap()],
            pq,
        ]
        .concat(),
    );
    assert_eq!(code, 0, "{err}");
    assert!(
        err.contains("3 of the 3 questions of")
            && err.contains("by the 0 correction(s) in force or the 1 not in force"),
        "{err}"
    );
    let (code, out, err) = ongraph(home.path(), &["eval", "compare", &corrected, undone.to_str().unwrap()]);
    assert_eq!(code, 0, "{err}");
    assert!(out.contains("On the 3 questions in both (strict): both right 0, only A 0, only B 3"), "{out}");
    let relabel = ["fix", "relabel", "manuel_i_of_portugal", "Manuel the Fortunate", "--reason", "test"];
    assert_eq!(ongraph(home.path(), &[&relabel[..], pq].concat()).0, 0);
    let (code, out, _) =
        ongraph(home.path(), &[&["fix", "impact", "2", "--runs", eval.to_str().unwrap()][..], pq].concat());
    assert_eq!(code, 0);
    assert!(
        out.starts_with(
            "correction 2: relabel manuel_i_of_portugal as \"Manuel the Fortunate\": no kept run read it\n"
        ),
        "{out}"
    );
    let (code, _, err) = ongraph(home.path(), &[&["fix", "impact", "--json"][..], pq].concat());
    assert_eq!(code, 1);
    assert!(err.contains("name the corrections by id"), "{err}");
}

/// Two processes with the index open at once (the UI keeps it; a `fix impact` beside it) never
/// wait for each other, and each sees the files as they are; the sled directory earlier
/// versions kept at its place is replaced.
#[test]
fn two_processes_share_the_index_and_an_old_one_is_replaced() {
    use ongraph::testing::impact::Kept;
    let dir = tempfile::tempdir().unwrap();
    let runs = dir.path().join("runs");
    std::fs::create_dir_all(&runs).unwrap();
    std::fs::copy("sessions/phillie-phanatic.json", runs.join("phanatic.json")).unwrap();
    let index = dir.path().join("impact-index");
    std::fs::create_dir_all(&index).unwrap();
    std::fs::write(index.join("conf"), "segment_size: 524288").unwrap();
    std::fs::write(index.join("db"), [0u8; 64]).unwrap();
    let places = vec![runs.clone()];
    let held = Kept::open(&index, &places);
    assert!(index.is_file(), "the old directory is replaced by the index");
    let again = Kept::open(&index, &places);
    assert!(matches!((&held, &again), (Kept::Indexed(..), Kept::Indexed(..))), "both through the index");
    let retract = Op::Retract {
        subject: "m.phillies".into(),
        relation: "baseball.baseball_team.spring_training_stadium".into(),
        object: Term::Entity("m.bright_house_field".into()),
    };
    assert_eq!(held.touched(&retract, &[], |_| true).len(), 2);
    assert_eq!(again.touched(&retract, &[], |_| true).len(), 2);
    // One saves a session; the other, refreshed, finds it.
    std::fs::copy("sessions/phillie-phanatic.json", runs.join("again.json")).unwrap();
    ongraph::testing::impact::note_saved(&index, &runs.join("again.json"));
    let held = held.refreshed(&places);
    assert_eq!(held.touched(&retract, &[], |_| true).len(), 4, "the session saved meanwhile is read");
    assert_eq!(held.counts(|_| true), Kept::open(&index, &places).counts(|_| true));
}

/// A correction made after a run can send it where the run never read: a later correction
/// there then changes its answer though the run read nothing of it. Such a run is listed, in
/// its own group, for every other correction (found by an adversarial review).
#[test]
fn a_run_that_later_corrections_moved_is_listed_for_the_next_one_too() {
    let home = tempfile::tempdir().unwrap();
    let kb = "tests/fixtures/pathquestion/eval/2H-kb.txt";
    let pq = &["--kg", kb];
    let runs = home.path().join("runs");
    gold_path_eval(home.path(), 3, &runs, false);
    // The spouse replaced by a new entity (as the UI's flag with a right object does), then a
    // fact about that new entity: the runs never read it, yet it decides their answer now.
    let replace = [
        "fix",
        "replace",
        "frederica_of_mecklenburg-strelitz",
        "spouse",
        "ernest_augustus_i_of_hanover",
        "new.ernest",
        "--label",
        "ernest augustus i of hanover",
        "--reason",
        "test",
    ];
    assert_eq!(ongraph(home.path(), &[&replace[..], pq].concat()).0, 0);
    let assert_fact = ["fix", "assert", "new.ernest", "nationality", "united_kingdom", "--reason", "test"];
    assert_eq!(ongraph(home.path(), &[&assert_fact[..], pq].concat()).0, 0);
    let (code, out, err) =
        ongraph(home.path(), &[&["fix", "impact", "2", "--runs", runs.to_str().unwrap()][..], pq].concat());
    assert_eq!(code, 0, "{err}");
    assert!(
        out.contains("other corrections it did not see changed what it read (it may go elsewhere now) (3):"),
        "{out}"
    );
    assert!(out.lines().last().unwrap().starts_with("3 of 3 kept runs touched"), "{out}");
}
