//! Drawing: a function of the state alone. Statuses are told apart by symbols (`+` kept, `-`
//! pruned by score, `~` by width, `%` sampled out, `x`/`*`/`^` dropped/pinned/added by the user,
//! `?` not scored yet), marks (`✎` from a correction, `⚑` flagged, `»` behind the answer, `↶`
//! set aside by going back) and modifiers; colour (the theme's, unless `NO_COLOR`) only adds.

use super::app::{App, Areas, Bottom, Focus, NodeRef, bar, node_parts, window};
use super::modal::FormKind;
use crate::engine::beam::{BeamNode, Provenance, Status};
use crate::kg::Term;
use crate::overlay::Op;
use ratatui::Frame;
use ratatui::layout::{Constraint, Layout, Rect};
use ratatui::style::{Modifier, Style};
use ratatui::text::{Line, Span};
use ratatui::widgets::{Block, Clear, Paragraph, Wrap};
use std::collections::HashSet;

/// Below this the layout is replaced by a message.
pub const MIN_SIZE: (u16, u16) = (60, 16);

const SPINNER: [&str; 8] = ["⠋", "⠙", "⠹", "⠸", "⠼", "⠴", "⠦", "⠧"];

/// Where the panes go in `area` (the mouse handler uses the same function).
pub fn layout(area: Rect) -> Areas {
    let bottom_height = match area.height {
        h if h >= 36 => 12,
        h if h >= 30 => 10,
        _ => 7,
    };
    let [question, main, bottom, status] = Layout::vertical([
        Constraint::Length(3),
        Constraint::Min(5),
        Constraint::Length(bottom_height),
        Constraint::Length(1),
    ])
    .areas(area);
    let [tree, inspector] = Layout::horizontal([Constraint::Percentage(58), Constraint::Percentage(42)]).areas(main);
    Areas { question, tree, inspector, bottom, status }
}

pub fn draw(frame: &mut Frame, app: &App) {
    let area = frame.area();
    if area.width < MIN_SIZE.0 || area.height < MIN_SIZE.1 {
        let text = format!("terminal too small: {}×{} (needs {}×{})", area.width, area.height, MIN_SIZE.0, MIN_SIZE.1);
        frame.render_widget(Paragraph::new(text).wrap(Wrap { trim: true }), area);
        return;
    }
    let areas = layout(area);
    draw_question(frame, app, areas.question);
    draw_tree(frame, app, areas.tree);
    draw_inspector(frame, app, areas.inspector);
    match app.bottom {
        Bottom::Transcript => draw_transcript(frame, app, areas.bottom),
        Bottom::Answer => draw_answer(frame, app, areas.bottom),
        Bottom::Corrections => draw_corrections(frame, app, areas.bottom),
    }
    draw_status(frame, app, areas.status);
    if app.form.is_some() {
        draw_form(frame, app, area);
    }
    if app.picker.is_some() {
        draw_picker(frame, app, area);
    }
    if app.palette.is_some() {
        draw_palette(frame, app, area);
    }
    if app.help {
        draw_help(frame, app, area);
    }
}

fn bold() -> Style {
    Style::new().add_modifier(Modifier::BOLD)
}

fn heading(text: &str) -> Line<'static> {
    Line::from(Span::styled(text.to_string(), Style::new().add_modifier(Modifier::UNDERLINED)))
}

/// A centred box of at most `width`×`height`.
fn popup(area: Rect, width: u16, height: u16) -> Rect {
    let width = width.min(area.width.saturating_sub(4));
    let height = height.min(area.height.saturating_sub(2));
    Rect { x: area.x + (area.width - width) / 2, y: area.y + (area.height - height) / 2, width, height }
}

fn pane_block(app: &App, pane: Focus, title: String) -> Block<'static> {
    Block::bordered().title(title).border_style(app.theme.border(app.focus == pane))
}

fn dim(app: &App) -> Style {
    app.theme.fg(app.theme.dim).add_modifier(Modifier::DIM)
}

