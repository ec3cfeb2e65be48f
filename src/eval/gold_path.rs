//! A simulation model that knows each question's gold path (datasets such as PathQuestion give
//! one) and otherwise **reads only its prompt**. It measures the engine: its ceiling when every
//! choice is right, and what that costs in calls. It never measures an LLM's accuracy.
//!
//! What it may do with the gold path, and nothing more:
//! - **choose among what the prompt offers**: relations, entities, candidate paths, which shown
//!   entity to search next, which shown triples to keep; an analysis indicator made of the gold
//!   relation names;
//! - **say "sufficient" and answer only when the triples shown in the prompt chain the topic,
//!   through the gold relations in order and in their stored direction, to a gold answer**
//!   (PoG and GoG: the union of every path or observation shown); the answer it gives is that
//!   chain's end, as the prompt writes it.
//!
//! What it never does: name a gold answer or entity the prompt does not show, write a triple
//! (GoG's `Generate` gets nothing from it), or answer from "its own knowledge" (`{unknown}`).
//! It tells prompts apart by their text (the default templates), never by the engine's step
//! name. A question whose text repeats with other answers follows the first line's gold path,
//! as any reader of the question text must.

use crate::dataset::GoldPath;
use crate::engine::Registry;
use crate::llm::{ChatRequest, Completion, LanguageModel, LlmError, Usage};
use crate::prompts::Template;
use async_trait::async_trait;
use std::collections::HashMap;
use std::sync::LazyLock;

impl GoldPath {
    /// The entity hop `i` starts from.
    fn head(&self, i: usize) -> &str {
        if i == 0 { &self.topic } else { &self.hops[i - 1].1 }
    }

    /// Whether `name` is where hop `i` arrives (any answer, on the last hop).
    fn arrives(&self, i: usize, name: &str) -> bool {
        let name = norm_name(name);
        if i + 1 == self.hops.len() {
            self.answers.iter().any(|a| norm_name(a) == name)
        } else {
            self.hops.get(i).is_some_and(|(_, e)| norm_name(e) == name)
        }
    }

    fn is_answer(&self, name: &str) -> bool {
        let name = norm_name(name);
        self.answers.iter().any(|a| norm_name(a) == name)
    }

    /// Whether `relation` (as offered, possibly `r (incoming)`) is hop `i`'s relation walked
    /// forward: every gold hop follows a stored triple from head to tail.
    fn hop_relation(&self, i: usize, relation: &str) -> bool {
        let (rel, incoming) = offered_relation(relation);
        !incoming && self.hops.get(i).is_some_and(|(r, _)| norm_rel(r) == norm_rel(rel))
    }

    /// The hops starting at an entity of this name.
    fn hops_from(&self, name: &str) -> impl Iterator<Item = usize> + '_ {
        let name = norm_name(name);
        (0..self.hops.len()).filter(move |&i| norm_name(self.head(i)) == name)
    }

    /// Whether `name` is the topic or an entity the gold path passes (answers included).
    fn on_path(&self, name: &str) -> bool {
        let name = norm_name(name);
        norm_name(&self.topic) == name || self.hops.iter().any(|(_, e)| norm_name(e) == name) || self.is_answer(&name)
    }
}

/// Follows the gold paths of a set of questions (keyed by the question as asked, trimmed).
pub struct GoldPathModel {
    gold: HashMap<String, GoldPath>,
}

/// The prompts it reads, told apart by the default templates' opening lines.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Kind {
    Topics,
    RelationPrune,
    RelationPruneUnified,
    EntityPrune,
    EntityPruneUnified,
    Reasoning,
    ReasoningTogR,
    Answer,
    PogAnalysis,
    PogSelect,
    PogSummary,
    PogSufficiency,
    PogSupplement,
    PogAnswer,
    GogStep,
    GogRelations,
    GogGenerate,
    GogVerify,
    /// Own knowledge, IO, CoT, self-consistency: the simulation knows nothing.
    OwnKnowledge,
}

