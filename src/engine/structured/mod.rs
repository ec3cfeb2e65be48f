//! Structured replies: what a reply shape is (`shape`), the shapes every method may ask for
//! (`generic`), and the reader that turns a reply of a shape back into the text the method's
//! parsers read (`read`). Each method's own shapes are in its folder.
//!
//! Why render back to text instead of a second set of parsers: one reading path for both modes,
//! so every rule the parsers enforce (only offered candidates, at most the width, scores
//! normalised, Yes/No defaults) holds for a structured reply exactly as for a free-text one,
//! and the free-text parser is the fallback for a reply that is not JSON of the shape. The
//! model's own reply stays in the trace.

mod generic;
mod read;
mod shape;
mod text;

pub(crate) use generic::{ANSWER, GENERIC, REASONED_ANSWER, TOPICS, VERDICT, judgment, judgment_options};
pub(crate) use read::read;
pub(crate) use shape::{Forms, array, distinct, enum_of, number, numbers_up_to, object, string};
pub use shape::{Offer, Reasons, Reply, ReplyShape, json_text};
pub(crate) use text::{clean, reachable_answers, score};

#[cfg(test)]
mod tests {
    use super::generic::REASON_CHARS;
    use super::read::{Reading, close_truncated};
    use super::text::reachable_answers;
    use super::*;
    use crate::engine::{Registry, parse};
    use crate::llm::ReplySchema;
    use serde_json::json;

    /// The shapes the built-in methods define (the generic ones aside), each once (ToG and ToG-R
    /// list the same ones).
    fn method_shapes() -> Vec<ReplyShape> {
        let mut shapes: Vec<ReplyShape> = Vec::new();
        for shape in Registry::builtin().entries().iter().flat_map(|e| e.shapes) {
            match shapes.iter().find(|s| s.name == shape.name) {
                Some(known) => assert!(known.same_as(shape), "{} is one shape", shape.name),
                None => shapes.push(*shape),
            }
        }
        shapes
    }

