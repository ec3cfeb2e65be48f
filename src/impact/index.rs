//! An index from facts to the kept runs that read them, in one file beside the correction
//! store, so a correction's impact over thousands of kept runs is a few lookups, not a read of
//! every file.
//!
//! It is derived data. Each file's entry carries the file's size and modification time; a file
//! that changed (a session saved again, records appended) is read again when next asked, and an
//! index file that cannot be read (damaged, torn, another layout) is rebuilt from the files.
//! It is written whole to a temporary file renamed over the old one: a reader never sees half
//! of it, and two processes never wait for each other (the last to write wins; both wrote what
//! the files hold). It keeps where each run is, not the run: a touched run is read back from
//! its file (an eval record by its byte offset), so opening the index reads postings only.

use super::codec::{Reader, Writer};
use super::kept::{self, KeptRun};
use super::{Skipped, touch_named};
use crate::kg::{CLOSE_NAME_MIN, Term, name_similarity};
use crate::overlay::Op;
use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

/// The index, read into memory.
pub struct Index {
    path: PathBuf,
    /// By the file's canonical path.
    files: BTreeMap<String, FileIndex>,
    /// Changed since read: written back by [`Index::refresh`].
    changed: bool,
}

/// What the index knows of one file.
#[derive(Debug, Default, PartialEq)]
struct FileIndex {
    stamp: Stamp,
    /// The KG its runs ran on (a session's; an eval run's, from its run.json).
    kg: String,
    /// Where each run is in the file (see [`kept::read_run`]).
    runs: Vec<u64>,
    /// Entity → the runs that touched it; searched name → the runs that searched it (positions
    /// in `runs`).
    entities: BTreeMap<String, Vec<u32>>,
    searched: BTreeMap<String, Vec<u32>>,
    /// Why some or all of it could not be read.
    skipped: Option<String>,
}

/// A file as it was read: a change to any part means it is read again.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
struct Stamp {
    len: u64,
    modified_ns: u64,
    /// An eval run's run.json (which says its KG), modified: 0 when none.
    meta_ns: u64,
}

fn stamp(path: &Path) -> Option<Stamp> {
    let modified = |meta: &std::fs::Metadata| {
        let at = meta.modified().ok()?.duration_since(std::time::UNIX_EPOCH).ok()?;
        Some(u64::try_from(at.as_nanos()).unwrap_or(u64::MAX))
    };
    let meta = std::fs::metadata(path).ok()?;
    let meta_ns = match path.file_name().is_some_and(|n| n == "records.jsonl") {
        true => std::fs::metadata(path.with_file_name("run.json")).ok().and_then(|m| modified(&m)).unwrap_or(0),
        false => 0,
    };
    Some(Stamp { len: meta.len(), modified_ns: modified(&meta)?, meta_ns })
}

/// The kept runs under the places asked about: their files, as the index has them.
pub struct Listing {
    /// Canonical path (the index's key) and the path as found under the places asked about.
    files: Vec<(String, PathBuf)>,
    pub skipped: Vec<Skipped>,
}

impl Index {
    /// Reads the index at `path`. A missing one is empty; one that cannot be read is rebuilt as
    /// it is refreshed (it holds nothing the files do not).
    pub fn open(path: &Path) -> Self {
        // Earlier versions kept a sled database here, a directory: derived data, as this is.
        if path.join("conf").is_file() && path.join("db").is_file() {
            let _ = std::fs::remove_dir_all(path);
        }
        let files = match std::fs::read(path) {
            Ok(bytes) => decode(&bytes).unwrap_or_else(|| {
                tracing::warn!(index = %path.display(), "the impact index could not be read: rebuilt");
                BTreeMap::new()
            }),
            Err(e) => {
                if e.kind() != std::io::ErrorKind::NotFound {
                    tracing::warn!(index = %path.display(), "the impact index could not be read ({e}): rebuilt");
                }
                BTreeMap::new()
            }
        };
        Self { path: path.to_path_buf(), files, changed: false }
    }

