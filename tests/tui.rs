//! The terminal UI's `update` driven by key messages (effects performed by the real driver on
//! the demo KG with the demo script), and its screens as `TestBackend` snapshots.

mod common;

use common::demo_driver;
use crossterm::event::{KeyCode, KeyEvent, KeyModifiers};
use ongraph::driver::Driver;
use ongraph::engine::Settings;
use ongraph::engine::beam::{NodeKind, Status};
use ongraph::prompts::Prompts;
use ongraph::tui::app::{Action, App, Bottom, Effect, Focus, update};
use ongraph::tui::view;
use ratatui::Terminal;
use ratatui::backend::TestBackend;
use std::sync::Arc;

const CANBERRA: &str = "What is the majority party now in the country where Canberra is located?";

fn new_app(driver: &Driver) -> App {
    let kg = driver.kg();
    let mut app =
        App::new(Settings::default(), Arc::new(Prompts::builtin()), kg.profile().clone(), kg.name(), "scripted demo");
    app.no_color = true;
    app
}

fn key(code: KeyCode) -> Action {
    Action::Key(KeyEvent::new(code, KeyModifiers::NONE))
}

/// Performs effects the way the executor does, until none are left.
async fn settle(app: &mut App, driver: &Driver, mut effects: Vec<Effect>) {
    while let Some(Effect::Perform { generation, requests }) = effects.pop() {
        let result = driver.perform(&requests).await.map_err(|e| e.to_string());
        effects.extend(update(app, Action::Performed { generation, result }));
    }
}

async fn press(app: &mut App, driver: &Driver, code: KeyCode) {
    let effects = update(app, key(code));
    settle(app, driver, effects).await;
}

async fn ask(app: &mut App, driver: &Driver, question: &str) {
    for c in question.chars() {
        assert!(update(app, key(KeyCode::Char(c))).is_empty(), "typing has no effects");
    }
    press(app, driver, KeyCode::Enter).await;
}

async fn step_until(app: &mut App, driver: &Driver, phase: &str) {
    while app.run.as_ref().is_some_and(|r| r.next_phase() != phase && !r.is_finished()) {
        press(app, driver, KeyCode::Char('n')).await;
    }
}

fn screen(app: &App, width: u16, height: u16) -> String {
    let mut terminal = Terminal::new(TestBackend::new(width, height)).unwrap();
    terminal.draw(|f| view::draw(f, app)).unwrap();
    terminal.backend().to_string()
}

#[tokio::test]
async fn start_screen_and_a_tiny_terminal() {
    let driver = demo_driver("");
    let app = new_app(&driver);
    insta::assert_snapshot!("tui_start_80x24", screen(&app, 80, 24));
    let tiny = screen(&app, 40, 10);
    assert!(tiny.contains("terminal too small: 40×10"), "{tiny}");
}

#[tokio::test]
async fn stepping_shows_the_beam_with_scores() {
    let driver = demo_driver("");
    let mut app = new_app(&driver);
    ask(&mut app, &driver, CANBERRA).await;
    assert_eq!(app.focus, Focus::Tree);
    assert_eq!(app.run.as_ref().unwrap().trace().len(), 1, "Enter takes the first step (topic extraction)");
    step_until(&mut app, &driver, "entity_search").await;
    // The first prune's scores are on screen, kept and pruned relations alike.
    insta::assert_snapshot!("tui_first_prune_120x40", screen(&app, 120, 40));
    insta::assert_snapshot!("tui_first_prune_80x24", screen(&app, 80, 24));
}

#[tokio::test]
async fn run_to_the_answer() {
    let driver = demo_driver("");
    let mut app = new_app(&driver);
    ask(&mut app, &driver, CANBERRA).await;
    press(&mut app, &driver, KeyCode::Char('r')).await;
    let run = app.run.as_ref().unwrap();
    assert_eq!(run.answer().unwrap().answers, vec!["Australian Labor Party"]);
    assert_eq!(app.bottom, Bottom::Answer);
    let text = screen(&app, 120, 40);
    assert!(text.contains("Australian Labor Party"), "{text}");
    assert!(text.contains("from knowledge-graph paths"));
}

