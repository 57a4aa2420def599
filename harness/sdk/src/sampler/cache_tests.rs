//! The key/value cache in the remasking loop, against truth: a toy network whose window calls
//! really read the state of the last fill, so the tokens show which state each step saw
//! (closed form); refresh every step is no cache; positions computed in closed form; the
//! refusals; and a cached sample's independence of its batch.

use super::tests::{request, with_params, ChainAr, ChainOracle};
use super::*;
use crate::kv_cache::DenoiserKvCache;
use crate::{ErrorKind, GenerateRequest, PluginError};
use serde_json::{json, Value};
use std::ops::Range;

/// What the toy network was asked for, call by call.
#[derive(Debug, Clone, PartialEq)]
enum Asked {
    Forward,
    Fill,
    Window(Range<usize>),
}

/// A toy two-layer network with a real key/value cache. Its first layer's state at position
/// `i` is the count of masked positions in the whole row (global, as a bidirectional layer's
/// state is); its output at position `j` puts weight 9 on the token `T = Σ_i h_i` (mod the
/// vocabulary) and 1 on every other, and with `neighbour` weight 5 more on the token after its
/// left neighbour's (as that neighbour's state holds it). A forward pass computes every state
/// from the current canvas, a fill also stores the canvas, and a window computes the states
/// inside it afresh and takes the others from the stored canvas: stale exactly where the
/// canvas changed since the fill, as a real cache is.
struct StaleCounter {
    vocab: usize,
    neighbour: bool,
    has_cache: bool,
    time_conditioned: bool,
    /// `(batch, length, tokens)` of the last fill.
    filled: Option<(usize, usize, Vec<u32>)>,
    asked: Vec<Asked>,
}

impl StaleCounter {
    fn new(neighbour: bool) -> Self {
        StaleCounter {
            vocab: 100,
            neighbour,
            has_cache: true,
            time_conditioned: false,
            filled: None,
            asked: Vec::new(),
        }
    }

    /// Row `now`'s distributions at the positions of `window` (into `out`, `window.len() ×
    /// vocab`), every state outside the window taken from `cached` when given.
    fn row(&self, now: &[u32], cached: Option<&[u32]>, window: &Range<usize>, out: &mut [f64]) {
        let v = self.vocab;
        let mask = v as u32;
        let source = |i: usize| match cached {
            Some(cached) if !window.contains(&i) => cached,
            _ => now,
        };
        let masks = |row: &[u32]| row.iter().filter(|&&x| x == mask).count();
        let total: usize = (0..now.len()).map(|i| masks(source(i))).sum();
        for (o, j) in out.chunks_mut(v).zip(window.clone()) {
            o.fill(1.0);
            o[total % v] += 8.0;
            if self.neighbour && j > 0 {
                let left = source(j - 1)[j - 1];
                if left != mask {
                    o[(left as usize + 1) % v] += 5.0;
                }
            }
            let sum: f64 = o.iter().sum();
            o.iter_mut().for_each(|p| *p /= sum);
        }
    }

    fn rows(&self, tokens: &[u32], length: usize, window: &Range<usize>, out: &mut [f64]) {
        let width = window.len() * self.vocab;
        let cached = self.filled.as_ref().map(|(_, _, t)| t);
        for (b, (now, o)) in tokens.chunks(length).zip(out.chunks_mut(width)).enumerate() {
            let cached = cached.map(|t| &t[b * length..(b + 1) * length]);
            self.row(now, cached, window, o);
        }
    }
}

impl Denoiser for StaleCounter {
    fn vocab_size(&self) -> usize {
        self.vocab
    }
    fn time_conditioned(&self) -> bool {
        self.time_conditioned
    }
    fn denoise(
        &mut self,
        tokens: &[u32],
        _batch: usize,
        length: usize,
        _t: f64,
        out: &mut [f64],
    ) -> Result<()> {
        self.asked.push(Asked::Forward);
        let saved = self.filled.take();
        self.rows(tokens, length, &(0..length), out);
        self.filled = saved;
        Ok(())
    }
    fn kv_cache(&mut self) -> Option<&mut dyn DenoiserKvCache> {
        if self.has_cache {
            Some(self)
        } else {
            None
        }
    }
}

