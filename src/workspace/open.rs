//! Opening what a command works with, as the user selected it: the knowledge graph (a file,
//! the demo, a SPARQL endpoint), the language model and the embedding endpoint, and a driver
//! over the KG seen through its corrections.

use super::Selection;
use super::live::with_overlay;
use crate::config::{Config, profile_named};
use crate::engine::Registry;
use crate::kg::KnowledgeGraph;
use crate::kg::load::{LoadReport, demo_graph, load_file};
use crate::llm::openai::{OpenAiClient, OpenAiConfig};
use crate::llm::scripted::ScriptedModel;
use crate::llm::{Embedder, LanguageModel};
use anyhow::{Context as _, Result, bail};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

/// The query cache's location: the config's, else `$XDG_CACHE_HOME/ongraph/query-cache`.
pub fn cache_path(config: &Config) -> PathBuf {
    config
        .defaults
        .query_cache_dir
        .clone()
        .unwrap_or_else(|| dirs::cache_dir().unwrap_or_else(std::env::temp_dir).join("ongraph").join("query-cache"))
}

/// What a command that runs a method works with.
pub struct Opened {
    /// The KG as the engine sees it (through its corrections and scenario).
    pub kg: Arc<dyn KnowledgeGraph>,
    pub report: LoadReport,
    /// Active corrections applied.
    pub corrections: usize,
    pub llm: Arc<dyn LanguageModel>,
    pub driver: crate::driver::Driver,
}

/// The KG (through its corrections), the model and a driver for them, as `--kg`/`--llm` say.
pub fn open_driver(selection: &Selection, config: &Config, with_corrections: bool) -> Result<Opened> {
    let (base, report) = open_kg(selection, config)?;
    let (kg, corrections) = with_overlay(base, config, selection, with_corrections)?;
    let llm = open_llm(selection, config)?;
    let mut driver = crate::driver::Driver::new(kg.clone(), llm.clone())
        .with_concurrency(selection.concurrency.unwrap_or(config.defaults.concurrency));
    if let Some(embedder) = open_embedder(config)? {
        driver = driver.with_embedder(embedder);
    }
    Ok(Opened { kg, report, corrections, llm, driver })
}

/// Opens the knowledge graph named by `--kg` (or the config's default).
pub fn open_kg(selection: &Selection, config: &Config) -> Result<(Arc<dyn KnowledgeGraph>, LoadReport)> {
    let name = selection.kg.clone().unwrap_or_else(|| config.defaults.kg.clone());
    if name == "demo" {
        let g = demo_graph();
        let report = LoadReport { triples: g.triple_count(), ..LoadReport::default() };
        return Ok((Arc::new(g), report));
    }
    if name.starts_with("http://") || name.starts_with("https://") {
        let profile = selection.kg_profile.as_deref().filter(|p| *p != "auto").unwrap_or("rdf");
        let endpoint = Endpoint {
            namespace: None,
            prefixes: Default::default(),
            label_predicates: None,
            language: "en",
            timeout_secs: 60,
            batch: true,
            graph: None,
            max_reply_mb: None,
            max_bindings: None,
        };
        return open_endpoint(&name, &name, profile, endpoint, query_cache(selection, config));
    }
    let (path, profile, lenient) = match config.kg.get(&name) {
        Some(entry) => match (&entry.path, &entry.endpoint) {
            (_, Some(endpoint)) => {
                let settings = Endpoint {
                    namespace: entry.namespace.clone(),
                    prefixes: entry.prefixes.clone(),
                    label_predicates: entry.label_predicates.clone(),
                    language: &entry.language,
                    timeout_secs: entry.timeout_secs,
                    batch: entry.batch,
                    graph: entry.graph.clone(),
                    max_reply_mb: entry.max_reply_mb,
                    max_bindings: entry.max_bindings,
                };
                // The flag, else the entry's (auto: rdf, as for an endpoint's URL), else
                // Freebase's (what ToG's servers hold).
                let profile = match selection.kg_profile.as_deref().or(entry.profile.as_deref()) {
                    Some("auto") => "rdf",
                    Some(profile) => profile,
                    None => "freebase",
                };
                return open_endpoint(&name, endpoint, profile, settings, query_cache(selection, config));
            }
            (Some(path), None) => {
                let profile =
                    selection.kg_profile.clone().or_else(|| entry.profile.clone()).unwrap_or_else(|| "auto".into());
                (path.clone(), profile, entry.lenient || selection.lenient)
            }
            (None, None) => bail!("[kg.{name}] needs a `path` (a triples file) or an `endpoint` (SPARQL)"),
        },
        None => {
            let path = PathBuf::from(&name);
            if !path.exists() {
                let known: Vec<&str> = std::iter::once("demo").chain(config.kg.keys().map(String::as_str)).collect();
                let from = named_by(selection.kg.as_deref(), "ONGRAPH_KG", "kg", config);
                bail!("no knowledge graph {name:?}{from}: not a file, and not one of: {}", known.join(", "));
            }
            (path, selection.kg_profile.clone().unwrap_or_else(|| "auto".into()), selection.lenient)
        }
    };
    load_kg(&path, &profile, lenient)
}

