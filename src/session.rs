//! Saved sessions: everything needed to replay a sitting offline, deterministically: the
//! settings and prompt templates, every batch of requests with the KG answers and LLM replies
//! it got, every override and rewind in order, the corrections made, and the resulting trace.
//! Replaying feeds the recorded answers back into a fresh [`Run`]; the engine is deterministic
//! given its seed and its inputs, so the trace comes out the same (and is checked against the
//! saved one).

use crate::engine::events::Event;
use crate::engine::{Answer, EngineError, Override, Poll, Registry, Request, Response, Run, Settings, Topics};
use crate::kg::KgProfile;
use crate::overlay::Draft;
use crate::prompts::{PromptError, Prompts};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;

/// What the first field of every session file says.
pub const FORMAT: &str = "ongraph-session";
/// The newest format version this build reads and the one it writes. v2: a correction may be
/// a replace ([`crate::overlay::Op::Replace`]), and a draft marks an accepted LLM-generated
/// triple (`generated`) instead of its reason saying so. v1 files are read: their drafts
/// whose reason is [`crate::overlay::generated_reason`]'s are marked as they load.
pub const VERSION: u32 = 2;

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Session {
    pub format: String,
    pub version: u32,
    /// RFC 3339, UTC.
    pub saved_at: String,
    /// The knowledge graph and model in use, by name (never a key or a secret).
    pub kg: String,
    /// The KG's file, canonical, when it is one: two files of one name are two KGs (the
    /// impact of a correction counts only the runs of its own). Absent in earlier sessions.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub kg_file: Option<String>,
    pub llm: String,
    pub settings: Settings,
    pub profile: KgProfile,
    /// Every prompt template's text by name.
    pub prompts: BTreeMap<String, String>,
    /// The questions asked, in order (a re-ask after a correction is a new run).
    pub runs: Vec<RunRecord>,
    /// The corrections made during the session, in order.
    #[serde(default)]
    pub corrections: Vec<SessionCorrection>,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct RunRecord {
    pub question: String,
    pub topics: Topics,
    /// The settings this run was asked with (its method among them) when they are not the
    /// session's: a sitting may switch method between questions. `None`: the session's.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub settings: Option<Settings>,
    /// What happened to the run, in order.
    pub moments: Vec<Moment>,
    /// The trace the moments produced.
    pub trace: Vec<Event>,
    #[serde(default)]
    pub answer: Option<Answer>,
}

/// One thing that happened to a run.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(tag = "moment", rename_all = "snake_case")]
pub enum Moment {
    /// The run asked for `requests`; these are the answers it was fed.
    Exchange {
        requests: Vec<Request>,
        responses: Vec<Response>,
        #[serde(default)]
        elapsed_ms: u64,
    },
    Override {
        #[serde(rename = "override")]
        change: Override,
    },
    Rewind {
        to: usize,
    },
}

/// A correction stored during the session, with the id the store gave it.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct SessionCorrection {
    pub id: u64,
    /// How many runs had started when it was made.
    pub after_runs: usize,
    pub draft: Draft,
    /// How many runs had started when it was undone in the session, if it was.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub undone_after_runs: Option<usize>,
}

impl SessionCorrection {
    /// Whether it was in effect for the run that started `runs_started`-th (counting from 0):
    /// made before that run began and not undone before it.
    pub fn in_effect_for(&self, runs_started: usize) -> bool {
        self.after_runs <= runs_started && self.undone_after_runs.is_none_or(|u| u > runs_started)
    }
}

#[derive(Debug, thiserror::Error)]
pub enum SessionError {
    #[error("cannot read {path}: {message}")]
    Io { path: PathBuf, message: String },
    #[error("cannot write {path}: {message}")]
    Write { path: PathBuf, message: String },
    #[error("{path} is not an ongraph session (it has no \"format\": \"{FORMAT}\" field)")]
    NotASession { path: PathBuf },
    #[error("{path} is not an ongraph session: it is not JSON ({message})")]
    NotJson { path: PathBuf, message: String },
    #[error("{path} was saved by a newer ongraph (session format v{version}; this build reads up to v{VERSION})")]
    Newer { path: PathBuf, version: u64 },
    #[error("{path} is corrupt: {message}")]
    Corrupt { path: PathBuf, message: String },
    #[error("the session's prompt templates are invalid: {0}")]
    Prompts(PromptError),
    /// `run` is the run's index; it is said counting from 1, as `replay --check` lists them.
    #[error("run {} of the session cannot be replayed: {why}", run + 1)]
    Diverged { run: usize, why: String },
    // Its text is in the message, so it is no `source` (a field so named would be): anyhow's
    // chain would print it a second time.
    #[error("run {} of the session cannot be replayed: {error}", run + 1)]
    Engine { run: usize, error: EngineError },
}

