//! n-gram languages as a sparse finite-state chain over *windows* of the last `n-1` tokens.
//!
//! A window `w = (t_0, …, t_{n-2})` is encoded as `Σ_p t_p · V^(n-2-p)` (oldest token most
//! significant). Writing `w = h·R + u` with `R = V^(n-2)`, `h` is the oldest token and `u` the
//! other `n-2`; appending token `v` gives the successor window `u·V + v`. Every window has
//! exactly `V` successors, so one step of any recursion costs `V^n` operations.
//!
//! Step `s = 0` of the chain is the window `x[0..n-1]` (drawn jointly from the initial
//! distribution); step `s >= 1` appends `x[n-2+s]`. A sequence of length `L` has
//! `L - n + 2` steps.

use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;

use super::numeric::{self, Guard, Norm, Outcome};
use super::params::{softmax_threshold, NormalStream};
use super::{LanguageError, SequenceScore};

#[derive(Debug, Clone)]
pub(crate) struct NGram {
    pub(crate) order: usize,
    pub(crate) vocab: usize,
    /// `S = V^(n-1)` windows.
    pub(crate) nstates: usize,
    /// `R = V^(n-2)`.
    nsuffix: usize,
    /// `span[p] = V^(n-2-p)`: the weight of digit `p` of a window.
    span: Vec<usize>,
    /// Initial joint distribution of the first `n-1` tokens, indexed by window.
    pub(crate) init: Vec<f64>,
    /// `cond[w·V + v] = P(next = v | window w)`.
    pub(crate) cond: Vec<f64>,
    /// `cond_t[v·S + w] = cond[w·V + v]`.
    cond_t: Vec<f64>,
    log_init: Vec<f64>,
    log_cond: Vec<f64>,
    /// `1/V` where `cond > 0`, else 0: the chain of a uniformly random sequence restricted to
    /// the support (used for the support density).
    support_step: Vec<f64>,
    guard: Guard,
}

fn token(t: u32, mask: u32) -> Option<usize> {
    (t != mask).then_some(t as usize)
}

/// `dst[u·V + v] = Σ_h src[h·R + u] · table[(h·R + u)·V + v]`, only `v == tok` when `tok` is set.
fn forward_step(
    table: &[f64],
    v: usize,
    r: usize,
    src: &[f64],
    dst: &mut [f64],
    tok: Option<usize>,
) {
    dst.fill(0.0);
    for (h, block) in src.chunks_exact(r).enumerate() {
        for (u, &a) in block.iter().enumerate() {
            if a == 0.0 {
                continue;
            }
            let w = h * r + u;
            let row = &table[w * v..(w + 1) * v];
            let d = &mut dst[u * v..(u + 1) * v];
            match tok {
                None => {
                    for (dv, &p) in d.iter_mut().zip(row) {
                        *dv += a * p;
                    }
                }
                Some(o) => d[o] += a * row[o],
            }
        }
    }
}

/// [`forward_step`] on the transposed table (`table_t[v·S + w] = table[w·V + v]`): computes
/// `dst_t[v·R + u] = Σ_h src[h·R + u] · table_t[v·S + h·R + u]` with contiguous inner loops,
/// then writes `dst[u·V + v] = dst_t[v·R + u]`. `dst_t` is scratch.
fn forward_step_t(
    table_t: &[f64],
    v: usize,
    r: usize,
    src: &[f64],
    dst: &mut [f64],
    tok: Option<usize>,
    dst_t: &mut Vec<f64>,
) {
    let s = src.len();
    dst_t.clear();
    dst_t.resize(s, 0.0);
    for vv in 0..v {
        if tok.is_some_and(|o| o != vv) {
            continue;
        }
        let d = &mut dst_t[vv * r..(vv + 1) * r];
        let col = &table_t[vv * s..(vv + 1) * s];
        for (a, c) in src.chunks_exact(r).zip(col.chunks_exact(r)) {
            for ((dd, &aa), &cc) in d.iter_mut().zip(a).zip(c) {
                *dd += aa * cc;
            }
        }
    }
    for (u, chunk) in dst.chunks_exact_mut(v).enumerate() {
        for (vv, o) in chunk.iter_mut().enumerate() {
            *o = dst_t[vv * r + u];
        }
    }
}

