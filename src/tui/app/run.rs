//! Stepping the run: start, step, absorb the results, apply overrides, rewind, ask again.

use super::*;
use crate::engine::events::EventKind;

impl App {
    /// Takes the next step: from the recording when replaying, else by asking the executor.
    pub(super) fn step(&mut self) -> Vec<Effect> {
        loop {
            if self.in_flight.is_some() || self.run.is_none() {
                return Vec::new();
            }
            if let Some(moment) = self.recorded_change() {
                let player = self.replay.as_ref().and_then(|r| r.player.as_ref());
                let replayed = match (player, self.run.as_mut()) {
                    (Some(player), Some(run)) => Some(player.play(run, &moment)),
                    _ => None,
                };
                // A recorded change this build refuses (e.g. one made after the answer, by an
                // older ongraph) is said, not recorded, and the replay stops following there.
                if let Some(Err(e)) = replayed {
                    self.auto = false;
                    if let Some(replay) = &mut self.replay {
                        replay.player = None;
                    }
                    self.fail(format!(
                        "the recording's next change cannot be replayed ({e}): from here the steps are asked live"
                    ));
                    return Vec::new();
                }
                self.record(moment);
                self.generation += 1;
                let summary = match (replayed, &self.run) {
                    (Some(Ok(i)), Some(run)) => run.trace().get(i).map(|e| format!("replayed: {}", e.summary)),
                    _ => None,
                };
                if let Some(summary) = summary {
                    self.say(summary);
                }
                if self.auto {
                    continue;
                }
                return Vec::new();
            }
            let Some(run) = &mut self.run else { return Vec::new() };
            // The run's own method (the app's may have changed for the next question).
            let method = run.settings().method;
            match run.poll() {
                Poll::Finished => {
                    self.auto = false;
                    self.say("answered: a asks again · i: a new question · t: the triples behind it");
                    return Vec::new();
                }
                Poll::Need(requests) => {
                    if let Some((responses, elapsed_ms)) = self.recorded(&requests) {
                        self.asked = Some(requests);
                        let fed = self.absorb(Ok(responses), elapsed_ms);
                        let going_on = self.auto && !self.run.as_ref().is_some_and(Run::is_finished);
                        // The calls extracting answers finish the step that asked for them.
                        if fed == Some(Fed::Extracting) || (fed.is_some() && going_on) {
                            continue;
                        }
                        return Vec::new();
                    }
                    if !self.live {
                        self.auto = false;
                        self.say(
                            "this step is not in the recording: replay with --live to go on with a real KG and model",
                        );
                        return Vec::new();
                    }
                    self.in_flight = Some(Instant::now());
                    self.asked = Some(requests.clone());
                    return vec![Effect::Perform { generation: self.generation, requests, method }];
                }
            }
        }
    }

    /// Feeds a batch's results to the run and records them: what the run did with them, or
    /// `None` on an error (said).
    pub(super) fn absorb(&mut self, result: Result<Vec<Response>, String>, elapsed_ms: u64) -> Option<Fed> {
        let asked = self.asked.take();
        let run = self.run.as_mut()?;
        let fed = result
            .clone()
            .and_then(|r| run.feed_timed(r, std::time::Duration::from_millis(elapsed_ms)).map_err(|e| e.to_string()));
        let i = match fed {
            Ok(fed) => {
                if let (Some(requests), Ok(responses)) = (asked, result) {
                    self.record(Moment::Exchange { requests, responses, elapsed_ms });
                }
                match fed {
                    Fed::Step(i) => i,
                    Fed::Extracting => {
                        self.say("a free reply could not be read as it is: a second call reads its answer out");
                        return Some(fed);
                    }
                }
            }
            Err(e) => {
                self.auto = false;
                self.fail(e);
                return None;
            }
        };
        self.stepped(i);
        Some(Fed::Step(i))
    }

