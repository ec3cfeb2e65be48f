//! `ongraph fix`: correct the knowledge graph through the overlay.

use super::overlay::{kg_scope, open_store};
use super::{SetupArgs, open_kg};
use crate::config::Config;
use crate::kg::{KnowledgeGraph, RelationRef, Term};
use crate::overlay::export::{ExportFormat, export};
use crate::overlay::store::CorrectionStore;
use crate::overlay::{Correction, CorrectionContext, Draft, Op, OverlayKg, check_relabel, default_author, validate_id};
use anyhow::{Context as _, Result, bail};
use clap::{Args, Subcommand};
use std::io::{BufRead, Write};
use std::path::PathBuf;
use std::sync::Arc;

#[derive(Debug, Args)]
pub struct FixArgs {
    #[command(subcommand)]
    pub action: FixAction,
    #[command(flatten)]
    pub setup: SetupArgs,
}

/// Why and where a correction is made.
#[derive(Debug, Args, Clone)]
pub struct Why {
    /// Why the fact is wrong (recorded with the correction).
    #[arg(long)]
    pub reason: String,
    /// The question being answered when the error was found.
    #[arg(long)]
    pub question: Option<String>,
}

#[derive(Debug, Subcommand)]
pub enum FixAction {
    /// Hide a wrong triple. OBJECT in double quotes is a literal: '"2014"'.
    Retract {
        subject: String,
        relation: String,
        object: String,
        #[command(flatten)]
        why: Why,
    },
    /// Add a missing triple (its entities may be new to the KG).
    Assert {
        subject: String,
        relation: String,
        object: String,
        #[command(flatten)]
        why: Why,
    },
    /// Replace a triple's wrong object with the right one, as one correction (one undo): OLD
    /// is hidden, NEW asserted. With --label, NEW is an entity new to the KG, given that name.
    Replace {
        subject: String,
        relation: String,
        old: String,
        new: String,
        /// The name of NEW, an entity the KG does not have yet.
        #[arg(long)]
        label: Option<String>,
        #[command(flatten)]
        why: Why,
    },
    /// Show an entity under another name.
    Relabel {
        entity: String,
        label: String,
        #[command(flatten)]
        why: Why,
    },
    /// List this KG's corrections (undone ones too).
    List {
        #[arg(long)]
        json: bool,
    },
    /// Undo a correction (it stays in the history).
    Undo { id: u64 },
    /// Print the active corrections as a patch (nt, sparql-update) or all as JSON lines.
    Export {
        #[arg(long, value_enum, default_value = "sparql-update")]
        format: ExportFormat,
    },
    /// Add the corrections in a JSON-lines export to this KG's overlay.
    Import { file: PathBuf },
}

fn object_term(text: &str) -> Result<Term> {
    match text.strip_prefix('"').and_then(|t| t.strip_suffix('"')) {
        Some(value) => Ok(Term::Literal(value.to_string())),
        None => {
            validate_id("object", text).map_err(anyhow::Error::msg)?;
            Ok(Term::Entity(text.to_string()))
        }
    }
}

fn triple(subject: &str, relation: &str, object: &str) -> Result<(String, String, Term)> {
    validate_id("subject", subject).map_err(anyhow::Error::msg)?;
    validate_id("relation", relation).map_err(anyhow::Error::msg)?;
    Ok((subject.to_string(), relation.to_string(), object_term(object)?))
}

/// Whether the KG (through the current corrections) holds this triple.
async fn holds(kg: &dyn KnowledgeGraph, s: &str, r: &str, o: &Term) -> Result<bool> {
    Ok(kg.neighbours(s, &RelationRef::out(r)).await?.iter().any(|n| n.term == *o))
}

