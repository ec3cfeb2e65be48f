//! Prompt templates: text with `{{name}}` placeholders. Which templates exist is not this
//! module's business: each method defines its own ([`TemplateDef`], usually with
//! [`builtin_template!`] for the files under `prompts/`), the engine's registry gathers them,
//! and [`Prompts`] loads that set, overridden by a prompts directory or a saved session.
//! Templates are checked when they are loaded, so a broken one is a start-up error, not a
//! failure mid-question.

use std::collections::BTreeMap;
use std::fmt;
use std::path::Path;

/// A prompt template as its method defines it.
#[derive(Debug, PartialEq, Eq)]
pub struct TemplateDef {
    /// The name of its file (`NAME.txt` in a prompts directory) and of its entry in a saved
    /// session; `[a-z0-9_]`, unique in a registry.
    pub name: &'static str,
    /// What its calls do, in words a user reads in errors and the UI ("scoring the
    /// relations"): a call's step is named after its template.
    pub step: &'static str,
    /// The placeholders it must contain (and may only contain).
    pub placeholders: &'static [&'static str],
    /// The reply shape its calls ask for in structured mode (a shape's name): for a call that
    /// reasons first, the shape its answer is extracted into; `None` for text that is no call of
    /// its own (the system prompt).
    pub reply: Option<&'static str>,
    /// The default text.
    pub text: &'static str,
    /// The default structured variant: the same template with its examples written in the JSON
    /// its calls reply in and that JSON's shape shown before the question (a long fixed prefix,
    /// which local servers keep cached).
    pub json_text: Option<&'static str>,
}

/// A prompt template: rendering takes one of these, never a string, so a misspelt template is
/// a compile error rather than an empty prompt. Two are the same template when their
/// definitions are equal.
#[derive(Clone, Copy, Debug, Eq)]
pub struct Template(&'static TemplateDef);

impl PartialEq for Template {
    fn eq(&self, other: &Self) -> bool {
        // The same definition, most often: no need to compare its texts.
        std::ptr::eq(self.0, other.0) || self.0 == other.0
    }
}

/// A template whose default text is `prompts/NAME.txt` (and, with `json`, whose structured
/// variant is `prompts/json/NAME.txt`), its calls' step in words, its placeholders and reply shape:
/// `builtin_template!("answer", "answering from the paths", ["question"], Some("answer"))`.
macro_rules! builtin_template {
    ($name:literal, $step:literal, [$($slot:literal),*], $reply:expr) => {
        $crate::prompts::Template::new(&$crate::prompts::TemplateDef {
            name: $name,
            step: $step,
            placeholders: &[$($slot),*],
            reply: $reply,
            text: include_str!(concat!(env!("CARGO_MANIFEST_DIR"), "/prompts/", $name, ".txt")),
            json_text: None,
        })
    };
    ($name:literal, $step:literal, [$($slot:literal),*], $reply:expr, json) => {
        $crate::prompts::Template::new(&$crate::prompts::TemplateDef {
            name: $name,
            step: $step,
            placeholders: &[$($slot),*],
            reply: $reply,
            text: include_str!(concat!(env!("CARGO_MANIFEST_DIR"), "/prompts/", $name, ".txt")),
            json_text: Some(include_str!(concat!(env!("CARGO_MANIFEST_DIR"), "/prompts/json/", $name, ".txt"))),
        })
    };
}
pub(crate) use builtin_template;

impl Template {
    pub const fn new(def: &'static TemplateDef) -> Self {
        Self(def)
    }

    /// The name of its file and of its entry in a saved session.
    pub const fn name(self) -> &'static str {
        self.0.name
    }

    /// What its calls do, in words (see [`TemplateDef::step`]).
    pub const fn step(self) -> &'static str {
        self.0.step
    }

    /// The placeholders it must contain (and may only contain).
    pub const fn placeholders(self) -> &'static [&'static str] {
        self.0.placeholders
    }

    /// The reply shape its calls ask for in structured mode (see [`TemplateDef::reply`]).
    pub const fn reply(self) -> Option<&'static str> {
        self.0.reply
    }

    /// The default text.
    pub const fn default_text(self) -> &'static str {
        self.0.text
    }

    /// The default structured variant, if the template has one.
    pub const fn json_default_text(self) -> Option<&'static str> {
        self.0.json_text
    }

    /// The first placeholder `values` leaves without a value (it would render empty).
    fn unfilled(self, values: &[(&str, &str)]) -> Option<&'static str> {
        self.placeholders().iter().copied().find(|p| !values.iter().any(|(k, _)| k == p))
    }
}

