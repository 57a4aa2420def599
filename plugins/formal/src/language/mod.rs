//! Ground-truth formal languages (n-gram, HMM and the interval language of Theorem 4.4) with
//! exact scoring, exact entropy, support density, a ground-truth sampler and the exact oracle
//! denoiser (conditional marginals).
//!
//! A language comes from one of three sources ([`Origin`]): drawn from a seed
//! ([`Language::ngram`], [`Language::hmm`], [`table1`]; next section), explicit tables
//! ([`Language::from_ngram_tables`], [`Language::from_hmm_tables`]; "Explicit tables"), or the
//! interval language ([`Language::interval`]; "The interval language").
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
//! variants do prune sequences (support densities around `10^-46`–`10^-70` at `L = 512`). For
//! an HMM on which SER can be measured, see "The sparse HMM" below.
//!
//! # The sparse HMM
//!
//! Feng et al.'s rebuttal describes their HMM as having *sparse transitions* and checks
//! sequences for invalid transitions. [`Language::sparse_hmm`] with [`SparseHmm::default`]
//! ([`table1_sparse_hmm`]; task config `hmm` with `variant: sparse`) is Table 1's HMM, drawn
//! from the same normals as the TER and SER variants of the same seed, with exactly two
//! parameters changed:
//!
//! 1. **Transitions: at most `max_successors = 4` successor states per hidden state** (Table 1:
//!    no limit; its threshold 0.003 leaves ≈11 of 32). Each transition row keeps its 4 largest
//!    entries among those at or above the threshold and is renormalised: the ranking, hence
//!    the kept successors, comes from the row's own draws. This is the sparsity of the
//!    rebuttal.
//! 2. **Emissions: threshold `emission_threshold = 0.05`** (Table 1: 0.003), which leaves ≈2.4
//!    instead of ≈5 of the 8 tokens per state. The initial distribution keeps 0.003.
//!
//! *Why both.* A token sequence has probability zero only when *no* hidden path explains it.
//! The set of hidden states reachable after a prefix evolves as "successors of the set, then
//! those that can emit the next token"; if every such set's successors can emit every token
//! between them, no sequence is ever pruned. With Table 1's emissions (≈5 tokens per state)
//! that union covers all 8 tokens even with 3–4 successors per state (measured for seeds
//! 0–3 and 20250214: support density `>= 10^-0.005` at `L = 64`), 2 successors per state
//! prune only erratically (from ≈1 to `10^-1.7` at `L = 64`, by seed), and sparser emissions
//! alone (threshold 0.05 with ≈11 successors) prune nothing either. Together, few successors *and* few tokens
//! per state keep the reachable sets small and their emission union incomplete, so a random
//! sequence soon hits a token no reachable state can emit, and the density falls
//! geometrically in `L`.
//!
//! *Measured* (exact, subset construction; seed 0): `log10` support density −0.135, −0.301,
//! −0.626, −1.274, −2.572, −5.168, −10.360 at `L` = 8, 16, 32, 64, 128, 256, 512 (0.053 of
//! all sequences at `L = 64`); over seeds 0–15 between `10^-0.2` and `10^-4.3` at `L = 64`. An
//! exact oracle decoded left to right (or autoregressively) never leaves the support (SER 0);
//! decoded in one parallel step it does with probability [`Language::one_step_ser`] (seed 0,
//! `L = 64`: 0.852), which is exact too: the same automaton weighted by the all-masked
//! marginals. Everything else (scoring, support check, entropy, conditional marginals) is the
//! HMM engine unchanged: it already handles zero entries exactly, and the tests check the
//! sparse HMM against sums over all hidden paths for every sequence of length `<= 6`.
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
//! The interval language has no stored tables (the first two accessors return empty slices);
//! [`Language::interval_hmm`] builds its HMM tables.
//!
//! # Explicit tables
//!
//! [`Language::from_ngram_tables`] and [`Language::from_hmm_tables`] take the tables in the
//! layouts above, as rows (`initial` is one row; `transitions` has one row per context window
//! in window-code order, or per hidden state; `emissions` one row per hidden state), and check
//! them as described in [`tables`]: shapes, finite non-negative entries, rows summing to 1
//! within [`tables::ROW_SUM_TOLERANCE`] — or all zero, for a context or state that is
//! unreachable from the initial support — so that the support is non-empty for every length.
//! Errors ([`LanguageError::InvalidTable`]) name the table and the row. [`Language::smoothed`]
//! mixes every row with the uniform distribution (a full-support neighbour: the TER variant of
//! a language read from a file, see `crate::file`).
//!
//! # The interval language (the worst case of Theorem 4.4)
//!
//! Theorem 4.4 of Feng et al. says that some HMM needs a number of sampling steps linear in `L`
//! to reach a low SER; their Example C.7 / Note C.8 build it from intervals in which pairs of
//! positions are bound by a parity relation, independently across intervals. The paper's exact
//! construction is not reproduced here; this is the precise definition used, consistent with
//! that description.
//!
//! **Definition.** Parameters: interval length `k >= 2`, vocabulary `V >= 2`, modulus
//! `2 <= m <= V` (default 2: parity). The *class* of a token `t` is `t mod m`; class `c` has
//! `|c| = ⌈(V - c)/m⌉` tokens. A sequence of length `L` is cut into `n = ⌊L/k⌋` complete
//! intervals `[ik, ik+k-1]` and, when `k` does not divide `L`, a trailing partial interval of
//! `r = L mod k` tokens. In a complete interval the first token is uniform over the `V`
//! tokens, the `k-2` interior tokens are uniform and independent, and the last token is uniform
//! over the tokens of the first token's class. The partial interval is uniform and
//! unconstrained (its last position is missing). Intervals are independent:
//!
//! ```text
//! q(x) = Π_{complete i} [class(x_{ik}) = class(x_{ik+k-1})] · V^-(k-1) / |class(x_{ik})|  ·  V^-r
//! ```
//!
//! **Why this choice.** Every single-token marginal is uniform (`P(last = b) = (|c|/V)·(1/|c|)
//! = 1/V`), so two coupled positions look independent to a sampler that unmasks them in the
//! same step, and they are as far apart as an interval allows (distance `k-1`). One constraint
//! per interval, independent across intervals, makes the failure probability compound over
//! the `⌊L/k⌋` intervals, and keeps every quantity in closed form; `k` sets both the coupling
//! distance and the number of constraints. (Coupling every mirrored pair `(i, k-1-i)` would
//! also fit the description, but makes `k/2` constraints per interval, so the number of
//! constraints would no longer depend on `k`.) `m = V` turns the constraint into a copy.
//!
//! **It is an HMM.** Hidden state `(j, c)` = (position inside the interval, class of its first
//! token), `k·m` states numbered `j·m + c`: `P(z_0 = (0, c)) = |c|/V`; `(j, c) → (j+1, c)` with
//! probability 1 for `j < k-1`; `(k-1, c) → (0, c')` with probability `|c'|/V`; states `(0, c)`
//! and `(k-1, c)` emit uniformly over class `c`, interior states uniformly over all tokens.
//! [`Language::interval_hmm`] builds exactly these tables with [`Language::from_hmm_tables`],
//! and the tests check that it agrees with [`Language::interval`], which computes everything in
//! closed form (`O(L)` per sequence instead of `O(L·(km)²)`).
//!
//! **Closed forms** (`n = ⌊L/k⌋`, `r = L mod k`, `p_v = 1 - Σ_c |c|²/V²`, which is 1/2 for
//! parity with an even `V`):
//!
//! * `ln q(x) = -(L - n)·ln V - Σ_{complete i} ln |class(x_{ik})|` on the support;
//!   [`SequenceScore::invalid_transitions`] counts the violated intervals and
//!   `first_invalid` is the last position of the first violated one.
//! * Entropy `H = n·((k-1)·ln V + Σ_c (|c|/V)·ln |c|) + r·ln V` (parity, even `V`:
//!   `n·(k·ln V - ln 2) + r·ln V`).
//! * Support density `log10(|support| / V^L) = n·log10(1 - p_v)`.
//! * Conditional marginals: a masked interior or partial-interval position is uniform; a
//!   masked endpoint whose partner holds token `u` is uniform over `class(u)`; an endpoint
//!   whose partner is masked too is uniform.
//!
//! **SER of the exact oracle under MDLM ancestral sampling** (`ddpm`, `ddpm_cache`; see the
//! SDK's sampler documentation). With `T` steps on the grid `t_i = 1 - i/T` (`s_i = t_{i+1}`),
//! a position still masked at `t_i` unmasks in step `i` with probability
//! `(α(s_i) - α(t_i))/(1 - α(t_i))`, so the step in which a position unmasks is independent
//! across positions, with `P(step i) = α(s_i) - α(t_i)` (`1/T` for the log-linear schedule).
//! Take one complete interval with endpoints `a`, `b`.
//!
//! 1. If `a` and `b` unmask in different steps, the later one is drawn from the exact
//!    conditional given the earlier one, which puts all its mass on the right class: the
//!    constraint holds.
//! 2. If they unmask in the same step, the sampler draws them independently, each from its
//!    conditional given the tokens unmasked before. Those are interior tokens and tokens of
//!    other intervals, all independent of the pair, so both draws are uniform over `V` and
//!    they violate the constraint with probability `p_v`.
//!
//! Interior tokens never matter. Unmasking steps and draws are independent across intervals,
//! and the oracle keeps the exact conditionals of every interval even after another interval
//! broke (its fallback is [`Language::relaxed`]), so
//!
//! ```text
//! P(interval violated) = p_v · Σ_i (α(s_i) - α(t_i))²          (= p_v / T, log-linear)
//! SER_T = 1 - (1 - p_v · Σ_i (α(s_i) - α(t_i))²)^⌊L/k⌋         (= 1 - (1 - p_v/T)^⌊L/k⌋)
//! SER_1 = 1 - (1 - p_v)^⌊L/k⌋                                  (= 1 - 2^-⌊L/k⌋ for parity, even V)
//! ```
//!
//! ([`Language::interval_ddpm_ser`].) Left-to-right decoding (one position per step) never
//! unmasks a pair together: SER 0. Reaching `SER <= ε` with the log-linear schedule needs
//! `T >= p_v / (1 - (1 - ε)^(1/⌊L/k⌋)) ≈ p_v·⌊L/k⌋ / (-ln(1 - ε))` steps: linear in `L` at a
//! fixed interval length, which is the message of Theorem 4.4.
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

