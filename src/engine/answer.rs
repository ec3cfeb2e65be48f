//! A run's answer: where it comes from, the paths it rests on (best first) and the corrections
//! on them.

use super::beam::{NodeId, TripleView};
use super::{Run, beam};
use crate::kg::Term;
use serde::{Deserialize, Serialize};

/// A triple the model generated (GoG's `Generate`), with what verification and linking made of
/// it: an answer may rest on one kept.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct GeneratedTriple {
    pub head: String,
    pub relation: String,
    pub tail: String,
    /// KG ids the names were linked to (None: no KG entity of that name).
    pub head_term: Option<Term>,
    pub tail_term: Option<Term>,
    /// Kept by verification (or by the user), so part of the known triples.
    pub kept: bool,
    pub node: NodeId,
}

impl Run {
    /// Lists the answer's paths best first, whatever order the method built them in: the paths
    /// on the beam, then the routes merged into their entities' slots, and within each the
    /// paths that reach an answer first (a stable sort: ties keep the method's order). A path
    /// the model was shown that names no answer is listed, after those that do.
    pub(super) fn rank_answer_paths(&mut self) {
        let (Some(answer), beam) = (&mut self.cx.answer, &self.cx.beam) else { return };
        let merged = |p: &PathView| beam.merged_into(p.leaf).is_some();
        let names = answer_names(answer);
        // Read once a path, not once a comparison.
        let leaves: Vec<NodeId> = answer.paths.iter().map(|p| p.leaf).collect();
        let misses: std::collections::HashMap<NodeId, bool> =
            leaves.iter().map(|&l| (l, answer_node(beam, &leaves, l, &names).is_none())).collect();
        let misses = |p: &PathView| misses.get(&p.leaf).copied().unwrap_or(true);
        answer.paths.sort_by(|a, b| {
            merged(a).cmp(&merged(b)).then(misses(a).cmp(&misses(b))).then(b.score.total_cmp(&a.score))
        });
        // The same route reached twice (a search the model repeated) is listed once: the same
        // triples through the same kind of facts (a KG triple and an accepted generated one
        // that print alike stay apart; so do unnamed nodes that print alike).
        let mut seen = std::collections::HashSet::new();
        answer.paths.retain(|p| seen.insert(route_key(beam, p.leaf)));
        // A source claims knowledge-graph paths only when a path names the answer: a model
        // that judged the paths sufficient and then named something none of them shows (or an
        // answer the user forced early) answered from its own knowledge, and says so
        // everywhere the source goes (ask, the UI, eval records, sessions). Judged on the paths
        // listed, as `reaches_answer` judges them.
        let leaves: Vec<NodeId> = answer.paths.iter().map(|p| p.leaf).collect();
        if answer.source == AnswerSource::KgPaths
            && !answer.answers.is_empty()
            && leaves.iter().all(|&l| answer_node(beam, &leaves, l, &names).is_none())
        {
            answer.source = AnswerSource::OwnKnowledge;
            answer.why = Some("no path the model was shown names its answer".into());
        }
    }

    /// Where the answer's paths that name no answer begin among those on the beam (before the
    /// merged routes): a list heads them [`OTHER_PATHS`] there (at 0: no path supports the
    /// answer). None for an answer from the model's own knowledge (no path supports it), or
    /// when every path on the beam names an answer.
    pub fn other_paths_from(&self) -> Option<usize> {
        let answer = self.cx.answer.as_ref().filter(|a| a.source != AnswerSource::OwnKnowledge)?;
        let on_beam = answer.paths.iter().take_while(|p| self.cx.beam.merged_into(p.leaf).is_none());
        on_beam.enumerate().find(|(_, p)| !self.reaches_answer(p.leaf)).map(|(i, _)| i)
    }

    /// Whether the path ending at `leaf` names one of the answer's answers ([`names_answer`]):
    /// a path that supports the answer, not just one the model was shown.
    pub fn reaches_answer(&self, leaf: NodeId) -> bool {
        let Some(answer) = &self.cx.answer else { return false };
        let leaves: Vec<NodeId> = answer.paths.iter().map(|p| p.leaf).collect();
        answer_node(&self.cx.beam, &leaves, leaf, &answer_names(answer)).is_some()
    }

