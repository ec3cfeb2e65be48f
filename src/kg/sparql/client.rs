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
    /// How long connecting may take (`None`: up to `timeout`).
    pub connect_timeout: Option<Duration>,
    /// Whether a request that could not connect, or got no answer in time, is tried again.
    pub retry_unreachable: bool,
    /// The largest reply read, in bytes: a larger one is an error (and never cached).
    pub max_reply_bytes: usize,
    /// The most solutions (rows) a reply may hold: more is an error (and never cached).
    pub max_bindings: usize,
    /// Where the user sets the limits above, for the message that names them (`[kg.NAME]`).
    pub limits_set_in: Option<String>,
}

/// The reply limits' defaults: a KG query asks for at most 10,000 rows (about 3 MB of JSON);
/// 2 million tiny rows took 1.1 GB of memory.
pub const DEFAULT_MAX_REPLY_MB: usize = 32;
pub const DEFAULT_MAX_BINDINGS: usize = 100_000;

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
            connect_timeout: None,
            retry_unreachable: true,
            max_reply_bytes: DEFAULT_MAX_REPLY_MB << 20,
            max_bindings: DEFAULT_MAX_BINDINGS,
            limits_set_in: None,
        }
    }
}

/// How one attempt at a request ended.
enum Attempt {
    Answered(Vec<u8>),
    /// The time limit passed before the reply was whole.
    OutOfTime,
    /// An error asking again cannot help.
    Failed(KgError),
    /// An error a later attempt may not meet, with the wait the server asked for.
    Retry(KgError, Option<Duration>),
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
        crate::http::install_crypto_provider();
        let mut http = reqwest::Client::builder()
            .timeout(config.timeout)
            // Never followed: a redirect turns a POST (an update, a long query) into a GET and
            // loses it. A 3xx is an error naming where the endpoint went.
            .redirect(reqwest::redirect::Policy::none());
        if let Some(connect) = config.connect_timeout {
            http = http.connect_timeout(connect);
        }
        let http = http
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

