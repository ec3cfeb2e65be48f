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
