//! `ongraph eval`: a method over a dataset, one record per question, a summary; `eval compare`
//! and `eval summary` read finished (or interrupted) runs.

use super::SetupArgs;
use crate::config::Config;
use crate::dataset::tog::TopicIds;
use crate::dataset::{Format, Item, gold_paths, pathquestion};
use crate::engine::Settings;
use crate::eval::gold_path::GoldPathModel;
use crate::eval::record::{self, CorrectionsSeen, Record, RecordWriter};
use crate::eval::runner::{ENDPOINT_FAILURES, Evaluator, Finished, Split, select, split};
use crate::eval::summary::{Summary, summarise};
use crate::llm::openai::{OpenAiClient, OpenAiConfig};
use crate::llm::serve::LoopbackServer;
use crate::llm::{CallLimit, LanguageModel};
use crate::settings_patch::whole_number;
use crate::workspace;
use anyhow::{Context as _, Result, bail};
use clap::{Args, Subcommand, ValueEnum};
use serde::{Deserialize, Serialize};
use std::io::IsTerminal as _;
use std::io::Write as _;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

mod affected;
mod progress;
mod resume;

use progress::Progress;

const RECORDS: &str = crate::eval::record::FILE_NAME;
const META: &str = "run.json";

#[derive(Debug, Args)]
#[command(args_conflicts_with_subcommands = true, subcommand_negates_reqs = true)]
pub struct EvalArgs {
    #[command(subcommand)]
    pub action: Option<EvalAction>,
    /// The question file (with --from: the earlier run's, unless given).
    #[arg(long, value_name = "FILE", required_unless_present = "from")]
    pub dataset: Option<PathBuf>,
    /// Its layout (default: from the file name: cwq.json, data_with_ct_0.4.json, PQ-2H.txt, *.jsonl, …).
    #[arg(long, value_enum)]
    pub format: Option<Format>,
    /// Which topic ids ToG's files give: freebase (`topic_entity`) or wikidata
    /// (`qid_topic_entity`). Default: wikidata when the KG profile is wikidata.
    #[arg(long, value_enum)]
    pub topic_ids: Option<TopicIdChoice>,
    /// Only the first N questions.
    #[arg(long, value_parser = whole_number::<usize>, value_name = "N")]
    pub limit: Option<usize>,
    /// A random N of them (seeded by --seed), kept in file order.
    #[arg(long, value_parser = whole_number::<usize>, value_name = "N")]
    pub sample: Option<usize>,
    /// A fixed split of the file: dev (the seeded sample of 50 designs are chosen on; what
    /// `--sample 50 --seed 7` selected) or test (every other question, in a fixed random order,
    /// for reporting a design chosen on dev; its first N with --take N).
    #[arg(long, value_enum, conflicts_with_all = ["limit", "sample"])]
    pub split: Option<Split>,
    /// Only the first N of those selected (e.g. the first 30 of a seeded sample of 50, so a
    /// slower method runs on a prefix of the same questions; of the test split, N of its
    /// fixed random order).
    #[arg(long, value_parser = whole_number::<usize>, value_name = "N")]
    pub take: Option<usize>,
    /// Where the records and the summary go (default: eval-runs/DATASET.METHOD.LLM).
    #[arg(long, value_name = "DIR")]
    pub out: Option<PathBuf>,
    /// Continue a run in --out: questions already recorded are skipped.
    #[arg(long)]
    pub resume: bool,
    /// Serve a simulation model (demo, scripted:FILE, gold-path) on a loopback HTTP server that
    /// waits this long per call (e.g. 800ms), to measure wall time under realistic latency.
    #[arg(long, value_parser = latency, value_name = "DURATION")]
    pub latency: Option<Duration>,
    /// Apply the correction overlay (off by default: a benchmark measures the KG as published).
    #[arg(long)]
    pub with_corrections: bool,
    /// Ask again only the questions of the earlier run in --from that the active corrections
    /// touch (what each question read, kept in its record), with that run's dataset and
    /// settings; `eval compare FROM OUT` then shows what the corrections did to them.
    #[arg(long, requires_all = ["from", "with_corrections"])]
    pub affected_only: bool,
    /// The earlier run (a directory `eval` wrote) for --affected-only (default --out: DIR-corrected).
    #[arg(long, value_name = "DIR", requires = "affected_only")]
    pub from: Option<PathBuf>,
    /// Print the summary as JSON.
    #[arg(long)]
    pub json: bool,
    #[command(flatten)]
    pub setup: SetupArgs,
}

