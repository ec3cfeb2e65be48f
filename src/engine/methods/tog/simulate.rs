//! ToG's and ToG-R's prompts as the gold-path simulation replies to them (see
//! [`crate::engine::simulate`]): relations and entities scored along the gold path, and
//! "sufficient" only when the shown triples chain the topic to a gold answer.

use crate::engine::simulate::{
    GoldPath, Shown, Simulation, UNKNOWN, after_last, answer_from_triples, norm_name, own_knowledge, scored_relations,
};

pub(crate) const SIMULATIONS: &[Simulation] = &[
    Simulation { template: "relation_prune", reply: relation_prune },
    Simulation { template: "relation_prune_unified", reply: relation_prune_unified },
    Simulation { template: "entity_prune", reply: entity_prune },
    Simulation { template: "entity_prune_unified", reply: entity_prune_unified },
    Simulation { template: "reasoning", reply: reasoning },
    Simulation { template: "reasoning_tog_r", reply: reasoning_tog_r },
    Simulation { template: "hop_plan", reply: hop_plan },
    Simulation { template: "answer", reply: answer_from_triples },
    Simulation { template: "answer_own_knowledge", reply: own_knowledge },
];

fn relation_prune(shown: &Shown<'_>, gold: &GoldPath) -> String {
    let block = shown.block;
    let entity = after_last(block, "\nTopic Entity: ").map(|(_, l)| l.trim()).unwrap_or_default();
    let offered: Vec<&str> =
        after_last(block, "\nRelations: ").map(|(_, l)| l.split("; ").collect()).unwrap_or_default();
    scored_relations(&offered, gold.relations_from(&offered, entity), "")
}

fn relation_prune_unified(shown: &Shown<'_>, gold: &GoldPath) -> String {
    let mut out = Vec::new();
    let mut entity = "";
    for line in shown.block.lines() {
        if let Some(e) = line.strip_prefix("Topic Entity: ") {
            entity = e.trim();
        } else if let Some(list) = line.strip_prefix("Relations: ") {
            let offered: Vec<&str> = list.split("; ").collect();
            out.push(scored_relations(&offered, gold.relations_from(&offered, entity), &format!("{entity} | ")));
        }
    }
    out.join("\n")
}

/// Scores for `entities` reached through `relation`: equal shares for those where a gold hop
/// along that relation arrives, 0 for the rest.
fn entity_scores(relation: &str, entities: &[&str], gold: &GoldPath) -> String {
    let on: Vec<bool> = entities
        .iter()
        .map(|e| (0..gold.hops.len()).any(|i| gold.hop_relation(i, relation) && gold.arrives(i, e)))
        .collect();
    let k = on.iter().filter(|&&b| b).count().max(1) as f64;
    on.iter().map(|&b| if b { format!("{:.3}", 1.0 / k) } else { "0.0".into() }).collect::<Vec<_>>().join(", ")
}

fn entity_prune(shown: &Shown<'_>, gold: &GoldPath) -> String {
    let block = shown.block;
    let relation = after_last(block, "\nRelation: ").map(|(_, l)| l).unwrap_or_default();
    let entities: Vec<&str> =
        after_last(block, "\nEntities: ").map(|(_, l)| l.split("; ").collect()).unwrap_or_default();
    format!("Score: {}", entity_scores(relation, &entities, gold))
}

fn entity_prune_unified(shown: &Shown<'_>, gold: &GoldPath) -> String {
    shown
        .block
        .lines()
        .filter_map(|line| {
            let (label, rest) = line.split_once(": Relation: ")?;
            let (relation, entities) = rest.split_once("; Entities: ")?;
            let entities: Vec<&str> = entities.split("; ").collect();
            Some(format!("{label}: {}", entity_scores(relation, &entities, gold)))
        })
        .collect::<Vec<_>>()
        .join("\n")
}

/// The prompt offers no relation to choose among, so the simulation plans nothing: the gold
/// path's length is not in the prompt.
fn hop_plan(_: &Shown<'_>, _: &GoldPath) -> String {
    UNKNOWN.into()
}

fn reasoning(shown: &Shown<'_>, gold: &GoldPath) -> String {
    match gold.chained(&gold.triple_lines(shown.block)).as_slice() {
        [] => "{No}. The triplets do not yet link the topic entity to an answer.".into(),
        found => format!("{{Yes}}. The triplets link the topic entity to the answer {{{}}}.", found.join(" | ")),
    }
}

fn reasoning_tog_r(shown: &Shown<'_>, gold: &GoldPath) -> String {
    match tog_r_chains(shown.block, gold).as_slice() {
        [] => "{No}. No chain links the topic entity to an answer yet.".into(),
        found => format!("{{Yes}}. A chain links the topic entity to the answer {{{}}}.", found.join(" | ")),
    }
}

/// ToG-R's chains (`topic -> r1 -> r2 (incoming): e1; e2`) that follow every gold relation
/// forward from the topic: the gold answers among the entities they reach.
fn tog_r_chains(block: &str, gold: &GoldPath) -> Vec<String> {
    let mut found: Vec<String> = Vec::new();
    for line in block.lines() {
        let Some(last_arrow) = line.rfind(" -> ") else { continue };
        let Some(colon) = line[last_arrow..].find(": ").map(|c| last_arrow + c) else { continue };
        let parts: Vec<&str> = line[..colon].split(" -> ").collect();
        let follows = norm_name(parts[0]) == norm_name(&gold.topic)
            && parts.len() == gold.hops.len() + 1
            && parts[1..].iter().enumerate().all(|(i, r)| gold.hop_relation(i, r));
        if follows {
            for e in line[colon + 2..].split("; ").map(str::trim) {
                if gold.is_answer(e) && !found.iter().any(|f| f == e) {
                    found.push(e.to_string());
                }
            }
        }
    }
    found
}
