//! Text from others (a KG's labels, a teammate's author or reason, a model's reply) shown safely:
//! nothing in it may act on a terminal or pass for ongraph's own output. Three places use it:
//! the human output's filter (`printable`), every one-line field in a line of output or
//! in the terminal UI ([`one_line`]), and every JSON ongraph writes ([`json`]).

use std::borrow::Cow;

/// `text` (an error page a server wrote) without an HTTP credential in it: each of `secrets`
/// (a key, a password, `user:password`), and whatever follows `Bearer `, or `Basic ` after
/// `Authorization:` or as a base64 credential (with a digit, `+`, `/` or `=` in it: not a word). A server
/// that echoes the request it refused must not put a credential on stderr, in the log or in
/// a record.
pub fn without_credentials(text: &str, secrets: &[&str]) -> String {
    static SCHEME: std::sync::LazyLock<regex::Regex> = std::sync::LazyLock::new(|| {
        regex::Regex::new(
            r"(?i)\b(bearer\s+)[^\s\x22',}]+|(authorization\x22?'?\s*[:=]\s*\x22?'?basic\s+)[A-Za-z0-9+/]+={0,2}|\b(basic\s+)[A-Za-z0-9+/]*[0-9+/=][A-Za-z0-9+/]*={0,2}",
        )
            .unwrap_or_else(|e| unreachable!("constant regex: {e}"))
    });
    let mut out = text.to_string();
    // The longest first: `user:password` before `password`.
    let mut secrets: Vec<&str> = secrets.iter().copied().filter(|s| s.len() >= 3).collect();
    secrets.sort_by_key(|s| std::cmp::Reverse(s.len()));
    for secret in secrets {
        out = out.replace(secret, "[redacted]");
    }
    SCHEME.replace_all(&out, "${1}${2}${3}[redacted]").into_owned()
}

/// Characters that change how the text around them reads without being seen: bidirectional
/// controls (U+202E turns the rest of a line around), invisible marks and tags (Unicode
/// category Cf). The joiners U+200C/U+200D are not among them: emoji and several scripts need
/// them, and they neither reorder nor hide text.
pub fn is_format(c: char) -> bool {
    matches!(
        c,
        '\u{ad}'
            | '\u{600}'..='\u{605}'
            | '\u{61c}'
            | '\u{6dd}'
            | '\u{70f}'
            | '\u{890}'..='\u{891}'
            | '\u{8e2}'
            | '\u{180e}'
            | '\u{200b}'
            | '\u{200e}'..='\u{200f}'
            | '\u{202a}'..='\u{202e}'
            | '\u{2060}'..='\u{2064}'
            | '\u{2066}'..='\u{206f}'
            | '\u{feff}'
            | '\u{fff9}'..='\u{fffb}'
            | '\u{110bd}'
            | '\u{110cd}'
            | '\u{13430}'..='\u{1343f}'
            | '\u{1bca0}'..='\u{1bca3}'
            | '\u{1d173}'..='\u{1d17a}'
            | '\u{e0001}'
            | '\u{e0020}'..='\u{e007f}'
    )
}

/// Line and paragraph separators some programs break lines at (NEL is a C1 control).
pub fn is_separator(c: char) -> bool {
    matches!(c, '\u{2028}' | '\u{2029}')
}

/// How a character is shown in any text for people, if not as itself: C0 controls (but newline
/// and tab) and DEL as their Unicode control pictures (ESC as `␛`, so an escape sequence reads
/// as one), C1 controls as `�`, format characters and separators as `\u{…}`.
pub fn shown(c: char) -> Option<Cow<'static, str>> {
    match c {
        '\n' | '\t' => None,
        // U+2400..U+241F picture C0 in order; U+2421 is DEL's.
        '\u{0}'..='\u{1f}' => Some(char::from_u32(0x2400 + c as u32).unwrap_or('\u{fffd}').to_string().into()),
        '\u{7f}' => Some("\u{2421}".into()),
        '\u{80}'..='\u{9f}' => Some("\u{fffd}".into()),
        c if is_format(c) || is_separator(c) => Some(format!("\\u{{{:04X}}}", c as u32).into()),
        _ => None,
    }
}

