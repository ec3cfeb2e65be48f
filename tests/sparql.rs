//! SPARQL endpoints as knowledge graphs, against a real Oxigraph server (started by the tests;
//! install it with `bash scripts/install-sparql-servers`) and, for exact query text and
//! failures, a loopback fake.

mod common;

use common::servers::{Oxigraph, Virtuoso, fixture};
use common::sparql_faults::{SparqlFault, SparqlFaultServer};
use ongraph::kg::{KgProfile, KnowledgeGraph, RelationRef, Term};
use ongraph::testing::kg::{Namespaces, SparqlClient, SparqlConfig, SparqlKg, demo_graph};
use std::collections::BTreeSet;
use std::time::Duration;
use wiremock::matchers::method;
use wiremock::{Mock, MockServer, ResponseTemplate};

fn freebase_kg(url: &str) -> SparqlKg {
    let client = SparqlClient::new(SparqlConfig::new(url)).unwrap();
    SparqlKg::new("ox", client, KgProfile::freebase(), Namespaces::freebase(), "en").unwrap()
}

#[tokio::test]
async fn a_freebase_endpoint_answers_like_the_local_graph() {
    let server = Oxigraph::start(&fixture("freebase-demo.nt"));
    assert_parity_with_local(&server.url).await;
}

#[tokio::test]
async fn virtuoso_answers_like_the_local_graph() {
    let server = Virtuoso::start(&fixture("freebase-demo.nt"));
    assert_parity_with_local(&server.url).await;
    // Named by its graph (`[kg.NAME] graph`), read with FROM: the same answers.
    assert_parity(freebase_kg(&server.url).in_graph("http://ongraph.test/fixture").unwrap()).await;
    let elsewhere = freebase_kg(&server.url).in_graph("http://ongraph.test/no-such-graph").unwrap();
    assert!(elsewhere.relations("m.canberra").await.unwrap().is_empty(), "FROM reads that graph alone");
    // Long queries go by form POST, which Virtuoso answers (a direct sparql-query POST hangs it).
    let kg = freebase_kg(&server.url);
    assert!(kg.find_entities(&"x".repeat(900), 1).await.unwrap().is_empty());
    // Batched lookups work on Virtuoso too.
    let many = kg.relations_many(&["m.lou_seal".to_string(), "m.apple".to_string()]).await.unwrap();
    assert_eq!(many[0], kg.relations("m.lou_seal").await.unwrap());
}

/// `[kg.NAME] graph`: a KG kept in a named graph is read from that graph alone (`FROM`), as
/// a server holding other graphs beside it (Virtuoso's default graph is their union) needs.
#[tokio::test]
async fn a_kg_in_a_named_graph_is_read_from_that_graph_alone() {
    let fb = "http://rdf.freebase.com/ns/";
    let update = format!(
        "MOVE DEFAULT TO <http://example.org/kg> ; \
         INSERT DATA {{ GRAPH <http://example.org/other> {{ <{fb}m.canberra> <{fb}junk.relation> <{fb}m.x> }} }}"
    );
    let server = Oxigraph::start_with(&fixture("freebase-demo.nt"), Some(&update));
    // The default graph is empty now: without the graph, nothing.
    assert!(freebase_kg(&server.url).relations("m.canberra").await.unwrap().is_empty());
    let kg = || freebase_kg(&server.url).in_graph("http://example.org/kg").unwrap();
    let relations = kg().relations("m.canberra").await.unwrap();
    assert!(relations.iter().any(|r| r.relation == "location.location.containedby"), "{relations:?}");
    assert!(!relations.iter().any(|r| r.relation.starts_with("junk")), "another graph leaked: {relations:?}");
    assert_parity(kg()).await;
    // The graph is an IRI, checked like every other: nothing can close the clause.
    let hostile = freebase_kg(&server.url).in_graph("http://example.org/kg> } DROP ALL { <x").err();
    assert!(hostile.is_some_and(|e| e.contains("not a valid IRI")));

    // Through the config, as a user writes it.
    let home = tempfile::tempdir().unwrap();
    let h = home.path();
    let entry = format!("[kg.fb]\nendpoint = \"{}\"\nprofile = \"freebase\"\n", server.url);
    let c = config_file(h, &format!("{entry}graph = \"http://example.org/kg\"\n"));
    let asked = ongraph(h, &["--config", &c, "ask", PHANATIC_Q, "--kg", "fb", "--no-cache"]);
    assert!(asked.starts_with("Answer: Bright House Field\n"), "{asked}");
    let c = config_file(h, &format!("{entry}graph = \"not an iri\"\n"));
    let out =
        common::ongraph_cmd(h, &["--config", &c, "kg", "relations", "m.canberra", "--kg", "fb"]).output().unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{err}");
    assert!(err.contains("[kg.fb] graph: ") && err.contains("not a valid IRI") && err.lines().count() == 1, "{err}");
}

/// The endpoint, loaded with the demo KG, must answer every lookup as the local graph does.
async fn assert_parity_with_local(url: &str) {
    assert_parity(freebase_kg(url)).await;
}

