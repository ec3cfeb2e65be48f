//! Simulated replies, for a model that knows each question's gold path (datasets such as
//! PathQuestion give one) and otherwise **reads only its prompt**: what each prompt template
//! would get from a reader who always chooses right. It measures the engine (its ceiling, and
//! what that costs in calls), never an LLM. Each method simulates its own templates (the
//! `simulations` of its registry entry); `eval`'s gold-path model finds them through the
//! registry.
//!
//! What a simulation may do with the gold path, and nothing more:
//! - **choose among what the prompt offers**: relations, entities, candidate paths, which shown
//!   entity to search next, which shown triples to keep;
//! - **say "sufficient" and answer only when the triples shown in the prompt chain the topic,
//!   through the gold relations in order and in their stored direction, to a gold answer**; the
//!   answer it gives is that chain's end, as the prompt writes it.
//!
//! What it never does: name a gold answer or entity the prompt does not show, write a triple,
//! or answer from "its own knowledge" (`{unknown}`).

/// One question's gold path, by label: the topic entity, then (relation id, entity) per hop.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct GoldPath {
    pub topic: String,
    pub hops: Vec<(String, String)>,
    /// Every accepted answer (the last hop may reach any of them).
    pub answers: Vec<String>,
}

/// What a simulation is shown: the prompt and what it is made of.
#[derive(Clone, Copy, Debug)]
pub struct Shown<'a> {
    /// The question the prompt asks (its last `Question:` or `Q:` line).
    pub question: &'a str,
    /// The prompt from the question's line on: the exemplars before it are not evidence.
    pub block: &'a str,
    /// The whole prompt.
    pub prompt: &'a str,
    /// The system message (under the shared-prefix layout it holds the instructions).
    pub system: &'a str,
}

impl<'a> Shown<'a> {
    pub fn new(prompt: &'a str, system: &'a str) -> Self {
        let start = block_start(prompt);
        Self {
            question: start.map_or("", |(_, q)| q.trim()),
            block: start.map_or(prompt, |(at, _)| &prompt[at..]),
            prompt,
            system,
        }
    }
}

/// A template's simulated reply to what it was shown.
pub type Simulate = fn(&Shown<'_>, &GoldPath) -> String;

/// The simulated reply of one prompt template, listed in its method's registry entry.
#[derive(Clone, Copy)]
pub struct Simulation {
    /// The template's name.
    pub template: &'static str,
    pub reply: Simulate,
}

impl std::fmt::Debug for Simulation {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Simulation").field("template", &self.template).finish_non_exhaustive()
    }
}

/// The engine's own templates simulated: naming the topic entity (the other two, the system
/// prompt and the extraction of an answer, are never a prompt of their own to a simulation).
pub(super) const ENGINE: &[Simulation] = &[Simulation { template: "topic_entities", reply: topics }];

/// Only which name to give: the question's own wording, case aside.
fn topics(shown: &Shown<'_>, gold: &GoldPath) -> String {
    if norm_name(shown.question).to_lowercase().contains(&norm_name(&gold.topic).to_lowercase()) {
        format!("{{{}}}", gold.topic)
    } else {
        UNKNOWN.into()
    }
}

/// The reply of a reader with no knowledge of its own.
pub const UNKNOWN: &str = "{unknown}";

/// Own knowledge (IO, CoT, a method's fallback): the simulation has none.
pub fn own_knowledge(_: &Shown<'_>, _: &GoldPath) -> String {
    UNKNOWN.into()
}

/// The answer from the triples a run collected (ToG's at the depth limit, GoG's at its step
/// limit): the gold answers the shown triples chain the topic to, else unknown.
pub fn answer_from_triples(shown: &Shown<'_>, gold: &GoldPath) -> String {
    braced_or_unknown(&gold.chained(&gold.triple_lines(shown.block)))
}

/// A stored triple as a prompt shows it: head, relation, tail.
pub type Triple = (String, String, String);

impl GoldPath {
    /// The entity hop `i` starts from.
    pub fn head(&self, i: usize) -> &str {
        if i == 0 { &self.topic } else { &self.hops[i - 1].1 }
    }

    /// Whether `name` is where hop `i` arrives (any answer, on the last hop).
    pub fn arrives(&self, i: usize, name: &str) -> bool {
        let name = norm_name(name);
        if i + 1 == self.hops.len() {
            self.answers.iter().any(|a| norm_name(a) == name)
        } else {
            self.hops.get(i).is_some_and(|(_, e)| norm_name(e) == name)
        }
    }

    pub fn is_answer(&self, name: &str) -> bool {
        let name = norm_name(name);
        self.answers.iter().any(|a| norm_name(a) == name)
    }

