//! The `ongraph` command line: one client of the engine (the TUI is another).

mod ask;
mod entry;
mod eval;
mod fix;
mod kg;
pub mod overlay;
mod printable;
mod scope;
mod team_watch;
mod tui;

pub use entry::main;
/// The terminal UI's corrections over the sled store (for tests that drive the UI over a real
/// store).
pub use tui::StoreCorrections;

use crate::config::{Config, profile_named};
use crate::kg::KnowledgeGraph;
use crate::kg::load::{LoadReport, demo_graph, load_file};
use crate::llm::openai::{OpenAiClient, OpenAiConfig, StructuredMode};
use crate::llm::scripted::ScriptedModel;
use crate::llm::{Embedder, LanguageModel};
use anyhow::{Context as _, Result, bail};
use clap::{Args, Parser, Subcommand};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

/// Prints `e` and its causes as one `error:` line on stderr: line breaks from a server's error
/// page become spaces and control characters from data are shown as text (`␛` for ESC).
pub fn print_error(e: &anyhow::Error) {
    use std::io::Write as _;
    let text = format!("{e:#}");
    let line = text.split(['\n', '\r']).map(str::trim).filter(|l| !l.is_empty()).collect::<Vec<_>>().join(" ");
    let mut err = printable::Printable::new(std::io::stderr().lock());
    // Nothing more can be done when stderr itself is gone.
    let _ = writeln!(err, "error: {line}");
}

#[derive(Debug, Parser)]
#[command(name = "ongraph", version, about = "Watch, steer and correct an LLM reasoning over a knowledge graph")]
pub struct Cli {
    /// Config file (default: $XDG_CONFIG_HOME/ongraph/config.toml, if it exists).
    #[arg(long, global = true, env = "ONGRAPH_CONFIG")]
    pub config: Option<PathBuf>,
    /// Log file (default: $XDG_STATE_HOME/ongraph/ongraph.log). Logs never go to the terminal.
    #[arg(long, global = true, env = "ONGRAPH_LOG")]
    pub log: Option<PathBuf>,
    /// Without a command, the terminal UI opens.
    #[command(subcommand)]
    pub command: Option<Command>,
}

#[derive(Debug, Subcommand)]
pub enum Command {
    /// Watch and steer the reasoning in the terminal UI (the default).
    Tui(TuiArgs),
    /// Answer one question and print the answer, its paths and what it cost.
    Ask(AskArgs),
    /// Look at the knowledge graph as the engine sees it.
    Kg(kg::KgArgs),
    /// Correct the knowledge graph: retract, assert, relabel, list, undo, export, import.
    Fix(fix::FixArgs),
    /// Replay a saved session in the terminal UI: offline, from the recording alone, or
    /// `--live` to branch off it with the KG and model configured.
    Replay(tui::ReplayArgs),
    /// Run a method over a dataset: per-question records, accuracy (strict and the papers'
    /// lenient match) and cost; `eval compare` and `eval summary` read runs.
    Eval(eval::EvalArgs),
    /// The SPARQL query cache.
    Cache {
        #[command(subcommand)]
        action: CacheAction,
    },
}

#[derive(Debug, Subcommand)]
pub enum CacheAction {
    /// Remove every cached result.
    Clear,
    /// How many results are cached, and where.
    Stats,
}

/// The query cache's location: the config's, else `$XDG_CACHE_HOME/ongraph/query-cache`.
pub fn cache_path(config: &Config) -> PathBuf {
    config
        .defaults
        .query_cache_dir
        .clone()
        .unwrap_or_else(|| dirs::cache_dir().unwrap_or_else(std::env::temp_dir).join("ongraph").join("query-cache"))
}

fn cache_command(action: CacheAction, config: &Config) -> Result<i32> {
    use crate::kg::sparql::cache::{CacheError, QueryCache};
    use std::io::Write as _;
    let path = cache_path(config);
    let cache = match (QueryCache::open(&path), &action) {
        (Ok(cache), _) => cache,
        (Err(CacheError::Damaged { .. }), CacheAction::Clear) => {
            QueryCache::remove(&path).with_context(|| format!("cannot remove {}", path.display()))?;
            writeln!(std::io::stdout(), "removed the damaged query cache at {}", path.display())?;
            return Ok(0);
        }
        (Err(e), _) => return Err(e.into()),
    };
    match action {
        CacheAction::Clear => {
            writeln!(std::io::stdout(), "removed {} cached result(s) from {}", cache.clear()?, path.display())?
        }
        CacheAction::Stats => writeln!(std::io::stdout(), "{} cached result(s) in {}", cache.len(), path.display())?,
    }
    Ok(0)
}