/// A prompt rendered for a call, and whether it shows the JSON shape of its reply itself
/// (rendered from a structured variant). One that does not gets the shape appended when the
/// reply is asked for as JSON.
#[derive(Clone, Debug, PartialEq)]
pub struct Prompt {
    pub text: String,
    pub shows_shape: bool,
    /// Where the call's own paragraph begins in `text`, when it was rendered from a template
    /// that has one (see [`Prompts::fixed_part`]).
    pub(crate) split: Option<Split>,
}

/// A rendered prompt's two parts: `text[..at]` is its template's fixed part (instructions and
/// examples), `text[at..]` the call's own paragraph.
#[derive(Clone, Copy, Debug, PartialEq)]
pub(crate) struct Split {
    pub(crate) template: Template,
    pub(crate) at: usize,
}

impl From<String> for Prompt {
    fn from(text: String) -> Self {
        Self { text, shows_shape: false, split: None }
    }
}

/// The placeholders a template's fixed part may hold: their values are the same for every
/// call of a run (the beam width), so the fixed part is too.
const RUN_CONSTANTS: &[&str] = &["width"];

/// A structured variant's key in a prompts directory (`json/NAME.txt`) and in a saved session.
const JSON_PREFIX: &str = "json/";

/// What a prompts directory holds: the `.txt` files read (name → (where it came from, text)),
/// and the other files' paths with their would-be names (`prefix` + the name up to its first
/// dot), to catch a template saved under another extension.
#[derive(Default)]
struct DirFiles {
    overrides: BTreeMap<String, (String, String)>,
    others: Vec<(String, String)>,
}

/// Reads `path`, if a `.txt` file, into `files.overrides` as `prefix` + its stem; another
/// file is noted in `files.others`, unless hidden or an editor's backup (`NAME.txt~`,
/// `NAME.txt.bak`).
fn read_file_into(path: &Path, prefix: &str, files: &mut DirFiles) -> Result<(), PromptError> {
    let overrides = &mut files.overrides;
    if path.extension().and_then(|e| e.to_str()) != Some("txt") {
        let name = path.file_name().and_then(|n| n.to_str()).unwrap_or_default();
        let backup = name.starts_with('.') || name.ends_with('~') || name.contains(".txt.");
        if !backup && !path.is_dir() {
            let stem = name.split('.').next().unwrap_or_default();
            files.others.push((path.display().to_string(), format!("{prefix}{stem}")));
        }
        return Ok(());
    }
    let stem = path.file_stem().and_then(|s| s.to_str()).unwrap_or_default();
    let text = crate::text_file::read(path)
        .map_err(|e| PromptError::Io { file: path.display().to_string(), message: e.to_string() })?;
    overrides.insert(format!("{prefix}{stem}"), (path.display().to_string(), text));
    Ok(())
}

/// Reads every `.txt` file of `dir` into `files` (see [`read_file_into`]).
fn read_dir_into(dir: &Path, prefix: &str, files: &mut DirFiles) -> Result<(), PromptError> {
    let entries = std::fs::read_dir(dir)
        .map_err(|e| PromptError::Io { file: dir.display().to_string(), message: e.to_string() })?;
    for entry in entries.flatten() {
        read_file_into(&entry.path(), prefix, files)?;
    }
    Ok(())
}

