//! One generate call over a denoising network: the canvas, the samples' random streams, the
//! NFE counters, and the checks every sampler shares before its own loop runs.

use super::cache::{CachePlan, Call};
use super::draw::{Drawn, RowError, Shaping};
use super::trace::Tracer;
use super::{blocks, sample_rng, split_steps, DenoiserSampler, Params, Registry, Steps, Want};
use crate::kv_cache::DenoiserKvCache;
use crate::{Denoiser, GenerateReply, GenerateRequest, PluginError, Result, SampleStats};
use rand_chacha::ChaCha8Rng;
use std::ops::Range;
use std::time::Instant;

/// What the samplers need from a denoising network, wherever its output lives: one forward
/// pass over the canvas, then draws (and scores) at chosen positions of that output. The host
/// path keeps the output as f64 probabilities ([`Denoiser`]); the device path keeps logits as a
/// Burn tensor on the model's device (`device::TensorDenoiser`, feature `burn`).
pub(crate) trait DenoiseNet {
    fn vocab_size(&self) -> usize;
    fn time_conditioned(&self) -> bool;
    fn device(&self) -> String;
    /// Run the network on `tokens` (`batch × length`); later draws read this output.
    fn forward(&mut self, tokens: &[u32], batch: usize, length: usize, t: f64) -> Result<()>;
    /// Whether the model has a key/value cache ([`crate::kv_cache`]).
    fn has_kv_cache(&mut self) -> bool;
    /// The left padding the network hides in this call's rows (`Model::generate_left_padded`;
    /// empty: none): part of each prompt, counted in the batch's positions, not the sample's.
    fn left_padding(&self) -> &[usize];
    /// As [`DenoiseNet::forward`], and fill the model's key/value cache.
    fn fill(&mut self, tokens: &[u32], batch: usize, length: usize, t: f64) -> Result<()>;
    /// Run the network's queries at positions `window` of every row over the cache; later
    /// draws read this output, whose rows are `b · window.len() + (j − window.start)`.
    fn window(
        &mut self,
        tokens: &[u32],
        batch: usize,
        length: usize,
        window: Range<usize>,
        t: f64,
    ) -> Result<()>;
    /// Draw at output rows `rows` (`b · width + j` for an output `width` positions wide),
    /// `uniforms[i]` being row `i`'s draw.
    fn draw(
        &mut self,
        rows: &[usize],
        uniforms: &[f64],
        params: &Shaping,
        want: Want,
    ) -> std::result::Result<Drawn, RowError>;
    /// The log-weights (log-probabilities or logits: any per-row offset) of output rows `rows`,
    /// row after row, `vocab_size()` values each, in f64 on the host: for samplers that shape
    /// and score whole rows themselves (`dream`).
    fn log_weights(&mut self, rows: &[usize]) -> Result<Vec<f64>>;
    fn synchronize(&mut self);
}

/// The host path: a [`Denoiser`] writing f64 probabilities into a buffer.
pub(crate) struct HostNet<'a, D: Denoiser + ?Sized> {
    pub denoiser: &'a mut D,
    pub probs: Vec<f64>,
}

