//! The exact computations on a language: scores, sampling, entropy, support density, the
//! one-step SER and the conditional marginals of the oracle denoiser.

use super::*;

impl Language {
    /// Test hook: run every recursion of this language in log space.
    #[cfg(test)]
    pub(super) fn force_log_space(&mut self) {
        match &mut self.model {
            Model::NGram(m) => m.force_log_space(),
            Model::Hmm(m) => m.force_log_space(),
            Model::Interval(_) => {}
        }
    }

    fn check_length(&self, length: usize) -> Result<(), LanguageError> {
        let min = self.min_length();
        if length < min {
            return Err(LanguageError::LengthTooShort {
                length,
                min,
                kind: self.kind_label(),
            });
        }
        Ok(())
    }

    fn check_sequence(&self, x: &[u32]) -> Result<(), LanguageError> {
        self.check_length(x.len())?;
        let vocab = self.vocab();
        if let Some((position, &token)) = x.iter().enumerate().find(|(_, &t)| t as usize >= vocab) {
            let hint = if token as usize == vocab {
                " (the MASK token is only allowed in conditional_marginals)"
            } else {
                ""
            };
            return Err(LanguageError::TokenOutOfRange {
                position,
                token,
                vocab,
                hint,
            });
        }
        Ok(())
    }

    /// Exact `ln q(x)` in nats; `-inf` outside the support.
    pub fn log_prob(&self, x: &[u32]) -> Result<f64, LanguageError> {
        Ok(self.score(x)?.log_prob)
    }

    /// Exact score: `ln q(x)`, support membership, first invalid prefix and the number of
    /// invalid transitions (see [`SequenceScore`]).
    pub fn score(&self, x: &[u32]) -> Result<SequenceScore, LanguageError> {
        self.check_sequence(x)?;
        Ok(match &self.model {
            Model::NGram(m) => m.score(x),
            Model::Hmm(m) => m.score(x),
            Model::Interval(m) => m.score(x),
        })
    }

    /// [`Language::score`] of every sequence (lengths may differ), bit for bit; an error names
    /// the first bad sequence ([`LanguageError::InSequence`]). The HMM runs one forward pass
    /// for all of them, a vectorised matrix product per position, instead of one per sequence.
    pub fn score_batch<S: AsRef<[u32]>>(
        &self,
        sequences: &[S],
    ) -> Result<Vec<SequenceScore>, LanguageError> {
        for (sequence, x) in sequences.iter().enumerate() {
            self.check_sequence(x.as_ref())
                .map_err(|e| LanguageError::InSequence {
                    sequence,
                    source: Box::new(e),
                })?;
        }
        Ok(match &self.model {
            Model::Hmm(m) => {
                let xs: Vec<&[u32]> = sequences.iter().map(AsRef::as_ref).collect();
                m.score_batch(&xs)
            }
            Model::NGram(m) => sequences.iter().map(|x| m.score(x.as_ref())).collect(),
            Model::Interval(m) => sequences.iter().map(|x| m.score(x.as_ref())).collect(),
        })
    }

    /// Draws one ground-truth sequence of the given length.
    pub fn sample<R: Rng + ?Sized>(
        &self,
        length: usize,
        rng: &mut R,
    ) -> Result<Vec<u32>, LanguageError> {
        self.check_length(length)?;
        Ok(match &self.model {
            Model::NGram(m) => m.sample(length, rng),
            Model::Hmm(m) => m.sample(length, rng),
            Model::Interval(m) => m.sample(length, rng),
        })
    }