mod continuation;
mod exact;
mod hmm;
mod interval;
mod ngram;
mod numeric;
mod params;
mod properties;
pub mod tables;
#[cfg(test)]
mod tests;
#[cfg(test)]
mod tests_batch;
#[cfg(test)]
mod tests_errors;
#[cfg(test)]
mod tests_interval;
#[cfg(test)]
mod tests_marginals;
#[cfg(test)]
mod tests_sampling;
#[cfg(test)]
mod tests_sparse;
#[cfg(test)]
mod tests_tables;

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
    #[error("max_successors must be between 1 and the number of hidden states {states} (got {max_successors}); the sparse HMM's default is {}", SparseHmm::default().max_successors)]
    InvalidMaxSuccessors {
        max_successors: usize,
        states: usize,
    },
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
    #[error("{}: {problem}", table_location(table, *row))]
    InvalidTable {
        /// `"initial distribution"`, `"transition table"` or `"emission table"`.
        table: &'static str,
        /// The 0-based row (`None`: the table as a whole, or the initial distribution).
        row: Option<usize>,
        problem: String,
    },
    #[error("invalid interval language: {problem}")]
    InvalidInterval { problem: String },
    #[error("{what} is not available for the {kind} language")]
    Unsupported { what: &'static str, kind: String },
    #[error("sequence {sequence}: {source}")]
    InSequence {
        /// 0-based index of the sequence in the batch.
        sequence: usize,
        source: Box<LanguageError>,
    },
}

