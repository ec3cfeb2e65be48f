//! The small windows that take the keyboard for a moment: the correction forms, the fuzzy
//! picker of KG candidates, the command palette and the search prompt. Each is plain state with
//! a key handler that says what the user chose; `app` acts on the choice.

use crate::engine::beam::{NodeId, TripleView};
use crate::kg::{RelationRef, Term};
use crossterm::event::{KeyCode, KeyEvent, KeyModifiers};
use fuzzy_matcher::FuzzyMatcher;
use fuzzy_matcher::skim::SkimMatcherV2;

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

/// What a key did to a modal.
#[derive(Debug, PartialEq)]
pub enum Outcome {
    /// Still open.
    Editing,
    Cancelled,
    Submitted,
}

/// Line editing shared by every one-line field: printable characters, Backspace, Ctrl-U.
fn edit(text: &mut String, key: KeyEvent) -> bool {
    match key.code {
        KeyCode::Char('u') if key.modifiers.contains(KeyModifiers::CONTROL) => text.clear(),
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
    pub label: &'static str,
    pub value: String,
    pub required: bool,
}

#[derive(Clone, Debug, PartialEq)]
pub enum FormKind {
    /// A triple is wrong; the optional second field names the right object (typed, or picked
    /// from the KG, in which case `object` is its term).
    Flag { triple: TripleView, object: Option<Term> },
    /// An entity's name is wrong.
    Relabel { entity: String, current: String },
    /// GoG's last thought and action, before the action runs.
    EditStep { thought: String },
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
            kind: FormKind::Flag { triple, object: None },
            fields: vec![
                Field { label: "Why is it wrong", value: String::new(), required: true },
                Field {
                    label: "Right object (optional; ctrl-f: pick from the KG)",
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
                Field { label: "Right name", value: current.clone(), required: true },
                Field { label: "Why", value: String::new(), required: true },
            ],
            kind: FormKind::Relabel { entity, current },
            active: 0,
            problem: None,
        }
    }

    pub fn edit_step(thought: String, action: String) -> Self {
        Self {
            fields: vec![
                Field { label: "Thought", value: thought.clone(), required: false },
                Field {
                    label: "Action: Search[e1 | e2], Generate[thought] or Finish[a1 | a2]",
                    value: action,
                    required: true,
                },
            ],
            kind: FormKind::EditStep { thought },
            active: 1,
            problem: None,
        }
    }

    pub fn title(&self) -> &'static str {
        match self.kind {
            FormKind::Flag { .. } => " Flag a wrong triple ",
            FormKind::Relabel { .. } => " Correct a name ",
            FormKind::EditStep { .. } => " Edit GoG's next step before it runs ",
        }
    }

    pub fn value(&self, i: usize) -> &str {
        self.fields.get(i).map(|f| f.value.trim()).unwrap_or("")
    }

    pub fn on_key(&mut self, key: KeyEvent) -> Outcome {
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
                    && let FormKind::Flag { object, .. } = &mut self.kind
                    && self.active == 1
                {
                    // A typed change forgets an object picked earlier.
                    *object = None;
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

    pub fn on_key(&mut self, key: KeyEvent) -> Outcome {
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

    pub fn on_key(&mut self, key: KeyEvent) -> Outcome {
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
}
