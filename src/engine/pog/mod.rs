//! Paths-over-Graph (PoG, WWW 2025) and its PoG-E variant as a state machine.
//!
//! Topic entities → question analysis (indicator chain, split questions, predicted depth) →
//! question subgraph (every topic entity expanded hop by hop, parallel relations clustered) →
//! reduction to the nodes that connect the topic entities → exploration in three stages, each
//! followed by three-step pruning (fuzzy, precise, branch-reduced), an optional path summary and a
//! sufficiency check: (1) paths through the topic entities, from the predicted depth up to Dmax;
//! (2) paths through entities the LLM predicts; (3) one-hop expansion of the best paths. When no
//! stage suffices, the answer comes from everything collected plus the model's own knowledge.
//!
//! Unlike the reference code: no gold answer decides anything; the depth is read from the chain's
//! structure; every loop is bounded; results stay paired with their requests by position; the
//! only randomness (PoG-E's relation choice, oversized fan-out) is seeded; sets print in order.

pub(crate) mod parse;
pub(crate) mod subgraph;

use super::beam::{KEPT_BY_YOU, NodeId, NodeKind, Provenance, Status};
use super::events::{Decision, Event, LookupRecord};
use super::lexical::{bm25, cosine};
use super::method::{Method, MethodView, ViewLine};
use super::step::{
    ANSWERED, answer_call, completion, judged, neighbours, plural_s, record, relations, sample_indices, unpinning,
    unreadable, with_notes, wrong,
};
use super::structured::Shape;
use super::topics::TopicLinker;
use super::{Answer, AnswerSource, Context, EngineError, Override, PathView, PruneTool, Request, Response, Topics};
use crate::kg::{Direction, RelationRef, Term, name_similarity};
use crate::prompts::Template;
use parse::Analysis;
use rand::Rng;
use std::collections::HashMap;
use std::sync::Arc;
use subgraph::{SgPath, Subgraph};

/// Most candidates one precise-selection prompt lists (the paper's batch size).
const PRECISE_BATCH: usize = 40;
/// Roughly 3,000 tokens of candidate text per precise-selection prompt.
const PRECISE_BUDGET_CHARS: usize = 12_000;
/// Most candidate paths gathered in one stage; the rest are counted, not listed.
const MAX_CANDIDATES: usize = 2_000;
/// The expansion stops growing the subgraph beyond this many nodes.
const MAX_SUBGRAPH_NODES: usize = 20_000;
/// Reduction keeps nodes up to this many hops off a shortest connecting path.
const REDUCTION_SLACK: u32 = 1;
/// A name the model predicts matches a subgraph node at this similarity or more.
const SUPPLEMENT_MATCH_MIN: f64 = 0.8;

/// PoG's pruning strategies (the paper's four).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize, clap::ValueEnum)]
#[serde(rename_all = "kebab-case")]
pub enum PogPruning {
    /// Similarity to the indicator only: the top W paths.
    Fuzzy,
    /// Similarity, then the LLM picks among path prefixes, one hop longer each round.
    FuzzyBranch,
    /// Similarity, then the LLM picks the top W from numbered candidates (the paper's default).
    #[default]
    FuzzyPrecise,
    /// Similarity, branch-reduced selection down to one prompt's worth, then precise selection.
    All,
}

/// Which exploration stage the candidates come from.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Stage {
    /// Paths through the topic entities, up to this length (per stretch for several topics).
    TopicPaths(u32),
    Supplement,
    Expansion,
}

impl Stage {
    fn name(self) -> String {
        match self {
            Stage::TopicPaths(d) => format!("topic-entity paths (depth {d})"),
            Stage::Supplement => "LLM-supplement paths".into(),
            Stage::Expansion => "node expansion".into(),
        }
    }
}

/// What PoG has found out so far, for a client to show beside the beam: the question analysis,
/// the subgraph's size before and after reduction, and what each exploration stage yielded.
#[derive(Clone, Debug, Default, PartialEq, serde::Serialize)]
pub struct PogReport {
    pub indicator: Option<String>,
    pub sub_questions: Vec<String>,
    pub predicted_depth: Option<u32>,
    /// Nodes and triples of the question subgraph as expanded.
    pub subgraph: (usize, usize),
    /// Nodes before and after reduction (once reduced).
    pub reduced: Option<(usize, usize)>,
    /// Whether the topic entities connect in the subgraph (several topics only).
    pub connected: bool,
    pub stages: Vec<StageReport>,
    /// The latest path summary the model wrote.
    pub summary: Vec<String>,
    /// The stage whose paths were found sufficient, or how the answer was reached otherwise.
    pub answered_by: Option<String>,
}

/// One exploration stage: how many candidate paths each pruning step left.
#[derive(Clone, Debug, Default, PartialEq, serde::Serialize)]
pub struct StageReport {
    pub stage: String,
    pub candidates: usize,
    pub after_fuzzy: Option<usize>,
    pub after_branch: Option<usize>,
    pub after_precise: Option<usize>,
    /// The sufficiency check's verdict on the stage's paths.
    pub sufficient: Option<bool>,
}

/// What the subgraph lookups are for.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Lookup {
    Subgraph,
    NodeExpansion,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Phase {
    Topics,
    Analysis,
    ExpandRelations(Lookup),
    ExpandNeighbours(Lookup),
    Reduce,
    Fuzzy,
    Precise,
    /// Branch-reduced selection on prefixes of this many hops.
    Branch(usize),
    Summary,
    Sufficiency,
    Supplement,
    Answer(AnswerSource),
    Done,
}

/// One candidate path: a walk from a topic entity through the subgraph; a node-expansion
/// candidate also carries the path it extends (`base`), shown before it.
#[derive(Clone, Debug)]
struct Cand {
    path: SgPath,
    base: Option<usize>,
    text: String,
    leaf: NodeId,
    fuzzy: f64,
}

