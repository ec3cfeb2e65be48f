//! The user's changes to a run between steps, as data.

use super::beam::{Beam, NodeId};
use crate::kg::{RelationRef, Term};
use serde::{Deserialize, Serialize};

/// A change a caller makes between two steps.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(tag = "op", rename_all = "snake_case")]
pub enum Override {
    /// Keep a candidate the last prune dropped (or never scored).
    Keep {
        node: NodeId,
    },
    /// Drop a candidate the last prune kept.
    Drop {
        node: NodeId,
    },
    /// Add a relation under a frontier entity (after relation pruning), or an entity under a
    /// kept relation (after entity pruning), that the model never proposed.
    AddRelation {
        parent: NodeId,
        relation: RelationRef,
    },
    AddEntity {
        parent: NodeId,
        term: Term,
        label: Option<String>,
    },
    /// Keep this path in front of the model whatever later pruning does.
    Pin {
        node: NodeId,
    },
    /// Remove this path (and all below it) from the beam.
    PrunePath {
        node: NodeId,
    },
    /// Skip the model's sufficiency check: answer now from the paths.
    ForceSufficient,
    /// Overrule a "sufficient" verdict (or skip the check): explore one more depth.
    ForceContinue,
    /// GoG: replace the action the model chose (and optionally its thought) before it runs.
    EditAction {
        #[serde(default, skip_serializing_if = "Option::is_none")]
        thought: Option<String>,
        action: String,
    },
}

impl Override {
    /// The change in words, for messages (never Rust's debug text).
    pub fn describe(&self) -> String {
        match self {
            Override::Keep { node } => format!("keep node {node}"),
            Override::Drop { node } => format!("drop node {node}"),
            Override::AddRelation { parent, relation } => {
                format!("add relation {} under node {parent}", relation.relation)
            }
            Override::AddEntity { parent, term, label } => {
                format!("add {} under node {parent}", label.as_deref().unwrap_or(term.as_str()))
            }
            Override::Pin { node } => format!("pin node {node}"),
            Override::PrunePath { node } => format!("prune the path at node {node}"),
            Override::ForceSufficient => "force \"sufficient\"".into(),
            Override::ForceContinue => "force another depth".into(),
            Override::EditAction { action, .. } => format!("edit the action to {action}"),
        }
    }

    /// The change in words with its nodes named as the tree shows them (`keep
    /// location.location.containedby under Canberra`), for messages to people.
    pub fn describe_in(&self, beam: &Beam) -> String {
        let name = |id: NodeId| match beam.get(id) {
            Some(node) => match node.parent.and_then(|p| beam.get(p)) {
                Some(parent) => format!("{} under {}", node.shown(), parent.shown()),
                None => node.shown().to_string(),
            },
            None => format!("node {id} (not in the tree)"),
        };
        match self {
            Override::Keep { node } => format!("keep {}", name(*node)),
            Override::Drop { node } => format!("drop {}", name(*node)),
            Override::AddRelation { parent, relation } => {
                format!("add relation {} under {}", relation.relation, name(*parent))
            }
            Override::AddEntity { parent, term, label } => {
                format!("add {} under {}", label.as_deref().unwrap_or(term.as_str()), name(*parent))
            }
            Override::Pin { node } => format!("pin {}", name(*node)),
            Override::PrunePath { node } => format!("prune the path at {}", name(*node)),
            other => other.describe(),
        }
    }
}
