//! The question box.

use super::*;

pub(super) fn draw_question(frame: &mut Frame<'_>, app: &App, area: Rect) {
    let focused = app.focus == Focus::Question;
    let title = if focused {
        " Question (enter: ask · alt-enter: new line · ↑/↓: history · ctrl-u: clear · esc: back) "
    } else {
        " Question (i: edit · a: ask again) "
    };
    let block = pane_block(app, Focus::Question, title.into());
    if !focused {
        let text = app.question().replace('\n', " ");
        frame.render_widget(Paragraph::new(text).block(block).wrap(Wrap { trim: true }), area);
        return;
    }
    let mut input = app.input.clone();
    input.set_block(block);
    input.set_cursor_line_style(Style::new());
    frame.render_widget(&input, area);
}