    /// Whether `relation` (as offered, possibly `r (incoming)`) is hop `i`'s relation walked
    /// forward: every gold hop follows a stored triple from head to tail.
    pub fn hop_relation(&self, i: usize, relation: &str) -> bool {
        let (rel, incoming) = offered_relation(relation);
        !incoming && self.hops.get(i).is_some_and(|(r, _)| norm_rel(r) == norm_rel(rel))
    }

    /// The hops starting at an entity of this name.
    pub fn hops_from(&self, name: &str) -> impl Iterator<Item = usize> + '_ {
        let name = norm_name(name);
        (0..self.hops.len()).filter(move |&i| norm_name(self.head(i)) == name)
    }

    /// Whether `name` is the topic or an entity the gold path passes (answers included).
    pub fn on_path(&self, name: &str) -> bool {
        let name = norm_name(name);
        norm_name(&self.topic) == name || self.hops.iter().any(|(_, e)| norm_name(e) == name) || self.is_answer(&name)
    }

    /// The `head, relation, tail` lines of `block` whose relation is a gold one (names may
    /// contain commas; the gold relation between them tells head from tail). A line may be
    /// labelled `Knowledge Triplets: ` or `Observation N: `.
    pub fn triple_lines(&self, block: &str) -> Vec<Triple> {
        let mut seps: Vec<(String, String)> = Vec::new();
        for (r, _) in &self.hops {
            for form in [r.trim().to_string(), norm_rel(r)] {
                let sep = format!(", {form}, ");
                if !seps.iter().any(|(s, _)| *s == sep) {
                    seps.push((sep, norm_rel(r)));
                }
            }
        }
        block
            .lines()
            .filter_map(|line| {
                let labelled = line.strip_prefix("Knowledge Triplets: ").or_else(|| {
                    let (label, rest) = line.split_once(": ")?;
                    let n = label.strip_prefix("Observation ")?;
                    n.chars().all(|c| c.is_ascii_digit()).then_some(rest)
                });
                let line = labelled.unwrap_or(line);
                seps.iter().find_map(|(sep, rel)| {
                    let (h, t) = line.split_once(sep.as_str())?;
                    Some((h.trim().to_string(), rel.clone(), t.trim().to_string()))
                })
            })
            .collect()
    }

    /// The entities each hop of the gold relations reaches from the topic through `triples`:
    /// `[topic], [after hop 1], …` (by name, as shown). With `strict`, only the gold path's own
    /// entities count at each hop (to choose among candidates, never to decide sufficiency).
    pub fn frontiers(&self, triples: &[Triple], strict: bool) -> Vec<Vec<String>> {
        let mut out = vec![vec![self.topic.clone()]];
        for (i, (rel, _)) in self.hops.iter().enumerate() {
            let from: Vec<String> = out[i].iter().map(|n| norm_name(n)).collect();
            let mut next: Vec<String> = Vec::new();
            for (h, r, t) in triples {
                let reached = *r == norm_rel(rel) && from.contains(&norm_name(h));
                if reached && (!strict || self.arrives(i, t)) && !next.iter().any(|n| norm_name(n) == norm_name(t)) {
                    next.push(t.clone());
                }
            }
            out.push(next);
        }
        out
    }

    /// The gold answers the shown triples chain the topic to, as the prompt writes them.
    pub fn chained(&self, triples: &[Triple]) -> Vec<String> {
        self.frontiers(triples, false)
            .last()
            .map_or_else(Vec::new, |ends| ends.iter().filter(|e| self.is_answer(e)).cloned().collect())
    }

    /// How many gold hops `triples` follow from the topic along the gold path's own entities.
    pub fn progress(&self, triples: &[Triple]) -> usize {
        self.frontiers(triples, true).iter().rposition(|f| !f.is_empty()).unwrap_or(0)
    }

    /// The offered relations that continue the gold path from `entity`, with the score they
    /// share. An entity off the gold path's own entities may still stand where one would (a
    /// sibling reached along the same relations, not told apart by the prompt): any gold
    /// relation offered, rated low.
    pub fn relations_from<'r>(&self, offered: &[&'r str], entity: &str) -> (Vec<&'r str>, f64) {
        let own: Vec<&str> =
            offered.iter().copied().filter(|r| self.hops_from(entity).any(|i| self.hop_relation(i, r))).collect();
        if !own.is_empty() {
            return (own, 1.0);
        }
        let any = offered.iter().copied().filter(|r| (0..self.hops.len()).any(|i| self.hop_relation(i, r))).collect();
        (any, 0.1)
    }
}

