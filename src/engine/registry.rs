//! The registry of methods: each method's row (its names, constructor, templates and reply
//! shapes), the methods ongraph ships, and the checks that a set of rows fits together. The
//! `Method` trait it starts lives in `method.rs`, which imports no method.

use super::method::Machine;
use super::structured::{ReplyShape, Shape};
use super::{Context, EngineError, Settings, Topics};
use crate::prompts::{PromptError, Prompts, Template};
use serde::{Deserialize, Serialize};
use std::collections::HashSet;
use std::fmt;
use std::path::Path;
use std::sync::LazyLock;
use std::sync::{Mutex, PoisonError};

/// Which method, by its registry name (`tog`, `pog-e`, or one registered from outside).
#[derive(Clone, Copy, PartialEq, Eq, Hash)]
pub struct MethodId(&'static str);

impl MethodId {
    pub const TOG: Self = Self::named("tog");
    pub const TOG_R: Self = Self::named("tog-r");
    pub const POG: Self = Self::named("pog");
    pub const POG_E: Self = Self::named("pog-e");
    pub const GOG: Self = Self::named("gog");
    pub const IO: Self = Self::named("io");
    pub const COT: Self = Self::named("cot");
    pub const SC: Self = Self::named("sc");

    pub const fn named(name: &'static str) -> Self {
        Self(name)
    }

    pub fn as_str(&self) -> &'static str {
        self.0
    }

    /// The name people know it by (`ToG-R`); the id itself for a method the built-in
    /// registry does not know.
    pub fn label(&self) -> &'static str {
        Registry::builtin().get(self).map_or(self.0, |e| e.label)
    }
}

impl From<&str> for MethodId {
    /// Ids are few and live as long as the program: a name not built in is kept once (so
    /// ids stay `Copy` and comparable in patterns).
    fn from(name: &str) -> Self {
        if let Some(e) = BUILTIN.iter().find(|e| e.id == name) {
            return Self(e.id);
        }
        static OTHERS: LazyLock<Mutex<HashSet<&'static str>>> = LazyLock::new(Mutex::default);
        let mut others = OTHERS.lock().unwrap_or_else(PoisonError::into_inner);
        match others.get(name) {
            Some(&kept) => Self(kept),
            None => {
                let kept: &'static str = Box::leak(name.to_string().into_boxed_str());
                others.insert(kept);
                Self(kept)
            }
        }
    }
}

impl Serialize for MethodId {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(self.0)
    }
}

impl<'de> Deserialize<'de> for MethodId {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let name = std::borrow::Cow::<'de, str>::deserialize(d)?;
        Ok(Self::from(name.as_ref()))
    }
}

impl fmt::Debug for MethodId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{:?}", self.0)
    }
}

impl fmt::Display for MethodId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.0)
    }
}

/// A method the registry can start: its names and its constructor.
#[derive(Clone, Copy)]
pub struct MethodEntry {
    /// What `--method`, configs and sessions call it.
    pub id: &'static str,
    /// What people call it.
    pub label: &'static str,
    /// One line for `--help`.
    pub about: &'static str,
    /// Where a run is, for a status line (`d2/3 N=3`, `step 4/6`), from the settings and the
    /// depth the method reports; empty when depth means nothing to the method.
    pub progress: fn(&Settings, u32) -> String,
    /// Starts the method on a fresh context (linking topics is the method's business).
    pub start: fn(&mut Context, Topics) -> Result<Machine, EngineError>,
    /// The prompt templates it renders (besides the engine's own: the system prompt, topic
    /// extraction and answer extraction). A user's prompts directory may override any of them.
    pub templates: &'static [Template],
    /// The reply shapes it defines for its own prompts (the built-in ones need no listing).
    pub shapes: &'static [ReplyShape],
}

impl fmt::Debug for MethodEntry {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let templates: Vec<&str> = self.templates.iter().map(|t| t.name()).collect();
        f.debug_struct("MethodEntry").field("id", &self.id).field("templates", &templates).finish_non_exhaustive()
    }
}

/// Progress as depth out of Dmax, and the beam width.
pub fn depth_progress(s: &Settings, depth: u32) -> String {
    format!("d{depth}/{} N={}", s.depth, s.width)
}

/// Progress as GoG's steps out of its most.
fn step_progress(s: &Settings, steps: u32) -> String {
    format!("step {steps}/{}", s.gog.gog_steps)
}

/// No progress to show: the baselines make one step.
fn no_progress(_: &Settings, _: u32) -> String {
    String::new()
}

