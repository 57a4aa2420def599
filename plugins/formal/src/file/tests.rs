//! Language files: hand-computed probabilities, every validation error, no panics.

use super::*;

const BIGRAM: &str = "\
# A bigram over {0, 1, 2}, written by hand.
kind: ngram
name: toy-bigram
vocab: 3
order: 2
initial: [1/2, 1/4, 1/4]
transitions:
  - [0, 1/2, 1/2]     # after 0
  - [1, 0, 0]         # after 1
  - [1/3, 1/3, 1/3]   # after 2
";

const HMM_YAML: &str = "\
kind: hmm
vocab: 2
states: 2
initial: [0.6, 0.4]
transitions:
  - [0.7, 0.3]
  - [0.2, 0.8]
emissions:
  - [0.9, 0.1]
  - [0, 1]
";

const HMM_JSON: &str = r#"{
  "kind": "hmm",
  "vocab": 2,
  "initial": [0.6, 0.4],
  "transitions": [[0.7, 0.3], [0.2, 0.8]],
  "emissions": [[0.9, 0.1], [0, 1]]
}"#;

fn yaml(text: &str) -> Result<(Language, FileKind, Option<String>), FileError> {
    parse(text, Format::Yaml, "lang.yaml")
}

fn q(lang: &Language, x: &[u32]) -> f64 {
    lang.log_prob(x).unwrap().exp()
}

#[test]
fn hand_written_bigram_gives_hand_computed_probabilities() {
    let (lang, kind, name) = yaml(BIGRAM).unwrap();
    assert_eq!(
        (kind, name.as_deref()),
        (FileKind::NGram, Some("toy-bigram"))
    );
    assert_eq!((lang.kind_label(), lang.vocab()), ("2-gram".to_string(), 3));
    // q(0,1,0,2) = 1/2 · 1/2 · 1 · 1/2
    assert!((q(&lang, &[0, 1, 0, 2]) - 1.0 / 8.0).abs() < 1e-16);
    // q(2,2,1) = 1/4 · 1/3 · 1/3
    assert!((q(&lang, &[2, 2, 1]) - 1.0 / 36.0).abs() < 1e-16);
    // q(1,2) = 0: 1 is always followed by 0; q(0,0) = 0.
    let s = lang.score(&[1, 2]).unwrap();
    assert!(!s.in_support && s.first_invalid == Some(1));
    assert!(!lang.score(&[2, 0, 0]).unwrap().in_support);
    // Exact entropy of L = 2 by hand: H(X0) + Σ_a P(a) H(X1 | a)
    //   = H(1/2, 1/4, 1/4) + 1/2 · ln 2 + 1/4 · 0 + 1/4 · ln 3.
    let h0 = 0.5 * 2f64.ln() + 0.5 * 4f64.ln();
    let want = h0 + 0.5 * 2f64.ln() + 0.25 * 3f64.ln();
    assert!((lang.entropy(2).unwrap().nats - want).abs() < 1e-14);
}

#[test]
fn hand_written_trigram_uses_the_documented_window_order() {
    // Windows (t0, t1) in the order 00, 01, 10, 11.
    let text = r#"{"kind": "ngram", "vocab": 2, "order": 3,
        "initial": [0.1, 0.2, 0.3, 0.4],
        "transitions": [[0.5, 0.5], [0.25, 0.75], [1, 0], ["1/3", "2/3"]]}"#;
    let (lang, ..) = parse(text, Format::Json, "tri.json").unwrap();
    // q(0,1,1,1) = init[01] · P(1 | 01) · P(1 | 11) = 0.2 · 0.75 · 2/3
    assert!((q(&lang, &[0, 1, 1, 1]) - 0.2 * 0.75 * 2.0 / 3.0).abs() < 1e-16);
    // q(1,0,0) = init[10] · P(0 | 10) = 0.3
    assert!((q(&lang, &[1, 0, 0]) - 0.3).abs() < 1e-16);
    assert!(!lang.score(&[1, 0, 1]).unwrap().in_support);
}