    /// Says what step `i` did, and the answer when it ended the run.
    fn stepped(&mut self, i: usize) {
        let Some(run) = &self.run else { return };
        let summary = run.trace().get(i).map(|e| e.summary.clone());
        let endpoint: Vec<String> = run
            .trace()
            .get(i)
            .map_or_else(Vec::new, |e| e.notes.iter().filter(|n| crate::llm::is_endpoint_note(n)).cloned().collect());
        let finished = run.is_finished();
        let answers = run.answer().map(|a| a.answers.clone());
        // How the endpoint had to be asked goes to the messages pane, kept for the
        // sitting, once (a note may come with every call: missing token counts).
        for note in endpoint {
            if !self.messages.iter().any(|m| m.text == note) {
                self.note(Note { error: false, text: note });
            }
        }
        if let Some(summary) = summary {
            self.say(summary);
        }
        if finished {
            self.show_bottom(Bottom::Answer);
            self.auto = false;
            self.sync_record();
            if let (Some(earlier), Some(now)) = (&self.earlier, answers) {
                self.say(if earlier.answers == now {
                    format!("same answer as before: {}", now.join(" | "))
                } else {
                    // The new answer first: a narrow status bar cuts the end.
                    format!("answer changed to {} (was {})", now.join(" | "), earlier.answers.join(" | "))
                });
            }
        }
    }

    pub(super) fn start(&mut self) -> Vec<Effect> {
        let question = self.question().trim().to_string();
        match Run::new(
            &question,
            Topics::Extract,
            self.settings.clone(),
            self.prompts.clone(),
            self.profile.clone(),
            &self.kg_name,
        ) {
            Ok(run) => {
                // A new question has no earlier answer to compare with.
                if self.earlier.as_ref().is_some_and(|e| e.question != question) {
                    self.earlier = None;
                }
                self.sync_record();
                self.recording.begin(&question, Topics::Extract, &self.settings);
                if let Some(replay) = &mut self.replay {
                    // The next recorded run with this question (a re-ask is the next run).
                    let from = replay.run.map_or(0, |i| i + 1);
                    let runs = &replay.session.runs;
                    replay.run = (from..runs.len()).chain(0..from).find(|&i| runs[i].question == question);
                    replay.player = replay.run.map(|i| Player::new(&runs[i]));
                }
                // An offline replay shows the recording's corrections as they stood; a live one
                // works on the user's own store, whose list is the one shown (and undone).
                if let Some(i) = self.replay.as_ref().and_then(|r| r.run).filter(|_| !self.live) {
                    let session = self.replay.as_ref().map(|r| r.session.clone());
                    if let Some(session) = session {
                        self.corrections = super::corrections_as_of(&session, i);
                        self.corrections_at = self.corrections_at.min(self.corrections.len().saturating_sub(1));
                    }
                }
                self.run = Some(run);
                self.generation += 1;
                self.in_flight = None;
                self.selected = 0;
                self.transcript_at = 0;
                self.method_at = 0;
                self.answer_at = 0;
                self.abandoned_from = 0;
                self.traced = None;
                self.collapsed.clear();
                self.focus = Focus::Tree;
                self.bottom = Bottom::Transcript;
                self.say(self.ready());
                if self.history.last() != Some(&question) {
                    self.history.push(question.clone());
                }
                self.history_at = None;
                let mut effects = if self.replay.is_none() { vec![Effect::Remember { question }] } else { Vec::new() };
                effects.extend(self.step());
                effects
            }
            Err(e) => {
                self.fail(e.to_string());
                Vec::new()
            }
        }
    }

    /// Applies an override to the run; results in flight were planned before it and are dropped.
    pub(super) fn apply(&mut self, o: Override) -> Vec<Effect> {
        let Some(run) = &mut self.run else { return Vec::new() };
        match run.apply(o.clone()) {
            Ok(i) => {
                self.generation += 1;
                self.in_flight = None;
                // The step in flight was dropped: running on would be a surprise (n goes on).
                self.auto = false;
                let summary = run.trace().get(i).map(|e| e.summary.clone());
                if let Some(summary) = summary {
                    self.say(summary);
                }
                self.unsaved = true;
                let moment = Moment::Override { change: o };
                self.replay_follows(&moment);
                self.record(moment);
            }
            Err(e) => self.fail(e.to_string()),
        }
        Vec::new()
    }

