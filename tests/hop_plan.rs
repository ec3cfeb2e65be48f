//! `--hop-plan` (ToG, ToG-R): the plan's call goes out with the first relation lookup, no path
//! is judged before the depth it names, and the check it skips stays a step of its own, where
//! the user's changes still apply, and which a session replays.

mod common;

use common::*;
use ongraph::engine::beam::{NodeKind, Status};
use ongraph::engine::{MethodId, Override, Registry, Run, Settings};
use ongraph::testing::session::Session;

const CANBERRA: &str = "What is the majority party now in the country where Canberra is located?";
const LOU_SEAL: &str = "In which years did the team whose mascot is Lou Seal win the World Series?";

/// The demo model's plan for the Canberra question: three hops.
const PLAN: &str = r#"
[[reply]]
step = "hop_plan"
contains = ["Q: What is the majority party now in the country where Canberra is located?", "Topic Entity: Canberra\n"]
text = "{located in | head of government | party}"
"#;

fn planned() -> Settings {
    Settings { hop_plan: true, plan_narrows_answers: true, ..Settings::default() }
}

/// The depths at which a sufficiency check called the model.
fn judged_at(run: &Run) -> Vec<u32> {
    run.trace().iter().filter(|e| e.calls.iter().any(|c| c.step.starts_with("reasoning"))).map(|e| e.depth).collect()
}

fn summaries(run: &Run) -> Vec<&str> {
    run.trace().iter().map(|e| e.summary.as_str()).collect()
}

#[tokio::test]
async fn a_hop_plan_judges_the_paths_only_from_its_depth_on() {
    let plain = demo_driver("");
    let mut without = new_run(&plain, CANBERRA, named(&["Canberra"]), Settings::default());
    run_to_end(&plain, &mut without).await;
    assert_eq!(judged_at(&without), [1, 2, 3], "without a plan every depth is judged");

    let driver = demo_driver(PLAN);
    let mut run = new_run(&driver, CANBERRA, named(&["Canberra"]), planned());
    run_to_end(&driver, &mut run).await;
    assert_eq!(judged_at(&run), [3], "judged only at the planned depth");
    let first = run.trace().iter().find(|e| !e.calls.is_empty()).unwrap();
    assert_eq!(first.phase(), Some("relation_search"), "the plan goes out with the first lookup");
    assert_eq!(first.calls.iter().map(|c| c.step.as_str()).collect::<Vec<_>>(), ["hop_plan"]);
    assert!(first.calls[0].parsed.contains("3 hops"), "{}", first.calls[0].parsed);
    for depth in [1, 2] {
        let said = format!("depth {depth}: not judged (the hop plan judges from depth 3)");
        assert!(summaries(&run).contains(&said.as_str()), "{:?}", summaries(&run));
    }
    assert_eq!(run.answer().unwrap().answers, without.answer().unwrap().answers);
    assert_eq!(run.costs().llm_calls + 1, without.costs().llm_calls, "one plan call for two judgments");
    // Two judgments' rounds fewer; the plan's round is the first lookup's, which waits anyway.
    assert_eq!(run.costs().llm_rounds + 1, without.costs().llm_rounds);

    // A reply that names no relation plans nothing: every depth is judged. A braced
    // "unknown" is a reply read; one without braces is not.
    for (reply, unread) in [("{unknown}", false), ("I am not sure.", true)] {
        let driver = demo_driver(&PLAN.replace("{located in | head of government | party}", reply));
        let mut run = new_run(&driver, CANBERRA, named(&["Canberra"]), planned());
        run_to_end(&driver, &mut run).await;
        assert_eq!(judged_at(&run), [1, 2, 3], "{reply}");
        let plan = run.trace().iter().flat_map(|e| &e.calls).find(|c| c.step == "hop_plan").unwrap();
        assert_eq!(plan.fell_back, unread, "{reply}: {plan:?}");
    }

    // A plan longer than the depth is capped at it; at depth 1 there is nothing to plan.
    let mut capped = new_run(&driver, CANBERRA, named(&["Canberra"]), Settings { depth: 2, ..planned() });
    run_until_depth(&driver, &mut capped, 2, "reasoning").await;
    let plan = capped.trace().iter().flat_map(|e| &e.calls).find(|c| c.step == "hop_plan").unwrap();
    assert!(plan.parsed.ends_with("first judged at depth 2 (capped at depth 2)"), "{}", plan.parsed);
    assert!(judged_at(&capped).is_empty(), "depth 1 is not judged");
    driver.step(&mut capped).await.unwrap();
    assert_eq!(judged_at(&capped), [2]);
    let mut shallow = new_run(&driver, CANBERRA, named(&["Canberra"]), Settings { depth: 1, ..planned() });
    run_until_depth(&driver, &mut shallow, 1, "reasoning").await;
    driver.step(&mut shallow).await.unwrap();
    assert!(shallow.trace().iter().flat_map(|e| &e.calls).all(|c| c.step != "hop_plan"), "no plan at depth 1");
    assert_eq!(judged_at(&shallow), [1]);
}

