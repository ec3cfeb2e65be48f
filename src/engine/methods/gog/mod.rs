//! Generate-on-Graph (GoG, EMNLP 2024) as a state machine: a Thought / Action / Observation
//! loop whose actions are `Search[e1 | e2]` (one-hop triples from the KG, relations filtered by
//! the model), `Generate[thought]` (triples the model writes from its own knowledge, sampled and
//! verified) and `Finish[a1 | a2]`. At most `gog_steps` steps, then an answer from the triples
//! it knows (the paper: the model's own knowledge; `fallback`).
//!
//! Unlike the reference code: `Finish[]` is not an answer; an unreadable reply is asked again (a
//! new sample, so a new call) and, after three tries, the run says it stops there; the
//! BM25 query is tokenised like the documents; relation lists keep the KG's order; generated
//! triples join the known context, and are marked in the beam, never written into the KG.
//!
//! This file holds the machine and its step loop; `actions` the thoughts, searches, observations
//! and rollbacks, `generate` the generated triples, `answer` how the run ends, `overrides` the
//! user's changes, `phases` the handlers of the phases whose results take more than a line, and
//! `view` the method pane.

mod actions;
mod answer;
mod generate;
mod overrides;
pub(crate) mod parse;
mod phases;
pub(crate) mod shapes;
pub(crate) mod simulate;
pub(crate) mod templates;
mod view;

use self::actions::{observed_name, relation_name};
use self::answer::UNGROUNDED;
use crate::engine::beam::NodeId;
use crate::engine::events::{Event, LookupRecord};
use crate::engine::lexical::top_k;
use crate::engine::method::{Method, MethodView};
use crate::engine::step::{completion, entity_matches, plural_s, record, relations, unreadable};
use crate::engine::topics::{TopicLinker, link_model_name};
use crate::engine::{AnswerSource, Context, EngineError, Fallback, Override, PathView, Request, Response, Topics};
use crate::kg::{RelationRef, Term};
use parse::Action;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// The most triples taken from one Generate sample (each is verified and linked).
const MAX_GENERATED: usize = 20;
/// Relations kept per searched entity, and triples per relation (the paper's numbers).
const RELATIONS_PER_SEARCH: usize = 3;
const TRIPLES_PER_RELATION: usize = 5;
/// Known triples given to `Generate`.
const GENERATE_CONTEXT: usize = 10;
/// Tries at a readable step before answering without the KG.
const STEP_TRIES: u32 = 3;

/// What a batch is for: the searched entities (by position) whose relations go to the filter,
/// or the generated names being linked.
#[derive(Debug, Default)]
pub(crate) struct GogPlan {
    filtered: Vec<usize>,
    names: Vec<String>,
}

/// One Thought / Action / Observation step, as the model sees it in the transcript.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct GogStep {
    pub thought: String,
    pub action: String,
    pub observation: String,
}

pub use crate::engine::answer::GeneratedTriple;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Phase {
    Topics,
    Think,
    /// Names in a Search to link to KG entities.
    Link,
    Relations,
    Filter,
    Neighbours,
    Generate,
    Verify,
    /// Names in generated triples to link to KG entities.
    LinkGenerated,
    Answer(AnswerSource),
    Done,
}

#[derive(Clone, Debug)]
pub(crate) struct GogMachine {
    phase: Phase,
    linker: TopicLinker,
    steps: Vec<GogStep>,
    /// The action the last thought chose, until it has run (editable until then).
    action: Option<Action>,
    tries: u32,
    rollbacks: usize,
    /// Known triples as text, `head, relation, tail`, in the order they were learnt.
    known: Vec<String>,
    /// Names and ids seen so far, lower-cased, to the KG term they stand for.
    names: BTreeMap<String, Term>,
    /// The search under way: names still to link, entities with their beam node, their
    /// relations, and the relations chosen per entity.
    unlinked: Vec<String>,
    targets: Vec<(Term, NodeId)>,
    found: Vec<Vec<RelationRef>>,
    chosen: Vec<Vec<RelationRef>>,
    /// Entities searched, and the entities the last search observed.
    searched: Vec<Term>,
    last_seen: Vec<Term>,
    samples: Vec<(String, String, String)>,
    /// Whether verification kept each sample's triple (all kept when nothing verifies).
    sample_kept: Vec<bool>,
    /// The step that verified the samples, when one did.
    verified_at: Option<usize>,
    max_steps: usize,
    /// What the run answers from when it stops without a Finish.
    fallback: Fallback,
    pub generated: Vec<GeneratedTriple>,
    /// Why the run answers other than from a grounded Finish ([`Answer::why`]): why it stopped
    /// without one, or why a Finish rests on no triple.
    why: Option<String>,
}