/// The kind of prompt each built-in template renders, by the template's name. The system
/// prompt and the extraction of an answer are none (never a prompt of its own; no extraction is
/// asked of a simulation, which reads free text only); a method's own templates are none
/// either: the simulation reads ongraph's default prompts only.
const KINDS: &[(&str, Kind)] = &[
    ("topic_entities", Kind::Topics),
    ("relation_prune", Kind::RelationPrune),
    ("relation_prune_unified", Kind::RelationPruneUnified),
    ("entity_prune", Kind::EntityPrune),
    ("entity_prune_unified", Kind::EntityPruneUnified),
    ("reasoning", Kind::Reasoning),
    ("reasoning_tog_r", Kind::ReasoningTogR),
    ("answer", Kind::Answer),
    ("answer_own_knowledge", Kind::OwnKnowledge),
    ("io", Kind::OwnKnowledge),
    ("cot", Kind::OwnKnowledge),
    ("pog_analysis", Kind::PogAnalysis),
    ("pog_precise", Kind::PogSelect),
    ("pog_branch", Kind::PogSelect),
    ("pog_summary", Kind::PogSummary),
    ("pog_sufficiency", Kind::PogSufficiency),
    ("pog_supplement", Kind::PogSupplement),
    ("pog_answer", Kind::PogAnswer),
    ("pog_answer_own", Kind::OwnKnowledge),
    ("gog_step", Kind::GogStep),
    ("gog_relations", Kind::GogRelations),
    ("gog_generate", Kind::GogGenerate),
    ("gog_verify", Kind::GogVerify),
];

fn kind_of(template: Template) -> Option<Kind> {
    KINDS.iter().find(|(name, _)| *name == template.name()).map(|&(_, kind)| kind)
}

/// Which default template a prompt was rendered from: the one whose first line (up to its
/// first placeholder) the prompt starts with, the longest such line winning; under the
/// shared-prefix layout, the task the prompt's first line names.
fn kind(prompt: &str) -> Option<Kind> {
    if let Some(task) = prompt.strip_prefix("Task: ").and_then(|rest| rest.lines().next()) {
        return KINDS.iter().find(|(name, _)| *name == task).map(|&(_, kind)| kind);
    }
    // Each built-in template's lead: its first line up to its first placeholder.
    static LEADS: LazyLock<Vec<(&'static str, Kind)>> = LazyLock::new(|| {
        Registry::builtin()
            .templates()
            .into_iter()
            .filter_map(|template| {
                let kind = kind_of(template)?;
                let first = template.default_text().lines().next().unwrap_or_default();
                let lead = first.split("{{").next().unwrap_or_default();
                (!lead.is_empty()).then_some((lead, kind))
            })
            .collect()
    });
    LEADS.iter().filter(|(lead, _)| prompt.starts_with(lead)).max_by_key(|(lead, _)| lead.len()).map(|&(_, kind)| kind)
}

impl GoldPathModel {
    /// The first gold path given for a question text wins (a reader of the text cannot tell
    /// repeats apart).
    pub fn new(gold: impl IntoIterator<Item = (String, GoldPath)>) -> Self {
        let mut map = HashMap::new();
        for (q, g) in gold {
            map.entry(q.trim().to_string()).or_insert(g);
        }
        Self { gold: map }
    }

