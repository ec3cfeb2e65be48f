//! PoG, PoG-E and GoG on the demo KG with the demo script: the exact steps, answers and call
//! counts; overrides that change what follows; rewinding; GoG over an incomplete KG.

mod common;

use common::{DEMO_SCRIPT, demo_driver, gog_editable, gog_steps, named, new_run, report_lines, run_to_end, run_until};
use ongraph::engine::beam::{Provenance, Status};
use ongraph::engine::{AnswerSource, Fallback, GogSettings, MethodId, Override, PogSettings, Run, Settings, Topics};
use ongraph::kg::Term;
use ongraph::testing::driver::Driver;
use ongraph::testing::kg::demo_graph;
use ongraph::testing::llm::ScriptedModel;
use ongraph::testing::overlay::OverlayKg;
use std::sync::Arc;

const GIANTS_RANGERS: &str = "Which World Series did the San Francisco Giants win against the Texas Rangers?";
const LOU_SEAL: &str = "In which years did the team whose mascot is Lou Seal win the World Series?";
const APPLE: &str = "In which time zone is the headquarters of Apple Inc.?";

fn settings(method: MethodId) -> Settings {
    Settings { method, ..Settings::default() }
}

fn phases(run: &Run) -> Vec<&str> {
    run.trace().iter().filter_map(|e| e.phase()).collect()
}

/// The demo graph with Cupertino's time zone hidden (the GoG demo's incomplete KG), through
/// `corrections`, and the demo script after `extra`.
fn ikg_driver(extra: &str, corrections: &[ongraph::testing::overlay::Correction]) -> Driver {
    let hidden =
        [("m.cupertino".to_string(), "location.location.time_zones".to_string(), Term::Entity("m.pacific_tz".into()))];
    let kg = OverlayKg::new(Arc::new(demo_graph()), corrections).with_hidden(&hidden);
    let model = ScriptedModel::from_toml("test", &format!("{extra}\n{DEMO_SCRIPT}")).unwrap();
    Driver::new(Arc::new(kg), Arc::new(model))
}

#[tokio::test]
async fn pog_finds_the_path_joining_two_topic_entities() {
    let driver = demo_driver("");
    let mut run = new_run(&driver, GIANTS_RANGERS, Topics::Extract, settings(MethodId::POG));
    run_to_end(&driver, &mut run).await;
    assert_eq!(
        phases(&run),
        [
            "topic_extraction",
            "topic_linking",
            "question_analysis",
            "subgraph_relations",
            "subgraph_neighbours",
            "subgraph_reduction",
            "fuzzy_selection",
            "path_summary",
            "sufficiency"
        ]
    );
    let t = run.trace();
    assert!(t[2].summary.ends_with("predicted depth 1"), "{}", t[2].summary);
    assert_eq!(t[5].summary, "subgraph reduced from 13 to 3 nodes");
    let answer = run.answer().unwrap();
    assert_eq!(answer.answers, vec!["2010 World Series"]);
    assert_eq!(answer.source, AnswerSource::KgPaths);
    assert_eq!(answer.paths.len(), 1);
    let triples: Vec<String> = answer.paths[0].triples.iter().map(|t| t.line()).collect();
    assert_eq!(
        triples,
        [
            "San Francisco Giants, sports.sports_team.championships, 2010 World Series",
            "2010 World Series, sports.sports_championship_event.runner_up, Texas Rangers"
        ]
    );
    // Topic extraction, analysis, summary, sufficiency; one candidate needs no precise call.
    let c = run.costs();
    assert_eq!((c.llm_calls, c.llm_rounds), (4, 4));
    // What PoG's pane reports: the analysis, the subgraph, the one stage and what answered.
    let report = report_lines(&run);
    assert!(
        report.contains(
            &"depth 1 of 3 · subgraph 13 nodes, 12 triples · reduced 13 → 3 nodes (topics joined)".to_string()
        ),
        "{report:#?}"
    );
    assert_eq!(report.iter().filter(|l| l.starts_with("sub-question ")).count(), 2, "{report:#?}");
    let stages: Vec<&String> = report.iter().filter(|l| l.starts_with("topic-entity paths")).collect();
    assert_eq!(stages, ["topic-entity paths (depth 1): 1 → fuzzy 1 ✓ sufficient"], "{report:#?}");
    assert!(report.contains(&"answered by topic-entity paths (depth 1)".to_string()), "{report:#?}");
}

