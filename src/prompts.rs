//! Prompt templates: text files with `{{name}}` placeholders. The defaults are compiled in; a
//! prompts directory named in the config overrides any of them. Templates are checked when they
//! are loaded, so a broken one is a start-up error, not a failure mid-question.

use std::collections::BTreeMap;
use std::fmt;
use std::path::Path;

/// Declares [`Template`] from one table, so a template is registered in one place: its
/// variant, its name (the file `prompts/NAME.txt`, the key in a prompts directory and in a saved
/// session), the placeholders it must contain, and the structured reply shape its calls ask for.
macro_rules! templates {
    ($($variant:ident = $name:literal, [$($slot:literal),*], $reply:expr;)*) => {
        /// A prompt template of the engine. Rendering takes one of these, never a string, so a
        /// misspelt template is a compile error rather than an empty prompt.
        #[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
        pub enum Template {
            $($variant,)*
        }

        impl Template {
            /// Every template, in declaration order (the order [`Prompts`] keeps them in).
            pub const ALL: &'static [Template] = &[$(Template::$variant,)*];

            /// The name of its file and of its entry in a saved session.
            pub const fn name(self) -> &'static str {
                match self {
                    $(Template::$variant => $name,)*
                }
            }

            /// The placeholders it must contain (and may only contain).
            pub const fn placeholders(self) -> &'static [&'static str] {
                match self {
                    $(Template::$variant => &[$($slot),*],)*
                }
            }

            /// The reply shape its calls ask for in structured mode (`Shape::name` in
            /// `engine::structured`): for a call that reasons first, the shape its answer is
            /// extracted into; `None` for text that is no call of its own (the system prompt).
            pub const fn reply(self) -> Option<&'static str> {
                match self {
                    $(Template::$variant => $reply,)*
                }
            }

            /// The compiled-in text.
            pub(crate) const fn default_text(self) -> &'static str {
                match self {
                    $(Template::$variant => include_str!(concat!("../prompts/", $name, ".txt")),)*
                }
            }
        }
    };
}

templates! {
    System = "system", [], None;
    RelationPrune = "relation_prune", ["width", "question", "topic_entity", "relations"], Some("relations");
    RelationPruneUnified = "relation_prune_unified", ["width", "question", "entities"], Some("unified_relations");
    EntityPrune = "entity_prune", ["question", "relation", "entities"], Some("entity_scores");
    EntityPruneUnified = "entity_prune_unified", ["question", "groups"], Some("entity_groups");
    Reasoning = "reasoning", ["question", "triples"], Some("judgment");
    ReasoningTogR = "reasoning_tog_r", ["question", "chains"], Some("judgment");
    Answer = "answer", ["question", "triples"], Some("answer");
    AnswerOwnKnowledge = "answer_own_knowledge", ["question"], Some("answer");
    TopicEntities = "topic_entities", ["question"], Some("topics");
    Io = "io", ["question"], Some("answer");
    Cot = "cot", ["question"], Some("answer");
    PogAnalysis = "pog_analysis", ["question", "topics"], Some("analysis");
    PogPrecise = "pog_precise", ["question", "indicator", "width", "candidates"], Some("selection");
    PogBranch = "pog_branch", ["question", "indicator", "width", "candidates"], Some("selection");
    PogSummary = "pog_summary", ["question", "paths"], Some("summary");
    PogSufficiency = "pog_sufficiency", ["question", "paths", "summary"], Some("judgment");
    PogSupplement = "pog_supplement", ["question", "topics", "paths"], Some("supplement");
    PogAnswer = "pog_answer", ["question", "paths"], Some("answer");
    PogAnswerOwn = "pog_answer_own", ["question", "paths"], Some("answer");
    GogStep = "gog_step", ["question", "topics", "transcript"], Some("gog_step");
    GogRelations = "gog_relations", ["question", "thought", "entity", "relations"], Some("choice");
    GogGenerate = "gog_generate", ["question", "thought", "triples"], Some("triples");
    GogVerify = "gog_verify", ["question", "triples"], Some("kept");
    Extract = "extract", ["question", "reply"], Some("answer");
}

/// Declares which templates have a structured variant: `prompts/json/NAME.txt`, the same
/// template with its examples written in the JSON its calls reply in and that JSON's shape
/// shown before the question (a long fixed prefix, which local servers keep cached).
macro_rules! json_variants {
    ($($variant:ident = $name:literal;)*) => {
        impl Template {
            /// The compiled-in structured variant, if the template has one.
            pub(crate) const fn json_default_text(self) -> Option<&'static str> {
                match self {
                    $(Template::$variant => Some(include_str!(concat!("../prompts/json/", $name, ".txt"))),)*
                    _ => None,
                }
            }
        }
    };
}

