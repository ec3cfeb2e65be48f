//! The correction overlay: what the KG layer shows through corrections, the sled store, and the
//! CLI's fix commands (including a crash part-way through).

use ongraph::kg::{KnowledgeGraph, RelationRef, Term};
use ongraph::testing::kg::demo_graph;
use ongraph::testing::overlay::{Correction, CorrectionStore, Draft, Op, OverlayKg, SledStore, StoreError};
use std::sync::Arc;

fn correction(id: u64, op: Op) -> Correction {
    Correction {
        id,
        kg: "demo".into(),
        op,
        reason: "test".into(),
        generated: None,
        author: "tester".into(),
        created: "2026-11-22T00:00:00Z".into(),
        active: true,
        context: None,
        history: vec![],
        team: None,
    }
}

fn retract(s: &str, r: &str, o: Term) -> Op {
    Op::Retract { subject: s.into(), relation: r.into(), object: o }
}
fn assert_op(s: &str, r: &str, o: Term) -> Op {
    Op::Assert { subject: s.into(), relation: r.into(), object: o }
}
fn e(id: &str) -> Term {
    Term::Entity(id.into())
}

const STADIUM: &str = "baseball.baseball_team.spring_training_stadium";

#[tokio::test]
async fn retracted_triples_vanish_everywhere() {
    let kg = OverlayKg::new(
        Arc::new(demo_graph()),
        &[
            correction(1, retract("m.phillies", STADIUM, e("m.bright_house_field"))),
            correction(2, retract("m.giants", "sports.sports_team.team_mascot", e("m.lou_seal"))),
        ],
    );
    assert!(kg.neighbours("m.phillies", &RelationRef::out(STADIUM)).await.unwrap().is_empty());
    // The relation had only that triple: it is no longer offered, from either end.
    assert!(!kg.relations("m.phillies").await.unwrap().contains(&RelationRef::out(STADIUM)));
    assert!(!kg.relations("m.bright_house_field").await.unwrap().contains(&RelationRef::incoming(STADIUM)));
    let lou = kg.relations("m.lou_seal").await.unwrap();
    assert!(!lou.contains(&RelationRef::incoming("sports.sports_team.team_mascot")), "{lou:?}");
    // Relations with other triples stay.
    assert!(kg.relations("m.phillies").await.unwrap().contains(&RelationRef::out("sports.sports_team.championships")));
    // An undone (inactive) correction changes nothing.
    let mut undone = correction(3, retract("m.apple", "organization.organization.founders", e("m.steve_jobs")));
    undone.active = false;
    let kg = OverlayKg::new(Arc::new(demo_graph()), &[undone]);
    assert_eq!(
        kg.neighbours("m.apple", &RelationRef::out("organization.organization.founders")).await.unwrap().len(),
        3
    );
}

#[tokio::test]
async fn asserted_triples_appear_even_for_new_entities() {
    let kg = OverlayKg::new(
        Arc::new(demo_graph()),
        &[
            correction(7, assert_op("m.phillies", STADIUM, e("m.baycare_ballpark"))),
            correction(
                8,
                assert_op("m.baycare_ballpark", "type.object.name", Term::Literal("BayCare Ballpark".into())),
            ),
            correction(9, assert_op("m.baycare_ballpark", "location.location.containedby", e("m.clearwater"))),
        ],
    );
    let stadiums = kg.neighbours("m.phillies", &RelationRef::out(STADIUM)).await.unwrap();
    let new = stadiums.iter().find(|n| n.term == e("m.baycare_ballpark")).unwrap();
    assert_eq!((new.label.as_deref(), new.correction), (Some("BayCare Ballpark"), Some(7)));
    assert_eq!(stadiums.len(), 2, "the backend's stadium is still there");
    // The new entity has relations both ways, and a name that search finds.
    let rels = kg.relations("m.baycare_ballpark").await.unwrap();
    assert!(
        rels.contains(&RelationRef::incoming(STADIUM))
            && rels.contains(&RelationRef::out("location.location.containedby"))
    );
    assert!(!rels.iter().any(|r| r.relation == "type.object.name"), "names are not relations");
    assert!(
        kg.relations("m.clearwater").await.unwrap().contains(&RelationRef::incoming("location.location.containedby"))
    );
    let back = kg.neighbours("m.clearwater", &RelationRef::incoming("location.location.containedby")).await.unwrap();
    assert!(back.iter().any(|n| n.term == e("m.baycare_ballpark") && n.correction == Some(9)));
    let found = kg.find_entities("baycare ballpark", 3).await.unwrap();
    assert_eq!((found[0].id.as_str(), found[0].exact), ("m.baycare_ballpark", true));
    assert_eq!(kg.label("m.baycare_ballpark").await.unwrap().as_deref(), Some("BayCare Ballpark"));
}

