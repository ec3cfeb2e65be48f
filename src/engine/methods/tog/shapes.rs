//! ToG's reply shapes: relations and entities scored, one topic entity at a time or all at once
//! (the unified prompts), and the hop plan. Each reads back into the brace text ToG's parsers
//! read.

use crate::engine::structured::{
    Forms, Offer, Reasons, Reply, ReplyShape, array, clean, distinct, enum_of, number, object, score,
};
use crate::llm::ReplySchema;
use serde::Deserialize;
use serde_json::{Value, json};

pub(crate) const SHAPES: &[ReplyShape] = &[RELATIONS, UNIFIED_RELATIONS, ENTITY_SCORES, ENTITY_GROUPS, HOP_PLAN];

/// Up to `width` of the offered relations, each scored.
const RELATIONS: ReplyShape = ReplyShape {
    name: "relations",
    schema: |offer| {
        let candidates = offer.lists.first().copied().unwrap_or_default();
        object(&[(
            "relations",
            array(object(&[("relation", enum_of(&distinct(candidates))), ("score", number())]), Some(offer.width)),
        )])
    },
    shape: |offer| {
        format!(
            r#"{{"relations": [{{"relation": "<a relation from the list>", "score": <0 to 1>}}, ...]}} with at most {} relations, scores summing to 1"#,
            offer.width
        )
    },
    read: read_relations,
    labelled: false,
    reasons: Reasons::No,
};

/// Up to `width` relations per topic entity; the offer's lists are each entity (a list of one)
/// followed by its relations.
const UNIFIED_RELATIONS: ReplyShape = ReplyShape {
    name: "unified_relations",
    schema: |offer| {
        let forms = Forms::of(&offer.lists);
        let choices: Vec<Value> = offer
            .lists
            .chunks(2)
            .filter_map(|pair| match pair {
                [entity, relations] => Some(object(&[
                    ("entity", enum_of(&forms.list(entity))),
                    ("relation", enum_of(&forms.list(relations))),
                    ("score", number()),
                ])),
                _ => None,
            })
            .collect();
        let entities = offer.lists.len() / 2;
        object(&[("choices", array(json!({"anyOf": choices}), Some(offer.width * entities)))])
    },
    shape: |offer| {
        format!(
            r#"{{"choices": [{{"entity": "<topic entity>", "relation": "<one of its relations>", "score": <0 to 1>}}, ...]}} with at most {} relations per entity"#,
            offer.width
        )
    },
    read: read_unified,
    labelled: false,
    reasons: Reasons::No,
};

/// A score for each offered entity (read back in the prompt's order, so the list travels with
/// the request).
const ENTITY_SCORES: ReplyShape = ReplyShape {
    name: "entity_scores",
    schema: |offer| {
        let candidates = offer.lists.first().copied().unwrap_or_default();
        object(&[(
            "scores",
            array(object(&[("entity", enum_of(&distinct(candidates))), ("score", number())]), Some(candidates.len())),
        )])
    },
    shape: |_| {
        r#"{"scores": [{"entity": "<an entity from the list>", "score": <0 to 1>}, ...]} with every entity listed, scores summing to 1"#.into()
    },
    read: read_entity_scores,
    labelled: true,
    reasons: Reasons::No,
};

/// A score for each entity of each group (one offered list per group).
const ENTITY_GROUPS: ReplyShape = ReplyShape {
    name: "entity_groups",
    schema: |offer| {
        let forms = Forms::of(&offer.lists);
        let per_group: Vec<Value> = offer
            .lists
            .iter()
            .enumerate()
            .map(|(k, names)| {
                object(&[
                    ("group", json!({"enum": [k + 1]})),
                    (
                        "scores",
                        array(
                            object(&[("entity", enum_of(&forms.list(names))), ("score", number())]),
                            Some(names.len()),
                        ),
                    ),
                ])
            })
            .collect();
        object(&[("groups", array(json!({"anyOf": per_group}), Some(offer.lists.len())))])
    },
    shape: |_| {
        r#"{"groups": [{"group": <k>, "scores": [{"entity": "<an entity of group k>", "score": <0 to 1>}, ...]}, ...]} with every group, scores summing to 1 within a group"#.into()
    },
    read: read_groups,
    labelled: false,
    reasons: Reasons::No,
};

/// Up to `width` of `candidates` (relations), each scored.
pub(crate) fn relations(candidates: &[String], width: usize) -> Reply<'_> {
    Reply::new(&RELATIONS, Offer::names(candidates, width))
}

