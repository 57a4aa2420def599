//! Hidden Markov models: dense transitions between `H` hidden states, probabilistic emission of
//! one token per step.
//!
//! Tables (row-major): `init[j]`, `trans[i·H + j] = P(z_{t+1} = j | z_t = i)`,
//! `emit[j·V + v] = P(x_t = v | z_t = j)`.

use std::collections::HashMap;

use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;

use super::numeric::{self, Guard, Norm, Outcome};
use super::params::{softmax_threshold, NormalStream};
use super::{LanguageError, SequenceScore};

mod batch;

/// Largest number of reachable hidden-state subsets explored for the HMM support density.
pub(crate) const MAX_SUPPORT_SUBSETS: usize = 1 << 20;

/// Keeps the `k >= 1` largest entries of a normalised row (ties broken towards the lower
/// index, so the result is deterministic), zeroes the rest and renormalises. A row with at most
/// `k` positive entries is left unchanged.
pub(crate) fn keep_largest(row: &mut [f64], k: usize) {
    let mut order: Vec<usize> = (0..row.len()).filter(|&j| row[j] > 0.0).collect();
    if order.len() <= k {
        return;
    }
    order.sort_by(|&a, &b| row[b].total_cmp(&row[a]).then(a.cmp(&b)));
    for &j in &order[k..] {
        row[j] = 0.0;
    }
    let kept: f64 = row.iter().sum();
    row.iter_mut().for_each(|p| *p /= kept);
}

#[derive(Debug, Clone)]
pub(crate) struct Hmm {
    pub(crate) states: usize,
    pub(crate) vocab: usize,
    pub(crate) init: Vec<f64>,
    pub(crate) trans: Vec<f64>,
    pub(crate) emit: Vec<f64>,
    /// The parameters of a sparse HMM ([`super::Language::sparse_hmm`]); `None` otherwise.
    pub(crate) sparse: Option<super::SparseHmm>,
    /// `emit_t[v·H + j] = emit[j·V + v]`: the emission column of token `v`, contiguous.
    emit_t: Vec<f64>,
    log_init: Vec<f64>,
    log_trans: Vec<f64>,
    log_emit_t: Vec<f64>,
    guard: Guard,
}

fn token(t: u32, mask: u32) -> Option<usize> {
    (t != mask).then_some(t as usize)
}

/// Scratch buffers reused across the sequences of a batch.
#[derive(Default)]
pub(crate) struct Workspace {
    alpha: Vec<f64>,
    beta: Vec<f64>,
    beta2: Vec<f64>,
    weights: Vec<f64>,
    gamma: Vec<f64>,
    terms: Vec<f64>,
}

impl Hmm {
    /// Draws the parameters: initial distribution, then the transition rows of states
    /// `0..H`, then the emission rows of states `0..H`, each row from fresh normals.
    ///
    /// `threshold` prunes the initial and transition rows, `emission_threshold` the emission
    /// rows (the two are equal except for the sparse HMM). `max_successors = Some(k)` (the
    /// sparse HMM, see "The sparse HMM" in the module documentation of `language`) then keeps,
    /// in every *transition* row, only the `k` largest surviving entries, renormalised. Neither
    /// changes a draw: the normals are consumed exactly as for Table 1, so the sparse, SER and
    /// TER variants of one seed share every `z`.
    pub(crate) fn generate(
        states: usize,
        vocab: usize,
        temperature: f64,
        threshold: f64,
        emission_threshold: f64,
        max_successors: Option<usize>,
        seed: u64,
    ) -> Result<Self, LanguageError> {
        let h = states;
        let mut normals = NormalStream::new(ChaCha8Rng::seed_from_u64(seed));
        let mut z = vec![0.0; h];
        normals.fill(&mut z);
        let mut init = vec![0.0; h];
        if !softmax_threshold(&z, temperature, threshold, &mut init) {
            return Err(LanguageError::EmptyRow {
                table: "initial state distribution",
                row: 0,
                threshold,
            });
        }
        let mut trans = vec![0.0; h * h];
        for (i, row) in trans.chunks_exact_mut(h).enumerate() {
            normals.fill(&mut z);
            if !softmax_threshold(&z, temperature, threshold, row) {
                return Err(LanguageError::EmptyRow {
                    table: "transition table",
                    row: i,
                    threshold,
                });
            }
            if let Some(k) = max_successors {
                keep_largest(row, k);
            }
        }
        let mut emit = vec![0.0; h * vocab];
        let mut zv = vec![0.0; vocab];
        for (j, row) in emit.chunks_exact_mut(vocab).enumerate() {
            normals.fill(&mut zv);
            if !softmax_threshold(&zv, temperature, emission_threshold, row) {
                return Err(LanguageError::EmptyRow {
                    table: "emission table",
                    row: j,
                    threshold: emission_threshold,
                });
            }
        }
        Ok(Self::from_tables(states, vocab, init, trans, emit))
    }