impl GogMachine {
    pub fn new(cx: &mut Context, topics: Topics) -> Result<Self, EngineError> {
        cx.share_prefix(&templates::rendered_by(cx.settings()));
        let linker = TopicLinker::new(cx, topics)?;
        let mut m = Self {
            phase: Phase::Topics,
            linker,
            steps: Vec::new(),
            action: None,
            tries: 0,
            rollbacks: 0,
            known: Vec::new(),
            names: BTreeMap::new(),
            unlinked: Vec::new(),
            targets: Vec::new(),
            found: Vec::new(),
            chosen: Vec::new(),
            searched: Vec::new(),
            last_seen: Vec::new(),
            samples: Vec::new(),
            sample_kept: Vec::new(),
            verified_at: None,
            max_steps: cx.settings.gog.gog_steps.max(1),
            fallback: cx.settings.gog.gog_fallback,
            generated: Vec::new(),
            why: None,
        };
        if m.linker.done() {
            m.learn_roots(cx);
            m.phase = Phase::Think;
        }
        Ok(m)
    }

    fn learn_roots(&mut self, cx: &Context) {
        for r in cx.beam.roots() {
            if let Some(t) = r.term() {
                self.names.insert(r.shown().to_lowercase(), t.clone());
                self.names.insert(t.as_str().to_lowercase(), t.clone());
            }
        }
    }

    /// Whether the last step's thought and action can still be edited: the model wrote them and
    /// the action has not run.
    pub fn editable(&self) -> bool {
        matches!(self.phase, Phase::Link | Phase::Relations | Phase::Generate) && self.action.is_some()
    }
}

impl Method for GogMachine {
    type Plan = GogPlan;

    fn next(&mut self, cx: &mut Context) -> (Vec<Request>, GogPlan) {
        let mut plan = GogPlan::default();
        let requests = match self.phase {
            Phase::Topics => self.linker.requests(cx),
            Phase::Think => self.step_request(cx),
            Phase::Link => self.unlinked.iter().map(|n| Request::FindEntities { name: n.clone(), limit: 5 }).collect(),
            Phase::LinkGenerated => {
                plan.names = self.unlinked_generated();
                plan.names.iter().map(|n| Request::FindEntities { name: n.clone(), limit: 5 }).collect()
            }
            Phase::Relations => {
                self.targets.iter().map(|(term, _)| Request::Relations { entity: term.as_str().to_string() }).collect()
            }
            Phase::Filter => self.filter_requests(cx, &mut plan),
            Phase::Neighbours => self.neighbour_lookups(),
            Phase::Generate => self.generate_requests(cx),
            Phase::Verify => self.verify_request(cx),
            Phase::Answer(AnswerSource::OwnKnowledge) => vec![cx.ask_own_knowledge()],
            // Paths pruned at this moment may leave nothing to show.
            Phase::Answer(AnswerSource::PartialPaths) if self.known.is_empty() => {
                self.phase = Phase::Answer(AnswerSource::OwnKnowledge);
                vec![cx.ask_own_knowledge()]
            }
            Phase::Answer(AnswerSource::PartialPaths) => self.answer_request(cx),
            Phase::Answer(_) | Phase::Done => Vec::new(),
        };
        (requests, plan)
    }

