//! Finding the topic entities, the first steps of every graph method: the model names them (when
//! the caller did not), then each name is linked to a KG entity by label. Linked entities become
//! the roots of the beam. When none of the model's names links (small models echo an exemplar or
//! name nothing), KG labels that occur in the question are tried, longest spans first, exact
//! matches before close ones, and the run says so.

use super::beam::{NodeKind, Provenance, Status};
use super::events::{Event, LookupRecord};
use super::step::{completion, entity_matches, plural_y, record, unreadable};
use super::structured::TOPICS;
use super::{Context, EngineError, Request, Response, Topics, parse};
use crate::kg::{EntityMatch, Term};

/// The most topic-entity names taken from one reply.
const MAX_TOPIC_NAMES: usize = 8;

/// Best first: exact matches, and among them the id written verbatim, then the label written
/// with the same case (`Believe` before `BELIEVE` when both read "believe"); then by
/// similarity, then by id, so the same graph always gives the same choice.
fn sort_matches(name: &str, matches: &mut [EntityMatch]) {
    let name = name.trim();
    let closeness = |m: &EntityMatch| u8::from(m.id != name) + u8::from(m.label != name);
    matches.sort_by(|a, b| {
        b.exact
            .cmp(&a.exact)
            .then(closeness(a).cmp(&closeness(b)))
            .then(b.score.total_cmp(&a.score))
            .then(a.id.cmp(&b.id))
    });
}

/// The entity a name the model wrote links to: an exact label match, else the closest fuzzy one
/// at [`FUZZY_LINK_MIN`] or more.
pub(super) fn link_model_name(name: &str, mut matches: Vec<EntityMatch>) -> Option<EntityMatch> {
    sort_matches(name, &mut matches);
    matches.into_iter().next().filter(|m| m.exact || m.score >= FUZZY_LINK_MIN)
}

/// The least similarity at which a name the model extracted is linked to a KG label that is
/// not an exact match (names the user typed must match exactly).
pub(super) const FUZZY_LINK_MIN: f64 = 0.85;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Stage {
    Extract,
    Link,
    /// The model's names did not link: spans of the question are looked up instead.
    Spans,
    Done,
}

/// The most question spans looked up when the model's names do not link.
const MAX_SPANS: usize = 24;
/// The longest span tried, in words.
const MAX_SPAN_WORDS: usize = 5;

const SPAN_STOPWORDS: &[&str] = &[
    "a", "an", "the", "of", "in", "on", "at", "to", "is", "are", "was", "were", "be", "by", "for", "and", "or", "what",
    "which", "who", "whom", "whose", "where", "when", "how", "does", "do", "did", "that", "this", "with", "as", "it",
    "its", "from", "s", "'s", "now", "team", "country",
];

/// Word spans of the question that could be an entity's label, longest first (then in order):
/// surrounding punctuation trimmed (an abbreviation's full stop kept), none starting or ending
/// with a common word.
fn question_spans(question: &str) -> Vec<String> {
    let words: Vec<&str> = question
        .split_whitespace()
        .map(|w| w.trim_matches(|c: char| matches!(c, '?' | '!' | ',' | ';' | ':' | '"' | '(' | ')')))
        .map(|w| w.strip_suffix("'s").unwrap_or(w))
        .filter(|w| !w.is_empty())
        .collect();
    let common = |w: &str| SPAN_STOPWORDS.contains(&w.to_lowercase().trim_end_matches('.'));
    let mut spans: Vec<String> = Vec::new();
    for len in (1..=MAX_SPAN_WORDS.min(words.len())).rev() {
        for window in words.windows(len) {
            if common(window[0]) || common(window[len - 1]) {
                continue;
            }
            let span = window.join(" ");
            // "Inc.?" was trimmed to "Inc."; a sentence's last full stop is not part of a name.
            let span = if len == 1 { span.trim_end_matches('.').to_string() } else { span };
            if !spans.contains(&span) {
                spans.push(span);
            }
        }
    }
    spans.truncate(MAX_SPANS);
    spans
}

/// The first steps of a graph method: the topic entities named, linked and made the beam's
/// roots. A method asks its [`requests`](Self::requests) and hands the responses to
/// [`absorb`](Self::absorb) until it is [`done`](Self::done); the roots are then
/// [`Beam::roots`](super::beam::Beam::roots).
#[derive(Clone, Debug)]
pub struct TopicLinker {
    stage: Stage,
    /// Names to link to KG entities, and whether a fuzzy match is acceptable (model-extracted
    /// names) or only an exact one (names the user typed).
    names: Vec<String>,
    fuzzy_ok: bool,
    /// The question spans looked up when the model's names did not link, longest first.
    spans: Vec<String>,
    /// The closest labels to the model's names, for the error if the spans find nothing either.
    suggestions: Vec<String>,
}

