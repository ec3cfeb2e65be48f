//! Team-shared corrections through the binary, as a team uses them: users with data dirs of
//! their own on one real Oxigraph server (started on loopback by the test, stopped by PID;
//! install it with `bash scripts/install-sparql-servers`), and a loopback fake only where the
//! test must see the requests (credentials).

mod common;

use common::ongraph_cmd;
use common::servers::{OxigraphRw, Virtuoso, fixture};
use ongraph::testing::kg::{SparqlClient, SparqlConfig};
use std::path::{Path, PathBuf};
use std::process::Output;

const PHANATIC: &str = "Which ballpark hosts spring training for the team whose mascot is the Phillie Phanatic?";
const GRAPH: &str = "http://example.org/ongraph/corrections/demo";

/// A user: a home of their own (config, data, logs) with `[shared.team]` on `server`.
struct User {
    home: tempfile::TempDir,
}

impl User {
    fn new(author: &str, query: &str, update: &str, extra: &str) -> Self {
        let home = tempfile::tempdir().unwrap();
        let dir = home.path().join("config/ongraph");
        std::fs::create_dir_all(&dir).unwrap();
        let author = toml_string(author);
        let config = format!(
            "[defaults]\nauthor = {author}\nshared = \"team\"\n\n[shared.team]\nquery_endpoint = \"{query}\"\n\
             update_endpoint = \"{update}\"\ngraph = \"{GRAPH}\"\n{extra}"
        );
        std::fs::write(dir.join("config.toml"), config).unwrap();
        Self { home }
    }

    fn on(server: &OxigraphRw, author: &str) -> Self {
        Self::new(author, &server.query, &server.update, "")
    }

    fn path(&self) -> &Path {
        self.home.path()
    }

    fn run(&self, args: &[&str]) -> Output {
        ongraph_cmd(self.path(), args).output().expect("the binary runs")
    }

    /// Runs and expects success with nothing on stderr; returns stdout.
    fn ok(&self, args: &[&str]) -> String {
        let (out, err) = self.ok_with_note(args);
        assert_eq!(err, "", "{args:?} said something on stderr");
        out
    }

    /// Runs and expects success; returns stdout and stderr.
    fn ok_with_note(&self, args: &[&str]) -> (String, String) {
        let out = self.run(args);
        let err = String::from_utf8_lossy(&out.stderr).into_owned();
        assert_eq!(out.status.code(), Some(0), "{args:?}: {err}");
        (String::from_utf8_lossy(&out.stdout).into_owned(), err)
    }

    fn list(&self) -> Vec<serde_json::Value> {
        serde_json::from_str(&self.ok(&["fix", "list", "--json"])).unwrap()
    }

    fn log(&self) -> String {
        std::fs::read_to_string(self.path().join("state/ongraph/ongraph.log")).unwrap_or_default()
    }
}

/// `text` as a TOML basic string (any character, escaped).
fn toml_string(text: &str) -> String {
    toml::Value::String(text.to_string()).to_string()
}

fn first_line(text: &str) -> &str {
    text.lines().next().unwrap_or_default()
}

/// How many records the server holds in the set (each IRI once, however often it was sent).
fn records_on(server: &OxigraphRw) -> usize {
    let query = format!(
        "SELECT (COUNT(DISTINCT ?r) AS ?n) WHERE {{ GRAPH <{GRAPH}> {{ ?r <urn:ongraph:ns:publishedAt> ?t }} }}"
    );
    let rows = block_on(async { SparqlClient::new(SparqlConfig::new(&server.query)).unwrap().select(&query).await })
        .expect("the server answers");
    match rows.first().and_then(|r| r.get("n")) {
        Some(oxrdf::Term::Literal(n)) => n.value().parse().unwrap(),
        other => panic!("no count: {other:?}"),
    }
}

fn block_on<F: std::future::Future>(f: F) -> F::Output {
    tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap().block_on(f)
}

/// The record IRIs of a user's team corrections.
fn records_of(list: &[serde_json::Value]) -> std::collections::BTreeSet<String> {
    list.iter().filter_map(|c| c["team"]["record"].as_str().map(str::to_string)).collect()
}

/// Matches the query a push reads its record back with (`SELECT ?t …`), sent by GET or POST.
fn read_back(request: &wiremock::Request) -> bool {
    let form = format!("http://x/?{}", String::from_utf8_lossy(&request.body));
    let body = reqwest::Url::parse(&form).ok();
    let body = body.iter().flat_map(|u| u.query_pairs().map(|(_, v)| v.into_owned()).collect::<Vec<_>>());
    request.url.query_pairs().map(|(_, v)| v.into_owned()).chain(body).any(|q| q.starts_with("SELECT ?t WHERE"))
}

/// The answer to [`read_back`]: the server holds the record.
fn held() -> wiremock::ResponseTemplate {
    let row = serde_json::json!({"head": {"vars": ["t"]}, "results": {"bindings": [
        {"t": {"type": "literal", "value": "2026-11-25T10:00:00.000Z"}}]}});
    wiremock::ResponseTemplate::new(200).set_body_json(row)
}

#[test]
fn a_teammates_relabel_changes_the_next_answer_and_fix_list_names_its_author() {
    let server = OxigraphRw::start();
    let (ada, bea) = (User::on(&server, "Ada"), User::on(&server, "Bea"));
    // Bea's store has a correction from before she shared: it stays hers, and still applies.
    bea.ok(&["fix", "relabel", "m.lou_seal", "Lou", "--reason", "short", "--no-shared"]);
    assert_eq!(first_line(&bea.ok(&["ask", PHANATIC])), "Answer: Bright House Field");

    let made = ada.ok(&["fix", "relabel", "m.bright_house_field", "BayCare Ballpark", "--reason", "Renamed in 2021"]);
    assert_eq!(made, "correction 1: relabel m.bright_house_field as \"BayCare Ballpark\"\n");
    assert_eq!(records_on(&server), 1, "sent at once");

    // Bea's next run pulls it first.
    assert_eq!(first_line(&bea.ok(&["ask", PHANATIC])), "Answer: BayCare Ballpark");
    let listed = bea.ok(&["fix", "list"]);
    assert!(listed.starts_with("    1  active  local     relabel m.lou_seal as \"Lou\"  (short; Bea on "), "{listed}");
    let pulled =
        "\n    2  active  shared    relabel m.bright_house_field as \"BayCare Ballpark\"  (Renamed in 2021; Ada on ";
    assert!(listed.contains(pulled), "{listed}");
    let list = bea.list();
    assert_eq!((list[1]["author"].as_str(), list[1]["sharing"].as_str()), (Some("Ada"), Some("shared")));
    assert_eq!(list[1]["team"]["pulled"], true);
    assert_eq!(bea.ok(&["kg", "search", "Lou"]).lines().next(), Some("m.lou_seal\tLou\texact"));
    assert_eq!(records_on(&server), 1, "what was not made in the set is not sent");
    assert_eq!(records_of(&list), records_of(&ada.list()), "the same record on both sides");
    assert_eq!(bea.ok(&["fix", "sync"]), "pushed 0 record(s) to team, pulled 0 new record(s)\n");

    // `eval --with-corrections` pulls first too.
    let eve = User::on(&server, "Eve");
    let dataset = eve.path().join("questions.jsonl");
    std::fs::write(&dataset, format!("{{\"question\": \"{PHANATIC}\", \"answers\": [\"BayCare Ballpark\"]}}\n"))
        .unwrap();
    let out = eve.path().join("run");
    let (d, o) = (dataset.display().to_string(), out.display().to_string());
    eve.ok(&["eval", "--dataset", &d, "--kg", "demo", "--llm", "demo", "--with-corrections", "--out", &o]);
    let record: serde_json::Value =
        serde_json::from_str(std::fs::read_to_string(out.join("records.jsonl")).unwrap().lines().next().unwrap())
            .unwrap();
    let seen = (record["prediction"][0].as_str(), record["corrections"]["active"].as_u64());
    assert_eq!(seen, (Some("BayCare Ballpark"), Some(1)));

    // The UI pulls before it starts (here it then stops: no terminal).
    let fay = User::on(&server, "Fay");
    let ui = ongraph_cmd(fay.path(), &["tui"]).stdin(std::process::Stdio::null()).output().unwrap();
    assert!(String::from_utf8_lossy(&ui.stderr).contains("the terminal UI needs a terminal"));
    assert!(fay.ok(&["fix", "list", "--no-shared"]).contains("relabel m.bright_house_field as \"BayCare Ballpark\""));

    // Without the shared set, nothing is sent or pulled: Cal keeps to his own corrections.
    let cal = User::on(&server, "Cal");
    assert_eq!(first_line(&cal.ok(&["ask", PHANATIC, "--no-shared"])), "Answer: Bright House Field");
    assert_eq!(cal.ok(&["fix", "list", "--no-shared"]), "no corrections for demo\n");

    // A set that applies only approved corrections pulls teammates' but does not apply them.
    let dee = User::new("Dee", &server.query, &server.update, "apply = \"approved\"\n");
    assert_eq!(first_line(&dee.ok(&["ask", PHANATIC])), "Answer: Bright House Field");
    assert!(dee.ok(&["fix", "list"]).contains("  active  unapproved relabel m.bright_house_field"));
    // The correction's own set decides, not the command's: --no-shared does not apply it,
    // nor does `fix export` give it to the KG's maintainers.
    assert_eq!(first_line(&dee.ok(&["ask", PHANATIC, "--no-shared"])), "Answer: Bright House Field");
    assert!(dee.ok(&["fix", "list", "--no-shared"]).contains("  active  unapproved relabel m.bright_house_field"));
    for format in ["sparql-update", "nt", "jsonl"] {
        for shared in [&["--shared", "team"][..], &["--no-shared"][..]] {
            let args = [&["fix", "export", "--format", format][..], shared].concat();
            let exported = dee.ok(&args);
            assert!(!exported.contains("BayCare"), "{args:?}: {exported}");
        }
    }
    // Her own apply.
    dee.ok(&["fix", "relabel", "m.bright_house_field", "Spectrum Field", "--reason", "Renamed in 2017"]);
    let stadium = ["kg", "neighbors", "m.phillies", "baseball.baseball_team.spring_training_stadium"];
    assert_eq!(dee.ok(&stadium), "m.bright_house_field\tSpectrum Field\n");
    assert_eq!(bea.ok(&stadium), "m.bright_house_field\tSpectrum Field\n", "Dee's is the latest, for Bea too");
}