impl DenoiserKvCache for StaleCounter {
    fn denoise_and_fill(
        &mut self,
        tokens: &[u32],
        batch: usize,
        length: usize,
        _t: f64,
        out: &mut [f64],
    ) -> Result<()> {
        self.asked.push(Asked::Fill);
        self.filled = Some((batch, length, tokens.to_vec()));
        self.rows(tokens, length, &(0..length), out);
        Ok(())
    }
    fn denoise_window(
        &mut self,
        tokens: &[u32],
        batch: usize,
        length: usize,
        window: Range<usize>,
        _t: f64,
        out: &mut [f64],
    ) -> Result<()> {
        self.asked.push(Asked::Window(window.clone()));
        match &self.filled {
            Some((b, l, _)) if (*b, *l) == (batch, length) => {}
            other => {
                return Err(PluginError::internal(format!(
                    "window {window:?} for batch {batch} × {length} after the fill {:?}",
                    other.as_ref().map(|(b, l, _)| (b, l))
                )))
            }
        }
        assert_eq!(out.len(), batch * window.len() * self.vocab);
        self.rows(tokens, length, &window, out);
        Ok(())
    }
}

/// `request` for a remasking sampler with `params` (and `temperature` where not given).
fn cached(name: &str, steps: usize, batch: usize, length: usize, params: Value) -> GenerateRequest {
    with_params(request(name, steps, batch, length, 0), params)
}

/// The cache's definition, step by step, for one row without a prompt decoded left to right
/// one position per step: the call each step makes and the token `T` its output puts first.
/// A full pass sees `length` states of `M` masks; a window of width `w` sees `w` fresh ones
/// and `length − w` of the `M` of the last fill.
fn expected_by_definition(
    length: usize,
    block: usize,
    mode: &str,
    refresh: Option<usize>,
) -> (Vec<Asked>, Vec<u32>) {
    let (mut asked, mut tokens) = (Vec::new(), Vec::new());
    for start in (0..length).step_by(block) {
        let mut masks_at_fill = 0;
        for k in 0..block {
            let masks_now = length - start - k;
            let fills = mode == "none" || k == 0 || refresh.is_some_and(|r| k.is_multiple_of(r));
            let seen = if fills {
                masks_at_fill = masks_now;
                asked.push(if mode == "none" {
                    Asked::Forward
                } else {
                    Asked::Fill
                });
                length * masks_now
            } else {
                let window = if mode == "prefix" {
                    start..length
                } else {
                    start..start + block
                };
                let w = window.len();
                asked.push(Asked::Window(window));
                w * masks_now + (length - w) * masks_at_fill
            };
            tokens.push(seen as u32);
        }
    }
    (asked, tokens)
}

/// `low_confidence` at temperature 0, one position per step: every masked position of the
/// window gets the same confidence, so the earliest commits, with the token `T` the step saw.
/// The tokens and calls are those of the cache's definition for every mode and refresh rule,
/// so windows do read the last fill's state, and `refresh: 1` is no cache.
#[test]
fn windows_read_the_state_of_the_last_fill() {
    let (length, block) = (8, 4);
    let rules: [(&str, Option<usize>); 7] = [
        ("none", None),
        ("prefix", None),
        ("dual", None),
        ("dual", Some(2)),
        ("prefix", Some(3)),
        ("dual", Some(1)),
        ("prefix", Some(1)),
    ];
    let (_, uncached) = expected_by_definition(length, block, "none", None);
    for (mode, refresh) in rules {
        let mut params = json!({"temperature": 0, "block_length": block, "cache": mode});
        if let Some(r) = refresh {
            params["refresh"] = json!(r);
        }
        let mut toy = StaleCounter::new(false);
        let req = cached("low_confidence", length, 1, length, params);
        let (seqs, reply) = generate(&mut toy, &req).unwrap();
        let (asked, tokens) = expected_by_definition(length, block, mode, refresh);
        assert_eq!(toy.asked, asked, "{mode} {refresh:?}: calls");
        assert_eq!(seqs[0], tokens, "{mode} {refresh:?}: tokens");
        assert_eq!(reply.samples[0].nfe, length as u64, "{mode} {refresh:?}");
        if refresh == Some(1) || mode == "none" {
            assert_eq!(
                seqs[0], uncached,
                "{mode} {refresh:?}: not the uncached tokens"
            );
        } else {
            assert_ne!(
                seqs[0], uncached,
                "{mode} {refresh:?}: the cache had no effect"
            );
        }
    }
}