#[test]
fn hand_written_hmm_in_yaml_and_json() {
    for (text, format) in [(HMM_YAML, Format::Yaml), (HMM_JSON, Format::Json)] {
        let (lang, kind, name) = parse(text, format, "h").unwrap();
        assert_eq!((kind, name), (FileKind::Hmm, None));
        assert_eq!(lang.hidden_states(), Some(2));
        // q(0) = 0.6 · 0.9
        assert!((q(&lang, &[0]) - 0.54).abs() < 1e-15);
        // q(0,1) = 0.6 · 0.9 · (0.7 · 0.1 + 0.3 · 1)
        assert!((q(&lang, &[0, 1]) - 0.54 * 0.37).abs() < 1e-15);
        // q(1,0) = 0.6 · 0.1 · 0.7 · 0.9 + 0.4 · 1 · 0.2 · 0.9
        let want = 0.6 * 0.1 * 0.7 * 0.9 + 0.4 * 0.2 * 0.9;
        assert!((q(&lang, &[1, 0]) - want).abs() < 1e-15);
        // q(1,1) = 0.6·0.1·(0.7·0.1 + 0.3·1) + 0.4·1·(0.2·0.1 + 0.8·1)
        let want = 0.06 * 0.37 + 0.4 * 0.82;
        assert!((q(&lang, &[1, 1]) - want).abs() < 1e-15);
    }
}

#[test]
fn load_reads_files_and_hashes_their_content() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("bigram.yaml");
    std::fs::write(&path, BIGRAM).unwrap();
    let f = load(path.to_str().unwrap()).unwrap();
    assert_eq!((f.name.as_str(), f.kind), ("toy-bigram", FileKind::NGram));
    assert_eq!(f.content_hash, content_hash(BIGRAM.as_bytes()));
    assert_ne!(f.content_hash, content_hash(HMM_YAML.as_bytes()));
    let json = dir.path().join("h.JSON");
    std::fs::write(&json, HMM_JSON).unwrap();
    let f = load(json.to_str().unwrap()).unwrap();
    assert_eq!((f.name.as_str(), f.kind), ("h.JSON", FileKind::Hmm));
    let missing = dir.path().join("nope.yaml");
    let e = load(missing.to_str().unwrap()).unwrap_err().0;
    assert!(
        e.contains("nope.yaml") && e.contains("current working directory"),
        "{e}"
    );
}

/// Replaces the first occurrence of `from` in `base` (which must contain it).
fn edit(base: &str, from: &str, to: &str) -> String {
    assert!(base.contains(from), "{from:?}");
    base.replacen(from, to, 1)
}

