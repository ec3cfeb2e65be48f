//! The user's overrides of ToG's choices: keep, drop, add, pin, prune, force a verdict.

use super::{Phase, TogMachine};
use crate::engine::beam::{KEPT_BY_YOU, NodeId, NodeKind, Provenance, Status};
use crate::engine::step::{ANSWERED, last_step, unpinning};
use crate::engine::{AnswerSource, Context, EngineError, Override};
use crate::kg::{RelationRef, Term};

/// Why an override is refused now, in words for the user.
type Refusal = &'static str;

const NOT_AT_A_CHECK: Refusal = "only before or right after a sufficiency check";

impl TogMachine {
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
            Override::AddRelation { parent, relation } => self.add_relation(cx, *parent, relation, step),
            Override::AddEntity { parent, term, label } => self.add_entity(cx, *parent, term, label, step),
            Override::Pin { node } => self.pin(cx, *node, step),
            Override::PrunePath { node } => self.prune_path(cx, *node, step),
            Override::ForceSufficient => self.force_sufficient(cx),
            Override::EditAction { .. } => Err("only GoG has actions to edit"),
            Override::ForceContinue => self.force_continue(cx),
        };
        done.map_err(bad)
    }

    /// Whether this hop's entity prune has run: reasoning is next, or the next hop's
    /// relation search while the verdict on this one is pending.
    fn after_entity_prune(&self) -> bool {
        self.phase == Phase::Reasoning || (self.phase == Phase::RelationSearch && self.pending_verdict)
    }

    /// Keeps (`keep`) or drops a candidate of the last prune step.
    fn keep_or_drop(&mut self, cx: &mut Context, node: NodeId, keep: bool, step: usize) -> Result<String, Refusal> {
        let n = cx.beam.get(node).ok_or("no such node")?;
        let in_last_prune = match (&n.kind, self.phase) {
            (NodeKind::Relation { .. }, Phase::EntitySearch) => n.depth == self.depth,
            (NodeKind::Entity { .. }, _) if self.after_entity_prune() => {
                n.depth == self.entity_layer() && n.parent.is_some()
            }
            _ => false,
        };
        if !in_last_prune {
            return Err(
                "only the candidates of the last prune step can be kept or dropped; rewind to change earlier ones",
            );
        }
        let shown = n.shown().to_string();
        let pinned = n.status == Status::PinnedByUser;
        self.user.retain(|&u| u != node);
        if keep {
            cx.beam.set_status(node, Status::Kept, Some(KEPT_BY_YOU), step);
            self.user.push(node);
            if self.pending_verdict {
                // A newly kept entity needs its relations searched before the
                // speculative scoring goes out.
                self.phase = Phase::RelationSearch;
            }
            Ok(format!("kept {shown}"))
        } else {
            cx.beam.set_status(node, Status::PrunedByUser, Some("dropped by the user"), step);
            Ok(format!("{}dropped {shown}", if pinned { "unpinned and " } else { "" }))
        }
    }

    /// Adds a relation under a frontier entity, right after relation pruning.
    fn add_relation(
        &mut self,
        cx: &mut Context,
        parent: NodeId,
        relation: &RelationRef,
        step: usize,
    ) -> Result<String, Refusal> {
        if self.phase != Phase::EntitySearch || !self.frontier(cx).contains(&parent) {
            return Err("a relation can be added under a frontier entity right after relation pruning");
        }
        let shown = cx.profile.display_relation(&relation.relation);
        let id = cx.beam.add(
            Some(parent),
            NodeKind::Relation {
                relation: relation.relation.clone(),
                direction: relation.direction,
                shown: shown.clone(),
            },
            Provenance::User,
        );
        cx.beam.set_status(id, Status::AddedByUser, Some("added by the user"), step);
        self.user.push(id);
        Ok(format!("added relation {shown} under {}", cx.beam.nodes[parent].shown()))
    }

    /// Adds an entity under a kept relation, right after entity pruning.
    fn add_entity(
        &mut self,
        cx: &mut Context,
        parent: NodeId,
        term: &Term,
        label: &Option<String>,
        step: usize,
    ) -> Result<String, Refusal> {
        if !self.after_entity_prune() || !Self::live_relations_at(cx, self.entity_layer()).contains(&parent) {
            return Err("an entity can be added under a kept relation right after entity pruning");
        }
        let id =
            cx.beam.add(Some(parent), NodeKind::Entity { term: term.clone(), label: label.clone() }, Provenance::User);
        cx.beam.set_status(id, Status::AddedByUser, Some("added by the user"), step);
        self.user.push(id);
        if self.pending_verdict {
            self.phase = Phase::RelationSearch;
        }
        Ok(format!("added {} under {}", cx.beam.nodes[id].shown(), cx.beam.nodes[parent].shown()))
    }

    /// Pins the path to `node`: it and every pruned node on the way.
    fn pin(&mut self, cx: &mut Context, node: NodeId, step: usize) -> Result<String, Refusal> {
        cx.beam.get(node).ok_or("no such node")?;
        for n in cx.beam.path(node) {
            if !cx.beam.nodes[n].status.is_live() || n == node {
                cx.beam.set_status(n, Status::PinnedByUser, Some("pinned by the user"), step);
            }
        }
        if !self.user.contains(&node) {
            self.user.push(node);
        }
        Ok(format!("pinned {}", cx.beam.path_text(node)))
    }

    /// Prunes `node` and everything below it, and the user's keeps there.
    fn prune_path(&mut self, cx: &mut Context, node: NodeId, step: usize) -> Result<String, Refusal> {
        cx.beam.get(node).ok_or("no such node")?;
        let unpinned = unpinning(&cx.beam, node);
        cx.beam.set_subtree(node, Status::PrunedByUser, "pruned by the user", step);
        self.user.retain(|&u| !cx.beam.path(u).contains(&node));
        Ok(unpinned.pruned(&cx.beam.path_text(node)))
    }

    /// Answers from the paths now: before the sufficiency check, or overruling its "no".
    fn force_sufficient(&mut self, cx: &Context) -> Result<String, Refusal> {
        let just_said_no = self.last_verdict == Some(false) && last_step(cx) == Some("reasoning");
        match self.phase {
            Phase::Reasoning | Phase::RelationSearch if self.pending_verdict => {
                self.depth -= 1;
                self.pending_verdict = false;
                self.phase = Phase::Answer(AnswerSource::KgPaths);
                Ok("forced sufficient: answer from the paths".into())
            }
            Phase::Reasoning => {
                self.phase = Phase::Answer(AnswerSource::KgPaths);
                Ok("forced sufficient: answer from the paths".into())
            }
            Phase::RelationSearch | Phase::EntitySearch | Phase::Answer(_) if just_said_no => {
                if matches!(self.phase, Phase::RelationSearch | Phase::EntitySearch) {
                    self.depth -= 1;
                }
                self.phase = Phase::Answer(AnswerSource::KgPaths);
                Ok("overruled \"not sufficient\": answer from the paths".into())
            }
            _ => Err(NOT_AT_A_CHECK),
        }
    }

    /// Explores one hop deeper: before the sufficiency check, or overruling its "yes".
    fn force_continue(&mut self, cx: &mut Context) -> Result<String, Refusal> {
        if self.phase == Phase::Reasoning && self.pending_verdict {
            self.pending_verdict = false;
            self.last_verdict = Some(false);
            self.phase = Phase::RelationPrune;
            return Ok(format!("forced continue: exploring depth {}", self.depth));
        }
        let after_yes =
            self.last_verdict == Some(true) && matches!(self.phase, Phase::Done | Phase::Answer(AnswerSource::KgPaths));
        if self.phase != Phase::Reasoning && !after_yes {
            return Err(NOT_AT_A_CHECK);
        }
        if self.depth >= cx.settings.depth {
            return Err("already at the maximum depth");
        }
        cx.answer = None;
        self.last_verdict = Some(false);
        self.depth += 1;
        self.phase = Phase::RelationSearch;
        Ok(format!("forced continue: exploring depth {}", self.depth))
    }
}
