//! The terminal UI's state and its one `update` function: a message in, state changed, effects
//! out. No I/O happens here (the effects executor performs KG lookups, LLM calls and writes),
//! so every interaction is unit-testable and a saved session can drive it.
//!
//! The UI also records the sitting as it goes (a [`Session`]: every batch of requests with the
//! answers fed back, every override and rewind, the corrections made), and replays one: a
//! replayed step is answered from the recording, synchronously, with no effect at all.

use super::keymap::{Command, Keymap, Pane};
use super::modal::{Form, FormKind, Outcome, Palette, PickItem, PickValue, Picker, Purpose, Search, fuzzy_rank};
use super::theme::Theme;
use crate::engine::beam::{Beam, BeamNode, NodeId, NodeKind};
use crate::engine::{MethodId, Override, Poll, Request, Response, Run, Settings, Topics};
use crate::kg::{KgProfile, Term};
use crate::overlay::{Correction, CorrectionContext, Draft, Op};
use crate::prompts::Prompts;
use crate::session::{Moment, Player, Session, SessionCorrection};
use crossterm::event::{KeyCode, KeyEvent, KeyModifiers, MouseButton, MouseEvent, MouseEventKind};
use ratatui::layout::{Position, Rect};
use ratatui_textarea::TextArea;
use std::collections::HashSet;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Instant;

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
        generation: u64,
        result: Result<Vec<Response>, String>,
    },
    /// The executor stored corrections (their ids), or could not.
    Corrected(Result<Vec<u64>, String>),
    /// A correction was undone.
    Undone(Result<u64, String>),
    /// The overlay's corrections for this KG.
    Listed(Result<Vec<Correction>, String>),
    Saved(Result<PathBuf, String>),
    Exported(Result<(PathBuf, usize), String>),
    /// A session file was opened from the palette.
    Opened(Result<Box<Session>, String>),
    Resize(u16, u16),
    /// Time passed (the spinner turns).
    Tick,
}

/// What the UI asks the executor to do.
#[derive(Debug, PartialEq)]
pub enum Effect {
    /// Perform a step's requests; answer with `Action::Performed` for this generation.
    Perform {
        generation: u64,
        requests: Vec<Request>,
    },
    /// Look things up for a picker or a search; answer with `Action::Looked`.
    Lookup {
        generation: u64,
        requests: Vec<Request>,
    },
    /// Store these corrections durably, then see the KG through them (`Action::Corrected`).
    Correct {
        drafts: Vec<Draft>,
    },
    Undo {
        id: u64,
    },
    ListCorrections,
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
}

/// An answer to compare with after a re-ask.
#[derive(Clone, Debug, PartialEq)]
pub struct Earlier {
    pub answers: Vec<String>,
    pub paths: Vec<String>,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Focus {
    Question,
    Tree,
    Transcript,
    Method,
    Answer,
    Corrections,
}

impl Focus {
    fn pane(self) -> Pane {
        match self {
            Focus::Question | Focus::Tree => Pane::Tree,
            Focus::Transcript => Pane::Transcript,
            Focus::Method => Pane::Method,
            Focus::Answer => Pane::Answer,
            Focus::Corrections => Pane::Corrections,
        }
    }
}

/// Which pane the bottom of the screen shows.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Bottom {
    Transcript,
    /// The method's own view: PoG's analysis and stages, GoG's timeline, ToG's live paths.
    Method,
    Answer,
    Corrections,
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

/// Where the screen's panes are, for the mouse.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct Areas {
    pub question: Rect,
    pub tree: Rect,
    pub inspector: Rect,
    pub bottom: Rect,
    pub status: Rect,
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
    pub message: Option<String>,
    pub quit: bool,
    pub settings: Settings,
    pub prompts: Arc<Prompts>,
    pub profile: KgProfile,
    pub kg_name: String,
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
    /// Drafts sent to the store, recorded in the session once it gives them ids.
    pending_drafts: Vec<Draft>,
    /// This sitting, as it will be saved.
    pub recording: Session,
    pub replay: Option<Replay>,
    /// The executor can reach a KG and a model (false in an offline replay).
    pub live: bool,
    pub size: (u16, u16),
}

