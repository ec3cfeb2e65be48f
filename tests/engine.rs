//! The ToG / ToG-R engine on the demo KG with scripted replies.

mod common;

use common::*;
use ongraph::engine::beam::{BeamNode, NodeKind, Status};
use ongraph::engine::events::EventKind;
use ongraph::engine::{AnswerSource, Fallback, MethodId, Override, PruneTool, Run, Settings, Topics};
use ongraph::kg::Term;

const CANBERRA: &str = "What is the majority party now in the country where Canberra is located?";
const PHANATIC: &str = "Which ballpark hosts spring training for the team whose mascot is the Phillie Phanatic?";
const LOU_SEAL: &str = "In which years did the team whose mascot is Lou Seal win the World Series?";
const APPLE_TZ: &str = "In which time zone is the headquarters of Apple Inc.?";

/// Replies that never find the paths sufficient, so a run goes to Dmax and makes every call.
const PESSIMIST: &str = include_str!("data/never-sufficient.toml");

#[tokio::test]
async fn tog_beam_after_every_step() {
    let driver = demo_driver("");
    let mut run = new_run(&driver, CANBERRA, Topics::Extract, Settings::default());
    let transcript = step_transcript(&driver, &mut run).await;
    insta::assert_snapshot!("tog_canberra_steps", transcript);
    let answer = run.answer().unwrap();
    assert_eq!(answer.answers, vec!["Australian Labor Party"]);
    assert_eq!(answer.source, AnswerSource::KgPaths);
    assert!(
        answer.paths[0].text.ends_with("Anthony Albanese -> government.politician.party -> Australian Labor Party")
    );
    // 0.5 (containedby) × 0.8 (Australia) × 0.6 (head of government) × 1 × 0.8 (party) × 1.
    assert!((answer.paths[0].score - 0.192).abs() < 1e-9, "{}", answer.paths[0].score);
}

#[tokio::test]
async fn tog_r_keeps_relation_chains() {
    let driver = demo_driver("");
    let settings = Settings { method: MethodId::TOG_R, seed: 7, ..Settings::default() };
    let mut run = new_run(&driver, LOU_SEAL, named(&["Lou Seal"]), settings);
    let transcript = step_transcript(&driver, &mut run).await;
    insta::assert_snapshot!("tog_r_lou_seal_steps", transcript);
    let answer = run.answer().unwrap();
    assert_eq!(answer.answers, vec!["2010", "2012", "2014"]);
    // ToG-R makes no entity-prune calls; its reasoning prompt shows chains with candidates.
    let calls: Vec<&str> = run.trace().iter().flat_map(|e| e.calls.iter().map(|c| c.step.as_str())).collect();
    assert!(!calls.contains(&"entity_prune"), "{calls:?}");
    let reasoning = run.trace().iter().flat_map(|e| &e.calls).rfind(|c| c.step == "reasoning").unwrap();
    assert!(
        reasoning
            .prompt
            .contains("Lou Seal -> sports.sports_team.team_mascot (incoming) -> sports.sports_team.championships: "),
        "{}",
        reasoning.prompt
    );
}

async fn pessimist_costs(settings: Settings) -> (ongraph::engine::events::Costs, AnswerSource, u32) {
    let driver = demo_driver(PESSIMIST);
    let mut run = new_run(&driver, "How long?", named(&["Canberra"]), settings);
    run_to_end(&driver, &mut run).await;
    let answer = run.answer().unwrap();
    (run.costs(), answer.source, run.depth())
}

#[tokio::test]
async fn call_counts_stay_within_the_papers_bounds() {
    let (n, d) = (3u64, 3u64);
    // The paper's own-knowledge answer at Dmax (the paths-first answer adds one call at most).
    let paper = || Settings { fallback: Fallback::OwnKnowledge, ..Settings::default() };
    let (tog, source, depth) = pessimist_costs(paper()).await;
    assert_eq!((source, depth), (AnswerSource::OwnKnowledge, 3));
    assert!(tog.llm_calls <= 2 * n * d + d + 1, "ToG made {} calls", tog.llm_calls);
    let (partial_first, source, _) = pessimist_costs(Settings::default()).await;
    assert_eq!((source, partial_first.llm_calls), (AnswerSource::PartialPaths, tog.llm_calls), "one call either way");
    assert!(tog.llm_calls > 2 * d, "ToG made only {} calls: prunes are not being asked", tog.llm_calls);

    let (tog_r, ..) = pessimist_costs(Settings { method: MethodId::TOG_R, ..paper() }).await;
    assert!(tog_r.llm_calls <= n * d + d + 1, "ToG-R made {} calls", tog_r.llm_calls);

    let (unified, ..) = pessimist_costs(Settings { unified: true, ..paper() }).await;
    assert!(unified.llm_calls <= 2 * d + d + 1, "unified ToG made {} calls", unified.llm_calls);
    let (unified_r, ..) = pessimist_costs(Settings { unified: true, method: MethodId::TOG_R, ..paper() }).await;
    assert!(unified_r.llm_calls <= d + d + 1, "unified ToG-R made {} calls", unified_r.llm_calls);

    let (bm25, source, _) = pessimist_costs(Settings { prune: PruneTool::Bm25, ..paper() }).await;
    // Only reasoning and the answer ask the model (an identical reasoning prompt at a later
    // depth is answered from the memo, hence calls made + calls saved).
    assert_eq!(bm25.llm_calls + bm25.llm_calls_saved, d + 1, "BM25 pruning asks the model D+1 times");
    assert_eq!(source, AnswerSource::OwnKnowledge);
    // Every depth's relation prune, entity prune and reasoning wait on each other: at most
    // 3 dependent rounds a depth plus the answer.
    assert!(tog.llm_rounds <= 3 * d + 1, "{} rounds", tog.llm_rounds);
}

#[tokio::test]
async fn dmax_fallback_is_marked_and_keeps_the_explored_paths() {
    let driver = demo_driver(PESSIMIST);
    let paper = Settings { depth: 2, fallback: Fallback::OwnKnowledge, ..Settings::default() };
    let mut run = new_run(&driver, "How long?", named(&["Canberra"]), paper);
    run_to_end(&driver, &mut run).await;
    let answer = run.answer().unwrap();
    assert_eq!(answer.source, AnswerSource::OwnKnowledge);
    assert_eq!(answer.answers, vec!["forever"]);
    // Why, in the words such answers have always had.
    assert_eq!(answer.why.as_deref(), Some("no sufficient KG path within the depth limit"));
    assert_eq!(
        run.answer_source(|_| false).unwrap(),
        "from the LLM's own knowledge (no sufficient KG path within the depth limit)"
    );
    assert!(!answer.paths.is_empty(), "explored paths are kept with an own-knowledge answer");
    assert!(answer.paths.iter().all(|p| p.text.starts_with("Canberra")));
    let last = run.trace().last().unwrap();
    assert_eq!(last.calls[0].step, "answer_own_knowledge");
    assert!(run.trace().iter().any(|e| e.notes.iter().any(|n| n.contains("maximum depth 2"))));
}

