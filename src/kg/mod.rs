//! The knowledge-graph layer: one async trait that the engine's driver calls, whatever stores the
//! triples (the embedded local graph now; SPARQL endpoints and the correction overlay later).

pub(crate) mod load;
pub(crate) mod local;
mod profile;
pub(crate) mod sparql;
pub use sparql::Namespaces;

use async_trait::async_trait;
use serde::{Deserialize, Serialize};
use std::fmt;

pub use profile::KgProfile;

/// Which side of a triple the frontier entity stands on.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Direction {
    /// The entity is the head: `entity --relation--> neighbour`.
    Out,
    /// The entity is the tail: `neighbour --relation--> entity`.
    In,
}

impl Direction {
    pub fn arrow(self) -> &'static str {
        match self {
            Direction::Out => "->",
            Direction::In => "<-",
        }
    }
}

/// A relation as seen from one entity: its id and the direction it is traversed in, with a
/// human name when the graph has one (Wikidata's "instance of" for `wdt:P31`). The name is for
/// display only: two refs with the same id and direction are the same relation.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct RelationRef {
    pub relation: String,
    pub direction: Direction,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub label: Option<String>,
}

impl PartialEq for RelationRef {
    fn eq(&self, other: &Self) -> bool {
        self.relation == other.relation && self.direction == other.direction
    }
}
impl Eq for RelationRef {}
impl std::hash::Hash for RelationRef {
    fn hash<H: std::hash::Hasher>(&self, state: &mut H) {
        self.relation.hash(state);
        self.direction.hash(state);
    }
}
impl PartialOrd for RelationRef {
    fn partial_cmp(&self, other: &Self) -> Option<std::cmp::Ordering> {
        Some(self.cmp(other))
    }
}
impl Ord for RelationRef {
    fn cmp(&self, other: &Self) -> std::cmp::Ordering {
        (&self.relation, self.direction).cmp(&(&other.relation, other.direction))
    }
}

impl RelationRef {
    pub fn out(relation: impl Into<String>) -> Self {
        Self { relation: relation.into(), direction: Direction::Out, label: None }
    }
    pub fn incoming(relation: impl Into<String>) -> Self {
        Self { relation: relation.into(), direction: Direction::In, label: None }
    }
}

/// A node of the graph: an entity (traversable) or a literal value (a date, a number, a string),
/// which can be an answer but has no outgoing edges to explore.
#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(tag = "kind", content = "value", rename_all = "lowercase")]
pub enum Term {
    Entity(String),
    Literal(String),
}

impl Term {
    pub fn as_str(&self) -> &str {
        match self {
            Term::Entity(s) | Term::Literal(s) => s,
        }
    }
    pub fn is_entity(&self) -> bool {
        matches!(self, Term::Entity(_))
    }
}

impl fmt::Display for Term {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Term::Entity(id) => f.write_str(id),
            Term::Literal(v) => write!(f, "\"{v}\""),
        }
    }
}

/// A node reached through a relation, with its label when it has one. An entity without a label
/// is a mediator (CVT) node: traversable, shown to the model as `UnName_Entity`.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Neighbour {
    pub term: Term,
    pub label: Option<String>,
    /// The correction that asserted this fact, when it comes from the overlay.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub correction: Option<u64>,
}

/// An entity found by its label.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct EntityMatch {
    pub id: String,
    pub label: String,
    /// 1.0 for an exact (case-insensitive) label match; lower for fuzzy matches.
    pub score: f64,
    pub exact: bool,
}

#[derive(Debug, thiserror::Error)]
pub enum KgError {
    #[error("{path}:{line}: {message}")]
    Syntax { path: String, line: u64, message: String },
    // Its text is in the message, so it is no `source` (a field so named would be): anyhow's
    // chain would print it a second time.
    #[error("cannot read {path}: {error}")]
    Io { path: String, error: std::io::Error },
    #[error("{0}")]
    Other(String),
    /// The server answered, and said no (its final HTTP status, after any retries).
    #[error("{message}")]
    Refused { status: u16, message: String },
    /// The server could not be reached (no connection, or no answer in time).
    #[error("{0}")]
    Unreachable(String),
}

impl KgError {
    /// Whether asking again cannot help: the server refused this very request (an HTTP 4xx
    /// other than 401, 403, 408 and 429, which a new token or a later try may change).
    pub fn is_permanent(&self) -> bool {
        matches!(self, KgError::Refused { status, .. }
            if (400..500).contains(status) && !matches!(status, 401 | 403 | 408 | 429))
    }

    /// Whether the server could not be reached at all.
    pub fn is_unreachable(&self) -> bool {
        matches!(self, KgError::Unreachable(_))
    }

    /// The same error, its message ending with `note`.
    pub fn noted(self, note: &str) -> Self {
        match self {
            KgError::Syntax { path, line, message } => KgError::Syntax { path, line, message: message + note },
            KgError::Io { path, error } => KgError::Other(format!("cannot read {path}: {error}{note}")),
            KgError::Other(message) => KgError::Other(message + note),
            KgError::Refused { status, message } => KgError::Refused { status, message: message + note },
            KgError::Unreachable(message) => KgError::Unreachable(message + note),
        }
    }
}