async fn assert_parity(remote: SparqlKg) {
    let local = demo_graph();
    for entity in ["m.lou_seal", "m.apple", "cvt.apple_hq", "m.canberra", "m.phillies", "m.australia"] {
        let (r, l): (BTreeSet<_>, BTreeSet<_>) = (
            remote.relations(entity).await.unwrap().into_iter().collect(),
            local.relations(entity).await.unwrap().into_iter().collect(),
        );
        assert_eq!(r, l, "relations of {entity}");
        for rel in l {
            let names =
                |v: Vec<ongraph::kg::Neighbour>| v.into_iter().map(|n| (n.term, n.label)).collect::<BTreeSet<_>>();
            let (rn, ln) = (
                names(remote.neighbours(entity, &rel).await.unwrap()),
                names(local.neighbours(entity, &rel).await.unwrap()),
            );
            assert_eq!(rn, ln, "neighbours of {entity} through {rel:?}");
        }
    }
    assert_eq!(remote.label("cvt.apple_hq").await.unwrap(), None, "a mediator node has no name");
    assert_eq!(remote.label("m.apple").await.unwrap().as_deref(), Some("Apple Inc."));
    let found = remote.find_entities("canberra", 3).await.unwrap();
    assert_eq!((found[0].id.as_str(), found[0].exact), ("m.canberra", true));
    let close = remote.find_entities("Canbera", 3).await.unwrap();
    assert_eq!((close[0].label.as_str(), close[0].exact), ("Canberra", false));
    assert_eq!(remote.find_entities("m.giants", 1).await.unwrap()[0].label, "San Francisco Giants");
    assert!(remote.relations("m.does_not_exist").await.unwrap().is_empty());
    // No name, but an owl:sameAs link: the name falls back to it (as ToG does).
    let airports =
        remote.neighbours("m.oracle_park", &RelationRef::out("location.location.nearby_airports")).await.unwrap();
    assert_eq!(airports[0].label.as_deref(), Some("San Francisco International Airport"));
    assert_eq!(remote.label("m.0sfo").await.unwrap().as_deref(), Some("San Francisco International Airport"));
    assert_eq!(remote.label("cvt.apple_hq").await.unwrap(), None, "still unnamed without a sameAs");
    assert!(remote.network().queries > 10, "queries are counted");
}

#[tokio::test]
async fn an_rdf_endpoint_uses_labels_and_full_iris() {
    let server = Oxigraph::start(&fixture("rdf-fixture.nt"));
    let client = SparqlClient::new(SparqlConfig::new(&server.url)).unwrap();
    let kg = SparqlKg::new("rdf", client, KgProfile::rdf(), Namespaces::default(), "en").unwrap();
    assert_eq!(kg.label("http://example.org/ada").await.unwrap().as_deref(), Some("Ada Lovelace"), "English first");
    assert_eq!(kg.label("http://example.org/babbage").await.unwrap().as_deref(), Some("Charles Babbage"));
    let rels = kg.relations("http://example.org/london").await.unwrap();
    assert_eq!(rels, vec![RelationRef::incoming("http://example.org/bornIn")], "sameAs and labels are filtered");
    let born =
        kg.neighbours("http://example.org/ada", &RelationRef::out("http://example.org/birthYear")).await.unwrap();
    assert_eq!(born[0].term, Term::Literal("1815".into()));
    assert_eq!(kg.find_entities("analytical engine", 1).await.unwrap()[0].id, "http://example.org/engine");
}

/// A fake endpoint that records every query it receives and answers with no rows.
async fn recording_endpoint() -> MockServer {
    let server = MockServer::start().await;
    Mock::given(method("GET"))
        .respond_with(ResponseTemplate::new(200).set_body_raw(
            r#"{"head":{"vars":["e","name"]},"results":{"bindings":[]}}"#,
            "application/sparql-results+json",
        ))
        .mount(&server)
        .await;
    Mock::given(method("POST"))
        .respond_with(ResponseTemplate::new(200).set_body_raw(
            r#"{"head":{"vars":["e","name"]},"results":{"bindings":[]}}"#,
            "application/sparql-results+json",
        ))
        .mount(&server)
        .await;
    server
}

async fn received(server: &MockServer) -> Vec<String> {
    let mut out = Vec::new();
    for r in server.received_requests().await.unwrap_or_default() {
        assert_eq!(r.headers.get("accept").unwrap(), "application/sparql-results+json");
        assert!(r.headers.get("user-agent").unwrap().to_str().unwrap().starts_with("ongraph/"));
        let query = if r.method == wiremock::http::Method::GET {
            r.url.query_pairs().find(|(k, _)| k == "query").map(|(_, v)| v.into_owned())
        } else {
            assert_eq!(r.headers.get("content-type").unwrap(), "application/x-www-form-urlencoded");
            url_form(&r.body)
        };
        out.push(query.expect("a query parameter"));
    }
    out
}

