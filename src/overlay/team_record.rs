//! A team record as RDF: what one correction (or an undo or supersede of one) says, written as
//! one `INSERT DATA { GRAPH <set> { … } }` and read back from a SELECT's rows. Records are
//! append-only: a record is never changed after it is written, and its IRI (a UUIDv7 URN) makes
//! writing it twice still one record. Every IRI is written in full (Oxigraph up to 0.5.13
//! refuses prefixed names with two dots) and every string goes through `syntax`, the one place
//! text becomes SPARQL.

use crate::kg::Term;
use crate::kg::sparql::syntax;
use crate::overlay::{CorrectionContext, Op};
use serde::{Deserialize, Serialize};
use sparesults::QuerySolution;
use std::collections::BTreeMap;

/// The record vocabulary's namespace.
const NS: &str = "urn:ongraph:ns:";
const RDF_TYPE: &str = "http://www.w3.org/1999/02/22-rdf-syntax-ns#type";
const PROV_ATTRIBUTED: &str = "http://www.w3.org/ns/prov#wasAttributedTo";
const PROV_GENERATED_AT: &str = "http://www.w3.org/ns/prov#generatedAtTime";
const XSD: &str = "http://www.w3.org/2001/XMLSchema#";
/// Authors are agents: `urn:ongraph:agent:` and the name, percent-encoded (so any name is an IRI).
const AGENT: &str = "urn:ongraph:agent:";

/// What a record does.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum Kind {
    /// A correction of the KG.
    Correction {
        #[serde(flatten)]
        op: Op,
    },
    /// Takes back a correction (its author's or anyone's).
    Undo { target: String },
    /// Sets a correction aside in favour of the one it conflicts with.
    Supersede { target: String },
    /// A teammate's review: the correction is right.
    Approve { target: String },
    /// A teammate's review: the correction is wrong.
    Reject { target: String },
}

impl Kind {
    fn class(&self) -> &'static str {
        match self {
            Kind::Correction { .. } => "Correction",
            Kind::Undo { .. } => "Undo",
            Kind::Supersede { .. } => "Supersede",
            Kind::Approve { .. } => "Approve",
            Kind::Reject { .. } => "Reject",
        }
    }
}

/// One record of a shared set.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Record {
    /// `urn:uuid:` and a UUIDv7.
    pub iri: String,
    #[serde(flatten)]
    pub kind: Kind,
    /// The KG it applies to (the overlay's scope: `demo`, a `[kg.NAME]`).
    pub kg: String,
    pub author: String,
    /// When it was made: RFC 3339, UTC, to the millisecond.
    pub created: String,
    pub reason: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub context: Option<CorrectionContext>,
    /// Whether it stores a triple the LLM generated (and a user accepted).
    #[serde(default)]
    pub generated: bool,
    /// The latest record of the same target its author had (corrections only).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub based_on: Option<String>,
    /// The store that made it (a random id per store): two people with the same name (two
    /// `root`s) are still two authors when conflicts are found.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub agent: Option<String>,
}

/// A new record IRI: UUIDv7s sort by the time they were made.
pub fn new_iri() -> String {
    format!("urn:uuid:{}", uuid::Uuid::now_v7())
}

/// Now, as records write times: RFC 3339, UTC, milliseconds.
pub fn now_millis() -> String {
    humantime::format_rfc3339_millis(std::time::SystemTime::now()).to_string()
}

#[derive(Debug, thiserror::Error)]
pub enum RecordError {
    #[error("record {iri}: {detail}")]
    Malformed { iri: String, detail: String },
    /// A record that breaks a rule every reader keeps to (see [`Skip`]).
    #[error("record {iri}: {detail}")]
    Breaks { iri: String, detail: String, rule: Skip },
}

impl RecordError {
    /// Which kind of skip this is, for the one line a pull says per kind.
    pub fn skip(&self) -> Skip {
        match self {
            RecordError::Malformed { .. } => Skip::Malformed,
            RecordError::Breaks { rule, .. } => *rule,
        }
    }
}

