//! The only place where ids, relations and strings become SPARQL text. IRIs are validated
//! against the IRIREF grammar (anything that could close the `<…>` or start a new clause is
//! refused); strings become escaped literals. So no input — a model's reply, a user's typing,
//! a dataset line — can change a query's structure.

/// An IRI for a query, or why it cannot be one.
pub fn iri(text: &str) -> Result<String, String> {
    if text.is_empty() {
        return Err("an empty IRI".into());
    }
    // IRIREF: no spaces, controls or any of <>"{}|^`\ inside the angle brackets.
    if let Some(c) = text.chars().find(|c| c.is_control() || c.is_whitespace() || "<>\"{}|^`\\".contains(*c)) {
        return Err(format!("{text:?} is not a valid IRI (it contains {c:?})"));
    }
    if !text.contains(':') {
        return Err(format!("{text:?} is not an absolute IRI"));
    }
    // The full grammar (RFC 3987): `[` in a path, a stray `%`, a scheme such as `_` are not
    // IRIs, and an endpoint would refuse the whole query over them.
    if let Err(e) = oxrdf::NamedNode::new(text) {
        return Err(format!("{text:?} is not a valid IRI ({e})"));
    }
    Ok(format!("<{text}>"))
}

/// A string as a SPARQL / N-Triples literal, escaped so it cannot end early.
pub fn literal(value: &str) -> String {
    let mut out = String::with_capacity(value.len() + 2);
    out.push('"');
    for c in value.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            // Written as escapes also what would turn a patch's text around on a terminal.
            c if c.is_control() || crate::safe_text::json::needs_escape(c) => match c as u32 {
                n @ 0..=0xFFFF => out.push_str(&format!("\\u{n:04X}")),
                n => out.push_str(&format!("\\U{n:08X}")),
            },
            c => out.push(c),
        }
    }
    out.push('"');
    out
}

/// A language tag for `@tag`, or `None` when the text is not one (BCP 47 letters, digits, `-`).
pub fn language(tag: &str) -> Option<&str> {
    let ok = !tag.is_empty() && tag.len() <= 35 && tag.chars().all(|c| c.is_ascii_alphanumeric() || c == '-');
    ok.then_some(tag)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hostile_input_is_refused_or_escaped() {
        assert!(iri("http://ex.org/x> } ; DROP ALL ; { <y").is_err());
        assert!(iri("http://ex.org/a b").is_err());
        assert!(iri("m.0abc").is_err(), "relative ids must be expanded first");
        // Regression: these passed the check and the endpoint's HTTP 400 aborted the run.
        for bad in ["http://www.wikidata.org/entity/[Canberra]", "http://ex.org/50%", "_:b0"] {
            assert!(iri(bad).is_err(), "{bad}");
        }
        assert!(iri("http://ex.org/caf%C3%A9").is_ok());
        assert!(iri("urn:ongraph:lou_seal").is_ok());
        assert_eq!(iri("http://rdf.freebase.com/ns/m.0abc").unwrap(), "<http://rdf.freebase.com/ns/m.0abc>");
        assert_eq!(literal("\"} UNION { ?s ?p ?o"), "\"\\\"} UNION { ?s ?p ?o\"");
        assert_eq!(literal("a\\\"b\n"), "\"a\\\\\\\"b\\n\"");
        assert_eq!(language("en-GB"), Some("en-GB"));
        assert_eq!(language("en\" } ;"), None);
    }
}