#[tokio::test]
async fn relabels_apply_in_labels_neighbours_and_search() {
    let relabel = Op::Relabel { entity: "m.bright_house_field".into(), label: "BayCare Ballpark".into() };
    let kg = OverlayKg::new(Arc::new(demo_graph()), &[correction(4, relabel)]);
    assert_eq!(kg.label("m.bright_house_field").await.unwrap().as_deref(), Some("BayCare Ballpark"));
    let n = kg.neighbours("m.phillies", &RelationRef::out(STADIUM)).await.unwrap();
    assert_eq!(n[0].label.as_deref(), Some("BayCare Ballpark"));
    let found = kg.find_entities("BayCare Ballpark", 3).await.unwrap();
    assert_eq!((found[0].id.as_str(), found[0].exact), ("m.bright_house_field", true));
    let old = kg.find_entities("Bright House Field", 3).await.unwrap();
    assert!(old.iter().all(|m| !m.exact), "the old name no longer matches exactly: {old:?}");
}

#[tokio::test]
async fn a_scenario_hides_triples_without_touching_corrections() {
    let hidden = [("m.apple".to_string(), "organization.organization.headquarters".to_string(), e("cvt.apple_hq"))];
    let kg = OverlayKg::new(Arc::new(demo_graph()), &[]).with_hidden(&hidden);
    assert!(
        !kg.relations("m.apple").await.unwrap().contains(&RelationRef::out("organization.organization.headquarters"))
    );
    assert_eq!(kg.active_corrections(), 0);
}

fn draft(op: Op) -> Draft {
    Draft { op, reason: "because".into(), generated: false, author: "tester".into(), context: None, origin: None }
}

#[test]
fn the_store_keeps_corrections_per_kg_across_reopening() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("overlay");
    {
        let store = SledStore::open(&path).unwrap();
        let a = store.add("demo", draft(retract("m.a", "r", e("m.b")))).unwrap();
        let b = store.add("wikidata", draft(Op::Relabel { entity: "Q1".into(), label: "x".into() })).unwrap();
        let c = store.add("demo", draft(assert_op("m.a", "r", Term::Literal("v".into())))).unwrap();
        assert_eq!((a.id, b.id, c.id), (1, 2, 3));
        let undone = store.undo("demo", 1).unwrap();
        assert!(!undone.active);
        assert_eq!(undone.history.iter().map(|h| h.what.as_str()).collect::<Vec<_>>(), vec!["created", "undone"]);
        assert!(matches!(store.undo("demo", 1), Err(StoreError::AlreadyUndone { id: 1 })));
        assert!(matches!(store.undo("demo", 2), Err(StoreError::UnknownId { .. })), "scoped: 2 is wikidata's");
        // Another handle on the same store is refused while this one is open.
        let err = SledStore::open(&path).err().unwrap();
        assert!(err.to_string().contains("in use by another ongraph process"), "{err}");
    }
    let store = SledStore::open(&path).unwrap();
    let demo = store.list("demo").unwrap();
    assert_eq!(demo.iter().map(|c| (c.id, c.active)).collect::<Vec<_>>(), vec![(1, false), (3, true)]);
    assert_eq!(store.list("wikidata").unwrap().len(), 1);
    assert!(store.list("freebase").unwrap().is_empty());
    assert_eq!(store.add("demo", draft(retract("m.x", "r", e("m.y")))).unwrap().id, 4, "ids go on after reopening");
}

#[test]
fn a_record_from_a_newer_format_is_refused_clearly() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("overlay");
    {
        let db = sled::open(&path).unwrap();
        let mut key = b"demo\0".to_vec();
        key.extend_from_slice(&1u64.to_be_bytes());
        db.insert(key, br#"{"v": 3, "correction": {}}"#.to_vec()).unwrap();
        db.flush().unwrap();
    }
    let err = SledStore::open(&path).unwrap().list("demo").unwrap_err();
    assert!(err.to_string().contains("format v3, which this ongraph does not read (it reads v1 to v2)"), "{err}");
}

#[test]
fn a_corrupt_store_is_a_clear_error() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("overlay");
    {
        let store = SledStore::open(&path).unwrap();
        for i in 0..20 {
            store.add("demo", draft(Op::Relabel { entity: format!("m.{i}"), label: "x".into() })).unwrap();
        }
    }
    let db = path.join("db");
    let mut bytes = std::fs::read(&db).unwrap();
    for i in (0..bytes.len()).step_by(7) {
        bytes[i] ^= 0x5a;
    }
    std::fs::write(&db, bytes).unwrap();
    // sled alone would open this and list nothing: the acknowledged-writes check refuses it.
    let err = SledStore::open(&path).and_then(|s| s.list("demo")).expect_err("damage is detected");
    assert!(err.to_string().contains("is damaged"), "{err}");
    assert!(err.to_string().contains("fix export --salvage"), "the way to save what is left: {err}");
    assert!(!err.to_string().contains("panicked"));
}

