//! PoG's question subgraph: every topic entity expanded hop by hop through the KG, parallel
//! relations between one pair of nodes clustered into one edge, then reduced to the nodes on
//! paths that connect the topic entities. Pure data: the machine feeds it what the KG returned.

use crate::kg::{Direction, Term};
use std::collections::{HashMap, VecDeque};

#[derive(Clone, Debug, PartialEq)]
pub struct SgNode {
    pub term: Term,
    pub label: Option<String>,
    /// The hop at which the expansion first reached it (topic entities: 0).
    pub hop: u32,
    /// Whether its relations have been looked up.
    pub searched: bool,
}

/// Every relation between nodes `a` and `b`, each oriented as seen from `a`.
#[derive(Clone, Debug, PartialEq)]
pub struct Edge {
    pub a: usize,
    pub b: usize,
    pub relations: Vec<(String, Direction)>,
}

/// A walk through the subgraph: `nodes[i]` and `nodes[i + 1]` are joined by `edges[i]`.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct SgPath {
    pub nodes: Vec<usize>,
    pub edges: Vec<usize>,
}

impl SgPath {
    pub fn len(&self) -> usize {
        self.edges.len()
    }
    /// This path followed by one more edge.
    pub fn extended(&self, edge: usize, node: usize) -> SgPath {
        let mut p = self.clone();
        p.edges.push(edge);
        p.nodes.push(node);
        p
    }
}

/// What reducing the subgraph kept.
#[derive(Clone, Debug, PartialEq)]
pub struct Reduction {
    pub keep: Vec<bool>,
    pub before: usize,
    pub after: usize,
    /// Whether every pair of consecutive topic entities is connected (always true for one).
    pub connected: bool,
}

#[derive(Clone, Debug, Default)]
pub struct Subgraph {
    pub nodes: Vec<SgNode>,
    pub edges: Vec<Edge>,
    index: HashMap<Term, usize>,
    pairs: HashMap<(usize, usize), usize>,
    adjacency: Vec<Vec<usize>>,
    /// Distinct triples added.
    pub triples: usize,
    /// The corrections that asserted triples, by (from, relation, direction, to), both ways:
    /// the tree marks them as it does on ToG's beam.
    corrected: HashMap<(usize, String, Direction, usize), u64>,
}

impl Subgraph {
    /// The node for `term`, added at `hop` when new (a label learnt later fills a missing one).
    pub fn node(&mut self, term: &Term, label: Option<&str>, hop: u32) -> usize {
        if let Some(&i) = self.index.get(term) {
            if self.nodes[i].label.is_none() {
                self.nodes[i].label = label.map(str::to_string);
            }
            return i;
        }
        let i = self.nodes.len();
        self.nodes.push(SgNode { term: term.clone(), label: label.map(str::to_string), hop, searched: false });
        self.index.insert(term.clone(), i);
        self.adjacency.push(Vec::new());
        i
    }

    /// Records `from -relation-> to` (as seen from `from` in `direction`), clustering it with
    /// any other relation between the same two nodes.
    pub fn link(&mut self, from: usize, relation: &str, direction: Direction, to: usize) {
        let key = (from.min(to), from.max(to));
        let e = match self.pairs.get(&key) {
            Some(&e) => e,
            None => {
                let e = self.edges.len();
                self.edges.push(Edge { a: from, b: to, relations: Vec::new() });
                self.pairs.insert(key, e);
                self.adjacency[from].push(e);
                if from != to {
                    self.adjacency[to].push(e);
                }
                e
            }
        };
        let edge = &mut self.edges[e];
        let oriented = if edge.a == from { direction } else { flip(direction) };
        if !edge.relations.iter().any(|(r, d)| r == relation && *d == oriented) {
            edge.relations.push((relation.to_string(), oriented));
            self.triples += 1;
        }
    }

    /// Records that the correction `id` asserted `from -relation-> to` (as [`Subgraph::link`]
    /// takes it).
    pub fn corrected_by(&mut self, from: usize, relation: &str, direction: Direction, to: usize, id: u64) {
        self.corrected.insert((from, relation.to_string(), direction, to), id);
        self.corrected.insert((to, relation.to_string(), flip(direction), from), id);
    }

    /// The correction that asserted `from -relation-> to`, if one did.
    pub fn correction(&self, from: usize, relation: &str, direction: Direction, to: usize) -> Option<u64> {
        self.corrected.get(&(from, relation.to_string(), direction, to)).copied()
    }

    pub fn other(&self, edge: usize, node: usize) -> usize {
        let e = &self.edges[edge];
        if e.a == node { e.b } else { e.a }
    }