/// At Dmax the collected paths answer first (with the model's knowledge, as ToG-2 and PoG do);
/// the model's own knowledge only when they give no answer.
#[tokio::test]
async fn dmax_answers_from_the_collected_paths_first() {
    let driver = demo_driver(PESSIMIST);
    let mut run = new_run(&driver, "How long?", named(&["Canberra"]), Settings { depth: 2, ..Settings::default() });
    run_to_end(&driver, &mut run).await;
    let answer = run.answer().unwrap();
    assert_eq!((answer.source, answer.answers.clone()), (AnswerSource::PartialPaths, vec!["a while".to_string()]));
    assert_eq!(
        run.answer_source(|_| false).unwrap(),
        "from partial knowledge-graph paths (no path judged sufficient within the depth limit; answered from those collected)"
    );
    assert_eq!(run.trace().last().unwrap().calls[0].step, "answer");
    // Paths that give no answer: the model's own knowledge, one call more.
    let unknowing = PESSIMIST.replace("the answer is {a while}", "the answer is {unknown}");
    let driver = demo_driver(&unknowing);
    let mut run = new_run(&driver, "How long?", named(&["Canberra"]), Settings { depth: 2, ..Settings::default() });
    run_to_end(&driver, &mut run).await;
    let answer = run.answer().unwrap();
    assert_eq!((answer.source, answer.answers.clone()), (AnswerSource::OwnKnowledge, vec!["forever".to_string()]));
    let steps: Vec<&str> = run.trace().iter().flat_map(|e| &e.calls).map(|c| c.step.as_str()).collect();
    assert_eq!(steps[steps.len() - 2..], ["answer", "answer_own_knowledge"]);
    assert!(run.trace().iter().any(|e| e.notes.iter().any(|n| n.contains("the collected paths gave no answer"))));
}

#[tokio::test]
async fn width_pruning_and_cumulative_scores() {
    let driver = demo_driver("");
    let mut run = new_run(&driver, APPLE_TZ, named(&["Apple Inc."]), Settings::default());
    run_until(&driver, &mut run, "reasoning").await;
    let beam = run.beam();
    let depth1: Vec<_> = beam.nodes.iter().filter(|n| n.depth == 1 && n.term().is_some()).collect();
    let live = depth1.iter().filter(|n| n.status.is_live()).count();
    let by_width = depth1.iter().filter(|n| n.status == Status::PrunedByWidth).count();
    assert_eq!(live, 3, "width 3");
    assert!(by_width >= 2, "founders and industries beyond the width are pruned by width");
    for n in &beam.nodes {
        if let (Some(score), Some(parent)) = (n.score, n.parent) {
            let expected = beam.nodes[parent].path_score * score;
            assert!((n.path_score - expected).abs() < 1e-12, "node {} path score", n.id);
        }
    }
    // Kept entities all score at least as high as every entity pruned by width.
    let worst_kept = depth1.iter().filter(|n| n.status.is_live()).map(|n| n.path_score).fold(f64::MAX, f64::min);
    let best_cut =
        depth1.iter().filter(|n| n.status == Status::PrunedByWidth).map(|n| n.path_score).fold(0.0, f64::max);
    assert!(worst_kept >= best_cut);
    // The unnamed headquarters node is kept, shown as UnName_Entity, its id distinct.
    let hq = depth1.iter().find(|n| n.term() == Some(&Term::Entity("cvt.apple_hq".into()))).unwrap();
    assert_eq!((hq.shown(), hq.status), ("UnName_Entity", Status::Kept));
}

#[tokio::test]
async fn an_incoming_relation_is_expanded_towards_its_head() {
    let driver = demo_driver("");
    let mut run = new_run(&driver, LOU_SEAL, named(&["Lou Seal"]), Settings::default());
    run_to_end(&driver, &mut run).await;
    let answer = run.answer().unwrap();
    let path = &answer.paths[0];
    assert!(
        path.text.starts_with("Lou Seal <- sports.sports_team.team_mascot <- San Francisco Giants"),
        "{}",
        path.text
    );
    let t = &path.triples[0];
    assert_eq!(
        (t.head.as_str(), t.relation.as_str(), t.tail.as_str()),
        ("San Francisco Giants", "sports.sports_team.team_mascot", "Lou Seal")
    );
    assert_eq!(answer.answers, vec!["2010", "2012", "2014"]);
}

#[tokio::test]
async fn a_literal_value_can_be_the_answer() {
    let script = r#"
[[reply]]
step = "relation_prune"
contains = ["Q: When was Apple Inc. founded?"]
text = "{organization.organization.date_founded (Score: 0.9)} {organization.organization.founders (Score: 0.1)}"
[[reply]]
step = "entity_prune"
contains = ["Q: When was Apple Inc. founded?"]
text = "Score: 0.4, 0.4, 0.2"
[[reply]]
step = "reasoning"
contains = ["Q: When was Apple Inc. founded?", "Apple Inc., organization.organization.date_founded, 1976-04-01"]
text = "{Yes}. The answer is {1976-04-01}."
"#;
    let driver = demo_driver(script);
    let mut run = new_run(&driver, "When was Apple Inc. founded?", named(&["Apple Inc."]), Settings::default());
    run_to_end(&driver, &mut run).await;
    let answer = run.answer().unwrap();
    assert_eq!(answer.answers, vec!["1976-04-01"]);
    let literal = answer.paths.iter().find(|p| p.triples[0].tail_term == Term::Literal("1976-04-01".into()));
    assert!(literal.is_some(), "the literal is on a supporting path: {:?}", answer.paths);
}

#[tokio::test]
async fn an_override_changes_the_continuation() {
    let driver = demo_driver("");
    // Without an override, the answer's best path goes through `containedby`.
    let mut plain = new_run(&driver, CANBERRA, named(&["Canberra"]), Settings::default());
    run_to_end(&driver, &mut plain).await;
    assert!(
        plain.answer().unwrap().paths[0].text.starts_with("Canberra -> location.location.containedby -> Australia")
    );

    let mut run = new_run(&driver, CANBERRA, named(&["Canberra"]), Settings::default());
    run_until(&driver, &mut run, "entity_search").await;
    let node_of = |run: &ongraph::engine::Run, name: &str| {
        run.beam()
            .nodes
            .iter()
            .find(|n| matches!(&n.kind, NodeKind::Relation { shown, .. } if shown == name))
            .unwrap()
            .id
    };
    let containedby = node_of(&run, "location.location.containedby");
    let bibs = node_of(&run, "base.biblioness.bibs_location.country");
    run.apply(Override::Drop { node: containedby }).unwrap();
    run.apply(Override::Drop { node: bibs }).unwrap();
    // A candidate of an earlier step cannot be changed without rewinding.
    let root = run.beam().roots().next().unwrap().id;
    assert!(run.apply(Override::Keep { node: root }).is_err());
    run_to_end(&driver, &mut run).await;
    let overrides: Vec<&str> = run
        .trace()
        .iter()
        .filter_map(|e| match &e.kind {
            EventKind::Override { description } => Some(description.as_str()),
            _ => None,
        })
        .collect();
    assert_eq!(
        overrides,
        vec!["dropped location.location.containedby", "dropped base.biblioness.bibs_location.country"]
    );
    assert_eq!(run.beam().nodes[containedby].status, Status::PrunedByUser);
    let answer = run.answer().unwrap();
    assert_eq!(answer.answers, vec!["Australian Labor Party"]);
    assert!(
        answer.paths[0].text.starts_with("Canberra <- location.country.capital <- Australia"),
        "{}",
        answer.paths[0].text
    );
}