/// The longest value (a literal's characters, an IRI's) a record may hold. Readers ask the
/// server for longer ones cut to nothing (with their length), so one teammate's 9 MB label
/// never reaches anyone's memory, and the record is skipped.
pub const MAX_VALUE: usize = 16_384;

/// The most characters a record may hold in all its values (see [`MAX_VALUE`]): with
/// [`MAX_TRIPLES`], what bounds the memory a batch of records takes.
pub const MAX_RECORD: usize = 65_536;

/// The most triples a record may have, its publication stamps aside (a record has about 20):
/// what bounds the rows a pull reads per record, whatever a teammate wrote.
pub const MAX_TRIPLES: usize = 64;

/// Why a pulled record was not taken in: said once per kind after a pull, and kept in the
/// store so the record is not fetched again at every pull (`fix sync --full` tries again).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Skip {
    /// A value longer than [`MAX_VALUE`].
    TooLong,
    /// More triples than [`MAX_TRIPLES`].
    TooMany,
    /// A field a record has once, given more than once (two labels: which one applies?).
    Repeated,
    /// A field missing, of the wrong kind, or not what ongraph writes.
    Malformed,
}

impl Skip {
    /// Why, as the end of "skipped N records from SET: …".
    pub fn why(self) -> String {
        match self {
            Skip::TooLong => format!("a value longer than {MAX_VALUE} characters, or more than {MAX_RECORD} in all"),
            Skip::TooMany => format!("more than {MAX_TRIPLES} values"),
            Skip::Repeated => "a field given more than once".into(),
            Skip::Malformed => "not a well-formed record (a field missing or not what ongraph writes)".into(),
        }
    }
}

fn ns(term: &str) -> String {
    format!("<{NS}{term}>")
}

fn typed(value: &str, datatype: &str) -> String {
    format!("{}^^<{XSD}{datatype}>", syntax::literal(value))
}

/// The author as an agent IRI: every byte but unreserved ones percent-encoded.
fn agent_iri(author: &str) -> String {
    let mut out = String::from(AGENT);
    for b in author.bytes() {
        if b.is_ascii_alphanumeric() || b"-._~".contains(&b) {
            out.push(b as char);
        } else {
            out.push_str(&format!("%{b:02X}"));
        }
    }
    out
}

/// The author an agent IRI names, if it is one of ours.
fn agent_name(iri: &str) -> Option<String> {
    let encoded = iri.strip_prefix(AGENT)?;
    let mut bytes = Vec::with_capacity(encoded.len());
    let mut rest = encoded.as_bytes();
    while let Some((&b, tail)) = rest.split_first() {
        if b == b'%' {
            let hex = std::str::from_utf8(tail.get(..2)?).ok()?;
            bytes.push(u8::from_str_radix(hex, 16).ok()?);
            rest = &tail[2..];
        } else {
            bytes.push(b);
            rest = tail;
        }
    }
    String::from_utf8(bytes).ok()
}

/// A term as the value of `key` and the kind beside it in `kind_key`.
fn term_parts(term: &Term) -> (&str, &'static str) {
    match term {
        Term::Entity(id) => (id, "entity"),
        Term::Literal(value) => (value, "literal"),
    }
}

