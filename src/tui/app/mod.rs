//! The terminal UI's state and its one `update` function: a message in, state changed, effects
//! out. No I/O happens here (the effects executor performs KG lookups, LLM calls and writes),
//! so every interaction is unit-testable and a saved session can drive it.
//!
//! The UI also records the sitting as it goes (a [`Session`]: every batch of requests with the
//! answers fed back, every override and rewind, the corrections made), and replays one: a
//! replayed step is answered from the recording, synchronously, with no effect at all.

use super::component::Component;
use super::component::Outcome;
use super::keymap::{Command, Keymap, Pane};
use super::modal::{Form, FormKind, Palette, PaletteRow, PickItem, PickValue, Picker, Purpose, Search, fuzzy_rank};
use super::theme::Theme;
use crate::engine::beam::{Beam, BeamNode, NodeId, NodeKind};
use crate::engine::{Fed, MethodId, Override, Poll, Request, Response, Run, Settings, Topics};
use crate::kg::{KgProfile, Term};
use crate::overlay::{Correction, CorrectionContext, Draft, Op};
use crate::prompts::Prompts;
use crate::safe_text::one_line;
use crate::session::{Moment, Player, Session, SessionCorrection};
use crossterm::event::{KeyCode, KeyEvent, KeyModifiers, MouseButton, MouseEvent, MouseEventKind};
use ratatui::layout::{Position, Rect};
use ratatui_textarea::TextArea;
use std::collections::HashSet;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Instant;

mod commands;
mod corrections;
mod impact;
mod input;
mod replay;
mod replies;
mod run;
mod tree;

pub use tree::beam_in;

/// Everything that can happen to the UI.
#[derive(Debug)]
pub enum Action {
    Key(KeyEvent),
    Mouse(MouseEvent),
    /// The executor finished the requests of step generation `generation`.
    Performed {
        generation: u64,
        result: Result<Vec<Response>, String>,
        elapsed_ms: u64,
    },
    /// The executor answered a lookup for a picker or a search (made at `generation`).
    Looked {
        token: u64,
        result: Result<Vec<Response>, String>,
    },
    /// The executor stored corrections (their ids), or could not.
    Corrected(Result<Vec<u64>, String>),
    /// A correction was undone.
    Undone(Result<u64, String>),
    /// A teammate's correction was approved (`true`) or rejected.
    Reviewed(Result<(u64, bool), String>),
    /// What the per-step sync with the shared set has to say (said once, not at every step).
    Shared(super::TeamNote),
    /// The overlay's corrections for this KG.
    Listed(Result<Vec<Correction>, String>),
    /// The kept runs corrections touch (`Effect::Impact`).
    Impacts(Result<Vec<crate::workspace::ImpactOf>, String>),
    /// The kept runs a correction touches, re-run with it applied (`Effect::RerunImpact`).
    Reran(Result<crate::workspace::RerunOf, String>),
    /// Before a step, the executor found the store changed by another process (`ongraph fix`,
    /// a second UI): the step runs through these corrections (undone ones too). `Err`: they
    /// could not be read again, and the step runs through those read before.
    CorrectionsChanged(Result<Vec<Correction>, String>),
    Saved(Result<PathBuf, String>),
    Exported(Result<(PathBuf, usize), String>),
    /// A session file was opened from the palette.
    Opened(Result<Box<Session>, String>),
    Resize(u16, u16),
    /// Time passed (the spinner turns).
    Tick,
    /// The wake-up asked for with `Effect::Wake` (typing paused: search now).
    Woke {
        token: u64,
    },
}

