//! Each format read from hand-written fixtures, and each error naming its line.

use std::path::{Path, PathBuf};

use dlm_replay::{read, read_from, Format, ReplayError, ReplaySet};

fn fixture(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures")
        .join(name)
}

fn read_fixture(name: &str, format: Format) -> Result<ReplaySet, ReplayError> {
    read(&fixture(name), format)
}

fn read_bytes(bytes: &[u8], format: Format) -> Result<ReplaySet, ReplayError> {
    read_from(bytes, Path::new("inline.jsonl"), format)
}

fn ids(list: &[&str]) -> Vec<String> {
    list.iter().map(|s| (*s).to_owned()).collect()
}

#[test]
fn native_rows_keep_every_field_and_their_lines() {
    for format in [Format::Auto, Format::Native] {
        let set = read_fixture("native.jsonl", format).unwrap();
        assert_eq!(set.format(), Format::Native);
        assert_eq!(set.len(), 4);
        assert_eq!(set.step_counts(), vec![Some(64)]);

        let row = set.get(Some(64), "gsm8k/0", 1).unwrap();
        assert_eq!(row.generation, "#### 17");
        assert_eq!(row.nfe, Some(64));
        assert_eq!(row.seconds, Some(1.19));
        assert_eq!(row.sampler.as_deref(), Some("low_confidence"));
        assert_eq!(row.line, 2);

        // An integer doc_id is stored as its decimal text; `sample` defaults to 0; null is absent.
        let row = set.get(Some(64), "3", 0).unwrap();
        assert_eq!(row.generation, "def f(x):\n    return x * x\n");
        assert_eq!(row.sampler, None);
        assert_eq!(row.line, 3);

        // Line numbers count the blank line 4.
        let row = set.get(Some(64), "gsm8k/1", 0).unwrap();
        assert_eq!(row.line, 5);
        assert_eq!(row.nfe, None);
        assert_eq!(row.seconds, None);
        assert!(row.generation.contains('—'));

        assert!(set.get(None, "gsm8k/0", 0).is_none());
        assert!(set.get(Some(64), "gsm8k/0", 2).is_none());
    }
}

#[test]
fn three_step_counts_make_three_groups() {
    let set = read_fixture("native_steps.jsonl", Format::Auto).unwrap();
    assert_eq!(set.step_counts(), vec![Some(4), Some(16), Some(64)]);
    assert_eq!(set.rows_at(Some(4)).count(), 3);
    assert_eq!(set.rows_at(Some(16)).count(), 2);
    assert_eq!(set.rows_at(Some(64)).count(), 2);
    assert_eq!(set.get(Some(16), "b", 0).unwrap().generation, "y16");
    assert_eq!(set.get(Some(4), "a", 1).unwrap().generation, "x4 again");

    let docs = ids(&["a", "b"]);
    set.check_against(&docs, 1, Some(16)).unwrap();
    set.check_against(&docs, 1, Some(64)).unwrap();
    // At steps 4 "a" has a second sample: surplus for n = 1, "b" lacks one for n = 2.
    let err = set.check_against(&docs, 1, Some(4)).unwrap_err();
    let ReplayError::Mismatch(m) = &err else {
        panic!("{err}")
    };
    assert_eq!(m.surplus_rows, 1);
    assert_eq!(m.surplus_first, vec![("a".to_owned(), 1, 7)]);
    assert!(err.to_string().contains("\"a\" sample 1 (line 7)"), "{err}");
    let err = set.check_against(&docs, 2, Some(4)).unwrap_err();
    let ReplayError::Mismatch(m) = &err else {
        panic!("{err}")
    };
    assert_eq!((m.missing_docs, m.missing_rows), (1, 1));
    assert_eq!(m.missing_first, vec![("b".to_owned(), vec![1])]);

    let err = set.check_against(&docs, 1, Some(8)).unwrap_err();
    assert!(matches!(
        err,
        ReplayError::NoSuchSteps { steps: Some(8), .. }
    ));
    assert!(
        err.to_string().contains("steps=4, steps=16, steps=64"),
        "{err}"
    );
}

