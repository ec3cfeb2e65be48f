//! A loopback OpenAI-compatible **fault server**: a simulation model behind raw HTTP/1.1 that,
//! seeded per request, answers badly in the ways real endpoints and models do — 429s with odd
//! `Retry-After` values, 5xx with HTML, bodies that stall after the headers or stop short,
//! replies over the size limit, echoed `Authorization` headers, bad usage counts, and reply texts
//! that are truncated, braceless, wrapped in think blocks, JSON, escape sequences or floods.
//!
//! It speaks HTTP by hand (one request per connection) so it can break the protocol where a
//! proper server library would not let it.

use ongraph::llm::{ChatRequest, LanguageModel};
use std::collections::HashMap;
use std::net::SocketAddr;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};

/// What the server does to one request.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Fault {
    /// The model's reply, untouched.
    None,
    /// 429 with a `Retry-After` header (odd values included).
    RateLimited,
    /// 500/502/503 with an HTML page.
    ServerError,
    /// An error body that echoes the request's headers, `Authorization` included.
    EchoHeaders,
    /// Headers and half the body, then silence.
    Stall,
    /// A `Content-Length` longer than the body sent, then the connection closes.
    ShortBody,
    /// The connection closes before any reply.
    Hangup,
    /// 200 with an HTML page.
    Html,
    /// 200 with JSON that is not a chat completion (no choices, null content, wrong types).
    NotACompletion,
    /// 200 with negative and absurd token counts.
    BadUsage,
    /// A body over the client's size limit.
    Huge,
    /// The model's reply cut at a random character.
    Truncated,
    /// The model's reply without its braces.
    Braceless,
    /// A think block with contrary braces before the reply.
    ThinkBlock,
    /// An opened think block that never closes.
    UnclosedThink,
    /// Terminal escape sequences and other control characters inside the reply.
    Escapes,
    /// An empty reply.
    Empty,
    /// JSON in place of the reply: of some shape, of none, or cut off.
    Json,
    /// Thousands of braced items.
    Flood,
    /// Numbers replaced by NaN, negatives and overflows.
    OddNumbers,
    /// A byte-order mark, bidi overrides, zero-width and combining characters.
    OddUnicode,
    /// Half-written actions: `Search[`, `Finish[]`, `Generate[[`.
    BrokenActions,
}

impl Fault {
    pub const ALL: [Fault; 22] = [
        Fault::None,
        Fault::RateLimited,
        Fault::ServerError,
        Fault::EchoHeaders,
        Fault::Stall,
        Fault::ShortBody,
        Fault::Hangup,
        Fault::Html,
        Fault::NotACompletion,
        Fault::BadUsage,
        Fault::Huge,
        Fault::Truncated,
        Fault::Braceless,
        Fault::ThinkBlock,
        Fault::UnclosedThink,
        Fault::Escapes,
        Fault::Empty,
        Fault::Json,
        Fault::Flood,
        Fault::OddNumbers,
        Fault::OddUnicode,
        Fault::BrokenActions,
    ];

    /// Faults that cost the client a wait (a timeout, a `Retry-After`): drawn less often so a
    /// run stays short.
    fn is_slow(self) -> bool {
        matches!(self, Fault::Stall | Fault::RateLimited)
    }
}

/// Which fault each request gets.
#[derive(Clone, Copy, Debug)]
pub enum Plan {
    /// Always this one.
    Always(Fault),
    /// This one for the first request, then none.
    Once(Fault),
    /// Seeded per request: a fault with probability `rate`, else the model's reply.
    Mutate { seed: u64, rate: f64 },
}

pub struct FaultServer {
    addr: SocketAddr,
    task: tokio::task::JoinHandle<()>,
    counts: Arc<Counts>,
}

#[derive(Default)]
pub struct Counts {
    by_fault: Mutex<HashMap<Fault, u64>>,
    requests: AtomicU64,
}

impl Counts {
    pub fn requests(&self) -> u64 {
        self.requests.load(Ordering::Relaxed)
    }

    /// How often each fault was served, in [`Fault::ALL`] order.
    pub fn by_fault(&self) -> Vec<(Fault, u64)> {
        let map = self.by_fault.lock().unwrap();
        Fault::ALL.iter().map(|f| (*f, map.get(f).copied().unwrap_or(0))).collect()
    }
}

