//! What the beam holds at the current hop: the entities to expand, the relations kept, the
//! candidates waiting to be scored.

use super::{Group, TogMachine};
use crate::engine::Context;
use crate::engine::beam::{NodeId, NodeKind, Status};
use crate::kg::{Direction, Term};

impl TogMachine {
    /// Live entity nodes at `depth` (topic entities at 0) whose whole path is live.
    pub(super) fn live_entities_at(cx: &Context, depth: u32) -> Vec<NodeId> {
        cx.beam
            .nodes
            .iter()
            .filter(|n| n.depth == depth && n.term().is_some() && n.status.is_live() && cx.beam.is_live_path(n.id))
            .map(|n| n.id)
            .collect()
    }

    /// The entities expanded at the current depth: last depth's live entities, literals aside.
    pub(super) fn frontier(&self, cx: &Context) -> Vec<NodeId> {
        Self::live_entities_at(cx, self.depth.saturating_sub(1))
            .into_iter()
            .filter(|&n| cx.beam.nodes[n].term().is_some_and(Term::is_entity))
            .collect()
    }

    /// Live relation nodes at the current depth.
    pub(super) fn live_relations(&self, cx: &Context) -> Vec<NodeId> {
        Self::live_relations_at(cx, self.depth)
    }

    pub(super) fn live_relations_at(cx: &Context, depth: u32) -> Vec<NodeId> {
        cx.beam
            .nodes
            .iter()
            .filter(|n| {
                n.depth == depth
                    && matches!(n.kind, NodeKind::Relation { .. })
                    && n.status.is_live()
                    && cx.beam.is_live_path(n.id)
            })
            .map(|n| n.id)
            .collect()
    }

    /// When relation node `rel` is the reverse of the edge that reached its entity, the entity
    /// that edge came from: reaching it again would cross the same triple back. An entity merged
    /// from several paths (`also_via`) crosses back only if every one of them came that way.
    pub(super) fn triple_back(cx: &Context, rel: NodeId) -> Option<Term> {
        let r = &cx.beam.nodes[rel];
        let NodeKind::Relation { relation, direction, .. } = &r.kind else { return None };
        Self::came_along(cx, r.parent?, relation, *direction)
    }

    /// When searching `entity` along `relation` in `direction` goes back the way it was reached
    /// (the same relation, the other way), the entity it was reached from; for an entity merged
    /// from several paths, only if every one came that way from the same entity.
    pub(super) fn came_along(cx: &Context, entity: NodeId, relation: &str, direction: Direction) -> Option<Term> {
        let came_from = |copy: NodeId| -> Option<Term> {
            let via = &cx.beam.nodes[cx.beam.nodes[copy].parent?];
            let NodeKind::Relation { relation: came, direction: came_dir, .. } = &via.kind else { return None };
            (came == relation && *came_dir != direction).then(|| cx.beam.nodes[via.parent?].term().cloned())?
        };
        let back = came_from(entity)?;
        cx.beam.nodes[entity].also_via.iter().all(|&copy| came_from(copy).as_ref() == Some(&back)).then_some(back)
    }

    /// Frontier entities whose relations have not been searched yet (an entity searched
    /// speculatively, or before a rewind to a later point, is not searched again).
    pub(super) fn unsearched_frontier(&self, cx: &Context) -> Vec<NodeId> {
        self.frontier(cx)
            .into_iter()
            .filter(|&n| {
                !cx.beam.nodes[n].children.iter().any(|&c| matches!(cx.beam.nodes[c].kind, NodeKind::Relation { .. }))
            })
            .collect()
    }

    /// The depth whose entities the last entity prune chose.
    pub(super) fn entity_layer(&self) -> u32 {
        if self.pending_verdict { self.depth - 1 } else { self.depth }
    }

    /// Whether to score the next hop's relations while the sufficiency check runs.
    pub(super) fn can_speculate(&self, cx: &Context) -> bool {
        cx.settings.speculate
            && self.depth < cx.settings.depth
            && Self::live_entities_at(cx, self.depth)
                .iter()
                .any(|&n| cx.beam.nodes[n].term().is_some_and(Term::is_entity))
    }

    pub(super) fn relation_groups(&self, cx: &Context) -> Vec<Group> {
        self.frontier(cx)
            .into_iter()
            .map(|p| Group { parent: p, candidates: Self::candidates_under(cx, p), request: None })
            .filter(|g| !g.candidates.is_empty())
            .collect()
    }

    pub(super) fn candidates_under(cx: &Context, parent: NodeId) -> Vec<NodeId> {
        cx.beam.nodes[parent]
            .children
            .iter()
            .copied()
            .filter(|&c| cx.beam.nodes[c].status == Status::Candidate)
            .collect()
    }
}
