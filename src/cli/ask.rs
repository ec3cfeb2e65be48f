//! `ongraph ask`: one question, run to the answer.

use super::AskArgs;
use crate::config::Config;
use crate::driver::{Driver, DriverError};
use crate::engine::{Answer, AnswerSource, Run, Settings, Topics};
use crate::kg::KnowledgeGraph;
use crate::kg::load::LoadReport;
use crate::llm::LanguageModel;
use crate::safe_text::{OneLine, one_line};
use crate::session::{Player, Session};
use crate::workspace;
use anyhow::{Context as _, Result};
use serde::Serialize;
use std::io::Write;
use std::path::Path;
use std::sync::Arc;
use std::time::Instant;

pub async fn ask(args: AskArgs, config: &Config) -> Result<i32> {
    let started = Instant::now();
    let s = &args.setup;
    let settings = super::settings(s, config)?;
    let prompts_dir = s.prompts.clone().or_else(|| config.defaults.prompts.clone());
    let prompts = Arc::new(crate::engine::Registry::program().prompts(prompts_dir.as_deref())?);
    if !args.no_overlay {
        super::sync_and_say(&s.selection(), config).await?;
    }
    let workspace::Opened { kg, report, corrections, llm, driver } =
        workspace::open_driver(&s.selection(), config, !args.no_overlay)?;
    let topics = if args.topics.is_empty() { Topics::Extract } else { Topics::Named(args.topics.clone()) };
    let mut run =
        Run::new(&args.question, topics.clone(), settings.clone(), prompts.clone(), kg.profile().clone(), kg.name())?;
    let mut session = args.save_session.as_ref().map(|_| {
        let mut session = Session::new(kg.name(), &llm.describe(), settings.clone(), kg.profile().clone(), &prompts);
        session.kg_file = workspace::KgScope::of(&s.selection(), config).canonical_file();
        session.begin(run.question(), topics, &settings);
        session
    });
    let mut earlier = match &args.resume {
        Some(path) => Some(resumed(path, run.question(), &llm.describe(), args.save_session.as_deref())?),
        None => None,
    };
    let (outcome, interrupted) = drive(&driver, &mut run, &mut earlier, &mut session).await;
    // Saved whatever happened: the steps that were answered are kept.
    let saved = save_session(args.save_session.as_deref(), session.as_mut(), &run, config);
    if interrupted {
        return say_interrupted(args.save_session.as_deref(), saved, &run);
    }
    if let Err(e) = outcome {
        let e = anyhow::Error::from(e).context("the question could not be answered");
        // Both failures are said, on the one error line.
        return Err(match saved {
            Err(unsaved) => anyhow::anyhow!("{e:#} (and {unsaved:#})"),
            Ok(()) => e,
        });
    }
    let wall_ms = started.elapsed().as_millis() as u64;
    let generated = generated_corrections(&run, &args, config);
    let source = run.answer_source(|id| generated.contains(&id));
    let answered = Answered {
        run: &run,
        kg: kg.as_ref(),
        llm: llm.as_ref(),
        report: &report,
        corrections,
        source: source.as_deref(),
        wall_ms,
    };
    answered.print(args.json)?;
    // Reported after the answer, so a failed save does not hide it.
    saved?;
    Ok(if run.answer().is_some_and(|a| !a.answers.is_empty()) { 0 } else { 3 })
}

