//! Loading triples from files into a [`LocalGraph`]: N-Triples (parsed by `oxttl`) and
//! tab-separated `head<TAB>relation<TAB>tail` (the format of PathQuestion and MetaQA KBs).

use super::local::{GraphBuilder, LocalGraph};
use super::{KgError, KgProfile, Term};
use oxrdf::{NamedOrBlankNode, Term as RdfTerm};
use oxttl::NTriplesParser;
use oxttl::TurtleParseError;
use serde::Serialize;
use std::io::{BufRead, BufReader, Read};
use std::path::Path;

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum KgFormat {
    NTriples,
    Tsv,
}

impl KgFormat {
    /// `.nt` is N-Triples; anything else is read as tab-separated triples.
    pub fn from_path(path: &Path) -> Self {
        match path.extension().and_then(|e| e.to_str()) {
            Some("nt") => KgFormat::NTriples,
            _ => KgFormat::Tsv,
        }
    }
}

/// What a load did, for the user: how much was read and which lines were skipped (lenient mode).
#[derive(Clone, Debug, Default, Serialize)]
pub struct LoadReport {
    pub triples: usize,
    pub skipped: usize,
    /// The first few skipped lines, as `file:line: reason`.
    pub skipped_examples: Vec<String>,
}

const MAX_EXAMPLES: usize = 5;

impl LoadReport {
    fn skip(&mut self, err: KgError) {
        self.skipped += 1;
        if self.skipped_examples.len() < MAX_EXAMPLES {
            self.skipped_examples.push(err.to_string());
        }
    }
}

/// Loads a file into a new graph. Strict mode stops at the first malformed line with its number;
/// lenient mode skips and counts such lines.
pub fn load_file(path: &Path, profile: KgProfile, lenient: bool) -> Result<(LocalGraph, LoadReport), KgError> {
    let shown = path.display().to_string();
    let file = std::fs::File::open(path).map_err(|source| KgError::Io { path: shown.clone(), error: source })?;
    let name = path.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_else(|| shown.clone());
    // A file without newlines (`/dev/zero`) is an error at its limit, not read whole.
    let mut reader = BufReader::new(crate::text_file::BoundedLines::new(file));
    skip_bom(&mut reader).map_err(|source| KgError::Io { path: shown.clone(), error: source })?;
    let mut builder = GraphBuilder::new();
    let report = match KgFormat::from_path(path) {
        KgFormat::NTriples => read_ntriples(reader, &shown, lenient, &mut builder)?,
        KgFormat::Tsv => read_tsv(reader, &shown, lenient, &mut builder)?,
    };
    if report.triples == 0 {
        let why = match report.skipped_examples.first() {
            Some(example) => format!("all {} lines are malformed, e.g. {example}", report.skipped),
            None => "the file is empty or holds only comments".into(),
        };
        return Err(KgError::Other(format!("{shown} holds no triples: {why}")));
    }
    Ok((builder.finish(name, profile), report))
}

/// Steps over a UTF-8 byte-order mark (editors on Windows write one), which would otherwise
/// become part of the first head's id.
fn skip_bom(reader: &mut impl BufRead) -> std::io::Result<()> {
    if reader.fill_buf()?.starts_with(b"\xEF\xBB\xBF") {
        reader.consume(3);
    }
    Ok(())
}

/// Reads `head<TAB>relation<TAB>tail` lines. A tail written in double quotes is a literal; blank
/// lines and lines starting with `#` are ignored; a trailing `\r` is tolerated.
pub fn read_tsv(
    reader: impl BufRead,
    path: &str,
    lenient: bool,
    builder: &mut GraphBuilder,
) -> Result<LoadReport, KgError> {
    let mut report = LoadReport::default();
    // Read as bytes: a line that is not UTF-8 is one bad line (skipped when lenient), not the
    // end of the file.
    for (index, line) in reader.split(b'\n').enumerate() {
        let line_no = index as u64 + 1;
        let bytes = line.map_err(|e| line_error(path, line_no, &e))?;
        let parsed = match std::str::from_utf8(&bytes) {
            Ok(line) => parse_tsv_line(line),
            Err(_) => Err("the line is not UTF-8 text".to_string()),
        };
        match parsed {
            Ok(None) => {}
            Ok(Some((h, r, t))) => {
                builder.add(h, r, &t);
                report.triples += 1;
            }
            Err(message) => {
                let err = KgError::Syntax { path: path.into(), line: line_no, message };
                if !lenient {
                    return Err(err);
                }
                report.skip(err);
            }
        }
    }
    Ok(report)
}

