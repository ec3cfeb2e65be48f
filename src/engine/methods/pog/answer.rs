//! What a PoG judgment may answer, and how the run ends.

use super::{Phase, PogMachine};
use crate::engine::{Answer, AnswerSource, Context};
use crate::kg::Term;

impl PogMachine {
    /// What a judgment may answer: the named entities and values on the pool's paths, the topic
    /// entities aside (the paths start at one and may end at another) and never an unnamed
    /// (mediator) node.
    pub(super) fn reachable_names(&self, cx: &Context) -> Vec<String> {
        let topics: Vec<&str> = cx.beam.roots().map(|r| r.shown()).collect();
        let mut out: Vec<String> = Vec::new();
        for &c in &self.pool {
            for &n in &self.cands[c].path.nodes {
                let node = &self.sg.nodes[n];
                if node.label.is_none() && matches!(node.term, Term::Entity(_)) {
                    continue;
                }
                let name = self.node_name(n);
                if !topics.contains(&name.as_str()) && !out.contains(&name) {
                    out.push(name);
                }
            }
        }
        out
    }

    pub(super) fn finish(&mut self, cx: &mut Context, answers: Vec<String>, reply: String, source: AnswerSource) {
        let mut on: Vec<usize> = self.selected.clone();
        if source == AnswerSource::CollectedPaths {
            for &c in &self.pool {
                if !on.contains(&c) {
                    on.push(c);
                }
            }
        }
        let paths = on.iter().map(|&c| self.path_view(cx, c)).collect();
        self.report.answered_by = Some(match source {
            AnswerSource::KgPaths => self.stage.name(),
            _ => "no stage judged sufficient: every collected path".into(),
        });
        cx.answer = Some(Answer { answers, source, reply, paths, why: None });
        self.phase = Phase::Done;
    }
}
