//! PoG's three-step pruning of a stage's candidate paths: fuzzy (BM25 or embeddings), precise
//! (the model picks W of numbered candidates, in batches) and branch-reduced (by shared
//! prefixes), then the kept paths marked on the beam.

use super::shapes;
use super::subgraph::SgPath;
use super::{PRECISE_BATCH, PRECISE_BUDGET_CHARS, Phase, PogMachine, PogPruning, StageReport, parse};
use crate::engine::beam::{NodeId, Status};
use crate::engine::events::{Decision, Event};
use crate::engine::lexical::{bm25, cosine};
use crate::engine::step::{completion, record, unreadable, wrong};
use crate::engine::{Context, EngineError, Request, Response};
use crate::prompts::Template;
use std::sync::Arc;

impl PogMachine {
    /// A precise or branch-reduced selection call: the model picks W of numbered candidates.
    pub(super) fn selection(&self, cx: &Context, template: Template, texts: &[&str]) -> Request {
        let list: Vec<String> =
            texts.iter().enumerate().map(|(i, t)| format!("Candidate Edge {}: {t}", i + 1)).collect();
        let prompt = cx.render(
            template,
            &[
                ("question", &cx.question),
                ("indicator", &self.indicator(cx)),
                ("width", &cx.settings.width.to_string()),
                ("candidates", &list.join("\n")),
            ],
        );
        cx.llm(
            template.name(),
            prompt,
            cx.settings.prune_temperature,
            shapes::selection(texts.len(), cx.settings.width),
        )
    }

    pub(super) fn numbered(&self, list: &[usize]) -> String {
        list.iter()
            .enumerate()
            .map(|(i, &c)| format!("Path {}: {}", i + 1, self.cands[c].text))
            .collect::<Vec<_>>()
            .join("\n")
    }

    /// The pool split into prompts of at most `PRECISE_BATCH` candidates and the text budget.
    pub(super) fn precise_batches(&self) -> Vec<Vec<usize>> {
        let mut batches: Vec<Vec<usize>> = Vec::new();
        let mut chars = 0;
        for &c in &self.pool {
            let len = self.cands[c].text.len();
            match batches.last_mut() {
                Some(b) if b.len() < PRECISE_BATCH && chars + len <= PRECISE_BUDGET_CHARS => {
                    b.push(c);
                    chars += len;
                }
                _ => {
                    batches.push(vec![c]);
                    chars = len;
                }
            }
        }
        batches
    }

    /// The distinct `hops`-hop prefixes of the pool's paths (as text), each with its candidates.
    pub(super) fn prefixes(&self, hops: usize) -> Vec<(String, Vec<usize>)> {
        let mut out: Vec<(String, Vec<usize>)> = Vec::new();
        for &c in &self.pool {
            let text = self.prefix_text(c, hops);
            match out.iter_mut().find(|(t, _)| *t == text) {
                Some((_, members)) => members.push(c),
                None => out.push((text, vec![c])),
            }
        }
        out
    }

    fn prefix_text(&self, c: usize, hops: usize) -> String {
        let cand = &self.cands[c];
        let cut = SgPath {
            nodes: cand.path.nodes[..=hops.min(cand.path.len())].to_vec(),
            edges: cand.path.edges[..hops.min(cand.path.len())].to_vec(),
        };
        self.path_text_of(&cut, 0)
    }

    fn longest(&self) -> usize {
        self.pool.iter().map(|&c| self.cands[c].path.len()).max().unwrap_or(0)
    }

    /// Records how many candidates a pruning step left in the current stage.
    fn pruned_to(&mut self, step: fn(&mut StageReport) -> &mut Option<usize>) {
        let left = self.pool.len();
        if let Some(s) = self.report.stages.last_mut() {
            *step(s) = Some(left);
        }
    }