/// Steps `run` to its end (`Ok`), its first error, or Ctrl-C (then `true`), showing on stderr
/// how far it is. Ctrl-C stops between steps' I/O: what was answered is kept, not lost.
async fn drive(
    driver: &Driver,
    run: &mut Run,
    earlier: &mut Option<Player>,
    session: &mut Option<Session>,
) -> (Result<(), DriverError>, bool) {
    let working = Working::start();
    let interrupt = tokio::signal::ctrl_c();
    tokio::pin!(interrupt);
    let mut interrupted = false;
    let outcome = loop {
        let step = tokio::select! {
            step = driver.step_with(run, earlier.as_mut(), session.as_mut()) => step,
            _ = &mut interrupt => {
                interrupted = true;
                break Ok(());
            }
        };
        match step {
            Ok(Some(i)) => {
                if let Some(e) = run.trace().get(i) {
                    tracing::info!(step = i, summary = %e.summary, "step");
                    working.stepped(i + 1, run.costs().llm_calls, run.next_phase(), &e.summary);
                }
            }
            Ok(None) => break Ok(()),
            Err(e) => break Err(e),
        }
    };
    working.done();
    (outcome, interrupted)
}

/// With --save-session: the session, with `run` as far as it went, saved to `path` (and noted
/// for `fix impact`).
fn save_session(path: Option<&Path>, session: Option<&mut Session>, run: &Run, config: &Config) -> Result<()> {
    match (path, session) {
        (Some(path), Some(session)) => {
            session.sync(run);
            session.saved_at = crate::overlay::now();
            let saved = session.save(path).context("the session could not be saved");
            if saved.is_ok() {
                crate::impact::note_saved(&workspace::impact_index_path(config), path);
            }
            saved
        }
        _ => Ok(()),
    }
}

/// Ctrl-C before the answer: said on stderr, with where the answered steps were saved (or why
/// they could not be); exit status 130.
fn say_interrupted(path: Option<&Path>, saved: Result<()>, run: &Run) -> Result<i32> {
    let kept = match (path, saved) {
        (Some(path), Ok(())) => format!(
            "; the {} step(s) answered are saved in {} (ask again with --resume {} to go on from them)",
            run.trace().len(),
            path.display(),
            path.display()
        ),
        (Some(_), Err(e)) => format!(" ({e:#})"),
        (None, _) => String::new(),
    };
    let mut err = crate::printable::Printable::new(std::io::stderr().lock());
    writeln!(err, "interrupted before the answer{kept}")?;
    Ok(130)
}

/// The corrections the answer rests on that store an LLM-generated triple someone accepted.
fn generated_corrections(run: &Run, args: &AskArgs, config: &Config) -> Vec<u64> {
    if run.answer_corrections().is_empty() || args.no_overlay {
        return Vec::new();
    }
    // The answer is paid for: a store that cannot be read now costs only this detail.
    match workspace::corrections_for(config, &workspace::KgScope::of(&args.setup.selection(), config)) {
        Ok(list) => list.into_iter().filter(crate::overlay::Correction::is_llm_generated).map(|c| c.id).collect(),
        Err(e) => {
            tracing::warn!("cannot read the corrections to say which the answer rests on: {e:#}");
            Vec::new()
        }
    }
}

/// A finished run and what it is reported with, as JSON or for people.
struct Answered<'a> {
    run: &'a Run,
    kg: &'a dyn KnowledgeGraph,
    llm: &'a dyn LanguageModel,
    report: &'a LoadReport,
    corrections: usize,
    /// Where the answer comes from, in words.
    source: Option<&'a str>,
    wall_ms: u64,
}

impl Answered<'_> {
    /// On stdout: the whole run as JSON with `json`, else the answer and what it cost.
    fn print(&self, json: bool) -> Result<()> {
        let (run, kg) = (self.run, self.kg);
        let mut out = std::io::stdout().lock();
        if json {
            let report = JsonReport {
                question: run.question(),
                settings: run.settings(),
                kg: kg.name(),
                kg_load: self.report,
                corrections: self.corrections,
                llm: self.llm.describe(),
                system_prompt: run.system_message(),
                answer: run.answer(),
                answer_source: self.source,
                answer_corrections: run.answer_corrections(),
                costs: run.costs(),
                network: kg.network(),
                wall_ms: self.wall_ms,
                trace: run.trace(),
                beam: run.beam(),
                generated: run.generated(),
            };
            // An io::Error, so a closed pipe is recognised as one (main.rs).
            crate::safe_text::json::to_writer_pretty(&mut out, &report).map_err(std::io::Error::from)?;
            writeln!(out)?;
        } else {
            let mut out = crate::printable::Printable::new(&mut out);
            print_human(&mut out, run, self.source, self.report, self.corrections, kg.network(), self.wall_ms)?;
        }
        Ok(())
    }
}

