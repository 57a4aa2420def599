//! The status of a row: quality metrics by the CI of the delta and a practical floor, timings
//! by asv's rule (ratio of medians past a threshold and a Mann–Whitney test), confirmed on the
//! CPU clock for CPU work. A timing is regressed, improved, within noise or not judged: a
//! difference that is large but not significant is noise too (the summary line gives the
//! largest), since on a shared machine such differences are the rule, not a signal.

use super::{Better, Row, Status};
use super::{LARGE_ABS_RATE_CHANGE, LARGE_REL_CHANGE};
use crate::results::CellRecord;
use crate::stats::{self, bootstrap_ci, Resample};

/// A wall-clock regression or improvement of CPU work stands only when the CPU clock finds the
/// same; otherwise it is the machine (other processes on the cores), not the code: it is noise,
/// never gated, and the tokens/CPU-s row decides.
pub(super) fn confirm_with_cpu(wall: &mut Row, cpu: &Row) {
    if matches!(wall.status, Status::Regressed | Status::Improved) && cpu.status != wall.status {
        wall.status = Status::WithinNoise;
        wall.status_label = wall.status.label();
        wall.note = Some(format!(
            "{}; the CPU time per token does not confirm it ({}): the machine was busier or quieter, not the code slower — the tokens/CPU-s row decides",
            wall.note.as_deref().unwrap_or(""),
            cpu.status.label()
        ));
    }
}

/// Whether a cell's work ran on the worker's CPU, so that its CPU clock measures it: the model
/// says its device is `cpu`, and its timed batches spent at least a tenth of their wall time on
/// the worker's CPU clock (a model that mostly waits — on a GPU, a server, a sleep — spends far
/// less; a busy machine lowers the share, but not that far).
pub(super) fn cpu_bound(rec: &CellRecord) -> bool {
    if rec.device.as_deref() != Some("cpu") {
        return false;
    }
    let ratios: Vec<f64> = rec
        .batches
        .iter()
        .skip(1)
        .filter(|b| b.wall_seconds > 0.0)
        .filter_map(|b| b.cpu_seconds.map(|c| c / b.wall_seconds))
        .collect();
    stats::quartiles(&ratios).is_some_and(|(median, _, _)| median >= 0.1)
}

/// Fewest timed batches per side for a timing to be judged at all.
pub const MIN_TIMED_BATCHES: usize = 5;
/// Significance level of the Mann–Whitney test on timed batches.
pub(super) const TIMING_ALPHA: f64 = 0.01;

/// Judge a throughput row from the per-batch throughputs of both runs (warm-up excluded): the
/// ratio of medians must pass a threshold — the larger of the noise floor and each run's own
/// spread (interquartile range over median) — *and* the Mann–Whitney test must find the batches
/// different at 1%; anything else is within noise. Fewer than [`MIN_TIMED_BATCHES`] timed
/// batches on a side cannot be judged (never gates). Identical timings across reruns are not
/// expected, so nothing here says "identical".
pub(super) fn judge_timing(row: &mut Row, base: &[f64], new: &[f64], floor: f64, seed: u64) {
    let (Some((bm, bq1, bq3)), Some((nm, nq1, nq3))) =
        (stats::quartiles(base), stats::quartiles(new))
    else {
        row.status = Status::NotJudged;
        row.status_label = row.status.label();
        row.note = Some("no timed batch on a side".into());
        return;
    };
    let rel = nm / bm - 1.0;
    row.base = Some(bm);
    row.new = Some(nm);
    row.delta = Some(nm - bm);
    row.rel = Some(rel);
    row.paired = false;
    let spread = ((bq3 - bq1) / bm).max((nq3 - nq1) / nm);
    let threshold = floor.max(spread);
    row.method = format!(
        "median of {} vs {} timed batches (first batch = warm-up); Mann–Whitney U at {:.0}%; threshold ±{:.0}% = max(noise floor {:.0}%, spread {:.0}%)",
        base.len(),
        new.len(),
        TIMING_ALPHA * 100.0,
        threshold * 100.0,
        floor * 100.0,
        spread * 100.0
    );
    if base.len() >= 2 && new.len() >= 2 {
        let median = |v: &[f64], idx: &[usize]| -> f64 {
            let picked: Vec<f64> = idx.iter().map(|&i| v[i]).collect();
            stats::quartiles(&picked).map_or(f64::NAN, |q| q.0)
        };
        let resample = Resample::Unpaired(base.len(), new.len());
        row.rel_ci = bootstrap_ci(resample, seed, |ib, inn| {
            median(new, inn) / median(base, ib) - 1.0
        });
        row.ci = row.rel_ci.map(|(lo, hi)| (lo * bm, hi * bm));
    }
    if base.len() < MIN_TIMED_BATCHES || new.len() < MIN_TIMED_BATCHES {
        row.status = Status::NotJudged;
        row.note = Some(format!(
            "fewer than {MIN_TIMED_BATCHES} timed batches on a side ({} vs {}): timing not judged; raise samples or lower batch_size for a timing you can gate on",
            base.len(),
            new.len()
        ));
    } else {
        let p = stats::mann_whitney_p(base, new).unwrap_or(1.0);
        let significant = p < TIMING_ALPHA;
        row.status = if rel < -threshold && significant {
            Status::Regressed
        } else if rel > threshold && significant {
            Status::Improved
        } else {
            Status::WithinNoise
        };
        row.note = Some(if rel.abs() > threshold && !significant {
            format!("beyond the threshold but not significant (Mann–Whitney p = {p:.3}): noise")
        } else {
            format!("Mann–Whitney p = {p:.3}")
        });
    }
    row.status_label = row.status.label();
}

/// Set delta, relative delta, CI and status of a quality-like row.
/// `rate`: the metric is a share, whose changes are judged in absolute terms.
pub(super) fn judge(
    row: &mut Row,
    base: f64,
    new: f64,
    ci: Option<(f64, f64)>,
    identical: bool,
    floor: f64,
    rate: bool,
) {
    let delta = new - base;
    row.delta = Some(delta);
    row.rel = (base != 0.0).then(|| new / base - 1.0);
    row.ci = ci;
    if identical {
        row.status = Status::Identical;
        return;
    }
    let better = row.better.unwrap_or(Better::Neither);
    let practical = delta.abs() >= floor && delta != 0.0;
    let large = if rate {
        delta.abs() >= LARGE_ABS_RATE_CHANGE
    } else {
        row.rel.is_some_and(|r| r.abs() > LARGE_REL_CHANGE)
    };
    row.status = match ci {
        Some((lo, hi)) => {
            let up = lo > 0.0;
            let down = hi < 0.0;
            match better {
                _ if !(up || down) || !practical => {
                    if large {
                        Status::ChangedNotSignificant
                    } else {
                        Status::WithinNoise
                    }
                }
                Better::Lower if up => Status::Regressed,
                Better::Lower => Status::Improved,
                Better::Higher if down => Status::Regressed,
                Better::Higher => Status::Improved,
                Better::Neither => Status::Changed,
            }
        }
        None => {
            if large {
                Status::ChangedNotSignificant
            } else {
                Status::WithinNoise
            }
        }
    };
    if better == Better::Neither && row.status == Status::ChangedNotSignificant {
        row.status = Status::WithinNoise;
    }
}
