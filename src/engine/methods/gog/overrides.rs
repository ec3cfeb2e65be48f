//! The user's overrides of GoG's choices: edit the next action, keep or drop a triple, pin or
//! prune a path.

use super::{GogMachine, parse};
use crate::engine::beam::{KEPT_BY_YOU, Status};
use crate::engine::events::Event;
use crate::engine::step::ANSWERED;
use crate::engine::{Context, EngineError, Override};

impl GogMachine {
    pub(super) fn apply_override(&mut self, cx: &mut Context, o: &Override) -> Result<String, EngineError> {
        let step = cx.next_index();
        let bad = |why: &str| EngineError::BadOverride { what: o.describe(), why: why.into() };
        if cx.answer.is_some() {
            return Err(bad(ANSWERED));
        }
        match o {
            Override::EditAction { thought, action } => {
                if !self.editable() {
                    return Err(bad("a thought or action can be edited after the model wrote it and before it runs"));
                }
                let action = parse::parse_action(action).map_err(|why| bad(&why))?;
                let Some(last) = self.steps.last_mut() else { return Err(bad("no step to edit")) };
                if let Some(t) = thought {
                    last.thought = t.clone();
                }
                last.action = action.text();
                let text = action.text();
                let mut ev = Event::step(step, "", 0);
                self.start(cx, action, &mut ev);
                Ok(format!("edited the action: {text}{}", crate::engine::step::with_notes(&ev)))
            }
            Override::Keep { node } | Override::Drop { node } => {
                let keep = matches!(o, Override::Keep { .. });
                let Some(g) = self.generated.iter_mut().find(|g| g.node == *node) else {
                    return Err(bad("only generated triples can be kept or rejected"));
                };
                let line = format!("{}, {}, {}", g.head, g.relation, g.tail);
                g.kept = keep;
                if keep && !self.known.contains(&line) {
                    self.known.push(line.clone());
                } else if !keep {
                    self.known.retain(|l| *l != line);
                }
                let parent = cx.beam.nodes[*node].parent;
                for n in [Some(*node), parent].into_iter().flatten() {
                    let (status, why) =
                        if keep { (Status::Kept, KEPT_BY_YOU) } else { (Status::PrunedByUser, "rejected by the user") };
                    cx.beam.set_status(n, status, Some(why), step);
                }
                Ok(format!("{} the generated triple {line}", if keep { "kept" } else { "rejected" }))
            }
            Override::PrunePath { node } => {
                cx.beam.get(*node).ok_or_else(|| bad("no such node"))?;
                let lines: Vec<String> = cx.beam.triples(*node).iter().map(|t| t.line()).collect();
                self.known.retain(|l| !lines.contains(l));
                cx.beam.set_subtree(*node, Status::PrunedByUser, "pruned by the user", step);
                Ok(format!("pruned {} from the known triples", cx.beam.path_text(*node)))
            }
            _ => Err(bad("GoG has no beam to steer: edit the action before it runs, or keep/reject generated triples")),
        }
    }
}