    fn reply(&self, r: &ChatRequest) -> Result<String, LlmError> {
        let p = r.prompt.as_str();
        let q = question(p);
        let gold =
            self.gold.get(q).ok_or_else(|| LlmError::Config(format!("the gold-path model has no path for {q:?}")))?;
        let kind = kind(p).ok_or_else(|| {
            LlmError::Config(
                "the gold-path simulation reads ongraph's default prompts only, and this prompt is none of them".into(),
            )
        })?;
        // Only the question's own block: the exemplars before it are not evidence.
        let block = block(p);
        Ok(match kind {
            Kind::Topics => {
                // Only which name to give: the question's own wording, case aside.
                if norm_name(q).to_lowercase().contains(&norm_name(&gold.topic).to_lowercase()) {
                    format!("{{{}}}", gold.topic)
                } else {
                    "{unknown}".into()
                }
            }
            Kind::RelationPrune => relation_prune(block, gold),
            Kind::RelationPruneUnified => relation_prune_unified(block, gold),
            Kind::EntityPrune => entity_prune(block, gold),
            Kind::EntityPruneUnified => entity_prune_unified(block, gold),
            Kind::Reasoning => match chained(&triple_lines(block, gold), gold).as_slice() {
                [] => "{No}. The triplets do not yet link the topic entity to an answer.".into(),
                found => {
                    format!("{{Yes}}. The triplets link the topic entity to the answer {{{}}}.", found.join(" | "))
                }
            },
            Kind::ReasoningTogR => match tog_r_chains(block, gold).as_slice() {
                [] => "{No}. No chain links the topic entity to an answer yet.".into(),
                found => format!("{{Yes}}. A chain links the topic entity to the answer {{{}}}.", found.join(" | ")),
            },
            Kind::Answer => braced_or_unknown(&chained(&triple_lines(block, gold), gold)),
            Kind::PogAnalysis => pog_analysis(gold),
            // Under the shared-prefix layout the instructions (and the width) are in the system
            // message: part of what the model is shown.
            Kind::PogSelect => pog_select(block, gold, width(p).or_else(|| width(&r.system)).unwrap_or(3)),
            Kind::PogSummary => "CoT1: the paths above are what the graph shows so far.".into(),
            Kind::PogSufficiency => match chained(&pog_triples(block, "Path "), gold).as_slice() {
                [] => "{No}".into(),
                found => format!(
                    "{{Yes}}\nanswer: {{{}}}\nreason: the paths together link the topic entity to it.",
                    found.join(" | ")
                ),
            },
            Kind::PogSupplement => pog_supplement(block, gold),
            Kind::PogAnswer => braced_or_unknown(&chained(&pog_triples(block, "Path "), gold)),
            Kind::GogStep => gog_step(block, gold),
            Kind::GogRelations => gog_relations(block, gold),
            // It writes no triple it was not shown.
            Kind::GogGenerate => String::new(),
            Kind::GogVerify => gog_verify(block, gold),
            Kind::OwnKnowledge => "{unknown}".into(),
        })
    }
}

#[async_trait]
impl LanguageModel for GoldPathModel {
    fn describe(&self) -> String {
        "gold-path simulation (chooses along each question's gold path, reads only its prompt; not an LLM)".into()
    }

    async fn complete(&self, request: &ChatRequest) -> Result<Completion, LlmError> {
        let text = self.reply(request)?;
        // Tokens as the scripted model estimates them: words, for cost shapes only.
        let usage = Usage {
            prompt_tokens: request.prompt.split_whitespace().count() as u64,
            completion_tokens: text.split_whitespace().count() as u64,
            ..Usage::default()
        };
        Ok(Completion { text, usage, ..Default::default() })
    }
}

/// A name as compared: `_` for spaces and surrounding blanks do not count; case does
/// (PathQuestion-L's ids are names, and `The_Prefect` and `The_prefect` are two entities).
fn norm_name(name: &str) -> String {
    name.trim().replace('_', " ")
}

