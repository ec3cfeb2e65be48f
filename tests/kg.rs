//! The local knowledge graph: loading, both directions, literals, unnamed nodes, linking.

use ongraph::kg::{Direction, KgProfile, KnowledgeGraph, RelationRef, Term};
use ongraph::testing::kg::GraphBuilder;
use ongraph::testing::kg::{load_file, read_tsv};
use std::io::Write;

#[test]
fn demo_kg_parses_strictly() {
    let text = std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/sessions/demo-kg.tsv")).unwrap();
    let mut b = GraphBuilder::new();
    let report = read_tsv(text.as_bytes(), "demo-kg.tsv", false, &mut b).unwrap();
    assert!(report.triples >= 200, "demo KG has {} triples", report.triples);
    assert_eq!(report.skipped, 0);
}

#[tokio::test]
async fn relations_cover_both_directions_and_filter_uninformative_ones() {
    let g = ongraph::testing::kg::demo_graph();
    let rels = g.relations("m.lou_seal").await.unwrap();
    assert!(rels.contains(&RelationRef::incoming("sports.sports_team.team_mascot")), "{rels:?}");
    assert!(rels.contains(&RelationRef::out("sports.mascot.debut")));
    let canberra = g.relations("m.canberra").await.unwrap();
    assert!(!canberra.iter().any(|r| r.relation.starts_with("type.") || r.relation.starts_with("common.")));
    // An incoming relation is expanded towards the head of the stored triple.
    let teams = g.neighbours("m.lou_seal", &RelationRef::incoming("sports.sports_team.team_mascot")).await.unwrap();
    assert_eq!(teams.len(), 1);
    assert_eq!(teams[0].term, Term::Entity("m.giants".into()));
    assert_eq!(teams[0].label.as_deref(), Some("San Francisco Giants"));
    // The same relation read outward from the mascot finds nothing.
    assert!(g.neighbours("m.lou_seal", &RelationRef::out("sports.sports_team.team_mascot")).await.unwrap().is_empty());
}

#[tokio::test]
async fn literals_and_unnamed_nodes() {
    let g = ongraph::testing::kg::demo_graph();
    let founded = g.neighbours("m.apple", &RelationRef::out("organization.organization.date_founded")).await.unwrap();
    assert_eq!(founded[0].term, Term::Literal("1976-04-01".into()));
    let hq = g.neighbours("m.apple", &RelationRef::out("organization.organization.headquarters")).await.unwrap();
    assert_eq!(hq[0].term, Term::Entity("cvt.apple_hq".into()));
    assert_eq!(hq[0].label, None, "a mediator node has no name");
    assert_eq!(g.label("cvt.apple_hq").await.unwrap(), None);
    assert_eq!(g.label("m.apple").await.unwrap().as_deref(), Some("Apple Inc."));
    // Literals have no relations to explore.
    assert!(g.relations("1976-04-01").await.unwrap().is_empty());
}

#[tokio::test]
async fn entity_linking_exact_then_fuzzy() {
    let g = ongraph::testing::kg::demo_graph();
    let exact = g.find_entities("canberra", 5).await.unwrap();
    assert_eq!((exact[0].id.as_str(), exact[0].exact), ("m.canberra", true));
    let fuzzy = g.find_entities("Canbera", 3).await.unwrap();
    assert_eq!(fuzzy[0].label, "Canberra");
    assert!(!fuzzy[0].exact && fuzzy[0].score < 1.0);
    assert!(fuzzy.len() <= 3);
    // An id typed verbatim links too.
    assert_eq!(g.find_entities("m.giants", 5).await.unwrap()[0].label, "San Francisco Giants");
    assert!(g.find_entities("Qwxzv", 5).await.unwrap().is_empty());
}