    /// Brings the index up to date with the files under `places` (reading again those that
    /// changed), writes it back if anything changed, and lists them.
    pub fn refresh(&mut self, places: &[PathBuf]) -> Listing {
        let mut listing = Listing { files: Vec::new(), skipped: Vec::new() };
        let mut seen = BTreeSet::new();
        for file in kept::files(places) {
            let key = self.note(&file);
            if !seen.insert(key.clone()) {
                continue;
            }
            if let Some(why) = self.files.get(&key).and_then(|f| f.skipped.clone()) {
                listing.skipped.push(Skipped { file: file.clone(), why });
            }
            listing.files.push((key, file));
        }
        // Files deleted since: their entries would only grow the index.
        let before = self.files.len();
        self.files.retain(|key, _| Path::new(key).exists());
        self.changed |= self.files.len() != before;
        self.save();
        listing
    }

    /// Brings one file's entry up to date (a session just saved, a run's records): its key.
    pub fn note(&mut self, file: &Path) -> String {
        // One entry per file, however it is reached.
        let key = std::fs::canonicalize(file).unwrap_or_else(|_| file.to_path_buf()).to_string_lossy().into_owned();
        let now = stamp(file);
        if now.is_none() || self.files.get(&key).map(|f| f.stamp) != now {
            // A file gone since it was listed has no stamp: it is read again next time.
            let entry = index_file(file, now.unwrap_or_default());
            self.files.insert(key.clone(), entry);
            self.changed = true;
        }
        key
    }

    /// Writes the index back if it changed: to a temporary file renamed over the old one. A
    /// failure is logged, not fatal: the index is only ever a shortcut.
    pub fn save(&mut self) {
        if !self.changed {
            return;
        }
        // Unique to this write: two threads of one process may save at once.
        static WRITES: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
        let n = WRITES.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let tmp = self.path.with_extension(format!("tmp.{}.{n}", std::process::id()));
        let written = self
            .path
            .parent()
            .map_or(Ok(()), std::fs::create_dir_all)
            .and_then(|()| std::fs::write(&tmp, encode(&self.files)))
            .and_then(|()| std::fs::rename(&tmp, &self.path));
        match written {
            Ok(()) => self.changed = false,
            Err(e) => {
                let _ = std::fs::remove_file(&tmp);
                tracing::warn!(index = %self.path.display(), "the impact index could not be written: {e}");
            }
        }
    }

    /// How many runs of `listing` are on a KG `ours` accepts, and how many are not.
    pub fn counts(&self, listing: &Listing, ours: impl Fn(&str) -> bool) -> (usize, usize) {
        let (mut mine, mut others) = (0, 0);
        for f in listing.files.iter().filter_map(|(key, _)| self.files.get(key)) {
            if ours(&f.kg) { mine += f.runs.len() } else { others += f.runs.len() }
        }
        (mine, others)
    }

    /// The runs of `listing` on a KG `ours` accepts that `op` touches, with how (see
    /// [`touch_named`]). A run its file no longer holds as indexed is logged and left out: the
    /// file changed since the refresh, and the next one reads it again.
    pub fn touched(
        &self,
        op: &Op,
        former: &[String],
        listing: &Listing,
        ours: impl Fn(&str) -> bool,
    ) -> Vec<(KeptRun, super::Touch)> {
        let names: Vec<String> =
            labels(op).into_iter().chain(former.iter().map(String::as_str)).map(str::to_string).collect();
        let mut out = Vec::new();
        for (key, shown) in &listing.files {
            let Some(f) = self.files.get(key).filter(|f| ours(&f.kg)) else { continue };
            let mut at: BTreeSet<u32> = BTreeSet::new();
            for entity in entities(op) {
                at.extend(f.entities.get(entity).into_iter().flatten().copied());
            }
            for name in &names {
                let wanted = name.trim().to_lowercase();
                for (searched, runs) in &f.searched {
                    if wanted == *searched || name_similarity(name, searched) >= CLOSE_NAME_MIN {
                        at.extend(runs.iter().copied());
                    }
                }
            }
            let locators: Vec<u64> = at.into_iter().filter_map(|i| f.runs.get(i as usize).copied()).collect();
            if locators.is_empty() {
                continue;
            }
            // Changed since the refresh (an eval resumed meanwhile): its offsets may be stale,
            // so the file is read whole and every run of it checked.
            let runs = if stamp(shown) == Some(f.stamp) {
                kept::read_runs(shown, &f.kg, &locators)
            } else {
                kept::read_file(shown).0.into_iter().map(Ok).collect()
            };
            for run in runs {
                match run {
                    Ok(run) => {
                        if let Some(how) = touch_named(op, &run.footprint, former) {
                            out.push((run, how));
                        }
                    }
                    Err(e) => tracing::warn!(file = %shown.display(), "a run the index lists could not be read: {e}"),
                }
            }
        }
        out
    }
}

