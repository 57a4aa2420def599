use super::*;
use crate::SamplerSpec;
use proptest::prelude::*;

/// A first-order Markov chain whose exact conditional marginals are computed by
/// forward–backward: a tiny exact denoiser. Where parallel steps have committed a
/// zero-probability pair the conditional is undefined and this test oracle answers uniform.
pub(crate) struct ChainOracle {
    pub vocab: usize,
    pub init: Vec<f64>,
    pub trans: Vec<f64>,
    pub time_conditioned: bool,
}

impl ChainOracle {
    /// A chain with forbidden transitions (1→0 and 2→1).
    pub fn pruned() -> Self {
        ChainOracle {
            vocab: 3,
            init: vec![0.5, 0.3, 0.2],
            trans: vec![0.1, 0.6, 0.3, 0.0, 0.2, 0.8, 0.7, 0.0, 0.3],
            time_conditioned: false,
        }
    }
    /// A chain where every transition is possible (no zero-entropy conditionals).
    pub fn full() -> Self {
        ChainOracle {
            vocab: 3,
            init: vec![0.5, 0.3, 0.2],
            trans: vec![0.1, 0.6, 0.3, 0.25, 0.25, 0.5, 0.6, 0.1, 0.3],
            time_conditioned: false,
        }
    }
}

impl Denoiser for ChainOracle {
    fn vocab_size(&self) -> usize {
        self.vocab
    }
    fn time_conditioned(&self) -> bool {
        self.time_conditioned
    }
    fn denoise(
        &mut self,
        tokens: &[u32],
        batch: usize,
        length: usize,
        _t: f64,
        out: &mut [f64],
    ) -> Result<()> {
        let v = self.vocab;
        for b in 0..batch {
            let row = &tokens[b * length..(b + 1) * length];
            let allowed = |j: usize, x: usize| row[j] as usize == v || row[j] as usize == x;
            let mut fwd = vec![0.0; length * v];
            for (x, f) in fwd.iter_mut().take(v).enumerate() {
                *f = if allowed(0, x) { self.init[x] } else { 0.0 };
            }
            for j in 1..length {
                for y in 0..v {
                    let s: f64 = (0..v)
                        .map(|x| fwd[(j - 1) * v + x] * self.trans[x * v + y])
                        .sum();
                    fwd[j * v + y] = if allowed(j, y) { s } else { 0.0 };
                }
            }
            let mut bwd = vec![1.0; length * v];
            for j in (0..length - 1).rev() {
                for x in 0..v {
                    bwd[j * v + x] = (0..v)
                        .map(|y| {
                            let e = if allowed(j + 1, y) { 1.0 } else { 0.0 };
                            self.trans[x * v + y] * e * bwd[(j + 1) * v + y]
                        })
                        .sum();
                }
            }
            for j in 0..length {
                let z: f64 = (0..v).map(|x| fwd[j * v + x] * bwd[j * v + x]).sum();
                for x in 0..v {
                    out[((b * length) + j) * v + x] = if z > 0.0 {
                        fwd[j * v + x] * bwd[j * v + x] / z
                    } else {
                        1.0 / v as f64
                    };
                }
            }
        }
        Ok(())
    }
}

/// The same chain as an autoregressive model with an incremental ("KV-cached") state: each
/// `next` call only looks at the newly appended tokens.
pub(crate) struct ChainAr {
    pub chain: ChainOracle,
    pub last: Vec<u32>,
    pub calls: usize,
}

impl Autoregressive for ChainAr {
    fn vocab_size(&self) -> usize {
        self.chain.vocab
    }
    fn begin(&mut self, batch: usize, _length: usize) -> Result<()> {
        self.last = vec![u32::MAX; batch];
        Ok(())
    }
    fn next(&mut self, appended: Option<&[u32]>, out: &mut [f64]) -> Result<()> {
        self.calls += 1;
        let v = self.chain.vocab;
        if let Some(a) = appended {
            self.last.copy_from_slice(a);
        }
        for (b, &last) in self.last.iter().enumerate() {
            let row = if last == u32::MAX {
                &self.chain.init[..]
            } else {
                &self.chain.trans[last as usize * v..(last as usize + 1) * v]
            };
            out[b * v..(b + 1) * v].copy_from_slice(row);
        }
        Ok(())
    }
}