fn url_form(body: &[u8]) -> Option<String> {
    let text = String::from_utf8_lossy(body);
    let value = text.split('&').find_map(|kv| kv.strip_prefix("query="))?;
    let bytes = value.replace('+', " ");
    let mut out = Vec::new();
    let b = bytes.as_bytes();
    let mut i = 0;
    while i < b.len() {
        if b[i] == b'%' && i + 2 < b.len() {
            out.push(u8::from_str_radix(std::str::from_utf8(&b[i + 1..i + 3]).ok()?, 16).ok()?);
            i += 3;
        } else {
            out.push(b[i]);
            i += 1;
        }
    }
    String::from_utf8(out).ok()
}

#[tokio::test]
async fn hostile_input_cannot_change_a_query() {
    let server = recording_endpoint().await;
    let kg = freebase_kg(&format!("{}/sparql", server.uri()));
    // Ids and relations that would close the IRI are refused before anything is sent.
    for hostile in ["m.x> } ; DROP ALL ; { <y", "m.a b", "m.\"x"] {
        assert!(kg.relations(hostile).await.is_err(), "{hostile}");
        assert!(kg.neighbours("m.ok", &RelationRef::out(hostile)).await.is_err(), "{hostile}");
    }
    assert!(received(&server).await.is_empty(), "nothing was sent");
    // A hostile name becomes a harmless literal: the exact query text the server receives.
    kg.find_entities("\"} UNION { ?s ?p ?o", 1).await.unwrap();
    let queries = received(&server).await;
    assert_eq!(
        queries[0],
        "SELECT DISTINCT ?e ?name WHERE { VALUES ?name { \"\\\"} UNION { ?s ?p ?o\" \"\\\"} UNION { ?s ?p ?o\"@en \"\\\"} union { ?s ?p ?o\" \"\\\"} union { ?s ?p ?o\"@en \"\\\"} Union { ?s ?p ?o\" \"\\\"} Union { ?s ?p ?o\"@en } ?e <http://rdf.freebase.com/ns/type.object.name>|<http://www.w3.org/2000/01/rdf-schema#label> ?name } LIMIT 100"
    );
    kg.relations("m.0f8l9c").await.unwrap();
    assert_eq!(
        received(&server).await.last().unwrap(),
        "SELECT DISTINCT ?r ?dir WHERE { { <http://rdf.freebase.com/ns/m.0f8l9c> ?r ?x . BIND(\"out\" AS ?dir) } UNION { ?x ?r <http://rdf.freebase.com/ns/m.0f8l9c> . BIND(\"in\" AS ?dir) } } LIMIT 10000"
    );
}

#[tokio::test]
async fn long_queries_go_by_form_post() {
    let server = recording_endpoint().await;
    let kg = freebase_kg(&format!("{}/sparql", server.uri()));
    let long_name = "x".repeat(900);
    kg.find_entities(&long_name, 1).await.unwrap();
    let requests = server.received_requests().await.unwrap();
    assert_eq!(requests[0].method, wiremock::http::Method::POST);
    assert!(received(&server).await[0].contains(&long_name));
}

#[tokio::test]
async fn endpoint_failures_are_clear_errors() {
    for (response, needle) in [
        (ResponseTemplate::new(200).set_body_string("<html><body>Welcome</body></html>"), "not SPARQL JSON results"),
        (ResponseTemplate::new(200).set_body_string("{\"head\": "), "not SPARQL JSON results"),
        (
            ResponseTemplate::new(400).set_body_string("Virtuoso 37000 Error SP030: syntax"),
            "HTTP 400 Bad Request: Virtuoso 37000",
        ),
        (ResponseTemplate::new(200).set_delay(Duration::from_secs(3)), "no complete answer within 1 s (1 attempt)"),
    ] {
        let server = MockServer::start().await;
        Mock::given(method("GET")).respond_with(response).mount(&server).await;
        let mut config = SparqlConfig::new(format!("{}/sparql", server.uri()));
        config.timeout = Duration::from_secs(1);
        config.max_retries = 0;
        let kg =
            SparqlKg::new("x", SparqlClient::new(config).unwrap(), KgProfile::freebase(), Namespaces::freebase(), "en")
                .unwrap();
        let err = kg.relations("m.x").await.unwrap_err().to_string();
        assert!(err.contains(needle), "{needle:?} not in {err}");
    }
    // 503 is retried a bounded number of times.
    let server = MockServer::start().await;
    Mock::given(method("GET")).respond_with(ResponseTemplate::new(503)).expect(3).mount(&server).await;
    let mut config = SparqlConfig::new(format!("{}/sparql", server.uri()));
    config.max_retries = 2;
    config.backoff = Duration::from_millis(5);
    let kg =
        SparqlKg::new("x", SparqlClient::new(config).unwrap(), KgProfile::freebase(), Namespaces::freebase(), "en")
            .unwrap();
    let err = kg.relations("m.x").await.unwrap_err().to_string();
    assert!(err.contains("HTTP 503") && err.ends_with(" (3 attempts)"), "{err}");
}

/// Writes `toml` as the config file in `h` and returns its path.
fn config_file(h: &std::path::Path, toml: &str) -> String {
    let path = h.join("config.toml");
    std::fs::write(&path, toml).unwrap();
    path.display().to_string()
}

fn ongraph(home: &std::path::Path, args: &[&str]) -> String {
    let out = common::ongraph_cmd(home, args).output().unwrap();
    assert_eq!(out.status.code(), Some(0), "{args:?}: {}", String::from_utf8_lossy(&out.stderr));
    String::from_utf8_lossy(&out.stdout).into_owned()
}

