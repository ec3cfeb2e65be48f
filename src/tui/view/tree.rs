//! The beam tree: one row per node, its status, score and flags.

use super::*;
use unicode_width::UnicodeWidthStr as _;

pub(super) fn status_style(t: &Theme, status: Status) -> Style {
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

/// The triples the active corrections retract (alone or replaced by another object, and not
/// asserted again later), to mark them in the tree.
pub(super) fn retracted(corrections: &[Correction]) -> HashSet<(String, String, Term)> {
    crate::overlay::retracted_triples(corrections)
}

/// Whether the triple that reached `node` (an entity under a relation) is retracted.
fn is_flagged(beam: &Beam, node: NodeId, retracted: &HashSet<(String, String, Term)>) -> bool {
    // Only the node a retracted triple ends at: a relation row under it holds no triple of
    // its own (its path's last triple is its parent's).
    if retracted.is_empty() || beam.nodes[node].term().is_none() {
        return false;
    }
    beam.triples(node).last().is_some_and(|t| {
        let Term::Entity(head) = &t.head_term else { return false };
        retracted.contains(&(head.clone(), t.relation_id.clone(), t.tail_term.clone()))
    })
}

/// What the tree shows: the run's beams as rows, and what marks them.
pub(super) struct TreeShown<'a> {
    /// Where the beam comes from, fitted to the pane: "Beam · KG", the model, "replay" or "".
    pub title: [String; 3],
    pub run: Option<&'a Run>,
    /// The visible rows, depth first.
    pub rows: &'a [Row],
    pub selected: usize,
    /// Whether the selected row is highlighted (not while the question is edited).
    pub highlight: bool,
    pub collapsed: &'a HashSet<NodeRef>,
    /// The triples corrections retract (flagged in the tree).
    pub retracted: &'a HashSet<(String, String, Term)>,
    /// The answer's path shown in the tree, if any.
    pub traced: Option<usize>,
    /// A recorded session is replayed (its question waits in the box).
    pub replay: bool,
    /// The key that takes a step, for the hint before the first one.
    pub step_key: String,
    /// The last thing said was an error (the first step failed: a question the demo does not
    /// know, an endpoint down).
    pub failed: bool,
    /// The question suggested before the first one.
    pub suggestion: &'a str,
    /// A step is in flight (the model or the KG is being asked).
    pub working: bool,
}

pub(super) fn draw_tree(frame: &mut Frame<'_>, area: Rect, shown: &TreeShown<'_>, look: Look<'_>) {
    let block = look.block(super::fitted_title(&shown.title, area.width));
    let Some(run) = shown.run else {
        let hint = no_question_hint(shown, look.theme.faint());
        frame.render_widget(Paragraph::new(hint).block(block).wrap(Wrap { trim: false }), area);
        return;
    };
    let rows = shown.rows;
    if rows.is_empty() {
        let text = no_rows_text(shown, run);
        frame.render_widget(Paragraph::new(text).block(block).wrap(Wrap { trim: true }), area);
        return;
    }
    let height = area.height.saturating_sub(2) as usize;
    let selected = shown.selected.min(rows.len().saturating_sub(1));
    let offset = window(selected, rows.len(), height);
    let width = area.width.saturating_sub(2) as usize;
    let tree = TreeRows { run, shown, look, traced: traced_nodes(shown, run), width };
    let lines: Vec<Line<'_>> = rows
        .iter()
        .enumerate()
        .skip(offset)
        .take(height)
        .filter_map(|(i, row)| {
            let line = tree.line(row)?;
            Some(if i == selected && shown.highlight { line.style(look.theme.selected()) } else { line })
        })
        .collect();
    let title_count = format!(" {}/{} ", selected + 1, rows.len());
    frame.render_widget(Paragraph::new(lines).block(block.title_bottom(Line::from(title_count).right_aligned())), area);
}

