//! A simulation model that follows each question's gold path (datasets such as PathQuestion give
//! one): offered relations, entities or paths, it picks those on the gold path; asked whether the
//! paths suffice, it says Yes once a path reaches a gold answer through every gold hop. It knows
//! nothing else: asked to answer from its own knowledge it says `{unknown}`.
//!
//! It measures the engine (its ceiling when every choice is right, and what that costs in calls),
//! never an LLM's accuracy. It answers every method's prompts: ToG/ToG-R, PoG/PoG-E and GoG.

use super::{ChatRequest, Completion, LanguageModel, LlmError, Usage};
use async_trait::async_trait;
use std::collections::HashMap;

/// One question's gold path, by label: the topic entity, then (relation id, entity) per hop.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct GoldPath {
    pub topic: String,
    pub hops: Vec<(String, String)>,
    /// Every accepted answer (the last hop may reach any of them).
    pub answers: Vec<String>,
}

impl GoldPath {
    /// The entity hop `i` starts from.
    fn head(&self, i: usize) -> &str {
        if i == 0 { &self.topic } else { &self.hops[i - 1].1 }
    }

    /// Whether `name` is where hop `i` arrives (any answer, on the last hop).
    fn arrives(&self, i: usize, name: &str) -> bool {
        let name = name.trim();
        if i + 1 == self.hops.len() {
            self.answers.iter().any(|a| a.eq_ignore_ascii_case(name))
        } else {
            self.hops.get(i).is_some_and(|(_, e)| e.eq_ignore_ascii_case(name))
        }
    }
}

/// Follows the gold paths of a set of questions (keyed by the question as asked, trimmed).
pub struct GoldPathModel {
    gold: HashMap<String, GoldPath>,
}

impl GoldPathModel {
    pub fn new(gold: impl IntoIterator<Item = (String, GoldPath)>) -> Self {
        Self { gold: gold.into_iter().map(|(q, g)| (q.trim().to_string(), g)).collect() }
    }

    fn reply(&self, r: &ChatRequest) -> Result<String, LlmError> {
        let q = question(&r.prompt);
        let gold =
            self.gold.get(q).ok_or_else(|| LlmError::Config(format!("the gold-path model has no path for {q:?}")))?;
        let p = r.prompt.as_str();
        Ok(match r.step.as_str() {
            "topic_entities" => format!("{{{}}}", gold.topic),
            "relation_prune" | "relation_prune_unified" => tog_relations(p, gold),
            "entity_prune" | "entity_prune_unified" => tog_entities(p, gold),
            "reasoning" | "reasoning_tog_r" => tog_reasoning(p, gold),
            "answer" => match reached(p, gold).first() {
                Some(a) => format!("{{{a}}}"),
                None => "{unknown}".into(),
            },
            "pog_analysis" => pog_analysis(gold),
            "pog_precise" | "pog_branch" => pog_select(p, gold, width(p)),
            "pog_summary" => "CoT1: following the gold path.".into(),
            "pog_sufficiency" => match full_paths(p, gold).as_slice() {
                [] => "{No}".into(),
                found => format!("{{Yes}}\nanswer: {{{}}}\nreason: a path follows every gold hop.", found.join(" | ")),
            },
            "pog_supplement" => format!("Candidate answers: {{{}}}", gold.answers.join("}, {")),
            "pog_answer" => match full_paths(p, gold).as_slice() {
                [] => "{unknown}".into(),
                found => format!("{{{}}}", found.join(" | ")),
            },
            "gog_step" => gog_step(p, gold),
            "gog_relations" => gog_relations(p, gold),
            "gog_generate" => gog_generate(p, gold),
            "gog_verify" => gog_verify(p, gold),
            // Own knowledge, IO, CoT, self-consistency: the model knows only the path.
            _ => "{unknown}".into(),
        })
    }
}

#[async_trait]
impl LanguageModel for GoldPathModel {
    fn describe(&self) -> String {
        "gold-path simulation (follows each question's gold path; not an LLM)".into()
    }

    async fn complete(&self, request: &ChatRequest) -> Result<Completion, LlmError> {
        let text = self.reply(request)?;
        // Tokens as the scripted model estimates them: words, for cost shapes only.
        let usage = Usage {
            prompt_tokens: request.prompt.split_whitespace().count() as u64,
            completion_tokens: text.split_whitespace().count() as u64,
        };
        Ok(Completion { text, usage, latency_ms: 0, cached: false })
    }
}

