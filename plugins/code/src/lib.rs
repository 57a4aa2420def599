//! Code-execution tasks for dlm-bench: MBPP, sanitized MBPP and HumanEval.
//!
//! * [`data`] reads the benchmark files (checked against their sha256) from a data directory
//!   (`DLM_BENCH_DATA`, default the repository's `data/`) and builds prompts.
//! * [`extract`] turns a model completion into the code to run, as the benchmarks' own
//!   harnesses do (stop sequences, fenced blocks).
//! * [`program`] builds the test program for one sample: a small Python driver that runs the
//!   sample, then every test, and prints a per-run random pass token only after all of them
//!   passed. The harness decides "passed" from that token alone, never from the exit status.
//! * [`sandbox`] runs each program in a fresh bubblewrap sandbox (new user, PID, network, IPC,
//!   UTS and mount namespaces, an unprivileged uid, read-only `/usr`, an empty tmpfs as the
//!   working directory, rlimits, a memory cap for the whole sandbox, a wall-clock timeout,
//!   capped output; see `docs/sandbox.md`). Execution is opt-in:
//!   [`Sandbox::new`] refuses unless `allow_code_execution` is `true`, and refuses (never falls
//!   back to unsandboxed execution) when bubblewrap cannot create its namespaces here.
//! * [`passk`] is the unbiased pass@k estimator of Chen et al. 2021.
//! * [`plugin`] is the dlm-bench plugin `dlm-code`: text tasks `mbpp`, `mbpp-sanitized` and
//!   `humaneval`, opened only with `allow_code_execution: true`.
//!
//! ```no_run
//! use dlm_code::{data::DataDir, program::TestProgram, Sandbox, SandboxConfig};
//! let data = DataDir::from_env();
//! let tasks = data.load_mbpp().unwrap();
//! let sandbox = Sandbox::new(true, SandboxConfig::default()).unwrap();
//! let programs: Vec<_> = tasks.iter().map(|t| TestProgram::mbpp(t, &t.code, false)).collect();
//! let results = sandbox.run_many(&programs);
//! let passed = results.iter().filter(|r| r.outcome.passed()).count();
//! println!("{passed}/{}", tasks.len());
//! ```

// The public API its readers use: every item documented. A crate-root attribute rather than the
// workspace's `[lints]`, which apply to every target of a package (criterion's generated bench
// functions have no docs) while this applies to the library alone.
#![warn(missing_docs)]

pub mod data;
pub mod extract;
pub mod passk;
pub mod plugin;
pub mod program;
pub mod sandbox;

pub use program::{Cause, Outcome, Stage, TestProgram};
pub use sandbox::{ExecResult, Sandbox, SandboxConfig, SandboxError};
