//! The SPARQL 1.1 protocol over reqwest: GET for short queries, form-encoded POST for long ones
//! (never a direct `application/sparql-query` POST, on which Virtuoso hangs), always asking for
//! `application/sparql-results+json` (Virtuoso answers XML otherwise), results parsed by
//! `sparesults` (which also reads SPARQL 1.0's `typed-literal`). Bounded retries with backoff,
//! honouring `Retry-After`; a limit on queries in flight; a descriptive User-Agent (Wikidata's
//! query service refuses requests without one). Updates (`INSERT DATA`) go by form-encoded POST
//! too; with credentials, every request carries them (HTTP basic or a bearer token).

use crate::kg::KgError;
use sparesults::{QueryResultsFormat, QueryResultsParser, QuerySolution, ReaderQueryResultsParserOutput};
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;
use tokio::sync::Semaphore;

/// Queries longer than this (URL-encoded) go by POST.
const MAX_GET_URL: usize = 2000;

#[derive(Clone, Debug)]
pub struct SparqlConfig {
    pub endpoint: String,
    pub timeout: Duration,
    pub max_retries: u32,
    pub backoff: Duration,
    pub max_in_flight: usize,
    /// Sent with every request; never shown (its `Debug` is redacted).
    pub credentials: Option<Credentials>,
}

/// What proves who is asking: `user:password` (HTTP basic) or a bearer token. Kept out of every
/// message, log line and `Debug` output.
#[derive(Clone)]
pub enum Credentials {
    Basic { user: String, password: String },
    Bearer(String),
}

impl Credentials {
    /// `user:password` is HTTP basic; anything else is a bearer token.
    pub fn parse(secret: &str) -> Self {
        match secret.split_once(':') {
            Some((user, password)) => Self::Basic { user: user.to_string(), password: password.to_string() },
            None => Self::Bearer(secret.to_string()),
        }
    }

    fn apply(&self, request: reqwest::RequestBuilder) -> reqwest::RequestBuilder {
        match self {
            Self::Basic { user, password } => request.basic_auth(user, Some(password)),
            Self::Bearer(token) => request.bearer_auth(token),
        }
    }
}

impl std::fmt::Debug for Credentials {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            Self::Basic { .. } => "Basic(<redacted>)",
            Self::Bearer(_) => "Bearer(<redacted>)",
        })
    }
}

