//! The prompt-only baselines the papers compare against: IO (answer directly), CoT (think step
//! by step after exemplars, answer in braces) and self-consistency (k chain-of-thought samples at
//! a sampling temperature, the majority answer). They never touch the KG; answers are read and
//! costs counted exactly as for the graph methods, so the numbers compare.

use crate::engine::events::Event;
use crate::engine::method::{Method, MethodView};
use crate::engine::parse::parse_answers;
use crate::engine::simulate::{Simulation, own_knowledge};
use crate::engine::step::{completion, record, unreadable};
use crate::engine::structured::{ANSWER, REASONED_ANSWER, ReplyShape};
use crate::engine::{Answer, AnswerSource, Context, EngineError, Request, Response};
use crate::prompts::{Template, builtin_template};

pub(crate) const IO: Template =
    builtin_template!("io", "IO: answering from the model's own knowledge", ["question"], Some("answer"));
pub(crate) const COT: Template =
    builtin_template!("cot", "CoT: reasoning from the model's own knowledge", ["question"], Some("answer"));

/// The baselines answer from the model's own knowledge, which a gold-path simulation has none of.
pub(crate) const IO_SIMULATION: &[Simulation] = &[Simulation { template: "io", reply: own_knowledge }];
pub(crate) const COT_SIMULATION: &[Simulation] = &[Simulation { template: "cot", reply: own_knowledge }];

/// How a baseline asks.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Prompting {
    Io,
    Cot,
    SelfConsistency,
}

#[derive(Clone, Debug)]
pub(crate) struct BaselineMachine {
    prompting: Prompting,
    done: bool,
}

impl BaselineMachine {
    pub fn new(prompting: Prompting) -> Self {
        Self { prompting, done: false }
    }

    /// One call (IO, CoT), or k samples of the chain-of-thought prompt, all at once (SC).
    fn requests(&self, cx: &Context) -> Vec<Request> {
        if self.done {
            return Vec::new();
        }
        let s = &cx.settings;
        let question = cx.question.as_str();
        match self.prompting {
            Prompting::Io => {
                vec![cx.llm("io", cx.render(IO, &[("question", question)]), s.reason_temperature, io_shape(cx))]
            }
            Prompting::SelfConsistency => {
                let prompt = cx.prompts.render(COT, &[("question", question)]);
                (0..s.sc.samples.max(1) as u32)
                    .map(|sample| {
                        cx.llm_sample("cot", prompt.clone(), s.sc.sample_temperature, sample, &REASONED_ANSWER)
                    })
                    .collect()
            }
            Prompting::Cot => vec![cx.llm(
                "cot",
                cx.prompts.render(COT, &[("question", question)]),
                s.reason_temperature,
                &REASONED_ANSWER,
            )],
        }
    }
}

/// How IO's reply is asked for. Its answer comes from the model's own knowledge, so under
/// structured replies it is asked like every own-knowledge answer: free text with the paper's
/// examples, its answer extracted by a second call only when the reply names none in braces
/// (issue 25, 1.5B model, 50 questions: one constrained call left 10 answers empty where the
/// free replies left 5 unread). Prompts that carry IO's one-call JSON variant (a session saved
/// while IO had one, a user's `json/io.txt`) ask as that variant shows, and prompts saved before
/// there were variants as JSON of the answer, as then: both replay.
fn io_shape(cx: &Context) -> &'static ReplyShape {
    if cx.reasons_then_formats() && !cx.prompts.has_variant(IO) { &REASONED_ANSWER } else { &ANSWER }
}

impl Method for BaselineMachine {
    type Plan = ();

    fn next(&mut self, cx: &mut Context) -> (Vec<Request>, ()) {
        (self.requests(cx), ())
    }

