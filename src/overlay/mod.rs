//! The correction overlay: what users fix in a knowledge graph, kept apart from the graph.
//!
//! [`OverlayKg`] wraps any [`KnowledgeGraph`] and consults the corrections first in every call:
//! retracted triples never appear (in relations, neighbours or entity search), asserted triples
//! appear even where the backend lacks them (new relations, new entities), relabels apply
//! everywhere. Corrections apply oldest first (see [`in_order`]): when two touch the same triple,
//! the later one wins (a retract hides an earlier assert, an assert shows an earlier retract's
//! triple). A *scenario* (triples hidden to simulate an incomplete KG, as in GoG's IKG
//! datasets) is a second, in-memory layer that is never written into the user's corrections.

pub mod export;
pub mod scenario;
pub mod store;
pub mod team;
pub mod team_record;
pub mod team_state;

use crate::kg::{Direction, EntityMatch, KgError, KgProfile, KnowledgeGraph, Neighbour, RelationRef, Term};
use async_trait::async_trait;
use serde::{Deserialize, Serialize};
// hashbrown's default hasher is several times faster than SipHash on these short keys, and
// the overlay sits on every lookup's path.
use hashbrown::{HashMap, HashSet};
use std::sync::Arc;

/// What a correction changes.
#[derive(Clone, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(tag = "op", rename_all = "snake_case")]
pub enum Op {
    /// The triple is wrong: hide it.
    Retract { subject: String, relation: String, object: Term },
    /// The triple is missing: add it.
    Assert { subject: String, relation: String, object: Term },
    /// The entity's name is wrong: show this one.
    Relabel { entity: String, label: String },
    /// The triple's object is wrong and the right one is known: one correction (one undo) made
    /// of parts, applied and exported exactly as they would be alone: retract
    /// (subject, relation, old), assert (subject, relation, new) and, when `label` is given
    /// (`new` an entity new to the KG), assert `new`'s name through the KG's name predicate.
    Replace {
        subject: String,
        relation: String,
        old: Term,
        new: Term,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        label: Option<String>,
    },
}

impl Op {
    pub fn describe(&self) -> String {
        match self {
            Op::Retract { subject, relation, object } => format!("retract {subject} {relation} {object}"),
            Op::Assert { subject, relation, object } => format!("assert {subject} {relation} {object}"),
            Op::Relabel { entity, label } => format!("relabel {entity} as {label:?}"),
            Op::Replace { subject, relation, old, new, label } => {
                let named = label.as_ref().map(|l| format!(" named {l:?}")).unwrap_or_default();
                format!("replace {subject} {relation} {old} with {new}{named}")
            }
        }
    }

    /// What the correction does, as the simple corrections it stands for (itself, unless it
    /// is a replace). `name_predicate` is the relation a new entity's name is asserted
    /// through (the KG's first label predicate).
    pub fn parts(&self, name_predicate: &str) -> Vec<Op> {
        let Op::Replace { subject, relation, old, new, label } = self else { return vec![self.clone()] };
        let mut parts = vec![
            Op::Retract { subject: subject.clone(), relation: relation.clone(), object: old.clone() },
            Op::Assert { subject: subject.clone(), relation: relation.clone(), object: new.clone() },
        ];
        if let (Some(label), Term::Entity(entity)) = (label, new) {
            parts.push(Op::Assert {
                subject: entity.clone(),
                relation: name_predicate.to_string(),
                object: Term::Literal(label.clone()),
            });
        }
        parts
    }

    /// The triple this correction hides, if it hides one (a retract, or a replace's old
    /// object).
    pub fn retracted(&self) -> Option<(&str, &str, &Term)> {
        match self {
            Op::Retract { subject, relation, object } => Some((subject, relation, object)),
            Op::Replace { subject, relation, old, .. } => Some((subject, relation, old)),
            Op::Assert { .. } | Op::Relabel { .. } => None,
        }
    }

