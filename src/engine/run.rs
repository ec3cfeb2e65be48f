//! A run's step loop: poll for what it needs, feed the results back, apply the user's changes.

use super::Machine;
use super::beam::Beam;
use super::events::{Costs, Event, EventKind};
use super::{
    Context, EngineError, Footprint, Override, Pending, Poll, Registry, Request, Response, Run, Settings, Topics, step,
};
use crate::kg::KgProfile;
use crate::prompts::Prompts;
use rand::SeedableRng;
use rand_chacha::ChaCha8Rng;
use std::sync::Arc;

impl Run {
    /// A run of `settings.method`, one of the program's methods (ongraph's own, or those
    /// [`crate::main_with`] was given).
    pub fn new(
        question: &str,
        topics: Topics,
        settings: Settings,
        prompts: Arc<Prompts>,
        profile: KgProfile,
        graph_name: &str,
    ) -> Result<Self, EngineError> {
        Self::new_in(Registry::program(), question, topics, settings, prompts, profile, graph_name)
    }

    /// A run of `settings.method` as `registry` knows it.
    pub fn new_in(
        registry: &Registry,
        question: &str,
        topics: Topics,
        settings: Settings,
        prompts: Arc<Prompts>,
        profile: KgProfile,
        graph_name: &str,
    ) -> Result<Self, EngineError> {
        let entry = registry
            .get(&settings.method)
            .ok_or_else(|| EngineError::UnknownMethod { name: settings.method.to_string(), known: registry.names() })?;
        let question = question.trim();
        if question.is_empty() {
            return Err(EngineError::EmptyQuestion);
        }
        let mut cx = Context {
            question: question.to_string(),
            rng: ChaCha8Rng::seed_from_u64(settings.seed),
            settings,
            prompts,
            profile,
            graph_name: graph_name.to_string(),
            beam: Beam::default(),
            costs: Costs::default(),
            trace: Vec::new(),
            answer: None,
            shared_prefix: None,
        };
        let machine = (entry.start)(&mut cx, topics)?;
        Ok(Self {
            entry: *entry,
            machine,
            cx,
            pending: None,
            history: Vec::new(),
            abandoned: Vec::new(),
            read: Footprint::default(),
        })
    }

    /// What the run needs next. Calling it again before `feed` returns the same batch.
    pub fn poll(&mut self) -> Poll {
        if let Some(p) = &self.pending {
            return Poll::Need(p.requests.clone());
        }
        if self.cx.answer.is_some() {
            return Poll::Finished;
        }
        let (requests, plan) = self.machine.inner_mut().next(&mut self.cx);
        self.pending = Some(Pending { requests: requests.clone(), plan });
        Poll::Need(requests)
    }

    /// Hands back the results of the last `poll`, in order; the run takes one step and returns
    /// the index of the event it recorded.
    pub fn feed(&mut self, responses: Vec<Response>) -> Result<usize, EngineError> {
        self.feed_timed(responses, std::time::Duration::ZERO)
    }

    /// As [`Run::feed`], recording how long the driver took to get the results.
    pub fn feed_timed(&mut self, responses: Vec<Response>, elapsed: std::time::Duration) -> Result<usize, EngineError> {
        let Some(pending) = self.pending.take() else {
            return Err(if self.cx.answer.is_some() { EngineError::Finished } else { EngineError::NotPolled });
        };
        if pending.requests.len() != responses.len() {
            let err = EngineError::BatchMismatch { expected: pending.requests.len(), got: responses.len() };
            self.pending = Some(pending);
            return Err(err);
        }
        let before = (self.machine.clone(), self.context_without_trace());
        self.account(&pending.requests, &responses);
        self.read.record(&pending.requests, &responses);
        let mut responses = responses;
        let reading_notes = step::read_structured(&pending.requests, &mut responses, self.entry.shapes);
        let result = self.machine.inner_mut().absorb(&mut self.cx, &pending.plan, &pending.requests, responses);
        match result {
            Ok(mut event) => {
                event.elapsed_ms = elapsed.as_millis() as u64;
                self.rank_answer_paths();
                event.notes.extend(reading_notes);
                // Every step says how it fell back; this only catches one that forgot to.
                if event.notes.is_empty() && event.calls.iter().any(|c| c.fell_back) {
                    tracing::warn!(step = event.index, "a fallback without a note");
                    event.notes.push("a reply could not be read; the step fell back".into());
                }
                self.cx.trace.push(event);
                self.snapshot();
                Ok(self.cx.trace.len() - 1)
            }
            Err(e) => {
                // A step that fails leaves the run as it was, the batch still pending (steps
                // only read the trace; it is pushed to after they succeed).
                let trace = std::mem::take(&mut self.cx.trace);
                (self.machine, self.cx) = before;
                self.cx.trace = trace;
                self.pending = Some(pending);
                Err(e)
            }
        }
    }

