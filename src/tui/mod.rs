//! The terminal UI: one client of the engine (the CLI is another). `app` holds the state and
//! its `update`; `view` draws it; this module runs the loop: terminal events and finished
//! requests come in as actions, effects go out as tokio tasks, so the UI never waits on the
//! network.

pub mod app;
pub mod view;

use crate::driver::Driver;
use crate::overlay::Draft;
use anyhow::Result;
use app::{Action, App, Effect, update};
use crossterm::event::{Event, EventStream, KeyEventKind};
use futures::StreamExt;
use std::sync::Arc;
use tokio::sync::mpsc;

/// Where the UI's corrections go: stored durably, then a driver that sees the KG through them.
/// The CLI provides the real one (the sled store of `--kg`'s scope); tests provide their own.
pub trait Corrections: Send + Sync {
    fn record(&self, drafts: Vec<Draft>) -> Result<(Vec<u64>, Driver)>;
}

/// Runs the UI until the user quits. The terminal is restored on quit, on error and on panic
/// (ratatui's init installs the panic hook).
pub async fn run(mut app: App, driver: Arc<Driver>, corrections: Arc<dyn Corrections>) -> Result<()> {
    let mut terminal = ratatui::init();
    let result = event_loop(&mut terminal, &mut app, driver, corrections).await;
    ratatui::restore();
    result
}

/// Performs one effect in the background; its result comes back as an action on `tx`. A
/// correction also replaces the driver, so later steps see the KG through it.
pub fn execute(
    effect: Effect,
    driver: &mut Arc<Driver>,
    corrections: &Arc<dyn Corrections>,
    tx: &mpsc::UnboundedSender<Action>,
) {
    match effect {
        Effect::Perform { generation, requests } => {
            let (driver, tx) = (driver.clone(), tx.clone());
            tokio::spawn(async move {
                let result = driver.perform(&requests).await.map_err(|e| e.to_string());
                let _ = tx.send(Action::Performed { generation, result });
            });
        }
        Effect::Correct { drafts } => {
            // A durable write is a short blocking call; the next steps must see it, so it is
            // done before anything else is performed.
            match corrections.record(drafts) {
                Ok((ids, new_driver)) => {
                    *driver = Arc::new(new_driver);
                    let _ = tx.send(Action::Corrected(Ok(ids)));
                }
                Err(e) => {
                    let _ = tx.send(Action::Corrected(Err(format!("{e:#}"))));
                }
            }
        }
    }
}

async fn event_loop(
    terminal: &mut ratatui::DefaultTerminal,
    app: &mut App,
    mut driver: Arc<Driver>,
    corrections: Arc<dyn Corrections>,
) -> Result<()> {
    let (tx, mut rx) = mpsc::unbounded_channel::<Action>();
    let mut events = EventStream::new();
    // SIGTERM ends the UI like `q` does, so the terminal is restored (Ctrl-C is a key in raw
    // mode; panics and errors restore through `run`).
    let mut terminate = tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate())?;
    terminal.draw(|f| view::draw(f, app))?;
    loop {
        let action = tokio::select! {
            event = events.next() => match event {
                Some(Ok(Event::Key(key))) if key.kind == KeyEventKind::Press => Action::Key(key),
                Some(Ok(Event::Resize(..))) => Action::Resize,
                Some(Ok(_)) => continue,
                Some(Err(e)) => return Err(e.into()),
                None => return Ok(()),
            },
            Some(action) = rx.recv() => action,
            _ = terminate.recv() => return Ok(()),
        };
        for effect in update(app, action) {
            execute(effect, &mut driver, &corrections, &tx);
        }
        if app.quit {
            return Ok(());
        }
        terminal.draw(|f| view::draw(f, app))?;
    }
}
