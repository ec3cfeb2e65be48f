//! A sled-backed cache of SPARQL results, keyed by endpoint and exact query text: asking
//! the same question again sends no query. Knowledge graphs at endpoints change rarely; when
//! one does, `ongraph cache clear` empties the cache.

use std::path::Path;
use std::sync::atomic::{AtomicU64, Ordering};

pub struct QueryCache {
    db: sled::Db,
    hits: AtomicU64,
    misses: AtomicU64,
}

/// Why the cache could not be opened.
#[derive(Debug, thiserror::Error)]
pub enum CacheError {
    #[error("the query cache at {path} is in use by another ongraph process")]
    Locked { path: String },
    #[error("the query cache at {path} is damaged ({detail}); `ongraph cache clear` removes it")]
    Damaged { path: String, detail: String },
    #[error("cannot open the query cache at {path}: {detail}")]
    Io { path: String, detail: String },
}

/// Damage only when sled says so (or a file is cut short or unreadable as data): `cache clear`
/// removes a damaged cache, and a full disk, a read-only file system or a directory that is not
/// a cache must never be taken for one.
fn classify(path: String, e: sled::Error) -> CacheError {
    use std::io::ErrorKind;
    match e {
        sled::Error::Io(io) if io.to_string().contains("could not acquire lock") => CacheError::Locked { path },
        sled::Error::Io(io) if matches!(io.kind(), ErrorKind::UnexpectedEof | ErrorKind::InvalidData) => {
            CacheError::Damaged { path, detail: io.to_string() }
        }
        sled::Error::Io(io) => CacheError::Io { path, detail: io.to_string() },
        // Unsupported: a `conf` this sled cannot read (garbage, or another version's).
        e @ (sled::Error::Corruption { .. } | sled::Error::ReportableBug(_) | sled::Error::Unsupported(_)) => {
            CacheError::Damaged { path, detail: e.to_string() }
        }
        e => CacheError::Io { path, detail: e.to_string() },
    }
}

impl QueryCache {
    /// Opens (creating if needed) the cache. A run that cannot open it runs without it: a
    /// cache must never stop a question.
    pub fn open(path: &Path) -> Result<Self, CacheError> {
        let shown = path.display().to_string();
        let open = || {
            crate::sled_open::open_contained(path)
                .map_err(|()| CacheError::Damaged { path: shown.clone(), detail: "the database cannot be read".into() })
        };
        let mut opened = open()?;
        // A snapshot a killed run left unfinished is no damage: set aside, as the correction
        // store does, and opened again.
        if matches!(opened, Err(sled::Error::Corruption { .. }))
            && !crate::sled_open::set_aside_unfinished_snapshots(path)
                .map_err(|e| CacheError::Io { path: shown.clone(), detail: e.to_string() })?
                .is_empty()
        {
            opened = open()?;
        }
        match opened {
            Ok(db) => Ok(Self { db, hits: AtomicU64::new(0), misses: AtomicU64::new(0) }),
            Err(e) => Err(classify(shown, e)),
        }
    }

    /// Removes a cache that cannot be opened (damaged): it holds nothing that cannot be asked
    /// again. Only sled's own files go (`db`, `conf`, `blobs/`, `snap.*`), never anything else
    /// a configured directory may hold.
    pub fn remove(path: &Path) -> std::io::Result<()> {
        let entries = match std::fs::read_dir(path) {
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(()),
            other => other?,
        };
        for entry in entries {
            let entry = entry?;
            let name = entry.file_name();
            let name = name.to_string_lossy();
            match name.as_ref() {
                "blobs" if entry.file_type()?.is_dir() => std::fs::remove_dir_all(entry.path())?,
                "db" | "conf" => std::fs::remove_file(entry.path())?,
                snap if snap.starts_with("snap.") => std::fs::remove_file(entry.path())?,
                _ => {}
            }
        }
        Ok(())
    }

    /// The exact query text: the engine writes the same query the same way, and whitespace
    /// inside a literal is part of what is asked ("Lou  Seal" is not "Lou Seal").
    fn key(endpoint: &str, query: &str) -> Vec<u8> {
        format!("{endpoint}\n{query}").into_bytes()
    }

    pub fn get(&self, endpoint: &str, query: &str) -> Option<Vec<u8>> {
        match self.db.get(Self::key(endpoint, query)) {
            Ok(Some(bytes)) => {
                self.hits.fetch_add(1, Ordering::Relaxed);
                Some(bytes.to_vec())
            }
            _ => {
                self.misses.fetch_add(1, Ordering::Relaxed);
                None
            }
        }
    }

