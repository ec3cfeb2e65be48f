//! Generate-on-Graph (GoG, EMNLP 2024) as a state machine: a Thought / Action / Observation
//! loop whose actions are `Search[e1 | e2]` (one-hop triples from the KG, relations filtered by
//! the model), `Generate[thought]` (triples the model writes from its own knowledge, sampled and
//! verified) and `Finish[a1 | a2]`. At most `gog_steps` steps, then the model's own knowledge.
//!
//! Unlike the reference code: `Finish[]` is not an answer; an unreadable reply is asked again (a
//! new sample, so a new call) and, after two tries, the run says it answers without the KG; the
//! BM25 query is tokenised like the documents; relation lists keep the KG's order; generated
//! triples join the known context, and are marked in the beam, never written into the KG.

pub(crate) mod parse;

use super::beam::{KEPT_BY_YOU, NodeId, NodeKind, Provenance, Status};
use super::events::{Event, LookupRecord};
use super::lexical::top_k;
use super::method::{Method, MethodView, ViewItem, ViewLine};
use super::step::{
    ANSWERED, answer_call, completion, entity_matches, neighbours, plural_s, record, relations, unreadable,
};
use super::structured::Shape;
use super::topics::{TopicLinker, link_model_name};
use super::{Answer, AnswerSource, Context, EngineError, Override, PathView, Request, Response, Topics};
use crate::kg::{Direction, RelationRef, Term};
use crate::prompts::Template;
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

/// A triple the model generated, with what verification and linking made of it.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct GeneratedTriple {
    pub head: String,
    pub relation: String,
    pub tail: String,
    /// KG ids the names were linked to (None: no KG entity of that name).
    pub head_term: Option<Term>,
    pub tail_term: Option<Term>,
    /// Kept by verification (or by the user), so part of the known triples.
    pub kept: bool,
    pub node: NodeId,
}

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
    max_steps: usize,
    pub generated: Vec<GeneratedTriple>,
    /// Why the run answers from the model's own knowledge ([`Answer::why`]), once it does.
    why: Option<String>,
}

