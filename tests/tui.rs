//! The terminal UI's `update` driven by key messages, with effects performed by the real
//! executor (the demo KG and script, corrections in a temporary sled store), and its screens as
//! `TestBackend` snapshots.

mod common;

use common::demo_driver;
use crossterm::event::{KeyCode, KeyEvent, KeyModifiers, MouseButton, MouseEvent, MouseEventKind};
use ongraph::engine::Settings;
use ongraph::engine::beam::{NodeKind, Status};
use ongraph::engine::events::EventKind;
use ongraph::testing::driver::Driver;
use ongraph::testing::overlay::{CorrectionStore, SledStore};
use ongraph::testing::session::{Session, SessionError};
use ongraph::testing::tui::{Action, App, Bottom, Corrections, Effect, Executor, Focus, update, view};
use ratatui::Terminal;
use ratatui::backend::TestBackend;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use tokio::sync::mpsc;

const CANBERRA: &str = "What is the majority party now in the country where Canberra is located?";
const PHANATIC: &str = "Which ballpark hosts spring training for the team whose mascot is the Phillie Phanatic?";
const GIANTS_RANGERS: &str = "Which World Series did the San Francisco Giants win against the Texas Rangers?";
const APPLE: &str = "In which time zone is the headquarters of Apple Inc.?";

/// GoG's incomplete-KG demo: Cupertino's time zone hidden (as `sessions/demo-ikg.tsv` leaves it out).
fn ikg_hidden() -> Vec<(String, String, ongraph::kg::Term)> {
    vec![(
        "m.cupertino".to_string(),
        "location.location.time_zones".to_string(),
        ongraph::kg::Term::Entity("m.pacific_tz".into()),
    )]
}

/// Corrections for tests: a real sled store in a temporary directory, the demo graph seen
/// through it.
struct TempCorrections {
    store: SledStore,
    /// A scenario: triples hidden from the graph.
    hidden: Vec<(String, String, ongraph::kg::Term)>,
}

impl TempCorrections {
    fn driver(&self) -> anyhow::Result<Driver> {
        let overlay = ongraph::testing::overlay::OverlayKg::new(
            Arc::new(ongraph::testing::kg::demo_graph()),
            &self.store.list("demo")?,
        )
        .with_hidden(&self.hidden);
        let model = ongraph::testing::llm::ScriptedModel::from_toml("t", common::DEMO_SCRIPT)?;
        Ok(Driver::new(Arc::new(overlay), Arc::new(model)))
    }
}

impl Corrections for TempCorrections {
    fn record(&self, drafts: Vec<ongraph::testing::overlay::Draft>) -> anyhow::Result<(Vec<u64>, Driver)> {
        let ids = drafts.into_iter().map(|d| self.store.add("demo", d).map(|c| c.id)).collect::<Result<Vec<_>, _>>()?;
        Ok((ids, self.driver()?))
    }
    fn undo(&self, id: u64) -> anyhow::Result<Driver> {
        self.store.undo("demo", id)?;
        self.driver()
    }
    fn list(&self) -> anyhow::Result<Vec<ongraph::testing::overlay::Correction>> {
        Ok(self.store.list("demo")?)
    }
    fn export(&self, path: Option<&Path>) -> anyhow::Result<(PathBuf, usize)> {
        let path = path.unwrap().to_path_buf();
        let list = self.list()?;
        std::fs::write(&path, serde_json::to_string(&list)?)?;
        Ok((path, list.len()))
    }
}

/// An app and a real executor over the demo KG, with corrections in a temporary sled store.
struct Ui {
    app: App,
    executor: Executor,
    rx: mpsc::UnboundedReceiver<Action>,
    _dir: tempfile::TempDir,
}

impl Ui {
    fn new() -> Self {
        Self::with(Settings::default(), Vec::new())
    }

    fn with(settings: Settings, hidden: Vec<(String, String, ongraph::kg::Term)>) -> Self {
        let dir = tempfile::tempdir().unwrap();
        let corrections = TempCorrections { store: SledStore::open(&dir.path().join("overlay")).unwrap(), hidden };
        let driver = corrections.driver().unwrap();
        Self::over(settings, Arc::new(corrections), driver, dir)
    }

    /// The UI over `corrections`, starting with `driver`.
    fn over(settings: Settings, corrections: Arc<dyn Corrections>, driver: Driver, dir: tempfile::TempDir) -> Self {
        let kg = driver.kg().clone();
        let mut app = App::new(
            settings,
            Arc::new(ongraph::engine::builtin_prompts()),
            kg.profile().clone(),
            kg.name(),
            "scripted demo",
        );
        app.set_plain(true);
        app.author = "tester".into();
        let (tx, rx) = mpsc::unbounded_channel();
        let executor = Executor::new(Some(Arc::new(driver)), Some(corrections), Some(dir.path().join("history")), tx);
        Self { app, executor, rx, _dir: dir }
    }

    /// Performs effects as the UI's loop does, until none are left.
    async fn settle(&mut self, effects: Vec<Effect>) {
        let mut waiting = 0;
        for effect in effects {
            waiting += usize::from(!matches!(effect, Effect::Remember { .. }));
            self.executor.execute(effect);
        }
        while waiting > 0 {
            let action = self.rx.recv().await.unwrap();
            // Sent before a step's own answer when the store changed, not instead of it.
            waiting -= usize::from(!matches!(action, Action::CorrectionsChanged(_)));
            for effect in update(&mut self.app, action) {
                waiting += usize::from(!matches!(effect, Effect::Remember { .. }));
                self.executor.execute(effect);
            }
        }
    }

    async fn press(&mut self, code: KeyCode) {
        self.press_with(code, KeyModifiers::NONE).await;
    }

    async fn press_with(&mut self, code: KeyCode, modifiers: KeyModifiers) {
        let effects = update(&mut self.app, Action::Key(KeyEvent::new(code, modifiers)));
        self.settle(effects).await;
    }

    async fn typed(&mut self, text: &str) {
        for c in text.chars() {
            self.press(KeyCode::Char(c)).await;
        }
    }

    async fn ask(&mut self, question: &str) {
        self.typed(question).await;
        self.press(KeyCode::Enter).await;
    }

    async fn step_until(&mut self, phase: &str) {
        while self.app.run.as_ref().is_some_and(|r| r.next_phase() != phase && !r.is_finished()) {
            self.press(KeyCode::Char('n')).await;
        }
    }

    fn run(&self) -> &ongraph::engine::Run {
        self.app.run.as_ref().unwrap()
    }

    /// Selects the first tree row whose node is shown as `shown`.
    fn select(&mut self, shown: &str) {
        let rows = self.app.visible_rows();
        let at = rows
            .iter()
            .position(|r| self.app.node(r.node).is_some_and(|n| n.shown() == shown))
            .unwrap_or_else(|| panic!("{shown} is not in the tree"));
        self.app.focus = Focus::Tree;
        self.app.selected = at;
    }

    fn screen(&self, width: u16, height: u16) -> String {
        screen(&self.app, width, height)
    }

    /// Answers the Phanatic question and opens the flag form on the stadium's triple with
    /// `reason` typed; the cursor is left in the right-object field.
    async fn flag_the_stadium(&mut self, reason: &str) {
        self.ask(PHANATIC).await;
        self.press(KeyCode::Char('r')).await;
        self.select("Bright House Field");
        self.press(KeyCode::Char('f')).await;
        self.typed(reason).await;
        self.press(KeyCode::Tab).await;
    }
}

fn screen(app: &App, width: u16, height: u16) -> String {
    let mut terminal = Terminal::new(TestBackend::new(width, height)).unwrap();
    terminal.draw(|f| view::draw(f, app)).unwrap();
    without_step_times(&terminal.backend().to_string())
}

/// A step's time is wall time: on a busy machine the demo's step takes 1 ms where an idle one
/// takes 0. Snapshots show it as `N ms`, the rest of the line up to the pane's border as it
/// was (padded to the same width), so that they do not depend on the machine's load.
fn without_step_times(screen: &str) -> String {
    let times = regex::Regex::new(r"\d+ ms( · [^│\n]*)│").expect("a valid pattern");
    times
        .replace_all(screen, |c: &regex::Captures<'_>| {
            let width = c[0].chars().count();
            let shown = format!("N ms{}", c[1].trim_end());
            format!("{shown:<0$}│", width - 1)
        })
        .into_owned()
}

fn key(code: KeyCode) -> Action {
    Action::Key(KeyEvent::new(code, KeyModifiers::NONE))
}

#[test]
fn step_times_are_left_out_of_what_snapshots_compare() {
    let idle = "│step 3 · 0 ms · depth 1     │ x │";
    let busy = "│step 3 · 12 ms · depth 1    │ x │";
    assert_eq!(without_step_times(idle), without_step_times(busy));
    assert_eq!(without_step_times(idle), "│step 3 · N ms · depth 1     │ x │");
    assert_eq!(without_step_times("│no time here │"), "│no time here │");
}

#[tokio::test]
async fn start_screen_help_and_a_tiny_terminal() {
    let mut ui = Ui::new();
    insta::assert_snapshot!("tui_start_80x24", ui.screen(80, 24));
    // The way out of the box (to ? and q) is in its title at 80 columns, not cut off.
    assert!(ui.screen(80, 24).lines().next().unwrap().contains("esc: back)"), "{}", ui.screen(80, 24));
    assert!(ui.screen(120, 40).lines().next().unwrap().contains("ctrl-u: clear · esc: back)"));
    insta::assert_snapshot!("tui_start_120x40", ui.screen(120, 40));
    let tiny = ui.screen(40, 10);
    assert!(tiny.contains("terminal too small: 40×10"), "{tiny}");

    // `?` is text in the question box; from the tree it opens the help for the tree.
    ui.ask(CANBERRA).await;
    ui.press(KeyCode::Char('?')).await;
    assert!(ui.app.help);
    let help = ui.screen(120, 40);
    assert!(help.contains("Keys in the beam tree"), "{help}");
    assert!(help.contains("keep a pruned candidate"), "the tree's own keys are listed: {help}");
    insta::assert_snapshot!("tui_help_120x40", help);
    insta::assert_snapshot!("tui_help_80x24", ui.screen(80, 24));
    // A description too long for 80 columns goes on under itself, the keys a column apart.
    let narrow = ui.screen(80, 24);
    assert!(narrow.contains("│                  (fuzzy-picked from the KG)"), "{narrow}");
    ui.press(KeyCode::Char('j')).await;
    assert!(ui.app.help && ui.app.help_scroll > 0, "j scrolls the help");
    ui.press(KeyCode::Char('x')).await;
    assert!(!ui.app.help, "any key closes the help");
    assert_eq!(ui.run().trace().len(), 1, "…and does nothing else");

    // The help follows the focused pane and the live keymap.
    ui.app.keymap = ongraph::testing::tui::Keymap::with_overrides(&std::collections::BTreeMap::from([(
        "undo".to_string(),
        vec!["delete".to_string()],
    )]))
    .unwrap();
    ui.press(KeyCode::BackTab).await;
    assert_eq!(ui.app.focus, Focus::Messages);
    ui.press(KeyCode::BackTab).await;
    assert_eq!(ui.app.focus, Focus::Corrections);
    ui.press(KeyCode::Char('?')).await;
    let help = ui.screen(120, 40);
    assert!(
        help.contains("Keys in the corrections") && help.contains("delete  undo the selected correction"),
        "{help}"
    );
}

#[tokio::test]
async fn stepping_shows_the_beam_with_scores() {
    let mut ui = Ui::new();
    ui.ask(CANBERRA).await;
    assert_eq!(ui.app.focus, Focus::Tree);
    assert_eq!(ui.run().trace().len(), 1, "enter takes the first step (topic extraction)");
    ui.step_until("entity_search").await;
    // The first prune's scores are on screen, kept and pruned relations alike.
    insta::assert_snapshot!("tui_first_prune_120x40", ui.screen(120, 40));
    insta::assert_snapshot!("tui_first_prune_80x24", ui.screen(80, 24));
    // The transcript: every call with its parse, reply and prompt (Tab: the inspector, then it).
    ui.press(KeyCode::Tab).await;
    assert_eq!(ui.app.focus, Focus::Inspector);
    ui.press(KeyCode::Tab).await;
    assert_eq!((ui.app.focus, ui.app.bottom), (Focus::Transcript, Bottom::Transcript));
    ui.press(KeyCode::Char('G')).await;
    let text = ui.screen(120, 40);
    assert!(text.contains("parsed: "), "{text}");
    insta::assert_snapshot!("tui_transcript_120x40", text);
    insta::assert_snapshot!("tui_transcript_80x24", ui.screen(80, 24));
}

#[tokio::test]
async fn run_to_the_answer_and_trace_it_back() {
    let mut ui = Ui::new();
    ui.ask(CANBERRA).await;
    ui.press(KeyCode::Char('r')).await;
    assert_eq!(ui.run().answer().unwrap().answers, vec!["Australian Labor Party"]);
    assert_eq!(ui.app.bottom, Bottom::Answer);
    // `t` selects the leaf of the first supporting path and marks the path.
    ui.press(KeyCode::Char('t')).await;
    let leaf = ui.run().answer().unwrap().paths[0].leaf;
    assert_eq!(ui.app.selected_node(), Some(leaf));
    let text = ui.screen(120, 40);
    assert!(text.contains("»"), "the path behind the answer is marked: {text}");
    assert!(text.contains("path 1/"), "{text}");
    insta::assert_snapshot!("tui_answer_traced_120x40", text);
    insta::assert_snapshot!("tui_answer_traced_80x24", ui.screen(80, 24));
}

/// Regression: at 60×20, tracing the answer's second path scrolled the answer itself out of
/// the pane ("House Field" showed where "Bright House Field" should).
#[tokio::test]
async fn the_answer_stays_in_view_whatever_path_is_traced_on_a_small_screen() {
    let mut ui = Ui::new();
    ui.ask(PHANATIC).await;
    ui.press(KeyCode::Char('r')).await;
    assert_eq!(ui.run().answer().unwrap().answers, vec!["Bright House Field"]);
    for traced in 1..=3 {
        ui.press(KeyCode::Char('t')).await;
        let text = ui.screen(60, 20);
        let pane = &text[text.find("┌ Answer").expect(&text)..];
        let first = pane.lines().nth(1).expect(&text);
        assert!(
            first.trim_start_matches('"').starts_with("│Bright House Field "),
            "after t ×{traced}, the answer heads the pane: {text}"
        );
        assert!(pane.contains('»'), "after t ×{traced}, the traced path is in view too: {text}");
    }
}

#[tokio::test]
async fn the_answer_pane_heads_the_routes_merged_into_a_paths_slot() {
    let mut ui = Ui::new();
    ui.ask(PHANATIC).await;
    ui.press(KeyCode::Char('r')).await;
    let answer = ui.run().answer().unwrap();
    let last = answer.paths.last().unwrap();
    assert!(ui.run().beam().merged_into(last.leaf).is_some(), "{}", last.text);
    // The paths on the beam, those naming the answer first, then, headed, the route merged
    // into the team's slot: the pane scrolls to the selected path, the last.
    let paths = answer.paths.len();
    for _ in 0..4 {
        if ui.app.focus != Focus::Answer {
            ui.press(KeyCode::Tab).await;
        }
    }
    assert_eq!(ui.app.focus, Focus::Answer);
    ui.press(KeyCode::End).await;
    assert_eq!(ui.app.answer_at, paths - 1);
    let text = ui.screen(120, 40);
    let heading = text.find("│Other routes to entities on these paths (merged into them):").expect(&text);
    assert!(text.find("[0.035]").unwrap() < heading, "{text}");
}

#[tokio::test]
async fn overriding_pinning_and_adding_from_the_tree() {
    let mut ui = Ui::new();
    ui.ask(CANBERRA).await;
    ui.step_until("entity_search").await;
    // Drop the kept `containedby` relation with `x`.
    ui.select("location.location.containedby");
    let id = ui.app.selected_node().unwrap();
    ui.press(KeyCode::Char('x')).await;
    assert_eq!(ui.run().beam().nodes[id].status, Status::PrunedByUser);
    insta::assert_snapshot!("tui_dropped_by_user_80x24", ui.screen(80, 24));
    insta::assert_snapshot!("tui_dropped_by_user_120x40", ui.screen(120, 40));
    // Keep it again, then pin it.
    ui.press(KeyCode::Char('x')).await;
    ui.press(KeyCode::Char('p')).await;
    assert_eq!(ui.run().beam().nodes[id].status, Status::PinnedByUser);
    insta::assert_snapshot!("tui_pinned_120x40", ui.screen(120, 40));
    insta::assert_snapshot!("tui_pinned_80x24", ui.screen(80, 24));

    // Bring in a relation the model did not choose, picked from the KG's real candidates with
    // fuzzy search.
    ui.press(KeyCode::Char('g')).await;
    ui.press(KeyCode::Char('+')).await;
    let picker = ui.app.picker.as_ref().expect("the picker opens");
    assert!(!picker.loading && !picker.items.is_empty(), "{picker:?}");
    ui.typed("timezon").await;
    let chosen = ui.app.picker.as_ref().unwrap().chosen().unwrap().clone();
    assert!(chosen.text.contains("time_zones") && chosen.detail.starts_with("-> "), "{chosen:?}");
    insta::assert_snapshot!("tui_picker_80x24", ui.screen(80, 24));
    ui.press(KeyCode::Enter).await;
    assert!(ui.app.picker.is_none());
    let zones = ui
        .run()
        .beam()
        .nodes
        .iter()
        .find(|n| matches!(&n.kind, NodeKind::Relation { relation, .. } if relation.contains("time_zones")))
        .expect("the relation is in the tree");
    assert!(zones.status.is_live(), "{:?}: {:?}", zones.status, ui.app.message);

    // The root cannot be dropped: the error is shown, nothing panics.
    ui.press(KeyCode::Char('g')).await;
    ui.press(KeyCode::Char('x')).await;
    assert!(
        ui.app.message.as_deref().unwrap_or_default().starts_with("cannot drop Canberra now: only the candidates"),
        "{:?}",
        ui.app.message
    );

    // Asked again, the run starts over through the corrections: the steering above is not
    // made again, and the UI says so.
    let steered = ui.run().trace().iter().filter(|e| matches!(e.kind, EventKind::Override { .. })).count();
    assert!(steered >= 2, "{steered}");
    ui.press(KeyCode::Char('a')).await;
    let said = ui.app.messages.iter().map(|m| m.text.as_str()).collect::<Vec<_>>().join("\n");
    assert!(
        said.contains(&format!("your {steered} changes to the last run (prune, keep, pin…) not made again")),
        "{said}"
    );
}

