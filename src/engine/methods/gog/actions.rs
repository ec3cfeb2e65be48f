//! The loop's thoughts and actions: a thought read and its action started, `Search` (relations
//! filtered, triples fetched and linked), the observation, the next thought, and the rollback
//! after `Finish[unknown]`.

use super::parse::Action;
use super::{GENERATE_CONTEXT, GogMachine, GogStep, Phase, STEP_TRIES, TRIPLES_PER_RELATION, UNGROUNDED, parse};
use crate::engine::beam::{NodeId, NodeKind, Provenance, Status};
use crate::engine::events::{Event, LookupRecord};
use crate::engine::lexical::top_k;
use crate::engine::step::{completion, neighbours, plural_s, record, unreadable};
use crate::engine::{AnswerSource, Context, EngineError, Request, Response};
use crate::kg::{Direction, RelationRef, Term};

impl GogMachine {
    pub(super) fn transcript(&self) -> String {
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

    pub(super) fn topics_text(cx: &Context) -> String {
        cx.beam.roots().map(|r| r.shown().to_string()).collect::<Vec<_>>().join(" | ")
    }

    /// The known triples most related to `thought` by BM25 (query and documents tokenised the
    /// same way), at most [`GENERATE_CONTEXT`], in the order they were learnt.
    pub(super) fn related_known(&self, thought: &str) -> String {
        let mut ranked = top_k(thought, &self.known, GENERATE_CONTEXT);
        ranked.sort_unstable();
        let lines: Vec<&str> = ranked.iter().map(|&i| self.known[i].as_str()).collect();
        if lines.is_empty() { "(none)".into() } else { lines.join("\n") }
    }

    pub(super) fn absorb_thought(
        &mut self,
        cx: &mut Context,
        requests: &[Request],
        responses: &[Response],
        ev: &mut Event,
    ) -> Result<(), EngineError> {
        let c = completion(responses, 0)?;
        let n = self.steps.len() + 1;
        match parse::parse_step_at(&c.text, n) {
            Err(why) => {
                ev.calls.push(record(&requests[0], c, format!("unreadable: {why}")));
                unreadable(ev);
                self.tries += 1;
                if self.tries >= STEP_TRIES {
                    self.phase = self.answer_without_finish();
                    ev.notes.push(format!(
                        "{why}; {STEP_TRIES} replies could not be read as a step: answering {}",
                        self.fallback_words()
                    ));
                    ev.summary = format!("step {n}: no readable action");
                    self.why = Some(format!("no reply could be read as a step after {STEP_TRIES} tries"));
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
                // What the model wrote is read here; a Finish the user types is taken as typed.
                let action = match action {
                    Action::Finish(written) => Action::Finish(self.read_finish(cx, &written, &mut ev.notes)),
                    other => other,
                };
                self.start(cx, action, ev);
            }
        }
        Ok(())
    }

    /// Starts running an action the model (or the user) chose.
    pub(super) fn start(&mut self, cx: &mut Context, action: Action, ev: &mut Event) {
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
    pub(super) fn search(&mut self, cx: &mut Context, names: Vec<String>, ev: &mut Event) {
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

    pub(super) fn after_link(&mut self, missing: &[String], ev: &mut Event) {
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
    pub(super) fn entity_node(&self, cx: &mut Context, term: &Term, label: Option<String>) -> NodeId {
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

    pub(super) fn absorb_triples(
        &mut self,
        cx: &mut Context,
        responses: &[Response],
        ev: &mut Event,
    ) -> Result<(), EngineError> {
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

    /// Records the observation of the step under way and moves on to the next thought.
    pub(super) fn observe(&mut self, observation: String) {
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
        self.answer_without_finish()
    }

    /// `Finish[unknown]`: drop the trailing Generate steps and search the entities the last
    /// search found but nobody searched; at most `rollbacks` times.
    fn roll_back(&mut self, cx: &mut Context, ev: &mut Event) {
        let fresh: Vec<Term> = self.last_seen.iter().filter(|t| !self.searched.contains(t)).cloned().collect();
        if self.rollbacks >= cx.settings.gog.rollbacks || fresh.is_empty() {
            self.phase = self.answer_without_finish();
            ev.notes
                .push(format!("Finish[unknown]: nothing left to roll back to; answering {}", self.fallback_words()));
            self.why = Some("the model finished with \"unknown\" and nothing was left to roll back to".into());
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
}

/// How a relation is offered to the filter: its id, `(incoming)` when reversed.
pub(super) fn relation_name(r: &RelationRef) -> String {
    match r.direction {
        Direction::Out => r.relation.clone(),
        Direction::In => format!("{} (incoming)", r.relation),
    }
}

pub(super) fn observed_name(cx: &Context, node: NodeId) -> String {
    let n = &cx.beam.nodes[node];
    if n.is_named() { n.shown().to_string() } else { n.term().map(|t| t.as_str().to_string()).unwrap_or_default() }
}