impl GogMachine {
    pub fn new(cx: &mut Context, topics: Topics) -> Result<Self, EngineError> {
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
            max_steps: cx.settings.gog.gog_steps.max(1),
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

    pub fn steps(&self) -> &[GogStep] {
        &self.steps
    }

    /// Whether the last step's thought and action can still be edited: the model wrote them and
    /// the action has not run.
    pub fn editable(&self) -> bool {
        matches!(self.phase, Phase::Link | Phase::Relations | Phase::Generate) && self.action.is_some()
    }

    fn transcript(&self) -> String {
        let mut out = String::new();
        for (i, s) in self.steps.iter().enumerate() {
            let n = i + 1;
            out.push_str(&format!(
                "Thought {n}: {}\nAction {n}: {}\nObservation {n}: {}\n",
                s.thought, s.action, s.observation
            ));
        }
        out.push_str(&format!("Thought {}:", self.steps.len() + 1));
        out
    }

    fn topics_text(cx: &Context) -> String {
        cx.beam.roots().map(|r| r.shown().to_string()).collect::<Vec<_>>().join(" | ")
    }

    /// The known triples most related to `thought` by BM25 (query and documents tokenised the
    /// same way), at most [`GENERATE_CONTEXT`], in the order they were learnt.
    fn related_known(&self, thought: &str) -> String {
        let mut ranked = top_k(thought, &self.known, GENERATE_CONTEXT);
        ranked.sort_unstable();
        let lines: Vec<&str> = ranked.iter().map(|&i| self.known[i].as_str()).collect();
        if lines.is_empty() { "(none)".into() } else { lines.join("\n") }
    }

    fn unlinked_generated(&self) -> Vec<String> {
        let mut out: Vec<String> = Vec::new();
        for (h, _, t) in &self.samples {
            for n in [h, t] {
                if !self.names.contains_key(&n.to_lowercase()) && !out.contains(n) {
                    out.push(n.clone());
                }
            }
        }
        out
    }

    /// Links the generated names the run does not know yet, or records the triples at once.
    fn after_generate(&mut self, cx: &mut Context, ev: &mut Event) {
        if self.unlinked_generated().is_empty() {
            self.record_generated(cx, ev);
        } else {
            self.phase = Phase::LinkGenerated;
        }
    }

    fn absorb_thought(
        &mut self,
        cx: &mut Context,
        requests: &[Request],
        responses: &[Response],
        ev: &mut Event,
    ) -> Result<(), EngineError> {
        let c = completion(responses, 0)?;
        let n = self.steps.len() + 1;
        match parse::parse_step(&c.text) {
            Err(why) => {
                ev.calls.push(record(&requests[0], c, format!("unreadable: {why}")));
                unreadable(ev);
                self.tries += 1;
                if self.tries >= STEP_TRIES {
                    ev.notes.push(format!(
                        "{why}; {STEP_TRIES} replies could not be read as a step: answering without the KG"
                    ));
                    ev.summary = format!("step {n}: no readable action");
                    self.why = Some(format!("no reply could be read as a step after {STEP_TRIES} tries"));
                    self.phase = Phase::Answer(AnswerSource::OwnKnowledge);
                } else {
                    ev.notes.push(format!("{why}; asking again"));
                    ev.summary = format!("step {n}: unreadable reply, asking again");
                }
            }
            Ok((thought, action)) => {
                self.tries = 0;
                ev.calls.push(record(&requests[0], c, action.text()));
                ev.summary = format!("thought {n}: {}", action.text());
                self.steps.push(GogStep { thought, action: action.text(), observation: String::new() });
                self.start(cx, action, ev);
            }
        }
        Ok(())
    }

    /// Starts running an action the model (or the user) chose.
    fn start(&mut self, cx: &mut Context, action: Action, ev: &mut Event) {
        match &action {
            Action::Finish(answers) if answers.is_empty() => {
                ev.notes.push("Finish[] names no answer: not taken as one".into());
                self.observe("Finish needs an answer.".into());
            }
            Action::Finish(answers) if answers.len() == 1 && answers[0].eq_ignore_ascii_case("unknown") => {
                self.roll_back(cx, ev);
            }
            Action::Finish(answers) => {
                // An unnamed node's id is something to search, not an answer.
                let ids: Vec<String> = answers
                    .iter()
                    .filter(|a| {
                        self.names
                            .get(&a.to_lowercase())
                            .is_some_and(|t| t.as_str() == a.as_str() && !self.is_named(cx, t))
                    })
                    .cloned()
                    .collect();
                if !ids.is_empty() {
                    ev.notes.push(format!("Finish names an unnamed node ({}): searched instead", ids.join(", ")));
                    self.search(cx, ids, ev);
                } else {
                    let reply = self.steps.last().map(|s| format!("{}\n{}", s.thought, s.action)).unwrap_or_default();
                    let source = self.source_of(answers);
                    self.why = (source == AnswerSource::OwnKnowledge).then(|| UNGROUNDED.to_string());
                    if source != AnswerSource::KgPaths {
                        ev.notes.push(format!("the answer is {}", source.describe_because(self.why.as_deref())));
                    }
                    self.finish(cx, answers.clone(), reply, source);
                }
            }
            Action::Search(names) => self.search(cx, names.clone(), ev),
            Action::Generate(_) => {
                self.action = Some(action.clone());
                self.phase = Phase::Generate;
                return;
            }
        }
        // Only a search under way can still be edited.
        self.action = matches!(self.phase, Phase::Link | Phase::Relations).then_some(action);
    }

    fn is_named(&self, cx: &Context, term: &Term) -> bool {
        cx.beam.nodes.iter().any(|n| n.term() == Some(term) && n.is_named())
    }

    /// Resolves the names to search: known names and ids at once, the rest by a KG lookup.
    fn search(&mut self, cx: &mut Context, names: Vec<String>, ev: &mut Event) {
        self.targets.clear();
        self.unlinked.clear();
        for name in names {
            match self.names.get(&name.to_lowercase()).cloned() {
                Some(term) => {
                    let node = self.entity_node(cx, &term, None);
                    if !self.targets.iter().any(|(t, _)| *t == term) {
                        self.targets.push((term, node));
                    }
                }
                None => self.unlinked.push(name),
            }
        }
        if self.unlinked.is_empty() {
            self.after_link(&[], ev);
        } else {
            self.phase = Phase::Link;
        }
    }

    fn after_link(&mut self, missing: &[String], ev: &mut Event) {
        if self.targets.is_empty() {
            let obs = format!("No entity named {} in the knowledge graph.", missing.join(" | "));
            if let Some(s) = self.steps.last_mut() {
                s.observation = obs;
            }
            ev.notes.push("nothing to search".into());
            self.phase = self.next_thought();
        } else {
            self.phase = Phase::Relations;
        }
    }

    /// The beam node for an entity: an existing one (first seen), else a new root.
    fn entity_node(&self, cx: &mut Context, term: &Term, label: Option<String>) -> NodeId {
        if let Some(n) = cx.beam.nodes.iter().find(|n| n.term() == Some(term) && n.status.is_live()) {
            return n.id;
        }
        let id = cx.beam.add(
            None,
            NodeKind::Entity { term: term.clone(), label },
            Provenance::Kg { graph: cx.graph_name.clone() },
        );
        cx.beam.set_status(id, Status::Kept, Some("searched"), cx.trace.len());
        id
    }

    fn absorb_triples(&mut self, cx: &mut Context, responses: &[Response], ev: &mut Event) -> Result<(), EngineError> {
        let mut i = 0;
        let mut lines: Vec<String> = Vec::new();
        let mut seen: Vec<Term> = Vec::new();
        let step = ev.index;
        for ((_, node), rels) in self.targets.clone().iter().zip(self.chosen.clone()) {
            for r in rels {
                let got = neighbours(responses, i)?;
                i += 1;
                ev.lookups.push(LookupRecord {
                    what: format!("{} {} {}", cx.beam.nodes[*node].shown(), r.direction.arrow(), r.relation),
                    results: got.len(),
                });
                let shown = cx.profile.display_relation(&r.relation);
                let head = observed_name(cx, *node);
                let rel = cx.beam.add(
                    Some(*node),
                    NodeKind::Relation { relation: r.relation.clone(), direction: r.direction, shown: shown.clone() },
                    Provenance::Kg { graph: cx.graph_name.clone() },
                );
                cx.beam.set_status(rel, Status::Kept, Some("chosen for the search"), step);
                for nb in got.into_iter().take(TRIPLES_PER_RELATION) {
                    let label = nb.label.clone().or_else(|| match &nb.term {
                        Term::Literal(v) => Some(v.clone()),
                        Term::Entity(_) => None,
                    });
                    let provenance = match nb.correction {
                        Some(id) => Provenance::Correction { id },
                        None => Provenance::Kg { graph: cx.graph_name.clone() },
                    };
                    let child = cx.beam.add(
                        Some(rel),
                        NodeKind::Entity { term: nb.term.clone(), label: label.clone() },
                        provenance,
                    );
                    cx.beam.set_status(child, Status::Kept, Some("observed"), step);
                    // Unnamed nodes are shown by id, so the model can search them.
                    let name = match (&nb.term, &nb.label) {
                        (Term::Entity(id), None) => id.clone(),
                        _ => label.clone().unwrap_or_default(),
                    };
                    if nb.term.is_entity() {
                        self.names.entry(name.to_lowercase()).or_insert_with(|| nb.term.clone());
                        self.names.entry(nb.term.as_str().to_lowercase()).or_insert_with(|| nb.term.clone());
                        if !seen.contains(&nb.term) {
                            seen.push(nb.term.clone());
                        }
                    }
                    let line = match r.direction {
                        Direction::Out => format!("{head}, {shown}, {name}"),
                        Direction::In => format!("{name}, {shown}, {head}"),
                    };
                    if !lines.contains(&line) {
                        lines.push(line);
                    }
                }
            }
        }
        for l in &lines {
            if !self.known.contains(l) {
                self.known.push(l.clone());
            }
        }
        self.last_seen = seen;
        ev.summary = format!("{} triple{} observed", lines.len(), plural_s(lines.len()));
        let obs = if lines.is_empty() { "No triples found.".to_string() } else { lines.join("\n") };
        self.observe(obs);
        Ok(())
    }

    /// Puts the generated triples into the beam (marked) and the kept ones into the known
    /// triples; the observation lists the kept ones.
    fn record_generated(&mut self, cx: &mut Context, ev: &mut Event) {
        let step = ev.index;
        let mut kept_lines = Vec::new();
        let kept = std::mem::take(&mut self.sample_kept);
        for ((h, r, t), kept) in std::mem::take(&mut self.samples).into_iter().zip(kept) {
            let rejected = !kept;
            let head_term = self.names.get(&h.to_lowercase()).cloned();
            let tail_term = self.names.get(&t.to_lowercase()).cloned();
            let head_node = match &head_term {
                Some(term) => self.entity_node(cx, term, Some(h.clone())),
                None => {
                    let id = cx.beam.add(
                        None,
                        NodeKind::Entity { term: Term::Literal(h.clone()), label: Some(h.clone()) },
                        Provenance::Generated { kept: !rejected },
                    );
                    cx.beam.set_status(id, Status::Kept, Some("named by the model"), step);
                    id
                }
            };
            let rel = cx.beam.add(
                Some(head_node),
                NodeKind::Relation { relation: r.clone(), direction: Direction::Out, shown: r.clone() },
                Provenance::Generated { kept: !rejected },
            );
            let tail = cx.beam.add(
                Some(rel),
                NodeKind::Entity {
                    term: tail_term.clone().unwrap_or_else(|| Term::Literal(t.clone())),
                    label: Some(t.clone()),
                },
                Provenance::Generated { kept: !rejected },
            );
            let (status, why) = if rejected {
                (Status::PrunedByScore, "generated; rejected by verification")
            } else {
                (Status::Kept, "generated by the LLM")
            };
            cx.beam.set_status(rel, status, Some(why), step);
            cx.beam.set_status(tail, status, Some(why), step);
            let line = format!("{h}, {r}, {t}");
            if !rejected {
                if !self.known.contains(&line) {
                    self.known.push(line.clone());
                }
                kept_lines.push(line);
            }
            self.generated.push(GeneratedTriple {
                head: h,
                relation: r,
                tail: t,
                head_term,
                tail_term,
                kept: !rejected,
                node: tail,
            });
        }
        let obs = if kept_lines.is_empty() {
            "No generated triple passed verification.".to_string()
        } else {
            kept_lines.join("\n")
        };
        self.observe(obs);
    }

    /// Records the observation of the step under way and moves on to the next thought.
    fn observe(&mut self, observation: String) {
        if let Some(s) = self.steps.last_mut() {
            s.observation = observation;
        }
        self.action = None;
        self.phase = self.next_thought();
    }

    fn next_thought(&mut self) -> Phase {
        if self.steps.len() < self.max_steps {
            return Phase::Think;
        }
        let steps = self.max_steps;
        self.why = Some(format!("no Finish within GoG's limit of {steps} step{}", plural_s(steps)));
        Phase::Answer(AnswerSource::OwnKnowledge)
    }

    /// `Finish[unknown]`: drop the trailing Generate steps and search the entities the last
    /// search found but nobody searched; at most `rollbacks` times.
    fn roll_back(&mut self, cx: &mut Context, ev: &mut Event) {
        let fresh: Vec<Term> = self.last_seen.iter().filter(|t| !self.searched.contains(t)).cloned().collect();
        if self.rollbacks >= cx.settings.gog.rollbacks || fresh.is_empty() {
            ev.notes.push("Finish[unknown]: nothing left to roll back to; answering without the KG".into());
            self.why = Some("the model finished with \"unknown\" and nothing was left to roll back to".into());
            self.phase = Phase::Answer(AnswerSource::OwnKnowledge);
            return;
        }
        self.rollbacks += 1;
        let finish = self.steps.pop();
        let mut dropped = 0;
        while self.steps.last().is_some_and(|s| s.action.starts_with("Generate[")) {
            self.steps.pop();
            dropped += 1;
        }
        let names: Vec<String> = fresh.iter().map(|t| t.as_str().to_string()).collect();
        ev.notes.push(format!(
            "Finish[unknown]: rolled back {dropped} Generate step{}; searching the last search's new neighbours ({})",
            plural_s(dropped),
            names.join(", ")
        ));
        let thought = finish.map(|f| f.thought).unwrap_or_default();
        self.steps.push(GogStep { thought, action: Action::Search(names.clone()).text(), observation: String::new() });
        self.search(cx, names, ev);
    }

    /// What a `Finish` answer rests on: a KG triple observed that names it; else a generated
    /// triple verification kept; else nothing the run saw (the model's own knowledge, which is
    /// also what a Finish before any search is).
    fn source_of(&self, answers: &[String]) -> AnswerSource {
        let kept: Vec<&GeneratedTriple> = self.generated.iter().filter(|g| g.kept).collect();
        let generated_line = |l: &str| kept.iter().any(|g| format!("{}, {}, {}", g.head, g.relation, g.tail) == l);
        let names = |l: &str, a: &str| {
            let (l, a) = (l.to_lowercase(), a.trim().to_lowercase());
            l.starts_with(&format!("{a}, ")) || l.ends_with(&format!(", {a}"))
        };
        let in_kg = |a: &str| self.known.iter().any(|l| !generated_line(l) && names(l, a));
        let in_generated = |a: &str| {
            kept.iter().any(|g| g.head.eq_ignore_ascii_case(a.trim()) || g.tail.eq_ignore_ascii_case(a.trim()))
        };
        if answers.iter().any(|a| in_kg(a)) {
            AnswerSource::KgPaths
        } else if answers.iter().any(|a| in_generated(a)) {
            AnswerSource::GeneratedTriples
        } else {
            AnswerSource::OwnKnowledge
        }
    }

    fn finish(&mut self, cx: &mut Context, answers: Vec<String>, reply: String, source: AnswerSource) {
        let paths = self.live_paths(cx);
        let why = if source == AnswerSource::OwnKnowledge { self.why.clone() } else { None };
        cx.answer = Some(Answer { answers, source, reply, paths, why });
        self.phase = Phase::Done;
        self.action = None;
    }
}

/// Why a `Finish` whose answer no triple the run kept names is the model's own knowledge.
const UNGROUNDED: &str = "the model finished without a KG path to its answer";

/// How a relation is offered to the filter: its id, `(incoming)` when reversed.
fn relation_name(r: &RelationRef) -> String {
    match r.direction {
        Direction::Out => r.relation.clone(),
        Direction::In => format!("{} (incoming)", r.relation),
    }
}

fn observed_name(cx: &Context, node: NodeId) -> String {
    let n = &cx.beam.nodes[node];
    if n.is_named() { n.shown().to_string() } else { n.term().map(|t| t.as_str().to_string()).unwrap_or_default() }
}

impl Method for GogMachine {
    type Plan = GogPlan;

