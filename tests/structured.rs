//! Structured replies through the engine: every prompt carries its reply schema and shows the
//! JSON shape, JSON replies are read as such, and replies that are not JSON of the shape (wrong
//! types, cut off at the token limit, empty) fall back to the free-text parsers with a note.

mod common;

use async_trait::async_trait;
use common::*;
use ongraph::engine::events::{CallRecord, ReadAs};
use ongraph::engine::{AnswerSource, Fed, MethodId, Poll, Registry, Request, Response, Run, Settings};
use ongraph::llm::{ChatRequest, Completion, LanguageModel, LlmError, ReplyMode};
use ongraph::prompts::Template;
use ongraph::testing::session::{Moment, Session};

fn template(name: &str) -> Template {
    Registry::builtin().template(name).expect("a built-in template")
}
use ongraph::testing::driver::Driver;
use ongraph::testing::kg::demo_graph;
use serde_json::{Value, json};
use std::sync::{Arc, Mutex};

/// A spoilt reply that is an error instead (the endpoint timed out).
const FAIL: &str = "\u{0}fail";

const CANBERRA: &str = "What is the majority party now in the country where Canberra is located?";

/// Replies in JSON to each schema, choosing only among what the schema and prompt offer: every
/// candidate with an equal score, "sufficient" once the prompt shows the Labor Party. `spoil`
/// replaces the reply to one kind of prompt, to test bad input.
struct JsonModel {
    spoil: Option<(&'static str, &'static str)>,
    requests: Mutex<Vec<ChatRequest>>,
}

fn enum_of(schema: &Value, pointer: &str) -> Vec<Value> {
    schema.pointer(pointer).and_then(Value::as_array).cloned().unwrap_or_default()
}

impl JsonModel {
    fn new(spoil: Option<(&'static str, &'static str)>) -> Arc<Self> {
        Arc::new(Self { spoil, requests: Mutex::new(Vec::new()) })
    }

    fn reply(&self, r: &ChatRequest) -> String {
        // A reason-first call is asked as free text: this model's prose names no answer, so the
        // engine asks for a second, structured call extracting it.
        let Some(schema) = &r.schema else { return "Let me think about the question.".into() };
        if let Some((kind, reply)) = self.spoil
            && kind == schema.name
        {
            return reply.into();
        }
        let s = &schema.schema;
        let shown = r.prompt.contains("Australian Labor Party");
        match schema.name.as_str() {
            "topics" => json!({"entities": ["Canberra"]}),
            "relations" => {
                // The relations that lead from a city to its country's governing party.
                let useful = ["location.location.containedby", "head_of_government", "politician.party"];
                let names = enum_of(s, "/properties/relations/items/properties/relation/enum");
                let score = |x: &Value| -> f64 {
                    let x = x.as_str().unwrap_or_default();
                    if useful.iter().any(|u| x.contains(u)) && !x.contains("incoming") { 0.9 } else { 0.1 }
                };
                let mut best = names.clone();
                best.sort_by(|a, b| score(b).total_cmp(&score(a)));
                json!({"relations": best.iter().take(3).map(|x| json!({"relation": x, "score": score(x)})).collect::<Vec<_>>()})
            }
            "entity_scores" => {
                let names = enum_of(s, "/properties/scores/items/properties/entity/enum");
                let n = names.len().max(1) as f64;
                json!({"scores": names.iter().map(|x| json!({"entity": x, "score": 1.0 / n})).collect::<Vec<_>>()})
            }
            "verdict" => json!({"sufficient": shown, "answer": if shown { vec!["Australian Labor Party"] } else { vec![] }, "reason": "r"}),
            // The answer is chosen among what the shown triples reach (the schema's enum).
            "judgment" => {
                let offered = enum_of(s, "/properties/answer/items/enum");
                let labor = json!("Australian Labor Party");
                json!({"reason": "r", "answer": [if offered.contains(&labor) { labor } else { json!("unknown") }]})
            }
            "answer" | "reasoned_answer" => json!({"reasoning": "", "answer": ["Australian Labor Party"]}),
            "hop_plan" => json!({"chain": ["located in", "head of government", "party"]}),
            other => json!({"unexpected": other}),
        }
        .to_string()
    }
}