#[tokio::test]
async fn pog_prunes_precisely_and_a_kept_path_reaches_the_sufficiency_check() {
    let driver = demo_driver("");
    let mut run = new_run(&driver, LOU_SEAL, named(&["Lou Seal"]), settings(MethodId::POG));
    run_until(&driver, &mut run, "path_summary").await;
    let precise = run.trace().last().unwrap();
    assert_eq!(precise.phase(), Some("precise_selection"));
    assert_eq!(precise.summary, "topic-entity paths (depth 2): the model chose 3 of 12 paths");
    // Its stage in PoG's pane: 12 candidates, all kept by fuzzy selection, 3 by the model; not
    // checked yet.
    let report = report_lines(&run);
    assert!(report.contains(&"topic-entity paths (depth 2): 12 → fuzzy 12 → precise 3".to_string()), "{report:#?}");
    let melvin = precise.decisions.iter().find(|d| d.shown.ends_with("{Bob Melvin}")).unwrap().clone();
    assert_eq!(melvin.status, Status::PrunedByScore);
    assert_eq!(run.beam().nodes[melvin.node].reason.as_deref(), Some("precise: not chosen by the model"));
    let inner = run.beam().nodes[melvin.node].parent.unwrap();
    // Dropping is refused on an inner node; keeping a path the model dropped changes what the
    // model sees next.
    assert!(run.apply(Override::Keep { node: inner }).is_err());
    run.apply(Override::Keep { node: melvin.node }).unwrap();
    run_to_end(&driver, &mut run).await;
    let check = run.trace().iter().rev().find(|e| e.phase() == Some("sufficiency")).unwrap();
    assert!(check.calls[0].prompt.contains("{Bob Melvin}"));
    let answer = run.answer().unwrap();
    assert_eq!(answer.answers, vec!["2010", "2012", "2014"]);
    assert_eq!(answer.paths.len(), 4);
    // Analysis, precise, summary, sufficiency (the topic was named).
    assert_eq!(run.costs().llm_calls, 4);
}

#[tokio::test]
async fn pog_rewinds_and_forces_a_verdict() {
    let extra = r#"
[[reply]]
step = "pog_answer"
contains = ["Question: In which years did the team whose mascot is Lou Seal win the World Series?"]
text = "{2010 | 2012 | 2014}"
"#;
    let driver = demo_driver(extra);
    let mut run = new_run(&driver, LOU_SEAL, named(&["Lou Seal"]), settings(MethodId::POG));
    run_until(&driver, &mut run, "path_summary").await;
    let fuzzy = run.trace().iter().position(|e| e.phase() == Some("fuzzy_selection")).unwrap();
    // Forced sufficient: no summary, no check; the answer call reads the selected paths.
    run.apply(Override::ForceSufficient).unwrap();
    assert_eq!(run.next_phase(), "answer");
    run_to_end(&driver, &mut run).await;
    assert_eq!(run.answer().unwrap().answers, vec!["2010", "2012", "2014"]);
    assert_eq!(run.trace().last().unwrap().calls[0].step, "pog_answer");
    // Back to the fuzzy step: the precise call is reused from the memo, not made again.
    let made = run.costs().llm_calls;
    run.rewind(fuzzy).unwrap();
    assert!(!run.is_finished());
    assert_eq!(run.abandoned().len(), 1);
    run_to_end(&driver, &mut run).await;
    assert_eq!(run.answer().unwrap().source, AnswerSource::KgPaths);
    assert_eq!(run.costs().llm_calls, made + 2, "summary and sufficiency are new; precise is reused");
    assert_eq!(run.costs().llm_calls_saved, 1);
    assert!(run.apply(Override::AddRelation { parent: 0, relation: ongraph::kg::RelationRef::out("x") }).is_err());
}

