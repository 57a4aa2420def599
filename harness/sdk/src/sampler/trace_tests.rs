//! Trajectories (`trace.rs`) against truth: commit steps and τ on a denoiser whose commit
//! order is known, the prediction after a step by its definition (recomputed from the
//! network's output), the last prediction equal to the output for every sampler, the
//! independence of the batch, and `ar`.

use super::tests::{request, with_params, ChainAr, ChainOracle};
use super::*;
use crate::{GenerateRequest, SampleTrace};
use serde_json::json;

/// Every position puts probability `p(j)` on token 0 and splits the rest over the others, so
/// the confidence ranking (at temperature 0, where every draw is token 0) is `p`'s order.
struct Ranked {
    vocab: usize,
    p: fn(usize) -> f64,
}

impl Denoiser for Ranked {
    fn vocab_size(&self) -> usize {
        self.vocab
    }
    fn denoise(
        &mut self,
        _: &[u32],
        batch: usize,
        length: usize,
        _: f64,
        out: &mut [f64],
    ) -> Result<()> {
        let v = self.vocab;
        for b in 0..batch {
            for j in 0..length {
                let row = &mut out[(b * length + j) * v..(b * length + j + 1) * v];
                let p = (self.p)(j);
                row.fill((1.0 - p) / (v - 1) as f64);
                row[0] = p;
            }
        }
        Ok(())
    }
}

fn traced(r: GenerateRequest) -> GenerateRequest {
    GenerateRequest { trace: true, ..r }
}

fn traces(denoiser: &mut dyn Denoiser, r: &GenerateRequest) -> (Vec<Vec<u32>>, Vec<SampleTrace>) {
    let (sequences, reply) = generate(denoiser, r).unwrap();
    let traces = reply
        .samples
        .into_iter()
        .map(|s| s.trace.expect("traced"))
        .collect();
    (sequences, traces)
}

#[test]
fn commit_steps_and_tau_follow_the_known_order() {
    let length = 8;
    let argmax = json!({"temperature": 0.0});
    let falling = |j: usize| 0.9 - 0.05 * j as f64;
    let rising = |j: usize| 0.5 + 0.05 * j as f64;
    // One position per step, most confident first: left to right, then right to left.
    let r = traced(with_params(
        request("low_confidence", length, 1, length, 0),
        argmax.clone(),
    ));
    let (_, t) = traces(
        &mut Ranked {
            vocab: 3,
            p: falling,
        },
        &r,
    );
    assert_eq!(t[0].commit_steps, (1..=8).collect::<Vec<u64>>());
    assert_eq!((t[0].steps, t[0].left_to_right_tau()), (8, Some(1.0)));
    let (_, t) = traces(
        &mut Ranked {
            vocab: 3,
            p: rising,
        },
        &r,
    );
    assert_eq!(t[0].commit_steps, (1..=8).rev().collect::<Vec<u64>>());
    assert_eq!(t[0].left_to_right_tau(), Some(-1.0));
    // Two positions per step: m = 4 tied pairs among n₀ = 28, all others concordant:
    // τ-b = (n₀ − m) / √(n₀ (n₀ − m)) = √(24/28).
    let r = traced(with_params(
        request("low_confidence", 4, 1, length, 0),
        argmax,
    ));
    let (_, t) = traces(
        &mut Ranked {
            vocab: 3,
            p: falling,
        },
        &r,
    );
    assert_eq!(t[0].commit_steps, vec![1, 1, 2, 2, 3, 3, 4, 4]);
    let tau = t[0].left_to_right_tau().unwrap();
    assert!((tau - (24.0f64 / 28.0).sqrt()).abs() < 1e-12, "{tau}");
    // left_to_right commits in order whatever the network says; a prompt is never committed.
    let mut r = traced(request("left_to_right", length, 1, length, 0));
    r.prompts = Some(vec![vec![2, 1]]);
    let (_, t) = traces(
        &mut Ranked {
            vocab: 3,
            p: rising,
        },
        &r,
    );
    assert_eq!(t[0].commit_steps, vec![0, 0, 1, 2, 3, 4, 5, 6]);
    assert_eq!(t[0].left_to_right_tau(), Some(1.0));
}