/// The query cache, unless switched off.
fn query_cache(selection: &Selection, config: &Config) -> Option<crate::kg::sparql::cache::QueryCache> {
    if !config.defaults.query_cache || selection.no_cache {
        return None;
    }
    crate::kg::sparql::cache::QueryCache::open(&cache_path(config))
        .inspect_err(|e| tracing::warn!("{e}; running without the query cache"))
        .ok()
}

/// How to talk to an endpoint (from `[kg.NAME]`).
struct Endpoint<'a> {
    namespace: Option<String>,
    prefixes: std::collections::BTreeMap<String, String>,
    label_predicates: Option<Vec<String>>,
    language: &'a str,
    timeout_secs: u64,
    batch: bool,
    graph: Option<String>,
    max_reply_mb: Option<usize>,
    max_bindings: Option<usize>,
}

/// A SPARQL endpoint as a knowledge graph.
fn open_endpoint(
    name: &str,
    endpoint: &str,
    profile: &str,
    settings: Endpoint<'_>,
    cache: Option<crate::kg::sparql::cache::QueryCache>,
) -> Result<(Arc<dyn KnowledgeGraph>, LoadReport)> {
    use crate::kg::sparql::Namespaces;
    use crate::kg::sparql::SparqlKg;
    use crate::kg::sparql::client::{SparqlClient, SparqlConfig};
    let mut kg_profile = profile_named(profile)?;
    if let Some(predicates) = settings.label_predicates {
        kg_profile.label_predicates = predicates;
    }
    let mut names = match profile {
        "freebase" => Namespaces::freebase(),
        "wikidata" => Namespaces::wikidata(),
        _ => Namespaces::default(),
    };
    if settings.namespace.is_some() {
        names.bare = settings.namespace;
    }
    names.prefixes.extend(settings.prefixes);
    if settings.timeout_secs == 0 {
        bail!("[kg.{name}] timeout_secs must be at least 1");
    }
    let mut config = SparqlConfig::new(endpoint);
    config.timeout = Duration::from_secs(settings.timeout_secs);
    if let Some(mb) = settings.max_reply_mb {
        if mb == 0 {
            bail!("[kg.{name}] max_reply_mb must be at least 1");
        }
        config.max_reply_bytes = mb.saturating_mul(1 << 20);
    }
    if let Some(n) = settings.max_bindings {
        if n == 0 {
            bail!("[kg.{name}] max_bindings must be at least 1");
        }
        config.max_bindings = n;
    }
    // A URL given as --kg has no entry of its own to raise the limits in.
    config.limits_set_in =
        Some(if name == endpoint { "a [kg.NAME] entry for this endpoint".to_string() } else { format!("[kg.{name}]") });
    let client = SparqlClient::new(config)?.with_cache(cache);
    let mut kg = SparqlKg::new(name, client, kg_profile, names, settings.language)?.with_batching(settings.batch);
    if let Some(graph) = &settings.graph {
        kg = kg.in_graph(graph).map_err(|e| anyhow::anyhow!("[kg.{name}] graph: {e}"))?;
    }
    Ok((Arc::new(kg), LoadReport::default()))
}

fn load_kg(path: &Path, profile: &str, lenient: bool) -> Result<(Arc<dyn KnowledgeGraph>, LoadReport)> {
    let auto = profile == "auto";
    let chosen = if auto { crate::kg::KgProfile::freebase() } else { profile_named(profile)? };
    let (graph, report) = load_file(path, chosen, lenient)?;
    let graph = if auto && !graph.has_labels() { graph.with_profile(crate::kg::KgProfile::named_ids()) } else { graph };
    tracing::info!(path = %path.display(), triples = report.triples, skipped = report.skipped, "loaded KG");
    Ok((Arc::new(graph), report))
}

/// The endpoint `--llm` names (or the config's default) as this command asks it: its structured
/// mode is `--structured`, else the entry's. The one place the engine's settings and the client
/// both take it from; `None` for a model that is not an endpoint (demo, scripted, simulations).
pub fn endpoint(selection: &Selection, config: &Config) -> Option<crate::config::LlmEntry> {
    let name = selection.llm.clone().unwrap_or_else(|| config.defaults.llm.clone());
    let mut entry = config.llm.get(&name)?.clone();
    entry.structured = selection.structured.unwrap_or(entry.structured);
    Some(entry)
}