impl<D: Denoiser + ?Sized> DenoiseNet for HostNet<'_, D> {
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
        self.probs
            .resize(batch * length * self.denoiser.vocab_size(), 0.0);
        self.denoiser
            .denoise(tokens, batch, length, t, &mut self.probs)
    }
    fn has_kv_cache(&mut self) -> bool {
        self.denoiser.kv_cache().is_some()
    }
    fn left_padding(&self) -> &[usize] {
        &[] // a host `Denoiser` hides no padding (`Model::generate_left_padded` refuses it)
    }
    fn fill(&mut self, tokens: &[u32], batch: usize, length: usize, t: f64) -> Result<()> {
        self.probs
            .resize(batch * length * self.denoiser.vocab_size(), 0.0);
        host_cache(self.denoiser)?.denoise_and_fill(tokens, batch, length, t, &mut self.probs)
    }
    fn window(
        &mut self,
        tokens: &[u32],
        batch: usize,
        length: usize,
        window: Range<usize>,
        t: f64,
    ) -> Result<()> {
        self.probs
            .resize(batch * window.len() * self.denoiser.vocab_size(), 0.0);
        host_cache(self.denoiser)?.denoise_window(tokens, batch, length, window, t, &mut self.probs)
    }
    fn draw(
        &mut self,
        rows: &[usize],
        uniforms: &[f64],
        params: &Shaping,
        want: Want,
    ) -> std::result::Result<Drawn, RowError> {
        let vocab = self.denoiser.vocab_size();
        super::draw::host_draw(&self.probs, vocab, rows, uniforms, params, want)
    }
    fn log_weights(&mut self, rows: &[usize]) -> Result<Vec<f64>> {
        let vocab = self.denoiser.vocab_size();
        Ok(rows
            .iter()
            .flat_map(|&row| self.probs[row * vocab..(row + 1) * vocab].iter())
            .map(|&p| p.ln())
            .collect())
    }
    fn synchronize(&mut self) {
        self.denoiser.synchronize()
    }
}

/// `denoiser`'s cache, which the run checked for before its first cached call.
fn host_cache<D: Denoiser + ?Sized>(denoiser: &mut D) -> Result<&mut dyn DenoiserKvCache> {
    denoiser
        .kv_cache()
        .ok_or_else(|| PluginError::internal("a cached step on a model without a cache"))
}

/// One sample's semi-autoregressive block: its positions and its share of the steps.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RowBlock {
    /// The block's positions in the sample.
    pub range: Range<usize>,
    /// The steps the block gets.
    pub steps: usize,
}

/// The batch being generated, row-major `batch × length`.
pub(crate) struct Canvas {
    pub tokens: Vec<u32>,
    pub batch: usize,
    pub length: usize,
    pub mask: u32,
    pub prompt_len: Vec<usize>,
}

impl Canvas {
    pub fn new(
        batch: usize,
        length: usize,
        mask: u32,
        prompts: Option<&[Vec<u32>]>,
    ) -> Result<Canvas> {
        let mut tokens = vec![mask; batch * length];
        let mut prompt_len = vec![0; batch];
        if let Some(prompts) = prompts {
            if prompts.len() != batch {
                return Err(PluginError::bad_config(format!(
                    "{} prompts given for a batch of {batch}",
                    prompts.len()
                )));
            }
            for (b, p) in prompts.iter().enumerate() {
                if p.len() > length {
                    return Err(PluginError::bad_config(format!(
                        "prompt {b} has {} tokens, longer than the length {length}",
                        p.len()
                    )));
                }
                if let Some(&bad) = p.iter().find(|&&t| t >= mask) {
                    return Err(PluginError::bad_data(format!(
                        "prompt {b} holds token id {bad}, outside the vocabulary 0..{mask}"
                    )));
                }
                tokens[b * length..b * length + p.len()].copy_from_slice(p);
                prompt_len[b] = p.len();
            }
        }
        Ok(Canvas {
            tokens,
            batch,
            length,
            mask,
            prompt_len,
        })
    }

    pub fn masked_in(&self, b: usize, range: &Range<usize>) -> Vec<usize> {
        range
            .clone()
            .filter(|&j| self.tokens[b * self.length + j] == self.mask)
            .collect()
    }

    /// The samples' random streams: sample `b` of the batch is the request's sample
    /// `first_index + b`.
    pub fn streams(&self, request: &GenerateRequest) -> Vec<ChaCha8Rng> {
        (0..self.batch as u64)
            .map(|i| sample_rng(request.seed, request.first_index + i))
            .collect()
    }
}

