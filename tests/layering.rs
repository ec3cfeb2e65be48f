//! The layering docs/ARCHITECTURE.md describes, read off the sources: the layers import
//! downwards only (no import circle between top-level modules), the engine, `kg` and `llm`
//! import nothing from the configuration, the CLI or the UI, `kg` and `llm` not each other,
//! `overlay` not the configuration, no circle inside a folder either (but the known ones, a
//! list that only shrinks), and no source file grows past
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
            (top, path, without_test_items(&code).join("\n"))
        })
        .collect()
}

/// `lines` without the items marked `#[cfg(test)]` (a helper for unit tests is no layering):
/// the attribute and the item after it, one line or a braced block.
fn without_test_items<'a>(lines: &[&'a str]) -> Vec<&'a str> {
    let mut kept = Vec::new();
    let mut at = 0;
    while at < lines.len() {
        if lines[at].trim() != "#[cfg(test)]" {
            kept.push(lines[at]);
            at += 1;
            continue;
        }
        at += 1;
        let mut depth = 0i64;
        while at < lines.len() {
            let line = lines[at];
            depth += line.matches('{').count() as i64 - line.matches('}').count() as i64;
            at += 1;
            if depth <= 0 && (line.trim_end().ends_with(';') || line.trim_end().ends_with('}')) {
                break;
            }
        }
    }
    kept
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
            .filter(|t| ["config", "settings_patch", "cli", "tui", "eval", "driver", "session"].contains(&t.as_str()))
            .collect();
        assert!(above.is_empty(), "{lower} imports {above:?}, a layer above it");
    }
}

/// The two HTTP clients share their plumbing through `http`, not through each other; the
/// correction store is handed what it needs, never the configuration (issue 37).
#[test]
fn the_kg_and_llm_clients_and_the_store_keep_out_of_each_others_layers() {
    let edges = graph();
    for (module, never) in [("kg", "llm"), ("llm", "kg"), ("overlay", "config"), ("overlay", "settings_patch")] {
        assert!(edges.contains_key(module), "{module} was read: {edges:?}");
        assert!(!edges[module].contains(never), "{module} imports {never}");
    }
    assert!(edges["kg"].contains("http") && edges["llm"].contains("http"), "{edges:?}");
}