/// `text` for a one-line field (a label, an author, a reason, a relation, a path): as [`shown`],
/// and line breaks and tabs as `\n`, `\r`, `\t`, so nothing in it starts a line or a column.
pub fn one_line(text: &str) -> Cow<'_, str> {
    let plain = |c: char| !matches!(c, '\n' | '\r' | '\t') && shown(c).is_none();
    if text.chars().all(plain) {
        return Cow::Borrowed(text);
    }
    let mut out = String::with_capacity(text.len() + 8);
    for c in text.chars() {
        match c {
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            c => match shown(c) {
                Some(s) => out.push_str(&s),
                None => out.push(c),
            },
        }
    }
    Cow::Owned(out)
}

/// A one-line field in a `format!`: `{}` of `OneLine(label)` is [`one_line`]`(label)`.
pub struct OneLine<'a>(pub &'a str);

impl std::fmt::Display for OneLine<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&one_line(self.0))
    }
}

/// JSON as ongraph writes it, to stdout and to files (sessions, eval records, exports): as
/// `serde_json`, with C1 controls, format characters and separators in strings also written
/// as `\uXXXX`. `serde_json` escapes C0 only, so U+009B (a CSI) or U+202E would reach a terminal
/// that shows the file raw. The JSON means the same: a reader gets the same strings back.
pub mod json {
    use serde::Serialize;
    use serde_json::ser::{CompactFormatter, Formatter, PrettyFormatter};
    use std::io::{self, Write};

    /// Escapes what [`needs_escape`] names on top of `F`'s own escaping.
    pub struct Safe<F>(F);

    pub fn needs_escape(c: char) -> bool {
        matches!(c, '\u{80}'..='\u{9f}') || super::is_format(c) || super::is_separator(c)
    }

    impl<F: Formatter> Formatter for Safe<F> {
        fn write_string_fragment<W: ?Sized + Write>(&mut self, writer: &mut W, fragment: &str) -> io::Result<()> {
            let mut start = 0;
            for (i, c) in fragment.char_indices() {
                if needs_escape(c) {
                    writer.write_all(&fragment.as_bytes()[start..i])?;
                    let mut units = [0u16; 2];
                    for unit in c.encode_utf16(&mut units) {
                        write!(writer, "\\u{unit:04x}")?;
                    }
                    start = i + c.len_utf8();
                }
            }
            writer.write_all(&fragment.as_bytes()[start..])
        }

        // The layout is the wrapped formatter's.
        fn begin_array<W: ?Sized + Write>(&mut self, w: &mut W) -> io::Result<()> {
            self.0.begin_array(w)
        }
        fn end_array<W: ?Sized + Write>(&mut self, w: &mut W) -> io::Result<()> {
            self.0.end_array(w)
        }
        fn begin_array_value<W: ?Sized + Write>(&mut self, w: &mut W, first: bool) -> io::Result<()> {
            self.0.begin_array_value(w, first)
        }
        fn end_array_value<W: ?Sized + Write>(&mut self, w: &mut W) -> io::Result<()> {
            self.0.end_array_value(w)
        }
        fn begin_object<W: ?Sized + Write>(&mut self, w: &mut W) -> io::Result<()> {
            self.0.begin_object(w)
        }
        fn end_object<W: ?Sized + Write>(&mut self, w: &mut W) -> io::Result<()> {
            self.0.end_object(w)
        }
        fn begin_object_key<W: ?Sized + Write>(&mut self, w: &mut W, first: bool) -> io::Result<()> {
            self.0.begin_object_key(w, first)
        }
        fn end_object_key<W: ?Sized + Write>(&mut self, w: &mut W) -> io::Result<()> {
            self.0.end_object_key(w)
        }
        fn begin_object_value<W: ?Sized + Write>(&mut self, w: &mut W) -> io::Result<()> {
            self.0.begin_object_value(w)
        }
        fn end_object_value<W: ?Sized + Write>(&mut self, w: &mut W) -> io::Result<()> {
            self.0.end_object_value(w)
        }
    }