#[tokio::test]
async fn a_cancelled_step_is_ignored_and_going_back_keeps_the_old_branch_in_view() {
    let mut ui = Ui::new();
    ui.ask(CANBERRA).await;
    let effects = update(&mut ui.app, key(KeyCode::Char('n')));
    assert!(ui.app.in_flight.is_some());
    let Some(Effect::Perform { generation, requests, .. }) = effects.into_iter().next() else {
        panic!("a step was asked for")
    };
    update(&mut ui.app, key(KeyCode::Esc));
    assert!(ui.app.in_flight.is_none());
    let before = ui.run().trace().len();
    let result = demo_driver("").perform(&requests).await.map_err(|e| e.to_string());
    assert!(update(&mut ui.app, Action::Performed { generation, result, elapsed_ms: 1 }).is_empty());
    assert_eq!(ui.run().trace().len(), before, "the late result was discarded");

    ui.step_until("entity_prune").await;
    let rows_before = ui.app.visible_rows().len();
    let steps = ui.run().trace().len();
    ui.press(KeyCode::Char('b')).await;
    assert_eq!(ui.run().trace().len(), steps - 1 + 1, "back one step, plus the rewind entry");
    assert_eq!(ui.run().abandoned().len(), 1);
    // The set-aside nodes stay in the tree, marked, until cleared.
    let rows = ui.app.visible_rows();
    assert_eq!(rows.len(), rows_before, "the abandoned entity candidates are still shown");
    assert!(rows.iter().any(|r| r.node.branch == Some(0)));
    assert!(ui.screen(120, 40).contains("↶"));
    // Going on grows a new branch beside the old one.
    ui.press(KeyCode::Char('n')).await;
    assert!(ui.app.visible_rows().iter().filter(|r| r.node.branch.is_none()).count() > rows_before / 2);
    ui.press(KeyCode::Char('B')).await;
    assert!(ui.app.visible_rows().iter().all(|r| r.node.branch.is_none()));

    // From the transcript, enter goes back to any step.
    ui.press(KeyCode::Tab).await;
    ui.press(KeyCode::Tab).await;
    ui.press(KeyCode::Char('g')).await;
    ui.press(KeyCode::Char('j')).await;
    ui.press(KeyCode::Enter).await;
    assert_eq!(ui.run().next_phase(), "relation_search", "{:?}", ui.app.message);
    assert_eq!(ui.run().abandoned().len(), 2);
}

#[tokio::test]
async fn fuzzy_search_finds_nodes_and_n_jumps() {
    let mut ui = Ui::new();
    ui.ask(CANBERRA).await;
    ui.step_until("entity_search").await;
    ui.press(KeyCode::Char('/')).await;
    ui.typed("cntainedby").await;
    let matches = ui.app.search.as_ref().unwrap().matches.clone();
    assert!(!matches.is_empty(), "fuzzy: a letter missing still matches");
    ui.press(KeyCode::Enter).await;
    let first = ui.app.selected_node().unwrap();
    assert_eq!(first, matches[0]);
    assert!(ui.run().beam().nodes[first].shown().contains("containedby"));
    assert!(ui.app.message.as_deref().unwrap().contains("match 1/"), "{:?}", ui.app.message);
    // While the search is on, n goes to the next match instead of stepping.
    let steps = ui.run().trace().len();
    ui.press(KeyCode::Char('n')).await;
    assert_eq!(ui.run().trace().len(), steps);
    if matches.len() > 1 {
        assert_eq!(ui.app.selected_node(), Some(matches[1]));
    }
    ui.press(KeyCode::Char('N')).await;
    assert_eq!(ui.app.selected_node(), Some(matches[0]));
    ui.press(KeyCode::Esc).await;
    assert!(ui.app.search.is_none());
    ui.press(KeyCode::Char('n')).await;
    assert_eq!(ui.run().trace().len(), steps + 1, "after esc, n steps again");
}

#[tokio::test]
async fn question_history_palette_and_themes() {
    let mut ui = Ui::new();
    ui.app.themes = ongraph::testing::tui::theme::load_all(None).0;
    ui.ask("Where is Canberra?").await;
    // A multi-line question (alt-enter), then the history brings the first back.
    ui.press(KeyCode::Char('i')).await;
    ui.press_with(KeyCode::Char('u'), KeyModifiers::CONTROL).await;
    ui.typed("Line one").await;
    ui.press_with(KeyCode::Enter, KeyModifiers::ALT).await;
    ui.typed("line two").await;
    assert_eq!(ui.app.question(), "Line one\nline two", "ctrl-u cleared the old question");
    ui.press(KeyCode::Up).await; // moves within the text first
    ui.press(KeyCode::Up).await;
    assert_eq!(ui.app.question(), "Where is Canberra?");
    ui.press(KeyCode::Esc).await;
    // The palette runs commands by name, with arguments.
    ui.press(KeyCode::Char(':')).await;
    ui.typed("theme light").await;
    ui.press(KeyCode::Enter).await;
    assert_eq!(ui.app.theme.name, "light");
    ui.press(KeyCode::Char(':')).await;
    ui.typed("method").await;
    insta::assert_snapshot!("tui_palette_80x24", ui.screen(80, 24));
    ui.press(KeyCode::Enter).await;
    assert_eq!(ui.app.settings.method, ongraph::engine::MethodId::TOG_R);
    ui.press(KeyCode::Char(':')).await;
    ui.typed("no-such-thing").await;
    ui.press(KeyCode::Enter).await;
    // It names what was typed and where the commands are listed (`?` lists keys, not these).
    assert_eq!(
        ui.app.message.as_deref(),
        Some("no command \"no-such-thing\": the palette (:) lists every command as you type")
    );
    ui.press(KeyCode::Char(':')).await;
    ui.typed("method togg").await;
    ui.press(KeyCode::Enter).await;
    assert!(
        ui.app.message.as_deref().unwrap().starts_with("no method \"togg\" (methods: tog, "),
        "{:?}",
        ui.app.message
    );
    // The asked question went to the history file.
    assert_eq!(ongraph::testing::tui::load_history(&ui._dir.path().join("history")), vec!["Where is Canberra?"]);
}

#[tokio::test]
async fn the_mouse_selects_scrolls_and_folds() {
    let mut ui = Ui::new();
    ui.ask(CANBERRA).await;
    ui.step_until("entity_search").await;
    update(&mut ui.app, Action::Resize(120, 40));
    let tree = ui.app.areas().tree;
    let click = |row: u16| {
        Action::Mouse(MouseEvent {
            kind: MouseEventKind::Down(MouseButton::Left),
            column: tree.x + 4,
            row: tree.y + 1 + row,
            modifiers: KeyModifiers::NONE,
        })
    };
    update(&mut ui.app, click(2));
    assert_eq!(ui.app.selected, 2);
    let rows = ui.app.visible_rows().len();
    update(&mut ui.app, click(0));
    update(&mut ui.app, click(0));
    assert_eq!(ui.app.visible_rows().len(), 1, "a click on the selected root folds it");
    update(&mut ui.app, click(0));
    assert_eq!(ui.app.visible_rows().len(), rows);
    let scroll = Action::Mouse(MouseEvent {
        kind: MouseEventKind::ScrollDown,
        column: tree.x + 4,
        row: tree.y + 3,
        modifiers: KeyModifiers::NONE,
    });
    update(&mut ui.app, scroll);
    assert_eq!(ui.app.selected, 3);
}

/// A right object typed by name is the KG's entity of that name, not a new twin of it.
#[tokio::test]
async fn a_typed_right_object_the_kg_has_is_used_not_made_again() {
    let mut ui = Ui::new();
    ui.flag_the_stadium("wrong ballpark").await;
    ui.typed("citizens bank park").await;
    ui.press(KeyCode::Enter).await;
    assert!(ui.app.form.is_none(), "recorded at once: {:?}", ui.app.form);
    let ops: Vec<String> = ui.app.corrections.iter().map(|c| c.op.describe()).collect();
    assert_eq!(
        ops,
        [
            "replace m.phillies baseball.baseball_team.spring_training_stadium m.bright_house_field with m.citizens_bank_park"
        ]
    );
    assert!(
        ui.app
            .messages
            .iter()
            .any(|m| m.text == "\"citizens bank park\" is m.citizens_bank_park in the KG: the correction uses it"),
        "{:?}",
        ui.app.messages
    );
}

#[tokio::test]
async fn flag_relabel_undo_and_ask_again() {
    let mut ui = Ui::new();
    ui.ask(PHANATIC).await;
    ui.press(KeyCode::Char('r')).await;
    assert_eq!(ui.run().answer().unwrap().answers, vec!["Bright House Field"]);

    // Flag the triple that reached the stadium.
    ui.select("Bright House Field");
    ui.press(KeyCode::Char('f')).await;
    let form = ui.app.form.clone().expect("the flag form opens");
    assert!(matches!(&form.kind, ongraph::testing::tui::FormKind::Flag { triple, .. }
        if triple.line() == "Philadelphia Phillies, baseball.baseball_team.spring_training_stadium, Bright House Field"));
    insta::assert_snapshot!("tui_flag_form_80x24", ui.screen(80, 24));
    insta::assert_snapshot!("tui_flag_form_120x40", ui.screen(120, 40));
    ui.press(KeyCode::Enter).await;
    assert!(ui.app.form.as_ref().unwrap().problem.is_some(), "a reason is required");
    ui.typed("Renamed in 2021").await;
    ui.press(KeyCode::Tab).await;
    ui.typed("BayCare Ballpark").await;
    // The typed name is looked up first: the KG has no entity named so, only names like it,
    // said in the form; the next Enter makes it a new entity.
    let effects = update(&mut ui.app, key(KeyCode::Enter));
    assert!(matches!(&effects[..], [Effect::Lookup { .. }]), "{effects:?}");
    ui.settle(effects).await;
    let problem = ui.app.form.as_ref().and_then(|f| f.problem.clone()).expect("the form stays open, saying why");
    assert!(problem.contains("no entity is named exactly \"BayCare Ballpark\"; the KG has Baseball"), "{problem}");
    assert!(problem.contains("enter makes a new entity"), "{problem}");
    let effects = update(&mut ui.app, key(KeyCode::Enter));
    let [Effect::Correct { drafts }] = &effects[..] else { panic!("one correction effect: {effects:?}") };
    let ops: Vec<String> = drafts.iter().map(|d| d.op.describe()).collect();
    assert_eq!(
        ops,
        [
            "replace m.phillies baseball.baseball_team.spring_training_stadium m.bright_house_field with new.baycare_ballpark named \"BayCare Ballpark\""
        ],
        "one flag, one correction (its parts inside it)"
    );
    assert_eq!(drafts[0].reason, "Renamed in 2021");
    assert_eq!(drafts[0].author, "tester");
    assert_eq!(drafts[0].context.as_ref().unwrap().question.as_deref(), Some(PHANATIC));
    // The executor stores it durably in sled and swaps in a driver that sees it.
    ui.settle(effects).await;
    assert_eq!(
        ui.app.message.as_deref(),
        Some("correction 1 recorded; touches 1 kept answer (I: which); a: ask again")
    );
    assert_eq!(ui.app.corrections.len(), 1, "the corrections pane lists it, once");
    let flagged = ui.screen(120, 40);
    assert!(flagged.contains("⚑"), "the replaced triple is marked: {flagged}");
    assert!(flagged.contains("fixes 1"), "{flagged}");
    insta::assert_snapshot!("tui_flagged_120x40", flagged);
    insta::assert_snapshot!("tui_flagged_80x24", ui.screen(80, 24));

    // Re-ask: the new answer, the old one beside it, the paths that went and came.
    ui.press(KeyCode::Char('a')).await;
    assert_eq!(ui.run().answer().unwrap().answers, vec!["BayCare Ballpark"]);
    assert_eq!(ui.app.message.as_deref(), Some("answer changed to BayCare Ballpark (was Bright House Field)"));
    let text = ui.screen(120, 40);
    assert!(text.contains("before: Bright House Field"), "{text}");
    assert!(text.contains("− Phillie Phanatic") && text.contains("+ Phillie Phanatic"), "{text}");
    assert!(text.contains("✎"), "facts from corrections are marked in the tree: {text}");
    insta::assert_snapshot!("tui_reasked_120x40", text);

    // Relabel an entity from the UI: to the name it has, refused (the form stays open)…
    ui.select("Philadelphia Phillies");
    ui.press(KeyCode::Char('e')).await;
    ui.press(KeyCode::Tab).await;
    ui.typed("Common name").await;
    let effects = update(&mut ui.app, key(KeyCode::Enter));
    assert!(effects.is_empty(), "nothing is recorded: {effects:?}");
    let problem = ui.app.form.as_ref().expect("the form stays open").problem.clone().unwrap_or_default();
    assert!(problem.contains("m.phillies is already named \"Philadelphia Phillies\""), "{problem}");
    // …then to a new one.
    ui.press_with(KeyCode::Char('u'), KeyModifiers::CONTROL).await;
    ui.typed("The Phillies").await;
    ui.press(KeyCode::Enter).await;
    assert!(ui.app.form.is_none());
    assert_eq!(ui.app.corrections.len(), 2);
    assert_eq!(ui.app.corrections[1].op.describe(), "relabel m.phillies as \"The Phillies\"");

    // One undo of the flag from the corrections pane: asking again gives the old answer, and
    // nothing of the flag is left in the tree (no half-state: no new stadium, no ⚑).
    ui.press(KeyCode::BackTab).await;
    assert_eq!(ui.app.focus, Focus::Messages);
    ui.press(KeyCode::BackTab).await;
    assert_eq!(ui.app.focus, Focus::Corrections);
    ui.press(KeyCode::Char('g')).await;
    ui.press(KeyCode::Char('u')).await;
    assert!(!ui.app.corrections[0].active, "the flag is undone");
    assert!(ui.app.corrections[1].active, "the relabel is not");
    ui.press(KeyCode::Char('a')).await;
    assert_eq!(ui.run().answer().unwrap().answers, vec!["Bright House Field"]);
    assert_eq!(ui.app.message.as_deref(), Some("answer changed to Bright House Field (was BayCare Ballpark)"));
    let shown: Vec<String> =
        ui.app.visible_rows().iter().filter_map(|r| ui.app.node(r.node).map(|n| n.shown().to_string())).collect();
    assert!(shown.iter().any(|n| n == "Bright House Field"), "{shown:?}");
    assert!(!shown.iter().any(|n| n.contains("BayCare") || n.contains("baycare")), "{shown:?}");
    assert!(!ui.screen(120, 40).contains("⚑"));
    // The session keeps the undo, so a replay shows each run with the corrections it had (found
    // by a trial: the undo was lost, and a replay showed the flag from the first run on).
    let kept: Vec<(u64, usize, Option<usize>)> =
        ui.app.recording.corrections.iter().map(|c| (c.id, c.after_runs, c.undone_after_runs)).collect();
    assert_eq!(kept, [(1, 1, Some(2)), (2, 2, None)]);
    let flag = &ui.app.recording.corrections[0];
    assert_eq!((0..3).map(|run| flag.in_effect_for(run)).collect::<Vec<_>>(), [false, true, false]);

    // Another question has nothing to compare with (found by a trial: the last question's
    // answer and paths stayed beside the new one).
    ui.ask(CANBERRA).await;
    ui.press(KeyCode::Char('r')).await;
    assert!(ui.app.earlier.is_none());
    let text = ui.screen(120, 40);
    assert!(!text.contains("before: Bright House Field") && !text.contains("answer changed"), "{text}");
}

/// While the first step runs, the empty tree says so, not that `n` would take it (found by a
/// trial).
#[tokio::test]
async fn the_first_step_in_flight_is_said_to_run() {
    let mut ui = Ui::new();
    ui.typed(CANBERRA).await;
    let effects = update(&mut ui.app, key(KeyCode::Enter));
    assert!(!effects.is_empty(), "the first step is asked for");
    let text = ui.screen(120, 40);
    assert!(text.contains("No beam yet: topic_extraction is running…"), "{text}");
    assert!(!text.contains("takes the next step"), "{text}");
    ui.settle(effects).await;
    assert!(!ui.screen(120, 40).contains("is running…"));
}

/// As the README says of `f`: one `u` undoes it, from the tree (found by a trial: `u` worked
/// only in the corrections pane).
#[tokio::test]
async fn one_u_in_the_tree_undoes_the_flag_just_made() {
    let mut ui = Ui::new();
    ui.ask(PHANATIC).await;
    ui.press(KeyCode::Char('r')).await;
    ui.press(KeyCode::Char('u')).await;
    assert_eq!(
        ui.app.message.as_deref(),
        Some("no correction of this sitting to undo: Tab to the corrections pane to undo an earlier one")
    );
    ui.flag_the_stadium("Renamed").await;
    ui.press(KeyCode::Enter).await;
    assert_eq!(
        ui.app.message.as_deref(),
        Some("correction 1 recorded; touches 2 kept answers (I: which); a: ask again")
    );
    assert_eq!(ui.app.focus, Focus::Tree);
    ui.press(KeyCode::Char('u')).await;
    assert!(!ui.app.corrections[0].active, "undone from the tree");
    assert_eq!(ui.app.message.as_deref(), Some("correction 1 undone; a: ask again without it"));
}