#[test]
fn an_untraced_request_records_nothing() {
    let (_, reply) = generate(
        &mut ChainOracle::full(),
        &request("low_confidence", 4, 2, 6, 0),
    )
    .unwrap();
    assert!(reply.samples.iter().all(|s| s.trace.is_none()));
}

#[test]
fn the_prediction_after_a_step_is_the_commits_plus_the_argmax_of_its_output() {
    let (length, mut chain) = (6, ChainOracle::pruned());
    let r = traced(request("low_confidence", length, 1, length, 0));
    let (sequences, t) = traces(&mut chain, &r);
    // Step 1's output is the network's on the all-masked canvas; step 1 committed one position.
    let mut out = vec![0.0; length * chain.vocab];
    chain
        .denoise(&vec![chain.vocab as u32; length], 1, length, 1.0, &mut out)
        .unwrap();
    let first = t[0].commit_steps.iter().position(|&s| s == 1).unwrap();
    let expected: Vec<u32> = (0..length)
        .map(|j| match j == first {
            true => sequences[0][j],
            false => argmax(&out[j * chain.vocab..(j + 1) * chain.vocab]) as u32,
        })
        .collect();
    let predictions = t[0].predictions.as_ref().unwrap();
    assert_eq!(
        (predictions[0].step, &predictions[0].tokens),
        (1, &expected)
    );
    // Recorded only where it changed, in step order, the last being the output.
    assert!(predictions
        .windows(2)
        .all(|w| w[0].step < w[1].step && w[0].tokens != w[1].tokens));
    assert_eq!(predictions.last().unwrap().tokens, sequences[0]);
}

fn argmax(p: &[f64]) -> usize {
    (0..p.len()).fold(0, |best, i| if p[i] > p[best] { i } else { best })
}

/// Every denoiser sampler: each non-prompt position committed at a step within the sample's
/// steps, the last prediction the output, and at temperature 0 on a network whose argmax
/// ignores the context, one prediction only (already the output after step 1).
#[test]
fn every_sampler_ends_on_its_output() {
    let (batch, length) = (3, 10);
    let cases = [
        ("low_confidence", 5, json!({})),
        ("random", 5, json!({"block_length": 5})),
        ("threshold", 10, json!({"tau": 0.7})),
        ("factor", 10, json!({})),
        ("eb", 10, json!({})),
        ("ddpm", 4, json!({})),
        ("ddpm_cache", 4, json!({})),
        ("left_to_right", 10, json!({})),
        ("dream", 5, json!({})),
        ("remdm", 8, json!({})),
        ("threshold_edit", 10, json!({"edit_tau": 0.5})),
    ];
    for (name, steps, params) in cases {
        let mut r = traced(with_params(
            request(name, steps, batch, length, 0),
            params.clone(),
        ));
        r.prompts = Some(vec![vec![1], vec![], vec![0, 2, 1]]);
        let (sequences, reply) = generate(&mut ChainOracle::full(), &r).unwrap();
        for (b, (seq, stats)) in sequences.iter().zip(&reply.samples).enumerate() {
            let t = stats.trace.as_ref().unwrap();
            let prompt = r.prompts.as_ref().unwrap()[b].len();
            assert_eq!(t.steps, stats.nfe, "{name}");
            for (j, &step) in t.commit_steps.iter().enumerate() {
                assert_eq!(step == 0, j < prompt, "{name}: sample {b}, position {j}");
                assert!(step <= t.steps, "{name}");
            }
            let last = t.predictions.as_ref().unwrap().last().unwrap();
            assert_eq!(&last.tokens, seq, "{name}: sample {b}");
        }
        let mut sharp = with_params(request(name, steps, 1, length, 0), params);
        sharp
            .sampler
            .params
            .insert("temperature".into(), json!(0.0));
        let falling = |j: usize| 0.9 - 0.05 * j as f64;
        let (sequences, t) = traces(
            &mut Ranked {
                vocab: 3,
                p: falling,
            },
            &traced(sharp),
        );
        let predictions = t[0].predictions.as_ref().unwrap();
        assert_eq!(predictions.len(), 1, "{name}: {predictions:?}");
        assert_eq!(
            (predictions[0].step, &predictions[0].tokens),
            (1, &sequences[0]),
            "{name}"
        );
    }
}

