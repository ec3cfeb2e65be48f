//! `ongraph fix impact`: which kept answers a correction touches, before approving a
//! teammate's or after making one.

use crate::config::Config;
use crate::impact::{self, KeptRun, Skipped, Touch};
use crate::kg::Term;
use crate::overlay::team_state::{Sharing, states};
use crate::overlay::{Correction, Op};
use crate::safe_text::OneLine;
use crate::workspace::{self, KgScope};
use anyhow::{Result, bail};
use clap::Args;
use serde::Serialize;
use std::collections::BTreeSet;
use std::io::Write;
use std::path::PathBuf;

#[derive(Debug, Args)]
pub struct ImpactArgs {
    /// The corrections, by id (`fix list` shows them).
    pub ids: Vec<u64>,
    /// Your corrections queued for the shared set, not sent yet.
    #[arg(long)]
    pub pending: bool,
    /// Teammates' corrections waiting for your approval.
    #[arg(long)]
    pub team_pending: bool,
    /// Where the kept runs are: directories (searched a few levels down) or files, saved
    /// sessions and eval runs' records.jsonl (default: ./sessions, ./eval-runs and the UI's
    /// sessions directory).
    #[arg(long, value_name = "DIR", num_args = 1..)]
    pub runs: Vec<PathBuf>,
    /// Re-run the runs it touches with the correction applied (same method, settings, seed and
    /// prompts; a session's recorded replies are reused where the run asks the same; an eval
    /// run of the gold-path simulation asks it again; any other asks the model it was made
    /// with, where the config has that endpoint or the script is there, else --llm or the
    /// default model) and show old → new.
    #[arg(long)]
    pub rerun: bool,
    /// One JSON document, for scripts.
    #[arg(long)]
    pub json: bool,
}

/// One correction's reach.
#[derive(Serialize)]
struct Reach {
    id: u64,
    correction: String,
    rests_on: Vec<Touched>,
    read: Vec<Touched>,
    /// Runs other corrections they did not see changed what they read (see `Touch::Since`).
    since: Vec<Touched>,
}

impl Reach {
    fn runs(&self) -> impl Iterator<Item = &Touched> {
        self.rests_on.iter().chain(&self.read).chain(&self.since)
    }
}

#[derive(Serialize)]
struct Touched {
    place: String,
    question: String,
    method: &'static str,
    answer: Vec<String>,
    paths: Vec<String>,
    /// With --rerun: what it answers with the correction applied.
    #[serde(skip_serializing_if = "Option::is_none")]
    rerun: Option<Rerun>,
    #[serde(skip)]
    run: KeptRun,
}

/// A touched run asked again.
#[derive(Serialize)]
struct Rerun {
    answer: Vec<String>,
    changed: bool,
    llm_calls: u64,
    /// Why it could not be re-run (then `answer` is empty and `changed` false).
    #[serde(skip_serializing_if = "Option::is_none")]
    error: Option<String>,
}

impl Touched {
    fn of(run: KeptRun) -> Self {
        Self {
            place: run.place(),
            question: run.question.clone(),
            method: run.settings.method.label(),
            answer: run.answer.clone(),
            paths: run.paths.clone(),
            rerun: None,
            run,
        }
    }
}

#[derive(Serialize)]
struct Report {
    corrections: Vec<Reach>,
    /// Kept runs of this KG.
    kept: usize,
    /// Of those, the runs one of the corrections touches.
    touched: usize,
    /// With --rerun: the runs re-run, and those whose answer changed under a correction.
    #[serde(skip_serializing_if = "Option::is_none")]
    rerun: Option<usize>,
    #[serde(skip_serializing_if = "Option::is_none")]
    changed: Option<usize>,
    /// Kept runs of other KGs, not looked at.
    other_kg: usize,
    skipped: Vec<SkippedOut>,
}

#[derive(Serialize)]
struct SkippedOut {
    file: String,
    why: String,
}

pub async fn impact(
    out: &mut impl Write,
    args: &ImpactArgs,
    selection: &workspace::Selection,
    config: &Config,
    scope: &KgScope,
) -> Result<i32> {
    let chosen = chosen(args, config, scope)?;
    let places = if args.runs.is_empty() { impact::default_dirs() } else { args.runs.clone() };
    for place in &args.runs {
        if !place.exists() {
            bail!("no such directory or file: {}", place.display());
        }
    }
    let kept = impact::Kept::open(&workspace::impact_index_path(config), &places);
    let ours = |kg: &str| scope.holds_run(kg);
    let (mine, theirs) = kept.counts(ours);
    let mut corrections = reaches(&chosen, &kept, selection, config, scope).await?;
    let mut touched: Vec<String> = corrections.iter().flat_map(Reach::runs).map(|t| t.place.clone()).collect();
    touched.sort();
    touched.dedup();
    let (rerun, changed) = if args.rerun {
        let (rerun, changed) = rerun_touched(&mut corrections, &chosen, selection, config, scope).await?;
        (Some(rerun), Some(changed))
    } else {
        (None, None)
    };
    let report = Report {
        kept: mine,
        touched: touched.len(),
        rerun,
        changed,
        other_kg: theirs,
        skipped: kept
            .skipped()
            .iter()
            .map(|Skipped { file, why }| SkippedOut { file: file.display().to_string(), why: why.clone() })
            .collect(),
        corrections,
    };
    if args.json {
        crate::safe_text::json::to_writer_pretty(&mut *out, &report).map_err(std::io::Error::from)?;
        writeln!(out)?;
    } else {
        print(&mut crate::printable::Printable::new(out), &report, &places)?;
    }
    Ok(0)
}

