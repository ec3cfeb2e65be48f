//! PoG's and PoG-E's prompt templates (`prompts/NAME.txt`, structured variants under
//! `prompts/json/`).

use crate::prompts::{Template, builtin_template};

pub(crate) const ANALYSIS: Template =
    builtin_template!("pog_analysis", "analysing the question", ["question", "topics"], Some("analysis"), json);
pub(crate) const PRECISE: Template = builtin_template!(
    "pog_precise",
    "choosing paths",
    ["question", "indicator", "width", "candidates"],
    Some("selection"),
    json
);
pub(crate) const BRANCH: Template = builtin_template!(
    "pog_branch",
    "choosing paths",
    ["question", "indicator", "width", "candidates"],
    Some("selection"),
    json
);
pub(crate) const SUMMARY: Template =
    builtin_template!("pog_summary", "summarising the paths", ["question", "paths"], Some("summary"), json);
pub(crate) const SUFFICIENCY: Template = builtin_template!(
    "pog_sufficiency",
    "judging whether the paths suffice",
    ["question", "paths", "summary"],
    Some("judgment"),
    json
);
pub(crate) const SUPPLEMENT: Template = builtin_template!(
    "pog_supplement",
    "adding topic entities",
    ["question", "topics", "paths"],
    Some("supplement"),
    json
);
pub(crate) const ANSWER: Template =
    builtin_template!("pog_answer", "answering from the paths", ["question", "paths"], Some("answer"), json);
pub(crate) const ANSWER_OWN: Template = builtin_template!(
    "pog_answer_own",
    "answering from the model's own knowledge",
    ["question", "paths"],
    Some("answer"),
    json
);

/// Every template PoG and PoG-E render.
pub(crate) const TEMPLATES: &[Template] =
    &[ANALYSIS, PRECISE, BRANCH, SUMMARY, SUFFICIENCY, SUPPLEMENT, ANSWER, ANSWER_OWN];
