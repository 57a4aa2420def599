//! What a language is: its origin, kind, sizes, parameters and tables.

use super::*;

impl Language {
    /// Where the parameters come from.
    pub fn origin(&self) -> &Origin {
        &self.origin
    }

    /// The interval length `k` of the interval language, `None` for the other kinds.
    pub fn interval_length(&self) -> Option<usize> {
        match &self.model {
            Model::Interval(m) => Some(m.k),
            _ => None,
        }
    }

    /// The modulus of the interval language's constraint (2: parity), `None` for the other
    /// kinds.
    pub fn interval_modulus(&self) -> Option<usize> {
        match &self.model {
            Model::Interval(m) => Some(m.modulus),
            _ => None,
        }
    }

    /// Interval language: the probability `p_v = 1 - Σ_c |c|²/V²` that the two coupled
    /// tokens of an interval, drawn independently from their (uniform) marginals, violate the
    /// constraint. `None` for the other kinds.
    pub fn interval_violation_probability(&self) -> Option<f64> {
        match &self.model {
            Model::Interval(m) => Some(m.violation_probability()),
            _ => None,
        }
    }

    /// Interval language: the exact SER of the exact oracle sampled by MDLM ancestral sampling
    /// (`ddpm` or `ddpm_cache`) with `steps` steps and the log-linear schedule:
    /// `1 - (1 - p_v / steps)^⌊L/k⌋` (derivation in the module documentation). `None` for the
    /// other kinds or `steps = 0`.
    pub fn interval_ddpm_ser(&self, length: usize, steps: usize) -> Option<f64> {
        match &self.model {
            Model::Interval(m) if steps > 0 => {
                let per_interval = m.violation_probability() / steps as f64;
                let complete = m.complete_intervals(length) as f64;
                // 1 - (1 - p)^n computed without cancellation.
                Some(-((-per_interval).ln_1p() * complete).exp_m1())
            }
            _ => None,
        }
    }

    /// Vocabulary size `V` (tokens `0..V`).
    pub fn vocab(&self) -> usize {
        match &self.model {
            Model::NGram(m) => m.vocab,
            Model::Hmm(m) => m.vocab,
            Model::Interval(m) => m.vocab,
        }
    }

    /// The MASK token id, `V`.
    pub fn mask_id(&self) -> u32 {
        self.vocab() as u32
    }

    /// Shortest valid sequence length: `n-1` for an n-gram, 1 for an HMM and for the interval
    /// language.
    pub fn min_length(&self) -> usize {
        match &self.model {
            Model::NGram(m) => m.order - 1,
            Model::Hmm(_) | Model::Interval(_) => 1,
        }
    }

    /// `"2-gram"`, `"3-gram"`, …, `"hmm-32"` (hidden-state count), or `"interval-16"`
    /// (interval length; `"interval-16-mod3"` when the modulus is not 2).
    pub fn kind_label(&self) -> String {
        match &self.model {
            Model::NGram(m) => format!("{}-gram", m.order),
            Model::Hmm(m) => format!("hmm-{}", m.states),
            Model::Interval(m) if m.modulus == 2 => format!("interval-{}", m.k),
            Model::Interval(m) => format!("interval-{}-mod{}", m.k, m.modulus),
        }
    }

    /// The n-gram order, `None` for the other kinds.
    pub fn order(&self) -> Option<usize> {
        match &self.model {
            Model::NGram(m) => Some(m.order),
            _ => None,
        }
    }

    /// The number of hidden states of an HMM, `None` for the other kinds (the interval
    /// language's HMM form, [`Language::interval_hmm`], has `k · modulus`).
    pub fn hidden_states(&self) -> Option<usize> {
        match &self.model {
            Model::Hmm(m) => Some(m.states),
            _ => None,
        }
    }

    /// The softmax temperature the language was drawn with; `None` unless
    /// [`Origin::Generated`].
    pub fn temperature(&self) -> Option<f64> {
        match self.origin {
            Origin::Generated { temperature, .. } => Some(temperature),
            _ => None,
        }
    }

    /// The pruning threshold (0 for a TER variant); `None` unless [`Origin::Generated`].
    pub fn threshold(&self) -> Option<f64> {
        match self.origin {
            Origin::Generated { threshold, .. } => Some(threshold),
            _ => None,
        }
    }

    /// The parameters of a sparse HMM ([`Language::sparse_hmm`]); `None` for every other
    /// language.
    pub fn sparse_params(&self) -> Option<&SparseHmm> {
        match &self.model {
            Model::Hmm(m) => m.sparse.as_ref(),
            _ => None,
        }
    }

    /// The seed the parameters were drawn from; `None` unless [`Origin::Generated`].
    pub fn seed(&self) -> Option<u64> {
        match self.origin {
            Origin::Generated { seed, .. } => Some(seed),
            _ => None,
        }
    }

    /// Whether some parameter-table entry is zero, so that some sequences may have
    /// probability zero (always true for the interval language).
    pub fn has_zero_entries(&self) -> bool {
        match &self.model {
            Model::NGram(m) => m.init.contains(&0.0) || m.cond.contains(&0.0),
            Model::Hmm(m) => {
                m.init.contains(&0.0) || m.trans.contains(&0.0) || m.emit.contains(&0.0)
            }
            Model::Interval(_) => true,
        }
    }

    /// Initial distribution (layout in the module documentation); empty for the interval
    /// language (its tables are those of [`Language::interval_hmm`]).
    pub fn initial_distribution(&self) -> &[f64] {
        match &self.model {
            Model::NGram(m) => &m.init,
            Model::Hmm(m) => &m.init,
            Model::Interval(_) => &[],
        }
    }

    /// Transition table, row-major (layout in the module documentation); empty for the
    /// interval language.
    pub fn transition_table(&self) -> &[f64] {
        match &self.model {
            Model::NGram(m) => &m.cond,
            Model::Hmm(m) => &m.trans,
            Model::Interval(_) => &[],
        }
    }

    /// Emission table `H × V` row-major for an HMM, `None` for the other kinds.
    pub fn emission_table(&self) -> Option<&[f64]> {
        match &self.model {
            Model::Hmm(m) => Some(&m.emit),
            _ => None,
        }
    }
}
