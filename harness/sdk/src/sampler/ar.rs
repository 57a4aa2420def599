//! `ar` — ancestral sampling of an [`Autoregressive`] model, one token per call; the model's
//! `next` receives only the newly appended tokens, which is the hook for a KV cache. It takes
//! exactly `L` steps. It runs over an autoregressive network, not a denoiser, so it is not in
//! the denoiser [`super::Registry`]; it is described by the same [`Sampler`] trait.

use super::draw::{Drawn, RowError, Shaping};
use super::run::Canvas;
use super::{Param, Params, Sampler, Steps, Want};
use crate::{GenerateReply, GenerateRequest, PluginError, Result, SampleStats, SampleTrace};
use rand::Rng;
use std::time::Instant;

/// The `ar` sampler's description.
#[derive(Debug, Clone, Copy)]
pub struct Ar;

impl Sampler for Ar {
    fn name(&self) -> &'static str {
        "ar"
    }
    fn params(&self) -> Vec<Param> {
        Vec::new()
    }
    fn steps(&self) -> Steps {
        Steps::OnePerToken
    }
    fn takes_schedule(&self) -> bool {
        false
    }
}

/// An autoregressive model: next-token distributions given the prefix.
///
/// `begin` starts a batch; each `next` call appends one token per row (`None` before the first
/// position) and writes the next-token distribution of every row into `out` (`batch × vocab`).
/// Because only the new tokens are passed, a model can keep a KV cache and make each call cost
/// O(prefix) instead of re-running the whole prefix.
pub trait Autoregressive: Send {
    /// Number of real tokens; `next` writes `vocab_size()` probabilities per row.
    fn vocab_size(&self) -> usize;
    /// Device label recorded with every timing, e.g. `cpu` or `cuda:0`.
    fn device(&self) -> String {
        "cpu".to_string()
    }
    /// Start a batch of `batch` sequences of `length` tokens: drop any cache of the previous
    /// batch. Exactly `length` calls of `next` follow.
    fn begin(&mut self, batch: usize, length: usize) -> Result<()>;
    /// Append `appended` (one token per row; `None` on the first call, before any token) and
    /// write into `out` (`batch × vocab_size()`) each row's distribution over the next token:
    /// finite, non-negative, with positive mass (it need not be normalised).
    fn next(&mut self, appended: Option<&[u32]>, out: &mut [f64]) -> Result<()>;
    /// Block until queued device work is done, so timings are honest. CPU models need nothing.
    fn synchronize(&mut self) {}
}

/// Turns an [`Autoregressive`] model into a [`crate::Model`] with the `ar` sampler.
pub struct AutoregressiveModel<A: Autoregressive> {
    /// The wrapped model; every `generate` runs [`generate_ar`] over it.
    pub model: A,
}

impl<A: Autoregressive> crate::Model for AutoregressiveModel<A> {
    fn generate(&mut self, request: &GenerateRequest) -> Result<(Vec<Vec<u32>>, GenerateReply)> {
        generate_ar(&mut self.model, request)
    }
    fn loglikelihood(
        &mut self,
        _request: &crate::LoglikelihoodRequest,
        rows: &[(Vec<u32>, Vec<u32>)],
    ) -> Result<crate::LoglikelihoodReply> {
        answer_autoregressive(&mut self.model, rows)
    }
    fn generate_left_padded(
        &mut self,
        request: &GenerateRequest,
        left_padding: &[usize],
    ) -> Result<(Vec<Vec<u32>>, GenerateReply)> {
        causal_left_padded(request, left_padding, |r| generate_ar(&mut self.model, r))
    }
}