#[derive(Clone, Copy, Debug, ValueEnum)]
pub enum TopicIdChoice {
    Freebase,
    Wikidata,
}

#[derive(Debug, Subcommand)]
pub enum EvalAction {
    /// Two runs side by side: their summaries, then the questions where they differ.
    Compare {
        /// A run directory or its records.jsonl.
        a: PathBuf,
        b: PathBuf,
        /// List every question, not only those where the runs differ.
        #[arg(long)]
        all: bool,
    },
    /// A run's summary, from its records (a run directory or a records.jsonl).
    Summary {
        run: PathBuf,
        #[arg(long)]
        json: bool,
    },
}

/// What a run directory was made with; `--resume` refuses to mix runs that differ.
#[derive(Debug, Serialize, Deserialize, PartialEq)]
struct RunMeta {
    dataset: String,
    format: Format,
    kg: String,
    /// The KG's file, canonical, when it is one (see `KgScope::canonical_file`); not compared on
    /// --resume (runs made before it was kept have none).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    kg_file: Option<String>,
    /// The prompts directory the templates were overridden from, canonical (`None`: the
    /// built-in prompts, or a run made before it was kept). `fix impact --rerun` asks with them.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    prompts: Option<String>,
    /// How topic ids were read from the dataset, `freebase` or `wikidata` (`None` in runs made
    /// before it was kept).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    topic_ids: Option<String>,
    llm: String,
    /// The model is a simulation (scripted, gold-path): the figures measure the engine.
    simulation: bool,
    /// Corrections applying when the latest invocation started (each question's record says
    /// which it saw: `eval --with-corrections` reads them again per question).
    corrections: usize,
    /// `--with-corrections` (`None` in runs made before it was kept).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    with_corrections: Option<bool>,
    settings: Settings,
    /// Questions selected by the latest invocation (--limit/--sample may grow on resume).
    #[serde(default)]
    selected: usize,
    /// The split the questions were taken from (`None`: --limit/--sample, or a run made before
    /// splits).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    split: Option<Split>,
    /// How the questions were chosen when no split was (`None` for a split, or a run made
    /// before it was kept).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    selection: Option<resume::Selection>,
}

pub async fn eval(args: EvalArgs, config: &Config) -> Result<i32> {
    match args.action {
        Some(EvalAction::Compare { a, b, all }) => compare(&a, &b, all),
        Some(EvalAction::Summary { run, json }) => summary(&run, json),
        None => run(args, config).await,
    }
}

fn records_path(run: &Path) -> PathBuf {
    if run.is_dir() { run.join(RECORDS) } else { run.to_path_buf() }
}

fn read_run(run: &Path) -> Result<Vec<Record>> {
    let path = records_path(run);
    let (mut records, _) = record::read(&path)?;
    records.sort_by_key(|r| r.index);
    Ok(records)
}

fn compare(a: &Path, b: &Path, all: bool) -> Result<i32> {
    let comparison = crate::eval::compare::compare(&read_run(a)?, &read_run(b)?).map_err(anyhow::Error::msg)?;
    let mut out = crate::printable::Printable::new(std::io::stdout().lock());
    write!(out, "{}", comparison.render(&a.display().to_string(), &b.display().to_string(), all))?;
    Ok(0)
}

fn summary(run: &Path, json: bool) -> Result<i32> {
    let records = read_run(run)?;
    let meta = run.is_dir().then(|| read_meta(&run.join(META)).ok()).flatten();
    let summary = summarise(&records, meta.as_ref().map(|m| m.selected));
    print_summary(&summary, meta.as_ref(), json)?;
    Ok(0)
}

fn read_meta(path: &Path) -> Result<RunMeta> {
    let text = crate::text_file::read(path).with_context(|| format!("cannot read {}", path.display()))?;
    serde_json::from_str(&text).with_context(|| format!("{} is not an eval run description", path.display()))
}