/// What the UI asks the executor to do.
#[derive(Debug, PartialEq)]
pub enum Effect {
    /// Perform a step's requests; answer with `Action::Performed` for this generation. An
    /// error is said as `method`'s (the run's), whatever method's step names the calls use.
    Perform {
        generation: u64,
        requests: Vec<Request>,
        method: crate::engine::MethodId,
    },
    /// Look things up for a picker or a search; answer with `Action::Looked` and this token.
    Lookup {
        token: u64,
        requests: Vec<Request>,
    },
    /// Store these corrections durably, then see the KG through them (`Action::Corrected`).
    Correct {
        drafts: Vec<Draft>,
    },
    Undo {
        id: u64,
    },
    /// Approve (or reject) a teammate's correction: a review record, queued to be shared.
    Review {
        id: u64,
        approve: bool,
    },
    ListCorrections,
    /// Find the kept runs these corrections (id and operation) touch: `Action::Impacts`.
    Impact {
        corrections: Vec<(u64, Op)>,
    },
    /// Re-run the kept runs `correction` touches, with it applied: `Action::Reran`.
    RerunImpact {
        correction: Box<Correction>,
    },
    /// Write the session (to `path`, or a new file in the sessions directory).
    Save {
        path: Option<PathBuf>,
        session: Box<Session>,
    },
    Export {
        path: Option<PathBuf>,
    },
    Open {
        path: PathBuf,
    },
    /// Remember an asked question in the history file.
    Remember {
        question: String,
    },
    /// Answer with `Action::Woke` after `after_ms` (debounces lookups made as the user types).
    Wake {
        token: u64,
        after_ms: u64,
    },
}

/// An answer to compare with after a re-ask.
#[derive(Clone, Debug, PartialEq)]
pub struct Earlier {
    /// The question it answered: a new question has nothing to compare with.
    pub question: String,
    pub answers: Vec<String>,
    pub paths: Vec<String>,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Focus {
    Question,
    Tree,
    Inspector,
    Transcript,
    Method,
    Answer,
    Corrections,
    Messages,
}

impl Focus {
    pub fn pane(self) -> Pane {
        match self {
            Focus::Question | Focus::Tree => Pane::Tree,
            Focus::Inspector => Pane::Inspector,
            Focus::Transcript => Pane::Transcript,
            Focus::Method => Pane::Method,
            Focus::Answer => Pane::Answer,
            Focus::Corrections => Pane::Corrections,
            Focus::Messages => Pane::Messages,
        }
    }

    /// The bottom pane this focus shows, if it is one.
    pub fn bottom(self) -> Option<Bottom> {
        match self {
            Focus::Transcript => Some(Bottom::Transcript),
            Focus::Method => Some(Bottom::Method),
            Focus::Answer => Some(Bottom::Answer),
            Focus::Corrections => Some(Bottom::Corrections),
            Focus::Messages => Some(Bottom::Messages),
            Focus::Question | Focus::Tree | Focus::Inspector => None,
        }
    }
}

/// One message of the sitting, kept whole for the messages pane.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Note {
    pub error: bool,
    pub text: String,
}

/// Which pane the bottom of the screen shows.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Bottom {
    Transcript,
    /// The method's own view: PoG's analysis and stages, GoG's timeline, ToG's live paths.
    Method,
    Answer,
    Corrections,
    /// Every message of the sitting, in full.
    Messages,
}

impl Bottom {
    /// The focus that works this pane.
    pub fn focus(self) -> Focus {
        match self {
            Bottom::Transcript => Focus::Transcript,
            Bottom::Method => Focus::Method,
            Bottom::Answer => Focus::Answer,
            Bottom::Corrections => Focus::Corrections,
            Bottom::Messages => Focus::Messages,
        }
    }
}

/// A beam node as the tree shows it: in the current beam, or in a branch set aside by a rewind.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct NodeRef {
    /// `None`: the current beam; `Some(i)`: the run's `i`-th abandoned branch.
    pub branch: Option<usize>,
    pub id: NodeId,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Row {
    pub node: NodeRef,
    pub indent: usize,
}

/// A replay in progress.
#[derive(Clone, Debug)]
pub struct Replay {
    pub session: Arc<Session>,
    /// The recorded run now replayed, if the current question was recorded.
    pub run: Option<usize>,
    /// Follows that run's recording.
    pub player: Option<Player>,
}

