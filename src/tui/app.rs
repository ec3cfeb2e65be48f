//! The terminal UI's state and its one `update` function: a message in, state changed, effects
//! out. No I/O happens here (the effects executor performs KG lookups and LLM calls), so every
//! interaction is unit-testable and a saved session can drive it.

use crate::engine::beam::{NodeId, NodeKind, TripleView};
use crate::engine::{Override, Poll, Request, Response, Run, Settings, Topics};
use crate::kg::{KgProfile, Term};
use crate::overlay::{CorrectionContext, Draft, Op};
use crate::prompts::Prompts;
use crossterm::event::{KeyCode, KeyEvent, KeyModifiers};
use std::collections::HashSet;
use std::sync::Arc;

/// Everything that can happen to the UI.
#[derive(Debug)]
pub enum Action {
    Key(KeyEvent),
    /// The executor finished the requests of generation `generation`.
    Performed {
        generation: u64,
        result: Result<Vec<Response>, String>,
    },
    /// The executor stored corrections (their ids), or could not.
    Corrected(Result<Vec<u64>, String>),
    Resize,
}

/// What the UI asks the executor to do.
#[derive(Debug, PartialEq)]
pub enum Effect {
    /// Perform these requests and answer with `Action::Performed` for this generation.
    Perform { generation: u64, requests: Vec<Request> },
    /// Store these corrections durably, then see the KG through them; answer with
    /// `Action::Corrected`.
    Correct { drafts: Vec<Draft> },
}

/// The form for flagging a wrong triple.
#[derive(Clone, Debug, PartialEq)]
pub struct FlagForm {
    pub triple: TripleView,
    pub reason: String,
    /// The right object, if the user knows it: a name (a new entity is made for it, unless it
    /// is an id the answer already showed) or, for a literal, the right value.
    pub object: String,
    /// Which field is being typed in: false = reason, true = object.
    pub on_object: bool,
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
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Bottom {
    Transcript,
    Answer,
}

pub struct App {
    pub question: String,
    pub focus: Focus,
    pub bottom: Bottom,
    pub run: Option<Run>,
    /// Bumped whenever results in flight must be ignored (cancel, override, rewind, new run).
    pub generation: u64,
    pub in_flight: bool,
    /// Keep stepping until the answer (`r`), instead of one step at a time (`n`).
    pub auto: bool,
    /// Index into the visible rows of the beam tree.
    pub selected: usize,
    pub collapsed: HashSet<NodeId>,
    pub message: Option<String>,
    pub quit: bool,
    pub settings: Settings,
    pub prompts: Arc<Prompts>,
    pub profile: KgProfile,
    pub kg_name: String,
    pub llm_name: String,
    /// `NO_COLOR` is set: states are told by symbols and modifiers only.
    pub no_color: bool,
    pub flag: Option<FlagForm>,
    /// The answer before the last re-ask, to show what changed.
    pub earlier: Option<Earlier>,
    /// Who corrections are recorded as made by.
    pub author: String,
}

impl App {
    pub fn new(settings: Settings, prompts: Arc<Prompts>, profile: KgProfile, kg_name: &str, llm_name: &str) -> Self {
        Self {
            question: String::new(),
            focus: Focus::Question,
            bottom: Bottom::Transcript,
            run: None,
            generation: 0,
            in_flight: false,
            auto: false,
            selected: 0,
            collapsed: HashSet::new(),
            message: None,
            quit: false,
            settings,
            prompts,
            profile,
            kg_name: kg_name.to_string(),
            llm_name: llm_name.to_string(),
            no_color: std::env::var_os("NO_COLOR").is_some_and(|v| !v.is_empty()),
            flag: None,
            earlier: None,
            author: crate::overlay::default_author(None),
        }
    }

    /// The beam tree's rows as shown: (node, indentation), depth first, collapsed subtrees
    /// hidden.
    pub fn visible_rows(&self) -> Vec<(NodeId, usize)> {
        let Some(run) = &self.run else { return Vec::new() };
        let beam = run.beam();
        let mut rows = Vec::new();
        let mut stack: Vec<(NodeId, usize)> = beam.roots().map(|r| (r.id, 0)).collect();
        stack.reverse();
        while let Some((id, indent)) = stack.pop() {
            rows.push((id, indent));
            if !self.collapsed.contains(&id) {
                for &c in beam.nodes[id].children.iter().rev() {
                    stack.push((c, indent + 1));
                }
            }
        }
        rows
    }