/// One generate call as a sampler sees it: the canvas (`batch × length` tokens, masked where
/// still to be generated, prompts in front), each sample's random stream, the network, and the
/// NFE counters. Positions are addressed as rows `b · length + j` (sample `b`, position `j`).
pub struct Run<'a> {
    net: &'a mut dyn DenoiseNet,
    canvas: Canvas,
    rngs: Vec<ChaCha8Rng>,
    shaping: Shaping,
    want: Want,
    steps: usize,
    schedule: Option<&'a str>,
    batch_nfe: u64,
    sample_nfe: Vec<u64>,
    cache: CachePlan,
    /// The positions the last call's output holds: `None` for every position, a window's
    /// range after a window call.
    output_window: Option<Range<usize>>,
    /// Query positions per row of the last call.
    call_width: usize,
    sample_positions: Vec<u64>,
    batch_positions: u64,
    /// Fills and window calls made (a sampler that reads `cache` must make some).
    cached_calls: u64,
    /// Each row's hidden left padding (empty: none).
    left_padding: Vec<usize>,
    /// Positions a sampler has committed at least once (edits are commits beyond the first).
    committed: Vec<bool>,
    sample_edits: Vec<u64>,
    /// The batch's trajectories, when the request asks for them (`trace.rs`).
    tracer: Option<Tracer>,
}

