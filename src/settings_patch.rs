//! The engine's [`Settings`] as a user changes them: one patch type, read from the config's
//! `[defaults]` (`max_tokens = 512`) and from the command line (`--max-tokens 512`), applied
//! over the defaults in that order. The defaults themselves live with [`Settings`] only.
//!
//! It lives here rather than in the engine so that the engine needs no more of clap than the
//! value enums it already derives.

use crate::engine::PogPruning;
use crate::engine::{Fallback, GogSettings, MethodId, PogSettings, PromptLayout, PruneTool, ScSettings, Settings};
use clap::Args;
use serde::{Deserialize, Serialize};

/// Changes to [`Settings`], each unset unless given. Its doc comments are the `--help` text.
/// (`Serialize` only lists the config's keys.)
#[derive(Clone, Debug, Default, PartialEq, Args, Deserialize, Serialize)]
#[serde(default)]
pub struct SettingsPatch {
    /// The method (default tog).
    #[arg(long, global = true, ignore_case = true, value_parser = method_parser())]
    #[serde(deserialize_with = "known_method")]
    pub method: Option<MethodId>,
    /// Beam width N: candidates kept per prune step (default 3).
    #[arg(long, value_parser = count::<usize>("width"), global = true, value_name = "N")]
    pub width: Option<usize>,
    /// Maximum depth Dmax (default 3): hops explored before answering without a sufficient
    /// path, from the paths collected or the model's own knowledge (see --fallback).
    #[arg(long, value_parser = count::<u32>("depth"), global = true, value_name = "D")]
    pub depth: Option<u32>,
    /// What scores candidates (default llm).
    #[arg(long, value_enum, global = true)]
    pub prune: Option<PruneTool>,
    /// One prompt per prune step for all frontier entities (`--unified=false` undoes the
    /// config's `unified = true`).
    #[arg(long, global = true, num_args = 0..=1, require_equals = true, default_missing_value = "true")]
    #[arg(value_name = "BOOL")]
    pub unified: Option<bool>,
    /// Score the next hop's relations while the sufficiency check runs (fewer rounds of
    /// waiting; up to N extra calls when the check says "sufficient" early).
    #[arg(long, global = true, num_args = 0..=1, require_equals = true, default_missing_value = "true")]
    #[arg(value_name = "BOOL")]
    pub speculate: Option<bool>,
    /// Seeds every random choice (entity sampling, ToG-R, PoG-E) (default 0).
    #[arg(long, value_parser = whole_number::<u64>, global = true, value_name = "S")]
    pub seed: Option<u64>,
    /// The temperature of calls that score or pick candidates, and of PoG's analysis, summary
    /// and supplement (default 0.4).
    #[arg(long, global = true, value_name = "T")]
    pub prune_temperature: Option<f64>,
    /// The temperature of calls that name topic entities, judge sufficiency or answer
    /// (default 0).
    #[arg(long, global = true, value_name = "T")]
    pub reason_temperature: Option<f64>,
    /// The most tokens a reply may take; a reasoning model gets at least its endpoint's
    /// `reasoning_max_tokens` (default 256).
    #[arg(long, value_parser = count::<u32>("max_tokens"), global = true, value_name = "N")]
    pub max_tokens: Option<u32>,
    /// A relation reaching this many entities or more has them sampled (seeded) before
    /// scoring; PoG samples a node's neighbours down to it (default 20).
    #[arg(long, value_parser = count::<usize>("sample_threshold"), global = true, value_name = "N")]
    pub sample_threshold: Option<usize>,
    /// How many entities such a relation is sampled down to (default 5).
    #[arg(long, value_parser = count::<usize>("sample_size"), global = true, value_name = "N")]
    pub sample_size: Option<usize>,
    /// `--method tog|tog-r|gog`: what to answer from at the maximum depth without a sufficient
    /// path (GoG: when it stops without a Finish): the triples collected so far, then the
    /// model's own knowledge if they give no answer (partial-paths), or the model's own
    /// knowledge alone, as the ToG and GoG papers do (own-knowledge) (default partial-paths).
    #[arg(long, value_enum, global = true)]
    pub fallback: Option<Fallback>,
    /// How prompts are laid out (default per-call). shared-prefix puts the instructions and
    /// examples of every kind of call in one system message that all calls share, so that a
    /// server caching only the previous prompt's prefix (llama-cpp-python) evaluates just each
    /// call's own part: longer prompts sent, far fewer evaluated.
    #[arg(long, value_enum, global = true)]
    pub prompt_layout: Option<PromptLayout>,
    /// `--method tog|tog-r`: first ask which relations the question chains from its topic
    /// entity to the answer, and judge the paths only from that many hops on (`--hop-plan=false`
    /// undoes the config's `hop_plan = true`).
    #[arg(long, global = true, num_args = 0..=1, require_equals = true, default_missing_value = "true")]
    #[arg(value_name = "BOOL")]
    pub hop_plan: Option<bool>,
    /// `--method tog|tog-r`: never search an entity back along the relation that reached it
    /// (from `male`, reached by `gender`, no `gender (incoming)` to everyone else who is male).
    #[arg(long, global = true, num_args = 0..=1, require_equals = true, default_missing_value = "true")]
    #[arg(value_name = "BOOL")]
    pub no_backtrack: Option<bool>,
    #[command(flatten)]
    #[serde(flatten)]
    pub sc: ScPatch,
    #[command(flatten)]
    #[serde(flatten)]
    pub pog: PogPatch,
    #[command(flatten)]
    #[serde(flatten)]
    pub gog: GogPatch,
}

