//! Parsers for the models' replies. Real models rarely follow the exemplars exactly, so each
//! parser accepts the sloppy variants it has met, says which fallback it used (`notes`), and
//! never panics. What they will not do: accept a relation that is not among the candidates, or
//! keep more items than asked for.

use regex::Regex;
use std::sync::LazyLock;

/// Scores chosen from a list of candidates.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Scored {
    /// (candidate index, normalised score), best first, at most the requested count.
    pub items: Vec<(usize, f64)>,
    /// Names the model gave that are not candidates: rejected, never queried.
    pub rejected: Vec<String>,
    /// Fallbacks used, in words, for the trace.
    pub notes: Vec<String>,
}

/// `name (Score: 0.3)`, optionally in braces, numbered, with `%` or an integer score.
static SCORED_ITEM: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(
        r"(?i)\{?\s*(?:\d{1,2}\s*[.)]\s+)?([^{}\n(]+?(?:\s*\(incoming\))?)\s*\(\s*(?:score|s)?\s*[:=]?\s*(\d+(?:\.\d+)?|\.\d+)\s*(%?)\s*\)\s*\}?",
    )
    .unwrap_or_else(|e| unreachable!("constant regex: {e}"))
});

/// `name: 0.3` or `name - 30%` on a line of its own (no parentheses).
static SCORED_LINE: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"(?i)^\s*(?:[-*•]\s*|\d{1,2}\s*[.)]\s*)?\{?([^{}\n]+?)\}?\s*(?::|=|\s-|–)\s*(?:score\s*[:=]?\s*)?(\d+(?:\.\d+)?|\.\d+)\s*(%?)\s*$")
        .unwrap_or_else(|e| unreachable!("constant regex: {e}"))
});

static NUMBER: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"(\d+(?:\.\d+)?|\.\d+)\s*(%?)").unwrap_or_else(|e| unreachable!("constant regex: {e}"))
});

static BRACED: LazyLock<Regex> =
    LazyLock::new(|| Regex::new(r"\{([^{}]*)\}").unwrap_or_else(|e| unreachable!("constant regex: {e}")));

fn score_value(number: &str, percent: &str) -> Option<f64> {
    let v: f64 = number.parse().ok()?;
    let v = if percent.is_empty() { v } else { v / 100.0 };
    (v.is_finite() && v >= 0.0).then_some(v)
}

fn normalise(name: &str) -> String {
    name.trim().trim_matches(|c: char| c == '"' || c == '\'' || c == '`' || c == '*' || c == '.').trim().to_lowercase()
}

/// Finds which candidate a name the model wrote refers to. In order: exact; case-insensitive;
/// a candidate that is the last segments of the name or of which the name is the last segments
/// (`containedby` for `location.location.containedby`) when only one candidate fits; the
/// longest candidate the text mentions (prose around the name).
pub fn match_candidate(name: &str, candidates: &[String]) -> Option<usize> {
    if let Some(i) = candidates.iter().position(|c| c == name.trim()) {
        return Some(i);
    }
    let wanted = normalise(name);
    if wanted.is_empty() {
        return None;
    }
    if let Some(i) = candidates.iter().position(|c| c.to_lowercase() == wanted) {
        return Some(i);
    }
    // A relation offered only as `name (incoming)`, written without the marker.
    let incoming: Vec<usize> = candidates
        .iter()
        .enumerate()
        .filter(|(_, c)| c.to_lowercase().strip_suffix(" (incoming)") == Some(wanted.as_str()))
        .map(|(i, _)| i)
        .collect();
    if let [i] = incoming[..] {
        return Some(i);
    }
    let suffix: Vec<usize> = candidates
        .iter()
        .enumerate()
        .filter(|(_, c)| {
            let c = c.to_lowercase();
            c.ends_with(&format!(".{wanted}")) || wanted.ends_with(&format!(".{c}"))
        })
        .map(|(i, _)| i)
        .collect();
    if suffix.len() == 1 {
        return Some(suffix[0]);
    }
    candidates
        .iter()
        .enumerate()
        .filter(|(_, c)| c.len() >= 3 && mentions(&wanted, &c.to_lowercase()))
        .max_by_key(|(i, c)| (c.len(), usize::MAX - i))
        .map(|(i, _)| i)
}

/// Whether `text` contains `word` with no letter, digit or `_`/`.` glued to either side.
fn mentions(text: &str, word: &str) -> bool {
    let glued = |c: Option<char>| c.is_some_and(|c| c.is_alphanumeric() || c == '_' || c == '.');
    text.match_indices(word).any(|(at, _)| {
        let before = text[..at].chars().next_back();
        let after = text[at + word.len()..].chars().next();
        // A trailing full stop ends a sentence; it does not extend the name.
        let after_ok = after == Some('.') || !glued(after);
        !glued(before) && after_ok
    })
}

