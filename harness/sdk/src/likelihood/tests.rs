//! The estimator against closed forms: a Markov chain's exact conditionals (`ChainOracle`),
//! whose `log p(y | c)` is the product of its transition entries.

use super::*;
use crate::{DenoiserModel, Model};

/// A Markov chain whose conditionals are computed by enumerating every completion of the
/// visible tokens: exact, and independent of the samplers' test chain.
struct ChainOracle {
    vocab: usize,
    init: Vec<f64>,
    trans: Vec<f64>,
}

impl ChainOracle {
    fn full() -> Self {
        ChainOracle {
            vocab: 3,
            init: vec![0.5, 0.3, 0.2],
            trans: vec![0.1, 0.6, 0.3, 0.25, 0.25, 0.5, 0.6, 0.1, 0.3],
        }
    }

    fn prob(&self, x: &[usize]) -> f64 {
        let v = self.vocab;
        x.windows(2)
            .fold(self.init[x[0]], |p, w| p * self.trans[w[0] * v + w[1]])
    }
}

impl Denoiser for ChainOracle {
    fn vocab_size(&self) -> usize {
        self.vocab
    }
    fn denoise(
        &mut self,
        tokens: &[u32],
        batch: usize,
        length: usize,
        _t: f64,
        out: &mut [f64],
    ) -> crate::Result<()> {
        let v = self.vocab;
        out.fill(0.0);
        for b in 0..batch {
            let row = &tokens[b * length..(b + 1) * length];
            for code in 0..v.pow(length as u32) {
                let x: Vec<usize> = (0..length).map(|j| code / v.pow(j as u32) % v).collect();
                if row
                    .iter()
                    .zip(&x)
                    .any(|(&t, &xi)| t as usize != v && t as usize != xi)
                {
                    continue;
                }
                let p = self.prob(&x);
                for (j, &xi) in x.iter().enumerate() {
                    out[(b * length + j) * v + xi] += p;
                }
            }
        }
        Ok(())
    }
}

/// `log p(continuation | context)` of the chain, by the chain rule on its tables.
fn chain_log_p(chain: &ChainOracle, context: &[u32], continuation: &[u32]) -> f64 {
    let v = chain.vocab;
    let x: Vec<u32> = context.iter().chain(continuation).copied().collect();
    (context.len()..x.len())
        .map(|j| match j {
            0 => chain.init[x[0] as usize].ln(),
            _ => chain.trans[x[j - 1] as usize * v + x[j] as usize].ln(),
        })
        .sum()
}

/// Every non-empty subset of `0..len` with its probability under the estimator's mask law
/// (count uniform on `1..=len`, then a uniform subset of that size).
fn all_masks(len: usize) -> Vec<(Vec<usize>, f64)> {
    let choose = |n: usize, k: usize| (0..k).fold(1.0, |a, i| a * (n - i) as f64 / (i + 1) as f64);
    (1u32..1 << len)
        .map(|bits| {
            let m: Vec<usize> = (0..len).filter(|&i| bits >> i & 1 == 1).collect();
            let p = 1.0 / (len as f64 * choose(len, m.len()));
            (m, p)
        })
        .collect()
}

/// With exact conditionals the ELBO's expectation over the mask law is the exact
/// log-likelihood, for a rolling and a conditional row; weighting by `L/(l+1)` instead of
/// LLaDA's `L/l` is not (the check can fail).
#[test]
fn the_elbo_of_exact_conditionals_has_the_exact_log_likelihood_as_its_expectation() {
    let mut chain = ChainOracle::full();
    for (context, continuation) in [
        (vec![], vec![0u32, 2, 1, 1, 0]),
        (vec![2, 0], vec![1, 2, 2, 0]),
    ] {
        let exact = chain_log_p(&chain, &context, &continuation);
        let masks = all_masks(continuation.len());
        let subsets: Vec<Vec<usize>> = masks.iter().map(|(m, _)| m.clone()).collect();
        let terms = elbo_terms(&mut chain, &context, &continuation, &subsets, 7, None).unwrap();
        let expectation: f64 = terms
            .iter()
            .zip(&masks)
            .map(|(d, (_, p))| p * d.value)
            .sum();
        assert!(
            (expectation - exact).abs() < 1e-12,
            "E[ELBO] {expectation} vs exact {exact}"
        );
        let wrong: f64 = terms
            .iter()
            .zip(&masks)
            .map(|(d, (m, p))| p * d.value * m.len() as f64 / (m.len() + 1) as f64)
            .sum();
        assert!(
            (wrong - exact).abs() > 0.1,
            "L/(l+1) gives {wrong}, exact {exact}"
        );
        // Trailing masks (a fixed-length model) marginalise the end: the same expectation.
        let padded = elbo_terms(&mut chain, &context, &continuation, &subsets, 3, Some(8)).unwrap();
        let e_padded: f64 = padded
            .iter()
            .zip(&masks)
            .map(|(d, (_, p))| p * d.value)
            .sum();
        assert!((e_padded - exact).abs() < 1e-12);
    }
}