/// What a batch is for: the subgraph nodes its relation lookups expand, the candidates each
/// precise-selection prompt lists, or the prefixes the branch prompt lists (in request order).
#[derive(Debug, Default)]
pub(crate) struct PogPlan {
    nodes: Vec<usize>,
    batches: Vec<Vec<usize>>,
    prefixes: Vec<(String, Vec<usize>)>,
}

#[derive(Clone, Debug)]
pub(crate) struct PogMachine {
    phase: Phase,
    linker: TopicLinker,
    analysis: Option<Analysis>,
    /// Depth predicted from the indicator (clamped to 1..=Dmax).
    predicted: u32,
    /// Shared with the run's snapshots (one per step) until a step changes it: only the
    /// expansion and reduction steps copy it.
    sg: Arc<Subgraph>,
    /// Subgraph node of each topic entity, in the indicator's order.
    topics: Vec<usize>,
    keep: Vec<bool>,
    /// Whether the reduction found the topic entities connected (several of them).
    connected: bool,
    /// The hop the expansion is on, and the relations found per node awaiting neighbours.
    hop: u32,
    found: Vec<(usize, Vec<RelationRef>)>,
    stage: Stage,
    /// Every candidate path so far, and where each is, shared with the snapshots like the
    /// subgraph: only the steps that add candidates or score them copy these.
    cands: Arc<Vec<Cand>>,
    index: Arc<HashMap<(SgPath, Option<usize>), usize>>,
    /// The candidates still in the running in this stage, best first.
    pool: Vec<usize>,
    /// The paths the last pruning selected (what the next stages build on).
    selected: Vec<usize>,
    pinned: Vec<usize>,
    banned: Vec<usize>,
    summary: Vec<String>,
    last_verdict: Option<bool>,
    /// PoG-E: one relation per hop.
    one_relation: bool,
    seed: u64,
    report: PogReport,
}

impl PogMachine {
    pub fn new(cx: &mut Context, topics: Topics, one_relation: bool) -> Result<Self, EngineError> {
        let linker = TopicLinker::new(cx, topics)?;
        let phase = if linker.done() { Phase::Analysis } else { Phase::Topics };
        Ok(Self {
            phase,
            linker,
            analysis: None,
            predicted: 1,
            sg: Arc::default(),
            topics: Vec::new(),
            keep: Vec::new(),
            connected: false,
            hop: 0,
            found: Vec::new(),
            stage: Stage::TopicPaths(1),
            cands: Arc::default(),
            index: Arc::default(),
            pool: Vec::new(),
            selected: Vec::new(),
            pinned: Vec::new(),
            banned: Vec::new(),
            summary: Vec::new(),
            last_verdict: None,
            one_relation,
            seed: cx.settings.seed,
            report: PogReport::default(),
        })
    }

    pub fn report(&self) -> &PogReport {
        &self.report
    }

    fn indicator(&self, cx: &Context) -> String {
        self.analysis.as_ref().map(|a| a.indicator.clone()).unwrap_or_else(|| cx.question.clone())
    }

    fn path_view(&self, cx: &Context, c: usize) -> PathView {
        let cand = &self.cands[c];
        PathView { leaf: cand.leaf, text: cand.text.clone(), score: cand.fuzzy, triples: cx.beam.triples(cand.leaf) }
    }

