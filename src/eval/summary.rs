//! The summary of a run, computed from its records alone (so `eval summary` and `eval compare`
//! need nothing else): accuracy two ways, where answers came from, and what questions cost.

use super::record::Record;
use crate::engine::AnswerSource;
use serde::Serialize;
use std::collections::BTreeMap;
use std::fmt::Write as _;

#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Summary {
    /// Questions the run was asked to answer (`None`: unknown, read from records alone).
    pub selected: Option<usize>,
    /// Questions with a record.
    pub questions: usize,
    /// Of those, how many failed (counted as wrong).
    pub errors: usize,
    /// The error most failed questions ended with (the first of those most often seen), so a
    /// run that failed throughout says why.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub common_error: Option<String>,
    pub strict: Rate,
    /// Mean F1 over answer sets (strict matching).
    pub f1: f64,
    /// The ToG papers' substring match, for comparison with published numbers only.
    pub lenient: Rate,
    /// Answer sources, by name (`kg_paths`, `own_knowledge`, …; `none` for failed runs).
    pub sources: BTreeMap<String, usize>,
    pub llm_calls: Stat,
    pub tokens: Stat,
    pub kg_lookups: Stat,
    pub wall_ms: Stat,
    pub prompt_tokens: u64,
    /// Of the prompt tokens, those the server reused from its prefix cache (when it says).
    #[serde(skip_serializing_if = "is_zero")]
    pub cached_tokens: u64,
    pub completion_tokens: u64,
    /// By hop count, where the dataset gives one.
    #[serde(skip_serializing_if = "BTreeMap::is_empty")]
    pub per_hop: BTreeMap<usize, HopRow>,
    /// By prompt kind (step): how the replies were read.
    #[serde(skip_serializing_if = "BTreeMap::is_empty")]
    pub reads: BTreeMap<String, super::record::Reads>,
    /// The sets of corrections the questions were answered under (`eval --with-corrections`),
    /// in the order they were first met; empty when no record says. More than one: the
    /// corrections changed during the run (or between it and a `--resume`).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub corrections: Vec<CorrectionsGroup>,
}

/// The records answered under one set of corrections.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct CorrectionsGroup {
    /// `None`: records that do not say (written by an older ongraph, or without corrections).
    pub digest: Option<String>,
    pub active: usize,
    pub questions: usize,
    /// The store generations these records were read at, lowest and highest.
    pub generations: Option<(u64, u64)>,
}

/// The records grouped by the corrections they saw, in the order of the first record of each
/// group; empty when no record says which it saw.
fn corrections_groups(records: &[Record]) -> Vec<CorrectionsGroup> {
    if records.iter().all(|r| r.corrections.is_none()) {
        return Vec::new();
    }
    let mut ordered: Vec<&Record> = records.iter().collect();
    ordered.sort_by_key(|r| r.index);
    let mut groups: Vec<CorrectionsGroup> = Vec::new();
    for r in ordered {
        let digest = r.corrections.as_ref().map(|c| c.digest.clone());
        let at = match groups.iter().position(|g| g.digest == digest) {
            Some(at) => at,
            None => {
                let active = r.corrections.as_ref().map_or(0, |c| c.active);
                groups.push(CorrectionsGroup { digest, active, questions: 0, generations: None });
                groups.len() - 1
            }
        };
        let group = &mut groups[at];
        group.questions += 1;
        if let Some(c) = &r.corrections {
            let (low, high) = group.generations.unwrap_or((c.generation, c.generation));
            group.generations = Some((low.min(c.generation), high.max(c.generation)));
        }
    }
    groups
}

#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct Rate {
    pub hits: usize,
    pub of: usize,
}

impl Rate {
    pub fn percent(self) -> f64 {
        if self.of == 0 { 0.0 } else { 100.0 * self.hits as f64 / self.of as f64 }
    }

