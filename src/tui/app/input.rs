//! The question box: typing, history, leaving it.

use super::*;

impl App {
    /// The question as typed (lines joined).
    pub fn question(&self) -> String {
        self.input.lines().join("\n")
    }

    pub fn set_question(&mut self, text: &str) {
        self.reset_input(text);
    }

    pub(super) fn reset_input(&mut self, text: &str) {
        let mut input = TextArea::new(text.lines().map(str::to_string).collect());
        input.set_placeholder_text("Type a question about the knowledge graph…");
        input.move_cursor(ratatui_textarea::CursorMove::Bottom);
        input.move_cursor(ratatui_textarea::CursorMove::End);
        self.input = input;
    }

    pub(super) fn on_question_key(&mut self, key: KeyEvent) -> Vec<Effect> {
        let alt = key.modifiers.contains(KeyModifiers::ALT);
        match key.code {
            KeyCode::Enter if alt => {
                self.input.insert_newline();
            }
            // As in a shell: ctrl-u clears what is typed.
            KeyCode::Char('u') if key.modifiers.contains(KeyModifiers::CONTROL) => self.reset_input(""),
            KeyCode::Enter if !self.question().trim().is_empty() => return self.start(),
            KeyCode::Enter => self.say("type a question first"),
            // Esc and Tab leave the input (i comes back to it).
            KeyCode::Esc | KeyCode::Tab => {
                self.focus = Focus::Tree;
                if self.run.is_none() {
                    let k = |c| self.keymap.hint(c);
                    let hint = format!(
                        "{}: type a question · {}: keys · {}: quit",
                        k(Command::Ask),
                        k(Command::Help),
                        k(Command::Quit)
                    );
                    self.say(hint);
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
}