const PHANATIC_Q: &str = "Which ballpark hosts spring training for the team whose mascot is the Phillie Phanatic?";

/// The ToG paper's Figure 4 through the CLI against the configured endpoint: the outdated
/// answer; retract it and assert the stadium's current name; the corrected answer.
fn ask_fix_ask(h: &std::path::Path, c: &str) {
    const STADIUM: &str = "baseball.baseball_team.spring_training_stadium";
    assert!(ongraph(h, &["--config", c, "ask", PHANATIC_Q]).starts_with("Answer: Bright House Field\n"));
    let fix = |args: &[&str]| {
        let mut all = vec!["--config", c, "fix"];
        all.extend_from_slice(args);
        ongraph(h, &all);
    };
    fix(&["retract", "m.phillies", STADIUM, "m.bright_house_field", "--reason", "Renamed"]);
    fix(&["assert", "m.phillies", STADIUM, "m.baycare_ballpark", "--reason", "Current name"]);
    fix(&["assert", "m.baycare_ballpark", "type.object.name", "\"BayCare Ballpark\"", "--reason", "Its name"]);
    assert!(ongraph(h, &["--config", c, "ask", PHANATIC_Q]).starts_with("Answer: BayCare Ballpark\n"));
}

#[test]
fn figure_4_against_a_real_sparql_server() {
    let server = Oxigraph::start(&fixture("freebase-demo.nt"));
    let home = tempfile::tempdir().unwrap();
    let h = home.path();
    let config = config_file(
        h,
        &format!("[defaults]\nkg = \"fb\"\n[kg.fb]\nendpoint = \"{}\"\nprofile = \"freebase\"\n", server.url),
    );
    let c = config.as_str();
    ask_fix_ask(h, c);
    ongraph(h, &["--config", c, "fix", "undo", "3"]);
    ongraph(h, &["--config", c, "fix", "undo", "2"]);
    ongraph(h, &["--config", c, "fix", "undo", "1"]);
    assert!(ongraph(h, &["--config", c, "ask", PHANATIC_Q]).starts_with("Answer: Bright House Field\n"));
    // Redo the fix, export it, apply the patch to a copy of the endpoint's data: the corrected
    // KG answers right with the overlay switched off.
    ongraph(h, &["--config", c, "fix", "relabel", "m.bright_house_field", "BayCare Ballpark", "--reason", "Renamed"]);
    let patch = ongraph(h, &["--config", c, "fix", "export", "--format", "sparql-update"]);
    let patched = Oxigraph::start_with(&fixture("freebase-demo.nt"), Some(&patch));
    config_file(
        h,
        &format!("[defaults]\nkg = \"fb\"\n[kg.fb]\nendpoint = \"{}\"\nprofile = \"freebase\"\n", patched.url),
    );
    assert!(ongraph(h, &["--config", c, "ask", PHANATIC_Q, "--no-overlay"]).starts_with("Answer: BayCare Ballpark\n"));
}

#[tokio::test]
async fn batched_lookups_match_single_ones_in_fewer_queries() {
    let server = Oxigraph::start(&fixture("freebase-demo.nt"));
    let single = freebase_kg(&server.url);
    let batched = freebase_kg(&server.url);
    let entities: Vec<String> = ["m.lou_seal", "m.apple", "cvt.apple_hq", "m.canberra", "m.nowhere", "m.apple"]
        .iter()
        .map(|s| s.to_string())
        .collect();
    let many = batched.relations_many(&entities).await.unwrap();
    for (e, got) in entities.iter().zip(&many) {
        assert_eq!(*got, single.relations(e).await.unwrap(), "{e}");
    }
    let pairs: Vec<(String, RelationRef)> = vec![
        ("m.lou_seal".into(), RelationRef::incoming("sports.sports_team.team_mascot")),
        ("m.apple".into(), RelationRef::out("organization.organization.founders")),
        ("m.apple".into(), RelationRef::out("organization.organization.date_founded")),
        ("cvt.apple_hq".into(), RelationRef::out("location.mailing_address.citytown")),
        ("m.canberra".into(), RelationRef::incoming("location.country.capital")),
    ];
    let many = batched.neighbours_many(&pairs).await.unwrap();
    for ((e, r), got) in pairs.iter().zip(&many) {
        let sorted = |mut v: Vec<ongraph::kg::Neighbour>| {
            v.sort_by(|a, b| a.term.cmp(&b.term));
            v
        };
        assert_eq!(sorted(got.clone()), sorted(single.neighbours(e, r).await.unwrap()), "{e} {r:?}");
    }
    // One query for the relations, one for the neighbours in both directions.
    assert_eq!(batched.network().queries, 2, "batched queries");
    assert_eq!(single.network().queries, 11, "one query per lookup");
}