    /// The 95% Wilson score interval of the rate, in percent: where the true rate plausibly
    /// lies given this many questions (it stays inside 0–100 and is honest at 0 or all hits,
    /// where the normal approximation is not). `(0, 100)` for no questions.
    pub fn interval(self) -> (f64, f64) {
        if self.of == 0 {
            return (0.0, 100.0);
        }
        const Z: f64 = 1.959_963_984_540_054;
        let (n, p) = (self.of as f64, self.hits as f64 / self.of as f64);
        let z2 = Z * Z;
        let centre = (p + z2 / (2.0 * n)) / (1.0 + z2 / n);
        let half = Z * (p * (1.0 - p) / n + z2 / (4.0 * n * n)).sqrt() / (1.0 + z2 / n);
        (100.0 * (centre - half).max(0.0), 100.0 * (centre + half).min(1.0))
    }

    /// `68.0% (34/50; 95% CI 54.2–79.2)`.
    pub fn with_interval(self) -> String {
        let (low, high) = self.interval();
        format!("{:5.1}% ({}/{}; 95% CI {low:.1}–{high:.1})", self.percent(), self.hits, self.of)
    }
}

/// Serialised with its percentage and interval, so a script needs no statistics of its own.
impl Serialize for Rate {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        use serde::ser::SerializeStruct as _;
        let (low, high) = self.interval();
        let mut s = serializer.serialize_struct("Rate", 4)?;
        s.serialize_field("hits", &self.hits)?;
        s.serialize_field("of", &self.of)?;
        s.serialize_field("percent", &self.percent())?;
        s.serialize_field("ci95", &[low, high])?;
        s.end()
    }
}

#[derive(Clone, Copy, Debug, Default, PartialEq, Serialize)]
pub struct HopRow {
    pub strict: Rate,
    pub lenient: Rate,
    pub mean_calls: f64,
}

/// Mean, median and max of a per-question figure, and its total.
#[derive(Clone, Copy, Debug, Default, PartialEq, Serialize)]
pub struct Stat {
    pub mean: f64,
    pub median: f64,
    pub max: u64,
    pub total: u64,
}

impl Stat {
    pub fn of(values: impl IntoIterator<Item = u64>) -> Self {
        let mut v: Vec<u64> = values.into_iter().collect();
        if v.is_empty() {
            return Self::default();
        }
        v.sort_unstable();
        let total: u64 = v.iter().sum();
        let n = v.len();
        let median = if n % 2 == 1 { v[n / 2] as f64 } else { (v[n / 2 - 1] + v[n / 2]) as f64 / 2.0 };
        Self { mean: total as f64 / n as f64, median, max: v[n - 1], total }
    }
}

fn is_zero(n: &u64) -> bool {
    *n == 0
}

/// How many of some prompt tokens the server reused from its prefix cache, as it reads after
/// their count (" (300 reused from the server's cache)"); nothing when it said none.
pub fn reused(cached_tokens: u64) -> String {
    if cached_tokens == 0 { String::new() } else { format!(" ({cached_tokens} reused from the server's cache)") }
}

/// The name a source goes by in summaries and JSON.
pub fn source_name(source: Option<AnswerSource>) -> &'static str {
    match source {
        Some(AnswerSource::KgPaths) => "kg_paths",
        Some(AnswerSource::PartialPaths) => "partial_paths",
        Some(AnswerSource::CollectedPaths) => "collected_paths",
        Some(AnswerSource::OwnKnowledge) => "own_knowledge",
        Some(AnswerSource::ModelOnly) => "model_only",
        Some(AnswerSource::GeneratedTriples) => "generated_triples",
        None => "none",
    }
}

