//! The UI's commands and the keys bound to them. The help screen and the command palette are
//! generated from this table, so they always show the keys actually in force, including the
//! user's own bindings from the config file's `[keys]` table (`step = ["n", "space"]`).

use crossterm::event::{KeyCode, KeyEvent, KeyModifiers};
use std::collections::BTreeMap;

/// Where a command works.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Pane {
    /// Everywhere but text input.
    Any,
    Tree,
    Inspector,
    Transcript,
    Method,
    Answer,
    Corrections,
    Messages,
    /// While a search has matches.
    Matches,
}

impl Pane {
    /// The pane as people call it.
    pub fn name(self) -> &'static str {
        match self {
            Pane::Any => "whole screen",
            Pane::Tree => "beam tree",
            Pane::Inspector => "inspector",
            Pane::Transcript => "transcript",
            Pane::Method => "method pane",
            Pane::Answer => "answer pane",
            Pane::Corrections => "corrections pane",
            Pane::Messages => "messages pane",
            Pane::Matches => "search",
        }
    }
}

macro_rules! commands {
    ($( $variant:ident, $name:literal, $pane:ident, [$($key:literal),*], $help:literal; )*) => {
        /// Everything the user can ask the UI to do.
        #[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
        pub enum Command { $($variant,)* }

        impl Command {
            pub const ALL: &'static [Command] = &[$(Command::$variant,)*];
            /// The name used in the config file and the palette.
            pub fn name(self) -> &'static str { match self { $(Command::$variant => $name,)* } }
            pub fn help(self) -> &'static str { match self { $(Command::$variant => $help,)* } }
            pub fn pane(self) -> Pane { match self { $(Command::$variant => Pane::$pane,)* } }
            fn default_keys(self) -> &'static [&'static str] { match self { $(Command::$variant => &[$($key),*],)* } }
        }
    };
}

commands! {
    Step, "step", Any, ["n", "space"], "take one step (one phase of the method)";
    Run, "run", Any, ["r"], "run to the answer";
    Cancel, "cancel", Any, ["esc"], "cancel what is in flight, stop running, clear the search; else back to the tree";
    Ask, "ask", Any, ["i"], "edit the question (Enter asks, Alt-Enter: new line, Up/Down: history)";
    Reask, "re-ask", Any, ["a"], "ask the same question again, through the corrections made since";
    Down, "down", Any, ["j", "down"], "next row";
    Up, "up", Any, ["k", "up"], "previous row";
    PageDown, "page-down", Any, ["pagedown", "ctrl-d"], "half a screen down";
    PageUp, "page-up", Any, ["pageup", "ctrl-u"], "half a screen up";
    Top, "top", Any, ["g", "home"], "first row";
    Bottom, "bottom", Any, ["G", "end"], "last row";
    NextPane, "next-pane", Any, ["tab"], "focus the next pane: tree, inspector, transcript, method, answer, corrections, messages";
    PrevPane, "previous-pane", Any, ["backtab"], "focus the previous pane";
    Collapse, "collapse", Tree, ["h", "left"], "fold the subtree";
    Expand, "expand", Tree, ["l", "right"], "unfold the subtree";
    Toggle, "keep-or-drop", Tree, ["x"], "keep a pruned candidate, or drop a kept one";
    Add, "add", Tree, ["+"], "add a relation or entity the model never proposed (fuzzy-picked from the KG)";
    Pin, "pin", Tree, ["p"], "pin the path: it stays in front of the model";
    PrunePath, "prune-path", Tree, ["d"], "prune the path and everything below it";
    Sufficient, "sufficient", Any, ["s"], "force \"sufficient\": answer now from the paths";
    Continue, "continue", Any, ["c"], "force \"continue\": explore one more depth";
    Back, "back", Any, ["b"], "go back one step (or take back your last change since the last step)";
    ClearAbandoned, "clear-abandoned", Any, ["B"], "clear the branches set aside by going back";
    Flag, "flag", Tree, ["f"], "flag the triple that reached this entity as wrong";
    Relabel, "relabel", Tree, ["e"], "correct this entity's name";
    AcceptGenerated, "accept-generated", Tree, ["A"], "GoG: accept this LLM-generated triple into your corrections";
    EditAction, "edit-action", Any, [], "GoG: replace the action about to run (palette: edit-action Search[X])";
    Trace, "trace", Any, ["t"], "jump to the triples the answer rests on (again: the next path)";
    Rewind, "rewind-here", Transcript, ["enter"], "go back to the selected step and go on from there";
    MethodRow, "edit-or-show", Method, ["enter"], "GoG: edit the thought and action about to run · PoG, ToG: show the selected path in the tree";
    Jump, "show-path", Answer, ["enter"], "show the selected path in the tree";
    Undo, "undo", Any, ["u"], "undo the selected correction (outside its pane: the last one made here)";
    Approve, "approve", Corrections, ["y"], "approve the selected teammate's correction (a review, shared with the team)";
    Reject, "reject", Corrections, ["X"], "reject the selected teammate's correction (a review, shared with the team)";
    Impact, "impact", Any, ["I"], "the kept answers the selected correction touches (elsewhere: the last one made here)";
    RerunImpact, "rerun-impact", Any, ["R"], "re-run the kept answers the selected correction touches, with it applied: old → new";
    Search, "search", Any, ["/"], "fuzzy search the beam and the KG's labels";
    SearchNext, "next-match", Matches, ["n"], "next match of the search (esc ends the search)";
    SearchPrev, "previous-match", Matches, ["N"], "previous match of the search";
    Save, "save", Any, ["ctrl-s"], "save the session (question, trace, replies, corrections)";
    Palette, "palette", Any, [":", "ctrl-p"], "command palette: every command by name";
    Help, "help", Any, ["?", "f1"], "this help";
    Messages, "messages", Any, ["M"], "every message and error of this sitting, in full (again: back to the tree)";
    Suspend, "suspend", Any, ["ctrl-z"], "suspend to the shell (fg comes back)";
    Quit, "quit", Any, ["q"], "quit";
    ExportCorrections, "export-corrections", Any, [], "write this KG's corrections (palette: export-corrections [FILE]; .tsv, .nt or .ru for those formats, else JSON lines)";
    SaveAs, "save-as", Any, [], "save the session to a file (palette: save-as FILE)";
    Open, "open", Any, [], "open a saved session and replay it (palette: open FILE)";
    NextTheme, "theme", Any, [], "switch to the next theme (palette: theme [NAME])";
    SwitchMethod, "method", Any, [], "switch the method for the next question (palette: method [NAME]; without a name, the next one)";
}

