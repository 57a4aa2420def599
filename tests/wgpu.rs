//! The GPU path executed without a GPU: the real harness trains and samples a tiny MDM and AR
//! model with `device: wgpu` — on Mesa's software Vulkan (lavapipe) in CI — through a
//! `dlm-neural` library built with the `wgpu` feature, and the same suite on `flex` gives the
//! same training curve and samples up to `f32` rounding.
//!
//! `.ci/run` builds that library (`cargo test -p dlm-neural --features wgpu`, which also runs the
//! plugin's own tests on wgpu), copies it out of cargo's way and names it in
//! `DLM_BENCH_WGPU_PLUGIN`; with `DLM_BENCH_REQUIRE_WGPU=1` a missing library fails the test
//! instead of skipping it.

mod common;
use common::*;

#[test]
fn a_tiny_suite_trains_and_samples_on_wgpu_as_on_flex() {
    backend::tiny_suite_matches_flex(
        "wgpu",
        "wgpu",
        "DLM_BENCH_WGPU_PLUGIN",
        "DLM_BENCH_REQUIRE_WGPU",
    );
}
