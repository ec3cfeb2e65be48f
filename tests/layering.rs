//! The layering the README's "Layout" describes, read off the sources: the layers import
//! downwards only (no import circle between top-level modules), the engine, `kg` and `llm`
//! import nothing from the configuration, the CLI or the UI, `kg` and `llm` not each other,
//! `overlay` not the configuration, and no source file grows past
//! 800 lines (a file that long holds more than one job).

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

fn sources(dir: &Path, out: &mut Vec<PathBuf>) {
    for entry in std::fs::read_dir(dir).expect("src/ is readable").flatten() {
        let path = entry.path();
        if path.is_dir() {
            sources(&path, out);
        } else if path.extension().is_some_and(|e| e == "rs") {
            out.push(path);
        }
    }
}

/// Every `.rs` file under src/, with its top-level module (`engine`, `kg`, …) and its text
/// without comments and without its unit tests (what tests import is not layering).
fn modules() -> Vec<(String, PathBuf, String)> {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let mut files = Vec::new();
    sources(&src, &mut files);
    files.sort();
    files
        .into_iter()
        .map(|path| {
            let relative = path.strip_prefix(&src).expect("under src/").to_string_lossy().replace('\\', "/");
            let top = relative.split('/').next().unwrap_or_default().trim_end_matches(".rs").to_string();
            let text = std::fs::read_to_string(&path).expect("a readable source file");
            let code = text.split("#[cfg(test)]\nmod tests").next().unwrap_or_default();
            let code: Vec<&str> = code.lines().filter(|l| !l.trim_start().starts_with("//")).collect();
            (top, path, code.join("\n"))
        })
        .collect()
}

/// The top-level modules a text names as `crate::NAME`.
fn imports(code: &str) -> BTreeSet<String> {
    code.match_indices("crate::")
        .map(|(i, m)| {
            code[i + m.len()..].chars().take_while(|c| c.is_ascii_alphanumeric() || *c == '_').collect::<String>()
        })
        .filter(|name| !name.is_empty())
        .collect()
}

fn graph() -> BTreeMap<String, BTreeSet<String>> {
    let mut edges: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    for (top, _, code) in modules() {
        if top == "lib" || top == "main" || top == "testing" {
            continue;
        }
        let targets = edges.entry(top.clone()).or_default();
        targets.extend(imports(&code).into_iter().filter(|t| *t != top));
    }
    edges
}

/// A path from `from` back to `from`, if the graph has one.
fn circle(edges: &BTreeMap<String, BTreeSet<String>>, from: &str) -> Option<Vec<String>> {
    let mut stack = vec![vec![from.to_string()]];
    let mut seen = BTreeSet::new();
    while let Some(path) = stack.pop() {
        let last = path.last().expect("never empty").clone();
        for next in edges.get(&last).into_iter().flatten() {
            if next == from {
                let mut found = path.clone();
                found.push(next.clone());
                return Some(found);
            }
            if seen.insert(next.clone()) {
                let mut longer = path.clone();
                longer.push(next.clone());
                stack.push(longer);
            }
        }
    }
    None
}

#[test]
fn the_top_level_modules_import_one_another_without_a_circle() {
    let edges = graph();
    assert!(edges.contains_key("engine") && edges.contains_key("config"), "the sources were read: {edges:?}");
    for module in edges.keys() {
        if let Some(path) = circle(&edges, module) {
            panic!("an import circle: {}", path.join(" -> "));
        }
    }
}

#[test]
fn the_engine_kg_and_llm_import_nothing_from_the_configuration_the_cli_or_the_ui() {
    let edges = graph();
    for lower in ["engine", "kg", "llm", "prompts"] {
        let above: Vec<&String> = edges[lower]
            .iter()
            .filter(|t| ["config", "settings", "cli", "tui", "eval", "driver", "session"].contains(&t.as_str()))
            .collect();
        assert!(above.is_empty(), "{lower} imports {above:?}, a layer above it");
    }
}

/// The two HTTP clients share their plumbing through `http`, not through each other; the
/// correction store is handed what it needs, never the configuration (issue 37).
#[test]
fn the_kg_and_llm_clients_and_the_store_keep_out_of_each_others_layers() {
    let edges = graph();
    for (module, never) in [("kg", "llm"), ("llm", "kg"), ("overlay", "config"), ("overlay", "settings")] {
        assert!(edges.contains_key(module), "{module} was read: {edges:?}");
        assert!(!edges[module].contains(never), "{module} imports {never}");
    }
    assert!(edges["kg"].contains("http") && edges["llm"].contains("http"), "{edges:?}");
}

#[test]
fn no_source_file_holds_more_than_800_lines() {
    let long: Vec<String> = modules()
        .into_iter()
        .filter_map(|(_, path, _)| {
            let lines = std::fs::read_to_string(&path).ok()?.lines().count();
            (lines > 800).then(|| format!("{} ({lines} lines)", path.display()))
        })
        .collect();
    assert!(long.is_empty(), "split by job: {long:?}");
}

/// The checks above can fail: a circle and an upward import are found where there is one.
#[test]
fn the_checks_find_a_circle_and_an_upward_import() {
    let mut edges: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    edges.entry("a".into()).or_default().insert("b".into());
    edges.entry("b".into()).or_default().insert("c".into());
    assert_eq!(circle(&edges, "a"), None);
    edges.entry("c".into()).or_default().insert("a".into());
    assert_eq!(circle(&edges, "a"), Some(vec!["a".into(), "b".into(), "c".into(), "a".into()]));
    // `imports` reads the text as given (`modules` has taken the comments out).
    let code = "use crate::config::Config;\nlet x = crate::kg::Term::Entity;\nlet y = crate::tui::App::new;";
    assert_eq!(imports(code), BTreeSet::from(["config".to_string(), "kg".to_string(), "tui".to_string()]));
}