json_variants! {
    RelationPrune = "relation_prune";
    RelationPruneUnified = "relation_prune_unified";
    EntityPrune = "entity_prune";
    EntityPruneUnified = "entity_prune_unified";
    Reasoning = "reasoning";
    ReasoningTogR = "reasoning_tog_r";
    TopicEntities = "topic_entities";
    Io = "io";
    PogAnalysis = "pog_analysis";
    PogPrecise = "pog_precise";
    PogBranch = "pog_branch";
    PogSummary = "pog_summary";
    PogSufficiency = "pog_sufficiency";
    PogSupplement = "pog_supplement";
    PogAnswer = "pog_answer";
    PogAnswerOwn = "pog_answer_own";
    GogRelations = "gog_relations";
    GogGenerate = "gog_generate";
    GogVerify = "gog_verify";
}

/// A rendered prompt, and whether it shows the JSON shape of its reply itself (rendered from
/// a structured variant). One that does not gets the shape appended when the reply is asked
/// for as JSON.
#[derive(Clone, Debug, PartialEq)]
pub struct Prompt {
    pub text: String,
    pub shows_shape: bool,
}

impl From<String> for Prompt {
    fn from(text: String) -> Self {
        Self { text, shows_shape: false }
    }
}

/// A structured variant's key in a prompts directory (`json/NAME.txt`) and in a saved session.
const JSON_PREFIX: &str = "json/";

/// Reads `path`, if a `.txt` file, into `overrides` as `prefix` + its stem.
fn read_file_into(
    path: &Path,
    prefix: &str,
    overrides: &mut BTreeMap<String, (String, String)>,
) -> Result<(), PromptError> {
    if path.extension().and_then(|e| e.to_str()) != Some("txt") {
        return Ok(());
    }
    let stem = path.file_stem().and_then(|s| s.to_str()).unwrap_or_default();
    let text = crate::text_file::read(path)
        .map_err(|e| PromptError::Io { file: path.display().to_string(), message: e.to_string() })?;
    overrides.insert(format!("{prefix}{stem}"), (path.display().to_string(), text));
    Ok(())
}

/// Reads every `.txt` file of `dir` into `overrides` (see [`read_file_into`]).
fn read_dir_into(
    dir: &Path,
    prefix: &str,
    overrides: &mut BTreeMap<String, (String, String)>,
) -> Result<(), PromptError> {
    let entries = std::fs::read_dir(dir)
        .map_err(|e| PromptError::Io { file: dir.display().to_string(), message: e.to_string() })?;
    for entry in entries.flatten() {
        read_file_into(&entry.path(), prefix, overrides)?;
    }
    Ok(())
}

impl Template {
    /// The template of this name (a file in a prompts directory, an entry in a saved session).
    pub fn from_name(name: &str) -> Option<Self> {
        Self::ALL.iter().copied().find(|t| t.name() == name)
    }

    /// The first placeholder `values` leaves without a value (it would render empty).
    fn unfilled(self, values: &[(&str, &str)]) -> Option<&'static str> {
        self.placeholders().iter().copied().find(|p| !values.iter().any(|(k, _)| k == p))
    }
}