fn print_summary(summary: &Summary, meta: Option<&RunMeta>, json: bool) -> Result<()> {
    if json {
        let value = serde_json::json!({ "run": meta, "summary": summary });
        writeln!(std::io::stdout().lock(), "{}", crate::safe_text::json::to_string_pretty(&value)?)?;
        return Ok(());
    }
    let mut out = crate::printable::Printable::new(std::io::stdout().lock());
    if let Some(m) = meta {
        use crate::safe_text::OneLine;
        let (dataset, kg, llm) = (OneLine(&m.dataset), OneLine(&m.kg), OneLine(&m.llm));
        let split = m.split.map(|s| format!(" ({} split)", s.label())).unwrap_or_default();
        writeln!(out, "{} on {dataset}{split} · KG {kg} · LLM {llm}", m.settings.method.label())?;
        if m.simulation {
            writeln!(out, "(a simulation model: these figures measure the engine, not an LLM's accuracy)")?;
        }
    }
    write!(out, "{}", summary.render())?;
    Ok(())
}

/// `--latency`: a duration of at most ten minutes a call (more would only hang a run).
fn latency(text: &str) -> Result<Duration, String> {
    const MAX: Duration = Duration::from_secs(600);
    let d = humantime::parse_duration(text).map_err(|e| format!("'{text}' is not a duration like 800ms ({e})"))?;
    if d > MAX { Err(format!("{text} is too long: at most 10m a call")) } else { Ok(d) }
}

/// Simulation models: served over loopback HTTP with --latency, and labelled in summaries.
fn is_simulation(llm: &str) -> bool {
    llm == "demo" || llm == "gold-path" || llm.starts_with("scripted:")
}

async fn run(args: EvalArgs, config: &Config) -> Result<i32> {
    let (plan, base) = plan(&args, config).await?;
    let live = Arc::new(workspace::LiveOverlay::open(base, config, &plan.setup.selection(), args.with_corrections)?);
    let (kg, corrections, seen_now) = {
        let seen = live.current();
        let now = live.corrections_seen(&seen);
        (seen.kg, seen.active, now)
    };
    // `_server` stays alive for the run: with --latency the model is reached through it.
    let (llm, llm_description, _server) =
        open_model(&plan.llm_name, &plan.items, &plan.dataset, &plan.setup, config, args.latency).await?;
    let meta = RunMeta::of(&plan, &args, config, kg.name(), corrections, llm_description);
    let out = out_dir(&args, &plan);
    let _held = resume::prepare_dir(&out, &meta, args.resume)?;
    let Records { mut writer, kept: mut records, todo } = open_records(&out, &plan)?;
    let at_once = plan.setup.concurrency.unwrap_or(config.defaults.concurrency).max(1);
    let evaluator = evaluator(&plan, config, kg.clone(), llm, at_once)?;
    let evaluator = if args.with_corrections { evaluator.with_kg_source(live) } else { evaluator };
    if let Some(note) = corrections_changed(&records, seen_now.as_ref()) {
        writeln!(std::io::stderr(), "{note}")?;
    }
    let mut progress = Progress::new(todo.len(), !args.json && std::io::stdout().is_terminal(), &records);
    if !todo.is_empty() {
        tracing::info!(questions = todo.len(), already = records.len(), out = %out.display(), "eval starts");
    }
    let stop = async {
        let _ = tokio::signal::ctrl_c().await;
    };
    let (started, mut ran) = (std::time::Instant::now(), 0);
    let finished = evaluator
        .run(todo, at_once, &mut writer, stop, |r| {
            records.push(r.clone());
            progress.update(r);
            ran += 1;
        })
        .await?;
    progress.finish();
    if ran > 0 {
        // Indexed now, so the next `fix impact` finds this run's records without reading them.
        crate::impact::note_saved(&workspace::impact_index_path(config), &out.join(RECORDS));
    }
    records.sort_by_key(|r| r.index);
    let this_run = ThisRun { ran, at_once, elapsed_s: started.elapsed().as_secs_f64(), network: kg.network() };
    write_summary(&out, &meta, &records, plan.chosen.len(), &this_run, args.json)?;
    exit_status(finished, &records, &plan.items)
}

/// What an `eval` run asks, and with what, as its arguments (and the earlier run of --from)
/// say; read before anything is asked.
struct Plan {
    dataset: PathBuf,
    format: Format,
    /// The setup given, with the PathQuestion KB beside the dataset when no --kg was.
    setup: SetupArgs,
    settings: Settings,
    ids: TopicIds,
    items: Vec<Item>,
    /// The questions asked, by index (with --affected-only, those the corrections touch).
    chosen: Vec<usize>,
    llm_name: String,
    prompts_dir: Option<PathBuf>,
}