impl Record {
    /// The record's triples: `(predicate, object)` as SPARQL text, its IRIs checked.
    fn triples(&self) -> Result<Vec<(String, String)>, RecordError> {
        let bad = |detail: String| RecordError::Malformed { iri: self.iri.clone(), detail };
        let iri = |text: &str| syntax::iri(text).map_err(bad);
        let lit = |text: &str| syntax::literal(text);
        let mut out = vec![
            (format!("<{RDF_TYPE}>"), ns(self.kind.class())),
            (ns("kg"), lit(&self.kg)),
            (format!("<{PROV_ATTRIBUTED}>"), iri(&agent_iri(&self.author))?),
            (format!("<{PROV_GENERATED_AT}>"), typed(&self.created, "dateTime")),
            (ns("reason"), lit(&self.reason)),
            (ns("llmGenerated"), typed(if self.generated { "true" } else { "false" }, "boolean")),
        ];
        if let Some(agent) = &self.agent {
            out.push((ns("agentId"), lit(agent)));
        }
        let mut term = |key: &str, t: &Term| {
            let (value, kind) = term_parts(t);
            out.push((ns(key), lit(value)));
            out.push((ns(&format!("{key}Kind")), lit(kind)));
        };
        match &self.kind {
            Kind::Correction { op } => {
                op.validate_ids().map_err(bad)?;
                let name = match op {
                    Op::Retract { .. } => "retract",
                    Op::Assert { .. } => "assert",
                    Op::Relabel { .. } => "relabel",
                    Op::Replace { .. } => "replace",
                };
                match op {
                    Op::Retract { subject, relation, object } | Op::Assert { subject, relation, object } => {
                        term("object", object);
                        out.push((ns("subject"), lit(subject)));
                        out.push((ns("relation"), lit(relation)));
                    }
                    Op::Replace { subject, relation, old, new, label } => {
                        term("object", old);
                        term("newObject", new);
                        out.push((ns("subject"), lit(subject)));
                        out.push((ns("relation"), lit(relation)));
                        if let Some(label) = label {
                            out.push((ns("label"), lit(label)));
                        }
                    }
                    Op::Relabel { entity, label } => {
                        out.push((ns("subject"), lit(entity)));
                        out.push((ns("label"), lit(label)));
                    }
                }
                out.push((ns("operation"), lit(name)));
                if let Some(base) = &self.based_on {
                    out.push((ns("basedOn"), iri(base)?));
                }
            }
            Kind::Undo { target } | Kind::Supersede { target } | Kind::Approve { target } | Kind::Reject { target } => {
                out.push((ns("target"), iri(target)?))
            }
        }
        if let Some(context) = &self.context {
            if let Some(q) = &context.question {
                out.push((ns("question"), lit(q)));
            }
            if let Some(s) = &context.session {
                out.push((ns("session"), lit(s)));
            }
            if let Some(step) = context.step {
                out.push((ns("step"), typed(&step.to_string(), "integer")));
            }
        }
        // What every reader would skip (see `MAX_VALUE`) is not sent: it is refused here.
        if let Some(what) = self.too_long() {
            return Err(RecordError::Breaks {
                iri: self.iri.clone(),
                detail: format!("{what}: teammates would skip it"),
                rule: Skip::TooLong,
            });
        }
        Ok(out)
    }

    /// Which of the record's values is longer than [`MAX_VALUE`] (as readers measure them: a
    /// literal's characters, an IRI's), or whether all of them hold more than [`MAX_RECORD`].
    fn too_long(&self) -> Option<String> {
        let mut values: Vec<(&'static str, String)> = vec![
            ("IRI", self.iri.clone()),
            ("kg", self.kg.clone()),
            ("author", agent_iri(&self.author)),
            ("reason", self.reason.clone()),
        ];
        for (what, value) in [("agentId", &self.agent), ("basedOn", &self.based_on)] {
            values.extend(value.clone().map(|v| (what, v)));
        }
        if let Some(context) = &self.context {
            values.extend(context.question.clone().map(|v| ("question", v)));
            values.extend(context.session.clone().map(|v| ("session", v)));
        }
        match &self.kind {
            Kind::Correction { op } => {
                let (subject, relation, objects, label) = match op {
                    Op::Retract { subject, relation, object } | Op::Assert { subject, relation, object } => {
                        (subject, Some(relation), vec![object], None)
                    }
                    Op::Replace { subject, relation, old, new, label } => {
                        (subject, Some(relation), vec![old, new], label.as_ref())
                    }
                    Op::Relabel { entity, label } => (entity, None, vec![], Some(label)),
                };
                values.push(("subject", subject.clone()));
                values.extend(relation.map(|r| ("relation", r.clone())));
                values.extend(objects.into_iter().map(|o| ("object", term_parts(o).0.to_string())));
                values.extend(label.map(|l| ("label", l.clone())));
            }
            Kind::Undo { target } | Kind::Supersede { target } | Kind::Approve { target } | Kind::Reject { target } => {
                values.push(("target", target.clone()))
            }
        }
        if let Some((what, _)) = values.iter().find(|(_, v)| v.chars().count() > MAX_VALUE) {
            return Some(format!("its {what} is longer than {MAX_VALUE} characters"));
        }
        // Readers count the few small values not listed here too (its type, time, kinds).
        let total: usize = values.iter().map(|(_, v)| v.chars().count()).sum();
        (total > MAX_RECORD - 1024).then(|| format!("its values hold more than {MAX_RECORD} characters in all"))
    }