#[derive(Debug, Args, Default)]
pub struct TuiArgs {
    /// A question to start with (it is asked at once).
    pub question: Option<String>,
    #[command(flatten)]
    pub setup: SetupArgs,
}

#[derive(Debug, Args)]
pub struct AskArgs {
    /// The question.
    pub question: String,
    /// A topic entity to start from (a label or an id); repeat for several. Without it the
    /// model names them and they are linked by label.
    #[arg(long = "topic", value_name = "NAME")]
    pub topics: Vec<String>,
    #[command(flatten)]
    pub setup: SetupArgs,
    /// Print the full trace as JSON.
    #[arg(long)]
    pub json: bool,
    /// Ask the knowledge graph as it is, without the correction overlay.
    #[arg(long)]
    pub no_overlay: bool,
    /// Save the run as a session file that `ongraph replay` plays back offline (also when the
    /// question could not be answered: the steps taken are kept).
    #[arg(long, value_name = "FILE")]
    pub save_session: Option<std::path::PathBuf>,
    /// Take up a saved session of this question (e.g. one a failed call cut short): the KG
    /// answers and model replies it recorded are used again, and only what it lacks is asked.
    #[arg(long, value_name = "FILE")]
    pub resume: Option<std::path::PathBuf>,
}

/// What to reason with and over: shared by every command that runs a method.
#[derive(Debug, Args, Clone, Default)]
pub struct SetupArgs {
    /// `demo`, a name from [kg.*] in the config, or a .nt / tab-separated triples file.
    #[arg(long, env = "ONGRAPH_KG", global = true)]
    pub kg: Option<String>,
    /// How to read the KG: auto (files: named-ids when the file has no name triples, else
    /// freebase; endpoints: rdf), freebase, named-ids, rdf or wikidata. Wins over a config
    /// entry's `profile`. Default: auto.
    #[arg(long, global = true, value_name = "PROFILE")]
    pub kg_profile: Option<String>,
    /// Skip malformed KG lines (and count them) instead of stopping at the first.
    #[arg(long, global = true)]
    pub lenient: bool,
    /// `demo` (the offline scripted demo model), a name from [llm.*] in the config, or
    /// `scripted:FILE`.
    #[arg(long, env = "ONGRAPH_LLM", global = true)]
    pub llm: Option<String>,
    // The engine's settings: --method, --width, --max-tokens, …
    #[command(flatten)]
    pub settings: crate::settings_patch::SettingsPatch,
    /// Structured replies from an endpoint: auto (JSON schema, else JSON object, else free
    /// text, as the endpoint accepts), json_schema, json_object or off. Default: the
    /// endpoint's `structured` setting, else auto. Simulation models read free text only.
    #[arg(long, global = true, value_enum, value_name = "MODE")]
    pub structured: Option<StructuredMode>,
    /// Requests in flight at once (`eval`: questions answered at once).
    #[arg(long, global = true, value_parser = crate::settings_patch::count::<usize>("concurrency"))]
    pub concurrency: Option<usize>,
    /// A directory of prompt templates overriding the built-in ones.
    #[arg(long, global = true)]
    pub prompts: Option<PathBuf>,
    /// Send every SPARQL query to the endpoint, ignoring the query cache.
    #[arg(long, global = true)]
    pub no_cache: bool,
    /// Hide triples for this run, to simulate an incomplete KG: a GoG incomplete-KG file
    /// (`.json`, with --scenario-id) or a tab-separated file of triples. Never stored.
    #[arg(long, global = true, value_name = "FILE")]
    pub scenario: Option<PathBuf>,
    /// Which question of a GoG file: its ID or its index.
    #[arg(long, global = true, value_name = "ID")]
    pub scenario_id: Option<String>,
    /// Share corrections through this `[shared.NAME]` set (default: the config's
    /// `[defaults] shared`).
    #[arg(long, global = true, value_name = "NAME")]
    pub shared: Option<String>,
    /// Keep to the local corrections: neither send nor pull a shared set's.
    #[arg(long, global = true, conflicts_with = "shared")]
    pub no_shared: bool,
}

pub async fn run(cli: Cli, config: Config) -> Result<i32> {
    match cli.command.unwrap_or(Command::Tui(TuiArgs::default())) {
        Command::Tui(args) => tui::tui(args, &config).await,
        Command::Replay(args) => tui::replay(args, &config).await,
        Command::Ask(args) => ask::ask(args, &config).await,
        Command::Kg(args) => kg::kg(args, &config).await,
        Command::Fix(args) => fix::fix(args, &config).await,
        Command::Eval(args) => eval::eval(args, &config).await,
        Command::Cache { action } => cache_command(action, &config),
    }
}

