//! Two runs side by side: their summaries, then question by question (matched on the dataset
//! position, checked by the question text) where one is right and the other is not.

use super::record::Record;
use super::significance::{fisher_exact, mcnemar_exact};
use super::summary::{Summary, source_name, summarise};
use crate::engine::AnswerSource;
use std::collections::BTreeMap;
use std::fmt::Write as _;

pub struct Comparison {
    pub a: Summary,
    pub b: Summary,
    pub a_method: String,
    pub b_method: String,
    /// Questions in both runs, by strict Hits@1: both right, only A, only B, neither.
    pub both: usize,
    pub only_a: usize,
    pub only_b: usize,
    pub neither: usize,
    /// Questions one run has and the other does not.
    pub unmatched: usize,
    /// The questions in both, in dataset order: (A's record, B's record).
    rows: Vec<(Record, Record)>,
}

pub fn compare(a: &[Record], b: &[Record]) -> Result<Comparison, String> {
    // A question recorded twice (two runs appending to one file) is counted once, as its
    // last record.
    let a_by_index: BTreeMap<usize, &Record> = a.iter().map(|r| (r.index, r)).collect();
    let b_by_index: BTreeMap<usize, &Record> = b.iter().map(|r| (r.index, r)).collect();
    let mut rows = Vec::new();
    for ra in a_by_index.values().copied() {
        if let Some(rb) = b_by_index.get(&ra.index) {
            if ra.question != rb.question {
                return Err(format!(
                    "question {} differs ({:?} vs {:?}): the runs are on different datasets",
                    ra.index + 1,
                    ra.question,
                    rb.question
                ));
            }
            rows.push((ra.clone(), (*rb).clone()));
        }
    }
    rows.sort_by_key(|(r, _)| r.index);
    let count = |f: fn(bool, bool) -> bool| rows.iter().filter(|(x, y)| f(x.score.hit, y.score.hit)).count();
    let method = |rs: &[Record]| rs.first().map(|r| r.method.clone()).unwrap_or_default();
    let (in_a, in_b): (std::collections::BTreeSet<_>, std::collections::BTreeSet<_>) =
        (a_by_index.keys().collect(), b_by_index.keys().collect());
    Ok(Comparison {
        a: summarise(a, None),
        b: summarise(b, None),
        a_method: method(a),
        b_method: method(b),
        both: count(|x, y| x && y),
        only_a: count(|x, y| x && !y),
        only_b: count(|x, y| !x && y),
        neither: count(|x, y| !x && !y),
        unmatched: in_a.symmetric_difference(&in_b).count(),
        rows,
    })
}

fn mark(r: &Record) -> &'static str {
    if r.error.is_some() {
        "error"
    } else if r.score.hit {
        "✓"
    } else {
        "✗"
    }
}

fn prediction(r: &Record) -> String {
    let text = if let Some(e) = &r.error {
        e.clone()
    } else if r.prediction.is_empty() {
        "(no answer)".into()
    } else {
        r.prediction.join(" | ")
    };
    shorten(&text, 40)
}

/// `text` in a table cell: one line, at most `max` characters.
fn shorten(text: &str, max: usize) -> String {
    let text = crate::safe_text::one_line(text);
    if text.chars().count() <= max {
        return text.to_string();
    }
    let cut: String = text.chars().take(max - 1).collect();
    format!("{cut}…")
}

impl Comparison {
    /// The side-by-side table, then the questions whose strict result differs (all questions
    /// with `all`).
    pub fn render(&self, a_name: &str, b_name: &str, all: bool) -> String {
        let mut out = String::new();
        let _ = self.write_to(&mut out, a_name, b_name, all);
        out
    }

    fn write_to(&self, out: &mut String, a_name: &str, b_name: &str, all: bool) -> std::fmt::Result {
        self.write_summaries(out, a_name, b_name)?;
        writeln!(out)?;
        if self.rows.is_empty() {
            // Two splits, two datasets: nothing to pair, and a p of 1 would say "no difference".
            return writeln!(
                out,
                "The runs share no question ({} in one run only): nothing to compare pairwise; \
                 were they made on the same dataset and split?",
                self.unmatched
            );
        }
        self.write_pairwise(out)?;
        self.write_questions(out, all)
    }

    /// The two runs' summaries side by side, a row per figure.
    fn write_summaries(&self, out: &mut String, a_name: &str, b_name: &str) -> std::fmt::Result {
        let (a, b) = (&self.a, &self.b);
        writeln!(
            out,
            "{:<22} {:>22} {:>22}",
            "",
            shorten(&format!("A: {a_name}"), 22),
            shorten(&format!("B: {b_name}"), 22)
        )?;
        writeln!(out, "{:<22} {:>22} {:>22}", "method", self.a_method, self.b_method)?;
        let pct = |x: f64| format!("{x:.1}%");
        let interval = |r: super::summary::Rate| {
            let (low, high) = r.interval();
            format!("{low:.1}–{high:.1}%")
        };
        let rows: [(&str, String, String); 11] = [
            ("questions", a.questions.to_string(), b.questions.to_string()),
            ("strict Hits@1", pct(a.strict.percent()), pct(b.strict.percent())),
            ("  95% CI (Wilson)", interval(a.strict), interval(b.strict)),
            ("strict F1", format!("{:.3}", a.f1), format!("{:.3}", b.f1)),
            ("lenient (papers')", pct(a.lenient.percent()), pct(b.lenient.percent())),
            ("errors", a.errors.to_string(), b.errors.to_string()),
            ("from KG paths", share(a, KG), share(b, KG)),
            ("own knowledge", share(a, OWN), share(b, OWN)),
            ("LLM calls / question", format!("{:.2}", a.llm_calls.mean), format!("{:.2}", b.llm_calls.mean)),
            ("tokens / question", format!("{:.0}", a.tokens.mean), format!("{:.0}", b.tokens.mean)),
            (
                "time / question",
                format!("{:.2} s", a.wall_ms.mean / 1000.0),
                format!("{:.2} s", b.wall_ms.mean / 1000.0),
            ),
        ];
        for (name, x, y) in rows {
            writeln!(out, "{name:<22} {x:>22} {y:>22}")?;
        }
        Ok(())
    }

