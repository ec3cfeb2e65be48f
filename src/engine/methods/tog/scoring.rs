//! Scoring candidates, relations under entities or entities under relations: the requests
//! for the pruning tool (one prompt per group, one unified prompt, BM25, embeddings) and how
//! their replies become scores and statuses.

use super::shapes;
use super::templates;
use super::{Group, Ranked, TogMachine};
use crate::engine::beam::{BeamNode, NodeKind, Status};
use crate::engine::events::{Decision, Event, LookupRecord};
use crate::engine::lexical::{bm25_tokens, cosine, query_without, tokens};
use crate::engine::parse;
use crate::engine::step::{completion, record, unreadable, wrong};
use crate::engine::{Context, EngineError, PruneTool, Request, Response};

impl TogMachine {
    /// Plans the scoring requests for `groups` (relations under entities, or entities under
    /// relations) according to the pruning tool: the requests, and the groups marked with the
    /// request that scores each.
    pub(super) fn plan_scoring(&self, cx: &Context, mut groups: Vec<Group>, what: &str) -> (Vec<Request>, Vec<Group>) {
        let requests = match cx.settings.prune {
            PruneTool::Bm25 => Vec::new(),
            PruneTool::Embedding => embedding_request(cx, &mut groups),
            PruneTool::Llm if cx.settings.unified => unified_request(cx, &mut groups, what),
            PruneTool::Llm => group_requests(cx, &mut groups, what),
        };
        (requests, groups)
    }

    /// Reads the scores for the planned groups and sets scores and statuses. Returns how many
    /// candidates were kept.
    pub(super) fn absorb_scores(
        &mut self,
        cx: &mut Context,
        plan: &[Group],
        requests: &[Request],
        responses: &[Response],
        ev: &mut Event,
        what: &str,
    ) -> Result<usize, EngineError> {
        let step = ev.index;
        let mut batch = Batch { plan, requests, responses, what, unified: None, embeddings: None };
        // Unified replies and embeddings are shared by all groups: parse them once.
        batch.unified = self.unified_scores(cx, &batch, ev)?;
        batch.embeddings = embeddings(cx, &batch, ev)?;
        let mut kept_total = 0;
        let mut offset = 1; // position of a group's first candidate in the embedding batch
        for (gi, group) in plan.iter().enumerate() {
            let names = candidate_names(cx, group);
            let scored = self.group_scores(cx, &batch, gi, offset, &names, ev)?;
            offset += names.len();
            kept_total += set_scores(cx, group, &scored, what, step, ev);
        }
        if what == "relation" {
            kept_total += self.keep_one_under_user_keeps(cx, plan, ev);
        }
        Ok(kept_total)
    }

    /// The unified reply, read once for all the groups: its scores per group (None when the
    /// scoring is not unified, or no group was asked about).
    fn unified_scores(
        &self,
        cx: &Context,
        batch: &Batch<'_>,
        ev: &mut Event,
    ) -> Result<Option<Vec<Ranked>>, EngineError> {
        if cx.settings.prune != PruneTool::Llm || !cx.settings.unified {
            return Ok(None);
        }
        let Some(r) = batch.plan.iter().find_map(|g| g.request) else { return Ok(None) };
        let c = completion(batch.responses, r)?;
        let (per_group, fell_back) = self.parse_unified(cx, batch.plan, &c.text, batch.what, ev);
        ev.calls.push(record(&batch.requests[r], c, summarise_groups(cx, batch.plan, &per_group)));
        if fell_back {
            unreadable(ev);
        }
        Ok(Some(per_group))
    }

