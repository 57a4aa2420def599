//! Shared samplers, step accounting and timing.
//!
//! Every sample owns a random stream derived from `(seed, sample index)` alone
//! ([`sample_rng`]), and every random draw a sampler makes for a sample comes from that stream in
//! a fixed order, so a sample's tokens do not depend on the batch size or on sharding.
//! Categorical draws are made in f64 by inverse CDF ([`categorical`]).
//!
//! ## Samplers and the meaning of `steps`
//! * `ddpm` — MDLM ancestral sampling. Time runs on the grid `t_i = 1 − i/steps`; at the step
//!   from `t` to `s` each still-masked position unmasks with probability
//!   `(α_s − α_t)/(1 − α_t)` and, if it does, draws its token from the denoiser's distribution.
//!   The last step reaches `s = 0`, where that probability is 1, so no mask survives and no
//!   separate noise-removal pass is needed. One network call per step while any position of the
//!   batch is still masked.
//! * `ddpm_cache` — identical draws, but the network is only called again after some token of
//!   the batch changed (MDLM's `ddpm_cache`; valid only for time-independent denoisers, refused
//!   for time-conditioned ones). Its tokens equal `ddpm`'s for the same seed; NFE ≤ min(steps, L).
//! * `left_to_right` — one position per step, in order, each drawn from the denoiser's
//!   conditional given the prefix (the "AR-style MDM" baseline). `steps` must equal the length.
//!
//! Schedules (`schedule`): `loglinear` (MDLM default, `α_t = 1 − t`) and `cosine`
//! (`α_t = cos(πt/2)`).
//!
//! ## Accounting
//! `batch_nfe` counts the network calls actually made for the batch. A sample's `nfe` counts the
//! calls that sample needed on its own (for `ddpm_cache`: the first call plus one after each step
//! in which one of *its* tokens changed), so it does not depend on who shared its batch.

use crate::{Denoiser, GenerateReply, GenerateRequest, PluginError, Result, SampleStats};
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use std::time::Instant;

/// Sampler names the SDK implements.
pub const SAMPLERS: &[&str] = &["ddpm", "ddpm_cache", "left_to_right"];

/// The random stream of one sample: depends only on the run seed and the sample's global index.
pub fn sample_rng(seed: u64, index: u64) -> ChaCha8Rng {
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    rng.set_stream(index);
    rng
}

/// Draw an index from unnormalised non-negative weights, in f64 by inverse CDF.
pub fn categorical<R: Rng + ?Sized>(weights: &[f64], rng: &mut R) -> Result<usize> {
    let total: f64 = weights.iter().sum();
    if !(total.is_finite() && total > 0.0) || weights.iter().any(|&w| w < 0.0 || w.is_nan()) {
        return Err(PluginError(format!(
            "invalid distribution (sum {total}); a denoiser must return finite, non-negative probabilities with positive mass"
        )));
    }
    let u: f64 = rng.random::<f64>() * total;
    let mut acc = 0.0;
    let mut last_positive = 0;
    for (i, &w) in weights.iter().enumerate() {
        if w > 0.0 {
            acc += w;
            last_positive = i;
            if u < acc {
                return Ok(i);
            }
        }
    }
    // Rounding can leave u a hair above the running sum; the last positive entry is the answer.
    Ok(last_positive)
}

/// A noise schedule as the clean-token probability `α(t)`, `α(0) = 1`, `α(1) = 0`.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Schedule {
    LogLinear,
    Cosine,
}

impl Schedule {
    pub fn parse(name: Option<&str>) -> Result<Schedule> {
        match name.unwrap_or("loglinear") {
            "loglinear" => Ok(Schedule::LogLinear),
            "cosine" => Ok(Schedule::Cosine),
            other => Err(PluginError(format!(
                "unknown schedule `{other}`; known schedules: loglinear, cosine"
            ))),
        }
    }

    pub fn alpha(self, t: f64) -> f64 {
        match self {
            Schedule::LogLinear => 1.0 - t,
            Schedule::Cosine => (std::f64::consts::FRAC_PI_2 * t).cos(),
        }
    }

    /// Probability that a position masked at time `t` is unmasked by time `s < t`.
    pub fn unmask_probability(self, t: f64, s: f64) -> f64 {
        let (at, as_) = (self.alpha(t), self.alpha(s));
        if s <= 0.0 {
            return 1.0;
        }
        ((as_ - at) / (1.0 - at)).clamp(0.0, 1.0)
    }
}

