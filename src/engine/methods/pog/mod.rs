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
//!
//! This file holds the machine and its step loop; `stages` the analysis, the subgraph and the
//! three stages, `candidates` the paths walked onto the beam, `pruning` the three-step pruning,
//! `phases` the handlers of the phases whose results take more than a line,
//! `answer` how the run ends, `overrides` the user's changes and `view` the method pane.

mod answer;
mod candidates;
mod overrides;
pub(crate) mod parse;
mod phases;
mod pruning;
pub(crate) mod shapes;
pub(crate) mod simulate;
mod stages;
pub(crate) mod subgraph;
pub(crate) mod templates;
mod view;

use crate::engine::beam::NodeId;
use crate::engine::events::{Event, LookupRecord};
use crate::engine::method::{Method, MethodView};
use crate::engine::step::{
    answer_call, completion, judged, neighbours, plural_s, record, relations, sample_indices, unreadable,
};
use crate::engine::structured::{ANSWER, Reply, VERDICT, judgment};
use crate::engine::topics::TopicLinker;
use crate::engine::{AnswerSource, Context, EngineError, Override, PathView, PruneTool, Request, Response, Topics};
use crate::kg::{RelationRef, Term};
use parse::Analysis;
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

pub use crate::engine::settings::PogPruning;

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
    /// The model's question analysis could not be read (the run explores from depth 1 with
    /// the question as its indicator).
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub analysis_unreadable: bool,
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
        cx.share_prefix(&[&[crate::engine::templates::TOPIC_ENTITIES], templates::TEMPLATES].concat());
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

    fn indicator(&self, cx: &Context) -> String {
        self.analysis.as_ref().map(|a| a.indicator.clone()).unwrap_or_else(|| cx.question.clone())
    }
}

impl Method for PogMachine {
    type Plan = PogPlan;

    fn next(&mut self, cx: &mut Context) -> (Vec<Request>, PogPlan) {
        let mut plan = PogPlan::default();
        let requests = match self.phase {
            Phase::Topics => self.linker.requests(cx),
            Phase::Analysis => analysis_request(cx),
            Phase::ExpandRelations(lookup) => self.relation_lookups(lookup, &mut plan),
            Phase::ExpandNeighbours(_) => self.neighbour_lookups(),
            Phase::Reduce => Vec::new(),
            Phase::Fuzzy => self.fuzzy_embeddings(cx),
            Phase::Precise => self.precise_requests(cx, &mut plan),
            Phase::Branch(hops) => self.branch_request(cx, hops, &mut plan),
            Phase::Summary => self.summary_request(cx),
            Phase::Sufficiency => self.sufficiency_request(cx),
            Phase::Supplement => self.supplement_request(cx),
            Phase::Answer(source) => self.answer_request(cx, source),
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
            Phase::ExpandRelations(lookup) => self.on_expand_relations(cx, lookup, plan, &responses, &mut ev)?,
            Phase::ExpandNeighbours(lookup) => self.on_expand_neighbours(cx, lookup, &responses, &mut ev)?,
            Phase::Reduce => self.on_reduce(cx, &mut ev)?,
            Phase::Fuzzy => self.absorb_fuzzy(cx, &responses, &mut ev)?,
            Phase::Precise => self.absorb_precise(cx, &plan.batches, requests, &responses, &mut ev)?,
            Phase::Branch(hops) => self.absorb_branch(cx, hops, &plan.prefixes, requests, &responses, &mut ev)?,
            Phase::Summary => self.on_summary(requests, &responses, &mut ev)?,
            Phase::Sufficiency => self.on_sufficiency(cx, requests, &responses, &mut ev)?,
            Phase::Supplement => self.on_supplement(cx, requests, &responses, &mut ev)?,
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
        self.apply_override(cx, o)
    }

    fn view(&self, cx: &Context) -> MethodView {
        self.method_view(cx)
    }
}

/// The requests of each phase, one function per phase: what [`Method::next`] dispatches to.
/// Those whose results are read against a plan fill it in.
impl PogMachine {
    /// The relations of each subgraph node the expansion reaches next, one lookup per node.
    fn relation_lookups(&self, lookup: Lookup, plan: &mut PogPlan) -> Vec<Request> {
        plan.nodes = self.to_search(lookup);
        plan.nodes.iter().map(|&n| Request::Relations { entity: self.sg.nodes[n].term.as_str().to_string() }).collect()
    }

    /// The neighbours along every relation found, one lookup per node and relation.
    fn neighbour_lookups(&self) -> Vec<Request> {
        self.found
            .iter()
            .flat_map(|(n, rels)| {
                let entity = self.sg.nodes[*n].term.as_str().to_string();
                rels.iter().map(move |r| Request::Neighbours { entity: entity.clone(), relation: r.clone() })
            })
            .collect()
    }

