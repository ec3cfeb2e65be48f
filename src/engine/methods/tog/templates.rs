//! ToG's and ToG-R's prompt templates (`prompts/NAME.txt`, structured variants under
//! `prompts/json/`).

pub(crate) use crate::engine::templates::ANSWER_FROM_TRIPLES as ANSWER;
use crate::engine::templates::{ANSWER_OWN_KNOWLEDGE, TOPIC_ENTITIES};
use crate::engine::{PruneTool, Settings};
use crate::prompts::{Template, builtin_template};

pub(crate) const RELATION_PRUNE: Template = builtin_template!(
    "relation_prune",
    "scoring the relations",
    ["width", "question", "topic_entity", "relations"],
    Some("relations"),
    json
);
pub(crate) const RELATION_PRUNE_UNIFIED: Template = builtin_template!(
    "relation_prune_unified",
    "scoring the relations",
    ["width", "question", "entities"],
    Some("unified_relations"),
    json
);
pub(crate) const ENTITY_PRUNE: Template = builtin_template!(
    "entity_prune",
    "scoring the entities",
    ["question", "relation", "entities"],
    Some("entity_scores"),
    json
);
pub(crate) const ENTITY_PRUNE_UNIFIED: Template = builtin_template!(
    "entity_prune_unified",
    "scoring the entities",
    ["question", "groups"],
    Some("entity_groups"),
    json
);
pub(crate) const REASONING: Template = builtin_template!(
    "reasoning",
    "judging whether the paths suffice",
    ["question", "triples"],
    Some("judgment"),
    json
);
pub(crate) const REASONING_TOG_R: Template = builtin_template!(
    "reasoning_tog_r",
    "judging whether the paths suffice",
    ["question", "chains"],
    Some("judgment"),
    json
);
pub(crate) const HOP_PLAN: Template =
    builtin_template!("hop_plan", "planning the hops", ["question", "topic_entity"], Some("hop_plan"), json);

/// The templates a run of ToG (ToG-R with `chains`) with settings `s` may render, for a shared
/// prompt prefix: topic linking, the pruning its settings call the model for, its judgment
/// and its answers at the maximum depth.
pub(crate) fn rendered_by(s: &Settings, chains: bool) -> Vec<Template> {
    let mut rendered = vec![TOPIC_ENTITIES];
    if s.hop_plan {
        rendered.push(HOP_PLAN);
    }
    if s.prune == PruneTool::Llm {
        rendered.push(if s.unified { RELATION_PRUNE_UNIFIED } else { RELATION_PRUNE });
        if !chains {
            rendered.push(if s.unified { ENTITY_PRUNE_UNIFIED } else { ENTITY_PRUNE });
        }
    }
    rendered.extend([if chains { REASONING_TOG_R } else { REASONING }, ANSWER, ANSWER_OWN_KNOWLEDGE]);
    rendered
}

/// Every template ToG and ToG-R render.
pub(crate) const TEMPLATES: &[Template] = &[
    RELATION_PRUNE,
    RELATION_PRUNE_UNIFIED,
    ENTITY_PRUNE,
    ENTITY_PRUNE_UNIFIED,
    REASONING,
    REASONING_TOG_R,
    HOP_PLAN,
    ANSWER,
    ANSWER_OWN_KNOWLEDGE,
];
