//! The answer pane: the answer, what it rests on, and what changed since the last ask.

use super::*;
use crate::safe_text::one_line;

/// What the answer pane shows.
pub(super) struct AnswerShown<'a> {
    pub answer: Option<&'a crate::engine::Answer>,
    /// Each of the answer's paths as the beam holds it (arrows for every method, as `ask`
    /// prints them: PoG's own text is its prompts' brace format).
    pub texts: Vec<String>,
    /// Where it comes from, in words (the KG, corrections, triples the LLM wrote).
    pub source: Option<String>,
    /// The order of the paths when it is not best path score first (the method's own).
    pub order: Option<&'static str>,
    /// Where the routes merged into another path's beam slot begin (they come last).
    pub merged: Option<usize>,
    /// Where the paths on the beam that name no answer begin (after those that do).
    pub others: Option<usize>,
    /// The answer before the last re-ask.
    pub earlier: Option<&'a crate::tui::app::Earlier>,
    /// The path `t` last showed.
    pub traced: Option<usize>,
    /// The selected path.
    pub at: usize,
}

pub(super) fn draw_answer(frame: &mut Frame<'_>, area: Rect, shown: &AnswerShown<'_>, look: Look<'_>) {
    let theme = look.theme;
    let block = look.block(" Answer (t: the triples behind it · enter: show the path) ".into());
    let Some(answer) = shown.answer else {
        frame.render_widget(Paragraph::new("Not answered yet.").block(block), area);
        return;
    };
    let mut lines = vec![
        Line::from(Span::styled(
            if answer.answers.is_empty() {
                "(no answer)".to_string()
            } else {
                one_line(&answer.answers.join(" | ")).into()
            },
            theme.fg(theme.accent).add_modifier(Modifier::BOLD),
        )),
        Line::from(one_line(&shown.source.clone().unwrap_or_else(|| answer.source_words())).into_owned()),
    ];
    if let Some(earlier) = &shown.earlier {
        let now = &shown.texts;
        lines.push(Line::from(Span::styled(
            format!("before: {}", one_line(&earlier.answers.join(" | "))),
            theme.faint(),
        )));
        for gone in earlier.paths.iter().filter(|p| !now.contains(p)) {
            lines.push(Line::from(Span::styled(format!("  − {}", one_line(gone)), theme.fg(theme.flagged))));
        }
        for new in now.iter().filter(|p| !earlier.paths.contains(p)) {
            lines.push(Line::from(Span::styled(format!("  + {}", one_line(new)), theme.fg(theme.kept))));
        }
    }
    // The path to keep in view: the selected one while the pane has the focus, else the one
    // `t` showed.
    let kept_in_view = if look.focused { Some(shown.at) } else { shown.traced };
    let mut kept_line = 0;
    if let Some(order) = shown.order.filter(|_| !answer.paths.is_empty()) {
        lines.push(Line::from(Span::styled(format!("paths, {order}:"), theme.faint())));
    }
    for (i, p) in answer.paths.iter().enumerate() {
        for (from, heading) in
            [(shown.others, crate::engine::OTHER_PATHS), (shown.merged, crate::engine::MERGED_ROUTES)]
        {
            if from == Some(i) {
                lines.push(Line::from(Span::styled(format!("{heading}:"), theme.faint())));
            }
        }
        let mark = if shown.traced == Some(i) { "»" } else { " " };
        let text = shown.texts.get(i).unwrap_or(&p.text);
        // A method that orders its paths otherwise does not score them: no score shown.
        let score = if shown.order.is_some() { String::new() } else { format!("[{:.3}] ", p.score) };
        let line = Line::from(format!("{mark}{score}{}", one_line(text)));
        if Some(i) == kept_in_view {
            kept_line = lines.len();
        }
        lines.push(if i == shown.at && look.focused { line.style(theme.selected()) } else { line });
    }
    // The answer stays on top whatever path is selected; the lines under it scroll just enough
    // for the selected path (or the one `t` showed) to be seen whole.
    let inner = block.inner(area);
    frame.render_widget(block, area);
    let rows = |l: &Line<'_>| Paragraph::new(l.clone()).wrap(Wrap { trim: false }).line_count(inner.width);
    let rest = lines.split_off(1);
    let head_rows = u16::try_from(lines.iter().map(rows).sum::<usize>()).unwrap_or(u16::MAX).min(inner.height);
    let (head, below) = (
        Rect { height: head_rows, ..inner },
        Rect { y: inner.y + head_rows, height: inner.height - head_rows, ..inner },
    );
    frame.render_widget(Paragraph::new(lines).wrap(Wrap { trim: false }), head);
    let through: usize = if kept_line == 0 { 0 } else { rest.iter().take(kept_line).map(rows).sum() };
    let scroll = u16::try_from(through.saturating_sub(usize::from(below.height))).unwrap_or(u16::MAX);
    frame.render_widget(Paragraph::new(rest).wrap(Wrap { trim: false }).scroll((scroll, 0)), below);
}