/// Opens sled at `path`, waiting while the last handle's background flusher still holds the
/// file lock (it lets go shortly after the handle is dropped; longer on a loaded machine).
fn open_when_free(path: &std::path::Path) -> sled::Db {
    let mut tries = 0;
    loop {
        match sled::Config::new().path(path).open() {
            Err(sled::Error::Io(e)) if e.to_string().contains("could not acquire lock") && tries < 100 => {
                tries += 1;
                std::thread::sleep(std::time::Duration::from_millis(50));
            }
            other => return other.unwrap(),
        }
    }
}

#[test]
fn a_truncated_store_beside_a_snapshot_is_a_clear_error_not_a_panic() {
    // Regression: a store with a sled snapshot and its `db` truncated made `fix list` panic
    // inside sled. A snapshot is written after many writes; this store asks for one early.
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("overlay");
    for round in 0..4u32 {
        let db = open_when_free(&path);
        for i in 0..200u32 {
            db.insert((round * 1000 + i).to_be_bytes(), vec![7u8; 64]).unwrap();
        }
        db.flush().unwrap();
    }
    let has_snapshot =
        std::fs::read_dir(&path).unwrap().flatten().any(|e| e.file_name().to_string_lossy().starts_with("snap."));
    let files: Vec<String> =
        std::fs::read_dir(&path).unwrap().flatten().map(|e| e.file_name().to_string_lossy().into_owned()).collect();
    assert!(has_snapshot, "the setup needs a snapshot file: {files:?}");
    let mut outcomes = Vec::new();
    let full = std::fs::metadata(path.join("db")).unwrap().len();
    for len in (0..30).map(|k| full * k / 30) {
        let copy = dir.path().join(format!("copy-{len}"));
        std::fs::create_dir_all(&copy).unwrap();
        for entry in std::fs::read_dir(&path).unwrap().flatten() {
            if entry.path().is_file() {
                std::fs::copy(entry.path(), copy.join(entry.file_name())).unwrap();
            }
        }
        let db = std::fs::OpenOptions::new().write(true).open(copy.join("db")).unwrap();
        db.set_len(len).unwrap();
        drop(db);
        if len % 2 == 1 {
            // And damage what is left, as random bytes would.
            let mut bytes = std::fs::read(copy.join("db")).unwrap();
            for i in (0..bytes.len()).step_by(13) {
                bytes[i] = bytes[i].wrapping_mul(31).wrapping_add(len as u8);
            }
            std::fs::write(copy.join("db"), bytes).unwrap();
        }
        let result = std::panic::catch_unwind(|| SledStore::open(&copy).and_then(|s| s.list("demo")));
        let result = result.unwrap_or_else(|_| panic!("truncated to {len} bytes: SledStore::open panicked"));
        if let Err(e) = &result {
            assert!(e.to_string().contains("correction store"), "{len}: {e}");
        }
        outcomes.push((len, result.is_ok()));
    }
    assert!(outcomes.iter().any(|(_, ok)| !ok), "some truncation must be detected: {outcomes:?}");
}

fn replace_op() -> Op {
    Op::Replace {
        subject: "m.phillies".into(),
        relation: STADIUM.into(),
        old: e("m.bright_house_field"),
        new: e("new.baycare_ballpark"),
        label: Some("BayCare Ballpark".into()),
    }
}

/// What a lookup shows of the Phillies' stadium, the new entity and a search for its name.
async fn stadium_view(kg: &OverlayKg) -> (Vec<(Term, Option<String>)>, Vec<RelationRef>, Option<String>, Vec<String>) {
    let stadiums = kg.neighbours("m.phillies", &RelationRef::out(STADIUM)).await.unwrap();
    let stadiums = stadiums.into_iter().map(|n| (n.term, n.label)).collect();
    let rels = kg.relations("new.baycare_ballpark").await.unwrap();
    let label = kg.label("new.baycare_ballpark").await.unwrap();
    let found = kg.find_entities("BayCare Ballpark", 3).await.unwrap().into_iter().map(|m| m.id).collect();
    (stadiums, rels, label, found)
}

