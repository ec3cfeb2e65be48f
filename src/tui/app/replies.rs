//! What the executor's replies do: one handler for each `Action` an `Effect` asked for (the
//! keys and the mouse are `commands`').

use super::*;

impl App {
    /// A batch's requests were performed: its answers are taken in, and while the run goes on
    /// by itself (`r`, run to the answer) the next step follows.
    pub(super) fn on_performed(
        &mut self,
        generation: u64,
        result: Result<Vec<Response>, String>,
        elapsed_ms: u64,
    ) -> Vec<Effect> {
        if generation != self.generation {
            return Vec::new(); // overtaken by a cancel, override or rewind
        }
        self.in_flight = None;
        match self.absorb(result, elapsed_ms) {
            // The calls extracting answers finish the step that asked for them.
            Some(Fed::Extracting) => self.step(),
            Some(Fed::Step(_)) if self.auto => self.step(),
            _ => Vec::new(),
        }
    }

    /// Corrections were stored (their ids), or not.
    pub(super) fn on_corrected(&mut self, result: Result<Vec<u64>, String>) -> Vec<Effect> {
        let ids = match result {
            Ok(ids) => ids,
            Err(e) => {
                self.pending_drafts.pop_front();
                self.fail(format!("the correction was not recorded: {e}"));
                return Vec::new();
            }
        };
        let drafts = self.pending_drafts.pop_front().unwrap_or_default();
        let runs = self.recording.runs.len();
        self.recording.corrections.extend(ids.iter().zip(drafts).map(|(&id, draft)| SessionCorrection {
            id,
            after_runs: runs,
            draft,
            undone_after_runs: None,
        }));
        let list = ids.iter().map(u64::to_string).collect::<Vec<_>>().join(", ");
        self.say(format!("correction {list} recorded; a: ask again with it"));
        // Said again when known, with how many kept answers it touches.
        self.announce.extend(ids.iter().map(|id| (*id, format!("correction {list} recorded"))));
        let mut effects = vec![Effect::ListCorrections];
        effects.extend(self.ask_impact(&ids));
        effects
    }

    /// A correction was undone, or not.
    pub(super) fn on_undone(&mut self, result: Result<u64, String>) -> Vec<Effect> {
        match result {
            Ok(id) => {
                // A correction this session made: its undo replays too.
                let runs = self.recording.runs.len();
                if let Some(c) = self.recording.corrections.iter_mut().find(|c| c.id == id) {
                    c.undone_after_runs = Some(runs);
                }
                self.say(format!("correction {id} undone; a: ask again without it"));
                vec![Effect::ListCorrections]
            }
            Err(e) => {
                self.fail(format!("not undone: {e}"));
                Vec::new()
            }
        }
    }

    /// A teammate's correction was approved or rejected, or not.
    pub(super) fn on_reviewed(&mut self, result: Result<(u64, bool), String>) -> Vec<Effect> {
        match result {
            Ok((id, approve)) => {
                let verdict = if approve { "approved" } else { "rejected" };
                self.say(format!("correction {id} {verdict} (shared at the next step); a: ask again"));
                vec![Effect::ListCorrections]
            }
            Err(e) => {
                self.fail(format!("not reviewed: {e}"));
                Vec::new()
            }
        }
    }

    /// What the sync with the shared set said: down, back, or a remark.
    pub(super) fn on_shared(&mut self, note: super::super::TeamNote) {
        match note {
            super::super::TeamNote::Down(why) => {
                self.team_offline = true;
                self.fail(why);
            }
            super::super::TeamNote::Back(said) => {
                self.team_offline = false;
                self.say(said);
            }
            super::super::TeamNote::Remark(said) => self.say(said),
        }
    }

    /// The overlay's corrections were listed, or could not be.
    pub(super) fn on_listed(&mut self, result: Result<Vec<Correction>, String>) -> Vec<Effect> {
        let list = match result {
            Ok(list) => list,
            Err(e) => {
                self.fail(format!("cannot list the corrections: {e}"));
                return Vec::new();
            }
        };
        self.corrections = list;
        self.corrections_at = self.corrections_at.min(self.corrections.len().saturating_sub(1));
        // A teammate's correction shows what it touches before it is reviewed.
        let waiting: Vec<u64> = self
            .corrections
            .iter()
            .filter(|c| self.awaits_approval(c) && !self.impacts.contains_key(&c.id))
            .map(|c| c.id)
            .collect();
        self.ask_impact(&waiting)
    }