/// The CLI and the UI open what they work with, sync with the team and store corrections
/// through one workspace layer, which knows neither of them; the UI knows nothing of the CLI
/// (issue 37).
#[test]
fn the_front_ends_share_a_workspace_that_knows_neither() {
    let edges = graph();
    for (module, never) in [("workspace", "cli"), ("workspace", "tui"), ("tui", "cli")] {
        assert!(edges.contains_key(module), "{module} was read: {edges:?}");
        assert!(!edges[module].contains(never), "{module} imports {never}");
    }
    assert!(edges["cli"].contains("workspace") && edges["tui"].contains("workspace"), "{edges:?}");
    // A stored correction is undone, superseded or reviewed through the workspace
    // (`change_correction`), never by a front end calling the store itself.
    for (module, path, code) in modules() {
        if module == "cli" || module == "tui" {
            for call in [".undo(&", ".review(&", ".set_aside("] {
                assert!(!code.contains(call), "{} calls the store's {call}", path.display());
            }
        }
    }
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

/// A module's path under src/ (`engine/tog/scoring.rs` → `[engine, tog, scoring]`; a `mod.rs`
/// is its folder's module).
fn module_path(src: &Path, path: &Path) -> Vec<String> {
    let relative = path.strip_prefix(src).expect("under src/").to_string_lossy().replace('\\', "/");
    let mut parts: Vec<String> = relative.trim_end_matches(".rs").split('/').map(str::to_string).collect();
    if parts.last().is_some_and(|p| p == "mod") {
        parts.pop();
    }
    parts
}

/// The paths (`crate::a::b`, `super::c`, `self::d`, and each item of a `{…}` group, nested
/// groups too) a text names, resolved against the module `at` to module paths as written (items
/// included; an item imported `as` another name keeps its own).
fn named_paths(code: &str, at: &[String]) -> Vec<Vec<String>> {
    let mut found = Vec::new();
    for (i, _) in code.match_indices(['c', 's']) {
        let rest = &code[i..];
        if !["crate::", "super::", "self::"].into_iter().any(|b| rest.starts_with(b)) {
            continue;
        }
        if code[..i].chars().next_back().is_some_and(|c| c.is_alphanumeric() || c == '_' || c == ':') {
            continue;
        }
        let (root, tail) = rest.split_once("::").expect("starts with a base");
        let module: Vec<String> = match root {
            "crate" => Vec::new(),
            "super" => at[..at.len().saturating_sub(1)].to_vec(),
            _ => at.to_vec(),
        };
        expand_tree(module, use_tree(tail), &mut found);
    }
    // A module's own children, named bare (`tog::TogMachine` where `mod tog;` is declared).
    for child in declared_children(code) {
        let bare = format!("{child}::");
        for (i, _) in code.match_indices(&bare) {
            if code[..i].chars().next_back().is_some_and(|c| c.is_alphanumeric() || c == '_' || c == ':') {
                continue;
            }
            expand_tree(at.to_vec(), use_tree(&code[i..]), &mut found);
        }
    }
    found
}

/// The modules `code` declares from files of their own (`mod x;`, `pub(super) mod x;`).
fn declared_children(code: &str) -> Vec<&str> {
    code.lines()
        .filter_map(|l| l.trim().strip_suffix(';')?.rsplit_once("mod ").map(|(before, name)| (before.trim(), name)))
        .filter(|(before, name)| {
            (before.is_empty() || before.starts_with("pub")) && name.chars().all(|c| c.is_alphanumeric() || c == '_')
        })
        .map(|(_, name)| name)
        .collect()
}

/// The use-tree at the start of `text` (`a::b`, `a::{b, c::{d}}`, `a as b`): up to where it
/// ends, its braces matched.
fn use_tree(text: &str) -> &str {
    let mut depth = 0;
    for (i, c) in text.char_indices() {
        match c {
            '{' => depth += 1,
            '}' if depth == 0 => return &text[..i],
            '}' => {
                depth -= 1;
                if depth == 0 {
                    return &text[..=i];
                }
            }
            c if depth == 0 && !(c.is_alphanumeric() || c == '_' || c == ':') => return &text[..i],
            _ => {}
        }
    }
    text
}

/// The paths of a use-tree under `prefix` (`super` segments going up).
fn expand_tree(mut prefix: Vec<String>, tree: &str, out: &mut Vec<Vec<String>>) {
    let tree = tree.trim();
    let (stem, group) = match tree.find('{') {
        Some(open) => (&tree[..open], Some(tree[open + 1..].trim_end().trim_end_matches('}'))),
        None => (tree.split(" as ").next().unwrap_or(tree), None),
    };
    for segment in stem.split("::").map(str::trim).filter(|s| !s.is_empty()) {
        if segment == "super" {
            prefix.pop();
        } else if segment != "self" {
            prefix.push(segment.to_string());
        }
    }
    let Some(group) = group else {
        out.push(prefix);
        return;
    };
    // The group's items, split at its top-level commas.
    let (mut depth, mut start) = (0, 0);
    for (i, c) in group.char_indices().chain(std::iter::once((group.len(), ','))) {
        match c {
            '{' => depth += 1,
            '}' => depth -= 1,
            ',' if depth == 0 => {
                let item = group[start..i].trim();
                if !item.is_empty() {
                    expand_tree(prefix.clone(), item, out);
                }
                start = i + 1;
            }
            _ => {}
        }
    }
}

/// What each module's `use` items bring in by name (`pub use x::Y` and a plain `use` alike: a
/// child module may name what its parent imports), so that `super::Y` is followed to where `Y`
/// is defined. A glob (`use super::*`) is not followed.
fn imported_names(files: &[(Vec<String>, String)]) -> BTreeMap<Vec<String>, BTreeMap<String, Vec<String>>> {
    let mut names = BTreeMap::new();
    for (module, code) in files {
        let map: &mut BTreeMap<String, Vec<String>> = names.entry(module.clone()).or_default();
        for statement in code.split(';') {
            let statement = statement.trim_start();
            let Some(tree) = ["use ", "pub use ", "pub(crate) use ", "pub(super) use "]
                .into_iter()
                .find_map(|lead| statement.strip_prefix(lead))
            else {
                continue;
            };
            let (root, tail) = tree.split_once("::").unwrap_or((tree, ""));
            let base: Vec<String> = match root {
                "crate" => Vec::new(),
                "super" => module[..module.len().saturating_sub(1)].to_vec(),
                "self" => module.clone(),
                // A child module of this one (`use answer::{…}`), or an outside crate.
                child => module.iter().cloned().chain(std::iter::once(child.to_string())).collect(),
            };
            let mut paths = Vec::new();
            expand_tree(base, tail, &mut paths);
            for path in paths {
                if let Some(name) = path.last().filter(|n| n.as_str() != "*") {
                    map.insert(name.clone(), path.clone());
                }
            }
        }
    }
    names
}

/// Every module's imports of other modules, as module paths: the module a named path ends in,
/// followed through the `use` items that brought a name into a module (`super::Settings` is
/// engine/settings, not engine).
fn module_graph() -> BTreeMap<Vec<String>, BTreeSet<Vec<String>>> {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let files: Vec<(Vec<String>, String)> =
        modules().into_iter().map(|(_, path, code)| (module_path(&src, &path), code)).collect();
    let known: BTreeSet<Vec<String>> = files.iter().map(|(m, _)| m.clone()).collect();
    let imported = imported_names(&files);
    let resolve = |path: &[String]| {
        let mut path = path.to_vec();
        for _ in 0..8 {
            let module = (0..=path.len()).rev().map(|k| path[..k].to_vec()).find(|p| known.contains(p))?;
            let next = path.get(module.len()).and_then(|name| imported.get(&module)?.get(name));
            match next {
                Some(target) if *target != path => path = target.clone(),
                _ => return Some(module),
            }
        }
        None
    };
    let mut edges = BTreeMap::new();
    for (module, code) in &files {
        let targets: &mut BTreeSet<Vec<String>> = edges.entry(module.clone()).or_default();
        for path in named_paths(code, module) {
            if let Some(target) = resolve(&path).filter(|t| t != module) {
                targets.insert(target);
            }
        }
    }
    edges
}

/// The circles among the children of `parent` (each child standing for everything under it),
/// as sorted lists of their paths joined by `/`.
fn circles_among_children(edges: &BTreeMap<Vec<String>, BTreeSet<Vec<String>>>, parent: &[String]) -> Vec<Vec<String>> {
    let child =
        |m: &Vec<String>| (m.len() > parent.len() && m.starts_with(parent)).then(|| m[..=parent.len()].join("/"));
    let mut graph: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    for (from, targets) in edges {
        let Some(a) = child(from) else { continue };
        for b in targets.iter().filter_map(child).filter(|b| *b != a) {
            graph.entry(a.clone()).or_default().insert(b);
        }
    }
    let mut circles: Vec<Vec<String>> = Vec::new();
    for start in graph.keys() {
        if circles.iter().any(|c| c.contains(start)) {
            continue;
        }
        // Everything `start` reaches that reaches `start` back: its strongly connected part.
        let reach = |from: &str, graph: &BTreeMap<String, BTreeSet<String>>| {
            let mut seen = BTreeSet::from([from.to_string()]);
            let mut stack = vec![from.to_string()];
            while let Some(n) = stack.pop() {
                for m in graph.get(&n).into_iter().flatten() {
                    if seen.insert(m.clone()) {
                        stack.push(m.clone());
                    }
                }
            }
            seen
        };
        let forward = reach(start, &graph);
        let part: Vec<String> =
            forward.iter().filter(|n| *n != start && reach(n, &graph).contains(start)).cloned().collect();
        if !part.is_empty() {
            let mut circle: Vec<String> = part;
            circle.push(start.clone());
            circle.sort();
            circles.push(circle);
        }
    }
    circles
}

/// Issue 37: no import circle at any level, inside engine/, tui/ and every other folder too.
#[test]
fn no_module_imports_in_a_circle_at_any_level() {
    let edges = module_graph();
    let parents: BTreeSet<Vec<String>> =
        edges.keys().flat_map(|m| (0..m.len()).map(|k| m[..k].to_vec()).collect::<Vec<_>>()).collect();
    assert!(parents.contains(&vec!["engine".to_string()]) && parents.len() > 8, "{parents:?}");
    let mut found: Vec<Vec<String>> = parents.iter().flat_map(|p| circles_among_children(&edges, p)).collect();
    found.sort();
    assert_eq!(found, Vec::<Vec<String>>::new(), "import circles (a folder's modules importing each other round)");
    // The list of built-in methods (engine/methods/mod.rs) imports each; the engine's core
    // (the trait, the registry, the id, the context, the settings, the structured replies, the
    // run) imports none, and no method imports another.
    let at = |path: &[&str]| path.iter().map(|p| p.to_string()).collect::<Vec<String>>();
    let methods = ["tog", "pog", "gog", "baseline"];
    let imports = |from: &[&str], exactly: bool, to: &[&str]| {
        let (from, to) = (at(from), at(to));
        edges.iter().any(|(m, targets)| {
            (if exactly { *m == from } else { m.starts_with(&from) }) && targets.iter().any(|t| t.starts_with(&to))
        })
    };
    for method in methods {
        let folder = ["engine", "methods", method];
        assert!(imports(&["engine", "methods"], true, &folder), "engine/methods/mod.rs lists {method}");
        for core in ["method", "registry", "method_id", "context", "settings", "structured", "run", "step"] {
            assert!(!imports(&["engine", core], false, &folder), "engine/{core} imports {method}");
            assert!(!imports(&["engine", core], false, &["engine", "methods"]), "engine/{core} imports the methods");
        }
        for other in methods.iter().filter(|m| **m != method) {
            assert!(!imports(&folder, false, &["engine", "methods", other]), "{method} imports {other}");
        }
    }
}

/// The resolution the check relies on: `super` from a folder's `mod.rs` and from a file, groups
/// (nested too, and aliases), and a circle among siblings found through their children.
#[test]
fn the_circle_check_reads_paths_as_rust_does() {
    let at = |s: &str| s.split('/').map(str::to_string).collect::<Vec<_>>();
    assert_eq!(
        named_paths("use super::{beam::Beam, Context};\nlet x = crate::kg::Term::Entity;", &at("engine/tog/scoring")),
        vec![at("engine/tog/beam/Beam"), at("engine/tog/Context"), at("kg/Term/Entity")]
    );
    assert_eq!(named_paths("use super::super::parse;", &at("engine/tog/scoring")), vec![at("engine/parse")]);
    // A declared child named bare; a name that only ends like one, or a module not declared, is not.
    assert_eq!(
        named_paths(
            "pub(super) mod tog;\nmod pog {}\nlet m = tog::Machine::new();\nmytog::x; pog::y;",
            &at("engine/methods")
        ),
        vec![at("engine/methods/tog/Machine/new")]
    );
    assert_eq!(
        named_paths("use crate::{engine::{A, b::C as D}, kg::E};", &at("cli")),
        vec![at("engine/A"), at("engine/b/C"), at("kg/E")]
    );
    assert_eq!(
        without_test_items(&["a", "#[cfg(test)]", "use x;", "b", "#[cfg(test)]", "fn t() {", "}", "c"]),
        ["a", "b", "c"]
    );
    let mut edges: BTreeMap<Vec<String>, BTreeSet<Vec<String>>> = BTreeMap::new();
    edges.entry(at("a/b/x")).or_default().insert(at("a/c"));
    assert!(circles_among_children(&edges, &at("a")).is_empty());
    edges.entry(at("a/c")).or_default().insert(at("a/b"));
    assert_eq!(circles_among_children(&edges, &at("a")), vec![vec!["a/b".to_string(), "a/c".to_string()]]);
    assert!(circles_among_children(&edges, &[]).is_empty(), "one folder: no circle at the top");
}

/// docs/ARCHITECTURE.md names, for each invariant, the test that keeps it: every test it names
/// exists, so the map cannot point at a test that was renamed or removed.
#[test]
fn every_test_the_architecture_names_exists() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let doc = std::fs::read_to_string(root.join("docs/ARCHITECTURE.md")).expect("docs/ARCHITECTURE.md");
    let invariants = doc.split("## Invariants").nth(1).expect("an Invariants section");
    let invariants = invariants.split("\n## ").next().unwrap_or_default();
    let mut sources = Vec::new();
    sources_under(&root.join("tests"), &mut sources);
    sources_under(&root.join("src"), &mut sources);
    let code: String = sources.iter().map(|p| std::fs::read_to_string(p).unwrap_or_default()).collect();
    let named: Vec<&str> = invariants
        .split('`')
        .skip(1)
        .step_by(2)
        .map(|quoted| quoted.rsplit("::").next().unwrap_or_default())
        .filter(|name| {
            name.matches('_').count() >= 3
                && name.chars().all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '_')
        })
        .collect();
    assert!(named.len() >= 12, "the tests were read: {named:?}");
    for name in named {
        assert!(code.contains(&format!("fn {name}(")), "docs/ARCHITECTURE.md names {name}, which no test is");
    }
}

