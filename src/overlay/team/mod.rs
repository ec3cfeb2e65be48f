//! Team-shared corrections: a shared set is a named graph on the team's own SPARQL 1.1 server,
//! holding append-only records (see [`team_record`](super::team_record)). A correction is stored and queued locally in
//! one write, then sent as one `INSERT DATA`; one that cannot be sent stays queued and goes at
//! the next sync. Pulling takes the records published since the last pull (less an overlap, so a
//! record committed late, or stamped by a clock a little behind, is not missed) into the local
//! store, by IRI, so taking one twice changes nothing. Conflicts are computed when reading
//! ([`team_state`](super::team_state)). No compare-and-swap anywhere: two writers can never overwrite each other.

use crate::kg::KgError;
use crate::kg::sparql::client::{Credentials, SparqlClient, SparqlConfig, redact};
use crate::overlay::store::{SledStore, StoreError};
use crate::overlay::team_record::{
    self, DETAIL, Gathered, MAX_RECORD, MAX_TRIPLES, PAGE, Skip, now_millis, parse_time,
};
use futures::StreamExt as _;
use std::collections::BTreeMap;
use std::time::Duration;

/// `[shared.NAME]`: where a team's corrections live. Checked when used (`--shared NAME` or
/// `[defaults] shared`), so a set that is configured but not used cannot stop a command.
#[derive(Clone, Debug, serde::Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SharedEntry {
    /// The SPARQL 1.1 query endpoint, e.g. `http://127.0.0.1:7878/query`.
    pub query_endpoint: String,
    /// The SPARQL 1.1 update endpoint, e.g. `http://127.0.0.1:7878/update`.
    pub update_endpoint: String,
    /// The named graph holding the set's records (a full IRI).
    pub graph: String,
    /// The environment variable holding `user:password` (HTTP basic) or a bearer token; never
    /// the secret itself.
    #[serde(default)]
    pub credentials_env: Option<String>,
    /// Which teammates' corrections apply: `all`, or `approved` (only your own until someone
    /// approves one: reviews are not made by this version yet).
    #[serde(default)]
    pub apply: Apply,
    /// Seconds to wait for the server (default 10): a server that is down must not hold up
    /// every command for long.
    #[serde(default = "default_shared_timeout")]
    pub timeout_secs: u64,
}

/// Which corrections of a shared set apply.
#[derive(Clone, Copy, Debug, Default, serde::Deserialize, PartialEq, Eq)]
#[serde(rename_all = "lowercase")]
pub enum Apply {
    #[default]
    All,
    Approved,
}