    /// Entropy `H(X_1..X_L)` in nats of sequences of length `L`.
    ///
    /// * n-gram: exact, `H(initial) + Σ_k Σ_w P(window_{k-1} = w) · H(P(· | w))` with the window
    ///   marginals propagated forward (`O(L · V^n)`).
    /// * HMM with `V^L <= 2^21`: exact, `Σ_{prefix} q(prefix) · H(X_next | prefix)` over the tree
    ///   of positive-probability prefixes.
    /// * HMM otherwise: a deterministic Monte Carlo estimate (`exact = false`): the mean over
    ///   sampled `x ~ q` of `Σ_t H(X_t | x_<t)` (a Rao–Blackwellised form of `-E[ln q(X)]`,
    ///   with the same expectation and lower variance), sampled in blocks of 64 from a
    ///   generator seeded by the language seed (0 for languages not drawn from a seed) and `L`,
    ///   until the standard error is at most 0.1% of the estimate (at least 256, at most 2^20
    ///   sequences).
    /// * interval language: exact closed form (module documentation).
    pub fn entropy(&self, length: usize) -> Result<EntropyInfo, LanguageError> {
        self.check_length(length)?;
        Ok(match &self.model {
            Model::NGram(m) => EntropyInfo {
                nats: m.entropy(length),
                std_error: 0.0,
                exact: true,
                method:
                    "exact: initial entropy plus window-marginal-weighted conditional entropies"
                        .into(),
            },
            Model::Interval(m) => EntropyInfo {
                nats: m.entropy(length),
                std_error: 0.0,
                exact: true,
                method: "exact: closed form floor(L/k)·((k-1)·ln V + Σ_c (|c|/V)·ln|c|) + (L mod k)·ln V".into(),
            },
            Model::Hmm(m) => {
                let v = m.vocab as u64;
                let small = u32::try_from(length)
                    .ok()
                    .and_then(|l| v.checked_pow(l))
                    .is_some_and(|n| n <= HMM_EXACT_ENTROPY_MAX_SEQUENCES);
                if small {
                    EntropyInfo {
                        nats: m.entropy_exact(length),
                        std_error: 0.0,
                        exact: true,
                        method: format!("exact: enumeration of all {}^{length} sequences", m.vocab),
                    }
                } else {
                    self.hmm_entropy_monte_carlo(m, length)
                }
            }
        })
    }

    pub(super) fn hmm_entropy_monte_carlo(&self, m: &hmm::Hmm, length: usize) -> EntropyInfo {
        let mc_seed = self.seed().unwrap_or(0)
            ^ 0x5EED_E7A0_9E37_79B9
            ^ (length as u64).wrapping_mul(0x9E37_79B9_7F4A_7C15);
        let mut rng = ChaCha8Rng::seed_from_u64(mc_seed);
        let (mut n, mut mean, mut m2) = (0usize, 0.0f64, 0.0f64);
        let std_error = loop {
            for _ in 0..64 {
                let x = m.sample(length, &mut rng);
                let value = m.conditional_entropy_sum(&x);
                n += 1;
                let delta = value - mean;
                mean += delta / n as f64;
                m2 += delta * (value - mean);
            }
            let se = (m2 / (n - 1) as f64 / n as f64).sqrt();
            if n >= HMM_ENTROPY_MIN_SAMPLES
                && (se <= HMM_ENTROPY_RELATIVE_STD_ERROR * mean.abs() || se == 0.0)
            {
                break se;
            }
            if n >= HMM_ENTROPY_MAX_SAMPLES {
                break se;
            }
        };
        EntropyInfo {
            nats: mean,
            std_error,
            exact: false,
            method: format!(
                "monte-carlo: mean over {n} sampled sequences of sum_t H(X_t | x_<t) \
                 (Rao-Blackwellised -E[ln q(X)]; seed {mc_seed:#x})"
            ),
        }
    }

    /// `log10` of the share of all `V^L` sequences that have positive probability (0 for a
    /// TER variant). Exact up to rounding: n-gram by propagating the in-support share of
    /// uniformly random sequences over windows; HMM by the same propagation over the
    /// deterministic automaton of reachable hidden-state sets (subset construction), which
    /// counts sequences rather than hidden paths; interval language in closed form,
    /// `⌊L/k⌋ · log10(1 - p_v)`. `-inf` when no sequence of length `L` has positive
    /// probability (impossible for languages that passed validation). Errors with
    /// [`LanguageError::Intractable`] when an HMM has more than 2^20 reachable state sets.
    pub fn support_log10_density(&self, length: usize) -> Result<f64, LanguageError> {
        self.check_length(length)?;
        match &self.model {
            Model::NGram(m) => Ok(m.support_log10_density(length)),
            Model::Hmm(m) => m.support_log10_density(length),
            Model::Interval(m) => Ok(m.support_log10_density(length)),
        }
    }