    fn phase(&self) -> &'static str {
        if self.done { "done" } else { "answer" }
    }

    fn view(&self, _cx: &Context) -> MethodView {
        MethodView {
            title: "Paths in front of the model".into(),
            empty: "A prompt-only baseline: it never looks at the KG, so there is no path to show.".into(),
            ..MethodView::default()
        }
    }

    fn absorb(
        &mut self,
        cx: &mut Context,
        _plan: &(),
        requests: &[Request],
        responses: Vec<Response>,
    ) -> Result<Event, EngineError> {
        if self.done {
            return Err(EngineError::Finished);
        }
        let mut ev = Event::step(cx.next_index(), "answer", 0);
        let mut votes: Vec<Vec<String>> = Vec::new();
        for (i, request) in requests.iter().enumerate() {
            let c = completion(&responses, i)?;
            let answers = parse_answers(&c.text).unwrap_or_default();
            let parsed = if answers.is_empty() { "(no answer)".to_string() } else { answers.join(" | ") };
            ev.calls.push(record(request, c, parsed));
            if answers.is_empty() {
                unreadable(&mut ev);
            }
            votes.push(answers);
        }
        let unanswered = votes.iter().filter(|v| v.is_empty()).count();
        if unanswered > 0 {
            ev.notes.push(format!("{unanswered} of {} replies gave no answer in braces", votes.len()));
        }
        let (answers, agreeing) = majority(&votes);
        let reply = match agreeing.first() {
            Some(&i) => ev.calls[i].reply.clone(),
            None => ev.calls.first().map(|c| c.reply.clone()).unwrap_or_default(),
        };
        ev.summary = match (answers.first(), votes.len()) {
            (None, _) => "no answer".into(),
            (Some(a), 1) => format!("answer {a}"),
            (Some(a), n) => format!("answer {a} ({} of {n} samples agree)", agreeing.len()),
        };
        cx.answer = Some(Answer { answers, source: AnswerSource::ModelOnly, reply, paths: Vec::new(), why: None });
        self.done = true;
        Ok(ev)
    }

    fn apply(&mut self, _cx: &mut Context, o: &crate::engine::Override) -> Result<String, EngineError> {
        Err(EngineError::BadOverride { what: o.describe(), why: "a prompt-only baseline has no beam to change".into() })
    }
}

/// The answer most samples give (compared lower-cased, without spaces or punctuation at the
/// ends, as in the papers' metric); a tie goes to the answer given first. Returns the winning
/// sample's answers and the indices of the samples that agree with it.
pub fn majority(votes: &[Vec<String>]) -> (Vec<String>, Vec<usize>) {
    let key = |a: &str| -> String {
        a.trim_matches(|c: char| !c.is_alphanumeric()).to_lowercase().chars().filter(|c| !c.is_whitespace()).collect()
    };
    let mut tallies: Vec<(String, Vec<usize>)> = Vec::new();
    for (i, answers) in votes.iter().enumerate() {
        let Some(first) = answers.first() else { continue };
        let k = key(first);
        match tallies.iter_mut().find(|(t, _)| *t == k) {
            Some((_, who)) => who.push(i),
            None => tallies.push((k, vec![i])),
        }
    }
    // `max_by_key` keeps the last of equals; the first given should win a tie.
    let best = tallies.iter().rev().max_by_key(|(_, who)| who.len());
    match best {
        Some((_, who)) => (votes[who[0]].clone(), who.clone()),
        None => (Vec::new(), Vec::new()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn v(items: &[&[&str]]) -> Vec<Vec<String>> {
        items.iter().map(|a| a.iter().map(|s| s.to_string()).collect()).collect()
    }

    #[test]
    fn the_majority_wins_normalised_and_ties_go_to_the_first() {
        let votes = v(&[&["Liberal Party"], &["Australian Labor Party"], &["australian labor party."], &[]]);
        assert_eq!(majority(&votes), (vec!["Australian Labor Party".to_string()], vec![1, 2]));
        let tie = v(&[&["A"], &["B"], &["B"], &["A"]]);
        assert_eq!(majority(&tie).0, vec!["A"]);
        assert_eq!(majority(&v(&[&[], &[]])), (Vec::new(), Vec::new()));
    }
}
