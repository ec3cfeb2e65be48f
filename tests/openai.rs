//! The OpenAI-compatible client against a loopback HTTP server.
#![allow(unsafe_code)] // std::env::set_var, as before the lint: each test sets a variable of its own for the client it starts (another thread reading the environment at that moment is the known risk)

use ongraph::llm::{ChatRequest, Embedder, LanguageModel, LlmError, ReplyMode};
use ongraph::testing::llm::{EndpointMemory, OpenAiClient, OpenAiConfig, StructuredMode, TokenLimitParam};
use serde_json::json;
use std::time::Duration;
use wiremock::matchers::{body_partial_json, header, method, path};
use wiremock::{Mock, MockServer, ResponseTemplate};

fn request() -> ChatRequest {
    ChatRequest {
        step: "reasoning".into(),
        system: "You are an AI assistant that helps people find information.".into(),
        prompt: "Q: Where is Canberra?\nA:".into(),
        temperature: 0.4,
        max_tokens: 256,
        sample: 0,
        schema: None,
        extract: None,
    }
}

fn config(server: &MockServer) -> OpenAiConfig {
    let mut c = OpenAiConfig::new(format!("{}/v1", server.uri()), "test-model");
    c.backoff = Duration::from_millis(10);
    c.timeout = Duration::from_secs(10);
    c
}

fn completion(text: &str) -> serde_json::Value {
    json!({
        "id": "x", "object": "chat.completion", "model": "test-model",
        "choices": [{"index": 0, "message": {"role": "assistant", "content": text}, "finish_reason": "stop"}],
        "usage": {"prompt_tokens": 42, "completion_tokens": 7, "total_tokens": 49}
    })
}

#[tokio::test]
async fn request_shape_key_and_token_accounting() {
    let server = MockServer::start().await;
    // Unique to this test, so setting it cannot race with another test.
    unsafe { std::env::set_var("ONGRAPH_TEST_KEY_SHAPE", "sk-test-123") };
    Mock::given(method("POST"))
        .and(path("/v1/chat/completions"))
        .and(header("authorization", "Bearer sk-test-123"))
        .and(header("content-type", "application/json"))
        .and(body_partial_json(json!({
            "model": "test-model",
            "messages": [
                {"role": "system", "content": "You are an AI assistant that helps people find information."},
                {"role": "user", "content": "Q: Where is Canberra?\nA:"}
            ],
            "temperature": 0.4,
            "max_tokens": 256,
            "stream": false
        })))
        .respond_with(ResponseTemplate::new(200).set_body_json(completion("{Yes}. {Australia}")))
        .expect(1)
        .mount(&server)
        .await;
    let mut c = config(&server);
    c.api_key_env = Some("ONGRAPH_TEST_KEY_SHAPE".into());
    let client = OpenAiClient::new(c).unwrap();
    let got = client.complete(&request()).await.unwrap();
    assert_eq!(got.text, "{Yes}. {Australia}");
    assert_eq!((got.usage.prompt_tokens, got.usage.completion_tokens), (42, 7));
    assert!(!got.cached);
}

#[tokio::test]
async fn missing_usage_is_estimated() {
    let server = MockServer::start().await;
    let mut body = completion("{No}");
    body.as_object_mut().unwrap().remove("usage");
    Mock::given(method("POST")).respond_with(ResponseTemplate::new(200).set_body_json(body)).mount(&server).await;
    let got = OpenAiClient::new(config(&server)).unwrap().complete(&request()).await.unwrap();
    assert!(got.usage.prompt_tokens > 10 && got.usage.completion_tokens >= 1, "{:?}", got.usage);
}

/// Prompt tokens the server reused from its prefix cache, as OpenAI, vLLM and llama-server
/// say it (`usage.prompt_tokens_details.cached_tokens`) or as llama.cpp's timings do
/// (`timings.cache_n`); never more than the prompt, none when the server says nothing.
#[tokio::test]
async fn cached_prompt_tokens_are_read_from_the_usage_or_llama_cpp_timings() {
    let mut openai = completion("{Australia}");
    openai["usage"]["prompt_tokens_details"] = json!({"cached_tokens": 30});
    let mut llama = completion("{Australia}");
    llama["timings"] = json!({"cache_n": 12, "prompt_n": 30, "prompt_ms": 51.2});
    let mut odd = completion("{Australia}");
    odd["usage"]["prompt_tokens_details"] = json!({"cached_tokens": 9000});
    let mut text = completion("{Australia}");
    text["usage"]["prompt_tokens_details"] = json!({"cached_tokens": "many"});
    for (body, cached) in [(openai, 30), (llama, 12), (odd, 42), (text, 0), (completion("{Australia}"), 0)] {
        let server = MockServer::start().await;
        Mock::given(method("POST")).respond_with(ResponseTemplate::new(200).set_body_json(&body)).mount(&server).await;
        let got = OpenAiClient::new(config(&server)).unwrap().complete(&request()).await.unwrap();
        assert_eq!((got.usage.prompt_tokens, got.usage.cached_tokens), (42, cached), "{body}");
    }
}

