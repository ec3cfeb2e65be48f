//! Where corrections live: a small store trait with a versioned record format, and its sled
//! implementation. Every write is flushed to disk before it returns, so a correction that was
//! acknowledged survives a crash. Its side of team sharing (the queue, the records known from
//! the server, reviews) is in `team`.

mod salvage;
mod sharing;

pub use salvage::salvage;
pub use sharing::Aside;

use super::team_record::Record as TeamRecord;
use super::{Correction, Draft, HistoryEntry, Op, TeamLink};
use crate::sled_open::open_contained;
use serde::{Deserialize, Serialize};
use std::path::{Path, PathBuf};

#[derive(Debug, thiserror::Error)]
pub enum StoreError {
    #[error("the correction store at {path} is in use by another ongraph process; close it and retry")]
    Locked { path: String },
    /// sled's own recovery may have rewritten the damaged files while opening them, so a copy
    /// taken just before is kept ([`before_damage`]), and salvage reads it too: the advice saves
    /// what can be read before anything is moved.
    #[error(
        "the correction store at {path} is damaged ({detail}); its files as they were before this command opened them are kept (a copy beside it, or the store itself, left unopened, when no copy could be made): save every correction that can still be read with `ongraph fix export --salvage > saved.jsonl` (per --kg; it reads both), then move the store aside and `ongraph fix import saved.jsonl`"
    )]
    Corrupt { path: String, detail: String },
    #[error("the correction store at {path}: {detail}")]
    Io { path: String, detail: String },
    #[error(
        "the disk holding the correction store at {path} is full: free some space to make corrections (those stored are intact)"
    )]
    DiskFull { path: String },
    #[error(
        "the correction store at {path} is not yours to write (permission denied): its corrections still apply; to make corrections, give `overlay` in [defaults] a store of your own"
    )]
    ReadOnly { path: String },
    #[error(
        "no copy of the correction store at {path} can be made beside it (the directory holding it is not writable, or its disk is full), and it is opened only with one: its corrections still apply, new ones can be made once there is room or permission there"
    )]
    NoCopy { path: String },
    #[error("no correction {id} for knowledge graph {kg:?}")]
    UnknownId { kg: String, id: u64 },
    #[error("correction {id} is already undone")]
    AlreadyUndone { id: u64 },
    #[error("correction {id} is not in conflict with another: undo it instead (fix undo {id})")]
    NoConflict { id: u64 },
    #[error("correction {id} is not a teammate's shared correction: there is nothing to review")]
    NotShared { id: u64 },
    #[error("correction {id} is your own: a teammate reviews it")]
    OwnCorrection { id: u64 },
    #[error("correction {id} is already {verdict} by you")]
    AlreadyReviewed { id: u64, verdict: &'static str },
    #[error(
        "correction record {key} was written in format v{version}, which this ongraph does not read (it reads v1 to v{CURRENT_VERSION})"
    )]
    Version { key: String, version: u32 },
}

/// The newest record format version this build reads and writes. v2 added [`Op::Replace`];
/// a record is written in the oldest version that holds it, so a store without replaces
/// stays readable by builds that read only v1, and one with them is refused by those builds
/// as a newer format (not as a corrupt store). A correction's `generated` mark needs no new
/// version: a build that does not know it ignores it and goes by the reason, as it always
/// did (an accepted triple's reason is still [`super::generated_reason`]).
pub const CURRENT_VERSION: u32 = 2;

/// The oldest record format that can hold `op`.
fn version_for(op: &Op) -> u32 {
    match op {
        Op::Replace { .. } => 2,
        Op::Retract { .. } | Op::Assert { .. } | Op::Relabel { .. } => 1,
    }
}

/// What is stored per correction: the format version and the correction.
#[derive(Serialize, Deserialize)]
struct Record {
    v: u32,
    correction: Correction,
}