#[tokio::test]
async fn flag_with_the_right_object_picked_from_the_kg() {
    let mut ui = Ui::new();
    ui.flag_the_stadium("Wrong team").await;
    ui.typed("Citizens Bank").await;
    ui.press_with(KeyCode::Char('f'), KeyModifiers::CONTROL).await;
    let picker = ui.app.picker.as_ref().expect("the KG picker opens");
    assert!(picker.items.iter().any(|i| i.text == "Citizens Bank Park"), "{:?}", picker.items);
    ui.press(KeyCode::Enter).await;
    let effects = update(&mut ui.app, key(KeyCode::Enter));
    let [Effect::Correct { drafts }] = &effects[..] else { panic!("{effects:?}") };
    assert_eq!(drafts.len(), 1, "one flag, one correction: {drafts:?}");
    assert_eq!(
        drafts[0].op.describe(),
        "replace m.phillies baseball.baseball_team.spring_training_stadium m.bright_house_field with m.citizens_bank_park",
        "an existing entity needs no name"
    );
}

#[tokio::test]
async fn save_load_and_replay_give_the_same_trace() {
    let mut ui = Ui::new();
    ui.ask(CANBERRA).await;
    ui.step_until("entity_search").await;
    ui.select("location.location.containedby");
    ui.press(KeyCode::Char('p')).await; // an override, recorded
    ui.press(KeyCode::Char('r')).await;
    let path = ui._dir.path().join("saved.json");
    ui.press(KeyCode::Char(':')).await;
    ui.typed(&format!("save-as {}", path.display())).await;
    ui.press(KeyCode::Enter).await;
    assert!(ui.app.message.as_deref().unwrap().starts_with("session saved"), "{:?}", ui.app.message);
    let trace = ui.run().trace().to_vec();

    // Headless replay reproduces the trace exactly, with no KG and no model.
    let session = Session::load(&path).unwrap();
    assert_eq!(session.runs.len(), 1);
    assert_eq!(session.runs[0].trace, trace);
    assert_eq!(session.replay(0).unwrap().trace(), &trace[..]);

    // In the UI, offline: each n is one recorded moment; the override is replayed in order.
    let mut app = App::replaying(session, false).unwrap();
    app.set_plain(true);
    assert!(update(&mut app, key(KeyCode::Enter)).is_empty(), "replayed steps need no effects");
    while !app.run.as_ref().unwrap().is_finished() {
        assert!(update(&mut app, key(KeyCode::Char('n'))).is_empty());
    }
    assert_eq!(app.run.as_ref().unwrap().trace(), &trace[..]);
    assert!(app.run.as_ref().unwrap().trace().iter().any(|e| e.summary.starts_with("pinned")), "the override replayed");

    // Branching off offline: go back, force an early answer, and run: the answer prompt was
    // never recorded, so the replay says how to go on live.
    for _ in 0..20 {
        if app.run.as_ref().unwrap().depth() == 1 {
            break;
        }
        update(&mut app, key(KeyCode::Char('b')));
    }
    assert_eq!(app.run.as_ref().unwrap().depth(), 1, "{:?}", app.message);
    update(&mut app, key(KeyCode::Char('s')));
    assert!(update(&mut app, key(KeyCode::Char('r'))).is_empty(), "offline: nothing is performed");
    assert!(app.message.as_deref().unwrap().contains("--live"), "{:?}", app.message);
    assert!(!app.replay.as_ref().unwrap().player.as_ref().unwrap().on_track());
}

/// Issue 36: a sitting that switches method between questions saves each run with its own
/// method, and every run replays (it used to replay the ToG run as ToG-R); a session that would
/// not replay is refused with the reason.
#[tokio::test]
async fn a_session_with_a_method_switch_saves_and_replays() {
    let mut ui = Ui::new();
    ui.ask(CANBERRA).await;
    ui.press(KeyCode::Char('r')).await;
    ui.press(KeyCode::Char(':')).await;
    ui.typed("method tog-r").await;
    ui.press(KeyCode::Enter).await;
    ui.press(KeyCode::Char('i')).await;
    ui.press_with(KeyCode::Char('u'), KeyModifiers::CONTROL).await;
    ui.ask(APPLE).await;
    ui.press(KeyCode::Char('r')).await;
    assert_eq!(ui.run().question(), APPLE);
    let path = ui._dir.path().join("switch.json");
    ui.press(KeyCode::Char(':')).await;
    ui.typed(&format!("save-as {}", path.display())).await;
    ui.press(KeyCode::Enter).await;
    assert!(ui.app.message.as_deref().unwrap().starts_with("session saved"), "{:?}", ui.app.message);

    let session = Session::load(&path).unwrap();
    assert_eq!(session.runs.len(), 2);
    assert_eq!(session.settings_of(0).method, ongraph::engine::MethodId::TOG);
    assert_eq!(session.settings_of(1).method, ongraph::engine::MethodId::TOG_R);
    for (i, run) in session.runs.iter().enumerate() {
        assert_eq!(session.replay(i).unwrap().trace(), &run.trace[..], "run {}", i + 1);
    }
    session.check_replays(ongraph::engine::Registry::builtin()).unwrap();

    // A run recorded under one method cannot be replayed as another: the check says which run.
    let mut broken = session.clone();
    broken.runs[0].settings = Some(session.settings_of(1).clone());
    let err = broken.check_replays(ongraph::engine::Registry::builtin()).unwrap_err().to_string();
    assert!(err.starts_with("run 1 of the session cannot be replayed"), "{err}");
}

/// `ongraph replay FILE --live`: the recording is followed, and what it never recorded (here `c`
/// after the answer: the demo's depth-3 branch) is performed on the KG and model at hand.
#[tokio::test]
async fn a_live_replay_performs_the_steps_off_its_recording() {
    let mut ui = Ui::new();
    let session = Session::load(Path::new("sessions/phillie-phanatic.json")).unwrap();
    let recorded = session.runs[0].trace.len();
    ui.app = App::replaying(session, true).unwrap();
    ui.app.set_plain(true);
    ui.press(KeyCode::Enter).await;
    for _ in 0..100 {
        if ui.run().is_finished() {
            break;
        }
        ui.press(KeyCode::Char('n')).await;
    }
    assert_eq!(ui.run().trace().len(), recorded, "the recording, step by step");
    assert_eq!(ui.run().answer().unwrap().answers, vec!["Bright House Field"]);
    ui.press(KeyCode::Char('c')).await;
    ui.press(KeyCode::Char('r')).await;
    assert!(ui.run().trace().len() > recorded, "steps past the recording were performed: {:?}", ui.app.message);
    assert_eq!(ui.run().depth(), 3, "{:?}", ui.app.message);
    assert_eq!(ui.run().answer().unwrap().answers, vec!["Bright House Field"], "{:?}", ui.app.message);
    assert!(!ui.app.replay.as_ref().unwrap().player.as_ref().unwrap().on_track());
}

#[test]
fn bad_session_files_give_clear_errors() {
    let dir = tempfile::tempdir().unwrap();
    let write = |name: &str, text: &str| {
        let p = dir.path().join(name);
        std::fs::write(&p, text).unwrap();
        p
    };
    let err =
        Session::load(&write("cut.json", "{\"format\": \"ongraph-session\", \"version\": 1, \"runs\": [")).unwrap_err();
    assert!(err.to_string().contains("cut.json is corrupt") && err.to_string().contains("line 1"), "{err}");
    let err = Session::load(&write("newer.json", "{\"format\": \"ongraph-session\", \"version\": 99}")).unwrap_err();
    assert!(err.to_string().contains("newer ongraph (session format v99"), "{err}");
    let err = Session::load(&write("other.json", "{\"hello\": 1}")).unwrap_err();
    assert!(err.to_string().contains("is not an ongraph session"), "{err}");
    let err = Session::load(&write("fields.json", "{\"format\": \"ongraph-session\", \"version\": 1, \"kg\": 3}"))
        .unwrap_err();
    assert!(err.to_string().contains("fields.json is corrupt"), "{err}");
    let err = Session::load(&dir.path().join("missing.json")).unwrap_err();
    assert!(err.to_string().contains("cannot read"), "{err}");
    // A session whose recording was tampered with does not replay into a wrong trace.
    let mut session = Session::load(Path::new("sessions/canberra.json")).unwrap();
    if let Some(ongraph::testing::session::Moment::Exchange { requests, .. }) = session.runs[0].moments.get_mut(1) {
        requests.clear();
    }
    let Err(err) = session.replay(0) else { panic!("a tampered session replayed") };
    assert!(err.to_string().contains("other requests than were recorded"), "{err}");
}

/// Session format v2 (it may hold a replace): written by this build, read by it along with v1;
/// a file from a newer ongraph says so before its contents are read.
#[test]
fn sessions_are_format_v2_and_v1_still_loads_and_replays() {
    let mut ui = Ui::new();
    let written = ui.app.session();
    assert_eq!(written.version, 2, "this build writes v2");
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("written.json");
    written.save(&path).unwrap();
    let text = std::fs::read_to_string(&path).unwrap();
    assert!(text.contains("\"version\": 2,"), "{text}");
    assert_eq!(Session::load(&path).unwrap(), written, "a v2 file loads");

    // Saved by the build before v2, a replace among its corrections.
    let v1 = Path::new("tests/fixtures/sessions/v1/phillie-phanatic.json");
    assert!(std::fs::read_to_string(v1).unwrap().contains("\"version\": 1,"), "the fixture is v1");
    let phanatic = Session::load(v1).unwrap();
    assert_eq!(phanatic.replay(0).unwrap().answer().unwrap().answers, vec!["Bright House Field"]);
    assert_eq!(phanatic.replay(1).unwrap().answer().unwrap().answers, vec!["BayCare Ballpark"]);
    assert!(phanatic.corrections[0].draft.op.describe().starts_with("replace m.phillies"));
    let v1 = Path::new("tests/fixtures/sessions/v1/gog-apple-incomplete-kg.json");
    let gog = Session::load(v1).unwrap();
    assert_eq!(gog.replay(1).unwrap().answer().unwrap().answers, vec!["Pacific Time Zone"]);
    // v1 marked an accepted generated triple by its reason alone: read, it is marked.
    assert!(gog.corrections[0].draft.generated, "{:?}", gog.corrections[0].draft);
    assert_eq!(gog.version, 2, "read into this build's format");
    // In v2 the mark says it, not the reason.
    let as_v2 = dir.path().join("v2.json");
    std::fs::write(&as_v2, std::fs::read_to_string(v1).unwrap().replacen("\"version\": 1,", "\"version\": 2,", 1))
        .unwrap();
    assert!(!Session::load(&as_v2).unwrap().corrections[0].draft.generated);

    // A newer format is refused as such, whatever it holds.
    let newer = dir.path().join("newer.json");
    std::fs::write(&newer, "{\"format\": \"ongraph-session\", \"version\": 3, \"corrections\": [{\"draft\": {\"op\": {\"op\": \"merge\"}}}]}")
        .unwrap();
    let err = Session::load(&newer).unwrap_err();
    assert!(matches!(err, SessionError::Newer { version: 3, .. }), "{err}");
    assert!(
        err.to_string().ends_with("saved by a newer ongraph (session format v3; this build reads up to v2)"),
        "{err}"
    );
}

/// The shipped demo sessions replay offline to their saved traces and answers.
#[test]
fn demo_sessions_replay() {
    let canberra = Session::load(Path::new("sessions/canberra.json")).unwrap();
    let run = canberra.replay(0).unwrap();
    assert_eq!(run.trace(), &canberra.runs[0].trace[..]);
    assert_eq!(run.answer().unwrap().answers, vec!["Australian Labor Party"]);

    let phanatic = Session::load(Path::new("sessions/phillie-phanatic.json")).unwrap();
    assert_eq!(phanatic.runs.len(), 2, "asked, corrected, asked again");
    assert_eq!(phanatic.replay(0).unwrap().answer().unwrap().answers, vec!["Bright House Field"]);
    assert_eq!(phanatic.replay(1).unwrap().answer().unwrap().answers, vec!["BayCare Ballpark"]);
    assert_eq!(phanatic.corrections.len(), 1, "one flag, one correction");
    assert_eq!(phanatic.corrections[0].after_runs, 1);

    let pog = Session::load(Path::new("sessions/pog-giants-rangers.json")).unwrap();
    let run = pog.replay(0).unwrap();
    assert_eq!(run.answer().unwrap().answers, vec!["2010 World Series"]);
    assert!(common::report_lines(&run).iter().any(|l| l.contains("reduced 13 → 3 nodes")));

    let gog = Session::load(Path::new("sessions/gog-apple-incomplete-kg.json")).unwrap();
    assert_eq!(gog.runs.len(), 2, "asked, the generated triple accepted, asked again");
    let first = gog.replay(0).unwrap();
    assert_eq!(first.answer().unwrap().answers, vec!["Pacific Time Zone"]);
    // The answer rests on the generated triple, and says so; once accepted, on the KG.
    assert_eq!(first.answer().unwrap().source, ongraph::engine::AnswerSource::GeneratedTriples);
    assert!(first.generated().iter().any(|g| g.kept && g.tail == "Pacific Time Zone"));
    let second = gog.replay(1).unwrap();
    assert!(second.generated().is_empty(), "the accepted triple is in the KG now");
    assert_eq!(second.answer().unwrap().answers, vec!["Pacific Time Zone"]);
    assert_eq!(second.answer().unwrap().source, ongraph::engine::AnswerSource::KgPaths);
    assert_eq!(gog.corrections.len(), 1);
    assert_eq!(gog.corrections[0].draft.reason, "generated by the LLM, accepted by demo");
    assert!(gog.corrections[0].draft.generated, "marked as generated");
}

/// Writes the demo sessions (`UPDATE_SESSIONS=1 cargo test --test tui demo`) by driving the UI
/// the way a user would; otherwise checks the shipped files are what this build records.
#[tokio::test]
async fn demo_sessions_are_what_the_ui_records() {
    let mut ui = Ui::new();
    ui.ask(CANBERRA).await;
    ui.press(KeyCode::Char('r')).await;
    let canberra = ui.app.session();

    let mut ui = Ui::new();
    ui.flag_the_stadium("Renamed BayCare Ballpark in 2017").await;
    ui.typed("BayCare Ballpark").await;
    // Looked up (no entity has that name), then made a new entity.
    ui.press(KeyCode::Enter).await;
    ui.press(KeyCode::Enter).await;
    ui.press(KeyCode::Char('a')).await;
    let phanatic = ui.app.session();

    let mut ui = Ui::with(Settings { method: ongraph::engine::MethodId::POG, ..Settings::default() }, Vec::new());
    ui.ask(GIANTS_RANGERS).await;
    ui.press(KeyCode::Char('r')).await;
    let pog = ui.app.session();

    let mut ui = Ui::with(Settings { method: ongraph::engine::MethodId::GOG, ..Settings::default() }, ikg_hidden());
    // The author is part of the accepted triple's reason.
    ui.app.author = "demo".into();
    ui.ask(APPLE).await;
    ui.press(KeyCode::Char('r')).await;
    ui.select("Pacific Time Zone");
    ui.press(KeyCode::Char('A')).await;
    ui.press(KeyCode::Char('a')).await;
    let gog = ui.app.session();

    for (name, mut session) in [
        ("canberra", canberra),
        ("phillie-phanatic", phanatic),
        ("pog-giants-rangers", pog),
        ("gog-apple-incomplete-kg", gog),
    ] {
        let path = PathBuf::from(format!("sessions/{name}.json"));
        // Times and the author vary from machine to machine and run to run.
        session.saved_at = "2026-11-22T00:00:00Z".into();
        for c in &mut session.corrections {
            c.draft.author = "demo".into();
        }
        for run in &mut session.runs {
            for m in &mut run.moments {
                if let ongraph::testing::session::Moment::Exchange { elapsed_ms, .. } = m {
                    *elapsed_ms = 0;
                }
            }
            for e in &mut run.trace {
                e.elapsed_ms = 0;
            }
        }
        if std::env::var_os("UPDATE_SESSIONS").is_some() {
            session.save(&path).unwrap();
        }
        let shipped = Session::load(&path).unwrap();
        assert_eq!(shipped.runs, session.runs, "{name}: rerun with UPDATE_SESSIONS=1 and review the diff");
        assert_eq!(shipped.corrections, session.corrections);
    }
}

#[tokio::test]
async fn a_prompt_only_baseline_in_the_ui() {
    // The demo records no baseline replies (they would name answers no prompt shows): the
    // tests' own script gives them.
    let dir = tempfile::tempdir().unwrap();
    let corrections =
        TempCorrections { store: SledStore::open(&dir.path().join("overlay")).unwrap(), hidden: Vec::new() };
    let script = format!("{}\n{}", include_str!("fixtures/baselines-model.toml"), common::DEMO_SCRIPT);
    let model = ongraph::testing::llm::ScriptedModel::from_toml("baselines", &script).unwrap();
    let driver = Driver::new(Arc::new(ongraph::testing::kg::demo_graph()), Arc::new(model));
    let mut ui = Ui::over(Settings::default(), Arc::new(corrections), driver, dir);
    ui.app.focus = Focus::Tree;
    ui.press(KeyCode::Char(':')).await;
    ui.typed("method sc").await;
    ui.press(KeyCode::Enter).await;
    assert_eq!(ui.app.settings.method, ongraph::engine::MethodId::SC);
    ui.press(KeyCode::Char('i')).await;
    ui.ask(CANBERRA).await;
    assert!(ui.run().is_finished(), "one step: the samples, all at once");
    assert_eq!(ui.run().answer().unwrap().answers, vec!["Australian Labor Party"]);
    let text = ui.screen(120, 40);
    assert!(text.contains("SC is a prompt-only method: no beam"), "{text}");
    assert!(text.contains("from the LLM alone"), "{text}");
    ui.press(KeyCode::Char('s')).await;
    assert!(ui.app.message.as_deref().unwrap().contains("no beam to change"), "{:?}", ui.app.message);
}

