//! The terminal UI: one client of the engine (the CLI is another). `app` holds the state and
//! its `update`; `view` draws it; this module runs the loop: terminal events and finished
//! requests come in as actions, effects go out as tokio tasks, so the UI never waits on the
//! network nor on the corrections store (which another process may hold); the screen is redrawn when something changed, at most once per frame interval.

pub mod app;
pub mod component;
pub mod keymap;
pub mod layout;
pub mod modal;
pub mod theme;
pub mod view;

use crate::driver::Driver;
use crate::overlay::Draft;
use crate::session::Session;
pub use crate::workspace::{Corrections, TeamNote};
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

/// Performs effects: KG lookups and LLM calls as tokio tasks, the corrections store's calls off
/// the event loop (another process may hold the store for up to two seconds).
///
/// Ordering: every effect that touches the store (a step's refresh, a correction, an undo, a
/// list, an export) goes, in the order `execute` is called, into one queue that a single worker
/// task handles one at a time, each blocking call on tokio's blocking pool. A step's job reads
/// the store again, installs the driver it gets, says `CorrectionsChanged`, and only then takes
/// the driver and starts the step; a correction's job installs the driver over it before it says
/// `Corrected`. So a step asked for after a write was queued (and so after it was acknowledged)
/// runs through it, and `CorrectionsChanged` is sent before the step's `Performed`. Lookups
/// (pickers, searches) read the installed driver without queueing: they see every write already
/// acknowledged, and never wait for the store.
pub struct Executor {
    /// The driver steps and lookups use (`None` in an offline replay: nothing can be looked up
    /// or asked). Replaced by the store worker only; held just to clone or replace it.
    driver: Arc<std::sync::Mutex<Option<Arc<Driver>>>>,
    corrections: Option<Arc<dyn Corrections>>,
    /// Where asked questions are remembered.
    history: Option<PathBuf>,
    tx: mpsc::UnboundedSender<Action>,
    /// The store worker's queue and the worker, started at the first store effect.
    store: Option<(mpsc::UnboundedSender<StoreJob>, tokio::task::JoinHandle<()>)>,
}

const OFFLINE: &str = "offline replay: no KG or model to ask (replay with --live to branch off)";

/// What the store worker does, in the order the effects came.
enum StoreJob {
    Perform {
        generation: u64,
        requests: Vec<crate::engine::Request>,
        method: crate::engine::MethodId,
    },
    Correct {
        drafts: Vec<Draft>,
    },
    Undo {
        id: u64,
    },
    Review {
        id: u64,
        approve: bool,
    },
    List,
    Export {
        path: Option<PathBuf>,
    },
    Impact {
        corrections: Vec<(u64, crate::overlay::Op)>,
    },
    /// A session saved there: its runs indexed for `fix impact`.
    Saved {
        path: PathBuf,
    },
}

impl Executor {
    /// An executor over `driver` (`None`: an offline replay) and `corrections` (`None`: none can
    /// be made), sending what it finishes to `tx`; asked questions are remembered in `history`.
    pub fn new(
        driver: Option<Arc<Driver>>,
        corrections: Option<Arc<dyn Corrections>>,
        history: Option<PathBuf>,
        tx: mpsc::UnboundedSender<Action>,
    ) -> Self {
        Self { driver: Arc::new(std::sync::Mutex::new(driver)), corrections, history, tx, store: None }
    }

    /// Where corrections go, if they can be made.
    pub fn corrections(&self) -> Option<&Arc<dyn Corrections>> {
        self.corrections.as_ref()
    }

