//! The offline demo's recorded alternative branches: each steerable move the README lists
//! ("Steering the offline demo"), taken through the engine with the demo model itself, reaches
//! its answer; a move off the recording is a plain error that says how to connect a model.

mod common;

use common::{gog_editable, named, new_run, run_to_end, run_until, run_until_depth};
use ongraph::engine::beam::NodeKind;
use ongraph::engine::{AnswerSource, Fallback, MethodId, Override, Run, Settings, Topics};
use ongraph::kg::Term;
use ongraph::testing::driver::Driver;
use ongraph::testing::kg::demo_graph;
use ongraph::testing::llm::ScriptedModel;
use ongraph::testing::overlay::OverlayKg;
use std::sync::Arc;

const CANBERRA: &str = "What is the majority party now in the country where Canberra is located?";
const PHANATIC: &str = "Which ballpark hosts spring training for the team whose mascot is the Phillie Phanatic?";
const LOU_SEAL: &str = "In which years did the team whose mascot is Lou Seal win the World Series?";
const APPLE: &str = "In which time zone is the headquarters of Apple Inc.?";
const GIANTS_RANGERS: &str = "Which World Series did the San Francisco Giants win against the Texas Rangers?";

/// The demo KG and the demo model as `ongraph` opens them with nothing configured.
fn demo() -> Driver {
    Driver::new(Arc::new(demo_graph()), Arc::new(ScriptedModel::demo().expect("the demo script parses")))
}

/// The GoG demo's incomplete KG: Cupertino's time zone hidden (`sessions/demo-ikg.tsv`).
fn demo_ikg() -> Driver {
    let hidden =
        [("m.cupertino".to_string(), "location.location.time_zones".to_string(), Term::Entity("m.pacific_tz".into()))];
    let kg = OverlayKg::new(Arc::new(demo_graph()), &[]).with_hidden(&hidden);
    Driver::new(Arc::new(kg), Arc::new(ScriptedModel::demo().expect("the demo script parses")))
}

fn settings(method: MethodId) -> Settings {
    Settings { method, ..Settings::default() }
}

/// The relation `arrow name` at `depth` (`-> location.location.containedby`).
fn relation(run: &Run, arrowed: &str, depth: u32) -> usize {
    let (arrow, name) = arrowed.split_once(' ').expect("an arrow and a name");
    run.beam()
        .nodes
        .iter()
        .find(|n| {
            n.depth == depth
                && matches!(&n.kind, NodeKind::Relation { shown, direction, .. } if shown == name && direction.arrow() == arrow)
        })
        .unwrap_or_else(|| panic!("no relation {arrowed} at depth {depth}"))
        .id
}

fn calls<'a>(run: &'a Run, step: &str) -> Vec<&'a ongraph::engine::events::CallRecord> {
    run.trace().iter().flat_map(|e| &e.calls).filter(|c| c.step == step).collect()
}

/// No step of the run fell back to BM25 or read a reply it could not: the branch is recorded,
/// not improvised.
fn no_fallbacks_after(run: &Run, from: usize) {
    for e in &run.trace()[from..] {
        assert!(e.calls.iter().all(|c| !c.fell_back), "step {}: {:?}", e.index, e.notes);
    }
}

#[tokio::test]
async fn canberra_drop_containedby_answers_through_the_capital() {
    let driver = demo();
    let mut run = new_run(&driver, CANBERRA, Topics::Extract, settings(MethodId::TOG));
    run_until_depth(&driver, &mut run, 1, "entity_search").await;
    let at = run.apply(Override::Drop { node: relation(&run, "-> location.location.containedby", 1) }).unwrap();
    run_to_end(&driver, &mut run).await;
    no_fallbacks_after(&run, at);
    let answer = run.answer().unwrap();
    assert_eq!(
        (answer.answers.as_slice(), answer.source),
        (&["Australian Labor Party".to_string()][..], AnswerSource::KgPaths)
    );
    assert!(
        answer.paths[0].text.starts_with("Canberra <- location.country.capital <- Australia -> government.governmental_jurisdiction.head_of_government -> Anthony Albanese"),
        "{}",
        answer.paths[0].text
    );
}