/// Generate a batch with the sampler the request names.
pub fn generate<D: Denoiser + ?Sized>(
    denoiser: &mut D,
    request: &GenerateRequest,
) -> Result<(Vec<Vec<u32>>, GenerateReply)> {
    let batch = request.batch_size;
    let length = request.length;
    if batch == 0 || length == 0 {
        return Err(PluginError(format!(
            "batch size and length must be positive (got batch {batch}, length {length})"
        )));
    }
    let vocab = denoiser.vocab_size();
    let mask = vocab as u32;
    let mut canvas = Canvas::new(batch, length, mask, request.prompts.as_deref())?;
    let mut rngs: Vec<ChaCha8Rng> = (0..batch as u64)
        .map(|i| sample_rng(request.seed, request.first_index + i))
        .collect();
    let spec = &request.sampler;
    let start = Instant::now();
    let (batch_nfe, per_sample_nfe) = match spec.name.as_str() {
        "ddpm" | "ddpm_cache" => {
            let cache = spec.name == "ddpm_cache";
            if cache && denoiser.time_conditioned() {
                return Err(PluginError(
                    "ddpm_cache reuses network outputs across time steps, which is only valid for a time-independent denoiser; this model is time-conditioned: use `ddpm`".into(),
                ));
            }
            if spec.steps == 0 {
                return Err(PluginError(format!("{} needs steps ≥ 1", spec.name)));
            }
            let schedule = Schedule::parse(spec.schedule.as_deref())?;
            masked_diffusion(
                denoiser,
                &mut canvas,
                &mut rngs,
                spec.steps,
                schedule,
                cache,
            )?
        }
        "left_to_right" => {
            if spec.steps != length {
                return Err(PluginError(format!(
                    "left_to_right decodes one position per step, so steps must equal the length ({length}); got {}",
                    spec.steps
                )));
            }
            left_to_right(denoiser, &mut canvas, &mut rngs)?
        }
        other => {
            return Err(PluginError(format!(
                "unknown sampler `{other}`; this SDK provides: {}",
                SAMPLERS.join(", ")
            )))
        }
    };
    denoiser.synchronize();
    let wall_seconds = start.elapsed().as_secs_f64();
    if canvas.tokens.contains(&mask) {
        return Err(PluginError(format!(
            "sampler `{}` left masked positions in its output (a bug in the sampler)",
            spec.name
        )));
    }
    let samples = (0..batch)
        .map(|b| SampleStats {
            nfe: per_sample_nfe[b],
            generated_tokens: (length - canvas.prompt_len[b]) as u64,
        })
        .collect();
    let sequences = canvas.tokens.chunks(length).map(<[u32]>::to_vec).collect();
    Ok((
        sequences,
        GenerateReply {
            lengths: vec![length; batch],
            samples,
            batch_nfe,
            wall_seconds,
            device: denoiser.device(),
        },
    ))
}

/// The batch being generated, row-major `batch × length`.
struct Canvas {
    tokens: Vec<u32>,
    batch: usize,
    length: usize,
    mask: u32,
    prompt_len: Vec<usize>,
}

