//! An index from facts to the kept runs that read them, beside the correction store, so a
//! correction's impact over thousands of kept runs is a few lookups, not a read of every file.
//! It is derived data: each file's entry carries the file's size and modification time, and a
//! file that changed (a session saved again, records appended) is read again when next asked;
//! a damaged index is removed and rebuilt from the files.

use super::kept::{self, KeptRun};
use super::{Skipped, touch_named};
use crate::kg::{CLOSE_NAME_MIN, Term, name_similarity};
use crate::overlay::Op;
use serde::{Deserialize, Serialize};
use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

#[derive(Debug, thiserror::Error)]
pub enum IndexError {
    #[error("the impact index at {path}: {message}")]
    Db { path: String, message: String },
}

/// The index, open.
pub struct Index {
    path: PathBuf,
    /// File path → [`FileEntry`].
    files: sled::Tree,
    /// Run id → its [`KeptRun`] (JSON).
    runs: sled::Tree,
    /// `e\0ENTITY` or `s\0SEARCHED` → the ids of the runs that read it (8 bytes each, sorted).
    postings: sled::Tree,
    db: sled::Db,
}

/// What the index knows of one file.
#[derive(Clone, Debug, Serialize, Deserialize)]
struct FileEntry {
    stamp: Stamp,
    /// Its runs: id and KG.
    runs: Vec<(u64, String)>,
    /// Why some or all of it could not be read.
    skipped: Option<String>,
}

/// A file as it was read: a change to either means it is read again.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
struct Stamp {
    len: u64,
    modified_ns: u128,
}

fn stamp(path: &Path) -> Option<Stamp> {
    let meta = std::fs::metadata(path).ok()?;
    let modified = meta.modified().ok()?.duration_since(std::time::UNIX_EPOCH).ok()?;
    Some(Stamp { len: meta.len(), modified_ns: modified.as_nanos() })
}

/// The kept runs under the places asked about, as the index has them.
pub struct Listing {
    /// Run id of every run under them, with its KG and its file as found now.
    runs: BTreeMap<u64, (String, PathBuf)>,
    pub skipped: Vec<Skipped>,
}

impl Listing {
    /// The files its runs are in.
    pub fn files(&self) -> impl Iterator<Item = PathBuf> + '_ {
        self.runs.values().map(|(_, f)| f.clone()).collect::<BTreeSet<_>>().into_iter()
    }

    /// How many runs are on a KG `ours` accepts, and how many are not.
    pub fn counts(&self, ours: impl Fn(&str) -> bool) -> (usize, usize) {
        let mine = self.runs.values().filter(|(kg, _)| ours(kg)).count();
        (mine, self.runs.len() - mine)
    }
}

impl Index {
    /// Opens the index at `path`, creating it; one that cannot be read is removed and made
    /// afresh (it holds nothing the files do not).
    pub fn open(path: &Path) -> Result<Self, IndexError> {
        let db = match crate::sled_open::open_contained(path) {
            Ok(Ok(db)) => db,
            // Another process has it open (a UI keeps it): never removed, the files are read
            // instead.
            Ok(Err(sled::Error::Io(io))) if io.to_string().contains("could not acquire lock") => {
                return Err(IndexError::Db {
                    path: path.display().to_string(),
                    message: "in use by another ongraph".into(),
                });
            }
            damaged => {
                tracing::warn!(index = %path.display(), ?damaged, "the impact index could not be opened: rebuilt");
                let _ = std::fs::remove_dir_all(path);
                match crate::sled_open::open_contained(path) {
                    Ok(Ok(db)) => db,
                    Ok(Err(e)) => return Err(db_error(path, e)),
                    Err(()) => {
                        return Err(IndexError::Db {
                            path: path.display().to_string(),
                            message: "cannot be made".into(),
                        });
                    }
                }
            }
        };
        let tree = |name: &str| db.open_tree(name).map_err(|e| db_error(path, e));
        Ok(Self {
            path: path.to_path_buf(),
            files: tree("files")?,
            runs: tree("runs")?,
            postings: tree("postings")?,
            db,
        })
    }

