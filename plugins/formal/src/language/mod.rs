//! Ground-truth formal languages (n-gram and HMM) with exact scoring, exact entropy, support
//! density, a ground-truth sampler and the exact oracle denoiser (conditional marginals).
//!
//! # Sequences and tokens
//!
//! Token ids are `u32` in `0..vocab`; the MASK token id is `vocab` ([`Language::mask_id`]).
//! Sequences have a fixed length `L` (no end token); an n-gram language of order `n` needs
//! `L >= n-1`, an HMM `L >= 1` ([`Language::min_length`]).
//!
//! # How the languages are generated (our reading of the paper's Algorithms 1 and 2)
//!
//! Feng et al. (arXiv 2502.09622) elide their generation algorithms; this is the definition
//! used here (DESIGN.md §3). A single generator `ChaCha8Rng::seed_from_u64(seed)` produces a
//! stream of standard normals (Box–Muller, both values of each pair used in order). For every
//! *context* a fresh block of normals `z` is taken, one per outcome, and turned into a row
//!
//! ```text
//! p = softmax(temperature · z);  p_i := 0 where p_i < threshold;  p := p / Σ p
//! ```
//!
//! * **n-gram of order n** over `V` tokens: first the initial distribution, a joint
//!   distribution over the first `n-1` tokens (`V^(n-1)` outcomes, indexed by the window code
//!   below); then, for every context window `w = 0, 1, …, V^(n-1)-1` in order, the row
//!   `P(x_k = · | x_{k-n+1..k-1} = w)` over `V` outcomes. The probability of a sequence is
//!   `q(x) = init[x_0..x_{n-2}] · Π_{k >= n-1} P(x_k | x_{k-n+1..k-1})`.
//! * **HMM with H hidden states**: first the initial state distribution (`H` outcomes), then
//!   the transition rows of states `0..H` (`H` outcomes each), then the emission rows of
//!   states `0..H` (`V` outcomes each). `q(x) = Σ_z init[z_0] Π_t E[z_t][x_t] Π_{t>0} T[z_{t-1}][z_t]`.
//!
//! "Temperature" *sharpens* (`softmax(temperature · z)`): with `softmax(z / temperature)`
//! Table 1's thresholds would never prune anything. The normals are drawn before and
//! independently of the threshold, so the **TER variant** (threshold 0: full support, finite
//! generative perplexity) and the **SER variant** (Table 1's threshold) of one seed share
//! the same `z`: every SER row is the TER row with the entries below the threshold removed and
//! the rest renormalised. A threshold that would empty a row is an error
//! ([`LanguageError::EmptyRow`]) rather than a silent fix.
//!
//! Table 1 ([`table1`]): vocab 8; temperature 2 / 2 / 2 / 3.2 and threshold
//! 0.008 / 0.008 / 0.005 / 0.003 for the 2-gram / 3-gram / 4-gram / HMM; the HMM has 32 states.
//!
//! **Caveat (measured, see the test `table1_hmm_ser_variant_has_full_sequence_support`):** under
//! this reading, Table 1's HMM SER variant (threshold 0.003) prunes table entries (≈11 of 32
//! successors and ≈5 of 8 emitted tokens survive per state) but *no token sequence*: some hidden
//! path explains every sequence, so its support density is 1 and every model's SER on it is 0.
//! Sequence-level pruning starts near threshold 0.02 and is substantial at 0.05 (about
//! `10^-25`–`10^-33` of length-512 sequences in the support for the seeds tried). The n-gram SER
//! variants do prune sequences (support densities around `10^-46`–`10^-70` at `L = 512`).
//!
//! # Parameter layouts
//!
//! A window of `n-1` tokens `(t_0, …, t_{n-2})` (oldest first) has code
//! `Σ_p t_p · V^(n-2-p)`.
//!
//! | accessor | n-gram | HMM |
//! |---|---|---|
//! | [`Language::initial_distribution`] | `V^(n-1)` entries, by window code | `H` entries, by state |
//! | [`Language::transition_table`] | `V^(n-1) × V` row-major: `[w·V + v] = P(v | w)` | `H × H` row-major: `[i·H + j] = P(j | i)` |
//! | [`Language::emission_table`] | `None` | `H × V` row-major: `[j·V + v] = P(v | state j)` |
//!
//! # Exactness
//!
//! * n-gram scores multiply table entries along the (deterministic) window path, in log space:
//!   `in_support`, `first_invalid` and `log_prob = -inf` are exact.
//! * Every forward–backward pass runs in *scaled* form (each vector divided by its maximum)
//!   with an underflow guard: after rescaling every nonzero entry must be `>= 1e-100`, which,
//!   with every positive parameter `>= 1e-90`, proves that no mathematically positive quantity
//!   was rounded to zero. A sequence that trips the guard is recomputed in log space (slower,
//!   equally exact); a model with parameters below `1e-90` always uses log space. So zero
//!   probabilities are exact zeros and positive ones are never reported as zero, at any `L`.
//!
//! The n-gram engine is a sparse finite-state chain over windows (`V^(n-1)` states, `V`
//! successors each, `V^n` work per step); the HMM engine is dense (`H²` per step).