    fn absorb(
        &mut self,
        cx: &mut Context,
        plan: &GogPlan,
        requests: &[Request],
        responses: Vec<Response>,
    ) -> Result<Event, EngineError> {
        let mut ev = Event::step(cx.next_index(), self.phase(), self.depth());
        match self.phase {
            Phase::Topics => {
                self.linker.absorb(cx, requests, &responses, &mut ev)?;
                if self.linker.done() {
                    self.learn_roots(cx);
                    self.phase = Phase::Think;
                }
            }
            Phase::Think => self.absorb_thought(cx, requests, &responses, &mut ev)?,
            Phase::Link => self.on_link(cx, &responses, &mut ev)?,
            Phase::Relations => self.on_relations(cx, &responses, &mut ev)?,
            Phase::Filter => self.on_filter(cx, plan, requests, &responses, &mut ev)?,
            Phase::Neighbours => self.absorb_triples(cx, &responses, &mut ev)?,
            Phase::Generate => self.on_generate(cx, requests, &responses, &mut ev)?,
            Phase::Verify => self.on_verify(cx, requests, &responses, &mut ev)?,
            Phase::LinkGenerated => self.on_link_generated(cx, plan, &responses, &mut ev)?,
            Phase::Answer(source) => self.on_answer(cx, source, requests, &responses, &mut ev)?,
            Phase::Done => return Err(EngineError::Finished),
        }
        Ok(ev)
    }

    fn phase(&self) -> &'static str {
        match self.phase {
            Phase::Topics => self.linker.phase_name(),
            Phase::Think => "thought",
            Phase::Link => "search_linking",
            Phase::Relations => "search_relations",
            Phase::Filter => "relation_filter",
            Phase::Neighbours => "search_triples",
            Phase::Generate => "generate",
            Phase::Verify => "verify",
            Phase::LinkGenerated => "generated_linking",
            Phase::Answer(_) => "answer",
            Phase::Done => "done",
        }
    }

    fn depth(&self) -> u32 {
        self.steps.len() as u32
    }

    /// The observed and generated triples as paths (one per triple), newest first.
    fn live_paths(&self, cx: &Context) -> Vec<PathView> {
        let mut leaves: Vec<NodeId> = cx
            .beam
            .nodes
            .iter()
            .filter(|n| n.parent.is_some() && n.term().is_some() && n.status.is_live() && cx.beam.is_live_path(n.id))
            .filter(|n| {
                !n.children
                    .iter()
                    .any(|&r| cx.beam.nodes[r].children.iter().any(|&e| cx.beam.nodes[e].status.is_live()))
            })
            .map(|n| n.id)
            .collect();
        leaves.reverse();
        leaves
            .into_iter()
            .map(|leaf| PathView { leaf, text: cx.beam.path_text(leaf), score: 1.0, triples: cx.beam.triples(leaf) })
            .collect()
    }

    fn generated(&self) -> &[GeneratedTriple] {
        &self.generated
    }

    fn path_order(&self) -> Option<&'static str> {
        Some("newest first (GoG does not score its paths)")
    }

    fn apply(&mut self, cx: &mut Context, o: &Override) -> Result<String, EngineError> {
        self.apply_override(cx, o)
    }

    fn view(&self, cx: &Context) -> MethodView {
        self.method_view(cx)
    }
}

/// The requests of the phases that take more than a line, one function per phase: what
/// [`Method::next`] dispatches to.
impl GogMachine {
    /// The next Thought and Action, from the transcript so far.
    fn step_request(&self, cx: &Context) -> Vec<Request> {
        let prompt = cx.render_text(
            templates::STEP,
            &[("question", &cx.question), ("topics", &Self::topics_text(cx)), ("transcript", &self.transcript())],
        );
        // A retry is a new sample: the same prompt again would be answered from the memo.
        vec![cx.llm_sample("gog_step", prompt, cx.settings.sc.sample_temperature, self.tries, &shapes::STEP)]
    }