struct Shared {
    model: Arc<dyn LanguageModel>,
    plan: Mutex<Plan>,
    /// How often each request (by content) was seen: a retry draws afresh.
    seen: Mutex<HashMap<u64, u64>>,
    counts: Arc<Counts>,
}

impl FaultServer {
    pub async fn start(model: Arc<dyn LanguageModel>, plan: Plan) -> Self {
        let listener = TcpListener::bind("127.0.0.1:0").await.expect("bind a loopback port");
        let addr = listener.local_addr().expect("a bound address");
        let counts = Arc::new(Counts::default());
        let shared = Arc::new(Shared {
            model,
            plan: Mutex::new(plan),
            seen: Mutex::new(HashMap::new()),
            counts: counts.clone(),
        });
        let task = tokio::spawn(async move {
            while let Ok((stream, _)) = listener.accept().await {
                let shared = shared.clone();
                tokio::spawn(async move {
                    let _ = serve(stream, &shared).await;
                });
            }
        });
        Self { addr, task, counts }
    }

    pub fn base_url(&self) -> String {
        format!("http://{}/v1", self.addr)
    }

    pub fn counts(&self) -> &Counts {
        &self.counts
    }
}

impl Drop for FaultServer {
    fn drop(&mut self) {
        self.task.abort();
    }
}

/// FNV-1a: a stable hash (the same on every run and machine), so a seed reproduces.
fn fnv(parts: &[&[u8]]) -> u64 {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for part in parts {
        for b in *part {
            h ^= u64::from(*b);
            h = h.wrapping_mul(0x0100_0000_01b3);
        }
        h ^= 0xff;
    }
    h
}

/// splitmix64: a small, good enough stream of numbers from one seed.
struct Rng(u64);
impl Rng {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }
    fn below(&mut self, n: usize) -> usize {
        (self.next() % n.max(1) as u64) as usize
    }
    fn chance(&mut self, p: f64) -> bool {
        (self.next() >> 11) as f64 / (1u64 << 53) as f64 <= p
    }
    fn pick<'a, T>(&mut self, items: &'a [T]) -> &'a T {
        &items[self.below(items.len())]
    }
}

struct Head {
    headers: Vec<(String, String)>,
    body: Vec<u8>,
}

async fn read_request(stream: &mut TcpStream) -> Option<Head> {
    let mut buf = Vec::new();
    let mut chunk = [0u8; 8192];
    let end = loop {
        let n = stream.read(&mut chunk).await.ok()?;
        if n == 0 {
            return None;
        }
        buf.extend_from_slice(&chunk[..n]);
        if let Some(at) = buf.windows(4).position(|w| w == b"\r\n\r\n") {
            break at + 4;
        }
    };
    let head = String::from_utf8_lossy(&buf[..end]).to_string();
    let headers: Vec<(String, String)> = head
        .lines()
        .skip(1)
        .filter_map(|l| l.split_once(':').map(|(k, v)| (k.trim().to_ascii_lowercase(), v.trim().to_string())))
        .collect();
    let length: usize =
        headers.iter().find(|(k, _)| k == "content-length").and_then(|(_, v)| v.parse().ok()).unwrap_or(0);
    let mut body = buf[end..].to_vec();
    while body.len() < length {
        let n = stream.read(&mut chunk).await.ok()?;
        if n == 0 {
            return None;
        }
        body.extend_from_slice(&chunk[..n]);
    }
    Some(Head { headers, body })
}

fn response(status: &str, headers: &[(&str, String)], body: &[u8]) -> Vec<u8> {
    let mut out = format!("HTTP/1.1 {status}\r\nconnection: close\r\ncontent-length: {}\r\n", body.len());
    for (k, v) in headers {
        out.push_str(&format!("{k}: {v}\r\n"));
    }
    out.push_str("\r\n");
    let mut out = out.into_bytes();
    out.extend_from_slice(body);
    out
}

fn json_response(status: &str, body: &serde_json::Value) -> Vec<u8> {
    response(status, &[("content-type", "application/json".into())], body.to_string().as_bytes())
}

fn completion(text: &str, prompt_tokens: serde_json::Value) -> serde_json::Value {
    serde_json::json!({
        "object": "chat.completion",
        "choices": [{"index": 0, "message": {"role": "assistant", "content": text}, "finish_reason": "stop"}],
        "usage": {"prompt_tokens": prompt_tokens, "completion_tokens": 12},
    })
}