#[tokio::test]
async fn pog_e_walks_the_same_paths_here_and_fuzzy_only_pruning_makes_no_selection_call() {
    let driver = demo_driver("");
    let mut run = new_run(&driver, GIANTS_RANGERS, Topics::Extract, settings(MethodId::POG_E));
    run_to_end(&driver, &mut run).await;
    assert_eq!(run.answer().unwrap().answers, vec!["2010 World Series"]);
    let fuzzy = Settings {
        pog: PogSettings { pog_pruning: ongraph::engine::PogPruning::Fuzzy, ..PogSettings::default() },
        ..settings(MethodId::POG)
    };
    let extra = r#"
[[reply]]
step = "pog_sufficiency"
contains = ["Question: In which years did the team whose mascot is Lou Seal win the World Series?"]
text = "{Yes}\nanswer: {2010}"
"#;
    let driver = demo_driver(extra);
    let mut run = new_run(&driver, LOU_SEAL, named(&["Lou Seal"]), fuzzy);
    run_to_end(&driver, &mut run).await;
    assert!(!phases(&run).contains(&"precise_selection"));
    let kept = run.trace().iter().find(|e| e.phase() == Some("fuzzy_selection")).unwrap();
    assert_eq!(kept.summary, "topic-entity paths (depth 2): BM25 kept 3 of 12 paths");
}

/// The text of the 1-hop candidate path from Canberra to Australia after fuzzy selection.
async fn canberra_to_australia(method: MethodId, seed: u64) -> String {
    let extra = r#"
[[reply]]
step = "pog_analysis"
contains = ["Question: What is the majority party now in the country where Canberra is located?"]
text = "Thinking CoT: \"Canberra\" - located in - answer(country)"
"#;
    let driver = demo_driver(extra);
    let question = "What is the majority party now in the country where Canberra is located?";
    let mut run = new_run(&driver, question, named(&["Canberra"]), Settings { seed, ..settings(method) });
    run_until(&driver, &mut run, "fuzzy_selection").await;
    driver.step(&mut run).await.unwrap();
    let fuzzy = run.trace().last().unwrap();
    fuzzy
        .decisions
        .iter()
        .find(|d| d.shown.starts_with("{Canberra} - {") && d.shown.ends_with("} - {Australia}"))
        .unwrap()
        .shown
        .clone()
}

#[tokio::test]
async fn pog_clusters_parallel_relations_and_pog_e_walks_one_of_them_by_seed() {
    // Canberra and Australia are joined by three relations (one incoming): one clustered edge.
    let both = canberra_to_australia(MethodId::POG, 0).await;
    for r in [
        "-> location.location.containedby ->",
        "-> base.biblioness.bibs_location.country ->",
        "<- location.country.capital <-",
    ] {
        assert!(both.contains(r), "{r} missing from {both}");
    }
    let one = canberra_to_australia(MethodId::POG_E, 0).await;
    assert!(both.contains(" | ") && !one.contains(" | "), "{one}");
    assert_eq!(canberra_to_australia(MethodId::POG_E, 0).await, one, "the same seed walks the same relation");
    let mut seen = std::collections::BTreeSet::new();
    for seed in 0..16 {
        seen.insert(canberra_to_australia(MethodId::POG_E, seed).await);
    }
    assert_eq!(seen.len(), 3, "over seeds, each relation gets walked: {seen:?}");
}