    /// A built-in method's shape, by name.
    fn shape(name: &str) -> &'static ReplyShape {
        Registry::builtin().shape(name).unwrap()
    }

    fn read_in(schema: &ReplySchema, reply: &str) -> Option<Reading> {
        read(schema, reply, &method_shapes())
    }

    fn read_as(shape: &Reply<'_>, reply: &str) -> Option<String> {
        read_in(&shape.reply_schema(), reply).map(|r| r.text)
    }

    fn group_offer(groups: &[Vec<String>]) -> Offer<'_> {
        Offer { lists: groups.iter().map(Vec::as_slice).collect(), count: 0, width: 0 }
    }

    #[test]
    fn relations_read_back_through_the_parser() {
        let cands = vec!["a.b".to_string(), "c.d".to_string(), "e.f".to_string()];
        let shape = Reply::new(shape("relations"), Offer::names(&cands, 2));
        let schema = shape.schema();
        assert_eq!(schema["properties"]["relations"]["maxItems"], 2);
        assert_eq!(schema["properties"]["relations"]["items"]["properties"]["relation"]["enum"], json!(cands));
        let text =
            read_as(&shape, r#"{"relations": [{"relation": "c.d", "score": 0.7}, {"relation": "a.b", "score": 0.3}]}"#)
                .unwrap();
        let parsed = parse::parse_scored_choices(&text, &cands, 2);
        assert_eq!(parsed.items, vec![(1, 0.7), (0, 0.3)]);
        assert!(parsed.notes.is_empty(), "{:?}", parsed.notes);
    }

    /// Every string in a schema's enums, wherever they stand.
    fn enum_strings(schema: &serde_json::Value, out: &mut Vec<String>) {
        match schema {
            serde_json::Value::Object(fields) => {
                if let Some(values) = fields.get("enum").and_then(|e| e.as_array()) {
                    out.extend(values.iter().filter_map(|v| v.as_str().map(String::from)));
                }
                fields.values().for_each(|v| enum_strings(v, out));
            }
            serde_json::Value::Array(items) => items.iter().for_each(|v| enum_strings(v, out)),
            _ => {}
        }
    }

    #[test]
    fn names_that_break_a_servers_grammar_are_never_sent_and_read_back_as_themselves() {
        let names: Vec<String> = [
            "David \"Buck\" Wheat",
            "David 'Buck' Wheat",
            "back\\slash",
            "Line\nBreak",
            "Bell\u{7}Ringer",
            "Brace {d}",
            "Zürich 東京 😀",
        ]
        .map(String::from)
        .to_vec();
        let groups = vec![names.clone(), vec!["x\"y".to_string()]];
        let unified = [("Quote\"ville".to_string(), names.clone())];
        let shapes = [
            Reply::new(shape("relations"), Offer::names(&names, 3)),
            Reply::new(shape("choice"), Offer::names(&names, 3)),
            Reply::new(shape("entity_scores"), Offer::names(&names, names.len())),
            Reply::new(shape("entity_groups"), group_offer(&groups)),
            Reply::new(
                shape("unified_relations"),
                Offer {
                    lists: unified.iter().flat_map(|(e, r)| [std::slice::from_ref(e), r.as_slice()]).collect(),
                    count: 0,
                    width: 2,
                },
            ),
            judgment(&names),
        ];
        for shape in &shapes {
            let mut sent = Vec::new();
            enum_strings(&shape.schema(), &mut sent);
            assert!(!sent.is_empty(), "{}", shape.name());
            for value in &sent {
                assert!(
                    !value.contains(['"', '\\']) && !value.chars().any(char::is_control),
                    "{}: {value:?}",
                    shape.name()
                );
            }
            // Distinct names stay distinct: the quoted name's form does not take the name
            // written with single quotes.
            let mut unique = sent.clone();
            unique.sort();
            unique.dedup();
            assert_eq!(unique.len(), sent.len(), "{}: {sent:?}", shape.name());
        }
        // A reply choosing by the forms sent reads back as the names.
        let shape = Reply::new(shape("entity_scores"), Offer::names(&names, names.len()));
        let schema = shape.reply_schema();
        let form = |name: &str| schema.renamed.iter().find(|(_, n)| n == name).map(|(s, _)| s.clone()).unwrap();
        assert_eq!(form("David \"Buck\" Wheat"), "David 'Buck' Wheat (2)");
        assert_eq!(form("back\\slash"), "back/slash");
        let reply = json!({"scores": [{"entity": form("David \"Buck\" Wheat"), "score": 0.6},
                                      {"entity": form("back\\slash"), "score": 0.3},
                                      {"entity": "David 'Buck' Wheat", "score": 0.1}]});
        let text = read_in(&schema, &reply.to_string()).unwrap().text;
        let (scores, _) = parse::parse_score_list(&text, &names).unwrap();
        assert_eq!(scores, vec![0.6, 0.1, 0.3, 0.0, 0.0, 0.0, 0.0]);
        let shape = judgment(&names);
        let schema = shape.reply_schema();
        let reply = json!({"reason": "r", "answer": [form("David \"Buck\" Wheat"), "back/slash", "Zürich 東京 😀", "Brace {d}", form("Line\nBreak")]});
        let mut notes = Vec::new();
        let text = read_in(&schema, &reply.to_string()).unwrap().text;
        assert_eq!(parse::parse_yes_no(&text), Some(true), "{text}");
        let answers = parse::parse_answers(&text).unwrap();
        let taken = reachable_answers(&names, &answers, &mut notes);
        assert_eq!(
            taken,
            ["David \"Buck\" Wheat", "back\\slash", "Zürich 東京 😀", "Brace {d}", "Line\nBreak"],
            "{text} {notes:?}"
        );
    }

    #[test]
    fn names_that_differ_only_in_a_line_break_stay_apart_through_a_judgment() {
        let names: Vec<String> =
            ["Line\nBreak", "Line Break", "Line\rBreak", "Line Break (2)"].map(String::from).to_vec();
        let shape = judgment(&names);
        let schema = shape.reply_schema();
        let form =
            |name: &str| schema.renamed.iter().find(|(_, n)| n == name).map_or(name.to_string(), |(s, _)| s.clone());
        for chosen in [vec![0], vec![1], vec![2], vec![3], vec![0, 1, 2, 3], vec![2, 0]] {
            let answer: Vec<String> = chosen.iter().map(|&i| form(&names[i])).collect();
            let reply = json!({"reason": "r", "answer": answer});
            let text = read_in(&schema, &reply.to_string()).unwrap().text;
            let mut notes = Vec::new();
            let taken = reachable_answers(&names, &parse::parse_answers(&text).unwrap(), &mut notes);
            let expected: Vec<String> = chosen.iter().map(|&i| names[i].clone()).collect();
            assert_eq!(taken, expected, "{text} {notes:?}");
        }
    }

    #[test]
    fn a_raw_line_break_inside_a_string_is_read_as_the_models_text() {
        // llama-cpp-python's grammar for a string with `maxLength` let a raw newline through.
        let options = vec!["Line Break".to_string()];
        let shape = judgment(&options);
        let text = read_as(&shape, "{\"reason\": \"first\nsecond\", \"answer\": [\"Line Break\"]}").unwrap();
        assert_eq!(parse::parse_yes_no(&text), Some(true), "{text}");
        assert_eq!(parse::parse_answers(&text), Some(vec!["Line Break".to_string()]));
    }

    #[test]
    fn entity_scores_follow_the_prompt_order() {
        let cands = vec!["Paris".to_string(), "Lyon".to_string(), "Nice".to_string()];
        let shape = Reply::new(shape("entity_scores"), Offer::names(&cands, cands.len()));
        let text =
            read_as(&shape, r#"{"scores": [{"entity": "Nice", "score": 0.25}, {"entity": "Paris", "score": 0.75}]}"#)
                .unwrap();
        assert_eq!(text, "Score: 0.75, 0, 0.25");
        let (scores, notes) = parse::parse_score_list(&text, &cands).unwrap();
        assert_eq!(scores, vec![0.75, 0.0, 0.25]);
        assert!(notes.is_empty(), "{notes:?}");
    }

    #[test]
    fn verdicts_answers_and_steps() {
        let text =
            read_as(&Reply::from(&VERDICT), r#"{"reason": "a {b}", "sufficient": true, "answer": ["Labor Party"]}"#)
                .unwrap();
        assert_eq!(parse::parse_yes_no(&text), Some(true));
        assert_eq!(parse::parse_answers(&text), Some(vec!["Labor Party".to_string()]));
        let text = read_as(&Reply::from(&VERDICT), r#"{"reason": "", "sufficient": false, "answer": ["x"]}"#).unwrap();
        assert_eq!((parse::parse_yes_no(&text), parse::parse_answers(&text)), (Some(false), None));
        let text =
            read_as(&Reply::from(&REASONED_ANSWER), r#"{"reasoning": "First {x}.", "answer": ["Washington, D.C."]}"#)
                .unwrap();
        assert_eq!(parse::parse_answers(&text), Some(vec!["Washington, D.C.".to_string()]));
        // Placeholders copied from the shape line and sentences are not answers.
        let text =
            read_as(&Reply::from(&ANSWER), r#"{"answer": ["<answer>", "The party in Canberra is the ALP.", "ALP"]}"#);
        assert_eq!(text.as_deref(), Some("{ALP}"));
        let text = read_as(&Reply::from(&ANSWER), r#"{"answer": ["<answer>"]}"#).unwrap();
        assert_eq!(parse::parse_answers(&text), None);
        let text = read_as(
            &Reply::from(shape("gog_step")),
            r#"{"thought": "t", "action": "Search", "arguments": ["Canberra"]}"#,
        )
        .unwrap();
        let (_, action) = crate::engine::methods::gog::parse::parse_step(&text).unwrap();
        assert_eq!(action, crate::engine::methods::gog::parse::Action::Search(vec!["Canberra".into()]));
        // An empty relation choice reads as no reply of the shape, as saved sessions have it.
        let offered = vec!["a".to_string()];
        assert_eq!(read_as(&Reply::new(shape("choice"), Offer::names(&offered, 3)), r#"{"relations": []}"#), None);
        let text = read_as(&Reply::new(shape("kept"), Offer::numbered(3, 3)), r#"{"keep": [3, 1]}"#).unwrap();
        assert_eq!(crate::engine::methods::gog::parse::parse_kept(&text, 3).unwrap(), vec![2, 0]);
    }

    #[test]
    fn a_judgment_is_its_answer_among_what_the_triples_reach() {
        let options = vec!["Australian Labor Party".to_string(), "Anthony Albanese".to_string()];
        let shape = judgment(&options);
        let schema = shape.schema();
        // The reason is asked first (a grammar keeps this order), capped to a short line.
        let order: Vec<&String> = schema["properties"].as_object().unwrap().keys().collect();
        assert_eq!(order, ["reason", "answer"]);
        assert_eq!(schema["properties"]["reason"]["maxLength"], REASON_CHARS);
        assert_eq!(
            schema["properties"]["answer"]["items"]["enum"],
            json!(["Australian Labor Party", "Anthony Albanese", "unknown"])
        );
        let reading = |reply: &str| read_in(&shape.reply_schema(), reply).unwrap();
        let yes = reading(r#"{"reason": "Albanese leads {Labor}.", "answer": ["australian labor party"]}"#);
        assert_eq!(parse::parse_yes_no(&yes.text), Some(true));
        assert_eq!(parse::parse_answers(&yes.text), Some(vec!["Australian Labor Party".to_string()]), "as offered");
        assert!(yes.notes.is_empty(), "{:?}", yes.notes);
        let unknown = reading(r#"{"reason": "Not yet.", "answer": ["unknown"]}"#);
        assert_eq!((parse::parse_yes_no(&unknown.text), parse::parse_answers(&unknown.text)), (Some(false), None));
        // An answer outside the choices (a server that does not enforce the enum) is not taken.
        let outside = reading(r#"{"reason": "", "answer": ["Liberal Party", "unknown"]}"#);
        assert_eq!(parse::parse_yes_no(&outside.text), Some(false));
        assert_eq!(
            outside.notes,
            ["the model answered \"Liberal Party\", which the shown triples do not reach: not taken"]
        );
        let mixed = reading(r#"{"reason": "", "answer": ["Liberal Party", "Anthony Albanese"]}"#);
        assert_eq!(parse::parse_answers(&mixed.text), Some(vec!["Anthony Albanese".to_string()]));
        assert_eq!(read_in(&shape.reply_schema(), r#"{"reason": "no answer field"}"#), None);
    }

    #[test]
    fn reason_first_shapes_are_readable_as_text_or_extracted() {
        let gog_step = Reply::from(shape("gog_step"));
        assert!(Reply::from(&REASONED_ANSWER).reasons_first() && gog_step.reasons_first());
        assert!(!Reply::from(&ANSWER).reasons_first() && !judgment(&[]).reasons_first());
        assert_eq!(Reply::from(&REASONED_ANSWER).extracted(), Reply::from(&ANSWER));
        assert_eq!(gog_step.extracted(), gog_step, "a step is extracted into a step");
        let readable = |name, reply| crate::engine::extraction::readable_as_text(name, reply, &[*shape("gog_step")]);
        assert!(readable("answer", "First, … The answer is {Canberra}."));
        assert!(!readable("answer", "I am not sure."));
        assert!(readable("gog_step", "Thought: look it up\nAction: Search[Canberra]"));
        assert!(!readable("gog_step", "Thought: look it up"));
    }

    #[test]
    fn not_the_shape_is_none_and_truncated_json_is_closed() {
        assert_eq!(read_as(&Reply::from(&ANSWER), "The answer is {Paris}."), None);
        assert_eq!(read_as(&Reply::from(&ANSWER), r#"{"entities": ["x"]}"#), None, "another shape");
        assert_eq!(read_as(&Reply::from(&VERDICT), r#"{"sufficient": "maybe"}"#), None, "a wrong type");
        let cut = read_in(&Reply::from(&VERDICT).reply_schema(), r#"{"reason": "The chain joins Canb"#);
        assert_eq!(cut, None, "cut before the verdict: nothing to read");
        let cut =
            read_in(&Reply::from(&VERDICT).reply_schema(), r#"{"sufficient": true, "answer": ["Labor Par"#).unwrap();
        assert!(!cut.notes.is_empty());
        assert_eq!(parse::parse_answers(&cut.text), Some(vec!["Labor Par".to_string()]));
        assert_eq!(close_truncated(r#"{"a": 1, "b"#), r#"{"a": 1}"#);
        assert_eq!(close_truncated(r#"{"a": [1, "#), r#"{"a": [1]}"#);
        assert_eq!(close_truncated(r#"{"a": 1, "b": "#), r#"{"a": 1}"#);
        let fenced = "```json\n{\"answer\": [\"Paris\"]}\n```";
        assert_eq!(read_as(&Reply::from(&ANSWER), fenced).as_deref(), Some("{Paris}"));
    }

    #[test]
    fn every_shape_has_a_strict_object_schema() {
        let (c, g) = (vec!["x".to_string()], vec!["y".to_string()]);
        let offer = Offer { lists: vec![&c, &g], count: 3, width: 1 };
        let mut names: Vec<&str> = Vec::new();
        for shape in GENERIC.iter().chain(&method_shapes()) {
            let reply = Reply::new(shape, offer.clone());
            let s = reply.schema();
            assert_eq!(s["type"], "object", "{}", shape.name);
            assert_eq!(s["additionalProperties"], false, "{}", shape.name);
            assert_eq!(
                s["required"].as_array().map(Vec::len),
                s["properties"].as_object().map(|p| p.len()),
                "{}: every property required",
                shape.name
            );
            assert!(reply.instruction().contains("JSON"));
            assert!(!names.contains(&shape.name), "{} named once", shape.name);
            names.push(shape.name);
        }
        // Each template names the shape its calls ask for: a shape there is.
        for t in Registry::builtin().templates() {
            assert!(t.reply().is_none_or(|r| names.contains(&r)), "{t}: {:?}", t.reply());
        }
    }

    #[test]
    fn a_methods_own_shape_reaches_it_as_its_json_text() {
        const ZONE: ReplyShape = ReplyShape::json(
            "time_zone",
            |_| {
                json!({"type": "object", "properties": {"zone": {"type": "string"}, "sure": {"type": "boolean"}},
                       "required": ["zone", "sure"], "additionalProperties": false})
            },
            |_| r#"{"zone": "<a time zone>", "sure": <true or false>}"#.into(),
        );
        let shape = Reply::from(&ZONE);
        assert_eq!(shape.name(), "time_zone");
        assert!(shape.instruction().contains(r#"{"zone": "<a time zone>", "sure": <true or false>}"#));
        assert!(!shape.reasons_first());
        let schema = shape.reply_schema();
        assert_eq!(schema.schema["required"], json!(["zone", "sure"]));
        let own = [ZONE];
        let fits = read(&schema, "```json\n{\"zone\": \"AEST\", \"sure\": true}\n```", &own).unwrap();
        assert_eq!(fits.text, r#"{"zone":"AEST","sure":true}"#, "compact, in the order written");
        assert!(fits.notes.is_empty());
        // Cut off and closed, it is read if it then fits; one that does not fit is not read.
        assert_eq!(read(&schema, r#"{"zone": "AEST", "sure": tr"#, &own), None);
        assert_eq!(read(&schema, r#"{"zone": "AEST"}"#, &own), None, "a required field missing");
        assert_eq!(read(&schema, r#"{"zone": 10, "sure": true}"#, &own), None, "a wrong type");
        assert_eq!(read(&schema, "It is {AEST}.", &own), None, "free text");
        // An own shape whose enum offers a name no enum may hold: the reply chooses its form,
        // fits the schema as sent, and reaches the method as the name.
        const PICK: ReplyShape = ReplyShape::json(
            "pick",
            |offer| {
                let names = offer.lists.first().copied().unwrap_or_default();
                object(&[("name", enum_of(&distinct(names)))])
            },
            |_| r#"{"name": "<one of the names>"}"#.into(),
        );
        let names = vec!["David \"Buck\" Wheat".to_string(), "Plain".to_string()];
        let schema = Reply::new(&PICK, Offer::names(&names, 1)).reply_schema();
        let picked = read(&schema, r#"{"name": "David 'Buck' Wheat"}"#, &[PICK]).unwrap();
        assert_eq!(picked.text, r#"{"name":"David \"Buck\" Wheat"}"#);
        assert_eq!(read(&schema, r#"{"name": "Someone else"}"#, &[PICK]), None, "not among the names");
    }
}
