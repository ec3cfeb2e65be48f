//! The language-model layer: one trait for chat completions (and one for embeddings), an
//! OpenAI-compatible HTTP client, a scripted model for tests and the offline demo, and a
//! gold-path simulation for measuring the engine on datasets that give gold paths.

pub(crate) mod endpoint_memory;
pub(crate) mod openai;
pub(crate) mod schema_check;
pub(crate) mod scripted;
pub(crate) mod serve;

use async_trait::async_trait;
use serde::{Deserialize, Serialize};

/// One chat-completion call as the engine wants it made.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct ChatRequest {
    /// Which engine step asked (`relation_prune`, `reasoning`, …): for logs, transcripts and the
    /// scripted model's matching. The OpenAI-compatible client sends it only as a header
    /// (`x-ongraph-step`).
    pub step: String,
    pub system: String,
    pub prompt: String,
    pub temperature: f64,
    pub max_tokens: u32,
    /// Which of several deliberate samples of the same prompt this is (self-consistency): part
    /// of the call's identity, so samples are not answered from one another's memo.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub sample: u32,
    /// The JSON shape the reply should take, when the caller wants a structured reply: sent as
    /// the request's `response_format` where the endpoint takes one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub schema: Option<ReplySchema>,
    /// Reason first, then format: the call is made as free text (`schema` is `None`), and when
    /// its reply cannot be read as it is, a second call made with this extracts the structured
    /// reply from it (the engine asks for it as a call of its own).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub extract: Option<Box<Extraction>>,
}

/// The second call of a reason-first request: its prompt is `before`, the free reply, `after`;
/// its reply takes `schema`.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Extraction {
    pub schema: ReplySchema,
    pub before: String,
    pub after: String,
}

impl ChatRequest {
    /// The extraction call for `reply`, the free reply of this reason-first request.
    pub fn extraction(&self, reply: &str) -> Option<ChatRequest> {
        let e = self.extract.as_ref()?;
        Some(ChatRequest {
            step: self.step.clone(),
            system: self.system.clone(),
            prompt: format!("{}{}{}", e.before, reply.trim(), e.after),
            temperature: 0.0,
            max_tokens: self.max_tokens,
            sample: self.sample,
            schema: Some(e.schema.clone()),
            extract: None,
        })
    }

    /// The sampling seed sent with this request: a stable hash (FNV-1a, the same on every run
    /// and machine) of what makes it this call, so the same request gets the same reply from a
    /// server that honours seeds, whatever was asked before it (a server's own seed moves on
    /// with every call, and a cached prefix restores an old one), and deliberate samples differ.
    /// 31 bits: every server's integer takes it, and it is never llama.cpp's "random" (2^32−1).
    pub fn seed(&self) -> u32 {
        let schema = self.schema.as_ref().map(|s| s.schema.to_string()).unwrap_or_default();
        let fields: [&[u8]; 6] = [
            self.system.as_bytes(),
            self.prompt.as_bytes(),
            &self.temperature.to_bits().to_le_bytes(),
            &self.max_tokens.to_le_bytes(),
            &self.sample.to_le_bytes(),
            schema.as_bytes(),
        ];
        let mut hash: u64 = 0xcbf2_9ce4_8422_2325;
        for field in fields {
            // A separator no UTF-8 text holds, so ("ab", "c") and ("a", "bc") differ.
            for &byte in field.iter().chain(&[0xff]) {
                hash ^= u64::from(byte);
                hash = hash.wrapping_mul(0x0100_0000_01b3);
            }
        }
        ((hash ^ (hash >> 32)) as u32) & 0x7fff_ffff
    }
}

/// A JSON schema for a reply, named after the kind of prompt it answers.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct ReplySchema {
    /// The prompt kind (`relations`, `verdict`, …): the schema's name, `[a-z_]` only.
    pub name: String,
    pub schema: serde_json::Value,
    /// The candidates in the order the prompt lists them, for reading a reply that scores them
    /// (never sent).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub labels: Vec<String>,
    /// Names the schema's enums hold in another form, as (the form sent, the name): a name with
    /// a character that breaks a server's grammar is sent without it, and a reply's choice is
    /// read back as the name (never sent).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub renamed: Vec<(String, String)>,
}