/// The stratified scheme reproduces LLaDA's counts: from start `k`, `round(k + j·L/b)` wrapped
/// into `1..=L`; every count appears equally often over the starts, so each draw's count is
/// uniform. Every scheme's masks have the right sizes and distinct positions.
#[test]
fn draws_have_the_right_counts_and_shapes() {
    let len = 5;
    let settings = ElboSettings::new(6, DrawScheme::Stratified, 3, 3);
    let mut rng = row_rng(3, 0);
    let groups = draw_masks(&mut rng, len, &settings);
    assert_eq!(groups.len(), 2);
    for g in &groups {
        let counts: Vec<usize> = g.iter().map(Vec::len).collect();
        // b = 3 over L = 5: steps of 5/3 from k (no half-integers, so LLaDA's rule exactly).
        let k = counts[0];
        let expected: Vec<usize> = (0..3)
            .map(|j| ((k as f64 + j as f64 * 5.0 / 3.0).round_ties_even() as usize - 1) % len + 1)
            .collect();
        assert_eq!(
            counts, expected,
            "LLaDA's counts where no offset is a half-integer"
        );
    }
    // Over the starts, each draw's count is uniform; LLaDA's `round(k + j·L/b)` (half to even)
    // is not where `j·L/b` is a half-integer (L = 8, b = 16).
    let (len, b) = (8, 16);
    for j in 0..b {
        let mut ours = vec![0; len + 1];
        let mut llada = vec![0; len + 1];
        for k in 1..=len {
            ours[stratified_count(k, j, len, b)] += 1;
            let x = (k as f64 + j as f64 * len as f64 / b as f64).round_ties_even() as usize;
            llada[(x - 1) % len + 1] += 1;
        }
        assert!(ours[1..].iter().all(|&n| n == 1), "draw {j}: {ours:?}");
        if j % 2 == 1 {
            assert!(llada[1..].iter().any(|&n| n != 1), "draw {j}: {llada:?}");
        }
    }
    for scheme in [
        DrawScheme::Antithetic,
        DrawScheme::Independent,
        DrawScheme::Stratified,
    ] {
        let settings = ElboSettings::new(9, scheme, 4, 1);
        let masks: Vec<Vec<usize>> = draw_masks(&mut row_rng(1, 2), len, &settings)
            .into_iter()
            .flatten()
            .collect();
        assert_eq!(masks.len(), 9, "{scheme:?}");
        for m in &masks {
            let mut sorted = m.clone();
            sorted.sort();
            sorted.dedup();
            assert!(!m.is_empty() && sorted.len() == m.len() && m.iter().all(|&p| p < len));
        }
        if scheme == DrawScheme::Antithetic {
            // A pair: l and L + 1 − l positions sharing exactly one.
            assert_eq!(masks[0].len() + masks[1].len(), len + 1);
            assert_eq!(masks[0].iter().filter(|p| masks[1].contains(p)).count(), 1);
        }
    }
}

/// Each scheme's estimate lands within 4 standard errors of the exact value (seeded), and the
/// model answers through `DenoiserModel` with the estimate and its draws.
#[test]
fn estimates_land_near_the_exact_value_with_honest_standard_errors() {
    let rows = vec![(vec![1u32], vec![0u32, 2, 1, 1, 0, 2])];
    let exact = chain_log_p(&ChainOracle::full(), &rows[0].0, &rows[0].1);
    let mut model = DenoiserModel::new(ChainOracle::full());
    for scheme in [
        DrawScheme::Stratified,
        DrawScheme::Antithetic,
        DrawScheme::Independent,
    ] {
        let (mut request, _) = LoglikelihoodRequest::pack(&rows, None);
        request.elbo = Some(ElboSettings::new(256, scheme, 16, 11).with_per_draw());
        let reply = model.loglikelihood(&request, &rows).unwrap();
        let row = &reply.rows[0];
        let (mean, se) = (row.log_likelihood.unwrap(), row.std_error.unwrap());
        assert!(
            se > 0.0 && (mean - exact).abs() < 4.0 * se,
            "{scheme:?}: {mean} ± {se} vs {exact}"
        );
        assert_eq!(row.draws.as_ref().unwrap().len(), 256);
        assert_eq!(reply.method, "elbo");
    }
}

#[test]
fn bad_requests_are_refused_with_the_reason() {
    let mut chain = ChainOracle::full();
    let err = elbo_terms(&mut chain, &[], &[0, 1], &[vec![2]], 1, None).unwrap_err();
    assert!(
        err.message.contains("position 2 of a continuation of 2"),
        "{err}"
    );
    let zero = ElboSettings::new(0, DrawScheme::Stratified, 1, 0);
    let err = elbo(&mut chain, &[], &[0], &zero, 0, None).unwrap_err();
    assert!(err.message.contains("mc_num"), "{err}");
}