    /// One group's (candidate position, score) pairs, best first. A lone candidate nobody
    /// was asked about scores 1; entities none of which is named share equally.
    fn group_scores(
        &self,
        cx: &Context,
        batch: &Batch<'_>,
        gi: usize,
        offset: usize,
        names: &[String],
        ev: &mut Event,
    ) -> Result<Ranked, EngineError> {
        let (s, group, what) = (&cx.settings, &batch.plan[gi], batch.what);
        let keep = if what == "relation" { s.width } else { names.len() };
        if group.candidates.len() == 1 && group.request.is_none() {
            return Ok(vec![(0, 1.0)]);
        }
        if what == "entity" && !group.candidates.iter().any(|&c| cx.beam.nodes[c].is_named()) {
            let share = 1.0 / names.len() as f64;
            return Ok((0..names.len()).map(|i| (i, share)).collect());
        }
        Ok(match s.prune {
            PruneTool::Bm25 => top_by(bm25_tokens(&bm25_query(cx, group, what), names), keep, ev, names),
            PruneTool::Embedding => {
                let vectors = batch.embeddings.as_deref().unwrap_or_default();
                let q = vectors.first().map(Vec::as_slice).unwrap_or_default();
                let sims = (0..names.len())
                    .map(|i| vectors.get(offset + i).map(|v| cosine(q, v).max(0.0)).unwrap_or(0.0))
                    .collect();
                top_by(sims, keep, ev, names)
            }
            PruneTool::Llm if s.unified => {
                batch.unified.as_ref().and_then(|per| per.get(gi).cloned()).unwrap_or_default()
            }
            PruneTool::Llm => self.group_reply_scores(cx, batch, group, names, keep, ev)?,
        })
    }

    /// Reads the reply to `group`'s own prompt, recording the call.
    fn group_reply_scores(
        &self,
        cx: &Context,
        batch: &Batch<'_>,
        group: &Group,
        names: &[String],
        keep: usize,
        ev: &mut Event,
    ) -> Result<Ranked, EngineError> {
        let r = group.request.unwrap_or(0);
        let c = completion(batch.responses, r)?;
        let query = bm25_query(cx, group, batch.what);
        let (parsed, fell_back) = self.parse_group(&c.text, names, keep, batch.what, ev, &query);
        let shown = parsed.iter().map(|(i, sc)| format!("{}={sc:.2}", names[*i])).collect::<Vec<_>>().join("; ");
        ev.calls.push(record(&batch.requests[r], c, shown));
        if fell_back {
            unreadable(ev);
        }
        Ok(parsed)
    }

    /// Parses one group's reply; an unusable reply falls back to BM25 (said in the notes).
    fn parse_group(
        &self,
        reply: &str,
        names: &[String],
        keep: usize,
        what: &str,
        ev: &mut Event,
        bm25_query: &[String],
    ) -> (Vec<(usize, f64)>, bool) {
        if what == "relation" {
            let parsed = parse::parse_scored_choices(reply, names, keep);
            ev.notes.extend(parsed.notes.iter().cloned());
            if !parsed.rejected.is_empty() {
                ev.notes.push(format!("rejected relations not offered: {}", parsed.rejected.join(", ")));
            }
            if !parsed.items.is_empty() {
                return (parsed.items, false);
            }
        } else if let Some((scores, notes)) = parse::parse_score_list(reply, names) {
            ev.notes.extend(notes);
            return (scores.into_iter().enumerate().collect(), false);
        }
        ev.notes.push(format!("could not read {what} scores from the reply; ranked by BM25 instead"));
        (top_by(bm25_tokens(bm25_query, names), keep, ev, names), true)
    }