/// Whether two relation names are the same relation: PathQuestion-L writes Freebase ids with
/// `__` for `.` (`__people__person__gender`), and prompts may show either form.
fn same_relation(a: &str, b: &str) -> bool {
    let norm = |r: &str| r.trim().trim_start_matches("__").replace("__", ".");
    norm(a) == norm(b)
}

/// The text after the last `marker`, up to the end of its line.
fn after_last<'a>(text: &'a str, marker: &str) -> Option<(usize, &'a str)> {
    let at = text.rfind(marker)? + marker.len();
    let rest = &text[at..];
    Some((at, &rest[..rest.find('\n').unwrap_or(rest.len())]))
}

/// The question a prompt asks: the last `Question:` or `Q:` line (exemplars come before it).
fn question(prompt: &str) -> &str {
    let a = after_last(prompt, "Question: ");
    let b = after_last(prompt, "Q: ");
    match (a, b) {
        (Some(a), Some(b)) => {
            if a.0 > b.0 {
                a.1
            } else {
                b.1
            }
        }
        (Some(x), None) | (None, Some(x)) => x.1,
        (None, None) => "",
    }
    .trim()
}

fn width(prompt: &str) -> usize {
    prompt
        .split_once("Select the ")
        .and_then(|(_, rest)| rest.split_whitespace().next())
        .and_then(|n| n.parse().ok())
        .unwrap_or(3)
}

fn tog_relations(p: &str, gold: &GoldPath) -> String {
    let relations: Vec<&str> = after_last(p, "\nRelations: ").map(|(_, l)| l.split("; ").collect()).unwrap_or_default();
    let entity = after_last(p, "\nTopic Entity: ").map(|(_, l)| l.trim()).unwrap_or_default();
    // Every gold hop that starts at this entity (a path may pass an entity twice).
    let wanted: Vec<&str> = relations
        .iter()
        .copied()
        .filter(|r| {
            (0..gold.hops.len()).any(|i| gold.head(i).eq_ignore_ascii_case(entity) && same_relation(r, &gold.hops[i].0))
        })
        .collect();
    match (wanted.is_empty(), relations.first()) {
        (false, _) => wanted.iter().map(|rel| format!("{{{rel} (Score: 1.0)}}")).collect::<Vec<_>>().join(" "),
        (true, Some(first)) => format!("{{{first} (Score: 1.0)}}"),
        (true, None) => "{}".into(),
    }
}

fn tog_entities(p: &str, gold: &GoldPath) -> String {
    let entities: Vec<&str> = after_last(p, "\nEntities: ").map(|(_, l)| l.split("; ").collect()).unwrap_or_default();
    let on_path = |e: &str| (0..gold.hops.len()).any(|i| gold.arrives(i, e));
    let scores: Vec<&str> = entities.iter().map(|e| if on_path(e) { "1.0" } else { "0.0" }).collect();
    format!("Score: {}", scores.join(", "))
}

/// Gold answers that some `…, last relation, answer` triple in the prompt reaches.
fn reached(p: &str, gold: &GoldPath) -> Vec<String> {
    let Some((last_rel, _)) = gold.hops.last() else { return Vec::new() };
    let dotted = last_rel.trim_start_matches("__").replace("__", ".");
    gold.answers
        .iter()
        .filter(|a| {
            [last_rel.as_str(), dotted.as_str()]
                .iter()
                .any(|r| p.contains(&format!("{r}, {a}")) || p.contains(&format!("{r}: {a}")))
        })
        .cloned()
        .collect()
}

fn tog_reasoning(p: &str, gold: &GoldPath) -> String {
    match reached(p, gold).as_slice() {
        [] => "{No}.".into(),
        found => format!("{{Yes}}. The answer is {{{}}}.", found.join(" | ")),
    }
}

fn pog_analysis(gold: &GoldPath) -> String {
    let mut chain = vec![format!("\"{}\"", gold.topic)];
    for (i, (rel, _)) in gold.hops.iter().enumerate() {
        chain.push(rel.clone());
        chain.push(if i + 1 == gold.hops.len() { "answer(entity)".into() } else { format!("entity{}", i + 1) });
    }
    format!("Thinking CoT: {}\nSplit questions:\n1. Where does the path from {} lead?", chain.join(" - "), gold.topic)
}