/// The methods ongraph ships, in the order `--help` lists them.
pub const BUILTIN: &[MethodEntry] = &[
    MethodEntry {
        id: "tog",
        label: "ToG",
        about: "Think-on-Graph: beam search over triple paths, LLM-scored relations and entities",
        progress: depth_progress,
        start: |cx, topics| Ok(Machine::new(super::tog::TogMachine::new(cx, topics, false)?)),
        templates: super::tog::templates::TEMPLATES,
        shapes: &[],
    },
    MethodEntry {
        id: "tog-r",
        label: "ToG-R",
        about: "ToG-R: relation chains; entities sampled (seeded) instead of scored",
        progress: depth_progress,
        start: |cx, topics| Ok(Machine::new(super::tog::TogMachine::new(cx, topics, true)?)),
        templates: super::tog::templates::TEMPLATES,
        shapes: &[],
    },
    MethodEntry {
        id: "pog",
        label: "PoG",
        about: "Paths-over-Graph: question analysis, a question subgraph, three-step pruning",
        progress: depth_progress,
        start: |cx, topics| Ok(Machine::new(super::pog::PogMachine::new(cx, topics, false)?)),
        templates: super::pog::templates::TEMPLATES,
        shapes: &[],
    },
    MethodEntry {
        id: "pog-e",
        label: "PoG-E",
        about: "PoG walking one relation per hop",
        progress: depth_progress,
        start: |cx, topics| Ok(Machine::new(super::pog::PogMachine::new(cx, topics, true)?)),
        templates: super::pog::templates::TEMPLATES,
        shapes: &[],
    },
    MethodEntry {
        id: "gog",
        label: "GoG",
        about: "Generate-on-Graph: Thought / Action / Observation with Search, Generate and Finish",
        progress: step_progress,
        start: |cx, topics| Ok(Machine::new(super::gog::GogMachine::new(cx, topics)?)),
        templates: super::gog::templates::TEMPLATES,
        shapes: &[],
    },
    MethodEntry {
        id: "io",
        label: "IO",
        about: "baseline: the model answers directly, no KG",
        progress: no_progress,
        start: |_, _| Ok(Machine::new(super::baseline::BaselineMachine::new(super::baseline::Prompting::Io))),
        templates: &[super::baseline::IO],
        shapes: &[],
    },
    MethodEntry {
        id: "cot",
        label: "CoT",
        about: "baseline: chain of thought with exemplars, no KG",
        progress: no_progress,
        start: |_, _| Ok(Machine::new(super::baseline::BaselineMachine::new(super::baseline::Prompting::Cot))),
        templates: &[super::baseline::COT],
        shapes: &[],
    },
    MethodEntry {
        id: "sc",
        label: "SC",
        about: "baseline: self-consistency, the majority answer of --samples chain-of-thought samples",
        progress: no_progress,
        start: |_, _| {
            Ok(Machine::new(super::baseline::BaselineMachine::new(super::baseline::Prompting::SelfConsistency)))
        },
        templates: &[super::baseline::COT],
        shapes: &[],
    },
];

/// Names to constructors, and the templates and reply shapes of the methods named.
#[derive(Clone, Debug)]
pub struct Registry {
    entries: Vec<MethodEntry>,
}

/// A method entry that does not fit with the others.
#[derive(Debug, thiserror::Error, PartialEq)]
pub enum RegistryError {
    #[error("method {method}: its template {template} differs from another template of that name")]
    TemplateTaken { method: String, template: String },
    #[error("method {method}: the reply shape name {shape} is taken (by a built-in shape or another method's)")]
    ShapeTaken { method: String, shape: String },
    #[error("method {method}: its template {template} asks for the reply shape {shape}, which no method defines")]
    UnknownShape { method: String, template: String, shape: String },
}

impl Registry {
    /// The methods ongraph ships.
    pub fn builtin() -> &'static Registry {
        static BUILT_IN: LazyLock<Registry> = LazyLock::new(|| Registry { entries: BUILTIN.to_vec() });
        &BUILT_IN
    }

    /// This registry and one more method (replacing one of the same id), if its templates and
    /// shapes fit with the others'.
    pub fn with(mut self, entry: MethodEntry) -> Result<Self, RegistryError> {
        self.entries.retain(|e| e.id != entry.id);
        self.entries.push(entry);
        check(&self.entries)?;
        Ok(self)
    }

    pub fn get(&self, id: &MethodId) -> Option<&MethodEntry> {
        self.entries.iter().find(|e| e.id == id.as_str())
    }

    pub fn entries(&self) -> &[MethodEntry] {
        &self.entries
    }

    /// `tog, tog-r, …`, for error messages.
    pub fn names(&self) -> String {
        self.entries.iter().map(|e| e.id).collect::<Vec<_>>().join(", ")
    }

    /// Every template a run may render: the engine's, then each method's, once each.
    pub fn templates(&self) -> Vec<Template> {
        let mut all: Vec<Template> = Vec::new();
        for t in super::templates::ENGINE.iter().chain(self.entries.iter().flat_map(|e| e.templates)) {
            if !all.iter().any(|a| a.name() == t.name()) {
                all.push(*t);
            }
        }
        all
    }

    /// The template of this name (a file in a prompts directory, an entry in a saved session).
    pub fn template(&self, name: &str) -> Option<Template> {
        self.templates().into_iter().find(|t| t.name() == name)
    }

    /// The registry's templates, their defaults overridden by any `NAME.txt` (and
    /// `json/NAME.txt`) in `dir`; a file naming none of them is an error.
    pub fn prompts(&self, dir: Option<&Path>) -> Result<Prompts, PromptError> {
        Prompts::load(&self.templates(), dir)
    }

    /// The registry's templates as a saved session has them (see [`Prompts::from_texts`]).
    pub fn saved_prompts(&self, texts: &std::collections::BTreeMap<String, String>) -> Result<Prompts, PromptError> {
        Prompts::from_texts(&self.templates(), texts)
    }
}