/// Changes to [`ScSettings`].
#[derive(Clone, Debug, Default, PartialEq, Args, Deserialize, Serialize)]
#[serde(default)]
pub struct ScPatch {
    /// `--method sc`: how many chain-of-thought samples vote (default 5).
    #[arg(long, value_parser = count::<usize>("samples"), global = true, value_name = "K")]
    pub samples: Option<usize>,
    /// `--method sc`: the samples' temperature; GoG makes its steps' calls at it too
    /// (default 0.7).
    #[arg(long, global = true, value_name = "T")]
    pub sample_temperature: Option<f64>,
}

/// Changes to [`PogSettings`].
#[derive(Clone, Debug, Default, PartialEq, Args, Deserialize, Serialize)]
#[serde(default)]
pub struct PogPatch {
    /// `--method pog|pog-e`: paths fuzzy selection keeps, W1 (default 80).
    #[arg(long, value_parser = count::<usize>("fuzzy_width"), global = true, value_name = "W1")]
    pub fuzzy_width: Option<usize>,
    /// `--method pog|pog-e`: which pruning steps run (default fuzzy-precise, the paper's).
    #[arg(long, value_enum, global = true)]
    pub pog_pruning: Option<PogPruning>,
    /// `--method pog|pog-e`: skip the path summary before each sufficiency check (config:
    /// `path_summary = false`).
    // A flag that only turns the summary off, as before: present means `Some(false)`.
    #[arg(long = "no-summary", global = true, num_args = 0, default_missing_value = "false")]
    pub path_summary: Option<bool>,
}

/// Changes to [`GogSettings`].
#[derive(Clone, Debug, Default, PartialEq, Args, Deserialize, Serialize)]
#[serde(default)]
pub struct GogPatch {
    /// `--method gog`: most Thought/Action/Observation steps (default 6).
    #[arg(long, value_parser = count::<usize>("gog_steps"), global = true, value_name = "N")]
    pub gog_steps: Option<usize>,
    /// `--method gog`: samples per Generate action; verification runs when more than 1
    /// (default 3).
    #[arg(long, value_parser = count::<usize>("generate_samples"), global = true, value_name = "N")]
    pub generate_samples: Option<usize>,
    /// `--method gog`: how many times `Finish[unknown]` may roll back and search the last
    /// search's new neighbours (default 2).
    #[arg(long, value_parser = count::<usize>("rollbacks"), global = true, value_name = "N")]
    pub rollbacks: Option<usize>,
}