fn draw_form(frame: &mut Frame, app: &App, area: Rect) {
    let Some(form) = &app.form else { return };
    let rect = popup(area, 90, 14);
    let mut lines = Vec::new();
    match &form.kind {
        FormKind::Flag { triple, object } => {
            lines.push(Line::from(Span::styled("This triple is wrong:", bold())));
            lines.push(Line::from(triple.line()));
            lines.push(Line::from(Span::styled(
                format!("({} {} {})", triple.head_term, triple.relation_id, triple.tail_term),
                dim(app),
            )));
            if let Some(term) = object {
                lines.push(Line::from(Span::styled(format!("right object from the KG: {term}"), dim(app))));
            }
        }
        FormKind::Relabel { entity, current } => {
            lines.push(Line::from(Span::styled(format!("The name of {entity} is wrong:"), bold())));
            lines.push(Line::from(format!("now: {current}")));
        }
    }
    lines.push(Line::from(""));
    for (i, field) in form.fields.iter().enumerate() {
        let active = i == form.active;
        let style = if active { bold() } else { Style::new() };
        let cursor = if active { "▏" } else { "" };
        lines.push(Line::from(vec![
            Span::styled(format!("{}: ", field.label), style),
            Span::raw(format!("{}{cursor}", field.value)),
        ]));
    }
    lines.push(Line::from(""));
    if let Some(problem) = &form.problem {
        lines.push(Line::from(Span::styled(
            problem.clone(),
            app.theme.fg(app.theme.flagged).add_modifier(Modifier::BOLD),
        )));
    }
    lines.push(Line::from(Span::styled("enter: record · tab: next field · esc: cancel", dim(app))));
    frame.render_widget(Clear, rect);
    frame.render_widget(
        Paragraph::new(lines).block(Block::bordered().title(form.title())).wrap(Wrap { trim: false }),
        rect,
    );
}

fn draw_picker(frame: &mut Frame, app: &App, area: Rect) {
    let Some(picker) = &app.picker else { return };
    let rect = popup(area, 80, 18);
    let inner = rect.height.saturating_sub(4) as usize;
    let shown = picker.shown();
    let mut lines = vec![Line::from(vec![Span::styled("filter: ", bold()), Span::raw(format!("{}▏", picker.query))])];
    if picker.loading {
        lines.push(Line::from(Span::styled("asking the KG…", dim(app))));
    } else {
        lines.push(Line::from(Span::styled(
            format!("{} of {} candidates · ↑/↓ · enter: choose · esc: cancel", shown.len(), picker.items.len()),
            dim(app),
        )));
    }
    let offset = window(picker.selected, shown.len(), inner);
    for (row, &i) in shown.iter().enumerate().skip(offset).take(inner) {
        let item = &picker.items[i];
        let line = Line::from(vec![Span::raw(item.text.clone()), Span::styled(format!("  {}", item.detail), dim(app))]);
        lines.push(if row == picker.selected { line.style(app.theme.selected()) } else { line });
    }
    frame.render_widget(Clear, rect);
    frame.render_widget(Paragraph::new(lines).block(Block::bordered().title(picker.title.clone())), rect);
}

fn draw_palette(frame: &mut Frame, app: &App, area: Rect) {
    let Some(palette) = &app.palette else { return };
    let rect = popup(area, 96, 16);
    let inner = rect.height.saturating_sub(3) as usize;
    let commands = app.palette_commands();
    let mut lines = vec![Line::from(vec![Span::styled(": ", bold()), Span::raw(format!("{}▏", palette.query))])];
    let offset = window(palette.selected, commands.len(), inner);
    for (row, c) in commands.iter().enumerate().skip(offset).take(inner) {
        let keys = app.keymap.keys_for(*c);
        let line = Line::from(vec![
            Span::styled(format!("{:<19}", c.name()), bold()),
            Span::styled(format!("{keys:<14}"), dim(app)),
            Span::raw(c.help()),
        ]);
        lines.push(if row == palette.selected { line.style(app.theme.selected()) } else { line });
    }
    frame.render_widget(Clear, rect);
    frame.render_widget(
        Paragraph::new(lines).block(Block::bordered().title(" Commands (type to filter, enter: run, esc: close) ")),
        rect,
    );
}