    fn parse_unified(
        &self,
        cx: &Context,
        plan: &[Group],
        reply: &str,
        what: &str,
        ev: &mut Event,
    ) -> (Vec<Vec<(usize, f64)>>, bool) {
        let mut fell_back = false;
        let called: Vec<usize> = (0..plan.len()).filter(|&i| plan[i].request.is_some()).collect();
        let names_of = |g: &Group| candidate_names(cx, g);
        let mut out = vec![Vec::new(); plan.len()];
        if what == "relation" {
            let entities: Vec<(String, Vec<String>)> = called
                .iter()
                .map(|&i| (cx.beam.nodes[plan[i].parent].shown().to_string(), names_of(&plan[i])))
                .collect();
            for (k, parsed) in parse::parse_unified_choices(reply, &entities, cx.settings.width).into_iter().enumerate()
            {
                ev.notes.extend(parsed.notes);
                if !parsed.rejected.is_empty() {
                    ev.notes.push(format!("rejected: {}", parsed.rejected.join(", ")));
                }
                out[called[k]] = parsed.items;
            }
        } else {
            let groups: Vec<Vec<String>> = called.iter().map(|&i| names_of(&plan[i])).collect();
            for (k, scores) in parse::parse_group_scores(reply, &groups).into_iter().enumerate() {
                out[called[k]] = match scores {
                    Some(s) => s.into_iter().enumerate().collect(),
                    None => {
                        fell_back = true;
                        ev.notes.push(format!("no scores for group {}; equal shares", k + 1));
                        let share = 1.0 / groups[k].len().max(1) as f64;
                        (0..groups[k].len()).map(|i| (i, share)).collect()
                    }
                };
            }
        }
        for (i, g) in plan.iter().enumerate() {
            if g.request.is_none() && g.candidates.len() == 1 {
                out[i] = vec![(0, 1.0)];
            } else if g.request.is_some() && out[i].is_empty() {
                fell_back = true;
                let names = names_of(g);
                ev.notes.push(format!(
                    "the reply gave no {what} scores for {}; ranked by BM25 instead",
                    cx.beam.nodes[g.parent].shown()
                ));
                let keep = if what == "relation" { cx.settings.width } else { names.len() };
                out[i] = top_by(bm25_tokens(&bm25_query(cx, g, what), &names), keep, ev, &names);
            }
        }
        (out, fell_back)
    }
}

/// A scoring batch as it came back, and what its groups share of it.
struct Batch<'a> {
    plan: &'a [Group],
    requests: &'a [Request],
    responses: &'a [Response],
    /// "relation" or "entity": what the groups' candidates are.
    what: &'a str,
    /// The unified reply's scores per group, read once for all the groups.
    unified: Option<Vec<Ranked>>,
    /// The embedding batch: the question first, then every group's candidates in turn.
    embeddings: Option<Vec<Vec<f32>>>,
}

/// The embedding batch's vectors, when the pruning tool is embeddings (recorded as a
/// lookup); None when not, or when nothing was asked.
fn embeddings(cx: &Context, batch: &Batch<'_>, ev: &mut Event) -> Result<Option<Vec<Vec<f32>>>, EngineError> {
    match (cx.settings.prune, batch.responses.first()) {
        (PruneTool::Embedding, Some(Response::Embeddings { vectors })) => {
            ev.lookups
                .push(LookupRecord { what: format!("embeddings of {} texts", vectors.len()), results: vectors.len() });
            Ok(Some(vectors.clone()))
        }
        (PruneTool::Embedding, other) if batch.plan.iter().any(|g| g.request.is_some()) => {
            Err(wrong(0, "embeddings", other))
        }
        _ => Ok(None),
    }
}

/// Sets the scores of `group`'s candidates and, for relations, their statuses; each is
/// recorded as a decision. Returns how many were kept.
fn set_scores(
    cx: &mut Context,
    group: &Group,
    scored: &[(usize, f64)],
    what: &str,
    step: usize,
    ev: &mut Event,
) -> usize {
    let mut kept = 0;
    for (pos, &node) in group.candidates.iter().enumerate() {
        match scored.iter().find(|(i, _)| *i == pos) {
            Some(&(_, score)) => {
                cx.beam.score(node, score, step);
                if what == "relation" {
                    if score > 0.0 {
                        cx.beam.set_status(node, Status::Kept, None, step);
                        kept += 1;
                    } else {
                        cx.beam.set_status(node, Status::PrunedByScore, Some("scored 0"), step);
                    }
                }
                // Entities are kept or cut by the global width selection afterwards.
            }
            None => {
                cx.beam.score(node, 0.0, step);
                let reason = if what == "relation" { "not among the top choices" } else { "scored 0" };
                cx.beam.set_status(node, Status::PrunedByScore, Some(reason), step);
            }
        }
        let n = &cx.beam.nodes[node];
        ev.decisions.push(Decision {
            node,
            shown: n.shown().into(),
            score: n.score,
            path_score: n.path_score,
            status: n.status,
        });
    }
    kept
}

