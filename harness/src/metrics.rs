//! Metrics computed from per-sample rows: TER (token-weighted generative perplexity under the
//! ground truth) with a bootstrap CI over sequences, SER with a Wilson CI, unigram entropy,
//! step accounting and speedups. Everything here is a pure function of `samples.jsonl` and
//! `cells.jsonl`, so summaries can always be recomputed.

use crate::results::{CellRecord, CellStatus, SampleRecord};
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use serde::{Deserialize, Serialize};
use std::collections::HashMap;

/// Two-sided 95% normal quantile.
const Z95: f64 = 1.959_963_984_540_054;

/// Bootstrap resamples for the TER interval.
pub const BOOTSTRAP_RESAMPLES: usize = 1000;

/// `exp(-Σ log q / Σ |x|)`; `None` when some sequence has `q(x) = 0` (TER is infinite).
pub fn ter(log_q: &[Option<f64>], lengths: &[usize]) -> Option<f64> {
    let mut total = 0.0;
    for lq in log_q {
        total += (*lq)?;
    }
    let tokens: usize = lengths.iter().sum();
    if tokens == 0 {
        return None;
    }
    Some((-total / tokens as f64).exp())
}

/// Percentile bootstrap 95% CI of TER, resampling whole sequences. Deterministic for a seed.
pub fn ter_bootstrap_ci(log_q: &[f64], lengths: &[usize], seed: u64) -> (f64, f64) {
    let n = log_q.len();
    if n == 0 {
        return (f64::NAN, f64::NAN);
    }
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    let mut stats = Vec::with_capacity(BOOTSTRAP_RESAMPLES);
    for _ in 0..BOOTSTRAP_RESAMPLES {
        let (mut lq, mut len) = (0.0, 0usize);
        for _ in 0..n {
            let i = rng.random_range(0..n);
            lq += log_q[i];
            len += lengths[i];
        }
        stats.push((-lq / len as f64).exp());
    }
    stats.sort_by(f64::total_cmp);
    (quantile(&stats, 0.025), quantile(&stats, 0.975))
}

fn quantile(sorted: &[f64], q: f64) -> f64 {
    let pos = q * (sorted.len() - 1) as f64;
    let (lo, hi) = (pos.floor() as usize, pos.ceil() as usize);
    sorted[lo] + (sorted[hi] - sorted[lo]) * (pos - lo as f64)
}

/// Wilson score 95% interval for `k` successes in `n` trials.
pub fn wilson_ci(k: usize, n: usize) -> (f64, f64) {
    if n == 0 {
        return (0.0, 1.0);
    }
    let (k, n) = (k as f64, n as f64);
    let p = k / n;
    let z2 = Z95 * Z95;
    let denom = 1.0 + z2 / n;
    let center = (p + z2 / (2.0 * n)) / denom;
    let half = Z95 / denom * (p * (1.0 - p) / n + z2 / (4.0 * n * n)).sqrt();
    // At the boundaries the interval closes exactly (the formula leaves rounding residue).
    let lo = if k == 0.0 {
        0.0
    } else {
        (center - half).max(0.0)
    };
    let hi = if k == n {
        1.0
    } else {
        (center + half).min(1.0)
    };
    (lo, hi)
}

/// Entropy (nats) of the token histogram of one sequence.
pub fn unigram_entropy(tokens: &[u32]) -> f64 {
    if tokens.is_empty() {
        return 0.0;
    }
    // Ordered map: a fixed summation order keeps the result bit-for-bit reproducible.
    let mut counts: std::collections::BTreeMap<u32, usize> = std::collections::BTreeMap::new();
    for &t in tokens {
        *counts.entry(t).or_default() += 1;
    }
    let n = tokens.len() as f64;
    counts
        .values()
        .map(|&c| {
            let p = c as f64 / n;
            -p * p.ln()
        })
        .sum()
}

