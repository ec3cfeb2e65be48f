//! A run's answer: where it comes from, the paths it rests on (best first) and the corrections
//! on them.

use super::beam::{NodeId, TripleView};
use super::{Run, beam};
use serde::{Deserialize, Serialize};

impl Run {
    /// Lists the answer's paths best first, whatever order the method built them in: the paths
    /// on the beam, then the routes merged into their entities' slots, and within each the
    /// paths that reach an answer first (a stable sort: ties keep the method's order). A path
    /// the model was shown that names no answer is listed, after those that do.
    pub(super) fn rank_answer_paths(&mut self) {
        let (Some(answer), beam) = (&mut self.cx.answer, &self.cx.beam) else { return };
        let merged = |p: &PathView| beam.merged_into(p.leaf).is_some();
        let names = answer_names(answer);
        let misses = |p: &PathView| !path_names_an_answer(beam, p.leaf, &names);
        answer.paths.sort_by(|a, b| {
            merged(a).cmp(&merged(b)).then(misses(a).cmp(&misses(b))).then(b.score.total_cmp(&a.score))
        });
        // The same route reached twice (a search the model repeated) is listed once.
        let mut seen = std::collections::HashSet::new();
        answer.paths.retain(|p| seen.insert(beam.path_text(p.leaf)));
    }

    /// Where the answer's paths that name no answer begin among those on the beam (before the
    /// merged routes), when a path before them names one: a list heads them [`OTHER_PATHS`].
    /// None for an answer from the model's own knowledge (no path supports it).
    pub fn other_paths_from(&self) -> Option<usize> {
        let answer = self.cx.answer.as_ref().filter(|a| a.source != AnswerSource::OwnKnowledge)?;
        let on_beam = answer.paths.iter().take_while(|p| self.cx.beam.merged_into(p.leaf).is_none());
        on_beam.enumerate().find(|(_, p)| !self.reaches_answer(p.leaf)).map(|(i, _)| i).filter(|&i| i > 0)
    }

    /// Whether the path ending at `leaf` names one of the answer's answers (a node shown as
    /// it, case aside): a path that supports the answer, not just one the model was shown.
    pub fn reaches_answer(&self, leaf: NodeId) -> bool {
        let Some(answer) = &self.cx.answer else { return false };
        path_names_an_answer(&self.cx.beam, leaf, &answer_names(answer))
    }

    /// The corrections (overlay ids) that asserted facts on the paths the answer rests on: each
    /// supporting path down to its first node naming an answer, in the order first met. Empty
    /// before the answer, and for an answer no path names.
    pub fn answer_corrections(&self) -> Vec<u64> {
        let Some(answer) = &self.cx.answer else { return Vec::new() };
        let beam = &self.cx.beam;
        let names: Vec<String> =
            answer.answers.iter().map(|a| a.trim().to_lowercase()).filter(|a| !a.is_empty()).collect();
        let names_an_answer = |n: NodeId| {
            let shown = beam.nodes[n].shown().trim().to_lowercase();
            names.iter().any(|a| *a == shown || (a.chars().count() >= 3 && shown.contains(a.as_str())))
        };
        let mut ids = Vec::new();
        for p in &answer.paths {
            let path = beam.path(p.leaf);
            let Some(end) = path.iter().position(|&n| names_an_answer(n)) else { continue };
            for &n in &path[..=end] {
                if let beam::Provenance::Correction { id } = beam.nodes[n].provenance
                    && !ids.contains(&id)
                {
                    ids.push(id);
                }
            }
        }
        ids
    }

