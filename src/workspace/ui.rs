//! What the terminal UI asks of the workspace: corrections stored durably, and a driver that
//! sees the KG through them. [`StoreCorrections`] is the real one (the sled store of the
//! selected KG's scope, synced with its shared set); tests provide their own.

use super::Selection;
use super::live::LiveOverlay;
use super::scope::KgScope;
use super::store::{Change, change_correction, corrections_for, impact_index_path, store_drafts};
use super::team::shared_entry;
use super::watch::{TeamNote, TeamWatch};
use crate::config::Config;
use crate::driver::Driver;
use crate::impact;
use crate::kg::KnowledgeGraph;
use crate::llm::{Embedder, LanguageModel};
use crate::overlay::export::ExportFormat;
use crate::overlay::{Correction, Draft, Op};
use anyhow::{Context as _, Result};
use std::path::{Path, PathBuf};
use std::sync::Arc;

/// Where the UI's corrections go: stored durably, then a driver that sees the KG through them.
/// The CLI provides the real one (the sled store of `--kg`'s scope); tests provide their own.
/// Its calls may block (the store may be held by another process): the executor makes them on
/// tokio's blocking pool, one at a time, never on the UI's loop.
pub trait Corrections: Send + Sync {
    fn record(&self, drafts: Vec<Draft>) -> Result<(Vec<u64>, Driver)>;
    fn undo(&self, id: u64) -> Result<Driver>;
    /// Approves (or rejects) a teammate's correction; a driver over the corrections as they
    /// apply after it. The default suits corrections no team shares.
    fn review(&self, id: u64, approve: bool) -> Result<Driver> {
        let _ = approve;
        anyhow::bail!("correction {id} is not a teammate's shared correction: nothing to review")
    }
    fn list(&self) -> Result<Vec<Correction>>;
    /// Called before every step, before [`Self::refresh`]: sends what is queued for the shared
    /// set in use and pulls what teammates published, within a short timeout. What the user
    /// should be told, when something changed about it (the server stopped or started
    /// answering): said once, never at every step. The default has no shared set.
    fn sync(&self) -> Option<TeamNote> {
        None
    }
    /// Called before every step: when the store changed since this one last read it (another
    /// process corrected or undid), a driver that sees it as it is now and its corrections
    /// (undone ones too); `None` when nothing changed. Cheap then: one small file read. The
    /// default suits corrections no other process writes.
    fn refresh(&self) -> Result<Option<(Driver, Vec<Correction>)>> {
        Ok(None)
    }
    /// Writes the corrections as JSON lines to `path` (or a default file); returns where and
    /// how many.
    fn export(&self, path: Option<&Path>) -> Result<(PathBuf, usize)>;
    /// The kept runs (saved sessions, eval records) each of `corrections` touches (see
    /// `ongraph fix impact`). The default keeps no runs.
    fn impact(&self, corrections: &[(u64, Op)]) -> Result<Vec<ImpactOf>> {
        Ok(corrections.iter().map(|(id, _)| ImpactOf { id: *id, ..ImpactOf::default() }).collect())
    }
    /// Re-runs the kept runs `correction` touches with it applied (see `ongraph fix impact
    /// --rerun`): old → new. Slow (it asks the model): made beside the store's other calls,
    /// never in their queue, so it opens no store. The default keeps no runs.
    fn rerun_impact(&self, correction: &Correction) -> Result<RerunOf> {
        Ok(RerunOf { id: correction.id, ..RerunOf::default() })
    }
    /// A session was saved to `file`: the impact index notes its runs now. The default keeps
    /// no index.
    fn saved(&self, _file: &Path) {}
}

/// What re-running the kept runs one correction touches gave.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct RerunOf {
    pub id: u64,
    /// One line per run: where, the question, old → new and whether it changed; or why it
    /// could not be re-run.
    pub lines: Vec<String>,
    /// Runs re-run, and those whose answer changed.
    pub rerun: usize,
    pub changed: usize,
    /// Kept runs of this KG, touched or not.
    pub kept: usize,
}

/// A correction (by id) and the kept runs it reaches, with how.
type Reached = (u64, Vec<(impact::KeptRun, impact::Touch)>);

/// The kept runs one correction touches.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct ImpactOf {
    pub id: u64,
    /// One line per run: where it is kept, its method, its question and answer; first those
    /// whose answer rests on the correction (`true`), then those that read it while searching.
    pub runs: Vec<(bool, String)>,
    /// Kept runs of this KG, touched or not.
    pub kept: usize,
}

impl ImpactOf {
    /// How many touched runs' answers rest on it.
    pub fn resting(&self) -> usize {
        self.runs.iter().filter(|(rests, _)| *rests).count()
    }
}

