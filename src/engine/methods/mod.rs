//! The methods ongraph ships, a folder each, and their rows in the registry: adding one is its
//! folder, its prompt files, and a `mod` line and a row here. The one module of the engine
//! that names the methods (the registry, the trait, the context and the settings name none).

// Visible to the engine's own tests (which render a method's templates); its core imports
// none of them (`tests/layering.rs`).
pub(super) mod baseline;
pub(super) mod gog;
pub(super) mod pog;
pub(super) mod tog;

use super::method::Machine;
use super::method_id::MethodId;
use super::registry::{MethodEntry, Registry, depth_progress};
use super::settings::Settings;
use crate::prompts::Prompts;
use std::sync::LazyLock;

impl MethodId {
    /// The name people know it by (`ToG-R`); the id itself for a method the program does not
    /// know.
    pub fn label(&self) -> &'static str {
        Registry::program().get(self).map_or(self.as_str(), |e| e.label)
    }
}

impl Registry {
    /// The methods ongraph ships.
    pub fn builtin() -> &'static Registry {
        static BUILT_IN: LazyLock<Registry> = LazyLock::new(|| Registry::of(BUILTIN.to_vec()));
        &BUILT_IN
    }
}

/// The built-in methods' prompts, as compiled in.
pub fn builtin_prompts() -> Prompts {
    Registry::builtin().prompts(None).unwrap_or_else(|e| unreachable!("built-in prompts are tested to be valid: {e}"))
}

/// Progress as GoG's steps out of its most.
fn step_progress(s: &Settings, steps: u32) -> String {
    format!("step {steps}/{}", s.gog.gog_steps)
}

/// No progress to show: the baselines make one step.
fn no_progress(_: &Settings, _: u32) -> String {
    String::new()
}

/// The methods ongraph ships, in the order `--help` lists them.
pub const BUILTIN: &[MethodEntry] = &[
    MethodEntry {
        id: "tog",
        label: "ToG",
        about: "Think-on-Graph: beam search over triple paths, LLM-scored relations and entities",
        progress: depth_progress,
        start: |cx, topics| Ok(Machine::new(tog::TogMachine::new(cx, topics, false)?)),
        templates: tog::templates::TEMPLATES,
        shapes: tog::shapes::SHAPES,
        simulations: tog::simulate::SIMULATIONS,
    },
    MethodEntry {
        id: "tog-r",
        label: "ToG-R",
        about: "ToG-R: relation chains; entities sampled (seeded) instead of scored",
        progress: depth_progress,
        start: |cx, topics| Ok(Machine::new(tog::TogMachine::new(cx, topics, true)?)),
        templates: tog::templates::TEMPLATES,
        shapes: tog::shapes::SHAPES,
        simulations: tog::simulate::SIMULATIONS,
    },
    MethodEntry {
        id: "pog",
        label: "PoG",
        about: "Paths-over-Graph: question analysis, a question subgraph, three-step pruning",
        progress: depth_progress,
        start: |cx, topics| Ok(Machine::new(pog::PogMachine::new(cx, topics, false)?)),
        templates: pog::templates::TEMPLATES,
        shapes: pog::shapes::SHAPES,
        simulations: pog::simulate::SIMULATIONS,
    },
    MethodEntry {
        id: "pog-e",
        label: "PoG-E",
        about: "PoG walking one relation per hop",
        progress: depth_progress,
        start: |cx, topics| Ok(Machine::new(pog::PogMachine::new(cx, topics, true)?)),
        templates: pog::templates::TEMPLATES,
        shapes: pog::shapes::SHAPES,
        simulations: pog::simulate::SIMULATIONS,
    },
    MethodEntry {
        id: "gog",
        label: "GoG",
        about: "Generate-on-Graph: Thought / Action / Observation with Search, Generate and Finish",
        progress: step_progress,
        start: |cx, topics| Ok(Machine::new(gog::GogMachine::new(cx, topics)?)),
        templates: gog::templates::TEMPLATES,
        shapes: gog::shapes::SHAPES,
        simulations: gog::simulate::SIMULATIONS,
    },
    MethodEntry {
        id: "io",
        label: "IO",
        about: "baseline: the model answers directly, no KG",
        progress: no_progress,
        start: |_, _| Ok(Machine::new(baseline::BaselineMachine::new(baseline::Prompting::Io))),
        templates: &[baseline::IO],
        shapes: &[],
        simulations: baseline::IO_SIMULATION,
    },
    MethodEntry {
        id: "cot",
        label: "CoT",
        about: "baseline: chain of thought with exemplars, no KG",
        progress: no_progress,
        start: |_, _| Ok(Machine::new(baseline::BaselineMachine::new(baseline::Prompting::Cot))),
        templates: &[baseline::COT],
        shapes: &[],
        simulations: baseline::COT_SIMULATION,
    },
    MethodEntry {
        id: "sc",
        label: "SC",
        about: "baseline: self-consistency, the majority answer of --samples chain-of-thought samples",
        progress: no_progress,
        start: |_, _| Ok(Machine::new(baseline::BaselineMachine::new(baseline::Prompting::SelfConsistency))),
        templates: &[baseline::COT],
        shapes: &[],
        simulations: baseline::COT_SIMULATION,
    },
];