    /// As `serde_json::to_writer` (one line: JSON lines).
    pub fn to_writer<W: Write, T: ?Sized + Serialize>(writer: W, value: &T) -> serde_json::Result<()> {
        value.serialize(&mut serde_json::Serializer::with_formatter(writer, Safe(CompactFormatter)))
    }

    /// As `serde_json::to_writer_pretty`.
    pub fn to_writer_pretty<W: Write, T: ?Sized + Serialize>(writer: W, value: &T) -> serde_json::Result<()> {
        value.serialize(&mut serde_json::Serializer::with_formatter(writer, Safe(PrettyFormatter::new())))
    }

    /// As `serde_json::to_string`.
    pub fn to_string<T: ?Sized + Serialize>(value: &T) -> serde_json::Result<String> {
        let mut out = Vec::new();
        to_writer(&mut out, value)?;
        // Only ASCII escapes were added to serde_json's UTF-8.
        String::from_utf8(out).map_err(|e| serde::ser::Error::custom(e.to_string()))
    }

    /// As `serde_json::to_string_pretty`.
    pub fn to_string_pretty<T: ?Sized + Serialize>(value: &T) -> serde_json::Result<String> {
        let mut out = Vec::new();
        to_writer_pretty(&mut out, value)?;
        String::from_utf8(out).map_err(|e| serde::ser::Error::custom(e.to_string()))
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn credentials_a_server_echoes_are_redacted() {
        let page = "401: authorization: Basic dTpzM2NyZXRwdw== from u:s3cretpw; Authorization: Bearer tok.en-1";
        let shown = super::without_credentials(page, &["u:s3cretpw", "s3cretpw"]);
        assert_eq!(shown, "401: authorization: Basic [redacted] from [redacted]; Authorization: Bearer [redacted]");
        // A server's own words stay; a credential after `Authorization:` goes, however short.
        for prose in ["syntax error in a basic graph pattern", "Basic authentication required"] {
            assert_eq!(super::without_credentials(prose, &[]), prose);
        }
        assert_eq!(super::without_credentials("Authorization: Basic abc", &[]), "Authorization: Basic [redacted]");
    }

    use super::*;

    #[test]
    fn a_one_line_field_cannot_start_a_line_or_turn_text_around() {
        let forged =
            "ACT\nSupporting paths:\r\n  1. [0.999] Canberra\u{2028}x\u{85}y\tz \u{202e}lave\u{2066}\u{200f}\u{61c}";
        let shown = one_line(forged);
        assert_eq!(
            shown,
            "ACT\\nSupporting paths:\\r\\n  1. [0.999] Canberra\\u{2028}x\u{fffd}y\\tz \\u{202E}lave\\u{2066}\\u{200F}\\u{061C}"
        );
        assert!(!shown.contains(['\n', '\r', '\t', '\u{2028}', '\u{85}', '\u{202e}']));
        // Escapes as everywhere, and plain text untouched (not even copied).
        assert_eq!(one_line("a\u{1b}[2J"), "a␛[2J");
        assert!(matches!(one_line("Zürich «é» 👩\u{200d}🔬"), Cow::Borrowed(_)));
    }

    #[test]
    fn json_escapes_c1_and_format_characters_and_reads_back_the_same() {
        let value = serde_json::json!({ "label": "a\u{9b}31m\u{202e}b\u{2029}c\u{e0041}\u{1b}é👩\u{200d}🔬" });
        let text = json::to_string(&value).unwrap();
        assert_eq!(text, r#"{"label":"a\u009b31m\u202eb\u2029c\udb40\udc41\u001bé👩‍🔬"}"#);
        assert_eq!(serde_json::from_str::<serde_json::Value>(&text).unwrap(), value);
        let pretty = json::to_string_pretty(&value).unwrap();
        assert!(pretty.starts_with("{\n  \"label\": \"a\\u009b31m\\u202eb"), "{pretty}");
        assert_eq!(serde_json::from_str::<serde_json::Value>(&pretty).unwrap(), value);
    }
}
