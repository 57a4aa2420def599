//! dlm-bench: the harness library behind the `dlm-bench` binary.
//!
//! See `ARCHITECTURE.md` at the repository root for the map. In one line: a [`suite`] expands into
//! cells; [`run`] resolves and builds the [`plugins`], runs each cell in a [`worker`] process,
//! appends per-sample rows to the run's [`results`], and computes [`metrics`] and the [`report`];
//! [`compare`] sets two runs side by side and [`history`] follows many over time.

pub mod compare;
pub mod export;
pub mod filter;
pub mod history;
pub mod likelihood;
pub mod metrics;
pub mod nightly;
pub mod plugins;
pub mod progress;
pub mod registry;
pub mod report;
pub mod results;
pub mod run;
pub mod shard;
pub mod slurm;
pub mod stats;
pub mod suite;
pub mod summary;
pub mod terminal_table;
pub mod theory;
pub mod trace;
pub mod training;
pub mod worker;