/// What the tree says before the first question: how to ask one (or replay the recorded one).
fn no_question_hint(shown: &TreeShown<'_>, faint: Style) -> Vec<Line<'static>> {
    if shown.replay {
        vec![
            Line::from("A recorded session: enter replays the question above, step by step from the recording."),
            Line::from(""),
            Line::from(Span::styled("then n: one recorded step · r: to the answer · ?: keys · q: quit", faint)),
        ]
    } else {
        vec![
            Line::from("No question yet: type one above and press enter."),
            Line::from(""),
            Line::from(Span::styled(format!("Try: {}", shown.suggestion), faint)),
            Line::from(Span::styled("?: keys · q: quit · Esc: leave the box · :: commands", faint)),
        ]
    }
}

/// What the tree says of a run with no rows: no beam yet (the first step to come, running or
/// failed), or a prompt-only method that has none.
fn no_rows_text(shown: &TreeShown<'_>, run: &Run) -> String {
    if run.beam().nodes.is_empty() && run.trace().len() <= 1 && !run.is_finished() {
        if shown.failed {
            // Not "n takes the next step" alone: n would only fail again on a question the
            // demo does not know.
            format!(
                "No beam yet: the step failed (M: why, in full). {} tries it again ({}); i edits the question.",
                shown.step_key,
                run.next_phase()
            )
        } else if shown.working {
            // Found by a trial: "n takes the next step" showed while that step was running.
            format!("No beam yet: {} is running…", run.next_phase())
        } else {
            format!("No beam yet: {} takes the next step ({}).", shown.step_key, run.next_phase())
        }
    } else {
        format!(
            "{} is a prompt-only method: no beam. The transcript shows its calls, the answer pane the result.",
            run.settings().method.label()
        )
    }
}

/// The nodes of the answer's path shown in the tree (`t`), if any.
fn traced_nodes(shown: &TreeShown<'_>, run: &Run) -> HashSet<usize> {
    match (shown.traced, run.answer()) {
        (Some(t), Some(answer)) => {
            answer.paths.get(t).map(|p| run.beam().path(p.leaf).into_iter().collect()).unwrap_or_default()
        }
        _ => HashSet::new(),
    }
}

/// What every row of the tree is drawn with.
struct TreeRows<'a> {
    run: &'a Run,
    shown: &'a TreeShown<'a>,
    look: Look<'a>,
    /// The nodes of the traced answer path.
    traced: HashSet<usize>,
    /// The pane's width inside its border.
    width: usize,
}

impl TreeRows<'_> {
    /// `row` as a line: its fold, marks, status, name and scores (`None`: its node is gone).
    fn line(&self, row: &Row) -> Option<Line<'static>> {
        let beam = beam_in(self.run, row.node)?;
        let node = beam.nodes.get(row.node.id)?;
        let fold = if node.children.is_empty() {
            " "
        } else if self.shown.collapsed.contains(&row.node) {
            "▸"
        } else {
            "▾"
        };
        let marks = self.marks(row, beam, node);
        let mut style = status_style(self.look.theme, node.shown_status());
        if row.node.branch.is_some() {
            style = style.add_modifier(Modifier::DIM | Modifier::ITALIC);
        }
        let lead = format!("{}{fold}", "  ".repeat(row.indent));
        let (arrow, what, scores) = self.fitted(node, &lead, &marks);
        let mut spans = vec![Span::raw(lead)];
        if !marks.is_empty() {
            let t = self.look.theme;
            let mark_color = if marks.contains('⚑') { t.flagged } else { t.correction };
            spans.push(Span::styled(marks, t.fg(mark_color).add_modifier(Modifier::BOLD)));
        }
        spans.push(Span::styled(format!("{} {arrow}{what}", node.shown_status().symbol()), style));
        if let Some(scores) = scores {
            spans.push(Span::styled(format!("  {scores}"), style));
        }
        if let Some(reason) = node.reason.as_deref().filter(|_| node.status == Status::PrunedByWidth) {
            spans.push(Span::styled(format!("  ({reason})"), self.look.theme.faint()));
        }
        Some(Line::from(spans))
    }

    /// The marks of `row`'s node: behind the answer, set aside, from a correction, generated,
    /// flagged.
    fn marks(&self, row: &Row, beam: &Beam, node: &BeamNode) -> String {
        let mut marks = String::new();
        if row.node.branch.is_none() && self.traced.contains(&row.node.id) {
            marks.push('»');
        }
        if row.node.branch.is_some() {
            marks.push('↶');
        }
        if matches!(node.provenance, Provenance::Correction { .. }) {
            marks.push('✎');
        }
        if matches!(node.provenance, Provenance::Generated { .. }) {
            // Written by the LLM, not found in the KG.
            marks.push('✦');
        }
        if is_flagged(beam, row.node.id, self.shown.retracted) {
            marks.push('⚑');
        }
        marks
    }

    /// The node's direction arrow, name and scores, fitted to the pane after `lead` and `marks`.
    fn fitted(&self, node: &BeamNode, lead: &str, marks: &str) -> (String, String, Option<String>) {
        let (what, mut scores) = node_parts(node);
        // The direction arrow always shows; only the name is shortened.
        let (arrow, what) = match what.split_once(' ') {
            Some((a, rest)) if a == "->" || a == "<-" => (format!("{a} "), rest.to_string()),
            _ => (String::new(), what),
        };
        // The scores keep their place; a long name gives way: a relation keeping its end
        // (the informative part of `domain.type.property`), an entity its start (found by a
        // trial: `…t earl of beaconsfield`); on narrow screens the bar and the path score
        // go first.
        // Counted in terminal columns: a CJK name takes two a character.
        let fixed = |scores: &Option<String>| {
            lead.width() + marks.width() + arrow.width() + 2 + scores.as_ref().map_or(0, |s| s.width() + 2)
        };
        if self.width.saturating_sub(fixed(&scores)) < 28 {
            scores = node.score.map(|s| format!("{s:.2}"));
        }
        let room = self.width.saturating_sub(fixed(&scores)).max(8);
        let what = if arrow.is_empty() { super::cut_to(&what, room) } else { cut_start_to(&what, room) };
        (arrow, what, scores)
    }
}
