//! PoG's prompts as the gold-path simulation replies to them (see [`crate::engine::simulate`]):
//! an analysis made of the gold relation names, candidates picked along the gold path, and
//! "sufficient" only when the shown paths together chain the topic to a gold answer.

use crate::engine::simulate::{
    GoldPath, Shown, Simulation, Triple, braced_or_unknown, norm_name, norm_rel, own_knowledge,
};

pub(crate) const SIMULATIONS: &[Simulation] = &[
    Simulation { template: "pog_analysis", reply: analysis },
    Simulation { template: "pog_precise", reply: select },
    Simulation { template: "pog_branch", reply: select },
    Simulation { template: "pog_summary", reply: summary },
    Simulation { template: "pog_sufficiency", reply: sufficiency },
    Simulation { template: "pog_supplement", reply: supplement },
    Simulation { template: "pog_answer", reply: answer },
    Simulation { template: "pog_answer_own", reply: own_knowledge },
];

fn analysis(_: &Shown<'_>, gold: &GoldPath) -> String {
    let mut chain = vec![format!("\"{}\"", gold.topic)];
    for (i, (rel, _)) in gold.hops.iter().enumerate() {
        chain.push(rel.clone());
        chain.push(if i + 1 == gold.hops.len() { "answer(entity)".into() } else { format!("entity{}", i + 1) });
    }
    format!("Thinking CoT: {}\nSplit questions:\n1. Where does the path from {} lead?", chain.join(" - "), gold.topic)
}

fn summary(_: &Shown<'_>, _: &GoldPath) -> String {
    "CoT1: the paths above are what the graph shows so far.".into()
}

fn sufficiency(shown: &Shown<'_>, gold: &GoldPath) -> String {
    match gold.chained(&path_triples(shown.block, "Path ")).as_slice() {
        [] => "{No}".into(),
        found => {
            format!(
                "{{Yes}}\nanswer: {{{}}}\nreason: the paths together link the topic entity to it.",
                found.join(" | ")
            )
        }
    }
}

fn answer(shown: &Shown<'_>, gold: &GoldPath) -> String {
    braced_or_unknown(&gold.chained(&path_triples(shown.block, "Path ")))
}

/// The width a selection prompt asks for (`Select the 3 …`). Under the shared-prefix layout the
/// instructions, and the width, are in the system message: part of what the model is shown.
fn width(text: &str) -> Option<usize> {
    text.split_once("Select the ").and_then(|(_, rest)| rest.split_whitespace().next()).and_then(|n| n.parse().ok())
}

fn select(shown: &Shown<'_>, gold: &GoldPath) -> String {
    pick(shown.block, gold, width(shown.prompt).or_else(|| width(shown.system)).unwrap_or(3))
}

/// The triples of one PoG path text, `{A} - {-> r -> | <- q <-} - {B} …`, several segments
/// joined by ` ; ` (a path and its expansion).
fn one_path_triples(text: &str, out: &mut Vec<Triple>) {
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
fn path_triples(block: &str, label: &str) -> Vec<Triple> {
    let mut out = Vec::new();
    for line in block.lines() {
        if let Some((_, text)) = line.strip_prefix(label).and_then(|r| r.split_once(": ")) {
            one_path_triples(text, &mut out);
        }
    }
    out
}

/// Numbered candidates (`Candidate Edge i: text`): picked one at a time, each the one that
/// takes the picks together furthest along the gold path (paths are read together later), ties
/// to the one going furthest alone, then to the first listed.
fn pick(block: &str, gold: &GoldPath, width: usize) -> String {
    let cands: Vec<(usize, Vec<Triple>)> = block
        .lines()
        .filter_map(|l| {
            let (n, text) = l.strip_prefix("Candidate Edge ")?.split_once(": ")?;
            let mut triples = Vec::new();
            one_path_triples(text, &mut triples);
            Some((n.trim().parse().ok()?, triples))
        })
        .collect();
    let alone: Vec<usize> = cands.iter().map(|(_, t)| gold.progress(t)).collect();
    let (mut picked, mut union): (Vec<usize>, Vec<Triple>) = (Vec::new(), Vec::new());
    while picked.len() < width.max(1) {
        let best = (0..cands.len()).filter(|k| !picked.contains(k)).max_by_key(|&k| {
            let together: Vec<Triple> = union.iter().chain(&cands[k].1).cloned().collect();
            (gold.progress(&together), alone[k], std::cmp::Reverse(k))
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
fn supplement(shown: &Shown<'_>, gold: &GoldPath) -> String {
    let mut found: Vec<String> = Vec::new();
    for (h, _, t) in path_triples(shown.block, "Path ") {
        for name in [h, t] {
            let on_path = gold.on_path(&name) && !gold.is_answer(&name);
            if on_path && norm_name(&name) != norm_name(&gold.topic) && !found.contains(&name) {
                found.push(name);
            }
        }
    }
    format!("Candidate answers: {{{}}}", found.join("}, {"))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::engine::simulate::tests::gold;

    #[test]
    fn pog_paths_are_read_together() {
        let g = gold();
        let one = "{sylvia brett} - {-> spouse ->} - {charles vyner brooke}";
        let two = "{charles vyner brooke} - {<- children <- | -> parents ->} - {margaret brooke}";
        // Neither path alone chains the topic to an answer; the two together do.
        assert!(g.chained(&path_triples(&format!("Path 1: {one}"), "Path ")).is_empty());
        let both = format!("Question: q\nPath 1: {one}\nPath 2: {two}\nSummary: s");
        assert_eq!(g.chained(&path_triples(&both, "Path ")), vec!["margaret brooke"]);
        let prompt = format!(
            "Select the 3 candidate paths\nCandidate Edge 1: {{sylvia brett}} - {{-> religion ->}} - {{x}}\nCandidate Edge 2: {one}"
        );
        assert_eq!(select(&Shown::new(&prompt, ""), &g), "top_list:{Candidate Edge 2, Candidate Edge 1}");
        assert_eq!(pick(&prompt, &g, 1), "top_list:{Candidate Edge 2}");
        // The width may stand in the system message (the shared-prefix layout).
        assert_eq!(
            select(&Shown::new(&prompt.replace("Select the 3", "Choose"), "Select the 1 best"), &g),
            "top_list:{Candidate Edge 2}"
        );
        // An incoming edge is not the gold relation walked forward.
        let mut t = Vec::new();
        one_path_triples("{sylvia brett} - {<- spouse <-} - {charles vyner brooke}", &mut t);
        assert_eq!(g.progress(&t), 0);
    }
}