impl Canvas {
    fn new(batch: usize, length: usize, mask: u32, prompts: Option<&[Vec<u32>]>) -> Result<Canvas> {
        let mut tokens = vec![mask; batch * length];
        let mut prompt_len = vec![0; batch];
        if let Some(prompts) = prompts {
            if prompts.len() != batch {
                return Err(PluginError(format!(
                    "{} prompts given for a batch of {batch}",
                    prompts.len()
                )));
            }
            for (b, p) in prompts.iter().enumerate() {
                if p.len() > length {
                    return Err(PluginError(format!(
                        "prompt {b} has {} tokens, longer than the length {length}",
                        p.len()
                    )));
                }
                if let Some(&bad) = p.iter().find(|&&t| t >= mask) {
                    return Err(PluginError(format!(
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

    fn row_has_mask(&self, b: usize) -> bool {
        self.tokens[b * self.length..(b + 1) * self.length].contains(&self.mask)
    }
}

fn masked_diffusion<D: Denoiser + ?Sized>(
    denoiser: &mut D,
    canvas: &mut Canvas,
    rngs: &mut [ChaCha8Rng],
    steps: usize,
    schedule: Schedule,
    cache: bool,
) -> Result<(u64, Vec<u64>)> {
    let (batch, length, vocab) = (canvas.batch, canvas.length, denoiser.vocab_size());
    let mut probs = vec![0.0f64; batch * length * vocab];
    let mut batch_nfe = 0u64;
    let mut sample_nfe = vec![0u64; batch];
    // Whether a sample's tokens changed since the network last saw them (true: nothing seen yet).
    let mut stale = vec![true; batch];
    let mut have_output = false;
    for i in 0..steps {
        let t = 1.0 - i as f64 / steps as f64;
        let s = 1.0 - (i + 1) as f64 / steps as f64;
        let active: Vec<bool> = (0..batch).map(|b| canvas.row_has_mask(b)).collect();
        if !active.iter().any(|&a| a) {
            break;
        }
        let must_call = !cache || !have_output || (0..batch).any(|b| active[b] && stale[b]);
        if must_call {
            denoiser.denoise(&canvas.tokens, batch, length, t, &mut probs)?;
            batch_nfe += 1;
            have_output = true;
            for b in 0..batch {
                if active[b] && (!cache || stale[b]) {
                    sample_nfe[b] += 1;
                }
                stale[b] = false;
            }
        }
        let p_unmask = schedule.unmask_probability(t, s);
        for b in 0..batch {
            if !active[b] {
                continue;
            }
            let rng = &mut rngs[b];
            for j in 0..length {
                let at = b * length + j;
                if canvas.tokens[at] != canvas.mask {
                    continue;
                }
                if rng.random::<f64>() < p_unmask {
                    let dist = &probs[at * vocab..(at + 1) * vocab];
                    let token = categorical(dist, rng)
                        .map_err(|e| PluginError(format!("sample {b}, position {j}: {}", e.0)))?;
                    canvas.tokens[at] = token as u32;
                    stale[b] = true;
                }
            }
        }
    }
    Ok((batch_nfe, sample_nfe))
}

fn left_to_right<D: Denoiser + ?Sized>(
    denoiser: &mut D,
    canvas: &mut Canvas,
    rngs: &mut [ChaCha8Rng],
) -> Result<(u64, Vec<u64>)> {
    let (batch, length, vocab) = (canvas.batch, canvas.length, denoiser.vocab_size());
    let mut probs = vec![0.0f64; batch * length * vocab];
    let mut batch_nfe = 0u64;
    let mut sample_nfe = vec![0u64; batch];
    for j in 0..length {
        let needs: Vec<bool> = (0..batch)
            .map(|b| canvas.tokens[b * length + j] == canvas.mask)
            .collect();
        if !needs.iter().any(|&n| n) {
            continue; // a prompt position in every row
        }
        let t = (length - j) as f64 / length as f64;
        denoiser.denoise(&canvas.tokens, batch, length, t, &mut probs)?;
        batch_nfe += 1;
        for b in 0..batch {
            if !needs[b] {
                continue;
            }
            let at = b * length + j;
            let token = categorical(&probs[at * vocab..(at + 1) * vocab], &mut rngs[b])
                .map_err(|e| PluginError(format!("sample {b}, position {j}: {}", e.0)))?;
            canvas.tokens[at] = token as u32;
            sample_nfe[b] += 1;
        }
    }
    Ok((batch_nfe, sample_nfe))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::SamplerSpec;

    /// A first-order Markov chain over `vocab` tokens with a fixed transition matrix, whose
    /// exact conditional marginals are computed by forward–backward: a tiny exact denoiser.
    struct ChainOracle {
        vocab: usize,
        init: Vec<f64>,
        trans: Vec<f64>,
        calls: usize,
    }

    impl ChainOracle {
        fn new() -> Self {
            ChainOracle {
                vocab: 3,
                init: vec![0.5, 0.3, 0.2],
                trans: vec![0.1, 0.6, 0.3, 0.0, 0.2, 0.8, 0.7, 0.0, 0.3],
                calls: 0,
            }
        }
    }

    impl Denoiser for ChainOracle {
        fn vocab_size(&self) -> usize {
            self.vocab
        }
        fn denoise(
            &mut self,
            tokens: &[u32],
            batch: usize,
            length: usize,
            _t: f64,
            out: &mut [f64],
        ) -> Result<()> {
            self.calls += 1;
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
                        // Parallel steps can commit a zero-probability pair; the conditional
                        // is then undefined and this test oracle answers uniform.
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

    fn request(
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
        }
    }

    #[test]
    fn ddpm_and_ddpm_cache_agree_and_cache_saves_calls() {
        for steps in [1, 3, 8, 50] {
            let (a, ra) =
                generate(&mut ChainOracle::new(), &request("ddpm", steps, 5, 8, 0)).unwrap();
            let (b, rb) = generate(
                &mut ChainOracle::new(),
                &request("ddpm_cache", steps, 5, 8, 0),
            )
            .unwrap();
            assert_eq!(a, b, "steps {steps}");
            assert!(rb.batch_nfe <= ra.batch_nfe);
            assert!(rb.batch_nfe as usize <= steps.min(8 * 5));
            for s in &rb.samples {
                assert!(
                    s.nfe as usize <= steps.min(8),
                    "per-sample nfe {} > min(T, L)",
                    s.nfe
                );
            }
        }
        // With many more steps than tokens most steps change nothing.
        let (_, r) = generate(
            &mut ChainOracle::new(),
            &request("ddpm_cache", 1000, 1, 8, 0),
        )
        .unwrap();
        assert!(r.batch_nfe <= 8, "nfe {}", r.batch_nfe);
    }

    #[test]
    fn samples_do_not_depend_on_batch_size() {
        for name in ["ddpm", "ddpm_cache"] {
            let (all, _) = generate(&mut ChainOracle::new(), &request(name, 4, 12, 6, 0)).unwrap();
            let mut pieces = Vec::new();
            for (first, size) in [(0u64, 1usize), (1, 7), (8, 4)] {
                let (part, _) =
                    generate(&mut ChainOracle::new(), &request(name, 4, size, 6, first)).unwrap();
                pieces.extend(part);
            }
            assert_eq!(all, pieces, "{name}");
        }
    }

    #[test]
    fn left_to_right_with_an_exact_oracle_samples_the_chain() {
        // Empirical distribution of (x0, x1) against the exact chain probabilities.
        let n = 20_000;
        let (seqs, reply) = generate(
            &mut ChainOracle::new(),
            &request("left_to_right", 2, n, 2, 0),
        )
        .unwrap();
        assert_eq!(reply.batch_nfe, 2);
        let o = ChainOracle::new();
        for x in 0..3 {
            for y in 0..3 {
                let want = o.init[x] * o.trans[x * 3 + y];
                let got = seqs
                    .iter()
                    .filter(|s| s[0] == x as u32 && s[1] == y as u32)
                    .count() as f64
                    / n as f64;
                // 5 standard errors.
                let tol = 5.0 * (want * (1.0 - want) / n as f64).sqrt() + 1e-12;
                assert!((got - want).abs() <= tol, "({x},{y}) got {got} want {want}");
            }
        }
    }

    #[test]
    fn one_step_samples_every_position_independently() {
        // With one step all positions unmask in parallel from the all-masked marginals, so the
        // pair (x0, x1) is drawn from the product of marginals, not from the chain: the
        // zero-probability transition 1→0 must then appear.
        let (seqs, reply) =
            generate(&mut ChainOracle::new(), &request("ddpm", 1, 4000, 2, 0)).unwrap();
        assert_eq!(reply.batch_nfe, 1);
        assert!(seqs.iter().any(|s| s[0] == 1 && s[1] == 0));
    }

    #[test]
    fn bad_requests_are_errors() {
        let mut d = ChainOracle::new();
        assert!(generate(&mut d, &request("nope", 4, 1, 4, 0)).is_err());
        assert!(generate(&mut d, &request("ddpm", 0, 1, 4, 0)).is_err());
        assert!(generate(&mut d, &request("left_to_right", 3, 1, 4, 0)).is_err());
        assert!(generate(&mut d, &request("ddpm", 3, 0, 4, 0)).is_err());
    }

    #[test]
    fn categorical_rejects_invalid_weights() {
        let mut rng = sample_rng(0, 0);
        assert!(categorical(&[0.0, 0.0], &mut rng).is_err());
        assert!(categorical(&[f64::NAN, 1.0], &mut rng).is_err());
        assert!(categorical(&[-0.5, 1.0], &mut rng).is_err());
        assert_eq!(categorical(&[0.0, 2.0, 0.0], &mut rng).unwrap(), 1);
    }
}