/// What is sent: a query (its reply read as results) or an update (its reply only a status).
#[derive(Clone, Copy)]
enum Request<'a> {
    Query(&'a str),
    Update(&'a str),
}

impl SparqlConfig {
    pub fn new(endpoint: impl Into<String>) -> Self {
        Self {
            endpoint: endpoint.into(),
            timeout: Duration::from_secs(60),
            max_retries: 3,
            backoff: Duration::from_millis(500),
            max_in_flight: 8,
            credentials: None,
        }
    }
}

pub struct SparqlClient {
    config: SparqlConfig,
    http: reqwest::Client,
    in_flight: Semaphore,
    queries: AtomicU64,
    cache: Option<super::cache::QueryCache>,
}

impl SparqlClient {
    pub fn new(config: SparqlConfig) -> Result<Self, KgError> {
        crate::llm::openai::install_crypto_provider();
        let http = reqwest::Client::builder()
            .timeout(config.timeout)
            .user_agent(concat!(
                "ongraph/",
                env!("CARGO_PKG_VERSION"),
                " (LLM reasoning over knowledge graphs; https://github.com/ongraph)"
            ))
            .build()
            .map_err(|e| KgError::Other(format!("cannot build the HTTP client: {e}")))?;
        Ok(Self {
            in_flight: Semaphore::new(config.max_in_flight.max(1)),
            config,
            http,
            queries: AtomicU64::new(0),
            cache: None,
        })
    }

    /// Answers repeated queries from `cache` instead of the endpoint.
    pub fn with_cache(mut self, cache: Option<super::cache::QueryCache>) -> Self {
        self.cache = cache;
        self
    }

    pub fn endpoint(&self) -> &str {
        &self.config.endpoint
    }

    /// How many queries were sent (retries not counted).
    pub fn queries(&self) -> u64 {
        self.queries.load(Ordering::Relaxed)
    }

    pub fn stats(&self) -> crate::kg::NetworkStats {
        crate::kg::NetworkStats {
            queries: self.queries(),
            cache_hits: self.cache.as_ref().map_or(0, |c| c.hits()),
            cache_misses: self.cache.as_ref().map_or(0, |c| c.misses()),
        }
    }

    fn unreachable(&self, detail: impl std::fmt::Display) -> KgError {
        KgError::Other(format!("SPARQL endpoint {}: {detail}", self.config.endpoint))
    }

    /// Runs a SELECT query and returns its solutions (from the cache when it has them).
    pub async fn select(&self, query: &str) -> Result<Vec<QuerySolution>, KgError> {
        if let Some(body) = self.cache.as_ref().and_then(|c| c.get(&self.config.endpoint, query)) {
            return self.parse(&body);
        }
        let body = self.fetch(Request::Query(query)).await?;
        let solutions = self.parse(&body)?;
        if let Some(cache) = &self.cache {
            cache.put(&self.config.endpoint, query, &body);
        }
        Ok(solutions)
    }

    /// Sends a SPARQL Update (to an update endpoint). Retried like a query, so only updates
    /// that are safe to apply twice belong here (`INSERT DATA`).
    pub async fn update(&self, update: &str) -> Result<(), KgError> {
        self.fetch(Request::Update(update)).await.map(drop)
    }

    /// Sends a query or an update and returns the raw successful reply.
    async fn fetch(&self, what: Request<'_>) -> Result<Vec<u8>, KgError> {
        let _permit = self.in_flight.acquire().await.map_err(|e| self.unreachable(e))?;
        self.queries.fetch_add(1, Ordering::Relaxed);
        let use_get = match what {
            Request::Query(query) => {
                tracing::debug!(endpoint = %self.config.endpoint, %query, "SPARQL");
                self.config.endpoint.len() + urlencoded_len(query) + 7 <= MAX_GET_URL
            }
            Request::Update(update) => {
                tracing::debug!(endpoint = %self.config.endpoint, %update, "SPARQL update");
                false
            }
        };
        let mut attempt = 0;
        loop {
            let request = match what {
                Request::Query(query) if use_get => self.http.get(&self.config.endpoint).query(&[("query", query)]),
                Request::Query(query) => self.http.post(&self.config.endpoint).form(&[("query", query)]),
                Request::Update(update) => self.http.post(&self.config.endpoint).form(&[("update", update)]),
            };
            let request = request.header(reqwest::header::ACCEPT, "application/sparql-results+json");
            let request = match &self.config.credentials {
                Some(credentials) => credentials.apply(request),
                None => request,
            };
            let (error, wait) = match request.send().await {
                Ok(response) => {
                    let status = response.status();
                    let retry_after = response
                        .headers()
                        .get(reqwest::header::RETRY_AFTER)
                        .and_then(|v| v.to_str().ok())
                        .and_then(|v| v.trim().parse::<f64>().ok())
                        .filter(|s| s.is_finite() && *s >= 0.0)
                        .map(|s| Duration::from_secs_f64(s.min(60.0)));
                    match response.bytes().await {
                        Ok(body) if status.is_success() => return Ok(body.to_vec()),
                        Ok(body) => {
                            let excerpt: String = String::from_utf8_lossy(&body).chars().take(200).collect();
                            let error = self.unreachable(format!("HTTP {status}: {}", excerpt.trim()));
                            if !(status.as_u16() == 429 || status.is_server_error()) {
                                return Err(error);
                            }
                            (error, retry_after)
                        }
                        // The body stalled or stopped short: asked again, like a lost connection.
                        Err(e) if e.is_timeout() => {
                            (self.unreachable(format!("no answer within {} s", self.config.timeout.as_secs())), None)
                        }
                        Err(e) => (self.unreachable(format!("the reply stopped short ({})", e.without_url())), None),
                    }
                }
                Err(e) if e.is_timeout() => {
                    (self.unreachable(format!("no answer within {} s", self.config.timeout.as_secs())), None)
                }
                Err(e) => {
                    let mut cause: &dyn std::error::Error = &e;
                    while let Some(next) = cause.source() {
                        cause = next;
                    }
                    (self.unreachable(format!("cannot connect ({cause})")), None)
                }
            };
            if attempt >= self.config.max_retries {
                return Err(error);
            }
            let wait = wait.unwrap_or_else(|| crate::llm::backoff(self.config.backoff, attempt));
            tracing::warn!(endpoint = %self.config.endpoint, attempt, ?wait, %error, "SPARQL query failed; retrying");
            tokio::time::sleep(wait).await;
            attempt += 1;
        }
    }

    fn parse(&self, body: &[u8]) -> Result<Vec<QuerySolution>, KgError> {
        let bad = |detail: String| {
            let start: String = String::from_utf8_lossy(body).chars().take(80).collect();
            self.unreachable(format!("the reply is not SPARQL JSON results ({detail}); it starts {:?}", start.trim()))
        };
        let parser = QueryResultsParser::from_format(QueryResultsFormat::Json);
        match parser.for_reader(body).map_err(|e| bad(e.to_string()))? {
            ReaderQueryResultsParserOutput::Solutions(solutions) => {
                solutions.collect::<Result<Vec<_>, _>>().map_err(|e| bad(e.to_string()))
            }
            ReaderQueryResultsParserOutput::Boolean(_) => Err(bad("a boolean, not solutions".into())),
        }
    }
}

fn urlencoded_len(text: &str) -> usize {
    text.bytes().map(|b| if b.is_ascii_alphanumeric() || b"-_.~".contains(&b) { 1 } else { 3 }).sum()
}