    /// Fuzzy selection by embeddings: the indicator and every pooled path in one batch (the
    /// other pruning tools need no request).
    fn fuzzy_embeddings(&self, cx: &Context) -> Vec<Request> {
        if cx.settings.prune == PruneTool::Embedding && !self.pool.is_empty() {
            let mut texts = vec![self.indicator(cx)];
            texts.extend(self.pool.iter().map(|&c| self.cands[c].text.clone()));
            vec![Request::Embed { texts }]
        } else {
            Vec::new()
        }
    }

    /// Precise selection: one prompt per batch of pooled candidates.
    fn precise_requests(&self, cx: &Context, plan: &mut PogPlan) -> Vec<Request> {
        plan.batches = self.precise_batches();
        plan.batches
            .iter()
            .map(|batch| {
                let texts: Vec<&str> = batch.iter().map(|&c| self.cands[c].text.as_str()).collect();
                self.selection(cx, templates::PRECISE, &texts)
            })
            .collect()
    }

    /// Branch-reduced selection: one prompt listing the path prefixes of `hops` hops.
    fn branch_request(&self, cx: &Context, hops: usize, plan: &mut PogPlan) -> Vec<Request> {
        plan.prefixes = self.prefixes(hops);
        let texts: Vec<&str> = plan.prefixes.iter().map(|(text, _)| text.as_str()).collect();
        vec![self.selection(cx, templates::BRANCH, &texts)]
    }

    fn summary_request(&self, cx: &Context) -> Vec<Request> {
        let prompt =
            cx.render(templates::SUMMARY, &[("question", &cx.question), ("paths", &self.numbered(&self.pool))]);
        vec![cx.llm("pog_summary", prompt, cx.settings.prune_temperature, &shapes::SUMMARY)]
    }

    fn sufficiency_request(&self, cx: &Context) -> Vec<Request> {
        let summary = if self.summary.is_empty() { "(none)".to_string() } else { self.summary.join("\n") };
        let prompt = cx.render(
            templates::SUFFICIENCY,
            &[("question", &cx.question), ("paths", &self.numbered(&self.pool)), ("summary", &summary)],
        );
        // A structured variant judges by the answer, chosen among what the paths reach.
        let options = self.reachable_names(cx);
        let shape = if prompt.shows_shape { judgment(&options) } else { Reply::from(&VERDICT) };
        vec![cx.llm("pog_sufficiency", prompt, cx.settings.reason_temperature, shape)]
    }

    /// The model's guess at entities the answer may pass through, from the selected paths.
    fn supplement_request(&self, cx: &Context) -> Vec<Request> {
        let topics: Vec<String> = cx.beam.roots().map(|r| r.shown().to_string()).collect();
        let prompt = cx.render(
            templates::SUPPLEMENT,
            &[("question", &cx.question), ("topics", &topics.join(", ")), ("paths", &self.numbered(&self.selected))],
        );
        vec![cx.llm("pog_supplement", prompt, cx.settings.prune_temperature, &shapes::SUPPLEMENT)]
    }

    /// The answer from the selected paths, then the rest of the pool.
    fn answer_request(&self, cx: &Context, source: AnswerSource) -> Vec<Request> {
        let mut all: Vec<usize> = self.selected.clone();
        for &c in &self.pool {
            if !all.contains(&c) {
                all.push(c);
            }
        }
        let template = if source == AnswerSource::KgPaths { templates::ANSWER } else { templates::ANSWER_OWN };
        let prompt = cx.render(template, &[("question", &cx.question), ("paths", &self.numbered(&all))]);
        vec![cx.llm(template.name(), prompt, cx.settings.reason_temperature, &ANSWER)]
    }
}

/// The question analysis: indicator chain, split questions, predicted depth.
fn analysis_request(cx: &Context) -> Vec<Request> {
    let topics: Vec<String> = cx.beam.roots().map(|r| format!("\"{}\"", r.shown())).collect();
    let prompt = cx.render(templates::ANALYSIS, &[("question", &cx.question), ("topics", &topics.join(", "))]);
    vec![cx.llm("pog_analysis", prompt, cx.settings.prune_temperature, &shapes::ANALYSIS)]
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
        assert_eq!(pog.report.predicted_depth, Some(1));
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
    fn an_unreadable_analysis_is_said_as_such_not_as_not_yet_done() {
        let (mut cx, mut pog) = start();
        assert_eq!(Method::view(&pog, &cx).report[0].text, "question not analysed yet");
        let (requests, plan) = Method::next(&mut pog, &mut cx);
        let reply = Response::Llm { completion: Completion { text: "I cannot say.".into(), ..Completion::default() } };
        Method::absorb(&mut pog, &mut cx, &plan, &requests, vec![reply]).unwrap();
        assert!(pog.report.analysis_unreadable && pog.report.predicted_depth.is_none(), "no prediction made up");
        let first = &Method::view(&pog, &cx).report[0];
        assert_eq!(first.text, "no indicator: the model's question analysis could not be read");
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
