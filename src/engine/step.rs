//! What every method's steps share: reading the results of a batch back (each in the position
//! its request had) and recording the LLM calls a step made.

use super::beam::{Beam, NodeId, Status};
use super::events::{CallRecord, Event, ReadAs};
use super::structured::{ReplyShape, judgment_options, reachable_answers};
use super::{AnswerSource, Context, EngineError, Request, Response};
use crate::kg::{EntityMatch, Neighbour, RelationRef};
use crate::llm::Completion;

impl CallRecord {
    /// The record of `request` answered by `completion`, whose reply the step read as `parsed`.
    // Here rather than in events.rs: the trace's types import no step.
    pub fn of(request: &Request, completion: &Completion, parsed: String) -> Self {
        record(request, completion, parsed)
    }
}

/// Why a change between steps is refused once the run has answered (only forcing it to go on
/// can reopen it, where the method allows).
pub(super) const ANSWERED: &str = "the run has already answered; go back to an earlier step to change how it got there";

pub(super) fn record(request: &Request, c: &Completion, parsed: String) -> CallRecord {
    let (step, prompt, temperature) = match request {
        Request::Llm(r) => (r.step.clone(), r.prompt.clone(), r.temperature),
        _ => (String::new(), String::new(), 0.0),
    };
    CallRecord {
        step,
        prompt,
        reply: c.json_reply.clone().unwrap_or_else(|| c.text.clone()),
        reasoning: c.reasoning.clone(),
        parsed,
        usage: c.usage,
        latency_ms: c.latency_ms,
        cached: c.cached,
        temperature,
        mode: c.mode,
        read: match (c.json_reply.is_some(), c.extracted) {
            (true, true) => ReadAs::Extracted,
            (true, false) => ReadAs::Json,
            (false, _) => ReadAs::Text,
        },
        fell_back: false,
    }
}

/// A sufficiency check's verdict (`yes`, `answers`, as read) taken through the request's
/// judgment, when it asked for one: sufficient only by an answer among what it offered (what
/// `reached`, the shown triples or paths, reach), however the reply was read. Returns the
/// verdict, its answers and what the trace shows as parsed.
pub(super) fn judged(
    request: &Request,
    yes: bool,
    answers: Vec<String>,
    reached: &str,
    notes: &mut Vec<String>,
) -> (bool, Vec<String>, String) {
    let options = match request {
        Request::Llm(r) => judgment_options(r.schema.as_ref()),
        _ => None,
    };
    let Some(options) = options else {
        return (yes, answers, if yes { "Yes" } else { "No" }.to_string());
    };
    let answers = reachable_answers(options, &answers, notes);
    if yes && answers.is_empty() {
        notes.push(format!("the reply names no answer {reached} reach: taken as No"));
    }
    if answers.is_empty() {
        return (false, answers, format!("No: no answer {reached} reach"));
    }
    let parsed = if yes { format!("Yes: answered {}", answers.join(" | ")) } else { "No".to_string() };
    (yes, answers, parsed)
}

/// Marks the call just recorded on `ev` as one whose reply could not be read (the step fell
/// back; its note says how).
pub(super) fn unreadable(ev: &mut Event) {
    if let Some(call) = ev.calls.last_mut() {
        call.fell_back = true;
    }
}

/// Reads every structured reply of a batch back into the text its step's parser reads (the
/// model's JSON stays in [`Completion::json_reply`]); returns the notes for the step's event.
pub(super) fn read_structured(requests: &[Request], responses: &mut [Response], shapes: &[ReplyShape]) -> Vec<String> {
    let mut notes = Vec::new();
    for (request, response) in requests.iter().zip(responses.iter_mut()) {
        let (Request::Llm(r), Response::Llm { completion }) = (request, response) else { continue };
        notes.extend(completion.notes.iter().cloned());
        // A reason-first reply is JSON only when its answer had to be extracted.
        let extracted = r.extract.as_ref().filter(|_| completion.extracted).map(|e| &e.schema);
        let Some(schema) = r.schema.as_ref().or(extracted) else { continue };
        match super::structured::read(schema, &completion.text, shapes) {
            Some(reading) => {
                notes.extend(reading.notes);
                completion.json_reply = Some(std::mem::replace(&mut completion.text, reading.text));
            }
            None if !completion.text.trim().is_empty() => notes.push(format!(
                "the {} reply is not JSON of its shape ({}); read as free text",
                r.step,
                if completion.mode.is_free_text() { "the endpoint took no schema" } else { "asked as JSON" }
            )),
            None => {}
        }
    }
    notes
}

pub(super) fn wrong(index: usize, expected: &'static str, got: Option<&Response>) -> EngineError {
    EngineError::WrongResponse {
        index,
        expected,
        got: got.map(|r| format!("{r:?}").chars().take(40).collect()).unwrap_or_else(|| "missing result".into()),
    }
}

pub(super) fn completion(responses: &[Response], i: usize) -> Result<&Completion, EngineError> {
    match responses.get(i) {
        Some(Response::Llm { completion }) => Ok(completion),
        other => Err(wrong(i, "completion", other)),
    }
}

pub(super) fn relations(responses: &[Response], i: usize) -> Result<Vec<RelationRef>, EngineError> {
    match responses.get(i) {
        Some(Response::Relations { relations }) => Ok(relations.clone()),
        other => Err(wrong(i, "relation list", other)),
    }
}

pub(super) fn neighbours(responses: &[Response], i: usize) -> Result<Vec<Neighbour>, EngineError> {
    match responses.get(i) {
        Some(Response::Neighbours { neighbours }) => Ok(neighbours.clone()),
        other => Err(wrong(i, "neighbour list", other)),
    }
}