/// One row of `summary.json`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CellSummary {
    pub key: String,
    pub unit: String,
    pub task: String,
    /// `reference` for the ground-truth row.
    pub model: String,
    pub sampler: Option<String>,
    pub steps: Option<usize>,
    pub length: usize,
    pub seed: u64,
    pub batch_size: usize,
    pub status: CellStatus,
    pub cause: Option<String>,
    pub n: usize,
    /// Token error rate; `None` if infinite (some sample outside the support) or failed.
    pub ter: Option<f64>,
    pub ter_ci: Option<(f64, f64)>,
    /// Samples with `q(x) = 0` (make TER infinite).
    pub zero_probability_samples: usize,
    /// The task's exact optimum for this length.
    pub optimal_ter: Option<f64>,
    pub ser: Option<f64>,
    pub ser_ci: Option<(f64, f64)>,
    pub unigram_entropy: Option<f64>,
    /// Mean first zero-probability position among samples outside the support.
    pub mean_first_error: Option<f64>,
    /// Zero-probability transitions per generated token.
    pub invalid_transition_rate: Option<f64>,
    /// Mean network calls per sample.
    pub nfe: Option<f64>,
    /// Network calls actually made, summed over batches.
    pub batch_nfe: Option<u64>,
    /// Generated tokens per network call of a sample.
    pub tokens_per_forward: Option<f64>,
    pub wall_seconds: Option<f64>,
    pub tokens_per_second: Option<f64>,
    /// Throughput relative to the AR cell of the same task, length, seed and batch size.
    pub speedup: Option<f64>,
    pub speedup_baseline: Option<String>,
    pub device: Option<String>,
}

/// Whether a cell is an autoregressive reference for speedups.
pub fn is_ar_cell(cell: &CellRecord) -> bool {
    cell.model_autoregressive
        || cell
            .cell
            .sampler
            .as_ref()
            .is_some_and(|s| s.name == "left_to_right" || s.name == "ar")
}

/// Summaries of `cells` (in order) from their sample rows.
pub fn summarize(cells: &[CellRecord], samples: &[SampleRecord]) -> Vec<CellSummary> {
    let mut by_unit: HashMap<&str, Vec<&SampleRecord>> = HashMap::new();
    for s in samples {
        by_unit.entry(s.unit.as_str()).or_default().push(s);
    }
    let mut rows: Vec<CellSummary> = cells
        .iter()
        .map(|c| {
            let mut rows = by_unit.get(c.unit.as_str()).cloned().unwrap_or_default();
            rows.sort_by_key(|r| r.index);
            summarize_cell(c, &rows)
        })
        .collect();
    // Speedups against the first AR cell with the same task, length, seed and batch size.
    let baselines: Vec<(usize, &CellRecord)> = cells
        .iter()
        .enumerate()
        .filter(|(_, c)| c.status == CellStatus::Ok && !c.cell.is_reference() && is_ar_cell(c))
        .collect();
    for (i, c) in cells.iter().enumerate() {
        if c.cell.is_reference() {
            continue;
        }
        let base = baselines.iter().find(|(_, b)| {
            b.cell.task.name == c.cell.task.name
                && b.cell.length == c.cell.length
                && b.cell.seed == c.cell.seed
                && b.cell.batch_size == c.cell.batch_size
        });
        if let Some(&(bi, b)) = base {
            let tps = rows[i].tokens_per_second;
            let base_tps = rows[bi].tokens_per_second;
            rows[i].speedup_baseline = Some(b.key.clone());
            rows[i].speedup = match (tps, base_tps) {
                (Some(a), Some(b)) if b > 0.0 => Some(a / b),
                _ => None,
            };
        }
    }
    rows
}

