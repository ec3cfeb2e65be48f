//! The embedded in-memory graph: every term interned to a `u32`, triples stored once per
//! direction in compressed sparse rows sorted by (relation, other end), so relation search is a
//! scan of one short slice and neighbour search a binary search in it.

use super::{Direction, EntityMatch, KgError, KgProfile, KnowledgeGraph, Neighbour, RelationRef, Term};
use async_trait::async_trait;
use hashbrown::HashTable;
use std::collections::HashMap;
use std::hash::BuildHasher;
use std::sync::OnceLock;

/// Literals are interned with this first byte so they never collide with an entity id of the
/// same text (an IRI or TSV id cannot start with a double quote).
const LITERAL_MARK: char = '"';

/// A string interner that stores each string once in one arena.
#[derive(Default)]
pub struct Interner {
    arena: String,
    ends: Vec<u32>,
    table: HashTable<u32>,
    hasher: hashbrown::DefaultHashBuilder,
}

impl Interner {
    pub fn len(&self) -> usize {
        self.ends.len()
    }
    pub fn get(&self, id: u32) -> &str {
        let i = id as usize;
        let start = if i == 0 { 0 } else { self.ends[i - 1] as usize };
        &self.arena[start..self.ends[i] as usize]
    }
    pub fn lookup(&self, s: &str) -> Option<u32> {
        let hash = self.hasher.hash_one(s);
        self.table.find(hash, |&id| self.get(id) == s).copied()
    }
    pub fn intern(&mut self, s: &str) -> u32 {
        let hash = self.hasher.hash_one(s);
        if let Some(&id) = self.table.find(hash, |&id| self.get(id) == s) {
            return id;
        }
        let id = self.ends.len() as u32;
        self.arena.push_str(s);
        self.ends.push(self.arena.len() as u32);
        let (ends, arena, hasher) = (&self.ends, &self.arena, &self.hasher);
        let get = |id: u32| {
            let i = id as usize;
            let start = if i == 0 { 0 } else { ends[i - 1] as usize };
            &arena[start..ends[i] as usize]
        };
        self.table.insert_unique(hash, id, |&other| hasher.hash_one(get(other)));
        id
    }
    fn heap_bytes(&self) -> usize {
        self.arena.capacity() + self.ends.capacity() * 4 + self.table.capacity() * 5
    }
}

/// Accumulates triples; `finish` sorts them into the indexed graph.
pub struct GraphBuilder {
    terms: Interner,
    relations: Interner,
    triples: Vec<[u32; 3]>,
}

impl Default for GraphBuilder {
    fn default() -> Self {
        Self::new()
    }
}

impl GraphBuilder {
    pub fn new() -> Self {
        Self { terms: Interner::default(), relations: Interner::default(), triples: Vec::new() }
    }

    pub fn add(&mut self, head: &str, relation: &str, tail: &Term) {
        let h = self.terms.intern(head);
        let r = self.relations.intern(relation);
        let t = match tail {
            Term::Entity(id) => self.terms.intern(id),
            Term::Literal(v) => {
                let mut marked = String::with_capacity(v.len() + 1);
                marked.push(LITERAL_MARK);
                marked.push_str(v);
                self.terms.intern(&marked)
            }
        };
        self.triples.push([h, r, t]);
    }

    pub fn finish(mut self, name: impl Into<String>, profile: KgProfile) -> LocalGraph {
        self.triples.sort_unstable();
        self.triples.dedup();
        let n = self.terms.len();
        let (out_off, out_edges) = csr(n, &self.triples, 0, 2);
        let (in_off, in_edges) = csr(n, &self.triples, 2, 0);
        drop(self.triples);
        let informative =
            (0..self.relations.len() as u32).map(|r| profile.is_informative(self.relations.get(r))).collect();
        let label_relations = profile.label_predicates.iter().filter_map(|p| self.relations.lookup(p)).collect();
        LocalGraph {
            name: name.into(),
            profile,
            terms: self.terms,
            relations: self.relations,
            out_off,
            out_edges,
            in_off,
            in_edges,
            informative,
            label_relations,
            label_index: OnceLock::new(),
        }
    }
}