#[test]
fn two_writers_at_once_lose_nothing() {
    let server = OxigraphRw::start();
    let users = [User::on(&server, "Ada"), User::on(&server, "Bea")];
    std::thread::scope(|scope| {
        for user in &users {
            scope.spawn(move || {
                let who = user.path().display().to_string();
                for i in 0..50 {
                    let alias = format!("\"{who} {i}\"");
                    let out =
                        user.run(&["fix", "assert", "m.apple", "common.topic.alias", &alias, "--reason", "alias"]);
                    assert_eq!(out.status.code(), Some(0), "{}", String::from_utf8_lossy(&out.stderr));
                    assert!(out.stderr.is_empty(), "{}", String::from_utf8_lossy(&out.stderr));
                }
            });
        }
    });
    for user in &users {
        user.ok(&["fix", "sync"]);
    }
    assert_eq!(records_on(&server), 100);
    let (ada, bea) = (users[0].list(), users[1].list());
    assert_eq!((ada.len(), bea.len()), (100, 100));
    assert_eq!(records_of(&ada).len(), 100);
    assert_eq!(records_of(&ada), records_of(&bea), "both see the same 100 records");
    assert!(ada.iter().chain(&bea).all(|c| c["sharing"] == "shared" && c["active"] == true));
    // Each alias once, none twice.
    let aliases: std::collections::BTreeSet<&str> = bea.iter().filter_map(|c| c["object"]["value"].as_str()).collect();
    assert_eq!(aliases.len(), 100);
}

#[test]
fn a_correction_made_while_the_server_is_down_is_queued_and_sent_after() {
    let mut server = OxigraphRw::start();
    let (ada, bea) = (User::on(&server, "Ada"), User::on(&server, "Bea"));
    server.stop();

    let (made, note) =
        ada.ok_with_note(&["fix", "relabel", "m.bright_house_field", "BayCare Ballpark", "--reason", "Renamed"]);
    assert_eq!(made, "correction 1: relabel m.bright_house_field as \"BayCare Ballpark\"\n");
    assert_eq!(note.lines().count(), 1, "{note}");
    assert!(
        note.starts_with("1 correction not yet shared (shared set team: SPARQL endpoint http://127.0.0.1:"),
        "{note}"
    );
    let (listed, _) = ada.ok_with_note(&["fix", "list"]);
    assert!(listed.contains("  active  pending   relabel m.bright_house_field"), "{listed}");
    // It applies locally meanwhile.
    let (answer, _) = ada.ok_with_note(&["ask", PHANATIC]);
    assert_eq!(first_line(&answer), "Answer: BayCare Ballpark");
    let out = ada.run(&["fix", "sync"]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!((out.status.code(), err.lines().count()), (Some(1), 1), "{err}");
    assert!(err.starts_with("error: 1 correction not yet shared"), "{err}");
    // No pull was tried: not said as "pulled 0".
    assert_eq!(String::from_utf8_lossy(&out.stdout), "pushed 0 record(s) to team, not pulled\n");
    // Without the shared set, nothing is tried and nothing said.
    assert_eq!(first_line(&bea.ok(&["ask", PHANATIC, "--no-shared"])), "Answer: Bright House Field");

    // The same queue in a copy of Ada's data: sent twice, it is still one record.
    let twin = User::on(&server, "Ada");
    copy_dir(&ada.path().join("data"), &twin.path().join("data"));

    server.restart();
    assert_eq!(ada.ok(&["fix", "sync"]), "pushed 1 record(s) to team, pulled 0 new record(s)\n");
    assert_eq!(twin.ok(&["fix", "sync"]), "pushed 1 record(s) to team, pulled 0 new record(s)\n");
    assert_eq!(records_on(&server), 1, "sent twice, one record");
    assert!(ada.ok(&["fix", "list"]).contains("  active  shared    relabel m.bright_house_field"));

    assert_eq!(first_line(&bea.ok(&["ask", PHANATIC])), "Answer: BayCare Ballpark");
    let list = bea.list();
    assert_eq!(list.len(), 1);
    assert_eq!(list[0]["author"], "Ada");
    assert_eq!(records_of(&list), records_of(&ada.list()));

    // Ada's undo is the team's: Bea's next answer is the KG's again.
    let undone = ada.ok(&["fix", "undo", "1"]);
    assert_eq!(undone, "correction 1 undone: relabel m.bright_house_field as \"BayCare Ballpark\"\n");
    assert_eq!(first_line(&bea.ok(&["ask", PHANATIC])), "Answer: Bright House Field");
    let list = bea.list();
    assert_eq!(
        (list[0]["active"].as_bool(), list[0]["history"][1]["what"].as_str()),
        (Some(false), Some("undone by Ada"))
    );
    assert_eq!(records_on(&server), 2, "the correction and its undo");
}

fn copy_dir(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).unwrap();
    for entry in std::fs::read_dir(from).unwrap() {
        let entry = entry.unwrap();
        let target: PathBuf = to.join(entry.file_name());
        if entry.file_type().unwrap().is_dir() {
            copy_dir(&entry.path(), &target);
        } else {
            std::fs::copy(entry.path(), target).unwrap();
        }
    }
}

/// Two people who both go by `root` are still two authors: their stores' agent ids tell them
/// apart, so their corrections from the same base conflict.
#[test]
fn two_roots_are_two_authors() {
    let mut server = OxigraphRw::start();
    let (one, two) = (User::on(&server, "root"), User::on(&server, "root"));
    server.stop();
    one.ok_with_note(&["fix", "relabel", "m.apple", "Apple Computer", "--reason", "its old name"]);
    two.ok_with_note(&["fix", "relabel", "m.apple", "Apple Computer, Inc.", "--reason", "its older name"]);
    server.restart();
    one.ok(&["fix", "sync"]);
    two.ok(&["fix", "sync"]);
    one.ok(&["fix", "sync"]);
    for user in [&one, &two] {
        let list = user.list();
        let sharing: Vec<_> = list.iter().map(|c| c["sharing"].as_str().unwrap_or_default()).collect();
        assert_eq!(sharing, ["conflict", "conflict"], "{list:?}");
        assert_ne!(list[0]["team"]["agent"], list[1]["team"]["agent"]);
    }
    // One store's own corrections never conflict with each other.
    let mine = one.list();
    assert_eq!(mine[0]["team"]["agent"].as_str().map(str::len), Some(36));
}