#[test]
fn asking_again_is_answered_from_the_query_cache() {
    let server = Oxigraph::start(&fixture("freebase-demo.nt"));
    let home = tempfile::tempdir().unwrap();
    let h = home.path();
    let config = config_file(
        h,
        &format!(
            "[kg.fb]\nendpoint = \"{0}\"\nprofile = \"freebase\"\n[kg.unbatched]\nendpoint = \"{0}\"\nprofile = \"freebase\"\nbatch = false\n",
            server.url
        ),
    );
    let c = config.as_str();
    let ask_kg = |kg: &str, extra: &[&str]| -> serde_json::Value {
        let mut args = vec!["--config", c, "ask", PHANATIC_Q, "--kg", kg, "--json"];
        args.extend_from_slice(extra);
        serde_json::from_str(&ongraph(h, &args)).unwrap()
    };
    let ask = |extra: &[&str]| ask_kg("fb", extra);
    let first = ask(&[]);
    let sent = first["network"]["queries"].as_u64().unwrap();
    assert!(sent > 0 && first["network"]["cache_hits"] == 0, "{}", first["network"]);
    // Lookups are batched per step: fewer queries than one per lookup, same answer.
    let unbatched = ask_kg("unbatched", &["--no-cache"]);
    assert_eq!(unbatched["answer"], first["answer"]);
    assert!(sent < unbatched["network"]["queries"].as_u64().unwrap(), "{sent} vs {}", unbatched["network"]);
    let second = ask(&[]);
    assert_eq!(second["network"]["queries"], 0, "a second ask sends no query");
    assert_eq!(second["network"]["cache_hits"].as_u64().unwrap(), sent);
    assert_eq!(second["answer"], first["answer"]);
    assert_eq!(ask(&["--no-cache"])["network"]["queries"].as_u64().unwrap(), sent);
    assert!(ongraph(h, &["--config", c, "cache", "clear"]).starts_with(&format!("removed {sent} cached result(s)")));
    assert_eq!(ask(&[])["network"]["queries"].as_u64().unwrap(), sent, "after clearing, queries are sent again");
}

#[test]
fn figure_4_against_virtuoso() {
    let server = Virtuoso::start(&fixture("freebase-demo.nt"));
    let home = tempfile::tempdir().unwrap();
    let h = home.path();
    let config = config_file(
        h,
        &format!(
            "[defaults]\nkg = \"virtuoso\"\n[kg.virtuoso]\nendpoint = \"{}\"\nprofile = \"freebase\"\n",
            server.url
        ),
    );
    let c = config.as_str();
    ask_fix_ask(h, c);
    assert!(
        ongraph(h, &["--config", c, "ask", PHANATIC_Q, "--no-overlay"]).starts_with("Answer: Bright House Field\n")
    );
}

#[tokio::test]
async fn a_wikidata_endpoint_names_relations_after_their_properties() {
    let server = Oxigraph::start(&fixture("wikidata-fixture.nt"));
    let client = SparqlClient::new(SparqlConfig::new(&server.url)).unwrap();
    let kg = SparqlKg::new("wd", client, KgProfile::wikidata(), Namespaces::wikidata(), "en").unwrap();
    let rels = kg.relations("Q42").await.unwrap();
    let named: Vec<(String, Option<String>)> = rels.iter().map(|r| (r.relation.clone(), r.label.clone())).collect();
    assert_eq!(
        named,
        vec![
            ("p:P69".to_string(), Some("educated at".to_string())),
            ("wdt:P31".to_string(), Some("instance of".to_string())),
            ("wdt:P69".to_string(), Some("educated at".to_string())),
        ],
        "labels, descriptions and other schema triples are not offered"
    );
    assert_eq!(kg.label("Q42").await.unwrap().as_deref(), Some("Douglas Adams"));
    let class = kg.neighbours("Q42", &RelationRef::out("wdt:P31")).await.unwrap();
    assert_eq!((class[0].term.clone(), class[0].label.as_deref()), (Term::Entity("Q5".into()), Some("human")));
    // A statement node: traversable, unnamed, with its value and qualifier behind it.
    let statement = kg.neighbours("Q42", &RelationRef::out("p:P69")).await.unwrap();
    assert_eq!((statement[0].term.clone(), statement[0].label.clone()), (Term::Entity("wds:Q42-SJC".into()), None));
    let value = kg.neighbours("wds:Q42-SJC", &RelationRef::out("ps:P69")).await.unwrap();
    assert_eq!(value[0].label.as_deref(), Some("St John's College"));
    let end = kg.neighbours("wds:Q42-SJC", &RelationRef::out("pq:P582")).await.unwrap();
    assert_eq!(end[0].term, Term::Literal("1974-01-01T00:00:00Z".into()));
    let statement_rels = kg.relations("wds:Q42-SJC").await.unwrap();
    assert!(statement_rels.iter().any(|r| r.relation == "pq:P582" && r.label.as_deref() == Some("end time")));
    assert_eq!(kg.find_entities("douglas adams", 1).await.unwrap()[0].id, "Q42");
    // Batched relation search names properties too.
    let many = kg.relations_many(&["Q42".into(), "Q691283".into()]).await.unwrap();
    assert_eq!(many[1][0].label.as_deref(), Some("located in the administrative territorial entity"));
}