/// The chain, but late in the denoising (`t < 0.6`) tokens 0 and 1 trade probabilities: a
/// network whose output depends on the time, so an argmax read from another sample's call
/// would show.
struct Timed(ChainOracle);

impl Denoiser for Timed {
    fn vocab_size(&self) -> usize {
        self.0.vocab
    }
    fn time_conditioned(&self) -> bool {
        true
    }
    fn denoise(
        &mut self,
        x: &[u32],
        batch: usize,
        length: usize,
        t: f64,
        out: &mut [f64],
    ) -> Result<()> {
        self.0.denoise(x, batch, length, t, out)?;
        if t < 0.6 {
            out.chunks_mut(self.0.vocab).for_each(|row| row.swap(0, 1));
        }
        Ok(())
    }
}

/// A sample's trajectory is its own: the same in a batch of one as among others, also for a
/// time-conditioned network whose samples sit at different times (one call per time).
#[test]
fn traces_do_not_depend_on_the_batch() {
    let length = 9;
    let prompts = vec![vec![1], vec![0, 2, 1, 1], vec![]];
    let mut plain = ChainOracle::full();
    let mut timed = Timed(ChainOracle::full());
    let networks: [&mut dyn Denoiser; 2] = [&mut plain, &mut timed];
    for network in networks {
        // Blocks of 3 give sample 1 three steps per block and the others two: different times.
        let params = json!({"block_length": 3});
        let mut r = traced(with_params(
            request("low_confidence", 6, 3, length, 0),
            params.clone(),
        ));
        r.prompts = Some(prompts.clone());
        let (_, together) = traces(network, &r);
        for (b, prompt) in prompts.iter().enumerate() {
            let mut alone = traced(with_params(
                request("low_confidence", 6, 1, length, b as u64),
                params.clone(),
            ));
            alone.prompts = Some(vec![prompt.clone()]);
            let (_, t) = traces(network, &alone);
            assert_eq!(t[0], together[b], "sample {b}");
        }
    }
}

#[test]
fn ar_records_its_order_and_no_predictions() {
    let mut model = AutoregressiveModel {
        model: ChainAr {
            chain: ChainOracle::full(),
            last: Vec::new(),
            calls: 0,
        },
    };
    let mut r = traced(request("ar", 6, 2, 6, 0));
    r.prompts = Some(vec![vec![1, 2], vec![]]);
    let (_, reply) = crate::Model::generate(&mut model, &r).unwrap();
    let t: Vec<&SampleTrace> = reply
        .samples
        .iter()
        .map(|s| s.trace.as_ref().unwrap())
        .collect();
    assert_eq!(t[0].commit_steps, vec![0, 0, 1, 2, 3, 4]);
    assert_eq!(t[1].commit_steps, vec![1, 2, 3, 4, 5, 6]);
    assert!(t
        .iter()
        .all(|t| t.predictions.is_none() && t.left_to_right_tau() == Some(1.0)));
    // Left padding (one position in row 0) is laid out as the tokens are.
    r.prompts = Some(vec![vec![0, 1, 2], vec![0, 1, 2]]);
    let (_, reply) = crate::Model::generate_left_padded(&mut model, &r, &[1, 0]).unwrap();
    let t = reply.samples[0].trace.as_ref().unwrap();
    assert_eq!((t.steps, &t.commit_steps), (3, &vec![0, 0, 0, 1, 2, 3]));
}