/// A key with its modifiers, as written in the config: `n`, `G`, `ctrl-s`, `space`, `enter`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Key {
    pub code: KeyCode,
    pub modifiers: KeyModifiers,
}

impl Key {
    pub fn parse(text: &str) -> Result<Self, String> {
        let mut modifiers = KeyModifiers::NONE;
        let mut rest = text;
        loop {
            if let Some(r) = rest.strip_prefix("ctrl-") {
                modifiers |= KeyModifiers::CONTROL;
                rest = r;
            } else if let Some(r) = rest.strip_prefix("alt-") {
                modifiers |= KeyModifiers::ALT;
                rest = r;
            } else {
                break;
            }
        }
        let code = match rest {
            "space" => KeyCode::Char(' '),
            "enter" => KeyCode::Enter,
            "esc" => KeyCode::Esc,
            "tab" => KeyCode::Tab,
            "backtab" => KeyCode::BackTab,
            "up" => KeyCode::Up,
            "down" => KeyCode::Down,
            "left" => KeyCode::Left,
            "right" => KeyCode::Right,
            "home" => KeyCode::Home,
            "end" => KeyCode::End,
            "pageup" => KeyCode::PageUp,
            "pagedown" => KeyCode::PageDown,
            "backspace" => KeyCode::Backspace,
            "delete" => KeyCode::Delete,
            f if f.len() > 1 && f.starts_with('f') && f[1..].parse::<u8>().is_ok_and(|n| (1..=12).contains(&n)) => {
                KeyCode::F(f[1..].parse().unwrap_or(1))
            }
            c if c.chars().count() == 1 => KeyCode::Char(c.chars().next().unwrap_or(' ')),
            _ => return Err(format!("unknown key {text:?} (e.g. n, G, ?, space, enter, ctrl-s, alt-x, f1, pagedown)")),
        };
        Ok(Self { code, modifiers })
    }

    /// The key as typed: crossterm reports Shift on upper-case letters and some symbols, which
    /// the letter itself already says.
    pub fn of(event: KeyEvent) -> Self {
        let mut modifiers = event.modifiers & (KeyModifiers::CONTROL | KeyModifiers::ALT);
        let code = match event.code {
            KeyCode::Char(c) if modifiers.contains(KeyModifiers::CONTROL) => KeyCode::Char(c.to_ascii_lowercase()),
            other => other,
        };
        if matches!(code, KeyCode::BackTab) {
            modifiers = KeyModifiers::NONE;
        }
        Self { code, modifiers }
    }