#[tokio::test]
async fn a_replace_applies_exactly_as_its_three_parts_did() {
    let parts = [
        correction(1, retract("m.phillies", STADIUM, e("m.bright_house_field"))),
        correction(2, assert_op("m.phillies", STADIUM, e("new.baycare_ballpark"))),
        correction(3, assert_op("new.baycare_ballpark", "type.object.name", Term::Literal("BayCare Ballpark".into()))),
    ];
    let separate = OverlayKg::new(Arc::new(demo_graph()), &parts);
    let replaced = OverlayKg::new(Arc::new(demo_graph()), &[correction(9, replace_op())]);
    let seen = stadium_view(&replaced).await;
    assert_eq!(seen, stadium_view(&separate).await);
    assert_eq!(seen.0, vec![(e("new.baycare_ballpark"), Some("BayCare Ballpark".into()))], "the old one is gone");
    assert_eq!(seen.1, vec![RelationRef::incoming(STADIUM)]);
    assert_eq!(seen.3.first().map(String::as_str), Some("new.baycare_ballpark"));
    // The asserted triple is credited to the one correction.
    let n = replaced.neighbours("m.phillies", &RelationRef::out(STADIUM)).await.unwrap();
    assert_eq!(n[0].correction, Some(9));
    assert_eq!(replaced.active_corrections(), 1);
    // The parts, as the export and the describe line see them.
    assert_eq!(replace_op().parts("type.object.name"), parts.iter().map(|c| c.op.clone()).collect::<Vec<_>>());
    assert_eq!(
        replace_op().describe(),
        format!(
            "replace m.phillies {STADIUM} m.bright_house_field with new.baycare_ballpark named \"BayCare Ballpark\""
        )
    );
    // Undone, it changes nothing.
    let mut undone = correction(9, replace_op());
    undone.active = false;
    let kg = OverlayKg::new(Arc::new(demo_graph()), &[undone]);
    let stadiums = kg.neighbours("m.phillies", &RelationRef::out(STADIUM)).await.unwrap();
    assert_eq!(stadiums.iter().map(|n| n.term.clone()).collect::<Vec<_>>(), vec![e("m.bright_house_field")]);
}

#[tokio::test]
async fn a_replace_is_one_correction_in_the_store_one_undo_reverts_it() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("overlay");
    let store = SledStore::open(&path).unwrap();
    let c = store.add("demo", draft(replace_op())).unwrap();
    assert_eq!(c.id, 1);
    let listed = store.list("demo").unwrap();
    assert_eq!(listed.len(), 1, "one correction, not three");
    assert_eq!(listed[0].op, replace_op());
    let kg = OverlayKg::new(Arc::new(demo_graph()), &listed);
    assert_eq!(kg.label("new.baycare_ballpark").await.unwrap().as_deref(), Some("BayCare Ballpark"));
    store.undo("demo", 1).unwrap();
    let kg = OverlayKg::new(Arc::new(demo_graph()), &store.list("demo").unwrap());
    let stadiums = kg.neighbours("m.phillies", &RelationRef::out(STADIUM)).await.unwrap();
    assert_eq!(stadiums.iter().map(|n| n.term.clone()).collect::<Vec<_>>(), vec![e("m.bright_house_field")]);
    assert_eq!(kg.label("new.baycare_ballpark").await.unwrap(), None, "no half-state: the name went too");
    drop(store);
    // Reopened, it is still one undone correction (written as format v2, read back).
    let store = SledStore::open(&path).unwrap();
    let listed = store.list("demo").unwrap();
    assert_eq!((listed.len(), listed[0].active), (1, false));
    assert_eq!(listed[0].history.iter().map(|h| h.what.as_str()).collect::<Vec<_>>(), ["created", "undone"]);
}

#[test]
fn records_are_written_in_the_oldest_format_that_holds_them() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("overlay");
    {
        let store = SledStore::open(&path).unwrap();
        store.add("demo", draft(retract("m.a", "r", e("m.b")))).unwrap();
        store.add("demo", draft(replace_op())).unwrap();
    }
    let db = open_when_free(&path);
    let versions: Vec<u64> = db
        .scan_prefix(b"demo\0")
        .map(|kv| serde_json::from_slice::<serde_json::Value>(&kv.unwrap().1).unwrap()["v"].as_u64().unwrap())
        .collect();
    // A build reading only v1 still reads a store without replaces, and refuses one with them
    // as a newer format rather than calling the store corrupt.
    assert_eq!(versions, [1, 2]);
}

