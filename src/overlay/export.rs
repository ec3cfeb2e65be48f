//! Corrections as patches for a KG's maintainers, in the KG's own vocabulary (tab-separated
//! lines for a tab-separated KB, N-Triples or SPARQL Update with the KG's IRIs) or as JSON
//! lines (a backup that `fix import` reads back).

use super::{Correction, Op};
use crate::kg::{KgProfile, KnowledgeGraph, Namespaces, Term};

const RDFS_LABEL: &str = "http://www.w3.org/2000/01/rdf-schema#label";

/// How a KG writes its terms, for an export in its own vocabulary.
pub struct Vocabulary {
    /// How its bare and prefixed ids become IRIs: an endpoint's namespaces, Freebase's for a
    /// Freebase-style file, none for a KB whose ids are names (they go under `urn:ongraph:`).
    namespaces: Namespaces,
    /// The relation an entity's name is written through.
    name_predicate: String,
    /// Whether its ids are its names (a `named-ids` KB holds no name triples).
    names_are_ids: bool,
}

impl Vocabulary {
    /// The vocabulary of a KG read with `profile`; `endpoint` is an endpoint's namespaces.
    pub fn new(profile: &KgProfile, endpoint: Option<Namespaces>) -> Self {
        let names_are_ids = profile.label_from_id;
        let namespaces = endpoint.unwrap_or_else(|| Namespaces {
            bare: if names_are_ids { None } else { profile.strip_prefixes.first().cloned() },
            prefixes: Vec::new(),
        });
        let name_predicate = match profile.label_predicates.first() {
            Some(p) if !names_are_ids => p.clone(),
            _ => RDFS_LABEL.to_string(),
        };
        Self { namespaces, name_predicate, names_are_ids }
    }