use super::layout::Areas;

/// The question the empty beam pane suggests on the demo KG.
pub const DEMO_SUGGESTION: &str = "What is the majority party now in the country where Canberra is located?";

/// A question about `entity` through `relation` (as a KG shows it: `people.person.spouse`,
/// `spouse`), to suggest on a KG other than the demo's.
pub fn suggestion_from(entity: &str, relation: &str) -> String {
    let last = relation.rsplit(['.', '/', '#', ':']).next().unwrap_or(relation).replace('_', " ");
    // "What are the parents of …", not "What is the parents of …" (found by a trial).
    let plural = last.ends_with('s') && !last.ends_with("ss") && !last.ends_with("us") && !last.ends_with("is");
    format!("What {} the {last} of {entity}?", if plural { "are" } else { "is" })
}

pub struct App {
    pub input: TextArea<'static>,
    /// Questions asked before, oldest first; `history_at` browses them.
    pub history: Vec<String>,
    history_at: Option<usize>,
    pub focus: Focus,
    pub bottom: Bottom,
    pub run: Option<Run>,
    /// Bumped whenever results in flight must be ignored (cancel, override, rewind, new run).
    pub generation: u64,
    pub in_flight: Option<Instant>,
    /// The action being handled selected a node itself: the selection is not re-anchored.
    selection_moved: bool,
    /// The last lookup's token: a picker or a search takes only the answer it waits for.
    lookups: u64,
    /// The requests in flight, recorded with their answers when they come back.
    asked: Option<Vec<Request>>,
    /// Keep stepping until the answer (`r`), instead of one step at a time (`n`).
    pub auto: bool,
    /// Index into the visible rows of the beam tree.
    pub selected: usize,
    pub collapsed: HashSet<NodeRef>,
    /// Abandoned branches before this index are cleared from view.
    pub abandoned_from: usize,
    pub transcript_at: usize,
    pub method_at: usize,
    pub answer_at: usize,
    pub corrections_at: usize,
    /// The latest message, on the status bar.
    pub message: Option<String>,
    /// Every message of the sitting, oldest first (the messages pane).
    pub messages: Vec<Note>,
    pub messages_at: usize,
    /// How far the inspector is scrolled (lines from its top).
    pub inspector_at: usize,
    /// Overrides or rewinds made since the session was last saved: quitting asks first.
    pub unsaved: bool,
    /// A session to open once the unsaved steering is saved (not if the save fails).
    open_after_save: Option<PathBuf>,
    /// `q` was pressed once with unsaved steering: the next `q` quits.
    quit_armed: bool,
    pub quit: bool,
    /// Ctrl-Z: the loop gives the terminal back and stops the process until `fg`.
    pub suspend: bool,
    pub settings: Settings,
    pub prompts: Arc<Prompts>,
    pub profile: KgProfile,
    pub kg_name: String,
    /// The question the empty beam pane suggests: the demo's, or one the KG can answer.
    pub suggestion: String,
    pub llm_name: String,
    pub keymap: Keymap,
    pub themes: Vec<Theme>,
    /// Why a user's theme file did not load (its parse error), to say when it is asked for.
    pub theme_problems: Vec<String>,
    pub theme: Theme,
    pub form: Option<Form>,
    pub picker: Option<Picker>,
    pub palette: Option<Palette>,
    pub search: Option<Search>,
    pub help: bool,
    pub help_scroll: u16,
    /// The answer before the last re-ask, to show what changed.
    pub earlier: Option<Earlier>,
    /// The answer's paths `t` cycles through, and where it is.
    pub traced: Option<usize>,
    /// Who corrections are recorded as made by.
    pub author: String,
    /// The overlay's corrections for this KG (shown, undoable).
    pub corrections: Vec<Correction>,
    /// The graphs of the shared sets that apply only approved corrections (`apply =
    /// "approved"`): their teammates' corrections wait for approval.
    pub held_sets: Vec<String>,
    /// What each correction touches of the kept runs, as last read.
    pub impacts: std::collections::BTreeMap<u64, crate::workspace::ImpactOf>,
    /// Corrections just made whose impact is to be said when it is known.
    announce: std::collections::BTreeMap<u64, String>,
    /// The correction `I` asked the list of, while it is read.
    show_impact_of: Option<u64>,
    /// While `R`'s re-runs are made: the focus when it was pressed (the answer moves it to the
    /// messages only if the user has not moved on meanwhile).
    rerunning: Option<Focus>,
    /// The shared set's server did not answer the last per-step sync (the status bar says so
    /// until it does).
    pub team_offline: bool,
    /// Drafts sent to the store, recorded in the session once it gives them ids: one entry per
    /// `Effect::Correct` not yet answered (the executor answers them in order).
    pending_drafts: std::collections::VecDeque<Vec<Draft>>,
    /// This sitting, as it will be saved.
    pub recording: Session,
    pub replay: Option<Replay>,
    /// The executor can reach a KG and a model (false in an offline replay).
    pub live: bool,
    pub size: (u16, u16),
}

