//! Per-question records: one JSON object per line in `records.jsonl`, appended and flushed as
//! each question finishes, so a crash or Ctrl-C loses nothing already written and `--resume`
//! knows what is done.

use super::metrics::Score;
use crate::dataset::GoldAnswer;
use crate::engine::{AnswerSource, Settings};
use serde::{Deserialize, Serialize};
use std::fs::File;
use std::io::{BufRead, BufReader, Read, Seek, SeekFrom, Write};
use std::path::{Path, PathBuf};

/// What one question gave and cost.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Record {
    /// Position in the dataset file (0-based): what `--resume` and `compare` match on.
    pub index: usize,
    /// The dataset's id for the question (or its line / record number).
    pub id: String,
    pub question: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub hops: Option<usize>,
    pub gold: Vec<GoldAnswer>,
    /// The predicted answers, best first (empty when the model gave none or the run failed).
    pub prediction: Vec<String>,
    /// What the answer rests on: KG paths, partial paths, or the model's own knowledge. `None`
    /// when the run failed before answering.
    pub source: Option<AnswerSource>,
    /// The supporting paths (own-knowledge answers: the paths explored), best first.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub paths: Vec<String>,
    /// GoG: triples the model generated that verification kept.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub generated: Vec<String>,
    pub score: Score,
    pub llm_calls: u64,
    /// Identical calls answered from the question's memo instead of being made again.
    #[serde(default)]
    pub llm_calls_saved: u64,
    /// Dependent rounds of calls: what the question waited for with concurrency.
    #[serde(default)]
    pub llm_rounds: u64,
    pub prompt_tokens: u64,
    /// Of the prompt tokens, those the server said it reused from its prefix cache.
    #[serde(default, skip_serializing_if = "is_zero_u64")]
    pub cached_tokens: u64,
    pub completion_tokens: u64,
    pub kg_lookups: u64,
    /// Triples hidden for this question (GoG's incomplete KG).
    #[serde(default, skip_serializing_if = "is_zero")]
    pub hidden_triples: usize,
    pub wall_ms: u64,
    pub method: String,
    pub settings: Settings,
    /// Why the question has no answer, if it failed (counted as wrong).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
    /// Per prompt kind (the calls' step): how the replies were read.
    #[serde(default, skip_serializing_if = "std::collections::BTreeMap::is_empty")]
    pub reads: std::collections::BTreeMap<String, Reads>,
    /// The corrections the question was answered under (`eval --with-corrections`, which reads
    /// them again for each question). `None`: none applied, or a record written before this was
    /// kept.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub corrections: Option<CorrectionsSeen>,
    /// What the question's run read of the KG and the triples its answer rests on (what a
    /// correction must touch to change it: `fix impact`). `None` in records written before it
    /// was kept, and when the run could not start.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub footprint: Option<crate::engine::Footprint>,
}

/// Which corrections a question saw. Two records saw the same corrections exactly when their
/// digests are equal; the generation only places the read in the store's history (it moves
/// with every write to the store, any KG's, so it differs more often than the corrections do).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct CorrectionsSeen {
    /// The store's generation (its acknowledged writes) checked just before they were read.
    pub generation: u64,
    /// How many corrections applied.
    pub active: usize,
    /// A digest of the corrections that applied, 16 hex digits: FNV-1a (64-bit) over each
    /// active correction's id and operation (as JSON), in id order. Kept instead of the ids,
    /// which could be hundreds per record; stable across builds and machines, and a store made
    /// afresh whose ids start again at 1 does not collide with the old one.
    pub digest: String,
}

impl CorrectionsSeen {
    /// What a question sees when `corrections` (active and undone ones) were read at store
    /// generation `generation`.
    pub fn of(generation: u64, corrections: &[crate::overlay::Correction]) -> Self {
        let active = crate::overlay::in_order(corrections);
        // FNV-1a: defined by its constants, unlike std's hasher, so a digest means the same in
        // every build.
        let mut hash: u64 = 0xcbf2_9ce4_8422_2325;
        let mut feed = |bytes: &[u8]| {
            for b in bytes {
                hash ^= u64::from(*b);
                hash = hash.wrapping_mul(0x0000_0100_0000_01b3);
            }
        };
        for c in &active {
            feed(&c.id.to_le_bytes());
            // An `Op` is plain data: serialising it cannot fail; were it to, the id alone counts.
            feed(serde_json::to_string(&c.op).unwrap_or_default().as_bytes());
            feed(b"\n");
        }
        Self { generation, active: active.len(), digest: format!("{hash:016x}") }
    }