#[tokio::test]
async fn sc_in_the_ui_is_said_as_sc_not_cot() {
    // Found by a new-user trial: off the demo's recording, SC's step was said to be CoT's (its
    // samples are `cot` steps, the name recordings and scripts match).
    let sc = || Settings { method: ongraph::engine::MethodId::SC, ..Settings::default() };
    let ui_over = |model: ongraph::testing::llm::ScriptedModel| {
        let dir = tempfile::tempdir().unwrap();
        let corrections =
            TempCorrections { store: SledStore::open(&dir.path().join("overlay")).unwrap(), hidden: Vec::new() };
        let driver = Driver::new(Arc::new(ongraph::testing::kg::demo_graph()), Arc::new(model));
        Ui::over(sc(), Arc::new(corrections), driver, dir)
    };
    let mut ui = ui_over(ongraph::testing::llm::ScriptedModel::demo().unwrap());
    ui.ask(CANBERRA).await;
    let said = ui.app.message.clone().unwrap_or_default();
    assert!(
        said.contains("this step (SC: sampling step-by-step answers from the model's own knowledge) is outside"),
        "{said}"
    );
    assert!(!said.contains("CoT"), "{said}");

    // Answered by a model, the transcript says whose samples the `cot` calls are.
    let baselines = include_str!("fixtures/baselines-model.toml");
    let mut ui = ui_over(ongraph::testing::llm::ScriptedModel::from_toml("baselines", baselines).unwrap());
    ui.ask(CANBERRA).await;
    assert!(ui.run().is_finished());
    assert!(ui.run().trace()[0].calls.iter().all(|c| c.step == "cot"), "recorded as before");
    ui.app.bottom = Bottom::Transcript;
    let text = ui.screen(120, 40);
    assert!(text.contains("│SC sample 1 of 5 (cot) · N ms · "), "{text}");
}

#[tokio::test]
async fn gog_in_the_ui_accepting_a_generated_triple_stores_it_and_re_asking_uses_it() {
    let mut ui = Ui::with(Settings { method: ongraph::engine::MethodId::GOG, ..Settings::default() }, ikg_hidden());
    ui.ask(APPLE).await;
    ui.step_until("done").await;
    assert_eq!(ui.run().answer().unwrap().answers, vec!["Pacific Time Zone"]);
    let screen = ui.screen(120, 40);
    assert!(screen.contains('✦'), "generated triples are marked:\n{screen}");
    // Accepting needs the generated object selected.
    ui.select("Apple Inc.");
    ui.press(KeyCode::Char('A')).await;
    assert!(ui.app.message.as_deref().unwrap_or_default().contains("LLM-generated"));
    ui.select("Pacific Time Zone");
    ui.press(KeyCode::Char('A')).await;
    let stored = ui.executor.corrections().unwrap().list().unwrap();
    assert_eq!(stored.len(), 1);
    assert_eq!(
        stored[0].op,
        ongraph::testing::overlay::Op::Assert {
            subject: "m.cupertino".into(),
            relation: "location.location.time_zones".into(),
            object: ongraph::kg::Term::Entity("m.pacific_tz".into()),
        }
    );
    assert_eq!(stored[0].reason, "generated by the LLM, accepted by tester");
    assert_eq!(stored[0].generated, Some(true), "marked, not only worded");
    // Asked again through the correction, the search finds the time zone: nothing generated.
    ui.press(KeyCode::Char('a')).await;
    ui.step_until("done").await;
    assert!(ui.run().generated().is_empty());
    assert_eq!(ui.run().answer().unwrap().answers, vec!["Pacific Time Zone"]);
    // The answer pane says what it rests on: the generated triple, not the KG.
    ui.app.bottom = Bottom::Answer;
    let screen = ui.screen(120, 40);
    assert!(
        screen.contains("from an LLM-generated triple accepted as correction #1, not from the knowledge graph"),
        "{screen}"
    );
    assert!(!screen.contains("│from knowledge-graph paths"), "{screen}");
}

#[tokio::test]
async fn gog_timeline_in_the_method_pane_and_the_step_about_to_run_can_be_edited() {
    let mut ui = Ui::with(Settings { method: ongraph::engine::MethodId::GOG, ..Settings::default() }, Vec::new());
    ui.ask(APPLE).await;
    ui.step_until("search_relations").await;
    ui.app.focus = Focus::Tree;
    ui.press(KeyCode::Tab).await;
    ui.press(KeyCode::Tab).await;
    ui.press(KeyCode::Tab).await;
    assert_eq!((ui.app.focus, ui.app.bottom), (Focus::Method, Bottom::Method));
    let screen = ui.screen(120, 40);
    assert!(screen.contains("Search[Apple Inc.]"), "{screen}");
    assert!(screen.contains("about to run · enter: edit"), "{screen}");
    ui.press(KeyCode::Enter).await;
    assert!(ui.app.form.is_some(), "enter on the pending step opens the editor");
    insta::assert_snapshot!("tui_gog_edit_step_120x40", ui.screen(120, 40));
    // An action the engine cannot run keeps the form open with what was typed.
    ui.press_with(KeyCode::Char('u'), KeyModifiers::CONTROL).await;
    ui.typed("Look[Cupertino]").await;
    ui.press(KeyCode::Enter).await;
    let form = ui.app.form.as_ref().expect("still open");
    assert_eq!(form.value(1), "Look[Cupertino]");
    assert!(form.problem.as_deref().unwrap_or_default().contains("Look"), "{:?}", form.problem);
    ui.press_with(KeyCode::Char('u'), KeyModifiers::CONTROL).await;
    ui.typed("Search[Cupertino]").await;
    ui.press(KeyCode::BackTab).await;
    ui.press_with(KeyCode::Char('u'), KeyModifiers::CONTROL).await;
    ui.typed("The headquarters city is enough.").await;
    ui.press(KeyCode::Enter).await;
    assert!(ui.app.form.is_none());
    let step = &common::gog_steps(ui.run())[0];
    assert_eq!(
        (step.thought.as_str(), step.action.as_str()),
        ("The headquarters city is enough.", "Search[Cupertino]")
    );
    // The edited action is what runs: Cupertino is linked by its label, then its relations
    // are fetched, and the step can no longer be edited.
    ui.press(KeyCode::Char('n')).await;
    assert_eq!(ui.run().trace().last().unwrap().lookups[0].what, "entities named \"Cupertino\"");
    ui.press(KeyCode::Char('n')).await;
    assert!(!common::gog_editable(ui.run()), "the search has run");
    ui.app.focus = Focus::Method;
    ui.press(KeyCode::Enter).await;
    assert!(ui.app.form.is_none());
    assert!(ui.app.message.as_deref().unwrap_or_default().contains("has run"), "{:?}", ui.app.message);
}

#[tokio::test]
async fn enter_on_a_gog_step_that_has_run_says_which_step_is_about_to_run() {
    // Found by a new-user trial: the pane's title says "enter: edit the step about to run", the
    // selection starts on step 1, and Enter there only said step 1 had run.
    let mut ui = Ui::with(Settings { method: ongraph::engine::MethodId::GOG, ..Settings::default() }, Vec::new());
    ui.ask(APPLE).await;
    ui.step_until("search_relations").await;
    ui.press(KeyCode::Char('n')).await;
    ui.step_until("search_relations").await;
    assert!(common::gog_editable(ui.run()), "thought 2 is about to run");
    ui.app.focus = Focus::Method;
    ui.app.bottom = Bottom::Method;
    ui.app.method_at = 0;
    ui.press(KeyCode::Enter).await;
    assert!(ui.app.form.is_none());
    let said = ui.app.message.clone().unwrap_or_default();
    assert!(
        said.starts_with("step 1 has run; step 2 (⏵) is about to run: select it (j/k) and Enter edits it"),
        "{said}"
    );
    ui.press(KeyCode::Char('j')).await;
    ui.press(KeyCode::Enter).await;
    assert!(ui.app.form.is_some(), "step 2 opens for editing");
}

#[tokio::test]
async fn gog_timeline_of_a_whole_run_on_the_incomplete_kg() {
    let mut ui = Ui::with(Settings { method: ongraph::engine::MethodId::GOG, ..Settings::default() }, ikg_hidden());
    ui.ask(APPLE).await;
    ui.step_until("done").await;
    ui.app.focus = Focus::Method;
    ui.app.bottom = Bottom::Method;
    ui.press(KeyCode::Char('G')).await;
    ui.press(KeyCode::Char('k')).await;
    assert_eq!(ui.app.method_at, 3, "the Generate step");
    let screen = ui.screen(120, 40);
    assert!(screen.contains("Generate[Cupertino is in the Pacific Time Zone]"), "{screen}");
    assert!(screen.contains("Cupertino, location.location.time_zones, Pacific Time Zone"), "{screen}");
    assert!(screen.contains("2 generated triple(s), 1 kept"), "{screen}");
    insta::assert_snapshot!("tui_gog_timeline_120x40", screen);
}

#[tokio::test]
async fn pog_panel_shows_the_analysis_the_subgraph_and_the_stages() {
    let mut ui = Ui::with(Settings { method: ongraph::engine::MethodId::POG, ..Settings::default() }, Vec::new());
    ui.ask(GIANTS_RANGERS).await;
    ui.step_until("done").await;
    assert_eq!(ui.run().answer().unwrap().answers, vec!["2010 World Series"]);
    ui.app.focus = Focus::Method;
    ui.app.bottom = Bottom::Method;
    let screen = ui.screen(120, 40);
    assert!(screen.contains("depth 1 of 3 · subgraph 13 nodes, 12 triples"), "{screen}");
    let report = common::report_lines(ui.run());
    assert!(report.iter().any(|l| l.contains("reduced 13 → 3 nodes (topics joined)")), "{report:?}");
    assert!(screen.contains("reduced 13 → 3"), "{screen}");
    assert!(screen.contains("topic-entity paths (depth 1): 1 → fuzzy 1 ✓ sufficient"), "{screen}");
    assert!(screen.contains("answered by topic-entity paths (depth 1)"), "{screen}");
    insta::assert_snapshot!("tui_pog_panel_120x40", screen);
    // Enter shows the selected candidate in the tree.
    ui.press(KeyCode::Enter).await;
    let leaf = ui.run().live_paths()[0].leaf;
    let rows = ui.app.visible_rows();
    assert_eq!(rows[ui.app.selected].node.id, leaf);
}

#[tokio::test]
async fn pog_answer_pane_shows_paths_with_arrows_as_ask_prints_them() {
    // PoG's own path text is its prompts' brace format (`{A} - {-> r ->} - {B}`); the answer
    // pane, the `t` message and the re-ask comparison show the beam's arrows, as `ask` does.
    let mut ui = Ui::with(Settings { method: ongraph::engine::MethodId::POG, ..Settings::default() }, Vec::new());
    ui.ask(GIANTS_RANGERS).await;
    ui.step_until("done").await;
    ui.press(KeyCode::Char('t')).await;
    let arrows = "»[1.000] San Francisco Giants -> sports.sports_team.championships -> 2010 World Series";
    let screen = ui.screen(200, 40);
    assert!(screen.contains(arrows), "{screen}");
    assert!(!screen.contains("{San Francisco Giants}"), "{screen}");
}

#[tokio::test]
async fn control_characters_from_data_never_reach_the_terminal() {
    // A question (later a prompt, a status line, a history entry) carrying an OSC title change,
    // a screen clear and a bell: shown as text, never as commands to the terminal.
    let mut ui = Ui::new();
    ui.ask("Who is \u{1b}]0;PWNED\u{7}\u{1b}[2J\u{9b}31m Canberra's mayor?").await;
    for (w, h) in [(120, 40), (80, 24)] {
        let text = ui.screen(w, h);
        assert!(text.contains("PWNED"), "the text around the escapes is shown: {text}");
        let bad: Vec<char> = text.chars().filter(|c| c.is_control() && *c != '\n').collect();
        assert!(bad.is_empty(), "control characters on screen: {bad:?}");
    }
}

#[tokio::test]
async fn the_first_screen_can_be_left_helped_and_quit() {
    let mut ui = Ui::new();
    assert_eq!(ui.app.focus, Focus::Question);
    // With nothing typed, ? is the help and q quits; once typing, both are text.
    ui.press(KeyCode::Char('?')).await;
    assert!(ui.app.help, "? with an empty question box opens the help");
    ui.press(KeyCode::Char('x')).await;
    assert!(!ui.app.help && ui.app.question().is_empty(), "the closing key is not typed");
    ui.typed("Why?").await;
    assert_eq!(ui.app.question(), "Why?");
    assert!(!ui.app.help);
    ui.press(KeyCode::F(1)).await;
    assert!(ui.app.help, "F1 works while typing");
    ui.press(KeyCode::Char('x')).await;
    ui.press_with(KeyCode::Char('u'), KeyModifiers::CONTROL).await;

    // Esc leaves the box at first launch and says what to do next; i comes back.
    ui.press(KeyCode::Esc).await;
    assert_eq!(ui.app.focus, Focus::Tree);
    assert!(ui.app.message.as_deref().unwrap_or_default().contains("i: type a question"), "{:?}", ui.app.message);
    ui.press(KeyCode::Char('i')).await;
    assert_eq!(ui.app.focus, Focus::Question);
    ui.press(KeyCode::Tab).await;
    assert_eq!(ui.app.focus, Focus::Tree, "Tab leaves the box too, inserting nothing");
    assert!(ui.app.question().is_empty());
    assert!(!ui.app.quit);
    ui.press(KeyCode::Char('q')).await;
    assert!(ui.app.quit, "q quits from outside the box");

    let mut fresh = Ui::new();
    fresh.press(KeyCode::Char('q')).await;
    assert!(fresh.app.quit, "q quits from an empty question box");
}

#[tokio::test]
async fn a_theme_file_that_did_not_load_says_why_when_asked_for() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("neon.toml"), "name = \"neon\"\ntext = [oops\n").unwrap();
    let (themes, problems) = ongraph::testing::tui::theme::load_all(Some(dir.path()));
    assert_eq!(problems.len(), 1, "{problems:?}");
    assert!(!problems[0].contains('\n'), "one line: {:?}", problems[0]);
    assert!(problems[0].contains("neon.toml:2:"), "names the file and line: {:?}", problems[0]);
    let mut ui = Ui::new();
    ui.app.theme_problems = problems.clone();
    ui.app.themes = themes;
    ui.press(KeyCode::Esc).await;
    ui.press(KeyCode::Char(':')).await;
    ui.typed("theme neon").await;
    ui.press(KeyCode::Enter).await;
    let message = ui.app.message.clone().unwrap_or_default();
    assert!(message.starts_with("no theme \"neon\" (themes: "), "{message}");
    assert!(message.contains(&format!("not loaded: {}", problems[0])), "{message}");
}

/// The rows shown as `shown`, for tests that look a node up by name.
fn row_of(app: &App, shown: &str) -> Option<usize> {
    app.visible_rows().iter().position(|r| app.node(r.node).is_some_and(|n| n.shown() == shown))
}

#[tokio::test]
async fn every_message_is_kept_whole_in_the_messages_pane_and_errors_are_marked() {
    let mut ui = Ui::new();
    ui.ask(CANBERRA).await;
    ui.step_until("entity_search").await;
    // An error: the root cannot be dropped. The status bar cuts it; the pane keeps it whole.
    ui.press(KeyCode::Char('g')).await;
    ui.press(KeyCode::Char('x')).await;
    let error = ui.app.messages.last().cloned().expect("the refusal is kept");
    assert!(error.error && error.text.starts_with("cannot drop Canberra now: "), "{error:?}");
    let status = ui.screen(80, 24);
    let bar = status.lines().last().unwrap_or_default().to_string();
    assert!(bar.contains("(M: in full)"), "a cut message points to the pane: {bar}");
    assert!(!status.contains("Drop {") && !status.contains("Keep {"), "no Rust debug text: {status}");
    ui.press(KeyCode::Char('M')).await;
    assert_eq!((ui.app.focus, ui.app.bottom), (Focus::Messages, Bottom::Messages));
    let pane = ui.screen(120, 40);
    assert!(pane.contains("Messages (") && pane.contains("1 errors"), "{pane}");
    assert!(pane.contains("error: cannot drop Canberra now"), "{pane}");
    // The steps' summaries are there too, oldest first.
    let texts: Vec<&str> = ui.app.messages.iter().map(|m| m.text.as_str()).collect();
    assert!(texts.iter().any(|t| t.starts_with("topic entity: Canberra")), "{texts:?}");
    assert_eq!(ui.app.messages.iter().filter(|m| m.error).count(), 1, "{texts:?}");
}

#[tokio::test]
async fn the_selection_follows_its_node_when_the_tree_grows() {
    let mut ui = Ui::new();
    ui.ask(CANBERRA).await;
    ui.step_until("entity_search").await;
    // Select a relation low in the tree: the entity search adds rows above it.
    let rows = ui.app.visible_rows();
    let last = rows.len() - 1;
    ui.app.focus = Focus::Tree;
    ui.app.selected = last;
    let node = ui.app.selected_ref();
    let shown = ui.app.node(node.unwrap()).unwrap().shown().to_string();
    ui.press(KeyCode::Char('n')).await;
    assert!(ui.app.visible_rows().len() != rows.len(), "the step changed the rows");
    assert_eq!(ui.app.selected_ref(), node, "still {shown}, now at row {}", ui.app.selected);
    assert_ne!(ui.app.selected, last, "its row number changed: the rows above it grew");
    // x then acts on that node, not on whatever took its row number.
    ui.press(KeyCode::Char('x')).await;
    let said = ui.app.message.clone().unwrap_or_default();
    let parent = ui.app.node(node.unwrap()).unwrap().parent.map(|p| ui.run().beam().nodes[p].shown().to_string());
    let named = format!("{shown} under {}", parent.unwrap_or_default());
    assert!(said.contains(&named), "the refusal names the selected node ({named}): {said}");
}

