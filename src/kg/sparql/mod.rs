//! Knowledge graphs behind a SPARQL 1.1 endpoint (Freebase in Virtuoso, any RDF store), behind
//! the same [`KnowledgeGraph`] trait as the local graph, so the engine, the overlay and the CLI
//! use them unchanged. Ids stay short in prompts and traces (`m.0abc`,
//! `people.person.nationality`) and are expanded into the profile's namespace in queries.

pub mod cache;
pub mod client;
pub mod syntax;

use super::{Direction, EntityMatch, KgError, KgProfile, KnowledgeGraph, Neighbour, RelationRef, Term};
use async_trait::async_trait;
use client::SparqlClient;
use oxrdf::Term as RdfTerm;
use sparesults::QuerySolution;

/// Rows asked for at most; Virtuoso caps results at 10,000 by default without saying so.
const ROW_CAP: usize = 10_000;

/// Entities (or entity-relation pairs) per batched query.
const BATCH: usize = 50;

/// How ids are written: bare ids in a default namespace (Freebase's `m.0abc`, Wikidata's
/// `Q42`) and `prefix:rest` for the named prefixes (`wdt:P31`); anything else is a full IRI.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Namespaces {
    pub bare: Option<String>,
    pub prefixes: Vec<(String, String)>,
}

impl Namespaces {
    pub fn freebase() -> Self {
        Self { bare: Some("http://rdf.freebase.com/ns/".into()), prefixes: Vec::new() }
    }

    pub fn wikidata() -> Self {
        let p = |a: &str, b: &str| (a.to_string(), b.to_string());
        Self {
            bare: Some("http://www.wikidata.org/entity/".into()),
            prefixes: vec![
                p("wdt", "http://www.wikidata.org/prop/direct/"),
                p("p", "http://www.wikidata.org/prop/"),
                p("ps", "http://www.wikidata.org/prop/statement/"),
                p("pq", "http://www.wikidata.org/prop/qualifier/"),
                p("wds", "http://www.wikidata.org/entity/statement/"),
            ],
        }
    }

    /// `prefix:rest` for a known prefix, the bare namespace, or `id` itself (a full IRI).
    pub fn expand(&self, id: &str) -> String {
        if let Some((prefix, rest)) = id.split_once(':')
            && let Some((_, iri)) = self.prefixes.iter().find(|(p, _)| p == prefix)
        {
            return format!("{iri}{rest}");
        }
        match &self.bare {
            Some(ns) if !id.contains("://") && !id.starts_with("urn:") => format!("{ns}{id}"),
            _ => id.to_string(),
        }
    }

    /// The shortest way to write `iri`: the longest matching prefix wins.
    fn shorten(&self, iri: &str) -> String {
        let named = self
            .prefixes
            .iter()
            .filter(|(_, ns)| iri.starts_with(ns.as_str()))
            .max_by_key(|(_, ns)| ns.len())
            .map(|(p, ns)| (ns.len(), format!("{p}:{}", &iri[ns.len()..])));
        let bare = self
            .bare
            .as_ref()
            .filter(|ns| iri.starts_with(ns.as_str()))
            .map(|ns| (ns.len(), iri[ns.len()..].to_string()));
        match (named, bare) {
            (Some(n), Some(b)) => {
                if b.0 > n.0 {
                    b.1
                } else {
                    n.1
                }
            }
            (Some(n), None) => n.1,
            (None, Some(b)) => b.1,
            (None, None) => iri.to_string(),
        }
    }
}

/// Wikidata's links from a property entity to its predicates, for property names.
const WIKIBASE_PROPERTY_LINKS: &str = "<http://wikiba.se/ontology#directClaim>|<http://wikiba.se/ontology#claim>|<http://wikiba.se/ontology#statementProperty>|<http://wikiba.se/ontology#qualifier>";

pub struct SparqlKg {
    name: String,
    client: SparqlClient,
    profile: KgProfile,
    names: Namespaces,
    /// Name relations after their Wikibase property entities (`wdt:P31` → "instance of").
    property_labels: bool,
    /// Fall back to `owl:sameAs` for nodes with no name (Freebase, as ToG does).
    same_as_names: bool,
    /// Preferred language of names.
    language: String,
    /// The label predicates as query text: `<a>|<b>`.
    label_path: String,
    /// Answer batches of lookups with one `VALUES` query (off: one query per lookup).
    batching: bool,
    /// `FROM <graph>`: the named graph every query reads alone (empty: the default graph).
    from: String,
}

