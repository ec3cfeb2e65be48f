//! Reading the text files people write by hand (configs, prompts, scripts, sessions, datasets,
//! scenarios): an editor on Windows may start them with a UTF-8 byte-order mark, which would
//! otherwise become part of the first key, question or id, or break the parse.

use std::io::Read;
use std::path::Path;

/// The longest line any file is read with: a file without newlines (`/dev/zero`, a binary)
/// would otherwise be read whole into memory.
pub(crate) const MAX_LINE_BYTES: usize = 8 << 20;

/// Why a line could not be read: it is longer than [`MAX_LINE_BYTES`].
#[derive(Debug, thiserror::Error)]
#[error("line {line} is longer than {} MB, the limit on a line", MAX_LINE_BYTES >> 20)]
pub(crate) struct LineTooLong {
    pub line: u64,
}

/// A reader that fails (with [`LineTooLong`] inside an `InvalidData` error) once a line grows
/// past `max` bytes: whatever reads lines through it keeps at most that much of one.
pub(crate) struct BoundedLines<R> {
    inner: R,
    max: usize,
    /// Bytes since the last newline, and the line they are on (from 1).
    run: usize,
    line: u64,
}

impl<R: Read> BoundedLines<R> {
    pub(crate) fn new(inner: R) -> Self {
        Self::with_max(inner, MAX_LINE_BYTES)
    }

    pub(crate) fn with_max(inner: R, max: usize) -> Self {
        Self { inner, max, run: 0, line: 1 }
    }
}

impl<R: Read> Read for BoundedLines<R> {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        if self.run > self.max {
            return Err(std::io::Error::new(std::io::ErrorKind::InvalidData, LineTooLong { line: self.line }));
        }
        let n = self.inner.read(buf)?;
        for &b in &buf[..n] {
            if b == b'\n' {
                self.run = 0;
                self.line += 1;
            } else {
                self.run += 1;
            }
        }
        // What is over the limit is handed on: the reader's next call fails, before more is read.
        Ok(n)
    }
}

/// The line number in a [`LineTooLong`] error, if `e` is one.
pub(crate) fn too_long(e: &std::io::Error) -> Option<u64> {
    e.get_ref().and_then(|inner| inner.downcast_ref::<LineTooLong>()).map(|t| t.line)
}

/// The file's text, without a leading byte-order mark.
pub(crate) fn read(path: &Path) -> std::io::Result<String> {
    let mut text = String::new();
    BoundedLines::new(std::fs::File::open(path)?).read_to_string(&mut text)?;
    if text.starts_with('\u{feff}') {
        text.drain(..'\u{feff}'.len_utf8());
    }
    Ok(text)
}

#[cfg(test)]
mod tests {
    #[test]
    fn a_byte_order_mark_is_dropped_and_nothing_else() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("f.toml");
        std::fs::write(&path, "\u{feff}[defaults]\nx = \"\u{feff}\"\n").unwrap();
        assert_eq!(super::read(&path).unwrap(), "[defaults]\nx = \"\u{feff}\"\n");
        std::fs::write(&path, "plain").unwrap();
        assert_eq!(super::read(&path).unwrap(), "plain");
    }

    #[test]
    fn a_line_past_the_limit_is_an_error_naming_it() {
        use std::io::{BufRead, BufReader};
        let text = "short\nshort too\n".to_string() + &"x".repeat(100) + "\nnever read\n";
        let lines: Vec<_> =
            BufReader::with_capacity(8, super::BoundedLines::with_max(text.as_bytes(), 50)).lines().take(3).collect();
        assert_eq!(lines[0].as_deref().unwrap(), "short");
        assert_eq!(lines[1].as_deref().unwrap(), "short too");
        let err = lines[2].as_ref().unwrap_err();
        assert_eq!(super::too_long(err), Some(3), "{err}");
        assert!(err.to_string().starts_with("line 3 is longer than"), "{err}");
        // An endless file without newlines ends in the error, not in memory.
        let mut endless = super::BoundedLines::with_max(std::io::repeat(0), 1 << 20);
        let mut all = Vec::new();
        let err = std::io::Read::read_to_end(&mut endless, &mut all).unwrap_err();
        assert_eq!(super::too_long(&err), Some(1));
        assert!(all.len() < 4 << 20, "{}", all.len());
    }
}
