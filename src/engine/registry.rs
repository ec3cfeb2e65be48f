//! The registry of methods: each method's row (its names, constructor, templates and reply
//! shapes), and the checks that a set of rows fits together. It imports no method: the methods
//! ongraph ships are listed in `methods/mod.rs`, and the `Method` trait lives in `method.rs`.

use super::method::Machine;
use super::method_id::MethodId;
use super::simulate::{Simulate, Simulation};
use super::structured::{GENERIC, ReplyShape};
use super::{Context, EngineError, Settings, Topics};
use crate::prompts::{PromptError, Prompts, Template};
use std::fmt;
use std::path::Path;

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
    /// The reply shapes it defines for its own prompts (the generic ones need no listing).
    pub shapes: &'static [ReplyShape],
    /// How a model that knows the gold path, and reads nothing but the prompt, replies to each
    /// of its templates (`eval --llm gold-path`; see [`super::simulate`]). A template without
    /// one cannot be simulated.
    pub simulations: &'static [Simulation],
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
    #[error("method {method}: the reply shape name {shape} is taken (by a generic shape or another method's)")]
    ShapeTaken { method: String, shape: String },
    #[error("method {method}: its template {template} asks for the reply shape {shape}, which no method defines")]
    UnknownShape { method: String, template: String, shape: String },
    #[error("method {method}: it simulates the template {template}, which it does not render")]
    SimulatesOther { method: String, template: String },
}

/// The registry the program runs with: the built-in one, or the one [`crate::main_with`] was
/// given. Set once, before anything reads it.
static PROGRAM: std::sync::OnceLock<Registry> = std::sync::OnceLock::new();

impl Registry {
    /// A registry of exactly `entries` (see `methods/mod.rs`; one from outside starts from the
    /// built-in one and adds with [`Registry::with`]).
    pub(super) fn of(entries: Vec<MethodEntry>) -> Self {
        Self { entries }
    }

    /// This registry and one more method (replacing one of the same id), if its templates and
    /// shapes fit with the others'.
    pub fn with(mut self, entry: MethodEntry) -> Result<Self, RegistryError> {
        self.entries.retain(|e| e.id != entry.id);
        self.entries.push(entry);
        check(&self.entries)?;
        Ok(self)
    }

    /// The methods this program runs: ongraph's own, or those [`crate::main_with`] was given.
    pub(crate) fn program() -> &'static Registry {
        PROGRAM.get().unwrap_or_else(|| Registry::builtin())
    }

    /// Makes `self` the program's registry; refused (and given back) once one is set.
    pub(crate) fn install(self) -> Result<(), Registry> {
        PROGRAM.set(self)
    }

    /// How a gold-path simulation replies to the template named `template`, when a method (or
    /// the engine) defines it.
    pub fn simulation(&self, template: &str) -> Option<Simulate> {
        super::simulate::ENGINE
            .iter()
            .chain(self.entries.iter().flat_map(|e| e.simulations))
            .find(|s| s.template == template)
            .map(|s| s.reply)
    }

    /// The reply shape of this name: a generic one, or one a method defines.
    pub fn shape(&self, name: &str) -> Option<&ReplyShape> {
        GENERIC.iter().chain(self.entries.iter().flat_map(|e| e.shapes)).find(|s| s.name == name)
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

    /// What the calls of `step` do, in words: its template's words (a call's step is named
    /// after the template it renders), or the name in words for a step no template names.
    pub fn step_in_words(&self, step: &str) -> String {
        self.template(step).map_or_else(|| step.replace('_', " "), |t| t.step().to_string())
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

/// Whether `entries` fit together: one template to a name, one shape to a name (none a
/// built-in shape's), and every template's reply shape defined.
pub(super) fn check(entries: &[MethodEntry]) -> Result<(), RegistryError> {
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
            let taken =
                GENERIC.iter().any(|g| g.name == s.name) || shapes.iter().any(|k| k.name == s.name && !k.same_as(s));
            if taken {
                return Err(RegistryError::ShapeTaken { method: e.id.into(), shape: s.name.into() });
            }
            shapes.push(s);
        }
    }
    for e in entries {
        if let Some(s) = e.simulations.iter().find(|s| !e.templates.iter().any(|t| t.name() == s.template)) {
            return Err(RegistryError::SimulatesOther { method: e.id.into(), template: s.template.into() });
        }
        for t in e.templates {
            let Some(shape) = t.reply() else { continue };
            if !GENERIC.iter().chain(shapes.iter().copied()).any(|s| s.name == shape) {
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