/// What each of `chosen` reaches of the kept runs, with the runs the other corrections in force
/// moved since (see `Touch::Since`).
async fn reaches(
    chosen: &[Correction],
    kept: &impact::Kept,
    selection: &workspace::Selection,
    config: &Config,
    scope: &KgScope,
) -> Result<Vec<Reach>> {
    // The names a renamed entity had before: a run made while the rename was in force looked
    // for it under them.
    let applying = workspace::applicable_corrections(config, scope)?;
    let ours = |kg: &str| scope.holds_run(kg);
    let now = crate::eval::record::CorrectionsSeen::of(0, &applying).digest;
    let active: Vec<&Correction> = applying.iter().filter(|c| c.active).collect();
    let renames = |c: &&Correction| {
        matches!(
            &c.op,
            Op::Relabel { .. }
                | Op::Retract { object: Term::Literal(_), .. }
                | Op::Assert { object: Term::Literal(_), .. }
        )
    };
    let base = match chosen.iter().chain(active.iter().copied()).any(|c| renames(&c)) {
        true => Some(workspace::open_kg(selection, config)?.0),
        false => None,
    };
    let mut formers = std::collections::BTreeMap::new();
    for c in chosen.iter().chain(active.iter().copied()) {
        let former = match &base {
            Some(kg) => impact::former_names(kg.as_ref(), &c.op).await,
            None => Vec::new(),
        };
        formers.insert(c.id, former);
    }
    let corrections = chosen
        .iter()
        .map(|c| {
            let others: Vec<(Op, Vec<String>)> = active
                .iter()
                .filter(|o| o.id != c.id)
                .map(|o| (o.op.clone(), formers.get(&o.id).cloned().unwrap_or_default()))
                .collect();
            let former = formers.get(&c.id).map(Vec::as_slice).unwrap_or_default();
            reach(c, kept.reach((&c.op, former), &others, &now, ours))
        })
        .collect();
    Ok(corrections)
}

/// Re-runs every run `corrections` touch, each over the KG as the store's corrections leave
/// it with that one applied: how many runs were re-run, and how many of them changed answer.
async fn rerun_touched(
    corrections: &mut [Reach],
    chosen: &[Correction],
    selection: &workspace::Selection,
    config: &Config,
    scope: &KgScope,
) -> Result<(usize, usize)> {
    let (base, _) = workspace::open_kg(selection, config)?;
    // Each run asks the model it was made with, where this machine's config names it.
    let mut models = std::collections::BTreeMap::new();
    let applying = workspace::applicable_corrections(config, scope)?;
    let (mut rerun, mut changed) = (BTreeSet::new(), BTreeSet::new());
    for (reach, correction) in corrections.iter_mut().zip(chosen) {
        let kg = impact::applied(base.clone(), &applying, correction);
        for touched in reach.rests_on.iter_mut().chain(reach.read.iter_mut()).chain(reach.since.iter_mut()) {
            rerun.insert(touched.place.clone());
            // A model that cannot be opened leaves its runs not re-run, the others go on.
            let llm = models
                .entry(touched.run.llm.clone())
                .or_insert_with(|| {
                    workspace::open_llm_of_run(&touched.run.llm, selection, config)
                        .map_err(|e| format!("its model: {e:#}"))
                })
                .clone();
            let again = match llm {
                Ok(llm) => impact::rerun(&touched.run, kg.clone(), llm).await,
                Err(why) => Err(why),
            };
            touched.rerun = Some(match again {
                Ok(again) => {
                    let differs = again.answers != touched.run.answer;
                    if differs {
                        changed.insert(touched.place.clone());
                    }
                    Rerun { answer: again.answers, changed: differs, llm_calls: again.calls, error: None }
                }
                Err(why) => Rerun { answer: Vec::new(), changed: false, llm_calls: 0, error: Some(why) },
            });
        }
    }
    Ok((rerun.len(), changed.len()))
}