    /// Builds the engine from validated tables (rows normalised).
    pub(crate) fn from_tables(
        states: usize,
        vocab: usize,
        init: Vec<f64>,
        trans: Vec<f64>,
        emit: Vec<f64>,
    ) -> Self {
        let h = states;
        let mut emit_t = vec![0.0; h * vocab];
        for j in 0..h {
            for v in 0..vocab {
                emit_t[v * h + j] = emit[j * vocab + v];
            }
        }
        let ln = |t: &[f64]| t.iter().map(|&p| numeric::ln0(p)).collect::<Vec<_>>();
        let guard = Guard::new(&[&init, &trans, &emit]);
        Self {
            states,
            vocab,
            log_init: ln(&init),
            log_trans: ln(&trans),
            log_emit_t: ln(&emit_t),
            init,
            trans,
            emit,
            sparse: None,
            emit_t,
            guard,
        }
    }

    /// Test hook: run every recursion in log space.
    #[cfg(test)]
    pub(crate) fn force_log_space(&mut self) {
        self.guard.always_log = true;
    }

    fn column(&self, v: usize) -> &[f64] {
        &self.emit_t[v * self.states..(v + 1) * self.states]
    }

    fn log_column(&self, v: usize) -> &[f64] {
        &self.log_emit_t[v * self.states..(v + 1) * self.states]
    }

    /// `dst = src · T`, then multiplied by the emission column of `tok` when set.
    fn forward_step(&self, src: &[f64], dst: &mut [f64], tok: Option<usize>) {
        let h = self.states;
        dst.fill(0.0);
        for (&a, row) in src.iter().zip(self.trans.chunks_exact(h)) {
            if a == 0.0 {
                continue;
            }
            for (d, &p) in dst.iter_mut().zip(row) {
                *d += a * p;
            }
        }
        if let Some(o) = tok {
            for (d, &e) in dst.iter_mut().zip(self.column(o)) {
                *d *= e;
            }
        }
    }

    /// `dst[i] = Σ_j T[i][j] · e_tok[j] · src[j]` (`e = 1` when masked); `weights` is scratch.
    fn backward_step(
        &self,
        src: &[f64],
        dst: &mut [f64],
        tok: Option<usize>,
        weights: &mut Vec<f64>,
    ) {
        let h = self.states;
        weights.clear();
        match tok {
            Some(o) => weights.extend(src.iter().zip(self.column(o)).map(|(b, e)| b * e)),
            None => weights.extend_from_slice(src),
        }
        for (d, row) in dst.iter_mut().zip(self.trans.chunks_exact(h)) {
            *d = row.iter().zip(weights.iter()).map(|(p, w)| p * w).sum();
        }
    }

    /// Log-space [`Self::forward_step`].
    fn log_forward_step(
        &self,
        src: &[f64],
        dst: &mut [f64],
        tok: Option<usize>,
        terms: &mut Vec<f64>,
    ) {
        let h = self.states;
        for (j, d) in dst.iter_mut().enumerate() {
            terms.clear();
            terms.extend(
                src.iter()
                    .enumerate()
                    .map(|(i, &a)| a + self.log_trans[i * h + j]),
            );
            *d = numeric::lse(terms);
            if let Some(o) = tok {
                *d += self.log_emit_t[o * h + j];
            }
        }
    }