pub(crate) fn request(
    name: &str,
    steps: usize,
    batch: usize,
    length: usize,
    first: u64,
) -> GenerateRequest {
    GenerateRequest {
        batch_size: batch,
        length,
        sampler: SamplerSpec {
            name: name.into(),
            steps,
            schedule: None,
            params: Default::default(),
        },
        seed: 7,
        first_index: first,
        prompts: None,
        prompt_texts: None,
        trace: false,
    }
}

pub(crate) fn with_params(mut r: GenerateRequest, params: serde_json::Value) -> GenerateRequest {
    r.sampler.params = params.as_object().unwrap().clone().into_iter().collect();
    r
}

/// Chain probability of a sequence (0 if it uses a forbidden transition).
pub(crate) fn chain_prob(c: &ChainOracle, s: &[u32]) -> f64 {
    let mut p = c.init[s[0] as usize];
    for w in s.windows(2) {
        p *= c.trans[w[0] as usize * c.vocab + w[1] as usize];
    }
    p
}

#[test]
fn ddpm_and_ddpm_cache_agree_and_cache_saves_calls() {
    for block in [None, Some(3)] {
        for steps in [3, 8, 50] {
            let mk = |name| {
                let r = request(name, steps, 5, 8, 0);
                match block {
                    Some(b) => with_params(r, serde_json::json!({ "block_length": b })),
                    None => r,
                }
            };
            let (a, ra) = generate(&mut ChainOracle::pruned(), &mk("ddpm")).unwrap();
            let (b, rb) = generate(&mut ChainOracle::pruned(), &mk("ddpm_cache")).unwrap();
            assert_eq!(a, b, "steps {steps} block {block:?}");
            assert!(rb.batch_nfe <= ra.batch_nfe);
            for s in &rb.samples {
                assert!(
                    s.nfe as usize <= steps.min(8) + 1,
                    "per-sample nfe {} > min(T, L) + 1",
                    s.nfe
                );
            }
        }
    }
    // With many more steps than tokens most steps change nothing.
    let (_, r) = generate(
        &mut ChainOracle::pruned(),
        &request("ddpm_cache", 1000, 1, 8, 0),
    )
    .unwrap();
    assert!(r.batch_nfe <= 8, "nfe {}", r.batch_nfe);
    let (_, r) = generate(&mut ChainOracle::pruned(), &request("ddpm", 1000, 1, 8, 0)).unwrap();
    assert!(
        r.batch_nfe > 8,
        "plain ddpm calls the network at every step that still has masks"
    );
}

#[test]
fn ddpm_cache_is_refused_for_time_conditioned_models() {
    let mut d = ChainOracle::pruned();
    d.time_conditioned = true;
    let err = generate(&mut d, &request("ddpm_cache", 4, 2, 4, 0)).unwrap_err();
    assert!(err.message.contains("time-conditioned"), "{err}");
    assert!(generate(&mut d, &request("ddpm", 4, 2, 4, 0)).is_ok());
}

#[test]
fn samples_do_not_depend_on_batch_size() {
    let cases: Vec<(&str, usize, serde_json::Value)> = vec![
        ("ddpm", 4, serde_json::json!({})),
        ("ddpm_cache", 4, serde_json::json!({})),
        ("low_confidence", 4, serde_json::json!({})),
        ("random", 4, serde_json::json!({ "block_length": 2 })),
        ("threshold", 6, serde_json::json!({ "tau": 0.5 })),
        ("factor", 6, serde_json::json!({ "factor": 1.0 })),
        ("eb", 6, serde_json::json!({ "gamma": 0.3 })),
        ("left_to_right", 6, serde_json::json!({})),
    ];
    for (name, steps, params) in cases {
        let req = |batch, first| with_params(request(name, steps, batch, 6, first), params.clone());
        let (all, _) = generate(&mut ChainOracle::pruned(), &req(64, 0)).unwrap();
        let mut pieces = Vec::new();
        for (first, size) in [(0u64, 1usize), (1, 7), (8, 56)] {
            let (part, _) = generate(&mut ChainOracle::pruned(), &req(size, first)).unwrap();
            pieces.extend(part);
        }
        assert_eq!(all, pieces, "{name}: batch sizes 1, 7 and 56 vs 64");
    }
}

