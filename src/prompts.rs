//! Prompt templates: text files with `{{name}}` placeholders. The defaults are compiled in; a
//! prompts directory named in the config overrides any of them. Templates are checked when they
//! are loaded, so a broken one is a start-up error, not a failure mid-question.

use std::collections::BTreeMap;
use std::path::Path;

/// Every template, with the placeholders it must contain.
pub const TEMPLATES: &[(&str, &[&str])] = &[
    ("system", &[]),
    ("relation_prune", &["width", "question", "topic_entity", "relations"]),
    ("relation_prune_unified", &["width", "question", "entities"]),
    ("entity_prune", &["question", "relation", "entities"]),
    ("entity_prune_unified", &["question", "groups"]),
    ("reasoning", &["question", "triples"]),
    ("reasoning_tog_r", &["question", "chains"]),
    ("answer", &["question", "triples"]),
    ("answer_own_knowledge", &["question"]),
    ("topic_entities", &["question"]),
    ("io", &["question"]),
    ("cot", &["question"]),
    ("pog_analysis", &["question", "topics"]),
    ("pog_precise", &["question", "indicator", "width", "candidates"]),
    ("pog_branch", &["question", "indicator", "width", "candidates"]),
    ("pog_summary", &["question", "paths"]),
    ("pog_sufficiency", &["question", "paths", "summary"]),
    ("pog_supplement", &["question", "topics", "paths"]),
    ("pog_answer", &["question", "paths"]),
    ("pog_answer_own", &["question", "paths"]),
    ("gog_step", &["question", "topics", "transcript"]),
    ("gog_relations", &["question", "thought", "entity", "relations"]),
    ("gog_generate", &["question", "thought", "triples"]),
    ("gog_verify", &["question", "triples"]),
];

pub(crate) fn default_text(name: &str) -> &'static str {
    match name {
        "system" => include_str!("../prompts/system.txt"),
        "relation_prune" => include_str!("../prompts/relation_prune.txt"),
        "relation_prune_unified" => include_str!("../prompts/relation_prune_unified.txt"),
        "entity_prune" => include_str!("../prompts/entity_prune.txt"),
        "entity_prune_unified" => include_str!("../prompts/entity_prune_unified.txt"),
        "reasoning" => include_str!("../prompts/reasoning.txt"),
        "reasoning_tog_r" => include_str!("../prompts/reasoning_tog_r.txt"),
        "answer" => include_str!("../prompts/answer.txt"),
        "answer_own_knowledge" => include_str!("../prompts/answer_own_knowledge.txt"),
        "topic_entities" => include_str!("../prompts/topic_entities.txt"),
        "io" => include_str!("../prompts/io.txt"),
        "cot" => include_str!("../prompts/cot.txt"),
        "pog_analysis" => include_str!("../prompts/pog_analysis.txt"),
        "pog_precise" => include_str!("../prompts/pog_precise.txt"),
        "pog_branch" => include_str!("../prompts/pog_branch.txt"),
        "pog_summary" => include_str!("../prompts/pog_summary.txt"),
        "pog_sufficiency" => include_str!("../prompts/pog_sufficiency.txt"),
        "pog_supplement" => include_str!("../prompts/pog_supplement.txt"),
        "pog_answer" => include_str!("../prompts/pog_answer.txt"),
        "pog_answer_own" => include_str!("../prompts/pog_answer_own.txt"),
        "gog_step" => include_str!("../prompts/gog_step.txt"),
        "gog_relations" => include_str!("../prompts/gog_relations.txt"),
        "gog_generate" => include_str!("../prompts/gog_generate.txt"),
        "gog_verify" => include_str!("../prompts/gog_verify.txt"),
        _ => "",
    }
}

