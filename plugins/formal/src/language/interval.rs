//! The interval language (the worst case of Theorem 4.4); definition, HMM form and closed forms
//! in the module documentation of [`super`] (section "The interval language").
//!
//! Everything here is a closed form: a sequence factorises over its intervals, and inside an
//! interval only the first and the last token are coupled.

use rand::Rng;

use super::numeric::Outcome;
use super::SequenceScore;

#[derive(Debug, Clone)]
pub(crate) struct Interval {
    /// Interval length `k >= 2`.
    pub(crate) k: usize,
    pub(crate) vocab: usize,
    /// The constraint relates tokens modulo `m` (`2 <= m <= V`; parity for `m = 2`).
    pub(crate) modulus: usize,
    /// When set, [`Self::marginals`] treats intervals whose unmasked endpoints already violate
    /// the constraint as unconstrained instead of reporting the sequence as inconsistent.
    pub(crate) relaxed: bool,
}

impl Interval {
    /// Number of tokens `v` in `0..V` with `v mod m = c`.
    pub(crate) fn class_size(&self, c: usize) -> usize {
        (self.vocab - c).div_ceil(self.modulus)
    }

    fn class_of(&self, t: u32) -> usize {
        t as usize % self.modulus
    }

    /// `Σ_c |c|²`, in closed form: with `V = q·m + r`, `r` classes have `q + 1` tokens and
    /// `m - r` have `q`.
    fn sum_sq_class_sizes(&self) -> f64 {
        let (q, r) = (self.vocab / self.modulus, self.vocab % self.modulus);
        let (q, r, m) = (q as f64, r as f64, self.modulus as f64);
        r * (q + 1.0) * (q + 1.0) + (m - r) * q * q
    }

    /// `Σ_c (|c|/V) ln |c|`, in closed form (see [`Self::sum_sq_class_sizes`]).
    fn mean_ln_class_size(&self) -> f64 {
        let (q, r) = (self.vocab / self.modulus, self.vocab % self.modulus);
        let v = self.vocab as f64;
        let big = (q + 1) as f64;
        let small = q as f64;
        let mut total = r as f64 * big / v * big.ln();
        if q > 0 {
            total += (self.modulus - r) as f64 * small / v * small.ln();
        }
        total
    }

    /// Probability that two independent uniform tokens fall in different classes:
    /// `p_v = 1 - Σ_c |c|² / V²` (1/2 for parity with an even vocabulary).
    pub(crate) fn violation_probability(&self) -> f64 {
        let v = self.vocab as f64;
        1.0 - self.sum_sq_class_sizes() / (v * v)
    }

    /// Number of complete intervals in a sequence of length `L`: `⌊L / k⌋`.
    pub(crate) fn complete_intervals(&self, length: usize) -> usize {
        length / self.k
    }

    pub(crate) fn score(&self, x: &[u32]) -> SequenceScore {
        let k = self.k;
        let ln_v = (self.vocab as f64).ln();
        let complete = self.complete_intervals(x.len());
        let mut log_prob = -((x.len() - complete) as f64) * ln_v;
        let mut invalid = 0;
        let mut first_invalid = None;
        for (i, chunk) in x.chunks_exact(k).enumerate() {
            let (first, last) = (chunk[0], chunk[k - 1]);
            if self.class_of(first) == self.class_of(last) {
                log_prob -= (self.class_size(self.class_of(first)) as f64).ln();
            } else {
                invalid += 1;
                first_invalid.get_or_insert(i * k + k - 1);
            }
        }
        if invalid > 0 {
            log_prob = f64::NEG_INFINITY;
        }
        SequenceScore {
            log_prob,
            in_support: invalid == 0,
            first_invalid,
            invalid_transitions: invalid,
        }
    }

    pub(crate) fn sample<R: Rng + ?Sized>(&self, length: usize, rng: &mut R) -> Vec<u32> {
        let (k, v, m) = (self.k, self.vocab, self.modulus);
        let complete_end = self.complete_intervals(length) * k;
        let mut out = Vec::with_capacity(length);
        for p in 0..length {
            let t = if p < complete_end && p % k == k - 1 {
                // The last token of a complete interval: uniform over the class of the first.
                let c = self.class_of(out[p + 1 - k]);
                c + m * rng.random_range(0..self.class_size(c))
            } else {
                rng.random_range(0..v)
            };
            out.push(t as u32);
        }
        out
    }

