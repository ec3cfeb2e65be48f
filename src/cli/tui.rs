//! `ongraph` / `ongraph tui` and `ongraph replay`: set up the terminal UI's app and executor.

use super::{SetupArgs, TuiArgs, open_embedder, open_kg, open_llm, overlay, settings};
use crate::config::Config;
use crate::driver::Driver;
use crate::kg::KnowledgeGraph;
use crate::llm::LanguageModel;
use crate::overlay::Correction;
use crate::overlay::store::CorrectionStore;
use crate::session::Session;
use crate::tui::app::{Action, App};
use crate::tui::{Corrections, Executor};
use anyhow::{Context as _, Result};
use clap::Args;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use tokio::sync::mpsc;

#[derive(Debug, Args)]
pub struct ReplayArgs {
    /// A session saved from the UI (ctrl-s), e.g. sessions/canberra.json.
    pub file: PathBuf,
    /// Open the configured KG and model too, so steps the recording lacks (after an override
    /// of your own, say) are performed live.
    #[arg(long)]
    pub live: bool,
    /// Replay every run without the UI, check each reproduces its saved trace, print the
    /// answers; exit 1 if one does not.
    #[arg(long, conflicts_with = "live")]
    pub check: bool,
    #[command(flatten)]
    pub setup: SetupArgs,
}

/// Where the question history lives.
fn history_path() -> PathBuf {
    dirs::state_dir().or_else(dirs::data_dir).unwrap_or_else(std::env::temp_dir).join("ongraph").join("history")
}

/// Applies the config's keys and theme to `app`.
fn configure(mut app: App, config: &Config) -> Result<App> {
    app.keymap = crate::tui::keymap::Keymap::with_overrides(&config.keys).map_err(anyhow::Error::msg)?;
    let (themes, problems) = crate::tui::theme::load_all(crate::tui::theme::user_dir().as_deref());
    for p in &problems {
        tracing::warn!("theme not loaded: {p}");
    }
    app.theme_problems = problems.clone();
    let mut app = app.with_themes(themes, config.defaults.theme.as_deref()).map_err(anyhow::Error::msg)?;
    app.author = crate::overlay::default_author(config.defaults.author.as_deref());
    app.held_sets = config
        .shared
        .values()
        .filter(|e| e.apply == crate::overlay::team::Apply::Approved)
        .map(|e| e.graph.clone())
        .collect();
    app.history = crate::tui::load_history(&history_path());
    // Each one in the messages pane; the last on the status bar, saying how many.
    for p in &problems {
        app.fail(format!("theme not loaded: {p}"));
    }
    if problems.len() > 1 {
        app.fail(format!("{} theme files did not load (M: each one)", problems.len()));
    }
    Ok(app)
}

pub async fn tui(args: TuiArgs, config: &Config) -> Result<i32> {
    let s = &args.setup;
    let settings = settings(s, config)?;
    let prompts = Arc::new(
        crate::engine::Registry::builtin().prompts(s.prompts.as_deref().or(config.defaults.prompts.as_deref()))?,
    );
    // Teammates' corrections first: the UI's first step sees them.
    let shared = overlay::sync_before_reading(s, config).await?;
    let (base, _) = open_kg(s, config)?;
    let llm = open_llm(s, config)?;
    let corrections = StoreCorrections::new(base, llm.clone(), config, s)?;
    let driver = corrections.driver();
    let kg = driver.kg().clone();
    let mut app = configure(App::new(settings, prompts, kg.profile().clone(), kg.name(), &llm.describe()), config)?;
    // Off the demo, the first screen suggests a question this KG can answer.
    if kg.name() != "demo" {
        app.suggestion = match kg.example_fact() {
            Some((entity, relation)) => crate::tui::app::suggestion_from(&entity, &relation),
            None => "a question about an entity of this KG (ongraph kg search NAME finds them)".to_string(),
        };
    }
    // A theme that did not load stays the first thing said. Short enough to be read whole in
    // an 80-column status bar (the beam pane shows a question to try).
    let hint = if kg.name() == "demo" && llm.describe().contains("scripted") {
        "offline demo: ask one of its questions · ?: keys"
    } else {
        "type a question and press enter · ?: keys"
    };
    if app.messages.is_empty() {
        app.say(hint);
    }
    if let Some(note) = shared {
        app.say(note);
    }
    let (tx, rx) = mpsc::unbounded_channel();
    let executor = Executor::new(Some(Arc::new(driver)), Some(Arc::new(corrections)), Some(history_path()), tx.clone());
    if let Some(q) = args.question {
        app.set_question(&q);
        let _ = tx.send(Action::Key(crossterm::event::KeyEvent::from(crossterm::event::KeyCode::Enter)));
    }
    crate::tui::run(app, executor, rx).await?;
    Ok(0)
}

