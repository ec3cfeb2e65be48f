//! Text for a terminal: control characters from data (a KG label, a model's reply, a
//! correction's reason) could move the cursor, retitle the window or clear the screen, so
//! everything human-readable the commands print goes through [`Printable`], each one-line
//! field made one line first (`safe_text::one_line`). JSON goes through `safe_text::json`.

use std::io::{self, Write};

/// A writer that shows what text from others could do to a terminal instead of letting it
/// ([`crate::safe_text::shown`]): C0 (but newline and tab) and DEL as their Unicode control
/// pictures (ESC as `␛`, so an escape sequence reads as one), C1 as `�`, bidirectional and
/// other format characters and line separators as `\u{…}`; bytes that are not UTF-8 as `�`.
/// One-line fields are made one line before (`safe_text::one_line`): only they know what a
/// line is.
pub struct Printable<W: Write> {
    inner: W,
    /// The start of a character the last write ended in the middle of.
    pending: Vec<u8>,
}

impl<W: Write> Printable<W> {
    pub fn new(inner: W) -> Self {
        Self { inner, pending: Vec::new() }
    }
}

const REPLACEMENT: &str = "\u{fffd}";

fn push_shown(out: &mut Vec<u8>, text: &str) {
    for c in text.chars() {
        match crate::safe_text::shown(c) {
            Some(s) => out.extend_from_slice(s.as_bytes()),
            None => out.extend_from_slice(c.encode_utf8(&mut [0; 4]).as_bytes()),
        }
    }
}

impl<W: Write> Write for Printable<W> {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        let mut data = std::mem::take(&mut self.pending);
        data.extend_from_slice(buf);
        let mut out = Vec::with_capacity(data.len());
        let mut rest = &data[..];
        loop {
            match std::str::from_utf8(rest) {
                Ok(text) => {
                    push_shown(&mut out, text);
                    break;
                }
                Err(e) => {
                    let (valid, after) = rest.split_at(e.valid_up_to());
                    push_shown(&mut out, std::str::from_utf8(valid).unwrap_or_default());
                    match e.error_len() {
                        Some(bad) => {
                            out.extend_from_slice(REPLACEMENT.as_bytes());
                            rest = &after[bad..];
                        }
                        // A character cut by the end of this write: finished by the next.
                        None => {
                            self.pending = after.to_vec();
                            break;
                        }
                    }
                }
            }
        }
        self.inner.write_all(&out)?;
        Ok(buf.len())
    }

    fn flush(&mut self) -> io::Result<()> {
        if !std::mem::take(&mut self.pending).is_empty() {
            self.inner.write_all(REPLACEMENT.as_bytes())?;
        }
        self.inner.flush()
    }
}

impl<W: Write> Drop for Printable<W> {
    fn drop(&mut self) {
        let _ = self.flush();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn shown(text: &str) -> String {
        let mut out = Vec::new();
        {
            let mut p = Printable::new(&mut out);
            // Byte by byte, so a C1 control split across writes is still caught.
            for b in text.as_bytes() {
                p.write_all(&[*b]).unwrap();
            }
        }
        String::from_utf8(out).unwrap()
    }

    #[test]
    fn escapes_are_shown_not_obeyed() {
        assert_eq!(shown("a\x1b]0;PWNED\x07\x1b[2Jb"), "a␛]0;PWNED␇␛[2Jb");
        assert_eq!(shown("x\u{9b}31mred\r\x7f"), "x\u{fffd}31mred␍␡");
        // Text, newlines, tabs and other characters from U+0080 up stay.
        assert_eq!(shown("Zürich\tÂ «é» 👩\u{200d}🔬\n"), "Zürich\tÂ «é» 👩\u{200d}🔬\n");
        // Text turned around or hidden is shown as escapes, even split across writes.
        assert_eq!(
            shown("a\u{202e}b\u{2066}c\u{2028}d\u{feff}e\u{e0041}"),
            "a\\u{202E}b\\u{2066}c\\u{2028}d\\u{FEFF}e\\u{E0041}"
        );
        // Bytes that are no UTF-8 are no raw C1 either.
        let mut out = Vec::new();
        Printable::new(&mut out).write_all(b"x\x9by\xe2\x80").unwrap();
        assert_eq!(String::from_utf8(out).unwrap(), "x\u{fffd}y\u{fffd}");
    }
}
