//! The messages pane: every message and error of the sitting, in full, newest at the bottom.

use super::*;
use crate::tui::app::Note;

pub(super) fn draw_messages(frame: &mut Frame<'_>, area: Rect, notes: &[Note], at: usize, look: Look<'_>) {
    let errors = notes.iter().filter(|m| m.error).count();
    let block = look.block(format!(" Messages ({}, {errors} errors) ", notes.len()));
    if notes.is_empty() {
        frame.render_widget(Paragraph::new("Nothing said yet.").block(block), area);
        return;
    }
    let theme = look.theme;
    let height = area.height.saturating_sub(2) as usize;
    let lines: Vec<Line<'_>> = notes
        .iter()
        .enumerate()
        .skip(window(at, notes.len(), height))
        .take(height)
        .map(|(i, note)| {
            let (mark, style) = if note.error { ("error: ", theme.fg(theme.flagged)) } else { ("", Style::default()) };
            let line =
                Line::from(vec![Span::styled(mark, style.add_modifier(Modifier::BOLD)), Span::raw(note.text.as_str())]);
            if i == at && look.focused { line.style(theme.selected()) } else { line }
        })
        .collect();
    frame.render_widget(Paragraph::new(lines).block(block).wrap(Wrap { trim: false }), area);
}
