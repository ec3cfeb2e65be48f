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

    /// The answers a `Finish` names, each read as what the run observed when the model wrote
    /// more than a name (small models write a triple or a sentence): a whole observed triple
    /// stands for its tail, a sentence for the longest run of its words that an observed triple
    /// names, other than a topic entity (what the sentence is about, rarely its answer). Each
    /// such reading is noted; an answer that cannot be read so is kept as written (its source
    /// is then said as it is).
    pub(super) fn read_finish(&self, cx: &Context, answers: &[String], notes: &mut Vec<String>) -> Vec<String> {
        let topics: Vec<String> = cx.beam.roots().map(|r| r.shown().to_lowercase()).collect();
        let mut read: Vec<String> = Vec::with_capacity(answers.len());
        for answer in answers {
            let taken = match self.observed_in(&topics, answer) {
                Some(name) => {
                    notes.push(format!("Finish[{answer}] is more than a name: read as {name}, which the run observed"));
                    name
                }
                None => answer.clone(),
            };
            if !read.iter().any(|r| r.eq_ignore_ascii_case(&taken)) {
                read.push(taken);
            }
        }
        read
    }

    /// What an answer that no observed triple names stands for (see [`Self::read_finish`]).
    fn observed_in(&self, topics: &[String], answer: &str) -> Option<String> {
        let lower = answer.trim().to_lowercase();
        let lines: Vec<String> = self.known.iter().map(|l| l.to_lowercase()).collect();
        let named = |a: &str| lines.iter().any(|l| line_names(l, a));
        if lower.is_empty() || named(&lower) {
            return None;
        }
        // A whole triple: its tail (when the commas leave no doubt where the tail starts).
        if let Some(at) = lines.iter().position(|l| *l == lower) {
            let parts: Vec<&str> = self.known[at].split(", ").collect();
            return (parts.len() == 3).then(|| parts[2].to_string());
        }
        // A sentence: the longest run of its words an observed triple names, topics aside.
        // Runs of at most a dozen words: no name is longer, and a long reply stays cheap.
        let bounds: Vec<(usize, usize)> = word_bounds(answer);
        let mut best: Option<&str> = None;
        for (i, &(start, _)) in bounds.iter().enumerate() {
            for &(_, end) in bounds[i..].iter().take(MAX_NAME_WORDS) {
                let span = &answer[start..end];
                let (longer, span_lower) = (best.is_none_or(|b| span.len() > b.len()), span.to_lowercase());
                if longer && named(&span_lower) && !topics.contains(&span_lower) {
                    best = Some(span);
                }
            }
        }
        best.map(str::to_string)
    }

    pub(super) fn finish(&mut self, cx: &mut Context, answers: Vec<String>, reply: String, source: AnswerSource) {
        let paths = self.live_paths(cx);
        let why = if source == AnswerSource::OwnKnowledge { self.why.clone() } else { None };
        cx.answer = Some(Answer { answers, source, reply, paths, why });
        self.phase = Phase::Done;
        self.action = None;
    }
}

/// The most words a name read out of a sentence may have.
const MAX_NAME_WORDS: usize = 12;

/// Whether the observed triple `line` ("head, relation, tail") has `answer` as its head or tail.
fn names_in_line(line: &str, answer: &str) -> bool {
    line_names(&line.to_lowercase(), &answer.trim().to_lowercase())
}

/// [`names_in_line`] on a line and an answer both lower-cased already.
fn line_names(line: &str, answer: &str) -> bool {
    !answer.is_empty()
        && (line.strip_prefix(answer).is_some_and(|rest| rest.starts_with(", "))
            || line.strip_suffix(answer).is_some_and(|rest| rest.ends_with(", ")))
}

/// The byte ranges of `text`'s words (runs of letters and digits).
fn word_bounds(text: &str) -> Vec<(usize, usize)> {
    let mut bounds = Vec::new();
    let mut start = None;
    for (i, c) in text.char_indices() {
        match (c.is_alphanumeric(), start) {
            (true, None) => start = Some(i),
            (false, Some(s)) => {
                bounds.push((s, i));
                start = None;
            }
            _ => {}
        }
    }
    if let Some(s) = start {
        bounds.push((s, text.len()));
    }
    bounds
}

/// Why a `Finish` whose answer no triple the run kept names is the model's own knowledge.
pub(super) const UNGROUNDED: &str = "the model finished without a KG path to its answer";
