//! The shared set a command uses: which one, and syncing with it (what is queued is sent, what
//! teammates published is pulled).

use super::Selection;
use super::store::open_store;
use crate::config::Config;
use crate::overlay::team::SharedEntry;
use crate::overlay::team::{Team, TeamError, corrections};
use anyhow::{Result, bail};

/// The shared set a command uses: `--shared NAME`, else `[defaults] shared`; none with
/// `--no-shared`.
pub fn shared_entry<'c>(selection: &Selection, config: &'c Config) -> Result<Option<(String, &'c SharedEntry)>> {
    if selection.no_shared {
        return Ok(None);
    }
    let Some(name) = selection.shared.clone().or_else(|| config.defaults.shared.clone()) else { return Ok(None) };
    match config.shared.get(&name) {
        Some(entry) => Ok(Some((name, entry))),
        None => {
            let known: Vec<&str> = config.shared.keys().map(String::as_str).collect();
            let known = if known.is_empty() { "none is configured".to_string() } else { known.join(", ") };
            bail!("no shared set {name:?} in the config (shared sets: {known})")
        }
    }
}

/// The shared set a command uses, ready to sync with (see [`shared_entry`]).
pub fn open_team(selection: &Selection, config: &Config) -> Result<Option<Team>> {
    match shared_entry(selection, config)? {
        Some((name, entry)) => Ok(Some(Team::open(&name, entry)?)),
        None => Ok(None),
    }
}

/// What a sync did.
pub struct Synced {
    pub team: String,
    pub pushed: usize,
    /// Refused for good by the server this time (set aside as rejected, see `fix list`).
    pub rejected: usize,
    /// Still queued for the set.
    pub pending: usize,
    /// New records pulled; `None` when no pull was made (the server could not be reached, or
    /// the pull failed: `problem` says why).
    pub pulled: Option<usize>,
    /// Why something could not be sent or pulled (the server, never the local store: that is
    /// an error).
    pub problem: Option<String>,
    /// What the pull skipped or flagged, one line per kind (see [`crate::overlay::team::Pulled::remarks`]).
    pub remarks: Vec<String>,
}

impl Synced {
    /// What the user should know, if anything: what is not shared yet, or that teammates'
    /// corrections could not be pulled.
    pub fn note(&self) -> Option<String> {
        let rejected = (self.rejected > 0).then(|| {
            format!(
                "{} rejected by {} for good: see fix list (they still apply here)",
                corrections(self.rejected),
                self.team
            )
        });
        let rest = self.note_pending();
        match (rejected, rest) {
            (Some(r), Some(p)) => Some(format!("{r}\n{p}")),
            (r, p) => r.or(p),
        }
    }

    /// The remarks of the pull and the note, if any: what a command that syncs before its
    /// own work says on stderr.
    pub fn all_said(&self) -> Option<String> {
        let lines: Vec<String> = self.remarks.iter().cloned().chain(self.note()).collect();
        (!lines.is_empty()).then(|| lines.join("\n"))
    }

    fn note_pending(&self) -> Option<String> {
        // A server's words inside a line of ongraph's own: one line, whatever they hold (a
        // line break in them forged rows under `fix list`).
        let problem = self.problem.as_deref().map(crate::safe_text::one_line);
        if self.pending > 0 {
            let why = problem.as_deref().unwrap_or("the server refused it");
            Some(format!("{} not yet shared ({why}); sent at the next command", corrections(self.pending)))
        } else {
            problem.map(|p| format!("corrections not pulled from {} ({p}): using those pulled before", self.team))
        }
    }
}

/// Sends what is queued for `team` and pulls what is new (all of it with `full`). A server that
/// cannot be reached is said in [`Synced::problem`], not an error: the local corrections still
/// work, and the queue waits for the next sync.
pub async fn sync_team(team: &Team, config: &Config, full: bool) -> Result<Synced> {
    let open = || open_store(config);
    let pushed = team.push(&open).await?;
    // A server that could not be reached for sending is not asked again for pulling: a
    // command waits for it once, not twice.
    let unreachable = pushed.unreachable();
    let mut problem = pushed.error.map(|e| e.to_string());
    let mut remarks = Vec::new();
    let pulled = match if unreachable { None } else { Some(team.pull(&open, full).await) } {
        None => None,
        Some(Ok(pulled)) => {
            remarks = pulled.remarks(team.name());
            Some(pulled.new)
        }
        Some(Err(TeamError::Store(e))) => return Err(e.into()),
        Some(Err(e)) => {
            // The same server down twice is said once.
            problem.get_or_insert_with(|| e.to_string());
            None
        }
    };
    Ok(Synced {
        team: team.name().to_string(),
        pushed: pushed.sent,
        rejected: pushed.rejected,
        pending: pushed.pending,
        pulled,
        problem,
        remarks,
    })
}

/// Before a command reads corrections: syncs the shared set in use (if any); what the user
/// should know of it, if anything.
pub async fn sync_before_reading(selection: &Selection, config: &Config) -> Result<Option<String>> {
    let Some(team) = open_team(selection, config)? else { return Ok(None) };
    Ok(sync_team(&team, config, false).await?.all_said())
}

#[cfg(test)]
mod tests {
    use super::Synced;

    #[test]
    fn a_servers_line_breaks_never_make_lines_of_a_note() {
        let synced = |pending| Synced {
            team: "t".into(),
            pushed: 0,
            rejected: 0,
            pending,
            pulled: None,
            problem: Some("HTTP 500: oops\n    7  active  shared    retract EVERYTHING  (forged)".into()),
            remarks: Vec::new(),
        };
        for pending in [0, 2] {
            let note = synced(pending).note().unwrap();
            assert_eq!(note.lines().count(), 1, "{note}");
            assert!(note.contains("oops"), "{note}");
        }
    }
}
