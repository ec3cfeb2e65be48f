//! Which corrections are a KG's: the keys they are stored under in the correction store, however
//! the KG is named on the command line.

use super::Selection;
use crate::config::Config;
use crate::kg::load::KgFormat;
use std::path::{Path, PathBuf};

/// A KG's place in the correction store.
///
/// A file KG is its file: `--kg FILE` and a `[kg.NAME]` entry whose `path` is that file (after
/// symlinks and `..` are resolved) are one KG. Its local corrections are stored under `file:`
/// and the canonical path; those stored under an entry's name (by earlier versions, and every
/// team-shared one: teammates know the KG by its entry's name, not by a path on this machine)
/// are its corrections too. They are read where they are, never moved: nothing is rewritten, so
/// nothing can be lost halfway, and a teammate's correction pulled later under the name is
/// found the same way.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct KgScope {
    /// Where this KG's local corrections are written, and its name in messages.
    pub key: String,
    /// Every key its corrections may be stored under, `key` first.
    pub keys: Vec<String>,
    /// Where a team-shared correction is written: the name teammates know the KG by (the entry
    /// named on the command line, else the first entry naming the file, else `key`).
    pub shared_key: String,
    /// The KG's file, for a file KG.
    pub file: Option<PathBuf>,
}

impl KgScope {
    /// The scope of the KG `selection` names (`--kg`, else the config's default).
    pub fn of(selection: &Selection, config: &Config) -> Self {
        let name = selection.kg.clone().unwrap_or_else(|| config.defaults.kg.clone());
        Self::named(&name, config)
    }

    /// The scope of the KG `name` stands for: `demo`, a `[kg.*]` entry, an endpoint URL or a
    /// file.
    pub fn named(name: &str, config: &Config) -> Self {
        let file = if name == "demo" || name.starts_with("http://") || name.starts_with("https://") {
            None
        } else {
            match config.kg.get(name) {
                Some(entry) if entry.endpoint.is_none() => entry.path.clone(),
                Some(_) => None,
                None => Some(PathBuf::from(name)),
            }
        };
        let Some(file) = file else { return Self::plain(name) };
        let canonical = canonical(&file);
        // Every entry naming the same file (sorted by name: the config's map is ordered).
        let entries: Vec<String> = config
            .kg
            .iter()
            .filter(|(_, e)| e.endpoint.is_none() && e.path.as_deref().is_some_and(|p| canonical_eq(p, &canonical)))
            .map(|(n, _)| n.clone())
            .collect();
        let key = format!("file:{}", canonical.display());
        let shared_key = if entries.iter().any(|e| e == name) {
            name.to_string()
        } else {
            entries.first().cloned().unwrap_or_else(|| key.clone())
        };
        let mut keys = vec![key.clone()];
        keys.extend(entries);
        Self { key, keys, shared_key, file: Some(file) }
    }

    /// A KG that is not a file: one name, one key.
    fn plain(name: &str) -> Self {
        Self { key: name.to_string(), keys: vec![name.to_string()], shared_key: name.to_string(), file: None }
    }

    /// The KG's file, canonical, when it is one: what a run keeps to say which KG it ran on
    /// (`kg_file` in sessions and run.json).
    pub fn canonical_file(&self) -> Option<String> {
        self.file.as_ref().and_then(|_| self.key.strip_prefix("file:")).map(str::to_string)
    }

    /// Whether a correction stored under `key` is this KG's.
    pub fn holds(&self, key: &str) -> bool {
        self.keys.iter().any(|k| k == key)
    }

    /// Whether a run saved as run on KG `name` (see `impact::run_kg`) ran on this KG: one of
    /// its keys (a run that kept its KG's canonical file: that file only), or, for a run saved
    /// before runs kept it, its file by path or by file name.
    pub fn holds_run(&self, name: &str) -> bool {
        if name.starts_with("file:") {
            return self.holds(name);
        }
        self.holds(name)
            || self
                .file
                .as_deref()
                .is_some_and(|f| f == Path::new(name) || f.file_name().is_some_and(|n| n.to_string_lossy() == name))
    }

    /// Whether the KG is a tab-separated triples file.
    pub fn is_tsv(&self) -> bool {
        self.file.as_deref().is_some_and(|f| KgFormat::from_path(f) == KgFormat::Tsv)
    }
}

/// The `--kg` value that names the KG whose corrections are stored under `key`.
pub fn kg_argument(key: &str) -> &str {
    key.strip_prefix("file:").unwrap_or(key)
}

/// `path` with symlinks and `..` resolved; made absolute as it is when the file is not there.
fn canonical(path: &Path) -> PathBuf {
    std::fs::canonicalize(path).unwrap_or_else(|_| std::path::absolute(path).unwrap_or_else(|_| path.to_path_buf()))
}

fn canonical_eq(path: &Path, canonical_path: &Path) -> bool {
    canonical(path) == canonical_path
}

#[cfg(test)]
mod tests {
    use super::*;

    fn config(text: &str) -> Config {
        Config::parse("test", text).unwrap()
    }

    #[test]
    fn a_file_is_one_kg_by_its_path_or_by_an_entry_naming_it() {
        let dir = tempfile::tempdir().unwrap();
        let kb = dir.path().join("kb.txt");
        std::fs::write(&kb, "a\tr\tb\n").unwrap();
        let config = config(&format!(
            "[kg.pq]\npath = {:?}\n[kg.again]\npath = {:?}\n[kg.other]\npath = \"elsewhere.txt\"\n",
            kb.display().to_string(),
            dir.path().join(".").join("kb.txt").display().to_string()
        ));
        let by_path = KgScope::named(&kb.display().to_string(), &config);
        let by_name = KgScope::named("pq", &config);
        let canonical = std::fs::canonicalize(&kb).unwrap();
        assert_eq!(by_path.key, format!("file:{}", canonical.display()));
        assert_eq!(by_path.key, by_name.key);
        assert_eq!(by_path.keys, [by_path.key.clone(), "again".into(), "pq".into()]);
        assert_eq!(by_path.keys, by_name.keys);
        assert_eq!(by_name.shared_key, "pq", "the entry given is the name teammates share");
        assert_eq!(by_path.shared_key, "again", "the first entry naming the file");
        assert!(by_path.is_tsv());
        assert_eq!(KgScope::named("demo", &config).keys, ["demo"]);
        assert_eq!(kg_argument(&by_path.key), canonical.display().to_string());
    }
}
