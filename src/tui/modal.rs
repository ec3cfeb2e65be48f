//! The small windows that take the keyboard for a moment: the correction forms, the fuzzy
//! picker of KG candidates, the command palette and the search prompt. Each is plain state with
//! a key handler that says what the user chose; `app` acts on the choice.

use super::component::{Component, Outcome, popup, window};
use super::keymap::Command;
use super::theme::Theme;
use crate::engine::EditableStep;
use crate::engine::beam::{NodeId, TripleView};
use crate::kg::{RelationRef, Term};
use crossterm::event::{KeyCode, KeyEvent, KeyModifiers};
use fuzzy_matcher::FuzzyMatcher;
use fuzzy_matcher::skim::SkimMatcherV2;
use ratatui::Frame;
use ratatui::layout::Rect;
use ratatui::style::{Modifier, Style};
use ratatui::text::{Line, Span};
use ratatui::widgets::{Block, Clear, Paragraph, Wrap};

/// Ranks `items` against `query` (fuzzy, skim's algorithm); all of them, in order, when the
/// query is empty. Returns indices, best first.
pub fn fuzzy_rank<'a>(query: &str, items: impl Iterator<Item = &'a str>) -> Vec<usize> {
    let query = query.trim();
    if query.is_empty() {
        return items.enumerate().map(|(i, _)| i).collect();
    }
    let matcher = SkimMatcherV2::default().ignore_case();
    let mut scored: Vec<(i64, usize)> =
        items.enumerate().filter_map(|(i, text)| matcher.fuzzy_match(text, query).map(|s| (s, i))).collect();
    // Stable: equal scores keep their original order.
    scored.sort_by_key(|&(score, _)| std::cmp::Reverse(score));
    scored.into_iter().map(|(_, i)| i).collect()
}

/// Line editing shared by every one-line field: printable characters, Backspace, Ctrl-U.
fn edit(text: &mut String, key: KeyEvent) -> bool {
    match key.code {
        KeyCode::Char('u') if key.modifiers.contains(KeyModifiers::CONTROL) => text.clear(),
        // A line break pasted into a one-line field (ctrl-j) parts words as a space would.
        KeyCode::Char('j') if key.modifiers.contains(KeyModifiers::CONTROL) => text.push(' '),
        KeyCode::Char(c) if !key.modifiers.contains(KeyModifiers::CONTROL) => text.push(c),
        KeyCode::Backspace => {
            text.pop();
        }
        _ => return false,
    }
    true
}

#[derive(Clone, Debug, PartialEq)]
pub struct Field {
    pub label: String,
    pub value: String,
    pub required: bool,
}

#[derive(Clone, Debug, PartialEq)]
pub enum FormKind {
    /// A triple is wrong; the optional second field names the right object (typed, or picked
    /// from the KG, in which case `object` is its term). A typed name is looked up in the KG
    /// before it becomes a new entity (see [`NameCheck`]).
    Flag { triple: TripleView, object: Option<Term>, check: NameCheck },
    /// An entity's name is wrong.
    Relabel { entity: String, current: String },
    /// GoG's last thought and action, before the action runs.
    EditStep { thought: String, title: String },
}

/// The KG lookup of a right object's typed name: an entity the KG has under that name is used,
/// not made again under a new id.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct NameCheck {
    /// The lookup the form waits for (0: none).
    pub expects: u64,
    /// The name that lookup is for: an answer for a name since edited away is dropped.
    pub asked: String,
    /// A name already looked up that no entity has (or that could not be looked up): the next
    /// Enter makes it a new entity.
    pub done: Option<String>,
}

#[derive(Clone, Debug, PartialEq)]
pub struct Form {
    pub kind: FormKind,
    pub fields: Vec<Field>,
    pub active: usize,
    /// Why the last Enter was refused.
    pub problem: Option<String>,
}

impl Form {
    pub fn flag(triple: TripleView) -> Self {
        Self {
            kind: FormKind::Flag { triple, object: None, check: NameCheck::default() },
            fields: vec![
                Field { label: "Why is it wrong".into(), value: String::new(), required: true },
                Field {
                    label: "Right object (optional; ctrl-f: pick from the KG)".into(),
                    value: String::new(),
                    required: false,
                },
            ],
            active: 0,
            problem: None,
        }
    }

