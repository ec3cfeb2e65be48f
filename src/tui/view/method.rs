//! The method's own pane: the engine's view model (report lines, rows), drawn without knowing the method.

use super::tree::status_style;
use super::*;

/// The method's own pane, drawn from the view model the method gives: a report beside the
/// rows (PoG's analysis and stages), the rows, and the selected row in full (GoG's steps).
pub(super) fn draw_method(frame: &mut Frame<'_>, area: Rect, view: Option<&MethodView>, at: usize, look: Look<'_>) {
    let theme = look.theme;
    let Some(view) = view else {
        frame.render_widget(Paragraph::new("").block(look.block(" Paths in front of the model ".into())), area);
        return;
    };
    let hint = if view.edits_steps {
        "enter: edit the step about to run"
    } else if view.report.is_empty() {
        "enter: show in the tree"
    } else {
        "enter: show"
    };
    let block = look.block(format!(" {} ({hint}) ", view.title));
    let inner = block.inner(area);
    frame.render_widget(block, area);
    let focused = look.focused;
    let rows_area = if view.report.is_empty() {
        inner
    } else {
        let [report, rows] = Layout::horizontal([Constraint::Percentage(55), Constraint::Percentage(45)]).areas(inner);
        let lines: Vec<Line<'_>> = view.report.iter().map(|l| view_line(theme, l)).collect();
        frame.render_widget(Paragraph::new(lines).wrap(Wrap { trim: false }), report);
        ruled(frame, theme, rows)
    };
    if view.items.is_empty() {
        frame.render_widget(Paragraph::new(Span::styled(view.empty.clone(), theme.faint())), rows_area);
    } else if view.items.iter().any(|i| !i.detail.is_empty()) {
        draw_rows_with_detail(frame, theme, &view.items, rows_area, focused.then_some(at));
    } else {
        draw_rows(frame, theme, &view.items, rows_area, focused.then_some(at));
    }
}

/// One line of a method's view in the theme's styles.
pub(super) fn view_line(theme: &Theme, l: &ViewLine) -> Line<'static> {
    let text = match l.tone {
        Tone::Plain => Span::raw(l.text.clone()),
        Tone::Dim => Span::styled(l.text.clone(), theme.faint()),
        Tone::Accent => Span::styled(l.text.clone(), theme.fg(theme.accent).add_modifier(Modifier::BOLD)),
    };
    if l.label.is_empty() { Line::from(text) } else { Line::from(vec![Span::styled(l.label.clone(), bold()), text]) }
}

/// Rows that wrap (paths, with the status pruning left them in); the list starts early enough
/// for the selected one (`selected`, when the pane has the focus) to show whole.
pub(super) fn draw_rows(frame: &mut Frame<'_>, theme: &Theme, items: &[ViewItem], area: Rect, selected: Option<usize>) {
    let focused = selected.is_some();
    let at = selected.map_or(0, |at| at.min(items.len() - 1));
    let lines: Vec<Line<'_>> = items
        .iter()
        .enumerate()
        .map(|(i, item)| {
            let mut spans = Vec::new();
            if let Some(status) = item.status {
                spans.push(Span::styled(format!("{} ", status.symbol()), status_style(theme, status)));
            }
            spans.push(Span::raw(item.row.clone()));
            let line = Line::from(spans);
            if focused && i == at { line.style(theme.selected()) } else { line }
        })
        .collect();
    // The rows each line wraps to, as the paragraph wraps it (at words, wide characters two
    // columns): counted, not estimated, so the selected line is never cut at the bottom.
    let rows = |line: &Line<'_>| Paragraph::new(line.clone()).wrap(Wrap { trim: false }).line_count(area.width).max(1);
    let mut first = at;
    let mut used = rows(&lines[at]);
    while first > 0 && used + rows(&lines[first - 1]) <= area.height as usize {
        first -= 1;
        used += rows(&lines[first]);
    }
    let shown: Vec<Line<'_>> = lines.into_iter().skip(first).collect();
    frame.render_widget(Paragraph::new(shown).wrap(Wrap { trim: false }), area);
}

/// One-line rows (GoG's steps) and the selected one in full beside them; unfocused, the last.
pub(super) fn draw_rows_with_detail(
    frame: &mut Frame<'_>,
    theme: &Theme,
    items: &[ViewItem],
    area: Rect,
    selected: Option<usize>,
) {
    let focused = selected.is_some();
    let [list, detail] = Layout::horizontal([Constraint::Percentage(45), Constraint::Percentage(55)]).areas(area);
    let last = items.len() - 1;
    let at = selected.map_or(last, |at| at.min(last));
    let height = list.height as usize;
    let rows: Vec<Line<'_>> = items
        .iter()
        .enumerate()
        .skip(window(at, items.len(), height))
        .take(height)
        .map(|(i, item)| {
            let line = Line::from(item.row.clone());
            if i == at && focused { line.style(theme.selected()) } else { line }
        })
        .collect();
    frame.render_widget(Paragraph::new(rows), list);
    let detail_area = ruled(frame, theme, detail);
    let item = &items[at];
    let mut lines: Vec<Line<'_>> = item.detail.iter().map(|l| view_line(theme, l)).collect();
    if item.edit.is_some() {
        let about = Line::from(Span::styled(
            "about to run · enter: edit the thought or the action first",
            theme.fg(theme.accent),
        ));
        // After the thought and the action it would run.
        lines.insert(lines.len().min(2), about);
    }
    frame.render_widget(Paragraph::new(lines).wrap(Wrap { trim: false }), detail_area);
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::engine::ViewItem;
    use ratatui::Terminal;
    use ratatui::backend::TestBackend;

    #[test]
    fn the_selected_row_shows_whole_however_its_words_wrap() {
        // Words that wrap early: each row takes more lines than its length over the width.
        let row = |k: usize| ViewItem {
            row: format!("p{k} aaaaaaaaaaaa bbbbbbbbbbbb cccccccccccc end{k}"),
            ..ViewItem::default()
        };
        let items: Vec<ViewItem> = (0..6).map(row).collect();
        let mut terminal = Terminal::new(TestBackend::new(16, 10)).expect("a test terminal");
        let theme = Theme::fallback();
        terminal.draw(|f| draw_rows(f, &theme, &items, f.area(), Some(5))).expect("drawn");
        let screen: String = terminal.backend().buffer().content().iter().map(|c| c.symbol()).collect();
        assert!(screen.contains("end5"), "the selected row's last word is on screen: {screen:?}");
    }
}
