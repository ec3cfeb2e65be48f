//! ToG's and ToG-R's step handlers, one per phase: what the results of a phase's requests do
//! to the beam and which phase comes next.

use super::{DEPTH_LIMIT, DEPTH_LIMIT_PARTIAL, Phase, TogMachine, TogPlan};
use crate::engine::beam::{NodeKind, Provenance};
use crate::engine::events::{Event, LookupRecord};
use crate::engine::parse;
use crate::engine::step::{
    answer_call, completion, judged, neighbours, plural_s, plural_y, record, relations, unreadable,
};
use crate::engine::{AnswerSource, Context, EngineError, Request, Response};

impl TogMachine {
    /// On linking the topic entities.
    pub(super) fn on_topics(
        &mut self,
        cx: &mut Context,
        requests: &[Request],
        responses: &[Response],
        ev: &mut Event,
    ) -> Result<(), EngineError> {
        self.linker.absorb(cx, requests, responses, ev)?;
        if self.linker.done() {
            self.phase = Phase::RelationSearch;
            self.depth = 1;
        }

        Ok(())
    }

    /// On the relations around the frontier, read onto the beam.
    pub(super) fn on_relations_found(
        &mut self,
        cx: &mut Context,
        plan: &TogPlan,
        requests: &[Request],
        responses: &[Response],
        ev: &mut Event,
    ) -> Result<(), EngineError> {
        let frontier = &plan.nodes;
        if let Some(i) = plan.hop_plan {
            self.absorb_hop_plan(cx, requests, responses, i, ev)?;
        }
        let mut found = 0;
        for (i, &node) in frontier.iter().enumerate() {
            let relations = relations(responses, i)?;
            ev.lookups.push(LookupRecord {
                what: format!("relations of {}", cx.beam.nodes[node].shown()),
                results: relations.len(),
            });
            for r in relations {
                if cx.settings.no_backtrack && Self::came_along(cx, node, &r.relation, r.direction).is_some() {
                    let shown = cx.beam.path_text(node);
                    ev.notes.push(format!("not searched back along the relation that reached it: {shown}"));
                    continue;
                }
                let shown = r.label.clone().unwrap_or_else(|| cx.profile.display_relation(&r.relation));
                cx.beam.add(
                    Some(node),
                    NodeKind::Relation { relation: r.relation.clone(), direction: r.direction, shown },
                    Provenance::Kg { graph: cx.graph_name.clone() },
                );
                found += 1;
            }
        }
        ev.summary = format!(
            "depth {}: {found} relation{} around {} entit{}",
            self.depth,
            plural_s(found),
            frontier.len(),
            plural_y(frontier.len())
        );
        let any = self.frontier(cx).iter().any(|&n| !Self::candidates_under(cx, n).is_empty());
        self.phase = if self.pending_verdict {
            Phase::Reasoning
        } else if any {
            Phase::RelationPrune
        } else {
            self.dry(ev)
        };

        Ok(())
    }

    /// On the relations scored: the kept ones are searched next.
    pub(super) fn on_relations_scored(
        &mut self,
        cx: &mut Context,
        plan: &TogPlan,
        requests: &[Request],
        responses: &[Response],
        ev: &mut Event,
    ) -> Result<(), EngineError> {
        let kept = self.absorb_scores(cx, &plan.groups, requests, responses, ev, "relation")?;
        ev.summary = format!("depth {}: kept {kept} relation{}", self.depth, plural_s(kept));
        self.phase = if kept == 0 { self.dry(ev) } else { Phase::EntitySearch };

        Ok(())
    }

    /// On the entities through the kept relations, read onto the beam.
    pub(super) fn on_entities_found(
        &mut self,
        cx: &mut Context,
        plan: &TogPlan,
        responses: &[Response],
        ev: &mut Event,
    ) -> Result<(), EngineError> {
        let mut found = 0;
        for (i, &rel) in plan.nodes.iter().enumerate() {
            let neighbours = neighbours(responses, i)?;
            ev.lookups.push(LookupRecord {
                what: format!("neighbours through {}", cx.beam.path_text(rel)),
                results: neighbours.len(),
            });
            found += self.add_candidates(cx, rel, neighbours, ev);
        }
        ev.summary = format!("depth {}: {found} candidate entit{}", self.depth, plural_y(found));
        self.phase = if found == 0 { self.dry(ev) } else { Phase::EntityPrune };

        Ok(())
    }

