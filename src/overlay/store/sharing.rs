//! The store's side of team sharing: the queue of records to publish, the records known from
//! the server, reviews, and how a correction is set aside (undone, superseded).

use super::{CorrectionStore, SledStore, StoreError, TeamRecord, key, new_correction};
use crate::overlay::team_record::{Kind, Skip};
use crate::overlay::{Correction, Draft, HistoryEntry, Review, TeamLink};
use serde::{Deserialize, Serialize};

/// How a correction is set aside: undone, or superseded (in a conflict, for the other).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Aside {
    Undo,
    Supersede,
}

/// What the store knows of a team record, by its IRI: the correction it became, or an undo or
/// supersede and whether its target was here to apply it to.
#[derive(Serialize, Deserialize)]
#[serde(tag = "is", rename_all = "snake_case")]
enum Known {
    Correction { kg: String, id: u64 },
    Aside { target: String, supersede: bool, author: String, at: String, applied: bool },
    Review { target: String, review: Review, applied: bool },
}

impl Known {
    /// The correction an undo, supersede or review points at.
    fn target(&self) -> Option<&str> {
        match self {
            Known::Correction { .. } => None,
            Known::Aside { target, .. } | Known::Review { target, .. } => Some(target),
        }
    }

    fn applied(&self) -> bool {
        matches!(self, Known::Aside { applied: true, .. } | Known::Review { applied: true, .. })
    }

    /// Applies this undo, supersede or review to its correction, once. Whether it was a review
    /// of the reviewer's own correction (by the same store or the same name), which is kept in
    /// its history but never counted.
    fn apply_to(&mut self, correction: &mut Correction) -> bool {
        match self {
            Known::Correction { .. } => false,
            Known::Aside { supersede, author, at, applied, .. } => {
                if correction.active {
                    correction.active = false;
                    let what = if *supersede { "superseded" } else { "undone" };
                    correction.history.push(HistoryEntry { at: at.clone(), what: format!("{what} by {author}") });
                }
                *applied = true;
                false
            }
            Known::Review { review, applied, .. } => {
                let own = review.author == correction.author;
                let mut ignored = false;
                if let Some(team) = correction.team.as_mut()
                    && !team.reviews.iter().any(|r| r.record == review.record)
                {
                    ignored = own || (review.agent.is_some() && review.agent == team.agent);
                    let what = if ignored {
                        format!("{} by its own author {}: not counted", review.verdict(), review.author)
                    } else {
                        team.reviews.push(review.clone());
                        format!("{} by {}", review.verdict(), review.author)
                    };
                    correction.history.push(HistoryEntry { at: review.at.clone(), what });
                }
                *applied = true;
                ignored
            }
        }
    }
}

/// A record waiting to be sent to its set.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct Queued {
    /// The set's graph IRI.
    pub set: String,
    pub record: TeamRecord,
}

/// The team keys start with the byte no scope name starts with (see [`NEXT_ID`]).
const KNOWN: &[u8] = b"\xffteam\0known\0";
const QUEUE: &[u8] = b"\xffteam\0queue\0";
const MARK: &[u8] = b"\xffteam\0mark\0";
/// Records the server refused for good, with why (see [`SledStore::mark_rejected`]).
const REJECTED: &[u8] = b"\xffteam\0rejected\0";
/// Undo and supersede records whose correction has not arrived yet (also in [`KNOWN`]).
const WAITING: &[u8] = b"\xffteam\0waiting\0";
/// Records a pull skipped, with why: not fetched again but by a full pull.
const SKIPPED: &[u8] = b"\xffteam\0skipped\0";

/// How far ahead of the reader's clock a record's time may be before it is said to be dated
/// in the future (clocks differ a little); any time ahead is taken as the time it arrived.
const FUTURE_SLACK: std::time::Duration = std::time::Duration::from_secs(60);

/// What taking in a pull's records did.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub struct Taken {
    /// Records new to this store.
    pub new: usize,
    /// Of those, records dated in the future (see [`FUTURE_SLACK`]).
    pub future: usize,
    /// Reviews of the reviewer's own correction: kept, not counted.
    pub self_reviews: usize,
}