impl App {
    pub fn new(settings: Settings, prompts: Arc<Prompts>, profile: KgProfile, kg_name: &str, llm_name: &str) -> Self {
        let mut theme = super::theme::load_all(None).0.into_iter().next().unwrap_or_else(Theme::fallback);
        theme.plain = std::env::var_os("NO_COLOR").is_some_and(|v| !v.is_empty());
        let recording = Session::new(kg_name, llm_name, settings.clone(), profile.clone(), &prompts);
        let mut app = Self {
            input: TextArea::default(),
            history: Vec::new(),
            history_at: None,
            focus: Focus::Question,
            bottom: Bottom::Transcript,
            run: None,
            generation: 0,
            in_flight: None,
            asked: None,
            lookups: 0,
            selection_moved: false,
            auto: false,
            selected: 0,
            collapsed: HashSet::new(),
            abandoned_from: 0,
            transcript_at: 0,
            method_at: 0,
            answer_at: 0,
            corrections_at: 0,
            message: None,
            messages: Vec::new(),
            messages_at: 0,
            inspector_at: 0,
            unsaved: false,
            quit_armed: false,
            open_after_save: None,
            quit: false,
            suspend: false,
            settings,
            prompts,
            profile,
            kg_name: kg_name.to_string(),
            suggestion: DEMO_SUGGESTION.to_string(),
            llm_name: llm_name.to_string(),
            keymap: Keymap::default(),
            themes: Vec::new(),
            theme_problems: Vec::new(),
            theme,
            form: None,
            picker: None,
            palette: None,
            search: None,
            help: false,
            help_scroll: 0,
            earlier: None,
            traced: None,
            author: crate::overlay::default_author(None),
            corrections: Vec::new(),
            held_sets: Vec::new(),
            impacts: Default::default(),
            announce: Default::default(),
            show_impact_of: None,
            rerunning: None,
            team_offline: false,
            pending_drafts: std::collections::VecDeque::new(),
            recording,
            replay: None,
            live: true,
            size: (120, 40),
        };
        app.reset_input("");
        app
    }

    /// An app replaying `session`: its settings, prompts and first question; `live` when a KG
    /// and a model are at hand to branch off the recording.
    pub fn replaying(session: Session, live: bool) -> Result<Self, crate::session::SessionError> {
        let prompts = Arc::new(session.prompts()?);
        let mut app = Self::new(
            session.settings.clone(),
            prompts,
            session.profile.clone(),
            &session.kg,
            // The tree's title says it is a replay.
            &session.llm,
        );
        app.live = live;
        app.corrections = corrections_as_of(&session, 0);
        let first = session.runs.first().map(|r| r.question.clone()).unwrap_or_default();
        app.replay = Some(Replay { session: Arc::new(session), run: None, player: None });
        app.reset_input(&first);
        Ok(app)
    }

