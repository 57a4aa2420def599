//! The two networks in Burn: token ids in, logits `[batch, length, vocab_rows]` out.
//!
//! Both are pre-norm transformers with bidirectional attention (no causal mask), as their
//! reference modelling code runs them for diffusion:
//!
//! * **LLaDA** (`modeling_llada.py`, the `llama` block): `x + attn_out(Attn(RMSNorm(x)))`, then
//!   `x + ff_out(silu(ff_proj(h)) · up_proj(h))` with `h = RMSNorm(x)`; q/k/v without biases
//!   (unless `include_qkv_bias`); final RMSNorm `ln_f` and an untied head `ff_out` (or the
//!   embedding when `weight_tying`).
//! * **Dream** (`modeling_dream.py`, Qwen2 layers): the same shape with q/k/v biases, grouped-query
//!   attention (`num_key_value_heads`) and Qwen2's tensor names. The network's output is not
//!   shifted; Dream's *generation* reads the logits of position i at position i − 1, which
//!   [`crate::denoiser`] applies.
//! * **SDAR** (`modeling_sdar.py`, Qwen3 layers): Dream's shape without q/k/v biases, an
//!   RMSNorm on every query and key head before RoPE (`q_norm`, `k_norm`), `head_dim` its own
//!   config value, and block-causal attention in blocks of `block_size` (block_diffusion.rs).
//!
//! Shared details: RMSNorm `x · rsqrt(mean(x²) + eps) · w`; RoPE on q and k with
//! `inv_freq_i = θ^(−2i/d)`, the angle table `cat(angles, angles)` and
//! `rotate_half(x) = cat(−x[d/2..], x[..d/2])`; attention `softmax(q kᵀ / √d) v`, each
//! key/value head shared by `heads / kv_heads` consecutive query heads.

use crate::config::{Architecture, ModelConfig};
use crate::error::{HfError, Result};
use crate::weights::WeightStore;
use burn::tensor::activation::silu;
use burn::tensor::module::{attention, embedding, linear};
use burn::tensor::ops::AttentionModuleOptions;
use burn::tensor::{Bool, DType, Device, FloatDType, Int, Tensor, TensorData};

/// A dense layer `y = x Wᵀ + b` with `W` as Hugging Face stores it, `[out, in]`.
#[derive(Debug, Clone)]
pub struct Linear {
    /// `[in, out]`: the stored `[out, in]` transposed and laid out row by row
    /// ([`row_major_transpose`]).
    weight: Tensor<2>,
    bias: Option<Tensor<1>>,
}

impl Linear {
    fn forward(&self, x: Tensor<3>) -> Tensor<3> {
        linear(x, self.weight.clone(), self.bias.clone())
    }
}

/// One transformer block.
#[derive(Debug, Clone)]
pub struct Block {
    attn_norm: Tensor<1>,
    q: Linear,
    k: Linear,
    v: Linear,
    o: Linear,
    ffn_norm: Tensor<1>,
    gate: Linear,
    up: Linear,
    down: Linear,
    /// Qwen3's (SDAR's) RMSNorm weights `[head_dim]` on every query and key head.
    qk_norm: Option<(Tensor<1>, Tensor<1>)>,
}

/// Tensor names of one architecture.
struct Names {
    embedding: String,
    final_norm: String,
    head: String,
    block: fn(usize, &str) -> String,
}

