//! Likelihood requests to tensor models (plugin API 1.8): a [`TensorDenoiser`]'s logits copied
//! to the host and normalised there in f64, then the host ELBO estimator
//! ([`crate::likelihood::answer_with_elbo`]); a [`TensorAutoregressive`] model's exact chain rule
//! ([`crate::sampler::answer_autoregressive`]).

use super::{TensorAutoregressive, TensorDenoiser};
use crate::sampler::Autoregressive;
use crate::{Denoiser, LoglikelihoodReply, LoglikelihoodRequest, PluginError, Result};
use burn::tensor::TensorData;

/// A borrowed tensor denoiser seen as a host [`Denoiser`] (softmax in f64 on the host).
struct HostView<'a, D: TensorDenoiser + ?Sized>(&'a mut D);

impl<D: TensorDenoiser + ?Sized> Denoiser for HostView<'_, D> {
    fn vocab_size(&self) -> usize {
        self.0.vocab_size()
    }
    fn time_conditioned(&self) -> bool {
        self.0.time_conditioned()
    }
    fn device(&self) -> String {
        self.0.device()
    }
    fn denoise(
        &mut self,
        tokens: &[u32],
        batch: usize,
        length: usize,
        t: f64,
        out: &mut [f64],
    ) -> Result<()> {
        let logits = self.0.logits(tokens, batch, length, t)?;
        host_softmax(logits.into_data_as::<f32>(), self.0.vocab_size(), out)
    }
    fn synchronize(&mut self) {
        self.0.synchronize()
    }
}

/// Softmax of each row of `vocab` logits, in f64, into `out` (unnormalised: `exp(x − max)`).
fn host_softmax(data: TensorData, vocab: usize, out: &mut [f64]) -> Result<()> {
    let values = data
        .as_slice::<f32>()
        .map_err(|e| PluginError::internal(format!("logits as f32: {e:?}")))?;
    if values.len() != out.len() {
        return Err(PluginError::bad_data(format!(
            "the model returned {} logits, expected {}",
            values.len(),
            out.len()
        )));
    }
    let v = vocab.max(1);
    for (row, o) in values.chunks_exact(v).zip(out.chunks_exact_mut(v)) {
        let max = row.iter().fold(f64::NEG_INFINITY, |m, &x| m.max(x as f64));
        for (p, &x) in o.iter_mut().zip(row) {
            *p = (x as f64 - max).exp();
        }
    }
    Ok(())
}

/// Answer a `model.loglikelihood` request with a tensor denoiser's Monte-Carlo ELBO.
pub fn answer_tensor_with_elbo<D: TensorDenoiser + ?Sized>(
    denoiser: &mut D,
    request: &LoglikelihoodRequest,
    rows: &[(Vec<u32>, Vec<u32>)],
) -> Result<LoglikelihoodReply> {
    crate::likelihood::answer_with_elbo(&mut HostView(denoiser), request, rows)
}

/// A borrowed tensor autoregressive model seen as a host [`Autoregressive`].
struct HostNext<'a, A: TensorAutoregressive + ?Sized>(&'a mut A);

impl<A: TensorAutoregressive + ?Sized> Autoregressive for HostNext<'_, A> {
    fn vocab_size(&self) -> usize {
        self.0.vocab_size()
    }
    fn begin(&mut self, batch: usize, length: usize) -> Result<()> {
        self.0.begin(batch, length)
    }
    fn next(&mut self, appended: Option<&[u32]>, out: &mut [f64]) -> Result<()> {
        let logits = self.0.next_logits(appended)?;
        host_softmax(logits.into_data_as::<f32>(), self.0.vocab_size(), out)
    }
    fn synchronize(&mut self) {
        self.0.synchronize()
    }
}

/// Answer a `model.loglikelihood` request exactly with a tensor autoregressive model.
pub fn answer_tensor_autoregressive<A: TensorAutoregressive + ?Sized>(
    model: &mut A,
    rows: &[(Vec<u32>, Vec<u32>)],
) -> Result<LoglikelihoodReply> {
    crate::sampler::answer_autoregressive(&mut HostNext(model), rows)
}
