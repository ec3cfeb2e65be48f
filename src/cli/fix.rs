//! `ongraph fix`: correct the knowledge graph through the overlay.

use super::SetupArgs;
use crate::config::Config;
use crate::kg::{KnowledgeGraph, RelationRef, Term};
use crate::overlay::export::{ExportFormat, Vocabulary, export};
use crate::overlay::store::CorrectionStore;
use crate::overlay::team::Team;
use crate::overlay::team_state::{Sharing, State, states, verdict};
use crate::overlay::{Correction, CorrectionContext, Draft, Op, OverlayKg, check_relabel, default_author, validate_id};
use crate::safe_text::OneLine;
use crate::workspace::{
    self, Change, KgScope, change_correction, open_kg, open_store, open_team, store_drafts, sync_team,
};
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
    /// Which kept runs (saved sessions, eval records) a correction touches: those whose answer
    /// rests on it, those that read it while searching, and those other corrections they did
    /// not see moved since.
    Impact(super::impact::ImpactArgs),
    /// List this KG's corrections (undone ones too), with their authors and, with a shared
    /// set, whether each is shared, pending (not sent yet) or in conflict.
    List {
        #[arg(long)]
        json: bool,
    },
    /// Undo a correction (it stays in the history; a shared one is undone for the team too).
    Undo { id: u64 },
    /// Send the corrections not yet shared and pull the team's new ones.
    Sync {
        /// Pull every record of the set, not only those published since the last pull.
        #[arg(long)]
        full: bool,
    },
    /// Settle a conflict: set this correction aside for the one it conflicts with.
    Supersede {
        id: u64,
        /// Why the other correction is kept.
        #[arg(long)]
        reason: Option<String>,
    },
    /// Teammates' corrections not reviewed yet; `approve ID` or `reject ID` reviews one.
    Review {
        #[command(subcommand)]
        verdict: Option<ReviewAction>,
    },
    /// Print the active corrections as a patch in the KG's own vocabulary (tsv, nt,
    /// sparql-update) or all as JSON lines.
    Export {
        /// [default: tsv for a tab-separated KG, else sparql-update; jsonl with --salvage]
        #[arg(long, value_enum)]
        format: Option<ExportFormat>,
        /// Only teammates' corrections whose latest review approves them (of the shared set in
        /// use, else of every set): the patch for the KG's maintainers.
        #[arg(long, conflicts_with = "salvage")]
        approved: bool,
        /// From a damaged store: every correction that can still be read (the store is left
        /// as it is), as JSON lines that `fix import` takes into a fresh store.
        #[arg(long)]
        salvage: bool,
    },
    /// Add the corrections in a JSON-lines export to this KG's overlay.
    Import { file: PathBuf },
}

/// A review of a teammate's correction (a record of its own, shared like a correction).
#[derive(Debug, Subcommand)]
pub enum ReviewAction {
    /// The correction is right (under `apply = "approved"` it applies from then on).
    Approve {
        id: u64,
        #[arg(long)]
        reason: Option<String>,
    },
    /// The correction is wrong (under `apply = "approved"` it no longer applies).
    Reject {
        id: u64,
        #[arg(long)]
        reason: Option<String>,
    },
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
    let scope = KgScope::of(&args.setup.selection(), config);
    let author = default_author(config.defaults.author.as_deref());
    if let FixAction::Export { format, salvage: true, .. } = &args.action {
        return salvage(&args.setup, config, &scope, format.unwrap_or(ExportFormat::Jsonl));
    }
    let team = open_team(&args.setup.selection(), config)?;
    // What teammates did first: a correction is checked against, and based on, the KG as they
    // left it. `fix sync` says what it did itself.
    let before = match (&team, &args.action) {
        (Some(t), action) if !matches!(action, FixAction::Sync { .. }) => Some(sync_team(t, config, false).await?),
        _ => None,
    };
    let mut out = std::io::stdout().lock();
    let cx = Fixing { setup: &args.setup, config, scope: &scope, team: team.as_ref() };
    let made = match &args.action {
        // Its own report: nothing is stored or synced after it.
        FixAction::Impact(impact) => {
            return super::impact::impact(&mut out, impact, &args.setup.selection(), config, &scope).await;
        }
        action => cx.act(&mut out, action, &author).await?,
    };
    let made_any = made.is_some();
    if let Some(draft) = made {
        cx.store(&mut out, draft)?;
    }
    // Sent at once when it can be; said when it cannot (it is stored all the same).
    let changed = made_any
        || matches!(
            args.action,
            FixAction::Undo { .. } | FixAction::Supersede { .. } | FixAction::Review { verdict: Some(_) }
        );
    // What the first sync's pull skipped is said too (the second one's finds nothing new).
    let mut lines = before.as_ref().map(|b| b.remarks.clone()).unwrap_or_default();
    let last = match &team {
        Some(team) if changed => Some(sync_team(team, config, false).await?),
        _ => before,
    };
    lines.extend(last.and_then(|s| s.note()));
    say_on_stderr(&lines)?;
    Ok(0)
}