#[tokio::test]
async fn keys_that_do_not_apply_say_why_and_focus_never_stays_on_a_hidden_pane() {
    let mut ui = Ui::new();
    ui.ask(CANBERRA).await;
    ui.press(KeyCode::Tab).await;
    ui.press(KeyCode::Tab).await;
    assert_eq!(ui.app.focus, Focus::Transcript);
    ui.press(KeyCode::Char('x')).await;
    assert_eq!(
        ui.app.message.as_deref(),
        Some("x (keep-or-drop) works in the beam tree: Tab and shift-Tab move between panes"),
        "a tree key in the transcript"
    );
    ui.press(KeyCode::Char('z')).await;
    assert_eq!(ui.app.message.as_deref(), Some("z does nothing in the transcript (? lists its keys)"));
    // Running to the answer shows the answer pane; the focus goes with it.
    ui.press(KeyCode::Char('r')).await;
    assert_eq!((ui.app.bottom, ui.app.focus), (Bottom::Answer, Focus::Answer));
}

/// Found by a trial with a small local model: its reply scored a relation 0.8 and the tree showed
/// 0.40 (the scores summed to 2 and were rescaled), with nothing in the inspector saying why; the
/// step's notes on reading its replies are shown with the call.
#[tokio::test]
async fn the_inspector_shows_the_notes_of_the_step_that_scored_the_node() {
    let mut ui = Ui::new();
    ui.ask(CANBERRA).await;
    ui.step_until("reasoning").await;
    ui.select("Australian Capital Territory");
    // The transcript shows the last step's notes too: the answer pane in its place.
    ui.app.bottom = Bottom::Answer;
    let text = ui.screen(200, 40);
    assert!(text.contains("note: scores given as `name (Score: x)` items"), "{text}");
}

#[tokio::test]
async fn the_inspector_scrolls_names_the_call_that_scored_and_shows_flags() {
    let mut ui = Ui::new();
    ui.ask(PHANATIC).await;
    ui.press(KeyCode::Char('r')).await;
    // A node the model scored: its own call's reply, whole, and the prompt from its start.
    ui.select("sports.sports_team.arena_stadium");
    let text = ui.screen(120, 40);
    assert!(text.contains("Inspector · tab here to scroll") && text.contains("relation_prune"), "{text}");
    ui.press(KeyCode::Tab).await;
    assert_eq!(ui.app.focus, Focus::Inspector);
    for _ in 0..10 {
        ui.press(KeyCode::Char('j')).await;
    }
    assert_eq!(ui.app.inspector_at, 10);
    let scrolled = ui.screen(120, 40);
    assert_ne!(scrolled, text, "j scrolls the inspector");
    assert!(ui.screen(120, 40).contains("Inspector · j/k: scroll"));
    // Selecting another node starts its inspection from the top.
    ui.press(KeyCode::BackTab).await;
    ui.press(KeyCode::Char('j')).await;
    assert_eq!(ui.app.inspector_at, 0);

    // A flagged triple says so, with the flag's reason.
    ui.select("Bright House Field");
    ui.press(KeyCode::Char('f')).await;
    ui.typed("Renamed in 2021").await;
    ui.press(KeyCode::Enter).await;
    ui.select("Bright House Field");
    let flagged = ui.screen(120, 40);
    assert!(flagged.contains("⚑ flagged wrong (correction #1): Renamed in 2021"), "{flagged}");
}

#[tokio::test]
async fn a_score_given_without_a_call_does_not_show_another_calls_reply() {
    let mut ui = Ui::new();
    ui.ask(CANBERRA).await;
    ui.step_until("relation_search").await;
    ui.step_until("entity_prune").await;
    ui.press(KeyCode::Char('n')).await;
    // Australia is reached three ways: scored 0.8 by the model under containedby, and alone
    // (1.0, no call) under bibs_location.country, in the same step.
    let rows = ui.app.visible_rows();
    let alone = rows
        .iter()
        .position(|r| ui.app.node(r.node).is_some_and(|n| n.shown() == "Australia" && n.score == Some(1.0)))
        .expect("Australia alone under a relation");
    ui.app.focus = Focus::Tree;
    ui.app.selected = alone;
    let text = ui.screen(120, 40);
    assert!(text.contains("scored without asking the model"), "{text}");
    assert!(text.contains("it was the only candidate here"), "{text}");
    assert!(!text.contains("reply:"), "no other call's reply is shown as its source: {text}");
    // The one the model scored shows that call.
    ui.app.selected = row_of(&ui.app, "Australia").unwrap();
    assert_eq!(ui.app.node(ui.app.selected_ref().unwrap()).unwrap().score, Some(0.8));
    let text = ui.screen(120, 40);
    assert!(text.contains("reply:") && text.contains("entity_prune"), "{text}");
}

#[tokio::test]
async fn quitting_with_unsaved_steering_asks_first_and_ctrl_z_suspends() {
    let mut ui = Ui::new();
    ui.ask(CANBERRA).await;
    ui.step_until("entity_search").await;
    ui.select("location.location.containedby");
    ui.press(KeyCode::Char('x')).await;
    ui.press(KeyCode::Char('q')).await;
    assert!(!ui.app.quit, "the first q asks");
    assert!(ui.app.message.as_deref().unwrap_or_default().contains("again quits"), "{:?}", ui.app.message);
    // The question is read whole in the status bar at 80 columns: what to press is not cut off.
    let screen = ui.screen(80, 24);
    let status = screen.lines().last().unwrap_or_default();
    assert!(status.contains("q again quits, ctrl-s saves") && !status.contains("M: in full"), "{status}");
    ui.press(KeyCode::Char('j')).await;
    ui.press(KeyCode::Char('q')).await;
    assert!(!ui.app.quit, "another key in between takes the question back");
    ui.press(KeyCode::Char('q')).await;
    assert!(ui.app.quit, "q twice quits");

    let mut ui = Ui::new();
    ui.ask(CANBERRA).await;
    ui.step_until("entity_search").await;
    ui.select("location.location.containedby");
    ui.press(KeyCode::Char('x')).await;
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("s.json");
    ui.press(KeyCode::Char(':')).await;
    ui.typed(&format!("save-as {}", path.display())).await;
    ui.press(KeyCode::Enter).await;
    assert!(path.exists(), "{:?}", ui.app.message);
    ui.press(KeyCode::Char('q')).await;
    assert!(ui.app.quit, "saved: q quits at once");

    let mut ui = Ui::new();
    ui.press_with(KeyCode::Char('z'), KeyModifiers::CONTROL).await;
    assert!(ui.app.suspend, "ctrl-z asks the loop to suspend, even from the question box");
    assert!(ui.app.question().is_empty());
}

#[tokio::test]
async fn the_help_stops_at_its_end_and_the_search_prompt_goes_with_esc() {
    let mut ui = Ui::new();
    ui.ask(CANBERRA).await;
    ui.press(KeyCode::Char('?')).await;
    for _ in 0..100 {
        ui.press(KeyCode::Char('j')).await;
    }
    let end = ui.app.help_scroll;
    assert!(end > 0 && end < 60, "the help scrolls to its end and no further: {end}");
    let text = ui.screen(120, 40);
    assert!(text.contains("↶ set aside by going back"), "its last line is in view: {text}");
    ui.press(KeyCode::Char('q')).await;
    assert!(!ui.app.help && !ui.app.quit);

    ui.press(KeyCode::Char('/')).await;
    ui.typed("Austr").await;
    ui.press(KeyCode::Enter).await;
    assert!(ui.app.message.as_deref().unwrap_or_default().starts_with("/Austr"), "{:?}", ui.app.message);
    ui.press(KeyCode::Esc).await;
    assert!(ui.app.search.is_none());
    assert_eq!(ui.app.message, None, "the search's status goes with it");
}

#[tokio::test]
async fn the_add_picker_lists_the_kgs_candidates_in_words_new_ones_first() {
    let mut ui = Ui::new();
    ui.ask(CANBERRA).await;
    ui.step_until("entity_search").await;
    ui.press(KeyCode::Char('g')).await;
    ui.press(KeyCode::Char('+')).await;
    let picker = ui.app.picker.clone().expect("the picker opens");
    assert!(!picker.items.is_empty());
    assert_eq!(
        picker.note, "· all in the tree: picking one asks to keep it ",
        "ToG put every relation of Canberra in the tree"
    );
    let details: Vec<&str> = picker.items.iter().map(|i| i.detail.as_str()).collect();
    assert!(details.iter().all(|d| !d.contains("PrunedBy") && !d.contains("Kept")), "in words: {details:?}");
    assert!(
        details.iter().any(|d| d.contains("(in the tree, pruned by its score: picking it asks to keep it)")),
        "{details:?}"
    );
    // Those the model was never shown come first.
    let first_known = details.iter().position(|d| d.contains("(in the tree")).unwrap_or(details.len());
    assert!(details[first_known..].iter().all(|d| d.contains("(in the tree")), "{details:?}");
}

#[tokio::test]
async fn the_object_picker_searches_the_kgs_labels_as_you_type() {
    let mut ui = Ui::new();
    ui.flag_the_stadium("Wrong park").await;
    // Opened with nothing typed: no arbitrary entities, a hint.
    let effects = update(&mut ui.app, Action::Key(KeyEvent::new(KeyCode::Char('f'), KeyModifiers::CONTROL)));
    assert!(effects.is_empty(), "nothing to search yet: {effects:?}");
    assert!(ui.screen(120, 40).contains("the KG's labels are searched as you type"));
    // Each key asks for a wake-up; only the latest one searches.
    let first = update(&mut ui.app, key(KeyCode::Char('C')));
    let [Effect::Wake { token: stale, .. }] = first[..] else { panic!("{first:?}") };
    ui.typed("itizens").await;
    assert!(update(&mut ui.app, Action::Woke { token: stale }).is_empty(), "typing went on: no search");
    let picker = ui.app.picker.as_ref().unwrap();
    assert_eq!(picker.searched.as_deref(), Some("Citizens"));
    assert!(picker.items.iter().any(|i| i.text == "Citizens Bank Park"), "{:?}", picker.items);
    ui.press(KeyCode::Enter).await;
    assert_eq!(ui.app.form.as_ref().unwrap().value(1), "Citizens Bank Park");
}

#[tokio::test]
async fn going_back_says_what_it_sets_aside() {
    let mut ui = Ui::new();
    ui.ask(CANBERRA).await;
    ui.step_until("entity_search").await;
    ui.select("location.location.containedby");
    ui.press(KeyCode::Char('x')).await;
    ui.press(KeyCode::Char('x')).await;
    ui.press(KeyCode::Char('p')).await;
    ui.press(KeyCode::Char('n')).await;
    ui.press(KeyCode::Char('b')).await;
    let said = ui.app.message.clone().unwrap_or_default();
    assert!(said.contains("set aside 1 step and 3 overrides"), "{said}");
}

/// The UI's real corrections (`StoreCorrections`) over the demo KG and its scripted model, in
/// the sled store at `store`.
fn store_corrections(store: &std::path::Path) -> ongraph::testing::tui::StoreCorrections {
    let mut config = ongraph::testing::config::Config::default();
    config.defaults.overlay = Some(store.to_path_buf());
    let model = ongraph::testing::llm::ScriptedModel::from_toml("t", common::DEMO_SCRIPT).unwrap();
    ongraph::testing::tui::StoreCorrections::new(
        Arc::new(ongraph::testing::kg::demo_graph()),
        Arc::new(model),
        &config,
        &Default::default(),
        None,
        config.defaults.concurrency,
    )
    .unwrap()
}

/// The README's correction (the Phillies' spring-training ballpark replaced by BayCare
/// Ballpark), as another process stores it.
fn baycare_by_another() -> ongraph::testing::overlay::Draft {
    use ongraph::testing::overlay::{Draft, Op};
    let replace = Op::Replace {
        subject: "m.phillies".into(),
        relation: "baseball.baseball_team.spring_training_stadium".into(),
        old: ongraph::kg::Term::Entity("m.bright_house_field".into()),
        new: ongraph::kg::Term::Entity("new.baycare_ballpark".into()),
        label: Some("BayCare Ballpark".into()),
    };
    Draft {
        op: replace,
        reason: "Renamed".into(),
        generated: false,
        author: "other".into(),
        context: None,
        origin: None,
    }
}

/// A correction made by another process (`ongraph fix`, a second UI) while the UI runs: the
/// UI's corrections are the real ones (`StoreCorrections` over a sled store on disk, opened
/// briefly per operation), and the other process's writes land between two steps.
#[tokio::test]
async fn corrections_made_elsewhere_apply_from_the_next_step() {
    let dir = tempfile::tempdir().unwrap();
    let store = dir.path().join("overlay");
    let corrections = store_corrections(&store);
    let driver = corrections.driver();
    let mut ui = Ui::over(Settings::default(), Arc::new(corrections), driver, dir);
    ui.ask(PHANATIC).await;
    assert!(ui.screen(120, 40).contains("fixes 0"));

    // Another process replaces the stadium before the step that reads it.
    let draft = baycare_by_another();
    let id = SledStore::open(&store).unwrap().add("demo", draft).unwrap().id;
    ui.press(KeyCode::Char('n')).await;
    assert_eq!(ui.app.corrections.len(), 1, "the list is read again");
    assert!(
        ui.app.messages.iter().any(|m| m.text.contains("the corrections were changed elsewhere: 1 active")),
        "told"
    );
    assert!(ui.screen(120, 40).contains("fixes 1"), "the counter follows");
    ui.press(KeyCode::Char('r')).await;
    assert_eq!(ui.run().answer().unwrap().answers, vec!["BayCare Ballpark"], "the steps after it see it");

    // `ongraph fix undo` in another shell: the next run's steps no longer apply it.
    SledStore::open(&store).unwrap().undo("demo", id).unwrap();
    ui.press(KeyCode::Char('a')).await;
    assert_eq!(ui.run().answer().unwrap().answers, vec!["Bright House Field"]);
    assert!(!ui.app.corrections[0].active);
    assert!(ui.screen(120, 40).contains("fixes 0"));
}

#[tokio::test]
async fn lookups_reach_whoever_waits_for_them_and_no_one_else() {
    let mut ui = Ui::new();
    ui.ask(CANBERRA).await;
    ui.step_until("entity_search").await;
    // A finished search stays open; the + picker still gets its own candidates.
    ui.press(KeyCode::Char('/')).await;
    ui.typed("Canb").await;
    ui.press(KeyCode::Enter).await;
    assert!(ui.app.search.is_some());
    ui.press(KeyCode::Char('g')).await;
    ui.press(KeyCode::Char('+')).await;
    let picker = ui.app.picker.as_ref().expect("the picker opens");
    assert!(!picker.loading && !picker.items.is_empty(), "{picker:?}");
    assert!(picker.items.iter().all(|i| matches!(i.value, ongraph::testing::tui::PickValue::Relation(_))));
    let title = format!("{}{}", picker.title, picker.note);
    assert_eq!(title.matches("in the tree").count(), 1, "said once: {title}");
    // An answer nobody waits for any more (an older lookup's) is dropped, even a failure.
    let stale = Action::Looked { token: 0, result: Err("the endpoint went away".into()) };
    assert!(update(&mut ui.app, stale).is_empty());
    assert!(ui.app.picker.is_some(), "a stale failure does not close the picker");
    assert!(ui.app.messages.iter().all(|m| !m.text.contains("went away")));
}

#[tokio::test]
async fn the_object_picker_shows_the_latest_search_even_when_an_older_one_answers_last() {
    let mut ui = Ui::new();
    ui.flag_the_stadium("Wrong park").await;
    update(&mut ui.app, Action::Key(KeyEvent::new(KeyCode::Char('f'), KeyModifiers::CONTROL)));
    // Two searches in flight: "Ci", then "Citizens"; the first answers last.
    let mut lookups = Vec::new();
    for text in ["Ci", "tizens"] {
        for c in text.chars() {
            update(&mut ui.app, key(KeyCode::Char(c)));
        }
        let token = ui.app.picker.as_ref().unwrap().wake;
        let effects = update(&mut ui.app, Action::Woke { token });
        let [Effect::Lookup { token, requests }] = &effects[..] else { panic!("{effects:?}") };
        lookups.push((*token, requests.clone()));
    }
    let driver = demo_driver("");
    let (new, old) = (&lookups[1], &lookups[0]);
    let result = driver.perform(&new.1).await.map_err(|e| e.to_string());
    update(&mut ui.app, Action::Looked { token: new.0, result });
    let result = driver.perform(&old.1).await.map_err(|e| e.to_string());
    update(&mut ui.app, Action::Looked { token: old.0, result });
    let picker = ui.app.picker.as_ref().unwrap();
    assert_eq!(picker.searched.as_deref(), Some("Citizens"));
    assert!(picker.items.iter().all(|i| i.text.contains("Citizens")), "{:?}", picker.items);
}

#[tokio::test]
async fn showing_a_node_under_a_fold_selects_it() {
    let mut ui = Ui::new();
    ui.ask(CANBERRA).await;
    ui.press(KeyCode::Char('r')).await;
    // Fold the topic entity: everything under it is hidden.
    ui.press(KeyCode::Char('g')).await;
    ui.app.focus = Focus::Tree;
    ui.press(KeyCode::Char('h')).await;
    assert_eq!(ui.app.visible_rows().len(), 1);
    ui.press(KeyCode::Char('t')).await;
    let leaf = ui.run().answer().unwrap().paths[0].leaf;
    assert_eq!(ui.app.selected_node(), Some(leaf), "t unfolds the way and selects the path's end");
}

