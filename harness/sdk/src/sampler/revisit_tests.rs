//! The samplers that revisit committed positions (`remdm`, `threshold_edit`): their reductions
//! to the samplers they extend, their edit counts against what the network saw, and their
//! independence of the batch.

use super::tests::{chain_prob, request, with_params, ChainOracle, TimeMixed};
use super::*;
use serde_json::json;

/// A denoiser that records every canvas it is called on (and forwards to `inner`).
struct Recorder<D: Denoiser> {
    inner: D,
    canvases: Vec<Vec<u32>>,
}

impl<D: Denoiser> Denoiser for Recorder<D> {
    fn vocab_size(&self) -> usize {
        self.inner.vocab_size()
    }
    fn time_conditioned(&self) -> bool {
        self.inner.time_conditioned()
    }
    fn denoise(
        &mut self,
        tokens: &[u32],
        batch: usize,
        length: usize,
        t: f64,
        out: &mut [f64],
    ) -> Result<()> {
        self.canvases.push(tokens.to_vec());
        self.inner.denoise(tokens, batch, length, t, out)
    }
}

/// A chain denoiser that can propose edits: at a masked position the exact conditional
/// marginal (the chain's oracle), at a committed position `j` the chain's conditional of
/// `x_j` given its two neighbours alone (the others masked) — the Gibbs conditional once the
/// neighbours are committed, and defined even where the canvas holds a forbidden pair.
struct ChainEditor(ChainOracle);

impl Denoiser for ChainEditor {
    fn vocab_size(&self) -> usize {
        self.0.vocab
    }
    fn time_conditioned(&self) -> bool {
        false
    }
    fn denoise(
        &mut self,
        tokens: &[u32],
        batch: usize,
        length: usize,
        t: f64,
        out: &mut [f64],
    ) -> Result<()> {
        let v = self.0.vocab;
        let mask = v as u32;
        self.0.denoise(tokens, batch, length, t, out)?;
        let mut scratch = vec![0.0; length * v];
        for b in 0..batch {
            let row = &tokens[b * length..(b + 1) * length];
            for j in (0..length).filter(|&j| row[j] != mask) {
                let local: Vec<u32> = (0..length)
                    .map(|i| if i.abs_diff(j) == 1 { row[i] } else { mask })
                    .collect();
                self.0.denoise(&local, 1, length, t, &mut scratch)?;
                let at = (b * length + j) * v;
                out[at..at + v].copy_from_slice(&scratch[j * v..(j + 1) * v]);
            }
        }
        Ok(())
    }
}

/// Two tokens: a masked position is surely 0; at a committed position the network says 1
/// (`flip: false`), or the other token (`flip: true`, so edits never settle).
struct Contrary {
    flip: bool,
}

impl Denoiser for Contrary {
    fn vocab_size(&self) -> usize {
        2
    }
    fn time_conditioned(&self) -> bool {
        false
    }
    fn denoise(
        &mut self,
        tokens: &[u32],
        _batch: usize,
        _length: usize,
        _t: f64,
        out: &mut [f64],
    ) -> Result<()> {
        for (&token, p) in tokens.iter().zip(out.chunks_mut(2)) {
            let surely = match token {
                2 => 0,
                t if self.flip => 1 - t as usize,
                _ => 1,
            };
            p.copy_from_slice(&[0.0, 0.0]);
            p[surely] = 1.0;
        }
        Ok(())
    }
}

/// One generate call, its error naming the sampler.
fn sample(
    denoiser: &mut dyn Denoiser,
    name: &str,
    steps: usize,
    length: usize,
    params: serde_json::Value,
) -> (Vec<Vec<u32>>, GenerateReply) {
    let r = with_params(request(name, steps, 1, length, 0), params);
    generate(denoiser, &r).unwrap_or_else(|e| panic!("{name}: {e}"))
}

