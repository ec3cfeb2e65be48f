//! PoG's and PoG-E's prompt templates (`prompts/NAME.txt`, structured variants under
//! `prompts/json/`).

use crate::prompts::{Template, builtin_template};

pub(crate) const ANALYSIS: Template = builtin_template!("pog_analysis", ["question", "topics"], Some("analysis"), json);
pub(crate) const PRECISE: Template =
    builtin_template!("pog_precise", ["question", "indicator", "width", "candidates"], Some("selection"), json);
pub(crate) const BRANCH: Template =
    builtin_template!("pog_branch", ["question", "indicator", "width", "candidates"], Some("selection"), json);
pub(crate) const SUMMARY: Template = builtin_template!("pog_summary", ["question", "paths"], Some("summary"), json);
pub(crate) const SUFFICIENCY: Template =
    builtin_template!("pog_sufficiency", ["question", "paths", "summary"], Some("judgment"), json);
pub(crate) const SUPPLEMENT: Template =
    builtin_template!("pog_supplement", ["question", "topics", "paths"], Some("supplement"), json);
pub(crate) const ANSWER: Template = builtin_template!("pog_answer", ["question", "paths"], Some("answer"), json);
pub(crate) const ANSWER_OWN: Template =
    builtin_template!("pog_answer_own", ["question", "paths"], Some("answer"), json);

/// Every template PoG and PoG-E render.
pub(crate) const TEMPLATES: &[Template] =
    &[ANALYSIS, PRECISE, BRANCH, SUMMARY, SUFFICIENCY, SUPPLEMENT, ANSWER, ANSWER_OWN];