/// What `ask` shows while it works, on stderr when that is a terminal (a local model can take
/// minutes): the time, the steps and LLM calls so far and what the last step did; cleared
/// before the answer is printed.
struct Working {
    bar: indicatif::ProgressBar,
}

impl Working {
    fn start() -> Self {
        use std::io::IsTerminal as _;
        let bar = if std::io::stderr().is_terminal() {
            indicatif::ProgressBar::with_draw_target(None, indicatif::ProgressDrawTarget::stderr())
        } else {
            indicatif::ProgressBar::hidden()
        };
        if let Ok(style) = indicatif::ProgressStyle::with_template("{spinner} {elapsed} {wide_msg}") {
            bar.set_style(style);
        }
        bar.set_message("working: the first step");
        bar.enable_steady_tick(std::time::Duration::from_millis(120));
        Self { bar }
    }

    /// After step `steps`, whose summary is `summary` (data: its control characters are left
    /// out, as everything printed for people), with the step now under way (`now`, the
    /// method's phase): the line stands for minutes with a slow model.
    fn stepped(&self, steps: usize, calls: u64, now: &str, summary: &str) {
        let summary = one_line(summary);
        let s = if calls == 1 { "" } else { "s" };
        let now = now.replace('_', " ");
        self.bar.set_message(format!("step {steps} · {calls} LLM call{s} · now: {now} · last: {summary}"));
    }

    fn done(&self) {
        self.bar.finish_and_clear();
    }
}

/// The recording of `question` in the session at `path`, to take the model's replies from
/// again: only a recording of the same model, and never the file being saved (it would be
/// overwritten with this one run).
fn resumed(path: &std::path::Path, question: &str, model: &str, saving: Option<&std::path::Path>) -> Result<Player> {
    let same_file = |other: &std::path::Path| {
        other.exists() && std::fs::canonicalize(other).ok() == std::fs::canonicalize(path).ok()
    };
    if saving.is_some_and(same_file) {
        anyhow::bail!(
            "--resume and --save-session name the same file ({}): save to another, so the recording is kept",
            path.display()
        );
    }
    let session = Session::load(path)?;
    if session.llm != model {
        anyhow::bail!(
            "{} was recorded with the model {:?}, not {model:?}: its replies are not this model's",
            path.display(),
            session.llm
        );
    }
    let record = session.runs.iter().rev().find(|r| r.question == question).ok_or_else(|| {
        let asked: Vec<&str> = session.runs.iter().map(|r| r.question.as_str()).collect();
        anyhow::anyhow!("{} recorded no run of this question (it has: {})", path.display(), asked.join(" | "))
    })?;
    Ok(Player::new(record))
}

#[derive(Serialize)]
struct JsonReport<'a> {
    question: &'a str,
    settings: &'a Settings,
    kg: &'a str,
    kg_load: &'a crate::kg::load::LoadReport,
    /// Active corrections applied from the overlay.
    corrections: usize,
    llm: String,
    /// The system message sent with every call (`system.txt`); the trace's calls show the
    /// rest of each prompt.
    system_prompt: String,
    answer: Option<&'a crate::engine::Answer>,
    /// Where the answer comes from, in words, with the corrections it rests on.
    #[serde(skip_serializing_if = "Option::is_none")]
    answer_source: Option<&'a str>,
    /// The corrections asserting facts on the paths the answer rests on.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    answer_corrections: Vec<u64>,
    costs: crate::engine::events::Costs,
    /// SPARQL queries sent and answered from the cache (zero for local graphs).
    network: crate::kg::NetworkStats,
    wall_ms: u64,
    trace: &'a [crate::engine::events::Event],
    beam: &'a crate::engine::beam::Beam,
    /// GoG: the triples the model generated.
    #[serde(skip_serializing_if = "<[_]>::is_empty")]
    generated: &'a [crate::engine::GeneratedTriple],
}