#[test]
fn asking_wikidata_shows_property_names_and_rdf_ids_use_prefixes() {
    let server = Oxigraph::start(&fixture("wikidata-fixture.nt"));
    let rdf = Oxigraph::start(&fixture("rdf-fixture.nt"));
    let home = tempfile::tempdir().unwrap();
    let h = home.path();
    let config = config_file(
        h,
        &format!(
            "[kg.wd]\nendpoint = \"{}\"\nprofile = \"wikidata\"\n[kg.mine]\nendpoint = \"{}\"\nprofile = \"rdf\"\nprefixes = {{ ex = \"http://example.org/\" }}\n",
            server.url, rdf.url
        ),
    );
    let script = h.join("script.toml");
    std::fs::write(
        &script,
        r#"
[[reply]]
step = "relation_prune"
contains = ["Topic Entity: Douglas Adams\n", "Relations: educated at [p:P69]; instance of; educated at [wdt:P69]"]
text = "{educated at [wdt:P69] (Score: 0.9)} {instance of (Score: 0.1)}"
[[reply]]
step = "entity_prune"
text = "Score: 1.0"
[[reply]]
step = "reasoning"
contains = ["Douglas Adams, educated at, St John's College"]
text = "{Yes}. The answer is {St John's College}."
"#,
    )
    .unwrap();
    let c = config.as_str();
    let s = format!("scripted:{}", script.display());
    let out = ongraph(
        h,
        &[
            "--config",
            c,
            "ask",
            "Where did Douglas Adams study?",
            "--kg",
            "wd",
            "--topic",
            "Douglas Adams",
            "--llm",
            &s,
        ],
    );
    assert!(out.starts_with("Answer: St John's College\n"), "{out}");
    assert!(out.contains("Douglas Adams -> educated at -> St John's College"), "{out}");
    assert_eq!(
        ongraph(h, &["--config", c, "kg", "relations", "ex:ada", "--kg", "mine"]),
        "-> ex:birthYear\n-> ex:bornIn\n-> ex:collaboratedWith\n"
    );
}

/// `ongraph eval` over a real SPARQL server: the question counts as wrong on the KG as
/// published (the outdated name), right once corrected — but only with --with-corrections, as a
/// benchmark must not pick up a user's corrections silently.
#[test]
fn eval_measures_a_correction_against_a_real_sparql_server() {
    let server = Oxigraph::start(&fixture("freebase-demo.nt"));
    let home = tempfile::tempdir().unwrap();
    let h = home.path();
    let config = config_file(h, &format!("[kg.fb]\nendpoint = \"{}\"\nprofile = \"freebase\"\n", server.url));
    let c = config.as_str();
    let dataset = h.join("phanatic.jsonl");
    std::fs::write(&dataset, format!("{{\"question\": \"{PHANATIC_Q}\", \"answers\": [\"BayCare Ballpark\"]}}\n"))
        .unwrap();
    let dataset = dataset.display().to_string();
    let eval = |out: &str, extra: &[&str]| -> serde_json::Value {
        let out = h.join(out).display().to_string();
        let mut args = vec!["--config", c, "eval", "--dataset", &dataset, "--kg", "fb", "--llm", "demo", "--json"];
        args.extend_from_slice(&["--out", &out]);
        args.extend_from_slice(extra);
        serde_json::from_str(&ongraph(h, &args)).unwrap()
    };
    let before = eval("before", &[]);
    assert_eq!(before["summary"]["strict"]["hits"], 0, "{before}");
    assert_eq!(before["summary"]["sources"]["kg_paths"], 1);
    assert!(before["this_run"]["network"]["queries"].as_u64().unwrap() > 0, "{}", before["this_run"]);

    let relabel = ["fix", "relabel", "m.bright_house_field", "BayCare Ballpark", "--reason", "Renamed", "--kg", "fb"];
    ongraph(h, &[&["--config", c][..], &relabel].concat());
    assert_eq!(eval("published", &[])["summary"]["strict"]["hits"], 0, "corrections stay out by default");
    let after = eval("corrected", &["--with-corrections"]);
    assert_eq!(after["summary"]["strict"]["hits"], 1, "{after}");
    assert_eq!(after["run"]["corrections"], 1);
}

/// How many triples the endpoint at `url` holds (a SPARQL COUNT over plain HTTP).
fn triple_count(url: &str) -> u64 {
    use std::io::{Read, Write};
    let rest = url.strip_prefix("http://").unwrap();
    let (host, path) = rest.split_once('/').unwrap();
    let query = "SELECT%20(COUNT(*)%20AS%20%3Fn)%20WHERE%20%7B%20%3Fs%20%3Fp%20%3Fo%20%7D";
    let mut s = std::net::TcpStream::connect(host).unwrap();
    write!(s, "GET /{path}?query={query} HTTP/1.0\r\nHost: {host}\r\nAccept: application/sparql-results+json\r\n\r\n")
        .unwrap();
    let mut reply = String::new();
    s.read_to_string(&mut reply).unwrap();
    let body = reply.split_once("\r\n\r\n").unwrap().1;
    // The body may come chunked: the JSON is between the first `{` and the last `}`.
    let json = &body[body.find('{').unwrap()..=body.rfind('}').unwrap()];
    let json: serde_json::Value = serde_json::from_str(json).unwrap();
    json["results"]["bindings"][0]["n"]["value"].as_str().unwrap().parse().unwrap()
}