#[derive(Debug, thiserror::Error, PartialEq)]
pub enum PromptError {
    #[error("{file}:{line}: unknown placeholder {{{{{name}}}}} (this template takes: {allowed})")]
    Unknown { file: String, line: usize, name: String, allowed: String },
    #[error("{file}: missing placeholder {{{{{name}}}}}")]
    Missing { file: String, name: String },
    #[error("{file}:{line}: unclosed placeholder (a '{{{{' without '}}}}')")]
    Unclosed { file: String, line: usize },
    #[error("cannot read {file}: {message}")]
    Io { file: String, message: String },
    #[error("{file}: not a known template (known: {known})")]
    UnknownTemplate { file: String, known: String },
}

/// A checked template: literal text and placeholders, in order.
#[derive(Clone, Debug)]
struct Template {
    parts: Vec<Part>,
    /// The text it was parsed from (saved with sessions, so a replay renders the same prompts).
    source: String,
}

#[derive(Clone, Debug)]
enum Part {
    Text(String),
    Slot(String),
}

impl Template {
    fn parse(file: &str, text: &str, required: &[&str]) -> Result<Self, PromptError> {
        let mut parts = Vec::new();
        let mut rest = text;
        let mut consumed = 0;
        // The line of an error only: counting on every placeholder made parsing quadratic.
        let line_at = |offset: usize| text[..offset].matches('\n').count() + 1;
        while let Some(start) = rest.find("{{") {
            let Some(len) = rest[start + 2..].find("}}") else {
                return Err(PromptError::Unclosed { file: file.into(), line: line_at(consumed + start) });
            };
            let name = rest[start + 2..start + 2 + len].trim();
            if !required.contains(&name) {
                return Err(PromptError::Unknown {
                    file: file.into(),
                    line: line_at(consumed + start),
                    name: name.into(),
                    allowed: required.join(", "),
                });
            }
            parts.push(Part::Text(rest[..start].to_string()));
            parts.push(Part::Slot(name.to_string()));
            consumed += start + 4 + len;
            rest = &rest[start + 4 + len..];
        }
        parts.push(Part::Text(rest.to_string()));
        for name in required {
            if !parts.iter().any(|p| matches!(p, Part::Slot(s) if s == name)) {
                return Err(PromptError::Missing { file: file.into(), name: (*name).into() });
            }
        }
        Ok(Self { parts, source: text.to_string() })
    }

    fn render(&self, values: &[(&str, &str)]) -> String {
        let mut out = String::new();
        for part in &self.parts {
            match part {
                Part::Text(t) => out.push_str(t),
                Part::Slot(name) => out.push_str(values.iter().find(|(k, _)| k == name).map(|(_, v)| *v).unwrap_or("")),
            }
        }
        out
    }
}

/// The full set of templates the engine uses.
#[derive(Clone, Debug)]
pub struct Prompts {
    templates: BTreeMap<&'static str, Template>,
}

impl Prompts {
    /// The compiled-in defaults.
    pub fn builtin() -> Self {
        Self::load(None).unwrap_or_else(|e| unreachable!("built-in prompts are tested to be valid: {e}"))
    }

    /// The defaults, overridden by any `NAME.txt` in `dir`. Unknown files in `dir` are an error
    /// (a misspelt name would otherwise be ignored silently).
    pub fn load(dir: Option<&Path>) -> Result<Self, PromptError> {
        let mut overrides = BTreeMap::new();
        if let Some(dir) = dir {
            let entries = std::fs::read_dir(dir)
                .map_err(|e| PromptError::Io { file: dir.display().to_string(), message: e.to_string() })?;
            for entry in entries.flatten() {
                let path = entry.path();
                if path.extension().and_then(|e| e.to_str()) != Some("txt") {
                    continue;
                }
                let stem = path.file_stem().and_then(|s| s.to_str()).unwrap_or_default().to_string();
                let text = crate::text_file::read(&path)
                    .map_err(|e| PromptError::Io { file: path.display().to_string(), message: e.to_string() })?;
                overrides.insert(stem, (path.display().to_string(), text));
            }
        }
        Self::from_overrides(overrides)
    }