    pub fn label(&self) -> String {
        let base = match self.code {
            KeyCode::Char(' ') => "space".to_string(),
            KeyCode::Char(c) => c.to_string(),
            KeyCode::Enter => "enter".into(),
            KeyCode::Esc => "esc".into(),
            KeyCode::Tab => "tab".into(),
            KeyCode::BackTab => "shift-tab".into(),
            KeyCode::Up => "↑".into(),
            KeyCode::Down => "↓".into(),
            KeyCode::Left => "←".into(),
            KeyCode::Right => "→".into(),
            KeyCode::Home => "home".into(),
            KeyCode::End => "end".into(),
            KeyCode::PageUp => "pgup".into(),
            KeyCode::PageDown => "pgdn".into(),
            KeyCode::F(n) => format!("f{n}"),
            other => format!("{other:?}").to_lowercase(),
        };
        let mut out = String::new();
        if self.modifiers.contains(KeyModifiers::CONTROL) {
            out.push_str("ctrl-");
        }
        if self.modifiers.contains(KeyModifiers::ALT) {
            out.push_str("alt-");
        }
        out + &base
    }
}

#[derive(Clone, Debug)]
pub struct Keymap {
    bindings: Vec<(Key, Command)>,
}

impl Default for Keymap {
    fn default() -> Self {
        let bindings = Command::ALL
            .iter()
            .flat_map(|&c| c.default_keys().iter().filter_map(move |k| Key::parse(k).ok().map(|k| (k, c))))
            .collect();
        Self { bindings }
    }
}

impl Keymap {
    /// The defaults, with the config's `[keys]` table (command name → keys) replacing the keys
    /// of the commands it names.
    pub fn with_overrides(overrides: &BTreeMap<String, Vec<String>>) -> Result<Self, String> {
        let mut map = Self::default();
        for (name, keys) in overrides {
            let command = Command::ALL.iter().copied().find(|c| c.name() == name).ok_or_else(|| {
                format!(
                    "[keys]: unknown command {name:?} (commands: {})",
                    Command::ALL.iter().map(|c| c.name()).collect::<Vec<_>>().join(", ")
                )
            })?;
            let keys = keys
                .iter()
                .map(|k| Key::parse(k))
                .collect::<Result<Vec<_>, _>>()
                .map_err(|e| format!("[keys] {name}: {e}"))?;
            map.bindings.retain(|(_, c)| *c != command);
            map.bindings.extend(keys.into_iter().map(|k| (k, command)));
        }
        // A key given to a command must not be another's where both apply: one of them would
        // silently never run.
        for name in overrides.keys() {
            let Some(command) = Command::ALL.iter().copied().find(|c| c.name() == name) else { continue };
            for &(key, _) in map.bindings.iter().filter(|(_, c)| *c == command) {
                // The search's keys shadow the others while it has matches, by design (n: the
                // next match); every other pane's keys are compared with the global ones.
                let overlaps = |other: Command| {
                    other != command
                        && ![other.pane(), command.pane()].contains(&Pane::Matches)
                        && (other.pane() == command.pane() || other.pane() == Pane::Any || command.pane() == Pane::Any)
                };
                if key.label() == "ctrl-c" && command != Command::Quit {
                    return Err(format!("[keys] {name}: ctrl-c always quits; give {name} another key"));
                }
                if let Some(&(_, other)) = map.bindings.iter().find(|&&(k, c)| k == key && overlaps(c)) {
                    return Err(format!(
                        "[keys] {name}: {} is already {:?} ({}) in the {}; give one of them another key",
                        key.label(),
                        other.name(),
                        other.help(),
                        if other.pane() == Pane::Any { command.pane() } else { other.pane() }.name()
                    ));
                }
            }
        }
        Ok(map)
    }

    /// The key to name in a hint for `command`: its first binding, else the palette's name.
    pub fn hint(&self, command: Command) -> String {
        self.bindings
            .iter()
            .find(|(_, c)| *c == command)
            .map_or_else(|| format!(":{}", command.name()), |(k, _)| k.label())
    }

    /// The command `key` means in `panes` (most specific first), else globally.
    pub fn lookup(&self, panes: &[Pane], key: KeyEvent) -> Option<Command> {
        let key = Key::of(key);
        panes
            .iter()
            .chain([&Pane::Any])
            .find_map(|&pane| self.bindings.iter().find(|&&(k, c)| k == key && c.pane() == pane).map(|&(_, c)| c))
    }