/// Every remasking sampler, sampling, with prompts and semi-autoregressive blocks: `refresh: 1`
/// gives exactly the samples and NFE of `cache: none`, with the same positions computed.
#[test]
fn refresh_every_step_gives_the_uncached_samples() {
    let samplers = [
        ("low_confidence", json!({})),
        ("random", json!({})),
        ("threshold", json!({"tau": 0.3})),
        ("factor", json!({"factor": 1.5})),
        ("eb", json!({"gamma": 0.5})),
    ];
    let (batch, length) = (4, 12);
    for (name, extra) in samplers {
        for mode in ["prefix", "dual"] {
            let mut params = json!({"block_length": 3, "temperature": 0.9});
            params
                .as_object_mut()
                .unwrap()
                .extend(extra.as_object().unwrap().clone());
            let mut req = cached(name, 8, batch, length, params.clone());
            req.prompts = Some(vec![vec![1, 2], vec![3, 4], vec![5, 5], vec![0, 9]]);
            let (plain, plain_reply) = generate(&mut StaleCounter::new(true), &req).unwrap();
            params["cache"] = json!(mode);
            params["refresh"] = json!(1);
            let every = with_params(req.clone(), params);
            let (seqs, reply) = generate(&mut StaleCounter::new(true), &every).unwrap();
            assert_eq!(seqs, plain, "{name} {mode}: tokens");
            assert_eq!(
                reply.samples, plain_reply.samples,
                "{name} {mode}: statistics"
            );
            assert_eq!(reply.batch_nfe, plain_reply.batch_nfe, "{name} {mode}");
            assert_eq!(reply.batch_positions, plain_reply.batch_positions);
        }
    }
}

/// Positions computed per sample in closed form for `low_confidence` (fixed quotas, so every
/// step runs): `none` `steps · L`; per block of `S` steps with a fill every `r` steps
/// (`r = S` for `every_block`), `⌈S/r⌉` fills of `L` and `S − ⌈S/r⌉` windows of the block's
/// width (`dual`) or of `L − start` (`prefix`). NFE counts every call; the batch's positions
/// are the sample's times the batch.
#[test]
fn positions_computed_follow_the_closed_form() {
    let (length, block, batch) = (16, 4, 3);
    // (prompt length, steps, refresh)
    for (prompt, steps, refresh) in [
        (0, 8, None),
        (4, 6, None),
        (0, 16, Some(2)),
        (4, 12, Some(3)),
    ] {
        let starts: Vec<usize> = (prompt..length).step_by(block).collect();
        let per_block = steps / starts.len();
        let fills = refresh.map_or(1, |r: usize| per_block.div_ceil(r));
        let windows = per_block - fills;
        let expected = |mode: &str| -> usize {
            starts
                .iter()
                .map(|&s| match mode {
                    "none" => per_block * length,
                    "dual" => fills * length + windows * block,
                    _ => fills * length + windows * (length - s),
                })
                .sum()
        };
        if prompt == 0 && steps == 8 {
            // The brief's worked figures: 8 × 16, 4 × (16 + 4), 4 × 16 + (16 + 12 + 8 + 4).
            assert_eq!(
                (expected("none"), expected("dual"), expected("prefix")),
                (128, 80, 104)
            );
        }
        for mode in ["none", "prefix", "dual"] {
            let mut params = json!({"block_length": block, "cache": mode});
            if let (Some(r), true) = (refresh, mode != "none") {
                params["refresh"] = json!(r);
            }
            let mut req = cached("low_confidence", steps, batch, length, params);
            req.prompts = Some(vec![vec![7; prompt]; batch]);
            let (_, reply) = generate(&mut StaleCounter::new(true), &req).unwrap();
            for stats in &reply.samples {
                assert_eq!(stats.nfe, steps as u64, "{mode} {prompt} {steps}");
                assert_eq!(
                    stats.positions_computed,
                    Some(expected(mode) as u64),
                    "{mode} prompt {prompt} steps {steps} refresh {refresh:?}"
                );
            }
            assert_eq!(reply.batch_nfe, steps as u64);
            assert_eq!(reply.batch_positions, Some((batch * expected(mode)) as u64));
        }
    }
}