/// A correction the user typed: `op`, for the reason (and question) `why`.
fn draft(op: Op, why: &Why, author: &str) -> Draft {
    Draft {
        op,
        reason: why.reason.trim().to_string(),
        // Typed by a user: whatever the reason says, not an LLM-generated triple.
        generated: false,
        author: author.to_string(),
        context: why.question.clone().map(|q| CorrectionContext { question: Some(q), ..Default::default() }),
        origin: None,
    }
}

/// What the sync around a change said, on stderr (so `fix list --json` and `fix export` stay
/// what they say they are): one line per thing said, each line's own text shown on one line.
fn say_on_stderr(lines: &[String]) -> Result<()> {
    if !lines.is_empty() {
        let note = lines.join("\n");
        let mut err = crate::printable::Printable::new(std::io::stderr().lock());
        for line in note.lines() {
            writeln!(err, "{}", OneLine(line))?;
        }
    }
    Ok(())
}

/// What every `fix` subcommand works with: the KG and store chosen, and the shared set in use.
struct Fixing<'a> {
    setup: &'a SetupArgs,
    config: &'a Config,
    scope: &'a KgScope,
    team: Option<&'a Team>,
}

impl Fixing<'_> {
    /// Does what `action` says; the correction it makes (for `fix` to store), if it makes one.
    /// `fix impact` is `fix`'s own: it ends `fix`.
    async fn act(&self, out: &mut impl Write, action: &FixAction, author: &str) -> Result<Option<Draft>> {
        let made = |op: Op, why: &Why| Some(draft(op, why, author));
        Ok(match action {
            FixAction::Retract { subject, relation, object, why }
            | FixAction::Assert { subject, relation, object, why } => {
                let retract = matches!(action, FixAction::Retract { .. });
                made(self.retract_or_assert(retract, subject, relation, object, why).await?, why)
            }
            FixAction::Replace { subject, relation, old, new, label, why } => {
                made(self.replace(subject, relation, old, new, label.as_deref(), why).await?, why)
            }
            FixAction::Relabel { entity, label, why } => made(self.relabel(entity, label, why).await?, why),
            // Run by `fix` itself, which it ends: never here.
            FixAction::Impact(_) => None,
            FixAction::List { json } => {
                let list = workspace::corrections_for(self.config, self.scope)?;
                list_corrections(out, &list, *json, &self.scope.key, self.team, self.config)?;
                None
            }
            FixAction::Undo { id } => {
                self.change(out, *id, &Change::Undo, "undone")?;
                None
            }
            FixAction::Supersede { id, reason } => {
                self.change(out, *id, &Change::Supersede(reason.clone()), "superseded")?;
                None
            }
            // Nothing stored, and no sync after: it says what it did itself.
            FixAction::Sync { full } => {
                self.sync(out, *full).await?;
                None
            }
            FixAction::Review { verdict: None } => {
                let list = workspace::corrections_for(self.config, self.scope)?;
                list_unreviewed(out, &list, &self.scope.key, self.config)?;
                None
            }
            FixAction::Review { verdict: Some(review) } => {
                self.review(out, review)?;
                None
            }
            FixAction::Export { format, approved, .. } => {
                self.export(out, *format, *approved)?;
                None
            }
            FixAction::Import { file } => {
                import(out, file, self.config, self.scope)?;
                None
            }
        })
    }

    /// `fix retract` / `fix assert`: the triple, checked to hold (to retract) or not yet (to
    /// assert) in the KG as the user sees it now.
    async fn retract_or_assert(
        &self,
        retract: bool,
        subject: &str,
        relation: &str,
        object: &str,
        why: &Why,
    ) -> Result<Op> {
        let (s, r, o) = triple(subject, relation, object)?;
        if why.reason.trim().is_empty() {
            bail!("--reason must say why the fact is wrong");
        }
        let kg = current_view(self.setup, self.config, self.scope)?;
        let present = holds(kg.as_ref(), &s, &r, &o).await?;
        if retract && !present {
            bail!("{} does not hold {s} {r} {o}: nothing to retract", kg.name());
        }
        if !retract && present {
            bail!("{} already holds {s} {r} {o}: nothing to assert", kg.name());
        }
        Ok(if retract {
            Op::Retract { subject: s, relation: r, object: o }
        } else {
            Op::Assert { subject: s, relation: r, object: o }
        })
    }

    /// `fix replace`: the old object held now, the new one not, and a label only for a new
    /// entity.
    async fn replace(
        &self,
        subject: &str,
        relation: &str,
        old: &str,
        new: &str,
        label: Option<&str>,
        why: &Why,
    ) -> Result<Op> {
        let (s, r, old) = triple(subject, relation, old)?;
        let new = object_term(new)?;
        if why.reason.trim().is_empty() {
            bail!("--reason must say why the fact is wrong");
        }
        if old == new {
            bail!("the new object is the old one ({old}): nothing to replace");
        }
        let label = match label.map(str::trim) {
            None => None,
            Some("") => bail!("--label must not be empty"),
            Some(_) if !new.is_entity() => bail!("--label names a new entity: {new} is a literal"),
            Some(l) => Some(l.to_string()),
        };
        let kg = current_view(self.setup, self.config, self.scope)?;
        if !holds(kg.as_ref(), &s, &r, &old).await? {
            bail!("{} does not hold {s} {r} {old}: nothing to replace", kg.name());
        }
        if holds(kg.as_ref(), &s, &r, &new).await? {
            bail!("{} already holds {s} {r} {new}: retract the wrong object instead (fix retract)", kg.name());
        }
        Ok(Op::Replace { subject: s, relation: r, old, new, label })
    }

    /// `fix relabel`: an entity the KG has, under a label it may take.
    async fn relabel(&self, entity: &str, label: &str, why: &Why) -> Result<Op> {
        validate_id("entity", entity).map_err(anyhow::Error::msg)?;
        if label.trim().is_empty() || why.reason.trim().is_empty() {
            bail!("the new label and --reason must not be empty");
        }
        let kg = current_view(self.setup, self.config, self.scope)?;
        let current = kg.label(entity).await?;
        if current.is_none() && kg.relations(entity).await?.is_empty() {
            bail!("{} has no entity {entity}", kg.name());
        }
        check_relabel(entity, current.as_deref(), label).map_err(anyhow::Error::msg)?;
        Ok(Op::Relabel { entity: entity.to_string(), label: label.trim().to_string() })
    }

    /// `fix undo` / `fix supersede`: the correction changed, and said `done`.
    fn change(&self, out: &mut impl Write, id: u64, change: &Change, done: &str) -> Result<()> {
        let (c, owner) = change_correction(self.config, self.scope, &self.setup.selection(), id, change)?;
        writeln!(out, "correction {} {done}{}: {}", c.id, owner.note(), OneLine(&c.op.describe()))?;
        Ok(())
    }

    /// `fix sync`: what was sent and pulled, then any remarks; an error when the sync could not
    /// do all it should (else `fix` ends with 0: nothing was stored, nothing is synced again).
    async fn sync(&self, out: &mut impl Write, full: bool) -> Result<()> {
        let Some(team) = self.team else {
            bail!("no shared set: configure [shared.NAME] and [defaults] shared = \"NAME\", or pass --shared NAME");
        };
        let synced = sync_team(team, self.config, full).await?;
        let rejected = if synced.rejected > 0 { format!(", {} rejected", synced.rejected) } else { String::new() };
        // A pull that was not made is not "0 new": the error line after says why.
        let pulled = match synced.pulled {
            Some(n) => format!("pulled {n} new record(s)"),
            None => "not pulled".to_string(),
        };
        writeln!(out, "pushed {} record(s) to {}{rejected}, {pulled}", synced.pushed, synced.team)?;
        for remark in &synced.remarks {
            writeln!(out, "{remark}")?;
        }
        if let Some(note) = synced.note() {
            bail!("{note}");
        }
        Ok(())
    }

    /// `fix review approve|reject ID`: the review recorded, and said.
    fn review(&self, out: &mut impl Write, action: &ReviewAction) -> Result<()> {
        let (id, approve, reason) = match action {
            ReviewAction::Approve { id, reason } => (*id, true, reason),
            ReviewAction::Reject { id, reason } => (*id, false, reason),
        };
        let review = Change::Review { approve, reason: reason.clone() };
        let (c, owner) = change_correction(self.config, self.scope, &self.setup.selection(), id, &review)?;
        let verdict = if approve { "approved" } else { "rejected" };
        writeln!(
            out,
            "correction {} by {} {verdict}{}: {}",
            c.id,
            OneLine(&c.author),
            owner.note(),
            OneLine(&c.op.describe())
        )?;
        Ok(())
    }

    /// `fix export`: the corrections that apply (never a teammate's that waits for approval),
    /// or with `approved` the teammates' ones approved, as a patch.
    fn export(&self, out: &mut impl Write, format: Option<ExportFormat>, approved: bool) -> Result<()> {
        let list = if approved {
            let set = self.team.map(|t| t.graph().to_string());
            let mut list = workspace::corrections_for(self.config, self.scope)?;
            list.retain(|c| {
                c.team
                    .as_ref()
                    .is_some_and(|t| set.as_deref().is_none_or(|s| s == t.set) && verdict(t).is_some_and(|r| r.approve))
            });
            list
        } else {
            workspace::applicable_corrections(self.config, self.scope)?
        };
        let (kg, _) = open_kg(&self.setup.selection(), self.config)?;
        let format = format.unwrap_or(default_format(self.scope));
        write!(out, "{}", export(&list, format, &Vocabulary::of(kg.as_ref())))?;
        Ok(())
    }

    /// The correction made, stored (in the shared set when there is one) and said; a note on
    /// stderr when it has no author's name.
    fn store(&self, out: &mut impl Write, draft: Draft) -> Result<()> {
        let stored = store_drafts(self.config, self.scope, self.team.map(Team::graph), vec![draft])?;
        let Some(c) = stored.into_iter().next() else { bail!("the correction was not stored") };
        writeln!(out, "correction {}: {}", c.id, OneLine(&c.op.describe()))?;
        if c.author == crate::overlay::NO_AUTHOR {
            let file = self.config.file.clone().or_else(Config::default_path).unwrap_or_else(|| "config.toml".into());
            writeln!(
                std::io::stderr(),
                "note: stored without an author's name ($USER is not set): add author = \"NAME\" under [defaults] in {}",
                file.display()
            )?;
        }
        Ok(())
    }
}