    /// The triple this correction adds, if it adds one (an assert, or a replace's new object;
    /// a replace's name aside).
    pub fn asserted(&self) -> Option<(&str, &str, &Term)> {
        match self {
            Op::Assert { subject, relation, object } => Some((subject, relation, object)),
            Op::Replace { subject, relation, new, .. } => Some((subject, relation, new)),
            Op::Retract { .. } | Op::Relabel { .. } => None,
        }
    }

    /// Checks every id the correction would store (see [`validate_id`]).
    pub fn validate_ids(&self) -> Result<(), String> {
        let object = |what: &str, t: &Term| match t {
            Term::Entity(id) => validate_id(what, id),
            Term::Literal(_) => Ok(()),
        };
        match self {
            Op::Retract { subject, relation, object: o } | Op::Assert { subject, relation, object: o } => {
                validate_id("subject", subject)?;
                validate_id("relation", relation)?;
                object("object", o)
            }
            Op::Relabel { entity, .. } => validate_id("entity", entity),
            Op::Replace { subject, relation, old, new, .. } => {
                validate_id("subject", subject)?;
                validate_id("relation", relation)?;
                object("old object", old)?;
                object("new object", new)
            }
        }
    }
}

/// The active `corrections` in the order they apply, oldest first. Without team corrections
/// that is the order of their ids, as it always was. With them, local ids say only when a record
/// arrived here, which differs from one teammate to the next: then every correction goes by
/// [`order_keys`], ties by record IRI (UUIDv7s sort by time too), so everyone applies the same
/// records in the same order.
pub fn in_order(corrections: &[Correction]) -> Vec<&Correction> {
    if !corrections.iter().any(|c| c.active && c.team.is_some()) {
        let mut active: Vec<&Correction> = corrections.iter().filter(|c| c.active).collect();
        active.sort_by_key(|c| c.id);
        return active;
    }
    let keys = order_keys(corrections);
    let mut active: Vec<(u128, &Correction)> =
        corrections.iter().zip(keys).filter(|(c, _)| c.active).map(|(c, k)| (k, c)).collect();
    active.sort_by_cached_key(|(k, c)| (*k, c.team.as_ref().map(|t| t.record.clone()).unwrap_or_default(), c.id));
    active.into_iter().map(|(_, c)| c).collect()
}

/// When each of `corrections` counts as made, for the order they apply in (milliseconds since
/// 1970): the time it was made (a pulled record's never later than when it arrived here, see
/// `take_pulled`), and never before the record it was based on: a correction made after seeing
/// another of the same target applies after it, for every reader, whatever time that other
/// one claims.
pub fn order_keys(corrections: &[Correction]) -> Vec<u128> {
    let made: Vec<u128> = corrections
        .iter()
        .map(|c| {
            team_record::parse_time(&c.created)
                .and_then(|t| t.duration_since(std::time::UNIX_EPOCH).ok())
                .map_or(0, |d| d.as_millis())
        })
        .collect();
    let by_record: HashMap<&str, usize> =
        corrections.iter().enumerate().filter_map(|(i, c)| c.team.as_ref().map(|t| (t.record.as_str(), i))).collect();
    let base = |i: usize| {
        corrections[i].team.as_ref().and_then(|t| t.based_on.as_deref()).and_then(|b| by_record.get(b).copied())
    };
    let mut keys: Vec<Option<u128>> = vec![None; corrections.len()];
    for start in 0..corrections.len() {
        // Down the chain of bases to one with a key (or none, or a loop a hostile record made),
        // then back up: no recursion, however long the chain.
        let mut chain = vec![start];
        let mut seen = HashSet::new();
        seen.insert(start);
        while let Some(b) = base(chain[chain.len() - 1]).filter(|b| keys[*b].is_none() && seen.insert(*b)) {
            chain.push(b);
        }
        for &i in chain.iter().rev() {
            if keys[i].is_some() {
                continue;
            }
            let after = base(i).and_then(|b| keys[b]).map_or(0, |k| k + 1);
            keys[i] = Some(made[i].max(after));
        }
    }
    keys.into_iter().map(|k| k.unwrap_or(0)).collect()
}

