//! The method pane's view of a GoG run: its steps, the next action editable.

use super::GogMachine;
use crate::engine::Context;
use crate::engine::method::{EditableStep, MethodView, ViewItem, ViewLine};

impl GogMachine {
    /// The steps, one row each, with the thought, the action and the observation in full.
    pub(super) fn method_view(&self, _cx: &Context) -> MethodView {
        let last = self.steps.len().saturating_sub(1);
        let pending = self.editable();
        let generated = (!self.generated.is_empty()).then(|| {
            let kept = self.generated.iter().filter(|g| g.kept).count();
            ViewLine::dim(format!(
                "✦ {} generated triple(s), {kept} kept: select one in the tree, A accepts it",
                self.generated.len()
            ))
        });
        let items = self
            .steps
            .iter()
            .enumerate()
            .map(|(i, s)| {
                let editable = i == last && pending;
                let mark = if editable { "⏵" } else { " " };
                let mut detail = vec![
                    ViewLine::labelled("Thought: ", s.thought.clone()),
                    ViewLine::labelled("Action: ", s.action.clone()),
                ];
                if editable {
                    // The UI says how to edit it.
                } else if s.observation.is_empty() {
                    detail.push(ViewLine::dim("Observation: (under way)"));
                } else {
                    detail.push(ViewLine::labelled("Observation:", ""));
                    detail.extend(s.observation.lines().map(ViewLine::plain));
                }
                detail.extend(generated.clone());
                let edit = editable.then(|| EditableStep {
                    method: "GoG".into(),
                    thought: s.thought.clone(),
                    action: s.action.clone(),
                    actions: "Search[e1 | e2], Generate[thought] or Finish[a1 | a2]".into(),
                });
                ViewItem {
                    row: format!("{:>2}{mark}{}  {}", i + 1, s.action, s.thought),
                    detail,
                    edit,
                    ..ViewItem::default()
                }
            })
            .collect();
        MethodView {
            title: "GoG: thought · action · observation".into(),
            report: Vec::new(),
            items,
            empty: "No thought yet.".into(),
            edits_steps: true,
        }
    }
}