impl Run<'_> {
    /// Number of samples in the batch.
    pub fn batch(&self) -> usize {
        self.canvas.batch
    }
    /// Positions per sample.
    pub fn length(&self) -> usize {
        self.canvas.length
    }
    /// The request's `steps` (already checked against [`super::Sampler::steps`]).
    pub fn steps(&self) -> usize {
        self.steps
    }
    /// The request's noise schedule name, if any (given only to samplers that take one).
    pub fn schedule(&self) -> Option<&str> {
        self.schedule
    }
    /// Whether the network takes the diffusion time as input.
    pub fn time_conditioned(&self) -> bool {
        self.net.time_conditioned()
    }
    /// The token at sample `b`, position `j` (`None` while masked).
    pub fn token(&self, b: usize, j: usize) -> Option<u32> {
        let token = self.canvas.tokens[b * self.canvas.length + j];
        (token != self.canvas.mask).then_some(token)
    }
    /// The still-masked positions of sample `b` in `range`, in order.
    pub fn masked_in(&self, b: usize, range: &Range<usize>) -> Vec<usize> {
        self.canvas.masked_in(b, range)
    }
    /// The semi-autoregressive blocks of `block_length` positions (one block when `None`),
    /// each sample's from its own prompt's end, so that a sample's blocks never depend on what
    /// shares its batch. Entry `[i][b]` is sample `b`'s `i`-th block with its share of
    /// [`Run::steps`] (`None` where sample `b` has fewer blocks); samplers run block `i` of every
    /// sample together.
    pub fn blocks(&self, block_length: Option<usize>) -> Result<Vec<Vec<Option<RowBlock>>>> {
        let length = self.canvas.length;
        let per_row = self
            .canvas
            .prompt_len
            .iter()
            .map(|&start| {
                let ranges = blocks(start, length, block_length.unwrap_or(length));
                let steps = split_steps(self.steps, ranges.len())?;
                Ok(ranges
                    .into_iter()
                    .zip(steps)
                    .map(|(range, steps)| RowBlock { range, steps })
                    .collect::<Vec<_>>())
            })
            .collect::<Result<Vec<_>>>()?;
        let count = per_row.iter().map(Vec::len).max().unwrap_or(0);
        Ok((0..count)
            .map(|i| per_row.iter().map(|row| row.get(i).cloned()).collect())
            .collect())
    }
    /// Sample `b`'s random stream: every draw for the sample comes from it, in a fixed order.
    pub fn rng(&mut self, b: usize) -> &mut ChaCha8Rng {
        &mut self.rngs[b]
    }
    /// One forward pass of the network over the canvas at diffusion time `t` (one batch NFE).
    pub fn forward(&mut self, t: f64) -> Result<()> {
        self.call(Call::Forward, t)
    }
    /// Make `call` at diffusion time `t` (one batch NFE): a forward pass, a forward pass that
    /// fills the cache, or a window over the cache, after which draws address only the
    /// window's positions. Counts the positions computed for the batch.
    pub(crate) fn call(&mut self, call: Call, t: f64) -> Result<()> {
        let c = &self.canvas;
        let (batch, length) = (c.batch, c.length);
        match &call {
            Call::Forward => self.net.forward(&c.tokens, batch, length, t)?,
            Call::Fill => self.net.fill(&c.tokens, batch, length, t)?,
            Call::Window(window) => self
                .net
                .window(&c.tokens, batch, length, window.clone(), t)?,
        }
        if call != Call::Forward {
            self.cached_calls += 1;
        }
        self.output_window = match call {
            Call::Window(window) => Some(window),
            Call::Forward | Call::Fill => None,
        };
        self.call_width = self.output_window.as_ref().map_or(length, Range::len);
        self.batch_nfe += 1;
        self.batch_positions += (batch * self.call_width) as u64;
        Ok(())
    }
    /// The request's cache settings (`cache`, `refresh`; none for samplers that do not read
    /// them).
    pub(crate) fn cache_plan(&self) -> CachePlan {
        self.cache
    }
    /// Count the last network call for sample `b`'s own NFE: a call it needed (it still had
    /// masked positions, and the output it reads is new to it). Its positions computed grow by
    /// the call's width (the length less the sample's hidden left padding, so that the count is
    /// the sample's alone; or a window's width, which lies past the prompt).
    pub fn count_call(&mut self, b: usize) {
        if self.tracer.is_some() {
            self.trace_call(b);
        }
        self.sample_nfe[b] += 1;
        let padding = match self.output_window {
            None => self.left_padding.get(b).copied().unwrap_or(0),
            Some(_) => 0,
        };
        self.sample_positions[b] += self.call_width.saturating_sub(padding) as u64;
    }
    /// Output rows for canvas rows `rows`: the same after a full pass, the window's own rows
    /// (`b · width + j − start`) after a window call. A row outside the window is a sampler bug.
    fn output_rows<'r>(&self, rows: &'r [usize]) -> Result<std::borrow::Cow<'r, [usize]>> {
        let Some(window) = &self.output_window else {
            return Ok(rows.into());
        };
        let length = self.canvas.length;
        rows.iter()
            .map(|&row| {
                let (b, j) = (row / length, row % length);
                if window.contains(&j) {
                    Ok(b * window.len() + j - window.start)
                } else {
                    Err(PluginError::internal(format!(
                        "sample {b}, position {j}: a sampler read outside the window {window:?} of its cached step"
                    )))
                }
            })
            .collect::<Result<Vec<_>>>()
            .map(Into::into)
    }
    /// Draw at rows `rows` of the last forward pass's output, `uniforms[i]` (from the row's
    /// sample's stream) being row `i`'s draw, with the scores [`DenoiserSampler::scores`] asked
    /// for. An invalid distribution is an error naming the sample and position.
    pub fn draw(&mut self, rows: &[usize], uniforms: &[f64]) -> Result<Drawn> {
        let length = self.canvas.length;
        let output_rows = self.output_rows(rows)?;
        self.net
            .draw(&output_rows, uniforms, &self.shaping, self.want)
            .map_err(|e| {
                let row = rows[e.at];
                PluginError::bad_data(format!(
                    "sample {}, position {}: {}",
                    row / length,
                    row % length,
                    e.message
                ))
            })
    }
    /// The log-weights of rows `rows` of the last forward pass's output (log-probabilities up
    /// to a per-row constant), `rows.len() × vocab` values, for a sampler that shapes and scores
    /// whole rows itself.
    pub fn log_weights(&mut self, rows: &[usize]) -> Result<Vec<f64>> {
        let output_rows = self.output_rows(rows)?;
        self.net.log_weights(&output_rows)
    }
    /// One step's network call and draws when each sample has its own diffusion time
    /// (`times[b]`, `None` for a sample idle this step): a time-independent network is called
    /// once; a time-conditioned one once per distinct time (in order of first appearance), each
    /// sample drawing from the call made at its own time, so that its tokens do not depend on
    /// its batch companions' blocks. The network is called even when `rows` is empty.
    pub fn forward_and_draw(
        &mut self,
        times: &[Option<f64>],
        rows: &[usize],
        uniforms: &[f64],
    ) -> Result<Drawn> {
        let mut distinct: Vec<f64> = Vec::new();
        for &t in times.iter().flatten() {
            if !distinct.contains(&t) {
                distinct.push(t);
            }
        }
        let Some(&first) = distinct.first() else {
            return Ok(Drawn::default());
        };
        if !self.net.time_conditioned() || distinct.len() == 1 {
            self.forward(first)?;
            return if rows.is_empty() {
                Ok(Drawn::default())
            } else {
                self.draw(rows, uniforms)
            };
        }
        let length = self.canvas.length;
        let mut merged = Drawn::default();
        for t in distinct {
            self.forward(t)?;
            if self.tracer.is_some() {
                self.trace_pin(|b| times[b] == Some(t));
            }
            let picked: Vec<usize> = (0..rows.len())
                .filter(|&i| times[rows[i] / length] == Some(t))
                .collect();
            if picked.is_empty() {
                continue;
            }
            let sub_rows: Vec<usize> = picked.iter().map(|&i| rows[i]).collect();
            let sub_uniforms: Vec<f64> = picked.iter().map(|&i| uniforms[i]).collect();
            let drawn = self.draw(&sub_rows, &sub_uniforms)?;
            merged.scatter(&drawn, &picked, rows.len());
        }
        Ok(merged)
    }
    /// Commit `token` at row `row` (`b · length + j`). Committing at a position committed
    /// before (after [`Run::remask`], or over its token: an edit) counts one edit for the sample.
    pub fn commit(&mut self, row: usize, token: u32) {
        if let Some(tracer) = &mut self.tracer {
            tracer.commit(row, self.sample_nfe[row / self.canvas.length]);
        }
        if self.committed[row] {
            self.sample_edits[row / self.canvas.length] += 1;
        }
        self.committed[row] = true;
        self.canvas.tokens[row] = token;
    }
    /// Mask row `row` (`b · length + j`) again, so that a later step generates it anew
    /// (remasking samplers). A prompt position is never re-masked: that is a sampler bug.
    pub fn remask(&mut self, row: usize) -> Result<()> {
        let (b, j) = (row / self.canvas.length, row % self.canvas.length);
        if j < self.canvas.prompt_len[b] {
            return Err(PluginError::internal(format!(
                "sample {b}, position {j}: a sampler tried to re-mask a prompt token"
            )));
        }
        self.canvas.tokens[row] = self.canvas.mask;
        Ok(())
    }
    /// The length of sample `b`'s prompt (its positions before it are fixed).
    pub fn prompt_len(&self, b: usize) -> usize {
        self.canvas.prompt_len[b]
    }
    /// Under trace, sample `b` is about to count the last call: record its prediction after
    /// its previous step, then take this call's argmax as its predicted tokens (`trace.rs`).
    fn trace_call(&mut self, b: usize) {
        let (length, step, call) = (self.canvas.length, self.sample_nfe[b], self.batch_nfe);
        let Some(tracer) = &mut self.tracer else {
            return;
        };
        if step > 0 {
            tracer.record(b, step, &self.canvas.tokens[b * length..(b + 1) * length]);
        }
        if !tracer.has_argmax_of(call) {
            let rows = self.masked_rows_in_output(|_| true);
            let drawn = self.trace_argmax(&rows);
            if let Some(tracer) = &mut self.tracer {
                tracer.set_argmax(call, &rows, &drawn);
            }
        }
        if let Some(tracer) = &mut self.tracer {
            tracer.take_argmax(b);
        }
    }
    /// Under trace, after a call at the time of the samples `at_time` selects: pin their argmax
    /// of this call for their next counted call.
    fn trace_pin(&mut self, at_time: impl Fn(usize) -> bool) {
        let rows = self.masked_rows_in_output(at_time);
        let drawn = self.trace_argmax(&rows);
        let length = self.canvas.length;
        if let Some(tracer) = &mut self.tracer {
            for b in (0..self.canvas.batch).filter(|&b| rows.iter().any(|&r| r / length == b)) {
                let (mine, tokens): (Vec<usize>, Vec<u32>) = rows
                    .iter()
                    .zip(&drawn.tokens)
                    .filter(|(&r, _)| r / length == b)
                    .map(|(&r, &t)| (r, t))
                    .unzip();
                let drawn = Drawn {
                    tokens,
                    ..Drawn::default()
                };
                tracer.pin(b, &mine, &drawn);
            }
        }
    }
    /// The masked canvas rows of the samples `wanted` selects that the last call's output holds.
    fn masked_rows_in_output(&self, wanted: impl Fn(usize) -> bool) -> Vec<usize> {
        let c = &self.canvas;
        let columns = self.output_window.clone().unwrap_or(0..c.length);
        (0..c.batch)
            .filter(|&b| wanted(b))
            .flat_map(|b| columns.clone().map(move |j| b * c.length + j))
            .filter(|&row| c.tokens[row] == c.mask)
            .collect()
    }
    /// The argmax of the last call's output at canvas rows `rows` (a temperature-0 draw); an
    /// invalid distribution is kept as the trace's error and gives no tokens.
    fn trace_argmax(&mut self, rows: &[usize]) -> Drawn {
        let Ok(output_rows) = self.output_rows(rows).map(|r| r.into_owned()) else {
            return Drawn::default(); // rows come from the output, so this cannot happen
        };
        let argmax = Shaping {
            temperature: 0.0,
            top_k: None,
            top_p: None,
        };
        let uniforms = vec![0.0; rows.len()];
        match self
            .net
            .draw(&output_rows, &uniforms, &argmax, Want::default())
        {
            Ok(drawn) => drawn,
            Err(error) => {
                if let Some(tracer) = &mut self.tracer {
                    tracer.fail(rows, error);
                }
                Drawn::default()
            }
        }
    }
}

