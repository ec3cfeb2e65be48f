//! ongraph: watch, steer and correct an LLM while it reasons over a knowledge graph.
//!
//! The public API is what embeds the reasoning engine in another program, and no more:
//!
//! - [`engine`]: the sans-I/O reasoning methods. A [`engine::Run`] is polled for
//!   [`engine::Request`]s and fed the [`engine::Response`]s; a method is a [`engine::Method`]
//!   registered by a [`engine::MethodEntry`] in a [`engine::Registry`], so a method defined
//!   outside this crate runs like a built-in one (`tests/custom_method.rs` does so). What such a
//!   method works with is public too: the [`engine::Context`], the tree it grows
//!   ([`engine::beam`]), the trace it writes ([`engine::events`]), the reply reader
//!   [`engine::parse_answers`] and the progress line [`engine::depth_progress`].
//! - [`kg`] and [`llm`]: the [`kg::KnowledgeGraph`] and [`llm::LanguageModel`] traits and the
//!   values that cross them, for whoever performs a run's requests.
//! - [`prompts`]: the templates a run renders its prompts from.
//! - [`main`]: the `ongraph` command, which is all `src/main.rs` calls; [`main_with`] is the
//!   same command with methods of one's own (`tests/custom_method_program.rs` is such a program).
//!
//! Everything else (the driver, sessions, datasets, evaluation, the correction overlay, the
//! config, the CLI and the TUI) is the program's own and private, so the compiler reports what
//! nothing uses. The project's tests and benches reach it through `testing`, which is no API.

mod cli;
mod config;
mod dataset;
mod driver;
pub mod engine;
mod eval;
mod http;
mod impact;
pub mod kg;
pub mod llm;
mod overlay;
mod printable;
pub mod prompts;
mod safe_text;
mod session;
mod settings_patch;
mod sled_open;
#[doc(hidden)]
pub mod testing;
mod text_file;
mod tui;
mod workspace;

pub use cli::{main, main_with};
