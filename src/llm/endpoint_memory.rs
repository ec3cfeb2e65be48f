//! What an endpoint refused, remembered between runs: with `structured = "auto"`, a server
//! that takes only `json_object` (llama-cpp-python's) refused the first structured request of
//! every `ongraph ask`, a failed call and a line of output each time. The reply mode it took
//! is kept in a small JSON file in the state directory, by model and endpoint (a `base_url`
//! holds no secret: the config refuses one with credentials or a query), and the next run
//! starts from it. A file that cannot be read or written is
//! no error: the run learns again, as it did before.

use super::ReplyMode;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

/// The file of learned reply modes.
#[derive(Clone, Debug)]
pub struct EndpointMemory {
    path: PathBuf,
}

impl EndpointMemory {
    pub fn at(path: PathBuf) -> Self {
        Self { path }
    }

    /// Where it lives by default: `$XDG_STATE_HOME/ongraph/endpoints.json`.
    pub fn default_path() -> Option<PathBuf> {
        dirs::state_dir().map(|d| d.join("ongraph").join("endpoints.json"))
    }

    /// The reply mode the endpoint at `base_url` serving `model` took last, if remembered.
    pub fn reply_mode(&self, base_url: &str, model: &str) -> Option<ReplyMode> {
        read(&self.path).get(&key(base_url, model)).copied()
    }

    /// Remembers that the endpoint took `mode` (after refusing the modes before it).
    pub fn remember(&self, base_url: &str, model: &str, mode: ReplyMode) {
        let mut all = read(&self.path);
        if all.insert(key(base_url, model), mode) == Some(mode) {
            return;
        }
        if let Err(e) = write(&self.path, &all) {
            tracing::warn!("cannot remember the endpoint's reply mode in {}: {e}", self.path.display());
        }
    }
}

/// An endpoint as remembered: the model at the URL.
fn key(base_url: &str, model: &str) -> String {
    format!("{model} at {}", base_url.trim_end_matches('/'))
}

/// The file's entries; none when it is missing, unreadable, too large or not this format.
fn read(path: &Path) -> BTreeMap<String, ReplyMode> {
    const MAX_BYTES: u64 = 1 << 20;
    let fits = std::fs::metadata(path).is_ok_and(|m| m.is_file() && m.len() <= MAX_BYTES);
    if !fits {
        return BTreeMap::new();
    }
    std::fs::read(path).ok().and_then(|bytes| serde_json::from_slice(&bytes).ok()).unwrap_or_default()
}

/// Writes the entries whole, through a temporary file renamed over the old one.
fn write(path: &Path, all: &BTreeMap<String, ReplyMode>) -> std::io::Result<()> {
    if let Some(dir) = path.parent() {
        std::fs::create_dir_all(dir)?;
    }
    let next = path.with_extension(format!("json.{}", std::process::id()));
    let text = serde_json::to_vec_pretty(all).map_err(std::io::Error::other)?;
    std::fs::write(&next, text)?;
    std::fs::rename(&next, path)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_mode_is_remembered_per_model_and_endpoint() {
        let dir = tempfile::tempdir().unwrap();
        let memory = EndpointMemory::at(dir.path().join("state").join("endpoints.json"));
        assert_eq!(memory.reply_mode("http://127.0.0.1:8000/v1", "m"), None);
        memory.remember("http://127.0.0.1:8000/v1/", "m", ReplyMode::JsonObject);
        assert_eq!(memory.reply_mode("http://127.0.0.1:8000/v1", "m"), Some(ReplyMode::JsonObject));
        assert_eq!(memory.reply_mode("http://127.0.0.1:8000/v1", "other"), None, "another model");
        assert_eq!(memory.reply_mode("http://127.0.0.1:9000/v1", "m"), None, "another endpoint");
        // A damaged file is no memory, and is written afresh.
        std::fs::write(dir.path().join("state").join("endpoints.json"), "{not json").unwrap();
        assert_eq!(memory.reply_mode("http://127.0.0.1:8000/v1", "m"), None);
        memory.remember("http://127.0.0.1:8000/v1", "m", ReplyMode::FreeText);
        assert_eq!(memory.reply_mode("http://127.0.0.1:8000/v1", "m"), Some(ReplyMode::FreeText));
    }
}