/// Prompts of different lengths in one batch: every sample's tokens and counts are the ones it
/// gets alone.
fn assert_batch_independent(denoiser: &mut dyn Denoiser, name: &str, params: serde_json::Value) {
    let prompts: Vec<Vec<u32>> = vec![vec![0, 1], vec![], vec![2, 2, 0], vec![1]];
    for (block_length, steps) in [(None, 12), (Some(3), 13)] {
        let mut params = params.clone();
        if let Some(bl) = block_length {
            params["block_length"] = json!(bl);
        }
        let mut batched = with_params(request(name, steps, prompts.len(), 9, 20), params);
        batched.prompts = Some(prompts.clone());
        let (seqs, reply) = generate(denoiser, &batched).unwrap();
        for (b, prompt) in prompts.iter().enumerate() {
            let mut alone = batched.clone();
            alone.batch_size = 1;
            alone.first_index = 20 + b as u64;
            alone.prompts = Some(vec![prompt.clone()]);
            let (alone_seqs, alone_reply) = generate(denoiser, &alone).unwrap();
            let at = format!(
                "{name} {} block {block_length:?} sample {b}",
                batched.sampler.params.len()
            );
            assert_eq!(seqs[b], alone_seqs[0], "{at}: tokens depend on the batch");
            assert_eq!(
                reply.samples[b], alone_reply.samples[0],
                "{at}: counts depend on the batch"
            );
        }
    }
}

/// With `eta = 0`, `cap` and `rescale` never mask a token again and unmask with MDLM's
/// probability: `ddpm`'s tokens, NFE and streams exactly, for every noise schedule, with
/// blocks and prompts, on a time-conditioned network too.
#[test]
fn remdm_with_eta_zero_is_ddpm() {
    let prompts: Vec<Vec<u32>> = vec![vec![0, 1], vec![], vec![2, 2, 0]];
    for remask in ["cap", "rescale"] {
        for schedule in [None, Some("linear"), Some("cosine")] {
            for block in [json!({}), json!({ "block_length": 3 })] {
                for seed in [1u64, 2] {
                    let mut remdm = with_params(request("remdm", 9, 3, 8, 5), block.clone());
                    remdm
                        .sampler
                        .params
                        .insert("remask_schedule".into(), json!(remask));
                    remdm.sampler.params.insert("eta".into(), json!(0.0));
                    remdm
                        .sampler
                        .params
                        .insert("temperature".into(), json!(0.8));
                    remdm.sampler.schedule = schedule.map(str::to_string);
                    remdm.seed = seed;
                    remdm.prompts = Some(prompts.clone());
                    let mut ddpm = with_params(request("ddpm", 9, 3, 8, 5), block.clone());
                    ddpm.sampler.params.insert("temperature".into(), json!(0.8));
                    ddpm.sampler.schedule = schedule.map(str::to_string);
                    ddpm.seed = seed;
                    ddpm.prompts = Some(prompts.clone());
                    let at = format!("{remask} {schedule:?} {block} seed {seed}");
                    for time_conditioned in [false, true] {
                        let run = |r: &GenerateRequest| {
                            if time_conditioned {
                                generate(&mut TimeMixed(ChainOracle::full()), r).unwrap()
                            } else {
                                generate(&mut ChainOracle::full(), r).unwrap()
                            }
                        };
                        let (a, ra) = run(&remdm);
                        let (b, rb) = run(&ddpm);
                        assert_eq!(a, b, "{at}: tokens");
                        assert_eq!(ra.samples, rb.samples, "{at}: counts");
                        assert_eq!(ra.batch_nfe, rb.batch_nfe, "{at}: batch NFE");
                        assert!(ra.samples.iter().all(|s| s.edits.is_none()), "{at}");
                    }
                }
            }
        }
    }
}