#[test]
fn a_conflict_is_shown_to_both_and_settled_by_a_supersede() {
    let mut server = OxigraphRw::start();
    let (ada, bea) = (User::on(&server, "Ada"), User::on(&server, "Bea"));
    // Both correct the same name from the same base (none), before either sees the other's.
    server.stop();
    ada.ok_with_note(&["fix", "relabel", "m.apple", "Apple Computer", "--reason", "its old name"]);
    bea.ok_with_note(&["fix", "relabel", "m.apple", "Apple Computer, Inc.", "--reason", "its older name"]);
    server.restart();
    ada.ok(&["fix", "sync"]);
    bea.ok(&["fix", "sync"]);
    ada.ok(&["fix", "sync"]);

    let (a, b) = (ada.ok(&["fix", "list"]), bea.ok(&["fix", "list"]));
    assert!(
        a.contains("    1  active  conflict  relabel m.apple as \"Apple Computer\"  (its old name; Ada on "),
        "{a}"
    );
    assert!(a.contains(")  conflicts with 2 by Bea\n"), "{a}");
    assert!(b.contains(")  conflicts with 2 by Ada\n") && b.contains("(its older name; Bea on "), "{b}");
    // Meanwhile the later one (Bea's) applies, for both: corrections apply in the order they
    // were made, not the order they arrived (for Bea, her own came first).
    for user in [&ada, &bea] {
        let found = user.ok(&["kg", "search", "Apple Computer, Inc."]);
        assert_eq!(first_line(&found), "m.apple\tApple Computer, Inc.\texact");
    }
    let not_in_conflict = bea.run(&["fix", "supersede", "9"]);
    assert_eq!(not_in_conflict.status.code(), Some(1));

    // Bea keeps Ada's: hers is set aside, for both.
    assert_eq!(
        bea.ok(&["fix", "supersede", "1", "--reason", "Ada's is right"]),
        "correction 1 superseded: relabel m.apple as \"Apple Computer, Inc.\"\n"
    );
    ada.ok(&["fix", "sync"]);
    for user in [&ada, &bea] {
        let list = user.list();
        assert!(list.iter().all(|c| c["sharing"] == "shared"), "settled: {list:?}");
        let active: Vec<&str> =
            list.iter().filter(|c| c["active"] == true).filter_map(|c| c["label"].as_str()).collect();
        assert_eq!(active, ["Apple Computer"]);
        let superseded = list.iter().find(|c| c["label"] == "Apple Computer, Inc.").unwrap();
        assert_eq!(superseded["history"][1]["what"], "superseded by Bea");
    }
    assert_eq!(first_line(&bea.ok(&["kg", "search", "Apple Computer"])), "m.apple\tApple Computer\texact");
    // A supersede of one no longer in conflict is refused, with what to do instead.
    let again = ada.run(&["fix", "supersede", "1"]);
    let err = String::from_utf8_lossy(&again.stderr);
    assert!(err.contains("is not in conflict with another: undo it instead (fix undo 1)"), "{err}");
    assert_eq!(records_on(&server), 3, "two corrections and a supersede");
}

#[test]
fn hostile_strings_round_trip_and_change_nothing_else() {
    let server = OxigraphRw::start();
    let author = "Ada \"the Countess\" <ada@example.org> } ; DROP ALL ; {\n\tß 漢字 🦀 \\u0022";
    // Named with --shared: no default set in this config.
    let ada = User::new(author, &server.query, &server.update, "");
    let config = ada.path().join("config/ongraph/config.toml");
    let text = std::fs::read_to_string(&config).unwrap().replace("shared = \"team\"\n", "");
    std::fs::write(&config, text).unwrap();
    let bea = User::on(&server, "Bea");

    let label = "Apple \"} } ; DROP ALL ; { <x> \\ \\u0022 \n🍎 é";
    let reason = "line one\n\"quoted\" } } ; CLEAR ALL ; { '\\' \r\n last";
    let question = "Is \"this\" a > question?\u{7}";
    ada.ok(&["fix", "relabel", "m.apple", label, "--reason", reason, "--question", question, "--shared", "team"]);
    let literal = format!("\"{label}\"");
    ada.ok(&[
        "fix",
        "assert",
        "m.new'one;#x%41",
        "common.topic.alias",
        &literal,
        "--reason",
        reason,
        "--shared",
        "team",
    ]);
    assert_eq!(records_on(&server), 2, "two records, nothing dropped");

    let list = bea.list();
    assert_eq!(list.len(), 2);
    let relabel = &list[0];
    assert_eq!(relabel["label"], label);
    assert_eq!(relabel["reason"], reason.trim());
    assert_eq!(relabel["author"], author);
    assert_eq!(relabel["context"]["question"], question);
    assert_eq!(
        (list[1]["subject"].as_str(), list[1]["object"]["value"].as_str()),
        (Some("m.new'one;#x%41"), Some(label))
    );
    assert_eq!(records_of(&list), records_of(&ada.list()));
    // What Bea's UI and answers see: the name, whole, on its one line (the break shown).
    let found = bea.ok(&["kg", "search", "Apple"]);
    assert!(found.contains(&format!("m.apple\t{}\t", label.replace('\n', "\\n"))), "{found}");
}

/// A record stamped long before the last pull (a writer whose clock is far behind) is missed by
/// the pull of what is new, and taken by `fix sync --full`.
#[test]
fn sync_full_takes_records_the_overlap_missed() {
    let server = OxigraphRw::start();
    let (ada, bea) = (User::on(&server, "Ada"), User::on(&server, "Bea"));
    ada.ok(&["fix", "relabel", "m.apple", "Apple Computer", "--reason", "old name"]);
    assert_eq!(bea.ok(&["fix", "sync"]), "pushed 0 record(s) to team, pulled 1 new record(s)\n");
    let ns = "urn:ongraph:ns:";
    let late = format!(
        "INSERT DATA {{ GRAPH <{GRAPH}> {{ <urn:uuid:01900000-0000-7000-8000-000000000001> \
         <http://www.w3.org/1999/02/22-rdf-syntax-ns#type> <{ns}Correction> ; <{ns}kg> \"demo\" ; \
         <{ns}operation> \"relabel\" ; <{ns}subject> \"m.lou_seal\" ; <{ns}label> \"Lou\" ; \
         <{ns}reason> \"slow clock\" ; <http://www.w3.org/ns/prov#wasAttributedTo> <urn:ongraph:agent:Old%20Cal> ; \
         <http://www.w3.org/ns/prov#generatedAtTime> \"2020-01-01T00:00:00+01:00\"^^<http://www.w3.org/2001/XMLSchema#dateTime> ; \
         <{ns}publishedAt> \"2020-01-01T00:00:00Z\"^^<http://www.w3.org/2001/XMLSchema#dateTime> . \
         <urn:uuid:01900000-0000-7000-8000-000000000002> \
         <http://www.w3.org/1999/02/22-rdf-syntax-ns#type> <{ns}Correction> ; <{ns}kg> \"demo\" ; \
         <{ns}operation> \"retract\" ; <{ns}subject> \"m.a> }} ; DROP ALL ; {{\" ; <{ns}relation> \"r\" ; \
         <{ns}object> \"m.b\" ; <{ns}objectKind> \"entity\" ; \
         <http://www.w3.org/ns/prov#wasAttributedTo> <urn:ongraph:agent:Mallory> ; \
         <http://www.w3.org/ns/prov#generatedAtTime> \"2020-01-01T00:00:00Z\"^^<http://www.w3.org/2001/XMLSchema#dateTime> ; \
         <{ns}publishedAt> \"2020-01-01T00:00:00Z\"^^<http://www.w3.org/2001/XMLSchema#dateTime> }} }}"
    );
    let mut config = SparqlConfig::new(&server.update);
    config.max_retries = 0;
    block_on(async { SparqlClient::new(config).unwrap().update(&late).await }).expect("the update applies");
    assert_eq!(bea.ok(&["fix", "sync"]), "pushed 0 record(s) to team, pulled 0 new record(s)\n");
    // Mallory's record, whose subject is no id, is skipped (and logged), never applied.
    assert_eq!(
        bea.ok(&["fix", "sync", "--full"]),
        "pushed 0 record(s) to team, pulled 1 new record(s)\nskipped 1 record from team: not a well-formed record \
         (a field missing or not what ongraph writes) (urn:uuid:01900000-0000-7000-8000-000000000002)\n"
    );
    assert!(bea.log().contains("skipped: record urn:uuid:01900000-0000-7000-8000-000000000002: the subject"));
    let list = bea.list();
    assert_eq!(list.len(), 2);
    assert_eq!((list[1]["author"].as_str(), list[1]["label"].as_str()), (Some("Old Cal"), Some("Lou")));
    // Its time is kept as its writer gave it (with an offset).
    assert_eq!(list[1]["created"], "2020-01-01T00:00:00+01:00");
}

