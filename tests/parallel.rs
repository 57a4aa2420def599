//! `run --jobs N`: cells run in several workers at once, and nothing but timings changes — the
//! same cells, samples, scores and summary figures as one at a time, in the suite's order.

mod common;
use common::*;

#[test]
fn parallel_cells_give_the_same_results_as_one_at_a_time() {
    let dir = scratch("parallel");
    let (one, three) = (dir.join("one"), dir.join("three"));
    for (out, jobs) in [(&one, "1"), (&three, "3")] {
        let r = run(&[
            "run",
            "tests/suites/tiny.yaml",
            "--jobs",
            jobs,
            "--out",
            out.to_str().unwrap(),
        ]);
        assert!(r.status.success(), "{}", text(&r));
    }
    let (a, b) = (summary(&one), summary(&three));
    assert_eq!(
        a.len(),
        10,
        "2 tasks × (reference + 3 ddpm_cache + left_to_right)"
    );
    assert_eq!(without_timings(&a), without_timings(&b));
    assert_eq!(sorted_samples(&one), sorted_samples(&three));
}