    /// For an HMM (n-gram and interval languages: `None`): the exact probability that a
    /// sequence whose positions are drawn *independently*, each from its all-masked marginal
    /// `q(x_t = ·)`, falls outside the support. This is the exact SER of the exact oracle
    /// decoded in one parallel step (`ddpm`/`ddpm_cache` with `steps: 1`, or any sampler whose
    /// only step unmasks every position from the all-masked conditionals). Computed on the
    /// support automaton of [`Language::support_log10_density`] with the marginals as weights
    /// (same limits and errors).
    pub fn one_step_ser(&self, length: usize) -> Result<Option<f64>, LanguageError> {
        self.check_length(length)?;
        let Model::Hmm(m) = &self.model else {
            return Ok(None);
        };
        let v = m.vocab;
        let mut marg = vec![0.0; length * v];
        let masked = vec![self.mask_id(); length];
        self.conditional_marginals(&masked, 1, length, &mut marg)?;
        let log10_in = m.support_log10_mass(length, &|t, tok| marg[t * v + tok])?;
        // 1 - 10^log10_in without cancellation.
        Ok(Some(-(log10_in * std::f64::consts::LN_10).exp_m1()))
    }

    /// Exact oracle denoiser. `tokens` holds `batch` sequences of `length` tokens (row-major,
    /// MASK = `vocab`); `out` (`batch · length · vocab`, row-major) receives, for every masked
    /// position `i`, `q(x_i = v | all unmasked tokens of that sequence)`, and for every unmasked
    /// position the one-hot of its token. Scaled forward–backward with a log-space fallback
    /// (see the module documentation).
    ///
    /// When some sequences' unmasked tokens already have probability zero, every other
    /// sequence is still filled in, the rows of those sequences are set to NaN, and
    /// [`LanguageError::Inconsistent`] names the first of them and their count.
    pub fn conditional_marginals(
        &self,
        tokens: &[u32],
        batch: usize,
        length: usize,
        out: &mut [f64],
    ) -> Result<(), LanguageError> {
        self.check_length(length)?;
        let vocab = self.vocab();
        let shape = || format!("batch {batch} × length {length} × vocab {vocab}");
        let n_tokens = batch
            .checked_mul(length)
            .ok_or_else(|| LanguageError::BufferSize {
                what: "tokens",
                expected: usize::MAX,
                got: tokens.len(),
                detail: shape(),
            })?;
        if tokens.len() != n_tokens {
            return Err(LanguageError::BufferSize {
                what: "tokens",
                expected: n_tokens,
                got: tokens.len(),
                detail: format!("batch {batch} × length {length}"),
            });
        }
        let n_out = n_tokens.saturating_mul(vocab);
        if out.len() != n_out {
            return Err(LanguageError::BufferSize {
                what: "out",
                expected: n_out,
                got: out.len(),
                detail: shape(),
            });
        }
        if let Some(i) = tokens.iter().position(|&t| t as usize > vocab) {
            return Err(LanguageError::BatchTokenOutOfRange {
                sequence: i / length,
                position: i % length,
                token: tokens[i],
                vocab,
            });
        }
        if batch == 0 {
            return Ok(());
        }
        let mut inconsistent: Option<(usize, usize)> = None;
        let rows = tokens
            .chunks_exact(length)
            .zip(out.chunks_exact_mut(length * vocab));
        let mut record = |b: usize, outcome: numeric::Outcome, row: &mut [f64]| {
            if matches!(outcome, numeric::Outcome::Inconsistent) {
                row.fill(f64::NAN);
                let entry = inconsistent.get_or_insert((b, 0));
                entry.1 += 1;
            }
        };
        match &self.model {
            Model::NGram(m) => {
                let mut ws = ngram::Workspace::default();
                for (b, (x, row)) in rows.enumerate() {
                    let outcome = m.marginals(x, row, &mut ws);
                    record(b, outcome, row);
                }
            }
            Model::Hmm(m) => {
                let mut ws = hmm::Workspace::default();
                for (b, (x, row)) in rows.enumerate() {
                    let outcome = m.marginals(x, row, &mut ws);
                    record(b, outcome, row);
                }
            }
            Model::Interval(m) => {
                for (b, (x, row)) in rows.enumerate() {
                    let outcome = m.marginals(x, row);
                    record(b, outcome, row);
                }
            }
        }
        match inconsistent {
            Some((sequence, count)) => Err(LanguageError::Inconsistent { sequence, count }),
            None => Ok(()),
        }
    }
}