impl SparqlKg {
    pub fn new(
        name: impl Into<String>,
        client: SparqlClient,
        profile: KgProfile,
        names: Namespaces,
        language: &str,
    ) -> Result<Self, KgError> {
        let language = syntax::language(language)
            .ok_or_else(|| KgError::Other(format!("{language:?} is not a language tag")))?
            .to_string();
        let property_labels = names == Namespaces::wikidata();
        let same_as_names = names == Namespaces::freebase();
        let mut kg = Self {
            name: name.into(),
            client,
            profile,
            names,
            property_labels,
            same_as_names,
            language,
            label_path: String::new(),
            batching: true,
            from: String::new(),
        };
        let mut predicates: Vec<String> = Vec::new();
        for p in &kg.profile.label_predicates {
            if let Ok(iri) = kg.iri(p)
                && !predicates.contains(&iri)
            {
                predicates.push(iri);
            }
        }
        if predicates.is_empty() {
            return Err(KgError::Other("the profile names no usable label predicate".into()));
        }
        kg.label_path = predicates.join("|");
        Ok(kg)
    }

    /// With `false`, every lookup is its own query (for comparison, or for endpoints that
    /// handle `VALUES` badly).
    pub fn with_batching(mut self, batching: bool) -> Self {
        self.batching = batching;
        self
    }

    /// Reads the KG from the named graph `graph` alone (an endpoint that serves several graphs:
    /// on Virtuoso a query without `FROM` reads them all). An invalid IRI is refused.
    pub fn in_graph(mut self, graph: &str) -> Result<Self, String> {
        self.from = format!(" FROM {}", syntax::iri(graph)?);
        Ok(self)
    }

    /// Runs one of this KG's queries (each is `SELECT … WHERE {…}`, no subquery) on its graph.
    async fn select(&self, query: &str) -> Result<Vec<sparesults::QuerySolution>, KgError> {
        if self.from.is_empty() {
            return self.client.select(query).await;
        }
        let scoped = match query.split_once(" WHERE {") {
            Some((head, body)) => format!("{head}{} WHERE {{{body}", self.from),
            None => query.to_string(),
        };
        self.client.select(&scoped).await
    }

    /// An id or relation as query text: expanded into the namespace when short, validated.
    fn iri(&self, id: &str) -> Result<String, KgError> {
        syntax::iri(&self.names.expand(id)).map_err(KgError::Other)
    }

    /// An IRI from a result as an id: abbreviated with the namespaces.
    fn short(&self, iri: &str) -> String {
        self.names.shorten(iri)
    }

    /// The clause that fetches ?rl, a relation's name, when the graph names its properties.
    fn property_label_clause(&self) -> String {
        if !self.property_labels {
            return String::new();
        }
        format!(
            " OPTIONAL {{ ?prop {WIKIBASE_PROPERTY_LINKS} ?r . ?prop {} ?rl . FILTER(LANGMATCHES(LANG(?rl), {})) }}",
            self.label_path,
            syntax::literal(&self.language)
        )
    }

    fn term(&self, t: &RdfTerm) -> Option<Term> {
        match t {
            RdfTerm::NamedNode(n) => Some(Term::Entity(self.short(n.as_str()))),
            RdfTerm::Literal(l) => Some(Term::Literal(l.value().to_string())),
            // Blank node labels are not stable across queries: they cannot be looked up again.
            _ => None,
        }
    }

    /// The optional clause (and variable) that fetches ?same, an `owl:sameAs` fallback name.
    fn same_as_clause(&self, node: &str) -> String {
        if self.same_as_names {
            format!(" OPTIONAL {{ ?{node} <http://www.w3.org/2002/07/owl#sameAs> ?same }}")
        } else {
            String::new()
        }
    }

    /// A fallback name from an `owl:sameAs` value, ranked below every real name: a literal's
    /// value, or an IRI's last segment (`…/San_Francisco_International_Airport`).
    fn same_as_rank(t: &RdfTerm) -> Option<(u8, String)> {
        let text = match t {
            RdfTerm::Literal(l) => l.value().to_string(),
            RdfTerm::NamedNode(n) => {
                let last = n.as_str().rsplit(['/', '#']).next().unwrap_or_default();
                last.replace('_', " ")
            }
            _ => return None,
        };
        (!text.trim().is_empty()).then(|| (9, text.trim().to_string()))
    }

    /// How good a name is: the preferred language first, then untagged, then any other.
    fn name_rank(&self, t: &RdfTerm) -> Option<(u8, String)> {
        let RdfTerm::Literal(l) = t else { return None };
        let rank = match l.language() {
            Some(lang) if lang.eq_ignore_ascii_case(&self.language) => 0,
            None => 1,
            Some(_) => 2,
        };
        Some((rank, l.value().to_string()))
    }

