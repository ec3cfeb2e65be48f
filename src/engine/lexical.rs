//! Similarity without an LLM: BM25 between the question and candidate labels (ToG's `bm25`
//! pruning tool) and cosine similarity of embeddings (its SentenceBERT tool).

use rust_stemmers::{Algorithm, Stemmer};
use std::collections::HashMap;
use std::sync::LazyLock;

static STEMMER: LazyLock<Stemmer> = LazyLock::new(|| Stemmer::create(Algorithm::English));

const STOPWORDS: &[&str] = &[
    "a", "an", "the", "of", "in", "on", "at", "to", "is", "are", "was", "were", "be", "by", "for", "and", "or", "what",
    "which", "who", "whom", "whose", "where", "when", "how", "does", "do", "did", "that", "this", "with", "as", "it",
    "its", "from", "s",
];

/// Lower-case stemmed words of letters and digits; relation ids split on `.` and `_`, so
/// `people.person.parents` gives `peopl`, `person`, `parent` and matches "parent" in a question,
/// and "located" meets `location`.
pub fn tokens(text: &str) -> Vec<String> {
    text.split(|c: char| !c.is_alphanumeric())
        .filter(|w| !w.is_empty())
        .map(str::to_lowercase)
        .filter(|w| !STOPWORDS.contains(&w.as_str()))
        .map(|w| match w.as_str() {
            // Plurals the stemmer leaves alone.
            "children" => "child".to_string(),
            "men" => "man".to_string(),
            "women" => "woman".to_string(),
            _ => STEMMER.stem(&w).into_owned(),
        })
        .collect()
}

/// BM25 (k1 = 1.2, b = 0.75) of `query` against each document, with the documents themselves as
/// the corpus. Scores are ≥ 0.
pub fn bm25(query: &str, documents: &[String]) -> Vec<f64> {
    bm25_tokens(&tokens(query), documents)
}

/// The question's words left to rank an entity's next relations by: those the path to it has
/// not used up. `used` holds the names along the path (entities and relations): an entity's
/// name says nothing about which of its relations matter, and a relation already walked has
/// answered its word ("the child of X's parent": after `parents`, only "child" is left).
/// Each used word takes away one occurrence, so "parent's parent" keeps one for the next hop.
pub fn query_without(question: &str, used: &[&str]) -> Vec<String> {
    let mut words = tokens(question);
    for used in used.iter().flat_map(|u| tokens(u)) {
        if let Some(at) = words.iter().position(|w| *w == used) {
            words.remove(at);
        }
    }
    if words.is_empty() { tokens(question) } else { words }
}

/// [`bm25`] with the query already split into [`tokens`].
pub fn bm25_tokens(query: &[String], documents: &[String]) -> Vec<f64> {
    let docs: Vec<Vec<String>> = documents.iter().map(|d| tokens(d)).collect();
    if docs.is_empty() {
        return Vec::new();
    }
    let avg_len = docs.iter().map(Vec::len).sum::<usize>() as f64 / docs.len() as f64;
    let mut df: HashMap<&str, usize> = HashMap::new();
    for doc in &docs {
        let mut seen: Vec<&str> = doc.iter().map(String::as_str).collect();
        seen.sort_unstable();
        seen.dedup();
        for w in seen {
            *df.entry(w).or_default() += 1;
        }
    }
    let n = docs.len() as f64;
    docs.iter()
        .map(|doc| {
            let len = doc.len() as f64;
            query
                .iter()
                .map(|q| {
                    let tf = doc.iter().filter(|w| *w == q).count() as f64;
                    if tf == 0.0 {
                        return 0.0;
                    }
                    let d = *df.get(q.as_str()).unwrap_or(&0) as f64;
                    let idf = ((n - d + 0.5) / (d + 0.5) + 1.0).ln();
                    idf * tf * 2.2 / (tf + 1.2 * (1.0 - 0.75 + 0.75 * len / avg_len.max(1.0)))
                })
                .sum()
        })
        .collect()
}

/// The indices of the `k` documents most similar to `query` by BM25, best first (ties and
/// all-zero scores: listed order).
pub fn top_k(query: &str, documents: &[String], k: usize) -> Vec<usize> {
    let scores = bm25(query, documents);
    let mut ranked: Vec<usize> = (0..documents.len()).collect();
    ranked.sort_by(|&a, &b| scores[b].total_cmp(&scores[a]).then(a.cmp(&b)));
    ranked.truncate(k);
    ranked
}

pub fn cosine(a: &[f32], b: &[f32]) -> f64 {
    let (mut dot, mut na, mut nb) = (0.0f64, 0.0f64, 0.0f64);
    for (x, y) in a.iter().zip(b) {
        dot += f64::from(*x) * f64::from(*y);
        na += f64::from(*x) * f64::from(*x);
        nb += f64::from(*y) * f64::from(*y);
    }
    if na == 0.0 || nb == 0.0 { 0.0 } else { dot / (na.sqrt() * nb.sqrt()) }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bm25_prefers_overlapping_labels() {
        let docs = vec!["location.location.containedby".to_string(), "sports.sports_team.founded".to_string()];
        let s = bm25("Which country is Canberra located in? containedby", &docs);
        assert!(s[0] > s[1], "{s:?}");
        assert_eq!(bm25("x", &[]), Vec::<f64>::new());
    }

    #[test]
    fn relations_match_question_words_by_stem_not_by_the_entity_name() {
        let docs = vec!["people.person.parents".to_string(), "people.person.children".to_string()];
        let s = bm25("who is the parent of claudius ?", &docs);
        assert!(s[0] > s[1], "{s:?}");
        assert_eq!(
            query_without("what is the nationality of james_brown 's wife ?", &["james brown"]),
            ["nation", "wife"]
        );
        // A relation walked uses up one occurrence of its word.
        let q = "who is the parent of the child of x 's parent ?";
        assert_eq!(query_without(q, &["x", "parents"]), ["child", "parent"]);
        assert_eq!(query_without(q, &["x", "parents", "y", "children"]), ["parent"]);
        // Nothing left but the name: the whole question.
        assert_eq!(query_without("canberra ?", &["Canberra"]), ["canberra"]);
    }

    #[test]
    fn cosine_bounds() {
        assert!((cosine(&[1.0, 0.0], &[2.0, 0.0]) - 1.0).abs() < 1e-9);
        assert_eq!(cosine(&[0.0, 0.0], &[1.0, 0.0]), 0.0);
    }
}
