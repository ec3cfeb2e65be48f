//! Reply parsers against well-formed and malformed model output.

use ongraph::engine::parse_answers;
use ongraph::testing::engine::{
    parse_group_scores, parse_names, parse_score_list, parse_scored_choices, parse_unified_choices, parse_yes_no,
};
use proptest::prelude::*;

fn rels() -> Vec<String> {
    [
        "location.location.containedby",
        "location.country.capital",
        "people.person.nationality",
        "sports.sports_team.founded",
    ]
    .iter()
    .map(|s| s.to_string())
    .collect()
}

/// A reply, the expected (candidate index, score) pairs rounded to 2 places, the rejected names.
type Case = (&'static str, Vec<(usize, f64)>, Vec<&'static str>);

#[test]
fn relation_prune_replies() {
    #[rustfmt::skip]
    let table: Vec<Case> = vec![
        // 1. The exemplar's own format.
        ("1. {location.location.containedby (Score: 0.5)}: reason.\n2. {location.country.capital (Score: 0.3)}: r.\n3. {people.person.nationality (Score: 0.2)}: r.",
         vec![(0, 0.5), (1, 0.3), (2, 0.2)], vec![]),
        // 2. No braces.
        ("location.location.containedby (Score: 0.6)\nlocation.country.capital (Score: 0.4)", vec![(0, 0.6), (1, 0.4)], vec![]),
        // 3. Scores summing to more than 1 are normalised.
        ("{location.location.containedby (Score: 0.6)} {location.country.capital (Score: 0.6)}", vec![(0, 0.5), (1, 0.5)], vec![]),
        // 4. Percentages.
        ("{location.location.containedby (Score: 70%)}\n{location.country.capital (Score: 30%)}", vec![(0, 0.7), (1, 0.3)], vec![]),
        // 5. Integers (a 0-10 scale).
        ("{location.location.containedby (Score: 8)}, {location.country.capital (Score: 2)}", vec![(0, 0.8), (1, 0.2)], vec![]),
        // 6. An invented relation is rejected, never kept (and its share is not handed on).
        ("{location.location.containedby (Score: 0.5)} {government.government.party (Score: 0.5)}", vec![(0, 0.5)], vec!["government.government.party"]),
        // 7. More than N items: the best N kept (their scores as given: the rest went to the dropped one).
        ("{people.person.nationality (Score: 0.1)} {location.location.containedby (Score: 0.4)} {location.country.capital (Score: 0.3)} {sports.sports_team.founded (Score: 0.2)}",
         vec![(0, 0.4), (1, 0.3), (3, 0.2)], vec![]),
        // 8. Case differences.
        ("{Location.Location.ContainedBy (Score: 1.0)}", vec![(0, 1.0)], vec![]),
        // 9. Last segment only.
        ("{containedby (Score: 0.9)} {capital (Score: 0.1)}", vec![(0, 0.9), (1, 0.1)], vec![]),
        // 10. Prose before the name inside the braces.
        ("{The best is location.country.capital (Score: 1)}", vec![(1, 1.0)], vec![]),
        // 11. `name: score` lines.
        ("location.location.containedby: 0.7\nlocation.country.capital: 0.3", vec![(0, 0.7), (1, 0.3)], vec![]),
        // 12. Bulleted `name - score` lines.
        ("- location.location.containedby - 0.5\n- people.person.nationality - 0.5", vec![(0, 0.5), (2, 0.5)], vec![]),
        // 13. Names in braces without scores: equal shares.
        ("I would pick {location.location.containedby} and {location.country.capital}.", vec![(0, 0.5), (1, 0.5)], vec![]),
        // 14. A relation listed twice: the first score counts.
        ("{location.location.containedby (Score: 0.6)} {location.location.containedby (Score: 0.1)} {location.country.capital (Score: 0.4)}",
         vec![(0, 0.6), (1, 0.4)], vec![]),
        // 15. Nothing usable.
        ("I cannot answer that.", vec![], vec![]),
        // 16. Empty reply.
        ("", vec![], vec![]),
        // 17. Score written lower-case and with '='.
        ("{location.country.capital (score=0.5)} {people.person.nationality (score=0.5)}", vec![(1, 0.5), (2, 0.5)], vec![]),
        // 18. Decimals without a leading zero.
        ("{location.country.capital (Score: .75)} {location.location.containedby (Score: .25)}", vec![(1, 0.75), (0, 0.25)], vec![]),
        // 19. Quoted names.
        ("{\"location.location.containedby\" (Score: 1.0)}", vec![(0, 1.0)], vec![]),
        // 20. All zero scores: zero (the model judged every one useless).
        ("{location.location.containedby (Score: 0)} {location.country.capital (Score: 0)}", vec![(0, 0.0), (1, 0.0)], vec![]),
        // 20b. Scores summing to less than 1 stay as given: a branch the model rates low.
        ("{location.location.containedby (Score: 0.2)} {location.country.capital (Score: 0.1)}", vec![(0, 0.2), (1, 0.1)], vec![]),
    ];
    for (i, (reply, want, rejected)) in table.iter().enumerate() {
        let got = parse_scored_choices(reply, &rels(), 3);
        let rounded: Vec<(usize, f64)> = got.items.iter().map(|(k, s)| (*k, (s * 100.0).round() / 100.0)).collect();
        assert_eq!(&rounded, want, "case {}: {reply:?} (notes {:?})", i + 1, got.notes);
        assert_eq!(got.rejected, *rejected, "case {}: rejected", i + 1);
        assert!(got.items.len() <= 3, "case {}: more than N kept", i + 1);
    }
}

