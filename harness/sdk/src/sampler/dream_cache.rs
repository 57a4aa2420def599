//! `dream_cache` — Fast-dLLM's block loop for Dream with its prefix and dual key/value caches
//! (github.com/NVlabs/Fast-dLLM, commit 24cc59e75f20a6384bae8c905965bb090b96388e,
//! `dream/model/generation_utils_block.py`, `DreamGenerationMixin._sample`), which differs from
//! LLaDA's loop ([`super::remask`]) in how a block starts and in its rules.
//!
//! Per semi-autoregressive block (`block_length`; its share `S` of `steps`):
//! * **step 0** — a full forward pass that fills the cache (`cache: prefix | dual`); the block's
//!   first position is committed at once to its `x0`, whatever `alg` says;
//! * **steps 1, 2, …** — window calls over the cache (`cache.rs`: prefix, from the block's
//!   start to the end; dual, the block), or full passes with `cache: none`, until the block holds
//!   no mask. `x0` and the confidences come from each masked position's distribution shaped as
//!   Dream's `sample_tokens` shapes it (`dream`'s shaping: temperature, top-p, top-k):
//!   * `alg: entropy` (the default; the reference's branch for every `alg` but
//!     `confidence_threshold`) — Dream's fixed quota on the grid `linspace(1, eps, S + 1)`: at
//!     step `i` the `⌊n · (1 − t_{i+1}/t_i)⌋` positions of lowest entropy (`Σ p ln(p + 1e-10)`
//!     highest; or drawn from `softmax(confidence / alg_temp)`) among the block's `n` masked
//!     ones, all of them at step `S − 1`, computed in f32 as the reference (`dream`'s rule).
//!     A block thus takes exactly `S` calls, and `S ≥ 2` is required where it has two positions
//!     or more (the reference then stops with the block unfinished);
//!   * `alg: confidence_threshold` — the most confident position and every one with
//!     `p(x0) ≥ tau`. As in the reference, nothing bounds the calls: the block takes as many as
//!     it needs (at most its length), and `steps` only has to give each block one.
//!
//! `refresh: k` also fills at steps `k, 2k, …` of a block (those steps keep their rule), so
//! `refresh: 1` decodes exactly as `cache: none`.
//!
//! Dream's logits are shifted (the network's output at `i − 1` is the distribution of position
//! `i`); the model's denoiser answers shifted logits, so its window over `s..e` reads the outputs
//! at `s − 1..e − 1` (dlm-hf's `window.rs`), where Fast-dLLM shifts inside the window and gives
//! position `s` its own output. Only position `s` differs, which this loop, as the reference,
//! never reads after the fill step has committed it.
//!
//! Deliberate differences from the reference: each sample's quota is its own (the reference
//! uses the batch's mean count, and its threshold mode selects in row 0 only); the random draws
//! (`temperature > 0`, `alg_temp > 0`) come from the sample's own stream, one uniform per
//! shaped draw in position order, then one per committed position for `alg_temp`; a window that
//! would find its block already full (a block of one position) is not made, where the
//! reference checks after the call; a network conditioned on time gets the fraction of the
//! block still masked, and samples at different fractions get a call each (only without a
//! cache). None of these changes an argmax-determined generation (temperature 0) of one
//! sample, which equals the reference's token for token: plugins/hf/tests/dream_cache.rs replays
//! the reference's cases call by call.

use super::cache::Call;
use super::dream::{linspace_f32, most_confident, shaped, Rule, Shaping};
use super::params::{Choice, Handle, BLOCK_LENGTH};
use super::{DenoiserSampler, DreamAlg, Param, Params, RowBlock, Run, Sampler, Steps, Want};
use super::{ALG_TEMP, CACHE, EPS, REFRESH, TAU};
use crate::{PluginError, Result};
use rand_chacha::ChaCha8Rng;

/// The rule of `dream_cache`'s steps after a block's first.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DreamCacheAlg {
    /// Dream's fixed quota on its time grid, lowest entropy first.
    Entropy,
    /// The most confident position and every one with `p(x0) ≥ tau`.
    ConfidenceThreshold,
}