/// A relation as compared: PathQuestion-L writes Freebase ids with `__` for `.`
/// (`__people__person__gender`), and prompts may show either form.
fn norm_rel(r: &str) -> String {
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

fn braced_or_unknown(found: &[String]) -> String {
    if found.is_empty() { "{unknown}".into() } else { format!("{{{}}}", found.join(" | ")) }
}

/// The text after the last `marker`, up to the end of its line.
fn after_last<'a>(text: &'a str, marker: &str) -> Option<(usize, &'a str)> {
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

/// The question a prompt asks.
fn question(prompt: &str) -> &str {
    block_start(prompt).map_or("", |(_, q)| q.trim())
}

/// The prompt from the question's line on.
fn block(prompt: &str) -> &str {
    block_start(prompt).map_or(prompt, |(at, _)| &prompt[at..])
}

fn width(prompt: &str) -> Option<usize> {
    prompt.split_once("Select the ").and_then(|(_, rest)| rest.split_whitespace().next()).and_then(|n| n.parse().ok())
}

/// A stored triple as a prompt shows it: head, relation, tail.
type Triple = (String, String, String);

/// The `head, relation, tail` lines of a block whose relation is a gold one (names may contain
/// commas; the gold relation between them tells head from tail).
fn triple_lines(block: &str, gold: &GoldPath) -> Vec<Triple> {
    let mut seps: Vec<(String, String)> = Vec::new();
    for (r, _) in &gold.hops {
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
            // `Knowledge Triplets: a, r, b`, `Observation 3: a, r, b`, or a bare line.
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
fn frontiers(triples: &[Triple], gold: &GoldPath, strict: bool) -> Vec<Vec<String>> {
    let mut out = vec![vec![gold.topic.clone()]];
    for (i, (rel, _)) in gold.hops.iter().enumerate() {
        let from: Vec<String> = out[i].iter().map(|n| norm_name(n)).collect();
        let mut next: Vec<String> = Vec::new();
        for (h, r, t) in triples {
            let reached = *r == norm_rel(rel) && from.contains(&norm_name(h));
            if reached && (!strict || gold.arrives(i, t)) && !next.iter().any(|n| norm_name(n) == norm_name(t)) {
                next.push(t.clone());
            }
        }
        out.push(next);
    }
    out
}

/// The gold answers the shown triples chain the topic to, as the prompt writes them.
fn chained(triples: &[Triple], gold: &GoldPath) -> Vec<String> {
    frontiers(triples, gold, false)
        .last()
        .map_or_else(Vec::new, |ends| ends.iter().filter(|e| gold.is_answer(e)).cloned().collect())
}

/// How many gold hops `triples` follow from the topic along the gold path's own entities.
fn progress(triples: &[Triple], gold: &GoldPath) -> usize {
    frontiers(triples, gold, true).iter().rposition(|f| !f.is_empty()).unwrap_or(0)
}

/// `{r (Score: s)}` for each chosen relation, sharing `total`; none chosen: the first offered,
/// scored 0 (the model judges that nothing here bears on the question).
fn scored_relations(offered: &[&str], (wanted, total): (Vec<&str>, f64), prefix: &str) -> String {
    if wanted.is_empty() {
        return offered.first().map_or_else(|| "{}".into(), |r| format!("{{{prefix}{r} (Score: 0.0)}}"));
    }
    let share = total / wanted.len() as f64;
    wanted.iter().map(|r| format!("{{{prefix}{r} (Score: {share:.3})}}")).collect::<Vec<_>>().join("\n")
}

/// The offered relations that continue the gold path from `entity`, with the score they share.
/// An entity off the gold path's own entities may still stand where one would (a sibling reached
/// along the same relations, not told apart by the prompt): any gold relation offered, rated low.
fn relations_from<'a>(offered: &[&'a str], entity: &str, gold: &GoldPath) -> (Vec<&'a str>, f64) {
    let own: Vec<&str> =
        offered.iter().copied().filter(|r| gold.hops_from(entity).any(|i| gold.hop_relation(i, r))).collect();
    if !own.is_empty() {
        return (own, 1.0);
    }
    let any = offered.iter().copied().filter(|r| (0..gold.hops.len()).any(|i| gold.hop_relation(i, r))).collect();
    (any, 0.1)
}

fn relation_prune(block: &str, gold: &GoldPath) -> String {
    let entity = after_last(block, "\nTopic Entity: ").map(|(_, l)| l.trim()).unwrap_or_default();
    let offered: Vec<&str> =
        after_last(block, "\nRelations: ").map(|(_, l)| l.split("; ").collect()).unwrap_or_default();
    scored_relations(&offered, relations_from(&offered, entity, gold), "")
}

fn relation_prune_unified(block: &str, gold: &GoldPath) -> String {
    let mut out = Vec::new();
    let mut entity = "";
    for line in block.lines() {
        if let Some(e) = line.strip_prefix("Topic Entity: ") {
            entity = e.trim();
        } else if let Some(list) = line.strip_prefix("Relations: ") {
            let offered: Vec<&str> = list.split("; ").collect();
            out.push(scored_relations(&offered, relations_from(&offered, entity, gold), &format!("{entity} | ")));
        }
    }
    out.join("\n")
}

/// Scores for `entities` reached through `relation`: equal shares for those where a gold hop
/// along that relation arrives, 0 for the rest.
fn entity_scores(relation: &str, entities: &[&str], gold: &GoldPath) -> String {
    let on: Vec<bool> = entities
        .iter()
        .map(|e| (0..gold.hops.len()).any(|i| gold.hop_relation(i, relation) && gold.arrives(i, e)))
        .collect();
    let k = on.iter().filter(|&&b| b).count().max(1) as f64;
    on.iter().map(|&b| if b { format!("{:.3}", 1.0 / k) } else { "0.0".into() }).collect::<Vec<_>>().join(", ")
}

fn entity_prune(block: &str, gold: &GoldPath) -> String {
    let relation = after_last(block, "\nRelation: ").map(|(_, l)| l).unwrap_or_default();
    let entities: Vec<&str> =
        after_last(block, "\nEntities: ").map(|(_, l)| l.split("; ").collect()).unwrap_or_default();
    format!("Score: {}", entity_scores(relation, &entities, gold))
}

fn entity_prune_unified(block: &str, gold: &GoldPath) -> String {
    block
        .lines()
        .filter_map(|line| {
            let (label, rest) = line.split_once(": Relation: ")?;
            let (relation, entities) = rest.split_once("; Entities: ")?;
            let entities: Vec<&str> = entities.split("; ").collect();
            Some(format!("{label}: {}", entity_scores(relation, &entities, gold)))
        })
        .collect::<Vec<_>>()
        .join("\n")
}

/// ToG-R's chains (`topic -> r1 -> r2 (incoming): e1; e2`) that follow every gold relation
/// forward from the topic: the gold answers among the entities they reach.
fn tog_r_chains(block: &str, gold: &GoldPath) -> Vec<String> {
    let mut found: Vec<String> = Vec::new();
    for line in block.lines() {
        let Some(last_arrow) = line.rfind(" -> ") else { continue };
        let Some(colon) = line[last_arrow..].find(": ").map(|c| last_arrow + c) else { continue };
        let parts: Vec<&str> = line[..colon].split(" -> ").collect();
        let follows = norm_name(parts[0]) == norm_name(&gold.topic)
            && parts.len() == gold.hops.len() + 1
            && parts[1..].iter().enumerate().all(|(i, r)| gold.hop_relation(i, r));
        if follows {
            for e in line[colon + 2..].split("; ").map(str::trim) {
                if gold.is_answer(e) && !found.iter().any(|f| f == e) {
                    found.push(e.to_string());
                }
            }
        }
    }
    found
}

fn pog_analysis(gold: &GoldPath) -> String {
    let mut chain = vec![format!("\"{}\"", gold.topic)];
    for (i, (rel, _)) in gold.hops.iter().enumerate() {
        chain.push(rel.clone());
        chain.push(if i + 1 == gold.hops.len() { "answer(entity)".into() } else { format!("entity{}", i + 1) });
    }
    format!("Thinking CoT: {}\nSplit questions:\n1. Where does the path from {} lead?", chain.join(" - "), gold.topic)
}

/// The triples of one PoG path text, `{A} - {-> r -> | <- q <-} - {B} …`, several segments
/// joined by ` ; ` (a path and its expansion).
fn pog_path_triples(text: &str, out: &mut Vec<Triple>) {
    for segment in text.split(" ; ") {
        let segment = segment.trim();
        let inner = segment.strip_prefix('{').and_then(|s| s.strip_suffix('}')).unwrap_or(segment);
        let parts: Vec<&str> = inner.split("} - {").collect();
        for (k, pair) in parts.windows(3).enumerate() {
            if k % 2 == 1 {
                continue; // windows centred on an entity
            }
            let [from, rels, to] = pair else { continue };
            for r in rels.split(" | ") {
                let r = r.trim();
                let name = r.trim_matches(|c| matches!(c, '-' | '<' | '>' | ' ')).to_string();
                if r.starts_with("->") {
                    out.push((from.to_string(), norm_rel(&name), to.to_string()));
                } else if r.starts_with("<-") {
                    out.push((to.to_string(), norm_rel(&name), from.to_string()));
                }
            }
        }
    }
}

/// The triples of every line of `block` labelled `label…: ` (`Path 3: …`, `Candidate Edge 2: …`).
fn pog_triples(block: &str, label: &str) -> Vec<Triple> {
    let mut out = Vec::new();
    for line in block.lines() {
        if let Some((_, text)) = line.strip_prefix(label).and_then(|r| r.split_once(": ")) {
            pog_path_triples(text, &mut out);
        }
    }
    out
}

/// Numbered candidates (`Candidate Edge i: text`): picked one at a time, each the one that
/// takes the picks together furthest along the gold path (paths are read together later), ties
/// to the one going furthest alone, then to the first listed.
fn pog_select(block: &str, gold: &GoldPath, width: usize) -> String {
    let cands: Vec<(usize, Vec<Triple>)> = block
        .lines()
        .filter_map(|l| {
            let (n, text) = l.strip_prefix("Candidate Edge ")?.split_once(": ")?;
            let mut triples = Vec::new();
            pog_path_triples(text, &mut triples);
            Some((n.trim().parse().ok()?, triples))
        })
        .collect();
    let alone: Vec<usize> = cands.iter().map(|(_, t)| progress(t, gold)).collect();
    let (mut picked, mut union): (Vec<usize>, Vec<Triple>) = (Vec::new(), Vec::new());
    while picked.len() < width.max(1) {
        let best = (0..cands.len()).filter(|k| !picked.contains(k)).max_by_key(|&k| {
            let together: Vec<Triple> = union.iter().chain(&cands[k].1).cloned().collect();
            (progress(&together, gold), alone[k], std::cmp::Reverse(k))
        });
        let Some(k) = best else { break };
        union.extend(cands[k].1.iter().cloned());
        picked.push(k);
    }
    let picks: Vec<String> = picked.iter().map(|&k| format!("Candidate Edge {}", cands[k].0)).collect();
    format!("top_list:{{{}}}", picks.join(", "))
}

/// Names the gold path's intermediate entities that the shown paths contain: never an answer
/// (a candidate answer is the model's own knowledge, which the simulation has none of), never
/// an entity the paths do not show.
fn pog_supplement(block: &str, gold: &GoldPath) -> String {
    let mut shown: Vec<String> = Vec::new();
    for (h, _, t) in pog_triples(block, "Path ") {
        for name in [h, t] {
            let on_path = gold.on_path(&name) && !gold.is_answer(&name);
            if on_path && norm_name(&name) != norm_name(&gold.topic) && !shown.contains(&name) {
                shown.push(name);
            }
        }
    }
    format!("Candidate answers: {{{}}}", shown.join("}, {"))
}

/// The entities named in the transcript's `Search[…]` actions.
fn searched(transcript: &str) -> Vec<String> {
    transcript
        .lines()
        .filter_map(|l| l.split_once("Search[").and_then(|(label, rest)| label.starts_with("Action").then_some(rest)))
        .flat_map(|rest| rest.trim_end().trim_end_matches(']').split(" | ").map(norm_name).collect::<Vec<_>>())
        .collect()
}

fn gog_step(block: &str, gold: &GoldPath) -> String {
    // The transcript ends with the `Thought n:` to write.
    let steps = block.matches("\nAction ").count() + 1;
    let triples = triple_lines(block, gold);
    let found = chained(&triples, gold);
    if !found.is_empty() {
        return format!(
            "Thought {steps}: The observations link the topic entity to the answer.\nAction {steps}: Finish[{}]",
            found.join(" | ")
        );
    }
    let done = searched(block);
    let reached = frontiers(&triples, gold, false);
    // The deepest hop reached first; among its entities, the gold path's own first.
    for (hop, entities) in reached.iter().enumerate().take(gold.hops.len()).rev() {
        let mut todo: Vec<&String> = entities.iter().filter(|e| !done.contains(&norm_name(e))).collect();
        todo.sort_by_key(|e| !gold.hops_from(e).any(|i| i == hop));
        todo.truncate(3);
        if !todo.is_empty() {
            let names: Vec<&str> = todo.iter().map(|e| e.as_str()).collect();
            return format!(
                "Thought {steps}: I need to know more about {}.\nAction {steps}: Search[{}]",
                names.join(" and "),
                names.join(" | ")
            );
        }
    }
    format!("Thought {steps}: The graph does not show the next fact I need.\nAction {steps}: Finish[unknown]")
}

fn gog_relations(block: &str, gold: &GoldPath) -> String {
    let entity = after_last(block, "\nEntity: ").map(|(_, l)| l.trim()).unwrap_or_default();
    let offered: Vec<&str> = after_last(block, "\nRelation: ")
        .map(|(_, l)| l.trim().trim_start_matches('[').trim_end_matches(']').split(", ").collect())
        .unwrap_or_default();
    let (mut wanted, _) = relations_from(&offered, entity, gold);
    wanted.truncate(3);
    format!("[{}]", wanted.join(", "))
}

fn gog_verify(block: &str, gold: &GoldPath) -> String {
    let keep: Vec<String> = block
        .lines()
        .filter_map(|l| {
            let (n, triple) = l.split_once(". ")?;
            let n: usize = n.trim().parse().ok()?;
            let parts: Vec<&str> = triple.split(", ").collect();
            let [h, r, t] = parts.as_slice() else { return None };
            let on_path = (0..gold.hops.len())
                .any(|i| gold.hop_relation(i, r) && norm_name(gold.head(i)) == norm_name(h) && gold.arrives(i, t));
            on_path.then(|| n.to_string())
        })
        .collect();
    format!("keep:{{{}}}", keep.join(", "))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn gold() -> GoldPath {
        GoldPath {
            topic: "sylvia brett".into(),
            hops: vec![("spouse".into(), "charles vyner brooke".into()), ("parents".into(), "charles brooke".into())],
            answers: vec!["charles brooke".into(), "margaret brooke".into()],
        }
    }

    #[test]
    fn reads_the_question_after_the_exemplars() {
        assert_eq!(question("Q: exemplar?\nA: x\n\nQ: real one ?\nTopic Entity: y"), "real one ?");
        assert_eq!(question("Question: exemplar?\nQ: no\nQuestion: the one\nIndicator: z"), "the one");
        assert_eq!(question("nothing here"), "");
    }

    #[test]
    fn tells_prompts_apart_by_their_text() {
        let render = |t: Template| t.default_text().replace("{{", "").replace("}}", "");
        let templates = Registry::builtin().templates();
        for &template in &templates {
            match kind_of(template) {
                Some(want) => assert_eq!(kind(&render(template)), Some(want), "{template}"),
                None => assert!(["system", "extract"].contains(&template.name()), "{template} has no kind"),
            }
        }
        for (name, _) in KINDS {
            assert!(templates.iter().any(|t| t.name() == *name), "{name} is no built-in template");
        }
        assert_eq!(kind("Tell me a joke."), None);
    }

    #[test]
    fn sufficient_only_when_the_shown_triples_chain_the_topic_to_an_answer() {
        let g = gold();
        // The answer's triple alone does not chain from the topic.
        let alone = "Q: q\nKnowledge Triplets: charles vyner brooke, parents, margaret brooke\nA: ";
        assert!(chained(&triple_lines(alone, &g), &g).is_empty());
        let chain = "Q: q\nKnowledge Triplets: sylvia brett, spouse, charles vyner brooke\ncharles vyner brooke, parents, margaret brooke\nA: ";
        assert_eq!(chained(&triple_lines(chain, &g), &g), vec!["margaret brooke"]);
        // Case tells entities apart: `Margaret Brooke` is not `margaret brooke`.
        let other = "Q: q\nKnowledge Triplets: sylvia brett, spouse, charles vyner brooke\ncharles vyner brooke, parents, Margaret Brooke\nA: ";
        assert!(chained(&triple_lines(other, &g), &g).is_empty());
        // Backwards (the answer's parent, not its child) is not the gold relation's direction.
        let reversed = "Q: q\nKnowledge Triplets: sylvia brett, spouse, charles vyner brooke\nmargaret brooke, parents, charles vyner brooke\nA: ";
        assert!(chained(&triple_lines(reversed, &g), &g).is_empty());
    }

    #[test]
    fn pog_paths_are_read_together() {
        let g = gold();
        let one = "{sylvia brett} - {-> spouse ->} - {charles vyner brooke}";
        let two = "{charles vyner brooke} - {<- children <- | -> parents ->} - {margaret brooke}";
        // Neither path alone chains the topic to an answer; the two together do.
        assert!(chained(&pog_triples(&format!("Path 1: {one}"), "Path "), &g).is_empty());
        let both = format!("Question: q\nPath 1: {one}\nPath 2: {two}\nSummary: s");
        assert_eq!(chained(&pog_triples(&both, "Path "), &g), vec!["margaret brooke"]);
        let prompt = format!(
            "Select the 3 candidate paths\nCandidate Edge 1: {{sylvia brett}} - {{-> religion ->}} - {{x}}\nCandidate Edge 2: {one}"
        );
        assert_eq!(
            pog_select(&prompt, &g, width(&prompt).unwrap_or(3)),
            "top_list:{Candidate Edge 2, Candidate Edge 1}"
        );
        assert_eq!(pog_select(&prompt, &g, 1), "top_list:{Candidate Edge 2}");
        // An incoming edge is not the gold relation walked forward.
        let mut t = Vec::new();
        pog_path_triples("{sylvia brett} - {<- spouse <-} - {charles vyner brooke}", &mut t);
        assert_eq!(progress(&t, &g), 0);
    }

    #[test]
    fn gog_searches_what_it_was_shown_and_never_generates() {
        let g = gold();
        let start = "Question: q\nTopic Entity: [sylvia brett]\n";
        assert!(gog_step(start, &g).ends_with("Action 1: Search[sylvia brett]"));
        let one = format!(
            "{start}Thought 1: t\nAction 1: Search[sylvia brett]\nObservation 1: sylvia brett, spouse, charles vyner brooke\n"
        );
        assert!(gog_step(&one, &g).ends_with("Search[charles vyner brooke]"));
        let missing = format!(
            "{one}Thought 2: t\nAction 2: Search[charles vyner brooke]\nObservation 2: charles vyner brooke, religion, x\n"
        );
        // The graph lacks the hop: it does not write it, it gives up on the graph.
        assert!(gog_step(&missing, &g).ends_with("Finish[unknown]"));
        assert_eq!(gog_generate_reply(), "");
        let done = format!(
            "{missing}Thought 3: t\nAction 3: Search[x]\nObservation 3: charles vyner brooke, parents, margaret brooke\n"
        );
        assert!(gog_step(&done, &g).ends_with("Finish[margaret brooke]"));
        assert_eq!(gog_verify("1. charles vyner brooke, parents, margaret brooke\n2. a, b, c", &g), "keep:{1}");
        assert_eq!(
            gog_relations("Question: q\nEntity: sylvia brett\nRelation: [religion, spouse (incoming), spouse]", &g),
            "[spouse]"
        );
    }

    fn gog_generate_reply() -> String {
        let model = GoldPathModel::new([("q".to_string(), gold())]);
        let prompt = Registry::builtin()
            .template("gog_generate")
            .unwrap()
            .default_text()
            .replace("{{question}}", "q")
            .replace("{{thought}}", "charles vyner brooke parents")
            .replace("{{triples}}", "");
        let request = ChatRequest {
            step: String::new(),
            system: String::new(),
            prompt,
            temperature: 0.0,
            max_tokens: 256,
            sample: 0,
            schema: None,
            extract: None,
        };
        model.reply(&request).unwrap_or_else(|e| e.to_string())
    }
}