fn print_human(
    out: &mut impl Write,
    run: &Run,
    source: Option<&str>,
    report: &LoadReport,
    corrections: usize,
    network: crate::kg::NetworkStats,
    wall_ms: u64,
) -> Result<()> {
    if report.skipped > 0 {
        let examples: Vec<_> = report.skipped_examples.iter().map(|e| one_line(e)).collect();
        writeln!(out, "Skipped {} malformed KG line(s), e.g. {}", report.skipped, examples.join("; "))?;
    }
    let Some(answer) = run.answer() else { return Ok(()) };
    write_answer(out, run, answer)?;
    writeln!(out, "Source: {}", one_line(&source.map_or_else(|| answer.source_words(), str::to_string)))?;
    // The reason a structured judgment gave with its answer: a small model's reason may name
    // another thing than its answer, which the user should see beside it.
    if let Some(reason) = answer.reply.lines().find_map(|l| l.strip_prefix("reason: ")).filter(|r| !r.trim().is_empty())
    {
        writeln!(out, "The model's reason: {}", OneLine(reason.trim()))?;
    }
    write_endpoint_notes(out, run)?;
    write_method_report(out, run)?;
    write_paths(out, run, answer)?;
    write_generated(out, run)?;
    write_costs(out, run, corrections, network)?;
    writeln!(out, "Time: {:.2} s", wall_ms as f64 / 1000.0)?;
    Ok(())
}

/// The answer line, or why there is none: the model gave none, or its reply could not be read.
fn write_answer(out: &mut impl Write, run: &Run, answer: &Answer) -> Result<()> {
    // The step that answered (the run's last): whether its reply was read, or could not be
    // (prose where an answer in the asked-for form was expected: a small model's frequent reply).
    let unread = run.trace().last().is_some_and(|e| e.calls.iter().any(|c| c.fell_back));
    if answer.answers.is_empty() && unread {
        writeln!(
            out,
            "No answer: none could be read from the model's reply (it named none in the form asked for; --json shows the reply)."
        )?;
    } else if answer.answers.is_empty() {
        writeln!(out, "No answer: the model gave none.")?;
    } else {
        let answers: Vec<_> = answer.answers.iter().map(|a| one_line(a)).collect();
        writeln!(out, "Answer: {}", answers.join(" | "))?;
    }
    Ok(())
}

/// How the endpoint had to be asked (said once per endpoint, in the trace): worth knowing
/// beside the answer when replies are not what they were asked for.
fn write_endpoint_notes(out: &mut impl Write, run: &Run) -> Result<()> {
    let mut endpoint: Vec<&str> = Vec::new();
    for note in run.trace().iter().flat_map(|e| &e.notes).filter(|n| crate::llm::is_endpoint_note(n)) {
        if !endpoint.contains(&note.as_str()) {
            endpoint.push(note);
        }
    }
    for note in endpoint {
        writeln!(out, "Endpoint: {}", OneLine(note))?;
    }
    Ok(())
}

/// What the method reports of the whole run (PoG: its analysis and stages), as the UI shows it.
fn write_method_report(out: &mut impl Write, run: &Run) -> Result<()> {
    let report = run.view().report;
    if !report.is_empty() {
        writeln!(out, "{}:", run.settings().method.label())?;
        for line in report {
            writeln!(out, "  {}{}", line.label, OneLine(&line.text))?;
        }
    }
    Ok(())
}