/// Every token masked again is generated again, and counted as one edit: the canvases the
/// network saw show each step's re-maskings (a committed position masked at the next call);
/// with `eta = 1` every step where `(1 − α_s)/α_t ≥ 1` masks every committed token again.
#[test]
fn remdm_counts_each_token_masked_again_as_one_edit() {
    let (steps, length) = (8, 6);
    let (mut checked, mut edits) = (0, 0);
    for remask in ["cap", "rescale"] {
        for seed in 0u64..12 {
            let mut recorder = Recorder {
                inner: ChainOracle::full(),
                canvases: Vec::new(),
            };
            let mut r = with_params(
                request("remdm", steps, 1, length, seed),
                json!({ "remask_schedule": remask, "eta": 1.0 }),
            );
            r.seed = seed;
            let (seqs, reply) = generate(&mut recorder, &r).unwrap();
            let c = &recorder.canvases;
            if c.len() < steps {
                continue; // a step without masked positions made no call: its canvas is unseen
            }
            assert_eq!(c.len(), steps);
            let remasked = |k: usize| {
                (0..length)
                    .filter(|&j| c[k][j] != 3 && c[k + 1][j] == 3)
                    .count() as u64
            };
            let total: u64 = (0..steps - 1).map(remasked).sum();
            assert_eq!(
                reply.samples[0].edits.unwrap_or(0),
                total,
                "{remask} seed {seed}"
            );
            // loglinear, 8 steps: at steps 1..=3 σ = 1 (every committed token is masked again).
            for k in 1..=3 {
                let kept = (0..length).filter(|&j| c[k][j] != 3 && c[k + 1][j] != 3);
                assert_eq!(kept.count(), 0, "{remask} seed {seed}: step {k}");
            }
            assert!(seqs[0].iter().all(|&t| t < 3));
            checked += 1;
            edits += total;
        }
    }
    assert!(
        checked >= 12,
        "only {checked} runs called the network at every step"
    );
    assert!(edits > 0, "no token was masked again");
}

/// `loop` with 20 steps, `t_on = 0.55`, `t_off = 0.05`: steps 9 to 18 hold `α = alpha_on`.
/// With `eta = 0` nothing moves there (no token is masked again, none unmasks); with `eta = 1`
/// and `alpha_on = 0.9` every committed token is masked again and every masked one unmasks
/// (`σ α_on / (1 − α_on) ≥ 1`), so each step's committed positions are the last one's masked.
#[test]
fn remdm_loop_holds_then_swaps_in_its_remasking_phase() {
    let (steps, length) = (20, 6);
    let mut checked = [0, 0];
    for (case, (eta, alpha_on)) in [(0.0, 0.5), (1.0, 0.9)].into_iter().enumerate() {
        for seed in 0u64..12 {
            let mut recorder = Recorder {
                inner: ChainOracle::full(),
                canvases: Vec::new(),
            };
            let mut r = with_params(
                request("remdm", steps, 1, length, seed),
                json!({ "remask_schedule": "loop", "eta": eta, "alpha_on": alpha_on }),
            );
            r.seed = seed;
            let (seqs, reply) = generate(&mut recorder, &r).unwrap();
            assert!(seqs[0].iter().all(|&t| t < 3));
            let c = &recorder.canvases;
            if c.len() < steps {
                continue; // a step without masked positions made no call: its canvas is unseen
            }
            let committed = |k: usize| -> Vec<bool> { c[k].iter().map(|&t| t != 3).collect() };
            for k in 9..=18 {
                if eta == 0.0 {
                    assert_eq!(c[k + 1], c[k], "seed {seed}: step {k} changed a token");
                } else {
                    let flipped: Vec<bool> = committed(k).iter().map(|x| !x).collect();
                    assert_eq!(committed(k + 1), flipped, "seed {seed}: step {k}");
                }
            }
            if eta == 0.0 {
                assert_eq!(reply.samples[0].edits, None, "seed {seed}");
            }
            checked[case] += 1;
        }
    }
    assert!(
        checked.iter().all(|&n| n >= 3),
        "too few runs called the network at every step: {checked:?}"
    );
}

#[test]
fn remdm_loop_refuses_inconsistent_phases() {
    for params in [
        json!({ "remask_schedule": "loop", "t_on": 0.2, "t_off": 0.3 }),
        json!({ "remask_schedule": "loop", "t_on": 1.0 }),
        json!({ "remask_schedule": "loop", "alpha_on": 1.0 }),
    ] {
        let r = with_params(request("remdm", 8, 1, 4, 0), params.clone());
        let err = generate(&mut ChainOracle::full(), &r).unwrap_err();
        assert!(
            err.message.contains("0 ≤ t_off < t_on < 1"),
            "{params}: {err}"
        );
    }
    let mut r = with_params(
        request("remdm", 8, 1, 4, 0),
        json!({ "remask_schedule": "loop" }),
    );
    r.sampler.schedule = Some("cosine".into());
    let err = generate(&mut ChainOracle::full(), &r).unwrap_err();
    assert!(err.message.contains("own α schedule"), "{err}");
}

