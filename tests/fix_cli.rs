//! `ongraph fix` and `ongraph kg` as a user runs them: the ToG paper's Figure 4 on the demo KG
//! (answer, trace, correct, ask again), bad input, and a crash part-way through a batch.

mod common;

use common::ongraph_cmd;
use std::io::{BufRead, BufReader};
use std::path::Path;
use std::process::{Output, Stdio};

const PHANATIC: &str = "Which ballpark hosts spring training for the team whose mascot is the Phillie Phanatic?";
const STADIUM: &str = "baseball.baseball_team.spring_training_stadium";

fn run(home: &Path, args: &[&str]) -> Output {
    ongraph_cmd(home, args).output().expect("the binary runs")
}

/// Runs and expects success; returns stdout.
fn ok(home: &Path, args: &[&str]) -> String {
    let out = run(home, args);
    assert_eq!(out.status.code(), Some(0), "{args:?}: {}", String::from_utf8_lossy(&out.stderr));
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// Runs and expects a one-line error containing `needle`.
fn fails(home: &Path, args: &[&str], needle: &str) {
    let out = run(home, args);
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{args:?}: {err}");
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(err.contains(needle) && !err.contains("panicked"), "{needle:?} not in {err}");
}

fn first_line(text: &str) -> &str {
    text.lines().next().unwrap_or_default()
}

#[test]
fn figure_4_answer_correct_ask_again_undo() {
    let home = tempfile::tempdir().unwrap();
    let h = home.path();
    assert_eq!(first_line(&ok(h, &["ask", PHANATIC])), "Answer: Bright House Field");

    // The user traces the answer to the outdated triple and fixes it: each command is a new
    // process, so every later one sees the store as written to disk.
    let retracted = ok(
        h,
        &[
            "fix",
            "retract",
            "m.phillies",
            STADIUM,
            "m.bright_house_field",
            "--reason",
            "Renamed in 2017 and 2021",
            "--question",
            PHANATIC,
        ],
    );
    assert_eq!(retracted, format!("correction 1: retract m.phillies {STADIUM} m.bright_house_field\n"));
    ok(h, &["fix", "assert", "m.phillies", STADIUM, "m.baycare_ballpark", "--reason", "Current name"]);
    ok(h, &["fix", "assert", "m.baycare_ballpark", "type.object.name", "\"BayCare Ballpark\"", "--reason", "Its name"]);
    let seen = ok(h, &["kg", "neighbors", "m.phillies", STADIUM]);
    assert_eq!(seen, "m.baycare_ballpark\tBayCare Ballpark  [correction 2]\n");
    assert_eq!(
        ok(h, &["kg", "neighbors", "m.phillies", STADIUM, "--no-overlay"]),
        "m.bright_house_field\tBright House Field\n"
    );

    let again = ok(h, &["ask", PHANATIC]);
    assert_eq!(first_line(&again), "Answer: BayCare Ballpark", "{again}");
    assert!(again.contains("\nSource: from knowledge-graph paths, through correction #2\n"), "{again}");
    assert!(again.contains("Corrections in effect: 3"), "{again}");
    assert_eq!(first_line(&ok(h, &["ask", PHANATIC, "--no-overlay"])), "Answer: Bright House Field");

    let list: serde_json::Value = serde_json::from_str(&ok(h, &["fix", "list", "--json"])).unwrap();
    assert_eq!(list[0]["op"], "retract");
    assert_eq!(list[0]["context"]["question"], PHANATIC);
    assert_eq!(list[0]["reason"], "Renamed in 2017 and 2021");

    let patch = ok(h, &["fix", "export", "--format", "sparql-update"]);
    assert!(patch.starts_with("DELETE DATA {\n"), "{patch}");
    assert!(patch.contains("  <http://rdf.freebase.com/ns/m.phillies> <http://rdf.freebase.com/ns/baseball.baseball_team.spring_training_stadium> <http://rdf.freebase.com/ns/m.bright_house_field> .\n} ;\nINSERT DATA {\n"), "{patch}");
    assert!(patch.contains("<http://rdf.freebase.com/ns/m.baycare_ballpark> <http://rdf.freebase.com/ns/type.object.name> \"BayCare Ballpark\" ."), "{patch}");

    // Undo brings the old answer back; the history keeps the undo.
    for id in ["3", "2", "1"] {
        ok(h, &["fix", "undo", id]);
    }
    assert_eq!(first_line(&ok(h, &["ask", PHANATIC])), "Answer: Bright House Field");
    let list = ok(h, &["fix", "list"]);
    assert_eq!(list.lines().filter(|l| l.contains(" undone ")).count(), 3, "{list}");

    // A relabel is the other way to fix a renamed stadium.
    ok(h, &["fix", "relabel", "m.bright_house_field", "BayCare Ballpark", "--reason", "Renamed"]);
    assert_eq!(first_line(&ok(h, &["ask", PHANATIC])), "Answer: BayCare Ballpark");
    assert!(
        ok(h, &["kg", "search", "baycare ballpark"]).starts_with("m.bright_house_field\tBayCare Ballpark\texact\n")
    );
}

/// The demo KG without Cupertino's time zone, written in `dir`: GoG must generate it.
fn incomplete_demo_kg(dir: &std::path::Path) -> std::path::PathBuf {
    let demo = std::fs::read_to_string("sessions/demo-kg.tsv").unwrap();
    let kb = dir.join("incomplete.tsv");
    let kept: Vec<&str> =
        demo.lines().filter(|l| !l.starts_with("m.cupertino\tlocation.location.time_zones\t")).collect();
    assert_eq!(kept.len() + 1, demo.lines().count(), "one triple left out");
    std::fs::write(&kb, kept.join("\n")).unwrap();
    kb
}

/// GoG generates a triple the KG lacks; once someone accepts it as a correction, an answer
/// resting on it says it rests on an LLM-generated triple, not on the knowledge graph.
#[test]
fn an_answer_resting_on_an_accepted_generated_triple_says_so() {
    let home = tempfile::tempdir().unwrap();
    let h = home.path();
    let kb = incomplete_demo_kg(h);
    let kb = kb.to_str().unwrap();
    let question = "In which time zone is the headquarters of Apple Inc.?";
    let ask = [&["ask", "--method", "gog", "--kg", kb][..], &[question]].concat();
    let first = ok(h, &ask);
    assert!(first.starts_with("Answer: Pacific Time Zone\nSource: from LLM-generated triples, verified"), "{first}");
    // The supporting path through the generated hop is marked; one wholly in the KG is not.
    let through = "-> location.location.time_zones -> Pacific Time Zone  [through an LLM-generated triple]\n";
    assert!(first.contains(through), "{first}");
    assert!(first.contains("-> location.location.containedby -> California\n"), "{first}");
    // GoG does not score its paths: none shown, each route once.
    let listed: Vec<&str> = first.lines().filter(|l| l.starts_with("  ") && l.contains(" -> ")).collect();
    assert!(!listed.is_empty() && listed.iter().all(|l| !l.contains("] ") || l.contains("[through")), "{first}");
    let routes: std::collections::HashSet<&str> =
        listed.iter().map(|l| l.split_once(". ").map_or(*l, |x| x.1)).collect();
    assert_eq!(routes.len(), listed.len(), "{first}");

    // Accepted as the UI's `A` stores it: an assert marked as generated (here imported).
    let triple = ["m.cupertino", "location.location.time_zones", "m.pacific_tz"];
    let accepted = serde_json::json!({
        "id": 1, "kg": "demo", "op": "assert", "subject": triple[0], "relation": triple[1],
        "object": {"kind": "entity", "value": triple[2]},
        "reason": ongraph::testing::overlay::generated_reason("demo"), "generated": true, "author": "demo",
        "created": "2026-11-22T00:00:00Z", "active": true, "history": []
    });
    let file = h.join("accepted.jsonl");
    std::fs::write(&file, accepted.to_string()).unwrap();
    ok(h, &["fix", "import", "--kg", kb, file.to_str().unwrap()]);
    let again = ok(h, &ask);
    assert!(
        again.starts_with(
            "Answer: Pacific Time Zone\nSource: from an LLM-generated triple accepted as correction #1, not from the knowledge graph itself\n"
        ),
        "{again}"
    );
    let json: serde_json::Value = serde_json::from_str(&ok(h, &[&ask[..], &["--json"]].concat())).unwrap();
    assert_eq!(json["answer_corrections"], serde_json::json!([1]));
    assert_eq!(json["answer"]["source"], "kg_paths");

    // The same triple asserted for another reason is a correction like any other.
    ok(h, &["fix", "undo", "--kg", kb, "1"]);
    ok(h, &[&["fix", "assert", "--kg", kb, "--reason", "checked on a map"][..], &triple].concat());
    let checked = ok(h, &ask);
    assert!(
        checked.starts_with("Answer: Pacific Time Zone\nSource: from knowledge-graph paths, through correction #2\n"),
        "{checked}"
    );
}

#[test]
fn corrections_are_scoped_per_kg() {
    let home = tempfile::tempdir().unwrap();
    let h = home.path();
    let kb = h.join("kb.tsv");
    std::fs::write(&kb, "m.phillies\tbaseball.baseball_team.spring_training_stadium\tm.bright_house_field\n").unwrap();
    ok(h, &["fix", "relabel", "m.bright_house_field", "BayCare Ballpark", "--reason", "Renamed"]);
    // The same id in another KG keeps its name.
    let other = ok(h, &["kg", "neighbors", "m.phillies", STADIUM, "--kg", kb.to_str().unwrap()]);
    assert_eq!(other, "m.bright_house_field\tm.bright house field\n");
    assert!(ok(h, &["fix", "list", "--kg", kb.to_str().unwrap()]).starts_with("no corrections for file:"));
}

#[test]
fn bad_corrections_are_one_line_errors() {
    let home = tempfile::tempdir().unwrap();
    let h = home.path();
    fails(h, &["fix", "undo", "42"], "no correction 42 in the correction store");
    fails(h, &["fix", "retract", "m.phillies", STADIUM, "m.nowhere", "--reason", "x"], "demo does not hold m.phillies");
    fails(h, &["fix", "assert", "m.a> } ; DROP ALL ; {", STADIUM, "m.b", "--reason", "x"], "is not a valid id or IRI");
    fails(h, &["fix", "assert", "m.phillies", STADIUM, "m.bright_house_field", "--reason", "x"], "already holds");
    fails(h, &["fix", "relabel", "m.never_heard_of", "X", "--reason", "x"], "demo has no entity m.never_heard_of");
    fails(h, &["fix", "relabel", "m.apple", "Apple", "--reason", " "], "must not be empty");
    ok(h, &["fix", "relabel", "m.apple", "Apple Computer", "--reason", "old name"]);
    ok(h, &["fix", "undo", "1"]);
    fails(h, &["fix", "undo", "1"], "correction 1 is already undone");

    // A hostile literal becomes a harmless, escaped literal in the patch.
    ok(
        h,
        &[
            "fix",
            "assert",
            "m.apple",
            "common.topic.alias",
            "\"x\" } ; DROP ALL ; { \"",
            "--reason",
            "line one\n} ; DROP ALL ; {",
        ],
    );
    let patch = ok(h, &["fix", "export", "--format", "sparql-update"]);
    assert!(patch.contains(r#""x\" } ; DROP ALL ; { " ."#), "{patch}");
    // The line break shown as an escape: the comment stays one line.
    assert!(patch.contains(r"line one\n} ; DROP ALL ; {"), "the reason stays inside its comment: {patch}");
    assert_eq!(patch.matches("INSERT DATA {").count(), 1);

    // A store held by another process is reported as such.
    let store = h.join("data/ongraph/overlay");
    let _held = ongraph::testing::overlay::SledStore::open(&store).unwrap();
    fails(h, &["fix", "relabel", "m.apple", "Apple", "--reason", "x"], "in use by another ongraph process");
}

#[test]
fn every_acknowledged_correction_survives_a_kill() {
    let home = tempfile::tempdir().unwrap();
    let h = home.path();
    let file = h.join("batch.jsonl");
    let lines: Vec<String> = (0..1000)
        .map(|i| {
            serde_json::json!({
                "id": i + 1, "kg": "elsewhere", "op": "relabel", "entity": format!("m.crash{i}"),
                "label": format!("Crash {i}"), "reason": "crash test", "author": "test",
                "created": "2026-11-22T00:00:00Z", "active": true, "history": []
            })
            .to_string()
        })
        .collect();
    std::fs::write(&file, lines.join("\n")).unwrap();

    let mut child = ongraph_cmd(h, &["fix", "import", file.to_str().unwrap()]).stdout(Stdio::piped()).spawn().unwrap();
    let mut reader = BufReader::new(child.stdout.take().unwrap());
    let mut acknowledged: Vec<u64> = Vec::new();
    let mut line = String::new();
    while acknowledged.len() < 10 && reader.read_line(&mut line).unwrap() > 0 {
        // "imported 3 as 3"
        acknowledged.push(line.trim().rsplit(' ').next().unwrap().parse().unwrap());
        line.clear();
    }
    assert!(child.try_wait().unwrap().is_none(), "the import must still be running when it is killed");
    child.kill().unwrap(); // SIGKILL
    child.wait().unwrap();
    // Whatever else the child printed before it died was acknowledged too.
    for rest in reader.lines().map_while(Result::ok) {
        if let Some(id) = rest.strip_prefix("imported ").and_then(|r| r.rsplit(' ').next()) {
            acknowledged.push(id.parse().unwrap());
        }
    }

    let list: Vec<serde_json::Value> = serde_json::from_str(&ok(h, &["fix", "list", "--json"])).unwrap();
    let stored: Vec<u64> = list.iter().map(|c| c["id"].as_u64().unwrap()).collect();
    assert!(stored.len() < 1000, "killed part-way: {} stored", stored.len());
    for id in &acknowledged {
        assert!(stored.contains(id), "acknowledged correction {id} was lost");
    }
    // The store opens cleanly and takes new corrections after the crash.
    ok(h, &["fix", "relabel", "m.apple", "Apple Computer", "--reason", "after the crash"]);
}

#[test]
fn a_scenario_hides_triples_for_one_run_only() {
    let home = tempfile::tempdir().unwrap();
    let h = home.path();
    let mascot = "sports.sports_team.team_mascot";
    let tsv = h.join("hide.tsv");
    std::fs::write(&tsv, format!("m.giants\t{mascot}\tm.lou_seal\n")).unwrap();
    let gog = h.join("ikg.json");
    std::fs::write(
        &gog,
        format!(r#"[{{"ID": "WebQTest-832_c3", "index": 0, "mid_crucial_triples": [["m.giants", "{mascot}", "m.lou_seal"]]}}]"#),
    )
    .unwrap();
    let full = ok(h, &["kg", "relations", "m.lou_seal"]);
    assert!(full.contains(&format!("<- {mascot}")), "{full}");
    for args in [
        vec!["kg", "relations", "m.lou_seal", "--scenario", tsv.to_str().unwrap()],
        vec!["kg", "relations", "m.lou_seal", "--scenario", gog.to_str().unwrap(), "--scenario-id", "WebQTest-832_c3"],
        vec!["kg", "relations", "m.lou_seal", "--scenario", gog.to_str().unwrap(), "--scenario-id", "0"],
    ] {
        assert_eq!(ok(h, &args), "-> sports.mascot.debut\n", "{args:?}");
    }
    // Nothing was written: the next run sees the whole graph, and no correction exists.
    assert_eq!(ok(h, &["kg", "relations", "m.lou_seal"]), full);
    assert_eq!(ok(h, &["fix", "list"]), "no corrections for demo\n");
    fails(h, &["kg", "relations", "m.lou_seal", "--scenario", gog.to_str().unwrap()], "say which with --scenario-id");
    fails(
        h,
        &["kg", "relations", "m.lou_seal", "--scenario", gog.to_str().unwrap(), "--scenario-id", "7"],
        "no question \"7\"",
    );
}

#[test]
fn unknown_entities_and_relations_are_errors() {
    let home = tempfile::tempdir().unwrap();
    let h = home.path();
    fails(h, &["kg", "relations", "m.nope"], "demo has no entity m.nope");
    fails(
        h,
        &["kg", "neighbors", "m.apple", "made.up.relation"],
        "demo has no outgoing relation made.up.relation at m.apple",
    );
    assert_eq!(
        ok(h, &["kg", "neighbors", "m.lou_seal", "sports.sports_team.team_mascot", "--incoming"]),
        "m.giants\tSan Francisco Giants\n"
    );
    // A bad id is no entity, not a missing relation; an entity's exact name finds it, as
    // `--topic` does (found by a trial).
    fails(h, &["kg", "neighbors", "m.nope", "sports.sports_team.team_mascot"], "demo has no entity m.nope");
    let out = run(h, &["kg", "neighbors", "Lou Seal", "sports.sports_team.team_mascot", "--incoming"]);
    assert_eq!(String::from_utf8_lossy(&out.stdout), "m.giants\tSan Francisco Giants\n");
    assert_eq!(String::from_utf8_lossy(&out.stderr), "note: m.lou_seal is the entity named Lou Seal\n");
    assert!(ok(h, &["kg", "relations", "San Francisco Giants"]).contains("-> sports.sports_team.team_mascot\n"));
}

#[test]
fn a_replace_is_one_correction_that_one_undo_reverts() {
    let home = tempfile::tempdir().unwrap();
    let h = home.path();
    let replace = [
        "fix",
        "replace",
        "m.phillies",
        STADIUM,
        "m.bright_house_field",
        "new.baycare_ballpark",
        "--label",
        "BayCare Ballpark",
        "--reason",
        "Renamed in 2021",
    ];
    let made = ok(h, &replace);
    assert_eq!(
        made,
        format!(
            "correction 1: replace m.phillies {STADIUM} m.bright_house_field with new.baycare_ballpark named \"BayCare Ballpark\"\n"
        )
    );
    assert_eq!(
        ok(h, &["kg", "neighbors", "m.phillies", STADIUM]),
        "new.baycare_ballpark\tBayCare Ballpark  [correction 1]\n"
    );
    let again = ok(h, &["ask", PHANATIC]);
    assert_eq!(first_line(&again), "Answer: BayCare Ballpark", "{again}");
    assert!(again.contains("Corrections in effect: 1"), "{again}");
    // The demo records no baseline replies: the tests' own script gives IO's.
    let script = format!("scripted:{}/tests/fixtures/baselines-model.toml", env!("CARGO_MANIFEST_DIR"));
    let canberra = "What is the majority party now in the country where Canberra is located?";
    let io = ok(h, &["ask", canberra, "--method", "io", "--llm", &script]);
    assert!(io.starts_with("Answer: ") && !io.contains("Corrections in effect"), "IO never reads the KG: {io}");
    let list = ok(h, &["fix", "list"]);
    assert_eq!(list.lines().count(), 1, "one line: {list}");
    assert!(list.contains(" active ") && list.contains("replace m.phillies"), "{list}");

    // The patch deletes the old triple and inserts the new one and its name.
    let patch = ok(h, &["fix", "export", "--format", "sparql-update"]);
    assert!(patch.starts_with("DELETE DATA {\n"), "{patch}");
    assert!(patch.contains("<http://rdf.freebase.com/ns/m.bright_house_field> .\n} ;\nINSERT DATA {\n"), "{patch}");
    assert!(patch.contains("<http://rdf.freebase.com/ns/new.baycare_ballpark> <http://rdf.freebase.com/ns/type.object.name> \"BayCare Ballpark\" ."), "{patch}");
    let backup = h.join("backup.jsonl");
    std::fs::write(&backup, ok(h, &["fix", "export", "--format", "jsonl"])).unwrap();

    // One undo, and nothing of it is left: the old stadium, under its old name, is back.
    assert!(ok(h, &["fix", "undo", "1"]).starts_with("correction 1 undone: replace m.phillies"));
    assert_eq!(ok(h, &["kg", "neighbors", "m.phillies", STADIUM]), "m.bright_house_field\tBright House Field\n");
    assert_eq!(first_line(&ok(h, &["ask", PHANATIC])), "Answer: Bright House Field");
    fails(h, &["kg", "relations", "new.baycare_ballpark"], "demo has no entity new.baycare_ballpark");

    // The backup imports back as one correction.
    let imported = ok(h, &["fix", "import", backup.to_str().unwrap()]);
    assert!(imported.ends_with("1 correction(s) imported into demo\n"), "{imported}");
    assert_eq!(first_line(&ok(h, &["ask", PHANATIC])), "Answer: BayCare Ballpark");
    // Imported again, it is not made twice, and says so.
    let again = ok(h, &["fix", "import", backup.to_str().unwrap()]);
    assert_eq!(again, "0 correction(s) imported into demo; skipped 1 already here\n");
    // Saved again by an editor that starts files with a byte-order mark, it still reads.
    let marked = h.join("marked.jsonl");
    std::fs::write(&marked, format!("\u{feff}{}", std::fs::read_to_string(&backup).unwrap())).unwrap();
    assert_eq!(
        ok(h, &["fix", "import", marked.to_str().unwrap()]),
        "0 correction(s) imported into demo; skipped 1 already here\n"
    );
    // A bad line anywhere: said with its number, and nothing of the file is imported.
    let half = h.join("half.jsonl");
    let good = ok(h, &["fix", "export", "--format", "jsonl"]).replace("BayCare", "Other");
    std::fs::write(&half, format!("{good}{{\"not\": \"a correction\"}}\n")).unwrap();
    let before = ok(h, &["fix", "list"]);
    let lines = good.lines().count();
    fails(h, &["fix", "import", half.to_str().unwrap()], &format!("half.jsonl:{}: not a correction", lines + 1));
    assert_eq!(ok(h, &["fix", "list"]), before, "nothing imported");

    // What cannot be a replace says why.
    const MASCOT: &str = "sports.sports_team.team_mascot";
    let base = ["fix", "replace", "m.giants", MASCOT];
    let with = |rest: &[&'static str]| [&base[..], rest, &["--reason", "x"]].concat();
    fails(h, &with(&["m.nowhere", "m.x"]), "demo does not hold m.giants sports.sports_team.team_mascot m.nowhere");
    fails(h, &with(&["m.lou_seal", "m.lou_seal"]), "the new object is the old one");
    fails(h, &with(&["m.lou_seal", "\"Lou\"", "--label", "Lou"]), "--label names a new entity");
}

#[test]
fn a_relabel_to_the_name_it_has_is_refused() {
    let home = tempfile::tempdir().unwrap();
    let h = home.path();
    fails(
        h,
        &["fix", "relabel", "m.bright_house_field", "Bright House Field", "--reason", "x"],
        "m.bright_house_field is already named \"Bright House Field\": nothing to correct",
    );
    ok(h, &["fix", "relabel", "m.bright_house_field", "BayCare Ballpark", "--reason", "Renamed"]);
    // The name it has now is the corrected one.
    fails(
        h,
        &["fix", "relabel", "m.bright_house_field", " BayCare Ballpark ", "--reason", "x"],
        "already named \"BayCare Ballpark\"",
    );
    assert_eq!(ok(h, &["fix", "list"]).lines().count(), 1, "no no-op correction was recorded");
}

#[test]
fn a_retract_of_an_asserted_triple_hides_it_and_the_patch_agrees() {
    let home = tempfile::tempdir().unwrap();
    let h = home.path();
    let triple = ["m.phillies", STADIUM, "m.baycare_ballpark"];
    ok(h, &[&["fix", "assert"][..], &triple, &["--reason", "Current name"]].concat());
    assert_eq!(
        ok(h, &["kg", "neighbors", "m.phillies", STADIUM]),
        "m.bright_house_field\tBright House Field\nm.baycare_ballpark\t(unnamed)  [correction 1]\n"
    );
    ok(h, &[&["fix", "retract"][..], &triple, &["--reason", "Not yet: the name changed later"]].concat());
    assert_eq!(ok(h, &["kg", "neighbors", "m.phillies", STADIUM]), "m.bright_house_field\tBright House Field\n");
    fails(h, &[&["fix", "retract"][..], &triple, &["--reason", "x"]].concat(), "nothing to retract");
    let patch = ok(h, &["fix", "export", "--format", "sparql-update"]);
    assert!(!patch.contains("INSERT"), "the retracted assert is not inserted: {patch}");
    // Asserted again, it shows again.
    ok(h, &[&["fix", "assert"][..], &triple, &["--reason", "Now it is"]].concat());
    let seen = ok(h, &["kg", "neighbors", "m.phillies", STADIUM]);
    assert!(seen.ends_with("m.baycare_ballpark\t(unnamed)  [correction 3]\n"), "{seen}");
}

/// Whether a correction stores an LLM-generated triple is a mark the correction carries, not
/// what its reason says: typing the reason the UI writes fakes nothing.
#[test]
fn a_typed_reason_does_not_make_a_triple_llm_generated() {
    let home = tempfile::tempdir().unwrap();
    let h = home.path();
    let kb = incomplete_demo_kg(h);
    let kb = kb.to_str().unwrap();
    let ask = ["ask", "--method", "gog", "--kg", kb, "In which time zone is the headquarters of Apple Inc.?"];
    let triple = ["m.cupertino", "location.location.time_zones", "m.pacific_tz"];
    let reason = ongraph::testing::overlay::generated_reason("mallory");
    ok(h, &[&["fix", "assert", "--kg", kb, "--reason", &reason][..], &triple].concat());
    let answer = ok(h, &ask);
    assert!(
        answer.starts_with("Answer: Pacific Time Zone\nSource: from knowledge-graph paths, through correction #1\n"),
        "{answer}"
    );
    ok(h, &["fix", "undo", "--kg", kb, "1"]);

    // A backup carries the mark: with the field, whatever the reason; from before the field
    // existed, by the reason it had then.
    let line = |reason: &str, generated: Option<bool>| {
        let mut c = serde_json::json!({
            "id": 7, "kg": "elsewhere", "op": "assert", "subject": triple[0], "relation": triple[1],
            "object": {"kind": "entity", "value": triple[2]}, "reason": reason, "author": "demo",
            "created": "2026-11-22T00:00:00Z", "active": true, "history": []
        });
        if let Some(g) = generated {
            c["generated"] = g.into();
        }
        c.to_string()
    };
    let backup = h.join("backup.jsonl");
    for (id, reason, generated) in [
        (2, "accepted after a look at a map", Some(true)),
        (3, reason.as_str(), None),
        (4, reason.as_str(), Some(false)),
    ] {
        std::fs::write(&backup, line(reason, generated)).unwrap();
        ok(h, &["fix", "import", "--kg", kb, backup.to_str().unwrap()]);
        let answer = ok(h, &ask);
        let source = if generated == Some(false) {
            format!("Source: from knowledge-graph paths, through correction #{id}\n")
        } else {
            format!(
                "Source: from an LLM-generated triple accepted as correction #{id}, not from the knowledge graph itself\n"
            )
        };
        assert!(
            answer.starts_with(&format!("Answer: Pacific Time Zone\n{source}")),
            "{reason} {generated:?}: {answer}"
        );
        // And the export says so, to be imported again.
        let exported = ok(h, &["fix", "export", "--kg", kb, "--format", "jsonl"]);
        let last: serde_json::Value = serde_json::from_str(exported.lines().last().unwrap()).unwrap();
        assert_eq!(last["generated"], serde_json::json!(generated != Some(false)), "{exported}");
        ok(h, &["fix", "undo", "--kg", kb, &id.to_string()]);
    }
}

/// Issue 36: a `[kg.NAME]` file entry without `profile` is read as `--kg FILE` reads the file
/// (auto: a file of bare ids is `named-ids`), `--kg-profile` wins over an entry's profile, and
/// names that all come out empty say which profile the KG was read with.
#[test]
fn a_config_kg_file_is_read_as_the_file_is() {
    let home = tempfile::tempdir().unwrap();
    let h = home.path();
    let kb = std::fs::canonicalize("tests/fixtures/pathquestion/eval/2H-kb.txt").unwrap();
    let config = h.join("config.toml");
    std::fs::write(
        &config,
        format!("[kg.pq]\npath = {:?}\n\n[kg.pqfb]\npath = {:?}\nprofile = \"freebase\"\n", kb.display(), kb.display()),
    )
    .unwrap();
    let config = config.to_str().unwrap();
    let by_entry =
        ok(h, &["--config", config, "kg", "neighbors", "nathan_mayer_rothschild", "nationality", "--kg", "pq"]);
    assert_eq!(by_entry.trim(), "united_kingdom\tunited kingdom", "{by_entry}");
    let by_file = ok(h, &["kg", "neighbors", "nathan_mayer_rothschild", "nationality", "--kg", kb.to_str().unwrap()]);
    assert_eq!(by_entry, by_file);
    // Read as Freebase: no names, and the command says why.
    let o = run(h, &["--config", config, "kg", "neighbors", "nathan_mayer_rothschild", "nationality", "--kg", "pqfb"]);
    let (stdout, stderr) = (String::from_utf8_lossy(&o.stdout), String::from_utf8_lossy(&o.stderr));
    assert!(stdout.contains("(unnamed)"), "{stdout}");
    assert!(
        stderr.contains("is read with the freebase profile") && stderr.contains("--kg-profile named-ids"),
        "{stderr}"
    );
    // The flag wins over the entry.
    let flagged = ok(
        h,
        &[
            "--config",
            config,
            "kg",
            "neighbors",
            "nathan_mayer_rothschild",
            "nationality",
            "--kg",
            "pqfb",
            "--kg-profile",
            "named-ids",
        ],
    );
    assert_eq!(flagged, by_file);
    // An unknown profile in the config names its line and the profiles there are, auto among them.
    std::fs::write(h.join("bad.toml"), "[kg.pq]\npath = \"x\"\nprofile = \"freebsae\"\n").unwrap();
    fails(
        h,
        &["--config", h.join("bad.toml").to_str().unwrap(), "kg", "search", "x"],
        "bad.toml:3: unknown KG profile \"freebsae\" (known: auto, freebase, named-ids, rdf, wikidata)",
    );
}

fn store_dir(home: &Path) -> std::path::PathBuf {
    home.join("data").join("ongraph").join("overlay")
}

/// Three corrections, the second undone.
fn three_corrections(h: &Path) {
    for (entity, label) in [("m.apple", "Apple Computer"), ("m.phillies", "The Phils"), ("m.bright_house_field", "BHF")]
    {
        ok(h, &["fix", "relabel", entity, label, "--reason", "names"]);
    }
    ok(h, &["fix", "undo", "2"]);
}

/// (id, active) of each correction in JSON lines or a JSON list.
fn ids_and_states(json: &[serde_json::Value]) -> Vec<(u64, bool)> {
    json.iter().map(|c| (c["id"].as_u64().unwrap(), c["active"].as_bool().unwrap())).collect()
}

fn jsonl(text: &str) -> Vec<serde_json::Value> {
    text.lines().map(|l| serde_json::from_str(l).unwrap()).collect()
}

/// A kill while sled writes a snapshot leaves an empty `snap.*.generating`, which sled then
/// reads as the newest snapshot and calls corruption: it is set aside (kept, renamed), said in
/// one line, and every correction reads back.
#[test]
fn a_snapshot_a_crash_left_unfinished_is_set_aside_and_every_correction_kept() {
    let home = tempfile::tempdir().unwrap();
    let h = home.path();
    three_corrections(h);
    let store = store_dir(h);
    std::fs::write(store.join("snap.00000000FFFFFFFF.generating"), b"").unwrap();

    let out = run(h, &["fix", "list", "--json"]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{err}");
    let list: Vec<serde_json::Value> = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(ids_and_states(&list), [(1, true), (2, false), (3, true)]);
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(err.starts_with("note: ") && err.contains("unfinished-snap.00000000FFFFFFFF.generating"), "{err}");
    assert!(store.join("unfinished-snap.00000000FFFFFFFF.generating").exists(), "kept, not deleted");
    assert!(!store.join("snap.00000000FFFFFFFF.generating").exists());

    // Said once: the next command opens the store as usual.
    let out = run(h, &["fix", "export", "--format", "jsonl"]);
    assert_eq!(out.status.code(), Some(0), "{}", String::from_utf8_lossy(&out.stderr));
    assert!(out.stderr.is_empty(), "{}", String::from_utf8_lossy(&out.stderr));
    assert_eq!(ids_and_states(&jsonl(&String::from_utf8_lossy(&out.stdout))), [(1, true), (2, false), (3, true)]);
    ok(h, &["fix", "relabel", "m.apple", "Apple", "--reason", "after the crash"]);
}

/// A store sled cannot recover is left as it is; the error says how to save its corrections
/// (never to move the store aside first), and `fix export --salvage` reads every record still
/// there: through sled on a copy, or from the files' bytes when no copy opens.
#[test]
fn a_damaged_store_is_salvaged_never_thrown_away() {
    let home = tempfile::tempdir().unwrap();
    let h = home.path();
    three_corrections(h);
    let store = store_dir(h);
    // A damaged snapshot (not an unfinished one): sled refuses the store.
    std::fs::write(store.join("snap.00000000FFFFFFFF"), b"not a snapshot at all").unwrap();
    let files = |dir: &Path| -> Vec<(String, Vec<u8>)> {
        let mut all: Vec<_> = std::fs::read_dir(dir)
            .unwrap()
            .flatten()
            .filter(|e| e.path().is_file())
            .map(|e| (e.file_name().to_string_lossy().into_owned(), std::fs::read(e.path()).unwrap()))
            .collect();
        all.sort();
        all
    };
    let before = files(&store);

    let out = run(h, &["fix", "list"]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{err}");
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(
        err.contains("is damaged") && err.contains("its files as they were before this command opened them are kept"),
        "{err}"
    );
    // The copy taken before sled opened the files (its recovery may rewrite them) is kept.
    let copy = store.with_file_name("overlay.before-damage");
    assert_eq!(files(&copy), before, "the copy is the store as it was");
    let salvage = err.find("fix export --salvage").unwrap_or_else(|| panic!("no salvage advice: {err}"));
    let aside = err.find("move the store aside").unwrap_or_else(|| panic!("{err}"));
    assert!(salvage < aside, "salvage first, then move it: {err}");
    assert!(!err.contains("start afresh"), "{err}");

    let salvaged = |h: &Path| {
        let out = run(h, &["fix", "export", "--salvage"]);
        let err = String::from_utf8_lossy(&out.stderr).into_owned();
        assert_eq!(out.status.code(), Some(0), "{err}");
        (jsonl(&String::from_utf8_lossy(&out.stdout)), err)
    };
    let (saved, err) = salvaged(h);
    assert_eq!(ids_and_states(&saved), [(1, true), (2, false), (3, true)], "the undo is kept");
    assert!(err.starts_with("salvaged 3 correction(s) of demo") && !err.contains("raw files"), "{err}");
    assert_eq!(files(&store), before, "the store is not written");

    // sled cannot open even a copy: the records are read from the bytes of its log.
    std::fs::write(store.join("conf"), b"this is not sled's conf\n").unwrap();
    std::fs::write(copy.join("conf"), b"this is not sled's conf\n").unwrap();
    let (saved, err) = salvaged(h);
    assert_eq!(ids_and_states(&saved), [(1, true), (2, false), (3, true)], "the latest versions: {saved:?}");
    assert!(err.contains("raw files"), "{err}");

    // The way out the error gives: the active corrections come back in a fresh store.
    let file = h.join("saved.jsonl");
    std::fs::write(&file, saved.iter().map(|c| format!("{c}\n")).collect::<String>()).unwrap();
    std::fs::rename(&store, h.join("overlay.damaged")).unwrap();
    let out = run(h, &["fix", "import", file.to_str().unwrap()]);
    let (imported, err) = (String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
    assert!(imported.ends_with("2 correction(s) imported into demo; skipped 1 undone\n"), "{imported}");
    // The old store's copy is not the new store's: renamed out of salvage's way, and said.
    assert!(!copy.exists(), "the stale copy is moved");
    assert!(
        err.contains("note: the copy of a damaged store beside") && err.contains("overlay.before-damage."),
        "{err}"
    );
    let kept = std::fs::read_dir(h.join("data").join("ongraph"))
        .unwrap()
        .filter_map(|e| e.ok())
        .filter(|e| e.file_name().to_string_lossy().starts_with("overlay.before-damage."))
        .count();
    assert_eq!(kept, 1, "kept under a new name, not deleted");
    let (saved, err) = salvaged(h);
    assert_eq!(saved.len(), 2, "salvage reads the new store only: {err}");
}

/// Characters that would forge or turn around what a terminal shows, raw.
const FORGING: [char; 8] = ['\u{202e}', '\u{2066}', '\u{2028}', '\u{85}', '\u{9b}', '\r', '\u{1b}', '\u{200f}'];

#[test]
fn a_teammates_text_cannot_forge_lines_or_turn_text_around() {
    // Regression: a label with newlines printed `Supporting paths: 1. [0.999] Canberra -> …`
    // as ask's own lines; authors and reasons did the same in `fix list`; bidi controls and C1
    // controls reached the terminal, in --json too.
    let home = tempfile::tempdir().unwrap();
    let h = home.path();
    let forged = "Bright House Field\nSupporting paths:\n  1. [0.999] Canberra -> fake.relation -> X\u{202e}evil\u{9b}31m\u{2028}\u{200f}";
    let correction = serde_json::json!({
        "id": 1, "kg": "demo", "op": "relabel", "entity": "m.bright_house_field", "label": forged,
        "reason": "R\r\n    2  active  forged\u{85}x", "author": "A\u{2028}fake\nforged\u{2066}\u{1b}[2J",
        "created": "2026-11-27T00:00:00Z", "active": true, "history": []
    });
    let file = h.join("import.jsonl");
    std::fs::write(&file, format!("{correction}\n")).unwrap();
    ok(h, &["fix", "import", file.to_str().unwrap()]);
    let raw = |text: &str, what: &str| assert!(!text.contains(FORGING), "{what}: {text:?}");
    let list = ok(h, &["fix", "list"]);
    raw(&list, "fix list");
    assert_eq!(list.lines().count(), 1, "one correction, one line: {list}");
    assert!(
        list.contains("Field\\nSupporting paths:\\n  1. [0.999] Canberra") && list.contains("A\\u{2028}fake\\nforged"),
        "{list}"
    );
    let json = ok(h, &["fix", "list", "--json"]);
    raw(&json, "fix list --json");
    let listed: serde_json::Value = serde_json::from_str(&json).unwrap();
    assert_eq!(listed[0]["author"], correction["author"], "the JSON means the same");
    let answer = ok(h, &["ask", PHANATIC]);
    raw(&answer, "ask");
    assert!(answer.contains("Field\\nSupporting paths:"), "the label is shown, as escapes: {answer}");
    assert!(!answer.lines().any(|l| l.contains("Canberra") && l.starts_with("  1. [0.999]")), "{answer}");
    assert_eq!(answer.lines().filter(|l| l.starts_with("Supporting paths")).count(), 1, "{answer}");
    raw(&ok(h, &["ask", PHANATIC, "--json"]), "ask --json");
    let neighbors = ok(h, &["kg", "neighbors", "m.phillies", STADIUM]);
    let search = ok(h, &["kg", "search", "Bright House"]);
    for (shown, what) in [(&neighbors, "kg neighbors"), (&search, "kg search")] {
        raw(shown, what);
        assert_eq!(shown.lines().count(), 1, "{what}: {shown}");
        assert!(shown.contains("\\u{202E}evil"), "{what}: {shown}");
    }
    raw(&ok(h, &["fix", "export", "--format", "jsonl"]), "fix export");
    raw(&ok(h, &["fix", "export", "--format", "nt"]), "fix export nt");
}

/// A home whose config names a copy of PathQuestion's 2H KB `[kg.pq2n]`: the copy's path.
fn pathquestion_home(h: &Path) -> String {
    let kb = h.join("2H-kb.txt");
    std::fs::copy("tests/fixtures/pathquestion/eval/2H-kb.txt", &kb).unwrap();
    let dir = h.join("config").join("ongraph");
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(dir.join("config.toml"), format!("[kg.pq2n]\npath = {:?}\n", kb.display().to_string())).unwrap();
    kb.to_str().unwrap().to_string()
}

/// Regression (issue 36): `--kg pq2n` and `--kg FILE` are the same file, yet a correction made
/// under one was invisible under the other; and an id named a correction only under its own
/// `--kg` ("no correction 2 for knowledge graph \"demo\"").
#[test]
fn a_file_kgs_corrections_follow_it_by_path_or_by_entry_and_ids_find_them() {
    let home = tempfile::tempdir().unwrap();
    let h = home.path();
    let file = pathquestion_home(h);
    // A correction stored under the entry's name, as earlier versions (and teammates) store them.
    {
        use ongraph::testing::overlay::{CorrectionStore, Draft, Op, SledStore};
        let store = SledStore::open(&store_dir(h)).unwrap();
        let op = Op::Relabel { entity: "united_kingdom".into(), label: "UK".into() };
        let draft =
            Draft { op, reason: "before".into(), generated: false, author: "t".into(), context: None, origin: None };
        store.add("pq2n", draft).unwrap();
    }
    let retract = ["fix", "retract", "nathan_mayer_rothschild", "nationality", "united_kingdom", "--reason", "r"];
    let made = ok(h, &[&retract[..], &["--kg", "pq2n"]].concat());
    assert!(made.starts_with("correction 2: retract nathan_mayer_rothschild"), "{made}");
    let by_file = ok(h, &["fix", "list", "--kg", &file]);
    assert_eq!(by_file, ok(h, &["fix", "list", "--kg", "pq2n"]));
    assert!(by_file.contains("    1  active") && by_file.contains("    2  active"), "{by_file}");
    // Made under the path, it is the entry's too.
    let lookup = ["kg", "neighbors", "nathan_mayer_rothschild", "nationality", "--kg"];
    fails(h, &[&lookup[..], &["pq2n"]].concat(), "has no outgoing relation nationality");
    fails(h, &[&lookup[..], &[file.as_str()]].concat(), "has no outgoing relation nationality");

    // An id is the store's: another KG's is refused when --kg names a KG, with the one to name…
    fails(h, &["fix", "undo", "2", "--kg", "demo"], "correction 2 belongs to knowledge graph ");
    fails(h, &["fix", "undo", "2", "--kg", "demo"], "pass --kg ");
    // …and acted on, saying which KG, when --kg is left to its default.
    let undone = ok(h, &["fix", "undo", "2"]);
    assert!(
        undone.starts_with("correction 2 undone (in knowledge graph ") && undone.contains("2H-kb.txt)"),
        "{undone}"
    );
    let undone = ok(h, &["fix", "undo", "1", "--kg", &file]);
    assert!(undone.starts_with("correction 1 undone: "), "the entry's old correction, by the path: {undone}");
    fails(h, &["fix", "undo", "7"], "no correction 7 in the correction store");
    let listed = ok(h, &["fix", "list", "--kg", "pq2n"]);
    assert!(listed.contains("    1  undone") && listed.contains("    2  undone"), "{listed}");
}

/// Regression (issue 36): a PathQuestion KB's patch spoke Freebase IRIs. A tab-separated KG's
/// export is lines its file takes as they are; its N-Triples are not in Freebase's namespace.
#[test]
fn a_tab_separated_kgs_export_is_lines_its_file_takes() {
    let home = tempfile::tempdir().unwrap();
    let h = home.path();
    let file = pathquestion_home(h);
    let kg = ["--kg", file.as_str()];
    let fix = |args: &[&str]| ok(h, &[&["fix"], args, &["--reason", "r"], &kg[..]].concat());
    fix(&["assert", "nathan_mayer_rothschild", "nationality", "france"]);
    fix(&["retract", "nathan_mayer_rothschild", "nationality", "united_kingdom"]);
    fix(&["relabel", "united_kingdom", "Great Britain"]);
    let patch = ok(h, &["fix", "export", "--kg", "pq2n"]);
    assert!(!patch.contains("freebase") && !patch.contains('<'), "{patch}");
    let data: Vec<&str> = patch.lines().filter(|l| !l.starts_with('#')).collect();
    assert_eq!(data, ["nathan_mayer_rothschild\tnationality\tfrance"], "{patch}");
    assert!(patch.contains("\n# delete: nathan_mayer_rothschild\tnationality\tunited_kingdom\n"), "{patch}");
    assert!(patch.contains("\n# rename: united_kingdom is now called \"Great Britain\""), "{patch}");
    // The KB takes the patch as it is.
    let mut kb = std::fs::OpenOptions::new().append(true).open(&file).unwrap();
    std::io::Write::write_all(&mut kb, patch.as_bytes()).unwrap();
    let seen = ok(h, &["kg", "neighbors", "nathan_mayer_rothschild", "nationality", "--no-overlay", "--kg", &file]);
    assert!(seen.contains("france"), "{seen}");
    // N-Triples for it: its ids, not in Freebase's namespace.
    let nt = ok(h, &["fix", "export", "--format", "nt", "--kg", &file]);
    assert!(
        nt.contains("<urn:ongraph:nathan_mayer_rothschild> <urn:ongraph:nationality> <urn:ongraph:france> ."),
        "{nt}"
    );
    assert!(!nt.contains("freebase"), "{nt}");
}

/// Issue 35 (adversarial pass): the first ordinary command on a damaged store let sled's own
/// recovery rewrite the files as it opened them, so salvage afterwards found 6 of 30
/// corrections where it had found 30. A copy taken before the open is kept beside a store found
/// damaged, and salvage reads it too.
#[test]
fn a_command_on_a_damaged_store_never_destroys_what_salvage_can_read() {
    let home = tempfile::tempdir().unwrap();
    let h = home.path();
    for i in 1..=30 {
        ok(
            h,
            &["fix", "assert", "m.lou_seal", &format!("test.r{i}"), &format!("m.t{i}"), "--reason", &format!("r{i}")],
        );
    }
    let db = store_dir(h).join("db");
    let mut bytes = std::fs::read(&db).unwrap();
    let records: Vec<usize> = bytes.windows(5).enumerate().filter(|(_, w)| *w == b"{\"v\":").map(|(i, _)| i).collect();
    assert!(records.len() >= 30, "{} records found in db", records.len());
    let at = records[15];
    bytes[at + 30..at + 60].copy_from_slice(&[b'X'; 30]);
    std::fs::write(&db, &bytes).unwrap();
    let salvaged = |h: &Path| {
        let out = run(h, &["fix", "export", "--salvage"]);
        assert_eq!(out.status.code(), Some(0), "{}", String::from_utf8_lossy(&out.stderr));
        jsonl(&String::from_utf8_lossy(&out.stdout)).len()
    };
    let before = salvaged(h);
    assert!(before >= 29, "salvage reads the damaged store: {before}");
    // Ordinary commands, one after another (the user tries again): whatever they say, they
    // must not cost salvage a correction (a second one once replaced the first one's copy
    // with a copy of what sled's recovery had left).
    for _ in 0..2 {
        let _ = run(h, &["fix", "list"]);
        assert_eq!(salvaged(h), before, "a command on the damaged store destroyed what salvage could read");
    }
}

/// A store the user may read but not write (a teammate's, a backup on a read-only mount): its
/// corrections still apply, a new one is refused saying what to do, and the store is untouched.
/// As root, permissions do not bind, so the commands then run as `nobody` (setpriv).
#[test]
fn a_store_that_is_not_yours_to_write_is_read_and_never_changed() {
    use std::os::unix::fs::PermissionsExt as _;
    let home = tempfile::tempdir().unwrap();
    let h = home.path();
    ok(h, &["fix", "relabel", "m.bright_house_field", "BayCare Ballpark", "--reason", "Renamed"]);
    let set_mode = |path: &Path, dir: u32, file: u32| {
        for entry in walk(path) {
            let mode = if entry.is_dir() { dir } else { file };
            std::fs::set_permissions(&entry, std::fs::Permissions::from_mode(mode)).unwrap();
        }
    };
    // Everything but the store is the reader's to write (logs, caches); the store is read-only.
    set_mode(h, 0o777, 0o666);
    set_mode(&store_dir(h), 0o555, 0o444);
    let root =
        String::from_utf8_lossy(&std::process::Command::new("id").arg("-u").output().unwrap().stdout).trim() == "0";
    let as_reader = |args: &[&str]| {
        let bin = env!("CARGO_BIN_EXE_ongraph");
        let mut cmd = if root {
            let mut c = std::process::Command::new("setpriv");
            c.args(["--reuid=65534", "--regid=65534", "--clear-groups", bin]);
            c
        } else {
            std::process::Command::new(bin)
        };
        for (key, dir) in [
            ("XDG_CONFIG_HOME", "config"),
            ("XDG_STATE_HOME", "state"),
            ("XDG_DATA_HOME", "data"),
            ("XDG_CACHE_HOME", "cache"),
        ] {
            cmd.env(key, h.join(dir));
        }
        cmd.env("HOME", h).env_remove("ONGRAPH_CONFIG").env_remove("ONGRAPH_LLM").env_remove("ONGRAPH_KG");
        cmd.args(args).output().expect("the binary runs")
    };
    let before = snapshot(&store_dir(h));
    let asked = as_reader(&["ask", PHANATIC]);
    assert_eq!(asked.status.code(), Some(0), "{}", String::from_utf8_lossy(&asked.stderr));
    assert_eq!(
        first_line(&String::from_utf8_lossy(&asked.stdout)),
        "Answer: BayCare Ballpark",
        "the correction applies"
    );
    let listed = as_reader(&["fix", "list"]);
    assert!(String::from_utf8_lossy(&listed.stdout).contains("relabel m.bright_house_field"), "{listed:?}");
    let refused = as_reader(&["fix", "assert", "m.lou_seal", "test.r", "m.t", "--reason", "r"]);
    let err = String::from_utf8_lossy(&refused.stderr);
    assert_eq!(refused.status.code(), Some(1), "{err}");
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(err.contains("is not yours to write") && err.contains("`overlay` in [defaults]"), "{err}");
    assert_eq!(snapshot(&store_dir(h)), before, "the store is untouched");
    set_mode(&store_dir(h), 0o755, 0o644);
}

/// Every file and directory under `path`, `path` first.
fn walk(path: &Path) -> Vec<std::path::PathBuf> {
    let mut all = vec![path.to_path_buf()];
    if path.is_dir() {
        let mut entries: Vec<_> = std::fs::read_dir(path).unwrap().map(|e| e.unwrap().path()).collect();
        entries.sort();
        for entry in entries {
            all.extend(walk(&entry));
        }
    }
    all
}

/// The files under `path` with their contents.
fn snapshot(path: &Path) -> Vec<(std::path::PathBuf, Vec<u8>)> {
    walk(path).into_iter().filter(|p| p.is_file()).map(|p| (p.clone(), std::fs::read(&p).unwrap())).collect()
}

/// PoG's tree marks a fact a correction asserted, as ToG's does, and its answer names the
/// correction it rests on (found by a trial: PoG showed the corrected fact as the KG's).
#[test]
fn pog_marks_the_facts_corrections_asserted_and_names_them_as_the_source() {
    const GIANTS: &str = "Which World Series did the San Francisco Giants win against the Texas Rangers?";
    const WON: &str = "sports.sports_team.championships";
    let home = tempfile::tempdir().unwrap();
    let h = home.path();
    ok(h, &["fix", "retract", "m.giants", WON, "m.ws_2010", "--reason", "test"]);
    ok(h, &["fix", "assert", "m.giants", WON, "m.ws_2010", "--reason", "checked: they won it"]);
    let said = ok(h, &["ask", "--method", "pog", GIANTS]);
    assert_eq!(first_line(&said), "Answer: 2010 World Series", "{said}");
    assert!(said.contains("Source: from knowledge-graph paths, through correction #2\n"), "{said}");
    let json: serde_json::Value = serde_json::from_str(&ok(h, &["ask", "--method", "pog", GIANTS, "--json"])).unwrap();
    let marked: Vec<&serde_json::Value> = json["beam"]["nodes"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|n| n["provenance"].to_string().contains("correction"))
        .collect();
    assert!(!marked.is_empty(), "the asserted fact is marked: {}", json["beam"]);
    assert!(marked.iter().all(|n| n["kind"].to_string().contains("m.ws_2010")), "{marked:?}");
}
