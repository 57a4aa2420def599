//! The tiny LLaDA's Monte-Carlo ELBO equals LLaDA's own `get_log_likelihood` given the same
//! masks: `tools/hf-fixtures/make_loglikelihood.py` ran the reference on the committed weights
//! and recorded every mini-batch's masks and loss (`llada-tiny/loglikelihood.json`); the SDK's
//! `elbo_terms` gets those masks and must give the same losses and the same estimate.
//!
//! The reference's mini-batch loss is `Σ_draws Σ_{i∈M} CE_i / (l/L) / batch_size`, i.e. minus
//! the mean of the SDK's draw terms `(L/l) · Σ_{i∈M} log p(y_i | …)` over the mini-batch, and
//! its estimate is minus the mean loss. Both sides compute the logits in f32 (they differ by
//! ≤ 2e-6, tests/reference.rs), so the losses (sums of up to L²  log-probabilities of size ~6)
//! agree to a relative 1e-5.

mod common;
use common::*;
use dlm_sdk::likelihood::elbo_terms;
use dlm_sdk::sampler::device::OnHost;

/// Largest relative difference accepted between our loss and the reference's.
const RELATIVE_TOLERANCE: f64 = 1e-5;

#[derive(serde::Deserialize)]
struct Case {
    answer: String,
    prompt_ids: Vec<u32>,
    answer_ids: Vec<u32>,
    mc_num: usize,
    batch_size: usize,
    batches: Vec<Batch>,
    log_likelihood: f64,
}

#[derive(serde::Deserialize)]
struct Batch {
    masks: Vec<Vec<usize>>,
    loss: f64,
}

fn close(ours: f64, theirs: f64) -> bool {
    (ours - theirs).abs() <= RELATIVE_TOLERANCE * theirs.abs().max(1.0)
}

#[test]
fn llada_elbo_equals_get_log_likelihood_given_the_same_masks() {
    let path = fixture("llada-tiny").join("loglikelihood.json");
    let file: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap();
    let cases: Vec<Case> = serde_json::from_value(file["cases"].clone()).unwrap();
    assert!(cases.len() >= 3, "{}: too few cases", path.display());
    // The reference normalises over the network's whole output row, as `full_row: true` does.
    let ckpt = load("llada-tiny");
    let mut host = OnHost::new(ckpt.denoiser.with_full_row(true));
    let mut single_token_seen = false;
    for case in &cases {
        let len = case.answer_ids.len();
        single_token_seen |= len == 1;
        assert_eq!(case.batches.len(), case.mc_num / case.batch_size);
        let mut losses = Vec::new();
        for (b, batch) in case.batches.iter().enumerate() {
            assert_eq!(batch.masks.len(), case.batch_size);
            let draws = elbo_terms(
                &mut host,
                &case.prompt_ids,
                &case.answer_ids,
                &batch.masks,
                case.batch_size,
                None,
            )
            .unwrap();
            assert_eq!(draws.len(), case.batch_size);
            let loss = -draws.iter().map(|d| d.value).sum::<f64>() / case.batch_size as f64;
            eprintln!(
                "{:?} batch {b}: loss {loss:.6} (reference {:.6}, Δ {:.2e})",
                case.answer,
                batch.loss,
                loss - batch.loss
            );
            assert!(
                close(loss, batch.loss),
                "{:?} batch {b}: loss {loss} against the reference's {}",
                case.answer,
                batch.loss
            );
            assert!(batch.loss > 0.0, "a cross-entropy sum is positive");
            losses.push(loss);
        }
        let estimate = -losses.iter().sum::<f64>() / losses.len() as f64;
        assert!(
            close(estimate, case.log_likelihood),
            "{:?}: estimate {estimate} against get_log_likelihood's {}",
            case.answer,
            case.log_likelihood
        );
    }
    assert!(
        single_token_seen,
        "a single-token answer is among the cases"
    );
}