#[tokio::test]
async fn rate_limit_honours_retry_after_then_succeeds() {
    let server = MockServer::start().await;
    Mock::given(method("POST"))
        .respond_with(ResponseTemplate::new(429).insert_header("retry-after", "1").set_body_string("slow down"))
        .up_to_n_times(1)
        .expect(1)
        .mount(&server)
        .await;
    Mock::given(method("POST"))
        .respond_with(ResponseTemplate::new(200).set_body_json(completion("ok")))
        .expect(1)
        .mount(&server)
        .await;
    let mut c = config(&server);
    // Were Retry-After ignored, the 60 s backoff would trip the 20 s guard below.
    c.backoff = Duration::from_secs(60);
    let client = OpenAiClient::new(c).unwrap();
    let got = tokio::time::timeout(Duration::from_secs(20), client.complete(&request())).await;
    assert_eq!(got.expect("Retry-After was honoured").unwrap().text, "ok");
}

#[tokio::test]
async fn server_errors_are_retried_a_bounded_number_of_times() {
    let server = MockServer::start().await;
    Mock::given(method("POST"))
        .respond_with(ResponseTemplate::new(503).set_body_string("overloaded"))
        .expect(3)
        .mount(&server)
        .await;
    let mut c = config(&server);
    c.max_retries = 2;
    let err = OpenAiClient::new(c).unwrap().complete(&request()).await.unwrap_err();
    assert!(matches!(err, LlmError::Status { status: 503, .. }), "{err:?}");
    assert!(err.to_string().contains("HTTP 503: overloaded"), "{err}");
}

#[tokio::test]
async fn unauthorized_is_not_retried_and_names_the_key_variable() {
    let server = MockServer::start().await;
    Mock::given(method("POST")).respond_with(ResponseTemplate::new(401)).expect(1).mount(&server).await;
    unsafe { std::env::set_var("ONGRAPH_TEST_KEY_401", "wrong") };
    let mut c = config(&server);
    c.api_key_env = Some("ONGRAPH_TEST_KEY_401".into());
    let err = OpenAiClient::new(c).unwrap().complete(&request()).await.unwrap_err();
    assert!(err.to_string().contains("check the variable ONGRAPH_TEST_KEY_401"), "{err}");
    assert!(!err.to_string().contains("wrong"), "the key itself is never shown");
}

#[tokio::test]
async fn timeout_is_a_clear_error() {
    let server = MockServer::start().await;
    Mock::given(method("POST"))
        .respond_with(ResponseTemplate::new(200).set_body_json(completion("late")).set_delay(Duration::from_secs(3)))
        .mount(&server)
        .await;
    let mut c = config(&server);
    c.timeout = Duration::from_millis(300);
    c.max_retries = 1;
    let err = OpenAiClient::new(c).unwrap().complete(&request()).await.unwrap_err();
    assert!(matches!(err, LlmError::Timeout { attempts: 2, .. }), "{err:?}");
    assert!(err.to_string().ends_with(", on each of 2 attempts"), "{err}");
}

