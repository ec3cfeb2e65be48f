//! Whether a run directory may take this invocation's records: a new run, or the same run
//! resumed (the same questions chosen the same way, the same settings), by one process at a
//! time.

use super::{META, RECORDS, RunMeta, affected, without_loopback_port};
use crate::engine::{MethodId, Settings};
use anyhow::{Context as _, Result, bail};
use serde::{Deserialize, Serialize};
use std::fs::File;
use std::io::Write as _;
use std::path::Path;

/// How the questions of a run that is no split were chosen (`--limit`, `--sample`): the same
/// `--sample` (of the same `--limit`) picks other questions when it changes, so a resume must
/// keep it; `--take` may change (it only cuts the list).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub(super) struct Selection {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub limit: Option<usize>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sample: Option<usize>,
}

impl Selection {
    /// Whether a run chosen as `self` resumes as `now`: a sample only of the same pool.
    fn resumes_as(self, now: Selection) -> bool {
        self.sample == now.sample && (self.sample.is_none() || self.limit == now.limit)
    }
}

/// The run directory held by this process: its lock file (`.eval.lock`, kept, never
/// removed: removing one races with a process opening it), locked, so a second `eval` on the
/// same `--out` (a resume started while the run goes on) is refused instead of asking every
/// question again beside it. Released when dropped (or the process ends, however it ends).
#[derive(Debug)]
pub(super) struct Held {
    _lock: File,
}

/// The lock file of a run directory (see [`Held`]).
const LOCK: &str = ".eval.lock";

/// `settings` as two runs compare, each fallback only where its method reads it: GoG's, which
/// files written before it lack (and so read as the paper's), changes no other method's run,
/// and ToG's none but ToG's and ToG-R's (so `--fallback own-knowledge` resumes a GoG run
/// saved before GoG's was kept).
fn comparable(settings: &Settings) -> Settings {
    let mut s = settings.clone();
    let defaults = Settings::default();
    if s.method != MethodId::GOG {
        s.gog.gog_fallback = defaults.gog.gog_fallback;
    }
    if s.method != MethodId::TOG && s.method != MethodId::TOG_R {
        s.fallback = defaults.fallback;
    }
    s
}

/// Makes `out`, or checks a run there is the same run before resuming it; then writes `meta`
/// as its run.json and holds the directory (see [`Held`]).
pub(super) fn prepare_dir(out: &Path, meta: &RunMeta, resume: bool) -> Result<Held> {
    let records = out.join(RECORDS);
    let has_records = std::fs::metadata(&records).is_ok_and(|m| m.len() > 0);
    if has_records && !resume {
        bail!("{} already holds a run: add --resume to continue it, or choose another --out", out.display());
    }
    std::fs::create_dir_all(out).with_context(|| format!("cannot create {}", out.display()))?;
    let held = hold(out)?;
    let path = out.join(META);
    if has_records {
        let text = crate::text_file::read(&path).with_context(|| format!("cannot read {}", path.display()))?;
        let before: RunMeta = serde_json::from_str(&text)
            .with_context(|| format!("{} is not an eval run description", path.display()))?;
        check_same_run(out, &before, meta)?;
    }
    // Written first, so an interrupted run can be resumed and summarised; beside, then renamed
    // over the old one, so a crash leaves one or the other whole.
    let cannot = || format!("cannot write {}", path.display());
    let fresh = out.join(format!("{META}.rewrite"));
    let mut file = File::create(&fresh).with_context(cannot)?;
    file.write_all(crate::safe_text::json::to_string_pretty(meta)?.as_bytes()).with_context(cannot)?;
    file.sync_data().with_context(cannot)?;
    std::fs::rename(&fresh, &path).with_context(cannot)?;
    Ok(held)
}

