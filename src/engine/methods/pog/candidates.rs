//! Candidate paths: a path of the question subgraph walked onto the beam (one beam node per
//! hop, merged with what is there), and how a candidate is named and shown.

use super::subgraph::SgPath;
use super::{Cand, MAX_CANDIDATES, Phase, PogMachine, Stage};
use crate::engine::beam::{NodeId, NodeKind, Provenance};
use crate::engine::events::Event;
use crate::engine::step::plural_s;
use crate::engine::{Context, PathView};
use crate::kg::Direction;
use rand::Rng;
use std::sync::Arc;

impl PogMachine {
    pub(super) fn path_view(&self, cx: &Context, c: usize) -> PathView {
        let cand = &self.cands[c];
        PathView { leaf: cand.leaf, text: cand.text.clone(), score: cand.fuzzy, triples: cx.beam.triples(cand.leaf) }
    }

    /// Adds a candidate (or finds it); inserts its path into the beam.
    pub(super) fn candidate(&mut self, cx: &mut Context, path: SgPath, base: Option<usize>) -> usize {
        if let Some(&c) = self.index.get(&(path.clone(), base)) {
            return c;
        }
        let leaf = self.insert(cx, &path);
        let text = match base {
            Some(b) => {
                let anchor = path.len() - 1;
                format!("{} ; {}", self.cands[b].text, self.path_text_of(&path, anchor))
            }
            None => self.path_text_of(&path, 0),
        };
        let c = self.cands.len();
        Arc::make_mut(&mut self.cands).push(Cand { path: path.clone(), base, text, leaf, fuzzy: 0.0 });
        Arc::make_mut(&mut self.index).insert((path, base), c);
        c
    }

    /// The relations walked on `edge` from `from`: all of them, or PoG-E's one (see
    /// [`pog_e_choice`]).
    fn walked(&self, edge: usize, from: usize) -> Vec<(String, Direction)> {
        let mut rels = self.sg.relations_from(edge, from);
        if self.one_relation && rels.len() > 1 {
            rels = vec![rels.swap_remove(pog_e_choice(self.seed, edge, rels.len()))];
        }
        rels
    }

    /// `{Giants} - {-> won ->} - {2010 World Series}`, from hop `from` of the path on.
    pub(super) fn path_text_of(&self, path: &SgPath, from: usize) -> String {
        let mut parts = vec![format!("{{{}}}", self.node_name(path.nodes[from]))];
        for i in from..path.len() {
            let shown: Vec<String> = self
                .walked(path.edges[i], path.nodes[i])
                .iter()
                .map(|(r, d)| format!("{} {r} {}", d.arrow(), d.arrow()))
                .collect();
            parts.push(format!("{{{}}}", shown.join(" | ")));
            parts.push(format!("{{{}}}", self.node_name(path.nodes[i + 1])));
        }
        parts.join(" - ")
    }

