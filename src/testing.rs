//! For the project's own integration tests and benches, which are separate crates: the private
//! items they exercise, re-exported under the name of the module each comes from
//! (`testing::kg::demo_graph` is `crate::kg::load::demo_graph`). Not a stable API: anything
//! here may change or go with any commit. Only what a test or bench names is listed, so the
//! compiler still reports what nothing uses.

/// Performs what a run asks for.
pub mod driver {
    pub use crate::driver::Driver;
}

/// The engine's internals: reply parsing and word matching.
pub mod engine {
    pub use crate::engine::lexical::tokens;
    pub use crate::engine::parse::{
        is_bare_answer, parse_group_scores, parse_names, parse_score_list, parse_scored_choices, parse_unified_choices,
        parse_yes_no,
    };
}

/// Graphs: the local graph, its loaders and the SPARQL client.
pub mod kg {
    pub use crate::kg::load::{demo_graph, load_file, read_tsv};
    pub use crate::kg::local::{GraphBuilder, LocalGraph};
    pub use crate::kg::sparql::cache::QueryCache;
    pub use crate::kg::sparql::client::{SparqlClient, SparqlConfig};
    pub use crate::kg::sparql::{Namespaces, SparqlKg};
}

/// Models: the OpenAI-compatible client, the scripted model and the gold-path model.
pub mod llm {
    pub use crate::dataset::GoldPath;
    pub use crate::eval::gold_path::GoldPathModel;
    pub use crate::http::install_crypto_provider;
    pub use crate::llm::endpoint_memory::EndpointMemory;
    pub use crate::llm::openai::{OpenAiClient, OpenAiConfig, StructuredMode, TokenLimitParam};
    pub use crate::llm::scripted::ScriptedModel;
    pub use crate::llm::serve::LoopbackServer;
}

/// Corrections and their store.
pub mod overlay {
    pub use crate::overlay::export::{ExportFormat, Vocabulary, export};
    pub use crate::overlay::store::{CorrectionStore, SledStore, StoreError, acknowledged};
    pub use crate::overlay::{Correction, Draft, Op, OverlayKg, generated_reason};
    pub use crate::workspace::LiveOverlay;
}

/// What a correction changes (`fix impact`).
pub mod impact {
    pub use crate::impact::{Kept, Touch, load, note_saved, touch};
}

/// The configuration file.
pub mod config {
    pub use crate::config::Config;
}

/// Team-shared corrections: a set's server and its records.
pub mod team {
    pub use crate::overlay::team::Team;
    pub use crate::overlay::team_record::{Kind, Record, new_iri, now_millis};
}

/// Saved sittings and their replay.
pub mod session {
    pub use crate::session::{Moment, Player, Session, SessionError};
}

/// Benchmark question files.
pub mod dataset {
    pub use crate::dataset::{Format, Item, gold_paths, load};

    /// PathQuestion files.
    pub mod pathquestion {
        pub use crate::dataset::pathquestion::load;
    }

    /// ToG's dataset files.
    pub mod tog {
        pub use crate::dataset::tog::{TopicIds, format_of, load};
    }
}

/// Batch evaluation: scores, records, the runner and its summary.
pub mod eval {
    pub use crate::dataset::GoldAnswer;
    pub use crate::eval::metrics::score;
    pub use crate::eval::runner::{Evaluator, Finished};
    pub use crate::eval::summary::summarise;

    /// The per-question record file.
    pub mod record {
        pub use crate::eval::record::{RecordWriter, read};
    }
}

/// The terminal UI: its state, update, effects and drawing.
pub mod tui {
    pub use crate::tui::app::{Action, App, Bottom, Effect, Focus, suggestion_from, update};
    pub use crate::tui::keymap::Keymap;
    pub use crate::tui::modal::{FormKind, PickValue};
    pub use crate::tui::{Corrections, Executor, load_history};
    pub use crate::workspace::{Selection, StoreCorrections};

    /// Themes.
    pub mod theme {
        pub use crate::tui::theme::load_all;
    }

    /// Drawing a frame.
    pub mod view {
        pub use crate::tui::view::draw;
    }
}