/// A record stamped far in the future (a writer's clock years ahead, or a hostile one) does not
/// stop later pulls: where the next pull starts is never later than the reader's own clock.
#[test]
fn a_record_from_the_future_does_not_stop_later_pulls() {
    let server = OxigraphRw::start();
    let (ada, bea) = (User::on(&server, "Ada"), User::on(&server, "Bea"));
    let ns = "urn:ongraph:ns:";
    let dt = "http://www.w3.org/2001/XMLSchema#dateTime";
    let record = |n: u32, published: &str, kg: &str| {
        format!(
            "<urn:uuid:01900000-0000-7000-8000-00000000000{n}> \
             <http://www.w3.org/1999/02/22-rdf-syntax-ns#type> <{ns}Correction> ; <{ns}kg> \"{kg}\" ; \
             <{ns}operation> \"relabel\" ; <{ns}subject> \"m.lou_seal\" ; <{ns}label> \"Lou {n}\" ; \
             <http://www.w3.org/ns/prov#wasAttributedTo> <urn:ongraph:agent:Tim> ; \
             <http://www.w3.org/ns/prov#generatedAtTime> \"2099-01-01T00:00:00Z\"^^<{dt}> ; \
             <{ns}publishedAt> \"{published}\"^^<{dt}> ."
        )
    };
    // One well formed from 2099, and one malformed from 2100 (its kg holds a NUL).
    let future = format!(
        "INSERT DATA {{ GRAPH <{GRAPH}> {{ {} {} }} }}",
        record(1, "2099-01-01T00:00:00Z", "demo"),
        record(2, "2100-01-01T00:00:00Z", "demo\\u0000x")
    );
    let mut config = SparqlConfig::new(&server.update);
    config.max_retries = 0;
    block_on(async { SparqlClient::new(config).unwrap().update(&future).await }).expect("the update applies");
    assert_eq!(
        bea.ok(&["fix", "sync"]),
        "pushed 0 record(s) to team, pulled 1 new record(s)\nskipped 1 record from team: not a well-formed record \
         (a field missing or not what ongraph writes) (urn:uuid:01900000-0000-7000-8000-000000000002)\n\
         1 record from team dated in the future: taken as made when it arrived\n"
    );
    assert!(bea.log().contains("urn:uuid:01900000-0000-7000-8000-000000000002: its kg has a control character"));

    // Ada, whose clock is right, corrects after (told what her pull skipped first): Bea's next
    // pull still takes it.
    let (_, note) = ada.ok_with_note(&[
        "fix",
        "relabel",
        "m.bright_house_field",
        "BayCare Ballpark",
        "--reason",
        "Renamed in 2021",
    ]);
    assert_eq!(note.lines().count(), 2, "{note}");
    assert_eq!(bea.ok(&["fix", "sync"]), "pushed 0 record(s) to team, pulled 1 new record(s)\n");
    assert_eq!(first_line(&bea.ok(&["ask", PHANATIC])), "Answer: BayCare Ballpark");
    assert_eq!(bea.list().len(), 2);
}

/// A record the server refuses for good (HTTP 400) is set aside as rejected, with the reason,
/// and the rest of the queue is still sent; a server error (500) keeps the queue as it is.
#[test]
fn a_rejected_record_is_set_aside_and_the_queue_goes_on() {
    use wiremock::matchers::{body_string_contains, path};
    use wiremock::{Mock, MockServer, ResponseTemplate};
    let runtime = tokio::runtime::Runtime::new().unwrap();
    let server = runtime.block_on(async {
        let server = MockServer::start().await;
        let empty = serde_json::json!({"head": {"vars": ["r"]}, "results": {"bindings": []}});
        Mock::given(path("/update"))
            .and(body_string_contains("Refus3d"))
            .respond_with(ResponseTemplate::new(400).set_body_string("no such thing"))
            .with_priority(1)
            .mount(&server)
            .await;
        Mock::given(path("/update"))
            .and(body_string_contains("Bus1"))
            .respond_with(ResponseTemplate::new(500).set_body_string("busy"))
            .with_priority(1)
            .mount(&server)
            .await;
        Mock::given(path("/query")).and(read_back).respond_with(held()).mount(&server).await;
        Mock::given(path("/query")).respond_with(ResponseTemplate::new(200).set_body_json(empty)).mount(&server).await;
        Mock::given(path("/update")).respond_with(ResponseTemplate::new(204)).mount(&server).await;
        server
    });
    let (query, update) = (format!("{}/query", server.uri()), format!("{}/update", server.uri()));
    let ada = User::new("Ada", &query, &update, "");
    let (made, note) = ada.ok_with_note(&["fix", "relabel", "m.apple", "Refus3d", "--reason", "r"]);
    assert_eq!(made, "correction 1: relabel m.apple as \"Refus3d\"\n");
    assert_eq!(note, "1 correction rejected by team for good: see fix list (they still apply here)\n");
    // The next one goes: the rejected one does not block the queue.
    ada.ok(&["fix", "relabel", "m.lou_seal", "Lou", "--reason", "short"]);
    let list = ada.list();
    let sharing: Vec<_> = list.iter().map(|c| c["sharing"].as_str().unwrap_or_default()).collect();
    assert_eq!(sharing, ["rejected", "shared"]);
    let why = list[0]["team"]["rejected"].as_str().unwrap_or_default();
    assert!(why.contains("HTTP 400") && why.contains("no such thing"), "{why}");
    let listed = ada.ok(&["fix", "list"]);
    assert!(listed.contains("  active  rejected  relabel m.apple as \"Refus3d\""), "{listed}");
    assert!(listed.contains("rejected: shared set team: SPARQL endpoint"), "{listed}");
    // It still applies here.
    assert_eq!(ada.ok(&["kg", "search", "Refus3d"]).lines().next(), Some("m.apple\tRefus3d\texact"));

    // A server error is not a refusal: that record and those after it wait.
    let (_, note) = ada.ok_with_note(&["fix", "relabel", "m.bright_house_field", "Bus1", "--reason", "r"]);
    assert!(note.starts_with("1 correction not yet shared") && note.contains("500"), "{note}");
    ada.ok_with_note(&["fix", "relabel", "m.phillies", "Phils", "--reason", "r"]);
    let out = ada.run(&["fix", "sync"]);
    assert_eq!(String::from_utf8_lossy(&out.stdout), "pushed 0 record(s) to team, pulled 0 new record(s)\n");
    assert!(String::from_utf8_lossy(&out.stderr).starts_with("error: 2 corrections not yet shared"));
    let list: Vec<serde_json::Value> = serde_json::from_str(&ada.ok_with_note(&["fix", "list", "--json"]).0).unwrap();
    let sharing: Vec<_> = list.iter().map(|c| c["sharing"].as_str().unwrap_or_default()).collect();
    assert_eq!(sharing, ["rejected", "shared", "pending", "pending"]);
}

/// An update endpoint that cannot be reached costs a command one failed connection: not
/// retried, and the pull after it is not tried (one line says what waits).
#[test]
fn an_unreachable_server_is_tried_once_and_not_pulled_from_after() {
    use wiremock::matchers::path;
    use wiremock::{Mock, MockServer, ResponseTemplate};
    let runtime = tokio::runtime::Runtime::new().unwrap();
    let server = runtime.block_on(async {
        let server = MockServer::start().await;
        let empty = serde_json::json!({"head": {"vars": ["r"]}, "results": {"bindings": []}});
        Mock::given(path("/query")).respond_with(ResponseTemplate::new(200).set_body_json(empty)).mount(&server).await;
        server
    });
    let closed = std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port();
    let (query, update) = (format!("{}/query", server.uri()), format!("http://127.0.0.1:{closed}/update"));
    let ada = User::new("Ada", &query, &update, "");
    let started = std::time::Instant::now();
    let (_, note) = ada.ok_with_note(&["fix", "relabel", "m.apple", "Apple Computer", "--reason", "old name"]);
    assert!(started.elapsed() < std::time::Duration::from_secs(10), "{:?}", started.elapsed());
    assert_eq!(note.lines().count(), 1, "{note}");
    assert!(note.starts_with("1 correction not yet shared (") && note.contains("cannot connect"), "{note}");
    // The pull before the correction (a count, then the list), and none after the send that
    // could not connect.
    let requests = runtime.block_on(server.received_requests()).unwrap();
    assert_eq!(requests.len(), 2, "{requests:?}");
    assert_eq!(ada.log().matches("retrying").count(), 0, "a failed connection is not retried");
}

