//! `ongraph` / `ongraph tui` and `ongraph replay`: set up the terminal UI's app and executor.

use super::{SetupArgs, TuiArgs, settings};
use crate::config::Config;
use crate::kg::KnowledgeGraph;
use crate::llm::LanguageModel;
use crate::session::Session;
use crate::tui::Executor;
use crate::tui::app::{Action, App};
use crate::workspace::{self, StoreCorrections, open_embedder, open_kg, open_llm};
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
        crate::engine::Registry::program().prompts(s.prompts.as_deref().or(config.defaults.prompts.as_deref()))?,
    );
    // Teammates' corrections first: the UI's first step sees them.
    let selection = s.selection();
    let shared = workspace::sync_before_reading(&selection, config).await?;
    let (base, _) = open_kg(&selection, config)?;
    let llm = open_llm(&selection, config)?;
    let corrections = store_corrections(base, llm.clone(), config, &selection)?;
    let driver = corrections.driver();
    let kg = driver.kg().clone();
    let mut app = configure(App::new(settings, prompts, kg.profile().clone(), kg.name(), &llm.describe()), config)?;
    app.recording.kg_file = workspace::KgScope::of(&selection, config).canonical_file();
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
    // Live, the runs asked off the recording are on the KG opened here: saved as its runs.
    let mut live_kg = None;
    let executor = if args.live {
        let s = &args.setup;
        let selection = s.selection();
        if let Some(note) = workspace::sync_before_reading(&selection, config).await? {
            tracing::warn!("{note}");
        }
        let (base, _) = open_kg(&selection, config)?;
        live_kg = Some((base.name().to_string(), workspace::KgScope::of(&selection, config).canonical_file()));
        let llm = open_llm(&selection, config)?;
        let corrections = store_corrections(base, llm, config, &selection)?;
        Executor::new(Some(Arc::new(corrections.driver())), Some(Arc::new(corrections)), None, tx.clone())
    } else {
        Executor::new(None, None, None, tx.clone())
    };
    let mut app = configure(App::replaying(session, args.live)?, config)?;
    if let Some((kg, kg_file)) = live_kg {
        app.recording.kg = kg;
        app.recording.kg_file = kg_file;
    }
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
    let mut out = crate::printable::Printable::new(std::io::stdout().lock());
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

/// The UI's corrections over the sled store of `selection`'s scope.
fn store_corrections(
    base: Arc<dyn KnowledgeGraph>,
    llm: Arc<dyn LanguageModel>,
    config: &Config,
    selection: &workspace::Selection,
) -> Result<StoreCorrections> {
    let concurrency = selection.concurrency.unwrap_or(config.defaults.concurrency);
    StoreCorrections::new(base, llm, config, selection, open_embedder(config)?, concurrency)
}
