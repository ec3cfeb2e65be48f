//! The question box.

use super::*;
use ratatui_textarea::TextArea;

/// The question box: `input` edited when focused, its text on one line otherwise.
pub(super) fn draw_question(frame: &mut Frame<'_>, area: Rect, input: &TextArea<'static>, look: Look<'_>) {
    const FULL: &str = " Question (enter: ask · alt-enter: new line · ↑/↓: history · ctrl-u: clear · esc: back) ";
    // At 80 columns the full title was cut before "esc: back", the way out of the box to the
    // keys (? and q): the narrow one leaves out ctrl-u (F1 lists it).
    const NARROW: &str = " Question (enter: ask · alt-enter: new line · ↑/↓: history · esc: back) ";
    let title = if look.focused {
        if FULL.chars().count() + 2 <= usize::from(area.width) { FULL } else { NARROW }
    } else {
        " Question (i: edit · a: ask again) "
    };
    let block = look.block(title.into());
    if !look.focused {
        let text = input.lines().join(" ");
        frame.render_widget(Paragraph::new(text).block(block).wrap(Wrap { trim: true }), area);
        return;
    }
    let mut input = input.clone();
    input.set_block(block);
    input.set_cursor_line_style(Style::new());
    frame.render_widget(&input, area);
}
