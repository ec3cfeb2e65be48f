//! Performs what a [`Run`] asks for: KG lookups and LLM calls, concurrently under a limit.
//! Identical LLM calls are made once: duplicates within a batch and repeats of earlier calls
//! are answered from a memo and marked `cached` (the engine counts them as saved, not made).

use crate::engine::{EngineError, Fed, Poll, Request, Response, Run};
use crate::kg::{KgError, KnowledgeGraph};
use crate::llm::{ChatRequest, Completion, Embedder, LanguageModel, LlmError};
use crate::session::{Moment, Player, Session};
use futures::{StreamExt, TryStreamExt};
use std::collections::HashMap;
use std::sync::{Arc, Mutex};

#[derive(Debug, thiserror::Error)]
pub enum DriverError {
    #[error(transparent)]
    Kg(#[from] KgError),
    #[error(transparent)]
    Llm(#[from] LlmError),
    #[error(transparent)]
    Engine(#[from] EngineError),
    #[error("--prune embedding needs an embedding endpoint: set [embedding] in the config")]
    NoEmbedder,
}

impl DriverError {
    /// The error as the run's method says it (`method`, its label): a model sees only the
    /// call, whose step name may be another method's (SC's samples are `cot` steps).
    pub fn asked_by(self, method: &str) -> Self {
        match self {
            DriverError::Llm(e) => DriverError::Llm(e.asked_by(method)),
            other => other,
        }
    }
}

pub struct Driver {
    kg: Arc<dyn KnowledgeGraph>,
    llm: Arc<dyn LanguageModel>,
    embedder: Option<Arc<dyn Embedder>>,
    concurrency: usize,
    memo: Mutex<HashMap<MemoKey, Completion>>,
}

/// A unit of work in a batch: one request, or all of its lookups of one kind.
enum Job {
    One(usize),
    Relations(Vec<usize>),
    Neighbours(Vec<usize>),
}

/// What makes two calls the same call (the step name is only a label).
#[derive(Clone, PartialEq, Eq, Hash)]
struct MemoKey {
    system: String,
    prompt: String,
    temperature_bits: u64,
    max_tokens: u32,
    sample: u32,
    /// The reply's schema, serialised: the same prompt asked for another shape is another call.
    schema: Option<String>,
    /// A reason-first call's extraction schema: the same prompt read another way is another call.
    extract: Option<String>,
}

impl From<&ChatRequest> for MemoKey {
    fn from(r: &ChatRequest) -> Self {
        Self {
            system: r.system.clone(),
            prompt: r.prompt.clone(),
            temperature_bits: r.temperature.to_bits(),
            max_tokens: r.max_tokens,
            sample: r.sample,
            schema: r.schema.as_ref().map(|s| s.schema.to_string()),
            extract: r.extract.as_ref().map(|e| e.schema.schema.to_string()),
        }
    }
}

impl Driver {
    pub fn new(kg: Arc<dyn KnowledgeGraph>, llm: Arc<dyn LanguageModel>) -> Self {
        Self { kg, llm, embedder: None, concurrency: 4, memo: Mutex::new(HashMap::new()) }
    }

    pub fn with_embedder(mut self, embedder: Arc<dyn Embedder>) -> Self {
        self.embedder = Some(embedder);
        self
    }

    /// How many requests may be in flight at once (at least 1).
    pub fn with_concurrency(mut self, concurrency: usize) -> Self {
        self.concurrency = concurrency.max(1);
        self
    }

    pub fn kg(&self) -> &Arc<dyn KnowledgeGraph> {
        &self.kg
    }

    fn memo_get(&self, key: &MemoKey) -> Option<Completion> {
        self.memo.lock().ok()?.get(key).cloned()
    }

    /// Performs a batch, returning the responses in request order.
    pub async fn perform(&self, requests: &[Request]) -> Result<Vec<Response>, DriverError> {
        // Identical LLM calls in one batch are made once: later copies wait for the first.
        let mut first_of: HashMap<MemoKey, usize> = HashMap::new();
        let mut copy_of: Vec<Option<usize>> = vec![None; requests.len()];
        for (i, r) in requests.iter().enumerate() {
            if let Request::Llm(chat) | Request::Extraction(chat) = r {
                let key = MemoKey::from(chat);
                match first_of.get(&key) {
                    Some(&j) => copy_of[i] = Some(j),
                    None => {
                        first_of.insert(key, i);
                    }
                }
            }
        }
        // KG lookups of one kind go to the graph as one batch (one round trip per kind on an
        // endpoint that batches); everything else is a job of its own.
        let mut jobs: Vec<Job> = Vec::new();
        let (mut relations, mut neighbours) = (Vec::new(), Vec::new());
        for i in (0..requests.len()).filter(|&i| copy_of[i].is_none()) {
            match &requests[i] {
                Request::Relations { .. } => relations.push(i),
                Request::Neighbours { .. } => neighbours.push(i),
                _ => jobs.push(Job::One(i)),
            }
        }
        if !relations.is_empty() {
            jobs.insert(0, Job::Relations(relations));
        }
        if !neighbours.is_empty() {
            jobs.insert(0, Job::Neighbours(neighbours));
        }
        let done: Vec<Vec<(usize, Response)>> = futures::stream::iter(jobs)
            .map(|job| self.perform_job(requests, job))
            .buffered(self.concurrency)
            .try_collect()
            .await?;
        let done = done.into_iter().flatten();
        let mut out: Vec<Option<Response>> = vec![None; requests.len()];
        for (i, r) in done {
            out[i] = Some(r);
        }
        for i in 0..requests.len() {
            let Some(j) = copy_of[i] else { continue };
            out[i] = match out[j].clone() {
                // No request was made: what the client noted about its request is not repeated.
                Some(Response::Llm { completion }) => {
                    Some(Response::Llm { completion: Completion { cached: true, notes: Vec::new(), ..completion } })
                }
                failed => failed,
            };
        }
        Ok(out.into_iter().flatten().collect())
    }

    async fn perform_job(&self, requests: &[Request], job: Job) -> Result<Vec<(usize, Response)>, DriverError> {
        match job {
            Job::One(i) => Ok(vec![(i, self.perform_one(&requests[i]).await?)]),
            Job::Relations(indices) => {
                let entities: Vec<String> = indices
                    .iter()
                    .filter_map(|&i| match &requests[i] {
                        Request::Relations { entity } => Some(entity.clone()),
                        _ => None,
                    })
                    .collect();
                let found = self.kg.relations_many(&entities).await?;
                Ok(indices
                    .into_iter()
                    .zip(found)
                    .map(|(i, relations)| (i, Response::Relations { relations }))
                    .collect())
            }
            Job::Neighbours(indices) => {
                let pairs: Vec<(String, crate::kg::RelationRef)> = indices
                    .iter()
                    .filter_map(|&i| match &requests[i] {
                        Request::Neighbours { entity, relation } => Some((entity.clone(), relation.clone())),
                        _ => None,
                    })
                    .collect();
                let found = self.kg.neighbours_many(&pairs).await?;
                Ok(indices
                    .into_iter()
                    .zip(found)
                    .map(|(i, neighbours)| (i, Response::Neighbours { neighbours }))
                    .collect())
            }
        }
    }

    async fn perform_one(&self, request: &Request) -> Result<Response, DriverError> {
        Ok(match request {
            Request::Relations { entity } => Response::Relations { relations: self.kg.relations(entity).await? },
            Request::Neighbours { entity, relation } => {
                Response::Neighbours { neighbours: self.kg.neighbours(entity, relation).await? }
            }
            Request::FindEntities { name, limit } => {
                Response::Entities { matches: self.kg.find_entities(name, *limit).await? }
            }
            Request::Llm(chat) => Response::Llm { completion: self.complete(chat).await? },
            // A failed extraction is a result: the step reads the free reply as far as it goes
            // (it was paid for) rather than failing.
            Request::Extraction(chat) => match self.complete(chat).await {
                Ok(completion) => Response::Llm { completion },
                Err(e) => {
                    tracing::warn!(step = %chat.step, error = %e, "the extraction call failed");
                    Response::Failed { error: e.to_string() }
                }
            },
            Request::Embed { texts } => {
                let embedder = self.embedder.as_ref().ok_or(DriverError::NoEmbedder)?;
                Response::Embeddings { vectors: embedder.embed(texts).await? }
            }
        })
    }

    /// One call, answered from the memo when it was made before (a failed call is not kept:
    /// asked again, it may succeed).
    async fn complete(&self, chat: &ChatRequest) -> Result<Completion, LlmError> {
        let key = MemoKey::from(chat);
        if let Some(c) = self.memo_get(&key) {
            return Ok(Completion { cached: true, latency_ms: 0, notes: Vec::new(), ..c });
        }
        tracing::debug!(step = %chat.step, "LLM call");
        // Reasoning is kept apart before anything can parse it.
        let completion = self.llm.complete(chat).await?.without_thinking();
        if let Ok(mut memo) = self.memo.lock() {
            memo.insert(key, completion.clone());
        }
        Ok(completion)
    }

    /// Takes one step of `run`. Returns the index of the event it recorded, or `None` when the
    /// run had already finished.
    pub async fn step(&self, run: &mut Run) -> Result<Option<usize>, DriverError> {
        self.step_recorded(run, None).await
    }

    /// As [`Driver::step`], recording the batch and its answers into `session` (whose last run
    /// is this one) when one is given. The run's trace is copied into the session by
    /// [`Session::sync`], once, before saving (copying it every step costs the square of the
    /// steps).
    pub async fn step_recorded(
        &self,
        run: &mut Run,
        session: Option<&mut Session>,
    ) -> Result<Option<usize>, DriverError> {
        self.step_with(run, None, session).await
    }

    /// As [`Driver::step_recorded`], taking the model's replies from `earlier` (a recording
    /// of the same question) when it holds the batch: a call it answered is not made again,
    /// and counts as saved. The KG is asked again (it may have been corrected since); if it
    /// answers otherwise, the run leaves the recording and asks the model from there on.
    pub async fn step_with(
        &self,
        run: &mut Run,
        mut earlier: Option<&mut Player>,
        mut session: Option<&mut Session>,
    ) -> Result<Option<usize>, DriverError> {
        loop {
            let requests = match run.poll() {
                Poll::Finished => return Ok(None),
                Poll::Need(requests) => requests,
            };
            match self.exchange(run, requests, earlier.as_deref_mut(), session.as_deref_mut()).await? {
                Fed::Step(index) => return Ok(Some(index)),
                // The calls extracting answers from free replies: a batch of their own.
                Fed::Extracting => continue,
            }
        }
    }

    /// Performs one batch the run asked for (from `earlier` when it holds it), feeds it back
    /// and records it into `session`.
    async fn exchange(
        &self,
        run: &mut Run,
        requests: Vec<Request>,
        earlier: Option<&mut Player>,
        session: Option<&mut Session>,
    ) -> Result<Fed, DriverError> {
        let method = run.settings().method.label();
        let started = std::time::Instant::now();
        let reused = match earlier.and_then(|p| p.answers(&requests)) {
            Some((recorded, _)) => Some(self.reuse_replies(&requests, recorded).await?),
            None => None,
        };
        // One measure of the time, fed and recorded alike (a replay compares the traces); the
        // responses are copied only to be recorded.
        let recording = session.is_some();
        let (fed, kept, elapsed) = match reused {
            Some(responses) => {
                let elapsed = whole_ms(started.elapsed());
                let kept = recording.then(|| responses.clone());
                match run.feed_timed(responses, elapsed) {
                    Ok(fed) => (fed, kept, elapsed),
                    Err(e) => {
                        // A recording this run cannot read (edited by hand, another version):
                        // the batch is asked for real instead.
                        tracing::warn!(error = %e, "a recorded batch could not be fed; asking again");
                        let responses = self.perform(&requests).await.map_err(|e| e.asked_by(method))?;
                        let elapsed = whole_ms(started.elapsed());
                        let kept = recording.then(|| responses.clone());
                        (run.feed_timed(responses, elapsed)?, kept, elapsed)
                    }
                }
            }
            None => {
                let responses = self.perform(&requests).await.map_err(|e| e.asked_by(method))?;
                let elapsed = whole_ms(started.elapsed());
                let kept = recording.then(|| responses.clone());
                (run.feed_timed(responses, elapsed)?, kept, elapsed)
            }
        };
        let recorded = session.zip(kept);
        if let Some((session, responses)) = recorded {
            session.record(Moment::Exchange { requests, responses, elapsed_ms: elapsed.as_millis() as u64 });
        }
        Ok(fed)
    }

    /// The recorded model replies (and embeddings) of a batch, with its KG lookups made again.
    async fn reuse_replies(&self, requests: &[Request], recorded: Vec<Response>) -> Result<Vec<Response>, DriverError> {
        // Lookups are made again (the KG may have been corrected), and so is a call whose
        // recorded attempt failed (asked again, it may succeed).
        let live = |r: &Request, got: &Response| {
            matches!(r, Request::Relations { .. } | Request::Neighbours { .. } | Request::FindEntities { .. })
                || matches!(got, Response::Failed { .. })
        };
        let again: Vec<Request> =
            requests.iter().zip(&recorded).filter(|(r, got)| live(r, got)).map(|(r, _)| r.clone()).collect();
        let mut fresh = if again.is_empty() { Vec::new() } else { self.perform(&again).await? }.into_iter();
        Ok(requests
            .iter()
            .zip(recorded)
            .map(|(request, response)| match live(request, &response).then(|| fresh.next()).flatten() {
                Some(fresh) => fresh,
                None => response.reused(),
            })
            .collect())
    }

    /// Runs to the answer, calling `on_event` after every step.
    pub async fn run(&self, run: &mut Run, mut on_event: impl FnMut(&Run, usize)) -> Result<(), DriverError> {
        while let Some(index) = self.step(run).await? {
            on_event(run, index);
        }
        Ok(())
    }

    /// Runs to the answer, recording every step into `session` (whose last run is this one).
    pub async fn run_recorded(&self, run: &mut Run, session: &mut Session) -> Result<(), DriverError> {
        let result = async {
            while self.step_recorded(run, Some(&mut *session)).await?.is_some() {}
            Ok(())
        }
        .await;
        session.sync(run);
        result
    }
}

/// `elapsed` to the millisecond below: what is fed is what is recorded, and a step's two
/// batches (a reply, then its extraction) add up on replay as they did live.
fn whole_ms(elapsed: std::time::Duration) -> std::time::Duration {
    std::time::Duration::from_millis(elapsed.as_millis() as u64)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::kg::load::demo_graph;
    use std::sync::atomic::{AtomicUsize, Ordering::SeqCst};

    /// Echoes the prompt, counting the calls it was really asked.
    #[derive(Default)]
    struct Echo {
        calls: AtomicUsize,
    }

    #[async_trait::async_trait]
    impl LanguageModel for Echo {
        fn describe(&self) -> String {
            "echo".into()
        }
        async fn complete(&self, request: &ChatRequest) -> Result<Completion, LlmError> {
            self.calls.fetch_add(1, SeqCst);
            Ok(Completion { text: format!("{{{}}}", request.prompt), ..Completion::default() })
        }
    }

    fn call(prompt: &str, sample: u32) -> Request {
        Request::Llm(ChatRequest {
            step: "answer".into(),
            system: String::new(),
            prompt: prompt.into(),
            temperature: 0.0,
            max_tokens: 16,
            sample,
            schema: None,
            extract: None,
        })
    }

    fn cached(responses: &[Response]) -> Vec<bool> {
        responses.iter().map(|r| matches!(r, Response::Llm { completion } if completion.cached)).collect()
    }

    #[tokio::test]
    async fn an_identical_call_is_made_once_in_a_batch_and_across_batches() {
        let model = Arc::new(Echo::default());
        let driver = Driver::new(Arc::new(demo_graph()), model.clone());
        let batch = [call("a", 0), call("a", 0), call("a", 1), call("b", 0)];
        let first = driver.perform(&batch).await.unwrap();
        assert_eq!(model.calls.load(SeqCst), 3, "the copy of a waits for it; a sample is another call");
        assert_eq!(cached(&first), vec![false, true, false, false]);
        let again = driver.perform(&[call("b", 0), call("c", 0)]).await.unwrap();
        assert_eq!(model.calls.load(SeqCst), 4, "b comes from the memo");
        assert_eq!(cached(&again), vec![true, false]);
    }

    /// Fails every call whose prompt is `fail`, counting the calls asked.
    #[derive(Default)]
    struct Failing {
        calls: AtomicUsize,
    }

    #[async_trait::async_trait]
    impl LanguageModel for Failing {
        fn describe(&self) -> String {
            "failing".into()
        }
        async fn complete(&self, request: &ChatRequest) -> Result<Completion, LlmError> {
            self.calls.fetch_add(1, SeqCst);
            if request.prompt == "fail" {
                return Err(LlmError::Timeout { url: "http://127.0.0.1:9/v1".into(), seconds: 1, attempts: 1 });
            }
            Ok(Completion { text: "{ok}".into(), ..Completion::default() })
        }
    }

    fn extraction(prompt: &str) -> Request {
        let Request::Llm(chat) = call(prompt, 0) else { unreachable!() };
        Request::Extraction(chat)
    }

    #[tokio::test]
    async fn a_failed_extraction_is_a_result_made_once_and_not_kept() {
        let model = Arc::new(Failing::default());
        let driver = Driver::new(Arc::new(demo_graph()), model.clone());
        let batch = [extraction("fail"), extraction("fail"), extraction("ok")];
        let got = driver.perform(&batch).await.unwrap();
        assert_eq!(model.calls.load(SeqCst), 2, "the copy waits for the first");
        assert!(matches!(&got[0], Response::Failed { error } if error.contains("timed out")), "{got:?}");
        assert_eq!(got[0], got[1], "the copy fails as the first did");
        assert!(matches!(&got[2], Response::Llm { completion } if completion.text == "{ok}"));
        // A failure is not kept: asked again, the call is made again. A plain call fails the batch.
        driver.perform(&[extraction("fail"), extraction("ok")]).await.unwrap();
        assert_eq!(model.calls.load(SeqCst), 3, "ok comes from the memo; fail is asked again");
        assert!(driver.perform(&[call("fail", 0)]).await.is_err());
    }

    #[tokio::test]
    async fn reused_replies_come_from_the_recording_and_lookups_from_the_kg() {
        let model = Arc::new(Echo::default());
        let driver = Driver::new(Arc::new(demo_graph()), model.clone());
        let requests = [Request::Relations { entity: "m.canberra".into() }, call("a", 0)];
        let recorded = vec![
            Response::Relations { relations: Vec::new() },
            Response::Llm { completion: Completion { text: "{recorded}".into(), ..Completion::default() } },
        ];
        let got = driver.reuse_replies(&requests, recorded).await.unwrap();
        assert_eq!(model.calls.load(SeqCst), 0, "no call made");
        match &got[0] {
            Response::Relations { relations } => assert!(!relations.is_empty(), "asked the KG again"),
            other => panic!("{other:?}"),
        }
        assert!(
            matches!(&got[1], Response::Llm { completion } if completion.text == "{recorded}" && completion.cached)
        );
        // A recorded extraction that failed is asked again; one that was made is not.
        let requests = [extraction("fail again"), extraction("made")];
        let recorded = vec![
            Response::Failed { error: "timed out".into() },
            Response::Llm { completion: Completion { text: "{made}".into(), ..Completion::default() } },
        ];
        let got = driver.reuse_replies(&requests, recorded).await.unwrap();
        assert_eq!(model.calls.load(SeqCst), 1, "only the failed one");
        assert!(matches!(&got[0], Response::Llm { completion } if completion.text == "{fail again}"), "{got:?}");
        assert!(matches!(&got[1], Response::Llm { completion } if completion.text == "{made}" && completion.cached));
    }
}
