//! A plugin outside the SDK adds a sampler of its own with one file and one registry line
//! (`tests/fixtures/extra-sampler`), and the real harness runs it like any SDK sampler: its
//! defining behaviour shows in the tokens and NFE, and a bad value of its parameter is an
//! error naming the parameter.
//!
//! The fixture's model draws, at every masked position, the number of the row's positions
//! already unmasked (mod the vocabulary), so a sequence records the order positions were
//! committed in.

mod common;
use common::*;

/// The tokens a row gets when each of `steps` steps commits its quota (`L / steps`, `L` a
/// multiple of `steps`) of the masked positions, taken from the left or from the right.
fn committed_in_order(length: usize, steps: usize, from_right: bool, vocab: u64) -> Vec<u64> {
    let quota = length / steps;
    (0..length)
        .map(|j| {
            let rank = if from_right { length - 1 - j } else { j };
            // Positions of step k are drawn when k · quota positions are unmasked.
            ((rank / quota * quota) as u64) % vocab
        })
        .collect()
}

#[test]
fn a_plugins_own_sampler_runs_through_the_harness() {
    let dir = scratch("extra-sampler").join("run");
    let result = run(&[
        "run",
        "tests/suites/extra-sampler.yaml",
        "--out",
        dir.to_str().unwrap(),
    ]);
    assert_eq!(
        result.status.code(),
        Some(3),
        "exit code 3 = some cells failed (the bad parameter's cell)\n{}",
        text(&result)
    );
    let s = summary(&dir);
    let ordered = s
        .iter()
        .find(|c| c["sampler"] == "ordered" && c["steps"] == 3)
        .expect("the ordered cell");
    assert_eq!(ordered["status"], "ok", "{ordered}");
    let low_confidence = cell(&s, "bigram", "counting", Some("low_confidence"), Some(3));
    assert_eq!(low_confidence["status"], "ok", "{low_confidence}");

    // Every sample of the `ordered` cell was committed from the right, two positions (the
    // quota) per network call; the SDK's `low_confidence` on the same model sees equal
    // confidences everywhere and commits from the left (ties go to the earlier position).
    let rows = sorted_samples(&dir);
    let tokens_of = |sampler: &str| -> Vec<Vec<u64>> {
        rows.iter()
            .filter(|r| {
                r["key"]
                    .as_str()
                    .unwrap()
                    .contains(&format!("/{sampler}@3"))
            })
            .map(|r| {
                assert_eq!(r["nfe"], 3, "one network call per step: {r}");
                r["tokens"]
                    .as_array()
                    .unwrap()
                    .iter()
                    .map(|t| t.as_u64().unwrap())
                    .collect()
            })
            .collect()
    };
    let (from_right, from_left) = (tokens_of("ordered"), tokens_of("low_confidence"));
    assert_eq!(from_right.len(), 4, "{rows:?}");
    assert_eq!(from_left.len(), 4, "{rows:?}");
    let vocab = 8; // the ngram task's default vocabulary
    for t in &from_right {
        assert_eq!(t, &committed_in_order(6, 3, true, vocab));
    }
    for t in &from_left {
        assert_eq!(t, &committed_in_order(6, 3, false, vocab));
    }

    // The wrong value of the plugin's parameter fails its cell, naming the parameter and the
    // values it takes.
    let bad = s
        .iter()
        .find(|c| c["sampler"] == "ordered" && c["steps"] == 2)
        .expect("the cell with the bad parameter");
    assert_eq!(bad["status"], "failed", "{bad}");
    let cause = bad["cause"].as_str().unwrap();
    assert!(
        cause.contains("from must be one of: left, right") && cause.contains("middle"),
        "{cause}"
    );
}
