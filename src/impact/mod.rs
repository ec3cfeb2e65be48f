//! What a correction changes: the kept runs (saved sessions, eval records) whose answers it
//! could change, found from what each run read of the KG ([`Footprint`]). A run that read
//! nothing a correction touches cannot see it, whatever its method: every choice it made came
//! from what it read, unless other corrections it did not see have moved it since (those runs
//! are listed too: [`Touch::Since`]). So the list misses no run whose answer changes; it may
//! list runs whose answer stays (the correction touched what they read, and they chose the
//! same).

mod codec;
mod index;
mod kept;
mod rerun;

pub use kept::{KeptRun, Skipped, default_dirs, footprint_of, load};
pub use rerun::{applied, rerun};

use crate::engine::{Fact, Footprint, Lookup};
use crate::kg::{CLOSE_NAME_MIN, Direction, Term, name_similarity};
use crate::overlay::Op;
use serde::Serialize;
use std::path::{Path, PathBuf};

/// The kept runs under some places: through the index beside the store, or read from their
/// files (a caller with no index).
pub enum Kept {
    Indexed(index::Index, index::Listing),
    Read(Vec<KeptRun>, Vec<Skipped>),
}

impl Kept {
    /// The runs under `places`, the index at `index` brought up to date first.
    pub fn open(index: &Path, places: &[PathBuf]) -> Self {
        let mut index = index::Index::open(index);
        let listing = index.refresh(places);
        Kept::Indexed(index, listing)
    }

    /// The same places brought up to date again, the index kept in memory: what a process
    /// that asks often (the UI) does.
    pub fn refreshed(self, places: &[PathBuf]) -> Self {
        match self {
            Kept::Indexed(mut index, _) => {
                let listing = index.refresh(places);
                Kept::Indexed(index, listing)
            }
            Kept::Read(..) => {
                let (runs, skipped) = kept::load(places);
                Kept::Read(runs, skipped)
            }
        }
    }

    /// What `asked` (a correction and its entity's former names) touches, and the runs that
    /// `others` (the other corrections in force now, each with its former names) touch but
    /// that did not see them all ([`Touch::Since`]): `now` is the digest of the corrections in
    /// force now (see `CorrectionsSeen`); a run that saw exactly those saw every other one.
    pub fn reach(
        &self,
        asked: (&Op, &[String]),
        others: &[(Op, Vec<String>)],
        now: &str,
        ours: impl Fn(&str) -> bool + Copy,
    ) -> Vec<(KeptRun, Touch)> {
        let mut found = self.touched(asked.0, asked.1, ours);
        let mut seen: std::collections::BTreeSet<(PathBuf, usize)> =
            found.iter().map(|(r, _)| (r.file.clone(), r.at)).collect();
        for (op, former) in others {
            for (run, _) in self.touched(op, former, ours) {
                if run.corrections_seen.as_deref() != Some(now) && seen.insert((run.file.clone(), run.at)) {
                    found.push((run, Touch::Since));
                }
            }
        }
        found.sort_by(|a, b| a.0.file.cmp(&b.0.file).then(a.0.at.cmp(&b.0.at)));
        found
    }

    /// How many runs are on a KG `ours` accepts, and how many are not.
    pub fn counts(&self, ours: impl Fn(&str) -> bool) -> (usize, usize) {
        match self {
            Kept::Indexed(index, listing) => index.counts(listing, ours),
            Kept::Read(runs, _) => {
                let mine = runs.iter().filter(|r| ours(&r.kg)).count();
                (mine, runs.len() - mine)
            }
        }
    }

    /// What could not be read, and why.
    pub fn skipped(&self) -> &[Skipped] {
        match self {
            Kept::Indexed(_, listing) => &listing.skipped,
            Kept::Read(_, skipped) => skipped,
        }
    }

    /// The runs on a KG `ours` accepts that `op` touches, and how, in file order.
    pub fn touched(&self, op: &Op, former: &[String], ours: impl Fn(&str) -> bool) -> Vec<(KeptRun, Touch)> {
        let mut found: Vec<(KeptRun, Touch)> = match self {
            Kept::Indexed(index, listing) => index.touched(op, former, listing, ours),
            Kept::Read(runs, _) => runs
                .iter()
                .filter(|r| ours(&r.kg))
                .filter_map(|r| touch_named(op, &r.footprint, former).map(|t| (r.clone(), t)))
                .collect(),
        };
        found.sort_by(|a, b| a.0.file.cmp(&b.0.file).then(a.0.at.cmp(&b.0.at)));
        found
    }
}

