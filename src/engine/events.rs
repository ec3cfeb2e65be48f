//! The trace: every step the engine took, with its inputs, prompts, raw replies, parsed
//! outcome, lookups and costs; every override and rewind. It is what the CLI prints with
//! `--json`, what the TUI's transcript shows, and what a saved session replays.

use super::beam::{NodeId, Status};
use crate::llm::{ReplyMode, Usage};
use serde::{Deserialize, Serialize};

/// One LLM call made (or answered from the run's memo) during a step.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct CallRecord {
    pub step: String,
    pub prompt: String,
    pub reply: String,
    /// What a reasoning model thought first (never parsed; shown in the call view).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reasoning: Option<String>,
    /// The parse in words, e.g. `location.location.containedby=0.80; …` or `Yes`.
    pub parsed: String,
    pub usage: Usage,
    pub latency_ms: u64,
    pub cached: bool,
    pub temperature: f64,
    /// How the reply was asked for (absent: free text).
    #[serde(default, skip_serializing_if = "ReplyMode::is_free_text")]
    pub mode: ReplyMode,
    /// How the engine read it (absent: its parser read the text).
    #[serde(default, skip_serializing_if = "ReadAs::is_text")]
    pub read: ReadAs,
    /// The reply gave the step nothing it could use, and the step fell back (BM25 ranking,
    /// equal shares, "No", asking again, no answer); the event's notes say how.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub fell_back: bool,
}

/// How a reply was read.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ReadAs {
    /// By the step's parser, as text (free-text mode, or a structured reply that was not JSON
    /// of its shape).
    #[default]
    Text,
    /// As JSON of the requested shape.
    Json,
    /// A reason-first reply that could not be read as text: its answer was extracted by a
    /// second call, as JSON.
    Extracted,
}

impl ReadAs {
    pub fn is_text(&self) -> bool {
        *self == Self::Text
    }
}

/// One knowledge-graph lookup made during a step.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct LookupRecord {
    pub what: String,
    pub results: usize,
}

/// A scoring decision on one beam node.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Decision {
    pub node: NodeId,
    pub shown: String,
    pub score: Option<f64>,
    pub path_score: f64,
    pub status: Status,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum EventKind {
    /// A step of the method: `phase` names it (`relation_search`, `relation_prune`, …).
    Step { phase: String },
    /// A caller changed the engine's state between steps.
    Override { description: String },
    /// A caller went back to the state after step `to`; `discarded` steps were set aside.
    Rewind { to: usize, discarded: usize },
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Event {
    pub index: usize,
    #[serde(flatten)]
    pub kind: EventKind,
    pub depth: u32,
    /// One line for people: what happened.
    pub summary: String,
    /// How long the step's lookups and calls took, as measured by the driver.
    #[serde(default)]
    pub elapsed_ms: u64,
    #[serde(skip_serializing_if = "Vec::is_empty", default)]
    pub calls: Vec<CallRecord>,
    #[serde(skip_serializing_if = "Vec::is_empty", default)]
    pub lookups: Vec<LookupRecord>,
    #[serde(skip_serializing_if = "Vec::is_empty", default)]
    pub decisions: Vec<Decision>,
    /// Parser fallbacks and other things worth knowing.
    #[serde(skip_serializing_if = "Vec::is_empty", default)]
    pub notes: Vec<String>,
}

impl Event {
    /// An event with nothing recorded yet.
    pub fn new(index: usize, kind: EventKind, depth: u32, summary: String) -> Self {
        Self {
            index,
            kind,
            depth,
            summary,
            elapsed_ms: 0,
            calls: Vec::new(),
            lookups: Vec::new(),
            decisions: Vec::new(),
            notes: Vec::new(),
        }
    }

    /// A step of `phase` (empty for the scratch event of an override's work).
    pub fn step(index: usize, phase: &str, depth: u32) -> Self {
        Self::new(index, EventKind::Step { phase: phase.into() }, depth, String::new())
    }

    pub fn phase(&self) -> Option<&str> {
        match &self.kind {
            EventKind::Step { phase } => Some(phase),
            _ => None,
        }
    }
}

/// What a run cost so far.
#[derive(Clone, Copy, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Costs {
    /// LLM calls actually made.
    pub llm_calls: u64,
    /// Identical calls answered from the run's memo instead.
    pub llm_calls_saved: u64,
    /// Batches containing at least one LLM call: the dependent rounds a concurrent driver waits.
    pub llm_rounds: u64,
    pub usage: Usage,
    pub kg_lookups: u64,
}

impl std::ops::AddAssign for Costs {
    fn add_assign(&mut self, other: Costs) {
        self.llm_calls += other.llm_calls;
        self.llm_calls_saved += other.llm_calls_saved;
        self.llm_rounds += other.llm_rounds;
        self.usage += other.usage;
        self.kg_lookups += other.kg_lookups;
    }
}