/// Persistent corrections, scoped per knowledge graph.
pub trait CorrectionStore: Send + Sync {
    /// Records a new, active correction; durable when this returns.
    fn add(&self, kg: &str, draft: Draft) -> Result<Correction, StoreError>;
    /// Marks a correction inactive (its history keeps the undo); durable when this returns.
    fn undo(&self, kg: &str, id: u64) -> Result<Correction, StoreError>;
    /// Every correction for `kg`, active or not, oldest first.
    fn list(&self, kg: &str) -> Result<Vec<Correction>, StoreError>;
}

pub struct SledStore {
    db: sled::Db,
    path: PathBuf,
    /// A copy opened for reading (the store cannot be opened for writing), and why: removed on
    /// drop, never written.
    copy: Option<(PathBuf, ReadCopy)>,
    /// Writes made so far (also stored in the db, atomically with each record).
    generation: std::sync::atomic::AtomicU64,
    /// Who writes: recorded on the undo and supersede records this store queues.
    author: String,
    /// Unfinished snapshots set aside to open it (see [`set_aside_unfinished_snapshots`]).
    set_aside: Vec<String>,
    /// Where a damaged store's copy found beside this one, which opened whole, was renamed.
    stale_copy: Option<PathBuf>,
}

/// sled recovers a damaged log by stopping at the damage, silently: a store could lose
/// corrections and still open. So every acknowledged write bumps a generation counter, kept
/// both in the db (atomically with the record) and, after the flush, in this small file beside
/// it; a db that holds fewer writes than were acknowledged is reported, never used.
const ACK_FILE: &str = "acknowledged";
/// Where the next value of [`ACK_FILE`] is written before it is renamed over it, so a reader
/// never sees a half-written counter.
const ACK_NEXT: &str = "acknowledged.next";

/// The store's generation (how many writes it has acknowledged), read from the small file
/// beside the database without opening it: cheap enough to check before every step whether
/// another process changed the corrections. 0 when there is no store yet.
pub fn acknowledged(path: &Path) -> Result<u64, StoreError> {
    match std::fs::read(path.join(ACK_FILE)) {
        Ok(bytes) => Ok(read_u64(Some(&bytes))),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(0),
        Err(e) => Err(StoreError::Io { path: path.display().to_string(), detail: e.to_string() }),
    }
}

impl SledStore {
    /// Opens (creating if needed) the store at `path`. Another process holding it open for
    /// more than two seconds is a clear error, as is a damaged database.
    pub fn open(path: &Path) -> Result<Self, StoreError> {
        let shown = path.display().to_string();
        if let Some(parent) = path.parent() {
            std::fs::create_dir_all(parent)
                .map_err(|e| StoreError::Io { path: shown.clone(), detail: e.to_string() })?;
        }
        // Another ongraph process holds the store only for milliseconds, and sled's background
        // threads let go of the lock a moment after this process's last handle is dropped:
        // both are waited for, two seconds at most, before the store is said to be in use.
        // sled recovers a damaged file by rewriting it as it opens: what salvage could have
        // read would be gone by the time the damage is known. So the files are copied first
        // (a store is small) and the copy kept only if the store turns out damaged.
        let before = match copy_before_open(path) {
            Ok(before) => before,
            // Without a copy, sled's recovery of a damaged store could destroy what salvage
            // would read: the store is not opened in place, only read through a copy elsewhere
            // (its corrections still apply; new ones wait until a copy can be made beside it).
            Err(io) => {
                tracing::warn!("cannot copy the correction store beside it before opening it: {io}");
                let why =
                    if io.kind() == std::io::ErrorKind::StorageFull { ReadCopy::DiskFull } else { ReadCopy::NoCopy };
                return Self::read_copy(path, why);
            }
        };
        let opened = Self::open_checked(path, &shown);
        if let Some(copy) = before {
            match &opened {
                Err(StoreError::Corrupt { .. }) => {
                    let target = before_damage(path);
                    if target.exists() {
                        // The first command to find the damage kept the store as it was; by
                        // now sled's recovery may have rewritten it, so this copy is worth less
                        // and never replaces that one.
                        let _ = std::fs::remove_dir_all(&copy);
                    } else if let Err(io) = std::fs::rename(&copy, &target) {
                        tracing::warn!("cannot keep the copy of the damaged store at {}: {io}", target.display());
                    }
                }
                _ => {
                    let _ = std::fs::remove_dir_all(&copy);
                }
            }
        }
        let mut opened = opened;
        if let Ok(store) = &mut opened {
            store.stale_copy = retire_stale_copy(path);
        }
        opened
    }

