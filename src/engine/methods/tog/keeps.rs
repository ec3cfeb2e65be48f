//! What the user's keeps protect: a node the user kept, added or pinned shields what grows
//! below it through its next entity selection, and the notes that say what it kept.

use super::scoring::offered_name;
use super::{Group, TogMachine};
use crate::engine::Context;
use crate::engine::beam::{NodeId, NodeKind, Status};
use crate::engine::events::Event;

impl TogMachine {
    /// An entity the user kept whose relations the model has just pruned all away keeps the
    /// best of them (the first listed when all scored 0), so what the user kept reaches its
    /// next entity selection. Returns how many relations were kept so.
    pub(super) fn keep_one_under_user_keeps(&self, cx: &mut Context, plan: &[Group], ev: &mut Event) -> usize {
        let mut kept = 0;
        for g in plan.iter().filter(|g| self.user.contains(&g.parent)) {
            let beam = &cx.beam;
            if g.candidates.iter().any(|&c| beam.nodes[c].status == Status::Kept) {
                continue;
            }
            let score = |c: NodeId| beam.nodes[c].score.unwrap_or(0.0);
            let Some(best) = g.candidates.iter().copied().reduce(|a, b| if score(b) > score(a) { b } else { a }) else {
                continue;
            };
            let entity = beam.nodes[g.parent].shown().to_string();
            let reason = format!("kept: the best of the relations of {entity}, which you kept");
            cx.beam.set_status(best, Status::Kept, Some(&reason), ev.index);
            ev.notes.push(format!(
                "the model kept none of the relations of {entity}, which you kept: {} kept as the best of them",
                cx.beam.nodes[best].shown()
            ));
            for d in ev.decisions.iter_mut().filter(|d| d.node == best) {
                d.status = Status::Kept;
            }
            kept += 1;
        }
        kept
    }

    /// The node the user kept that protects candidate `c` in this depth's entity selection:
    /// its nearest ancestor the user kept whose protection lasts to this depth.
    pub(super) fn shield_of(&self, cx: &Context, c: NodeId) -> Option<NodeId> {
        let path = cx.beam.path(c);
        path.into_iter().rev().skip(1).find(|&n| self.user.contains(&n) && shield_depth(cx, n) == self.depth)
    }

    /// What this hop's scores make of candidate `c`: its own score times its relation's, a
    /// relation the user kept or added counting 1 (unscored counts 1 too).
    pub(super) fn hop_score(&self, cx: &Context, c: NodeId) -> f64 {
        let n = &cx.beam.nodes[c];
        let relation =
            n.parent.map_or(1.0, |r| if self.user.contains(&r) { 1.0 } else { cx.beam.nodes[r].score.unwrap_or(1.0) });
        n.score.unwrap_or(1.0) * relation
    }

    /// Whether candidate `c`'s path scores 0 only because of nodes the user kept (the model gave
    /// them 0 and the user kept them anyway), not because of a score of this hop.
    pub(super) fn zero_from_user(&self, cx: &Context, c: NodeId) -> bool {
        let beam = &cx.beam;
        let own = beam.nodes[c].score.is_none_or(|s| s > 0.0);
        own && beam
            .path(c)
            .iter()
            .filter(|&&n| n != c && beam.nodes[n].score == Some(0.0))
            .all(|n| self.user.contains(n))
    }
}

/// The depth of the entity selection that a node the user kept protects: a relation's own
/// hop (the entities it reaches); an entity's next hop (the entities its relations reach).
pub(super) fn shield_depth(cx: &Context, node: NodeId) -> u32 {
    let n = &cx.beam.nodes[node];
    match n.kind {
        NodeKind::Relation { .. } => n.depth,
        NodeKind::Entity { .. } => n.depth + 1,
    }
}

/// What the user's keeps did in one entity selection, per node the user kept: the paths
/// standing under it, those kept because of it, those beyond its width, and those waiting for a
/// place once the beam's own are chosen.
#[derive(Default)]
pub(super) struct Shields {
    tally: Vec<Tally>,
    pub(super) waiting: Vec<(NodeId, Vec<NodeId>)>,
}

struct Tally {
    node: NodeId,
    standing: usize,
    kept: Vec<String>,
    beyond: usize,
}

impl Shields {
    fn entry(&mut self, k: NodeId) -> &mut Tally {
        let i = match self.tally.iter().position(|t| t.node == k) {
            Some(i) => i,
            None => {
                self.tally.push(Tally { node: k, standing: 0, kept: Vec::new(), beyond: 0 });
                self.tally.len() - 1
            }
        };
        &mut self.tally[i]
    }

    /// A path under `k` kept on its own merits.
    pub(super) fn count(&mut self, k: NodeId) {
        self.entry(k).standing += 1;
    }

    /// `c`, under `k`, kept because the user kept `k`: the reason to record.
    pub(super) fn kept(&mut self, cx: &Context, k: NodeId, c: NodeId) -> String {
        let t = self.entry(k);
        t.standing += 1;
        t.kept.push(cx.beam.nodes[c].shown().to_string());
        format!("kept: under {}, which you kept", cx.beam.nodes[k].shown())
    }

    /// A path under `k` beyond its width: the reason to record.
    pub(super) fn beyond(&mut self, cx: &Context, k: NodeId) -> String {
        self.entry(k).beyond += 1;
        format!("beyond the beam width of the paths under {}, which you kept", cx.beam.nodes[k].shown())
    }

    pub(super) fn wait(&mut self, k: NodeId, c: NodeId) {
        self.entry(k);
        match self.waiting.iter_mut().find(|(s, _)| *s == k) {
            Some((_, list)) => list.push(c),
            None => self.waiting.push((k, vec![c])),
        }
    }

    pub(super) fn standing(&mut self, k: NodeId) -> usize {
        self.entry(k).standing
    }

    /// One note per node the user kept whose keep kept, or left out, something.
    pub(super) fn notes(&self, cx: &Context) -> Vec<String> {
        let tallies = self.tally.iter().filter(|t| !t.kept.is_empty() || t.beyond > 0);
        tallies
            .map(|t| {
                let n = &cx.beam.nodes[t.node];
                let zero = if n.score == Some(0.0) { " (the model scored it 0)" } else { "" };
                let what =
                    if t.kept.is_empty() { "nothing more kept".to_string() } else { format!("kept {}", t.kept.join(", ")) };
                let beyond =
                    if t.beyond > 0 { format!("; {} more beyond the beam width", t.beyond) } else { String::new() };
                let kept_node = match (&n.kind, n.parent) {
                    (NodeKind::Relation { .. }, Some(p)) => {
                        format!("the relation {} of {}", offered_name(n), cx.beam.nodes[p].shown())
                    }
                    _ => offered_name(n),
                };
                format!(
                    "under {kept_node}, which you kept{zero}: {what}, scored but not pruned by score, beside the beam's own{beyond}"
                )
            })
            .collect()
    }
}
