//! The beam as a tree of every candidate ever considered, not only the survivors. Each node is
//! one record (what it is, how it was reached, its score, its status, where it came from), so
//! ids, labels and scores can never drift apart. The tree knows nothing of a particular method:
//! ToG hangs relation nodes under entity nodes and entity nodes under relation nodes; other
//! methods hang what they need.

use crate::kg::{Direction, Term};
use serde::{Deserialize, Serialize};

pub type NodeId = usize;

/// What a node stands for.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum NodeKind {
    /// An entity or literal value. `label` is `None` for unnamed (mediator) nodes.
    Entity { term: Term, label: Option<String> },
    /// A relation traversed from the parent entity, in `direction`; `shown` is its display form.
    Relation { relation: String, direction: Direction, shown: String },
}

/// Why a node is (or is not) part of the beam.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Status {
    /// Found, not yet scored.
    Candidate,
    Kept,
    /// Scored too low: zero, or not chosen by the model.
    PrunedByScore,
    /// Scored but beyond the beam width.
    PrunedByWidth,
    /// Not scored: dropped by seeded sampling of an oversized candidate set.
    PrunedBySample,
    PrunedByUser,
    PinnedByUser,
    AddedByUser,
}

impl Status {
    /// Whether the node is on the beam (its path may be extended and shown to the model).
    pub fn is_live(self) -> bool {
        matches!(self, Status::Kept | Status::PinnedByUser | Status::AddedByUser)
    }
    pub fn symbol(self) -> &'static str {
        match self {
            Status::Candidate => "?",
            Status::Kept => "+",
            Status::PrunedByScore => "-",
            Status::PrunedByWidth => "~",
            Status::PrunedBySample => "%",
            Status::PrunedByUser => "x",
            Status::PinnedByUser => "*",
            Status::AddedByUser => "^",
        }
    }
    /// The status in words, for people.
    pub fn describe(self) -> &'static str {
        match self {
            Status::Candidate => "not scored yet",
            Status::Kept => "kept",
            Status::PrunedByScore => "pruned by its score",
            Status::PrunedByWidth => "pruned by the beam width",
            Status::PrunedBySample => "sampled out",
            Status::PrunedByUser => "dropped by you",
            Status::PinnedByUser => "pinned by you",
            Status::AddedByUser => "added by you",
        }
    }
}

/// The reason a node the user kept carries: its status is [`Status::Kept`], as the model's keeps
/// are (it takes part in the run as they do); the reason tells them apart, for as long as the
/// node stays kept.
pub const KEPT_BY_YOU: &str = "kept by you";

/// Where a node's fact came from.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(tag = "from", rename_all = "snake_case")]
pub enum Provenance {
    /// The knowledge graph, named.
    Kg { graph: String },
    /// Named by the model (topic extraction) and linked to the graph.
    Linked { name: String },
    /// A span of the question that is a KG label (tried when no name the model gave links).
    InQuestion { span: String },
    /// Given by the user (topic entity, or added by an override).
    User,
    /// Asserted by a correction in the overlay.
    Correction { id: u64 },
    /// Written by the LLM from its own knowledge (GoG's Generate), never in the KG;
    /// `kept`: whether verification (or the user) kept it; `judged_at`: the step whose call
    /// verified it (none when there was nothing to verify against).
    Generated {
        kept: bool,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        judged_at: Option<usize>,
    },
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct BeamNode {
    pub id: NodeId,
    pub parent: Option<NodeId>,
    pub children: Vec<NodeId>,
    pub kind: NodeKind,
    /// Hop count from the topic entity (topic entities are depth 0; a relation node and the
    /// entities it reaches share the depth of that hop).
    pub depth: u32,
    /// The score this node was given by its own scoring step, normalised (None until scored).
    pub score: Option<f64>,
    /// The product of the scores from the topic entity down to this node.
    pub path_score: f64,
    pub status: Status,
    /// A few words on why it has that status (e.g. "not chosen by the model", "sampled out").
    pub reason: Option<String>,
    pub provenance: Provenance,
    /// The trace step that last scored or changed this node.
    pub step: Option<usize>,
    /// Other copies of this entity reached at the same hop by other paths, merged into this one
    /// beam slot: their paths are shown with this one, and a hop back across one of their
    /// triples is still a hop forward along another.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub also_via: Vec<NodeId>,
}

/// How an unnamed (mediator) entity is shown to a model, as the ToG papers' prompts do.
pub(crate) const UNNAMED: &str = "UnName_Entity";

impl BeamNode {
    pub fn term(&self) -> Option<&Term> {
        match &self.kind {
            NodeKind::Entity { term, .. } => Some(term),
            NodeKind::Relation { .. } => None,
        }
    }
    /// How the node is shown to a model: its label, `UnName_Entity` for unnamed entities.
    pub fn shown(&self) -> &str {
        match &self.kind {
            NodeKind::Entity { label: Some(l), .. } => l,
            NodeKind::Entity { label: None, .. } => UNNAMED,
            NodeKind::Relation { shown, .. } => shown,
        }
    }
    pub fn is_named(&self) -> bool {
        !matches!(self.kind, NodeKind::Entity { label: None, .. })
    }