#[test]
fn remdm_samples_do_not_depend_on_the_batch() {
    for params in [
        json!({ "remask_schedule": "cap", "eta": 0.5 }),
        json!({ "remask_schedule": "rescale", "eta": 1.0 }),
        json!({ "remask_schedule": "conf" }),
        json!({ "remask_schedule": "loop", "eta": 0.3 }),
    ] {
        assert_batch_independent(&mut ChainOracle::full(), "remdm", params.clone());
        assert_batch_independent(&mut TimeMixed(ChainOracle::full()), "remdm", params);
    }
    // The runs above do remask: edits are counted.
    let (_, reply) = sample(
        &mut ChainOracle::full(),
        "remdm",
        12,
        9,
        json!({ "remask_schedule": "conf" }),
    );
    assert!(reply.samples[0].edits.is_some_and(|e| e > 0), "{reply:?}");
}

/// Every layout of blocks, every budget from one step per block up: every position filled, no
/// more calls than steps.
#[test]
fn revisiting_samplers_fill_every_position_within_their_budget() {
    let cases = [
        ("remdm", json!({ "remask_schedule": "cap", "eta": 1.0 })),
        ("remdm", json!({ "remask_schedule": "rescale", "eta": 0.7 })),
        ("remdm", json!({ "remask_schedule": "conf" })),
        ("remdm", json!({ "remask_schedule": "loop", "eta": 1.0 })),
        ("threshold_edit", json!({ "tau": 0.5, "edit_tau": 0.0 })),
    ];
    for (name, params) in cases {
        for length in [1, 5, 9] {
            for block in [1, 3, 9] {
                for extra in [0, 1, 7] {
                    let steps = blocks(0, length, block).len() + extra;
                    let mut params = params.clone();
                    params["block_length"] = json!(block);
                    let r = with_params(request(name, steps, 3, length, extra as u64), params);
                    let at = format!(
                        "{name} {} L {length} block {block} steps {steps}",
                        r.sampler.params.len()
                    );
                    let (seqs, reply) = generate(&mut ChainEditor(ChainOracle::pruned()), &r)
                        .unwrap_or_else(|e| panic!("{at}: {e}"));
                    assert!(seqs.iter().all(|s| s.iter().all(|&t| t < 3)), "{at}");
                    assert!(reply.batch_nfe as usize <= steps, "{at}");
                    assert!(
                        reply.samples.iter().all(|s| s.nfe as usize <= steps),
                        "{at}"
                    );
                }
            }
        }
    }
}

#[test]
fn remdm_refuses_an_eta_above_one() {
    let r = with_params(request("remdm", 4, 1, 4, 0), json!({ "eta": 1.5 }));
    let err = generate(&mut ChainOracle::full(), &r).unwrap_err();
    assert!(err.message.contains("eta must be at most 1"), "{err}");
}

/// Constructed: masked positions commit 0 with certainty, and the network then prefers 1 at
/// every committed position. Step 1 commits all, step 2 edits all, step 3 finds nothing to edit
/// and ends the block; a smaller budget cuts the edits off.
#[test]
fn threshold_edit_counts_edits_and_steps_exactly() {
    let length = 3;
    let cases = [
        (5, 3, Some(3), 1),
        (3, 3, Some(3), 1),
        (2, 2, Some(3), 1),
        (1, 1, None, 0),
    ];
    for (steps, nfe, edits, token) in cases {
        let (seqs, reply) = sample(
            &mut Contrary { flip: false },
            "threshold_edit",
            steps,
            length,
            json!({ "temperature": 0.0 }),
        );
        assert_eq!(seqs[0], vec![token; length], "steps {steps}");
        assert_eq!(reply.samples[0].nfe, nfe, "steps {steps}");
        assert_eq!(reply.samples[0].edits, edits, "steps {steps}");
    }
    // Two blocks of 2, 3 steps each: each block commits, edits and checks.
    let (seqs, reply) = sample(
        &mut Contrary { flip: false },
        "threshold_edit",
        6,
        4,
        json!({ "block_length": 2 }),
    );
    assert_eq!(seqs[0], vec![1; 4]);
    assert_eq!((reply.samples[0].nfe, reply.samples[0].edits), (6, Some(4)));
    // A network that always prefers the other token: edits at every step after the first,
    // until the budget ends the run.
    for steps in [2, 5] {
        let (_, reply) = sample(
            &mut Contrary { flip: true },
            "threshold_edit",
            steps,
            3,
            json!({}),
        );
        let expected = (steps as u64, Some(3 * (steps as u64 - 1)));
        assert_eq!((reply.samples[0].nfe, reply.samples[0].edits), expected);
    }
}

