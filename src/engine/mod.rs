//! The reasoning engine, sans I/O. A [`Run`] never touches the network or the disk: it says
//! what it needs next ([`Run::poll`] → KG lookups and LLM calls), a driver performs them and
//! hands the results back ([`Run::feed`]), and the run takes one step (a free reply it cannot
//! read as it is first has its answer extracted, by calls it asks for next). Between steps a caller
//! may override the last decision, pin or prune a path, force the sufficiency verdict, or rewind
//! to an earlier step. The same seed and the same replies always give the same trace.
//!
//! [`Run`] is declared here; its step loop is in `run`, its rewinds and snapshots in `history`,
//! what it shows its clients in `view`. `context` is the state every method shares, `settings`
//! what a run is asked to do, `answer` and `overrides` the answer and the user's changes as
//! data; each method (`methods/tog`, `pog`, `gog`, `baseline`) is a folder of its own
//! implementing the trait in `method`, listed in `methods` (a row each in the `registry`).

mod answer;
pub mod beam;
mod context;
pub mod events;
mod extraction;
mod footprint;
mod history;
pub(crate) mod lexical;
mod method;
mod method_id;
mod methods;
mod overrides;
pub(crate) mod parse;
mod registry;
mod run;
mod settings;
pub mod simulate;
mod step;
pub(crate) mod structured;
pub(crate) mod templates;
mod topics;
mod view;

use crate::kg::{EntityMatch, Neighbour, RelationRef};
use crate::llm::{ChatRequest, Completion};
use serde::{Deserialize, Serialize};

pub use answer::{Answer, AnswerSource, GeneratedTriple, MERGED_ROUTES, OTHER_PATHS, PathView};
pub use context::Context;
#[cfg(test)]
pub(crate) use context::test_context;
pub use footprint::{Fact, Footprint, Lookup};
use history::Snapshot;
pub use history::{Abandoned, SetAside};
pub use method::{EditableStep, Machine, Method, MethodView, Tone, ViewItem, ViewLine};
pub use method_id::MethodId;
pub use methods::builtin_prompts;
pub use overrides::Override;
pub use parse::parse_answers;
pub use registry::{MethodEntry, Registry, RegistryError, depth_progress};
pub use settings::{Fallback, GogSettings, PogPruning, PogSettings, PromptLayout, PruneTool, ScSettings, Settings};
pub use structured::{Offer, Reasons, Reply, ReplyShape, json_text};
pub use topics::TopicLinker;
pub use view::progress_line;

/// Something the run needs from the outside world before it can take its next step.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(tag = "need", rename_all = "snake_case")]
pub enum Request {
    Relations {
        entity: String,
    },
    Neighbours {
        entity: String,
        relation: RelationRef,
    },
    FindEntities {
        name: String,
        limit: usize,
    },
    Llm(ChatRequest),
    Embed {
        texts: Vec<String>,
    },
    /// The second call of a reason-first [`Request::Llm`], reading the answer out of its free
    /// reply. Its failure is a result too ([`Response::Failed`]): the free reply is then read
    /// as far as it goes.
    Extraction(ChatRequest),
}

/// The answer to one [`Request`], in the same position of the batch.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(tag = "got", rename_all = "snake_case")]
pub enum Response {
    Relations {
        relations: Vec<RelationRef>,
    },
    Neighbours {
        neighbours: Vec<Neighbour>,
    },
    Entities {
        matches: Vec<EntityMatch>,
    },
    Llm {
        completion: Completion,
    },
    Embeddings {
        vectors: Vec<Vec<f32>>,
    },
    /// A [`Request::Extraction`] that failed: why, as the endpoint said it.
    Failed {
        error: String,
    },
}

impl Response {
    /// This answer given again without asking (from a recording): a completion counts as a
    /// call saved, not made, and what its client noted about the request is not repeated.
    pub fn reused(self) -> Self {
        match self {
            Response::Llm { completion } => Response::Llm {
                completion: Completion { cached: true, latency_ms: 0, notes: Vec::new(), ..completion },
            },
            other => other,
        }
    }
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub enum Poll {
    /// Perform these (independent) requests and feed the results back, in order. An empty
    /// batch is a step that needs nothing from outside.
    Need(Vec<Request>),
    Finished,
}

/// What feeding a batch did.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Fed {
    /// The run took a step: the index of the event it recorded.
    Step(usize),
    /// Some free replies need their answers extracted: the next poll asks for those calls, as
    /// a batch of their own, and the step is taken when they are fed.
    Extracting,
}

impl Fed {
    /// The event recorded, when a step was taken.
    pub fn step(self) -> Option<usize> {
        match self {
            Fed::Step(index) => Some(index),
            Fed::Extracting => None,
        }
    }
}

#[derive(Debug, thiserror::Error, PartialEq)]
pub enum EngineError {
    #[error("no topic entity: give one with --topic, or ask a question that names one")]
    NoTopic,
    #[error("unknown topic entity {name:?}{}", suggest(.suggestions))]
    UnknownTopic { name: String, suggestions: Vec<String> },
    #[error("the question is empty")]
    EmptyQuestion,
    #[error("expected {expected} results for this step, got {got}")]
    BatchMismatch { expected: usize, got: usize },
    #[error("result {index} of this step is a {got}, not the {expected} that was asked for")]
    WrongResponse { index: usize, expected: &'static str, got: String },
    #[error("cannot {what} now: {why}")]
    BadOverride { what: String, why: String },
    #[error("cannot {what}: it would leave nothing to explore (keep another path first)")]
    NothingLeft { what: String },
    #[error("unknown method {name:?} (methods: {known})")]
    UnknownMethod { name: String, known: String },
    #[error("no step {0} to rewind to")]
    BadRewind(usize),
    #[error("the run is finished")]
    Finished,
    #[error("results were fed without a poll asking for them (or after an override changed what is needed)")]
    NotPolled,
    #[error("the plan handed back with the results is not this method's (an engine bug)")]
    ForeignPlan,
}

fn suggest(s: &[String]) -> String {
    if s.is_empty() {
        "; no label in the knowledge graph resembles it".into()
    } else {
        format!("; closest labels: {}", s.join(", "))
    }
}

/// The batch handed out by the last poll, with the method's plan for it.
struct Pending {
    requests: Vec<Request>,
    plan: method::AnyPlan,
}

/// One question being answered by one method.
pub struct Run {
    /// The method's registry entry (its names, its progress line).
    entry: MethodEntry,
    machine: Machine,
    cx: Context,
    pending: Option<Pending>,
    /// The pending batch's free replies, waiting for their extraction calls.
    extracting: Option<extraction::Extracting>,
    /// State after each trace entry, for rewinding.
    history: Vec<Snapshot>,
    abandoned: Vec<Abandoned>,
    /// What the run read of the KG, rewinds included: kept apart from the snapshots, since a
    /// rewound step was still read (see [`Run::footprint`]).
    read: Footprint,
}

/// Who names the topic entities.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(tag = "by", content = "topics", rename_all = "snake_case")]
pub enum Topics {
    /// Names (or ids) the caller gives; each must match a KG label exactly.
    Named(Vec<String>),
    /// Already-linked ids with their labels (e.g. from a dataset).
    Linked(Vec<(String, Option<String>)>),
    /// Ask the model to extract them from the question, then link them by label.
    Extract,
}

impl Run {}