    /// How it reads in a summary: `2 active (digest 0123456789abcdef)`.
    pub fn describe(&self) -> String {
        format!("{} active (digest {})", self.active, self.digest)
    }
}

/// How the replies of one kind of call were read (calls answered from the memo excluded).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Reads {
    pub calls: u64,
    /// Read as JSON of the requested shape.
    #[serde(default)]
    pub json: u64,
    /// Reason first: a free reply whose answer was extracted by a second call.
    #[serde(default, skip_serializing_if = "is_zero_u64")]
    pub extracted: u64,
    /// Not readable: the step fell back (BM25, equal shares, No, asking again, …).
    #[serde(default)]
    pub fallback: u64,
}

impl std::ops::AddAssign for Reads {
    fn add_assign(&mut self, o: Self) {
        self.calls += o.calls;
        self.json += o.json;
        self.extracted += o.extracted;
        self.fallback += o.fallback;
    }
}

fn is_zero(n: &usize) -> bool {
    *n == 0
}

fn is_zero_u64(n: &u64) -> bool {
    *n == 0
}

impl Record {
    /// A record for tests: question `index`, right or wrong, with `calls` LLM calls.
    #[cfg(test)]
    pub(crate) fn sample(index: usize, hit: bool, calls: u64) -> Self {
        Self {
            index,
            id: format!("q{index}"),
            question: format!("question {index}?"),
            hops: Some(1 + index % 2),
            gold: vec![GoldAnswer::new("a")],
            prediction: vec![if hit { "a" } else { "b" }.to_string()],
            source: Some(AnswerSource::KgPaths),
            paths: Vec::new(),
            generated: Vec::new(),
            score: Score { hit, f1: if hit { 1.0 } else { 0.0 }, lenient: hit },
            llm_calls: calls,
            llm_calls_saved: 0,
            llm_rounds: calls,
            prompt_tokens: 100 * calls,
            cached_tokens: 0,
            completion_tokens: 10 * calls,
            kg_lookups: 2,
            hidden_triples: 0,
            wall_ms: 1000,
            method: "ToG".into(),
            settings: Settings::default(),
            error: None,
            reads: Default::default(),
            corrections: None,
            footprint: None,
        }
    }

    pub fn tokens(&self) -> u64 {
        self.prompt_tokens + self.completion_tokens
    }
}

#[derive(Debug, thiserror::Error)]
pub enum RecordError {
    // Its text is in the message, so it is no `source` (a field so named would be): anyhow's
    // chain would print it a second time.
    #[error("cannot read or write {path}: {error}")]
    Io { path: String, error: std::io::Error },
    #[error(
        "{path}:{line}: not a question record ({message}); the file was not written by `ongraph eval`, or was edited"
    )]
    Line { path: String, line: usize, message: String },
}

/// What an eval run's records file is called, in its run directory.
pub const FILE_NAME: &str = "records.jsonl";

/// Reads every record of a file. A last line without its newline that is no whole record is a
/// write the process did not finish (a crash, perhaps cut inside a character): it is reported
/// as `torn` rather than as an error. A whole record without its newline (a file edited by
/// hand) is read as any other.
pub fn read(path: &Path) -> Result<(Vec<Record>, Option<u64>), RecordError> {
    let (located, torn) = read_located(path)?;
    Ok((located.into_iter().map(|(_, r)| r).collect(), torn))
}

/// A record and the byte offset of its line.
pub type Located = (u64, Record);

/// As [`read`], each record with the byte offset of its line (see [`Seeker`]).
pub fn read_located(path: &Path) -> Result<(Vec<Located>, Option<u64>), RecordError> {
    let shown = path.display().to_string();
    let io = |source| RecordError::Io { path: shown.clone(), error: source };
    let file = File::open(path).map_err(io)?;
    let mut reader = BufReader::new(crate::text_file::BoundedLines::new(file));
    let (mut records, mut offset, mut number) = (Vec::new(), 0u64, 0usize);
    let mut bytes = Vec::new();
    loop {
        bytes.clear();
        let n = reader.read_until(b'\n', &mut bytes).map_err(io)?;
        if n == 0 {
            return Ok((records, None));
        }
        number += 1;
        let whole = bytes.ends_with(b"\n");
        let parsed = std::str::from_utf8(&bytes).map_err(|e| e.to_string()).and_then(|line| {
            if line.trim().is_empty() {
                Ok(None)
            } else {
                serde_json::from_str(line).map(Some).map_err(|e| e.to_string())
            }
        });
        let record = match parsed {
            // A torn tail: everything before `offset` is whole.
            Err(_) if !whole => return Ok((records, Some(offset))),
            Err(message) => return Err(RecordError::Line { path: shown.clone(), line: number, message }),
            Ok(record) => record,
        };
        if let Some(record) = record {
            records.push((offset, record));
        }
        offset += n as u64;
    }
}

