//! `ongraph/config.toml` in the XDG config directory (or `--config FILE`, or `$ONGRAPH_CONFIG`):
//! named LLM endpoints and knowledge graphs, and defaults. Unknown keys are errors, so a typo
//! never silently does nothing.

use crate::kg::KgProfile;
use crate::overlay::team::SharedEntry;
use crate::settings_patch::{SettingsPatch, keys_of};
use serde::de::{DeserializeSeed, Deserializer, Error as _, MapAccess, Visitor};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

#[derive(Clone, Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Config {
    /// The file it was read from (`--config FILE`, or the default location when it exists).
    #[serde(skip)]
    pub file: Option<PathBuf>,
    #[serde(default, deserialize_with = "read_defaults")]
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
    /// Correction sets shared by a team, each a named graph on a SPARQL server: `[shared.NAME]`.
    #[serde(default)]
    pub shared: BTreeMap<String, SharedEntry>,
}

/// `[defaults]`: the engine's settings, under their flags' names in snake case
/// (`max_tokens = 512` is `--max-tokens 512`), and what only the config sets. (`Serialize`
/// only lists the keys.)
#[derive(Clone, Debug, Deserialize, Serialize)]
#[serde(deny_unknown_fields, default)]
pub struct Defaults {
    /// The engine's settings (read by `read_defaults`, not by this derive).
    #[serde(skip)]
    pub settings: SettingsPatch,
    /// `demo`, a name from `[llm.*]`, or `scripted:FILE`.
    pub llm: String,
    /// `demo`, a name from `[kg.*]`, or a file path.
    pub kg: String,
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
    /// The `[shared.NAME]` set corrections are shared through (`--shared` / `--no-shared`).
    pub shared: Option<String>,
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
            settings: SettingsPatch::default(),
            llm: "demo".into(),
            kg: "demo".into(),
            concurrency: 8,
            prompts: None,
            log_file: None,
            overlay: None,
            author: None,
            shared: None,
            query_cache: true,
            query_cache_dir: None,
            theme: None,
        }
    }
}

/// Reads `[defaults]` key by key: the engine's settings into the patch, the rest into
/// [`Defaults`]. Not with serde's `flatten`, which would take unknown keys silently and report
/// a bad value without its line: here both are errors at their key's or value's line.
fn read_defaults<'de, D: Deserializer<'de>>(d: D) -> Result<Defaults, D::Error> {
    let keys = DefaultsKeys { engine: SettingsPatch::keys(), own: keys_of(&Defaults::default()) };
    let (engine, own) = d.deserialize_map(DefaultsVisitor(&keys))?;
    // Every value was checked as it was read; these cannot fail but for a bug.
    let mut defaults = own.try_into::<Defaults>().map_err(|e| D::Error::custom(e.message()))?;
    defaults.settings = engine.try_into::<SettingsPatch>().map_err(|e| D::Error::custom(e.message()))?;
    Ok(defaults)
}

struct DefaultsKeys {
    engine: Vec<String>,
    own: Vec<String>,
}

impl DefaultsKeys {
    fn is_engine(&self, key: &str) -> bool {
        self.engine.iter().any(|k| k == key)
    }
}

/// `[defaults]` split into the engine's keys and the config's own.
struct DefaultsVisitor<'a>(&'a DefaultsKeys);

impl<'de> Visitor<'de> for DefaultsVisitor<'_> {
    type Value = (toml::Table, toml::Table);

    fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("a table of defaults")
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Self::Value, A::Error> {
        let (mut engine, mut own) = (toml::Table::new(), toml::Table::new());
        while let Some(key) = map.next_key_seed(KnownKey(self.0))? {
            let value = map.next_value_seed(CheckedValue { keys: self.0, key: &key })?;
            let table = if self.0.is_engine(&key) { &mut engine } else { &mut own };
            table.insert(key, value);
        }
        Ok((engine, own))
    }
}

/// A key of `[defaults]`, or an error (at the key's line) saying which keys there are.
struct KnownKey<'a>(&'a DefaultsKeys);

