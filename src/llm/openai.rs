//! An OpenAI-compatible client (`/v1/chat/completions`, `/v1/embeddings`): works with OpenAI,
//! vLLM, Ollama and llama.cpp's server. Bounded retries with exponential backoff on connection
//! errors, timeouts, 429 (honouring `Retry-After`) and 5xx.
//!
//! Reasoning models: a reply's `reasoning_content` / `reasoning` field is kept apart from its
//! text, and their token count read. OpenAI's o-series and gpt-5 refuse `max_tokens` (they take
//! `max_completion_tokens`) and any temperature but their default: unless the endpoint's config
//! says which, the client learns both from the HTTP 400 that says so, once, and remembers. A
//! reasoning model (configured, or seen thinking) gets a larger completion budget.
//!
//! Structured replies: a request that carries a reply schema is sent with a `response_format`.
//! Servers disagree on its form — OpenAI, vLLM, Ollama and llama.cpp's `llama-server` take
//! `{"type":"json_schema","json_schema":{…}}`, llama-cpp-python's server only
//! `{"type":"json_object","schema":…}` — so `auto` starts with the first and steps down to the
//! second, then to free text, when the server refuses one (HTTP 400 or 422 about it), and
//! remembers where it stopped. Every completion says which mode it was made in.

use super::{ChatRequest, Completion, Embedder, LanguageModel, LlmError, ReplyMode, Usage};
use async_trait::async_trait;
use reqwest::StatusCode;
use serde::Deserialize;
use serde_json::json;
use std::sync::Mutex;
use std::time::{Duration, Instant};

/// The header naming the engine step that made a call (`relation_prune`, `reasoning`, …).
pub const STEP_HEADER: &str = "x-ongraph-step";

#[derive(Clone, Debug)]
pub struct OpenAiConfig {
    /// Base URL up to and including `/v1`, e.g. `http://127.0.0.1:11434/v1`.
    pub base_url: String,
    pub model: String,
    /// The name of the environment variable that holds the key (the key itself is never stored).
    pub api_key_env: Option<String>,
    pub timeout: Duration,
    /// Retries after the first attempt.
    pub max_retries: u32,
    /// First backoff; doubled on each retry.
    pub backoff: Duration,
    /// Longest wait honoured from a `Retry-After` header.
    pub max_retry_after: Duration,
    /// The field that carries the completion budget; `None`: `max_tokens` until the server
    /// refuses it, then `max_completion_tokens`.
    pub token_limit_param: Option<TokenLimitParam>,
    /// Whether to send the temperature; `None`: yes until the server refuses it.
    pub send_temperature: Option<bool>,
    /// Whether to send each request a seed drawn from its content ([`ChatRequest::seed`]), so
    /// the same request gets the same reply whatever was asked before it; `None`: yes until the
    /// server refuses it.
    pub send_seed: Option<bool>,
    /// Whether the model reasons before replying; `None`: from the first reply that shows it.
    pub reasoning: Option<bool>,
    /// The completion budget of a reasoning model (its thinking counts against it).
    pub reasoning_max_tokens: u32,
    /// How to ask for structured replies.
    pub structured: StructuredMode,
    /// The largest reply body read; more is an error.
    pub max_reply_bytes: usize,
    /// Where the reply mode an `auto` endpoint took is remembered between runs (none: learnt
    /// afresh by each process).
    pub memory: Option<super::endpoint_memory::EndpointMemory>,
}

/// The `structured` setting of an endpoint.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, serde::Deserialize, clap::ValueEnum)]
#[serde(rename_all = "snake_case")]
#[value(rename_all = "snake_case")]
pub enum StructuredMode {
    /// `json_schema`, else `json_object` with a schema, else free text: the first the endpoint
    /// accepts, remembered.
    #[default]
    Auto,
    /// `{"type":"json_schema",…}` (OpenAI, vLLM, Ollama, llama.cpp's `llama-server`).
    JsonSchema,
    /// `{"type":"json_object","schema":…}` (llama-cpp-python's server).
    JsonObject,
    /// Free-text replies read by the parsers, as the methods' papers do.
    Off,
}

impl StructuredMode {
    /// The mode tried first.
    fn first(self) -> ReplyMode {
        match self {
            Self::Auto | Self::JsonSchema => ReplyMode::JsonSchema,
            Self::JsonObject => ReplyMode::JsonObject,
            Self::Off => ReplyMode::FreeText,
        }
    }