impl fmt::Display for Template {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
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
struct Parsed {
    parts: Vec<Part>,
    /// The text it was parsed from (saved with sessions, so a replay renders the same prompts).
    source: String,
}

#[derive(Clone, Debug)]
enum Part {
    Text(String),
    Slot(String),
}

impl Parsed {
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

/// Which structured variants a set of prompts has.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Variants {
    /// None at all (a session saved before there were any).
    None,
    /// Those saved with a session, and no other (a variant added since would change its
    /// replay).
    Saved,
    /// The defaults, a user's own `json/NAME.txt` in their place, and none for a template the
    /// user rewrote without rewriting its variant.
    UnlessOverridden,
}

/// The full set of templates the engine uses.
#[derive(Clone, Debug)]
pub struct Prompts {
    /// One per template, in the order of [`Template::ALL`] (indexed by the variant).
    templates: Vec<Parsed>,
    /// The structured variants, likewise indexed (`None`: the template has none, or a session
    /// saved before there were any).
    json: Vec<Option<Parsed>>,
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
                if path.is_dir() && path.file_name().is_some_and(|n| n == "json") {
                    read_dir_into(&path, JSON_PREFIX, &mut overrides)?;
                } else {
                    read_file_into(&path, "", &mut overrides)?;
                }
            }
        }
        Self::from_overrides(overrides, Variants::UnlessOverridden)
    }

    /// The templates as saved by [`Prompts::texts`] (e.g. in a session file).
    /// A session saved before structured variants existed has none: its prompts render as
    /// they did then.
    pub fn from_texts(texts: &BTreeMap<String, String>) -> Result<Self, PromptError> {
        let saved_variants = texts.keys().any(|k| k.starts_with(JSON_PREFIX));
        Self::from_overrides(
            texts.iter().map(|(k, v)| (k.clone(), (format!("{k} (saved)"), v.clone()))).collect(),
            if saved_variants { Variants::Saved } else { Variants::None },
        )
    }

    /// Every template's text by name, structured variants as `json/NAME`.
    pub fn texts(&self) -> BTreeMap<String, String> {
        let plain = Template::ALL.iter().map(|&t| (t.name().to_string(), self.parsed(t).source.clone()));
        let json = Template::ALL.iter().filter_map(|&t| {
            Some((format!("{JSON_PREFIX}{}", t.name()), self.json[t as usize].as_ref()?.source.clone()))
        });
        plain.chain(json).collect()
    }

    /// Whether any template has a structured variant: prompts saved before there were any
    /// have none, and then replies are asked for as they were then (reason-first steps too).
    pub fn has_structured_variants(&self) -> bool {
        self.json.iter().any(Option::is_some)
    }

    /// The defaults, with `overrides` (name → (where it came from, text)) in their place;
    /// structured variants as `variants` says.
    fn from_overrides(overrides: BTreeMap<String, (String, String)>, variants: Variants) -> Result<Self, PromptError> {
        let template_of = |name: &str| Template::from_name(name.strip_prefix(JSON_PREFIX).unwrap_or(name));
        if let Some((_, (file, _))) = overrides.iter().find(|(name, _)| template_of(name).is_none()) {
            return Err(PromptError::UnknownTemplate {
                file: file.clone(),
                known: Template::ALL.iter().map(|t| t.name()).collect::<Vec<_>>().join(", "),
            });
        }
        let mut templates = Vec::with_capacity(Template::ALL.len());
        for &t in Template::ALL {
            let (name, required) = (t.name(), t.placeholders());
            let parsed = match overrides.get(name) {
                Some((file, text)) => Parsed::parse(file, text, required)?,
                None => Parsed::parse(&format!("prompts/{name}.txt"), t.default_text(), required)?,
            };
            templates.push(parsed);
        }
        let mut json = Vec::with_capacity(Template::ALL.len());
        for &t in Template::ALL {
            let key = format!("{JSON_PREFIX}{}", t.name());
            // A template the user rewrote keeps their words under structured replies too,
            // unless they rewrote its variant as well.
            let rewritten = variants == Variants::UnlessOverridden && overrides.contains_key(t.name());
            let parsed = match (overrides.get(&key), t.json_default_text()) {
                _ if variants == Variants::None => None,
                (None, _) if rewritten || variants == Variants::Saved => None,
                (Some((file, text)), _) => Some(Parsed::parse(file, text, t.placeholders())?),
                (None, Some(text)) => Some(Parsed::parse(&format!("prompts/{key}.txt"), text, t.placeholders())?),
                (None, None) => None,
            };
            json.push(parsed);
        }
        Ok(Self { templates, json })
    }

    /// Renders `template` for a call whose reply is asked for as JSON when `structured`: its
    /// structured variant if it has one (which shows the reply's shape), else the template.
    pub fn render_for(&self, template: Template, values: &[(&str, &str)], structured: bool) -> Prompt {
        match self.json[template as usize].as_ref().filter(|_| structured) {
            Some(variant) => Prompt { text: variant.render(values), shows_shape: true },
            None => Prompt::from(self.render(template, values)),
        }
    }

    /// `ALL` lists the variants in declaration order, so a variant is its own index.
    fn parsed(&self, template: Template) -> &Parsed {
        &self.templates[template as usize]
    }

    /// Renders `template` with `values`, which must give every placeholder it takes (checked in
    /// debug builds: a missing one would render empty).
    pub fn render(&self, template: Template, values: &[(&str, &str)]) -> String {
        debug_assert!(
            template.unfilled(values).is_none(),
            "{template}: no value for {{{{{}}}}}",
            template.unfilled(values).unwrap_or_default()
        );
        self.parsed(template).render(values)
    }

    pub fn system(&self) -> String {
        self.render(Template::System, &[]).trim().to_string()
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
    fn the_registry_is_one_consistent_list() {
        for (i, &t) in Template::ALL.iter().enumerate() {
            // `Prompts` indexes its templates by the variant.
            assert_eq!(t as usize, i, "{t}");
            assert_eq!(Template::from_name(t.name()), Some(t));
        }
        assert_eq!(Template::from_name("anwser"), None);
        // Every file of the prompts directory is a template, and every template a file.
        let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("prompts");
        let mut files: Vec<String> = std::fs::read_dir(dir)
            .unwrap()
            .map(|e| e.unwrap().path())
            .filter(|p| p.is_file())
            .map(|p| p.file_stem().unwrap().to_string_lossy().into_owned())
            .collect();
        files.sort();
        let mut names: Vec<String> = Template::ALL.iter().map(|t| t.name().to_string()).collect();
        names.sort();
        assert_eq!(files, names);
        // Every structured variant in prompts/json/ is compiled in, and only those.
        let json_dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("prompts").join("json");
        let mut variants: Vec<String> = std::fs::read_dir(json_dir)
            .unwrap()
            .map(|e| e.unwrap().path().file_stem().unwrap().to_string_lossy().into_owned())
            .collect();
        variants.sort();
        let mut compiled: Vec<String> =
            Template::ALL.iter().filter(|t| t.json_default_text().is_some()).map(|t| t.name().to_string()).collect();
        compiled.sort();
        assert_eq!(variants, compiled);
    }

    #[test]
    fn unfilled_placeholders_are_found() {
        let all = [("question", "q"), ("triples", "t")];
        assert_eq!(Template::Answer.unfilled(&all), None);
        assert_eq!(Template::Answer.unfilled(&all[..1]), Some("triples"));
        assert_eq!(Template::System.unfilled(&[]), None);
    }

    #[test]
    fn render_fills_placeholders() {
        let p = Prompts::builtin();
        let text = p.render(Template::Answer, &[("question", "Q?"), ("triples", "a, r, b")]);
        assert!(text.ends_with("Q: Q?\nKnowledge Triplets: a, r, b\nA: \n"), "{text}");
    }

    #[test]
    fn broken_templates_are_clear_errors() {
        let err = Parsed::parse("x.txt", "Q: {{question}}\n{{questoin}}", &["question"]).unwrap_err();
        assert_eq!(err.to_string(), "x.txt:2: unknown placeholder {{questoin}} (this template takes: question)");
        let err = Parsed::parse("x.txt", "no slots", &["question"]).unwrap_err();
        assert_eq!(err.to_string(), "x.txt: missing placeholder {{question}}");
        let err = Parsed::parse("x.txt", "a\n{{question", &["question"]).unwrap_err();
        assert_eq!(err, PromptError::Unclosed { file: "x.txt".into(), line: 2 });
    }

    #[test]
    fn a_template_of_many_placeholders_parses_in_one_pass() {
        let text = "{{question}}\n".repeat(200_000);
        let t = Parsed::parse("big.txt", &text, &["question"]).unwrap();
        assert_eq!(t.parts.iter().filter(|p| matches!(p, Part::Slot(_))).count(), 200_000);
        let err = Parsed::parse("big.txt", &format!("{text}{{{{nope}}}}"), &["question"]).unwrap_err();
        assert!(err.to_string().starts_with("big.txt:200001: unknown placeholder {{nope}}"), "{err}");
    }

    #[test]
    fn override_directory() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("answer.txt"), "A {{question}} / {{triples}}").unwrap();
        let p = Prompts::load(Some(dir.path())).unwrap();
        assert_eq!(p.render(Template::Answer, &[("question", "q"), ("triples", "t")]), "A q / t");
        std::fs::write(dir.path().join("anwser.txt"), "x").unwrap();
        let err = Prompts::load(Some(dir.path())).unwrap_err();
        assert!(matches!(err, PromptError::UnknownTemplate { .. }), "{err}");
        assert!(err.to_string().ends_with("anwser.txt: not a known template (known: system, relation_prune, relation_prune_unified, entity_prune, entity_prune_unified, reasoning, reasoning_tog_r, answer, answer_own_knowledge, topic_entities, io, cot, pog_analysis, pog_precise, pog_branch, pog_summary, pog_sufficiency, pog_supplement, pog_answer, pog_answer_own, gog_step, gog_relations, gog_generate, gog_verify, extract)"), "{err}");
    }
}
