//! The LibTorch backend through the real harness: a tiny MDM and AR model trained and sampled
//! with `device: tch` (LibTorch's CPU kernels; `tch:cuda` on a GPU machine) through a
//! `dlm-neural` library built with `--features tch`, and the same suite on `flex` gives the same
//! training curve and samples up to `f32` rounding.
//!
//! Not in `.ci/run` (LibTorch is a 7 GB download): tools/tch/test.sh installs LibTorch, builds
//! that library, copies it out of cargo's way and names it in `DLM_BENCH_TCH_PLUGIN`, with
//! `DLM_BENCH_REQUIRE_TCH=1` so that a missing library fails the test instead of skipping it.
//! `DLM_BENCH_TCH_DEVICE` picks the LibTorch device (default `tch`).

mod common;
use common::*;

#[test]
fn a_tiny_suite_trains_and_samples_on_tch_as_on_flex() {
    let device = std::env::var("DLM_BENCH_TCH_DEVICE").unwrap_or_else(|_| "tch".into());
    backend::tiny_suite_matches_flex(
        &device,
        "tch",
        "DLM_BENCH_TCH_PLUGIN",
        "DLM_BENCH_REQUIRE_TCH",
    );
}
