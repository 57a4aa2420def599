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
use burn::tensor::{DType, Device, FloatDType, Int, Tensor, TensorData};

/// A dense layer `y = x Wᵀ + b` with `W` as Hugging Face stores it, `[out, in]`.
#[derive(Debug, Clone)]
pub struct Linear {
    /// `[in, out]` (a transposed view of the stored `[out, in]`).
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
        Architecture::Dream => Names {
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
                    _ => unreachable!("no Dream role {role}"),
                };
                format!("model.layers.{i}.{local}")
            },
        },
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
        let mut blocks = Vec::with_capacity(config.layers);
        for i in 0..config.layers {
            let name = |role: &str| (n.block)(i, role);
            let mut dense = |role: &str, out: usize, inp: usize, bias: bool| {
                load_linear(weights, &name(role), [out, inp], bias, arch, device, dtype)
            };
            let bias = config.qkv_bias;
            let (q, k, v) = (
                dense("q", h, h, bias)?,
                dense("k", kv, h, bias)?,
                dense("v", kv, h, bias)?,
            );
            let o = dense("o", h, h, false)?;
            let (gate, up, down) = (
                dense("gate", f, h, false)?,
                dense("up", f, h, false)?,
                dense("down", h, f, false)?,
            );
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
            });
        }
        let embedding = weights.load(&n.embedding, [rows, h], arch, device, dtype)?;
        let final_norm = weights.load(&n.final_norm, [h], arch, device, dtype)?;
        let head = if config.tied_embeddings {
            embedding.clone().transpose()
        } else {
            weights
                .load(&n.head, [rows, h], arch, device, dtype)?
                .transpose()
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
        let c = &self.config;
        let [_, length] = ids.dims();
        let mut x = embedding(self.embedding.clone(), ids);
        if c.scale_embeddings {
            x = x.mul_scalar((c.hidden as f64).sqrt());
        }
        let (cos, sin) = rope_tables(length, c.head_dim(), c.rope_theta, &x);
        for block in &self.blocks {
            x = block.forward(x, &cos, &sin, c);
        }
        let x = rms_norm(x, &self.final_norm, c.rms_norm_eps);
        let logits = linear(x, self.head.clone(), None);
        if c.scale_logits {
            logits.mul_scalar(1.0 / (c.hidden as f64).sqrt())
        } else {
            logits
        }
    }
}

impl Block {
    fn forward(
        &self,
        x: Tensor<3>,
        cos: &Tensor<4>,
        sin: &Tensor<4>,
        c: &ModelConfig,
    ) -> Tensor<3> {
        let [b, l, h] = x.dims();
        let (heads, kv_heads, d) = (c.heads, c.kv_heads, c.head_dim());
        let xn = rms_norm(x.clone(), &self.attn_norm, c.rms_norm_eps);
        let split = |t: Tensor<3>, n: usize| t.reshape([b, l, n, d]).swap_dims(1, 2);
        let q = rope(split(self.q.forward(xn.clone()), heads), cos, sin);
        let k = rope(split(self.k.forward(xn.clone()), kv_heads), cos, sin);
        let v = split(self.v.forward(xn), kv_heads);
        let (k, v) = if kv_heads == heads {
            (k, v)
        } else {
            // Query head j reads key/value head j / (heads / kv_heads).
            let share = |t: Tensor<4>| {
                t.unsqueeze_dim::<5>(2)
                    .expand([b, kv_heads, heads / kv_heads, l, d])
                    .reshape([b, heads, l, d])
            };
            (share(k), share(v))
        };
        let context = attention(q, k, v, None, None, AttentionModuleOptions::default());
        let x = x + self.o.forward(context.swap_dims(1, 2).reshape([b, l, h]));
        let xn = rms_norm(x.clone(), &self.ffn_norm, c.rms_norm_eps);
        let gated = silu(self.gate.forward(xn.clone())) * self.up.forward(xn);
        x + self.down.forward(gated)
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
        weight: weight.transpose(),
        bias,
    })
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

/// The float dtype of a float tensor's [`DType`].
fn float_dtype(dtype: DType) -> FloatDType {
    match dtype {
        DType::F16 => FloatDType::F16,
        DType::BF16 => FloatDType::BF16,
        DType::F64 => FloatDType::F64,
        _ => FloatDType::F32,
    }
}

/// RoPE's cos and sin tables `[1, 1, length, head_dim]`, in the dtype and on the device of
/// `like`. Computed as the reference code does in f32: `inv_freq` rounded to f32, angles as
/// f32 products `position · inv_freq`, then cos/sin.
fn rope_tables(length: usize, d: usize, theta: f64, like: &Tensor<3>) -> (Tensor<4>, Tensor<4>) {
    let half = d / 2;
    let inv_freq: Vec<f32> = (0..half)
        .map(|i| {
            let exponent = (2 * i) as f32 / d as f32;
            1.0f32 / ((theta as f32) as f64).powf(exponent as f64) as f32
        })
        .collect();
    let mut cos = Vec::with_capacity(length * d);
    let mut sin = Vec::with_capacity(length * d);
    for p in 0..length {
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
        Tensor::<4>::from_data(TensorData::new(v, [1, 1, length, d]), (&device, dtype))
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