/// The run's plan, and the KG as published (without corrections). With --with-corrections the
/// shared set is synced first; with --affected-only the questions are those the corrections
/// touch.
async fn plan(args: &EvalArgs, config: &Config) -> Result<(Plan, Arc<dyn crate::kg::KnowledgeGraph>)> {
    let earlier = match &args.from {
        Some(dir) => Some(read_meta(&dir.join(META))?),
        None => None,
    };
    let (dataset, format) = dataset_of(args, earlier.as_ref())?;
    let mut setup = args.setup.clone();
    if format == Format::Pathquestion && setup.kg.is_none() {
        let kb = pathquestion::kb_for(&dataset).with_context(|| {
            format!("no PathQuestion KB beside {} (e.g. 2H-kb.txt): give it with --kg", dataset.display())
        })?;
        setup.kg = Some(kb.display().to_string());
    }
    // The earlier run's settings, as it was asked: its records are compared with these.
    let settings = match &earlier {
        Some(meta) => meta.settings.clone(),
        None => super::settings(&setup, config)?,
    };
    let (base, report) = workspace::open_kg(&setup.selection(), config)?;
    say_skipped(&report)?;
    let ids = topic_ids(args.topic_ids, base.as_ref());
    let items = crate::dataset::load(&dataset, format, ids)?;
    let chosen = choose(args, items.len(), &dataset, settings.seed)?;
    // With --with-corrections each question sees the corrections as they are when it starts
    // (another process may change them during a long run).
    if args.with_corrections {
        super::sync_and_say(&setup.selection(), config).await?;
    }
    // After the sync: the teammates' corrections it pulls choose questions too.
    let chosen = match (&args.from, &earlier) {
        (Some(from), Some(meta)) => {
            affected::check_same_kg(from, &meta.kg, meta.kg_file.as_deref(), &setup, config, base.as_ref())?;
            affected::affected(from, &setup, config, base.as_ref()).await?
        }
        _ => chosen,
    };
    let llm_name = setup.llm.clone().unwrap_or_else(|| config.defaults.llm.clone());
    let prompts_dir = setup.prompts.clone().or_else(|| config.defaults.prompts.clone());
    Ok((Plan { dataset, format, setup, settings, ids, items, chosen, llm_name, prompts_dir }, base))
}

/// --lenient: what the KG lost, said as `ask` does. The examples are the file's own text:
/// through Printable, so no escape reaches the terminal.
fn say_skipped(report: &crate::kg::load::LoadReport) -> Result<()> {
    if report.skipped > 0 {
        let mut err = crate::printable::Printable::new(std::io::stderr().lock());
        let examples: Vec<_> = report.skipped_examples.iter().map(|e| crate::safe_text::one_line(e)).collect();
        writeln!(err, "Skipped {} malformed KG line(s), e.g. {}", report.skipped, examples.join("; "))?;
    }
    Ok(())
}

impl RunMeta {
    /// What this run is made with: `plan`, over the KG `kg` under `corrections` active
    /// corrections, asking the model `llm`.
    fn of(plan: &Plan, args: &EvalArgs, config: &Config, kg: &str, corrections: usize, llm: String) -> Self {
        let dataset = &plan.dataset;
        RunMeta {
            dataset: std::fs::canonicalize(dataset).unwrap_or(dataset.clone()).display().to_string(),
            format: plan.format,
            kg: kg.to_string(),
            kg_file: workspace::KgScope::of(&plan.setup.selection(), config).canonical_file(),
            prompts: plan
                .prompts_dir
                .as_deref()
                .map(|d| std::fs::canonicalize(d).unwrap_or(d.to_path_buf()).display().to_string()),
            topic_ids: Some(match plan.ids {
                TopicIds::Wikidata => "wikidata".into(),
                TopicIds::Freebase => "freebase".into(),
            }),
            llm,
            simulation: is_simulation(&plan.llm_name),
            corrections,
            with_corrections: Some(args.with_corrections),
            settings: plan.settings.clone(),
            selected: plan.chosen.len(),
            split: args.split,
            selection: args.split.is_none().then_some(resume::Selection { limit: args.limit, sample: args.sample }),
        }
    }
}

/// Where a re-run of `from` with corrections goes: beside it, DIR-corrected; `eval-runs/x/` (a
/// shell's completion) is the run eval-runs/x, not a directory to go inside.
fn corrected_beside(from: &Path) -> PathBuf {
    PathBuf::from(format!("{}-corrected", from.components().as_path().display()))
}

