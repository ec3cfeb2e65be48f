//! What every reasoning method answers to (the methods ongraph ships are listed in
//! `methods/mod.rs`, gathered by the registry in `registry.rs`).
//!
//! A method is a state machine over the shared [`Context`]: asked for its next batch it returns
//! the requests together with a [`Method::Plan`] saying what each request is for; the [`Run`]
//! keeps the plan beside the pending batch and hands it back with the responses, so `absorb`
//! never has to rebuild the list `next` built. Methods are cloned for rewinding, so their state
//! is plain data; large parts they share between steps belong behind an `Arc`.
//!
//! Adding a method is a folder under `methods/` implementing [`Method`], its prompt files, and
//! in `methods/mod.rs` its `mod` line and one [`MethodEntry`] in
//! [`BUILTIN`](super::methods::BUILTIN) (or, from outside the crate, [`Registry::with`]). The
//! entry lists the prompt templates the method renders and the reply shapes it defines: the
//! registry gathers them, so prompts directories, saved sessions and structured replies know
//! them without a line elsewhere.
//!
//! [`Run`]: super::Run
//! [`MethodEntry`]: super::MethodEntry
//! [`Registry::with`]: super::Registry::with

use super::answer::GeneratedTriple;
use super::beam::{NodeId, Status};
use super::events::Event;
use super::{Context, EngineError, Override, PathView, Request, Response};
use serde::Serialize;
use std::any::Any;
use std::fmt;

/// A reasoning method: the calls the engine makes on it between polls and feeds.
pub trait Method: Clone + fmt::Debug + Send + Sync + 'static {
    /// What a batch of requests is for (which node each lookup expands, which candidates each
    /// call scores), kept by the run until the batch's responses come back.
    type Plan: fmt::Debug + Send + Sync + 'static;

    /// The requests of the next step and their plan. An empty batch is a step that needs
    /// nothing from outside.
    fn next(&mut self, cx: &mut Context) -> (Vec<Request>, Self::Plan);

    /// Takes the step: reads `responses` (in the order of `requests`) against `plan` and
    /// returns the event to record. On an error the run restores the state it had before.
    fn absorb(
        &mut self,
        cx: &mut Context,
        plan: &Self::Plan,
        requests: &[Request],
        responses: Vec<Response>,
    ) -> Result<Event, EngineError>;

    /// The phase the next step performs, e.g. `relation_prune`.
    fn phase(&self) -> &'static str;

    /// The depth (hop, or step) being explored; 0 before exploring.
    fn depth(&self) -> u32 {
        0
    }

    /// The paths now in front of the model, best first.
    fn live_paths(&self, _cx: &Context) -> Vec<PathView> {
        Vec::new()
    }

    /// Triples the model wrote that the KG does not hold.
    fn generated(&self) -> &[GeneratedTriple] {
        &[]
    }

    /// Whether the next step still has something to explore: a path to extend, to check or to
    /// answer from. A change between steps that would take the last of it away is refused
    /// (the run asks before and after the change). By default, always.
    fn has_frontier(&self, _cx: &Context) -> bool {
        true
    }

    /// The order of the answer's paths when the method defines one other than best path score
    /// first (the run sorts them by score; ties keep the method's order), in words for people.
    fn path_order(&self) -> Option<&'static str> {
        None
    }

    /// Changes the method's state between steps; returns the change in words for the trace.
    /// ongraph's methods refuse every change once the run has answered, but forcing it to go
    /// on where the method can (a change could no longer change the answer).
    fn apply(&mut self, _cx: &mut Context, o: &Override) -> Result<String, EngineError> {
        Err(EngineError::BadOverride { what: o.describe(), why: "this method takes no changes between steps".into() })
    }

    /// What the method shows of itself: by default, the live paths.
    fn view(&self, cx: &Context) -> MethodView {
        MethodView::paths("Paths in front of the model", cx, self.live_paths(cx))
    }
}

/// A method's own pane, as data: the terminal UI draws it without knowing which method made
/// it.
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct MethodView {
    /// What the pane shows, e.g. `GoG: thought · action · observation`.
    pub title: String,
    /// Facts about the whole run shown beside the list (PoG's analysis and stages).
    pub report: Vec<ViewLine>,
    /// The rows a user moves through: paths, or steps.
    pub items: Vec<ViewItem>,
    /// What to say when there are no items.
    pub empty: String,
    /// The rows are steps the user may edit before they run (rather than paths to show).
    pub edits_steps: bool,
}

/// One row of a [`MethodView`].
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct ViewItem {
    /// The row, on one line.
    pub row: String,
    /// The beam status of the row's node, when it is one.
    pub status: Option<Status>,
    /// The beam node the row stands for (a path's leaf), to show in the tree.
    pub node: Option<NodeId>,
    /// The row in full, shown beside the list when any row has some.
    pub detail: Vec<ViewLine>,
    /// Written by the model and not yet run: the user may edit it first.
    pub edit: Option<EditableStep>,
}

/// A step the model wrote that has not run yet: what the user may change before it runs (the
/// change is an [`Override::EditAction`](super::Override::EditAction), which the method
/// checks).
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct EditableStep {
    /// Who wrote it, as people know the method (`GoG`).
    pub method: String,
    pub thought: String,
    pub action: String,
    /// The actions the method takes, in words (`Search[e1 | e2] or Finish[a1 | a2]`).
    pub actions: String,
}