#[test]
fn lm_eval_gsm8k_keeps_one_row_per_doc_across_filters() {
    let name = "samples_gsm8k_2025-03-02T09-14-55.481203.jsonl";
    for format in [Format::Auto, Format::LmEval] {
        let set = read_fixture(name, format).unwrap();
        assert_eq!(set.format(), Format::LmEval);
        // Six records: three documents, each logged for strict-match and flexible-extract.
        assert_eq!(set.len(), 3);
        assert_eq!(set.step_counts(), vec![None]);
        let row = set.get(None, "1", 0).unwrap();
        assert_eq!(
            row.generation,
            "White fiber: 2 / 2 = 1 bolt.\nTotal: 2 + 1 = 3 bolts — answer 3."
        );
        assert_eq!(row.line, 2);
        assert_eq!((row.steps, row.nfe, row.seconds), (None, None, None));
        set.check_against(&ids(&["0", "1", "2"]), 1, None).unwrap();
    }
}

#[test]
fn lm_eval_without_filter_field_accepts_identical_copies() {
    let set = read_fixture("samples_gsm8k_v040.jsonl", Format::Auto).unwrap();
    assert_eq!(set.len(), 2);
    assert_eq!(set.get(None, "0", 0).unwrap().line, 1);
    assert_eq!(set.get(None, "1", 0).unwrap().line, 2);
}

#[test]
fn lm_eval_repeats_become_samples_in_order() {
    let set = read_fixture(
        "samples_mbpp_2025-03-02T10-02-17.094512.jsonl",
        Format::Auto,
    )
    .unwrap();
    assert_eq!(set.len(), 6);
    let rows: Vec<(&str, u32, usize)> = set
        .rows()
        .iter()
        .map(|r| (r.doc_id.as_str(), r.sample, r.line))
        .collect();
    assert_eq!(
        rows,
        vec![
            ("10", 0, 1),
            ("10", 1, 1),
            ("10", 2, 1),
            ("11", 0, 2),
            ("11", 1, 2),
            ("11", 2, 2)
        ]
    );
    assert_eq!(
        set.get(None, "10", 2).unwrap().generation,
        "def remove_Occ(s, ch):\n    return s.strip(ch)\n"
    );
    // An empty generation is a generation.
    assert_eq!(set.get(None, "11", 2).unwrap().generation, "");
    set.check_against(&ids(&["10", "11"]), 3, None).unwrap();
}

#[test]
fn lm_eval_conflicting_copies_are_duplicates() {
    let a = r#"{"doc_id": 4, "resps": [["x"]], "filtered_resps": ["x"], "filter": "strict-match"}"#;
    let b =
        r#"{"doc_id": 4, "resps": [["y"]], "filtered_resps": ["y"], "filter": "flexible-extract"}"#;
    let c = r#"{"doc_id": 4, "resps": [["x"]], "filtered_resps": ["x"], "filter": "strict-match"}"#;
    for second in [b, c] {
        let text = format!("{a}\n{second}\n");
        let err = read_bytes(text.as_bytes(), Format::Auto).unwrap_err();
        let ReplayError::Duplicate {
            doc_id,
            first_line,
            second_line,
            ..
        } = &err
        else {
            panic!("{err}")
        };
        assert_eq!((doc_id.as_str(), *first_line, *second_line), ("4", 1, 2));
        assert!(err.to_string().contains("line 1 and on line 2"), "{err}");
    }
}

#[test]
fn lm_eval_needs_one_generate_until_request() {
    // A multiple-choice record: one request per choice, loglikelihood pairs as strings.
    let mc = r#"{"doc_id": 0, "resps": [[["-3.2", "False"]], [["-1.0", "True"]]], "filtered_resps": [["-3.2", "False"], ["-1.0", "True"]]}"#;
    let err = read_bytes(mc.as_bytes(), Format::Auto).unwrap_err();
    assert!(
        err.to_string()
            .starts_with("inline.jsonl:1: field `resps`: holds 2 requests"),
        "{err}"
    );
    let one = r#"{"doc_id": 0, "resps": [[["-3.2", "False"]]]}"#;
    let err = read_bytes(one.as_bytes(), Format::Auto).unwrap_err();
    assert!(
        err.to_string()
            .contains("field `resps[0][0]`: expected a string, found a list"),
        "{err}"
    );
    let string_id = r#"{"doc_id": "0", "resps": [["x"]]}"#;
    let err = read_bytes(string_id.as_bytes(), Format::Auto).unwrap_err();
    assert!(
        err.to_string()
            .contains("field `doc_id`: expected a non-negative integer, found a string"),
        "{err}"
    );
}

