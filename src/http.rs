//! What the two HTTP clients (the LLM endpoint's and the SPARQL endpoint's) share, so that
//! neither imports the other: TLS set-up and the wait between retries.

use std::time::Duration;

/// Installs the ring crypto provider for rustls once; reqwest built without a provider panics
/// on its first TLS client otherwise.
pub fn install_crypto_provider() {
    let _ = rustls::crypto::ring::default_provider().install_default();
}

/// The wait before retry `attempt` (0-based): `first` doubled each time, at most 30 s, so a
/// large retry count never means an absurd (or overflowing) wait.
pub(crate) fn backoff(first: Duration, attempt: u32) -> Duration {
    let cap = Duration::from_secs(30);
    2u32.checked_pow(attempt).and_then(|f| first.checked_mul(f)).map_or(cap, |d| d.min(cap))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn backoff_doubles_and_is_capped() {
        let first = Duration::from_millis(500);
        assert_eq!(backoff(first, 0), first);
        assert_eq!(backoff(first, 3), Duration::from_secs(4));
        assert_eq!(backoff(first, 10), Duration::from_secs(30));
        assert_eq!(backoff(first, 200), Duration::from_secs(30), "no overflow");
    }
}