    /// Stores a result. Not flushed per entry: losing the last entries in a crash only costs a
    /// query next time.
    pub fn put(&self, endpoint: &str, query: &str, body: &[u8]) {
        if let Err(e) = self.db.insert(Self::key(endpoint, query), body) {
            tracing::warn!(error = %e, "could not store a query result in the cache");
        }
    }

    pub fn hits(&self) -> u64 {
        self.hits.load(Ordering::Relaxed)
    }
    pub fn misses(&self) -> u64 {
        self.misses.load(Ordering::Relaxed)
    }

    /// Removes every entry; returns how many there were.
    pub fn clear(&self) -> Result<usize, sled::Error> {
        let n = self.db.len();
        self.db.clear()?;
        self.db.flush()?;
        Ok(n)
    }

    pub fn len(&self) -> usize {
        self.db.len()
    }
    pub fn is_empty(&self) -> bool {
        self.db.is_empty()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_damaged_cache_says_so_and_can_be_removed() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("query-cache");
        drop(QueryCache::open(&path).unwrap());
        for entry in std::fs::read_dir(&path).unwrap() {
            let entry = entry.unwrap();
            if entry.file_type().unwrap().is_file() {
                std::fs::write(entry.path(), b"\x13\x37 not a sled database \xff\xff\xff\xff").unwrap();
            }
        }
        let err = QueryCache::open(&path).err().expect("a damaged cache does not open");
        assert!(matches!(err, CacheError::Damaged { .. }), "{err}");
        assert!(err.to_string().ends_with("`ongraph cache clear` removes it"), "{err}");
        std::fs::write(path.join("notes.txt"), "mine").unwrap();
        QueryCache::remove(&path).unwrap();
        assert!(QueryCache::open(&path).unwrap().is_empty());
        assert_eq!(std::fs::read_to_string(path.join("notes.txt")).unwrap(), "mine", "only sled's files go");
    }

    #[test]
    fn a_snapshot_a_killed_run_left_unfinished_is_no_damage() {
        // Regression (issue 35's adversarial pass): an empty `snap.*.generating` made every
        // command run without the cache and `cache stats` call it damaged.
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("query-cache");
        let cache = QueryCache::open(&path).unwrap();
        cache.put("http://x/sparql", "SELECT 1", b"kept");
        drop(cache);
        std::fs::write(path.join("snap.00000000FFFFFFFF.generating"), b"").unwrap();
        let cache = QueryCache::open(&path).expect("opens with the unfinished snapshot set aside");
        assert_eq!(cache.get("http://x/sparql", "SELECT 1").as_deref(), Some(&b"kept"[..]));
        assert!(path.join("unfinished-snap.00000000FFFFFFFF.generating").exists(), "kept, never deleted");
    }

    #[test]
    fn a_lock_held_elsewhere_is_not_called_damage() {
        let lock = std::io::Error::other("could not acquire lock on \"db\": Resource temporarily unavailable");
        assert!(matches!(classify("c".into(), sled::Error::Io(lock)), CacheError::Locked { .. }));
        let denied = std::io::Error::from(std::io::ErrorKind::PermissionDenied);
        assert!(matches!(classify("c".into(), sled::Error::Io(denied)), CacheError::Io { .. }));
        let eof = std::io::Error::from(std::io::ErrorKind::UnexpectedEof);
        assert!(matches!(classify("c".into(), sled::Error::Io(eof)), CacheError::Damaged { .. }));
        // Never called damage (which `cache clear` removes): a full disk, a directory in the way.
        for kind in [std::io::ErrorKind::StorageFull, std::io::ErrorKind::IsADirectory] {
            assert!(matches!(classify("c".into(), sled::Error::Io(kind.into())), CacheError::Io { .. }), "{kind:?}");
        }
    }

    #[test]
    fn whitespace_inside_a_literal_is_another_query() {
        // Regression: `kg search "Lou  Seal"` was answered with "Lou Seal"'s cached result.
        let dir = tempfile::tempdir().unwrap();
        let cache = QueryCache::open(dir.path()).unwrap();
        let q = |label: &str| format!("SELECT ?e WHERE {{ ?e rdfs:label \"{label}\"@en }}");
        cache.put("http://x/sparql", &q("Lou Seal"), b"one");
        assert_eq!(cache.get("http://x/sparql", &q("Lou Seal")).as_deref(), Some(&b"one"[..]));
        assert_eq!(cache.get("http://x/sparql", &q("Lou  Seal")), None);
        assert_eq!(cache.get("http://y/sparql", &q("Lou Seal")), None, "another endpoint");
    }
}