    /// The corrections (overlay ids) that asserted facts on the paths the answer rests on: each
    /// supporting path down to its first node naming an answer, in the order first met. Empty
    /// before the answer, and for an answer no path names.
    pub fn answer_corrections(&self) -> Vec<u64> {
        let Some(answer) = &self.cx.answer else { return Vec::new() };
        let beam = &self.cx.beam;
        let names = answer_names(answer);
        let leaves: Vec<NodeId> = answer.paths.iter().map(|p| p.leaf).collect();
        let mut ids = Vec::new();
        for p in &answer.paths {
            let path = beam.path(p.leaf);
            let Some(end) = answer_node(beam, &leaves, p.leaf, &names) else { continue };
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
            AnswerSource::GeneratedTriples => "from verified LLM-generated triples, not in the KG",
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
pub const OTHER_PATHS: &str = "Other paths the model was shown (none names the answer)";

/// An answer's names, trimmed and lower-cased, the empty ones left out.
fn answer_names(answer: &Answer) -> Vec<String> {
    answer.answers.iter().map(|a| a.trim().to_lowercase()).filter(|a| !a.is_empty()).collect()
}

/// Where the path ending at `leaf` names one of `names` ([`path_answer_node`]); or, for an
/// answer that is the topic entity itself (by its words: "shah_shuja" is "shah shuja"), its
/// end, when another path of `leaves` (the answer's paths) from the same topic ends at the same
/// entity by other triples: the two close a cycle through the topic ("shah shuja -> parents ->
/// mumtaz mahal" and "shah shuja <- children <- mumtaz mahal": the child of shah shuja's parent
/// is shah shuja), as a path that walks back to its topic does. A triple seen twice (a search
/// repeated, a generated triple the KG also has) closes no cycle.
fn answer_node(beam: &beam::Beam, leaves: &[NodeId], leaf: NodeId, names: &[String]) -> Option<usize> {
    path_answer_node(beam, leaf, names).or_else(|| {
        let path = beam.path(leaf);
        let (&root, hops) = path.split_first()?;
        let topic = words(beam.nodes[root].shown());
        let is_topic = |name: &String| !topic.is_empty() && words(name) == topic;
        let end = beam.nodes[leaf].term().filter(|_| !hops.is_empty() && names.iter().any(is_topic))?;
        let facts = |id: NodeId| -> Vec<(Term, String, Term)> {
            beam.triples(id).into_iter().map(|t| (t.head_term, t.relation_id, t.tail_term)).collect()
        };
        let here = facts(leaf);
        let closes_cycle = |&other: &NodeId| {
            other != leaf
                && beam.path(other).first() == Some(&root)
                && beam.nodes[other].term() == Some(end)
                && facts(other).iter().all(|f| !here.contains(f))
        };
        leaves.iter().any(closes_cycle).then_some(hops.len())
    })
}

/// A name's words, lower-cased: what two spellings of one name share.
fn words(text: &str) -> Vec<String> {
    text.to_lowercase().split(|c: char| !c.is_alphanumeric()).filter(|w| !w.is_empty()).map(str::to_string).collect()
}

/// Where on the path ending at `leaf` (its index from the root) the first node naming one of
/// `names` (lower-cased) is: shown as it, or with it as a run of its words ("Labor Party" in
/// "Australian Labor Party", never "male" in "female"). Never the root: the topic entity is
/// where the search began, and a path from it supports no answer by naming it ("John F.
/// Kennedy" is a run of "John F. Kennedy Jr."'s words, and every path from him shows it).
fn path_answer_node(beam: &beam::Beam, leaf: NodeId, names: &[String]) -> Option<usize> {
    beam.path(leaf)
        .into_iter()
        .enumerate()
        .skip(1)
        .find(|&(_, n)| names.iter().any(|a| names_answer(beam.nodes[n].shown(), a)))
        .map(|(i, _)| i)
}

/// Whether a node shown as `shown` names `answer` (lower-cased): the same name, or the
/// answer's words (three letters at least) as a run of the name's.
fn names_answer(shown: &str, answer: &str) -> bool {
    let shown = shown.trim().to_lowercase();
    if shown == answer {
        return true;
    }
    let (name, wanted) = (words(&shown), words(answer));
    answer.chars().count() >= 3 && !wanted.is_empty() && name.windows(wanted.len()).any(|w| w == wanted.as_slice())
}

/// What makes two routes the same: their nodes' facts and where each came from.
fn route_key(beam: &beam::Beam, leaf: NodeId) -> Vec<String> {
    beam.path(leaf).into_iter().map(|n| format!("{:?} {:?}", beam.nodes[n].kind, beam.nodes[n].provenance)).collect()
}

impl Answer {
    /// Where the answer comes from, in words: the source and why.
    pub fn source_words(&self) -> String {
        self.source.describe_because(self.why.as_deref())
    }
}

#[cfg(test)]
mod tests {
    use super::{AnswerSource, answer_node, names_answer, path_answer_node};
    use crate::engine::beam::{Beam, NodeKind, Provenance};
    use crate::kg::{Direction, Term};

    /// A topic, a relation and an entity under it: the beam of one path.
    fn one_path(topic: &str, tail: &str) -> (Beam, usize) {
        let mut beam = Beam::default();
        let kg = || Provenance::Kg { graph: "kb".into() };
        let entity = |name: &str| NodeKind::Entity { term: Term::Entity(name.into()), label: Some(name.into()) };
        let root = beam.add(None, entity(topic), kg());
        let relation = NodeKind::Relation { relation: "r".into(), direction: Direction::Out, shown: "r".into() };
        let hop = beam.add(Some(root), relation, kg());
        let leaf = beam.add(Some(hop), entity(tail), kg());
        (beam, leaf)
    }

    #[test]
    fn the_topic_entity_never_names_the_answer_of_a_path_from_it() {
        // Found by a trial: "john f kennedy" (the answer) is a run of the topic's words, so
        // every path from the topic was listed as supporting it.
        let (beam, leaf) = one_path("john f kennedy jr", "businessperson");
        assert_eq!(path_answer_node(&beam, leaf, &["john f kennedy".into()]), None);
        assert_eq!(path_answer_node(&beam, leaf, &["john f kennedy jr".into()]), None, "the topic as its answer");
        let (beam, leaf) = one_path("john f kennedy jr", "john f kennedy");
        assert_eq!(path_answer_node(&beam, leaf, &["john f kennedy".into()]), Some(2), "the entity the path reaches");
    }

    /// "Who is the child of shah_shuja 's parent ?": the topic is the answer, and GoG observes
    /// both triples between it and the parent, which close a cycle through it.
    #[test]
    fn the_topic_is_named_as_the_answer_by_two_paths_that_close_a_cycle_through_it() {
        let mut beam = Beam::default();
        let kg = || Provenance::Kg { graph: "kb".into() };
        let entity = |name: &str| NodeKind::Entity { term: Term::Entity(name.into()), label: Some(name.into()) };
        let relation = |r: &str, direction| NodeKind::Relation { relation: r.into(), direction, shown: r.into() };
        let root = beam.add(None, entity("shah shuja"), kg());
        let parents = beam.add(Some(root), relation("parents", Direction::Out), kg());
        let parent = beam.add(Some(parents), entity("mumtaz mahal"), kg());
        let children = beam.add(Some(root), relation("children", Direction::In), kg());
        let parent_again = beam.add(Some(children), entity("mumtaz mahal"), kg());
        let spouse = beam.add(Some(root), relation("spouse", Direction::Out), kg());
        let wife = beam.add(Some(spouse), entity("piari banu"), kg());
        let topic = ["shah shuja".to_string()];
        let leaves = [parent, parent_again, wife];
        assert_eq!(answer_node(&beam, &leaves, parent, &topic), Some(2), "the whole path is the cycle's half");
        assert_eq!(answer_node(&beam, &leaves, parent_again, &topic), Some(2));
        assert_eq!(answer_node(&beam, &leaves, wife, &topic), None, "no other path reaches piari banu");
        assert_eq!(answer_node(&beam, &[parent, wife], parent, &topic), None, "a cycle only through the paths shown");
        assert_eq!(
            answer_node(&beam, &leaves, parent, &["shah".to_string()]),
            None,
            "the topic only by its whole name"
        );
        assert_eq!(answer_node(&beam, &leaves, root, &topic), None, "the root alone is no path");
        assert_eq!(
            answer_node(&beam, &leaves, parent, &["shah_shuja".to_string()]),
            Some(2),
            "as the question spells it"
        );
        // The same triple twice (a search repeated) is no cycle.
        let parents_again = beam.add(Some(root), relation("parents", Direction::Out), kg());
        let parent_twice = beam.add(Some(parents_again), entity("mumtaz mahal"), kg());
        assert_eq!(answer_node(&beam, &[parent, parent_twice], parent, &topic), None, "found by a review");
        assert_eq!(answer_node(&beam, &[parent, parent_twice, parent_again], parent_twice, &topic), Some(2));
        // A path that goes on from the other one's end shares its nodes: no cycle.
        let further = beam.add(Some(parent), relation("sibling", Direction::Out), kg());
        let aunt = beam.add(Some(further), entity("mumtaz mahal"), kg());
        assert_eq!(answer_node(&beam, &[parent, aunt], aunt, &topic), None);
        // Any other answer is named as before.
        assert_eq!(answer_node(&beam, &leaves, wife, &["piari banu".to_string()]), Some(2));
    }

    #[test]
    fn a_node_names_an_answer_by_the_same_name_or_a_run_of_its_words() {
        assert!(names_answer("Australian Labor Party", "australian labor party"));
        assert!(names_answer("Australian Labor Party", "labor party"), "the answer's words as a run of the name's");
        assert!(!names_answer("female", "male"), "never part of a word");
        assert!(!names_answer("Party of Australian Labor", "australian party"), "a run, in order");
        assert!(names_answer("Al", "al"), "the same name, however short");
        assert!(!names_answer("Palo Alto", "al"), "a short answer only as the whole name");
    }

    #[test]
    fn why_the_run_answered_so_is_said_for_every_source_an_answer_can_fall_back_to() {
        let why = Some("the run stopped after 6 steps");
        for (source, said) in [
            (AnswerSource::OwnKnowledge, "from the LLM's own knowledge (the run stopped after 6 steps)"),
            (AnswerSource::PartialPaths, "from partial knowledge-graph paths (the run stopped after 6 steps)"),
            (
                AnswerSource::GeneratedTriples,
                "from verified LLM-generated triples, not in the KG (the run stopped after 6 steps)",
            ),
        ] {
            assert_eq!(source.describe_because(why), said);
            assert_eq!(source.describe_because(None), source.describe(), "without a why, the usual words");
        }
        assert_eq!(
            AnswerSource::KgPaths.describe_because(why),
            AnswerSource::KgPaths.describe(),
            "a grounded answer needs no why"
        );
    }
}