/// How a reply was asked for: as free text, or constrained by a JSON schema through the
/// endpoint's `response_format` (`json_schema`: OpenAI, vLLM, Ollama, llama.cpp's
/// `llama-server`; `json_object` with a `schema`: llama-cpp-python's server).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ReplyMode {
    #[default]
    FreeText,
    JsonSchema,
    JsonObject,
}

impl ReplyMode {
    pub fn is_free_text(&self) -> bool {
        *self == Self::FreeText
    }

    pub fn label(self) -> &'static str {
        match self {
            Self::FreeText => "free text",
            Self::JsonSchema => "json_schema",
            Self::JsonObject => "json_object",
        }
    }
}

fn is_zero(n: &u32) -> bool {
    *n == 0
}

#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Usage {
    pub prompt_tokens: u64,
    pub completion_tokens: u64,
    /// Of the completion tokens, those a reasoning model spent thinking (when the server says).
    #[serde(default, skip_serializing_if = "is_zero_u64")]
    pub reasoning_tokens: u64,
    /// Of the prompt tokens, those the server reused from its cache of an earlier prompt's
    /// prefix instead of evaluating them (when it says: OpenAI's, vLLM's and llama.cpp's
    /// `prompt_tokens_details.cached_tokens`, llama.cpp's `timings.cache_n`).
    #[serde(default, skip_serializing_if = "is_zero_u64")]
    pub cached_tokens: u64,
}

fn is_zero_u64(n: &u64) -> bool {
    *n == 0
}

impl std::ops::AddAssign for Usage {
    fn add_assign(&mut self, other: Self) {
        self.prompt_tokens += other.prompt_tokens;
        self.completion_tokens += other.completion_tokens;
        self.reasoning_tokens += other.reasoning_tokens;
        self.cached_tokens += other.cached_tokens;
    }
}

#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Completion {
    /// The reply, without any reasoning: what the engine parses.
    pub text: String,
    /// What a reasoning model thought before replying (a `reasoning_content` / `reasoning` field,
    /// or `<think>…</think>` taken out of the text): kept for the trace, never parsed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reasoning: Option<String>,
    pub usage: Usage,
    pub latency_ms: u64,
    /// True when the driver answered from this run's memo of identical calls (no call was made).
    #[serde(default)]
    pub cached: bool,
    /// How the reply was asked for (what the endpoint accepted).
    #[serde(default, skip_serializing_if = "ReplyMode::is_free_text")]
    pub mode: ReplyMode,
    /// What the client had to do to get the reply (e.g. the endpoint refused structured
    /// replies): notes for the trace.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub notes: Vec<String>,
    /// A reason-first call whose reply needed the extraction call: `text` is the extraction's
    /// reply, `reasoning` holds the free reply it was read from, and the usage covers both.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub extracted: bool,
    /// The model's JSON reply, when `text` is the engine's reading of it (set by the engine,
    /// never sent or saved).
    #[serde(skip)]
    pub json_reply: Option<String>,
}

impl Completion {
    /// The calls made for this completion: two when its answer was extracted by a second call.
    pub fn calls(&self) -> u64 {
        1 + u64::from(self.extracted)
    }

    /// This free reply followed by `extraction`, the reply of the call that read it: one
    /// completion that cost both.
    pub fn then_extracted(self, extraction: Completion) -> Completion {
        let mut usage = self.usage;
        usage += extraction.usage;
        let reasoning = [self.reasoning, Some(self.text)].into_iter().flatten().collect::<Vec<_>>().join("\n");
        let mut notes = self.notes;
        notes.extend(extraction.notes);
        Completion {
            text: extraction.text,
            reasoning: Some(reasoning),
            usage,
            latency_ms: self.latency_ms + extraction.latency_ms,
            // Answered from a memo only when both calls were.
            cached: self.cached && extraction.cached,
            mode: extraction.mode,
            notes,
            extracted: true,
            json_reply: None,
        }
    }