pub async fn replay(args: ReplayArgs, config: &Config) -> Result<i32> {
    let session = Session::load(&args.file)?;
    if args.check {
        return check(&session, &args.file);
    }
    let (tx, rx) = mpsc::unbounded_channel();
    let executor = if args.live {
        let s = &args.setup;
        if let Some(note) = overlay::sync_before_reading(s, config).await? {
            tracing::warn!("{note}");
        }
        let (base, _) = open_kg(s, config)?;
        let llm = open_llm(s, config)?;
        let corrections = StoreCorrections::new(base, llm, config, s)?;
        Executor::new(Some(Arc::new(corrections.driver())), Some(Arc::new(corrections)), None, tx.clone())
    } else {
        Executor::new(None, None, None, tx.clone())
    };
    let mut app = configure(App::replaying(session, args.live)?, config)?;
    app.say(format!(
        "replaying {}{}: enter asks the recorded question, then n steps through it",
        args.file.display(),
        if args.live { " (live: steps not recorded are performed)" } else { " offline" }
    ));
    crate::tui::run(app, executor, rx).await?;
    Ok(0)
}

/// `replay --check`: every run reproduces its saved trace.
fn check(session: &Session, file: &Path) -> Result<i32> {
    use std::io::Write as _;
    if session.runs.is_empty() {
        anyhow::bail!("{} records no runs: there is nothing to check", file.display());
    }
    // Questions, answers and reasons come from a file: shown, never obeyed by the terminal.
    let mut out = super::printable::Printable::new(std::io::stdout().lock());
    let mut failed = 0;
    for (i, record) in session.runs.iter().enumerate() {
        let run = session.replay(i).with_context(|| format!("replaying {}", file.display()))?;
        let same = run.trace() == record.trace.as_slice();
        let answer = run.answer().map(|a| a.answers.join(" | ")).unwrap_or_else(|| "(not answered)".into());
        writeln!(
            out,
            "run {}: {} → {} · {} step{} · {}",
            i + 1,
            crate::safe_text::OneLine(&record.question),
            crate::safe_text::OneLine(&answer),
            run.trace().len(),
            if run.trace().len() == 1 { "" } else { "s" },
            if same { "same trace" } else { "TRACE DIFFERS" }
        )?;
        failed += usize::from(!same);
    }
    for c in &session.corrections {
        // A session file's text: one line each, whatever it holds.
        use crate::safe_text::OneLine;
        // Runs counted as `run N:` above: made (or undone) during or after run N.
        let when = |runs: usize| if runs == 0 { "before run 1".to_string() } else { format!("in run {runs}") };
        let undone = c.undone_after_runs.map(|runs| format!(", undone {}", when(runs))).unwrap_or_default();
        writeln!(
            out,
            "correction {}: {} ({}), made {}{undone}",
            c.id,
            OneLine(&c.draft.op.describe()),
            OneLine(&c.draft.reason),
            when(c.after_runs)
        )?;
    }
    Ok(if failed == 0 { 0 } else { 1 })
}

/// The format `:export-corrections FILE` writes: the one its extension names (`fixes.tsv` is
/// lines a TSV KB takes), JSON lines (what `fix import` reads) otherwise.
fn export_format_for(path: &Path) -> crate::overlay::export::ExportFormat {
    use crate::overlay::export::ExportFormat;
    match path.extension().and_then(|e| e.to_str()).map(str::to_ascii_lowercase).as_deref() {
        Some("tsv" | "txt") => ExportFormat::Tsv,
        Some("nt") => ExportFormat::Nt,
        Some("ru" | "rq" | "sparql") => ExportFormat::SparqlUpdate,
        _ => ExportFormat::Jsonl,
    }
}

