//! Formal-language tasks with exact ground truth, and their exact oracle denoisers.
//!
//! [`language`] holds the mathematics (generation from a seed or from explicit tables, the
//! interval language of Theorem 4.4, exact `log q(x)`, support, entropy, conditional marginals
//! by forward–backward); [`file`](mod@file) reads user-supplied n-gram and HMM tables from YAML or JSON;
//! [`plugin`] exposes it all to dlm-bench as the tasks `ngram`, `hmm`, `file` and `interval`
//! and the model `oracle`.

pub mod file;
pub mod language;
pub mod plugin;

dlm_sdk::export_plugin!(plugin::FormalPlugin);