#[tokio::test]
async fn canberra_keep_the_parties_of_australia() {
    let driver = demo();
    let mut run = new_run(&driver, CANBERRA, Topics::Extract, settings(MethodId::TOG));
    run_until_depth(&driver, &mut run, 2, "entity_search").await;
    let parties = relation(&run, "<- government.political_party.country", 2);
    let at = run.apply(Override::Keep { node: parties }).unwrap();
    run_to_end(&driver, &mut run).await;
    no_fallbacks_after(&run, at);
    // The model scored the parties it was shown, and said they do not settle the question.
    let scored =
        calls(&run, "entity_prune").into_iter().find(|c| c.prompt.contains("political_party.country")).unwrap();
    assert_eq!(scored.parsed, "Australian Labor Party=0.50; Liberal Party of Australia=0.50");
    let check = calls(&run, "reasoning").into_iter().find(|c| c.prompt.contains("Liberal Party of Australia")).unwrap();
    assert!(check.reply.starts_with("{No}") && check.reply.contains("do not say which of them holds the majority"));
    let answer = run.answer().unwrap();
    assert_eq!(answer.answers, vec!["Australian Labor Party"]);
    assert!(
        answer
            .paths
            .iter()
            .any(|p| p.text.ends_with("<- government.political_party.country <- Australian Labor Party"))
    );
}

#[tokio::test]
async fn phanatic_force_continue_looks_at_the_ballpark_and_answers_again() {
    let driver = demo();
    let mut run = new_run(&driver, PHANATIC, Topics::Extract, settings(MethodId::TOG));
    run_to_end(&driver, &mut run).await;
    assert_eq!(run.depth(), 2);
    let at = run.apply(Override::ForceContinue).unwrap();
    run_to_end(&driver, &mut run).await;
    no_fallbacks_after(&run, at);
    assert_eq!(run.depth(), 3);
    let answer = run.answer().unwrap();
    assert_eq!(answer.answers, vec!["Bright House Field"]);
    assert!(answer.paths[0].text.ends_with("Bright House Field -> location.location.containedby -> Clearwater"));
}

#[tokio::test]
async fn phanatic_force_sufficient_too_early_answers_only_what_it_was_shown() {
    let driver = demo();
    let mut run = new_run(&driver, PHANATIC, Topics::Extract, settings(MethodId::TOG));
    run_until(&driver, &mut run, "reasoning").await;
    assert_eq!(run.depth(), 1);
    run.apply(Override::ForceSufficient).unwrap();
    run_to_end(&driver, &mut run).await;
    let answer = run.answer().unwrap();
    assert_eq!(answer.answers, vec!["Philadelphia Phillies"], "the team: the triples name no ballpark yet");
    let asked = calls(&run, "answer");
    assert_eq!(asked.len(), 1);
    assert!(!asked[0].prompt.contains("spring_training_stadium"));
}

#[tokio::test]
async fn lou_seal_force_continue_finds_when_each_series_was_played() {
    let driver = demo();
    let mut run = new_run(&driver, LOU_SEAL, Topics::Extract, settings(MethodId::TOG));
    run_to_end(&driver, &mut run).await;
    let at = run.apply(Override::ForceContinue).unwrap();
    run_to_end(&driver, &mut run).await;
    no_fallbacks_after(&run, at);
    let answer = run.answer().unwrap();
    assert_eq!(answer.answers, vec!["2010", "2012", "2014"]);
    assert!(answer.reply.contains("played in October 2010, 2012 and 2014"), "{}", answer.reply);
    assert!(answer.paths.iter().any(|p| p.text.ends_with("-> time.event.start_date -> 2010-10-27")));
}

#[tokio::test]
async fn apple_drop_the_city_answers_through_the_state() {
    let driver = demo();
    let mut run = new_run(&driver, APPLE, Topics::Extract, settings(MethodId::TOG));
    run_until_depth(&driver, &mut run, 2, "entity_search").await;
    run.apply(Override::Drop { node: relation(&run, "-> location.mailing_address.citytown", 2) }).unwrap();
    run_to_end(&driver, &mut run).await;
    let answer = run.answer().unwrap();
    assert_eq!((answer.answers[0].as_str(), answer.source), ("Pacific Time Zone", AnswerSource::KgPaths));
    // ToG's order: the paths on the beam best first, then the route merged into the time
    // zone's slot (through San Francisco), which the answer's listings head as such.
    let scores: Vec<String> = answer.paths.iter().map(|p| format!("{:.3}", p.score)).collect();
    assert_eq!(scores, ["0.240", "0.060", "0.004", "0.036"]);
    let merged: Vec<bool> = answer.paths.iter().map(|p| run.beam().merged_into(p.leaf).is_some()).collect();
    assert_eq!(merged, [false, false, false, true]);
    assert!(
        answer.paths[0].text.ends_with(
            "-> location.mailing_address.state_province_region -> California -> location.location.time_zones -> Pacific Time Zone"
        ),
        "{}",
        answer.paths[0].text
    );
}