/// Whether a group is scored by a call. A relation is always judged, even alone: it may not
/// bear on the question at all. An entity alone under a kept relation takes the relation's
/// score, as in the reference.
fn needs_call(cx: &Context, g: &Group, what: &str) -> bool {
    match what {
        "relation" => !g.candidates.is_empty(),
        _ => g.candidates.len() >= 2 && g.candidates.iter().any(|&c| cx.beam.nodes[c].is_named()),
    }
}

/// One embedding batch for all the groups: the question first, then every group's
/// candidates in turn (none when there is no candidate).
fn embedding_request(cx: &Context, groups: &mut [Group]) -> Vec<Request> {
    let mut texts = vec![cx.question.clone()];
    for g in groups.iter() {
        texts.extend(candidate_names(cx, g));
    }
    if texts.len() <= 1 {
        return Vec::new();
    }
    groups.iter_mut().for_each(|g| g.request = Some(0));
    vec![Request::Embed { texts }]
}

/// One prompt scoring every group that needs a call (none when no group does).
fn unified_request(cx: &Context, groups: &mut [Group], what: &str) -> Vec<Request> {
    let s = &cx.settings;
    let (mut blocks, mut k) = (Vec::new(), 0);
    let mut listed: Vec<(String, Vec<String>)> = Vec::new();
    for g in groups.iter_mut().filter(|g| needs_call(cx, g, what)) {
        k += 1;
        let names = candidate_names(cx, g);
        let parent = offered_name(&cx.beam.nodes[g.parent]);
        listed.push((parent.clone(), names.clone()));
        blocks.push(if what == "relation" {
            format!("Topic Entity: {parent}\nRelations: {}", names.join("; "))
        } else {
            format!("Group {k}: Relation: {parent}; Entities: {}", names.join("; "))
        });
        g.request = Some(0);
    }
    if blocks.is_empty() {
        return Vec::new();
    }
    let (template, slot, step) = if what == "relation" {
        (templates::RELATION_PRUNE_UNIFIED, "entities", "relation_prune_unified")
    } else {
        (templates::ENTITY_PRUNE_UNIFIED, "groups", "entity_prune_unified")
    };
    let width = s.width.to_string();
    let prompt = cx.render(template, &[("question", &cx.question), ("width", &width), (slot, &blocks.join("\n"))]);
    let name_lists: Vec<Vec<String>> = listed.iter().map(|(_, names)| names.clone()).collect();
    let shape = if what == "relation" {
        shapes::unified_relations(&listed, s.width)
    } else {
        shapes::entity_groups(&name_lists)
    };
    vec![cx.llm(step, prompt, s.prune_temperature, shape)]
}

/// One prompt per group that needs a call, each group marked with its request.
fn group_requests(cx: &Context, groups: &mut [Group], what: &str) -> Vec<Request> {
    let (s, q) = (&cx.settings, &cx.question);
    let mut requests = Vec::new();
    for g in groups.iter_mut().filter(|g| needs_call(cx, g, what)) {
        let names = candidate_names(cx, g);
        let parent = offered_name(&cx.beam.nodes[g.parent]);
        let prompt = if what == "relation" {
            cx.render(
                templates::RELATION_PRUNE,
                &[
                    ("width", &s.width.to_string()),
                    ("question", q),
                    ("topic_entity", &parent),
                    ("relations", &names.join("; ")),
                ],
            )
        } else {
            cx.render(
                templates::ENTITY_PRUNE,
                &[("question", q), ("relation", &parent), ("entities", &names.join("; "))],
            )
        };
        let shape = if what == "relation" { shapes::relations(&names, s.width) } else { shapes::entity_scores(&names) };
        g.request = Some(requests.len());
        requests.push(cx.llm(&format!("{what}_prune"), prompt, s.prune_temperature, shape));
    }
    requests
}

/// How a relation node is named to the model: its shown name, `name (incoming)` when it is
/// walked against the direction of its triples (Canberra is reached *from* Australia through
/// `location.country.capital`). Entities: their shown name.
pub(super) fn offered_name(node: &BeamNode) -> String {
    match &node.kind {
        NodeKind::Relation { direction: crate::kg::Direction::In, shown, .. } => format!("{shown} (incoming)"),
        _ => node.shown().to_string(),
    }
}

