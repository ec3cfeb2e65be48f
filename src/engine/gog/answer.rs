//! How a GoG run ends: where its answer comes from.

use super::{GeneratedTriple, GogMachine, Phase};
use crate::engine::method::Method;
use crate::engine::{Answer, AnswerSource, Context};

impl GogMachine {
    /// What a `Finish` answer rests on: a KG triple observed that names it; else a generated
    /// triple verification kept; else nothing the run saw (the model's own knowledge, which is
    /// also what a Finish before any search is).
    pub(super) fn source_of(&self, answers: &[String]) -> AnswerSource {
        let kept: Vec<&GeneratedTriple> = self.generated.iter().filter(|g| g.kept).collect();
        let generated_line = |l: &str| kept.iter().any(|g| format!("{}, {}, {}", g.head, g.relation, g.tail) == l);
        let names = |l: &str, a: &str| {
            let (l, a) = (l.to_lowercase(), a.trim().to_lowercase());
            l.starts_with(&format!("{a}, ")) || l.ends_with(&format!(", {a}"))
        };
        let in_kg = |a: &str| self.known.iter().any(|l| !generated_line(l) && names(l, a));
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

    pub(super) fn finish(&mut self, cx: &mut Context, answers: Vec<String>, reply: String, source: AnswerSource) {
        let paths = self.live_paths(cx);
        let why = if source == AnswerSource::OwnKnowledge { self.why.clone() } else { None };
        cx.answer = Some(Answer { answers, source, reply, paths, why });
        self.phase = Phase::Done;
        self.action = None;
    }
}

/// Why a `Finish` whose answer no triple the run kept names is the model's own knowledge.
pub(super) const UNGROUNDED: &str = "the model finished without a KG path to its answer";