/// Every sampler of `registry`, over either path.
pub(crate) fn generate_with(
    net: &mut dyn DenoiseNet,
    request: &GenerateRequest,
    registry: &Registry,
) -> Result<(Vec<Vec<u32>>, GenerateReply)> {
    let (batch, length) = (request.batch_size, request.length);
    if batch == 0 || length == 0 {
        return Err(PluginError::bad_config(format!(
            "batch size and length must be positive (got batch {batch}, length {length})"
        )));
    }
    let spec = &request.sampler;
    let sampler = registry.get(&spec.name).ok_or_else(|| {
        PluginError::bad_config(format!(
            "unknown sampler `{}` for a denoiser; this model provides: {}",
            spec.name,
            registry.names().join(", ")
        ))
    })?;
    let params = Params::parse(sampler, &spec.params)?;
    let cache = CachePlan::read(&params)?;
    if cache.is_on() {
        check_cache_support(net, cache)?;
    }
    let canvas = Canvas::new(
        batch,
        length,
        net.vocab_size() as u32,
        request.prompts.as_deref(),
    )?;
    check_steps_and_schedule(sampler, request, registry)?;
    let rngs = canvas.streams(request);
    let mask = canvas.mask;
    let left_padding = net.left_padding().to_vec();
    let start = Instant::now();
    let mut run = Run {
        net,
        canvas,
        rngs,
        shaping: params.shaping,
        want: sampler.scores(&params),
        steps: spec.steps,
        schedule: spec.schedule.as_deref(),
        batch_nfe: 0,
        sample_nfe: vec![0; batch],
        cache,
        output_window: None,
        call_width: length,
        sample_positions: vec![0; batch],
        batch_positions: 0,
        cached_calls: 0,
        left_padding,
        committed: vec![false; batch * length],
        sample_edits: vec![0; batch],
        tracer: request.trace.then(|| Tracer::new(batch, length, mask)),
    };
    sampler.run(&mut run, &params)?;
    run.net.synchronize();
    let wall_seconds = start.elapsed().as_secs_f64();
    let mut traces = finish_trace(&mut run)?.map(Vec::into_iter);
    let canvas = &run.canvas;
    if canvas.tokens.contains(&canvas.mask) {
        return Err(PluginError::internal(format!(
            "sampler `{}` left masked positions in its output (a bug in the sampler)",
            spec.name
        )));
    }
    if cache.is_on() && run.cached_calls == 0 && run.batch_nfe > 0 {
        return Err(PluginError::internal(format!(
            "sampler `{}` declares `cache` but made no cached call (a bug in the sampler)",
            spec.name
        )));
    }
    let samples = (0..batch)
        .map(|b| SampleStats {
            trace: traces.as_mut().and_then(Iterator::next),
            nfe: run.sample_nfe[b],
            generated_tokens: (length - canvas.prompt_len[b]) as u64,
            positions_computed: Some(run.sample_positions[b]),
            // Absent means none (samplers that never revisit a position).
            edits: (run.sample_edits[b] > 0).then_some(run.sample_edits[b]),
        })
        .collect();
    let sequences = canvas.tokens.chunks(length).map(<[u32]>::to_vec).collect();
    Ok((
        sequences,
        GenerateReply {
            lengths: vec![length; batch],
            samples,
            batch_nfe: run.batch_nfe,
            batch_positions: Some(run.batch_positions),
            wall_seconds,
            device: run.net.device(),
            texts: None,
            whole_programs: false,
            settings: Some(super::params::settings(sampler, &params, spec)),
        },
    ))
}

