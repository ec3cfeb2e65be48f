//! The question's analysis, the question subgraph and the three exploration stages: paths
//! through the topic entities, through the entities the model predicts, one hop past the best.

use super::subgraph::SgPath;
use super::{
    Lookup, MAX_CANDIDATES, MAX_SUBGRAPH_NODES, Phase, PogMachine, SUPPLEMENT_MATCH_MIN, Stage, StageReport, parse,
};
use crate::engine::events::Event;
use crate::engine::step::{completion, plural_s, record, unreadable};
use crate::engine::{AnswerSource, Context, EngineError, Request, Response};
use crate::kg::{Term, name_similarity};
use std::sync::Arc;

impl PogMachine {
    pub(super) fn absorb_analysis(
        &mut self,
        cx: &mut Context,
        requests: &[Request],
        responses: &[Response],
        ev: &mut Event,
    ) -> Result<(), EngineError> {
        let c = completion(responses, 0)?;
        let dmax = cx.settings.depth.max(1);
        let roots: Vec<(Term, Option<String>)> = cx
            .beam
            .roots()
            .filter_map(|r| Some((r.term()?.clone(), r.is_named().then(|| r.shown().to_string()))))
            .collect();
        match parse::parse_analysis(&c.text) {
            Ok(a) => {
                let depth = a.predicted_depth().unwrap_or(dmax).clamp(1, dmax);
                ev.calls.push(record(&requests[0], c, format!("depth {depth}; {}", a.indicator)));
                ev.summary = format!(
                    "indicator {}; {} split question{}; predicted depth {depth}",
                    a.indicator,
                    a.sub_questions.len(),
                    plural_s(a.sub_questions.len())
                );
                self.predicted = depth;
                self.report.indicator = Some(a.indicator.clone());
                self.report.sub_questions = a.sub_questions.clone();
                self.report.predicted_depth = Some(depth);
                self.analysis = Some(a);
            }
            Err(why) => {
                ev.calls.push(record(&requests[0], c, format!("unreadable: {why}")));
                unreadable(ev);
                ev.notes.push(format!("{why}; exploring from depth 1 with the question as the indicator"));
                ev.summary = "question analysis unreadable; predicted depth 1".into();
                self.predicted = 1;
                self.report.analysis_unreadable = true;
            }
        }
        // Topic entities in the indicator's order (those it does not name keep theirs, after).
        let order: Vec<String> =
            self.analysis.as_ref().map(|a| a.topic_order().iter().map(|s| s.to_string()).collect()).unwrap_or_default();
        let mut ranked: Vec<(usize, (Term, Option<String>))> = roots
            .into_iter()
            .map(|(t, l)| {
                let name = l.clone().unwrap_or_else(|| t.as_str().to_string());
                let pos = order
                    .iter()
                    .position(|o| name_similarity(&name, o) >= SUPPLEMENT_MATCH_MIN || t.as_str() == o)
                    .unwrap_or(usize::MAX);
                (pos, (t, l))
            })
            .collect();
        ranked.sort_by_key(|(pos, _)| *pos);
        let sg = Arc::make_mut(&mut self.sg);
        self.topics = ranked.into_iter().map(|(_, (t, l))| sg.node(&t, l.as_deref(), 0)).collect();
        self.hop = 1;
        self.phase = Phase::ExpandRelations(Lookup::Subgraph);
        Ok(())
    }

    /// After a round of lookups: another hop, or on to reduction / the expansion stage's paths.
    pub(super) fn after_expansion(&mut self, cx: &mut Context, lookup: Lookup, ev: &mut Event) {
        match lookup {
            Lookup::Subgraph => {
                let multi = self.topics.len() > 1;
                let connected = multi && self.sg.connects(&self.topics);
                let frontier = self.sg.nodes.iter().any(|n| n.hop == self.hop && n.term.is_entity());
                if connected {
                    ev.notes.push(format!("the topic entities connect at hop {}", self.hop));
                }
                if connected || !frontier || self.hop >= cx.settings.depth || self.sg.nodes.len() >= MAX_SUBGRAPH_NODES
                {
                    self.phase = Phase::Reduce;
                } else {
                    self.hop += 1;
                    self.phase = Phase::ExpandRelations(Lookup::Subgraph);
                }
            }
            Lookup::NodeExpansion => self.expansion_paths(cx, ev),
        }
    }

    /// Subgraph nodes whose relations the lookup needs: the last hop's unsearched entities, or
    /// the unsearched entities on the selected paths.
    pub(super) fn to_search(&self, lookup: Lookup) -> Vec<usize> {
        let wanted: Vec<usize> = match lookup {
            Lookup::Subgraph => (0..self.sg.nodes.len()).filter(|&n| self.sg.nodes[n].hop + 1 == self.hop).collect(),
            Lookup::NodeExpansion => {
                let mut on: Vec<usize> = Vec::new();
                for &c in &self.selected {
                    for &n in &self.cands[c].path.nodes {
                        if !on.contains(&n) {
                            on.push(n);
                        }
                    }
                }
                on
            }
        };
        wanted.into_iter().filter(|&n| !self.sg.nodes[n].searched && self.sg.nodes[n].term.is_entity()).collect()
    }

