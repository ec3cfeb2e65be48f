//! The terminal UI: one client of the engine (the CLI is another). `app` holds the state and
//! its `update`; `view` draws it; this module runs the loop: terminal events and finished
//! requests come in as actions, effects go out as tokio tasks, so the UI never waits on the
//! network; the screen is redrawn when something changed, at most once per frame interval.

pub mod app;
pub mod component;
pub mod keymap;
pub mod modal;
pub mod theme;
pub mod view;

use crate::driver::Driver;
use crate::overlay::{Correction, Draft};
use crate::session::Session;
use anyhow::Result;
use app::{Action, App, Effect, update};
use crossterm::event::{DisableMouseCapture, EnableMouseCapture, Event, EventStream, KeyEventKind};
use futures::StreamExt;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, Instant};
use tokio::sync::mpsc;

/// The shortest time between two frames: input bursts and result bursts draw once.
pub const FRAME: Duration = Duration::from_millis(10);

/// Where the UI's corrections go: stored durably, then a driver that sees the KG through them.
/// The CLI provides the real one (the sled store of `--kg`'s scope); tests provide their own.
pub trait Corrections: Send + Sync {
    fn record(&self, drafts: Vec<Draft>) -> Result<(Vec<u64>, Driver)>;
    fn undo(&self, id: u64) -> Result<Driver>;
    fn list(&self) -> Result<Vec<Correction>>;
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
}

/// Performs effects: KG lookups and LLM calls as tokio tasks, short durable writes in place.
pub struct Executor {
    /// `None` in an offline replay: nothing can be looked up or asked.
    pub driver: Option<Arc<Driver>>,
    pub corrections: Option<Arc<dyn Corrections>>,
    /// Where asked questions are remembered.
    pub history: Option<PathBuf>,
    pub tx: mpsc::UnboundedSender<Action>,
}

const OFFLINE: &str = "offline replay: no KG or model to ask (replay with --live to branch off)";

impl Executor {
    pub fn execute(&mut self, effect: Effect) {
        let tx = self.tx.clone();
        match effect {
            Effect::Perform { generation, requests } => {
                self.refresh_corrections();
                let Some(driver) = self.driver.clone() else {
                    let _ = tx.send(Action::Performed { generation, result: Err(OFFLINE.into()), elapsed_ms: 0 });
                    return;
                };
                tokio::spawn(async move {
                    let started = Instant::now();
                    let result = driver.perform(&requests).await.map_err(|e| e.to_string());
                    let elapsed_ms = started.elapsed().as_millis() as u64;
                    let _ = tx.send(Action::Performed { generation, result, elapsed_ms });
                });
            }
            Effect::Lookup { token, requests } => {
                let Some(driver) = self.driver.clone() else {
                    let _ = tx.send(Action::Looked { token, result: Err(OFFLINE.into()) });
                    return;
                };
                tokio::spawn(async move {
                    let result = driver.perform(&requests).await.map_err(|e| e.to_string());
                    let _ = tx.send(Action::Looked { token, result });
                });
            }
            // Durable writes are short blocking calls, and the next steps must see them: they
            // are done before anything else is performed.
            Effect::Correct { drafts } => {
                let result = self.corrections().and_then(|c| c.record(drafts)).map(|(ids, driver)| {
                    self.driver = Some(Arc::new(driver));
                    ids
                });
                let _ = tx.send(Action::Corrected(result.map_err(|e| format!("{e:#}"))));
            }
            Effect::Undo { id } => {
                let result = self.corrections().and_then(|c| c.undo(id)).map(|driver| {
                    self.driver = Some(Arc::new(driver));
                    id
                });
                let _ = tx.send(Action::Undone(result.map_err(|e| format!("{e:#}"))));
            }
            Effect::ListCorrections => {
                let result = self.corrections().and_then(|c| c.list());
                let _ = tx.send(Action::Listed(result.map_err(|e| format!("{e:#}"))));
            }
            Effect::Export { path } => {
                let result = self.corrections().and_then(|c| c.export(path.as_deref()));
                let _ = tx.send(Action::Exported(result.map_err(|e| format!("{e:#}"))));
            }
            Effect::Save { path, session } => {
                let path =
                    path.unwrap_or_else(|| crate::session::default_dir().join(crate::session::file_name(&session)));
                let result = session.save(&path).map(|()| path).map_err(|e| e.to_string());
                let _ = tx.send(Action::Saved(result));
            }
            Effect::Open { path } => {
                let result = Session::load(&path).map(Box::new).map_err(|e| e.to_string());
                let _ = tx.send(Action::Opened(result));
            }
            Effect::Wake { token, after_ms } => {
                tokio::spawn(async move {
                    tokio::time::sleep(Duration::from_millis(after_ms)).await;
                    let _ = tx.send(Action::Woke { token });
                });
            }
            Effect::Remember { question } => {
                if let Some(path) = &self.history
                    && let Err(e) = remember(path, &question)
                {
                    tracing::warn!("cannot write the question history {}: {e}", path.display());
                }
            }
        }
    }

    /// Swaps in a driver over the store's corrections when another process changed them, and
    /// tells the app (before the step's own answer).
    fn refresh_corrections(&mut self) {
        let Some(corrections) = &self.corrections else { return };
        let changed = match corrections.refresh() {
            Ok(None) => return,
            Ok(Some((driver, list))) => {
                self.driver = Some(Arc::new(driver));
                Ok(list)
            }
            Err(e) => {
                tracing::warn!("cannot read the corrections again: {e:#}");
                Err(format!("{e:#}"))
            }
        };
        let _ = self.tx.send(Action::CorrectionsChanged(changed));
    }

