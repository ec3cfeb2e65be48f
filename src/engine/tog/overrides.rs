//! The user's overrides of ToG's choices: keep, drop, add, pin, prune, force a verdict.

use super::{Phase, TogMachine};
use crate::engine::beam::{KEPT_BY_YOU, NodeId, NodeKind, Provenance, Status};
use crate::engine::step::{ANSWERED, last_step, unpinning};
use crate::engine::{AnswerSource, Context, EngineError, Override};

impl TogMachine {
    /// The user's change `o`, if the phase allows it: what it did, in words for the trace.
    pub(super) fn apply_override(&mut self, cx: &mut Context, o: &Override) -> Result<String, EngineError> {
        let step = cx.next_index();
        let bad = |why: &str| EngineError::BadOverride { what: o.describe(), why: why.into() };
        let node_ok = |id: NodeId| cx.beam.get(id).ok_or_else(|| bad("no such node"));
        if cx.answer.is_some() && !matches!(o, Override::ForceContinue) {
            return Err(bad(ANSWERED));
        }
        match o {
            Override::Keep { node } | Override::Drop { node } => {
                let n = node_ok(*node)?;
                let after_entity_prune =
                    self.phase == Phase::Reasoning || (self.phase == Phase::RelationSearch && self.pending_verdict);
                let in_last_prune = match (&n.kind, self.phase) {
                    (NodeKind::Relation { .. }, Phase::EntitySearch) => n.depth == self.depth,
                    (NodeKind::Entity { .. }, _) if after_entity_prune => {
                        n.depth == self.entity_layer() && n.parent.is_some()
                    }
                    _ => false,
                };
                if !in_last_prune {
                    return Err(bad(
                        "only the candidates of the last prune step can be kept or dropped; rewind to change earlier ones",
                    ));
                }
                let shown = n.shown().to_string();
                let pinned = n.status == Status::PinnedByUser;
                self.user.retain(|&u| u != *node);
                if matches!(o, Override::Keep { .. }) {
                    cx.beam.set_status(*node, Status::Kept, Some(KEPT_BY_YOU), step);
                    self.user.push(*node);
                    if self.pending_verdict {
                        // A newly kept entity needs its relations searched before the
                        // speculative scoring goes out.
                        self.phase = Phase::RelationSearch;
                    }
                    Ok(format!("kept {shown}"))
                } else {
                    cx.beam.set_status(*node, Status::PrunedByUser, Some("dropped by the user"), step);
                    Ok(format!("{}dropped {shown}", if pinned { "unpinned and " } else { "" }))
                }
            }
            Override::AddRelation { parent, relation } => {
                if self.phase != Phase::EntitySearch || !self.frontier(cx).contains(parent) {
                    return Err(bad("a relation can be added under a frontier entity right after relation pruning"));
                }
                let shown = cx.profile.display_relation(&relation.relation);
                let id = cx.beam.add(
                    Some(*parent),
                    NodeKind::Relation {
                        relation: relation.relation.clone(),
                        direction: relation.direction,
                        shown: shown.clone(),
                    },
                    Provenance::User,
                );
                cx.beam.set_status(id, Status::AddedByUser, Some("added by the user"), step);
                self.user.push(id);
                Ok(format!("added relation {shown} under {}", cx.beam.nodes[*parent].shown()))
            }
            Override::AddEntity { parent, term, label } => {
                let after_entity_prune =
                    self.phase == Phase::Reasoning || (self.phase == Phase::RelationSearch && self.pending_verdict);
                if !after_entity_prune || !Self::live_relations_at(cx, self.entity_layer()).contains(parent) {
                    return Err(bad("an entity can be added under a kept relation right after entity pruning"));
                }
                let id = cx.beam.add(
                    Some(*parent),
                    NodeKind::Entity { term: term.clone(), label: label.clone() },
                    Provenance::User,
                );
                cx.beam.set_status(id, Status::AddedByUser, Some("added by the user"), step);
                self.user.push(id);
                if self.pending_verdict {
                    self.phase = Phase::RelationSearch;
                }
                Ok(format!("added {} under {}", cx.beam.nodes[id].shown(), cx.beam.nodes[*parent].shown()))
            }
            Override::Pin { node } => {
                node_ok(*node)?;
                for n in cx.beam.path(*node) {
                    if !cx.beam.nodes[n].status.is_live() || n == *node {
                        cx.beam.set_status(n, Status::PinnedByUser, Some("pinned by the user"), step);
                    }
                }
                if !self.user.contains(node) {
                    self.user.push(*node);
                }
                Ok(format!("pinned {}", cx.beam.path_text(*node)))
            }
            Override::PrunePath { node } => {
                node_ok(*node)?;
                let unpinned = unpinning(&cx.beam, *node);
                cx.beam.set_subtree(*node, Status::PrunedByUser, "pruned by the user", step);
                self.user.retain(|&u| !cx.beam.path(u).contains(node));
                Ok(unpinned.pruned(&cx.beam.path_text(*node)))
            }
            Override::ForceSufficient => {
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
                    _ => Err(bad("only before or right after a sufficiency check")),
                }
            }
            Override::EditAction { .. } => Err(bad("only GoG has actions to edit")),
            Override::ForceContinue => {
                if self.phase == Phase::Reasoning && self.pending_verdict {
                    self.pending_verdict = false;
                    self.last_verdict = Some(false);
                    self.phase = Phase::RelationPrune;
                    return Ok(format!("forced continue: exploring depth {}", self.depth));
                }
                let after_yes = self.last_verdict == Some(true)
                    && matches!(self.phase, Phase::Done | Phase::Answer(AnswerSource::KgPaths));
                if self.phase != Phase::Reasoning && !after_yes {
                    return Err(bad("only before or right after a sufficiency check"));
                }
                if self.depth >= cx.settings.depth {
                    return Err(bad("already at the maximum depth"));
                }
                cx.answer = None;
                self.last_verdict = Some(false);
                self.depth += 1;
                self.phase = Phase::RelationSearch;
                Ok(format!("forced continue: exploring depth {}", self.depth))
            }
        }
    }
}