    /// Groups rows of (?x, ?name) by ?x in first-seen order, keeping each node's best name.
    fn nodes_with_names<'a>(
        &self,
        rows: impl IntoIterator<Item = &'a QuerySolution>,
        node: &str,
    ) -> Vec<(Term, Option<String>)> {
        let mut out: Vec<(Term, Option<(u8, String)>)> = Vec::new();
        for row in rows {
            let Some(term) = row.get(node).and_then(|t| self.term(t)) else { continue };
            let name = row
                .get("name")
                .and_then(|t| self.name_rank(t))
                .or_else(|| row.get("same").and_then(Self::same_as_rank));
            match out.iter_mut().find(|(t, _)| *t == term) {
                Some((_, best)) => {
                    if let Some(n) = name
                        && best.as_ref().is_none_or(|b| n.0 < b.0)
                    {
                        *best = Some(n);
                    }
                }
                None => out.push((term, name)),
            }
        }
        out.into_iter().map(|(t, n)| (t, n.map(|n| n.1))).collect()
    }

    /// A relations row (?r, ?dir) as a relation of the entity, if it is one to offer.
    fn relation_row(&self, row: &QuerySolution) -> Option<RelationRef> {
        let RdfTerm::NamedNode(r) = row.get("r")? else { return None };
        let direction = match row.get("dir")? {
            RdfTerm::Literal(l) if l.value() == "in" => Direction::In,
            _ => Direction::Out,
        };
        let label = match row.get("rl") {
            Some(RdfTerm::Literal(l)) => Some(l.value().to_string()),
            _ => None,
        };
        let r = RelationRef { relation: self.short(r.as_str()), direction, label };
        self.profile.is_informative(&r.relation).then_some(r)
    }

    /// Servers return rows in any order: sort so runs are reproducible.
    fn tidy(mut relations: Vec<RelationRef>) -> Vec<RelationRef> {
        relations.sort_by(|a, b| a.direction.cmp(&b.direction).then_with(|| a.relation.cmp(&b.relation)));
        relations.dedup();
        relations
    }

    /// Neighbours in term order (servers return rows in any order).
    fn neighbours_from(&self, mut nodes: Vec<(Term, Option<String>)>) -> Vec<Neighbour> {
        nodes.sort_by(|a, b| a.0.cmp(&b.0));
        nodes
            .into_iter()
            .map(|(term, name)| {
                let label = match &term {
                    Term::Literal(v) => Some(v.clone()),
                    Term::Entity(_) => name,
                };
                Neighbour { term, label, correction: None }
            })
            .collect()
    }

    fn warn_cap(&self, rows: usize, what: &str) {
        if rows >= ROW_CAP {
            tracing::warn!(
                endpoint = self.client.endpoint(),
                what,
                "result hit the {ROW_CAP}-row cap; later rows not seen"
            );
        }
    }
}

#[async_trait]
impl KnowledgeGraph for SparqlKg {
    fn name(&self) -> &str {
        &self.name
    }
    fn profile(&self) -> &KgProfile {
        &self.profile
    }

    fn id_namespaces(&self) -> Option<Namespaces> {
        Some(self.names.clone())
    }

    async fn relations(&self, entity: &str) -> Result<Vec<RelationRef>, KgError> {
        let e = self.iri(entity)?;
        let query = format!(
            "SELECT DISTINCT ?r ?dir{rl} WHERE {{ {{ {e} ?r ?x . BIND(\"out\" AS ?dir) }} UNION {{ ?x ?r {e} . BIND(\"in\" AS ?dir) }}{clause} }} LIMIT {ROW_CAP}",
            rl = if self.property_labels { " ?rl" } else { "" },
            clause = self.property_label_clause()
        );
        let rows = self.select(&query).await?;
        self.warn_cap(rows.len(), "relations");
        Ok(Self::tidy(rows.iter().filter_map(|row| self.relation_row(row)).collect()))
    }

    async fn neighbours(&self, entity: &str, relation: &RelationRef) -> Result<Vec<Neighbour>, KgError> {
        let (e, r) = (self.iri(entity)?, self.iri(&relation.relation)?);
        let pattern = match relation.direction {
            Direction::Out => format!("{e} {r} ?x ."),
            Direction::In => format!("?x {r} {e} ."),
        };
        let query = format!(
            "SELECT ?x ?name{same} WHERE {{ {pattern} OPTIONAL {{ ?x {} ?name }}{clause} }} LIMIT {ROW_CAP}",
            self.label_path,
            same = if self.same_as_names { " ?same" } else { "" },
            clause = self.same_as_clause("x")
        );
        let rows = self.select(&query).await?;
        self.warn_cap(rows.len(), "neighbours");
        Ok(self.neighbours_from(self.nodes_with_names(&rows, "x")))
    }