/// `dst[w] = Σ_v table[w·V + v] · src[(w mod R)·V + v]`, only `v == tok` when `tok` is set.
///
/// `table_t` is the transposed table (`table_t[v·S + w] = table[w·V + v]`) and `src_t` scratch
/// for the transposed `src`, so that the inner loop runs over contiguous windows and vectorises.
fn backward_step(
    table_t: &[f64],
    v: usize,
    r: usize,
    src: &[f64],
    dst: &mut [f64],
    tok: Option<usize>,
    src_t: &mut Vec<f64>,
) {
    let s = dst.len();
    src_t.clear();
    src_t.resize(s, 0.0);
    for (u, chunk) in src.chunks_exact(v).enumerate() {
        for (vv, &b) in chunk.iter().enumerate() {
            src_t[vv * r + u] = b;
        }
    }
    dst.fill(0.0);
    for vv in 0..v {
        if tok.is_some_and(|o| o != vv) {
            continue;
        }
        let b = &src_t[vv * r..(vv + 1) * r];
        let col = &table_t[vv * s..(vv + 1) * s];
        for (d, c) in dst.chunks_exact_mut(r).zip(col.chunks_exact(r)) {
            for ((dd, &cc), &bb) in d.iter_mut().zip(c).zip(b) {
                *dd += cc * bb;
            }
        }
    }
}

/// Log-space [`forward_step`].
fn log_forward_step(
    ltable: &[f64],
    v: usize,
    r: usize,
    src: &[f64],
    dst: &mut [f64],
    tok: Option<usize>,
    terms: &mut Vec<f64>,
) {
    dst.fill(f64::NEG_INFINITY);
    for u in 0..r {
        for vv in 0..v {
            if tok.is_some_and(|o| o != vv) {
                continue;
            }
            terms.clear();
            terms.extend((0..v).map(|h| {
                let w = h * r + u;
                src[w] + ltable[w * v + vv]
            }));
            dst[u * v + vv] = numeric::lse(terms);
        }
    }
}

/// Log-space [`backward_step`].
fn log_backward_step(
    ltable: &[f64],
    v: usize,
    r: usize,
    src: &[f64],
    dst: &mut [f64],
    tok: Option<usize>,
    terms: &mut Vec<f64>,
) {
    for (w, (d, row)) in dst.iter_mut().zip(ltable.chunks_exact(v)).enumerate() {
        let u = w % r;
        let b = &src[u * v..(u + 1) * v];
        *d = match tok {
            None => {
                terms.clear();
                terms.extend(row.iter().zip(b).map(|(p, q)| p + q));
                numeric::lse(terms)
            }
            Some(o) => row[o] + b[o],
        };
    }
}

/// Scratch buffers reused across the sequences of a batch.
#[derive(Default)]
pub(crate) struct Workspace {
    alpha: Vec<f64>,
    beta: Vec<f64>,
    beta2: Vec<f64>,
    gamma: Vec<f64>,
    terms: Vec<f64>,
}

impl NGram {
    /// Draws the parameters. The caller has validated `order >= 2`, `vocab >= 2`, the table
    /// size (`nstates = vocab^(order-1)`), the temperature and the threshold.
    pub(crate) fn generate(
        order: usize,
        vocab: usize,
        nstates: usize,
        temperature: f64,
        threshold: f64,
        seed: u64,
    ) -> Result<Self, LanguageError> {
        let mut normals = NormalStream::new(ChaCha8Rng::seed_from_u64(seed));
        let mut z = vec![0.0; nstates];
        normals.fill(&mut z);
        let mut init = vec![0.0; nstates];
        if !softmax_threshold(&z, temperature, threshold, &mut init) {
            return Err(LanguageError::EmptyRow {
                table: "initial distribution",
                row: 0,
                threshold,
            });
        }
        let mut cond = vec![0.0; nstates * vocab];
        let mut zr = vec![0.0; vocab];
        for (w, row) in cond.chunks_exact_mut(vocab).enumerate() {
            normals.fill(&mut zr);
            if !softmax_threshold(&zr, temperature, threshold, row) {
                return Err(LanguageError::EmptyRow {
                    table: "transition table",
                    row: w,
                    threshold,
                });
            }
        }
        Ok(Self::from_tables(order, vocab, nstates, init, cond))
    }

