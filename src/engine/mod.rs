//! The reasoning engine, sans I/O. A [`Run`] never touches the network or the disk: it says
//! what it needs next ([`Run::poll`] → KG lookups and LLM calls), a driver performs them and
//! hands the results back ([`Run::feed`]), and the run takes one step. Between steps a caller
//! may override the last decision, pin or prune a path, force the sufficiency verdict, or rewind
//! to an earlier step. The same seed and the same replies always give the same trace.

mod baseline;
pub mod beam;
pub mod events;
pub mod gog;
pub(crate) mod lexical;
mod method;
pub(crate) mod parse;
pub mod pog;
mod step;
pub(crate) mod structured;
mod tog;
mod topics;

use crate::kg::{EntityMatch, KgProfile, Neighbour, RelationRef, Term};
use crate::llm::{ChatRequest, Completion, Extraction};
use crate::prompts::{Prompt, Prompts, Template};
use beam::{Beam, NodeId, TripleView};
use events::{Costs, Event, EventKind};
use rand::SeedableRng;
use rand_chacha::ChaCha8Rng;
use serde::{Deserialize, Serialize};
use std::sync::Arc;
use structured::Shape;

pub use method::{
    Machine, Method, MethodEntry, MethodId, MethodView, Registry, Tone, ViewItem, ViewLine, depth_progress,
};
pub use parse::parse_answers;

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, clap::ValueEnum)]
#[serde(rename_all = "lowercase")]
pub enum PruneTool {
    /// The LLM scores candidates (the papers' default).
    Llm,
    /// BM25 between the question and candidate labels: no LLM call in pruning.
    Bm25,
    /// Cosine similarity of embeddings from an OpenAI-compatible `/v1/embeddings` endpoint.
    Embedding,
}

/// How a run reasons: the knobs every method shares, then one section per method family.
/// Serialised flat (the sections are flattened), as sessions and eval records store it; a
/// section's keys missing from an older file take their defaults. The defaults are the papers'.
/// `ongraph` builds it from them, the config's `[defaults]` and the command line
/// (`crate::settings::SettingsPatch`).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Settings {
    pub method: MethodId,
    /// Beam width N: candidates kept per prune step (PoG: paths the model picks).
    pub width: usize,
    /// Maximum depth Dmax: hops explored before answering from the model's own knowledge.
    pub depth: u32,
    pub prune: PruneTool,
    /// Score all frontier entities' candidates in one prompt per prune step.
    pub unified: bool,
    /// Score the next hop's relations while the sufficiency check runs: fewer dependent rounds,
    /// up to N extra calls whenever the check says "sufficient" before Dmax.
    pub speculate: bool,
    /// Seeds every random choice (entity sampling, ToG-R, PoG-E): the same seed, the same run.
    pub seed: u64,
    /// The temperature of calls that score or pick candidates (and PoG's analysis, summary and
    /// supplement).
    pub prune_temperature: f64,
    /// The temperature of calls that name topic entities, judge sufficiency or answer.
    pub reason_temperature: f64,
    /// The most tokens a reply may take (a reasoning model gets at least its endpoint's
    /// `reasoning_max_tokens`).
    pub max_tokens: u32,
    /// A relation reaching this many entities or more has them sampled before scoring (PoG:
    /// a node's neighbours in the question subgraph)…
    pub sample_threshold: usize,
    /// …down to this many (seeded).
    pub sample_size: usize,
    #[serde(flatten)]
    pub sc: ScSettings,
    #[serde(flatten)]
    pub pog: PogSettings,
    #[serde(flatten)]
    pub gog: GogSettings,
    /// Ask for replies as JSON of a schema per prompt kind (the prompts then show the JSON
    /// shape); off for models that read only free text. Set from the endpoint's `structured`.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub structured: bool,
    /// What ToG and ToG-R answer from at the maximum depth without a sufficient path. Missing
    /// from files written before it existed, which ran the paper's own-knowledge answer.
    #[serde(default = "Fallback::paper")]
    pub fallback: Fallback,
}

/// ToG's answer at the maximum depth when no check said "sufficient".
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize, clap::ValueEnum)]
#[serde(rename_all = "kebab-case")]
pub enum Fallback {
    /// The triples collected so far first (with the model's knowledge, as ToG-2 and PoG do),
    /// labelled "from partial KG paths"; the model's own knowledge only when they give no
    /// answer.
    #[default]
    PartialPaths,
    /// The model's own knowledge, the paths set aside (the ToG paper's behaviour).
    OwnKnowledge,
}

