//! Correcting the KG: flag a triple, rename an entity, accept a generated triple.

use super::*;
use crate::engine::EngineError;
use crate::overlay::check_relabel;

/// How many of the KG's labels the object picker shows.
const OBJECT_MATCHES: usize = 50;

/// How long typing must pause before the KG is searched.
const TYPING_PAUSE_MS: u64 = 250;

impl App {
    /// Typing in the object picker: a search of the KG's labels once the typing pauses.
    pub(super) fn object_query_changed(&mut self) -> Vec<Effect> {
        let Some(picker) = self.picker.as_mut().filter(|p| p.purpose == Purpose::Object) else { return Vec::new() };
        if picker.query.trim().is_empty() || picker.searched.as_deref() == Some(picker.query.trim()) {
            return Vec::new();
        }
        picker.wake += 1;
        vec![Effect::Wake { token: picker.wake, after_ms: TYPING_PAUSE_MS }]
    }

    /// The typing paused: search the KG for what the object picker holds, unless more was typed
    /// since (a later wake-up is coming) or it was searched already.
    pub(super) fn woke(&mut self, token: u64) -> Vec<Effect> {
        let Some(picker) = self.picker.as_mut().filter(|p| p.purpose == Purpose::Object && p.wake == token) else {
            return Vec::new();
        };
        let name = picker.query.trim().to_string();
        if name.is_empty() || picker.searched.as_deref() == Some(name.as_str()) {
            return Vec::new();
        }
        picker.searched = Some(name.clone());
        picker.loading = true;
        let (token, lookup) = self.lookup(vec![Request::FindEntities { name, limit: OBJECT_MATCHES }]);
        if let Some(picker) = &mut self.picker {
            picker.expects = token;
        }
        vec![lookup]
    }

    /// Opens the flag form on the triple that reached the selected entity.
    pub(super) fn open_flag(&mut self) {
        let Some(id) = self.current_node() else { return };
        let Some(run) = &self.run else { return };
        match run.beam().triples(id).pop() {
            Some(triple) if run.beam().nodes[id].term().is_some() => self.form = Some(Form::flag(triple)),
            _ => self.say("select an entity reached through a relation to flag its triple"),
        }
    }

    /// GoG: stores the selected generated triple as an assert, credited to the LLM and the
    /// user who accepted it. Only a triple whose head the run linked to a KG entity can be.
    pub(super) fn accept_generated(&mut self) -> Vec<Effect> {
        let Some(id) = self.current_node() else { return Vec::new() };
        let Some(run) = &self.run else { return Vec::new() };
        let Some(g) = run.generated().iter().find(|g| g.node == id).cloned() else {
            self.say("select the object of an LLM-generated triple (marked ✦) to accept it");
            return Vec::new();
        };
        let Some(Term::Entity(subject)) = g.head_term.clone() else {
            self.fail(format!("{:?} is not linked to a KG entity: the triple cannot be stored", g.head));
            return Vec::new();
        };
        if !self.live {
            self.say("an offline replay writes no corrections: replay with --live to correct");
            return Vec::new();
        }
        let object = g.tail_term.clone().unwrap_or_else(|| Term::Literal(g.tail.clone()));
        // Worded so the answer it supports can say it rests on a generated triple.
        let reason = crate::overlay::generated_reason(&self.author);
        let draft = self.draft(Op::Assert { subject, relation: g.relation.clone(), object }, &reason);
        // Marked as generated: the mark, not the reason, says so.
        let drafts = vec![Draft { generated: true, ..draft }];
        self.pending_drafts.push_back(drafts.clone());
        self.say("recording the accepted triple…");
        vec![Effect::Correct { drafts }]
    }