/// `fix list`: one correction a line (its state, sharing, what it does, why, who and when), or
/// JSON with the sharing and conflicts beside each.
fn list_corrections(
    out: &mut impl Write,
    list: &[Correction],
    json: bool,
    scope: &str,
    team: Option<&Team>,
    config: &Config,
) -> Result<()> {
    let states = states(list);
    // Under `apply = "approved"` (of the correction's own set), teammates' corrections wait.
    let waiting = |c: &Correction| workspace::unapproved(config, c);
    if json {
        return list_json(out, list, &states, waiting);
    }
    if list.is_empty() {
        writeln!(out, "no corrections for {scope}")?;
        return Ok(());
    }
    // The sharing column only where there is something to say.
    let sharing_shown = team.is_some() || list.iter().any(|c| c.team.is_some());
    let mut out = crate::printable::Printable::new(out);
    for (c, s) in list.iter().zip(&states) {
        let state = if c.active { "active" } else { "undone" };
        let sharing = if !sharing_shown {
            String::new()
        } else if waiting(c) && s.sharing != Sharing::Conflict {
            format!("{:<9} ", "unapproved")
        } else {
            format!("{:<9} ", s.sharing.label())
        };
        let conflict = team_remarks(list, c, s);
        writeln!(
            out,
            "{:>5}  {state:<6}  {sharing}{}  ({}; {} on {}){conflict}",
            c.id,
            OneLine(&c.op.describe()),
            OneLine(&c.reason_line()),
            OneLine(&c.author),
            OneLine(&c.created)
        )?;
    }
    Ok(())
}