/// Reads `file` and indexes its runs.
fn index_file(file: &Path, stamp: Stamp) -> FileIndex {
    let (runs, skipped) = kept::read_located(file);
    let mut entry = FileIndex { stamp, skipped, ..FileIndex::default() };
    for (i, (locator, run)) in runs.iter().enumerate() {
        let i = u32::try_from(i).unwrap_or(u32::MAX);
        let f = &run.footprint;
        for entity in f.entities().collect::<BTreeSet<_>>() {
            entry.entities.entry(entity.to_string()).or_default().push(i);
        }
        for name in &f.searched {
            entry.searched.entry(name.clone()).or_default().push(i);
        }
        entry.runs.push(*locator);
        entry.kg.clone_from(&run.kg);
    }
    entry
}

fn encode(files: &BTreeMap<String, FileIndex>) -> Vec<u8> {
    let mut w = Writer::new();
    w.len(files.len());
    for (key, f) in files {
        w.str(key);
        w.u64(f.stamp.len);
        w.u64(f.stamp.modified_ns);
        w.u64(f.stamp.meta_ns);
        w.str(&f.kg);
        w.str(f.skipped.as_deref().unwrap_or(""));
        w.len(f.runs.len());
        for locator in &f.runs {
            w.u64(*locator);
        }
        for postings in [&f.entities, &f.searched] {
            w.len(postings.len());
            for (name, runs) in postings {
                w.str(name);
                w.len(runs.len());
                for i in runs {
                    w.u32(*i);
                }
            }
        }
    }
    w.finish()
}

fn decode(bytes: &[u8]) -> Option<BTreeMap<String, FileIndex>> {
    let mut r = Reader::open(bytes)?;
    let mut files = BTreeMap::new();
    for _ in 0..r.len(48)? {
        let key = r.str()?.to_string();
        let stamp = Stamp { len: r.u64()?, modified_ns: r.u64()?, meta_ns: r.u64()? };
        let kg = r.str()?.to_string();
        let skipped = Some(r.str()?.to_string()).filter(|s| !s.is_empty());
        let runs = (0..r.len(8)?).map(|_| r.u64()).collect::<Option<Vec<_>>>()?;
        let mut postings = || -> Option<BTreeMap<String, Vec<u32>>> {
            let n = r.len(8)?;
            let mut map = BTreeMap::new();
            for _ in 0..n {
                let name = r.str()?.to_string();
                let ids = (0..r.len(4)?).map(|_| r.u32()).collect::<Option<Vec<_>>>()?;
                map.insert(name, ids);
            }
            Some(map)
        };
        let entities = postings()?;
        let searched = postings()?;
        files.insert(key, FileIndex { stamp, kg, runs, entities, searched, skipped });
    }
    r.is_done().then_some(files)
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_index_reads_back_as_written() {
        let mut files = BTreeMap::new();
        files.insert(
            "/runs/records.jsonl".to_string(),
            FileIndex {
                stamp: Stamp { len: 10, modified_ns: 7, meta_ns: 3 },
                kg: "2H-kb.txt".into(),
                runs: vec![0, 812],
                entities: BTreeMap::from([("phillies".into(), vec![0, 1]), ("cbp".into(), vec![1])]),
                searched: BTreeMap::from([("phillie phanatic".into(), vec![0])]),
                skipped: Some("1 of its records were written before".into()),
            },
        );
        files.insert("/sessions/empty.json".to_string(), FileIndex::default());
        let bytes = encode(&files);
        assert_eq!(decode(&bytes), Some(files));
        assert_eq!(decode(&bytes[..bytes.len() - 3]), None);
    }
}