/// `"row 3 of the transition table (`transitions`)"` and the like: the location of an
/// [`LanguageError::InvalidTable`], with the key the table has in a language file.
pub fn table_location(table: &str, row: Option<usize>) -> String {
    let key = match table {
        tables::INITIAL => "initial",
        tables::TRANSITIONS => "transitions",
        tables::EMISSIONS => "emissions",
        _ => "?",
    };
    match row {
        Some(r) => format!("row {r} of the {table} (`{key}`, rows counted from 0)"),
        None => format!("the {table} (`{key}`)"),
    }
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
    /// * interval language: the number of complete intervals whose first and last token
    ///   violate the constraint.
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

/// Parameters of the sparse HMM ([`Language::sparse_hmm`]; module documentation, "The
/// sparse HMM"). [`SparseHmm::default`] is the documented variant: Table 1's HMM with at most 4
/// successors per state and emission threshold 0.05.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct SparseHmm {
    /// Hidden states `H` (Table 1: 32).
    pub states: usize,
    /// Vocabulary size `V` (Table 1: 8).
    pub vocab: usize,
    /// Sharpening temperature (Table 1: 3.2).
    pub temperature: f64,
    /// Threshold on the initial and transition rows (Table 1: 0.003).
    pub threshold: f64,
    /// Threshold on the emission rows (Table 1: 0.003; sparse default 0.05).
    pub emission_threshold: f64,
    /// Successor states kept per hidden state (Table 1: no limit; sparse default 4).
    pub max_successors: usize,
}

