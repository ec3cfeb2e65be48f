//! Think-on-Graph and ToG-R as a state machine over the shared beam tree.
//!
//! Per depth: relation search → relation prune → entity search → entity prune → reasoning; then
//! the answer. Unlike the reference code: incoming relations are expanded in the right
//! direction; every candidate is one beam node (id, label, direction, score, provenance); path
//! scores multiply down the path; relations the model invents are rejected and never queried;
//! at most N are kept; literals are candidates and can be answers; the beam running dry ends
//! the search cleanly; explored paths are kept and shown with an own-knowledge answer.
//!
//! This file holds the machine and its step loop; `phases` has one handler per phase (what its
//! results do, which phase is next); their work is in `frontier` (what the beam holds now), `scoring` (relations and entities scored), `entities` (the entity phase's
//! width or draw), `keeps` (what the user's keeps protect), `answer` (what the check is shown,
//! how the run ends), `hop_plan` (the depths a planned run leaves unjudged) and `overrides`
//! (the user's changes).

use self::answer::{DEPTH_LIMIT, DEPTH_LIMIT_PARTIAL};
use crate::engine::beam::{NodeId, NodeKind};
use crate::engine::events::Event;
use crate::engine::method::Method;
use crate::engine::structured::{ANSWER, REASONED_ANSWER, Reply, VERDICT, judgment};
use crate::engine::topics::TopicLinker;
use crate::engine::{AnswerSource, Context, EngineError, Override, PathView, Request, Response, Topics};
use crate::kg::RelationRef;

mod answer;
mod entities;
mod frontier;
mod hop_plan;
mod keeps;
mod overrides;
mod phases;
mod scoring;
pub(crate) mod shapes;
pub(crate) mod simulate;
pub(crate) mod templates;

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
    /// The index of the hop plan's call, when it rides along with this batch's lookups.
    hop_plan: Option<usize>,
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
    /// The depth the paths are first judged at, once the hop plan is read (`hop_plan`).
    hops_planned: Option<u32>,
}

impl TogMachine {
    pub fn new(cx: &mut Context, topics: Topics, chains: bool) -> Result<Self, EngineError> {
        cx.share_prefix(&templates::rendered_by(cx.settings(), chains));
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
            hops_planned: None,
        })
    }
}

impl Method for TogMachine {
    type Plan = TogPlan;

    fn next(&mut self, cx: &mut Context) -> (Vec<Request>, TogPlan) {
        let mut plan = TogPlan::default();
        let requests = match self.phase {
            Phase::Topics => self.linker.requests(cx),
            Phase::RelationSearch => self.relation_lookups(cx, &mut plan),
            Phase::RelationPrune => self.relation_scoring(cx, &mut plan),
            Phase::EntitySearch => self.entity_lookups(cx, &mut plan),
            Phase::EntityPrune => self.entity_scoring(cx, &mut plan),
            Phase::Reasoning => self.reasoning_requests(cx, &mut plan),
            Phase::Answer(AnswerSource::OwnKnowledge) => vec![cx.ask_own_knowledge()],
            Phase::Answer(_) => self.answer_request(cx),
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
            Phase::Topics => self.on_topics(cx, requests, &responses, &mut ev)?,
            Phase::RelationSearch => self.on_relations_found(cx, plan, requests, &responses, &mut ev)?,
            Phase::RelationPrune => self.on_relations_scored(cx, plan, requests, &responses, &mut ev)?,
            Phase::EntitySearch => self.on_entities_found(cx, plan, &responses, &mut ev)?,
            Phase::EntityPrune => self.on_entities_scored(cx, plan, requests, &responses, &mut ev)?,
            Phase::Reasoning => self.on_judgment(cx, plan, requests, &responses, &mut ev)?,
            Phase::Answer(source) => self.on_answer(cx, source, requests, &responses, &mut ev)?,
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
        self.apply_override(cx, o)
    }
}

/// The requests of each phase, one function per phase: what [`Method::next`] dispatches to.
/// Each fills in the plan its results are read against.
impl TogMachine {
    /// The relations of every frontier entity not searched yet, one lookup per entity (and the
    /// hop plan's call after them, at the first hop).
    fn relation_lookups(&self, cx: &Context, plan: &mut TogPlan) -> Vec<Request> {
        plan.nodes = self.unsearched_frontier(cx);
        let mut requests: Vec<Request> = plan
            .nodes
            .iter()
            .map(|&n| Request::Relations {
                entity: cx.beam.nodes[n].term().map(|t| t.as_str().to_string()).unwrap_or_default(),
            })
            .collect();
        if let Some(call) = self.hop_plan_request(cx, &plan.nodes) {
            plan.hop_plan = Some(requests.len());
            requests.push(call);
        }
        requests
    }