/// Parses a relation-prune reply: up to `keep` candidates with scores normalised to sum to 1.
pub fn parse_scored_choices(reply: &str, candidates: &[String], keep: usize) -> Scored {
    let mut out = Scored::default();
    let mut found: Vec<(usize, f64)> = Vec::new();
    let push = |name: &str, score: f64, out: &mut Scored, found: &mut Vec<(usize, f64)>| match match_candidate(
        name, candidates,
    ) {
        Some(i) if !found.iter().any(|(j, _)| *j == i) => found.push((i, score)),
        Some(i) => out.notes.push(format!("{} listed twice; first score kept", candidates[i])),
        None => out.rejected.push(name.trim().to_string()),
    };
    for cap in SCORED_ITEM.captures_iter(reply) {
        if let Some(score) = score_value(&cap[2], &cap[3]) {
            push(&cap[1], score, &mut out, &mut found);
        }
    }
    if found.is_empty() && out.rejected.is_empty() {
        for line in reply.lines() {
            if let Some(cap) = SCORED_LINE.captures(line)
                && let Some(score) = score_value(&cap[2], &cap[3])
            {
                push(&cap[1], score, &mut out, &mut found);
            }
        }
        if !found.is_empty() {
            out.notes.push("scores written as `name: score` lines".into());
        }
    }
    if found.is_empty() && out.rejected.is_empty() {
        // Names in braces with no score: equal shares, in the order given.
        let named: Vec<usize> = BRACED.captures_iter(reply).filter_map(|c| match_candidate(&c[1], candidates)).fold(
            Vec::new(),
            |mut acc, i| {
                if !acc.contains(&i) {
                    acc.push(i);
                }
                acc
            },
        );
        if !named.is_empty() {
            out.notes.push("no scores given; equal shares assumed".into());
            found = named.into_iter().map(|i| (i, 1.0)).collect();
        }
    }
    finish_scores(&mut out, found, keep);
    out
}

/// Sorts best first (stable: ties keep the model's order), cuts to `keep`, and scales scores
/// summing to more than 1 down to 1. Scores summing to less stay as given: a model that rates
/// every relation low says the entity's branch matters little, and normalising would rank it
/// with a branch rated high. Zero stays zero (the model judged the relation useless).
fn finish_scores(out: &mut Scored, mut found: Vec<(usize, f64)>, keep: usize) {
    found.sort_by(|a, b| b.1.total_cmp(&a.1));
    if found.len() > keep {
        out.notes.push(format!("{} items given, {} kept", found.len(), keep));
        found.truncate(keep);
    }
    let sum: f64 = found.iter().map(|(_, s)| s).sum();
    if !sum.is_finite() {
        out.notes.push("scores too large to read; equal shares assumed".into());
        let share = 1.0 / found.len() as f64;
        found.iter_mut().for_each(|item| item.1 = share);
    } else if sum > 1.0 - 1e-6 {
        if sum > 1.0 + 1e-6 {
            out.notes.push(format!("scores summed to {sum:.3}; normalised"));
        }
        found.iter_mut().for_each(|item| item.1 /= sum);
    } else if sum <= 0.0 && !found.is_empty() {
        out.notes.push("every score given was 0".into());
    }
    out.items = found;
}

/// Parses an entity-prune reply: one score per entity, in the listed order, normalised.
/// Preferred: a line that is only a list of numbers (optionally after `Score:`). Otherwise
/// `name (Score: x)` items matched to the entity labels. Numbers inside prose (years, counts)
/// are never read as scores. `None` when neither form is present.
pub fn parse_score_list(reply: &str, labels: &[String]) -> Option<(Vec<f64>, Vec<String>)> {
    let mut notes = Vec::new();
    let mut scores: Option<Vec<f64>> = None;
    for line in reply.lines() {
        let body = line.trim().trim_start_matches(['{', '[']).trim();
        let body = strip_prefix_ci(body, "score:").or_else(|| strip_prefix_ci(body, "scores:")).unwrap_or(body);
        let body = body.trim().trim_end_matches(['}', ']', '.']);
        if body.is_empty() || body.chars().any(|c| c.is_alphabetic()) {
            continue;
        }
        let values: Vec<f64> = NUMBER.captures_iter(body).filter_map(|c| score_value(&c[1], &c[2])).collect();
        if !values.is_empty() {
            scores = Some(values);
            break;
        }
    }
    let mut values = match scores {
        Some(v) => v,
        None => {
            let parsed = parse_scored_choices(reply, labels, labels.len());
            if parsed.items.is_empty() {
                return None;
            }
            notes.push("scores given as `name (Score: x)` items".into());
            let mut v = vec![0.0; labels.len()];
            for (i, s) in parsed.items {
                v[i] = s;
            }
            v
        }
    };
    if values.len() != labels.len() {
        notes.push(format!("{} scores for {} entities; missing ones count as 0", values.len(), labels.len()));
        values.resize(labels.len(), 0.0);
    }
    let sum: f64 = values.iter().sum();
    if !sum.is_finite() {
        notes.push("scores too large to read; equal shares assumed".into());
        values.iter_mut().for_each(|v| *v = 1.0);
        let n = values.len() as f64;
        values.iter_mut().for_each(|v| *v /= n);
    } else if sum > 0.0 {
        if (sum - 1.0).abs() > 1e-6 {
            notes.push(format!("scores summed to {sum:.3}; normalised"));
        }
        values.iter_mut().for_each(|v| *v /= sum);
    }
    Some((values, notes))
}