mod hmm;
mod ngram;
mod numeric;
mod params;
#[cfg(test)]
mod tests;

use std::fmt;
use std::str::FromStr;

use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use serde::{Deserialize, Serialize};
use thiserror::Error;

/// Largest number of parameter-table entries a language may have (`2^26`, 512 MiB of `f64`).
pub const MAX_TABLE_ENTRIES: usize = 1 << 26;

/// The HMM entropy is computed exactly by enumeration when `vocab^L` is at most this many
/// sequences (`2^21 ≈ 2.1e6`, e.g. vocab 8 up to `L = 7`), by Monte Carlo otherwise.
pub const HMM_EXACT_ENTROPY_MAX_SEQUENCES: u64 = 1 << 21;

/// The HMM Monte Carlo entropy stops once its standard error is at most this share of the
/// estimate.
pub const HMM_ENTROPY_RELATIVE_STD_ERROR: f64 = 1e-3;

/// Bounds on the number of sampled sequences of the HMM Monte Carlo entropy.
pub const HMM_ENTROPY_MIN_SAMPLES: usize = 256;
/// See [`HMM_ENTROPY_MIN_SAMPLES`].
pub const HMM_ENTROPY_MAX_SAMPLES: usize = 1 << 20;

/// Everything that can go wrong when building or querying a [`Language`].
#[derive(Debug, Clone, PartialEq, Error)]
#[non_exhaustive]
pub enum LanguageError {
    #[error("n-gram order must be at least 2 (got {order}); use 2 for a bigram language, 3 for a trigram language, and so on")]
    InvalidOrder { order: usize },
    #[error("vocabulary size must be between 2 and {max} (got {vocab}); Table 1 uses 8")]
    InvalidVocab { vocab: usize, max: usize },
    #[error("an HMM needs at least 1 hidden state (got {states}); Table 1 uses 32")]
    InvalidStates { states: usize },
    #[error("the parameter tables would hold {entries} entries, more than the limit of {limit}; lower the vocabulary size, the n-gram order or the number of hidden states")]
    TooLarge { entries: String, limit: usize },
    #[error("temperature must be a finite number greater than 0 (got {temperature}); Table 1 uses 2 for the n-grams and 3.2 for the HMM")]
    InvalidTemperature { temperature: f64 },
    #[error("threshold must be a finite number in [0, 1) (got {threshold}); use 0 for the TER variant and Table 1's value (0.008, 0.008, 0.005, 0.003) for the SER variant")]
    InvalidThreshold { threshold: f64 },
    #[error("threshold {threshold} removes every outcome of row {row} of the {table}; lower the threshold (or use another seed)")]
    EmptyRow {
        table: &'static str,
        row: usize,
        threshold: f64,
    },
    #[error("sequence length {length} is too short for the {kind} language: it needs at least {min} tokens")]
    LengthTooShort {
        length: usize,
        min: usize,
        kind: String,
    },
    #[error(
        "token {token} at position {position} is out of range: tokens must be in 0..{vocab}{hint}"
    )]
    TokenOutOfRange {
        position: usize,
        token: u32,
        vocab: usize,
        hint: &'static str,
    },
    #[error("token {token} at position {position} of sequence {sequence} is out of range: tokens must be in 0..{vocab}, or {vocab} for MASK")]
    BatchTokenOutOfRange {
        sequence: usize,
        position: usize,
        token: u32,
        vocab: usize,
    },
    #[error("{what} has {got} elements but {expected} were expected ({detail})")]
    BufferSize {
        what: &'static str,
        expected: usize,
        got: usize,
        detail: String,
    },
    #[error("sequence {sequence} of the batch has no completion in the support: its unmasked tokens already have probability 0 ({count} such sequence(s) in the batch; their rows of `out` are NaN, every other row is valid)")]
    Inconsistent { sequence: usize, count: usize },
    #[error("{what} is intractable here: {reason}")]
    Intractable { what: &'static str, reason: String },
    #[error("unknown Table 1 language {kind:?}; expected one of \"2-gram\", \"3-gram\", \"4-gram\", \"hmm\"")]
    UnknownKind { kind: String },
}