/// Brings the index at `index` up to date with `file`, a session just saved or an eval run's
/// records just written, so the next `fix impact` finds it indexed.
pub fn note_saved(index: &Path, file: &Path) {
    let mut index = index::Index::open(index);
    index.note(file);
    index.save();
}

/// How a correction reaches a run.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Touch {
    /// A path the answer rests on goes through the triple, or through the relabelled entity.
    RestsOn,
    /// The run read something the correction changes while searching: the search could go
    /// otherwise.
    Read,
    /// Corrections it did not see (made since, or not known to have applied) changed what it
    /// read: asked again, its search may go where this one reaches.
    Since,
}

impl Touch {
    /// The heading of its group.
    pub fn heading(self) -> &'static str {
        match self {
            Touch::RestsOn => "the answer rests on it",
            Touch::Read => "it was read while searching",
            Touch::Since => "other corrections it did not see changed what it read (it may go elsewhere now)",
        }
    }
}

/// How `op` reaches a run that read `footprint`, if it does.
pub fn touch(op: &Op, footprint: &Footprint) -> Option<Touch> {
    touch_named(op, footprint, &[])
}

/// As [`touch`], `former` being the names the corrected entity had before it (see
/// [`former_names`]): a run made while the correction was in force searched for it under its
/// old name and found nothing; undoing it would change that search.
pub fn touch_named(op: &Op, footprint: &Footprint, former: &[String]) -> Option<Touch> {
    let reach = touch_op(op, footprint);
    if reach.is_some() || former.is_empty() {
        return reach;
    }
    let renames = matches!(
        op,
        Op::Relabel { .. } | Op::Retract { object: Term::Literal(_), .. } | Op::Assert { object: Term::Literal(_), .. }
    );
    let found = |searched: &String| {
        former
            .iter()
            .any(|name| name.trim().to_lowercase() == *searched || name_similarity(name, searched) >= CLOSE_NAME_MIN)
    };
    (renames && footprint.searched.iter().any(found)).then_some(Touch::Read)
}

/// The names the entity `op` renames has in `kg` (the KG before corrections), for
/// [`touch_named`]: none for a correction that renames nothing.
pub async fn former_names(kg: &dyn crate::kg::KnowledgeGraph, op: &Op) -> Vec<String> {
    let entity = match op {
        Op::Relabel { entity, .. } => entity,
        Op::Retract { subject, object: Term::Literal(_), .. }
        | Op::Assert { subject, object: Term::Literal(_), .. } => subject,
        _ => return Vec::new(),
    };
    kg.label(entity).await.ok().flatten().into_iter().collect()
}

fn touch_op(op: &Op, footprint: &Footprint) -> Option<Touch> {
    match op {
        Op::Retract { subject, relation, object } => fact(footprint, subject, relation, object, true),
        Op::Assert { subject, relation, object } => fact(footprint, subject, relation, object, false),
        Op::Relabel { entity, label } => relabel(footprint, entity, label),
        Op::Replace { subject, relation, old, new, label } => {
            let named = match (new, label) {
                (Term::Entity(entity), Some(label)) => relabel(footprint, entity, label),
                _ => None,
            };
            // The strongest of its parts: the retract, the assert, the new entity's name.
            [fact(footprint, subject, relation, old, true), fact(footprint, subject, relation, new, false), named]
                .into_iter()
                .flatten()
                .min()
        }
    }
}

