//! What a correction's sharing is, computed when reading (never stored): local, pending (queued
//! here, not on the server yet), shared, or in conflict — two records of the same target made
//! from the same base by different authors, neither undone nor superseded.

use crate::kg::Term;
use crate::overlay::{Correction, Op, Review, TeamLink};
use serde::Serialize;
use std::collections::BTreeMap;

/// What a correction targets, for finding its base and its conflicts: the triple it changes
/// (a replace's old one), or the entity it renames.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum Target {
    Triple(String, String, Term),
    Name(String),
}

impl Target {
    pub fn of(op: &Op) -> Self {
        match op {
            Op::Retract { subject, relation, object } | Op::Assert { subject, relation, object } => {
                Target::Triple(subject.clone(), relation.clone(), object.clone())
            }
            Op::Replace { subject, relation, old, .. } => {
                Target::Triple(subject.clone(), relation.clone(), old.clone())
            }
            Op::Relabel { entity, .. } => Target::Name(entity.clone()),
        }
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Sharing {
    /// Not in a shared set.
    Local,
    /// Queued here: not on the server yet.
    Pending,
    Shared,
    /// Made from the same base as another author's correction of the same target.
    Conflict,
    /// Refused for good by the set's server: not shared (it still applies here).
    Rejected,
}

impl Sharing {
    pub fn label(self) -> &'static str {
        match self {
            Sharing::Local => "local",
            Sharing::Pending => "pending",
            Sharing::Shared => "shared",
            Sharing::Conflict => "conflict",
            Sharing::Rejected => "rejected",
        }
    }
}

/// A correction's sharing and, in a conflict, the corrections it conflicts with (by id).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct State {
    pub sharing: Sharing,
    pub conflicts_with: Vec<u64>,
}

/// The state of each of `corrections` (one scope's), in the same order.
pub fn states(corrections: &[Correction]) -> Vec<State> {
    // Active team corrections by (set, target, base).
    let mut groups: BTreeMap<(&str, Target, Option<&str>), Vec<usize>> = BTreeMap::new();
    for (i, c) in corrections.iter().enumerate() {
        if let Some(team) = c.team.as_ref().filter(|_| c.active) {
            groups.entry((team.set.as_str(), Target::of(&c.op), team.based_on.as_deref())).or_default().push(i);
        }
    }
    let mut out: Vec<State> = corrections
        .iter()
        .map(|c| State {
            sharing: match &c.team {
                None => Sharing::Local,
                Some(t) if t.rejected.is_some() => Sharing::Rejected,
                Some(t) if t.shared => Sharing::Shared,
                Some(_) => Sharing::Pending,
            },
            conflicts_with: Vec::new(),
        })
        .collect();
    for members in groups.values() {
        for &i in members {
            let others: Vec<u64> = members
                .iter()
                .filter(|&&j| different_authors(&corrections[i], &corrections[j]))
                .map(|&j| corrections[j].id)
                .collect();
            if !others.is_empty() {
                out[i] = State { sharing: Sharing::Conflict, conflicts_with: others };
            }
        }
    }
    out
}

/// Whether two corrections were made by different people: by their stores' agent ids when both
/// have one (two people may share a name), else by their authors' names.
fn different_authors(a: &Correction, b: &Correction) -> bool {
    fn agent(c: &Correction) -> Option<&str> {
        c.team.as_ref().and_then(|t| t.agent.as_deref())
    }
    match (agent(a), agent(b)) {
        (Some(x), Some(y)) => x != y,
        _ => a.author != b.author,
    }
}

/// The review that decides a team correction's fate: the latest (by its time, then its record
/// IRI, so every reader picks the same one), whoever made the earlier ones. A review from the
/// correction's own store never counts (a pull keeps such reviews out: this covers those
/// pulled before it did).
pub fn verdict(link: &TeamLink) -> Option<&Review> {
    let own = |r: &&Review| r.agent.is_some() && r.agent == link.agent;
    link.reviews.iter().filter(|r| !own(r)).max_by(|a, b| {
        let key = |r: &Review| (super::team_record::parse_time(&r.at), r.record.clone());
        key(a).cmp(&key(b))
    })
}