/// A line of a view: an optional label (drawn bold), text, and a tone.
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct ViewLine {
    pub label: String,
    pub text: String,
    pub tone: Tone,
}

#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Tone {
    #[default]
    Plain,
    /// Secondary detail.
    Dim,
    /// What the user should see first.
    Accent,
}

impl ViewLine {
    pub fn plain(text: impl Into<String>) -> Self {
        Self { text: text.into(), ..Self::default() }
    }
    pub fn dim(text: impl Into<String>) -> Self {
        Self { text: text.into(), tone: Tone::Dim, ..Self::default() }
    }
    pub fn accent(text: impl Into<String>) -> Self {
        Self { text: text.into(), tone: Tone::Accent, ..Self::default() }
    }
    pub fn labelled(label: impl Into<String>, text: impl Into<String>) -> Self {
        Self { label: label.into(), text: text.into(), tone: Tone::Plain }
    }
}

impl MethodView {
    /// A list of paths with their scores and where pruning left them.
    pub fn paths(title: &str, cx: &Context, paths: Vec<PathView>) -> Self {
        let items = paths
            .into_iter()
            .map(|p| ViewItem {
                row: format!("[{:.2}] {}", p.score, p.text),
                status: Some(cx.beam.get(p.leaf).map_or(Status::Candidate, |n| n.shown_status())),
                node: Some(p.leaf),
                ..ViewItem::default()
            })
            .collect();
        Self {
            title: title.into(),
            report: Vec::new(),
            items,
            empty: "No path in front of the model yet.".into(),
            edits_steps: false,
        }
    }
}

/// A method's state, type-erased so a run can hold any method (and clone it for rewinding).
pub struct Machine(Box<dyn Erased>);

impl Machine {
    pub fn new<M: Method>(method: M) -> Self {
        Self(Box::new(method))
    }

    /// The method's own state, when it is an `M` (for method-specific inspection).
    pub fn downcast_ref<M: Method>(&self) -> Option<&M> {
        self.0.as_any().downcast_ref()
    }

    pub(crate) fn inner(&self) -> &dyn Erased {
        &*self.0
    }

    pub(crate) fn inner_mut(&mut self) -> &mut dyn Erased {
        &mut *self.0
    }
}

impl Clone for Machine {
    fn clone(&self) -> Self {
        Self(self.0.clone_box())
    }
}

impl fmt::Debug for Machine {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.0.fmt(f)
    }
}

/// A plan of any method, as the run keeps it.
pub(crate) type AnyPlan = Box<dyn Any + Send + Sync>;

/// [`Method`] with its plan type erased: what a run calls.
pub(crate) trait Erased: fmt::Debug + Send + Sync {
    fn next(&mut self, cx: &mut Context) -> (Vec<Request>, AnyPlan);
    fn absorb(
        &mut self,
        cx: &mut Context,
        plan: &AnyPlan,
        requests: &[Request],
        responses: Vec<Response>,
    ) -> Result<Event, EngineError>;
    fn phase(&self) -> &'static str;
    fn depth(&self) -> u32;
    fn live_paths(&self, cx: &Context) -> Vec<PathView>;
    fn generated(&self) -> &[GeneratedTriple];
    fn has_frontier(&self, cx: &Context) -> bool;
    fn path_order(&self) -> Option<&'static str>;
    fn apply(&mut self, cx: &mut Context, o: &Override) -> Result<String, EngineError>;
    fn view(&self, cx: &Context) -> MethodView;
    fn clone_box(&self) -> Box<dyn Erased>;
    fn as_any(&self) -> &dyn Any;
}

impl<M: Method> Erased for M {
    fn next(&mut self, cx: &mut Context) -> (Vec<Request>, AnyPlan) {
        let (requests, plan) = Method::next(self, cx);
        (requests, Box::new(plan))
    }
    fn absorb(
        &mut self,
        cx: &mut Context,
        plan: &AnyPlan,
        requests: &[Request],
        responses: Vec<Response>,
    ) -> Result<Event, EngineError> {
        // The run only ever hands back the plan this method made.
        let plan = plan.downcast_ref::<M::Plan>().ok_or(EngineError::ForeignPlan)?;
        Method::absorb(self, cx, plan, requests, responses)
    }
    fn phase(&self) -> &'static str {
        Method::phase(self)
    }
    fn depth(&self) -> u32 {
        Method::depth(self)
    }
    fn live_paths(&self, cx: &Context) -> Vec<PathView> {
        Method::live_paths(self, cx)
    }
    fn generated(&self) -> &[GeneratedTriple] {
        Method::generated(self)
    }
    fn has_frontier(&self, cx: &Context) -> bool {
        Method::has_frontier(self, cx)
    }
    fn path_order(&self) -> Option<&'static str> {
        Method::path_order(self)
    }
    fn apply(&mut self, cx: &mut Context, o: &Override) -> Result<String, EngineError> {
        Method::apply(self, cx, o)
    }
    fn view(&self, cx: &Context) -> MethodView {
        Method::view(self, cx)
    }
    fn clone_box(&self) -> Box<dyn Erased> {
        Box::new(self.clone())
    }
    fn as_any(&self) -> &dyn Any {
        self
    }
}
