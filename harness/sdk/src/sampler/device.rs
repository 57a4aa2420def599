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

use super::{
    generate_ar_with, generate_with, DenoiseNet, Drawn, NextNet, Registry, RowError, Shaping, Want,
};
use crate::kv_cache::{DenoiserKvCache, TensorKvCache};
use crate::{Denoiser, GenerateReply, GenerateRequest, Model, PluginError, Result};
use burn::tensor::{Device, Int, Tensor, TensorData};

mod host_rows;
mod likelihood;
pub use likelihood::{answer_tensor_autoregressive, answer_tensor_with_elbo};

/// A denoising network whose output stays on its device: the device-path counterpart of
/// [`Denoiser`]. Wrap it in [`TensorDenoiserModel`] to get every sampler of
/// [`super::BUILT_IN`] (or of any [`Registry`]: [`Registry::generate_on_device`]).
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
    /// tokens get a very negative or `-inf` logit. Rows of unmasked positions are read only by
    /// `threshold_edit` (its token-to-token edits), and mean something only for a model trained
    /// to predict there.
    fn logits(&mut self, tokens: &[u32], batch: usize, length: usize, t: f64) -> Result<Tensor<3>>;
    /// Block until queued device work is done, so timings are honest.
    fn synchronize(&mut self) {}
    /// The model's key/value cache, for samplers run with `cache: prefix` or `dual`
    /// ([`crate::kv_cache`]). The default, no cache, makes such a request an `unsupported`
    /// error.
    fn kv_cache(&mut self) -> Option<&mut dyn crate::kv_cache::TensorKvCache> {
        None
    }
    /// Treat the first `left_padding[b]` positions of row `b` as padding in the `logits` calls
    /// that follow, until the next call (an empty slice: no padding): hide them from every
    /// other position's attention and count positions from the first real token, so the other
    /// rows of the output are those of the row alone without its padding
    /// ([`Model::generate_left_padded`]). The padding rows' own logits are never read. The
    /// default supports no padding and refuses it as unsupported.
    fn set_left_padding(&mut self, left_padding: &[usize]) -> Result<()> {
        if left_padding.iter().any(|&p| p > 0) {
            return Err(PluginError::unsupported(
                "this model cannot hide left padding from its attention, which a batch of prompts of different lengths with a fixed generation length needs; use `batch_size: 1`",
            ));
        }
        Ok(())
    }
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
    fn loglikelihood(
        &mut self,
        request: &crate::LoglikelihoodRequest,
        rows: &[(Vec<u32>, Vec<u32>)],
    ) -> Result<crate::LoglikelihoodReply> {
        answer_tensor_with_elbo(&mut self.denoiser, request, rows)
    }
    /// The padding is part of each prompt, so no sampler masks, draws or counts it; the
    /// network hides it ([`TensorDenoiser::set_left_padding`]) for this call only.
    fn generate_left_padded(
        &mut self,
        request: &GenerateRequest,
        left_padding: &[usize],
    ) -> Result<(Vec<Vec<u32>>, GenerateReply)> {
        super::ar::padded_prompts(request, left_padding)?;
        self.denoiser.set_left_padding(left_padding)?;
        let registry = Registry::built_in();
        let generated = generate_in(
            &registry,
            &mut self.denoiser,
            request,
            Kernel::Auto,
            left_padding,
        );
        self.denoiser.set_left_padding(&[])?;
        generated
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
    fn generate_left_padded(
        &mut self,
        request: &GenerateRequest,
        left_padding: &[usize],
    ) -> Result<(Vec<Vec<u32>>, GenerateReply)> {
        super::ar::causal_left_padded(request, left_padding, |r| generate_ar(&mut self.model, r))
    }
    fn loglikelihood(
        &mut self,
        _request: &crate::LoglikelihoodRequest,
        rows: &[(Vec<u32>, Vec<u32>)],
    ) -> Result<crate::LoglikelihoodReply> {
        answer_tensor_autoregressive(&mut self.model, rows)
    }
}

/// Generate a batch with the built-in sampler the request names, drawing on the model's
/// device.
pub fn generate<D: TensorDenoiser + ?Sized>(
    denoiser: &mut D,
    request: &GenerateRequest,
) -> Result<(Vec<Vec<u32>>, GenerateReply)> {
    generate_by(denoiser, request, Kernel::Auto)
}

