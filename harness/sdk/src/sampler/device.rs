//! The device-resident sampler path (feature `burn`): every sampler of the SDK over logits that
//! stay where the model computed them, as a Burn tensor on its device.
//!
//! A real text vocabulary makes the host path impossible: 16 × 512 × 50,257 distributions are
//! 1.6 GB per step in f32 and twice that as the host path's f64. Here a model hands the sampler
//! its logits ([`TensorDenoiser::logits`], [`TensorAutoregressive::next_logits`]); the sampler
//! selects on the device the rows it must draw this step, applies temperature, top-k and top-p,
//! draws by inverse CDF and computes the confidences (`p(x0)`, entropy, largest probability,
//! margin) there, and only token ids and per-position scores come back to the host. The commit
//! rules (quotas, `threshold`, `factor`, `eb`) then run on the host over those per-position
//! scores, exactly as on the host path: they read `batch × length` numbers, not distributions.
//!
//! Randomness is the host path's, draw for draw: the sample's own stream
//! ([`super::sample_rng`]) supplies one uniform per drawn position, in the same order, and the
//! device draws the category whose cumulative weight first exceeds it. So a sample depends
//! neither on its batch nor on the device, and the two paths give the same tokens except where
//! f32 rounding on the device (softmax, running sums over the vocabulary) moves a category
//! boundary across the uniform; the tests measure that share and check that every disagreement
//! is such a boundary case.
//!
//! Ties are broken as on the host path (top-k and top-p keep the lowest indices among equal
//! weights; argmax takes the first). `temperature` divides the logits where the host raises
//! probabilities to `1/T`: the same distribution, rounded differently.

use super::{generate_ar_with, generate_with, DenoiseNet, Drawn, NextNet, Params, RowError, Want};
use crate::{Denoiser, GenerateReply, GenerateRequest, Model, PluginError, Result};
use burn::tensor::activation::{log_softmax, softmax};
use burn::tensor::{Int, Tensor, TensorData};

/// A denoising network whose output stays on its device: the device-path counterpart of
/// [`Denoiser`]. Wrap it in [`TensorDenoiserModel`] to get every sampler of
/// [`super::SAMPLERS`].
pub trait TensorDenoiser: Send {
    /// Number of real tokens; the mask token id is `vocab_size()`.
    fn vocab_size(&self) -> usize;
    /// Whether the network takes the diffusion time as input (as [`Denoiser::time_conditioned`]).
    fn time_conditioned(&self) -> bool {
        false
    }
    /// Device label recorded with every timing, e.g. `cpu`, `wgpu` or `cuda:0`.
    fn device(&self) -> String {
        "cpu".to_string()
    }
    /// One forward pass over `tokens` (`batch × length` ids, mask = `vocab_size()`): logits
    /// over the real tokens of every position, shape `[batch, length, vocab_size()]`, on the
    /// model's device. They need not be normalised (the sampler applies softmax); impossible
    /// tokens get a very negative or `-inf` logit. Rows of unmasked positions are never read.
    fn logits(&mut self, tokens: &[u32], batch: usize, length: usize, t: f64) -> Result<Tensor<3>>;
    /// Block until queued device work is done, so timings are honest.
    fn synchronize(&mut self) {}
}

/// An autoregressive network whose output stays on its device: the device-path counterpart of
/// [`super::Autoregressive`] (same call protocol; `next_logits` returns logits instead of
/// writing probabilities).
pub trait TensorAutoregressive: Send {
    /// Number of real tokens.
    fn vocab_size(&self) -> usize;
    /// Device label recorded with every timing.
    fn device(&self) -> String {
        "cpu".to_string()
    }
    /// Start a batch of `batch` sequences of `length` tokens (as [`super::Autoregressive::begin`]).
    fn begin(&mut self, batch: usize, length: usize) -> Result<()>;
    /// Append `appended` (one token per row; `None` on the first call) and return each row's
    /// next-token logits over the real tokens, shape `[batch, vocab_size()]`.
    fn next_logits(&mut self, appended: Option<&[u32]>) -> Result<Tensor<2>>;
    /// Block until queued device work is done, so timings are honest.
    fn synchronize(&mut self) {}
}