#[tokio::test]
async fn before_a_question_steering_keys_say_to_ask_first() {
    let mut ui = Ui::new();
    ui.press(KeyCode::Esc).await;
    for c in ['n', 'r', 'x', 'b'] {
        ui.press(KeyCode::Char(c)).await;
        let said = ui.app.message.clone().unwrap_or_default();
        assert!(said.ends_with("ask a question first (i, then enter)"), "{c}: {said}");
    }
    ui.press(KeyCode::Char('u')).await;
    assert!(ui.app.message.as_deref().unwrap_or_default().contains("no correction of this sitting to undo"));
}

#[tokio::test]
async fn pane_commands_from_the_palette_act_only_on_a_row_that_is_seen() {
    let mut ui = Ui::new();
    ui.ask(CANBERRA).await;
    ui.press(KeyCode::Char('r')).await;
    ui.app.focus = Focus::Tree;
    ui.press(KeyCode::Char(':')).await;
    ui.typed("rewind-here").await;
    ui.press(KeyCode::Enter).await;
    assert!(ui.run().is_finished(), "nothing was rewound");
    let said = ui.app.message.clone().unwrap_or_default();
    assert!(said.starts_with("rewind-here works on the transcript's selected row"), "{said}");
}

#[tokio::test]
async fn ctrl_c_and_open_do_not_drop_unsaved_steering() {
    let mut ui = Ui::new();
    ui.ask(CANBERRA).await;
    ui.step_until("entity_search").await;
    ui.select("location.location.containedby");
    ui.press(KeyCode::Char('x')).await;
    ui.press_with(KeyCode::Char('c'), KeyModifiers::CONTROL).await;
    assert!(!ui.app.quit, "ctrl-c asks too");
    // Opening another session saves this one first.
    let effects = update(&mut ui.app, Action::Key(KeyEvent::new(KeyCode::Char(':'), KeyModifiers::NONE)));
    assert!(effects.is_empty());
    for c in "open /nonexistent/s.json".chars() {
        update(&mut ui.app, key(KeyCode::Char(c)));
    }
    let effects = update(&mut ui.app, key(KeyCode::Enter));
    assert!(matches!(&effects[..], [Effect::Save { path: None, .. }]), "saved first: {effects:?}");
    // Opened only once saved; a failed save opens nothing.
    let failed = update(&mut ui.app, Action::Saved(Err("disk full".into())));
    assert!(failed.is_empty(), "{failed:?}");
    assert!(ui.app.message.as_deref().unwrap_or_default().ends_with("nothing was opened"), "{:?}", ui.app.message);
    for c in ":open /nonexistent/s.json".chars() {
        update(&mut ui.app, key(KeyCode::Char(c)));
    }
    update(&mut ui.app, key(KeyCode::Enter));
    let opened = update(&mut ui.app, Action::Saved(Ok("/tmp/saved.json".into())));
    assert!(matches!(&opened[..], [Effect::Open { .. }]), "{opened:?}");
    ui.press_with(KeyCode::Char('c'), KeyModifiers::CONTROL).await;
    ui.press_with(KeyCode::Char('c'), KeyModifiers::CONTROL).await;
    assert!(ui.app.quit, "ctrl-c twice quits");
}

#[tokio::test]
async fn the_help_and_the_inspector_scroll_to_their_last_row_and_no_further() {
    let mut ui = Ui::new();
    ui.ask(CANBERRA).await;
    ui.step_until("entity_search").await;
    update(&mut ui.app, Action::Resize(80, 24));
    ui.press(KeyCode::Char('?')).await;
    for _ in 0..60 {
        ui.press(KeyCode::Char('j')).await;
    }
    let text = ui.screen(80, 24);
    assert!(text.contains("going back"), "the help's last row shows at 80×24: {text}");
    ui.press(KeyCode::Char('x')).await;
    // The inspector: G goes to the end of the prompt, k comes back at once.
    update(&mut ui.app, Action::Resize(120, 40));
    ui.select("location.location.time_zones");
    ui.press(KeyCode::Tab).await;
    assert_eq!(ui.app.focus, Focus::Inspector);
    ui.press(KeyCode::Char('G')).await;
    let end = ui.app.inspector_at;
    assert!(end > 0 && end < 400, "{end}");
    let text = ui.screen(120, 40);
    let call = ui.run().trace().iter().find(|e| e.phase() == Some("relation_prune")).unwrap().calls[0].clone();
    let last = call.prompt.lines().rev().find(|l| !l.trim().is_empty()).unwrap().trim();
    let tail: String = last.chars().rev().take(12).collect::<Vec<_>>().into_iter().rev().collect();
    assert!(text.contains(&tail), "the prompt's last line ({last:?}) is in view: {text}");
    ui.press(KeyCode::Char('k')).await;
    assert_eq!(ui.app.inspector_at, end - 1);
}

#[tokio::test]
async fn a_recorded_change_this_build_refuses_is_said_and_the_replay_stops_following() {
    use ongraph::testing::session::Moment;
    let mut ui = Ui::new();
    ui.ask(PHANATIC).await;
    ui.press(KeyCode::Char('r')).await;
    let leaf = ui.run().answer().unwrap().paths[0].leaf;
    // An older build let a pin through after the answer and recorded it.
    let mut session = ui.app.session();
    session.runs[0].moments.push(Moment::Override { change: ongraph::engine::Override::Pin { node: leaf } });
    let mut app = App::replaying(session, false).unwrap();
    update(&mut app, key(KeyCode::Enter));
    update(&mut app, key(KeyCode::Char('r')));
    assert!(app.run.as_ref().unwrap().is_finished(), "{:?}", app.message);
    // The next step is the recorded pin.
    update(&mut app, key(KeyCode::Char('n')));
    let said = app.messages.iter().rev().find(|m| m.error).map(|m| m.text.clone()).unwrap_or_default();
    assert!(
        said.starts_with("the recording's next change cannot be replayed (cannot pin Bright House Field"),
        "{said}"
    );
    assert!(app.replay.as_ref().unwrap().player.is_none(), "the replay no longer follows the recording");
    assert!(app.run.as_ref().unwrap().is_finished(), "the answer stands");
}

#[tokio::test]
async fn a_flag_cannot_name_the_flagged_object_as_the_right_one() {
    let mut ui = Ui::new();
    ui.flag_the_stadium("Wrong park").await;
    ui.typed("Bright House Field").await;
    let effects = update(&mut ui.app, key(KeyCode::Enter));
    assert!(effects.is_empty(), "nothing is recorded: {effects:?}");
    let problem = ui.app.form.as_ref().and_then(|f| f.problem.clone()).unwrap_or_default();
    assert!(problem.contains("is the flagged object's name"), "{problem}");
}

#[tokio::test]
async fn f1_helps_over_dialogs_and_the_question_boxs_help_lists_its_own_keys() {
    let mut ui = Ui::new();
    // In the question box: its own keys first, then the tree's once left.
    ui.press(KeyCode::F(1)).await;
    let help = ui.screen(120, 40);
    assert!(help.contains("Keys in the question box"), "{help}");
    assert!(help.contains("alt-enter") && help.contains("a new line in the question"), "{help}");
    assert!(help.contains("Once you leave the box (esc), in the beam tree:"), "{help}");
    ui.press(KeyCode::Char('x')).await;
    assert!(!ui.app.help && ui.app.question().is_empty(), "the closing key is not typed");

    // Over the flag form: the form's keys alone; closing it goes back to the form, text kept.
    ui.ask(PHANATIC).await;
    ui.press(KeyCode::Char('r')).await;
    ui.select("Bright House Field");
    ui.press(KeyCode::Char('f')).await;
    ui.typed("wrong").await;
    ui.press(KeyCode::F(1)).await;
    assert!(ui.app.help, "F1 opens the help over a form");
    let help = ui.screen(120, 40);
    assert!(help.contains("Keys in the form") && help.contains("search the KG for the object"), "{help}");
    assert!(!help.contains("take one step"), "the screen's keys do nothing under a form: {help}");
    ui.press(KeyCode::Char('j')).await;
    assert!(ui.app.help, "j scrolls the help, it is not typed into the form");
    ui.press(KeyCode::Esc).await;
    assert!(!ui.app.help);
    let form = ui.app.form.as_ref().expect("the form is still open");
    assert_eq!(form.value(0), "wrong", "nothing typed into it while the help was open");
}

#[tokio::test]
async fn the_messages_pane_follows_new_messages_and_esc_or_m_leave_it() {
    let mut ui = Ui::new();
    ui.ask(CANBERRA).await;
    ui.press(KeyCode::Char('M')).await;
    assert_eq!(ui.app.focus, Focus::Messages);
    let last = ui.app.messages.len() - 1;
    assert_eq!(ui.app.messages_at, last);
    ui.press(KeyCode::Char('n')).await;
    assert_eq!(ui.app.messages_at, ui.app.messages.len() - 1, "at the newest, the selection follows");
    assert!(ui.app.messages.len() > last + 1);
    // Scrolled up, it stays where the user put it.
    ui.press(KeyCode::Char('k')).await;
    let at = ui.app.messages_at;
    ui.press(KeyCode::Char('z')).await;
    assert_eq!(ui.app.messages_at, at);
    ui.press(KeyCode::Esc).await;
    assert_eq!(ui.app.focus, Focus::Tree, "esc, with nothing to cancel, goes back to the tree");
    ui.press(KeyCode::Char('M')).await;
    ui.press(KeyCode::Char('M')).await;
    assert_eq!(ui.app.focus, Focus::Tree, "M again goes back to the tree");
}

#[tokio::test]
async fn a_step_key_while_a_step_runs_says_so_and_the_corrections_open_on_the_newest_active() {
    let mut ui = Ui::new();
    ui.ask(CANBERRA).await;
    // A step in flight (not yet performed): another n says why it does nothing.
    let effects = update(&mut ui.app, key(KeyCode::Char('n')));
    assert!(matches!(&effects[..], [Effect::Perform { .. }]), "{effects:?}");
    let again = update(&mut ui.app, key(KeyCode::Char('n')));
    assert!(again.is_empty());
    assert_eq!(ui.app.message.as_deref(), Some("a step is running: wait for it, or esc cancels it"));
    ui.settle(effects).await;

    // Two corrections, the newest undone: the pane opens on the older, active one.
    for (entity, name) in [("m.canberra", "Canberra ACT"), ("m.australia", "Commonwealth of Australia")] {
        let draft = ongraph::testing::overlay::Draft {
            op: ongraph::testing::overlay::Op::Relabel { entity: entity.into(), label: name.into() },
            reason: "test".into(),
            generated: false,
            author: "tester".into(),
            context: None,
            origin: None,
        };
        ui.settle(vec![Effect::Correct { drafts: vec![draft] }]).await;
    }
    ui.settle(vec![Effect::Undo { id: 2 }]).await;
    assert_eq!(ui.app.corrections.len(), 2);
    ui.app.focus = Focus::Tree;
    ui.app.corrections_at = 1;
    while ui.app.focus != Focus::Corrections {
        ui.press(KeyCode::Tab).await;
    }
    assert_eq!(ui.app.corrections_at, 0, "the newest active correction is selected: u undoes it");
}

#[tokio::test]
async fn a_question_of_several_lines_shows_them_all() {
    let mut ui = Ui::new();
    for line in ["line one", "line two", "line three"] {
        ui.typed(line).await;
        ui.press_with(KeyCode::Enter, KeyModifiers::ALT).await;
    }
    ui.typed("line four").await;
    let text = ui.screen(120, 40);
    for line in ["line one", "line two", "line three", "line four"] {
        assert!(text.contains(line), "{line} missing: {text}");
    }
}

#[tokio::test]
async fn saving_nothing_clearing_nothing_and_a_replay_say_what_they_are() {
    let mut ui = Ui::new();
    ui.press_with(KeyCode::Char('s'), KeyModifiers::CONTROL).await;
    assert_eq!(ui.app.message.as_deref(), Some("nothing to save yet: ask a question first"));
    ui.ask(CANBERRA).await;
    ui.press(KeyCode::Char('B')).await;
    assert_eq!(ui.app.message.as_deref(), Some("no branch is set aside: b (back) sets one aside"));

    // A replay's first screen says how to replay the question waiting in the box.
    let session = Session::load(Path::new("sessions/canberra.json")).unwrap();
    let app = App::replaying(session, false).unwrap();
    let text = screen(&app, 120, 40);
    assert!(text.contains("A recorded session: enter replays the question above"), "{text}");
    assert!(!text.contains("No question yet"), "{text}");
    assert!(text.contains("Beam · demo · scripted demo · replay"), "one replay in the title: {text}");
}

/// Corrections whose every call waits until the test lets it through: a store that another
/// process holds for as long as the test likes. Each call says its name when it starts.
struct Gated {
    inner: TempCorrections,
    started: mpsc::UnboundedSender<&'static str>,
    gate: std::sync::Mutex<std::sync::mpsc::Receiver<()>>,
    /// The next `refresh` finds the store changed (another process wrote to it).
    changed: std::sync::atomic::AtomicBool,
}

impl Gated {
    fn wait(&self, call: &'static str) -> anyhow::Result<()> {
        let _ = self.started.send(call);
        // Only a guard against a hang: a call the test never lets through fails.
        let gate = self.gate.lock().map_err(|_| anyhow::anyhow!("poisoned"))?;
        gate.recv_timeout(std::time::Duration::from_secs(10))
            .map_err(|_| anyhow::anyhow!("{call}: the store was never let go"))
    }
}

impl Corrections for Gated {
    fn record(&self, drafts: Vec<ongraph::testing::overlay::Draft>) -> anyhow::Result<(Vec<u64>, Driver)> {
        self.wait("record")?;
        self.inner.record(drafts)
    }
    fn undo(&self, id: u64) -> anyhow::Result<Driver> {
        self.wait("undo")?;
        self.inner.undo(id)
    }
    fn list(&self) -> anyhow::Result<Vec<ongraph::testing::overlay::Correction>> {
        self.wait("list")?;
        self.inner.list()
    }
    fn refresh(&self) -> anyhow::Result<Option<(Driver, Vec<ongraph::testing::overlay::Correction>)>> {
        self.wait("refresh")?;
        if !self.changed.swap(false, std::sync::atomic::Ordering::SeqCst) {
            return Ok(None);
        }
        Ok(Some((self.inner.driver()?, self.inner.list()?)))
    }
    fn export(&self, path: Option<&Path>) -> anyhow::Result<(PathBuf, usize)> {
        self.wait("export")?;
        self.inner.export(path)
    }
}

/// The next message on `rx`; the timeout only guards against a hang.
async fn next<T>(rx: &mut mpsc::UnboundedReceiver<T>) -> T {
    tokio::time::timeout(std::time::Duration::from_secs(10), rx.recv())
        .await
        .expect("nothing came (the executor is stuck)")
        .expect("the channel closed")
}

/// The stadium's names in a step's answer to a neighbours request.
fn stadiums(result: &Result<Vec<ongraph::engine::Response>, String>) -> Vec<String> {
    let responses = result.as_ref().expect("the step is performed");
    let [ongraph::engine::Response::Neighbours { neighbours }] = &responses[..] else { panic!("{responses:?}") };
    neighbours.iter().map(|n| n.label.clone().unwrap_or_else(|| format!("{:?}", n.term))).collect()
}

/// While another process holds the corrections store, the executor still answers at once (the
/// UI redraws, keys and timers work), and the store's calls and the steps keep their order: a
/// step sees what the store held when it was asked for, a correction queued before it, and is
/// answered after `CorrectionsChanged`.
#[tokio::test]
async fn a_busy_store_never_holds_up_the_executor_and_steps_still_see_every_write() {
    use ongraph::kg::{Direction, RelationRef, Term};
    use ongraph::testing::overlay::{Draft, Op};
    let dir = tempfile::tempdir().unwrap();
    let inner = TempCorrections { store: SledStore::open(&dir.path().join("overlay")).unwrap(), hidden: Vec::new() };
    let driver = inner.driver().unwrap();
    let (started_tx, mut started) = mpsc::unbounded_channel();
    let (open, gate) = std::sync::mpsc::channel();
    let gated = Arc::new(Gated {
        inner,
        started: started_tx,
        gate: std::sync::Mutex::new(gate),
        changed: std::sync::atomic::AtomicBool::new(false),
    });
    let (tx, mut rx) = mpsc::unbounded_channel();
    let mut executor = Executor::new(Some(Arc::new(driver)), Some(gated.clone()), None, tx);
    let stadium = vec![ongraph::engine::Request::Neighbours {
        entity: "m.phillies".into(),
        relation: RelationRef {
            relation: "baseball.baseball_team.spring_training_stadium".into(),
            direction: Direction::Out,
            label: None,
        },
    }];
    let draft =
        |op| Draft { op, reason: "Renamed".into(), generated: false, author: "t".into(), context: None, origin: None };

    // Another process renames the stadium; the next step's refresh finds the store held.
    let relabel = Op::Relabel { entity: "m.bright_house_field".into(), label: "BayCare Ballpark".into() };
    gated.inner.store.add("demo", draft(relabel)).unwrap();
    gated.changed.store(true, std::sync::atomic::Ordering::SeqCst);
    executor.execute(Effect::Perform {
        generation: 7,
        requests: stadium.clone(),
        method: ongraph::engine::MethodId::TOG,
    });
    assert_eq!(next(&mut started).await, "refresh");
    // The store is still held: a timer and a lookup are answered meanwhile, the lookup through
    // the driver as it was (nothing new was acknowledged).
    executor.execute(Effect::Wake { token: 1, after_ms: 0 });
    let woke = next(&mut rx).await;
    assert!(matches!(woke, Action::Woke { token: 1 }), "the executor waited for the store: {woke:?}");
    executor.execute(Effect::Lookup { token: 2, requests: stadium.clone() });
    let Action::Looked { token: 2, result } = next(&mut rx).await else { panic!("not the lookup's answer") };
    assert_eq!(stadiums(&result), ["Bright House Field"]);
    // A correction asked for now waits its turn behind the step's refresh.
    let replace = Op::Replace {
        subject: "m.phillies".into(),
        relation: "baseball.baseball_team.spring_training_stadium".into(),
        old: Term::Entity("m.bright_house_field".into()),
        new: Term::Entity("new.spectrum_field".into()),
        label: Some("Spectrum Field".into()),
    };
    executor.execute(Effect::Correct { drafts: vec![draft(replace)] });

    // The store lets go: the news first, then the step, through the store as it is now.
    open.send(()).unwrap();
    let Action::CorrectionsChanged(Ok(list)) = next(&mut rx).await else { panic!("the change is not said first") };
    assert_eq!(list.len(), 1);
    let Action::Performed { generation: 7, result, .. } = next(&mut rx).await else { panic!("no step") };
    assert_eq!(stadiums(&result), ["BayCare Ballpark"], "the step sees the store as the refresh read it");
    assert_eq!(next(&mut started).await, "record", "the correction is written after the refresh");

    // While it is written, a step asked for (before it is acknowledged) waits for it; the UI
    // still gets its timer.
    executor.execute(Effect::Perform {
        generation: 8,
        requests: stadium.clone(),
        method: ongraph::engine::MethodId::TOG,
    });
    executor.execute(Effect::Wake { token: 3, after_ms: 0 });
    assert!(matches!(next(&mut rx).await, Action::Woke { token: 3 }));
    open.send(()).unwrap();
    let Action::Corrected(Ok(ids)) = next(&mut rx).await else { panic!("the correction is not acknowledged") };
    assert_eq!(ids.len(), 1);
    assert_eq!(next(&mut started).await, "refresh", "the step's refresh comes after the write");
    open.send(()).unwrap();
    let Action::Performed { generation: 8, result, .. } = next(&mut rx).await else {
        panic!("nothing changed elsewhere: no news before the step")
    };
    assert_eq!(stadiums(&result), ["Spectrum Field"], "the step sees the correction acknowledged before it");

    // A list and an export wait their turn too, and are answered as before.
    executor.execute(Effect::ListCorrections);
    executor.execute(Effect::Export { path: Some(dir.path().join("out.json")) });
    assert_eq!(next(&mut started).await, "list");
    open.send(()).unwrap();
    let Action::Listed(Ok(list)) = next(&mut rx).await else { panic!("not listed") };
    assert_eq!(list.len(), 2);
    assert_eq!(next(&mut started).await, "export");
    open.send(()).unwrap();
    let Action::Exported(Ok((_, 2))) = next(&mut rx).await else { panic!("not exported") };
    executor.finish().await;
}

