//! Models that own a Hugging Face tokenizer (feature `tokenizers`).
//!
//! [`HfTokenizer`] reads a `tokenizer.json` (the format of the `tokenizers` library and of
//! every Hugging Face model repository) in pure Rust, with no network. [`TextModel`] turns any
//! token-level [`Model`] (a [`DenoiserModel`](crate::DenoiserModel), an
//! [`AutoregressiveModel`](crate::sampler::AutoregressiveModel), …) whose vocabulary is the
//! tokenizer's into a model that works on text: on `generate` it encodes
//! [`GenerateRequest::prompt_texts`], lets the wrapped model fill the generation region after
//! each prompt (prompt tokens fixed, exactly as for the harness's token prompts), cuts each
//! completion at the end-of-text token and at the task's stop strings, decodes it, and answers
//! with [`GenerateReply::texts`] — which the harness scores with the task.
//!
//! Encoding adds **no special tokens**: the post-processor's template (a BOS, or BERT-style
//! `[CLS] … [SEP]`) is not applied, because a prompt is continued by the model and a template's
//! trailing token would end it before the completion. A model that needs a BOS prepends it
//! itself. Decoding skips special tokens (padding, unknown-token and end-of-text markers marked
//! `special` in the file), as lm-evaluation-harness does.

use crate::{EvaluateReply, TrainStepReply};
use crate::{GenerateReply, GenerateRequest, Model, PluginError, Result, SampleStats};
use std::path::{Path, PathBuf};

/// Token names tried, in order, for the end-of-text id when none is given explicitly.
pub const EOS_NAMES: &[&str] = &[
    "<|endoftext|>",
    "</s>",
    "<eos>",
    "<|eot_id|>",
    "<|end_of_text|>",
    "<|im_end|>",
    "<|end|>",
    "[EOS]",
    "<|eos|>",
];

/// A Hugging Face tokenizer read from a `tokenizer.json`, with its end-of-text id.
pub struct HfTokenizer {
    inner: tokenizers::Tokenizer,
    path: PathBuf,
    vocab_size: usize,
    eos: Option<u32>,
}

impl std::fmt::Debug for HfTokenizer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("HfTokenizer")
            .field("path", &self.path)
            .field("vocab_size", &self.vocab_size)
            .field("eos", &self.eos)
            .finish()
    }
}

impl HfTokenizer {
    /// Read `path`. Errors name the file and say what is wrong: it cannot be read (missing, a
    /// directory, …), or it does not parse as a tokenizer (with the parser's message). The
    /// end-of-text id is the first of [`EOS_NAMES`] the vocabulary has (see
    /// [`with_eos_token`](Self::with_eos_token) to name it).
    pub fn from_file(path: impl AsRef<Path>) -> Result<Self> {
        let path = path.as_ref();
        let bytes = std::fs::read(path).map_err(|e| {
            PluginError::bad_data(format!(
                "tokenizer file {}: cannot read it: {e}",
                path.display()
            ))
        })?;
        let inner = tokenizers::Tokenizer::from_bytes(&bytes).map_err(|e| {
            PluginError::bad_data(format!(
                "tokenizer file {}: not a Hugging Face tokenizer.json: {e}",
                path.display()
            ))
        })?;
        let vocab_size = inner
            .get_vocab(true)
            .values()
            .max()
            .map_or(0, |&m| m as usize + 1);
        if vocab_size == 0 {
            return Err(PluginError::bad_data(format!(
                "tokenizer file {}: the vocabulary is empty",
                path.display()
            )));
        }
        let eos = EOS_NAMES.iter().find_map(|name| inner.token_to_id(name));
        Ok(HfTokenizer {
            inner,
            path: path.to_path_buf(),
            vocab_size,
            eos,
        })
    }

    /// Use `token` as the end-of-text token; an error when the vocabulary lacks it.
    pub fn with_eos_token(mut self, token: &str) -> Result<Self> {
        let id = self.inner.token_to_id(token).ok_or_else(|| {
            PluginError::bad_data(format!(
                "tokenizer file {}: no token `{token}` in its vocabulary to end the text with",
                self.path.display()
            ))
        })?;
        self.eos = Some(id);
        Ok(self)
    }