    /// Approves (or rejects) the selected correction in the corrections pane, if it is a
    /// teammate's shared one.
    pub(super) fn review(&mut self, approve: bool) -> Vec<Effect> {
        if !self.live {
            self.say("an offline replay changes no corrections");
            return Vec::new();
        }
        let Some(c) = self.corrections.get(self.corrections_at) else {
            self.say("no correction to review: teammates' corrections show here once pulled");
            return Vec::new();
        };
        match &c.team {
            None => self.say(format!("correction {} is not a teammate's shared correction: nothing to review", c.id)),
            Some(t) if !t.pulled => self.say(format!("correction {} is your own: a teammate reviews it", c.id)),
            Some(_) => return vec![Effect::Review { id: c.id, approve }],
        }
        Vec::new()
    }

    /// Whether `c` is a teammate's correction that waits for approval (its set applies only
    /// approved ones, and its latest review is not an approval).
    pub fn awaits_approval(&self, c: &Correction) -> bool {
        c.team.as_ref().is_some_and(|t| {
            t.pulled
                && self.held_sets.contains(&t.set)
                && !crate::overlay::team_state::verdict(t).is_some_and(|r| r.approve)
        })
    }

    pub(super) fn open_relabel(&mut self) {
        let Some(id) = self.current_node() else { return };
        let Some(run) = &self.run else { return };
        match &run.beam().nodes[id].kind {
            NodeKind::Entity { term: Term::Entity(entity), label } => {
                self.form = Some(Form::relabel(entity.clone(), label.clone().unwrap_or_default()))
            }
            _ => self.say("select an entity to correct its name"),
        }
    }

    pub(super) fn draft(&self, op: Op, reason: &str) -> Draft {
        Draft {
            op,
            reason: reason.to_string(),
            generated: false,
            author: self.author.clone(),
            context: Some(CorrectionContext {
                question: self.run.as_ref().map(|r| r.question().to_string()),
                session: None,
                step: self.run.as_ref().map(|r| r.trace().len()),
            }),
            origin: Some("made in the terminal UI".into()),
        }
    }

    /// The correction a filled-in form stands for: one per form, so one undo reverts it. A
    /// flag retracts the triple or, when the right object is given, replaces it (a picked KG
    /// entity as is, a typed name as a new entity with an id and that name, a literal as the
    /// typed value).
    pub(super) fn form_draft(&self, form: &Form) -> Option<Draft> {
        match &form.kind {
            // Not a correction: the form's submission is handled before drafts are made.
            FormKind::EditStep { .. } => None,
            FormKind::Relabel { entity, .. } => Some(
                self.draft(Op::Relabel { entity: entity.clone(), label: form.value(0).to_string() }, form.value(1)),
            ),
            FormKind::Flag { triple: t, object, .. } => {
                let Term::Entity(head) = &t.head_term else { return None };
                let (subject, relation, old) = (head.clone(), t.relation_id.clone(), t.tail_term.clone());
                let typed = form.value(1);
                let op = match (object, &t.tail_term) {
                    (Some(term), _) => Op::Replace { subject, relation, old, new: term.clone(), label: None },
                    (None, _) if typed.is_empty() => Op::Retract { subject, relation, object: old },
                    (None, Term::Literal(_)) => {
                        Op::Replace { subject, relation, old, new: Term::Literal(typed.into()), label: None }
                    }
                    (None, Term::Entity(_)) => Op::Replace {
                        subject,
                        relation,
                        old,
                        new: Term::Entity(new_entity_id(typed)),
                        label: Some(typed.to_string()),
                    },
                };
                Some(self.draft(op, form.value(0)))
            }
        }
    }

    /// Why a filled-in form would record nothing worth recording (a name it already has, the
    /// flagged object as the right one).
    fn form_problem(draft: &Draft, form: &Form) -> Option<String> {
        match (&form.kind, &draft.op) {
            (FormKind::Relabel { entity, current }, Op::Relabel { label, .. }) => {
                check_relabel(entity, Some(current), label).err().map(|why| format!("{why} (esc cancels)"))
            }
            (_, Op::Replace { old, new, .. }) if old == new => {
                Some(format!("the right object is the flagged one ({old}): give another, or leave it empty"))
            }
            // A typed name is a new entity: the flagged one's own name would make a twin of it.
            (FormKind::Flag { triple, .. }, Op::Replace { label: Some(name), .. })
                if name.trim().eq_ignore_ascii_case(triple.tail.trim()) =>
            {
                Some(format!("{name:?} is the flagged object's name: give the right one, or ctrl-f to pick it"))
            }
            (_, Op::Replace { new: Term::Entity(id), label: Some(_), .. }) if id == "new." => {
                Some("the right object's name needs a letter or a digit".into())
            }
            _ => None,
        }
    }

