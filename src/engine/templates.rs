//! The prompt templates the engine renders for every method: the system prompt, topic-entity
//! extraction, the extraction of a reason-first reply's answer, and the answers ToG and GoG fall
//! back on: from the triples collected, and from the model's own knowledge. Each method's own templates live in its module and
//! are listed by its registry entry.

use crate::prompts::{Template, builtin_template};

pub(crate) const SYSTEM: Template = builtin_template!("system", "the system prompt", [], None);
pub(crate) const TOPIC_ENTITIES: Template =
    builtin_template!("topic_entities", "naming the question's topic entities", ["question"], Some("topics"), json);
pub(crate) const EXTRACT: Template =
    builtin_template!("extract", "reading the answer out of a free reply", ["question", "reply"], Some("answer"));
pub(crate) const ANSWER_FROM_TRIPLES: Template =
    builtin_template!("answer", "answering from the paths", ["question", "triples"], Some("answer"));
pub(crate) const ANSWER_OWN_KNOWLEDGE: Template =
    builtin_template!("answer_own_knowledge", "answering from the model's own knowledge", ["question"], Some("answer"));

/// What any run may render, whatever its method.
pub(crate) const ENGINE: &[Template] = &[SYSTEM, TOPIC_ENTITIES, EXTRACT];