    pub(super) fn absorb_fuzzy(
        &mut self,
        cx: &mut Context,
        responses: &[Response],
        ev: &mut Event,
    ) -> Result<(), EngineError> {
        let query = format!("{} {}", self.indicator(cx), cx.question);
        let texts: Vec<String> = self.pool.iter().map(|&c| self.cands[c].text.clone()).collect();
        let scores: Vec<f64> = match responses.first() {
            Some(Response::Embeddings { vectors }) if vectors.len() == texts.len() + 1 => {
                vectors[1..].iter().map(|v| cosine(&vectors[0], v)).collect()
            }
            None => bm25(&query, &texts),
            other => return Err(wrong(0, "embeddings", other)),
        };
        let max = scores.iter().copied().fold(0.0_f64, f64::max);
        let cands = Arc::make_mut(&mut self.cands);
        for (&c, s) in self.pool.iter().zip(&scores) {
            cands[c].fuzzy = if max > 0.0 { (s / max).max(0.0) } else { 0.0 };
        }
        let before = self.pool.clone();
        let mut ranked = before.clone();
        ranked.sort_by(|&a, &b| self.cands[b].fuzzy.total_cmp(&self.cands[a].fuzzy).then(a.cmp(&b)));
        let keep = if cx.settings.pog.pog_pruning == PogPruning::Fuzzy {
            cx.settings.width
        } else {
            cx.settings.pog.fuzzy_width
        };
        ranked.truncate(keep.max(1));
        self.add_pinned(&mut ranked);
        self.pool = ranked;
        let tool = if responses.is_empty() { "BM25" } else { "embedding" };
        ev.summary = format!("{}: {tool} kept {} of {} paths", self.stage.name(), self.pool.len(), before.len());
        self.mark(
            cx,
            ev,
            &before,
            Status::PrunedByWidth,
            &format!("fuzzy: not in the top {keep} by {tool} similarity"),
        );
        self.pruned_to(|s| &mut s.after_fuzzy);
        self.after_prune(cx, ev, Phase::Fuzzy);
        Ok(())
    }

    pub(super) fn absorb_precise(
        &mut self,
        cx: &mut Context,
        batches: &[Vec<usize>],
        requests: &[Request],
        responses: &[Response],
        ev: &mut Event,
    ) -> Result<(), EngineError> {
        let w = cx.settings.width.max(1);
        let before = self.pool.clone();
        let mut chosen: Vec<usize> = Vec::new();
        for (i, batch) in batches.iter().enumerate() {
            let c = completion(responses, i)?;
            let mut fell_back = false;
            let picks = match parse::parse_top_list(&c.text, batch.len()) {
                Ok(mut p) => {
                    p.truncate(w);
                    p
                }
                Err(why) => {
                    fell_back = true;
                    ev.notes.push(format!("batch {}: {why}; kept its top {w} by similarity", i + 1));
                    (0..batch.len().min(w)).collect()
                }
            };
            let parsed = picks.iter().map(|k| format!("Candidate Edge {}", k + 1)).collect::<Vec<_>>().join(", ");
            ev.calls.push(record(&requests[i], c, parsed));
            if fell_back {
                unreadable(ev);
            }
            chosen.extend(picks.into_iter().map(|k| batch[k]));
        }
        if chosen.len() >= before.len() && chosen.len() > w {
            ev.notes.push(format!("the selection did not narrow the candidates; kept the top {w} by similarity"));
            chosen.truncate(w);
        }
        self.add_pinned(&mut chosen);
        self.pool = chosen;
        ev.summary = format!("{}: the model chose {} of {} paths", self.stage.name(), self.pool.len(), before.len());
        self.mark(cx, ev, &before, Status::PrunedByScore, "precise: not chosen by the model");
        self.pruned_to(|s| &mut s.after_precise);
        self.after_prune(cx, ev, Phase::Precise);
        Ok(())
    }

    pub(super) fn absorb_branch(
        &mut self,
        cx: &mut Context,
        hops: usize,
        prefixes: &[(String, Vec<usize>)],
        requests: &[Request],
        responses: &[Response],
        ev: &mut Event,
    ) -> Result<(), EngineError> {
        let w = cx.settings.width.max(1);
        let c = completion(responses, 0)?;
        let mut fell_back = false;
        let picks = match parse::parse_top_list(&c.text, prefixes.len()) {
            Ok(mut p) => {
                p.truncate(w);
                p
            }
            Err(why) => {
                fell_back = true;
                ev.notes.push(format!("{why}; kept the first {w} prefixes by similarity"));
                (0..prefixes.len().min(w)).collect()
            }
        };
        let parsed = picks.iter().map(|k| format!("Candidate Edge {}", k + 1)).collect::<Vec<_>>().join(", ");
        ev.calls.push(record(&requests[0], c, parsed));
        if fell_back {
            unreadable(ev);
        }
        let before = self.pool.clone();
        let mut kept: Vec<usize> =
            before.iter().copied().filter(|c| picks.iter().any(|&k| prefixes[k].1.contains(c))).collect();
        self.add_pinned(&mut kept);
        self.pool = kept;
        ev.summary = format!(
            "{}: the model chose {} of {} {hops}-hop prefixes; {} paths remain",
            self.stage.name(),
            picks.len(),
            prefixes.len(),
            self.pool.len()
        );
        self.mark(cx, ev, &before, Status::PrunedByScore, &format!("branch: its {hops}-hop prefix was not chosen"));
        self.pruned_to(|s| &mut s.after_branch);
        self.after_prune(cx, ev, Phase::Branch(hops));
        Ok(())
    }