/// Turns a [`TensorDenoiser`] into a [`Model`] sampling on the device.
pub struct TensorDenoiserModel<D: TensorDenoiser> {
    /// The wrapped network.
    pub denoiser: D,
}

impl<D: TensorDenoiser> Model for TensorDenoiserModel<D> {
    fn generate(&mut self, request: &GenerateRequest) -> Result<(Vec<Vec<u32>>, GenerateReply)> {
        generate(&mut self.denoiser, request)
    }
}

/// Turns a [`TensorAutoregressive`] model into a [`Model`] with the `ar` sampler on the device.
pub struct TensorAutoregressiveModel<A: TensorAutoregressive> {
    /// The wrapped network.
    pub model: A,
}

impl<A: TensorAutoregressive> Model for TensorAutoregressiveModel<A> {
    fn generate(&mut self, request: &GenerateRequest) -> Result<(Vec<Vec<u32>>, GenerateReply)> {
        generate_ar(&mut self.model, request)
    }
}

/// Generate a batch with the sampler the request names, drawing on the model's device.
pub fn generate<D: TensorDenoiser + ?Sized>(
    denoiser: &mut D,
    request: &GenerateRequest,
) -> Result<(Vec<Vec<u32>>, GenerateReply)> {
    generate_with(
        &mut DeviceNet {
            denoiser,
            logits: None,
        },
        request,
    )
}

/// Ancestral sampling (`ar`) of a [`TensorAutoregressive`] model, drawing on its device.
pub fn generate_ar<A: TensorAutoregressive + ?Sized>(
    model: &mut A,
    request: &GenerateRequest,
) -> Result<(Vec<Vec<u32>>, GenerateReply)> {
    generate_ar_with(
        &mut DeviceNext {
            model,
            logits: None,
            batch: 0,
        },
        request,
    )
}

/// A [`TensorDenoiser`] seen through the host path: softmax on the device, then the whole
/// distribution copied to the host as f64. The reference the device path is tested against,
/// and usable wherever a [`Denoiser`] is expected.
pub struct OnHost<D>(pub D);

impl<D: TensorDenoiser> Denoiser for OnHost<D> {
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
        let probs = softmax(self.0.logits(tokens, batch, length, t)?, 2);
        copy_to_host(probs, out)
    }
    fn synchronize(&mut self) {
        self.0.synchronize()
    }
}

impl<A: TensorAutoregressive> super::Autoregressive for OnHost<A> {
    fn vocab_size(&self) -> usize {
        self.0.vocab_size()
    }
    fn device(&self) -> String {
        self.0.device()
    }
    fn begin(&mut self, batch: usize, length: usize) -> Result<()> {
        self.0.begin(batch, length)
    }
    fn next(&mut self, appended: Option<&[u32]>, out: &mut [f64]) -> Result<()> {
        let probs = softmax(self.0.next_logits(appended)?, 1);
        copy_to_host(probs, out)
    }
    fn synchronize(&mut self) {
        self.0.synchronize()
    }
}

fn copy_to_host<const N: usize>(t: Tensor<N>, out: &mut [f64]) -> Result<()> {
    let values = host_f32(t);
    if values.len() != out.len() {
        return Err(PluginError(format!(
            "the model returned {} values, expected {}",
            values.len(),
            out.len()
        )));
    }
    for (o, v) in out.iter_mut().zip(values) {
        *o = v as f64;
    }
    Ok(())
}

struct DeviceNet<'a, D: TensorDenoiser + ?Sized> {
    denoiser: &'a mut D,
    /// The last forward's logits, `[batch · length, vocab]`.
    logits: Option<Tensor<2>>,
}

