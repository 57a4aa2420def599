//! The theorem checks (`dlm_bench::theory`) on a real run: a reduced `suites/theory.yaml` (two
//! lengths, few steps and samples) through the real binary and the real `dlm-formal` plugin,
//! read back from the run directory and analysed by the library.

mod common;
use common::*;

use dlm_bench::metrics;
use dlm_bench::results::RunDir;
use dlm_bench::theory::{self, SerRole, VerdictStatus};

#[test]
fn reduced_theory_suite_gives_fits_of_the_right_sign() {
    let out = scratch("theory-small");
    let dir = out.join("run");
    let result = run(&[
        "run",
        "tests/suites/theory-small.yaml",
        "--out",
        dir.to_str().unwrap(),
    ]);
    assert!(result.status.success(), "{}", text(&result));

    let (cells, samples) = RunDir::open_read_only(&dir)
        .unwrap()
        .load_consistent()
        .unwrap();
    let summary = metrics::summarize(&cells, &samples);
    let report = theory::analyse(&cells, &summary).expect("the run has theorem tasks");
    let json = serde_json::to_string_pretty(&report).unwrap();

    // Theorem 4.2 on the 2-gram TER language: at every step count the excess TER does not
    // grow with L (the slope's CI reaches 0 or lies below it).
    let t42 = report.theorem_4_2.as_ref().expect("Theorem 4.2 section");
    assert_eq!(t42.tasks.len(), 1, "{json}");
    let ter = &t42.tasks[0];
    assert_eq!(ter.task, "2gram-ter");
    assert_eq!(ter.lengths, vec![64, 256]);
    assert_eq!(ter.steps, vec![4, 16, 64, 256]);
    assert_eq!(ter.points.len(), 8);
    assert_eq!(ter.fits.len(), 4);
    // At 4 steps the excess still converges from below in L (edge positions have one
    // neighbour, an O(1/L) effect that 200 samples resolve between two lengths): there the
    // growth across the range must stay small against the excess itself.
    for f in &ter.fits {
        let fit = f.fit.as_ref().expect("two lengths make a fit");
        assert_eq!((fit.n, fit.df), (2, 0));
        if f.steps < 16 {
            let growth = f.growth_over_range.unwrap();
            let excess = ter
                .points
                .iter()
                .find(|p| p.steps == f.steps)
                .unwrap()
                .excess;
            assert!(
                growth < 0.2 * excess,
                "{} steps: growth {growth}\n{json}",
                f.steps
            );
            continue;
        }
        assert!(
            fit.slope_ci.0 <= 0.0,
            "{} steps: excess TER grows with L, slope CI {:?}\n{json}",
            f.steps,
            fit.slope_ci
        );
        // Two lengths decide nothing: a verdict needs three.
        assert_eq!(f.verdict.status, VerdictStatus::NotEnoughData);
    }
    // More steps, less excess (at the longer length, where the CIs are tightest).
    let excess = |steps| {
        ter.points
            .iter()
            .find(|p| p.steps == steps && p.length == 256)
            .unwrap()
            .excess
    };
    assert!(excess(4) > excess(64), "{json}");

    // Theorem 4.4: steps needed for SER <= 0.1 grow with L on the interval language.
    let t44 = report.theorem_4_4.as_ref().expect("Theorem 4.4 section");
    let interval = t44
        .tasks
        .iter()
        .find(|t| t.task == "interval-8")
        .expect("interval task");
    assert_eq!(interval.role, SerRole::Primary);
    let fit = interval.fit.as_ref().expect("steps needed at both lengths");
    assert_eq!(fit.n, 2);
    assert!(fit.slope > 0.0, "{json}");
    assert!(fit.slope_ci.0 > 0.0, "slope CI {:?}\n{json}", fit.slope_ci);
    // The exact closed form: 39 steps at L = 64 (8 intervals), 153 at L = 256 (32 intervals);
    // the estimates' ranges contain them (an upper end beyond the grid is open).
    let exact: Vec<usize> = interval
        .steps_needed
        .iter()
        .map(|s| s.exact_steps.unwrap())
        .collect();
    assert_eq!(exact, vec![39, 153]);
    for s in &interval.steps_needed {
        let (lo, hi) = (s.steps_low.unwrap(), s.steps_high.unwrap_or(f64::INFINITY));
        let e = s.exact_steps.unwrap() as f64;
        assert!(
            lo <= e && e <= hi,
            "L {}: exact {e} outside [{lo}, {hi}]\n{json}",
            s.length
        );
    }
    let exact_fit = interval.exact_fit.as_ref().unwrap();
    assert!(exact_fit.slope > 0.0);
    // The n-gram SER variant is shown beside it, outside the theorem's verdict.
    let ngram = t44.tasks.iter().find(|t| t.task == "2gram-ser").unwrap();
    assert_eq!(ngram.role, SerRole::Supplementary);
    assert_eq!(t44.verdict.status, VerdictStatus::NotEnoughData, "{json}");
    // The JSON twin parses back (floats may differ in the last bit).
    let back: theory::TheoryReport = serde_json::from_str(&json).unwrap();
    assert_eq!(back.theorem_4_4.unwrap().verdict, t44.verdict);
}