#[tokio::test]
async fn a_store_written_before_replaces_still_loads_and_applies() {
    // Records exactly as the previous build wrote them (format v1: a flag as three corrections).
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("overlay");
    {
        let db = sled::open(&path).unwrap();
        let records = [
            r#"{"v":1,"correction":{"id":1,"kg":"demo","op":"retract","subject":"m.phillies","relation":"baseball.baseball_team.spring_training_stadium","object":{"kind":"entity","value":"m.bright_house_field"},"reason":"Renamed","author":"t","created":"2026-01-01T00:00:00Z","active":true,"context":{"question":"q","step":3},"history":[{"at":"2026-01-01T00:00:00Z","what":"made in the terminal UI"}]}}"#,
            r#"{"v":1,"correction":{"id":2,"kg":"demo","op":"assert","subject":"m.phillies","relation":"baseball.baseball_team.spring_training_stadium","object":{"kind":"entity","value":"new.baycare_ballpark"},"reason":"Renamed","author":"t","created":"2026-01-01T00:00:00Z","active":true,"history":[]}}"#,
            r#"{"v":1,"correction":{"id":3,"kg":"demo","op":"assert","subject":"new.baycare_ballpark","relation":"type.object.name","object":{"kind":"literal","value":"BayCare Ballpark"},"reason":"Renamed","author":"t","created":"2026-01-01T00:00:00Z","active":true,"history":[]}}"#,
        ];
        for (i, r) in records.iter().enumerate() {
            let mut key = b"demo\0".to_vec();
            key.extend_from_slice(&(i as u64 + 1).to_be_bytes());
            db.insert(key, r.as_bytes()).unwrap();
        }
        db.flush().unwrap();
    }
    let store = SledStore::open(&path).unwrap();
    let listed = store.list("demo").unwrap();
    assert_eq!(
        listed.iter().map(|c| c.op.describe()).collect::<Vec<_>>(),
        [
            format!("retract m.phillies {STADIUM} m.bright_house_field"),
            format!("assert m.phillies {STADIUM} new.baycare_ballpark"),
            "assert new.baycare_ballpark type.object.name \"BayCare Ballpark\"".to_string(),
        ]
    );
    let old = OverlayKg::new(Arc::new(demo_graph()), &listed);
    let new = OverlayKg::new(Arc::new(demo_graph()), &[correction(1, replace_op())]);
    assert_eq!(stadium_view(&old).await, stadium_view(&new).await, "the same view as one replace");
}

#[test]
fn a_replace_exports_as_its_parts_and_round_trips_as_one() {
    use ongraph::kg::KgProfile;
    use ongraph::testing::overlay::{ExportFormat, export};
    let c = correction(4, replace_op());
    let profile = ongraph::testing::overlay::Vocabulary::new(&KgProfile::freebase(), None);
    let fb = |id: &str| format!("<http://rdf.freebase.com/ns/{id}>");
    let (phillies, stadium, old, new, name) =
        (fb("m.phillies"), fb(STADIUM), fb("m.bright_house_field"), fb("new.baycare_ballpark"), fb("type.object.name"));

    let sparql = export(std::slice::from_ref(&c), ExportFormat::SparqlUpdate, &profile);
    assert!(sparql.starts_with("DELETE DATA {\n  # correction 4 by tester"), "{sparql}");
    assert!(sparql.contains(&format!("  {phillies} {stadium} {old} .\n}} ;\nINSERT DATA {{\n")), "{sparql}");
    assert!(sparql.contains(&format!("  {phillies} {stadium} {new} .\n")), "{sparql}");
    assert!(sparql.contains(&format!("  {new} {name} \"BayCare Ballpark\" .\n}}\n")), "{sparql}");

    let nt = export(std::slice::from_ref(&c), ExportFormat::Nt, &profile);
    assert!(nt.contains(&format!("# retracted: {phillies} {stadium} {old} .\n")), "{nt}");
    assert!(nt.contains(&format!("\n{phillies} {stadium} {new} .\n")), "{nt}");
    assert!(nt.contains(&format!("\n{new} {name} \"BayCare Ballpark\" .\n")), "{nt}");
    assert_eq!(nt.lines().filter(|l| !l.starts_with('#')).count(), 2, "two triples to add: {nt}");

    let jsonl = export(std::slice::from_ref(&c), ExportFormat::Jsonl, &profile);
    assert_eq!(jsonl.lines().count(), 1, "one correction, one line: {jsonl}");
    let back: Correction = serde_json::from_str(jsonl.trim()).unwrap();
    assert_eq!(back, c);
    // Without a name (the right object is a KG entity), there is no name triple.
    let mut plain = c.clone();
    if let Op::Replace { label, .. } = &mut plain.op {
        *label = None;
    }
    let jsonl = export(std::slice::from_ref(&plain), ExportFormat::Jsonl, &profile);
    assert!(!jsonl.contains("label"), "{jsonl}");
    assert!(!export(&[plain], ExportFormat::Nt, &profile).contains("BayCare"));
}

#[test]
fn the_generation_is_read_without_opening_the_store() {
    use ongraph::testing::overlay::acknowledged;
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("overlay");
    assert_eq!(acknowledged(&path).unwrap(), 0, "no store yet");
    let store = SledStore::open(&path).unwrap();
    store.add("demo", draft(replace_op())).unwrap();
    store.add("wikidata", draft(Op::Relabel { entity: "Q1".into(), label: "x".into() })).unwrap();
    // Read while the store is open (and locked) by this handle: no sled involved.
    assert_eq!(acknowledged(&path).unwrap(), 2);
    store.undo("demo", 1).unwrap();
    assert_eq!(acknowledged(&path).unwrap(), 3, "an undo is a write too");
}

/// A config whose correction store is `path`.
fn config_at(path: &std::path::Path) -> ongraph::testing::config::Config {
    let mut config = ongraph::testing::config::Config::default();
    config.defaults.overlay = Some(path.to_path_buf());
    config
}