#[test]
fn incoming_twins_are_told_apart() {
    let names =
        vec!["location.location.containedby".to_string(), "location.location.containedby (incoming)".to_string()];
    let got = parse_scored_choices(
        "{location.location.containedby (incoming) (Score: 0.7)} {location.location.containedby (Score: 0.3)}",
        &names,
        3,
    );
    assert_eq!(got.items, vec![(1, 0.7), (0, 0.3)]);
    // A relation offered only as incoming is found by its bare name too; with both directions
    // offered, the bare name is the outgoing one.
    let only_in = vec!["people.person.parents (incoming)".to_string(), "people.person.spouse".to_string()];
    assert_eq!(parse_scored_choices("{people.person.parents (Score: 1.0)}", &only_in, 3).items, vec![(0, 1.0)]);
    assert_eq!(parse_scored_choices("{location.location.containedby (Score: 1.0)}", &names, 3).items, vec![(0, 1.0)]);
}

#[test]
fn entity_score_lists() {
    let labels: Vec<String> =
        ["Australia", "Australian Capital Territory", "UnName_Entity"].iter().map(|s| s.to_string()).collect();
    #[rustfmt::skip]
    let table: Vec<(&str, Option<Vec<f64>>)> = vec![
        // 21. The exemplar's format, then prose with years that must not be read as scores.
        ("Score: 0.5, 0.3, 0.2\nThe 2012 and 2014 seasons...", Some(vec![0.5, 0.3, 0.2])),
        // 22. No "Score:" label.
        ("0.6, 0.2, 0.2", Some(vec![0.6, 0.2, 0.2])),
        // 23. Missing scores count as 0.
        ("Score: 0.5, 0.5", Some(vec![0.5, 0.5, 0.0])),
        // 24. Too many scores: the extra ones are ignored and the rest normalised.
        ("Score: 0.4, 0.4, 0.1, 0.1", Some(vec![0.44, 0.44, 0.11])),
        // 25. Percentages, normalised.
        ("Score: 50%, 25%, 25%", Some(vec![0.5, 0.25, 0.25])),
        // 26. Bracketed list.
        ("[0.7, 0.2, 0.1]", Some(vec![0.7, 0.2, 0.1])),
        // 27. Per-entity items instead of a list.
        ("{Australia (Score: 0.9)} {Australian Capital Territory (Score: 0.1)}", Some(vec![0.9, 0.1, 0.0])),
        // 28. Prose only: nothing read (years are not scores).
        ("Australia was federated in 1901 and Canberra founded in 1913.", None),
        // 29. Empty.
        ("", None),
        // 30. Space-separated.
        ("Score: 0.2 0.3 0.5", Some(vec![0.2, 0.3, 0.5])),
    ];
    for (i, (reply, want)) in table.iter().enumerate() {
        let got = parse_score_list(reply, &labels)
            .map(|(v, _)| v.iter().map(|s| (s * 100.0).round() / 100.0).collect::<Vec<_>>());
        assert_eq!(&got, want, "case {}: {reply:?}", i + 21);
    }
}

#[test]
fn yes_no_verdicts() {
    #[rustfmt::skip]
    let table: Vec<(&str, Option<bool>)> = vec![
        ("{Yes}. Based on the given knowledge triplets...", Some(true)),           // 31
        ("{No}. The triplets do not say...", Some(false)),                         // 32
        ("Yes, the answer is {Canberra}.", Some(true)),                            // 33
        ("no.", Some(false)),                                                      // 34
        ("After careful thought: {yes}", Some(true)),                              // 35
        ("The knowledge is insufficient to answer.", Some(false)),                 // 36
        ("These triplets are sufficient.", Some(true)),                            // 37
        ("I think so, the answer is {Australia}.", None),                          // 38
        ("", None),                                                                // 39
        ("Not enough information.", Some(false)),                                  // 40
        ("Notwithstanding the knowledge, Nobody knows", None),                     // 41: 'no' only inside words
    ];
    for (i, (reply, want)) in table.iter().enumerate() {
        assert_eq!(parse_yes_no(reply), *want, "case {}: {reply:?}", i + 31);
    }
}