#[cfg(test)]
mod tests {
    use super::*;
    use crate::engine::registry::check;
    use std::path::Path;

    #[test]
    fn the_builtin_methods_templates_and_shapes_fit_together() {
        assert_eq!(check(BUILTIN), Ok(()));
        let registry = Registry::builtin();
        let templates = registry.templates();
        for t in &templates {
            assert!(t.reply().is_none_or(|r| registry.shape(r).is_some()), "{t}: {:?}", t.reply());
            assert_eq!(registry.template(t.name()), Some(*t));
        }
        assert_eq!(registry.template("anwser"), None);
        // A step is said as its template says it; a step no template names, in its own words.
        assert_eq!(registry.step_in_words("entity_prune_unified"), "scoring the entities");
        assert_eq!(registry.step_in_words("gog_verify"), "verifying generated triples");
        assert_eq!(registry.step_in_words("no_such_step"), "no such step");
        assert!(templates.iter().all(|t| !t.step().is_empty() && !t.step().contains('_')), "words, not ids");
        // Every file of the prompts directory is a built-in template, and every built-in
        // template a file; likewise the structured variants in prompts/json/.
        let stems = |dir: &Path| {
            let mut names: Vec<String> = std::fs::read_dir(dir)
                .unwrap()
                .map(|e| e.unwrap().path())
                .filter(|p| p.is_file())
                .map(|p| p.file_stem().unwrap().to_string_lossy().into_owned())
                .collect();
            names.sort();
            names
        };
        let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("prompts");
        let mut names: Vec<String> = templates.iter().map(|t| t.name().to_string()).collect();
        names.sort();
        assert_eq!(stems(&dir), names);
        let mut variants: Vec<String> =
            templates.iter().filter(|t| t.json_default_text().is_some()).map(|t| t.name().to_string()).collect();
        variants.sort();
        assert_eq!(stems(&dir.join("json")), variants);
        // The built-in prompts load, and a misspelt override names every template known.
        assert_eq!(builtin_prompts().templates().count(), templates.len());
        let mine = tempfile::tempdir().unwrap();
        std::fs::write(mine.path().join("anwser.txt"), "x").unwrap();
        let err = registry.prompts(Some(mine.path())).unwrap_err().to_string();
        assert!(err.ends_with("anwser.txt: not a known template; did you mean answer.txt? (known: system, topic_entities, extract, relation_prune, relation_prune_unified, entity_prune, entity_prune_unified, reasoning, reasoning_tog_r, hop_plan, answer, answer_own_knowledge, pog_analysis, pog_precise, pog_branch, pog_summary, pog_sufficiency, pog_supplement, pog_answer, pog_answer_own, gog_step, gog_relations, gog_generate, gog_verify, io, cot)"), "{err}");
    }
}
