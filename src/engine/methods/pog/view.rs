//! The method pane's view of a PoG run: the report first, then the candidate paths.

use super::PogMachine;
use crate::engine::Context;
use crate::engine::method::{Method, MethodView, ViewLine};

impl PogMachine {
    /// The candidate paths, beside the report, most telling first (the pane is short): the
    /// indicator, the depth and the subgraph, each stage's pruning counts and verdict, the
    /// answer's stage, then the details.
    pub(super) fn method_view(&self, cx: &Context) -> MethodView {
        let r = &self.report;
        let mut report = Vec::new();
        match &r.indicator {
            Some(ind) => report.push(ViewLine::labelled("indicator ", ind.clone())),
            // Analysed but unreadable: not "not yet".
            None if r.analysis_unreadable => {
                report.push(ViewLine::dim("no indicator: the model's question analysis could not be read"))
            }
            None => report.push(ViewLine::dim("question not analysed yet")),
        }
        let mut facts = Vec::new();
        if let Some(d) = r.predicted_depth {
            facts.push(format!("depth {d} of {}", cx.settings.depth));
        }
        if r.subgraph.0 > 0 {
            facts.push(format!("subgraph {} nodes, {} triples", r.subgraph.0, r.subgraph.1));
        }
        if let Some((before, after)) = r.reduced {
            facts
                .push(format!("reduced {before} → {after} nodes{}", if r.connected { " (topics joined)" } else { "" }));
        }
        if !facts.is_empty() {
            report.push(ViewLine::plain(facts.join(" · ")));
        }
        for s in &r.stages {
            let step = |name: &str, n: Option<usize>| n.map(|n| format!(" → {name} {n}")).unwrap_or_default();
            let verdict = match s.sufficient {
                Some(true) => " ✓ sufficient",
                Some(false) => " ✗ not sufficient",
                None => "",
            };
            report.push(ViewLine::plain(format!(
                "{}: {}{}{}{}{verdict}",
                s.stage,
                s.candidates,
                step("fuzzy", s.after_fuzzy),
                step("branch", s.after_branch),
                step("precise", s.after_precise)
            )));
        }
        if let Some(by) = &r.answered_by {
            report.push(ViewLine::accent(format!("answered by {by}")));
        }
        // The model's words, not the KG's: a small model may copy its prompt's examples.
        report.extend(r.summary.iter().map(|l| ViewLine::dim(format!("the model's summary: {l}"))));
        report.extend(
            r.sub_questions.iter().enumerate().map(|(i, q)| ViewLine::dim(format!("sub-question {}: {q}", i + 1))),
        );
        MethodView {
            report,
            ..MethodView::paths("PoG: question analysis, subgraph, stages · candidate paths", cx, self.live_paths(cx))
        }
    }
}