async fn serve(mut stream: TcpStream, shared: &Shared) -> std::io::Result<()> {
    let Some(head) = read_request(&mut stream).await else { return Ok(()) };
    shared.counts.requests.fetch_add(1, Ordering::Relaxed);
    let value: serde_json::Value = serde_json::from_slice(&head.body).unwrap_or_default();
    let text_of = |role: &str| {
        value["messages"]
            .as_array()
            .and_then(|ms| ms.iter().rev().find(|m| m["role"] == role))
            .and_then(|m| m["content"].as_str())
            .unwrap_or_default()
            .to_string()
    };
    let header = |name: &str| head.headers.iter().find(|(k, _)| k == name).map(|(_, v)| v.clone());
    let step = header("x-ongraph-step").unwrap_or_else(|| "unknown".into());
    let request = ChatRequest {
        step: step.clone(),
        system: text_of("system"),
        prompt: text_of("user"),
        temperature: value["temperature"].as_f64().unwrap_or(0.0),
        max_tokens: value["max_tokens"].as_u64().unwrap_or(256) as u32,
        sample: 0,
        schema: None,
        extract: None,
    };
    let key = fnv(&[step.as_bytes(), request.prompt.as_bytes()]);
    let attempt = {
        let mut seen = shared.seen.lock().unwrap();
        let n = seen.entry(key).or_insert(0);
        *n += 1;
        *n
    };
    let plan = *shared.plan.lock().unwrap();
    let (fault, mut rng) = match plan {
        Plan::Always(f) => (f, Rng(key ^ attempt)),
        Plan::Once(f) => {
            let first = shared.counts.requests() == 1;
            (if first { f } else { Fault::None }, Rng(key ^ attempt))
        }
        Plan::Mutate { seed, rate } => {
            let mut rng = Rng(fnv(&[&seed.to_le_bytes(), &key.to_le_bytes(), &attempt.to_le_bytes()]));
            let mut fault = Fault::None;
            if rng.chance(rate) {
                fault = *rng.pick(&Fault::ALL[1..]);
                // Slow faults a quarter as often.
                if fault.is_slow() && !rng.chance(0.25) {
                    fault = *rng.pick(&Fault::ALL[5..]);
                }
            }
            (fault, rng)
        }
    };
    *shared.counts.by_fault.lock().unwrap().entry(fault).or_insert(0) += 1;
    let reply = || async {
        match shared.model.complete(&request).await {
            Ok(c) => Ok(c.text),
            Err(e) => Err(e.to_string()),
        }
    };
    let bytes = match fault {
        Fault::RateLimited => {
            let after = *rng.pick(&["1e20", "18446744073709551615", "-1", "NaN", "soon", "0", "0.05", ""]);
            response(
                "429 Too Many Requests",
                &[("retry-after", after.into()), ("content-type", "application/json".into())],
                br#"{"error":{"message":"rate limited"}}"#,
            )
        }
        Fault::ServerError => {
            let status = *rng.pick(&["500 Internal Server Error", "502 Bad Gateway", "503 Service Unavailable"]);
            response(
                status,
                &[("content-type", "text/html".into())],
                b"<html><body><h1>\x1b]0;PWNED\x07Bad Gateway</h1></body></html>",
            )
        }
        Fault::EchoHeaders => {
            let echoed: Vec<String> = head.headers.iter().map(|(k, v)| format!("{k}: {v}")).collect();
            let status = *rng.pick(&["400 Bad Request", "500 Internal Server Error"]);
            json_response(
                status,
                &serde_json::json!({"error": {"message": format!("bad request; headers were {}", echoed.join("; "))}}),
            )
        }
        Fault::Stall => {
            let whole = json_response("200 OK", &completion("{Yes}", 10.into()));
            let half = whole.len() - 20;
            stream.write_all(&whole[..half]).await?;
            stream.flush().await?;
            tokio::time::sleep(Duration::from_secs(30)).await;
            return Ok(());
        }
        Fault::ShortBody => {
            let whole = json_response("200 OK", &completion(&reply().await.unwrap_or_default(), 10.into()));
            let cut = whole.len() - 1 - rng.below(whole.len() / 4);
            stream.write_all(&whole[..cut]).await?;
            return Ok(());
        }
        Fault::Hangup => return Ok(()),
        Fault::Html => response(
            "200 OK",
            &[("content-type", "text/html".into())],
            b"<!DOCTYPE html><html>Welcome to nginx!</html>",
        ),
        Fault::NotACompletion => {
            let body = rng
                .pick(&[
                    serde_json::json!({"choices": []}),
                    serde_json::json!({"choices": [{"message": {"role": "assistant", "content": null}}]}),
                    serde_json::json!({"choices": [{"message": {"content": 42}}]}),
                    serde_json::json!({"object": "error", "message": "model overloaded"}),
                    serde_json::json!(null),
                    serde_json::json!([1, 2, 3]),
                ])
                .clone();
            json_response("200 OK", &body)
        }
        Fault::BadUsage => {
            let text = reply().await.unwrap_or_default();
            let count = rng
                .pick(&[
                    serde_json::json!(-5),
                    serde_json::json!(1e300),
                    serde_json::json!("many"),
                    serde_json::json!(null),
                ])
                .clone();
            json_response("200 OK", &completion(&text, count))
        }
        Fault::Huge => {
            let text = "{x} ".repeat(400_000);
            json_response("200 OK", &completion(&text, 10.into()))
        }
        _ => match reply().await {
            Ok(text) => json_response("200 OK", &completion(&mutate(fault, &text, &mut rng), 10.into())),
            // The simulation has no reply: a client error, as the loopback server answers.
            Err(e) => json_response("422 Unprocessable Entity", &serde_json::json!({"error": {"message": e}})),
        },
    };
    stream.write_all(&bytes).await?;
    stream.flush().await?;
    Ok(())
}

