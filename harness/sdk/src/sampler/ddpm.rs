//! `ddpm` and `ddpm_cache` — MDLM ancestral sampling: from `t` to `s` each masked position
//! unmasks with probability `(α_s − α_t)/(1 − α_t)` and then draws its token from the
//! denoiser's distribution; `steps` is each block's time grid, which ends at `t = 0` where every
//! remaining position unmasks. `ddpm_cache` makes the same draws but calls the network again
//! only after some token of the batch changed (valid only for time-independent denoisers;
//! refused otherwise): identical tokens to `ddpm` for the same seed, NFE ≤ min(steps, L).

use super::params::{Handle, BLOCK_LENGTH};
use super::{DenoiserSampler, Param, Params, RowBlock, Run, Sampler, Schedule, Steps, Want};
use crate::{PluginError, Result};
use rand::Rng;

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
        for block in blocks {
            self.block(run, &block, schedule)?;
        }
        Ok(())
    }
}

impl Ddpm {
    /// Block `i` of every sample (`block[b]`: sample `b`'s, `None` when it has no `i`-th
    /// block), each on its own time grid.
    fn block(
        &self,
        run: &mut Run<'_>,
        block: &[Option<RowBlock>],
        schedule: Schedule,
    ) -> Result<()> {
        let (batch, length, cache) = (run.batch(), run.length(), self.cache);
        let steps = block.iter().flatten().map(|r| r.steps).max().unwrap_or(0);
        // Whether a sample's tokens changed since the network last saw them.
        let mut stale = vec![true; batch];
        let mut have_output = false;
        for i in 0..steps {
            // Sample b's step i of its own grid, while it has masked positions in its block.
            let grid: Vec<Option<(f64, f64)>> = block
                .iter()
                .enumerate()
                .map(|(b, rb)| match rb {
                    Some(rb) if i < rb.steps && !run.masked_in(b, &rb.range).is_empty() => {
                        let n = rb.steps as f64;
                        Some((1.0 - i as f64 / n, 1.0 - (i + 1) as f64 / n))
                    }
                    _ => None,
                })
                .collect();
            if grid.iter().all(Option::is_none) {
                break;
            }
            // Per sample, positions left to right: the unmask coin, then (if heads) the token's
            // uniform — the stream order of one sample, whatever path draws the token.
            let (mut rows, mut uniforms) = (Vec::new(), Vec::new());
            for (b, (rb, ts)) in block.iter().zip(&grid).enumerate() {
                let (Some(rb), Some((t, s))) = (rb, ts) else {
                    continue;
                };
                let p_unmask = schedule.unmask_probability(*t, *s);
                for j in run.masked_in(b, &rb.range) {
                    if run.rng(b).random::<f64>() < p_unmask {
                        rows.push(b * length + j);
                        uniforms.push(run.rng(b).random::<f64>());
                    }
                }
            }
            let active = |b: usize| grid[b].is_some();
            let drawn = if cache {
                // Time-independent (checked in `run`): one call serves every sample.
                if !have_output || (0..batch).any(|b| active(b) && stale[b]) {
                    let t = grid.iter().flatten().next().map_or(1.0, |ts| ts.0);
                    run.forward(t)?;
                    have_output = true;
                    for (b, stale) in stale.iter_mut().enumerate() {
                        if active(b) && *stale {
                            run.count_call(b);
                        }
                        *stale = false;
                    }
                }
                if rows.is_empty() {
                    continue;
                }
                run.draw(&rows, &uniforms)?
            } else {
                let times: Vec<Option<f64>> = grid.iter().map(|ts| ts.map(|ts| ts.0)).collect();
                let drawn = run.forward_and_draw(&times, &rows, &uniforms)?;
                (0..batch)
                    .filter(|&b| active(b))
                    .for_each(|b| run.count_call(b));
                drawn
            };
            for (&row, &token) in rows.iter().zip(&drawn.tokens) {
                run.commit(row, token);
                stale[row / length] = true;
            }
        }
        Ok(())
    }
}
