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

impl QueryCache {
    /// Opens the cache; `None` (with a warning in the log) when it cannot be opened, e.g.
    /// because another ongraph process holds it: a cache must never stop a question.
    pub fn open(path: &Path) -> Option<Self> {
        match sled::Config::new().path(path).open() {
            Ok(db) => Some(Self { db, hits: AtomicU64::new(0), misses: AtomicU64::new(0) }),
            Err(e) => {
                tracing::warn!(path = %path.display(), error = %e, "query cache unavailable; running without it");
                None
            }
        }
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