    /// Brings the index up to date with the files under `places` (reading again those that
    /// changed since): the runs they keep.
    pub fn refresh(&self, places: &[PathBuf]) -> Result<Listing, IndexError> {
        let mut listing = Listing { runs: BTreeMap::new(), skipped: Vec::new() };
        for file in kept::files(places) {
            // One entry per file, however it is reached.
            let key = std::fs::canonicalize(&file).unwrap_or_else(|_| file.clone()).to_string_lossy().into_owned();
            let now = stamp(&file);
            let known: Option<FileEntry> = self.get_json(&self.files, key.as_bytes())?;
            let entry = match known {
                Some(entry) if Some(entry.stamp) == now => entry,
                old => {
                    if let Some(old) = old {
                        self.forget(&old)?;
                    }
                    let entry = self.add(&file, now)?;
                    self.put_json(&self.files, key.as_bytes(), &entry)?;
                    entry
                }
            };
            listing.runs.extend(entry.runs.iter().map(|(id, kg)| (*id, (kg.clone(), file.clone()))));
            if let Some(why) = entry.skipped {
                listing.skipped.push(Skipped { file, why });
            }
        }
        self.db.flush().map_err(|e| db_error(&self.path, e))?;
        Ok(listing)
    }

    /// The runs of `listing` that `op` touches, with how (see [`touch`]).
    pub fn touched(
        &self,
        op: &Op,
        former: &[String],
        listing: &Listing,
    ) -> Result<Vec<(KeptRun, super::Touch)>, IndexError> {
        let mut ids = BTreeSet::new();
        for entity in entities(op) {
            ids.extend(self.posting(&key(b'e', entity))?);
        }
        for label in labels(op).into_iter().chain(former.iter().map(String::as_str)) {
            let wanted = label.trim().to_lowercase();
            for item in self.postings.scan_prefix(b"s\0") {
                let (k, v) = item.map_err(|e| db_error(&self.path, e))?;
                let searched = String::from_utf8_lossy(&k[2..]);
                if wanted == searched || name_similarity(label, &searched) >= CLOSE_NAME_MIN {
                    ids.extend(decode(&v));
                }
            }
        }
        let mut out = Vec::new();
        for (id, (_, file)) in ids.into_iter().filter_map(|id| listing.runs.get(&id).map(|at| (id, at))) {
            let Some(mut run) = self.get_json::<KeptRun>(&self.runs, &id.to_be_bytes())? else { continue };
            // Shown as the user named it this time.
            run.file = file.clone();
            if let Some(how) = touch_named(op, &run.footprint, former) {
                out.push((run, how));
            }
        }
        Ok(out)
    }

    /// Reads `file` and indexes its runs.
    fn add(&self, file: &Path, stamp: Option<Stamp>) -> Result<FileEntry, IndexError> {
        let (runs, skipped) = kept::read_file(file);
        let mut postings: BTreeMap<Vec<u8>, Vec<u64>> = BTreeMap::new();
        let mut ids = Vec::with_capacity(runs.len());
        // One batch per tree: a file of thousands of records is a few writes, not thousands.
        let mut batch = sled::Batch::default();
        for run in &runs {
            let id = self.db.generate_id().map_err(|e| db_error(&self.path, e))?;
            for k in keys(run) {
                postings.entry(k).or_default().push(id);
            }
            batch.insert(&id.to_be_bytes(), self.json(run)?);
            ids.push((id, run.kg.clone()));
        }
        self.runs.apply_batch(batch).map_err(|e| db_error(&self.path, e))?;
        let mut batch = sled::Batch::default();
        for (k, add) in postings {
            let mut all = self.posting(&k)?;
            all.extend(add);
            all.sort_unstable();
            all.dedup();
            batch.insert(k, encode(&all));
        }
        // Only this process writes the index while it refreshes (sled holds it alone).
        self.postings.apply_batch(batch).map_err(|e| db_error(&self.path, e))?;
        // A file gone since it was listed has no stamp: it is read again next time.
        Ok(FileEntry { stamp: stamp.unwrap_or(Stamp { len: 0, modified_ns: 0 }), runs: ids, skipped })
    }