/// Not `#[from]`, which would make it the error's source as well as its message's end.
impl From<PromptError> for SessionError {
    fn from(e: PromptError) -> Self {
        Self::Prompts(e)
    }
}

impl Session {
    pub fn new(kg: &str, llm: &str, settings: Settings, profile: KgProfile, prompts: &Prompts) -> Self {
        Self {
            format: FORMAT.into(),
            version: VERSION,
            saved_at: crate::overlay::now(),
            kg: kg.into(),
            kg_file: None,
            llm: llm.into(),
            settings,
            profile,
            prompts: prompts.texts(),
            runs: Vec::new(),
            corrections: Vec::new(),
        }
    }

    pub fn to_json(&self) -> String {
        // Serialising plain data to a string cannot fail.
        crate::safe_text::json::to_string_pretty(self).unwrap_or_default()
    }

    /// Writes the session to `path` whole or not at all (a temporary file, then a rename).
    pub fn save(&self, path: &Path) -> Result<(), SessionError> {
        let io = |e: std::io::Error| SessionError::Write { path: path.to_path_buf(), message: e.to_string() };
        if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
            std::fs::create_dir_all(dir).map_err(io)?;
        }
        let tmp = path.with_extension("json.partial");
        std::fs::write(&tmp, self.to_json()).map_err(io)?;
        std::fs::rename(&tmp, path).map_err(io)
    }

    pub fn load(path: &Path) -> Result<Self, SessionError> {
        let text = crate::text_file::read(path)
            .map_err(|e| SessionError::Io { path: path.to_path_buf(), message: e.to_string() })?;
        Self::parse(path, &text)
    }

    /// Reads a session, checking what it is and its version before its contents, so a file
    /// from a newer ongraph says so instead of failing on a field this build does not know.
    pub fn parse(path: &Path, text: &str) -> Result<Self, SessionError> {
        // serde_json's message already says where ("… at line 1 column 2").
        let corrupt = |e: serde_json::Error| {
            if text.trim_start().starts_with('{') {
                SessionError::Corrupt { path: path.to_path_buf(), message: e.to_string() }
            } else {
                SessionError::NotJson { path: path.to_path_buf(), message: e.to_string() }
            }
        };
        let value: serde_json::Value = serde_json::from_str(text).map_err(corrupt)?;
        if value.get("format").and_then(|f| f.as_str()) != Some(FORMAT) {
            return Err(SessionError::NotASession { path: path.to_path_buf() });
        }
        let version = match value.get("version").and_then(|v| v.as_u64()) {
            Some(v) if v > u64::from(VERSION) => {
                return Err(SessionError::Newer { path: path.to_path_buf(), version: v });
            }
            Some(v) => v,
            None => {
                return Err(SessionError::Corrupt {
                    path: path.to_path_buf(),
                    message: "no \"version\" number".into(),
                });
            }
        };
        let mut session: Session = serde_json::from_value(value)
            .map_err(|e| SessionError::Corrupt { path: path.to_path_buf(), message: e.to_string() })?;
        if version < 2 {
            // v1 had no mark: an accepted generated triple was known by its reason alone.
            for c in &mut session.corrections {
                c.draft.generated = crate::overlay::legacy_generated(&c.draft.reason);
            }
        }
        // Read into this build's format, it is saved as such.
        session.version = VERSION;
        Ok(session)
    }

    /// The prompts saved with the session, for the program's methods.
    pub fn prompts(&self) -> Result<Prompts, SessionError> {
        self.prompts_in(Registry::program())
    }

    /// The prompts saved with the session, for the methods `registry` knows (a method's own
    /// templates are saved with the others).
    pub fn prompts_in(&self, registry: &Registry) -> Result<Prompts, SessionError> {
        Ok(registry.saved_prompts(&self.prompts)?)
    }

    /// Starts recording a new run asked with `settings` (a re-ask is a new run too). The run
    /// keeps them when they are not the session's (a method switched in the UI).
    pub fn begin(&mut self, question: &str, topics: Topics, settings: &Settings) {
        self.runs.push(RunRecord {
            question: question.into(),
            topics,
            settings: (*settings != self.settings).then(|| settings.clone()),
            moments: Vec::new(),
            trace: Vec::new(),
            answer: None,
        });
    }

    /// Records what just happened to the last run begun.
    pub fn record(&mut self, moment: Moment) {
        if let Some(record) = self.runs.last_mut() {
            record.moments.push(moment);
        }
    }

    /// Copies `run`'s trace and answer into the last run's record.
    pub fn sync(&mut self, run: &Run) {
        if let Some(record) = self.runs.last_mut() {
            record.trace = run.trace().to_vec();
            record.answer = run.answer().cloned();
        }
    }

    /// A fresh run of recorded run `index`, before any step, for a method `registry` knows.
    pub fn start_in(&self, registry: &Registry, index: usize, prompts: Arc<Prompts>) -> Result<Run, SessionError> {
        let record = self.runs.get(index).ok_or(SessionError::Diverged { run: index, why: "no such run".into() })?;
        Run::new_in(
            registry,
            &record.question,
            record.topics.clone(),
            self.settings_of(index).clone(),
            prompts,
            self.profile.clone(),
            &self.kg,
        )
        .map_err(|source| SessionError::Engine { run: index, error: source })
    }

    /// The settings run `index` was asked with.
    pub fn settings_of(&self, index: usize) -> &Settings {
        self.runs.get(index).and_then(|r| r.settings.as_ref()).unwrap_or(&self.settings)
    }

    /// Checks that every run replays to its saved trace, as `replay --check` will: a session
    /// that fails it is not worth saving as if it would.
    pub fn check_replays(&self, registry: &Registry) -> Result<(), SessionError> {
        for (index, record) in self.runs.iter().enumerate() {
            let run = self.replay_in(registry, index)?;
            if run.trace() != record.trace.as_slice() {
                return Err(SessionError::Diverged {
                    run: index,
                    why: "its replay does not reproduce the steps shown (please report this)".into(),
                });
            }
        }
        Ok(())
    }

    /// Replays run `index` to its end from the recording alone: no network, no model. Fails
    /// if the engine asks for anything other than what was recorded.
    pub fn replay(&self, index: usize) -> Result<Run, SessionError> {
        self.replay_in(Registry::program(), index)
    }

    /// As [`Session::replay`], for a method `registry` knows.
    pub fn replay_in(&self, registry: &Registry, index: usize) -> Result<Run, SessionError> {
        // An unknown method is said as such, before its templates are found unknown too.
        let method = self.settings_of(index).method;
        if registry.get(&method).is_none() {
            let error = EngineError::UnknownMethod { name: method.to_string(), known: registry.names() };
            return Err(SessionError::Engine { run: index, error });
        }
        let mut run = self.start_in(registry, index, Arc::new(self.prompts_in(registry)?))?;
        let mut player = Player::new(&self.runs[index]);
        let engine = |error| SessionError::Engine { run: index, error };
        let diverged = |why: String| SessionError::Diverged { run: index, why };
        while !player.at_end() {
            let at = player.position();
            if let Some(change) = player.change() {
                player.play(&mut run, &change).map_err(engine)?;
                continue;
            }
            match run.poll() {
                Poll::Need(asked) => match player.answers(&asked) {
                    Some((responses, elapsed_ms)) if player.on_track() => {
                        run.feed_timed(responses, std::time::Duration::from_millis(elapsed_ms)).map_err(engine)?;
                    }
                    _ => {
                        return Err(diverged(format!(
                            "moment {at}: the engine asked for other requests than were recorded"
                        )));
                    }
                },
                Poll::Finished => {
                    return Err(diverged(format!("moment {at}: the run finished before the recording did")));
                }
            }
        }
        Ok(run)
    }
}