impl<D: TensorDenoiser + ?Sized> DenoiseNet for DeviceNet<'_, D> {
    fn vocab_size(&self) -> usize {
        self.denoiser.vocab_size()
    }
    fn time_conditioned(&self) -> bool {
        self.denoiser.time_conditioned()
    }
    fn device(&self) -> String {
        self.denoiser.device()
    }
    fn forward(&mut self, tokens: &[u32], batch: usize, length: usize, t: f64) -> Result<()> {
        self.logits = None; // free the previous step's logits before the next forward
        let logits = self.denoiser.logits(tokens, batch, length, t)?;
        let vocab = self.denoiser.vocab_size();
        let dims = logits.dims();
        if dims != [batch, length, vocab] {
            return Err(PluginError(format!(
                "the model returned logits of shape {dims:?}, expected [{batch}, {length}, {vocab}]"
            )));
        }
        self.logits = Some(logits.reshape([batch * length, vocab]));
        Ok(())
    }
    fn draw(
        &mut self,
        rows: &[usize],
        uniforms: &[f64],
        params: &Params,
        want: Want,
    ) -> std::result::Result<Drawn, RowError> {
        let logits = self.logits.as_ref().expect("draw follows a forward");
        device_draw(logits, rows, uniforms, params, want)
    }
    fn synchronize(&mut self) {
        self.denoiser.synchronize()
    }
}

struct DeviceNext<'a, A: TensorAutoregressive + ?Sized> {
    model: &'a mut A,
    logits: Option<Tensor<2>>,
    batch: usize,
}

impl<A: TensorAutoregressive + ?Sized> NextNet for DeviceNext<'_, A> {
    fn vocab_size(&self) -> usize {
        self.model.vocab_size()
    }
    fn device(&self) -> String {
        self.model.device()
    }
    fn begin(&mut self, batch: usize, length: usize) -> Result<()> {
        self.batch = batch;
        self.model.begin(batch, length)
    }
    fn next(&mut self, appended: Option<&[u32]>) -> Result<()> {
        self.logits = None;
        let logits = self.model.next_logits(appended)?;
        let vocab = self.model.vocab_size();
        let dims = logits.dims();
        if dims != [self.batch, vocab] {
            return Err(PluginError(format!(
                "the model returned next-token logits of shape {dims:?}, expected [{}, {vocab}]",
                self.batch
            )));
        }
        self.logits = Some(logits);
        Ok(())
    }
    fn draw(
        &mut self,
        rows: &[usize],
        uniforms: &[f64],
        params: &Params,
    ) -> std::result::Result<Drawn, RowError> {
        let logits = self.logits.as_ref().expect("draw follows next");
        device_draw(logits, rows, uniforms, params, Want::default())
    }
    fn synchronize(&mut self) {
        self.model.synchronize()
    }
}

fn host_f32<const N: usize>(t: Tensor<N>) -> Vec<f32> {
    t.into_data_as::<f32>()
        .try_into_vec::<f32>()
        .expect("a float tensor converts to f32")
}

fn host_i64<const N: usize>(t: Tensor<N, Int>) -> Vec<i64> {
    t.into_data_as::<i64>()
        .try_into_vec::<i64>()
        .expect("an int tensor converts to i64")
}