/// `alg` of `dream_cache`: the commit rule after a block's first step.
pub const CACHE_ALG: Choice<DreamCacheAlg> = Choice {
    name: "alg",
    options: &[
        ("entropy", DreamCacheAlg::Entropy),
        ("confidence_threshold", DreamCacheAlg::ConfidenceThreshold),
    ],
    doc: "entropy (Dream's fixed quota, lowest entropy first) or confidence_threshold (top-1 and every p(x0) ≥ tau)",
};

/// The `dream_cache` sampler.
#[derive(Debug, Clone, Copy)]
pub struct DreamCache;

impl Sampler for DreamCache {
    fn name(&self) -> &'static str {
        "dream_cache"
    }
    fn params(&self) -> Vec<Param> {
        vec![
            BLOCK_LENGTH.param(),
            CACHE.param(),
            REFRESH.param(),
            CACHE_ALG.param(),
            TAU.param(),
            EPS.param(),
            ALG_TEMP.param(),
        ]
    }
    fn steps(&self) -> Steps {
        Steps::Budget
    }
    fn takes_schedule(&self) -> bool {
        false
    }
}

/// A request's settings of the loop.
struct Settings {
    alg: DreamCacheAlg,
    tau: f64,
    eps: f32,
    /// Dream's rule, `alg: entropy`, with the request's shaping (also the draw of every `x0`).
    rule: Rule,
}

impl DenoiserSampler for DreamCache {
    fn scores(&self, _: &Params) -> Want {
        // Its scores come from the shaped distribution, which it computes from the rows itself.
        Want::default()
    }

    fn run(&self, run: &mut Run<'_>, params: &Params) -> Result<()> {
        let eps = params.get(&EPS);
        if eps >= 1.0 {
            return Err(PluginError::bad_config(format!(
                "dream_cache: eps must be below 1 (the grid runs from t = 1 down to eps), got {eps}"
            )));
        }
        let settings = Settings {
            alg: params.get(&CACHE_ALG),
            tau: params.get(&TAU),
            eps: eps as f32,
            rule: Rule {
                alg: DreamAlg::Entropy,
                alg_temp: params.get(&ALG_TEMP),
                shaping: Shaping {
                    temperature: params.shaping.temperature,
                    top_p: params.shaping.top_p,
                    top_k: params.shaping.top_k,
                },
            },
        };
        let blocks = run.blocks(params.get(&BLOCK_LENGTH))?;
        run.cache_plan()
            .check_aligned(&blocks, |b| run.prompt_len(b))?;
        if settings.alg == DreamCacheAlg::Entropy {
            check_two_steps(&blocks)?;
        }
        for block in &blocks {
            decode_block(run, block, &settings)?;
        }
        Ok(())
    }
}

/// With `alg: entropy` a block of two positions or more needs the fill step and at least one
/// window step.
fn check_two_steps(blocks: &[Vec<Option<RowBlock>>]) -> Result<()> {
    let short = blocks
        .iter()
        .flatten()
        .flatten()
        .find(|rb| rb.steps < 2 && rb.range.len() > 1);
    match short {
        None => Ok(()),
        Some(rb) => Err(PluginError::bad_config(format!(
            "dream_cache with alg: entropy commits a block's first position at its first step and the rest over its other steps, so every block needs at least 2 steps, but the block at positions {:?} gets {}; give more steps (at least 2 per block), a longer block_length, or alg: confidence_threshold",
            rb.range, rb.steps
        ))),
    }
}

