//! The dialogs over the screen: the correction form, the picker, the palette, the help.

use super::*;
use crate::tui::modal::Purpose;

pub(super) fn draw_form(frame: &mut Frame<'_>, app: &App, area: Rect) {
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
        FormKind::EditStep { thought } => {
            lines.push(Line::from(Span::styled("The model's next step, not run yet:", bold())));
            lines.push(Line::from(format!("Thought: {thought}")));
            lines.push(Line::from(Span::styled(
                "What you enter runs instead; the transcript records the change and the session replays it.",
                dim(app),
            )));
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
    let enter = if matches!(form.kind, FormKind::EditStep { .. }) { "run this step" } else { "record" };
    lines.push(Line::from(Span::styled(format!("enter: {enter} · tab: next field · esc: cancel"), dim(app))));
    frame.render_widget(Clear, rect);
    frame.render_widget(
        Paragraph::new(lines).block(Block::bordered().title(form.title())).wrap(Wrap { trim: false }),
        rect,
    );
}

pub(super) fn draw_picker(frame: &mut Frame<'_>, app: &App, area: Rect) {
    let Some(picker) = &app.picker else { return };
    let rect = popup(area, 80, 18);
    let inner = rect.height.saturating_sub(4) as usize;
    let shown = picker.shown();
    let mut lines = vec![Line::from(vec![Span::styled("filter: ", bold()), Span::raw(format!("{}▏", picker.query))])];
    if picker.loading {
        lines.push(Line::from(Span::styled("asking the KG…", dim(app))));
    } else if picker.items.is_empty() && picker.searched.is_none() && picker.purpose == Purpose::Object {
        lines.push(Line::from(Span::styled("type a name: the KG's labels are searched as you type", dim(app))));
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

pub(super) fn draw_palette(frame: &mut Frame<'_>, app: &App, area: Rect) {
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

pub(super) fn draw_help(frame: &mut Frame<'_>, app: &App, area: Rect) {
    let rect = popup(area, 110, area.height.saturating_sub(2));
    let mut lines: Vec<Line<'_>> = app
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
        "✎ from a correction  ✦ generated by the LLM  ⚑ flagged wrong  » behind the answer  ↶ set aside by going back",
        dim(app),
    )));
    let pane = match app.focus {
        Focus::Question => "question",
        Focus::Tree => "beam tree",
        Focus::Inspector => "inspector",
        Focus::Messages => "messages",
        Focus::Transcript => "transcript",
        Focus::Method => "method",
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