/// How many gold hops a PoG path text (`{A} - {-> r ->} - {B} …`) follows from its start.
fn hops_followed(text: &str, gold: &GoldPath) -> usize {
    let first = text.split(" ; ").next().unwrap_or_default();
    let parts: Vec<&str> = first.split(" - ").map(|s| s.trim().trim_start_matches('{').trim_end_matches('}')).collect();
    if !parts.first().is_some_and(|t| t.eq_ignore_ascii_case(&gold.topic)) {
        return 0;
    }
    let mut n = 0;
    for (i, pair) in parts[1..].chunks(2).enumerate() {
        let [rel, entity] = pair else { break };
        let gold_rel = gold.hops.get(i).map_or("", |h| h.0.as_str());
        // `-> r ->` or `<- r <-`, several clustered ones joined by ` | `.
        let rel_ok =
            rel.split(" | ").any(|r| same_relation(r.trim_matches(|c| matches!(c, '-' | '<' | '>' | ' ')), gold_rel));
        if !rel_ok || !gold.arrives(i, entity) {
            break;
        }
        n += 1;
    }
    n
}

/// Numbered candidates (`Candidate Edge i: text`): the ones following the most gold hops.
fn pog_select(p: &str, gold: &GoldPath, width: usize) -> String {
    let cands: Vec<(usize, usize)> = p
        .lines()
        .filter_map(|l| {
            let rest = l.strip_prefix("Candidate Edge ")?;
            let (n, text) = rest.split_once(": ")?;
            Some((n.trim().parse().ok()?, hops_followed(text, gold)))
        })
        .collect();
    let best = cands.iter().map(|c| c.1).max().unwrap_or(0);
    let picks: Vec<String> =
        cands.iter().filter(|c| c.1 == best).take(width.max(1)).map(|(n, _)| format!("Candidate Edge {n}")).collect();
    format!("top_list:{{{}}}", picks.join(", "))
}

/// The gold answers some `Path i:` line of the prompt reaches through every gold hop.
fn full_paths(p: &str, gold: &GoldPath) -> Vec<String> {
    let mut found: Vec<String> = Vec::new();
    for l in p.lines() {
        let Some(text) = l.strip_prefix("Path ").and_then(|r| r.split_once(": ")).map(|(_, t)| t) else { continue };
        if hops_followed(text, gold) == gold.hops.len() {
            let end = text.split(" ; ").next().unwrap_or_default().rsplit(" - ").next().unwrap_or_default();
            let end = end.trim().trim_start_matches('{').trim_end_matches('}').to_string();
            if !found.contains(&end) {
                found.push(end);
            }
        }
    }
    found
}

/// Whether a GoG transcript shows hop `i`'s triple (either way round), with `to` at its end.
fn observed(transcript: &str, gold: &GoldPath, i: usize, to: &str) -> bool {
    let head = gold.head(i);
    let rel = &gold.hops[i].0;
    let seps = [format!(", {rel}, "), format!(", {}, ", rel.trim_start_matches("__").replace("__", "."))];
    transcript.lines().any(|l| {
        // `Observation 3: a, r, b` or a further line of the observation, `a, r, b`.
        let l = match l.split_once(": ") {
            Some((label, rest)) if label.starts_with("Observation ") => rest,
            _ => l,
        };
        let Some((h, t)) = seps.iter().find_map(|sep| l.split_once(sep.as_str())) else { return false };
        let (h, t) = (h.trim(), t.trim());
        (h.eq_ignore_ascii_case(head) && t.eq_ignore_ascii_case(to))
            || (h.eq_ignore_ascii_case(to) && t.eq_ignore_ascii_case(head))
    })
}

fn gog_step(p: &str, gold: &GoldPath) -> String {
    // The transcript of this question (after its `Topic Entity:` line).
    let transcript = p.rfind("\nTopic Entity: ").map_or("", |at| &p[at..]);
    let steps = transcript.matches("\nThought ").count() + 1;
    let mut hop = 0;
    while hop < gold.hops.len() {
        let last = hop + 1 == gold.hops.len();
        let seen = if last {
            gold.answers.iter().any(|a| observed(transcript, gold, hop, a))
        } else {
            observed(transcript, gold, hop, &gold.hops[hop].1)
        };
        if !seen {
            break;
        }
        hop += 1;
    }
    if hop == gold.hops.len() {
        let found: Vec<&str> =
            gold.answers.iter().filter(|a| observed(transcript, gold, hop - 1, a)).map(String::as_str).collect();
        return format!("Thought {steps}: The gold path is complete.\nAction {steps}: Finish[{}]", found.join(" | "));
    }
    let (head, rel) = (gold.head(hop), &gold.hops[hop].0);
    if transcript.contains(&format!("Search[{head}]")) {
        format!("Thought {steps}: The graph lacks {head}'s {rel}.\nAction {steps}: Generate[{head} {rel}]")
    } else {
        format!("Thought {steps}: I need {head}'s {rel}.\nAction {steps}: Search[{head}]")
    }
}