    /// Takes `<think>…</think>` out of the text into `reasoning` (after any the server sent
    /// apart), so that no answer is ever read from inside a think block. An unclosed `<think>`
    /// (a reply cut off while thinking) is all reasoning; a lone `</think>` (the opening tag was
    /// in the prompt template) ends the reasoning that came before it.
    pub fn without_thinking(mut self) -> Self {
        let (text, thought) = split_thinking(&self.text);
        if let Some(thought) = thought {
            self.reasoning = Some(match self.reasoning.take().filter(|r| !r.trim().is_empty()) {
                Some(sent) => format!("{sent}\n{thought}"),
                None => thought,
            });
            self.text = text;
        }
        if self.reasoning.as_deref().is_some_and(|r| r.trim().is_empty()) {
            self.reasoning = None;
        }
        self
    }
}

/// `(reply without think blocks, the thinking)`; `None` when there was no think block.
fn split_thinking(text: &str) -> (String, Option<String>) {
    const OPEN: &str = "<think>";
    const CLOSE: &str = "</think>";
    let (mut reply, mut thought) = (String::new(), Vec::new());
    let mut rest = text;
    // A closing tag before any opening one: the opening tag was in the prompt.
    if let Some(close) = rest.find(CLOSE)
        && rest.find(OPEN).is_none_or(|open| open > close)
    {
        thought.push(rest[..close].trim().to_string());
        rest = &rest[close + CLOSE.len()..];
    }
    while let Some(open) = rest.find(OPEN) {
        reply.push_str(&rest[..open]);
        let inner = &rest[open + OPEN.len()..];
        match inner.find(CLOSE) {
            Some(close) => {
                thought.push(inner[..close].trim().to_string());
                rest = &inner[close + CLOSE.len()..];
            }
            None => {
                thought.push(inner.trim().to_string());
                rest = "";
            }
        }
    }
    if thought.is_empty() {
        return (text.to_string(), None);
    }
    reply.push_str(rest);
    (reply.trim().to_string(), Some(thought.join("\n")))
}

/// How to go on where the offline demo cannot: the endpoints `config` (the file the user's
/// command reads) already names (`configured`), else what to add to it and the flag that
/// connect a real model.
pub fn connect_a_model(config: &str, configured: &[&str]) -> String {
    // A name the file does not use yet: TOML refuses a table defined twice.
    let name = std::iter::once("local".to_string())
        .chain((2..).map(|k| format!("local-{k}")))
        .find(|n| !configured.contains(&n.as_str()))
        .unwrap_or_default();
    let add = format!(
        "add [llm.{name}] with base_url = \"http://127.0.0.1:8080/v1\" and model = \"NAME\" to {config} (llama.cpp's llama-server, or any OpenAI-compatible server: Ollama, vLLM, OpenAI), then run with --llm {name} (README: \"Pointing it at a real model\")."
    );
    match configured {
        [] => format!("To go on, connect a model: {add}"),
        names => {
            let flags: Vec<String> = names.iter().map(|n| format!("--llm {n}")).collect();
            format!(
                "To go on, run with {} (configured in {config}), or connect another model: {add}",
                flags.join(" or ")
            )
        }
    }
}

/// The method that asked a call of `step` (`method`, its label, when known) where the step's
/// name is another method's: self-consistency asks its samples with CoT's prompt, as `cot`
/// steps (the name its recordings and scripts match), and the user asked for SC, not CoT.
pub fn borrowed_step<'a>(step: &str, method: Option<&'a str>) -> Option<&'a str> {
    method.filter(|&m| step == "cot" && m != "CoT")
}

