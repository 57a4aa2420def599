//! GSM8K step verification with exact rational arithmetic.
//!
//! * [`arith`] — a small expression language (`+ - * / x × ÷ ** ^ % $ ( )`, decimals,
//!   thousands commas) evaluated to exact [`num_rational::BigRational`]s under size
//!   [`Limits`](arith::Limits), so any input is refused or answered in bounded work.
//! * [`answer`] — final-answer extraction exactly as lm-evaluation-harness's `gsm8k` and
//!   `gsm8k-cot` tasks (strict `#### n` or `The answer is n.`, flexible last number), compared
//!   with the gold answer as lm-eval's `exact_match` does or as exact numbers ([`answer::Scoring`]).
//! * [`verify`](mod@verify) — the step verifier: every `<<expr=value>>` annotation
//!   (annotation mode) and every `a = b = … = c` chain in the free text (free-text mode),
//!   checked link by link and reported separately ([`Verification`]).
//! * [`summary`] — counts over many completions: accuracy, step error, sequence error, trace
//!   error (Uesato et al. 2022), coverage.
//! * [`plugin`] — the tasks `gsm8k` and `arith` for dlm-bench (text tasks: prompts in,
//!   completions verified); `gsm8k` takes `format: gsm8k | gsm8k-cot`.
//! * [`prompt`] — lm-eval's two GSM8K prompt formats: `gsm8k` (`Question: …\nAnswer:`) and
//!   `gsm8k-cot` (`Q: …\nA:` after the 8 chain-of-thought exemplars of Wei et al. 2022).
//! * [`data`] — the pinned GSM8K `test.jsonl` / `train.jsonl`, sha256-checked.
//! * [`synthetic`] — procedurally generated arithmetic chains in GSM8K's format, with a fixed
//!   character vocabulary, for training small models.
//! * [`scoring`] — the metrics both tasks declare and a completion's score under them.
//! * [`template`] — prompt templates: `gsm8k` and `arith` can write every problem in several
//!   (`templates`), each sample naming its own, so the report compares samplers per template.
//! * [`arith_task`] — the task `arith` itself (its config and built-in templates).
//! * [`user_prompts`] — the task `prompts`: a user's own prompts from a JSONL file, scored by
//!   completion length and, where a row gives a reference, exact match.
//!
//! ```
//! let v = dlm_reasoning::verify("1+2+3 = 3+3 = 7\n#### 7", Some("6"));
//! assert_eq!(v.free_text.wrong, 1);
//! assert_eq!(v.free_text.first_wrong, Some(1));
//! assert_eq!(v.strict_correct, Some(false));
//! ```

// The public API its readers use: every item documented. A crate-root attribute rather than the
// workspace's `[lints]`, which apply to every target of a package (criterion's generated bench
// functions have no docs) while this applies to the library alone.
#![warn(missing_docs)]

pub mod answer;
pub mod arith;
pub mod arith_task;
pub mod data;
pub mod plugin;
pub mod prompt;
pub mod scoring;
pub mod summary;
pub mod synthetic;
pub mod template;
pub mod user_prompts;
pub mod verify;

pub use summary::Summary;
pub use verify::{verify, ModeReport, Outcome, Step, Verification, Verifier};
