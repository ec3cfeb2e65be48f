//! The method's own pane: the engine's view model (report lines, rows), drawn without knowing the method.

use super::tree::status_style;
use super::*;

/// The method's own pane, drawn from the view model the method gives: a report beside the
/// rows (PoG's analysis and stages), the rows, and the selected row in full (GoG's steps).
pub(super) fn draw_method(frame: &mut Frame<'_>, app: &App, area: Rect) {
    let Some(run) = &app.run else {
        let block = pane_block(app, Focus::Method, " Paths in front of the model ".into());
        frame.render_widget(Paragraph::new("").block(block), area);
        return;
    };
    let view = run.view();
    let hint = if view.edits_steps {
        "enter: edit the step about to run"
    } else if view.report.is_empty() {
        "enter: show in the tree"
    } else {
        "enter: show"
    };
    let block = pane_block(app, Focus::Method, format!(" {} ({hint}) ", view.title));
    let inner = block.inner(area);
    frame.render_widget(block, area);
    let focused = app.focus == Focus::Method;
    let rows_area = if view.report.is_empty() {
        inner
    } else {
        let [report, rows] = Layout::horizontal([Constraint::Percentage(55), Constraint::Percentage(45)]).areas(inner);
        let lines: Vec<Line<'_>> = view.report.iter().map(|l| view_line(app, l)).collect();
        frame.render_widget(Paragraph::new(lines).wrap(Wrap { trim: false }), report);
        ruled(frame, &app.theme, rows)
    };
    if view.items.is_empty() {
        frame.render_widget(Paragraph::new(Span::styled(view.empty.clone(), dim(app))), rows_area);
    } else if view.items.iter().any(|i| !i.detail.is_empty()) {
        draw_rows_with_detail(frame, app, &view.items, rows_area, focused);
    } else {
        draw_rows(frame, app, &view.items, rows_area, focused);
    }
}

/// One line of a method's view in the theme's styles.
pub(super) fn view_line(app: &App, l: &ViewLine) -> Line<'static> {
    let text = match l.tone {
        Tone::Plain => Span::raw(l.text.clone()),
        Tone::Dim => Span::styled(l.text.clone(), dim(app)),
        Tone::Accent => Span::styled(l.text.clone(), app.theme.fg(app.theme.accent).add_modifier(Modifier::BOLD)),
    };
    if l.label.is_empty() { Line::from(text) } else { Line::from(vec![Span::styled(l.label.clone(), bold()), text]) }
}

/// Rows that wrap (paths, with the status pruning left them in); the list starts early enough
/// for the selected one to show whole.
pub(super) fn draw_rows(frame: &mut Frame<'_>, app: &App, items: &[ViewItem], area: Rect, focused: bool) {
    let at = if focused { app.method_at.min(items.len() - 1) } else { 0 };
    let width = area.width.max(1) as usize;
    let rows = |text: &str| (text.chars().count() + 2).div_ceil(width).max(1);
    let mut first = at;
    let mut used = rows(&items[at].row);
    while first > 0 && used + rows(&items[first - 1].row) <= area.height as usize {
        first -= 1;
        used += rows(&items[first].row);
    }
    let lines: Vec<Line<'_>> = items
        .iter()
        .enumerate()
        .skip(first)
        .map(|(i, item)| {
            let mut spans = Vec::new();
            if let Some(status) = item.status {
                spans.push(Span::styled(format!("{} ", status.symbol()), status_style(app, status)));
            }
            spans.push(Span::raw(item.row.clone()));
            let line = Line::from(spans);
            if focused && i == at { line.style(app.theme.selected()) } else { line }
        })
        .collect();
    frame.render_widget(Paragraph::new(lines).wrap(Wrap { trim: false }), area);
}

/// One-line rows (GoG's steps) and the selected one in full beside them; unfocused, the last.
pub(super) fn draw_rows_with_detail(frame: &mut Frame<'_>, app: &App, items: &[ViewItem], area: Rect, focused: bool) {
    let [list, detail] = Layout::horizontal([Constraint::Percentage(45), Constraint::Percentage(55)]).areas(area);
    let last = items.len() - 1;
    let at = if focused { app.method_at.min(last) } else { last };
    let height = list.height as usize;
    let rows: Vec<Line<'_>> = items
        .iter()
        .enumerate()
        .skip(window(at, items.len(), height))
        .take(height)
        .map(|(i, item)| {
            let line = Line::from(item.row.clone());
            if i == at && focused { line.style(app.theme.selected()) } else { line }
        })
        .collect();
    frame.render_widget(Paragraph::new(rows), list);
    let detail_area = ruled(frame, &app.theme, detail);
    let item = &items[at];
    let mut lines: Vec<Line<'_>> = item.detail.iter().map(|l| view_line(app, l)).collect();
    if item.editable {
        let about = Line::from(Span::styled(
            "about to run · enter: edit the thought or the action first",
            app.theme.fg(app.theme.accent),
        ));
        // After the thought and the action it would run.
        lines.insert(lines.len().min(2), about);
    }
    frame.render_widget(Paragraph::new(lines).wrap(Wrap { trim: false }), detail_area);
}
