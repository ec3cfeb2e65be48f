//! Drawing: a function of the state alone. Statuses are told apart by symbols (`+` kept, `-`
//! pruned by score, `~` by width, `%` sampled out, `x`/`*`/`^` dropped/pinned/added by the user,
//! `?` not scored yet) and, unless `NO_COLOR` is set, by colour.

use super::app::{App, Bottom, Focus, node_line};
use crate::engine::beam::{Provenance, Status};
use ratatui::Frame;
use ratatui::layout::{Constraint, Layout, Rect};
use ratatui::style::{Color, Modifier, Style};
use ratatui::text::{Line, Span};
use ratatui::widgets::{Block, Clear, List, ListItem, ListState, Paragraph, Wrap};

/// Below this the layout is replaced by a message.
pub const MIN_SIZE: (u16, u16) = (60, 16);

pub fn draw(frame: &mut Frame, app: &App) {
    let area = frame.area();
    if area.width < MIN_SIZE.0 || area.height < MIN_SIZE.1 {
        let text = format!("terminal too small: {}×{} (needs {}×{})", area.width, area.height, MIN_SIZE.0, MIN_SIZE.1);
        frame.render_widget(Paragraph::new(text).wrap(Wrap { trim: true }), area);
        return;
    }
    let bottom_height = if area.height >= 30 { 10 } else { 6 };
    let [question, main, bottom, status] = Layout::vertical([
        Constraint::Length(3),
        Constraint::Min(5),
        Constraint::Length(bottom_height),
        Constraint::Length(1),
    ])
    .areas(area);
    let [tree, inspector] = Layout::horizontal([Constraint::Percentage(58), Constraint::Percentage(42)]).areas(main);
    draw_question(frame, app, question);
    draw_tree(frame, app, tree);
    draw_inspector(frame, app, inspector);
    match app.bottom {
        Bottom::Transcript => draw_transcript(frame, app, bottom),
        Bottom::Answer => draw_answer(frame, app, bottom),
    }
    draw_status(frame, app, status);
    if app.flag.is_some() {
        draw_flag(frame, app, area);
    }
}

/// The flag form, over the middle of the screen.
fn draw_flag(frame: &mut Frame, app: &App, area: Rect) {
    let Some(form) = &app.flag else { return };
    let width = area.width.saturating_sub(8).min(90);
    // Room for the triple and its ids wrapped on two lines each at 80 columns.
    let height = 13.min(area.height.saturating_sub(2));
    let popup = Rect {
        x: area.x + (area.width - width) / 2,
        y: area.y + (area.height.saturating_sub(height)) / 2,
        width,
        height,
    };
    let field = |label: &str, value: &str, active: bool| {
        let cursor = if active { "▏" } else { "" };
        let style = if active { Style::new().add_modifier(Modifier::BOLD) } else { Style::new() };
        Line::from(vec![Span::styled(format!("{label}: "), style), Span::raw(format!("{value}{cursor}"))])
    };
    let t = &form.triple;
    let lines = vec![
        Line::from(Span::styled("This triple is wrong:", Style::new().add_modifier(Modifier::BOLD))),
        Line::from(t.line()),
        Line::from(Span::styled(
            format!("({} {} {})", t.head_term, t.relation_id, t.tail_term),
            Style::new().add_modifier(Modifier::DIM),
        )),
        Line::from(""),
        field("Why", &form.reason, !form.on_object),
        field("Right object (optional)", &form.object, form.on_object),
        Line::from(""),
        Line::from(Span::styled(
            "Enter: record · Tab: next field · Esc: cancel",
            Style::new().add_modifier(Modifier::DIM),
        )),
    ];
    frame.render_widget(Clear, popup);
    frame.render_widget(
        Paragraph::new(lines).block(Block::bordered().title(" Flag a triple ")).wrap(Wrap { trim: false }),
        popup,
    );
}

fn focused(app: &App, pane: Focus, title: &str) -> Block<'static> {
    let block = Block::bordered().title(title.to_string());
    if app.focus == pane { block.border_style(Style::new().add_modifier(Modifier::BOLD)) } else { block }
}

