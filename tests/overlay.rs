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
        author: "tester".into(),
        created: "2026-11-22T00:00:00Z".into(),
        active: true,
        context: None,
        history: vec![],
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
    Draft { op, reason: "because".into(), author: "tester".into(), context: None, origin: None }
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
        db.insert(key, br#"{"v": 2, "correction": {}}"#.to_vec()).unwrap();
        db.flush().unwrap();
    }
    let err = SledStore::open(&path).unwrap().list("demo").unwrap_err();
    assert!(err.to_string().contains("format v2, which this ongraph does not read (it reads v1)"), "{err}");
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
    assert!(err.to_string().contains("is corrupt"), "{err}");
    assert!(!err.to_string().contains("panicked"));
}

#[test]
fn a_truncated_store_beside_a_snapshot_is_a_clear_error_not_a_panic() {
    // Regression: a store with a sled snapshot and its `db` truncated made `fix list` panic
    // inside sled. A snapshot is written after many writes; this store asks for one early.
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("overlay");
    for round in 0..4u32 {
        let db = sled::Config::new().path(&path).open().unwrap();
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