impl Default for SparseHmm {
    fn default() -> Self {
        SparseHmm {
            states: TABLE1_HMM_STATES,
            vocab: TABLE1_VOCAB,
            temperature: 3.2,
            threshold: 0.003,
            emission_threshold: 0.05,
            max_successors: 4,
        }
    }
}

/// The sparse HMM with its default parameters ([`SparseHmm::default`]) drawn from `seed`.
pub fn table1_sparse_hmm(seed: u64) -> Result<Language, LanguageError> {
    Language::sparse_hmm(&SparseHmm::default(), seed)
}

#[derive(Debug, Clone)]
enum Model {
    NGram(ngram::NGram),
    Hmm(hmm::Hmm),
    Interval(interval::Interval),
}

/// Where a language's parameters come from.
#[derive(Debug, Clone, PartialEq)]
pub enum Origin {
    /// Drawn from a seed by the generation algorithm of the module documentation.
    Generated {
        temperature: f64,
        threshold: f64,
        seed: u64,
    },
    /// Explicit tables ([`Language::from_ngram_tables`], [`Language::from_hmm_tables`],
    /// [`Language::smoothed`]).
    Tables,
    /// The interval language ([`Language::interval`]).
    Interval,
}

/// A ground-truth language: an n-gram model, an HMM or the interval language, with its exact
/// algorithms.
#[derive(Debug, Clone)]
pub struct Language {
    model: Model,
    origin: Origin,
}

fn interval_model(
    interval: usize,
    vocab: usize,
    modulus: usize,
) -> Result<interval::Interval, LanguageError> {
    tables::check_vocab(vocab)?;
    if interval < 2 {
        return Err(LanguageError::InvalidInterval {
            problem: format!(
                "the interval length must be at least 2 (got {interval}): an interval of one \
                 token has no pair of positions to couple"
            ),
        });
    }
    if !(2..=vocab).contains(&modulus) {
        return Err(LanguageError::InvalidInterval {
            problem: format!(
                "the modulus must be between 2 and the vocabulary size {vocab} (got {modulus}); \
                 2 is the parity constraint"
            ),
        });
    }
    Ok(interval::Interval {
        k: interval,
        vocab,
        modulus,
        relaxed: false,
    })
}