/// A status line for where the UI stands.
const READY: &str = "n: one step · r: run to the answer · ?: keys";

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
            auto: false,
            selected: 0,
            collapsed: HashSet::new(),
            abandoned_from: 0,
            transcript_at: 0,
            method_at: 0,
            answer_at: 0,
            corrections_at: 0,
            message: None,
            quit: false,
            settings,
            prompts,
            profile,
            kg_name: kg_name.to_string(),
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
            pending_drafts: Vec::new(),
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
            &format!("replay of {}", session.llm),
        );
        app.live = live;
        app.corrections = session
            .corrections
            .iter()
            .map(|c| Correction {
                id: c.id,
                kg: session.kg.clone(),
                op: c.draft.op.clone(),
                reason: c.draft.reason.clone(),
                author: c.draft.author.clone(),
                created: session.saved_at.clone(),
                active: true,
                context: c.draft.context.clone(),
                history: Vec::new(),
            })
            .collect();
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

    pub fn set_plain(&mut self, plain: bool) {
        self.theme.plain = plain;
    }

    /// The question as typed (lines joined).
    pub fn question(&self) -> String {
        self.input.lines().join("\n")
    }

    pub fn set_question(&mut self, text: &str) {
        self.reset_input(text);
    }

    fn reset_input(&mut self, text: &str) {
        let mut input = TextArea::new(text.lines().map(str::to_string).collect());
        input.set_placeholder_text("Type a question about the knowledge graph…");
        input.move_cursor(ratatui_textarea::CursorMove::Bottom);
        input.move_cursor(ratatui_textarea::CursorMove::End);
        self.input = input;
    }

    /// Where the panes are at the current size.
    pub fn areas(&self) -> Areas {
        super::view::layout(Rect::new(0, 0, self.size.0, self.size.1))
    }

    /// The beam a node ref points into.
    pub fn beam_of(&self, node: NodeRef) -> Option<&Beam> {
        let run = self.run.as_ref()?;
        match node.branch {
            None => Some(run.beam()),
            Some(i) => run.abandoned().get(i).map(|a| &a.beam),
        }
    }

    pub fn node(&self, node: NodeRef) -> Option<&BeamNode> {
        self.beam_of(node)?.nodes.get(node.id)
    }

    /// The beam tree's rows as shown, depth first, collapsed subtrees hidden. Branches set
    /// aside by a rewind hang under the node they grew from, after the current children.
    pub fn visible_rows(&self) -> Vec<Row> {
        let Some(run) = &self.run else { return Vec::new() };
        let beam = run.beam();
        let abandoned: Vec<(usize, &crate::engine::Abandoned)> =
            run.abandoned().iter().enumerate().skip(self.abandoned_from).collect();
        let mut rows = Vec::with_capacity(beam.nodes.len());
        let mut stack: Vec<Row> =
            beam.roots().map(|r| Row { node: NodeRef { branch: None, id: r.id }, indent: 0 }).collect();
        stack.reverse();
        while let Some(row) = stack.pop() {
            rows.push(row);
            if self.collapsed.contains(&row.node) {
                continue;
            }
            let at = stack.len();
            let own = match row.node.branch {
                None => &beam.nodes[row.node.id].children,
                Some(b) => &run.abandoned()[b].beam.nodes[row.node.id].children,
            };
            let child = |id| Row { node: NodeRef { branch: row.node.branch, id }, indent: row.indent + 1 };
            match row.node.branch {
                // A shared node shows its current children, then each branch's own.
                None => {
                    stack.extend(own.iter().map(|&c| child(c)));
                    for (b, a) in &abandoned {
                        if let Some(n) = a.beam.nodes.get(row.node.id).filter(|_| row.node.id < a.shared) {
                            stack.extend(
                                n.children.iter().filter(|&&c| c >= a.shared).map(|&c| Row {
                                    node: NodeRef { branch: Some(*b), id: c },
                                    indent: row.indent + 1,
                                }),
                            );
                        }
                    }
                }
                Some(_) => stack.extend(own.iter().map(|&c| child(c))),
            }
            stack[at..].reverse();
        }
        rows
    }

    pub fn selected_ref(&self) -> Option<NodeRef> {
        self.visible_rows().get(self.selected).map(|r| r.node)
    }

    /// The selected node of the current beam (not of a branch set aside).
    pub fn selected_node(&self) -> Option<NodeId> {
        self.selected_ref().filter(|r| r.branch.is_none()).map(|r| r.id)
    }

    /// Unfolds the way to `node` and selects it.
    pub fn reveal(&mut self, node: NodeRef) {
        if let Some(beam) = self.beam_of(node) {
            let path = beam.path(node.id);
            for id in path {
                let shared = NodeRef { branch: None, id };
                self.collapsed.remove(&NodeRef { branch: node.branch, id });
                self.collapsed.remove(&shared);
            }
        }
        if let Some(i) = self.visible_rows().iter().position(|r| r.node == node) {
            self.selected = i;
        }
        self.focus = Focus::Tree;
    }

    fn record(&mut self, moment: Moment) {
        self.recording.record(moment);
    }

    /// Copies the current run's trace and answer into the recording.
    fn sync_record(&mut self) {
        if let Some(run) = &self.run {
            self.recording.sync(run);
        }
    }

    /// The session as it stands, ready to save.
    pub fn session(&mut self) -> Session {
        self.sync_record();
        let mut session = self.recording.clone();
        session.saved_at = crate::overlay::now();
        session
    }

    /// The recorded answers to `requests`, when replaying a run that made them.
    fn recorded(&mut self, requests: &[Request]) -> Option<(Vec<Response>, u64)> {
        self.replay.as_mut()?.player.as_mut()?.answers(requests)
    }

    /// The next recorded override or rewind, when the replay is on track and one is due.
    fn recorded_change(&mut self) -> Option<Moment> {
        self.replay.as_mut()?.player.as_mut()?.change()
    }

    /// Notes a user's change in a replay: on track if it is the recorded one.
    fn replay_follows(&mut self, moment: &Moment) {
        if let Some(player) = self.replay.as_mut().and_then(|r| r.player.as_mut()) {
            player.follows(moment);
        }
    }

    /// Takes the next step: from the recording when replaying, else by asking the executor.
    fn step(&mut self) -> Vec<Effect> {
        loop {
            if self.in_flight.is_some() || self.run.is_none() {
                return Vec::new();
            }
            if let Some(moment) = self.recorded_change() {
                let player = self.replay.as_ref().and_then(|r| r.player.as_ref());
                let replayed = match (player, self.run.as_mut()) {
                    (Some(player), Some(run)) => Some(player.play(run, &moment)),
                    _ => None,
                };
                self.record(moment);
                self.generation += 1;
                if let (Some(Ok(i)), Some(run)) = (replayed, &self.run) {
                    self.message = run.trace().get(i).map(|e| format!("replayed: {}", e.summary));
                }
                if self.auto {
                    continue;
                }
                return Vec::new();
            }
            let Some(run) = &mut self.run else { return Vec::new() };
            match run.poll() {
                Poll::Finished => {
                    self.auto = false;
                    self.message = Some("answered: a asks again · i: a new question · t: the triples behind it".into());
                    return Vec::new();
                }
                Poll::Need(requests) => {
                    if let Some((responses, elapsed_ms)) = self.recorded(&requests) {
                        self.asked = Some(requests);
                        let ok = self.absorb(Ok(responses), elapsed_ms);
                        if ok && self.auto && !self.run.as_ref().is_some_and(Run::is_finished) {
                            continue;
                        }
                        return Vec::new();
                    }
                    if !self.live {
                        self.auto = false;
                        self.message = Some(
                            "this step is not in the recording: replay with --live to go on with a real KG and model"
                                .into(),
                        );
                        return Vec::new();
                    }
                    self.in_flight = Some(Instant::now());
                    self.asked = Some(requests.clone());
                    return vec![Effect::Perform { generation: self.generation, requests }];
                }
            }
        }
    }

    /// Feeds a step's results to the run and records them; false on an error.
    fn absorb(&mut self, result: Result<Vec<Response>, String>, elapsed_ms: u64) -> bool {
        let asked = self.asked.take();
        let Some(run) = &mut self.run else { return false };
        let fed = result
            .clone()
            .and_then(|r| run.feed_timed(r, std::time::Duration::from_millis(elapsed_ms)).map_err(|e| e.to_string()));
        match fed {
            Ok(i) => {
                self.message = run.trace().get(i).map(|e| e.summary.clone());
                let finished = run.is_finished();
                let answers = run.answer().map(|a| a.answers.clone());
                if let (Some(requests), Ok(responses)) = (asked, result) {
                    self.record(Moment::Exchange { requests, responses, elapsed_ms });
                }
                if finished {
                    self.bottom = Bottom::Answer;
                    self.auto = false;
                    self.sync_record();
                    if let (Some(earlier), Some(now)) = (&self.earlier, answers) {
                        self.message = Some(if earlier.answers == now {
                            format!("same answer as before: {}", now.join(" | "))
                        } else {
                            format!("answer changed: {} → {}", earlier.answers.join(" | "), now.join(" | "))
                        });
                    }
                }
                true
            }
            Err(e) => {
                self.auto = false;
                self.message = Some(format!("error: {e}"));
                false
            }
        }
    }

    fn start(&mut self) -> Vec<Effect> {
        let question = self.question().trim().to_string();
        match Run::new(
            &question,
            Topics::Extract,
            self.settings.clone(),
            self.prompts.clone(),
            self.profile.clone(),
            &self.kg_name,
        ) {
            Ok(run) => {
                self.sync_record();
                self.recording.begin(&question, Topics::Extract);
                if let Some(replay) = &mut self.replay {
                    // The next recorded run with this question (a re-ask is the next run).
                    let from = replay.run.map_or(0, |i| i + 1);
                    let runs = &replay.session.runs;
                    replay.run = (from..runs.len()).chain(0..from).find(|&i| runs[i].question == question);
                    replay.player = replay.run.map(|i| Player::new(&runs[i]));
                }
                self.run = Some(run);
                self.generation += 1;
                self.in_flight = None;
                self.selected = 0;
                self.transcript_at = 0;
                self.method_at = 0;
                self.answer_at = 0;
                self.abandoned_from = 0;
                self.traced = None;
                self.collapsed.clear();
                self.focus = Focus::Tree;
                self.bottom = Bottom::Transcript;
                self.message = Some(READY.into());
                if self.history.last() != Some(&question) {
                    self.history.push(question.clone());
                }
                self.history_at = None;
                let mut effects = if self.replay.is_none() { vec![Effect::Remember { question }] } else { Vec::new() };
                effects.extend(self.step());
                effects
            }
            Err(e) => {
                self.message = Some(e.to_string());
                Vec::new()
            }
        }
    }

    /// Applies an override to the run; results in flight were planned before it and are dropped.
    fn apply(&mut self, o: Override) -> Vec<Effect> {
        let Some(run) = &mut self.run else { return Vec::new() };
        match run.apply(o.clone()) {
            Ok(i) => {
                self.generation += 1;
                self.in_flight = None;
                self.message = run.trace().get(i).map(|e| e.summary.clone());
                let moment = Moment::Override { change: o };
                self.replay_follows(&moment);
                self.record(moment);
            }
            Err(e) => self.message = Some(e.to_string()),
        }
        Vec::new()
    }

    fn rewind(&mut self, to: usize) -> Vec<Effect> {
        let Some(run) = &mut self.run else { return Vec::new() };
        match run.rewind(to) {
            Ok(_) => {
                self.generation += 1;
                self.in_flight = None;
                self.auto = false;
                self.message = Some(format!("back at step {to}: the later steps are set aside (B clears them)"));
                let moment = Moment::Rewind { to };
                self.replay_follows(&moment);
                self.record(moment);
                self.selected = self.selected.min(self.visible_rows().len().saturating_sub(1));
            }
            Err(e) => self.message = Some(e.to_string()),
        }
        Vec::new()
    }

    fn rewind_one(&mut self) -> Vec<Effect> {
        let Some(run) = &self.run else { return Vec::new() };
        let steps: Vec<usize> = run.trace().iter().filter(|e| e.phase().is_some()).map(|e| e.index).collect();
        match steps.iter().rev().nth(1) {
            Some(&to) => self.rewind(to),
            None => {
                self.message = Some("nothing to go back to".into());
                Vec::new()
            }
        }
    }

    /// The selected node of the current beam, or a message saying why there is none.
    fn current_node(&mut self) -> Option<NodeId> {
        match self.selected_ref() {
            Some(NodeRef { branch: None, id }) => Some(id),
            Some(_) => {
                self.message = Some("that branch was set aside: select a node of the current beam".into());
                None
            }
            None => None,
        }
    }

    fn toggle_keep(&mut self) -> Vec<Effect> {
        let (Some(id), Some(run)) = (self.current_node(), &self.run) else { return Vec::new() };
        let live = run.beam().nodes[id].status.is_live();
        self.apply(if live { Override::Drop { node: id } } else { Override::Keep { node: id } })
    }

    /// Opens the picker of KG candidates the model never proposed for the selected node.
    fn open_add(&mut self) -> Vec<Effect> {
        let (Some(id), Some(run)) = (self.current_node(), &self.run) else { return Vec::new() };
        let beam = run.beam();
        let node = &beam.nodes[id];
        let (purpose, request, title) = match &node.kind {
            NodeKind::Entity { term: Term::Entity(entity), .. } => (
                Purpose::Relation { parent: id },
                Request::Relations { entity: entity.clone() },
                format!(" Add a relation of {} ", node.shown()),
            ),
            NodeKind::Relation { relation, direction, shown } => {
                let Some(Term::Entity(head)) = node.parent.and_then(|p| beam.nodes[p].term()) else {
                    return Vec::new();
                };
                let relation =
                    crate::kg::RelationRef { relation: relation.clone(), direction: *direction, label: None };
                (
                    Purpose::Entity { parent: id },
                    Request::Neighbours { entity: head.clone(), relation },
                    format!(" Add an entity reached by {shown} "),
                )
            }
            _ => {
                self.message = Some("a value has no relations to add".into());
                return Vec::new();
            }
        };
        self.picker = Some(Picker::new(purpose, title));
        vec![Effect::Lookup { generation: self.generation, requests: vec![request] }]
    }

    /// Fills the open picker (or the search) with looked-up candidates.
    fn looked(&mut self, responses: Vec<Response>) {
        if let Some(search) = self.search.as_mut().filter(|s| !s.typing) {
            // The KG's matching labels are said, not kept: they are not in the beam to jump to.
            if let Some(Response::Entities { matches }) = responses.into_iter().next()
                && !matches.is_empty()
            {
                let names: Vec<String> = matches.iter().take(5).map(|m| format!("{} ({})", m.label, m.id)).collect();
                self.message = Some(format!("{} · in the KG: {}", search_status(search), names.join(", ")));
            }
            return;
        }
        let Some(picker) = self.picker.as_mut() else { return };
        picker.loading = false;
        picker.items = responses
            .into_iter()
            .flat_map(|r| match r {
                Response::Relations { relations } => relations
                    .into_iter()
                    .map(|r| PickItem {
                        text: r.label.clone().unwrap_or_else(|| r.relation.clone()),
                        detail: format!("{} {}", r.direction.arrow(), r.relation),
                        value: PickValue::Relation(r),
                    })
                    .collect::<Vec<_>>(),
                Response::Neighbours { neighbours } => neighbours
                    .into_iter()
                    .map(|n| PickItem {
                        text: n.label.clone().unwrap_or_else(|| n.term.to_string()),
                        detail: n.term.to_string(),
                        value: PickValue::Term { term: n.term, label: n.label },
                    })
                    .collect(),
                Response::Entities { matches } => matches
                    .into_iter()
                    .map(|m| PickItem {
                        detail: m.id.clone(),
                        text: m.label.clone(),
                        value: PickValue::Term { term: Term::Entity(m.id), label: Some(m.label) },
                    })
                    .collect(),
                _ => Vec::new(),
            })
            .collect();
        // Say which candidates the tree already has (picking one of those keeps it).
        if let (Purpose::Relation { parent } | Purpose::Entity { parent }, Some(run)) = (&picker.purpose, &self.run) {
            for item in &mut picker.items {
                if let Some(child) = existing_child(run.beam(), *parent, &item.value) {
                    item.detail.push_str(&format!("  (in the tree: {:?})", run.beam().nodes[child].status));
                }
            }
        }
        if picker.items.is_empty() {
            self.message = Some("the KG has no other candidates here".into());
        }
    }

    fn on_picker_key(&mut self, key: KeyEvent) -> Vec<Effect> {
        let Some(picker) = &mut self.picker else { return Vec::new() };
        match picker.on_key(key) {
            Outcome::Editing => Vec::new(),
            Outcome::Cancelled => {
                self.picker = None;
                Vec::new()
            }
            Outcome::Submitted => {
                let purpose = picker.purpose.clone();
                let Some(item) = picker.chosen().cloned() else { return Vec::new() };
                self.picker = None;
                let existing = match (&purpose, &self.run) {
                    (Purpose::Relation { parent } | Purpose::Entity { parent }, Some(run)) => {
                        existing_child(run.beam(), *parent, &item.value)
                    }
                    _ => None,
                };
                if let Some(node) = existing {
                    return self.apply(Override::Keep { node });
                }
                match (purpose, item.value) {
                    (Purpose::Relation { parent }, PickValue::Relation(relation)) => {
                        self.apply(Override::AddRelation { parent, relation })
                    }
                    (Purpose::Entity { parent }, PickValue::Term { term, label }) => {
                        self.apply(Override::AddEntity { parent, term, label })
                    }
                    (Purpose::Object, PickValue::Term { term, label }) => {
                        if let Some(form) = &mut self.form {
                            form.fields[1].value = label.unwrap_or_else(|| term.to_string());
                            if let FormKind::Flag { object, .. } = &mut form.kind {
                                *object = Some(term);
                            }
                        }
                        Vec::new()
                    }
                    _ => Vec::new(),
                }
            }
        }
    }

    /// Opens the flag form on the triple that reached the selected entity.
    fn open_flag(&mut self) {
        let Some(id) = self.current_node() else { return };
        let Some(run) = &self.run else { return };
        match run.beam().triples(id).pop() {
            Some(triple) if run.beam().nodes[id].term().is_some() => self.form = Some(Form::flag(triple)),
            _ => self.message = Some("select an entity reached through a relation to flag its triple".into()),
        }
    }

    /// Rows of the method pane (the method's view: paths, or steps).
    fn method_rows(&self) -> usize {
        self.run.as_ref().map_or(0, |run| run.view().items.len())
    }

    /// Enter in the method pane: a step about to run opens for editing; a path is shown in the
    /// tree.
    fn method_row(&mut self) -> Vec<Effect> {
        let Some(run) = &self.run else { return Vec::new() };
        let view = run.view();
        let Some(item) = view.items.get(self.method_at) else { return Vec::new() };
        if item.editable {
            if let Some(step) = run.gog_steps().last() {
                self.form = Some(Form::edit_step(step.thought.clone(), step.action.clone()));
            }
        } else if let Some(leaf) = item.node {
            self.reveal(NodeRef { branch: None, id: leaf });
        } else {
            self.message = Some(format!(
                "step {} has run: only the step about to run can be edited (go back to it from the transcript)",
                self.method_at + 1
            ));
        }
        Vec::new()
    }

    /// GoG: stores the selected generated triple as an assert, credited to the LLM and the
    /// user who accepted it. Only a triple whose head the run linked to a KG entity can be.
    fn accept_generated(&mut self) -> Vec<Effect> {
        let Some(id) = self.current_node() else { return Vec::new() };
        let Some(run) = &self.run else { return Vec::new() };
        let Some(g) = run.generated().iter().find(|g| g.node == id).cloned() else {
            self.message = Some("select the object of an LLM-generated triple (marked ✦) to accept it".into());
            return Vec::new();
        };
        let Some(Term::Entity(subject)) = g.head_term.clone() else {
            self.message = Some(format!("{:?} is not linked to a KG entity: the triple cannot be stored", g.head));
            return Vec::new();
        };
        if !self.live {
            self.message = Some("an offline replay writes no corrections: replay with --live to correct".into());
            return Vec::new();
        }
        let object = g.tail_term.clone().unwrap_or_else(|| Term::Literal(g.tail.clone()));
        let reason = format!("generated by the LLM, accepted by {}", self.author);
        let drafts = vec![self.draft(Op::Assert { subject, relation: g.relation.clone(), object }, &reason)];
        self.pending_drafts = drafts.clone();
        self.message = Some("recording the accepted triple…".into());
        vec![Effect::Correct { drafts }]
    }

    fn open_relabel(&mut self) {
        let Some(id) = self.current_node() else { return };
        let Some(run) = &self.run else { return };
        match &run.beam().nodes[id].kind {
            NodeKind::Entity { term: Term::Entity(entity), label } => {
                self.form = Some(Form::relabel(entity.clone(), label.clone().unwrap_or_default()))
            }
            _ => self.message = Some("select an entity to correct its name".into()),
        }
    }

    fn draft(&self, op: Op, reason: &str) -> Draft {
        Draft {
            op,
            reason: reason.to_string(),
            author: self.author.clone(),
            context: Some(CorrectionContext {
                question: self.run.as_ref().map(|r| r.question().to_string()),
                session: None,
                step: self.run.as_ref().map(|r| r.trace().len()),
            }),
            origin: Some("made in the terminal UI".into()),
        }
    }

    /// The corrections a filled-in form stands for. A flag retracts the triple and, when the
    /// right object is given, asserts it: a picked KG entity as is, a typed name as a new
    /// entity with an id and that name, a literal as the typed value.
    fn form_drafts(&self, form: &Form) -> Vec<Draft> {
        match &form.kind {
            // Not a correction: the form's submission is handled before drafts are made.
            FormKind::EditStep { .. } => Vec::new(),
            FormKind::Relabel { entity, .. } => {
                vec![
                    self.draft(Op::Relabel { entity: entity.clone(), label: form.value(0).to_string() }, form.value(1)),
                ]
            }
            FormKind::Flag { triple: t, object } => {
                let reason = form.value(0);
                let Term::Entity(head) = &t.head_term else { return Vec::new() };
                let assert =
                    |object: Term| Op::Assert { subject: head.clone(), relation: t.relation_id.clone(), object };
                let mut drafts = vec![self.draft(
                    Op::Retract { subject: head.clone(), relation: t.relation_id.clone(), object: t.tail_term.clone() },
                    reason,
                )];
                let typed = form.value(1);
                match (object, &t.tail_term) {
                    (Some(term), _) => drafts.push(self.draft(assert(term.clone()), reason)),
                    (None, _) if typed.is_empty() => {}
                    (None, Term::Literal(_)) => drafts.push(self.draft(assert(Term::Literal(typed.into())), reason)),
                    (None, Term::Entity(_)) => {
                        let id = new_entity_id(typed);
                        drafts.push(self.draft(assert(Term::Entity(id.clone())), reason));
                        if let Some(name) = self.profile.label_predicates.first() {
                            drafts.push(self.draft(
                                Op::Assert { subject: id, relation: name.clone(), object: Term::Literal(typed.into()) },
                                reason,
                            ));
                        }
                    }
                }
                drafts
            }
        }
    }

    fn on_form_key(&mut self, key: KeyEvent) -> Vec<Effect> {
        let Some(form) = &mut self.form else { return Vec::new() };
        let picking = key.code == KeyCode::Char('f') && key.modifiers.contains(KeyModifiers::CONTROL);
        if picking && matches!(form.kind, FormKind::Flag { .. }) {
            form.active = 1;
            let name = form.value(1).to_string();
            self.picker = Some(Picker::new(Purpose::Object, " The right object, from the KG ".into()));
            if let Some(p) = &mut self.picker {
                p.query = name.clone();
            }
            return vec![Effect::Lookup {
                generation: self.generation,
                requests: vec![Request::FindEntities {
                    name: if name.is_empty() { "a".into() } else { name },
                    limit: 50,
                }],
            }];
        }
        match form.on_key(key) {
            Outcome::Editing => Vec::new(),
            Outcome::Cancelled => {
                self.form = None;
                Vec::new()
            }
            Outcome::Submitted if matches!(form.kind, FormKind::EditStep { .. }) => {
                // A step the engine would refuse keeps the form open, with the typed text.
                if let Err(why) = crate::engine::gog::parse::parse_action(form.value(1)) {
                    form.problem = Some(why);
                    return Vec::new();
                }
                let FormKind::EditStep { thought } = &form.kind else { return Vec::new() };
                let edited = form.value(0);
                let thought = (edited != thought.trim()).then(|| edited.to_string());
                let action = form.value(1).to_string();
                self.form = None;
                self.apply(Override::EditAction { thought, action })
            }
            Outcome::Submitted => {
                let form = form.clone();
                self.form = None;
                if !self.live {
                    self.message =
                        Some("an offline replay writes no corrections: replay with --live to correct".into());
                    return Vec::new();
                }
                let drafts = self.form_drafts(&form);
                self.pending_drafts = drafts.clone();
                self.message = Some("recording the correction…".into());
                vec![Effect::Correct { drafts }]
            }
        }
    }

    /// Asks the same question again (through whatever corrections now apply), keeping the
    /// current answer to compare with.
    fn reask(&mut self) -> Vec<Effect> {
        let Some(run) = &self.run else { return Vec::new() };
        if let Some(answer) = run.answer() {
            self.earlier = Some(Earlier {
                answers: answer.answers.clone(),
                paths: answer.paths.iter().map(|p| p.text.clone()).collect(),
            });
        }
        let question = run.question().to_string();
        self.reset_input(&question);
        self.auto = true;
        self.start()
    }

    /// Selects the next path the answer rests on, in the tree.
    fn trace_answer(&mut self) {
        let Some(answer) = self.run.as_ref().and_then(|r| r.answer()) else {
            self.message = Some("no answer yet to trace".into());
            return;
        };
        if answer.paths.is_empty() {
            self.message = Some("the answer rests on no KG path (the model's own knowledge)".into());
            return;
        }
        let at = self.traced.map_or(0, |t| (t + 1) % answer.paths.len());
        let (leaf, n, text) = (answer.paths[at].leaf, answer.paths.len(), answer.paths[at].text.clone());
        self.traced = Some(at);
        self.answer_at = at;
        self.bottom = Bottom::Answer;
        self.reveal(NodeRef { branch: None, id: leaf });
        self.message = Some(format!("path {}/{n} behind the answer: {text}", at + 1));
    }

    fn search_update(&mut self) {
        let Some(run) = &self.run else { return };
        let Some(search) = &mut self.search else { return };
        let beam = run.beam();
        let texts: Vec<String> = beam
            .nodes
            .iter()
            .map(|n| match n.term() {
                Some(t) => format!("{} {t}", n.shown()),
                None => n.shown().to_string(),
            })
            .collect();
        search.matches = fuzzy_rank(&search.query, texts.iter().map(String::as_str));
        if search.query.trim().is_empty() {
            search.matches.clear();
        }
        search.current = 0;
    }

    fn search_jump(&mut self, delta: isize) {
        let Some(search) = &mut self.search else { return };
        if search.matches.is_empty() {
            self.message = Some(format!("no node matches {:?}", search.query));
            return;
        }
        let n = search.matches.len() as isize;
        search.current = (search.current as isize + delta).rem_euclid(n) as usize;
        let id = search.matches[search.current];
        self.message = Some(search_status(search));
        self.reveal(NodeRef { branch: None, id });
    }

    fn on_search_key(&mut self, key: KeyEvent) -> Vec<Effect> {
        let Some(search) = &mut self.search else { return Vec::new() };
        match key.code {
            KeyCode::Esc => {
                self.search = None;
                self.message = None;
            }
            KeyCode::Enter => {
                search.typing = false;
                let name = search.query.trim().to_string();
                self.search_jump(0);
                if !name.is_empty() && self.live {
                    return vec![Effect::Lookup {
                        generation: self.generation,
                        requests: vec![Request::FindEntities { name, limit: 10 }],
                    }];
                }
            }
            KeyCode::Backspace => {
                search.query.pop();
                self.search_update();
            }
            KeyCode::Char(c) if !key.modifiers.contains(KeyModifiers::CONTROL) => {
                search.query.push(c);
                self.search_update();
            }
            _ => {}
        }
        Vec::new()
    }

    fn on_palette_key(&mut self, key: KeyEvent) -> Vec<Effect> {
        let Some(palette) = &mut self.palette else { return Vec::new() };
        match palette.on_key(key) {
            Outcome::Editing => {
                let n = self.palette_commands().len();
                if let Some(p) = &mut self.palette {
                    p.selected = p.selected.min(n.saturating_sub(1));
                }
                Vec::new()
            }
            Outcome::Cancelled => {
                self.palette = None;
                Vec::new()
            }
            Outcome::Submitted => {
                let (selected, arg) = (palette.selected, palette.parts().1.map(str::to_string));
                let chosen = self.palette_commands().get(selected).copied();
                self.palette = None;
                match chosen {
                    Some(c) => self.command(c, arg),
                    None => {
                        self.message = Some("no such command (? lists them)".into());
                        Vec::new()
                    }
                }
            }
        }
    }

    /// The palette's commands matching what is typed, best first.
    pub fn palette_commands(&self) -> Vec<Command> {
        let word = self.palette.as_ref().map(|p| p.parts().0).unwrap_or("");
        let texts: Vec<String> = Command::ALL.iter().map(|c| format!("{} {}", c.name(), c.help())).collect();
        let exact: Vec<Command> = Command::ALL.iter().copied().filter(|c| c.name() == word).collect();
        if !exact.is_empty() {
            return exact;
        }
        fuzzy_rank(word, texts.iter().map(String::as_str)).into_iter().map(|i| Command::ALL[i]).collect()
    }

    fn rows_in_focus(&self) -> usize {
        match self.focus {
            Focus::Question | Focus::Tree => self.visible_rows().len(),
            Focus::Transcript => self.run.as_ref().map_or(0, |r| r.trace().len()),
            Focus::Method => self.method_rows(),
            Focus::Answer => self.run.as_ref().and_then(|r| r.answer()).map_or(0, |a| a.paths.len()),
            Focus::Corrections => self.corrections.len(),
        }
    }

    fn cursor(&mut self) -> &mut usize {
        match self.focus {
            Focus::Question | Focus::Tree => &mut self.selected,
            Focus::Transcript => &mut self.transcript_at,
            Focus::Method => &mut self.method_at,
            Focus::Answer => &mut self.answer_at,
            Focus::Corrections => &mut self.corrections_at,
        }
    }

    fn move_cursor(&mut self, to: impl FnOnce(usize, usize) -> isize) {
        let rows = self.rows_in_focus();
        let cursor = self.cursor();
        *cursor = to(*cursor, rows).clamp(0, rows.saturating_sub(1) as isize) as usize;
    }

    fn cycle_pane(&mut self, forward: bool) {
        let order = [Focus::Tree, Focus::Transcript, Focus::Method, Focus::Answer, Focus::Corrections];
        let n = order.len();
        let at = order.iter().position(|f| *f == self.focus).unwrap_or(0);
        let next = order[if forward { (at + 1) % n } else { (at + n - 1) % n }];
        self.focus = next;
        match next {
            Focus::Transcript => self.bottom = Bottom::Transcript,
            Focus::Method => self.bottom = Bottom::Method,
            Focus::Answer => self.bottom = Bottom::Answer,
            Focus::Corrections => self.bottom = Bottom::Corrections,
            _ => {}
        }
    }

    /// Does what `command` means (`arg` from the palette).
    fn command(&mut self, command: Command, arg: Option<String>) -> Vec<Effect> {
        let page = (self.areas().tree.height.saturating_sub(2) / 2).max(1) as isize;
        match command {
            Command::Step => return self.step(),
            Command::Run => {
                self.auto = true;
                return self.step();
            }
            Command::Cancel => {
                if self.in_flight.take().is_some() {
                    self.generation += 1;
                    self.asked = None;
                    self.message = Some("cancelled: the step in flight will be ignored".into());
                }
                self.auto = false;
                self.search = None;
            }
            Command::Ask => self.focus = Focus::Question,
            Command::Reask => return self.reask(),
            Command::Down => self.move_cursor(|c, _| c as isize + 1),
            Command::Up => self.move_cursor(|c, _| c as isize - 1),
            Command::PageDown => self.move_cursor(|c, _| c as isize + page),
            Command::PageUp => self.move_cursor(|c, _| c as isize - page),
            Command::Top => self.move_cursor(|_, _| 0),
            Command::Bottom => self.move_cursor(|_, n| n as isize - 1),
            Command::NextPane => self.cycle_pane(true),
            Command::PrevPane => self.cycle_pane(false),
            Command::Collapse => {
                if let Some(node) = self.selected_ref() {
                    self.collapsed.insert(node);
                }
            }
            Command::Expand => {
                if let Some(node) = self.selected_ref() {
                    self.collapsed.remove(&node);
                }
            }
            Command::Toggle => return self.toggle_keep(),
            Command::Add => return self.open_add(),
            Command::Pin => {
                if let Some(node) = self.current_node() {
                    return self.apply(Override::Pin { node });
                }
            }
            Command::PrunePath => {
                if let Some(node) = self.current_node() {
                    return self.apply(Override::PrunePath { node });
                }
            }
            Command::Sufficient => return self.apply(Override::ForceSufficient),
            Command::Continue => return self.apply(Override::ForceContinue),
            Command::Back => return self.rewind_one(),
            Command::ClearAbandoned => {
                self.abandoned_from = self.run.as_ref().map_or(0, |r| r.abandoned().len());
                self.selected = self.selected.min(self.visible_rows().len().saturating_sub(1));
                self.message = Some("branches set aside are cleared from view".into());
            }
            Command::Flag => self.open_flag(),
            Command::Relabel => self.open_relabel(),
            Command::AcceptGenerated => return self.accept_generated(),
            Command::EditAction => match arg {
                Some(action) => return self.apply(Override::EditAction { thought: None, action: action.to_string() }),
                None => self.message = Some("edit-action needs an action: edit-action Search[Cupertino]".into()),
            },
            Command::Trace => self.trace_answer(),
            Command::Rewind => {
                let to = self.run.as_ref().and_then(|r| r.trace().get(self.transcript_at)).map(|e| e.index);
                if let Some(to) = to {
                    return self.rewind(to);
                }
            }
            Command::MethodRow => return self.method_row(),
            Command::Jump => {
                let leaf = self.run.as_ref().and_then(|r| r.answer()).and_then(|a| a.paths.get(self.answer_at));
                if let Some(leaf) = leaf.map(|p| p.leaf) {
                    self.traced = Some(self.answer_at);
                    self.reveal(NodeRef { branch: None, id: leaf });
                }
            }
            Command::Undo => {
                if !self.live {
                    self.message = Some("an offline replay changes no corrections".into());
                } else if let Some(c) = self.corrections.get(self.corrections_at) {
                    return vec![Effect::Undo { id: c.id }];
                }
            }
            Command::Search => {
                self.search = Some(Search { typing: true, ..Search::default() });
            }
            Command::SearchNext => self.search_jump(1),
            Command::SearchPrev => self.search_jump(-1),
            Command::Save => return vec![Effect::Save { path: None, session: Box::new(self.session()) }],
            Command::SaveAs => match arg {
                Some(path) => return vec![Effect::Save { path: Some(path.into()), session: Box::new(self.session()) }],
                None => self.message = Some("save-as needs a file: save-as PATH".into()),
            },
            Command::ExportCorrections => return vec![Effect::Export { path: arg.map(PathBuf::from) }],
            Command::Open => match arg {
                Some(path) => return vec![Effect::Open { path: path.into() }],
                None => self.message = Some("open needs a session file: open PATH".into()),
            },
            Command::NextTheme => {
                let plain = self.theme.plain;
                let at = self.themes.iter().position(|t| t.name == self.theme.name);
                let next = match &arg {
                    Some(name) => self.themes.iter().find(|t| &t.name == name),
                    None => self.themes.get(at.map_or(0, |i| (i + 1) % self.themes.len().max(1))),
                };
                match next {
                    Some(t) => {
                        self.theme = t.clone();
                        self.theme.plain = plain;
                        self.message = Some(format!("theme: {}", self.theme.name));
                    }
                    None => self.message = Some(self.no_theme(&self.themes, arg.as_deref().unwrap_or_default())),
                }
            }
            Command::SwitchMethod => {
                let registry = crate::engine::Registry::builtin();
                let methods = registry.entries();
                let chosen = match arg.as_deref() {
                    Some(name) => methods.iter().find(|e| e.id.eq_ignore_ascii_case(name.trim())),
                    None => methods
                        .iter()
                        .position(|e| e.id == self.settings.method.as_str())
                        .map(|i| &methods[(i + 1) % methods.len()]),
                };
                match chosen {
                    Some(entry) => {
                        let method = MethodId::named(entry.id);
                        self.settings.method = method;
                        self.recording.settings.method = method;
                        self.message = Some(format!("method for the next question: {}", entry.label));
                    }
                    None => self.message = Some(format!("no such method (methods: {})", registry.names())),
                }
            }
            Command::Palette => self.palette = Some(Palette::default()),
            Command::Help => {
                self.help = true;
                self.help_scroll = 0;
            }
            Command::Quit => self.quit = true,
        }
        Vec::new()
    }

    fn on_question_key(&mut self, key: KeyEvent) -> Vec<Effect> {
        let alt = key.modifiers.contains(KeyModifiers::ALT);
        match key.code {
            KeyCode::Enter if alt => {
                self.input.insert_newline();
            }
            // As in a shell: ctrl-u clears what is typed.
            KeyCode::Char('u') if key.modifiers.contains(KeyModifiers::CONTROL) => self.reset_input(""),
            KeyCode::Enter if !self.question().trim().is_empty() => return self.start(),
            KeyCode::Enter => self.message = Some("type a question first".into()),
            // Esc and Tab leave the input (i comes back to it).
            KeyCode::Esc | KeyCode::Tab => {
                self.focus = Focus::Tree;
                if self.run.is_none() {
                    self.message = Some("i: type a question · ?: keys · q: quit".into());
                }
            }
            KeyCode::Up if self.input.cursor().0 == 0 && !self.history.is_empty() => {
                let at = self.history_at.map_or(self.history.len() - 1, |i| i.saturating_sub(1));
                self.history_at = Some(at);
                let text = self.history[at].clone();
                self.reset_input(&text);
            }
            KeyCode::Down if self.history_at.is_some() && self.input.cursor().0 + 1 >= self.input.lines().len() => {
                let next = self.history_at.map(|i| i + 1).filter(|&i| i < self.history.len());
                self.history_at = next;
                let text = next.map(|i| self.history[i].clone()).unwrap_or_default();
                self.reset_input(&text);
            }
            _ => {
                self.input.input(key);
            }
        }
        Vec::new()
    }

    fn on_mouse(&mut self, mouse: MouseEvent) -> Vec<Effect> {
        let areas = self.areas();
        let at = Position::new(mouse.column, mouse.row);
        let pane = if areas.tree.contains(at) {
            Some(Focus::Tree)
        } else if areas.bottom.contains(at) {
            Some(match self.bottom {
                Bottom::Transcript => Focus::Transcript,
                Bottom::Method => Focus::Method,
                Bottom::Answer => Focus::Answer,
                Bottom::Corrections => Focus::Corrections,
            })
        } else if areas.question.contains(at) {
            Some(Focus::Question)
        } else {
            None
        };
        let Some(pane) = pane else { return Vec::new() };
        match mouse.kind {
            MouseEventKind::ScrollDown | MouseEventKind::ScrollUp if pane != Focus::Question => {
                self.focus = pane;
                let d = if mouse.kind == MouseEventKind::ScrollDown { 3 } else { -3 };
                self.move_cursor(|c, _| c as isize + d);
            }
            MouseEventKind::Down(MouseButton::Left) => {
                self.focus = pane;
                if pane == Focus::Tree {
                    let rows = self.visible_rows().len();
                    let height = areas.tree.height.saturating_sub(2) as usize;
                    let offset = window(self.selected, rows, height);
                    let row = (mouse.row.saturating_sub(areas.tree.y + 1)) as usize + offset;
                    if row < rows {
                        if row == self.selected {
                            // A click on the selected row folds or unfolds it.
                            if let Some(node) = self.selected_ref()
                                && !self.collapsed.remove(&node)
                            {
                                self.collapsed.insert(node);
                            }
                        }
                        self.selected = row;
                    }
                }
            }
            _ => {}
        }
        Vec::new()
    }

    fn on_key(&mut self, key: KeyEvent) -> Vec<Effect> {
        if key.modifiers.contains(KeyModifiers::CONTROL) && key.code == KeyCode::Char('c') {
            self.quit = true;
            return Vec::new();
        }
        if self.picker.is_some() {
            return self.on_picker_key(key);
        }
        if self.form.is_some() {
            return self.on_form_key(key);
        }
        if self.palette.is_some() {
            return self.on_palette_key(key);
        }
        if self.help {
            // The help only reads: j/k scroll it, any other key closes it.
            match key.code {
                KeyCode::Char('j') | KeyCode::Down | KeyCode::PageDown => self.help_scroll += 3,
                KeyCode::Char('k') | KeyCode::Up | KeyCode::PageUp => {
                    self.help_scroll = self.help_scroll.saturating_sub(3)
                }
                _ => self.help = false,
            }
            return Vec::new();
        }
        if self.search.as_ref().is_some_and(|s| s.typing) {
            return self.on_search_key(key);
        }
        if self.focus == Focus::Question {
            // Ctrl-S, the palette and F1 work while typing; with nothing typed, so do `?` and
            // `q` (a question is not begun with them); everything else is text.
            let empty = self.question().is_empty();
            match self.keymap.lookup(&[], key) {
                Some(c @ (Command::Save | Command::Palette | Command::Help))
                    if key.modifiers.contains(KeyModifiers::CONTROL) || matches!(key.code, KeyCode::F(_)) =>
                {
                    return self.command(c, None);
                }
                Some(c @ (Command::Help | Command::Quit))
                    if empty && !key.modifiers.intersects(KeyModifiers::CONTROL | KeyModifiers::ALT) =>
                {
                    return self.command(c, None);
                }
                _ => return self.on_question_key(key),
            }
        }
        let mut panes = Vec::with_capacity(2);
        if self.search.as_ref().is_some_and(|s| !s.matches.is_empty()) {
            panes.push(Pane::Matches);
        }
        panes.push(self.focus.pane());
        match self.keymap.lookup(&panes, key) {
            Some(command) => self.command(command, None),
            None => Vec::new(),
        }
    }

    /// The panes whose keys apply now, most specific first (for the help).
    pub fn help_panes(&self) -> Vec<Pane> {
        let mut panes = vec![self.focus.pane()];
        if self.search.is_some() {
            panes.push(Pane::Matches);
        }
        panes
    }
}

