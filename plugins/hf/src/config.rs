//! `config.json` of a checkpoint folder: which architecture, and its sizes under the
//! architecture's own field names (LLaDA's OLMo-style `d_model`, `n_layers`, …; Dream's
//! Qwen2-style `hidden_size`, `num_hidden_layers`, …). Options the forward pass does not
//! implement are refused by name rather than silently ignored.

use crate::error::{HfError, Result};
use serde_json::{Map, Value};
use std::path::{Path, PathBuf};

/// The architectures this plugin runs (`architectures[0]` in config.json).
pub const SUPPORTED: &str = "LLaDAModelLM (LLaDA), DreamModel (Dream) and SDARForCausalLM (SDAR, \
                             block diffusion) as diffusion models, LlamaForCausalLM and \
                             Qwen2ForCausalLM as autoregressive ones";

/// Which network the checkpoint holds.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Architecture {
    /// LLaDA (`LLaDAModelLM`, its `llama` block): a LLaMA-style bidirectional transformer.
    Llada,
    /// Dream (`DreamModel`): Qwen2 layers with bidirectional attention, logits shifted by one.
    Dream,
    /// LLaMA (`LlamaForCausalLM`): causal, autoregressive.
    Llama,
    /// Qwen2 (`Qwen2ForCausalLM`): causal, autoregressive, q/k/v biases.
    Qwen2,
    /// SDAR (`SDARForCausalLM`): block diffusion on Qwen3 layers (q/k norms), attention
    /// block-causal in blocks of `block_size` ([`crate::block_diffusion`]).
    Sdar,
}

impl Architecture {
    /// The name in config.json's `architectures`.
    pub fn hf_name(self) -> &'static str {
        match self {
            Architecture::Llada => "LLaDAModelLM",
            Architecture::Dream => "DreamModel",
            Architecture::Llama => "LlamaForCausalLM",
            Architecture::Qwen2 => "Qwen2ForCausalLM",
            Architecture::Sdar => "SDARForCausalLM",
        }
    }

    /// Whether the network is autoregressive (causal attention, next-token logits).
    pub fn is_autoregressive(self) -> bool {
        matches!(self, Architecture::Llama | Architecture::Qwen2)
    }
}

/// The architecture and its sizes, as the forward pass needs them.
#[derive(Debug, Clone, PartialEq)]
pub struct ModelConfig {
    pub architecture: Architecture,
    /// Width of the residual stream.
    pub hidden: usize,
    pub layers: usize,
    /// Query heads.
    pub heads: usize,
    /// Key/value heads (grouped-query attention when fewer than `heads`).
    pub kv_heads: usize,
    /// Width of the SwiGLU feed-forward layer.
    pub intermediate: usize,
    /// Rows of the embedding table = logits per position (often padded past the tokenizer).
    pub vocab_rows: usize,
    pub rms_norm_eps: f64,
    pub rope_theta: f64,
    /// The mask token's id in the checkpoint's vocabulary, when config.json gives it.
    pub mask_token_id: Option<u32>,
    /// The beginning-of-sequence token (`bos_token_id`), when config.json gives it.
    pub bos_token_id: Option<u32>,
    /// q/k/v projections carry biases (Qwen2, LLaDA's `include_qkv_bias`).
    pub qkv_bias: bool,
    /// The output head is the embedding table (`weight_tying`, `tie_word_embeddings`).
    pub tied_embeddings: bool,
    /// LLaDA `input_emb_norm`: embeddings scaled by √hidden.
    pub scale_embeddings: bool,
    /// LLaDA `scale_logits`: logits scaled by 1/√hidden.
    pub scale_logits: bool,
    /// Longest sequence the checkpoint was made for (`max_sequence_length`,
    /// `max_position_embeddings`).
    pub max_length: usize,
    /// Block diffusion (SDAR's `block_size`): attention is block-causal in blocks of this many
    /// positions, counted from each row's first real token. `None`: no such mask.
    pub block_size: Option<usize>,
    /// Qwen3's RMSNorm on every query and key head before RoPE (`q_norm`, `k_norm`).
    pub qk_norm: bool,
    /// `head_dim` when config.json sets it apart from `hidden / heads` (SDAR-4B: 128, not 80).
    pub head_width: Option<usize>,
}

