//! Recording the sitting as it goes, and following a recorded one.

use super::*;

impl App {
    pub(super) fn record(&mut self, moment: Moment) {
        self.recording.record(moment);
    }

    /// Copies the current run's trace and answer into the recording.
    pub(super) fn sync_record(&mut self) {
        if let Some(run) = &self.run {
            self.recording.sync(run);
        }
    }

    /// The session as it stands, ready to save.
    pub fn session(&mut self) -> Session {
        self.sync_record();
        let mut session = self.recording.clone();
        session.saved_at = crate::overlay::now();
        session
    }

    /// The recorded answers to `requests`, when replaying a run that made them.
    pub(super) fn recorded(&mut self, requests: &[Request]) -> Option<(Vec<Response>, u64)> {
        self.replay.as_mut()?.player.as_mut()?.answers(requests)
    }

    /// The next recorded override or rewind, when the replay is on track and one is due.
    pub(super) fn recorded_change(&mut self) -> Option<Moment> {
        self.replay.as_mut()?.player.as_mut()?.change()
    }

    /// Notes a user's change in a replay: on track if it is the recorded one.
    pub(super) fn replay_follows(&mut self, moment: &Moment) {
        if let Some(player) = self.replay.as_mut().and_then(|r| r.player.as_mut()) {
            player.follows(moment);
        }
    }
}