    /// [`SledStore::open`] without the copy taken before.
    fn open_checked(path: &Path, shown: &str) -> Result<Self, StoreError> {
        let shown = shown.to_string();
        let mut waited = 0;
        let mut set_aside = Vec::new();
        let mut tried_aside = false;
        let db = loop {
            let opened = open_contained(path)
                .map_err(|()| StoreError::Corrupt { path: shown.clone(), detail: "the database cannot be read".into() })
                .and_then(|o| o.map_err(|e| classify(&shown, e)));
            match opened {
                Err(StoreError::Locked { .. }) if waited < 80 => {
                    waited += 1;
                    std::thread::sleep(std::time::Duration::from_millis(25));
                }
                // sled took the lock before it read anything: no other process is writing a
                // snapshot now, so one still being generated is a crashed run's leftover.
                Err(e @ StoreError::Corrupt { .. }) if !tried_aside => {
                    tried_aside = true;
                    set_aside = crate::sled_open::set_aside_unfinished_snapshots(path)
                        .map_err(|io| StoreError::Io { path: shown.clone(), detail: io.to_string() })?;
                    if set_aside.is_empty() {
                        return Err(e);
                    }
                }
                other => break other?,
            }
        };
        let on_disk = read_u64(db.get(GENERATION).map_err(|e| classify(&shown, e))?.as_deref());
        let acknowledged = acknowledged(path).unwrap_or(0);
        if on_disk < acknowledged {
            return Err(StoreError::Corrupt {
                path: shown,
                detail: format!(
                    "{acknowledged} writes were acknowledged but only {on_disk} are on disk: corrections were lost"
                ),
            });
        }
        // A write whose note did not make it (a full disk, a crash between the two): catch up,
        // so other processes see it.
        if on_disk > acknowledged
            && let Err(e) = write_ack(path, on_disk)
        {
            tracing::warn!("cannot note the store's generation beside it: {e}");
        }
        Ok(Self {
            db,
            path: path.to_path_buf(),
            copy: None,
            generation: std::sync::atomic::AtomicU64::new(on_disk),
            author: super::default_author(None),
            set_aside,
            stale_copy: None,
        })
    }

    /// What the user should know of how the store was opened, a line each: an unfinished
    /// snapshot (left by a crash) was set aside to open it; a damaged store's copy beside it
    /// was renamed, since this store opened whole.
    pub fn notices(&self) -> Vec<String> {
        let mut notes = Vec::new();
        if !self.set_aside.is_empty() {
            notes.push(format!(
                "note: the correction store at {} held an unfinished snapshot left by an interrupted run; it was set aside as {} and every correction is intact",
                self.path.display(),
                self.set_aside.join(", ")
            ));
        }
        if let Some(kept) = &self.stale_copy {
            notes.push(format!(
                "note: the copy of a damaged store beside {} is not of this store, which opened whole; it was renamed {} (delete it once you no longer need it)",
                self.path.display(),
                kept.display()
            ));
        }
        notes
    }

    /// Records `author` on the team records this store queues (undo, supersede).
    pub fn with_author(mut self, author: String) -> Self {
        self.author = author;
        self
    }

    /// Opens a copy of the store in the temporary directory, to read it when sled cannot open
    /// the store itself (opening writes): its disk is full, or it is not this user's to write.
    /// The copy refuses writes with `why`.
    pub fn read_copy(path: &Path, why: ReadCopy) -> Result<Self, StoreError> {
        let shown = path.display().to_string();
        let copy = private_dir_name();
        let opened = private_copy(path, &copy)
            // The temporary directory is often on the same full disk: then the first error says
            // what matters.
            .map_err(|_| why.error(&shown))
            // The copy is the safety copy: sled may rewrite it, the store stays as it is.
            .and_then(|()| Self::open_checked(&copy, &shown));
        match opened {
            Ok(mut store) => {
                store.path = path.to_path_buf();
                store.copy = Some((copy, why));
                // What was set aside was the copy's: the store itself is untouched.
                store.set_aside.clear();
                Ok(store)
            }
            Err(e) => {
                let _ = std::fs::remove_dir_all(&copy);
                Err(e)
            }
        }
    }

