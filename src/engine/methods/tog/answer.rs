//! What the sufficiency check and the answer are shown (the live paths' triples or ToG-R's
//! chains, the names they reach), how the run ends, and where it goes when the paths do not
//! suffice.

use super::{Phase, TogMachine};
use crate::engine::beam::{NodeId, NodeKind, TripleView, UNNAMED};
use crate::engine::events::Event;
use crate::engine::method::Method;
use crate::engine::parse;
use crate::engine::{Answer, AnswerSource, Context, Fallback, PathView};
use crate::kg::Term;

impl TogMachine {
    /// The triples of the live paths, without repeats. An entity merged from several paths
    /// brings the triples of every path that reached it.
    fn shown_triples(&self, cx: &Context) -> Vec<TripleView> {
        let beam = &cx.beam;
        let mut shown: Vec<TripleView> = Vec::new();
        for path in self.live_paths(cx) {
            let merged = beam.path(path.leaf).into_iter().flat_map(|n| beam.nodes[n].also_via.iter().copied());
            for t in merged.flat_map(|copy| beam.triples(copy)).chain(path.triples) {
                if !shown.iter().any(|s| s.line() == t.line()) {
                    shown.push(t);
                }
            }
        }
        shown
    }

    /// The triples of the live paths, one `head, relation, tail` per line.
    pub(super) fn triples_text(&self, cx: &Context) -> String {
        self.shown_triples(cx).iter().map(TripleView::line).collect::<Vec<_>>().join("\n")
    }

    /// What a judgment may answer: the named entities and values the shown triples reach. A
    /// topic entity (where every path starts) only when a path comes back to it. Under a hop
    /// plan, only what the paths reach at its depth or beyond, when they reach anything named
    /// there (not only unnamed nodes, such as Freebase's CVTs): the entities on the way are
    /// what a judgment mistakes for the answer (the parent for the grandmother), and the plan
    /// says the answer lies further out, so the ends of shorter paths are left out too.
    pub(super) fn reachable_names(&self, cx: &Context) -> Vec<String> {
        let beam = &cx.beam;
        let topics: Vec<&str> = beam.roots().map(|r| r.shown()).collect();
        // The entities each live path reaches past its root (ToG-R shows only its leaf).
        let mut reached: Vec<(String, u32)> = Vec::new();
        for path in self.live_paths(cx) {
            let nodes = beam.path(path.leaf);
            let past_root = if self.chains { &nodes[nodes.len() - 1..] } else { nodes.get(1..).unwrap_or_default() };
            for &n in past_root {
                let node = &beam.nodes[n];
                if node.term().is_some() && node.is_named() {
                    reached.push((node.shown().to_string(), node.depth));
                }
            }
        }
        let planned = if cx.settings.plan_narrows_answers { self.first_judged() } else { 1 };
        if planned > 1 && reached.iter().any(|(_, depth)| *depth >= planned) {
            let mut out: Vec<String> = Vec::new();
            for (name, depth) in reached {
                if depth >= planned && name != UNNAMED && !out.contains(&name) {
                    out.push(name);
                }
            }
            return out;
        }
        let reached: Vec<String> = reached.into_iter().map(|(name, _)| name).collect();
        let mut names = reached.clone();
        if !self.chains {
            for t in self.shown_triples(cx) {
                names.push(t.head);
                names.push(t.tail);
            }
        }
        let mut out: Vec<String> = Vec::new();
        for name in names {
            let returns_to_topic = reached.contains(&name);
            if name != UNNAMED && (returns_to_topic || !topics.contains(&name.as_str())) && !out.contains(&name) {
                out.push(name);
            }
        }
        out
    }

    /// ToG-R's view: each live relation chain with the live entities it reaches.
    pub(super) fn chains_text(&self, cx: &Context) -> String {
        let beam = &cx.beam;
        let mut chains: Vec<(String, Vec<String>)> = Vec::new();
        for path in self.live_paths(cx) {
            let ids = beam.path(path.leaf);
            let Some(&root) = ids.first() else { continue };
            let mut chain = beam.nodes[root].shown().to_string();
            for &n in &ids {
                if let NodeKind::Relation { shown, direction, .. } = &beam.nodes[n].kind {
                    chain.push_str(" -> ");
                    chain.push_str(shown);
                    if *direction == crate::kg::Direction::In {
                        chain.push_str(" (incoming)");
                    }
                }
            }
            let entity = beam.nodes[path.leaf].shown().to_string();
            match chains.iter_mut().find(|(c, _)| *c == chain) {
                Some((_, entities)) if !entities.contains(&entity) => entities.push(entity),
                Some(_) => {}
                None => chains.push((chain, vec![entity])),
            }
        }
        chains.into_iter().map(|(c, e)| format!("{c}: {}", e.join("; "))).collect::<Vec<_>>().join("\n")
    }