/// The child of `parent` that already stands for a picked candidate.
fn existing_child(beam: &Beam, parent: NodeId, value: &PickValue) -> Option<NodeId> {
    beam.nodes.get(parent)?.children.iter().copied().find(|&c| match (&beam.nodes[c].kind, value) {
        (NodeKind::Relation { relation, direction, .. }, PickValue::Relation(r)) => {
            relation == &r.relation && direction == &r.direction
        }
        (NodeKind::Entity { term, .. }, PickValue::Term { term: t, .. }) => term == t,
        _ => false,
    })
}

fn search_status(search: &Search) -> String {
    format!("/{}: match {}/{} · n/N: next/previous · esc: end", search.query, search.current + 1, search.matches.len())
}

/// The first row shown in a window of `height` rows over `len` rows, so `selected` is visible.
pub fn window(selected: usize, len: usize, height: usize) -> usize {
    if height == 0 || len <= height {
        return 0;
    }
    selected.saturating_sub(height - 1).min(len - height)
}

/// The one place the UI's state changes.
pub fn update(app: &mut App, action: Action) -> Vec<Effect> {
    match action {
        Action::Resize(w, h) => {
            app.size = (w, h);
            Vec::new()
        }
        Action::Tick => Vec::new(),
        Action::Performed { generation, result, elapsed_ms } => {
            if generation != app.generation {
                return Vec::new(); // overtaken by a cancel, override or rewind
            }
            app.in_flight = None;
            if app.absorb(result, elapsed_ms) && app.auto { app.step() } else { Vec::new() }
        }
        Action::Looked { generation, result } => {
            if generation != app.generation {
                return Vec::new();
            }
            match result {
                Ok(responses) => app.looked(responses),
                Err(e) => {
                    app.picker = None;
                    app.message = Some(format!("lookup failed: {e}"));
                }
            }
            Vec::new()
        }
        Action::Corrected(Ok(ids)) => {
            let drafts = std::mem::take(&mut app.pending_drafts);
            let runs = app.recording.runs.len();
            app.recording.corrections.extend(ids.iter().zip(drafts).map(|(&id, draft)| SessionCorrection {
                id,
                after_runs: runs,
                draft,
            }));
            let list = ids.iter().map(u64::to_string).collect::<Vec<_>>().join(", ");
            app.message = Some(format!("correction {list} recorded; a: ask again with it"));
            vec![Effect::ListCorrections]
        }
        Action::Corrected(Err(e)) => {
            app.pending_drafts.clear();
            app.message = Some(format!("the correction was not recorded: {e}"));
            Vec::new()
        }
        Action::Undone(Ok(id)) => {
            app.message = Some(format!("correction {id} undone; a: ask again without it"));
            vec![Effect::ListCorrections]
        }
        Action::Undone(Err(e)) => {
            app.message = Some(format!("not undone: {e}"));
            Vec::new()
        }
        Action::Listed(Ok(list)) => {
            app.corrections = list;
            app.corrections_at = app.corrections_at.min(app.corrections.len().saturating_sub(1));
            Vec::new()
        }
        Action::Listed(Err(e)) => {
            app.message = Some(format!("cannot list the corrections: {e}"));
            Vec::new()
        }
        Action::Saved(result) => {
            app.message = Some(match result {
                Ok(path) => format!("session saved to {} (ongraph replay FILE plays it back)", path.display()),
                Err(e) => format!("the session was not saved: {e}"),
            });
            Vec::new()
        }
        Action::Exported(result) => {
            app.message = Some(match result {
                Ok((path, n)) => format!("{n} correction(s) written to {}", path.display()),
                Err(e) => format!("not exported: {e}"),
            });
            Vec::new()
        }
        Action::Opened(Ok(session)) => match App::replaying(*session, app.live) {
            Ok(mut replay) => {
                replay.keymap = app.keymap.clone();
                replay.themes = std::mem::take(&mut app.themes);
                replay.theme = app.theme.clone();
                replay.size = app.size;
                replay.author = app.author.clone();
                replay.message = Some("replaying: Enter starts the recorded question, n steps through it".into());
                *app = replay;
                Vec::new()
            }
            Err(e) => {
                app.message = Some(e.to_string());
                Vec::new()
            }
        },
        Action::Opened(Err(e)) => {
            app.message = Some(e);
            Vec::new()
        }
        Action::Mouse(mouse) => {
            if app.form.is_some() || app.picker.is_some() || app.palette.is_some() || app.help {
                return Vec::new();
            }
            app.on_mouse(mouse)
        }
        Action::Key(key) => app.on_key(key),
    }
}

/// An id for an entity a user names in a correction: `new.` and the name in lower case with
/// `_` for anything but letters and digits (`BayCare Ballpark` → `new.baycare_ballpark`).
pub fn new_entity_id(name: &str) -> String {
    let slug: String = name.trim().to_lowercase().chars().map(|c| if c.is_alphanumeric() { c } else { '_' }).collect();
    format!("new.{}", slug.trim_matches('_'))
}

/// What a node is, and its scores (`0.80 ████·  Σ0.560`) if it was scored.
pub fn node_parts(node: &BeamNode) -> (String, Option<String>) {
    let what = match &node.kind {
        NodeKind::Entity { term, .. } if !term.is_entity() => format!("\"{}\"", node.shown()),
        NodeKind::Entity { .. } => node.shown().to_string(),
        NodeKind::Relation { direction, shown, .. } => format!("{} {shown}", direction.arrow()),
    };
    (what, node.score.map(|s| format!("{s:.2} {}  Σ{:.3}", bar(s), node.path_score)))
}

/// A score as a five-cell bar.
pub fn bar(score: f64) -> String {
    let filled = (score.clamp(0.0, 1.0) * 5.0).round() as usize;
    format!("{}{}", "█".repeat(filled), "·".repeat(5 - filled))
}