/// Where the run goes: --out, else beside --from's run (DIR-corrected), else
/// eval-runs/DATASET.METHOD.LLM.
fn out_dir(args: &EvalArgs, plan: &Plan) -> PathBuf {
    let corrected = args.from.as_deref().map(corrected_beside);
    args.out.clone().or(corrected).unwrap_or_else(|| {
        let stem = plan.dataset.file_stem().and_then(|s| s.to_str()).unwrap_or("dataset");
        let llm = plan.llm_name.replace(['/', ':', '\\'], "-");
        PathBuf::from("eval-runs").join(format!("{stem}.{}.{llm}", plan.settings.method.label().to_lowercase()))
    })
}

/// The records in `out`, opened to append to. A question that failed (the server died, a
/// timeout) is asked again on resume.
struct Records<'a> {
    writer: RecordWriter,
    /// The records kept of the questions chosen.
    kept: Vec<Record>,
    /// The chosen questions still to ask, with their dataset index.
    todo: Vec<(usize, &'a Item)>,
}

/// Opens the records in `out` (see [`Records`]), checked to be of this dataset's questions.
fn open_records<'a>(out: &Path, plan: &'a Plan) -> Result<Records<'a>> {
    let (mut writer, done) = RecordWriter::open(&out.join(RECORDS))?;
    let (done, retried) = writer.drop_failed(done)?;
    if retried > 0 {
        writeln!(std::io::stderr(), "asking again the {retried} question(s) that failed in the run being resumed")?;
    }
    let done_at: std::collections::HashSet<usize> = done.iter().map(|r| r.index).collect();
    check_same_questions(&done, &plan.items, out, &plan.dataset)?;
    let todo: Vec<(usize, &Item)> =
        plan.chosen.iter().filter(|i| !done_at.contains(i)).map(|&i| (i, &plan.items[i])).collect();
    let kept = done.into_iter().filter(|r| plan.chosen.binary_search(&r.index).is_ok()).collect();
    Ok(Records { writer, kept, todo })
}

/// The evaluator over `kg`, `at_once` questions at a time: all questions' calls share one
/// limit, the larger of the questions at once and the config's requests in flight.
fn evaluator(
    plan: &Plan,
    config: &Config,
    kg: Arc<dyn crate::kg::KnowledgeGraph>,
    llm: Arc<dyn LanguageModel>,
    at_once: usize,
) -> Result<Evaluator> {
    let prompts = Arc::new(crate::engine::Registry::program().prompts(plan.prompts_dir.as_deref())?);
    let llm = Arc::new(CallLimit::new(llm, at_once.max(config.defaults.concurrency)));
    Ok(Evaluator::new(kg, llm, prompts, plan.settings.clone())
        .with_embedder(workspace::open_embedder(config)?)
        .with_request_concurrency(config.defaults.concurrency))
}

/// The exit status of a run that ended as `finished`: 0 when every question was asked, else
/// what stopped it said on stderr (130 for Ctrl-C, 1 when the model's endpoint went away).
fn exit_status(finished: Finished, records: &[Record], items: &[Item]) -> Result<i32> {
    Ok(match finished {
        Finished::All => 0,
        Finished::Interrupted => {
            writeln!(std::io::stderr(), "interrupted: {} recorded; run again with --resume to finish", records.len())?;
            130
        }
        Finished::EndpointGone { index, error } => {
            let mut err = crate::printable::Printable::new(std::io::stderr().lock());
            writeln!(
                err,
                "stopped: the model's endpoint failed on {ENDPOINT_FAILURES} questions in a row, from question {} ({}) on: {error}; \
                 {} recorded (the failed ones are asked again): when it is back, go on with: {}",
                index + 1,
                items[index].id,
                records.iter().filter(|r| r.error.is_none()).count(),
                // Lossy: a path that is not UTF-8 must not stop this line (it is said as near as
                // it can be).
                resume_command(std::env::args_os().map(|a| a.to_string_lossy().into_owned()))
            )?;
            1
        }
    })
}