    /// The relation filter: one prompt per searched entity with more relations than a search
    /// keeps.
    fn filter_requests(&self, cx: &Context, plan: &mut GogPlan) -> Vec<Request> {
        let t = cx.settings.sc.sample_temperature;
        let thought = self.steps.last().map(|s| s.thought.clone()).unwrap_or_default();
        plan.filtered = (0..self.found.len()).filter(|&i| self.found[i].len() > RELATIONS_PER_SEARCH).collect();
        plan.filtered
            .iter()
            .map(|&i| (&self.targets[i], &self.found[i]))
            .map(|((_, node), rels)| {
                let names: Vec<String> = rels.iter().map(relation_name).collect();
                let list = names.join(", ");
                let prompt = cx.render(
                    templates::RELATIONS,
                    &[
                        ("question", &cx.question),
                        ("thought", &thought),
                        ("entity", &observed_name(cx, *node)),
                        ("relations", &format!("[{list}]")),
                    ],
                );
                cx.llm("gog_relations", prompt, t, shapes::choice(&names, RELATIONS_PER_SEARCH))
            })
            .collect()
    }

    /// The triples along every chosen relation, one lookup per entity and relation.
    fn neighbour_lookups(&self) -> Vec<Request> {
        self.targets
            .iter()
            .zip(&self.chosen)
            .flat_map(|((term, _), rels)| {
                rels.iter().map(|r| Request::Neighbours { entity: term.as_str().to_string(), relation: r.clone() })
            })
            .collect()
    }

    /// The samples of a Generate action's triples (none when the action is no Generate).
    fn generate_requests(&self, cx: &Context) -> Vec<Request> {
        let Some(Action::Generate(thought)) = &self.action else { return Vec::new() };
        let prompt = cx.render(
            templates::GENERATE,
            &[("question", &cx.question), ("thought", thought), ("triples", &self.related_known(thought))],
        );
        let t = cx.settings.sc.sample_temperature;
        (0..cx.settings.gog.generate_samples.max(1) as u32)
            .map(|k| cx.llm_sample("gog_generate", prompt.clone(), t, k, &shapes::TRIPLES))
            .collect()
    }