/// Block `i` of every sample (`block[b]`, `None` where sample `b` has none): the fill step,
/// then the rule's steps until no sample has a mask left in its block.
fn decode_block(run: &mut Run<'_>, block: &[Option<RowBlock>], settings: &Settings) -> Result<()> {
    let length = run.length();
    let grids: Vec<Vec<f32>> = block
        .iter()
        .map(|rb| {
            rb.as_ref()
                .map_or_else(Vec::new, |rb| linspace_f32(1.0, settings.eps, rb.steps + 1))
        })
        .collect();
    let mut step = 0;
    loop {
        let masked: Vec<Vec<usize>> = block
            .iter()
            .enumerate()
            .map(|(b, rb)| {
                rb.as_ref()
                    .map_or_else(Vec::new, |rb| run.masked_in(b, &rb.range))
            })
            .collect();
        if masked.iter().all(Vec::is_empty) {
            return Ok(());
        }
        // A time-conditioned network's time: the fraction of the block still masked.
        let times: Vec<Option<f64>> = block
            .iter()
            .zip(&masked)
            .map(|(rb, m)| match rb {
                Some(rb) if !m.is_empty() => Some(m.len() as f64 / rb.range.len() as f64),
                _ => None,
            })
            .collect();
        for group in time_groups(&times, run.time_conditioned()) {
            call(run, step, block, times[group[0]].unwrap_or(1.0))?;
            // Step 0 reads the block's first position (always masked then: blocks start fully
            // masked), later steps every masked one.
            let read: Vec<&[usize]> = group
                .iter()
                .map(|&b| {
                    if step == 0 {
                        &masked[b][..1]
                    } else {
                        &masked[b][..]
                    }
                })
                .collect();
            let rows: Vec<usize> = group
                .iter()
                .zip(&read)
                .flat_map(|(&b, positions)| positions.iter().map(move |&j| b * length + j))
                .collect();
            let weights = run.log_weights(&rows)?;
            let vocab = weights.len() / rows.len().max(1);
            let mut offset = 0;
            for (&b, positions) in group.iter().zip(&read) {
                run.count_call(b);
                let n = positions.len();
                let own = &weights[offset * vocab..(offset + n) * vocab];
                offset += n;
                let commits = if step == 0 {
                    let q = shaped(own, &settings.rule.shaping);
                    vec![(0, settings.rule.draw(&q, run.rng(b))?)]
                } else {
                    commits(settings, own, vocab, n, &grids[b], step, run.rng(b))?
                };
                for (index, token) in commits {
                    run.commit(b * length + positions[index], token);
                }
            }
        }
        step += 1;
    }
}

/// The samples that share a network call: every active one for a network without time, else
/// one group per distinct time, in order of first appearance.
fn time_groups(times: &[Option<f64>], time_conditioned: bool) -> Vec<Vec<usize>> {
    let mut groups: Vec<(f64, Vec<usize>)> = Vec::new();
    for (b, t) in times.iter().enumerate() {
        let Some(t) = *t else { continue };
        match groups
            .iter_mut()
            .find(|(gt, _)| !time_conditioned || *gt == t)
        {
            Some((_, members)) => members.push(b),
            None => groups.push((t, vec![b])),
        }
    }
    groups.into_iter().map(|(_, members)| members).collect()
}

/// Step `step`'s network call at time `t`: the cache plan's fill or window (the blocks are
/// aligned when a cache is on), or a full pass without a cache.
fn call(run: &mut Run<'_>, step: usize, block: &[Option<RowBlock>], t: f64) -> Result<()> {
    let plan = run.cache_plan();
    let range = block.iter().flatten().next().map(|rb| rb.range.clone());
    match range {
        Some(range) if plan.is_on() => run.call(plan.call(step, &range, run.length()), t),
        _ => run.call(Call::Forward, t),
    }
}