    /// The keys bound to `command`, as shown to people (`n, space`).
    pub fn keys_for(&self, command: Command) -> String {
        self.bindings.iter().filter(|(_, c)| *c == command).map(|(k, _)| k.label()).collect::<Vec<_>>().join(", ")
    }

    /// The help for `panes`: their own commands first, then the global ones; (keys, name, help).
    pub fn help(&self, panes: &[Pane]) -> Vec<(String, &'static str, &'static str)> {
        let own = Command::ALL.iter().filter(|c| c.pane() != Pane::Any && panes.contains(&c.pane()));
        let global = Command::ALL.iter().filter(|c| c.pane() == Pane::Any);
        own.chain(global).map(|&c| (self.keys_for(c), c.name(), c.help())).collect()
    }
}

#[cfg(test)]
mod tests {
    /// Giving any command its own default keys again is no conflict: the defaults have none.
    #[test]
    fn every_default_binding_can_be_restated() {
        for &command in Command::ALL {
            let keys: Vec<String> = command.default_keys().iter().map(|k| k.to_string()).collect();
            let restated = BTreeMap::from([(command.name().to_string(), keys)]);
            if let Err(e) = Keymap::with_overrides(&restated) {
                panic!("{}: {e}", command.name());
            }
        }
    }

    use super::*;

    #[test]
    fn every_default_key_parses_and_no_two_commands_share_a_key_in_a_pane() {
        for c in Command::ALL {
            for k in c.default_keys() {
                Key::parse(k).unwrap();
            }
        }
        let map = Keymap::default();
        for (i, (k, c)) in map.bindings.iter().enumerate() {
            for (k2, c2) in &map.bindings[i + 1..] {
                assert!(!(k == k2 && c.pane() == c2.pane()), "{k:?} is bound to {c:?} and {c2:?}");
            }
        }
    }

    #[test]
    fn config_overrides_replace_a_commands_keys() {
        let map = Keymap::with_overrides(&BTreeMap::from([("step".to_string(), vec!["ctrl-n".to_string()])])).unwrap();
        let ctrl_n = KeyEvent::new(KeyCode::Char('n'), KeyModifiers::CONTROL);
        assert_eq!(map.lookup(&[Pane::Tree], ctrl_n), Some(Command::Step));
        assert_eq!(map.lookup(&[Pane::Tree], KeyEvent::new(KeyCode::Char('n'), KeyModifiers::NONE)), None);
        assert_eq!(map.keys_for(Command::Step), "ctrl-n");
        let err = Keymap::with_overrides(&BTreeMap::from([("stpe".to_string(), vec![])])).unwrap_err();
        assert!(err.contains("unknown command \"stpe\""), "{err}");
        let err = Keymap::with_overrides(&BTreeMap::from([("step".to_string(), vec!["hyper-x".into()])])).unwrap_err();
        assert!(err.contains("unknown key"), "{err}");
        // A key another command has where both apply is refused, naming both.
        let err = Keymap::with_overrides(&BTreeMap::from([("step".to_string(), vec!["j".into()])])).unwrap_err();
        assert!(err.starts_with("[keys] step: j is already \"down\""), "{err}");
        // The hints name the key given.
        assert_eq!(map.hint(Command::Step), "ctrl-n");
        assert_eq!(Keymap::default().hint(Command::Step), "n");
    }

    #[test]
    fn shifted_letters_and_pane_bindings() {
        let map = Keymap::default();
        let shift_g = KeyEvent::new(KeyCode::Char('G'), KeyModifiers::SHIFT);
        assert_eq!(map.lookup(&[Pane::Tree], shift_g), Some(Command::Bottom));
        let enter = KeyEvent::new(KeyCode::Enter, KeyModifiers::NONE);
        assert_eq!(map.lookup(&[Pane::Transcript], enter), Some(Command::Rewind));
        assert_eq!(map.lookup(&[Pane::Answer], enter), Some(Command::Jump));
        assert_eq!(map.lookup(&[Pane::Tree], enter), None);
        let n = KeyEvent::new(KeyCode::Char('n'), KeyModifiers::NONE);
        assert_eq!(map.lookup(&[Pane::Matches, Pane::Tree], n), Some(Command::SearchNext));
        assert_eq!(map.lookup(&[Pane::Tree], n), Some(Command::Step));
    }
}