impl<'de> DeserializeSeed<'de> for KnownKey<'_> {
    type Value = String;

    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<String, D::Error> {
        let key = String::deserialize(d)?;
        let known = || self.0.engine.iter().chain(&self.0.own);
        if known().any(|k| *k == key) {
            return Ok(key);
        }
        // A typo (one edit in four characters, a swap counting as one) is likely the near key.
        let near = |k: &&String| strsim::damerau_levenshtein(k, &key) <= (key.len() / 4).max(1);
        let message = match known().find(near) {
            Some(close) => format!("unknown field `{key}`, did you mean `{close}`?"),
            None => {
                let all: Vec<String> = known().map(|k| format!("`{k}`")).collect();
                format!("unknown field `{key}`, expected one of {}", all.join(", "))
            }
        };
        Err(D::Error::custom(message))
    }
}

/// The value of `key`, checked by reading it alone into its type, so that a bad one is an
/// error at its own line.
struct CheckedValue<'a> {
    keys: &'a DefaultsKeys,
    key: &'a str,
}

impl<'de> DeserializeSeed<'de> for CheckedValue<'_> {
    type Value = toml::Value;

    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<toml::Value, D::Error> {
        let limit = crate::settings_patch::limit(self.key);
        let too_large = |max| D::Error::custom(format!("`{}` is at most {max}", self.key));
        // A count past TOML's integer range: its limit says more than "u64 value was too large".
        let value = toml::Value::deserialize(d).map_err(|e| match limit {
            Some(max) if e.to_string().contains("too large") => too_large(max),
            _ => e,
        })?;
        let alone = toml::Table::from_iter([(self.key.to_string(), value.clone())]);
        if self.keys.is_engine(self.key) {
            let patch = alone.try_into::<SettingsPatch>().map_err(|e| D::Error::custom(e.message()))?;
            // A value no run can use (a width of 0, a NaN temperature) is this line's error,
            // not a flag the user never typed.
            if let Err(e) = crate::settings_patch::build(&[&patch]) {
                return Err(D::Error::custom(format!("`{}` {}", self.key, e.as_config_value())));
            }
        } else {
            alone.try_into::<Defaults>().map(drop).map_err(|e| D::Error::custom(e.message()))?;
        }
        // A count's limits, as its flag has (see `crate::settings_patch::limit`).
        if let Some(why) = value
            .as_integer()
            .and_then(|n| u64::try_from(n).ok())
            .and_then(|n| crate::settings_patch::out_of_range(self.key, n))
        {
            return Err(D::Error::custom(format!("`{}` {why}", self.key)));
        }
        Ok(value)
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
    /// Whether to send each request a seed drawn from its content, so the same request gets the
    /// same reply (reproducible runs; a re-ask differs only where its prompts do); unset: yes
    /// until the server refuses it.
    #[serde(default)]
    pub send_seed: Option<bool>,
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
    /// (names from `rdfs:label`), or `auto` (files: `named-ids` when the file has no name
    /// triples, else `freebase`). Default: `auto` for files, `freebase` for endpoints;
    /// `--kg-profile` wins over it.
    #[serde(default, deserialize_with = "known_profile")]
    pub profile: Option<String>,
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
    /// Seconds one query may take, its retries included (endpoints).
    #[serde(default = "default_query_timeout")]
    pub timeout_secs: u64,
    /// The largest reply read, in MB (endpoints; default 32): a larger one is an error.
    #[serde(default)]
    pub max_reply_mb: Option<usize>,
    /// The most solutions a reply may hold (endpoints; default 100,000): more is an error.
    #[serde(default)]
    pub max_bindings: Option<usize>,
    /// Answer a step's lookups with one `VALUES` query (endpoints; false: one query each).
    #[serde(default = "default_true")]
    pub batch: bool,
    /// The named graph the KG is in (endpoints): every KG query reads it alone (`FROM <graph>`).
    /// Without it the server's default graph is read, which on Virtuoso is the union of all its
    /// graphs (a team's corrections graph, other datasets).
    #[serde(default)]
    pub graph: Option<String>,
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

/// A profile's name, checked as the config is read (so a typo is said with its line).
fn known_profile<'de, D: serde::Deserializer<'de>>(deserializer: D) -> Result<Option<String>, D::Error> {
    let name = String::deserialize(deserializer)?;
    if name != "auto" {
        profile_named(&name).map_err(serde::de::Error::custom)?;
    }
    Ok(Some(name))
}

#[derive(Debug, thiserror::Error)]
pub enum ConfigError {
    #[error("cannot read the config file {path}: {message}")]
    Read { path: String, message: String },
    #[error("{path}: {message}")]
    Parse { path: String, message: String },
    #[error("unknown KG profile {0:?} (known: auto, freebase, named-ids, rdf, wikidata)")]
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
        Ok(Self { file: Some(path.to_path_buf()), ..Self::parse(&shown, &text)? })
    }

    pub fn parse(path: &str, text: &str) -> Result<Self, ConfigError> {
        let config: Self = toml::from_str(text).map_err(|e| {
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
        })?;
        if let Err(message) = config.check_endpoints() {
            return Err(ConfigError::Parse { path: path.to_string(), message });
        }
        if let Some(name) = &config.defaults.shared
            && !config.shared.contains_key(name)
        {
            let known: Vec<&str> = config.shared.keys().map(String::as_str).collect();
            let known = if known.is_empty() { "there is none".to_string() } else { known.join(", ") };
            return Err(ConfigError::Parse {
                path: path.to_string(),
                message: format!("[defaults] shared = {name:?} names no [shared.{name}] (configured: {known})"),
            });
        }
        Ok(config)
    }
}