    /// After "not sufficient" (or nothing left to check): the next stage of exploration.
    pub(super) fn next_stage(&mut self, cx: &mut Context, ev: &mut Event) {
        let dmax = cx.settings.depth.max(1);
        match self.stage {
            Stage::TopicPaths(d) if d < dmax => {
                self.stage = Stage::TopicPaths(d + 1);
                self.gather(cx, ev);
            }
            Stage::TopicPaths(_) => {
                self.stage = Stage::Supplement;
                self.phase = Phase::Supplement;
            }
            Stage::Supplement => {
                self.stage = Stage::Expansion;
                if self.selected.is_empty() {
                    ev.notes.push("no selected path to expand".into());
                    self.phase = Phase::Answer(AnswerSource::CollectedPaths);
                } else if self.to_search(Lookup::NodeExpansion).is_empty() {
                    self.expansion_paths(cx, ev);
                } else {
                    self.phase = Phase::ExpandRelations(Lookup::NodeExpansion);
                }
            }
            Stage::Expansion => {
                ev.notes.push("no exploration stage was sufficient".into());
                self.phase = Phase::Answer(AnswerSource::CollectedPaths);
            }
        }
    }

    /// Subgraph nodes (other than topic entities) whose names resemble the predicted ones.
    pub(super) fn match_names(&self, names: &[String]) -> Vec<usize> {
        let mut out = Vec::new();
        for name in names {
            let best = (0..self.sg.nodes.len())
                .filter(|n| !self.topics.contains(n))
                .filter_map(|n| Some((n, name_similarity(self.sg.nodes[n].label.as_deref()?, name))))
                .filter(|(_, s)| *s >= SUPPLEMENT_MATCH_MIN)
                .max_by(|a, b| a.1.total_cmp(&b.1).then(b.0.cmp(&a.0)));
            if let Some((n, _)) = best
                && !out.contains(&n)
            {
                out.push(n);
            }
        }
        out
    }

    /// Stage 2: the shortest paths from each topic entity to each matched entity, with the
    /// paths selected so far.
    pub(super) fn supplement_paths(&mut self, cx: &mut Context, matched: &[usize], ev: &mut Event) {
        let dmax = cx.settings.depth.max(1) as usize;
        let mut pool = self.selected.clone();
        let mut added = 0;
        for &m in matched {
            for t in self.topics.clone() {
                if let Some(p) = self.sg.shortest_path(t, m, dmax) {
                    added += usize::from(self.offer(cx, &mut pool, p, None));
                }
            }
        }
        self.add_pinned(&mut pool);
        self.pool = pool;
        if added == 0 {
            ev.notes.push("no new path through the predicted entities".into());
            self.next_stage(cx, ev);
            return;
        }
        ev.notes.push(format!("{added} new path{} through predicted entities", plural_s(added)));
        self.open_stage();
    }

    /// Stage 3: each selected path with one more edge from any of its entities (off its end,
    /// or a branch from inside it, shown after the whole path).
    fn expansion_paths(&mut self, cx: &mut Context, ev: &mut Event) {
        let mut pool = self.selected.clone();
        let mut added = 0;
        for c in self.selected.clone() {
            if self.cands[c].base.is_some() {
                continue;
            }
            let path = self.cands[c].path.clone();
            for i in 0..path.nodes.len() {
                let x = path.nodes[i];
                for e in self.sg.edges_of(x).to_vec() {
                    let y = self.sg.other(e, x);
                    if path.nodes.contains(&y) || pool.len() >= MAX_CANDIDATES {
                        continue;
                    }
                    let prefix = SgPath { nodes: path.nodes[..=i].to_vec(), edges: path.edges[..i].to_vec() };
                    let base = (i + 1 < path.nodes.len()).then_some(c);
                    added += usize::from(self.offer(cx, &mut pool, prefix.extended(e, y), base));
                }
            }
        }
        self.add_pinned(&mut pool);
        self.pool = pool;
        if added == 0 {
            ev.notes.push("the selected paths have no further neighbours".into());
            self.phase = Phase::Answer(AnswerSource::CollectedPaths);
        } else {
            ev.notes.push(format!("{added} expanded path{}", plural_s(added)));
            self.open_stage();
        }
    }

    /// The pool holds a stage's candidates: pruning starts, and the report gains the stage.
    pub(super) fn open_stage(&mut self) {
        self.phase = Phase::Fuzzy;
        self.report.stages.push(StageReport {
            stage: self.stage.name(),
            candidates: self.pool.len(),
            ..StageReport::default()
        });
    }
}