/// `slot` becomes `value` when it is given.
fn set<T: Copy>(slot: &mut T, value: Option<T>) {
    if let Some(v) = value {
        *slot = v;
    }
}

impl SettingsPatch {
    /// Overwrites what this patch gives.
    pub fn apply(&self, s: &mut Settings) {
        set(&mut s.method, self.method);
        set(&mut s.width, self.width);
        set(&mut s.depth, self.depth);
        set(&mut s.prune, self.prune);
        set(&mut s.unified, self.unified);
        set(&mut s.speculate, self.speculate);
        set(&mut s.seed, self.seed);
        set(&mut s.prune_temperature, self.prune_temperature);
        set(&mut s.reason_temperature, self.reason_temperature);
        set(&mut s.max_tokens, self.max_tokens);
        set(&mut s.sample_threshold, self.sample_threshold);
        set(&mut s.sample_size, self.sample_size);
        set(&mut s.fallback, self.fallback);
        set(&mut s.gog.gog_fallback, self.fallback);
        set(&mut s.prompt_layout, self.prompt_layout);
        set(&mut s.hop_plan, self.hop_plan);
        set(&mut s.plan_narrows_answers, self.hop_plan);
        set(&mut s.no_backtrack, self.no_backtrack);
        self.sc.apply(&mut s.sc);
        self.pog.apply(&mut s.pog);
        self.gog.apply(&mut s.gog);
    }

    /// The keys this patch reads in the config, which are its flags' names in snake case.
    pub(crate) fn keys() -> Vec<String> {
        keys_of(&Self::default())
    }
}

impl ScPatch {
    fn apply(&self, s: &mut ScSettings) {
        set(&mut s.samples, self.samples);
        set(&mut s.sample_temperature, self.sample_temperature);
    }
}

impl PogPatch {
    fn apply(&self, s: &mut PogSettings) {
        set(&mut s.fuzzy_width, self.fuzzy_width);
        set(&mut s.pog_pruning, self.pog_pruning);
        set(&mut s.path_summary, self.path_summary);
    }
}

impl GogPatch {
    fn apply(&self, s: &mut GogSettings) {
        set(&mut s.gog_steps, self.gog_steps);
        set(&mut s.generate_samples, self.generate_samples);
        set(&mut s.rollbacks, self.rollbacks);
    }
}

/// The top-level keys `value` serialises to (every one: unset fields become nulls).
pub(crate) fn keys_of<T: Serialize>(value: &T) -> Vec<String> {
    match serde_json::to_value(value) {
        Ok(serde_json::Value::Object(map)) => map.keys().cloned().collect(),
        _ => Vec::new(),
    }
}