    /// Puts a candidate's path into the beam tree (sharing prefixes with paths already there)
    /// and returns its leaf.
    pub(super) fn insert(&mut self, cx: &mut Context, path: &SgPath) -> NodeId {
        let start = &self.sg.nodes[path.nodes[0]].term;
        let root = cx.beam.roots().find(|r| r.term() == Some(start)).map(|r| r.id);
        let mut at = match root {
            Some(r) => r,
            None => {
                let label = self.sg.nodes[path.nodes[0]].label.clone();
                cx.beam.add(None, NodeKind::Entity { term: start.clone(), label }, Provenance::User)
            }
        };
        for i in 0..path.len() {
            let rels = self.walked(path.edges[i], path.nodes[i]);
            let Some((relation, direction)) = rels.first().cloned() else { continue };
            let shown = rels
                .iter()
                .map(|(r, d)| {
                    let r = cx.profile.display_relation(r);
                    if *d != direction { format!("{r} (reverse)") } else { r }
                })
                .collect::<Vec<_>>()
                .join(" | ");
            let existing = cx.beam.nodes[at].children.iter().copied().find(|&k| {
                matches!(&cx.beam.nodes[k].kind, NodeKind::Relation { shown: s, direction: d, .. } if *s == shown && *d == direction)
            });
            // A fact a correction asserted is marked so, as on ToG's beam.
            let correction = self.sg.correction(path.nodes[i], &relation, direction, path.nodes[i + 1]);
            let rel = existing.unwrap_or_else(|| {
                let graph = cx.graph_name.clone();
                cx.beam.add(Some(at), NodeKind::Relation { relation, direction, shown }, Provenance::Kg { graph })
            });
            let next = &self.sg.nodes[path.nodes[i + 1]];
            let existing =
                cx.beam.nodes[rel].children.iter().copied().find(|&k| cx.beam.nodes[k].term() == Some(&next.term));
            at = existing.unwrap_or_else(|| {
                let kind = NodeKind::Entity { term: next.term.clone(), label: next.label.clone() };
                let provenance = match correction {
                    Some(id) => Provenance::Correction { id },
                    None => Provenance::Kg { graph: cx.graph_name.clone() },
                };
                cx.beam.add(Some(rel), kind, provenance)
            });
        }
        at
    }

    /// Collects the current stage's topic-entity paths as the pool; a depth that offers nothing
    /// new moves on to the next, and past Dmax to the LLM supplement.
    pub(super) fn gather(&mut self, cx: &mut Context, ev: &mut Event) {
        let dmax = cx.settings.depth.max(1);
        let previous: Vec<usize> = self.pool.clone();
        while let Stage::TopicPaths(d) = self.stage {
            let stretch = d as usize;
            let paths: Vec<SgPath> = if self.connected {
                self.sg.paths_through(&self.topics, 2 * stretch, &self.keep, MAX_CANDIDATES)
            } else {
                let per = MAX_CANDIDATES / self.topics.len().max(1);
                self.topics.iter().flat_map(|&t| self.sg.paths_from(t, stretch, &self.keep, per)).collect()
            };
            let mut pool: Vec<usize> = Vec::new();
            for p in paths {
                self.offer(cx, &mut pool, p, None);
            }
            self.add_pinned(&mut pool);
            if !pool.is_empty() && pool != previous {
                ev.notes.push(format!("{}: {} candidate path{}", self.stage.name(), pool.len(), plural_s(pool.len())));
                self.pool = pool;
                self.open_stage();
                return;
            }
            if d < dmax {
                self.stage = Stage::TopicPaths(d + 1);
            } else {
                ev.notes.push("no further topic-entity paths up to the maximum depth".into());
                self.stage = Stage::Supplement;
                self.phase = Phase::Supplement;
            }
        }
    }

    /// Adds the candidate for `path` to `pool` unless the user pruned it or it is there already;
    /// says whether it was added.
    pub(super) fn offer(&mut self, cx: &mut Context, pool: &mut Vec<usize>, path: SgPath, base: Option<usize>) -> bool {
        let c = self.candidate(cx, path, base);
        let new = !self.banned.contains(&c) && !pool.contains(&c);
        if new {
            pool.push(c);
        }
        new
    }

    pub(super) fn add_pinned(&self, pool: &mut Vec<usize>) {
        for &p in &self.pinned {
            if !pool.contains(&p) {
                pool.push(p);
            }
        }
    }

    pub(super) fn node_name(&self, n: usize) -> String {
        let node = &self.sg.nodes[n];
        node.label.clone().unwrap_or_else(|| node.term.as_str().to_string())
    }
}

/// PoG-E's rule for a hop with several relations between the same two nodes: one of them,
/// drawn from a generator seeded with the run's seed and the edge, so the same seed always
/// walks the same relation (the reference takes the first after sorting).
fn pog_e_choice(seed: u64, edge: usize, n: usize) -> usize {
    use rand::SeedableRng;
    let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(seed ^ (edge as u64).wrapping_mul(0x9E37_79B9_7F4A_7C15));
    rng.random_range(0..n)
}
