//! Reading the text files people write by hand (configs, prompts, scripts, sessions, datasets,
//! scenarios): an editor on Windows may start them with a UTF-8 byte-order mark, which would
//! otherwise become part of the first key, question or id, or break the parse.

use std::path::Path;

/// The file's text, without a leading byte-order mark.
pub(crate) fn read(path: &Path) -> std::io::Result<String> {
    let mut text = std::fs::read_to_string(path)?;
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
}