    pub(super) fn account(&mut self, requests: &[Request], responses: &[Response]) {
        let mut made = 0;
        for (req, resp) in requests.iter().zip(responses) {
            match (req, resp) {
                // An extracted reply is two calls, saved or made.
                (Request::Llm(_), Response::Llm { completion }) if completion.cached => {
                    self.cx.costs.llm_calls_saved += completion.calls()
                }
                (Request::Llm(_), Response::Llm { completion }) => {
                    made = made.max(completion.calls());
                    self.cx.costs.llm_calls += completion.calls();
                    self.cx.costs.usage += completion.usage;
                }
                (Request::Relations { .. } | Request::Neighbours { .. } | Request::FindEntities { .. }, _) => {
                    self.cx.costs.kg_lookups += 1
                }
                _ => {}
            }
        }
        // The extraction waits for the free reply: a round of its own.
        self.cx.costs.llm_rounds += made;
    }

    /// Changes the run's state between steps; recorded in the trace. A change the method
    /// refuses changes nothing: a batch handed out stays pending and can still be fed; whether
    /// it would be refused can be asked first ([`Run::check`]).
    ///
    /// A change that would leave the next step nothing to explore (the last path it would
    /// extend, check or answer from dropped or pruned) is refused too ([`Method::has_frontier`]).
    pub fn apply(&mut self, o: Override) -> Result<usize, EngineError> {
        let before = (self.machine.clone(), self.context_without_trace());
        let refused = changed(&mut self.machine, &mut self.cx, &o, &before.1.beam);
        let description = match refused {
            Ok(description) => description,
            Err(e) => {
                // A refused change changes nothing (a method may have begun to change the state).
                let trace = std::mem::take(&mut self.cx.trace);
                (self.machine, self.cx) = before;
                self.cx.trace = trace;
                return Err(e);
            }
        };
        // Requests handed out were built from the old state; the next poll rebuilds them.
        self.pending = None;
        // A change may end the run (GoG's edited action a Finish).
        self.rank_answer_paths();
        let index = self.cx.trace.len();
        let depth = self.depth();
        self.cx.trace.push(Event::new(
            index,
            EventKind::Override { description: description.clone() },
            depth,
            description,
        ));
        self.snapshot();
        Ok(index)
    }

    /// Whether `o` would be taken now, without taking it: `Err` says why not, as
    /// [`Run::apply`] would (a form can keep what the user typed and say so).
    pub fn check(&self, o: &Override) -> Result<(), EngineError> {
        let (mut machine, mut cx) = (self.machine.clone(), self.cx.clone());
        changed(&mut machine, &mut cx, o, &self.cx.beam).map(|_| ())
    }
}

/// `o` applied to a method's state: its description, or why it is refused (named as people see
/// the nodes, in `beam` before the change). A change that would leave the next step nothing to
/// explore is refused ([`Method::has_frontier`](super::Method::has_frontier)).
fn changed(machine: &mut Machine, cx: &mut Context, o: &Override, beam: &Beam) -> Result<String, EngineError> {
    let could_explore = machine.inner().has_frontier(cx);
    match machine.inner_mut().apply(cx, o) {
        Ok(description) if !could_explore || machine.inner().has_frontier(cx) => Ok(description),
        Ok(_) => Err(EngineError::NothingLeft { what: o.describe_in(beam) }),
        // A refusal names the nodes as people see them (the trace keeps its own wording).
        Err(EngineError::BadOverride { why, .. }) => Err(EngineError::BadOverride { what: o.describe_in(beam), why }),
        Err(e) => Err(e),
    }
}