impl Fallback {
    /// The paper's, for files that predate the setting.
    fn paper() -> Self {
        Self::OwnKnowledge
    }
}

/// Self-consistency (`sc`).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct ScSettings {
    /// How many chain-of-thought samples vote.
    pub samples: usize,
    /// The temperature of the samples (GoG makes its steps' calls at it too).
    pub sample_temperature: f64,
}

impl Default for ScSettings {
    fn default() -> Self {
        Self { samples: 5, sample_temperature: 0.7 }
    }
}

/// Paths-over-Graph (`pog`, `pog-e`).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct PogSettings {
    /// How many paths fuzzy selection keeps (W1).
    pub fuzzy_width: usize,
    /// Which pruning steps run.
    pub pog_pruning: pog::PogPruning,
    /// Condense the selected paths before each sufficiency check.
    pub path_summary: bool,
}

impl Default for PogSettings {
    fn default() -> Self {
        Self { fuzzy_width: 80, pog_pruning: pog::PogPruning::default(), path_summary: true }
    }
}

/// Generate-on-Graph (`gog`).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct GogSettings {
    /// The most Thought / Action / Observation steps before answering from own knowledge.
    pub gog_steps: usize,
    /// How many times `Generate` samples the model (verification runs when more than one).
    pub generate_samples: usize,
    /// How many times `Finish[unknown]` may roll back and expand the last search.
    pub rollbacks: usize,
}

impl Default for GogSettings {
    fn default() -> Self {
        Self { gog_steps: 6, generate_samples: 3, rollbacks: 2 }
    }
}

impl Default for Settings {
    fn default() -> Self {
        Self {
            method: MethodId::TOG,
            width: 3,
            depth: 3,
            prune: PruneTool::Llm,
            unified: false,
            speculate: false,
            seed: 0,
            prune_temperature: 0.4,
            reason_temperature: 0.0,
            max_tokens: 256,
            sample_threshold: 20,
            sample_size: 5,
            sc: ScSettings::default(),
            pog: PogSettings::default(),
            gog: GogSettings::default(),
            structured: false,
            fallback: Fallback::default(),
        }
    }
}

/// Something the run needs from the outside world before it can take its next step.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(tag = "need", rename_all = "snake_case")]
pub enum Request {
    Relations { entity: String },
    Neighbours { entity: String, relation: RelationRef },
    FindEntities { name: String, limit: usize },
    Llm(ChatRequest),
    Embed { texts: Vec<String> },
}

/// The answer to one [`Request`], in the same position of the batch.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(tag = "got", rename_all = "snake_case")]
pub enum Response {
    Relations { relations: Vec<RelationRef> },
    Neighbours { neighbours: Vec<Neighbour> },
    Entities { matches: Vec<EntityMatch> },
    Llm { completion: Completion },
    Embeddings { vectors: Vec<Vec<f32>> },
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

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum AnswerSource {
    /// The model judged the retrieved paths sufficient (or the user forced it).
    KgPaths,
    /// The beam ran dry before the model was satisfied: answered from the partial paths.
    PartialPaths,
    /// Dmax reached without "sufficient": answered from the model's own knowledge.
    OwnKnowledge,
    /// A prompt-only baseline: the KG was never consulted.
    ModelOnly,
    /// No exploration stage was sufficient: answered from every path collected and the
    /// model's own knowledge (PoG).
    CollectedPaths,
    /// The answer rests on a triple the LLM wrote and verification kept, not on the KG (GoG).
    GeneratedTriples,
}

impl AnswerSource {
    pub fn describe(self) -> &'static str {
        match self {
            AnswerSource::KgPaths => "from knowledge-graph paths",
            AnswerSource::PartialPaths => "from partial knowledge-graph paths (the beam ran dry)",
            AnswerSource::OwnKnowledge => "from the LLM's own knowledge (no sufficient KG path within the depth limit)",
            AnswerSource::ModelOnly => "from the LLM alone (a prompt-only baseline: no KG)",
            AnswerSource::CollectedPaths => {
                "partly from the LLM's own knowledge (the collected KG paths were never judged sufficient)"
            }
            AnswerSource::GeneratedTriples => "from LLM-generated triples, verified (not in the KG)",
        }
    }