/// Reads single records of a file by the byte offsets of their lines (from [`read_located`]),
/// the file opened once.
pub struct Seeker<'a> {
    path: &'a Path,
    file: Option<File>,
}

impl<'a> Seeker<'a> {
    pub fn new(path: &'a Path) -> Self {
        Self { path, file: None }
    }

    /// The record whose line starts at byte `offset`.
    pub fn read_at(&mut self, offset: u64) -> Result<Record, RecordError> {
        use std::io::{Seek, SeekFrom};
        let shown = || self.path.display().to_string();
        let io = |error| RecordError::Io { path: shown(), error };
        let file = match self.file.as_mut() {
            Some(file) => file,
            None => self.file.insert(File::open(self.path).map_err(io)?),
        };
        file.seek(SeekFrom::Start(offset)).map_err(io)?;
        let mut line = String::new();
        BufReader::new(crate::text_file::BoundedLines::new(&mut *file)).read_line(&mut line).map_err(io)?;
        serde_json::from_str(&line).map_err(|e| RecordError::Line {
            path: shown(),
            line: 0,
            message: format!("the record at byte {offset}: {e}"),
        })
    }
}

/// Appends records, one whole line per `write` straight to the file (no user-space buffer), so
/// a record is in the file once reported done, whatever happens to the process after.
pub struct RecordWriter {
    path: PathBuf,
    file: File,
}

impl RecordWriter {
    /// Opens `path` for appending, first cutting off a torn last line (see [`read`]); returns
    /// the records already there.
    pub fn open(path: &Path) -> Result<(Self, Vec<Record>), RecordError> {
        let shown = path.display().to_string();
        let io = |source| RecordError::Io { path: shown.clone(), error: source };
        let existing = if path.exists() {
            let (records, torn) = read(path)?;
            if let Some(whole) = torn {
                tracing::warn!(path = %shown, whole, "cutting off a record the last run did not finish writing");
                let file = std::fs::OpenOptions::new().write(true).open(path).map_err(io)?;
                file.set_len(whole).map_err(io)?;
            }
            records
        } else {
            Vec::new()
        };
        let mut file = std::fs::OpenOptions::new().create(true).append(true).read(true).open(path).map_err(io)?;
        let len = file.seek(SeekFrom::End(0)).map_err(io)?;
        if len > 0 {
            // A whole last record without its newline (see [`read`]) gets one before the next.
            let mut last = [0u8];
            file.seek(SeekFrom::Start(len - 1)).map_err(io)?;
            file.read_exact(&mut last).map_err(io)?;
            if last[0] != b'\n' {
                file.write_all(b"\n").map_err(io)?;
            }
        }
        Ok((Self { path: path.to_path_buf(), file }, existing))
    }

    /// Takes the records of questions that failed (a dead endpoint, a timeout: `error` set)
    /// out of the file, so that a resumed run asks them again; returns the records kept and
    /// how many were taken out. The file is rewritten beside and renamed over the old one: a
    /// crash leaves one or the other, whole.
    pub fn drop_failed(&mut self, records: Vec<Record>) -> Result<(Vec<Record>, usize), RecordError> {
        let (kept, failed): (Vec<Record>, Vec<Record>) = records.into_iter().partition(|r| r.error.is_none());
        if failed.is_empty() {
            return Ok((kept, 0));
        }
        let io = |source| RecordError::Io { path: self.path.display().to_string(), error: source };
        let fresh = self.path.with_extension("jsonl.rewrite");
        {
            let mut file = File::create(&fresh).map_err(io)?;
            for record in &kept {
                let mut line = crate::safe_text::json::to_string(record).map_err(|e| io(std::io::Error::other(e)))?;
                line.push('\n');
                file.write_all(line.as_bytes()).map_err(io)?;
            }
            file.sync_data().map_err(io)?;
        }
        std::fs::rename(&fresh, &self.path).map_err(io)?;
        self.file = std::fs::OpenOptions::new().append(true).open(&self.path).map_err(io)?;
        Ok((kept, failed.len()))
    }

    pub fn append(&mut self, record: &Record) -> Result<(), RecordError> {
        let io = |source| RecordError::Io { path: self.path.display().to_string(), error: source };
        let mut line = crate::safe_text::json::to_string(record).map_err(|e| io(std::io::Error::other(e)))?;
        line.push('\n');
        self.file.write_all(line.as_bytes()).map_err(io)
    }

