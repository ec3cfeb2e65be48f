//! Running a method over dataset questions: each question on its own driver (its costs are its
//! own; no memo carries replies from one question to another) and, for GoG's incomplete-KG
//! sets, its own view of the KG with that question's triples hidden. Several questions run at
//! once; each record is written the moment its question finishes.

use super::metrics::score;
use super::record::{CorrectionsSeen, Record, RecordError, RecordWriter};
use crate::dataset::Item;
use crate::driver::Driver;
use crate::engine::{Run, Settings};
use crate::kg::KnowledgeGraph;
use crate::llm::{Embedder, LanguageModel};
use crate::overlay::OverlayKg;
use crate::overlay::scenario::Triple;
use crate::prompts::Prompts;
use futures::StreamExt;
use rand::SeedableRng;
use std::sync::Arc;
use std::time::Instant;

/// How many supporting paths a record keeps.
const PATHS_KEPT: usize = 5;

/// Where each question's KG comes from when it can change during a run: `eval
/// --with-corrections` sees the user's corrections as they are when each question starts
/// (re-read when the store changed), not as they were when the run began.
pub trait KgSource: Send + Sync {
    /// The KG the next question is answered over, `hidden` (the question's own scenario)
    /// hidden in it too, and the corrections it sees that way (kept in the question's record;
    /// `None`: none apply). A triple a correction asserted stays, hidden or not, as in `ask`.
    fn current(&self, hidden: &[Triple]) -> (Arc<dyn KnowledgeGraph>, Option<CorrectionsSeen>);
}

/// Everything a question is answered with.
pub struct Evaluator {
    kg: Arc<dyn KnowledgeGraph>,
    /// When set, asked for each question's KG instead of using `kg`.
    source: Option<Arc<dyn KgSource>>,
    llm: Arc<dyn LanguageModel>,
    embedder: Option<Arc<dyn Embedder>>,
    prompts: Arc<Prompts>,
    settings: Settings,
    request_concurrency: usize,
}

/// How a run over the questions ended.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Finished {
    /// Every question given has a record.
    All,
    /// Stopped (Ctrl-C) with questions still to do; those in flight were dropped, unwritten.
    Interrupted,
    /// Stopped because the model's endpoint failed on [`ENDPOINT_FAILURES`] questions in a
    /// row: it went away, and every question left would only be counted wrong. `index` and
    /// `error` are the first of those questions and its error.
    EndpointGone { index: usize, error: String },
}

/// Questions in a row whose model endpoint failed before `eval` stops.
pub const ENDPOINT_FAILURES: usize = 3;

impl Evaluator {
    pub fn new(
        kg: Arc<dyn KnowledgeGraph>,
        llm: Arc<dyn LanguageModel>,
        prompts: Arc<Prompts>,
        settings: Settings,
    ) -> Self {
        Self { kg, source: None, llm, embedder: None, prompts, settings, request_concurrency: 4 }
    }

    /// Each question's KG comes from `source`, asked when the question starts.
    pub fn with_kg_source(mut self, source: Arc<dyn KgSource>) -> Self {
        self.source = Some(source);
        self
    }

    pub fn with_embedder(mut self, embedder: Option<Arc<dyn Embedder>>) -> Self {
        self.embedder = embedder;
        self
    }

    /// Requests in flight at once within one question.
    pub fn with_request_concurrency(mut self, n: usize) -> Self {
        self.request_concurrency = n.max(1);
        self
    }

    /// Answers one question; a failure becomes the record's error (and counts as wrong).
    pub async fn answer(&self, index: usize, item: &Item) -> Record {
        self.answer_telling(index, item).await.0
    }

    /// [`Evaluator::answer`], and whether the question failed because the model's endpoint did.
    async fn answer_telling(&self, index: usize, item: &Item) -> (Record, bool) {
        let started = Instant::now();
        let (kg, corrections) = self.question_kg(item);
        let driver = self.driver_over(kg.clone());
        let mut record = self.blank_record(index, item, corrections);
        if item.answers.is_empty() {
            // Nothing to score against: counted, and wrong, without spending calls on it.
            record.error = Some("the dataset gives no gold answer for this question".into());
            return (record, false);
        }
        let run = Run::new(
            &item.question,
            item.engine_topics(),
            self.settings.clone(),
            self.prompts.clone(),
            kg.profile().clone(),
            kg.name(),
        );
        let mut run = match run {
            Ok(run) => run,
            Err(e) => {
                record.error = Some(e.to_string());
                record.wall_ms = started.elapsed().as_millis() as u64;
                return (record, false);
            }
        };
        let outcome = driver.run(&mut run, |_, _| {}).await;
        // Costs count even when the run failed part-way: they were spent.
        record_costs(&mut record, &run);
        let endpoint_failed = matches!(&outcome, Err(crate::driver::DriverError::Llm(e)) if e.is_endpoint_failure());
        record_outcome(&mut record, outcome, &run, item);
        record.wall_ms = started.elapsed().as_millis() as u64;
        (record, endpoint_failed)
    }

