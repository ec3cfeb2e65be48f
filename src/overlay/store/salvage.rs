//! Reading what can still be read from a store that does not open, for
//! `ongraph fix export --salvage`. The store itself is never written: sled works on a private
//! copy, and the files are also read byte by byte for every record that still decodes.

use super::{CURRENT_VERSION, Record, StoreError, private_copy, private_dir_name};
use crate::overlay::Correction;
use crate::sled_open::open_contained;
use std::collections::BTreeMap;
use std::path::Path;

/// What a salvage found for one KG.
#[derive(Debug)]
pub struct Salvaged {
    /// Every correction found, oldest first (by id), each in its latest version found.
    pub corrections: Vec<Correction>,
    /// Whether sled itself could open (a copy of) the store.
    pub opened: bool,
    /// Records under this KG's keys that sled returned but that do not decode.
    pub unreadable: usize,
}

/// Every correction under one of `keys` (a KG's, see `KgScope`) that can still be read from the store at `path`: through sled
/// when a copy of the store opens (as it is, else without its snapshots, which sled can
/// rebuild from its log), and from the raw bytes of its files, which hold each record as the
/// JSON it was written as. A correction found more than once is taken in the version with the
/// longest history: a correction's history only grows.
pub fn salvage(path: &Path, keys: &[String]) -> Result<Salvaged, StoreError> {
    let shown = path.display().to_string();
    let io = |e: std::io::Error| StoreError::Io { path: shown.clone(), detail: e.to_string() };
    if !path.join("db").is_file() {
        return Err(StoreError::Io { path: shown.clone(), detail: "there is no store there".into() });
    }
    let mut found: BTreeMap<u64, Correction> = BTreeMap::new();
    let mut keep = |c: Correction| {
        if !keys.contains(&c.kg) {
            return;
        }
        match found.get(&c.id) {
            Some(had) if had.history.len() >= c.history.len() => {}
            _ => {
                found.insert(c.id, c);
            }
        }
    };
    // The store, and the copy taken before an open found it damaged (sled's recovery may have
    // rewritten the store's own files since).
    let copy = super::before_damage(path);
    let (mut opened, mut unreadable) = (false, 0);
    for dir in std::iter::once(path).chain(copy.join("db").is_file().then_some(copy.as_path())) {
        for c in raw_records(dir).map_err(io)? {
            keep(c);
        }
        if let Some((read, bad)) = through_sled(dir, keys) {
            read.into_iter().for_each(&mut keep);
            opened = true;
            unreadable = if dir == path { bad } else { unreadable.min(bad) };
        }
    }
    Ok(Salvaged { corrections: found.into_values().collect(), opened, unreadable })
}

/// The corrections sled returns from a copy of the store, and how many records did not
/// decode; `None` when no copy opens.
fn through_sled(path: &Path, keys: &[String]) -> Option<(Vec<Correction>, usize)> {
    let copy = private_dir_name();
    let read = (|| {
        private_copy(path, &copy).ok()?;
        let db = match open_contained(&copy) {
            Ok(Ok(db)) => db,
            _ => {
                // Without any snapshot sled replays its whole log.
                for entry in std::fs::read_dir(&copy).ok()?.flatten() {
                    if entry.file_name().to_string_lossy().starts_with("snap.") {
                        std::fs::remove_file(entry.path()).ok()?;
                    }
                }
                open_contained(&copy).ok()?.ok()?
            }
        };
        let (mut read, mut unreadable) = (Vec::new(), 0);
        for kg in keys {
            let mut prefix = kg.as_bytes().to_vec();
            prefix.push(0);
            for item in db.scan_prefix(prefix) {
                match item.ok().and_then(|(_, v)| decode(&v)) {
                    Some(c) => read.push(c),
                    None => unreadable += 1,
                }
            }
        }
        Some((read, unreadable))
    })();
    let _ = std::fs::remove_dir_all(&copy);
    read
}

/// Every correction record found in the bytes of the store's files (its log and any blobs):
/// sled keeps values as written, so each record is its JSON, `{"v":…,"correction":…}`.
fn raw_records(path: &Path) -> std::io::Result<Vec<Correction>> {
    let mut files = vec![path.join("db")];
    if let Ok(blobs) = std::fs::read_dir(path.join("blobs")) {
        files.extend(blobs.flatten().map(|e| e.path()));
    }
    let mut found = Vec::new();
    for file in files {
        let bytes = std::fs::read(&file)?;
        let mut at = 0;
        while let Some(start) = find(&bytes[at..], b"{\"v\":").map(|i| at + i) {
            if let Some(c) = decode_prefix(&bytes[start..]) {
                found.push(c);
            }
            at = start + 1;
        }
    }
    Ok(found)
}

fn find(haystack: &[u8], needle: &[u8]) -> Option<usize> {
    haystack.windows(needle.len()).position(|w| w == needle)
}

/// The record at the start of `bytes` (whatever follows it), if it is one this build reads.
fn decode_prefix(bytes: &[u8]) -> Option<Correction> {
    let record: Record = serde_json::Deserializer::from_slice(bytes).into_iter().next()?.ok()?;
    (1..=CURRENT_VERSION).contains(&record.v).then_some(record.correction)
}

fn decode(bytes: &[u8]) -> Option<Correction> {
    let record: Record = serde_json::from_slice(bytes).ok()?;
    (1..=CURRENT_VERSION).contains(&record.v).then_some(record.correction)
}