    /// The edge's relations as seen walking it from `node`.
    pub fn relations_from(&self, edge: usize, node: usize) -> Vec<(String, Direction)> {
        let e = &self.edges[edge];
        e.relations.iter().map(|(r, d)| (r.clone(), if e.a == node { *d } else { flip(*d) })).collect()
    }

    pub fn edges_of(&self, node: usize) -> &[usize] {
        &self.adjacency[node]
    }

    /// Hop distances from `from` within the nodes `keep` allows (all when `None`).
    pub fn distances(&self, from: usize, keep: Option<&[bool]>) -> Vec<Option<u32>> {
        let mut dist = vec![None; self.nodes.len()];
        let mut queue = VecDeque::from([from]);
        dist[from] = Some(0);
        while let Some(n) = queue.pop_front() {
            let d = dist[n].unwrap_or(0);
            for &e in &self.adjacency[n] {
                let m = self.other(e, n);
                if dist[m].is_none() && keep.is_none_or(|k| k[m]) {
                    dist[m] = Some(d + 1);
                    queue.push_back(m);
                }
            }
        }
        dist
    }

    /// Whether each pair of consecutive topic entities is joined by some path.
    pub fn connects(&self, topics: &[usize]) -> bool {
        topics.windows(2).all(|w| self.distances(w[0], None)[w[1]].is_some())
    }

    /// Keeps the nodes within `slack` hops of a shortest path between consecutive topic
    /// entities (breadth-first search from both ends meets on them); one topic entity, or topic
    /// entities that do not connect, keep everything.
    pub fn reduce(&self, topics: &[usize], slack: u32) -> Reduction {
        let before = self.nodes.len();
        let mut keep = vec![topics.len() < 2; before];
        let mut connected = true;
        for w in topics.windows(2) {
            let (da, db) = (self.distances(w[0], None), self.distances(w[1], None));
            let Some(shortest) = da[w[1]] else {
                connected = false;
                break;
            };
            for (k, (a, b)) in keep.iter_mut().zip(da.iter().zip(&db)) {
                if let (Some(a), Some(b)) = (a, b) {
                    *k |= a + b <= shortest + slack;
                }
            }
        }
        if !connected {
            keep = vec![true; before];
        }
        let after = keep.iter().filter(|k| **k).count();
        Reduction { keep, before, after, connected }
    }

    /// Simple paths from `start` of 1 to `max_len` edges inside `keep`, at most `cap`, in a
    /// fixed order (depth first, edges in the order the KG gave them).
    pub fn paths_from(&self, start: usize, max_len: usize, keep: &[bool], cap: usize) -> Vec<SgPath> {
        let mut out = Vec::new();
        let mut path = SgPath { nodes: vec![start], edges: Vec::new() };
        self.walk(&mut path, max_len, keep, cap, &mut |p| Some(p.clone()), &mut out);
        out
    }

    /// Simple paths visiting `topics` in order, each stretch between two of them at most
    /// `max_stretch` edges long, inside `keep`; at most `cap`.
    pub fn paths_through(&self, topics: &[usize], max_stretch: usize, keep: &[bool], cap: usize) -> Vec<SgPath> {
        let Some(&start) = topics.first() else { return Vec::new() };
        let mut out = Vec::new();
        let mut path = SgPath { nodes: vec![start], edges: Vec::new() };
        let max_len = max_stretch * topics.len().saturating_sub(1);
        let complete = |p: &SgPath| -> Option<SgPath> {
            // Where each topic entity sits on the path, in order, each stretch short enough.
            let mut at = 0;
            for &t in &topics[1..] {
                let pos = p.nodes.iter().position(|&n| n == t)?;
                if pos <= at || pos - at > max_stretch {
                    return None;
                }
                at = pos;
            }
            (at == p.nodes.len() - 1).then(|| p.clone())
        };
        self.walk(&mut path, max_len, keep, cap, &mut { complete }, &mut out);
        out
    }

    fn walk(
        &self,
        path: &mut SgPath,
        max_len: usize,
        keep: &[bool],
        cap: usize,
        accept: &mut dyn FnMut(&SgPath) -> Option<SgPath>,
        out: &mut Vec<SgPath>,
    ) {
        if out.len() >= cap || path.len() >= max_len {
            return;
        }
        let Some(&at) = path.nodes.last() else { return };
        for &e in &self.adjacency[at] {
            let next = self.other(e, at);
            if !keep[next] || path.nodes.contains(&next) {
                continue;
            }
            path.edges.push(e);
            path.nodes.push(next);
            if let Some(p) = accept(path) {
                out.push(p);
            }
            self.walk(path, max_len, keep, cap, accept, out);
            path.edges.pop();
            path.nodes.pop();
            if out.len() >= cap {
                return;
            }
        }
    }

