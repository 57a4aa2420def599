use super::*;

fn spec(steps: usize, batch_size: usize, validation_every: usize, samples: usize) -> TrainSpec {
    TrainSpec {
        steps,
        batch_size,
        seed: 0,
        validation_every,
        validation_samples: samples,
        timeout_seconds: 60.0,
        options: serde_json::Value::Null,
    }
}

#[test]
fn a_training_costs_three_passes_per_step_and_one_per_validation() {
    // 100 steps of 32 sequences of length 12, validating 64 sequences at steps 50 and 100 and at
    // the start: (3 × 100 × 32 + 3 × 64) × 12.
    assert_eq!(training_cost(&spec(100, 32, 50, 64), 12), 117_504.0);
}

#[test]
fn when_the_trainings_finish_the_fraction_done_is_their_share_of_the_cost() {
    let cells = [100.0, 300.0, 600.0];
    let trainings = [500.0, 1500.0];
    let mut tally = Tally::new(&cells, &trainings);
    assert_eq!(tally.fraction(), 0.0);
    // Half of the first training's steps: 250 of 3000.
    tally.advance("t1", 500.0, 250.0);
    assert!((tally.fraction() - 250.0 / 3000.0).abs() < 1e-12);
    tally.finish(Item::Training, "t1", 500.0, false);
    tally.finish(Item::Training, "t2", 1500.0, true);
    assert!((tally.fraction() - 2000.0 / 3000.0).abs() < 1e-12);
    assert_eq!((tally.trainings_done, tally.trainings_failed), (2, 1));
    for (i, c) in cells.iter().enumerate() {
        tally.finish(Item::Cell, &format!("c{i}"), *c, false);
    }
    assert_eq!(tally.fraction(), 1.0);
    assert_eq!(tally.cells_done, 3);
}

#[test]
fn progress_under_way_never_moves_back_and_never_passes_the_item() {
    let mut tally = Tally::new(&[1000.0], &[]);
    tally.advance("c", 1000.0, 600.0);
    // The scoring phase counts samples from zero again.
    tally.advance("c", 1000.0, 100.0);
    assert_eq!(tally.fraction(), 0.6);
    tally.advance("c", 1000.0, 5000.0);
    assert_eq!(tally.fraction(), 1.0);
}

#[test]
fn a_reused_checkpoint_leaves_the_work_it_did_not_do() {
    let mut tally = Tally::new(&[100.0, 100.0], &[800.0]);
    tally.skip_training("t", 800.0);
    assert_eq!(tally.trainings_done, 1);
    assert_eq!(tally.fraction(), 0.0);
    tally.finish(Item::Cell, "a", 100.0, false);
    assert_eq!(tally.fraction(), 0.5);
}

#[test]
fn time_left_is_the_pace_so_far_applied_to_the_work_left() {
    assert_eq!(time_left(0.0, Duration::from_secs(90)), None);
    // A quarter done in 60 s: three quarters take 180 s more.
    assert_eq!(
        time_left(0.25, Duration::from_secs(60)),
        Some(Duration::from_secs(180))
    );
    assert_eq!(
        time_left(1.0, Duration::from_secs(60)),
        Some(Duration::ZERO)
    );
}

#[test]
fn lines_carry_the_count_the_elapsed_time_and_the_time_left() {
    let mut tally = Tally::new(&[10.0; 142], &[]);
    for i in 0..37 {
        tally.finish(Item::Cell, &i.to_string(), 10.0, i == 3);
    }
    let line = tally.line(
        Item::Cell,
        Duration::from_secs(252),
        "3gram-ter/mdm: ok (2.1 s)",
    );
    // 37 of 142 done in 252 s: 105 more at 252/37 s each = 715 s.
    assert_eq!(
        line,
        "[ 37/142 cells | 4m12s elapsed | ~11m55s left] 3gram-ter/mdm: ok (2.1 s)"
    );
    assert_eq!(
        tally.final_line(Duration::from_secs(3725)),
        "done: 37 cells (1 failed) in 1h02m total"
    );
    let mut one = Tally::new(&[1.0], &[5.0]);
    one.finish(Item::Training, "t", 5.0, false);
    one.finish(Item::Cell, "c", 1.0, false);
    assert_eq!(
        one.final_line(Duration::from_secs(5)),
        "done: 1 cell, 1 training in 5s total"
    );
    let none = Tally::new(&[1.0], &[]);
    assert!(none
        .line(Item::Cell, Duration::from_secs(3), "x")
        .contains("time left unknown"));
}

#[test]
fn clock_and_causes_read_at_a_glance() {
    assert_eq!(clock(Duration::from_millis(400)), "0s");
    assert_eq!(clock(Duration::from_secs(59)), "59s");
    assert_eq!(clock(Duration::from_secs(60)), "1m00s");
    assert_eq!(clock(Duration::from_secs(7260)), "2h01m");
    assert_eq!(short_cause("timed out\nworker log:\n..."), "timed out …");
    assert_eq!(short_cause("one line"), "one line");
    assert_eq!(short_cause(&"x".repeat(300)).chars().count(), 161);
}