/// The triples the active `corrections` leave retracted (by a retract, or as a replace's old
/// object), applied oldest first as the overlay applies them: a triple a later correction
/// asserts again is not among them.
pub fn retracted_triples(corrections: &[Correction]) -> std::collections::HashSet<(String, String, Term)> {
    let active = in_order(corrections);
    let mut out = std::collections::HashSet::new();
    let owned = |(s, r, o): (&str, &str, &Term)| (s.to_string(), r.to_string(), o.clone());
    for c in active {
        if let Some(t) = c.op.retracted() {
            out.insert(owned(t));
        }
        if let Some(t) = c.op.asserted() {
            out.remove(&owned(t));
        }
    }
    out
}

/// Refuses a relabel that would change nothing: `current` is the name the entity is shown
/// under now (through the corrections), `wanted` the new one.
pub fn check_relabel(entity: &str, current: Option<&str>, wanted: &str) -> Result<(), String> {
    let wanted = wanted.trim();
    if wanted.is_empty() {
        return Err("the new name is empty".into());
    }
    if current.is_some_and(|c| c.trim() == wanted) {
        return Err(format!("{entity} is already named {wanted:?}: nothing to correct"));
    }
    Ok(())
}

/// Where a correction was made, when it was made while answering a question.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct CorrectionContext {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub question: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub session: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub step: Option<usize>,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct HistoryEntry {
    pub at: String,
    pub what: String,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Correction {
    pub id: u64,
    /// The knowledge graph it applies to (its scope).
    pub kg: String,
    #[serde(flatten)]
    pub op: Op,
    pub reason: String,
    /// Whether the correction stores a triple the LLM generated and a user accepted (GoG's
    /// `A`): `None` in a correction stored or exported before this mark existed, when its
    /// reason says so instead (see [`Correction::is_llm_generated`]). Never decided by what a
    /// user types as the reason.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub generated: Option<bool>,
    pub author: String,
    /// RFC 3339, UTC.
    pub created: String,
    pub active: bool,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub context: Option<CorrectionContext>,
    pub history: Vec<HistoryEntry>,
    /// Its record in a team's shared set, when it was made or pulled through one. A build that
    /// does not know the field ignores it (the correction still applies, as a local one).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub team: Option<TeamLink>,
}

/// A correction's record in a shared set (see [`team`]).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct TeamLink {
    /// The record's IRI (`urn:uuid:` and a UUIDv7): the same on every copy, so sending it twice
    /// is still one record, and pulling it twice one correction.
    pub record: String,
    /// The set's graph IRI.
    pub set: String,
    /// The latest record of the same target its author had when making it (Wikibase's
    /// `baserevid`): two records from the same base by different authors conflict.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub based_on: Option<String>,
    /// Whether the server has it (false: queued, still to be sent).
    pub shared: bool,
    /// Made elsewhere and pulled from the set.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub pulled: bool,
    /// Refused for good by the set's server, and why: kept here, no longer queued.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rejected: Option<String>,
    /// The store that made it (a random id per store; none from builds before it): what tells
    /// two authors of the same name apart.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub agent: Option<String>,
    /// Teammates' reviews, as their records arrived (the latest decides: see
    /// [`team_state::verdict`]).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub reviews: Vec<Review>,
}

/// A teammate's approval or rejection of a team correction: a record of its own.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Review {
    /// The review record's IRI.
    pub record: String,
    pub approve: bool,
    pub author: String,
    /// RFC 3339, UTC, to the millisecond.
    pub at: String,
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub reason: String,
    /// The reviewer's store (see [`TeamLink::agent`]).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub agent: Option<String>,
}