    /// The mode to try after the endpoint refused `mode`.
    fn after(self, mode: ReplyMode) -> ReplyMode {
        match (self, mode) {
            (Self::Auto, ReplyMode::JsonSchema) => ReplyMode::JsonObject,
            _ => ReplyMode::FreeText,
        }
    }
}

/// The request field that carries the completion budget.
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum TokenLimitParam {
    MaxTokens,
    MaxCompletionTokens,
}

impl TokenLimitParam {
    fn field(self) -> &'static str {
        match self {
            Self::MaxTokens => "max_tokens",
            Self::MaxCompletionTokens => "max_completion_tokens",
        }
    }
}

/// What the client has learnt about its endpoint (or was told by the config).
#[derive(Clone, Copy, Debug)]
struct Learned {
    token_limit_param: TokenLimitParam,
    send_temperature: bool,
    send_seed: bool,
    reasoning: bool,
    /// The reply mode structured requests are sent in.
    structured: ReplyMode,
    /// Whether a structured reply was seen that does not fit its schema (said once).
    unenforced: bool,
}

/// A request field an endpoint refused.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Refused {
    MaxTokens,
    Temperature,
    Seed,
}

/// How many times one request is sent again as refusals teach: once per field that can be
/// refused (the token limit's name, the temperature, the seed) and per reply-mode step
/// (`json_schema` to `json_object` to free text), so a server that keeps refusing cannot loop.
const MAX_ADAPTATIONS: u32 = 5;

/// Whether a refusal (lowercased) names the `seed` field: quoted, as OpenAI and pydantic name
/// a field, or as a word beside words of refusal ("Unrecognized request argument supplied:
/// seed"). A prompt echoed back may hold the bare word; it is not a refusal of the field.
fn names_seed(body: &str) -> bool {
    let quoted = ["\"seed\"", "'seed'", "`seed`"].iter().any(|q| body.contains(q));
    let word = body.split(|c: char| !c.is_ascii_alphanumeric() && c != '_').any(|w| w == "seed");
    let refusal = [
        "unrecognized",
        "unrecognised",
        "unsupported",
        "not support",
        "unknown",
        "extra",
        "not permitted",
        "not allowed",
    ]
    .iter()
    .any(|w| body.contains(w));
    quoted || (word && refusal)
}

impl OpenAiConfig {
    pub fn new(base_url: impl Into<String>, model: impl Into<String>) -> Self {
        Self {
            base_url: base_url.into(),
            model: model.into(),
            api_key_env: None,
            timeout: Duration::from_secs(120),
            max_retries: 3,
            backoff: Duration::from_millis(500),
            max_retry_after: Duration::from_secs(60),
            token_limit_param: None,
            send_temperature: None,
            send_seed: None,
            reasoning: None,
            reasoning_max_tokens: 4096,
            structured: StructuredMode::Auto,
            max_reply_bytes: 1 << 20,
            memory: None,
        }
    }
}

pub struct OpenAiClient {
    config: OpenAiConfig,
    api_key: Option<String>,
    http: reqwest::Client,
    learned: Mutex<Learned>,
}

impl OpenAiClient {
    pub fn new(config: OpenAiConfig) -> Result<Self, LlmError> {
        crate::http::install_crypto_provider();
        let api_key = match &config.api_key_env {
            Some(var) => match std::env::var(var) {
                Ok(key) if !key.trim().is_empty() => Some(key.trim().to_string()),
                _ => return Err(LlmError::Config(format!("the API key variable {var} is not set"))),
            },
            None => None,
        };
        let http = reqwest::Client::builder()
            .timeout(config.timeout)
            .user_agent(concat!("ongraph/", env!("CARGO_PKG_VERSION")))
            .build()
            .map_err(|e| LlmError::Config(format!("cannot build the HTTP client: {e}")))?;
        let learned = Learned {
            token_limit_param: config.token_limit_param.unwrap_or(TokenLimitParam::MaxTokens),
            send_temperature: config.send_temperature.unwrap_or(true),
            send_seed: config.send_seed.unwrap_or(true),
            reasoning: config.reasoning.unwrap_or(false),
            structured: config.structured.first(),
            unenforced: false,
        };
        // What an `auto` endpoint took last time, so it is not refused again.
        let remembered = (config.structured == StructuredMode::Auto)
            .then(|| config.memory.as_ref()?.reply_mode(&config.base_url, &config.model))
            .flatten();
        let learned = Learned { structured: remembered.unwrap_or(learned.structured), ..learned };
        Ok(Self { config, api_key, http, learned: Mutex::new(learned) })
    }

