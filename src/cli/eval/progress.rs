//! `eval`'s progress bar.

use crate::eval::record::Record;

/// The progress bar: running accuracy and cost over the questions recorded so far (this run's
/// and a resumed run's); hidden when stdout is not a terminal.
pub(super) struct Progress {
    bar: indicatif::ProgressBar,
    n: u64,
    hits: u64,
    lenient: u64,
    calls: u64,
    tokens: u64,
    wall_ms: u64,
}

impl Progress {
    pub(super) fn new(todo: usize, visible: bool, done: &[Record]) -> Self {
        let bar = if visible {
            indicatif::ProgressBar::with_draw_target(Some(todo as u64), indicatif::ProgressDrawTarget::stdout())
        } else {
            indicatif::ProgressBar::hidden()
        };
        if let Ok(style) = indicatif::ProgressStyle::with_template("{bar:20} {pos}/{len} {elapsed}<{eta} {msg}") {
            bar.set_style(style);
        }
        // Drawn at once and kept moving: a question on a real model takes seconds to minutes,
        // and a blank terminal until the first one ends looks like a hang.
        if visible && todo > 0 {
            bar.set_message(if done.is_empty() { "asking the first question…" } else { "resuming…" });
            bar.enable_steady_tick(std::time::Duration::from_millis(500));
        }
        let mut progress = Self { bar, n: 0, hits: 0, lenient: 0, calls: 0, tokens: 0, wall_ms: 0 };
        done.iter().for_each(|r| progress.count(r));
        progress
    }

    fn count(&mut self, r: &Record) {
        self.n += 1;
        self.hits += u64::from(r.score.hit);
        self.lenient += u64::from(r.score.lenient);
        self.calls += r.llm_calls;
        self.tokens += r.tokens();
        self.wall_ms += r.wall_ms;
    }

    pub(super) fn update(&mut self, r: &Record) {
        self.count(r);
        let n = self.n as f64;
        self.bar.set_message(format!(
            "Hits@1 {:.1}% (lenient {:.1}%) · {:.1} calls · {:.0} tok · {:.2} s/q",
            100.0 * self.hits as f64 / n,
            100.0 * self.lenient as f64 / n,
            self.calls as f64 / n,
            self.tokens as f64 / n,
            self.wall_ms as f64 / n / 1000.0
        ));
        self.bar.inc(1);
    }

    pub(super) fn finish(&self) {
        self.bar.finish_and_clear();
    }
}
