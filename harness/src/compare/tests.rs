use super::judge::{confirm_with_cpu, judge_timing};
use super::*;

fn row(metric: &str) -> Row {
    Row {
        status: Status::WithinNoise,
        status_label: Status::WithinNoise.label(),
        key: "k".into(),
        unit: "u".into(),
        task: "t".into(),
        model: "m".into(),
        sampler: None,
        steps: None,
        length: 8,
        seed: 0,
        metric: metric.into(),
        better: Some(Better::Higher),
        base: None,
        new: None,
        delta: None,
        rel: None,
        ci: None,
        rel_ci: None,
        n_base: 0,
        n_new: 0,
        method: String::new(),
        paired: false,
        digits: 0,
        note: None,
        flips: Vec::new(),
    }
}

/// Nine repeated measurements around `centre`, spread ±1%.
fn batches(centre: f64) -> Vec<f64> {
    (0..9)
        .map(|i| centre * (1.0 + 0.0025 * (i as f64 - 4.0)))
        .collect()
}

#[test]
fn a_real_slowdown_regresses_and_noise_does_not() {
    let mut r = row("tokens/s");
    judge_timing(&mut r, &batches(100.0), &batches(77.0), 0.10, 1);
    assert_eq!(r.status, Status::Regressed, "{:?}", r.note);
    let mut r = row("tokens/s");
    judge_timing(&mut r, &batches(100.0), &batches(97.0), 0.10, 1);
    assert_eq!(r.status, Status::WithinNoise);
    // Too few timed batches: shown, never judged.
    let mut r = row("tokens/s");
    judge_timing(&mut r, &batches(100.0)[..3], &batches(50.0)[..3], 0.10, 1);
    assert_eq!(r.status, Status::ChangedNotSignificant);
}

#[test]
fn a_wall_change_the_cpu_clock_does_not_confirm_never_gates() {
    // The machine got busier: wall time −25%, CPU time per token flat.
    let (mut wall, mut cpu) = (row("tokens/s"), row("tokens/CPU-s"));
    judge_timing(&mut wall, &batches(100.0), &batches(75.0), 0.10, 1);
    judge_timing(&mut cpu, &batches(100.0), &batches(99.0), 0.10, 2);
    assert_eq!(wall.status, Status::Regressed);
    confirm_with_cpu(&mut wall, &cpu);
    assert_eq!(wall.status, Status::ChangedNotSignificant);
    assert!(!wall.status.gates());
    // The code got slower: both clocks agree, and it gates.
    let (mut wall, mut cpu) = (row("tokens/s"), row("tokens/CPU-s"));
    judge_timing(&mut wall, &batches(100.0), &batches(75.0), 0.10, 1);
    judge_timing(&mut cpu, &batches(100.0), &batches(76.0), 0.10, 2);
    confirm_with_cpu(&mut wall, &cpu);
    assert_eq!(wall.status, Status::Regressed);
    assert_eq!(cpu.status, Status::Regressed);
    // A CPU clock that only moved a little (not significant) does not confirm either.
    let (mut wall, mut cpu) = (row("tokens/s"), row("tokens/CPU-s"));
    judge_timing(&mut wall, &batches(100.0), &batches(75.0), 0.10, 1);
    judge_timing(&mut cpu, &batches(100.0), &batches(88.0)[..3], 0.10, 2);
    confirm_with_cpu(&mut wall, &cpu);
    assert_eq!(wall.status, Status::ChangedNotSignificant);
}