fn draw_help(frame: &mut Frame, app: &App, area: Rect) {
    let rect = popup(area, 110, area.height.saturating_sub(2));
    let mut lines: Vec<Line> = app
        .keymap
        .help(&app.help_panes())
        .into_iter()
        .filter(|(keys, _, _)| !keys.is_empty())
        .map(|(keys, _, help)| Line::from(vec![Span::styled(format!("{keys:>16}  "), bold()), Span::raw(help)]))
        .collect();
    lines.push(Line::from(Span::styled(
        "  the palette (:) has every command by name, also those without a key",
        dim(app),
    )));
    lines.push(Line::from(""));
    lines.push(Line::from(Span::styled(
        "+ kept  - pruned by score  ~ by width  % sampled out  ? not scored  x/*/^ dropped/pinned/added by you",
        dim(app),
    )));
    lines.push(Line::from(Span::styled(
        "✎ from a correction  ⚑ flagged wrong  » behind the answer  ↶ set aside by going back",
        dim(app),
    )));
    let pane = match app.focus {
        Focus::Question => "question",
        Focus::Tree => "beam tree",
        Focus::Transcript => "transcript",
        Focus::Answer => "answer",
        Focus::Corrections => "corrections",
    };
    frame.render_widget(Clear, rect);
    frame.render_widget(
        Paragraph::new(lines)
            .block(Block::bordered().title(format!(" Keys in the {pane} (j/k: scroll · any other key closes) ")))
            .wrap(Wrap { trim: false })
            .scroll((app.help_scroll, 0)),
        rect,
    );
}

fn draw_question(frame: &mut Frame, app: &App, area: Rect) {
    let focused = app.focus == Focus::Question;
    let title = if focused {
        " Question (enter: ask · alt-enter: new line · ↑/↓: history · ctrl-u: clear · esc: back) "
    } else {
        " Question (i: edit · a: ask again) "
    };
    let block = pane_block(app, Focus::Question, title.into());
    if !focused {
        let text = app.question().replace('\n', " ");
        frame.render_widget(Paragraph::new(text).block(block).wrap(Wrap { trim: true }), area);
        return;
    }
    let mut input = app.input.clone();
    input.set_block(block);
    input.set_cursor_line_style(Style::new());
    frame.render_widget(&input, area);
}

fn status_style(app: &App, status: Status) -> Style {
    let t = &app.theme;
    match status {
        Status::Kept => t.fg(t.kept).add_modifier(Modifier::BOLD),
        Status::PrunedByScore | Status::PrunedByWidth | Status::PrunedBySample => {
            t.fg(t.pruned).add_modifier(Modifier::DIM)
        }
        Status::PrunedByUser => t.fg(t.user).add_modifier(Modifier::DIM | Modifier::CROSSED_OUT),
        Status::PinnedByUser | Status::AddedByUser => t.fg(t.user).add_modifier(Modifier::BOLD | Modifier::ITALIC),
        Status::Candidate => t.fg(t.candidate),
    }
}

/// The triples the overlay retracts, to mark them in the tree.
fn retracted(app: &App) -> HashSet<(String, String, Term)> {
    app.corrections
        .iter()
        .filter(|c| c.active)
        .filter_map(|c| match &c.op {
            Op::Retract { subject, relation, object } => Some((subject.clone(), relation.clone(), object.clone())),
            _ => None,
        })
        .collect()
}

/// Whether the triple that reached `node` (an entity under a relation) is retracted.
fn is_flagged(app: &App, node: NodeRef, retracted: &HashSet<(String, String, Term)>) -> bool {
    if retracted.is_empty() {
        return false;
    }
    let Some(beam) = app.beam_of(node) else { return false };
    beam.triples(node.id).last().is_some_and(|t| {
        let Term::Entity(head) = &t.head_term else { return false };
        retracted.contains(&(head.clone(), t.relation_id.clone(), t.tail_term.clone()))
    })
}

