//! Team-shared corrections: a shared set is a named graph on the team's own SPARQL 1.1 server,
//! holding append-only records (see [`record`]). A correction is stored and queued locally in
//! one write, then sent as one `INSERT DATA`; one that cannot be sent stays queued and goes at
//! the next sync. Pulling takes the records published since the last pull (less an overlap, so a
//! record committed late, or stamped by a clock a little behind, is not missed) into the local
//! store, by IRI, so taking one twice changes nothing. Conflicts are computed when reading
//! ([`state`]). No compare-and-swap anywhere: two writers can never overwrite each other.

pub mod record;
pub mod state;

use crate::config::SharedEntry;
use crate::kg::KgError;
use crate::kg::sparql::client::{Credentials, SparqlClient, SparqlConfig, redact};
use crate::overlay::store::{SledStore, StoreError};
use futures::StreamExt as _;
use record::{DETAIL, Gathered, PAGE, now_millis, parse_time};
use std::collections::BTreeMap;
use std::time::Duration;

/// How far before the last pull's latest record the next pull starts again: room for a record
/// whose commit was slow, or whose writer's clock is a little behind.
const OVERLAP: Duration = Duration::from_secs(600);

/// How many queries of a pull's records are in flight at once.
const FETCHING: usize = 3;

/// How long connecting to a set's server may take: one that is down or unroutable costs a
/// command this, once.
pub const CONNECT_TIMEOUT: Duration = Duration::from_secs(2);

#[derive(Debug, thiserror::Error)]
pub enum TeamError {
    #[error("[shared.{set}] {detail}")]
    Config { set: String, detail: String },
    // Not `source`: its text ends the message already (anyhow would print it twice).
    #[error("shared set {set}: {error}")]
    Server { set: String, error: KgError },
    #[error(transparent)]
    Store(#[from] StoreError),
}

/// A shared set, ready to be synced with.
pub struct Team {
    name: String,
    graph: String,
    query: SparqlClient,
    update: SparqlClient,
}

/// What sending the queue did.
pub struct Pushed {
    pub sent: usize,
    /// Refused for good by the server (or not writable as a record): set aside as rejected,
    /// kept in the store, no longer queued.
    pub rejected: usize,
    /// Still queued for this set (the server could not be reached, or refused for now).
    pub pending: usize,
    pub error: Option<TeamError>,
}

impl Pushed {
    /// Whether sending stopped because the server could not be reached at all (then pulling
    /// from it is not tried either).
    pub fn unreachable(&self) -> bool {
        matches!(&self.error, Some(TeamError::Server { error, .. }) if error.is_unreachable())
    }
}

/// How a store is opened (waiting for another process to let go of it): the store is held
/// only between network calls, never during one.
pub type Opener<'a> = &'a dyn Fn() -> Result<SledStore, StoreError>;

impl Team {
    /// The set `[shared.name]` describes, its endpoints and graph checked, and its credentials
    /// read from the environment variable it names (never shown, whatever goes wrong).
    pub fn open(name: &str, entry: &SharedEntry) -> Result<Self, TeamError> {
        let bad = |detail: String| TeamError::Config { set: name.to_string(), detail };
        crate::kg::sparql::syntax::iri(&entry.graph).map_err(|e| bad(format!("graph: {e}")))?;
        for (key, url) in [("query_endpoint", &entry.query_endpoint), ("update_endpoint", &entry.update_endpoint)] {
            // Shown without userinfo or query string, which may hold secrets.
            let shown = redact(url);
            let parsed = reqwest::Url::parse(url).map_err(|e| bad(format!("{key} {shown:?} is not a URL ({e})")))?;
            if !matches!(parsed.scheme(), "http" | "https") {
                return Err(bad(format!("{key} {shown:?} is not an http(s) URL")));
            }
            if !parsed.username().is_empty() || parsed.password().is_some() {
                // Said without the URL: it holds the secret.
                return Err(bad(format!(
                    "{key} has credentials in it: name a variable holding them in credentials_env"
                )));
            }
        }
        if entry.timeout_secs == 0 {
            return Err(bad("timeout_secs must be at least 1".into()));
        }
        let credentials = match &entry.credentials_env {
            None => None,
            Some(var) => match std::env::var(var) {
                Ok(secret) if !secret.trim().is_empty() => Some(Credentials::parse(secret.trim())),
                _ => return Err(bad(format!("credentials_env names ${var}, which is not set"))),
            },
        };
        let client = |endpoint: &str| {
            let mut config = SparqlConfig::new(endpoint);
            config.timeout = Duration::from_secs(entry.timeout_secs);
            // A server that is down costs a command at most one connect timeout: a connection
            // that fails is not tried again (the queue waits for the next command). A busy
            // server (429, 5xx) gets one short retry.
            config.max_retries = 1;
            config.backoff = Duration::from_millis(200);
            config.connect_timeout = Some(CONNECT_TIMEOUT.min(config.timeout));
            config.retry_unreachable = false;
            config.credentials = credentials.clone();
            SparqlClient::new(config).map_err(|error| TeamError::Server { set: name.to_string(), error })
        };
        Ok(Self {
            name: name.to_string(),
            graph: entry.graph.clone(),
            query: client(&entry.query_endpoint)?,
            update: client(&entry.update_endpoint)?,
        })
    }

