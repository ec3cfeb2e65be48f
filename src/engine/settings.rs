//! What a run is asked to do: the method and its knobs, as plain values (the CLI and the config
//! fill them in; the engine reads nothing else).

use super::method_id::MethodId;
use serde::{Deserialize, Serialize};

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, clap::ValueEnum)]
#[serde(rename_all = "lowercase")]
pub enum PruneTool {
    /// The LLM scores candidates (the papers' default).
    Llm,
    /// BM25 between the question and candidate labels: no LLM call in pruning.
    Bm25,
    /// Cosine similarity of embeddings from an OpenAI-compatible `/v1/embeddings` endpoint.
    Embedding,
}

/// How a run reasons: the knobs every method shares, then one section per method family.
/// Serialised flat (the sections are flattened), as sessions and eval records store it; a
/// section's keys missing from an older file take their defaults. The defaults are the papers'.
/// `ongraph` builds it from them, the config's `[defaults]` and the command line
/// (`crate::settings_patch::SettingsPatch`).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Settings {
    pub method: MethodId,
    /// Beam width N: candidates kept per prune step (PoG: paths the model picks).
    pub width: usize,
    /// Maximum depth Dmax: hops explored before answering without a sufficient path (from the
    /// paths collected, or the model's own knowledge: see `fallback`).
    pub depth: u32,
    pub prune: PruneTool,
    /// Score all frontier entities' candidates in one prompt per prune step.
    pub unified: bool,
    /// Score the next hop's relations while the sufficiency check runs: fewer dependent rounds,
    /// up to N extra calls whenever the check says "sufficient" before Dmax.
    pub speculate: bool,
    /// Seeds every random choice (entity sampling, ToG-R, PoG-E): the same seed, the same run.
    pub seed: u64,
    /// The temperature of calls that score or pick candidates (and PoG's analysis, summary and
    /// supplement).
    pub prune_temperature: f64,
    /// The temperature of calls that name topic entities, judge sufficiency or answer.
    pub reason_temperature: f64,
    /// The most tokens a reply may take (a reasoning model gets at least its endpoint's
    /// `reasoning_max_tokens`).
    pub max_tokens: u32,
    /// A relation reaching this many entities or more has them sampled before scoring (PoG:
    /// a node's neighbours in the question subgraph)…
    pub sample_threshold: usize,
    /// …down to this many (seeded).
    pub sample_size: usize,
    #[serde(flatten)]
    pub sc: ScSettings,
    #[serde(flatten)]
    pub pog: PogSettings,
    #[serde(flatten)]
    pub gog: GogSettings,
    /// Ask for replies as JSON of a schema per prompt kind (the prompts then show the JSON
    /// shape); off for models that read only free text. Set from the endpoint's `structured`.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub structured: bool,
    /// What ToG and ToG-R answer from at the maximum depth without a sufficient path. Missing
    /// from files written before it existed, which ran the paper's own-knowledge answer.
    #[serde(default = "Fallback::paper")]
    pub fallback: Fallback,
    /// How a call's prompt is laid out between the system and the user message.
    #[serde(default, skip_serializing_if = "PromptLayout::is_per_call")]
    pub prompt_layout: PromptLayout,
    /// ToG and ToG-R: first ask the model which relations the question chains from its topic
    /// entity to the answer, and judge the paths only from that many hops on (capped at the
    /// depth). Aimed at the judgment taking an entity one hop short.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub hop_plan: bool,
    /// Under a hop plan, the judgment may answer only what the paths reach from the planned
    /// depth on. Set with `hop_plan` by the CLI and the config; false in sessions saved before
    /// it existed, which replay as they ran.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub plan_narrows_answers: bool,
    /// ToG and ToG-R: an entity is not searched back along the relation that reached it (the
    /// reference code's rule). From `male`, reached by `gender`, `gender (incoming)` leads only
    /// to strangers who share the value, sampled at random when there are many.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub no_backtrack: bool,
}

