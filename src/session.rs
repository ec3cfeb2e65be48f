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
/// The newest format version this build reads and the one it writes.
pub const VERSION: u32 = 1;

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Session {
    pub format: String,
    pub version: u32,
    /// RFC 3339, UTC.
    pub saved_at: String,
    /// The knowledge graph and model in use, by name (never a key or a secret).
    pub kg: String,
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
}

#[derive(Debug, thiserror::Error)]
pub enum SessionError {
    #[error("cannot read {path}: {message}")]
    Io { path: PathBuf, message: String },
    #[error("{path} is not an ongraph session (it has no \"format\": \"{FORMAT}\" field)")]
    NotASession { path: PathBuf },
    #[error("{path} was saved by a newer ongraph (session format v{version}; this build reads up to v{VERSION})")]
    Newer { path: PathBuf, version: u64 },
    #[error("{path} is corrupt: {message}")]
    Corrupt { path: PathBuf, message: String },
    #[error("the session's prompt templates are invalid: {0}")]
    Prompts(#[from] PromptError),
    #[error("run {run} of the session cannot be replayed: {why}")]
    Diverged { run: usize, why: String },
    #[error("run {run} of the session cannot be replayed: {source}")]
    Engine { run: usize, source: EngineError },
}

impl Session {
    pub fn new(kg: &str, llm: &str, settings: Settings, profile: KgProfile, prompts: &Prompts) -> Self {
        Self {
            format: FORMAT.into(),
            version: VERSION,
            saved_at: crate::overlay::now(),
            kg: kg.into(),
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
        serde_json::to_string_pretty(self).unwrap_or_default()
    }

    /// Writes the session to `path` whole or not at all (a temporary file, then a rename).
    pub fn save(&self, path: &Path) -> Result<(), SessionError> {
        let io = |e: std::io::Error| SessionError::Io { path: path.to_path_buf(), message: e.to_string() };
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
        let corrupt = |e: serde_json::Error| SessionError::Corrupt {
            path: path.to_path_buf(),
            message: format!("{e} (line {}, column {})", e.line(), e.column()),
        };
        let value: serde_json::Value = serde_json::from_str(text).map_err(corrupt)?;
        if value.get("format").and_then(|f| f.as_str()) != Some(FORMAT) {
            return Err(SessionError::NotASession { path: path.to_path_buf() });
        }
        match value.get("version").and_then(|v| v.as_u64()) {
            Some(v) if v > u64::from(VERSION) => {
                return Err(SessionError::Newer { path: path.to_path_buf(), version: v });
            }
            Some(_) => {}
            None => {
                return Err(SessionError::Corrupt {
                    path: path.to_path_buf(),
                    message: "no \"version\" number".into(),
                });
            }
        }
        serde_json::from_value(value)
            .map_err(|e| SessionError::Corrupt { path: path.to_path_buf(), message: e.to_string() })
    }

    pub fn prompts(&self) -> Result<Prompts, SessionError> {
        Ok(Prompts::from_texts(&self.prompts)?)
    }

    /// Starts recording a new run (a re-ask is a new run too).
    pub fn begin(&mut self, question: &str, topics: Topics) {
        self.runs.push(RunRecord {
            question: question.into(),
            topics,
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

    /// A fresh run of recorded run `index`, before any step.
    pub fn start(&self, index: usize, prompts: Arc<Prompts>) -> Result<Run, SessionError> {
        self.start_in(Registry::builtin(), index, prompts)
    }

    /// As [`Session::start`], for a method `registry` knows.
    pub fn start_in(&self, registry: &Registry, index: usize, prompts: Arc<Prompts>) -> Result<Run, SessionError> {
        let record = self.runs.get(index).ok_or(SessionError::Diverged { run: index, why: "no such run".into() })?;
        Run::new_in(
            registry,
            &record.question,
            record.topics.clone(),
            self.settings.clone(),
            prompts,
            self.profile.clone(),
            &self.kg,
        )
        .map_err(|source| SessionError::Engine { run: index, source })
    }

    /// Replays run `index` to its end from the recording alone: no network, no model. Fails
    /// if the engine asks for anything other than what was recorded.
    pub fn replay(&self, index: usize) -> Result<Run, SessionError> {
        self.replay_in(Registry::builtin(), index)
    }

    /// As [`Session::replay`], for a method `registry` knows.
    pub fn replay_in(&self, registry: &Registry, index: usize) -> Result<Run, SessionError> {
        let mut run = self.start_in(registry, index, Arc::new(self.prompts()?))?;
        let engine = |source| SessionError::Engine { run: index, source };
        for (i, moment) in self.runs[index].moments.iter().enumerate() {
            match moment {
                Moment::Exchange { requests, responses, elapsed_ms } => {
                    match run.poll() {
                        Poll::Need(asked) if &asked == requests => {}
                        Poll::Need(_) => {
                            return Err(SessionError::Diverged {
                                run: index,
                                why: format!("moment {i}: the engine asked for other requests than were recorded"),
                            });
                        }
                        Poll::Finished => {
                            return Err(SessionError::Diverged {
                                run: index,
                                why: format!("moment {i}: the run finished before the recording did"),
                            });
                        }
                    }
                    run.feed_timed(responses.clone(), std::time::Duration::from_millis(*elapsed_ms)).map_err(engine)?;
                }
                Moment::Override { change } => {
                    run.apply(change.clone()).map_err(engine)?;
                }
                Moment::Rewind { to } => {
                    run.rewind(*to).map_err(engine)?;
                }
            }
        }
        Ok(run)
    }

    /// The recorded answers to `requests` in run `index`, if that batch was recorded.
    pub fn answers(&self, index: usize, requests: &[Request]) -> Option<(Vec<Response>, u64)> {
        self.runs.get(index)?.moments.iter().find_map(|m| match m {
            Moment::Exchange { requests: r, responses, elapsed_ms } if r == requests => {
                Some((responses.clone(), *elapsed_ms))
            }
            _ => None,
        })
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
