//! The key/value cache as LLaDA's remasking loop drives it (Fast-dLLM's prefix and dual
//! caches): the `cache` and `refresh` parameters of the samplers that run [`super::remask`]
//! (`low_confidence`, `random`, `threshold`, `factor`, `eb`; also `dream_cache`, Fast-dLLM's
//! Dream loop), and which network call each step makes. The model's side is [`crate::kv_cache`].
//!
//! * `cache: none` (the default) — every step is a full forward pass.
//! * `cache: prefix` — a step that does not fill the cache runs a window from the current
//!   block's start to the end of the canvas; the positions before the block come from the cache.
//! * `cache: dual` — such a step runs a window over the current block only; the positions before
//!   and after it come from the cache.
//! * `refresh: every_block` (the default) — the cache is filled by a full forward pass at the
//!   first step of every block, Fast-dLLM's rule; every other step is a window.
//! * `refresh: k` (a positive integer) — also a fill at steps `k, 2k, …` of each block (counted
//!   from the block's first step), so `refresh: 1` fills at every step and gives exactly the
//!   samples of `cache: none`.
//!
//! A window reuses keys and values computed from an older canvas, so its distributions are
//! those of another network than the uncached one: the samples differ, which is the price the
//! suites measure. Refused: a cache from a model without one, a time-conditioned network (its
//! keys depend on a time that changes between steps), `refresh` without a cache, and a batch
//! whose samples' blocks lie at different positions (one window serves every row): prompts of
//! different lengths, unless the batch is left-padded to one prompt length.
//!
//! Counting: every call is one NFE, fill or window; a fill computes `length` positions per row,
//! a window its width ([`super::Run::count_call`]).

use super::params::{Choice, CountOrWord};
use super::{Params, RowBlock};
use crate::{PluginError, Result};
use std::ops::Range;

/// Which keys and values a step between fills reuses.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CacheMode {
    /// No cache: every step is a full forward pass.
    None,
    /// The positions before the current block are cached; the window runs from the block's
    /// start to the end.
    Prefix,
    /// The positions before and after the current block are cached; the window is the block.
    Dual,
}

impl CacheMode {
    /// Its name in a suite's `params:`.
    pub fn name(self) -> &'static str {
        CACHE
            .options
            .iter()
            .find(|(_, mode)| *mode == self)
            .map_or("none", |(name, _)| name)
    }
}

/// `cache`: `none` (default: every step a full forward pass), `prefix` (steps between fills
/// compute the window from the current block's start to the end, reusing the cached keys and
/// values before it) or `dual` (the window is the current block; before and after it come from
/// the cache). Declared by the samplers of the remasking loop ([`super::remask`]).
pub const CACHE: Choice<CacheMode> = Choice {
    name: "cache",
    options: &[
        ("none", CacheMode::None),
        ("prefix", CacheMode::Prefix),
        ("dual", CacheMode::Dual),
    ],
    doc: "reuse keys and values between fills: none, prefix (before the block) or dual (before and after it)",
};

/// `refresh`: `every_block` (default: the cache is filled by a full forward pass at the first
/// step of every block, Fast-dLLM's rule) or a positive integer `k` (also a fill at steps `k,
/// 2k, …` of each block; `1` fills at every step, which gives exactly the samples of `cache:
/// none`). Refused with `cache: none`.
pub const REFRESH: CountOrWord = CountOrWord {
    name: "refresh",
    word: "every_block",
    doc: "fill the cache at the first step of every block, or also every k steps inside it",
};

/// A request's cache settings, read from its parameters.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct CachePlan {
    pub mode: CacheMode,
    /// `None`: fill at the first step of each block only; `Some(k)`: also every k steps.
    pub refresh: Option<usize>,
}

/// What one step of the loop asks the network for.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Call {
    /// A full forward pass (the cache, if any, is not involved).
    Forward,
    /// A full forward pass that fills the cache.
    Fill,
    /// A pass over these positions of every row, the rest from the cache.
    Window(Range<usize>),
}

impl CachePlan {
    /// The plan `params` give (the defaults where the sampler declares neither parameter).
    pub fn read(params: &Params) -> Result<CachePlan> {
        let plan = CachePlan {
            mode: params.get(&CACHE),
            refresh: params.get(&REFRESH),
        };
        if plan.mode == CacheMode::None && plan.refresh.is_some() {
            return Err(PluginError::bad_config(
                "`refresh` says when the key/value cache is filled, but `cache` is `none`; give `cache: prefix` or `cache: dual`, or leave `refresh` out",
            ));
        }
        Ok(plan)
    }

    pub fn is_on(&self) -> bool {
        self.mode != CacheMode::None
    }

    /// The call at step `step` (counted from 0 in each block) of the block `block` of a canvas
    /// of `length` positions.
    pub fn call(&self, step: usize, block: &Range<usize>, length: usize) -> Call {
        let fills = step == 0 || self.refresh.is_some_and(|k| step.is_multiple_of(k));
        match self.mode {
            CacheMode::None => Call::Forward,
            _ if fills => Call::Fill,
            CacheMode::Prefix => Call::Window(block.start..length),
            CacheMode::Dual => Call::Window(block.clone()),
        }
    }

    /// Refuse a batch whose samples' blocks do not coincide (`blocks[i][b]`: sample `b`'s
    /// `i`-th block, as [`super::Run::blocks`] gives them), since one window serves every row;
    /// `prompt_len(b)` names the cause.
    pub fn check_aligned(
        &self,
        blocks: &[Vec<Option<RowBlock>>],
        prompt_len: impl Fn(usize) -> usize,
    ) -> Result<()> {
        if !self.is_on() {
            return Ok(());
        }
        for block in blocks {
            let first = block.first().and_then(Option::as_ref);
            if let Some(b) = (1..block.len()).find(|&b| block[b].as_ref() != first) {
                let name = self.mode.name();
                return Err(PluginError::unsupported(format!(
                    "`cache: {name}` runs one window for every sample of a batch, so their blocks must lie at the same positions, but sample 0's prompt has {} tokens and sample {b}'s {}; give the task a fixed `generation_length` (prompts are then left-padded to one length) or use `batch_size: 1`",
                    prompt_len(0),
                    prompt_len(b)
                )));
            }
        }
        Ok(())
    }
}