fn parse_tsv_line(line: &str) -> Result<Option<(&str, &str, Term)>, String> {
    let line = line.trim_end_matches(['\r', '\n']);
    if line.trim().is_empty() || line.starts_with('#') {
        return Ok(None);
    }
    let fields: Vec<&str> = line.split('\t').collect();
    if fields.len() != 3 {
        return Err(format!("expected 3 tab-separated fields (head, relation, tail), found {}", fields.len()));
    }
    let (h, r, t) = (fields[0].trim(), fields[1].trim(), fields[2].trim());
    if h.is_empty() || r.is_empty() || t.is_empty() {
        return Err("empty head, relation or tail".into());
    }
    if h.starts_with('"') {
        return Err("a head cannot be a literal".into());
    }
    let tail = match t.strip_prefix('"') {
        Some(rest) => match rest.strip_suffix('"') {
            Some(value) => Term::Literal(value.replace("\\\"", "\"")),
            None => return Err("unterminated literal in tail".into()),
        },
        None => Term::Entity(t.to_string()),
    };
    Ok(Some((h, r, tail)))
}

/// Reads N-Triples with `oxttl`. Blank nodes keep their `_:` label as id; literals keep their
/// lexical value (datatype and language are not kept by the local store).
///
/// Parsing (the slower half) runs on its own thread and hands batches to this one, which
/// interns them: loading takes about as long as parsing alone. Parsing stays sequential so an
/// error's line number is exact.
pub fn read_ntriples(
    reader: impl Read + Send,
    path: &str,
    lenient: bool,
    builder: &mut GraphBuilder,
) -> Result<LoadReport, KgError> {
    const BATCH: usize = 4096;
    type Batch = Vec<Result<(String, String, Term), KgError>>;
    let mut report = LoadReport::default();
    std::thread::scope(|scope| {
        let (tx, rx) = std::sync::mpsc::sync_channel::<Batch>(8);
        scope.spawn(move || {
            let mut batch = Vec::with_capacity(BATCH);
            let newlines = std::rc::Rc::new(std::cell::Cell::new(0));
            let reader = LineCounter { inner: reader, newlines: newlines.clone() };
            for item in NTriplesParser::new().for_reader(reader) {
                let failed = item.is_err();
                // The parser cannot go on past a read error (a line over the limit, a full
                // buffer): it would return it again, so no mode goes on.
                let fatal = matches!(item, Err(TurtleParseError::Io(_)));
                batch.push(convert(item, path, newlines.get()));
                if fatal || (failed && !lenient) {
                    break; // strict mode stops at the first error
                }
                if batch.len() == BATCH && tx.send(std::mem::take(&mut batch)).is_err() {
                    return; // the receiver stopped early
                }
            }
            let _ = tx.send(batch);
        });
        for batch in rx {
            for item in batch {
                match item {
                    Ok((head, relation, tail)) => {
                        builder.add(&head, &relation, &tail);
                        report.triples += 1;
                    }
                    Err(err @ KgError::Syntax { .. }) if lenient => report.skip(err),
                    Err(err) => return Err(err),
                }
            }
        }
        Ok(report)
    })
}

/// A reader that counts the newlines read through it: where the parser was when it gave up
/// on a line too long for its buffer (an error without a position of its own).
struct LineCounter<R> {
    inner: R,
    newlines: std::rc::Rc<std::cell::Cell<u64>>,
}

impl<R: Read> Read for LineCounter<R> {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        let n = self.inner.read(buf)?;
        let seen = buf[..n].iter().filter(|&&b| b == b'\n').count() as u64;
        self.newlines.set(self.newlines.get() + seen);
        Ok(n)
    }
}

/// One parsed N-Triples item as (head, relation, tail), or the error with its line.
/// `newlines` is how many the parser has read so far.
fn convert(
    item: Result<oxrdf::Triple, TurtleParseError>,
    path: &str,
    newlines: u64,
) -> Result<(String, String, Term), KgError> {
    match item {
        Ok(triple) => {
            let head = match triple.subject {
                NamedOrBlankNode::NamedNode(n) => n.into_string(),
                NamedOrBlankNode::BlankNode(b) => b.to_string(),
            };
            let tail = match triple.object {
                RdfTerm::NamedNode(n) => Term::Entity(n.into_string()),
                RdfTerm::BlankNode(b) => Term::Entity(b.to_string()),
                RdfTerm::Literal(l) => Term::Literal(l.value().to_string()),
                #[allow(unreachable_patterns)]
                _ => {
                    return Err(KgError::Syntax { path: path.into(), line: 0, message: "unsupported RDF term".into() });
                }
            };
            Ok((head, triple.predicate.into_string(), tail))
        }
        Err(TurtleParseError::Syntax(e)) => Err(KgError::Syntax {
            path: path.into(),
            line: e.location().start.line + 1,
            message: e.message().to_string(),
        }),
        Err(TurtleParseError::Io(source)) => match crate::text_file::too_long(&source) {
            Some(line) => Err(line_error(path, line, &source)),
            // oxttl's buffer is full: one term (a literal, most likely) fills it. Its buffer
            // holds what follows the last complete token, and a term holds no raw newline, so
            // the line is the one after those read. Fatal even when lenient.
            None if source.kind() == std::io::ErrorKind::OutOfMemory => Err(KgError::Other(format!(
                "{path}:{}: a term on this line is too long to read ({source}); the file cannot be read past it",
                newlines + 1
            ))),
            None => Err(KgError::Io { path: path.into(), error: source }),
        },
    }
}