/// One sample's commits at a step after the first: `(index among its n masked positions,
/// token)`, from their log-weights (`n × vocab`).
fn commits(
    settings: &Settings,
    log_weights: &[f64],
    vocab: usize,
    n: usize,
    grid: &[f32],
    step: usize,
    rng: &mut ChaCha8Rng,
) -> Result<Vec<(usize, u32)>> {
    match settings.alg {
        DreamCacheAlg::Entropy => {
            // The grid has S + 1 points and the loop ends at step S − 1, which commits all.
            let last = step + 2 >= grid.len();
            let (t, s) = (
                grid[step.min(grid.len() - 2)],
                grid[(step + 1).min(grid.len() - 1)],
            );
            settings.rule.step(log_weights, vocab, n, (t, s), last, rng)
        }
        DreamCacheAlg::ConfidenceThreshold => {
            let mut tokens = Vec::with_capacity(n);
            let mut confidence = Vec::with_capacity(n);
            for k in 0..n {
                let q = shaped(
                    &log_weights[k * vocab..(k + 1) * vocab],
                    &settings.rule.shaping,
                );
                let x0 = settings.rule.draw(&q, rng)?;
                confidence.push(q[x0 as usize]);
                tokens.push(x0);
            }
            let above = confidence.iter().filter(|&&c| c >= settings.tau).count();
            let chosen = most_confident(&confidence, above.max(1));
            Ok(chosen.into_iter().map(|k| (k, tokens[k])).collect())
        }
    }
}

#[cfg(test)]
mod tests {
    use super::super::tests::{request, with_params, ChainOracle};
    use super::super::Registry;
    use crate::kv_cache::DenoiserKvCache;
    use crate::{Denoiser, ErrorKind, GenerateReply, Result};
    use serde_json::{json, Value};
    use std::ops::Range;

    /// The chain oracle answering cached calls with its exact conditionals (a window over the
    /// current canvas, nothing stale): records each call and how many masks the canvas held.
    struct Recorder {
        chain: ChainOracle,
        calls: Vec<(Option<Range<usize>>, usize)>,
        full: Vec<f64>,
    }

    impl Recorder {
        fn new() -> Self {
            Recorder {
                chain: ChainOracle::full(),
                calls: Vec::new(),
                full: Vec::new(),
            }
        }
        fn masks(&self, tokens: &[u32]) -> usize {
            tokens
                .iter()
                .filter(|&&t| t as usize == self.chain.vocab)
                .count()
        }
    }

    impl Denoiser for Recorder {
        fn vocab_size(&self) -> usize {
            self.chain.vocab
        }
        fn time_conditioned(&self) -> bool {
            false
        }
        fn denoise(
            &mut self,
            tokens: &[u32],
            b: usize,
            l: usize,
            t: f64,
            out: &mut [f64],
        ) -> Result<()> {
            self.calls.push((Some(0..0), self.masks(tokens))); // a plain pass: no cache
            self.chain.denoise(tokens, b, l, t, out)
        }
        fn kv_cache(&mut self) -> Option<&mut dyn DenoiserKvCache> {
            Some(self)
        }
    }

    impl DenoiserKvCache for Recorder {
        fn denoise_and_fill(
            &mut self,
            tokens: &[u32],
            b: usize,
            l: usize,
            t: f64,
            out: &mut [f64],
        ) -> Result<()> {
            self.calls.push((None, self.masks(tokens)));
            self.chain.denoise(tokens, b, l, t, out)
        }
        fn denoise_window(
            &mut self,
            tokens: &[u32],
            b: usize,
            l: usize,
            window: Range<usize>,
            t: f64,
            out: &mut [f64],
        ) -> Result<()> {
            self.calls.push((Some(window.clone()), self.masks(tokens)));
            let v = self.chain.vocab;
            self.full.resize(b * l * v, 0.0);
            self.chain.denoise(tokens, b, l, t, &mut self.full)?;
            for row in 0..b {
                let from = (row * l + window.start) * v..(row * l + window.end) * v;
                let to = row * window.len() * v..(row + 1) * window.len() * v;
                out[to].copy_from_slice(&self.full[from]);
            }
            Ok(())
        }
    }

    fn generate(
        toy: &mut Recorder,
        steps: usize,
        length: usize,
        params: Value,
    ) -> Result<(Vec<Vec<u32>>, GenerateReply)> {
        let mut req = with_params(request("dream_cache", steps, 1, length, 0), params);
        req.prompts = Some(vec![vec![0, 1]]);
        Registry::built_in().generate(toy, &req)
    }

    /// Commits per call: the drop in masks from each call's canvas to the next's (the last
    /// call's to none).
    fn commits(toy: &Recorder) -> Vec<usize> {
        let masks: Vec<usize> = toy.calls.iter().map(|c| c.1).chain([0]).collect();
        masks.windows(2).map(|w| w[0] - w[1]).collect()
    }