fn sources_under(dir: &Path, out: &mut Vec<PathBuf>) {
    for entry in std::fs::read_dir(dir).into_iter().flatten().flatten() {
        let path = entry.path();
        if path.is_dir() {
            sources_under(&path, out);
        } else if path.extension().is_some_and(|e| e == "rs") {
            out.push(path);
        }
    }
}

/// Each function of src/ (unit tests aside) with its length in lines, as `FILE::NAME` (FILE
/// relative to src/): from its `fn` line to the brace that closes its body. Braces in strings
/// (raw and multi-line ones too), character literals and comments are not counted.
fn function_lengths() -> Vec<FunctionLength> {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let mut files = Vec::new();
    sources(&src, &mut files);
    let mut lengths = Vec::new();
    for path in files {
        let relative = path.strip_prefix(&src).expect("under src/").to_string_lossy().replace('\\', "/");
        let text = std::fs::read_to_string(&path).expect("a readable source file");
        let outside_tests = text.split("#[cfg(test)]\nmod tests").next().unwrap_or_default();
        let code = without_literals(outside_tests);
        let lines: Vec<&str> = code.lines().collect();
        // The comments, which `code` has lost (its lines are the same lines).
        let written: Vec<&str> = outside_tests.lines().collect();
        for (at, line) in lines.iter().enumerate() {
            let Some(name) = fn_name(line) else { continue };
            let mut depth = 0i64;
            let mut opened = false;
            for (end, body_line) in lines.iter().enumerate().skip(at) {
                for c in body_line.chars() {
                    match c {
                        '{' => (depth, opened) = (depth + 1, true),
                        '}' => depth -= 1,
                        _ => {}
                    }
                }
                let declared_only = !opened && body_line.trim_end().ends_with(';');
                if declared_only || (opened && depth == 0) {
                    if opened {
                        let name = format!("{relative}::{name}");
                        lengths.push(FunctionLength {
                            name,
                            lines: end - at + 1,
                            table: says_flat_table(&written, at),
                        });
                    }
                    break;
                }
            }
        }
    }
    lengths
}