    /// What the corrections touch of the kept runs is known, or cannot be told.
    pub(super) fn on_impacts(&mut self, result: Result<Vec<crate::workspace::ImpactOf>, String>) {
        match result {
            Ok(known) => self.impacts_known(known),
            Err(e) => {
                self.show_impact_of = None;
                self.fail(format!("cannot tell what the corrections touch: {e}"));
            }
        }
    }

    /// The store was changed by another process before a step (or could not be read again).
    pub(super) fn on_corrections_changed(&mut self, result: Result<Vec<Correction>, String>) {
        match result {
            // Another scope's write moves the store's generation too: only a change is news.
            Ok(list) if list == self.corrections => {}
            Ok(list) => {
                // Those that apply: a teammate's waiting for approval is listed, not applied.
                let active = list.iter().filter(|c| c.active && !self.awaits_approval(c)).count();
                self.corrections = list;
                self.corrections_at = self.corrections_at.min(self.corrections.len().saturating_sub(1));
                self.say(format!(
                    "the corrections were changed elsewhere: {active} active, applied from this step on; a: ask again with them"
                ));
            }
            Err(e) => {
                // Said once, not at every step while it lasts.
                let text = format!("cannot read the corrections again (the steps use those read before): {e}");
                if self.messages.iter().rev().find(|m| m.error).is_none_or(|m| m.text != text) {
                    self.fail(text);
                }
            }
        }
    }

    /// The session was saved, or not; a session waiting to be opened after the save opens now.
    pub(super) fn on_saved(&mut self, result: Result<PathBuf, String>) -> Vec<Effect> {
        match result {
            Ok(path) => {
                self.unsaved = false;
                self.say(format!("session saved to {} (ongraph replay FILE plays it back)", path.display()));
                if let Some(path) = self.open_after_save.take() {
                    return vec![Effect::Open { path }];
                }
            }
            Err(e) => {
                let kept = if self.open_after_save.take().is_some() { "; nothing was opened" } else { "" };
                self.fail(format!("the session was not saved: {e}{kept}"))
            }
        }
        Vec::new()
    }

    /// The corrections were exported, or not.
    pub(super) fn on_exported(&mut self, result: Result<(PathBuf, usize), String>) {
        match result {
            Ok((path, n)) => self.say(format!("{n} correction(s) written to {}", path.display())),
            Err(e) => self.fail(format!("not exported: {e}")),
        }
    }

    /// A session file was opened: its replay replaces this sitting, keeping what the sitting
    /// owns (keys, themes, size, author, messages, questions) and counting on from its steps.
    pub(super) fn on_opened(&mut self, result: Result<Box<Session>, String>) {
        let session = match result {
            Ok(session) => session,
            Err(e) => {
                self.fail(e);
                return;
            }
        };
        match App::replaying(*session, self.live) {
            Ok(mut replay) => {
                replay.keymap = self.keymap.clone();
                replay.themes = std::mem::take(&mut self.themes);
                replay.theme = self.theme.clone();
                replay.size = self.size;
                replay.author = self.author.clone();
                // The sitting's messages and questions go on.
                replay.messages = std::mem::take(&mut self.messages);
                replay.history = std::mem::take(&mut self.history);
                replay.theme_problems = std::mem::take(&mut self.theme_problems);
                // Answers still due to the old sitting must not land in the new one: its steps
                // and lookups count on from the old ones, and a correction still being stored
                // takes an empty place (recorded in no session) instead of a new draft.
                replay.generation = self.generation + 1;
                replay.lookups = self.lookups;
                replay.pending_drafts = self.pending_drafts.iter().map(|_| Vec::new()).collect();
                replay.say("replaying: Enter starts the recorded question, n steps through it");
                *self = replay;
            }
            Err(e) => self.fail(e.to_string()),
        }
    }
}
