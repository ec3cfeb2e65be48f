//! A loopback **fault SPARQL endpoint**: raw HTTP/1.1 (one request per connection) that answers
//! every query one hostile way, picked by the first path segment (`/endless/sparql`):
//! replies that never end, that are larger than they should be, that hold millions of
//! solutions, or that drip a byte at a time. Each is a valid start of SPARQL JSON results, so
//! only a limit stops the client.

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::time::Duration;

/// How the endpoint answers.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SparqlFault {
    /// A small valid result (one relation).
    Fine,
    /// A chunked body that never ends (rows after rows).
    Endless,
    /// A body of `BIG_MB` MB of rows, its length declared.
    Big,
    /// The same, its length not declared (read until the connection closes).
    BigUndeclared,
    /// 2 million tiny solutions (about 70 MB).
    Many,
    /// A small valid result sent one byte every 200 ms (about 40 s in all).
    Drip,
}

impl SparqlFault {
    pub const ALL: [SparqlFault; 6] = [
        SparqlFault::Fine,
        SparqlFault::Endless,
        SparqlFault::Big,
        SparqlFault::BigUndeclared,
        SparqlFault::Many,
        SparqlFault::Drip,
    ];

    pub fn path(self) -> &'static str {
        match self {
            SparqlFault::Fine => "fine",
            SparqlFault::Endless => "endless",
            SparqlFault::Big => "big",
            SparqlFault::BigUndeclared => "bigundeclared",
            SparqlFault::Many => "many",
            SparqlFault::Drip => "drip",
        }
    }

    fn from_path(path: &str) -> Self {
        let first = path.trim_start_matches('/').split(['/', '?']).next().unwrap_or_default();
        Self::ALL.into_iter().find(|f| f.path() == first).unwrap_or(SparqlFault::Fine)
    }
}

const BIG_MB: usize = 200;
const HEAD: &str = r#"{"head":{"vars":["e","r","dir","x","name"]},"results":{"bindings":["#;
const ROW: &str = r#"{"e":{"type":"uri","value":"http://rdf.freebase.com/ns/m.lou_seal"},"r":{"type":"uri","value":"http://rdf.freebase.com/ns/sports.mascot.team"},"dir":{"type":"literal","value":"out"},"x":{"type":"uri","value":"http://rdf.freebase.com/ns/m.lou_seal"},"name":{"type":"literal","value":"Lou Seal"}}"#;
const TINY: &str = r#"{"x":{"type":"literal","value":"a"}}"#;
const TAIL: &str = "]}}";

/// The running endpoint; stopped when dropped.
pub struct SparqlFaultServer {
    addr: SocketAddr,
    stop: Arc<AtomicBool>,
    /// Requests answered so far.
    pub requests: Arc<AtomicUsize>,
}

impl SparqlFaultServer {
    pub fn start() -> Self {
        let listener = TcpListener::bind("127.0.0.1:0").expect("a loopback port");
        let addr = listener.local_addr().expect("its address");
        let stop = Arc::new(AtomicBool::new(false));
        let requests = Arc::new(AtomicUsize::new(0));
        let (stopped, counted) = (stop.clone(), requests.clone());
        std::thread::spawn(move || {
            for stream in listener.incoming() {
                if stopped.load(Ordering::Relaxed) {
                    break;
                }
                let Ok(stream) = stream else { continue };
                counted.fetch_add(1, Ordering::Relaxed);
                let stopped = stopped.clone();
                std::thread::spawn(move || {
                    // The client hanging up ends the reply: the error is expected.
                    let _ = serve(stream, &stopped);
                });
            }
        });
        Self { addr, stop, requests }
    }

    /// The endpoint URL that answers with `fault`.
    pub fn url(&self, fault: SparqlFault) -> String {
        format!("http://{}/{}/sparql", self.addr, fault.path())
    }
}

impl Drop for SparqlFaultServer {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        // Wakes the accept loop so it sees the flag.
        let _ = TcpStream::connect(self.addr);
    }
}

fn serve(mut stream: TcpStream, stop: &AtomicBool) -> std::io::Result<()> {
    let mut request = Vec::new();
    let mut buf = [0u8; 8192];
    while !request.windows(4).any(|w| w == b"\r\n\r\n") {
        let n = stream.read(&mut buf)?;
        if n == 0 {
            return Ok(());
        }
        request.extend_from_slice(&buf[..n]);
    }
    let text = String::from_utf8_lossy(&request);
    let path = text.split_whitespace().nth(1).unwrap_or("/");
    let head = |length: Option<usize>| {
        let length = match length {
            Some(n) => format!("content-length: {n}\r\n"),
            None => String::new(),
        };
        format!("HTTP/1.1 200 OK\r\ncontent-type: application/sparql-results+json\r\nconnection: close\r\n{length}\r\n")
    };
    match SparqlFault::from_path(path) {
        SparqlFault::Fine => {
            let body = format!("{HEAD}{ROW}{TAIL}");
            stream.write_all(format!("{}{body}", head(Some(body.len()))).as_bytes())?;
        }
        SparqlFault::Endless => {
            stream.write_all(
                b"HTTP/1.1 200 OK\r\ncontent-type: application/sparql-results+json\r\ntransfer-encoding: chunked\r\n\r\n",
            )?;
            let first = format!("{HEAD}{ROW}");
            stream.write_all(format!("{:x}\r\n{first}\r\n", first.len()).as_bytes())?;
            let block: String = std::iter::repeat_n(format!(",{ROW}"), 500).collect();
            let chunk = format!("{:x}\r\n{block}\r\n", block.len());
            while !stop.load(Ordering::Relaxed) {
                stream.write_all(chunk.as_bytes())?;
            }
        }
        fault @ (SparqlFault::Big | SparqlFault::BigUndeclared | SparqlFault::Many) => {
            let (row, total) = if fault == SparqlFault::Many { (TINY, 2_000_000) } else { (ROW, 0) };
            let block: String = std::iter::repeat_n(format!("{row},"), 1000).collect();
            let blocks = if fault == SparqlFault::Many { total / 1000 } else { (BIG_MB << 20) / block.len() };
            // The last block's trailing comma is replaced by the row that ends the list.
            let length = HEAD.len() + blocks * block.len() + row.len() + TAIL.len();
            let declared = (fault != SparqlFault::BigUndeclared).then_some(length);
            stream.write_all(head(declared).as_bytes())?;
            stream.write_all(HEAD.as_bytes())?;
            for _ in 0..blocks {
                if stop.load(Ordering::Relaxed) {
                    return Ok(());
                }
                stream.write_all(block.as_bytes())?;
            }
            stream.write_all(format!("{row}{TAIL}").as_bytes())?;
        }
        SparqlFault::Drip => {
            let body = format!("{HEAD}{ROW}{TAIL}");
            stream.write_all(head(Some(body.len())).as_bytes())?;
            for b in body.bytes() {
                if stop.load(Ordering::Relaxed) {
                    return Ok(());
                }
                stream.write_all(&[b])?;
                stream.flush()?;
                std::thread::sleep(Duration::from_millis(200));
            }
        }
    }
    Ok(())
}
