use super::judge::{confirm_with_cpu, judge_timing};
use super::timing;
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
    assert_eq!(r.status, Status::NotJudged);
    assert!(!r.status.is_change() && !r.status.gates());
}

#[test]
fn a_wall_change_the_cpu_clock_does_not_confirm_never_gates() {
    // The machine got busier: wall time −25%, CPU time per token flat.
    let (mut wall, mut cpu) = (row("tokens/s"), row("tokens/CPU-s"));
    judge_timing(&mut wall, &batches(100.0), &batches(75.0), 0.10, 1);
    judge_timing(&mut cpu, &batches(100.0), &batches(99.0), 0.10, 2);
    assert_eq!(wall.status, Status::Regressed);
    confirm_with_cpu(&mut wall, &cpu);
    assert_eq!(wall.status, Status::WithinNoise);
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
    assert_eq!(wall.status, Status::WithinNoise);
}

fn session(jobs: usize, cells: usize, load: Option<(f64, f64)>) -> crate::results::RunSession {
    crate::results::RunSession {
        started_at: "2026-01-01T00:00:00Z".into(),
        finished_at: None,
        host: "h".into(),
        jobs,
        cells,
        cpu_model: Some("CPU".into()),
        cores: 2,
        load_start: load.map(|l| l.0),
        load_end: load.map(|l| l.1),
    }
}

#[test]
fn timings_are_trusted_only_from_cells_timed_alone_with_a_core_to_spare() {
    // One cell at a time, the other work leaving a core free at the start, and the end load
    // (this run's worker included) within the cores.
    assert_eq!(
        timing::session_problem(&session(1, 9, Some((0.3, 1.2)))),
        None
    );
    assert_eq!(
        timing::session_problem(&session(1, 9, Some((1.0, 2.0)))),
        None
    );
    // A single cell to run shares nothing, whatever --jobs says.
    assert_eq!(
        timing::session_problem(&session(4, 1, Some((0.0, 1.0)))),
        None
    );
    // Two cells at a time.
    let p = timing::session_problem(&session(2, 9, Some((3.1, 3.4)))).unwrap();
    assert_eq!(p, "ran 2 cells at a time (load 3.1 → 3.4 on 2 cores)");
    // Alone, but other work held a core at the start, or both at the end.
    assert!(timing::session_problem(&session(1, 9, Some((1.5, 1.6)))).is_some());
    assert!(timing::session_problem(&session(1, 9, Some((0.2, 2.5)))).is_some());
    // An unknown load is not taken as a low one.
    let p = timing::session_problem(&session(1, 9, None)).unwrap();
    assert!(p.contains("not recorded"), "{p}");
}

#[test]
fn the_timing_line_counts_noise_instead_of_listing_it() {
    let mut rows = Vec::new();
    for (status, rel) in [
        (Status::WithinNoise, 0.04),
        (Status::WithinNoise, -0.12),
        (Status::Regressed, -0.3),
    ] {
        let mut r = row("tokens/s");
        r.status = status;
        r.rel = Some(rel);
        rows.push(r);
    }
    // A quality row is not a timing row.
    let mut ter = row("TER");
    ter.rel = Some(0.9);
    rows.push(ter);
    let t = TimingSummary::of(&rows, Vec::new());
    assert!(t.judged);
    assert_eq!((t.rows, t.within_noise, t.regressed), (3, 2, 1));
    assert_eq!(
        t.line,
        "1 timing row regressed and 0 improved (listed); 2 timing rows within noise (largest ±12%)"
    );
    // Not judged: every timing row is withheld and the line says why.
    timing::withhold_judgement(&mut rows);
    assert!(rows[..3].iter().all(|r| r.status == Status::NotJudged));
    assert_eq!(rows[3].status, Status::WithinNoise);
    let t = TimingSummary::of(&rows, vec!["the new run ran 2 cells at a time".into()]);
    assert_eq!(
        t.line,
        "timings not compared: the new run ran 2 cells at a time; 3 timing rows not judged (largest ±30%); quality rows compared as usual"
    );
    assert_eq!(t.regressed, 0);
}