    /// The one update that publishes the record in `graph`, stamped `published` (the time it is
    /// sent, by which readers find what is new). Sending it again adds nothing but another
    /// stamp: the record is still one resource, read once.
    pub fn insert_data(&self, graph: &str, published: &str) -> Result<String, RecordError> {
        let graph = syntax::iri(graph).map_err(|detail| RecordError::Malformed { iri: self.iri.clone(), detail })?;
        let subject =
            syntax::iri(&self.iri).map_err(|detail| RecordError::Malformed { iri: self.iri.clone(), detail })?;
        let mut text = format!("INSERT DATA {{ GRAPH {graph} {{\n");
        let mut triples = self.triples()?;
        triples.push((ns("publishedAt"), typed(published, "dateTime")));
        for (p, o) in triples {
            text.push_str(&format!("  {subject} {p} {o} .\n"));
        }
        text.push_str("} }");
        Ok(text)
    }
}

/// The fields of a record: the name [`Gathered`] keeps a value under, and its predicate.
const FIELDS: [(&str, &str); 20] = [
    ("kg", "kg"),
    ("op", "operation"),
    ("s", "subject"),
    ("rel", "relation"),
    ("o", "object"),
    ("ok", "objectKind"),
    ("n", "newObject"),
    ("nk", "newObjectKind"),
    ("label", "label"),
    ("reason", "reason"),
    ("gen", "llmGenerated"),
    ("base", "basedOn"),
    ("target", "target"),
    ("question", "question"),
    ("session", "session"),
    ("step", "step"),
    ("agent", "agentId"),
    ("author", PROV_ATTRIBUTED),
    ("at", PROV_GENERATED_AT),
    ("type", RDF_TYPE),
];

/// The field a predicate IRI holds, if it is one of a record's.
fn field(predicate: &str) -> Option<&'static str> {
    FIELDS
        .iter()
        .find(|(_, p)| predicate.strip_prefix(NS).map_or(*p == predicate, |local| *p == local))
        .map(|(f, _)| *f)
}

/// Rows read per page of [`select_published`] when it is paged (see there).
pub const PAGE: usize = 5000;

/// Records read per query of [`select_records`].
pub const DETAIL: usize = 500;

/// Which `?r publishedAt ?sent` are publications of records: IRIs and times of the length
/// ongraph writes (a UUID URN is 45 characters, a time 24), so one teammate's 20 MB IRI or
/// "time" never reaches anyone's list of records.
const RECORD_IRI: &str = "FILTER(isIRI(?r) && STRLEN(STR(?r)) <= 512 && STRLEN(STR(?sent)) <= 64)";

fn published_since(since: Option<&str>) -> String {
    since.map(|t| format!(" FILTER(?sent >= {})\n", typed(t, "dateTime"))).unwrap_or_default()
}

/// How many records (by IRI) `graph` holds published at or after `since`: what a pull that
/// finds the same count for the same `since` as last time knows is nothing new.
pub fn count_published(graph: &str, since: Option<&str>) -> Result<String, String> {
    let graph = syntax::iri(graph)?;
    Ok(format!(
        "SELECT (COUNT(DISTINCT ?r) AS ?n) WHERE {{ GRAPH {graph} {{\n ?r {} ?sent .\n {RECORD_IRI}\n{}}} }}",
        ns("publishedAt"),
        published_since(since)
    ))
}

