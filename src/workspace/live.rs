//! A KG seen through the correction store (and the run's scenario), kept current while a
//! process runs.

use super::Selection;
use super::scope::KgScope;
use super::store::{applicable_corrections, store_generation};
use crate::config::Config;
use crate::eval::record::CorrectionsSeen;
use crate::kg::KnowledgeGraph;
use crate::overlay::scenario::Triple;
use crate::overlay::{Correction, OverlayKg};
use anyhow::Result;
use std::sync::{Arc, Mutex};

/// `kg` seen through its corrections (unless `enabled` is false) and the run's scenario.
pub fn with_overlay(
    kg: Arc<dyn KnowledgeGraph>,
    config: &Config,
    selection: &Selection,
    enabled: bool,
) -> Result<(Arc<dyn KnowledgeGraph>, usize)> {
    let seen = LiveOverlay::open(kg, config, selection, enabled)?.current();
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
    /// Reads the corrections of `selection`'s scope (and its scenario) over `base`.
    pub fn open(base: Arc<dyn KnowledgeGraph>, config: &Config, selection: &Selection, enabled: bool) -> Result<Self> {
        let hidden = match &selection.scenario {
            Some(path) => crate::overlay::scenario::load(path, selection.scenario_id.as_deref())?,
            None => Vec::new(),
        };
        if !hidden.is_empty() {
            tracing::info!(hidden = hidden.len(), "scenario: triples hidden for this run");
        }
        let empty = Seen { kg: base.clone(), corrections: Vec::new(), active: 0, generation: 0 };
        let live = Self {
            base,
            config: config.clone(),
            scope: KgScope::of(selection, config),
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