/// Follows one recorded run while a run is stepped: the one replayer behind `replay --check`
/// and the UI's replays. It hands out the recording's overrides and rewinds when they are due
/// and its answers to the batch the engine asks for. Once the run leaves the recording (the
/// engine asks for another batch, or the user changes something the recording did not) it is
/// off track: recorded changes are no longer applied, but any batch the recording answered is
/// still answered from it.
#[derive(Clone, Debug)]
pub struct Player {
    record: RunRecord,
    /// The next recorded moment.
    cursor: usize,
    on_track: bool,
}

impl Player {
    pub fn new(record: &RunRecord) -> Self {
        Self { record: record.clone(), cursor: 0, on_track: true }
    }

    pub fn on_track(&self) -> bool {
        self.on_track
    }

    /// Whether every recorded moment has been played.
    pub fn at_end(&self) -> bool {
        self.cursor >= self.record.moments.len()
    }

    /// The index of the next recorded moment.
    pub fn position(&self) -> usize {
        self.cursor
    }

    /// The recorded override or rewind due now, when on track.
    pub fn change(&mut self) -> Option<Moment> {
        if !self.on_track {
            return None;
        }
        let moment = self.record.moments.get(self.cursor)?;
        if matches!(moment, Moment::Exchange { .. }) {
            return None;
        }
        self.cursor += 1;
        Some(moment.clone())
    }

