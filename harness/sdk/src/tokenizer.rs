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
///
/// **Completion region.** By default a prompt's completion is what the request's `length`
/// leaves after it. With [`with_generation_length`](Self::with_generation_length) (LLaDA's
/// `gen_length`) every prompt gets exactly that many completion positions, whatever shares
/// its batch: the batch is left-padded (with the end-of-text id) so that every prompt ends
/// where the longest does, and the wrapped model is asked to hide the padding
/// ([`Model::generate_left_padded`]). A sample then never depends on its batch companions.
pub struct TextModel<M: Model> {
    /// The token-level model; its vocabulary must be the tokenizer's.
    pub model: M,
    /// The tokenizer prompts are encoded and completions decoded with.
    pub tokenizer: HfTokenizer,
    /// The task's stop strings: a completion is cut before the first one it contains.
    pub stop: Vec<String>,
    eos: u32,
    fixed: Option<FixedRegion>,
}

/// A completion region of `tokens` positions after every prompt, within `max_length`.
#[derive(Debug, Clone, Copy)]
struct FixedRegion {
    tokens: usize,
    max_length: usize,
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
            fixed: None,
        })
    }

    /// Give every prompt exactly `tokens` completion positions (see the type's documentation),
    /// whatever the request's length, which then only labels the cell; `max_length` is the
    /// model's number of positions, which the longest prompt of a batch plus `tokens` may not
    /// exceed. An error when `tokens` is 0.
    pub fn with_generation_length(mut self, tokens: usize, max_length: usize) -> Result<Self> {
        if tokens == 0 {
            return Err(PluginError::bad_config(
                "generation_length must be at least 1",
            ));
        }
        self.fixed = Some(FixedRegion { tokens, max_length });
        Ok(self)
    }

    /// The token-level request for `request`'s prompts (`prompts`, encoded) and the left
    /// padding of each: none, or with a fixed region each prompt padded in front to the
    /// longest, the length that longest plus the region, and a one-position-per-step sampler's
    /// steps that length.
    fn token_request(
        &self,
        request: &GenerateRequest,
        prompts: Vec<Vec<u32>>,
    ) -> Result<(GenerateRequest, Vec<usize>)> {
        let Some(FixedRegion { tokens, max_length }) = self.fixed else {
            let padding = vec![0; prompts.len()];
            let inner = GenerateRequest {
                prompts: Some(prompts),
                prompt_texts: None,
                ..request.clone()
            };
            return Ok((inner, padding));
        };
        let longest = prompts.iter().map(Vec::len).max().unwrap_or(0);
        let length = longest + tokens;
        if length > max_length {
            return Err(PluginError::bad_config(format!(
                "the longest prompt of the batch ({longest} tokens) plus generation_length {tokens} exceeds the model's {max_length} positions"
            )));
        }
        let padding: Vec<usize> = prompts.iter().map(|p| longest - p.len()).collect();
        let padded = prompts
            .into_iter()
            .zip(&padding)
            .map(|(p, &pad)| {
                let mut row = vec![self.eos; pad];
                row.extend(p);
                row
            })
            .collect();
        let mut sampler = request.sampler.clone();
        if crate::sampler::info(&sampler.name).one_step_per_token {
            // One position per step: the step count follows the length it decodes.
            sampler.steps = length;
        }
        let inner = GenerateRequest {
            length,
            sampler,
            prompts: Some(padded),
            prompt_texts: None,
            ..request.clone()
        };
        Ok((inner, padding))
    }

    /// The prompts of `request` as token ids, each leaving room for a completion at the
    /// request's length (unless the region is fixed, which sets the length itself).
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
                if self.fixed.is_none() && ids.len() >= request.length {
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
        let (inner, padding) = self.token_request(request, self.encode_prompts(request)?)?;
        let (sequences, reply) = self.model.generate_left_padded(&inner, &padding)?;
        let prompts = inner.prompts.unwrap_or_default();
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
                generated_tokens,
                ..stats.clone()
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
                    generated_tokens: 99,
                    ..Default::default()
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
            trace: false,
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

    /// A model that records the padding it is asked to hide, then answers as `Fixed`.
    struct Padded {
        fixed: Fixed,
        seen: Vec<(usize, Vec<usize>, Vec<Vec<u32>>)>,
    }

    impl Model for Padded {
        fn generate(&mut self, r: &GenerateRequest) -> Result<(Vec<Vec<u32>>, GenerateReply)> {
            self.fixed.generate(r)
        }
        fn generate_left_padded(
            &mut self,
            r: &GenerateRequest,
            left_padding: &[usize],
        ) -> Result<(Vec<Vec<u32>>, GenerateReply)> {
            let prompts = r.prompts.clone().unwrap();
            self.seen.push((r.length, left_padding.to_vec(), prompts));
            self.fixed.generate(r)
        }
    }

    #[test]
    fn a_generation_length_left_pads_every_prompt_to_the_same_region() {
        // Region: a = b </s> …; prompts of 2 and 1 tokens, 3 completion positions each.
        let (_dir, tok) = words();
        let model = Padded {
            fixed: Fixed(vec![2, 4, 3]),
            seen: Vec::new(),
        };
        let mut m = TextModel::new(model, tok, Vec::new())
            .unwrap()
            .with_generation_length(3, 16)
            .unwrap();
        // The request's length (1) only labels the cell.
        let (_, reply) = m.generate(&request(&["a b", "b"], 1)).unwrap();
        let (length, padding, prompts) = &m.model.seen[0];
        assert_eq!((*length, padding.clone()), (5, vec![0, 1]));
        assert_eq!(
            prompts,
            &vec![vec![2, 3], vec![1, 3]],
            "padded with end-of-text"
        );
        assert_eq!(reply.texts.unwrap(), vec!["a = b", "a = b"]);
        assert!(reply.samples.iter().all(|s| s.generated_tokens == 3));

        // A model that cannot hide padding runs a single prompt, and refuses a padded batch.
        let (_dir, tok) = words();
        let mut m = TextModel::new(Fixed(vec![2, 4, 3]), tok, Vec::new())
            .unwrap()
            .with_generation_length(3, 16)
            .unwrap();
        let (_, reply) = m.generate(&request(&["a b"], 1)).unwrap();
        assert_eq!(reply.texts.unwrap(), vec!["a = b"]);
        let e = m.generate(&request(&["a b", "b"], 1)).unwrap_err();
        assert!(e.to_string().contains("`batch_size: 1`"), "{e}");
        let e = m.generate(&request(&["a b a b a b a b a b a b a b"], 1));
        let e = e.unwrap_err().to_string();
        assert!(
            e.contains("generation_length 3") && e.contains("16 positions"),
            "{e}"
        );
        let (_dir, tok) = words();
        let e = TextModel::new(Fixed(Vec::new()), tok, Vec::new())
            .unwrap()
            .with_generation_length(0, 16)
            .err()
            .unwrap();
        assert!(e.to_string().contains("at least 1"), "{e}");
    }
}