    /// The vocabulary of `kg`.
    pub fn of(kg: &dyn KnowledgeGraph) -> Self {
        Self::new(kg.profile(), kg.id_namespaces())
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum ExportFormat {
    /// Asserted triples and new names; retractions as comments (N-Triples cannot delete).
    Nt,
    /// `DELETE DATA` / `DELETE WHERE` / `INSERT DATA`: apply with any SPARQL 1.1 Update endpoint.
    SparqlUpdate,
    /// One correction per line, with its history: what `fix import` reads.
    Jsonl,
    /// `head<TAB>relation<TAB>tail` lines a tab-separated KB takes as they are (asserted
    /// triples); retractions and renames as `#` comments saying what to delete or rename.
    Tsv,
}

/// An id or relation as an IRI: kept when it already is one (or a blank node), otherwise
/// written the way the KG writes its ids (`namespaces`: Freebase's for `m.0abc` in a Freebase
/// KG, an endpoint's prefixes), else under `urn:ongraph:`.
/// Written by oxrdf, which checks the grammar: a term that is not valid (a correction stored
/// before ids were checked, an edited backup) becomes a `urn:ongraph:invalid:` IRI with its
/// text percent-encoded, never text that could change what the patch says.
pub fn iri(id: &str, namespaces: &Namespaces) -> String {
    if let Some(label) = id.strip_prefix("_:") {
        return match oxrdf::BlankNode::new(label) {
            Ok(node) => node.to_string(),
            Err(_) => invalid(id),
        };
    }
    let expanded = namespaces.expand(id);
    let full =
        if expanded.contains("://") || expanded.starts_with("urn:") { expanded } else { format!("urn:ongraph:{id}") };
    match oxrdf::NamedNode::new(full) {
        Ok(node) => node.to_string(),
        Err(_) => invalid(id),
    }
}

fn invalid(id: &str) -> String {
    let encoded: String = id
        .bytes()
        .map(|b| match b {
            b'a'..=b'z' | b'A'..=b'Z' | b'0'..=b'9' | b'-' | b'.' | b'_' | b'~' => (b as char).to_string(),
            _ => format!("%{b:02X}"),
        })
        .collect();
    format!("<urn:ongraph:invalid:{encoded}>")
}

pub use crate::kg::sparql::syntax::literal;

fn term(t: &Term, namespaces: &Namespaces) -> String {
    match t {
        Term::Entity(id) => iri(id, namespaces),
        Term::Literal(v) => literal(v),
    }
}

/// Text that can follow `#` on one line without ending the comment.
fn comment(text: &str) -> String {
    crate::safe_text::one_line(text).into_owned()
}

/// A triple as a line a tab-separated KB takes as it is (the loader reads it back as the same
/// triple); `None` when it cannot be one (a tab or line break in a term, a head the
/// loader would take for a comment).
fn tsv_line(s: &str, r: &str, o: &Term) -> Option<String> {
    let tail = match o {
        Term::Entity(id) => id.clone(),
        // The loader reads `\"` as `"` inside a quoted tail.
        Term::Literal(v) => format!("\"{}\"", v.replace('"', "\\\"")),
    };
    let fine = |f: &str| !f.is_empty() && !f.contains(['\t', '\n', '\r']) && f.trim() == f;
    let writable = fine(s) && fine(r) && fine(&tail) && !s.starts_with(['#', '"']);
    writable.then(|| format!("{s}\t{r}\t{tail}"))
}

/// A triple in a comment: its line when it has one, else its terms.
fn tsv_shown(s: &str, r: &str, o: &Term) -> String {
    tsv_line(s, r, o).unwrap_or_else(|| comment(&format!("{s} {r} {o}")))
}

/// What a simple correction decides, for [`effective`]: a triple, or an entity's name.
#[derive(PartialEq, Eq, Hash)]
enum Decides {
    Triple(String, String, Term),
    Name(String),
}

/// What the active corrections do, as simple corrections (a replace as its parts), oldest
/// first, each with the correction it comes from. As in the overlay, the latest correction of
/// a triple or of an entity's name wins: a retract or assert that a later one undoes (an
/// assert retracted later, a retract asserted again) is left out, so a patch never inserts
/// what the user retracted after (its DELETE DATA runs before its INSERT DATA), and a relabel
/// a later one replaces is left out, so a patch never inserts two names.
fn effective<'a>(corrections: &'a [Correction], name_predicate: &str) -> Vec<(&'a Correction, Op)> {
    let active = super::in_order(corrections);
    let parts: Vec<(&Correction, Op)> =
        active.into_iter().flat_map(|c| c.op.parts(name_predicate).into_iter().map(move |p| (c, p))).collect();
    let decides = |op: &Op| match op {
        Op::Retract { subject, relation, object } | Op::Assert { subject, relation, object } => {
            Some(Decides::Triple(subject.clone(), relation.clone(), object.clone()))
        }
        Op::Relabel { entity, .. } => Some(Decides::Name(entity.clone())),
        Op::Replace { .. } => None,
    };
    let mut decided = std::collections::HashSet::new();
    let mut kept: Vec<(&Correction, Op)> =
        parts.into_iter().rev().filter(|(_, op)| decides(op).is_none_or(|d| decided.insert(d))).collect();
    kept.reverse();
    kept
}

/// Renders `corrections` (nt and sparql-update: what the active ones do; jsonl: all, with
/// history).
pub fn export(corrections: &[Correction], format: ExportFormat, vocabulary: &Vocabulary) -> String {
    match format {
        ExportFormat::Jsonl => export_jsonl(corrections),
        ExportFormat::Nt => export_nt(corrections, vocabulary),
        ExportFormat::Tsv => export_tsv(corrections, vocabulary),
        ExportFormat::SparqlUpdate => export_sparql_update(corrections, vocabulary),
    }
}

/// A triple as an N-Triples line (without its line break).
fn triple(s: &str, r: &str, o: &Term, ns: &Namespaces) -> String {
    format!("{} {} {} .", iri(s, ns), iri(r, ns), term(o, ns))
}

/// Who made a correction, when and why, as text for a comment.
fn why(c: &Correction) -> String {
    comment(&format!("correction {} by {} on {}: {}", c.id, c.author, c.created, c.reason))
}

/// Every correction, one JSON line each, with its history.
fn export_jsonl(corrections: &[Correction]) -> String {
    let mut out = String::new();
    for c in corrections {
        // A correction always serialises: its fields are strings, numbers and enums.
        out.push_str(&crate::safe_text::json::to_string(c).unwrap_or_default());
        out.push('\n');
    }
    out
}

/// What the active corrections do as N-Triples: asserted triples and new names, retractions
/// as comments. A replace is written as its parts (a retraction, an assert, a name), each
/// under the correction's comment.
fn export_nt(corrections: &[Correction], vocabulary: &Vocabulary) -> String {
    let ns = &vocabulary.namespaces;
    let name_predicate = vocabulary.name_predicate.as_str();
    let label_predicate = iri(name_predicate, ns);
    let mut out = String::new();
    for (c, op) in effective(corrections, name_predicate) {
        match &op {
            Op::Assert { subject, relation, object } => {
                out.push_str(&format!("# {}\n{}\n", why(c), triple(subject, relation, object, ns)))
            }
            Op::Relabel { entity, label } => out.push_str(&format!(
                "# {} (replaces the old name)\n{} {} {} .\n",
                why(c),
                iri(entity, ns),
                label_predicate,
                literal(label)
            )),
            Op::Retract { subject, relation, object } => out.push_str(&format!(
                "# {}\n# retracted: {}\n",
                why(c),
                comment(&triple(subject, relation, object, ns))
            )),
            // `parts` yields only simple corrections.
            Op::Replace { .. } => {}
        }
    }
    out
}

/// What the active corrections do as lines a tab-separated KB takes (asserted triples), and
/// `#` comments saying what to delete or rename in it.
fn export_tsv(corrections: &[Correction], vocabulary: &Vocabulary) -> String {
    let mut out = String::new();
    let active = effective(corrections, &vocabulary.name_predicate);
    if !active.is_empty() {
        out.push_str("# ongraph corrections: add the lines that are not comments to the KB; the `#` lines say what to delete or rename in it\n");
    }
    for (c, op) in active {
        out.push_str(&format!("# {}\n", why(c)));
        out.push_str(&tsv_lines(&op, vocabulary));
    }
    out
}

/// The tab-separated line, or the comment, that says what one simple correction does.
fn tsv_lines(op: &Op, vocabulary: &Vocabulary) -> String {
    let name_predicate = vocabulary.name_predicate.as_str();
    match op {
        // A KB whose ids are names has no name lines: one would make it read as a named KB
        // (see the `auto` profile).
        Op::Assert { subject, relation, object: Term::Literal(label) }
            if vocabulary.names_are_ids && relation == name_predicate =>
        {
            format!("# name: {subject} is called {}\n", comment(&literal(label)))
        }
        Op::Assert { subject, relation, object } => match tsv_line(subject, relation, object) {
            Some(line) => format!("{line}\n"),
            None => format!(
                "# cannot be a tab-separated line (a tab or line break in a term, or a head starting with # or \"): add by hand: {}\n",
                tsv_shown(subject, relation, object)
            ),
        },
        Op::Retract { subject, relation, object } => format!("# delete: {}\n", tsv_shown(subject, relation, object)),
        Op::Relabel { entity, label } => {
            let lines = if vocabulary.names_are_ids { String::new() } else { format!(" (its {name_predicate} lines)") };
            format!(
                "# rename: {} is now called {}: replace its name{lines}\n",
                comment(entity),
                comment(&literal(label))
            )
        }
        // `parts` yields only simple corrections.
        Op::Replace { .. } => String::new(),
    }
}

/// What the active corrections do as one SPARQL 1.1 Update: `DELETE DATA`, then a `DELETE
/// WHERE` per new name, then `INSERT DATA`.
fn export_sparql_update(corrections: &[Correction], vocabulary: &Vocabulary) -> String {
    let ns = &vocabulary.namespaces;
    let name_predicate = vocabulary.name_predicate.as_str();
    let label_predicate = iri(name_predicate, ns);
    let (mut delete, mut delete_where, mut insert) = (Vec::new(), Vec::new(), Vec::new());
    for (c, op) in effective(corrections, name_predicate) {
        match &op {
            Op::Retract { subject, relation, object } => {
                delete.push(format!("  # {}\n  {}", why(c), triple(subject, relation, object, ns)))
            }
            Op::Assert { subject, relation, object } => {
                insert.push(format!("  # {}\n  {}", why(c), triple(subject, relation, object, ns)))
            }
            Op::Relabel { entity, label } => {
                let (s, p) = (iri(entity, ns), &label_predicate);
                delete_where.push(format!("DELETE WHERE {{\n  # {}\n  {s} {p} ?old .\n}}", why(c)));
                insert.push(format!("  # {}\n  {s} {p} {} .", why(c), literal(label)));
            }
            // `parts` yields only simple corrections.
            Op::Replace { .. } => {}
        }
    }
    let mut parts = Vec::new();
    if !delete.is_empty() {
        parts.push(format!("DELETE DATA {{\n{}\n}}", delete.join("\n")));
    }
    parts.extend(delete_where);
    if !insert.is_empty() {
        parts.push(format!("INSERT DATA {{\n{}\n}}", insert.join("\n")));
    }
    let mut out = parts.join(" ;\n");
    if !out.is_empty() {
        out.push('\n');
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn literals_and_comments_cannot_break_out() {
        assert_eq!(literal("a\"} ; DROP ALL ; {\n"), "\"a\\\"} ; DROP ALL ; {\\n\"");
        assert_eq!(comment("line\n} ; DROP ALL\u{202e}"), "line\\n} ; DROP ALL\\u{202E}");
        assert_eq!(iri("m.0abc", &Namespaces::freebase()), "<http://rdf.freebase.com/ns/m.0abc>");
        assert_eq!(iri("http://ex.org/a", &Namespaces::freebase()), "<http://ex.org/a>");
    }

    #[test]
    fn a_relabel_a_later_one_replaces_is_not_exported() {
        let relabel = |id: u64, label: &str| Correction {
            id,
            kg: "demo".into(),
            op: Op::Relabel { entity: "m.field".into(), label: label.into() },
            reason: "renamed".into(),
            generated: None,
            author: "t".into(),
            created: "2026-11-26T00:00:00Z".into(),
            active: true,
            context: None,
            history: Vec::new(),
            team: None,
        };
        let both = [relabel(1, "Old Name"), relabel(2, "BayCare Ballpark")];
        let profile = Vocabulary::new(&KgProfile::freebase(), None);
        for format in [ExportFormat::Nt, ExportFormat::SparqlUpdate] {
            let out = export(&both, format, &profile);
            assert!(out.contains("\"BayCare Ballpark\"") && !out.contains("\"Old Name\""), "{out}");
        }
        let sparql = export(&both, ExportFormat::SparqlUpdate, &profile);
        assert_eq!(sparql.matches("DELETE WHERE").count(), 1, "{sparql}");
    }

    #[test]
    fn hostile_ids_cannot_change_what_a_patch_says() {
        // Regression: `_:o;a'INJECTED',1337,true` was written raw into SPARQL Update.
        let p = Namespaces::default();
        assert_eq!(iri("_:b0", &p), "_:b0");
        for hostile in ["_:o;a'INJECTED',1337,true", "_:x#rest", "_:", "m.a>b", "http://x/ y"] {
            let written = iri(hostile, &p);
            assert!(written.starts_with("<urn:ongraph:invalid:") && written.ends_with('>'), "{hostile}: {written}");
            assert!(!written[1..written.len() - 1].contains(['<', '>', ';', '\'', '#', ' ', ',']), "{written}");
        }
        // The validation that guards new corrections refuses them in the first place.
        assert!(crate::overlay::validate_id("object", "_:o;a'INJECTED',1337,true").is_err());
        assert!(crate::overlay::validate_id("object", "_:b0").is_ok());
    }
}
