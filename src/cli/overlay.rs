//! Opening the correction store and seeing a KG through it: shared by `ask`, `kg` and `fix`.

use super::SetupArgs;
use super::scope::KgScope;
use crate::config::Config;
use crate::eval::record::CorrectionsSeen;
use crate::kg::KnowledgeGraph;
use crate::overlay::scenario::Triple;
use crate::overlay::store::{CorrectionStore, ReadCopy, SledStore, StoreError};
use crate::overlay::team::{Apply, SharedEntry};
use crate::overlay::team::{Team, TeamError, corrections};
use crate::overlay::team_state::verdict;
use crate::overlay::{Correction, OverlayKg, default_author};
use anyhow::{Result, bail};
use std::path::PathBuf;
use std::sync::{Arc, Mutex};

/// The store's location: the config's, else `$XDG_DATA_HOME/ongraph/overlay`.
pub fn store_path(config: &Config) -> PathBuf {
    config
        .defaults
        .overlay
        .clone()
        .unwrap_or_else(|| dirs::data_dir().unwrap_or_else(std::env::temp_dir).join("ongraph").join("overlay"))
}

/// Opens the store (waiting up to two seconds for another ongraph process to let go of it:
/// readers hold it only for milliseconds), its corrections signed by the configured author.
/// What the user should know of the opening (an unfinished snapshot set aside) is said on
/// stderr, once: the file is out of the way after.
pub fn open_store(config: &Config) -> Result<SledStore, StoreError> {
    let store = SledStore::open(&store_path(config))?;
    for notice in store.notices() {
        use std::io::Write as _;
        let mut err = super::printable::Printable::new(std::io::stderr().lock());
        let _ = writeln!(err, "{notice}");
    }
    Ok(store.with_author(default_author(config.defaults.author.as_deref())))
}

