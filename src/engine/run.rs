//! A run's step loop: poll for what it needs, feed the results back, apply the user's changes.

use super::Machine;
use super::beam::Beam;
use super::events::{Costs, Event, EventKind};
use super::extraction::{self, Extracting};
use super::{
    Context, EngineError, Fed, Footprint, Override, Pending, Poll, Registry, Request, Response, Run, Settings, Topics,
    step,
};
use crate::kg::KgProfile;
use crate::prompts::Prompts;
use rand::SeedableRng;
use rand_chacha::ChaCha8Rng;
use std::sync::Arc;
use std::time::Duration;

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
            extracting: None,
            history: Vec::new(),
            abandoned: Vec::new(),
            read: Footprint::default(),
        })
    }

    /// What the run needs next. Calling it again before `feed` returns the same batch.
    pub fn poll(&mut self) -> Poll {
        if let Some(e) = &self.extracting {
            return Poll::Need(e.requests());
        }
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

    /// Hands back the results of the last `poll`, in order: the run takes one step (and says
    /// the index of the event it recorded), or asks next for the calls extracting the answers
    /// of replies it cannot read as they are.
    pub fn feed(&mut self, responses: Vec<Response>) -> Result<Fed, EngineError> {
        self.feed_timed(responses, Duration::ZERO)
    }

    /// As [`Run::feed`], recording how long the driver took to get the results.
    pub fn feed_timed(&mut self, responses: Vec<Response>, elapsed: Duration) -> Result<Fed, EngineError> {
        if let Some(extracting) = self.extracting.take() {
            return self.feed_extracted(extracting, responses, elapsed);
        }
        let Some(pending) = self.pending.take() else {
            return Err(if self.cx.answer.is_some() { EngineError::Finished } else { EngineError::NotPolled });
        };
        if pending.requests.len() != responses.len() {
            let err = EngineError::BatchMismatch { expected: pending.requests.len(), got: responses.len() };
            self.pending = Some(pending);
            return Err(err);
        }
        let calls = extraction::needed(&pending.requests, &responses, self.entry.shapes);
        if !calls.is_empty() {
            // The free replies were paid for, whatever becomes of the step (a change or a
            // rewind before their extractions are back drops them).
            self.cx.costs += cost_of(&pending.requests, &responses);
            self.extracting = Some(Extracting { batch: pending, responses, calls, elapsed });
            return Ok(Fed::Extracting);
        }
        let cost = cost_of(&pending.requests, &responses);
        let result = self.take_step(&pending, responses, cost, elapsed);
        if result.is_err() {
            self.pending = Some(pending);
        }
        result.map(Fed::Step)
    }

    /// Feeds the results of the extraction calls: the method's batch is read with them.
    fn feed_extracted(
        &mut self,
        extracting: Extracting,
        extracted: Vec<Response>,
        elapsed: Duration,
    ) -> Result<Fed, EngineError> {
        if extracting.calls.len() != extracted.len() {
            let err = EngineError::BatchMismatch { expected: extracting.calls.len(), got: extracted.len() };
            self.extracting = Some(extracting);
            return Err(err);
        }
        let result = extracting.merged(&extracted).and_then(|merged| {
            // The free replies were accounted for when they came: this is the second round.
            let cost = cost_of(&extracting.requests(), &extracted);
            self.take_step(&extracting.batch, merged, cost, extracting.elapsed + elapsed)
        });
        if result.is_err() {
            // Nothing was taken: the extraction calls are still what the run needs.
            self.extracting = Some(extracting);
        }
        result.map(Fed::Step)
    }

    /// The method takes its step from `responses`, the results of `pending` (their answers
    /// extracted), which cost `cost`. A step that fails leaves the run as it was.
    fn take_step(
        &mut self,
        pending: &Pending,
        mut responses: Vec<Response>,
        cost: Costs,
        elapsed: Duration,
    ) -> Result<usize, EngineError> {
        let before = (self.machine.clone(), self.context_without_trace());
        self.cx.costs += cost;
        self.read.record(&pending.requests, &responses);
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
                // Steps only read the trace (it is pushed to after they succeed): the rest of
                // the state is put back as it was.
                let trace = std::mem::take(&mut self.cx.trace);
                (self.machine, self.cx) = before;
                self.cx.trace = trace;
                Err(e)
            }
        }
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
        self.extracting = None;
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

/// What one batch cost: the LLM calls made or saved (a reply recorded with its answer already
/// extracted is two calls), the rounds a driver waited for them, the KG lookups.
fn cost_of(requests: &[Request], responses: &[Response]) -> Costs {
    let mut cost = Costs::default();
    let mut made = 0;
    for (req, resp) in requests.iter().zip(responses) {
        match (req, resp) {
            (Request::Llm(_) | Request::Extraction(_), Response::Llm { completion }) if completion.cached => {
                cost.llm_calls_saved += completion.calls()
            }
            (Request::Llm(_) | Request::Extraction(_), Response::Llm { completion }) => {
                made = made.max(completion.calls());
                cost.llm_calls += completion.calls();
                cost.usage += completion.usage;
            }
            (Request::Relations { .. } | Request::Neighbours { .. } | Request::FindEntities { .. }, _) => {
                cost.kg_lookups += 1
            }
            _ => {}
        }
    }
    // A recorded extraction waited for its free reply: a round of its own.
    cost.llm_rounds += made;
    cost
}