    /// The credentials this client sends, as text a server's page could echo: the configured
    /// ones, and the endpoint's password and query values (what [`redact`] keeps out of sight).
    fn secrets(&self) -> Vec<String> {
        let mut secrets = Vec::new();
        match &self.config.credentials {
            Some(Credentials::Basic { password, .. }) => secrets.push(password.clone()),
            Some(Credentials::Bearer(token)) => secrets.push(token.clone()),
            None => {}
        }
        if let Ok(url) = reqwest::Url::parse(&self.config.endpoint) {
            secrets.extend(url.password().map(str::to_string));
            secrets.extend(url.query_pairs().map(|(_, value)| value.into_owned()));
        }
        secrets
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

    fn message(&self, detail: impl std::fmt::Display) -> String {
        format!("SPARQL endpoint {}: {detail}", redact(&self.config.endpoint))
    }

    fn unreachable(&self, detail: impl std::fmt::Display) -> KgError {
        KgError::Other(self.message(detail))
    }

    /// Runs a SELECT query and returns its solutions (from the cache when it has them).
    pub async fn select(&self, query: &str) -> Result<Vec<QuerySolution>, KgError> {
        if let Some(body) = self.cache.as_ref().and_then(|c| c.get(&self.config.endpoint, query)) {
            // One stored before the limits were lowered (or unreadable) is asked for again.
            if body.len() <= self.config.max_reply_bytes
                && let Ok(solutions) = self.parse(&body)
            {
                return Ok(solutions);
            }
        }
        let body = self.fetch(Request::Query(query)).await?;
        // Only a reply within both limits gets here, and only then into the cache.
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

    /// Where a limit is raised, as the end of a message: ` (max_reply_mb in [kg.x] raises it)`.
    fn raise_hint(&self, setting: &str) -> String {
        match &self.config.limits_set_in {
            Some(place) => format!(" ({setting} in {place} raises it)"),
            None => String::new(),
        }
    }

    /// Sends a query or an update and returns the raw successful reply. `timeout` bounds the
    /// whole request, retries and their waits included.
    async fn fetch(&self, what: Request<'_>) -> Result<Vec<u8>, KgError> {
        let _permit = self.in_flight.acquire().await.map_err(|e| self.unreachable(e))?;
        self.queries.fetch_add(1, Ordering::Relaxed);
        let use_get = match what {
            Request::Query(query) => {
                tracing::debug!(endpoint = %redact(&self.config.endpoint), %query, "SPARQL");
                self.config.endpoint.len() + urlencoded_len(query) + 7 <= MAX_GET_URL
            }
            Request::Update(update) => {
                tracing::debug!(endpoint = %redact(&self.config.endpoint), %update, "SPARQL update");
                false
            }
        };
        let limit = self.config.timeout;
        let started = tokio::time::Instant::now();
        let mut attempts: u32 = 0;
        let attempts_text = |n: u32| if n == 1 { "1 attempt".to_string() } else { format!("{n} attempts") };
        loop {
            attempts += 1;
            let left = limit.saturating_sub(started.elapsed());
            let attempt = tokio::time::timeout(left, self.attempt(what, use_get)).await.unwrap_or(Attempt::OutOfTime);
            let (error, wait) = match attempt {
                Attempt::Answered(body) => return Ok(body),
                Attempt::Failed(error) => return Err(error),
                Attempt::Retry(error, wait) => (error, wait),
                Attempt::OutOfTime => {
                    return Err(KgError::Unreachable(self.message(format!(
                        "no complete answer within {} s ({}){}",
                        limit.as_secs(),
                        attempts_text(attempts),
                        self.raise_hint("timeout_secs")
                    ))));
                }
            };
            if error.is_unreachable() && !self.config.retry_unreachable {
                return Err(error);
            }
            if attempts > self.config.max_retries {
                return Err(if attempts > 1 { error.noted(&format!(" ({})", attempts_text(attempts))) } else { error });
            }
            let wait = wait.unwrap_or_else(|| crate::http::backoff(self.config.backoff, attempts - 1));
            // No attempt is begun that the time limit would cut short before it starts.
            if started.elapsed() + wait >= limit {
                let note = format!(
                    "; not asked again: the {} s limit would pass first ({}){}",
                    limit.as_secs(),
                    attempts_text(attempts),
                    self.raise_hint("timeout_secs")
                );
                return Err(error.noted(&note));
            }
            tracing::warn!(endpoint = %redact(&self.config.endpoint), attempts, ?wait, %error, "SPARQL query failed; retrying");
            tokio::time::sleep(wait).await;
        }
    }

    /// One request, its reply read up to the size limit.
    async fn attempt(&self, what: Request<'_>, use_get: bool) -> Attempt {
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
        let mut response = match request.send().await {
            Ok(response) => response,
            Err(e) if e.is_timeout() && !e.is_connect() => return Attempt::OutOfTime,
            Err(e) => {
                let mut cause: &dyn std::error::Error = &e;
                while let Some(next) = cause.source() {
                    cause = next;
                }
                return Attempt::Retry(KgError::Unreachable(self.message(format!("cannot connect ({cause})"))), None);
            }
        };
        let status = response.status();
        let retry_after = response
            .headers()
            .get(reqwest::header::RETRY_AFTER)
            .and_then(|v| v.to_str().ok())
            .and_then(|v| v.trim().parse::<f64>().ok())
            .filter(|s| s.is_finite() && *s >= 0.0)
            .map(|s| Duration::from_secs_f64(s.min(60.0)));
        if status.is_redirection() {
            let to = response
                .headers()
                .get(reqwest::header::LOCATION)
                .and_then(|v| v.to_str().ok())
                .and_then(|l| reqwest::Url::parse(&self.config.endpoint).ok()?.join(l).ok())
                .map_or_else(|| "an unknown place".to_string(), |u| redact(u.as_str()));
            let message = self.message(format!(
                "HTTP {status}: the endpoint redirected to {to} (redirects are not followed: \
                 configure the address it redirects to)"
            ));
            return Attempt::Failed(KgError::Refused { status: status.as_u16(), message });
        }
        // An error page is only quoted: its start is all that is read.
        let cap = if status.is_success() { self.config.max_reply_bytes } else { ERROR_EXCERPT_BYTES };
        let (body, whole) = match body_up_to(&mut response, cap).await {
            Ok(read) => read,
            Err(e) if e.is_timeout() => return Attempt::OutOfTime,
            // The body stopped short: asked again, like a lost connection.
            Err(e) => {
                return Attempt::Retry(
                    self.unreachable(format!("the reply stopped short ({})", e.without_url())),
                    None,
                );
            }
        };
        if status.is_success() {
            if !whole {
                // The same query would bring the same reply: not asked again.
                return Attempt::Failed(KgError::Other(self.message(format!(
                    "the reply is larger than {}{}",
                    shown_size(self.config.max_reply_bytes),
                    self.raise_hint("max_reply_mb")
                ))));
            }
            return Attempt::Answered(body);
        }
        // A server that echoes the request must not show its credentials.
        let secrets = self.secrets();
        let secrets: Vec<&str> = secrets.iter().map(String::as_str).collect();
        let page = crate::safe_text::without_credentials(&String::from_utf8_lossy(&body), &secrets);
        let excerpt: String = page.chars().take(200).collect();
        let message = self.message(format!("HTTP {status}: {}", excerpt.trim()));
        let error = KgError::Refused { status: status.as_u16(), message };
        if status.as_u16() == 429 || status.is_server_error() {
            Attempt::Retry(error, retry_after)
        } else {
            Attempt::Failed(error)
        }
    }

    fn parse(&self, body: &[u8]) -> Result<Vec<QuerySolution>, KgError> {
        let bad = |detail: String| {
            let start: String = String::from_utf8_lossy(body).chars().take(80).collect();
            self.unreachable(format!("the reply is not SPARQL JSON results ({detail}); it starts {:?}", start.trim()))
        };
        match variables_named(body) {
            Some(n) if n > MAX_VARIABLES => {
                return Err(bad(format!("its head names {n} variables; a query of ongraph's selects a few")));
            }
            Some(_) => {}
            // Not JSON of that shape (a `head` twice, say): not read further, since the results
            // parser would read a head this check did not count.
            None => return Err(bad("its head cannot be read".into())),
        }
        let parser = QueryResultsParser::from_format(QueryResultsFormat::Json);
        match parser.for_reader(body).map_err(|e| bad(e.to_string()))? {
            ReaderQueryResultsParserOutput::Solutions(solutions) => {
                let mut all = Vec::new();
                for solution in solutions {
                    if all.len() == self.config.max_bindings {
                        return Err(KgError::Other(self.message(format!(
                            "the reply holds more than {} solutions{}",
                            self.config.max_bindings,
                            self.raise_hint("max_bindings")
                        ))));
                    }
                    all.push(solution.map_err(|e| bad(e.to_string()))?);
                }
                Ok(all)
            }
            ReaderQueryResultsParserOutput::Boolean(_) => Err(bad("a boolean, not solutions".into())),
        }
    }
}

/// The most variables a reply's head may name. ongraph's queries select a handful, and the
/// results parser checks each name against every name before it: a 1 MB head of 100,000 names
/// took 97 s to read, past every timeout and size limit.
const MAX_VARIABLES: usize = 256;

/// How many variables the head of a SPARQL JSON reply names, read in one linear pass that
/// keeps nothing; `None` when it is not JSON (the results parser then says what is wrong).
fn variables_named(body: &[u8]) -> Option<usize> {
    use serde::de::IgnoredAny;
    #[derive(serde::Deserialize)]
    struct Reply {
        #[serde(default)]
        head: Head,
    }
    #[derive(serde::Deserialize, Default)]
    struct Head {
        #[serde(default)]
        vars: Vec<IgnoredAny>,
    }
    serde_json::from_slice::<Reply>(body).ok().map(|reply| reply.head.vars.len())
}

/// How much of an error page is read, to quote its start.
const ERROR_EXCERPT_BYTES: usize = 4096;

/// The body up to `cap` bytes, and whether that is all of it (the rest is never read: an
/// endless reply costs `cap` bytes of memory).
async fn body_up_to(response: &mut reqwest::Response, cap: usize) -> Result<(Vec<u8>, bool), reqwest::Error> {
    // A success that says it is too long is not read at all (an error page is quoted).
    if response.status().is_success() && response.content_length().is_some_and(|n| n > cap as u64) {
        return Ok((Vec::new(), false));
    }
    let mut body = Vec::new();
    while let Some(chunk) = response.chunk().await? {
        let room = cap - body.len();
        if chunk.len() > room {
            body.extend_from_slice(&chunk[..room]);
            return Ok((body, false));
        }
        body.extend_from_slice(&chunk);
    }
    Ok((body, true))
}

/// A size limit in words: whole megabytes as MB, else KB.
fn shown_size(bytes: usize) -> String {
    if bytes >= 1 << 20 && bytes.is_multiple_of(1 << 20) {
        format!("{} MB", bytes >> 20)
    } else {
        format!("{} KB", bytes.div_ceil(1024))
    }
}

/// An endpoint as messages and logs show it: without its userinfo (`user:password@`), query
/// string or fragment, which may hold secrets. A text that is not a URL is cut the same way.
pub fn redact(url: &str) -> String {
    if let Ok(mut parsed) = reqwest::Url::parse(url)
        && parsed.has_host()
    {
        let _ = parsed.set_username("");
        let _ = parsed.set_password(None);
        parsed.set_query(None);
        parsed.set_fragment(None);
        return parsed.to_string();
    }
    // Not a URL (a bad port, say): cut what could be secret by hand.
    let cut = url.find(['?', '#']).map_or(url, |i| &url[..i]);
    let (scheme, rest) = match cut.find("://") {
        Some(i) => cut.split_at(i + 3),
        None => ("", cut),
    };
    let authority_end = rest.find('/').unwrap_or(rest.len());
    let rest = match rest[..authority_end].rfind('@') {
        Some(at) => &rest[at + 1..],
        None => rest,
    };
    let shown: String = format!("{scheme}{rest}").chars().filter(|c| !c.is_control()).collect();
    shown
}

fn urlencoded_len(text: &str) -> usize {
    text.bytes().map(|b| if b.is_ascii_alphanumeric() || b"-_.~".contains(&b) { 1 } else { 3 }).sum()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn endpoints_are_shown_without_userinfo_or_query() {
        for (url, shown) in [
            ("http://ada:s3cret@host:99999/query", "http://host:99999/query"),
            ("http://ada:s3cret@127.0.0.1:7878/query?token=s3cret#x", "http://127.0.0.1:7878/query"),
            ("https://example.org/sparql?access_token=s3cret", "https://example.org/sparql"),
            ("http://ada@ex ample/q?k=s3cret", "http://ex ample/q"),
            ("http://127.0.0.1:7878/query", "http://127.0.0.1:7878/query"),
        ] {
            assert_eq!(redact(url), shown, "{url}");
        }
    }

    #[tokio::test]
    async fn a_redirect_is_an_error_naming_where_without_secrets_and_is_not_followed() {
        use wiremock::matchers::method;
        use wiremock::{Mock, MockServer, ResponseTemplate};
        let server = MockServer::start().await;
        Mock::given(method("POST"))
            .respond_with(
                ResponseTemplate::new(302)
                    .insert_header("location", "http://ada:s3cret@elsewhere:8890/update?key=s3cret"),
            )
            .mount(&server)
            .await;
        let mut config = SparqlConfig::new(format!("{}/update?token=t0ken", server.uri()));
        config.max_retries = 2;
        config.backoff = Duration::from_millis(1);
        let client = SparqlClient::new(config).unwrap();
        let err = client.update("INSERT DATA { <urn:a> <urn:b> <urn:c> }").await.unwrap_err();
        let shown = err.to_string();
        assert!(shown.contains("HTTP 302") && shown.contains("redirected to http://elsewhere:8890/update"), "{shown}");
        assert!(!shown.contains("s3cret") && !shown.contains("t0ken") && !shown.contains("key="), "{shown}");
        let requests = server.received_requests().await.unwrap();
        assert_eq!(requests.len(), 1, "asked once, never followed nor retried");
        assert!(!err.is_permanent() && !err.is_unreachable());
    }

    #[tokio::test]
    async fn a_page_echoing_the_credentials_never_shows_them() {
        use wiremock::matchers::any;
        use wiremock::{Mock, MockServer, ResponseTemplate};
        // Found by an adversarial pass: a 401 page echoing the request headers printed them.
        let page = "denied: authorization: Basic dTpzM2NyZXRwdw== (u:s3cretpw) token=s3cretpw";
        let server = MockServer::start().await;
        Mock::given(any()).respond_with(ResponseTemplate::new(401).set_body_string(page)).mount(&server).await;
        let mut config = SparqlConfig::new(format!("{}/sparql", server.uri()));
        config.credentials = Some(Credentials::parse("u:s3cretpw"));
        let err = SparqlClient::new(config).unwrap().select("SELECT ?x WHERE { ?x ?p ?o }").await.unwrap_err();
        let shown = err.to_string();
        assert!(shown.contains("HTTP 401") && shown.contains("[redacted]"), "{shown}");
        assert!(!shown.contains("s3cretpw") && !shown.contains("dTpzM2NyZXRwdw"), "{shown}");
    }

    #[tokio::test]
    async fn a_head_of_a_hundred_thousand_variables_is_refused_not_read() {
        use wiremock::matchers::any;
        use wiremock::{Mock, MockServer, ResponseTemplate};
        let vars: Vec<String> = (0..100_000).map(|i| format!("v{i}")).collect();
        let body = serde_json::json!({"head": {"vars": vars}, "results": {"bindings": []}}).to_string();
        let server = MockServer::start().await;
        Mock::given(any())
            .respond_with(ResponseTemplate::new(200).set_body_raw(body, "application/sparql-results+json"))
            .mount(&server)
            .await;
        let client = SparqlClient::new(SparqlConfig::new(format!("{}/sparql", server.uri()))).unwrap();
        let err = client.select("SELECT ?x WHERE { ?x ?p ?o }").await.unwrap_err().to_string();
        assert!(err.contains("its head names 100000 variables"), "{err}");
        // A reply with a few variables still reads.
        assert_eq!(variables_named(br#"{"head":{"vars":["a","b"]},"results":{"bindings":[]}}"#), Some(2));
        assert_eq!(variables_named(b"not json"), None);
        let twice = br#"{"head":{"vars":["a"]},"head":{"vars":["b"]},"results":{"bindings":[]}}"#;
        assert_eq!(variables_named(twice), None, "a head given twice is not counted, and the reply refused");
    }

    #[tokio::test]
    async fn a_connect_failure_is_not_retried_when_so_configured() {
        let port = std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port();
        let mut config = SparqlConfig::new(format!("http://127.0.0.1:{port}/update?token=t0ken"));
        config.backoff = Duration::from_secs(5);
        config.retry_unreachable = false;
        config.connect_timeout = Some(Duration::from_secs(2));
        let started = std::time::Instant::now();
        let err =
            SparqlClient::new(config).unwrap().update("INSERT DATA { <urn:a> <urn:b> <urn:c> }").await.unwrap_err();
        assert!(err.is_unreachable(), "{err}");
        assert!(started.elapsed() < Duration::from_secs(2), "not retried: {:?}", started.elapsed());
        assert!(!err.to_string().contains("t0ken"), "{err}");
    }
}