    /// Why theme `name` is not there: the themes that are, and any theme file that did not load.
    fn no_theme(&self, themes: &[Theme], name: &str) -> String {
        let known = themes.iter().map(|t| t.name.as_str()).collect::<Vec<_>>().join(", ");
        let broken: String = self.theme_problems.iter().map(|p| format!("; not loaded: {p}")).collect();
        format!("no theme {name:?} (themes: {known}{broken})")
    }

    pub fn with_themes(mut self, themes: Vec<Theme>, name: Option<&str>) -> Result<Self, String> {
        let plain = self.theme.plain;
        if let Some(name) = name {
            self.theme = themes.iter().find(|t| t.name == name).cloned().ok_or_else(|| self.no_theme(&themes, name))?;
        } else if let Some(first) = themes.first() {
            self.theme = first.clone();
        }
        self.theme.plain = plain;
        self.themes = themes;
        Ok(self)
    }

    /// A lookup for a picker or the search; its token is what the answer will carry.
    fn lookup(&mut self, requests: Vec<Request>) -> (u64, Effect) {
        self.lookups += 1;
        (self.lookups, Effect::Lookup { token: self.lookups, requests })
    }

    /// Says `text` on the status bar and keeps it in the messages pane.
    pub fn say(&mut self, text: impl Into<String>) {
        let text = text.into();
        self.note(Note { error: false, text: text.clone() });
        self.message = Some(text);
    }

    /// Keeps a message for the messages pane, whose selection follows it from the newest.
    fn note(&mut self, note: Note) {
        let following = self.messages_at + 1 >= self.messages.len();
        self.messages.push(note);
        if following {
            self.messages_at = self.messages.len() - 1;
        }
    }

    /// Says what went wrong: on the status bar, in the messages pane and in the log.
    pub fn fail(&mut self, text: impl Into<String>) {
        let text = text.into();
        tracing::warn!("{text}");
        self.note(Note { error: true, text: text.clone() });
        self.message = Some(text);
    }

    pub fn set_plain(&mut self, plain: bool) {
        self.theme.plain = plain;
    }

    /// What to press next once a question is asked, in the keys bound now.
    pub(super) fn ready(&self) -> String {
        let k = |c| self.keymap.hint(c);
        format!("{}: one step · {}: run to the answer · {}: keys", k(Command::Step), k(Command::Run), k(Command::Help))
    }

    /// Where the panes are at the current size.
    pub fn areas(&self) -> Areas {
        super::layout::layout(Rect::new(0, 0, self.size.0, self.size.1), self.input.lines().len())
    }
}

pub use super::component::window;

/// The one place the UI's state changes.
pub fn update(app: &mut App, action: Action) -> Vec<Effect> {
    if matches!(action, Action::Tick) {
        return Vec::new();
    }
    // The selection follows its node, not its row number, when the tree changes under it.
    let (anchor, shape) = (app.selected_ref(), app.tree_shape());
    app.selection_moved = false;
    let effects = handle(app, action);
    let now = app.tree_shape();
    // Unless the action chose a node itself (`t`, a search, a path shown in the tree).
    if now != shape && now.run == shape.run && !app.selection_moved {
        app.select(anchor);
    }
    if app.selected_ref() != anchor {
        app.inspector_at = 0;
    }
    effects
}

/// What changes the tree's rows: when it is the same, a row number still means the same node.
#[derive(Clone, Copy, PartialEq, Eq)]
struct TreeShape {
    /// Which question's run (the rows of two runs are unrelated).
    run: usize,
    events: usize,
    nodes: usize,
    abandoned: usize,
    abandoned_from: usize,
    collapsed: usize,
}

impl App {
    fn tree_shape(&self) -> TreeShape {
        TreeShape {
            run: self.recording.runs.len(),
            events: self.run.as_ref().map_or(0, |r| r.trace().len()),
            nodes: self.run.as_ref().map_or(0, |r| r.beam().nodes.len()),
            abandoned: self.run.as_ref().map_or(0, |r| r.abandoned().len()),
            abandoned_from: self.abandoned_from,
            collapsed: self.collapsed.len(),
        }
    }

