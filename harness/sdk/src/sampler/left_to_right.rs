//! `left_to_right` — one position per step, in order, drawn from the denoiser's conditional
//! given the prefix (the "AR-style MDM" baseline). It takes exactly `L` steps.

use super::{DenoiserSampler, Param, Params, Run, Sampler, Steps, Want};
use crate::Result;
use rand::Rng;

/// The `left_to_right` sampler.
#[derive(Debug, Clone, Copy)]
pub struct LeftToRight;

impl Sampler for LeftToRight {
    fn name(&self) -> &'static str {
        "left_to_right"
    }
    fn params(&self) -> Vec<Param> {
        Vec::new()
    }
    fn steps(&self) -> Steps {
        Steps::OnePerToken
    }
    fn takes_schedule(&self) -> bool {
        false
    }
}

impl DenoiserSampler for LeftToRight {
    fn scores(&self, _: &Params) -> Want {
        Want::default()
    }
    fn run(&self, run: &mut Run<'_>, _: &Params) -> Result<()> {
        let (batch, length) = (run.batch(), run.length());
        for j in 0..length {
            let needs: Vec<usize> = (0..batch).filter(|&b| run.token(b, j).is_none()).collect();
            if needs.is_empty() {
                continue; // a prompt position in every row
            }
            run.forward((length - j) as f64 / length as f64)?;
            let rows: Vec<usize> = needs.iter().map(|&b| b * length + j).collect();
            let uniforms: Vec<f64> = needs.iter().map(|&b| run.rng(b).random::<f64>()).collect();
            let drawn = run.draw(&rows, &uniforms)?;
            for (&row, &token) in rows.iter().zip(&drawn.tokens) {
                // Counted before the commit, as every sampler does (a trace's commit step).
                run.count_call(row / length);
                run.commit(row, token);
            }
        }
        Ok(())
    }
}