/// A function's name (`path/in/src.rs::name`), its length in lines, and whether it says it is
/// a flat table.
struct FunctionLength {
    name: String,
    lines: usize,
    table: bool,
}

/// Whether the function declared at line `at` says, on the line above it (its attributes
/// aside), that it is a flat table whose length is its content: `// A flat table: why.`
fn says_flat_table(written: &[&str], at: usize) -> bool {
    written[..at]
        .iter()
        .rev()
        .map(|l| l.trim())
        .find(|l| !l.starts_with("#["))
        .is_some_and(|l| l.starts_with("// A flat table: ") && l.len() > "// A flat table: ".len() + 10)
}

/// The name a line declares as a function (`pub(crate) async fn name(`), if it does.
fn fn_name(line: &str) -> Option<&str> {
    let mut words = line.split_whitespace();
    let mut word = words.next()?;
    while ["pub", "pub(crate)", "pub(super)", "const", "async", "unsafe"].contains(&word) {
        word = words.next()?;
    }
    let rest = words.next()?;
    (word == "fn").then(|| rest.split(['(', '<']).next().unwrap_or_default()).filter(|n| !n.is_empty())
}

/// Source text without its comments and with its string and character literals emptied (raw
/// strings, and strings over several lines, too); line breaks are kept, so lines still count.
fn without_literals(text: &str) -> String {
    let mut out = String::new();
    let chars: Vec<char> = text.chars().collect();
    let mut i = 0;
    // Skips to `end` (a literal's close), keeping the line breaks passed.
    let skip_to = |from: usize, end: &str, out: &mut String| -> usize {
        let end: Vec<char> = end.chars().collect();
        let mut j = from;
        while j < chars.len() {
            if chars[j] == '\\' && end != ['*', '/'] && !end.starts_with(&['"', '#']) {
                j += 2;
                continue;
            }
            if chars[j..].starts_with(&end) {
                return j + end.len();
            }
            if chars[j] == '\n' {
                out.push('\n');
            }
            j += 1;
        }
        j
    };
    while i < chars.len() {
        let c = chars[i];
        let glued = i > 0 && (chars[i - 1].is_alphanumeric() || chars[i - 1] == '_');
        match c {
            '/' if chars.get(i + 1) == Some(&'/') => {
                while i < chars.len() && chars[i] != '\n' {
                    i += 1;
                }
            }
            '/' if chars.get(i + 1) == Some(&'*') => i = skip_to(i + 2, "*/", &mut out),
            'r' if !glued && matches!(chars.get(i + 1), Some('#') | Some('"')) => {
                let hashes = chars[i + 1..].iter().take_while(|&&h| h == '#').count();
                if chars.get(i + 1 + hashes) == Some(&'"') {
                    let close = format!("\"{}", "#".repeat(hashes));
                    i = skip_to(i + 2 + hashes, &close, &mut out);
                } else {
                    out.push(c);
                    i += 1;
                }
            }
            '"' => i = skip_to(i + 1, "\"", &mut out),
            '\'' => {
                // A character literal ('x', '\n', '{'), not a lifetime ('a).
                if chars.get(i + 1) == Some(&'\\') {
                    i = skip_to(i + 3, "'", &mut out);
                } else if chars.get(i + 2) == Some(&'\'') {
                    i += 3;
                } else {
                    out.push(c);
                    i += 1;
                }
            }
            _ => {
                out.push(c);
                i += 1;
            }
        }
    }
    out
}