/// Settings no method can run with, in terms of the flags (the config's keys are the same
/// names in snake case).
#[derive(Debug, thiserror::Error, PartialEq)]
pub(crate) enum SettingsError {
    #[error("{0} must be at least 1")]
    Zero(&'static str),
    #[error("{0} must be a number of at least 0")]
    Temperature(&'static str),
    #[error("--{flag} (config: {key}) must be at most {max}")]
    TooLarge { flag: String, key: &'static str, max: u64 },
}

impl SettingsError {
    /// What is wrong, said of one config key's value (after the key).
    pub(crate) fn as_config_value(&self) -> String {
        match self {
            Self::Zero(_) => "is at least 1".into(),
            Self::Temperature(_) => "is a number of at least 0".into(),
            Self::TooLarge { max, .. } => format!("is at most {max}"),
        }
    }
}

/// The defaults, then each patch in turn (the config's, then the command line's), checked.
pub(crate) fn build(patches: &[&SettingsPatch]) -> Result<Settings, SettingsError> {
    let mut s = Settings::default();
    for patch in patches {
        patch.apply(&mut s);
    }
    check(&s)?;
    Ok(s)
}

fn check(s: &Settings) -> Result<(), SettingsError> {
    use SettingsError::{Temperature, Zero};
    // The messages predate the other checks; tests and scripts match them.
    if s.pog.fuzzy_width == 0 || s.gog.gog_steps == 0 || s.gog.generate_samples == 0 {
        return Err(Zero("--fuzzy-width, --gog-steps and --generate-samples"));
    }
    if s.sc.samples == 0 {
        return Err(Zero("--samples"));
    }
    if s.width == 0 || s.depth == 0 {
        return Err(Zero("--width and --depth"));
    }
    if s.max_tokens == 0 {
        return Err(Zero("--max-tokens"));
    }
    // Sampling down to nothing would empty the beam.
    if s.sample_threshold == 0 || s.sample_size == 0 {
        return Err(Zero("--sample-threshold and --sample-size"));
    }
    // What the flags and the config were checked against already; settings built otherwise
    // (a test, a future source) meet the same limits.
    let counts = [
        ("width", s.width as u64),
        ("depth", u64::from(s.depth)),
        ("max_tokens", u64::from(s.max_tokens)),
        ("sample_threshold", s.sample_threshold as u64),
        ("sample_size", s.sample_size as u64),
        ("samples", s.sc.samples as u64),
        ("fuzzy_width", s.pog.fuzzy_width as u64),
        ("gog_steps", s.gog.gog_steps as u64),
        ("generate_samples", s.gog.generate_samples as u64),
        ("rollbacks", s.gog.rollbacks as u64),
    ];
    for (key, n) in counts {
        if let Some(max) = limit(key).filter(|max| n > *max) {
            return Err(SettingsError::TooLarge { flag: key.replace('_', "-"), key, max });
        }
    }
    let temperatures = [
        ("--prune-temperature", s.prune_temperature),
        ("--reason-temperature", s.reason_temperature),
        ("--sample-temperature", s.sc.sample_temperature),
    ];
    match temperatures.into_iter().find(|(_, t)| !(t.is_finite() && *t >= 0.0)) {
        Some((flag, _)) => Err(Temperature(flag)),
        None => Ok(()),
    }
}

/// The most each count a user gives can be, by its config key (its flag is the same name in
/// kebab case): far beyond any run (the papers use 3 to 80), and low enough that nothing sized
/// from a count can take the machine's memory (`--samples 4294967295` asked for 900 GB). Flags
/// ([`count`]), the config's `[defaults]` (`crate::config`) and [`build`] all check by it.
const LIMITS: &[(&str, u64)] = &[
    ("width", 1_000),
    ("depth", 100),
    ("max_tokens", 1_000_000),
    ("sample_threshold", 1_000_000),
    ("sample_size", 10_000),
    ("samples", 1_000),
    ("fuzzy_width", 10_000),
    ("gog_steps", 1_000),
    ("generate_samples", 100),
    ("rollbacks", 100),
    ("concurrency", 1_000),
];

/// Counts whose 0 is refused with the limits (the engine's settings refuse theirs in `check`,
/// in words scripts already match).
const AT_LEAST_ONE: &[&str] = &["concurrency"];

/// Why `n` cannot be the count under config key `key` (said after the flag or the key), if so.
pub(crate) fn out_of_range(key: &str, n: u64) -> Option<String> {
    match limit(key) {
        Some(max) if n > max => Some(format!("is at most {max}")),
        _ if n == 0 && AT_LEAST_ONE.contains(&key) => Some("is at least 1".into()),
        _ => None,
    }
}

/// The most the count under config key `key` can be, if it is one.
pub(crate) fn limit(key: &str) -> Option<u64> {
    LIMITS.iter().find(|(k, _)| *k == key).map(|&(_, max)| max)
}

/// The parser of the flag for the count `key`: a whole number no larger than its limit.
pub(crate) fn count<T: TryFrom<u64>>(key: &'static str) -> impl Fn(&str) -> Result<T, String> + Clone + Send + Sync {
    move |text| {
        let n: u64 = whole_number(text)?;
        match (limit(key), out_of_range(key, n)) {
            (Some(max), Some(_)) if n > max => Err(format!("{text} is too large: at most {max}")),
            (_, Some(_)) => Err(format!("{text} is too small: at least 1")),
            _ => T::try_from(n).map_err(|_| format!("{text} is too large")),
        }
    }
}

/// A whole-number flag's value, said plainly when it is not one or does not fit (clap's own
/// message names the type's range, 0 included, where the settings then refuse 0).
pub(crate) fn whole_number<T: TryFrom<u64>>(text: &str) -> Result<T, String> {
    let too_large = || format!("{text} is too large");
    let n: u64 = text.parse().map_err(|e: std::num::ParseIntError| match e.kind() {
        std::num::IntErrorKind::PosOverflow => too_large(),
        _ => format!("'{text}' is not a whole number"),
    })?;
    T::try_from(n).map_err(|_| too_large())
}

/// `--method`: the registry's names, each with its one line for `--help`.
fn method_parser() -> impl clap::builder::TypedValueParser<Value = MethodId> {
    use clap::builder::{PossibleValue, PossibleValuesParser, TypedValueParser as _};
    let names = crate::engine::Registry::program().entries().iter().map(|e| PossibleValue::new(e.id).help(e.about));
    // `--method ToG`, as the papers write it, is `tog` (the UI's `:method` reads any case too).
    PossibleValuesParser::new(names).map(|name| MethodId::from(name.to_ascii_lowercase().as_str()))
}

/// `method = "…"`: a method name the built-in registry knows, or an error naming the ones it
/// does.
fn known_method<'de, D: serde::Deserializer<'de>>(d: D) -> Result<Option<MethodId>, D::Error> {
    let name = String::deserialize(d)?;
    let id = MethodId::from(name.as_str());
    let registry = crate::engine::Registry::program();
    match registry.get(&id) {
        Some(_) => Ok(Some(id)),
        None => Err(serde::de::Error::custom(format!("unknown method {name:?} (methods: {})", registry.names()))),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::Config;
    use clap::{CommandFactory as _, Parser};

    #[derive(Debug, Parser)]
    struct Flags {
        #[command(flatten)]
        patch: SettingsPatch,
    }

    fn flags(args: &[&str]) -> SettingsPatch {
        Flags::try_parse_from(std::iter::once("ongraph").chain(args.iter().copied())).unwrap().patch
    }

    fn config(text: &str) -> SettingsPatch {
        Config::parse("c.toml", text).unwrap().defaults.settings
    }

    /// Every knob away from its default: written as a full literal, so a new field fails to
    /// compile here until a key and a flag reach it.
    fn changed() -> Settings {
        Settings {
            method: MethodId::GOG,
            width: 4,
            depth: 2,
            prune: PruneTool::Bm25,
            unified: true,
            speculate: true,
            seed: 9,
            prune_temperature: 0.25,
            reason_temperature: 0.5,
            max_tokens: 512,
            sample_threshold: 30,
            sample_size: 7,
            sc: ScSettings { samples: 9, sample_temperature: 1.25 },
            pog: PogSettings { fuzzy_width: 40, pog_pruning: PogPruning::All, path_summary: false },
            gog: GogSettings { gog_steps: 4, generate_samples: 2, rollbacks: 0, gog_fallback: Fallback::OwnKnowledge },
            structured: false,
            fallback: Fallback::OwnKnowledge,
            prompt_layout: PromptLayout::SharedPrefix,
            hop_plan: true,
            plan_narrows_answers: true,
            no_backtrack: true,
        }
    }

    #[test]
    fn every_config_key_reaches_the_settings() {
        let patch = config(
            r#"
            [defaults]
            method = "gog"
            width = 4
            depth = 2
            prune = "bm25"
            unified = true
            speculate = true
            seed = 9
            prune_temperature = 0.25
            reason_temperature = 0.5
            max_tokens = 512
            sample_threshold = 30
            sample_size = 7
            fallback = "own-knowledge"
            prompt_layout = "shared-prefix"
            hop_plan = true
            no_backtrack = true
            samples = 9
            sample_temperature = 1.25
            fuzzy_width = 40
            pog_pruning = "all"
            path_summary = false
            gog_steps = 4
            generate_samples = 2
            rollbacks = 0
            "#,
        );
        assert_eq!(build(&[&patch]), Ok(changed()));
    }

    #[test]
    fn every_flag_reaches_the_settings() {
        let patch = flags(&[
            "--method=gog",
            "--width=4",
            "--depth=2",
            "--prune=bm25",
            "--unified",
            "--speculate",
            "--seed=9",
            "--prune-temperature=0.25",
            "--reason-temperature=0.5",
            "--max-tokens=512",
            "--sample-threshold=30",
            "--sample-size=7",
            "--fallback=own-knowledge",
            "--prompt-layout=shared-prefix",
            "--hop-plan",
            "--no-backtrack",
            "--samples=9",
            "--sample-temperature=1.25",
            "--fuzzy-width=40",
            "--pog-pruning=all",
            "--no-summary",
            "--gog-steps=4",
            "--generate-samples=2",
            "--rollbacks=0",
        ]);
        assert_eq!(build(&[&patch]), Ok(changed()));
    }

    #[test]
    fn flags_beat_the_config_which_beats_the_defaults() {
        let from_config = config("[defaults]\nwidth = 5\nmax_tokens = 100\nunified = true\nrollbacks = 1\n");
        let from_flags = flags(&["--width", "7", "--unified=false", "--sample-temperature", "0.9"]);
        let s = build(&[&from_config, &from_flags]).unwrap();
        assert_eq!((s.width, s.unified, s.sc.sample_temperature), (7, false, 0.9), "flags win");
        assert_eq!((s.max_tokens, s.gog.rollbacks), (100, 1), "the config's, where no flag is given");
        assert_eq!((s.depth, s.reason_temperature), (3, 0.0), "the defaults, where neither is");
        assert_eq!(build(&[&SettingsPatch::default(), &flags(&[])]), Ok(Settings::default()));
    }

    #[test]
    fn config_keys_are_the_flags_in_snake_case() {
        let flags: Vec<String> = Flags::command()
            .get_arguments()
            .filter_map(|a| a.get_long())
            .map(|l| if l == "no-summary" { "path_summary".into() } else { l.replace('-', "_") })
            .filter(|k| k != "help")
            .collect();
        assert_eq!(flags, SettingsPatch::keys());
    }

    #[test]
    fn the_defaults_help_gives_are_the_defaults() {
        let command = Flags::command();
        let mut silent = Vec::new();
        for arg in command.get_arguments() {
            let (Some(long), Some(help)) = (arg.get_long(), arg.get_help()) else { continue };
            let help = help.to_string();
            let Some(default) = help.split("(default ").nth(1).and_then(|d| d.split([')', ',']).next()) else {
                silent.push(long);
                continue;
            };
            let patch = flags(&[&format!("--{long}={default}")]);
            assert_eq!(build(&[&patch]), Ok(Settings::default()), "--{long}: {help}");
        }
        // Switches, off (or for --no-summary, on) unless given.
        assert_eq!(silent, ["unified", "speculate", "hop-plan", "no-backtrack", "no-summary"]);
    }

    #[test]
    fn a_whole_number_flag_says_plainly_what_is_wrong_with_its_value() {
        let error = |args: &[&str]| {
            let e = Flags::try_parse_from(std::iter::once("ongraph").chain(args.iter().copied())).unwrap_err();
            e.to_string().lines().next().unwrap_or_default().to_string()
        };
        assert_eq!(
            error(&["--depth", "99999999999"]),
            "error: invalid value '99999999999' for '--depth <D>': 99999999999 is too large: at most 100"
        );
        assert_eq!(
            error(&["--width=1e3"]),
            "error: invalid value '1e3' for '--width <N>': '1e3' is not a whole number"
        );
        assert_eq!(
            error(&["--samples=-2"]),
            "error: invalid value '-2' for '--samples <K>': '-2' is not a whole number"
        );
        assert_eq!(flags(&["--seed", "18446744073709551615"]).seed, Some(u64::MAX), "the whole range is taken");
    }

    /// `--samples 4294967295` once asked for 900 GB and aborted: every count has a limit, the
    /// same from a flag, from the config and for settings built otherwise, each error naming it.
    #[test]
    fn every_count_has_a_limit_named_where_it_is_given() {
        let flag_error = |args: &[String]| {
            let e =
                Flags::try_parse_from(std::iter::once("ongraph".to_string()).chain(args.iter().cloned())).unwrap_err();
            e.to_string().lines().next().unwrap_or_default().to_string()
        };
        assert_eq!(
            flag_error(&["--samples".into(), "4294967295".into()]),
            "error: invalid value '4294967295' for '--samples <K>': 4294967295 is too large: at most 1000"
        );
        let settings_keys = SettingsPatch::keys();
        for &(key, max) in LIMITS {
            let text = |n: u64| format!("[defaults]\n{key} = {n}\n");
            let parsed = Config::parse("c.toml", &text(max + 1));
            let error = parsed.map(drop).unwrap_err().to_string();
            assert!(error == format!("c.toml:2: `{key}` is at most {max}"), "{error}");
            assert!(Config::parse("c.toml", &text(max)).is_ok(), "{key} = {max} is allowed");
            if !settings_keys.iter().any(|k| k == key) {
                continue; // `concurrency`: not an engine setting, its flag is checked in `cli`
            }
            let flag = format!("--{}", key.replace('_', "-"));
            let error = flag_error(&[flag.clone(), (max + 1).to_string()]);
            assert!(error.ends_with(&format!("is too large: at most {max}")) && error.contains(&flag), "{error}");
            let at_most = build(&[&flags(&[&format!("{flag}={max}")])]);
            assert!(at_most.is_ok(), "{flag} {max}: {at_most:?}");
        }
        let zero = Config::parse("c.toml", "[defaults]\nconcurrency = 0\n");
        assert_eq!(zero.map(drop).unwrap_err().to_string(), "c.toml:2: `concurrency` is at least 1");
        let past_toml = Config::parse("c.toml", "[defaults]\nwidth = 18446744073709551615\n");
        assert_eq!(past_toml.map(drop).unwrap_err().to_string(), "c.toml:2: `width` is at most 1000");
        // Settings that reach `build` otherwise meet the same limits.
        let patch = SettingsPatch { sc: ScPatch { samples: Some(1_001), ..ScPatch::default() }, ..Default::default() };
        assert_eq!(build(&[&patch]).unwrap_err().to_string(), "--samples (config: samples) must be at most 1000");
    }

    #[test]
    fn settings_no_method_can_run_with_are_one_line_errors() {
        let error = |args: &[&str]| build(&[&flags(args)]).unwrap_err().to_string();
        assert_eq!(error(&["--samples", "0"]), "--samples must be at least 1");
        assert_eq!(error(&["--depth", "0"]), "--width and --depth must be at least 1");
        assert_eq!(error(&["--max-tokens", "0"]), "--max-tokens must be at least 1");
        assert_eq!(error(&["--sample-size", "0"]), "--sample-threshold and --sample-size must be at least 1");
        assert_eq!(error(&["--prune-temperature=-1"]), "--prune-temperature must be a number of at least 0");
        assert_eq!(error(&["--sample-temperature", "NaN"]), "--sample-temperature must be a number of at least 0");
        // The config's own value is refused at its line (`crate::config`'s tests).
        let zero = Config::parse("c.toml", "[defaults]\ngog_steps = 0\n").map(drop).unwrap_err();
        assert_eq!(zero.to_string(), "c.toml:2: `gog_steps` is at least 1");
        assert_eq!(build(&[&flags(&["--rollbacks", "0"])]).map(|s| s.gog.rollbacks), Ok(0), "no rollbacks is a choice");
    }
}