/// The relations a question follows from its topic entity, one a hop: a few short names, so a
/// reply stays a line (the depth caps what is used of it anyway).
pub(crate) const HOP_PLAN: ReplyShape = ReplyShape {
    name: "hop_plan",
    schema: |_| {
        let relation = json!({"type": "string", "maxLength": 60});
        object(&[("chain", json!({"type": "array", "items": relation, "minItems": 1, "maxItems": 5}))])
    },
    shape: |_| r#"{"chain": ["<relation>", ...]}, the first relation leaving the topic entity"#.into(),
    read: read_hop_plan,
    labelled: false,
    reasons: Reasons::No,
};

/// Up to `width` relations per topic entity: (entity, its relations).
pub(crate) fn unified_relations(entities: &[(String, Vec<String>)], width: usize) -> Reply<'_> {
    let lists =
        entities.iter().flat_map(|(entity, relations)| [std::slice::from_ref(entity), relations.as_slice()]).collect();
    Reply::new(&UNIFIED_RELATIONS, Offer { lists, count: 0, width })
}

/// A score for each of `candidates` (entities).
pub(crate) fn entity_scores(candidates: &[String]) -> Reply<'_> {
    Reply::new(&ENTITY_SCORES, Offer::names(candidates, candidates.len()))
}

/// A score for each entity of each group.
pub(crate) fn entity_groups(groups: &[Vec<String>]) -> Reply<'_> {
    Reply::new(&ENTITY_GROUPS, Offer { lists: groups.iter().map(Vec::as_slice).collect(), count: 0, width: 0 })
}

#[derive(Deserialize)]
struct Scored {
    #[serde(alias = "entity")]
    relation: String,
    score: f64,
}

fn read_relations(value: Value, _: &ReplySchema, _: &mut Vec<String>) -> Option<String> {
    #[derive(Deserialize)]
    struct Body {
        relations: Vec<Scored>,
    }
    let body: Body = serde_json::from_value(value).ok()?;
    let lines: Vec<String> =
        body.relations.iter().map(|r| format!("{{{} (Score: {})}}", clean(&r.relation), score(r.score))).collect();
    Some(lines.join("\n"))
}

/// `{spouse | gender}`, as the free-text prompt asks (a separator inside a name would read as
/// one more hop).
fn read_hop_plan(value: Value, _: &ReplySchema, _: &mut Vec<String>) -> Option<String> {
    #[derive(Deserialize)]
    struct Body {
        chain: Vec<String>,
    }
    let body: Body = serde_json::from_value(value).ok()?;
    let hops: Vec<String> =
        body.chain.iter().map(|r| clean(r).replace(['|', ';', ','], "/")).filter(|r| !r.is_empty()).collect();
    Some(format!("{{{}}}", hops.join(" | ")))
}

fn read_unified(value: Value, _: &ReplySchema, _: &mut Vec<String>) -> Option<String> {
    #[derive(Deserialize)]
    struct Choice {
        entity: String,
        relation: String,
        score: f64,
    }
    #[derive(Deserialize)]
    struct Body {
        choices: Vec<Choice>,
    }
    let body: Body = serde_json::from_value(value).ok()?;
    let lines: Vec<String> = body
        .choices
        .iter()
        .map(|c| format!("{{{} | {} (Score: {})}}", clean(&c.entity), clean(&c.relation), score(c.score)))
        .collect();
    Some(lines.join("\n"))
}

/// In the order the prompt listed the entities (the request's labels); one the reply left out
/// scores 0.
fn read_entity_scores(value: Value, schema: &ReplySchema, _: &mut Vec<String>) -> Option<String> {
    #[derive(Deserialize)]
    struct Body {
        scores: Vec<Scored>,
    }
    let Body { scores } = serde_json::from_value(value).ok()?;
    let values: Vec<String> = schema
        .labels
        .iter()
        .map(|l| score(scores.iter().find(|s| s.relation.trim() == l.trim()).map_or(0.0, |s| s.score)))
        .collect();
    Some(if scores.is_empty() { String::new() } else { format!("Score: {}", values.join(", ")) })
}

fn read_groups(value: Value, _: &ReplySchema, _: &mut Vec<String>) -> Option<String> {
    #[derive(Deserialize)]
    struct Group {
        group: usize,
        scores: Vec<Scored>,
    }
    #[derive(Deserialize)]
    struct Body {
        groups: Vec<Group>,
    }
    let body: Body = serde_json::from_value(value).ok()?;
    let lines: Vec<String> = body
        .groups
        .iter()
        .map(|g| {
            let items: Vec<String> =
                g.scores.iter().map(|s| format!("{{{} (Score: {})}}", clean(&s.relation), score(s.score))).collect();
            format!("Group {}: {}", g.group, items.join("; "))
        })
        .collect();
    Some(lines.join("\n"))
}