fn draw_question(frame: &mut Frame, app: &App, area: Rect) {
    let hint = if app.focus == Focus::Question { " Question (Enter: ask) " } else { " Question (e: edit) " };
    let cursor = if app.focus == Focus::Question { "▏" } else { "" };
    let text = if app.question.is_empty() && app.focus == Focus::Question {
        Line::from(Span::styled("Type a question about the knowledge graph…", Style::new().add_modifier(Modifier::DIM)))
    } else {
        Line::from(format!("{}{cursor}", app.question))
    };
    frame.render_widget(Paragraph::new(text).block(focused(app, Focus::Question, hint)), area);
}

fn status_style(app: &App, status: Status) -> Style {
    let base = match status {
        Status::Kept => Style::new().add_modifier(Modifier::BOLD),
        Status::PrunedByScore | Status::PrunedByWidth | Status::PrunedBySample => {
            Style::new().add_modifier(Modifier::DIM)
        }
        Status::PrunedByUser => Style::new().add_modifier(Modifier::DIM | Modifier::CROSSED_OUT),
        Status::PinnedByUser | Status::AddedByUser => Style::new().add_modifier(Modifier::BOLD | Modifier::ITALIC),
        Status::Candidate => Style::new(),
    };
    if app.no_color {
        return base;
    }
    match status {
        Status::Kept => base.fg(Color::Green),
        Status::PinnedByUser | Status::AddedByUser | Status::PrunedByUser => base.fg(Color::Yellow),
        Status::Candidate => base.fg(Color::Cyan),
        _ => base,
    }
}

fn draw_tree(frame: &mut Frame, app: &App, area: Rect) {
    let block = focused(app, Focus::Tree, &format!(" Beam · {} · {} ", app.kg_name, app.llm_name));
    let Some(run) = &app.run else {
        frame.render_widget(Paragraph::new("No question yet.").block(block), area);
        return;
    };
    let rows = app.visible_rows();
    let items: Vec<ListItem> = rows
        .iter()
        .map(|&(id, indent)| {
            let node = &run.beam().nodes[id];
            let fold = if node.children.is_empty() {
                " "
            } else if app.collapsed.contains(&id) {
                "▸"
            } else {
                "▾"
            };
            let mark = match node.provenance {
                Provenance::Correction { .. } => " ✎",
                _ => "",
            };
            ListItem::new(Line::from(vec![
                Span::raw(format!("{}{fold}", "  ".repeat(indent))),
                Span::styled(format!("{}{mark}", node_line(run, id)), status_style(app, node.status)),
            ]))
        })
        .collect();
    let mut state = ListState::default().with_selected(Some(app.selected.min(rows.len().saturating_sub(1))));
    let list = List::new(items).block(block).highlight_style(Style::new().add_modifier(Modifier::REVERSED));
    frame.render_stateful_widget(list, area, &mut state);
}

fn draw_inspector(frame: &mut Frame, app: &App, area: Rect) {
    let block = Block::bordered().title(" Inspector ");
    let (Some(run), Some(id)) = (&app.run, app.selected_node()) else {
        frame.render_widget(Paragraph::new("Select a node.").block(block), area);
        return;
    };
    let beam = run.beam();
    let node = &beam.nodes[id];
    let mut lines = vec![
        Line::from(Span::styled(node.shown().to_string(), Style::new().add_modifier(Modifier::BOLD))),
        Line::from(match node.term() {
            Some(term) => format!("id: {term}"),
            None => "relation".to_string(),
        }),
        Line::from(format!(
            "status: {:?}{}",
            node.status,
            node.reason.as_deref().map(|r| format!(" ({r})")).unwrap_or_default()
        )),
        Line::from(match node.score {
            Some(s) => format!("score {s:.3} · path {:.4}", node.path_score),
            None => "not scored".into(),
        }),
        Line::from(match &node.provenance {
            Provenance::Kg { graph } => format!("from: {graph}"),
            Provenance::Linked { name } => format!("linked from the name {name:?}"),
            Provenance::User => "from: you".into(),
            Provenance::Correction { id } => format!("from: correction {id}"),
        }),
        Line::from(""),
        Line::from(Span::styled("path", Style::new().add_modifier(Modifier::UNDERLINED))),
        Line::from(beam.path_text(id)),
    ];
    let triples = beam.triples(id);
    if !triples.is_empty() {
        lines.push(Line::from(Span::styled("triples", Style::new().add_modifier(Modifier::UNDERLINED))));
        lines.extend(triples.iter().map(|t| Line::from(t.line())));
    }
    if let Some(call) = node.step.and_then(|s| run.trace().get(s)).and_then(|e| e.calls.first()) {
        lines.push(Line::from(Span::styled(
            format!("{} reply", call.step),
            Style::new().add_modifier(Modifier::UNDERLINED),
        )));
        lines.extend(call.reply.lines().take(6).map(|l| Line::from(l.to_string())));
    }
    frame.render_widget(Paragraph::new(lines).block(block).wrap(Wrap { trim: false }), area);
}