/// Issue 37: no function in src/ over 80 lines, except a flat table-like `match` whose length
/// is its content and which says so in a comment (`// A flat table: why.` above it); each
/// method's `absorb` is a dispatch to one handler per phase.
#[test]
fn no_function_runs_past_80_lines_but_flat_tables() {
    let lengths = function_lengths();
    assert!(lengths.len() > 1000, "the functions were read: {}", lengths.len());
    let long: Vec<String> = lengths
        .iter()
        .filter(|f| f.lines > 80 && !f.table)
        .map(|f| format!("{} ({} lines)", f.name, f.lines))
        .collect();
    assert!(long.is_empty(), "functions over 80 lines (split them by job): {long:#?}");
    let tables: Vec<&str> = lengths.iter().filter(|f| f.lines > 80 && f.table).map(|f| f.name.as_str()).collect();
    assert!(tables.len() <= FLAT_TABLES_AT_MOST, "more flat tables than tables: {tables:#?}");
    for absorb in
        ["engine/methods/tog/mod.rs::absorb", "engine/methods/pog/mod.rs::absorb", "engine/methods/gog/mod.rs::absorb"]
    {
        let f = lengths.iter().find(|f| f.name == absorb).unwrap_or_else(|| panic!("{absorb} is read"));
        assert!(f.lines <= 40, "{absorb}: {} lines, a dispatch to handlers", f.lines);
    }
}