/// `fix list --json`: each correction with its sharing, conflicts, whether it waits for
/// approval and its latest review.
fn list_json(
    out: &mut impl Write,
    list: &[Correction],
    states: &[State],
    waiting: impl Fn(&Correction) -> bool,
) -> Result<()> {
    #[derive(serde::Serialize)]
    struct Listed<'a> {
        #[serde(flatten)]
        correction: &'a Correction,
        sharing: Sharing,
        #[serde(skip_serializing_if = "<[u64]>::is_empty")]
        conflicts_with: &'a [u64],
        #[serde(skip_serializing_if = "std::ops::Not::not")]
        awaiting_approval: bool,
        /// The latest review's verdict ("approved", "rejected") and who gave it.
        #[serde(skip_serializing_if = "Option::is_none")]
        review: Option<&'static str>,
        #[serde(skip_serializing_if = "Option::is_none")]
        reviewed_by: Option<&'a str>,
    }
    let listed: Vec<Listed<'_>> = list
        .iter()
        .zip(states)
        .map(|(c, s)| Listed {
            correction: c,
            sharing: s.sharing,
            conflicts_with: &s.conflicts_with,
            awaiting_approval: waiting(c),
            review: c.team.as_ref().and_then(verdict).map(|r| r.verdict()),
            reviewed_by: c.team.as_ref().and_then(verdict).map(|r| r.author.as_str()),
        })
        .collect();
    crate::safe_text::json::to_writer_pretty(&mut *out, &listed).map_err(std::io::Error::from)?;
    writeln!(out)?;
    Ok(())
}