impl Review {
    /// "approved" or "rejected".
    pub fn verdict(&self) -> &'static str {
        if self.approve { "approved" } else { "rejected" }
    }
}

impl Correction {
    /// The reason on one line (a reason given in a shell may span several): its lines joined
    /// with " / ", for lists that show one correction per line.
    pub fn reason_line(&self) -> String {
        self.reason.lines().map(str::trim).filter(|l| !l.is_empty()).collect::<Vec<_>>().join(" / ")
    }

    /// Whether the correction stores an LLM-generated triple a user accepted: its mark, or
    /// for one stored before the mark existed, its reason (which then said so).
    pub fn is_llm_generated(&self) -> bool {
        self.generated.unwrap_or_else(|| legacy_generated(&self.reason))
    }
}

/// A correction before the store gives it an id and a time.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Draft {
    pub op: Op,
    pub reason: String,
    /// Whether it stores a triple the LLM generated and a user accepted (see
    /// [`Correction::generated`]). Sessions before format v2 lack it: their drafts are read
    /// with it set from the reason (`Session::parse`).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub generated: bool,
    pub author: String,
    pub context: Option<CorrectionContext>,
    /// The first history entry ("created" when `None`), e.g. "imported from FILE (was 12)".
    pub origin: Option<String>,
}

pub(crate) fn now() -> String {
    humantime::format_rfc3339_seconds(std::time::SystemTime::now()).to_string()
}

/// The author recorded on corrections: the configured one, else `$USER` (or `$LOGNAME`), else
/// [`NO_AUTHOR`].
pub fn default_author(configured: Option<&str>) -> String {
    configured
        .map(str::to_string)
        .or_else(|| {
            ["USER", "LOGNAME"].into_iter().find_map(|v| std::env::var(v).ok().filter(|u| !u.trim().is_empty()))
        })
        .unwrap_or_else(|| NO_AUTHOR.into())
}

/// The author of a correction made where no name was known: it reads as what it is beside a
/// reason ("unknown" read as an unknown reason).
pub const NO_AUTHOR: &str = "(no author set)";

/// What the reason of a correction starts with when it stores a triple the LLM generated and a
/// user accepted (GoG's `A` in the terminal UI). The correction's `generated` mark says so;
/// the reason only tells people, and marked corrections stored before the mark existed.
pub const GENERATED_BY_LLM: &str = "generated by the LLM";

/// The reason recorded on a correction storing a triple the LLM generated, accepted by `author`.
pub fn generated_reason(author: &str) -> String {
    format!("{GENERATED_BY_LLM}, accepted by {author}")
}

/// Whether a correction stored before the `generated` mark existed stores an LLM-generated
/// triple: then only its reason said so (every such correction had [`generated_reason`]).
pub(crate) fn legacy_generated(reason: &str) -> bool {
    reason.starts_with(GENERATED_BY_LLM)
}

/// Checks an entity or relation id before it is stored: no spaces, no characters that cannot
/// stand in an IRI (`<>"{}|^` and the backtick), not empty.
pub fn validate_id(what: &str, id: &str) -> Result<(), String> {
    if id.is_empty() {
        return Err(format!("the {what} is empty"));
    }
    if let Some(c) = id.chars().find(|c| c.is_whitespace() || c.is_control() || "<>\"{}|^`\\".contains(*c)) {
        return Err(format!("the {what} {id:?} is not a valid id or IRI (it contains {c:?})"));
    }
    // A blank node's label has a grammar of its own: written raw in exports, anything else in
    // it (`;`, `'`, `#`, `,`) would change what a patch says.
    if let Some(label) = id.strip_prefix("_:")
        && oxrdf::BlankNode::new(label).is_err()
    {
        return Err(format!("the {what} {id:?} is not a valid blank node (_: then letters, digits, _ - .)"));
    }
    Ok(())
}