#[tokio::test]
async fn gog_generates_the_hidden_triple_verifies_it_and_finishes() {
    let driver = ikg_driver("", &[]);
    let mut run = new_run(&driver, APPLE, Topics::Extract, settings(MethodId::GOG));
    run_to_end(&driver, &mut run).await;
    assert_eq!(
        phases(&run),
        [
            "topic_extraction",
            "topic_linking",
            "thought",
            "search_relations",
            "relation_filter",
            "search_triples",
            "thought",
            "search_relations",
            "relation_filter",
            "search_triples",
            "thought",
            "search_relations",
            "search_triples",
            "thought",
            "generate",
            "verify",
            "generated_linking",
            "thought"
        ]
    );
    let rows = gog_steps(&run);
    let steps: Vec<&str> = rows.iter().map(|s| s.action.as_str()).collect();
    assert_eq!(
        steps,
        [
            "Search[Apple Inc.]",
            "Search[cvt.apple_hq]",
            "Search[Cupertino]",
            "Generate[Cupertino is in the Pacific Time Zone]",
            "Finish[Pacific Time Zone]"
        ]
    );
    // The search saw no time zone: the scenario hides it.
    assert!(!gog_steps(&run)[2].observation.contains("time_zones"));
    let generated = run.generated();
    assert_eq!(generated.len(), 2);
    assert_eq!(generated[0].tail, "Pacific Time Zone");
    assert!(generated[0].kept);
    assert_eq!(generated[0].head_term, Some(Term::Entity("m.cupertino".into())));
    assert_eq!(generated[0].tail_term, Some(Term::Entity("m.pacific_tz".into())));
    assert!(!generated[1].kept, "the Mountain Time Zone sample was rejected");
    let Provenance::Generated { kept: true, judged_at: Some(at) } = run.beam().nodes[generated[0].node].provenance
    else {
        panic!("a kept generated triple, judged by a step")
    };
    assert_eq!(run.trace()[at].calls[0].step, "gog_verify", "the verification judged it");
    assert_eq!(run.beam().nodes[generated[1].node].status, Status::PrunedByScore);
    assert_eq!(gog_steps(&run)[3].observation, "Cupertino, location.location.time_zones, Pacific Time Zone");
    assert_eq!(run.answer().unwrap().answers, vec!["Pacific Time Zone"]);
    // It rests on the generated triple, not on the KG, and says so.
    assert_eq!(run.answer().unwrap().source, AnswerSource::GeneratedTriples);
    assert_eq!(AnswerSource::GeneratedTriples.describe(), "from LLM-generated triples, verified (not in the KG)");
    // topic 1 + thoughts 5 + relation filters 2 + generate samples 3 + verify 1.
    let c = run.costs();
    assert_eq!((c.llm_calls, c.llm_rounds), (12, 10));
    let generate = run.trace().iter().find(|e| e.phase() == Some("generate")).unwrap();
    assert!(generate.calls.iter().all(|c| !c.cached), "three distinct samples");
    assert!(generate.calls[0].prompt.contains("Cupertino, location.location.containedby, Santa Clara County"));
}

/// A `Finish` before any search, or naming nothing the run observed, is the model's own
/// knowledge, not an answer from KG paths.
#[tokio::test]
async fn gog_a_finish_resting_on_nothing_observed_is_own_knowledge() {
    let first = r#"
[[reply]]
step = "gog_step"
contains = ["Question: In which time zone is the headquarters of Apple Inc.?\nTopic Entity: [Apple Inc.]\nThought 1:"]
text = "Thought 1: I know this one.\nAction 1: Finish[Pacific Time Zone]"
"#;
    let driver = ikg_driver(first, &[]);
    let mut run = new_run(&driver, APPLE, Topics::Extract, settings(MethodId::GOG));
    run_to_end(&driver, &mut run).await;
    let a = run.answer().unwrap();
    assert_eq!((a.answers.as_slice(), a.source), (&["Pacific Time Zone".to_string()][..], AnswerSource::OwnKnowledge));
}

