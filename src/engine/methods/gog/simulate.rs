//! GoG's prompts as the gold-path simulation replies to them (see [`crate::engine::simulate`]):
//! it searches entities it was shown, keeps shown triples along the gold path, finishes only
//! when the observations chain the topic to a gold answer, and never writes a triple.

use crate::engine::simulate::{GoldPath, Shown, Simulation, after_last, answer_from_triples, norm_name, own_knowledge};

pub(crate) const SIMULATIONS: &[Simulation] = &[
    Simulation { template: "gog_step", reply: step },
    Simulation { template: "gog_relations", reply: relations },
    Simulation { template: "gog_generate", reply: generate },
    Simulation { template: "gog_verify", reply: verify },
    Simulation { template: "answer", reply: answer_from_triples },
    Simulation { template: "answer_own_knowledge", reply: own_knowledge },
];

/// The entities named in the transcript's `Search[…]` actions.
fn searched(transcript: &str) -> Vec<String> {
    transcript
        .lines()
        .filter_map(|l| l.split_once("Search[").and_then(|(label, rest)| label.starts_with("Action").then_some(rest)))
        .flat_map(|rest| rest.trim_end().trim_end_matches(']').split(" | ").map(norm_name).collect::<Vec<_>>())
        .collect()
}

fn step(shown: &Shown<'_>, gold: &GoldPath) -> String {
    let block = shown.block;
    // The transcript ends with the `Thought n:` to write.
    let steps = block.matches("\nAction ").count() + 1;
    let triples = gold.triple_lines(block);
    let found = gold.chained(&triples);
    if !found.is_empty() {
        return format!(
            "Thought {steps}: The observations link the topic entity to the answer.\nAction {steps}: Finish[{}]",
            found.join(" | ")
        );
    }
    let done = searched(block);
    let reached = gold.frontiers(&triples, false);
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

fn relations(shown: &Shown<'_>, gold: &GoldPath) -> String {
    let block = shown.block;
    let entity = after_last(block, "\nEntity: ").map(|(_, l)| l.trim()).unwrap_or_default();
    let offered: Vec<&str> = after_last(block, "\nRelation: ")
        .map(|(_, l)| l.trim().trim_start_matches('[').trim_end_matches(']').split(", ").collect())
        .unwrap_or_default();
    let (mut wanted, _) = gold.relations_from(&offered, entity);
    wanted.truncate(3);
    format!("[{}]", wanted.join(", "))
}

/// It writes no triple it was not shown.
fn generate(_: &Shown<'_>, _: &GoldPath) -> String {
    String::new()
}

fn verify(shown: &Shown<'_>, gold: &GoldPath) -> String {
    let keep: Vec<String> = shown
        .block
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
    use crate::engine::simulate::tests::gold;

    #[test]
    fn gog_searches_what_it_was_shown_and_never_generates() {
        let g = gold();
        let at = |text: &str| step(&Shown::new(text, ""), &g);
        let start = "Question: q\nTopic Entity: [sylvia brett]\n";
        assert!(at(start).ends_with("Action 1: Search[sylvia brett]"));
        let one = format!(
            "{start}Thought 1: t\nAction 1: Search[sylvia brett]\nObservation 1: sylvia brett, spouse, charles vyner brooke\n"
        );
        assert!(at(&one).ends_with("Search[charles vyner brooke]"));
        let missing = format!(
            "{one}Thought 2: t\nAction 2: Search[charles vyner brooke]\nObservation 2: charles vyner brooke, religion, x\n"
        );
        // The graph lacks the hop: it does not write it, it gives up on the graph.
        assert!(at(&missing).ends_with("Finish[unknown]"));
        let done = format!(
            "{missing}Thought 3: t\nAction 3: Search[x]\nObservation 3: charles vyner brooke, parents, margaret brooke\n"
        );
        assert!(at(&done).ends_with("Finish[margaret brooke]"));
        let shown = |text: &'static str| Shown::new(text, "");
        assert_eq!(verify(&shown("1. charles vyner brooke, parents, margaret brooke\n2. a, b, c"), &g), "keep:{1}");
        assert_eq!(
            relations(&shown("Question: q\nEntity: sylvia brett\nRelation: [religion, spouse (incoming), spouse]"), &g),
            "[spouse]"
        );
    }
}
