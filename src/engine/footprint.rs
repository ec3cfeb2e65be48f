//! What a run read of the knowledge graph, and the triples its answer rests on: the facts a
//! correction would have to touch to change it (`ongraph fix impact`). Collected from the
//! lookups a run is fed, so every method and front end keeps one without doing anything, and
//! derived the same way from a saved session's exchanges.

use super::{Answer, Request, Response};
use crate::kg::{Direction, Term};
use serde::{Deserialize, Serialize};
use std::collections::BTreeSet;

/// The facts one run read, and those its answer rests on.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Footprint {
    /// Entities whose relations were listed.
    #[serde(default, skip_serializing_if = "BTreeSet::is_empty")]
    pub relations_of: BTreeSet<String>,
    /// Neighbour lookups: an entity, a relation, and which end of it the entity is.
    #[serde(default, skip_serializing_if = "BTreeSet::is_empty")]
    pub neighbours: BTreeSet<Lookup>,
    /// Names looked up by label (topic entities, GoG's searches).
    #[serde(default, skip_serializing_if = "BTreeSet::is_empty")]
    pub searched: BTreeSet<String>,
    /// Entities whose names the run was shown (in any lookup's results).
    #[serde(default, skip_serializing_if = "BTreeSet::is_empty")]
    pub named: BTreeSet<String>,
    /// The triples of the answer's supporting paths (those naming an answer; every path shown
    /// when none does), as the KG holds them.
    #[serde(default, skip_serializing_if = "BTreeSet::is_empty")]
    pub rests_on: BTreeSet<Fact>,
}

/// One neighbour lookup: `entity --relation--> ?` (out) or `? --relation--> entity` (in).
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
pub struct Lookup(pub String, pub String, pub Direction);

/// A triple as the KG holds it: subject, relation, object (an entity id or a literal's text).
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
pub struct Fact(pub String, pub String, pub String);

impl Footprint {
    /// Adds what one batch of lookups read (LLM calls and embeddings read nothing of the KG).
    pub fn record(&mut self, requests: &[Request], responses: &[Response]) {
        for (request, response) in requests.iter().zip(responses) {
            match (request, response) {
                (Request::Relations { entity }, _) => {
                    self.relations_of.insert(entity.clone());
                }
                (Request::Neighbours { entity, relation }, Response::Neighbours { neighbours }) => {
                    self.neighbours.insert(Lookup(entity.clone(), relation.relation.clone(), relation.direction));
                    self.named.extend(neighbours.iter().filter_map(|n| match &n.term {
                        Term::Entity(id) => Some(id.clone()),
                        Term::Literal(_) => None,
                    }));
                }
                (Request::Neighbours { entity, relation }, _) => {
                    self.neighbours.insert(Lookup(entity.clone(), relation.relation.clone(), relation.direction));
                }
                (Request::FindEntities { name, .. }, response) => {
                    self.searched.insert(name.trim().to_lowercase());
                    if let Response::Entities { matches } = response {
                        self.named.extend(matches.iter().map(|m| m.id.clone()));
                    }
                }
                _ => {}
            }
        }
    }

    /// Sets the triples `answer` rests on: those of its paths that name an answer, else of
    /// every path it was given (an own-knowledge answer was still shown them).
    pub fn rest_on(&mut self, answer: &Answer) {
        let names: Vec<String> = answer.answers.iter().map(|a| a.trim().to_lowercase()).collect();
        let naming = |p: &&super::PathView| {
            p.triples.iter().any(|t| names.iter().any(|n| *n == t.tail.to_lowercase() || *n == t.head.to_lowercase()))
        };
        let supporting: Vec<&super::PathView> = answer.paths.iter().filter(naming).collect();
        let paths = if supporting.is_empty() { answer.paths.iter().collect() } else { supporting };
        self.rests_on = paths
            .into_iter()
            .flat_map(|p| &p.triples)
            .map(|t| Fact(t.head_term.as_str().to_string(), t.relation_id.clone(), t.tail_term.as_str().to_string()))
            .collect();
    }

    /// Every entity the run touched: looked up, shown, or on a path the answer rests on.
    pub fn entities(&self) -> impl Iterator<Item = &str> {
        self.relations_of
            .iter()
            .map(String::as_str)
            .chain(self.neighbours.iter().map(|l| l.0.as_str()))
            .chain(self.named.iter().map(String::as_str))
            .chain(self.rests_on.iter().flat_map(|f| [f.0.as_str(), f.2.as_str()]))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::kg::{EntityMatch, Neighbour, RelationRef};

    #[test]
    fn lookups_and_their_results_are_what_was_read() {
        let mut footprint = Footprint::default();
        footprint.record(
            &[
                Request::Relations { entity: "m.1".into() },
                Request::Neighbours { entity: "m.1".into(), relation: RelationRef::out("born_in") },
                Request::FindEntities { name: " Canberra ".into(), limit: 5 },
            ],
            &[
                Response::Relations { relations: vec![RelationRef::out("born_in")] },
                Response::Neighbours {
                    neighbours: vec![
                        Neighbour { term: Term::Entity("m.2".into()), label: None, correction: None },
                        Neighbour { term: Term::Literal("1900".into()), label: None, correction: None },
                    ],
                },
                Response::Entities {
                    matches: vec![EntityMatch { id: "m.3".into(), label: "Canberra".into(), score: 1.0, exact: true }],
                },
            ],
        );
        assert_eq!(footprint.relations_of, BTreeSet::from(["m.1".to_string()]));
        assert_eq!(footprint.neighbours, BTreeSet::from([Lookup("m.1".into(), "born_in".into(), Direction::Out)]));
        assert_eq!(footprint.searched, BTreeSet::from(["canberra".to_string()]));
        assert_eq!(footprint.named, BTreeSet::from(["m.2".to_string(), "m.3".to_string()]));
    }
}