#[tokio::test]
async fn a_live_overlay_sees_another_handles_writes_at_its_next_refresh() {
    use ongraph::testing::overlay::LiveOverlay;
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("overlay");
    let config = config_at(&path);
    let live = LiveOverlay::open(Arc::new(demo_graph()), &config, &Default::default(), true).unwrap();
    assert_eq!(live.current().active, 0);
    assert!(live.refresh().unwrap().is_none(), "nothing changed");
    let stadiums = |kg: Arc<dyn KnowledgeGraph>| async move {
        kg.neighbours("m.phillies", &RelationRef::out(STADIUM))
            .await
            .unwrap()
            .into_iter()
            .map(|n| n.term)
            .collect::<Vec<_>>()
    };

    // Another process (here another handle: sled locks the store, so one at a time) writes.
    SledStore::open(&path).unwrap().add("demo", draft(replace_op())).unwrap();
    assert_eq!(stadiums(live.current().kg).await, [e("m.bright_house_field")], "read per refresh, not per lookup");
    let seen = live.refresh().unwrap().expect("the store changed");
    assert_eq!((seen.active, seen.corrections.len()), (1, 1));
    assert_eq!(stadiums(seen.kg).await, [e("new.baycare_ballpark")]);
    assert_eq!(stadiums(live.current().kg).await, [e("new.baycare_ballpark")]);
    assert!(live.refresh().unwrap().is_none(), "read once per change");

    // Undone elsewhere (`ongraph fix undo 1` in another shell): the next refresh drops it.
    SledStore::open(&path).unwrap().undo("demo", 1).unwrap();
    let seen = live.refresh().unwrap().expect("the undo is a change");
    assert_eq!((seen.active, seen.corrections.len()), (0, 1));
    assert_eq!(stadiums(seen.kg).await, [e("m.bright_house_field")]);

    // A write to another KG's scope is re-read too (harmless), and changes nothing here.
    SledStore::open(&path)
        .unwrap()
        .add("wikidata", draft(Op::Relabel { entity: "Q1".into(), label: "x".into() }))
        .unwrap();
    assert_eq!(live.refresh().unwrap().map(|s| s.active), Some(0));

    // With corrections off, nothing is read, ever.
    let off = LiveOverlay::open(Arc::new(demo_graph()), &config, &Default::default(), false).unwrap();
    SledStore::open(&path).unwrap().add("demo", draft(replace_op())).unwrap();
    assert!(off.refresh().unwrap().is_none());
    assert_eq!(off.current().active, 0);
}

/// What a lookup shows through (entity, relation): the objects and the correction each rests on.
async fn seen(kg: &OverlayKg, entity: &str, relation: RelationRef) -> Vec<(Term, Option<u64>)> {
    kg.neighbours(entity, &relation).await.unwrap().into_iter().map(|n| (n.term, n.correction)).collect()
}

const CONTAINED: &str = "location.location.containedby";
const NAME: &str = "type.object.name";

#[tokio::test]
async fn a_later_retract_hides_what_an_earlier_correction_asserted() {
    let baycare = || e("m.baycare_ballpark");
    let name = || Term::Literal("BayCare Ballpark".into());
    let corrections = [
        correction(1, assert_op("m.phillies", STADIUM, baycare())),
        correction(2, assert_op("m.baycare_ballpark", CONTAINED, e("m.clearwater"))),
        correction(3, assert_op("m.baycare_ballpark", NAME, name())),
        correction(4, retract("m.phillies", STADIUM, baycare())),
        correction(5, retract("m.baycare_ballpark", CONTAINED, e("m.clearwater"))),
        correction(6, retract("m.baycare_ballpark", NAME, name())),
    ];
    // Given in any order, they apply oldest first.
    let mut shuffled = corrections.to_vec();
    shuffled.reverse();
    for given in [&corrections[..], &shuffled[..]] {
        let kg = OverlayKg::new(Arc::new(demo_graph()), given);
        assert_eq!(
            seen(&kg, "m.phillies", RelationRef::out(STADIUM)).await,
            vec![(e("m.bright_house_field"), None)],
            "the retracted assert is gone, the backend's stadium stays"
        );
        // From the other end too, and a relation whose only triple was asserted then
        // retracted is no longer offered, at either end.
        assert!(seen(&kg, "m.baycare_ballpark", RelationRef::incoming(STADIUM)).await.is_empty());
        assert!(seen(&kg, "m.baycare_ballpark", RelationRef::out(CONTAINED)).await.is_empty());
        assert_eq!(kg.relations("m.baycare_ballpark").await.unwrap(), vec![]);
        let clearwater = kg.relations("m.clearwater").await.unwrap();
        let bright = seen(&kg, "m.clearwater", RelationRef::incoming(CONTAINED)).await;
        assert!(clearwater.contains(&RelationRef::incoming(CONTAINED)), "the backend's triple: {clearwater:?}");
        assert_eq!(bright, vec![(e("m.bright_house_field"), None)]);
        // The name asserted then retracted: no name, not found by it.
        assert_eq!(kg.label("m.baycare_ballpark").await.unwrap(), None);
        let found = kg.find_entities("BayCare Ballpark", 5).await.unwrap();
        assert!(found.iter().all(|m| m.id != "m.baycare_ballpark"), "{found:?}");
    }
}