/// The engine settings: the defaults, then the config's `[defaults]`, then the flags.
pub fn settings(s: &SetupArgs, config: &Config) -> Result<crate::engine::Settings> {
    let mut settings = crate::settings_patch::build(&[&config.defaults.settings, &s.settings])?;
    settings.structured = endpoint(s, config).is_some_and(|e| e.structured != StructuredMode::Off);
    Ok(settings)
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
pub fn open_driver(s: &SetupArgs, config: &Config, with_corrections: bool) -> Result<Opened> {
    let (base, report) = open_kg(s, config)?;
    let (kg, corrections) = overlay::with_overlay(base, config, s, with_corrections)?;
    let llm = open_llm(s, config)?;
    let mut driver = crate::driver::Driver::new(kg.clone(), llm.clone())
        .with_concurrency(s.concurrency.unwrap_or(config.defaults.concurrency));
    if let Some(embedder) = open_embedder(config)? {
        driver = driver.with_embedder(embedder);
    }
    Ok(Opened { kg, report, corrections, llm, driver })
}

/// Opens the knowledge graph named by `--kg` (or the config's default).
pub fn open_kg(setup: &SetupArgs, config: &Config) -> Result<(Arc<dyn KnowledgeGraph>, LoadReport)> {
    let name = setup.kg.clone().unwrap_or_else(|| config.defaults.kg.clone());
    if name == "demo" {
        let g = demo_graph();
        let report = LoadReport { triples: g.triple_count(), ..LoadReport::default() };
        return Ok((Arc::new(g), report));
    }
    if name.starts_with("http://") || name.starts_with("https://") {
        let profile = setup.kg_profile.as_deref().filter(|p| *p != "auto").unwrap_or("rdf");
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
        return open_endpoint(&name, &name, profile, endpoint, query_cache(setup, config));
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
                let profile = match setup.kg_profile.as_deref().or(entry.profile.as_deref()) {
                    Some("auto") => "rdf",
                    Some(profile) => profile,
                    None => "freebase",
                };
                return open_endpoint(&name, endpoint, profile, settings, query_cache(setup, config));
            }
            (Some(path), None) => {
                let profile =
                    setup.kg_profile.clone().or_else(|| entry.profile.clone()).unwrap_or_else(|| "auto".into());
                (path.clone(), profile, entry.lenient || setup.lenient)
            }
            (None, None) => bail!("[kg.{name}] needs a `path` (a triples file) or an `endpoint` (SPARQL)"),
        },
        None => {
            let path = PathBuf::from(&name);
            if !path.exists() {
                let known: Vec<&str> = std::iter::once("demo").chain(config.kg.keys().map(String::as_str)).collect();
                let from = named_by(setup.kg.as_deref(), "ONGRAPH_KG", "kg", config);
                bail!("no knowledge graph {name:?}{from}: not a file, and not one of: {}", known.join(", "));
            }
            (path, setup.kg_profile.clone().unwrap_or_else(|| "auto".into()), setup.lenient)
        }
    };
    load_kg(&path, &profile, lenient)
}

/// The query cache, unless switched off.
fn query_cache(setup: &SetupArgs, config: &Config) -> Option<crate::kg::sparql::cache::QueryCache> {
    if !config.defaults.query_cache || setup.no_cache {
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
fn endpoint(setup: &SetupArgs, config: &Config) -> Option<crate::config::LlmEntry> {
    let name = setup.llm.clone().unwrap_or_else(|| config.defaults.llm.clone());
    let mut entry = config.llm.get(&name)?.clone();
    entry.structured = setup.structured.unwrap_or(entry.structured);
    Some(entry)
}

/// Opens the language model named by `--llm` (or the config's default).
pub fn open_llm(setup: &SetupArgs, config: &Config) -> Result<Arc<dyn LanguageModel>> {
    let name = setup.llm.clone().unwrap_or_else(|| config.defaults.llm.clone());
    if name == "demo" {
        let demo = ScriptedModel::demo()?;
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
    let Some(entry) = endpoint(setup, config) else {
        let known: Vec<&str> =
            ["demo", "scripted:FILE"].into_iter().chain(config.llm.keys().map(String::as_str)).collect();
        let from = named_by(setup.llm.as_deref(), "ONGRAPH_LLM", "llm", config);
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