    /// The scoring of the relations found under the frontier entities.
    fn relation_scoring(&self, cx: &Context, plan: &mut TogPlan) -> Vec<Request> {
        let groups = self.relation_groups(cx);
        let requests;
        (requests, plan.groups) = self.plan_scoring(cx, groups, "relation");
        requests
    }

    /// The entities along every live relation, one lookup per relation.
    fn entity_lookups(&self, cx: &Context, plan: &mut TogPlan) -> Vec<Request> {
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

    /// The scoring of the entities found under each live relation; ToG-R samples them
    /// instead, with no request.
    fn entity_scoring(&self, cx: &Context, plan: &mut TogPlan) -> Vec<Request> {
        let groups: Vec<Group> = self
            .live_relations(cx)
            .into_iter()
            .map(|r| Group { parent: r, candidates: Self::candidates_under(cx, r), request: None })
            .filter(|g| !g.candidates.is_empty())
            .collect();
        if self.chains {
            // ToG-R samples entities instead of scoring them: no request.
            plan.groups = groups;
            return Vec::new();
        }
        let requests;
        (requests, plan.groups) = self.plan_scoring(cx, groups, "entity");
        requests
    }

    /// The sufficiency check on the paths so far, with the next hop's relation scoring
    /// riding along while the verdict is speculated on.
    fn reasoning_requests(&self, cx: &Context, plan: &mut TogPlan) -> Vec<Request> {
        if self.short_of_plan() {
            return Vec::new();
        }
        let q = &cx.question;
        // This machine runs ToG and ToG-R only (the baselines have their own).
        let prompt = if self.chains {
            cx.render(templates::REASONING_TOG_R, &[("question", q), ("chains", &self.chains_text(cx))])
        } else {
            cx.render(templates::REASONING, &[("question", q), ("triples", &self.triples_text(cx))])
        };
        // A structured variant judges by the answer, chosen among what the paths reach.
        let options = self.reachable_names(cx);
        let shape = if prompt.shows_shape { judgment(&options) } else { Reply::from(&VERDICT) };
        let mut requests = vec![cx.llm("reasoning", prompt, cx.settings.reason_temperature, shape)];
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

    /// The answer from the kept paths' triples.
    fn answer_request(&self, cx: &Context) -> Vec<Request> {
        let prompt =
            cx.render_text(templates::ANSWER, &[("question", &cx.question), ("triples", &self.triples_text(cx))]);
        // The papers' prompt reasons before its braced answer: under structured replies
        // it is asked as free text, its answer extracted only if it cannot be read.
        // Reason, then format; as an answer alone in a session saved before.
        let shape = if cx.reasons_then_formats() { &REASONED_ANSWER } else { &ANSWER };
        vec![cx.llm("answer", prompt, cx.settings.reason_temperature, shape)]
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::engine::{Answer, Settings, test_context};

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

    /// Under a two-hop plan the judgment is offered what lies two hops out, not the entity on
    /// the way; where only unnamed nodes (Freebase's CVTs) lie that far, every name stays.
    #[test]
    fn a_plan_narrows_the_answers_to_names_at_its_depth() {
        use crate::engine::beam::{Provenance, Status};
        use crate::kg::{Direction, Term};
        let settings = Settings { hop_plan: true, plan_narrows_answers: true, ..Settings::default() };
        let mut cx = test_context("Which party governs the capital?", settings);
        let mut tog = TogMachine::new(&mut cx, linked(), false).unwrap();
        tog.hops_planned = Some(2);
        let kg = || Provenance::Kg { graph: "g".into() };
        let hop = |cx: &mut Context, from: NodeId, id: &str, label: Option<&str>| {
            let relation = NodeKind::Relation { relation: "r".into(), direction: Direction::Out, shown: "r".into() };
            let r = cx.beam.add(Some(from), relation, kg());
            let entity = NodeKind::Entity { term: Term::Entity(id.into()), label: label.map(str::to_string) };
            let e = cx.beam.add(Some(r), entity, kg());
            for n in [r, e] {
                cx.beam.set_status(n, Status::Kept, None, 0);
            }
            e
        };
        let australia = hop(&mut cx, 0, "m.au", Some("Australia"));
        let cvt = hop(&mut cx, australia, "m.cvt", None);
        assert_eq!(tog.reachable_names(&cx), ["Australia"], "nothing named two hops out: every name stays");
        hop(&mut cx, australia, "m.alp", Some("Labor"));
        assert_eq!(tog.reachable_names(&cx), ["Labor"]);
        hop(&mut cx, cvt, "m.pm", Some("Albanese"));
        assert_eq!(tog.reachable_names(&cx), ["Labor", "Albanese"], "and beyond it");
        cx.settings.plan_narrows_answers = false;
        assert_eq!(tog.reachable_names(&cx), ["Australia", "Labor", "Albanese"], "a session saved before");
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
}