    pub fn relabel(entity: String, current: String) -> Self {
        Self {
            fields: vec![
                Field { label: "Right name".into(), value: current.clone(), required: true },
                Field { label: "Why".into(), value: String::new(), required: true },
            ],
            kind: FormKind::Relabel { entity, current },
            active: 0,
            problem: None,
        }
    }

    pub fn edit_step(step: &EditableStep) -> Self {
        Self {
            fields: vec![
                Field { label: "Thought".into(), value: step.thought.clone(), required: false },
                Field { label: format!("Action: {}", step.actions), value: step.action.clone(), required: true },
            ],
            kind: FormKind::EditStep {
                thought: step.thought.clone(),
                title: format!(" Edit {}'s next step before it runs ", step.method),
            },
            active: 1,
            problem: None,
        }
    }

    pub fn title(&self) -> &str {
        match &self.kind {
            FormKind::Flag { .. } => " Flag a wrong triple ",
            FormKind::Relabel { .. } => " Correct a name ",
            FormKind::EditStep { title, .. } => title,
        }
    }

    pub fn value(&self, i: usize) -> &str {
        self.fields.get(i).map(|f| f.value.trim()).unwrap_or("")
    }

    fn on_key(&mut self, key: KeyEvent) -> Outcome {
        match key.code {
            KeyCode::Esc => return Outcome::Cancelled,
            KeyCode::Tab | KeyCode::Down => self.active = (self.active + 1) % self.fields.len(),
            KeyCode::BackTab | KeyCode::Up => self.active = (self.active + self.fields.len() - 1) % self.fields.len(),
            KeyCode::Enter => match self.fields.iter().position(|f| f.required && f.value.trim().is_empty()) {
                Some(i) => {
                    self.problem =
                        Some(format!("{} is needed (it is recorded with the correction)", self.fields[i].label));
                    self.active = i;
                }
                None => return Outcome::Submitted,
            },
            _ => {
                if let Some(field) = self.fields.get_mut(self.active)
                    && edit(&mut field.value, key)
                    && let FormKind::Flag { object, check, .. } = &mut self.kind
                    && self.active == 1
                {
                    // A typed change forgets an object picked earlier, and the lookup of the
                    // name as it was.
                    *object = None;
                    check.expects = 0;
                }
            }
        }
        Outcome::Editing
    }
}

/// What a picked candidate is.
#[derive(Clone, Debug, PartialEq)]
pub enum PickValue {
    Relation(RelationRef),
    Term { term: Term, label: Option<String> },
}

#[derive(Clone, Debug, PartialEq)]
pub struct PickItem {
    pub text: String,
    pub detail: String,
    pub value: PickValue,
}

/// What the picker is choosing for.
#[derive(Clone, Debug, PartialEq)]
pub enum Purpose {
    /// A relation to add under this entity node.
    Relation { parent: NodeId },
    /// An entity to add under this relation node.
    Entity { parent: NodeId },
    /// The right object in the open flag form.
    Object,
}

#[derive(Clone, Debug, PartialEq)]
pub struct Picker {
    pub purpose: Purpose,
    pub title: String,
    pub query: String,
    pub items: Vec<PickItem>,
    pub selected: usize,
    /// Still waiting for the KG's candidates.
    pub loading: bool,
    /// For a picker that searches the KG as you type: the query its items answer.
    pub searched: Option<String>,
    /// The latest wake-up asked for while typing; an older one finds the typing not done.
    pub wake: u64,
    /// The lookup whose answer it waits for (an older one's is dropped).
    pub expects: u64,
    /// Said after the title once the candidates are in (how many are new).
    pub note: String,
}

impl Picker {
    pub fn new(purpose: Purpose, title: String) -> Self {
        Self {
            purpose,
            title,
            query: String::new(),
            items: Vec::new(),
            selected: 0,
            loading: true,
            searched: None,
            wake: 0,
            expects: 0,
            note: String::new(),
        }
    }

    /// Indices of the items matching the query, best first. Items the KG found for this very
    /// query are all shown, in the KG's order.
    pub fn shown(&self) -> Vec<usize> {
        if self.searched.as_deref() == Some(self.query.trim()) {
            return (0..self.items.len()).collect();
        }
        fuzzy_rank(&self.query, self.items.iter().map(|i| i.text.as_str()))
    }

    pub fn chosen(&self) -> Option<&PickItem> {
        self.shown().get(self.selected).and_then(|&i| self.items.get(i))
    }

