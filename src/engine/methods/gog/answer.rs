//! How a GoG run ends: where its answer comes from.

use super::{GeneratedTriple, GogMachine, Phase};
use crate::engine::events::Event;
use crate::engine::method::Method;
use crate::engine::parse;
use crate::engine::step::answer_call;
use crate::engine::structured::{ANSWER, REASONED_ANSWER};
use crate::engine::templates::ANSWER_FROM_TRIPLES;
use crate::engine::{Answer, AnswerSource, Context, EngineError, Fallback, Request, Response};

impl GogMachine {
    /// Where the run answers from when it stops without a Finish: the triples it knows
    /// (observed, and generated ones verification kept), unless the settings keep the paper's
    /// own knowledge or it knows none.
    pub(super) fn answer_without_finish(&self) -> Phase {
        if self.fallback == Fallback::PartialPaths && !self.known.is_empty() {
            Phase::Answer(AnswerSource::PartialPaths)
        } else {
            Phase::Answer(AnswerSource::OwnKnowledge)
        }
    }

    /// How a note says where the answer will come from, once `phase` is an answer.
    pub(super) fn fallback_words(&self) -> &'static str {
        match self.phase {
            Phase::Answer(AnswerSource::PartialPaths) => "from the triples collected",
            _ => "without the KG",
        }
    }

    /// The answer from the triples the run knows, asked as ToG asks its partial paths.
    pub(super) fn answer_request(&self, cx: &Context) -> Vec<Request> {
        let prompt =
            cx.render_text(ANSWER_FROM_TRIPLES, &[("question", &cx.question), ("triples", &self.known.join("\n"))]);
        let shape = if cx.reasons_then_formats() { &REASONED_ANSWER } else { &ANSWER };
        vec![cx.llm("answer", prompt, cx.settings.reason_temperature, shape)]
    }

    /// Reads an answer call. From the triples collected, the answer is labelled by what names
    /// it (a KG triple, a generated one, none: the model's own words); when they give none,
    /// the model's own knowledge is asked.
    pub(super) fn on_answer(
        &mut self,
        cx: &mut Context,
        source: AnswerSource,
        requests: &[Request],
        responses: &[Response],
        ev: &mut Event,
    ) -> Result<(), EngineError> {
        let (answers, reply) = answer_call(requests, responses, ev, source, self.why.as_deref())?;
        if source != AnswerSource::PartialPaths {
            self.finish(cx, answers, reply, source);
            return Ok(());
        }
        let answers: Vec<String> = answers.into_iter().filter(|a| !parse::is_unknown(a)).collect();
        if answers.is_empty() {
            ev.notes.push("the collected triples gave no answer: asking the model's own knowledge".into());
            self.phase = Phase::Answer(AnswerSource::OwnKnowledge);
            return Ok(());
        }
        // Labelled by what names it; the step's summary says so too.
        let source = match self.source_of(&answers) {
            AnswerSource::KgPaths => AnswerSource::PartialPaths,
            AnswerSource::GeneratedTriples => {
                ev.notes.push("only a generated triple names the answer".into());
                AnswerSource::GeneratedTriples
            }
            _ => {
                let stopped = self.why.take().map(|w| format!("{w}; ")).unwrap_or_default();
                self.why = Some(format!("{stopped}no triple collected names the answer"));
                AnswerSource::OwnKnowledge
            }
        };
        ev.summary = format!("answer {} ({})", answers.join(", "), source.describe_because(self.why.as_deref()));
        self.finish(cx, answers, reply, source);
        Ok(())
    }

    /// What a `Finish` answer rests on: a KG triple observed that names it; else a generated
    /// triple verification kept; else nothing the run saw (the model's own knowledge, which is
    /// also what a Finish before any search is).
    pub(super) fn source_of(&self, answers: &[String]) -> AnswerSource {
        let kept: Vec<&GeneratedTriple> = self.generated.iter().filter(|g| g.kept).collect();
        let generated_line = |l: &str| kept.iter().any(|g| format!("{}, {}, {}", g.head, g.relation, g.tail) == l);
        let in_kg = |a: &str| self.known.iter().any(|l| !generated_line(l) && names_in_line(l, a));
        let in_generated = |a: &str| {
            kept.iter().any(|g| g.head.eq_ignore_ascii_case(a.trim()) || g.tail.eq_ignore_ascii_case(a.trim()))
        };
        if answers.iter().any(|a| in_kg(a)) {
            AnswerSource::KgPaths
        } else if answers.iter().any(|a| in_generated(a)) {
            AnswerSource::GeneratedTriples
        } else {
            AnswerSource::OwnKnowledge
        }
    }

    /// The answers a `Finish` the model wrote names: one that is a whole observed triple
    /// ("head, relation, tail", as the observations show them; small models copy one) is read
    /// as its end that is not a topic entity (the tail when neither is), with a note. Anything
    /// else is kept as written: a sentence stays the model's words, its source said as it is
    /// (picking a name out of it guesses: "not Sydney", "Ravens coach John Harbaugh").
    pub(super) fn read_finish(&self, cx: &Context, answers: &[String], notes: &mut Vec<String>) -> Vec<String> {
        let topics: Vec<String> = cx.beam.roots().map(|r| r.shown().to_lowercase()).collect();
        let mut read: Vec<String> = Vec::with_capacity(answers.len());
        for answer in answers {
            let taken = match self.triple_end(&topics, answer) {
                Some(end) => {
                    notes.push(format!("Finish[{answer}] writes a whole observed triple: read as {end}"));
                    end
                }
                None => answer.clone(),
            };
            if !read.iter().any(|r| r.eq_ignore_ascii_case(&taken)) {
                read.push(taken);
            }
        }
        read
    }

    /// The end of the observed triple `answer` writes out, if it is one (and its commas leave
    /// no doubt where the ends are): the one that is not a topic entity, else the tail.
    fn triple_end(&self, topics: &[String], answer: &str) -> Option<String> {
        let written = answer.trim();
        let line = self.known.iter().find(|l| l.to_lowercase() == written.to_lowercase())?;
        let [head, _, tail] = line.split(", ").collect::<Vec<_>>()[..] else { return None };
        let is_topic = |name: &str| topics.contains(&name.to_lowercase());
        Some(if is_topic(tail) && !is_topic(head) { head } else { tail }.to_string())
    }

    pub(super) fn finish(&mut self, cx: &mut Context, answers: Vec<String>, reply: String, source: AnswerSource) {
        let paths = self.live_paths(cx);
        // Set only when the run stopped without a Finish, or a Finish rests on no triple.
        let why = if source == AnswerSource::KgPaths { None } else { self.why.clone() };
        cx.answer = Some(Answer { answers, source, reply, paths, why });
        self.phase = Phase::Done;
        self.action = None;
    }
}

/// Whether the observed triple `line` ("head, relation, tail") has `answer` as its head or tail.
fn names_in_line(line: &str, answer: &str) -> bool {
    let (l, a) = (line.to_lowercase(), answer.trim().to_lowercase());
    l.starts_with(&format!("{a}, ")) || l.ends_with(&format!(", {a}"))
}

/// Why a `Finish` whose answer no triple the run kept names is the model's own knowledge.
pub(super) const UNGROUNDED: &str = "the model finished without a KG path to its answer";