    fn err(&self, e: sled::Error) -> StoreError {
        classify(&self.path.display().to_string(), e)
    }

    /// Ids count up from 1 per store, so people can type them. The store is locked to one
    /// process, so reading and bumping the counter cannot race; a crash after the bump only
    /// skips an id that was never acknowledged.
    fn next_id(&self) -> Result<u64, StoreError> {
        let bumped = self
            .db
            .update_and_fetch(NEXT_ID, |old| {
                let n = read_u64(old);
                Some((n + 1).to_be_bytes().to_vec())
            })
            .map_err(|e| self.err(e))?;
        Ok(read_u64(bumped.as_deref()).max(1))
    }

    /// `n` new ids in one write, for a pull's many corrections: the first of them (the others
    /// follow it); nothing is written when `n` is 0.
    fn reserve_ids(&self, n: u64) -> Result<u64, StoreError> {
        if n == 0 {
            return Ok(1);
        }
        let bumped = self
            .db
            .update_and_fetch(NEXT_ID, |old| Some((read_u64(old) + n).to_be_bytes().to_vec()))
            .map_err(|e| self.err(e))?;
        Ok(read_u64(bumped.as_deref()) + 1 - n)
    }

    fn put(&self, correction: &Correction) -> Result<(), StoreError> {
        let mut batch = sled::Batch::default();
        self.stage(&mut batch, correction)?;
        self.commit(batch)
    }

    /// Adds `correction` to `batch`, in the oldest format that holds it.
    fn stage(&self, batch: &mut sled::Batch, correction: &Correction) -> Result<(), StoreError> {
        let record = Record { v: version_for(&correction.op), correction: correction.clone() };
        batch.insert(key(&correction.kg, correction.id), self.json(&record)?);
        Ok(())
    }

    fn json(&self, value: &impl Serialize) -> Result<Vec<u8>, StoreError> {
        serde_json::to_vec(value)
            .map_err(|e| StoreError::Io { path: self.path.display().to_string(), detail: e.to_string() })
    }

    /// Writes `batch` as one write (all of it or none), durable when this returns.
    fn commit(&self, mut batch: sled::Batch) -> Result<(), StoreError> {
        if let Some((_, why)) = &self.copy {
            return Err(why.error(&self.path.display().to_string()));
        }
        let generation = self.generation.fetch_add(1, std::sync::atomic::Ordering::SeqCst) + 1;
        batch.insert(GENERATION, generation.to_be_bytes().to_vec());
        self.db.apply_batch(batch).map_err(|e| self.err(e))?;
        // Not durable until flushed: only then may the caller be told it is done.
        self.db.flush().map_err(|e| self.err(e))?;
        // The record is durable now: a failure to note it beside the db must not report it
        // lost (the user would make it twice). The note catches up at the next open or write.
        if let Err(e) = write_ack(&self.path, generation) {
            tracing::warn!("the correction is stored, but its generation could not be noted beside the store: {e}");
        }
        Ok(())
    }

    /// The correction with id `id`, whichever KG it is stored under (ids are the store's, not
    /// a KG's). One pass over the records: a command that names an id runs it once.
    pub fn find(&self, id: u64) -> Result<Option<Correction>, StoreError> {
        let wanted = id.to_be_bytes();
        for item in self.db.iter() {
            let (k, v) = item.map_err(|e| self.err(e))?;
            // A record's key is `scope NUL id`; the counters and team keys start with 0xff.
            let is_it = k.first() != Some(&0xff) && k.len() >= 9 && k[k.len() - 9] == 0 && k[k.len() - 8..] == wanted;
            if is_it {
                return self.read(&k, &v).map(Some);
            }
        }
        Ok(None)
    }