/// `edit_tau` above 1 (no probability reaches it) is `threshold` exactly: tokens, NFE, no edits.
#[test]
fn threshold_edit_without_edits_is_threshold() {
    let prompts: Vec<Vec<u32>> = vec![vec![0, 1], vec![], vec![2, 2, 0]];
    for block in [json!({}), json!({ "block_length": 3 })] {
        for tau in [0.3, 0.9] {
            for seed in [1u64, 2, 3] {
                let mut params = block.clone();
                params["tau"] = json!(tau);
                params["temperature"] = json!(0.9);
                let mut threshold = with_params(request("threshold", 8, 3, 9, 4), params.clone());
                threshold.seed = seed;
                threshold.prompts = Some(prompts.clone());
                params["edit_tau"] = json!(1.01);
                let mut edit = with_params(request("threshold_edit", 8, 3, 9, 4), params);
                edit.seed = seed;
                edit.prompts = Some(prompts.clone());
                for time_conditioned in [false, true] {
                    let run = |r: &GenerateRequest| {
                        if time_conditioned {
                            generate(&mut TimeMixed(ChainOracle::full()), r).unwrap()
                        } else {
                            generate(&mut ChainEditor(ChainOracle::full()), r).unwrap()
                        }
                    };
                    let (a, ra) = run(&edit);
                    let (b, rb) = run(&threshold);
                    let at = format!("{block} tau {tau} seed {seed} {time_conditioned}");
                    assert_eq!(a, b, "{at}");
                    assert_eq!(ra.samples, rb.samples, "{at}");
                    assert_eq!(ra.batch_nfe, rb.batch_nfe, "{at}");
                }
            }
        }
    }
}

/// Every edit the sampler counts is a token the network saw replaced: between consecutive
/// calls, or after the last one in the output.
#[test]
fn threshold_edit_counts_what_the_network_saw() {
    let mut checked = 0;
    for seed in 0u64..10 {
        let mut recorder = Recorder {
            inner: ChainEditor(ChainOracle::full()),
            canvases: Vec::new(),
        };
        let mut r = with_params(
            request("threshold_edit", 12, 1, 7, seed),
            json!({ "tau": 0.5, "edit_tau": 0.4 }),
        );
        r.seed = seed;
        let (seqs, reply) = generate(&mut recorder, &r).unwrap();
        let mut canvases = recorder.canvases.clone();
        canvases.push(seqs[0].clone());
        let replaced: u64 = canvases
            .windows(2)
            .map(|w| {
                (0..7)
                    .filter(|&j| w[0][j] != 3 && w[1][j] != w[0][j])
                    .count() as u64
            })
            .sum();
        assert_eq!(reply.samples[0].edits.unwrap_or(0), replaced, "seed {seed}");
        assert_eq!(reply.samples[0].nfe as usize, recorder.canvases.len());
        checked += u64::from(replaced > 0);
    }
    assert!(checked > 0, "no run edited anything");
}

#[test]
fn threshold_edit_samples_do_not_depend_on_the_batch() {
    let params = json!({ "tau": 0.5, "edit_tau": 0.4, "temperature": 0.9 });
    assert_batch_independent(
        &mut ChainEditor(ChainOracle::full()),
        "threshold_edit",
        params,
    );
}