    /// Whether the user kept this node (a candidate the model pruned, or never scored).
    pub fn kept_by_user(&self) -> bool {
        self.status == Status::Kept && self.reason.as_deref() == Some(KEPT_BY_YOU)
    }

    /// The status to show: a node the user kept is shown as the user's (`*`, as a pin), never
    /// as one the model kept.
    pub fn shown_status(&self) -> Status {
        if self.kept_by_user() { Status::PinnedByUser } else { self.status }
    }

    /// The status in words, with why when that says more: `kept by you against the model's
    /// score`, `rejected by verification`, `pruned by the beam width (beyond the beam width)`.
    pub fn describe_status(&self) -> String {
        if self.kept_by_user() {
            return match self.score {
                Some(s) if s <= 0.0 => "kept by you against the model's score".into(),
                Some(_) => KEPT_BY_YOU.into(),
                None => "kept by you (the model never scored it)".into(),
            };
        }
        if self.status == Status::PrunedByScore && matches!(self.provenance, Provenance::Generated { .. }) {
            // GoG's verification keeps or rejects what the model wrote; it gives no score.
            return "rejected by verification".into();
        }
        // The user's own statuses say why already.
        match self.reason.as_deref().filter(|r| !r.contains("by the user")) {
            Some(reason) => format!("{} ({reason})", self.status.describe()),
            None => self.status.describe().to_string(),
        }
    }
}

#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Beam {
    pub nodes: Vec<BeamNode>,
}

/// One triple on a path, as shown to the model and the user.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct TripleView {
    pub head: String,
    /// The relation as shown.
    pub relation: String,
    /// The relation's id in the KG.
    pub relation_id: String,
    pub tail: String,
    pub head_term: Term,
    pub tail_term: Term,
}

impl TripleView {
    pub fn line(&self) -> String {
        format!("{}, {}, {}", self.head, self.relation, self.tail)
    }
}

impl Beam {
    pub fn add(&mut self, parent: Option<NodeId>, kind: NodeKind, provenance: Provenance) -> NodeId {
        let id = self.nodes.len();
        let (depth, path_score) = match parent.and_then(|p| self.nodes.get(p)) {
            Some(p) => (if matches!(kind, NodeKind::Relation { .. }) { p.depth + 1 } else { p.depth }, p.path_score),
            None => (0, 1.0),
        };
        self.nodes.push(BeamNode {
            id,
            parent,
            children: Vec::new(),
            kind,
            depth,
            score: None,
            path_score,
            status: Status::Candidate,
            reason: None,
            provenance,
            step: None,
            also_via: Vec::new(),
        });
        if let Some(p) = parent.and_then(|p| self.nodes.get_mut(p)) {
            p.children.push(id);
        }
        id
    }

    pub fn get(&self, id: NodeId) -> Option<&BeamNode> {
        self.nodes.get(id)
    }

    pub fn node_mut(&mut self, id: NodeId) -> Option<&mut BeamNode> {
        self.nodes.get_mut(id)
    }