#[tokio::test]
async fn gog_an_edited_action_runs_instead_and_generated_triples_can_be_rejected() {
    let driver = ikg_driver("", &[]);
    let mut run = new_run(&driver, APPLE, Topics::Extract, settings(MethodId::GOG));
    run_until(&driver, &mut run, "search_relations").await;
    assert!(run.apply(Override::EditAction { thought: None, action: "Look[x]".into() }).is_err());
    run.apply(Override::EditAction {
        thought: Some("Go straight to the city.".into()),
        action: "Search[Cupertino]".into(),
    })
    .unwrap();
    assert_eq!(gog_steps(&run)[0].action, "Search[Cupertino]");
    // A name the run has not seen is linked by label first.
    driver.step(&mut run).await.unwrap();
    assert_eq!(run.trace().last().unwrap().lookups[0].what, "entities named \"Cupertino\"");
    driver.step(&mut run).await.unwrap();
    assert_eq!(run.trace().last().unwrap().lookups[0].what, "relations of Cupertino");

    let mut run = new_run(&driver, APPLE, Topics::Extract, settings(MethodId::GOG));
    run_until(&driver, &mut run, "thought").await;
    while run.generated().is_empty() {
        driver.step(&mut run).await.unwrap();
    }
    let pacific = run.generated()[0].node;
    run.apply(Override::Drop { node: pacific }).unwrap();
    assert!(!run.generated()[0].kept);
    assert_eq!(run.beam().nodes[pacific].status, Status::PrunedByUser);
}

#[tokio::test]
async fn gog_says_when_it_cannot_read_the_model_and_refuses_an_empty_finish() {
    let unreadable = r#"
[[reply]]
step = "gog_step"
contains = ["Question: In which time zone is the headquarters of Apple Inc.?"]
text = "I am not sure what to do."

[[reply]]
step = "answer_own_knowledge"
contains = ["In which time zone is the headquarters of Apple Inc.?"]
text = "{Pacific Time Zone}"
"#;
    let driver = ikg_driver(unreadable, &[]);
    let mut run = new_run(&driver, APPLE, named(&["Apple Inc."]), settings(MethodId::GOG));
    run_to_end(&driver, &mut run).await;
    let answer = run.answer().unwrap();
    assert_eq!(answer.source, AnswerSource::OwnKnowledge);
    let notes: Vec<&String> = run.trace().iter().flat_map(|e| &e.notes).collect();
    assert!(notes.iter().any(|n| n.contains("answering without the KG")), "{notes:?}");
    // Three distinct tries (a retry is a new call), then the answer.
    assert_eq!((run.costs().llm_calls, run.costs().llm_calls_saved), (4, 0));

    let empty = r#"
[[reply]]
step = "gog_step"
contains = ["Question: In which time zone is the headquarters of Apple Inc.?", "Observation 1: Finish needs an answer."]
text = "Action 2: Finish[Pacific Time Zone]"

[[reply]]
step = "gog_step"
contains = ["Question: In which time zone is the headquarters of Apple Inc.?"]
text = "Action 1: Finish[]"
"#;
    let driver = ikg_driver(empty, &[]);
    let mut run = new_run(&driver, APPLE, named(&["Apple Inc."]), settings(MethodId::GOG));
    run_to_end(&driver, &mut run).await;
    assert_eq!(gog_steps(&run).len(), 2);
    assert_eq!(run.answer().unwrap().answers, vec!["Pacific Time Zone"]);
}