#[test]
fn hostile_corrections_export_as_exactly_what_they_say() {
    // Regression: a blank-node object `_:o;a'INJECTED',1337,true` was accepted and written raw
    // into the SPARQL Update export, which then inserted triples nobody asked for.
    let home = tempfile::tempdir().unwrap();
    let h = home.path();
    let base = Oxigraph::start(&fixture("freebase-demo.nt"));
    let config = config_file(
        h,
        &format!("[defaults]\nkg = \"fb\"\n[kg.fb]\nendpoint = \"{}\"\nprofile = \"freebase\"\n", base.url),
    );
    let c = config.as_str();
    for object in ["_:o;a'INJECTED',1337,true", "_:x#", "m.a>b"] {
        let out = common::ongraph_cmd(
            h,
            &["--config", c, "fix", "assert", "m.canberra", "location.location.containedby", object, "--reason", "x"],
        )
        .output()
        .unwrap();
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(1), "{object} was accepted: {err}");
        assert!(err.contains("not a valid"), "{object}: {err}");
    }
    // What is accepted (literals, labels and reasons full of syntax) says only itself.
    let hostile = "\"a\\\"} ; DROP ALL ; INSERT DATA { <x:a> <x:b> <x:c> } # \"";
    ongraph(
        h,
        &["--config", c, "fix", "assert", "m.canberra", "common.topic.alias", hostile, "--reason", "} ; DROP ALL\n#"],
    );
    ongraph(h, &["--config", c, "fix", "relabel", "m.canberra", "Evil\" } ; DROP ALL ; #", "--reason", "x"]);
    ongraph(
        h,
        &["--config", c, "fix", "assert", "m.canberra", "common.topic.notable_for", "_:b0", "--reason", "a blank node"],
    );
    let patch = ongraph(h, &["--config", c, "fix", "export", "--format", "sparql-update"]);
    let patched = Oxigraph::start_with(&fixture("freebase-demo.nt"), Some(&patch));
    // Two triples added and one name replaced: nothing dropped, nothing else inserted.
    assert_eq!(triple_count(&patched.url), triple_count(&base.url) + 2, "{patch}");
}

#[test]
fn a_topic_that_is_no_valid_id_is_searched_as_a_label_never_sent_as_an_iri() {
    // Regression: `--topic '[Canberra]'`, `_:b0` and `50%` passed the id check and the
    // endpoint's HTTP 400 aborted the run.
    let rdf = Oxigraph::start(&fixture("rdf-fixture.nt"));
    let home = tempfile::tempdir().unwrap();
    let h = home.path();
    let config = config_file(
        h,
        &format!(
            "[kg.mine]\nendpoint = \"{}\"\nprofile = \"rdf\"\nprefixes = {{ ex = \"http://example.org/\" }}\n",
            rdf.url
        ),
    );
    for (topic, expected) in [
        ("[Ada Lovelace]", "unknown topic entity \"[Ada Lovelace]\"; closest labels: Ada Lovelace"),
        ("_:b0", "unknown topic entity \"_:b0\"; no label in the knowledge graph resembles it"),
        ("50%", "unknown topic entity \"50%\"; no label in the knowledge graph resembles it"),
    ] {
        let args =
            ["--config", &config, "ask", "Where was Ada born?", "--kg", "mine", "--topic", topic, "--method", "tog"];
        let out = common::ongraph_cmd(h, &args).output().unwrap();
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(1), "{topic}: {err}");
        assert!(err.contains(expected), "{topic}: {err}");
        assert!(!err.contains("HTTP 400"), "{topic}: {err}");
    }
}

#[tokio::test]
async fn a_result_body_that_stops_short_is_asked_again() {
    // First connection: headers promising more than is sent, then a close. Second: the result.
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = listener.local_addr().unwrap();
    let served = std::thread::spawn(move || {
        let result = r#"{"head":{"vars":["r"]},"results":{"bindings":[{"r":{"type":"uri","value":"http://rdf.freebase.com/ns/people.person.spouse_s"}}]}}"#;
        for attempt in 0..2 {
            let (mut stream, _) = listener.accept().unwrap();
            let mut buf = [0u8; 65536];
            let _ = std::io::Read::read(&mut stream, &mut buf).unwrap();
            let head = format!(
                "HTTP/1.1 200 OK\r\ncontent-type: application/sparql-results+json\r\nconnection: close\r\ncontent-length: {}\r\n\r\n",
                result.len()
            );
            let body = if attempt == 0 { &result[..20] } else { result };
            std::io::Write::write_all(&mut stream, format!("{head}{body}").as_bytes()).unwrap();
        }
    });
    let mut config = SparqlConfig::new(format!("http://{addr}/sparql"));
    config.max_retries = 1;
    config.backoff = Duration::from_millis(5);
    let kg =
        SparqlKg::new("x", SparqlClient::new(config).unwrap(), KgProfile::freebase(), Namespaces::freebase(), "en")
            .unwrap();
    let got = kg.relations("m.x").await;
    assert!(got.is_ok(), "the second answer is read: {got:?}");
    served.join().expect("two connections: the short reply was asked again");
}

