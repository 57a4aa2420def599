//! Likelihood requests on the formal languages: the exact `log q(continuation | context)`
//! against brute-force sums, and the oracle's Monte-Carlo ELBO against it. With exact
//! conditionals the ELBO's expectation is the exact log-likelihood (the any-order chain rule),
//! so its mean must land within a few standard errors, and its spread must shrink like
//! `1/√mc_num`; LLaDA's weight `L/l` replaced by `L/(l+1)` must fail the same check.

use dlm_formal::language::{table1, Language, Variant};
use dlm_formal::plugin::{LanguageTask, Oracle};
use dlm_sdk::likelihood::{elbo, mean_and_std_error};
use dlm_sdk::sampler::sample_rng;
use dlm_sdk::{DenoiserModel, DrawScheme, ElboSettings, LoglikelihoodRequest, Model, Task};

fn languages() -> Vec<(&'static str, Language)> {
    vec![
        ("2-gram", table1("2-gram", Variant::Ter, 0).unwrap()),
        ("hmm", Language::hmm(8, 8, 3.2, 0.0, 1).unwrap()),
    ]
}

/// Rows (context, continuation) cut from sequences the language generates.
fn rows(
    language: &Language,
    n: usize,
    context: usize,
    continuation: usize,
) -> Vec<(Vec<u32>, Vec<u32>)> {
    (0..n as u64)
        .map(|i| {
            let x = language
                .sample(context + continuation, &mut sample_rng(7, i))
                .unwrap();
            (x[..context].to_vec(), x[context..].to_vec())
        })
        .collect()
}

/// Every sequence of `length` tokens over `vocab`.
fn all_sequences(vocab: u32, length: usize) -> Vec<Vec<u32>> {
    (0..vocab.pow(length as u32))
        .map(|mut code| {
            (0..length)
                .map(|_| {
                    let t = code % vocab;
                    code /= vocab;
                    t
                })
                .collect()
        })
        .collect()
}

#[test]
fn the_exact_conditional_sums_to_one_and_matches_brute_force_marginals() {
    // A 3-gram (shortest sequence 2): a one-token context takes the masked chain rule.
    let three = table1("3-gram", Variant::Ter, 3).unwrap();
    for language in [three, Language::hmm(4, 3, 2.0, 0.0, 2).unwrap()] {
        let vocab = language.vocab() as u32;
        for context in [vec![], vec![1u32], vec![2, 0, 1]] {
            let total: f64 = all_sequences(vocab, 3)
                .iter()
                .map(|y| language.log_prob_continuation(&context, y).unwrap().exp())
                .sum();
            assert!(
                (total - 1.0).abs() < 1e-12,
                "Σ_y q(y | {context:?}) = {total}"
            );
            // The context's own probability: the sum over every full sequence that starts with it.
            let brute: f64 = all_sequences(vocab, 4)
                .iter()
                .filter(|x| x.starts_with(&context))
                .map(|x| language.log_prob(x).unwrap().exp())
                .sum();
            let prefix = language.log_prob_prefix(&context).unwrap().exp();
            assert!((prefix - brute).abs() < 1e-12, "{prefix} vs {brute}");
        }
    }
}

#[test]
fn the_task_answers_exactly_through_the_protocol_shapes() {
    let mut task = LanguageTask::new("ngram", &serde_json::json!({"order": 2})).unwrap();
    let language = task.language().clone();
    let rows = rows(&language, 3, 2, 4);
    let values = task.loglikelihood(&rows).unwrap();
    for ((c, k), v) in rows.iter().zip(values) {
        let whole: Vec<u32> = c.iter().chain(k).copied().collect();
        let expected = language.log_prob(&whole).unwrap() - language.log_prob(c).unwrap();
        assert!((v - expected).abs() < 1e-12);
    }
}