impl ModelConfig {
    /// Width of one attention head.
    pub fn head_dim(&self) -> usize {
        self.head_width.unwrap_or(self.hidden / self.heads)
    }

    /// Width of all query heads together (`heads × head_dim`; the hidden size unless
    /// `head_dim` is set apart).
    pub fn attention_width(&self) -> usize {
        self.heads * self.head_dim()
    }

    /// Read and check `path` (a config.json).
    pub fn from_file(path: &Path) -> Result<Self> {
        let text = std::fs::read_to_string(path).map_err(|source| HfError::Io {
            path: path.to_path_buf(),
            source,
        })?;
        Self::from_json(path, &text)
    }

    /// Parse config.json's text (`path` only names it in errors).
    pub fn from_json(path: &Path, text: &str) -> Result<Self> {
        let value: Value = serde_json::from_str(text).map_err(|e| HfError::Config {
            path: path.to_path_buf(),
            message: format!("not JSON: {e}"),
        })?;
        let Value::Object(map) = value else {
            return Err(HfError::Config {
                path: path.to_path_buf(),
                message: "not a JSON object".into(),
            });
        };
        let fields = Fields {
            path: path.to_path_buf(),
            map,
        };
        let name = fields.architecture_name()?;
        let config = match name.as_str() {
            "LLaDAModelLM" | "LLaDAModel" | "llada" => fields.llada()?,
            "DreamModel" | "Dream" => fields.dream()?,
            "LlamaForCausalLM" | "llama" => fields.causal(Architecture::Llama)?,
            "Qwen2ForCausalLM" | "qwen2" => fields.causal(Architecture::Qwen2)?,
            "SDARForCausalLM" | "sdar" => fields.sdar()?,
            _ => {
                return Err(HfError::UnsupportedArchitecture {
                    path: path.to_path_buf(),
                    found: name,
                    supported: SUPPORTED,
                })
            }
        };
        config.check(path)?;
        Ok(config)
    }

    fn check(&self, path: &Path) -> Result<()> {
        let bad = |message: String| {
            Err(HfError::Config {
                path: path.to_path_buf(),
                message,
            })
        };
        if self.hidden == 0 || self.layers == 0 || self.heads == 0 || self.kv_heads == 0 {
            return bad("hidden size, layers and heads must be positive".into());
        }
        if self.intermediate == 0 || self.vocab_rows == 0 || self.max_length == 0 {
            return bad(
                "the feed-forward width, vocabulary and maximum length must be positive".into(),
            );
        }
        if self.head_width.is_none() && !self.hidden.is_multiple_of(self.heads) {
            return bad(format!(
                "the hidden size {} is not divisible by the {} heads",
                self.hidden, self.heads
            ));
        }
        if !self.heads.is_multiple_of(self.kv_heads) {
            return bad(format!(
                "{} query heads cannot share {} key/value heads",
                self.heads, self.kv_heads
            ));
        }
        if !self.head_dim().is_multiple_of(2) {
            return bad(format!(
                "RoPE needs an even head width, this one is {}",
                self.head_dim()
            ));
        }
        if !(self.rms_norm_eps.is_finite() && self.rms_norm_eps >= 0.0) {
            return bad(format!("rms_norm_eps {} is not usable", self.rms_norm_eps));
        }
        if !(self.rope_theta.is_finite() && self.rope_theta > 0.0) {
            return bad(format!("rope_theta {} is not usable", self.rope_theta));
        }
        if let Some(mask) = self.mask_token_id {
            if mask as usize >= self.vocab_rows {
                return bad(format!(
                    "mask_token_id {mask} is outside the {} embedding rows",
                    self.vocab_rows
                ));
            }
        }
        Ok(())
    }
}

