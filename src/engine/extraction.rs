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
                Response::Failed { error } => {
                    free.notes.push(format!("{FAILED} ({error}); the free reply is read as it is"))
                }
                other => return Err(step::wrong(k, "an LLM reply", Some(other))),
            }
        }
        Ok(responses)
    }
}

/// How the note of a failed extraction begins.
const FAILED: &str = "the call extracting the answer failed";

/// The extraction calls `responses` need (the position of each reply, and its call): a
/// reason-first call's free reply that its step cannot read as it is. None when a result is
/// not of the kind its request asked for (the step says so), and none for a reply recorded by
/// an older ongraph with its extraction made or failed (the driver made it then).
pub(super) fn needed(requests: &[Request], responses: &[Response], shapes: &[ReplyShape]) -> Vec<(usize, Request)> {
    if !requests.iter().zip(responses).all(|(r, got)| answers(r, got)) {
        return Vec::new();
    }
    requests
        .iter()
        .zip(responses)
        .enumerate()
        .filter_map(|(i, pair)| match pair {
            (Request::Llm(chat), Response::Llm { completion })
                if !completion.extracted && !completion.notes.iter().any(|n| n.starts_with(FAILED)) =>
            {
                extraction_of(chat, &completion.text, shapes).map(|call| (i, Request::Extraction(call)))
            }
            _ => None,
        })
        .collect()
}

/// Whether `got` is the kind of result `request` asks for.
fn answers(request: &Request, got: &Response) -> bool {
    matches!(
        (request, got),
        (Request::Relations { .. }, Response::Relations { .. })
            | (Request::Neighbours { .. }, Response::Neighbours { .. })
            | (Request::FindEntities { .. }, Response::Entities { .. })
            | (Request::Llm(_), Response::Llm { .. })
            | (Request::Embed { .. }, Response::Embeddings { .. })
            | (Request::Extraction(_), Response::Llm { .. } | Response::Failed { .. })
    )
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::engine::structured::REASONED_ANSWER;
    use crate::engine::{Settings, test_context};
    use crate::llm::Completion;

    fn reason_first() -> Request {
        let cx = test_context("Q?", Settings { structured: true, ..Settings::default() });
        cx.llm("answer", String::from("Q?"), 0.0, &REASONED_ANSWER)
    }

    fn reply(text: &str) -> Response {
        Response::Llm { completion: Completion { text: text.into(), ..Completion::default() } }
    }

    #[test]
    fn only_a_free_reply_that_cannot_be_read_is_extracted() {
        let asked = [reason_first(), Request::Relations { entity: "m.1".into() }];
        let got = |first: Response| [first, Response::Relations { relations: Vec::new() }];
        let calls = needed(&asked, &got(reply("I am not sure.")), &[]);
        assert!(matches!(calls.as_slice(), [(0, Request::Extraction(c))] if c.prompt.contains("I am not sure.")));
        assert!(needed(&asked, &got(reply("So the answer is {Canberra}.")), &[]).is_empty(), "readable as it is");
        // Recorded by an older ongraph: extracted already, or its extraction failed then.
        let older = |extracted: bool, notes: Vec<String>| Response::Llm {
            completion: Completion { text: "I am not sure.".into(), extracted, notes, ..Completion::default() },
        };
        assert!(needed(&asked, &got(older(true, Vec::new())), &[]).is_empty());
        let failed = vec![format!("{FAILED} (timed out); the free reply is read as it is")];
        assert!(needed(&asked, &got(older(false, failed)), &[]).is_empty());
        // A result of the wrong kind anywhere: the step says so, rather than extracting first.
        let wrong = [reply("I am not sure."), reply("not relations")];
        assert!(needed(&asked, &wrong, &[]).is_empty());
    }

    #[test]
    fn a_failed_extraction_leaves_the_free_reply_with_a_note() {
        let asked = [reason_first()];
        let free = [reply("I am not sure.")];
        let calls = needed(&asked, &free, &[]);
        let extracting = Extracting {
            batch: Pending { requests: asked.to_vec(), plan: Box::new(()) },
            responses: free.to_vec(),
            calls,
            elapsed: Duration::ZERO,
        };
        let merged = extracting.merged(&[Response::Failed { error: "timed out".into() }]).unwrap();
        let Response::Llm { completion } = &merged[0] else { panic!("{merged:?}") };
        assert_eq!(completion.text, "I am not sure.");
        assert!(!completion.extracted && completion.notes[0].starts_with(FAILED), "{completion:?}");
        let merged = extracting.merged(&[reply(r#"{"answer": ["Canberra"]}"#)]).unwrap();
        let Response::Llm { completion } = &merged[0] else { panic!("{merged:?}") };
        assert!(completion.extracted && completion.reasoning.as_deref() == Some("I am not sure."));
        let wrong = extracting.merged(&[Response::Relations { relations: Vec::new() }]).unwrap_err();
        assert!(matches!(wrong, EngineError::WrongResponse { index: 0, .. }), "{wrong:?}");
    }
}