/// Samplers without a cache count a full pass per call: positions are `nfe × length` per
/// sample and `batch_nfe × batch × length` for the batch.
#[test]
fn uncached_samplers_count_the_whole_length_per_call() {
    let (batch, length) = (3, 10);
    for (name, steps) in [
        ("ddpm", 5),
        ("ddpm_cache", 10),
        ("left_to_right", 10),
        ("dream", 4),
    ] {
        let req = request(name, steps, batch, length, 0);
        let (_, reply) = generate(&mut ChainOracle::full(), &req).unwrap();
        for stats in &reply.samples {
            assert_eq!(
                stats.positions_computed,
                Some(stats.nfe * length as u64),
                "{name}"
            );
        }
        let batch_positions = reply.batch_nfe * (batch * length) as u64;
        assert_eq!(reply.batch_positions, Some(batch_positions), "{name}");
    }
}

/// `ar` feeds the prompt one position per call and draws the rest one per call: every
/// position of a sample's sequence is computed once, so `length` per sample (its NFE counts
/// only the draws), and the row's own `length − padding` under left padding.
#[test]
fn ar_computes_every_position_of_its_sequence_once() {
    let (batch, length) = (3, 9);
    let mut req = request("ar", length, batch, length, 0);
    req.prompts = Some(vec![vec![0, 1, 2], vec![1], vec![]]);
    let mut model = ChainAr {
        chain: ChainOracle::full(),
        last: vec![],
        calls: 0,
    };
    let (_, reply) = generate_ar(&mut model, &req).unwrap();
    for (stats, prompt) in reply.samples.iter().zip([3, 1, 0]) {
        assert_eq!(stats.nfe, (length - prompt) as u64);
        assert_eq!(stats.positions_computed, Some(length as u64));
    }
    assert_eq!(model.calls, length);
    assert_eq!(reply.batch_positions, Some((model.calls * batch) as u64));

    let padding = [2, 0, 0];
    let mut padded = AutoregressiveModel { model };
    let (_, reply) = crate::Model::generate_left_padded(&mut padded, &req, &padding).unwrap();
    for (stats, pad) in reply.samples.iter().zip(padding) {
        assert_eq!(stats.positions_computed, Some((length - pad) as u64));
    }
}

fn error_of(toy: &mut StaleCounter, req: &GenerateRequest) -> crate::PluginError {
    generate(toy, req).expect_err("the request must be refused")
}

