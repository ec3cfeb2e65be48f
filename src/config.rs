//! `ongraph/config.toml` in the XDG config directory (or `--config FILE`, or `$ONGRAPH_CONFIG`):
//! named LLM endpoints and knowledge graphs, and defaults. Unknown keys are errors, so a typo
//! never silently does nothing.

use crate::engine::{MethodId, PruneTool};
use crate::kg::KgProfile;
use serde::Deserialize;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

#[derive(Clone, Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Config {
    #[serde(default)]
    pub defaults: Defaults,
    /// Named OpenAI-compatible endpoints: `[llm.NAME]`.
    #[serde(default)]
    pub llm: BTreeMap<String, LlmEntry>,
    /// Named knowledge graphs: `[kg.NAME]`.
    #[serde(default)]
    pub kg: BTreeMap<String, KgEntry>,
    /// The endpoint used by `--prune embedding`.
    #[serde(default)]
    pub embedding: Option<LlmEntry>,
    /// The terminal UI's key bindings: command name → keys (`step = ["n", "space"]`); the
    /// help (`?`) lists the command names.
    #[serde(default)]
    pub keys: BTreeMap<String, Vec<String>>,
}

#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct Defaults {
    /// `demo`, a name from `[llm.*]`, or `scripted:FILE`.
    pub llm: String,
    /// `demo`, a name from `[kg.*]`, or a file path.
    pub kg: String,
    #[serde(deserialize_with = "known_method")]
    pub method: MethodId,
    pub width: usize,
    pub depth: u32,
    pub prune: PruneTool,
    pub unified: bool,
    /// Score the next hop's relations while the sufficiency check runs.
    pub speculate: bool,
    pub seed: u64,
    /// `sc`: chain-of-thought samples that vote.
    pub samples: usize,
    /// `pog`, `pog-e`: pruning strategy (fuzzy, fuzzy-branch, fuzzy-precise, all).
    pub pog_pruning: crate::engine::pog::PogPruning,
    /// `pog`, `pog-e`: W1, the paths fuzzy selection keeps.
    pub fuzzy_width: usize,
    /// `pog`, `pog-e`: summarise the selected paths before each sufficiency check.
    pub path_summary: bool,
    /// `gog`: most Thought/Action/Observation steps.
    pub gog_steps: usize,
    /// `gog`: samples per Generate action (verification when more than 1).
    pub generate_samples: usize,
    /// Requests in flight at once.
    pub concurrency: usize,
    /// A directory of prompt templates overriding the built-in ones.
    pub prompts: Option<PathBuf>,
    /// Where the log file goes (default: the XDG state directory).
    pub log_file: Option<PathBuf>,
    /// The correction store (default: `$XDG_DATA_HOME/ongraph/overlay`).
    pub overlay: Option<PathBuf>,
    /// Recorded as the author of corrections (default: `$USER`).
    pub author: Option<String>,
    /// Cache SPARQL results on disk, so asking again sends no query.
    pub query_cache: bool,
    /// Where (default: `$XDG_CACHE_HOME/ongraph/query-cache`).
    pub query_cache_dir: Option<PathBuf>,
    /// The terminal UI's theme: dark, light, high-contrast, or one in
    /// `$XDG_CONFIG_HOME/ongraph/themes`.
    pub theme: Option<String>,
}

impl Default for Defaults {
    fn default() -> Self {
        Self {
            llm: "demo".into(),
            kg: "demo".into(),
            method: MethodId::TOG,
            width: 3,
            depth: 3,
            prune: PruneTool::Llm,
            unified: false,
            speculate: false,
            seed: 0,
            samples: 5,
            pog_pruning: Default::default(),
            fuzzy_width: 80,
            path_summary: true,
            gog_steps: 6,
            generate_samples: 3,
            concurrency: 8,
            prompts: None,
            log_file: None,
            overlay: None,
            author: None,
            query_cache: true,
            query_cache_dir: None,
            theme: None,
        }
    }
}