/// The batch's trajectories, when traced: each sample's prediction after its last step (its
/// output) recorded, or the first error met while tracing.
fn finish_trace(run: &mut Run<'_>) -> Result<Option<Vec<crate::SampleTrace>>> {
    let Some(mut tracer) = run.tracer.take() else {
        return Ok(None);
    };
    if let Some(error) = tracer.error.take() {
        return Err(error);
    }
    let length = run.canvas.length;
    for (b, row) in run.canvas.tokens.chunks(length).enumerate() {
        tracer.record(b, run.sample_nfe[b], row);
    }
    Ok(Some(tracer.finish(&run.sample_nfe)))
}

/// A cache asked of `net`: refused for a model without one and for a time-conditioned one.
fn check_cache_support(net: &mut dyn DenoiseNet, cache: CachePlan) -> Result<()> {
    let name = cache.mode.name();
    if net.time_conditioned() {
        return Err(PluginError::unsupported(format!(
            "`cache: {name}` reuses keys and values computed at an earlier step, but this network takes the diffusion time as input, so they would belong to another time; use `cache: none`"
        )));
    }
    if !net.has_kv_cache() {
        return Err(PluginError::unsupported(format!(
            "`cache: {name}` needs a model with a key/value cache, and this one has none (its denoiser's `kv_cache()` is `None`); use `cache: none` (the default)"
        )));
    }
    Ok(())
}

/// The request's `steps` and `schedule` against what the sampler says it reads.
fn check_steps_and_schedule(
    sampler: &dyn DenoiserSampler,
    request: &GenerateRequest,
    registry: &Registry,
) -> Result<()> {
    let (name, steps, length) = (sampler.name(), request.sampler.steps, request.length);
    match sampler.steps() {
        Steps::OnePerToken if steps != length => {
            return Err(PluginError::bad_config(format!(
                "{name} decodes one position per step, so steps must equal the length ({length}); got {steps}"
            )));
        }
        Steps::Budget if steps == 0 => {
            return Err(PluginError::bad_config(format!("{name} needs steps ≥ 1")));
        }
        Steps::OnePerToken | Steps::Budget => {}
    }
    if request.sampler.schedule.is_some() && !sampler.takes_schedule() {
        let takers: Vec<&str> = registry
            .samplers()
            .filter(|s| s.takes_schedule())
            .map(|s| s.name())
            .collect();
        return Err(PluginError::bad_config(format!(
            "sampler `{name}` takes no `schedule` (it applies only to {})",
            takers.join(", ")
        )));
    }
    Ok(())
}