/// What the corrections say about one node. Everything is kept per node so a lookup costs one
/// hash probe per node it touches, and nothing for the (vast majority of) untouched nodes.
#[derive(Clone, Debug, Default)]
struct Touch {
    relabel: Option<String>,
    /// Names asserted through a label predicate, oldest first: the last one shows.
    asserted_names: Vec<String>,
    /// (relation, direction) pairs with a hidden triple at this node.
    hidden: HashSet<(String, Direction)>,
    /// (relation, object, correction id) with this node as subject.
    asserted_out: Vec<(String, Term, u64)>,
    /// (relation, subject, correction id) with this node as object.
    asserted_in: Vec<(String, String, u64)>,
}

impl Touch {
    /// The name the corrections give the node, if they give one: a relabel, else the last
    /// name asserted.
    fn name(&self) -> Option<&String> {
        self.relabel.as_ref().or(self.asserted_names.last())
    }
}

/// The active corrections of one KG, indexed for lookups. Built by applying them oldest first,
/// so for each triple the latest correction wins: a retract hides what earlier corrections
/// asserted, an assert shows what earlier ones retracted (asserted triples are shown whatever
/// is hidden, so a scenario's hidden triples, added last, never hide what a user asserted).
#[derive(Clone, Debug, Default)]
struct View {
    nodes: HashMap<String, Touch>,
    hidden: HashSet<(String, String, Term)>,
}

impl View {
    /// A correction retracts (s, r, o): hidden from the backend, and no longer asserted by
    /// any earlier correction (as a triple or, through a label predicate, as a name).
    fn retract(&mut self, s: &str, r: &str, o: &Term, label_predicates: &[String]) {
        self.hide(s, r, o);
        if let Some(node) = self.nodes.get_mut(s) {
            node.asserted_out.retain(|(rel, obj, _)| !(rel == r && obj == o));
            if let Term::Literal(name) = o
                && label_predicates.iter().any(|p| p == r)
            {
                node.asserted_names.retain(|n| n != name);
            }
        }
        if let Term::Entity(obj) = o
            && let Some(node) = self.nodes.get_mut(obj.as_str())
        {
            node.asserted_in.retain(|(rel, subject, _)| !(rel == r && subject == s));
        }
    }

    /// Hides (s, r, o) from the backend's answers (what is asserted still shows).
    fn hide(&mut self, s: &str, r: &str, o: &Term) {
        self.hidden.insert((s.to_string(), r.to_string(), o.clone()));
        self.nodes.entry(s.to_string()).or_default().hidden.insert((r.to_string(), Direction::Out));
        if let Term::Entity(o) = o {
            self.nodes.entry(o.clone()).or_default().hidden.insert((r.to_string(), Direction::In));
        }
    }

    fn apply(&mut self, c: &Correction, label_predicates: &[String]) {
        self.apply_op(&c.op, c.id, label_predicates)
    }

    fn apply_op(&mut self, op: &Op, id: u64, label_predicates: &[String]) {
        match op {
            Op::Retract { subject, relation, object } => self.retract(subject, relation, object, label_predicates),
            // Its parts, all under its id; the name as an asserted name whatever the KG's
            // name predicates (a KG without one still shows the new entity's name).
            Op::Replace { new, label, .. } => {
                for part in op.parts("").into_iter().take(2) {
                    self.apply_op(&part, id, label_predicates);
                }
                if let (Some(label), Term::Entity(entity)) = (label, new) {
                    self.nodes.entry(entity.clone()).or_default().asserted_names.push(label.clone());
                }
            }
            Op::Assert { subject, relation, object } => {
                let node = self.nodes.entry(subject.clone()).or_default();
                match object {
                    Term::Literal(name) if label_predicates.contains(relation) => {
                        node.asserted_names.push(name.clone())
                    }
                    _ => node.asserted_out.push((relation.clone(), object.clone(), id)),
                }
                if let Term::Entity(o) = object {
                    self.nodes.entry(o.clone()).or_default().asserted_in.push((relation.clone(), subject.clone(), id));
                }
            }
            Op::Relabel { entity, label } => {
                self.nodes.entry(entity.clone()).or_default().relabel = Some(label.clone())
            }
        }
    }