/// Draw one token at each of `rows` of `logits` (`[rows, vocab]`) on their device; see the
/// module documentation. Two transfers come back: the token ids, and one float column per
/// score asked for plus the row's total shaped mass (checked on the host: a row whose logits
/// hold NaN or give no mass is an error, as on the host path).
pub(crate) fn device_draw(
    logits: &Tensor<2>,
    rows: &[usize],
    uniforms: &[f64],
    params: &Params,
    want: Want,
) -> std::result::Result<Drawn, RowError> {
    let n = rows.len();
    if n == 0 {
        return Ok(Drawn::default());
    }
    let device = logits.device();
    let vocab = logits.dims()[1];
    let index: Vec<i64> = rows.iter().map(|&r| r as i64).collect();
    let index = Tensor::<1, Int>::from_data(TensorData::new(index, [n]), &device);
    let z = logits.clone().select(0, index); // [n, vocab]

    // Shape, then draw: `count` = how many running sums lie at or below u · total, which is
    // the first index whose running sum exceeds it (the host's rule), capped at the last entry
    // with mass (u · total can round up to the total).
    let (tokens, check) = if params.temperature == 0.0 {
        let best = z.clone().argmax(1); // first index among ties, as the host's argmax
        (best, z.clone().max_dim(1))
    } else {
        let mut w = softmax(z.clone().div_scalar(params.temperature), 1);
        if params.top_k.is_some() || params.top_p.is_some() {
            let sorted = w.clone().sort_descending(1);
            let mut keep = Tensor::<2, Int>::full([n, 1], vocab as i64, &device);
            if let Some(k) = params.top_k {
                keep = keep.clamp_max(k.min(vocab) as i64);
            }
            if let Some(tp) = params.top_p {
                // Entry m (in sorted order) is kept while the mass before it is below top_p.
                let before = sorted.clone().cumsum(1) - sorted.clone();
                let within = before.lower_elem(tp).int().sum_dim(1);
                keep = keep.min_pair(within.clamp_min(1));
            }
            // Keep every entry above the last kept value, and of the entries equal to it the
            // lowest indices (the host sorts by value, then index), without a stable sort.
            let last_kept = sorted
                .gather(1, keep.clone().sub_scalar(1))
                .expand([n, vocab]);
            let above = w.clone().greater(last_kept.clone()).int();
            let tied = w.clone().equal(last_kept).int();
            let tie_rank = tied.clone().cumsum(1); // 1-based among the row's ties
            let needed = (keep - above.clone().sum_dim(1)).expand([n, vocab]);
            let kept = above + tied * tie_rank.lower_equal(needed).int();
            w = w.mask_fill(kept.equal_elem(0), 0.0);
        }
        let running = w.clone().cumsum(1);
        let total = running.clone().narrow(1, vocab - 1, 1); // [n, 1]
        let u: Vec<f32> = uniforms.iter().map(|&u| u as f32).collect();
        let u = Tensor::<1>::from_data(TensorData::new(u, [n]), &device).reshape([n, 1]);
        let target = (u * total.clone()).expand([n, vocab]);
        let count = running.lower_equal(target).int().sum_dim(1);
        let positions = Tensor::<1, Int>::arange(1..vocab as i64 + 1, &device)
            .reshape([1, vocab])
            .expand([n, vocab]);
        let last_positive = w
            .greater_elem(0.0)
            .int()
            .mul(positions)
            .max_dim(1)
            .sub_scalar(1);
        // (clamped at 0 so a row without mass still indexes; the host check below refuses it)
        (count.min_pair(last_positive).clamp_min(0), total)
    };

    let mut columns = vec![check];
    let needs_probs = want.confidence || want.entropy || want.max_prob || want.margin;
    if needs_probs {
        let p = softmax(z.clone(), 1);
        if want.confidence {
            columns.push(p.clone().gather(1, tokens.clone()));
        }
        if want.entropy {
            let plogp = (p.clone() * log_softmax(z, 1)).mask_fill(p.clone().equal_elem(0.0), 0.0);
            columns.push(plogp.sum_dim(1).neg());
        }
        if want.max_prob {
            columns.push(p.clone().max_dim(1));
        }
        if want.margin {
            if vocab >= 2 {
                let top = p.topk(2, 1);
                columns.push(top.clone().narrow(1, 0, 1) - top.narrow(1, 1, 1));
            } else {
                columns.push(p.max_dim(1));
            }
        }
    }
    let width = columns.len();
    let scores = host_f32(Tensor::cat(columns, 1));
    let tokens = host_i64(tokens);

    let mut drawn = Drawn::default();
    for i in 0..n {
        let row = &scores[i * width..(i + 1) * width];
        let mass = row[0];
        let valid = if params.temperature == 0.0 {
            mass.is_finite()
        } else {
            mass.is_finite() && mass > 0.0
        };
        if !valid {
            return Err(RowError {
                at: i,
                message: format!(
                    "invalid distribution ({} {mass}); a model must return finite logits with some finite entry",
                    if params.temperature == 0.0 { "largest logit" } else { "shaped mass" }
                ),
            });
        }
        drawn.tokens.push(tokens[i] as u32);
        let mut col = 1;
        let mut take = |wanted: bool, into: &mut Vec<f64>| {
            if wanted {
                into.push(row[col] as f64);
                col += 1;
            }
        };
        take(want.confidence, &mut drawn.confidence);
        take(want.entropy, &mut drawn.entropy);
        take(want.max_prob, &mut drawn.max_prob);
        take(want.margin, &mut drawn.margin);
    }
    Ok(drawn)
}

#[cfg(test)]
mod tests;