/// What the cache cannot serve is refused with the reason and the fix.
#[test]
fn cache_requests_are_refused_with_the_fix() {
    let dual = json!({"cache": "dual", "block_length": 4});
    let req = cached("low_confidence", 8, 2, 8, dual.clone());

    let mut without = StaleCounter::new(false);
    without.has_cache = false;
    let err = error_of(&mut without, &req);
    assert_eq!(err.kind, ErrorKind::Unsupported);
    assert!(
        err.message.contains("has none") && err.message.contains("`cache: none`"),
        "{err}"
    );
    assert!(without.asked.is_empty(), "refused before any call");

    let mut timed = StaleCounter::new(false);
    timed.time_conditioned = true;
    let err = error_of(&mut timed, &req);
    assert_eq!(err.kind, ErrorKind::Unsupported);
    assert!(
        err.message.contains("diffusion time") && err.message.contains("`cache: none`"),
        "{err}"
    );

    let mut apart = req.clone();
    apart.prompts = Some(vec![vec![1], vec![1, 2, 3]]);
    let err = error_of(&mut StaleCounter::new(false), &apart);
    assert_eq!(err.kind, ErrorKind::Unsupported);
    for needed in ["1 tokens", "3", "generation_length", "batch_size: 1"] {
        assert!(err.message.contains(needed), "{needed}: {err}");
    }
    // One prompt length, or a batch of one, is served.
    apart.prompts = Some(vec![vec![1, 2, 3], vec![3, 2, 1]]);
    generate(&mut StaleCounter::new(false), &apart).unwrap();

    for (params, needed) in [
        (
            json!({"cache": "full"}),
            "cache must be one of: none, prefix, dual",
        ),
        (
            json!({"cache": "dual", "refresh": 0}),
            "`every_block` or a positive integer",
        ),
        (
            json!({"cache": "dual", "refresh": 2.5}),
            "`every_block` or a positive integer",
        ),
        (
            json!({"cache": "dual", "refresh": "often"}),
            "`every_block` or a positive integer",
        ),
        (json!({"refresh": 4}), "`cache` is `none`"),
    ] {
        let err = error_of(
            &mut StaleCounter::new(false),
            &cached("threshold", 8, 1, 8, params.clone()),
        );
        assert_eq!(err.kind, ErrorKind::BadConfig, "{params}");
        assert!(err.message.contains(needed), "{params}: {err}");
    }
    // Samplers outside the remasking loop do not take a cache.
    let err = error_of(
        &mut StaleCounter::new(false),
        &cached("ddpm", 8, 1, 8, json!({"cache": "dual"})),
    );
    assert!(err.message.contains("has no parameter `cache`"), "{err}");
}

/// The settings a reply states: the cache and refresh rule given (a suite's `refresh: 4` is a
/// number), and the defaults `none` and `every_block` otherwise.
#[test]
fn replies_state_the_cache_settings() {
    let given = cached("eb", 8, 1, 8, json!({"cache": "prefix", "refresh": 4}));
    let (_, reply) = generate(&mut StaleCounter::new(false), &given).unwrap();
    let params = &reply.settings.unwrap()["sampler"]["params"];
    assert_eq!(
        (&params["cache"], &params["refresh"]),
        (&json!("prefix"), &json!(4))
    );
    let (_, reply) = generate(&mut StaleCounter::new(false), &request("eb", 8, 1, 8, 0)).unwrap();
    let params = &reply.settings.unwrap()["sampler"]["params"];
    assert_eq!(
        (&params["cache"], &params["refresh"]),
        (&json!("none"), &json!("every_block"))
    );
}

/// A cached sample's tokens and statistics are those it gets alone: the fills and windows
/// follow the block's step index, which every aligned sample shares, and each row reads only
/// its own cache. `threshold` finishes some samples' blocks early, so companions sit idle.
#[test]
fn cached_samples_do_not_depend_on_their_batch() {
    let prompts = vec![vec![1, 2, 3], vec![4, 4, 4], vec![0, 9, 8], vec![5, 6, 7]];
    for (mode, refresh) in [("dual", None), ("prefix", None), ("dual", Some(2))] {
        let mut params = json!({"block_length": 4, "cache": mode, "tau": 0.2, "temperature": 0.8});
        if let Some(r) = refresh {
            params["refresh"] = json!(r);
        }
        let mut batched = with_params(request("threshold", 9, prompts.len(), 15, 20), params);
        batched.prompts = Some(prompts.clone());
        let (seqs, reply) = generate(&mut StaleCounter::new(true), &batched).unwrap();
        for (b, prompt) in prompts.iter().enumerate() {
            let mut alone = batched.clone();
            alone.batch_size = 1;
            alone.first_index = 20 + b as u64;
            alone.prompts = Some(vec![prompt.clone()]);
            let (alone_seqs, alone_reply) = generate(&mut StaleCounter::new(true), &alone).unwrap();
            assert_eq!(
                seqs[b], alone_seqs[0],
                "{mode} {refresh:?}: sample {b}'s tokens"
            );
            assert_eq!(
                reply.samples[b], alone_reply.samples[0],
                "{mode} {refresh:?}: sample {b}'s statistics"
            );
        }
    }
}

