//! The brace text the engine's parsers read, as the shapes' reads write it: cleaned text,
//! answers in braces, a judgment as a verdict, scores; and which answers a judgment may give.

use serde::Deserialize;

/// The judgment's answer when the shown knowledge does not lead to one.
pub(crate) const UNKNOWN: &str = "unknown";

/// Text safe inside the parsers' formats: no braces, brackets or newlines of its own. A
/// placeholder copied from the shape line (`<answer>`) is no text at all.
pub(crate) fn clean(text: &str) -> String {
    let t = text.trim();
    if t.starts_with('<') && t.ends_with('>') {
        return String::new();
    }
    t.replace(['{', '['], "(").replace(['}', ']'], ")").replace(['\n', '\r', '\t'], " ").trim().to_string()
}

/// Whether an answer the model listed reads as a name or value ("Washington, D.C.", "1956"),
/// not a sentence ("The party in Canberra is the ALP.").
fn is_name_like(answer: &str) -> bool {
    let words = answer.split_whitespace().count();
    words > 0 && words <= 8 && answer.chars().count() <= 80 && !(words > 4 && answer.ends_with(['.', '?', '!']))
}

/// One answer as [`braced_answers`] writes it.
fn as_braced(answer: &str) -> String {
    clean(answer).replace(" | ", " / ")
}

/// A list of answers as the parsers read it: `{A | B}`. A sentence in the list is not an answer
/// (small models put their prose there).
pub(crate) fn braced_answers(answers: &[String]) -> String {
    let kept: Vec<String> = answers.iter().map(|a| as_braced(a)).filter(|a| is_name_like(a)).collect();
    if kept.is_empty() { String::new() } else { format!("{{{}}}", kept.join(" | ")) }
}

/// One answer or several (models constrained only loosely write either).
#[derive(Deserialize)]
#[serde(untagged)]
pub(crate) enum AnswerList {
    One(String),
    Many(Vec<String>),
}

impl AnswerList {
    pub(crate) fn into_vec(self) -> Vec<String> {
        match self {
            AnswerList::One(a) => vec![a],
            AnswerList::Many(v) => v,
        }
    }
}

/// A judgment read back as a verdict: `{Yes}` with the answers that are among `options` (what
/// the shown triples reach), else `{No}`. An answer the model named outside them is not taken,
/// and said.
pub(crate) fn judgment_text(options: &[String], reason: &str, answers: Vec<String>, notes: &mut Vec<String>) -> String {
    let taken = reachable_answers(options, &answers, notes);
    // Options, not prose: a long name is still a name.
    let forms = written_forms(options);
    let written = |a: &String| options.iter().position(|o| o == a).map_or_else(|| as_braced(a), |i| forms[i].clone());
    let answer = if taken.is_empty() {
        String::new()
    } else {
        format!("{{{}}}", taken.iter().map(written).collect::<Vec<_>>().join(" | "))
    };
    let mut text = if answer.is_empty() { "{No}".to_string() } else { format!("{{Yes}}\nanswer: {answer}") };
    if !reason.trim().is_empty() {
        text.push_str(&format!("\nreason: {}", clean(reason)));
    }
    text
}

/// How each option is written in a judgment's brace text, one form per option and no two
/// alike: [`as_braced`] of it, numbered like the enum forms when another option already has
/// that form or is named so (`Line\nBreak` beside `Line Break` is `Line Break (2)`). Options
/// written as they are named keep their form first.
fn written_forms(options: &[String]) -> Vec<String> {
    let braced: Vec<String> = options.iter().map(|o| as_braced(o)).collect();
    let mut forms: Vec<Option<String>> = vec![None; options.len()];
    let plain_first = (0..options.len()).filter(|&i| braced[i] == options[i].trim());
    let changed = (0..options.len()).filter(|&i| braced[i] != options[i].trim());
    for i in plain_first.chain(changed) {
        let taken = |form: &str| {
            forms.iter().flatten().any(|f| f == form) || options.iter().any(|o| o.trim() == form && *o != options[i])
        };
        let (base, mut form, mut k) = (&braced[i], braced[i].clone(), 1);
        while taken(&form) {
            k += 1;
            form = format!("{base} ({k})");
        }
        forms[i] = Some(form);
    }
    forms.into_iter().map(Option::unwrap_or_default).collect()
}

/// The answers among `options`, each written as the option is (an exact match first, then one
/// that differs only in case: two entities may differ only in case); `unknown` and empty
/// answers are dropped, and an answer outside the options is noted, not taken. The engine
/// applies it to every judgment reply, however it was read: a server that does not enforce
/// the schema must not make an answer the triples do not reach sufficient.
pub(crate) fn reachable_answers(options: &[String], answers: &[String], notes: &mut Vec<String>) -> Vec<String> {
    let mut taken: Vec<String> = Vec::new();
    let forms = std::cell::OnceCell::new();
    for answer in answers {
        let answer = answer.trim();
        if clean(answer).is_empty() || answer.eq_ignore_ascii_case(UNKNOWN) {
            continue;
        }
        // Then as the brace text wrote it: a name with braces, a line break or ` | ` reaches
        // the parser changed (`Brace {d}` as `Brace (d)`), and is still that name.
        let written = |same: &dyn Fn(&str, &str) -> bool| {
            options.iter().find(|o| same(o.trim(), answer)).or_else(|| {
                forms.get_or_init(|| written_forms(options)).iter().position(|f| same(f, answer)).map(|i| &options[i])
            })
        };
        let option = written(&|a, b| a == b)
            .or_else(|| written(&|a, b| a.eq_ignore_ascii_case(b)))
            .or_else(|| options.iter().find(|o| as_braced(o).eq_ignore_ascii_case(&as_braced(answer))));
        match option {
            Some(option) if !taken.contains(option) => taken.push(option.clone()),
            Some(_) => {}
            None => notes.push(format!(
                "the model answered \"{}\", which the shown triples do not reach: not taken",
                clean(answer).chars().take(80).collect::<String>()
            )),
        }
    }
    taken
}

/// A score as the parsers read it (finite, not negative).
pub(crate) fn score(s: f64) -> String {
    let s = if s.is_finite() { s.max(0.0) } else { 0.0 };
    format!("{s}")
}