/// The end of a `fix list` line: the corrections `c` conflicts with (and by whom), why the
/// server rejected it, and its latest review; empty when there is none of these.
fn team_remarks(list: &[Correction], c: &Correction, s: &State) -> String {
    let conflict: Vec<String> = s
        .conflicts_with
        .iter()
        .filter_map(|id| list.iter().find(|o| o.id == *id))
        .map(|o| format!("{} by {}", o.id, OneLine(&o.author)))
        .collect();
    let mut conflict =
        if conflict.is_empty() { String::new() } else { format!("  conflicts with {}", conflict.join(", ")) };
    if let Some(why) = c.team.as_ref().and_then(|t| t.rejected.as_deref()) {
        conflict.push_str(&format!("  rejected: {}", OneLine(why)));
    }
    if let Some(review) = c.team.as_ref().and_then(verdict) {
        conflict.push_str(&format!("  {} by {}", review.verdict(), OneLine(&review.author)));
    }
    conflict
}

/// `fix review`: teammates' active corrections nobody has reviewed yet, one a line (those that
/// wait for approval say so).
fn list_unreviewed(out: &mut impl Write, list: &[Correction], scope: &str, config: &Config) -> Result<()> {
    let waiting: Vec<&Correction> =
        list.iter().filter(|c| c.active && c.team.as_ref().is_some_and(|t| t.pulled && t.reviews.is_empty())).collect();
    if waiting.is_empty() {
        writeln!(out, "no teammate's correction waits for review in {scope}")?;
        return Ok(());
    }
    let mut out = crate::printable::Printable::new(out);
    for c in waiting {
        let held = if workspace::unapproved(config, c) { "  (applies once approved)" } else { "" };
        writeln!(
            out,
            "{:>5}  {}  ({}; {} on {}){held}",
            c.id,
            OneLine(&c.op.describe()),
            OneLine(&c.reason_line()),
            OneLine(&c.author),
            OneLine(&c.created)
        )?;
    }
    writeln!(out, "fix review approve ID / fix review reject ID [--reason …] reviews one")?;
    Ok(())
}