#[tokio::test]
async fn malformed_replies_are_errors() {
    for (body, expect) in [
        ("not json at all", "invalid JSON"),
        (r#"{"choices": []}"#, "no choices"),
        (r#"{"object": "list"}"#, "missing field `choices`"),
    ] {
        let server = MockServer::start().await;
        Mock::given(method("POST")).respond_with(ResponseTemplate::new(200).set_body_string(body)).mount(&server).await;
        let err = OpenAiClient::new(config(&server)).unwrap().complete(&request()).await.unwrap_err();
        assert!(matches!(err, LlmError::Malformed { .. }), "{body}: {err:?}");
        assert!(err.to_string().contains(expect), "{body}: {err}");
    }
}

#[tokio::test]
async fn unreachable_endpoint_is_a_clear_error() {
    let port = std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port();
    let mut c = OpenAiConfig::new(format!("http://127.0.0.1:{port}/v1"), "m");
    c.max_retries = 1;
    c.backoff = Duration::from_millis(1);
    let err = OpenAiClient::new(c).unwrap().complete(&request()).await.unwrap_err();
    assert!(matches!(err, LlmError::Unreachable { .. }), "{err:?}");
    assert!(err.to_string().starts_with(&format!("cannot reach the LLM endpoint http://127.0.0.1:{port}/v1")), "{err}");
}

#[test]
fn unset_key_variable_is_a_config_error() {
    let mut c = OpenAiConfig::new("http://127.0.0.1:9/v1", "m");
    c.api_key_env = Some("ONGRAPH_TEST_SURELY_UNSET".into());
    let err = OpenAiClient::new(c).err().unwrap();
    assert_eq!(err.to_string(), "the API key variable ONGRAPH_TEST_SURELY_UNSET is not set");
}

#[tokio::test]
async fn embeddings_come_back_in_input_order() {
    let server = MockServer::start().await;
    Mock::given(method("POST"))
        .and(path("/v1/embeddings"))
        .and(body_partial_json(json!({"model": "test-model", "input": ["a", "b"]})))
        .respond_with(ResponseTemplate::new(200).set_body_json(json!({
            "data": [{"index": 1, "embedding": [0.0, 1.0]}, {"index": 0, "embedding": [1.0, 0.0]}]
        })))
        .mount(&server)
        .await;
    let client = OpenAiClient::new(config(&server)).unwrap();
    let got = client.embed(&["a".to_string(), "b".to_string()]).await.unwrap();
    assert_eq!(got, vec![vec![1.0, 0.0], vec![0.0, 1.0]]);
}

/// Whether the JSON body has a field (wiremock matches what is there, not what is missing).
struct HasField(&'static str);

impl wiremock::Match for HasField {
    fn matches(&self, request: &wiremock::Request) -> bool {
        serde_json::from_slice::<serde_json::Value>(&request.body).is_ok_and(|b| b.get(self.0).is_some())
    }
}

/// A server that enforces what OpenAI's reasoning models do: `max_tokens` and any temperature
/// are refused with HTTP 400. The client learns both, once, and every later call goes straight.
#[tokio::test]
async fn a_reasoning_endpoint_that_refuses_max_tokens_and_temperature_is_learnt_once() {
    let server = MockServer::start().await;
    Mock::given(method("POST"))
        .and(HasField("max_tokens"))
        .respond_with(ResponseTemplate::new(400).set_body_json(json!({"error": {
            "message": "Unsupported parameter: 'max_tokens' is not supported with this model. Use 'max_completion_tokens' instead.",
            "type": "invalid_request_error", "param": "max_tokens", "code": "unsupported_parameter"}})))
        .expect(1)
        .mount(&server)
        .await;
    Mock::given(method("POST"))
        .and(HasField("temperature"))
        .respond_with(ResponseTemplate::new(400).set_body_json(json!({"error": {
            "message": "Unsupported value: 'temperature' does not support 0.4 with this model. Only the default (1) value is supported.",
            "type": "invalid_request_error", "param": "temperature", "code": "unsupported_value"}})))
        .expect(1)
        .mount(&server)
        .await;
    let mut body = completion("{Yes}. {Australia}");
    body["choices"][0]["message"]["reasoning_content"] = json!("Canberra is the capital of Australia.");
    body["usage"]["completion_tokens_details"] = json!({"reasoning_tokens": 5});
    Mock::given(method("POST"))
        .and(HasField("max_completion_tokens"))
        .respond_with(ResponseTemplate::new(200).set_body_json(body))
        .expect(3)
        .mount(&server)
        .await;
    let client = OpenAiClient::new(config(&server)).unwrap();
    let first = client.complete(&request()).await.unwrap();
    assert_eq!(first.text, "{Yes}. {Australia}");
    assert_eq!(first.reasoning.as_deref(), Some("Canberra is the capital of Australia."));
    assert_eq!((first.usage.completion_tokens, first.usage.reasoning_tokens), (7, 5));
    for _ in 0..2 {
        client.complete(&request()).await.unwrap();
    }
    // Seen reasoning, the client gives the model a larger budget.
    let requests = server.received_requests().await.unwrap();
    let last: serde_json::Value = serde_json::from_slice(&requests.last().unwrap().body).unwrap();
    assert_eq!(last["max_completion_tokens"], json!(4096), "{last}");
    assert!(last.get("temperature").is_none() && last.get("max_tokens").is_none(), "{last}");
    assert_eq!(requests.len(), 5, "two refusals, then three calls that go straight");
}

/// Told which parameter to use, the client does not second-guess the config: a refusal is an
/// error that says what the server said.
#[tokio::test]
async fn a_configured_token_parameter_is_kept_and_a_refusal_reported() {
    let server = MockServer::start().await;
    Mock::given(method("POST"))
        .and(HasField("max_tokens"))
        .respond_with(
            ResponseTemplate::new(400)
                .set_body_string("Unsupported parameter: 'max_tokens'. Use 'max_completion_tokens' instead."),
        )
        .expect(1)
        .mount(&server)
        .await;
    let mut c = config(&server);
    c.token_limit_param = Some(TokenLimitParam::MaxTokens);
    let err = OpenAiClient::new(c).unwrap().complete(&request()).await.unwrap_err();
    assert!(err.to_string().contains("HTTP 400") && err.to_string().contains("max_completion_tokens"), "{err}");
}

/// A think block in the text is reasoning, through the driver into the trace: the verdict and
/// the answer are read from outside it.
#[tokio::test]
async fn a_think_block_is_never_parsed_for_the_answer() {
    use ongraph::engine::{MethodId, Run, Settings, Topics};
    use ongraph::kg::KnowledgeGraph;
    use ongraph::testing::driver::Driver;
    use std::sync::Arc;
    let server = MockServer::start().await;
    Mock::given(method("POST"))
        .respond_with(ResponseTemplate::new(200).set_body_json(completion(
            "<think>Maybe {No}; the answer could be {Canberra}.</think>\n{Yes}. The answer is {Australia}.",
        )))
        .mount(&server)
        .await;
    let kg: Arc<dyn KnowledgeGraph> = Arc::new(ongraph::testing::kg::demo_graph());
    let llm = Arc::new(OpenAiClient::new(config(&server)).unwrap());
    let driver = Driver::new(kg.clone(), llm);
    let settings = Settings { method: MethodId::IO, ..Settings::default() };
    let mut run = Run::new(
        "Which country is Canberra the capital of?",
        Topics::Extract,
        settings,
        Arc::new(ongraph::engine::builtin_prompts()),
        kg.profile().clone(),
        kg.name(),
    )
    .unwrap();
    driver.run(&mut run, |_, _| {}).await.unwrap();
    assert_eq!(run.answer().unwrap().answers, vec!["Australia"]);
    let call = &run.trace().iter().flat_map(|e| &e.calls).next().unwrap().clone();
    assert_eq!(call.reply, "{Yes}. The answer is {Australia}.");
    assert_eq!(call.reasoning.as_deref(), Some("Maybe {No}; the answer could be {Canberra}."));
}

/// A chat server that takes `response_format` the way `accepts` says, recording every body.
struct FormatServer {
    accepts: fn(&serde_json::Value) -> Result<(), (u16, &'static str)>,
    bodies: std::sync::Arc<std::sync::Mutex<Vec<serde_json::Value>>>,
}

impl wiremock::Respond for FormatServer {
    fn respond(&self, request: &wiremock::Request) -> ResponseTemplate {
        let body: serde_json::Value = serde_json::from_slice(&request.body).unwrap_or_default();
        self.bodies.lock().unwrap().push(body.clone());
        match (self.accepts)(&body) {
            Ok(()) => {
                ResponseTemplate::new(200).set_body_json(completion(r#"{"sufficient": true, "answer": ["ALP"]}"#))
            }
            Err((status, message)) => ResponseTemplate::new(status).set_body_string(message),
        }
    }
}

async fn format_server(
    accepts: fn(&serde_json::Value) -> Result<(), (u16, &'static str)>,
) -> (MockServer, std::sync::Arc<std::sync::Mutex<Vec<serde_json::Value>>>) {
    let server = MockServer::start().await;
    let bodies = std::sync::Arc::new(std::sync::Mutex::new(Vec::new()));
    Mock::given(method("POST"))
        .and(path("/v1/chat/completions"))
        .respond_with(FormatServer { accepts, bodies: bodies.clone() })
        .mount(&server)
        .await;
    (server, bodies)
}

fn structured_request() -> ChatRequest {
    ChatRequest {
        schema: Some(ongraph::llm::ReplySchema {
            name: "verdict".into(),
            schema: json!({"type": "object", "properties": {"sufficient": {"type": "boolean"}}, "required": ["sufficient"]}),
            ..Default::default()
        }),
        ..request()
    }
}

fn format_type(body: &serde_json::Value) -> Option<&str> {
    body.get("response_format").and_then(|f| f["type"].as_str())
}

#[tokio::test]
async fn structured_replies_use_json_schema_where_the_server_takes_it() {
    // OpenAI, vLLM, Ollama, llama-server.
    let (server, bodies) = format_server(|_| Ok(())).await;
    let client = OpenAiClient::new(config(&server)).unwrap();
    let got = client.complete(&structured_request()).await.unwrap();
    assert_eq!(got.mode, ReplyMode::JsonSchema);
    assert!(got.notes.is_empty(), "{:?}", got.notes);
    let sent = bodies.lock().unwrap()[0].clone();
    assert_eq!(sent["response_format"]["type"], "json_schema");
    assert_eq!(sent["response_format"]["json_schema"]["name"], "verdict");
    assert_eq!(sent["response_format"]["json_schema"]["strict"], true);
    assert_eq!(sent["response_format"]["json_schema"]["schema"]["required"], json!(["sufficient"]));
    // A request without a schema is free text.
    let got = client.complete(&request()).await.unwrap();
    assert_eq!(got.mode, ReplyMode::FreeText);
    assert_eq!(format_type(&bodies.lock().unwrap()[1]), None);
}

/// A client of `server` that remembers what it learns in `dir`, as a new process would.
fn remembering(server: &MockServer, dir: &std::path::Path) -> OpenAiClient {
    let mut c = config(server);
    c.memory = Some(EndpointMemory::at(dir.join("endpoints.json")));
    OpenAiClient::new(c).unwrap()
}

/// One schema a server could not take (too large an enum) lowers this run's requests, not
/// every later run's (found by a review).
#[tokio::test]
async fn a_refusal_of_one_schema_is_not_remembered_for_later_runs() {
    let (server, bodies) = format_server(|b| match format_type(b) {
        Some("json_schema") => Err((
            400,
            r#"{"error":{"message":"Invalid schema for response_format 'reply': enum has too many values"}}"#,
        )),
        _ => Ok(()),
    })
    .await;
    let dir = tempfile::tempdir().unwrap();
    let first = remembering(&server, dir.path()).complete(&structured_request()).await.unwrap();
    assert_eq!(first.mode, ReplyMode::JsonObject);
    assert!(!first.notes.iter().any(|n| n.contains("remembered")), "{:?}", first.notes);
    remembering(&server, dir.path()).complete(&structured_request()).await.unwrap();
    let sent = bodies.lock().unwrap().clone();
    let types: Vec<Option<&str>> = sent.iter().map(format_type).collect();
    assert_eq!(types, vec![Some("json_schema"), Some("json_object"), Some("json_schema"), Some("json_object")]);
}

#[tokio::test]
async fn llama_cpp_python_refuses_json_schema_and_gets_json_object_from_then_on() {
    // llama-cpp-python's server: `json_schema` fails its request validation with HTTP 500.
    let (server, bodies) = format_server(|b| match format_type(b) {
        Some("json_schema") => Err((500, r#"{"error":{"message":"1 validation error: ('body', 'response_format', 'type') Input should be 'text' or 'json_object'"}}"#)),
        _ => Ok(()),
    })
    .await;
    let client = OpenAiClient::new(config(&server)).unwrap();
    let first = client.complete(&structured_request()).await.unwrap();
    assert_eq!(first.mode, ReplyMode::JsonObject);
    assert!(first.notes.iter().any(|n| n.contains("refused structured replies as json_schema")), "{:?}", first.notes);
    let second = client.complete(&structured_request()).await.unwrap();
    assert_eq!(second.mode, ReplyMode::JsonObject);
    assert!(second.notes.is_empty(), "remembered: {:?}", second.notes);
    let sent = bodies.lock().unwrap().clone();
    let types: Vec<Option<&str>> = sent.iter().map(format_type).collect();
    // The refusal is not retried as a server fault, and never asked again.
    assert_eq!(types, vec![Some("json_schema"), Some("json_object"), Some("json_object")]);

    // Remembered between runs: the next process's client asks as json_object at once.
    let dir = tempfile::tempdir().unwrap();
    let first = remembering(&server, dir.path()).complete(&structured_request()).await.unwrap();
    assert!(first.notes.iter().any(|n| n.contains("json_object, remembered for later runs")), "{:?}", first.notes);
    let later = remembering(&server, dir.path()).complete(&structured_request()).await.unwrap();
    assert_eq!(later.mode, ReplyMode::JsonObject);
    assert!(later.notes.is_empty(), "not refused again: {:?}", later.notes);
    let sent = bodies.lock().unwrap().clone();
    let types: Vec<Option<&str>> = sent[3..].iter().map(format_type).collect();
    assert_eq!(types, vec![Some("json_schema"), Some("json_object"), Some("json_object")]);
    assert_eq!(sent[1]["response_format"]["schema"]["required"], json!(["sufficient"]));
}

#[tokio::test]
async fn a_server_that_takes_no_response_format_gets_free_text_with_a_note() {
    let (server, bodies) = format_server(|b| match format_type(b) {
        Some(_) => Err((400, r#"{"error":{"message":"response_format is not supported by this model"}}"#)),
        None => Ok(()),
    })
    .await;
    let client = OpenAiClient::new(config(&server)).unwrap();
    let first = client.complete(&structured_request()).await.unwrap();
    assert_eq!(first.mode, ReplyMode::FreeText);
    assert_eq!(first.notes.len(), 2, "{:?}", first.notes);
    assert!(first.notes[1].contains("asked again as free text"), "{:?}", first.notes);
    let second = client.complete(&structured_request()).await.unwrap();
    assert_eq!((second.mode, second.notes.len()), (ReplyMode::FreeText, 0));
    let types: Vec<Option<String>> =
        bodies.lock().unwrap().iter().map(|b| format_type(b).map(str::to_string)).collect();
    assert_eq!(types, vec![Some("json_schema".into()), Some("json_object".into()), None, None]);
}

#[tokio::test]
async fn structured_off_sends_no_format_and_other_refusals_stay_errors() {
    let (server, bodies) = format_server(|_| Ok(())).await;
    let mut c = config(&server);
    c.structured = StructuredMode::Off;
    let got = OpenAiClient::new(c).unwrap().complete(&structured_request()).await.unwrap();
    assert_eq!(got.mode, ReplyMode::FreeText);
    assert_eq!(format_type(&bodies.lock().unwrap()[0]), None);
    // A 400 about something else is the error it is, not a reason to drop the format.
    let (server, bodies) = format_server(|_| Err((400, "context length exceeded"))).await;
    let err = OpenAiClient::new(config(&server)).unwrap().complete(&structured_request()).await.unwrap_err();
    assert!(matches!(err, LlmError::Status { status: 400, .. }), "{err}");
    assert_eq!(bodies.lock().unwrap().len(), 1);
}

#[tokio::test]
async fn a_huge_retry_after_is_capped_never_a_panic() {
    // Regression: `Retry-After: 1e20` panicked converting float seconds to a Duration.
    for value in ["1e20", "18446744073709551615", "-5", "soon"] {
        let server = MockServer::start().await;
        Mock::given(method("POST"))
            .respond_with(ResponseTemplate::new(429).insert_header("retry-after", value).set_body_string("slow down"))
            .up_to_n_times(1)
            .mount(&server)
            .await;
        Mock::given(method("POST"))
            .respond_with(ResponseTemplate::new(200).set_body_json(completion("ok")))
            .mount(&server)
            .await;
        let mut c = config(&server);
        // The wait is capped by the config, whatever the header says.
        c.max_retry_after = Duration::from_millis(50);
        let client = OpenAiClient::new(c).unwrap();
        let got = tokio::time::timeout(Duration::from_secs(20), client.complete(&request())).await;
        assert_eq!(got.expect("the wait was capped").unwrap().text, "ok", "{value}");
    }
}

#[tokio::test]
async fn a_server_echoing_the_key_never_gets_it_printed() {
    let server = MockServer::start().await;
    unsafe { std::env::set_var("ONGRAPH_TEST_KEY_ECHO", "sk-secret-4242") };
    Mock::given(method("POST"))
        .respond_with(
            ResponseTemplate::new(400)
                .set_body_string(r#"{"error": "bad request", "headers": {"authorization": "Bearer sk-secret-4242"}, "key": "sk-secret-4242"}"#),
        )
        .mount(&server)
        .await;
    let mut c = config(&server);
    c.api_key_env = Some("ONGRAPH_TEST_KEY_ECHO".into());
    let err = OpenAiClient::new(c).unwrap().complete(&request()).await.unwrap_err().to_string();
    assert!(!err.contains("sk-secret-4242"), "{err}");
    assert!(err.contains("Bearer [redacted]") && err.contains("[redacted]"), "{err}");
}

#[tokio::test]
async fn a_reply_beyond_the_size_limit_is_a_clear_error() {
    let server = MockServer::start().await;
    let huge = "{x} ".repeat(100_000);
    Mock::given(method("POST"))
        .respond_with(ResponseTemplate::new(200).set_body_json(completion(&huge)))
        .mount(&server)
        .await;
    let mut c = config(&server);
    c.max_reply_bytes = 64 * 1024;
    let err = OpenAiClient::new(c).unwrap().complete(&request()).await.unwrap_err();
    assert!(err.to_string().contains("larger than 64 KB"), "{err}");
    // Under the limit it is read.
    let mut c = config(&server);
    c.max_reply_bytes = 1 << 20;
    assert_eq!(OpenAiClient::new(c).unwrap().complete(&request()).await.unwrap().text.len(), huge.len());
}

#[tokio::test]
async fn a_server_that_does_not_enforce_the_schema_is_said_once_and_a_cut_off_reply_is_not_taken_for_it() {
    // A cut off reply first: an enforcing server cuts off too, so it says nothing.
    let server = MockServer::start().await;
    let mut cut = completion(r#"{"suffic"#);
    cut["choices"][0]["finish_reason"] = json!("length");
    Mock::given(method("POST"))
        .and(path("/v1/chat/completions"))
        .respond_with(ResponseTemplate::new(200).set_body_json(cut))
        .up_to_n_times(1)
        .mount(&server)
        .await;
    // Then replies that ignore the schema (prose, then a wrong type).
    Mock::given(method("POST"))
        .and(path("/v1/chat/completions"))
        .respond_with(ResponseTemplate::new(200).set_body_json(completion("Yes, it is sufficient.")))
        .up_to_n_times(1)
        .mount(&server)
        .await;
    Mock::given(method("POST"))
        .and(path("/v1/chat/completions"))
        .respond_with(ResponseTemplate::new(200).set_body_json(completion(r#"{"sufficient": "yes"}"#)))
        .mount(&server)
        .await;
    let client = OpenAiClient::new(config(&server)).unwrap();
    let first = client.complete(&structured_request()).await.unwrap();
    assert!(first.notes.iter().all(|n| !n.contains("does not enforce")), "{:?}", first.notes);
    let second = client.complete(&structured_request()).await.unwrap();
    assert!(
        second.notes.iter().any(|n| n.contains("took the JSON schema as json_schema but does not enforce it")),
        "{:?}",
        second.notes
    );
    let third = client.complete(&structured_request()).await.unwrap();
    assert_eq!(third.text, r#"{"sufficient": "yes"}"#, "the reply is still returned, to be read as far as it goes");
    assert!(third.notes.iter().all(|n| !n.contains("does not enforce")), "said once per endpoint: {:?}", third.notes);
}

/// Every request carries a seed drawn from its content: the same request the same seed, a
/// deliberate second sample or another prompt another.
#[tokio::test]
async fn every_request_carries_a_seed_of_its_own() {
    let (server, bodies) = format_server(|_| Ok(())).await;
    let client = OpenAiClient::new(config(&server)).unwrap();
    let second_sample = ChatRequest { sample: 1, ..request() };
    for r in [request(), structured_request(), request(), second_sample.clone()] {
        client.complete(&r).await.unwrap();
    }
    let seeds: Vec<serde_json::Value> = bodies.lock().unwrap().iter().map(|b| b["seed"].clone()).collect();
    assert_eq!(seeds[0], json!(request().seed()), "{seeds:?}");
    assert_eq!(seeds[2], seeds[0], "the same request, the same seed");
    assert_eq!(seeds[3], json!(second_sample.seed()));
    assert!(seeds[1] != seeds[0] && seeds[3] != seeds[0], "{seeds:?}");
}

/// A server that refuses the field (a pydantic server's 422 names it in `loc`) is asked again
/// without it, in the same reply mode, and never sent it again; a configured `send_seed = false`
/// never sends it.
#[tokio::test]
async fn a_server_that_refuses_the_seed_is_asked_without_it_from_then_on() {
    let (server, bodies) = format_server(|b| match b.get("seed") {
        Some(_) => Err((
            422,
            r#"{"detail":[{"type":"extra_forbidden","loc":["body","seed"],"msg":"Extra inputs are not permitted"}]}"#,
        )),
        None => Ok(()),
    })
    .await;
    let client = OpenAiClient::new(config(&server)).unwrap();
    for _ in 0..2 {
        let got = client.complete(&structured_request()).await.unwrap();
        assert_eq!(got.mode, ReplyMode::JsonSchema, "a refused seed is not a refused format");
    }
    let sent = bodies.lock().unwrap().clone();
    let seeded: Vec<bool> = sent.iter().map(|b| b.get("seed").is_some()).collect();
    assert_eq!(seeded, vec![true, false, false]);
    assert!(sent.iter().all(|b| format_type(b) == Some("json_schema")), "{sent:?}");

    let (server, bodies) = format_server(|_| Ok(())).await;
    let mut c = config(&server);
    c.send_seed = Some(false);
    OpenAiClient::new(c).unwrap().complete(&request()).await.unwrap();
    assert_eq!(bodies.lock().unwrap()[0].get("seed"), None);
}

/// A refusal that echoes the prompt holds the bare word without naming the field: the seed is
/// kept (and the error reported, as any other 400).
#[tokio::test]
async fn a_prompt_echoed_in_a_refusal_does_not_drop_the_seed() {
    let (server, bodies) = format_server(|b| match b["messages"][1]["content"].as_str() {
        Some(p) if p.contains("seed") => {
            Err((400, r#"{"error":{"message":"context length exceeded: Q: which seed bank?"}}"#))
        }
        _ => Ok(()),
    })
    .await;
    let client = OpenAiClient::new(config(&server)).unwrap();
    let seed_bank = ChatRequest { prompt: "Q: which seed bank?".into(), ..request() };
    assert!(matches!(client.complete(&seed_bank).await, Err(LlmError::Status { status: 400, .. })));
    client.complete(&request()).await.unwrap();
    let sent = bodies.lock().unwrap().clone();
    assert_eq!(sent.len(), 2, "the refusal is not asked again");
    assert!(sent.iter().all(|b| b.get("seed").is_some()), "{sent:?}");
}

/// Calls in flight together when the server refuses the seed each go again without it (found
/// by a review: the second refusal, arriving after the first had taught the client, was taken
/// for a refusal of the reply format and lowered it for the rest of the run). Azure's wording
/// names the field bare.
#[tokio::test]
async fn calls_in_flight_when_the_seed_is_refused_each_go_again_without_it() {
    let server = MockServer::start().await;
    let bodies = std::sync::Arc::new(std::sync::Mutex::new(Vec::<serde_json::Value>::new()));
    let seen = bodies.clone();
    Mock::given(method("POST"))
        .respond_with(move |request: &wiremock::Request| {
            let body: serde_json::Value = serde_json::from_slice(&request.body).unwrap_or_default();
            seen.lock().unwrap().push(body.clone());
            if body.get("seed").is_some() {
                // Slow, so both calls are sent before either refusal is read.
                let refusal = r#"{"error":{"message":"Unrecognized request argument supplied: seed","type":"invalid_request_error"}}"#;
                ResponseTemplate::new(422).set_body_string(refusal).set_delay(Duration::from_millis(300))
            } else {
                ResponseTemplate::new(200).set_body_json(completion(r#"{"sufficient": true}"#))
            }
        })
        .mount(&server)
        .await;
    let client = OpenAiClient::new(config(&server)).unwrap();
    let request = structured_request();
    let (a, b) = tokio::join!(client.complete(&request), client.complete(&request));
    for got in [a.unwrap(), b.unwrap()] {
        assert_eq!(got.mode, ReplyMode::JsonSchema, "{:?}", got.notes);
        assert!(got.notes.iter().any(|n| n.contains("not reproducible")), "{:?}", got.notes);
    }
    let later = client.complete(&structured_request()).await.unwrap();
    assert!(later.notes.is_empty(), "{:?}", later.notes);
    let seeded: Vec<bool> = bodies.lock().unwrap().iter().map(|b| b.get("seed").is_some()).collect();
    assert_eq!(seeded, vec![true, true, false, false, false]);
}