/// The prompts of `request`, checked against `left_padding` (one count per prompt, each at most
/// its prompt's length): what [`crate::Model::generate_left_padded`] is given.
pub(crate) fn padded_prompts<'a>(
    request: &'a GenerateRequest,
    left_padding: &[usize],
) -> Result<&'a [Vec<u32>]> {
    let prompts = request.prompts.as_deref().ok_or_else(|| {
        PluginError::bad_config(
            "left padding is given with the prompts it pads, and there are none",
        )
    })?;
    if left_padding.len() != prompts.len() {
        return Err(PluginError::bad_config(format!(
            "{} left-padding counts for {} prompts",
            left_padding.len(),
            prompts.len()
        )));
    }
    if let Some(b) = (0..prompts.len()).find(|&b| left_padding[b] > prompts[b].len()) {
        return Err(PluginError::bad_config(format!(
            "prompt {b} has {} tokens, fewer than its {} padding tokens",
            prompts[b].len(),
            left_padding[b]
        )));
    }
    Ok(prompts)
}

/// Left padding for a causal model, which needs no attention mask: a token depends only on
/// the tokens before it in its own row, and each sample draws from its own stream in position
/// order. So `generate` runs on the prompts without their padding (each then continues to the
/// full length), and each row keeps its first `length − padded prompt` generated tokens, laid
/// out behind its padding: exactly the row generated alone. Its NFE counts only the calls
/// that produced kept tokens, its positions computed only the row's own `length − padding`;
/// the batch's NFE and positions stay what the batch cost.
pub(crate) fn causal_left_padded(
    request: &GenerateRequest,
    left_padding: &[usize],
    generate: impl FnOnce(&GenerateRequest) -> Result<(Vec<Vec<u32>>, GenerateReply)>,
) -> Result<(Vec<Vec<u32>>, GenerateReply)> {
    let prompts = padded_prompts(request, left_padding)?;
    let unpadded = prompts
        .iter()
        .zip(left_padding)
        .map(|(p, &pad)| p[pad..].to_vec())
        .collect();
    let (sequences, mut reply) = generate(&GenerateRequest {
        prompts: Some(unpadded),
        ..request.clone()
    })?;
    let length = request.length;
    if sequences.len() != prompts.len() || reply.samples.len() != prompts.len() {
        return Err(PluginError::bad_data(format!(
            "the model returned {} sequences and {} statistics for a batch of {}",
            sequences.len(),
            reply.samples.len(),
            prompts.len()
        )));
    }
    let mut rows = Vec::with_capacity(sequences.len());
    for (b, sequence) in sequences.iter().enumerate() {
        let pad = left_padding[b];
        if sequence.len() != length {
            return Err(PluginError::bad_data(format!(
                "the model returned a sequence of {} tokens for length {length}",
                sequence.len()
            )));
        }
        let mut row = prompts[b][..pad].to_vec();
        row.extend_from_slice(&sequence[..length - pad]);
        rows.push(row);
        let kept = length.saturating_sub(prompts[b].len()) as u64;
        let stats = &mut reply.samples[b];
        stats.nfe = stats.nfe.min(kept);
        stats.generated_tokens = kept;
        // The row alone is `length − pad` positions, each computed once.
        stats.positions_computed = stats
            .positions_computed
            .map(|p| p.min((length - pad) as u64));
        if let Some(trace) = &mut stats.trace {
            // Laid out as the row's tokens: behind its padding, the steps past `kept` cut.
            let mut steps = vec![0; pad];
            steps.extend_from_slice(&trace.commit_steps[..length - pad]);
            trace.commit_steps = steps;
            trace.steps = stats.nfe;
        }
    }
    Ok((rows, reply))
}

/// What `ar` needs from an autoregressive network, wherever its output lives (as
/// `DenoiseNet` for denoisers): the next-token output of every row, then draws from it.
pub(crate) trait NextNet {
    fn vocab_size(&self) -> usize;
    fn device(&self) -> String;
    fn begin(&mut self, batch: usize, length: usize) -> Result<()>;
    fn next(&mut self, appended: Option<&[u32]>) -> Result<()>;
    /// Draw at rows `rows` (batch rows) of the last `next` output.
    fn draw(
        &mut self,
        rows: &[usize],
        uniforms: &[f64],
        params: &Shaping,
    ) -> std::result::Result<Drawn, RowError>;
    fn synchronize(&mut self);
}