/// Exact score of one sequence.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SequenceScore {
    /// `ln q(x)` in nats; `-inf` outside the support.
    pub log_prob: f64,
    /// `q(x) > 0`, decided exactly (never by floating-point underflow).
    pub in_support: bool,
    /// The first position `k` such that the prefix `x[..=k]` has probability zero.
    pub first_invalid: Option<usize>,
    /// How many places break the sequence; 0 exactly when `in_support`.
    ///
    /// * n-gram: the number of positions `k >= n-1` whose probability given their context
    ///   `x[k-n+1..k]` is zero, plus 1 when the first `n-1` tokens have initial probability 0.
    /// * HMM: the smallest number of positions at which the hidden chain must be *restarted*
    ///   (its state chosen freely, ignoring the initial/transition probabilities — and the
    ///   emission probability when no state can emit that token) for every other factor of
    ///   some hidden path to be positive. Computed by a greedy forward pass over the set of
    ///   reachable states (restart when it becomes empty), which is optimal because
    ///   explainability of a segment is closed under dropping its first tokens.
    pub invalid_transitions: usize,
}

/// Ground-truth entropy `H(X_1..X_L)` in nats.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct EntropyInfo {
    /// The entropy (or its estimate) in nats.
    pub nats: f64,
    /// Standard error of the estimate; 0 when exact.
    pub std_error: f64,
    /// Whether `nats` is exact (up to floating-point rounding).
    pub exact: bool,
    /// How it was computed, in words.
    pub method: String,
}

impl EntropyInfo {
    /// The optimal TER (generative perplexity of the ground truth itself): `exp(nats / L)`.
    pub fn optimal_ter(&self, length: usize) -> f64 {
        (self.nats / length as f64).exp()
    }
}

/// Which variant of a Table 1 language.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Variant {
    /// Threshold 0: every sequence has positive probability (for TER).
    Ter,
    /// Table 1's threshold: a pruned support (for SER).
    Ser,
}

impl fmt::Display for Variant {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Variant::Ter => "ter",
            Variant::Ser => "ser",
        })
    }
}

impl FromStr for Variant {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        match s.to_ascii_lowercase().as_str() {
            "ter" => Ok(Variant::Ter),
            "ser" => Ok(Variant::Ser),
            _ => Err(format!(
                "unknown variant {s:?}; expected \"ter\" or \"ser\""
            )),
        }
    }
}

/// Table 1 vocabulary size.
pub const TABLE1_VOCAB: usize = 8;
/// Table 1 number of HMM hidden states.
pub const TABLE1_HMM_STATES: usize = 32;

