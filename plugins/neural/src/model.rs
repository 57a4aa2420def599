//! The network: a pre-norm transformer with token and learned position embeddings, shared by
//! the masked diffusion model (bidirectional attention, SUBS output) and the autoregressive
//! model (causal attention, next-token output, KV cache).
//!
//! Token ids `0..vocab` are real tokens; id `vocab` is the mask token of the MDM and the
//! beginning-of-sequence token of the AR model, so the embedding table has `vocab + 1` rows.
//! The output head has `vocab + 1` logits; the last one (mask / BOS) is always suppressed.
//! Every block also adds a learned bias per head and relative offset to its attention scores
//! (T5-style relative positions, started at a directional ALiBi). Position embeddings alone leave a
//! bidirectional model attending uniformly to all L tokens at first, and on n-gram languages
//! the MDM then stayed at the unigram loss for millions of tokens (issue 5); a scalar per
//! offset lets "look k places back/ahead" be learned directly.
//! There is no time conditioning: the MDM's output does not depend on the diffusion time,
//! which is what makes MDLM's `ddpm_cache` valid.

use burn::module::{Module, Param};
use burn::nn::{LayerNorm, LayerNormConfig};
use burn::tensor::activation::{gelu, log_softmax, softmax};
use burn::tensor::module::{attention, embedding, linear};
use burn::tensor::ops::AttentionModuleOptions;
use burn::tensor::{Bool, Device, FloatDType, Int, Tensor, TensorData};
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use serde::{Deserialize, Serialize};

/// Log-probability given to impossible tokens (SUBS): large and finite, so `0 · it` is 0.
pub const NEG_INF: f32 = -1e6;

/// Which of the two models a network is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum ModelKind {
    /// Masked diffusion model: bidirectional attention, SUBS parameterisation, MDLM loss.
    Mdm,
    /// Autoregressive model: causal attention, next-token loss.
    Ar,
}

impl ModelKind {
    pub fn as_str(self) -> &'static str {
        match self {
            ModelKind::Mdm => "mdm",
            ModelKind::Ar => "ar",
        }
    }
}

/// Architecture of the transformer.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct NetConfig {
    /// Width of the residual stream.
    pub hidden: usize,
    /// Number of transformer blocks.
    pub layers: usize,
    /// Number of attention heads (`hidden` must be divisible by it).
    pub heads: usize,
    /// Feed-forward width as a multiple of `hidden`.
    #[serde(default = "default_ff_mult")]
    pub ff_mult: usize,
    /// Longest sequence the position table covers; `None` = the task's length.
    #[serde(default)]
    pub max_length: Option<usize>,
}

fn default_ff_mult() -> usize {
    4
}

impl NetConfig {
    /// The paper's model (Feng et al., appendix E): hidden 512, 8 layers, 8 heads, ff 4×.
    pub fn paper() -> Self {
        NetConfig {
            hidden: 512,
            layers: 8,
            heads: 8,
            ff_mult: 4,
            max_length: None,
        }
    }

    /// A CPU-sized model with the same shape: hidden 128, 4 layers, 4 heads, ff 4×.
    pub fn cpu() -> Self {
        NetConfig {
            hidden: 128,
            layers: 4,
            heads: 4,
            ff_mult: 4,
            max_length: None,
        }
    }

    /// A named preset: `paper` or `cpu`.
    pub fn preset(name: &str) -> Option<Self> {
        match name {
            "paper" => Some(Self::paper()),
            "cpu" => Some(Self::cpu()),
            _ => None,
        }
    }

    /// Check the numbers and fill `max_length` with `length` when absent.
    pub fn resolved(&self, length: usize) -> Result<NetConfig, String> {
        if self.hidden == 0 || self.layers == 0 || self.heads == 0 || self.ff_mult == 0 {
            return Err(format!(
                "hidden, layers, heads and ff_mult must be positive (got {self:?})"
            ));
        }
        if !self.hidden.is_multiple_of(self.heads) {
            return Err(format!(
                "hidden ({}) must be divisible by heads ({})",
                self.hidden, self.heads
            ));
        }
        let max_length = self.max_length.unwrap_or(length);
        if max_length == 0 {
            return Err("max_length must be positive".into());
        }
        Ok(NetConfig {
            max_length: Some(max_length),
            ..self.clone()
        })
    }

