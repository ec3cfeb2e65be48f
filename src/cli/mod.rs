//! The `ongraph` command line: one client of the engine (the TUI is another).

mod ask;
mod entry;
mod eval;
mod fix;
mod impact;
mod kg;
mod tui;

pub use entry::{main, main_with};

use crate::config::Config;
use crate::llm::openai::StructuredMode;
use crate::printable::Printable;
use crate::workspace::{Selection, cache_path, endpoint};
use anyhow::{Context as _, Result};
use clap::{Args, Parser, Subcommand};
use std::path::PathBuf;

/// Prints `e` and its causes as one `error:` line on stderr: line breaks from a server's error
/// page become spaces and control characters from data are shown as text (`␛` for ESC).
pub fn print_error(e: &anyhow::Error) {
    use std::io::Write as _;
    let text = format!("{e:#}");
    let line = text.split(['\n', '\r']).map(str::trim).filter(|l| !l.is_empty()).collect::<Vec<_>>().join(" ");
    let mut err = Printable::new(std::io::stderr().lock());
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
    settings.structured = endpoint(&s.selection(), config).is_some_and(|e| e.structured != StructuredMode::Off);
    Ok(settings)
}

impl SetupArgs {
    /// What these flags select for the workspace to open.
    pub fn selection(&self) -> Selection {
        Selection {
            kg: self.kg.clone(),
            kg_profile: self.kg_profile.clone(),
            lenient: self.lenient,
            llm: self.llm.clone(),
            structured: self.structured,
            concurrency: self.concurrency,
            no_cache: self.no_cache,
            scenario: self.scenario.clone(),
            scenario_id: self.scenario_id.clone(),
            shared: self.shared.clone(),
            no_shared: self.no_shared,
        }
    }
}

/// As [`sync_before_reading`], saying it on stderr (the command's output stays as it was).
pub async fn sync_and_say(selection: &Selection, config: &Config) -> Result<()> {
    if let Some(note) = crate::workspace::sync_before_reading(selection, config).await? {
        use std::io::Write as _;
        let mut err = Printable::new(std::io::stderr().lock());
        for line in note.lines() {
            writeln!(err, "{}", crate::safe_text::OneLine(line))?;
        }
    }
    Ok(())
}