fn team_key(prefix: &[u8], rest: &str) -> Vec<u8> {
    [prefix, rest.as_bytes()].concat()
}

/// This store's agent id (see [`SledStore::agent_id`]).
const AGENT_ID: &[u8] = b"\xffteam\0agent";

impl SledStore {
    /// This store's random id, recorded on the team records it makes, so that two people of
    /// the same name are two authors. Made at the first team record, in `batch` (its write).
    fn agent_id(&self, batch: &mut sled::Batch) -> Result<String, StoreError> {
        if let Some(bytes) = self.db.get(AGENT_ID).map_err(|e| self.err(e))? {
            return Ok(String::from_utf8_lossy(&bytes).into_owned());
        }
        let id = uuid::Uuid::now_v7().to_string();
        batch.insert(AGENT_ID, id.as_bytes().to_vec());
        Ok(id)
    }

    fn known(&self, iri: &str) -> Result<Option<Known>, StoreError> {
        let Some(bytes) = self.db.get(team_key(KNOWN, iri)).map_err(|e| self.err(e))? else { return Ok(None) };
        serde_json::from_slice(&bytes).map(Some).map_err(|e| StoreError::Corrupt {
            path: self.path.display().to_string(),
            detail: format!("team record {iri}: {e}"),
        })
    }

    fn get(&self, kg: &str, id: u64) -> Result<Correction, StoreError> {
        let k = key(kg, id);
        let bytes =
            self.db.get(&k).map_err(|e| self.err(e))?.ok_or_else(|| StoreError::UnknownId { kg: kg.into(), id })?;
        self.read(&k, &bytes)
    }

    /// Records a correction made here in the shared set `set`, and queues its record to be
    /// sent, in one write: it is never stored without being queued, nor queued without being
    /// stored.
    pub fn add_shared(
        &self,
        kg: &str,
        draft: Draft,
        set: &str,
        based_on: Option<String>,
    ) -> Result<Correction, StoreError> {
        let id = self.next_id()?;
        // To the millisecond: the order records apply in, for everyone (see `in_order`).
        let now = crate::overlay::team_record::now_millis();
        let iri = crate::overlay::team_record::new_iri();
        let mut batch = sled::Batch::default();
        let agent = Some(self.agent_id(&mut batch)?);
        let record = TeamRecord {
            iri: iri.clone(),
            kind: Kind::Correction { op: draft.op.clone() },
            kg: kg.to_string(),
            author: draft.author.clone(),
            created: now.clone(),
            reason: draft.reason.clone(),
            context: draft.context.clone(),
            generated: draft.generated,
            based_on: based_on.clone(),
            agent: agent.clone(),
        };
        let team = TeamLink {
            record: iri.clone(),
            set: set.to_string(),
            based_on,
            shared: false,
            pulled: false,
            rejected: None,
            agent,
            reviews: Vec::new(),
        };
        let correction = new_correction(id, kg, draft, now, Some(team));
        self.stage(&mut batch, &correction)?;
        batch.insert(team_key(KNOWN, &iri), self.json(&Known::Correction { kg: kg.to_string(), id })?);
        batch.insert(team_key(QUEUE, &iri), self.json(&Queued { set: set.to_string(), record })?);
        self.commit(batch)?;
        Ok(correction)
    }