    fn learned(&self) -> Learned {
        *self.learned.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// Learns from an HTTP 400 (or a pydantic server's 422) which fields the endpoint refuses,
    /// of those this request was `sent` with and the config left open, and stops sending them.
    /// Returns them: the request is worth sending again without. Judged by what this request
    /// sent, so calls in flight together each go again though the first refusal already taught.
    fn learn_from_refusal(&self, body: &str, sent: Learned) -> Vec<Refused> {
        let body = body.to_lowercase();
        let mut refused = Vec::new();
        if self.config.token_limit_param.is_none()
            && sent.token_limit_param == TokenLimitParam::MaxTokens
            && body.contains("max_tokens")
            && (body.contains("max_completion_tokens") || body.contains("unsupported"))
        {
            refused.push(Refused::MaxTokens);
        }
        if self.config.send_temperature.is_none()
            && sent.send_temperature
            && body.contains("temperature")
            && (body.contains("unsupported") || body.contains("not support") || body.contains("only the default"))
        {
            refused.push(Refused::Temperature);
        }
        if self.config.send_seed.is_none() && sent.send_seed && names_seed(&body) {
            refused.push(Refused::Seed);
        }
        if !refused.is_empty() {
            let mut learned = self.learned.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
            for field in &refused {
                match field {
                    Refused::MaxTokens => learned.token_limit_param = TokenLimitParam::MaxCompletionTokens,
                    Refused::Temperature => learned.send_temperature = false,
                    Refused::Seed => learned.send_seed = false,
                }
            }
            tracing::info!(url = %self.config.base_url, ?refused, "the endpoint refused a parameter; adapted");
        }
        refused
    }

    /// After an HTTP 400/422 (or llama-cpp-python's 500) to a request sent with a `response_format` in `mode`: whether the
    /// server refused the format (then the next mode is remembered and returned).
    fn learn_reply_mode(&self, status: u16, body: &str, mode: ReplyMode) -> Option<(ReplyMode, bool)> {
        let lower = body.to_lowercase();
        // 422 is how a pydantic server rejects a field it does not know; llama-cpp-python says
        // it with a 500 naming the field.
        let about_format = status == 422
            || (status == 500 && lower.contains("response_format"))
            || (status == 400
                && ["response_format", "json_schema", "json_object", "schema", "grammar"]
                    .iter()
                    .any(|w| lower.contains(w)));
        if mode.is_free_text() || !about_format {
            return None;
        }
        let next = self.config.structured.after(mode);
        // Kept for later runs only when the endpoint refused the form itself (llama-cpp-python:
        // "('body', 'response_format', 'type') Input should be 'text' or 'json_object'"), not one
        // schema it could not take (too large an enum, a grammar it could not build): that would
        // lower every later run for one request's sake.
        let the_form = lower.contains("response_format")
            && !["invalid schema", "schema for", "grammar", "enum", "too many", "too large"]
                .iter()
                .any(|w| lower.contains(w));
        let memory = self.config.memory.as_ref().filter(|_| self.config.structured == StructuredMode::Auto && the_form);
        let mut learned = self.learned.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        // Another call may have stepped down already; never step back up.
        if learned.structured == mode {
            learned.structured = next;
            if let Some(memory) = memory {
                memory.remember(&self.config.base_url, &self.config.model, next);
            }
        }
        tracing::warn!(url = %self.config.base_url, refused = mode.label(), next = next.label(), "the endpoint refused a response_format");
        Some((next, memory.is_some()))
    }

    fn chat_body(&self, request: &ChatRequest, learned: Learned) -> serde_json::Value {
        let mut body = json!({
            "model": self.config.model,
            "messages": [
                {"role": "system", "content": request.system},
                {"role": "user", "content": request.prompt},
            ],
            "stream": false,
        });
        let budget = if learned.reasoning {
            request.max_tokens.max(self.config.reasoning_max_tokens)
        } else {
            request.max_tokens
        };
        body[learned.token_limit_param.field()] = json!(budget);
        if learned.send_temperature {
            body["temperature"] = json!(request.temperature);
        }
        if learned.send_seed {
            body["seed"] = json!(request.seed());
        }
        if let Some(reply) = &request.schema {
            match learned.structured {
                ReplyMode::JsonSchema => {
                    body["response_format"] = json!({
                        "type": "json_schema",
                        "json_schema": {"name": reply.name, "schema": reply.schema, "strict": true},
                    });
                }
                ReplyMode::JsonObject => {
                    body["response_format"] = json!({"type": "json_object", "schema": reply.schema});
                }
                ReplyMode::FreeText => {}
            }
        }
        body
    }

    fn url(&self, path: &str) -> String {
        format!("{}/{}", self.config.base_url.trim_end_matches('/'), path)
    }

    /// POSTs `body` with bounded retries and returns the first reply that reads as a `T` and
    /// passes `check`. A 200 that does not (a proxy's HTML page, JSON cut short, no choices)
    /// is asked again like a 5xx: it says nothing about the request.
    async fn post<T: serde::de::DeserializeOwned>(
        &self,
        path: &str,
        body: &serde_json::Value,
        step: Option<&str>,
        check: fn(&T) -> Result<(), String>,
    ) -> Result<T, LlmError> {
        let url = self.url(path);
        let mut attempt = 0;
        loop {
            let mut request = self.http.post(&url).json(body);
            if let Some(step) = step {
                // Servers ignore it; proxies' logs and ongraph's own loopback server read it.
                request = request.header(STEP_HEADER, step);
            }
            if let Some(key) = &self.api_key {
                request = request.bearer_auth(key);
            }
            let (error, wait) = match request.send().await {
                Ok(response) => {
                    let status = response.status();
                    if status.is_success() {
                        match self.read_body(&url, response).await {
                            Ok(text) => match self.read_reply(&text, check) {
                                Ok(reply) => return Ok(reply),
                                Err((reason, true)) => (LlmError::Malformed { url: url.clone(), reason }, None),
                                // JSON of another shape would come back the same: not paid for twice.
                                Err((reason, false)) => return Err(LlmError::Malformed { url: url.clone(), reason }),
                            },
                            // The body stalled or stopped short: asked again, like a lost connection.
                            Err(e @ (LlmError::Timeout { .. } | LlmError::Unreachable { .. })) => (e, None),
                            Err(e) => return Err(e),
                        }
                    } else {
                        let retry_after = retry_after(&response);
                        let body = self.read_body(&url, response).await.unwrap_or_default();
                        let error = self.status_error(&url, status, &body);
                        // llama-cpp-python answers a request it cannot validate with HTTP 500:
                        // asking again would fail the same way.
                        let invalid = body.contains("response_format");
                        if invalid || !(status == StatusCode::TOO_MANY_REQUESTS || status.is_server_error()) {
                            return Err(error);
                        }
                        (error, retry_after)
                    }
                }
                Err(e) => (self.transport_error(&url, e), None),
            };
            if attempt >= self.config.max_retries {
                return Err(match error {
                    LlmError::Timeout { url, seconds, .. } => LlmError::Timeout { url, seconds, attempts: attempt + 1 },
                    other => other,
                });
            }
            let backoff = crate::http::backoff(self.config.backoff, attempt);
            let wait = wait.map(|w| w.min(self.config.max_retry_after)).unwrap_or(backoff);
            tracing::warn!(%url, attempt, ?wait, %error, "LLM call failed; retrying");
            tokio::time::sleep(wait).await;
            attempt += 1;
        }
    }

    /// The reply as a `T`, or why not and whether asking again could help: a body that is not
    /// JSON (a proxy's page, a cut) or has no choices may be transient; JSON of another shape
    /// is how this server answers.
    fn read_reply<T: serde::de::DeserializeOwned>(
        &self,
        text: &str,
        check: fn(&T) -> Result<(), String>,
    ) -> Result<T, (String, bool)> {
        let value: serde_json::Value = serde_json::from_str(text).map_err(|e| (format!("invalid JSON ({e})"), true))?;
        let reply: T = serde_json::from_value(value).map_err(|e| (self.redact(&e.to_string()), false))?;
        check(&reply).map_err(|reason| (reason, true))?;
        Ok(reply)
    }

    /// The body of a reply, up to [`OpenAiConfig::max_reply_bytes`]: a server that sends more
    /// (a runaway generation, a hostile endpoint) is an error, not gigabytes of memory.
    async fn read_body(&self, url: &str, mut response: reqwest::Response) -> Result<String, LlmError> {
        let limit = self.config.max_reply_bytes;
        let mut body = Vec::new();
        while let Some(chunk) = response.chunk().await.map_err(|e| self.transport_error(url, e))? {
            if body.len() + chunk.len() > limit {
                return Err(LlmError::Malformed {
                    url: url.into(),
                    reason: format!(
                        "the reply is larger than {} KB (max_reply_kb in the endpoint's [llm] entry)",
                        limit / 1024
                    ),
                });
            }
            body.extend_from_slice(&chunk);
        }
        Ok(String::from_utf8_lossy(&body).into_owned())
    }

    fn transport_error(&self, url: &str, e: reqwest::Error) -> LlmError {
        if e.is_timeout() {
            LlmError::Timeout { url: url.into(), seconds: self.config.timeout.as_secs(), attempts: 1 }
        } else {
            // The innermost cause says the useful thing ("Connection refused").
            let mut message = e.to_string();
            let mut source = std::error::Error::source(&e);
            while let Some(s) = source {
                message = s.to_string();
                source = s.source();
            }
            LlmError::Unreachable { url: url.into(), message }
        }
    }

    fn status_error(&self, url: &str, status: StatusCode, body: &str) -> LlmError {
        if status == StatusCode::UNAUTHORIZED || status == StatusCode::FORBIDDEN {
            return LlmError::Unauthorized {
                url: url.into(),
                status: status.as_u16(),
                key_env: self.config.api_key_env.clone().unwrap_or_else(|| "(none configured)".into()),
            };
        }
        let body: String = self.redact(body).chars().take(200).collect();
        LlmError::Status { url: url.into(), status: status.as_u16(), body: body.trim().to_string() }
    }

    /// `text` (an error body a server wrote) without the API key or any bearer token in it: a
    /// server that echoes the request must not put the key on stderr, in the log or in records.
    fn redact(&self, text: &str) -> String {
        let key: Vec<&str> = self.api_key.as_deref().into_iter().collect();
        crate::safe_text::without_credentials(text, &key)
    }
}

fn retry_after(response: &reqwest::Response) -> Option<Duration> {
    parse_retry_after(response.headers().get(reqwest::header::RETRY_AFTER)?.to_str().ok()?)
}

/// A `Retry-After` in seconds, at most a day: whatever a server writes there (`1e20`, `-1`,
/// `NaN`, an HTTP date), never a panic; the caller caps it further.
fn parse_retry_after(value: &str) -> Option<Duration> {
    let seconds = value.trim().parse::<f64>().ok().filter(|s| s.is_finite() && *s >= 0.0)?;
    Duration::try_from_secs_f64(seconds.min(86_400.0)).ok()
}

#[derive(Deserialize)]
struct ChatResponse {
    choices: Vec<Choice>,
    #[serde(default)]
    usage: serde_json::Value,
    /// llama.cpp's own figures (`cache_n`: prompt tokens reused from its cache).
    #[serde(default)]
    timings: serde_json::Value,
}

impl ChatResponse {
    fn check(&self) -> Result<(), String> {
        if self.choices.is_empty() { Err("no choices in the reply".into()) } else { Ok(()) }
    }
}
#[derive(Deserialize)]
struct Choice {
    message: MessageBody,
    /// `length` when the reply was cut off at the token limit (any other value, or none, is
    /// not that).
    #[serde(default)]
    finish_reason: Option<serde_json::Value>,
}
#[derive(Deserialize)]
struct MessageBody {
    content: Option<String>,
    /// DeepSeek, vLLM, llama.cpp with a reasoning parser.
    #[serde(default)]
    reasoning_content: Option<String>,
    /// Ollama, OpenRouter.
    #[serde(default)]
    reasoning: Option<String>,
}
/// A token count as the server wrote it: a negative, fractional, huge or non-numeric one is no
/// count (then estimated), never a failed call.
fn token_count(usage: &serde_json::Value, path: &[&str]) -> Option<u64> {
    let mut value = usage;
    for key in path {
        value = value.get(key)?;
    }
    value.as_u64().filter(|&n| n < 1 << 40)
}

#[async_trait]
impl LanguageModel for OpenAiClient {
    fn describe(&self) -> String {
        format!("{} at {}", self.config.model, self.config.base_url)
    }