#[tokio::test]
async fn overriding_a_prune_from_the_tree() {
    let driver = demo_driver("");
    let mut app = new_app(&driver);
    ask(&mut app, &driver, CANBERRA).await;
    step_until(&mut app, &driver, "entity_search").await;
    // Select the kept `containedby` relation and drop it with `x`.
    let rows = app.visible_rows();
    let run = app.run.as_ref().unwrap();
    let at = rows
        .iter()
        .position(|&(id, _)| matches!(&run.beam().nodes[id].kind, NodeKind::Relation { shown, .. } if shown == "location.location.containedby"))
        .unwrap();
    let id = rows[at].0;
    for _ in 0..at {
        update(&mut app, key(KeyCode::Down));
    }
    assert_eq!(app.selected_node(), Some(id));
    press(&mut app, &driver, KeyCode::Char('x')).await;
    assert_eq!(app.run.as_ref().unwrap().beam().nodes[id].status, Status::PrunedByUser);
    insta::assert_snapshot!("tui_dropped_by_user_80x24", screen(&app, 80, 24));
    press(&mut app, &driver, KeyCode::Char('r')).await;
    let answer = app.run.as_ref().unwrap().answer().unwrap();
    assert!(!answer.paths[0].text.contains("-> location.location.containedby ->"), "{}", answer.paths[0].text);
    // The root cannot be dropped: the error is shown, nothing panics.
    update(&mut app, key(KeyCode::Char('g')));
    update(&mut app, key(KeyCode::Char('x')));
    assert!(app.message.as_deref().unwrap_or_default().starts_with("cannot apply"), "{:?}", app.message);
}

#[tokio::test]
async fn a_cancelled_step_is_ignored_and_rewind_goes_back() {
    let driver = demo_driver("");
    let mut app = new_app(&driver);
    ask(&mut app, &driver, CANBERRA).await;
    let effects = update(&mut app, key(KeyCode::Char('n')));
    assert!(app.in_flight);
    let Some(Effect::Perform { generation, requests }) = effects.into_iter().next() else {
        panic!("a step was asked for")
    };
    update(&mut app, key(KeyCode::Esc));
    assert!(!app.in_flight);
    let before = app.run.as_ref().unwrap().trace().len();
    let result = driver.perform(&requests).await.map_err(|e| e.to_string());
    assert!(update(&mut app, Action::Performed { generation, result }).is_empty());
    assert_eq!(app.run.as_ref().unwrap().trace().len(), before, "the late result was discarded");

    step_until(&mut app, &driver, "entity_prune").await;
    let steps = app.run.as_ref().unwrap().trace().len();
    press(&mut app, &driver, KeyCode::Char('b')).await;
    let run = app.run.as_ref().unwrap();
    assert_eq!(run.trace().len(), steps - 1 + 1, "back one step, plus the rewind entry");
    assert_eq!(run.abandoned().len(), 1);
}

#[tokio::test]
async fn keys_collapse_edit_and_quit() {
    let driver = demo_driver("");
    let mut app = new_app(&driver);
    ask(&mut app, &driver, CANBERRA).await;
    step_until(&mut app, &driver, "relation_prune").await;
    let rows = app.visible_rows().len();
    assert!(rows > 5);
    update(&mut app, key(KeyCode::Char('h')));
    assert_eq!(app.visible_rows().len(), 1, "the topic entity collapsed");
    update(&mut app, key(KeyCode::Char('l')));
    assert_eq!(app.visible_rows().len(), rows);
    update(&mut app, key(KeyCode::Tab));
    assert_eq!(app.bottom, Bottom::Answer);
    update(&mut app, key(KeyCode::Char('e')));
    assert_eq!(app.focus, Focus::Question);
    update(&mut app, key(KeyCode::Char('q')));
    assert!(!app.quit, "q types in the question box");
    update(&mut app, key(KeyCode::Esc));
    update(&mut app, key(KeyCode::Char('q')));
    assert!(app.quit);
}

/// Corrections for tests: a real sled store in a temporary directory, the demo graph seen
/// through it.
struct TempCorrections {
    store: ongraph::overlay::store::SledStore,
    script: &'static str,
}

