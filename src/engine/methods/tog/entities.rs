//! The entity phase: the candidates a kept relation reaches, then ToG's global width (scores)
//! or ToG-R's seeded draw.

use super::keeps::Shields;
use super::{Group, TogMachine};
use crate::engine::Context;
use crate::engine::beam::{NodeId, NodeKind, Provenance, Status};
use crate::engine::events::{Decision, Event};
use crate::engine::step::sample_indices;
use crate::kg::{Neighbour, Term};
use rand::Rng;
use std::cmp::Ordering::Equal;

impl TogMachine {
    /// Adds the entities reached through relation node `rel`; samples (seeded) an oversized set.
    /// Entities already on the path are offered too (some questions' paths come back to an
    /// entity: "the nationality of the heir of X's father" is X's), except by crossing back the
    /// very triple just crossed, which can add nothing.
    pub(super) fn add_candidates(
        &mut self,
        cx: &mut Context,
        rel: NodeId,
        neighbours: Vec<Neighbour>,
        ev: &mut Event,
    ) -> usize {
        let back = Self::triple_back(cx, rel);
        let mut added = Vec::new();
        let mut skipped = 0;
        for nb in neighbours {
            if back.as_ref() == Some(&nb.term) {
                skipped += 1;
                continue;
            }
            let label = nb.label.or_else(|| match &nb.term {
                Term::Literal(v) => Some(v.clone()),
                Term::Entity(_) => None,
            });
            let provenance = match nb.correction {
                Some(id) => Provenance::Correction { id },
                None => Provenance::Kg { graph: cx.graph_name.clone() },
            };
            added.push(cx.beam.add(Some(rel), NodeKind::Entity { term: nb.term, label }, provenance));
        }
        if skipped > 0 {
            ev.notes.push(format!("{} leads back across the triple just crossed; skipped", cx.beam.path_text(rel)));
        }
        let s = &cx.settings;
        if added.len() >= s.sample_threshold && s.sample_size < added.len() {
            let keep = sample_indices(&mut cx.rng, added.len(), s.sample_size);
            for (i, &node) in added.iter().enumerate() {
                if !keep.contains(&i) {
                    cx.beam.set_status(
                        node,
                        Status::PrunedBySample,
                        Some("sampled out of an oversized candidate set"),
                        ev.index,
                    );
                }
            }
            ev.notes.push(format!(
                "{} candidates through {}; {} sampled (seeded) before scoring",
                added.len(),
                cx.beam.nodes[rel].shown(),
                s.sample_size
            ));
        }
        added.len()
    }