    pub(super) fn finish(&mut self, cx: &mut Context, mut answers: Vec<String>, reply: String, source: AnswerSource) {
        // `{unknown | X}` answers X; only an answer of nothing but unknown stays so.
        if answers.iter().any(|a| !parse::is_unknown(a)) {
            answers.retain(|a| !parse::is_unknown(a));
        }
        let mut paths = self.live_paths(cx);
        // The paths merged into a kept entity's slot were shown to the model too.
        let beam = &cx.beam;
        let merged: Vec<NodeId> =
            paths.iter().flat_map(|p| beam.path(p.leaf)).flat_map(|n| beam.nodes[n].also_via.clone()).collect();
        for copy in merged {
            if !paths.iter().any(|p| p.leaf == copy) {
                let (text, score, triples) = (beam.path_text(copy), beam.nodes[copy].path_score, beam.triples(copy));
                paths.push(PathView { leaf: copy, text, score, triples });
            }
        }
        let why = self.why_for(source);
        cx.answer = Some(Answer { answers, source, reply, paths, why });
        self.phase = Phase::Done;
    }

    /// Answering from `source` without (sufficient) paths, because `why`.
    pub(super) fn answer_because(&mut self, source: AnswerSource, why: String) -> Phase {
        self.why = Some(why);
        Phase::Answer(source)
    }

    /// Why an answer from `source` comes from there, when it is not the paths.
    pub(super) fn why_for(&self, source: AnswerSource) -> Option<String> {
        match source {
            AnswerSource::OwnKnowledge | AnswerSource::PartialPaths => self.why.clone(),
            _ => None,
        }
    }

    /// After "not sufficient": one more depth; at Dmax, the model's own knowledge; with no
    /// entity left to expand, the partial paths.
    pub(super) fn next_depth(&mut self, cx: &Context, ev: &mut Event) -> Phase {
        if self.depth >= cx.settings.depth {
            ev.notes.push(format!("maximum depth {} reached without a sufficient answer", cx.settings.depth));
            return match cx.settings.fallback {
                Fallback::PartialPaths => self.answer_because(AnswerSource::PartialPaths, DEPTH_LIMIT_PARTIAL.into()),
                Fallback::OwnKnowledge => self.answer_because(AnswerSource::OwnKnowledge, DEPTH_LIMIT.into()),
            };
        }
        let expandable = Self::live_entities_at(cx, self.depth)
            .into_iter()
            .any(|n| cx.beam.nodes[n].term().is_some_and(Term::is_entity));
        if !expandable {
            ev.notes.push("no entity left to expand (only literal values)".into());
            return self
                .answer_because(AnswerSource::PartialPaths, "no entity left to expand, only literal values".into());
        }
        self.depth += 1;
        Phase::RelationSearch
    }

    /// Nothing left to explore: answer from what the paths hold, or from own knowledge when
    /// nothing was ever kept.
    pub(super) fn dry(&mut self, ev: &mut Event) -> Phase {
        ev.notes.push("the beam ran dry: nothing left to explore".into());
        if self.depth <= 1 {
            self.answer_because(
                AnswerSource::OwnKnowledge,
                "the beam ran dry at the first hop: no path was kept".into(),
            )
        } else {
            self.answer_because(AnswerSource::PartialPaths, "the beam ran dry".into())
        }
    }
}

/// Why ToG answers from the model's own knowledge at Dmax (the wording answers have always had).
pub(super) const DEPTH_LIMIT: &str = "no sufficient KG path within the depth limit";

/// Why the answer comes from the paths collected when the depth limit is reached.
pub(super) const DEPTH_LIMIT_PARTIAL: &str =
    "no path judged sufficient within the depth limit; answered from those collected";