    /// Log-space [`Self::backward_step`].
    fn log_backward_step(
        &self,
        src: &[f64],
        dst: &mut [f64],
        tok: Option<usize>,
        weights: &mut Vec<f64>,
        terms: &mut Vec<f64>,
    ) {
        let h = self.states;
        weights.clear();
        match tok {
            Some(o) => weights.extend(src.iter().zip(self.log_column(o)).map(|(b, e)| b + e)),
            None => weights.extend_from_slice(src),
        }
        for (d, row) in dst.iter_mut().zip(self.log_trans.chunks_exact(h)) {
            terms.clear();
            terms.extend(row.iter().zip(weights.iter()).map(|(p, w)| p + w));
            *d = numeric::lse(terms);
        }
    }

    /// After position `t` had probability zero: restart from every state that can emit `x_t`
    /// (every state when none can).
    fn restart(&self, t: usize, alpha: &mut [f64]) {
        alpha.copy_from_slice(self.column(t));
        if alpha.iter().all(|&a| a == 0.0) {
            alpha.fill(1.0);
        }
    }

    /// Exact score of a sequence of valid tokens (length >= 1).
    pub(crate) fn score(&self, x: &[u32]) -> SequenceScore {
        if !self.guard.always_log {
            if let Some(score) = self.score_scaled(x) {
                return score;
            }
        }
        self.score_log(x)
    }

    fn score_scaled(&self, x: &[u32]) -> Option<SequenceScore> {
        let h = self.states;
        let mut alpha = vec![0.0; h];
        let mut next = vec![0.0; h];
        let mut log_prob = 0.0;
        let mut invalid = 0;
        let mut first_invalid = None;
        for (t, &tok) in x.iter().enumerate() {
            let tok = tok as usize;
            if t == 0 {
                for ((a, &p), &e) in next.iter_mut().zip(&self.init).zip(self.column(tok)) {
                    *a = p * e;
                }
            } else {
                self.forward_step(&alpha, &mut next, Some(tok));
            }
            match numeric::normalize_max(&mut next) {
                Norm::Scaled(m) => log_prob += m.ln(),
                Norm::Zero => {
                    invalid += 1;
                    first_invalid.get_or_insert(t);
                    log_prob = f64::NEG_INFINITY;
                    self.restart(tok, &mut next);
                    if !matches!(numeric::normalize_max(&mut next), Norm::Scaled(_)) {
                        return None;
                    }
                }
                Norm::Flagged => return None,
            }
            std::mem::swap(&mut alpha, &mut next);
        }
        if invalid == 0 {
            log_prob += alpha.iter().sum::<f64>().ln();
        }
        Some(SequenceScore {
            log_prob,
            in_support: invalid == 0,
            first_invalid,
            invalid_transitions: invalid,
        })
    }

    pub(crate) fn score_log(&self, x: &[u32]) -> SequenceScore {
        let h = self.states;
        let mut alpha = vec![0.0; h];
        let mut next = vec![0.0; h];
        let mut terms = Vec::with_capacity(h);
        let mut invalid = 0;
        let mut first_invalid = None;
        for (t, &tok) in x.iter().enumerate() {
            let tok = tok as usize;
            if t == 0 {
                for ((a, &p), &e) in next
                    .iter_mut()
                    .zip(&self.log_init)
                    .zip(self.log_column(tok))
                {
                    *a = p + e;
                }
            } else {
                self.log_forward_step(&alpha, &mut next, Some(tok), &mut terms);
            }
            if numeric::lse(&next) == f64::NEG_INFINITY {
                invalid += 1;
                first_invalid.get_or_insert(t);
                self.restart(tok, &mut next);
                next.iter_mut().for_each(|a| *a = numeric::ln0(*a));
            }
            std::mem::swap(&mut alpha, &mut next);
        }
        let log_prob = if invalid == 0 {
            numeric::lse(&alpha)
        } else {
            f64::NEG_INFINITY
        };
        SequenceScore {
            log_prob,
            in_support: invalid == 0,
            first_invalid,
            invalid_transitions: invalid,
        }
    }