impl Config {
    /// Each `[llm.*]`, `[embedding]`, `[kg.*]` and `[shared.*]` endpoint is an absolute http(s) URL, and its
    /// waits and sizes are within reason: said at once, naming the entry, rather than after
    /// the retries of a first request (`file:///…`), or as a hang (`backoff_ms` of 584 million
    /// years). The URL itself is not shown: it may hold a secret.
    fn check_endpoints(&self) -> Result<(), String> {
        let llms = self
            .llm
            .iter()
            .map(|(n, e)| (format!("[llm.{n}]"), e))
            .chain(self.embedding.iter().map(|e| ("[embedding]".to_string(), e)));
        for (entry, llm) in llms {
            check_url(&entry, "base_url", &llm.base_url)?;
            let counts = [
                ("timeout_secs", Some(llm.timeout_secs), 86_400),
                ("max_retries", Some(u64::from(llm.max_retries)), 100),
                ("backoff_ms", llm.backoff_ms, 600_000),
                ("max_retry_after_secs", llm.max_retry_after_secs, 86_400),
                ("max_reply_kb", llm.max_reply_kb.map(|kb| kb as u64), 1_048_576),
                ("reasoning_max_tokens", llm.reasoning_max_tokens.map(u64::from), 1_000_000),
            ];
            for (key, value, max) in counts {
                if value.is_some_and(|v| v > max) {
                    return Err(format!("{entry} {key} is at most {max}"));
                }
            }
            if llm.max_reply_kb == Some(0) {
                return Err(format!("{entry} max_reply_kb is at least 1"));
            }
            if llm.api_key_env.as_deref().is_some_and(|v| v.trim().is_empty()) {
                return Err(format!(
                    "{entry} api_key_env is empty: name the variable holding the key, or leave it out"
                ));
            }
        }
        for (name, kg) in &self.kg {
            let entry = format!("[kg.{name}]");
            if let Some(endpoint) = &kg.endpoint {
                check_url(&entry, "endpoint", endpoint)?;
            }
            if kg.timeout_secs > 86_400 {
                return Err(format!("{entry} timeout_secs is at most 86400"));
            }
            if kg.max_reply_mb.is_some_and(|mb| mb > 4_096) {
                return Err(format!("{entry} max_reply_mb is at most 4096"));
            }
        }
        // A path given empty is the current directory (the store's files written wherever the
        // command runs); a blank author signs corrections with nobody's name.
        let paths = [
            ("overlay", &self.defaults.overlay),
            ("query_cache_dir", &self.defaults.query_cache_dir),
            ("log_file", &self.defaults.log_file),
            ("prompts", &self.defaults.prompts),
        ];
        if let Some((key, _)) = paths.iter().find(|(_, p)| p.as_ref().is_some_and(|p| p.as_os_str().is_empty())) {
            return Err(format!("[defaults] {key} is empty: give a path, or leave it out for the default"));
        }
        if self.defaults.author.as_deref().is_some_and(|a| a.trim().is_empty()) {
            return Err(
                "[defaults] author is blank: give the name your corrections are signed with, or leave it out for $USER"
                    .into(),
            );
        }
        for (name, shared) in &self.shared {
            let entry = format!("[shared.{name}]");
            check_url(&entry, "query_endpoint", &shared.query_endpoint)?;
            check_url(&entry, "update_endpoint", &shared.update_endpoint)?;
            match shared.timeout_secs {
                0 => return Err(format!("{entry} timeout_secs is at least 1")),
                t if t > 86_400 => return Err(format!("{entry} timeout_secs is at most 86400")),
                _ => {}
            }
        }
        Ok(())
    }
}

