//! pass@k, the unbiased estimator of Chen et al. 2021 (arXiv:2107.03374, §2.1; as
//! `estimate_pass_at_k` in `openai/human-eval`'s `evaluation.py`).
//!
//! With `n` samples of a problem of which `c` pass, pass@k = 1 − C(n−c, k) / C(n, k): the
//! probability that a random k-subset of the samples holds at least one passing sample. It is
//! computed stably as 1 − ∏_{i=n−c+1}^{n} (1 − k/i), and is 1 when n − c < k.

/// Why pass@k is undefined.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum PassAtKError {
    /// More correct than total samples.
    #[error("c = {c} passing samples out of n = {n}")]
    CorrectExceedsTotal {
        /// Total.
        n: u64,
        /// Passing.
        c: u64,
    },
    /// k = 0, or k > n.
    #[error("k = {k} must be in 1..=n (n = {n})")]
    BadK {
        /// Total.
        n: u64,
        /// k.
        k: u64,
    },
}

/// pass@k for one problem with `n` samples of which `c` passed.
pub fn pass_at_k(n: u64, c: u64, k: u64) -> Result<f64, PassAtKError> {
    if c > n {
        return Err(PassAtKError::CorrectExceedsTotal { n, c });
    }
    if k == 0 || k > n {
        return Err(PassAtKError::BadK { n, k });
    }
    if n - c < k {
        return Ok(1.0);
    }
    let kf = k as f64;
    let prod: f64 = (n - c + 1..=n).map(|i| 1.0 - kf / i as f64).product();
    Ok(1.0 - prod)
}

/// Mean pass@k over problems, each given as `(n, c)`.
pub fn mean_pass_at_k(problems: &[(u64, u64)], k: u64) -> Result<f64, PassAtKError> {
    if problems.is_empty() {
        return Ok(0.0);
    }
    let mut sum = 0.0;
    for &(n, c) in problems {
        sum += pass_at_k(n, c, k)?;
    }
    Ok(sum / problems.len() as f64)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Fraction of k-subsets of n samples (the first c passing) that hold a passing sample,
    /// by enumerating every subset as a bitmask.
    fn brute(n: u32, c: u32, k: u32) -> f64 {
        let (mut hit, mut all) = (0u64, 0u64);
        for mask in 0u32..(1 << n) {
            if mask.count_ones() != k {
                continue;
            }
            all += 1;
            if mask & ((1 << c) - 1) != 0 {
                hit += 1;
            }
        }
        hit as f64 / all as f64
    }

    #[test]
    fn matches_enumeration() {
        for n in 1..=12u32 {
            for c in 0..=n {
                for k in 1..=n {
                    let est = pass_at_k(n as u64, c as u64, k as u64).unwrap();
                    let b = brute(n, c, k);
                    assert!((est - b).abs() < 1e-12, "n={n} c={c} k={k}: {est} vs {b}");
                }
            }
        }
    }

    #[test]
    fn edge_cases() {
        assert_eq!(pass_at_k(10, 0, 1).unwrap(), 0.0);
        assert_eq!(pass_at_k(10, 10, 1).unwrap(), 1.0);
        assert!((pass_at_k(10, 3, 1).unwrap() - 0.3).abs() < 1e-15);
        assert_eq!(pass_at_k(5, 2, 4).unwrap(), 1.0);
        assert!(pass_at_k(3, 4, 1).is_err());
        assert!(pass_at_k(3, 1, 0).is_err());
        assert!(pass_at_k(3, 1, 4).is_err());
        // Large n stays finite and in [0, 1].
        let v = pass_at_k(200_000, 3, 100).unwrap();
        assert!(v > 0.0 && v < 1.0);
        assert!((mean_pass_at_k(&[(2, 1), (2, 2)], 1).unwrap() - 0.75).abs() < 1e-15);
    }
}
