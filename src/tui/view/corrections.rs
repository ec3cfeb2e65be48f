//! The corrections pane: this KG's corrections, active and undone.

use super::*;
use crate::overlay::Correction;

pub(super) fn draw_corrections(
    frame: &mut Frame<'_>,
    area: Rect,
    list: &[Correction],
    tags: &[String],
    at: usize,
    title: String,
    look: Look<'_>,
) {
    let block = look.block(title);
    if list.is_empty() {
        frame.render_widget(Paragraph::new("None yet: f flags a wrong triple, e corrects a name.").block(block), area);
        return;
    }
    let height = area.height.saturating_sub(2) as usize;
    let lines: Vec<Line<'_>> = list
        .iter()
        .enumerate()
        .skip(window(at, list.len(), height))
        .take(height)
        .map(|(i, c)| {
            // The state comes first: a long line is cut at its end.
            let state = if c.active { "active" } else { "UNDONE" };
            let tag = tags.get(i).map(String::as_str).unwrap_or_default();
            let line = Line::from(format!(
                "#{:<3} {state} {tag}{} — {} ({})",
                c.id,
                c.op.describe(),
                c.reason_line(),
                c.author
            ));
            let line = if c.active { line } else { line.style(look.theme.faint()) };
            if i == at && look.focused { line.style(look.theme.selected()) } else { line }
        })
        .collect();
    frame.render_widget(Paragraph::new(lines).block(block), area);
}
