//! The prompt-only baselines (IO, CoT, self-consistency) on a script of their own beside the demo
//! KG (the offline demo records no baseline replies: they would name answers no prompt shows):
//! answers, votes, call and round counts, and that they refuse beam overrides.

mod common;

use common::{demo_driver, new_run, run_to_end};
use ongraph::engine::{AnswerSource, MethodId, Override, ScSettings, Settings, Topics};

/// IO, CoT and self-consistency replies to the Canberra question.
const BASELINES: &str = include_str!("fixtures/baselines-model.toml");
const CANBERRA: &str = "What is the majority party now in the country where Canberra is located?";

fn settings(method: MethodId) -> Settings {
    Settings { method, ..Settings::default() }
}

#[tokio::test]
async fn io_answers_in_one_call_without_the_kg() {
    let driver = demo_driver(BASELINES);
    let mut run = new_run(&driver, CANBERRA, Topics::Extract, settings(MethodId::IO));
    run_to_end(&driver, &mut run).await;
    let answer = run.answer().unwrap();
    assert_eq!(answer.answers, vec!["Liberal Party of Australia"]);
    assert_eq!(answer.source, AnswerSource::ModelOnly);
    assert!(answer.paths.is_empty());
    let costs = run.costs();
    assert_eq!((costs.llm_calls, costs.llm_rounds, costs.kg_lookups), (1, 1, 0));
    assert_eq!(run.trace().len(), 1);
    assert_eq!(run.trace()[0].calls[0].step, "io");
}

#[tokio::test]
async fn cot_reads_the_braced_answer() {
    let driver = demo_driver(BASELINES);
    let mut run = new_run(&driver, CANBERRA, Topics::Extract, settings(MethodId::COT));
    run_to_end(&driver, &mut run).await;
    assert_eq!(run.answer().unwrap().answers, vec!["Australian Labor Party"], "the first CoT reply");
    assert_eq!(run.costs().llm_calls, 1);
}

#[tokio::test]
async fn self_consistency_votes_over_distinct_samples_sent_at_once() {
    let driver = demo_driver(BASELINES);
    let mut run = new_run(&driver, CANBERRA, Topics::Extract, settings(MethodId::SC));
    run_to_end(&driver, &mut run).await;
    let event = &run.trace()[0];
    assert_eq!(event.calls.len(), 5);
    assert!(event.calls.iter().all(|c| c.temperature == 0.7 && !c.cached), "samples are not memo hits");
    // Labor (samples 0, 2 and 4, one in lower case) beats Liberal (1); sample 3 gave none.
    assert_eq!(run.answer().unwrap().answers, vec!["Australian Labor Party"]);
    assert_eq!(event.summary, "answer Australian Labor Party (3 of 5 samples agree)");
    assert_eq!(event.notes, vec!["1 of 5 replies gave no answer in braces"]);
    let costs = run.costs();
    assert_eq!((costs.llm_calls, costs.llm_rounds), (5, 1), "one round: the samples are independent");

    // k is a setting; with k = 2 the tie goes to the first sample. The same driver already
    // made these two calls: they are reused, not repeated.
    let mut run = new_run(
        &driver,
        CANBERRA,
        Topics::Extract,
        Settings { sc: ScSettings { samples: 2, ..ScSettings::default() }, ..settings(MethodId::SC) },
    );
    run_to_end(&driver, &mut run).await;
    assert_eq!(run.answer().unwrap().answers, vec!["Australian Labor Party"]);
    assert_eq!((run.costs().llm_calls, run.costs().llm_calls_saved), (0, 2));
}

#[tokio::test]
async fn a_baseline_has_no_beam_to_override_and_a_missing_answer_is_said() {
    let driver = demo_driver(
        r#"
[[reply]]
step = "io"
text = "I would rather not say."
"#,
    );
    let mut run = new_run(&driver, "Who?", Topics::Extract, settings(MethodId::IO));
    let err = run.apply(Override::ForceSufficient).unwrap_err();
    assert!(err.to_string().contains("no beam to change"), "{err}");
    run_to_end(&driver, &mut run).await;
    assert!(run.answer().unwrap().answers.is_empty());
    assert_eq!(run.trace()[0].summary, "no answer");
}