    /// One `VALUES` query per chunk of entities instead of one query each.
    async fn relations_many(&self, entities: &[String]) -> Result<Vec<Vec<RelationRef>>, KgError> {
        if entities.len() == 1 || !self.batching {
            let mut out = Vec::with_capacity(entities.len());
            for e in entities {
                out.push(self.relations(e).await?);
            }
            return Ok(out);
        }
        let mut out = vec![Vec::new(); entities.len()];
        for (chunk_no, chunk) in entities.chunks(BATCH).enumerate() {
            let iris = chunk.iter().map(|e| self.iri(e)).collect::<Result<Vec<_>, _>>()?;
            let query = format!(
                "SELECT DISTINCT ?e ?r ?dir{rl} WHERE {{ VALUES ?e {{ {} }} {{ ?e ?r ?x . BIND(\"out\" AS ?dir) }} UNION {{ ?x ?r ?e . BIND(\"in\" AS ?dir) }}{clause} }} LIMIT {ROW_CAP}",
                iris.join(" "),
                rl = if self.property_labels { " ?rl" } else { "" },
                clause = self.property_label_clause()
            );
            let rows = self.select(&query).await?;
            if rows.len() >= ROW_CAP {
                // Capped: some entity's rows may be missing, so ask one at a time instead.
                for (i, e) in chunk.iter().enumerate() {
                    out[chunk_no * BATCH + i] = self.relations(e).await?;
                }
                continue;
            }
            for row in &rows {
                let (Some(RdfTerm::NamedNode(e)), Some(r)) = (row.get("e"), self.relation_row(row)) else { continue };
                let id = self.short(e.as_str());
                for (i, wanted) in chunk.iter().enumerate() {
                    if *wanted == id {
                        out[chunk_no * BATCH + i].push(r.clone());
                    }
                }
            }
        }
        Ok(out.into_iter().map(Self::tidy).collect())
    }

    /// One query per chunk of pairs instead of one per pair: each direction is a `UNION`
    /// branch with its own `VALUES`, so both are answered together and neither branch is
    /// evaluated unconstrained.
    async fn neighbours_many(&self, pairs: &[(String, RelationRef)]) -> Result<Vec<Vec<Neighbour>>, KgError> {
        if pairs.len() == 1 || !self.batching {
            let mut out = Vec::with_capacity(pairs.len());
            for (e, r) in pairs {
                out.push(self.neighbours(e, r).await?);
            }
            return Ok(out);
        }
        let mut out = vec![Vec::new(); pairs.len()];
        let indices: Vec<usize> = (0..pairs.len()).collect();
        for chunk in indices.chunks(BATCH) {
            let mut branches = Vec::new();
            for (direction, pattern, tag) in
                [(Direction::Out, "?e ?r ?x .", "out"), (Direction::In, "?x ?r ?e .", "in")]
            {
                let mut values = Vec::new();
                for &i in chunk.iter().filter(|&&i| pairs[i].1.direction == direction) {
                    values.push(format!("({} {})", self.iri(&pairs[i].0)?, self.iri(&pairs[i].1.relation)?));
                }
                if !values.is_empty() {
                    branches.push(format!(
                        "{{ VALUES (?e ?r) {{ {} }} {pattern} BIND(\"{tag}\" AS ?dir) }}",
                        values.join(" ")
                    ));
                }
            }
            let query = format!(
                "SELECT ?e ?r ?dir ?x ?name{same} WHERE {{ {} OPTIONAL {{ ?x {} ?name }}{clause} }} LIMIT {ROW_CAP}",
                branches.join(" UNION "),
                self.label_path,
                same = if self.same_as_names { " ?same" } else { "" },
                clause = self.same_as_clause("x")
            );
            let rows = self.select(&query).await?;
            if rows.len() >= ROW_CAP {
                // Capped: some pair's rows may be missing, so ask one at a time instead.
                for &i in chunk {
                    out[i] = self.neighbours(&pairs[i].0, &pairs[i].1).await?;
                }
                continue;
            }
            for &i in chunk {
                let (e, r) = (&pairs[i].0, &pairs[i].1.relation);
                let tag = if pairs[i].1.direction == Direction::Out { "out" } else { "in" };
                let mine = rows.iter().filter(|row| {
                    matches!(
                        (row.get("e"), row.get("r"), row.get("dir")),
                        (Some(RdfTerm::NamedNode(re)), Some(RdfTerm::NamedNode(rr)), Some(RdfTerm::Literal(d)))
                            if self.short(re.as_str()) == *e && self.short(rr.as_str()) == *r && d.value() == tag
                    )
                });
                out[i] = self.neighbours_from(self.nodes_with_names(mine, "x"));
            }
        }
        Ok(out)
    }