    fn corrections(&self) -> Result<&Arc<dyn Corrections>> {
        self.corrections.as_ref().ok_or_else(|| anyhow::anyhow!("{OFFLINE}"))
    }
}

/// How many questions the history keeps.
const HISTORY: usize = 200;

/// The questions asked before, oldest first (one JSON string per line: questions may span
/// lines). A missing or unreadable file is an empty history.
pub fn load_history(path: &Path) -> Vec<String> {
    let Ok(text) = std::fs::read_to_string(path) else { return Vec::new() };
    let all: Vec<String> = text.lines().filter_map(|l| serde_json::from_str(l).ok()).collect();
    all[all.len().saturating_sub(HISTORY)..].to_vec()
}

fn remember(path: &Path, question: &str) -> std::io::Result<()> {
    use std::io::Write;
    if let Some(dir) = path.parent() {
        std::fs::create_dir_all(dir)?;
    }
    let mut file = std::fs::OpenOptions::new().create(true).append(true).open(path)?;
    writeln!(file, "{}", serde_json::Value::String(question.to_string()))
}

/// Runs the UI until the user quits. The terminal is restored on quit, on error, on panic
/// (ratatui's init installs the panic hook) and on SIGTERM or SIGINT.
pub async fn run(mut app: App, mut executor: Executor, rx: mpsc::UnboundedReceiver<Action>) -> Result<()> {
    use std::io::IsTerminal;
    // ratatui's init panics without a terminal; say what to do instead.
    if !(std::io::stdin().is_terminal() && std::io::stdout().is_terminal()) {
        anyhow::bail!(
            "the terminal UI needs a terminal (stdin and stdout are not one here); \
             without one, use `ongraph ask QUESTION` or `ongraph replay --check FILE`"
        );
    }
    let mut terminal = ratatui::init();
    let _ = crossterm::execute!(std::io::stdout(), EnableMouseCapture);
    let result = event_loop(&mut terminal, &mut app, &mut executor, rx).await;
    let _ = crossterm::execute!(std::io::stdout(), DisableMouseCapture);
    ratatui::restore();
    result
}

/// Ctrl-Z: gives the terminal back, stops the process as the shell expects (SIGTSTP), and
/// takes the terminal again when `fg` resumes it.
/// Returns why it could not, if it could not.
fn suspend(terminal: &mut ratatui::DefaultTerminal) -> Option<String> {
    let _ = crossterm::execute!(std::io::stdout(), DisableMouseCapture);
    ratatui::restore();
    // Raw mode swallows the key that would make the terminal send the signal: send it
    // ourselves, to the whole process group as the terminal would (so a wrapper such as
    // `cargo run` stops too and the shell gets the job back). `kill` needs no unsafe code.
    let stopped = std::process::Command::new("kill").args(["-TSTP", "0"]).status();
    *terminal = ratatui::init();
    let _ = crossterm::execute!(std::io::stdout(), EnableMouseCapture);
    match stopped {
        Ok(status) if status.success() => None,
        Ok(status) => Some(format!("cannot suspend: kill -TSTP failed ({status})")),
        Err(e) => Some(format!("cannot suspend: kill -TSTP could not run ({e})")),
    }
}

async fn event_loop(
    terminal: &mut ratatui::DefaultTerminal,
    app: &mut App,
    executor: &mut Executor,
    mut rx: mpsc::UnboundedReceiver<Action>,
) -> Result<()> {
    let mut events = EventStream::new();
    // SIGTERM ends the UI like `q` does, so the terminal is restored (panics and errors
    // restore through `run`).
    let mut terminate = tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate())?;
    // SIGINT from outside (`kill -INT`; the keyboard's Ctrl-C arrives as a key in raw mode).
    let mut interrupt = tokio::signal::unix::signal(tokio::signal::unix::SignalKind::interrupt())?;
    let size = terminal.size()?;
    update(app, Action::Resize(size.width, size.height));
    if executor.corrections.is_some() {
        executor.execute(Effect::ListCorrections);
    }
    terminal.draw(|f| view::draw(f, app))?;
    let mut last_frame = Instant::now();
    let mut dirty = false;
    // While something is in flight the spinner turns.
    let mut spinner = tokio::time::interval(Duration::from_millis(100));
    spinner.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Skip);
    loop {
        let next_frame = tokio::time::Instant::from_std(last_frame + FRAME);
        let action = tokio::select! {
            event = events.next() => match event {
                Some(Ok(Event::Key(key))) if key.kind == KeyEventKind::Press => Action::Key(key),
                Some(Ok(Event::Mouse(mouse))) => Action::Mouse(mouse),
                Some(Ok(Event::Resize(w, h))) => Action::Resize(w, h),
                Some(Ok(_)) => continue,
                Some(Err(e)) => return Err(e.into()),
                None => return Ok(()),
            },
            Some(action) = rx.recv() => action,
            _ = spinner.tick(), if app.in_flight.is_some() => Action::Tick,
            _ = tokio::time::sleep_until(next_frame), if dirty => {
                terminal.draw(|f| view::draw(f, app))?;
                last_frame = Instant::now();
                dirty = false;
                continue;
            }
            _ = terminate.recv() => return Ok(()),
            _ = interrupt.recv() => return Ok(()),
        };
        for effect in update(app, action) {
            executor.execute(effect);
        }
        if app.quit {
            return Ok(());
        }
        if std::mem::take(&mut app.suspend) {
            if let Some(problem) = suspend(terminal) {
                app.fail(problem);
            }
            update(app, Action::Resize(terminal.size()?.width, terminal.size()?.height));
            terminal.clear()?;
        }
        if last_frame.elapsed() >= FRAME {
            terminal.draw(|f| view::draw(f, app))?;
            last_frame = Instant::now();
            dirty = false;
        } else {
            dirty = true;
        }
    }
}