pub(crate) fn generate_by<D: TensorDenoiser + ?Sized>(
    denoiser: &mut D,
    request: &GenerateRequest,
    kernel: Kernel,
) -> Result<(Vec<Vec<u32>>, GenerateReply)> {
    generate_in(&Registry::built_in(), denoiser, request, kernel, &[])
}

/// `left_padding`: what the denoiser was told to hide ([`TensorDenoiser::set_left_padding`]).
fn generate_in<D: TensorDenoiser + ?Sized>(
    registry: &Registry,
    denoiser: &mut D,
    request: &GenerateRequest,
    kernel: Kernel,
    left_padding: &[usize],
) -> Result<(Vec<Vec<u32>>, GenerateReply)> {
    let mut net = DeviceNet {
        denoiser,
        logits: None,
        kernel,
        left_padding: left_padding.to_vec(),
    };
    generate_with(&mut net, request, registry)
}

impl Registry {
    /// Generate a batch over `denoiser` with the sampler the request names, drawing on the
    /// model's device (as [`generate`] does for the built-ins).
    pub fn generate_on_device<D: TensorDenoiser + ?Sized>(
        &self,
        denoiser: &mut D,
        request: &GenerateRequest,
    ) -> Result<(Vec<Vec<u32>>, GenerateReply)> {
        generate_in(self, denoiser, request, Kernel::Auto, &[])
    }
}

/// Ancestral sampling (`ar`) of a [`TensorAutoregressive`] model, drawing on its device.
pub fn generate_ar<A: TensorAutoregressive + ?Sized>(
    model: &mut A,
    request: &GenerateRequest,
) -> Result<(Vec<Vec<u32>>, GenerateReply)> {
    generate_ar_by(model, request, Kernel::Auto)
}

pub(crate) fn generate_ar_by<A: TensorAutoregressive + ?Sized>(
    model: &mut A,
    request: &GenerateRequest,
    kernel: Kernel,
) -> Result<(Vec<Vec<u32>>, GenerateReply)> {
    generate_ar_with(
        &mut DeviceNext {
            model,
            logits: None,
            batch: 0,
            kernel,
        },
        request,
    )
}

/// A [`TensorDenoiser`] seen through the host path: softmax on the device, then the whole
/// distribution copied to the host as f64. The reference the device path is tested against,
/// and usable wherever a [`Denoiser`] is expected. The softmax uses the arithmetic the device
/// draw uses there (on flex the fused row kernel's, elsewhere Burn's), so both paths see the
/// same confidences.
pub struct OnHost<D>(pub D, Kernel);

impl<D> OnHost<D> {
    /// `model` seen through the host path.
    pub fn new(model: D) -> Self {
        OnHost(model, Kernel::Auto)
    }

    /// The host path normalising as `kernel` does: the reference for each device kernel in
    /// the tests.
    #[cfg(test)]
    pub(crate) fn normalising_as(model: D, kernel: Kernel) -> Self {
        OnHost(model, kernel)
    }
}

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
        copy_to_host(self.0.logits(tokens, batch, length, t)?, self.1, out)
    }
    fn synchronize(&mut self) {
        self.0.synchronize()
    }
    /// The tensor model's cache, its logits copied to the host as `denoise`'s are.
    fn kv_cache(&mut self) -> Option<&mut dyn DenoiserKvCache> {
        if self.0.kv_cache().is_some() {
            Some(self)
        } else {
            None
        }
    }
}

impl<D: TensorDenoiser> DenoiserKvCache for OnHost<D> {
    fn denoise_and_fill(
        &mut self,
        tokens: &[u32],
        batch: usize,
        length: usize,
        t: f64,
        out: &mut [f64],
    ) -> Result<()> {
        let logits = device_cache(&mut self.0)?.logits_and_fill(tokens, batch, length, t)?;
        copy_to_host(logits, self.1, out)
    }
    fn denoise_window(
        &mut self,
        tokens: &[u32],
        batch: usize,
        length: usize,
        window: std::ops::Range<usize>,
        t: f64,
        out: &mut [f64],
    ) -> Result<()> {
        let logits = device_cache(&mut self.0)?.logits_window(tokens, batch, length, window, t)?;
        copy_to_host(logits, self.1, out)
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
        copy_to_host(self.0.next_logits(appended)?, self.1, out)
    }
    fn synchronize(&mut self) {
        self.0.synchronize()
    }
}