/// A document and fragments its error message must contain.
type Case = (String, Vec<&'static str>);

/// YAML documents with bad rows: sums, negative and NaN entries.
fn bad_row_cases() -> Vec<Case> {
    vec![
        // Row sums.
        (
            edit(BIGRAM, "[1, 0, 0]", "[0.9, 0, 0]"),
            vec![
                "lang.yaml:9:",
                "row 1 of the transition table",
                "sums to 0.9",
            ],
        ),
        (
            edit(BIGRAM, "[1/2, 1/4, 1/4]", "[1/2, 1/4, 0.3]"),
            vec!["lang.yaml:6:", "the initial distribution", "sums to 1.05"],
        ),
        (
            edit(HMM_YAML, "[0, 1]", "[0.5, 0.6]"),
            vec![
                "lang.yaml:10:",
                "row 1 of the emission table",
                "sums to 1.1",
            ],
        ),
        // Negative and NaN entries.
        (
            edit(BIGRAM, "[1/3, 1/3, 1/3]", "[2/3, 2/3, -1/3]"),
            vec![
                "lang.yaml:10:",
                "row 2 of the transition table",
                "entry 2 is -0.33",
            ],
        ),
        (
            edit(HMM_YAML, "[0.9, 0.1]", "[.nan, 1]"),
            vec![
                "lang.yaml:9:",
                "row 0 of the emission table",
                "entry 0 is NaN",
            ],
        ),
        (
            edit(HMM_YAML, "[0.7, 0.3]", "[.inf, 0]"),
            vec![
                "lang.yaml:6:",
                "row 0 of the transition table",
                "entry 0 is inf",
            ],
        ),
    ]
}

/// YAML documents with bad shapes, and reachable rows that are all zero.
fn bad_shape_cases() -> Vec<Case> {
    vec![
        // Shapes.
        (
            edit(BIGRAM, "  - [1/3, 1/3, 1/3]   # after 2\n", ""),
            vec![
                "lang.yaml:",
                "the transition table",
                "has 2 rows but 3 were expected",
            ],
        ),
        (
            edit(BIGRAM, "[1, 0, 0]", "[1, 0]"),
            vec![
                "lang.yaml:9:",
                "row 1 of the transition table",
                "has 2 entries but 3",
            ],
        ),
        (
            edit(BIGRAM, "[1/2, 1/4, 1/4]", "[1/2, 1/2]"),
            vec![
                "lang.yaml:6:",
                "the initial distribution",
                "has 2 entries but 3",
            ],
        ),
        (
            edit(HMM_YAML, "  - [0, 1]\n", ""),
            vec!["lang.yaml:", "the emission table", "has 1 rows but 2"],
        ),
        (
            edit(HMM_YAML, "  - [0.2, 0.8]", "  - [0.2, 0.4, 0.4]"),
            vec![
                "lang.yaml:7:",
                "row 1 of the transition table",
                "has 3 entries but 2",
            ],
        ),
        (
            edit(HMM_YAML, "states: 2", "states: 3"),
            vec!["lang.yaml:4:", "the initial distribution", "`states` is 3"],
        ),
        // Reachable rows that are all zero: the support would be empty for longer sequences.
        (
            edit(BIGRAM, "[1, 0, 0]", "[0, 0, 0]"),
            vec![
                "lang.yaml:9:",
                "row 1 of the transition table",
                "context [1]: is all zero, but this context can occur",
            ],
        ),
        (
            edit(HMM_YAML, "[0.2, 0.8]", "[0, 0]"),
            vec![
                "lang.yaml:7:",
                "row 1 of the transition table",
                "hidden state 1 can occur",
            ],
        ),
        (
            edit(HMM_YAML, "[0, 1]", "[0, 0]"),
            vec![
                "lang.yaml:10:",
                "row 1 of the emission table",
                "hidden state 1 can occur",
            ],
        ),
    ]
}

/// YAML documents with entries that are not numbers, and bad keys.
fn bad_value_and_key_cases() -> Vec<Case> {
    vec![
        // Entries that are not numbers.
        (
            edit(BIGRAM, "[1, 0, 0]", "[1, zero, 0]"),
            vec![
                "lang.yaml:9:",
                "entry 1 of row 1 of the transition table",
                "`zero`",
            ],
        ),
        (
            edit(BIGRAM, "[1, 0, 0]", "[1, 0, 1/0]"),
            vec!["lang.yaml:9:", "entry 2 of row 1 of the transition table"],
        ),
        (
            edit(BIGRAM, "  - [1, 0, 0]         # after 1", "  - 1"),
            vec![
                "lang.yaml:9:",
                "row 1 of the transition table",
                "must be a list",
            ],
        ),
        (
            edit(BIGRAM, "initial: [1/2, 1/4, 1/4]", "initial: {a: 1}"),
            vec!["lang.yaml:6:", "the initial distribution", "a mapping"],
        ),
        // Keys.
        (
            edit(BIGRAM, "transitions:", "transition:"),
            vec!["lang.yaml:7:", "unknown key `transition`"],
        ),
        (
            edit(BIGRAM, "vocab: 3\n", ""),
            vec!["lang.yaml:", "missing key `vocab`"],
        ),
        (
            edit(BIGRAM, "order: 2\n", ""),
            vec!["lang.yaml:", "missing key `order`"],
        ),
        (
            edit(BIGRAM, "kind: ngram", "kind: pcfg"),
            vec!["lang.yaml:2:", "`kind` must be `ngram` or `hmm`"],
        ),
        (
            edit(BIGRAM, "vocab: 3", "vocab: three"),
            vec!["lang.yaml:4:", "`vocab` must be a whole number"],
        ),
        (
            edit(BIGRAM, "vocab: 3", "vocab: 1"),
            vec!["lang.yaml:4:", "vocabulary size must be between 2"],
        ),
        (
            edit(BIGRAM, "order: 2", "order: 1"),
            vec!["lang.yaml:5:", "order must be at least 2"],
        ),
        (
            edit(BIGRAM, "order: 2", "order: 60"),
            vec!["lang.yaml:5:", "more than the limit"],
        ),
        (
            edit(HMM_YAML, "states: 2", "order: 2"),
            vec!["lang.yaml:3:", "`order` belongs to `kind: ngram`"],
        ),
        (
            format!("{BIGRAM}emissions: [[1, 0, 0]]\n"),
            vec!["lang.yaml:11:", "`emissions` belongs to `kind: hmm`"],
        ),
        (
            edit(BIGRAM, "vocab: 3", "vocab: 3\nvocab: 4"),
            vec!["lang.yaml", "invalid YAML", "Duplicate key"],
        ),
        (
            edit(BIGRAM, "initial: [1/2", "initial: [[1/2"),
            vec!["lang.yaml", "invalid YAML"],
        ),
        (
            "- 1\n- 2\n".to_string(),
            vec!["lang.yaml:1:", "must be a mapping"],
        ),
        (String::new(), vec!["lang.yaml", "missing key `kind`"]),
    ]
}

fn assert_names(error: &str, fragments: &[&str], doc: &str) {
    for f in fragments {
        assert!(error.contains(f), "error {error:?} lacks {f:?} for\n{doc}");
    }
}

#[test]
fn every_validation_error_names_the_file_and_the_row() {
    let cases = [
        bad_row_cases(),
        bad_shape_cases(),
        bad_value_and_key_cases(),
    ];
    for (doc, fragments) in cases.into_iter().flatten() {
        let e = yaml(&doc).map(|_| ()).unwrap_err().0;
        assert_names(&e, &fragments, &doc);
    }
}

#[test]
fn every_json_validation_error_names_the_file() {
    // The same errors as in YAML, without line numbers.
    let cases = [
        (
            edit(HMM_JSON, "[0.2, 0.8]", "[0.2, 0.7]"),
            vec![
                "lang.json: ",
                "row 1 of the transition table",
                "sums to 0.9",
            ],
        ),
        (
            edit(HMM_JSON, "[0, 1]", "[-1, 2]"),
            vec![
                "lang.json: ",
                "row 1 of the emission table",
                "entry 0 is -1",
            ],
        ),
        (
            edit(HMM_JSON, "\"vocab\": 2", "\"vocab\": null"),
            vec!["lang.json: ", "`vocab` must be a whole number, not null"],
        ),
        (
            edit(HMM_JSON, "[0.9, 0.1]", "[true, 0.1]"),
            vec![
                "lang.json: ",
                "entry 0 of row 0 of the emission table",
                "a boolean",
            ],
        ),
        (
            edit(HMM_JSON, "\"vocab\": 2", "\"vocab\": 2.5"),
            vec!["lang.json: ", "`vocab` must be a whole number"],
        ),
        (edit(HMM_JSON, "}", ""), vec!["lang.json: ", "invalid JSON"]),
    ];
    for (doc, fragments) in cases {
        let e = parse(&doc, Format::Json, "lang.json")
            .map(|_| ())
            .unwrap_err()
            .0;
        assert_names(&e, &fragments, &doc);
    }
}

/// Odd documents are errors or languages, never panics.
#[test]
fn odd_documents_do_not_panic() {
    let docs = [
        "",
        "~",
        "kind:",
        "kind: hmm\nvocab: 2\ninitial: []\ntransitions: []\nemissions: []",
        "kind: hmm\nvocab: 2\ninitial: [1]\ntransitions: [[1]]\nemissions: [[]]",
        "kind: hmm\nvocab: 18446744073709551615\ninitial: [1]\ntransitions: [[1]]\nemissions: [[1]]",
        "kind: ngram\nvocab: 4294967296\norder: 2\ninitial: [1]\ntransitions: []",
        "kind: ngram\nvocab: 2\norder: 18446744073709551615\ninitial: [1]\ntransitions: []",
        "kind: ngram\nvocab: 2\norder: 2\ninitial: [1, 0]\ntransitions: [[1, 0], []]",
        "kind: ngram\nvocab: 2\norder: 2\ninitial: [1e400, 0]\ntransitions: [[1, 0], [0, 1]]",
        "kind: ngram\nvocab: 2\norder: 2\ninitial: [1e-400, 1]\ntransitions: [[1, 0], [0, 1]]",
        "kind: ngram\nvocab: 2\norder: 2\ninitial: [1/, 1]\ntransitions: [[1, 0], [0, 1]]",
        "kind: ngram\nvocab: -2\norder: 2\ninitial: [1, 0]\ntransitions: [[1, 0], [0, 1]]",
        "kind: [ngram]\nvocab: 2",
        "? [a]\n: b",
        "name: [x]\nkind: ngram",
        "{",
        "\t- x",
    ];
    for d in docs {
        let _ = yaml(d);
        let _ = parse(d, Format::Json, "x.json");
    }
    // Tiny but positive entries are kept (and the language works in log space).
    let (lang, ..) = yaml(
        "kind: ngram\nvocab: 2\norder: 2\ninitial: [1e-300, 1]\ntransitions: [[1e-300, 1], [0.5, 0.5]]",
    )
    .unwrap();
    assert!(lang.score(&[0, 0, 1]).unwrap().in_support);
    let mut out = vec![0.0; 6];
    lang.conditional_marginals(&[0, 2, 2], 1, 3, &mut out)
        .unwrap();
    assert!(out.iter().all(|x| x.is_finite()));
}