#[tokio::test]
async fn forcing_the_verdict() {
    let script = r#"
[[reply]]
step = "answer"
contains = ["Q: Which ballpark hosts spring training for the team whose mascot is the Phillie Phanatic?"]
text = "From the triplets, the team is the Philadelphia Phillies; the answer is {Philadelphia Phillies}."
"#;
    let driver = demo_driver(script);
    let mut run = new_run(&driver, PHANATIC, named(&["Phillie Phanatic"]), Settings::default());
    run_until(&driver, &mut run, "reasoning").await;
    run.apply(Override::ForceSufficient).unwrap();
    run_to_end(&driver, &mut run).await;
    let answer = run.answer().unwrap();
    assert_eq!((answer.source, answer.answers[0].as_str()), (AnswerSource::KgPaths, "Philadelphia Phillies"));
    assert!(!run.trace().iter().any(|e| e.phase() == Some("reasoning")), "the check was skipped");
    assert!(run.apply(Override::ForceSufficient).is_err(), "nothing to force once answered");

    // Overruling a Yes explores one more depth.
    let mut run = new_run(&driver, LOU_SEAL, named(&["Lou Seal"]), Settings { depth: 1, ..Settings::default() });
    run_until(&driver, &mut run, "reasoning").await;
    assert!(run.apply(Override::ForceContinue).is_err(), "already at the maximum depth");
}

#[tokio::test]
async fn rewind_and_rerun() {
    let driver = demo_driver("");
    let mut run = new_run(&driver, CANBERRA, named(&["Canberra"]), Settings::default());
    run_to_end(&driver, &mut run).await;
    let first: Vec<String> = run.trace().iter().map(|e| e.summary.clone()).collect();
    let calls_first = run.costs().llm_calls;
    let relation_prune = run.trace().iter().position(|e| e.phase() == Some("relation_prune")).unwrap();

    // Rewind to right after the first relation prune and run again unchanged: the same steps
    // follow, and every LLM call is answered from the memo instead of being repeated.
    run.rewind(relation_prune).unwrap();
    assert!(!run.is_finished());
    assert_eq!(run.abandoned().len(), 1);
    assert_eq!(run.abandoned()[0].events.len(), first.len() - relation_prune - 1);
    run_to_end(&driver, &mut run).await;
    let again: Vec<String> = run.trace().iter().map(|e| e.summary.clone()).collect();
    assert!(again[relation_prune + 1].starts_with("rewound to step"));
    assert_eq!(again[relation_prune + 2..], first[relation_prune + 1..]);
    assert_eq!(run.costs().llm_calls, calls_first, "no call made twice");
    assert!(run.costs().llm_calls_saved > 0);

    // Rewind again and take another branch.
    let rewind_to = relation_prune;
    run.rewind(rewind_to).unwrap();
    let containedby = run
        .beam()
        .nodes
        .iter()
        .find(|n| matches!(&n.kind, NodeKind::Relation { shown, .. } if shown == "location.location.containedby"))
        .unwrap()
        .id;
    run.apply(Override::Drop { node: containedby }).unwrap();
    run_to_end(&driver, &mut run).await;
    assert_eq!(run.abandoned().len(), 2);
    assert!(!run.answer().unwrap().paths[0].text.contains("-> location.location.containedby ->"));
    assert!(run.rewind(10_000).is_err());
}

#[tokio::test]
async fn same_seed_same_trace() {
    let trace = |seed: u64, method: MethodId| async move {
        let driver = demo_driver("");
        let mut run =
            new_run(&driver, LOU_SEAL, named(&["Lou Seal"]), Settings { seed, method, ..Settings::default() });
        run_to_end(&driver, &mut run).await;
        // Everything but the clock must repeat.
        let mut trace = run.trace().to_vec();
        trace.iter_mut().for_each(|e| e.elapsed_ms = 0);
        serde_json::to_string(&(trace, run.beam())).unwrap()
    };
    assert_eq!(trace(7, MethodId::TOG_R).await, trace(7, MethodId::TOG_R).await);
    assert_eq!(trace(7, MethodId::TOG).await, trace(7, MethodId::TOG).await);
}

#[tokio::test]
async fn the_seed_drives_sampling_of_oversized_candidate_sets() {
    let script = r#"
[[reply]]
step = "relation_prune"
contains = ["Q: Who founded Apple Inc.?"]
text = "{organization.organization.founders (Score: 1.0)}"
[[reply]]
step = "entity_prune"
contains = ["Q: Who founded Apple Inc.?"]
text = "Score: 1.0"
[[reply]]
step = "reasoning"
contains = ["Q: Who founded Apple Inc.?"]
text = "{Yes}. The answer is {Steve Jobs}."
"#;
    let mut kept = std::collections::BTreeSet::new();
    for seed in 0..12 {
        let driver = demo_driver(script);
        let settings = Settings { seed, sample_threshold: 3, sample_size: 1, ..Settings::default() };
        let mut run = new_run(&driver, "Who founded Apple Inc.?", named(&["Apple Inc."]), settings);
        run_to_end(&driver, &mut run).await;
        let beam = run.beam();
        let sampled: Vec<&str> = beam
            .nodes
            .iter()
            .filter(|n| n.depth == 1 && n.term().is_some() && n.status != Status::PrunedBySample)
            .map(|n| n.shown())
            .collect();
        assert_eq!(sampled.len(), 1, "one founder sampled: {sampled:?}");
        kept.insert(sampled[0].to_string());
    }
    assert!(kept.len() >= 2, "different seeds sample different founders: {kept:?}");
}

#[tokio::test]
async fn a_malformed_reply_falls_back_and_says_so() {
    let script = r#"
[[reply]]
step = "relation_prune"
contains = ["Q: Where is Canberra?"]
text = "I'm sorry, as an AI I cannot rate relations."
[[reply]]
step = "entity_prune"
contains = ["Q: Where is Canberra?"]
text = "Hmm."
[[reply]]
step = "reasoning"
contains = ["Q: Where is Canberra?"]
text = "Maybe."
[[reply]]
step = "answer_own_knowledge"
contains = ["Q: Where is Canberra?"]
text = "Canberra is in Australia"
"#;
    let driver = demo_driver(script);
    let mut run = new_run(
        &driver,
        "Where is Canberra?",
        named(&["Canberra"]),
        Settings { depth: 1, fallback: Fallback::OwnKnowledge, ..Settings::default() },
    );
    run_to_end(&driver, &mut run).await;
    let notes: Vec<&String> = run.trace().iter().flat_map(|e| &e.notes).collect();
    assert!(notes.iter().any(|n| n.contains("could not read relation scores")), "{notes:?}");
    assert!(notes.iter().any(|n| n.contains("no Yes/No found")), "{notes:?}");
    assert!(notes.iter().any(|n| n.contains("no answer in braces")), "{notes:?}");
    assert_eq!(run.answer().unwrap().answers, vec!["Canberra is in Australia"]);
}