    async fn label(&self, entity: &str) -> Result<Option<String>, KgError> {
        let e = self.iri(entity)?;
        let query = if self.same_as_names {
            format!(
                "SELECT ?name ?same WHERE {{ {{ {e} {} ?name }} UNION {{ {e} <http://www.w3.org/2002/07/owl#sameAs> ?same }} }} LIMIT 100",
                self.label_path
            )
        } else {
            format!("SELECT ?name WHERE {{ {e} {} ?name }} LIMIT 100", self.label_path)
        };
        let rows = self.select(&query).await?;
        Ok(rows
            .iter()
            .filter_map(|row| {
                row.get("name").and_then(|t| self.name_rank(t)).or_else(|| row.get("same").and_then(Self::same_as_rank))
            })
            .min()
            .map(|(_, n)| n))
    }

    async fn find_entities(&self, name: &str, limit: usize) -> Result<Vec<EntityMatch>, KgError> {
        let name = name.trim();
        let wanted = name.to_lowercase();
        let mut variants = vec![name.to_string(), wanted.clone()];
        let title: String = wanted
            .split(' ')
            .map(|w| {
                let mut c = w.chars();
                c.next().map(|f| f.to_uppercase().chain(c).collect::<String>()).unwrap_or_default()
            })
            .collect::<Vec<_>>()
            .join(" ");
        variants.push(title);
        variants.dedup();
        let values: Vec<String> = variants
            .iter()
            .flat_map(|v| [syntax::literal(v), format!("{}@{}", syntax::literal(v), self.language)])
            .collect();
        let exact_query = format!(
            "SELECT DISTINCT ?e ?name WHERE {{ VALUES ?name {{ {} }} ?e {} ?name }} LIMIT 100",
            values.join(" "),
            self.label_path
        );
        let mut found: Vec<EntityMatch> = Vec::new();
        for (term, label) in self.nodes_with_names(&self.select(&exact_query).await?, "e") {
            if let (Term::Entity(id), Some(label)) = (term, label) {
                found.push(EntityMatch { id, label, score: 1.0, exact: true });
            }
        }
        // An id typed verbatim (only when no name matched: it costs a query).
        if found.is_empty()
            && !name.contains(char::is_whitespace)
            && self.iri(name).is_ok()
            && !found.iter().any(|m| m.id == name)
            && let Some(label) = self.label(name).await?
        {
            found.push(EntityMatch { id: name.to_string(), label, score: 1.0, exact: true });
        }
        if found.is_empty() {
            // Close names, only when nothing matched exactly: labels containing the start of
            // the longest word, ranked here. This scans labels on the server, so it is
            // bounded; on very large stores it is slow.
            let key: String = wanted.split(' ').max_by_key(|w| w.len()).unwrap_or_default().chars().take(4).collect();
            if key.chars().count() >= 3 {
                let query = format!(
                    "SELECT DISTINCT ?e ?name WHERE {{ ?e {} ?name . FILTER(CONTAINS(LCASE(STR(?name)), {})) }} LIMIT 500",
                    self.label_path,
                    syntax::literal(&key)
                );
                let mut close: Vec<EntityMatch> = self
                    .nodes_with_names(&self.select(&query).await?, "e")
                    .into_iter()
                    .filter_map(|(term, label)| match (term, label) {
                        (Term::Entity(id), Some(label)) => Some((id, label)),
                        _ => None,
                    })
                    .filter(|(id, _)| !found.iter().any(|m| m.id == *id))
                    .filter_map(|(id, label)| {
                        let score = super::name_similarity(&label, &wanted);
                        (score >= super::CLOSE_NAME_MIN).then_some(EntityMatch {
                            id,
                            label,
                            score: score * 0.99,
                            exact: false,
                        })
                    })
                    .collect();
                close.sort_by(|a, b| {
                    b.score.total_cmp(&a.score).then(a.label.len().cmp(&b.label.len())).then(a.id.cmp(&b.id))
                });
                found.extend(close);
            }
        }
        found.sort_by(|a, b| b.exact.cmp(&a.exact).then(b.score.total_cmp(&a.score)).then(a.id.cmp(&b.id)));
        found.truncate(limit);
        Ok(found)
    }

    fn network(&self) -> super::NetworkStats {
        self.client.stats()
    }
}