    /// ToG's global width: among this depth's scored entity candidates, the N best path scores
    /// stay; zero scores are pruned by score, the rest by width. An entity reached by several
    /// paths takes one beam slot, on its best path (the reference spends slots on duplicates);
    /// the other paths that reached it are merged into that slot (`also_via`), so neither their
    /// triples nor the hops they make legal are lost.
    ///
    /// A candidate below a node the user kept ([`TogMachine::user`]) is never pruned by score;
    /// those the width leaves out are kept beside the beam, the best by this hop's scores first,
    /// until N stand under that node.
    pub(super) fn select_width(&mut self, cx: &mut Context, groups: &[Group], ev: &mut Event) {
        let step = ev.index;
        let mut candidates: Vec<NodeId> = groups
            .iter()
            .flat_map(|g| g.candidates.iter().copied())
            .filter(|&c| cx.beam.nodes[c].status == Status::Candidate)
            .collect();
        candidates.sort_by(|&a, &b| {
            let (pa, pb) = (cx.beam.nodes[a].path_score, cx.beam.nodes[b].path_score);
            // Paths that score 0 only because of a node the user kept rank among themselves
            // by this hop's scores.
            let zero = pa <= 0.0 && pb <= 0.0;
            pb.total_cmp(&pa)
                .then_with(|| if zero { self.hop_score(cx, b).total_cmp(&self.hop_score(cx, a)) } else { Equal })
                .then(a.cmp(&b))
        });
        let mut shields = Shields::default();
        // (entity, the node that holds its slot)
        let mut taken: Vec<(Term, NodeId)> = Vec::new();
        for &c in &candidates {
            let shield = self.shield_of(cx, c);
            let term = cx.beam.nodes[c].term().cloned();
            let holder = term.as_ref().and_then(|t| taken.iter().find(|(k, _)| k == t)).map(|&(_, n)| n);
            let zero = cx.beam.nodes[c].path_score <= 0.0;
            let (status, reason) = if zero && shield.is_none() && !self.zero_from_user(cx, c) {
                (Status::PrunedByScore, Some("scored 0".to_string()))
            } else if let Some(holder) = holder {
                cx.beam.nodes[holder].also_via.push(c);
                (Status::PrunedByWidth, Some(MERGED.to_string()))
            } else if taken.len() < cx.settings.width {
                taken.extend(term.map(|t| (t, c)));
                match shield {
                    // A free place, but without the user's keep it would have scored 0.
                    Some(k) if zero => (Status::Kept, Some(shields.kept(cx, k, c))),
                    Some(k) => {
                        shields.count(k);
                        (Status::Kept, None)
                    }
                    None => (Status::Kept, None),
                }
            } else if let Some(k) = shield {
                shields.wait(k, c);
                continue;
            } else {
                (Status::PrunedByWidth, Some("beyond the beam width".to_string()))
            };
            cx.beam.set_status(c, status, reason.as_deref(), step);
        }
        for (k, mut waiting) in std::mem::take(&mut shields.waiting) {
            waiting.sort_by(|&a, &b| self.hop_score(cx, b).total_cmp(&self.hop_score(cx, a)).then(a.cmp(&b)));
            for c in waiting {
                let term = cx.beam.nodes[c].term().cloned();
                let holder = term.as_ref().and_then(|t| taken.iter().find(|(k, _)| k == t)).map(|&(_, n)| n);
                let (status, reason) = if let Some(holder) = holder {
                    cx.beam.nodes[holder].also_via.push(c);
                    (Status::PrunedByWidth, MERGED.to_string())
                } else if shields.standing(k) < cx.settings.width {
                    taken.extend(term.map(|t| (t, c)));
                    (Status::Kept, shields.kept(cx, k, c))
                } else {
                    (Status::PrunedByWidth, shields.beyond(cx, k))
                };
                cx.beam.set_status(c, status, Some(&reason), step);
            }
        }
        ev.notes.extend(shields.notes(cx));
        for d in &mut ev.decisions {
            let n = &cx.beam.nodes[d.node];
            d.status = n.status;
            d.path_score = n.path_score;
        }
    }