#[tokio::test]
async fn giants_rangers_pog_force_continue_goes_on_to_the_llm_supplement() {
    let driver = demo();
    let mut run = new_run(&driver, GIANTS_RANGERS, Topics::Extract, settings(MethodId::POG));
    run_to_end(&driver, &mut run).await;
    let at = run.apply(Override::ForceContinue).unwrap();
    run_to_end(&driver, &mut run).await;
    no_fallbacks_after(&run, at);
    let phases: Vec<&str> = run.trace()[at..].iter().filter_map(|e| e.phase()).collect();
    assert_eq!(phases, ["llm_supplement", "fuzzy_selection", "precise_selection", "path_summary", "sufficiency"]);
    assert_eq!(run.answer().unwrap().answers, vec!["2010 World Series"]);
}

#[tokio::test]
async fn gog_search_california_instead_of_generating() {
    let driver = demo_ikg();
    let mut run = new_run(&driver, APPLE, Topics::Extract, settings(MethodId::GOG));
    run_until(&driver, &mut run, "generate").await;
    assert!(gog_editable(&run), "the Generate action is written, not run");
    run.apply(Override::EditAction { thought: None, action: "Search[California]".into() }).unwrap();
    run_to_end(&driver, &mut run).await;
    let answer = run.answer().unwrap();
    assert_eq!((answer.answers[0].as_str(), answer.source), ("Pacific Time Zone", AnswerSource::KgPaths));
    assert!(run.generated().is_empty(), "nothing was generated");
    assert!(calls(&run, "gog_generate").is_empty());
}

#[tokio::test]
async fn gog_rejecting_the_generated_triple_leaves_the_answer_to_the_model() {
    let driver = demo_ikg();
    let mut run = new_run(&driver, APPLE, Topics::Extract, settings(MethodId::GOG));
    while run.generated().is_empty() {
        driver.step(&mut run).await.unwrap();
    }
    let pacific = run.generated().iter().find(|g| g.kept).unwrap().node;
    run.apply(Override::Drop { node: pacific }).unwrap();
    run_to_end(&driver, &mut run).await;
    let answer = run.answer().unwrap();
    assert_eq!((answer.answers[0].as_str(), answer.source), ("Pacific Time Zone", AnswerSource::OwnKnowledge));
    // Not a depth limit: the model finished on an answer no kept triple names.
    assert_eq!(
        answer.source_words(),
        "from the LLM's own knowledge (the model finished without a KG path to its answer)"
    );
    let finish = run.trace().iter().rev().find(|e| e.phase() == Some("thought")).unwrap();
    assert!(finish.notes.iter().any(|n| n.ends_with("(the model finished without a KG path to its answer)")));
    assert!(
        run.trace()
            .iter()
            .all(|e| !e.summary.contains("depth limit") && !e.notes.iter().any(|n| n.contains("depth limit")))
    );
}