/// `; did you mean NAME.txt?` for the template name nearest `name` (a slip of case or a
/// letter or two), or nothing.
fn nearest(name: &str, known: &[Template], file: &str) -> String {
    let (prefix, bare) = match name.strip_prefix(JSON_PREFIX) {
        Some(bare) => (JSON_PREFIX, bare),
        None => ("", name),
    };
    let bare = bare.to_lowercase();
    let best = known.iter().map(|t| (strsim::levenshtein(&bare, t.name()), t.name())).min();
    let ext = if file.ends_with(".txt") { ".txt" } else { "" };
    match best {
        Some((distance, t)) if distance <= 2 && distance * 3 <= t.len().max(bare.len()) => {
            format!("; did you mean {prefix}{t}{ext}?")
        }
        _ => String::new(),
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
    #[error("{file}: not a known template{hint} (known: {known})")]
    UnknownTemplate { file: String, hint: String, known: String },
    #[error("{file}: not read: a template's file is named exactly {expected}")]
    Misnamed { file: String, expected: String },
    #[error("two different templates are named {name}")]
    Duplicate { name: String },
}

/// A checked template: literal text and placeholders, in order.
#[derive(Clone, Debug)]
struct Parsed {
    parts: Vec<Part>,
    /// The text it was parsed from (saved with sessions, so a replay renders the same prompts).
    source: String,
    /// The first part of the call's own paragraph (the template's last), when the parts before
    /// it are a fixed part: instructions and examples holding no placeholder but run constants.
    call_from: Option<usize>,
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
        let call_from = split_off_call(&mut parts);
        Ok(Self { parts, source: text.to_string(), call_from })
    }

    fn render(&self, values: &[(&str, &str)]) -> String {
        self.render_parts(&self.parts, values)
    }

    /// The rendered fixed part and call paragraph, when the template has both.
    fn render_split(&self, values: &[(&str, &str)]) -> Option<(String, String)> {
        let at = self.call_from?;
        Some((self.render_parts(&self.parts[..at], values), self.render_parts(&self.parts[at..], values)))
    }

    fn render_parts(&self, parts: &[Part], values: &[(&str, &str)]) -> String {
        let mut out = String::new();
        for part in parts {
            match part {
                Part::Text(t) => out.push_str(t),
                Part::Slot(name) => out.push_str(values.iter().find(|(k, _)| k == name).map(|(_, v)| *v).unwrap_or("")),
            }
        }
        out
    }
}

/// Splits the text part holding the template's last blank line so that the call's own
/// paragraph (`Q: {{question}}` … `A: `) starts a part of its own, and returns that part's
/// index; `None` when the template has no blank line, or a placeholder before it that varies
/// from call to call (then there is no fixed part to share).
fn split_off_call(parts: &mut Vec<Part>) -> Option<usize> {
    let last = parts.len().checked_sub(1)?;
    let (index, at) = parts.iter().enumerate().rev().find_map(|(i, part)| match part {
        // Blank lines at the very end do not start a paragraph.
        Part::Text(t) => last_blank_line_end(if i == last { t.trim_end() } else { t.as_str() }).map(|at| (i, at)),
        Part::Slot(_) => None,
    })?;
    let fixed_is_constant = parts[..index].iter().all(|p| match p {
        Part::Slot(name) => RUN_CONSTANTS.contains(&name.as_str()),
        Part::Text(_) => true,
    });
    if !fixed_is_constant {
        return None;
    }
    let Part::Text(text) = &mut parts[index] else { return None };
    let call = text.split_off(at);
    parts.insert(index + 1, Part::Text(call));
    Some(index + 1)
}