    pub(crate) fn sample<R: Rng + ?Sized>(&self, length: usize, rng: &mut R) -> Vec<u32> {
        let (h, v) = (self.states, self.vocab);
        let mut out = Vec::with_capacity(length);
        let mut z = numeric::draw(&self.init, rng);
        for t in 0..length {
            if t > 0 {
                z = numeric::draw(&self.trans[z * h..(z + 1) * h], rng);
            }
            out.push(numeric::draw(&self.emit[z * v..(z + 1) * v], rng) as u32);
        }
        out
    }

    /// Predictive token distribution `c[v] = Σ_j pred[j] · emit[j][v] / Σ_j pred[j]`.
    fn predictive(&self, pred: &[f64], c: &mut [f64]) {
        let v = self.vocab;
        c.fill(0.0);
        for (&p, row) in pred.iter().zip(self.emit.chunks_exact(v)) {
            if p == 0.0 {
                continue;
            }
            for (cv, &e) in c.iter_mut().zip(row) {
                *cv += p * e;
            }
        }
        let s: f64 = c.iter().sum();
        c.iter_mut().for_each(|x| *x /= s);
    }

    /// Exact `H(X_1..X_L) = Σ_{prefixes} P(prefix) · H(X_next | prefix)` by walking the tree of
    /// all positive-probability prefixes of length `< L`.
    pub(crate) fn entropy_exact(&self, length: usize) -> f64 {
        let mut preds = vec![vec![0.0; self.states]; length];
        preds[0].copy_from_slice(&self.init);
        let mut total = 0.0;
        self.entropy_rec(0, length, 0.0, &mut preds, &mut total);
        total
    }

    fn entropy_rec(
        &self,
        depth: usize,
        length: usize,
        log_p: f64,
        preds: &mut [Vec<f64>],
        total: &mut f64,
    ) {
        let mut c = vec![0.0; self.vocab];
        self.predictive(&preds[depth], &mut c);
        *total += log_p.exp() * numeric::entropy(&c);
        if depth + 1 == length {
            return;
        }
        let mut alpha = vec![0.0; self.states];
        for (v, &cv) in c.iter().enumerate() {
            if cv == 0.0 {
                continue;
            }
            let (head, tail) = preds.split_at_mut(depth + 1);
            let pred = &head[depth];
            for ((a, &p), &e) in alpha.iter_mut().zip(pred).zip(self.column(v)) {
                *a = p * e;
            }
            let s: f64 = alpha.iter().sum();
            alpha.iter_mut().for_each(|a| *a /= s);
            self.forward_step(&alpha, &mut tail[0], None);
            self.entropy_rec(depth + 1, length, log_p + cv.ln(), preds, total);
        }
    }

    /// Rao–Blackwellised Monte Carlo term for one sequence: `Σ_t H(X_t | x_<t)`, whose
    /// expectation over `x ~ q` is `H(X_1..X_L)`.
    pub(crate) fn conditional_entropy_sum(&self, x: &[u32]) -> f64 {
        if !self.guard.always_log {
            if let Some(s) = self.conditional_entropy_sum_scaled(x) {
                return s;
            }
        }
        self.conditional_entropy_sum_log(x)
    }

    fn conditional_entropy_sum_scaled(&self, x: &[u32]) -> Option<f64> {
        let mut pred = self.init.clone();
        let mut alpha = vec![0.0; self.states];
        let mut c = vec![0.0; self.vocab];
        let mut total = 0.0;
        for (t, &tok) in x.iter().enumerate() {
            self.predictive(&pred, &mut c);
            total += numeric::entropy(&c);
            if t + 1 == x.len() {
                break;
            }
            for ((a, &p), &e) in alpha.iter_mut().zip(&pred).zip(self.column(tok as usize)) {
                *a = p * e;
            }
            if !matches!(numeric::normalize_max(&mut alpha), Norm::Scaled(_)) {
                return None;
            }
            self.forward_step(&alpha, &mut pred, None);
            if !matches!(numeric::normalize_max(&mut pred), Norm::Scaled(_)) {
                return None;
            }
        }
        Some(total)
    }