fn names(arch: Architecture) -> Names {
    match arch {
        Architecture::Llada => Names {
            embedding: "model.transformer.wte.weight".into(),
            final_norm: "model.transformer.ln_f.weight".into(),
            head: "model.transformer.ff_out.weight".into(),
            block: |i, role| {
                let local = match role {
                    "attn_norm" => "attn_norm.weight",
                    "q" => "q_proj",
                    "k" => "k_proj",
                    "v" => "v_proj",
                    "o" => "attn_out",
                    "ffn_norm" => "ff_norm.weight",
                    "gate" => "ff_proj",
                    "up" => "up_proj",
                    "down" => "ff_out",
                    _ => unreachable!("no LLaDA role {role}"),
                };
                format!("model.transformer.blocks.{i}.{local}")
            },
        },
        Architecture::Dream | Architecture::Llama | Architecture::Qwen2 | Architecture::Sdar => {
            Names {
                embedding: "model.embed_tokens.weight".into(),
                final_norm: "model.norm.weight".into(),
                head: "lm_head.weight".into(),
                block: |i, role| {
                    let local = match role {
                        "attn_norm" => "input_layernorm.weight",
                        "q" => "self_attn.q_proj",
                        "k" => "self_attn.k_proj",
                        "v" => "self_attn.v_proj",
                        "o" => "self_attn.o_proj",
                        "ffn_norm" => "post_attention_layernorm.weight",
                        "gate" => "mlp.gate_proj",
                        "up" => "mlp.up_proj",
                        "down" => "mlp.down_proj",
                        "q_norm" => "self_attn.q_norm.weight",
                        "k_norm" => "self_attn.k_norm.weight",
                        _ => unreachable!("no Qwen2 role {role}"),
                    };
                    format!("model.layers.{i}.{local}")
                },
            }
        }
    }
}

/// A LLaDA or Dream network on a Burn device.
#[derive(Debug, Clone)]
pub struct Network {
    pub config: ModelConfig,
    /// `[vocab_rows, hidden]`.
    embedding: Tensor<2>,
    blocks: Vec<Block>,
    final_norm: Tensor<1>,
    /// `[hidden, vocab_rows]`.
    head: Tensor<2>,
    device: Device,
}

impl Network {
    /// Load every tensor the architecture needs from `weights`, checking each one's shape
    /// against `config`, onto `device` in `dtype`.
    pub fn load(
        config: ModelConfig,
        weights: &mut WeightStore,
        device: &Device,
        dtype: DType,
    ) -> Result<Self> {
        let arch = config.architecture.hf_name();
        let n = names(config.architecture);
        let (h, f, rows) = (config.hidden, config.intermediate, config.vocab_rows);
        let kv = config.kv_heads * config.head_dim();
        let (width, d) = (config.attention_width(), config.head_dim());
        let mut blocks = Vec::with_capacity(config.layers);
        for i in 0..config.layers {
            let name = |role: &str| (n.block)(i, role);
            let mut dense = |role: &str, out: usize, inp: usize, bias: bool| {
                load_linear(weights, &name(role), [out, inp], bias, arch, device, dtype)
            };
            let bias = config.qkv_bias;
            let (q, k, v) = (
                dense("q", width, h, bias)?,
                dense("k", kv, h, bias)?,
                dense("v", kv, h, bias)?,
            );
            let o = dense("o", h, width, false)?;
            let (gate, up, down) = (
                dense("gate", f, h, false)?,
                dense("up", f, h, false)?,
                dense("down", h, f, false)?,
            );
            let qk_norm = match config.qk_norm {
                true => Some((
                    weights.load(&name("q_norm"), [d], arch, device, dtype)?,
                    weights.load(&name("k_norm"), [d], arch, device, dtype)?,
                )),
                false => None,
            };
            blocks.push(Block {
                attn_norm: weights.load(&name("attn_norm"), [h], arch, device, dtype)?,
                ffn_norm: weights.load(&name("ffn_norm"), [h], arch, device, dtype)?,
                q,
                k,
                v,
                o,
                gate,
                up,
                down,
                qk_norm,
            });
        }
        let embedding = weights.load(&n.embedding, [rows, h], arch, device, dtype)?;
        let final_norm = weights.load(&n.final_norm, [h], arch, device, dtype)?;
        let head = if config.tied_embeddings {
            row_major_transpose(embedding.clone(), device, dtype)
        } else {
            let head = weights.load(&n.head, [rows, h], arch, device, dtype)?;
            row_major_transpose(head, device, dtype)
        };
        Ok(Network {
            config,
            embedding,
            blocks,
            final_norm,
            head,
            device: device.clone(),
        })
    }