    /// `H = ⌊L/k⌋ · ((k-1) ln V + Σ_c (|c|/V) ln |c|) + (L mod k) · ln V`.
    pub(crate) fn entropy(&self, length: usize) -> f64 {
        let ln_v = (self.vocab as f64).ln();
        let complete = self.complete_intervals(length) as f64;
        let rest = (length % self.k) as f64;
        complete * ((self.k - 1) as f64 * ln_v + self.mean_ln_class_size()) + rest * ln_v
    }

    /// `log10` support density `⌊L/k⌋ · log10(1 - p_v)`.
    pub(crate) fn support_log10_density(&self, length: usize) -> f64 {
        let complete = self.complete_intervals(length);
        if complete == 0 {
            return 0.0;
        }
        complete as f64 * (1.0 - self.violation_probability()).log10()
    }

    /// Exact conditional marginals of one partially masked sequence (`out` is `L·V`).
    pub(crate) fn marginals(&self, x: &[u32], out: &mut [f64]) -> Outcome {
        let (k, v, m) = (self.k, self.vocab, self.modulus);
        let mask = v as u32;
        let uniform = 1.0 / v as f64;
        for (row, &t) in out.chunks_exact_mut(v).zip(x) {
            if t == mask {
                row.fill(uniform);
            } else {
                row.fill(0.0);
                row[t as usize] = 1.0;
            }
        }
        let mut inconsistent = false;
        for (i, chunk) in x.chunks_exact(k).enumerate() {
            let (a, b) = (i * k, i * k + k - 1);
            let (first, last) = (chunk[0], chunk[k - 1]);
            // The masked endpoint of a half-revealed pair is uniform over the class of the other.
            let (masked, known) = match (first == mask, last == mask) {
                (true, false) => (a, last),
                (false, true) => (b, first),
                (false, false) => {
                    if self.class_of(first) != self.class_of(last) {
                        inconsistent = true;
                    }
                    continue;
                }
                (true, true) => continue,
            };
            let c = self.class_of(known);
            let p = 1.0 / self.class_size(c) as f64;
            let row = &mut out[masked * v..(masked + 1) * v];
            row.fill(0.0);
            for t in (c..v).step_by(m) {
                row[t] = p;
            }
        }
        if inconsistent && !self.relaxed {
            Outcome::Inconsistent
        } else {
            Outcome::Done
        }
    }

    /// The same language as explicit HMM tables `(initial, transitions, emissions)` over the
    /// `k·m` hidden states `(j, c)` = (position inside the interval, class of its first token),
    /// numbered `j·m + c`.
    pub(crate) fn hmm_tables(&self) -> (Vec<f64>, Vec<Vec<f64>>, Vec<Vec<f64>>) {
        let (k, v, m) = (self.k, self.vocab, self.modulus);
        let h = k * m;
        let state = |j: usize, c: usize| j * m + c;
        let class_prob = |c: usize| self.class_size(c) as f64 / v as f64;
        let mut init = vec![0.0; h];
        for c in 0..m {
            init[state(0, c)] = class_prob(c);
        }
        let mut trans = vec![vec![0.0; h]; h];
        let mut emit = vec![vec![0.0; v]; h];
        for j in 0..k {
            for c in 0..m {
                let s = state(j, c);
                if j + 1 < k {
                    trans[s][state(j + 1, c)] = 1.0;
                } else {
                    for c2 in 0..m {
                        trans[s][state(0, c2)] = class_prob(c2);
                    }
                }
                if j == 0 || j == k - 1 {
                    let p = 1.0 / self.class_size(c) as f64;
                    for t in (c..v).step_by(m) {
                        emit[s][t] = p;
                    }
                } else {
                    emit[s].fill(1.0 / v as f64);
                }
            }
        }
        (init, trans, emit)
    }
}
