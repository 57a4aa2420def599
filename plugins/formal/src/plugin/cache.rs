//! The oracle's key/value cache (`cache: prefix | dual` in the remasking samplers): exact.
//!
//! The oracle has no keys or values: its conditionals are exact functions of the canvas, so
//! nothing it could cache goes stale. A window's distributions are the full pass's at the
//! window's positions, and cached decoding gives exactly the samples of uncached decoding,
//! while the reply counts only the window's positions as computed, as a model whose cache is
//! exact (block diffusion's prefix cache) would. Its wall time does not drop: forward–backward
//! still runs over the whole row, since a position's marginal depends on both ends.

use super::Oracle;
use dlm_sdk::kv_cache::DenoiserKvCache;
use dlm_sdk::{Denoiser, PluginError, Result};
use std::ops::Range;

impl DenoiserKvCache for Oracle {
    fn denoise_and_fill(
        &mut self,
        tokens: &[u32],
        batch: usize,
        length: usize,
        t: f64,
        out: &mut [f64],
    ) -> Result<()> {
        self.denoise(tokens, batch, length, t, out)
    }

    fn denoise_window(
        &mut self,
        tokens: &[u32],
        batch: usize,
        length: usize,
        window: Range<usize>,
        t: f64,
        out: &mut [f64],
    ) -> Result<()> {
        let v = self.vocab_size();
        if window.end > length || out.len() != batch * window.len() * v {
            return Err(PluginError::internal(format!(
                "oracle window {window:?} of a {batch} × {length} canvas with {} outputs",
                out.len()
            )));
        }
        let mut full = vec![0.0; batch * length * v];
        self.denoise(tokens, batch, length, t, &mut full)?;
        let width = window.len() * v;
        for (b, o) in out.chunks_mut(width.max(1)).enumerate().take(batch) {
            let start = (b * length + window.start) * v;
            o.copy_from_slice(&full[start..start + width]);
        }
        Ok(())
    }
}