    pub fn max_len(&self) -> usize {
        self.max_length.unwrap_or(0)
    }
}

/// A dense layer `y = x W + b` with `W: [in, out]`.
#[derive(Module, Debug)]
pub struct Dense {
    pub weight: Param<Tensor<2>>,
    pub bias: Param<Tensor<1>>,
}

impl Dense {
    fn new(d_in: usize, d_out: usize, std: f32, rng: &mut ChaCha8Rng, device: &Device) -> Self {
        Dense {
            weight: Param::from_data(uniform([d_in, d_out], std, rng), device),
            bias: Param::from_data(TensorData::new(vec![0f32; d_out], [d_out]), device),
        }
    }

    fn forward<const D: usize>(&self, x: Tensor<D>) -> Tensor<D> {
        linear(x, self.weight.val(), Some(self.bias.val()))
    }
}

/// Uniform initialisation with the given standard deviation (`U(-a, a)`, `a = √3·std`),
/// drawn on the host so that a seed fixes the weights whatever the backend.
fn uniform<const D: usize>(shape: [usize; D], std: f32, rng: &mut ChaCha8Rng) -> TensorData {
    let n: usize = shape.iter().product();
    let a = 3f32.sqrt() * std;
    let values: Vec<f32> = (0..n).map(|_| rng.random_range(-a..a)).collect();
    TensorData::new(values, shape)
}

/// Starting attention bias `[2·max_len − 1, heads]`: ALiBi (Press et al. 2022) made
/// directional for bidirectional attention. The first half of the heads look left, the rest
/// right; head `k` of the `m` on a side scores an offset `d` on its side with
/// `−(|d| − 1) · 2^(−4k/m)`, and the position itself (`d = 0`: the residual stream already
/// holds it) or any offset on the other side 8 lower. A one-sided, decaying average keeps the
/// order of the context recoverable, which a symmetric one would not.
fn directional_alibi(max_len: usize, heads: usize) -> TensorData {
    let span = 2 * max_len - 1;
    let left = heads.div_ceil(2);
    let mut values = vec![0f32; span * heads];
    for row in 0..span {
        let offset = row as f32 - (max_len - 1) as f32;
        for h in 0..heads {
            let (k, per_side, looks_left) = if h < left {
                (h, left, true)
            } else {
                (h - left, heads - left, false)
            };
            let slope = 2f32.powf(-4.0 * k as f32 / per_side as f32);
            let wrong_side = if looks_left {
                offset >= 0.0
            } else {
                offset <= 0.0
            };
            let penalty = if wrong_side { 8.0 } else { 0.0 };
            values[row * heads + h] = -(offset.abs() - 1.0).max(0.0) * slope - penalty;
        }
    }
    TensorData::new(values, [span, heads])
}

/// Attention on an autodiff device, as Burn composes it there (`softmax(q kᵀ/√d + bias) v`,
/// with `attention_fallback`'s causal mask and all-masked-row guard), except that a key whose
/// score is more than [`TRAINING_WEIGHT_CUTOFF`] below its row's maximum gets weight 0.
///
/// Why: a subnormal operand costs an x86 core a microcode assist in every multiply it enters,
/// about 25× a normal FMA. An ALiBi-biased row over 512 keys holds weights down to 0 through
/// every magnitude, and the backward pass multiplies them by gradients (`dS = P ⊙ (dP − ⟨P,
/// dP⟩)`): 6% of `dS` was subnormal, and the two products through it ran at a fifth of their
/// speed. A weight `≥ e^-40 / n` times a gradient stays normal down to gradients of 1e-18.
///
/// What it changes: the dropped weights sum to less than `n · e^-40 ≈ 2e-15` for `n = 512`
/// keys, against the maximum's 1, so an output moves by less than `2e-15 · max|v|`, far below
/// f32's rounding of it (`6e-8` relative). Flex's fused attention (inference) flushes only
/// the subnormal weights themselves, in its kernel.
pub(crate) fn attention_for_training(
    q: Tensor<4>,
    k: Tensor<4>,
    v: Tensor<4>,
    bias: Tensor<4>,
    causal: bool,
) -> Tensor<4> {
    let [.., seq_q, head_dim] = q.dims();
    let seq_k = k.dims()[2];
    let scale = 1.0 / (head_dim as f64).sqrt();
    let mut scores = q.matmul(k.swap_dims(2, 3)).mul_scalar(scale) + bias;
    if causal {
        let offset = seq_k as i64 - seq_q as i64;
        // `true` past the diagonal `offset`: the keys after each query.
        let later = Tensor::<2, Bool>::tril_mask([seq_q, seq_k], offset, &scores.device());
        scores = scores.mask_fill(later.unsqueeze::<4>(), f32::NEG_INFINITY);
    }
    // As `attention_fallback`: a finite maximum and a positive sum keep an all-masked row at 0.
    let max = scores.clone().max_dim(3).clamp_min(f32::MIN);
    let shifted = scores - max;
    let far = shifted.clone().lower_elem(TRAINING_WEIGHT_CUTOFF);
    let numerator = shifted.mask_fill(far, f32::NEG_INFINITY).exp();
    let sum = numerator.clone().sum_dim(3).clamp_min(f32::MIN_POSITIVE);
    (numerator / sum).matmul(v)
}