/// Builds one direction's rows: for node `t[from]`, the pairs (relation, `t[to]`), sorted.
fn csr(nodes: usize, triples: &[[u32; 3]], from: usize, to: usize) -> (Vec<u32>, Vec<(u32, u32)>) {
    let mut off = vec![0u32; nodes + 1];
    for t in triples {
        off[t[from] as usize + 1] += 1;
    }
    for i in 0..nodes {
        off[i + 1] += off[i];
    }
    let mut fill = off.clone();
    let mut edges = vec![(0u32, 0u32); triples.len()];
    for t in triples {
        let slot = &mut fill[t[from] as usize];
        edges[*slot as usize] = (t[1], t[to]);
        *slot += 1;
    }
    for i in 0..nodes {
        edges[off[i] as usize..off[i + 1] as usize].sort_unstable();
    }
    (off, edges)
}

pub struct LocalGraph {
    name: String,
    profile: KgProfile,
    terms: Interner,
    relations: Interner,
    out_off: Vec<u32>,
    out_edges: Vec<(u32, u32)>,
    in_off: Vec<u32>,
    in_edges: Vec<(u32, u32)>,
    informative: Vec<bool>,
    label_relations: Vec<u32>,
    /// Lower-cased label → entities, built on the first search by name.
    label_index: OnceLock<HashMap<String, Vec<u32>>>,
}

impl LocalGraph {
    /// Whether any node has a name triple (a label predicate of the profile).
    pub fn has_labels(&self) -> bool {
        !self.label_relations.is_empty()
    }

    /// The same graph read with another profile (label predicates, relation filter).
    pub fn with_profile(mut self, profile: KgProfile) -> Self {
        self.informative =
            (0..self.relations.len() as u32).map(|r| profile.is_informative(self.relations.get(r))).collect();
        self.label_relations = profile.label_predicates.iter().filter_map(|p| self.relations.lookup(p)).collect();
        self.profile = profile;
        self.label_index = OnceLock::new();
        self
    }

    pub fn triple_count(&self) -> usize {
        self.out_edges.len()
    }
    /// Bytes held by the indexes and strings (not counting the lazily built label index).
    pub fn heap_bytes(&self) -> usize {
        self.terms.heap_bytes()
            + self.relations.heap_bytes()
            + (self.out_off.capacity() + self.in_off.capacity()) * 4
            + (self.out_edges.capacity() + self.in_edges.capacity()) * 8
    }

    fn row(&self, node: u32, dir: Direction) -> &[(u32, u32)] {
        let (off, edges) = match dir {
            Direction::Out => (&self.out_off, &self.out_edges),
            Direction::In => (&self.in_off, &self.in_edges),
        };
        &edges[off[node as usize] as usize..off[node as usize + 1] as usize]
    }

    fn term(&self, id: u32) -> Term {
        let s = self.terms.get(id);
        match s.strip_prefix(LITERAL_MARK) {
            Some(v) => Term::Literal(v.to_string()),
            None => Term::Entity(s.to_string()),
        }
    }

    fn is_literal(&self, id: u32) -> bool {
        self.terms.get(id).starts_with(LITERAL_MARK)
    }

    fn label_of(&self, node: u32) -> Option<String> {
        if let Some(v) = self.terms.get(node).strip_prefix(LITERAL_MARK) {
            return Some(v.to_string());
        }
        let row = self.row(node, Direction::Out);
        for &rel in &self.label_relations {
            let start = row.partition_point(|&(r, _)| r < rel);
            if let Some(&(r, o)) = row.get(start)
                && r == rel
            {
                let s = self.terms.get(o);
                return Some(s.strip_prefix(LITERAL_MARK).unwrap_or(s).to_string());
            }
        }
        self.profile.label_from(self.terms.get(node))
    }

    fn label_index(&self) -> &HashMap<String, Vec<u32>> {
        self.label_index.get_or_init(|| {
            let mut index: HashMap<String, Vec<u32>> = HashMap::new();
            for id in 0..self.terms.len() as u32 {
                if self.is_literal(id) {
                    continue;
                }
                if let Some(label) = self.label_of(id) {
                    index.entry(label.to_lowercase()).or_default().push(id);
                }
            }
            index
        })
    }
}

#[async_trait]
impl KnowledgeGraph for LocalGraph {
    fn name(&self) -> &str {
        &self.name
    }
    fn profile(&self) -> &KgProfile {
        &self.profile
    }