#[test]
fn bad_starts_are_errors() {
    let driver = demo_driver("");
    let kg = driver.kg();
    let start = |q: &str, t: Topics| {
        ongraph::engine::Run::new(
            q,
            t,
            Settings::default(),
            std::sync::Arc::new(ongraph::engine::builtin_prompts()),
            kg.profile().clone(),
            "demo",
        )
        .err()
    };
    assert_eq!(start("  ", Topics::Extract), Some(ongraph::engine::EngineError::EmptyQuestion));
    assert_eq!(start("q", Topics::Named(vec![" ".into()])), Some(ongraph::engine::EngineError::NoTopic));
}

/// The live paths' texts and the answer: what a user sees of a finished run.
fn outcome(run: &ongraph::engine::Run) -> (Vec<String>, Vec<String>, AnswerSource) {
    let a = run.answer().unwrap();
    (a.paths.iter().map(|p| format!("{:.6} {}", p.score, p.text)).collect(), a.answers.clone(), a.source)
}

#[tokio::test]
async fn speculation_saves_rounds_and_changes_nothing_else() {
    for (question, topic, script) in [("How long?", "Canberra", PESSIMIST), (CANBERRA, "Canberra", "")] {
        let driver = demo_driver(script);
        let mut plain = new_run(&driver, question, named(&[topic]), Settings::default());
        run_to_end(&driver, &mut plain).await;
        let driver = demo_driver(script);
        let mut fast = new_run(&driver, question, named(&[topic]), Settings { speculate: true, ..Settings::default() });
        run_to_end(&driver, &mut fast).await;
        assert_eq!(outcome(&fast), outcome(&plain), "{question}");
        let (p, f) = (plain.costs(), fast.costs());
        assert_eq!(f.llm_calls + f.llm_calls_saved, p.llm_calls + p.llm_calls_saved, "{question}: same requests");
        assert!(f.llm_rounds < p.llm_rounds, "{question}: {} rounds vs {}", f.llm_rounds, p.llm_rounds);
    }
    // Worst case at N=3, D=3: 3D+1 = 10 rounds without speculation. With it, every depth's
    // check rides along with the next depth's relation scoring: only the first relation
    // scoring stands alone, so at most 2D+2 = 8.
    let driver = demo_driver(PESSIMIST);
    let mut run =
        new_run(&driver, "How long?", named(&["Canberra"]), Settings { speculate: true, ..Settings::default() });
    run_to_end(&driver, &mut run).await;
    assert!(run.costs().llm_rounds <= 2 * 3 + 2, "{} rounds", run.costs().llm_rounds);
}

#[tokio::test]
async fn speculation_that_was_not_needed_is_counted_and_said() {
    let driver = demo_driver("");
    let mut plain = new_run(&driver, PHANATIC, named(&["Phillie Phanatic"]), Settings::default());
    run_to_end(&driver, &mut plain).await;
    let driver = demo_driver("");
    let mut fast =
        new_run(&driver, PHANATIC, named(&["Phillie Phanatic"]), Settings { speculate: true, ..Settings::default() });
    run_to_end(&driver, &mut fast).await;
    assert_eq!(outcome(&fast), outcome(&plain));
    assert_eq!(fast.depth(), 2, "answered at depth 2");
    let verdict = fast.trace().iter().rfind(|e| e.phase() == Some("reasoning")).unwrap();
    assert!(
        verdict.notes.iter().any(|n| n.contains("speculative call(s) scoring depth 3 were not needed")),
        "{:?}",
        verdict.notes
    );
    let unused = verdict.calls.iter().filter(|c| c.parsed.starts_with("not used")).count();
    assert!(unused >= 1);
    let requests = |c: ongraph::engine::events::Costs| c.llm_calls + c.llm_calls_saved;
    assert_eq!(requests(fast.costs()), requests(plain.costs()) + unused as u64, "the extra calls are counted");
    assert!(fast.costs().llm_rounds < plain.costs().llm_rounds);
}

#[tokio::test]
async fn overrides_work_while_a_verdict_is_pending() {
    let script = r#"
[[reply]]
step = "answer"
contains = ["Q: Which ballpark hosts spring training for the team whose mascot is the Phillie Phanatic?"]
text = "The answer is {Philadelphia Phillies}."
"#;
    let settings = Settings { speculate: true, ..Settings::default() };
    // Forcing "sufficient" before the (speculative) check answers at the right depth.
    let driver = demo_driver(script);
    let mut run = new_run(&driver, PHANATIC, named(&["Phillie Phanatic"]), settings.clone());
    run_until(&driver, &mut run, "reasoning").await;
    assert_eq!(run.depth(), 2, "speculation has moved on to depth 2");
    run.apply(Override::ForceSufficient).unwrap();
    assert_eq!(run.depth(), 1);
    run_to_end(&driver, &mut run).await;
    assert_eq!(run.answer().unwrap().answers, vec!["Philadelphia Phillies"]);

    // Keeping a pruned entity while the verdict is pending searches its relations too.
    let driver = demo_driver("");
    let mut run = new_run(&driver, APPLE_TZ, named(&["Apple Inc."]), settings);
    run_until(&driver, &mut run, "reasoning").await;
    let pruned = run
        .beam()
        .nodes
        .iter()
        .find(|n| n.depth == 1 && n.status == Status::PrunedByWidth)
        .expect("a candidate pruned by width")
        .id;
    run.apply(Override::Keep { node: pruned }).unwrap();
    assert_eq!(run.next_phase(), "relation_search");
    driver.step(&mut run).await.unwrap();
    let has_relations = run.beam().nodes[pruned]
        .children
        .iter()
        .any(|&c| matches!(run.beam().nodes[c].kind, NodeKind::Relation { .. }));
    assert!(has_relations, "the kept entity's relations were searched");
    let searches = run.trace().iter().rfind(|e| e.phase() == Some("relation_search")).unwrap();
    assert_eq!(searches.lookups.len(), 1, "only the newly kept entity was searched");
}

#[tokio::test]
async fn the_protocol_refuses_misfed_results() {
    use ongraph::engine::{EngineError, Poll, Response};
    let driver = demo_driver("");
    let mut run = new_run(&driver, CANBERRA, named(&["Canberra"]), Settings::default());
    assert_eq!(run.feed(vec![]), Err(EngineError::NotPolled));
    let Poll::Need(requests) = run.poll() else { panic!("needs topic linking") };
    assert_eq!(run.poll(), Poll::Need(requests.clone()), "polling again returns the same batch");
    assert_eq!(run.feed(vec![]), Err(EngineError::BatchMismatch { expected: 1, got: 0 }));
    // The wrong kind of result is refused and the batch stays pending.
    let err = run.feed(vec![Response::Relations { relations: vec![] }]).unwrap_err();
    assert!(matches!(err, EngineError::WrongResponse { index: 0, .. }), "{err:?}");
    assert!(run.trace().is_empty(), "a refused step records nothing");
    let responses = driver.perform(&requests).await.unwrap();
    assert_eq!(run.feed(responses), Ok(ongraph::engine::Fed::Step(0)));
}

