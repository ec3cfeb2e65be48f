//! ongraph: watch, steer and correct an LLM while it reasons over a knowledge graph.
//!
//! Layers, each usable alone: [`kg`] (knowledge graphs), [`llm`] (language models),
//! [`overlay`] (user corrections), [`prompts`] (templates), [`session`] (saved sittings, replayed offline), [`settings`] (the
//! engine's settings as config keys and flags), [`engine`] (the reasoning methods, sans I/O), [`dataset`] (benchmark question files), [`driver`] (performs
//! what the engine asks for), [`config`] and [`cli`] (the `ongraph` command).

pub mod cli;
pub mod config;
pub mod dataset;
pub mod driver;
pub mod engine;
pub mod eval;
pub mod kg;
pub mod llm;
pub mod overlay;
pub mod prompts;
pub mod session;
pub mod settings;
mod text_file;
pub mod tui;