impl ongraph::tui::Corrections for TempCorrections {
    fn record(&self, drafts: Vec<ongraph::overlay::Draft>) -> anyhow::Result<(Vec<u64>, Driver)> {
        use ongraph::overlay::store::CorrectionStore;
        let ids = drafts.into_iter().map(|d| self.store.add("demo", d).map(|c| c.id)).collect::<Result<Vec<_>, _>>()?;
        let overlay =
            ongraph::overlay::OverlayKg::new(Arc::new(ongraph::kg::load::demo_graph()), &self.store.list("demo")?);
        let model = ongraph::llm::scripted::ScriptedModel::from_toml(
            "t",
            &format!("{}\n{}", self.script, common::DEMO_SCRIPT),
        )?;
        Ok((ids, Driver::new(Arc::new(overlay), Arc::new(model))))
    }
}

#[tokio::test]
async fn flag_a_triple_then_ask_again() {
    const PHANATIC: &str = "Which ballpark hosts spring training for the team whose mascot is the Phillie Phanatic?";
    let dir = tempfile::tempdir().unwrap();
    let corrections: Arc<dyn ongraph::tui::Corrections> = Arc::new(TempCorrections {
        store: ongraph::overlay::store::SledStore::open(&dir.path().join("overlay")).unwrap(),
        script: "",
    });
    let mut driver = Arc::new(demo_driver(""));
    let mut app = new_app(&driver);
    app.author = "tester".into();
    ask(&mut app, &driver, PHANATIC).await;
    press(&mut app, &driver, KeyCode::Char('r')).await;
    assert_eq!(app.run.as_ref().unwrap().answer().unwrap().answers, vec!["Bright House Field"]);

    // Trace the answer to its stadium node and flag the triple that reached it.
    let rows = app.visible_rows();
    let run = app.run.as_ref().unwrap();
    let at = rows.iter().position(|&(id, _)| run.beam().nodes[id].shown() == "Bright House Field").unwrap();
    app.selected = at;
    update(&mut app, key(KeyCode::Char('f')));
    let form = app.flag.clone().expect("the flag form opens");
    assert_eq!(
        form.triple.line(),
        "Philadelphia Phillies, baseball.baseball_team.spring_training_stadium, Bright House Field"
    );
    insta::assert_snapshot!("tui_flag_form_80x24", screen(&app, 80, 24));
    assert!(update(&mut app, key(KeyCode::Enter)).is_empty(), "a reason is required");
    for c in "Renamed in 2021".chars() {
        update(&mut app, key(KeyCode::Char(c)));
    }
    update(&mut app, key(KeyCode::Tab));
    for c in "BayCare Ballpark".chars() {
        update(&mut app, key(KeyCode::Char(c)));
    }
    let effects = update(&mut app, key(KeyCode::Enter));
    let [Effect::Correct { drafts }] = &effects[..] else { panic!("one correction effect: {effects:?}") };
    let ops: Vec<String> = drafts.iter().map(|d| d.op.describe()).collect();
    assert_eq!(
        ops,
        vec![
            "retract m.phillies baseball.baseball_team.spring_training_stadium m.bright_house_field",
            "assert m.phillies baseball.baseball_team.spring_training_stadium new.baycare_ballpark",
            "assert new.baycare_ballpark type.object.name \"BayCare Ballpark\"",
        ]
    );
    assert_eq!(drafts[0].reason, "Renamed in 2021");
    assert_eq!(drafts[0].context.as_ref().unwrap().question.as_deref(), Some(PHANATIC));

    // The executor stores them (durably, in sled) and swaps in a driver that sees them.
    let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel();
    for effect in effects {
        ongraph::tui::execute(effect, &mut driver, &corrections, &tx);
    }
    let corrected = rx.recv().await.unwrap();
    update(&mut app, corrected);
    assert_eq!(app.message.as_deref(), Some("correction 1, 2, 3 recorded; a: ask again with it"));

    // Re-ask: the new answer, and the old one beside it.
    press(&mut app, &driver, KeyCode::Char('a')).await;
    let answer = app.run.as_ref().unwrap().answer().unwrap();
    assert_eq!(answer.answers, vec!["BayCare Ballpark"]);
    assert_eq!(app.message.as_deref(), Some("answer changed: Bright House Field → BayCare Ballpark"));
    let text = screen(&app, 120, 40);
    assert!(text.contains("before the correction: Bright House Field"), "{text}");
    assert!(text.contains("✎"), "facts from corrections are marked in the tree: {text}");
}