/// Lou Seal's team, then back along the mascot relation.
const MASCOT: &str = r#"
[[reply]]
step = "relation_prune"
contains = ["Q: Who is Lou Seal's team's mascot?", "Topic Entity: San Francisco Giants\n"]
text = "{sports.sports_team.team_mascot (Score: 1.0)}"
[[reply]]
step = "relation_prune"
contains = ["Q: Who is Lou Seal's team's mascot?"]
text = "{sports.sports_team.team_mascot (incoming) (Score: 1.0)}"
[[reply]]
step = "reasoning"
contains = ["Q: Who is Lou Seal's team's mascot?"]
text = "{No}"
[[reply]]
step = "answer"
contains = ["Q: Who is Lou Seal's team's mascot?"]
text = "{Lou Seal}"
"#;

#[tokio::test]
async fn the_triple_just_crossed_is_not_crossed_back() {
    let driver = demo_driver(MASCOT);
    let settings = Settings { depth: 2, ..Settings::default() };
    let mut run = new_run(&driver, "Who is Lou Seal's team's mascot?", named(&["Lou Seal"]), settings);
    run_to_end(&driver, &mut run).await;
    assert_eq!(run.answer().unwrap().source, AnswerSource::PartialPaths, "the beam ran dry at depth 2");
    let beam = run.beam();
    // Lou Seal <- team_mascot <- Giants, then Giants -> team_mascot -> Lou Seal is the same triple.
    let back: Vec<_> = beam.nodes.iter().filter(|n| n.depth == 2 && n.term().is_some()).collect();
    assert!(back.is_empty(), "{:?}", back.iter().map(|n| n.shown()).collect::<Vec<_>>());
    let notes: Vec<&String> = run.trace().iter().flat_map(|e| &e.notes).collect();
    assert!(notes.iter().any(|n| n.ends_with("leads back across the triple just crossed; skipped")), "{notes:?}");
}

/// `--no-backtrack`: the relation that reached an entity is not searched back from it at all
/// (the reference code's rule), so no one else it leads to is offered or scored.
#[tokio::test]
async fn no_backtrack_leaves_the_relation_that_reached_an_entity_unsearched() {
    let question = "Who is Lou Seal's team's mascot?";
    let mascot_at_depth_2 = |run: &Run| {
        let beam = run.beam();
        let mascot =
            |n: &&BeamNode| matches!(&n.kind, NodeKind::Relation { relation, .. } if relation.ends_with("team_mascot"));
        beam.nodes.iter().filter(|n| n.depth == 2).filter(mascot).count()
    };
    let run_with = |no_backtrack: bool| async move {
        let driver = demo_driver(MASCOT);
        let settings = Settings { depth: 2, no_backtrack, ..Settings::default() };
        let mut run = new_run(&driver, question, named(&["Lou Seal"]), settings);
        run_to_end(&driver, &mut run).await;
        run
    };
    let searched = run_with(false).await;
    assert!(mascot_at_depth_2(&searched) > 0, "by default the way back is searched (its triple skipped)");
    let run = run_with(true).await;
    assert_eq!(mascot_at_depth_2(&run), 0);
    let prompts: Vec<&str> = run.trace().iter().flat_map(|e| &e.calls).map(|c| c.prompt.as_str()).collect();
    let giants = prompts.iter().find(|p| p.contains("Topic Entity: San Francisco Giants")).expect("Giants searched");
    assert!(!giants.contains("team_mascot"), "{giants}");
    let notes: Vec<&String> = run.trace().iter().flat_map(|e| &e.notes).collect();
    let said = "not searched back along the relation that reached it: Lou Seal <- sports.sports_team.team_mascot <- San Francisco Giants";
    assert!(notes.iter().any(|n| n.as_str() == said), "{notes:?}");
}

/// A model that names a topic the KG does not have, one the question does not mention (small
/// models echo the prompt's example, which the demo KG has: Sydney Opera House) or none at all:
/// KG labels that occur in the question are tried, and the run says so; with no label in the
/// question either, the error lists the closest labels to what the model named.
#[tokio::test]
async fn topics_the_model_cannot_name_are_found_in_the_question() {
    for reply in ["{Mount Everest}", "I am not sure.", "{Sydney Opera House}"] {
        let extra = format!("[[reply]]\nstep = \"topic_entities\"\ntext = \"{reply}\"\n");
        let driver = demo_driver(&extra);
        let mut run = new_run(&driver, CANBERRA, Topics::Extract, Settings::default());
        run_to_end(&driver, &mut run).await;
        assert_eq!(run.answer().unwrap().answers, vec!["Australian Labor Party"], "{reply}");
        let linking: Vec<&str> = run.trace().iter().flat_map(|e| e.notes.iter().map(String::as_str)).collect();
        assert!(
            linking.iter().any(|n| n.contains("\"Canberra\" in the question is a KG label (exact)")),
            "{linking:?}"
        );
        if reply.contains("Sydney") {
            assert!(
                linking.contains(
                    &"set aside what the model named from the prompt's examples, not the question: Sydney Opera House"
                ),
                "{linking:?}"
            );
        }
    }
    let extra = "[[reply]]\nstep = \"topic_entities\"\ntext = \"{Zzyzx}\"\n";
    let driver = demo_driver(extra);
    let mut run = new_run(&driver, "What is the weather like today?", Topics::Extract, Settings::default());
    let err = loop {
        match driver.step(&mut run).await {
            Ok(_) if run.answer().is_none() => continue,
            Ok(_) => panic!("answered: {:?}", run.answer()),
            Err(e) => break e.to_string(),
        }
    };
    assert!(err.contains("Zzyzx"), "{err}");
}

/// A name the question words otherwise (not the prompt's example) links as usual: "Down Under"
/// is Australia.
#[tokio::test]
async fn a_topic_the_question_words_otherwise_is_still_linked() {
    let extra = "[[reply]]\nstep = \"topic_entities\"\ntext = \"{Australia}\"\n";
    let driver = demo_driver(extra);
    let mut run = new_run(&driver, "Which party governs Down Under?", Topics::Extract, Settings::default());
    run_until(&driver, &mut run, "relation_search").await;
    let roots: Vec<&str> = run.beam().roots().map(|r| r.shown()).collect();
    assert_eq!(roots, ["Australia"]);
    let notes: Vec<&String> = run.trace().iter().flat_map(|e| &e.notes).collect();
    assert!(notes.iter().all(|n| !n.starts_with("set aside")), "{notes:?}");
}