/// `fix export --salvage`: what a damaged store still holds for `scope`, exported; on stderr,
/// how much was found. Nothing is synced and the store is not written.
fn salvage(setup: &SetupArgs, config: &Config, scope: &KgScope, format: ExportFormat) -> Result<i32> {
    let path = workspace::store_path(config);
    let found = crate::overlay::store::salvage(&path, &scope.keys)?;
    let (kg, _) = open_kg(&setup.selection(), config)?;
    let mut out = std::io::stdout().lock();
    write!(out, "{}", export(&found.corrections, format, &Vocabulary::of(kg.as_ref())))?;
    out.flush()?;
    let how = if found.opened { "" } else { " (sled could not open it: read from its raw files)" };
    let unreadable = match found.unreadable {
        0 => String::new(),
        n => format!("; {n} record(s) could not be decoded"),
    };
    let mut err = crate::printable::Printable::new(std::io::stderr().lock());
    writeln!(
        err,
        "salvaged {} correction(s) of {} from {}{how}{unreadable}; the store was left as it is",
        found.corrections.len(),
        scope.key,
        path.display()
    )?;
    Ok(0)
}

/// `fix import`: the active corrections of a JSON-lines export, added one by one (each printed
/// once it is on disk).
fn import(out: &mut impl Write, file: &std::path::Path, config: &Config, scope: &KgScope) -> Result<()> {
    // Every line is read and checked before one is stored: a bad line is said with its number
    // and nothing is imported, rather than the lines before it alone.
    let mut read = Vec::new();
    let opened = std::fs::File::open(file).with_context(|| format!("cannot read {}", file.display()))?;
    let reader = std::io::BufReader::new(crate::text_file::BoundedLines::new(opened));
    for (i, line) in reader.lines().enumerate() {
        let at = || format!("{}:{}", file.display(), i + 1);
        let line = line.with_context(at)?;
        // An editor on Windows may start the file with a byte-order mark.
        let line = if i == 0 { line.trim_start_matches('\u{feff}') } else { line.as_str() };
        if line.trim().is_empty() {
            continue;
        }
        let c: Correction = serde_json::from_str(line).with_context(|| format!("{}: not a correction", at()))?;
        if c.active {
            c.op.validate_ids().map_err(|e| anyhow::anyhow!("{}: {e}", at()))?;
        }
        read.push(c);
    }
    let store = open_store(config)?;
    // A correction already active here is not made twice (a backup imported again).
    let mut here: Vec<_> =
        workspace::list_scope(&store, scope)?.into_iter().filter(|c| c.active).map(|c| c.op).collect();
    let (mut count, mut undone, mut already) = (0, 0, 0);
    for c in read {
        if !c.active {
            undone += 1;
            continue;
        }
        if here.contains(&c.op) {
            already += 1;
            continue;
        }
        here.push(c.op.clone());
        let origin = format!("imported from {} (was {} in {})", file.display(), c.id, c.kg);
        // The mark comes along (for an export from before it existed, from the reason).
        let generated = c.is_llm_generated();
        let draft =
            Draft { op: c.op, reason: c.reason, generated, author: c.author, context: c.context, origin: Some(origin) };
        let added = store.add(&scope.key, draft)?;
        // Printed only once the correction is on disk.
        writeln!(out, "imported {} as {}", c.id, added.id)?;
        out.flush()?;
        count += 1;
    }
    let skipped: Vec<String> = [(undone, "undone"), (already, "already here")]
        .iter()
        .filter(|(n, _)| *n > 0)
        .map(|(n, why)| format!("{n} {why}"))
        .collect();
    let skipped = if skipped.is_empty() { String::new() } else { format!("; skipped {}", skipped.join(", ")) };
    writeln!(out, "{count} correction(s) imported into {}{skipped}", scope.key)?;
    Ok(())
}

/// A patch in the KG's own form: lines its file takes for a tab-separated KG, else SPARQL Update.
fn default_format(scope: &KgScope) -> ExportFormat {
    if scope.is_tsv() { ExportFormat::Tsv } else { ExportFormat::SparqlUpdate }
}

/// The KG as the user sees it now, through the store's current corrections.
fn current_view(setup: &SetupArgs, config: &Config, scope: &KgScope) -> Result<Arc<dyn KnowledgeGraph>> {
    let (kg, _) = open_kg(&setup.selection(), config)?;
    Ok(Arc::new(OverlayKg::new(kg, &workspace::applicable_corrections(config, scope)?)))
}
