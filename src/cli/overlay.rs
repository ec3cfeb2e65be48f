//! Opening the correction store and seeing a KG through it: shared by `ask`, `kg` and `fix`.

use super::SetupArgs;
use crate::config::Config;
use crate::kg::KnowledgeGraph;
use crate::overlay::store::{CorrectionStore, SledStore, StoreError};
use crate::overlay::{Correction, OverlayKg};
use anyhow::Result;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

/// The store's location: the config's, else `$XDG_DATA_HOME/ongraph/overlay`.
pub fn store_path(config: &Config) -> PathBuf {
    config
        .defaults
        .overlay
        .clone()
        .unwrap_or_else(|| dirs::data_dir().unwrap_or_else(std::env::temp_dir).join("ongraph").join("overlay"))
}

/// Opens the store, waiting up to two seconds for another ongraph process to let go of it
/// (readers hold it only for milliseconds).
pub fn open_store(config: &Config) -> Result<SledStore, StoreError> {
    let path = store_path(config);
    let mut tries = 0;
    loop {
        match SledStore::open(&path) {
            Err(StoreError::Locked { .. }) if tries < 20 => {
                tries += 1;
                std::thread::sleep(Duration::from_millis(100));
            }
            other => return other,
        }
    }
}

/// Which overlay scope a `--kg` value names: `demo`, a config name, an endpoint URL, or
/// `file:` and the file's absolute path (so two files called kb.txt do not share corrections).
pub fn kg_scope(setup: &SetupArgs, config: &Config) -> String {
    let name = setup.kg.clone().unwrap_or_else(|| config.defaults.kg.clone());
    if name == "demo" || config.kg.contains_key(&name) || name.starts_with("http://") || name.starts_with("https://") {
        return name;
    }
    let path = std::fs::canonicalize(&name).unwrap_or_else(|_| PathBuf::from(&name));
    format!("file:{}", path.display())
}

/// The corrections for `scope` (undone ones too; the overlay applies only the active ones), read
/// without creating a store that does not exist yet.
pub fn corrections_for(config: &Config, scope: &str) -> Result<Vec<Correction>> {
    if !store_path(config).exists() {
        return Ok(Vec::new());
    }
    let store = match open_store(config) {
        // Opening writes; reading need not: a full disk still shows what is stored.
        Err(StoreError::DiskFull { .. }) => {
            tracing::warn!("the correction store's disk is full: reading a copy");
            SledStore::read_copy(&store_path(config))?
        }
        other => other?,
    };
    Ok(store.list(scope)?)
}

/// `kg` seen through its corrections (unless `enabled` is false) and the run's scenario.
pub fn with_overlay(
    kg: Arc<dyn KnowledgeGraph>,
    config: &Config,
    setup: &SetupArgs,
    enabled: bool,
) -> Result<(Arc<dyn KnowledgeGraph>, usize)> {
    let hidden = match &setup.scenario {
        Some(path) => crate::overlay::scenario::load(path, setup.scenario_id.as_deref())?,
        None => Vec::new(),
    };
    let corrections = if enabled { corrections_for(config, &kg_scope(setup, config))? } else { Vec::new() };
    if corrections.is_empty() && hidden.is_empty() {
        return Ok((kg, 0));
    }
    if !hidden.is_empty() {
        tracing::info!(hidden = hidden.len(), "scenario: triples hidden for this run");
    }
    let overlay = OverlayKg::new(kg, &corrections).with_hidden(&hidden);
    let active = overlay.active_corrections();
    tracing::info!(active, "correction overlay applied");
    Ok((Arc::new(overlay), active))
}
