//! Benchmark question files read into one shape, [`Item`], for evaluation and benchmarks.
//! Every loader reports the file and line of what it cannot read; nothing is skipped silently.

pub mod gog;
pub mod jsonl;
pub mod pathquestion;
pub mod tog;

use crate::engine::Topics;
use crate::overlay::scenario::Triple;
use std::path::Path;

/// A question's gold path is what the methods' simulations follow.
pub use crate::engine::simulate::GoldPath;

/// One gold answer with the other names it goes by.
#[derive(Clone, Debug, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct GoldAnswer {
    pub name: String,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub aliases: Vec<String>,
}

impl GoldAnswer {
    pub fn new(name: impl Into<String>) -> Self {
        Self { name: name.into(), aliases: Vec::new() }
    }

    pub(crate) fn names(&self) -> impl Iterator<Item = &str> {
        std::iter::once(self.name.as_str()).chain(self.aliases.iter().map(String::as_str))
    }
}

/// One question of a dataset.
#[derive(Clone, Debug, PartialEq)]
pub struct Item {
    /// Where it came from: the dataset's id, or the line number.
    pub id: String,
    pub question: String,
    /// Every accepted answer, with its aliases.
    pub answers: Vec<GoldAnswer>,
    /// Topic entities: KG id and label (or, when `topics_named`, names to link by label).
    pub topics: Vec<(String, Option<String>)>,
    /// The topics are names the KG must link (a user dataset), not ids.
    pub topics_named: bool,
    /// Hops between the topic and the answer, where the dataset says.
    pub hops: Option<usize>,
    /// The gold path, where the dataset gives one (for the gold-path simulation).
    pub gold: Option<GoldPath>,
    /// Triples hidden while this question runs (GoG's incomplete-KG sets).
    pub hidden: Vec<Triple>,
}

impl Item {
    /// How the engine finds this question's topic entities: the dataset's ids, names to link,
    /// or (when the dataset gives none) the model's extraction.
    pub fn engine_topics(&self) -> Topics {
        if self.topics.is_empty() {
            Topics::Extract
        } else if self.topics_named {
            Topics::Named(self.topics.iter().map(|(name, _)| name.clone()).collect())
        } else {
            Topics::Linked(self.topics.clone())
        }
    }
}

/// Each item's question with its gold path, for the gold-path simulation.
pub fn gold_paths(items: &[Item]) -> impl Iterator<Item = (String, GoldPath)> + '_ {
    items.iter().filter_map(|i| Some((i.question.clone(), i.gold.clone()?)))
}

/// Every layout the loaders read.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Format {
    Cwq,
    Webqsp,
    Grailqa,
    Simpleqa,
    Webquestions,
    Qald,
    Trex,
    ZeroShotRe,
    Creak,
    /// GoG's incomplete-KG sets (`data_with_ct_{p}.json`).
    Gog,
    /// PathQuestion (PQ, PQL) question files.
    Pathquestion,
    /// ongraph's own JSONL (see the README).
    Jsonl,
}

impl Format {
    /// The layout a file's name implies, if it does.
    pub fn detect(path: &Path) -> Option<Self> {
        if gog::is_gog_file(path) {
            return Some(Self::Gog);
        }
        if path.extension().is_some_and(|e| e == "jsonl") {
            return Some(Self::Jsonl);
        }
        if pathquestion::kb_for(path).is_some() {
            return Some(Self::Pathquestion);
        }
        tog::format_of(path)
    }
}

/// Reads every question of `path` in the given layout; `ids` says which topic ids ToG's files
/// should give (the others carry their own).
pub fn load(path: &Path, format: Format, ids: tog::TopicIds) -> Result<Vec<Item>, DatasetError> {
    let items = match format {
        Format::Gog => gog::load(path),
        Format::Pathquestion => pathquestion::load(path),
        Format::Jsonl => jsonl::load(path),
        layout => tog::load(path, layout, ids),
    }?;
    if items.is_empty() {
        return Err(DatasetError::Empty { path: path.display().to_string() });
    }
    Ok(items)
}

/// A dataset file's text, without the UTF-8 byte-order mark some editors write (it would
/// otherwise start the first question or break the JSON).
fn read_text(path: &Path) -> Result<String, DatasetError> {
    crate::text_file::read(path).map_err(|source| DatasetError::Io { path: path.display().to_string(), error: source })
}

/// A file holding a JSON array of records (ToG's and GoG's files), each read by `item` (given
/// its 0-based position); errors name the line or the record.
fn load_json_array(
    path: &Path,
    item: impl Fn(&serde_json::Value, usize) -> Result<Item, String>,
) -> Result<Vec<Item>, DatasetError> {
    let shown = path.display().to_string();
    let text = read_text(path)?;
    let records: Vec<serde_json::Value> = serde_json::from_str(&text).map_err(|e| DatasetError::Line {
        path: shown.clone(),
        line: e.line(),
        message: e.to_string(),
    })?;
    records
        .iter()
        .enumerate()
        .map(|(i, r)| item(r, i).map_err(|message| DatasetError::Record { path: shown.clone(), index: i, message }))
        .collect()
}

#[derive(Debug, thiserror::Error)]
pub enum DatasetError {
    // Its text is in the message, so it is no `source` (a field so named would be): anyhow's
    // chain would print it a second time.
    #[error("cannot read {path}: {error}")]
    Io { path: String, error: std::io::Error },
    #[error("{path}:{line}: {message}")]
    Line { path: String, line: usize, message: String },
    #[error("{path}, record {}: {message}", index + 1)]
    Record { path: String, index: usize, message: String },
    #[error("{path} holds no questions")]
    Empty { path: String },
}
