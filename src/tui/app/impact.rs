//! What a correction changes, in the UI: how many kept answers a correction touches, said when
//! it is stored and shown beside each listed correction (a teammate's before it is reviewed),
//! and the list itself (`I`) in the messages pane. The kept runs are the saved sessions and eval
//! records the store's side reads (`Corrections::impact`) and this sitting's own runs.

use super::*;
use crate::workspace::ImpactOf;

impl App {
    /// Asks the store's side what `ids` (of corrections listed or just made) touch.
    pub(super) fn ask_impact(&mut self, ids: &[u64]) -> Vec<Effect> {
        let ops: Vec<(u64, Op)> = ids.iter().filter_map(|id| self.op_of(*id).map(|op| (*id, op))).collect();
        if ops.is_empty() || !self.live { Vec::new() } else { vec![Effect::Impact { corrections: ops }] }
    }

    /// The operation of correction `id`, from the list or from this sitting's record.
    fn op_of(&self, id: u64) -> Option<Op> {
        self.corrections
            .iter()
            .find(|c| c.id == id)
            .map(|c| c.op.clone())
            .or_else(|| self.recording.corrections.iter().find(|c| c.id == id).map(|c| c.draft.op.clone()))
    }

    /// The store's side answered: this sitting's runs are added, those just made are said, and
    /// the list is shown if `I` asked for it.
    pub(super) fn impacts_known(&mut self, known: Vec<ImpactOf>) {
        for mut impact in known {
            let Some(op) = self.op_of(impact.id) else { continue };
            for (i, run) in self.recording.runs.iter().enumerate() {
                if let Some(how) = crate::impact::touch(&op, &crate::impact::footprint_of(run)) {
                    let answer =
                        run.answer.as_ref().map(|a| a.answers.join(", ")).unwrap_or_else(|| "no answer".into());
                    let line = format!("this sitting, run {}  {} → {}", i + 1, run.question, answer);
                    impact.runs.push((how == crate::impact::Touch::RestsOn, line));
                }
            }
            impact.kept += self.recording.runs.len();
            impact.runs.sort_by_key(|(rests, _)| !*rests);
            let id = impact.id;
            self.impacts.insert(id, impact);
            // Said again only when it touches something (the status line is short).
            if let Some(recorded) = self.announce.remove(&id)
                && let Some(i) = self.impacts.get(&id).filter(|i| !i.runs.is_empty())
            {
                let answers = if i.runs.len() == 1 { "answer" } else { "answers" };
                self.say(format!("{recorded}; touches {} kept {answers} (I: which); a: ask again", i.runs.len()));
            }
            if self.show_impact_of == Some(id) {
                self.show_impact_of = None;
                self.list_impact(id);
            }
        }
    }

    /// `correction 3 touches 2 kept answers (1 rests on it)`.
    fn impact_line(&self, id: u64) -> String {
        match self.impacts.get(&id) {
            Some(i) if i.runs.is_empty() => format!("correction {id}: no kept answer read it (of {})", i.kept),
            Some(i) => format!(
                "correction {id} touches {} of {} kept answers ({} rest on it)",
                i.runs.len(),
                i.kept,
                i.resting()
            ),
            None => format!("correction {id}: its impact is being read"),
        }
    }

    /// The selected correction (outside its pane: the last one made here).
    fn impact_target(&self) -> Option<u64> {
        if self.focus == Focus::Corrections {
            self.corrections.get(self.corrections_at).map(|c| c.id)
        } else {
            self.recording.corrections.last().map(|c| c.id)
        }
    }

    /// `I`: the runs the selected correction touches (outside its pane: the last one made
    /// here), in the messages pane.
    pub(super) fn show_impact(&mut self) -> Vec<Effect> {
        let Some(id) = self.impact_target() else {
            self.say("no correction to show the impact of: Tab to the corrections pane and select one");
            return Vec::new();
        };
        if self.impacts.contains_key(&id) {
            self.list_impact(id);
            return Vec::new();
        }
        self.show_impact_of = Some(id);
        self.say(self.impact_line(id));
        self.ask_impact(&[id])
    }

    fn list_impact(&mut self, id: u64) {
        let lines: Vec<String> = self
            .impacts
            .get(&id)
            .map(|i| i.runs.clone())
            .unwrap_or_default()
            .into_iter()
            .map(|(rests, line)| format!("  {} {}", if rests { "rests on it:" } else { "read it:    " }, line))
            .collect();
        let head = self.impact_line(id);
        self.say(head);
        for line in lines {
            self.note(Note { error: false, text: line });
        }
        self.focus_on(Focus::Messages);
        self.messages_at = self.messages.len().saturating_sub(1);
    }

    /// `R`: the kept runs the selected correction touches, re-run with it applied (saved
    /// sessions reuse their recorded replies where the run asks the same); old → new comes
    /// back in the messages pane ([`App::reran`]). One at a time: they ask the model.
    pub(super) fn rerun_impact(&mut self) -> Vec<Effect> {
        let Some(id) = self.impact_target() else {
            self.say("no correction to re-run the answers of: Tab to the corrections pane and select one");
            return Vec::new();
        };
        if !self.live {
            self.say("offline replay: nothing can be re-run (replay with --live)");
            return Vec::new();
        }
        if self.rerunning.is_some() {
            self.say("the kept answers are being re-run already: their answers come to the messages pane");
            return Vec::new();
        }
        let Some(correction) = self.corrections.iter().find(|c| c.id == id).cloned() else {
            self.say(format!("correction {id} is not listed yet: try again in a moment"));
            return Vec::new();
        };
        self.rerunning = Some(self.focus);
        self.say(format!("correction {id}: re-running the kept answers it touches…"));
        vec![Effect::RerunImpact { correction: Box::new(correction) }]
    }

    /// The re-runs came back: `N of M kept answers change (K re-run)`, each run's old → new in
    /// the messages pane; this sitting's touched runs are asked again with `a`. The focus moves
    /// there only if the user has not moved on since `R` (typing a question, a form open).
    pub(super) fn reran(&mut self, result: Result<crate::workspace::RerunOf, String>) {
        let pressed_in = self.rerunning.take();
        let r = match result {
            Ok(r) => r,
            Err(e) => {
                self.fail(format!("cannot re-run the kept answers: {e}"));
                return;
            }
        };
        let sitting: Vec<usize> = match self.op_of(r.id) {
            Some(op) => (self.recording.runs.iter().enumerate())
                .filter(|(_, run)| crate::impact::touch(&op, &crate::impact::footprint_of(run)).is_some())
                .map(|(i, _)| i + 1)
                .collect(),
            None => Vec::new(),
        };
        let head = format!(
            "correction {}: {} of {} kept answers change ({} re-run)",
            r.id,
            r.changed,
            r.kept + self.recording.runs.len(),
            r.rerun
        );
        let undisturbed = pressed_in == Some(self.focus) && self.form.is_none() && self.picker.is_none();
        self.say(if undisturbed { head } else { format!("{head} (M: which)") });
        for line in r.lines {
            self.note(Note { error: false, text: format!("  {line}") });
        }
        for run in sitting {
            self.note(Note { error: false, text: format!("  this sitting, run {run}: a asks it again") });
        }
        if undisturbed {
            self.focus_on(Focus::Messages);
            self.messages_at = self.messages.len().saturating_sub(1);
        }
    }
}