/// Credentials go with every request to both endpoints, and never anywhere else: not on the
/// terminal, not in the log, not in the store.
#[test]
fn credentials_are_sent_and_never_shown() {
    use wiremock::matchers::{header, method, path};
    use wiremock::{Mock, MockServer, ResponseTemplate};
    let runtime = tokio::runtime::Runtime::new().unwrap();
    let server = runtime.block_on(async {
        let server = MockServer::start().await;
        let empty = serde_json::json!({"head": {"vars": ["r"]}, "results": {"bindings": []}});
        let bearer = || header("authorization", "Bearer s3cr3t-t0ken");
        // Queries this long go by POST, like updates: told apart by path.
        Mock::given(path("/query")).and(bearer()).and(read_back).respond_with(held()).mount(&server).await;
        Mock::given(path("/query"))
            .and(bearer())
            .respond_with(ResponseTemplate::new(200).set_body_json(empty.clone()))
            .mount(&server)
            .await;
        Mock::given(path("/update")).and(bearer()).respond_with(ResponseTemplate::new(204)).mount(&server).await;
        // Without them: refused, saying so.
        Mock::given(method("POST"))
            .respond_with(ResponseTemplate::new(401).set_body_string("who are you?"))
            .mount(&server)
            .await;
        server
    });
    let (query, update) = (format!("{}/query", server.uri()), format!("{}/update", server.uri()));
    let ada = User::new("Ada", &query, &update, "credentials_env = \"ONGRAPH_TEST_TEAM_TOKEN\"\n");
    // What the commands said on the terminal, all of it.
    let terminal = std::cell::RefCell::new(String::new());
    let run = |token: Option<&str>, args: &[&str]| {
        let mut cmd = ongraph_cmd(ada.path(), args);
        // Every request logged (to the log file, checked below too).
        cmd.env("ONGRAPH_LOG_LEVEL", "debug");
        match token {
            Some(t) => cmd.env("ONGRAPH_TEST_TEAM_TOKEN", t),
            None => cmd.env_remove("ONGRAPH_TEST_TEAM_TOKEN"),
        };
        let out = cmd.output().unwrap();
        let mut said = terminal.borrow_mut();
        said.push_str(&String::from_utf8_lossy(&out.stdout));
        said.push_str(&String::from_utf8_lossy(&out.stderr));
        out
    };
    let out = run(Some("s3cr3t-t0ken"), &["fix", "relabel", "m.apple", "Apple Computer", "--reason", "old name"]);
    assert_eq!(out.status.code(), Some(0));
    assert!(out.stderr.is_empty(), "sent: {}", String::from_utf8_lossy(&out.stderr));
    let requests = runtime.block_on(server.received_requests()).unwrap();
    assert!(requests.len() >= 3, "pull, send, pull: {}", requests.len());
    assert!(requests.iter().all(|r| r.headers.get("authorization").is_some()));

    // A wrong token: refused, said, queued; the token in no message.
    let wrong = "wr0ng-t0ken-d0nt-sh0w";
    let out = run(Some(wrong), &["fix", "relabel", "m.lou_seal", "Lou", "--reason", "short"]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.starts_with("1 correction not yet shared") && err.contains("401"), "{err}");
    // Basic credentials too (user:password), still refused by this server.
    let out = run(Some("ada:pa55w0rd-d0nt-sh0w"), &["fix", "sync"]);
    assert!(String::from_utf8_lossy(&out.stderr).contains("401"));
    let basic = runtime.block_on(server.received_requests()).unwrap();
    let sent = basic.last().and_then(|r| r.headers.get("authorization")).unwrap().to_str().unwrap().to_string();
    assert_eq!(sent, "Basic YWRhOnBhNTV3MHJkLWQwbnQtc2gwdw==");

    // Not set: a one-line error naming the variable.
    let out = run(None, &["fix", "list"]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(err, "error: [shared.team] credentials_env names $ONGRAPH_TEST_TEAM_TOKEN, which is not set\n");
    run(Some("s3cr3t-t0ken"), &["fix", "sync"]);
    run(Some("ada:pa55w0rd-d0nt-sh0w"), &["fix", "list"]);
    let said = terminal.borrow().clone();
    assert!(said.contains("401"), "the commands said something: {said}");
    for secret in ["s3cr3t-t0ken", wrong, "pa55w0rd-d0nt-sh0w", "YWRhOnBhNTV3MHJk"] {
        assert!(!said.contains(secret), "{secret} was shown on the terminal: {said}");
    }

    let mut everything = String::new();
    for dir in ["data", "state", "config", "cache"] {
        for file in walk(&ada.path().join(dir)) {
            everything.push_str(&String::from_utf8_lossy(&std::fs::read(file).unwrap()));
        }
    }
    assert!(!ada.log().is_empty(), "the log was written");
    for secret in ["s3cr3t-t0ken", wrong, "pa55w0rd-d0nt-sh0w", "YWRhOnBhNTV3MHJk"] {
        assert!(!everything.contains(secret), "{secret} was written down");
    }
}

/// A server that exits at once (here, its port already taken) is reported within
/// moments, with what it said.
#[test]
fn a_server_that_exits_fails_fast_with_its_stderr() {
    let taken = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = taken.local_addr().unwrap();
    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("stderr");
    let mut child = std::process::Command::new("sh")
        .args(["-c", "echo 'Address already in use' >&2; exit 3"])
        .stderr(std::fs::File::create(&log).unwrap())
        .spawn()
        .unwrap();
    // The child is gone (and something else holds its port): a failure at once, with what it
    // said, not a wait of 20 s nor a connection to the other listener taken for the server.
    child.wait().unwrap();
    let started = std::time::Instant::now();
    let panic = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        common::servers::wait_listening(&format!("127.0.0.1:{}", addr.port()), &mut child, &log)
    }))
    .unwrap_err();
    let said = panic.downcast_ref::<String>().cloned().unwrap_or_default();
    assert!(said.contains("exited") && said.contains("Address already in use"), "{said}");
    assert!(started.elapsed() < std::time::Duration::from_secs(5));
    drop(taken);
}

fn walk(dir: &Path) -> Vec<PathBuf> {
    let Ok(entries) = std::fs::read_dir(dir) else { return Vec::new() };
    let mut out = Vec::new();
    for entry in entries.flatten() {
        if entry.file_type().is_ok_and(|t| t.is_dir()) {
            out.extend(walk(&entry.path()));
        } else {
            out.push(entry.path());
        }
    }
    out
}

/// Runs and expects a one-line error (exit 1); returns it.
fn refused(user: &User, args: &[&str]) -> String {
    let out = user.run(args);
    let err = String::from_utf8_lossy(&out.stderr).into_owned();
    assert_eq!((out.status.code(), err.lines().count()), (Some(1), 1), "{args:?}: {err}");
    err
}

#[test]
fn reviews_decide_what_applies_under_apply_approved_and_the_latest_wins() {
    let server = OxigraphRw::start();
    let approved = "apply = \"approved\"\n";
    let ada = User::on(&server, "Ada");
    let bea = User::on(&server, "Bea");
    let dee = User::new("Dee", &server.query, &server.update, approved);
    let eve = User::new("Eve", &server.query, &server.update, approved);
    ada.ok(&["fix", "relabel", "m.bright_house_field", "BayCare Ballpark", "--reason", "Renamed in 2021"]);

    // Waiting: listed for review, not applied.
    let waiting = dee.ok(&["fix", "review"]);
    assert!(
        waiting.starts_with("    1  relabel m.bright_house_field as \"BayCare Ballpark\"  (Renamed in 2021; Ada on ")
            && waiting.contains(")  (applies once approved)\n"),
        "{waiting}"
    );
    assert!(waiting.ends_with("fix review approve ID / fix review reject ID [--reason …] reviews one\n"), "{waiting}");
    assert_eq!(first_line(&dee.ok(&["ask", PHANATIC])), "Answer: Bright House Field");
    // Under apply = "all" it is listed too (nobody reviewed it), without the note.
    let for_bea = bea.ok(&["fix", "review"]);
    assert!(for_bea.contains("(Renamed in 2021; Ada on ") && !for_bea.contains("applies once"), "{for_bea}");

    // Nobody reviews their own, nor a correction that is not a teammate's shared one.
    let own = refused(&ada, &["fix", "review", "approve", "1"]);
    assert_eq!(own, "error: correction 1 is your own: a teammate reviews it\n");
    dee.ok(&["fix", "relabel", "m.lou_seal", "Lou", "--reason", "short", "--no-shared"]);
    let local = refused(&dee, &["fix", "review", "approve", "2"]);
    assert_eq!(local, "error: correction 2 is not a teammate's shared correction: there is nothing to review\n");
    assert!(refused(&dee, &["fix", "review", "reject", "99"]).contains("no correction 99"));

    // Dee approves: it applies for her from now on, and everyone sees who approved it.
    let said = dee.ok(&["fix", "review", "approve", "1", "--reason", "checked on the team's site"]);
    assert_eq!(said, "correction 1 by Ada approved: relabel m.bright_house_field as \"BayCare Ballpark\"\n");
    assert_eq!(first_line(&dee.ok(&["ask", PHANATIC])), "Answer: BayCare Ballpark");
    assert_eq!(dee.ok(&["fix", "review"]), "no teammate's correction waits for review in demo\n");
    let again = refused(&dee, &["fix", "review", "approve", "1"]);
    assert_eq!(again, "error: correction 1 is already approved by you\n");
    for user in [&ada, &bea, &eve] {
        let listed = user.ok(&["fix", "list"]);
        assert!(listed.contains("(Renamed in 2021; Ada on ") && listed.contains("  approved by Dee\n"), "{listed}");
    }
    assert_eq!(first_line(&eve.ok(&["ask", PHANATIC])), "Answer: BayCare Ballpark", "approved: applies for Eve");
    let listed = eve.list();
    assert_eq!((listed[0]["review"].as_str(), listed[0]["reviewed_by"].as_str()), (Some("approved"), Some("Dee")));
    assert_eq!(listed[0]["awaiting_approval"], serde_json::Value::Null);

    // Eve rejects it later: the latest review wins, for everyone under apply = "approved".
    eve.ok(&["fix", "review", "reject", "1", "--reason", "not official yet"]);
    for user in [&dee, &eve] {
        assert_eq!(first_line(&user.ok(&["ask", PHANATIC])), "Answer: Bright House Field");
        let listed = user.ok(&["fix", "list"]);
        assert!(listed.contains("unapproved relabel m.bright_house_field"), "{listed}");
        assert!(listed.contains("  rejected by Eve\n"), "{listed}");
    }
    // Under apply = "all", reviews are shown but every correction applies.
    assert_eq!(first_line(&bea.ok(&["ask", PHANATIC])), "Answer: BayCare Ballpark");
    assert!(bea.ok(&["fix", "list"]).contains("  rejected by Eve\n"));
    // Dee approves it again: hers is the latest now.
    dee.ok(&["fix", "review", "approve", "1"]);
    assert_eq!(first_line(&eve.ok(&["ask", PHANATIC])), "Answer: BayCare Ballpark");
    let history: Vec<String> =
        eve.list()[0]["history"].as_array().unwrap().iter().map(|h| h["what"].as_str().unwrap().to_string()).collect();
    assert_eq!(history, ["created", "approved by Dee", "rejected by Eve", "approved by Dee"]);
    assert_eq!(records_on(&server), 4, "a correction and three reviews");
}