    /// The device the weights live on.
    pub fn device(&self) -> &Device {
        &self.device
    }

    /// Token ids (the checkpoint's own, mask = `mask_token_id`) as a `[batch, length]` tensor.
    /// An id outside the embedding table is an error.
    pub fn ids_tensor(&self, ids: &[u32], batch: usize, length: usize) -> Result<Tensor<2, Int>> {
        if ids.len() != batch * length || batch == 0 || length == 0 {
            return Err(HfError::Input(format!(
                "{} token ids for a {batch} × {length} batch",
                ids.len()
            )));
        }
        if let Some(&bad) = ids.iter().find(|&&t| t as usize >= self.config.vocab_rows) {
            return Err(HfError::Input(format!(
                "token id {bad} is outside the checkpoint's {} embedding rows",
                self.config.vocab_rows
            )));
        }
        if length > self.config.max_length {
            return Err(HfError::Input(format!(
                "length {length} exceeds the checkpoint's maximum of {} positions (config.json)",
                self.config.max_length
            )));
        }
        let ids: Vec<i64> = ids.iter().map(|&t| t as i64).collect();
        Ok(Tensor::<2, Int>::from_data(
            TensorData::new(ids, [batch, length]),
            &self.device,
        ))
    }

    /// The network's logits `[batch, length, vocab_rows]` for `ids: [batch, length]`: the raw
    /// output of the reference modelling code's forward pass (Dream's not yet shifted).
    pub fn forward(&self, ids: Tensor<2, Int>) -> Tensor<3> {
        let [batch, length] = ids.dims();
        let positions: Vec<usize> = (0..length).collect();
        let mask = self.with_block_causal_mask(None, &[], batch, length, 0..length);
        self.forward_at(ids, &positions, mask, None)
    }

    /// [`Network::forward`] over a left-padded batch: the first `left_padding[b]` positions of
    /// row `b` are padding. They are hidden from every query (LLaDA's padding bias on the
    /// attention scores, the key half of the 4-D mask Dream's `generation_utils` builds) and
    /// positions count from each row's first real token (Dream's `tok_idx`; LLaDA's RoPE takes
    /// no position ids, and a row shifted as a whole scores the same), so every other position
    /// gets the logits of its row alone without the padding. The padding positions attend to
    /// the real tokens, so their rows stay finite; they are never read. No padding (empty or
    /// all 0) is `forward`.
    pub fn forward_padded(&self, ids: Tensor<2, Int>, left_padding: &[usize]) -> Result<Tensor<3>> {
        let [batch, length] = ids.dims();
        let (positions, mask) = self.padding_layout(left_padding, batch, length, 0..length)?;
        Ok(self.forward_at(ids, &positions, mask, None))
    }

    /// The RoPE positions of the queries `queries` (one row for the whole batch without
    /// padding, else one per sequence: `j − left_padding[b]`, from each row's first real token)
    /// and the attention mask `[batch, heads, queries, length]` hiding every row's padding keys
    /// (`None` without padding), for a `batch × length` canvas.
    pub(crate) fn padding_layout(
        &self,
        left_padding: &[usize],
        batch: usize,
        length: usize,
        queries: std::ops::Range<usize>,
    ) -> Result<(Vec<usize>, Option<Tensor<4, Bool>>)> {
        let (positions, mask) =
            self.padding_only_layout(left_padding, batch, length, queries.clone())?;
        // Block diffusion: also hide the keys of later blocks (block_diffusion.rs).
        let mask = self.with_block_causal_mask(mask, left_padding, batch, length, queries);
        Ok((positions, mask))
    }