/// Whether a completion's note is about the endpoint itself (it refused a reply format, does
/// not enforce the schema, sent no token counts): worth telling the user beside the answer,
/// once, not only in the trace (the token-count note comes with every such call).
pub fn is_endpoint_note(note: &str) -> bool {
    note.starts_with("the endpoint ") || note.starts_with("the endpoint's ")
}

/// A call's step in words, as the method that asked it (`method`, its label, when known) is
/// known to the user: SC's samples are SC's, not CoT's; any other step as `words` says it
/// (what its template says its calls do).
fn step_of_method_in_words(step: &str, method: Option<&str>, words: &str) -> String {
    match borrowed_step(step, method) {
        Some(m) => format!("{m}: sampling step-by-step answers from the model's own knowledge"),
        None => words.to_string(),
    }
}

/// Where a script has no reply for a step of another method's name: who asked (a script's
/// author needs both, the step to write and the method that asked it).
fn asked_by(step: &str, method: Option<&str>) -> String {
    borrowed_step(step, method).map(|m| format!(", asked by {m}")).unwrap_or_default()
}

/// Where the demo knows none of a run's first step (`unrecorded`) for any question, its list
/// of questions is not all: the method (`method`, its label, when known) needs a model.
fn not_by(unrecorded: Option<&str>, method: Option<&str>) -> String {
    match (unrecorded, method) {
        (None, _) => String::new(),
        (Some(_), Some(m)) => format!(", but not with {m}, whose steps it records for none of them"),
        (Some(words), None) => format!(", but not at this step ({words}), which it records for none of them"),
    }
}

/// How many times a request was tried, after a message about the last try ("" for once).
fn tries(attempts: u32) -> String {
    if attempts > 1 { format!(", on each of {attempts} attempts") } else { String::new() }
}

#[derive(Debug, thiserror::Error)]
pub enum LlmError {
    #[error("cannot reach the LLM endpoint {url}: {message}")]
    Unreachable { url: String, message: String },
    #[error("the LLM endpoint {url} timed out after {seconds} s{}", tries(*attempts))]
    Timeout { url: String, seconds: u64, attempts: u32 },
    #[error("the LLM endpoint {url} refused the key (HTTP {status}); check the variable {key_env}")]
    Unauthorized { url: String, status: u16, key_env: String },
    #[error("the LLM endpoint {url} answered HTTP {status}: {body}")]
    Status { url: String, status: u16, body: String },
    #[error("the LLM endpoint {url} sent a reply that is not a chat completion: {reason}")]
    Malformed { url: String, reason: String },
    /// `method`: the label of the method that asked, once the driver's caller has said it
    /// (see [`LlmError::asked_by`]).
    #[error(
        "the scripted model has no reply for this {step} prompt{} (ends: {excerpt:?}); add one to {file}",
        asked_by(step, method.as_deref())
    )]
    NoScriptedReply { step: String, excerpt: String, file: String, method: Option<String> },
    /// The offline demo was asked a step of one of its questions that it did not record (the
    /// user steered off its recorded branches).
    #[error(
        "this step ({}) is outside the offline demo's recording: the demo model replies only to the steps it recorded (the README lists the moves it knows). {advice}",
        step_of_method_in_words(step, method.as_deref(), words)
    )]
    OffScript {
        step: String,
        advice: String,
        method: Option<String>,
        /// The step in words, as the program's templates say it.
        words: String,
    },
    /// The offline demo was asked a question it has no recording of. `unrecorded`: the step
    /// asked, in words, when the demo records it for none of its questions either (the
    /// baselines').
    #[error(
        "the offline demo model knows only its recorded steps, and this question is not one it recorded (it answers {known}{}). {advice}",
        not_by(unrecorded.as_deref(), method.as_deref())
    )]
    NotInDemo { known: String, advice: String, unrecorded: Option<String>, method: Option<String> },
    #[error("{0}")]
    Config(String),
}