/// How a call's prompt is laid out. Both ask the same thing with the same instructions and
/// examples; they differ in what a server's prompt cache can reuse.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize, clap::ValueEnum)]
#[serde(rename_all = "kebab-case")]
pub enum PromptLayout {
    /// Each call's template whole in the user message (instructions, examples, then the
    /// call's own paragraph): the shortest prompts, for servers that cache many prefixes
    /// (vLLM, llama.cpp's `llama-server`, hosted APIs) or none.
    #[default]
    PerCall,
    /// The instructions and examples of every kind of call the run makes in one system
    /// message, the same for every call of the run, and only the call's own paragraph in the
    /// user message: for a server that reuses just the previous prompt's prefix
    /// (llama-cpp-python), which then evaluates only each call's own part.
    SharedPrefix,
}

impl PromptLayout {
    fn is_per_call(&self) -> bool {
        *self == Self::PerCall
    }
}

/// What ToG answers from at the maximum depth when no check said "sufficient", and GoG when it
/// stops without a Finish.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize, clap::ValueEnum)]
#[serde(rename_all = "kebab-case")]
pub enum Fallback {
    /// The triples collected so far first (with the model's knowledge, as ToG-2 and PoG do),
    /// labelled "from partial KG paths"; the model's own knowledge only when they give no
    /// answer.
    #[default]
    PartialPaths,
    /// The model's own knowledge, the paths set aside (the ToG paper's behaviour).
    OwnKnowledge,
}

impl Fallback {
    /// The paper's, for files that predate the setting.
    fn paper() -> Self {
        Self::OwnKnowledge
    }
}

/// Self-consistency (`sc`).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct ScSettings {
    /// How many chain-of-thought samples vote.
    pub samples: usize,
    /// The temperature of the samples (GoG makes its steps' calls at it too).
    pub sample_temperature: f64,
}

impl Default for ScSettings {
    fn default() -> Self {
        Self { samples: 5, sample_temperature: 0.7 }
    }
}

/// Paths-over-Graph (`pog`, `pog-e`).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct PogSettings {
    /// How many paths fuzzy selection keeps (W1).
    pub fuzzy_width: usize,
    /// Which pruning steps run.
    pub pog_pruning: PogPruning,
    /// Condense the selected paths before each sufficiency check.
    pub path_summary: bool,
}

impl Default for PogSettings {
    fn default() -> Self {
        Self { fuzzy_width: 80, pog_pruning: PogPruning::default(), path_summary: true }
    }
}

/// Generate-on-Graph (`gog`).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct GogSettings {
    /// The most Thought / Action / Observation steps before answering without a Finish (see
    /// `gog_fallback`).
    pub gog_steps: usize,
    /// How many times `Generate` samples the model (verification runs when more than one).
    pub generate_samples: usize,
    /// How many times `Finish[unknown]` may roll back and expand the last search.
    pub rollbacks: usize,
    /// What GoG answers from when it stops without a Finish (its step limit, nothing left to
    /// roll back to, steps it cannot read): the `fallback` setting, which sets it. Kept apart
    /// because files written before GoG honoured `fallback` ran the model's own knowledge.
    #[serde(default = "Fallback::paper")]
    pub gog_fallback: Fallback,
}

impl Default for GogSettings {
    fn default() -> Self {
        Self { gog_steps: 6, generate_samples: 3, rollbacks: 2, gog_fallback: Fallback::PartialPaths }
    }
}

impl Default for Settings {
    fn default() -> Self {
        Self {
            method: MethodId::TOG,
            width: 3,
            depth: 3,
            prune: PruneTool::Llm,
            unified: false,
            speculate: false,
            seed: 0,
            prune_temperature: 0.4,
            reason_temperature: 0.0,
            max_tokens: 256,
            sample_threshold: 20,
            sample_size: 5,
            sc: ScSettings::default(),
            pog: PogSettings::default(),
            gog: GogSettings::default(),
            structured: false,
            fallback: Fallback::default(),
            prompt_layout: PromptLayout::default(),
            hop_plan: false,
            plan_narrows_answers: false,
            no_backtrack: false,
        }
    }
}