/// A config naming one `[kg.MODE]` per fault of the fault endpoint, each with `extra` lines.
fn fault_config(h: &std::path::Path, server: &SparqlFaultServer, extra: &[(SparqlFault, &str)]) -> String {
    let mut toml = String::new();
    for fault in SparqlFault::ALL {
        let more: Vec<&str> = extra.iter().filter(|(f, _)| *f == fault).map(|(_, line)| *line).collect();
        toml.push_str(&format!(
            "[kg.{}]\nendpoint = \"{}\"\nprofile = \"freebase\"\n{}\n",
            fault.path(),
            server.url(fault),
            more.join("\n")
        ));
    }
    config_file(h, &toml)
}

/// `kg search` on the fault endpoint's `fault`: (exit code, stderr, seconds taken).
fn search_fault(h: &std::path::Path, config: &str, fault: SparqlFault) -> (Option<i32>, String, f64) {
    let started = std::time::Instant::now();
    let out = common::ongraph_cmd(h, &["--config", config, "kg", "search", "Lou Seal", "--kg", fault.path()])
        .output()
        .unwrap();
    (out.status.code(), String::from_utf8_lossy(&out.stderr).into_owned(), started.elapsed().as_secs_f64())
}

#[test]
fn unbounded_replies_end_in_one_clear_error_naming_the_limit() {
    let server = SparqlFaultServer::start();
    let home = tempfile::tempdir().unwrap();
    let h = home.path();
    let config = fault_config(
        h,
        &server,
        &[
            (SparqlFault::Endless, "max_reply_mb = 1"),
            (SparqlFault::BigUndeclared, "max_reply_mb = 2"),
            (SparqlFault::Many, "max_reply_mb = 100"),
            (SparqlFault::Drip, "timeout_secs = 2"),
        ],
    );
    for (fault, expected, seconds) in [
        (SparqlFault::Endless, "the reply is larger than 1 MB (max_reply_mb in [kg.endless] raises it)", 10.0),
        (SparqlFault::Big, "the reply is larger than 32 MB (max_reply_mb in [kg.big] raises it)", 10.0),
        (
            SparqlFault::BigUndeclared,
            "the reply is larger than 2 MB (max_reply_mb in [kg.bigundeclared] raises it)",
            10.0,
        ),
        (SparqlFault::Many, "the reply holds more than 100000 solutions (max_bindings in [kg.many] raises it)", 30.0),
        // One limit for the query, retries included, and said as it happened.
        (SparqlFault::Drip, "no complete answer within 2 s (1 attempt) (timeout_secs in [kg.drip] raises it)", 4.5),
    ] {
        let (code, err, took) = search_fault(h, &config, fault);
        assert_eq!(code, Some(1), "{fault:?}: {err}");
        assert_eq!(err.lines().count(), 1, "{fault:?}: one line: {err}");
        assert!(err.starts_with("error: ") && err.contains(expected), "{fault:?}: {expected:?} not in {err}");
        assert!(took < seconds, "{fault:?} took {took:.1} s");
    }
}

#[test]
fn a_reply_over_a_limit_is_never_cached() {
    let server = SparqlFaultServer::start();
    let home = tempfile::tempdir().unwrap();
    let h = home.path();
    let config = fault_config(h, &server, &[(SparqlFault::Fine, "max_bindings = 1"), (SparqlFault::Big, "")]);
    let cached = || ongraph(h, &["--config", &config, "cache", "stats"]);
    let (code, err, _) = search_fault(h, &config, SparqlFault::Big);
    assert_eq!(code, Some(1), "{err}");
    assert!(cached().starts_with("0 cached result(s)"), "{}", cached());
    // Within the limits, the same kind of reply is kept.
    let (code, err, _) = search_fault(h, &config, SparqlFault::Fine);
    assert_eq!(code, Some(0), "{err}");
    assert!(cached().starts_with("1 cached result(s)"), "{}", cached());
}

#[tokio::test]
async fn retries_share_one_time_limit() {
    // 503 after 700 ms each time: with a 2 s limit, at most three attempts fit, never four
    // (a limit per attempt took 4 × the timeout), and the message says so.
    let server = MockServer::start().await;
    Mock::given(method("GET"))
        .respond_with(ResponseTemplate::new(503).set_delay(Duration::from_millis(700)))
        .mount(&server)
        .await;
    let mut config = SparqlConfig::new(format!("{}/sparql", server.uri()));
    config.timeout = Duration::from_secs(2);
    config.max_retries = 5;
    config.backoff = Duration::from_millis(10);
    let kg =
        SparqlKg::new("x", SparqlClient::new(config).unwrap(), KgProfile::freebase(), Namespaces::freebase(), "en")
            .unwrap();
    let started = std::time::Instant::now();
    let err = kg.relations("m.x").await.unwrap_err().to_string();
    assert!(started.elapsed() < Duration::from_millis(2500), "{:?}", started.elapsed());
    assert!(err.contains("no complete answer within 2 s (3 attempts)"), "{err}");
}