/// Scores this far below their row's maximum get attention weight 0 in training (see
/// [`attention_for_training`]): `e^-40 ≈ 4.2e-18`.
pub(crate) const TRAINING_WEIGHT_CUTOFF: f32 = -40.0;

/// One pre-norm block: `x + Attn(LN(x))`, then `x + FF(LN(x))`.
#[derive(Module, Debug)]
pub struct Block {
    pub norm_attn: LayerNorm,
    pub qkv: Dense,
    pub proj: Dense,
    pub norm_ff: LayerNorm,
    pub ff_in: Dense,
    pub ff_out: Dense,
    /// Attention bias per relative offset `j − i` and head: `[2·max_length − 1, heads]`,
    /// row `j − i + max_length − 1`.
    pub relative_bias: Param<Tensor<2>>,
    pub heads: usize,
    /// Block diffusion: attention is block-causal in blocks of this many positions (see
    /// [`crate::block`]); `None` for the bidirectional MDM and the AR model.
    pub block_size: Option<usize>,
}

/// Keys and values of one block, preallocated for a whole generation:
/// `[batch, heads, capacity, head_dim]`, of which positions `0..ArCache::len` are filled. New
/// positions are written in place (`slice_assign` on a uniquely held buffer), and attention reads
/// the filled prefix as a strided view, so a token costs no copy of the cache. A `bf16` cache
/// stores the keys transposed, `[batch, heads, head_dim, capacity]`, the layout flex's fused
/// bf16 kernel reads (see [`KvDtype`]).
#[derive(Debug, Clone)]
pub struct KvCache {
    pub k: Tensor<4>,
    pub v: Tensor<4>,
    /// The block's relative-bias table laid out per head, `[1, heads, 1, 2·max_length − 1]`,
    /// computed once per generation: the bias row of a query at position `p` over keys
    /// `0..p + 1` is the slice `max_length − 1 − p ..= max_length − 1`.
    pub bias_rows: Tensor<4>,
    /// The precision `k` and `v` are stored in.
    pub dtype: KvDtype,
}

/// The precision of a KV cache.
///
/// `f32` (the default) matches the uncached forward pass within f32 rounding. `bf16` rounds
/// each key and value to 8 significant bits as it is written (the query, the bias, the softmax
/// and the output stay f32), which halves the bytes a decoding step reads: the whole filled
/// cache, every step. At 511 positions of the CPU config the f32 cache (33.5 MB) no longer fits
/// a 32 MB L3 and the bf16 one (16.75 MB) does. Cached logits then differ from uncached ones by
/// about 1e-2 (relative to the logits' scale), so sampled tokens can differ. `bf16` needs the
/// `flex` device, whose attention reads it in place.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum KvDtype {
    #[default]
    F32,
    Bf16,
}

impl KvDtype {
    /// `t` in this precision.
    fn store<const D: usize>(self, t: Tensor<D>) -> Tensor<D> {
        match self {
            KvDtype::F32 => t,
            KvDtype::Bf16 => t.cast(FloatDType::BF16),
        }
    }
}

