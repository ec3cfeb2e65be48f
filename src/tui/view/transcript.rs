//! The transcript: every step, its calls and replies.

use super::inspector::reply_label;
use super::*;

pub(super) fn draw_transcript(
    frame: &mut Frame<'_>,
    area: Rect,
    events: Option<&[crate::engine::events::Event]>,
    at: usize,
    method: Option<&str>,
    look: Look<'_>,
) {
    let theme = look.theme;
    let block = look.block(" Transcript (tab: next pane · enter: go back to this step) ".into());
    let Some(events) = events else {
        frame.render_widget(Paragraph::new("").block(block), area);
        return;
    };
    let inner = block.inner(area);
    frame.render_widget(block, area);
    let [list, detail] = Layout::horizontal([Constraint::Percentage(50), Constraint::Percentage(50)]).areas(inner);
    let at = if look.focused { at } else { events.len().saturating_sub(1) };
    frame.render_widget(Paragraph::new(step_lines(events, at, list, look)), list);
    let detail = ruled(frame, theme, detail);
    let Some(event) = events.get(at) else { return };
    frame.render_widget(Paragraph::new(detail_lines(event, method, theme)).wrap(Wrap { trim: false }), detail);
}

/// The steps that fit in `list`, one line each, around the one `at`.
fn step_lines(events: &[crate::engine::events::Event], at: usize, list: Rect, look: Look<'_>) -> Vec<Line<'static>> {
    let height = list.height as usize;
    let offset = window(at, events.len(), height);
    events
        .iter()
        .enumerate()
        .skip(offset)
        .take(height)
        .map(|(i, e)| {
            let tokens: u64 = e.calls.iter().map(|c| c.usage.prompt_tokens + c.usage.completion_tokens).sum();
            let calls = if e.calls.is_empty() { String::new() } else { format!(" [{}× {tokens}t]", e.calls.len()) };
            // The calls' count where the whole summary leaves room for it; else the summary
            // alone, cut at the pane's edge with "…" (the detail beside it has the count).
            let head = format!("{:>3} {:<16} ", e.index, e.phase().unwrap_or("·"));
            let width = usize::from(list.width).saturating_sub(head.chars().count());
            let whole = unicode_width::UnicodeWidthStr::width(e.summary.as_str()) + calls.len() <= width;
            let line = if whole {
                Line::from(format!("{head}{}{calls}", e.summary))
            } else {
                Line::from(format!("{head}{}", cut_to(&e.summary, width)))
            };
            if i == at && look.focused { line.style(look.theme.selected()) } else { line }
        })
        .collect()
}

/// The selected step in full: its calls (with replies and the prompts' ends), lookups and
/// notes.
fn detail_lines(event: &crate::engine::events::Event, method: Option<&str>, theme: &Theme) -> Vec<Line<'static>> {
    let mut lines = vec![Line::from(Span::styled(
        format!("step {} · {} ms · depth {}", event.index, event.elapsed_ms, event.depth),
        bold(),
    ))];
    for (n, c) in event.calls.iter().enumerate() {
        // The step as recorded; SC's samples, recorded as `cot` steps, are said to be SC's.
        let step = match crate::llm::borrowed_step(&c.step, method) {
            Some(m) => format!("{m} sample {} of {} ({})", n + 1, event.calls.len(), c.step),
            None => c.step.clone(),
        };
        lines.extend(call_lines(&step, c, theme));
    }
    for l in &event.lookups {
        lines.push(Line::from(Span::styled(format!("KG {} → {} result(s)", l.what, l.results), theme.faint())));
    }
    lines.extend(event.notes.iter().map(|n| Line::from(format!("note: {n}"))));
    lines
}

/// One call of a step, named `step`: its costs and how it was read, then what it parsed, its
/// reply's first lines, its reasoning's and its prompt's last ones.
fn call_lines(step: &str, c: &crate::engine::events::CallRecord, theme: &Theme) -> Vec<Line<'static>> {
    let mut lines = vec![Line::from(Span::styled(
        format!(
            "{step} · {} ms · {}+{} tok{}{} · T={}{}",
            c.latency_ms,
            c.usage.prompt_tokens,
            c.usage.completion_tokens,
            // The server's prefix cache; "reused" (below) is this run's memo of calls.
            if c.usage.cached_tokens > 0 {
                format!(" ({} from the server's cache)", c.usage.cached_tokens)
            } else {
                String::new()
            },
            if c.cached { " · reused" } else { "" },
            c.temperature,
            reply_label(c)
        ),
        Style::new().add_modifier(Modifier::UNDERLINED),
    ))];
    lines.push(Line::from(format!("parsed: {}", c.parsed)));
    lines.extend(c.reply.lines().take(4).map(|l| Line::from(format!("< {l}"))));
    if let Some(thought) = &c.reasoning {
        lines.extend(thought.lines().take(3).map(|l| Line::from(Span::styled(format!("~ {l}"), theme.faint()))));
    }
    let prompt: Vec<&str> = c.prompt.lines().filter(|l| !l.trim().is_empty()).collect();
    lines.extend(
        prompt[prompt.len().saturating_sub(3)..]
            .iter()
            .map(|l| Line::from(Span::styled(format!("> {l}"), theme.faint()))),
    );
    lines
}
