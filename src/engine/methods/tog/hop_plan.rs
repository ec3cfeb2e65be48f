//! The hop plan (`--hop-plan`): the model first names the relations the question follows from
//! its topic entity to the answer, and the paths are judged only once they are that many hops
//! long (capped at the depth). A judgment shown a path one hop short tends to take its end
//! for the answer (the parent for a grandmother, the spouse for the spouse's nationality);
//! below the planned depth there is no judgment to make that mistake, and no call: the check
//! is a step of its own that asks nothing, so the user's changes after entity pruning keep
//! their moment. With several topic entities one plan serves them all (the model is shown
//! every one). From the planned depth on, the judgment is offered only what the paths reach
//! there (`answer`): at depth 2 the parent is still on the grandmother's path.
//!
//! The plan needs nothing from the KG, so its call rides along with the first relation lookup.

use super::{TogMachine, templates};
use crate::engine::beam::NodeId;
use crate::engine::events::Event;
use crate::engine::parse;
use crate::engine::step::{completion, record, unreadable};
use crate::engine::{Context, EngineError, Request, Response};

impl TogMachine {
    /// The plan's call beside the lookups of `frontier`: at the first hop, once, and only where
    /// it can change something (a depth beyond 1, entities to search).
    pub(super) fn hop_plan_request(&self, cx: &Context, frontier: &[NodeId]) -> Option<Request> {
        let s = &cx.settings;
        if !s.hop_plan || s.depth <= 1 || self.hops_planned.is_some() || self.depth != 1 || frontier.is_empty() {
            return None;
        }
        let topics: Vec<&str> = frontier.iter().map(|&n| cx.beam.nodes[n].shown()).collect();
        let prompt =
            cx.render(templates::HOP_PLAN, &[("question", &cx.question), ("topic_entity", &topics.join("; "))]);
        Some(cx.llm("hop_plan", prompt, s.reason_temperature, &super::shapes::HOP_PLAN))
    }

    /// Reads the plan's reply (request `i` of the batch): the depth the paths are first judged
    /// at. A reply naming no relation plans nothing: every depth is judged, as without a plan.
    pub(super) fn absorb_hop_plan(
        &mut self,
        cx: &Context,
        requests: &[Request],
        responses: &[Response],
        i: usize,
        ev: &mut Event,
    ) -> Result<(), EngineError> {
        let c = completion(responses, i)?;
        let hops = parse_hop_plan(&c.text);
        let depth = cx.settings.depth;
        let first_judged = u32::try_from(hops.len()).unwrap_or(u32::MAX).clamp(1, depth.max(1));
        let read = if hops.is_empty() {
            "no relation named: every depth is judged".to_string()
        } else {
            let capped =
                if first_judged < hops.len() as u32 { format!(" (capped at depth {depth})") } else { String::new() };
            format!(
                "{} hop{}: {}; first judged at depth {first_judged}{capped}",
                hops.len(),
                if hops.len() == 1 { "" } else { "s" },
                hops.join(" → ")
            )
        };
        ev.calls.push(record(&requests[i], c, read));
        if hops.is_empty() {
            ev.notes.push("the reply named no relation: no hop plan, every depth is judged".into());
            // A braced "unknown" is a reply read; only one without braces is not.
            if !c.text.contains('{') {
                unreadable(ev);
            }
        }
        self.hops_planned = Some(first_judged);
        Ok(())
    }

    /// Whether the paths the next check is on go unjudged: the plan puts the answer further out.
    pub(super) fn short_of_plan(&self) -> bool {
        self.hops_planned.is_some_and(|first_judged| self.entity_layer() < first_judged)
    }

    /// The depth the paths are first judged at (1 without a plan).
    pub(super) fn first_judged(&self) -> u32 {
        self.hops_planned.unwrap_or(1)
    }
}

/// The relations of a plan, `{spouse | gender}` (also `;`- or `,`-separated, as a model may
/// write them); none for a reply without braces, or one that says it does not know.
pub(crate) fn parse_hop_plan(reply: &str) -> Vec<String> {
    let Some(open) = reply.find('{') else { return Vec::new() };
    let Some(close) = reply[open..].find('}') else { return Vec::new() };
    let inner = &reply[open + 1..open + close];
    let separator = if inner.contains('|') {
        '|'
    } else if inner.contains(';') {
        ';'
    } else {
        ','
    };
    inner
        .split(separator)
        .map(|r| r.trim().trim_matches('"').trim())
        .filter(|r| !parse::is_unknown(r))
        .map(str::to_string)
        .collect()
}

#[cfg(test)]
mod tests {
    use super::super::shapes::HOP_PLAN;
    use super::parse_hop_plan;
    use crate::llm::ReplySchema;
    use serde_json::json;

    /// A structured plan reads back into the brace text, one hop an item, whatever its names hold.
    #[test]
    fn a_structured_plan_counts_its_items() {
        let read = |value| (HOP_PLAN.read)(value, &ReplySchema::default(), &mut Vec::new());
        let hops = |value| parse_hop_plan(&read(value).unwrap());
        assert_eq!(hops(json!({"chain": ["spouse", "gender"]})), ["spouse", "gender"]);
        assert_eq!(hops(json!({"chain": ["contained by, country"]})).len(), 1, "a comma inside a name");
        assert_eq!(hops(json!({"chain": ["a | b", "c; d"]})).len(), 2, "separators inside names");
        assert!(hops(json!({"chain": ["<relation>"]})).is_empty(), "the shape's placeholder is no hop");
        assert!(hops(json!({"chain": []})).is_empty());
        assert_eq!(read(json!({"relations": ["spouse"]})), None, "not the shape");
    }

    #[test]
    fn a_plan_reads_its_relations_in_order() {
        assert_eq!(parse_hop_plan("{spouse | gender}"), ["spouse", "gender"]);
        assert_eq!(parse_hop_plan("Plan: {parent; parent; name}."), ["parent", "parent", "name"]);
        assert_eq!(parse_hop_plan(r#"{"place of birth"}"#), ["place of birth"]);
        assert!(parse_hop_plan("{unknown}").is_empty(), "a plan that does not know plans nothing");
        assert!(parse_hop_plan("spouse, then gender").is_empty(), "no braces, no plan");
        assert!(parse_hop_plan("{ | }").is_empty());
        assert!(parse_hop_plan("{spouse").is_empty(), "an unclosed brace is no plan");
    }
}