    /// The file it was read from.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Number of ids: one more than the largest id of the vocabulary, added tokens included.
    /// A model over this tokenizer predicts `0..vocab_size()` (and an MDM's mask id is
    /// `vocab_size()`).
    pub fn vocab_size(&self) -> usize {
        self.vocab_size
    }

    /// The end-of-text id: given with [`with_eos_token`](Self::with_eos_token), or the first
    /// of [`EOS_NAMES`] in the vocabulary; `None` when neither.
    pub fn eos_id(&self) -> Option<u32> {
        self.eos
    }

    /// The id of `token`, if the vocabulary (added tokens included) has it.
    pub fn token_id(&self, token: &str) -> Option<u32> {
        self.inner.token_to_id(token)
    }

    /// Token ids of `text`, without special tokens (see the module documentation).
    pub fn encode(&self, text: &str) -> Result<Vec<u32>> {
        self.inner
            .encode(text, false)
            .map(|e| e.get_ids().to_vec())
            .map_err(|e| {
                PluginError::bad_data(format!(
                    "tokenizer {}: cannot encode the text: {e}",
                    self.path.display()
                ))
            })
    }

    /// The text of `ids`, special tokens skipped.
    pub fn decode(&self, ids: &[u32]) -> Result<String> {
        self.inner.decode(ids, true).map_err(|e| {
            PluginError::bad_data(format!(
                "tokenizer {}: cannot decode ids: {e}",
                self.path.display()
            ))
        })
    }
}

/// A token-level [`Model`] over a tokenizer's vocabulary, answering text tasks with text (see
/// the module documentation). Per sample, `generated_tokens` counts the completion's tokens
/// only: up to the end-of-text token and, where a stop string cut the text, the tokens of
/// what is left (re-encoded); prompt and padding never count. NFE is the wrapped model's.
pub struct TextModel<M: Model> {
    /// The token-level model; its vocabulary must be the tokenizer's.
    pub model: M,
    /// The tokenizer prompts are encoded and completions decoded with.
    pub tokenizer: HfTokenizer,
    /// The task's stop strings: a completion is cut before the first one it contains.
    pub stop: Vec<String>,
    eos: u32,
}

impl<M: Model> TextModel<M> {
    /// Wrap `model`; an error when the tokenizer has no end-of-text id (name one with
    /// [`HfTokenizer::with_eos_token`]).
    pub fn new(model: M, tokenizer: HfTokenizer, stop: Vec<String>) -> Result<Self> {
        let eos = tokenizer.eos_id().ok_or_else(|| {
            PluginError::bad_data(format!(
                "tokenizer file {}: none of {} is in its vocabulary; name the end-of-text token explicitly",
                tokenizer.path().display(),
                EOS_NAMES.join(", ")
            ))
        })?;
        Ok(TextModel {
            model,
            tokenizer,
            stop,
            eos,
        })
    }

    /// The prompts of `request` as token ids, each leaving room for a completion.
    fn encode_prompts(&self, request: &GenerateRequest) -> Result<Vec<Vec<u32>>> {
        let prompts = request.prompt_texts.as_ref().ok_or_else(|| {
            PluginError::unsupported(
                "this model works on text with its own tokenizer: it answers text tasks only (the request has no prompt texts)",
            )
        })?;
        if prompts.len() != request.batch_size {
            return Err(PluginError::bad_config(format!(
                "{} prompt texts for a batch of {}",
                prompts.len(),
                request.batch_size
            )));
        }
        prompts
            .iter()
            .map(|p| {
                let ids = self.tokenizer.encode(&p.text)?;
                if ids.len() >= request.length {
                    return Err(PluginError::bad_config(format!(
                        "prompt `{}` takes {} tokens of tokenizer {}, leaving no room for a completion at length {}; raise `lengths`",
                        p.id,
                        ids.len(),
                        self.tokenizer.path().display(),
                        request.length
                    )));
                }
                Ok(ids)
            })
            .collect()
    }

    /// One completion: its text (cut at end-of-text and the first stop string) and its token
    /// count.
    fn completion(&self, region: &[u32]) -> Result<(String, u64)> {
        let end = region
            .iter()
            .position(|&t| t == self.eos)
            .unwrap_or(region.len());
        let full = self.tokenizer.decode(&region[..end])?;
        let text = dlm_plugin_api::completion::cut_at_first_stop(&full, &self.stop);
        if text.len() == full.len() {
            return Ok((full, end as u64));
        }
        let text = text.to_string();
        let count = self.tokenizer.encode(&text)?.len().min(end);
        Ok((text, count as u64))
    }
}