    /// Whether (s, r, o) is hidden, given what the corrections say about `s`. `o` is built
    /// only when `s` has something hidden through `r` (rare), so the common case allocates
    /// nothing.
    fn is_hidden(&self, touch: Option<&Touch>, s: &str, r: &str, dir: Direction, o: impl FnOnce() -> Term) -> bool {
        touch.is_some_and(|t| t.hidden.iter().any(|(rel, d)| rel == r && *d == dir))
            && match dir {
                Direction::Out => self.hidden.contains(&(s.to_string(), r.to_string(), o())),
                // For an incoming edge, `s` is the object: the stored triple is (o, r, s).
                Direction::In => {
                    self.hidden.contains(&(o().as_str().to_string(), r.to_string(), Term::Entity(s.to_string())))
                }
            }
    }
}

/// A knowledge graph seen through corrections (and, optionally, a scenario).
pub struct OverlayKg {
    inner: Arc<dyn KnowledgeGraph>,
    view: View,
    corrections: usize,
}

impl OverlayKg {
    /// Wraps `inner` with the active ones among `corrections`.
    pub fn new(inner: Arc<dyn KnowledgeGraph>, corrections: &[Correction]) -> Self {
        let mut view = View::default();
        // Oldest first, whatever the order given: the later correction of a triple wins.
        let active = in_order(corrections);
        let predicates = inner.profile().label_predicates.clone();
        for c in &active {
            view.apply(c, &predicates);
        }
        Self { inner, view, corrections: active.len() }
    }

    /// Adds a scenario: triples hidden for this run only (never stored as corrections). It
    /// hides the backend's triples, never what a correction asserted (a user who restored a
    /// fact the scenario removes sees it).
    pub fn with_hidden(mut self, triples: &[(String, String, Term)]) -> Self {
        for (s, r, o) in triples {
            self.view.hide(s, r, o);
        }
        self
    }

    /// How many active corrections apply.
    pub fn active_corrections(&self) -> usize {
        self.corrections
    }

    /// The backend's relations of `entity` as the corrections see them.
    async fn adjust_relations(&self, entity: &str, base: Vec<RelationRef>) -> Result<Vec<RelationRef>, KgError> {
        let Some(touch) = self.view.nodes.get(entity) else { return Ok(base) };
        let mut out = Vec::with_capacity(base.len());
        for r in base {
            // A relation whose every triple is retracted disappears.
            let touched = touch.hidden.iter().any(|(rel, d)| *rel == r.relation && *d == r.direction);
            if touched && self.neighbours(entity, &r).await?.is_empty() {
                continue;
            }
            out.push(r);
        }
        let profile = self.inner.profile();
        let asserted_out = touch.asserted_out.iter().map(|(r, _, _)| RelationRef::out(r));
        let asserted_in = touch.asserted_in.iter().map(|(r, _, _)| RelationRef::incoming(r));
        for r in asserted_out.chain(asserted_in) {
            if profile.is_informative(&r.relation) && !out.contains(&r) {
                out.push(r);
            }
        }
        Ok(out)
    }

