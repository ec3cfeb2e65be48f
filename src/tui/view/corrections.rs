//! The corrections pane: this KG's corrections, active and undone.

use super::*;

pub(super) fn draw_corrections(frame: &mut Frame<'_>, app: &App, area: Rect) {
    let title = if app.replay.is_some() && !app.live {
        format!(" Corrections made in the session ({}) ", app.corrections.len())
    } else {
        format!(" Corrections to {} ({}) · u: undo ", app.kg_name, app.corrections.len())
    };
    let block = pane_block(app, Focus::Corrections, title);
    if app.corrections.is_empty() {
        frame.render_widget(Paragraph::new("None yet: f flags a wrong triple, e corrects a name.").block(block), area);
        return;
    }
    let height = area.height.saturating_sub(2) as usize;
    let offset = window(app.corrections_at, app.corrections.len(), height);
    let lines: Vec<Line<'_>> = app
        .corrections
        .iter()
        .enumerate()
        .skip(offset)
        .take(height)
        .map(|(i, c)| {
            // The state comes first: a long line is cut at its end.
            let state = if c.active { "active" } else { "UNDONE" };
            let line = Line::from(format!("#{:<3} {state} {} — {} ({})", c.id, c.op.describe(), c.reason, c.author));
            let line = if c.active { line } else { line.style(dim(app)) };
            if i == app.corrections_at && app.focus == Focus::Corrections {
                line.style(app.theme.selected())
            } else {
                line
            }
        })
        .collect();
    frame.render_widget(Paragraph::new(lines).block(block), area);
}