    async fn complete(&self, request: &ChatRequest) -> Result<Completion, LlmError> {
        let started = Instant::now();
        let mut notes = Vec::new();
        let (parsed, mode) = self.chat_adapting(request, &mut notes).await?;
        let Some(choice) = parsed.choices.into_iter().next() else {
            // `ChatResponse::check` refused it already; said again rather than assumed.
            return Err(LlmError::Malformed {
                url: self.url("chat/completions"),
                reason: "no choices in the reply".into(),
            });
        };
        let cut_off = choice.finish_reason.as_ref().and_then(serde_json::Value::as_str) == Some("length");
        let message = choice.message;
        let text = message.content.unwrap_or_default();
        let reasoning = message.reasoning_content.or(message.reasoning).filter(|r| !r.trim().is_empty());
        let usage = reply_usage(request, &text, &parsed.usage, &parsed.timings, &mut notes);
        self.note_unenforced_schema(request, mode, cut_off, &text, &mut notes);
        let thinks = reasoning.is_some() || usage.reasoning_tokens > 0 || text.contains("</think>");
        if thinks && self.config.reasoning.is_none() {
            self.learned.lock().unwrap_or_else(std::sync::PoisonError::into_inner).reasoning = true;
        }
        Ok(Completion {
            text,
            reasoning,
            usage,
            latency_ms: started.elapsed().as_millis() as u64,
            cached: false,
            mode,
            notes,
            extracted: false,
            json_reply: None,
        })
    }
}

impl OpenAiClient {
    /// Sends the chat request, and again (with a note in `notes`) as the endpoint's refusals
    /// teach what it takes, at most [`MAX_ADAPTATIONS`] times, so a server that keeps refusing
    /// cannot loop. The reply, and the reply mode it was asked in.
    async fn chat_adapting(
        &self,
        request: &ChatRequest,
        notes: &mut Vec<String>,
    ) -> Result<(ChatResponse, ReplyMode), LlmError> {
        let mut tries = 0;
        loop {
            let mut learned = self.learned();
            if request.schema.is_none() {
                learned.structured = ReplyMode::FreeText;
            }
            let body = self.chat_body(request, learned);
            let result = self.post("chat/completions", &body, Some(&request.step), ChatResponse::check).await;
            // A pydantic server refuses a field it does not know with 422.
            if let Err(LlmError::Status { status: 400 | 422, body, .. }) = &result
                && tries < MAX_ADAPTATIONS
            {
                let refused = self.learn_from_refusal(body, learned);
                if refused.contains(&Refused::Seed) {
                    notes.push(
                        "the endpoint refused a request's `seed`: its replies are not reproducible for the rest of this run"
                            .into(),
                    );
                }
                if !refused.is_empty() {
                    tries += 1;
                    continue;
                }
            }
            match result {
                Err(LlmError::Status { url, status: status @ (400 | 422 | 500), body }) if tries < MAX_ADAPTATIONS => {
                    let Some((next, remembered)) = self.learn_reply_mode(status, &body, learned.structured) else {
                        return Err(LlmError::Status { url, status, body });
                    };
                    notes.push(reply_mode_note(learned.structured, status, next, remembered));
                    tries += 1;
                }
                other => return Ok((other?, learned.structured)),
            }
        }
    }

