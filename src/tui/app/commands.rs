//! What keys, the palette and the mouse do: one `command` for every named command.

use super::*;

impl App {
    /// Rows of the method pane (the method's view: paths, or steps).
    pub(super) fn method_rows(&self) -> usize {
        self.run.as_ref().map_or(0, |run| run.view().items.len())
    }

    /// Enter in the method pane: a step about to run opens for editing; a path is shown in the
    /// tree.
    pub(super) fn method_row(&mut self) -> Vec<Effect> {
        let Some(run) = &self.run else { return Vec::new() };
        let view = run.view();
        let Some(item) = view.items.get(self.method_at) else { return Vec::new() };
        if let Some(step) = &item.edit {
            self.form = Some(Form::edit_step(step));
        } else if let Some(leaf) = item.node {
            self.reveal(NodeRef { branch: None, id: leaf });
        } else if let Some(pending) = view.items.iter().position(|i| i.edit.is_some()) {
            // The title says "enter: edit the step about to run": say which row that is.
            self.say(format!(
                "step {} has run; step {} (⏵) is about to run: select it (j/k) and Enter edits it (to change step {}, go back to it from the transcript)",
                self.method_at + 1,
                pending + 1,
                self.method_at + 1
            ));
        } else {
            self.say(format!(
                "step {} has run: only the step about to run can be edited (go back to it from the transcript)",
                self.method_at + 1
            ));
        }
        Vec::new()
    }

    pub(super) fn on_palette_key(&mut self, key: KeyEvent) -> Vec<Effect> {
        let Some(palette) = &mut self.palette else { return Vec::new() };
        match Component::event(palette, key) {
            Outcome::Editing => {
                self.refresh_palette();
                Vec::new()
            }
            Outcome::Cancelled => {
                self.palette = None;
                Vec::new()
            }
            Outcome::Submitted => {
                let (typed, arg) = palette.parts();
                let (typed, arg) = (typed.to_string(), arg.map(str::to_string));
                let chosen = palette.rows.get(palette.selected).map(|r| r.command);
                self.palette = None;
                match chosen {
                    // A pane's command acts on that pane's selected row: only where it is seen.
                    Some(c)
                        if !matches!(c.pane(), Pane::Any | Pane::Tree | Pane::Matches)
                            && c.pane() != self.focus.pane() =>
                    {
                        self.say(format!(
                            "{} works on the {}'s selected row: focus it first (Tab)",
                            c.name(),
                            c.pane().name()
                        ));
                        Vec::new()
                    }
                    Some(c) => self.command(c, arg),
                    None => {
                        // `?` lists keys, not commands: the palette lists these as you type.
                        self.say(format!("no command {typed:?}: the palette (:) lists every command as you type"));
                        Vec::new()
                    }
                }
            }
        }
    }