impl<M: Model> Model for TextModel<M> {
    fn generate(&mut self, request: &GenerateRequest) -> Result<(Vec<Vec<u32>>, GenerateReply)> {
        let prompts = self.encode_prompts(request)?;
        let inner = GenerateRequest {
            prompts: Some(prompts.clone()),
            prompt_texts: None,
            ..request.clone()
        };
        let (sequences, reply) = self.model.generate(&inner)?;
        if sequences.len() != prompts.len() || reply.samples.len() != prompts.len() {
            return Err(PluginError::bad_data(format!(
                "the model returned {} sequences and {} statistics for a batch of {}",
                sequences.len(),
                reply.samples.len(),
                prompts.len()
            )));
        }
        let mut texts = Vec::with_capacity(prompts.len());
        let mut samples = Vec::with_capacity(prompts.len());
        for ((seq, prompt), stats) in sequences.iter().zip(&prompts).zip(&reply.samples) {
            let region = seq.get(prompt.len()..).unwrap_or(&[]);
            let (text, generated_tokens) = self.completion(region)?;
            texts.push(text);
            samples.push(SampleStats {
                nfe: stats.nfe,
                generated_tokens,
            });
        }
        Ok((
            Vec::new(),
            GenerateReply {
                lengths: Vec::new(),
                samples,
                texts: Some(texts),
                ..reply
            },
        ))
    }

    fn train_step(
        &mut self,
        _step: usize,
        _batch: &[Vec<u32>],
        _prompt_lengths: &[usize],
    ) -> Result<TrainStepReply> {
        Err(self.no_training())
    }

    fn evaluate(
        &mut self,
        _batch: &[Vec<u32>],
        _prompt_lengths: &[usize],
    ) -> Result<EvaluateReply> {
        Err(self.no_training())
    }
}

impl<M: Model> TextModel<M> {
    fn no_training(&self) -> PluginError {
        PluginError::unsupported(format!(
            "a model with its own tokenizer ({}) cannot be trained by the harness, which trains on a task's own vocabulary only; train it elsewhere and load its weights",
            self.tokenizer.path().display()
        ))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const WORDS: &str = r#"{
      "version": "1.0", "truncation": null, "padding": null,
      "added_tokens": [
        {"id": 0, "content": "[UNK]", "single_word": false, "lstrip": false, "rstrip": false, "normalized": false, "special": true},
        {"id": 1, "content": "</s>", "single_word": false, "lstrip": false, "rstrip": false, "normalized": false, "special": true}
      ],
      "normalizer": null, "pre_tokenizer": {"type": "Whitespace"}, "post_processor": null, "decoder": null,
      "model": {"type": "WordLevel", "vocab": {"[UNK]": 0, "</s>": 1, "a": 2, "b": 3, "=": 4, "\n": 5}, "unk_token": "[UNK]"}
    }"#;

    fn words() -> (tempfile_dir::Dir, HfTokenizer) {
        let dir = tempfile_dir::Dir::new("words");
        let path = dir.0.join("tokenizer.json");
        std::fs::write(&path, WORDS).unwrap();
        let tok = HfTokenizer::from_file(&path).unwrap();
        (dir, tok)
    }

    /// A throwaway directory under the system temporary folder.
    mod tempfile_dir {
        pub struct Dir(pub std::path::PathBuf);
        impl Dir {
            pub fn new(name: &str) -> Dir {
                let p = std::env::temp_dir().join(format!(
                    "dlm-sdk-tok-{name}-{}-{:?}",
                    std::process::id(),
                    std::thread::current().id()
                ));
                let _ = std::fs::remove_dir_all(&p);
                std::fs::create_dir_all(&p).unwrap();
                Dir(p)
            }
        }
        impl Drop for Dir {
            fn drop(&mut self) {
                let _ = std::fs::remove_dir_all(&self.0);
            }
        }
    }

