//! The largest values a suite may ask for: each is checked at its node with a clear error,
//! before a worker could run out of memory or time on it.

/// Longest `timeout_seconds` (per cell) and `train.timeout_seconds` (per training run): 7 days.
pub const MAX_TIMEOUT_SECONDS: f64 = 7.0 * 24.0 * 3600.0;
/// Most `samples` per cell.
pub const MAX_SAMPLES: i64 = 100_000_000;
/// Most sequences per `generate` call (`batch_size`) or training step (`train.batch_size`).
pub const MAX_BATCH_SIZE: i64 = 1_000_000;
/// Longest sequence (`lengths`).
pub const MAX_LENGTH: i64 = 1_000_000;
/// Most sampling steps (`steps`).
pub const MAX_STEPS: i64 = 1_000_000;
/// Most optimiser steps (`train.steps`, `train.validation_every`).
pub const MAX_TRAIN_STEPS: i64 = 100_000_000;
/// Largest held-out set (`train.validation_samples`).
pub const MAX_VALIDATION_SAMPLES: i64 = 10_000_000;
/// Most tokens the harness holds for one cell (samples × length; also validation samples ×
/// length): token ids, their JSON rows and events, about [`BYTES_PER_HELD_TOKEN`] each.
pub const MAX_CELL_TOKENS: u128 = 250_000_000;
/// Most tokens in one `generate` call or training step (batch × length): a plugin holds batch ×
/// length × vocabulary probabilities (8 bytes each) for every forward pass.
pub const MAX_BATCH_TOKENS: u128 = 1 << 24;
/// Most cells in one suite (each is a worker process).
pub const MAX_CELLS: u128 = 1_000_000;
/// Deepest nesting of lists and mappings (a suite needs about 6 levels).
pub const MAX_DEPTH: usize = 64;
/// Bytes the harness holds per sampled token (u32 ids, JSON rows, the events file): an estimate
/// used to state a refused size in memory.
pub(super) const BYTES_PER_HELD_TOKEN: f64 = 12.0;
