//! What every method's steps share: reading the results of a batch back (each in the position
//! its request had) and recording the LLM calls a step made.

use super::events::{CallRecord, Event, ReadAs};
use super::{AnswerSource, EngineError, Request, Response};
use crate::kg::{EntityMatch, Neighbour, RelationRef};
use crate::llm::Completion;

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
        read: if c.json_reply.is_some() { ReadAs::Json } else { ReadAs::Text },
        fell_back: false,
    }
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
pub(super) fn read_structured(requests: &[Request], responses: &mut [Response]) -> Vec<String> {
    let mut notes = Vec::new();
    for (request, response) in requests.iter().zip(responses.iter_mut()) {
        let (Request::Llm(r), Response::Llm { completion }) = (request, response) else { continue };
        notes.extend(completion.notes.iter().cloned());
        let Some(schema) = &r.schema else { continue };
        match super::structured::read(schema, &completion.text) {
            Some(reading) => {
                notes.extend(reading.note);
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
/// Returns the answers and the reply.
pub(super) fn answer_call(
    requests: &[Request],
    responses: &[Response],
    ev: &mut Event,
    source: AnswerSource,
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
    ev.summary = format!("answer {} ({})", answers.join(", "), source.describe());
    Ok((answers, c.text.clone()))
}

/// `; note; note` for the notes an override's work left on a scratch event (an override is
/// recorded as its description only).
pub(super) fn with_notes(ev: &Event) -> String {
    ev.notes.iter().map(|n| format!("; {n}")).collect()
}