#[test]
fn left_to_right_with_an_exact_oracle_samples_the_chain() {
    let n = 20_000;
    let (seqs, reply) = generate(
        &mut ChainOracle::pruned(),
        &request("left_to_right", 2, n, 2, 0),
    )
    .unwrap();
    assert_eq!(reply.batch_nfe, 2);
    let o = ChainOracle::pruned();
    for x in 0..3u32 {
        for y in 0..3u32 {
            let want = chain_prob(&o, &[x, y]);
            let got = seqs.iter().filter(|s| s[0] == x && s[1] == y).count() as f64 / n as f64;
            let tol = 5.0 * (want * (1.0 - want) / n as f64).sqrt() + 1e-12;
            assert!((got - want).abs() <= tol, "({x},{y}) got {got} want {want}");
        }
    }
}

#[test]
fn left_to_right_never_leaves_the_support() {
    let (seqs, _) = generate(
        &mut ChainOracle::pruned(),
        &request("left_to_right", 10, 500, 10, 0),
    )
    .unwrap();
    assert!(seqs
        .iter()
        .all(|s| chain_prob(&ChainOracle::pruned(), s) > 0.0));
}

#[test]
fn one_step_samples_every_position_independently() {
    // One step draws all positions from the all-masked marginals, so forbidden pairs appear.
    for name in ["ddpm", "low_confidence"] {
        let (seqs, reply) =
            generate(&mut ChainOracle::pruned(), &request(name, 1, 4000, 2, 0)).unwrap();
        assert_eq!(reply.batch_nfe, 1, "{name}");
        assert!(
            seqs.iter()
                .any(|s| chain_prob(&ChainOracle::pruned(), s) == 0.0),
            "{name}"
        );
    }
}

#[test]
fn ar_sampling_with_an_incremental_state_equals_left_to_right_on_the_oracle() {
    let mut ar = ChainAr {
        chain: ChainOracle::pruned(),
        last: vec![],
        calls: 0,
    };
    let (a, ra) = generate_ar(&mut ar, &request("ar", 9, 40, 9, 3)).unwrap();
    let (b, _) = generate(
        &mut ChainOracle::pruned(),
        &request("left_to_right", 9, 40, 9, 3),
    )
    .unwrap();
    assert_eq!(a, b, "same streams, same exact conditionals, same tokens");
    assert_eq!(ra.batch_nfe, 9);
    assert_eq!(ar.calls, 9);
    assert!(
        generate_ar(&mut ar, &request("ar", 8, 1, 9, 0)).is_err(),
        "steps must equal the length"
    );
}

#[test]
fn adaptive_rules_reduce_to_one_token_per_step() {
    // threshold with tau > 1 accepts only the top-1; eb with gamma = 0 accepts one position when
    // no conditional has zero entropy. With steps = L both take exactly L network calls.
    for (name, params) in [
        ("threshold", serde_json::json!({ "tau": 1.5 })),
        ("eb", serde_json::json!({ "gamma": 0.0 })),
    ] {
        let (_, r) = generate(
            &mut ChainOracle::full(),
            &with_params(request(name, 10, 16, 10, 0), params),
        )
        .unwrap();
        assert_eq!(r.batch_nfe, 10, "{name}");
        assert!(r.samples.iter().all(|s| s.nfe == 10), "{name}");
    }
    // With a low threshold the rule commits many positions per step and finishes early.
    let (_, r) = generate(
        &mut ChainOracle::full(),
        &with_params(
            request("threshold", 10, 16, 10, 0),
            serde_json::json!({ "tau": 0.0 }),
        ),
    )
    .unwrap();
    assert_eq!(r.batch_nfe, 1, "tau = 0 accepts everything at once");
    let (_, r) = generate(
        &mut ChainOracle::full(),
        &with_params(
            request("eb", 10, 16, 10, 0),
            serde_json::json!({ "gamma": 100.0 }),
        ),
    )
    .unwrap();
    assert_eq!(
        r.batch_nfe, 1,
        "a huge entropy budget accepts everything at once"
    );
}

#[test]
fn low_confidence_commits_exactly_the_quota() {
    // 10 tokens in 4 steps: quotas 3, 3, 2, 2 — so exactly 4 calls, and after step k the canvas
    // holds the cumulative quota; checked through NFE and completeness.
    let (seqs, r) = generate(
        &mut ChainOracle::full(),
        &request("low_confidence", 4, 3, 10, 0),
    )
    .unwrap();
    assert_eq!(r.batch_nfe, 4);
    assert!(seqs.iter().all(|s| s.len() == 10));
    assert_eq!(quotas(10, 4), vec![3, 3, 2, 2]);
}