/// The Table 1 language `kind` (`"2-gram"`, `"3-gram"`, `"4-gram"` or `"hmm"`/`"hmm-32"`):
/// vocab 8; temperature 2 / 2 / 2 / 3.2; threshold 0 for [`Variant::Ter`] and
/// 0.008 / 0.008 / 0.005 / 0.003 for [`Variant::Ser`]; 32 hidden states for the HMM.
pub fn table1(kind: &str, variant: Variant, seed: u64) -> Result<Language, LanguageError> {
    let threshold = |t: f64| match variant {
        Variant::Ter => 0.0,
        Variant::Ser => t,
    };
    match kind {
        "2-gram" => Language::ngram(2, TABLE1_VOCAB, 2.0, threshold(0.008), seed),
        "3-gram" => Language::ngram(3, TABLE1_VOCAB, 2.0, threshold(0.008), seed),
        "4-gram" => Language::ngram(4, TABLE1_VOCAB, 2.0, threshold(0.005), seed),
        "hmm" | "hmm-32" => {
            Language::hmm(TABLE1_HMM_STATES, TABLE1_VOCAB, 3.2, threshold(0.003), seed)
        }
        other => Err(LanguageError::UnknownKind {
            kind: other.to_string(),
        }),
    }
}

#[derive(Debug, Clone)]
enum Model {
    NGram(ngram::NGram),
    Hmm(hmm::Hmm),
}

/// A ground-truth language: an n-gram model or an HMM with its exact algorithms.
#[derive(Debug, Clone)]
pub struct Language {
    model: Model,
    temperature: f64,
    threshold: f64,
    seed: u64,
}

fn check_common(vocab: usize, temperature: f64, threshold: f64) -> Result<(), LanguageError> {
    let max = u32::MAX as usize;
    if !(2..=max).contains(&vocab) {
        return Err(LanguageError::InvalidVocab { vocab, max });
    }
    if !(temperature.is_finite() && temperature > 0.0) {
        return Err(LanguageError::InvalidTemperature { temperature });
    }
    if !(threshold.is_finite() && (0.0..1.0).contains(&threshold)) {
        return Err(LanguageError::InvalidThreshold { threshold });
    }
    Ok(())
}

fn too_large(entries: String) -> LanguageError {
    LanguageError::TooLarge {
        entries,
        limit: MAX_TABLE_ENTRIES,
    }
}

impl Language {
    /// n-gram language of the given order (2, 3, 4, …) over `vocab` tokens; see the module
    /// documentation for the generation algorithm.
    pub fn ngram(
        order: usize,
        vocab: usize,
        temperature: f64,
        threshold: f64,
        seed: u64,
    ) -> Result<Language, LanguageError> {
        if order < 2 {
            return Err(LanguageError::InvalidOrder { order });
        }
        check_common(vocab, temperature, threshold)?;
        let described = || format!("{vocab}^{order} + {vocab}^{}", order - 1);
        let exp = u32::try_from(order - 1).map_err(|_| too_large(described()))?;
        let nstates = vocab
            .checked_pow(exp)
            .ok_or_else(|| too_large(described()))?;
        let entries = nstates
            .checked_mul(vocab)
            .and_then(|e| e.checked_add(nstates))
            .ok_or_else(|| too_large(described()))?;
        if entries > MAX_TABLE_ENTRIES {
            return Err(too_large(entries.to_string()));
        }
        let model = ngram::NGram::generate(order, vocab, nstates, temperature, threshold, seed)?;
        Ok(Language {
            model: Model::NGram(model),
            temperature,
            threshold,
            seed,
        })
    }

    /// HMM with `states` hidden states over `vocab` tokens; see the module documentation for
    /// the generation algorithm.
    pub fn hmm(
        states: usize,
        vocab: usize,
        temperature: f64,
        threshold: f64,
        seed: u64,
    ) -> Result<Language, LanguageError> {
        if states == 0 {
            return Err(LanguageError::InvalidStates { states });
        }
        check_common(vocab, temperature, threshold)?;
        let entries = states
            .checked_mul(states)
            .and_then(|e| e.checked_add(states.checked_mul(vocab)?))
            .and_then(|e| e.checked_add(states))
            .ok_or_else(|| too_large(format!("{states}^2 + {states}·{vocab} + {states}")))?;
        if entries > MAX_TABLE_ENTRIES {
            return Err(too_large(entries.to_string()));
        }
        let model = hmm::Hmm::generate(states, vocab, temperature, threshold, seed)?;
        Ok(Language {
            model: Model::Hmm(model),
            temperature,
            threshold,
            seed,
        })
    }