    /// Builds the engine from validated tables (`nstates = vocab^(order-1)`, rows normalised).
    pub(crate) fn from_tables(
        order: usize,
        vocab: usize,
        nstates: usize,
        init: Vec<f64>,
        cond: Vec<f64>,
    ) -> Self {
        let n1 = order - 1;
        let span = (0..n1).map(|p| vocab.pow((n1 - 1 - p) as u32)).collect();
        let log_init = init.iter().map(|&p| numeric::ln0(p)).collect();
        let log_cond = cond.iter().map(|&p| numeric::ln0(p)).collect();
        let support_step = cond
            .iter()
            .map(|&p| if p > 0.0 { 1.0 / vocab as f64 } else { 0.0 })
            .collect();
        let guard = Guard::new(&[&init, &cond]);
        let mut cond_t = vec![0.0; nstates * vocab];
        for (w, row) in cond.chunks_exact(vocab).enumerate() {
            for (t, &p) in row.iter().enumerate() {
                cond_t[t * nstates + w] = p;
            }
        }
        Self {
            order,
            vocab,
            nstates,
            nsuffix: nstates / vocab,
            span,
            init,
            cond,
            cond_t,
            log_init,
            log_cond,
            support_step,
            guard,
        }
    }

    /// Test hook: run every recursion in log space.
    #[cfg(test)]
    pub(crate) fn force_log_space(&mut self) {
        self.guard.always_log = true;
    }

    fn n1(&self) -> usize {
        self.order - 1
    }

    fn window(&self, x: &[u32]) -> usize {
        x.iter().fold(0, |w, &t| w * self.vocab + t as usize)
    }

    fn digit(&self, w: usize, p: usize) -> usize {
        (w / self.span[p]) % self.vocab
    }

    /// Exact score of a sequence of valid tokens with `x.len() >= n-1`.
    pub(crate) fn score(&self, x: &[u32]) -> SequenceScore {
        let n1 = self.n1();
        let v = self.vocab;
        let mut w = self.window(&x[..n1]);
        let mut log_prob = self.log_init[w];
        let mut invalid = 0;
        let mut first_invalid = None;
        if self.init[w] == 0.0 {
            invalid += 1;
            first_invalid = Some(self.first_invalid_in_window(x));
        }
        for (k, &t) in x.iter().enumerate().skip(n1) {
            let t = t as usize;
            let lp = self.log_cond[w * v + t];
            if lp == f64::NEG_INFINITY {
                invalid += 1;
                first_invalid.get_or_insert(k);
            }
            log_prob += lp;
            w = (w % self.nsuffix) * v + t;
        }
        SequenceScore {
            log_prob,
            in_support: invalid == 0,
            first_invalid,
            invalid_transitions: invalid,
        }
    }

    /// The first `k < n-1` whose prefix `x[..=k]` has marginal probability zero under the
    /// initial distribution. Only called when the whole window has probability zero.
    fn first_invalid_in_window(&self, x: &[u32]) -> usize {
        let n1 = self.n1();
        for k in 0..n1 {
            let prefix = self.window(&x[..=k]);
            let span = self.span[k];
            let mass: f64 = self.init[prefix * span..(prefix + 1) * span].iter().sum();
            if mass == 0.0 {
                return k;
            }
        }
        n1 - 1
    }

    pub(crate) fn sample<R: Rng + ?Sized>(&self, length: usize, rng: &mut R) -> Vec<u32> {
        let n1 = self.n1();
        let v = self.vocab;
        let mut w = numeric::draw(&self.init, rng);
        let mut out = Vec::with_capacity(length);
        out.extend((0..n1).map(|p| self.digit(w, p) as u32));
        for _ in n1..length {
            let t = numeric::draw(&self.cond[w * v..(w + 1) * v], rng);
            out.push(t as u32);
            w = (w % self.nsuffix) * v + t;
        }
        out
    }

