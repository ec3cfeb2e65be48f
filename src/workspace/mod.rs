//! The workspace: what a command or the UI works with, opened as the user selected it (the
//! knowledge graph, the model, the correction store and the shared set), the team synced with,
//! and corrections stored. The CLI and the UI both use it; the CLI only parses arguments and
//! prints, the UI only shows and asks. It imports neither of them (`tests/layering.rs`).

mod live;
mod open;
mod scope;
mod store;
mod team;
mod ui;
mod watch;

pub use live::{LiveOverlay, with_overlay};
pub use open::{Opened, cache_path, endpoint, open_driver, open_embedder, open_kg, open_llm, open_llm_of_run};
pub use scope::KgScope;
pub use store::{
    Change, applicable_corrections, change_correction, corrections_for, impact_index_path, list_scope, open_store,
    store_drafts, store_path, unapproved,
};
pub use team::{open_team, sync_before_reading, sync_team};
pub use ui::{Corrections, ImpactOf, RerunOf, StoreCorrections};
pub use watch::TeamNote;

use crate::llm::openai::StructuredMode;
use std::path::PathBuf;

/// What the user selected to work with (flags, else the config's defaults): everything the
/// workspace opens is named here, none of it is engine settings.
#[derive(Clone, Debug, Default)]
pub struct Selection {
    /// `demo`, a `[kg.*]` entry, an endpoint URL or a triples file; the config's default when
    /// `None`.
    pub kg: Option<String>,
    /// How to read the KG (`auto`, `freebase`, …); the entry's, else auto, when `None`.
    pub kg_profile: Option<String>,
    /// Skip malformed KG lines.
    pub lenient: bool,
    /// `demo`, `scripted:FILE` or an `[llm.*]` entry; the config's default when `None`.
    pub llm: Option<String>,
    /// Structured replies from an endpoint; the entry's when `None`.
    pub structured: Option<StructuredMode>,
    /// Requests in flight at once; the config's default when `None`.
    pub concurrency: Option<usize>,
    /// Bypass the SPARQL query cache.
    pub no_cache: bool,
    /// Triples hidden for this run (a GoG incomplete-KG file or a TSV of triples).
    pub scenario: Option<PathBuf>,
    /// Which question of a GoG file.
    pub scenario_id: Option<String>,
    /// The `[shared.NAME]` set; the config's default when `None`.
    pub shared: Option<String>,
    /// Share nothing, whatever the config says.
    pub no_shared: bool,
}