#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct LlmEntry {
    /// Up to and including `/v1`, e.g. `https://api.openai.com/v1`, `http://127.0.0.1:11434/v1`.
    pub base_url: String,
    pub model: String,
    /// The environment variable holding the API key (never the key itself).
    #[serde(default)]
    pub api_key_env: Option<String>,
    #[serde(default = "default_timeout")]
    pub timeout_secs: u64,
    #[serde(default = "default_retries")]
    pub max_retries: u32,
    /// The first wait before a retry, in milliseconds (default 500); doubled on each retry.
    #[serde(default)]
    pub backoff_ms: Option<u64>,
    /// The longest wait a server's `Retry-After` can impose, in seconds (default 60).
    #[serde(default)]
    pub max_retry_after_secs: Option<u64>,
    /// `max_tokens` or `max_completion_tokens` (OpenAI's reasoning models); unset: learnt from
    /// the server's refusal.
    #[serde(default)]
    pub token_limit_param: Option<crate::llm::openai::TokenLimitParam>,
    /// Whether to send a temperature (OpenAI's reasoning models take only their default); unset:
    /// learnt from the server's refusal.
    #[serde(default)]
    pub send_temperature: Option<bool>,
    /// Whether the model reasons before it replies (its budget is then `reasoning_max_tokens`);
    /// unset: from the first reply that shows reasoning.
    #[serde(default)]
    pub reasoning: Option<bool>,
    #[serde(default)]
    pub reasoning_max_tokens: Option<u32>,
    /// Replies as JSON of a schema per prompt: `auto` (the endpoint's `response_format` as
    /// `json_schema`, else `json_object` with a schema, else free text), `json_schema`,
    /// `json_object` or `off` (free text, as the papers).
    #[serde(default)]
    pub structured: crate::llm::openai::StructuredMode,
    /// The largest reply read, in KB (default 1024); a larger one is an error.
    #[serde(default)]
    pub max_reply_kb: Option<usize>,
}

fn default_timeout() -> u64 {
    120
}
fn default_retries() -> u32 {
    3
}

#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct KgEntry {
    /// An N-Triples (`.nt`) or tab-separated triples file…
    #[serde(default)]
    pub path: Option<PathBuf>,
    /// …or a SPARQL 1.1 query endpoint, e.g. `http://127.0.0.1:8890/sparql`.
    #[serde(default)]
    pub endpoint: Option<String>,
    /// `freebase` (names from `type.object.name`; nameless ids are mediator nodes),
    /// `named-ids` (ids are names, as in PathQuestion and MetaQA; files only), `wikidata`
    /// (Q ids, `wdt:`/`p:`/`ps:`/`pq:` relations named after their properties) or `rdf`
    /// (names from `rdfs:label`).
    #[serde(default = "default_profile")]
    pub profile: String,
    /// Skip malformed lines (counted) instead of stopping at the first (files).
    #[serde(default)]
    pub lenient: bool,
    /// Where bare ids live at the endpoint (default for `freebase`: `http://rdf.freebase.com/ns/`,
    /// for `wikidata`: `http://www.wikidata.org/entity/`).
    #[serde(default)]
    pub namespace: Option<String>,
    /// Prefixes for writing and showing ids, e.g. `{ ex = "http://example.org/" }`: `ex:ada`.
    #[serde(default)]
    pub prefixes: BTreeMap<String, String>,
    /// Predicates that give names, instead of the profile's (full IRIs or prefixed ids).
    #[serde(default)]
    pub label_predicates: Option<Vec<String>>,
    /// Preferred language of names (endpoints).
    #[serde(default = "default_language")]
    pub language: String,
    /// Seconds to wait for one query (endpoints).
    #[serde(default = "default_query_timeout")]
    pub timeout_secs: u64,
    /// Answer a step's lookups with one `VALUES` query (endpoints; false: one query each).
    #[serde(default = "default_true")]
    pub batch: bool,
}