    /// The KG `item` is answered over (its own hidden triples hidden), and the corrections it
    /// sees there.
    fn question_kg(&self, item: &Item) -> (Arc<dyn KnowledgeGraph>, Option<CorrectionsSeen>) {
        match &self.source {
            Some(source) => source.current(&item.hidden),
            None if item.hidden.is_empty() => (self.kg.clone(), None),
            None => (Arc::new(OverlayKg::new(self.kg.clone(), &[]).with_hidden(&item.hidden)), None),
        }
    }

    /// A driver of the question's own over `kg` (no memo shared with another question).
    fn driver_over(&self, kg: Arc<dyn KnowledgeGraph>) -> Driver {
        let mut driver = Driver::new(kg, self.llm.clone()).with_concurrency(self.request_concurrency);
        if let Some(e) = &self.embedder {
            driver = driver.with_embedder(e.clone());
        }
        driver
    }

    /// The record of `item` before it runs: what the dataset says of it, nothing answered,
    /// spent or read yet.
    fn blank_record(&self, index: usize, item: &Item, corrections: Option<CorrectionsSeen>) -> Record {
        Record {
            index,
            id: item.id.clone(),
            question: item.question.clone(),
            hops: item.hops,
            gold: item.answers.clone(),
            prediction: Vec::new(),
            source: None,
            paths: Vec::new(),
            generated: Vec::new(),
            score: Default::default(),
            llm_calls: 0,
            llm_calls_saved: 0,
            llm_rounds: 0,
            prompt_tokens: 0,
            cached_tokens: 0,
            completion_tokens: 0,
            kg_lookups: 0,
            hidden_triples: item.hidden.len(),
            wall_ms: 0,
            method: self.settings.method.label().to_string(),
            settings: self.settings.clone(),
            error: None,
            reads: Default::default(),
            corrections,
            // Until it runs, it has read nothing (a question that never runs is untouched).
            footprint: Some(Default::default()),
        }
    }

    /// Answers `todo` (dataset index and question), `at_once` questions at a time, appending
    /// each record as it finishes and telling `on_record`. Stops early when `stop` completes
    /// (questions in flight are dropped unwritten: `--resume` runs them again).
    pub async fn run(
        &self,
        todo: Vec<(usize, &Item)>,
        at_once: usize,
        writer: &mut RecordWriter,
        stop: impl std::future::Future<Output = ()>,
        mut on_record: impl FnMut(&Record),
    ) -> Result<Finished, RecordError> {
        let mut answers = futures::stream::iter(todo)
            .map(|(index, item)| self.answer_telling(index, item))
            .buffer_unordered(at_once.max(1));
        tokio::pin!(stop);
        // The questions whose endpoint failed since the last that did not.
        let mut failing: Vec<(usize, String)> = Vec::new();
        loop {
            tokio::select! {
                // The stop first: a fast model always has an answer ready, and Ctrl-C must
                // still be heard. Answers not yet written are simply run again on resume.
                biased;
                () = &mut stop => {
                    writer.sync()?;
                    return Ok(Finished::Interrupted);
                }
                next = answers.next() => match next {
                    Some((record, endpoint_failed)) => {
                        writer.append(&record)?;
                        on_record(&record);
                        if !endpoint_failed {
                            failing.clear();
                            continue;
                        }
                        failing.push((record.index, record.error.clone().unwrap_or_default()));
                        if failing.len() >= ENDPOINT_FAILURES {
                            writer.sync()?;
                            let (index, error) = failing.swap_remove(0);
                            return Ok(Finished::EndpointGone { index, error });
                        }
                    }
                    None => break,
                },
            }
        }
        writer.sync()?;
        Ok(Finished::All)
    }
}

/// What the run spent (kept even when it failed part-way), and how each kind of prompt's
/// replies were read.
fn record_costs(record: &mut Record, run: &Run) {
    let costs = run.costs();
    record.llm_calls = costs.llm_calls;
    record.llm_calls_saved = costs.llm_calls_saved;
    record.llm_rounds = costs.llm_rounds;
    record.prompt_tokens = costs.usage.prompt_tokens;
    record.cached_tokens = costs.usage.cached_tokens;
    record.completion_tokens = costs.usage.completion_tokens;
    record.kg_lookups = costs.kg_lookups;
    for call in run.trace().iter().flat_map(|e| &e.calls).filter(|c| !c.cached) {
        let tally = record.reads.entry(call.step.clone()).or_default();
        tally.calls += 1;
        tally.json += u64::from(call.read == crate::engine::events::ReadAs::Json);
        tally.extracted += u64::from(call.read == crate::engine::events::ReadAs::Extracted);
        tally.fallback += u64::from(call.fell_back);
    }
}