#[test]
fn approved_corrections_export_as_an_update_the_maintainers_can_apply() {
    let server = OxigraphRw::start();
    let (ada, bea) = (User::on(&server, "Ada"), User::on(&server, "Bea"));
    let hostile = "Bay\"Care\" \\ Ball}park\n; DROP ALL ; {\u{1}\u{7f}\t'x'";
    ada.ok(&["fix", "relabel", "m.bright_house_field", hostile, "--reason", "Renamed\n\"} ; DROP ALL"]);
    ada.ok(&[
        "fix",
        "retract",
        "m.phillies",
        "baseball.baseball_team.spring_training_stadium",
        "m.bright_house_field",
        "--reason",
        "not approved",
    ]);
    bea.ok(&["fix", "relabel", "m.lou_seal", "Lou", "--reason", "Bea's own, not reviewed"]);
    bea.ok(&["fix", "review", "approve", "1"]);
    let patch = bea.ok(&["fix", "export", "--format", "sparql-update", "--approved"]);
    assert!(!patch.contains("Lou") && !patch.contains("spring_training"), "only approved ones: {patch}");
    assert_eq!(patch.matches("INSERT DATA").count(), 1, "{patch}");
    // Without --approved, Bea's own and Ada's retraction are there too.
    let all = bea.ok(&["fix", "export", "--format", "sparql-update"]);
    assert!(all.contains("Lou") && all.contains("spring_training_stadium"), "{all}");

    // The maintainers' server takes it, and holds the name exactly as typed.
    let maintainers = OxigraphRw::start();
    let client = SparqlClient::new(SparqlConfig::new(&maintainers.update)).unwrap();
    block_on(client.update(&patch)).expect("the patch applies");
    let query = SparqlClient::new(SparqlConfig::new(&maintainers.query)).unwrap();
    let rows = block_on(query.select("SELECT ?s ?p ?o WHERE { ?s ?p ?o }")).unwrap();
    assert_eq!(rows.len(), 1, "one triple, nothing else: {rows:?}");
    match (rows[0].get("s"), rows[0].get("o")) {
        (Some(oxrdf::Term::NamedNode(s)), Some(oxrdf::Term::Literal(o))) => {
            assert!(s.as_str().ends_with("m.bright_house_field"), "{s}");
            assert_eq!(o.value(), hostile);
        }
        other => panic!("{other:?}"),
    }
    // The N-Triples export of the same is one line a parser reads back.
    let nt = bea.ok(&["fix", "export", "--format", "nt", "--approved"]);
    let triples: Vec<_> = oxttl::NTriplesParser::new().for_slice(nt.as_bytes()).collect::<Result<_, _>>().unwrap();
    assert_eq!(triples.len(), 1);
}

/// Virtuoso 7 (Debian's), the server that serves Freebase to ToG, holding the corrections graph
/// beside the KG's: through its `/sparql` endpoint made writable for the anonymous user (the
/// test cannot reach `/sparql-auth`'s Digest authentication; see the README for a real server).
/// Records are written with an explicit GRAPH (Virtuoso's INSERT DATA needs one), read with
/// GRAPH and no FROM / FROM NAMED, stamped by the client (Virtuoso's NOW() has no timezone).
#[test]
fn the_sync_works_on_virtuoso_beside_the_kg_it_serves() {
    let server = Virtuoso::start(&fixture("freebase-demo.nt"));
    server.writable();
    let kg = format!("[kg.virtuoso]\nendpoint = \"{}\"\nprofile = \"freebase\"\n", server.url);
    let ada = User::new("Ada", &server.url, &server.url, &kg);
    let bea = User::new("Bea", &server.url, &server.url, &format!("apply = \"approved\"\n{kg}"));
    fn on<'a>(args: &[&'a str]) -> Vec<&'a str> {
        [args, &["--kg", "virtuoso"]].concat()
    }
    let relations = bea.ok(&on(&["kg", "relations", "m.bright_house_field"]));
    let answer = |user: &User| first_line(&user.ok(&on(&["ask", PHANATIC]))).to_string();
    assert_eq!(answer(&bea), "Answer: Bright House Field");

    let made =
        ada.ok(&on(&["fix", "relabel", "m.bright_house_field", "BayCare Ballpark", "--reason", "Renamed in 2021"]));
    assert_eq!(made, "correction 1: relabel m.bright_house_field as \"BayCare Ballpark\"\n");
    assert_eq!(answer(&ada), "Answer: BayCare Ballpark");
    // Bea pulls it; under apply = "approved" it waits for her review.
    assert_eq!(answer(&bea), "Answer: Bright House Field");
    let listed = bea.ok(&on(&["fix", "list"]));
    assert!(
        listed.contains("unapproved relabel m.bright_house_field as \"BayCare Ballpark\"  (Renamed in 2021; Ada on ")
    );
    bea.ok(&on(&["fix", "review", "approve", "1"]));
    assert_eq!(answer(&bea), "Answer: BayCare Ballpark");
    assert!(ada.ok(&on(&["fix", "list"])).contains("  approved by Bea\n"));
    // The records share the store with the KG, and Virtuoso queries the union of its graphs,
    // yet nothing of them shows in the KG: a record names entities by literal ids, never by
    // the KG's IRIs.
    assert_eq!(bea.ok(&on(&["kg", "relations", "m.bright_house_field", "--no-overlay"])), relations);
    // A record's reason is no entity's name: the search finds nothing (a one-line error).
    let search = bea.run(&on(&["kg", "search", "Renamed in 2021", "--no-overlay"]));
    let said = String::from_utf8_lossy(&search.stderr);
    assert_eq!(search.status.code(), Some(1), "{said}");
    assert!(said.contains("has no entity named like \"Renamed in 2021\""), "{said}");
    assert!(!String::from_utf8_lossy(&search.stdout).contains("urn:"));
    let client = SparqlClient::new(SparqlConfig::new(&server.url)).unwrap();
    let count = format!(
        "SELECT (COUNT(DISTINCT ?r) AS ?n) WHERE {{ GRAPH <{GRAPH}> {{ ?r <urn:ongraph:ns:publishedAt> ?t }} }}"
    );
    let rows = block_on(client.select(&count)).unwrap();
    match rows.first().and_then(|r| r.get("n")) {
        Some(oxrdf::Term::Literal(n)) => assert_eq!(n.value(), "2", "a correction and its approval"),
        other => panic!("no count: {other:?}"),
    }
    assert_eq!(ada.ok(&on(&["fix", "sync"])), "pushed 0 record(s) to team, pulled 0 new record(s)\n");
}

