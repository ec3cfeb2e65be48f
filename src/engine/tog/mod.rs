//! Think-on-Graph and ToG-R as a state machine over the shared beam tree.
//!
//! Per depth: relation search → relation prune → entity search → entity prune → reasoning; then
//! the answer. Unlike the reference code: incoming relations are expanded in the right
//! direction; every candidate is one beam node (id, label, direction, score, provenance); path
//! scores multiply down the path; relations the model invents are rejected and never queried;
//! at most N are kept; literals are candidates and can be answers; the beam running dry ends
//! the search cleanly; explored paths are kept and shown with an own-knowledge answer.
//!
//! This file holds the machine and its step loop; the phases' work is in `frontier` (what the
//! beam holds now), `scoring` (relations and entities scored), `entities` (the entity phase's
//! width or draw), `keeps` (what the user's keeps protect), `answer` (what the check is shown,
//! how the run ends) and `overrides` (the user's changes).

use self::answer::{DEPTH_LIMIT, DEPTH_LIMIT_PARTIAL};
use super::beam::{NodeId, NodeKind, Provenance};
use super::events::{Event, LookupRecord};
use super::method::Method;
use super::parse;
use super::step::{answer_call, completion, judged, neighbours, plural_s, plural_y, record, relations, unreadable};
use super::structured::Shape;
use super::topics::TopicLinker;
use super::{AnswerSource, Context, EngineError, Override, PathView, Request, Response, Topics};
use crate::kg::RelationRef;

mod answer;
mod entities;
mod frontier;
mod keeps;
mod overrides;
mod scoring;
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
        })
    }
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
                    cx.render(templates::REASONING_TOG_R, &[("question", &q), ("chains", &self.chains_text(cx))])
                } else {
                    cx.render(templates::REASONING, &[("question", &q), ("triples", &self.triples_text(cx))])
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
                let prompt = cx.render_text(super::templates::ANSWER_OWN_KNOWLEDGE, &[("question", &q)]);
                vec![cx.llm("answer_own_knowledge", prompt, s.reason_temperature, Shape::ReasonedAnswer)]
            }
            Phase::Answer(_) => {
                let prompt =
                    cx.render_text(templates::ANSWER, &[("question", &q), ("triples", &self.triples_text(cx))]);
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
                    "depth {}: {found} relation{} around {} entit{}",
                    self.depth,
                    plural_s(found),
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
                ev.summary = format!("depth {}: {found} candidate entit{}", self.depth, plural_y(found));
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
        self.apply_override(cx, o)
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