    /// [`Network::padding_layout`] without a block-causal mask.
    fn padding_only_layout(
        &self,
        left_padding: &[usize],
        batch: usize,
        length: usize,
        queries: std::ops::Range<usize>,
    ) -> Result<(Vec<usize>, Option<Tensor<4, Bool>>)> {
        if left_padding.iter().all(|&p| p == 0) {
            return Ok((queries.collect(), None));
        }
        if left_padding.len() != batch || left_padding.iter().any(|&p| p >= length) {
            return Err(HfError::Input(format!(
                "left padding {left_padding:?} for a {batch} × {length} batch: one count per row, each leaving a real token"
            )));
        }
        let positions: Vec<usize> = left_padding
            .iter()
            .flat_map(|&pad| queries.clone().map(move |j| j.saturating_sub(pad)))
            .collect();
        let hidden: Vec<bool> = left_padding
            .iter()
            .flat_map(|&pad| (0..length).map(move |j| j < pad))
            .collect();
        let mask = Tensor::<4, Bool>::from_data(
            TensorData::new(hidden, [batch, 1, 1, length]),
            &self.device,
        )
        .expand([batch, self.config.heads, queries.len(), length]);
        Ok((positions, Some(mask)))
    }

    /// The forward pass with RoPE at `positions` (one row for the whole batch, or one per
    /// sequence) and an attention mask (`true`: hidden); with `fill`, every block's keys
    /// (RoPE applied) and values `[batch, kv_heads, length, d]` are pushed onto it.
    pub(crate) fn forward_at(
        &self,
        ids: Tensor<2, Int>,
        positions: &[usize],
        mask: Option<Tensor<4, Bool>>,
        mut fill: Option<&mut Vec<(Tensor<4>, Tensor<4>)>>,
    ) -> Tensor<3> {
        let c = &self.config;
        let mut x = self.embed(ids);
        let (cos, sin) = rope_tables_at(positions, x.dims()[1], c.head_dim(), c.rope_theta, &x);
        let causal = c.architecture.is_autoregressive();
        for block in &self.blocks {
            let (q, k, v) = block.qkv(x.clone(), &cos, &sin, c);
            if let Some(fill) = fill.as_deref_mut() {
                fill.push((k.clone(), v.clone()));
            }
            x = block.finish(x, q, (k, v), mask.clone(), causal, c);
        }
        self.head_logits(x)
    }

    /// The input embeddings `[batch, n, hidden]` of `ids: [batch, n]`.
    pub(crate) fn embed(&self, ids: Tensor<2, Int>) -> Tensor<3> {
        let x = embedding(self.embedding.clone(), ids);
        if self.config.scale_embeddings {
            x.mul_scalar((self.config.hidden as f64).sqrt())
        } else {
            x
        }
    }

    /// The final norm and the output head: logits `[batch, n, vocab_rows]` of the last
    /// block's output.
    pub(crate) fn head_logits(&self, x: Tensor<3>) -> Tensor<3> {
        let c = &self.config;
        let x = rms_norm(x, &self.final_norm, c.rms_norm_eps);
        let logits = linear(x, self.head.clone(), None);
        if c.scale_logits {
            logits.mul_scalar(1.0 / (c.hidden as f64).sqrt())
        } else {
            logits
        }
    }

    /// The transformer blocks, for the cached forward passes of [`crate::window`].
    pub(crate) fn blocks(&self) -> &[Block] {
        &self.blocks
    }
}

impl Block {
    /// q `[b, heads, n, d]` and k, v `[b, kv_heads, n, d]` of `x: [b, n, hidden]`, RoPE applied
    /// with tables for the positions of `x`.
    pub(crate) fn qkv(
        &self,
        x: Tensor<3>,
        cos: &Tensor<4>,
        sin: &Tensor<4>,
        c: &ModelConfig,
    ) -> (Tensor<4>, Tensor<4>, Tensor<4>) {
        let [b, n, _] = x.dims();
        let d = c.head_dim();
        let xn = rms_norm(x, &self.attn_norm, c.rms_norm_eps);
        let split = |t: Tensor<3>, heads: usize| t.reshape([b, n, heads, d]).swap_dims(1, 2);
        let (mut q, mut k) = (
            split(self.q.forward(xn.clone()), c.heads),
            split(self.k.forward(xn.clone()), c.kv_heads),
        );
        if let Some((q_norm, k_norm)) = &self.qk_norm {
            q = head_rms_norm(q, q_norm, c.rms_norm_eps);
            k = head_rms_norm(k, k_norm, c.rms_norm_eps);
        }
        let (q, k) = (rope(q, cos, sin), rope(k, cos, sin));
        let v = split(self.v.forward(xn), c.kv_heads);
        (q, k, v)
    }