    pub fn name(&self) -> &str {
        &self.name
    }

    /// The set's graph IRI (what local corrections name their set by).
    pub fn graph(&self) -> &str {
        &self.graph
    }

    fn server(&self, source: KgError) -> TeamError {
        TeamError::Server { set: self.name.clone(), error: source }
    }

    /// Sends this set's queued records, oldest first, each as one `INSERT DATA`, and takes
    /// each off the queue once the server has it. A record the server refuses for good (an
    /// HTTP 4xx but 401, 403, 408 and 429), or that cannot be written as a record, is set aside
    /// as rejected (kept, with the reason) and the rest go on. Any other failure (no
    /// connection, no answer, 5xx, credentials refused) stops: the rest stay queued, in order.
    pub async fn push(&self, open: Opener<'_>) -> Result<Pushed, StoreError> {
        let queued: Vec<_> = open()?.queued()?.into_iter().filter(|q| q.set == self.graph).collect();
        let (mut sent, mut rejected) = (0, 0);
        for (i, q) in queued.iter().enumerate() {
            let outcome = match q.record.insert_data(&self.graph, &now_millis()) {
                Ok(update) => self.update.update(&update).await.map_err(|e| (e.is_permanent(), self.server(e))),
                Err(e) => Err((true, TeamError::Config { set: self.name.clone(), detail: e.to_string() })),
            };
            match outcome {
                Ok(()) => {
                    open()?.mark_sent(&q.record.iri)?;
                    sent += 1;
                }
                Err((true, error)) => {
                    tracing::warn!(set = %self.name, record = %q.record.iri, %error, "a record was refused; set aside as rejected");
                    open()?.mark_rejected(&q.record.iri, &error.to_string())?;
                    rejected += 1;
                }
                Err((false, error)) => {
                    tracing::warn!(set = %self.name, record = %q.record.iri, %error, "a record could not be sent; it stays queued");
                    return Ok(Pushed { sent, rejected, pending: queued.len() - i, error: Some(error) });
                }
            }
        }
        if sent > 0 || rejected > 0 {
            tracing::info!(set = %self.name, sent, rejected, "records sent");
        }
        Ok(Pushed { sent, rejected, pending: 0, error: None })
    }

    /// Takes the records published since the last pull (all of them with `full`) into the
    /// store. Returns how many were new; records that are not well formed are skipped (and
    /// logged), never applied.
    pub async fn pull(&self, open: Opener<'_>, full: bool) -> Result<usize, TeamError> {
        self.pull_cached(open, full, &mut PullCache::default()).await
    }