/// The UI's corrections: written to the sled store of `--kg`'s scope, then a driver over the
/// same (already loaded) graph seen through every active correction. Another process may
/// change the store meanwhile: `refresh`, before each step, reads it again when it moved.
pub struct StoreCorrections {
    live: LiveOverlay,
    llm: Arc<dyn LanguageModel>,
    embedder: Option<Arc<dyn crate::llm::Embedder>>,
    config: Config,
    selection: Selection,
    /// Requests in flight at once.
    concurrency: usize,
    /// The shared set synced with before each step, if one is in use.
    team: Option<TeamWatch>,
    /// The kept runs, through the impact index kept open once asked (opening it is most of a
    /// query's time; another process asking meanwhile reads the files instead).
    kept: std::sync::Mutex<Option<impact::Kept>>,
    /// Where the kept runs are (default: `impact::default_dirs`).
    runs: Option<Vec<PathBuf>>,
}

impl StoreCorrections {
    /// Corrections for `base` in the store `config` names, in `selection`'s scope (and scenario), with `concurrency` requests in flight at once.
    pub fn new(
        base: Arc<dyn KnowledgeGraph>,
        llm: Arc<dyn LanguageModel>,
        config: &Config,
        selection: &Selection,
        embedder: Option<Arc<dyn Embedder>>,
        concurrency: usize,
    ) -> Result<Self> {
        Ok(Self {
            live: LiveOverlay::open(base, config, selection, true)?,
            llm,
            embedder,
            config: config.clone(),
            selection: selection.clone(),
            concurrency,
            team: TeamWatch::open(selection, config)?,
            kept: std::sync::Mutex::new(None),
            runs: None,
        })
    }

    /// The kept runs are under `places` (saved sessions, eval runs), not the default ones.
    pub fn with_runs(mut self, places: Vec<PathBuf>) -> Self {
        self.runs = Some(places);
        self
    }

    /// The kept runs each of `corrections` touches (with those the other corrections in force
    /// moved since: `Touch::Since`), and how many runs of this KG are kept; through the index,
    /// held in memory once read.
    fn reach(&self, corrections: &[(u64, Op)]) -> (Vec<Reached>, usize) {
        let scope = self.scope();
        let places = self.runs.clone().unwrap_or_else(impact::default_dirs);
        // The names a renamed entity had before, from the KG without corrections (a lookup
        // that may go over the network: made before the index is held).
        let former = |op: &Op| match tokio::runtime::Handle::try_current() {
            Ok(runtime) => runtime.block_on(impact::former_names(self.live.base().as_ref(), op)),
            Err(_) => Vec::new(),
        };
        let applying = self.live.current().corrections;
        let now = crate::eval::record::CorrectionsSeen::of(0, &applying).digest;
        let active: Vec<(u64, Op, Vec<String>)> =
            applying.iter().filter(|c| c.active).map(|c| (c.id, c.op.clone(), former(&c.op))).collect();
        let asked: Vec<(u64, &Op, Vec<String>)> = corrections.iter().map(|(id, op)| (*id, op, former(op))).collect();
        // Replaced whole: a panic elsewhere cannot leave it half-made.
        let mut held = self.kept.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        let kept = match held.take() {
            Some(kept) => kept.refreshed(&places),
            None => impact::Kept::open(&impact_index_path(&self.config), &places),
        };
        let ours = |kg: &str| scope.holds_run(kg);
        let (mine, _) = kept.counts(ours);
        let found = asked
            .into_iter()
            .map(|(id, op, former)| {
                let others: Vec<(Op, Vec<String>)> =
                    active.iter().filter(|(o, ..)| *o != id).map(|(_, op, f)| (op.clone(), f.clone())).collect();
                (id, kept.reach((op, &former), &others, &now, ours))
            })
            .collect();
        *held = Some(kept);
        (found, mine)
    }

    /// A driver over the corrections as last read.
    pub fn driver(&self) -> Driver {
        self.driver_over(self.live.current().kg)
    }

    fn driver_over(&self, kg: Arc<dyn KnowledgeGraph>) -> Driver {
        let mut driver = Driver::new(kg, self.llm.clone()).with_concurrency(self.concurrency);
        if let Some(embedder) = &self.embedder {
            driver = driver.with_embedder(embedder.clone());
        }
        driver
    }

    fn scope(&self) -> KgScope {
        KgScope::of(&self.selection, &self.config)
    }

    /// The key the correction `id` is stored under (the UI names only its KG's corrections).
    fn reloaded(&self) -> Result<Driver> {
        Ok(self.driver_over(self.live.reload()?.kg))
    }
}

impl Corrections for StoreCorrections {
    fn record(&self, drafts: Vec<Draft>) -> Result<(Vec<u64>, Driver)> {
        let scope = self.scope();
        // In a shared set, each is queued to be sent (at the next `ongraph` command or
        // `fix sync`: the UI does not wait on the server).
        let set = shared_entry(&self.selection, &self.config)?.map(|(_, e)| e.graph.clone());
        let stored = store_drafts(&self.config, &scope, set.as_deref(), drafts)?;
        let ids = stored.iter().map(|c| c.id).collect();
        Ok((ids, self.reloaded()?))
    }

    fn undo(&self, id: u64) -> Result<Driver> {
        change_correction(&self.config, &self.scope(), &self.selection, id, &Change::Undo)?;
        self.reloaded()
    }