/// The built-in methods' prompts, as compiled in.
pub fn builtin_prompts() -> Prompts {
    Registry::builtin().prompts(None).unwrap_or_else(|e| unreachable!("built-in prompts are tested to be valid: {e}"))
}

/// Whether `entries` fit together: one template to a name, one shape to a name (none a
/// built-in shape's), and every template's reply shape defined.
fn check(entries: &[MethodEntry]) -> Result<(), RegistryError> {
    let mut templates: Vec<Template> = super::templates::ENGINE.to_vec();
    let mut shapes: Vec<&ReplyShape> = Vec::new();
    for e in entries {
        for t in e.templates {
            match templates.iter().find(|k| k.name() == t.name()) {
                Some(k) if k != t => {
                    return Err(RegistryError::TemplateTaken { method: e.id.into(), template: t.name().into() });
                }
                Some(_) => {}
                None => templates.push(*t),
            }
        }
        for s in e.shapes {
            let taken = Shape::BUILTIN_NAMES.contains(&s.name)
                || shapes.iter().any(|k| k.name == s.name && (k.shape != s.shape));
            if taken {
                return Err(RegistryError::ShapeTaken { method: e.id.into(), shape: s.name.into() });
            }
            shapes.push(s);
        }
    }
    for e in entries {
        for t in e.templates {
            let Some(shape) = t.reply() else { continue };
            if !Shape::BUILTIN_NAMES.contains(&shape) && !shapes.iter().any(|s| s.name == shape) {
                return Err(RegistryError::UnknownShape {
                    method: e.id.into(),
                    template: t.name().into(),
                    shape: shape.into(),
                });
            }
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_builtin_methods_templates_and_shapes_fit_together() {
        assert_eq!(check(BUILTIN), Ok(()));
        let registry = Registry::builtin();
        let templates = registry.templates();
        for t in &templates {
            assert!(t.reply().is_none_or(|r| Shape::BUILTIN_NAMES.contains(&r)), "{t}: {:?}", t.reply());
            assert_eq!(registry.template(t.name()), Some(*t));
        }
        assert_eq!(registry.template("anwser"), None);
        // Every file of the prompts directory is a built-in template, and every built-in
        // template a file; likewise the structured variants in prompts/json/.
        let stems = |dir: &Path| {
            let mut names: Vec<String> = std::fs::read_dir(dir)
                .unwrap()
                .map(|e| e.unwrap().path())
                .filter(|p| p.is_file())
                .map(|p| p.file_stem().unwrap().to_string_lossy().into_owned())
                .collect();
            names.sort();
            names
        };
        let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("prompts");
        let mut names: Vec<String> = templates.iter().map(|t| t.name().to_string()).collect();
        names.sort();
        assert_eq!(stems(&dir), names);
        let mut variants: Vec<String> =
            templates.iter().filter(|t| t.json_default_text().is_some()).map(|t| t.name().to_string()).collect();
        variants.sort();
        assert_eq!(stems(&dir.join("json")), variants);
        // The built-in prompts load, and a misspelt override names every template known.
        assert_eq!(builtin_prompts().templates().count(), templates.len());
        let mine = tempfile::tempdir().unwrap();
        std::fs::write(mine.path().join("anwser.txt"), "x").unwrap();
        let err = registry.prompts(Some(mine.path())).unwrap_err().to_string();
        assert!(err.ends_with("anwser.txt: not a known template; did you mean answer.txt? (known: system, topic_entities, extract, relation_prune, relation_prune_unified, entity_prune, entity_prune_unified, reasoning, reasoning_tog_r, answer, answer_own_knowledge, pog_analysis, pog_precise, pog_branch, pog_summary, pog_sufficiency, pog_supplement, pog_answer, pog_answer_own, gog_step, gog_relations, gog_generate, gog_verify, io, cot)"), "{err}");
    }
}