/// The store answers corrections in their own time now: a second one can be made before the
/// first is acknowledged, and the recording still gives each its own id.
#[tokio::test]
async fn corrections_made_before_the_last_was_acknowledged_are_recorded_with_their_own_ids() {
    let mut ui = Ui::new();
    ui.flag_the_stadium("Renamed in 2021").await;
    ui.typed("BayCare Ballpark").await;
    // The name is looked up first (no entity has it); the next Enter records it.
    let lookup = update(&mut ui.app, key(KeyCode::Enter));
    ui.settle(lookup).await;
    let mut pending = update(&mut ui.app, key(KeyCode::Enter));
    ui.select("Philadelphia Phillies");
    let mut keys = vec![key(KeyCode::Char('e')), Action::Key(KeyEvent::new(KeyCode::Char('u'), KeyModifiers::CONTROL))];
    keys.extend("The Phillies".chars().map(|c| key(KeyCode::Char(c))));
    keys.push(key(KeyCode::Tab));
    keys.extend("Common name".chars().map(|c| key(KeyCode::Char(c))));
    keys.push(key(KeyCode::Enter));
    for action in keys {
        pending.extend(update(&mut ui.app, action));
    }
    assert_eq!(pending.iter().filter(|e| matches!(e, Effect::Correct { .. })).count(), 2, "{pending:?}");
    ui.settle(pending).await;
    let recorded: Vec<(u64, String)> =
        ui.app.recording.corrections.iter().map(|c| (c.id, c.draft.op.describe())).collect();
    assert_eq!(
        recorded,
        [
            (
                1,
                "replace m.phillies baseball.baseball_team.spring_training_stadium m.bright_house_field with new.baycare_ballpark named \"BayCare Ballpark\"".to_string()
            ),
            (2, "relabel m.phillies as \"The Phillies\"".to_string()),
        ]
    );
    assert_eq!(ui.app.corrections.len(), 2);
}

/// The selected row's node, in the current beam.
fn row_of_node(app: &App, id: usize) -> usize {
    app.visible_rows().iter().position(|r| r.node.branch.is_none() && r.node.id == id).expect("the node is in the tree")
}

#[tokio::test]
async fn pruning_all_there_is_to_explore_is_refused_and_dropping_a_pin_says_it_unpins() {
    let mut ui = Ui::new();
    ui.ask(CANBERRA).await;
    ui.step_until("reasoning").await;
    ui.select("Canberra");
    let root = ui.app.selected_node().unwrap();
    ui.press(KeyCode::Char('p')).await;
    assert_eq!(ui.app.message.as_deref(), Some("pinned Canberra"));
    let entries = ui.run().trace().len();
    let live = |ui: &Ui| {
        ui.run().beam().nodes.iter().filter(|n| n.depth == 1 && n.term().is_some() && n.status.is_live()).count()
    };
    let before = live(&ui);
    ui.press(KeyCode::Char('d')).await;
    let said = ui.app.messages.last().unwrap();
    assert!(said.error, "a refusal: {}", said.text);
    assert_eq!(
        said.text,
        "cannot prune the path at Canberra: it would leave nothing to explore (keep another path first)"
    );
    assert!(!said.text.contains('\n'));
    assert_eq!(ui.run().trace().len(), entries, "nothing recorded");
    assert_eq!(ui.run().beam().nodes[root].status, Status::PinnedByUser, "the pin stands");
    assert_eq!(live(&ui), before);

    // Dropping a path you pinned says it unpins it.
    let kept = ui
        .run()
        .beam()
        .nodes
        .iter()
        .find(|n| n.depth == 1 && n.term().is_some() && n.status == Status::Kept)
        .map(|n| (n.id, n.shown().to_string()))
        .unwrap();
    ui.app.selected = row_of_node(&ui.app, kept.0);
    ui.press(KeyCode::Char('p')).await;
    ui.press(KeyCode::Char('x')).await;
    assert_eq!(ui.app.message.clone().unwrap_or_default(), format!("unpinned and dropped {}", kept.1));
    assert_eq!(ui.run().beam().nodes[kept.0].status, Status::PrunedByUser);
}

#[tokio::test]
async fn a_candidate_you_kept_stays_yours_in_the_tree_and_the_inspector() {
    let mut ui = Ui::new();
    ui.ask(CANBERRA).await;
    for _ in 0..3 {
        ui.press(KeyCode::Char('n')).await;
    }
    ui.select("location.location.time_zones");
    let zones = ui.app.selected_node().unwrap();
    let screen = ui.screen(120, 40);
    assert!(screen.contains("- -> location.location.time_zones"), "pruned by the model first: {screen}");
    ui.press(KeyCode::Char('x')).await;
    assert_eq!(ui.app.message.as_deref(), Some("kept location.location.time_zones"));
    // Steps later it is still yours, not the model's.
    for _ in 0..2 {
        ui.press(KeyCode::Char('n')).await;
        ui.app.selected = row_of_node(&ui.app, zones);
        let screen = ui.screen(120, 40);
        assert!(screen.contains("* -> location.location.time_zones"), "{screen}");
        assert!(!screen.contains("+ -> location.location.time_zones"), "{screen}");
        assert!(screen.contains("status: kept by you against the model's score"), "{screen}");
        assert!(!screen.contains("status: kept  "), "not the model's plain keep: {screen}");
    }
    assert!(ui.run().beam().nodes[zones].status.is_live());
}

#[tokio::test]
async fn back_right_after_an_override_takes_back_only_that_override() {
    let mut ui = Ui::new();
    ui.ask(CANBERRA).await;
    for _ in 0..3 {
        ui.press(KeyCode::Char('n')).await;
    }
    let steps: Vec<usize> = ui.run().trace().iter().map(|e| e.index).collect();
    ui.select("location.location.time_zones");
    let zones = ui.app.selected_node().unwrap();
    ui.select("base.biblioness.bibs_location.country");
    let bibs = ui.app.selected_node().unwrap();
    ui.press(KeyCode::Char('x')).await;
    ui.app.selected = row_of_node(&ui.app, zones);
    ui.press(KeyCode::Char('x')).await;
    assert!(ui.run().beam().nodes[zones].status.is_live());

    // b takes back the last override only: the model's step and the first override stand.
    ui.press(KeyCode::Char('b')).await;
    assert_eq!(ui.app.message.as_deref(), Some("took back: kept location.location.time_zones"));
    assert_eq!(ui.run().beam().nodes[zones].status, Status::PrunedByScore);
    assert_eq!(ui.run().beam().nodes[bibs].status, Status::PrunedByUser, "the earlier override stands");
    assert_eq!(ui.run().next_phase(), "entity_search");
    let in_effect: Vec<usize> = ui.run().trace().iter().filter(|e| e.phase().is_some()).map(|e| e.index).collect();
    assert_eq!(in_effect, steps, "no step taken back");
    ui.press(KeyCode::Char('b')).await;
    assert_eq!(ui.app.message.as_deref(), Some("took back: dropped base.biblioness.bibs_location.country"));
    assert!(ui.run().beam().nodes[bibs].status.is_live());
    // With no override left since the last step, b goes back one step as before.
    ui.press(KeyCode::Char('b')).await;
    assert!(
        ui.app.message.as_deref().unwrap_or_default().starts_with("back at step 2: set aside 1 step"),
        "{:?}",
        ui.app.message
    );
    assert_eq!(ui.run().next_phase(), "relation_prune");

    // The recording replays the same way.
    let session = ui.app.session();
    assert_eq!(session.replay(0).unwrap().trace(), ui.run().trace());
}

#[tokio::test]
async fn gog_a_rejected_triple_and_an_answer_from_own_knowledge_say_what_they_are() {
    let mut ui = Ui::with(Settings { method: ongraph::engine::MethodId::GOG, ..Settings::default() }, ikg_hidden());
    ui.ask(APPLE).await;
    while ui.run().generated().is_empty() {
        ui.press(KeyCode::Char('n')).await;
    }
    let pacific = ui.run().generated().iter().find(|g| g.kept).unwrap().node;
    ui.app.selected = row_of_node(&ui.app, pacific);
    ui.press(KeyCode::Char('x')).await;
    ui.step_until("done").await;
    let answer = ui.run().answer().unwrap();
    assert_eq!(answer.source, ongraph::engine::AnswerSource::OwnKnowledge);
    let source = ui.run().answer_source(|_| false).unwrap();
    assert_eq!(source, "from the LLM's own knowledge (the model finished without a KG path to its answer)");
    ui.app.bottom = Bottom::Answer;
    let screen = ui.screen(120, 40);
    assert!(!screen.contains("depth limit"), "{screen}");
    assert!(screen.contains("the model finished without a KG path to its answer"), "{screen}");

    // The triple verification rejected says so, and shows the verification call.
    let mountain = ui.run().generated().iter().find(|g| !g.kept && g.tail == "Mountain Time Zone").unwrap().node;
    ui.app.selected = row_of_node(&ui.app, mountain);
    let screen = ui.screen(120, 60);
    assert!(screen.contains("status: rejected by verification"), "{screen}");
    assert!(!screen.contains("pruned by its score"), "{screen}");
    assert!(screen.contains("gog_verify"), "the verification call is found: {screen}");
}

/// The answer to a name's lookup that arrives after the field was edited is for another name:
/// dropped, recording nothing by itself.
#[tokio::test]
async fn a_late_lookup_for_a_name_since_edited_does_nothing() {
    let mut ui = Ui::new();
    ui.flag_the_stadium("wrong ballpark").await;
    ui.typed("Citizens Bank Park").await;
    let late = update(&mut ui.app, key(KeyCode::Enter));
    assert!(matches!(&late[..], [Effect::Lookup { .. }]), "{late:?}");
    ui.press_with(KeyCode::Char('u'), KeyModifiers::CONTROL).await;
    ui.typed("Some Other Park").await;
    // The lookup of "Citizens Bank Park" (one exact match) lands now.
    ui.settle(late).await;
    assert!(ui.app.corrections.is_empty(), "nothing recorded without an Enter: {:?}", ui.app.corrections);
    let form = ui.app.form.as_ref().expect("the form is still open");
    assert_eq!(form.value(1), "Some Other Park");
    assert!(matches!(&form.kind, ongraph::testing::tui::FormKind::Flag { object: None, .. }), "{form:?}");
    assert!(!form.problem.as_deref().unwrap_or_default().contains("Some Other Park"), "{form:?}");
    // The edited name is looked up in its turn, not made a new entity unasked.
    let next = update(&mut ui.app, key(KeyCode::Enter));
    assert!(matches!(&next[..], [Effect::Lookup { .. }]), "{next:?}");
}

#[tokio::test]
async fn a_question_the_demo_does_not_know_says_what_to_do_in_the_tree() {
    // Found by a new-user trial: the tree said "n takes the next step", and n failed again.
    let mut ui = Ui::new();
    ui.ask("Who wrote Hamlet?").await;
    assert!(ui.app.messages.last().is_some_and(|n| n.error), "{:?}", ui.app.messages);
    let screen = ui.screen(80, 24);
    // The beam pane's text, its wrapped lines joined.
    let pane: String = screen
        .lines()
        .skip(3)
        .take(12)
        .filter_map(|l| l.trim_matches('"').split('│').nth(1).map(str::trim))
        .collect::<Vec<_>>()
        .join(" ");
    assert!(pane.contains("No beam yet: the step failed (M: why, in full)."), "{pane}\n{screen}");
    assert!(pane.contains("i edits the question"), "{pane}");
}

/// Issue 38, in the UI: what a correction touches of the kept answers (here, this sitting's
/// runs) is said when it is stored, listed by `I` in the messages pane, and shown beside a
/// teammate's correction waiting for review.
#[tokio::test]
async fn the_ui_says_lists_and_shows_what_a_correction_touches() {
    let mut ui = Ui::new();
    ui.flag_the_stadium("Renamed").await;
    ui.press(KeyCode::Enter).await;
    assert_eq!(
        ui.app.message.as_deref(),
        Some("correction 1 recorded; touches 1 kept answer (I: which); a: ask again")
    );
    ui.press(KeyCode::Char('I')).await;
    assert_eq!(ui.app.focus, Focus::Messages);
    let said: Vec<&str> = ui.app.messages.iter().map(|m| m.text.as_str()).collect();
    assert!(said.contains(&"correction 1 touches 1 of 1 kept answers (1 rest on it)"), "{said:?}");
    assert!(
        said.iter()
            .any(|l| l.starts_with("  rests on it: this sitting, run 1  ") && l.ends_with("→ Bright House Field")),
        "{said:?}"
    );

    // A teammate's correction of the Phillies' name, pulled and held for approval: listed, its
    // impact is read, and the review pane shows it before y or X.
    let pulled: ongraph::testing::overlay::Correction = serde_json::from_value(serde_json::json!({
        "id": 2, "kg": "demo", "op": "relabel", "entity": "m.phillies", "label": "The Phils",
        "reason": "r", "author": "Bea", "created": "2026-11-25T10:00:00.000Z", "active": true, "history": [],
        "team": { "record": "urn:uuid:2", "set": "http://example.org/c", "shared": true, "pulled": true, "reviews": [] }
    }))
    .unwrap();
    ui.app.held_sets = vec!["http://example.org/c".into()];
    let effects = update(&mut ui.app, Action::Listed(Ok(vec![pulled])));
    assert!(matches!(&effects[..], [Effect::Impact { corrections }] if corrections[0].0 == 2), "{effects:?}");
    ui.settle(effects).await;
    ui.app.focus = Focus::Corrections;
    ui.app.bottom = Bottom::Corrections;
    let shown = ui.screen(140, 40);
    assert!(shown.contains("#2   active [awaits approval] [touches 1 kept] relabel m.phillies"), "{shown}");
}