    /// The source in words with why the run answered so (`why`, from [`Answer::why`]) in
    /// place of the usual reason: `from the LLM's own knowledge (the model finished without a
    /// KG path to its answer)`. Without one, [`AnswerSource::describe`].
    pub fn describe_because(self, why: Option<&str>) -> String {
        let what = match self {
            AnswerSource::OwnKnowledge => "from the LLM's own knowledge",
            AnswerSource::PartialPaths => "from partial knowledge-graph paths",
            _ => return self.describe().to_string(),
        };
        match why {
            Some(why) => format!("{what} ({why})"),
            None => self.describe().to_string(),
        }
    }
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct PathView {
    pub leaf: NodeId,
    pub text: String,
    pub score: f64,
    pub triples: Vec<TripleView>,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Answer {
    /// The answer(s), best first. Empty when the model gave none.
    pub answers: Vec<String>,
    pub source: AnswerSource,
    /// The reply the answer was read from.
    pub reply: String,
    /// The paths the answer rests on (for own-knowledge answers: the paths explored), best path
    /// score first (ties in the method's order; see [`Run::path_order`]); the routes merged
    /// into a beam slot another path holds ([`Beam::merged_into`]) come after the paths on the
    /// beam, best first among themselves.
    pub paths: Vec<PathView>,
    /// Why the answer comes from `source`, when the source alone does not say it truly: what
    /// ended the search for an own-knowledge answer (ToG's depth limit, the beam running dry,
    /// GoG's step limit, GoG's model finishing without a KG path). Absent from older files.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub why: Option<String>,
}

/// How the routes merged into a beam slot another path holds are headed where an answer's
/// paths are listed (they come after the paths on the beam, best first among themselves).
pub const MERGED_ROUTES: &str = "Other routes to entities on these paths (merged into them)";

impl Answer {
    /// Where the answer comes from, in words: the source and why.
    pub fn source_words(&self) -> String {
        self.source.describe_because(self.why.as_deref())
    }
}

/// A change a caller makes between two steps.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(tag = "op", rename_all = "snake_case")]
pub enum Override {
    /// Keep a candidate the last prune dropped (or never scored).
    Keep {
        node: NodeId,
    },
    /// Drop a candidate the last prune kept.
    Drop {
        node: NodeId,
    },
    /// Add a relation under a frontier entity (after relation pruning), or an entity under a
    /// kept relation (after entity pruning), that the model never proposed.
    AddRelation {
        parent: NodeId,
        relation: RelationRef,
    },
    AddEntity {
        parent: NodeId,
        term: Term,
        label: Option<String>,
    },
    /// Keep this path in front of the model whatever later pruning does.
    Pin {
        node: NodeId,
    },
    /// Remove this path (and all below it) from the beam.
    PrunePath {
        node: NodeId,
    },
    /// Skip the model's sufficiency check: answer now from the paths.
    ForceSufficient,
    /// Overrule a "sufficient" verdict (or skip the check): explore one more depth.
    ForceContinue,
    /// GoG: replace the action the model chose (and optionally its thought) before it runs.
    EditAction {
        #[serde(default, skip_serializing_if = "Option::is_none")]
        thought: Option<String>,
        action: String,
    },
}

impl Override {
    /// The change in words, for messages (never Rust's debug text).
    pub fn describe(&self) -> String {
        match self {
            Override::Keep { node } => format!("keep node {node}"),
            Override::Drop { node } => format!("drop node {node}"),
            Override::AddRelation { parent, relation } => {
                format!("add relation {} under node {parent}", relation.relation)
            }
            Override::AddEntity { parent, term, label } => {
                format!("add {} under node {parent}", label.as_deref().unwrap_or(term.as_str()))
            }
            Override::Pin { node } => format!("pin node {node}"),
            Override::PrunePath { node } => format!("prune the path at node {node}"),
            Override::ForceSufficient => "force \"sufficient\"".into(),
            Override::ForceContinue => "force another depth".into(),
            Override::EditAction { action, .. } => format!("edit the action to {action}"),
        }
    }

    /// The change in words with its nodes named as the tree shows them (`keep
    /// location.location.containedby under Canberra`), for messages to people.
    pub fn describe_in(&self, beam: &Beam) -> String {
        let name = |id: NodeId| match beam.get(id) {
            Some(node) => match node.parent.and_then(|p| beam.get(p)) {
                Some(parent) => format!("{} under {}", node.shown(), parent.shown()),
                None => node.shown().to_string(),
            },
            None => format!("node {id} (not in the tree)"),
        };
        match self {
            Override::Keep { node } => format!("keep {}", name(*node)),
            Override::Drop { node } => format!("drop {}", name(*node)),
            Override::AddRelation { parent, relation } => {
                format!("add relation {} under {}", relation.relation, name(*parent))
            }
            Override::AddEntity { parent, term, label } => {
                format!("add {} under {}", label.as_deref().unwrap_or(term.as_str()), name(*parent))
            }
            Override::Pin { node } => format!("pin {}", name(*node)),
            Override::PrunePath { node } => format!("prune the path at {}", name(*node)),
            other => other.describe(),
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

/// The state shared by every method: what the run knows, apart from where its method is.
#[derive(Clone, Debug)]
pub struct Context {
    pub(crate) question: String,
    pub(crate) settings: Settings,
    pub(crate) prompts: Arc<Prompts>,
    pub(crate) profile: KgProfile,
    pub(crate) graph_name: String,
    pub(crate) beam: Beam,
    pub(crate) rng: ChaCha8Rng,
    pub(crate) costs: Costs,
    pub(crate) trace: Vec<Event>,
    pub(crate) answer: Option<Answer>,
}

impl Context {
    /// A call whose reply takes `shape` (asked for as JSON in structured mode).
    pub(crate) fn llm(&self, step: &str, prompt: impl Into<Prompt>, temperature: f64, shape: Shape<'_>) -> Request {
        self.llm_sample(step, prompt, temperature, 0, shape)
    }

    /// `template` rendered for this run: its structured variant (examples in JSON, the reply's
    /// shape shown) when replies are structured and it has one.
    pub(crate) fn render(&self, template: Template, values: &[(&str, &str)]) -> Prompt {
        self.prompts.render_for(template, values, self.settings.structured)
    }

    /// Sample `sample` of a call made several times on purpose (self-consistency).
    ///
    /// With structured replies, a call of a shape that reasons first ([`Shape::reasons_first`])
    /// is asked as free text and carries the extraction that reads a reply it cannot read as
    /// it is; any other is asked as JSON of its shape, shown in the prompt.
    pub(crate) fn llm_sample(
        &self,
        step: &str,
        prompt: impl Into<Prompt>,
        temperature: f64,
        sample: u32,
        shape: Shape<'_>,
    ) -> Request {
        let Prompt { mut text, shows_shape } = prompt.into();
        let (schema, extract) = match self.settings.structured {
            false => (None, None),
            true if shape.reasons_first() && self.reasons_then_formats() => {
                (None, Some(Box::new(self.extraction(&shape.extracted()))))
            }
            true => {
                if !shows_shape {
                    text.push_str(&shape.instruction());
                }
                (Some(shape.reply_schema()), None)
            }
        };
        Request::Llm(ChatRequest {
            step: step.into(),
            system: self.prompts.system(),
            prompt: text,
            temperature,
            max_tokens: self.settings.max_tokens,
            sample,
            schema,
            extract,
        })
    }

    /// Whether reason-first steps are asked as free text and extracted: with structured
    /// replies and prompts that have structured variants (a session saved before these were
    /// asked as JSON, and replays so).
    pub(crate) fn reasons_then_formats(&self) -> bool {
        self.settings.structured && self.prompts.has_structured_variants()
    }

    /// The second call of a reason-first request: the extraction prompt around the free reply,
    /// asking for `shape`.
    fn extraction(&self, shape: &Shape<'_>) -> Extraction {
        const SLOT: &str = "\u{0}reply\u{0}";
        let text = self.prompts.render(Template::Extract, &[("question", &self.question), ("reply", SLOT)]);
        let (before, after) = text.split_once(SLOT).unwrap_or((&text, ""));
        Extraction {
            schema: shape.reply_schema(),
            before: before.to_string(),
            after: format!("{after}{}", shape.instruction()),
        }
    }

    /// A call whose reply is read as an answer: `{name}` in free text, or JSON of the answer
    /// shape in structured mode (read back into braces before the method sees it).
    pub fn ask_for_answer(&self, step: &str, prompt: String) -> Request {
        self.llm(step, prompt, self.settings.reason_temperature, Shape::Answer)
    }

    /// The index the next trace entry will have.
    pub fn next_index(&self) -> usize {
        self.trace.len()
    }
    pub fn question(&self) -> &str {
        &self.question
    }
    pub fn settings(&self) -> &Settings {
        &self.settings
    }
    pub fn prompts(&self) -> &Prompts {
        &self.prompts
    }
    pub fn graph_name(&self) -> &str {
        &self.graph_name
    }
    pub fn beam(&self) -> &Beam {
        &self.beam
    }
    pub fn beam_mut(&mut self) -> &mut Beam {
        &mut self.beam
    }
    /// The run's seeded randomness: the same seed, the same draws.
    pub fn rng(&mut self) -> &mut ChaCha8Rng {
        &mut self.rng
    }
    /// Ends the run with `answer`.
    pub fn finish(&mut self, answer: Answer) {
        self.answer = Some(answer);
    }
}

/// The state right after a trace entry. The trace itself is not copied (it only grows between
/// rewinds, so its first `trace_len` entries are the snapshot's): copying it every step made
/// memory grow with the square of the steps.
#[derive(Clone, Debug)]
struct Snapshot {
    machine: Machine,
    /// The context with an empty trace.
    context: Context,
    trace_len: usize,
}

/// A branch set aside by a rewind: the steps after the rewind point and the beam they built.
#[derive(Clone, Debug, Serialize)]
pub struct Abandoned {
    pub after_step: usize,
    /// Nodes `0..shared` are the ones the branch shares with the run after the rewind; the
    /// branch's own nodes come after.
    pub shared: usize,
    pub events: Vec<Event>,
    pub beam: Beam,
    /// The answer the branch had reached, set aside with it.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub answer: Option<Answer>,
}

impl Abandoned {
    /// What the rewind that made this branch set aside, to say so.
    pub fn set_aside(&self) -> SetAside {
        SetAside::of(&self.events, self.answer.as_ref())
    }
}

/// What going back to an earlier step sets aside: the steps, overrides and rewinds after it,
/// and the answer they had reached.
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct SetAside {
    /// The method's steps, by their summaries.
    pub steps: Vec<String>,
    /// The overrides, in words, in the order they were made.
    pub overrides: Vec<String>,
    /// Earlier rewinds.
    pub rewinds: usize,
    /// The answer reached, when there was one.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub answer: Option<Vec<String>>,
}

impl SetAside {
    fn of(events: &[Event], answer: Option<&Answer>) -> Self {
        let mut out = Self { answer: answer.map(|a| a.answers.clone()), ..Self::default() };
        for e in events {
            match &e.kind {
                EventKind::Step { .. } => out.steps.push(e.summary.clone()),
                EventKind::Override { description } => out.overrides.push(description.clone()),
                EventKind::Rewind { .. } => out.rewinds += 1,
            }
        }
        out
    }

    /// Whether nothing is set aside (going back to the last entry).
    pub fn is_empty(&self) -> bool {
        self.steps.is_empty() && self.overrides.is_empty() && self.rewinds == 0 && self.answer.is_none()
    }

    /// In words, e.g. `1 step, 5 overrides (kept Australia, dropped …, …) and the answer
    /// Australian Labor Party`; `nothing` when nothing is.
    pub fn describe(&self) -> String {
        let count = |n: usize, one: &str, many: &str| format!("{n} {}", if n == 1 { one } else { many });
        let mut parts = Vec::new();
        if !self.steps.is_empty() {
            parts.push(count(self.steps.len(), "step", "steps"));
        }
        if !self.overrides.is_empty() {
            let shown: Vec<&str> = self.overrides.iter().take(3).map(String::as_str).collect();
            let more = if self.overrides.len() > 3 { ", …" } else { "" };
            parts.push(format!(
                "{} ({}{more})",
                count(self.overrides.len(), "override", "overrides"),
                shown.join(", ")
            ));
        }
        if self.rewinds > 0 {
            parts.push(count(self.rewinds, "earlier rewind", "earlier rewinds"));
        }
        if let Some(answers) = &self.answer {
            let answer = if answers.is_empty() { "(none)".to_string() } else { answers.join(" | ") };
            parts.push(format!("the answer {answer}"));
        }
        match parts.len() {
            0 => "nothing".into(),
            1 => parts.remove(0),
            n => {
                let last = parts.remove(n - 1);
                format!("{} and {last}", parts.join(", "))
            }
        }
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
    /// State after each trace entry, for rewinding.
    history: Vec<Snapshot>,
    abandoned: Vec<Abandoned>,
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

impl Run {
    /// A run of `settings.method`, one of ongraph's own methods.
    pub fn new(
        question: &str,
        topics: Topics,
        settings: Settings,
        prompts: Arc<Prompts>,
        profile: KgProfile,
        graph_name: &str,
    ) -> Result<Self, EngineError> {
        Self::new_in(Registry::builtin(), question, topics, settings, prompts, profile, graph_name)
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
        };
        let machine = (entry.start)(&mut cx, topics)?;
        Ok(Self { entry: *entry, machine, cx, pending: None, history: Vec::new(), abandoned: Vec::new() })
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
        let mut responses = responses;
        let reading_notes = step::read_structured(&pending.requests, &mut responses);
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

    /// Lists the answer's paths best first, whatever order the method built them in: the paths
    /// on the beam, then the routes merged into their entities' slots (a stable sort: ties keep
    /// the method's order).
    fn rank_answer_paths(&mut self) {
        let (Some(answer), beam) = (&mut self.cx.answer, &self.cx.beam) else { return };
        let merged = |p: &PathView| beam.merged_into(p.leaf).is_some();
        answer.paths.sort_by(|a, b| merged(a).cmp(&merged(b)).then(b.score.total_cmp(&a.score)));
    }

    fn account(&mut self, requests: &[Request], responses: &[Response]) {
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

    /// A copy of the context without its trace.
    fn context_without_trace(&mut self) -> Context {
        let trace = std::mem::take(&mut self.cx.trace);
        let copy = self.cx.clone();
        self.cx.trace = trace;
        copy
    }

    fn snapshot(&mut self) {
        let context = self.context_without_trace();
        let trace_len = self.cx.trace.len();
        self.history.push(Snapshot { machine: self.machine.clone(), context, trace_len });
    }

    /// Changes the run's state between steps; recorded in the trace. A change the method
    /// refuses changes nothing: a batch handed out stays pending and can still be fed.
    ///
    /// A change that would leave the next step nothing to explore (the last path it would
    /// extend, check or answer from dropped or pruned) is refused too ([`Method::has_frontier`]).
    pub fn apply(&mut self, o: Override) -> Result<usize, EngineError> {
        let before = (self.machine.clone(), self.context_without_trace());
        let could_explore = self.machine.inner().has_frontier(&self.cx);
        let refused = match self.machine.inner_mut().apply(&mut self.cx, &o) {
            Ok(description) if !could_explore || self.machine.inner().has_frontier(&self.cx) => Ok(description),
            Ok(_) => Err(EngineError::NothingLeft { what: o.describe_in(&before.1.beam) }),
            // A refusal names the nodes as people see them (the trace keeps its own wording).
            Err(EngineError::BadOverride { why, .. }) => {
                Err(EngineError::BadOverride { what: o.describe_in(&before.1.beam), why })
            }
            Err(e) => Err(e),
        };
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

    /// Goes back to the state right after trace entry `step`; the later steps are set aside
    /// (see [`Run::abandoned`]) and the run continues from there.
    pub fn rewind(&mut self, step: usize) -> Result<usize, EngineError> {
        let snapshot = self.history.get(step).cloned().ok_or(EngineError::BadRewind(step))?;
        let mut trace = std::mem::take(&mut self.cx.trace);
        let discarded: Vec<Event> = trace.split_off(snapshot.trace_len);
        let discarded_count = discarded.len();
        // The answer goes only if the state gone back to had none.
        let answer = if snapshot.context.answer.is_none() { self.cx.answer.clone() } else { None };
        self.abandoned.push(Abandoned {
            after_step: step,
            shared: snapshot.context.beam.nodes.len(),
            events: discarded,
            beam: self.cx.beam.clone(),
            answer,
        });
        self.machine = snapshot.machine;
        // What was spent on the abandoned branch was spent: costs are not rewound.
        let costs = self.cx.costs;
        self.cx = snapshot.context;
        self.cx.trace = trace;
        self.cx.costs = costs;
        self.history.truncate(step + 1);
        self.pending = None;
        let index = self.cx.trace.len();
        let depth = self.depth();
        // The trace entry keeps its wording: sessions saved before compare their traces with it
        // (`replay --check`); what was set aside in full is `Abandoned::set_aside`.
        let summary = format!("rewound to step {step}; {discarded_count} later steps set aside");
        self.cx.trace.push(Event::new(
            index,
            EventKind::Rewind { to: step, discarded: discarded_count },
            depth,
            summary,
        ));
        self.snapshot();
        Ok(index)
    }

    /// The last override made since the last step, when there is one: the trace entry to
    /// rewind to that takes back that override alone (the step and any earlier overrides
    /// stand), and the override in words. Rewind entries in between are passed over: what is
    /// in the trace before them is still in effect. `None` when a step came after the last
    /// override (going back is then going back a step).
    pub fn last_override(&self) -> Option<(usize, &str)> {
        for e in self.cx.trace.iter().rev() {
            match &e.kind {
                EventKind::Step { .. } => return None,
                EventKind::Override { description } => return Some((e.index.checked_sub(1)?, description)),
                EventKind::Rewind { .. } => {}
            }
        }
        None
    }

    /// What [`Run::rewind`] to `step` would set aside, without going back: to say so (or ask
    /// first) before a rewind discards overrides and steps.
    pub fn rewind_preview(&self, step: usize) -> Result<SetAside, EngineError> {
        let snapshot = self.history.get(step).ok_or(EngineError::BadRewind(step))?;
        let answer = if snapshot.context.answer.is_none() { self.cx.answer.as_ref() } else { None };
        Ok(SetAside::of(self.cx.trace.get(snapshot.trace_len..).unwrap_or_default(), answer))
    }

    /// The corrections (overlay ids) that asserted facts on the paths the answer rests on: each
    /// supporting path down to its first node naming an answer, in the order first met. Empty
    /// before the answer, and for an answer no path names.
    pub fn answer_corrections(&self) -> Vec<u64> {
        let Some(answer) = &self.cx.answer else { return Vec::new() };
        let beam = &self.cx.beam;
        let names: Vec<String> =
            answer.answers.iter().map(|a| a.trim().to_lowercase()).filter(|a| !a.is_empty()).collect();
        let names_an_answer = |n: NodeId| {
            let shown = beam.nodes[n].shown().trim().to_lowercase();
            names.iter().any(|a| *a == shown || (a.chars().count() >= 3 && shown.contains(a.as_str())))
        };
        let mut ids = Vec::new();
        for p in &answer.paths {
            let path = beam.path(p.leaf);
            let Some(end) = path.iter().position(|&n| names_an_answer(n)) else { continue };
            for &n in &path[..=end] {
                if let beam::Provenance::Correction { id } = beam.nodes[n].provenance
                    && !ids.contains(&id)
                {
                    ids.push(id);
                }
            }
        }
        ids
    }

    /// Where the answer comes from, in words, for an answer pane or `ask`: the source
    /// ([`AnswerSource::describe`]) and the corrections it rests on ([`Run::answer_corrections`]).
    /// A correction `generated(id)` says stores a triple the LLM wrote (GoG's, accepted by a
    /// user) is named as that: such an answer rests on the LLM, not on the knowledge graph.
    /// None before the answer.
    pub fn answer_source(&self, generated: impl Fn(u64) -> bool) -> Option<String> {
        let answer = self.cx.answer.as_ref()?;
        let ids = |list: &[u64]| list.iter().map(|id| format!("#{id}")).collect::<Vec<_>>().join(", ");
        let plural = |list: &[u64]| if list.len() == 1 { "correction" } else { "corrections" };
        let (llm, other): (Vec<u64>, Vec<u64>) = self.answer_corrections().into_iter().partition(|&id| generated(id));
        let through =
            if other.is_empty() { String::new() } else { format!(", through {} {}", plural(&other), ids(&other)) };
        Some(if llm.is_empty() {
            format!("{}{through}", answer.source_words())
        } else {
            let triple = if llm.len() == 1 { "an LLM-generated triple" } else { "LLM-generated triples" };
            format!(
                "from {triple} accepted as {} {}, not from the knowledge graph itself{through}",
                plural(&llm),
                ids(&llm)
            )
        })
    }

    pub fn question(&self) -> &str {
        &self.cx.question
    }
    pub fn settings(&self) -> &Settings {
        &self.cx.settings
    }
    pub fn beam(&self) -> &Beam {
        &self.cx.beam
    }
    pub fn trace(&self) -> &[Event] {
        &self.cx.trace
    }
    pub fn costs(&self) -> Costs {
        self.cx.costs
    }
    pub fn answer(&self) -> Option<&Answer> {
        self.cx.answer.as_ref()
    }
    pub fn abandoned(&self) -> &[Abandoned] {
        &self.abandoned
    }
    pub fn is_finished(&self) -> bool {
        self.cx.answer.is_some()
    }
    /// The depth the run is exploring (0 while linking topic entities).
    pub fn depth(&self) -> u32 {
        self.machine.inner().depth()
    }
    /// The phase the next step will perform, e.g. `relation_prune`.
    pub fn next_phase(&self) -> &'static str {
        self.machine.inner().phase()
    }
    /// The method and where it is, for a status line: `ToG d2/3 N=3`, `GoG step 4/6`, `IO`.
    pub fn progress(&self) -> String {
        progress_line(&self.entry, &self.cx.settings, self.depth())
    }
    /// The order of the answer's paths when it is not best path score first: GoG's `newest
    /// first` (it scores no path). `None`: best path score first.
    pub fn path_order(&self) -> Option<&'static str> {
        self.machine.inner().path_order()
    }
    /// The live paths now in front of the model, best first.
    pub fn live_paths(&self) -> Vec<PathView> {
        self.machine.inner().live_paths(&self.cx)
    }
    /// The method's own pane, as data.
    pub fn view(&self) -> MethodView {
        self.machine.inner().view(&self.cx)
    }
    /// Triples the model wrote that the KG does not hold (GoG), with their verdicts.
    pub fn generated(&self) -> &[gog::GeneratedTriple] {
        self.machine.inner().generated()
    }
    /// The method's own state, when it is an `M`.
    pub fn method_state<M: Method>(&self) -> Option<&M> {
        self.machine.downcast_ref()
    }

    /// GoG's Thought / Action / Observation steps so far (empty for other methods).
    pub fn gog_steps(&self) -> &[gog::GogStep] {
        self.method_state::<gog::GogMachine>().map_or(&[], |m| m.steps())
    }

    /// Whether GoG's last thought and action can still be edited (written, not yet run).
    pub fn gog_editable(&self) -> bool {
        self.method_state::<gog::GogMachine>().is_some_and(|m| m.editable())
    }

    /// PoG's question analysis, subgraph sizes and stages so far (None for other methods).
    pub fn pog_report(&self) -> Option<&pog::PogReport> {
        self.method_state::<pog::PogMachine>().map(|m| m.report())
    }
}

/// `label progress` for a status line, before a run (depth 0) or during one.
pub fn progress_line(entry: &MethodEntry, settings: &Settings, depth: u32) -> String {
    match (entry.progress)(settings, depth) {
        p if p.is_empty() => entry.label.to_string(),
        p => format!("{} {p}", entry.label),
    }
}

/// A context for a method's unit tests: default settings and the built-in prompts.
#[cfg(test)]
pub(crate) fn test_context(question: &str, settings: Settings) -> Context {
    Context {
        question: question.into(),
        rng: ChaCha8Rng::seed_from_u64(settings.seed),
        settings,
        prompts: Arc::new(Prompts::load(None).expect("the built-in prompts parse")),
        profile: KgProfile::default(),
        graph_name: "test".into(),
        beam: Beam::default(),
        costs: Costs::default(),
        trace: Vec::new(),
        answer: None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Sessions and eval records store settings flat, in this order; the sections do not show.
    /// Settings saved before `fallback` existed ran the paper's own-knowledge answer, and load
    /// so (a session replays as it ran).
    #[test]
    fn settings_serialise_flat_as_they_always_have() {
        let before_fallback = r#"{"method":"tog","width":3,"depth":3,"prune":"llm","unified":false,"speculate":false,"seed":0,"prune_temperature":0.4,"reason_temperature":0.0,"max_tokens":256,"sample_threshold":20,"sample_size":5,"samples":5,"sample_temperature":0.7,"fuzzy_width":80,"pog_pruning":"fuzzy-precise","path_summary":true,"gog_steps":6,"generate_samples":3,"rollbacks":2}"#;
        let saved = before_fallback.replace('}', r#","fallback":"partial-paths"}"#);
        assert_eq!(serde_json::to_string(&Settings::default()).unwrap(), saved);
        assert_eq!(serde_json::from_str::<Settings>(&saved).unwrap(), Settings::default());
        assert_eq!(
            serde_json::from_str::<Settings>(before_fallback).unwrap(),
            Settings { fallback: Fallback::OwnKnowledge, ..Settings::default() }
        );
        let structured = Settings { structured: true, ..Settings::default() };
        let json = serde_json::to_string(&structured).unwrap();
        assert!(json.ends_with(r#""rollbacks":2,"structured":true,"fallback":"partial-paths"}"#), "{json}");
        assert_eq!(serde_json::from_str::<Settings>(&json).unwrap(), structured);
    }

    /// Settings saved before a method existed lack its keys: they load with its defaults.
    #[test]
    fn settings_without_a_sections_keys_load_with_its_defaults() {
        let old = r#"{"method":"tog","width":2,"depth":3,"prune":"bm25","unified":false,"speculate":false,"seed":0,"prune_temperature":0.4,"reason_temperature":0.0,"max_tokens":256,"sample_threshold":20,"sample_size":5,"fuzzy_width":10}"#;
        let expected = Settings {
            width: 2,
            prune: PruneTool::Bm25,
            pog: PogSettings { fuzzy_width: 10, ..PogSettings::default() },
            fallback: Fallback::OwnKnowledge,
            ..Settings::default()
        };
        assert_eq!(serde_json::from_str::<Settings>(old).unwrap(), expected);
    }
}
