//! Shared by the integration tests: get a real sandbox, or skip (fail under `CI=true`).
#![allow(dead_code)]
use dlm_code::{Sandbox, SandboxConfig};

#[path = "../../../../tests/common/skip.rs"]
pub mod skip;

/// The real sandbox, or `None` (after a visible skip line) when bubblewrap cannot run here.
/// Under `CI=true` or `DLM_BENCH_REQUIRE_SANDBOX=1` an unavailable sandbox fails the test
/// instead: CI installs it (tools/install-sandbox.sh, .ci/run), so the hostile-program tests
/// must run there.
pub fn sandbox(config: SandboxConfig) -> Option<Sandbox> {
    match Sandbox::new(true, config) {
        Ok(s) => Some(s),
        Err(e) => {
            skip::absent(&skip::SANDBOX, e);
            None
        }
    }
}