fn strip_prefix_ci<'a>(text: &'a str, prefix: &str) -> Option<&'a str> {
    let head = text.get(..prefix.len())?;
    head.eq_ignore_ascii_case(prefix).then(|| &text[prefix.len()..])
}

/// Parses a unified relation-prune reply of `{Entity | relation (Score: x)}` items into
/// per-entity choices (each cut to `keep` and normalised within its entity). An item without an
/// entity is given to the only entity that has that relation, or rejected when several do.
pub fn parse_unified_choices(reply: &str, entities: &[(String, Vec<String>)], keep: usize) -> Vec<Scored> {
    let mut found: Vec<Vec<(usize, f64)>> = vec![Vec::new(); entities.len()];
    let mut out: Vec<Scored> = vec![Scored::default(); entities.len()];
    let labels: Vec<String> = entities.iter().map(|(e, _)| e.clone()).collect();
    let mut extra_rejected = Vec::new();
    for cap in SCORED_ITEM.captures_iter(reply) {
        let Some(score) = score_value(&cap[2], &cap[3]) else { continue };
        let text = cap[1].trim();
        let (entity, relation) = match text.split_once(['|', ';']) {
            Some((e, r)) => (match_candidate(e, &labels), r.trim()),
            None => {
                let owners: Vec<usize> =
                    (0..entities.len()).filter(|&i| match_candidate(text, &entities[i].1).is_some()).collect();
                (if owners.len() == 1 { Some(owners[0]) } else { None }, text)
            }
        };
        let Some(e) = entity else {
            extra_rejected.push(text.to_string());
            continue;
        };
        match match_candidate(relation, &entities[e].1) {
            Some(i) if !found[e].iter().any(|(j, _)| *j == i) => found[e].push((i, score)),
            Some(_) => {}
            None => out[e].rejected.push(relation.to_string()),
        }
    }
    for (e, f) in found.into_iter().enumerate() {
        finish_scores(&mut out[e], f, keep);
    }
    if let Some(first) = out.first_mut() {
        first.rejected.extend(extra_rejected);
    }
    out
}

/// Parses a unified entity-prune reply of `Group k: s1, s2` lines into one score list per group.
pub fn parse_group_scores(reply: &str, groups: &[Vec<String>]) -> Vec<Option<Vec<f64>>> {
    static GROUP: LazyLock<Regex> = LazyLock::new(|| {
        Regex::new(r"(?i)group\s*(\d+)\s*[:\-]\s*([^\n]*)").unwrap_or_else(|e| unreachable!("constant regex: {e}"))
    });
    let mut out = vec![None; groups.len()];
    for cap in GROUP.captures_iter(reply) {
        let Ok(k) = cap[1].parse::<usize>() else { continue };
        let Some(labels) = k.checked_sub(1).and_then(|i| groups.get(i)) else { continue };
        if out[k - 1].is_none()
            && let Some((scores, _)) = parse_score_list(&cap[2], labels)
        {
            out[k - 1] = Some(scores);
        }
    }
    out
}

/// Reads a Yes/No verdict: `{Yes}`/`{No}` first; then a reply that starts with yes or no; then
/// the first standalone yes/no word; then "insufficient"/"not sufficient" (No) or "sufficient"
/// (Yes). `None` when the reply says neither.
pub fn parse_yes_no(reply: &str) -> Option<bool> {
    let lower = reply.to_lowercase();
    for cap in BRACED.captures_iter(&lower) {
        match cap[1].trim() {
            "yes" => return Some(true),
            "no" => return Some(false),
            _ => {}
        }
    }
    let words: Vec<&str> = lower.split(|c: char| !c.is_alphanumeric()).filter(|w| !w.is_empty()).collect();
    if let Some(w) = words.iter().find(|w| **w == "yes" || **w == "no") {
        return Some(*w == "yes");
    }
    if lower.contains("insufficient") || lower.contains("not sufficient") || lower.contains("not enough") {
        return Some(false);
    }
    lower.contains("sufficient").then_some(true)
}

