//! Random parameter generation (DESIGN.md §3): one standard normal `z` per outcome of every
//! context, `p = softmax(temperature · z)`, entries below `threshold` set to zero, renormalised.

use rand::Rng;

/// A stream of independent standard normals drawn with the Box–Muller transform.
///
/// Both values of every Box–Muller pair are used, in order (cosine first, then sine), so the
/// n-th normal of the stream depends only on the seed of the underlying generator and on `n`.
pub(crate) struct NormalStream<R> {
    rng: R,
    spare: Option<f64>,
}

impl<R: Rng> NormalStream<R> {
    pub(crate) fn new(rng: R) -> Self {
        Self { rng, spare: None }
    }

    pub(crate) fn next_normal(&mut self) -> f64 {
        if let Some(z) = self.spare.take() {
            return z;
        }
        // u1 in (0, 1] so that ln(u1) is finite; u2 in [0, 1).
        let u1 = 1.0 - self.rng.random::<f64>();
        let u2 = self.rng.random::<f64>();
        let radius = (-2.0 * u1.ln()).sqrt();
        let angle = std::f64::consts::TAU * u2;
        self.spare = Some(radius * angle.sin());
        radius * angle.cos()
    }

    pub(crate) fn fill(&mut self, out: &mut [f64]) {
        for o in out {
            *o = self.next_normal();
        }
    }
}

/// Writes `softmax(temperature · z)` into `out`, zeroes every entry strictly below `threshold`
/// and renormalises the survivors. Returns `false` when no entry survives (the row would be
/// empty); `out` is then all zero.
pub(crate) fn softmax_threshold(
    z: &[f64],
    temperature: f64,
    threshold: f64,
    out: &mut [f64],
) -> bool {
    debug_assert_eq!(z.len(), out.len());
    let max = z
        .iter()
        .fold(f64::NEG_INFINITY, |m, &zi| m.max(temperature * zi));
    let mut sum = 0.0;
    for (o, &zi) in out.iter_mut().zip(z) {
        *o = (temperature * zi - max).exp();
        sum += *o;
    }
    let mut kept = 0.0;
    for o in out.iter_mut() {
        *o /= sum;
        if *o < threshold {
            *o = 0.0;
        } else {
            kept += *o;
        }
    }
    if kept <= 0.0 {
        out.fill(0.0);
        return false;
    }
    for o in out.iter_mut() {
        *o /= kept;
    }
    true
}
