//! Benchmark question files read into one shape, [`Item`], for evaluation and benchmarks.
//! Every loader reports the file and line of what it cannot read; nothing is skipped silently.

pub mod jsonl;
pub mod pathquestion;
pub mod tog;

use crate::eval::metrics::GoldAnswer;
use crate::llm::gold_path::GoldPath;

/// One question of a dataset.
#[derive(Clone, Debug, PartialEq)]
pub struct Item {
    /// Where it came from: the dataset's id, or the line number.
    pub id: String,
    pub question: String,
    /// Every accepted answer, with its aliases.
    pub answers: Vec<GoldAnswer>,
    /// Topic entities: KG id and label.
    pub topics: Vec<(String, Option<String>)>,
    /// Hops between the topic and the answer, where the dataset says.
    pub hops: Option<usize>,
    /// The gold path, where the dataset gives one (for the gold-path simulation).
    pub gold: Option<GoldPath>,
}

/// Each item's question with its gold path, for the gold-path simulation.
pub fn gold_paths(items: &[Item]) -> impl Iterator<Item = (String, GoldPath)> + '_ {
    items.iter().filter_map(|i| Some((i.question.clone(), i.gold.clone()?)))
}

#[derive(Debug, thiserror::Error)]
pub enum DatasetError {
    #[error("cannot read {path}: {source}")]
    Io { path: String, source: std::io::Error },
    #[error("{path}:{line}: {message}")]
    Line { path: String, line: usize, message: String },
    #[error("{path}, record {}: {message}", index + 1)]
    Record { path: String, index: usize, message: String },
}