impl TopicLinker {
    /// Already-linked topics become beam roots at once.
    pub fn new(cx: &mut Context, topics: Topics) -> Result<Self, EngineError> {
        let mut linker =
            Self { stage: Stage::Link, names: Vec::new(), fuzzy_ok: false, spans: Vec::new(), suggestions: Vec::new() };
        match topics {
            Topics::Named(names) => {
                linker.names = names.into_iter().map(|n| n.trim().to_string()).filter(|n| !n.is_empty()).collect();
                if linker.names.is_empty() {
                    return Err(EngineError::NoTopic);
                }
            }
            Topics::Linked(ids) => {
                if ids.is_empty() {
                    return Err(EngineError::NoTopic);
                }
                for (id, label) in ids {
                    let node = cx.beam.add(None, NodeKind::Entity { term: Term::Entity(id), label }, Provenance::User);
                    cx.beam.set_status(node, Status::Kept, Some("topic entity"), 0);
                }
                linker.stage = Stage::Done;
            }
            Topics::Extract => {
                linker.stage = Stage::Extract;
                linker.fuzzy_ok = true;
            }
        }
        Ok(linker)
    }

    pub fn done(&self) -> bool {
        self.stage == Stage::Done
    }

    pub fn phase_name(&self) -> &'static str {
        match self.stage {
            Stage::Extract => "topic_extraction",
            Stage::Link | Stage::Spans | Stage::Done => "topic_linking",
        }
    }

    pub fn requests(&self, cx: &Context) -> Vec<Request> {
        match self.stage {
            Stage::Extract => {
                let prompt = cx.render(super::templates::TOPIC_ENTITIES, &[("question", &cx.question)]);
                vec![cx.llm("topic_entities", prompt, cx.settings.reason_temperature, &TOPICS)]
            }
            Stage::Spans => self.spans.iter().map(|s| Request::FindEntities { name: s.clone(), limit: 3 }).collect(),
            Stage::Link => {
                self.names.iter().map(|name| Request::FindEntities { name: name.clone(), limit: 5 }).collect()
            }
            Stage::Done => Vec::new(),
        }
    }

    pub fn absorb(
        &mut self,
        cx: &mut Context,
        requests: &[Request],
        responses: &[Response],
        ev: &mut Event,
    ) -> Result<(), EngineError> {
        match self.stage {
            Stage::Extract => {
                let c = completion(responses, 0)?;
                let mut names = parse::parse_names(&c.text);
                if names.len() > MAX_TOPIC_NAMES {
                    // One lookup per name: a reply listing thousands must not send thousands.
                    ev.notes.push(format!(
                        "the model named {} topic entities; the first {MAX_TOPIC_NAMES} are looked up",
                        names.len()
                    ));
                    names.truncate(MAX_TOPIC_NAMES);
                }
                ev.calls.push(record(&requests[0], c, names.join("; ")));
                if names.is_empty() {
                    unreadable(ev);
                    ev.notes.push("the model named no topic entity; looking for KG labels in the question".into());
                    return self.look_in_question(cx, ev);
                }
                // A name the question does not mention but the prompt's examples do is the
                // example echoed (small models do it: "Sydney Opera House" whatever the
                // question), and would root the search somewhere else entirely: set aside. A
                // name the question words otherwise (an accent, "French" for France) is linked
                // as usual.
                let examples = match &requests[0] {
                    Request::Llm(chat) => words(&chat.prompt.replace(&cx.question, "")).join(" "),
                    _ => String::new(),
                };
                let (echoed, names): (Vec<String>, Vec<String>) = names.into_iter().partition(|n| {
                    let name = words(n).join(" ");
                    !name.is_empty() && !mentioned_in(&cx.question, n) && contains_words(&examples, &name)
                });
                if !echoed.is_empty() {
                    ev.notes.push(format!(
                        "set aside what the model named from the prompt's examples, not the question: {}",
                        echoed.join(", ")
                    ));
                }
                if names.is_empty() {
                    ev.notes.push("looking for KG labels in the question instead".into());
                    return self.look_in_question(cx, ev);
                }
                ev.summary = format!(
                    "the model named {} topic entit{}: {}",
                    names.len(),
                    plural_y(names.len()),
                    names.join(", ")
                );
                self.names = names;
                self.stage = Stage::Link;
                Ok(())
            }
            Stage::Link => self.absorb_links(cx, responses, ev),
            Stage::Spans => self.absorb_spans(cx, responses, ev),
            Stage::Done => Err(EngineError::Finished),
        }
    }

    /// Looks for KG labels among the question's spans next.
    fn look_in_question(&mut self, cx: &Context, ev: &mut Event) -> Result<(), EngineError> {
        self.spans = question_spans(&cx.question);
        if self.spans.is_empty() {
            return Err(EngineError::NoTopic);
        }
        ev.summary = format!("no topic entity linked; trying {} spans of the question", self.spans.len());
        self.stage = Stage::Spans;
        Ok(())
    }

    fn absorb_links(&mut self, cx: &mut Context, responses: &[Response], ev: &mut Event) -> Result<(), EngineError> {
        let mut linked = Vec::new();
        let mut unlinked: Vec<(String, Vec<String>)> = Vec::new();
        for (i, name) in self.names.iter().enumerate() {
            let mut matches: Vec<EntityMatch> = entity_matches(responses, i)?;
            ev.lookups.push(LookupRecord { what: format!("entities named {name:?}"), results: matches.len() });
            sort_matches(name, &mut matches);
            let chosen = match matches.first() {
                Some(m) if m.exact || (self.fuzzy_ok && m.score >= FUZZY_LINK_MIN) => m.clone(),
                _ => {
                    let suggestions: Vec<String> = matches.iter().map(|m| m.label.clone()).collect();
                    if !self.fuzzy_ok {
                        // A name the user typed must link as typed.
                        return Err(EngineError::UnknownTopic { name: name.clone(), suggestions });
                    }
                    unlinked.push((name.clone(), suggestions));
                    continue;
                }
            };
            let rivals: Vec<String> = matches
                .iter()
                .skip(1)
                .filter(|m| m.exact == chosen.exact)
                .map(|m| format!("{} ({})", m.label, m.id))
                .collect();
            if !rivals.is_empty() {
                ev.notes.push(format!(
                    "{name:?} is ambiguous; chose {} ({}) over {}",
                    chosen.label,
                    chosen.id,
                    rivals.join(", ")
                ));
            }
            if !chosen.exact {
                ev.notes.push(format!("{name:?} linked by fuzzy match to {} ({})", chosen.label, chosen.id));
            }
            if cx.beam.roots().any(|r| r.term().is_some_and(|t| t.as_str() == chosen.id)) {
                continue;
            }
            let provenance = if self.fuzzy_ok { Provenance::Linked { name: name.clone() } } else { Provenance::User };
            let node = cx.beam.add(
                None,
                NodeKind::Entity { term: Term::Entity(chosen.id.clone()), label: Some(chosen.label.clone()) },
                provenance,
            );
            cx.beam.set_status(node, Status::Kept, Some("topic entity"), ev.index);
            linked.push(format!("{} ({})", chosen.label, chosen.id));
        }
        for (name, _) in &unlinked {
            ev.notes.push(format!("the model's {name:?} matches no KG label"));
        }
        if linked.is_empty() && cx.beam.roots().next().is_none() {
            let (names, suggestions): (Vec<String>, Vec<Vec<String>>) = unlinked.into_iter().unzip();
            self.names = names;
            self.suggestions = suggestions.into_iter().flatten().collect();
            ev.notes.push("looking for KG labels in the question instead".into());
            return self.look_in_question(cx, ev);
        }
        if linked.is_empty() {
            return Err(EngineError::NoTopic);
        }
        ev.summary = format!("topic entit{}: {}", plural_y(linked.len()), linked.join(", "));
        self.stage = Stage::Done;
        Ok(())
    }

    /// Links the question's spans that are KG labels: every exact one that overlaps no longer
    /// one (at most 3), else the closest fuzzy match; none, and the run cannot start.
    fn absorb_spans(&mut self, cx: &mut Context, responses: &[Response], ev: &mut Event) -> Result<(), EngineError> {
        let mut exact: Vec<(String, EntityMatch)> = Vec::new();
        let mut close: Option<(String, EntityMatch)> = None;
        for (i, span) in self.spans.iter().enumerate() {
            let mut matches: Vec<EntityMatch> = entity_matches(responses, i)?;
            ev.lookups.push(LookupRecord { what: format!("entities named {span:?}"), results: matches.len() });
            sort_matches(span, &mut matches);
            let Some(best) = matches.into_iter().next() else { continue };
            let inside_longer = exact.iter().any(|(longer, _)| contains_words(longer, span));
            if best.exact && !inside_longer && exact.len() < 3 && !exact.iter().any(|(_, m)| m.id == best.id) {
                exact.push((span.clone(), best));
            } else if !best.exact
                && best.score >= FUZZY_LINK_MIN
                && close.as_ref().is_none_or(|(_, m)| best.score > m.score)
            {
                close = Some((span.clone(), best));
            }
        }
        let chosen: Vec<(String, EntityMatch)> = if exact.is_empty() { close.into_iter().collect() } else { exact };
        if chosen.is_empty() {
            let name = if self.names.is_empty() { "(none named)".to_string() } else { self.names.join(", ") };
            return Err(EngineError::UnknownTopic { name, suggestions: std::mem::take(&mut self.suggestions) });
        }
        let mut linked = Vec::new();
        for (span, m) in chosen {
            let node = cx.beam.add(
                None,
                NodeKind::Entity { term: Term::Entity(m.id.clone()), label: Some(m.label.clone()) },
                Provenance::InQuestion { span: span.clone() },
            );
            cx.beam.set_status(node, Status::Kept, Some("topic entity (a KG label in the question)"), ev.index);
            let how = if m.exact { "exact" } else { "close" };
            ev.notes.push(format!("{span:?} in the question is a KG label ({how}): {} ({})", m.label, m.id));
            linked.push(format!("{} ({})", m.label, m.id));
        }
        ev.summary = format!("topic entit{} from the question: {}", plural_y(linked.len()), linked.join(", "));
        self.stage = Stage::Done;
        Ok(())
    }
}