/// Labels less similar than this to a searched name are not offered as close matches.
pub const CLOSE_NAME_MIN: f64 = 0.7;

/// How close a label is to a searched name (both compared in lower case), from 0 to 1:
/// Jaro-Winkler, lifted to at least 0.9 when the label holds the name's words as a run of its
/// own ("frederica" in "frederica of mecklenburg-strelitz", above "frederick dent grant"),
/// else to at least 0.8 when it contains the name ("Lou Seal" in "Lou Seal (mascot)"). Every
/// backend ranks close names with this, so they agree.
pub fn name_similarity(label: &str, wanted: &str) -> f64 {
    let (label, wanted) = (label.to_lowercase(), wanted.trim().to_lowercase());
    let jw = strsim::jaro_winkler(&label, &wanted);
    if wanted.chars().count() < 3 || !label.contains(&wanted) {
        return jw;
    }
    let words = |t: &str| -> Vec<String> {
        t.split(|c: char| !c.is_alphanumeric()).filter(|w| !w.is_empty()).map(str::to_string).collect()
    };
    let (have, want) = (words(&label), words(&wanted));
    let whole_words = !want.is_empty() && have.windows(want.len()).any(|w| w == want.as_slice());
    jw.max(if whole_words { 0.9 } else { 0.8 })
}

/// What every knowledge graph offers the reasoning engine.
#[async_trait]
pub trait KnowledgeGraph: Send + Sync {
    /// A short name for status lines and reports ("demo", a file name, an endpoint).
    fn name(&self) -> &str;
    fn profile(&self) -> &KgProfile;
    /// Distinct relations around an entity, both directions, uninformative ones filtered out.
    async fn relations(&self, entity: &str) -> Result<Vec<RelationRef>, KgError>;
    /// The nodes on the other side of `relation` from `entity`, with their labels, in term order.
    async fn neighbours(&self, entity: &str, relation: &RelationRef) -> Result<Vec<Neighbour>, KgError>;
    /// The label of an entity, `None` for unnamed (mediator) nodes.
    async fn label(&self, entity: &str) -> Result<Option<String>, KgError>;
    /// Entities whose label matches `name`: exact (case-insensitive) matches first, then fuzzy
    /// ones, best first, at most `limit`.
    async fn find_entities(&self, name: &str, limit: usize) -> Result<Vec<EntityMatch>, KgError>;
    /// A named entity and one of its relations (as shown to the model), for suggesting a
    /// question this graph can answer; `None` where the graph cannot tell cheaply (endpoints).
    fn example_fact(&self) -> Option<(String, String)> {
        None
    }

    /// How an endpoint writes its ids as IRIs (its namespace for bare ids, its prefixes), for
    /// exports in its own vocabulary; `None` for a graph whose ids are as its file writes them.
    fn id_namespaces(&self) -> Option<Namespaces> {
        None
    }

    /// Queries sent to a remote endpoint, and answers taken from the query cache instead.
    fn network(&self) -> NetworkStats {
        NetworkStats::default()
    }

    /// The relations of several entities; backends that can answer in one round trip do.
    async fn relations_many(&self, entities: &[String]) -> Result<Vec<Vec<RelationRef>>, KgError> {
        let mut out = Vec::with_capacity(entities.len());
        for e in entities {
            out.push(self.relations(e).await?);
        }
        Ok(out)
    }

    /// The neighbours through several (entity, relation) pairs; backends that can answer in one
    /// round trip per direction do.
    async fn neighbours_many(&self, pairs: &[(String, RelationRef)]) -> Result<Vec<Vec<Neighbour>>, KgError> {
        let mut out = Vec::with_capacity(pairs.len());
        for (e, r) in pairs {
            out.push(self.neighbours(e, r).await?);
        }
        Ok(out)
    }
}

/// What a remote knowledge graph cost on the network.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct NetworkStats {
    /// Queries sent to the endpoint.
    pub queries: u64,
    /// Queries answered from the local cache instead.
    pub cache_hits: u64,
    /// Queries the cache did not have (and that were then sent).
    pub cache_misses: u64,
}

#[cfg(test)]
mod tests {
    use super::name_similarity;

    #[test]
    fn a_name_held_as_whole_words_ranks_above_a_merely_similar_one() {
        // Found by a trial: `kg search frederica` ranked her sixth, below five Fredericks.
        let her = name_similarity("frederica of mecklenburg-strelitz", "frederica");
        assert!(her > name_similarity("frederick dent grant", "frederica"), "{her}");
        assert!(her >= 0.9);
        assert!(name_similarity("the-lou sealion", "lou seal") >= 0.8, "a substring, lifted less");
        assert!(name_similarity("lou seal", "lou seal") > 0.99);
        assert!(name_similarity("al pacino", "al") < 0.9, "a short name is not lifted");
    }
}
