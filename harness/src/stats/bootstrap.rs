//! The percentile bootstrap behind every resampled 95% CI of the harness (TER over sequences,
//! task-declared means, `compare`'s differences).
//!
//! One rule for all of them: each of [`BOOTSTRAP_RESAMPLES`] resamples draws its base indices
//! (`0..nb`, uniformly, with replacement) from one ChaCha8 stream seeded with the given seed,
//! then — for two independent samples only — its new indices (`0..nn`) from the same stream;
//! the interval is the 2.5% and 97.5% quantile (linear interpolation) of the statistics.

use super::quantile;
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;

/// Resamples per interval.
pub const BOOTSTRAP_RESAMPLES: usize = 1000;

/// Which indices a resample draws.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Resample {
    /// One sample of this size.
    One(usize),
    /// Two samples of the same size whose values belong together (the same unit and sample
    /// index): one index draw serves both.
    Paired(usize),
    /// Two independent samples: `(base size, new size)`, drawn one after the other.
    Unpaired(usize, usize),
}

/// Percentile bootstrap 95% CI of `stat(base indices, new indices)` (one-sample and paired
/// statistics get the same indices twice). Non-finite statistics are dropped; `None` when a
/// sample is empty or fewer than half of the resamples gave a finite statistic. Deterministic
/// for a seed.
pub fn bootstrap_ci(
    resample: Resample,
    seed: u64,
    mut stat: impl FnMut(&[usize], &[usize]) -> f64,
) -> Option<(f64, f64)> {
    let (nb, nn) = match resample {
        Resample::One(n) | Resample::Paired(n) => (n, 0),
        Resample::Unpaired(nb, nn) => (nb, nn),
    };
    let unpaired = matches!(resample, Resample::Unpaired(..));
    if nb == 0 || (unpaired && nn == 0) {
        return None;
    }
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    let mut base = vec![0usize; nb];
    let mut new = vec![0usize; nn];
    let mut statistics = Vec::with_capacity(BOOTSTRAP_RESAMPLES);
    for _ in 0..BOOTSTRAP_RESAMPLES {
        for i in base.iter_mut() {
            *i = rng.random_range(0..nb);
        }
        let v = if unpaired {
            for i in new.iter_mut() {
                *i = rng.random_range(0..nn);
            }
            stat(&base, &new)
        } else {
            stat(&base, &base)
        };
        if v.is_finite() {
            statistics.push(v);
        }
    }
    if statistics.len() < BOOTSTRAP_RESAMPLES / 2 {
        return None;
    }
    statistics.sort_by(f64::total_cmp);
    Some((quantile(&statistics, 0.025), quantile(&statistics, 0.975)))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The rule of the module docs written out plainly, as the harness's three bootstraps
    /// were before they became one: the unified function must reproduce it exactly.
    fn reference(
        nb: usize,
        nn: Option<usize>,
        seed: u64,
        stat: impl Fn(&[usize], &[usize]) -> f64,
    ) -> (f64, f64) {
        let mut rng = ChaCha8Rng::seed_from_u64(seed);
        let mut stats = Vec::new();
        for _ in 0..BOOTSTRAP_RESAMPLES {
            let ib: Vec<usize> = (0..nb).map(|_| rng.random_range(0..nb)).collect();
            let inn: Vec<usize> = match nn {
                Some(nn) => (0..nn).map(|_| rng.random_range(0..nn)).collect(),
                None => ib.clone(),
            };
            stats.push(stat(&ib, &inn));
        }
        stats.sort_by(f64::total_cmp);
        (quantile(&stats, 0.025), quantile(&stats, 0.975))
    }

    fn values(n: usize, scale: f64) -> Vec<f64> {
        (0..n).map(|i| scale * ((i * 7919) % 13) as f64).collect()
    }

    fn mean_of(v: &[f64], idx: &[usize]) -> f64 {
        idx.iter().map(|&i| v[i]).sum::<f64>() / idx.len() as f64
    }

    #[test]
    fn one_sample_and_paired_draw_as_documented() {
        let v = values(37, 0.5);
        let stat = |i: &[usize], _: &[usize]| mean_of(&v, i);
        let want = reference(v.len(), None, 11, stat);
        assert_eq!(bootstrap_ci(Resample::One(v.len()), 11, stat), Some(want));
        assert_eq!(
            bootstrap_ci(Resample::Paired(v.len()), 11, stat),
            Some(want)
        );
        // The interval brackets the plain mean and another seed moves it.
        let m = v.iter().sum::<f64>() / v.len() as f64;
        assert!(want.0 < m && m < want.1, "{want:?} {m}");
        assert_ne!(bootstrap_ci(Resample::One(v.len()), 12, stat), Some(want));
    }

    #[test]
    fn unpaired_draws_base_then_new_as_documented() {
        let (b, n) = (values(20, 1.0), values(31, 2.0));
        let stat = |ib: &[usize], inn: &[usize]| mean_of(&n, inn) - mean_of(&b, ib);
        let want = reference(b.len(), Some(n.len()), 3, stat);
        assert_eq!(
            bootstrap_ci(Resample::Unpaired(b.len(), n.len()), 3, stat),
            Some(want)
        );
    }

    #[test]
    fn empty_samples_and_mostly_undefined_statistics_give_no_interval() {
        assert_eq!(bootstrap_ci(Resample::One(0), 1, |_, _| 1.0), None);
        assert_eq!(bootstrap_ci(Resample::Unpaired(3, 0), 1, |_, _| 1.0), None);
        assert_eq!(bootstrap_ci(Resample::One(5), 1, |_, _| f64::NAN), None);
        // A statistic undefined on some resamples (0/0 when every drawn value is 0) is dropped
        // from the percentiles, not sorted into them.
        let v = [0.0, 0.0, 0.0, 0.0, 1.0];
        let ratio = |i: &[usize], _: &[usize]| mean_of(&v, i) / mean_of(&v, i);
        assert_eq!(
            bootstrap_ci(Resample::One(v.len()), 1, ratio),
            Some((1.0, 1.0))
        );
    }
}