#[async_trait]
impl LanguageModel for JsonModel {
    fn describe(&self) -> String {
        "json test model".into()
    }
    async fn complete(&self, r: &ChatRequest) -> Result<Completion, LlmError> {
        self.requests.lock().unwrap().push(r.clone());
        // Not a whole number of milliseconds: a step of two batches adds up on replay as live.
        std::thread::sleep(std::time::Duration::from_micros(1600));
        let text = self.reply(r);
        if text == FAIL {
            return Err(LlmError::Timeout {
                url: "http://127.0.0.1:9/v1/chat/completions".into(),
                seconds: 1,
                attempts: 1,
            });
        }
        Ok(Completion { text, mode: ReplyMode::JsonSchema, ..Default::default() })
    }
}

async fn run_with(model: Arc<JsonModel>, method: MethodId) -> Run {
    let driver = Driver::new(Arc::new(demo_graph()), model);
    let settings = Settings { method, structured: true, depth: 3, ..Settings::default() };
    let mut run = new_run(&driver, CANBERRA, ongraph::engine::Topics::Extract, settings);
    run_to_end(&driver, &mut run).await;
    run
}

fn calls(run: &Run) -> Vec<&CallRecord> {
    run.trace().iter().flat_map(|e| &e.calls).collect()
}

fn notes(run: &Run) -> Vec<&str> {
    run.trace().iter().flat_map(|e| e.notes.iter().map(String::as_str)).collect()
}

#[tokio::test]
async fn json_replies_carry_the_run_with_every_call_read_as_json() {
    let model = JsonModel::new(None);
    let run = run_with(model.clone(), MethodId::TOG).await;
    let answer = run.answer().expect("answered");
    assert_eq!(
        (answer.answers.clone(), answer.source),
        (vec!["Australian Labor Party".to_string()], AnswerSource::KgPaths)
    );
    for r in model.requests.lock().unwrap().iter() {
        let schema = r.schema.as_ref().unwrap_or_else(|| panic!("{}: no schema", r.step));
        assert_eq!(schema.schema["additionalProperties"], false, "{}", r.step);
        assert!(r.prompt.contains("Reply with one JSON object only"), "{}: {}", r.step, r.prompt);
        // The shape is shown before the question: the fixed part of the prompt comes first.
        if ["relation_prune", "entity_prune", "reasoning"].contains(&r.step.as_str()) {
            let shape = r.prompt.find("Reply with one JSON object only").unwrap();
            assert!(shape < r.prompt.rfind(CANBERRA).unwrap(), "{}: the shape after the question", r.step);
        }
    }
    // The sufficiency check judged by the answer, at the hop whose triples reach it.
    let judged: Vec<&CallRecord> = calls(&run).into_iter().filter(|c| c.step == "reasoning").collect();
    assert_eq!(judged.last().unwrap().parsed, "Yes: answered Australian Labor Party");
    assert!(judged[..judged.len() - 1].iter().all(|c| c.parsed == "No: no answer the shown triples reach"));
    let calls = calls(&run);
    assert!(calls.len() >= 5, "{}", calls.len());
    for c in &calls {
        assert_eq!(
            (c.mode, c.read, c.fell_back),
            (ReplyMode::JsonSchema, ReadAs::Json, false),
            "{}: {}",
            c.step,
            c.reply
        );
        assert!(c.reply.starts_with('{'), "the trace keeps the model's JSON: {}", c.reply);
    }
    // The parsed scores are the model's, read through the same rules as free text.
    let prune = calls.iter().find(|c| c.step == "relation_prune").unwrap();
    assert!(prune.parsed.contains("=0.90") || prune.parsed.contains("=0.82"), "{}", prune.parsed);
}