/// ToG-R: a chain's score is shared among every entity it reached, those sampled out of an
/// oversized set included, so 25 values of one relation (5 sampled) cannot outweigh the one
/// entity of another.
#[tokio::test]
async fn tog_r_shares_a_chain_score_among_every_entity_it_reached() {
    let dir = tempfile::tempdir().unwrap();
    let kb = dir.path().join("kb.txt");
    let mut lines: Vec<String> = (0..25).map(|i| format!("hub\tvalue\tv{i:02}")).collect();
    lines.push("hub\tnext\tgoal".into());
    std::fs::write(&kb, lines.join("\n")).unwrap();
    let (graph, _) = ongraph::testing::kg::load_file(&kb, ongraph::kg::KgProfile::named_ids(), false).unwrap();
    let script = "[[reply]]\nstep = \"relation_prune\"\ntext = \"{value (Score: 0.5)} {next (Score: 0.5)}\"\n";
    let model = ongraph::testing::llm::ScriptedModel::from_toml("test", script).unwrap();
    let driver = ongraph::testing::driver::Driver::new(std::sync::Arc::new(graph), std::sync::Arc::new(model));
    let settings = Settings { method: MethodId::TOG_R, ..Settings::default() };
    let mut run = new_run(&driver, "Which value?", named(&["hub"]), settings);
    run_until(&driver, &mut run, "reasoning").await;
    let beam = run.beam();
    let score = |label: &str| beam.nodes.iter().find(|n| n.shown() == label && n.score.is_some()).and_then(|n| n.score);
    assert_eq!(score("goal"), Some(1.0));
    let sampled: Vec<f64> = beam
        .nodes
        .iter()
        .filter(|n| matches!(n.kind, NodeKind::Entity { .. }) && n.shown().starts_with('v'))
        .filter(|n| n.status != Status::PrunedBySample)
        .filter_map(|n| n.score)
        .collect();
    assert_eq!(sampled.len(), 5, "5 of 25 sampled before the draw");
    assert!(sampled.iter().all(|s| (s - 1.0 / 25.0).abs() < 1e-9), "{sampled:?}");
}

#[tokio::test]
async fn a_reply_naming_thousands_of_topics_looks_up_a_few() {
    let names: String = (0..5000).map(|i| format!("{{Name {i}}} ")).collect();
    let extra = format!("[[reply]]\nstep = \"topic_entities\"\ntext = \"{{Canberra}} {names}\"\n");
    let driver = demo_driver(&extra);
    let mut run = new_run(&driver, CANBERRA, Topics::Extract, Settings { depth: 1, ..Settings::default() });
    run_until(&driver, &mut run, "topic_linking").await;
    let lookups: usize = run.trace().iter().map(|e| e.lookups.len()).sum();
    assert!(lookups <= 8, "{lookups} lookups");
    let notes: Vec<&String> = run.trace().iter().flat_map(|e| &e.notes).collect();
    assert!(notes.iter().any(|n| n.contains("named 5001 topic entities; the first 8")), "{notes:?}");
}

/// The relation node shown as `name` (its display name) at `depth`, with its direction arrow
/// when given as `-> name` or `<- name`.
fn relation_at(run: &ongraph::engine::Run, name: &str, depth: u32) -> usize {
    let (arrow, shown_name) = match name.split_once(' ') {
        Some((a @ ("->" | "<-"), rest)) => (Some(a), rest),
        _ => (None, name),
    };
    run.beam()
        .nodes
        .iter()
        .find(|n| {
            n.depth == depth
                && matches!(&n.kind, NodeKind::Relation { shown, direction, .. }
                    if shown == shown_name && arrow.is_none_or(|a| a == direction.arrow()))
        })
        .unwrap_or_else(|| panic!("no relation {name} at depth {depth}"))
        .id
}

/// The issue's case: keeping a relation the model scored 0 whose one entity needs no scoring
/// call. Its entity is scored, not pruned by score (the relation's 0 does not count against
/// it), and the trace says it was kept because of the user's keep.
#[tokio::test]
async fn a_kept_zero_scored_relation_keeps_its_entity() {
    let driver = demo_driver("");
    let mut run = new_run(&driver, CANBERRA, named(&["Canberra"]), Settings::default());
    run_until(&driver, &mut run, "entity_search").await;
    let zones = relation_at(&run, "-> location.location.time_zones", 1);
    assert_eq!(run.beam().nodes[zones].score, Some(0.0), "the model scored it 0");
    run.apply(Override::Keep { node: zones }).unwrap();
    run_until(&driver, &mut run, "reasoning").await;
    let beam = run.beam();
    let aest = beam.nodes[zones].children[0];
    let node = &beam.nodes[aest];
    assert_eq!(node.shown(), "Australian Eastern Time Zone");
    assert_eq!(node.status, Status::Kept, "{:?}", node.reason);
    assert_eq!(node.reason.as_deref(), Some("kept: under location.location.time_zones, which you kept"));
    assert_eq!((node.score, node.path_score), (Some(1.0), 0.0), "its scores are the model's");
    let prune = run.trace().iter().rfind(|e| e.phase() == Some("entity_prune")).unwrap();
    assert!(
        prune.notes.iter().any(|n| n.starts_with(
            "under the relation location.location.time_zones of Canberra, which you kept (the model scored it 0): kept Australian Eastern Time Zone"
        )),
        "{:?}",
        prune.notes
    );
    // The model's own choices are untouched: Australia and the ACT, as without the keep.
    let kept: Vec<&str> = beam
        .nodes
        .iter()
        .filter(|n| n.depth == 1 && n.term().is_some() && n.status.is_live())
        .map(|n| n.shown())
        .collect();
    assert_eq!(kept, ["Australian Capital Territory", "Australia", "Australian Eastern Time Zone"]);
    let reasoning = run.poll();
    let ongraph::engine::Poll::Need(requests) = reasoning else { panic!("the check is due") };
    let ongraph::engine::Request::Llm(check) = &requests[0] else { panic!("an LLM call") };
    assert!(check.prompt.contains("Canberra, location.location.time_zones, Australian Eastern Time Zone"));
}

/// Keeping a pruned relation with several entities: they are scored by the model and all kept
/// (up to the beam width), beside the model's own N. (`tests/steering.rs` takes this branch of
/// the demo to its answer.)
#[tokio::test]
async fn a_kept_relation_brings_its_scored_entities_beside_the_beam() {
    let script = r#"
[[reply]]
step = "entity_prune"
contains = ["Relation: government.political_party.country (incoming)\n"]
text = "Score: 0.7, 0.3"
"#;
    let driver = demo_driver(script);
    let mut run = new_run(&driver, CANBERRA, named(&["Canberra"]), Settings::default());
    run_until_depth(&driver, &mut run, 2, "entity_search").await;
    let parties = relation_at(&run, "<- government.political_party.country", 2);
    assert_eq!(run.beam().nodes[parties].status, Status::PrunedByScore);
    run.apply(Override::Keep { node: parties }).unwrap();
    run_until(&driver, &mut run, "reasoning").await;
    let beam = run.beam();
    let scored: Vec<(&str, Status, Option<f64>, f64)> = beam.nodes[parties]
        .children
        .iter()
        .map(|&p| (beam.nodes[p].shown(), beam.nodes[p].status, beam.nodes[p].score, beam.nodes[p].path_score))
        .collect();
    assert_eq!(
        scored,
        [
            ("Australian Labor Party", Status::Kept, Some(0.7), 0.0),
            ("Liberal Party of Australia", Status::Kept, Some(0.3), 0.0)
        ]
    );
    let live = beam.nodes.iter().filter(|n| n.depth == 2 && n.term().is_some() && n.status.is_live()).count();
    assert_eq!(live, 3 + 2, "the model's 3 and the 2 parties");
    let ongraph::engine::Poll::Need(requests) = run.poll() else { panic!("the check is due") };
    let ongraph::engine::Request::Llm(check) = &requests[0] else { panic!("an LLM call") };
    assert!(check.prompt.contains("Liberal Party of Australia, government.political_party.country, Australia"));
}