impl LlmError {
    /// Whether the endpoint itself failed (unreachable, timed out, a server error), as opposed
    /// to a reply or request this call alone got wrong: several in a row mean it went away.
    pub fn is_endpoint_failure(&self) -> bool {
        match self {
            LlmError::Unreachable { .. } | LlmError::Timeout { .. } => true,
            LlmError::Status { status, .. } => *status >= 500,
            _ => false,
        }
    }

    /// The error as the user's method says it: `method` (its label) asked the failed call. A
    /// model sees only the call, whose step name may be another method's (SC's samples are
    /// `cot` steps).
    pub fn asked_by(self, method: &str) -> Self {
        let method = Some(method.to_string());
        match self {
            LlmError::OffScript { step, advice, words, .. } => LlmError::OffScript { step, advice, method, words },
            LlmError::NoScriptedReply { step, excerpt, file, .. } => {
                LlmError::NoScriptedReply { step, excerpt, file, method }
            }
            LlmError::NotInDemo { known, advice, unrecorded, .. } => {
                LlmError::NotInDemo { known, advice, unrecorded, method }
            }
            other => other,
        }
    }
}

#[async_trait]
pub trait LanguageModel: Send + Sync {
    /// A short description for status lines ("gpt-4o-mini at https://…", "scripted: demo").
    fn describe(&self) -> String;
    async fn complete(&self, request: &ChatRequest) -> Result<Completion, LlmError>;
}

#[async_trait]
pub trait Embedder: Send + Sync {
    async fn embed(&self, texts: &[String]) -> Result<Vec<Vec<f32>>, LlmError>;
}

/// A rough token count (about four characters a token) for models that report no usage.
pub(crate) fn estimate_tokens(text: &str) -> u64 {
    (text.chars().count() as u64).div_ceil(4)
}

/// A model shared by several runs at once (`eval`'s questions in flight) with at most `n` calls
/// in flight across all of them, so running questions side by side does not multiply the load
/// on the endpoint.
pub(crate) struct CallLimit {
    inner: std::sync::Arc<dyn LanguageModel>,
    permits: tokio::sync::Semaphore,
}

impl CallLimit {
    pub fn new(inner: std::sync::Arc<dyn LanguageModel>, n: usize) -> Self {
        Self { inner, permits: tokio::sync::Semaphore::new(n.max(1)) }
    }
}

#[async_trait]
impl LanguageModel for CallLimit {
    fn describe(&self) -> String {
        self.inner.describe()
    }