    /// Vocabulary size `V` (tokens `0..V`).
    pub fn vocab(&self) -> usize {
        match &self.model {
            Model::NGram(m) => m.vocab,
            Model::Hmm(m) => m.vocab,
        }
    }

    /// The MASK token id, `V`.
    pub fn mask_id(&self) -> u32 {
        self.vocab() as u32
    }

    /// Shortest valid sequence length: `n-1` for an n-gram, 1 for an HMM.
    pub fn min_length(&self) -> usize {
        match &self.model {
            Model::NGram(m) => m.order - 1,
            Model::Hmm(_) => 1,
        }
    }

    /// `"2-gram"`, `"3-gram"`, …, or `"hmm-32"` (hidden-state count).
    pub fn kind_label(&self) -> String {
        match &self.model {
            Model::NGram(m) => format!("{}-gram", m.order),
            Model::Hmm(m) => format!("hmm-{}", m.states),
        }
    }

    /// The n-gram order, `None` for an HMM.
    pub fn order(&self) -> Option<usize> {
        match &self.model {
            Model::NGram(m) => Some(m.order),
            Model::Hmm(_) => None,
        }
    }

    /// The number of hidden states, `None` for an n-gram.
    pub fn hidden_states(&self) -> Option<usize> {
        match &self.model {
            Model::NGram(_) => None,
            Model::Hmm(m) => Some(m.states),
        }
    }

    /// The softmax temperature the language was drawn with.
    pub fn temperature(&self) -> f64 {
        self.temperature
    }

    /// The pruning threshold (0 for a TER variant).
    pub fn threshold(&self) -> f64 {
        self.threshold
    }

    /// The seed the parameters were drawn from.
    pub fn seed(&self) -> u64 {
        self.seed
    }

    /// Initial distribution (layout in the module documentation).
    pub fn initial_distribution(&self) -> &[f64] {
        match &self.model {
            Model::NGram(m) => &m.init,
            Model::Hmm(m) => &m.init,
        }
    }

    /// Transition table, row-major (layout in the module documentation).
    pub fn transition_table(&self) -> &[f64] {
        match &self.model {
            Model::NGram(m) => &m.cond,
            Model::Hmm(m) => &m.trans,
        }
    }

    /// Emission table `H × V` row-major for an HMM, `None` for an n-gram.
    pub fn emission_table(&self) -> Option<&[f64]> {
        match &self.model {
            Model::NGram(_) => None,
            Model::Hmm(m) => Some(&m.emit),
        }
    }

    /// Test hook: run every recursion of this language in log space.
    #[cfg(test)]
    fn force_log_space(&mut self) {
        match &mut self.model {
            Model::NGram(m) => m.force_log_space(),
            Model::Hmm(m) => m.force_log_space(),
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
    ///   generator seeded by the language seed and `L`, until the standard error is at most
    ///   0.1% of the estimate (at least 256, at most 2^20 sequences).
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

    fn hmm_entropy_monte_carlo(&self, m: &hmm::Hmm, length: usize) -> EntropyInfo {
        let mc_seed =
            self.seed ^ 0x5EED_E7A0_9E37_79B9 ^ (length as u64).wrapping_mul(0x9E37_79B9_7F4A_7C15);
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
    /// counts sequences rather than hidden paths. Errors with [`LanguageError::Intractable`]
    /// when an HMM has more than 2^20 reachable state sets.
    pub fn support_log10_density(&self, length: usize) -> Result<f64, LanguageError> {
        self.check_length(length)?;
        match &self.model {
            Model::NGram(m) => Ok(m.support_log10_density(length)),
            Model::Hmm(m) => m.support_log10_density(length),
        }
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
        }
        match inconsistent {
            Some((sequence, count)) => Err(LanguageError::Inconsistent { sequence, count }),
            None => Ok(()),
        }
    }
}
