//! Where the screen's panes go: what the view draws into and what the mouse handler (in the
//! app's state) hit-tests against, so neither imports the other for it.

use ratatui::layout::{Constraint, Layout, Rect};

/// Where the screen's panes are, for the mouse.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct Areas {
    pub question: Rect,
    pub tree: Rect,
    pub inspector: Rect,
    pub bottom: Rect,
    pub status: Rect,
}

/// Where the panes go in `area` (the mouse handler uses the same function). The question box
/// grows with a question of several lines, up to four.
pub fn layout(area: Rect, question_lines: usize) -> Areas {
    let question_height = 2 + question_lines.clamp(1, 4) as u16;
    let bottom_height = match area.height {
        h if h >= 36 => 12,
        h if h >= 30 => 10,
        _ => 7,
    };
    let [question, main, bottom, status] = Layout::vertical([
        Constraint::Length(question_height),
        Constraint::Min(5),
        Constraint::Length(bottom_height),
        Constraint::Length(1),
    ])
    .areas(area);
    let [tree, inspector] = Layout::horizontal([Constraint::Percentage(58), Constraint::Percentage(42)]).areas(main);
    Areas { question, tree, inspector, bottom, status }
}
