//! The correction store: where it is, opening it, and the corrections a KG's scope holds.

use super::Selection;
use super::scope::{KgScope, kg_argument};
use crate::config::Config;
use crate::overlay::store::{Aside, CorrectionStore, ReadCopy, SledStore, StoreError};
use crate::overlay::team::Apply;
use crate::overlay::team_state::{base_for, verdict};
use crate::overlay::{Correction, Draft, default_author};
use anyhow::{Result, bail};
use std::path::PathBuf;

/// The store's location: the config's, else `$XDG_DATA_HOME/ongraph/overlay`.
pub fn store_path(config: &Config) -> PathBuf {
    config
        .defaults
        .overlay
        .clone()
        .unwrap_or_else(|| dirs::data_dir().unwrap_or_else(std::env::temp_dir).join("ongraph").join("overlay"))
}

/// Where the impact index lives: beside the store (see `impact`).
pub fn impact_index_path(config: &Config) -> PathBuf {
    let store = store_path(config);
    let index = store.with_file_name("impact-index");
    // A store itself named so (an `overlay` path chosen so) keeps the index beside it, never in
    // its place.
    if index == store { store.with_file_name("impact-index.idx") } else { index }
}

/// Opens the store (waiting up to two seconds for another ongraph process to let go of it:
/// readers hold it only for milliseconds), its corrections signed by the configured author.
/// What the user should know of the opening (an unfinished snapshot set aside) is said on
/// stderr, once: the file is out of the way after.
pub fn open_store(config: &Config) -> Result<SledStore, StoreError> {
    let store = SledStore::open(&store_path(config))?;
    for notice in store.notices() {
        use std::io::Write as _;
        let mut err = crate::printable::Printable::new(std::io::stderr().lock());
        let _ = writeln!(err, "{notice}");
    }
    Ok(store.with_author(default_author(config.defaults.author.as_deref())))
}

/// Where the correction a command names by id is stored: ids are the store's, so an id finds
/// its correction whichever KG the command is on. One of another KG than `scope` is acted on
/// when `--kg` was left to its default (the id says which correction was meant: the KG is then
/// named in the output, see [`Owner::elsewhere`]), and refused when `--kg` named another KG:
/// the user said two things that disagree (an id read off another KG's count, a mistyped
/// id), and an undo cannot be taken back, so nothing is done on a guess.
fn owner_of(store: &SledStore, scope: &KgScope, selection: &Selection, id: u64) -> Result<Owner> {
    let Some(c) = store.find(id)? else {
        bail!(
            "no correction {id} in the correction store (fix list shows a knowledge graph's corrections and their ids)"
        )
    };
    if scope.holds(&c.kg) {
        return Ok(Owner { key: c.kg, elsewhere: None });
    }
    let theirs = kg_argument(&c.kg).to_string();
    if let Some(given) = &selection.kg {
        bail!("correction {id} belongs to knowledge graph {theirs}, not {given}: pass --kg {theirs} to act on it");
    }
    Ok(Owner { key: c.kg, elsewhere: Some(theirs) })
}

/// What is done to a stored correction, by id.
#[derive(Clone, Debug, PartialEq)]
pub enum Change {
    Undo,
    /// Replaced by a correction made since (its reason, if given).
    Supersede(Option<String>),
    /// A teammate's correction approved (or rejected), with a reason if given.
    Review {
        approve: bool,
        reason: Option<String>,
    },
}

/// Does `change` to correction `id` of `scope` (the KG `selection` names) in the store: the
/// correction as it is now, and where it was found. What `fix undo`, `fix supersede`, `fix
/// review` and the UI's undo and review all go through.
pub fn change_correction(
    config: &Config,
    scope: &KgScope,
    selection: &Selection,
    id: u64,
    change: &Change,
) -> Result<(Correction, Owner)> {
    let store = open_store(config)?;
    let owner = owner_of(&store, scope, selection, id)?;
    let c = match change {
        Change::Undo => store.undo(&owner.key, id)?,
        Change::Supersede(reason) => store.set_aside(&owner.key, id, Aside::Supersede, reason.as_deref())?,
        Change::Review { approve, reason } => store.review(&owner.key, id, *approve, reason.as_deref())?,
    };
    Ok((c, owner))
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

/// Stores `drafts` as `scope`'s corrections, in order: in the shared set `set` (its graph) when
/// one is in use, queued to be sent and based on the KG as the set's last correction of the
/// same fact left it, under the name teammates know the KG by (see [`KgScope`]); else under
/// the KG's own key. Each is durable when this returns.
pub fn store_drafts(
    config: &Config,
    scope: &KgScope,
    set: Option<&str>,
    drafts: Vec<Draft>,
) -> Result<Vec<Correction>, StoreError> {
    let store = open_store(config)?;
    let mut stored = Vec::with_capacity(drafts.len());
    for draft in drafts {
        stored.push(match set {
            Some(set) => {
                let base = base_for(&list_scope(&store, scope)?, set, &draft.op);
                store.add_shared(&scope.shared_key, draft, set, base)?
            }
            None => store.add(&scope.key, draft)?,
        });
    }
    Ok(stored)
}

/// The generation of the store `config` names, without opening it (0 when there is none).
pub fn store_generation(config: &Config) -> Result<u64, StoreError> {
    crate::overlay::store::acknowledged(&store_path(config))
}
