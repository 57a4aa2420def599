//! The `mdm` model's network as a denoiser ([`MdmDenoiser`]): SUBS distributions on the host
//! path, logits on the device path, left-padded batches for text models. Its key/value cache is
//! [`crate::kv_window::CachedMdm`].

use crate::model::{subs_log_probs, to_host, tokens_tensor, Transformer};
use crate::text;
use burn::tensor::{Device, Int, Tensor};
use dlm_sdk::sampler::device::TensorDenoiser;
use dlm_sdk::{Denoiser, PluginError, Result};

/// The MDM: SUBS distributions over the real tokens, as a [`TensorDenoiser`] (the device path,
/// used for sampling) and a [`Denoiser`] (the host path).
pub struct MdmDenoiser {
    pub net: Transformer,
    pub device: Device,
    pub label: String,
}

impl MdmDenoiser {
    pub(crate) fn input(
        &self,
        tokens: &[u32],
        batch: usize,
        length: usize,
    ) -> Result<Tensor<2, Int>> {
        let vocab = self.net.vocab;
        if tokens.len() != batch * length {
            return Err(PluginError::internal(format!(
                "{} token ids for a {batch} × {length} batch",
                tokens.len()
            )));
        }
        if length > self.net.max_length() {
            return Err(PluginError::bad_config(format!(
                "length {length} exceeds the model's max_length {}",
                self.net.max_length()
            )));
        }
        if let Some(&bad) = tokens.iter().find(|&&t| t as usize > vocab) {
            return Err(PluginError::internal(format!(
                "token id {bad} is outside 0..={vocab}"
            )));
        }
        Ok(tokens_tensor(tokens, batch, length, &self.device))
    }

    /// SUBS log-probabilities over the real tokens, `[batch, length, vocab]`, of one forward
    /// pass, on the model's device.
    pub fn log_probs(&self, tokens: &[u32], batch: usize, length: usize) -> Result<Tensor<3>> {
        let xt = self.input(tokens, batch, length)?;
        let logp = subs_log_probs(self.net.forward(xt.clone()), xt, self.net.vocab);
        Ok(logp.narrow(2, 0, self.net.vocab))
    }

    /// Probabilities `batch × length × vocab` (row-major) of one forward pass, on the host.
    pub fn probabilities(&self, tokens: &[u32], batch: usize, length: usize) -> Result<Vec<f32>> {
        Ok(to_host(self.log_probs(tokens, batch, length)?.exp()))
    }
}

/// The device path, which `mdm` samples with: the log-probabilities stay on the device and
/// only the drawn tokens and their scores come back.
impl TensorDenoiser for MdmDenoiser {
    fn vocab_size(&self) -> usize {
        self.net.vocab
    }

    fn device(&self) -> String {
        self.label.clone()
    }

    /// The network's logits without the mask token's: their softmax is SUBS's distribution at
    /// every masked position (the mask suppressed), and the sampler reads no other rows, so
    /// SUBS's carry-over of unmasked tokens (a `[batch, length, vocab]` one-hot, 1.6 GB at a
    /// vocabulary of 50,257) is skipped.
    fn logits(
        &mut self,
        tokens: &[u32],
        batch: usize,
        length: usize,
        _t: f64,
    ) -> Result<Tensor<3>> {
        let xt = self.input(tokens, batch, length)?;
        Ok(self.net.forward_real(xt))
    }

    fn synchronize(&mut self) {
        let _ = self.device.sync();
    }
}

/// A text model's left-padded batches: the padding hidden
/// ([`crate::model::Transformer::forward_real_padded`]).
impl text::PaddedLogits for MdmDenoiser {
    fn padded_logits(
        &mut self,
        tokens: &[u32],
        batch: usize,
        length: usize,
        left_padding: &[usize],
    ) -> Result<Tensor<3>> {
        let xt = self.input(tokens, batch, length)?;
        Ok(self.net.forward_real_padded(xt, left_padding))
    }
}

/// The host path (f64 copies of every distribution): the reference the device path is tested
/// and benchmarked against.
impl Denoiser for MdmDenoiser {
    fn vocab_size(&self) -> usize {
        self.net.vocab
    }

    fn device(&self) -> String {
        self.label.clone()
    }

    fn denoise(
        &mut self,
        tokens: &[u32],
        batch: usize,
        length: usize,
        _t: f64,
        out: &mut [f64],
    ) -> Result<()> {
        let probs = self.probabilities(tokens, batch, length)?;
        if out.len() != probs.len() {
            return Err(PluginError::internal(format!(
                "output buffer holds {} values, expected {}",
                out.len(),
                probs.len()
            )));
        }
        for (o, p) in out.iter_mut().zip(probs) {
            *o = p as f64;
        }
        Ok(())
    }

    fn synchronize(&mut self) {
        let _ = self.device.sync();
    }
}