    pub(super) fn on_form_key(&mut self, key: KeyEvent) -> Vec<Effect> {
        let Some(form) = &mut self.form else { return Vec::new() };
        let picking = key.code == KeyCode::Char('f') && key.modifiers.contains(KeyModifiers::CONTROL);
        if picking && matches!(form.kind, FormKind::Flag { .. }) {
            form.active = 1;
            let name = form.value(1).trim().to_string();
            let mut picker =
                Picker::new(Purpose::Object, " The right object: the KG's labels, searched as you type ".into());
            picker.query = name.clone();
            if name.is_empty() {
                picker.loading = false;
                self.picker = Some(picker);
                return Vec::new();
            }
            picker.searched = Some(name.clone());
            let (token, lookup) = self.lookup(vec![Request::FindEntities { name, limit: OBJECT_MATCHES }]);
            picker.expects = token;
            self.picker = Some(picker);
            return vec![lookup];
        }
        match Component::event(form, key) {
            Outcome::Editing => Vec::new(),
            Outcome::Cancelled => {
                self.form = None;
                Vec::new()
            }
            Outcome::Submitted if matches!(form.kind, FormKind::EditStep { .. }) => {
                let FormKind::EditStep { thought, .. } = &form.kind else { return Vec::new() };
                let edited = form.value(0);
                let thought = (edited != thought.trim()).then(|| edited.to_string());
                let change = Override::EditAction { thought, action: form.value(1).to_string() };
                // A step the engine would refuse keeps the form open, with the typed text.
                if let Some(Err(e)) = self.run.as_ref().map(|run| run.check(&change)) {
                    form.problem = Some(match e {
                        EngineError::BadOverride { why, .. } => why,
                        other => other.to_string(),
                    });
                    return Vec::new();
                }
                self.form = None;
                self.apply(change)
            }
            Outcome::Submitted => self.submit_form(),
        }
    }

    /// Records what the open form says, unless it would record nothing worth recording (the
    /// form stays open, its text kept, saying why) or a typed name must first be looked up.
    fn submit_form(&mut self) -> Vec<Effect> {
        let Some(form) = self.form.clone() else { return Vec::new() };
        let Some(draft) = self.form_draft(&form) else {
            self.form = None;
            return Vec::new();
        };
        if let Some(problem) = Self::form_problem(&draft, &form) {
            self.refuse_form(problem);
            return Vec::new();
        }
        // A typed right object is looked up first: an entity the KG has under that name is
        // the right object, not a new one.
        if let (Op::Replace { label: Some(name), .. }, FormKind::Flag { check, .. }) = (&draft.op, &form.kind)
            && check.done.as_deref() != Some(name.as_str())
            && self.live
        {
            let (token, lookup) =
                self.lookup(vec![Request::FindEntities { name: name.clone(), limit: OBJECT_MATCHES }]);
            if let Some(FormKind::Flag { check, .. }) = self.form.as_mut().map(|f| &mut f.kind) {
                check.expects = token;
                check.asked = name.clone();
            }
            self.say(format!("looking for {name:?} in the KG…"));
            return vec![lookup];
        }
        self.form = None;
        if !self.live {
            self.message = Some("an offline replay writes no corrections: replay with --live to correct".into());
            return Vec::new();
        }
        let drafts = vec![draft];
        self.pending_drafts.push_back(drafts.clone());
        self.say("recording the correction…");
        vec![Effect::Correct { drafts }]
    }