fn draw_tree(frame: &mut Frame, app: &App, area: Rect) {
    let replay = if app.replay.is_some() { " · replay" } else { "" };
    let block = pane_block(app, Focus::Tree, format!(" Beam · {} · {}{replay} ", app.kg_name, app.llm_name));
    let Some(run) = &app.run else {
        let hint = vec![
            Line::from("No question yet: type one above and press enter."),
            Line::from(""),
            Line::from(Span::styled(
                "Try: What is the majority party now in the country where Canberra is located?",
                dim(app),
            )),
            Line::from(Span::styled("?: keys · :: commands · q: quit (from the tree)", dim(app))),
        ];
        frame.render_widget(Paragraph::new(hint).block(block).wrap(Wrap { trim: false }), area);
        return;
    };
    let rows = app.visible_rows();
    if rows.is_empty() && run.beam().nodes.is_empty() && run.trace().len() <= 1 && !run.is_finished() {
        let text = format!("No beam yet: n takes the next step ({}).", run.next_phase());
        frame.render_widget(Paragraph::new(text).block(block).wrap(Wrap { trim: true }), area);
        return;
    }
    if rows.is_empty() {
        let text = format!(
            "{} is a prompt-only method: no beam. The transcript shows its calls, the answer pane the result.",
            run.settings().method.label()
        );
        frame.render_widget(Paragraph::new(text).block(block).wrap(Wrap { trim: true }), area);
        return;
    }
    let height = area.height.saturating_sub(2) as usize;
    let selected = app.selected.min(rows.len().saturating_sub(1));
    let offset = window(selected, rows.len(), height);
    let width = area.width.saturating_sub(2) as usize;
    let retracted = retracted(app);
    let traced: HashSet<usize> = match (app.traced, run.answer()) {
        (Some(t), Some(answer)) => {
            answer.paths.get(t).map(|p| run.beam().path(p.leaf).into_iter().collect()).unwrap_or_default()
        }
        _ => HashSet::new(),
    };
    let lines: Vec<Line> = rows
        .iter()
        .enumerate()
        .skip(offset)
        .take(height)
        .filter_map(|(i, row)| {
            let node = app.node(row.node)?;
            let fold = if node.children.is_empty() {
                " "
            } else if app.collapsed.contains(&row.node) {
                "▸"
            } else {
                "▾"
            };
            let mut marks = String::new();
            if row.node.branch.is_none() && traced.contains(&row.node.id) {
                marks.push('»');
            }
            if row.node.branch.is_some() {
                marks.push('↶');
            }
            if matches!(node.provenance, Provenance::Correction { .. }) {
                marks.push('✎');
            }
            if is_flagged(app, row.node, &retracted) {
                marks.push('⚑');
            }
            let mut style = status_style(app, node.status);
            if row.node.branch.is_some() {
                style = style.add_modifier(Modifier::DIM | Modifier::ITALIC);
            }
            let lead = format!("{}{fold}", "  ".repeat(row.indent));
            let (what, mut scores) = node_parts(node);
            // The direction arrow always shows; only the name is shortened.
            let (arrow, what) = match what.split_once(' ') {
                Some((a, rest)) if a == "->" || a == "<-" => (format!("{a} "), rest.to_string()),
                _ => (String::new(), what),
            };
            // The scores keep their place; a long name gives way, keeping its end (the
            // informative part of `domain.type.property`), and on narrow screens the bar and
            // the path score go first.
            let fixed = |scores: &Option<String>| {
                lead.chars().count()
                    + marks.chars().count()
                    + arrow.len()
                    + 2
                    + scores.as_ref().map_or(0, |s| s.chars().count() + 2)
            };
            if width.saturating_sub(fixed(&scores)) < 28 {
                scores = node.score.map(|s| format!("{s:.2}"));
            }
            let room = width.saturating_sub(fixed(&scores)).max(8);
            let length = what.chars().count();
            let what = if length > room {
                ['…'].into_iter().chain(what.chars().skip(length - room + 1)).collect()
            } else {
                what
            };
            let mut spans = vec![Span::raw(lead)];
            if !marks.is_empty() {
                let t = &app.theme;
                let mark_color = if marks.contains('⚑') { t.flagged } else { t.correction };
                spans.push(Span::styled(marks, t.fg(mark_color).add_modifier(Modifier::BOLD)));
            }
            spans.push(Span::styled(format!("{} {arrow}{what}", node.status.symbol()), style));
            if let Some(scores) = scores {
                spans.push(Span::styled(format!("  {scores}"), style));
            }
            if let Some(reason) = node.reason.as_deref().filter(|_| node.status == Status::PrunedByWidth) {
                spans.push(Span::styled(format!("  ({reason})"), dim(app)));
            }
            let line = Line::from(spans);
            Some(if i == selected && app.focus != Focus::Question { line.style(app.theme.selected()) } else { line })
        })
        .collect();
    let title_count = format!(" {}/{} ", selected + 1, rows.len());
    frame.render_widget(Paragraph::new(lines).block(block.title_bottom(Line::from(title_count).right_aligned())), area);
}