    /// Undoes or supersedes a correction. One in a shared set is set aside there too: the
    /// undo or supersede record is queued in the same write. A supersede settles a conflict, so
    /// only a correction in one can be superseded.
    pub fn set_aside(&self, kg: &str, id: u64, how: Aside, reason: Option<&str>) -> Result<Correction, StoreError> {
        let mut correction = self.get(kg, id)?;
        if !correction.active {
            return Err(StoreError::AlreadyUndone { id });
        }
        if how == Aside::Supersede {
            let all = self.list(kg)?;
            let at = all.iter().position(|c| c.id == id);
            let states = crate::overlay::team_state::states(&all);
            if at.is_none_or(|i| states[i].conflicts_with.is_empty()) {
                return Err(StoreError::NoConflict { id });
            }
        }
        let now =
            if correction.team.is_some() { crate::overlay::team_record::now_millis() } else { crate::overlay::now() };
        correction.active = false;
        let what = match how {
            Aside::Undo => "undone",
            Aside::Supersede => "superseded",
        };
        // A team correction's history says who set it aside (teammates see it); a local one's
        // stays as it always was.
        let what = if correction.team.is_some() { format!("{what} by {}", self.author) } else { what.to_string() };
        correction.history.push(HistoryEntry { at: now.clone(), what });
        let mut batch = sled::Batch::default();
        self.stage(&mut batch, &correction)?;
        if let Some(team) = &correction.team {
            let agent = Some(self.agent_id(&mut batch)?);
            let iri = crate::overlay::team_record::new_iri();
            let target = team.record.clone();
            let kind = match how {
                Aside::Undo => Kind::Undo { target: target.clone() },
                Aside::Supersede => Kind::Supersede { target: target.clone() },
            };
            let record = TeamRecord {
                iri: iri.clone(),
                kind,
                kg: kg.to_string(),
                author: self.author.clone(),
                created: now.clone(),
                reason: reason.unwrap_or_default().to_string(),
                context: None,
                generated: false,
                based_on: None,
                agent,
            };
            let known = Known::Aside {
                target,
                supersede: how == Aside::Supersede,
                author: self.author.clone(),
                at: now,
                applied: true,
            };
            batch.insert(team_key(KNOWN, &iri), self.json(&known)?);
            batch.insert(team_key(QUEUE, &iri), self.json(&Queued { set: team.set.clone(), record })?);
        }
        self.commit(batch)?;
        Ok(correction)
    }

    /// Approves (or rejects) a teammate's shared correction: a review record, queued to be
    /// sent, and kept on the correction, in one write. One's own correction is not reviewed.
    pub fn review(&self, kg: &str, id: u64, approve: bool, reason: Option<&str>) -> Result<Correction, StoreError> {
        let mut correction = self.get(kg, id)?;
        let Some(team) = correction.team.clone() else { return Err(StoreError::NotShared { id }) };
        let mut batch = sled::Batch::default();
        let agent = self.agent_id(&mut batch)?;
        // Made here, or made by this store and pulled back (a full pull of a copy).
        // The same name counts as one's own too: readers do not count such a review.
        if !team.pulled || team.agent.as_deref() == Some(agent.as_str()) || correction.author == self.author {
            return Err(StoreError::OwnCorrection { id });
        }
        if let Some(last) = crate::overlay::team_state::verdict(&team)
            && last.approve == approve
            && last.agent.as_deref() == Some(agent.as_str())
        {
            return Err(StoreError::AlreadyReviewed { id, verdict: last.verdict() });
        }
        let iri = crate::overlay::team_record::new_iri();
        let now = crate::overlay::team_record::now_millis();
        let reason = reason.map(str::trim).unwrap_or_default().to_string();
        let review = Review {
            record: iri.clone(),
            approve,
            author: self.author.clone(),
            at: now.clone(),
            reason: reason.clone(),
            agent: Some(agent.clone()),
        };
        let target = team.record.clone();
        let record = TeamRecord {
            iri: iri.clone(),
            kind: if approve {
                Kind::Approve { target: target.clone() }
            } else {
                Kind::Reject { target: target.clone() }
            },
            kg: kg.to_string(),
            author: self.author.clone(),
            created: now,
            reason,
            context: None,
            generated: false,
            based_on: None,
            agent: Some(agent),
        };
        let mut known = Known::Review { target, review, applied: false };
        known.apply_to(&mut correction);
        self.stage(&mut batch, &correction)?;
        batch.insert(team_key(KNOWN, &iri), self.json(&known)?);
        batch.insert(team_key(QUEUE, &iri), self.json(&Queued { set: team.set.clone(), record })?);
        self.commit(batch)?;
        Ok(correction)
    }