/// The model a kept run was asked of, by how it was described (`MODEL at URL`, `scripted model
/// (FILE)`): `--llm` when given; else the config's endpoint of that model at that URL, or that
/// script; else the config's default model.
pub fn open_llm_of_run(description: &str, selection: &Selection, config: &Config) -> Result<Arc<dyn LanguageModel>> {
    if selection.llm.is_none() {
        let endpoint = config.llm.iter().find(|(_, e)| format!("{} at {}", e.model, e.base_url) == description);
        let script = description
            .strip_prefix("scripted model (")
            .and_then(|s| s.strip_suffix(')'))
            .filter(|file| Path::new(file).is_file())
            .map(|file| format!("scripted:{file}"));
        if let Some(name) = endpoint.map(|(name, _)| name.clone()).or(script) {
            return open_llm(&Selection { llm: Some(name), ..selection.clone() }, config);
        }
    }
    open_llm(selection, config)
}

/// Opens the language model named by `--llm` (or the config's default).
pub fn open_llm(selection: &Selection, config: &Config) -> Result<Arc<dyn LanguageModel>> {
    let name = selection.llm.clone().unwrap_or_else(|| config.defaults.llm.clone());
    if name == "demo" {
        let demo = ScriptedModel::demo()?.saying_steps_as(|step| Registry::program().step_in_words(step));
        // Off its recording, the demo says where to connect a model: the config this command
        // reads (--config FILE, else this machine's), and the endpoints it names already.
        let configured: Vec<&str> = config.llm.keys().map(String::as_str).collect();
        return Ok(Arc::new(match config.file.clone().or_else(Config::default_path) {
            Some(file) => demo.advising_config(&file, &configured),
            None => demo,
        }));
    }
    if let Some(file) = name.strip_prefix("scripted:") {
        return Ok(Arc::new(ScriptedModel::from_file(Path::new(file))?));
    }
    let Some(entry) = endpoint(selection, config) else {
        let known: Vec<&str> =
            ["demo", "scripted:FILE"].into_iter().chain(config.llm.keys().map(String::as_str)).collect();
        let from = named_by(selection.llm.as_deref(), "ONGRAPH_LLM", "llm", config);
        let config_file = config.file.clone().or_else(Config::default_path);
        let add = match config_file {
            Some(file) => format!(
                "; an [llm.{name}] entry in {} defines it (README: \"Pointing it at a real model\")",
                file.display()
            ),
            None => String::new(),
        };
        bail!("no LLM named {name:?}{from} (known: {}){add}", known.join(", "));
    };
    Ok(Arc::new(openai_client(&entry).with_context(|| format!("LLM {name:?}"))?))
}

pub fn open_embedder(config: &Config) -> Result<Option<Arc<dyn Embedder>>> {
    match &config.embedding {
        Some(entry) => Ok(Some(Arc::new(openai_client(entry).context("embedding endpoint")?))),
        None => Ok(None),
    }
}

fn openai_client(entry: &crate::config::LlmEntry) -> Result<OpenAiClient> {
    if entry.timeout_secs == 0 {
        bail!("timeout_secs must be at least 1");
    }
    // A key in the URL would be shown by every message and log line that names the endpoint
    // (and the path is appended after a query string): refused, said without the URL.
    if let Ok(url) = reqwest::Url::parse(&entry.base_url)
        && (!url.username().is_empty() || url.password().is_some() || url.query().is_some() || url.fragment().is_some())
    {
        bail!(
            "base_url has credentials or a query string in it: write it as scheme://host:port/v1 and name the variable holding the key in api_key_env"
        );
    }
    let mut c = OpenAiConfig::new(&entry.base_url, &entry.model);
    c.api_key_env = entry.api_key_env.clone();
    c.timeout = Duration::from_secs(entry.timeout_secs);
    c.max_retries = entry.max_retries;
    if let Some(ms) = entry.backoff_ms {
        c.backoff = Duration::from_millis(ms);
    }
    if let Some(secs) = entry.max_retry_after_secs {
        c.max_retry_after = Duration::from_secs(secs);
    }
    c.token_limit_param = entry.token_limit_param;
    c.send_temperature = entry.send_temperature;
    c.send_seed = entry.send_seed;
    c.reasoning = entry.reasoning;
    if let Some(budget) = entry.reasoning_max_tokens {
        c.reasoning_max_tokens = budget;
    }
    c.structured = entry.structured;
    c.memory = crate::llm::endpoint_memory::EndpointMemory::default_path()
        .map(crate::llm::endpoint_memory::EndpointMemory::at);
    if let Some(kb) = entry.max_reply_kb {
        c.max_reply_bytes = kb.max(1).saturating_mul(1024);
    }
    Ok(OpenAiClient::new(c)?)
}

/// Where a name the user did not type on this command line came from, as the end of a
/// message's subject (` (from ONGRAPH_KG)`, ` (from [defaults] kg in FILE)`); empty for a flag.
fn named_by(given: Option<&str>, variable: &str, key: &str, config: &Config) -> String {
    match given {
        Some(name) if std::env::var(variable).is_ok_and(|v| v == name) && !std::env::args().any(|a| a == name) => {
            format!(" (from {variable})")
        }
        Some(_) => String::new(),
        None => match &config.file {
            Some(file) => format!(" (from [defaults] {key} in {})", file.display()),
            None => format!(" (from [defaults] {key})"),
        },
    }
}
