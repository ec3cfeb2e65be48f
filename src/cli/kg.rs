//! `ongraph kg`: look at the knowledge graph as the engine sees it (corrections applied).

use super::SetupArgs;
use crate::config::Config;
use crate::kg::RelationRef;
use crate::safe_text::OneLine;
use crate::workspace::{open_kg, with_overlay};
use anyhow::Result;
use clap::{Args, Subcommand};
use std::io::Write;

#[derive(Debug, Args)]
pub struct KgArgs {
    #[command(subcommand)]
    pub action: KgAction,
    #[command(flatten)]
    pub setup: SetupArgs,
    /// Show the graph without the correction overlay.
    #[arg(long, global = true)]
    pub no_overlay: bool,
}

#[derive(Debug, Subcommand)]
pub enum KgAction {
    /// The relations around an entity, both directions.
    Relations { entity: String },
    /// The nodes reached from an entity through a relation.
    #[command(alias = "neighbours")]
    Neighbors {
        entity: String,
        relation: String,
        /// Follow the relation backwards (the entity is the tail).
        #[arg(long)]
        incoming: bool,
    },
    /// Entities whose name matches LABEL (exact, then close).
    Search {
        label: String,
        #[arg(long, default_value = "10", value_parser = crate::settings_patch::whole_number::<usize>)]
        limit: usize,
    },
}

pub async fn kg(args: KgArgs, config: &Config) -> Result<i32> {
    if !args.no_overlay {
        super::sync_and_say(&args.setup.selection(), config).await?;
    }
    let (base, _) = open_kg(&args.setup.selection(), config)?;
    let (kg, _) = with_overlay(base, config, &args.setup.selection(), !args.no_overlay)?;
    let mut out = crate::printable::Printable::new(std::io::stdout().lock());
    match args.action {
        KgAction::Relations { entity } => {
            let entity = entity_of(kg.as_ref(), &entity).await?;
            let relations = kg.relations(&entity).await?;
            for r in relations {
                writeln!(out, "{} {}", r.direction.arrow(), OneLine(&r.relation))?;
            }
        }
        KgAction::Neighbors { entity, relation, incoming } => {
            let entity = entity_of(kg.as_ref(), &entity).await?;
            let r = if incoming { RelationRef::incoming(relation) } else { RelationRef::out(relation) };
            let found = kg.neighbours(&entity, &r).await?;
            if found.is_empty() && !kg.relations(&entity).await?.contains(&r) {
                anyhow::bail!(
                    "{} has no {} relation {} at {entity}",
                    kg.name(),
                    if incoming { "incoming" } else { "outgoing" },
                    r.relation
                );
            }
            if !found.is_empty() && found.iter().all(|n| n.label.is_none()) {
                // Names that all come out empty are usually the wrong profile, not the data.
                writeln!(std::io::stderr(), "{}", unnamed_note(kg.as_ref()))?;
            }
            for n in found {
                let label = n.label.as_deref().unwrap_or("(unnamed)");
                let mark = n.correction.map(|id| format!("  [correction {id}]")).unwrap_or_default();
                writeln!(out, "{}\t{}{mark}", OneLine(&n.term.to_string()), OneLine(label))?;
            }
        }
        KgAction::Search { label, limit } => {
            let found = kg.find_entities(&label, limit).await?;
            if found.is_empty() {
                // Silence would read as "the command did nothing".
                let hint = if args.no_overlay { "" } else { " (--no-overlay searches the names before corrections)" };
                anyhow::bail!(
                    "{} has no entity named like {label:?}{hint}; it is read with the {} profile",
                    kg.name(),
                    kg.profile().name()
                );
            }
            for m in found {
                let how = if m.exact { "exact".to_string() } else { format!("{:.2}", m.score) };
                writeln!(out, "{}\t{}\t{how}", OneLine(&m.id), OneLine(&m.label))?;
            }
        }
    }
    Ok(0)
}

/// The entity `given` names: an id the KG has, else the one entity whose name it is exactly
/// (as `--topic` takes names; said on stderr), else an error saying so.
async fn entity_of(kg: &dyn crate::kg::KnowledgeGraph, given: &str) -> Result<String> {
    if !kg.relations(given).await?.is_empty() || kg.label(given).await?.is_some() {
        return Ok(given.to_string());
    }
    let exact: Vec<crate::kg::EntityMatch> =
        kg.find_entities(given, 5).await?.into_iter().filter(|m| m.exact).collect();
    match exact.as_slice() {
        [one] => {
            let mut err = crate::printable::Printable::new(std::io::stderr().lock());
            writeln!(err, "note: {} is the entity named {}", OneLine(&one.id), OneLine(given))?;
            Ok(one.id.clone())
        }
        [] => anyhow::bail!("{} has no entity {given} (search by name with `ongraph kg search`)", kg.name()),
        many => anyhow::bail!(
            "{} has {} entities named {given:?} ({}): give one's id",
            kg.name(),
            many.len(),
            many.iter().map(|m| m.id.as_str()).collect::<Vec<_>>().join(", ")
        ),
    }
}

/// Why every neighbour came out unnamed: the profile the KG was read with, and the one that
/// takes ids as names.
fn unnamed_note(kg: &dyn crate::kg::KnowledgeGraph) -> String {
    let profile = kg.profile();
    let names = profile.label_predicates.first().map(String::as_str).unwrap_or("no predicate");
    if profile.label_from_id {
        format!("note: none of these has a name (read with the {} profile)", profile.name())
    } else {
        format!(
            "note: none of these has a name: {} is read with the {} profile, which takes names from {names}; \
             a KG whose ids are names (PathQuestion, MetaQA) wants --kg-profile named-ids (or profile = \"named-ids\" in its [kg] entry)",
            kg.name(),
            profile.name()
        )
    }
}