#[test]
fn answers() {
    #[rustfmt::skip]
    let table: Vec<(&str, Option<Vec<&str>>)> = vec![
        ("{Yes}. Therefore, the answer to the question is {Australian Labor Party}.", Some(vec!["Australian Labor Party"])),
        ("The answer is {Washington, D.C.}.", Some(vec!["Washington, D.C."])),
        ("So the answer is {2010 | 2012 | 2014}.", Some(vec!["2010", "2012", "2014"])),
        ("The answer is Canberra.", Some(vec!["Canberra"])),
        ("{Yes}", None),
        ("I don't know.", None),
        ("{} is empty, the answer is {Cupertino}", Some(vec!["Cupertino"])),
        // A JSON object is read as one: its answer(s), never its text as a name.
        (r#"{"answer": "Canberra"}"#, Some(vec!["Canberra"])),
        (r#"Sure: {"answers": ["2010", "2012"], "sufficient": true}"#, Some(vec!["2010", "2012"])),
        (r#"{"reason": "unclear"}"#, None),
        // Characters whose lower case is longer or shorter in bytes never shift the cut.
        ("İİ: the answer is 東京", Some(vec!["東京"])),
        ("\u{212A} The answer is Paris.", Some(vec!["Paris"])),
    ];
    for (reply, want) in table {
        assert_eq!(parse_answers(reply), want.map(|v| v.iter().map(|s| s.to_string()).collect()), "{reply:?}");
    }
}

#[test]
fn a_bare_line_is_an_answer_only_if_it_is_a_name() {
    for name in ["Australian Labor Party", "2010 World Series", "Pacific Time Zone", "St. Petersburg"] {
        assert!(ongraph::testing::engine::is_bare_answer(name), "{name}");
    }
    for prose in [
        "The majority party in Canberra is the Australian Capital Territory.",
        "I am not sure which party you mean?",
        r#""answer": "Canberra""#,
        "[Canberra, Sydney]",
        "",
    ] {
        assert!(!ongraph::testing::engine::is_bare_answer(prose), "{prose}");
    }
}

#[test]
fn names_unified_and_groups() {
    assert_eq!(parse_names("{Lou Seal}"), vec!["Lou Seal"]);
    assert_eq!(parse_names("Topic entities: Canberra, Australia"), vec!["Canberra", "Australia"]);
    assert!(parse_names("").is_empty());

    let entities = vec![
        (
            "Canberra".to_string(),
            vec!["location.location.containedby".to_string(), "location.country.capital".to_string()],
        ),
        (
            "Australia".to_string(),
            vec![
                "location.country.capital".to_string(),
                "government.governmental_jurisdiction.head_of_government".to_string(),
            ],
        ),
    ];
    let got = parse_unified_choices(
        "{Canberra | location.location.containedby (Score: 0.8)}\n{Canberra | location.country.capital (Score: 0.2)}\n{Australia | government.governmental_jurisdiction.head_of_government (Score: 1.0)}\n{Australia | made.up (Score: 1.0)}",
        &entities,
        3,
    );
    assert_eq!(got[0].items, vec![(0, 0.8), (1, 0.2)]);
    assert_eq!(got[1].items, vec![(1, 1.0)]);
    assert_eq!(got[1].rejected, vec!["made.up"]);
    // Without the entity prefix, a relation only one entity has is given to it.
    let got = parse_unified_choices("{location.location.containedby (Score: 1)}", &entities, 3);
    assert_eq!(got[0].items, vec![(0, 1.0)]);

    let groups = vec![vec!["a".to_string(), "b".to_string()], vec!["c".to_string(), "d".to_string()]];
    let got = parse_group_scores("Group 1: 0.7, 0.3\nGroup 2: 0.1, 0.9\nGroup 7: 1, 0", &groups);
    assert_eq!(got, vec![Some(vec![0.7, 0.3]), Some(vec![0.1, 0.9])]);
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 2000, ..ProptestConfig::default() })]
    #[test]
    fn parsers_never_panic(reply in any::<String>(), junk in "[{}()%:.,0-9a-zA-Z |\n-]{0,200}") {
        for text in [&reply, &junk] {
            let got = parse_scored_choices(text, &rels(), 3);
            prop_assert!(got.items.len() <= 3);
            let sum: f64 = got.items.iter().map(|(_, s)| s).sum();
            prop_assert!(got.items.is_empty() || (sum - 1.0).abs() < 1e-6);
            if let Some((v, _)) = parse_score_list(text, &rels()) {
                prop_assert_eq!(v.len(), 4);
                prop_assert!(v.iter().all(|s| s.is_finite() && *s >= 0.0));
            }
            let _ = parse_yes_no(text);
            let _ = parse_answers(text);
            let _ = parse_names(text);
            let _ = parse_group_scores(text, &[rels()]);
        }
    }
}