    /// Attention of `q` over `k`, `v` (key/value heads shared by groups of query heads), then
    /// the residual update and the feed-forward layer.
    pub(crate) fn finish(
        &self,
        x: Tensor<3>,
        q: Tensor<4>,
        (k, v): (Tensor<4>, Tensor<4>),
        mask: Option<Tensor<4, Bool>>,
        causal: bool,
        c: &ModelConfig,
    ) -> Tensor<3> {
        let [b, n, _] = x.dims();
        let [_, kv_heads, keys, d] = k.dims();
        let (k, v) = if kv_heads == c.heads {
            (k, v)
        } else {
            // Query head j reads key/value head j / (heads / kv_heads).
            let share = |t: Tensor<4>| {
                t.unsqueeze_dim::<5>(2)
                    .expand([b, kv_heads, c.heads / kv_heads, keys, d])
                    .reshape([b, c.heads, keys, d])
            };
            (share(k), share(v))
        };
        let options = AttentionModuleOptions {
            is_causal: causal,
            ..Default::default()
        };
        // On LibTorch, our patched burn-tch (patches/burn-tch) keeps Burn's meaning of the mask
        // (`true`: hidden) and of a causal diagonal when there are more keys than queries;
        // upstream burn-tch 0.22.1 gets both wrong.
        let context = attention(q, k, v, mask, None, options);
        let x = x + self
            .o
            .forward(context.swap_dims(1, 2).reshape([b, n, c.heads * d]));
        let xn = rms_norm(x.clone(), &self.ffn_norm, c.rms_norm_eps);
        let gated = silu(self.gate.forward(xn.clone())) * self.up.forward(xn);
        x + self.down.forward(gated)
    }

    /// Feed `x: [b, n, hidden]` at positions `past..past + n`, attending to the cached keys
    /// and values `0..past` and (causally) to its own; writes its keys and values into `kv`.
    fn forward_cached(
        &self,
        x: Tensor<3>,
        kv: &mut LayerCache,
        past: usize,
        cos: &Tensor<4>,
        sin: &Tensor<4>,
        c: &ModelConfig,
    ) -> Tensor<3> {
        let (q, k, v) = self.qkv(x.clone(), cos, sin, c);
        let [b, kv_heads, n, d] = k.dims();
        let total = past + n;
        let slot = [0..b, 0..kv_heads, past..total, 0..d];
        // Each buffer is moved out and back, so that it stays uniquely held and
        // `slice_assign` writes into it instead of copying it.
        let buffer = std::mem::replace(&mut kv.k, k.clone());
        kv.k = buffer.slice_assign(slot.clone(), k);
        let buffer = std::mem::replace(&mut kv.v, v.clone());
        kv.v = buffer.slice_assign(slot, v);
        let keys = kv.k.clone().narrow(2, 0, total);
        let values = kv.v.clone().narrow(2, 0, total);
        let mask = (n > 1).then(|| {
            // Query i sits at position past + i and may not see key j > past + i.
            let future: Vec<bool> = (0..n)
                .flat_map(|i| (0..total).map(move |j| j > past + i))
                .collect();
            Tensor::<4, Bool>::from_data(TensorData::new(future, [1, 1, n, total]), &x.device())
                .expand([b, c.heads, n, total])
        });
        self.finish(x, q, (keys, values), mask, false, c)
    }
}

/// Keys and values of one block for a whole generation, `[batch, kv_heads, capacity, d]`.
#[derive(Debug, Clone)]
pub struct LayerCache {
    k: Tensor<4>,
    v: Tensor<4>,
}