    /// The first named entity with an informative relation to another named node.
    fn example_fact(&self) -> Option<(String, String)> {
        (0..self.terms.len() as u32).filter(|&n| !self.is_literal(n)).find_map(|node| {
            let label = self.label_of(node)?;
            let &(rel, _) = self.row(node, Direction::Out).iter().find(|&&(rel, to)| {
                self.informative[rel as usize] && !self.is_literal(to) && self.label_of(to).is_some()
            })?;
            Some((label, self.profile.display_relation(self.relations.get(rel))))
        })
    }

    async fn relations(&self, entity: &str) -> Result<Vec<RelationRef>, KgError> {
        let Some(node) = self.terms.lookup(entity) else { return Ok(Vec::new()) };
        let mut out = Vec::new();
        for dir in [Direction::Out, Direction::In] {
            let mut last = None;
            for &(rel, _) in self.row(node, dir) {
                if last != Some(rel) && self.informative[rel as usize] {
                    out.push(RelationRef {
                        relation: self.relations.get(rel).to_string(),
                        direction: dir,
                        label: None,
                    });
                }
                last = Some(rel);
            }
        }
        Ok(out)
    }

    async fn neighbours(&self, entity: &str, relation: &RelationRef) -> Result<Vec<Neighbour>, KgError> {
        let (Some(node), Some(rel)) = (self.terms.lookup(entity), self.relations.lookup(&relation.relation)) else {
            return Ok(Vec::new());
        };
        let row = self.row(node, relation.direction);
        let start = row.partition_point(|&(r, _)| r < rel);
        let end = row.partition_point(|&(r, _)| r <= rel);
        let mut out: Vec<Neighbour> = row[start..end]
            .iter()
            .map(|&(_, other)| Neighbour { term: self.term(other), label: self.label_of(other), correction: None })
            .collect();
        // In term order, as every backend returns them: the same graph gives the same prompts
        // whichever store serves it.
        out.sort_by(|a, b| a.term.cmp(&b.term));
        Ok(out)
    }

    async fn label(&self, entity: &str) -> Result<Option<String>, KgError> {
        Ok(self.terms.lookup(entity).and_then(|n| self.label_of(n)))
    }

    async fn find_entities(&self, name: &str, limit: usize) -> Result<Vec<EntityMatch>, KgError> {
        let wanted = name.trim().to_lowercase();
        let index = self.label_index();
        let mut found: Vec<EntityMatch> = index
            .get(&wanted)
            .into_iter()
            .flatten()
            .map(|&id| EntityMatch {
                id: self.terms.get(id).to_string(),
                label: self.label_of(id).unwrap_or_default(),
                score: 1.0,
                exact: true,
            })
            .collect();
        // An id typed verbatim counts as exact too.
        if let Some(id) = self.terms.lookup(name.trim())
            && !self.is_literal(id)
            && !found.iter().any(|m| m.id == name.trim())
        {
            let label = self.label_of(id).unwrap_or_else(|| name.trim().to_string());
            found.push(EntityMatch { id: name.trim().to_string(), label, score: 1.0, exact: true });
        }
        if found.len() < limit {
            // Rank every other label by similarity: Jaro-Winkler on the whole label, lifted for
            // labels that contain the name, so "Canbera" finds "Canberra" first and "Lou Seal"
            // finds "Lou Seal (mascot)". Ties go to the shorter, then alphabetically first
            // label, so the order is deterministic.
            let mut ranked: Vec<(f64, &String, &Vec<u32>)> = index
                .iter()
                .filter(|(label, _)| **label != wanted)
                .filter_map(|(label, ids)| {
                    let score = super::name_similarity(label, &wanted);
                    (score >= super::CLOSE_NAME_MIN).then_some((score, label, ids))
                })
                .collect();
            ranked.sort_by(|a, b| b.0.total_cmp(&a.0).then(a.1.len().cmp(&b.1.len())).then(a.1.cmp(b.1)));
            for (score, _, ids) in ranked {
                for &id in ids {
                    if found.len() >= limit {
                        break;
                    }
                    found.push(EntityMatch {
                        id: self.terms.get(id).to_string(),
                        label: self.label_of(id).unwrap_or_default(),
                        score: score * 0.99,
                        exact: false,
                    });
                }
                if found.len() >= limit {
                    break;
                }
            }
        }
        found.truncate(limit);
        Ok(found)
    }
}