    fn conditional_entropy_sum_log(&self, x: &[u32]) -> f64 {
        let (h, v) = (self.states, self.vocab);
        let mut pred = self.log_init.clone();
        let mut alpha = vec![0.0; h];
        let mut c = vec![0.0; v];
        let mut terms = Vec::with_capacity(h);
        let mut total = 0.0;
        for (t, &tok) in x.iter().enumerate() {
            for (vv, cv) in c.iter_mut().enumerate() {
                terms.clear();
                terms.extend(
                    pred.iter()
                        .zip(&self.log_emit_t[vv * h..(vv + 1) * h])
                        .map(|(p, e)| p + e),
                );
                *cv = numeric::lse(&terms);
            }
            let norm = numeric::lse(&c);
            total -= c
                .iter()
                .filter(|&&l| l > f64::NEG_INFINITY)
                .map(|&l| (l - norm).exp() * (l - norm))
                .sum::<f64>();
            if t + 1 == x.len() {
                break;
            }
            for ((a, &p), &e) in alpha
                .iter_mut()
                .zip(&pred)
                .zip(self.log_column(tok as usize))
            {
                *a = p + e;
            }
            self.log_forward_step(&alpha, &mut pred, None, &mut terms);
        }
        total
    }

    /// `log10` of the share of `V^L` sequences with positive probability.
    ///
    /// Counting sequences (not hidden paths) needs the subset construction: the set of hidden
    /// states that can be occupied after reading a prefix is a deterministic function of the
    /// prefix, so the reachable sets form a DFA whose accepted strings are exactly the support.
    /// The share of uniformly random sequences that the DFA accepts is propagated forward,
    /// rescaled every step.
    pub(crate) fn support_log10_density(&self, length: usize) -> Result<f64, LanguageError> {
        let inv_v = 1.0 / self.vocab as f64;
        self.support_log10_mass(length, &|_, _| inv_v)
    }