#[test]
fn argmax_decoding_is_temperature_zero_and_top_k_one() {
    let t0 = with_params(
        request("low_confidence", 5, 4, 5, 0),
        serde_json::json!({ "temperature": 0.0 }),
    );
    let k1 = with_params(
        request("low_confidence", 5, 4, 5, 9),
        serde_json::json!({ "top_k": 1 }),
    );
    let (a, _) = generate(&mut ChainOracle::full(), &t0).unwrap();
    let (b, _) = generate(&mut ChainOracle::full(), &k1).unwrap();
    assert_eq!(a, b, "greedy decoding ignores the random stream");
    assert!(a.windows(2).all(|w| w[0] == w[1]));
}

#[test]
fn bad_requests_are_errors() {
    let mut d = ChainOracle::pruned();
    for (r, needle) in [
        (request("nope", 4, 1, 4, 0), "unknown sampler"),
        (request("ddpm", 0, 1, 4, 0), "steps ≥ 1"),
        (
            request("left_to_right", 3, 1, 4, 0),
            "must equal the length",
        ),
        (request("ddpm", 3, 0, 4, 0), "positive"),
        (
            with_params(
                request("ddpm", 2, 1, 4, 0),
                serde_json::json!({ "block_length": 1 }),
            ),
            "every block needs at least one step",
        ),
        (
            with_params(
                request("threshold", 4, 1, 4, 0),
                serde_json::json!({ "gamma": 1 }),
            ),
            "has no parameter `gamma`",
        ),
        (
            with_params(
                request("eb", 4, 1, 4, 0),
                serde_json::json!({ "proxy": "vibes" }),
            ),
            "proxy must be",
        ),
        (
            with_params(
                request("ddpm", 4, 1, 4, 0),
                serde_json::json!({ "top_p": 1.5 }),
            ),
            "top_p",
        ),
    ] {
        let e = generate(&mut d, &r).unwrap_err();
        assert!(e.message.contains(needle), "{needle}: {e}");
    }
    let mut r = request("low_confidence", 4, 1, 4, 0);
    r.sampler.schedule = Some("cosine".into());
    assert!(generate(&mut d, &r)
        .unwrap_err()
        .message
        .contains("schedule"));
}

#[test]
fn schedules_have_the_right_end_points() {
    for s in [Schedule::LogLinear, Schedule::Linear, Schedule::Cosine] {
        assert_eq!(s.alpha(0.0), 1.0);
        assert!(s.alpha(1.0) < 1e-8, "{s:?}");
        assert_eq!(s.unmask_probability(0.5, 0.0), 1.0);
        let p = s.unmask_probability(1.0, 0.5);
        assert!((0.0..=1.0).contains(&p));
    }
}

#[test]
fn categorical_rejects_invalid_weights() {
    let mut rng = sample_rng(0, 0);
    assert!(categorical(&[0.0, 0.0], &mut rng).is_err());
    assert!(categorical(&[f64::NAN, 1.0], &mut rng).is_err());
    assert!(categorical(&[-0.5, 1.0], &mut rng).is_err());
    assert_eq!(categorical(&[0.0, 2.0, 0.0], &mut rng).unwrap(), 1);
}

proptest! {
    #[test]
    fn quotas_sum_to_the_length_for_every_block_layout(length in 1usize..300, block in 1usize..300, extra in 0usize..300) {
        let bl = blocks(0, length, block);
        let steps = bl.len() + extra; // every layout with at least one step per block
        let per_block = split_steps(steps, bl.len()).unwrap();
        prop_assert_eq!(per_block.iter().sum::<usize>(), steps);
        prop_assert!(per_block.iter().all(|&s| s >= 1));
        let mut total = 0;
        for (r, s) in bl.iter().zip(&per_block) {
            let q = quotas(r.len(), *s);
            prop_assert_eq!(q.len(), *s);
            prop_assert_eq!(q.iter().sum::<usize>(), r.len());
            total += r.len();
        }
        prop_assert_eq!(total, length);
    }

    #[test]
    fn every_sampler_fills_every_position_within_its_step_budget(
        length in 1usize..16, block in 1usize..16, extra in 0usize..20, which in 0usize..7, seed in 0u64..1000,
    ) {
        let name = ["ddpm", "ddpm_cache", "low_confidence", "random", "threshold", "factor", "eb"][which];
        let nblocks = blocks(0, length, block).len();
        let steps = nblocks + extra;
        let mut r = with_params(request(name, steps, 3, length, seed), serde_json::json!({ "block_length": block }));
        r.seed = seed;
        let (seqs, reply) = generate(&mut ChainOracle::pruned(), &r).unwrap();
        prop_assert!(seqs.iter().all(|s| s.len() == length && s.iter().all(|&t| t < 3)));
        prop_assert!(reply.batch_nfe as usize <= steps, "{} > {}", reply.batch_nfe, steps);
        prop_assert!(reply.samples.iter().all(|s| s.nfe as usize <= steps));
        if name == "ddpm_cache" {
            prop_assert!(reply.samples.iter().all(|s| s.nfe as usize <= steps.min(length)));
        }
    }
}