/// The query for the records of `graph` published at or after `since` (all of them when
/// `None`): their IRIs and latest publication times, one row per record however often it was
/// sent. Unordered and whole when `paged` is `None` (sorting is most of its cost on Oxigraph);
/// else ordered by IRI, [`PAGE`] rows starting after the IRI given, for a server that cut the
/// whole answer short (Virtuoso's ResultSetMaxRows). Only the records a store does not have yet
/// are then read in full ([`select_records`]).
pub fn select_published(graph: &str, since: Option<&str>, paged: Option<Option<&str>>) -> Result<String, String> {
    let graph = syntax::iri(graph)?;
    let since = published_since(since);
    let (after, order) = match paged {
        None => (String::new(), String::new()),
        Some(after) => (
            after.map(|r| format!(" FILTER(STR(?r) > {})\n", syntax::literal(r))).unwrap_or_default(),
            format!(" ORDER BY ?r LIMIT {PAGE}"),
        ),
    };
    Ok(format!(
        "SELECT ?r (MAX(?sent) AS ?latest) WHERE {{ GRAPH {graph} {{\n ?r {} ?sent .\n {RECORD_IRI}\n{since}{after}}} }} \
         GROUP BY ?r{order}",
        ns("publishedAt")
    ))
}

/// `VALUES ?r { … }` for `iris`, each checked.
fn values(iris: &[String]) -> Result<String, String> {
    Ok(iris.iter().map(|i| syntax::iri(i)).collect::<Result<Vec<_>, _>>()?.join(" "))
}

/// The query for how many triples each of the records `iris` of `graph` has, its publication
/// stamps aside, and how many characters they hold: one row per record, so a record over
/// [`MAX_TRIPLES`] or [`MAX_RECORD`] is skipped unread.
pub fn count_triples(graph: &str, iris: &[String]) -> Result<String, String> {
    let graph = syntax::iri(graph)?;
    Ok(format!(
        "SELECT ?r (COUNT(*) AS ?n) (SUM(IF(isBlank(?x), 0, STRLEN(STR(?x)))) AS ?size) WHERE {{ GRAPH {graph} {{\n \
         VALUES ?r {{ {} }}\n ?r ?p ?x .\n FILTER(?p != {})\n}} }} GROUP BY ?r",
        values(iris)?,
        ns("publishedAt")
    ))
}

/// The query for everything the records `iris` of `graph` say (at most [`DETAIL`] of them, each
/// of at most [`MAX_TRIPLES`] triples: see [`count_triples`]): one row per triple, never a
/// product of fields, and each value's length, a value longer than [`MAX_VALUE`] given as
/// nothing (the server measures it; it is never sent). At most `limit` rows.
pub fn select_records(graph: &str, iris: &[String], limit: usize) -> Result<String, String> {
    let graph = syntax::iri(graph)?;
    Ok(format!(
        "SELECT ?r ?p ?o ?len WHERE {{ GRAPH {graph} {{\n VALUES ?r {{ {} }}\n ?r ?p ?x .\n FILTER(?p != {})\n \
         BIND(STRLEN(STR(?x)) AS ?len)\n BIND(IF(?len > {MAX_VALUE}, \"\", ?x) AS ?o)\n}} }} LIMIT {limit}",
        values(iris)?,
        ns("publishedAt")
    ))
}

/// The query that tells whether `graph` holds the record `iri` (one row if it does): how a
/// push sees that the update endpoint really took it.
pub fn select_held(graph: &str, iri: &str) -> Result<String, String> {
    Ok(format!(
        "SELECT ?t WHERE {{ GRAPH {} {{ {} {} ?t }} }} LIMIT 1",
        syntax::iri(graph)?,
        syntax::iri(iri)?,
        ns("publishedAt")
    ))
}