/// The answer's first five paths. Those that name the answer support it; the others were only
/// in front of the model (listed after them). An own-knowledge answer rests on none.
fn write_paths(out: &mut impl Write, run: &Run, answer: &Answer) -> Result<()> {
    let others = run.other_paths_from();
    let heading = match answer.source {
        AnswerSource::OwnKnowledge => "Paths explored (the answer does not rest on them)",
        _ if others == Some(0) => crate::engine::OTHER_PATHS,
        _ => "Supporting paths",
    };
    // Best path score first, unless the method orders its paths otherwise (then it says how).
    let order = run.path_order().map(|o| format!(", {o}")).unwrap_or_default();
    if answer.paths.is_empty() {
        return Ok(());
    }
    writeln!(out, "{heading}{order}:")?;
    let merged = answer.paths.iter().position(|p| run.beam().merged_into(p.leaf).is_some());
    for (i, p) in answer.paths.iter().take(5).enumerate() {
        if merged == Some(i) {
            writeln!(out, "  {}:", crate::engine::MERGED_ROUTES)?;
        }
        if others == Some(i) && i > 0 {
            writeln!(out, "  {}:", crate::engine::OTHER_PATHS)?;
        }
        // A hop the LLM wrote (GoG's Generate) is no triple of the KG: the path says so.
        let beam = run.beam();
        let generated = beam
            .path(p.leaf)
            .iter()
            .any(|&n| matches!(beam.nodes[n].provenance, crate::engine::beam::Provenance::Generated { .. }));
        let mark = if generated { "  [through an LLM-generated triple]" } else { "" };
        // As the beam holds it, arrows for every method (PoG's own text is the papers' brace
        // format, kept for its prompts and the trace).
        // A method that orders its paths otherwise does not score them: no score shown.
        let score = if run.path_order().is_some() { String::new() } else { format!("[{:.3}] ", p.score) };
        writeln!(out, "  {}. {score}{}{mark}", i + 1, OneLine(&beam.path_text(p.leaf)))?;
    }
    if answer.paths.len() > 5 {
        writeln!(out, "  … and {} more", answer.paths.len() - 5)?;
    }
    Ok(())
}

/// GoG: the triples the model generated, and whether verification kept each.
fn write_generated(out: &mut impl Write, run: &Run) -> Result<()> {
    if !run.generated().is_empty() {
        writeln!(out, "Generated by the LLM (not in the KG):")?;
        for g in run.generated() {
            let verdict = if g.kept { "kept" } else { "rejected by verification" };
            writeln!(out, "  [gen] {}, {}, {} ({verdict})", OneLine(&g.head), OneLine(&g.relation), OneLine(&g.tail))?;
        }
    }
    Ok(())
}

/// What the run cost (LLM calls and tokens, KG lookups and queries) and the corrections in
/// effect on what it read.
fn write_costs(out: &mut impl Write, run: &Run, corrections: usize, network: crate::kg::NetworkStats) -> Result<()> {
    let c = run.costs();
    let saved =
        if c.llm_calls_saved > 0 { format!(", {} repeated call(s) saved", c.llm_calls_saved) } else { String::new() };
    writeln!(
        out,
        "Cost: {} LLM call(s) in {} round(s){saved}; {} prompt{} + {} completion tokens; {} KG lookup(s)",
        c.llm_calls,
        c.llm_rounds,
        c.usage.prompt_tokens,
        crate::eval::summary::reused(c.usage.cached_tokens),
        c.usage.completion_tokens,
        c.kg_lookups
    )?;
    if network.queries + network.cache_hits > 0 {
        writeln!(out, "KG queries: {} sent, {} answered from the cache", network.queries, network.cache_hits)?;
    }
    // Said only of a run that read the KG: an IO or CoT answer never saw a correction. They
    // are in effect on what was read; the answer's source says which ones it rests on.
    if corrections > 0 && c.kg_lookups > 0 {
        writeln!(
            out,
            "Corrections in effect: {corrections} (see `ongraph fix list`; --no-overlay to ask without them)"
        )?;
    }
    Ok(())
}