    fn next(&mut self, cx: &mut Context) -> (Vec<Request>, GogPlan) {
        let s = cx.settings.clone();
        let q = cx.question.clone();
        let t = s.sc.sample_temperature;
        let mut plan = GogPlan::default();
        let requests = match self.phase {
            Phase::Topics => self.linker.requests(cx),
            Phase::Think => {
                let prompt = cx.prompts.render(
                    Template::GogStep,
                    &[("question", &q), ("topics", &Self::topics_text(cx)), ("transcript", &self.transcript())],
                );
                // A retry is a new sample: the same prompt again would be answered from the memo.
                vec![cx.llm_sample("gog_step", prompt, t, self.tries, Shape::GogStep)]
            }
            Phase::Link => self.unlinked.iter().map(|n| Request::FindEntities { name: n.clone(), limit: 5 }).collect(),
            Phase::LinkGenerated => {
                plan.names = self.unlinked_generated();
                plan.names.iter().map(|n| Request::FindEntities { name: n.clone(), limit: 5 }).collect()
            }
            Phase::Relations => {
                self.targets.iter().map(|(term, _)| Request::Relations { entity: term.as_str().to_string() }).collect()
            }
            Phase::Filter => {
                let thought = self.steps.last().map(|s| s.thought.clone()).unwrap_or_default();
                plan.filtered = (0..self.found.len()).filter(|&i| self.found[i].len() > RELATIONS_PER_SEARCH).collect();
                plan.filtered
                    .iter()
                    .map(|&i| (&self.targets[i], &self.found[i]))
                    .map(|((_, node), rels)| {
                        let names: Vec<String> = rels.iter().map(relation_name).collect();
                        let list = names.join(", ");
                        let prompt = cx.render(
                            Template::GogRelations,
                            &[
                                ("question", &q),
                                ("thought", &thought),
                                ("entity", &observed_name(cx, *node)),
                                ("relations", &format!("[{list}]")),
                            ],
                        );
                        cx.llm(
                            "gog_relations",
                            prompt,
                            t,
                            Shape::Choice { candidates: &names, keep: RELATIONS_PER_SEARCH },
                        )
                    })
                    .collect()
            }
            Phase::Neighbours => self
                .targets
                .iter()
                .zip(&self.chosen)
                .flat_map(|((term, _), rels)| {
                    rels.iter().map(|r| Request::Neighbours { entity: term.as_str().to_string(), relation: r.clone() })
                })
                .collect(),
            Phase::Generate => {
                let Some(Action::Generate(thought)) = &self.action else { return (Vec::new(), plan) };
                let prompt = cx.render(
                    Template::GogGenerate,
                    &[("question", &q), ("thought", thought), ("triples", &self.related_known(thought))],
                );
                (0..s.gog.generate_samples.max(1) as u32)
                    .map(|k| cx.llm_sample("gog_generate", prompt.clone(), t, k, Shape::Triples))
                    .collect()
            }
            Phase::Verify => {
                let list = self
                    .samples
                    .iter()
                    .enumerate()
                    .map(|(i, (h, r, tl))| format!("{}. {h}, {r}, {tl}", i + 1))
                    .collect::<Vec<_>>()
                    .join("\n");
                let prompt = cx.render(Template::GogVerify, &[("question", &q), ("triples", &list)]);
                vec![cx.llm("gog_verify", prompt, t, Shape::Kept { n: self.samples.len() })]
            }
            Phase::Answer(AnswerSource::OwnKnowledge) => {
                let prompt = cx.prompts.render(Template::AnswerOwnKnowledge, &[("question", &q)]);
                vec![cx.llm("answer_own_knowledge", prompt, s.reason_temperature, Shape::ReasonedAnswer)]
            }
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
            Phase::Link => {
                let names = std::mem::take(&mut self.unlinked);
                let mut missing = Vec::new();
                for (i, name) in names.iter().enumerate() {
                    let matches = entity_matches(&responses, i)?;
                    ev.lookups.push(LookupRecord { what: format!("entities named {name:?}"), results: matches.len() });
                    match link_model_name(name, matches) {
                        Some(m) => {
                            let term = Term::Entity(m.id.clone());
                            self.names.insert(name.to_lowercase(), term.clone());
                            let node = self.entity_node(cx, &term, Some(m.label.clone()));
                            self.targets.push((term, node));
                        }
                        None => missing.push(name.clone()),
                    }
                }
                ev.summary =
                    format!("linked {} of {} name{}", names.len() - missing.len(), names.len(), plural_s(names.len()));
                if !missing.is_empty() {
                    ev.notes.push(format!("no KG entity named {}", missing.join(", ")));
                }
                self.after_link(&missing, &mut ev);
            }
            Phase::Relations => {
                self.found.clear();
                for (i, (term, node)) in self.targets.iter().enumerate() {
                    let rels = relations(&responses, i)?;
                    ev.lookups.push(LookupRecord {
                        what: format!("relations of {}", cx.beam.nodes[*node].shown()),
                        results: rels.len(),
                    });
                    self.searched.push(term.clone());
                    self.found.push(rels);
                }
                self.chosen = self
                    .found
                    .iter()
                    .map(|r| if r.len() > RELATIONS_PER_SEARCH { Vec::new() } else { r.clone() })
                    .collect();
                let total: usize = self.found.iter().map(Vec::len).sum();
                ev.summary = format!(
                    "{total} relation{} around {} entit{}",
                    plural_s(total),
                    self.targets.len(),
                    if self.targets.len() == 1 { "y" } else { "ies" }
                );
                self.phase = if self.found.iter().any(|r| r.len() > RELATIONS_PER_SEARCH) {
                    Phase::Filter
                } else if total == 0 {
                    self.observe("No triples found.".into());
                    self.phase
                } else {
                    Phase::Neighbours
                };
            }
            Phase::Filter => {
                for (k, &i) in plan.filtered.iter().enumerate() {
                    let rels = &self.found[i];
                    let c = completion(&responses, k)?;
                    let names: Vec<String> = rels.iter().map(relation_name).collect();
                    let mut fell_back = false;
                    let picks = match parse::parse_relation_choice(&c.text, &names, RELATIONS_PER_SEARCH) {
                        Ok(p) => p,
                        Err(why) => {
                            fell_back = true;
                            // Said, not silent: the thought's nearest relations stand in.
                            let thought = self.steps.last().map(|s| s.thought.clone()).unwrap_or_default();
                            ev.notes.push(format!("relation filter for {}: {why}; the {RELATIONS_PER_SEARCH} most similar to the thought are used", cx.beam.nodes[self.targets[i].1].shown()));
                            top_k(&thought, &names, RELATIONS_PER_SEARCH)
                        }
                    };
                    ev.calls.push(record(
                        &requests[k],
                        c,
                        picks.iter().map(|&p| names[p].clone()).collect::<Vec<_>>().join(", "),
                    ));
                    if fell_back {
                        unreadable(&mut ev);
                    }
                    self.chosen[i] = picks.into_iter().map(|p| rels[p].clone()).collect();
                }
                let n: usize = self.chosen.iter().map(Vec::len).sum();
                ev.summary = format!("kept {n} relation{}", plural_s(n));
                self.phase = Phase::Neighbours;
            }
            Phase::Neighbours => self.absorb_triples(cx, &responses, &mut ev)?,
            Phase::Generate => {
                self.samples.clear();
                for (i, r) in requests.iter().enumerate() {
                    let c = completion(&responses, i)?;
                    let mut triples = parse::parse_triples(&c.text);
                    if triples.len() > MAX_GENERATED {
                        ev.notes.push(format!(
                            "sample {} wrote {} triples; the first {MAX_GENERATED} are kept",
                            i + 1,
                            triples.len()
                        ));
                        triples.truncate(MAX_GENERATED);
                    }
                    ev.calls.push(record(r, c, format!("{} triple{}", triples.len(), plural_s(triples.len()))));
                    // An empty JSON list says "none"; prose with no triple in it says nothing.
                    if triples.is_empty() && c.json_reply.is_none() {
                        unreadable(&mut ev);
                        ev.notes
                            .push(format!("sample {} has no triple in the `(subject, relation, object)` form", i + 1));
                    }
                    for t in triples {
                        if !self.samples.contains(&t) {
                            self.samples.push(t);
                        }
                    }
                }
                ev.summary = format!(
                    "the model generated {} distinct triple{}",
                    self.samples.len(),
                    plural_s(self.samples.len())
                );
                self.sample_kept = vec![true; self.samples.len()];
                if self.samples.is_empty() {
                    self.observe("No triple generated.".into());
                } else if requests.len() > 1 {
                    self.phase = Phase::Verify;
                } else {
                    ev.notes.push("one sample: nothing to verify against; the triples are kept unverified".into());
                    self.after_generate(cx, &mut ev);
                }
            }
            Phase::Verify => {
                let c = completion(&responses, 0)?;
                let mut fell_back = false;
                let kept = match parse::parse_kept(&c.text, self.samples.len()) {
                    Ok(k) => k,
                    Err(why) => {
                        fell_back = true;
                        ev.notes.push(format!("{why}; no generated triple is kept"));
                        Vec::new()
                    }
                };
                ev.calls.push(record(
                    &requests[0],
                    c,
                    kept.iter().map(|k| (k + 1).to_string()).collect::<Vec<_>>().join(", "),
                ));
                if fell_back {
                    unreadable(&mut ev);
                }
                ev.summary = format!(
                    "verification kept {} of {} triple{}",
                    kept.len(),
                    self.samples.len(),
                    plural_s(self.samples.len())
                );
                // Rejected ones stay too, marked, for the user to see (and overrule).
                self.sample_kept = (0..self.samples.len()).map(|i| kept.contains(&i)).collect();
                self.after_generate(cx, &mut ev);
            }
            Phase::LinkGenerated => {
                for (i, name) in plan.names.iter().enumerate() {
                    let matches = entity_matches(&responses, i)?;
                    ev.lookups.push(LookupRecord { what: format!("entities named {name:?}"), results: matches.len() });
                    if let Some(m) = link_model_name(name, matches) {
                        self.names.insert(name.to_lowercase(), Term::Entity(m.id.clone()));
                    }
                }
                ev.summary = "linked the generated names".into();
                self.record_generated(cx, &mut ev);
            }
            Phase::Answer(source) => {
                let why = if source == AnswerSource::OwnKnowledge { self.why.clone() } else { None };
                let (answers, reply) = answer_call(requests, &responses, &mut ev, source, why.as_deref())?;
                self.finish(cx, answers, reply, source);
            }
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
        let step = cx.next_index();
        let bad = |why: &str| EngineError::BadOverride { what: o.describe(), why: why.into() };
        if cx.answer.is_some() {
            return Err(bad(ANSWERED));
        }
        match o {
            Override::EditAction { thought, action } => {
                if !self.editable() {
                    return Err(bad("a thought or action can be edited after the model wrote it and before it runs"));
                }
                let action = parse::parse_action(action).map_err(|why| bad(&why))?;
                let Some(last) = self.steps.last_mut() else { return Err(bad("no step to edit")) };
                if let Some(t) = thought {
                    last.thought = t.clone();
                }
                last.action = action.text();
                let text = action.text();
                let mut ev = Event::step(step, "", 0);
                self.start(cx, action, &mut ev);
                Ok(format!("edited the action: {text}{}", super::step::with_notes(&ev)))
            }
            Override::Keep { node } | Override::Drop { node } => {
                let keep = matches!(o, Override::Keep { .. });
                let Some(g) = self.generated.iter_mut().find(|g| g.node == *node) else {
                    return Err(bad("only generated triples can be kept or rejected"));
                };
                let line = format!("{}, {}, {}", g.head, g.relation, g.tail);
                g.kept = keep;
                if keep && !self.known.contains(&line) {
                    self.known.push(line.clone());
                } else if !keep {
                    self.known.retain(|l| *l != line);
                }
                let parent = cx.beam.nodes[*node].parent;
                for n in [Some(*node), parent].into_iter().flatten() {
                    let (status, why) =
                        if keep { (Status::Kept, KEPT_BY_YOU) } else { (Status::PrunedByUser, "rejected by the user") };
                    cx.beam.set_status(n, status, Some(why), step);
                }
                Ok(format!("{} the generated triple {line}", if keep { "kept" } else { "rejected" }))
            }
            Override::PrunePath { node } => {
                cx.beam.get(*node).ok_or_else(|| bad("no such node"))?;
                let lines: Vec<String> = cx.beam.triples(*node).iter().map(|t| t.line()).collect();
                self.known.retain(|l| !lines.contains(l));
                cx.beam.set_subtree(*node, Status::PrunedByUser, "pruned by the user", step);
                Ok(format!("pruned {} from the known triples", cx.beam.path_text(*node)))
            }
            _ => Err(bad("GoG has no beam to steer: edit the action before it runs, or keep/reject generated triples")),
        }
    }

    /// The steps, one row each, with the thought, the action and the observation in full.
    fn view(&self, _cx: &Context) -> MethodView {
        let last = self.steps.len().saturating_sub(1);
        let pending = self.editable();
        let generated = (!self.generated.is_empty()).then(|| {
            let kept = self.generated.iter().filter(|g| g.kept).count();
            ViewLine::dim(format!(
                "✦ {} generated triple(s), {kept} kept: select one in the tree, A accepts it",
                self.generated.len()
            ))
        });
        let items = self
            .steps
            .iter()
            .enumerate()
            .map(|(i, s)| {
                let editable = i == last && pending;
                let mark = if editable { "⏵" } else { " " };
                let mut detail = vec![
                    ViewLine::labelled("Thought: ", s.thought.clone()),
                    ViewLine::labelled("Action: ", s.action.clone()),
                ];
                if editable {
                    // The UI says how to edit it.
                } else if s.observation.is_empty() {
                    detail.push(ViewLine::dim("Observation: (under way)"));
                } else {
                    detail.push(ViewLine::labelled("Observation:", ""));
                    detail.extend(s.observation.lines().map(ViewLine::plain));
                }
                detail.extend(generated.clone());
                ViewItem {
                    row: format!("{:>2}{mark}{}  {}", i + 1, s.action, s.thought),
                    detail,
                    editable,
                    ..ViewItem::default()
                }
            })
            .collect();
        MethodView {
            title: "GoG: thought · action · observation".into(),
            report: Vec::new(),
            items,
            empty: "No thought yet.".into(),
            edits_steps: true,
        }
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
        assert!(view.edits_steps && view.items.len() == 1 && view.items[0].editable, "{view:?}");

        let many = ["a", "b", "c", "d", "e"].map(RelationRef::out).to_vec();
        step(&mut cx, &mut gog, vec![Response::Relations { relations: many }]);
        assert_eq!(Method::phase(&gog), "relation_filter");
        let (requests, plan) = Method::next(&mut gog, &mut cx);
        assert_eq!(plan.filtered, vec![0]);
        assert_eq!(requests.len(), 1);
        assert!(!gog.editable(), "the search has run");
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
