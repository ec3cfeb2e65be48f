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
    let inner = block.inner(area);
    frame.render_widget(block, area);
    let at = at.min(list.len() - 1);
    let line = |i: usize| {
        let c = &list[i];
        let state = if c.active { "active" } else { "UNDONE" };
        let tag = tags.get(i).map(String::as_str).unwrap_or_default();
        let line =
            Line::from(format!("#{:<3} {state} {tag}{} — {} ({})", c.id, c.op.describe(), c.reason_line(), c.author));
        let line = if c.active { line } else { line.style(look.theme.faint()) };
        if i == at && look.focused { line.style(look.theme.selected()) } else { line }
    };
    // The selected correction wraps, whole (its triple and reason are read there); the others
    // keep one line each, the state first, cut at the pane's edge.
    let paragraph = |i: usize| {
        let p = Paragraph::new(line(i));
        if i == at { p.wrap(Wrap { trim: false }) } else { p }
    };
    let rows = |i: usize| if i == at { paragraph(i).line_count(inner.width).max(1) } else { 1 };
    // The list starts early enough for the selected one to show whole.
    let height = usize::from(inner.height);
    let mut first = at;
    let mut used = rows(at);
    while first > 0 && used + rows(first - 1) <= height {
        first -= 1;
        used += rows(first);
    }
    let mut y = inner.y;
    for i in first..list.len() {
        let left = inner.bottom().saturating_sub(y);
        if left == 0 {
            break;
        }
        let h = u16::try_from(rows(i)).unwrap_or(u16::MAX).min(left);
        frame.render_widget(paragraph(i), Rect { y, height: h, ..inner });
        y += h;
    }
}