/// With the real corrections (`StoreCorrections`, a sled store and the impact index on disk)
/// and a saved session kept: `I` lists the saved runs a correction touches and `R` re-runs
/// them with it applied, old → new, reusing the session's recorded replies where the run asks
/// the same. The re-runs are made beside the store's queue: steps do not wait for them.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_ui_reruns_the_kept_answers_a_correction_touches() {
    let dir = tempfile::tempdir().unwrap();
    let runs = dir.path().join("sessions");
    std::fs::create_dir_all(&runs).unwrap();
    std::fs::copy("sessions/phillie-phanatic.json", runs.join("phanatic.json")).unwrap();
    let store = dir.path().join("overlay");
    let corrections = store_corrections(&store).with_runs(vec![runs]);
    let driver = corrections.driver();
    let mut ui = Ui::over(Settings::default(), Arc::new(corrections), driver, dir);
    // The README's correction, made with `ongraph fix replace` in another shell.
    let draft = baycare_by_another();
    SledStore::open(&store).unwrap().add("demo", draft).unwrap();
    ui.settle(vec![Effect::ListCorrections]).await;
    ui.app.focus = Focus::Corrections;
    ui.app.corrections_at = 0;
    ui.press(KeyCode::Char('I')).await;
    let said: Vec<&str> = ui.app.messages.iter().map(|m| m.text.as_str()).collect();
    assert!(said.contains(&"correction 1 touches 2 of 2 kept answers (2 rest on it)"), "{said:?}");
    ui.app.focus = Focus::Corrections;
    ui.press(KeyCode::Char('R')).await;
    assert_eq!(ui.app.focus, Focus::Messages);
    let said: Vec<&str> = ui.app.messages.iter().map(|m| m.text.as_str()).collect();
    assert!(said.contains(&"correction 1: re-running the kept answers it touches…"), "{said:?}");
    assert!(said.contains(&"correction 1: 1 of 2 kept answers change (2 re-run)"), "{said:?}");
    let rerun = |run: &str| {
        said.iter().find(|l| l.contains(&format!("phanatic.json run {run}  ")) && l.contains("LLM call")).copied()
    };
    assert!(
        rerun("1").is_some_and(|l| l.ends_with(": Bright House Field → BayCare Ballpark  (changes; 1 LLM call(s))")),
        "{said:?}"
    );
    assert!(
        rerun("2").is_some_and(|l| l.ends_with(": BayCare Ballpark → BayCare Ballpark  (stays; 0 LLM call(s))")),
        "{said:?}"
    );
    // One at a time; and answers that come back while a question is being typed leave the
    // focus where it is (the keys typed stay text, never commands).
    ui.app.focus = Focus::Corrections;
    let effects = update(&mut ui.app, key(KeyCode::Char('R')));
    assert!(matches!(&effects[..], [Effect::RerunImpact { .. }]), "{effects:?}");
    assert!(update(&mut ui.app, key(KeyCode::Char('R'))).is_empty(), "one at a time");
    assert!(ui.app.message.as_deref().unwrap_or_default().contains("being re-run already"));
    ui.press(KeyCode::Char('i')).await;
    assert_eq!(ui.app.focus, Focus::Question);
    ui.settle(effects).await;
    assert_eq!(ui.app.focus, Focus::Question, "not moved while typing");
    assert_eq!(ui.app.message.as_deref(), Some("correction 1: 1 of 2 kept answers change (2 re-run) (M: which)"));
    ui.press(KeyCode::Esc).await;
    // The help lists the key.
    ui.press(KeyCode::Char('?')).await;
    let help = ui.screen(140, 60);
    assert!(help.contains("re-run the kept answers the selected correction touches"), "{help}");
}

#[tokio::test]
async fn the_corrections_pane_reviews_teammates_corrections_only_and_shows_their_state() {
    let mut ui = Ui::new();
    let correction = |id: u64, team: serde_json::Value| -> ongraph::testing::overlay::Correction {
        let mut c = serde_json::json!({
            "id": id, "kg": "demo", "op": "relabel", "entity": format!("m.e{id}"), "label": format!("name {id}"),
            "reason": "r", "author": "Bea", "created": "2026-11-25T10:00:00.000Z", "active": true, "history": []
        });
        if !team.is_null() {
            c["team"] = team;
        }
        serde_json::from_value(c).unwrap()
    };
    let team = |id: u64, pulled: bool, shared: bool, reviews: serde_json::Value| {
        serde_json::json!({ "record": format!("urn:uuid:{id}"), "set": "http://example.org/c",
            "shared": shared, "pulled": pulled, "reviews": reviews })
    };
    let rejected = serde_json::json!([{ "record": "urn:uuid:9", "approve": false, "author": "Dee",
        "at": "2026-11-25T10:00:01.000Z" }]);
    ui.app.corrections = vec![
        correction(1, serde_json::Value::Null),
        correction(2, team(2, false, false, serde_json::json!([]))),
        correction(3, team(3, true, true, serde_json::json!([]))),
        correction(4, team(4, true, true, rejected)),
    ];
    ui.app.held_sets = vec!["http://example.org/c".into()];
    ui.app.focus = Focus::Corrections;
    ui.app.bottom = Bottom::Corrections;
    let shown = ui.screen(140, 40);
    assert!(shown.contains("Corrections to demo (4) · u: undo · y: approve · X: reject"), "{shown}");
    for line in [
        "#2   active [pending] relabel",
        "#3   active [awaits approval] relabel",
        "#4   active [not applied: rejected by Dee] relabel",
    ] {
        assert!(shown.contains(line), "{line}: {shown}");
    }
    // Two apply (3 and 4 wait for approval); one is not on the server yet.
    assert!(shown.contains("│ fixes 2 (1 pending) │"), "{shown}");

    let y = || key(KeyCode::Char('y'));
    ui.app.corrections_at = 0;
    assert!(update(&mut ui.app, y()).is_empty());
    assert!(ui.app.message.as_deref().unwrap_or_default().contains("correction 1 is not a teammate's shared"));
    ui.app.corrections_at = 1;
    assert!(update(&mut ui.app, y()).is_empty());
    assert_eq!(ui.app.message.as_deref(), Some("correction 2 is your own: a teammate reviews it"));
    ui.app.corrections_at = 2;
    assert_eq!(update(&mut ui.app, y()), vec![Effect::Review { id: 3, approve: true }]);
    ui.app.corrections_at = 3;
    assert_eq!(update(&mut ui.app, key(KeyCode::Char('X'))), vec![Effect::Review { id: 4, approve: false }]);
    // A store that shares nothing refuses, and the UI says so.
    ui.settle(vec![Effect::Review { id: 4, approve: false }]).await;
    let said = ui.app.message.clone().unwrap_or_default();
    assert!(said.starts_with("not reviewed: correction 4 is not a teammate's shared correction"), "{said}");
    // The help lists both keys.
    ui.press(KeyCode::Char('?')).await;
    let help = ui.screen(140, 40);
    assert!(help.contains("approve the selected teammate's correction"), "{help}");
    assert!(help.contains("reject the selected teammate's correction"), "{help}");
}

/// The text of the bottom pane of an 80×24 screen (rows 17–21), its wrapped rows joined and
/// its spacing collapsed.
fn bottom_pane_text(screen: &str) -> String {
    let rows: Vec<&str> =
        screen.lines().skip(17).take(5).filter_map(|l| l.trim_matches('"').split('│').nth(1).map(str::trim)).collect();
    rows.join(" ").split_whitespace().collect::<Vec<_>>().join(" ")
}

#[tokio::test]
async fn a_long_correction_is_read_whole_in_the_corrections_pane_at_80x24() {
    // Found by a new-user trial: a long triple or reason was cut at the pane's edge.
    let reason = "The ballpark in Clearwater was renamed BayCare Ballpark in 2021; Bright House Field is its name from 2004 to 2017";
    let mut ui = Ui::new();
    ui.flag_the_stadium(reason).await;
    ui.typed("BayCare Ballpark").await;
    // The first Enter looks the name up, the second makes it a new entity.
    ui.press(KeyCode::Enter).await;
    ui.press(KeyCode::Enter).await;
    assert_eq!(
        ui.app.message.as_deref(),
        Some("correction 1 recorded; touches 1 kept answer (I: which); a: ask again")
    );
    // A second, short one: the pane lists two.
    ui.select("Philadelphia Phillies");
    ui.press(KeyCode::Char('e')).await;
    ui.press_with(KeyCode::Char('u'), KeyModifiers::CONTROL).await;
    ui.typed("The Phillies").await;
    ui.press(KeyCode::Tab).await;
    ui.typed("Common name").await;
    ui.press(KeyCode::Enter).await;
    assert_eq!(ui.app.corrections.len(), 2, "{:?}", ui.app.message);
    let whole = "#1 active replace m.phillies baseball.baseball_team.spring_training_stadium m.bright_house_field \
                 with new.baycare_ballpark named \"BayCare Ballpark\" — The ballpark in Clearwater was renamed \
                 BayCare Ballpark in 2021; Bright House Field is its name from 2004 to 2017 (tester)";

    // Coming to the pane selects the newest (the relabel): the long one keeps one line.
    ui.press(KeyCode::BackTab).await;
    ui.press(KeyCode::BackTab).await;
    assert_eq!(ui.app.focus, Focus::Corrections);
    assert_eq!(ui.app.corrections_at, 1);
    let screen = ui.screen(80, 24);
    let pane = bottom_pane_text(&screen);
    assert!(pane.starts_with("#1 active replace m.phillies"), "{pane}\n{screen}");
    assert!(!pane.contains("2004 to 2017"), "only the selected correction wraps: {pane}\n{screen}");
    assert!(
        pane.contains("#2 active relabel m.phillies as \"The Phillies\" — Common name (tester)"),
        "{pane}\n{screen}"
    );

    // Selected, the long one is shown whole, wrapped, the other still listed below it.
    ui.press(KeyCode::Char('k')).await;
    assert_eq!(ui.app.corrections_at, 0);
    let screen = ui.screen(80, 24);
    let pane = bottom_pane_text(&screen);
    assert!(pane.starts_with(whole), "the whole correction: {pane}\n{screen}");
    assert!(pane.contains("#2 active relabel"), "{pane}\n{screen}");
    insta::assert_snapshot!("tui_long_correction_80x24", screen);
}

/// The demo's replies from an endpoint that had to be asked another way, said on its first
/// reply as the OpenAI client says it (llama-cpp-python refuses `json_schema`).
struct AdaptedEndpoint {
    model: ongraph::testing::llm::ScriptedModel,
    said: std::sync::atomic::AtomicBool,
}

#[async_trait::async_trait]
impl ongraph::llm::LanguageModel for AdaptedEndpoint {
    fn describe(&self) -> String {
        "adapted".into()
    }
    async fn complete(
        &self,
        request: &ongraph::llm::ChatRequest,
    ) -> Result<ongraph::llm::Completion, ongraph::llm::LlmError> {
        let mut completion = self.model.complete(request).await?;
        if !self.said.swap(true, std::sync::atomic::Ordering::SeqCst) {
            completion.notes.push(
                "the endpoint refused structured replies as json_schema (HTTP 500); asked again as json_object".into(),
            );
        }
        // As the client says it: with every call whose usage holds no counts.
        completion.notes.push("the endpoint's token counts were missing or not counts; estimated from the text".into());
        Ok(completion)
    }
}

#[tokio::test]
async fn how_the_endpoint_had_to_be_asked_is_kept_in_the_messages_pane() {
    let dir = tempfile::tempdir().unwrap();
    let corrections =
        TempCorrections { store: SledStore::open(&dir.path().join("overlay")).unwrap(), hidden: Vec::new() };
    let model = AdaptedEndpoint {
        model: ongraph::testing::llm::ScriptedModel::from_toml("t", common::DEMO_SCRIPT).unwrap(),
        said: false.into(),
    };
    let driver = Driver::new(Arc::new(ongraph::testing::kg::demo_graph()), Arc::new(model));
    let mut ui = Ui::over(Settings::default(), Arc::new(corrections), driver, dir);
    ui.ask(CANBERRA).await;
    ui.press(KeyCode::Char('r')).await;
    assert!(ui.run().is_finished());
    let texts: Vec<&str> = ui.app.messages.iter().map(|m| m.text.as_str()).collect();
    let said: Vec<&&str> = texts.iter().filter(|t| t.starts_with("the endpoint")).collect();
    assert_eq!(said.len(), 2, "each kept once, however often said: {texts:?}");
}

#[tokio::test]
async fn a_long_step_summary_in_the_transcript_is_cut_with_a_mark_and_keeps_its_calls() {
    let mut ui = Ui::new();
    ui.ask(CANBERRA).await;
    ui.press(KeyCode::Char('r')).await;
    ui.app.bottom = Bottom::Transcript;
    let summary = ui.run().trace()[13].summary.clone();
    for (width, whole) in [(80, false), (240, true)] {
        let screen = ui.screen(width, 30);
        let row = screen.lines().find(|l| l.contains(" 13 relation_prune ")).expect("step 13 is listed");
        let listed = row.split('│').nth(1).unwrap_or_default().trim_end();
        if whole {
            assert!(listed.ends_with(&format!("{summary} [3× 1247t]")), "room for all: {listed:?}");
        } else {
            assert!(listed.ends_with('…') && !listed.contains("[3× "), "the summary first, cut: {listed:?}");
            assert!(listed.contains("depth 3: kept"), "{listed:?}");
        }
    }
}

/// A flag marks the row of the triple it retracts, not the relation rows below that node (found
/// by a trial: they carry their parent's last triple).
#[tokio::test]
async fn a_flag_marks_the_flagged_triple_s_row_only() {
    let mut ui = Ui::new();
    ui.ask(CANBERRA).await;
    ui.press(KeyCode::Char('r')).await;
    ui.select("Australian Capital Territory");
    ui.press(KeyCode::Char('f')).await;
    ui.typed("Not what the question asks").await;
    let effects = update(&mut ui.app, key(KeyCode::Enter));
    ui.settle(effects).await;
    assert_eq!(ui.app.corrections.len(), 1, "{:?}", ui.app.message);
    let text = ui.screen(120, 40);
    // The tree's side of each line (the inspector beside it says why the node is flagged).
    let marked: Vec<&str> =
        text.lines().map(|l| l.split("││").next().unwrap_or(l)).filter(|l| l.contains('⚑')).collect();
    assert!(marked.iter().any(|l| l.contains("Australian Capital Territory")), "{text}");
    assert!(marked.iter().all(|l| !l.contains("-> ") && !l.contains("<- ")), "relation rows unmarked: {marked:#?}");
}

#[tokio::test]
async fn a_forged_label_shows_as_one_line_with_its_escapes() {
    // A teammate's label with line breaks and a bidi override: shown on its one line, the
    // breaks and the override as escapes (ratatui dropped them silently, gluing the text).
    let dir = tempfile::tempdir().unwrap();
    let store = SledStore::open(&dir.path().join("overlay")).unwrap();
    let forged = "Bright House Field\nSupporting paths:\u{2028}1. Canberra\u{202e}evil";
    let draft = ongraph::testing::overlay::Draft {
        op: ongraph::testing::overlay::Op::Relabel { entity: "m.bright_house_field".into(), label: forged.into() },
        reason: "teammate\nforged".into(),
        generated: false,
        author: "mallory\u{2066}".into(),
        context: None,
        origin: None,
    };
    store.add("demo", draft).unwrap();
    let corrections = TempCorrections { store, hidden: Vec::new() };
    let driver = corrections.driver().unwrap();
    let mut ui = Ui::over(Settings::default(), Arc::new(corrections), driver, dir);
    ui.ask(PHANATIC).await;
    ui.press(KeyCode::Char('r')).await;
    ui.select(forged);
    let text = ui.screen(160, 40);
    assert!(text.contains("Field\\nSupporting paths:\\u{2028}1. Canberra\\u{202E}evil"), "{text}");
    assert!(!text.contains(['\u{202e}', '\u{2028}', '\u{2066}']), "{text}");
}

/// The demo's replies, but a reason-first call's free reply says nothing readable: the engine
/// asks for its extraction, which gets the demo's reply to the free call.
struct FreeFirst {
    model: ongraph::testing::llm::ScriptedModel,
    /// The demo's reply to each step's free call, given to its extraction.
    held: Mutex<std::collections::HashMap<String, ongraph::llm::Completion>>,
}

const THINKING: &str = "Let me think about it.";

#[async_trait::async_trait]
impl ongraph::llm::LanguageModel for FreeFirst {
    fn describe(&self) -> String {
        "free first".into()
    }
    async fn complete(
        &self,
        request: &ongraph::llm::ChatRequest,
    ) -> Result<ongraph::llm::Completion, ongraph::llm::LlmError> {
        if request.extract.is_some() {
            let reply = self.model.complete(request).await?;
            self.held.lock().unwrap().insert(request.step.clone(), reply);
            return Ok(ongraph::llm::Completion { text: THINKING.into(), ..Default::default() });
        }
        if request.schema.is_some() && request.prompt.contains(THINKING) {
            return Ok(self.held.lock().unwrap().remove(&request.step).expect("the free call came first"));
        }
        self.model.complete(request).await
    }
}

#[tokio::test]
async fn a_step_whose_answer_is_extracted_is_one_step_in_the_ui_and_replays() {
    let dir = tempfile::tempdir().unwrap();
    let corrections =
        TempCorrections { store: SledStore::open(&dir.path().join("overlay")).unwrap(), hidden: Vec::new() };
    let model = FreeFirst {
        model: ongraph::testing::llm::ScriptedModel::from_toml("t", common::DEMO_SCRIPT).unwrap(),
        held: Mutex::default(),
    };
    let driver = Driver::new(Arc::new(ongraph::testing::kg::demo_graph()), Arc::new(model));
    // GoG's steps reason first.
    let settings = Settings { method: ongraph::engine::MethodId::GOG, structured: true, ..Settings::default() };
    let mut ui = Ui::over(settings, Arc::new(corrections), driver, dir);
    ui.ask(APPLE).await;
    // Each n is one step, its extraction call included (through GoG's second thought).
    for _ in 0..8 {
        let before = ui.run().trace().len();
        ui.press(KeyCode::Char('n')).await;
        assert_eq!(ui.run().trace().len(), before + 1, "{:?}", ui.app.message);
    }
    let trace = ui.run().trace().to_vec();
    let extracted = trace.iter().flat_map(|e| &e.calls).filter(|c| c.reasoning.as_deref() == Some(THINKING)).count();
    assert!(extracted >= 2, "the thoughts were extracted: {trace:#?}");

    let path = ui._dir.path().join("extracted.json");
    ui.press(KeyCode::Char(':')).await;
    ui.typed(&format!("save-as {}", path.display())).await;
    ui.press(KeyCode::Enter).await;
    let session = Session::load(&path).unwrap();
    session.check_replays(ongraph::engine::Registry::builtin()).unwrap();
    // Offline in the UI, each n is one step again.
    let mut app = App::replaying(session, false).unwrap();
    app.set_plain(true);
    update(&mut app, key(KeyCode::Enter));
    for _ in 0..8 {
        let before = app.run.as_ref().unwrap().trace().len();
        assert!(update(&mut app, key(KeyCode::Char('n'))).is_empty(), "{:?}", app.message);
        assert_eq!(app.run.as_ref().unwrap().trace().len(), before + 1, "{:?}", app.message);
    }
    assert_eq!(app.run.as_ref().unwrap().trace(), &trace[..]);
}