/// The record a new correction of `op` in `set` is based on: the latest record of the same
/// target here (undone ones too: its author saw them).
pub fn base_for(corrections: &[Correction], set: &str, op: &Op) -> Option<String> {
    let target = Target::of(op);
    let keys = crate::overlay::order_keys(corrections);
    corrections
        .iter()
        .zip(keys)
        .filter(|(c, _)| c.team.as_ref().is_some_and(|t| t.set == set) && Target::of(&c.op) == target)
        .max_by_key(|(c, key)| (*key, c.team.as_ref().map(|t| t.record.clone())))
        .and_then(|(c, _)| c.team.as_ref().map(|t| t.record.clone()))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn team(id: u64, author: &str, created: &str, base: Option<&str>) -> Correction {
        Correction {
            id,
            kg: "demo".into(),
            op: Op::Relabel { entity: "m.x".into(), label: format!("by {author}") },
            reason: "r".into(),
            generated: Some(false),
            author: author.into(),
            created: created.into(),
            active: true,
            context: None,
            history: Vec::new(),
            team: Some(TeamLink {
                record: format!("urn:uuid:{id}"),
                set: "http://example.org/c".into(),
                based_on: base.map(str::to_string),
                shared: true,
                pulled: false,
                rejected: None,
                agent: None,
                reviews: Vec::new(),
            }),
        }
    }

    #[test]
    fn the_same_target_from_the_same_base_by_two_authors_conflicts() {
        let first = team(1, "Ada", "2026-11-25T10:00:00.000Z", None);
        let ada = team(2, "Ada", "2026-11-25T10:01:00.000Z", Some("urn:uuid:1"));
        let bea = team(3, "Bea", "2026-11-25T10:01:00.500Z", Some("urn:uuid:1"));
        let list = [first.clone(), ada.clone(), bea.clone()];
        let s = states(&list);
        assert_eq!(s[0], State { sharing: Sharing::Shared, conflicts_with: vec![] });
        assert_eq!(s[1], State { sharing: Sharing::Conflict, conflicts_with: vec![3] });
        assert_eq!(s[2], State { sharing: Sharing::Conflict, conflicts_with: vec![2] });
        assert_eq!(base_for(&list, "http://example.org/c", &ada.op).as_deref(), Some("urn:uuid:3"));

        // One author twice from the same base is not a conflict; nor is one set aside.
        let mut again = bea.clone();
        again.author = "Ada".into();
        assert!(states(&[first.clone(), ada.clone(), again]).iter().all(|s| s.sharing == Sharing::Shared));
        let mut superseded = bea;
        superseded.active = false;
        assert!(states(&[first.clone(), ada, superseded]).iter().all(|s| s.sharing == Sharing::Shared));
    }

    #[test]
    fn two_people_of_the_same_name_are_told_apart_by_their_stores() {
        let with_agent = |id: u64, created: &str, base: Option<&str>, agent: &str| {
            let mut c = team(id, "root", created, base);
            c.team.as_mut().unwrap().agent = Some(agent.into());
            c
        };
        let first = with_agent(1, "2026-11-25T10:00:00.000Z", None, "a");
        let one = with_agent(2, "2026-11-25T10:01:00.000Z", Some("urn:uuid:1"), "a");
        let other = with_agent(3, "2026-11-25T10:01:00.500Z", Some("urn:uuid:1"), "b");
        let s = states(&[first.clone(), one.clone(), other]);
        assert_eq!((s[1].sharing, s[2].sharing), (Sharing::Conflict, Sharing::Conflict));
        // The same store twice is one author, whatever the names say.
        let mut renamed = with_agent(3, "2026-11-25T10:01:00.500Z", Some("urn:uuid:1"), "a");
        renamed.author = "Root".into();
        assert!(states(&[first, one, renamed]).iter().all(|s| s.sharing == Sharing::Shared));
    }
}