/// config.json's fields, with errors that name the file and the field.
struct Fields {
    path: PathBuf,
    map: Map<String, Value>,
}

impl Fields {
    fn err<T>(&self, message: String) -> Result<T> {
        Err(HfError::Config {
            path: self.path.clone(),
            message,
        })
    }

    fn architecture_name(&self) -> Result<String> {
        if let Some(list) = self.map.get("architectures") {
            return match list.as_array().and_then(|a| a.first()).and_then(Value::as_str) {
                Some(name) => Ok(name.to_string()),
                None => self.err(format!(
                    "`architectures` should be a list of names, e.g. [\"LLaDAModelLM\"], found {list}"
                )),
            };
        }
        match self.map.get("model_type").and_then(Value::as_str) {
            Some(t) => Ok(t.to_string()),
            None => self.err(format!(
                "neither `architectures` nor `model_type` says which network this is; dlm-hf runs {SUPPORTED}"
            )),
        }
    }

    fn get(&self, key: &str) -> Option<&Value> {
        self.map.get(key).filter(|v| !v.is_null())
    }

    fn usize(&self, key: &str) -> Result<usize> {
        match self.get(key) {
            Some(v) => match v.as_u64() {
                Some(n) => Ok(n as usize),
                None => self.err(format!(
                    "`{key}` should be a non-negative integer, found {v}"
                )),
            },
            None => self.err(format!("field `{key}` is missing")),
        }
    }

    fn usize_or(&self, key: &str, default: usize) -> Result<usize> {
        if self.get(key).is_some() {
            self.usize(key)
        } else {
            Ok(default)
        }
    }

    fn f64_or(&self, key: &str, default: f64) -> Result<f64> {
        match self.get(key) {
            Some(v) => match v.as_f64() {
                Some(x) => Ok(x),
                None => self.err(format!("`{key}` should be a number, found {v}")),
            },
            None => Ok(default),
        }
    }

    fn bool_or(&self, key: &str, default: bool) -> Result<bool> {
        match self.get(key) {
            Some(v) => match v.as_bool() {
                Some(b) => Ok(b),
                None => self.err(format!("`{key}` should be true or false, found {v}")),
            },
            None => Ok(default),
        }
    }

    fn str_or<'a>(&'a self, key: &str, default: &'a str) -> Result<&'a str> {
        match self.get(key) {
            Some(v) => match v.as_str() {
                Some(s) => Ok(s),
                None => self.err(format!("`{key}` should be a string, found {v}")),
            },
            None => Ok(default),
        }
    }

    fn token_id(&self, key: &str) -> Result<Option<u32>> {
        match self.get(key) {
            None => Ok(None),
            Some(v) => match v.as_u64().and_then(|n| u32::try_from(n).ok()) {
                Some(n) => Ok(Some(n)),
                // Some configs list several (e.g. Llama 3.1's eos); only single ids are used.
                None if v.is_array() => Ok(None),
                None => self.err(format!("`{key}` should be a token id, found {v}")),
            },
        }
    }

    /// Refuse `key` unless it has the one value the forward pass implements.
    fn expect(&self, key: &str, wanted: Value, what: &str) -> Result<()> {
        match self.get(key) {
            Some(v) if *v != wanted => self.err(format!(
                "`{key}: {v}` is not supported: dlm-hf implements {what} (`{key}: {wanted}`)"
            )),
            _ => Ok(()),
        }
    }