    async fn complete(&self, request: &ChatRequest) -> Result<Completion, LlmError> {
        // The semaphore is never closed, so acquiring only waits.
        let _permit = self.permits.acquire().await.map_err(|e| LlmError::Config(e.to_string()))?;
        self.inner.complete(request).await
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    #[test]
    fn think_blocks_are_reasoning_never_the_reply() {
        let c = |text: &str| Completion { text: text.into(), ..Default::default() }.without_thinking();
        let r = c("<think>{No} … maybe {Canberra}</think>\n{Yes}. The answer is {Australia}.");
        assert_eq!(r.text, "{Yes}. The answer is {Australia}.");
        assert_eq!(r.reasoning.as_deref(), Some("{No} … maybe {Canberra}"));
        // Cut off while thinking: nothing to parse.
        let r = c("<think>Let me see: {Yes} perhaps");
        assert_eq!((r.text.as_str(), r.reasoning.as_deref()), ("", Some("Let me see: {Yes} perhaps")));
        // The opening tag was in the template.
        let r = c("thinking {No}\n</think>\n{Yes}");
        assert_eq!((r.text.as_str(), r.reasoning.as_deref()), ("{Yes}", Some("thinking {No}")));
        // Two blocks, text between kept.
        let r = c("<think>a</think>{Yes}<think>b</think> {X}");
        assert_eq!((r.text.as_str(), r.reasoning.as_deref()), ("{Yes} {X}", Some("a\nb")));
        // No block: untouched; an empty reasoning field sent by a server is dropped.
        let mut plain = c("{Yes}");
        assert_eq!((plain.text.as_str(), plain.reasoning.as_deref()), ("{Yes}", None));
        plain.reasoning = Some("  ".into());
        assert_eq!(plain.without_thinking().reasoning, None);
    }

    /// Counts the calls in flight at once.
    struct Slow {
        now: std::sync::atomic::AtomicUsize,
        most: std::sync::atomic::AtomicUsize,
    }

    #[async_trait]
    impl LanguageModel for Slow {
        fn describe(&self) -> String {
            "slow".into()
        }
        async fn complete(&self, _: &ChatRequest) -> Result<Completion, LlmError> {
            use std::sync::atomic::Ordering::SeqCst;
            let n = self.now.fetch_add(1, SeqCst) + 1;
            self.most.fetch_max(n, SeqCst);
            tokio::time::sleep(Duration::from_millis(20)).await;
            self.now.fetch_sub(1, SeqCst);
            Ok(Completion {
                text: String::new(),
                reasoning: None,
                usage: Usage::default(),
                latency_ms: 20,
                ..Default::default()
            })
        }
    }

    #[tokio::test]
    async fn a_call_limit_bounds_the_calls_in_flight() {
        let slow = std::sync::Arc::new(Slow { now: Default::default(), most: Default::default() });
        let limited = CallLimit::new(slow.clone(), 3);
        let request = ChatRequest {
            step: "x".into(),
            system: String::new(),
            prompt: String::new(),
            temperature: 0.0,
            max_tokens: 1,
            sample: 0,
            schema: None,
            extract: None,
        };
        let calls = (0..10).map(|_| limited.complete(&request));
        assert!(futures::future::join_all(calls).await.iter().all(Result::is_ok));
        assert_eq!(slow.most.load(std::sync::atomic::Ordering::SeqCst), 3);
    }

    fn shape(schema: serde_json::Value) -> ReplySchema {
        ReplySchema { name: "relations".into(), schema, ..Default::default() }
    }

    #[test]
    fn a_seed_is_the_requests_own_and_the_same_everywhere() {
        let request = ChatRequest {
            step: "relation_prune".into(),
            system: "You are an AI assistant.".into(),
            prompt: "Q: Where is Canberra?".into(),
            temperature: 0.4,
            max_tokens: 256,
            sample: 0,
            schema: None,
            extract: None,
        };
        let seed = request.seed();
        // Pinned: a seed that changed between versions would change every reply a user
        // reproduces (FNV-1a over the fields, computed apart in Python).
        assert_eq!(seed, 0x1de5_dd38, "{seed:#x}");
        assert!(seed < 1 << 31);
        // The step is a label; what is sent makes the call.
        assert_eq!(ChatRequest { step: "reasoning".into(), ..request.clone() }.seed(), seed);
        let others = [
            ChatRequest { sample: 1, ..request.clone() },
            ChatRequest { prompt: "Q: Where is Canberra ?".into(), ..request.clone() },
            ChatRequest { temperature: 0.0, ..request.clone() },
            ChatRequest {
                system: "You are an AI assistant.Q: Where is Canberra?".into(),
                prompt: String::new(),
                ..request.clone()
            },
            ChatRequest { schema: Some(shape(serde_json::json!({"type": "object"}))), ..request.clone() },
        ];
        for other in others {
            assert_ne!(other.seed(), seed, "{other:?}");
        }
        // The schema's content counts (its name is not sent as part of it), serialised in the
        // order it was written: pinned too, so a change of serialisation shows.
        let relations = |max: u32| {
            let schema =
                serde_json::json!({"type": "object", "properties": {"relations": {"type": "array", "maxItems": max}}});
            ChatRequest { schema: Some(shape(schema)), ..request.clone() }
        };
        assert_eq!(relations(3).seed(), 0x5f69_4a9e, "{:#x}", relations(3).seed());
        assert_ne!(relations(2).seed(), relations(3).seed());
    }
}