/// Text tasks: every sampler fills only the generation region after a fixed prompt (prompts of
/// different lengths in one batch, semi-AR blocks included), leaves no mask once it has run,
/// and counts only the region's tokens as generated.
#[test]
fn every_sampler_keeps_prompts_and_fills_only_the_region() {
    let length = 10;
    let prompts: Vec<Vec<u32>> = vec![vec![0, 1, 2], vec![1], vec![], vec![2, 2, 2, 2, 2, 2]];
    for name in Registry::built_in().names() {
        for params in [
            serde_json::json!({}),
            serde_json::json!({"block_length": 4}),
        ] {
            let steps = if info(name).one_step_per_token {
                length
            } else {
                6
            };
            let mut r = request(name, steps, prompts.len(), length, 0);
            // Blocks for every sampler that takes them (`left_to_right` and `dream` do not).
            let takes_blocks = info(name).params.iter().any(|p| p == "block_length");
            if takes_blocks {
                r = with_params(r, params.clone());
            }
            r.prompts = Some(prompts.clone());
            let (seqs, reply) = generate(&mut ChainOracle::full(), &r)
                .unwrap_or_else(|e| panic!("{name} {params}: {e}"));
            for ((seq, prompt), stats) in seqs.iter().zip(&prompts).zip(&reply.samples) {
                assert_eq!(
                    &seq[..prompt.len()],
                    &prompt[..],
                    "{name} {params}: prompt changed"
                );
                assert!(
                    seq.iter().all(|&t| t < 3),
                    "{name} {params}: mask left in {seq:?}"
                );
                assert_eq!(
                    stats.generated_tokens as usize,
                    length - prompt.len(),
                    "{name}"
                );
            }
        }
    }
    // The AR path, too.
    let mut r = request("ar", length, prompts.len(), length, 0);
    r.prompts = Some(prompts.clone());
    let mut ar = ChainAr {
        chain: ChainOracle::full(),
        last: vec![],
        calls: 0,
    };
    let (seqs, reply) = generate_ar(&mut ar, &r).unwrap();
    for ((seq, prompt), stats) in seqs.iter().zip(&prompts).zip(&reply.samples) {
        assert_eq!(&seq[..prompt.len()], &prompt[..], "ar: prompt changed");
        assert_eq!(stats.generated_tokens as usize, length - prompt.len());
    }
}

/// What a sampler's descriptor lists is what its parser accepts: every listed parameter
/// parses with a value of its kind, and an unlisted one is refused with the list.
#[test]
fn every_sampler_accepts_exactly_the_parameters_it_describes() {
    use params::{Handle, Kind, TEMPERATURE, TOP_K, TOP_P};
    let described: Vec<&dyn Sampler> = Registry::built_in()
        .samplers()
        .map(|s| s as &dyn Sampler)
        .chain([&Ar as &dyn Sampler])
        .collect();
    for sampler in described {
        let info = sampler.info();
        let declared: Vec<Param> = [TEMPERATURE.param(), TOP_K.param(), TOP_P.param()]
            .into_iter()
            .chain(sampler.params())
            .collect();
        let names: Vec<&str> = declared.iter().map(|p| p.name).collect();
        assert_eq!(info.params, names, "{}", sampler.name());
        for param in &declared {
            let value = match &param.kind {
                Kind::Number { .. } => serde_json::json!(0.5),
                Kind::Count | Kind::CountOrWord { .. } => serde_json::json!(2),
                Kind::Choice { options } => serde_json::json!(options.last().unwrap()),
            };
            let given = [(param.name.to_string(), value)].into_iter().collect();
            Params::parse(sampler, &given)
                .unwrap_or_else(|e| panic!("{} {}: {e}", sampler.name(), param.name));
        }
        let unknown = [("nope".to_string(), serde_json::json!(1))]
            .into_iter()
            .collect();
        let err = Params::parse(sampler, &unknown).unwrap_err();
        assert!(err.message.contains(&names.join(", ")), "{err}");
        assert_eq!(
            info.one_step_per_token,
            sampler.steps() == Steps::OnePerToken,
            "{}",
            sampler.name()
        );
    }
}