    pub fn selected_node(&self) -> Option<NodeId> {
        self.visible_rows().get(self.selected).map(|(id, _)| *id)
    }

    /// Asks the run for its next step's requests.
    fn step(&mut self) -> Vec<Effect> {
        let Some(run) = &mut self.run else { return Vec::new() };
        if self.in_flight {
            return Vec::new();
        }
        match run.poll() {
            Poll::Finished => {
                self.auto = false;
                self.message = Some("answered: press e to ask another question".into());
                Vec::new()
            }
            Poll::Need(requests) => {
                self.in_flight = true;
                vec![Effect::Perform { generation: self.generation, requests }]
            }
        }
    }

    fn start(&mut self) -> Vec<Effect> {
        match Run::new(
            &self.question,
            Topics::Extract,
            self.settings.clone(),
            self.prompts.clone(),
            self.profile.clone(),
            &self.kg_name,
        ) {
            Ok(run) => {
                self.run = Some(run);
                self.generation += 1;
                self.in_flight = false;
                self.selected = 0;
                self.collapsed.clear();
                self.focus = Focus::Tree;
                self.message = Some("n: one step · r: run to the answer · ?: keys".into());
                self.step()
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
        match run.apply(o) {
            Ok(i) => {
                self.generation += 1;
                self.in_flight = false;
                self.message = run.trace().get(i).map(|e| e.summary.clone());
            }
            Err(e) => self.message = Some(e.to_string()),
        }
        Vec::new()
    }

    fn toggle_keep(&mut self) -> Vec<Effect> {
        let (Some(id), Some(run)) = (self.selected_node(), &self.run) else { return Vec::new() };
        let live = run.beam().nodes[id].status.is_live();
        self.apply(if live { Override::Drop { node: id } } else { Override::Keep { node: id } })
    }

    /// Opens the flag form on the triple that reached the selected entity.
    fn open_flag(&mut self) {
        let (Some(run), Some(id)) = (&self.run, self.selected_node()) else { return };
        match run.beam().triples(id).pop() {
            Some(triple) if run.beam().nodes[id].term().is_some() => {
                self.flag = Some(FlagForm { triple, reason: String::new(), object: String::new(), on_object: false });
            }
            _ => self.message = Some("select an entity reached through a relation to flag its triple".into()),
        }
    }

    /// The corrections a filled-in form stands for: retract the triple, and assert the right
    /// object when one was given (a new entity gets an id and a name).
    fn flag_drafts(&self, form: &FlagForm) -> Vec<Draft> {
        let t = &form.triple;
        let context = Some(CorrectionContext {
            question: Some(self.question.clone()),
            session: None,
            step: self.run.as_ref().map(|r| r.trace().len()),
        });
        let draft = |op: Op| Draft {
            op,
            reason: form.reason.trim().to_string(),
            author: self.author.clone(),
            context: context.clone(),
            origin: Some("flagged in the terminal UI".into()),
        };
        let (Term::Entity(head), tail) = (&t.head_term, &t.tail_term) else { return Vec::new() };
        let mut drafts =
            vec![draft(Op::Retract { subject: head.clone(), relation: t.relation_id.clone(), object: tail.clone() })];
        let object = form.object.trim();
        if object.is_empty() {
            return drafts;
        }
        match tail {
            Term::Literal(_) => drafts.push(draft(Op::Assert {
                subject: head.clone(),
                relation: t.relation_id.clone(),
                object: Term::Literal(object.to_string()),
            })),
            Term::Entity(_) => {
                let id = new_entity_id(object);
                drafts.push(draft(Op::Assert {
                    subject: head.clone(),
                    relation: t.relation_id.clone(),
                    object: Term::Entity(id.clone()),
                }));
                if let Some(name) = self.profile.label_predicates.first() {
                    drafts.push(draft(Op::Assert {
                        subject: id,
                        relation: name.clone(),
                        object: Term::Literal(object.to_string()),
                    }));
                }
            }
        }
        drafts
    }

    fn on_flag_key(&mut self, key: KeyEvent) -> Vec<Effect> {
        let Some(form) = &mut self.flag else { return Vec::new() };
        match key.code {
            KeyCode::Esc => self.flag = None,
            KeyCode::Tab | KeyCode::BackTab => form.on_object = !form.on_object,
            KeyCode::Backspace => {
                if form.on_object {
                    form.object.pop()
                } else {
                    form.reason.pop()
                };
            }
            KeyCode::Char(c) => {
                if form.on_object {
                    form.object.push(c)
                } else {
                    form.reason.push(c)
                }
            }
            KeyCode::Enter if form.reason.trim().is_empty() => {
                self.message = Some("say why the triple is wrong (the reason is recorded)".into());
            }
            KeyCode::Enter => {
                let form = form.clone();
                let drafts = self.flag_drafts(&form);
                self.flag = None;
                self.message = Some("recording the correction…".into());
                return vec![Effect::Correct { drafts }];
            }
            _ => {}
        }
        Vec::new()
    }

    /// Asks the same question again (through whatever corrections now apply), keeping the
    /// current answer to compare with.
    fn reask(&mut self) -> Vec<Effect> {
        if let Some(answer) = self.run.as_ref().and_then(|r| r.answer()) {
            self.earlier = Some(Earlier {
                answers: answer.answers.clone(),
                paths: answer.paths.iter().map(|p| p.text.clone()).collect(),
            });
        }
        self.auto = true;
        self.start()
    }

    fn rewind_one(&mut self) -> Vec<Effect> {
        let Some(run) = &mut self.run else { return Vec::new() };
        let steps: Vec<usize> = run.trace().iter().filter(|e| e.phase().is_some()).map(|e| e.index).collect();
        let Some(&to) = steps.iter().rev().nth(1) else {
            self.message = Some("nothing to rewind to".into());
            return Vec::new();
        };
        match run.rewind(to) {
            Ok(_) => {
                self.generation += 1;
                self.in_flight = false;
                self.auto = false;
                self.message = Some(format!("rewound to step {to}; the later steps are kept aside"));
            }
            Err(e) => self.message = Some(e.to_string()),
        }
        Vec::new()
    }
}

/// The one place the UI's state changes.
pub fn update(app: &mut App, action: Action) -> Vec<Effect> {
    match action {
        Action::Resize => Vec::new(),
        Action::Performed { generation, result } => {
            if generation != app.generation {
                return Vec::new(); // overtaken by a cancel, override or rewind
            }
            app.in_flight = false;
            let Some(run) = &mut app.run else { return Vec::new() };
            match result.map_err(|e| e.to_string()).and_then(|r| run.feed(r).map_err(|e| e.to_string())) {
                Ok(i) => {
                    app.message = run.trace().get(i).map(|e| e.summary.clone());
                    if run.is_finished() {
                        app.bottom = Bottom::Answer;
                        app.auto = false;
                        if let (Some(earlier), Some(now)) = (&app.earlier, run.answer()) {
                            app.message = Some(if earlier.answers == now.answers {
                                format!("same answer as before: {}", now.answers.join(" | "))
                            } else {
                                format!("answer changed: {} → {}", earlier.answers.join(" | "), now.answers.join(" | "))
                            });
                        }
                    }
                    if app.auto { app.step() } else { Vec::new() }
                }
                Err(e) => {
                    app.auto = false;
                    app.message = Some(format!("error: {e}"));
                    Vec::new()
                }
            }
        }
        Action::Corrected(Ok(ids)) => {
            let list = ids.iter().map(u64::to_string).collect::<Vec<_>>().join(", ");
            app.message = Some(format!("correction {list} recorded; a: ask again with it"));
            Vec::new()
        }
        Action::Corrected(Err(e)) => {
            app.message = Some(format!("the correction was not recorded: {e}"));
            Vec::new()
        }
        Action::Key(key) if app.flag.is_some() => app.on_flag_key(key),
        Action::Key(key) => on_key(app, key),
    }
}

/// An id for an entity a user names in a correction: `new.` and the name in lower case with
/// `_` for anything but letters and digits (`BayCare Ballpark` → `new.baycare_ballpark`).
pub fn new_entity_id(name: &str) -> String {
    let slug: String = name.trim().to_lowercase().chars().map(|c| if c.is_alphanumeric() { c } else { '_' }).collect();
    format!("new.{}", slug.trim_matches('_'))
}

fn on_key(app: &mut App, key: KeyEvent) -> Vec<Effect> {
    if key.modifiers.contains(KeyModifiers::CONTROL) && key.code == KeyCode::Char('c') {
        app.quit = true;
        return Vec::new();
    }
    match app.focus {
        Focus::Question => match key.code {
            KeyCode::Enter if !app.question.trim().is_empty() => app.start(),
            KeyCode::Char(c) => {
                app.question.push(c);
                Vec::new()
            }
            KeyCode::Backspace => {
                app.question.pop();
                Vec::new()
            }
            KeyCode::Esc if app.run.is_some() => {
                app.focus = Focus::Tree;
                Vec::new()
            }
            _ => Vec::new(),
        },
        Focus::Tree => {
            let rows = app.visible_rows().len();
            match key.code {
                KeyCode::Char('q') => app.quit = true,
                KeyCode::Char('e') | KeyCode::Char('i') => app.focus = Focus::Question,
                KeyCode::Char('n') | KeyCode::Char(' ') => return app.step(),
                KeyCode::Char('r') => {
                    app.auto = true;
                    return app.step();
                }
                KeyCode::Esc => {
                    if app.in_flight {
                        app.generation += 1;
                        app.in_flight = false;
                        app.message = Some("cancelled: the step in flight will be ignored".into());
                    }
                    app.auto = false;
                }
                KeyCode::Down | KeyCode::Char('j') => app.selected = (app.selected + 1).min(rows.saturating_sub(1)),
                KeyCode::Up | KeyCode::Char('k') => app.selected = app.selected.saturating_sub(1),
                KeyCode::Home | KeyCode::Char('g') => app.selected = 0,
                KeyCode::End | KeyCode::Char('G') => app.selected = rows.saturating_sub(1),
                KeyCode::Left | KeyCode::Char('h') => {
                    if let Some(id) = app.selected_node() {
                        app.collapsed.insert(id);
                    }
                }
                KeyCode::Right | KeyCode::Char('l') => {
                    if let Some(id) = app.selected_node() {
                        app.collapsed.remove(&id);
                    }
                }
                KeyCode::Char('x') => return app.toggle_keep(),
                KeyCode::Char('p') => {
                    if let Some(node) = app.selected_node() {
                        return app.apply(Override::Pin { node });
                    }
                }
                KeyCode::Char('d') => {
                    if let Some(node) = app.selected_node() {
                        return app.apply(Override::PrunePath { node });
                    }
                }
                KeyCode::Char('s') => return app.apply(Override::ForceSufficient),
                KeyCode::Char('c') => return app.apply(Override::ForceContinue),
                KeyCode::Char('b') => return app.rewind_one(),
                KeyCode::Char('f') => app.open_flag(),
                KeyCode::Char('a') if app.run.is_some() => return app.reask(),
                KeyCode::Tab => {
                    app.bottom = if app.bottom == Bottom::Transcript { Bottom::Answer } else { Bottom::Transcript }
                }
                _ => {}
            }
            Vec::new()
        }
    }
}

/// A node's one-line description for the tree.
pub fn node_line(run: &Run, id: NodeId) -> String {
    let n = &run.beam().nodes[id];
    let what = match &n.kind {
        NodeKind::Entity { term, .. } if !term.is_entity() => format!("\"{}\"", n.shown()),
        NodeKind::Entity { .. } => n.shown().to_string(),
        NodeKind::Relation { direction, shown, .. } => format!("{} {shown}", direction.arrow()),
    };
    match n.score {
        Some(s) => format!("{} {what}  {s:.2} {}  Σ{:.3}", n.status.symbol(), bar(s), n.path_score),
        None => format!("{} {what}", n.status.symbol()),
    }
}

/// A score as a five-cell bar.
pub fn bar(score: f64) -> String {
    let filled = (score.clamp(0.0, 1.0) * 5.0).round() as usize;
    format!("{}{}", "█".repeat(filled), "·".repeat(5 - filled))
}
