//! Trajectories (`GenerateRequest::trace`, API 1.8): what [`super::Run`] records about each
//! sample on its way to the output, for every denoiser sampler alike, because every sampler
//! counts its calls with [`super::Run::count_call`] and commits with [`super::Run::commit`].
//!
//! A sample's **step** `k` is its `k`-th counted network call (so steps are its `nfe`, and do
//! not depend on what shares its batch). A position's **commit step** is the step whose output
//! its final token came from: the sample's call count when [`super::Run::commit`] ran (every
//! sampler counts a call before committing from it; `ddpm_cache`, committing from an output it
//! did not need anew, credits the call that made it).
//!
//! The **prediction after step `k`** is what the model would answer if decoding stopped
//! there: the tokens committed so far, and at every still-masked position the argmax of step
//! `k`'s output (the "current prediction" of the temporal-consistency papers). A cached
//! window computes only its positions; the others keep the argmax of the latest output that
//! covered them, and a position no output has covered yet stays masked. It is recorded when
//! the sample's next call is counted (or at the end), so it sees every commit of step `k`, and
//! only when it differs from the previous one; the last is the sample's output. The argmax is
//! one extra temperature-0 draw at the masked positions per call, made only under trace.

use super::draw::{Drawn, RowError};
use crate::{SampleTrace, TracePrediction};

/// The trajectories of one generate call's batch, row-major `batch × length` like the canvas.
pub(crate) struct Tracer {
    length: usize,
    mask: u32,
    /// Per canvas row: the step its current token was committed from (0: never committed).
    commit_step: Vec<u64>,
    /// Per canvas row: the argmax of the latest output that covered it (the mask id: none).
    predicted: Vec<u32>,
    /// The argmax of every masked row of the output of batch call `argmax_call` (the mask id
    /// where not computed), shared by the samples that count that call.
    argmax_all: Vec<u32>,
    argmax_call: u64,
    /// Per sample: an argmax taken from a call made at its own time (time-conditioned networks
    /// called once per distinct time), used by its next counted call instead of `argmax_all`.
    pinned: Vec<Option<Vec<(usize, u32)>>>,
    /// Per sample: its recorded predictions.
    predictions: Vec<Vec<TracePrediction>>,
    /// The first error met while taking an argmax (returned when the sampler has finished,
    /// since counting a call cannot fail).
    pub error: Option<crate::PluginError>,
}

impl Tracer {
    pub fn new(batch: usize, length: usize, mask: u32) -> Tracer {
        Tracer {
            length,
            mask,
            commit_step: vec![0; batch * length],
            predicted: vec![mask; batch * length],
            argmax_all: vec![mask; batch * length],
            argmax_call: 0,
            pinned: vec![None; batch],
            predictions: vec![Vec::new(); batch],
            error: None,
        }
    }

    /// Row `row` was committed from step `step` of its sample.
    pub fn commit(&mut self, row: usize, step: u64) {
        self.commit_step[row] = step;
    }

    /// Record sample `b`'s prediction after step `step` from its canvas row `tokens`, unless it
    /// equals the previous one.
    pub fn record(&mut self, b: usize, step: u64, tokens: &[u32]) {
        let start = b * self.length;
        let predicted = &self.predicted[start..start + self.length];
        let prediction: Vec<u32> = tokens
            .iter()
            .zip(predicted)
            .map(|(&t, &p)| if t == self.mask { p } else { t })
            .collect();
        let seen = self.predictions[b].last();
        if seen.is_none_or(|last| last.tokens != prediction) {
            self.predictions[b].push(TracePrediction::new(step, prediction));
        }
    }

    /// Whether `argmax_all` holds batch call `call`'s argmax.
    pub fn has_argmax_of(&self, call: u64) -> bool {
        self.argmax_call == call
    }

    /// Keep the argmax of batch call `call` at `rows` (canvas rows) from `drawn`.
    pub fn set_argmax(&mut self, call: u64, rows: &[usize], drawn: &Drawn) {
        self.argmax_all.fill(self.mask);
        for (&row, &token) in rows.iter().zip(&drawn.tokens) {
            self.argmax_all[row] = token;
        }
        self.argmax_call = call;
    }

    /// Pin sample `b`'s argmax at `rows` (its own call's output) for its next counted call.
    pub fn pin(&mut self, b: usize, rows: &[usize], drawn: &Drawn) {
        self.pinned[b] = Some(rows.iter().copied().zip(drawn.tokens.clone()).collect());
    }

    /// Sample `b` counted a call: its predicted tokens become that call's argmax (its pinned
    /// one, or the batch call's where that covered its rows).
    pub fn take_argmax(&mut self, b: usize) {
        if let Some(pinned) = self.pinned[b].take() {
            for (row, token) in pinned {
                self.predicted[row] = token;
            }
            return;
        }
        let rows = b * self.length..(b + 1) * self.length;
        for row in rows {
            if self.argmax_all[row] != self.mask {
                self.predicted[row] = self.argmax_all[row];
            }
        }
    }

    /// Keep the first error of an argmax draw (`rows` the canvas rows it was asked at).
    pub fn fail(&mut self, rows: &[usize], error: RowError) {
        if self.error.is_none() {
            let row = rows[error.at];
            self.error = Some(crate::PluginError::bad_data(format!(
                "sample {}, position {}: {} (while tracing)",
                row / self.length,
                row % self.length,
                error.message
            )));
        }
    }

    /// The trajectories, sample `b` having taken `steps[b]` steps.
    pub fn finish(self, steps: &[u64]) -> Vec<SampleTrace> {
        let length = self.length;
        self.predictions
            .into_iter()
            .enumerate()
            .map(|(b, predictions)| {
                let commits = self.commit_step[b * length..(b + 1) * length].to_vec();
                SampleTrace::new(steps[b], commits).with_predictions(predictions)
            })
            .collect()
    }
}