/// A triple retracted (`held`: it was in the KG) or asserted.
fn fact(footprint: &Footprint, subject: &str, relation: &str, object: &Term, held: bool) -> Option<Touch> {
    let object_text = object.as_str();
    if held && footprint.rests_on.contains(&Fact(subject.into(), relation.into(), object_text.into())) {
        return Some(Touch::RestsOn);
    }
    let object_entity = matches!(object, Term::Entity(_)).then_some(object_text);
    let listed = footprint.relations_of.contains(subject)
        || object_entity.is_some_and(|o| footprint.relations_of.contains(o))
        || footprint.neighbours.contains(&Lookup(subject.into(), relation.into(), Direction::Out))
        || object_entity
            .is_some_and(|o| footprint.neighbours.contains(&Lookup(o.into(), relation.into(), Direction::In)));
    if listed {
        return Some(Touch::Read);
    }
    // A literal may be a name (the KG's name predicate): the subject is then found, or shown,
    // under another name.
    match object {
        Term::Literal(name) => relabel(footprint, subject, name),
        Term::Entity(_) => None,
    }
}

/// `entity` shown as `label`.
fn relabel(footprint: &Footprint, entity: &str, label: &str) -> Option<Touch> {
    if footprint.rests_on.iter().any(|f| f.0 == entity || f.2 == entity) {
        return Some(Touch::RestsOn);
    }
    // Shown under its old name, or a search its new name would answer (as every backend finds
    // names: exact, else close enough).
    let found_by = |searched: &String| {
        label.trim().to_lowercase() == *searched || name_similarity(label, searched) >= CLOSE_NAME_MIN
    };
    (footprint.entities().any(|e| e == entity) || footprint.searched.iter().any(found_by)).then_some(Touch::Read)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::BTreeSet;

    fn footprint() -> Footprint {
        Footprint {
            relations_of: BTreeSet::from(["phanatic".to_string()]),
            neighbours: BTreeSet::from([
                Lookup("phanatic".into(), "team".into(), Direction::Out),
                Lookup("phillies".into(), "ballpark".into(), Direction::Out),
            ]),
            searched: BTreeSet::from(["phillie phanatic".to_string()]),
            named: BTreeSet::from(["phillies".to_string(), "cbp".to_string(), "vet".to_string()]),
            rests_on: BTreeSet::from([
                Fact("phanatic".into(), "team".into(), "phillies".into()),
                Fact("phillies".into(), "ballpark".into(), "cbp".into()),
            ]),
        }
    }

    fn retract(s: &str, r: &str, o: &str) -> Op {
        Op::Retract { subject: s.into(), relation: r.into(), object: Term::Entity(o.into()) }
    }

    #[test]
    fn a_correction_reaches_a_run_through_its_answer_or_its_search() {
        let f = footprint();
        assert_eq!(touch(&retract("phillies", "ballpark", "cbp"), &f), Some(Touch::RestsOn));
        let elsewhere =
            Op::Assert { subject: "phillies".into(), relation: "ballpark".into(), object: Term::Entity("x".into()) };
        assert_eq!(touch(&elsewhere, &f), Some(Touch::Read), "the lookup of the Phillies' ballparks changes");
        assert_eq!(touch(&retract("mets", "ballpark", "citi"), &f), None, "never read");
        assert_eq!(
            touch(&retract("x", "mascot", "phanatic"), &f),
            Some(Touch::Read),
            "the Phanatic's relations were listed"
        );
        assert_eq!(touch(&Op::Relabel { entity: "cbp".into(), label: "Vet".into() }, &f), Some(Touch::RestsOn));
        assert_eq!(touch(&Op::Relabel { entity: "vet".into(), label: "Veterans".into() }, &f), Some(Touch::Read));
        // A name a search would now find, on an entity the run never saw.
        assert_eq!(
            touch(&Op::Relabel { entity: "m.9".into(), label: "Phillie Phanatic".into() }, &f),
            Some(Touch::Read)
        );
        assert_eq!(touch(&Op::Relabel { entity: "m.9".into(), label: "Mr. Met".into() }, &f), None);
        // Made while the relabel was in force, the search for the old name found nothing:
        // undoing it would change that.
        let renamed = Op::Relabel { entity: "m.9".into(), label: "Mr. Met".into() };
        assert_eq!(touch_named(&renamed, &f, &["Phillie Phanatic".into()]), Some(Touch::Read));
        let replace = Op::Replace {
            subject: "phillies".into(),
            relation: "ballpark".into(),
            old: Term::Entity("cbp".into()),
            new: Term::Entity("vet".into()),
            label: None,
        };
        assert_eq!(touch(&replace, &f), Some(Touch::RestsOn));
    }
}