/// The distributions of `logits` (normalised along the last dimension as `kernel` would) copied
/// into `out` as f64.
fn copy_to_host<const N: usize>(logits: Tensor<N>, kernel: Kernel, out: &mut [f64]) -> Result<()> {
    let vocab = logits.dims()[N - 1].max(1);
    let values = if kernel == Kernel::Auto && logits.device() == Device::flex() {
        let data = logits.into_data_as::<f32>();
        host_rows::softmax(
            data.as_slice::<f32>().expect("f32 data reads as f32"),
            vocab,
        )
    } else {
        host_f32(probabilities(logits))
    };
    if values.len() != out.len() {
        return Err(PluginError::bad_data(format!(
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
    /// The last call's logits, `[batch · width, vocab]` (width: the length, or a window's).
    logits: Option<Tensor<2>>,
    kernel: Kernel,
    left_padding: Vec<usize>,
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
        self.keep(logits, batch, length)
    }
    fn has_kv_cache(&mut self) -> bool {
        self.denoiser.kv_cache().is_some()
    }
    fn left_padding(&self) -> &[usize] {
        &self.left_padding
    }
    fn fill(&mut self, tokens: &[u32], batch: usize, length: usize, t: f64) -> Result<()> {
        self.logits = None;
        let logits = device_cache(self.denoiser)?.logits_and_fill(tokens, batch, length, t)?;
        self.keep(logits, batch, length)
    }
    fn window(
        &mut self,
        tokens: &[u32],
        batch: usize,
        length: usize,
        window: std::ops::Range<usize>,
        t: f64,
    ) -> Result<()> {
        self.logits = None;
        let width = window.len();
        let logits =
            device_cache(self.denoiser)?.logits_window(tokens, batch, length, window, t)?;
        self.keep(logits, batch, width)
    }
    fn draw(
        &mut self,
        rows: &[usize],
        uniforms: &[f64],
        params: &Shaping,
        want: Want,
    ) -> std::result::Result<Drawn, RowError> {
        let logits = self.logits.as_ref().expect("draw follows a forward");
        device_draw(logits, rows, uniforms, params, want, self.kernel)
    }
    fn log_weights(&mut self, rows: &[usize]) -> Result<Vec<f64>> {
        // The logits themselves (a per-row offset from the log-probabilities), copied to the host.
        let logits = self.logits.as_ref().expect("log_weights follows a forward");
        if rows.is_empty() {
            return Ok(Vec::new());
        }
        let index: Vec<i64> = rows.iter().map(|&r| r as i64).collect();
        let index =
            Tensor::<1, Int>::from_data(TensorData::new(index, [rows.len()]), &logits.device());
        let picked = logits.clone().select(0, index);
        Ok(host_f32(picked).into_iter().map(f64::from).collect())
    }
    fn synchronize(&mut self) {
        self.denoiser.synchronize()
    }
}

impl<D: TensorDenoiser + ?Sized> DeviceNet<'_, D> {
    /// Keep `logits` (`[batch, width, vocab]`: every position, or a window's) for the draws.
    fn keep(&mut self, logits: Tensor<3>, batch: usize, width: usize) -> Result<()> {
        let vocab = self.denoiser.vocab_size();
        let dims = logits.dims();
        if dims != [batch, width, vocab] {
            return Err(PluginError::bad_data(format!(
                "the model returned logits of shape {dims:?}, expected [{batch}, {width}, {vocab}]"
            )));
        }
        self.logits = Some(logits.reshape([batch * width, vocab]));
        Ok(())
    }
}

/// `denoiser`'s cache, which the run checked for before its first cached call.
fn device_cache<D: TensorDenoiser + ?Sized>(denoiser: &mut D) -> Result<&mut dyn TensorKvCache> {
    denoiser
        .kv_cache()
        .ok_or_else(|| PluginError::internal("a cached step on a model without a cache"))
}

struct DeviceNext<'a, A: TensorAutoregressive + ?Sized> {
    model: &'a mut A,
    logits: Option<Tensor<2>>,
    batch: usize,
    kernel: Kernel,
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
            return Err(PluginError::bad_data(format!(
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
        params: &Shaping,
    ) -> std::result::Result<Drawn, RowError> {
        let logits = self.logits.as_ref().expect("draw follows next");
        device_draw(logits, rows, uniforms, params, Want::default(), self.kernel)
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

/// `(z − max, exp(z − max), Σ exp(z − max))` along the last dimension: a distribution as
/// unnormalised weights and their mass. `OnHost` normalises with the same operations, so both
/// paths see bit-identical probabilities.
fn unnormalised<const N: usize>(z: Tensor<N>) -> (Tensor<N>, Tensor<N>, Tensor<N>) {
    let dims = z.dims();
    let shifted = z.clone() - z.max_dim(N - 1).expand(dims);
    let weights = shifted.clone().exp();
    let mass = weights.clone().sum_dim(N - 1);
    (shifted, weights, mass)
}

fn probabilities<const N: usize>(z: Tensor<N>) -> Tensor<N> {
    let dims = z.dims();
    let (_, weights, mass) = unnormalised(z);
    weights.div(mass.expand(dims))
}

/// The largest f32 below 1 by two ulps: a uniform is capped here so that `u · total` stays below
/// the row's total mass in f32, and the drawn index is always one with mass (the host's rule
/// returns the last entry with mass when rounding leaves `u` past the end).
const U_MAX: f32 = 1.0 - 2.0 * f32::EPSILON / 2.0;

/// Which code draws the rows.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Kernel {
    /// The fused row kernel ([`host_rows`]) where the logits live in host memory (flex) and the
    /// parameters allow it, else the chain of Burn operations.
    Auto,
    /// The chain of Burn operations on the logits' device, whatever it is (the tests use it to
    /// hold that chain to the host path on flex too).
    Burn,
}

/// Draw one token at each of `rows` of `logits` (`[rows, vocab]`) on their device; see the
/// module documentation. Two transfers come back: the token ids, and one float column per
/// score asked for plus the row's total shaped mass (checked on the host: a row whose logits
/// hold NaN or give no mass is an error, as on the host path).
///
/// The work is a handful of passes over the drawn rows' logits, since at a text vocabulary the
/// sampler's cost is memory traffic: the running maximum, `exp(z − max)`, its running sum and
/// one comparison against `u · total` draw the token; the probability of the drawn token, the
/// largest probability (`1 / Σ exp(z − max)`), the margin and the entropy
/// (`ln S − Σ w (z − max) / S`) reuse those unnormalised weights where the draw was untempered.
pub(crate) fn device_draw(
    logits: &Tensor<2>,
    rows: &[usize],
    uniforms: &[f64],
    params: &Shaping,
    want: Want,
    kernel: Kernel,
) -> std::result::Result<Drawn, RowError> {
    let vocab = logits.dims()[1].max(1);
    let chunk = (CHUNK_ELEMENTS / vocab).max(1);
    let kernel = match kernel {
        Kernel::Auto if logits.device() == Device::flex() && host_rows::handles(params) => {
            Kernel::Auto
        }
        _ => Kernel::Burn,
    };
    if rows.len() <= chunk {
        return draw_rows(logits, rows, uniforms, params, want, kernel);
    }
    let mut drawn = Drawn::default();
    for (k, (rows, uniforms)) in rows.chunks(chunk).zip(uniforms.chunks(chunk)).enumerate() {
        let part =
            draw_rows(logits, rows, uniforms, params, want, kernel).map_err(|e| RowError {
                at: e.at + k * chunk,
                message: e.message,
            })?;
        drawn.tokens.extend(part.tokens);
        drawn.confidence.extend(part.confidence);
        drawn.entropy.extend(part.entropy);
        drawn.max_prob.extend(part.max_prob);
        drawn.margin.extend(part.margin);
    }
    Ok(drawn)
}

/// Rows are drawn in chunks of at most this many logits (8 MB of f32). Each operation makes a
/// tensor of the chunk's size; at a text vocabulary a whole step's rows would be gigabytes per
/// operation, fresh pages from the kernel every time (on flex most of the time went to page
/// faults), and the step's peak memory several times the logits. Rows are independent, so
/// chunking changes no result.
const CHUNK_ELEMENTS: usize = 1 << 21;

fn draw_rows(
    logits: &Tensor<2>,
    rows: &[usize],
    uniforms: &[f64],
    params: &Shaping,
    want: Want,
    kernel: Kernel,
) -> std::result::Result<Drawn, RowError> {
    let n = rows.len();
    if n == 0 {
        return Ok(Drawn::default());
    }
    let device = logits.device();
    let [all, vocab] = logits.dims();
    let z = if n == all && rows.iter().enumerate().all(|(i, &r)| i == r) {
        logits.clone() // every row, in order: no copy
    } else {
        let index: Vec<i64> = rows.iter().map(|&r| r as i64).collect();
        let index = Tensor::<1, Int>::from_data(TensorData::new(index, [n]), &device);
        logits.clone().select(0, index)
    };
    let width = 1 + [want.confidence, want.entropy, want.max_prob, want.margin]
        .iter()
        .filter(|&&w| w)
        .count();
    let (tokens, scores) = match kernel {
        Kernel::Auto => {
            // On flex a freshly selected (or sole) tensor hands over its buffer without a copy.
            let data = z.into_data_as::<f32>();
            let values = data.as_slice::<f32>().expect("f32 data reads as f32");
            host_rows::draw(values, vocab, uniforms, params, want, width)
        }
        Kernel::Burn => burn_chain(z, uniforms, params, want),
    };
    debug_assert_eq!(scores.len(), n * width);

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

/// The draw as a chain of Burn operations on the logits' device (`z`: the drawn rows,
/// `[n, vocab]`): the token ids and the score columns (the check value, then the wanted
/// scores), row by row.
fn burn_chain(
    z: Tensor<2>,
    uniforms: &[f64],
    params: &Shaping,
    want: Want,
) -> (Vec<i64>, Vec<f32>) {
    let device = z.device();
    let [n, vocab] = z.dims();
    let truncated = params.top_k.is_some() || params.top_p.is_some();
    // The untempered distribution as unnormalised weights `exp(z − max)` and their sum, made
    // once and shared by the draw (when untempered and untruncated) and the scores.
    let untempered = || unnormalised(z.clone());
    let needs_scores = want.confidence || want.entropy || want.max_prob || want.margin;
    let mut plain = None;

    // Shape, then draw: the number of running sums at or below u · total is the first index
    // whose running sum exceeds it, which is the host's rule.
    let (tokens, check) = if params.temperature == 0.0 {
        let best = z.clone().argmax(1); // first index among ties, as the host's argmax
        (best, z.clone().max_dim(1))
    } else {
        let mut w = if params.temperature == 1.0 {
            let (shifted, weights, mass) = untempered();
            let w = weights.clone();
            plain = Some((shifted, weights, mass));
            w
        } else {
            let zt = z.clone().div_scalar(params.temperature);
            (zt.clone() - zt.max_dim(1).expand([n, vocab])).exp()
        };
        if truncated {
            let sorted = w.clone().sort_descending(1);
            let mut keep = Tensor::<2, Int>::full([n, 1], vocab as i64, &device);
            if let Some(k) = params.top_k {
                keep = keep.clamp_max(k.min(vocab) as i64);
            }
            if let Some(tp) = params.top_p {
                // Entry m (in sorted order) is kept while the mass before it is below top_p.
                let running = sorted.clone().cumsum(1);
                let total = running.clone().narrow(1, vocab - 1, 1).expand([n, vocab]);
                let before = (running - sorted.clone()).div(total);
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
        let running = w.cumsum(1);
        let total = running.clone().narrow(1, vocab - 1, 1); // [n, 1]
        let u: Vec<f32> = uniforms.iter().map(|&u| (u as f32).min(U_MAX)).collect();
        let u = Tensor::<1>::from_data(TensorData::new(u, [n]), &device).reshape([n, 1]);
        let target = (u * total.clone()).expand([n, vocab]);
        let count = running.lower_equal(target).int().sum_dim(1);
        // (capped at the last index so a row without mass still indexes; the host check below
        // refuses it)
        (count.clamp_max(vocab as i64 - 1), total)
    };

    let mut columns = vec![check];
    if needs_scores {
        let (shifted, weights, mass) = plain.take().unwrap_or_else(untempered);
        if want.confidence {
            // As `probabilities` computes it (w / S), so both paths rank the same values.
            columns.push(weights.clone().gather(1, tokens.clone()).div(mass.clone()));
        }
        if want.entropy {
            // H = ln S − Σ w (z − max) / S, with 0 · (−inf) read as 0.
            let wz =
                (weights.clone() * shifted.clone()).mask_fill(weights.clone().equal_elem(0.0), 0.0);
            columns.push(mass.clone().log() - wz.sum_dim(1).div(mass.clone()));
        }
        if want.max_prob {
            columns.push(mass.clone().recip());
        }
        if want.margin {
            if vocab >= 2 {
                let top = weights.topk(2, 1);
                columns.push((top.clone().narrow(1, 0, 1) - top.narrow(1, 1, 1)).div(mass));
            } else {
                columns.push(mass.recip());
            }
        }
    }
    let scores = host_f32(Tensor::cat(columns, 1));
    (host_i64(tokens), scores)
}

#[cfg(test)]
mod tests;