    /// The smallest prefix length from `from` on at which the pool has more than W distinct
    /// prefixes (a choice among W or fewer is no choice).
    fn branch_level(&self, from: usize, w: usize) -> Option<usize> {
        (from..=self.longest()).find(|&k| self.prefixes(k).len() > w)
    }

    /// The next pruning step for the strategy, or the summary / sufficiency check.
    fn after_prune(&mut self, cx: &mut Context, ev: &mut Event, just: Phase) {
        if self.pool.is_empty() {
            ev.notes.push("no candidate path left".into());
            self.next_stage(cx, ev);
            return;
        }
        let s = cx.settings.clone();
        let w = s.width.max(1);
        let branch = matches!(s.pog.pog_pruning, PogPruning::FuzzyBranch | PogPruning::All);
        let precise = matches!(s.pog.pog_pruning, PogPruning::FuzzyPrecise | PogPruning::All);
        // With all three, branch-reduced selection narrows to one precise prompt's worth.
        let branch_target = if s.pog.pog_pruning == PogPruning::All { PRECISE_BATCH.max(w) } else { w };
        let next_level = match just {
            Phase::Fuzzy => Some(1),
            Phase::Branch(k) => Some(k + 1),
            _ => None,
        };
        if branch
            && self.pool.len() > branch_target
            && let Some(level) = next_level.and_then(|k| self.branch_level(k, w))
        {
            self.phase = Phase::Branch(level);
            return;
        }
        if precise && self.pool.len() > w {
            self.phase = Phase::Precise;
            return;
        }
        if self.pool.len() > w {
            // Branch-reduced selection could not narrow further: similarity decides the rest.
            let before = self.pool.clone();
            let mut kept: Vec<usize> = before.iter().copied().take(w).collect();
            self.add_pinned(&mut kept);
            self.pool = kept;
            ev.notes
                .push(format!("{} paths beyond the width {w} dropped by similarity", before.len() - self.pool.len()));
            self.mark(cx, ev, &before, Status::PrunedByWidth, &format!("beyond the width {w}"));
        }
        self.summary.clear();
        self.phase = if s.pog.path_summary { Phase::Summary } else { Phase::Sufficiency };
    }

    /// Sets the statuses after a pruning step: the pool's paths kept, the rest of `before`
    /// dropped with `status` and `reason`; records a decision per candidate.
    pub(super) fn mark(&self, cx: &mut Context, ev: &mut Event, before: &[usize], status: Status, reason: &str) {
        let step = ev.index;
        let by_user = |s: Status| matches!(s, Status::PinnedByUser | Status::PrunedByUser | Status::AddedByUser);
        let mut live: std::collections::HashSet<NodeId> = std::collections::HashSet::new();
        for &c in &self.pool {
            live.extend(cx.beam.path(self.cands[c].leaf));
        }
        for &c in before {
            let cand = &self.cands[c];
            for n in cx.beam.path(cand.leaf) {
                let current = cx.beam.nodes[n].status;
                if by_user(current) || cx.beam.nodes[n].parent.is_none() {
                    continue;
                }
                if live.contains(&n) {
                    if current != Status::Kept {
                        cx.beam.set_status(n, Status::Kept, Some("on a selected path"), step);
                    }
                } else if n == cand.leaf {
                    cx.beam.set_status(n, status, Some(reason), step);
                } else {
                    cx.beam.set_status(n, status, Some("no selected path through it"), step);
                }
            }
            if let Some(node) = cx.beam.node_mut(cand.leaf) {
                node.score = Some(cand.fuzzy);
                node.path_score = cand.fuzzy;
            }
            ev.decisions.push(Decision {
                node: cand.leaf,
                shown: cand.text.clone(),
                score: Some(cand.fuzzy),
                path_score: cand.fuzzy,
                status: cx.beam.nodes[cand.leaf].status,
            });
        }
    }
}
