//! GoG's prompt templates (`prompts/NAME.txt`, structured variants under `prompts/json/`).

use crate::engine::templates::{ANSWER_FROM_TRIPLES, ANSWER_OWN_KNOWLEDGE, TOPIC_ENTITIES};
use crate::engine::{Fallback, Settings};
use crate::prompts::{Template, builtin_template};

pub(crate) const STEP: Template = builtin_template!(
    "gog_step",
    "GoG's next thought and action",
    ["question", "topics", "transcript"],
    Some("gog_step")
);
pub(crate) const RELATIONS: Template = builtin_template!(
    "gog_relations",
    "choosing relations",
    ["question", "thought", "entity", "relations"],
    Some("choice"),
    json
);
pub(crate) const GENERATE: Template = builtin_template!(
    "gog_generate",
    "writing missing triples",
    ["question", "thought", "triples"],
    Some("triples"),
    json
);
pub(crate) const VERIFY: Template =
    builtin_template!("gog_verify", "verifying generated triples", ["question", "triples"], Some("kept"), json);

/// The templates a run of GoG with settings `s` may render, for a shared prompt prefix: the
/// answer from the triples only where `gog_fallback` asks for it (a session saved before it
/// existed shared a prefix without it, and replays so).
pub(crate) fn rendered_by(s: &Settings) -> Vec<Template> {
    let mut rendered = vec![TOPIC_ENTITIES, STEP, RELATIONS, GENERATE, VERIFY];
    if s.gog.gog_fallback == Fallback::PartialPaths {
        rendered.push(ANSWER_FROM_TRIPLES);
    }
    rendered.push(ANSWER_OWN_KNOWLEDGE);
    rendered
}

/// Every template GoG renders.
pub(crate) const TEMPLATES: &[Template] =
    &[STEP, RELATIONS, GENERATE, VERIFY, ANSWER_FROM_TRIPLES, ANSWER_OWN_KNOWLEDGE];
