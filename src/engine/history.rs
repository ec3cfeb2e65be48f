//! Going back: the state after every trace entry, rewinds, and the branches they set aside.

use super::beam::Beam;
use super::events::{Event, EventKind};
use super::{Answer, Context, EngineError, Machine, Run};
use serde::Serialize;

impl Run {
    /// A copy of the context without its trace.
    pub(super) fn context_without_trace(&mut self) -> Context {
        let trace = std::mem::take(&mut self.cx.trace);
        let copy = self.cx.clone();
        self.cx.trace = trace;
        copy
    }

    pub(super) fn snapshot(&mut self) {
        let context = self.context_without_trace();
        let trace_len = self.cx.trace.len();
        self.history.push(Snapshot { machine: self.machine.clone(), context, trace_len });
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
        self.extracting = None;
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
}

/// The state right after a trace entry. The trace itself is not copied (it only grows between
/// rewinds, so its first `trace_len` entries are the snapshot's): copying it every step made
/// memory grow with the square of the steps.
#[derive(Clone, Debug)]
pub(super) struct Snapshot {
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