/// Mean within 3 standard errors of the exact value on every row of a 2-gram and an HMM, at
/// several `mc_num` and both coupled schemes; the wrong weight fails the same check.
#[test]
fn the_oracle_elbo_is_unbiased_for_the_exact_log_likelihood() {
    for (name, language) in languages() {
        let rows = rows(&language, 4, 3, 8);
        let mut oracle = Oracle::from_language(language.clone(), None);
        for (i, (c, k)) in rows.iter().enumerate() {
            let exact = language.log_prob_continuation(c, k).unwrap();
            // At least 16 groups of coupled draws each, so the standard error (from the spread
            // of the group means) is itself accurate enough for a 3-SE check.
            for (mc_num, scheme, batch) in [
                (128, DrawScheme::Stratified, 8),
                (256, DrawScheme::Antithetic, 16),
                (512, DrawScheme::Stratified, 16),
            ] {
                let settings = ElboSettings::new(mc_num, scheme, batch, 5);
                let e = elbo(&mut oracle, c, k, &settings, i as u64, None).unwrap();
                let z = (e.mean - exact) / e.std_error;
                assert!(z.abs() < 3.0, "{name} row {i} mc_num {mc_num} {scheme:?}: {} ± {} vs exact {exact} (z {z:.2})", e.mean, e.std_error);
                if mc_num == 512 {
                    // L/(l+1) in place of L/l: biased by many standard errors.
                    let wrong: Vec<f64> = e
                        .draws
                        .iter()
                        .map(|d| d.value * d.masked.len() as f64 / (d.masked.len() + 1) as f64)
                        .collect();
                    let (m, se) = mean_and_std_error(&wrong, &[16; 32]);
                    assert!(
                        ((m - exact) / se).abs() > 5.0,
                        "{name} row {i}: the wrong weight passes ({m} ± {se} vs {exact})"
                    );
                }
            }
        }
    }
}

/// The spread of independent estimates over seeds shrinks like `1/√mc_num`: the fitted slope
/// of log sd against log mc_num is near −1/2, and the mean over seeds is within 3 SE.
#[test]
fn the_spread_shrinks_like_one_over_root_mc_num() {
    for (name, language) in languages() {
        let (c, k) = rows(&language, 1, 3, 8).remove(0);
        let exact = language.log_prob_continuation(&c, &k).unwrap();
        let mut model = DenoiserModel::new(Oracle::from_language(language.clone(), None));
        let mc = [4usize, 16, 64];
        let mut log_sd = Vec::new();
        for &mc_num in &mc {
            let estimates: Vec<f64> = (0..40)
                .map(|seed| {
                    let (mut request, _) =
                        LoglikelihoodRequest::pack(&[(c.clone(), k.clone())], None);
                    request.elbo =
                        Some(ElboSettings::new(mc_num, DrawScheme::Independent, 16, seed));
                    model
                        .loglikelihood(&request, &[(c.clone(), k.clone())])
                        .unwrap()
                        .rows[0]
                        .log_likelihood
                        .unwrap()
                })
                .collect();
            let (mean, se) = mean_and_std_error(&estimates, &[1; 40]);
            assert!(
                ((mean - exact) / se).abs() < 3.0,
                "{name} mc_num {mc_num}: {mean} ± {se} vs {exact}"
            );
            log_sd.push((se * 40f64.sqrt()).ln());
        }
        let slope = (log_sd[2] - log_sd[0]) / ((mc[2] as f64).ln() - (mc[0] as f64).ln());
        assert!(
            (-0.7..-0.3).contains(&slope),
            "{name}: spread slope {slope}"
        );
    }
}

/// The expectation itself, summed over every mask with its probability (count uniform on
/// `1..=L`, then a uniform subset): exactly the log-likelihood, row by row.
#[test]
fn the_oracle_elbo_expectation_over_all_masks_is_exact() {
    use dlm_sdk::likelihood::elbo_terms;
    for (name, language) in languages() {
        let mut oracle = Oracle::from_language(language.clone(), None);
        for (c, k) in rows(&language, 2, 3, 6) {
            let len = k.len();
            let choose =
                |n: usize, r: usize| (0..r).fold(1.0, |a, i| a * (n - i) as f64 / (i + 1) as f64);
            let masks: Vec<Vec<usize>> = (1u32..1 << len)
                .map(|bits| (0..len).filter(|&i| bits >> i & 1 == 1).collect())
                .collect();
            let terms = elbo_terms(&mut oracle, &c, &k, &masks, 64, None).unwrap();
            let expectation: f64 = terms
                .iter()
                .map(|d| d.value / (len as f64 * choose(len, d.masked.len())))
                .sum();
            let exact = language.log_prob_continuation(&c, &k).unwrap();
            assert!(
                (expectation - exact).abs() < 1e-9,
                "{name}: E[ELBO] {expectation} vs {exact}"
            );
        }
    }
}
