//! The terminal UI: one client of the engine (the CLI is another). `app` holds the state and
//! its `update`; `view` draws it; this module runs the loop: terminal events and finished
//! requests come in as actions, effects go out as tokio tasks, so the UI never waits on the
//! network.

pub mod app;
pub mod view;

use crate::driver::Driver;
use anyhow::Result;
use app::{Action, App, Effect, update};
use crossterm::event::{Event, EventStream, KeyEventKind};
use futures::StreamExt;
use std::sync::Arc;
use tokio::sync::mpsc;

/// Runs the UI until the user quits. The terminal is restored on quit, on error and on panic
/// (ratatui's init installs the panic hook).
pub async fn run(mut app: App, driver: Arc<Driver>) -> Result<()> {
    let mut terminal = ratatui::init();
    let result = event_loop(&mut terminal, &mut app, driver).await;
    ratatui::restore();
    result
}

async fn event_loop(terminal: &mut ratatui::DefaultTerminal, app: &mut App, driver: Arc<Driver>) -> Result<()> {
    let (tx, mut rx) = mpsc::unbounded_channel::<Action>();
    let mut events = EventStream::new();
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
        };
        for effect in update(app, action) {
            match effect {
                Effect::Perform { generation, requests } => {
                    let (driver, tx) = (driver.clone(), tx.clone());
                    tokio::spawn(async move {
                        let result = driver.perform(&requests).await.map_err(|e| e.to_string());
                        let _ = tx.send(Action::Performed { generation, result });
                    });
                }
            }
        }
        if app.quit {
            return Ok(());
        }
        terminal.draw(|f| view::draw(f, app))?;
    }
}