/// The device path's fill and window calls (`TensorKvCache`, the window's logits mapped to the
/// drawn rows on the device) against the host path over the same tensor model (`OnHost`
/// forwarding its cache): the same tokens and statistics.
#[cfg(feature = "burn")]
mod on_device {
    use super::*;
    use crate::kv_cache::TensorKvCache;
    use crate::sampler::device::{generate_by, Kernel, OnHost, TensorDenoiser};
    use burn::tensor::{Device, Tensor, TensorData};

    /// [`StaleCounter`] as a tensor model: its probabilities as log-probabilities.
    struct TensorToy(StaleCounter);

    fn logits(probs: &[f64], shape: [usize; 3]) -> Tensor<3> {
        let values: Vec<f32> = probs.iter().map(|&p| (p as f32).ln()).collect();
        Tensor::from_data(TensorData::new(values, shape), &Device::default())
    }

    impl TensorDenoiser for TensorToy {
        fn vocab_size(&self) -> usize {
            self.0.vocab
        }
        fn logits(
            &mut self,
            tokens: &[u32],
            batch: usize,
            length: usize,
            t: f64,
        ) -> Result<Tensor<3>> {
            let mut out = vec![0.0; batch * length * self.0.vocab];
            self.0.denoise(tokens, batch, length, t, &mut out)?;
            Ok(logits(&out, [batch, length, self.0.vocab]))
        }
        fn kv_cache(&mut self) -> Option<&mut dyn TensorKvCache> {
            if self.0.has_cache {
                Some(self)
            } else {
                None
            }
        }
    }

    impl TensorKvCache for TensorToy {
        fn logits_and_fill(
            &mut self,
            tokens: &[u32],
            batch: usize,
            length: usize,
            t: f64,
        ) -> Result<Tensor<3>> {
            let mut out = vec![0.0; batch * length * self.0.vocab];
            self.0
                .denoise_and_fill(tokens, batch, length, t, &mut out)?;
            Ok(logits(&out, [batch, length, self.0.vocab]))
        }
        fn logits_window(
            &mut self,
            tokens: &[u32],
            batch: usize,
            length: usize,
            window: Range<usize>,
            t: f64,
        ) -> Result<Tensor<3>> {
            let width = window.len();
            let mut out = vec![0.0; batch * width * self.0.vocab];
            self.0
                .denoise_window(tokens, batch, length, window, t, &mut out)?;
            Ok(logits(&out, [batch, width, self.0.vocab]))
        }
    }

    /// Argmax draws, so that no f32 running sum over the vocabulary moves a category boundary
    /// and no f32 rounding reorders the toy's many equal confidences (`device/tests.rs`
    /// measures those cases for sampling): the paths then agree exactly, calls included. The
    /// toy's outputs differ from row to row and position to position (its neighbour term), so
    /// a window's logits mapped to the wrong rows would change the argmax.
    #[test]
    fn the_device_path_draws_the_host_paths_tokens_with_a_cache() {
        let prompts: Vec<Vec<u32>> = (0..8).map(|b| vec![b, b + 1]).collect();
        let cases = [
            ("low_confidence", json!({"cache": "dual", "temperature": 0})),
            (
                "threshold",
                json!({"cache": "prefix", "tau": 0.1, "temperature": 0}),
            ),
            (
                "eb",
                json!({"cache": "dual", "refresh": 2, "gamma": 0.5, "temperature": 0}),
            ),
            (
                "random",
                json!({"cache": "prefix", "refresh": 3, "temperature": 0}),
            ),
        ];
        for kernel in [Kernel::Auto, Kernel::Burn] {
            for (name, mut params) in cases.clone() {
                params["block_length"] = json!(4);
                let mut req = cached(name, 10, prompts.len(), 14, params.clone());
                req.prompts = Some(prompts.clone());
                let mut host_model =
                    OnHost::normalising_as(TensorToy(StaleCounter::new(true)), kernel);
                let (host, host_reply) = generate(&mut host_model, &req).unwrap();
                let mut device_model = TensorToy(StaleCounter::new(true));
                let (device, device_reply) = generate_by(&mut device_model, &req, kernel).unwrap();
                let case = format!("{kernel:?} {name} {params}");
                assert_eq!(host, device, "{case}");
                assert_eq!(host_reply.samples, device_reply.samples, "{case}");
                assert_eq!(host_reply.batch_positions, device_reply.batch_positions);
                let asked = &device_model.0.asked;
                assert_eq!(&host_model.0 .0.asked, asked, "{case}: calls");
                assert!(
                    asked.iter().any(|a| matches!(a, Asked::Window(_))),
                    "{case}"
                );
            }
        }
    }