    fn on_key(&mut self, key: KeyEvent) -> Outcome {
        if key.code == KeyCode::Enter && self.chosen().is_none() {
            return Outcome::Editing;
        }
        let outcome = filtered_list_key(&mut self.query, &mut self.selected, key);
        self.selected = self.selected.min(self.shown().len().saturating_sub(1));
        outcome
    }
}

/// Keys of a fuzzy-filtered list: type to filter, ↑/↓ to choose, Enter, Esc. The caller keeps
/// `selected` within the filtered list.
fn filtered_list_key(query: &mut String, selected: &mut usize, key: KeyEvent) -> Outcome {
    match key.code {
        KeyCode::Esc => return Outcome::Cancelled,
        KeyCode::Enter => return Outcome::Submitted,
        KeyCode::Down => *selected += 1,
        KeyCode::Up => *selected = selected.saturating_sub(1),
        _ => {
            if edit(query, key) {
                *selected = 0;
            }
        }
    }
    Outcome::Editing
}

/// The command palette: every command by name, fuzzy-filtered; text after the name is its
/// argument (`save-as /tmp/demo.json`).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Palette {
    pub query: String,
    pub selected: usize,
    /// The commands matching what is typed, best first, with their keys (the app fills them:
    /// the keys are the user's).
    pub rows: Vec<PaletteRow>,
}

#[derive(Clone, Debug, PartialEq)]
pub struct PaletteRow {
    pub command: Command,
    pub keys: String,
}

impl Palette {
    /// The typed command word and its argument.
    pub fn parts(&self) -> (&str, Option<&str>) {
        let q = self.query.trim_start();
        match q.split_once(' ') {
            Some((name, arg)) if !arg.trim().is_empty() => (name, Some(arg.trim())),
            Some((name, _)) => (name, None),
            None => (q, None),
        }
    }

    fn on_key(&mut self, key: KeyEvent) -> Outcome {
        filtered_list_key(&mut self.query, &mut self.selected, key)
    }
}

/// A fuzzy search over the beam's nodes (the KG's matching labels are reported in the status
/// bar when they arrive).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Search {
    pub query: String,
    /// Still typing the query.
    pub typing: bool,
    /// Matching nodes of the current beam, best first.
    pub matches: Vec<NodeId>,
    pub current: usize,
    /// The KG lookup of the query whose answer it waits for.
    pub expects: u64,
}

/// A dialog's keys on one line: `enter: record · esc: cancel`.
fn keys_line(commands: &[(&str, &str)]) -> String {
    commands.iter().map(|(keys, what)| format!("{keys}: {what}")).collect::<Vec<_>>().join(" · ")
}

fn bold() -> Style {
    Style::new().add_modifier(Modifier::BOLD)
}

impl Component for Form {
    fn event(&mut self, key: KeyEvent) -> Outcome {
        self.on_key(key)
    }

    fn draw(&self, frame: &mut Frame<'_>, area: Rect, theme: &Theme) {
        let rect = popup(area, 90, 14);
        let mut lines = Vec::new();
        match &self.kind {
            FormKind::Flag { triple, object, .. } => {
                lines.push(Line::from(Span::styled("This triple is wrong:", bold())));
                lines.push(Line::from(triple.line()));
                lines.push(Line::from(Span::styled(
                    format!("({} {} {})", triple.head_term, triple.relation_id, triple.tail_term),
                    theme.faint(),
                )));
                if let Some(term) = object {
                    lines.push(Line::from(Span::styled(format!("right object from the KG: {term}"), theme.faint())));
                }
            }
            FormKind::Relabel { entity, current } => {
                lines.push(Line::from(Span::styled(format!("The name of {entity} is wrong:"), bold())));
                lines.push(Line::from(format!("now: {current}")));
            }
            FormKind::EditStep { thought, .. } => {
                lines.push(Line::from(Span::styled("The model's next step, not run yet:", bold())));
                lines.push(Line::from(format!("Thought: {thought}")));
                lines.push(Line::from(Span::styled(
                    "What you enter runs instead; the transcript records the change and the session replays it.",
                    theme.faint(),
                )));
            }
        }
        lines.push(Line::from(""));
        for (i, field) in self.fields.iter().enumerate() {
            let active = i == self.active;
            let style = if active { bold() } else { Style::new() };
            let cursor = if active { "▏" } else { "" };
            lines.push(Line::from(vec![
                Span::styled(format!("{}: ", field.label), style),
                Span::raw(format!("{}{cursor}", field.value)),
            ]));
        }
        lines.push(Line::from(""));
        if let Some(problem) = &self.problem {
            lines.push(Line::from(Span::styled(problem.clone(), theme.fg(theme.flagged).add_modifier(Modifier::BOLD))));
        }
        lines.push(Line::from(Span::styled(keys_line(&self.commands()), theme.faint())));
        frame.render_widget(Clear, rect);
        frame.render_widget(
            Paragraph::new(lines).block(Block::bordered().title(self.title())).wrap(Wrap { trim: false }),
            rect,
        );
    }