impl Block {
    fn new(config: &NetConfig, rng: &mut ChaCha8Rng, device: &Device) -> Self {
        let h = config.hidden;
        let ff = h * config.ff_mult;
        // GPT-2 style: residual output projections scaled by 1/√(2·layers).
        let resid_std = 0.02 / (2.0 * config.layers as f32).sqrt();
        Block {
            norm_attn: LayerNormConfig::new(h).init(device),
            qkv: Dense::new(h, 3 * h, 0.02, rng, device),
            proj: Dense::new(h, h, resid_std, rng, device),
            norm_ff: LayerNormConfig::new(h).init(device),
            ff_in: Dense::new(h, ff, 0.02, rng, device),
            ff_out: Dense::new(ff, h, resid_std, rng, device),
            relative_bias: Param::from_data(
                directional_alibi(config.max_len(), config.heads),
                device,
            ),
            heads: config.heads,
            block_size: None,
        }
    }

    /// The attention bias `[1, heads, n, total]` of queries at positions `start..start + n`
    /// over keys at positions `0..total`, contiguous and shared by the whole batch. Flex's
    /// attention reads a bias with a batch dimension of 1 in place for every sequence; one
    /// expanded to `[batch, …]` is a strided view it must first copy into a buffer of
    /// `batch × heads × n × total` floats (at 16 × 512 that copy was 14% of a forward).
    fn position_bias(&self, start: usize, n: usize, total: usize) -> Tensor<4> {
        let table = self.relative_bias.val();
        let max_len = table.dims()[0].div_ceil(2);
        let offsets: Vec<i64> = (0..n)
            .flat_map(|i| (0..total).map(move |j| j as i64 - (start + i) as i64))
            .map(|d| d + max_len as i64 - 1)
            .collect();
        let index =
            Tensor::<1, Int>::from_data(TensorData::new(offsets, [n * total]), &table.device());
        table
            .transpose()
            .select(1, index)
            .reshape([1, self.heads, n, total])
    }

    /// `x: [batch, len, hidden]` → q, k, v each `[batch, heads, len, head_dim]`.
    pub(crate) fn qkv(&self, x: Tensor<3>) -> (Tensor<4>, Tensor<4>, Tensor<4>) {
        let [b, l, h] = x.dims();
        let dh = h / self.heads;
        let qkv = self.qkv.forward(self.norm_attn.forward(x));
        let split = |i: usize| {
            qkv.clone()
                .narrow(2, i * h, h)
                .reshape([b, l, self.heads, dh])
                .swap_dims(1, 2)
        };
        (split(0), split(1), split(2))
    }

    /// Attention output `[batch, heads, len, head_dim]` → residual update and feed-forward.
    pub(crate) fn finish(&self, x: Tensor<3>, context: Tensor<4>) -> Tensor<3> {
        let [b, l, h] = x.dims();
        let context = context.swap_dims(1, 2).reshape([b, l, h]);
        let x = x + self.proj.forward(context);
        let ff = self
            .ff_out
            .forward(gelu(self.ff_in.forward(self.norm_ff.forward(x.clone()))));
        x + ff
    }

    /// The attention bias of queries at positions `queries` over keys at positions `0..keys`:
    /// the relative-position bias, plus −∞ on hidden keys (`hidden_keys`, `[batch, 1, 1, keys]`:
    /// a left-padded batch's padding). Every forward pass of the bidirectional network builds
    /// its bias here (full, padded, and the MDM cache's fill and window in `kv_window`), so a
    /// mask added here holds for all of them alike.
    pub(crate) fn attention_bias(
        &self,
        queries: std::ops::Range<usize>,
        keys: usize,
        hidden_keys: Option<&Tensor<4>>,
    ) -> Tensor<4> {
        let n = queries.len();
        let bias = self.position_bias(queries.start, n, keys);
        let bias = crate::block_mask::mask_later_blocks(bias, queries.clone(), self.block_size);
        match hidden_keys {
            None => bias,
            Some(hidden) => {
                let shape = [hidden.dims()[0], self.heads, n, keys];
                bias.expand(shape) + hidden.clone().expand(shape)
            }
        }
    }

    fn forward(&self, x: Tensor<3>, causal: bool) -> Tensor<3> {
        let l = x.dims()[1];
        self.forward_biased(x, causal, self.attention_bias(0..l, l, None))
    }