/// The corrections asked about: by id, and those `--pending` and `--team-pending` name.
fn chosen(args: &ImpactArgs, config: &Config, scope: &KgScope) -> Result<Vec<Correction>> {
    if args.ids.is_empty() && !args.pending && !args.team_pending {
        bail!("name the corrections by id (fix list shows them), or pass --pending or --team-pending");
    }
    let list = workspace::corrections_for(config, scope)?;
    let sharing = states(&list);
    let mut chosen = Vec::new();
    for id in &args.ids {
        if chosen.iter().any(|c: &Correction| c.id == *id) {
            continue;
        }
        match list.iter().find(|c| c.id == *id) {
            Some(c) => chosen.push(c.clone()),
            None => bail!(
                "no correction {id} for knowledge graph {} (fix list shows its corrections and their ids)",
                scope.key
            ),
        }
    }
    for (c, state) in list.iter().zip(&sharing) {
        let pending = args.pending && c.active && state.sharing == Sharing::Pending;
        let waiting = args.team_pending && workspace::unapproved(config, c);
        if (pending || waiting) && !chosen.iter().any(|k| k.id == c.id) {
            chosen.push(c.clone());
        }
    }
    Ok(chosen)
}

fn reach(c: &Correction, found: Vec<(KeptRun, Touch)>) -> Reach {
    let (mut rests_on, mut read, mut since) = (Vec::new(), Vec::new(), Vec::new());
    for (run, how) in found {
        match how {
            Touch::RestsOn => rests_on.push(Touched::of(run)),
            Touch::Read => read.push(Touched::of(run)),
            Touch::Since => since.push(Touched::of(run)),
        }
    }
    Reach { id: c.id, correction: c.op.describe(), rests_on, read, since }
}

fn print(out: &mut impl Write, report: &Report, places: &[PathBuf]) -> Result<()> {
    // A reason a run could not be re-run is said once; the runs after it that failed alike
    // point back to it.
    let mut said = BTreeSet::new();
    if report.corrections.is_empty() {
        writeln!(out, "no correction is pending")?;
    }
    for reach in &report.corrections {
        let what = format!("correction {}: {}", reach.id, OneLine(&reach.correction));
        if reach.runs().next().is_none() {
            writeln!(out, "{what}: no kept run read it")?;
            continue;
        }
        writeln!(out, "{what}")?;
        for (touch, runs) in
            [(Touch::RestsOn, &reach.rests_on), (Touch::Read, &reach.read), (Touch::Since, &reach.since)]
        {
            if runs.is_empty() {
                continue;
            }
            writeln!(out, "  {} ({}):", touch.heading(), runs.len())?;
            for run in runs {
                print_run(out, run, &mut said)?;
            }
        }
    }
    for s in &report.skipped {
        writeln!(out, "skipped {}: {}", OneLine(&s.file), OneLine(&s.why))?;
    }
    let searched: Vec<String> = places.iter().map(|p| p.display().to_string()).collect();
    let searched = if searched.is_empty() {
        "nowhere (no ./sessions, ./eval-runs or saved sessions)".into()
    } else {
        searched.join(", ")
    };
    let others =
        if report.other_kg > 0 { format!("; {} of other KGs left out", report.other_kg) } else { String::new() };
    match (report.changed, report.rerun) {
        (Some(changed), Some(rerun)) => writeln!(
            out,
            "{changed} of {} kept answers change ({rerun} re-run; in {}{others})",
            report.kept,
            OneLine(&searched)
        )?,
        _ => writeln!(
            out,
            "{} of {} kept runs touched (in {}{others})",
            report.touched,
            report.kept,
            OneLine(&searched)
        )?,
    }
    Ok(())
}

/// One touched run: where, what it answered, the path it showed first, and with --rerun what
/// it answers now (a reason it could not be re-run said once, in `said`).
fn print_run<'a>(out: &mut impl Write, run: &'a Touched, said: &mut BTreeSet<&'a str>) -> Result<()> {
    let answer = if run.answer.is_empty() { "no answer".to_string() } else { run.answer.join(", ") };
    writeln!(out, "    {}  {}  {} → {}", OneLine(&run.place), run.method, OneLine(&run.question), OneLine(&answer))?;
    if let Some(path) = run.paths.first() {
        writeln!(out, "      {}", OneLine(path))?;
    }
    match &run.rerun {
        Some(Rerun { error: Some(why), .. }) if !said.insert(why.as_str()) => {
            writeln!(out, "      not re-run: as above")?
        }
        Some(Rerun { error: Some(why), .. }) => writeln!(out, "      not re-run: {}", OneLine(why))?,
        Some(again) => {
            let new = if again.answer.is_empty() { "no answer".to_string() } else { again.answer.join(", ") };
            let verdict = if again.changed { "changes" } else { "stays" };
            writeln!(
                out,
                "      re-run: {} → {}  ({verdict}; {} LLM call(s))",
                OneLine(&answer),
                OneLine(&new),
                again.llm_calls
            )?;
        }
        None => {}
    }
    Ok(())
}