    /// Sets a node's score, its path score (parent's path score × score), status and reason.
    pub fn score(&mut self, id: NodeId, score: f64, step: usize) {
        let parent_score = self.nodes[id].parent.map(|p| self.nodes[p].path_score).unwrap_or(1.0);
        let node = &mut self.nodes[id];
        node.score = Some(score);
        node.path_score = parent_score * score;
        node.step = Some(step);
    }

    pub fn set_status(&mut self, id: NodeId, status: Status, reason: Option<&str>, step: usize) {
        if let Some(node) = self.nodes.get_mut(id) {
            node.status = status;
            node.reason = reason.map(str::to_string);
            node.step = Some(step);
        }
    }

    pub fn roots(&self) -> impl Iterator<Item = &BeamNode> {
        self.nodes.iter().filter(|n| n.parent.is_none())
    }

    /// The nodes from the root down to `id`, inclusive.
    pub fn path(&self, id: NodeId) -> Vec<NodeId> {
        let mut path = vec![id];
        let mut at = id;
        while let Some(p) = self.nodes.get(at).and_then(|n| n.parent) {
            path.push(p);
            at = p;
        }
        path.reverse();
        path
    }

    /// Whether every node from the root to `id` is live (a pruned ancestor kills the path).
    pub fn is_live_path(&self, id: NodeId) -> bool {
        self.path(id).iter().all(|&n| self.nodes[n].status.is_live())
    }

    /// The triples along the path to `id`, oriented as stored in the graph (head, relation,
    /// tail): an incoming relation puts the child entity at the head.
    pub fn triples(&self, id: NodeId) -> Vec<TripleView> {
        let path = self.path(id);
        let mut out = Vec::new();
        for window in path.windows(3) {
            let (from, rel, to) = (&self.nodes[window[0]], &self.nodes[window[1]], &self.nodes[window[2]]);
            let (NodeKind::Relation { direction, shown, relation }, Some(from_term), Some(to_term)) =
                (&rel.kind, from.term(), to.term())
            else {
                // Windows centred on an entity (relation, entity, relation) carry no triple.
                continue;
            };
            let (head, tail) = match direction {
                Direction::Out => (from, to),
                Direction::In => (to, from),
            };
            let (head_term, tail_term) = match direction {
                Direction::Out => (from_term, to_term),
                Direction::In => (to_term, from_term),
            };
            out.push(TripleView {
                head: head.shown().to_string(),
                relation: shown.clone(),
                relation_id: relation.clone(),
                tail: tail.shown().to_string(),
                head_term: head_term.clone(),
                tail_term: tail_term.clone(),
            });
        }
        out
    }

    /// The path to `id` as text: `Canberra -> location.location.containedby -> Australia`.
    pub fn path_text(&self, id: NodeId) -> String {
        let mut text = String::new();
        for (i, &n) in self.path(id).iter().enumerate() {
            let node = &self.nodes[n];
            if i > 0 {
                text.push(' ');
            }
            match &node.kind {
                NodeKind::Relation { direction, shown, .. } => {
                    text.push_str(direction.arrow());
                    text.push(' ');
                    text.push_str(shown);
                    text.push(' ');
                    text.push_str(direction.arrow());
                }
                NodeKind::Entity { .. } => text.push_str(node.shown()),
            }
        }
        text
    }

    /// The node whose beam slot the path to `id` was merged into: it reached an entity another
    /// path holds at the same hop ([`BeamNode::also_via`]).
    pub fn merged_into(&self, id: NodeId) -> Option<NodeId> {
        self.nodes.iter().find(|n| n.also_via.contains(&id)).map(|n| n.id)
    }

    /// Marks `id` and everything below it with `status` (used for pruning a whole path).
    pub fn set_subtree(&mut self, id: NodeId, status: Status, reason: &str, step: usize) {
        let mut stack = vec![id];
        while let Some(n) = stack.pop() {
            self.set_status(n, status, Some(reason), step);
            stack.extend(self.nodes[n].children.iter().copied());
        }
    }
}