fn provenance_line(app: &App, node: &BeamNode) -> Vec<Line<'static>> {
    match &node.provenance {
        Provenance::Kg { graph } => vec![Line::from(format!("from: {graph}"))],
        Provenance::Linked { name } => vec![Line::from(format!("linked from the name {name:?} the model gave"))],
        Provenance::User => vec![Line::from("from: you")],
        Provenance::Generated { kept: true } => {
            vec![Line::from("generated by the LLM (not in the KG); kept: A accepts it into your corrections")]
        }
        Provenance::Generated { kept: false } => {
            vec![Line::from("generated by the LLM (not in the KG); rejected by verification")]
        }
        Provenance::Correction { id } => {
            let mut lines = vec![Line::from(Span::styled(
                format!("from: overlay correction {id}"),
                app.theme.fg(app.theme.correction).add_modifier(Modifier::BOLD),
            ))];
            if let Some(c) = app.corrections.iter().find(|c| c.id == *id) {
                lines.push(Line::from(format!("  why: {} ({}, {})", c.reason, c.author, c.created)));
            }
            lines
        }
    }
}

fn draw_inspector(frame: &mut Frame, app: &App, area: Rect) {
    let block = Block::bordered().title(" Inspector ").border_style(app.theme.border(false));
    let (Some(run), Some(node_ref)) = (&app.run, app.selected_ref()) else {
        frame.render_widget(Paragraph::new("Select a node.").block(block), area);
        return;
    };
    let (Some(beam), Some(node)) = (app.beam_of(node_ref), app.node(node_ref)) else { return };
    let mut lines = vec![
        Line::from(Span::styled(node.shown().to_string(), bold())),
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
            Some(s) => format!("score {s:.3} {} · path {:.4}", bar(s), node.path_score),
            None => "not scored".into(),
        }),
    ];
    if let Some(b) = node_ref.branch {
        lines.push(Line::from(Span::styled(
            format!("set aside when you went back to step {}", run.abandoned()[b].after_step),
            dim(app),
        )));
    }
    lines.extend(provenance_line(app, node));
    lines.push(heading("path"));
    lines.push(Line::from(beam.path_text(node_ref.id)));
    let triples = beam.triples(node_ref.id);
    if !triples.is_empty() {
        lines.push(heading("triples"));
        for t in &triples {
            lines.push(Line::from(t.line()));
            lines.push(Line::from(Span::styled(
                format!("  {} {} {}", t.head_term, t.relation_id, t.tail_term),
                dim(app),
            )));
        }
    }
    let events = match node_ref.branch {
        None => run.trace(),
        Some(b) => &run.abandoned()[b].events[..],
    };
    // The call that scored this node: the one whose reply or prompt names it.
    let step = node.step.and_then(|s| events.iter().find(|e| e.index == s));
    let call = step.and_then(|e| {
        e.calls.iter().find(|c| c.parsed.contains(node.shown()) || c.prompt.contains(node.shown())).or(e.calls.first())
    });
    if let Some(call) = call {
        lines.push(heading(&format!(
            "{} · {} ms · {} tok",
            call.step,
            call.latency_ms,
            call.usage.prompt_tokens + call.usage.completion_tokens
        )));
        lines.push(Line::from(Span::styled("reply:", bold())));
        lines.extend(call.reply.lines().take(8).map(|l| Line::from(l.to_string())));
        lines.push(Line::from(Span::styled("prompt (end):", bold())));
        let prompt: Vec<&str> = call.prompt.lines().collect();
        lines.extend(
            prompt[prompt.len().saturating_sub(8)..].iter().map(|l| Line::from(Span::styled(l.to_string(), dim(app)))),
        );
    }
    frame.render_widget(Paragraph::new(lines).block(block).wrap(Wrap { trim: false }), area);
}