/// Where the text after `text`'s last blank line starts (a file saved with CRLF line ends has
/// `\r\n\r\n` for one).
fn last_blank_line_end(text: &str) -> Option<usize> {
    let lf = text.rfind("\n\n").map(|at| at + 2);
    let crlf = text.rfind("\n\r\n").map(|at| at + 3);
    lf.max(crlf)
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

/// One template of a set, with its text and its structured variant.
#[derive(Clone, Debug)]
struct Loaded {
    template: Template,
    text: Parsed,
    /// `None`: the template has none, or a session saved before there were any.
    json: Option<Parsed>,
}

/// The templates a run renders: a set of them (the registry's), each with its text.
#[derive(Clone, Debug)]
pub struct Prompts {
    /// In the order of the set given.
    loaded: Vec<Loaded>,
}

impl Prompts {
    /// The defaults of `set`, overridden by any `NAME.txt` (and `json/NAME.txt`) in `dir`.
    /// A file naming no template of the set is an error (a misspelt name would otherwise be
    /// ignored silently).
    pub fn load(set: &[Template], dir: Option<&Path>) -> Result<Self, PromptError> {
        let mut files = DirFiles::default();
        if let Some(dir) = dir {
            let entries = std::fs::read_dir(dir)
                .map_err(|e| PromptError::Io { file: dir.display().to_string(), message: e.to_string() })?;
            for entry in entries.flatten() {
                let path = entry.path();
                if path.is_dir() && path.file_name().is_some_and(|n| n == "json") {
                    read_dir_into(&path, JSON_PREFIX, &mut files)?;
                } else {
                    read_file_into(&path, "", &mut files)?;
                }
            }
        }
        // `reasoning.TXT`, `reasoning.md` or `reasoning` would be ignored, and the run would
        // silently use the built-in text: said instead.
        for (file, name) in &files.others {
            let bare = name.strip_prefix(JSON_PREFIX).unwrap_or(name);
            if let Some(t) = set.iter().find(|t| t.name().eq_ignore_ascii_case(bare)) {
                let prefix = if name.starts_with(JSON_PREFIX) { JSON_PREFIX } else { "" };
                return Err(PromptError::Misnamed {
                    file: file.clone(),
                    expected: format!("{prefix}{}.txt", t.name()),
                });
            }
        }
        Self::from_overrides(set, files.overrides, Variants::UnlessOverridden)
    }

    /// The templates of `set` as saved by [`Prompts::texts`] (e.g. in a session file); a
    /// template the texts lack keeps its default. A session saved before structured variants
    /// existed has none: its prompts render as they did then.
    pub fn from_texts(set: &[Template], texts: &BTreeMap<String, String>) -> Result<Self, PromptError> {
        let saved_variants = texts.keys().any(|k| k.starts_with(JSON_PREFIX));
        Self::from_overrides(
            set,
            texts.iter().map(|(k, v)| (k.clone(), (format!("{k} (saved)"), v.clone()))).collect(),
            if saved_variants { Variants::Saved } else { Variants::None },
        )
    }

    /// Every template's text by name, structured variants as `json/NAME`.
    pub fn texts(&self) -> BTreeMap<String, String> {
        let plain = self.loaded.iter().map(|l| (l.template.name().to_string(), l.text.source.clone()));
        let json = self
            .loaded
            .iter()
            .filter_map(|l| Some((format!("{JSON_PREFIX}{}", l.template.name()), l.json.as_ref()?.source.clone())));
        plain.chain(json).collect()
    }

    /// The templates loaded, in the order of the set.
    pub fn templates(&self) -> impl Iterator<Item = Template> + '_ {
        self.loaded.iter().map(|l| l.template)
    }

    /// Whether `template` has a structured variant in this set (its default, the user's
    /// `json/NAME.txt`, or one saved with a session).
    pub fn has_variant(&self, template: Template) -> bool {
        self.find(template).is_some_and(|l| l.json.is_some())
    }

    /// Whether any template has a structured variant: prompts saved before there were any
    /// have none, and then replies are asked for as they were then (reason-first steps too).
    pub fn has_structured_variants(&self) -> bool {
        self.loaded.iter().any(|l| l.json.is_some())
    }

    /// The defaults of `set`, with `overrides` (name → (where it came from, text)) in their
    /// place; structured variants as `variants` says.
    fn from_overrides(
        set: &[Template],
        overrides: BTreeMap<String, (String, String)>,
        variants: Variants,
    ) -> Result<Self, PromptError> {
        let mut distinct: Vec<Template> = Vec::with_capacity(set.len());
        for &t in set {
            match distinct.iter().find(|d| d.name() == t.name()) {
                Some(&d) if d != t => return Err(PromptError::Duplicate { name: t.name().into() }),
                Some(_) => {}
                None => distinct.push(t),
            }
        }
        let template_of =
            |name: &str| distinct.iter().find(|t| t.name() == name.strip_prefix(JSON_PREFIX).unwrap_or(name));
        if let Some((name, (file, _))) = overrides.iter().find(|(name, _)| template_of(name).is_none()) {
            return Err(PromptError::UnknownTemplate {
                file: file.clone(),
                hint: nearest(name, &distinct, file),
                known: distinct.iter().map(|t| t.name()).collect::<Vec<_>>().join(", "),
            });
        }
        let mut loaded = Vec::with_capacity(distinct.len());
        for &t in &distinct {
            let (name, required) = (t.name(), t.placeholders());
            let text = match overrides.get(name) {
                Some((file, text)) => Parsed::parse(file, text, required)?,
                None => Parsed::parse(&format!("prompts/{name}.txt"), t.default_text(), required)?,
            };
            let key = format!("{JSON_PREFIX}{name}");
            // A template the user rewrote keeps their words under structured replies too,
            // unless they rewrote its variant as well.
            let rewritten = variants == Variants::UnlessOverridden && overrides.contains_key(name);
            let json = match (overrides.get(&key), t.json_default_text()) {
                _ if variants == Variants::None => None,
                (None, _) if rewritten || variants == Variants::Saved => None,
                (Some((file, text)), _) => Some(Parsed::parse(file, text, required)?),
                (None, Some(text)) => Some(Parsed::parse(&format!("prompts/{key}.txt"), text, required)?),
                (None, None) => None,
            };
            loaded.push(Loaded { template: t, text, json });
        }
        Ok(Self { loaded })
    }

    /// Renders `template` for a call whose reply is asked for as JSON when `structured`: its
    /// structured variant if it has one (which shows the reply's shape), else the template.
    pub fn render_for(&self, template: Template, values: &[(&str, &str)], structured: bool) -> Prompt {
        debug_assert!(template.unfilled(values).is_none(), "{template}: a placeholder without a value");
        let variant = self.find(template).and_then(|l| l.json.as_ref()).filter(|_| structured);
        let parsed = match (variant, self.find(template)) {
            (Some(variant), _) => variant,
            (None, Some(loaded)) => &loaded.text,
            (None, None) => return Prompt::from(self.render(template, values)),
        };
        let shows_shape = variant.is_some();
        match parsed.render_split(values) {
            Some((mut text, call)) => {
                let split = Some(Split { template, at: text.len() });
                text.push_str(&call);
                Prompt { text, shows_shape, split }
            }
            None => Prompt { text: parsed.render(values), shows_shape, split: None },
        }
    }

    /// The fixed part of `template` as [`Prompts::render_for`] renders it (its instructions and
    /// examples, before the call's own paragraph), with the run's constants `values`; `None`
    /// when it has none.
    pub(crate) fn fixed_part(&self, template: Template, values: &[(&str, &str)], structured: bool) -> Option<String> {
        let loaded = self.find(template)?;
        let parsed = loaded.json.as_ref().filter(|_| structured).unwrap_or(&loaded.text);
        parsed.render_split(values).map(|(fixed, _)| fixed)
    }

    fn find(&self, template: Template) -> Option<&Loaded> {
        self.loaded.iter().find(|l| l.template == template)
    }

    /// Renders `template` with `values`, which must give every placeholder it takes (checked in
    /// debug builds: a missing one would render empty). A template outside the set loaded (a
    /// method that did not list it) renders its default text.
    pub fn render(&self, template: Template, values: &[(&str, &str)]) -> String {
        debug_assert!(
            template.unfilled(values).is_none(),
            "{template}: no value for {{{{{}}}}}",
            template.unfilled(values).unwrap_or_default()
        );
        match self.find(template) {
            Some(loaded) => loaded.text.render(values),
            None => Parsed::parse(template.name(), template.default_text(), template.placeholders())
                .map(|p| p.render(values))
                .unwrap_or_else(|_| template.default_text().to_string()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const ANSWER: Template = Template::new(&TemplateDef {
        name: "answer",
        step: "answering",
        placeholders: &["question", "triples"],
        reply: Some("answer"),
        text: "Answer.\nQ: {{question}}\nKnowledge Triplets: {{triples}}\nA: \n",
        json_text: Some("Answer in JSON.\nQ: {{question}}\nKnowledge Triplets: {{triples}}\nA: \n"),
    });
    const SYSTEM: Template = Template::new(&TemplateDef {
        name: "system",
        step: "the system prompt",
        placeholders: &[],
        reply: None,
        text: "Be brief.",
        json_text: None,
    });
    const SET: &[Template] = &[SYSTEM, ANSWER];

    /// A template's last paragraph is the call's own (LF or CRLF line ends alike); one with a
    /// placeholder that varies before it has no fixed part to share.
    #[test]
    fn the_call_paragraph_is_split_off_at_the_last_blank_line() {
        let split = |text: &str| {
            let parsed = Parsed::parse("t", text, &["question", "width"]).unwrap();
            parsed.render_split(&[("question", "Q1"), ("width", "3")])
        };
        let fixed = ("Pick {{width}}.\n\nExample.\n\n".to_string(), "Q: {{question}}\nA: \n".to_string());
        assert_eq!(
            split(&format!("{}{}", fixed.0, fixed.1)),
            Some(("Pick 3.\n\nExample.\n\n".into(), "Q: Q1\nA: \n".into()))
        );
        assert_eq!(
            split("Pick {{width}}.\r\n\r\nQ: {{question}}\r\nA: \r\n"),
            Some(("Pick 3.\r\n\r\n".into(), "Q: Q1\r\nA: \r\n".into()))
        );
        assert_eq!(split("Q: {{question}}\n\nPick {{width}}.\n"), None, "the question before the last paragraph");
        assert_eq!(split("Pick {{width}}. Q: {{question}}"), None, "no blank line");
    }

    #[test]
    fn unfilled_placeholders_are_found() {
        let all = [("question", "q"), ("triples", "t")];
        assert_eq!(ANSWER.unfilled(&all), None);
        assert_eq!(ANSWER.unfilled(&all[..1]), Some("triples"));
        assert_eq!(SYSTEM.unfilled(&[]), None);
    }

    #[test]
    fn render_fills_placeholders() {
        let p = Prompts::load(SET, None).unwrap();
        let text = p.render(ANSWER, &[("question", "Q?"), ("triples", "a, r, b")]);
        assert_eq!(text, "Answer.\nQ: Q?\nKnowledge Triplets: a, r, b\nA: \n");
        let json = p.render_for(ANSWER, &[("question", "Q?"), ("triples", "t")], true);
        assert!(json.shows_shape && json.text.starts_with("Answer in JSON."), "{json:?}");
        assert!(!p.render_for(ANSWER, &[("question", "Q?"), ("triples", "t")], false).shows_shape);
        // A template outside the set renders its default text.
        let other = Prompts::load(&[SYSTEM], None).unwrap();
        assert_eq!(
            other.render(ANSWER, &[("question", "q"), ("triples", "t")]),
            "Answer.\nQ: q\nKnowledge Triplets: t\nA: \n"
        );
    }

    #[test]
    fn broken_templates_are_clear_errors() {
        let err = Parsed::parse("x.txt", "Q: {{question}}\n{{questoin}}", &["question"]).unwrap_err();
        assert_eq!(err.to_string(), "x.txt:2: unknown placeholder {{questoin}} (this template takes: question)");
        let err = Parsed::parse("x.txt", "no slots", &["question"]).unwrap_err();
        assert_eq!(err.to_string(), "x.txt: missing placeholder {{question}}");
        let err = Parsed::parse("x.txt", "a\n{{question", &["question"]).unwrap_err();
        assert_eq!(err, PromptError::Unclosed { file: "x.txt".into(), line: 2 });
        // Two different templates of one name cannot both be loaded; the same one twice is one.
        let other = Template::new(&TemplateDef {
            name: "answer",
            step: "answering",
            placeholders: &[],
            reply: None,
            text: "x",
            json_text: None,
        });
        let err = Prompts::load(&[ANSWER, other], None).unwrap_err();
        assert_eq!(err.to_string(), "two different templates are named answer");
        assert_eq!(Prompts::load(&[ANSWER, SYSTEM, ANSWER], None).unwrap().templates().count(), 2);
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
        let p = Prompts::load(SET, Some(dir.path())).unwrap();
        assert_eq!(p.render(ANSWER, &[("question", "q"), ("triples", "t")]), "A q / t");
        // Rewritten without its variant: the user's words under structured replies too.
        assert_eq!(p.render_for(ANSWER, &[("question", "q"), ("triples", "t")], true).text, "A q / t");
        std::fs::write(dir.path().join("anwser.txt"), "x").unwrap();
        let err = Prompts::load(SET, Some(dir.path())).unwrap_err();
        assert!(matches!(err, PromptError::UnknownTemplate { .. }), "{err}");
        assert!(
            err.to_string()
                .ends_with("anwser.txt: not a known template; did you mean answer.txt? (known: system, answer)"),
            "{err}"
        );
    }

    #[test]
    fn a_template_saved_under_another_name_or_extension_is_an_error_not_ignored() {
        for (file, says) in [
            ("answer.TXT", "answer.TXT: not read: a template's file is named exactly answer.txt"),
            ("answer", "answer: not read: a template's file is named exactly answer.txt"),
            ("Answer.md", "Answer.md: not read: a template's file is named exactly answer.txt"),
            ("json/ANSWER.text", "ANSWER.text: not read: a template's file is named exactly json/answer.txt"),
            ("Answer.txt", "Answer.txt: not a known template; did you mean answer.txt?"),
            ("json/answre.txt", "answre.txt: not a known template; did you mean json/answer.txt?"),
        ] {
            let dir = tempfile::tempdir().unwrap();
            std::fs::create_dir(dir.path().join("json")).unwrap();
            std::fs::write(dir.path().join(file), "A {{question}} / {{triples}}").unwrap();
            let err = Prompts::load(SET, Some(dir.path())).unwrap_err().to_string();
            assert!(err.contains(says), "{file}: {err}");
        }
        // Backups, hidden files, notes and unrelated names stay ignored; far names get no guess.
        let dir = tempfile::tempdir().unwrap();
        for file in ["answer.txt~", "answer.txt.bak", ".answer.txt.swp", "README.md", "notes"] {
            std::fs::write(dir.path().join(file), "x").unwrap();
        }
        assert!(Prompts::load(SET, Some(dir.path())).is_ok());
        std::fs::write(dir.path().join("x.txt"), "x").unwrap();
        let err = Prompts::load(SET, Some(dir.path())).unwrap_err().to_string();
        assert!(err.ends_with("x.txt: not a known template (known: system, answer)"), "{err}");
    }

    #[test]
    fn saved_texts_round_trip() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir(dir.path().join("json")).unwrap();
        std::fs::write(dir.path().join("json").join("answer.txt"), "J {{question}} {{triples}}").unwrap();
        let p = Prompts::load(SET, Some(dir.path())).unwrap();
        let texts = p.texts();
        assert_eq!(texts.get("json/answer").map(String::as_str), Some("J {{question}} {{triples}}"));
        let again = Prompts::from_texts(SET, &texts).unwrap();
        assert_eq!(again.texts(), texts);
        // Saved before structured variants existed: none now either.
        let plain: BTreeMap<String, String> = texts.into_iter().filter(|(k, _)| !k.starts_with(JSON_PREFIX)).collect();
        assert!(!Prompts::from_texts(SET, &plain).unwrap().has_structured_variants());
    }
}