/// How many long functions may call themselves flat tables: the exception stays one.
const FLAT_TABLES_AT_MOST: usize = 2;

/// The marker is read where it stands: above the function, its attributes aside.
#[test]
fn a_flat_table_says_so_above_its_function() {
    let written = ["// A flat table: one arm per command, each a call.", "#[allow(x)]", "fn command() {"];
    assert!(says_flat_table(&written, 2));
    assert!(!says_flat_table(&["// A flat table: ", "fn f() {"], 1), "a reason is given");
    assert!(!says_flat_table(&["// A flat table: one arm per key, each a call.", "let x = 1;", "fn f() {"], 2));
}

/// The reader the length check relies on: braces in strings, characters and comments are not
/// the body's, a declaration without a body is not a function of length, a lifetime is no
/// character literal.
#[test]
fn the_function_reader_skips_what_is_not_code() {
    assert_eq!(without_literals(r#"let s = "{ \" }"; // {"#), "let s = ; ");
    assert_eq!(without_literals("let c = '{'; let d = '\\n';"), "let c = ; let d = ;");
    assert_eq!(without_literals("fn f<'a>(x: &'a str) {"), "fn f<'a>(x: &'a str) {");
    assert_eq!(without_literals("let s = \"{\n}\";\nlet t = r#\"\"{\"#; /* { */ {"), "let s = \n;\nlet t = ;  {");
    assert_eq!(without_literals("for r in x {"), "for r in x {", "an r that starts no raw string");
    assert_eq!(fn_name("    pub(crate) async fn plan_scoring(&self) {"), Some("plan_scoring"));
    assert_eq!(fn_name("    fn step(&self) -> u32;"), Some("step"));
    assert_eq!(fn_name("    let fn_name = 3;"), None);
}