/// The dataset (`--dataset`, else the earlier run's) and its layout (`--format`, else told by
/// its name).
fn dataset_of(args: &EvalArgs, earlier: Option<&RunMeta>) -> Result<(PathBuf, Format)> {
    let Some(dataset) = args.dataset.clone().or_else(|| earlier.map(|m| PathBuf::from(&m.dataset))) else {
        bail!("--dataset FILE is required")
    };
    // Before its name is read for a format: a mistyped path is said as such.
    if !dataset.is_file() {
        bail!("cannot read the dataset {}: no such file", dataset.display());
    }
    let format = match args.format.or_else(|| Format::detect(&dataset)) {
        Some(f) => f,
        None => bail!(
            "cannot tell the layout of {} from its name: give --format ({})",
            dataset.display(),
            Format::value_variants()
                .iter()
                .filter_map(|v| v.to_possible_value())
                .map(|v| v.get_name().to_string())
                .collect::<Vec<_>>()
                .join(", ")
        ),
    };
    Ok((dataset, format))
}

/// How topic ids are read from the dataset: `--topic-ids`, else as the KG names entities.
fn topic_ids(choice: Option<TopicIdChoice>, kg: &dyn crate::kg::KnowledgeGraph) -> TopicIds {
    match choice {
        Some(TopicIdChoice::Wikidata) => TopicIds::Wikidata,
        Some(TopicIdChoice::Freebase) => TopicIds::Freebase,
        None if kg.profile().label_predicates == crate::kg::KgProfile::wikidata().label_predicates => {
            TopicIds::Wikidata
        }
        None => TopicIds::Freebase,
    }
}

/// The questions asked, by index: `--split`'s, else `--limit`/`--sample`'s; `--take` first ones.
fn choose(args: &EvalArgs, questions: usize, dataset: &Path, seed: u64) -> Result<Vec<usize>> {
    if args.take == Some(0) {
        bail!("--take 0 chooses no question: give at least 1");
    }
    if let Some(which) = args.split {
        let chosen = split(questions, which, args.take);
        if chosen.is_empty() {
            bail!(
                "{} has {questions} question(s): its dev split takes them all and leaves no test split",
                dataset.display()
            );
        }
        return Ok(chosen);
    }
    let mut chosen = select(questions, args.limit, args.sample, seed);
    chosen.truncate(args.take.unwrap_or(usize::MAX));
    Ok(chosen)
}

/// What this invocation did, for the summary.
struct ThisRun {
    ran: usize,
    at_once: usize,
    elapsed_s: f64,
    /// SPARQL queries sent and answered from the cache (zero for local graphs).
    network: crate::kg::NetworkStats,
}

/// Writes summary.json and summary.txt beside the records, and prints the summary (as JSON
/// with `json`).
fn write_summary(
    out: &Path,
    meta: &RunMeta,
    records: &[Record],
    chosen: usize,
    this: &ThisRun,
    json: bool,
) -> Result<()> {
    let summary = summarise(records, Some(chosen));
    let (ran, at_once, elapsed, network) = (this.ran, this.at_once, this.elapsed_s, &this.network);
    let this_run = serde_json::json!({"questions": ran, "at_once": at_once, "elapsed_s": elapsed, "network": network});
    let doc = serde_json::json!({"run": meta, "summary": &summary, "this_run": this_run});
    std::fs::write(out.join("summary.json"), crate::safe_text::json::to_string_pretty(&doc)?)
        .context("cannot write summary.json")?;
    std::fs::write(out.join("summary.txt"), summary.render()).context("cannot write summary.txt")?;
    if json {
        writeln!(std::io::stdout().lock(), "{}", crate::safe_text::json::to_string_pretty(&doc)?)?;
        return Ok(());
    }
    print_summary(&summary, Some(meta), false)?;
    let mut stdout = crate::printable::Printable::new(std::io::stdout().lock());
    writeln!(stdout, "This run: {ran} question(s), {at_once} at once, in {elapsed:.2} s")?;
    if network.queries + network.cache_hits > 0 {
        writeln!(stdout, "KG queries: {} sent, {} answered from the cache", network.queries, network.cache_hits)?;
    }
    writeln!(stdout, "Records: {}", out.join(RECORDS).display())?;
    Ok(())
}

/// The command line that goes on with this run: the one given, with `--resume`.
fn resume_command(args: impl Iterator<Item = String>) -> String {
    let mut words: Vec<String> = args.collect();
    if !words.iter().any(|w| w == "--resume") {
        words.push("--resume".into());
    }
    words.iter().map(|w| shell_word(w)).collect::<Vec<_>>().join(" ")
}