/// Whether an answer says nothing: empty, or "unknown" (punctuation and case aside).
pub(crate) fn is_unknown(answer: &str) -> bool {
    let bare: String = answer.chars().filter(|c| c.is_alphanumeric()).collect();
    bare.is_empty() || bare.eq_ignore_ascii_case("unknown")
}

/// Extracts the answer(s): every `{…}` group that is not a Yes/No verdict, in order, split on
/// ` | ` (GoG style) but not on commas (answers such as "Washington, D.C." contain them); then
/// "the answer is X". `None` when the reply names no answer.
pub fn parse_answers(reply: &str) -> Option<Vec<String>> {
    let mut answers: Vec<String> = Vec::new();
    for cap in BRACED.captures_iter(reply) {
        let inner = cap[1].trim();
        if inner.is_empty() || inner.eq_ignore_ascii_case("yes") || inner.eq_ignore_ascii_case("no") {
            continue;
        }
        // `{"answer": …}`: a JSON object, read as one (its `answer`/`answers`), never as a name.
        if inner.starts_with('"') && inner.contains("\":") {
            for a in json_answers(&format!("{{{inner}}}")) {
                if !answers.contains(&a) {
                    answers.push(a);
                }
            }
            continue;
        }
        for part in inner.split(" | ") {
            let part = part.trim().trim_matches('"').trim();
            if !part.is_empty() && !answers.iter().any(|a| a == part) {
                answers.push(part.to_string());
            }
        }
    }
    if !answers.is_empty() {
        return Some(answers);
    }
    // ASCII case only: the byte offsets stay the reply's (a full lower-casing changes the
    // length of some characters, 'İ' or the Kelvin sign, and the slice below would miss).
    let lower = reply.to_ascii_lowercase();
    let at = lower.rfind("the answer is")?;
    let rest = reply[at + "the answer is".len()..].trim_start_matches([':', ' ']);
    let answer = rest.split(['\n']).next().unwrap_or_default().trim().trim_end_matches('.').trim();
    (!answer.is_empty()).then(|| vec![answer.to_string()])
}

/// The `answer` / `answers` of a JSON object (a string or a list of strings); none otherwise.
fn json_answers(text: &str) -> Vec<String> {
    let Ok(serde_json::Value::Object(map)) = serde_json::from_str::<serde_json::Value>(text) else { return Vec::new() };
    let value = map.get("answers").or_else(|| map.get("answer"));
    let strings = |v: &serde_json::Value| v.as_str().map(|s| s.trim().to_string()).filter(|s| !s.is_empty());
    match value {
        Some(serde_json::Value::Array(items)) => items.iter().filter_map(strings).collect(),
        Some(v) => strings(v).into_iter().collect(),
        None => Vec::new(),
    }
}

/// Whether a line with no braces can be taken as an answer on its own: a short name, not a
/// sentence ("The majority party in Canberra is …."), a question, or a fragment of JSON.
pub fn is_bare_answer(line: &str) -> bool {
    let line = line.trim();
    !line.is_empty()
        && line.chars().count() <= 80
        && line.split_whitespace().count() <= 8
        && !line.ends_with(['.', '?', '!', ':', ','])
        && !line.contains(['{', '}', '[', ']', '"'])
}

/// Extracts topic-entity names: every `{…}` group; else comma/semicolon-separated names on the
/// first non-empty line (after an optional label such as `Topic entities:`).
pub fn parse_names(reply: &str) -> Vec<String> {
    let braced: Vec<String> = BRACED
        .captures_iter(reply)
        .map(|c| c[1].trim().to_string())
        .filter(|s| !s.is_empty())
        .fold(Vec::new(), |mut acc, s| {
            if !acc.contains(&s) {
                acc.push(s);
            }
            acc
        });
    if !braced.is_empty() {
        return braced;
    }
    let line = reply.lines().map(str::trim).find(|l| !l.is_empty()).unwrap_or_default();
    let line = line.split_once(':').map(|(_, r)| r).unwrap_or(line);
    line.split([',', ';']).map(|s| s.trim().trim_matches('"').to_string()).filter(|s| !s.is_empty()).collect()
}