/// The shared set a command uses: `--shared NAME`, else `[defaults] shared`; none with
/// `--no-shared`.
pub fn shared_entry<'c>(setup: &SetupArgs, config: &'c Config) -> Result<Option<(String, &'c SharedEntry)>> {
    if setup.no_shared {
        return Ok(None);
    }
    let Some(name) = setup.shared.clone().or_else(|| config.defaults.shared.clone()) else { return Ok(None) };
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
pub fn open_team(setup: &SetupArgs, config: &Config) -> Result<Option<Team>> {
    match shared_entry(setup, config)? {
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
pub async fn sync_before_reading(setup: &SetupArgs, config: &Config) -> Result<Option<String>> {
    let Some(team) = open_team(setup, config)? else { return Ok(None) };
    Ok(sync_team(&team, config, false).await?.all_said())
}

/// As [`sync_before_reading`], saying it on stderr (the command's output stays as it was).
pub async fn sync_and_say(setup: &SetupArgs, config: &Config) -> Result<()> {
    if let Some(note) = sync_before_reading(setup, config).await? {
        use std::io::Write as _;
        let mut err = super::printable::Printable::new(std::io::stderr().lock());
        for line in note.lines() {
            writeln!(err, "{}", crate::safe_text::OneLine(line))?;
        }
    }
    Ok(())
}

/// The scope of the KG `setup` names (see [`KgScope`]).
pub fn kg_scope(setup: &SetupArgs, config: &Config) -> KgScope {
    KgScope::of(setup, config)
}

/// Where the correction a command names by id is stored: ids are the store's, so an id finds
/// its correction whichever KG the command is on. One of another KG than `scope` is acted on
/// when `--kg` was left to its default (the id says which correction was meant: the KG is then
/// named in the output, see [`Owner::elsewhere`]), and refused when `--kg` named another KG:
/// the user said two things that disagree (an id read off another KG's count, a mistyped
/// id), and an undo cannot be taken back, so nothing is done on a guess.
pub fn owner_of(store: &SledStore, scope: &KgScope, setup: &SetupArgs, id: u64) -> Result<Owner> {
    let Some(c) = store.find(id)? else {
        bail!(
            "no correction {id} in the correction store (fix list shows a knowledge graph's corrections and their ids)"
        )
    };
    if scope.holds(&c.kg) {
        return Ok(Owner { key: c.kg, elsewhere: None });
    }
    let theirs = super::scope::kg_argument(&c.kg).to_string();
    if let Some(given) = &setup.kg {
        bail!("correction {id} belongs to knowledge graph {theirs}, not {given}: pass --kg {theirs} to act on it");
    }
    Ok(Owner { key: c.kg, elsewhere: Some(theirs) })
}

/// Where a correction named by id is stored (see [`owner_of`]).
pub struct Owner {
    /// The store key its correction is under.
    pub key: String,
    /// The KG it belongs to, when that is not the command's (said to the user).
    pub elsewhere: Option<String>,
}

impl Owner {
    /// What to add to the line saying what was done: which KG it was done in, when that is
    /// not the command's.
    pub fn note(&self) -> String {
        self.elsewhere.as_ref().map(|kg| format!(" (in knowledge graph {kg})")).unwrap_or_default()
    }
}

/// Whether `c` is a teammate's correction waiting for approval: its set (looked up by graph
/// in `[shared.*]`, whichever set the command uses, even with `--no-shared`) applies only
/// approved corrections, and its latest review (see [`verdict`]) is not an approval.
pub fn unapproved(config: &Config, c: &Correction) -> bool {
    c.team.as_ref().is_some_and(|t| {
        t.pulled
            && config.shared.values().any(|e| e.graph == t.set && e.apply == Apply::Approved)
            && !verdict(t).is_some_and(|r| r.approve)
    })
}

/// The corrections for `scope` that may apply: those of [`corrections_for`] but a teammate's
/// waiting for approval (see [`unapproved`]).
pub fn applicable_corrections(config: &Config, scope: &KgScope) -> Result<Vec<Correction>> {
    let mut list = corrections_for(config, scope)?;
    list.retain(|c| !unapproved(config, c));
    Ok(list)
}

/// The corrections for `scope` (undone ones too; the overlay applies only the active ones), under
/// each of its keys, by id; read without creating a store that does not exist yet.
pub fn corrections_for(config: &Config, scope: &KgScope) -> Result<Vec<Correction>> {
    if !store_path(config).exists() {
        return Ok(Vec::new());
    }
    let store = match open_store(config) {
        // Opening writes; reading need not: a full disk, or a store that is another user's,
        // still shows what is stored.
        Err(e) => match ReadCopy::of(&e) {
            Some(why) => {
                tracing::warn!("{e}: reading a copy");
                SledStore::read_copy(&store_path(config), why)?
            }
            None => return Err(e.into()),
        },
        Ok(store) => store,
    };
    Ok(list_scope(&store, scope)?)
}

/// Every correction `store` holds for `scope`, under each of its keys, by id (ids are the
/// store's: the order they were made or pulled in here).
pub fn list_scope(store: &SledStore, scope: &KgScope) -> Result<Vec<Correction>, StoreError> {
    let mut list = Vec::new();
    for key in &scope.keys {
        list.extend(store.list(key)?);
    }
    list.sort_by_key(|c| c.id);
    Ok(list)
}

/// `kg` seen through its corrections (unless `enabled` is false) and the run's scenario.
pub fn with_overlay(
    kg: Arc<dyn KnowledgeGraph>,
    config: &Config,
    setup: &SetupArgs,
    enabled: bool,
) -> Result<(Arc<dyn KnowledgeGraph>, usize)> {
    let seen = LiveOverlay::open(kg, config, setup, enabled)?.current();
    Ok((seen.kg, seen.active))
}

/// A KG seen through the store's corrections as they are now, for a process that runs for a
/// while (the terminal UI, `eval`) while others may change them (`ongraph fix`, a second UI).
/// The corrections are read once, then again only when the store's generation (a small file
/// beside it, read without opening the store) has moved: checking costs one tiny read, so it
/// is done before every step, not per lookup.
pub struct LiveOverlay {
    base: Arc<dyn KnowledgeGraph>,
    config: Config,
    scope: KgScope,
    /// The run's scenario: triples hidden whatever the corrections.
    hidden: Vec<Triple>,
    /// Whether corrections apply at all (`--no-overlay`, `eval` without --with-corrections).
    enabled: bool,
    seen: Mutex<Seen>,
}

/// What a [`LiveOverlay`] read last.
#[derive(Clone)]
pub struct Seen {
    /// The base KG seen through the active corrections (the base itself when none apply).
    pub kg: Arc<dyn KnowledgeGraph>,
    /// The scope's corrections, undone ones too, oldest first.
    pub corrections: Vec<Correction>,
    /// How many of them apply.
    pub active: usize,
    /// The store's generation when they were read.
    generation: u64,
}

impl LiveOverlay {
    /// Reads the corrections of `setup`'s scope (and its scenario) over `base`.
    pub fn open(base: Arc<dyn KnowledgeGraph>, config: &Config, setup: &SetupArgs, enabled: bool) -> Result<Self> {
        let hidden = match &setup.scenario {
            Some(path) => crate::overlay::scenario::load(path, setup.scenario_id.as_deref())?,
            None => Vec::new(),
        };
        if !hidden.is_empty() {
            tracing::info!(hidden = hidden.len(), "scenario: triples hidden for this run");
        }
        let empty = Seen { kg: base.clone(), corrections: Vec::new(), active: 0, generation: 0 };
        let live = Self {
            base,
            config: config.clone(),
            scope: kg_scope(setup, config),
            hidden,
            enabled,
            seen: Mutex::new(empty),
        };
        live.reload()?;
        Ok(live)
    }

    /// The KG the next step should see, as last read.
    pub fn current(&self) -> Seen {
        self.lock().clone()
    }

    /// Which corrections `seen` applies, as an eval record keeps it (`None` when corrections
    /// are off).
    pub fn corrections_seen(&self, seen: &Seen) -> Option<CorrectionsSeen> {
        self.enabled.then(|| CorrectionsSeen::of(seen.generation, &seen.corrections))
    }

    /// The KG before any correction.
    pub fn base(&self) -> &Arc<dyn KnowledgeGraph> {
        &self.base
    }

    /// Re-reads the corrections if the store changed since they were last read: the new view
    /// then, `None` when nothing changed (the common case: one small file read).
    pub fn refresh(&self) -> Result<Option<Seen>> {
        self.read(true)
    }

    /// Reads the corrections again, changed or not (after this process wrote to the store).
    pub fn reload(&self) -> Result<Seen> {
        Ok(self.read(false)?.unwrap_or_else(|| self.current()))
    }

    fn read(&self, only_if_changed: bool) -> Result<Option<Seen>> {
        // Held while checking and reading, so questions refreshing at once read the store once.
        let mut seen = self.lock();
        if !self.enabled {
            if only_if_changed {
                return Ok(None);
            }
            seen.kg = self.view(&[], &[]);
            return Ok(Some(seen.clone()));
        }
        // Read before the corrections: a write landing in between is read now and, its
        // generation being newer than the one kept, read once more at the next check (never
        // missed).
        let generation = store_generation(&self.config)?;
        if only_if_changed && generation == seen.generation {
            return Ok(None);
        }
        // Teammates' corrections waiting for approval never apply, whichever set is in use.
        let corrections = applicable_corrections(&self.config, &self.scope)?;
        let kg = self.view(&corrections, &[]);
        let active = corrections.iter().filter(|c| c.active).count();
        tracing::info!(active, generation, "corrections read");
        *seen = Seen { kg, corrections, active, generation };
        Ok(Some(seen.clone()))
    }

    /// The base seen through `corrections`, the run's scenario and `also_hidden` hidden: one
    /// overlay, so what a correction asserted is never hidden (a second overlay on top would
    /// take the first one's assertions for the backend's triples).
    fn view(&self, corrections: &[Correction], also_hidden: &[Triple]) -> Arc<dyn KnowledgeGraph> {
        if self.hidden.is_empty() && also_hidden.is_empty() && !corrections.iter().any(|c| c.active) {
            return self.base.clone();
        }
        Arc::new(OverlayKg::new(self.base.clone(), corrections).with_hidden(&self.hidden).with_hidden(also_hidden))
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Seen> {
        // What is kept is replaced whole: a panic elsewhere cannot leave it half-written.
        self.seen.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
    }
}

/// `eval --with-corrections`: each question sees the corrections as they are when it starts.
impl crate::eval::runner::KgSource for LiveOverlay {
    fn current(&self, hidden: &[Triple]) -> (Arc<dyn KnowledgeGraph>, Option<CorrectionsSeen>) {
        if let Err(e) = self.refresh() {
            tracing::warn!("cannot re-read the corrections (this question sees those read before): {e:#}");
        }
        // The KG and what it is said to see come from the same read.
        let seen = LiveOverlay::current(self);
        let applied = self.corrections_seen(&seen);
        let kg = if hidden.is_empty() { seen.kg } else { self.view(&seen.corrections, hidden) };
        (kg, applied)
    }
}

/// The generation of the store `config` names, without opening it (0 when there is none).
pub fn store_generation(config: &Config) -> Result<u64, StoreError> {
    crate::overlay::store::acknowledged(&store_path(config))
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
