//! A loopback OpenAI-compatible server in front of any [`LanguageModel`], with a fixed delay per
//! call: a simulation model (scripted, gold-path) served over real HTTP so wall-time
//! measurements include the client, the connection pool and the engine's concurrency, under a
//! realistic call latency. It binds 127.0.0.1 only and is meant for measurement, not for serving.

use super::openai::STEP_HEADER;
use super::{ChatRequest, LanguageModel};
use http_body_util::{BodyExt, Full};
use hyper::body::{Bytes, Incoming};
use hyper::{Request, Response, StatusCode};
use serde::Deserialize;
use serde_json::json;
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;
use tokio::net::TcpListener;

/// A running server; dropping it stops accepting connections.
pub struct LoopbackServer {
    addr: SocketAddr,
    task: tokio::task::JoinHandle<()>,
}

impl LoopbackServer {
    /// Serves `model` on a free loopback port, answering each call after `latency`.
    pub async fn start(model: Arc<dyn LanguageModel>, latency: Duration) -> std::io::Result<Self> {
        let listener = TcpListener::bind("127.0.0.1:0").await?;
        let addr = listener.local_addr()?;
        let task = tokio::spawn(async move {
            loop {
                let stream = match listener.accept().await {
                    Ok((stream, _)) => stream,
                    Err(e) => {
                        // E.g. out of file descriptors: wait rather than spin.
                        tracing::warn!(error = %e, "loopback server cannot accept");
                        tokio::time::sleep(Duration::from_millis(50)).await;
                        continue;
                    }
                };
                let model = model.clone();
                tokio::spawn(async move {
                    let service = hyper::service::service_fn(move |req| {
                        let model = model.clone();
                        async move { Ok::<_, std::convert::Infallible>(answer(model.as_ref(), req, latency).await) }
                    });
                    let io = hyper_util::rt::TokioIo::new(stream);
                    if let Err(e) = hyper::server::conn::http1::Builder::new().serve_connection(io, service).await {
                        tracing::debug!(error = %e, "loopback connection ended");
                    }
                });
            }
        });
        Ok(Self { addr, task })
    }

    /// The base URL to give an OpenAI-compatible client (`http://127.0.0.1:PORT/v1`).
    pub fn base_url(&self) -> String {
        format!("http://{}/v1", self.addr)
    }
}

impl Drop for LoopbackServer {
    fn drop(&mut self) {
        self.task.abort();
    }
}

#[derive(Deserialize)]
struct Body {
    messages: Vec<Message>,
    #[serde(default)]
    temperature: f64,
    #[serde(default)]
    max_tokens: u32,
}

#[derive(Deserialize)]
struct Message {
    role: String,
    content: String,
}

fn reply(status: StatusCode, body: serde_json::Value) -> Response<Full<Bytes>> {
    let mut response = Response::new(Full::new(Bytes::from(body.to_string())));
    *response.status_mut() = status;
    response
        .headers_mut()
        .insert(hyper::header::CONTENT_TYPE, hyper::header::HeaderValue::from_static("application/json"));
    response
}

fn error(status: StatusCode, message: String) -> Response<Full<Bytes>> {
    reply(status, json!({"error": {"message": message}}))
}

async fn answer(model: &dyn LanguageModel, req: Request<Incoming>, latency: Duration) -> Response<Full<Bytes>> {
    if req.method() != hyper::Method::POST || !req.uri().path().ends_with("/chat/completions") {
        return error(StatusCode::NOT_FOUND, format!("only POST …/chat/completions is served, not {}", req.uri()));
    }
    let step = req.headers().get(STEP_HEADER).and_then(|v| v.to_str().ok()).unwrap_or("unknown").to_string();
    let bytes = match req.into_body().collect().await {
        Ok(b) => b.to_bytes(),
        Err(e) => return error(StatusCode::BAD_REQUEST, format!("cannot read the request: {e}")),
    };
    let body: Body = match serde_json::from_slice(&bytes) {
        Ok(b) => b,
        Err(e) => return error(StatusCode::BAD_REQUEST, format!("not a chat completion request: {e}")),
    };
    let text_of = |role: &str| body.messages.iter().rev().find(|m| m.role == role).map(|m| m.content.as_str());
    let chat = ChatRequest {
        step,
        system: text_of("system").unwrap_or_default().to_string(),
        prompt: text_of("user").unwrap_or_default().to_string(),
        temperature: body.temperature,
        max_tokens: body.max_tokens,
        sample: 0,
        schema: None,
        extract: None,
    };
    tokio::time::sleep(latency).await;
    match model.complete(&chat).await {
        Ok(c) => reply(
            StatusCode::OK,
            json!({
                "object": "chat.completion",
                "choices": [{"index": 0, "message": {"role": "assistant", "content": c.text}, "finish_reason": "stop"}],
                "usage": {"prompt_tokens": c.usage.prompt_tokens, "completion_tokens": c.usage.completion_tokens},
            }),
        ),
        // A client error: the simulation has no reply, and retrying would not give one.
        Err(e) => error(StatusCode::UNPROCESSABLE_ENTITY, e.to_string()),
    }
}