    /// The records waiting to be sent, oldest first (their UUIDv7 IRIs sort by time).
    pub fn queued(&self) -> Result<Vec<Queued>, StoreError> {
        self.db
            .scan_prefix(QUEUE)
            .map(|item| {
                let (k, v) = item.map_err(|e| self.err(e))?;
                serde_json::from_slice(&v).map_err(|e| StoreError::Corrupt {
                    path: self.path.display().to_string(),
                    detail: format!("queued record {}: {e}", String::from_utf8_lossy(&k[QUEUE.len()..])),
                })
            })
            .collect()
    }

    /// Notes that the server has the record `iri`: off the queue, and its correction shared.
    pub fn mark_sent(&self, iri: &str) -> Result<(), StoreError> {
        let mut batch = sled::Batch::default();
        batch.remove(team_key(QUEUE, iri));
        if let Some(Known::Correction { kg, id }) = self.known(iri)? {
            let mut correction = self.get(&kg, id)?;
            if let Some(team) = correction.team.as_mut() {
                team.shared = true;
            }
            self.stage(&mut batch, &correction)?;
        }
        self.commit(batch)
    }

    /// Notes that the server refused the record `iri` for good (`why`): off the queue, kept
    /// aside with the reason, and its correction (if it is one) shown as rejected. It still
    /// applies here, like a local correction.
    pub fn mark_rejected(&self, iri: &str, why: &str) -> Result<(), StoreError> {
        let mut batch = sled::Batch::default();
        let key = team_key(QUEUE, iri);
        if let Some(bytes) = self.db.get(&key).map_err(|e| self.err(e))? {
            #[derive(Serialize)]
            struct Rejected<'a> {
                queued: serde_json::Value,
                reason: &'a str,
                at: String,
            }
            let queued = serde_json::from_slice(&bytes).unwrap_or(serde_json::Value::Null);
            let rejected = Rejected { queued, reason: why, at: crate::overlay::team_record::now_millis() };
            batch.insert(team_key(REJECTED, iri), self.json(&rejected)?);
        }
        batch.remove(key);
        if let Some(Known::Correction { kg, id }) = self.known(iri)? {
            let mut correction = self.get(&kg, id)?;
            if let Some(team) = correction.team.as_mut() {
                team.rejected = Some(why.to_string());
            }
            self.stage(&mut batch, &correction)?;
        }
        self.commit(batch)
    }

    /// Puts back on the queue the records an earlier build set aside as rejected because the
    /// update endpoint answered 404 or 405: that was a wrong address, not a refusal of the
    /// record (now a configuration error that keeps the queue). How many were put back.
    pub fn requeue_misrouted(&self) -> Result<usize, StoreError> {
        #[derive(Deserialize)]
        struct Rejected {
            queued: Queued,
            reason: String,
        }
        let mut batch = sled::Batch::default();
        let mut back = 0;
        for item in self.db.scan_prefix(REJECTED) {
            let (k, v) = item.map_err(|e| self.err(e))?;
            let Ok(rejected) = serde_json::from_slice::<Rejected>(&v) else { continue };
            if !(rejected.reason.contains(": HTTP 404 ") || rejected.reason.contains(": HTTP 405 ")) {
                continue;
            }
            let iri = rejected.queued.record.iri.clone();
            if let Some(Known::Correction { kg, id }) = self.known(&iri)? {
                let mut correction = self.get(&kg, id)?;
                if let Some(team) = correction.team.as_mut() {
                    team.rejected = None;
                }
                self.stage(&mut batch, &correction)?;
            }
            batch.insert(team_key(QUEUE, &iri), self.json(&rejected.queued)?);
            batch.remove(k);
            back += 1;
        }
        if back > 0 {
            self.commit(batch)?;
        }
        Ok(back)
    }

    /// How many records the server refused for good (kept aside, see [`Self::mark_rejected`]).
    pub fn rejected_count(&self) -> usize {
        self.db.scan_prefix(REJECTED).count()
    }

    /// The latest publication time seen in `set` (where the next pull starts, less an overlap).
    pub fn pulled_until(&self, set: &str) -> Result<Option<String>, StoreError> {
        let bytes = self.db.get(team_key(MARK, set)).map_err(|e| self.err(e))?;
        Ok(bytes.map(|b| String::from_utf8_lossy(&b).into_owned()))
    }

    /// Whether the store has the record `iri` (made here or pulled).
    pub fn has_record(&self, iri: &str) -> Result<bool, StoreError> {
        self.db.contains_key(team_key(KNOWN, iri)).map_err(|e| self.err(e))
    }

    /// Whether a pull skipped the record `iri` (see [`Self::note_skipped`]).
    pub fn skipped(&self, iri: &str) -> Result<bool, StoreError> {
        self.db.contains_key(team_key(SKIPPED, iri)).map_err(|e| self.err(e))
    }

    /// Notes records a pull skipped (IRI, why, the detail), in one write: the next pull does
    /// not fetch them again.
    pub fn note_skipped(&self, skipped: &[(String, Skip, String)]) -> Result<(), StoreError> {
        #[derive(Serialize)]
        struct Noted<'a> {
            why: Skip,
            detail: &'a str,
            at: String,
        }
        let mut batch = sled::Batch::default();
        for (iri, why, detail) in skipped {
            let noted = Noted { why: *why, detail, at: crate::overlay::team_record::now_millis() };
            batch.insert(team_key(SKIPPED, iri), self.json(&noted)?);
        }
        self.commit(batch)
    }

    /// Notes where the next pull of `set` starts (less an overlap).
    pub fn mark_pulled(&self, set: &str, until: &str) -> Result<(), StoreError> {
        let mut batch = sled::Batch::default();
        batch.insert(team_key(MARK, set), until.as_bytes().to_vec());
        self.commit(batch)
    }

    /// Takes in records pulled from `set` (those it has are skipped: pulling twice changes
    /// nothing) and notes `until`, in one write. An undo or supersede whose correction has
    /// not arrived yet is kept and applied when it does. A record dated after `received` (when
    /// the pull began, by this reader's clock) is taken as made then: a time in the future
    /// would otherwise apply it after every later correction, forever; one well ahead is
    /// flagged in its history. Returns what was new.
    pub fn take_pulled(
        &self,
        set: &str,
        records: Vec<TeamRecord>,
        until: Option<&str>,
        received: &str,
    ) -> Result<Taken, StoreError> {
        let received_at = crate::overlay::team_record::parse_time(received);
        let mut intake = Intake::default();
        let fresh = self.fresh_records(records)?;
        let new = fresh.len();
        // One write reserves the ids of every new correction (a pull takes in thousands).
        let corrections = fresh.iter().filter(|r| matches!(r.kind, Kind::Correction { .. })).count();
        let mut next_id = self.reserve_ids(corrections as u64)?;
        for mut record in fresh {
            let dated_ahead = date_as_received(&mut record, received, received_at, &mut intake.taken);
            if matches!(record.kind, Kind::Correction { .. }) {
                let id = next_id;
                next_id += 1;
                self.take_correction(set, record, id, dated_ahead, &mut intake)?;
            } else if let Some((iri, known)) = pulled_aside(record) {
                intake.asides.push((iri, known, true));
            }
        }
        self.gather_waiting(&mut intake.asides)?;
        let mut dirty = new > 0 || until.is_some_and(|u| self.pulled_until(set).ok().flatten().as_deref() != Some(u));
        dirty |= self.apply_asides(&mut intake)?;
        if !dirty {
            return Ok(intake.taken);
        }
        let Intake { mut taken, mut batch, changed, .. } = intake;
        for correction in changed.values() {
            self.stage(&mut batch, correction)?;
        }
        if let Some(until) = until {
            batch.insert(team_key(MARK, set), until.as_bytes().to_vec());
        }
        self.commit(batch)?;
        taken.new = new;
        Ok(taken)
    }

    /// The pulled records this store does not have yet, each once, corrections first (so an
    /// undo pulled with its correction finds it).
    fn fresh_records(&self, records: Vec<TeamRecord>) -> Result<Vec<TeamRecord>, StoreError> {
        let (corrections, others): (Vec<TeamRecord>, Vec<TeamRecord>) =
            records.into_iter().partition(|r| matches!(r.kind, Kind::Correction { .. }));
        let mut seen = std::collections::HashSet::new();
        let mut fresh = Vec::new();
        for record in corrections.into_iter().chain(others) {
            if seen.insert(record.iri.clone()) && !self.has_record(&record.iri)? {
                fresh.push(record);
            }
        }
        Ok(fresh)
    }

    /// Takes in a pulled correction record as the correction `id`, known by its record's IRI.
    fn take_correction(
        &self,
        set: &str,
        record: TeamRecord,
        id: u64,
        dated_ahead: Option<String>,
        intake: &mut Intake,
    ) -> Result<(), StoreError> {
        let (iri, kg) = (record.iri.clone(), record.kg.clone());
        let Some(correction) = pulled_correction(set, record, id, dated_ahead) else { return Ok(()) };
        intake.batch.insert(team_key(KNOWN, &iri), self.json(&Known::Correction { kg: kg.clone(), id })?);
        intake.by_record.insert(iri, (kg.clone(), id));
        intake.changed.insert((kg, id), correction);
        Ok(())
    }

    /// Adds the undo and supersede records kept from earlier pulls, whose correction may be
    /// here now, to `asides` (as not new).
    fn gather_waiting(&self, asides: &mut Vec<(String, Known, bool)>) -> Result<(), StoreError> {
        for item in self.db.scan_prefix(WAITING) {
            let (k, v) = item.map_err(|e| self.err(e))?;
            if let Ok(known @ (Known::Aside { .. } | Known::Review { .. })) = serde_json::from_slice::<Known>(&v) {
                asides.push((String::from_utf8_lossy(&k[WAITING.len()..]).into_owned(), known, false));
            }
        }
        Ok(())
    }

    /// Applies each undo, supersede and review of `intake` to its correction when it is here,
    /// and stages the records that are new or now applied (those not applied wait for their
    /// correction). Whether it staged any.
    fn apply_asides(&self, intake: &mut Intake) -> Result<bool, StoreError> {
        let mut staged = false;
        for (iri, mut known, is_new) in std::mem::take(&mut intake.asides) {
            let Some(target) = known.target().map(str::to_string) else { continue };
            let found = self.aside_target(&target, intake)?;
            if let Some(correction) = found.and_then(|k| intake.changed.get_mut(&k))
                && known.apply_to(correction)
            {
                intake.taken.self_reviews += 1;
            }
            let applied = known.applied();
            if is_new || applied {
                staged = true;
                let bytes = self.json(&known)?;
                intake.batch.insert(team_key(KNOWN, &iri), bytes.clone());
                if applied {
                    intake.batch.remove(team_key(WAITING, &iri));
                } else {
                    intake.batch.insert(team_key(WAITING, &iri), bytes);
                }
            }
        }
        Ok(staged)
    }

    /// Where the correction of record `target` is: pulled now, or in the store (then read
    /// into `intake`'s changed corrections); none if it has not arrived.
    fn aside_target(&self, target: &str, intake: &mut Intake) -> Result<Option<(String, u64)>, StoreError> {
        if let Some(k) = intake.by_record.get(target) {
            return Ok(Some(k.clone()));
        }
        Ok(match self.known(target)? {
            Some(Known::Correction { kg, id }) => {
                let correction = self.get(&kg, id)?;
                intake.changed.insert((kg.clone(), id), correction);
                Some((kg, id))
            }
            _ => None,
        })
    }
}