    /// The block with attention bias `bias` (`[1 or batch, heads, len, len]`).
    pub(crate) fn forward_biased(&self, x: Tensor<3>, causal: bool, bias: Tensor<4>) -> Tensor<3> {
        let (q, k, v) = self.qkv(x.clone());
        let options = AttentionModuleOptions {
            is_causal: causal,
            ..Default::default()
        };
        let context = if q.is_autodiff() {
            attention_for_training(q, k, v, bias, causal)
        } else {
            attention(q, k, v, None, Some(bias), options)
        };
        self.finish(x, context)
    }

    /// An empty cache for `batch` sequences of up to `capacity` positions, stored as `dtype`.
    fn empty_cache(
        &self,
        batch: usize,
        capacity: usize,
        dtype: KvDtype,
        device: &Device,
    ) -> KvCache {
        let table = self.relative_bias.val();
        let [span, heads] = table.dims();
        let dh = self.qkv.weight.val().dims()[0] / heads;
        let k_shape = match dtype {
            KvDtype::F32 => [batch, heads, capacity, dh],
            KvDtype::Bf16 => [batch, heads, dh, capacity],
        };
        KvCache {
            k: dtype.store(Tensor::zeros(k_shape, device)),
            v: dtype.store(Tensor::zeros([batch, heads, capacity, dh], device)),
            bias_rows: table.transpose().reshape([1, heads, 1, span]),
            dtype,
        }
    }

    /// Feed `x: [batch, n, hidden]` (positions `past..past + n`) attending to the cached keys
    /// and values `0..past` plus their own (causally); writes the new keys and values into
    /// `cache` at `past..past + n`.
    fn forward_cached(&self, x: Tensor<3>, cache: &mut KvCache, past: usize) -> Tensor<3> {
        let (q, k, v) = self.qkv(x.clone());
        let [b, heads, n, dh] = q.dims();
        let total = past + n;
        // Each buffer is moved out (leaving a cheap stand-in) and back, so that it stays
        // uniquely held and `slice_assign` writes into it instead of copying it.
        let slot = [0..b, 0..heads, past..total, 0..dh];
        let dtype = cache.dtype;
        let buffer = std::mem::replace(&mut cache.k, cache.bias_rows.clone());
        cache.k = match dtype {
            KvDtype::F32 => buffer.slice_assign(slot.clone(), k),
            KvDtype::Bf16 => buffer.slice_assign(
                [0..b, 0..heads, 0..dh, past..total],
                dtype.store(k.swap_dims(2, 3)),
            ),
        };
        let buffer = std::mem::replace(&mut cache.v, cache.bias_rows.clone());
        cache.v = buffer.slice_assign(slot, dtype.store(v));
        let keys = match dtype {
            KvDtype::F32 => cache.k.clone().narrow(2, 0, total),
            KvDtype::Bf16 => cache.k.clone().narrow(3, 0, total).swap_dims(2, 3),
        };
        let values = cache.v.clone().narrow(2, 0, total);
        if n == 1 {
            // One query per row (a decoding step): the fused attention op over the cache's
            // filled prefix. Each (sequence, head) matrix of that view is contiguous, and flex
            // reads such views in place (our patch of its naive kernel), so a step reads the
            // cache once, in parallel over heads, and makes no score tensors. A bf16 cache
            // takes flex's fused bf16 kernel (our patch), with the query and bias in f32.
            let span = cache.bias_rows.dims()[3];
            let max_len = span.div_ceil(2);
            let bias = cache.bias_rows.clone().narrow(3, max_len - 1 - past, total);
            let context = attention(q, keys, values, None, Some(bias), Default::default());
            return self.finish(x, context);
        }
        // Several new positions (a prompt): softmax(q kᵀ / √d_h + bias) v over the strided
        // views, with the causal mask among the new positions (in f32 whatever the cache's
        // precision: a prompt is fed once).
        let (keys, values) = match dtype {
            KvDtype::F32 => (keys, values),
            KvDtype::Bf16 => (keys.cast(FloatDType::F32), values.cast(FloatDType::F32)),
        };
        let bias = self.position_bias(past, n, total);
        let scores = q.matmul(keys.swap_dims(2, 3));
        let scores = scores.mul_scalar(1.0 / (dh as f64).sqrt()) + bias;
        // Query i sits at absolute position past + i and may not see key j > past + i.
        let future: Vec<bool> = (0..n)
            .flat_map(|i| (0..total).map(move |j| j > past + i))
            .collect();
        let future = Tensor::<4, Bool>::from_data(
            TensorData::new(future, [1, 1, n, total]),
            &scores.device(),
        )
        .expand([b, heads, n, total]);
        let scores = scores.mask_fill(future, f32::NEG_INFINITY);
        let context = softmax(scores, 3).matmul(values);
        self.finish(x, context)
    }
}