/// Keeping an entity the model scored 0 protects its next hop: the entities its relations
/// reach are scored but not pruned for the 0 above them. A kept entity whose relations the
/// model all scores 0 keeps the best of them, so the keep reaches that next hop.
#[tokio::test]
async fn a_kept_zero_scored_entity_keeps_its_next_hop() {
    let script = r#"
[[reply]]
step = "entity_prune"
contains = ["Q: What is the majority party now in the country where Canberra is located?", "Relation: location.location.containedby\n"]
text = "{Australia (Score: 1.0)}, {Australian Capital Territory (Score: 0.0)}"
[[reply]]
step = "relation_prune"
contains = ["Q: What is the majority party now in the country where Canberra is located?", "Topic Entity: Australian Capital Territory\n"]
text = "{location.location.containedby (Score: 0.0)} {location.administrative_division.capital (Score: 0.0)}"
"#;
    let driver = demo_driver(script);
    let mut run = new_run(&driver, CANBERRA, named(&["Canberra"]), Settings::default());
    run_until(&driver, &mut run, "reasoning").await;
    let act = run.beam().nodes.iter().find(|n| n.shown() == "Australian Capital Territory").unwrap().id;
    assert_eq!(
        (run.beam().nodes[act].status, run.beam().nodes[act].reason.as_deref()),
        (Status::PrunedByScore, Some("scored 0"))
    );
    run.apply(Override::Keep { node: act }).unwrap();
    run_until(&driver, &mut run, "entity_search").await;
    let prune = run.trace().iter().rfind(|e| e.phase() == Some("relation_prune")).unwrap();
    assert!(
        prune.notes.iter().any(|n| n.contains("the model kept none of the relations of Australian Capital Territory")),
        "{:?}",
        prune.notes
    );
    let kept: Vec<usize> =
        run.beam().nodes[act].children.iter().copied().filter(|&r| run.beam().nodes[r].status.is_live()).collect();
    assert_eq!(kept.len(), 1, "the best of its relations, the first listed as all scored 0");
    run_until(&driver, &mut run, "reasoning").await;
    let beam = run.beam();
    let reached = &beam.nodes[beam.nodes[kept[0]].children[0]];
    assert_eq!(reached.status, Status::Kept, "{:?}", reached.reason);
    assert_eq!(reached.reason.as_deref(), Some("kept: under Australian Capital Territory, which you kept"));
    assert_eq!(reached.path_score, 0.0);
}

/// ToG-R draws what is below a kept relation apart from its own draw: a relation the model
/// scored 0 (weight 0, drawn last) still brings its entity.
#[tokio::test]
async fn tog_r_draws_what_a_kept_relation_reaches_apart() {
    let driver = demo_driver("");
    let settings = Settings { method: MethodId::TOG_R, seed: 7, ..Settings::default() };
    let mut run = new_run(&driver, LOU_SEAL, named(&["Lou Seal"]), settings);
    run_until_depth(&driver, &mut run, 2, "entity_search").await;
    let arena = relation_at(&run, "-> sports.sports_team.arena_stadium", 2);
    assert_eq!(run.beam().nodes[arena].score, Some(0.0));
    run.apply(Override::Keep { node: arena }).unwrap();
    run_until(&driver, &mut run, "reasoning").await;
    let beam = run.beam();
    let oracle = &beam.nodes[beam.nodes[arena].children[0]];
    assert_eq!(oracle.shown(), "Oracle Park");
    assert_eq!(
        (oracle.status, oracle.reason.as_deref()),
        (Status::Kept, Some("kept: under sports.sports_team.arena_stadium, which you kept"))
    );
    let drawn = beam
        .nodes
        .iter()
        .filter(|n| n.depth == 2 && n.term().is_some() && n.status == Status::Kept && n.id != oracle.id)
        .count();
    assert_eq!(drawn, 3, "the draw of N is the model's as before");
}

/// Pinning a relation the model kept (a keep that changes nothing) leaves every choice of the
/// model's as it was: its best candidates keep their places, the protection only adds.
#[tokio::test]
async fn pinning_what_the_model_kept_changes_none_of_its_choices() {
    let statuses = |run: &ongraph::engine::Run| -> Vec<(String, Status, Option<String>)> {
        let beam = run.beam();
        beam.nodes
            .iter()
            .filter(|n| n.term().is_some())
            .map(|n| (beam.path_text(n.id), n.status, n.reason.clone()))
            .collect()
    };
    let driver = demo_driver("");
    let mut plain = new_run(&driver, CANBERRA, named(&["Canberra"]), Settings::default());
    run_until(&driver, &mut plain, "reasoning").await;
    let mut pinned = new_run(&driver, CANBERRA, named(&["Canberra"]), Settings::default());
    run_until(&driver, &mut pinned, "entity_search").await;
    let containedby = relation_at(&pinned, "-> location.location.containedby", 1);
    pinned.apply(Override::Pin { node: containedby }).unwrap();
    run_until(&driver, &mut pinned, "reasoning").await;
    assert_eq!(statuses(&pinned), statuses(&plain));
    let australia =
        pinned.beam().nodes[containedby].children.iter().find(|&&c| pinned.beam().nodes[c].shown() == "Australia");
    assert_eq!(pinned.beam().nodes[*australia.unwrap()].status, Status::Kept, "it still holds Australia's place");
}

/// After the answer, changes that cannot change it are refused in words (and not recorded);
/// forcing another depth after a "sufficient" is still taken.
#[tokio::test]
async fn overrides_after_the_answer_are_refused_in_words() {
    let driver = demo_driver("");
    let mut run = new_run(&driver, PHANATIC, named(&["Phillie Phanatic"]), Settings::default());
    run_to_end(&driver, &mut run).await;
    let steps = run.trace().len();
    let leaf = run.answer().unwrap().paths[0].leaf;
    for o in [
        Override::Pin { node: leaf },
        Override::PrunePath { node: leaf },
        Override::Keep { node: leaf },
        Override::Drop { node: leaf },
        Override::ForceSufficient,
    ] {
        let what = o.describe_in(run.beam());
        let err = run.apply(o).unwrap_err().to_string();
        assert_eq!(
            err,
            format!(
                "cannot {what} now: the run has already answered; go back to an earlier step to change how it got there"
            )
        );
    }
    assert_eq!(run.trace().len(), steps, "nothing recorded");
    assert!(run.is_finished());
    run.apply(Override::ForceContinue).unwrap();
    assert!(!run.is_finished(), "forced on: depth {}", run.depth());
}

