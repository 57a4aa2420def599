//! Arbitrary bytes and arbitrary JSON lines never make the reader panic; valid native rows
//! read back as written.

use std::path::Path;

use dlm_replay::{read_from, Format, ReplayError};
use proptest::prelude::*;
use serde_json::{json, Map, Value};

const FORMATS: [Format; 5] = [
    Format::Auto,
    Format::Native,
    Format::LmEval,
    Format::HumanEval,
    Format::EvalPlus,
];

fn parse(bytes: &[u8], format: Format) -> Result<dlm_replay::ReplaySet, ReplayError> {
    read_from(bytes, Path::new("fuzz.jsonl"), format)
}

/// Any JSON value, a few levels deep.
fn any_json() -> impl Strategy<Value = Value> {
    let leaf = prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::Bool),
        any::<i64>().prop_map(Value::from),
        any::<u64>().prop_map(Value::from),
        any::<f64>().prop_map(Value::from),
        "\\PC{0,12}".prop_map(Value::String),
    ];
    leaf.prop_recursive(3, 24, 4, |inner| {
        prop_oneof![
            prop::collection::vec(inner.clone(), 0..4).prop_map(Value::Array),
            prop::collection::btree_map("[a-z_]{1,8}", inner, 0..4)
                .prop_map(|m| Value::Object(m.into_iter().collect())),
        ]
    })
}

/// An object that uses the keys the formats look at, with values of any type.
fn keyed_object() -> impl Strategy<Value = Value> {
    const KEYS: [&str; 13] = [
        "doc_id",
        "generation",
        "sample",
        "steps",
        "nfe",
        "seconds",
        "sampler",
        "resps",
        "filtered_resps",
        "filter",
        "task_id",
        "completion",
        "solution",
    ];
    prop::collection::vec((0..KEYS.len(), any_json()), 0..7).prop_map(|pairs| {
        let mut obj = Map::new();
        for (k, v) in pairs {
            obj.insert(KEYS[k].to_owned(), v);
        }
        Value::Object(obj)
    })
}

/// Lines that are plausible rows of some format, with small ids so that collisions happen.
fn plausible_line() -> impl Strategy<Value = Value> {
    prop_oneof![
        (0u32..4, 0u32..3, prop::option::of(0u32..3), "\\PC{0,6}").prop_map(
            |(doc, sample, steps, g)| json!({"doc_id": doc, "sample": sample, "steps": steps, "generation": g})
        ),
        (0u64..4, prop::collection::vec("\\PC{0,4}", 0..3), prop::option::of("[ab]")).prop_map(
            |(doc, gens, filter)| json!({"doc_id": doc, "resps": [gens], "filtered_resps": [], "filter": filter})
        ),
        (0u32..3, "\\PC{0,6}").prop_map(|(t, c)| json!({"task_id": format!("HumanEval/{t}"), "completion": c})),
        (0u32..3, "\\PC{0,6}").prop_map(|(t, c)| json!({"task_id": format!("HumanEval/{t}"), "solution": c})),
    ]
}

fn check_error_names_a_line(err: &ReplayError) {
    match err {
        ReplayError::NotUtf8 { line, .. }
        | ReplayError::Malformed { line, .. }
        | ReplayError::MixedFormats { line, .. } => assert!(*line >= 1),
        ReplayError::Duplicate {
            first_line,
            second_line,
            ..
        } => assert!(first_line < second_line),
        ReplayError::Empty { .. } | ReplayError::Io { .. } => {}
        other => panic!("unexpected error from reading: {other}"),
    }
    // Display never panics either.
    let _ = err.to_string();
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]

    #[test]
    fn random_bytes_never_panic(bytes in prop::collection::vec(any::<u8>(), 0..512)) {
        for format in FORMATS {
            match parse(&bytes, format) {
                Ok(set) => {
                    prop_assert!(!set.is_empty());
                    let _ = set.check_against(&["0".to_owned()], 2, None);
                }
                Err(err) => check_error_names_a_line(&err),
            }
        }
    }

    #[test]
    fn random_json_lines_never_panic(
        lines in prop::collection::vec(prop_oneof![any_json(), keyed_object(), plausible_line()], 0..8),
        blank in prop::collection::vec(any::<bool>(), 8),
    ) {
        let mut text = String::new();
        for (line, blank) in lines.iter().zip(&blank) {
            if *blank {
                text.push_str("  \n");
            }
            text.push_str(&line.to_string());
            text.push('\n');
        }
        for format in FORMATS {
            match parse(text.as_bytes(), format) {
                Ok(set) => {
                    prop_assert!(set.format() != Format::Auto);
                    for steps in set.step_counts() {
                        let ids: Vec<String> = set.rows_at(steps).map(|r| r.doc_id.clone()).collect();
                        let _ = set.check_against(&ids, 1, steps).map_err(|e| e.to_string());
                        for row in set.rows_at(steps) {
                            prop_assert_eq!(set.get(steps, &row.doc_id, row.sample), Some(row));
                        }
                    }
                }
                Err(err) => check_error_names_a_line(&err),
            }
        }
    }

    #[test]
    fn valid_native_rows_read_back(
        rows in prop::collection::btree_map(
            (0u32..50, 0u32..4, prop::option::of(1u32..100)),
            ("\\PC{0,20}", prop::option::of(any::<u64>()), prop::option::of(0.0f64..1e6)),
            1..20,
        )
    ) {
        let mut text = String::new();
        for ((doc, sample, steps), (generation, nfe, seconds)) in &rows {
            let mut obj = json!({"doc_id": format!("d{doc}"), "generation": generation, "sample": sample});
            if let Some(s) = steps { obj["steps"] = json!(s); }
            if let Some(n) = nfe { obj["nfe"] = json!(n); }
            if let Some(s) = seconds { obj["seconds"] = json!(s); }
            text.push_str(&obj.to_string());
            text.push('\n');
        }
        let set = parse(text.as_bytes(), Format::Auto).unwrap();
        prop_assert_eq!(set.len(), rows.len());
        for (i, ((doc, sample, steps), (generation, nfe, seconds))) in rows.iter().enumerate() {
            let row = set.get(*steps, &format!("d{doc}"), *sample).unwrap();
            prop_assert_eq!(&row.generation, generation);
            prop_assert_eq!(row.nfe, *nfe);
            // serde_json without `float_roundtrip` may parse a float one ulp off.
            match (row.seconds, seconds) {
                (Some(read), Some(written)) => prop_assert!((read - written).abs() <= written.abs() * 1e-15),
                (read, written) => prop_assert_eq!(read, *written),
            }
            prop_assert_eq!(row.line, i + 1);
        }
    }
}