/// The transformer shared by both models.
#[derive(Module, Debug)]
pub struct Transformer {
    /// `[vocab + 1, hidden]`; row `vocab` is the mask (MDM) / BOS (AR) token.
    pub token_embedding: Param<Tensor<2>>,
    /// `[max_length, hidden]`.
    pub position_embedding: Param<Tensor<2>>,
    pub blocks: Vec<Block>,
    pub norm_out: LayerNorm,
    /// `hidden → vocab + 1`.
    pub head: Dense,
    pub vocab: usize,
    pub causal: bool,
}

impl Transformer {
    /// A freshly initialised network; the weights depend only on `(config, vocab, seed)`.
    /// `config` must be [`NetConfig::resolved`].
    pub fn new(
        kind: ModelKind,
        config: &NetConfig,
        vocab: usize,
        seed: u64,
        device: &Device,
    ) -> Self {
        let mut rng = ChaCha8Rng::seed_from_u64(seed);
        let h = config.hidden;
        Transformer {
            token_embedding: Param::from_data(uniform([vocab + 1, h], 0.02, &mut rng), device),
            position_embedding: Param::from_data(
                uniform([config.max_len(), h], 0.02, &mut rng),
                device,
            ),
            blocks: (0..config.layers)
                .map(|_| Block::new(config, &mut rng, device))
                .collect(),
            norm_out: LayerNormConfig::new(h).init(device),
            head: Dense::new(h, vocab + 1, 0.02, &mut rng, device),
            vocab,
            causal: kind == ModelKind::Ar,
        }
    }

    pub fn max_length(&self) -> usize {
        self.position_embedding.val().dims()[0]
    }

    /// Embedding of `tokens: [batch, n]` placed at positions `start..start + n`.
    fn embed(&self, tokens: Tensor<2, Int>, start: usize) -> Tensor<3> {
        let n = tokens.dims()[1];
        let pos = self
            .position_embedding
            .val()
            .narrow(0, start, n)
            .unsqueeze_dim::<3>(0);
        embedding(self.token_embedding.val(), tokens) + pos
    }

    /// Logits `[batch, len, vocab + 1]` with the last (mask / BOS) logit suppressed.
    fn output(&self, x: Tensor<3>) -> Tensor<3> {
        let logits = self.head.forward(self.norm_out.forward(x));
        let device = logits.device();
        let mut bias = vec![0f32; self.vocab + 1];
        bias[self.vocab] = NEG_INF;
        let bias = Tensor::<1>::from_data(TensorData::new(bias, [self.vocab + 1]), &device);
        logits + bias.reshape([1, 1, self.vocab + 1])
    }

    /// Full forward pass (causal for the AR model): logits `[batch, len, vocab + 1]`.
    pub fn forward(&self, tokens: Tensor<2, Int>) -> Tensor<3> {
        self.output(self.hidden(tokens))
    }

    /// Full forward pass, logits of the real tokens only, `[batch, len, vocab]`: the head
    /// without its mask/BOS column (which [`Transformer::forward`] suppresses), computed
    /// straight into a contiguous tensor. At a text vocabulary, narrowing `forward`'s output
    /// instead costs a copy of every logit and the suppression an addition over all of them.
    pub fn forward_real(&self, tokens: Tensor<2, Int>) -> Tensor<3> {
        self.real_logits(self.hidden(tokens))
    }

