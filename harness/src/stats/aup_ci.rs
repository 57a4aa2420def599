//! A bootstrap 95% CI of AUP ([`super::aup`]) over documents.
//!
//! AUP's uncertainty comes from which documents (problems) were asked: every accuracy of the
//! pool, and so the pool's `y_max`, is a mean over the same documents. A resample therefore
//! draws documents (not samples, not cells) with replacement, once for the whole pool, and
//! recomputes from that one draw every point's accuracy, the pool's `y_max` (the best of
//! them) and each series' AUP. Tokens per forward is held at its measured value: it is a cost,
//! not a score, and varies little between documents. The resampling rule is
//! [`super::bootstrap_ci`]'s ([`super::BOOTSTRAP_RESAMPLES`] resamples from one ChaCha8 stream
//! seeded with `seed`, percentile interval), so every series of a pool sees the same draws.

use super::{aup, bootstrap_ci, Resample};

/// One cell of a series as the bootstrap sees it.
#[derive(Debug, Clone, PartialEq)]
pub struct DocumentPoint {
    /// The cell's tokens per forward (the x of the AUP curve).
    pub tokens_per_forward: f64,
    /// Per document of the pool (the same indexing for every cell): the cell's mean score on
    /// it in percent, `None` where the cell has no sample of that document.
    pub per_document: Vec<Option<f64>>,
}

impl DocumentPoint {
    /// The point's accuracy over the drawn documents it has (a document drawn twice counts
    /// twice); NaN when it has none of them.
    fn accuracy(&self, drawn: &[usize]) -> f64 {
        let (sum, count) = drawn
            .iter()
            .filter_map(|&d| self.per_document.get(d).copied().flatten())
            .fold((0.0, 0usize), |(s, c), y| (s + y, c + 1));
        if count == 0 {
            f64::NAN
        } else {
            sum / count as f64
        }
    }
}

/// Percentile bootstrap 95% CI of every series' AUP in a pool of `documents` documents (see
/// the module documentation). `None` for a series whose AUP is undefined in more than half of
/// the resamples. Deterministic for a seed.
pub fn aup_ci(
    pool: &[Vec<DocumentPoint>],
    documents: usize,
    alpha: f64,
    seed: u64,
) -> Vec<Option<(f64, f64)>> {
    (0..pool.len())
        .map(|k| {
            bootstrap_ci(Resample::One(documents), seed, |drawn, _| {
                let curves: Vec<Vec<(f64, f64)>> = pool
                    .iter()
                    .map(|series| {
                        series
                            .iter()
                            .map(|p| (p.tokens_per_forward, p.accuracy(drawn)))
                            .collect()
                    })
                    .collect();
                let y_max = curves
                    .iter()
                    .flatten()
                    .map(|q| q.1)
                    .filter(|y| y.is_finite())
                    .fold(0.0, f64::max);
                aup(&curves[k], y_max, alpha).unwrap_or(f64::NAN)
            })
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::super::{aup, AUP_ALPHA};
    use super::*;

    fn point(tokens_per_forward: f64, per_document: &[f64]) -> DocumentPoint {
        DocumentPoint {
            tokens_per_forward,
            per_document: per_document.iter().map(|&y| Some(y)).collect(),
        }
    }

    fn mean(v: &[f64]) -> f64 {
        v.iter().sum::<f64>() / v.len() as f64
    }

    /// Every document scored alike: each resample gives the same accuracies, so the interval
    /// collapses onto the closed form (one point at ρ = 2, y = y_max = 50: AUP = 2·50).
    #[test]
    fn identical_documents_give_a_degenerate_interval_at_the_closed_form() {
        let pool = vec![vec![point(2.0, &[50.0; 8])]];
        let (lo, hi) = aup_ci(&pool, 8, AUP_ALPHA, 7)[0].unwrap();
        assert!(
            (lo - 100.0).abs() < 1e-9 && (hi - 100.0).abs() < 1e-9,
            "{lo} {hi}"
        );
    }

    /// Two series over 40 documents of mixed outcome: each interval is deterministic under its
    /// seed, contains the point estimate, and has positive width.
    #[test]
    fn interval_contains_the_estimate_and_is_reproducible() {
        let docs = 40;
        let mdm_fast: Vec<f64> = (0..docs)
            .map(|d| if d % 3 == 0 { 0.0 } else { 100.0 })
            .collect();
        let mdm_slow: Vec<f64> = (0..docs)
            .map(|d| if d % 5 == 0 { 0.0 } else { 100.0 })
            .collect();
        let ar: Vec<f64> = (0..docs)
            .map(|d| if d % 4 == 0 { 0.0 } else { 100.0 })
            .collect();
        let pool = vec![
            vec![point(1.5, &mdm_slow), point(4.0, &mdm_fast)],
            vec![point(1.0, &ar)],
        ];
        let y_max = [mean(&mdm_slow), mean(&mdm_fast), mean(&ar)]
            .into_iter()
            .fold(0.0, f64::max);
        let estimates = [
            aup(
                &[(1.5, mean(&mdm_slow)), (4.0, mean(&mdm_fast))],
                y_max,
                AUP_ALPHA,
            )
            .unwrap(),
            aup(&[(1.0, mean(&ar))], y_max, AUP_ALPHA).unwrap(),
        ];
        let first = aup_ci(&pool, docs, AUP_ALPHA, 11);
        assert_eq!(first, aup_ci(&pool, docs, AUP_ALPHA, 11));
        assert_ne!(first, aup_ci(&pool, docs, AUP_ALPHA, 12));
        for (ci, estimate) in first.iter().zip(estimates) {
            let (lo, hi) = ci.unwrap();
            assert!(
                lo < hi && lo <= estimate && estimate <= hi,
                "{lo} {estimate} {hi}"
            );
        }
    }

    /// A cell that lacks some documents averages over the drawn ones it has; a pool whose
    /// every draw misses a cell's documents leaves that series without an interval.
    #[test]
    fn missing_documents_are_skipped_not_counted_as_wrong() {
        let partial = DocumentPoint {
            tokens_per_forward: 1.0,
            per_document: vec![Some(100.0), None, Some(100.0), None],
        };
        assert_eq!(partial.accuracy(&[0, 1, 2, 3]), 100.0);
        assert!(partial.accuracy(&[1, 3]).is_nan());
        let none = DocumentPoint {
            tokens_per_forward: 1.0,
            per_document: vec![None; 4],
        };
        assert_eq!(aup_ci(&[vec![none]], 4, AUP_ALPHA, 1), vec![None]);
    }
}
