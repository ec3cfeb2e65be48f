//! Scoring a prediction against gold answers, two ways, reported apart:
//! - **strict**: a predicted answer, normalised (case, punctuation, articles, whitespace), equal
//!   to a gold answer or one of its aliases; Hits@1 on the first predicted answer, and F1 over
//!   the answer sets;
//! - **lenient** (the ToG papers' match, for comparison with published numbers): some predicted
//!   answer contains a gold name or is contained in one.
//!
//! An empty prediction, or "unknown", is never correct, under either.

use crate::dataset::GoldAnswer;
use std::collections::HashSet;

/// How one prediction scores.
#[derive(Clone, Copy, Debug, Default, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct Score {
    /// The first predicted answer is a gold answer or alias (normalised equality).
    pub hit: bool,
    /// F1 of the predicted set against the gold set (normalised equality).
    pub f1: f64,
    /// Some predicted answer contains a gold name or is contained in one (ToG's match).
    pub lenient: bool,
}

const ARTICLES: [&str; 3] = ["a", "an", "the"];

/// Lower case, punctuation and underscores to spaces, articles dropped, whitespace collapsed.
pub fn normalise(text: &str) -> String {
    let spaced: String = text
        .chars()
        .map(|c| if c.is_alphanumeric() { c.to_lowercase().collect::<String>() } else { " ".into() })
        .collect();
    spaced.split_whitespace().filter(|w| !ARTICLES.contains(w)).collect::<Vec<_>>().join(" ")
}

/// Whether a predicted answer says nothing: empty once normalised, or "unknown".
pub fn is_non_answer(text: &str) -> bool {
    let n = normalise(text);
    n.is_empty() || n == "unknown"
}

pub fn score(predicted: &[String], gold: &[GoldAnswer]) -> Score {
    let predicted: Vec<String> = predicted.iter().filter(|p| !is_non_answer(p)).map(|p| normalise(p)).collect();
    let gold: Vec<Vec<String>> =
        gold.iter().map(|g| g.names().map(normalise).filter(|n| !n.is_empty()).collect()).collect();
    if predicted.is_empty() || gold.iter().all(Vec::is_empty) {
        return Score::default();
    }
    let matches = |p: &str, g: &[String]| g.iter().any(|n| n == p);
    let hit = gold.iter().any(|g| matches(&predicted[0], g));
    let distinct: HashSet<&String> = predicted.iter().collect();
    let right = distinct.iter().filter(|p| gold.iter().any(|g| matches(p, g))).count();
    let found = gold.iter().filter(|g| predicted.iter().any(|p| matches(p, g))).count();
    let (precision, recall) = (right as f64 / distinct.len() as f64, found as f64 / gold.len() as f64);
    let f1 = if right == 0 { 0.0 } else { 2.0 * precision * recall / (precision + recall) };
    let lenient =
        predicted.iter().any(|p| gold.iter().flatten().any(|n| p.contains(n.as_str()) || n.contains(p.as_str())));
    Score { hit, f1, lenient }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn gold(names: &[&str]) -> Vec<GoldAnswer> {
        names.iter().map(|n| GoldAnswer::new(*n)).collect()
    }

    fn p(names: &[&str]) -> Vec<String> {
        names.iter().map(|n| n.to_string()).collect()
    }

    #[test]
    fn normalisation() {
        assert_eq!(normalise("  The United_Kingdom! "), "united kingdom");
        assert_eq!(normalise("Burnham-on-Sea"), "burnham on sea");
        assert_eq!(normalise("A Tale of Two Cities"), "tale of two cities");
        assert_eq!(normalise("São Paulo"), "são paulo");
    }

    #[test]
    fn empty_and_unknown_are_never_correct() {
        for nothing in [p(&[]), p(&[""]), p(&["unknown"]), p(&["Unknown."]), p(&["  "])] {
            assert_eq!(score(&nothing, &gold(&["Paris"])), Score::default(), "{nothing:?}");
        }
        // Even against a gold answer that normalises to nothing.
        assert_eq!(score(&p(&["x"]), &gold(&["the"])), Score::default());
    }

    #[test]
    fn an_alias_is_a_strict_hit() {
        let g = vec![GoldAnswer { name: "United Kingdom".into(), aliases: vec!["UK".into(), "Britain".into()] }];
        let s = score(&p(&["britain"]), &g);
        assert!(s.hit && s.lenient);
        assert_eq!(s.f1, 1.0);
    }

    #[test]
    fn a_substring_only_match_is_lenient_not_strict() {
        let s = score(&p(&["Australian Labor Party"]), &gold(&["Labor Party"]));
        assert!(!s.hit && s.lenient);
        assert_eq!(s.f1, 0.0);
        let s = score(&p(&["Labor"]), &gold(&["Australian Labor Party"]));
        assert!(!s.hit && s.lenient, "two-way");
    }

    #[test]
    fn several_gold_answers_give_f1_and_hits_at_1_reads_the_first() {
        let g = gold(&["2010", "2012", "2014"]);
        let s = score(&p(&["2010", "2012"]), &g);
        assert!(s.hit);
        assert!((s.f1 - 0.8).abs() < 1e-9, "{}", s.f1);
        let s = score(&p(&["1999", "2014"]), &g);
        assert!(!s.hit, "the first predicted answer is wrong");
        assert!((s.f1 - 0.4).abs() < 1e-9, "p = 1/2, r = 1/3: {}", s.f1);
        // A repeated prediction counts once.
        assert_eq!(score(&p(&["2010", "2010", "2012", "2014"]), &g).f1, 1.0);
        // Unknown among real answers is dropped, not counted wrong.
        assert!(score(&p(&["unknown", "2010"]), &g).hit);
    }
}