/// How the run ended: its answer scored against the gold (or its error), the triples the model
/// generated and kept, and what it read.
fn record_outcome(record: &mut Record, outcome: Result<(), crate::driver::DriverError>, run: &Run, item: &Item) {
    match outcome {
        Err(e) => record.error = Some(e.to_string()),
        Ok(()) => match run.answer() {
            Some(answer) => {
                record.prediction = answer.answers.clone();
                record.source = Some(answer.source);
                record.paths = answer.paths.iter().take(PATHS_KEPT).map(|p| p.text.clone()).collect();
                record.score = score(&answer.answers, &item.answers);
            }
            None => record.error = Some("the run ended without an answer".into()),
        },
    }
    record.generated =
        run.generated().iter().filter(|g| g.kept).map(|g| format!("{}, {}, {}", g.head, g.relation, g.tail)).collect();
    record.footprint = Some(run.footprint());
}

/// A dataset's two fixed splits. Designs are tried and chosen on `Dev`; a frozen design is
/// reported on `Test`, which no design choice looks at (issue 34: a figure measured on the
/// questions a design was tuned on says little about the next ones).
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Split {
    /// The seeded sample of [`DEV_SIZE`] every earlier benchmark ran (`--sample 50 --seed 7`),
    /// in file order.
    Dev,
    /// Every other question, in a fixed shuffled order: its first N (`--take N`) are a random
    /// sample of the rest, and a longer run keeps a shorter one's questions.
    Test,
}

/// Questions in a dataset's dev split.
pub const DEV_SIZE: usize = 50;
/// The seed of the dev sample (the one the first benchmarks used).
const DEV_SEED: u64 = 7;
/// The seed of the test split's order: fixed, and never an engine seed.
const TEST_SEED: u64 = 0x7e57_5e1d;

impl Split {
    pub fn label(self) -> &'static str {
        match self {
            Split::Dev => "dev",
            Split::Test => "test",
        }
    }
}

/// The dataset positions of `split` of a file of `total` questions, the first `take` of them
/// (in the split's order), returned in file order.
pub fn split(total: usize, split: Split, take: Option<usize>) -> Vec<usize> {
    let dev = select(total, None, Some(DEV_SIZE), DEV_SEED);
    let mut chosen = match split {
        Split::Dev => dev,
        Split::Test => {
            let mut rest: Vec<usize> = (0..total).filter(|i| dev.binary_search(i).is_err()).collect();
            let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(TEST_SEED);
            rand::seq::SliceRandom::shuffle(rest.as_mut_slice(), &mut rng);
            rest
        }
    };
    chosen.truncate(take.unwrap_or(usize::MAX));
    chosen.sort_unstable();
    chosen
}

/// Which dataset positions to run: the first `limit`, then a seeded random `sample` of those,
/// in file order.
pub fn select(total: usize, limit: Option<usize>, sample: Option<usize>, seed: u64) -> Vec<usize> {
    let pool = limit.map_or(total, |l| l.min(total));
    match sample {
        Some(n) if n < pool => {
            let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(seed);
            let mut picked = rand::seq::index::sample(&mut rng, pool, n).into_vec();
            picked.sort_unstable();
            picked
        }
        _ => (0..pool).collect(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn selection_is_seeded_and_in_file_order() {
        assert_eq!(select(10, Some(3), None, 0), [0, 1, 2]);
        assert_eq!(select(2, Some(5), None, 0), [0, 1]);
        let a = select(1000, None, Some(20), 7);
        assert_eq!(a, select(1000, None, Some(20), 7));
        assert_ne!(a, select(1000, None, Some(20), 8));
        assert!(a.windows(2).all(|w| w[0] < w[1]) && a.len() == 20);
        assert!(select(1000, Some(50), Some(20), 7).iter().all(|&i| i < 50));
        assert_eq!(select(5, None, Some(9), 1), [0, 1, 2, 3, 4]);
    }

    #[test]
    fn the_splits_are_fixed_disjoint_and_cover_the_file() {
        let dev = split(1000, Split::Dev, None);
        // The dev split is the sample every earlier benchmark ran.
        assert_eq!(dev, select(1000, None, Some(50), 7));
        let test = split(1000, Split::Test, None);
        assert_eq!(test.len(), 950);
        assert!(test.iter().all(|i| dev.binary_search(i).is_err()), "disjoint");
        assert_eq!(test, split(1000, Split::Test, None), "fixed");
        // A shorter test run is a subset of a longer one, and a random one (not the file's
        // first lines).
        let hundred = split(1000, Split::Test, Some(100));
        let fifty = split(1000, Split::Test, Some(50));
        assert_eq!(hundred.len(), 100);
        assert!(fifty.iter().all(|i| hundred.binary_search(i).is_ok()));
        assert!(hundred.windows(2).all(|w| w[0] < w[1]));
        assert!(hundred.iter().any(|&i| i > 500), "{hundred:?}");
        // A file of at most 50 questions is all dev.
        assert!(split(40, Split::Test, None).is_empty());
        assert_eq!(split(40, Split::Dev, Some(10)).len(), 10);
    }
}
