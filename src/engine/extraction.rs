//! Reason first, then format: a free reply the step cannot read as it is has its answer
//! extracted by a second, structured call. The run asks for those calls as a batch of their
//! own ([`Request::Extraction`]) and feeds the method once they are back, so the driver only
//! performs I/O and a session records (and replays) both batches.

use super::structured::{GENERIC, Reasons, ReplyShape};
use super::{EngineError, Pending, Request, Response, parse, step};
use crate::llm::ChatRequest;
use std::time::Duration;

/// A method's batch whose free replies wait for their extraction calls.
pub(super) struct Extracting {
    /// The method's batch, as it was handed out.
    pub(super) batch: Pending,
    /// Its results, the free replies as they came.
    pub(super) responses: Vec<Response>,
    /// The extraction calls asked for: the position of the reply each reads, and the call.
    pub(super) calls: Vec<(usize, Request)>,
    /// How long the method's batch took (the step's time is both batches').
    pub(super) elapsed: Duration,
}

impl Extracting {
    /// The extraction batch, in order.
    pub(super) fn requests(&self) -> Vec<Request> {
        self.calls.iter().map(|(_, r)| r.clone()).collect()
    }

    /// The method's results with each extracted reply read in: the extraction's reply after
    /// its free reply, or the free reply as it is (with a note) when the extraction call failed.
    pub(super) fn merged(&self, extracted: &[Response]) -> Result<Vec<Response>, EngineError> {
        let mut responses = self.responses.clone();
        for (k, ((at, _), got)) in self.calls.iter().zip(extracted).enumerate() {
            let Some(Response::Llm { completion: free }) = responses.get_mut(*at) else {
                return Err(step::wrong(*at, "an LLM reply", responses.get(*at)));
            };
            match got {
                Response::Llm { completion } => *free = std::mem::take(free).then_extracted(completion.clone()),
                Response::Failed { error } => free
                    .notes
                    .push(format!("the call extracting the answer failed ({error}); the free reply is read as it is")),
                other => return Err(step::wrong(k, "an LLM reply", Some(other))),
            }
        }
        Ok(responses)
    }
}

/// The extraction calls `responses` need (the position of each reply, and its call): a
/// reason-first call's free reply that its step cannot read as it is. A reply recorded with
/// its answer already extracted needs none.
pub(super) fn needed(requests: &[Request], responses: &[Response], shapes: &[ReplyShape]) -> Vec<(usize, Request)> {
    requests
        .iter()
        .zip(responses)
        .enumerate()
        .filter_map(|(i, pair)| match pair {
            (Request::Llm(chat), Response::Llm { completion }) if !completion.extracted => {
                extraction_of(chat, &completion.text, shapes).map(|call| (i, Request::Extraction(call)))
            }
            _ => None,
        })
        .collect()
}

fn extraction_of(chat: &ChatRequest, reply: &str, shapes: &[ReplyShape]) -> Option<ChatRequest> {
    let schema = &chat.extract.as_ref()?.schema;
    if readable_as_text(&schema.name, reply, shapes) {
        return None;
    }
    chat.extraction(reply)
}

/// Whether a free reply to a call of reply shape `name` can be read as it is, as the shape of
/// that name says (GoG's step: with its action); otherwise, whether it holds an answer in
/// braces (or "the answer is …").
pub(crate) fn readable_as_text(name: &str, reply: &str, shapes: &[ReplyShape]) -> bool {
    match GENERIC.iter().chain(shapes).find(|s| s.name == name).map(|s| s.reasons) {
        Some(Reasons::ThenItself { readable }) => readable(reply),
        _ => parse::parse_answers(reply).is_some_and(|a| !a.is_empty()),
    }
}