/// A name as compared: `_` for spaces and surrounding blanks do not count; case does
/// (PathQuestion-L's ids are names, and `The_Prefect` and `The_prefect` are two entities).
pub fn norm_name(name: &str) -> String {
    name.trim().replace('_', " ")
}

/// A relation as compared: PathQuestion-L writes Freebase ids with `__` for `.`
/// (`__people__person__gender`), and prompts may show either form.
pub fn norm_rel(r: &str) -> String {
    r.trim().trim_start_matches("__").replace("__", ".")
}

/// A relation as offered in a prompt: its name, and whether it is marked `(incoming)`
/// (a `[id]` told-apart suffix is dropped).
fn offered_relation(offered: &str) -> (&str, bool) {
    let name = offered.trim();
    let name = match name.rfind(" [") {
        Some(at) if name.ends_with(']') => &name[..at],
        _ => name,
    };
    match name.strip_suffix(" (incoming)") {
        Some(r) => (r.trim(), true),
        None => (name, false),
    }
}

/// `{a | b}`, or `{unknown}` when nothing was found.
pub fn braced_or_unknown(found: &[String]) -> String {
    if found.is_empty() { UNKNOWN.into() } else { format!("{{{}}}", found.join(" | ")) }
}

/// The text after the last `marker`, up to the end of its line, and where it starts.
pub fn after_last<'t>(text: &'t str, marker: &str) -> Option<(usize, &'t str)> {
    let at = text.rfind(marker)? + marker.len();
    let rest = &text[at..];
    Some((at, &rest[..rest.find('\n').unwrap_or(rest.len())]))
}

/// Where the question's own block starts: its last `Question:` or `Q:` line (exemplars come
/// before it).
fn block_start(prompt: &str) -> Option<(usize, &str)> {
    let a = after_last(prompt, "Question: ");
    let b = after_last(prompt, "Q: ");
    match (a, b) {
        (Some(a), Some(b)) => Some(if a.0 > b.0 { a } else { b }),
        (x, None) | (None, x) => x,
    }
}

/// `{r (Score: s)}` for each chosen relation, sharing `total`; none chosen: the first offered,
/// scored 0 (the model judges that nothing here bears on the question).
pub(super) fn scored_relations(offered: &[&str], (wanted, total): (Vec<&str>, f64), prefix: &str) -> String {
    if wanted.is_empty() {
        return offered.first().map_or_else(|| "{}".into(), |r| format!("{{{prefix}{r} (Score: 0.0)}}"));
    }
    let share = total / wanted.len() as f64;
    wanted.iter().map(|r| format!("{{{prefix}{r} (Score: {share:.3})}}")).collect::<Vec<_>>().join("\n")
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;

    pub(crate) fn gold() -> GoldPath {
        GoldPath {
            topic: "sylvia brett".into(),
            hops: vec![("spouse".into(), "charles vyner brooke".into()), ("parents".into(), "charles brooke".into())],
            answers: vec!["charles brooke".into(), "margaret brooke".into()],
        }
    }

    #[test]
    fn reads_the_question_after_the_exemplars() {
        let q = |p| Shown::new(p, "").question;
        assert_eq!(q("Q: exemplar?\nA: x\n\nQ: real one ?\nTopic Entity: y"), "real one ?");
        assert_eq!(q("Question: exemplar?\nQ: no\nQuestion: the one\nIndicator: z"), "the one");
        assert_eq!(q("nothing here"), "");
    }

    #[test]
    fn sufficient_only_when_the_shown_triples_chain_the_topic_to_an_answer() {
        let g = gold();
        // The answer's triple alone does not chain from the topic.
        let alone = "Q: q\nKnowledge Triplets: charles vyner brooke, parents, margaret brooke\nA: ";
        assert!(g.chained(&g.triple_lines(alone)).is_empty());
        let chain = "Q: q\nKnowledge Triplets: sylvia brett, spouse, charles vyner brooke\ncharles vyner brooke, parents, margaret brooke\nA: ";
        assert_eq!(g.chained(&g.triple_lines(chain)), vec!["margaret brooke"]);
        // Case tells entities apart: `Margaret Brooke` is not `margaret brooke`.
        let other = "Q: q\nKnowledge Triplets: sylvia brett, spouse, charles vyner brooke\ncharles vyner brooke, parents, Margaret Brooke\nA: ";
        assert!(g.chained(&g.triple_lines(other)).is_empty());
        // Backwards (the answer's parent, not its child) is not the gold relation's direction.
        let reversed = "Q: q\nKnowledge Triplets: sylvia brett, spouse, charles vyner brooke\nmargaret brooke, parents, charles vyner brooke\nA: ";
        assert!(g.chained(&g.triple_lines(reversed)).is_empty());
    }
}