    /// [`Transformer::forward_real`] over a left-padded batch: the first `left_padding[b]`
    /// positions of row `b` are padding, hidden from every query (a −∞ attention bias on
    /// those keys) and skipped by the position embeddings, which count from each row's first
    /// real token (the relative bias depends on offsets only), so every other position gets
    /// the logits of its row alone without the padding. The padding positions attend to the
    /// real tokens and stay finite; they are never read. No padding (empty or all 0) is
    /// `forward_real`.
    pub fn forward_real_padded(&self, tokens: Tensor<2, Int>, left_padding: &[usize]) -> Tensor<3> {
        if left_padding.iter().all(|&p| p == 0) {
            return self.forward_real(tokens);
        }
        let length = tokens.dims()[1];
        let key_bias = hidden_keys(left_padding, length, &tokens.device());
        let mut x = self.embed_padded(tokens, 0, left_padding);
        for block in &self.blocks {
            let bias = block.attention_bias(0..length, length, Some(&key_bias));
            x = block.forward_biased(x, self.causal, bias);
        }
        self.real_logits(x)
    }

    /// Embedding of `tokens: [batch, n]` at positions `start..start + n` of a left-padded
    /// batch: row `b`'s positions count from its first real token (`left_padding[b]`), its
    /// padding sits at position 0. No padding (empty) is [`Transformer::embed`].
    pub(crate) fn embed_padded(
        &self,
        tokens: Tensor<2, Int>,
        start: usize,
        left_padding: &[usize],
    ) -> Tensor<3> {
        if left_padding.iter().all(|&p| p == 0) {
            return self.embed(tokens, start);
        }
        let [batch, n] = tokens.dims();
        let positions: Vec<i64> = left_padding
            .iter()
            .flat_map(|&pad| (start..start + n).map(move |j| j.saturating_sub(pad) as i64))
            .collect();
        let positions =
            Tensor::<1, Int>::from_data(TensorData::new(positions, [batch * n]), &tokens.device());
        let hidden_width = self.position_embedding.val().dims()[1];
        let pos =
            self.position_embedding
                .val()
                .select(0, positions)
                .reshape([batch, n, hidden_width]);
        embedding(self.token_embedding.val(), tokens) + pos
    }

    /// The real tokens' logits `[batch, n, vocab]` of the last block's output `x`.
    pub(crate) fn real_logits(&self, x: Tensor<3>) -> Tensor<3> {
        let v = self.vocab;
        linear(
            self.norm_out.forward(x),
            self.head.weight.val().narrow(1, 0, v),
            Some(self.head.bias.val().narrow(0, 0, v)),
        )
    }

    fn hidden(&self, tokens: Tensor<2, Int>) -> Tensor<3> {
        let mut x = self.embed(tokens, 0);
        for block in &self.blocks {
            x = block.forward(x, self.causal);
        }
        x
    }

    /// Incremental causal forward pass: feeds `tokens: [batch, n]` at positions
    /// `cache.len..`, using and extending the per-block KV cache (allocated on the first call
    /// for `cache.capacity` positions, or the model's `max_length` when that is 0).
    /// Logits `[batch, n, vocab + 1]`.
    ///
    /// # Panics
    /// If the cache would overflow its capacity or the model's `max_length`, or the batch size
    /// differs from the one the cache was allocated for.
    pub fn forward_cached(&self, tokens: Tensor<2, Int>, cache: &mut ArCache) -> Tensor<3> {
        let [batch, n] = tokens.dims();
        let past = cache.len;
        if cache.blocks.len() != self.blocks.len() {
            let capacity = match cache.capacity {
                0 => self.max_length(),
                c => c.min(self.max_length()),
            };
            let device = tokens.device();
            cache.capacity = capacity;
            cache.blocks = self
                .blocks
                .iter()
                .map(|b| b.empty_cache(batch, capacity, cache.dtype, &device))
                .collect();
        }
        assert!(
            past + n <= cache.capacity,
            "KV cache overflow: {past} + {n} positions for a capacity of {}",
            cache.capacity
        );
        assert_eq!(
            cache.blocks[0].k.dims()[0],
            batch,
            "the KV cache was allocated for another batch size"
        );
        let mut x = self.embed(tokens, past);
        for (block, kv) in self.blocks.iter().zip(cache.blocks.iter_mut()) {
            x = block.forward_cached(x, kv, past);
        }
        cache.len += n;
        self.output(x)
    }
}