fn default_true() -> bool {
    true
}

fn default_language() -> String {
    "en".into()
}
fn default_query_timeout() -> u64 {
    60
}

/// A method name the built-in registry knows, or an error naming the ones it does.
fn known_method<'de, D: serde::Deserializer<'de>>(d: D) -> Result<MethodId, D::Error> {
    let name = String::deserialize(d)?;
    let id = MethodId::from(name.as_str());
    let registry = crate::engine::Registry::builtin();
    match registry.get(&id) {
        Some(_) => Ok(id),
        None => Err(serde::de::Error::custom(format!("unknown method {name:?} (methods: {})", registry.names()))),
    }
}

fn default_profile() -> String {
    "freebase".into()
}

#[derive(Debug, thiserror::Error)]
pub enum ConfigError {
    #[error("cannot read the config file {path}: {message}")]
    Read { path: String, message: String },
    #[error("{path}: {message}")]
    Parse { path: String, message: String },
    #[error("unknown KG profile {0:?} (known: freebase, named-ids, rdf, wikidata)")]
    Profile(String),
}

impl Config {
    /// The default location: `$XDG_CONFIG_HOME/ongraph/config.toml`.
    pub fn default_path() -> Option<PathBuf> {
        dirs::config_dir().map(|d| d.join("ongraph").join("config.toml"))
    }

    /// Reads `path` if given (it must exist), else the default location if it exists, else the
    /// built-in defaults.
    pub fn load(path: Option<&Path>) -> Result<Self, ConfigError> {
        match path {
            Some(p) => Self::read(p),
            None => match Self::default_path() {
                Some(p) if p.exists() => Self::read(&p),
                _ => Ok(Self::default()),
            },
        }
    }

    fn read(path: &Path) -> Result<Self, ConfigError> {
        let shown = path.display().to_string();
        let text = crate::text_file::read(path)
            .map_err(|e| ConfigError::Read { path: shown.clone(), message: e.to_string() })?;
        Self::parse(&shown, &text)
    }

    pub fn parse(path: &str, text: &str) -> Result<Self, ConfigError> {
        toml::from_str(text).map_err(|e| {
            // toml's message spans several lines with a caret drawing; keep it on one line with
            // the line number first.
            let line = e.span().and_then(|s| text.get(..s.start)).map(|before| before.matches('\n').count() + 1);
            let message = e.message().trim().to_string();
            ConfigError::Parse {
                path: match line {
                    Some(l) => format!("{path}:{l}"),
                    None => path.to_string(),
                },
                message,
            }
        })
    }
}

pub fn profile_named(name: &str) -> Result<KgProfile, ConfigError> {
    match name {
        "freebase" => Ok(KgProfile::freebase()),
        "named-ids" | "named_ids" => Ok(KgProfile::named_ids()),
        "rdf" => Ok(KgProfile::rdf()),
        "wikidata" => Ok(KgProfile::wikidata()),
        other => Err(ConfigError::Profile(other.into())),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn wrong_key_names_its_line() {
        let err = Config::parse("c.toml", "[defaults]\nwidht = 3\n").unwrap_err().to_string();
        assert!(err.starts_with("c.toml:2: unknown field `widht`"), "{err}");
    }

    #[test]
    fn full_config_parses() {
        let c = Config::parse(
            "c.toml",
            r#"
            [defaults]
            llm = "local"
            method = "tog-r"
            prune = "bm25"
            [llm.local]
            base_url = "http://127.0.0.1:11434/v1"
            model = "llama3.1"
            api_key_env = "OLLAMA_KEY"
            [kg.pq]
            path = "3H-kb.txt"
            profile = "named-ids"
            "#,
        )
        .unwrap();
        assert_eq!(c.defaults.method, MethodId::TOG_R);
        assert_eq!(c.llm["local"].timeout_secs, 120);
        assert_eq!(c.kg["pq"].profile, "named-ids");
        assert_eq!(c.kg["pq"].language, "en");
    }
}
