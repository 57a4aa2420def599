//! Likelihood requests: the `ar` model's exact answer is a distribution over continuations
//! (it sums to 1), and the `mdm` model's ELBO is a lower bound of one: every unmasking order
//! of the continuation defines a distribution `p_σ(y)`, the ELBO's expectation over the masks
//! is `E_σ log p_σ(y) ≤ log E_σ p_σ(y)`, and the mixture sums to 1, so `Σ_y exp E[ELBO](y) ≤ 1`.
//! The expectation is summed over every mask exactly (continuations of 3 tokens); the plugin
//! answers through `Model::loglikelihood` with its draws and their mean.

use crate::model::{ModelKind, Transformer};
use crate::plugin::MdmDenoiser;
use crate::tests::{open, sharpen, test_device, tiny, VOCAB};
use dlm_sdk::likelihood::elbo_terms;
use dlm_sdk::sampler::device::OnHost;
use dlm_sdk::{DrawScheme, ElboSettings, LoglikelihoodRequest};

const LENGTH: usize = 6;

fn continuations() -> Vec<Vec<u32>> {
    let v = VOCAB as u32;
    (0..v.pow(3))
        .map(|c| vec![c % v, c / v % v, c / (v * v)])
        .collect()
}

#[test]
fn the_ar_answer_is_a_distribution_over_continuations() {
    let init = serde_json::json!({"init": {"hidden": 16, "layers": 1, "heads": 2}, "seed": 3});
    let mut ar = open("ar", init, LENGTH).unwrap();
    let rows: Vec<(Vec<u32>, Vec<u32>)> = continuations()
        .into_iter()
        .map(|y| (vec![1, 4], y))
        .collect();
    let (request, _) = LoglikelihoodRequest::pack(&rows, None);
    let reply = ar
        .loglikelihood(&request.with_length(LENGTH), &rows)
        .unwrap();
    assert_eq!(reply.method, "exact");
    let total: f64 = reply
        .rows
        .iter()
        .map(|r| r.log_likelihood.unwrap().exp())
        .sum();
    assert!((total - 1.0).abs() < 1e-5, "Σ_y p(y | c) = {total}");
}

#[test]
fn the_mdm_elbo_bounds_a_distribution_and_the_plugin_answers_as_the_host_estimator() {
    let device = test_device();
    let net = sharpen(Transformer::new(
        ModelKind::Mdm,
        &tiny(LENGTH),
        VOCAB,
        21,
        &device,
    ));
    let mut host = OnHost::new(MdmDenoiser {
        net,
        device,
        label: "test".into(),
    });
    let masks: Vec<Vec<usize>> = (1u32..8)
        .map(|bits| (0..3).filter(|&i| bits >> i & 1 == 1).collect())
        .collect();
    // Probability of each mask: count uniform on 1..=3, then a uniform subset of that size.
    let weight = |m: &Vec<usize>| 1.0 / (3.0 * [1.0, 3.0, 3.0, 1.0][m.len()]);
    let mut total = 0.0;
    for y in continuations() {
        let terms = elbo_terms(&mut host, &[2], &y, &masks, 7, Some(LENGTH)).unwrap();
        let expectation: f64 = terms
            .iter()
            .zip(&masks)
            .map(|(d, m)| weight(m) * d.value)
            .sum();
        total += expectation.exp();
    }
    assert!(total <= 1.0 && total > 0.05, "Σ_y exp E[ELBO] = {total}");

    let init = serde_json::json!({"init": {"hidden": 16, "layers": 1, "heads": 2}, "seed": 3});
    let mut mdm = open("mdm", init, LENGTH).unwrap();
    let rows = vec![(vec![2u32], vec![0u32, 3, 1])];
    let settings = ElboSettings::new(24, DrawScheme::Stratified, 8, 4).with_per_draw();
    let (mut request, _) = LoglikelihoodRequest::pack(&rows, Some(settings));
    request = request.with_length(LENGTH);
    let reply = mdm.loglikelihood(&request, &rows).unwrap();
    assert_eq!(reply.method, "elbo");
    let draws = reply.rows[0].draws.as_ref().unwrap();
    assert_eq!(draws.len(), 24);
    let mean = draws.iter().sum::<f64>() / 24.0;
    let estimate = reply.rows[0].log_likelihood.unwrap();
    assert!((mean - estimate).abs() < 1e-9 && estimate < 0.0);
    assert!(reply.rows[0].std_error.unwrap() > 0.0);
}