/// A word as a POSIX shell reads it back: as it is when it is plain, else in single quotes.
fn shell_word(word: &str) -> String {
    let plain = !word.is_empty() && word.chars().all(|c| c.is_ascii_alphanumeric() || "-_./:=@%+,".contains(c));
    if plain { word.to_string() } else { format!("'{}'", word.replace('\'', r"'\''")) }
}

/// The model `--llm` names (`gold-path` built from the dataset's gold paths), its description,
/// and with `--latency` the loopback server it is then reached through.
async fn open_model(
    name: &str,
    items: &[Item],
    dataset: &Path,
    setup: &SetupArgs,
    config: &Config,
    latency: Option<Duration>,
) -> Result<(Arc<dyn LanguageModel>, String, Option<LoopbackServer>)> {
    let llm: Arc<dyn LanguageModel> = if name == "gold-path" {
        let gold: Vec<_> = gold_paths(items).collect();
        if gold.is_empty() {
            bail!(
                "--llm gold-path follows the gold paths a dataset gives (PathQuestion); {} has none",
                dataset.display()
            );
        }
        Arc::new(GoldPathModel::new(gold))
    } else {
        workspace::open_llm(&setup.selection(), config)?
    };
    let description = llm.describe();
    let Some(latency) = latency else { return Ok((llm, description, None)) };
    if !is_simulation(name) {
        bail!("--latency serves a simulation model (demo, scripted:FILE, gold-path); {name:?} is a real endpoint");
    }
    let server = LoopbackServer::start(llm, latency).await.context("cannot start the loopback LLM server")?;
    let mut client = OpenAiConfig::new(server.base_url(), name);
    client.max_retries = 0;
    let description = format!("{description} (over loopback HTTP, {} per call)", humantime::format_duration(latency));
    Ok((Arc::new(OpenAiClient::new(client)?), description, Some(server)))
}

/// Records already in `out` must be of this dataset's questions, at the same positions.
fn check_same_questions(done: &[Record], items: &[Item], out: &Path, dataset: &Path) -> Result<()> {
    match done.iter().find(|r| items.get(r.index).is_none_or(|i| i.question != r.question)) {
        Some(r) => bail!(
            "{}: question {} is not {:?} in {}: the records are from another dataset",
            out.join(RECORDS).display(),
            r.index + 1,
            r.question,
            dataset.display()
        ),
        None => Ok(()),
    }
}

/// On `--resume` with corrections applied: one line saying so when the records being resumed
/// were answered under corrections other than those applying now (`now`), or do not say which
/// they saw. `None` when they saw these, or when there is nothing to resume.
fn corrections_changed(resumed: &[Record], now: Option<&CorrectionsSeen>) -> Option<String> {
    let now = now?;
    let other = resumed.iter().filter(|r| r.corrections.as_ref().is_some_and(|c| c.digest != now.digest)).count();
    let unknown = resumed.iter().filter(|r| r.corrections.is_none()).count();
    if other > 0 {
        Some(format!(
            "note: the corrections changed since {other} of the {} records being resumed were made; \
             the questions left see {} (the summary counts the records under each)",
            resumed.len(),
            now.describe()
        ))
    } else if unknown > 0 {
        Some(format!(
            "note: {unknown} of the {} records being resumed do not say which corrections they saw \
             (an older ongraph wrote them); the questions left see {}",
            resumed.len(),
            now.describe()
        ))
    } else {
        None
    }
}

/// A model's description with the port of a loopback server taken out: a local server started
/// again lands on another free port, and is the same model.
fn without_loopback_port(llm: &str) -> String {
    static PORT: std::sync::LazyLock<regex::Regex> = std::sync::LazyLock::new(|| {
        regex::Regex::new(r"://(127\.0\.0\.1|localhost|\[::1\]):\d+")
            .unwrap_or_else(|e| unreachable!("constant regex: {e}"))
    });
    PORT.replace_all(llm, "://$1").into_owned()
}

#[cfg(test)]
mod tests {
    use super::without_loopback_port;

    #[test]
    fn the_resume_command_is_the_given_one_with_resume_quoted_for_a_shell() {
        let args = ["ongraph", "eval", "--dataset", "my data/PQ-2H.txt", "--llm", "it's"].map(String::from);
        assert_eq!(
            super::resume_command(args.into_iter()),
            r"ongraph eval --dataset 'my data/PQ-2H.txt' --llm 'it'\''s' --resume"
        );
        let again = ["ongraph", "eval", "--resume"].map(String::from);
        assert_eq!(super::resume_command(again.into_iter()), "ongraph eval --resume");
    }