/// Rows of one record, gathered: each field's distinct values.
#[derive(Default)]
pub struct Gathered {
    values: BTreeMap<String, Vec<String>>,
    /// The first field found longer than [`MAX_VALUE`], and how long.
    too_long: Option<(&'static str, u64)>,
}

impl Gathered {
    /// Adds a row of [`select_records`] (IRIs and literals alike, by their text). Predicates that
    /// are not a record's (a newer ongraph's, say) are left aside.
    pub fn add(&mut self, row: &QuerySolution) {
        let Some(oxrdf::Term::NamedNode(p)) = row.get("p") else { return };
        let Some(field) = field(p.as_str()) else { return };
        let len = match row.get("len") {
            Some(oxrdf::Term::Literal(l)) => l.value().parse::<u64>().unwrap_or(u64::MAX),
            _ => 0,
        };
        if len > MAX_VALUE as u64 {
            self.too_long.get_or_insert((field, len));
            return;
        }
        let text = match row.get("o") {
            Some(oxrdf::Term::NamedNode(n)) => n.as_str().to_string(),
            Some(oxrdf::Term::Literal(l)) => l.value().to_string(),
            _ => return,
        };
        let values = self.values.entry(field.to_string()).or_default();
        if !values.contains(&text) {
            values.push(text);
        }
    }

    /// The record, or why it is not one: a value missing, given twice, or not of its kind.
    pub fn record(&self, iri: &str) -> Result<Record, RecordError> {
        if let Some((field, len)) = self.too_long {
            let detail = format!("its {field} is {len} characters long (at most {MAX_VALUE})");
            return Err(RecordError::Breaks { iri: iri.to_string(), detail, rule: Skip::TooLong });
        }
        let fields = Fields { values: &self.values, iri };
        fields.check_keys()?;
        let kind = fields.kind()?;
        let author = agent_name(fields.need("author")?)
            .ok_or_else(|| fields.bad("its author is not an ongraph agent IRI".into()))?;
        let created = fields.need("at")?;
        if parse_time(created).is_none() {
            return Err(fields.bad(format!("its time {created:?} is not an RFC 3339 time")));
        }
        let context = fields.context()?;
        Ok(Record {
            iri: iri.to_string(),
            kind,
            kg: fields.need("kg")?.to_string(),
            author,
            created: created.to_string(),
            reason: fields.one("reason")?.unwrap_or_default().to_string(),
            context,
            generated: matches!(fields.one("gen")?, Some("true" | "1")),
            based_on: fields.one("base")?.map(str::to_string),
            agent: fields.one("agent")?.map(str::to_string),
        })
    }
}

/// The gathered values of the record `iri`, read field by field.
struct Fields<'a> {
    values: &'a BTreeMap<String, Vec<String>>,
    iri: &'a str,
}

impl<'a> Fields<'a> {
    fn bad(&self, detail: String) -> RecordError {
        RecordError::Malformed { iri: self.iri.to_string(), detail }
    }

    /// Checks the values that become keys of the local store (the scope, record IRIs): no
    /// control character (a NUL would reach into another scope's keys), and not empty.
    fn check_keys(&self) -> Result<(), RecordError> {
        let key_like = |what: &str, value: &str| -> Result<(), RecordError> {
            if value.is_empty() {
                return Err(self.bad(format!("its {what} is empty")));
            }
            if value.chars().any(char::is_control) {
                return Err(self.bad(format!("its {what} has a control character")));
            }
            Ok(())
        };
        key_like("IRI", self.iri)?;
        for (var, what) in [("kg", "kg"), ("target", "target"), ("base", "basedOn")] {
            if let Some(value) = self.values.get(var) {
                value.iter().try_for_each(|v| key_like(what, v))?;
            }
        }
        Ok(())
    }