#[tokio::test]
async fn json_of_the_wrong_shape_falls_back_to_the_parser_and_says_so() {
    // A schema-violating reply (a string where a list belongs): not JSON of the shape, read as
    // text, nothing found there, BM25 ranks instead.
    let run = run_with(JsonModel::new(Some(("relations", r#"{"relations": "all of them"}"#))), MethodId::TOG).await;
    let prune: Vec<&CallRecord> = calls(&run).into_iter().filter(|c| c.step == "relation_prune").collect();
    assert!(!prune.is_empty());
    assert!(prune.iter().all(|c| c.read == ReadAs::Text && c.fell_back), "{prune:?}");
    let notes = notes(&run);
    assert!(notes.iter().any(|n| n.contains("relation_prune reply is not JSON of its shape")), "{notes:?}");
    assert!(notes.iter().any(|n| n.contains("ranked by BM25 instead")), "{notes:?}");
    assert!(run.answer().is_some(), "the run still ends");
}

#[tokio::test]
async fn a_failed_extraction_keeps_the_free_reply_and_is_asked_again() {
    // The judgments say No, so the depth limit asks the paths for the answer: its free reply
    // names none, and the call extracting it times out. The step keeps the free reply (read as
    // far as it goes, with a note) instead of failing the run.
    let model = JsonModel::new(Some(("answer", FAIL)));
    let driver = Driver::new(Arc::new(demo_graph()), model.clone());
    let mut run = new_run(&driver, CANBERRA, ongraph::engine::Topics::Extract, settings_tog_depth1());
    run_to_end(&driver, &mut run).await;
    let notes = notes(&run);
    assert!(notes.iter().any(|n| n.contains("the call extracting the answer failed")), "{notes:?}");
    let answer = calls(&run).into_iter().find(|c| c.step == "answer").expect("the answer step ran");
    assert_eq!(answer.read, ReadAs::Text, "{answer:?}");
    // Not memoised: the same call asked again extracts again.
    let extractions =
        || model.requests.lock().unwrap().iter().filter(|r| r.step == "answer" && r.schema.is_some()).count();
    let before = extractions();
    assert!(before >= 1);
    let mut again = new_run(&driver, CANBERRA, ongraph::engine::Topics::Extract, settings_tog_depth1());
    run_to_end(&driver, &mut again).await;
    assert!(extractions() > before, "the failed extraction was not kept in the memo");
}

#[tokio::test]
async fn the_engine_asks_for_extractions_as_a_batch_of_their_own_and_the_session_replays() {
    // The free reply names no answer: feeding it, the run asks for the extraction call (the
    // driver only performs it) and takes the step once it is back.
    let driver = Driver::new(Arc::new(demo_graph()), JsonModel::new(None));
    let mut run = new_run(&driver, CANBERRA, ongraph::engine::Topics::Extract, settings_tog_depth1());
    let mut extractions = 0;
    while let Poll::Need(requests) = run.poll() {
        let responses = driver.perform(&requests).await.unwrap();
        let spent = run.costs().llm_calls;
        if run.feed(responses).unwrap() == Fed::Extracting {
            extractions += 1;
            assert!(run.costs().llm_calls > spent, "the free replies were paid for, whatever comes next");
            let Poll::Need(asked) = run.poll() else { panic!("extractions are asked for") };
            assert!(
                !asked.is_empty() && asked.iter().all(|r| matches!(r, Request::Extraction(c) if c.schema.is_some()))
            );
            assert_eq!(run.poll(), Poll::Need(asked.clone()), "polled again, the same batch");
            let extracted = driver.perform(&asked).await.unwrap();
            assert!(matches!(run.feed(extracted).unwrap(), Fed::Step(_)), "the step follows its extractions");
        }
    }
    assert!(extractions >= 1);
    let answer = calls(&run).into_iter().find(|c| c.step == "answer").expect("the answer step ran");
    assert_eq!(answer.read, ReadAs::Extracted, "{answer:?}");
    assert!(answer.reasoning.as_deref().is_some_and(|r| r.contains("Let me think")), "the free reply is kept");
    assert_eq!(run.costs().llm_calls, calls(&run).len() as u64 + extractions, "two calls each");

    // Recorded, each batch is a moment of its own, extractions and failed ones too, and the
    // session replays to the same steps.
    for spoil in [None, Some(("answer", FAIL))] {
        let model = JsonModel::new(spoil);
        let driver = Driver::new(Arc::new(demo_graph()), model);
        let settings = settings_tog_depth1();
        let mut run = new_run(&driver, CANBERRA, ongraph::engine::Topics::Extract, settings.clone());
        let prompts = ongraph::engine::builtin_prompts();
        let mut session = Session::new("demo", "json", settings.clone(), driver.kg().profile().clone(), &prompts);
        session.begin(CANBERRA, ongraph::engine::Topics::Extract, &settings);
        driver.run_recorded(&mut run, &mut session).await.unwrap();
        let extracted: Vec<&Response> = session.runs[0]
            .moments
            .iter()
            .filter_map(|m| match m {
                Moment::Exchange { requests, responses, .. }
                    if requests.iter().all(|r| matches!(r, Request::Extraction(_))) =>
                {
                    Some(responses)
                }
                _ => None,
            })
            .flatten()
            .collect();
        let failed = extracted.iter().filter(|r| matches!(r, Response::Failed { .. })).count();
        assert_eq!(failed > 0, spoil.is_some(), "{extracted:?}");
        assert!(!extracted.is_empty());
        session.check_replays(Registry::builtin()).unwrap();
        let replayed = session.replay(0).unwrap();
        assert_eq!(replayed.trace(), run.trace());
        if spoil.is_some() {
            assert!(notes(&replayed).iter().any(|n| n.contains("the call extracting the answer failed")));
        }
        // As an older ongraph recorded it (its driver made the extraction, in the same moment):
        // it replays to the same steps, asking for nothing more.
        let mut older = session.clone();
        older.runs[0].moments = as_recorded_before_extractions_were_the_engines(&session.runs[0].moments);
        assert!(older.runs[0].moments.len() < session.runs[0].moments.len());
        older.check_replays(Registry::builtin()).unwrap();
    }
}

/// `moments` with each batch of extraction calls folded into the batch before it, as the
/// driver recorded them before the engine asked for them: the free reply then extracted, or
/// kept with the failure's note.
fn as_recorded_before_extractions_were_the_engines(moments: &[Moment]) -> Vec<Moment> {
    let mut out: Vec<Moment> = Vec::new();
    for m in moments {
        let Moment::Exchange { requests, responses, elapsed_ms } = m else {
            out.push(m.clone());
            continue;
        };
        if !requests.iter().all(|r| matches!(r, Request::Extraction(_))) {
            out.push(m.clone());
            continue;
        }
        let Some(Moment::Exchange { requests: asked, responses: got, elapsed_ms: before }) = out.last_mut() else {
            panic!("an extraction follows its batch")
        };
        *before += elapsed_ms;
        let free = asked.iter().zip(got.iter_mut()).filter_map(|(r, got)| match (r, got) {
            (Request::Llm(chat), Response::Llm { completion }) if chat.extract.is_some() => Some(completion),
            _ => None,
        });
        for (completion, extracted) in free.zip(responses) {
            *completion = match extracted {
                Response::Llm { completion: second } => completion.clone().then_extracted(second.clone()),
                Response::Failed { error } => {
                    let mut kept = completion.clone();
                    kept.notes.push(format!(
                        "the call extracting the answer failed ({error}); the free reply is read as it is"
                    ));
                    kept
                }
                other => panic!("{other:?}"),
            };
        }
    }
    out
}

fn settings_tog_depth1() -> Settings {
    Settings { method: MethodId::TOG, structured: true, depth: 1, ..Settings::default() }
}

#[tokio::test]
async fn json_cut_off_at_the_token_limit_is_closed_and_read() {
    let run = run_with(JsonModel::new(Some(("topics", r#"{"entities": ["Canberra", "Austra"#))), MethodId::TOG).await;
    let topics = calls(&run).into_iter().find(|c| c.step == "topic_entities").unwrap();
    assert_eq!((topics.read, topics.fell_back), (ReadAs::Json, false));
    assert_eq!(topics.parsed, "Canberra; Austra");
    assert!(notes(&run).iter().any(|n| n.contains("cut off (token limit)")), "{:?}", notes(&run));
}

#[tokio::test]
async fn an_empty_reply_is_no_answer_and_never_a_panic() {
    // Nothing streamed for the judgment: no answer, taken as No, marked as a fallback; at the
    // depth limit the collected paths answer (the free reply extracted by a second call).
    let run = run_with(JsonModel::new(Some(("judgment", ""))), MethodId::TOG).await;
    let verdicts: Vec<&CallRecord> = calls(&run).into_iter().filter(|c| c.step == "reasoning").collect();
    assert!(!verdicts.is_empty());
    assert!(verdicts.iter().all(|c| c.fell_back && c.parsed.starts_with("No")), "{verdicts:?}");
    assert_eq!(run.answer().map(|a| a.source), Some(AnswerSource::PartialPaths));
    let answer = calls(&run).into_iter().find(|c| c.step == "answer").unwrap();
    assert_eq!((answer.read, answer.fell_back), (ReadAs::Extracted, false), "{answer:?}");
    assert!(answer.reasoning.as_deref().is_some_and(|r| r.contains("Let me think")), "the free reply is kept");
    assert_eq!(run.costs().llm_calls, calls(&run).iter().filter(|c| !c.cached).count() as u64 + 1, "two calls");
}

#[tokio::test]
async fn a_judgment_naming_what_the_triples_do_not_reach_is_not_sufficient() {
    // A reply outside the enum (a server that does not enforce it): not taken, and said.
    let run =
        run_with(JsonModel::new(Some(("judgment", r#"{"reason": "r", "answer": ["Paris"]}"#))), MethodId::TOG).await;
    let judged: Vec<&CallRecord> = calls(&run).into_iter().filter(|c| c.step == "reasoning").collect();
    assert!(judged.iter().all(|c| c.parsed == "No: no answer the shown triples reach" && c.read == ReadAs::Json));
    let notes = notes(&run);
    assert!(notes.iter().any(|n| n.contains("answered \"Paris\", which the shown triples do not reach")), "{notes:?}");
    assert_ne!(run.answer().map(|a| a.answers.clone()), Some(vec!["Paris".to_string()]));
}

/// Under a hop plan the judgment may answer only what the paths reach from the planned depth
/// on: the entities on the way, which a judgment mistakes for the answer, are not offered.
#[tokio::test]
async fn a_planned_judgment_offers_only_what_lies_at_the_planned_depth() {
    let offered = |hop_plan: bool| async move {
        let model = JsonModel::new(None);
        let driver = Driver::new(Arc::new(demo_graph()), model.clone());
        let settings = Settings {
            method: MethodId::TOG,
            structured: true,
            depth: 3,
            hop_plan,
            plan_narrows_answers: hop_plan,
            ..Settings::default()
        };
        let mut run = new_run(&driver, CANBERRA, ongraph::engine::Topics::Extract, settings);
        run_to_end(&driver, &mut run).await;
        // Named on the way only: no path reaches them at the third hop.
        let live = |at: fn(u32) -> bool| -> Vec<String> {
            let nodes = run.beam().nodes.iter();
            let on = nodes.filter(|n| n.parent.is_some() && at(n.depth) && n.term().is_some());
            let on = on.filter(|n| n.status.is_live() && run.beam().is_live_path(n.id));
            on.map(|n| n.shown().to_string()).collect()
        };
        let last_hop = live(|depth| depth == 3);
        let on_the_way: Vec<String> = live(|depth| depth < 3).into_iter().filter(|n| !last_hop.contains(n)).collect();
        let judgments: Vec<Vec<Value>> = model
            .requests
            .lock()
            .unwrap()
            .iter()
            .filter(|r| r.step == "reasoning")
            .map(|r| enum_of(&r.schema.as_ref().unwrap().schema, "/properties/answer/items/enum"))
            .collect();
        (run.answer().unwrap().answers.clone(), judgments, on_the_way)
    };
    let (answers, judgments, on_the_way) = offered(false).await;
    assert_eq!(answers, ["Australian Labor Party"]);
    assert_eq!(judgments.len(), 3, "judged at every depth");
    let last = judgments.last().unwrap();
    assert!(on_the_way.iter().any(|n| last.contains(&json!(n))), "without a plan: {last:?} offers {on_the_way:?}");

    let (answers, judgments, on_the_way) = offered(true).await;
    assert_eq!(answers, ["Australian Labor Party"]);
    assert_eq!(judgments.len(), 1, "judged at the planned depth only");
    let only = &judgments[0];
    assert!(only.contains(&json!("Australian Labor Party")), "{only:?}");
    assert!(!on_the_way.is_empty());
    assert!(on_the_way.iter().all(|n| !only.contains(&json!(n))), "{only:?} offers one of {on_the_way:?}");
}

#[tokio::test]
async fn a_judgment_not_read_as_json_still_takes_only_what_the_triples_reach() {
    // A server that ignores the schema and writes prose saying yes to an answer off the triples:
    // read by the free-text parsers, and still not sufficient.
    let run = run_with(JsonModel::new(Some(("judgment", "{Yes}. The answer is {Paris}."))), MethodId::TOG).await;
    let judged: Vec<&CallRecord> = calls(&run).into_iter().filter(|c| c.step == "reasoning").collect();
    assert!(!judged.is_empty());
    assert!(judged.iter().all(|c| c.parsed == "No: no answer the shown triples reach" && c.read != ReadAs::Json));
    let notes = notes(&run);
    assert!(notes.iter().any(|n| n.contains("answered \"Paris\", which the shown triples do not reach")), "{notes:?}");
    assert!(notes.iter().any(|n| n.contains("names no answer the shown triples reach: taken as No")), "{notes:?}");
    assert_ne!(run.answer().map(|a| a.answers.clone()), Some(vec!["Paris".to_string()]));
}

#[tokio::test]
async fn prompts_saved_before_structured_variants_ask_every_step_as_they_did() {
    // A session saved before issue 25 has no `json/` prompts: its steps are asked as JSON with
    // the shape appended, the sufficiency check as a verdict and the answer with no reasoning
    // first, so that it replays as recorded.
    let old: std::collections::BTreeMap<String, String> =
        ongraph::engine::builtin_prompts().texts().into_iter().filter(|(k, _)| !k.starts_with("json/")).collect();
    let prompts = Arc::new(ongraph::engine::Registry::builtin().saved_prompts(&old).unwrap());
    assert!(!prompts.has_structured_variants());
    let model = JsonModel::new(None);
    let driver = Driver::new(Arc::new(demo_graph()), model.clone());
    let settings = Settings { method: MethodId::TOG, structured: true, depth: 3, ..Settings::default() };
    let kg = driver.kg();
    let mut run =
        Run::new(CANBERRA, ongraph::engine::Topics::Extract, settings, prompts, kg.profile().clone(), kg.name())
            .unwrap();
    run_to_end(&driver, &mut run).await;
    assert_eq!(run.answer().unwrap().answers, vec!["Australian Labor Party".to_string()]);
    let requests = model.requests.lock().unwrap();
    for r in requests.iter() {
        let schema = r.schema.as_ref().unwrap_or_else(|| panic!("{}: asked as free text", r.step));
        assert!(r.extract.is_none(), "{}", r.step);
        assert!(!["judgment", "reasoned_answer"].contains(&schema.name.as_str()), "{}: {}", r.step, schema.name);
        assert!(r.prompt.contains("Reply with one JSON object only"), "{}: the shape is not shown", r.step);
    }
    assert!(requests.iter().any(|r| r.schema.as_ref().is_some_and(|s| s.name == "verdict")));

    // A template the user rewrote keeps their words under structured replies too.
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("reasoning.txt"), "MY OWN CHECK {{question}}\n{{triples}}\n").unwrap();
    let mine = ongraph::engine::Registry::builtin().prompts(Some(dir.path())).unwrap();
    let prompt = mine.render_for(template("reasoning"), &[("question", "q"), ("triples", "t")], true);
    assert!(prompt.text.starts_with("MY OWN CHECK q") && !prompt.shows_shape, "{}", prompt.text);
    let builtin = mine.render_for(
        template("relation_prune"),
        &[("question", "q"), ("topic_entity", "e"), ("relations", "r"), ("width", "3")],
        true,
    );
    assert!(builtin.shows_shape, "a template not rewritten keeps its variant");
}

#[tokio::test]
async fn every_call_asks_for_the_reply_shape_its_template_names() {
    // The registry's reply slot and the shapes the methods ask for must not drift apart. Steps
    // named after a template are checked; a run that stops early (replies this model does not
    // know) still checks the calls it made.
    let mut seen = std::collections::BTreeSet::new();
    for method in [
        MethodId::TOG,
        MethodId::TOG_R,
        MethodId::POG,
        MethodId::POG_E,
        MethodId::GOG,
        MethodId::IO,
        MethodId::COT,
        MethodId::SC,
    ] {
        for unified in [false, true] {
            let model = JsonModel::new(None);
            let driver = Driver::new(Arc::new(demo_graph()), model.clone());
            let settings = Settings { method, unified, structured: true, depth: 3, ..Settings::default() };
            let mut run = new_run(&driver, CANBERRA, ongraph::engine::Topics::Extract, settings);
            let _ = driver.run(&mut run, |_, _| {}).await;
            for r in model.requests.lock().unwrap().iter() {
                let Some(template) = Registry::builtin().template(&r.step) else { continue };
                // A reason-first call names the shape its answer is extracted into.
                let schema = r.schema.as_ref().or(r.extract.as_ref().map(|e| &e.schema)).map(|s| s.name.as_str());
                assert_eq!(schema, template.reply(), "{method:?}: {}", r.step);
                seen.insert(template.name());
            }
        }
    }
    assert!(seen.len() >= 14, "{seen:?}");
}

/// An OpenAI-compatible server that answers every structured request in its shape, choosing
/// only among what the request offers: the topic as written, the team-mascot relation, equal
/// entity scores, and for a judgment the Giants when its enum offers them, else unknown.
struct ShapeServer;

impl wiremock::Respond for ShapeServer {
    fn respond(&self, request: &wiremock::Request) -> wiremock::ResponseTemplate {
        let body: Value = serde_json::from_slice(&request.body).unwrap_or_default();
        let format = &body["response_format"]["json_schema"];
        let schema = &format["schema"];
        let reply = match format["name"].as_str().unwrap_or_default() {
            "topics" => json!({"entities": ["Lou Seal"]}),
            "relations" => {
                let offered = enum_of(schema, "/properties/relations/items/properties/relation/enum");
                let best = offered.iter().find(|r| r.as_str().is_some_and(|r| r.contains("team_mascot")));
                json!({"relations": [{"relation": best.or(offered.first()), "score": 1.0}]})
            }
            "entity_scores" => {
                let names = enum_of(schema, "/properties/scores/items/properties/entity/enum");
                json!({"scores": names.iter().map(|x| json!({"entity": x, "score": 1.0})).collect::<Vec<_>>()})
            }
            "judgment" => {
                let giants = json!("San Francisco Giants");
                let offered = enum_of(schema, "/properties/answer/items/enum");
                let answer = if offered.contains(&giants) { giants } else { json!("unknown") };
                json!({"reason": "The team-mascot triple names the team.", "answer": [answer]})
            }
            other => json!({"unexpected": other}),
        };
        let completion = json!({
            "choices": [{"message": {"role": "assistant", "content": reply.to_string()}, "finish_reason": "stop"}],
            "usage": {"prompt_tokens": 100, "completion_tokens": 10, "prompt_tokens_details": {"cached_tokens": 60}},
        });
        wiremock::ResponseTemplate::new(200).set_body_json(completion)
    }
}

/// Through the binary and HTTP: a judgment that answers from the shown chain ends the run at
/// the first hop, from KG paths, in one check.
#[tokio::test]
async fn a_judgment_in_the_new_shape_stops_at_the_hop_that_shows_the_chain() {
    let server = wiremock::MockServer::start().await;
    wiremock::Mock::given(wiremock::matchers::method("POST")).respond_with(ShapeServer).mount(&server).await;
    let home = tempfile::tempdir().unwrap();
    let config = home.path().join("config.toml");
    let entry =
        format!("[llm.shapes]\nbase_url = \"{}/v1\"\nmodel = \"m\"\nstructured = \"json_schema\"\n", server.uri());
    std::fs::write(&config, entry).unwrap();
    let (out, plain) = tokio::task::spawn_blocking(move || {
        let question = "Which team has Lou Seal as its mascot?";
        let args = ["--config", config.to_str().unwrap(), "ask", question, "--llm", "shapes"];
        let json = common::ongraph_cmd(home.path(), &[&args[..], &["--json"]].concat()).output().unwrap();
        (json, common::ongraph_cmd(home.path(), &args).output().unwrap())
    })
    .await
    .unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let json: Value = serde_json::from_slice(&out.stdout).unwrap();
    // The server's prefix-cache figure is counted and said beside the cost.
    let calls = json["costs"]["llm_calls"].as_u64().unwrap_or_default();
    assert_eq!(json["costs"]["usage"]["cached_tokens"], json!(60 * calls), "{}", json["costs"]);
    let said = String::from_utf8_lossy(&plain.stdout);
    let reused = format!("{} prompt ({} reused from the server's cache) + ", 100 * calls, 60 * calls);
    assert!(said.lines().any(|l| l.starts_with("Cost: ") && l.contains(&reused)), "{said}");
    // The judgment's reason is said beside the answer.
    assert!(said.contains("\nThe model's reason: The team-mascot triple names the team.\n"), "{said}");
    assert_eq!(json["answer"]["answers"], json!(["San Francisco Giants"]), "{json}");
    assert_eq!(json["answer"]["source"], "kg_paths");
    let checks: Vec<&Value> = json["trace"]
        .as_array()
        .unwrap()
        .iter()
        .flat_map(|e| e["calls"].as_array().into_iter().flatten())
        .filter(|c| c["step"] == "reasoning")
        .collect();
    assert_eq!(checks.len(), 1, "one check, at depth 1");
    assert_eq!(checks[0]["parsed"], "Yes: answered San Francisco Giants");
    assert_eq!(checks[0]["read"], "json");
    let depth = json["trace"]
        .as_array()
        .unwrap()
        .iter()
        .find(|e| e["calls"].as_array().is_some_and(|c| c.iter().any(|c| c["step"] == "reasoning")))
        .map(|e| e["depth"].clone());
    assert_eq!(depth, Some(json!(1)), "{json}");
}

/// IO's answer comes from the model's own knowledge: under structured replies it is asked as
/// free text with the paper's examples and extracted only when the reply names no answer, like
/// every own-knowledge answer. Prompts saved with IO's one-call JSON variant, or saved before
/// there were variants, ask as they did, so their sessions replay.
#[tokio::test]
async fn io_is_asked_as_free_text_first_unless_its_prompts_carry_the_one_call_json() {
    let io_run = |prompts: ongraph::prompts::Prompts| async move {
        let model = JsonModel::new(None);
        let driver = Driver::new(Arc::new(demo_graph()), model.clone());
        let settings = Settings { method: MethodId::IO, structured: true, ..Settings::default() };
        let kg = driver.kg();
        let mut run = Run::new(
            CANBERRA,
            ongraph::engine::Topics::Extract,
            settings,
            Arc::new(prompts),
            kg.profile().clone(),
            kg.name(),
        )
        .unwrap();
        run_to_end(&driver, &mut run).await;
        let requests = model.requests.lock().unwrap().clone();
        (run, requests)
    };
    let builtin = ongraph::engine::builtin_prompts();
    assert!(!builtin.texts().contains_key("json/io"), "IO has no one-call JSON variant any more");

    // Built in: free text first (this model's prose names no answer), then the extraction.
    let (run, requests) = io_run(builtin.clone()).await;
    let asked: Vec<(&str, Option<&str>)> =
        requests.iter().map(|r| (r.step.as_str(), r.schema.as_ref().map(|s| s.name.as_str()))).collect();
    assert_eq!(asked[0], ("io", None), "{asked:?}");
    let first = &requests[0];
    assert!(first.prompt.contains("in curly braces") && !first.prompt.contains("JSON"), "{}", first.prompt);
    assert_eq!(first.extract.as_ref().map(|e| e.schema.name.as_str()), Some("answer"));
    assert_eq!(run.answer().unwrap().answers, vec!["Australian Labor Party".to_string()]);
    let io = calls(&run).into_iter().find(|c| c.step == "io").unwrap();
    assert_eq!((io.read, io.fell_back), (ReadAs::Extracted, false), "{io:?}");

    // Saved with the one-call variant (or a user's json/io.txt): one JSON call, as recorded.
    let mut texts = builtin.texts();
    texts.insert(
        "json/io".into(),
        "Answer the question. Give only the answer.\nReply with one JSON object only: {\"answer\": [\"<answer>\", ...]}\n\nQ: {{question}}\nA: ".into(),
    );
    let (run, requests) = io_run(Registry::builtin().saved_prompts(&texts).unwrap()).await;
    assert_eq!(requests.len(), 1, "{requests:?}");
    assert_eq!(requests[0].schema.as_ref().map(|s| s.name.as_str()), Some("answer"));
    assert!(requests[0].extract.is_none() && requests[0].prompt.contains("Reply with one JSON object only"));
    assert_eq!(calls(&run)[0].read, ReadAs::Json);
    let dir = tempfile::tempdir().unwrap();
    std::fs::create_dir(dir.path().join("json")).unwrap();
    std::fs::write(dir.path().join("json").join("io.txt"), &texts["json/io"]).unwrap();
    let (_, requests) = io_run(Registry::builtin().prompts(Some(dir.path())).unwrap()).await;
    assert_eq!(requests.len(), 1, "a user's json/io.txt: {requests:?}");
    assert!(requests[0].schema.is_some() && requests[0].prompt.starts_with("Answer the question. Give only"));

    // Saved before there were variants: JSON of the answer, the shape appended, as then.
    let old: std::collections::BTreeMap<String, String> =
        builtin.texts().into_iter().filter(|(k, _)| !k.starts_with("json/")).collect();
    let (_, requests) = io_run(Registry::builtin().saved_prompts(&old).unwrap()).await;
    assert_eq!(requests.len(), 1, "{requests:?}");
    assert_eq!(requests[0].schema.as_ref().map(|s| s.name.as_str()), Some("answer"));
    assert!(requests[0].prompt.contains("in curly braces") && requests[0].prompt.contains("JSON"));
}

/// The answer's paths that name it come first, however the beam scored them: a path the
/// model was shown that names no answer (here the best-scored one) supports nothing.
#[tokio::test]
async fn the_paths_that_name_the_answer_come_before_the_better_scored_ones_that_do_not() {
    // Every entity scoring prefers the Capital Territory: the path through it scores best and
    // stops short of the party, which only the path through Australia reaches.
    let spoil = r#"{"scores": [{"entity": "Australian Capital Territory", "score": 0.95}, {"entity": "Australia", "score": 0.05}]}"#;
    let run = run_with(JsonModel::new(Some(("entity_scores", spoil))), MethodId::TOG).await;
    let answer = run.answer().expect("answered");
    assert_eq!(answer.answers, vec!["Australian Labor Party".to_string()]);
    let reaches: Vec<bool> = answer.paths.iter().map(|p| run.reaches_answer(p.leaf)).collect();
    assert!(reaches[0] && !reaches[1], "{reaches:?}");
    assert!(answer.paths[0].text.ends_with("Australian Labor Party"), "{}", answer.paths[0].text);
    assert!(answer.paths[1].score > answer.paths[0].score, "the better-scored path that names no answer comes after");
    assert!(reaches.windows(2).all(|w| w[0] || !w[1]), "every supporting path first: {reaches:?}");
}