    /// Where the answer comes from, in words, for an answer pane or `ask`: the source
    /// ([`AnswerSource::describe`]) and the corrections it rests on ([`Run::answer_corrections`]).
    /// A correction `generated(id)` says stores a triple the LLM wrote (GoG's, accepted by a
    /// user) is named as that: such an answer rests on the LLM, not on the knowledge graph.
    /// None before the answer.
    pub fn answer_source(&self, generated: impl Fn(u64) -> bool) -> Option<String> {
        let answer = self.cx.answer.as_ref()?;
        let ids = |list: &[u64]| list.iter().map(|id| format!("#{id}")).collect::<Vec<_>>().join(", ");
        let plural = |list: &[u64]| if list.len() == 1 { "correction" } else { "corrections" };
        let (llm, other): (Vec<u64>, Vec<u64>) = self.answer_corrections().into_iter().partition(|&id| generated(id));
        let through =
            if other.is_empty() { String::new() } else { format!(", through {} {}", plural(&other), ids(&other)) };
        Some(if llm.is_empty() {
            format!("{}{through}", answer.source_words())
        } else {
            let triple = if llm.len() == 1 { "an LLM-generated triple" } else { "LLM-generated triples" };
            format!(
                "from {triple} accepted as {} {}, not from the knowledge graph itself{through}",
                plural(&llm),
                ids(&llm)
            )
        })
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum AnswerSource {
    /// The model judged the retrieved paths sufficient (or the user forced it).
    KgPaths,
    /// The beam ran dry before the model was satisfied: answered from the partial paths.
    PartialPaths,
    /// Dmax reached without "sufficient": answered from the model's own knowledge.
    OwnKnowledge,
    /// A prompt-only baseline: the KG was never consulted.
    ModelOnly,
    /// No exploration stage was sufficient: answered from every path collected and the
    /// model's own knowledge (PoG).
    CollectedPaths,
    /// The answer rests on a triple the LLM wrote and verification kept, not on the KG (GoG).
    GeneratedTriples,
}

impl AnswerSource {
    pub fn describe(self) -> &'static str {
        match self {
            AnswerSource::KgPaths => "from knowledge-graph paths",
            AnswerSource::PartialPaths => "from partial knowledge-graph paths (the beam ran dry)",
            AnswerSource::OwnKnowledge => "from the LLM's own knowledge (no sufficient KG path within the depth limit)",
            AnswerSource::ModelOnly => "from the LLM alone (a prompt-only baseline: no KG)",
            AnswerSource::CollectedPaths => {
                "partly from the LLM's own knowledge (the collected KG paths were never judged sufficient)"
            }
            AnswerSource::GeneratedTriples => "from LLM-generated triples, verified (not in the KG)",
        }
    }

    /// The source in words with why the run answered so (`why`, from [`Answer::why`]) in
    /// place of the usual reason: `from the LLM's own knowledge (the model finished without a
    /// KG path to its answer)`. Without one, [`AnswerSource::describe`].
    pub fn describe_because(self, why: Option<&str>) -> String {
        let what = match self {
            AnswerSource::OwnKnowledge => "from the LLM's own knowledge",
            AnswerSource::PartialPaths => "from partial knowledge-graph paths",
            _ => return self.describe().to_string(),
        };
        match why {
            Some(why) => format!("{what} ({why})"),
            None => self.describe().to_string(),
        }
    }
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct PathView {
    pub leaf: NodeId,
    pub text: String,
    pub score: f64,
    pub triples: Vec<TripleView>,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Answer {
    /// The answer(s), best first. Empty when the model gave none.
    pub answers: Vec<String>,
    pub source: AnswerSource,
    /// The reply the answer was read from.
    pub reply: String,
    /// The paths the answer rests on (for own-knowledge answers: the paths explored), those
    /// that name an answer ([`Run::reaches_answer`]) first, then best path score first (ties in
    /// the method's order; see [`Run::path_order`]); the routes merged into a beam slot another
    /// path holds ([`Beam::merged_into`]) come after the paths on the beam, ordered alike.
    pub paths: Vec<PathView>,
    /// Why the answer comes from `source`, when the source alone does not say it truly: what
    /// ended the search for an own-knowledge answer (ToG's depth limit, the beam running dry,
    /// GoG's step limit, GoG's model finishing without a KG path). Absent from older files.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub why: Option<String>,
}

/// How the routes merged into a beam slot another path holds are headed where an answer's
/// paths are listed (they come after the paths on the beam, best first among themselves).
pub const MERGED_ROUTES: &str = "Other routes to entities on these paths (merged into them)";

/// How the answer's paths that name no answer are headed where they are listed: the model
/// was shown them, they support nothing.
pub const OTHER_PATHS: &str = "Other paths in front of the model (they name no answer)";

/// An answer's names, trimmed and lower-cased, the empty ones left out.
fn answer_names(answer: &Answer) -> Vec<String> {
    answer.answers.iter().map(|a| a.trim().to_lowercase()).filter(|a| !a.is_empty()).collect()
}

/// Whether a node of the path ending at `leaf` is shown as one of `names` (lower-cased).
fn path_names_an_answer(beam: &beam::Beam, leaf: NodeId, names: &[String]) -> bool {
    beam.path(leaf).into_iter().any(|n| names.contains(&beam.nodes[n].shown().trim().to_lowercase()))
}

impl Answer {
    /// Where the answer comes from, in words: the source and why.
    pub fn source_words(&self) -> String {
        self.source.describe_because(self.why.as_deref())
    }
}