    /// On the questions in both: how their results pair up, and whether the difference could be
    /// chance.
    fn write_pairwise(&self, out: &mut String) -> std::fmt::Result {
        writeln!(
            out,
            "On the {} questions in both (strict): both right {}, only A {}, only B {}, neither {}",
            self.rows.len(),
            self.both,
            self.only_a,
            self.only_b,
            self.neither
        )?;
        writeln!(
            out,
            "Could the difference be chance? McNemar exact p = {:.3} (paired, on the {} questions where they differ); \
             Fisher exact p = {:.3} (their right answers on those questions as independent samples)",
            mcnemar_exact(self.only_a, self.only_b),
            self.only_a + self.only_b,
            fisher_exact(self.both + self.only_a, self.rows.len(), self.both + self.only_b, self.rows.len())
        )?;
        if self.unmatched > 0 {
            writeln!(out, "{} question(s) are in one run only (not compared)", self.unmatched)?;
        }
        Ok(())
    }

    /// The questions whose strict result (or error) differs, every question with `all`: a row
    /// each, with both runs' answers.
    fn write_questions(&self, out: &mut String, all: bool) -> std::fmt::Result {
        let shown: Vec<&(Record, Record)> =
            self.rows.iter().filter(|(x, y)| all || x.score.hit != y.score.hit || x.error != y.error).collect();
        if shown.is_empty() {
            return Ok(());
        }
        writeln!(out)?;
        writeln!(out, "{:>6}  {:<40}  {:<48}  {:<48}  calls", "#", "question", "A", "B")?;
        for (x, y) in shown {
            writeln!(
                out,
                "{:>6}  {:<40}  {:<6}{:<42}  {:<6}{:<42}  {}/{}",
                x.index + 1,
                shorten(&x.question, 40),
                mark(x),
                prediction(x),
                mark(y),
                prediction(y),
                x.llm_calls,
                y.llm_calls
            )?;
        }
        Ok(())
    }
}

/// The sources counted in the "own knowledge" and "from KG paths" rows.
const OWN: Option<AnswerSource> = Some(AnswerSource::OwnKnowledge);
const KG: Option<AnswerSource> = Some(AnswerSource::KgPaths);

fn share(s: &Summary, source: Option<AnswerSource>) -> String {
    let source = source_name(source);
    let n = s.sources.get(source).copied().unwrap_or(0);
    format!("{:.1}%", 100.0 * n as f64 / s.questions.max(1) as f64)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn questions_are_matched_by_position_and_differences_listed() {
        let a = [Record::sample(0, true, 3), Record::sample(1, true, 3), Record::sample(2, false, 3)];
        let mut b = vec![Record::sample(0, true, 4), Record::sample(1, false, 4), Record::sample(3, true, 4)];
        b[0].method = "ToG-R".into();
        let c = compare(&a, &b).unwrap();
        assert_eq!((c.both, c.only_a, c.only_b, c.neither, c.unmatched), (1, 1, 0, 0, 2));
        let text = c.render("a", "b", false);
        assert!(text.contains("On the 2 questions in both (strict): both right 1, only A 1, only B 0, neither 0"));
        assert!(text.contains("McNemar exact p = 1.000 (paired, on the 1 questions where they differ)"), "{text}");
        let rows: Vec<&str> = text.lines().filter(|l| l.contains("question 1?")).collect();
        assert_eq!(rows.len(), 1, "only the question where they differ: {text}");
        // Runs on other splits share nothing: said, not a p of 1 (found by a trial).
        let apart = compare(&a[..1], &b[2..]).unwrap().render("dev", "test", false);
        assert!(apart.contains("The runs share no question (2 in one run only)"), "{apart}");
        assert!(!apart.contains("McNemar"), "{apart}");
        assert!(!text.contains("question 0?"));
        assert!(c.render("a", "b", true).contains("question 0?"), "--all lists every question");
        b[1].question = "another question?".into();
        assert!(compare(&a, &b).err().is_some_and(|e| e.contains("different datasets")));
    }

    /// Found by a review: Fisher's test took each run's whole counts, so a run of 50 against
    /// one stopped at 19 compared other questions than McNemar's; and a file holding a question
    /// twice made the count of unmatched questions negative (a panic, or 2^64 − 1).
    #[test]
    fn both_tests_read_the_questions_both_runs_share() {
        let a: Vec<Record> = (0..10).map(|i| Record::sample(i, i < 8, 3)).collect();
        let b: Vec<Record> = (0..4).map(|i| Record::sample(i, true, 3)).collect();
        let text = compare(&a, &b).unwrap().render("a", "b", false);
        // On the 4 shared questions both are right on all 4: p = 1, whatever A did on the rest.
        assert!(text.contains("Fisher exact p = 1.000 (their right answers on those questions"), "{text}");
        assert!(text.contains("6 question(s) are in one run only"), "{text}");
        let twice = [a.clone(), a[..3].to_vec()].concat();
        let c = compare(&twice, &b).unwrap();
        assert_eq!((c.unmatched, c.both, c.rows.len()), (6, 4, 4), "each question once");
    }
}