pub fn summarise(records: &[Record], selected: Option<usize>) -> Summary {
    let rate =
        |rs: &[&Record], hit: fn(&Record) -> bool| Rate { hits: rs.iter().filter(|r| hit(r)).count(), of: rs.len() };
    let all: Vec<&Record> = records.iter().collect();
    let mut sources = BTreeMap::new();
    for r in records {
        *sources.entry(source_name(r.source).to_string()).or_insert(0) += 1;
    }
    let mut by_hop: BTreeMap<usize, Vec<&Record>> = BTreeMap::new();
    for r in records {
        if let Some(h) = r.hops {
            by_hop.entry(h).or_default().push(r);
        }
    }
    let per_hop = by_hop
        .into_iter()
        .map(|(h, rs)| {
            let row = HopRow {
                strict: rate(&rs, |r| r.score.hit),
                lenient: rate(&rs, |r| r.score.lenient),
                mean_calls: Stat::of(rs.iter().map(|r| r.llm_calls)).mean,
            };
            (h, row)
        })
        .collect();
    let n = records.len().max(1) as f64;
    let mut reads: BTreeMap<String, super::record::Reads> = BTreeMap::new();
    for (step, tally) in records.iter().flat_map(|r| &r.reads) {
        *reads.entry(step.clone()).or_default() += *tally;
    }
    Summary {
        selected,
        questions: records.len(),
        errors: records.iter().filter(|r| r.error.is_some()).count(),
        common_error: most_common(records.iter().filter_map(|r| r.error.as_deref())),
        strict: rate(&all, |r| r.score.hit),
        // `+ 0.0`: an empty sum is -0.0, shown as "-0.000".
        f1: records.iter().map(|r| r.score.f1).sum::<f64>() / n + 0.0,
        lenient: rate(&all, |r| r.score.lenient),
        sources,
        llm_calls: Stat::of(records.iter().map(|r| r.llm_calls)),
        tokens: Stat::of(records.iter().map(Record::tokens)),
        kg_lookups: Stat::of(records.iter().map(|r| r.kg_lookups)),
        wall_ms: Stat::of(records.iter().map(|r| r.wall_ms)),
        prompt_tokens: records.iter().map(|r| r.prompt_tokens).sum(),
        cached_tokens: records.iter().map(|r| r.cached_tokens).sum(),
        completion_tokens: records.iter().map(|r| r.completion_tokens).sum(),
        per_hop,
        reads,
        corrections: corrections_groups(records),
    }
}

/// The text seen most often, the first of those seen as often.
fn most_common<'a>(texts: impl Iterator<Item = &'a str>) -> Option<String> {
    let mut counts: Vec<(&str, usize)> = Vec::new();
    for text in texts {
        match counts.iter_mut().find(|(t, _)| *t == text) {
            Some((_, n)) => *n += 1,
            None => counts.push((text, 1)),
        }
    }
    let most = counts.iter().map(|(_, n)| *n).max()?;
    counts.into_iter().find(|(_, n)| *n == most).map(|(t, _)| t.to_string())
}

impl Summary {
    /// The summary as a plain-text table.
    pub fn render(&self) -> String {
        let mut out = String::new();
        let _ = self.write_to(&mut out);
        out
    }

    fn write_to(&self, out: &mut String) -> std::fmt::Result {
        self.write_accuracy(out)?;
        self.write_costs(out)?;
        self.write_per_hop(out)?;
        self.write_corrections(out)?;
        self.write_reads(out)
    }

    /// How many questions, how many failed (and with what), how many right, and where the
    /// answers came from.
    fn write_accuracy(&self, out: &mut String) -> std::fmt::Result {
        let missing = self.selected.map_or(0, |s| s.saturating_sub(self.questions));
        write!(out, "Questions    {}", self.questions)?;
        if missing > 0 {
            write!(out, " of {} ({missing} not run yet: --resume to finish)", self.selected.unwrap_or_default())?;
        }
        writeln!(
            out,
            "{}",
            if self.errors > 0 { format!(", {} failed (counted wrong)", self.errors) } else { String::new() }
        )?;
        if let Some(error) = &self.common_error {
            let shown: String = crate::safe_text::one_line(error).chars().take(160).collect();
            writeln!(out, "Failed with  {shown}")?;
        }
        writeln!(out, "Strict       Hits@1 {}   F1 {:.3}", self.strict.with_interval(), self.f1)?;
        writeln!(
            out,
            "Lenient      {}   substring match, as the ToG papers count: for comparison only",
            self.lenient.with_interval()
        )?;
        let shares: Vec<String> = self
            .sources
            .iter()
            .map(|(name, n)| format!("{name} {:.1}%", 100.0 * *n as f64 / self.questions.max(1) as f64))
            .collect();
        writeln!(out, "Answered by  {}", shares.join(" · "))
    }