    #[test]
    fn encodes_decodes_and_finds_the_end_of_text() {
        let (_dir, tok) = words();
        assert_eq!(tok.vocab_size(), 6);
        assert_eq!(tok.eos_id(), Some(1));
        assert_eq!(tok.encode("a = b c").unwrap(), vec![2, 4, 3, 0]);
        assert_eq!(tok.decode(&[2, 4, 3, 1]).unwrap(), "a = b");
        let tok = tok.with_eos_token("=").unwrap();
        assert_eq!(tok.eos_id(), Some(4));
        let e = tok.with_eos_token("<eos>").unwrap_err().to_string();
        assert!(e.contains("tokenizer.json") && e.contains("<eos>"), "{e}");
    }

    #[test]
    fn errors_name_the_file_and_the_fault() {
        let dir = tempfile_dir::Dir::new("errors");
        let missing = dir.0.join("missing.json");
        let e = HfTokenizer::from_file(&missing).unwrap_err().to_string();
        assert!(
            e.contains("missing.json") && e.contains("cannot read"),
            "{e}"
        );
        let bad = dir.0.join("bad.json");
        std::fs::write(&bad, r#"{"model": {"type": "Nonsense"}}"#).unwrap();
        let e = HfTokenizer::from_file(&bad).unwrap_err().to_string();
        assert!(
            e.contains("bad.json") && e.contains("not a Hugging Face tokenizer.json"),
            "{e}"
        );
    }

    /// A model that writes `region` after each prompt, then end-of-text to the length.
    struct Fixed(Vec<u32>);

    impl Model for Fixed {
        fn generate(&mut self, r: &GenerateRequest) -> Result<(Vec<Vec<u32>>, GenerateReply)> {
            let seqs: Vec<Vec<u32>> = r
                .prompts
                .as_ref()
                .unwrap()
                .iter()
                .map(|p| {
                    let mut s = p.clone();
                    s.extend(&self.0);
                    s.resize(r.length, 1);
                    s
                })
                .collect();
            let samples = vec![
                SampleStats {
                    nfe: 7,
                    generated_tokens: 99
                };
                seqs.len()
            ];
            Ok((
                seqs,
                GenerateReply {
                    samples,
                    batch_nfe: 7,
                    device: "cpu".into(),
                    ..Default::default()
                },
            ))
        }
    }

    fn request(texts: &[&str], length: usize) -> GenerateRequest {
        GenerateRequest {
            batch_size: texts.len(),
            length,
            sampler: crate::SamplerSpec {
                name: "ddpm".into(),
                steps: 4,
                schedule: None,
                params: Default::default(),
            },
            seed: 0,
            first_index: 0,
            prompts: None,
            prompt_texts: Some(
                texts
                    .iter()
                    .enumerate()
                    .map(|(i, t)| crate::Prompt {
                        id: format!("p{i}"),
                        text: t.to_string(),
                        reference: None,
                    })
                    .collect(),
            ),
        }
    }

    #[test]
    fn text_models_cut_at_end_of_text_and_stop_strings_and_count_the_completion() {
        // Region: a = b \n a </s> b …
        let region = vec![2, 4, 3, 5, 2, 1, 3];
        let (_dir, tok) = words();
        let mut m = TextModel::new(Fixed(region.clone()), tok, Vec::new()).unwrap();
        let (seqs, reply) = m.generate(&request(&["a b", "b"], 16)).unwrap();
        assert!(seqs.is_empty());
        assert_eq!(reply.texts.as_deref().unwrap()[0], "a = b \n a");
        assert_eq!(reply.samples[0].generated_tokens, 5);
        assert_eq!(reply.samples[0].nfe, 7);
        let (_dir, tok) = words();
        let mut m = TextModel::new(Fixed(region), tok, vec!["\n".into()]).unwrap();
        let (_, reply) = m.generate(&request(&["a b"], 16)).unwrap();
        assert_eq!(reply.texts.unwrap(), vec!["a = b ".to_string()]);
        assert_eq!(reply.samples[0].generated_tokens, 3);
        let e = m
            .generate(&request(&["a b a b"], 4))
            .unwrap_err()
            .to_string();
        assert!(e.contains("raise `lengths`") && e.contains("`p0`"), "{e}");
        let e = m.train_step(0, &[], &[]).unwrap_err().to_string();
        assert!(e.contains("cannot be trained by the harness"), "{e}");
    }
}