#[tokio::test]
async fn ntriples_with_labels_and_duplicates() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("g.nt");
    let mut f = std::fs::File::create(&path).unwrap();
    writeln!(f, "<http://ex.org/a> <http://www.w3.org/2000/01/rdf-schema#label> \"Alpha\"@en .").unwrap();
    writeln!(f, "<http://ex.org/a> <http://ex.org/knows> <http://ex.org/b> .").unwrap();
    writeln!(f, "<http://ex.org/a> <http://ex.org/knows> <http://ex.org/b> .").unwrap();
    writeln!(f, "_:n1 <http://ex.org/knows> <http://ex.org/a> .").unwrap();
    writeln!(f, "<http://ex.org/b> <http://ex.org/born> \"1901\"^^<http://www.w3.org/2001/XMLSchema#gYear> .").unwrap();
    drop(f);
    let (g, report) = load_file(&path, KgProfile::freebase(), false).unwrap();
    assert_eq!(report.triples, 5);
    assert_eq!(g.triple_count(), 4, "the duplicate triple is stored once");
    assert_eq!(g.label("http://ex.org/a").await.unwrap().as_deref(), Some("Alpha"));
    let rels = g.relations("http://ex.org/a").await.unwrap();
    assert_eq!(
        rels,
        vec![RelationRef::out("http://ex.org/knows"), RelationRef::incoming("http://ex.org/knows")],
        "the label predicate is not offered as a relation"
    );
    let from_blank = g.neighbours("http://ex.org/a", &RelationRef::incoming("http://ex.org/knows")).await.unwrap();
    assert!(from_blank[0].term.as_str().starts_with("_:"));
    let born = g.neighbours("http://ex.org/b", &RelationRef::out("http://ex.org/born")).await.unwrap();
    assert_eq!(born[0].term, Term::Literal("1901".into()));
}

#[tokio::test]
async fn pathquestion_style_tsv_uses_ids_as_names() {
    let mut b = GraphBuilder::new();
    read_tsv(
        "Khanty_people\t__people__ethnicity__languages_spoken\tKhanty_Language\n".as_bytes(),
        "kb.txt",
        false,
        &mut b,
    )
    .unwrap();
    let g = b.finish("pql", KgProfile::named_ids());
    assert_eq!(g.label("Khanty_people").await.unwrap().as_deref(), Some("Khanty people"));
    assert_eq!(
        g.profile().display_relation("__people__ethnicity__languages_spoken"),
        "people.ethnicity.languages_spoken"
    );
    assert_eq!(g.find_entities("khanty language", 1).await.unwrap()[0].id, "Khanty_Language");
    let r = g.relations("Khanty_Language").await.unwrap();
    assert_eq!(r[0].direction, Direction::In);
}

#[test]
fn missing_file_is_a_clear_error() {
    let err = load_file(std::path::Path::new("/nonexistent/kb.tsv"), KgProfile::freebase(), false).err().unwrap();
    assert!(err.to_string().starts_with("cannot read /nonexistent/kb.tsv"), "{err}");
}

#[tokio::test]
async fn a_byte_order_mark_is_not_part_of_the_first_id_and_an_empty_file_is_an_error() {
    let dir = tempfile::tempdir().unwrap();
    for name in ["kb.txt", "kb.nt"] {
        let path = dir.path().join(name);
        let line = if name.ends_with(".nt") {
            "<http://ex.org/a> <http://ex.org/knows> <http://ex.org/b> .\n"
        } else {
            "a\tknows\tb\n"
        };
        std::fs::write(&path, format!("\u{feff}{line}")).unwrap();
        let (g, report) = load_file(&path, KgProfile::named_ids(), false).unwrap();
        assert_eq!(report.triples, 1, "{name}");
        let head = if name.ends_with(".nt") { "http://ex.org/a" } else { "a" };
        assert_eq!(g.relations(head).await.unwrap().len(), 1, "{name}: the head's id has no BOM");
        for empty in ["", "\u{feff}", "# only a comment\n"] {
            std::fs::write(&path, empty).unwrap();
            let err = load_file(&path, KgProfile::named_ids(), false).err().unwrap().to_string();
            assert!(err.ends_with("holds no triples: the file is empty or holds only comments"), "{name}: {err}");
        }
    }
    let path = dir.path().join("bad.txt");
    std::fs::write(&path, "one field\ntwo\tfields\n").unwrap();
    let err = load_file(&path, KgProfile::named_ids(), true).err().unwrap().to_string();
    assert!(err.contains("holds no triples: all 2 lines are malformed"), "{err}");
}