    /// The backend's neighbours through (entity, relation) as the corrections see them.
    async fn adjust_neighbours(
        &self,
        entity: &str,
        relation: &RelationRef,
        mut out: Vec<Neighbour>,
    ) -> Result<Vec<Neighbour>, KgError> {
        let r = relation.relation.as_str();
        let dir = relation.direction;
        if self.view.nodes.is_empty() {
            return Ok(out);
        }
        let here = self.view.nodes.get(entity);
        out.retain(|n| !self.view.is_hidden(here, entity, r, dir, || n.term.clone()));
        let asserted: Vec<(Term, u64)> = match (here, dir) {
            (None, _) => Vec::new(),
            (Some(t), Direction::Out) => {
                t.asserted_out.iter().filter(|(rel, _, _)| rel == r).map(|(_, o, id)| (o.clone(), *id)).collect()
            }
            (Some(t), Direction::In) => t
                .asserted_in
                .iter()
                .filter(|(rel, _, _)| rel == r)
                .map(|(_, s, id)| (Term::Entity(s.clone()), *id))
                .collect(),
        };
        for (term, id) in asserted {
            if let Some(existing) = out.iter_mut().find(|n| n.term == term) {
                existing.correction.get_or_insert(id);
                continue;
            }
            let label = match &term {
                Term::Literal(v) => Some(v.clone()),
                Term::Entity(e) => self.inner.label(e).await?,
            };
            out.push(Neighbour { term, label, correction: Some(id) });
        }
        for n in &mut out {
            if let Term::Entity(e) = &n.term
                && let Some(touch) = self.view.nodes.get(e.as_str())
            {
                n.label = self.label_of(e, Some(touch), n.label.take());
            }
        }
        Ok(out)
    }

    /// A node's label as corrections see it: a relabel, else an asserted name, else the
    /// backend's (unless that name triple was retracted).
    fn label_of(&self, entity: &str, touch: Option<&Touch>, backend: Option<String>) -> Option<String> {
        let Some(t) = touch else { return backend };
        if let Some(l) = t.name() {
            return Some(l.clone());
        }
        let backend = backend?;
        let predicates = &self.inner.profile().label_predicates;
        let retracted = predicates
            .iter()
            .any(|p| self.view.is_hidden(touch, entity, p, Direction::Out, || Term::Literal(backend.clone())));
        (!retracted).then_some(backend)
    }
}

#[async_trait]
impl KnowledgeGraph for OverlayKg {
    fn name(&self) -> &str {
        self.inner.name()
    }
    fn profile(&self) -> &KgProfile {
        self.inner.profile()
    }
    fn id_namespaces(&self) -> Option<crate::kg::sparql::Namespaces> {
        self.inner.id_namespaces()
    }
    fn example_fact(&self) -> Option<(String, String)> {
        self.inner.example_fact()
    }

    async fn relations(&self, entity: &str) -> Result<Vec<RelationRef>, KgError> {
        let base = self.inner.relations(entity).await?;
        self.adjust_relations(entity, base).await
    }

    /// Batches pass through to the backend; the corrections apply per entity.
    async fn relations_many(&self, entities: &[String]) -> Result<Vec<Vec<RelationRef>>, KgError> {
        let mut out = Vec::with_capacity(entities.len());
        for (e, base) in entities.iter().zip(self.inner.relations_many(entities).await?) {
            out.push(self.adjust_relations(e, base).await?);
        }
        Ok(out)
    }

    async fn neighbours_many(&self, pairs: &[(String, RelationRef)]) -> Result<Vec<Vec<Neighbour>>, KgError> {
        let mut out = Vec::with_capacity(pairs.len());
        for ((e, r), base) in pairs.iter().zip(self.inner.neighbours_many(pairs).await?) {
            out.push(self.adjust_neighbours(e, r, base).await?);
        }
        Ok(out)
    }

    async fn neighbours(&self, entity: &str, relation: &RelationRef) -> Result<Vec<Neighbour>, KgError> {
        let base = self.inner.neighbours(entity, relation).await?;
        self.adjust_neighbours(entity, relation, base).await
    }

    async fn label(&self, entity: &str) -> Result<Option<String>, KgError> {
        let backend = self.inner.label(entity).await?;
        Ok(self.label_of(entity, self.view.nodes.get(entity), backend))
    }