fn gog_relations(p: &str, gold: &GoldPath) -> String {
    let entity = after_last(p, "\nEntity: ").map(|(_, l)| l.trim()).unwrap_or_default();
    let offered: Vec<&str> = after_last(p, "\nRelation: ")
        .map(|(_, l)| l.trim().trim_start_matches('[').trim_end_matches(']').split(", ").collect())
        .unwrap_or_default();
    let wanted: Vec<&str> = offered
        .iter()
        .copied()
        .filter(|o| {
            let rel = o.trim_end_matches(" (incoming)");
            (0..gold.hops.len()).any(|i| {
                same_relation(&gold.hops[i].0, rel)
                    && (gold.head(i).eq_ignore_ascii_case(entity) || gold.arrives(i, entity))
            })
        })
        .collect();
    format!("[{}]", wanted.join(", "))
}

/// The first gold hop whose head a `Generate` thought names: its triple, to every answer.
fn gog_generate(p: &str, gold: &GoldPath) -> String {
    let thought = after_last(p, "\nThought: ").map(|(_, l)| l).unwrap_or_default();
    let Some(i) = (0..gold.hops.len()).find(|&i| thought.starts_with(gold.head(i))) else { return String::new() };
    let rel = &gold.hops[i].0;
    let tails: Vec<&str> = if i + 1 == gold.hops.len() {
        gold.answers.iter().map(String::as_str).collect()
    } else {
        vec![&gold.hops[i].1]
    };
    tails.iter().map(|t| format!("{}\t{rel}\t{t}", gold.head(i))).collect::<Vec<_>>().join("\n")
}

fn gog_verify(p: &str, gold: &GoldPath) -> String {
    let keep: Vec<String> = p
        .lines()
        .filter_map(|l| {
            let (n, triple) = l.split_once(". ")?;
            let n: usize = n.trim().parse().ok()?;
            let parts: Vec<&str> = triple.split(", ").collect();
            let [h, r, t] = parts.as_slice() else { return None };
            let on_path = (0..gold.hops.len()).any(|i| {
                same_relation(&gold.hops[i].0, r) && gold.head(i).eq_ignore_ascii_case(h) && gold.arrives(i, t)
            });
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
    fn pog_paths_are_judged_by_the_gold_hops_they_follow() {
        let g = gold();
        let full = "{sylvia brett} - {-> spouse ->} - {charles vyner brooke} - {<- parents <-} - {margaret brooke}";
        assert_eq!(hops_followed(full, &g), 2);
        assert_eq!(hops_followed("{sylvia brett} - {-> spouse ->} - {someone}", &g), 0);
        assert_eq!(hops_followed("{other} - {-> spouse ->} - {charles vyner brooke}", &g), 0);
        let prompt = format!(
            "Select the 3 candidate paths\nCandidate Edge 1: {{sylvia brett}} - {{-> religion ->}} - {{x}}\nCandidate Edge 2: {full}"
        );
        assert_eq!(pog_select(&prompt, &g, width(&prompt)), "top_list:{Candidate Edge 2}");
        assert_eq!(full_paths(&format!("Path 1: {full}"), &g), vec!["margaret brooke"]);
    }

    #[test]
    fn gog_searches_along_the_gold_path_then_generates_then_finishes() {
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
        assert!(gog_step(&missing, &g).ends_with("Generate[charles vyner brooke parents]"));
        assert_eq!(
            gog_generate("Question: q\nThought: charles vyner brooke parents\n", &g),
            "charles vyner brooke\tparents\tcharles brooke\ncharles vyner brooke\tparents\tmargaret brooke"
        );
        let done = format!(
            "{missing}Thought 3: t\nAction 3: Generate[x]\nObservation 3: charles vyner brooke, parents, margaret brooke\n"
        );
        assert!(gog_step(&done, &g).ends_with("Finish[margaret brooke]"));
        assert_eq!(gog_verify("1. charles vyner brooke, parents, margaret brooke\n2. a, b, c", &g), "keep:{1}");
        assert_eq!(
            gog_relations("Question: q\nEntity: sylvia brett\nRelation: [religion, spouse (incoming)]", &g),
            "[spouse (incoming)]"
        );
    }
}