/// `url` is an absolute http:// or https:// URL with a host.
fn check_url(entry: &str, key: &str, url: &str) -> Result<(), String> {
    match reqwest::Url::parse(url) {
        Ok(u) if matches!(u.scheme(), "http" | "https") && u.host().is_some() => Ok(()),
        Ok(u) => Err(format!("{entry} {key} must be an http:// or https:// URL, not {}:", u.scheme())),
        Err(e) => Err(format!("{entry} {key} is not an absolute http(s) URL ({e})")),
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
    use crate::overlay::team::Apply;

    #[test]
    fn wrong_key_names_its_line() {
        let err = Config::parse("c.toml", "[defaults]\nwidht = 3\n").unwrap_err().to_string();
        assert!(err.starts_with("c.toml:2: unknown field `widht`"), "{err}");
    }

    #[test]
    fn an_unknown_key_is_named_with_the_keys_there_are() {
        let err = Config::parse("c.toml", "[defaults]\nllm = \"demo\"\n\nbeam = 3\n").unwrap_err().to_string();
        assert!(err.starts_with("c.toml:4: unknown field `beam`, expected one of `method`, `width`"), "{err}");
        assert!(err.contains("`max_tokens`") && err.contains("`rollbacks`") && err.contains("`theme`"), "{err}");
        let err = Config::parse("c.toml", "[defaults.pog]\nfuzzy_width = 3\n").unwrap_err().to_string();
        assert!(err.starts_with("c.toml:1: unknown field `pog`, expected one of"), "{err}");
    }

    #[test]
    fn a_bad_value_names_its_line() {
        let err = Config::parse("c.toml", "[defaults]\nkg = \"demo\"\nmax_tokens = \"many\"\n").unwrap_err();
        assert_eq!(err.to_string(), "c.toml:3: invalid type: string \"many\", expected u32");
        let err = Config::parse("c.toml", "[defaults]\nconcurrency = -1\n").unwrap_err();
        assert_eq!(err.to_string(), "c.toml:2: invalid value: integer `-1`, expected usize");
        let err = Config::parse("c.toml", "[defaults]\nmethod = \"tot\"\n").unwrap_err().to_string();
        assert!(err.starts_with("c.toml:2: unknown method \"tot\" (methods: tog, tog-r,"), "{err}");
    }

    #[test]
    fn a_value_no_run_can_use_names_its_line_not_a_flag() {
        let cases = [
            ("width = 0", "`width` is at least 1"),
            ("gog_steps = 0", "`gog_steps` is at least 1"),
            ("sample_size = 0", "`sample_size` is at least 1"),
            ("max_tokens = 0", "`max_tokens` is at least 1"),
            ("prune_temperature = nan", "`prune_temperature` is a number of at least 0"),
            ("reason_temperature = -1.0", "`reason_temperature` is a number of at least 0"),
        ];
        for (line, why) in cases {
            let err = Config::parse("c.toml", &format!("[defaults]\nkg = \"demo\"\n{line}\n")).unwrap_err();
            assert_eq!(err.to_string(), format!("c.toml:3: {why}"), "{line}");
        }
    }

    #[test]
    fn a_shared_entry_is_checked_as_it_is_read() {
        let entry = |extra: &str| {
            format!(
                "[shared.t]\nquery_endpoint = \"http://127.0.0.1:1/query\"\nupdate_endpoint = \"http://127.0.0.1:1/update\"\ngraph = \"urn:g\"\n{extra}"
            )
        };
        let err = Config::parse("c.toml", &entry("timeout_secs = 18446744073709551615\n")).unwrap_err().to_string();
        assert!(err.contains("[shared.t] timeout_secs is at most 86400"), "{err}");
        let err = Config::parse("c.toml", &entry("timeout_secs = 0\n")).unwrap_err().to_string();
        assert!(err.contains("[shared.t] timeout_secs is at least 1"), "{err}");
        let text = entry("").replace("http://127.0.0.1:1/update", "file:///tmp/update");
        let err = Config::parse("c.toml", &text).unwrap_err().to_string();
        assert!(err.contains("[shared.t] update_endpoint must be an http:// or https:// URL, not file:"), "{err}");
        let text = entry("").replace("http://127.0.0.1:1/query", "query");
        let err = Config::parse("c.toml", &text).unwrap_err().to_string();
        assert!(err.contains("[shared.t] query_endpoint is not an absolute http(s) URL"), "{err}");
        assert!(Config::parse("c.toml", &entry("timeout_secs = 30\n")).is_ok());
    }

    #[test]
    fn empty_paths_blank_authors_and_empty_settings_are_refused() {
        for (text, said) in [
            ("[defaults]\noverlay = \"\"\n", "[defaults] overlay is empty"),
            ("[defaults]\nquery_cache_dir = \"\"\n", "[defaults] query_cache_dir is empty"),
            ("[defaults]\nauthor = \"   \"\n", "[defaults] author is blank"),
            (
                "[llm.x]\nbase_url = \"http://127.0.0.1:1/v1\"\nmodel = \"m\"\napi_key_env = \"\"\n",
                "[llm.x] api_key_env is empty",
            ),
            (
                "[llm.x]\nbase_url = \"http://127.0.0.1:1/v1\"\nmodel = \"m\"\nmax_reply_kb = 0\n",
                "[llm.x] max_reply_kb is at least 1",
            ),
            (
                "[kg.k]\nendpoint = \"http://127.0.0.1:1/q\"\nmax_reply_mb = 100000\n",
                "[kg.k] max_reply_mb is at most 4096",
            ),
        ] {
            let err = Config::parse("c.toml", text).map(drop).unwrap_err().to_string();
            assert!(err.starts_with("c.toml: ") && err.contains(said), "{text}: {err}");
        }
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
            concurrency = 2
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
        assert_eq!(c.defaults.settings.method, Some(crate::engine::MethodId::TOG_R));
        assert_eq!(c.defaults.settings.prune, Some(crate::engine::PruneTool::Bm25));
        assert_eq!((c.defaults.llm.as_str(), c.defaults.kg.as_str(), c.defaults.concurrency), ("local", "demo", 2));
        assert_eq!(c.llm["local"].timeout_secs, 120);
        assert_eq!(c.kg["pq"].profile.as_deref(), Some("named-ids"));
        assert_eq!(c.kg["pq"].language, "en");
    }

    #[test]
    fn a_shared_set_parses_and_the_default_must_name_one() {
        let text = r#"
            [defaults]
            shared = "team"
            [shared.team]
            query_endpoint = "http://127.0.0.1:7878/query"
            update_endpoint = "http://127.0.0.1:7878/update"
            graph = "http://example.org/ongraph/corrections/demo"
            credentials_env = "ONGRAPH_TEAM_TOKEN"
            apply = "approved"
            "#;
        let c = Config::parse("c.toml", text).unwrap();
        let team = &c.shared["team"];
        assert_eq!((team.apply, team.timeout_secs), (Apply::Approved, 10));
        assert_eq!(team.credentials_env.as_deref(), Some("ONGRAPH_TEAM_TOKEN"));
        let err = Config::parse("c.toml", &text.replace("\"approved\"", "\"some\"")).unwrap_err().to_string();
        assert!(err.contains("unknown variant `some`, expected `all` or `approved`"), "{err}");
        let err = Config::parse("c.toml", &text.replace("shared = \"team\"", "shared = \"lab\"")).unwrap_err();
        assert_eq!(err.to_string(), "c.toml: [defaults] shared = \"lab\" names no [shared.lab] (configured: team)");
        let err = Config::parse("c.toml", &text.replace("graph =", "grahp =")).unwrap_err().to_string();
        assert!(err.starts_with("c.toml:7: unknown field `grahp`"), "{err}");
    }
}