/// GoG out of steps answers from the model's own knowledge, and says it ran out of steps.
#[tokio::test]
async fn gog_out_of_steps_says_so_with_the_answer() {
    let extra = r#"
[[reply]]
step = "answer_own_knowledge"
contains = ["In which time zone is the headquarters of Apple Inc.?"]
text = "Apple is based in Cupertino, California, on Pacific time. {Pacific Time Zone}"

[[reply]]
step = "answer"
contains = ["Knowledge Triplets: Apple Inc., organization.organization.headquarters, cvt.apple_hq"]
text = "The headquarters are in Cupertino, on Pacific time. {Pacific Time Zone}"
"#;
    let hidden =
        [("m.cupertino".to_string(), "location.location.time_zones".to_string(), Term::Entity("m.pacific_tz".into()))];
    let kg = OverlayKg::new(Arc::new(demo_graph()), &[]).with_hidden(&hidden);
    let script = format!("{extra}\n{}", common::DEMO_SCRIPT);
    let model = ScriptedModel::from_toml("test script", &script).unwrap();
    let driver = Driver::new(Arc::new(kg), Arc::new(model));
    let mut settings = settings(MethodId::GOG);
    settings.gog.gog_steps = 2;
    // The paper's: the model's own knowledge, asked without the triples.
    settings.gog.gog_fallback = Fallback::OwnKnowledge;
    let mut run = new_run(&driver, APPLE, Topics::Extract, settings.clone());
    run_to_end(&driver, &mut run).await;
    let answer = run.answer().unwrap();
    assert_eq!(answer.source, AnswerSource::OwnKnowledge);
    assert_eq!(answer.source_words(), "from the LLM's own knowledge (no Finish within GoG's limit of 2 steps)");
    let last = run.trace().last().unwrap();
    assert_eq!(
        last.summary,
        "answer Pacific Time Zone (from the LLM's own knowledge (no Finish within GoG's limit of 2 steps))"
    );
    // The default: asked with the triples collected, whose answer none of them names.
    settings.gog.gog_fallback = Fallback::PartialPaths;
    let mut run = new_run(&driver, APPLE, Topics::Extract, settings);
    run_to_end(&driver, &mut run).await;
    let answer = run.answer().unwrap();
    assert_eq!(answer.source, AnswerSource::OwnKnowledge);
    assert_eq!(
        answer.source_words(),
        "from the LLM's own knowledge (no Finish within GoG's limit of 2 steps; no triple collected names the answer)"
    );
    let steps: Vec<&str> = run.trace().iter().flat_map(|e| e.calls.iter()).map(|c| c.step.as_str()).collect();
    assert_eq!(steps.last(), Some(&"answer"), "{steps:?}");
    // The step says where the answer came from as the answer does (found by a review).
    assert_eq!(
        run.trace().last().unwrap().summary,
        "answer Pacific Time Zone (from the LLM's own knowledge (no Finish within GoG's limit of 2 steps; no triple collected names the answer))"
    );
}

/// A GoG session saved under the shared-prefix layout before GoG answered from the triples it
/// collected (by 0ed253f, stopped by its step limit) replays as recorded: its shared prefix
/// holds no answer-from-triples section, and its run asks the model's own knowledge (found by
/// a review).
#[test]
fn a_gog_session_saved_before_its_fallback_replays_as_recorded() {
    let path = std::path::Path::new("tests/fixtures/sessions/v2/gog-shared-prefix-before-gog-fallback.json");
    let text = std::fs::read_to_string(path).unwrap();
    assert!(text.contains("\"prompt_layout\": \"shared-prefix\"") && !text.contains("gog_fallback"), "the fixture");
    let session = ongraph::testing::session::Session::load(path).unwrap();
    session.check_replays(ongraph::engine::Registry::builtin()).unwrap();
    let answer = session.replay(0).unwrap().answer().cloned().unwrap();
    assert_eq!((answer.answers, answer.source), (vec!["Pacific Time Zone".to_string()], AnswerSource::OwnKnowledge));
}

/// Off the recording the demo stops with one plain sentence: the step is outside its
/// recording, and how to connect a model.
#[tokio::test]
async fn a_move_off_the_recording_says_so_and_how_to_connect_a_model() {
    let driver = demo();
    let mut run = new_run(&driver, CANBERRA, named(&["Canberra"]), settings(MethodId::TOG));
    run_until_depth(&driver, &mut run, 1, "entity_search").await;
    run.apply(Override::Keep { node: relation(&run, "-> location.location.time_zones", 1) }).unwrap();
    let err = loop {
        match driver.step(&mut run).await {
            Ok(Some(_)) => continue,
            Ok(None) => panic!("answered off the recording: {:?}", run.answer()),
            Err(e) => break e.to_string(),
        }
    };
    assert!(err.contains(") is outside the offline demo's recording"), "{err}");
    assert!(err.contains("--llm local") && err.contains("Pointing it at a real model"), "{err}");
    assert!(!err.contains('\n'), "one line: {err}");
}

/// A scripted reply names only what its prompt shows: with one of the three titles dropped,
/// the check does not answer with all three.
#[tokio::test]
async fn the_demo_never_answers_with_what_its_prompt_does_not_show() {
    let driver = demo();
    let mut run = new_run(&driver, LOU_SEAL, Topics::Extract, settings(MethodId::TOG));
    run_until_depth(&driver, &mut run, 2, "reasoning").await;
    let ws_2014 = run.beam().nodes.iter().find(|n| n.shown() == "2014 World Series").unwrap().id;
    run.apply(Override::Drop { node: ws_2014 }).unwrap();
    driver.step(&mut run).await.unwrap();
    let check = calls(&run, "reasoning").pop().unwrap();
    assert!(!check.prompt.contains("2014 World Series"));
    assert!(check.reply.starts_with("{No}") && !check.reply.contains("2014"), "{}", check.reply);
    assert!(!run.is_finished());
}
