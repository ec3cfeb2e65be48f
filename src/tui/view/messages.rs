//! The messages pane: every message and error of the sitting, in full, newest at the bottom.

use super::*;

pub(super) fn draw_messages(frame: &mut Frame<'_>, app: &App, area: Rect) {
    let errors = app.messages.iter().filter(|m| m.error).count();
    let title = format!(" Messages ({}, {errors} errors) ", app.messages.len());
    let block = pane_block(app, Focus::Messages, title);
    if app.messages.is_empty() {
        frame.render_widget(Paragraph::new("Nothing said yet.").block(block), area);
        return;
    }
    let height = area.height.saturating_sub(2) as usize;
    let offset = window(app.messages_at, app.messages.len(), height);
    let lines: Vec<Line<'_>> = app
        .messages
        .iter()
        .enumerate()
        .skip(offset)
        .take(height)
        .map(|(i, note)| {
            let (mark, style) =
                if note.error { ("error: ", app.theme.fg(app.theme.flagged)) } else { ("", Style::default()) };
            let line =
                Line::from(vec![Span::styled(mark, style.add_modifier(Modifier::BOLD)), Span::raw(note.text.as_str())]);
            if i == app.messages_at && app.focus == Focus::Messages { line.style(app.theme.selected()) } else { line }
        })
        .collect();
    frame.render_widget(Paragraph::new(lines).block(block).wrap(Wrap { trim: false }), area);
}