    /// `H(X_1..X_L) = H(initial) + Σ_{steps} Σ_w P(window = w) · H(cond[w])`.
    pub(crate) fn entropy(&self, length: usize) -> f64 {
        let (v, r) = (self.vocab, self.nsuffix);
        let mut total = numeric::entropy(&self.init);
        let row_h: Vec<f64> = self.cond.chunks_exact(v).map(numeric::entropy).collect();
        let mut mu = self.init.clone();
        let mut next = vec![0.0; self.nstates];
        for step in self.n1()..length {
            total += mu.iter().zip(&row_h).map(|(m, h)| m * h).sum::<f64>();
            if step + 1 < length {
                forward_step(&self.cond, v, r, &mu, &mut next, None);
                std::mem::swap(&mut mu, &mut next);
            }
        }
        total
    }

    /// `log10(|support ∩ V^L| / V^L)`, by propagating the probability that a uniformly random
    /// sequence is still inside the support (rescaled every step, scales summed in log10).
    pub(crate) fn support_log10_density(&self, length: usize) -> f64 {
        let (v, r) = (self.vocab, self.nsuffix);
        let mut d: Vec<f64> = self
            .init
            .iter()
            .map(|&p| if p > 0.0 { 1.0 } else { 0.0 })
            .collect();
        let mut log10 = 0.0;
        let s: f64 = d.iter().sum();
        log10 += (s / self.nstates as f64).log10();
        d.iter_mut().for_each(|x| *x /= s);
        let mut next = vec![0.0; self.nstates];
        for _ in self.n1()..length {
            forward_step(&self.support_step, v, r, &d, &mut next, None);
            let s: f64 = next.iter().sum();
            if s == 0.0 {
                return f64::NEG_INFINITY;
            }
            log10 += s.log10();
            next.iter_mut().for_each(|x| *x /= s);
            std::mem::swap(&mut d, &mut next);
        }
        log10
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

    fn window_allowed(&self, x: &[u32], w: usize) -> bool {
        let mask = self.vocab as u32;
        (0..self.n1()).all(|p| x[p] == mask || self.digit(w, p) == x[p] as usize)
    }

    /// Adds the posterior window weights `gamma` (of step `st`) to the masked positions they
    /// determine, then normalises those rows.
    fn accumulate(&self, x: &[u32], st: usize, gamma: &[f64], out: &mut [f64]) {
        let (v, n1) = (self.vocab, self.n1());
        let mask = v as u32;
        let pos = n1 - 1 + st;
        if x[pos] == mask {
            let row = &mut out[pos * v..(pos + 1) * v];
            for chunk in gamma.chunks_exact(v) {
                for (o, &g) in row.iter_mut().zip(chunk) {
                    *o += g;
                }
            }
            normalize_row(row);
        }
        if st == 0 {
            for p in 0..n1 - 1 {
                if x[p] == mask {
                    let row = &mut out[p * v..(p + 1) * v];
                    for (w, &g) in gamma.iter().enumerate() {
                        row[self.digit(w, p)] += g;
                    }
                    normalize_row(row);
                }
            }
        }
    }

    pub(crate) fn marginals_scaled(
        &self,
        x: &[u32],
        out: &mut [f64],
        ws: &mut Workspace,
    ) -> Outcome {
        let (v, s, r, n1) = (self.vocab, self.nstates, self.nsuffix, self.n1());
        let mask = v as u32;
        let steps = x.len() - n1 + 1;
        ws.alpha.resize(steps * s, 0.0);
        ws.beta.resize(s, 0.0);
        ws.beta2.resize(s, 0.0);
        ws.gamma.resize(s, 0.0);

        let a0 = &mut ws.alpha[..s];
        for (w, a) in a0.iter_mut().enumerate() {
            *a = if self.window_allowed(x, w) {
                self.init[w]
            } else {
                0.0
            };
        }
        match numeric::normalize_max(a0) {
            Norm::Scaled(_) => {}
            Norm::Zero => return Outcome::Inconsistent,
            Norm::Flagged => return Outcome::Flagged,
        }
        for st in 1..steps {
            let tok = token(x[n1 - 1 + st], mask);
            let (prev, cur) = ws.alpha.split_at_mut(st * s);
            let dst = &mut cur[..s];
            forward_step_t(
                &self.cond_t,
                v,
                r,
                &prev[(st - 1) * s..],
                dst,
                tok,
                &mut ws.terms,
            );
            match numeric::normalize_max(dst) {
                Norm::Scaled(_) => {}
                Norm::Zero => return Outcome::Inconsistent,
                Norm::Flagged => return Outcome::Flagged,
            }
        }

        self.init_out(x, out);
        ws.beta.fill(1.0);
        for st in (0..steps).rev() {
            let a = &ws.alpha[st * s..(st + 1) * s];
            let mut total = 0.0;
            for ((g, &aa), &bb) in ws.gamma.iter_mut().zip(a).zip(&ws.beta) {
                *g = aa * bb;
                total += *g;
            }
            if !(total > 0.0 && total.is_finite()) {
                return Outcome::Flagged;
            }
            self.accumulate(x, st, &ws.gamma, out);
            if st > 0 {
                let tok = token(x[n1 - 1 + st], mask);
                backward_step(
                    &self.cond_t,
                    v,
                    r,
                    &ws.beta,
                    &mut ws.beta2,
                    tok,
                    &mut ws.terms,
                );
                if !matches!(numeric::normalize_max(&mut ws.beta2), Norm::Scaled(_)) {
                    return Outcome::Flagged;
                }
                std::mem::swap(&mut ws.beta, &mut ws.beta2);
            }
        }
        Outcome::Done
    }

    pub(crate) fn marginals_log(&self, x: &[u32], out: &mut [f64], ws: &mut Workspace) -> Outcome {
        let (v, s, r, n1) = (self.vocab, self.nstates, self.nsuffix, self.n1());
        let mask = v as u32;
        let steps = x.len() - n1 + 1;
        ws.alpha.resize(steps * s, 0.0);
        ws.beta.resize(s, 0.0);
        ws.beta2.resize(s, 0.0);
        ws.gamma.resize(s, 0.0);

        for (w, a) in ws.alpha[..s].iter_mut().enumerate() {
            *a = if self.window_allowed(x, w) {
                self.log_init[w]
            } else {
                f64::NEG_INFINITY
            };
        }
        for st in 1..steps {
            let tok = token(x[n1 - 1 + st], mask);
            let (prev, cur) = ws.alpha.split_at_mut(st * s);
            let src = &prev[(st - 1) * s..];
            log_forward_step(&self.log_cond, v, r, src, &mut cur[..s], tok, &mut ws.terms);
        }
        if numeric::lse(&ws.alpha[(steps - 1) * s..]) == f64::NEG_INFINITY {
            return Outcome::Inconsistent;
        }

        self.init_out(x, out);
        ws.beta.fill(0.0);
        for st in (0..steps).rev() {
            let a = &ws.alpha[st * s..(st + 1) * s];
            for ((g, &aa), &bb) in ws.gamma.iter_mut().zip(a).zip(&ws.beta) {
                *g = aa + bb;
            }
            let total = numeric::lse(&ws.gamma);
            for g in ws.gamma.iter_mut() {
                *g = (*g - total).exp();
            }
            self.accumulate(x, st, &ws.gamma, out);
            if st > 0 {
                let tok = token(x[n1 - 1 + st], mask);
                log_backward_step(
                    &self.log_cond,
                    v,
                    r,
                    &ws.beta,
                    &mut ws.beta2,
                    tok,
                    &mut ws.terms,
                );
                std::mem::swap(&mut ws.beta, &mut ws.beta2);
            }
        }
        Outcome::Done
    }
}

fn normalize_row(row: &mut [f64]) {
    let s: f64 = row.iter().sum();
    if s > 0.0 {
        row.iter_mut().for_each(|x| *x /= s);
    }
}