    async fn find_entities(&self, name: &str, limit: usize) -> Result<Vec<EntityMatch>, KgError> {
        let wanted = name.trim().to_lowercase();
        let mut found: Vec<EntityMatch> = Vec::new();
        for mut m in self.inner.find_entities(name, limit.saturating_mul(2).max(limit + 5)).await? {
            match self.label_of(&m.id, self.view.nodes.get(m.id.as_str()), Some(m.label.clone())) {
                None => continue,
                Some(label) if label != m.label => {
                    // Relabelled: it matches only as well as its new name does.
                    let similarity = crate::kg::name_similarity(&label, &wanted);
                    m.exact = label.to_lowercase() == wanted;
                    m.score = if m.exact { 1.0 } else { similarity * 0.99 };
                    m.label = label;
                    if !m.exact && similarity < crate::kg::CLOSE_NAME_MIN {
                        continue;
                    }
                }
                Some(_) => {}
            }
            found.push(m);
        }
        // Names that exist only in corrections.
        let overlay_names = self.view.nodes.iter().filter_map(|(e, t)| t.name().map(|l| (e.clone(), l.clone())));
        for (entity, label) in overlay_names {
            if found.iter().any(|m| m.id == entity) {
                continue;
            }
            let similarity = crate::kg::name_similarity(&label, &wanted);
            let exact = label.to_lowercase() == wanted;
            if exact || similarity >= crate::kg::CLOSE_NAME_MIN {
                found.push(EntityMatch {
                    id: entity,
                    label,
                    score: if exact { 1.0 } else { similarity * 0.99 },
                    exact,
                });
            }
        }
        found.sort_by(|a, b| b.exact.cmp(&a.exact).then(b.score.total_cmp(&a.score)).then(a.id.cmp(&b.id)));
        found.truncate(limit);
        Ok(found)
    }

    fn network(&self) -> crate::kg::NetworkStats {
        self.inner.network()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn correction(id: u64, op: Op) -> Correction {
        Correction {
            id,
            kg: "demo".into(),
            op,
            reason: "test".into(),
            generated: None,
            author: "tester".into(),
            created: "2026-11-22T00:00:00Z".into(),
            active: true,
            context: None,
            history: vec![],
            team: None,
        }
    }

    #[test]
    fn a_triple_asserted_again_later_is_no_longer_retracted() {
        let o = |id: &str| Term::Entity(id.into());
        let retract = |id, object: &str| {
            correction(id, Op::Retract { subject: "s".into(), relation: "r".into(), object: o(object) })
        };
        let assert = |id, object: &str| {
            correction(id, Op::Assert { subject: "s".into(), relation: "r".into(), object: o(object) })
        };
        let replace = correction(
            3,
            Op::Replace { subject: "s".into(), relation: "r".into(), old: o("b"), new: o("c"), label: None },
        );
        let triple = |object: &str| ("s".to_string(), "r".to_string(), o(object));
        // a: retracted, then asserted again (given out of order); b: replaced by c.
        let list = [assert(2, "a"), retract(1, "a"), replace.clone()];
        assert_eq!(retracted_triples(&list), [triple("b")].into_iter().collect());
        // c retracted after the replace asserted it; a asserted, then retracted for good.
        let list = [assert(1, "a"), retract(2, "a"), replace, retract(4, "c")];
        assert_eq!(retracted_triples(&list), [triple("a"), triple("b"), triple("c")].into_iter().collect());
        // An undone retract retracts nothing.
        let mut undone = retract(5, "d");
        undone.active = false;
        assert!(retracted_triples(&[undone]).is_empty());
    }

    /// How a build without the `generated` mark reads a correction that has it (a store or an
    /// export shared with an older ongraph): the field is ignored, not an error.
    #[test]
    fn a_field_this_build_does_not_know_is_ignored() {
        let json = r#"{"id":1,"kg":"demo","op":"retract","subject":"s","relation":"r","object":{"kind":"entity","value":"o"},"reason":"x","marked_later":true,"author":"t","created":"c","active":true,"history":[]}"#;
        let c: Correction = serde_json::from_str(json).map_err(|e| e.to_string()).unwrap();
        assert_eq!((c.id, c.generated, c.is_llm_generated()), (1, None, false));
    }
}
