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
    let width = usize::from(inner.width);
    let line = |i: usize| {
        let c = &list[i];
        let state = if c.active { "active" } else { "UNDONE" };
        let tag = tags.get(i).map(String::as_str).unwrap_or_default();
        let head = format!("#{:<3} {state} {tag}", c.id);
        // A teammate's text: its line breaks and format characters shown, not obeyed.
        use crate::safe_text::OneLine;
        let tail = format!(" — {} ({})", OneLine(&c.reason_line()), OneLine(&c.author));
        let what = crate::safe_text::one_line(&c.op.describe()).into_owned();
        let text = if i == at { format!("{head}{what}{tail}") } else { one_line(&head, &what, &tail, width) };
        let line = Line::from(text);
        let line = if c.active { line } else { line.style(look.theme.faint()) };
        if i == at && look.focused { line.style(look.theme.selected()) } else { line }
    };
    // The selected correction wraps, whole (its triple and reason are read there); the others
    // keep one line each: the state, then the triple and the reason cut to share the line.
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

/// `head`, `what` and `tail` in `width` columns: `what` (the triple) gives way first, down to
/// half the room left, so the start of `tail` (the reason) shows too; each cut ends with "…".
fn one_line(head: &str, what: &str, tail: &str, width: usize) -> String {
    let count = |s: &str| unicode_width::UnicodeWidthStr::width(s);
    let cut = super::cut_to;
    let room = width.saturating_sub(count(head));
    if count(what) + count(tail) <= room {
        return format!("{head}{what}{tail}");
    }
    let what_room = room.saturating_sub(count(tail)).max(room / 2).min(count(what));
    format!("{head}{}{}", cut(what, what_room), cut(tail, room - what_room))
}

#[cfg(test)]
mod tests {
    use super::one_line;

    #[test]
    fn an_unselected_correction_shows_the_start_of_its_reason_beside_its_triple() {
        let (head, what, tail) = ("#1   active ", "retract (canberra, capital of, australia)", " — wrong city (ana)");
        assert_eq!(one_line(head, what, tail, 80), format!("{head}{what}{tail}"), "room for all");
        let cut = one_line(head, what, tail, 50);
        assert_eq!(cut, "#1   active retract (canberra,… — wrong city (ana)");
        assert_eq!(cut.chars().count(), 50);
        let long_reason = " — the capital is on the other side of the lake, see the atlas (ana)";
        let both = one_line(head, what, long_reason, 50);
        assert_eq!(both, "#1   active retract (canberra,… — the capital is …", "half each");
        assert_eq!(both.chars().count(), 50);
        assert_eq!(one_line(head, what, tail, 5), "#1   active ", "a pane too narrow keeps the state");
    }
}
