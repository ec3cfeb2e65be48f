//! The runs ongraph keeps, read back with what each one read: saved sessions (each run's
//! exchanges) and eval records (each record's footprint). A file that cannot be read, a record
//! written before footprints were kept, a run of another KG: skipped, and said, never taken for
//! a run the correction leaves alone.

use crate::engine::{Footprint, Settings, Topics};
use crate::session::{Moment, RunRecord, Session};
use std::path::{Path, PathBuf};

/// One kept run.
#[derive(Clone, Debug, serde::Serialize, serde::Deserialize)]
pub struct KeptRun {
    /// Where it is kept: a session file, or an eval run's records.jsonl.
    pub file: PathBuf,
    /// Which run of the file: a session's run number (from 1), a record's dataset index.
    pub at: usize,
    /// The KG it ran on, by the name it was saved with.
    pub kg: String,
    /// The model it was asked of, as it was described (`MODEL at URL`, a scripted model).
    #[serde(default)]
    pub llm: String,
    pub question: String,
    pub settings: Settings,
    /// What named its topic entities (sessions; an eval record's come from its dataset).
    pub topics: Option<Topics>,
    /// The answer(s), best first; empty when it gave none.
    pub answer: Vec<String>,
    /// The paths it showed for its answer, best first.
    pub paths: Vec<String>,
    pub footprint: Footprint,
    /// The digest of the corrections it was answered under (an eval record's `corrections`),
    /// when known.
    #[serde(default)]
    pub corrections_seen: Option<String>,
}

impl KeptRun {
    /// One line for a list: where, the method, the question and its answer.
    pub fn line(&self) -> String {
        let answer = if self.answer.is_empty() { "no answer".to_string() } else { self.answer.join(", ") };
        format!("{}  {}  {} → {}", self.place(), self.settings.method.label(), self.question, answer)
    }

    /// How the user finds it: `sessions/canberra.json run 2`, `eval-runs/x/records.jsonl #14`.
    pub fn place(&self) -> String {
        if self.topics.is_some() {
            format!("{} run {}", self.file.display(), self.at)
        } else {
            format!("{} #{}", self.file.display(), self.at)
        }
    }
}

/// The KG a run kept as run on `name`, with `kg_file` (its KG's canonical file, when it kept
/// one), is known by: `file:` and the path, as the correction store keys a file KG, else (a
/// run saved before runs kept it, or a KG that is no file) the name.
pub fn run_kg(name: &str, kg_file: Option<&str>) -> String {
    kg_file.map_or_else(|| name.to_string(), |f| format!("file:{f}"))
}

/// A file, or a record, left out, and why.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Skipped {
    pub file: PathBuf,
    pub why: String,
}

/// Where runs are kept when none is named: `./sessions`, `./eval-runs` and the UI's sessions
/// directory, those that exist.
pub fn default_dirs() -> Vec<PathBuf> {
    let mut dirs = vec![PathBuf::from("sessions"), PathBuf::from("eval-runs"), crate::session::default_dir()];
    dirs.retain(|d| d.is_dir());
    dirs.dedup();
    dirs
}

/// How deep under a directory runs are looked for (eval runs nest a few levels down).
const MAX_DEPTH: usize = 6;

/// Every run kept under `places` (directories, searched down to a few levels, or files), in
/// path order; what could not be read is in the second list.
pub fn load(places: &[PathBuf]) -> (Vec<KeptRun>, Vec<Skipped>) {
    let (mut runs, mut skipped) = (Vec::new(), Vec::new());
    for file in files(places) {
        let (read, why) = read_file(&file);
        runs.extend(read);
        if let Some(why) = why {
            skipped.push(Skipped { file, why });
        }
    }
    (runs, skipped)
}

/// The files that may keep runs under `places`, in path order.
pub fn files(places: &[PathBuf]) -> Vec<PathBuf> {
    let mut files = Vec::new();
    for place in places {
        collect(place, 0, &mut files);
    }
    files.sort();
    files.dedup();
    files
}

/// The runs one file keeps, and why some or all of it could not be read, if so.
pub fn read_file(file: &Path) -> (Vec<KeptRun>, Option<String>) {
    let (located, why) = read_located(file);
    (located.into_iter().map(|(_, run)| run).collect(), why)
}

/// As [`read_file`], each run with where [`read_run`] finds it again: an eval record's byte
/// offset, a session run's number.
pub fn read_located(file: &Path) -> (Vec<(u64, KeptRun)>, Option<String>) {
    let mut runs = Vec::new();
    let read = if is_records(file) { records(file, &mut runs) } else { session(file, &mut runs) };
    (runs, read.err())
}

/// Some runs of `file` (on `kg`), by where [`read_located`] said they are: the file read once.
pub fn read_runs(file: &Path, kg: &str, locators: &[u64]) -> Vec<Result<KeptRun, String>> {
    if is_records(file) {
        let llm = records_meta(file).map(|(_, llm)| llm).unwrap_or_default();
        let mut records = crate::eval::record::Seeker::new(file);
        return locators
            .iter()
            .map(|at| {
                let record = records.read_at(*at).map_err(|e| e.to_string())?;
                let index = record.index;
                kept_record(file, kg, &llm, record).ok_or_else(|| format!("record #{index} keeps no footprint"))
            })
            .collect();
    }
    let (runs, why) = read_located(file);
    locators
        .iter()
        .map(|at| {
            runs.iter()
                .find(|(here, _)| here == at)
                .map(|(_, run)| run.clone())
                .ok_or_else(|| why.clone().unwrap_or_else(|| format!("it has no run {at}")))
        })
        .collect()
}