fn check_common(vocab: usize, temperature: f64, threshold: f64) -> Result<(), LanguageError> {
    tables::check_vocab(vocab)?;
    if !(temperature.is_finite() && temperature > 0.0) {
        return Err(LanguageError::InvalidTemperature { temperature });
    }
    if !(threshold.is_finite() && (0.0..1.0).contains(&threshold)) {
        return Err(LanguageError::InvalidThreshold { threshold });
    }
    Ok(())
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
        let nstates = tables::ngram_windows(order, vocab)?;
        let model = ngram::NGram::generate(order, vocab, nstates, temperature, threshold, seed)?;
        Ok(Language {
            model: Model::NGram(model),
            origin: Origin::Generated {
                temperature,
                threshold,
                seed,
            },
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
        tables::hmm_size(states, vocab)?;
        let model =
            hmm::Hmm::generate(states, vocab, temperature, threshold, threshold, None, seed)?;
        Ok(Language {
            model: Model::Hmm(model),
            origin: Origin::Generated {
                temperature,
                threshold,
                seed,
            },
        })
    }

    /// The sparse HMM (see "The sparse HMM" in the module documentation): the draws of
    /// [`Language::hmm`] with `params.threshold` on the initial and transition rows,
    /// `params.emission_threshold` on the emission rows, and every transition row cut to its
    /// `params.max_successors` largest entries, renormalised. Needs
    /// `1 <= max_successors <= states`. [`SparseHmm::default`] is the documented variant.
    pub fn sparse_hmm(params: &SparseHmm, seed: u64) -> Result<Language, LanguageError> {
        let SparseHmm {
            states,
            vocab,
            temperature,
            threshold,
            emission_threshold,
            max_successors,
        } = *params;
        if states == 0 {
            return Err(LanguageError::InvalidStates { states });
        }
        if !(1..=states).contains(&max_successors) {
            return Err(LanguageError::InvalidMaxSuccessors {
                max_successors,
                states,
            });
        }
        check_common(vocab, temperature, threshold)?;
        check_common(vocab, temperature, emission_threshold)?;
        tables::hmm_size(states, vocab)?;
        let mut model = hmm::Hmm::generate(
            states,
            vocab,
            temperature,
            threshold,
            emission_threshold,
            Some(max_successors),
            seed,
        )?;
        model.sparse = Some(*params);
        Ok(Language {
            model: Model::Hmm(model),
            origin: Origin::Generated {
                temperature,
                threshold,
                seed,
            },
        })
    }

    /// n-gram language from explicit tables: `initial` over the `V^(n-1)` windows of the first
    /// `n-1` tokens (indexed by window code, see "Parameter layouts"), and one row of
    /// `transitions` per context window (in window-code order) over the `V` next tokens.
    /// Validated as described in [`tables`] (shapes, finite non-negative entries, rows summing
    /// to 1 within [`tables::ROW_SUM_TOLERANCE`] or all zero for unreachable contexts);
    /// errors name the table and the row.
    pub fn from_ngram_tables(
        order: usize,
        vocab: usize,
        initial: &[f64],
        transitions: &[Vec<f64>],
    ) -> Result<Language, LanguageError> {
        let (nstates, init, cond) = tables::ngram(order, vocab, initial, transitions)?;
        Ok(Language {
            model: Model::NGram(ngram::NGram::from_tables(order, vocab, nstates, init, cond)),
            origin: Origin::Tables,
        })
    }

    /// HMM from explicit tables: `initial` over the `H = initial.len()` hidden states,
    /// `transitions` (`H` rows over `H` next states) and `emissions` (`H` rows over the `V`
    /// tokens). Validated as described in [`tables`] (all-zero rows are allowed only for
    /// states that can never be reached); errors name the table and the row.
    pub fn from_hmm_tables(
        vocab: usize,
        initial: &[f64],
        transitions: &[Vec<f64>],
        emissions: &[Vec<f64>],
    ) -> Result<Language, LanguageError> {
        let (h, init, trans, emit) = tables::hmm(vocab, initial, transitions, emissions)?;
        Ok(Language {
            model: Model::Hmm(hmm::Hmm::from_tables(h, vocab, init, trans, emit)),
            origin: Origin::Tables,
        })
    }

    /// The interval language with intervals of `interval` tokens over `vocab` tokens, whose
    /// first and last token of every complete interval agree modulo `modulus` (parity for
    /// `modulus = 2`). See "The interval language" in the module documentation. Needs
    /// `interval >= 2` and `2 <= modulus <= vocab`.
    pub fn interval(
        interval: usize,
        vocab: usize,
        modulus: usize,
    ) -> Result<Language, LanguageError> {
        Ok(Language {
            model: Model::Interval(interval_model(interval, vocab, modulus)?),
            origin: Origin::Interval,
        })
    }

    /// The interval language of [`Language::interval`] built as an explicit HMM with
    /// `interval · modulus` hidden states (the proof that it is an HMM, and an independent
    /// implementation for cross-checks). Same distribution; slower.
    pub fn interval_hmm(
        interval: usize,
        vocab: usize,
        modulus: usize,
    ) -> Result<Language, LanguageError> {
        let m = interval_model(interval, vocab, modulus)?;
        let states = interval
            .checked_mul(modulus)
            .ok_or(LanguageError::TooLarge {
                entries: format!("({interval}·{modulus})^2"),
                limit: MAX_TABLE_ENTRIES,
            })?;
        tables::hmm_size(states, vocab)?;
        let (init, trans, emit) = m.hmm_tables();
        Language::from_hmm_tables(vocab, &init, &trans, &emit)
    }

    /// The same n-gram or HMM with every row `p` of every table replaced by
    /// `(1 - ε)·p + ε/n` (`n` the row length; all-zero rows of unreachable contexts or states
    /// become uniform): a full-support language close to this one, e.g. the TER variant of a
    /// language read from a file. `ε` must be in `(0, 1]`.
    pub fn smoothed(&self, epsilon: f64) -> Result<Language, LanguageError> {
        if !(epsilon > 0.0 && epsilon <= 1.0) {
            return Err(LanguageError::InvalidThreshold { threshold: epsilon });
        }
        match &self.model {
            Model::NGram(m) => {
                let init = &tables::smooth(&m.init, m.init.len(), epsilon)[0];
                let cond = tables::smooth(&m.cond, m.vocab, epsilon);
                Language::from_ngram_tables(m.order, m.vocab, init, &cond)
            }
            Model::Hmm(m) => {
                let init = &tables::smooth(&m.init, m.states, epsilon)[0];
                let trans = tables::smooth(&m.trans, m.states, epsilon);
                let emit = tables::smooth(&m.emit, m.vocab, epsilon);
                Language::from_hmm_tables(m.vocab, init, &trans, &emit)
            }
            Model::Interval(_) => Err(LanguageError::Unsupported {
                what: "smoothing",
                kind: self.kind_label(),
            }),
        }
    }

    /// For the interval language: the same language, except that
    /// [`Language::conditional_marginals`] treats an interval whose unmasked first and last
    /// tokens already violate the constraint as unconstrained (its masked positions are
    /// uniform) instead of reporting the whole sequence as inconsistent. Intervals are
    /// independent, so every other interval keeps its exact conditionals: this is the exact
    /// oracle's answer after parallel decoding has broken some interval. `None` for the other
    /// kinds.
    pub fn relaxed(&self) -> Option<Language> {
        match &self.model {
            Model::Interval(m) => Some(Language {
                model: Model::Interval(interval::Interval {
                    relaxed: true,
                    ..m.clone()
                }),
                origin: Origin::Interval,
            }),
            _ => None,
        }
    }
}