/// PoG's pruning strategies (the paper's four).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize, clap::ValueEnum)]
#[serde(rename_all = "kebab-case")]
pub enum PogPruning {
    /// Similarity to the indicator only: the top W paths.
    Fuzzy,
    /// Similarity, then the LLM picks among path prefixes, one hop longer each round.
    FuzzyBranch,
    /// Similarity, then the LLM picks the top W from numbered candidates (the paper's default).
    #[default]
    FuzzyPrecise,
    /// Similarity, branch-reduced selection down to one prompt's worth, then precise selection.
    All,
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Sessions and eval records store settings flat, in this order; the sections do not show.
    /// Settings saved before `fallback` existed ran the paper's own-knowledge answer, and load
    /// so (a session replays as it ran).
    #[test]
    fn settings_serialise_flat_as_they_always_have() {
        let before_fallback = r#"{"method":"tog","width":3,"depth":3,"prune":"llm","unified":false,"speculate":false,"seed":0,"prune_temperature":0.4,"reason_temperature":0.0,"max_tokens":256,"sample_threshold":20,"sample_size":5,"samples":5,"sample_temperature":0.7,"fuzzy_width":80,"pog_pruning":"fuzzy-precise","path_summary":true,"gog_steps":6,"generate_samples":3,"rollbacks":2}"#;
        let before_gog_fallback = before_fallback.replace('}', r#","fallback":"partial-paths"}"#);
        let saved = before_gog_fallback.replace(r#""rollbacks":2"#, r#""rollbacks":2,"gog_fallback":"partial-paths""#);
        assert_eq!(serde_json::to_string(&Settings::default()).unwrap(), saved);
        assert_eq!(serde_json::from_str::<Settings>(&saved).unwrap(), Settings::default());
        let paper_gog = GogSettings { gog_fallback: Fallback::OwnKnowledge, ..GogSettings::default() };
        assert_eq!(
            serde_json::from_str::<Settings>(before_fallback).unwrap(),
            Settings { fallback: Fallback::OwnKnowledge, gog: paper_gog.clone(), ..Settings::default() }
        );
        // GoG answered from its own knowledge at its limits until it honoured `fallback`.
        assert_eq!(
            serde_json::from_str::<Settings>(&before_gog_fallback).unwrap(),
            Settings { gog: paper_gog, ..Settings::default() }
        );
        let structured = Settings { structured: true, ..Settings::default() };
        let json = serde_json::to_string(&structured).unwrap();
        assert!(
            json.ends_with(
                r#""rollbacks":2,"gog_fallback":"partial-paths","structured":true,"fallback":"partial-paths"}"#
            ),
            "{json}"
        );
        assert_eq!(serde_json::from_str::<Settings>(&json).unwrap(), structured);
        // A hop plan saved before it narrowed the judgment's answers replays without.
        let planned_before = saved.replace('}', r#","hop_plan":true}"#);
        let planned = serde_json::from_str::<Settings>(&planned_before).unwrap();
        assert!(planned.hop_plan && !planned.plan_narrows_answers);
        let now = Settings { hop_plan: true, plan_narrows_answers: true, ..Settings::default() };
        assert_eq!(serde_json::from_str::<Settings>(&serde_json::to_string(&now).unwrap()).unwrap(), now);
    }

    /// Settings saved before a method existed lack its keys: they load with its defaults.
    #[test]
    fn settings_without_a_sections_keys_load_with_its_defaults() {
        let old = r#"{"method":"tog","width":2,"depth":3,"prune":"bm25","unified":false,"speculate":false,"seed":0,"prune_temperature":0.4,"reason_temperature":0.0,"max_tokens":256,"sample_threshold":20,"sample_size":5,"fuzzy_width":10}"#;
        let expected = Settings {
            width: 2,
            prune: PruneTool::Bm25,
            pog: PogSettings { fuzzy_width: 10, ..PogSettings::default() },
            gog: GogSettings { gog_fallback: Fallback::OwnKnowledge, ..GogSettings::default() },
            fallback: Fallback::OwnKnowledge,
            ..Settings::default()
        };
        assert_eq!(serde_json::from_str::<Settings>(old).unwrap(), expected);
    }
}