    /// What a question cost (calls, tokens, lookups, time), and the run's tokens.
    fn write_costs(&self, out: &mut String) -> std::fmt::Result {
        writeln!(out, "Per question       mean   median      max      total")?;
        for (name, s) in [("LLM calls", self.llm_calls), ("tokens", self.tokens), ("KG lookups", self.kg_lookups)] {
            writeln!(out, "  {name:<14} {:>8.1} {:>8.1} {:>8} {:>10}", s.mean, s.median, s.max, s.total)?;
        }
        let w = self.wall_ms;
        writeln!(
            out,
            "  {:<14} {:>8.2} {:>8.2} {:>8.2} {:>10.1}",
            "time (s)",
            w.mean / 1000.0,
            w.median / 1000.0,
            w.max as f64 / 1000.0,
            w.total as f64 / 1000.0
        )?;
        writeln!(
            out,
            "  tokens: {} prompt{} + {} completion",
            self.prompt_tokens,
            reused(self.cached_tokens),
            self.completion_tokens
        )
    }

    /// Accuracy and calls by hop count, where the dataset gives one.
    fn write_per_hop(&self, out: &mut String) -> std::fmt::Result {
        if self.per_hop.is_empty() {
            return Ok(());
        }
        writeln!(out, "Per hop      questions   strict   lenient   calls")?;
        for (h, row) in &self.per_hop {
            writeln!(
                out,
                "  {h}-hop      {:>9}   {:5.1}%    {:5.1}%   {:5.1}",
                row.strict.of,
                row.strict.percent(),
                row.lenient.percent(),
                row.mean_calls
            )?;
        }
        Ok(())
    }

    /// The sets of corrections the questions were answered under, when there was more than one.
    fn write_corrections(&self, out: &mut String) -> std::fmt::Result {
        if self.corrections.len() <= 1 {
            return Ok(());
        }
        writeln!(
            out,
            "Corrections  the questions were answered under {} different sets of corrections:",
            self.corrections.len()
        )?;
        for g in &self.corrections {
            let what = match (&g.digest, g.generations) {
                (Some(digest), Some((low, high))) if low == high => {
                    format!("{} active (digest {digest}, store generation {low})", g.active)
                }
                (Some(digest), Some((low, high))) => {
                    format!("{} active (digest {digest}, store generations {low}–{high})", g.active)
                }
                _ => "not recorded (an older ongraph, or run without --with-corrections)".to_string(),
            };
            writeln!(out, "  {:>5} question(s)  {what}", g.questions)?;
        }
        Ok(())
    }

