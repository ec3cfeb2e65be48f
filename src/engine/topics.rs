//! Finding the topic entities, the first steps of every graph method: the model names them (when
//! the caller did not), then each name is linked to a KG entity by label. Linked entities become
//! the roots of the beam.

use super::beam::{NodeKind, Provenance, Status};
use super::events::{Event, LookupRecord};
use super::step::{completion, entity_matches, plural_y, record};
use super::{Context, EngineError, Request, Response, Topics, parse};
use crate::kg::{EntityMatch, Term};

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
    Done,
}

#[derive(Clone, Debug)]
pub(super) struct TopicLinker {
    stage: Stage,
    /// Names to link to KG entities, and whether a fuzzy match is acceptable (model-extracted
    /// names) or only an exact one (names the user typed).
    names: Vec<String>,
    fuzzy_ok: bool,
}

impl TopicLinker {
    /// Already-linked topics become beam roots at once.
    pub fn new(cx: &mut Context, topics: Topics) -> Result<Self, EngineError> {
        let mut linker = Self { stage: Stage::Link, names: Vec::new(), fuzzy_ok: false };
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
            Stage::Link | Stage::Done => "topic_linking",
        }
    }

    pub fn requests(&self, cx: &Context) -> Vec<Request> {
        match self.stage {
            Stage::Extract => {
                let prompt = cx.prompts.render("topic_entities", &[("question", &cx.question)]);
                vec![cx.llm("topic_entities", prompt, cx.settings.reason_temperature)]
            }
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
                let names = parse::parse_names(&c.text);
                ev.calls.push(record(&requests[0], c, names.join("; ")));
                if names.is_empty() {
                    return Err(EngineError::NoTopic);
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
            Stage::Done => Err(EngineError::Finished),
        }
    }

    fn absorb_links(&mut self, cx: &mut Context, responses: &[Response], ev: &mut Event) -> Result<(), EngineError> {
        let mut linked = Vec::new();
        for (i, name) in self.names.iter().enumerate() {
            let mut matches: Vec<EntityMatch> = entity_matches(responses, i)?;
            ev.lookups.push(LookupRecord { what: format!("entities named {name:?}"), results: matches.len() });
            sort_matches(name, &mut matches);
            let chosen = match matches.first() {
                Some(m) if m.exact || (self.fuzzy_ok && m.score >= FUZZY_LINK_MIN) => m.clone(),
                _ => {
                    return Err(EngineError::UnknownTopic {
                        name: name.clone(),
                        suggestions: matches.iter().map(|m| m.label.clone()).collect(),
                    });
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
        if linked.is_empty() {
            return Err(EngineError::NoTopic);
        }
        ev.summary = format!("topic entit{}: {}", plural_y(linked.len()), linked.join(", "));
        self.stage = Stage::Done;
        Ok(())
    }
}