    /// A tensor model whose logits are flat whatever it reads: it hides left padding trivially,
    /// so a padded batch's rows are exactly the rows alone.
    struct Flat;

    fn flat(batch: usize, width: usize) -> Tensor<3> {
        Tensor::zeros([batch, width, 5], &Device::default())
    }

    impl TensorDenoiser for Flat {
        fn vocab_size(&self) -> usize {
            5
        }
        fn logits(&mut self, _: &[u32], batch: usize, length: usize, _: f64) -> Result<Tensor<3>> {
            Ok(flat(batch, length))
        }
        fn kv_cache(&mut self) -> Option<&mut dyn TensorKvCache> {
            Some(self)
        }
        fn set_left_padding(&mut self, _: &[usize]) -> Result<()> {
            Ok(())
        }
    }

    impl TensorKvCache for Flat {
        fn logits_and_fill(
            &mut self,
            _: &[u32],
            batch: usize,
            length: usize,
            _: f64,
        ) -> Result<Tensor<3>> {
            Ok(flat(batch, length))
        }
        fn logits_window(
            &mut self,
            _: &[u32],
            batch: usize,
            _: usize,
            window: Range<usize>,
            _: f64,
        ) -> Result<Tensor<3>> {
            Ok(flat(batch, window.len()))
        }
    }

    /// Under left padding (`Model::generate_left_padded`, a text task's `generation_length`)
    /// a sample's positions computed are those of the row alone: the padding hidden in each
    /// full pass is not its cost (the batch's positions keep it); windows lie past the prompt.
    #[test]
    fn left_padding_is_not_a_samples_cost() {
        use crate::sampler::device::TensorDenoiserModel;
        use crate::Model;
        let prompts: Vec<Vec<u32>> = vec![vec![1, 2, 3], vec![4], vec![2, 2]];
        let padding = [0, 2, 1];
        let padded: Vec<Vec<u32>> = prompts
            .iter()
            .zip(padding)
            .map(|(p, pad)| [vec![0; pad], p.clone()].concat())
            .collect();
        let generation = 8;
        let mut model = TensorDenoiserModel { denoiser: Flat };
        for mode in ["none", "prefix", "dual"] {
            let params = json!({"block_length": 4, "cache": mode});
            let mut batched = cached("low_confidence", 6, 3, 3 + generation, params);
            batched.first_index = 30;
            batched.prompts = Some(padded.clone());
            let (seqs, reply) = model.generate_left_padded(&batched, &padding).unwrap();
            for (b, prompt) in prompts.iter().enumerate() {
                let mut alone = batched.clone();
                alone.batch_size = 1;
                alone.length = prompt.len() + generation;
                alone.first_index = 30 + b as u64;
                alone.prompts = Some(vec![prompt.clone()]);
                let (alone_seqs, alone_reply) = model.generate(&alone).unwrap();
                assert_eq!(
                    seqs[b][padding[b]..],
                    alone_seqs[0][..],
                    "{mode}: sample {b}"
                );
                assert_eq!(
                    reply.samples[b], alone_reply.samples[0],
                    "{mode}: sample {b}"
                );
            }
            let full_calls = if mode == "none" { 6 } else { 2 };
            let widths: u64 = reply
                .samples
                .iter()
                .map(|s| s.positions_computed.unwrap())
                .sum();
            let padding_total: usize = padding.iter().sum();
            assert_eq!(
                reply.batch_positions,
                Some(widths + (full_calls * padding_total) as u64),
                "{mode}"
            );
        }
    }
}