fn summarize_cell(c: &CellRecord, rows: &[&SampleRecord]) -> CellSummary {
    let spec = &c.cell;
    let mut s = CellSummary {
        key: c.key.clone(),
        unit: c.unit.clone(),
        task: spec.task.name.clone(),
        model: spec
            .model
            .as_ref()
            .map(|m| m.name.clone())
            .unwrap_or_else(|| "reference".into()),
        sampler: spec.sampler.as_ref().map(|x| x.name.clone()),
        steps: spec.sampler.as_ref().map(|x| x.steps),
        length: spec.length,
        seed: spec.seed,
        batch_size: spec.batch_size,
        status: c.status,
        cause: c.cause.clone(),
        n: rows.len(),
        ter: None,
        ter_ci: None,
        zero_probability_samples: 0,
        optimal_ter: c.task_description.as_ref().and_then(|d| d.optimal_ter),
        ser: None,
        ser_ci: None,
        unigram_entropy: None,
        mean_first_error: None,
        invalid_transition_rate: None,
        nfe: None,
        batch_nfe: None,
        tokens_per_forward: None,
        wall_seconds: None,
        tokens_per_second: None,
        speedup: None,
        speedup_baseline: None,
        device: c.device.clone(),
    };
    if c.status != CellStatus::Ok || rows.is_empty() {
        return s;
    }
    let n = rows.len();
    let log_q: Vec<Option<f64>> = rows.iter().map(|r| r.log_q).collect();
    let lengths: Vec<usize> = rows.iter().map(|r| r.tokens.len()).collect();
    s.zero_probability_samples = log_q.iter().filter(|l| l.is_none()).count();
    s.ter = ter(&log_q, &lengths);
    if s.ter.is_some() {
        let finite: Vec<f64> = log_q.iter().map(|l| l.unwrap_or(0.0)).collect();
        s.ter_ci = Some(ter_bootstrap_ci(&finite, &lengths, seed_of(&c.unit)));
    }
    let errors = rows.iter().filter(|r| !r.in_support).count();
    s.ser = Some(errors as f64 / n as f64);
    s.ser_ci = Some(wilson_ci(errors, n));
    s.unigram_entropy =
        Some(rows.iter().map(|r| unigram_entropy(&r.tokens)).sum::<f64>() / n as f64);
    let firsts: Vec<usize> = rows.iter().filter_map(|r| r.first_invalid).collect();
    if !firsts.is_empty() {
        s.mean_first_error = Some(firsts.iter().sum::<usize>() as f64 / firsts.len() as f64);
    }
    let total_tokens: usize = lengths.iter().sum();
    s.invalid_transition_rate = Some(
        rows.iter().map(|r| r.invalid_transitions).sum::<usize>() as f64
            / total_tokens.max(1) as f64,
    );
    if !spec.is_reference() {
        let nfe: u64 = rows.iter().map(|r| r.nfe).sum();
        let generated: u64 = rows.iter().map(|r| r.generated_tokens).sum();
        s.nfe = Some(nfe as f64 / n as f64);
        s.tokens_per_forward = (nfe > 0).then(|| generated as f64 / nfe as f64);
        s.batch_nfe = Some(c.batches.iter().map(|b| b.nfe).sum());
        let wall: f64 = c.batches.iter().map(|b| b.wall_seconds).sum();
        s.wall_seconds = Some(wall);
        s.tokens_per_second = (wall > 0.0).then(|| generated as f64 / wall);
    }
    s
}

/// A stable 64-bit seed from a unit id (hex).
fn seed_of(unit: &str) -> u64 {
    u64::from_str_radix(&unit[..unit.len().min(16)], 16).unwrap_or(0)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ter_is_token_weighted_geometric_mean() {
        // Two sequences with per-token log-probs ln(1/2) and ln(1/4): TER = exp(mean NLL).
        let lq = [Some(2.0 * (0.5f64).ln()), Some(6.0 * (0.25f64).ln())];
        let t = ter(&lq, &[2, 6]).unwrap();
        let want = ((2.0 * 2f64.ln() + 6.0 * 4f64.ln()) / 8.0).exp();
        assert!((t - want).abs() < 1e-12);
        assert_eq!(ter(&[Some(-1.0), None], &[1, 1]), None);
    }

    #[test]
    fn wilson_matches_known_values() {
        // k=0, n=10: upper bound z²/(n+z²) = 0.2775 (closed form at k=0).
        let (lo, hi) = wilson_ci(0, 10);
        assert_eq!(lo, 0.0);
        assert!((hi - Z95 * Z95 / (10.0 + Z95 * Z95)).abs() < 1e-12);
        // k=5, n=10: symmetric around 0.5, known 0.2366..0.7634.
        let (lo, hi) = wilson_ci(5, 10);
        assert!(
            (lo - 0.236_593).abs() < 1e-5 && (hi - 0.763_407).abs() < 1e-5,
            "{lo} {hi}"
        );
    }

    #[test]
    fn bootstrap_ci_brackets_the_estimate_and_is_deterministic() {
        let lq: Vec<f64> = (0..200).map(|i| -10.0 - (i % 7) as f64).collect();
        let lens = vec![8; 200];
        let (lo, hi) = ter_bootstrap_ci(&lq, &lens, 1);
        let t = ter(&lq.iter().map(|&x| Some(x)).collect::<Vec<_>>(), &lens).unwrap();
        assert!(lo < t && t < hi, "{lo} {t} {hi}");
        assert_eq!((lo, hi), ter_bootstrap_ci(&lq, &lens, 1));
    }

    #[test]
    fn unigram_entropy_of_uniform_and_constant() {
        assert!((unigram_entropy(&[0, 1, 2, 3]) - 4f64.ln()).abs() < 1e-12);
        assert_eq!(unigram_entropy(&[5, 5, 5]), 0.0);
    }
}