    /// The templates as saved by [`Prompts::texts`] (e.g. in a session file).
    pub fn from_texts(texts: &BTreeMap<String, String>) -> Result<Self, PromptError> {
        Self::from_overrides(texts.iter().map(|(k, v)| (k.clone(), (format!("{k} (saved)"), v.clone()))).collect())
    }

    /// Every template's text by name.
    pub fn texts(&self) -> BTreeMap<String, String> {
        self.templates.iter().map(|(k, t)| (k.to_string(), t.source.clone())).collect()
    }

    /// The defaults, with `overrides` (name → (where it came from, text)) in their place.
    fn from_overrides(overrides: BTreeMap<String, (String, String)>) -> Result<Self, PromptError> {
        if let Some((_, (file, _))) = overrides.iter().find(|(name, _)| !TEMPLATES.iter().any(|(n, _)| n == name)) {
            return Err(PromptError::UnknownTemplate {
                file: file.clone(),
                known: TEMPLATES.iter().map(|(n, _)| *n).collect::<Vec<_>>().join(", "),
            });
        }
        let mut templates = BTreeMap::new();
        for (name, required) in TEMPLATES {
            let template = match overrides.get(*name) {
                Some((file, text)) => Template::parse(file, text, required)?,
                None => Template::parse(&format!("prompts/{name}.txt"), default_text(name), required)?,
            };
            templates.insert(*name, template);
        }
        Ok(Self { templates })
    }

    /// Renders template `name` with `values`. Unknown names render empty (names are constants
    /// in the engine, checked by the tests).
    pub fn render(&self, name: &str, values: &[(&str, &str)]) -> String {
        self.templates.get(name).map(|t| t.render(values)).unwrap_or_default()
    }

    pub fn system(&self) -> String {
        self.render("system", &[]).trim().to_string()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn builtin_templates_are_valid() {
        Prompts::load(None).unwrap();
    }

    #[test]
    fn render_fills_placeholders() {
        let p = Prompts::builtin();
        let text = p.render("answer", &[("question", "Q?"), ("triples", "a, r, b")]);
        assert!(text.ends_with("Q: Q?\nKnowledge Triplets: a, r, b\nA: \n"), "{text}");
    }

    #[test]
    fn broken_templates_are_clear_errors() {
        let err = Template::parse("x.txt", "Q: {{question}}\n{{questoin}}", &["question"]).unwrap_err();
        assert_eq!(err.to_string(), "x.txt:2: unknown placeholder {{questoin}} (this template takes: question)");
        let err = Template::parse("x.txt", "no slots", &["question"]).unwrap_err();
        assert_eq!(err.to_string(), "x.txt: missing placeholder {{question}}");
        let err = Template::parse("x.txt", "a\n{{question", &["question"]).unwrap_err();
        assert_eq!(err, PromptError::Unclosed { file: "x.txt".into(), line: 2 });
    }

    #[test]
    fn a_template_of_many_placeholders_parses_in_one_pass() {
        let text = "{{question}}\n".repeat(200_000);
        let t = Template::parse("big.txt", &text, &["question"]).unwrap();
        assert_eq!(t.parts.iter().filter(|p| matches!(p, Part::Slot(_))).count(), 200_000);
        let err = Template::parse("big.txt", &format!("{text}{{{{nope}}}}"), &["question"]).unwrap_err();
        assert!(err.to_string().starts_with("big.txt:200001: unknown placeholder {{nope}}"), "{err}");
    }

    #[test]
    fn override_directory() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("answer.txt"), "A {{question}} / {{triples}}").unwrap();
        let p = Prompts::load(Some(dir.path())).unwrap();
        assert_eq!(p.render("answer", &[("question", "q"), ("triples", "t")]), "A q / t");
        std::fs::write(dir.path().join("anwser.txt"), "x").unwrap();
        assert!(matches!(Prompts::load(Some(dir.path())), Err(PromptError::UnknownTemplate { .. })));
    }
}