    /// `log10 Σ_{x in support} Π_t w(t, x_t)` for non-negative weights: with `w = 1/V` the
    /// support density, with `w(t, ·)` the all-masked marginal of position `t` the probability
    /// that independent draws from those marginals land in the support. Same automaton as
    /// [`Self::support_log10_density`]; the weights of each position must not depend on the
    /// others.
    pub(crate) fn support_log10_mass(
        &self,
        length: usize,
        weight: &dyn Fn(usize, usize) -> f64,
    ) -> Result<f64, LanguageError> {
        let (h, v) = (self.states, self.vocab);
        let words = h.div_ceil(64);
        let mask_of = |pred: &dyn Fn(usize) -> bool| {
            let mut m = vec![0u64; words];
            for j in (0..h).filter(|&j| pred(j)) {
                m[j / 64] |= 1 << (j % 64);
            }
            m
        };
        let succ: Vec<Vec<u64>> = (0..h)
            .map(|i| mask_of(&|j| self.trans[i * h + j] > 0.0))
            .collect();
        let emitters: Vec<Vec<u64>> = (0..v)
            .map(|t| mask_of(&|j| self.emit[j * v + t] > 0.0))
            .collect();
        let init = mask_of(&|j| self.init[j] > 0.0);

        let mut ids: HashMap<Vec<u64>, usize> = HashMap::new();
        let mut sets: Vec<Vec<u64>> = Vec::new();
        // delta[s·V + t] = index of the successor set, or usize::MAX when empty.
        let mut delta: Vec<usize> = Vec::new();
        fn intern(
            set: Vec<u64>,
            ids: &mut HashMap<Vec<u64>, usize>,
            sets: &mut Vec<Vec<u64>>,
        ) -> Result<usize, LanguageError> {
            if set.iter().all(|&w| w == 0) {
                return Ok(usize::MAX);
            }
            if let Some(&id) = ids.get(&set) {
                return Ok(id);
            }
            if sets.len() >= MAX_SUPPORT_SUBSETS {
                return Err(LanguageError::Intractable {
                    what: "the HMM support density",
                    reason: format!(
                        "more than {MAX_SUPPORT_SUBSETS} distinct sets of reachable hidden states; \
                         use fewer hidden states or a smaller threshold"
                    ),
                });
            }
            ids.insert(set.clone(), sets.len());
            sets.push(set);
            Ok(sets.len() - 1)
        }
        let and = |a: &[u64], b: &[u64]| a.iter().zip(b).map(|(x, y)| x & y).collect::<Vec<u64>>();

        let mut weights0: Vec<(usize, f64)> = Vec::new();
        for (t, em) in emitters.iter().enumerate() {
            let id = intern(and(&init, em), &mut ids, &mut sets)?;
            if id != usize::MAX {
                weights0.push((id, weight(0, t)));
            }
        }
        let mut next_to_expand = 0;
        while next_to_expand < sets.len() {
            let set = sets[next_to_expand].clone();
            let mut union = vec![0u64; words];
            for j in 0..h {
                if set[j / 64] >> (j % 64) & 1 == 1 {
                    for (u, s) in union.iter_mut().zip(&succ[j]) {
                        *u |= s;
                    }
                }
            }
            for em in &emitters {
                let id = intern(and(&union, em), &mut ids, &mut sets)?;
                delta.push(id);
            }
            next_to_expand += 1;
        }

        let n = sets.len();
        let mut d = vec![0.0; n];
        for (id, w) in weights0 {
            d[id] += w;
        }
        let mut log10 = 0.0;
        let s: f64 = d.iter().sum();
        if s == 0.0 {
            return Ok(f64::NEG_INFINITY);
        }
        log10 += s.log10();
        d.iter_mut().for_each(|x| *x /= s);
        let mut next = vec![0.0; n];
        let mut wt = vec![0.0; v];
        for pos in 1..length {
            next.fill(0.0);
            for (tok, w) in wt.iter_mut().enumerate() {
                *w = weight(pos, tok);
            }
            for (&w, row) in d.iter().zip(delta.chunks_exact(v)) {
                if w == 0.0 {
                    continue;
                }
                for (&to, &wtok) in row.iter().zip(&wt) {
                    if to != usize::MAX {
                        next[to] += w * wtok;
                    }
                }
            }
            let s: f64 = next.iter().sum();
            if s == 0.0 {
                return Ok(f64::NEG_INFINITY);
            }
            log10 += s.log10();
            next.iter_mut().for_each(|x| *x /= s);
            std::mem::swap(&mut d, &mut next);
        }
        Ok(log10)
    }

    /// Exact posterior token marginals of one partially masked sequence, written into `out`
    /// (`L·V`). Tries the scaled recursion; falls back to log space when the guard trips.
    pub(crate) fn marginals(&self, x: &[u32], out: &mut [f64], ws: &mut Workspace) -> Outcome {
        if !self.guard.always_log {
            match self.marginals_scaled(x, out, ws) {
                Outcome::Flagged => {}
                done => return done,
            }
        }
        self.marginals_log(x, out, ws)
    }

    fn init_out(&self, x: &[u32], out: &mut [f64]) {
        let v = self.vocab;
        for (row, &t) in out.chunks_exact_mut(v).zip(x) {
            row.fill(0.0);
            if let Some(o) = token(t, v as u32) {
                row[o] = 1.0;
            }
        }
    }

    /// `row[v] ∝ Σ_j gamma[j] · emit[j][v]` (normalised).
    fn emit_marginal(&self, gamma: &[f64], row: &mut [f64]) {
        let v = self.vocab;
        for (&g, erow) in gamma.iter().zip(self.emit.chunks_exact(v)) {
            if g == 0.0 {
                continue;
            }
            for (o, &e) in row.iter_mut().zip(erow) {
                *o += g * e;
            }
        }
        let s: f64 = row.iter().sum();
        row.iter_mut().for_each(|x| *x /= s);
    }

