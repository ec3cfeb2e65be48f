//! Text for a terminal: control characters from data (a KG label, a model's reply, a
//! correction's reason) could move the cursor, retitle the window or clear the screen, so
//! everything human-readable the commands print goes through [`Printable`]. JSON output and
//! exports are data and pass untouched.

use std::io::{self, Write};

/// A writer that shows control characters as text: C0 (but newline and tab) and DEL as their
/// Unicode control pictures (ESC as `␛`, so an escape sequence reads as one), C1 as `�`.
pub struct Printable<W: Write> {
    inner: W,
    /// A 0xC2 byte that ended the last write: it may begin a C1 control.
    pending: bool,
}

impl<W: Write> Printable<W> {
    pub fn new(inner: W) -> Self {
        Self { inner, pending: false }
    }
}

const REPLACEMENT: &[u8] = "\u{fffd}".as_bytes();

impl<W: Write> Write for Printable<W> {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        let mut out = Vec::with_capacity(buf.len());
        for &b in buf {
            if std::mem::take(&mut self.pending) {
                // U+0080..U+009F are 0xC2 0x80..0x9F in UTF-8.
                if (0x80..=0x9F).contains(&b) {
                    out.extend_from_slice(REPLACEMENT);
                    continue;
                }
                out.push(0xC2);
            }
            match b {
                b'\n' | b'\t' => out.push(b),
                0x00..=0x1F | 0x7F => {
                    // U+2400..U+241F picture C0 in order; U+2421 is DEL's.
                    let picture = if b == 0x7F {
                        '\u{2421}'
                    } else {
                        char::from_u32(0x2400 + u32::from(b)).unwrap_or('\u{fffd}')
                    };
                    out.extend_from_slice(picture.encode_utf8(&mut [0; 4]).as_bytes());
                }
                0xC2 => self.pending = true,
                _ => out.push(b),
            }
        }
        self.inner.write_all(&out)?;
        Ok(buf.len())
    }

    fn flush(&mut self) -> io::Result<()> {
        if std::mem::take(&mut self.pending) {
            self.inner.write_all(&[0xC2])?;
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
        assert_eq!(shown("Zürich\tÂ «é»\n"), "Zürich\tÂ «é»\n");
    }
}