#[test]
fn human_eval_numbers_samples_per_task_in_file_order() {
    for format in [Format::Auto, Format::HumanEval] {
        let set = read_fixture("humaneval_samples.jsonl", format).unwrap();
        assert_eq!(set.format(), Format::HumanEval);
        let rows: Vec<(&str, u32, usize)> = set
            .rows()
            .iter()
            .map(|r| (r.doc_id.as_str(), r.sample, r.line))
            .collect();
        assert_eq!(
            rows,
            vec![
                ("HumanEval/0", 0, 1),
                ("HumanEval/0", 1, 2),
                ("HumanEval/1", 0, 3),
                ("HumanEval/0", 2, 4)
            ]
        );
        assert_eq!(
            set.get(None, "HumanEval/0", 2).unwrap().generation,
            "    return False\n"
        );
        set.check_against(&ids(&["HumanEval/0"]), 3, None)
            .unwrap_err();
    }
}

#[test]
fn evalplus_reads_solutions() {
    for format in [Format::Auto, Format::EvalPlus] {
        let set = read_fixture("evalplus_samples.jsonl", format).unwrap();
        assert_eq!(set.format(), Format::EvalPlus);
        assert_eq!(set.len(), 3);
        assert!(set
            .get(None, "HumanEval/0", 1)
            .unwrap()
            .generation
            .ends_with("    return False\n"));
        assert_eq!(set.get(None, "Mbpp/2", 0).unwrap().line, 2);
    }
    // Read as human-eval, the same file lacks `completion`, and the error says what it looks like.
    let err = read_fixture("evalplus_samples.jsonl", Format::HumanEval).unwrap_err();
    let text = err.to_string();
    assert!(
        text.contains("evalplus_samples.jsonl:1: field `completion`: missing"),
        "{text}"
    );
    assert!(text.contains("looks like the evalplus format"), "{text}");
}

#[test]
fn duplicate_names_both_lines() {
    let err = read_fixture("duplicate.jsonl", Format::Auto).unwrap_err();
    let ReplayError::Duplicate {
        doc_id,
        sample,
        steps,
        first_line,
        second_line,
        ..
    } = &err
    else {
        panic!("{err}")
    };
    assert_eq!(doc_id, "1");
    assert_eq!((*sample, *steps), (0, Some(16)));
    assert_eq!((*first_line, *second_line), (1, 4));
    let text = err.to_string();
    assert!(
        text.contains("duplicate.jsonl: doc_id \"1\" sample 0 (steps=16)"),
        "{text}"
    );
    assert!(text.contains("on line 1 and on line 4"), "{text}");
}

#[test]
fn missing_field_names_line_and_field() {
    let err = read_fixture("missing_field.jsonl", Format::Auto).unwrap_err();
    let ReplayError::Malformed { line, field, .. } = &err else {
        panic!("{err}")
    };
    assert_eq!((*line, field.as_deref()), (3, Some("generation")));
    assert!(
        err.to_string()
            .ends_with("missing_field.jsonl:3: field `generation`: missing; expected a string"),
        "{err}"
    );
}