    /// The field's value, if it has one; given more than once, the record breaks a rule.
    fn one(&self, var: &str) -> Result<Option<&'a str>, RecordError> {
        match self.values.get(var).map(Vec::as_slice) {
            None | Some([]) => Ok(None),
            Some([v]) => Ok(Some(v.as_str())),
            Some(_) => Err(RecordError::Breaks {
                iri: self.iri.to_string(),
                detail: format!("{var} is given more than once"),
                rule: Skip::Repeated,
            }),
        }
    }

    /// The field's one value, which the record must have.
    fn need(&self, var: &str) -> Result<&'a str, RecordError> {
        self.one(var)?.ok_or_else(|| self.bad(format!("it has no {var}")))
    }

    /// The term in the field `value`, of the kind in the field `kind`.
    fn term(&self, value: &str, kind: &str) -> Result<Term, RecordError> {
        match self.need(kind)? {
            "entity" => Ok(Term::Entity(self.need(value)?.to_string())),
            "literal" => Ok(Term::Literal(self.need(value)?.to_string())),
            other => Err(self.bad(format!("{kind} is {other:?}, not entity or literal"))),
        }
    }

    /// What the record does, by its type.
    fn kind(&self) -> Result<Kind, RecordError> {
        let class = self.need("type")?.strip_prefix(NS).unwrap_or_default();
        Ok(match class {
            "Correction" => Kind::Correction { op: self.op()? },
            "Undo" => Kind::Undo { target: self.need("target")?.to_string() },
            "Supersede" => Kind::Supersede { target: self.need("target")?.to_string() },
            "Approve" => Kind::Approve { target: self.need("target")?.to_string() },
            "Reject" => Kind::Reject { target: self.need("target")?.to_string() },
            other => return Err(self.bad(format!("unknown record type {other:?}"))),
        })
    }

    /// The correction a correction record makes, its ids checked.
    fn op(&self) -> Result<Op, RecordError> {
        let s = || self.need("s").map(str::to_string);
        let rel = || self.need("rel").map(str::to_string);
        let op = match self.need("op")? {
            "retract" => Op::Retract { subject: s()?, relation: rel()?, object: self.term("o", "ok")? },
            "assert" => Op::Assert { subject: s()?, relation: rel()?, object: self.term("o", "ok")? },
            "relabel" => Op::Relabel { entity: s()?, label: self.need("label")?.to_string() },
            "replace" => Op::Replace {
                subject: s()?,
                relation: rel()?,
                old: self.term("o", "ok")?,
                new: self.term("n", "nk")?,
                label: self.one("label")?.map(str::to_string),
            },
            other => return Err(self.bad(format!("unknown operation {other:?}"))),
        };
        op.validate_ids().map_err(|detail| self.bad(detail))?;
        Ok(op)
    }

    /// Where the record was made (question, session, step), if it says.
    fn context(&self) -> Result<Option<CorrectionContext>, RecordError> {
        let step = match self.one("step")? {
            Some(s) => Some(s.parse::<usize>().map_err(|_| self.bad(format!("its step {s:?} is not a number")))?),
            None => None,
        };
        let question = self.one("question")?.map(str::to_string);
        let session = self.one("session")?.map(str::to_string);
        Ok((question.is_some() || session.is_some() || step.is_some()).then_some(CorrectionContext {
            question,
            session,
            step,
        }))
    }
}