/// A server that cuts a long answer short (Virtuoso past its `ResultSetMaxRows`) gives fewer
/// IRIs than it counted: the list is asked for again, page by page, and nothing is missed.
#[test]
fn a_list_cut_short_is_read_again_page_by_page() {
    use wiremock::matchers::{path, query_param_contains};
    use wiremock::{Mock, MockServer, ResponseTemplate};
    let (one, two) = ("urn:uuid:0190a7d4-0000-7000-8000-000000000001", "urn:uuid:0190a7d4-0000-7000-8000-000000000002");
    let iri = |v: &str| serde_json::json!({"type": "uri", "value": v});
    let lit = |v: &str| serde_json::json!({"type": "literal", "value": v});
    let time = |v: &str| serde_json::json!({"type": "literal", "value": v, "datatype": "http://www.w3.org/2001/XMLSchema#dateTime"});
    let sent = "2026-11-25T10:00:00.000Z";
    let listed = |iris: &[&str]| {
        let rows: Vec<_> = iris.iter().map(|r| serde_json::json!({"r": iri(r), "latest": time(sent)})).collect();
        serde_json::json!({"head": {"vars": ["r", "latest"]}, "results": {"bindings": rows}})
    };
    let number = |n: usize| {
        serde_json::json!({"type": "literal", "value": n.to_string(),
        "datatype": "http://www.w3.org/2001/XMLSchema#integer"})
    };
    // One row per triple, as the server gives them.
    let record = |r: &str, entity: &str, name: &str| {
        let ns = |t: &str| format!("urn:ongraph:ns:{t}");
        [
            ("http://www.w3.org/1999/02/22-rdf-syntax-ns#type".to_string(), iri("urn:ongraph:ns:Correction")),
            ("http://www.w3.org/ns/prov#wasAttributedTo".to_string(), iri("urn:ongraph:agent:Ada")),
            ("http://www.w3.org/ns/prov#generatedAtTime".to_string(), time(sent)),
            (ns("kg"), lit("demo")),
            (ns("operation"), lit("relabel")),
            (ns("subject"), lit(entity)),
            (ns("label"), lit(name)),
            (ns("reason"), lit("r")),
        ]
        .into_iter()
        .map(|(p, o)| serde_json::json!({"r": iri(r), "p": iri(&p), "o": o, "len": number(5)}))
        .collect::<Vec<_>>()
    };
    let count = serde_json::json!({"head": {"vars": ["n"]}, "results": {"bindings": [{"n": number(2)}]}});
    let sizes = serde_json::json!({"head": {"vars": ["r", "n", "size"]}, "results": {"bindings": [
        {"r": iri(one), "n": number(8), "size": number(80)}, {"r": iri(two), "n": number(8), "size": number(80)}]}});
    let rows: Vec<_> =
        record(one, "m.apple", "Apple Computer").into_iter().chain(record(two, "m.lou_seal", "Lou")).collect();
    let records = serde_json::json!({"head": {"vars": ["r", "p", "o", "len"]}, "results": {"bindings": rows}});
    let runtime = tokio::runtime::Runtime::new().unwrap();
    let server = runtime.block_on(async {
        let server = MockServer::start().await;
        let answer = |body: &serde_json::Value| ResponseTemplate::new(200).set_body_json(body.clone());
        for (shape, body) in [
            ("COUNT(DISTINCT ?r)", &count),
            ("ORDER BY ?r LIMIT", &listed(&[one, two])),
            ("(SUM(", &sizes),
            ("SELECT ?r ?p ?o ?len", &records),
        ] {
            Mock::given(path("/query"))
                .and(query_param_contains("query", shape))
                .respond_with(answer(body))
                .mount(&server)
                .await;
        }
        // The whole list, cut short after one row.
        Mock::given(path("/query")).respond_with(answer(&listed(&[one]))).with_priority(10).mount(&server).await;
        server
    });
    let query = format!("{}/query", server.uri());
    let bea = User::new("Bea", &query, &format!("{}/update", server.uri()), "");
    assert_eq!(bea.ok(&["fix", "sync"]), "pushed 0 record(s) to team, pulled 2 new record(s)\n");
    let names: Vec<String> = bea.list().iter().map(|c| c["label"].as_str().unwrap_or_default().to_string()).collect();
    assert_eq!(names, ["Apple Computer", "Lou"]);
    let requests = runtime.block_on(server.received_requests()).unwrap();
    let paged = requests.iter().filter(|r| r.url.query().unwrap_or_default().contains("ORDER+BY")).count();
    assert_eq!(paged, 2, "each pull (fix sync, then fix list) paged once: one page held both");
}

/// Writes `triples` (Turtle-like statements, full IRIs) straight into the set's graph, as a
/// teammate with write access to the server can.
fn write_raw(server: &OxigraphRw, triples: &str) {
    let mut config = SparqlConfig::new(&server.update);
    config.max_retries = 0;
    let update = format!("INSERT DATA {{ GRAPH <{GRAPH}> {{ {triples} }} }}");
    block_on(async { SparqlClient::new(config).unwrap().update(&update).await }).expect("the update applies");
}

/// A record's triples as ongraph writes them: `kind` (Correction, Approve, …) by `author` (and
/// `agent`), made `at`, published now, with `more` (statements about it, `;`-separated).
fn raw_record(iri: &str, kind: &str, author: &str, agent: &str, at: &str, more: &str) -> String {
    let ns = "urn:ongraph:ns:";
    let dt = "http://www.w3.org/2001/XMLSchema#dateTime";
    let now = humantime::format_rfc3339_millis(std::time::SystemTime::now());
    format!(
        "<{iri}> <http://www.w3.org/1999/02/22-rdf-syntax-ns#type> <{ns}{kind}> ; <{ns}kg> \"demo\" ; \
         <http://www.w3.org/ns/prov#wasAttributedTo> <urn:ongraph:agent:{author}> ; <{ns}agentId> \"{agent}\" ; \
         <http://www.w3.org/ns/prov#generatedAtTime> \"{at}\"^^<{dt}> ; <{ns}reason> \"r\" ; \
         <{ns}publishedAt> \"{now}\"^^<{dt}> {more} ."
    )
}

/// A relabel record's own triples (for [`raw_record`]'s `more`).
fn relabel(entity: &str, label: &str) -> String {
    format!(
        "; <urn:ongraph:ns:operation> \"relabel\" ; <urn:ongraph:ns:subject> \"{entity}\" ; <urn:ongraph:ns:label> \"{label}\""
    )
}

/// Points `user`'s `[shared.team]` at another update endpoint.
fn set_update(user: &User, from: &str, to: &str) {
    let path = user.path().join("config/ongraph/config.toml");
    let (from, to) = (format!("update_endpoint = \"{from}\""), format!("update_endpoint = \"{to}\""));
    let text = std::fs::read_to_string(&path).unwrap();
    assert!(text.contains(&from), "{text}");
    let text = text.replace(&from, &to);
    std::fs::write(path, text).unwrap();
}

/// An update endpoint that is not one (a page answering 200 to anything, a typo answered 404,
/// the query endpoint answering 400) keeps the queue, says so in one line naming it, and never
/// shows the correction as shared; once the config is fixed, the next sync sends it.
#[test]
fn an_update_endpoint_that_is_not_one_keeps_the_queue_until_the_config_is_fixed() {
    use wiremock::matchers::path;
    use wiremock::{Mock, MockServer, ResponseTemplate};
    let server = OxigraphRw::start();
    let runtime = tokio::runtime::Runtime::new().unwrap();
    let page = runtime.block_on(async {
        let page = MockServer::start().await;
        let html = "<html><body><h1>Welcome to nginx</h1></body></html>";
        Mock::given(path("/update"))
            .respond_with(ResponseTemplate::new(200).set_body_raw(html, "text/html"))
            .mount(&page)
            .await;
        page
    });
    let typo = format!("{}x", server.update);
    let wrong = [format!("{}/update", page.uri()), typo, server.query.clone()];
    for (n, update) in wrong.iter().enumerate() {
        let ada = User::new("Ada", &server.query, update, "");
        let label = format!("Apple {n}");
        let (made, note) = ada.ok_with_note(&["fix", "relabel", "m.apple", &label, "--reason", "r"]);
        assert!(made.ends_with(&format!(": relabel m.apple as \"{label}\"\n")), "{made}");
        let sharing = |user: &User| {
            // Without syncing (which would say again what waits).
            let list: Vec<serde_json::Value> =
                serde_json::from_str(&user.ok(&["fix", "list", "--json", "--no-shared"])).unwrap();
            let own = list.iter().find(|c| c["label"] == label.as_str()).expect("listed");
            own["sharing"].as_str().unwrap_or_default().to_string()
        };
        assert_eq!(note.lines().count(), 1, "{note}");
        assert!(
            note.starts_with("1 correction not yet shared ([shared.team] update_endpoint \"")
                && note.contains(update.as_str())
                && note.contains("it is not the server's SPARQL update endpoint")
                && note.contains("(check the config)"),
            "{note}"
        );
        assert_eq!(sharing(&ada), "pending", "{update}");
        let out = ada.run(&["fix", "sync"]);
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!((out.status.code(), err.lines().count()), (Some(1), 1), "{err}");
        assert!(err.contains(update.as_str()), "{err}");
        assert_eq!(records_on(&server), n, "the server holds nothing of it");
        assert_eq!(sharing(&ada), "pending", "never rejected: {update}");

        set_update(&ada, update, &server.update);
        assert_eq!(ada.ok(&["fix", "sync"]), "pushed 1 record(s) to team, pulled 0 new record(s)\n");
        assert_eq!(sharing(&ada), "shared");
        assert_eq!(records_on(&server), n + 1);
    }
}