    /// A precise or branch-reduced selection call: the model picks W of numbered candidates.
    fn selection(&self, cx: &Context, template: Template, texts: &[&str]) -> Request {
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
            Shape::Selection { n: texts.len(), width: cx.settings.width },
        )
    }

    fn numbered(&self, list: &[usize]) -> String {
        list.iter()
            .enumerate()
            .map(|(i, &c)| format!("Path {}: {}", i + 1, self.cands[c].text))
            .collect::<Vec<_>>()
            .join("\n")
    }

    /// Subgraph nodes whose relations the lookup needs: the last hop's unsearched entities, or
    /// the unsearched entities on the selected paths.
    fn to_search(&self, lookup: Lookup) -> Vec<usize> {
        let wanted: Vec<usize> = match lookup {
            Lookup::Subgraph => (0..self.sg.nodes.len()).filter(|&n| self.sg.nodes[n].hop + 1 == self.hop).collect(),
            Lookup::NodeExpansion => {
                let mut on: Vec<usize> = Vec::new();
                for &c in &self.selected {
                    for &n in &self.cands[c].path.nodes {
                        if !on.contains(&n) {
                            on.push(n);
                        }
                    }
                }
                on
            }
        };
        wanted.into_iter().filter(|&n| !self.sg.nodes[n].searched && self.sg.nodes[n].term.is_entity()).collect()
    }

    /// The pool split into prompts of at most `PRECISE_BATCH` candidates and the text budget.
    fn precise_batches(&self) -> Vec<Vec<usize>> {
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
    fn prefixes(&self, hops: usize) -> Vec<(String, Vec<usize>)> {
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

    /// What a judgment may answer: the named entities and values on the pool's paths, the topic
    /// entities aside (the paths start at one and may end at another) and never an unnamed
    /// (mediator) node.
    fn reachable_names(&self, cx: &Context) -> Vec<String> {
        let topics: Vec<&str> = cx.beam.roots().map(|r| r.shown()).collect();
        let mut out: Vec<String> = Vec::new();
        for &c in &self.pool {
            for &n in &self.cands[c].path.nodes {
                let node = &self.sg.nodes[n];
                if node.label.is_none() && matches!(node.term, Term::Entity(_)) {
                    continue;
                }
                let name = self.node_name(n);
                if !topics.contains(&name.as_str()) && !out.contains(&name) {
                    out.push(name);
                }
            }
        }
        out
    }

    fn node_name(&self, n: usize) -> String {
        let node = &self.sg.nodes[n];
        node.label.clone().unwrap_or_else(|| node.term.as_str().to_string())
    }

    fn absorb_analysis(
        &mut self,
        cx: &mut Context,
        requests: &[Request],
        responses: &[Response],
        ev: &mut Event,
    ) -> Result<(), EngineError> {
        let c = completion(responses, 0)?;
        let dmax = cx.settings.depth.max(1);
        let roots: Vec<(Term, Option<String>)> = cx
            .beam
            .roots()
            .filter_map(|r| Some((r.term()?.clone(), r.is_named().then(|| r.shown().to_string()))))
            .collect();
        match parse::parse_analysis(&c.text) {
            Ok(a) => {
                let depth = a.predicted_depth().unwrap_or(dmax).clamp(1, dmax);
                ev.calls.push(record(&requests[0], c, format!("depth {depth}; {}", a.indicator)));
                ev.summary = format!(
                    "indicator {}; {} split question{}; predicted depth {depth}",
                    a.indicator,
                    a.sub_questions.len(),
                    plural_s(a.sub_questions.len())
                );
                self.predicted = depth;
                self.report.indicator = Some(a.indicator.clone());
                self.report.sub_questions = a.sub_questions.clone();
                self.report.predicted_depth = Some(depth);
                self.analysis = Some(a);
            }
            Err(why) => {
                ev.calls.push(record(&requests[0], c, format!("unreadable: {why}")));
                unreadable(ev);
                ev.notes.push(format!("{why}; exploring from depth 1 with the question as the indicator"));
                ev.summary = "question analysis unreadable; predicted depth 1".into();
                self.predicted = 1;
            }
        }
        // Topic entities in the indicator's order (those it does not name keep theirs, after).
        let order: Vec<String> =
            self.analysis.as_ref().map(|a| a.topic_order().iter().map(|s| s.to_string()).collect()).unwrap_or_default();
        let mut ranked: Vec<(usize, (Term, Option<String>))> = roots
            .into_iter()
            .map(|(t, l)| {
                let name = l.clone().unwrap_or_else(|| t.as_str().to_string());
                let pos = order
                    .iter()
                    .position(|o| name_similarity(&name, o) >= SUPPLEMENT_MATCH_MIN || t.as_str() == o)
                    .unwrap_or(usize::MAX);
                (pos, (t, l))
            })
            .collect();
        ranked.sort_by_key(|(pos, _)| *pos);
        let sg = Arc::make_mut(&mut self.sg);
        self.topics = ranked.into_iter().map(|(_, (t, l))| sg.node(&t, l.as_deref(), 0)).collect();
        self.hop = 1;
        self.phase = Phase::ExpandRelations(Lookup::Subgraph);
        Ok(())
    }

    /// After a round of lookups: another hop, or on to reduction / the expansion stage's paths.
    fn after_expansion(&mut self, cx: &mut Context, lookup: Lookup, ev: &mut Event) {
        match lookup {
            Lookup::Subgraph => {
                let multi = self.topics.len() > 1;
                let connected = multi && self.sg.connects(&self.topics);
                let frontier = self.sg.nodes.iter().any(|n| n.hop == self.hop && n.term.is_entity());
                if connected {
                    ev.notes.push(format!("the topic entities connect at hop {}", self.hop));
                }
                if connected || !frontier || self.hop >= cx.settings.depth || self.sg.nodes.len() >= MAX_SUBGRAPH_NODES
                {
                    self.phase = Phase::Reduce;
                } else {
                    self.hop += 1;
                    self.phase = Phase::ExpandRelations(Lookup::Subgraph);
                }
            }
            Lookup::NodeExpansion => self.expansion_paths(cx, ev),
        }
    }

    /// Adds a candidate (or finds it); inserts its path into the beam.
    fn candidate(&mut self, cx: &mut Context, path: SgPath, base: Option<usize>) -> usize {
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
    fn path_text_of(&self, path: &SgPath, from: usize) -> String {
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
    fn insert(&mut self, cx: &mut Context, path: &SgPath) -> NodeId {
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
            let rel = existing.unwrap_or_else(|| {
                let graph = cx.graph_name.clone();
                cx.beam.add(Some(at), NodeKind::Relation { relation, direction, shown }, Provenance::Kg { graph })
            });
            let next = &self.sg.nodes[path.nodes[i + 1]];
            let existing =
                cx.beam.nodes[rel].children.iter().copied().find(|&k| cx.beam.nodes[k].term() == Some(&next.term));
            at = existing.unwrap_or_else(|| {
                let kind = NodeKind::Entity { term: next.term.clone(), label: next.label.clone() };
                cx.beam.add(Some(rel), kind, Provenance::Kg { graph: cx.graph_name.clone() })
            });
        }
        at
    }

    /// Collects the current stage's topic-entity paths as the pool; a depth that offers nothing
    /// new moves on to the next, and past Dmax to the LLM supplement.
    fn gather(&mut self, cx: &mut Context, ev: &mut Event) {
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
    fn offer(&mut self, cx: &mut Context, pool: &mut Vec<usize>, path: SgPath, base: Option<usize>) -> bool {
        let c = self.candidate(cx, path, base);
        let new = !self.banned.contains(&c) && !pool.contains(&c);
        if new {
            pool.push(c);
        }
        new
    }

    fn add_pinned(&self, pool: &mut Vec<usize>) {
        for &p in &self.pinned {
            if !pool.contains(&p) {
                pool.push(p);
            }
        }
    }

    /// After "not sufficient" (or nothing left to check): the next stage of exploration.
    fn next_stage(&mut self, cx: &mut Context, ev: &mut Event) {
        let dmax = cx.settings.depth.max(1);
        match self.stage {
            Stage::TopicPaths(d) if d < dmax => {
                self.stage = Stage::TopicPaths(d + 1);
                self.gather(cx, ev);
            }
            Stage::TopicPaths(_) => {
                self.stage = Stage::Supplement;
                self.phase = Phase::Supplement;
            }
            Stage::Supplement => {
                self.stage = Stage::Expansion;
                if self.selected.is_empty() {
                    ev.notes.push("no selected path to expand".into());
                    self.phase = Phase::Answer(AnswerSource::CollectedPaths);
                } else if self.to_search(Lookup::NodeExpansion).is_empty() {
                    self.expansion_paths(cx, ev);
                } else {
                    self.phase = Phase::ExpandRelations(Lookup::NodeExpansion);
                }
            }
            Stage::Expansion => {
                ev.notes.push("no exploration stage was sufficient".into());
                self.phase = Phase::Answer(AnswerSource::CollectedPaths);
            }
        }
    }

    /// Subgraph nodes (other than topic entities) whose names resemble the predicted ones.
    fn match_names(&self, names: &[String]) -> Vec<usize> {
        let mut out = Vec::new();
        for name in names {
            let best = (0..self.sg.nodes.len())
                .filter(|n| !self.topics.contains(n))
                .filter_map(|n| Some((n, name_similarity(self.sg.nodes[n].label.as_deref()?, name))))
                .filter(|(_, s)| *s >= SUPPLEMENT_MATCH_MIN)
                .max_by(|a, b| a.1.total_cmp(&b.1).then(b.0.cmp(&a.0)));
            if let Some((n, _)) = best
                && !out.contains(&n)
            {
                out.push(n);
            }
        }
        out
    }

    /// Stage 2: the shortest paths from each topic entity to each matched entity, with the
    /// paths selected so far.
    fn supplement_paths(&mut self, cx: &mut Context, matched: &[usize], ev: &mut Event) {
        let dmax = cx.settings.depth.max(1) as usize;
        let mut pool = self.selected.clone();
        let mut added = 0;
        for &m in matched {
            for t in self.topics.clone() {
                if let Some(p) = self.sg.shortest_path(t, m, dmax) {
                    added += usize::from(self.offer(cx, &mut pool, p, None));
                }
            }
        }
        self.add_pinned(&mut pool);
        self.pool = pool;
        if added == 0 {
            ev.notes.push("no new path through the predicted entities".into());
            self.next_stage(cx, ev);
            return;
        }
        ev.notes.push(format!("{added} new path{} through predicted entities", plural_s(added)));
        self.open_stage();
    }

    /// Stage 3: each selected path with one more edge from any of its entities (off its end,
    /// or a branch from inside it, shown after the whole path).
    fn expansion_paths(&mut self, cx: &mut Context, ev: &mut Event) {
        let mut pool = self.selected.clone();
        let mut added = 0;
        for c in self.selected.clone() {
            if self.cands[c].base.is_some() {
                continue;
            }
            let path = self.cands[c].path.clone();
            for i in 0..path.nodes.len() {
                let x = path.nodes[i];
                for e in self.sg.edges_of(x).to_vec() {
                    let y = self.sg.other(e, x);
                    if path.nodes.contains(&y) || pool.len() >= MAX_CANDIDATES {
                        continue;
                    }
                    let prefix = SgPath { nodes: path.nodes[..=i].to_vec(), edges: path.edges[..i].to_vec() };
                    let base = (i + 1 < path.nodes.len()).then_some(c);
                    added += usize::from(self.offer(cx, &mut pool, prefix.extended(e, y), base));
                }
            }
        }
        self.add_pinned(&mut pool);
        self.pool = pool;
        if added == 0 {
            ev.notes.push("the selected paths have no further neighbours".into());
            self.phase = Phase::Answer(AnswerSource::CollectedPaths);
        } else {
            ev.notes.push(format!("{added} expanded path{}", plural_s(added)));
            self.open_stage();
        }
    }

    /// The pool holds a stage's candidates: pruning starts, and the report gains the stage.
    fn open_stage(&mut self) {
        self.phase = Phase::Fuzzy;
        self.report.stages.push(StageReport {
            stage: self.stage.name(),
            candidates: self.pool.len(),
            ..StageReport::default()
        });
    }

    /// Records how many candidates a pruning step left in the current stage.
    fn pruned_to(&mut self, step: fn(&mut StageReport) -> &mut Option<usize>) {
        let left = self.pool.len();
        if let Some(s) = self.report.stages.last_mut() {
            *step(s) = Some(left);
        }
    }

    fn absorb_fuzzy(&mut self, cx: &mut Context, responses: &[Response], ev: &mut Event) -> Result<(), EngineError> {
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

    fn absorb_precise(
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

    fn absorb_branch(
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
    fn mark(&self, cx: &mut Context, ev: &mut Event, before: &[usize], status: Status, reason: &str) {
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

    fn finish(&mut self, cx: &mut Context, answers: Vec<String>, reply: String, source: AnswerSource) {
        let mut on: Vec<usize> = self.selected.clone();
        if source == AnswerSource::CollectedPaths {
            for &c in &self.pool {
                if !on.contains(&c) {
                    on.push(c);
                }
            }
        }
        let paths = on.iter().map(|&c| self.path_view(cx, c)).collect();
        self.report.answered_by = Some(match source {
            AnswerSource::KgPaths => self.stage.name(),
            _ => "no stage judged sufficient: every collected path".into(),
        });
        cx.answer = Some(Answer { answers, source, reply, paths, why: None });
        self.phase = Phase::Done;
    }
}

/// The phase of the last step taken (overrides and rewinds are not steps).
fn last_step(cx: &Context) -> Option<&str> {
    cx.trace.iter().rev().find_map(|e| e.phase())
}

/// PoG-E's rule for a hop with several relations between the same two nodes: one of them,
/// drawn from a generator seeded with the run's seed and the edge, so the same seed always
/// walks the same relation (the reference takes the first after sorting).
fn pog_e_choice(seed: u64, edge: usize, n: usize) -> usize {
    use rand::SeedableRng;
    let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(seed ^ (edge as u64).wrapping_mul(0x9E37_79B9_7F4A_7C15));
    rng.random_range(0..n)
}

impl Method for PogMachine {
    type Plan = PogPlan;

    fn next(&mut self, cx: &mut Context) -> (Vec<Request>, PogPlan) {
        let s = cx.settings.clone();
        let q = cx.question.clone();
        let mut plan = PogPlan::default();
        let requests = match self.phase {
            Phase::Topics => self.linker.requests(cx),
            Phase::Analysis => {
                let topics: Vec<String> = cx.beam.roots().map(|r| format!("\"{}\"", r.shown())).collect();
                let prompt = cx.render(Template::PogAnalysis, &[("question", &q), ("topics", &topics.join(", "))]);
                vec![cx.llm("pog_analysis", prompt, s.prune_temperature, Shape::Analysis)]
            }
            Phase::ExpandRelations(lookup) => {
                plan.nodes = self.to_search(lookup);
                plan.nodes
                    .iter()
                    .map(|&n| Request::Relations { entity: self.sg.nodes[n].term.as_str().to_string() })
                    .collect()
            }
            Phase::ExpandNeighbours(_) => self
                .found
                .iter()
                .flat_map(|(n, rels)| {
                    let entity = self.sg.nodes[*n].term.as_str().to_string();
                    rels.iter().map(move |r| Request::Neighbours { entity: entity.clone(), relation: r.clone() })
                })
                .collect(),
            Phase::Reduce => Vec::new(),
            Phase::Fuzzy => {
                if s.prune == PruneTool::Embedding && !self.pool.is_empty() {
                    let mut texts = vec![self.indicator(cx)];
                    texts.extend(self.pool.iter().map(|&c| self.cands[c].text.clone()));
                    vec![Request::Embed { texts }]
                } else {
                    Vec::new()
                }
            }
            Phase::Precise => {
                plan.batches = self.precise_batches();
                plan.batches
                    .iter()
                    .map(|batch| {
                        let texts: Vec<&str> = batch.iter().map(|&c| self.cands[c].text.as_str()).collect();
                        self.selection(cx, Template::PogPrecise, &texts)
                    })
                    .collect()
            }
            Phase::Branch(hops) => {
                plan.prefixes = self.prefixes(hops);
                let texts: Vec<&str> = plan.prefixes.iter().map(|(text, _)| text.as_str()).collect();
                vec![self.selection(cx, Template::PogBranch, &texts)]
            }
            Phase::Summary => {
                let prompt =
                    cx.render(Template::PogSummary, &[("question", &q), ("paths", &self.numbered(&self.pool))]);
                vec![cx.llm("pog_summary", prompt, s.prune_temperature, Shape::Summary)]
            }
            Phase::Sufficiency => {
                let summary = if self.summary.is_empty() { "(none)".to_string() } else { self.summary.join("\n") };
                let prompt = cx.render(
                    Template::PogSufficiency,
                    &[("question", &q), ("paths", &self.numbered(&self.pool)), ("summary", &summary)],
                );
                // A structured variant judges by the answer, chosen among what the paths reach.
                let options = self.reachable_names(cx);
                let shape = if prompt.shows_shape { Shape::Judgment { options: &options } } else { Shape::Verdict };
                vec![cx.llm("pog_sufficiency", prompt, s.reason_temperature, shape)]
            }
            Phase::Supplement => {
                let topics: Vec<String> = cx.beam.roots().map(|r| r.shown().to_string()).collect();
                let prompt = cx.render(
                    Template::PogSupplement,
                    &[("question", &q), ("topics", &topics.join(", ")), ("paths", &self.numbered(&self.selected))],
                );
                vec![cx.llm("pog_supplement", prompt, s.prune_temperature, Shape::Supplement)]
            }
            Phase::Answer(source) => {
                let mut all: Vec<usize> = self.selected.clone();
                for &c in &self.pool {
                    if !all.contains(&c) {
                        all.push(c);
                    }
                }
                let template =
                    if source == AnswerSource::KgPaths { Template::PogAnswer } else { Template::PogAnswerOwn };
                let prompt = cx.render(template, &[("question", &q), ("paths", &self.numbered(&all))]);
                vec![cx.llm(template.name(), prompt, s.reason_temperature, Shape::Answer)]
            }
            Phase::Done => Vec::new(),
        };
        (requests, plan)
    }

    fn absorb(
        &mut self,
        cx: &mut Context,
        plan: &PogPlan,
        requests: &[Request],
        responses: Vec<Response>,
    ) -> Result<Event, EngineError> {
        let mut ev = Event::step(cx.next_index(), self.phase(), self.depth());
        match self.phase {
            Phase::Topics => {
                self.linker.absorb(cx, requests, &responses, &mut ev)?;
                if self.linker.done() {
                    self.phase = Phase::Analysis;
                }
            }
            Phase::Analysis => self.absorb_analysis(cx, requests, &responses, &mut ev)?,
            Phase::ExpandRelations(lookup) => {
                let nodes = &plan.nodes;
                self.found.clear();
                let mut total = 0;
                for (i, &n) in nodes.iter().enumerate() {
                    let rels = relations(&responses, i)?;
                    ev.lookups.push(LookupRecord {
                        what: format!("relations of {}", self.node_name(n)),
                        results: rels.len(),
                    });
                    total += rels.len();
                    Arc::make_mut(&mut self.sg).nodes[n].searched = true;
                    if !rels.is_empty() {
                        self.found.push((n, rels));
                    }
                }
                ev.summary = format!(
                    "{total} relation{} around {} entit{}",
                    plural_s(total),
                    nodes.len(),
                    if nodes.len() == 1 { "y" } else { "ies" }
                );
                self.phase = Phase::ExpandNeighbours(lookup);
                if self.found.is_empty() {
                    self.after_expansion(cx, lookup, &mut ev);
                }
            }
            Phase::ExpandNeighbours(lookup) => {
                let found = std::mem::take(&mut self.found);
                let mut i = 0;
                let before = (self.sg.nodes.len(), self.sg.triples);
                for (n, rels) in found {
                    let hop = self.sg.nodes[n].hop + 1;
                    for r in rels {
                        let mut got = neighbours(&responses, i)?;
                        i += 1;
                        ev.lookups.push(LookupRecord {
                            what: format!("{} {} {}", self.node_name(n), r.direction.arrow(), r.relation),
                            results: got.len(),
                        });
                        if got.len() > cx.settings.sample_threshold {
                            let keep = sample_indices(&mut cx.rng, got.len(), cx.settings.sample_threshold);
                            ev.notes.push(format!(
                                "{} {}: {} neighbours, {} sampled (seeded)",
                                self.node_name(n),
                                r.relation,
                                got.len(),
                                keep.len()
                            ));
                            got = keep.into_iter().map(|k| got[k].clone()).collect();
                        }
                        for nb in got {
                            if self.sg.nodes.len() >= MAX_SUBGRAPH_NODES {
                                break;
                            }
                            let label = nb.label.clone().or_else(|| match &nb.term {
                                Term::Literal(v) => Some(v.clone()),
                                Term::Entity(_) => None,
                            });
                            let sg = Arc::make_mut(&mut self.sg);
                            let m = sg.node(&nb.term, label.as_deref(), hop);
                            sg.link(n, &r.relation, r.direction, m);
                        }
                    }
                }
                if self.sg.nodes.len() >= MAX_SUBGRAPH_NODES {
                    ev.notes.push(format!("the subgraph reached {MAX_SUBGRAPH_NODES} nodes; expansion stopped"));
                }
                if lookup == Lookup::Subgraph {
                    self.report.subgraph = (self.sg.nodes.len(), self.sg.triples);
                }
                ev.summary = format!(
                    "subgraph: +{} nodes, +{} triples ({} nodes, {} triples)",
                    self.sg.nodes.len() - before.0,
                    self.sg.triples - before.1,
                    self.sg.nodes.len(),
                    self.sg.triples
                );
                self.after_expansion(cx, lookup, &mut ev);
            }
            Phase::Reduce => {
                let r = Arc::make_mut(&mut self.sg).reduce(&self.topics, REDUCTION_SLACK);
                ev.summary = format!("subgraph reduced from {} to {} nodes", r.before, r.after);
                if !r.connected {
                    ev.notes.push(format!(
                        "the topic entities do not connect within {} hops; the subgraph is not reduced",
                        cx.settings.depth
                    ));
                }
                self.keep = r.keep;
                self.connected = r.connected && self.topics.len() > 1;
                self.report.reduced = Some((r.before, r.after));
                self.report.connected = self.connected;
                self.stage = Stage::TopicPaths(self.predicted);
                self.gather(cx, &mut ev);
            }
            Phase::Fuzzy => self.absorb_fuzzy(cx, &responses, &mut ev)?,
            Phase::Precise => self.absorb_precise(cx, &plan.batches, requests, &responses, &mut ev)?,
            Phase::Branch(hops) => self.absorb_branch(cx, hops, &plan.prefixes, requests, &responses, &mut ev)?,
            Phase::Summary => {
                let c = completion(&responses, 0)?;
                self.summary = parse::parse_summary(&c.text);
                self.report.summary = self.summary.clone();
                ev.calls.push(record(&requests[0], c, format!("{} line(s)", self.summary.len())));
                if self.summary.is_empty() {
                    unreadable(&mut ev);
                    ev.notes.push("the summary reply is empty; the sufficiency check reads the paths alone".into());
                }
                ev.summary = format!("summarised {} path{}", self.pool.len(), plural_s(self.pool.len()));
                self.phase = Phase::Sufficiency;
            }
            Phase::Sufficiency => {
                let c = completion(&responses, 0)?;
                let (verdict, yes, answers) = match parse::parse_sufficiency(&c.text) {
                    Ok((yes, answers)) => (Some(yes), yes, answers),
                    Err(why) => {
                        ev.notes.push(format!("{why}; taken as No"));
                        (None, false, Vec::new())
                    }
                };
                let (yes, answers, parsed) = judged(&requests[0], yes, answers, "the paths", &mut ev.notes);
                ev.calls.push(record(&requests[0], c, parsed));
                if verdict.is_none() {
                    unreadable(&mut ev);
                }
                self.last_verdict = Some(yes);
                self.selected = self.pool.clone();
                if let Some(s) = self.report.stages.last_mut() {
                    s.sufficient = Some(yes);
                }
                let stage = self.stage.name();
                if yes && !answers.is_empty() {
                    ev.summary = format!("{stage}: sufficient; answer {}", answers.join(", "));
                    self.finish(cx, answers, c.text.clone(), AnswerSource::KgPaths);
                } else if yes {
                    ev.summary = format!("{stage}: sufficient; asking for the answer");
                    self.phase = Phase::Answer(AnswerSource::KgPaths);
                } else {
                    ev.summary = format!("{stage}: not sufficient");
                    self.next_stage(cx, &mut ev);
                }
            }
            Phase::Supplement => {
                let c = completion(&responses, 0)?;
                let names = parse::parse_supplement(&c.text);
                let matched = self.match_names(&names);
                ev.calls.push(record(&requests[0], c, names.join("; ")));
                if names.is_empty() {
                    unreadable(&mut ev);
                    ev.notes.push("the reply names no candidate entity".into());
                }
                ev.summary = format!(
                    "the model predicted {} entit{}; {} matched in the subgraph",
                    names.len(),
                    if names.len() == 1 { "y" } else { "ies" },
                    matched.len()
                );
                self.supplement_paths(cx, &matched, &mut ev);
            }
            Phase::Answer(source) => {
                let (answers, reply) = answer_call(requests, &responses, &mut ev, source, None)?;
                self.finish(cx, answers, reply, source);
            }
            Phase::Done => return Err(EngineError::Finished),
        }
        Ok(ev)
    }

    fn phase(&self) -> &'static str {
        match self.phase {
            Phase::Topics => self.linker.phase_name(),
            Phase::Analysis => "question_analysis",
            Phase::ExpandRelations(Lookup::Subgraph) => "subgraph_relations",
            Phase::ExpandNeighbours(Lookup::Subgraph) => "subgraph_neighbours",
            Phase::ExpandRelations(Lookup::NodeExpansion) => "expansion_relations",
            Phase::ExpandNeighbours(Lookup::NodeExpansion) => "expansion_neighbours",
            Phase::Reduce => "subgraph_reduction",
            Phase::Fuzzy => "fuzzy_selection",
            Phase::Precise => "precise_selection",
            Phase::Branch(_) => "branch_selection",
            Phase::Summary => "path_summary",
            Phase::Sufficiency => "sufficiency",
            Phase::Supplement => "llm_supplement",
            Phase::Answer(_) => "answer",
            Phase::Done => "done",
        }
    }

    fn depth(&self) -> u32 {
        match self.phase {
            Phase::Topics | Phase::Analysis => 0,
            Phase::ExpandRelations(Lookup::Subgraph) | Phase::ExpandNeighbours(Lookup::Subgraph) => self.hop,
            _ => match self.stage {
                Stage::TopicPaths(d) => d,
                _ => self.hop,
            },
        }
    }

    /// While paths are being selected, checked or summarised: the candidate paths left.
    fn has_frontier(&self, _cx: &Context) -> bool {
        match self.phase {
            Phase::Precise | Phase::Branch(_) | Phase::Summary | Phase::Sufficiency => !self.pool.is_empty(),
            _ => true,
        }
    }

    /// The paths now in front of the model, best first.
    fn live_paths(&self, cx: &Context) -> Vec<PathView> {
        let shown = if self.pool.is_empty() { &self.selected } else { &self.pool };
        shown.iter().map(|&c| self.path_view(cx, c)).collect()
    }

    fn apply(&mut self, cx: &mut Context, o: &Override) -> Result<String, EngineError> {
        let step = cx.next_index();
        let bad = |why: &str| EngineError::BadOverride { what: o.describe(), why: why.into() };
        let selecting = matches!(self.phase, Phase::Precise | Phase::Branch(_) | Phase::Summary | Phase::Sufficiency);
        let cand_of = |node: NodeId| self.cands.iter().position(|c| c.leaf == node);
        if cx.answer.is_some() && !matches!(o, Override::ForceContinue) {
            return Err(bad(ANSWERED));
        }
        match o {
            Override::Keep { node } | Override::Drop { node } => {
                let Some(c) = cand_of(*node) else {
                    return Err(bad("not the last node of a candidate path; PoG keeps and drops whole paths"));
                };
                if !selecting {
                    return Err(bad("paths can be kept or dropped between pruning and the sufficiency check"));
                }
                let text = self.cands[c].text.clone();
                if matches!(o, Override::Keep { .. }) {
                    if !self.pool.contains(&c) {
                        self.pool.push(c);
                    }
                    self.banned.retain(|&b| b != c);
                    for n in cx.beam.path(*node) {
                        if !cx.beam.nodes[n].status.is_live() {
                            cx.beam.set_status(n, Status::Kept, Some(KEPT_BY_YOU), step);
                        }
                    }
                    Ok(format!("kept {text}"))
                } else {
                    let pinned = self.pinned.contains(&c);
                    self.pool.retain(|&p| p != c);
                    self.pinned.retain(|&p| p != c);
                    cx.beam.set_status(*node, Status::PrunedByUser, Some("dropped by the user"), step);
                    Ok(format!("{}dropped {text}", if pinned { "unpinned and " } else { "" }))
                }
            }
            Override::Pin { node } => {
                let Some(c) = cand_of(*node) else { return Err(bad("not the last node of a candidate path")) };
                if !self.pinned.contains(&c) {
                    self.pinned.push(c);
                }
                if selecting && !self.pool.contains(&c) {
                    self.pool.push(c);
                }
                for n in cx.beam.path(*node) {
                    if !cx.beam.nodes[n].status.is_live() || n == *node {
                        cx.beam.set_status(n, Status::PinnedByUser, Some("pinned by the user"), step);
                    }
                }
                Ok(format!("pinned {}", self.cands[c].text))
            }
            Override::PrunePath { node } => {
                cx.beam.get(*node).ok_or_else(|| bad("no such node"))?;
                let through: Vec<usize> =
                    (0..self.cands.len()).filter(|&c| cx.beam.path(self.cands[c].leaf).contains(node)).collect();
                for c in &through {
                    if !self.banned.contains(c) {
                        self.banned.push(*c);
                    }
                }
                self.pool.retain(|c| !through.contains(c));
                self.pinned.retain(|c| !through.contains(c));
                self.selected.retain(|c| !through.contains(c));
                let unpinned = unpinning(&cx.beam, *node);
                cx.beam.set_subtree(*node, Status::PrunedByUser, "pruned by the user", step);
                let path = format!(
                    "{} ({} candidate path{})",
                    cx.beam.path_text(*node),
                    through.len(),
                    plural_s(through.len())
                );
                Ok(unpinned.pruned(&path))
            }
            Override::EditAction { .. } => Err(bad("only GoG has actions to edit")),
            Override::AddRelation { .. } | Override::AddEntity { .. } => {
                Err(bad("PoG chooses among whole paths of its question subgraph; keep or pin a candidate path instead"))
            }
            Override::ForceSufficient => {
                let after_no = self.last_verdict == Some(false)
                    && last_step(cx) == Some("sufficiency")
                    && !matches!(self.phase, Phase::Done);
                if matches!(self.phase, Phase::Summary | Phase::Sufficiency) {
                    self.selected = self.pool.clone();
                } else if !after_no {
                    return Err(bad("only before or right after a sufficiency check"));
                }
                self.phase = Phase::Answer(AnswerSource::KgPaths);
                Ok("forced sufficient: answer from the selected paths".into())
            }
            Override::ForceContinue => {
                let after_yes = self.last_verdict == Some(true)
                    && matches!(self.phase, Phase::Done | Phase::Answer(AnswerSource::KgPaths));
                if !matches!(self.phase, Phase::Summary | Phase::Sufficiency) && !after_yes {
                    return Err(bad("only before or right after a sufficiency check"));
                }
                if self.stage == Stage::Expansion {
                    return Err(bad("already at the last exploration stage"));
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
    }

    /// The candidate paths, beside the report, most telling first (the pane is short): the
    /// indicator, the depth and the subgraph, each stage's pruning counts and verdict, the
    /// answer's stage, then the details.
    fn view(&self, cx: &Context) -> MethodView {
        let r = &self.report;
        let mut report = Vec::new();
        match &r.indicator {
            Some(ind) => report.push(ViewLine::labelled("indicator ", ind.clone())),
            None => report.push(ViewLine::dim("question not analysed yet")),
        }
        let mut facts = Vec::new();
        if let Some(d) = r.predicted_depth {
            facts.push(format!("depth {d} of {}", cx.settings.depth));
        }
        if r.subgraph.0 > 0 {
            facts.push(format!("subgraph {} nodes, {} triples", r.subgraph.0, r.subgraph.1));
        }
        if let Some((before, after)) = r.reduced {
            facts
                .push(format!("reduced {before} → {after} nodes{}", if r.connected { " (topics joined)" } else { "" }));
        }
        if !facts.is_empty() {
            report.push(ViewLine::plain(facts.join(" · ")));
        }
        for s in &r.stages {
            let step = |name: &str, n: Option<usize>| n.map(|n| format!(" → {name} {n}")).unwrap_or_default();
            let verdict = match s.sufficient {
                Some(true) => " ✓ sufficient",
                Some(false) => " ✗ not sufficient",
                None => "",
            };
            report.push(ViewLine::plain(format!(
                "{}: {}{}{}{}{verdict}",
                s.stage,
                s.candidates,
                step("fuzzy", s.after_fuzzy),
                step("branch", s.after_branch),
                step("precise", s.after_precise)
            )));
        }
        if let Some(by) = &r.answered_by {
            report.push(ViewLine::accent(format!("answered by {by}")));
        }
        report.extend(r.summary.iter().map(|l| ViewLine::dim(format!("summary: {l}"))));
        report.extend(
            r.sub_questions.iter().enumerate().map(|(i, q)| ViewLine::dim(format!("sub-question {}: {q}", i + 1))),
        );
        MethodView {
            report,
            ..MethodView::paths("PoG: question analysis, subgraph, stages · candidate paths", cx, self.live_paths(cx))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::engine::{Settings, test_context};
    use crate::llm::Completion;

    fn start() -> (Context, PogMachine) {
        let mut cx = test_context("Which country contains Canberra?", Settings::default());
        let topics = Topics::Linked(vec![("m.canberra".into(), Some("Canberra".into()))]);
        let pog = PogMachine::new(&mut cx, topics, false).unwrap();
        (cx, pog)
    }

    fn analysed() -> (Context, PogMachine) {
        let (mut cx, mut pog) = start();
        let (requests, plan) = Method::next(&mut pog, &mut cx);
        let text = "Indicator:\n\"Canberra\" - contained by - answer(country)\nsub_question 1: Where is Canberra?";
        let reply = Response::Llm { completion: Completion { text: text.into(), ..Completion::default() } };
        Method::absorb(&mut pog, &mut cx, &plan, &requests, vec![reply]).unwrap();
        (cx, pog)
    }

    #[test]
    fn the_analysis_sets_the_depth_and_the_subgraph_lookups_carry_their_nodes() {
        let (mut cx, mut pog) = analysed();
        assert_eq!(pog.report().predicted_depth, Some(1));
        assert_eq!(Method::phase(&pog), "subgraph_relations");
        let (requests, plan) = Method::next(&mut pog, &mut cx);
        assert_eq!(requests, vec![Request::Relations { entity: "m.canberra".into() }]);
        assert_eq!(plan.nodes, vec![0], "the topic entity's subgraph node");

        let found = vec![Response::Relations { relations: vec![RelationRef::out("location.location.containedby")] }];
        let ev = Method::absorb(&mut pog, &mut cx, &plan, &requests, found).unwrap();
        assert_eq!(ev.lookups.len(), 1);
        assert!(pog.sg.nodes[0].searched, "a searched node is not searched again");
        assert_eq!(Method::phase(&pog), "subgraph_neighbours");
        let (requests, _) = Method::next(&mut pog, &mut cx);
        assert_eq!(requests.len(), 1, "one neighbour lookup per relation found");
    }

    #[test]
    fn the_view_reports_the_analysis_beside_the_paths() {
        let (cx, pog) = analysed();
        let view = Method::view(&pog, &cx);
        assert_eq!(view.report[0].label, "indicator ");
        assert!(view.report[0].text.contains("answer(country)"), "{:?}", view.report);
        assert!(view.report.iter().any(|l| l.text == "sub-question 1: Where is Canberra?"));
        assert!(view.items.is_empty() && !view.edits_steps);
    }

    #[test]
    fn overrides_it_cannot_take_are_refused_in_words() {
        let (mut cx, mut pog) = start();
        let err = Method::apply(&mut pog, &mut cx, &Override::EditAction { thought: None, action: "Finish[x]".into() })
            .unwrap_err();
        assert!(err.to_string().starts_with("cannot edit the action to Finish[x] now: "), "{err}");
        assert!(!err.to_string().contains("EditAction"), "no debug text: {err}");
    }
}