fn default_shared_timeout() -> u64 {
    10
}

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

    /// The error that says `update_endpoint` is not what it should be (one line, naming it).
    fn misconfigured(&self, what: &str) -> TeamError {
        let detail = format!("update_endpoint {:?} {what} (check the config)", redact(self.update.endpoint()));
        TeamError::Config { set: self.name.clone(), detail }
    }

    /// Sends this set's queued records, oldest first, each as one `INSERT DATA`, and takes
    /// each off the queue once the server is seen to hold it (read back through the query
    /// endpoint: an update endpoint that answers 200 with any page has taken nothing). A record
    /// the server refuses for good (HTTP 400, 413, 414 or 422: the record, not the address), or
    /// that cannot be written as a record, is set aside as rejected (kept, with the reason) and
    /// the rest go on. Any other failure stops, the rest staying queued, in order: no
    /// connection, no answer, 5xx, credentials refused, and an update endpoint that is not one
    /// (404, 405, any other 4xx, a 200 after which the server does not hold the record), which
    /// is a configuration error to fix, never a refusal of the record.
    pub async fn push(&self, open: Opener<'_>) -> Result<Pushed, StoreError> {
        let store = open()?;
        let requeued = store.requeue_misrouted()?;
        if requeued > 0 {
            tracing::info!(set = %self.name, requeued, "records set aside for an update endpoint's 404 or 405 are queued again");
        }
        let queued: Vec<_> = store.queued()?.into_iter().filter(|q| q.set == self.graph).collect();
        drop(store);
        let (mut sent, mut rejected) = (0, 0);
        for (i, q) in queued.iter().enumerate() {
            let outcome = match q.record.insert_data(&self.graph, &now_millis()) {
                Ok(update) => self.send(&q.record.iri, &update).await,
                Err(e) => Err(Failure::Refused(TeamError::Config { set: self.name.clone(), detail: e.to_string() })),
            };
            match outcome {
                Ok(()) => {
                    open()?.mark_sent(&q.record.iri)?;
                    sent += 1;
                }
                Err(Failure::Refused(error)) => {
                    tracing::warn!(set = %self.name, record = %q.record.iri, %error, "a record was refused; set aside as rejected");
                    open()?.mark_rejected(&q.record.iri, &error.to_string())?;
                    rejected += 1;
                }
                Err(Failure::Stop(error)) => {
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

    /// Sends one record's update, then reads the record back.
    async fn send(&self, iri: &str, update: &str) -> Result<(), Failure> {
        if let Err(e) = self.update.update(update).await {
            return Err(match &e {
                // A 400 is this record's fault only if the endpoint takes an update that does
                // nothing (a query endpoint, say, answers 400 to any update).
                KgError::Refused { status: 400, .. } if self.update.update("INSERT DATA { }").await.is_err() => {
                    Failure::Stop(self.misconfigured(
                        "refuses even an update that does nothing (HTTP 400): it is not the server's SPARQL update endpoint",
                    ))
                }
                KgError::Refused { status: 400 | 413 | 414 | 422, .. } => Failure::Refused(self.server(e)),
                KgError::Refused { status, .. }
                    if (400..500).contains(status) && !matches!(status, 401 | 403 | 408 | 429) =>
                {
                    Failure::Stop(
                        self.misconfigured(&format!("answered HTTP {status}: it is not the server's SPARQL update endpoint")),
                    )
                }
                _ => Failure::Stop(self.server(e)),
            });
        }
        let query = team_record::select_held(&self.graph, iri)
            .map_err(|detail| Failure::Refused(TeamError::Config { set: self.name.clone(), detail }))?;
        let rows = self.query.select(&query).await.map_err(|e| Failure::Stop(self.server(e)))?;
        if rows.is_empty() {
            return Err(Failure::Stop(self.misconfigured(
                "answered, but the server does not hold the record after it: it is not the server's SPARQL update endpoint",
            )));
        }
        Ok(())
    }

    /// Takes the records published since the last pull (all of them with `full`) into the
    /// store. Says how many were new, and which were skipped and why: a record that breaks the
    /// rules (too long, a field twice, not well formed) is skipped, never applied, and the
    /// pull goes on.
    pub async fn pull(&self, open: Opener<'_>, full: bool) -> Result<Pulled, TeamError> {
        self.pull_cached(open, full, &mut PullCache::default()).await
    }

    /// As [`Self::pull`], keeping in `cache` what the next pull of this process needs to find
    /// nothing new without opening the store. In three steps: how many records were published
    /// since the last pull (the same count from the same start is nothing new), which records
    /// they were (their IRIs only), then, of those the store does not have (nor skipped
    /// before, but with `full`), everything they say, [`DETAIL`] records at a time, each batch
    /// taken into the store as it comes: a pull's memory does not grow with the records.
    pub async fn pull_cached(&self, open: Opener<'_>, full: bool, cache: &mut PullCache) -> Result<Pulled, TeamError> {
        let started = std::time::Instant::now();
        // The reader's own clock bounds where the next pull starts: a record stamped in the
        // future (a writer's clock ahead, or a hostile one) must not stop everyone's pulls.
        // It is also when what this pull takes in was received here (see `take_pulled`).
        let now = std::time::SystemTime::now();
        let received = humantime::format_rfc3339_millis(now).to_string();
        let until = match &cache.until {
            Some(until) => until.clone(),
            None => open()?.pulled_until(&self.graph)?,
        };
        let since = until.as_deref().filter(|_| !full).and_then(|t| pull_start(t, now));
        let count = self.count_published(since.as_deref()).await?;
        if count.is_some() && cache.counted == Some((since.clone(), count)) {
            tracing::debug!(set = %self.name, ms = started.elapsed().as_millis() as u64, "nothing new");
            return Ok(Pulled::default());
        }
        let published = self.list_published(since.as_deref(), count).await?;
        let listed = started.elapsed();
        let (wanted, mut skipped) = self.unknown_records(open, full, cache, &published)?;
        let mut pulled = Pulled::default();
        let fetched = self.fetch_and_take(open, &wanted, &received, cache, &mut pulled, &mut skipped).await?;
        let fetch_ms = (started.elapsed() - listed).as_millis() as u64;
        if !skipped.is_empty() {
            self.keep_skipped(open, skipped, &mut pulled, cache)?;
        }
        let latest = next_start(until.as_deref(), &published, &cache.known, now);
        if latest != until
            && let Some(mark) = &latest
        {
            open()?.mark_pulled(&self.graph, mark)?;
        }
        // The count stands for this start only if the mark did not move.
        cache.counted = (latest == until).then_some((since, count));
        cache.until = Some(latest);
        tracing::info!(
            set = %self.name,
            published = published.len(),
            fetched,
            new = pulled.new,
            skipped = pulled.skipped.values().map(|(n, _)| n).sum::<usize>(),
            list_ms = listed.as_millis() as u64,
            fetch_ms,
            "pulled"
        );
        Ok(pulled)
    }

    /// How many records were published since `since`: the same count for the same start as
    /// last time is nothing new (records are only ever added), found with one small answer.
    /// None if the server gives no number.
    async fn count_published(&self, since: Option<&str>) -> Result<Option<usize>, TeamError> {
        let config = |detail: String| TeamError::Config { set: self.name.clone(), detail };
        let query = team_record::count_published(&self.graph, since).map_err(config)?;
        let counted = self.query.select(&query).await.map_err(|e| self.server(e))?;
        Ok(match counted.first().and_then(|row| row.get("n")) {
            Some(oxrdf::Term::Literal(n)) => n.value().parse::<usize>().ok(),
            _ => None,
        })
    }

    /// Each record published since `since`, with its latest publication (it is stamped again
    /// each time it is sent): whole when the server gave as many as it `count`ed, else again
    /// page by page, in order.
    async fn list_published(&self, since: Option<&str>, count: Option<usize>) -> Result<Published, TeamError> {
        let config = |detail: String| TeamError::Config { set: self.name.clone(), detail };
        let mut published = Published::new();
        let query = team_record::select_published(&self.graph, since, None).map_err(config)?;
        let rows = self.query.select(&query).await.map_err(|e| self.server(e))?;
        // A server that gives no count is taken at its word.
        if count.is_some_and(|n| n != rows.len()) {
            tracing::info!(set = %self.name, rows = rows.len(), ?count, "the list was cut short: paging it");
            let mut after: Option<String> = None;
            loop {
                let query =
                    team_record::select_published(&self.graph, since, Some(after.as_deref())).map_err(config)?;
                let rows = self.query.select(&query).await.map_err(|e| self.server(e))?;
                let last = note_published(&mut published, &rows);
                if rows.len() < PAGE || last.is_none() || last == after {
                    break;
                }
                after = last;
            }
        } else {
            note_published(&mut published, &rows);
        }
        Ok(published)
    }

    /// The records of `published` this store does not have yet, nor skipped before (but with
    /// `full`), and those skipped now for an IRI no query may hold. Asked only of those this process has not
    /// seen: nothing new opens no store.
    fn unknown_records(
        &self,
        open: Opener<'_>,
        full: bool,
        cache: &mut PullCache,
        published: &Published,
    ) -> Result<(Vec<String>, Vec<Skipped>), TeamError> {
        let mut wanted = Vec::new();
        let mut skipped: Vec<Skipped> = Vec::new();
        let unseen: Vec<&String> = published.keys().filter(|iri| !cache.known.contains(*iri)).collect();
        if !unseen.is_empty() {
            let store = open()?;
            for iri in unseen {
                if store.has_record(iri)? || (!full && store.skipped(iri)?) {
                    cache.known.insert(iri.clone());
                } else if let Err(e) = crate::kg::sparql::syntax::iri(iri) {
                    skipped.push(Skipped { iri: iri.clone(), skip: Skip::Malformed, detail: e });
                } else {
                    wanted.push(iri.clone());
                }
            }
        }
        Ok((wanted, skipped))
    }

    /// Reads the records `wanted`, a few batches at once (the server answers one while the
    /// last is taken in here), and takes each batch into the store as it comes, adding to
    /// `pulled` and `skipped`. How many records were read.
    async fn fetch_and_take(
        &self,
        open: Opener<'_>,
        wanted: &[String],
        received: &str,
        cache: &mut PullCache,
        pulled: &mut Pulled,
        skipped: &mut Vec<Skipped>,
    ) -> Result<usize, TeamError> {
        let mut fetched = 0;
        let batches = wanted.chunks(DETAIL).map(|chunk| self.fetch(chunk));
        let mut answers = futures::stream::iter(batches).buffered(FETCHING);
        while let Some(answer) = answers.next().await {
            let (records, mut batch_skipped) = answer?;
            fetched += records.len();
            let taken: Vec<String> = records.iter().map(|r| r.iri.clone()).collect();
            if !records.is_empty() {
                let t = open()?.take_pulled(&self.graph, records, None, received)?;
                pulled.new += t.new;
                pulled.future += t.future;
                pulled.self_reviews += t.self_reviews;
            }
            cache.known.extend(taken);
            skipped.append(&mut batch_skipped);
        }
        Ok(fetched)
    }

    /// Says and counts in `pulled` the records skipped, and keeps them in the store, so the
    /// next pull (whose overlap lists them again) does not fetch them.
    fn keep_skipped(
        &self,
        open: Opener<'_>,
        skipped: Vec<Skipped>,
        pulled: &mut Pulled,
        cache: &mut PullCache,
    ) -> Result<(), TeamError> {
        for s in &skipped {
            tracing::warn!(set = %self.name, "skipped: record {}: {}", s.iri, s.detail);
            let entry = pulled.skipped.entry(s.skip).or_insert_with(|| (0, s.iri.clone()));
            entry.0 += 1;
        }
        open()?.note_skipped(&skipped.iter().map(|s| (s.iri.clone(), s.skip, s.detail.clone())).collect::<Vec<_>>())?;
        cache.known.extend(skipped.into_iter().map(|s| s.iri));
        Ok(())
    }

    /// Reads the records `iris` (at most [`DETAIL`]): first how many triples and characters
    /// each has, so one over the limits is skipped unread, then the others' triples (each value
    /// capped by the server). The records, and those skipped with why.
    async fn fetch(&self, iris: &[String]) -> Result<(Vec<team_record::Record>, Vec<Skipped>), TeamError> {
        let config = |detail: String| TeamError::Config { set: self.name.clone(), detail };
        let query = team_record::count_triples(&self.graph, iris).map_err(config)?;
        let rows = self.query.select(&query).await.map_err(|e| self.server(e))?;
        let number = |row: &sparesults::QuerySolution, var: &str| match row.get(var) {
            Some(oxrdf::Term::Literal(n)) => n.value().parse::<u64>().ok(),
            _ => None,
        };
        let mut sizes: std::collections::HashMap<String, (u64, u64)> = std::collections::HashMap::new();
        for row in &rows {
            let Some(oxrdf::Term::NamedNode(r)) = row.get("r") else { continue };
            sizes.insert(
                r.as_str().to_string(),
                (number(row, "n").unwrap_or(u64::MAX), number(row, "size").unwrap_or(0)),
            );
        }
        let mut skipped = Vec::new();
        let mut read = Vec::new();
        for iri in iris {
            let skip = |skip: Skip, detail: String| Skipped { iri: iri.clone(), skip, detail };
            match sizes.get(iri) {
                Some(&(n, _)) if n > MAX_TRIPLES as u64 => {
                    skipped.push(skip(Skip::TooMany, format!("it has {n} triples (at most {MAX_TRIPLES})")))
                }
                Some(&(_, size)) if size > MAX_RECORD as u64 => {
                    skipped.push(skip(Skip::TooLong, format!("it holds {size} characters (at most {MAX_RECORD})")))
                }
                Some(_) => read.push(iri.clone()),
                None => skipped.push(skip(Skip::Malformed, "it has nothing but its publication time".into())),
            }
        }
        let mut gathered: BTreeMap<String, Gathered> = BTreeMap::new();
        if !read.is_empty() {
            let query = team_record::select_records(&self.graph, &read, read.len() * MAX_TRIPLES).map_err(config)?;
            for row in &self.query.select(&query).await.map_err(|e| self.server(e))? {
                let Some(oxrdf::Term::NamedNode(r)) = row.get("r") else { continue };
                gathered.entry(r.as_str().to_string()).or_default().add(row);
            }
        }
        let mut records = Vec::with_capacity(read.len());
        for iri in read {
            match gathered.get(&iri).map(|g| g.record(&iri)) {
                Some(Ok(r)) => records.push(r),
                Some(Err(e)) => {
                    let detail = e.to_string();
                    // The message names the record; the note adds it once.
                    let detail = detail.strip_prefix(&format!("record {iri}: ")).unwrap_or(&detail).to_string();
                    skipped.push(Skipped { iri, skip: e.skip(), detail });
                }
                None => skipped.push(Skipped { iri, skip: Skip::Malformed, detail: "it has nothing to read".into() }),
            }
        }
        Ok((records, skipped))
    }
}

/// The records a pull lists, by IRI, each with its latest publication time.
type Published = BTreeMap<String, Option<std::time::SystemTime>>;

/// Where a pull after the mark `until` starts: the mark (never later than `now`) less the
/// overlap.
fn pull_start(until: &str, now: std::time::SystemTime) -> Option<String> {
    parse_time(until).map(|t| {
        let t = t.min(now);
        let from = t.checked_sub(OVERLAP).unwrap_or(std::time::UNIX_EPOCH);
        humantime::format_rfc3339_millis(from).to_string()
    })
}

/// Adds a page of listed records (`r`, `latest`) to `published`, keeping each one's latest
/// publication. The page's last record, where the next page starts.
fn note_published(published: &mut Published, rows: &[sparesults::QuerySolution]) -> Option<String> {
    let mut last = None;
    for row in rows {
        let Some(oxrdf::Term::NamedNode(r)) = row.get("r") else { continue };
        let sent = match row.get("latest") {
            Some(oxrdf::Term::Literal(l)) => parse_time(l.value()),
            _ => None,
        };
        let latest = published.entry(r.as_str().to_string()).or_insert(None);
        *latest = (*latest).max(sent);
        last = Some(r.as_str().to_string());
    }
    last
}

/// Where the next pull starts: the latest publication of a record here (`known`: taken now or
/// skipped for good), never earlier than the mark `until`, and nothing later than this reader's
/// clock when the pull began (`now`): a mark or publication time from the future counts as now.
fn next_start(
    until: Option<&str>,
    published: &Published,
    known: &std::collections::HashSet<String>,
    now: std::time::SystemTime,
) -> Option<String> {
    let mut latest = until.and_then(parse_time).map(|t| t.min(now));
    for (iri, sent) in published {
        if let Some(sent) = sent.map(|t| t.min(now))
            && known.contains(iri)
            && latest.is_none_or(|l| sent > l)
        {
            latest = Some(sent);
        }
    }
    latest.map(|t| humantime::format_rfc3339_millis(t).to_string())
}

/// How sending one record failed.
enum Failure {
    /// Refused for good: set aside as rejected, the queue goes on.
    Refused(TeamError),
    /// Not sent now: it and the rest stay queued.
    Stop(TeamError),
}

/// A record a pull did not take in.
struct Skipped {
    iri: String,
    skip: Skip,
    detail: String,
}

/// What a pull did: how many records were new, and what the user should know of the others.
#[derive(Debug, Default, PartialEq)]
pub struct Pulled {
    pub new: usize,
    /// Records not taken in, by why: how many, and the first one's IRI.
    pub skipped: BTreeMap<Skip, (usize, String)>,
    /// Records dated in the future: taken in, as if made when they arrived.
    pub future: usize,
    /// Reviews of the reviewer's own correction: kept, never counted.
    pub self_reviews: usize,
}

impl Pulled {
    /// One line per kind of record that was skipped or taken with a flag, for `set`.
    pub fn remarks(&self, set: &str) -> Vec<String> {
        let records = |n: usize| format!("{n} record{}", if n == 1 { "" } else { "s" });
        let mut out: Vec<String> = self
            .skipped
            .iter()
            .map(|(skip, (n, first))| {
                // An IRI that is not one is not shown: it may hold anything.
                let first = match (crate::kg::sparql::syntax::iri(first).is_ok(), *n) {
                    (false, _) => String::new(),
                    (true, 1) => format!(" ({first})"),
                    (true, _) => format!(" (the first: {first})"),
                };
                format!("skipped {} from {set}: {}{first}", records(*n), skip.why())
            })
            .collect();
        if self.future > 0 {
            out.push(format!(
                "{} from {set} dated in the future: taken as made when {} arrived",
                records(self.future),
                if self.future == 1 { "it" } else { "they" }
            ));
        }
        if self.self_reviews > 0 {
            out.push(format!(
                "{} from {set} reviewing the reviewer's own correction: not counted",
                records(self.self_reviews)
            ));
        }
        out
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