#[test]
fn wrong_type_names_line_field_and_expectation() {
    let err = read_fixture("wrong_type.jsonl", Format::Native).unwrap_err();
    assert!(
        err.to_string().ends_with(
            "wrong_type.jsonl:2: field `steps`: expected a non-negative integer below 2^32, found a string"
        ),
        "{err}"
    );
    for (line, expect) in [
        (
            r#"{"doc_id": 1.5, "generation": "x"}"#,
            "field `doc_id`: expected a string or an integer, found a number (1.5)",
        ),
        (
            r#"{"doc_id": 1, "generation": "x", "sample": -1}"#,
            "field `sample`: expected a non-negative integer below 2^32, found a number (-1)",
        ),
        (
            r#"{"doc_id": 1, "generation": "x", "steps": 4294967296}"#,
            "field `steps`: expected a non-negative integer below 2^32",
        ),
        (
            r#"{"doc_id": 1, "generation": "x", "seconds": -0.5}"#,
            "field `seconds`: expected a non-negative number, found a number (-0.5)",
        ),
        (
            r#"{"doc_id": 1, "generation": "x", "nfe": true}"#,
            "field `nfe`: expected a non-negative integer, found a boolean (true)",
        ),
        (
            r#"{"doc_id": 1, "generation": ["x"]}"#,
            "field `generation`: expected a string, found a list",
        ),
        (
            r#"{"doc_id": 1, "generation": "x", "step": 16}"#,
            "field `step`: unknown field; a native line holds only doc_id, generation",
        ),
        (
            r#"["doc_id", 1]"#,
            "inline.jsonl:1: expected a JSON object, found a list",
        ),
        (
            r#"{"id": 1, "text": "x"}"#,
            "inline.jsonl:1: cannot tell the format from the keys (id, text)",
        ),
        (
            r#"{"task_id": 7.5, "completion": "x"}"#,
            "field `task_id`: expected a string or an integer, found a number (7.5)",
        ),
    ] {
        let err = read_bytes(line.as_bytes(), Format::Auto).unwrap_err();
        assert!(
            matches!(err, ReplayError::Malformed { line: 1, .. }),
            "{err:?}"
        );
        assert!(
            err.to_string().contains(expect),
            "{err} does not contain {expect}"
        );
    }
}

#[test]
fn not_json_names_the_line() {
    let err = read_fixture("not_json.jsonl", Format::Auto).unwrap_err();
    assert!(matches!(
        err,
        ReplayError::Malformed {
            line: 2,
            field: None,
            ..
        }
    ));
    assert!(
        err.to_string().contains("not_json.jsonl:2: not valid JSON"),
        "{err}"
    );
}

#[test]
fn mixed_formats_name_both_lines() {
    let err = read_fixture("mixed.jsonl", Format::Auto).unwrap_err();
    let ReplayError::MixedFormats {
        first,
        first_line,
        found,
        line,
        ..
    } = &err
    else {
        panic!("{err}")
    };
    assert_eq!((*first, *first_line), (Format::Native, 1));
    assert_eq!((*found, *line), (Format::HumanEval, 3));
    assert!(err.to_string().contains("mixed.jsonl:3: this line is in the human-eval format but line 1 is in the native format"), "{err}");
    // Read as native, line 3 is a native line with an unknown field.
    let err = read_fixture("mixed.jsonl", Format::Native).unwrap_err();
    assert!(
        matches!(err, ReplayError::Malformed { line: 3, .. }),
        "{err}"
    );
}

#[test]
fn empty_and_blank_files_are_errors() {
    for name in ["empty.jsonl", "blank.jsonl"] {
        let err = read_fixture(name, Format::Auto).unwrap_err();
        assert!(matches!(err, ReplayError::Empty { .. }), "{err}");
        assert!(err.to_string().contains(name), "{err}");
        assert!(err.to_string().contains("no generations"), "{err}");
    }
}

#[test]
fn unreadable_file_is_an_io_error() {
    let err = read_fixture("does-not-exist.jsonl", Format::Auto).unwrap_err();
    assert!(matches!(err, ReplayError::Io { .. }), "{err}");
    assert!(err.to_string().starts_with("cannot read "), "{err}");
    assert!(err.to_string().contains("does-not-exist.jsonl"), "{err}");
    // A directory opens on Unix but cannot be read.
    let err = read(&fixture(""), Format::Auto).unwrap_err();
    assert!(matches!(err, ReplayError::Io { .. }), "{err}");
}

