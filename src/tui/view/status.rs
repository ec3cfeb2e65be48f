//! The status bar: progress, the last message, where things are.

use super::*;

/// The status bar: the latest message (or the search being typed) on the left, the run's
/// counters on the right.
pub(super) fn draw_status(frame: &mut Frame<'_>, app: &App, area: Rect) {
    let s = &app.settings;
    let (depth, next, costs) = match &app.run {
        Some(run) => (run.depth(), run.next_phase(), run.costs()),
        None => (0, "-", Default::default()),
    };
    let flight = match app.in_flight {
        Some(since) => {
            let elapsed = since.elapsed();
            let frame = (elapsed.as_millis() / 100) as usize % SPINNER.len();
            format!(" {} {:.1}s", SPINNER[frame], elapsed.as_secs_f64())
        }
        None => String::new(),
    };
    let overlay = app.corrections.iter().filter(|c| c.active).count();
    // The run's own settings: the app's may have changed for the next question.
    let s = app.run.as_ref().map_or(s, |r| r.settings());
    let progress = match (&app.run, crate::engine::Registry::builtin().get(&s.method)) {
        (Some(run), _) => run.progress(),
        (None, Some(entry)) => crate::engine::progress_line(entry, s, depth),
        (None, None) => s.method.to_string(),
    };
    // Most important first; the tail is dropped when the message would get under 30 columns.
    let mut segments = vec![
        progress,
        format!("LLM {}× {}t", costs.llm_calls, costs.usage.prompt_tokens + costs.usage.completion_tokens),
        format!("KG {}q", costs.kg_lookups),
        format!("{next}{flight}"),
        format!("fixes {overlay}"),
        format!("{} · {}", app.kg_name, app.llm_name),
    ];
    if !flight.is_empty() {
        // While waiting, the spinner matters more than the counters after it.
        segments.swap(1, 3);
    }
    let message = match &app.search {
        Some(search) if search.typing => format!("/{}▏ ({} matches)", search.query, search.matches.len()),
        _ => app.message.clone().unwrap_or_default(),
    };
    // The counters give way to the message, down to the progress (and the spinner, while
    // waiting); the message claims 30 columns at least and three fifths of the bar at most (it
    // is cut beyond, whole in the messages pane).
    let wanted = (message.chars().count() + 2).clamp(30, usize::from(area.width) * 3 / 5);
    let keep = if flight.is_empty() { 1 } else { 2 };
    let mut counters = segments.join(" │ ") + " ";
    while counters.chars().count() + wanted > usize::from(area.width) && segments.len() > keep {
        segments.pop();
        counters = segments.join(" │ ") + " ";
    }
    let width = (counters.chars().count() as u16).min(area.width);
    let [left, right] = Layout::horizontal([Constraint::Min(0), Constraint::Length(width)]).areas(area);
    let style = app.theme.status_bar();
    let message = fit(&message, usize::from(left.width.saturating_sub(1)));
    frame.render_widget(Paragraph::new(format!(" {message}")).style(style), left);
    frame.render_widget(Paragraph::new(counters).style(style), right);
}

/// `text` in `width` columns: whole if it fits, else cut with a pointer to the messages pane,
/// which keeps it whole.
fn fit(text: &str, width: usize) -> String {
    const MORE: &str = "… (M: in full)";
    if text.chars().count() <= width {
        return text.to_string();
    }
    let keep = width.saturating_sub(MORE.chars().count());
    text.chars().take(keep).collect::<String>() + MORE
}