#[tokio::test]
async fn a_later_retract_hides_a_replaces_new_object_and_name() {
    let kg = OverlayKg::new(
        Arc::new(demo_graph()),
        &[
            correction(1, replace_op()),
            correction(2, retract("m.phillies", STADIUM, e("new.baycare_ballpark"))),
            correction(3, retract("new.baycare_ballpark", NAME, Term::Literal("BayCare Ballpark".into()))),
        ],
    );
    assert!(seen(&kg, "m.phillies", RelationRef::out(STADIUM)).await.is_empty(), "old and new both retracted");
    assert!(!kg.relations("m.phillies").await.unwrap().contains(&RelationRef::out(STADIUM)));
    assert!(kg.relations("new.baycare_ballpark").await.unwrap().is_empty());
    assert_eq!(kg.label("new.baycare_ballpark").await.unwrap(), None);
    assert!(kg.find_entities("BayCare Ballpark", 5).await.unwrap().iter().all(|m| m.id != "new.baycare_ballpark"));
}

#[tokio::test]
async fn a_later_assert_shows_what_an_earlier_retract_hid() {
    let bright = || e("m.bright_house_field");
    let name = || Term::Literal("Bright House Field".into());
    let kg = OverlayKg::new(
        Arc::new(demo_graph()),
        &[
            correction(1, retract("m.phillies", STADIUM, bright())),
            correction(2, retract("m.bright_house_field", NAME, name())),
            correction(3, assert_op("m.phillies", STADIUM, bright())),
            correction(4, assert_op("m.bright_house_field", NAME, name())),
        ],
    );
    assert_eq!(seen(&kg, "m.phillies", RelationRef::out(STADIUM)).await, vec![(bright(), Some(3))]);
    assert!(kg.relations("m.phillies").await.unwrap().contains(&RelationRef::out(STADIUM)));
    assert!(kg.relations("m.bright_house_field").await.unwrap().contains(&RelationRef::incoming(STADIUM)));
    assert_eq!(kg.label("m.bright_house_field").await.unwrap().as_deref(), Some("Bright House Field"));
    let found = kg.find_entities("Bright House Field", 3).await.unwrap();
    assert_eq!((found[0].id.as_str(), found[0].exact), ("m.bright_house_field", true));
    // The other way round, the retract is the later one and wins.
    let kg = OverlayKg::new(
        Arc::new(demo_graph()),
        &[
            correction(1, assert_op("m.phillies", STADIUM, bright())),
            correction(2, retract("m.phillies", STADIUM, bright())),
        ],
    );
    assert!(seen(&kg, "m.phillies", RelationRef::out(STADIUM)).await.is_empty());
}

#[tokio::test]
async fn a_scenario_does_not_hide_what_a_user_asserted() {
    const MASCOT: &str = "sports.sports_team.team_mascot";
    // The scenario removes the Giants' mascot; a user restored it with a correction.
    let hidden = [
        ("m.giants".to_string(), MASCOT.to_string(), e("m.lou_seal")),
        ("m.phillies".to_string(), STADIUM.to_string(), e("m.bright_house_field")),
    ];
    let restored = [correction(1, assert_op("m.giants", MASCOT, e("m.lou_seal")))];
    let kg = OverlayKg::new(Arc::new(demo_graph()), &restored).with_hidden(&hidden);
    assert_eq!(seen(&kg, "m.giants", RelationRef::out(MASCOT)).await, vec![(e("m.lou_seal"), Some(1))]);
    assert_eq!(seen(&kg, "m.lou_seal", RelationRef::incoming(MASCOT)).await, vec![(e("m.giants"), Some(1))]);
    assert!(kg.relations("m.giants").await.unwrap().contains(&RelationRef::out(MASCOT)));
    // What no one asserted stays hidden.
    assert!(seen(&kg, "m.phillies", RelationRef::out(STADIUM)).await.is_empty());
    assert!(!kg.relations("m.phillies").await.unwrap().contains(&RelationRef::out(STADIUM)));
    // An assert the user later retracted is not restored.
    let retracted_again = [restored[0].clone(), correction(2, retract("m.giants", MASCOT, e("m.lou_seal")))];
    let kg = OverlayKg::new(Arc::new(demo_graph()), &retracted_again).with_hidden(&hidden);
    assert!(seen(&kg, "m.giants", RelationRef::out(MASCOT)).await.is_empty());
    assert!(!kg.relations("m.giants").await.unwrap().contains(&RelationRef::out(MASCOT)));
}