    /// Selects `node`'s row if it is shown; else keeps the row number, within the rows.
    fn select(&mut self, node: Option<NodeRef>) {
        let rows = self.visible_rows();
        match node.and_then(|n| rows.iter().position(|r| r.node == n)) {
            Some(i) => self.selected = i,
            None => self.selected = self.selected.min(rows.len().saturating_sub(1)),
        }
    }
}

/// `update` for one action, before the selection is re-anchored: the executor's replies are
/// `replies`', the keys and the mouse `commands`'.
fn handle(app: &mut App, action: Action) -> Vec<Effect> {
    match action {
        Action::Resize(w, h) => {
            app.size = (w, h);
            Vec::new()
        }
        Action::Tick => Vec::new(),
        Action::Woke { token } => app.woke(token),
        Action::Performed { generation, result, elapsed_ms } => app.on_performed(generation, result, elapsed_ms),
        Action::Looked { token, result } => app.looked(token, result),
        Action::Corrected(result) => app.on_corrected(result),
        Action::Undone(result) => app.on_undone(result),
        Action::Reviewed(result) => app.on_reviewed(result),
        Action::Shared(note) => {
            app.on_shared(note);
            Vec::new()
        }
        Action::Listed(result) => app.on_listed(result),
        Action::Impacts(result) => {
            app.on_impacts(result);
            Vec::new()
        }
        Action::Reran(result) => {
            app.reran(result);
            Vec::new()
        }
        Action::CorrectionsChanged(result) => {
            app.on_corrections_changed(result);
            Vec::new()
        }
        Action::Saved(result) => app.on_saved(result),
        Action::Exported(result) => {
            app.on_exported(result);
            Vec::new()
        }
        Action::Opened(result) => {
            app.on_opened(result);
            Vec::new()
        }
        // A dialog or the help takes the mouse: it does nothing under them.
        Action::Mouse(_) if app.keyboard_taken() => Vec::new(),
        Action::Mouse(mouse) => app.on_mouse(mouse),
        Action::Key(key) => app.on_key(key),
    }
}

/// What a node is, and its scores (`0.80 ████·  Σ0.560`) if it was scored.
pub fn node_parts(node: &BeamNode) -> (String, Option<String>) {
    let what = match &node.kind {
        NodeKind::Entity { term, .. } if !term.is_entity() => format!("\"{}\"", one_line(node.shown())),
        NodeKind::Entity { .. } => one_line(node.shown()).into_owned(),
        NodeKind::Relation { direction, shown, .. } => format!("{} {}", direction.arrow(), one_line(shown)),
    };
    (what, node.score.map(|s| format!("{s:.2} {}  Σ{:.3}", bar(s), node.path_score)))
}

/// A score as a five-cell bar.
pub fn bar(score: f64) -> String {
    let filled = (score.clamp(0.0, 1.0) * 5.0).round() as usize;
    format!("{}{}", "█".repeat(filled), "·".repeat(5 - filled))
}

/// The corrections of `session` as they stood when its run number `runs_started` (from 0)
/// began: those made before it, each active unless undone before it. A replay shows each run
/// with the corrections its recording had, not every one the session ever made.
pub(crate) fn corrections_as_of(session: &Session, runs_started: usize) -> Vec<Correction> {
    session
        .corrections
        .iter()
        .filter(|c| c.after_runs <= runs_started)
        .map(|c| Correction {
            id: c.id,
            kg: session.kg.clone(),
            op: c.draft.op.clone(),
            reason: c.draft.reason.clone(),
            generated: Some(c.draft.generated),
            author: c.draft.author.clone(),
            created: session.saved_at.clone(),
            active: c.in_effect_for(runs_started),
            context: c.draft.context.clone(),
            history: Vec::new(),
            team: None,
        })
        .collect()
}
