//! Shared by the integration tests: get a real sandbox, or skip (fail under `CI=true`).
#![allow(dead_code)]
use dlm_code::{Sandbox, SandboxConfig};

/// The real sandbox, or `None` (with a message) when bubblewrap cannot run here. Under
/// `CI=true` or `DLM_BENCH_REQUIRE_SANDBOX=1` an unavailable sandbox fails the test instead:
/// CI installs it (tools/install-sandbox.sh, .ci/run), so the hostile-program tests must run
/// there.
pub fn sandbox(config: SandboxConfig) -> Option<Sandbox> {
    match Sandbox::new(true, config) {
        Ok(s) => Some(s),
        Err(e) => {
            let ci = std::env::var("CI").is_ok_and(|v| v == "true");
            let required = std::env::var("DLM_BENCH_REQUIRE_SANDBOX").is_ok_and(|v| v == "1");
            if ci || required {
                panic!("the code sandbox is required here (CI=true or DLM_BENCH_REQUIRE_SANDBOX=1) but unavailable: {e}");
            }
            eprintln!("SKIPPED (sandbox unavailable, not in CI): {e}");
            None
        }
    }
}
