//! The UI's pieces that take the keyboard while open (gitui's `Component`): each handles its
//! keys, draws itself from its own state and the theme, and lists its keys for the help. The
//! app opens them, routes keys to the topmost, and acts on the `Outcome` they report.

use super::theme::Theme;
use crossterm::event::KeyEvent;
use ratatui::Frame;
use ratatui::layout::Rect;

/// What a key did to a component.
#[derive(Debug, PartialEq)]
pub enum Outcome {
    /// Still open.
    Editing,
    Cancelled,
    Submitted,
}

pub trait Component {
    /// What a key did to it.
    fn event(&mut self, key: KeyEvent) -> Outcome;
    /// Draws it over `area` (the whole screen: a dialog centres itself).
    fn draw(&self, frame: &mut Frame<'_>, area: Rect, theme: &Theme);
    /// Its keys and what they do, for the help.
    fn commands(&self) -> Vec<(&'static str, &'static str)>;
}

/// A centred box of at most `width`×`height` in `area`.
pub fn popup(area: Rect, width: u16, height: u16) -> Rect {
    let width = width.min(area.width.saturating_sub(4));
    let height = height.min(area.height.saturating_sub(2));
    Rect { x: area.x + (area.width - width) / 2, y: area.y + (area.height - height) / 2, width, height }
}

/// The first row shown in a window of `height` rows over `len` rows, so `selected` is visible.
pub fn window(selected: usize, len: usize, height: usize) -> usize {
    if height == 0 || len <= height {
        return 0;
    }
    selected.saturating_sub(height - 1).min(len - height)
}