    fn commands(&self) -> Vec<(&'static str, &'static str)> {
        let mut keys = vec![
            ("enter", if matches!(self.kind, FormKind::EditStep { .. }) { "run this step" } else { "record" }),
            ("tab", "next field"),
        ];
        if matches!(self.kind, FormKind::Flag { .. }) {
            keys.push(("ctrl-f", "search the KG for the object"));
        }
        keys.push(("esc", "cancel"));
        keys
    }
}

impl Component for Picker {
    fn event(&mut self, key: KeyEvent) -> Outcome {
        self.on_key(key)
    }

    fn draw(&self, frame: &mut Frame<'_>, area: Rect, theme: &Theme) {
        // Wide enough for a Freebase relation and its "in the tree" mark.
        let rect = popup(area, 110, 18);
        let inner = rect.height.saturating_sub(4) as usize;
        let shown = self.shown();
        let mut lines = vec![Line::from(vec![Span::styled("filter: ", bold()), Span::raw(format!("{}▏", self.query))])];
        if self.loading {
            lines.push(Line::from(Span::styled("asking the KG…", theme.faint())));
        } else if self.items.is_empty() && self.searched.is_none() && self.purpose == Purpose::Object {
            lines
                .push(Line::from(Span::styled("type a name: the KG's labels are searched as you type", theme.faint())));
        } else {
            lines.push(Line::from(Span::styled(
                format!("{} of {} candidates · {}", shown.len(), self.items.len(), keys_line(&self.commands()[1..])),
                theme.faint(),
            )));
        }
        let offset = window(self.selected, shown.len(), inner);
        for (row, &i) in shown.iter().enumerate().skip(offset).take(inner) {
            let item = &self.items[i];
            let line = Line::from(vec![
                Span::raw(crate::safe_text::one_line(&item.text).into_owned()),
                Span::styled(format!("  {}", crate::safe_text::one_line(&item.detail)), theme.faint()),
            ]);
            lines.push(if row == self.selected { line.style(theme.selected()) } else { line });
        }
        frame.render_widget(Clear, rect);
        frame.render_widget(
            Paragraph::new(lines).block(Block::bordered().title(format!("{}{}", self.title, self.note))),
            rect,
        );
    }

    fn commands(&self) -> Vec<(&'static str, &'static str)> {
        vec![("type", "filter"), ("↑/↓", "choose"), ("enter", "take it"), ("esc", "cancel")]
    }
}

impl Component for Palette {
    fn event(&mut self, key: KeyEvent) -> Outcome {
        self.on_key(key)
    }

    fn draw(&self, frame: &mut Frame<'_>, area: Rect, theme: &Theme) {
        let rect = popup(area, 96, 16);
        let inner = rect.height.saturating_sub(3) as usize;
        let commands = &self.rows;
        let mut lines = vec![Line::from(vec![Span::styled(": ", bold()), Span::raw(format!("{}▏", self.query))])];
        let offset = window(self.selected, commands.len(), inner);
        for (at, row) in commands.iter().enumerate().skip(offset).take(inner) {
            let (c, keys) = (row.command, &row.keys);
            let line = Line::from(vec![
                Span::styled(format!("{:<19}", c.name()), bold()),
                Span::styled(format!("{keys:<14}"), theme.faint()),
                Span::raw(c.help()),
            ]);
            lines.push(if at == self.selected { line.style(theme.selected()) } else { line });
        }
        frame.render_widget(Clear, rect);
        frame.render_widget(
            Paragraph::new(lines)
                .block(Block::bordered().title(format!(" Commands · {} ", keys_line(&self.commands())))),
            rect,
        );
    }

    fn commands(&self) -> Vec<(&'static str, &'static str)> {
        vec![("type", "to filter"), ("enter", "run"), ("esc", "close")]
    }
}