/// GoG stopped by its step limit answers from the triples it collected (`fallback`), labelled
/// by what names the answer; the paper's own knowledge when the settings say so (and in files
/// saved before), or when the triples give no answer.
#[tokio::test]
async fn gog_stopped_by_its_step_limit_answers_from_the_triples_it_collected() {
    let four_steps = |fallback: Fallback| Settings {
        gog: GogSettings { gog_steps: 4, gog_fallback: fallback, ..GogSettings::default() },
        ..settings(MethodId::GOG)
    };
    let answering = |answer: &str| {
        format!(
            r#"
[[reply]]
step = "answer"
contains = ["Knowledge Triplets:"]
text = "The triplets say so. {{{answer}}}"

[[reply]]
step = "answer_own_knowledge"
contains = ["In which time zone is the headquarters of Apple Inc.?"]
text = "{{Eastern Time Zone}}"
"#
        )
    };
    let ask = |script: String, fallback: Fallback| async move {
        let driver = ikg_driver(&script, &[]);
        let mut run = new_run(&driver, APPLE, named(&["Apple Inc."]), four_steps(fallback));
        run_to_end(&driver, &mut run).await;
        assert_eq!(gog_steps(&run).len(), 4);
        run
    };
    let answer_prompt = |run: &Run| -> String {
        let calls = run.trace().iter().flat_map(|e| e.calls.iter());
        calls.filter(|c| c.step == "answer").map(|c| c.prompt.clone()).next().unwrap_or_default()
    };

    // An answer a KG triple the search observed names: from partial KG paths, with the reason.
    let run = ask(answering("Cupertino"), Fallback::PartialPaths).await;
    let answer = run.answer().unwrap();
    assert_eq!((answer.answers.clone(), answer.source), (vec!["Cupertino".to_string()], AnswerSource::PartialPaths));
    assert!(answer.why.as_deref().is_some_and(|w| w.contains("limit of 4 steps")), "{:?}", answer.why);
    let prompt = answer_prompt(&run);
    assert!(prompt.contains("Apple Inc., ") && prompt.contains("Cupertino"), "{prompt}");
    assert!(prompt.contains("Pacific Time Zone"), "the generated triple verification kept is shown: {prompt}");

    // One only the generated triple names is labelled so, in the step's summary too; `unknown`
    // beside it is not an answer.
    let run = ask(answering("unknown | Pacific Time Zone"), Fallback::PartialPaths).await;
    let answer = run.answer().unwrap();
    assert_eq!(
        (answer.answers.clone(), answer.source),
        (vec!["Pacific Time Zone".to_string()], AnswerSource::GeneratedTriples)
    );
    assert!(answer.why.as_deref().is_some_and(|w| w.contains("limit of 4 steps")), "{:?}", answer.why);
    let summary = &run.trace().last().unwrap().summary;
    assert!(summary.contains("from verified LLM-generated triples, not in the KG (no Finish within"), "{summary}");

    // The triples give none: the model's own knowledge is asked.
    let run = ask(answering("unknown"), Fallback::PartialPaths).await;
    let answer = run.answer().unwrap();
    assert_eq!(
        (answer.answers.clone(), answer.source),
        (vec!["Eastern Time Zone".to_string()], AnswerSource::OwnKnowledge)
    );

    // The paper's: own knowledge, no answer call from the triples.
    let run = ask(answering("Cupertino"), Fallback::OwnKnowledge).await;
    assert_eq!(run.answer().unwrap().source, AnswerSource::OwnKnowledge);
    assert_eq!(answer_prompt(&run), "");
}

#[tokio::test]
async fn gog_rewinds_to_before_the_generate_step_and_replays_from_the_memo() {
    let driver = ikg_driver("", &[]);
    let mut run = new_run(&driver, APPLE, Topics::Extract, settings(MethodId::GOG));
    run_to_end(&driver, &mut run).await;
    let made = run.costs().llm_calls;
    let generate = run.trace().iter().position(|e| e.phase() == Some("generate")).unwrap();
    // Back to the thought that chose Generate (the state after that step).
    assert_eq!(run.trace()[generate - 1].phase(), Some("thought"));
    run.rewind(generate - 1).unwrap();
    assert!(!run.is_finished());
    assert_eq!(run.generated().len(), 0, "the generated triples belong to the branch set aside");
    assert_eq!(gog_steps(&run).last().unwrap().action, "Generate[Cupertino is in the Pacific Time Zone]");
    assert!(gog_editable(&run), "back before the Generate ran, it can be edited");
    run_to_end(&driver, &mut run).await;
    assert_eq!(run.answer().unwrap().answers, vec!["Pacific Time Zone"]);
    assert_eq!(run.generated().len(), 2);
    // Samples, verification and the last thought come from the memo: no new call.
    assert_eq!(run.costs().llm_calls, made);
    assert!(run.costs().llm_calls_saved >= 5, "{:?}", run.costs());
    assert_eq!(run.abandoned().len(), 1);
}

