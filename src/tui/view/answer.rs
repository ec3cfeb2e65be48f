//! The answer pane: the answer, what it rests on, and what changed since the last ask.

use super::*;

pub(super) fn draw_answer(frame: &mut Frame<'_>, app: &App, area: Rect) {
    let block = pane_block(app, Focus::Answer, " Answer (t: the triples behind it · enter: show the path) ".into());
    let Some(answer) = app.run.as_ref().and_then(|r| r.answer()) else {
        frame.render_widget(Paragraph::new("Not answered yet.").block(block), area);
        return;
    };
    let mut lines = vec![
        Line::from(Span::styled(
            if answer.answers.is_empty() { "(no answer)".to_string() } else { answer.answers.join(" | ") },
            app.theme.fg(app.theme.accent).add_modifier(Modifier::BOLD),
        )),
        Line::from(answer.source.describe()),
    ];
    if let Some(earlier) = &app.earlier {
        let now: Vec<String> = answer.paths.iter().map(|p| p.text.clone()).collect();
        lines.push(Line::from(Span::styled(format!("before: {}", earlier.answers.join(" | ")), dim(app))));
        for gone in earlier.paths.iter().filter(|p| !now.contains(p)) {
            lines.push(Line::from(Span::styled(format!("  − {gone}"), app.theme.fg(app.theme.flagged))));
        }
        for new in now.iter().filter(|p| !earlier.paths.contains(p)) {
            lines.push(Line::from(Span::styled(format!("  + {new}"), app.theme.fg(app.theme.kept))));
        }
    }
    for (i, p) in answer.paths.iter().enumerate() {
        let mark = if app.traced == Some(i) { "»" } else { " " };
        let line = Line::from(format!("{mark}[{:.3}] {}", p.score, p.text));
        lines.push(if i == app.answer_at && app.focus == Focus::Answer {
            line.style(app.theme.selected())
        } else {
            line
        });
    }
    frame.render_widget(Paragraph::new(lines).block(block).wrap(Wrap { trim: false }), area);
}