fn draw_transcript(frame: &mut Frame, app: &App, area: Rect) {
    let block =
        pane_block(app, Focus::Transcript, " Transcript (tab: next pane · enter: go back to this step) ".into());
    let Some(run) = &app.run else {
        frame.render_widget(Paragraph::new("").block(block), area);
        return;
    };
    let inner = block.inner(area);
    frame.render_widget(block, area);
    let [list, detail] = Layout::horizontal([Constraint::Percentage(50), Constraint::Percentage(50)]).areas(inner);
    let events = run.trace();
    let at = if app.focus == Focus::Transcript { app.transcript_at } else { events.len().saturating_sub(1) };
    let height = list.height as usize;
    let offset = window(at, events.len(), height);
    let lines: Vec<Line> = events
        .iter()
        .enumerate()
        .skip(offset)
        .take(height)
        .map(|(i, e)| {
            let tokens: u64 = e.calls.iter().map(|c| c.usage.prompt_tokens + c.usage.completion_tokens).sum();
            let calls = if e.calls.is_empty() { String::new() } else { format!(" [{}× {tokens}t]", e.calls.len()) };
            let line = Line::from(format!("{:>3} {:<16} {}{calls}", e.index, e.phase().unwrap_or("·"), e.summary));
            if i == at && app.focus == Focus::Transcript { line.style(app.theme.selected()) } else { line }
        })
        .collect();
    frame.render_widget(Paragraph::new(lines), list);
    let detail_block = Block::new().borders(ratatui::widgets::Borders::LEFT).border_style(app.theme.border(false));
    let detail_area = detail_block.inner(detail);
    frame.render_widget(detail_block, detail);
    let detail = detail_area;
    let Some(event) = events.get(at) else { return };
    let mut lines = vec![Line::from(Span::styled(
        format!("step {} · {} ms · depth {}", event.index, event.elapsed_ms, event.depth),
        bold(),
    ))];
    for c in &event.calls {
        lines.push(Line::from(Span::styled(
            format!(
                "{} · {} ms · {}+{} tok{} · T={}",
                c.step,
                c.latency_ms,
                c.usage.prompt_tokens,
                c.usage.completion_tokens,
                if c.cached { " · reused" } else { "" },
                c.temperature
            ),
            Style::new().add_modifier(Modifier::UNDERLINED),
        )));
        lines.push(Line::from(format!("parsed: {}", c.parsed)));
        lines.extend(c.reply.lines().take(4).map(|l| Line::from(format!("< {l}"))));
        let prompt: Vec<&str> = c.prompt.lines().filter(|l| !l.trim().is_empty()).collect();
        lines.extend(
            prompt[prompt.len().saturating_sub(3)..]
                .iter()
                .map(|l| Line::from(Span::styled(format!("> {l}"), dim(app)))),
        );
    }
    for l in &event.lookups {
        lines.push(Line::from(Span::styled(format!("KG {} → {} result(s)", l.what, l.results), dim(app))));
    }
    lines.extend(event.notes.iter().map(|n| Line::from(format!("note: {n}"))));
    frame.render_widget(Paragraph::new(lines).wrap(Wrap { trim: false }), detail);
}

fn draw_answer(frame: &mut Frame, app: &App, area: Rect) {
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

fn draw_corrections(frame: &mut Frame, app: &App, area: Rect) {
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
    let lines: Vec<Line> = app
        .corrections
        .iter()
        .enumerate()
        .skip(offset)
        .take(height)
        .map(|(i, c)| {
            let state = if c.active { "" } else { " (undone)" };
            let line = Line::from(format!("#{:<3} {} — {} ({}){state}", c.id, c.op.describe(), c.reason, c.author));
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

/// The status bar: the latest message (or the search being typed) on the left, the run's
/// counters on the right.
fn draw_status(frame: &mut Frame, app: &App, area: Rect) {
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
    let method = s.method.label();
    // Most important first; the tail is dropped when the message would get under 30 columns.
    let mut segments = vec![
        format!("{method} d{depth}/{} N={}", s.depth, s.width),
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
    let room = area.width.saturating_sub(30) as usize;
    let mut counters = segments.join(" │ ") + " ";
    while counters.chars().count() > room && segments.len() > 1 {
        segments.pop();
        counters = segments.join(" │ ") + " ";
    }
    let width = (counters.chars().count() as u16).min(area.width);
    let [left, right] = Layout::horizontal([Constraint::Min(0), Constraint::Length(width)]).areas(area);
    let style = app.theme.status_bar();
    let message = match &app.search {
        Some(search) if search.typing => format!("/{}▏ ({} matches)", search.query, search.matches.len()),
        _ => app.message.clone().unwrap_or_default(),
    };
    frame.render_widget(Paragraph::new(format!(" {message}")).style(style), left);
    frame.render_widget(Paragraph::new(counters).style(style), right);
}
