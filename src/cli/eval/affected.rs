//! `eval --affected-only --from RUN_DIR`: which questions of an earlier run the corrections
//! touch (see `fix impact`), so only those are asked again.

use super::SetupArgs;
use crate::config::Config;
use crate::eval::record::CorrectionsSeen;
use crate::workspace;
use anyhow::{Result, bail};
use std::io::Write;
use std::path::Path;

/// `--from`'s run was made on the KG opened now: by its name, and by its file when both runs
/// keep it (two KBs of one file name are two KGs).
pub(super) fn check_same_kg(
    from: &Path,
    kg: &str,
    kg_file: Option<&str>,
    setup: &SetupArgs,
    config: &Config,
    base: &dyn crate::kg::KnowledgeGraph,
) -> Result<()> {
    let now = workspace::KgScope::of(&setup.selection(), config).canonical_file();
    if kg != base.name() || !alike_where_both_kept(kg_file, now.as_deref()) {
        bail!(
            "the run in {} was made on knowledge graph {}, not {}: pass --kg to name it",
            from.display(),
            kg_file.unwrap_or(kg),
            now.as_deref().unwrap_or(base.name())
        );
    }
    Ok(())
}

/// The questions of the run in `from` that the active corrections of `setup`'s KG touch (see
/// `fix impact`), in dataset order. Records written before each kept what it read cannot be
/// told apart: refused, never taken for untouched.
pub(super) async fn affected(
    from: &Path,
    setup: &SetupArgs,
    config: &Config,
    base: &dyn crate::kg::KnowledgeGraph,
) -> Result<Vec<usize>> {
    let (records, _torn) = crate::eval::record::read(&from.join(crate::eval::record::FILE_NAME))?;
    let old = records.iter().filter(|r| r.footprint.is_none()).count();
    if old > 0 {
        bail!(
            "{old} record(s) in {} were written before eval kept what each question read: run that eval again without --affected-only",
            from.display()
        );
    }
    let scope = workspace::KgScope::of(&setup.selection(), config);
    let now = CorrectionsSeen::of(0, &workspace::applicable_corrections(config, &scope)?).digest;
    // Every correction stored for this KG: in force now (active, and a teammate's approved or
    // not awaiting approval), or not (undone, rejected, awaiting approval since).
    let mut corrections = Vec::new();
    for mut c in workspace::corrections_for(config, &scope)? {
        c.active &= !workspace::unapproved(config, &c);
        let former = crate::impact::former_names(base, &c.op).await;
        corrections.push((c, former));
    }
    // A question asked under exactly the corrections in force now would answer the same; one
    // asked under some may have seen one that is no longer in force (which, the digest does not
    // say: every such one that touches it counts).
    let mut chosen: Vec<usize> = records
        .iter()
        .filter(|r| {
            let seen = r.corrections.as_ref();
            if seen.is_some_and(|s| s.digest == now) {
                return false;
            }
            let saw_some = seen.is_some_and(|s| s.active > 0);
            r.footprint.as_ref().is_some_and(|f| {
                corrections
                    .iter()
                    .any(|(c, former)| (c.active || saw_some) && crate::impact::touch_named(&c.op, f, former).is_some())
            })
        })
        .map(|r| r.index)
        .collect();
    chosen.sort_unstable();
    chosen.dedup();
    let active = corrections.iter().filter(|(c, _)| c.active).count();
    writeln!(
        std::io::stderr(),
        "{} of the {} questions of {} are touched by the {active} correction(s) in force or the {} not in force (undone, rejected or awaiting approval): asking those again",
        chosen.len(),
        records.len(),
        from.display(),
        corrections.len() - active
    )?;
    Ok(chosen)
}

/// Whether two runs' records of one thing (a KG file, topic ids, a prompts directory) agree:
/// equal when both kept it (a run made before runs kept it is judged by the rest alone).
pub(super) fn alike_where_both_kept(a: Option<&str>, b: Option<&str>) -> bool {
    a.zip(b).is_none_or(|(a, b)| a == b)
}