/// Going back says what it sets aside: the steps, the overrides in words, and the answer.
#[tokio::test]
async fn a_rewind_says_what_it_sets_aside() {
    let driver = demo_driver("");
    let mut run = new_run(&driver, CANBERRA, named(&["Canberra"]), Settings::default());
    run_until(&driver, &mut run, "entity_search").await;
    let back_to = run.trace().len() - 1;
    let zones = relation_at(&run, "-> location.location.time_zones", 1);
    let bibs = relation_at(&run, "-> base.biblioness.bibs_location.country", 1);
    run.apply(Override::Keep { node: zones }).unwrap();
    run.apply(Override::Drop { node: bibs }).unwrap();
    driver.step(&mut run).await.unwrap();
    let preview = run.rewind_preview(back_to).unwrap();
    assert_eq!(preview.steps, vec!["depth 1: 4 candidate entities".to_string()]);
    assert_eq!(
        preview.overrides,
        ["kept location.location.time_zones", "dropped base.biblioness.bibs_location.country"]
    );
    assert_eq!(preview.answer, None);
    assert_eq!(
        preview.describe(),
        "1 step and 2 overrides (kept location.location.time_zones, dropped base.biblioness.bibs_location.country)"
    );
    let at = run.rewind(back_to).unwrap();
    assert_eq!(run.abandoned().last().unwrap().set_aside(), preview, "the preview is what happened");
    // The trace entry keeps the wording sessions saved before this compare with.
    let entries = preview.steps.len() + preview.overrides.len() + preview.rewinds;
    assert_eq!(run.trace()[at].summary, format!("rewound to step {back_to}; {entries} later steps set aside"));
    assert!(run.rewind_preview(at).unwrap().is_empty(), "going back to the last entry sets nothing aside");
    assert_eq!(run.rewind_preview(at).unwrap().describe(), "nothing");
    assert!(run.rewind_preview(10_000).is_err());

    run_to_end(&driver, &mut run).await;
    let preview = run.rewind_preview(back_to).unwrap();
    assert_eq!(preview.answer, Some(vec!["Australian Labor Party".to_string()]));
    assert!(preview.describe().ends_with(" and the answer Australian Labor Party"), "{}", preview.describe());
    assert_eq!(preview.rewinds, 1);
}

/// A change that would leave nothing for the next step to explore is refused in words and
/// changes nothing; one that leaves something is taken. Dropping or pruning what you pinned
/// says it unpins it.
#[tokio::test]
async fn a_change_leaving_nothing_to_explore_is_refused_and_unpinning_is_said() {
    let driver = demo_driver("");
    let mut run = new_run(&driver, CANBERRA, named(&["Canberra"]), Settings::default());
    run_until(&driver, &mut run, "entity_search").await;
    let root = run.beam().roots().next().unwrap().id;
    let containedby = relation_at(&run, "-> location.location.containedby", 1);
    let bibs = relation_at(&run, "-> base.biblioness.bibs_location.country", 1);
    let capital = relation_at(&run, "<- location.country.capital", 1);
    run.apply(Override::Pin { node: root }).unwrap();
    let nothing = "would leave nothing to explore (keep another path first)";
    let err = run.apply(Override::PrunePath { node: root }).unwrap_err().to_string();
    assert_eq!(err, format!("cannot prune the path at Canberra: it {nothing}"));
    assert_eq!(run.beam().nodes[root].status, Status::PinnedByUser, "the refused change changed nothing");
    assert!(run.beam().nodes[capital].status.is_live());

    run.apply(Override::Drop { node: containedby }).unwrap();
    run.apply(Override::Pin { node: bibs }).unwrap();
    let at = run.apply(Override::Drop { node: bibs }).unwrap();
    assert_eq!(run.trace()[at].summary, "unpinned and dropped base.biblioness.bibs_location.country");
    let entries = run.trace().len();
    let err = run.apply(Override::Drop { node: capital }).unwrap_err().to_string();
    assert_eq!(err, format!("cannot drop location.country.capital under Canberra: it {nothing}"));
    assert_eq!(run.trace().len(), entries, "nothing recorded");
    let err = run.apply(Override::PrunePath { node: capital }).unwrap_err().to_string();
    assert!(err.ends_with(nothing), "{err}");

    // After the entity prune: pruning a pinned path says so; the last path cannot go.
    run.apply(Override::Keep { node: containedby }).unwrap();
    run_until(&driver, &mut run, "reasoning").await;
    let live: Vec<usize> = run
        .beam()
        .nodes
        .iter()
        .filter(|n| n.depth == 1 && n.term().is_some() && n.status.is_live())
        .map(|n| n.id)
        .collect();
    assert!(live.len() >= 2, "{live:?}");
    run.apply(Override::Pin { node: live[0] }).unwrap();
    let at = run.apply(Override::PrunePath { node: live[0] }).unwrap();
    let text = run.beam().path_text(live[0]);
    assert_eq!(run.trace()[at].summary, format!("unpinned and pruned {text}"));
    for &n in &live[1..live.len() - 1] {
        run.apply(Override::Drop { node: n }).unwrap();
    }
    let last = *live.last().unwrap();
    let err = run.apply(Override::Drop { node: last }).unwrap_err().to_string();
    assert!(err.ends_with(nothing), "{err}");
    run.apply(Override::ForceSufficient).unwrap();
}

/// The override made since the last step can be taken back alone, by going back to the entry
/// before it: the step and the earlier overrides stand.
#[tokio::test]
async fn the_last_override_since_the_last_step_can_be_taken_back_alone() {
    let driver = demo_driver("");
    let mut run = new_run(&driver, CANBERRA, named(&["Canberra"]), Settings::default());
    run_until(&driver, &mut run, "entity_search").await;
    assert_eq!(run.last_override(), None, "the last entry is a step");
    let zones = relation_at(&run, "-> location.location.time_zones", 1);
    let bibs = relation_at(&run, "-> base.biblioness.bibs_location.country", 1);
    let step = run.trace().len() - 1;
    run.apply(Override::Drop { node: bibs }).unwrap();
    run.apply(Override::Keep { node: zones }).unwrap();
    assert_eq!(run.last_override(), Some((step + 1, "kept location.location.time_zones")));
    run.rewind(step + 1).unwrap();
    assert_eq!(run.beam().nodes[zones].status, Status::PrunedByScore);
    assert_eq!(run.beam().nodes[bibs].status, Status::PrunedByUser);
    // A rewind entry is not an override: the one before it is still in effect.
    assert_eq!(run.last_override(), Some((step, "dropped base.biblioness.bibs_location.country")));
    run.rewind(step).unwrap();
    assert!(run.beam().nodes[bibs].status.is_live());
    assert_eq!(run.last_override(), None);
    driver.step(&mut run).await.unwrap();
    assert_eq!(run.last_override(), None);
}
