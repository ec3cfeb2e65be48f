//! Think-on-Graph and ToG-R as a state machine over the shared beam tree.
//!
//! Per depth: relation search → relation prune → entity search → entity prune → reasoning; then
//! the answer. Unlike the reference code: incoming relations are expanded in the right
//! direction; every candidate is one beam node (id, label, direction, score, provenance); path
//! scores multiply down the path; relations the model invents are rejected and never queried;
//! at most N are kept; literals are candidates and can be answers; the beam running dry ends
//! the search cleanly; explored paths are kept and shown with an own-knowledge answer.

use super::beam::{KEPT_BY_YOU, NodeId, NodeKind, Provenance, Status, TripleView, UNNAMED};
use super::events::{Decision, Event, LookupRecord};
use super::lexical::{bm25_tokens, cosine, query_without, tokens};
use super::method::Method;
use super::parse;
use super::step::{
    ANSWERED, answer_call, completion, judged, neighbours, plural_s, plural_y, record, relations, sample_indices,
    unpinning, unreadable, wrong,
};
use super::structured::Shape;
use super::topics::TopicLinker;
use super::{
    Answer, AnswerSource, Context, EngineError, Fallback, Override, PathView, PruneTool, Request, Response, Topics,
};
use crate::kg::{Neighbour, RelationRef, Term};
use crate::prompts::Template;
use rand::Rng;
use std::cmp::Ordering::Equal;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Phase {
    Topics,
    RelationSearch,
    RelationPrune,
    EntitySearch,
    EntityPrune,
    Reasoning,
    Answer(AnswerSource),
    Done,
}

/// (candidate position, normalised score), best first.
type Ranked = Vec<(usize, f64)>;

/// What a batch is for: the nodes its lookups expand (in request order) and the groups its
/// scoring calls score.
#[derive(Debug, Default)]
pub(crate) struct TogPlan {
    nodes: Vec<NodeId>,
    groups: Vec<Group>,
}

/// One scoring prompt's worth of candidates: the node they hang under and the candidates.
#[derive(Clone, Debug)]
struct Group {
    parent: NodeId,
    candidates: Vec<NodeId>,
    /// Index of the request that scores this group (None: scored without a call).
    request: Option<usize>,
}

#[derive(Clone, Debug)]
pub(crate) struct TogMachine {
    phase: Phase,
    /// The hop being explored (1-based); 0 before the topic entities are linked.
    depth: u32,
    linker: TopicLinker,
    /// ToG-R: relation chains, entities sampled instead of scored.
    chains: bool,
    /// The last sufficiency verdict (overrides of the verdict need it).
    last_verdict: Option<bool>,
    /// Speculation: `depth` has moved on to the next hop while the verdict on the previous one
    /// is still to come (its reasoning call goes out with this hop's relation scoring).
    pending_verdict: bool,
    /// Nodes the user kept, added or pinned. Each protects what grows below it through the next
    /// entity selection under it ([`shield_depth`]): there its candidates are scored but not
    /// pruned by score, and take up to N places of their own beside the model's N.
    user: Vec<NodeId>,
    /// Why the run is to answer without (sufficient) paths, said with that answer
    /// ([`Answer::why`]): set whenever the phase turns to an own-knowledge or partial answer.
    why: Option<String>,
}

impl TogMachine {
    pub fn new(cx: &mut Context, topics: Topics, chains: bool) -> Result<Self, EngineError> {
        let linker = TopicLinker::new(cx, topics)?;
        let linked = linker.done();
        Ok(Self {
            phase: if linked { Phase::RelationSearch } else { Phase::Topics },
            depth: u32::from(linked),
            linker,
            chains,
            last_verdict: None,
            pending_verdict: false,
            user: Vec::new(),
            why: None,
        })
    }

    /// Live entity nodes at `depth` (topic entities at 0) whose whole path is live.
    fn live_entities_at(cx: &Context, depth: u32) -> Vec<NodeId> {
        cx.beam
            .nodes
            .iter()
            .filter(|n| n.depth == depth && n.term().is_some() && n.status.is_live() && cx.beam.is_live_path(n.id))
            .map(|n| n.id)
            .collect()
    }

    /// The entities expanded at the current depth: last depth's live entities, literals aside.
    fn frontier(&self, cx: &Context) -> Vec<NodeId> {
        Self::live_entities_at(cx, self.depth.saturating_sub(1))
            .into_iter()
            .filter(|&n| cx.beam.nodes[n].term().is_some_and(Term::is_entity))
            .collect()
    }

    /// Live relation nodes at the current depth.
    fn live_relations(&self, cx: &Context) -> Vec<NodeId> {
        Self::live_relations_at(cx, self.depth)
    }