    fn read(&self, k: &[u8], bytes: &[u8]) -> Result<Correction, StoreError> {
        let shown = String::from_utf8_lossy(k).replace('\0', "#");
        #[derive(Deserialize)]
        struct Version {
            v: u32,
        }
        let version: Version = serde_json::from_slice(bytes).map_err(|e| StoreError::Corrupt {
            path: self.path.display().to_string(),
            detail: format!("record {shown}: {e}"),
        })?;
        if !(1..=CURRENT_VERSION).contains(&version.v) {
            return Err(StoreError::Version { key: shown, version: version.v });
        }
        let record: Record = serde_json::from_slice(bytes).map_err(|e| StoreError::Corrupt {
            path: self.path.display().to_string(),
            detail: format!("record {shown}: {e}"),
        })?;
        Ok(record.correction)
    }
}

/// The counters' keys start with a byte no scope name (UTF-8) can start with.
const NEXT_ID: &[u8] = b"\xffnext_id";
const GENERATION: &[u8] = b"\xffgeneration";

/// A big-endian u64 counter; missing or malformed counts as 0.
/// Notes `generation` in the file beside the db: written aside and renamed over the old value,
/// so other processes, which read it at any time, never see half of it.
fn write_ack(dir: &Path, generation: u64) -> std::io::Result<()> {
    let next = dir.join(ACK_NEXT);
    let mut ack = std::fs::File::create(&next)?;
    std::io::Write::write_all(&mut ack, &generation.to_be_bytes())?;
    ack.sync_all()?;
    std::fs::rename(&next, dir.join(ACK_FILE))?;
    #[cfg(unix)]
    std::fs::File::open(dir).and_then(|d| d.sync_all())?;
    Ok(())
}

fn read_u64(bytes: Option<&[u8]>) -> u64 {
    bytes.and_then(|b| <[u8; 8]>::try_from(b).ok()).map(u64::from_be_bytes).unwrap_or(0)
}

/// `kg NUL id` with the id big-endian, so a scope's corrections sort by id.
fn key(kg: &str, id: u64) -> Vec<u8> {
    let mut k = Vec::with_capacity(kg.len() + 9);
    k.extend_from_slice(kg.as_bytes());
    k.push(0);
    k.extend_from_slice(&id.to_be_bytes());
    k
}

/// A new name in the temporary directory for a copy of the store.
fn private_dir_name() -> PathBuf {
    let nanos = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(0, |d| d.as_nanos());
    std::env::temp_dir().join(format!("ongraph-overlay-{}-{nanos}", std::process::id()))
}

/// Copies the store at `from` to `to`, a fresh directory only this user can read:
/// corrections are not for a shared /tmp.
fn private_copy(from: &Path, to: &Path) -> std::io::Result<()> {
    let mut dir = std::fs::DirBuilder::new();
    #[cfg(unix)]
    std::os::unix::fs::DirBuilderExt::mode(&mut dir, 0o700);
    dir.create(to)?;
    copy_dir(from, to)
}

/// Where a copy of a store taken before an open that found it damaged is kept: beside it.
pub fn before_damage(path: &Path) -> PathBuf {
    let name = path.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_else(|| "overlay".into());
    path.with_file_name(format!("{name}.before-damage"))
}

/// A damaged store's copy ([`before_damage`]) beside a store that opened whole is of a store
/// the user has since moved aside and replaced: salvage must not read it as this store's. It is
/// renamed out of salvage's way (not deleted: it may be the best copy of the old corrections);
/// returns its new name.
fn retire_stale_copy(path: &Path) -> Option<PathBuf> {
    let copy = before_damage(path);
    if !copy.is_dir() {
        return None;
    }
    let secs = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(0, |d| d.as_secs());
    let kept = copy.with_file_name(format!("{}.{secs}", copy.file_name()?.to_string_lossy()));
    match std::fs::rename(&copy, &kept) {
        Ok(()) => Some(kept),
        Err(io) => {
            tracing::warn!("cannot rename the stale copy {}: {io}", copy.display());
            None
        }
    }
}