    /// On the entities scored (or drawn, for ToG-R): the beam for the judgment.
    pub(super) fn on_entities_scored(
        &mut self,
        cx: &mut Context,
        plan: &TogPlan,
        requests: &[Request],
        responses: &[Response],
        ev: &mut Event,
    ) -> Result<(), EngineError> {
        if self.chains {
            self.sample_entities(cx, &plan.groups, ev);
        } else {
            self.absorb_scores(cx, &plan.groups, requests, responses, ev, "entity")?;
            self.select_width(cx, &plan.groups, ev);
        }
        let kept = Self::live_entities_at(cx, self.depth).len();
        ev.summary = format!("depth {}: {kept} path{} on the beam", self.depth, plural_s(kept));
        self.phase = if kept == 0 {
            self.dry(ev)
        } else if self.can_speculate(cx) && !self.short_of_plan() {
            self.depth += 1;
            self.pending_verdict = true;
            Phase::RelationSearch
        } else {
            Phase::Reasoning
        };

        Ok(())
    }

    /// On the judgment on the paths so far (with the next hop's relations scored meanwhile, when
    /// speculating).
    pub(super) fn on_judgment(
        &mut self,
        cx: &mut Context,
        plan: &TogPlan,
        requests: &[Request],
        responses: &[Response],
        ev: &mut Event,
    ) -> Result<(), EngineError> {
        if self.short_of_plan() {
            // Below the planned depth the check is a step without a call, so the user's
            // changes after entity pruning still have their moment.
            ev.summary =
                format!("depth {}: not judged (the hop plan judges from depth {})", self.depth, self.first_judged());
            self.phase = self.next_depth(cx, ev);
            return Ok(());
        }
        let speculated = std::mem::take(&mut self.pending_verdict);
        if speculated {
            // The verdict is on the previous hop.
            self.depth -= 1;
            ev.depth = self.depth;
        }
        let c = completion(responses, 0)?;
        let verdict = parse::parse_yes_no(&c.text);
        let answers = parse::parse_answers(&c.text).unwrap_or_default();
        if verdict.is_none() {
            ev.notes.push("no Yes/No found in the reply; taken as No".into());
        }
        let (yes, answers, parsed) =
            judged(&requests[0], verdict == Some(true), answers, "the shown triples", &mut ev.notes);
        ev.calls.push(record(&requests[0], c, parsed));
        if verdict.is_none() {
            unreadable(ev);
        }
        self.last_verdict = Some(yes);
        if yes && !answers.is_empty() {
            ev.summary = format!("depth {}: sufficient; answer {}", self.depth, answers.join(", "));
            self.finish(cx, answers, c.text.clone(), AnswerSource::KgPaths);
        } else if yes {
            ev.summary = format!("depth {}: sufficient; asking for the answer", self.depth);
            self.phase = Phase::Answer(AnswerSource::KgPaths);
        } else if speculated {
            self.depth += 1;
            let kept = self.absorb_scores(cx, &plan.groups, &requests[1..], &responses[1..], ev, "relation")?;
            ev.summary = format!(
                "depth {}: not sufficient; depth {} relations scored meanwhile: kept {kept}",
                self.depth - 1,
                self.depth
            );
            self.phase = if kept == 0 { self.dry(ev) } else { Phase::EntitySearch };
        } else {
            ev.summary = format!("depth {}: not sufficient", self.depth);
            self.phase = self.next_depth(cx, ev);
        }
        if yes && speculated && requests.len() > 1 {
            ev.notes.push(format!(
                "{} speculative call(s) scoring depth {} were not needed",
                requests.len() - 1,
                self.depth + 1
            ));
            for (r, resp) in requests[1..].iter().zip(&responses[1..]) {
                if let Response::Llm { completion } = resp {
                    ev.calls.push(record(r, completion, "not used: answered at the previous depth".into()));
                }
            }
        }

        Ok(())
    }

    /// On the answer asked for: taken, or asked of the model's own knowledge when the collected
    /// paths gave none.
    pub(super) fn on_answer(
        &mut self,
        cx: &mut Context,
        source: AnswerSource,
        requests: &[Request],
        responses: &[Response],
        ev: &mut Event,
    ) -> Result<(), EngineError> {
        let why = self.why_for(source);
        let (answers, reply) = answer_call(requests, responses, ev, source, why.as_deref())?;
        // Only the partial paths' answer at the depth limit falls through to the
        // model's own knowledge: not one the user asked of the paths there (a forced
        // "sufficient").
        let at_depth_limit = source == AnswerSource::PartialPaths && self.why.as_deref() == Some(DEPTH_LIMIT_PARTIAL);
        if at_depth_limit && !answers.iter().any(|a| !parse::is_unknown(a)) {
            ev.notes.push("the collected paths gave no answer: asking the model's own knowledge".into());
            self.phase = self.answer_because(AnswerSource::OwnKnowledge, DEPTH_LIMIT.into());
        } else {
            self.finish(cx, answers, reply, source);
        }

        Ok(())
    }
}
