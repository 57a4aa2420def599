//! `ddpm` and `ddpm_cache` — MDLM ancestral sampling: from `t` to `s` each masked position
//! unmasks with probability `(α_s − α_t)/(1 − α_t)` and then draws its token from the
//! denoiser's distribution; `steps` is each block's time grid, which ends at `t = 0` where every
//! remaining position unmasks. `ddpm_cache` makes the same draws but calls the network again
//! only after some token of the batch changed (valid only for time-independent denoisers;
//! refused otherwise): identical tokens to `ddpm` for the same seed, NFE ≤ min(steps, L).

use super::params::{Handle, BLOCK_LENGTH};
use super::{DenoiserSampler, Param, Params, Run, Sampler, Schedule, Steps, Want};
use crate::{PluginError, Result};
use rand::Rng;
use std::ops::Range;

/// The `ddpm` (`cache: false`) and `ddpm_cache` (`cache: true`) samplers.
#[derive(Debug, Clone, Copy)]
pub struct Ddpm {
    /// Reuse the network's output until a token of the batch changes.
    pub cache: bool,
}

impl Sampler for Ddpm {
    fn name(&self) -> &'static str {
        if self.cache {
            "ddpm_cache"
        } else {
            "ddpm"
        }
    }
    fn params(&self) -> Vec<Param> {
        vec![BLOCK_LENGTH.param()]
    }
    fn steps(&self) -> Steps {
        Steps::Budget
    }
    fn takes_schedule(&self) -> bool {
        true
    }
}

impl DenoiserSampler for Ddpm {
    fn scores(&self, _: &Params) -> Want {
        Want::default()
    }
    fn run(&self, run: &mut Run<'_>, params: &Params) -> Result<()> {
        let blocks = run.blocks(params.get(&BLOCK_LENGTH))?;
        if self.cache && run.time_conditioned() {
            return Err(PluginError::unsupported(
                "ddpm_cache reuses network outputs across time steps, which is only valid for a time-independent denoiser; this model is time-conditioned: use `ddpm`",
            ));
        }
        let schedule = Schedule::parse(run.schedule())?;
        for (range, steps) in blocks {
            self.block(run, range, steps, schedule)?;
        }
        Ok(())
    }
}

impl Ddpm {
    fn block(
        &self,
        run: &mut Run<'_>,
        range: Range<usize>,
        steps: usize,
        schedule: Schedule,
    ) -> Result<()> {
        let (batch, length, cache) = (run.batch(), run.length(), self.cache);
        // Whether a sample's tokens changed since the network last saw them.
        let mut stale = vec![true; batch];
        let mut have_output = false;
        for i in 0..steps {
            let t = 1.0 - i as f64 / steps as f64;
            let s = 1.0 - (i + 1) as f64 / steps as f64;
            let masked: Vec<Vec<usize>> = (0..batch).map(|b| run.masked_in(b, &range)).collect();
            let active: Vec<bool> = masked.iter().map(|m| !m.is_empty()).collect();
            if !active.iter().any(|&a| a) {
                break;
            }
            if !cache || !have_output || (0..batch).any(|b| active[b] && stale[b]) {
                run.forward(t)?;
                have_output = true;
                for b in 0..batch {
                    if active[b] && (!cache || stale[b]) {
                        run.count_call(b);
                    }
                    stale[b] = false;
                }
            }
            // Per sample, positions left to right: the unmask coin, then (if heads) the token's
            // uniform — the stream order of one sample, whatever path draws the token.
            let p_unmask = schedule.unmask_probability(t, s);
            let (mut rows, mut uniforms) = (Vec::new(), Vec::new());
            for (b, positions) in masked.iter().enumerate() {
                for &j in positions {
                    if run.rng(b).random::<f64>() < p_unmask {
                        rows.push(b * length + j);
                        uniforms.push(run.rng(b).random::<f64>());
                    }
                }
            }
            if rows.is_empty() {
                continue;
            }
            let drawn = run.draw(&rows, &uniforms)?;
            for (&row, &token) in rows.iter().zip(&drawn.tokens) {
                run.commit(row, token);
                stale[row / length] = true;
            }
        }
        Ok(())
    }
}
