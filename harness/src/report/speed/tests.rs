//! The verdict rule on constructed cells: SER intervals are Wilson intervals of error counts
//! (the summary's own), speedups the ratio of the throughputs given.

use super::*;
use crate::metrics::wilson_ci;

const N: usize = 400;

/// A cell with `errors` of `N` samples outside the support at `tokens_per_second`.
fn point(model: &str, cache: Option<&str>, errors: usize, tokens_per_second: f64) -> SpeedPoint {
    let config = Config {
        model: model.into(),
        sampler: if model == "ar" {
            "ar"
        } else {
            "low_confidence"
        }
        .into(),
        cache: cache.map(str::to_string),
        refresh: cache.map(|_| "every_block".into()),
        block_length: cache.map(|_| 16),
        block_size: None,
        length: 64,
        seed: 0,
    };
    SpeedPoint {
        key: format!("{model}-{cache:?}-{errors}"),
        unit: format!("{model}-{cache:?}-{errors}"),
        series: config.label(false, false),
        config,
        steps: Some(64),
        exact: false,
        ar: model == "ar",
        ter: None,
        ter_ci: None,
        ser: Some(errors as f64 / N as f64),
        ser_ci: Some(wilson_ci(errors, N)),
        nfe: Some(64.0),
        forward_equivalents: Some(64.0),
        forward_equivalents_from_nfe: false,
        tokens_per_second: Some(tokens_per_second),
        edits: None,
    }
}

#[test]
fn the_fastest_configuration_whose_ser_interval_reaches_ar_wins() {
    let ar = point("ar", None, 40, 100.0);
    let uncached = point("mdm", Some("none"), 44, 150.0);
    let dual = point("mdm", Some("dual"), 48, 400.0);
    // Fastest of all, but its SER interval lies wholly above AR's: it does not count.
    let sloppy = point("mdm", Some("prefix"), 160, 900.0);
    assert!(sloppy.ser_ci.unwrap().0 > ar.ser_ci.unwrap().1);
    assert!(dual.ser_ci.unwrap().0 <= ar.ser_ci.unwrap().1);
    let v = verdict(&ar, &[&uncached, &dual, &sloppy]);
    let best = v.best.as_ref().expect("the dual cache reaches AR's SER");
    assert_eq!(best.config.cache.as_deref(), Some("dual"));
    assert_eq!(v.speedup, Some(400.0 / 100.0));
    assert!(!v.better, "overlapping intervals: a match, not a win");
    assert_eq!(v.candidates, 3);
    assert!(v.sentence.contains("matches AR's SER"), "{}", v.sentence);
    assert!(v.sentence.contains(&best.series), "{}", v.sentence);
}

#[test]
fn no_configuration_reaching_ar_is_said_as_none_with_the_closest() {
    let ar = point("ar", None, 4, 100.0);
    let dual = point("mdm", Some("dual"), 60, 400.0);
    let prefix = point("mdm", Some("prefix"), 40, 300.0);
    for p in [&dual, &prefix] {
        assert!(p.ser_ci.unwrap().0 > ar.ser_ci.unwrap().1);
    }
    let v = verdict(&ar, &[&dual, &prefix]);
    assert!(v.best.is_none() && v.speedup.is_none() && !v.better);
    assert!(v.sentence.starts_with("none:"), "{}", v.sentence);
    // The lowest SER among the candidates is named (prefix: 40 errors).
    assert!(v.sentence.contains(&prefix.series), "{}", v.sentence);
    assert!(
        v.sentence.contains(&fmt_num(prefix.ser, 3)),
        "{}",
        v.sentence
    );
    let alone = verdict(&ar, &[]);
    assert!(alone.best.is_none() && alone.sentence.starts_with("none:"));
}

#[test]
fn an_interval_wholly_below_ar_is_a_win() {
    let ar = point("ar", None, 80, 100.0);
    let dual = point("mdm", Some("dual"), 20, 250.0);
    assert!(dual.ser_ci.unwrap().1 < ar.ser_ci.unwrap().0);
    let v = verdict(&ar, &[&dual]);
    assert!(v.better);
    assert_eq!(v.speedup, Some(2.5));
    assert!(v.sentence.contains("beats AR's SER"), "{}", v.sentence);
}

#[test]
fn the_oracle_and_other_lengths_are_not_contenders() {
    let ar = point("ar", None, 40, 100.0);
    let mut oracle = point("oracle", Some("none"), 40, 10_000.0);
    oracle.exact = true;
    let mut longer = point("mdm", Some("dual"), 40, 5_000.0);
    longer.config.length = 128;
    let fair = point("mdm", Some("dual"), 42, 200.0);
    let vs = verdicts(&[ar.clone(), oracle, longer, fair.clone()]);
    assert_eq!(vs.len(), 1, "one verdict per AR cell");
    assert_eq!(vs[0].candidates, 1);
    assert_eq!(
        vs[0].best.as_ref().map(|b| b.key.as_str()),
        Some(fair.key.as_str())
    );
    assert_eq!(vs[0].speedup, Some(2.0));
}

#[test]
fn labels_name_cache_refresh_and_block_only_where_they_apply() {
    let ar = point("ar", None, 0, 1.0);
    assert_eq!(ar.series, "ar · ar");
    let dual = point("mdm", Some("dual"), 0, 1.0);
    assert_eq!(
        dual.series,
        "mdm · low_confidence · dual cache · refresh every_block · block 16"
    );
    let mut none = point("mdm", Some("none"), 0, 1.0);
    none.config.refresh = Some("every_block".into());
    assert_eq!(
        none.config.label(true, true),
        "mdm · low_confidence · no cache · block 16 · L=64 · seed 0"
    );
}
