//! The status bar: progress, the last message, where things are.

use super::*;
use crate::engine::events::Costs;
use std::time::Duration;
use unicode_width::UnicodeWidthStr as _;

/// What the status bar says.
pub(super) struct StatusShown {
    /// The latest message, or the search being typed.
    pub message: String,
    /// Where the run stands (the method's progress line).
    pub progress: String,
    pub costs: Costs,
    /// What the next step does.
    pub next: &'static str,
    /// How long the requests in flight have been waited for.
    pub waiting: Option<Duration>,
    /// Active corrections that apply.
    pub fixes: usize,
    /// Corrections stored here, not yet on the shared set's server.
    pub pending: usize,
    /// Whether any correction is in conflict with a teammate's.
    pub conflict: bool,
    /// The shared set's server did not answer the last sync.
    pub offline: bool,
    /// "KG · model".
    pub names: String,
}

/// The status bar: the message on the left, the run's counters on the right.
pub(super) fn draw_status(frame: &mut Frame<'_>, area: Rect, shown: &StatusShown, theme: &Theme) {
    let costs = &shown.costs;
    let flight = match shown.waiting {
        Some(elapsed) => {
            let frame = (elapsed.as_millis() / 100) as usize % SPINNER.len();
            format!(" {} {:.1}s", SPINNER[frame], elapsed.as_secs_f64())
        }
        None => String::new(),
    };
    // Most important first; the tail is dropped when the message would get under 30 columns.
    // While waiting, the spinner comes second; corrections, when there are some, next (they
    // change what the KG says).
    let waiting = !flight.is_empty();
    let next = format!("{}{flight}", shown.next);
    let pending = if shown.pending > 0 { format!(" ({} pending)", shown.pending) } else { String::new() };
    let conflict = if shown.conflict { " ⚠ conflict" } else { "" };
    let offline = if shown.offline { " · team offline" } else { "" };
    let fixes = format!("fixes {}{pending}{conflict}{offline}", shown.fixes);
    let mut segments = vec![shown.progress.clone()];
    segments.extend(waiting.then(|| next.clone()));
    let notable = shown.fixes > 0 || shown.pending > 0 || shown.conflict || shown.offline;
    segments.extend(notable.then(|| fixes.clone()));
    segments.push(format!("LLM {}× {}t", costs.llm_calls, costs.usage.prompt_tokens + costs.usage.completion_tokens));
    segments.push(format!("KG {}q", costs.kg_lookups));
    segments.extend((!waiting).then_some(next));
    segments.extend((!notable).then_some(fixes));
    segments.push(shown.names.clone());
    let message = &crate::safe_text::one_line(&shown.message);
    // The counters give way to the message, down to the progress (and the spinner, while
    // waiting); the message claims 30 columns at least and three fifths of the bar at most (it
    // is cut beyond, whole in the messages pane).
    let wanted = (message.width() + 2).clamp(30, usize::from(area.width) * 3 / 5);
    let keep = if waiting { 2 } else { 1 };
    let mut counters = segments.join(" │ ") + " ";
    while counters.width() + wanted > usize::from(area.width) && segments.len() > keep {
        segments.pop();
        counters = segments.join(" │ ") + " ";
    }
    let width = u16::try_from(counters.width()).unwrap_or(u16::MAX).min(area.width);
    let [left, right] = Layout::horizontal([Constraint::Min(0), Constraint::Length(width)]).areas(area);
    let style = theme.status_bar();
    // A space before and after: the message never runs into the counters.
    let message = fit(message, usize::from(left.width.saturating_sub(2)));
    frame.render_widget(Paragraph::new(format!(" {message}")).style(style), left);
    frame.render_widget(Paragraph::new(counters).style(style), right);
}

/// `text` in `width` columns: whole if it fits, else cut with a pointer to the messages pane,
/// which keeps it whole.
fn fit(text: &str, width: usize) -> String {
    const MORE: &str = " (M: in full)";
    if text.width() <= width {
        return text.to_string();
    }
    // `cut_to` ends its cut with "…", the pointer's first column.
    super::cut_to(text, width.saturating_sub(MORE.width())) + MORE
}

#[cfg(test)]
mod tests {
    use super::*;
    use ratatui::Terminal;
    use ratatui::backend::TestBackend;

    fn bar(shown: &StatusShown, width: u16) -> String {
        let mut terminal = Terminal::new(TestBackend::new(width, 1)).expect("a test terminal");
        let theme = Theme::fallback();
        terminal.draw(|f| draw_status(f, f.area(), shown, &theme)).expect("drawn");
        terminal.backend().buffer().content().iter().map(|c| c.symbol()).collect()
    }

    fn shown(message: &str, waiting: Option<Duration>) -> StatusShown {
        StatusShown {
            message: message.into(),
            progress: "ToG depth 1/3".into(),
            costs: Costs::default(),
            next: "score relations",
            waiting,
            fixes: 2,
            pending: 0,
            conflict: false,
            offline: false,
            names: "demo · scripted".into(),
        }
    }

    #[test]
    fn a_short_message_leaves_room_for_every_counter() {
        let line = bar(&shown("ready", None), 140);
        assert!(line.contains("ToG depth 1/3 │ fixes 2 │ LLM"), "corrections outrank the costs: {line:?}");
        for part in ["ready", "ToG depth 1/3", "LLM 0× 0t", "KG 0q", "score relations", "fixes 2", "demo · scripted"]
        {
            assert!(line.contains(part), "{part:?} missing from {line:?}");
        }
    }

    #[test]
    fn pending_corrections_and_a_conflict_are_said_with_the_count() {
        let mut s = shown("ready", None);
        (s.pending, s.conflict) = (1, true);
        let line = bar(&s, 140);
        assert!(line.contains("ToG depth 1/3 │ fixes 2 (1 pending) ⚠ conflict │ LLM"), "{line:?}");
        (s.fixes, s.pending, s.conflict) = (0, 0, false);
        assert!(bar(&s, 140).contains("KG 0q │ score relations │ fixes 0 │"), "nothing to say: last");
    }

    #[test]
    fn a_long_message_is_cut_with_a_pointer_and_the_counters_give_way_down_to_the_progress() {
        let long = "error: ".to_string() + &"the endpoint did not answer ".repeat(6);
        let line = bar(&shown(&long, None), 80);
        assert!(line.contains("… (M: in full) ToG"), "a space between the message and the counters: {line:?}");
        assert!(line.contains("ToG depth 1/3"), "{line:?}");
        assert!(!line.contains("demo · scripted"), "{line:?}");
    }

    #[test]
    fn a_wide_message_is_cut_by_the_columns_it_takes() {
        // 60 CJK characters take 120 columns: cut, with the pointer, the progress still shown.
        let wide = "東京".repeat(30);
        let line = bar(&shown(&wide, None), 80);
        assert!(line.contains("… (M: in full) ToG depth 1/3"), "{line:?}");
    }

    #[test]
    fn while_waiting_the_spinner_outranks_the_counters() {
        let long = "x".repeat(200);
        let line = bar(&shown(&long, Some(Duration::from_millis(1500))), 80);
        assert!(line.contains("score relations ") && line.contains("1.5s"), "{line:?}");
        assert!(line.contains("ToG depth 1/3 │ score relations"), "{line:?}");
        assert!(!line.contains("LLM 0×"), "{line:?}");
    }
}
