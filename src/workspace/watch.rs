//! The terminal UI's sync with its shared set before each step: what is queued is sent and
//! what teammates published is pulled, so a teammate's correction applies from the UI's next
//! step. A server that is down costs one step at most one connect timeout; then it is left
//! alone for a while (longer each time it still fails) and said once, not at every step.

use super::Selection;
use super::store::{open_store, store_generation};
use super::team::shared_entry;
use crate::config::Config;
use crate::overlay::team::{PullCache, Team, TeamError};
use anyhow::Result;
use std::sync::Mutex;
use std::time::{Duration, Instant};

/// How long one step's sync may take (each request): a step must not wait on a slow server
/// for the set's full `timeout_secs`.
const STEP_TIMEOUT_SECS: u64 = 2;
/// How long a server that failed is left alone first; doubled on each failure after.
const FIRST_BACKOFF: Duration = Duration::from_secs(5);
const MAX_BACKOFF: Duration = Duration::from_secs(120);

pub struct TeamWatch {
    team: Team,
    config: Config,
    state: Mutex<Watch>,
}

#[derive(Default)]
struct Watch {
    /// No sync before this (the server failed last time).
    retry_at: Option<Instant>,
    backoff: Duration,
    /// The failure was said (the next success says it is over).
    said: bool,
    /// The store's generation when a send last found nothing to send: while it has not moved,
    /// nothing was queued since.
    sent_at: Option<u64>,
    pulled: PullCache,
}

impl TeamWatch {
    /// The shared set `selection` uses, if any, with a short timeout for each step's sync.
    pub fn open(selection: &Selection, config: &Config) -> Result<Option<Self>> {
        let Some((name, entry)) = shared_entry(selection, config)? else { return Ok(None) };
        let mut entry = entry.clone();
        entry.timeout_secs = entry.timeout_secs.min(STEP_TIMEOUT_SECS);
        let team = Team::open(&name, &entry)?;
        Ok(Some(Self { team, config: config.clone(), state: Mutex::new(Watch::default()) }))
    }

    /// Sends and pulls, unless the server is being left alone after a failure. What the user
    /// should be told, if anything changed about the server. Blocking: call it off the UI's
    /// loop (the store worker's blocking pool), within the tokio runtime.
    pub fn step(&self) -> Option<TeamNote> {
        // Held throughout: only the store worker calls this, one step at a time.
        let mut watch = self.lock();
        if watch.retry_at.is_some_and(|t| Instant::now() < t) {
            return None;
        }
        let synced = match tokio::runtime::Handle::try_current() {
            Ok(runtime) => runtime.block_on(self.sync(&mut watch)),
            Err(e) => Err(anyhow::anyhow!("no runtime to sync in: {e}")),
        };
        let (problem, remarks) = match synced {
            // The local store (held by another process a moment, say): the next step tries again.
            Err(e) => {
                tracing::warn!(set = self.team.name(), "cannot sync with the shared set this step: {e:#}");
                return None;
            }
            Ok(said) => said,
        };
        match problem {
            Some(problem) => {
                watch.backoff = (watch.backoff * 2).clamp(FIRST_BACKOFF, MAX_BACKOFF);
                watch.retry_at = Some(Instant::now() + watch.backoff);
                tracing::warn!(set = self.team.name(), %problem, retry_in = ?watch.backoff, "shared set unreachable");
                let name = self.team.name();
                (!std::mem::replace(&mut watch.said, true)).then(|| {
                    TeamNote::Down(format!(
                        "shared set {name}: {problem}; tried again in the background, meanwhile the corrections pulled before apply"
                    ))
                })
            }
            None => {
                let was_said = watch.said;
                (watch.said, watch.retry_at, watch.backoff) = (false, None, Duration::ZERO);
                let name = self.team.name();
                let back = was_said.then(|| format!("shared set {name} answers again: corrections shared and pulled"));
                // The status line holds one line: the kinds of skips joined on it.
                match (back, remarks.is_empty()) {
                    (Some(back), true) => Some(TeamNote::Back(back)),
                    (Some(back), false) => Some(TeamNote::Back(format!("{back}; {}", remarks.join("; ")))),
                    (None, false) => Some(TeamNote::Remark(remarks.join("; "))),
                    (None, true) => None,
                }
            }
        }
    }

    /// Sends what is queued (unless nothing was written since the last send found the queue
    /// empty) and pulls what is new (opening no store when nothing is): why the server could
    /// not be reached, if it could not, and what the pull skipped or flagged.
    async fn sync(&self, watch: &mut Watch) -> Result<(Option<String>, Vec<String>)> {
        let open = || open_store(&self.config);
        // Read before sending: a write after it moves the generation, and the next step sends.
        let generation = store_generation(&self.config).ok();
        if generation.is_none() || generation != watch.sent_at {
            let pushed = self.team.push(&open).await?;
            if let Some(error) = pushed.error {
                return Ok((Some(error.to_string()), Vec::new()));
            }
            let untouched = pushed.sent == 0 && pushed.rejected == 0;
            watch.sent_at = if untouched { generation } else { None };
        }
        match self.team.pull_cached(&open, false, &mut watch.pulled).await {
            Ok(pulled) => Ok((None, pulled.remarks(self.team.name()))),
            Err(TeamError::Store(e)) => Err(e.into()),
            Err(e) => Ok((Some(e.to_string()), Vec::new())),
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Watch> {
        // Plain values, replaced whole: a panic elsewhere cannot leave them half-written.
        self.state.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
    }
}

/// What the per-step sync with a shared set has to say (see [`TeamWatch::step`]).
#[derive(Clone, Debug, PartialEq)]
pub enum TeamNote {
    /// The server stopped answering: why.
    Down(String),
    /// It answers again.
    Back(String),
    /// What a pull skipped or flagged (one line per kind).
    Remark(String),
}