    /// Fills the palette's rows for what is typed, with the keys in force.
    pub(super) fn refresh_palette(&mut self) {
        let rows: Vec<PaletteRow> = self
            .palette_commands()
            .into_iter()
            .map(|command| PaletteRow { command, keys: self.keymap.keys_for(command) })
            .collect();
        if let Some(p) = &mut self.palette {
            p.selected = p.selected.min(rows.len().saturating_sub(1));
            p.rows = rows;
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

    pub(super) fn rows_in_focus(&self) -> usize {
        match self.focus {
            Focus::Question | Focus::Tree => self.visible_rows().len(),
            Focus::Transcript => self.run.as_ref().map_or(0, |r| r.trace().len()),
            Focus::Method => self.method_rows(),
            Focus::Answer => self.run.as_ref().and_then(|r| r.answer()).map_or(0, |a| a.paths.len()),
            Focus::Corrections => self.corrections.len(),
            Focus::Messages => self.messages.len(),
            // Scrolled by wrapped rows, to the last one at the bottom.
            Focus::Inspector => self.inspector_scroll_end() + 1,
        }
    }

    pub(super) fn cursor(&mut self) -> &mut usize {
        match self.focus {
            Focus::Question | Focus::Tree => &mut self.selected,
            Focus::Transcript => &mut self.transcript_at,
            Focus::Method => &mut self.method_at,
            Focus::Answer => &mut self.answer_at,
            Focus::Corrections => &mut self.corrections_at,
            Focus::Messages => &mut self.messages_at,
            Focus::Inspector => &mut self.inspector_at,
        }
    }

    pub(super) fn move_cursor(&mut self, to: impl FnOnce(usize, usize) -> isize) {
        let rows = self.rows_in_focus();
        let cursor = self.cursor();
        *cursor = to(*cursor, rows).clamp(0, rows.saturating_sub(1) as isize) as usize;
    }

    pub(super) fn cycle_pane(&mut self, forward: bool) {
        let order = [
            Focus::Tree,
            Focus::Inspector,
            Focus::Transcript,
            Focus::Method,
            Focus::Answer,
            Focus::Corrections,
            Focus::Messages,
        ];
        let n = order.len();
        let at = order.iter().position(|f| *f == self.focus).unwrap_or(0);
        self.focus_on(order[if forward { (at + 1) % n } else { (at + n - 1) % n }]);
    }

    /// Focuses `focus`, showing its pane if it is a bottom one.
    pub(super) fn focus_on(&mut self, focus: Focus) {
        // Coming to the corrections, the newest active one is selected (the one `u` undoes).
        if focus == Focus::Corrections && self.focus != focus {
            let newest = self.corrections.iter().rposition(|c| c.active);
            self.corrections_at = newest.unwrap_or(self.corrections.len().saturating_sub(1));
        }
        self.focus = focus;
        if let Some(bottom) = focus.bottom() {
            self.bottom = bottom;
        }
    }

    /// Shows `bottom`; a focus on the bottom pane it replaces follows it, so keys never act on
    /// a hidden pane.
    pub(super) fn show_bottom(&mut self, bottom: Bottom) {
        self.bottom = bottom;
        if self.focus.bottom().is_some() {
            self.focus = bottom.focus();
        }
    }

    /// Does what `command` means (`arg` from the palette): one arm a command, each a line or
    /// two, the longer ones in a handler below.
    pub(super) fn command(&mut self, command: Command, arg: Option<String>) -> Vec<Effect> {
        let page = (self.areas().tree.height.saturating_sub(2) / 2).max(1) as isize;
        if self.run.is_none() && needs_a_run(command) {
            self.say(format!("{}: ask a question first (i, then enter)", command.name()));
            return Vec::new();
        }
        match command {
            Command::Step if self.in_flight.is_some() => self.say("a step is running: wait for it, or esc cancels it"),
            Command::Step => return self.step(),
            Command::Run => return self.run_to_answer(),
            Command::Cancel => self.cancel(),
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
            Command::Collapse => self.fold_selected(true),
            Command::Expand => self.fold_selected(false),
            Command::Toggle => return self.toggle_keep(),
            Command::Add => return self.open_add(),
            Command::Pin => return self.apply_to_selected(|node| Override::Pin { node }),
            Command::PrunePath => return self.apply_to_selected(|node| Override::PrunePath { node }),
            Command::Sufficient => return self.apply(Override::ForceSufficient),
            Command::Continue => return self.apply(Override::ForceContinue),
            Command::Back => return self.rewind_one(),
            Command::ClearAbandoned => self.clear_abandoned(),
            Command::Flag => self.open_flag(),
            Command::Relabel => self.open_relabel(),
            Command::AcceptGenerated => return self.accept_generated(),
            Command::EditAction => return self.edit_action(arg),
            Command::Trace => self.trace_answer(),
            Command::Rewind => return self.rewind_to_selected_step(),
            Command::MethodRow => return self.method_row(),
            Command::Jump => self.jump_to_path(),
            Command::Undo => return self.undo_correction(),
            Command::Approve | Command::Reject => return self.review(command == Command::Approve),
            Command::Impact => return self.show_impact(),
            Command::RerunImpact => return self.rerun_impact(),
            Command::Search => self.search = Some(Search { typing: true, ..Search::default() }),
            Command::SearchNext => self.search_jump(1),
            Command::SearchPrev => self.search_jump(-1),
            // A session of no run replays nothing: saying so beats writing a file `replay` refuses.
            Command::Save | Command::SaveAs if self.run.is_none() && self.recording.runs.is_empty() => {
                self.say("nothing to save yet: ask a question first")
            }
            Command::Save => return vec![Effect::Save { path: None, session: Box::new(self.session()) }],
            Command::SaveAs => return self.save_as(arg),
            Command::ExportCorrections => return vec![Effect::Export { path: arg.map(PathBuf::from) }],
            Command::Open => return self.open_session(arg),
            Command::NextTheme => self.next_theme(arg),
            Command::SwitchMethod => self.switch_method(arg),
            Command::Palette => self.open_palette(),
            Command::Help => self.open_help(),
            // Pressed again, it gives the focus back to the tree.
            Command::Messages if self.focus == Focus::Messages => self.focus = Focus::Tree,
            Command::Messages => self.show_messages(),
            Command::Suspend => self.suspend = true,
            Command::Quit => self.quit_unless_unsaved(),
        }
        Vec::new()
    }

    /// `r`: steps on to the answer, the step in flight first.
    fn run_to_answer(&mut self) -> Vec<Effect> {
        if self.in_flight.is_some() && !self.auto {
            self.say("running on to the answer after the step in flight (esc stops)");
        }
        self.auto = true;
        self.step()
    }

    /// Esc: cancels the search and the step in flight (else leaves a side pane).
    fn cancel(&mut self) {
        // The search's status goes with it; a cancelled step says so after.
        if self.search.take().is_some() {
            self.message = None;
        }
        let cancelled = self.in_flight.take().is_some();
        if cancelled {
            self.generation += 1;
            self.asked = None;
            self.say("cancelled: the step in flight will be ignored");
        }
        self.auto = false;
        // With nothing to cancel, Esc leaves a side pane for the tree.
        if !cancelled && !matches!(self.focus, Focus::Tree | Focus::Question) {
            self.focus = Focus::Tree;
        }
    }

    /// Folds (`collapse`) or unfolds the selected row.
    fn fold_selected(&mut self, collapse: bool) {
        if let Some(node) = self.selected_ref() {
            if collapse {
                self.collapsed.insert(node);
            } else {
                self.collapsed.remove(&node);
            }
        }
    }

    /// Applies the override `make` builds for the selected node, if one of the run's is.
    fn apply_to_selected(&mut self, make: impl FnOnce(NodeId) -> Override) -> Vec<Effect> {
        match self.current_node() {
            Some(node) => self.apply(make(node)),
            None => Vec::new(),
        }
    }

    /// Takes the branches set aside (by going back) out of the tree's view.
    fn clear_abandoned(&mut self) {
        let abandoned = self.run.as_ref().map_or(0, |r| r.abandoned().len());
        if abandoned <= self.abandoned_from {
            self.say("no branch is set aside: b (back) sets one aside");
            return;
        }
        self.abandoned_from = abandoned;
        self.selected = self.selected.min(self.visible_rows().len().saturating_sub(1));
        self.say("branches set aside are cleared from view");
    }

    /// `edit-action ACTION`: replaces the action about to run.
    fn edit_action(&mut self, arg: Option<String>) -> Vec<Effect> {
        match arg {
            Some(action) => self.apply(Override::EditAction { thought: None, action: action.to_string() }),
            None => {
                self.say("edit-action needs an action: edit-action Search[Cupertino]");
                Vec::new()
            }
        }
    }

    /// Enter in the transcript: goes back to the selected step.
    fn rewind_to_selected_step(&mut self) -> Vec<Effect> {
        let to = self.run.as_ref().and_then(|r| r.trace().get(self.transcript_at)).map(|e| e.index);
        match to {
            Some(to) => self.rewind(to),
            None => Vec::new(),
        }
    }

    /// Enter in the answer pane: shows the selected path in the tree.
    fn jump_to_path(&mut self) {
        let leaf = self.run.as_ref().and_then(|r| r.answer()).and_then(|a| a.paths.get(self.answer_at));
        if let Some(leaf) = leaf.map(|p| p.leaf) {
            self.traced = Some(self.answer_at);
            self.reveal(NodeRef { branch: None, id: leaf });
        }
    }

    /// `u`: in the corrections pane, undoes the selected correction; elsewhere the newest of
    /// this sitting.
    fn undo_correction(&mut self) -> Vec<Effect> {
        if !self.live {
            self.say("an offline replay changes no corrections");
        } else if self.focus != Focus::Corrections {
            return self.undo_newest_of_sitting();
        } else if let Some(c) = self.corrections.get(self.corrections_at) {
            if !c.active {
                self.say(format!("correction {} is undone already", c.id));
                return Vec::new();
            }
            return vec![Effect::Undo { id: c.id }];
        } else {
            self.say("no correction to undo: f flags a wrong triple, e corrects a name");
        }
        Vec::new()
    }

    /// `u` right after `f` undoes what it made: the newest correction of this sitting not
    /// undone, as the sitting's own record has it (the pane's list may not have caught up with
    /// the store yet).
    fn undo_newest_of_sitting(&mut self) -> Vec<Effect> {
        if !self.pending_drafts.is_empty() {
            self.say("a correction is still being stored: u again in a moment");
            return Vec::new();
        }
        match self.recording.corrections.iter().rev().find(|c| c.undone_after_runs.is_none()) {
            Some(c) => vec![Effect::Undo { id: c.id }],
            None => {
                self.say("no correction of this sitting to undo: Tab to the corrections pane to undo an earlier one");
                Vec::new()
            }
        }
    }

    /// `save-as PATH`: saves the session to `PATH`.
    fn save_as(&mut self, arg: Option<String>) -> Vec<Effect> {
        match arg {
            Some(path) => vec![Effect::Save { path: Some(path.into()), session: Box::new(self.session()) }],
            None => {
                self.say("save-as needs a file: save-as PATH");
                Vec::new()
            }
        }
    }

    /// `open PATH`: opens a session file, saving unsaved steering first.
    fn open_session(&mut self, arg: Option<String>) -> Vec<Effect> {
        match arg {
            // Steering not saved yet is saved first: opening replaces the sitting.
            Some(path) if self.unsaved => {
                self.say("saving your unsaved steering before opening the session");
                self.open_after_save = Some(path.into());
                vec![Effect::Save { path: None, session: Box::new(self.session()) }]
            }
            Some(path) => vec![Effect::Open { path: path.into() }],
            None => {
                self.say("open needs a session file: open PATH");
                Vec::new()
            }
        }
    }

    /// Switches to the theme named `arg`, else to the next one; `NO_COLOR`'s plainness stays.
    fn next_theme(&mut self, arg: Option<String>) {
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
                self.say(format!("theme: {}", self.theme.name));
            }
            None => self.say(self.no_theme(&self.themes, arg.as_deref().unwrap_or_default())),
        }
    }