    /// A server may take a `response_format` without enforcing it: a reply that does not fit
    /// its schema shows it (one cut off at the token limit shows nothing: an enforcing server
    /// cuts off too). Said once per endpoint, in `notes`; the engine reads such replies as far
    /// as they go.
    fn note_unenforced_schema(
        &self,
        request: &ChatRequest,
        mode: ReplyMode,
        cut_off: bool,
        text: &str,
        notes: &mut Vec<String>,
    ) {
        if let Some(schema) =
            request.schema.as_ref().filter(|_| !mode.is_free_text() && !cut_off && !text.contains("</think>"))
            && let Some(why) = super::schema_check::violation(&schema.schema, text)
        {
            let mut learned = self.learned.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
            if !learned.unenforced {
                learned.unenforced = true;
                tracing::warn!(url = %self.config.base_url, mode = mode.label(), %why, "the endpoint does not enforce the reply's JSON schema");
                notes.push(format!(
                    "the endpoint took the JSON schema as {} but does not enforce it ({why}); replies are read as far as they fit",
                    mode.label()
                ));
            }
        }
    }
}

/// The note saying the endpoint refused structured replies as `refused` (HTTP `status`) and
/// was asked again as `next`, with the setting that asks so at once, where there is one.
fn reply_mode_note(refused: ReplyMode, status: u16, next: ReplyMode, remembered: bool) -> String {
    let hint = match next {
        ReplyMode::FreeText => String::new(),
        mode => format!(" (structured = \"{}\" in the endpoint's [llm] entry asks so at once)", mode.label()),
    };
    let kept = if remembered { ", remembered for later runs" } else { "" };
    format!(
        "the endpoint refused structured replies as {} (HTTP {status}); asked again as {}{kept}{hint}",
        refused.label(),
        next.label()
    )
}

/// The tokens a reply took, as the server counted them (`usage`, llama.cpp's `timings`), else
/// estimated from the text (said in `notes` when the server gave counts that are not).
fn reply_usage(
    request: &ChatRequest,
    text: &str,
    usage: &serde_json::Value,
    timings: &serde_json::Value,
    notes: &mut Vec<String>,
) -> Usage {
    let (prompt_tokens, completion_tokens) =
        (token_count(usage, &["prompt_tokens"]), token_count(usage, &["completion_tokens"]));
    if !usage.is_null() && (prompt_tokens.is_none() || completion_tokens.is_none()) {
        notes.push("the endpoint's token counts were missing or not counts; estimated from the text".into());
    }
    let usage = Usage {
        prompt_tokens: prompt_tokens
            .unwrap_or_else(|| super::estimate_tokens(&request.system) + super::estimate_tokens(&request.prompt)),
        completion_tokens: completion_tokens.unwrap_or_else(|| super::estimate_tokens(text)),
        reasoning_tokens: token_count(usage, &["completion_tokens_details", "reasoning_tokens"]).unwrap_or(0),
        cached_tokens: token_count(usage, &["prompt_tokens_details", "cached_tokens"])
            .or_else(|| token_count(timings, &["cache_n"]))
            .unwrap_or(0),
    };
    // Never more than the prompt: a server's odd figure must not make evaluated tokens negative.
    Usage { cached_tokens: usage.cached_tokens.min(usage.prompt_tokens), ..usage }
}

#[derive(Deserialize)]
struct EmbeddingResponse {
    data: Vec<EmbeddingItem>,
}
#[derive(Deserialize)]
struct EmbeddingItem {
    embedding: Vec<f32>,
    #[serde(default)]
    index: Option<usize>,
}

#[async_trait]
impl Embedder for OpenAiClient {
    async fn embed(&self, texts: &[String]) -> Result<Vec<Vec<f32>>, LlmError> {
        let body = json!({ "model": self.config.model, "input": texts });
        let parsed: EmbeddingResponse = self.post("embeddings", &body, None, |_| Ok(())).await?;
        let url = self.url("embeddings");
        if parsed.data.len() != texts.len() {
            return Err(LlmError::Malformed {
                url,
                reason: format!("{} embeddings for {} inputs", parsed.data.len(), texts.len()),
            });
        }
        let mut items = parsed.data;
        // Servers may return items out of order; `index` says where each belongs.
        items.sort_by_key(|item| item.index.unwrap_or(usize::MAX));
        Ok(items.into_iter().map(|item| item.embedding).collect())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn any_retry_after_is_a_bounded_wait_or_none() {
        assert_eq!(parse_retry_after("2"), Some(Duration::from_secs(2)));
        assert_eq!(parse_retry_after(" 0.5 "), Some(Duration::from_millis(500)));
        for huge in ["1e20", "18446744073709551615", "1e308"] {
            assert_eq!(parse_retry_after(huge), Some(Duration::from_secs(86_400)), "{huge}");
        }
        for bad in ["-1", "NaN", "inf", "", "Wed, 21 Oct 2015 07:28:00 GMT"] {
            assert_eq!(parse_retry_after(bad), None, "{bad}");
        }
    }
}