    /// The check of the generated samples: which triples to keep.
    fn verify_request(&self, cx: &Context) -> Vec<Request> {
        let list = self
            .samples
            .iter()
            .enumerate()
            .map(|(i, (h, r, tl))| format!("{}. {h}, {r}, {tl}", i + 1))
            .collect::<Vec<_>>()
            .join("\n");
        let prompt = cx.render(templates::VERIFY, &[("question", &cx.question), ("triples", &list)]);
        vec![cx.llm("gog_verify", prompt, cx.settings.sc.sample_temperature, shapes::kept(self.samples.len()))]
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::engine::{Settings, test_context};
    use crate::llm::Completion;

    fn reply(text: &str) -> Response {
        Response::Llm { completion: Completion { text: text.into(), ..Completion::default() } }
    }

    fn start() -> (Context, GogMachine) {
        let mut cx = test_context("In which time zone is Canberra?", Settings::default());
        let gog =
            GogMachine::new(&mut cx, Topics::Linked(vec![("m.canberra".into(), Some("Canberra".into()))])).unwrap();
        (cx, gog)
    }

    /// Takes one step with `responses` to whatever the machine asks.
    fn step(cx: &mut Context, gog: &mut GogMachine, responses: Vec<Response>) -> (Vec<Request>, Event) {
        let (requests, plan) = Method::next(gog, cx);
        let ev = Method::absorb(gog, cx, &plan, &requests, responses).unwrap();
        (requests, ev)
    }

    fn sample_of(request: &Request) -> u32 {
        match request {
            Request::Llm(chat) => chat.sample,
            other => panic!("not a call: {other:?}"),
        }
    }

    #[test]
    fn an_unreadable_step_is_asked_again_as_a_new_sample_then_answered_without_the_kg() {
        let (mut cx, mut gog) = start();
        assert_eq!(Method::phase(&gog), "thought");
        for try_ in 0..STEP_TRIES {
            let (requests, ev) = step(&mut cx, &mut gog, vec![reply("hmm")]);
            assert_eq!(sample_of(&requests[0]), try_, "a retry is a new sample, not the memo's answer");
            assert!(ev.calls[0].fell_back);
        }
        assert_eq!(Method::phase(&gog), "answer");
        let (requests, _) = Method::next(&mut gog, &mut cx);
        assert!(matches!(&requests[0], Request::Llm(c) if c.step == "answer_own_knowledge"), "{requests:?}");
    }

    #[test]
    fn the_relation_filter_asks_only_about_the_entities_with_too_many_relations() {
        let (mut cx, mut gog) = start();
        step(&mut cx, &mut gog, vec![reply("Thought: Canberra's time zone.\nAction: Search[Canberra]")]);
        assert_eq!(Method::phase(&gog), "search_relations", "Canberra is already linked");
        assert!(gog.editable(), "written, not run yet");
        let view = Method::view(&gog, &cx);
        assert!(view.edits_steps && view.items.len() == 1 && view.items[0].edit.is_some(), "{view:?}");

        let many = ["a", "b", "c", "d", "e"].map(RelationRef::out).to_vec();
        step(&mut cx, &mut gog, vec![Response::Relations { relations: many }]);
        assert_eq!(Method::phase(&gog), "relation_filter");
        let (requests, plan) = Method::next(&mut gog, &mut cx);
        assert_eq!(plan.filtered, vec![0]);
        assert_eq!(requests.len(), 1);
        assert!(!gog.editable(), "the search has run");
    }

    #[test]
    fn a_finish_that_writes_a_whole_observed_triple_is_read_as_its_end_that_is_not_a_topic() {
        let zone = "Canberra, location.location.time_zones, Australian Eastern Time Zone";
        let mayor = "Joan Smith, government.mayor.city, Canberra";
        let finish = |written: &str| {
            let (mut cx, mut gog) = start();
            gog.known.extend([zone.to_string(), mayor.to_string()]);
            let (_, ev) =
                step(&mut cx, &mut gog, vec![reply(&format!("Thought: found it.\nAction: Finish[{written}]"))]);
            let answer = cx.answer.clone().expect("finished");
            (answer.answers, answer.source, ev.notes)
        };
        let (answers, source, notes) = finish(zone);
        assert_eq!((answers, source), (vec!["Australian Eastern Time Zone".to_string()], AnswerSource::KgPaths));
        assert!(
            notes.iter().any(|n| n.contains("writes a whole observed triple: read as Australian Eastern")),
            "{notes:?}"
        );
        // An incoming triple ends at the topic: its other end is the answer.
        let (answers, source, _) = finish(&mayor.to_uppercase());
        assert_eq!((answers, source), (vec!["Joan Smith".to_string()], AnswerSource::KgPaths));
        // A name is taken as written; a sentence stays the model's words, whatever it names.
        let (answers, _, notes) = finish("australian eastern time zone");
        assert_eq!(answers, vec!["australian eastern time zone".to_string()]);
        assert!(notes.is_empty(), "{notes:?}");
        for own in ["It is not the Australian Eastern Time Zone", "Canberra, time zone, Pacific Time Zone"] {
            let (answers, source, _) = finish(own);
            assert_eq!((answers, source), (vec![own.to_string()], AnswerSource::OwnKnowledge), "{own}");
        }
    }

    #[test]
    fn a_finish_the_user_types_is_taken_as_typed() {
        let zone = "Canberra, location.location.time_zones, Australian Eastern Time Zone";
        let (mut cx, mut gog) = start();
        gog.known.push(zone.into());
        let mut ev = Event::step(0, "thought", 0);
        gog.start(&mut cx, Action::Finish(vec![zone.into()]), &mut ev);
        assert_eq!(cx.answer.expect("finished").answers, vec![zone.to_string()]);
    }

    #[test]
    fn the_transcript_shows_every_step_and_opens_the_next_thought() {
        let (mut cx, mut gog) = start();
        assert_eq!(gog.transcript(), "Thought 1:");
        step(&mut cx, &mut gog, vec![reply("Thought: look it up\nAction: Search[Canberra]")]);
        gog.observe("Canberra, location.location.time_zones, AEST".into());
        assert_eq!(
            gog.transcript(),
            "Thought 1: look it up\nAction 1: Search[Canberra]\nObservation 1: Canberra, location.location.time_zones, AEST\nThought 2:"
        );
    }
}