    /// LLaDA's OLMo-derived config (`LLaDAConfig`), `llama` blocks only.
    fn llada(&self) -> Result<ModelConfig> {
        use serde_json::json;
        self.expect("block_type", json!("llama"), "LLaDA's llama block")?;
        self.expect("layer_norm_type", json!("rms"), "RMSNorm")?;
        self.expect(
            "activation_type",
            json!("silu"),
            "the SwiGLU feed-forward layer",
        )?;
        self.expect("rope", json!(true), "rotary position embeddings")?;
        self.expect("alibi", json!(false), "RoPE without ALiBi")?;
        self.expect("yarn", json!(false), "plain RoPE")?;
        self.expect(
            "attention_layer_norm",
            json!(false),
            "attention without q/k norms",
        )?;
        self.expect("include_bias", json!(false), "bias-free linear layers")?;
        self.expect("bias_for_layer_norm", json!(false), "norms without bias")?;
        self.expect("block_group_size", json!(1), "ungrouped blocks")?;
        if self.str_or("layer_norm_type", "rms")? != "rms" {
            return self.err("only RMSNorm is implemented".into());
        }
        let hidden = self.usize("d_model")?;
        let heads = self.usize("n_heads")?;
        let kv_heads = if self.bool_or("multi_query_attention", false)? {
            1
        } else {
            self.usize_or("n_kv_heads", heads)?
        };
        let intermediate = match self.get("mlp_hidden_size") {
            Some(_) => self.usize("mlp_hidden_size")?,
            None => self.usize_or("mlp_ratio", 4)? * hidden,
        };
        let vocab_rows = match self.get("embedding_size") {
            Some(_) => self.usize("embedding_size")?,
            None => self.usize("vocab_size")?,
        };
        Ok(ModelConfig {
            architecture: Architecture::Llada,
            hidden,
            layers: self.usize("n_layers")?,
            heads,
            kv_heads,
            intermediate,
            vocab_rows,
            rms_norm_eps: self.f64_or("rms_norm_eps", 1e-5)?,
            rope_theta: self.f64_or("rope_theta", 10_000.0)?,
            mask_token_id: self.token_id("mask_token_id")?,
            bos_token_id: self.token_id("bos_token_id")?,
            qkv_bias: self.bool_or("include_qkv_bias", false)?,
            tied_embeddings: self.bool_or("weight_tying", false)?,
            scale_embeddings: self.bool_or("input_emb_norm", false)?,
            scale_logits: self.bool_or("scale_logits", false)?,
            max_length: self.usize_or("max_sequence_length", 4096)?,
            block_size: None,
            qk_norm: false,
            head_width: None,
        })
    }

    /// A LLaMA or Qwen2 causal LM (`LlamaConfig`, `Qwen2Config`).
    fn causal(&self, architecture: Architecture) -> Result<ModelConfig> {
        use serde_json::json;
        let mut config = self.dream()?;
        self.expect("mlp_bias", json!(false), "bias-free MLPs")?;
        let hidden = config.hidden;
        if let Some(d) = self.get("head_dim") {
            if d.as_u64() != Some((hidden / config.heads) as u64) {
                return self.err(format!(
                    "`head_dim: {d}` is not supported: dlm-hf implements head_dim = hidden_size / num_attention_heads"
                ));
            }
        }
        config.architecture = architecture;
        config.qkv_bias = match architecture {
            Architecture::Llama => self.bool_or("attention_bias", false)?,
            _ => true,
        };
        if architecture == Architecture::Llama {
            config.rms_norm_eps = self.f64_or("rms_norm_eps", 1e-6)?;
            config.max_length = self.usize_or("max_position_embeddings", 2048)?;
        }
        Ok(config)
    }

    /// SDAR's Qwen3-style config (`SDARConfig`, JetAstra/SDAR's `configuration_sdar.py`):
    /// Dream's fields, with `head_dim`, `block_size` and the mask token required.
    fn sdar(&self) -> Result<ModelConfig> {
        use serde_json::json;
        self.expect(
            "attention_bias",
            json!(false),
            "bias-free attention projections",
        )?;
        let mut config = self.dream()?;
        config.architecture = Architecture::Sdar;
        config.qkv_bias = false;
        config.qk_norm = true;
        config.head_width = match self.get("head_dim") {
            Some(_) if self.usize("head_dim")? == 0 => {
                return self.err("`head_dim: 0`: a head needs a width".into())
            }
            Some(_) => Some(self.usize("head_dim")?),
            None => None,
        };
        config.block_size = match self.usize("block_size")? {
            0 => return self.err("`block_size: 0`: a block needs at least one position".into()),
            b => Some(b),
        };
        if config.mask_token_id.is_none() {
            return self.err("field `mask_token_id` is missing (SDAR's is `<|MASK|>`)".into());
        }
        Ok(config)
    }