    /// As [`Self::pull`], keeping in `cache` what the next pull of this process needs to find
    /// nothing new without opening the store. In three steps: how many publications there were
    /// since the last pull (the same count from the same start is nothing new), which records
    /// they were (their IRIs only), then, of those the store does not have, everything they say.
    pub async fn pull_cached(&self, open: Opener<'_>, full: bool, cache: &mut PullCache) -> Result<usize, TeamError> {
        let started = std::time::Instant::now();
        // The reader's own clock bounds where the next pull starts: a record stamped in the
        // future (a writer's clock ahead, or a hostile one) must not stop everyone's pulls.
        let now = std::time::SystemTime::now();
        let until = match &cache.until {
            Some(until) => until.clone(),
            None => open()?.pulled_until(&self.graph)?,
        };
        let since = match (&until, full) {
            (Some(t), false) => parse_time(t).map(|t| {
                let t = t.min(now);
                let from = t.checked_sub(OVERLAP).unwrap_or(std::time::UNIX_EPOCH);
                humantime::format_rfc3339_millis(from).to_string()
            }),
            _ => None,
        };
        let config = |detail: String| TeamError::Config { set: self.name.clone(), detail };
        // How many publications since then: the same count for the same start as last time
        // is nothing new (records are only ever added), found with one small answer.
        let query = record::count_published(&self.graph, since.as_deref()).map_err(config)?;
        let counted = self.query.select(&query).await.map_err(|e| self.server(e))?;
        let count = match counted.first().and_then(|row| row.get("n")) {
            Some(oxrdf::Term::Literal(n)) => n.value().parse::<usize>().ok(),
            _ => None,
        };
        if count.is_some() && cache.counted == Some((since.clone(), count)) {
            tracing::debug!(set = %self.name, ms = started.elapsed().as_millis() as u64, "nothing new");
            return Ok(0);
        }
        // Each record published since then, with its latest publication (it is stamped again
        // each time it is sent): whole when the server gave as many as it counted, else again
        // page by page, in order.
        let mut published: BTreeMap<String, Option<std::time::SystemTime>> = BTreeMap::new();
        let mut take = |rows: &[sparesults::QuerySolution]| {
            let mut last = None;
            for row in rows {
                let Some(oxrdf::Term::NamedNode(r)) = row.get("r") else { continue };
                let sent = match row.get("sent") {
                    Some(oxrdf::Term::Literal(l)) => parse_time(l.value()),
                    _ => None,
                };
                let latest = published.entry(r.as_str().to_string()).or_insert(None);
                *latest = (*latest).max(sent);
                last = Some(r.as_str().to_string());
            }
            last
        };
        let query = record::select_published(&self.graph, since.as_deref(), None).map_err(config)?;
        let rows = self.query.select(&query).await.map_err(|e| self.server(e))?;
        // A server that gives no count is taken at its word.
        if count.is_some_and(|n| n != rows.len()) {
            tracing::info!(set = %self.name, rows = rows.len(), ?count, "the list was cut short: paging it");
            let mut after: Option<String> = None;
            loop {
                let query =
                    record::select_published(&self.graph, since.as_deref(), Some(after.as_deref())).map_err(config)?;
                let rows = self.query.select(&query).await.map_err(|e| self.server(e))?;
                let last = take(&rows);
                if rows.len() < PAGE || last.is_none() || last == after {
                    break;
                }
                after = last;
            }
        } else {
            take(&rows);
        }
        let listed = started.elapsed();
        // The records this store does not have yet (asked only of those this process has not
        // seen: nothing new opens no store).
        let mut wanted = Vec::new();
        let unseen: Vec<&String> = published.keys().filter(|iri| !cache.known.contains(*iri)).collect();
        if !unseen.is_empty() {
            let store = open()?;
            for iri in unseen {
                if store.has_record(iri)? {
                    cache.known.insert(iri.clone());
                } else if let Err(e) = crate::kg::sparql::syntax::iri(iri) {
                    tracing::warn!(set = %self.name, "skipped a record: {e}");
                } else {
                    wanted.push(iri.clone());
                }
            }
        }
        let mut gathered: BTreeMap<String, Gathered> = BTreeMap::new();
        let queries = wanted.chunks(DETAIL).map(|chunk| record::select_records(&self.graph, chunk));
        let queries = queries.collect::<Result<Vec<_>, _>>().map_err(config)?;
        // A few at once: the server answers one while the last answer is read here.
        let mut answers = futures::stream::iter(queries.iter().map(|q| self.query.select(q))).buffered(FETCHING);
        while let Some(rows) = answers.next().await {
            let rows = rows.map_err(|e| self.server(e))?;
            for row in &rows {
                let Some(oxrdf::Term::NamedNode(r)) = row.get("r") else { continue };
                gathered.entry(r.as_str().to_string()).or_default().add(row);
            }
        }
        let fetched = started.elapsed();
        // Where the next pull starts: the latest publication of a record here or taken now
        // (never of one skipped), and never later than this reader's clock when the pull began.
        let mut latest = until.as_deref().and_then(parse_time).map(|t| t.min(now));
        let mut later = |sent: Option<std::time::SystemTime>| {
            if let Some(sent) = sent.map(|t| t.min(now))
                && latest.is_none_or(|l| sent > l)
            {
                latest = Some(sent);
            }
        };
        for (iri, sent) in &published {
            if cache.known.contains(iri) {
                later(*sent);
            }
        }
        let mut records = Vec::with_capacity(gathered.len());
        for (iri, g) in &gathered {
            match g.record(iri) {
                Ok(r) => {
                    later(published.get(iri).copied().flatten().or_else(|| g.published().and_then(parse_time)));
                    records.push(r);
                }
                Err(e) => tracing::warn!(set = %self.name, "skipped: {e}"),
            }
        }
        let latest = latest.map(|t| humantime::format_rfc3339_millis(t).to_string());
        let taken: Vec<String> = records.iter().map(|r| r.iri.clone()).collect();
        let new = if records.is_empty() && latest == until {
            0
        } else {
            open()?.take_pulled(&self.graph, records, latest.as_deref())?
        };
        cache.known.extend(taken);
        // The count stands for this start only if the mark did not move.
        cache.counted = (latest == until).then_some((since, count));
        cache.until = Some(latest);
        tracing::info!(
            set = %self.name,
            published = published.len(),
            fetched = gathered.len(),
            new,
            list_ms = listed.as_millis() as u64,
            fetch_ms = (fetched - listed).as_millis() as u64,
            store_ms = (started.elapsed() - fetched).as_millis() as u64,
            "pulled"
        );
        Ok(new)
    }
}

/// What a process that pulls again and again (the terminal UI, before each step) keeps from one
/// pull to the next: where the last one ended, and the records it knows the store has.
#[derive(Default)]
pub struct PullCache {
    /// The store's mark after the last pull (`None`: not read yet).
    until: Option<Option<String>>,
    known: std::collections::HashSet<String>,
    /// The start of the last pull and how many publications the server counted from it.
    counted: Option<(Option<String>, Option<usize>)>,
}

/// How a record reads in messages: "1 correction", "3 corrections".
pub fn corrections(n: usize) -> String {
    format!("{n} correction{}", if n == 1 { "" } else { "s" })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::Apply;

    fn entry(query: &str, graph: &str) -> SharedEntry {
        SharedEntry {
            query_endpoint: query.into(),
            update_endpoint: "http://127.0.0.1:7878/update".into(),
            graph: graph.into(),
            credentials_env: None,
            apply: Apply::All,
            timeout_secs: 10,
        }
    }

    #[test]
    fn a_bad_set_is_named_and_no_secret_is_shown() {
        let err = |e: SharedEntry| Team::open("team", &e).err().map(|e| e.to_string()).unwrap_or_default();
        let graph = "http://example.org/c";
        let secret = err(entry("http://ada:s3cret@127.0.0.1:7878/query", graph));
        assert_eq!(
            secret,
            "[shared.team] query_endpoint has credentials in it: name a variable holding them in credentials_env"
        );
        assert!(err(entry("ftp://127.0.0.1/query", graph)).contains("is not an http(s) URL"));
        assert!(
            err(entry("http://127.0.0.1:7878/query", "http://example.org/c> { }")).starts_with("[shared.team] graph:")
        );
        assert!(Team::open("team", &entry("http://127.0.0.1:7878/query", graph)).is_ok());
        // A URL that does not parse is shown without its userinfo or query string.
        let unparsed = err(entry("http://ada:s3cret@host:99999/query?token=t0k", graph));
        assert!(unparsed.contains("\"http://host:99999/query\" is not a URL"), "{unparsed}");
        assert!(!unparsed.contains("s3cret") && !unparsed.contains("t0k"), "{unparsed}");
        let shown = format!("{:?}", Credentials::parse("ada:s3cret"));
        assert!(!shown.contains("s3cret") && !format!("{:?}", Credentials::parse("t0ken")).contains("t0ken"));
    }
}
