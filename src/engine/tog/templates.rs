//! ToG's and ToG-R's prompt templates (`prompts/NAME.txt`, structured variants under
//! `prompts/json/`).

use crate::engine::templates::ANSWER_OWN_KNOWLEDGE;
use crate::prompts::{Template, builtin_template};

pub(crate) const RELATION_PRUNE: Template =
    builtin_template!("relation_prune", ["width", "question", "topic_entity", "relations"], Some("relations"), json);
pub(crate) const RELATION_PRUNE_UNIFIED: Template =
    builtin_template!("relation_prune_unified", ["width", "question", "entities"], Some("unified_relations"), json);
pub(crate) const ENTITY_PRUNE: Template =
    builtin_template!("entity_prune", ["question", "relation", "entities"], Some("entity_scores"), json);
pub(crate) const ENTITY_PRUNE_UNIFIED: Template =
    builtin_template!("entity_prune_unified", ["question", "groups"], Some("entity_groups"), json);
pub(crate) const REASONING: Template = builtin_template!("reasoning", ["question", "triples"], Some("judgment"), json);
pub(crate) const REASONING_TOG_R: Template =
    builtin_template!("reasoning_tog_r", ["question", "chains"], Some("judgment"), json);
pub(crate) const ANSWER: Template = builtin_template!("answer", ["question", "triples"], Some("answer"));

/// Every template ToG and ToG-R render.
pub(crate) const TEMPLATES: &[Template] = &[
    RELATION_PRUNE,
    RELATION_PRUNE_UNIFIED,
    ENTITY_PRUNE,
    ENTITY_PRUNE_UNIFIED,
    REASONING,
    REASONING_TOG_R,
    ANSWER,
    ANSWER_OWN_KNOWLEDGE,
];
