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
    // Unfocused, the pane follows the newest message; it starts early enough for the selected
    // one to show whole, however the earlier ones wrap.
    let at = if look.focused { at.min(notes.len() - 1) } else { notes.len() - 1 };
    let line = |i: usize, note: &Note| {
        let (mark, style) = if note.error { ("error: ", theme.fg(theme.flagged)) } else { ("", Style::default()) };
        let line =
            Line::from(vec![Span::styled(mark, style.add_modifier(Modifier::BOLD)), Span::raw(note.text.clone())]);
        if i == at && look.focused { line.style(theme.selected()) } else { line }
    };
    let inner = block.inner(area);
    let rows = |i: usize| Paragraph::new(line(i, &notes[i])).wrap(Wrap { trim: false }).line_count(inner.width);
    let mut first = at;
    let mut used = rows(at);
    while first > 0 && used + rows(first - 1) <= usize::from(inner.height) {
        first -= 1;
        used += rows(first);
    }
    let lines: Vec<Line<'_>> = notes.iter().enumerate().skip(first).map(|(i, note)| line(i, note)).collect();
    frame.render_widget(Paragraph::new(lines).block(block).wrap(Wrap { trim: false }), area);
}