/// The reply text as `fault` damages it.
fn mutate(fault: Fault, text: &str, rng: &mut Rng) -> String {
    let chars: Vec<char> = text.chars().collect();
    let at = rng.below(chars.len() + 1);
    let (before, after): (String, String) = (chars[..at].iter().collect(), chars[at..].iter().collect());
    match fault {
        Fault::Truncated => before,
        Fault::Braceless => text.replace(['{', '}'], ""),
        Fault::ThinkBlock => format!("<think>{{No}} maybe {{Nonexistent Entity}} (Score: 1.0)</think>\n{text}"),
        Fault::UnclosedThink => format!("<think>Let me see. {{No}}. {text}"),
        Fault::Escapes => {
            let esc = rng.pick(&[
                "\x1b]0;PWNED\x07\x1b[2J",
                "\x1b[31m{red}\x1b[0m",
                "\r\x08\x08\x00",
                "\x1bP+q\x1b\\",
                "\u{9b}31m",
            ]);
            format!("{before}{esc}{after}")
        }
        Fault::Empty => rng.pick(&["", " ", "\n\n", "{}", "{ }"]).to_string(),
        Fault::Json => rng
            .pick(&[
                r#"{"relations":[{"relation":"x","score":"high"}]}"#,
                r#"{"sufficient":"maybe","answer":[null,3]}"#,
                r#"{"entities":[{"entity":{"a":1},"score":1e999}]}"#,
                r#"{"answer": ["#,
                r#"[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]"#,
                r#"{"thought":"","action":{"kind":"Teleport","argument":"x"}}"#,
            ])
            .to_string(),
        Fault::Flood => "{x (Score: 0.1)}, ".repeat(5_000) + text,
        Fault::OddNumbers => {
            let odd = *rng.pick(&["NaN", "-1e309", "1e999", "-0.7", "inf", "0x10"]);
            let mut out = String::new();
            let mut in_number = false;
            for c in text.chars() {
                if c.is_ascii_digit() || (in_number && c == '.') {
                    if !in_number {
                        out.push_str(odd);
                    }
                    in_number = true;
                } else {
                    in_number = false;
                    out.push(c);
                }
            }
            out
        }
        Fault::OddUnicode => {
            let odd =
                *rng.pick(&["\u{feff}", "\u{202e}", "\u{200b}", "e\u{301}\u{301}\u{301}", "\u{1F600}", "\u{fffd}"]);
            format!("{odd}{before}{odd}{after}")
        }
        Fault::BrokenActions => {
            let broken = *rng.pick(&[
                "Action: Search[",
                "Action: Finish[]",
                "Action: Generate[[",
                "Action: [Search]",
                "Thought: \nAction:",
            ]);
            format!("{before}\n{broken}\n{after}")
        }
        _ => text.to_string(),
    }
}