    #[test]
    fn a_corrected_rerun_goes_beside_the_run_however_its_path_is_written() {
        for from in ["eval-runs/x", "eval-runs/x/", "eval-runs/x//", "./eval-runs/x/"] {
            let beside = super::corrected_beside(std::path::Path::new(from));
            assert_eq!(beside.file_name().and_then(|n| n.to_str()), Some("x-corrected"), "{from}");
            assert!(beside.ends_with("eval-runs/x-corrected"), "{from}: {}", beside.display());
        }
    }

    #[test]
    fn a_loopback_server_on_another_port_is_the_same_model() {
        let a = without_loopback_port("qwen at http://127.0.0.1:44903/v1");
        assert_eq!(a, without_loopback_port("qwen at http://127.0.0.1:54121/v1"));
        assert_eq!(a, "qwen at http://127.0.0.1/v1");
        // Another host or model stays different.
        assert_ne!(a, without_loopback_port("qwen at http://10.0.0.2:54121/v1"));
        assert_ne!(a, without_loopback_port("llama at http://127.0.0.1:54121/v1"));
    }

    /// A run's description, its questions chosen by `split` or `selection`, with `prompts`.
    pub(super) fn meta_chosen(
        split: Option<super::Split>,
        selection: Option<super::resume::Selection>,
        prompts: Option<&str>,
    ) -> super::RunMeta {
        super::RunMeta { split, selection, prompts: prompts.map(String::from), ..meta(0, Some(true)) }
    }

    fn meta(corrections: usize, with_corrections: Option<bool>) -> super::RunMeta {
        super::RunMeta {
            dataset: "d".into(),
            format: super::Format::Jsonl,
            kg: "demo".into(),
            kg_file: None,
            prompts: None,
            topic_ids: None,
            llm: "demo".into(),
            simulation: true,
            corrections,
            with_corrections,
            settings: Default::default(),
            selected: 1,
            split: None,
            selection: None,
        }
    }

    #[test]
    fn resuming_under_other_corrections_is_said_not_refused() {
        use super::resume::prepare_dir;
        use super::{CorrectionsSeen, Record, corrections_changed};
        let dir = tempfile::tempdir().unwrap();
        let out = dir.path().join("run");
        drop(prepare_dir(&out, &meta(0, Some(true)), false).unwrap());
        std::fs::write(out.join(super::RECORDS), "{}\n").unwrap();
        // Another set of corrections now: the same run, resumed.
        drop(prepare_dir(&out, &meta(2, Some(true)), true).unwrap());
        // Whether corrections apply at all is a setting.
        let refused = prepare_dir(&out, &meta(2, Some(false)), true).unwrap_err();
        assert!(refused.to_string().contains("different settings"), "{refused}");
        // A run.json from before `with_corrections` was kept still resumes.
        let mut old = serde_json::to_value(meta(2, None)).unwrap();
        assert!(old.as_object_mut().unwrap().remove("with_corrections").is_none(), "not written when unknown");
        std::fs::write(out.join(super::META), old.to_string()).unwrap();
        prepare_dir(&out, &meta(2, Some(true)), true).unwrap();

        let then = CorrectionsSeen { generation: 1, active: 0, digest: "aaaaaaaaaaaaaaaa".into() };
        let now = CorrectionsSeen { generation: 3, active: 1, digest: "bbbbbbbbbbbbbbbb".into() };
        let mut records = vec![Record::sample(0, true, 1), Record::sample(1, true, 1)];
        assert_eq!(corrections_changed(&records, None), None, "without --with-corrections: nothing to say");
        let note = corrections_changed(&records, Some(&now)).unwrap();
        assert!(note.contains("2 of the 2 records being resumed do not say"), "{note}");
        records.iter_mut().for_each(|r| r.corrections = Some(then.clone()));
        assert_eq!(corrections_changed(&records, Some(&then)), None, "the same corrections");
        records[1].corrections = Some(now.clone());
        let note = corrections_changed(&records, Some(&now)).unwrap();
        assert!(note.starts_with("note: the corrections changed since 1 of the 2 records"), "{note}");
        assert!(note.contains("1 active (digest bbbbbbbbbbbbbbbb)") && !note.contains('\n'), "{note}");
    }
}