#[test]
fn an_export_lets_the_later_correction_of_a_triple_win() {
    use ongraph::kg::KgProfile;
    use ongraph::testing::overlay::{ExportFormat, export};
    let profile = ongraph::testing::overlay::Vocabulary::new(&KgProfile::freebase(), None);
    let fb = |id: &str| format!("<http://rdf.freebase.com/ns/{id}>");
    let triple = format!("{} {} {} .", fb("m.phillies"), fb(STADIUM), fb("m.baycare_ballpark"));
    let asserted_then_retracted = [
        correction(1, assert_op("m.phillies", STADIUM, e("m.baycare_ballpark"))),
        correction(2, retract("m.phillies", STADIUM, e("m.baycare_ballpark"))),
    ];
    let sparql = export(&asserted_then_retracted, ExportFormat::SparqlUpdate, &profile);
    // A DELETE then an INSERT of the same triple would leave it in the KG.
    assert_eq!(sparql.matches(&triple).count(), 1, "{sparql}");
    assert!(sparql.starts_with("DELETE DATA {\n  # correction 2 by tester") && !sparql.contains("INSERT"), "{sparql}");
    let nt = export(&asserted_then_retracted, ExportFormat::Nt, &profile);
    assert_eq!(nt.lines().filter(|l| !l.starts_with('#')).count(), 0, "nothing to add: {nt}");
    assert!(nt.contains(&format!("# retracted: {triple}")), "{nt}");

    // Retracted, then asserted again: the triple is added.
    let retracted_then_asserted = [
        correction(1, retract("m.phillies", STADIUM, e("m.baycare_ballpark"))),
        correction(2, assert_op("m.phillies", STADIUM, e("m.baycare_ballpark"))),
    ];
    let sparql = export(&retracted_then_asserted, ExportFormat::SparqlUpdate, &profile);
    assert!(sparql.starts_with("INSERT DATA {\n  # correction 2 by tester"), "{sparql}");
    assert_eq!(sparql.matches(&triple).count(), 1, "{sparql}");
    let nt = export(&retracted_then_asserted, ExportFormat::Nt, &profile);
    assert_eq!(nt.lines().filter(|l| !l.starts_with('#')).collect::<Vec<_>>(), vec![triple.as_str()], "{nt}");
    // A backup keeps every correction, in order.
    let jsonl = export(&retracted_then_asserted, ExportFormat::Jsonl, &profile);
    assert_eq!(jsonl.lines().count(), 2, "{jsonl}");
}

#[test]
fn the_generated_mark_is_stored_and_not_read_from_the_reason() {
    use ongraph::kg::KgProfile;
    use ongraph::testing::overlay::{ExportFormat, export, generated_reason};
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("overlay");
    let op = || assert_op("m.cupertino", "location.location.time_zones", e("m.pacific_tz"));
    {
        let store = SledStore::open(&path).unwrap();
        // Accepted in the UI, its reason then edited: still generated.
        store.add("demo", Draft { generated: true, reason: "looked right".into(), ..draft(op()) }).unwrap();
        // A user typing the UI's reason: not generated.
        store.add("demo", Draft { reason: generated_reason("mallory"), ..draft(op()) }).unwrap();
    }
    {
        // Stored by a build before the mark: the reason decides, as it did then.
        let db = open_when_free(&path);
        let legacy = |id: u64, reason: &str| {
            let record = serde_json::json!({"v": 1, "correction": {
                "id": id, "kg": "demo", "op": "assert", "subject": "m.a", "relation": "r",
                "object": {"kind": "entity", "value": "m.b"}, "reason": reason, "author": "t",
                "created": "2026-01-01T00:00:00Z", "active": true, "history": []}});
            let mut key = b"demo\0".to_vec();
            key.extend_from_slice(&id.to_be_bytes());
            db.insert(key, record.to_string().into_bytes()).unwrap();
        };
        legacy(3, &generated_reason("demo"));
        legacy(4, "checked on a map");
        db.flush().unwrap();
    }
    let listed = SledStore::open(&path).unwrap().list("demo").unwrap();
    let marks = |list: &[Correction]| list.iter().map(|c| (c.id, c.is_llm_generated())).collect::<Vec<_>>();
    assert_eq!(marks(&listed), [(1, true), (2, false), (3, true), (4, false)]);
    assert_eq!(listed.iter().map(|c| c.generated).collect::<Vec<_>>(), [Some(true), Some(false), None, None]);
    // A backup carries the mark and reads back the same.
    let jsonl =
        export(&listed, ExportFormat::Jsonl, &ongraph::testing::overlay::Vocabulary::new(&KgProfile::freebase(), None));
    let back: Vec<Correction> = jsonl.lines().map(|l| serde_json::from_str(l).unwrap()).collect();
    assert_eq!(back, listed);
    assert_eq!(marks(&back), marks(&listed));
}