#[test]
fn non_utf8_names_line_and_column() {
    let mut bytes = b"{\"doc_id\": \"1\", \"generation\": \"ok\"}\r\n".to_vec();
    bytes.extend_from_slice(b"{\"doc_id\": \"2\", \"generation\": \"caf\xE9\"}\n");
    let err = read_bytes(&bytes, Format::Auto).unwrap_err();
    let ReplayError::NotUtf8 {
        line, column, gzip, ..
    } = &err
    else {
        panic!("{err}")
    };
    assert_eq!((*line, *column, *gzip), (2, 35, false));
    assert!(
        err.to_string()
            .starts_with("inline.jsonl:2: not UTF-8 text"),
        "{err}"
    );

    let gz = b"\x1f\x8b\x08\x00\x00\x00\x00\x00\x00\x03";
    let err = read_bytes(gz, Format::Auto).unwrap_err();
    assert!(
        matches!(
            err,
            ReplayError::NotUtf8 {
                line: 1,
                gzip: true,
                ..
            }
        ),
        "{err}"
    );
    assert!(err.to_string().contains("gzip"), "{err}");
}

#[test]
fn crlf_and_bom_are_accepted() {
    let text =
        b"\xEF\xBB\xBF{\"task_id\": \"HumanEval/3\", \"completion\": \"    pass\\n\"}\r\n\r\n";
    let set = read_bytes(text, Format::Auto).unwrap();
    assert_eq!(
        set.get(None, "HumanEval/3", 0).unwrap().generation,
        "    pass\n"
    );
}

#[test]
fn check_against_reports_missing_and_unknown_with_lines() {
    let set = read_fixture("humaneval_samples.jsonl", Format::Auto).unwrap();
    let expected = ids(&["HumanEval/0", "HumanEval/2", "HumanEval/3"]);
    let err = set.check_against(&expected, 3, None).unwrap_err();
    let ReplayError::Mismatch(m) = &err else {
        panic!("{err}")
    };
    assert_eq!(m.expected_docs, 3);
    assert_eq!((m.missing_docs, m.missing_rows), (2, 6));
    assert_eq!(
        m.missing_first,
        vec![
            ("HumanEval/2".to_owned(), vec![0, 1, 2]),
            ("HumanEval/3".to_owned(), vec![0, 1, 2])
        ]
    );
    assert_eq!((m.unknown_docs, m.unknown_rows), (1, 1));
    assert_eq!(m.unknown_first, vec![("HumanEval/1".to_owned(), 3)]);
    assert_eq!(m.surplus_rows, 0);
    let text = err.to_string();
    assert!(
        text.contains(
            "missing: 2 documents lack 6 samples in all, first \"HumanEval/2\" (samples 0, 1, 2)"
        ),
        "{text}"
    );
    assert!(text.contains("unknown doc_id: 1 doc_ids (1 rows) the task does not have, first \"HumanEval/1\" (line 3)"), "{text}");

    // Many unknown doc_ids: the first few are listed, all are counted.
    let lines: String = (0..20)
        .map(|i| format!("{{\"doc_id\": {i}, \"generation\": \"g\"}}\n"))
        .collect();
    let set = read_bytes(lines.as_bytes(), Format::Auto).unwrap();
    let err = set.check_against(&ids(&["0"]), 1, None).unwrap_err();
    let ReplayError::Mismatch(m) = &err else {
        panic!("{err}")
    };
    assert_eq!((m.unknown_docs, m.unknown_rows), (19, 19));
    assert_eq!(m.unknown_first.len(), dlm_replay::FIRST_FEW);
    assert_eq!(m.unknown_first[0], ("1".to_owned(), 2));
    set.check_against(
        &ids(&[
            "0", "1", "2", "3", "4", "5", "6", "7", "8", "9", "10", "11", "12", "13", "14", "15",
            "16", "17", "18", "19", "0",
        ]),
        1,
        None,
    )
    .unwrap();
}

#[test]
fn format_names_round_trip() {
    for f in [
        Format::Auto,
        Format::Native,
        Format::LmEval,
        Format::HumanEval,
        Format::EvalPlus,
    ] {
        assert_eq!(f.to_string().parse::<Format>().unwrap(), f);
    }
    assert_eq!("HumanEval".parse::<Format>().unwrap(), Format::HumanEval);
    assert_eq!("lm_eval".parse::<Format>().unwrap(), Format::LmEval);
    let err = "jsonl".parse::<Format>().unwrap_err();
    assert!(
        err.to_string().contains("unknown replay format \"jsonl\""),
        "{err}"
    );
}