/// The UI's corrections: written to the sled store of `--kg`'s scope, then a driver over the
/// same (already loaded) graph seen through every active correction. Another process may
/// change the store meanwhile: `refresh`, before each step, reads it again when it moved.
pub struct StoreCorrections {
    live: overlay::LiveOverlay,
    llm: Arc<dyn LanguageModel>,
    embedder: Option<Arc<dyn crate::llm::Embedder>>,
    config: Config,
    setup: SetupArgs,
    /// The shared set synced with before each step, if one is in use.
    team: Option<super::team_watch::TeamWatch>,
}

impl StoreCorrections {
    /// Corrections for `base` in the store `config` names, in `setup`'s scope (and scenario).
    pub fn new(
        base: Arc<dyn KnowledgeGraph>,
        llm: Arc<dyn LanguageModel>,
        config: &Config,
        setup: &SetupArgs,
    ) -> Result<Self> {
        Ok(Self {
            live: overlay::LiveOverlay::open(base, config, setup, true)?,
            llm,
            embedder: open_embedder(config)?,
            config: config.clone(),
            setup: setup.clone(),
            team: super::team_watch::TeamWatch::open(setup, config)?,
        })
    }

    /// A driver over the corrections as last read.
    pub fn driver(&self) -> Driver {
        self.driver_over(self.live.current().kg)
    }

    fn driver_over(&self, kg: Arc<dyn KnowledgeGraph>) -> Driver {
        let mut driver = Driver::new(kg, self.llm.clone())
            .with_concurrency(self.setup.concurrency.unwrap_or(self.config.defaults.concurrency));
        if let Some(embedder) = &self.embedder {
            driver = driver.with_embedder(embedder.clone());
        }
        driver
    }

    fn scope(&self) -> super::scope::KgScope {
        overlay::kg_scope(&self.setup, &self.config)
    }

    /// The key the correction `id` is stored under (the UI names only its KG's corrections).
    fn key_of(&self, store: &crate::overlay::store::SledStore, id: u64) -> Result<String> {
        Ok(overlay::owner_of(store, &self.scope(), &self.setup, id)?.key)
    }

    fn reloaded(&self) -> Result<Driver> {
        Ok(self.driver_over(self.live.reload()?.kg))
    }
}

impl Corrections for StoreCorrections {
    fn record(&self, drafts: Vec<crate::overlay::Draft>) -> Result<(Vec<u64>, Driver)> {
        let scope = self.scope();
        // In a shared set, each is queued to be sent (at the next `ongraph` command or
        // `fix sync`: the UI does not wait on the server).
        let set = overlay::shared_entry(&self.setup, &self.config)?.map(|(_, e)| e.graph.clone());
        let ids = {
            let store = overlay::open_store(&self.config)?;
            let mut ids = Vec::with_capacity(drafts.len());
            for d in drafts {
                let c = match &set {
                    Some(set) => {
                        let base =
                            crate::overlay::team_state::base_for(&overlay::list_scope(&store, &scope)?, set, &d.op);
                        store.add_shared(&scope.shared_key, d, set, base)?
                    }
                    None => store.add(&scope.key, d)?,
                };
                ids.push(c.id);
            }
            ids
        };
        Ok((ids, self.reloaded()?))
    }

    fn undo(&self, id: u64) -> Result<Driver> {
        let store = overlay::open_store(&self.config)?;
        store.undo(&self.key_of(&store, id)?, id)?;
        drop(store);
        self.reloaded()
    }

    fn review(&self, id: u64, approve: bool) -> Result<Driver> {
        let store = overlay::open_store(&self.config)?;
        store.review(&self.key_of(&store, id)?, id, approve, None)?;
        drop(store);
        self.reloaded()
    }

    fn list(&self) -> Result<Vec<Correction>> {
        overlay::corrections_for(&self.config, &self.scope())
    }

    fn sync(&self) -> Option<crate::tui::TeamNote> {
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
