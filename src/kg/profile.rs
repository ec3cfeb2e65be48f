//! Per-KG conventions: which predicate carries names, which relations say nothing useful, how a
//! relation id is shown to the model, and what an unnamed node is.

use serde::{Deserialize, Serialize};

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct KgProfile {
    /// Predicates whose object is an entity's name, tried in order (e.g. Freebase
    /// `type.object.name`, RDF `http://www.w3.org/2000/01/rdf-schema#label`).
    pub label_predicates: Vec<String>,
    /// Relations dropped from relation search: exact ids.
    pub ignore_exact: Vec<String>,
    /// Relations dropped from relation search: id prefixes.
    pub ignore_prefixes: Vec<String>,
    /// Relations dropped from relation search: substrings.
    pub ignore_containing: Vec<String>,
    /// When an entity has no name triple, derive one from its id (`Albert_Einstein` →
    /// `Albert Einstein`). Right for graphs whose ids are names (PathQuestion, MetaQA); wrong for
    /// Freebase, where a nameless id is a mediator (CVT) node.
    pub label_from_id: bool,
    /// Show relation ids written with `__` for `.` (PathQuestion's PQL) in Freebase dot form.
    pub dunder_relations: bool,
    /// Namespace prefixes stripped from IRIs when showing them (N-Triples input).
    pub strip_prefixes: Vec<String>,
    /// When not empty, only relations whose id starts with one of these are offered (Wikidata:
    /// `wdt:`, `p:`, `ps:`, `pq:`, leaving out labels, descriptions and schema triples).
    pub keep_prefixes: Vec<String>,
}

impl Default for KgProfile {
    fn default() -> Self {
        Self::freebase()
    }
}

impl KgProfile {
    /// Freebase conventions, as ToG uses them.
    pub fn freebase() -> Self {
        Self {
            label_predicates: vec![
                "type.object.name".into(),
                "http://rdf.freebase.com/ns/type.object.name".into(),
                "http://www.w3.org/2000/01/rdf-schema#label".into(),
            ],
            ignore_exact: vec!["type.object.type".into(), "type.object.name".into()],
            ignore_prefixes: vec!["common.".into(), "freebase.".into()],
            ignore_containing: vec!["sameAs".into()],
            label_from_id: false,
            dunder_relations: false,
            strip_prefixes: vec!["http://rdf.freebase.com/ns/".into()],
            keep_prefixes: Vec::new(),
        }
    }

    /// Wikidata (its query service or a copy): Q ids, direct claims `wdt:` and statement nodes
    /// (`p:` to the statement, `ps:` to its value, `pq:` to its qualifiers), names from
    /// `rdfs:label`.
    pub fn wikidata() -> Self {
        Self {
            label_predicates: vec!["http://www.w3.org/2000/01/rdf-schema#label".into()],
            ignore_exact: Vec::new(),
            ignore_prefixes: Vec::new(),
            ignore_containing: Vec::new(),
            label_from_id: false,
            dunder_relations: false,
            strip_prefixes: Vec::new(),
            keep_prefixes: vec!["wdt:".into(), "p:".into(), "ps:".into(), "pq:".into()],
        }
    }

    /// Any RDF store: names from `rdfs:label` (or SKOS), nothing filtered but `sameAs`.
    pub fn rdf() -> Self {
        Self {
            label_predicates: vec![
                "http://www.w3.org/2000/01/rdf-schema#label".into(),
                "http://www.w3.org/2004/02/skos/core#prefLabel".into(),
            ],
            ignore_exact: Vec::new(),
            ignore_prefixes: Vec::new(),
            ignore_containing: vec!["sameAs".into()],
            label_from_id: false,
            dunder_relations: false,
            strip_prefixes: Vec::new(),
            keep_prefixes: Vec::new(),
        }
    }

    /// Graphs whose ids are their names (PathQuestion, MetaQA TSV knowledge bases).
    pub fn named_ids() -> Self {
        Self { label_from_id: true, dunder_relations: true, ..Self::freebase() }
    }

    /// The built-in profile this is, by name (`custom` for one changed by a config, e.g. its
    /// `label_predicates`).
    pub fn name(&self) -> &'static str {
        [
            ("freebase", Self::freebase()),
            ("named-ids", Self::named_ids()),
            ("rdf", Self::rdf()),
            ("wikidata", Self::wikidata()),
        ]
        .into_iter()
        .find(|(_, p)| p == self)
        .map_or("custom", |(name, _)| name)
    }

    /// Whether relation search should offer this relation to the model.
    pub fn is_informative(&self, relation: &str) -> bool {
        if !self.keep_prefixes.is_empty() && !self.keep_prefixes.iter().any(|p| relation.starts_with(p.as_str())) {
            return false;
        }
        let shown = self.strip(relation);
        !(self.ignore_exact.iter().any(|r| r == shown || r == relation)
            || self.label_predicates.iter().any(|p| p == relation)
            || self.ignore_prefixes.iter().any(|p| shown.starts_with(p.as_str()))
            || self.ignore_containing.iter().any(|c| relation.contains(c.as_str())))
    }

    fn strip<'a>(&self, iri: &'a str) -> &'a str {
        self.strip_prefixes.iter().find_map(|p| iri.strip_prefix(p.as_str())).unwrap_or(iri)
    }

    /// How a relation id is shown in prompts and the UI.
    pub fn display_relation(&self, relation: &str) -> String {
        let shown = self.strip(relation);
        if self.dunder_relations && shown.starts_with("__") { shown[2..].replace("__", ".") } else { shown.to_string() }
    }

    /// The name derived from an id, when this profile allows it.
    pub fn label_from(&self, id: &str) -> Option<String> {
        self.label_from_id.then(|| self.strip(id).replace('_', " "))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn freebase_filter_drops_uninformative_relations() {
        let p = KgProfile::freebase();
        assert!(!p.is_informative("type.object.type"));
        assert!(!p.is_informative("common.topic.notable_types"));
        assert!(!p.is_informative("http://rdf.freebase.com/ns/common.topic.alias"));
        assert!(!p.is_informative("http://www.w3.org/2002/07/owl#sameAs"));
        assert!(p.is_informative("location.location.containedby"));
    }

    #[test]
    fn pql_relations_shown_in_dot_form() {
        let p = KgProfile::named_ids();
        assert_eq!(p.display_relation("__people__person__gender"), "people.person.gender");
        assert_eq!(p.label_from("Khanty_people").as_deref(), Some("Khanty people"));
        assert_eq!(KgProfile::freebase().label_from("m.0abc"), None);
    }
}