    /// Chooses the method named `arg`, else the next one, for the next question.
    fn switch_method(&mut self, arg: Option<String>) {
        let registry = crate::engine::Registry::program();
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
                // The recording takes it with the next run (each run keeps its own).
                self.settings.method = method;
                self.say(format!("method for the next question: {}", entry.label));
            }
            None => {
                self.say(format!("no method {:?} (methods: {})", arg.as_deref().unwrap_or_default(), registry.names()))
            }
        }
    }

    fn open_palette(&mut self) {
        self.palette = Some(Palette::default());
        self.refresh_palette();
    }

    fn open_help(&mut self) {
        self.help = true;
        self.help_scroll = 0;
    }

    /// Focuses the messages, the newest selected.
    fn show_messages(&mut self) {
        self.focus_on(Focus::Messages);
        self.messages_at = self.messages.len().saturating_sub(1);
    }

    /// `q`: quits, unless steering is unsaved: then the first `q` asks, and a second quits.
    fn quit_unless_unsaved(&mut self) {
        if self.unsaved && !self.quit_armed {
            self.quit_armed = true;
            self.say("steering not saved: q again quits, ctrl-s saves");
        } else {
            self.quit = true;
        }
    }

    pub(super) fn on_mouse(&mut self, mouse: MouseEvent) -> Vec<Effect> {
        self.quit_armed = false;
        let areas = self.areas();
        let at = Position::new(mouse.column, mouse.row);
        let pane = if areas.tree.contains(at) {
            Some(Focus::Tree)
        } else if areas.bottom.contains(at) {
            Some(self.bottom.focus())
        } else if areas.inspector.contains(at) {
            Some(Focus::Inspector)
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

    pub(super) fn on_key(&mut self, key: KeyEvent) -> Vec<Effect> {
        let ctrl_c = key.modifiers.contains(KeyModifiers::CONTROL) && key.code == KeyCode::Char('c');
        // A first q with unsaved steering asks; any other key takes that back.
        if !ctrl_c && self.keymap.lookup(&[], key) != Some(Command::Quit) {
            self.quit_armed = false;
        }
        if ctrl_c {
            return self.command(Command::Quit, None);
        }
        // The help's function key (F1) works everywhere, over dialogs too: they take no
        // function keys as text.
        if !self.help && matches!(key.code, KeyCode::F(_)) && self.keymap.lookup(&[], key) == Some(Command::Help) {
            return self.command(Command::Help, None);
        }
        match self.keyboard() {
            Keyboard::Picker => return self.on_picker_key(key),
            Keyboard::Form => return self.on_form_key(key),
            Keyboard::Palette => return self.on_palette_key(key),
            Keyboard::Help => {
                self.on_help_key(key);
                return Vec::new();
            }
            Keyboard::Search => return self.on_search_key(key),
            Keyboard::Screen => {}
        }
        if self.focus == Focus::Question {
            // Ctrl-S, the palette and F1 work while typing; with nothing typed, so do `?` and
            // `q` (a question is not begun with them); everything else is text.
            let empty = self.question().is_empty();
            match self.keymap.lookup(&[], key) {
                Some(c @ (Command::Save | Command::Palette | Command::Help | Command::Suspend))
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
            None => {
                self.unbound(key);
                Vec::new()
            }
        }
    }

    /// Who takes the keys now: the topmost open dialog, else the screen.
    fn keyboard(&self) -> Keyboard {
        // The help opens over everything (F1 in a dialog) and closes back to it.
        if self.help {
            Keyboard::Help
        } else if self.picker.is_some() {
            Keyboard::Picker // over a form (ctrl-f in the flag form)
        } else if self.form.is_some() {
            Keyboard::Form
        } else if self.palette.is_some() {
            Keyboard::Palette
        } else if self.search.as_ref().is_some_and(|s| s.typing) {
            Keyboard::Search
        } else {
            Keyboard::Screen
        }
    }

    /// A dialog or the help is open: the mouse does nothing under it.
    pub(super) fn keyboard_taken(&self) -> bool {
        !matches!(self.keyboard(), Keyboard::Screen | Keyboard::Search)
    }

    /// The help only reads: j/k scroll it, any other key closes it.
    fn on_help_key(&mut self, key: KeyEvent) {
        match key.code {
            KeyCode::Char('j') | KeyCode::Down | KeyCode::PageDown => {
                self.help_scroll = (self.help_scroll + 3).min(self.help_scroll_end())
            }
            KeyCode::Char('k') | KeyCode::Up | KeyCode::PageUp => self.help_scroll = self.help_scroll.saturating_sub(3),
            _ => self.help = false,
        }
    }

    /// Says why a key did nothing: it works in another pane, or it means nothing.
    fn unbound(&mut self, key: KeyEvent) {
        let label = super::super::keymap::Key::of(key).label();
        let elsewhere = [Pane::Tree, Pane::Transcript, Pane::Method, Pane::Answer, Pane::Corrections]
            .into_iter()
            .find_map(|pane| self.keymap.lookup(&[pane], key).filter(|c| c.pane() == pane).map(|c| (pane, c)));
        match elsewhere {
            Some((pane, command)) => self.say(format!(
                "{label} ({}) works in the {}: Tab and shift-Tab move between panes",
                command.name(),
                pane.name()
            )),
            None if matches!(key.code, KeyCode::Char(_) | KeyCode::Enter | KeyCode::F(_)) => {
                self.say(format!("{label} does nothing in the {} (? lists its keys)", self.focus.pane().name()))
            }
            None => {}
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

/// Who takes the keyboard.
enum Keyboard {
    Picker,
    Form,
    Palette,
    Help,
    /// The search prompt, while typing.
    Search,
    /// The panes (the question box included): the keymap decides.
    Screen,
}

/// Commands that act on a run: before the first question they only say so.
fn needs_a_run(command: Command) -> bool {
    matches!(
        command,
        Command::Step
            | Command::Run
            | Command::Reask
            | Command::Toggle
            | Command::Add
            | Command::Pin
            | Command::PrunePath
            | Command::Sufficient
            | Command::Continue
            | Command::Back
            | Command::Flag
            | Command::Relabel
            | Command::AcceptGenerated
            | Command::EditAction
            | Command::Trace
            | Command::Rewind
            | Command::MethodRow
            | Command::Jump
    )
}