/// A chain whose position-wise most likely tokens form a forbidden pair: marginals
/// `[0.4, 0.3, 0.3]`, then `[0.12, 0.28, 0.6]`, then mostly 2, so `threshold` at
/// `temperature: 0` with `tau: 0` commits `0 2 2 2` at once, and `0 → 2` is forbidden. With
/// edits (`edit_tau: 0.6`), the editor's conditionals at step 2 are: position 0 given a 2 after
/// it, `[0, 0.5, 0.5]` (below `edit_tau`: kept); position 1 between 0 and 2, surely 1 (edited);
/// positions 2 and 3, surely 2 (kept). Step 3 finds every token most likely given its
/// neighbours, and the block ends: `0 1 2 2`, in the support, after 3 calls and 1 edit.
#[test]
fn edits_repair_what_parallel_commits_break_on_an_exact_chain() {
    let chain = || ChainOracle {
        vocab: 3,
        init: vec![0.4, 0.3, 0.3],
        trans: vec![0.3, 0.7, 0.0, 0.0, 0.0, 1.0, 0.0, 0.0, 1.0],
        time_conditioned: false,
    };
    let params = json!({ "tau": 0.0, "temperature": 0.0 });
    let (parallel, _) = sample(&mut chain(), "threshold", 6, 4, params.clone());
    assert_eq!(parallel[0], vec![0, 2, 2, 2]);
    assert_eq!(chain_prob(&chain(), &parallel[0]), 0.0);
    let mut params = params;
    params["edit_tau"] = json!(0.6);
    let (edited, reply) = sample(&mut ChainEditor(chain()), "threshold_edit", 6, 4, params);
    assert_eq!(edited[0], vec![0, 1, 2, 2]);
    assert!(chain_prob(&chain(), &edited[0]) > 0.0);
    assert_eq!((reply.samples[0].nfe, reply.samples[0].edits), (3, Some(1)));
}

/// The device path draws what the host path draws for both samplers (both kernels): the same
/// f32 logits, the host reading them as f64 copies normalised as the kernel normalises; draws
/// may differ only where f32 rounding moves a category boundary across a uniform.
#[cfg(feature = "burn")]
#[test]
fn remasking_samplers_draw_the_host_paths_tokens_on_the_device() {
    use super::device::{generate_by, Kernel, OnHost, TensorDenoiser};
    use burn::tensor::{Device, Tensor, TensorData};

    /// A host denoiser's probabilities as log-probability logits.
    struct AsLogits<D>(D);
    impl<D: Denoiser> TensorDenoiser for AsLogits<D> {
        fn vocab_size(&self) -> usize {
            self.0.vocab_size()
        }
        fn time_conditioned(&self) -> bool {
            self.0.time_conditioned()
        }
        fn logits(
            &mut self,
            tokens: &[u32],
            batch: usize,
            length: usize,
            t: f64,
        ) -> Result<Tensor<3>> {
            let vocab = self.0.vocab_size();
            let mut probs = vec![0.0; batch * length * vocab];
            self.0.denoise(tokens, batch, length, t, &mut probs)?;
            let logits: Vec<f32> = probs.iter().map(|&p| (p as f32).ln()).collect();
            let data = TensorData::new(logits, [batch, length, vocab]);
            Ok(Tensor::from_data(data, &Device::default()))
        }
    }

    let cases = [
        ("remdm", json!({ "remask_schedule": "cap", "eta": 0.5 })),
        (
            "remdm",
            json!({ "remask_schedule": "rescale", "eta": 1.0, "block_length": 4 }),
        ),
        ("remdm", json!({ "remask_schedule": "conf" })),
        ("threshold_edit", json!({ "tau": 0.5, "edit_tau": 0.4 })),
        (
            "threshold_edit",
            json!({ "tau": 0.7, "edit_tau": 0.6, "block_length": 4 }),
        ),
    ];
    let (batch, length, steps) = (32, 10, 12);
    for kernel in [Kernel::Auto, Kernel::Burn] {
        let (mut same, mut total, mut edits) = (0usize, 0usize, 0u64);
        for (name, params) in &cases {
            let req = with_params(request(name, steps, batch, length, 0), params.clone());
            let editor = || AsLogits(ChainEditor(ChainOracle::full()));
            let (host, host_reply) =
                generate(&mut OnHost::normalising_as(editor(), kernel), &req).unwrap();
            let (dev, dev_reply) = generate_by(&mut editor(), &req, kernel).unwrap();
            same += host
                .iter()
                .zip(&dev)
                .map(|(h, d)| h.iter().zip(d).filter(|(a, b)| a == b).count())
                .sum::<usize>();
            total += batch * length;
            edits += dev_reply
                .samples
                .iter()
                .filter_map(|s| s.edits)
                .sum::<u64>();
            if host == dev {
                assert_eq!(
                    host_reply.samples, dev_reply.samples,
                    "{kernel:?} {name} {params}"
                );
            }
        }
        assert!(
            same * 1000 >= total * 999,
            "{kernel:?}: {same} of {total} positions agree"
        );
        assert!(edits > 0, "{kernel:?}: no edits on the device");
    }
}