/// Locks `out`'s lock file, or says who holds it.
fn hold(out: &Path) -> Result<Held> {
    let path = out.join(LOCK);
    let lock = File::options()
        .write(true)
        .create(true)
        .truncate(false)
        .open(&path)
        .with_context(|| format!("cannot open {}", path.display()))?;
    match lock.try_lock() {
        Ok(()) => Ok(Held { _lock: lock }),
        Err(std::fs::TryLockError::WouldBlock) => {
            bail!("{} is being written by another `ongraph eval` (still running?): one run at a time", out.display())
        }
        Err(std::fs::TryLockError::Error(e)) => Err(e).with_context(|| format!("cannot lock {}", path.display())),
    }
}

/// Refuses to resume `before` (the run in `out`) as `now` when the two would mix: other
/// settings, other questions, another KG, model or prompts. What a run made before a field was
/// kept does not say is judged by the rest.
fn check_same_run(out: &Path, before: &RunMeta, now: &RunMeta) -> Result<()> {
    // The corrections themselves may change between two invocations (as they may during one):
    // each record says which it saw. Whether they apply at all is a setting.
    let with_corrections = match (before.with_corrections, now.with_corrections) {
        (Some(a), Some(b)) => a == b,
        _ => true,
    };
    let same = |a: &RunMeta, b: &RunMeta| {
        (&a.dataset, a.format, &a.kg, without_loopback_port(&a.llm), comparable(&a.settings))
            == (&b.dataset, b.format, &b.kg, without_loopback_port(&b.llm), comparable(&b.settings))
            && affected::alike_where_both_kept(a.kg_file.as_deref(), b.kg_file.as_deref())
            && affected::alike_where_both_kept(a.topic_ids.as_deref(), b.topic_ids.as_deref())
    };
    // A run of one split never takes questions of the other, nor of a sample.
    let same_questions =
        before.split == now.split && before.selection.zip(now.selection).is_none_or(|(then, now)| then.resumes_as(now));
    // A run made with --prompts never goes on with the built-in ones; one whose run.json does
    // not say (made before runs kept it) is said to be resumed with the ones given.
    let (same_prompts, unsaid) = match (&before.prompts, &now.prompts) {
        (Some(then), Some(now)) => (then == now, None),
        (Some(_), None) => (false, None),
        (None, Some(now)) => (true, Some(now)),
        (None, None) => (true, None),
    };
    if !(same(before, now) && with_corrections && same_questions && same_prompts) {
        bail!(
            "{} was run with different settings, so --resume would mix two runs:\n  then: {}\n  now:  {}",
            out.display(),
            crate::safe_text::json::to_string(before)?,
            crate::safe_text::json::to_string(now)?
        );
    }
    if let Some(prompts) = unsaid {
        let mut err = crate::printable::Printable::new(std::io::stderr().lock());
        writeln!(
            err,
            "note: {} does not say which prompts it was run with: resuming it with {prompts}",
            out.display()
        )?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::{Selection, comparable, prepare_dir};
    use crate::engine::{Fallback, MethodId, Settings};
    use crate::eval::runner::Split;

    /// A run.json written before GoG's fallback was recorded reads it as the paper's: the same
    /// run for every method but GoG, whose answers it changes; such a GoG run resumes with
    /// `--fallback own-knowledge`, which leaves ToG's fallback no other method reads.
    #[test]
    fn gogs_fallback_parts_only_gog_runs_resumed_across_it() {
        for (method, same) in [(MethodId::TOG, true), (MethodId::POG, true), (MethodId::GOG, false)] {
            let now = Settings { method, ..Settings::default() };
            let mut before = now.clone();
            before.gog.gog_fallback = Fallback::OwnKnowledge;
            assert_eq!(comparable(&before) == comparable(&now), same, "{method}");
        }
        let saved = Settings {
            method: MethodId::GOG,
            gog: crate::engine::GogSettings { gog_fallback: Fallback::OwnKnowledge, ..Default::default() },
            ..Settings::default()
        };
        let own_knowledge = Settings { fallback: Fallback::OwnKnowledge, ..saved.clone() };
        assert!(comparable(&saved) == comparable(&own_knowledge));
        // ToG's is ToG's own.
        let tog = Settings { method: MethodId::TOG, ..Settings::default() };
        assert!(comparable(&tog) != comparable(&Settings { fallback: Fallback::OwnKnowledge, ..tog.clone() }));
    }

    /// A run with one record in `dir`, chosen as `meta` says.
    fn begun(dir: &std::path::Path, meta: &super::RunMeta) -> std::path::PathBuf {
        let out = dir.join(format!("run{}", rand::random::<u32>()));
        drop(prepare_dir(&out, meta, false).unwrap());
        std::fs::write(out.join(super::RECORDS), "{}\n").unwrap();
        out
    }

    /// Found by a review: `--sample 30` then `--sample 50 --resume` picked other questions
    /// and the records mixed both samples; a sample run resumed as a split, or the other way.
    #[test]
    fn a_resume_that_would_choose_other_questions_is_refused() {
        let dir = tempfile::tempdir().unwrap();
        let sample = |n, limit| super::super::tests::meta_chosen(None, Some(Selection { limit, sample: n }), None);
        let refused = |before: &super::RunMeta, now: &super::RunMeta| {
            let out = begun(dir.path(), before);
            prepare_dir(&out, now, true).err().map(|e| e.to_string())
        };
        let other = refused(&sample(Some(30), None), &sample(Some(50), None)).expect("another sample");
        assert!(other.contains("different settings") && other.contains("\"sample\":30"), "{other}");
        assert!(refused(&sample(Some(30), Some(100)), &sample(Some(30), Some(200))).is_some(), "another pool");
        assert!(refused(&sample(None, Some(10)), &sample(None, Some(20))).is_none(), "the first N, grown");
        assert!(refused(&sample(Some(50), None), &sample(Some(50), None)).is_none(), "the same sample");
        let test = super::super::tests::meta_chosen(Some(Split::Test), None, None);
        assert!(refused(&sample(Some(50), None), &test).is_some(), "a sample resumed as the test split");
        assert!(refused(&test, &sample(Some(50), None)).is_some(), "the test split resumed as a sample");
        let dev = super::super::tests::meta_chosen(Some(Split::Dev), None, None);
        assert!(refused(&test, &dev).is_some());
        // Prompts: given, then not, refused; not said (an old run.json), then given, resumed.
        let tuned = super::super::tests::meta_chosen(None, None, Some("/p/tuned"));
        let built_in = super::super::tests::meta_chosen(None, None, None);
        assert!(refused(&tuned, &built_in).is_some(), "--prompts dropped");
        assert!(refused(&tuned, &super::super::tests::meta_chosen(None, None, Some("/p/other"))).is_some());
        assert!(refused(&built_in, &tuned).is_none());
        // Topic ids, once kept.
        let read_as = |ids: &str| super::RunMeta {
            topic_ids: Some(ids.into()),
            ..super::super::tests::meta_chosen(None, None, None)
        };
        let (freebase, wikidata) = (read_as("freebase"), read_as("wikidata"));
        assert!(refused(&freebase, &wikidata).is_some(), "topic ids read another way");
    }

    /// Found by a review: a second `eval --resume` on a run still going asked its remaining
    /// questions again beside it, and each was recorded twice.
    #[test]
    fn a_run_directory_takes_one_eval_at_a_time() {
        let dir = tempfile::tempdir().unwrap();
        let meta = super::super::tests::meta_chosen(None, None, None);
        let out = dir.path().join("run");
        let held = prepare_dir(&out, &meta, false).unwrap();
        std::fs::write(out.join(super::RECORDS), "{}\n").unwrap();
        let second = prepare_dir(&out, &meta, true).err().map(|e| e.to_string()).expect("refused while held");
        assert!(second.contains("is being written by another `ongraph eval`") && !second.contains('\n'), "{second}");
        drop(held);
        prepare_dir(&out, &meta, true).expect("free once the first run ends");
        let written: serde_json::Value =
            serde_json::from_str(&std::fs::read_to_string(out.join(super::META)).unwrap()).unwrap();
        assert_eq!(written["dataset"], "d", "run.json rewritten whole");
    }
}