fn is_records(file: &Path) -> bool {
    file.file_name().is_some_and(|n| n == "records.jsonl")
}

fn collect(place: &Path, depth: usize, out: &mut Vec<PathBuf>) {
    if place.is_file() {
        out.push(place.to_path_buf());
        return;
    }
    let Ok(entries) = std::fs::read_dir(place) else { return };
    for entry in entries.flatten() {
        let path = entry.path();
        let name = entry.file_name();
        let name = name.to_string_lossy();
        // A link to a directory is not followed: a loop would fan out to the depth limit.
        if entry.file_type().is_ok_and(|t| t.is_dir()) && depth < MAX_DEPTH {
            collect(&path, depth + 1, out);
        } else if !path.is_file() {
            // A FIFO or a device named like a session would block the read.
        } else if name == "records.jsonl" || (name.ends_with(".json") && name != "run.json" && name != "summary.json") {
            out.push(path);
        }
    }
}

/// A session's runs, each with what its exchanges read.
fn session(file: &Path, out: &mut Vec<(u64, KeptRun)>) -> Result<(), String> {
    let session = match Session::load(file) {
        Ok(session) => session,
        // Another kind of JSON (a scenario beside the sessions, say) holds no runs.
        Err(crate::session::SessionError::NotASession { .. }) => return Ok(()),
        Err(e) => return Err(e.to_string()),
    };
    for (i, run) in session.runs.iter().enumerate() {
        let footprint = footprint_of(run);
        out.push((
            i as u64 + 1,
            KeptRun {
                file: file.to_path_buf(),
                at: i + 1,
                kg: run_kg(&session.kg, session.kg_file.as_deref()),
                llm: session.llm.clone(),
                question: run.question.clone(),
                settings: run.settings.clone().unwrap_or_else(|| session.settings.clone()),
                topics: Some(run.topics.clone()),
                answer: run.answer.as_ref().map(|a| a.answers.clone()).unwrap_or_default(),
                paths: run
                    .answer
                    .as_ref()
                    .map(|a| a.paths.iter().map(|p| p.text.clone()).collect())
                    .unwrap_or_default(),
                footprint,
                corrections_seen: None,
            },
        ));
    }
    Ok(())
}

/// What a recorded run read, from its exchanges, and what its answer rests on.
pub fn footprint_of(run: &RunRecord) -> Footprint {
    let mut footprint = Footprint::default();
    for moment in &run.moments {
        if let Moment::Exchange { requests, responses, .. } = moment {
            footprint.record(requests, responses);
        }
    }
    if let Some(answer) = &run.answer {
        footprint.rest_on(answer);
    }
    footprint
}

/// An eval run's records; its KG from the run.json beside them.
fn records(file: &Path, out: &mut Vec<(u64, KeptRun)>) -> Result<(), String> {
    let (kg, llm) = records_meta(file)?;
    let (records, _torn) = crate::eval::record::read_located(file).map_err(|e| e.to_string())?;
    let before = records.iter().filter(|(_, r)| r.footprint.is_none()).count();
    if before == records.len() && !records.is_empty() {
        return Err("written before ongraph kept what each run read: run the eval again to include it".into());
    }
    out.extend(records.into_iter().filter_map(|(at, record)| Some((at, kept_record(file, &kg, &llm, record)?))));
    if before > 0 {
        return Err(format!(
            "{before} of its records were written before ongraph kept what each run read (the others are counted)"
        ));
    }
    Ok(())
}

/// The KG an eval run's records ran on (see [`run_kg`]) and the model, from the run.json
/// beside them.
fn records_meta(file: &Path) -> Result<(String, String), String> {
    let meta = file.with_file_name("run.json");
    let read = std::fs::read_to_string(&meta).ok().and_then(|t| serde_json::from_str::<serde_json::Value>(&t).ok());
    let text = |key: &str| read.as_ref().and_then(|v| v.get(key)).and_then(|k| k.as_str());
    let name =
        text("kg").ok_or_else(|| format!("no readable {} beside it to say which KG it ran on", meta.display()))?;
    Ok((run_kg(name, text("kg_file")), text("llm").unwrap_or_default().to_string()))
}

/// An eval record as a kept run; none when it was written before footprints were kept.
fn kept_record(file: &Path, kg: &str, llm: &str, record: crate::eval::record::Record) -> Option<KeptRun> {
    Some(KeptRun {
        file: file.to_path_buf(),
        at: record.index,
        kg: kg.to_string(),
        llm: llm.to_string(),
        question: record.question,
        settings: record.settings,
        topics: None,
        answer: record.prediction,
        paths: record.paths,
        footprint: record.footprint?,
        corrections_seen: record.corrections.map(|c| c.digest),
    })
}