/// A schedule given to a sampler that reads none is refused, naming the samplers that do.
#[test]
fn a_schedule_is_refused_where_it_means_nothing() {
    let mut r = request("left_to_right", 4, 1, 4, 0);
    r.sampler.schedule = Some("cosine".into());
    let err = generate(&mut ChainOracle::pruned(), &r).unwrap_err();
    assert!(
        err.message.contains("takes no `schedule`") && err.message.contains("ddpm, ddpm_cache"),
        "{err}"
    );
}

/// A time-conditioned denoiser: the chain's conditional mixed with the uniform distribution
/// in proportion to `t/2`, so a draw depends on the time the network was called at.
pub(crate) struct TimeMixed(pub ChainOracle);

impl Denoiser for TimeMixed {
    fn vocab_size(&self) -> usize {
        self.0.vocab
    }
    fn time_conditioned(&self) -> bool {
        true
    }
    fn denoise(
        &mut self,
        tokens: &[u32],
        batch: usize,
        length: usize,
        t: f64,
        out: &mut [f64],
    ) -> Result<()> {
        self.0.denoise(tokens, batch, length, t, out)?;
        let uniform = 1.0 / self.0.vocab as f64;
        for p in out.iter_mut() {
            *p = (1.0 - t / 2.0) * *p + t / 2.0 * uniform;
        }
        Ok(())
    }
}

/// A generate call over some model and path, for tests that compare calls.
pub(crate) type GenerateFn<'a> =
    dyn FnMut(&GenerateRequest) -> Result<(Vec<Vec<u32>>, GenerateReply)> + 'a;

/// Prompts of different lengths with semi-autoregressive blocks: each sample's blocks start
/// at its own prompt's end, so every sample's tokens and NFE are the ones it gets alone (the
/// same sample index and seed, batch of one). `time_conditioned`: the model reads `t`, and
/// the blocks' different step counts put batch companions at different times.
pub(crate) fn blocks_do_not_depend_on_the_batch(
    generate: &mut GenerateFn<'_>,
    time_conditioned: bool,
) {
    let length = 11;
    let prompts: Vec<Vec<u32>> = vec![
        vec![0, 1, 2],
        vec![1],
        vec![],
        vec![2, 2, 2, 2, 2],
        vec![0, 1],
    ];
    let takers: Vec<&str> = Registry::built_in()
        .names()
        .into_iter()
        .filter(|&name| info(name).params.iter().any(|p| p == "block_length"))
        .filter(|&name| !(time_conditioned && name == "ddpm_cache"))
        .collect();
    assert!(
        takers.contains(&"ddpm") && takers.contains(&"threshold"),
        "{takers:?}"
    );
    for name in takers {
        for (block_length, steps) in [(3, 9), (4, 7)] {
            for seed in [3u64, 4] {
                let mut batched = with_params(
                    request(name, steps, prompts.len(), length, 10),
                    serde_json::json!({ "block_length": block_length, "temperature": 0.9 }),
                );
                batched.seed = seed;
                batched.prompts = Some(prompts.clone());
                let (seqs, reply) =
                    generate(&batched).unwrap_or_else(|e| panic!("{name} {block_length}: {e}"));
                for (b, prompt) in prompts.iter().enumerate() {
                    let mut alone = batched.clone();
                    alone.batch_size = 1;
                    alone.first_index = 10 + b as u64;
                    alone.prompts = Some(vec![prompt.clone()]);
                    let (alone_seqs, alone_reply) = generate(&alone).unwrap();
                    assert_eq!(
                        seqs[b], alone_seqs[0],
                        "{name} block_length {block_length} seed {seed}: sample {b}'s tokens depend on its batch"
                    );
                    assert_eq!(
                        reply.samples[b], alone_reply.samples[0],
                        "{name} block_length {block_length} seed {seed}: sample {b}'s NFE depends on its batch"
                    );
                }
            }
        }
    }
}

#[test]
fn blocks_start_at_each_samples_own_prompt_end() {
    blocks_do_not_depend_on_the_batch(&mut |r| generate(&mut ChainOracle::full(), r), false);
    blocks_do_not_depend_on_the_batch(
        &mut |r| generate(&mut TimeMixed(ChainOracle::full()), r),
        true,
    );
}