    fn review(&self, id: u64, approve: bool) -> Result<Driver> {
        let review = Change::Review { approve, reason: None };
        change_correction(&self.config, &self.scope(), &self.selection, id, &review)?;
        self.reloaded()
    }

    fn list(&self) -> Result<Vec<Correction>> {
        corrections_for(&self.config, &self.scope())
    }

    fn sync(&self) -> Option<TeamNote> {
        self.team.as_ref().and_then(|t| t.step())
    }

    /// When the store changed since it was last read (another process wrote or undid, a
    /// teammate's record was pulled): a driver that sees it as it is now, and its corrections
    /// (those waiting for approval too, to be shown and reviewed).
    fn refresh(&self) -> Result<Option<(Driver, Vec<Correction>)>> {
        match self.live.refresh()? {
            Some(seen) => Ok(Some((self.driver_over(seen.kg), self.list()?))),
            None => Ok(None),
        }
    }

    /// Through the index beside the store, over `./sessions`, `./eval-runs` and the saved
    /// sessions' directory.
    fn impact(&self, corrections: &[(u64, Op)]) -> Result<Vec<ImpactOf>> {
        let (found, kept) = self.reach(corrections);
        Ok(found
            .into_iter()
            .map(|(id, found)| {
                let mut runs: Vec<(bool, String)> =
                    found.into_iter().map(|(run, how)| (how == impact::Touch::RestsOn, run.line())).collect();
                runs.sort_by_key(|(rests, _)| !*rests);
                ImpactOf { id, runs, kept }
            })
            .collect())
    }

    fn saved(&self, file: &Path) {
        impact::note_saved(&impact_index_path(&self.config), file);
    }

    fn rerun_impact(&self, correction: &Correction) -> Result<RerunOf> {
        let id = correction.id;
        let runtime = tokio::runtime::Handle::try_current().context("no runtime to re-run on")?;
        let (mut found, kept) = self.reach(&[(id, correction.op.clone())]);
        let runs = found.pop().map(|(_, runs)| runs).unwrap_or_default();
        // The corrections as the UI's steps see them (read by the store's queue), this one
        // applied: the store itself is not opened beside that queue.
        let kg = impact::applied(self.live.base().clone(), &self.live.current().corrections, correction);
        let mut out = RerunOf { id, kept, ..RerunOf::default() };
        let shown = |answer: &[String]| if answer.is_empty() { "no answer".to_string() } else { answer.join(", ") };
        for (run, _) in &runs {
            out.rerun += 1;
            let line = match runtime.block_on(impact::rerun(run, kg.clone(), self.llm.clone())) {
                Ok(again) => {
                    let changed = again.answers != run.answer;
                    out.changed += usize::from(changed);
                    let verdict = if changed { "changes" } else { "stays" };
                    format!(
                        "{}  {}: {} → {}  ({verdict}; {} LLM call(s))",
                        run.place(),
                        run.question,
                        shown(&run.answer),
                        shown(&again.answers),
                        again.calls
                    )
                }
                Err(why) => format!("{}  {}: not re-run: {why}", run.place(), run.question),
            };
            out.lines.push(line);
        }
        Ok(out)
    }

    fn export(&self, path: Option<&Path>) -> Result<(PathBuf, usize)> {
        let list = self.list()?;
        let path = path
            .map(Path::to_path_buf)
            .unwrap_or_else(|| crate::session::default_dir().with_file_name("corrections.jsonl"));
        let text = crate::overlay::export::export(
            &list,
            export_format_for(&path),
            &crate::overlay::export::Vocabulary::of(self.live.base().as_ref()),
        );
        if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
            std::fs::create_dir_all(dir)?;
        }
        std::fs::write(&path, text).with_context(|| format!("writing {}", path.display()))?;
        Ok((path, list.len()))
    }
}

/// The format `:export-corrections FILE` writes: the one its extension names (`fixes.tsv` is
/// lines a TSV KB takes), JSON lines (what `fix import` reads) otherwise.
fn export_format_for(path: &Path) -> ExportFormat {
    match path.extension().and_then(|e| e.to_str()).map(str::to_ascii_lowercase).as_deref() {
        Some("tsv" | "txt") => ExportFormat::Tsv,
        Some("nt") => ExportFormat::Nt,
        Some("ru" | "rq" | "sparql") => ExportFormat::SparqlUpdate,
        _ => ExportFormat::Jsonl,
    }
}

#[cfg(test)]
mod tests {
    use super::export_format_for;
    use crate::overlay::export::ExportFormat;
    use std::path::Path;

    #[test]
    fn an_export_is_written_in_the_format_its_file_name_says() {
        // Found by a trial: `fixes.tsv` held JSON lines.
        for (name, format) in [
            ("fixes.tsv", ExportFormat::Tsv),
            ("FIXES.TSV", ExportFormat::Tsv),
            ("fixes.nt", ExportFormat::Nt),
            ("fixes.ru", ExportFormat::SparqlUpdate),
            ("corrections.jsonl", ExportFormat::Jsonl),
            ("corrections", ExportFormat::Jsonl),
        ] {
            assert_eq!(export_format_for(Path::new(name)), format, "{name}");
        }
    }
}