/// A copy of the store's files taken before sled opens them, beside the store (this process's
/// own name); `None` when there is no store yet or it could not be copied (then the open goes
/// on without one: the copy guards salvage, it is not needed to open).
fn copy_before_open(path: &Path) -> std::io::Result<Option<PathBuf>> {
    if !path.join("db").is_file() {
        return Ok(None);
    }
    let name = path.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_else(|| "overlay".into());
    let copy = path.with_file_name(format!("{name}.opening-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&copy);
    match copy_dir(path, &copy) {
        Ok(()) => Ok(Some(copy)),
        Err(e) => {
            let _ = std::fs::remove_dir_all(&copy);
            Err(e)
        }
    }
}

/// Copies a store's directory tree (files and subdirectories).
fn copy_dir(from: &Path, to: &Path) -> std::io::Result<()> {
    std::fs::create_dir_all(to)?;
    let mut entries = std::fs::read_dir(from)?.collect::<std::io::Result<Vec<_>>>()?;
    // The count of acknowledged writes first: another process writing meanwhile then leaves
    // the copy's database ahead of its count, never behind it (which reads as lost writes).
    entries.sort_by_key(|e| e.file_name() != ACK_FILE);
    for entry in entries {
        let target = to.join(entry.file_name());
        if entry.file_type()?.is_dir() {
            copy_dir(&entry.path(), &target)?;
        } else {
            std::fs::copy(entry.path(), &target)?;
            // A read-only store (a backup, another user's) still gives a copy sled can open.
            #[cfg(unix)]
            {
                use std::os::unix::fs::PermissionsExt as _;
                let mode = std::fs::metadata(&target)?.permissions().mode();
                std::fs::set_permissions(&target, std::fs::Permissions::from_mode(mode | 0o600))?;
            }
        }
    }
    Ok(())
}

/// Why a store is read through a copy ([`SledStore::read_copy`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ReadCopy {
    DiskFull,
    ReadOnly,
    /// No copy could be made beside the store to open it safely (see [`SledStore::open`]).
    NoCopy,
}

impl ReadCopy {
    /// The copy's reason as the store's error, for `read_copy`'s failure and refused writes.
    fn error(self, path: &str) -> StoreError {
        let path = path.to_string();
        match self {
            Self::DiskFull => StoreError::DiskFull { path },
            Self::ReadOnly => StoreError::ReadOnly { path },
            Self::NoCopy => StoreError::NoCopy { path },
        }
    }

    /// Why `e` calls for a copy to read, if it does.
    pub fn of(e: &StoreError) -> Option<Self> {
        match e {
            StoreError::DiskFull { .. } => Some(Self::DiskFull),
            StoreError::ReadOnly { .. } => Some(Self::ReadOnly),
            _ => None,
        }
    }
}

impl Drop for SledStore {
    fn drop(&mut self) {
        if let Some((copy, _)) = &self.copy {
            let _ = std::fs::remove_dir_all(copy);
        }
    }
}

fn classify(path: &str, e: sled::Error) -> StoreError {
    match e {
        sled::Error::Io(io) if io.kind() == std::io::ErrorKind::StorageFull => {
            StoreError::DiskFull { path: path.to_string() }
        }
        sled::Error::Io(io)
            if matches!(io.kind(), std::io::ErrorKind::PermissionDenied | std::io::ErrorKind::ReadOnlyFilesystem) =>
        {
            StoreError::ReadOnly { path: path.to_string() }
        }
        sled::Error::Io(io) if io.to_string().contains("could not acquire lock") => {
            StoreError::Locked { path: path.to_string() }
        }
        sled::Error::Corruption { at: Some(at), .. } => StoreError::Corrupt {
            path: path.to_string(),
            detail: format!("sled cannot recover its files: damaged data at {at}"),
        },
        sled::Error::Corruption { at: None, .. } => {
            StoreError::Corrupt { path: path.to_string(), detail: "sled cannot recover its files".into() }
        }
        other => StoreError::Io { path: path.to_string(), detail: other.to_string() },
    }
}

/// A correction made here from `draft`, at `now`, active.
fn new_correction(id: u64, kg: &str, draft: Draft, now: String, team: Option<TeamLink>) -> Correction {
    Correction {
        id,
        kg: kg.to_string(),
        op: draft.op,
        reason: draft.reason,
        // Always said, so the reason never decides it (see `Correction::generated`).
        generated: Some(draft.generated),
        author: draft.author,
        created: now.clone(),
        active: true,
        context: draft.context,
        history: vec![HistoryEntry { at: now, what: draft.origin.unwrap_or_else(|| "created".into()) }],
        team,
    }
}

impl CorrectionStore for SledStore {
    fn add(&self, kg: &str, draft: Draft) -> Result<Correction, StoreError> {
        let id = self.next_id()?;
        let now = super::now();
        let correction = new_correction(id, kg, draft, now, None);
        self.put(&correction)?;
        Ok(correction)
    }

    /// Undoes a correction; one in a shared set is undone there too, by an undo record queued
    /// with it (in the same write).
    fn undo(&self, kg: &str, id: u64) -> Result<Correction, StoreError> {
        self.set_aside(kg, id, Aside::Undo, None)
    }

    fn list(&self, kg: &str) -> Result<Vec<Correction>, StoreError> {
        let mut prefix = kg.as_bytes().to_vec();
        prefix.push(0);
        self.db
            .scan_prefix(prefix)
            .map(|item| {
                let (k, v) = item.map_err(|e| self.err(e))?;
                self.read(&k, &v)
            })
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::overlay::Op;

    fn draft(label: &str) -> Draft {
        Draft {
            op: Op::Relabel { entity: "m.x".into(), label: label.into() },
            reason: "test".into(),
            generated: false,
            author: "t".into(),
            context: None,
            origin: None,
        }
    }

    /// A pull's corrections take the ids after the local ones, in one reservation, and the
    /// next local correction goes on after them; a pull of nothing new reserves nothing.
    #[test]
    fn pulled_corrections_take_the_next_ids_and_local_ones_follow() {
        let dir = tempfile::tempdir().unwrap();
        let store = SledStore::open(&dir.path().join("store")).unwrap();
        assert_eq!(store.add("demo", draft("local")).unwrap().id, 1);
        let record = |n: u32| TeamRecord {
            iri: format!("urn:uuid:0190a7d4-0000-7000-8000-00000000000{n}"),
            kind: super::super::team_record::Kind::Correction {
                op: Op::Relabel { entity: format!("m.e{n}"), label: format!("name {n}") },
            },
            kg: "demo".into(),
            author: "Bea".into(),
            created: format!("2026-11-25T10:00:0{n}.000Z"),
            reason: "r".into(),
            context: None,
            generated: false,
            based_on: None,
            agent: Some("another store".into()),
        };
        let set = "http://example.org/c";
        let now = "2026-11-25T11:00:00.000Z";
        assert_eq!(store.take_pulled(set, vec![record(1), record(2), record(3), record(2)], None, now).unwrap().new, 3);
        let mut ids: Vec<u64> = store.list("demo").unwrap().iter().map(|c| c.id).collect();
        ids.sort_unstable();
        assert_eq!(ids, [1, 2, 3, 4]);
        assert_eq!(store.take_pulled(set, vec![record(1)], None, now).unwrap().new, 0, "nothing new");
        assert_eq!(store.add("demo", draft("after")).unwrap().id, 5);
    }

    #[test]
    fn a_full_disk_is_named_as_such() {
        let full = sled::Error::Io(std::io::Error::from(std::io::ErrorKind::StorageFull));
        let err = classify("/s", full);
        assert!(matches!(err, StoreError::DiskFull { .. }), "{err}");
        assert!(err.to_string().contains("is full") && err.to_string().contains("intact"), "{err}");
    }

    #[test]
    fn a_store_no_copy_can_be_made_beside_is_never_opened_in_place() {
        // Found by an adversarial pass: with no copy (a read-only parent, a full disk), sled's
        // recovery rewrote a damaged store, and salvage then found 6 corrections of 30.
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("overlay");
        {
            let store = SledStore::open(&path).unwrap();
            store.add("demo", draft("one")).unwrap();
        }
        // Every file under the store, subdirectories (sled's blobs) too.
        fn under(dir: &Path, all: &mut Vec<(PathBuf, Vec<u8>)>) {
            for entry in std::fs::read_dir(dir).unwrap().filter_map(Result::ok) {
                if entry.path().is_dir() {
                    under(&entry.path(), all);
                } else {
                    all.push((entry.path(), std::fs::read(entry.path()).unwrap()));
                }
            }
        }
        let files = || {
            let mut all = Vec::new();
            under(&path, &mut all);
            all.sort();
            all
        };
        // A file where the copy would go: no copy can be made beside the store.
        let blocked = dir.path().join(format!("overlay.opening-{}", std::process::id()));
        std::fs::write(&blocked, "in the way").unwrap();
        let before = files();
        let store = SledStore::open(&path).unwrap();
        assert_eq!(store.list("demo").unwrap().len(), 1, "its corrections are read");
        let err = store.add("demo", draft("two")).unwrap_err();
        assert!(matches!(err, StoreError::NoCopy { .. }), "{err}");
        assert!(err.to_string().contains("no copy of the correction store"), "{err}");
        drop(store);
        assert_eq!(files(), before, "the store is not opened in place");
        // Damaged, and still no copy: the store is left as it was for salvage.
        let db = path.join("db");
        let mut bytes = std::fs::read(&db).unwrap();
        let len = bytes.len();
        bytes[len / 2..].fill(b'X');
        std::fs::write(&db, &bytes).unwrap();
        let before = files();
        let opened = SledStore::open(&path).and_then(|s| s.list("demo").map(|l| l.len()));
        assert!(matches!(opened, Err(StoreError::Corrupt { .. })), "the damage is said: {opened:?}");
        assert_eq!(files(), before, "a damaged store is never rewritten without a copy");
        std::fs::remove_file(&blocked).unwrap();
    }

    #[test]
    fn a_read_copy_shows_the_store_refuses_writes_and_is_removed_after() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("overlay");
        {
            let store = SledStore::open(&path).unwrap();
            store.add("demo", draft("one")).unwrap();
            store.add("demo", draft("two")).unwrap();
        }
        let copy = SledStore::read_copy(&path, ReadCopy::DiskFull).unwrap();
        let where_copied = copy.copy.clone().unwrap().0;
        assert!(where_copied.exists() && where_copied != path);
        assert_eq!(copy.list("demo").unwrap().len(), 2);
        assert_eq!(copy.path, path, "errors name the store, not the copy");
        assert!(matches!(copy.add("demo", draft("three")), Err(StoreError::DiskFull { .. })));
        drop(copy);
        assert!(!where_copied.exists(), "the copy is removed");
        assert_eq!(SledStore::open(&path).unwrap().list("demo").unwrap().len(), 2, "the store is untouched");
    }

    #[test]
    fn a_write_whose_note_fails_is_still_done_and_the_note_catches_up_at_the_next_open() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("overlay");
        {
            let store = SledStore::open(&path).unwrap();
            store.add("demo", draft("one")).unwrap();
            // The note cannot be written aside (a directory stands where its file would go).
            std::fs::create_dir(path.join(ACK_NEXT)).unwrap();
            let made = store.add("demo", draft("two"));
            assert!(made.is_ok(), "the record is durable: it is not reported lost: {made:?}");
            assert_eq!(acknowledged(&path).ok(), Some(1), "the note lags behind");
            std::fs::remove_dir(path.join(ACK_NEXT)).unwrap();
        }
        let store = SledStore::open(&path).unwrap();
        assert_eq!(store.list("demo").unwrap().len(), 2);
        assert_eq!(acknowledged(&path).ok(), Some(2), "other processes see the second write now");
    }
}