/// An RFC 3339 time as a point in time (for comparing what servers and teammates wrote).
pub fn parse_time(text: &str) -> Option<std::time::SystemTime> {
    // humantime reads UTC times only, and would read `…T12:00:00+02:00` as noon UTC: an offset
    // is taken off first and applied by hand.
    let offset = text.len().checked_sub(6).and_then(|i| text.get(i..)).filter(|o| {
        let b = o.as_bytes();
        matches!(b[0], b'+' | b'-') && b[3] == b':' && o[1..3].bytes().chain(o[4..].bytes()).all(|c| c.is_ascii_digit())
    });
    let Some(offset) = offset else { return humantime::parse_rfc3339_weak(text).ok() };
    let base = humantime::parse_rfc3339_weak(&text[..text.len() - 6]).ok()?;
    let hours: u64 = offset[1..3].parse().ok()?;
    let minutes: u64 = offset[4..].parse().ok()?;
    let shift = std::time::Duration::from_secs((hours * 60 + minutes) * 60);
    // Local time is UTC plus the offset: UTC is local time less it.
    if offset.starts_with('+') { base.checked_sub(shift) } else { base.checked_add(shift) }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn any_author_name_is_an_agent_iri_and_reads_back() {
        for name in ["Ada", "Ada L. \"Countess\" > <x> { } \n\t é 漢字 🦀", "%41", ""] {
            let iri = agent_iri(name);
            assert!(syntax::iri(&iri).is_ok(), "{iri}");
            assert_eq!(agent_name(&iri).as_deref(), Some(name));
        }
        assert_eq!(agent_name("urn:ongraph:agent:%4"), None);
        assert_eq!(agent_name("http://example.org/ada"), None);
    }

    #[test]
    fn a_kg_or_iri_with_a_control_character_is_refused() {
        let gathered = |kg: &str, target: &str| {
            let mut g = Gathered::default();
            for (k, v) in [
                ("type", format!("{NS}Undo")),
                ("kg", kg.to_string()),
                ("target", target.to_string()),
                ("author", agent_iri("Ada")),
                ("at", "2026-11-25T10:00:00.000Z".to_string()),
            ] {
                g.values.insert(k.to_string(), vec![v]);
            }
            g
        };
        let iri = "urn:uuid:0190a7d4-0000-7000-8000-000000000000";
        assert!(gathered("demo", "urn:uuid:1").record(iri).is_ok());
        for (kg, target) in [
            ("demo\0\0\0\0\0\0\0\x01", "urn:uuid:1"),
            ("de\nmo", "urn:uuid:1"),
            ("", "urn:uuid:1"),
            ("demo", "urn:uuid:1\u{7f}"),
        ] {
            let err = gathered(kg, target).record(iri).unwrap_err().to_string();
            assert!(err.contains("control character") || err.contains("is empty"), "{kg:?} {target:?}: {err}");
        }
        assert!(gathered("demo", "urn:uuid:1").record("urn:uuid:x\0y").is_err());
    }

    #[test]
    fn times_with_offsets_are_read_as_utc() {
        let utc = parse_time("2026-11-25T10:00:00.250Z").unwrap();
        assert_eq!(parse_time("2026-11-25T12:00:00.250+02:00"), Some(utc));
        assert_eq!(parse_time("2026-11-25T05:30:00.250-04:30"), Some(utc));
        assert_eq!(parse_time("yesterday"), None);
    }

    #[test]
    fn the_update_is_one_insert_data_in_the_sets_graph_with_full_iris() {
        let record = Record {
            iri: "urn:uuid:0190a7d4-0000-7000-8000-000000000000".into(),
            kind: Kind::Correction {
                op: Op::Retract {
                    subject: "m.x".into(),
                    relation: "people.person.nationality".into(),
                    object: Term::Entity("m.y".into()),
                },
            },
            kg: "demo".into(),
            author: "Ada".into(),
            created: "2026-11-25T10:00:00.250Z".into(),
            reason: "wrong\n\"quoted\"".into(),
            context: None,
            generated: false,
            based_on: Some("urn:uuid:0190a7d4-0000-7000-8000-000000000001".into()),
            agent: Some("0190a7d4-0000-7000-8000-00000000000a".into()),
        };
        let text = record.insert_data("http://example.org/c", "2026-11-25T10:00:01.000Z").unwrap();
        assert!(text.starts_with("INSERT DATA { GRAPH <http://example.org/c> {\n"), "{text}");
        assert_eq!(text.matches("INSERT").count(), 1);
        assert!(!text.contains("DELETE") && !text.contains("PREFIX"), "{text}");
        assert!(text.contains(r#"<urn:ongraph:ns:reason> "wrong\n\"quoted\"" ."#), "{text}");
        assert!(text.contains("<urn:ongraph:ns:basedOn> <urn:uuid:0190a7d4-0000-7000-8000-000000000001> ."));
        assert!(text.contains(r#"<urn:ongraph:ns:agentId> "0190a7d4-0000-7000-8000-00000000000a" ."#), "{text}");
        let mut hostile = record.clone();
        hostile.based_on = Some("urn:uuid:x> } } ; DROP ALL ; { <y".into());
        assert!(hostile.insert_data("http://example.org/c", "2026-11-25T10:00:01.000Z").is_err());
        assert!(record.insert_data("http://example.org/c> { }", "2026-11-25T10:00:01.000Z").is_err());
    }
}