/// The lowercase words of `text`, apostrophes and punctuation as spaces ("Canberra's" gives
/// "canberra" and "s").
fn words(text: &str) -> Vec<String> {
    text.to_lowercase().split(|c: char| !c.is_alphanumeric()).filter(|w| !w.is_empty()).map(str::to_string).collect()
}

/// Whether `question` mentions `name`: written in it as it is (a script without spaces,
/// "北京" in "北京是哪个国家的首都？"), or a word of the name other than a common one ("the",
/// "of", …) is a word of the question.
fn mentioned_in(question: &str, name: &str) -> bool {
    let name_lower = name.trim().to_lowercase();
    if !name_lower.is_empty() && question.to_lowercase().contains(&name_lower) && !words(name).is_empty() {
        return true;
    }
    let asked = words(question);
    words(name).iter().any(|w| !SPAN_STOPWORDS.contains(&w.as_str()) && asked.contains(w))
}

/// Whether `longer`'s words contain `shorter`'s as a run ("Apple Inc." contains "Apple").
fn contains_words(longer: &str, shorter: &str) -> bool {
    let (l, s): (Vec<&str>, Vec<&str>) = (longer.split(' ').collect(), shorter.split(' ').collect());
    s.len() <= l.len() && l.windows(s.len()).any(|w| w == s.as_slice())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_name_is_mentioned_when_the_question_has_one_of_its_own_words() {
        let q = "What is the majority party now in the country where Canberra is located?";
        assert!(mentioned_in(q, "Canberra"));
        assert!(mentioned_in(q, "canberra, australia"), "a word is enough: the model may add some");
        assert!(mentioned_in("Who is Canberra's mayor?", "Canberra"), "the possessive is not part of the word");
        assert!(!mentioned_in(q, "Sydney Opera House"), "the prompt's example, echoed");
        assert!(mentioned_in("北京是哪个国家的首都？", "北京"), "a script without spaces: written in it");
        assert!(!mentioned_in(q, "?"), "punctuation is no name");
        assert!(!mentioned_in(q, ""));
    }

    #[test]
    fn question_spans_are_longest_first_without_common_edges() {
        let spans = question_spans("In which time zone is the headquarters of Apple Inc.?");
        assert_eq!(spans[0], "time zone is the headquarters");
        assert!(spans.contains(&"Apple Inc.".to_string()) && spans.contains(&"Apple".to_string()), "{spans:?}");
        assert!(!spans.iter().any(|s| s.starts_with("the ") || s.ends_with(" of")), "{spans:?}");
        assert!(
            question_spans("What is mascot Phillie Phanatic's team's spring training stadium?")
                .contains(&"Phillie Phanatic".to_string())
        );
        assert!(question_spans("? the of").is_empty());
        assert!(contains_words("Apple Inc.", "Apple") && !contains_words("Apple Inc.", "Inc"));
    }
}