    /// Syncs to disk (at the end of a run: per record it would cost more than a question).
    pub fn sync(&self) -> Result<(), RecordError> {
        self.file.sync_data().map_err(|source| RecordError::Io { path: self.path.display().to_string(), error: source })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::kg::Term;
    use crate::overlay::{Correction, Op};

    fn correction(id: u64, label: &str, active: bool) -> Correction {
        Correction {
            id,
            kg: "demo".into(),
            op: Op::Relabel { entity: "m.x".into(), label: label.into() },
            reason: "r".into(),
            author: "a".into(),
            created: "2024-01-01T00:00:00Z".into(),
            active,
            context: None,
            generated: None,
            history: Vec::new(),
            team: None,
        }
    }

    #[test]
    fn a_record_written_before_corrections_were_kept_still_reads() {
        let mut old = serde_json::to_value(Record::sample(0, true, 1)).unwrap();
        assert!(old.get("corrections").is_none(), "none applied: not written");
        old.as_object_mut().unwrap().remove("corrections");
        let read: Record = serde_json::from_value(old).unwrap();
        assert_eq!(read.corrections, None);
        let mut new = Record::sample(1, true, 1);
        new.corrections = Some(CorrectionsSeen::of(3, &[correction(1, "A", true)]));
        let line = serde_json::to_string(&new).unwrap();
        assert_eq!(serde_json::from_str::<Record>(&line).unwrap(), new);
    }

    #[test]
    fn the_digest_names_the_active_corrections_and_nothing_else() {
        let (a, b, undone) = (correction(1, "A", true), correction(2, "B", true), correction(3, "C", false));
        let seen = CorrectionsSeen::of(5, &[a.clone(), b.clone(), undone.clone()]);
        assert_eq!((seen.generation, seen.active, seen.digest.len()), (5, 2, 16));
        // Order, undone corrections and the generation do not matter; what applies does.
        assert_eq!(CorrectionsSeen::of(9, &[b.clone(), a.clone()]).digest, seen.digest);
        assert_ne!(CorrectionsSeen::of(5, std::slice::from_ref(&a)).digest, seen.digest);
        let mut other_op = b.clone();
        other_op.op = Op::Retract { subject: "m.x".into(), relation: "r".into(), object: Term::Entity("m.y".into()) };
        assert_ne!(CorrectionsSeen::of(5, &[a.clone(), other_op]).digest, seen.digest, "a store made afresh");
        // Stable across builds: FNV-1a's offset basis for no correction at all.
        assert_eq!(CorrectionsSeen::of(0, &[undone]).digest, "cbf29ce484222325");
        assert_eq!(seen.describe(), format!("2 active (digest {})", seen.digest));
    }

    /// Found by a review: a whole last record without its newline (a file filtered by hand)
    /// was cut off as torn and asked again; a write cut inside a character made the file
    /// unreadable until cut by hand.
    #[test]
    fn only_an_unfinished_last_line_is_torn() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join(super::FILE_NAME);
        let line = |i| serde_json::to_string(&Record::sample(i, true, 1)).unwrap();
        // A whole record without its newline is read, and the next one goes on its own line.
        std::fs::write(&path, format!("{}\n{}", line(0), line(1))).unwrap();
        let (records, torn) = super::read(&path).unwrap();
        assert_eq!((records.len(), torn), (2, None));
        let (mut writer, done) = super::RecordWriter::open(&path).unwrap();
        assert_eq!(done.len(), 2);
        writer.append(&Record::sample(2, true, 1)).unwrap();
        let (records, torn) = super::read(&path).unwrap();
        assert_eq!((records.iter().map(|r| r.index).collect::<Vec<_>>(), torn), (vec![0, 1, 2], None));
        // Cut inside a two-byte character: torn where the line began, and cut off there.
        let mut bytes = format!("{}\n", line(0)).into_bytes();
        let whole = bytes.len() as u64;
        let tail = "{\"index\":1,\"question\":\"caf\u{e9}";
        bytes.extend_from_slice(&tail.as_bytes()[..tail.len() - 1]);
        assert!(std::str::from_utf8(&bytes).is_err(), "the test cuts inside the character");
        std::fs::write(&path, &bytes).unwrap();
        assert_eq!(super::read(&path).unwrap().1, Some(whole));
        let (_, done) = super::RecordWriter::open(&path).unwrap();
        assert_eq!(done.len(), 1);
        assert_eq!(std::fs::metadata(&path).unwrap().len(), whole);
        // Bad bytes on a whole line are an error that names the line.
        std::fs::write(&path, [b"{\"x\":\"\xff\"}\n".as_slice(), line(1).as_bytes()].concat()).unwrap();
        let err = super::read(&path).unwrap_err().to_string();
        assert!(err.contains("records.jsonl:1: not a question record"), "{err}");
    }
}