/// At a depth the plan does not judge, the check is a step that asks nothing: the changes a
/// user makes after entity pruning apply there as at any check.
#[tokio::test]
async fn the_users_changes_keep_their_moment_at_a_depth_the_plan_does_not_judge() {
    let driver = demo_driver(PLAN);
    let mut run = new_run(&driver, CANBERRA, named(&["Canberra"]), planned());
    run_until_depth(&driver, &mut run, 1, "reasoning").await;
    let entity = run
        .beam()
        .nodes
        .iter()
        .find(|n| n.depth == 1 && matches!(n.kind, NodeKind::Entity { .. }) && n.status.is_live())
        .expect("a kept entity at depth 1")
        .id;
    run.apply(Override::Drop { node: entity }).unwrap();
    run.apply(Override::Keep { node: entity }).unwrap();
    assert_eq!(run.beam().nodes[entity].status, Status::Kept);
    // Going on from here is the user's to force, as before any check.
    run.apply(Override::ForceContinue).unwrap();
    assert_eq!((run.depth(), run.next_phase()), (2, "relation_search"));
    run_to_end(&driver, &mut run).await;
    assert_eq!(judged_at(&run), [3]);
    assert_eq!(run.answer().unwrap().answers, ["Australian Labor Party"]);

    // Or to stop: forced sufficient at the unjudged depth answers from its paths.
    let mut run = new_run(&driver, CANBERRA, named(&["Canberra"]), planned());
    run_until_depth(&driver, &mut run, 1, "reasoning").await;
    run.apply(Override::ForceSufficient).unwrap();
    assert_eq!(run.next_phase(), "answer");
}

/// Speculation starts only where the plan judges: no speculative call is spent below it.
#[tokio::test]
async fn speculation_waits_for_the_planned_depth() {
    let driver = demo_driver(PLAN);
    let mut run = new_run(&driver, CANBERRA, named(&["Canberra"]), Settings { speculate: true, ..planned() });
    run_to_end(&driver, &mut run).await;
    assert_eq!(judged_at(&run), [3]);
    let unused = run.trace().iter().flat_map(|e| &e.calls).filter(|c| c.parsed.starts_with("not used")).count();
    assert_eq!(unused, 0);
    assert_eq!(run.answer().unwrap().answers, ["Australian Labor Party"]);
}

#[tokio::test]
async fn tog_r_judges_its_chains_from_the_planned_depth() {
    let plan = r#"
[[reply]]
step = "hop_plan"
contains = ["Q: In which years did the team whose mascot is Lou Seal win the World Series?"]
text = "{mascot of | championships}"
"#;
    let settings = Settings { method: MethodId::TOG_R, seed: 7, ..Settings::default() };
    let plain = demo_driver("");
    let mut without = new_run(&plain, LOU_SEAL, named(&["Lou Seal"]), settings.clone());
    run_to_end(&plain, &mut without).await;
    let driver = demo_driver(plan);
    let mut run = new_run(
        &driver,
        LOU_SEAL,
        named(&["Lou Seal"]),
        Settings { hop_plan: true, plan_narrows_answers: true, ..settings },
    );
    run_to_end(&driver, &mut run).await;
    let deeper: Vec<u32> = judged_at(&without).into_iter().filter(|&d| d >= 2).collect();
    assert!(!deeper.is_empty(), "ToG-R judges at depth 2 on the demo: {:?}", judged_at(&without));
    assert_eq!(judged_at(&run), deeper);
    assert_eq!(run.answer().unwrap().answers, ["2010", "2012", "2014"]);
}

/// The batch of a lookup and the plan's call, and the checks that ask nothing, replay.
#[tokio::test]
async fn a_planned_run_replays_from_its_session() {
    let driver = demo_driver(PLAN);
    let settings = planned();
    let mut run = new_run(&driver, CANBERRA, named(&["Canberra"]), settings.clone());
    let prompts = ongraph::engine::builtin_prompts();
    let mut session = Session::new("demo", "demo", settings.clone(), driver.kg().profile().clone(), &prompts);
    session.begin(CANBERRA, named(&["Canberra"]), &settings);
    driver.run_recorded(&mut run, &mut session).await.unwrap();
    session.check_replays(Registry::builtin()).unwrap();
    let replayed = session.replay(0).unwrap();
    assert_eq!(replayed.trace(), run.trace());
    assert_eq!(judged_at(&replayed), [3]);
}