    #[test]
    fn entropy_blocks_take_their_steps_one_fill_then_windows() {
        // 2-token prompt, two blocks of 8, 4 steps each: per block a fill that commits the
        // first position, then Dream's counts ⌊n(1 − t_{i+1}/t_i)⌋ on linspace(1, 1e-3, 5)
        // for n = 7: 2, 2, then the rest, 3 (Fast-dLLM's own counts for this layout,
        // plugins/hf/tests/fixtures/dream-tiny/cached_generations.json).
        for (mode, window) in [("prefix", [2..18, 10..18]), ("dual", [2..10, 10..18])] {
            let mut toy = Recorder::new();
            let params = json!({"block_length": 8, "cache": mode, "temperature": 0});
            let (_, reply) = generate(&mut toy, 8, 18, params).unwrap();
            let kinds: Vec<Option<Range<usize>>> = toy.calls.iter().map(|c| c.0.clone()).collect();
            let per_block =
                |w: &Range<usize>| [None, Some(w.clone()), Some(w.clone()), Some(w.clone())];
            let want: Vec<_> = window.iter().flat_map(per_block).collect();
            assert_eq!(kinds, want, "{mode}");
            assert_eq!(commits(&toy), [1, 2, 2, 3, 1, 2, 2, 3], "{mode}");
            // Positions computed: per block a fill (18) and 3 windows of the window's width.
            let positions: usize = window.iter().map(|w| 18 + 3 * w.len()).sum();
            assert_eq!(reply.samples[0].nfe, 8);
            assert_eq!(
                reply.samples[0].positions_computed,
                Some(positions as u64),
                "{mode}"
            );
            assert_eq!(reply.batch_positions, Some(positions as u64), "{mode}");
        }
    }

    #[test]
    fn the_threshold_rule_runs_until_the_block_is_full() {
        // tau above 1: one commit per window (the top-1), whatever `steps` says; tau 0: the
        // whole rest of the block in the first window.
        for (tau, want) in [(1.5, vec![1; 12]), (0.0, vec![1, 5, 1, 5])] {
            let mut toy = Recorder::new();
            let params = json!({"block_length": 6, "cache": "dual", "alg": "confidence_threshold", "tau": tau});
            let (seqs, reply) = generate(&mut toy, 2, 14, params).unwrap();
            assert_eq!(commits(&toy), want, "tau {tau}");
            assert_eq!(reply.batch_nfe as usize, want.len(), "tau {tau}");
            assert!(seqs[0].iter().all(|&t| t < 3));
        }
    }

    #[test]
    fn without_a_cache_every_call_is_a_full_pass() {
        let mut toy = Recorder::new();
        let (_, reply) = generate(&mut toy, 8, 18, json!({"block_length": 8})).unwrap();
        assert!(
            toy.calls.iter().all(|c| c.0 == Some(0..0)),
            "{:?}",
            toy.calls
        );
        assert_eq!(reply.samples[0].positions_computed, Some(8 * 18));
    }

    #[test]
    fn bad_settings_are_refused_with_the_fix() {
        let mut toy = Recorder::new();
        // One step per block cannot hold the fill step and a window.
        let err = generate(&mut toy, 2, 18, json!({"block_length": 8})).unwrap_err();
        assert_eq!(err.kind, ErrorKind::BadConfig);
        assert!(err.message.contains("at least 2 steps"), "{}", err.message);
        // A block of one position needs no window.
        generate(&mut toy, 16, 18, json!({"block_length": 1})).unwrap();
        let err = generate(&mut toy, 8, 18, json!({"eps": 1.0})).unwrap_err();
        assert!(
            err.message.contains("eps must be below 1"),
            "{}",
            err.message
        );
        let err = generate(&mut toy, 8, 18, json!({"alg": "origin"})).unwrap_err();
        assert!(
            err.message.contains("confidence_threshold"),
            "{}",
            err.message
        );
    }
}
