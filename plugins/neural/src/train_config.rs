//! How to train ([`TrainConfig`]): read by the trainer and recorded in every checkpoint's
//! header, so it lives apart from both.

use serde::{Deserialize, Serialize};

/// How to train. Everything here enters the checkpoint fingerprint.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TrainConfig {
    /// Optimiser steps.
    pub steps: usize,
    /// Sequences per step.
    pub batch_size: usize,
    /// Peak learning rate (the paper: 3e-4).
    #[serde(default = "default_lr")]
    pub lr: f64,
    /// Share of the steps spent in linear warm-up (the paper: 10%).
    #[serde(default = "default_warmup")]
    pub warmup_fraction: f64,
    /// AdamW decoupled weight decay (MDLM: 0).
    #[serde(default)]
    pub weight_decay: f64,
    /// Clip the global gradient norm to this value (MDLM: 1.0); `None` = no clipping.
    #[serde(default = "default_clip")]
    pub grad_clip: Option<f64>,
    /// Seed of the initial weights and of the MDM's noise draws.
    #[serde(default)]
    pub seed: u64,
    /// Description of the data source (e.g. the task's reference seed), recorded so that it
    /// enters the fingerprint; the data themselves come from the `data` callback of
    /// [`train`](crate::train::train).
    #[serde(default)]
    pub data: serde_json::Value,
}

fn default_lr() -> f64 {
    3e-4
}
fn default_warmup() -> f64 {
    0.1
}
fn default_clip() -> Option<f64> {
    Some(1.0)
}

impl TrainConfig {
    pub fn new(steps: usize, batch_size: usize) -> Self {
        TrainConfig {
            steps,
            batch_size,
            lr: default_lr(),
            warmup_fraction: default_warmup(),
            weight_decay: 0.0,
            grad_clip: default_clip(),
            seed: 0,
            data: serde_json::Value::Null,
        }
    }

    /// Learning rate at optimiser step `step` (0-based): linear warm-up over the first
    /// `warmup_fraction` of the steps, then cosine decay to 0.
    pub fn learning_rate(&self, step: usize) -> f64 {
        let total = self.steps.max(1);
        let warmup = ((self.warmup_fraction * total as f64).ceil() as usize).min(total);
        if step < warmup {
            return self.lr * (step + 1) as f64 / warmup as f64;
        }
        let decay = (total - warmup).max(1);
        let progress = ((step - warmup) as f64 / decay as f64).min(1.0);
        self.lr * 0.5 * (1.0 + (std::f64::consts::PI * progress).cos())
    }

    /// The settings' own consistency (positive sizes, a usable learning rate and warm-up).
    pub fn validate(&self) -> Result<(), String> {
        if self.steps == 0 || self.batch_size == 0 {
            return Err("train: steps and batch_size must be positive".into());
        }
        if !(self.lr > 0.0 && self.lr.is_finite()) {
            return Err(format!("train: lr must be positive, got {}", self.lr));
        }
        if !(0.0..=1.0).contains(&self.warmup_fraction) {
            return Err(format!(
                "train: warmup_fraction must be in [0, 1], got {}",
                self.warmup_fraction
            ));
        }
        Ok(())
    }
}