    pub fn execute(&mut self, effect: Effect) {
        let tx = self.tx.clone();
        match effect {
            Effect::Perform { generation, requests, method } => {
                self.queue(StoreJob::Perform { generation, requests, method })
            }
            Effect::Lookup { token, requests } => {
                let Some(driver) = current(&self.driver) else {
                    let _ = tx.send(Action::Looked { token, result: Err(OFFLINE.into()) });
                    return;
                };
                tokio::spawn(async move {
                    let result = driver.perform(&requests).await.map_err(|e| e.to_string());
                    let _ = tx.send(Action::Looked { token, result });
                });
            }
            Effect::Correct { drafts } => self.queue(StoreJob::Correct { drafts }),
            Effect::Undo { id } => self.queue(StoreJob::Undo { id }),
            Effect::Review { id, approve } => self.queue(StoreJob::Review { id, approve }),
            Effect::ListCorrections => self.queue(StoreJob::List),
            Effect::Impact { corrections } => self.queue(StoreJob::Impact { corrections }),
            // Beside the store's queue: it asks the model, and steps must not wait for it.
            Effect::RerunImpact { correction } => match self.corrections.clone() {
                Some(corrections) => {
                    tokio::spawn(async move {
                        let result = blocking(&corrections, move |c| c.rerun_impact(&correction)).await;
                        let _ = tx.send(Action::Reran(result.map_err(|e| format!("{e:#}"))));
                    });
                }
                None => {
                    let _ = tx.send(Action::Reran(Err(OFFLINE.into())));
                }
            },
            Effect::Export { path } => self.queue(StoreJob::Export { path }),
            Effect::Save { path, session } => {
                let path =
                    path.unwrap_or_else(|| crate::session::default_dir().join(crate::session::file_name(&session)));
                // A session that would not replay is refused now, with the reason, rather
                // than reported saved and found broken at `replay --check`.
                let result = session
                    .check_replays(crate::engine::Registry::program())
                    .and_then(|()| session.save(&path))
                    .map(|()| path)
                    .map_err(|e| e.to_string());
                if let Ok(path) = &result {
                    self.queue(StoreJob::Saved { path: path.clone() });
                }
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

    /// Hands `job` to the store worker, starting it the first time. Without a store, a step is
    /// performed at once (nothing can change its driver) and the rest cannot be done.
    fn queue(&mut self, job: StoreJob) {
        let Some(corrections) = self.corrections.clone() else {
            let _ = match job {
                StoreJob::Perform { generation, requests, method } => {
                    perform(current(&self.driver), generation, requests, method, self.tx.clone());
                    return;
                }
                StoreJob::Correct { .. } => self.tx.send(Action::Corrected(Err(OFFLINE.into()))),
                StoreJob::Undo { .. } => self.tx.send(Action::Undone(Err(OFFLINE.into()))),
                StoreJob::Review { .. } => self.tx.send(Action::Reviewed(Err(OFFLINE.into()))),
                StoreJob::List => self.tx.send(Action::Listed(Err(OFFLINE.into()))),
                StoreJob::Export { .. } => self.tx.send(Action::Exported(Err(OFFLINE.into()))),
                StoreJob::Impact { .. } => self.tx.send(Action::Impacts(Err(OFFLINE.into()))),
                StoreJob::Saved { .. } => Ok(()),
            };
            return;
        };
        let (queue, _) = self.store.get_or_insert_with(|| {
            let (queue, jobs) = mpsc::unbounded_channel();
            let worker = tokio::spawn(store_worker(corrections, self.driver.clone(), self.tx.clone(), jobs));
            (queue, worker)
        });
        // The worker ends only when this queue is closed (`finish`), or if it panicked: the
        // job's answer then never comes, which the log says.
        if queue.send(job).is_err() {
            tracing::error!("the corrections store's worker has stopped: an effect was dropped");
        }
    }

    /// Waits for the store effects already asked for (a correction queued just before quitting
    /// is still written), then lets the worker end.
    pub async fn finish(mut self) {
        if let Some((queue, worker)) = self.store.take() {
            drop(queue);
            if let Err(e) = worker.await {
                tracing::error!("the corrections store's worker failed: {e}");
            }
        }
    }
}

/// The driver installed now.
fn current(slot: &std::sync::Mutex<Option<Arc<Driver>>>) -> Option<Arc<Driver>> {
    slot.lock().unwrap_or_else(std::sync::PoisonError::into_inner).clone()
}

fn install(slot: &std::sync::Mutex<Option<Arc<Driver>>>, driver: Driver) {
    *slot.lock().unwrap_or_else(std::sync::PoisonError::into_inner) = Some(Arc::new(driver));
}

/// Performs a step's requests as a task; answers with `Action::Performed`, an error said as
/// `method`'s (the run's).
fn perform(
    driver: Option<Arc<Driver>>,
    generation: u64,
    requests: Vec<crate::engine::Request>,
    method: crate::engine::MethodId,
    tx: mpsc::UnboundedSender<Action>,
) {
    let Some(driver) = driver else {
        let _ = tx.send(Action::Performed { generation, result: Err(OFFLINE.into()), elapsed_ms: 0 });
        return;
    };
    tokio::spawn(async move {
        let started = Instant::now();
        let result = driver.perform(&requests).await.map_err(|e| e.asked_by(method.label()).to_string());
        let elapsed_ms = started.elapsed().as_millis() as u64;
        let _ = tx.send(Action::Performed { generation, result, elapsed_ms });
    });
}

/// Runs one blocking call on the store on tokio's blocking pool.
async fn blocking<T: Send + 'static>(
    corrections: &Arc<dyn Corrections>,
    call: impl FnOnce(&dyn Corrections) -> Result<T> + Send + 'static,
) -> Result<T> {
    let corrections = corrections.clone();
    tokio::task::spawn_blocking(move || call(corrections.as_ref()))
        .await
        .unwrap_or_else(|e| Err(anyhow::anyhow!("the corrections store's call failed: {e}")))
}

/// The store worker: the jobs one at a time, in order (see [`Executor`]).
async fn store_worker(
    corrections: Arc<dyn Corrections>,
    driver: Arc<std::sync::Mutex<Option<Arc<Driver>>>>,
    tx: mpsc::UnboundedSender<Action>,
    mut jobs: mpsc::UnboundedReceiver<StoreJob>,
) {
    while let Some(job) = jobs.recv().await {
        // After the UI quit (`finish`), only writes and exports are still wanted.
        if jobs.is_closed() && matches!(job, StoreJob::Perform { .. } | StoreJob::List) {
            continue;
        }
        match job {
            StoreJob::Perform { generation, requests, method } => {
                // Teammates' records first (with a short timeout, backing off while the
                // server is down), so this step sees them.
                if let Ok(Some(note)) = blocking(&corrections, |c| Ok(c.sync())).await {
                    let _ = tx.send(Action::Shared(note));
                }
                // A driver over the store as another process left it, said before the step's
                // own answer.
                let changed = match blocking(&corrections, |c| c.refresh()).await {
                    Ok(None) => None,
                    Ok(Some((fresh, list))) => {
                        install(&driver, fresh);
                        Some(Ok(list))
                    }
                    Err(e) => {
                        tracing::warn!("cannot read the corrections again: {e:#}");
                        Some(Err(format!("{e:#}")))
                    }
                };
                if let Some(changed) = changed {
                    let _ = tx.send(Action::CorrectionsChanged(changed));
                }
                perform(current(&driver), generation, requests, method, tx.clone());
            }
            StoreJob::Correct { drafts } => {
                let result = blocking(&corrections, move |c| c.record(drafts)).await.map(|(ids, fresh)| {
                    install(&driver, fresh);
                    ids
                });
                let _ = tx.send(Action::Corrected(result.map_err(|e| format!("{e:#}"))));
            }
            StoreJob::Undo { id } => {
                let result = blocking(&corrections, move |c| c.undo(id)).await.map(|fresh| {
                    install(&driver, fresh);
                    id
                });
                let _ = tx.send(Action::Undone(result.map_err(|e| format!("{e:#}"))));
            }
            StoreJob::Review { id, approve } => {
                let result = blocking(&corrections, move |c| c.review(id, approve)).await.map(|fresh| {
                    install(&driver, fresh);
                    (id, approve)
                });
                let _ = tx.send(Action::Reviewed(result.map_err(|e| format!("{e:#}"))));
            }
            StoreJob::List => {
                let result = blocking(&corrections, |c| c.list()).await;
                let _ = tx.send(Action::Listed(result.map_err(|e| format!("{e:#}"))));
            }
            StoreJob::Export { path } => {
                let result = blocking(&corrections, move |c| c.export(path.as_deref())).await;
                let _ = tx.send(Action::Exported(result.map_err(|e| format!("{e:#}"))));
            }
            StoreJob::Impact { corrections: asked } => {
                let result = blocking(&corrections, move |c| c.impact(&asked)).await;
                let _ = tx.send(Action::Impacts(result.map_err(|e| format!("{e:#}"))));
            }
            StoreJob::Saved { path } => {
                let _ = blocking(&corrections, move |c| {
                    c.saved(&path);
                    Ok(())
                })
                .await;
            }
        }
    }
}

/// How many questions the history keeps.
const HISTORY: usize = 200;

/// The questions asked before, oldest first (one JSON string per line: questions may span
/// lines). A missing or unreadable file is an empty history.
pub fn load_history(path: &Path) -> Vec<String> {
    let Ok(text) = crate::text_file::read(path) else { return Vec::new() };
    let all: Vec<String> = text.lines().filter_map(|l| serde_json::from_str(l).ok()).collect();
    all[all.len().saturating_sub(HISTORY)..].to_vec()
}

fn remember(path: &Path, question: &str) -> std::io::Result<()> {
    use std::io::Write;
    if let Some(dir) = path.parent() {
        std::fs::create_dir_all(dir)?;
    }
    let mut file = std::fs::OpenOptions::new().create(true).append(true).open(path)?;
    let line = crate::safe_text::json::to_string(question).map_err(std::io::Error::other)?;
    writeln!(file, "{line}")
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
    executor.finish().await;
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
    if executor.corrections().is_some() {
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