    pub(crate) fn marginals_scaled(
        &self,
        x: &[u32],
        out: &mut [f64],
        ws: &mut Workspace,
    ) -> Outcome {
        let (h, v) = (self.states, self.vocab);
        let mask = v as u32;
        let l = x.len();
        ws.alpha.resize(l * h, 0.0);
        ws.beta.resize(h, 0.0);
        ws.beta2.resize(h, 0.0);
        ws.gamma.resize(h, 0.0);
        for t in 0..l {
            let tok = token(x[t], mask);
            let (prev, cur) = ws.alpha.split_at_mut(t * h);
            let dst = &mut cur[..h];
            if t == 0 {
                dst.copy_from_slice(&self.init);
                if let Some(o) = tok {
                    for (d, &e) in dst.iter_mut().zip(self.column(o)) {
                        *d *= e;
                    }
                }
            } else {
                self.forward_step(&prev[(t - 1) * h..], dst, tok);
            }
            match numeric::normalize_max(dst) {
                Norm::Scaled(_) => {}
                Norm::Zero => return Outcome::Inconsistent,
                Norm::Flagged => return Outcome::Flagged,
            }
        }
        self.init_out(x, out);
        ws.beta.fill(1.0);
        for t in (0..l).rev() {
            if x[t] == mask {
                let a = &ws.alpha[t * h..(t + 1) * h];
                let mut total = 0.0;
                for ((g, &aa), &bb) in ws.gamma.iter_mut().zip(a).zip(&ws.beta) {
                    *g = aa * bb;
                    total += *g;
                }
                if !(total > 0.0 && total.is_finite()) {
                    return Outcome::Flagged;
                }
                self.emit_marginal(&ws.gamma, &mut out[t * v..(t + 1) * v]);
            }
            if t > 0 {
                self.backward_step(&ws.beta, &mut ws.beta2, token(x[t], mask), &mut ws.weights);
                if !matches!(numeric::normalize_max(&mut ws.beta2), Norm::Scaled(_)) {
                    return Outcome::Flagged;
                }
                std::mem::swap(&mut ws.beta, &mut ws.beta2);
            }
        }
        Outcome::Done
    }

    pub(crate) fn marginals_log(&self, x: &[u32], out: &mut [f64], ws: &mut Workspace) -> Outcome {
        let (h, v) = (self.states, self.vocab);
        let mask = v as u32;
        let l = x.len();
        ws.alpha.resize(l * h, 0.0);
        ws.beta.resize(h, 0.0);
        ws.beta2.resize(h, 0.0);
        let mut gamma = vec![0.0; h];
        for t in 0..l {
            let tok = token(x[t], mask);
            let (prev, cur) = ws.alpha.split_at_mut(t * h);
            let dst = &mut cur[..h];
            if t == 0 {
                dst.copy_from_slice(&self.log_init);
                if let Some(o) = tok {
                    for (d, &e) in dst.iter_mut().zip(self.log_column(o)) {
                        *d += e;
                    }
                }
            } else {
                self.log_forward_step(&prev[(t - 1) * h..], dst, tok, &mut ws.terms);
            }
        }
        if numeric::lse(&ws.alpha[(l - 1) * h..]) == f64::NEG_INFINITY {
            return Outcome::Inconsistent;
        }
        self.init_out(x, out);
        ws.beta.fill(0.0);
        for t in (0..l).rev() {
            if x[t] == mask {
                let a = &ws.alpha[t * h..(t + 1) * h];
                for ((g, &aa), &bb) in gamma.iter_mut().zip(a).zip(&ws.beta) {
                    *g = aa + bb;
                }
                let total = numeric::lse(&gamma);
                gamma.iter_mut().for_each(|g| *g = (*g - total).exp());
                self.emit_marginal(&gamma, &mut out[t * v..(t + 1) * v]);
            }
            if t > 0 {
                let tok = token(x[t], mask);
                self.log_backward_step(
                    &ws.beta,
                    &mut ws.beta2,
                    tok,
                    &mut ws.weights,
                    &mut ws.terms,
                );
                std::mem::swap(&mut ws.beta, &mut ws.beta2);
            }
        }
        Outcome::Done
    }
}