#[test]
fn each_method_has_its_own_progress_line_before_and_during_a_run() {
    use ongraph::engine::{Registry, progress_line};
    let (registry, s) = (Registry::builtin(), Settings::default());
    let line = |m: MethodId, depth| progress_line(registry.get(&m).unwrap(), &s, depth);
    assert_eq!(line(MethodId::GOG, 0), "GoG step 0/6");
    assert_eq!(line(MethodId::IO, 0), "IO");
    assert_eq!(line(MethodId::SC, 0), "SC");
    assert_eq!(line(MethodId::TOG_R, 2), "ToG-R d2/3 N=3");
    assert_eq!(line(MethodId::POG_E, 1), "PoG-E d1/3 N=3");
}

/// PoG and GoG refuse changes once they have answered (PoG can still be forced on).
#[tokio::test]
async fn pog_and_gog_refuse_changes_after_the_answer() {
    let answered = "the run has already answered; go back to an earlier step to change how it got there";
    let driver = demo_driver("");
    let mut run = new_run(&driver, GIANTS_RANGERS, Topics::Extract, settings(MethodId::POG));
    run_to_end(&driver, &mut run).await;
    let leaf = run.answer().unwrap().paths[0].leaf;
    let err = run.apply(Override::PrunePath { node: leaf }).unwrap_err().to_string();
    let named = Override::PrunePath { node: leaf }.describe_in(run.beam());
    assert!(named.starts_with("prune the path at Texas Rangers under "), "named as shown: {named}");
    assert_eq!(err, format!("cannot {named} now: {answered}"));
    run.apply(Override::ForceContinue).unwrap();
    assert!(!run.is_finished());

    let driver = ikg_driver("", &[]);
    let mut run = new_run(&driver, APPLE, Topics::Extract, settings(MethodId::GOG));
    run_to_end(&driver, &mut run).await;
    let generated = run.generated()[0].node;
    let steps = run.trace().len();
    let err = run.apply(Override::Drop { node: generated }).unwrap_err().to_string();
    assert!(err.ends_with(answered), "{err}");
    assert!(run.apply(Override::EditAction { thought: None, action: "Search[California]".into() }).is_err());
    assert_eq!(run.trace().len(), steps);
    assert!(run.generated()[0].kept, "unchanged");
}

/// The shipped sessions asked again after a correction: the answer names the corrections it
/// rests on, and one storing an LLM-generated triple is said to be that.
#[test]
fn an_answer_names_the_corrections_it_rests_on() {
    use ongraph::testing::session::Session;
    let gog = Session::load(std::path::Path::new("sessions/gog-apple-incomplete-kg.json")).unwrap();
    let generated = |id: u64| gog.corrections.iter().any(|c| c.id == id && c.draft.generated);
    let first = gog.replay(0).unwrap();
    assert!(first.answer_corrections().is_empty());
    assert_eq!(first.answer_source(generated).unwrap(), AnswerSource::GeneratedTriples.describe());
    let second = gog.replay(1).unwrap();
    assert_eq!(second.answer().unwrap().source, AnswerSource::KgPaths);
    assert_eq!(second.answer_corrections(), vec![1]);
    assert_eq!(
        second.answer_source(generated).unwrap(),
        "from an LLM-generated triple accepted as correction #1, not from the knowledge graph itself"
    );

    let phanatic = Session::load(std::path::Path::new("sessions/phillie-phanatic.json")).unwrap();
    let fixed = phanatic.replay(1).unwrap();
    // The flag is one correction (a replace): the answer rests on it.
    assert_eq!(fixed.answer_corrections(), vec![1], "the replaced stadium");
    assert_eq!(fixed.answer_source(|_| false).unwrap(), "from knowledge-graph paths, through correction #1");
    assert_eq!(phanatic.replay(0).unwrap().answer_source(|_| true).unwrap(), "from knowledge-graph paths");
}