    /// How each kind of prompt's replies were read.
    fn write_reads(&self, out: &mut String) -> std::fmt::Result {
        if self.reads.is_empty() {
            return Ok(());
        }
        writeln!(
            out,
            "Replies                  calls     JSON  extracted  fell back (nothing usable: BM25, No, none, …)"
        )?;
        for (step, r) in &self.reads {
            let pct = |n: u64| 100.0 * n as f64 / r.calls.max(1) as f64;
            writeln!(
                out,
                "  {step:<22} {:>5}   {:5.1}%     {:5.1}%     {:5.1}%",
                r.calls,
                pct(r.json),
                pct(r.extracted),
                pct(r.fallback)
            )?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stats_and_medians() {
        let s = Stat::of([4, 1, 3, 2]);
        assert_eq!((s.mean, s.median, s.max, s.total), (2.5, 2.5, 4, 10));
        assert_eq!(Stat::of([7, 1, 3]).median, 3.0);
        assert_eq!(Stat::of([]), Stat::default());
        assert_eq!(Rate { hits: 0, of: 0 }.percent(), 0.0);
    }

    #[test]
    fn wilson_intervals_match_published_values() {
        // 34 of 50 (the committed ToG figure): 54.2–79.2 by the Wilson formula.
        let (low, high) = Rate { hits: 34, of: 50 }.interval();
        assert!((low - 54.19).abs() < 0.05 && (high - 79.24).abs() < 0.05, "{low} {high}");
        // At the ends it stays inside 0–100 and is not empty.
        let (low, high) = Rate { hits: 0, of: 20 }.interval();
        assert!(low == 0.0 && (high - 16.11).abs() < 0.05, "{low} {high}");
        let (low, high) = Rate { hits: 20, of: 20 }.interval();
        assert!((low - 83.89).abs() < 0.05 && high == 100.0, "{low} {high}");
        assert_eq!(Rate { hits: 34, of: 50 }.with_interval(), " 68.0% (34/50; 95% CI 54.2–79.2)");
        let json = serde_json::to_value(Rate { hits: 1, of: 2 }).unwrap();
        assert_eq!(json["percent"], 50.0);
        assert_eq!(json["ci95"].as_array().map(Vec::len), Some(2));
    }

    #[test]
    fn prompt_tokens_the_server_reused_are_said_when_it_said_so() {
        let mut cached = Record::sample(0, true, 3);
        cached.cached_tokens = 120;
        let records = [cached, Record::sample(1, true, 2)];
        let text = summarise(&records, None).render();
        assert!(text.contains("tokens: 500 prompt (120 reused from the server's cache) + 50 completion"), "{text}");
        let plain = summarise(&[Record::sample(1, true, 2)], None).render();
        assert!(plain.contains("tokens: 200 prompt + 20 completion"), "{plain}");
    }

    #[test]
    fn errors_and_unrun_questions_count_against_the_run() {
        let mut failed = Record::sample(2, false, 1);
        (failed.error, failed.source, failed.prediction) = (Some("HTTP 500".into()), None, Vec::new());
        let records = [Record::sample(0, true, 3), Record::sample(1, false, 5), failed];
        let s = summarise(&records, Some(5));
        assert_eq!((s.strict, s.errors), (Rate { hits: 1, of: 3 }, 1));
        assert_eq!(s.sources.get("none"), Some(&1));
        assert_eq!((s.llm_calls.median, s.llm_calls.max, s.tokens.total), (3.0, 5, 990));
        assert_eq!(s.per_hop[&1].strict, Rate { hits: 1, of: 2 }, "questions 0 and 2 are 1-hop");
        let text = s.render();
        assert!(
            text.starts_with("Questions    3 of 5 (2 not run yet: --resume to finish), 1 failed (counted wrong)\n"),
            "{text}"
        );
        assert!(text.contains("Strict       Hits@1  33.3% (1/3; 95% CI 6.1–79.2)"), "{text}");
        assert!(text.contains("kg_paths 66.7% · none 33.3%"), "{text}");
        assert!(text.contains("\nFailed with  HTTP 500\n"), "the cause is said: {text}");
        let ok = summarise(&[Record::sample(0, true, 3)], None).render();
        assert!(!ok.contains("Failed with"), "{ok}");
        let none = summarise(&[], Some(3)).render();
        assert!(none.contains("F1 0.000") && !none.contains("-0.000"), "{none}");
    }

    #[test]
    fn records_answered_under_different_corrections_are_counted_per_set() {
        use crate::eval::record::CorrectionsSeen;
        let seen =
            |generation, digest: &str, active| Some(CorrectionsSeen { generation, active, digest: digest.to_string() });
        let mut records: Vec<Record> = (0..5).map(|i| Record::sample(i, true, 1)).collect();
        records[0].corrections = seen(4, "aaaaaaaaaaaaaaaa", 1);
        records[1].corrections = seen(5, "aaaaaaaaaaaaaaaa", 1);
        records[2].corrections = seen(7, "bbbbbbbbbbbbbbbb", 2);
        records[3].corrections = seen(8, "aaaaaaaaaaaaaaaa", 1);
        let s = summarise(&records, None);
        let counts: Vec<_> = s.corrections.iter().map(|g| (g.digest.as_deref(), g.questions)).collect();
        assert_eq!(counts, [(Some("aaaaaaaaaaaaaaaa"), 3), (Some("bbbbbbbbbbbbbbbb"), 1), (None, 1)]);
        assert_eq!(s.corrections[0].generations, Some((4, 8)));
        let text = s.render();
        assert!(
            text.contains("Corrections  the questions were answered under 3 different sets of corrections:"),
            "{text}"
        );
        assert!(text.contains("3 question(s)  1 active (digest aaaaaaaaaaaaaaaa, store generations 4–8)"), "{text}");
        assert!(text.contains("1 question(s)  2 active (digest bbbbbbbbbbbbbbbb, store generation 7)"), "{text}");
        assert!(text.contains("1 question(s)  not recorded"), "{text}");

        // One set throughout is no news; no set recorded is nothing to say.
        records.truncate(2);
        let s = summarise(&records, None);
        assert_eq!(s.corrections.len(), 1);
        assert!(!s.render().contains("Corrections"));
        assert!(summarise(&[Record::sample(0, true, 1)], None).corrections.is_empty());
    }
}