/// The KV cache of the AR model: keys and values of every block, preallocated on the first
/// [`Transformer::forward_cached`] call. Cloning shares the buffers (Burn tensors are values: the
/// next write to a shared buffer copies it first); [`ArCache::deep_clone`] does not.
#[derive(Debug, Clone, Default)]
pub struct ArCache {
    pub blocks: Vec<KvCache>,
    /// Positions fed so far.
    pub len: usize,
    /// Positions the buffers hold; 0 until allocated = the model's `max_length`.
    pub capacity: usize,
    /// The precision the buffers are allocated in.
    pub dtype: KvDtype,
}

impl ArCache {
    /// An empty cache that will hold `capacity` positions (e.g. the generation length).
    pub fn with_capacity(capacity: usize) -> Self {
        ArCache {
            capacity,
            ..Self::default()
        }
    }

    /// This cache, allocating its buffers in `dtype`.
    pub fn with_dtype(self, dtype: KvDtype) -> Self {
        ArCache { dtype, ..self }
    }

    /// A copy with buffers of its own, so that appending to it writes in place.
    pub fn deep_clone(&self) -> Self {
        let own = |t: &Tensor<4>, dtype: KvDtype| {
            dtype.store(Tensor::<4>::from_data(t.to_data(), &t.device()))
        };
        ArCache {
            blocks: self
                .blocks
                .iter()
                .map(|b| KvCache {
                    k: own(&b.k, b.dtype),
                    v: own(&b.v, b.dtype),
                    bias_rows: b.bias_rows.clone(),
                    dtype: b.dtype,
                })
                .collect(),
            len: self.len,
            capacity: self.capacity,
            dtype: self.dtype,
        }
    }
}

/// The attention bias `[batch, 1, 1, keys]` that hides each row's left padding (its first
/// `left_padding[b]` positions) from every query: −∞ there, 0 elsewhere.
pub(crate) fn hidden_keys(left_padding: &[usize], keys: usize, device: &Device) -> Tensor<4> {
    let batch = left_padding.len();
    let bias: Vec<f32> = left_padding
        .iter()
        .flat_map(|&pad| (0..keys).map(move |j| if j < pad { f32::NEG_INFINITY } else { 0.0 }))
        .collect();
    Tensor::<4>::from_data(TensorData::new(bias, [batch, 1, 1, keys]), device)
}

/// SUBS parameterisation (MDLM): log-probabilities `[batch, len, vocab + 1]` from the logits
/// and the noisy input `xt`. The mask token gets `NEG_INF` everywhere; at masked positions the
/// real tokens get the log-softmax of the logits; at unmasked positions the observed token gets
/// log-probability 0 and every other token `NEG_INF` (carry-over unmasking).
pub fn subs_log_probs(logits: Tensor<3>, xt: Tensor<2, Int>, vocab: usize) -> Tensor<3> {
    let [b, l, v1] = logits.dims();
    debug_assert_eq!(v1, vocab + 1);
    let device = logits.device();
    let mut bias = vec![0f32; v1];
    bias[vocab] = NEG_INF;
    let bias = Tensor::<1>::from_data(TensorData::new(bias, [v1]), &device).reshape([1, 1, v1]);
    let logp = log_softmax(logits + bias, 2);
    let unmasked = xt.clone().not_equal_elem(vocab as i64);
    // 0 at the observed token, NEG_INF elsewhere.
    let carry = xt
        .one_hot::<3>(v1)
        .float()
        .sub_scalar(1.0)
        .mul_scalar(-NEG_INF);
    let unmasked = unmasked.reshape([b, l, 1]).expand([b, l, v1]);
    logp.mask_where(unmasked, carry)
}

/// Token ids as an int tensor `[batch, len]`.
pub fn tokens_tensor(tokens: &[u32], batch: usize, len: usize, device: &Device) -> Tensor<2, Int> {
    let ids: Vec<i64> = tokens.iter().map(|&t| t as i64).collect();
    Tensor::<2, Int>::from_data(TensorData::new(ids, [batch, len]), device)
}

/// Copy a float tensor to the host as `f32`.
pub fn to_host<const D: usize>(t: Tensor<D>) -> Vec<f32> {
    t.into_data_as::<f32>()
        .try_into_vec::<f32>()
        .expect("a float tensor converts to f32")
}