/// What taking in a pull gathers before its one write.
#[derive(Default)]
struct Intake {
    taken: Taken,
    batch: sled::Batch,
    /// The corrections the pull adds or changes, by scope and id.
    changed: std::collections::BTreeMap<(String, u64), Correction>,
    /// The corrections the pull brought, by their record's IRI.
    by_record: std::collections::HashMap<String, (String, u64)>,
    /// Undo, supersede and review records to apply: IRI, what it is, whether new in this pull.
    asides: Vec<(String, Known, bool)>,
}

/// Takes a record dated after `received_at` as made at `received`; the time its author gave,
/// if well ahead (see [`FUTURE_SLACK`]), counted in `taken` and returned to be flagged.
fn date_as_received(
    record: &mut TeamRecord,
    received: &str,
    received_at: Option<std::time::SystemTime>,
    taken: &mut Taken,
) -> Option<String> {
    let claimed = crate::overlay::team_record::parse_time(&record.created);
    if let (Some(claimed), Some(at)) = (claimed, received_at)
        && claimed > at
    {
        let claim = std::mem::replace(&mut record.created, received.to_string());
        if claimed > at + FUTURE_SLACK {
            taken.future += 1;
            return Some(claim);
        }
    }
    None
}

/// The correction a pulled correction record becomes, as `id` (none for another kind), its
/// history saying when it was dated in the future (`dated_ahead`, the time its author gave).
fn pulled_correction(set: &str, record: TeamRecord, id: u64, dated_ahead: Option<String>) -> Option<Correction> {
    let Kind::Correction { op } = record.kind else { return None };
    Some(Correction {
        id,
        kg: record.kg,
        op,
        reason: record.reason,
        generated: Some(record.generated),
        author: record.author,
        created: record.created.clone(),
        active: true,
        context: record.context,
        history: std::iter::once(HistoryEntry { at: record.created.clone(), what: "created".into() })
            .chain(dated_ahead.map(|claim| HistoryEntry {
                at: record.created,
                what: format!("dated {claim} by its author, in the future: taken as made when it arrived"),
            }))
            .collect(),
        team: Some(TeamLink {
            record: record.iri,
            set: set.to_string(),
            based_on: record.based_on,
            shared: true,
            pulled: true,
            rejected: None,
            agent: record.agent,
            reviews: Vec::new(),
        }),
    })
}

