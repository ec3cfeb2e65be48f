//! What a run shows its clients between steps: its question, beam, trace, costs, answer and the
//! method's own pane.

use super::beam::Beam;
use super::events::{Costs, Event};
use super::{Abandoned, Answer, Footprint, Method, MethodEntry, MethodView, PathView, Run, Settings};

impl Run {
    pub fn question(&self) -> &str {
        &self.cx.question
    }

    pub fn settings(&self) -> &Settings {
        &self.cx.settings
    }

    pub fn beam(&self) -> &Beam {
        &self.cx.beam
    }

    /// The system message the run's calls are sent with: the system prompt, or under the
    /// shared-prefix layout the shared instructions and examples.
    pub fn system_message(&self) -> String {
        self.cx.system_message()
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

    /// What the run read of the KG (every lookup it was fed, rewound steps too) and the
    /// triples its answer rests on, once it has one.
    pub fn footprint(&self) -> Footprint {
        let mut footprint = self.read.clone();
        if let Some(answer) = &self.cx.answer {
            footprint.rest_on(answer);
        }
        footprint
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
    pub fn generated(&self) -> &[super::answer::GeneratedTriple] {
        self.machine.inner().generated()
    }

    /// The method's own state, when it is an `M`.
    pub fn method_state<M: Method>(&self) -> Option<&M> {
        self.machine.downcast_ref()
    }
}

/// `label progress` for a status line, before a run (depth 0) or during one.
pub fn progress_line(entry: &MethodEntry, settings: &Settings, depth: u32) -> String {
    match (entry.progress)(settings, depth) {
        p if p.is_empty() => entry.label.to_string(),
        p => format!("{} {p}", entry.label),
    }
}