    /// Keeps the form open saying why its Enter was refused, on the field to change.
    fn refuse_form(&mut self, problem: String) {
        if let Some(open) = &mut self.form {
            open.problem = Some(problem.clone());
            // The field to change: the name, or the flag's right object.
            open.active = usize::from(matches!(open.kind, FormKind::Flag { .. }));
        }
        self.say(problem);
    }

    /// Whether the open form waits for the lookup `token` (a typed right object's name).
    pub(super) fn form_expects(&self, token: u64) -> bool {
        matches!(self.form.as_ref().map(|f| &f.kind), Some(FormKind::Flag { check, .. }) if check.expects == token)
    }

    /// The KG's entities named like the typed right object: exactly one is the right object;
    /// several are offered to pick from; none (or a failed lookup) makes the name a new entity
    /// at the next Enter, after saying so.
    pub(super) fn name_checked(&mut self, result: Result<Vec<Response>, String>) -> Vec<Effect> {
        let Some(form) = self.form.as_mut() else { return Vec::new() };
        let name = form.value(1).to_string();
        let FormKind::Flag { object, check, .. } = &mut form.kind else { return Vec::new() };
        check.expects = 0;
        // The field changed since the name was looked up: the answer is for another name.
        if check.asked != name {
            return Vec::new();
        }
        let matches = match result {
            Ok(responses) => responses
                .into_iter()
                .flat_map(|r| match r {
                    Response::Entities { matches } => matches,
                    _ => Vec::new(),
                })
                .collect::<Vec<_>>(),
            Err(e) => {
                check.done = Some(name.clone());
                self.refuse_form(format!(
                    "the KG could not be searched for {name:?} ({e}): enter makes it a new entity, ctrl-f picks one"
                ));
                return Vec::new();
            }
        };
        let same = |label: &str| label.trim().eq_ignore_ascii_case(&name);
        let exact: Vec<_> = matches.iter().filter(|m| same(&m.label)).collect();
        match exact.as_slice() {
            [one] => {
                *object = Some(Term::Entity(one.id.clone()));
                let said = format!("{name:?} is {} in the KG: the correction uses it", one.id);
                let effects = self.submit_form();
                // Unless the form refused it (and said why).
                if !effects.is_empty() {
                    self.say(said);
                }
                effects
            }
            [] => {
                check.done = Some(name.clone());
                if matches.is_empty() {
                    // Nothing like it in the KG: a new entity, as typed.
                    return self.submit_form();
                }
                let like: Vec<String> = matches.iter().take(3).map(|m| format!("{} ({})", m.label, m.id)).collect();
                self.refuse_form(format!(
                    "no entity is named exactly {name:?}; the KG has {} — ctrl-f picks one, enter makes a new entity",
                    like.join(", ")
                ));
                Vec::new()
            }
            several => {
                let items = several
                    .iter()
                    .map(|m| PickItem {
                        text: m.label.clone(),
                        detail: m.id.clone(),
                        value: PickValue::Term { term: Term::Entity(m.id.clone()), label: Some(m.label.clone()) },
                    })
                    .collect();
                check.done = Some(name.clone());
                let mut picker = Picker::new(
                    Purpose::Object,
                    format!(" {} entities are named {name:?}: which one? ", several.len()),
                );
                picker.loading = false;
                picker.items = items;
                picker.query = String::new();
                self.picker = Some(picker);
                self.say(format!("several entities are named {name:?}: pick one (esc, then enter, makes a new one)"));
                Vec::new()
            }
        }
    }
}

/// An id for an entity a user names in a correction: `new.` and the name in lower case with
/// `_` for anything but letters and digits (`BayCare Ballpark` → `new.baycare_ballpark`).
pub(super) fn new_entity_id(name: &str) -> String {
    let slug: String = name.trim().to_lowercase().chars().map(|c| if c.is_alphanumeric() { c } else { '_' }).collect();
    format!("new.{}", slug.trim_matches('_'))
}
