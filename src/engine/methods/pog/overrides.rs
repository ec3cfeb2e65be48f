//! The user's overrides of PoG's choices: keep, drop, pin or prune a path, force a verdict.

use super::{Phase, PogMachine, Stage};
use crate::engine::beam::{KEPT_BY_YOU, NodeId, Status};
use crate::engine::events::Event;
use crate::engine::step::{ANSWERED, last_step, plural_s, unpinning, with_notes};
use crate::engine::{AnswerSource, Context, EngineError, Override};

/// Why an override is refused now, in words for the user.
type Refusal = &'static str;

const NOT_AT_A_CHECK: Refusal = "only before or right after a sufficiency check";

impl PogMachine {
    /// The user's change `o`, if the phase allows it: what it did, in words for the trace.
    pub(super) fn apply_override(&mut self, cx: &mut Context, o: &Override) -> Result<String, EngineError> {
        let step = cx.next_index();
        let bad = |why: &str| EngineError::BadOverride { what: o.describe(), why: why.into() };
        if cx.answer.is_some() && !matches!(o, Override::ForceContinue) {
            return Err(bad(ANSWERED));
        }
        let done = match o {
            Override::Keep { node } => self.keep_or_drop(cx, *node, true, step),
            Override::Drop { node } => self.keep_or_drop(cx, *node, false, step),
            Override::Pin { node } => self.pin(cx, *node, step),
            Override::PrunePath { node } => self.prune_path(cx, *node, step),
            Override::EditAction { .. } => Err("only GoG has actions to edit"),
            Override::AddRelation { .. } | Override::AddEntity { .. } => {
                Err("PoG chooses among whole paths of its question subgraph; keep or pin a candidate path instead")
            }
            Override::ForceSufficient => self.force_sufficient(cx),
            Override::ForceContinue => self.force_continue(cx, step),
        };
        done.map_err(bad)
    }

    /// Whether paths are being selected: between pruning and the sufficiency check.
    fn selecting(&self) -> bool {
        matches!(self.phase, Phase::Precise | Phase::Branch(_) | Phase::Summary | Phase::Sufficiency)
    }

    /// The candidate path that ends at `node`, if one does.
    fn cand_of(&self, node: NodeId) -> Option<usize> {
        self.cands.iter().position(|c| c.leaf == node)
    }

    /// Keeps (`keep`) or drops the candidate path ending at `node`.
    fn keep_or_drop(&mut self, cx: &mut Context, node: NodeId, keep: bool, step: usize) -> Result<String, Refusal> {
        let Some(c) = self.cand_of(node) else {
            return Err("not the last node of a candidate path; PoG keeps and drops whole paths");
        };
        if !self.selecting() {
            return Err("paths can be kept or dropped between pruning and the sufficiency check");
        }
        let text = self.cands[c].text.clone();
        if keep {
            if !self.pool.contains(&c) {
                self.pool.push(c);
            }
            self.banned.retain(|&b| b != c);
            for n in cx.beam.path(node) {
                if !cx.beam.nodes[n].status.is_live() {
                    cx.beam.set_status(n, Status::Kept, Some(KEPT_BY_YOU), step);
                }
            }
            Ok(format!("kept {text}"))
        } else {
            let pinned = self.pinned.contains(&c);
            self.pool.retain(|&p| p != c);
            self.pinned.retain(|&p| p != c);
            cx.beam.set_status(node, Status::PrunedByUser, Some("dropped by the user"), step);
            Ok(format!("{}dropped {text}", if pinned { "unpinned and " } else { "" }))
        }
    }

    /// Pins the candidate path ending at `node` (into the pool while paths are selected).
    fn pin(&mut self, cx: &mut Context, node: NodeId, step: usize) -> Result<String, Refusal> {
        let Some(c) = self.cand_of(node) else { return Err("not the last node of a candidate path") };
        if !self.pinned.contains(&c) {
            self.pinned.push(c);
        }
        if self.selecting() && !self.pool.contains(&c) {
            self.pool.push(c);
        }
        for n in cx.beam.path(node) {
            if !cx.beam.nodes[n].status.is_live() || n == node {
                cx.beam.set_status(n, Status::PinnedByUser, Some("pinned by the user"), step);
            }
        }
        Ok(format!("pinned {}", self.cands[c].text))
    }

    /// Prunes `node` and everything below it, banning every candidate path through it.
    fn prune_path(&mut self, cx: &mut Context, node: NodeId, step: usize) -> Result<String, Refusal> {
        cx.beam.get(node).ok_or("no such node")?;
        let through: Vec<usize> =
            (0..self.cands.len()).filter(|&c| cx.beam.path(self.cands[c].leaf).contains(&node)).collect();
        for c in &through {
            if !self.banned.contains(c) {
                self.banned.push(*c);
            }
        }
        self.pool.retain(|c| !through.contains(c));
        self.pinned.retain(|c| !through.contains(c));
        self.selected.retain(|c| !through.contains(c));
        let unpinned = unpinning(&cx.beam, node);
        cx.beam.set_subtree(node, Status::PrunedByUser, "pruned by the user", step);
        let path = format!("{} ({} candidate path{})", cx.beam.path_text(node), through.len(), plural_s(through.len()));
        Ok(unpinned.pruned(&path))
    }

    /// Answers from the selected paths now: before the sufficiency check, or overruling its "no".
    fn force_sufficient(&mut self, cx: &Context) -> Result<String, Refusal> {
        let after_no = self.last_verdict == Some(false)
            && last_step(cx) == Some("sufficiency")
            && !matches!(self.phase, Phase::Done);
        if matches!(self.phase, Phase::Summary | Phase::Sufficiency) {
            self.selected = self.pool.clone();
        } else if !after_no {
            return Err(NOT_AT_A_CHECK);
        }
        self.phase = Phase::Answer(AnswerSource::KgPaths);
        Ok("forced sufficient: answer from the selected paths".into())
    }

    /// Moves on to the next exploration stage: before the sufficiency check, or overruling
    /// its "yes".
    fn force_continue(&mut self, cx: &mut Context, step: usize) -> Result<String, Refusal> {
        let after_yes =
            self.last_verdict == Some(true) && matches!(self.phase, Phase::Done | Phase::Answer(AnswerSource::KgPaths));
        if !matches!(self.phase, Phase::Summary | Phase::Sufficiency) && !after_yes {
            return Err(NOT_AT_A_CHECK);
        }
        if self.stage == Stage::Expansion {
            return Err("already at the last exploration stage");
        }
        cx.answer = None;
        self.last_verdict = Some(false);
        self.selected = self.pool.clone();
        let mut ev = Event::step(step, "", 0);
        self.next_stage(cx, &mut ev);
        // An override is recorded as one line: what the next stage found goes with it.
        Ok(format!("forced continue: on to {}{}", self.stage.name(), with_notes(&ev)))
    }
}
