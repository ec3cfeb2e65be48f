//! The hop plan (`--hop-plan`): the model first names the relations the question follows from
//! its topic entity to the answer, and the paths are judged only once they are that many hops
//! long (capped at the depth). A judgment shown a path one hop short tends to take its end
//! for the answer (the parent for a grandmother, the spouse for the spouse's nationality);
//! below the planned depth there is no judgment to make that mistake, and no call.
//!
//! The plan needs nothing from the KG, so its call rides along with the first relation lookup.

use super::{TogMachine, templates};
use crate::engine::events::Event;
use crate::engine::parse;
use crate::engine::step::{completion, record, unreadable};
use crate::engine::{Context, EngineError, Request, Response};

impl TogMachine {
    /// The plan's call: when the run plans its hops and has not asked yet.
    pub(super) fn hop_plan_request(&self, cx: &Context) -> Option<Request> {
        if !cx.settings.hop_plan || self.hops_planned.is_some() || self.depth != 1 {
            return None;
        }
        let topics: Vec<&str> = cx.beam.roots().map(|r| r.shown()).collect();
        let prompt =
            cx.render(templates::HOP_PLAN, &[("question", &cx.question), ("topic_entity", &topics.join("; "))]);
        Some(cx.llm("hop_plan", prompt, cx.settings.reason_temperature, &super::shapes::HOP_PLAN))
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
            ev.notes.push("no hop plan could be read from the reply; every depth is judged".into());
            unreadable(ev);
        }
        self.hops_planned = Some(first_judged);
        Ok(())
    }

    /// Whether the paths at this depth go unjudged: the plan puts the answer further out.
    pub(super) fn short_of_plan(&self) -> bool {
        self.hops_planned.is_some_and(|first_judged| self.depth < first_judged)
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
    use super::parse_hop_plan;

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