/// A line that could not be read, as `file:line: why` (a line over the limit names it). Never
/// a syntax error: lenient loading skips those, and the rest of the file cannot be read.
fn line_error(path: &str, line: u64, e: &std::io::Error) -> KgError {
    match crate::text_file::too_long(e) {
        Some(_) => KgError::Other(format!(
            "{path}:{line}: the line is longer than {} MB, the limit on a line",
            crate::text_file::MAX_LINE_BYTES >> 20
        )),
        None => KgError::Other(format!("{path}:{line}: {e}")),
    }
}

/// The bundled demo graph, compiled into the binary.
pub fn demo_graph() -> LocalGraph {
    const DEMO: &str = include_str!("../../sessions/demo-kg.tsv");
    let mut builder = GraphBuilder::new();
    // The demo file is tested to parse cleanly (tests/kg.rs), so strict mode cannot fail here;
    // were it to, the lines read so far are still a usable graph.
    let _ = read_tsv(DEMO.as_bytes(), "demo-kg.tsv", true, &mut builder);
    builder.finish("demo", KgProfile::freebase())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tsv_lines() {
        assert_eq!(parse_tsv_line("# comment").unwrap(), None);
        assert_eq!(parse_tsv_line("   ").unwrap(), None);
        let (h, r, t) = parse_tsv_line("a\tb\t\"2014\"\r").unwrap().unwrap();
        assert_eq!((h, r, t), ("a", "b", Term::Literal("2014".into())));
        assert!(parse_tsv_line("a\tb").unwrap_err().contains("found 2"));
        assert!(parse_tsv_line("a\t\tc").is_err());
        assert!(parse_tsv_line("a\tb\t\"open").is_err());
    }

    #[test]
    fn strict_tsv_names_the_line() {
        let mut b = GraphBuilder::new();
        let err = read_tsv("a\tr\tb\nbroken line\n".as_bytes(), "kb.tsv", false, &mut b).unwrap_err();
        assert_eq!(err.to_string(), "kb.tsv:2: expected 3 tab-separated fields (head, relation, tail), found 1");
    }

    #[test]
    fn a_line_that_is_not_utf8_is_one_bad_line() {
        let bytes: &[u8] = b"a\tr\tb\nc\tr\t\xff\xfe\nd\tr\te\r\n";
        let mut b = GraphBuilder::new();
        let report = read_tsv(bytes, "kb.tsv", true, &mut b).unwrap();
        assert_eq!((report.triples, report.skipped), (2, 1), "the lines after it are read");
        assert_eq!(report.skipped_examples, ["kb.tsv:2: the line is not UTF-8 text"]);
        let err = read_tsv(bytes, "kb.tsv", false, &mut GraphBuilder::new()).unwrap_err();
        assert_eq!(err.to_string(), "kb.tsv:2: the line is not UTF-8 text");
    }

    #[test]
    fn a_file_without_newlines_stops_at_the_line_limit() {
        let dir = tempfile::tempdir().unwrap();
        for name in ["g.tsv", "g.nt"] {
            let path = dir.path().join(name);
            let big =
                format!("a\tr\tb\n<http://x/a> <http://x/r> \"{}", "x".repeat(crate::text_file::MAX_LINE_BYTES + 10));
            std::fs::write(&path, big).unwrap();
            let Err(err) = load_file(&path, KgProfile::freebase(), true) else { panic!("{name} loaded") };
            let err = err.to_string();
            let shown = path.display().to_string();
            assert!(err.starts_with(&format!("{shown}:2: the line is longer than 8 MB, the limit on a line")), "{err}");
        }
    }

    #[test]
    fn lenient_ntriples_skips_and_counts() {
        let text =
            "<http://x/a> <http://x/r> <http://x/b> .\n<http://x/a> broken .\n<http://x/b> <http://x/r> \"lit\" .\n";
        let mut b = GraphBuilder::new();
        let report = read_ntriples(text.as_bytes(), "g.nt", true, &mut b).unwrap();
        assert_eq!((report.triples, report.skipped), (2, 1));
        assert!(report.skipped_examples[0].starts_with("g.nt:2:"), "{:?}", report.skipped_examples);
        let mut b = GraphBuilder::new();
        let err = read_ntriples(text.as_bytes(), "g.nt", false, &mut b).unwrap_err();
        assert!(err.to_string().starts_with("g.nt:2:"), "{err}");
    }
}