    /// ToG-R: each candidate's score is its chain's score shared among every entity the chain
    /// reached (those sampled out of an oversized set included, so a relation fanning out to
    /// hundreds of values cannot crowd a narrow chain out of the draw); N are drawn by seeded
    /// weighted sampling without replacement. Candidates below a node the user kept that the
    /// draw leaves out are drawn again among themselves, by their shares (a zero the model
    /// gave the node the user kept does not count against them), until N stand under it.
    pub(super) fn sample_entities(&mut self, cx: &mut Context, groups: &[Group], ev: &mut Event) {
        let step = ev.index;
        let mut pool: Vec<NodeId> = Vec::new();
        for g in groups {
            let reached = cx.beam.nodes[g.parent].children.len().max(g.candidates.len());
            let share = 1.0 / reached as f64;
            for &c in &g.candidates {
                cx.beam.score(c, share, step);
                pool.push(c);
            }
        }
        let weights: Vec<f64> = pool.iter().map(|&c| cx.beam.nodes[c].path_score).collect();
        let chosen = weighted_sample(&mut cx.rng, &weights, cx.settings.width);
        let mut shields = Shields::default();
        for (i, &c) in pool.iter().enumerate() {
            let shield = self.shield_of(cx, c);
            match (chosen.contains(&i), shield) {
                (true, Some(k)) if cx.beam.nodes[c].path_score <= 0.0 => {
                    let reason = shields.kept(cx, k, c);
                    cx.beam.set_status(c, Status::Kept, Some(&reason), step);
                }
                (true, shield) => {
                    shield.into_iter().for_each(|k| shields.count(k));
                    cx.beam.set_status(c, Status::Kept, Some("sampled"), step);
                }
                (false, Some(k)) => shields.wait(k, c),
                (false, None) => {
                    cx.beam.set_status(c, Status::PrunedByWidth, Some("not drawn in the seeded sample"), step)
                }
            }
        }
        for (k, waiting) in std::mem::take(&mut shields.waiting) {
            let room = cx.settings.width.saturating_sub(shields.standing(k));
            let shares: Vec<f64> = waiting.iter().map(|&c| self.hop_score(cx, c)).collect();
            let drawn = if waiting.len() <= room {
                (0..waiting.len()).collect()
            } else {
                weighted_sample(&mut cx.rng, &shares, room)
            };
            for (i, &c) in waiting.iter().enumerate() {
                let (status, reason) = if drawn.contains(&i) {
                    (Status::Kept, shields.kept(cx, k, c))
                } else {
                    (Status::PrunedByWidth, shields.beyond(cx, k))
                };
                cx.beam.set_status(c, status, Some(&reason), step);
            }
        }
        ev.notes.extend(shields.notes(cx));
        for c in pool {
            let n = &cx.beam.nodes[c];
            ev.decisions.push(Decision {
                node: c,
                shown: n.shown().into(),
                score: n.score,
                path_score: n.path_score,
                status: n.status,
            });
        }
    }
}

/// Why a candidate reaching an entity another path holds is not kept on its own.
const MERGED: &str = "same entity kept on a better path; merged into it";

/// Weighted sampling without replacement (Efraimidis–Spirakis): `k` indices, ascending.
fn weighted_sample(rng: &mut impl Rng, weights: &[f64], k: usize) -> Vec<usize> {
    let mut keyed: Vec<(f64, usize)> = weights
        .iter()
        .enumerate()
        .map(|(i, &w)| {
            let u: f64 = rng.random::<f64>().max(f64::MIN_POSITIVE);
            (if w > 0.0 { u.ln() / w } else { f64::NEG_INFINITY }, i)
        })
        .collect();
    keyed.sort_by(|a, b| b.0.total_cmp(&a.0).then(a.1.cmp(&b.1)));
    let mut picked: Vec<usize> = keyed.into_iter().take(k).map(|(_, i)| i).collect();
    picked.sort_unstable();
    picked
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::SeedableRng;
    use rand_chacha::ChaCha8Rng;

    #[test]
    fn weighted_sampling_is_seeded_distinct_and_draws_zero_weights_last() {
        let draw = |seed, k| weighted_sample(&mut ChaCha8Rng::seed_from_u64(seed), &[0.0, 1.0, 1.0, 0.0, 5.0], k);
        assert_eq!(draw(7, 2), draw(7, 2), "the same seed, the same draw");
        for seed in 0..50 {
            let two = draw(seed, 2);
            assert_eq!(two.len(), 2);
            assert!(two.iter().all(|&i| i != 0 && i != 3), "a zero weight drawn before a positive one: {two:?}");
        }
        assert_eq!(draw(3, 4), vec![0, 1, 2, 4], "past the positive weights, the first zero-weight one");
        assert!(draw(3, 0).is_empty());
        let seeds: Vec<Vec<usize>> = (0..20).map(|seed| draw(seed, 1)).collect();
        assert!(seeds.iter().any(|d| d != &seeds[0]), "the seed decides the draw");
        let heavy = (0..400).filter(|&seed| draw(seed, 1) == vec![4]).count();
        assert!(heavy > 250, "weight 5 of 7 drawn first in {heavy} of 400");
    }
}