    /// Applies a recorded change to `run`; returns the index of the event it recorded.
    pub fn play(&self, run: &mut Run, change: &Moment) -> Result<usize, EngineError> {
        match change {
            Moment::Override { change } => run.apply(change.clone()),
            Moment::Rewind { to } => run.rewind(*to),
            Moment::Exchange { .. } => Err(EngineError::NotPolled),
        }
    }

    /// The recorded answers to `requests`: the next moment's when it is this batch; otherwise
    /// (the run is off track from now on) those of any batch recorded with the same requests.
    pub fn answers(&mut self, requests: &[Request]) -> Option<(Vec<Response>, u64)> {
        if self.on_track
            && let Some(Moment::Exchange { requests: r, responses, elapsed_ms }) = self.record.moments.get(self.cursor)
            && r == requests
        {
            self.cursor += 1;
            return Some((responses.clone(), *elapsed_ms));
        }
        self.on_track = false;
        self.record.moments.iter().find_map(|m| match m {
            Moment::Exchange { requests: r, responses, elapsed_ms } if r == requests => {
                Some((responses.clone(), *elapsed_ms))
            }
            _ => None,
        })
    }

    /// Notes a change the user made: still on track if it is the recorded one.
    pub fn follows(&mut self, moment: &Moment) {
        if self.on_track && self.record.moments.get(self.cursor) == Some(moment) {
            self.cursor += 1;
        } else {
            self.on_track = false;
        }
    }
}

/// Where sessions are saved by default: `$XDG_DATA_HOME/ongraph/sessions`.
pub fn default_dir() -> PathBuf {
    dirs::data_dir().unwrap_or_else(std::env::temp_dir).join("ongraph").join("sessions")
}

/// A file name for a session: its time and the first words of its first question.
pub fn file_name(session: &Session) -> String {
    let slug: String = session
        .runs
        .first()
        .map(|r| r.question.as_str())
        .unwrap_or("empty")
        .split(|c: char| !c.is_alphanumeric())
        .filter(|w| !w.is_empty())
        .take(6)
        .collect::<Vec<_>>()
        .join("-")
        .to_lowercase();
    let stamp: String = session.saved_at.chars().filter(|c| c.is_ascii_digit()).take(14).collect();
    format!("{stamp}-{slug}.json")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn lookup(entity: &str) -> Vec<Request> {
        vec![Request::Relations { entity: entity.into() }]
    }

    fn found(n: usize) -> Vec<Response> {
        vec![Response::Relations { relations: vec![crate::kg::RelationRef::out("r"); n] }]
    }

    fn record() -> RunRecord {
        RunRecord {
            question: "q".into(),
            topics: Topics::Extract,
            settings: None,
            moments: vec![
                Moment::Exchange { requests: lookup("a"), responses: found(1), elapsed_ms: 5 },
                Moment::Override { change: Override::ForceContinue },
                Moment::Exchange { requests: lookup("b"), responses: found(2), elapsed_ms: 7 },
            ],
            trace: Vec::new(),
            answer: None,
        }
    }

    #[test]
    fn the_player_follows_the_recording_in_order() {
        let mut player = Player::new(&record());
        assert_eq!(player.change(), None, "an exchange is due first");
        assert_eq!(player.answers(&lookup("a")), Some((found(1), 5)));
        assert_eq!(player.change(), Some(Moment::Override { change: Override::ForceContinue }));
        assert_eq!(player.answers(&lookup("b")), Some((found(2), 7)));
        assert!(player.on_track() && player.at_end());
    }

    #[test]
    fn off_the_recording_changes_stop_but_recorded_batches_are_still_answered() {
        let mut player = Player::new(&record());
        player.answers(&lookup("a"));
        player.follows(&Moment::Rewind { to: 0 });
        assert!(!player.on_track(), "the user did something the recording did not");
        assert_eq!(player.change(), None, "recorded changes no longer apply");
        assert_eq!(player.answers(&lookup("b")), Some((found(2), 7)), "a batch the recording holds");
        assert_eq!(player.answers(&lookup("c")), None);

        let mut other = Player::new(&record());
        assert_eq!(other.answers(&lookup("b")), Some((found(2), 7)), "asked out of order");
        assert!(!other.on_track());
    }
}