/// A record that breaks the rules (a value too long, too many values, a field given twice) is
/// skipped with one line per kind, the pull goes on and its mark moves, and the record is not
/// fetched again at the next pull. A record whose rows a product of its fields would multiply
/// is read as one row per triple.
#[test]
fn records_that_break_the_rules_are_skipped_said_once_and_the_pull_goes_on() {
    let server = OxigraphRw::start();
    let (ada, bea) = (User::on(&server, "Ada"), User::on(&server, "Bea"));
    ada.ok(&["fix", "relabel", "m.apple", "Apple Computer", "--reason", "old name"]);
    let adas = ada.list()[0]["team"]["record"].as_str().unwrap().to_string();
    let now = humantime::format_rfc3339_millis(std::time::SystemTime::now()).to_string();
    let ns = "urn:ongraph:ns:";
    let long = "S".repeat(100_000);
    let (big, many, product) = (
        "urn:uuid:01900000-0000-7000-8000-0000000000b1",
        "urn:uuid:01900000-0000-7000-8000-0000000000b2",
        "urn:uuid:01900000-0000-7000-8000-0000000000b3",
    );
    write_raw(&server, &raw_record(big, "Correction", "Eve", "e", &now, &relabel("m.lou_seal", &long)));
    let values: String = (0..70).map(|i| format!("; <{ns}question> \"q{i}\" ")).collect();
    write_raw(
        &server,
        &raw_record(many, "Correction", "Eve", "e", &now, &format!("{}{values}", relabel("m.lou_seal", "L"))),
    );
    // Five values in each of six fields: 15,625 rows as a product, 30 triples as they are.
    let fields = ["question", "session", "reason", "agentId", "label", "kg"];
    let five: String = fields.iter().flat_map(|f| (0..5).map(move |i| format!("; <{ns}{f}> \"{f}-{i}\" "))).collect();
    write_raw(
        &server,
        &raw_record(product, "Correction", "Eve", "e", &now, &format!("{}{five}", relabel("m.lou_seal", "P"))),
    );
    // And a teammate adds a second label to Ada's record: it is skipped by whoever pulls it
    // afresh, and said.
    write_raw(&server, &format!("<{adas}> <{ns}label> \"Evil second label\" ."));
    write_raw(
        &server,
        &raw_record(
            "urn:uuid:01900000-0000-7000-8000-0000000000b4",
            "Correction",
            "Cal",
            "c",
            &now,
            &relabel("m.phillies", "Phils"),
        ),
    );
    // Subjects no ongraph writes (an IRI of 600 characters) are not records: never listed.
    let odd = format!("urn:x:{}", "x".repeat(600));
    write_raw(&server, &raw_record(&odd, "Correction", "Eve", "e", &now, &relabel("m.apple", "Odd")));

    let started = std::time::Instant::now();
    let said = bea.ok(&["fix", "sync"]);
    assert!(started.elapsed() < std::time::Duration::from_secs(20), "{:?}", started.elapsed());
    let mut lines = said.lines();
    assert_eq!(lines.next(), Some("pushed 0 record(s) to team, pulled 1 new record(s)"), "{said}");
    assert_eq!(
        lines.next(),
        Some(
            format!(
                "skipped 1 record from team: a value longer than 16384 characters, or more than 65536 in all ({big})"
            )
            .as_str()
        ),
        "{said}"
    );
    assert_eq!(
        lines.next(),
        Some(format!("skipped 1 record from team: more than 64 values ({many})").as_str()),
        "{said}"
    );
    let repeated = lines.next().unwrap_or_default();
    assert!(
        repeated.starts_with("skipped 2 records from team: a field given more than once (the first: urn:uuid:"),
        "{said}"
    );
    assert_eq!(lines.next(), None, "{said}");
    let list = bea.list();
    assert_eq!(list.len(), 1);
    assert_eq!(list[0]["label"], "Phils");
    let log = bea.log();
    assert!(log.contains(&format!("skipped: record {adas}: label is given more than once")), "{log}");

    // Not fetched again, nor said again; the mark moved: what comes next is pulled.
    assert_eq!(bea.ok(&["fix", "sync"]), "pushed 0 record(s) to team, pulled 0 new record(s)\n");
    assert_eq!(bea.log().matches(&format!("skipped: record {big}")).count(), 1);
    let (_, note) = ada.ok_with_note(&["fix", "relabel", "m.bright_house_field", "BayCare Ballpark", "--reason", "r"]);
    assert!(note.starts_with("skipped 1 record from team: a value longer than"), "Ada is told too: {note}");
    assert_eq!(bea.ok(&["fix", "sync"]), "pushed 0 record(s) to team, pulled 1 new record(s)\n");
    // A full pull tries them again (a newer ongraph might take them), and says so again.
    let full = bea.ok(&["fix", "sync", "--full"]);
    assert_eq!(full.lines().count(), 4, "{full}");
    // Ada took her record in before it was spoiled: it stays hers, applied.
    let labels: Vec<String> = ada.list().iter().map(|c| c["label"].as_str().unwrap_or_default().to_string()).collect();
    assert_eq!(labels, ["Apple Computer", "Phils", "BayCare Ballpark"]);
}

/// A record dated in the future is taken as made when it arrived (and flagged): a later
/// correction of the same name applies after it, for the teammate who pulled it then and for
/// one who pulls both afresh.
#[test]
fn a_record_dated_in_the_future_does_not_outrank_later_corrections() {
    let server = OxigraphRw::start();
    let (ada, bea) = (User::on(&server, "Ada"), User::on(&server, "Bea"));
    let eves = "urn:uuid:01900000-0000-7000-8000-0000000000c1";
    let future = "9999-12-31T23:59:59.999Z";
    write_raw(&server, &raw_record(eves, "Correction", "Eve", "e", future, &relabel("m.lou_seal", "Evil Seal")));
    assert_eq!(
        ada.ok(&["fix", "sync"]),
        "pushed 0 record(s) to team, pulled 1 new record(s)\n1 record from team dated in the future: taken as made when it arrived\n"
    );
    let history = ada.list()[0]["history"].to_string();
    assert!(history.contains(&format!("dated {future} by its author, in the future")), "{history}");
    ada.ok(&["fix", "relabel", "m.lou_seal", "Lou Seal Fixed", "--reason", "restore"]);
    for user in [&ada, &bea] {
        let (found, _) = user.ok_with_note(&["kg", "search", "Lou Seal Fixed"]);
        assert_eq!(found.lines().next(), Some("m.lou_seal\tLou Seal Fixed\texact"), "{found}");
    }
}

/// Under `apply = "approved"`, a review of one's own correction never counts (written straight
/// to the server, with the author's own store id), and a review dated in the future does not
/// outrank a later one.
#[test]
fn self_reviews_do_not_count_and_a_future_review_does_not_outrank_a_later_one() {
    let server = OxigraphRw::start();
    let approved = "apply = \"approved\"\n";
    let bea = User::on(&server, "Bea");
    let ada = User::new("Ada", &server.query, &server.update, approved);
    bea.ok(&["fix", "relabel", "m.bright_house_field", "BayCare Ballpark", "--reason", "renamed"]);
    let mine = bea.list();
    let (record, agent) = (mine[0]["team"]["record"].as_str().unwrap(), mine[0]["team"]["agent"].as_str().unwrap());
    let now = humantime::format_rfc3339_millis(std::time::SystemTime::now()).to_string();
    let target = format!("; <urn:ongraph:ns:target> <{record}>");
    write_raw(
        &server,
        &raw_record("urn:uuid:01900000-0000-7000-8000-0000000000d1", "Approve", "Bea", agent, &now, &target),
    );
    assert_eq!(
        ada.ok(&["fix", "sync"]),
        "pushed 0 record(s) to team, pulled 2 new record(s)\n\
         1 record from team reviewing the reviewer's own correction: not counted\n"
    );
    assert!(ada.ok(&["fix", "list"]).contains("unapproved relabel m.bright_house_field"));
    assert_eq!(first_line(&ada.ok(&["ask", PHANATIC])), "Answer: Bright House Field");
    // Under another name but from her own store: not counted either.
    let other = raw_record(
        "urn:uuid:01900000-0000-7000-8000-0000000000d2",
        "Approve",
        "Bee",
        agent,
        "9999-01-01T00:00:00.000Z",
        &target,
    );
    write_raw(&server, &other);
    ada.ok_with_note(&["fix", "sync"]);
    assert!(ada.ok(&["fix", "list"]).contains("unapproved relabel m.bright_house_field"));

    // Mallory's approval, dated 9999, counts (she is not the author) until a later review.
    let mallory = raw_record(
        "urn:uuid:01900000-0000-7000-8000-0000000000d3",
        "Approve",
        "Mallory",
        "m",
        "9999-01-01T00:00:00.000Z",
        &target,
    );
    write_raw(&server, &mallory);
    let (said, _) = ada.ok_with_note(&["fix", "sync"]);
    assert!(said.contains("1 record from team dated in the future"), "{said}");
    assert!(ada.ok(&["fix", "list"]).contains("  approved by Mallory\n"));
    assert_eq!(
        ada.ok(&["fix", "review", "reject", "1", "--reason", "not official"]),
        "correction 1 by Bea rejected: relabel m.bright_house_field as \"BayCare Ballpark\"\n"
    );
    let listed = ada.ok(&["fix", "list"]);
    assert!(
        listed.contains("unapproved relabel m.bright_house_field") && listed.contains("  rejected by Ada\n"),
        "{listed}"
    );
    assert_eq!(first_line(&ada.ok(&["ask", PHANATIC])), "Answer: Bright House Field");
}
