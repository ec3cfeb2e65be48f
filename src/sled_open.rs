//! Opening a sled database without its panics: the overlay's store and the SPARQL query cache
//! both live in sled, and a damaged file must be a one-line error, not a backtrace.

use std::path::Path;

/// Opens sled at `path`, containing the panics its recovery can raise on some damaged files
/// (a truncated `db` beside a snapshot): `Err(())` then. The panic hook is silenced meanwhile,
/// so the user sees the one-line error, not a backtrace.
pub(crate) fn open_contained(path: &Path) -> Result<sled::Result<sled::Db>, ()> {
    // The panic hook is process-wide: one swap at a time, or two opens at once could leave the
    // silencing hook installed for good.
    static SWAP: std::sync::Mutex<()> = std::sync::Mutex::new(());
    let _one_at_a_time = SWAP.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
    let hook = std::panic::take_hook();
    std::panic::set_hook(Box::new(|info| tracing::error!(%info, "sled panicked opening a store")));
    let opened = std::panic::catch_unwind(|| sled::Config::new().path(path).open());
    std::panic::set_hook(hook);
    opened.map_err(|_| ())
}

/// Where sled writes a snapshot before renaming it into place: such a file is a snapshot whose
/// writing never finished (the rename is what completes it), yet sled 0.34 reads the newest
/// `snap.*` file whatever its ending, and calls an empty one corruption. The database is whole
/// without it (sled recovers from the previous snapshot and the log), so it is renamed out of
/// sled's way (kept, to look at, never deleted): the names it was given.
pub(crate) fn set_aside_unfinished_snapshots(dir: &Path) -> std::io::Result<Vec<String>> {
    let mut moved = Vec::new();
    for entry in std::fs::read_dir(dir)? {
        let name = entry?.file_name();
        let Some(name) = name.to_str() else { continue };
        if !(name.starts_with("snap.") && name.ends_with(".generating")) {
            continue;
        }
        let mut target = format!("unfinished-{name}");
        let mut n = 1;
        while dir.join(&target).exists() {
            n += 1;
            target = format!("unfinished-{name}.{n}");
        }
        std::fs::rename(dir.join(name), dir.join(&target))?;
        tracing::warn!(store = %dir.display(), "set aside the unfinished snapshot {name} as {target}");
        moved.push(target);
    }
    Ok(moved)
}