/// How a group's candidates are listed to the model: as [`offered_name`] names them, told apart
/// where two would still read the same: two relations with the same name (Wikidata's `wdt:P69`
/// and `p:P69`, both "educated at") show their ids, `name [id]`.
fn candidate_names(cx: &Context, group: &Group) -> Vec<String> {
    let nodes: Vec<&BeamNode> = group.candidates.iter().map(|&c| &cx.beam.nodes[c]).collect();
    let offered: Vec<String> = nodes.iter().map(|n| offered_name(n)).collect();
    nodes
        .iter()
        .enumerate()
        .map(|(i, node)| {
            let twin = (0..nodes.len()).any(|j| j != i && offered[j] == offered[i]);
            match &node.kind {
                NodeKind::Relation { relation, .. } if twin => format!("{} [{relation}]", offered[i]),
                _ => offered[i].clone(),
            }
        })
        .collect()
}

/// The words BM25 ranks a group's candidates by: a relation group, the question's words that
/// the path to its entity has not used up (names and relations walked); an entity group, the
/// whole question.
fn bm25_query(cx: &Context, group: &Group, what: &str) -> Vec<String> {
    if what != "relation" {
        return tokens(&cx.question);
    }
    let path = cx.beam.path(group.parent);
    let used: Vec<&str> = path.iter().map(|&n| cx.beam.nodes[n].shown()).collect();
    query_without(&cx.question, &used)
}

/// Takes the top `keep` by score (ties: listed order), normalised; all-zero scores keep the
/// first `keep` in listed order with equal shares, and say so.
fn top_by(scores: Vec<f64>, keep: usize, ev: &mut Event, names: &[String]) -> Vec<(usize, f64)> {
    let mut ranked: Vec<(usize, f64)> = scores.into_iter().enumerate().collect();
    if ranked.iter().all(|(_, s)| *s <= 0.0) {
        if !names.is_empty() {
            ev.notes.push("no similarity to the question; first candidates kept with equal shares".into());
        }
        ranked.truncate(keep);
        let share = 1.0 / ranked.len().max(1) as f64;
        return ranked.into_iter().map(|(i, _)| (i, share)).collect();
    }
    ranked.sort_by(|a, b| b.1.total_cmp(&a.1).then(a.0.cmp(&b.0)));
    ranked.retain(|(_, s)| *s > 0.0);
    ranked.truncate(keep);
    let sum: f64 = ranked.iter().map(|(_, s)| s).sum();
    ranked.into_iter().map(|(i, s)| (i, s / sum)).collect()
}

fn summarise_groups(cx: &Context, plan: &[Group], per_group: &[Vec<(usize, f64)>]) -> String {
    plan.iter()
        .zip(per_group)
        .flat_map(|(g, items)| {
            items.iter().map(move |(i, s)| format!("{}={s:.2}", cx.beam.nodes[g.candidates[*i]].shown()))
        })
        .collect::<Vec<_>>()
        .join("; ")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn top_by_keeps_the_best_normalised_and_says_when_nothing_matches() {
        let names: Vec<String> = ["a", "b", "c"].iter().map(|s| s.to_string()).collect();
        let mut ev = Event::step(0, "relation_prune", 1);
        let kept = top_by(vec![0.2, 0.0, 0.6], 2, &mut ev, &names);
        assert_eq!(kept.iter().map(|(i, _)| *i).collect::<Vec<_>>(), vec![2, 0]);
        assert!((kept[0].1 - 0.75).abs() < 1e-9 && (kept[1].1 - 0.25).abs() < 1e-9, "{kept:?}");
        assert!(ev.notes.is_empty());
        let equal = top_by(vec![0.0, 0.0, 0.0], 2, &mut ev, &names);
        assert_eq!(equal, vec![(0, 0.5), (1, 0.5)]);
        assert_eq!(ev.notes.len(), 1, "the fallback is said");
    }
}