    /// Removes a file's runs and their postings.
    fn forget(&self, entry: &FileEntry) -> Result<(), IndexError> {
        for (id, _) in &entry.runs {
            let Some(run) = self.get_json::<KeptRun>(&self.runs, &id.to_be_bytes())? else { continue };
            for k in keys(&run) {
                self.postings
                    .update_and_fetch(&k, |old| {
                        let kept: Vec<u64> =
                            old.map(decode).unwrap_or_default().into_iter().filter(|i| i != id).collect();
                        (!kept.is_empty()).then(|| encode(&kept))
                    })
                    .map_err(|e| db_error(&self.path, e))?;
            }
            self.runs.remove(id.to_be_bytes()).map_err(|e| db_error(&self.path, e))?;
        }
        Ok(())
    }

    fn posting(&self, k: &[u8]) -> Result<Vec<u64>, IndexError> {
        Ok(self.postings.get(k).map_err(|e| db_error(&self.path, e))?.map(|v| decode(&v)).unwrap_or_default())
    }

    fn get_json<T: for<'de> Deserialize<'de>>(&self, tree: &sled::Tree, k: &[u8]) -> Result<Option<T>, IndexError> {
        match tree.get(k).map_err(|e| db_error(&self.path, e))? {
            None => Ok(None),
            // An entry this build cannot read is as good as absent: the file is read again.
            Some(v) => Ok(serde_json::from_slice(&v).ok()),
        }
    }

    fn put_json<T: Serialize>(&self, tree: &sled::Tree, k: &[u8], value: &T) -> Result<(), IndexError> {
        tree.insert(k, self.json(value)?).map_err(|e| db_error(&self.path, e))?;
        Ok(())
    }

    fn json<T: Serialize>(&self, value: &T) -> Result<Vec<u8>, IndexError> {
        serde_json::to_vec(value)
            .map_err(|e| IndexError::Db { path: self.path.display().to_string(), message: e.to_string() })
    }
}

fn db_error(path: &Path, e: sled::Error) -> IndexError {
    IndexError::Db { path: path.display().to_string(), message: e.to_string() }
}

fn key(kind: u8, text: &str) -> Vec<u8> {
    let mut k = vec![kind, 0];
    k.extend_from_slice(text.as_bytes());
    k
}

/// The posting keys of a run: every entity it touched, every name it searched.
fn keys(run: &KeptRun) -> BTreeSet<Vec<u8>> {
    let f = &run.footprint;
    f.entities().map(|e| key(b'e', e)).chain(f.searched.iter().map(|s| key(b's', s))).collect()
}

/// The entities whose postings hold every run `op` may touch.
fn entities(op: &Op) -> Vec<&str> {
    fn entity(t: &Term) -> Option<&str> {
        match t {
            Term::Entity(e) => Some(e.as_str()),
            Term::Literal(_) => None,
        }
    }
    match op {
        Op::Retract { subject, object, .. } | Op::Assert { subject, object, .. } => {
            [Some(subject.as_str()), entity(object)].into_iter().flatten().collect()
        }
        Op::Relabel { entity, .. } => vec![entity.as_str()],
        Op::Replace { subject, old, new, .. } => {
            [Some(subject.as_str()), entity(old), entity(new)].into_iter().flatten().collect()
        }
    }
}

/// The names `op` gives: a search for a close one may now find another entity.
fn labels(op: &Op) -> Vec<&str> {
    match op {
        Op::Relabel { label, .. } => vec![label.as_str()],
        Op::Retract { object: Term::Literal(l), .. } | Op::Assert { object: Term::Literal(l), .. } => vec![l.as_str()],
        Op::Replace { old, new, label, .. } => [old, new]
            .into_iter()
            .filter_map(|t| match t {
                Term::Literal(l) => Some(l.as_str()),
                Term::Entity(_) => None,
            })
            .chain(label.as_deref())
            .collect(),
        _ => Vec::new(),
    }
}

fn encode(ids: &[u64]) -> Vec<u8> {
    ids.iter().flat_map(|i| i.to_be_bytes()).collect()
}

fn decode(bytes: &[u8]) -> Vec<u64> {
    bytes.chunks_exact(8).map(|c| u64::from_be_bytes([c[0], c[1], c[2], c[3], c[4], c[5], c[6], c[7]])).collect()
}