pub async fn fix(args: FixArgs, config: &Config) -> Result<i32> {
    let scope = kg_scope(&args.setup, config);
    let author = default_author(config.defaults.author.as_deref());
    let draft = |op: Op, why: &Why| Draft {
        op,
        reason: why.reason.trim().to_string(),
        // Typed by a user: whatever the reason says, not an LLM-generated triple.
        generated: false,
        author: author.clone(),
        context: why.question.clone().map(|q| CorrectionContext { question: Some(q), ..Default::default() }),
        origin: None,
    };
    let mut out = std::io::stdout().lock();
    match &args.action {
        FixAction::Retract { subject, relation, object, why }
        | FixAction::Assert { subject, relation, object, why } => {
            let (s, r, o) = triple(subject, relation, object)?;
            if why.reason.trim().is_empty() {
                bail!("--reason must say why the fact is wrong");
            }
            let store = open_store(config)?;
            let kg = current_view(&args.setup, config, &store, &scope)?;
            let retract = matches!(args.action, FixAction::Retract { .. });
            let present = holds(kg.as_ref(), &s, &r, &o).await?;
            if retract && !present {
                bail!("{} does not hold {s} {r} {o}: nothing to retract", kg.name());
            }
            if !retract && present {
                bail!("{} already holds {s} {r} {o}: nothing to assert", kg.name());
            }
            let op = if retract {
                Op::Retract { subject: s, relation: r, object: o }
            } else {
                Op::Assert { subject: s, relation: r, object: o }
            };
            let c = store.add(&scope, draft(op, why))?;
            writeln!(out, "correction {}: {}", c.id, c.op.describe())?;
        }
        FixAction::Replace { subject, relation, old, new, label, why } => {
            let (s, r, old) = triple(subject, relation, old)?;
            let new = object_term(new)?;
            if why.reason.trim().is_empty() {
                bail!("--reason must say why the fact is wrong");
            }
            if old == new {
                bail!("the new object is the old one ({old}): nothing to replace");
            }
            let label = match label.as_deref().map(str::trim) {
                None => None,
                Some("") => bail!("--label must not be empty"),
                Some(_) if !new.is_entity() => bail!("--label names a new entity: {new} is a literal"),
                Some(l) => Some(l.to_string()),
            };
            let store = open_store(config)?;
            let kg = current_view(&args.setup, config, &store, &scope)?;
            if !holds(kg.as_ref(), &s, &r, &old).await? {
                bail!("{} does not hold {s} {r} {old}: nothing to replace", kg.name());
            }
            if holds(kg.as_ref(), &s, &r, &new).await? {
                bail!("{} already holds {s} {r} {new}: retract the wrong object instead (fix retract)", kg.name());
            }
            let op = Op::Replace { subject: s, relation: r, old, new, label };
            let c = store.add(&scope, draft(op, why))?;
            writeln!(out, "correction {}: {}", c.id, c.op.describe())?;
        }
        FixAction::Relabel { entity, label, why } => {
            validate_id("entity", entity).map_err(anyhow::Error::msg)?;
            if label.trim().is_empty() || why.reason.trim().is_empty() {
                bail!("the new label and --reason must not be empty");
            }
            let store = open_store(config)?;
            let kg = current_view(&args.setup, config, &store, &scope)?;
            let current = kg.label(entity).await?;
            if current.is_none() && kg.relations(entity).await?.is_empty() {
                bail!("{} has no entity {entity}", kg.name());
            }
            check_relabel(entity, current.as_deref(), label).map_err(anyhow::Error::msg)?;
            let op = Op::Relabel { entity: entity.clone(), label: label.trim().to_string() };
            let c = store.add(&scope, draft(op, why))?;
            writeln!(out, "correction {}: {}", c.id, c.op.describe())?;
        }
        FixAction::List { json } => {
            let list = super::overlay::corrections_for(config, &scope)?;
            if *json {
                serde_json::to_writer_pretty(&mut out, &list).map_err(std::io::Error::from)?;
                writeln!(out)?;
            } else if list.is_empty() {
                writeln!(out, "no corrections for {scope}")?;
            } else {
                let mut out = super::printable::Printable::new(&mut out);
                for c in &list {
                    let state = if c.active { "active" } else { "undone" };
                    writeln!(
                        out,
                        "{:>5}  {state:<6}  {}  ({}; {} on {})",
                        c.id,
                        c.op.describe(),
                        c.reason_line(),
                        c.author,
                        c.created
                    )?;
                }
            }
        }
        FixAction::Undo { id } => {
            let c = open_store(config)?.undo(&scope, *id)?;
            writeln!(out, "correction {} undone: {}", c.id, c.op.describe())?;
        }
        FixAction::Export { format } => {
            let list = super::overlay::corrections_for(config, &scope)?;
            let (kg, _) = open_kg(&args.setup, config)?;
            write!(out, "{}", export(&list, *format, kg.profile()))?;
        }
        FixAction::Import { file } => {
            let reader = std::io::BufReader::new(
                std::fs::File::open(file).with_context(|| format!("cannot read {}", file.display()))?,
            );
            let store = open_store(config)?;
            let mut count = 0;
            for (i, line) in reader.lines().enumerate() {
                let line = line.with_context(|| format!("{}:{}", file.display(), i + 1))?;
                if line.trim().is_empty() {
                    continue;
                }
                let c: Correction = serde_json::from_str(&line)
                    .with_context(|| format!("{}:{}: not a correction", file.display(), i + 1))?;
                if !c.active {
                    continue;
                }
                c.op.validate_ids().map_err(|e| anyhow::anyhow!("{}:{}: {e}", file.display(), i + 1))?;
                let origin = format!("imported from {} (was {} in {})", file.display(), c.id, c.kg);
                // The mark comes along (for an export from before it existed, from the reason).
                let generated = c.is_llm_generated();
                let draft = Draft {
                    op: c.op,
                    reason: c.reason,
                    generated,
                    author: c.author,
                    context: c.context,
                    origin: Some(origin),
                };
                let added = store.add(&scope, draft)?;
                // Printed only once the correction is on disk.
                writeln!(out, "imported {} as {}", c.id, added.id)?;
                out.flush()?;
                count += 1;
            }
            writeln!(out, "{count} correction(s) imported into {scope}")?;
        }
    }
    Ok(0)
}

/// The KG as the user sees it now, through the store's current corrections.
fn current_view(
    setup: &SetupArgs,
    config: &Config,
    store: &dyn CorrectionStore,
    scope: &str,
) -> Result<Arc<dyn KnowledgeGraph>> {
    let (kg, _) = open_kg(setup, config)?;
    Ok(Arc::new(OverlayKg::new(kg, &store.list(scope)?)))
}