/// The KV cache of an autoregressive network: every block's keys and values, preallocated
/// for `capacity` positions, and the RoPE tables of those positions.
#[derive(Debug, Clone)]
pub struct KvCache {
    layers: Vec<LayerCache>,
    /// Positions fed so far.
    pub len: usize,
    /// Positions the buffers hold.
    pub capacity: usize,
    cos: Tensor<4>,
    sin: Tensor<4>,
}

impl Network {
    /// An empty KV cache for `batch` sequences of up to `capacity` positions.
    pub fn empty_cache(&self, batch: usize, capacity: usize) -> Result<KvCache> {
        let c = &self.config;
        if capacity > c.max_length {
            return Err(HfError::Input(format!(
                "{capacity} positions exceed the checkpoint's maximum of {} (config.json)",
                c.max_length
            )));
        }
        let like = self.embedding.clone().unsqueeze_dim::<3>(0);
        let (cos, sin) = rope_tables(capacity, c.head_dim(), c.rope_theta, &like);
        let shape = [batch, c.kv_heads, capacity, c.head_dim()];
        let dtype = self.embedding.dtype();
        let zeros = || Tensor::<4>::zeros(shape, (&self.device, dtype));
        Ok(KvCache {
            layers: (0..c.layers)
                .map(|_| LayerCache {
                    k: zeros(),
                    v: zeros(),
                })
                .collect(),
            len: 0,
            capacity,
            cos,
            sin,
        })
    }

    /// Incremental causal forward pass: feeds `ids: [batch, n]` at positions `cache.len..`,
    /// using and extending the cache; logits `[batch, n, vocab_rows]`, the same as the full
    /// forward pass's at those positions.
    pub fn forward_cached(&self, ids: Tensor<2, Int>, cache: &mut KvCache) -> Result<Tensor<3>> {
        let c = &self.config;
        let [batch, n] = ids.dims();
        let past = cache.len;
        if past + n > cache.capacity {
            return Err(HfError::Input(format!(
                "the KV cache holds {} positions; {past} fed and {n} more asked",
                cache.capacity
            )));
        }
        if cache.layers.first().is_some_and(|l| l.k.dims()[0] != batch) {
            return Err(HfError::Input(
                "the KV cache was made for another batch size".into(),
            ));
        }
        let cos = cache.cos.clone().narrow(2, past, n);
        let sin = cache.sin.clone().narrow(2, past, n);
        let mut x = embedding(self.embedding.clone(), ids);
        for (block, kv) in self.blocks.iter().zip(cache.layers.iter_mut()) {
            x = block.forward_cached(x, kv, past, &cos, &sin, c);
        }
        cache.len += n;
        let x = rms_norm(x, &self.final_norm, c.rms_norm_eps);
        Ok(linear(x, self.head.clone(), None))
    }
}

/// A dense layer `{name}.weight` `[out, in]` (and `{name}.bias` `[out]`).
fn load_linear(
    weights: &mut WeightStore,
    name: &str,
    [out, inp]: [usize; 2],
    bias: bool,
    arch: &'static str,
    device: &Device,
    dtype: DType,
) -> Result<Linear> {
    let weight = weights.load(&format!("{name}.weight"), [out, inp], arch, device, dtype)?;
    let bias = match bias {
        true => Some(weights.load(&format!("{name}.bias"), [out], arch, device, dtype)?),
        false => None,
    };
    Ok(Linear {
        weight: row_major_transpose(weight, device, dtype),
        bias,
    })
}

/// The transpose of `t` (`[out, in]` as Hugging Face stores a dense layer) laid out row by row
/// as `[in, out]`, not a strided view: a CPU matmul then reads the weight's rows in order
/// instead of gathering it column by column at every call, which dominated passes over few
/// positions (a cached window step). Costs one copy through the host at load time.
fn row_major_transpose(t: Tensor<2>, device: &Device, dtype: DType) -> Tensor<2> {
    Tensor::<2>::from_data(t.transpose().into_data(), (device, dtype))
}