/// The host path: an [`Autoregressive`] model writing f64 probabilities.
struct HostNext<'a, A: Autoregressive + ?Sized> {
    model: &'a mut A,
    out: Vec<f64>,
}

impl<A: Autoregressive + ?Sized> NextNet for HostNext<'_, A> {
    fn vocab_size(&self) -> usize {
        self.model.vocab_size()
    }
    fn device(&self) -> String {
        self.model.device()
    }
    fn begin(&mut self, batch: usize, length: usize) -> Result<()> {
        self.out = vec![0.0; batch * self.model.vocab_size()];
        self.model.begin(batch, length)
    }
    fn next(&mut self, appended: Option<&[u32]>) -> Result<()> {
        self.model.next(appended, &mut self.out)
    }
    fn draw(
        &mut self,
        rows: &[usize],
        uniforms: &[f64],
        params: &Shaping,
    ) -> std::result::Result<Drawn, RowError> {
        let vocab = self.model.vocab_size();
        super::draw::host_draw(&self.out, vocab, rows, uniforms, params, Want::default())
    }
    fn synchronize(&mut self) {
        self.model.synchronize()
    }
}

/// Ancestral sampling of an autoregressive model (`ar`; `steps` must equal the length).
pub fn generate_ar<A: Autoregressive + ?Sized>(
    model: &mut A,
    request: &GenerateRequest,
) -> Result<(Vec<Vec<u32>>, GenerateReply)> {
    generate_ar_with(
        &mut HostNext {
            model,
            out: Vec::new(),
        },
        request,
    )
}

/// `ar` over either path.
pub(crate) fn generate_ar_with<N: NextNet>(
    model: &mut N,
    request: &GenerateRequest,
) -> Result<(Vec<Vec<u32>>, GenerateReply)> {
    let (batch, length) = (request.batch_size, request.length);
    let spec = &request.sampler;
    if spec.name != Ar.name() {
        return Err(PluginError::unsupported(format!(
            "an autoregressive model samples with `ar`, not `{}`",
            spec.name
        )));
    }
    if spec.steps != length {
        return Err(PluginError::bad_config(format!(
            "ar takes one step per token: steps must equal the length ({length}); got {}",
            spec.steps
        )));
    }
    if batch == 0 || length == 0 {
        return Err(PluginError::bad_config(
            "batch size and length must be positive",
        ));
    }
    let params = Params::parse(&Ar, &spec.params)?;
    let vocab = model.vocab_size();
    let mut canvas = Canvas::new(batch, length, vocab as u32, request.prompts.as_deref())?;
    let mut rngs = canvas.streams(request);
    let start = Instant::now();
    model.begin(batch, length)?;
    let mut nfe = vec![0u64; batch];
    let mut batch_nfe = 0;
    // Under trace: each position's step (its sample's draw count); no predictions, since an
    // autoregressive model predicts nothing at positions it has not reached.
    let mut commit_steps = request.trace.then(|| vec![0u64; batch * length]);
    for j in 0..length {
        let appended: Option<Vec<u32>> = (j > 0).then(|| {
            (0..batch)
                .map(|b| canvas.tokens[b * length + j - 1])
                .collect()
        });
        model.next(appended.as_deref())?;
        batch_nfe += 1;
        // Prompt tokens are fed, not sampled.
        let rows: Vec<usize> = (0..batch)
            .filter(|&b| canvas.tokens[b * length + j] == canvas.mask)
            .collect();
        if rows.is_empty() {
            continue;
        }
        let uniforms: Vec<f64> = rows.iter().map(|&b| rngs[b].random::<f64>()).collect();
        let drawn = model.draw(&rows, &uniforms, &params.shaping).map_err(|e| {
            PluginError::bad_data(format!(
                "sample {}, position {j}: {}",
                rows[e.at], e.message
            ))
        })?;
        for (&b, &token) in rows.iter().zip(&drawn.tokens) {
            canvas.tokens[b * length + j] = token;
            nfe[b] += 1;
            if let Some(steps) = &mut commit_steps {
                steps[b * length + j] = nfe[b];
            }
        }
    }
    model.synchronize();
    let wall_seconds = start.elapsed().as_secs_f64();
    let samples = (0..batch)
        .map(|b| SampleStats {
            nfe: nfe[b],
            generated_tokens: (length - canvas.prompt_len[b]) as u64,
            // One new position per call and row, whatever the cache holds: the prompt is fed
            // one position per call too (calls not in `nfe`, which counts draws), so the
            // sample's sequence costs `length` positions, as it would in one prefill pass.
            positions_computed: Some(length as u64),
            edits: None,
            trace: commit_steps.as_ref().map(|steps| {
                SampleTrace::new(nfe[b], steps[b * length..(b + 1) * length].to_vec())
            }),
        })
        .collect();
    Ok((
        canvas.tokens.chunks(length).map(<[u32]>::to_vec).collect(),
        GenerateReply {
            lengths: vec![length; batch],
            samples,
            batch_nfe,
            batch_positions: Some(batch_nfe * batch as u64),
            wall_seconds,
            device: model.device(),
            texts: None,
            whole_programs: false,
            settings: Some(super::params::settings(&Ar, &params, spec)),
        },
    ))
}

