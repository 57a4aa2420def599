//! Formal-language tasks with exact ground truth, and their exact oracle denoisers.
//!
//! [`language`] holds the mathematics (generation from a seed, exact `log q(x)`, support,
//! entropy, conditional marginals by forward–backward); [`plugin`] exposes it to dlm-bench as
//! the tasks `ngram` and `hmm` and the model `oracle`.

pub mod language;
pub mod plugin;

dlm_sdk::export_plugin!(plugin::FormalPlugin);