    /// Dream's Qwen2-style config (`DreamConfig`).
    fn dream(&self) -> Result<ModelConfig> {
        use serde_json::json;
        self.expect("hidden_act", json!("silu"), "the SwiGLU feed-forward layer")?;
        self.expect("use_sliding_window", json!(false), "full attention")?;
        if let Some(scaling) = self.get("rope_scaling") {
            return self.err(format!(
                "`rope_scaling: {scaling}` is not supported: dlm-hf implements plain RoPE (`rope_scaling: null`)"
            ));
        }
        let heads = self.usize("num_attention_heads")?;
        Ok(ModelConfig {
            architecture: Architecture::Dream,
            hidden: self.usize("hidden_size")?,
            layers: self.usize("num_hidden_layers")?,
            heads,
            kv_heads: self.usize_or("num_key_value_heads", heads)?,
            intermediate: self.usize("intermediate_size")?,
            vocab_rows: self.usize("vocab_size")?,
            rms_norm_eps: self.f64_or("rms_norm_eps", 1e-6)?,
            rope_theta: self.f64_or("rope_theta", 10_000.0)?,
            mask_token_id: self.token_id("mask_token_id")?,
            bos_token_id: self.token_id("bos_token_id")?,
            qkv_bias: true,
            tied_embeddings: self.bool_or("tie_word_embeddings", false)?,
            scale_embeddings: false,
            scale_logits: false,
            max_length: self.usize_or("max_position_embeddings", 32_768)?,
            block_size: None,
            qk_norm: false,
            head_width: None,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(text: &str) -> Result<ModelConfig> {
        ModelConfig::from_json(Path::new("dir/config.json"), text)
    }

    #[test]
    fn reads_both_architectures_under_their_own_field_names() {
        let l = parse(
            r#"{"architectures": ["LLaDAModelLM"], "d_model": 64, "n_layers": 2, "n_heads": 4,
                "n_kv_heads": 4, "mlp_hidden_size": 128, "embedding_size": 512, "vocab_size": 500,
                "rms_norm_eps": 1e-5, "rope_theta": 500000.0, "mask_token_id": 481,
                "block_type": "llama", "layer_norm_type": "rms", "activation_type": "silu"}"#,
        )
        .unwrap();
        assert_eq!(l.architecture, Architecture::Llada);
        assert_eq!(
            (l.hidden, l.heads, l.kv_heads, l.intermediate),
            (64, 4, 4, 128)
        );
        assert_eq!(
            (l.vocab_rows, l.mask_token_id, l.qkv_bias),
            (512, Some(481), false)
        );
        let d = parse(
            r#"{"architectures": ["DreamModel"], "hidden_size": 64, "num_hidden_layers": 2,
                "num_attention_heads": 4, "num_key_value_heads": 2, "intermediate_size": 96,
                "vocab_size": 512, "rope_scaling": null, "mask_token_id": 481}"#,
        )
        .unwrap();
        assert_eq!(d.architecture, Architecture::Dream);
        assert_eq!((d.kv_heads, d.head_dim(), d.qkv_bias), (2, 16, true));
        assert_eq!(d.rms_norm_eps, 1e-6);
    }

    #[test]
    fn reads_llama_and_qwen2_causal_lms() {
        let l = parse(
            r#"{"architectures": ["LlamaForCausalLM"], "hidden_size": 64, "num_hidden_layers": 2,
                "num_attention_heads": 4, "num_key_value_heads": 1, "intermediate_size": 96,
                "vocab_size": 512, "bos_token_id": 1, "eos_token_id": [2, 3], "rms_norm_eps": 1e-5,
                "rope_theta": 500000.0, "head_dim": 16}"#,
        )
        .unwrap();
        assert_eq!(l.architecture, Architecture::Llama);
        assert!(l.architecture.is_autoregressive() && !l.qkv_bias);
        assert_eq!(
            (l.kv_heads, l.bos_token_id, l.rms_norm_eps),
            (1, Some(1), 1e-5)
        );
        let q = parse(
            r#"{"architectures": ["Qwen2ForCausalLM"], "hidden_size": 64, "num_hidden_layers": 2,
                "num_attention_heads": 4, "intermediate_size": 96, "vocab_size": 512}"#,
        )
        .unwrap();
        assert!(q.qkv_bias && q.architecture.is_autoregressive());
        let e = parse(
            r#"{"architectures": ["LlamaForCausalLM"], "hidden_size": 64, "num_hidden_layers": 2,
                "num_attention_heads": 4, "intermediate_size": 96, "vocab_size": 512,
                "rope_scaling": {"rope_type": "llama3", "factor": 8.0}}"#,
        )
        .unwrap_err()
        .to_string();
        assert!(e.contains("rope_scaling") && e.contains("llama3"), "{e}");
        let e = parse(
            r#"{"architectures": ["LlamaForCausalLM"], "hidden_size": 64, "num_hidden_layers": 2,
                "num_attention_heads": 4, "intermediate_size": 96, "vocab_size": 512, "head_dim": 32}"#,
        )
        .unwrap_err()
        .to_string();
        assert!(e.contains("head_dim: 32"), "{e}");
    }

    #[test]
    fn reads_sdar_block_diffusion() {
        let base = r#""architectures": ["SDARForCausalLM"], "hidden_size": 64,
            "num_hidden_layers": 2, "num_attention_heads": 4, "num_key_value_heads": 2,
            "intermediate_size": 96, "vocab_size": 512, "rope_scaling": null"#;
        let s = parse(&format!(
            r#"{{{base}, "head_dim": 24, "block_size": 4, "mask_token_id": 481}}"#
        ))
        .unwrap();
        assert_eq!(s.architecture, Architecture::Sdar);
        assert!(!s.architecture.is_autoregressive() && s.qk_norm && !s.qkv_bias);
        assert_eq!(
            (s.head_dim(), s.attention_width(), s.block_size),
            (24, 96, Some(4))
        );
        let e = parse(&format!(r#"{{{base}, "mask_token_id": 481}}"#))
            .unwrap_err()
            .to_string();
        assert!(e.contains("block_size") && e.contains("missing"), "{e}");
        let e = parse(&format!(r#"{{{base}, "block_size": 4}}"#))
            .unwrap_err()
            .to_string();
        assert!(e.contains("mask_token_id"), "{e}");
        let e = parse(&format!(
            r#"{{{base}, "block_size": 4, "mask_token_id": 481, "attention_bias": true}}"#
        ))
        .unwrap_err()
        .to_string();
        assert!(e.contains("attention_bias"), "{e}");
    }

    #[test]
    fn refuses_what_it_does_not_implement_by_name() {
        let e = parse(r#"{"architectures": ["GPT2LMHeadModel"]}"#)
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("dir/config.json") && e.contains("GPT2LMHeadModel"),
            "{e}"
        );
        assert!(e.contains("LLaDAModelLM"), "{e}");
        let e = parse(r#"{"architectures": ["LLaDAModelLM"], "block_type": "sequential"}"#)
            .unwrap_err()
            .to_string();
        assert!(e.contains("block_type") && e.contains("llama"), "{e}");
        let e = parse(r#"{"architectures": ["DreamModel"], "hidden_size": 64}"#)
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("num_attention_heads") && e.contains("missing"),
            "{e}"
        );
        let e = parse(
            r#"{"architectures": ["DreamModel"], "hidden_size": 64, "num_hidden_layers": 1,
                "num_attention_heads": 3, "intermediate_size": 8, "vocab_size": 9}"#,
        )
        .unwrap_err()
        .to_string();
        assert!(e.contains("not divisible"), "{e}");
        let e = parse("{not json").unwrap_err().to_string();
        assert!(e.contains("dir/config.json: not JSON"), "{e}");
    }
}