/// `x · rsqrt(mean(x²) + eps) · weight` over the last dimension, normalised in f32 and cast
/// back before the weight, as the reference code does in half precision.
fn rms_norm(x: Tensor<3>, weight: &Tensor<1>, eps: f64) -> Tensor<3> {
    let h = weight.dims()[0];
    let dtype = x.dtype();
    let x = x.cast(FloatDType::F32);
    let inv_rms = x
        .clone()
        .square()
        .mean_dim(2)
        .add_scalar(eps)
        .sqrt()
        .recip();
    let normed = (x * inv_rms).cast(float_dtype(dtype));
    normed * weight.clone().reshape([1, 1, h])
}

/// `x · rsqrt(mean(x²) + eps) · weight` over each head (`x: [batch, heads, n, head_dim]`), in
/// f32 and cast back before the weight: Qwen3's (SDAR's) `q_norm` and `k_norm`.
pub(crate) fn head_rms_norm(x: Tensor<4>, weight: &Tensor<1>, eps: f64) -> Tensor<4> {
    let d = weight.dims()[0];
    let dtype = x.dtype();
    let x = x.cast(FloatDType::F32);
    let inv_rms = x
        .clone()
        .square()
        .mean_dim(3)
        .add_scalar(eps)
        .sqrt()
        .recip();
    let normed = (x * inv_rms).cast(float_dtype(dtype));
    normed * weight.clone().reshape([1, 1, 1, d])
}

/// The float dtype of a float tensor's [`DType`].
fn float_dtype(dtype: DType) -> FloatDType {
    match dtype {
        DType::F16 => FloatDType::F16,
        DType::BF16 => FloatDType::BF16,
        DType::F64 => FloatDType::F64,
        _ => FloatDType::F32,
    }
}

/// RoPE's cos and sin tables `[1, 1, length, head_dim]` of positions `0..length`.
fn rope_tables(length: usize, d: usize, theta: f64, like: &Tensor<3>) -> (Tensor<4>, Tensor<4>) {
    let positions: Vec<usize> = (0..length).collect();
    rope_tables_at(&positions, length, d, theta, like)
}

/// RoPE's cos and sin tables `[rows, 1, length, head_dim]` of `positions` (`rows × length`),
/// in the dtype and on the device of `like`. Computed as the reference code does in f32:
/// `inv_freq` rounded to f32, angles as f32 products `position · inv_freq`, then cos/sin.
pub(crate) fn rope_tables_at(
    positions: &[usize],
    length: usize,
    d: usize,
    theta: f64,
    like: &Tensor<3>,
) -> (Tensor<4>, Tensor<4>) {
    let rows = positions.len() / length.max(1);
    let half = d / 2;
    let inv_freq: Vec<f32> = (0..half)
        .map(|i| {
            let exponent = (2 * i) as f32 / d as f32;
            1.0f32 / ((theta as f32) as f64).powf(exponent as f64) as f32
        })
        .collect();
    let mut cos = Vec::with_capacity(positions.len() * d);
    let mut sin = Vec::with_capacity(positions.len() * d);
    for &p in positions {
        for _ in 0..2 {
            for f in &inv_freq {
                let angle = (p as f32 * f) as f64;
                cos.push(angle.cos() as f32);
                sin.push(angle.sin() as f32);
            }
        }
    }
    let device = like.device();
    let dtype = like.dtype();
    let table = |v: Vec<f32>| {
        Tensor::<4>::from_data(TensorData::new(v, [rows, 1, length, d]), (&device, dtype))
    };
    (table(cos), table(sin))
}

/// `x · cos + rotate_half(x) · sin` with `rotate_half(x) = cat(−x[d/2..], x[..d/2])`.
fn rope(x: Tensor<4>, cos: &Tensor<4>, sin: &Tensor<4>) -> Tensor<4> {
    let d = x.dims()[3];
    let first = x.clone().narrow(3, 0, d / 2);
    let second = x.clone().narrow(3, d / 2, d / 2);
    let rotated = Tensor::cat(vec![second.neg(), first], 3);
    x * cos.clone() + rotated * sin.clone()
}
