//! Scenarios: triples hidden for a run to simulate an incomplete KG (GoG's IKG datasets), kept
//! apart from the user's corrections and never written into them.

use crate::kg::Term;
use serde::Deserialize;
use std::path::Path;

pub type Triple = (String, String, Term);

#[derive(Debug, thiserror::Error)]
pub enum ScenarioError {
    #[error("cannot read the scenario {path}: {message}")]
    Read { path: String, message: String },
    #[error("{path}: not a GoG incomplete-KG file ({message})")]
    Format { path: String, message: String },
    #[error("{path}: no question {id:?} (give its ID or its index)")]
    NoQuestion { path: String, id: String },
    #[error("{path} holds many questions: say which with --scenario-id (an ID or an index)")]
    NeedId { path: String },
    #[error("{path}:{line}: {message}")]
    Line { path: String, line: usize, message: String },
}

#[derive(Deserialize)]
struct GogRecord {
    #[serde(rename = "ID", default)]
    id: Option<String>,
    #[serde(default)]
    index: Option<u64>,
    #[serde(default)]
    mid_crucial_triples: Vec<(String, String, String)>,
}

/// The triples to hide: from a GoG IKG file (`.json`, one question chosen by `id`: its `ID` or
/// its `index`), or from a tab-separated file of `head<TAB>relation<TAB>tail` (a tail in double
/// quotes is a literal).
pub fn load(path: &Path, id: Option<&str>) -> Result<Vec<Triple>, ScenarioError> {
    let shown = path.display().to_string();
    let text = crate::text_file::read(path)
        .map_err(|e| ScenarioError::Read { path: shown.clone(), message: e.to_string() })?;
    if path.extension().and_then(|e| e.to_str()) == Some("json") {
        let records: Vec<GogRecord> = serde_json::from_str(&text)
            .map_err(|e| ScenarioError::Format { path: shown.clone(), message: e.to_string() })?;
        let id = id.ok_or_else(|| ScenarioError::NeedId { path: shown.clone() })?;
        let record = records
            .iter()
            .find(|r| r.id.as_deref() == Some(id) || r.index.is_some_and(|i| i.to_string() == id))
            .ok_or_else(|| ScenarioError::NoQuestion { path: shown.clone(), id: id.to_string() })?;
        return Ok(record
            .mid_crucial_triples
            .iter()
            .map(|(h, r, t)| (h.clone(), r.clone(), Term::Entity(t.clone())))
            .collect());
    }
    let mut out = Vec::new();
    for (i, line) in text.lines().enumerate() {
        let line = line.trim_end_matches('\r');
        if line.trim().is_empty() || line.starts_with('#') {
            continue;
        }
        let fields: Vec<&str> = line.split('\t').map(str::trim).collect();
        let [h, r, t] = fields[..] else {
            return Err(ScenarioError::Line {
                path: shown.clone(),
                line: i + 1,
                message: "expected head<TAB>relation<TAB>tail".into(),
            });
        };
        let tail = match t.strip_prefix('"').and_then(|v| v.strip_suffix('"')) {
            Some(v) => Term::Literal(v.to_string()),
            None => Term::Entity(t.to_string()),
        };
        out.push((h.to_string(), r.to_string(), tail));
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn gog_records_by_id_or_index() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("ikg.json");
        std::fs::write(
            &path,
            r#"[{"ID": "WebQTest-1_x", "index": 0, "question": "q", "mid_crucial_triples": [["m.a", "r.s.t", "m.b"], ["m.b", "r.s.u", "m.a"]]},
                {"ID": "WebQTest-2_y", "index": 1, "mid_crucial_triples": []}]"#,
        )
        .unwrap();
        let by_id = load(&path, Some("WebQTest-1_x")).unwrap();
        assert_eq!(by_id[1], ("m.b".into(), "r.s.u".into(), Term::Entity("m.a".into())));
        assert_eq!(load(&path, Some("0")).unwrap(), by_id);
        assert!(load(&path, Some("1")).unwrap().is_empty());
        assert!(matches!(load(&path, Some("9")), Err(ScenarioError::NoQuestion { .. })));
        assert!(matches!(load(&path, None), Err(ScenarioError::NeedId { .. })));
        std::fs::write(&path, "{\"not\": \"a list\"}").unwrap();
        assert!(matches!(load(&path, Some("0")), Err(ScenarioError::Format { .. })));
    }

    #[test]
    fn tsv_scenarios() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("hide.tsv");
        std::fs::write(&path, "# hidden\nm.a\tr\tm.b\nm.a\tr\t\"1901\"\n").unwrap();
        assert_eq!(load(&path, None).unwrap()[1].2, Term::Literal("1901".into()));
        std::fs::write(&path, "m.a\tr\n").unwrap();
        assert!(
            load(&path, None).unwrap_err().to_string().ends_with("hide.tsv:1: expected head<TAB>relation<TAB>tail")
        );
    }
}