    fn live_relations_at(cx: &Context, depth: u32) -> Vec<NodeId> {
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
    fn triple_back(cx: &Context, rel: NodeId) -> Option<Term> {
        let r = &cx.beam.nodes[rel];
        let NodeKind::Relation { relation, direction, .. } = &r.kind else { return None };
        let entity = &cx.beam.nodes[r.parent?];
        let came_from = |copy: NodeId| -> Option<Term> {
            let via = &cx.beam.nodes[cx.beam.nodes[copy].parent?];
            let NodeKind::Relation { relation: came, direction: came_dir, .. } = &via.kind else { return None };
            (came == relation && came_dir != direction).then(|| cx.beam.nodes[via.parent?].term().cloned())?
        };
        let back = came_from(entity.id)?;
        entity.also_via.iter().all(|&copy| came_from(copy).as_ref() == Some(&back)).then_some(back)
    }

    /// Frontier entities whose relations have not been searched yet (an entity searched
    /// speculatively, or before a rewind to a later point, is not searched again).
    fn unsearched_frontier(&self, cx: &Context) -> Vec<NodeId> {
        self.frontier(cx)
            .into_iter()
            .filter(|&n| {
                !cx.beam.nodes[n].children.iter().any(|&c| matches!(cx.beam.nodes[c].kind, NodeKind::Relation { .. }))
            })
            .collect()
    }

    /// The depth whose entities the last entity prune chose.
    fn entity_layer(&self) -> u32 {
        if self.pending_verdict { self.depth - 1 } else { self.depth }
    }

    /// Whether to score the next hop's relations while the sufficiency check runs.
    fn can_speculate(&self, cx: &Context) -> bool {
        cx.settings.speculate
            && self.depth < cx.settings.depth
            && Self::live_entities_at(cx, self.depth)
                .iter()
                .any(|&n| cx.beam.nodes[n].term().is_some_and(Term::is_entity))
    }

    fn relation_groups(&self, cx: &Context) -> Vec<Group> {
        self.frontier(cx)
            .into_iter()
            .map(|p| Group { parent: p, candidates: Self::candidates_under(cx, p), request: None })
            .filter(|g| !g.candidates.is_empty())
            .collect()
    }

    fn candidates_under(cx: &Context, parent: NodeId) -> Vec<NodeId> {
        cx.beam.nodes[parent]
            .children
            .iter()
            .copied()
            .filter(|&c| cx.beam.nodes[c].status == Status::Candidate)
            .collect()
    }

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
    fn triples_text(&self, cx: &Context) -> String {
        self.shown_triples(cx).iter().map(TripleView::line).collect::<Vec<_>>().join("\n")
    }

    /// What a judgment may answer: the named entities and values the shown triples reach. A
    /// topic entity (where every path starts) only when a path comes back to it.
    fn reachable_names(&self, cx: &Context) -> Vec<String> {
        let beam = &cx.beam;
        let topics: Vec<&str> = beam.roots().map(|r| r.shown()).collect();
        // The entities each live path reaches past its root (ToG-R shows only its leaf).
        let mut reached: Vec<String> = Vec::new();
        for path in self.live_paths(cx) {
            let nodes = beam.path(path.leaf);
            let past_root = if self.chains { &nodes[nodes.len() - 1..] } else { nodes.get(1..).unwrap_or_default() };
            for &n in past_root {
                let node = &beam.nodes[n];
                if node.term().is_some() && node.is_named() {
                    reached.push(node.shown().to_string());
                }
            }
        }
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
    fn chains_text(&self, cx: &Context) -> String {
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

    /// Plans the scoring requests for `groups` (relations under entities, or entities under
    /// relations) according to the pruning tool: the requests, and the groups marked with the
    /// request that scores each.
    fn plan_scoring(&self, cx: &Context, mut groups: Vec<Group>, what: &str) -> (Vec<Request>, Vec<Group>) {
        let s = &cx.settings;
        let q = &cx.question;
        let mut requests = Vec::new();
        // A relation is always judged, even alone: it may not bear on the question at all. An
        // entity alone under a kept relation takes the relation's score, as in the reference.
        let needs_call = |g: &Group| match what {
            "relation" => !g.candidates.is_empty(),
            _ => g.candidates.len() >= 2 && g.candidates.iter().any(|&c| cx.beam.nodes[c].is_named()),
        };
        match s.prune {
            PruneTool::Bm25 => {}
            PruneTool::Embedding => {
                let mut texts = vec![q.clone()];
                for g in &groups {
                    texts.extend(candidate_names(cx, g));
                }
                if texts.len() > 1 {
                    requests.push(Request::Embed { texts });
                    groups.iter_mut().for_each(|g| g.request = Some(0));
                }
            }
            PruneTool::Llm if s.unified => {
                let (mut blocks, mut k) = (Vec::new(), 0);
                let mut listed: Vec<(String, Vec<String>)> = Vec::new();
                for g in groups.iter_mut().filter(|g| needs_call(g)) {
                    k += 1;
                    let names = candidate_names(cx, g);
                    let parent = offered_name(&cx.beam.nodes[g.parent]);
                    listed.push((parent.clone(), names.clone()));
                    blocks.push(if what == "relation" {
                        format!("Topic Entity: {parent}\nRelations: {}", names.join("; "))
                    } else {
                        format!("Group {k}: Relation: {parent}; Entities: {}", names.join("; "))
                    });
                    g.request = Some(0);
                }
                if !blocks.is_empty() {
                    let (template, slot, step) = if what == "relation" {
                        (Template::RelationPruneUnified, "entities", "relation_prune_unified")
                    } else {
                        (Template::EntityPruneUnified, "groups", "entity_prune_unified")
                    };
                    let width = s.width.to_string();
                    let prompt = cx.render(template, &[("question", q), ("width", &width), (slot, &blocks.join("\n"))]);
                    let name_lists: Vec<Vec<String>> = listed.iter().map(|(_, names)| names.clone()).collect();
                    let shape = if what == "relation" {
                        Shape::UnifiedRelations { entities: &listed, width: s.width }
                    } else {
                        Shape::EntityGroups { groups: &name_lists }
                    };
                    requests.push(cx.llm(step, prompt, s.prune_temperature, shape));
                }
            }
            PruneTool::Llm => {
                for g in groups.iter_mut().filter(|g| needs_call(g)) {
                    let names = candidate_names(cx, g);
                    let parent = offered_name(&cx.beam.nodes[g.parent]);
                    let prompt = if what == "relation" {
                        cx.render(
                            Template::RelationPrune,
                            &[
                                ("width", &s.width.to_string()),
                                ("question", q),
                                ("topic_entity", &parent),
                                ("relations", &names.join("; ")),
                            ],
                        )
                    } else {
                        cx.render(
                            Template::EntityPrune,
                            &[("question", q), ("relation", &parent), ("entities", &names.join("; "))],
                        )
                    };
                    let shape = if what == "relation" {
                        Shape::Relations { candidates: &names, width: s.width }
                    } else {
                        Shape::EntityScores { candidates: &names }
                    };
                    g.request = Some(requests.len());
                    requests.push(cx.llm(&format!("{what}_prune"), prompt, s.prune_temperature, shape));
                }
            }
        }
        (requests, groups)
    }

    fn finish(&mut self, cx: &mut Context, mut answers: Vec<String>, reply: String, source: AnswerSource) {
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
    fn answer_because(&mut self, source: AnswerSource, why: String) -> Phase {
        self.why = Some(why);
        Phase::Answer(source)
    }

    /// Why an answer from `source` comes from there, when it is not the paths.
    fn why_for(&self, source: AnswerSource) -> Option<String> {
        match source {
            AnswerSource::OwnKnowledge | AnswerSource::PartialPaths => self.why.clone(),
            _ => None,
        }
    }

    /// After "not sufficient": one more depth; at Dmax, the model's own knowledge; with no
    /// entity left to expand, the partial paths.
    fn next_depth(&mut self, cx: &Context, ev: &mut Event) -> Phase {
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
    fn dry(&mut self, ev: &mut Event) -> Phase {
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

    /// Adds the entities reached through relation node `rel`; samples (seeded) an oversized set.
    /// Entities already on the path are offered too (some questions' paths come back to an
    /// entity: "the nationality of the heir of X's father" is X's), except by crossing back the
    /// very triple just crossed, which can add nothing.
    fn add_candidates(&mut self, cx: &mut Context, rel: NodeId, neighbours: Vec<Neighbour>, ev: &mut Event) -> usize {
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

    /// Reads the scores for the planned groups and sets scores and statuses. Returns how many
    /// candidates were kept.
    fn absorb_scores(
        &mut self,
        cx: &mut Context,
        plan: &[Group],
        requests: &[Request],
        responses: &[Response],
        ev: &mut Event,
        what: &str,
    ) -> Result<usize, EngineError> {
        let s = cx.settings.clone();
        let step = ev.index;
        let mut kept_total = 0;
        // Unified replies and embeddings are shared by all groups: parse them once.
        let unified: Option<Vec<Ranked>> = if s.prune == PruneTool::Llm && s.unified {
            match plan.iter().find_map(|g| g.request) {
                Some(r) => {
                    let c = completion(responses, r)?;
                    let (per_group, fell_back) = self.parse_unified(cx, plan, &c.text, what, ev);
                    ev.calls.push(record(&requests[r], c, summarise_groups(cx, plan, &per_group)));
                    if fell_back {
                        unreadable(ev);
                    }
                    Some(per_group)
                }
                None => None,
            }
        } else {
            None
        };
        let embeddings: Option<Vec<Vec<f32>>> = match (s.prune, responses.first()) {
            (PruneTool::Embedding, Some(Response::Embeddings { vectors })) => {
                ev.lookups.push(LookupRecord {
                    what: format!("embeddings of {} texts", vectors.len()),
                    results: vectors.len(),
                });
                Some(vectors.clone())
            }
            (PruneTool::Embedding, other) if plan.iter().any(|g| g.request.is_some()) => {
                return Err(wrong(0, "embeddings", other));
            }
            _ => None,
        };
        let mut offset = 1; // position of a group's first candidate in the embedding batch
        for (gi, group) in plan.iter().enumerate() {
            let names = candidate_names(cx, group);
            let keep = if what == "relation" { s.width } else { names.len() };
            // (candidate position, score), best first.
            let scored: Vec<(usize, f64)> = if group.candidates.len() == 1 && group.request.is_none() {
                vec![(0, 1.0)]
            } else if what == "entity" && !group.candidates.iter().any(|&c| cx.beam.nodes[c].is_named()) {
                let share = 1.0 / names.len() as f64;
                (0..names.len()).map(|i| (i, share)).collect()
            } else {
                match s.prune {
                    PruneTool::Bm25 => top_by(bm25_tokens(&bm25_query(cx, group, what), &names), keep, ev, &names),
                    PruneTool::Embedding => {
                        let vectors = embeddings.as_deref().unwrap_or_default();
                        let q = vectors.first().map(Vec::as_slice).unwrap_or_default();
                        let sims = (0..names.len())
                            .map(|i| vectors.get(offset + i).map(|v| cosine(q, v).max(0.0)).unwrap_or(0.0))
                            .collect();
                        top_by(sims, keep, ev, &names)
                    }
                    PruneTool::Llm if s.unified => {
                        unified.as_ref().and_then(|per| per.get(gi).cloned()).unwrap_or_default()
                    }
                    PruneTool::Llm => {
                        let r = group.request.unwrap_or(0);
                        let c = completion(responses, r)?;
                        let query = bm25_query(cx, group, what);
                        let (parsed, fell_back) = self.parse_group(&c.text, &names, keep, what, ev, &query);
                        let shown = parsed
                            .iter()
                            .map(|(i, sc)| format!("{}={sc:.2}", names[*i]))
                            .collect::<Vec<_>>()
                            .join("; ");
                        ev.calls.push(record(&requests[r], c, shown));
                        if fell_back {
                            unreadable(ev);
                        }
                        parsed
                    }
                }
            };
            offset += names.len();
            for (pos, &node) in group.candidates.iter().enumerate() {
                match scored.iter().find(|(i, _)| *i == pos) {
                    Some(&(_, score)) => {
                        cx.beam.score(node, score, step);
                        if what == "relation" {
                            if score > 0.0 {
                                cx.beam.set_status(node, Status::Kept, None, step);
                                kept_total += 1;
                            } else {
                                cx.beam.set_status(node, Status::PrunedByScore, Some("scored 0"), step);
                            }
                        }
                        // Entities are kept or cut by the global width selection afterwards.
                    }
                    None => {
                        cx.beam.score(node, 0.0, step);
                        let reason = if what == "relation" { "not among the top choices" } else { "scored 0" };
                        cx.beam.set_status(node, Status::PrunedByScore, Some(reason), step);
                    }
                }
                let n = &cx.beam.nodes[node];
                ev.decisions.push(Decision {
                    node,
                    shown: n.shown().into(),
                    score: n.score,
                    path_score: n.path_score,
                    status: n.status,
                });
            }
        }
        if what == "relation" {
            kept_total += self.keep_one_under_user_keeps(cx, plan, ev);
        }
        Ok(kept_total)
    }

    /// An entity the user kept whose relations the model has just pruned all away keeps the
    /// best of them (the first listed when all scored 0), so what the user kept reaches its
    /// next entity selection. Returns how many relations were kept so.
    fn keep_one_under_user_keeps(&self, cx: &mut Context, plan: &[Group], ev: &mut Event) -> usize {
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

    /// Parses one group's reply; an unusable reply falls back to BM25 (said in the notes).
    fn parse_group(
        &self,
        reply: &str,
        names: &[String],
        keep: usize,
        what: &str,
        ev: &mut Event,
        bm25_query: &[String],
    ) -> (Vec<(usize, f64)>, bool) {
        if what == "relation" {
            let parsed = parse::parse_scored_choices(reply, names, keep);
            ev.notes.extend(parsed.notes.iter().cloned());
            if !parsed.rejected.is_empty() {
                ev.notes.push(format!("rejected relations not offered: {}", parsed.rejected.join(", ")));
            }
            if !parsed.items.is_empty() {
                return (parsed.items, false);
            }
        } else if let Some((scores, notes)) = parse::parse_score_list(reply, names) {
            ev.notes.extend(notes);
            return (scores.into_iter().enumerate().collect(), false);
        }
        ev.notes.push(format!("could not read {what} scores from the reply; ranked by BM25 instead"));
        (top_by(bm25_tokens(bm25_query, names), keep, ev, names), true)
    }

    fn parse_unified(
        &self,
        cx: &Context,
        plan: &[Group],
        reply: &str,
        what: &str,
        ev: &mut Event,
    ) -> (Vec<Vec<(usize, f64)>>, bool) {
        let mut fell_back = false;
        let called: Vec<usize> = (0..plan.len()).filter(|&i| plan[i].request.is_some()).collect();
        let names_of = |g: &Group| candidate_names(cx, g);
        let mut out = vec![Vec::new(); plan.len()];
        if what == "relation" {
            let entities: Vec<(String, Vec<String>)> = called
                .iter()
                .map(|&i| (cx.beam.nodes[plan[i].parent].shown().to_string(), names_of(&plan[i])))
                .collect();
            for (k, parsed) in parse::parse_unified_choices(reply, &entities, cx.settings.width).into_iter().enumerate()
            {
                ev.notes.extend(parsed.notes);
                if !parsed.rejected.is_empty() {
                    ev.notes.push(format!("rejected: {}", parsed.rejected.join(", ")));
                }
                out[called[k]] = parsed.items;
            }
        } else {
            let groups: Vec<Vec<String>> = called.iter().map(|&i| names_of(&plan[i])).collect();
            for (k, scores) in parse::parse_group_scores(reply, &groups).into_iter().enumerate() {
                out[called[k]] = match scores {
                    Some(s) => s.into_iter().enumerate().collect(),
                    None => {
                        fell_back = true;
                        ev.notes.push(format!("no scores for group {}; equal shares", k + 1));
                        let share = 1.0 / groups[k].len().max(1) as f64;
                        (0..groups[k].len()).map(|i| (i, share)).collect()
                    }
                };
            }
        }
        for (i, g) in plan.iter().enumerate() {
            if g.request.is_none() && g.candidates.len() == 1 {
                out[i] = vec![(0, 1.0)];
            } else if g.request.is_some() && out[i].is_empty() {
                fell_back = true;
                let names = names_of(g);
                ev.notes.push(format!(
                    "the reply gave no {what} scores for {}; ranked by BM25 instead",
                    cx.beam.nodes[g.parent].shown()
                ));
                let keep = if what == "relation" { cx.settings.width } else { names.len() };
                out[i] = top_by(bm25_tokens(&bm25_query(cx, g, what), &names), keep, ev, &names);
            }
        }
        (out, fell_back)
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
    fn select_width(&mut self, cx: &mut Context, groups: &[Group], ev: &mut Event) {
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
    fn sample_entities(&mut self, cx: &mut Context, groups: &[Group], ev: &mut Event) {
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

    /// The node the user kept that protects candidate `c` in this depth's entity selection:
    /// its nearest ancestor the user kept whose protection lasts to this depth.
    fn shield_of(&self, cx: &Context, c: NodeId) -> Option<NodeId> {
        let path = cx.beam.path(c);
        path.into_iter().rev().skip(1).find(|&n| self.user.contains(&n) && shield_depth(cx, n) == self.depth)
    }

    /// What this hop's scores make of candidate `c`: its own score times its relation's, a
    /// relation the user kept or added counting 1 (unscored counts 1 too).
    fn hop_score(&self, cx: &Context, c: NodeId) -> f64 {
        let n = &cx.beam.nodes[c];
        let relation =
            n.parent.map_or(1.0, |r| if self.user.contains(&r) { 1.0 } else { cx.beam.nodes[r].score.unwrap_or(1.0) });
        n.score.unwrap_or(1.0) * relation
    }

    /// Whether candidate `c`'s path scores 0 only because of nodes the user kept (the model gave
    /// them 0 and the user kept them anyway), not because of a score of this hop.
    fn zero_from_user(&self, cx: &Context, c: NodeId) -> bool {
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
fn shield_depth(cx: &Context, node: NodeId) -> u32 {
    let n = &cx.beam.nodes[node];
    match n.kind {
        NodeKind::Relation { .. } => n.depth,
        NodeKind::Entity { .. } => n.depth + 1,
    }
}

/// Why ToG answers from the model's own knowledge at Dmax (the wording answers have always had).
const DEPTH_LIMIT: &str = "no sufficient KG path within the depth limit";
/// Why the answer comes from the paths collected when the depth limit is reached.
const DEPTH_LIMIT_PARTIAL: &str = "no path judged sufficient within the depth limit; answered from those collected";

/// Why a candidate reaching an entity another path holds is not kept on its own.
const MERGED: &str = "same entity kept on a better path; merged into it";

/// What the user's keeps did in one entity selection, per node the user kept: the paths
/// standing under it, those kept because of it, those beyond its width, and those waiting for a
/// place once the beam's own are chosen.
#[derive(Default)]
struct Shields {
    tally: Vec<Tally>,
    waiting: Vec<(NodeId, Vec<NodeId>)>,
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
    fn count(&mut self, k: NodeId) {
        self.entry(k).standing += 1;
    }

    /// `c`, under `k`, kept because the user kept `k`: the reason to record.
    fn kept(&mut self, cx: &Context, k: NodeId, c: NodeId) -> String {
        let t = self.entry(k);
        t.standing += 1;
        t.kept.push(cx.beam.nodes[c].shown().to_string());
        format!("kept: under {}, which you kept", cx.beam.nodes[k].shown())
    }

    /// A path under `k` beyond its width: the reason to record.
    fn beyond(&mut self, cx: &Context, k: NodeId) -> String {
        self.entry(k).beyond += 1;
        format!("beyond the beam width of the paths under {}, which you kept", cx.beam.nodes[k].shown())
    }

    fn wait(&mut self, k: NodeId, c: NodeId) {
        self.entry(k);
        match self.waiting.iter_mut().find(|(s, _)| *s == k) {
            Some((_, list)) => list.push(c),
            None => self.waiting.push((k, vec![c])),
        }
    }

    fn standing(&mut self, k: NodeId) -> usize {
        self.entry(k).standing
    }

    /// One note per node the user kept whose keep kept, or left out, something.
    fn notes(&self, cx: &Context) -> Vec<String> {
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

/// The phase of the last step taken (overrides and rewinds are not steps).
fn last_step(cx: &Context) -> Option<&str> {
    cx.trace.iter().rev().find_map(|e| e.phase())
}

/// How a relation node is named to the model: its shown name, `name (incoming)` when it is
/// walked against the direction of its triples (Canberra is reached *from* Australia through
/// `location.country.capital`). Entities: their shown name.
fn offered_name(node: &super::beam::BeamNode) -> String {
    match &node.kind {
        NodeKind::Relation { direction: crate::kg::Direction::In, shown, .. } => format!("{shown} (incoming)"),
        _ => node.shown().to_string(),
    }
}

/// How a group's candidates are listed to the model: as [`offered_name`] names them, told apart
/// where two would still read the same: two relations with the same name (Wikidata's `wdt:P69`
/// and `p:P69`, both "educated at") show their ids, `name [id]`.
fn candidate_names(cx: &Context, group: &Group) -> Vec<String> {
    let nodes: Vec<&super::beam::BeamNode> = group.candidates.iter().map(|&c| &cx.beam.nodes[c]).collect();
    let offered: Vec<String> = nodes.iter().map(|n| offered_name(n)).collect();
    nodes
        .iter()
        .enumerate()
        .map(|(i, node)| {
            let twin = (0..nodes.len()).any(|j| j != i && offered[j] == offered[i]);
            match &node.kind {
                NodeKind::Relation { relation, .. } if twin => format!("{} [{relation}]", offered[i]),
                _ => offered[i].clone(),
            }
        })
        .collect()
}

/// The words BM25 ranks a group's candidates by: a relation group, the question's words that
/// the path to its entity has not used up (names and relations walked); an entity group, the
/// whole question.
fn bm25_query(cx: &Context, group: &Group, what: &str) -> Vec<String> {
    if what != "relation" {
        return tokens(&cx.question);
    }
    let path = cx.beam.path(group.parent);
    let used: Vec<&str> = path.iter().map(|&n| cx.beam.nodes[n].shown()).collect();
    query_without(&cx.question, &used)
}

/// Takes the top `keep` by score (ties: listed order), normalised; all-zero scores keep the
/// first `keep` in listed order with equal shares, and say so.
fn top_by(scores: Vec<f64>, keep: usize, ev: &mut Event, names: &[String]) -> Vec<(usize, f64)> {
    let mut ranked: Vec<(usize, f64)> = scores.into_iter().enumerate().collect();
    if ranked.iter().all(|(_, s)| *s <= 0.0) {
        if !names.is_empty() {
            ev.notes.push("no similarity to the question; first candidates kept with equal shares".into());
        }
        ranked.truncate(keep);
        let share = 1.0 / ranked.len().max(1) as f64;
        return ranked.into_iter().map(|(i, _)| (i, share)).collect();
    }
    ranked.sort_by(|a, b| b.1.total_cmp(&a.1).then(a.0.cmp(&b.0)));
    ranked.retain(|(_, s)| *s > 0.0);
    ranked.truncate(keep);
    let sum: f64 = ranked.iter().map(|(_, s)| s).sum();
    ranked.into_iter().map(|(i, s)| (i, s / sum)).collect()
}

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

fn summarise_groups(cx: &Context, plan: &[Group], per_group: &[Vec<(usize, f64)>]) -> String {
    plan.iter()
        .zip(per_group)
        .flat_map(|(g, items)| {
            items.iter().map(move |(i, s)| format!("{}={s:.2}", cx.beam.nodes[g.candidates[*i]].shown()))
        })
        .collect::<Vec<_>>()
        .join("; ")
}

impl Method for TogMachine {
    type Plan = TogPlan;

    fn next(&mut self, cx: &mut Context) -> (Vec<Request>, TogPlan) {
        let s = cx.settings.clone();
        let q = cx.question.clone();
        let mut plan = TogPlan::default();
        let requests = match self.phase {
            Phase::Topics => self.linker.requests(cx),
            Phase::RelationSearch => {
                plan.nodes = self.unsearched_frontier(cx);
                plan.nodes
                    .iter()
                    .map(|&n| Request::Relations {
                        entity: cx.beam.nodes[n].term().map(|t| t.as_str().to_string()).unwrap_or_default(),
                    })
                    .collect()
            }
            Phase::RelationPrune => {
                let groups = self.relation_groups(cx);
                let requests;
                (requests, plan.groups) = self.plan_scoring(cx, groups, "relation");
                requests
            }
            Phase::EntitySearch => {
                let mut requests = Vec::new();
                for r in self.live_relations(cx) {
                    let rel = &cx.beam.nodes[r];
                    let NodeKind::Relation { relation, direction, .. } = &rel.kind else { continue };
                    let Some(entity) = rel.parent.and_then(|p| cx.beam.nodes[p].term()) else { continue };
                    plan.nodes.push(r);
                    requests.push(Request::Neighbours {
                        entity: entity.as_str().to_string(),
                        relation: RelationRef { relation: relation.clone(), direction: *direction, label: None },
                    });
                }
                requests
            }
            Phase::EntityPrune => {
                let groups: Vec<Group> = self
                    .live_relations(cx)
                    .into_iter()
                    .map(|r| Group { parent: r, candidates: Self::candidates_under(cx, r), request: None })
                    .filter(|g| !g.candidates.is_empty())
                    .collect();
                if self.chains {
                    // ToG-R samples entities instead of scoring them: no request.
                    plan.groups = groups;
                    return (Vec::new(), plan);
                }
                let requests;
                (requests, plan.groups) = self.plan_scoring(cx, groups, "entity");
                requests
            }
            Phase::Reasoning => {
                // This machine runs ToG and ToG-R only (the baselines have their own).
                let prompt = if self.chains {
                    cx.render(Template::ReasoningTogR, &[("question", &q), ("chains", &self.chains_text(cx))])
                } else {
                    cx.render(Template::Reasoning, &[("question", &q), ("triples", &self.triples_text(cx))])
                };
                // A structured variant judges by the answer, chosen among what the paths reach.
                let options = self.reachable_names(cx);
                let shape = if prompt.shows_shape { Shape::Judgment { options: &options } } else { Shape::Verdict };
                let mut requests = vec![cx.llm("reasoning", prompt, s.reason_temperature, shape)];
                if self.pending_verdict {
                    // The next hop's relation scoring rides along; its plan indexes the requests
                    // after the reasoning call.
                    let groups = self.relation_groups(cx);
                    let scoring;
                    (scoring, plan.groups) = self.plan_scoring(cx, groups, "relation");
                    requests.extend(scoring);
                }
                requests
            }
            Phase::Answer(AnswerSource::OwnKnowledge) => {
                let prompt = cx.prompts.render(Template::AnswerOwnKnowledge, &[("question", &q)]);
                vec![cx.llm("answer_own_knowledge", prompt, s.reason_temperature, Shape::ReasonedAnswer)]
            }
            Phase::Answer(_) => {
                let prompt =
                    cx.prompts.render(Template::Answer, &[("question", &q), ("triples", &self.triples_text(cx))]);
                // The papers' prompt reasons before its braced answer: under structured replies
                // it is asked as free text, its answer extracted only if it cannot be read.
                // Reason, then format; as an answer alone in a session saved before.
                let shape = if cx.reasons_then_formats() { Shape::ReasonedAnswer } else { Shape::Answer };
                vec![cx.llm("answer", prompt, s.reason_temperature, shape)]
            }
            Phase::Done => Vec::new(),
        };
        (requests, plan)
    }

    fn absorb(
        &mut self,
        cx: &mut Context,
        plan: &TogPlan,
        requests: &[Request],
        responses: Vec<Response>,
    ) -> Result<Event, EngineError> {
        let index = cx.next_index();
        let mut ev = Event::step(index, self.phase(), self.depth);
        match self.phase {
            Phase::Topics => {
                self.linker.absorb(cx, requests, &responses, &mut ev)?;
                if self.linker.done() {
                    self.phase = Phase::RelationSearch;
                    self.depth = 1;
                }
            }
            Phase::RelationSearch => {
                let frontier = &plan.nodes;
                let mut found = 0;
                for (i, &node) in frontier.iter().enumerate() {
                    let relations = relations(&responses, i)?;
                    ev.lookups.push(LookupRecord {
                        what: format!("relations of {}", cx.beam.nodes[node].shown()),
                        results: relations.len(),
                    });
                    for r in relations {
                        let shown = r.label.clone().unwrap_or_else(|| cx.profile.display_relation(&r.relation));
                        cx.beam.add(
                            Some(node),
                            NodeKind::Relation { relation: r.relation.clone(), direction: r.direction, shown },
                            Provenance::Kg { graph: cx.graph_name.clone() },
                        );
                        found += 1;
                    }
                }
                ev.summary = format!(
                    "depth {}: {found} relations around {} entit{}",
                    self.depth,
                    frontier.len(),
                    plural_y(frontier.len())
                );
                let any = self.frontier(cx).iter().any(|&n| !Self::candidates_under(cx, n).is_empty());
                self.phase = if self.pending_verdict {
                    Phase::Reasoning
                } else if any {
                    Phase::RelationPrune
                } else {
                    self.dry(&mut ev)
                };
            }
            Phase::RelationPrune => {
                let kept = self.absorb_scores(cx, &plan.groups, requests, &responses, &mut ev, "relation")?;
                ev.summary = format!("depth {}: kept {kept} relation{}", self.depth, plural_s(kept));
                self.phase = if kept == 0 { self.dry(&mut ev) } else { Phase::EntitySearch };
            }
            Phase::EntitySearch => {
                let mut found = 0;
                for (i, &rel) in plan.nodes.iter().enumerate() {
                    let neighbours = neighbours(&responses, i)?;
                    ev.lookups.push(LookupRecord {
                        what: format!("neighbours through {}", cx.beam.path_text(rel)),
                        results: neighbours.len(),
                    });
                    found += self.add_candidates(cx, rel, neighbours, &mut ev);
                }
                ev.summary = format!("depth {}: {found} candidate entities", self.depth);
                self.phase = if found == 0 { self.dry(&mut ev) } else { Phase::EntityPrune };
            }
            Phase::EntityPrune => {
                if self.chains {
                    self.sample_entities(cx, &plan.groups, &mut ev);
                } else {
                    self.absorb_scores(cx, &plan.groups, requests, &responses, &mut ev, "entity")?;
                    self.select_width(cx, &plan.groups, &mut ev);
                }
                let kept = Self::live_entities_at(cx, self.depth).len();
                ev.summary = format!("depth {}: {kept} path{} on the beam", self.depth, plural_s(kept));
                self.phase = if kept == 0 {
                    self.dry(&mut ev)
                } else if self.can_speculate(cx) {
                    self.depth += 1;
                    self.pending_verdict = true;
                    Phase::RelationSearch
                } else {
                    Phase::Reasoning
                };
            }
            Phase::Reasoning => {
                let speculated = std::mem::take(&mut self.pending_verdict);
                if speculated {
                    // The verdict is on the previous hop.
                    self.depth -= 1;
                    ev.depth = self.depth;
                }
                let c = completion(&responses, 0)?;
                let verdict = parse::parse_yes_no(&c.text);
                let answers = parse::parse_answers(&c.text).unwrap_or_default();
                if verdict.is_none() {
                    ev.notes.push("no Yes/No found in the reply; taken as No".into());
                }
                let (yes, answers, parsed) =
                    judged(&requests[0], verdict == Some(true), answers, "the shown triples", &mut ev.notes);
                ev.calls.push(record(&requests[0], c, parsed));
                if verdict.is_none() {
                    unreadable(&mut ev);
                }
                self.last_verdict = Some(yes);
                if yes && !answers.is_empty() {
                    ev.summary = format!("depth {}: sufficient; answer {}", self.depth, answers.join(", "));
                    self.finish(cx, answers, c.text.clone(), AnswerSource::KgPaths);
                } else if yes {
                    ev.summary = format!("depth {}: sufficient; asking for the answer", self.depth);
                    self.phase = Phase::Answer(AnswerSource::KgPaths);
                } else if speculated {
                    self.depth += 1;
                    let kept =
                        self.absorb_scores(cx, &plan.groups, &requests[1..], &responses[1..], &mut ev, "relation")?;
                    ev.summary = format!(
                        "depth {}: not sufficient; depth {} relations scored meanwhile: kept {kept}",
                        self.depth - 1,
                        self.depth
                    );
                    self.phase = if kept == 0 { self.dry(&mut ev) } else { Phase::EntitySearch };
                } else {
                    ev.summary = format!("depth {}: not sufficient", self.depth);
                    self.phase = self.next_depth(cx, &mut ev);
                }
                if yes && speculated && requests.len() > 1 {
                    ev.notes.push(format!(
                        "{} speculative call(s) scoring depth {} were not needed",
                        requests.len() - 1,
                        self.depth + 1
                    ));
                    for (r, resp) in requests[1..].iter().zip(&responses[1..]) {
                        if let Response::Llm { completion } = resp {
                            ev.calls.push(record(r, completion, "not used: answered at the previous depth".into()));
                        }
                    }
                }
            }
            Phase::Answer(source) => {
                let why = self.why_for(source);
                let (answers, reply) = answer_call(requests, &responses, &mut ev, source, why.as_deref())?;
                // Only the partial paths' answer at the depth limit falls through to the
                // model's own knowledge: not one the user asked of the paths there (a forced
                // "sufficient").
                let at_depth_limit =
                    source == AnswerSource::PartialPaths && self.why.as_deref() == Some(DEPTH_LIMIT_PARTIAL);
                if at_depth_limit && !answers.iter().any(|a| !parse::is_unknown(a)) {
                    ev.notes.push("the collected paths gave no answer: asking the model's own knowledge".into());
                    self.phase = self.answer_because(AnswerSource::OwnKnowledge, DEPTH_LIMIT.into());
                } else {
                    self.finish(cx, answers, reply, source);
                }
            }
            Phase::Done => return Err(EngineError::Finished),
        }
        Ok(ev)
    }

    fn phase(&self) -> &'static str {
        match self.phase {
            Phase::Topics => self.linker.phase_name(),
            Phase::RelationSearch => "relation_search",
            Phase::RelationPrune => "relation_prune",
            Phase::EntitySearch => "entity_search",
            Phase::EntityPrune => "entity_prune",
            Phase::Reasoning => "reasoning",
            Phase::Answer(_) => "answer",
            Phase::Done => "done",
        }
    }

    fn depth(&self) -> u32 {
        self.depth
    }

    /// What the next step works on: the entities whose relations it searches or scores, the
    /// relations whose entities it fetches or scores, the entities it checks or answers from.
    fn has_frontier(&self, cx: &Context) -> bool {
        match self.phase {
            Phase::Topics | Phase::Done | Phase::Answer(AnswerSource::OwnKnowledge) => true,
            Phase::RelationSearch | Phase::Reasoning if self.pending_verdict => {
                !Self::live_entities_at(cx, self.entity_layer()).is_empty()
            }
            Phase::RelationSearch | Phase::RelationPrune => !self.frontier(cx).is_empty(),
            Phase::EntitySearch | Phase::EntityPrune => !self.live_relations(cx).is_empty(),
            Phase::Reasoning => !Self::live_entities_at(cx, self.depth).is_empty(),
            Phase::Answer(_) => !self.live_paths(cx).is_empty(),
        }
    }

    /// The live paths now in front of the model: live entity nodes with no live entity below
    /// them, best path score first (ties: older node first).
    fn live_paths(&self, cx: &Context) -> Vec<PathView> {
        let beam = &cx.beam;
        let mut leaves: Vec<NodeId> = beam
            .nodes
            .iter()
            .filter(|n| n.parent.is_some() && n.term().is_some() && n.status.is_live() && beam.is_live_path(n.id))
            .filter(|n| {
                !n.children.iter().any(|&r| {
                    beam.nodes[r].status.is_live()
                        && beam.nodes[r].children.iter().any(|&e| beam.nodes[e].status.is_live())
                })
            })
            .map(|n| n.id)
            .collect();
        leaves.sort_by(|&a, &b| beam.nodes[b].path_score.total_cmp(&beam.nodes[a].path_score).then(a.cmp(&b)));
        leaves
            .into_iter()
            .map(|leaf| PathView {
                leaf,
                text: beam.path_text(leaf),
                score: beam.nodes[leaf].path_score,
                triples: beam.triples(leaf),
            })
            .collect()
    }

    fn apply(&mut self, cx: &mut Context, o: &Override) -> Result<String, EngineError> {
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::engine::{Settings, test_context};
    use rand::SeedableRng;
    use rand_chacha::ChaCha8Rng;

    fn linked() -> Topics {
        Topics::Linked(vec![("m.canberra".into(), Some("Canberra".into()))])
    }

    fn relations(names: &[&str]) -> Response {
        Response::Relations { relations: names.iter().map(|n| RelationRef::out(*n)).collect() }
    }

    #[test]
    fn each_batch_carries_the_plan_its_results_are_read_against() {
        let mut cx = test_context("Which party governs the capital?", Settings::default());
        let mut tog = TogMachine::new(&mut cx, linked(), false).unwrap();
        let (requests, plan) = Method::next(&mut tog, &mut cx);
        assert_eq!(requests, vec![Request::Relations { entity: "m.canberra".into() }]);
        assert_eq!(plan.nodes, vec![0], "the lookup expands the topic entity");
        let ev = Method::absorb(&mut tog, &mut cx, &plan, &requests, vec![relations(&["a.b", "c.d"])]).unwrap();
        assert_eq!(ev.lookups.len(), 1);
        assert_eq!(cx.beam.nodes[0].children.len(), 2);

        let (requests, plan) = Method::next(&mut tog, &mut cx);
        assert_eq!(Method::phase(&tog), "relation_prune");
        assert_eq!(requests.len(), 1, "one scoring call for the one entity's relations");
        assert_eq!(plan.groups.len(), 1);
        assert_eq!((plan.groups[0].parent, plan.groups[0].request), (0, Some(0)));
        assert_eq!(plan.groups[0].candidates, cx.beam.nodes[0].children);
    }

    /// A topic entity with no relations leaves the beam dry at the first hop: the answer is
    /// the model's own, and says that is why (not a depth limit).
    #[test]
    fn a_beam_dry_at_the_first_hop_says_so_with_the_answer() {
        let mut cx = test_context("Which party governs the capital?", Settings::default());
        let mut tog = TogMachine::new(&mut cx, linked(), false).unwrap();
        let (requests, plan) = Method::next(&mut tog, &mut cx);
        Method::absorb(&mut tog, &mut cx, &plan, &requests, vec![relations(&[])]).unwrap();
        assert_eq!(tog.phase, Phase::Answer(AnswerSource::OwnKnowledge));
        let (requests, plan) = Method::next(&mut tog, &mut cx);
        let reply = crate::llm::Completion { text: "{Labor}".into(), ..crate::llm::Completion::default() };
        let ev =
            Method::absorb(&mut tog, &mut cx, &plan, &requests, vec![Response::Llm { completion: reply }]).unwrap();
        let said = "from the LLM's own knowledge (the beam ran dry at the first hop: no path was kept)";
        assert_eq!(ev.summary, format!("answer Labor ({said})"));
        assert_eq!(cx.answer.as_ref().map(Answer::source_words).as_deref(), Some(said));
    }

    #[test]
    fn a_failed_read_names_the_result_that_is_not_what_was_asked() {
        let mut cx = test_context("q", Settings::default());
        let mut tog = TogMachine::new(&mut cx, linked(), false).unwrap();
        let (requests, plan) = Method::next(&mut tog, &mut cx);
        let wrong = vec![Response::Entities { matches: Vec::new() }];
        let err = Method::absorb(&mut tog, &mut cx, &plan, &requests, wrong).unwrap_err();
        assert!(matches!(err, EngineError::WrongResponse { index: 0, expected: "relation list", .. }), "{err}");
    }

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

    #[test]
    fn top_by_keeps_the_best_normalised_and_says_when_nothing_matches() {
        let names: Vec<String> = ["a", "b", "c"].iter().map(|s| s.to_string()).collect();
        let mut ev = Event::step(0, "relation_prune", 1);
        let kept = top_by(vec![0.2, 0.0, 0.6], 2, &mut ev, &names);
        assert_eq!(kept.iter().map(|(i, _)| *i).collect::<Vec<_>>(), vec![2, 0]);
        assert!((kept[0].1 - 0.75).abs() < 1e-9 && (kept[1].1 - 0.25).abs() < 1e-9, "{kept:?}");
        assert!(ev.notes.is_empty());
        let equal = top_by(vec![0.0, 0.0, 0.0], 2, &mut ev, &names);
        assert_eq!(equal, vec![(0, 0.5), (1, 0.5)]);
        assert_eq!(ev.notes.len(), 1, "the fallback is said");
    }
}