    /// One shortest path from `from` to `to` of at most `max_len` edges.
    pub fn shortest_path(&self, from: usize, to: usize, max_len: usize) -> Option<SgPath> {
        let mut back: Vec<Option<(usize, usize)>> = vec![None; self.nodes.len()];
        let mut seen = vec![false; self.nodes.len()];
        seen[from] = true;
        let mut queue = VecDeque::from([(from, 0usize)]);
        while let Some((n, d)) = queue.pop_front() {
            if n == to {
                break;
            }
            if d >= max_len {
                continue;
            }
            for &e in &self.adjacency[n] {
                let m = self.other(e, n);
                if !seen[m] {
                    seen[m] = true;
                    back[m] = Some((n, e));
                    queue.push_back((m, d + 1));
                }
            }
        }
        if !seen[to] || from == to {
            return None;
        }
        let (mut nodes, mut edges) = (vec![to], Vec::new());
        let mut at = to;
        while let Some((prev, e)) = back[at] {
            nodes.push(prev);
            edges.push(e);
            at = prev;
        }
        nodes.reverse();
        edges.reverse();
        Some(SgPath { nodes, edges })
    }
}

fn flip(d: Direction) -> Direction {
    match d {
        Direction::Out => Direction::In,
        Direction::In => Direction::Out,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn e(id: &str) -> Term {
        Term::Entity(id.into())
    }

    /// giants -won-> ws2010 -runner_up-> rangers, giants -won-> ws2012, giants -city-> sf.
    fn graph() -> (Subgraph, [usize; 5]) {
        let mut g = Subgraph::default();
        let giants = g.node(&e("giants"), Some("Giants"), 0);
        let rangers = g.node(&e("rangers"), Some("Rangers"), 0);
        let ws10 = g.node(&e("ws2010"), Some("2010 WS"), 1);
        let ws12 = g.node(&e("ws2012"), Some("2012 WS"), 1);
        let sf = g.node(&e("sf"), Some("SF"), 1);
        g.link(giants, "won", Direction::Out, ws10);
        g.link(giants, "won", Direction::Out, ws12);
        g.link(giants, "city", Direction::Out, sf);
        g.link(rangers, "runner_up", Direction::In, ws10);
        // The same triple seen from the other end, and a parallel relation: one edge.
        g.link(ws10, "won", Direction::In, giants);
        g.link(ws10, "champion", Direction::Out, giants);
        (g, [giants, rangers, ws10, ws12, sf])
    }

    #[test]
    fn parallel_relations_cluster_into_one_edge_oriented_per_walker() {
        let (g, [giants, _, ws10, ..]) = graph();
        assert_eq!(g.edges.len(), 4);
        assert_eq!(g.triples, 5);
        let e = g.edges_of(giants)[0];
        assert_eq!(
            g.relations_from(e, giants),
            vec![("won".into(), Direction::Out), ("champion".into(), Direction::In)]
        );
        assert_eq!(g.relations_from(e, ws10), vec![("won".into(), Direction::In), ("champion".into(), Direction::Out)]);
    }

    #[test]
    fn reduction_keeps_the_connecting_nodes_only() {
        let (g, [giants, rangers, ws10, ws12, sf]) = graph();
        let r = g.reduce(&[giants, rangers], 0);
        assert!(r.connected);
        assert_eq!((r.before, r.after), (5, 3));
        assert!(r.keep[ws10] && !r.keep[ws12] && !r.keep[sf]);
        let paths = g.paths_through(&[giants, rangers], 2, &r.keep, 100);
        assert_eq!(paths.len(), 1);
        assert_eq!(paths[0].nodes, vec![giants, ws10, rangers]);
        // One topic entity keeps everything; paths up to a length, in a fixed order.
        let all = g.reduce(&[giants], 0);
        assert_eq!(all.after, 5);
        let from = g.paths_from(giants, 2, &all.keep, 100);
        assert_eq!(from.iter().map(SgPath::len).collect::<Vec<_>>(), vec![1, 2, 1, 1]);
        assert_eq!(g.paths_from(giants, 2, &all.keep, 2).len(), 2);
    }

    #[test]
    fn disconnected_topics_keep_everything_and_shortest_paths_are_found() {
        let (mut g, [giants, _, _, ws12, sf]) = graph();
        let lone = g.node(&e("lone"), None, 0);
        let r = g.reduce(&[giants, lone], 0);
        assert!(!r.connected);
        assert_eq!(r.after, r.before);
        assert!(!g.connects(&[giants, lone]));
        assert_eq!(g.shortest_path(ws12, sf, 3).map(|p| p.nodes), Some(vec![ws12, giants, sf]));
        assert_eq!(g.shortest_path(ws12, sf, 1), None);
        assert_eq!(g.shortest_path(giants, lone, 5), None);
    }
}