fn draw_transcript(frame: &mut Frame, app: &App, area: Rect) {
    let block = Block::bordered().title(" Transcript (Tab: answer) ");
    let Some(run) = &app.run else {
        frame.render_widget(Paragraph::new("").block(block), area);
        return;
    };
    let inner = area.height.saturating_sub(2) as usize;
    let events = run.trace();
    let lines: Vec<Line> = events[events.len().saturating_sub(inner)..]
        .iter()
        .map(|e| {
            let tokens: u64 = e.calls.iter().map(|c| c.usage.prompt_tokens + c.usage.completion_tokens).sum();
            let calls =
                if e.calls.is_empty() { String::new() } else { format!("  [{} call(s), {tokens} tok]", e.calls.len()) };
            Line::from(format!("{:>3} {:<17} {}{calls}", e.index, e.phase().unwrap_or("·"), e.summary))
        })
        .collect();
    frame.render_widget(Paragraph::new(lines).block(block), area);
}

fn draw_answer(frame: &mut Frame, app: &App, area: Rect) {
    let block = Block::bordered().title(" Answer (Tab: transcript) ");
    let Some(answer) = app.run.as_ref().and_then(|r| r.answer()) else {
        frame.render_widget(Paragraph::new("Not answered yet.").block(block), area);
        return;
    };
    let mut lines = vec![
        Line::from(Span::styled(
            if answer.answers.is_empty() { "(no answer)".to_string() } else { answer.answers.join(" | ") },
            Style::new().add_modifier(Modifier::BOLD),
        )),
        Line::from(answer.source.describe()),
    ];
    if let Some(earlier) = &app.earlier {
        lines.push(Line::from(Span::styled(
            format!("before the correction: {}", earlier.answers.join(" | ")),
            Style::new().add_modifier(Modifier::DIM),
        )));
    }
    lines.extend(answer.paths.iter().take(4).map(|p| Line::from(format!("[{:.3}] {}", p.score, p.text))));
    frame.render_widget(Paragraph::new(lines).block(block).wrap(Wrap { trim: false }), area);
}

/// The status bar: the latest message on the left (it says what just happened), the run's
/// counters on the right.
fn draw_status(frame: &mut Frame, app: &App, area: Rect) {
    let s = &app.settings;
    let (depth, next, costs) = match &app.run {
        Some(run) => (run.depth(), run.next_phase(), run.costs()),
        None => (0, "-", Default::default()),
    };
    let flight = if app.in_flight { " ⟳" } else { "" };
    let counters = format!(
        "{:?} d{depth}/{} N={} │ next: {next}{flight} │ LLM {} calls {} tok │ KG {} ",
        s.method,
        s.depth,
        s.width,
        costs.llm_calls,
        costs.usage.prompt_tokens + costs.usage.completion_tokens,
        costs.kg_lookups,
    );
    // The counters fit whole at 120 columns; the message keeps at least 30.
    let width = (counters.chars().count() as u16).min(area.width.saturating_sub(30));
    let [left, right] = Layout::horizontal([Constraint::Min(0), Constraint::Length(width)]).areas(area);
    let style = Style::new().add_modifier(Modifier::REVERSED);
    frame.render_widget(Paragraph::new(format!(" {}", app.message.as_deref().unwrap_or(""))).style(style), left);
    frame.render_widget(Paragraph::new(counters).style(style), right);
}