    pub(super) fn rewind(&mut self, to: usize) -> Vec<Effect> {
        let Some(run) = &self.run else { return Vec::new() };
        // What going back sets aside, to say so.
        let set_aside = run.rewind_preview(to).map(|s| s.describe()).unwrap_or_default();
        self.go_back(to, format!("back at step {to}: set aside {set_aside} (B clears them from view)"))
    }

    /// Rewinds to `to` and says `said`; recorded as a rewind.
    fn go_back(&mut self, to: usize, said: String) -> Vec<Effect> {
        let Some(run) = &mut self.run else { return Vec::new() };
        match run.rewind(to) {
            Ok(_) => {
                self.generation += 1;
                self.in_flight = None;
                self.auto = false;
                self.say(said);
                self.unsaved = true;
                let moment = Moment::Rewind { to };
                self.replay_follows(&moment);
                self.record(moment);
                self.selected = self.selected.min(self.visible_rows().len().saturating_sub(1));
            }
            Err(e) => self.fail(e.to_string()),
        }
        Vec::new()
    }

    /// `b`: takes back the last override when one was made since the last step (a rewind to
    /// the entry before it, so a replay does the same), else goes back one step.
    pub(super) fn rewind_one(&mut self) -> Vec<Effect> {
        let Some(run) = &self.run else { return Vec::new() };
        if let Some((to, what)) = run.last_override() {
            let said = format!("took back: {what}");
            return self.go_back(to, said);
        }
        let steps: Vec<usize> = run.trace().iter().filter(|e| e.phase().is_some()).map(|e| e.index).collect();
        match steps.iter().rev().nth(1) {
            Some(&to) => self.rewind(to),
            None => {
                self.say("nothing to go back to");
                Vec::new()
            }
        }
    }

    /// Asks the same question again (through whatever corrections now apply), keeping the
    /// current answer to compare with.
    pub(super) fn reask(&mut self) -> Vec<Effect> {
        let Some(run) = &self.run else { return Vec::new() };
        // The user's steering of this run is not carried over: said, so a changed answer is
        // not put down to the corrections alone.
        let steered = run.trace().iter().filter(|e| matches!(e.kind, EventKind::Override { .. })).count();
        if let Some(answer) = run.answer() {
            self.earlier = Some(Earlier {
                question: run.question().to_string(),
                answers: answer.answers.clone(),
                // As the answer pane shows them, to compare with the new answer's.
                paths: answer.paths.iter().map(|p| run.beam().path_text(p.leaf)).collect(),
            });
        }
        let question = run.question().to_string();
        self.reset_input(&question);
        self.auto = true;
        let generation = self.generation;
        let effects = self.start();
        // Not in a replay (its recording makes its own changes again), and only when the run
        // started (else its error stays in view).
        if steered > 0 && self.replay.is_none() && self.generation != generation {
            self.say(format!(
                "asked again from the start, through the corrections; your {steered} change{} to the last run (prune, keep, pin…) not made again",
                if steered == 1 { "" } else { "s" }
            ));
        }
        effects
    }

    /// Selects the next path the answer rests on, in the tree.
    pub(super) fn trace_answer(&mut self) {
        let Some(answer) = self.run.as_ref().and_then(|r| r.answer()) else {
            self.say("no answer yet to trace");
            return;
        };
        if answer.paths.is_empty() {
            self.say("the answer rests on no KG path (the model's own knowledge)");
            return;
        }
        let at = self.traced.map_or(0, |t| (t + 1) % answer.paths.len());
        let (leaf, n) = (answer.paths[at].leaf, answer.paths.len());
        let text = self.run.as_ref().map_or_else(String::new, |r| r.beam().path_text(leaf));
        // A path that names no answer was only in front of the model: said so.
        let supports = self.run.as_ref().is_some_and(|r| r.reaches_answer(leaf));
        let what = if supports { "behind the answer" } else { "shown to the model, naming no answer" };
        self.traced = Some(at);
        self.answer_at = at;
        self.show_bottom(Bottom::Answer);
        self.reveal(NodeRef { branch: None, id: leaf });
        self.say(format!("path {}/{n} {what}: {text}", at + 1));
    }
}