/// What a pulled undo, supersede or review record is, by its IRI, not applied yet (none for
/// a correction).
fn pulled_aside(record: TeamRecord) -> Option<(String, Known)> {
    let (author, at) = (record.author, record.created);
    let approve = matches!(record.kind, Kind::Approve { .. });
    let known = match record.kind {
        Kind::Undo { target } => Known::Aside { target, supersede: false, author, at, applied: false },
        Kind::Supersede { target } => Known::Aside { target, supersede: true, author, at, applied: false },
        Kind::Approve { target } | Kind::Reject { target } => {
            let review =
                Review { record: record.iri.clone(), approve, author, at, reason: record.reason, agent: record.agent };
            Known::Review { target, review, applied: false }
        }
        Kind::Correction { .. } => return None,
    };
    Some((record.iri, known))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::overlay::Op;

    /// A store in which an earlier build set records aside for an update endpoint's 404 puts
    /// them back on the queue; a record the server refused (400) stays aside.
    #[test]
    fn records_rejected_for_a_wrong_address_are_queued_again() {
        let dir = tempfile::tempdir().unwrap();
        let store = SledStore::open(&dir.path().join("store")).unwrap();
        let set = "http://example.org/c";
        let draft = |label: &str| Draft {
            op: Op::Relabel { entity: "m.x".into(), label: label.into() },
            reason: "r".into(),
            generated: false,
            author: "Ada".into(),
            context: None,
            origin: None,
        };
        let typo = store.add_shared("demo", draft("one"), set, None).unwrap();
        let refused = store.add_shared("demo", draft("two"), set, None).unwrap();
        let record = |c: &Correction| c.team.as_ref().unwrap().record.clone();
        let why = |status: &str| format!("shared set team: SPARQL endpoint http://127.0.0.1/updat: HTTP {status}: no");
        store.mark_rejected(&record(&typo), &why("404 Not Found")).unwrap();
        store.mark_rejected(&record(&refused), &why("400 Bad Request")).unwrap();
        assert!(store.queued().unwrap().is_empty());

        assert_eq!(store.requeue_misrouted().unwrap(), 1);
        let queued: Vec<String> = store.queued().unwrap().into_iter().map(|q| q.record.iri).collect();
        assert_eq!(queued, [record(&typo)]);
        let list = store.list("demo").unwrap();
        assert_eq!(list[0].team.as_ref().unwrap().rejected, None);
        assert!(list[1].team.as_ref().unwrap().rejected.is_some(), "a refusal stays one");
        assert_eq!(store.rejected_count(), 1);
        assert_eq!(store.requeue_misrouted().unwrap(), 0, "once");
    }
}