pub(super) fn plural_s(n: usize) -> &'static str {
    if n == 1 { "" } else { "s" }
}
pub(super) fn plural_y(n: usize) -> &'static str {
    if n == 1 { "y" } else { "ies" }
}

pub(super) fn entity_matches(responses: &[Response], i: usize) -> Result<Vec<EntityMatch>, EngineError> {
    match responses.get(i) {
        Some(Response::Entities { matches }) => Ok(matches.clone()),
        other => Err(wrong(i, "entity matches", other)),
    }
}

/// `k` distinct indices of `0..n`, uniformly, in ascending order.
pub(super) fn sample_indices(rng: &mut impl rand::Rng, n: usize, k: usize) -> Vec<usize> {
    let mut picked = rand::seq::index::sample(rng, n, k.min(n)).into_vec();
    picked.sort_unstable();
    picked
}

/// The final-answer call of a graph method, read and recorded on `ev` with its summary:
/// the answers in braces, else the reply's first non-empty line (and a note saying so).
/// `why`: why the answer comes from `source` ([`super::Answer::why`]). Returns the answers and
/// the reply.
pub(super) fn answer_call(
    requests: &[Request],
    responses: &[Response],
    ev: &mut Event,
    source: AnswerSource,
    why: Option<&str>,
) -> Result<(Vec<String>, String), EngineError> {
    let c = completion(responses, 0)?;
    let answers = super::parse::parse_answers(&c.text).unwrap_or_else(|| {
        // A bare name is an answer; prose or a fragment of JSON is not, whatever the source.
        let first = c.text.lines().map(str::trim).find(|l| !l.is_empty()).unwrap_or_default();
        if super::parse::is_bare_answer(first) {
            ev.notes.push("no answer in braces; the reply's one-line name is taken".into());
            vec![first.to_string()]
        } else {
            ev.notes.push("the reply is unreadable as an answer (no {…}, no \"the answer is\"): none taken".into());
            Vec::new()
        }
    });
    ev.calls.push(record(&requests[0], c, answers.join("; ")));
    if answers.is_empty() {
        unreadable(ev);
        if ev.notes.is_empty() {
            ev.notes.push("the reply's braces hold no answer: none taken".into());
        }
    }
    ev.summary = format!("answer {} ({})", answers.join(", "), source.describe_because(why));
    Ok((answers, c.text.clone()))
}

/// The phase of the last step taken (overrides and rewinds are not steps).
pub(super) fn last_step(cx: &Context) -> Option<&str> {
    cx.trace.iter().rev().find_map(|e| e.phase())
}

/// `; note; note` for the notes an override's work left on a scratch event (an override is
/// recorded as its description only).
pub(super) fn with_notes(ev: &Event) -> String {
    ev.notes.iter().map(|n| format!("; {n}")).collect()
}

/// What pruning the path at a node unpins: the node itself, or pins below it.
pub(super) enum Unpinning {
    Nothing,
    Itself,
    Below(Vec<String>),
}

impl Unpinning {
    /// `pruned <path>`, saying what it unpins.
    pub(super) fn pruned(self, path: &str) -> String {
        match self {
            Unpinning::Nothing => format!("pruned {path}"),
            Unpinning::Itself => format!("unpinned and pruned {path}"),
            Unpinning::Below(names) => format!("pruned {path}, unpinning {}", names.join(", ")),
        }
    }
}

/// What pruning the path at `node` (and all below it) unpins.
pub(super) fn unpinning(beam: &Beam, node: NodeId) -> Unpinning {
    if beam.get(node).is_some_and(|n| n.status == Status::PinnedByUser) {
        return Unpinning::Itself;
    }
    let mut below = Vec::new();
    // Depth first, in the tree's order.
    let mut stack: Vec<NodeId> = beam.get(node).map(|n| n.children.iter().rev().copied().collect()).unwrap_or_default();
    while let Some(n) = stack.pop() {
        let Some(child) = beam.get(n) else { continue };
        if child.status == Status::PinnedByUser {
            below.push(child.shown().to_string());
        }
        stack.extend(child.children.iter().rev().copied());
    }
    if below.is_empty() { Unpinning::Nothing } else { Unpinning::Below(below) }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::engine::beam::{NodeKind, Provenance};
    use crate::kg::{Direction, Term};

    /// Pruning a path says what it unpins: the node itself, or the pins below it.
    #[test]
    fn pruning_a_path_says_what_it_unpins() {
        let mut beam = Beam::default();
        let entity = |name: &str| NodeKind::Entity { term: Term::Entity(name.into()), label: Some(name.into()) };
        let root = beam.add(None, entity("Canberra"), Provenance::User);
        let relation = NodeKind::Relation {
            relation: "location.location.containedby".into(),
            direction: Direction::Out,
            shown: "location.location.containedby".into(),
        };
        let rel = beam.add(Some(root), relation, Provenance::User);
        let act = beam.add(Some(rel), entity("Australian Capital Territory"), Provenance::User);
        let australia = beam.add(Some(rel), entity("Australia"), Provenance::User);
        for n in [root, rel, act, australia] {
            beam.set_status(n, Status::Kept, None, 1);
        }
        assert_eq!(unpinning(&beam, rel).pruned("X"), "pruned X");
        beam.set_status(australia, Status::PinnedByUser, None, 2);
        beam.set_status(act, Status::PinnedByUser, None, 2);
        assert_eq!(unpinning(&beam, rel).pruned("X"), "pruned X, unpinning Australian Capital Territory, Australia");
        assert_eq!(unpinning(&beam, australia).pruned("Y"), "unpinned and pruned Y");
    }
}