/// Exact `log p(continuation | context)` of each row under an autoregressive model (the chain
/// rule; rows of one total length share a batch).
pub fn exact_autoregressive<A: Autoregressive + ?Sized>(
    model: &mut A,
    rows: &[(Vec<u32>, Vec<u32>)],
) -> Result<Vec<f64>> {
    let v = model.vocab_size();
    let mut out = vec![0.0; rows.len()];
    let mut by_length: std::collections::BTreeMap<usize, Vec<usize>> = Default::default();
    for (i, (c, k)) in rows.iter().enumerate() {
        by_length.entry(c.len() + k.len()).or_default().push(i);
    }
    for (&n, members) in &by_length {
        let batch = members.len();
        model.begin(batch, n)?;
        let mut probs = vec![0.0; batch * v];
        let mut appended = vec![0u32; batch];
        for pos in 0..n {
            let fed = (pos > 0).then_some(appended.as_slice());
            model.next(fed, &mut probs)?;
            for (b, &i) in members.iter().enumerate() {
                let (c, k) = &rows[i];
                let token = if pos < c.len() {
                    c[pos]
                } else {
                    k[pos - c.len()]
                };
                if pos >= c.len() {
                    out[i] +=
                        crate::likelihood::log_prob_of(&probs[b * v..(b + 1) * v], token as usize)
                            .map_err(|e| e.context(format!("row {i}, position {pos}")))?;
                }
                appended[b] = token;
            }
        }
    }
    Ok(out)
}

/// Answer a `model.loglikelihood` request exactly with an autoregressive model.
pub fn answer_autoregressive<A: Autoregressive + ?Sized>(
    model: &mut A,
    rows: &[(Vec<u32>, Vec<u32>)],
) -> Result<crate::LoglikelihoodReply> {
    let started = Instant::now();
    let values = exact_autoregressive(model, rows)?;
    model.synchronize();
    let mut reply = crate::LoglikelihoodReply::new(
        values
            .into_iter()
            .map(crate::LoglikelihoodRow::exact)
            .collect(),
        "exact",
    );
    reply.nfe = rows.iter().map(|(c, k)| (c.len() + k.len()) as u64).sum();
    reply.wall_seconds = started.elapsed().as_secs_f64();
    Ok(reply)
}
