//! Reads generations made elsewhere so that dlm-bench can score them.
//!
//! [`read`] turns one JSONL file into a [`ReplaySet`]: rows of (doc_id, sample, generation) with
//! the optional cost fields, indexed by (steps, doc_id, sample). [`ReplaySet::check_against`]
//! then compares one step group with the documents and sample count a task expects.
//!
//! ```
//! use std::path::Path;
//! use dlm_replay::{read_from, Format};
//!
//! let lines = r#"{"task_id": "HumanEval/0", "completion": "    return True\n"}
//! {"task_id": "HumanEval/0", "completion": "    return False\n"}
//! "#;
//! let set = read_from(lines.as_bytes(), Path::new("samples.jsonl"), Format::Auto)?;
//! assert_eq!(set.format(), Format::HumanEval);
//! assert_eq!(set.get(None, "HumanEval/0", 1).unwrap().line, 2);
//! set.check_against(&["HumanEval/0".to_owned()], 2, None)?;
//! # Ok::<(), dlm_replay::ReplayError>(())
//! ```
//!
//! # Formats
//!
//! A file is JSON Lines: one JSON object per line. Lines that hold only whitespace are skipped
//! (as `stream_jsonl` in human-eval and evalplus does); a `\r` before the `\n` and a UTF-8 byte
//! order mark at the start of the file are ignored. Line numbers in errors count every physical
//! line from 1, blank ones included. One file holds one format.
//!
//! ## Native ([`Format::Native`])
//!
//! `{"doc_id": "7" | 7, "generation": "...", "sample": 0, "steps": 16, "nfe": 16,
//! "seconds": 0.42, "sampler": "low_confidence"}`
//!
//! * `doc_id` (required): a string, or an integer stored as its decimal text — so `7` and `"7"`
//!   are the same document.
//! * `generation` (required): a string, the text generated after the prompt.
//! * `sample`: a non-negative integer below 2³². Rows without it are numbered 0, 1, 2, … per
//!   (steps, doc_id) in file order; a numbered row that takes an index already taken is a
//!   duplicate.
//! * `steps`: a non-negative integer below 2³²; absent means the row has no step count.
//! * `nfe`: a non-negative integer (function evaluations spent on this sample).
//! * `seconds`: a finite, non-negative number (wall time spent on this sample).
//! * `sampler`: a string.
//!
//! An optional field that is `null` counts as absent. Any other key is an error (a misspelt
//! `step` must not be dropped silently).
//!
//! ## lm-evaluation-harness `--log_samples` ([`Format::LmEval`])
//!
//! The `samples_<task>_<date>.jsonl` files. Checked against EleutherAI/lm-evaluation-harness:
//! `lm_eval/evaluator.py` (`evaluate`) builds one record per document **and per filter key**
//! with `doc_id`, `doc`, `target`, `arguments`, `resps = [req.resps for req in requests]`,
//! `filtered_resps`, and since v0.4.3 or so `filter`, `metrics`, `doc_hash`, `prompt_hash`,
//! `target_hash` and the metric values; each request's `resps` gets one entry per repeat
//! (`for x, req in zip(resps, cloned_reqs): req.resps.append(x)`).
//! `lm_eval/loggers/evaluation_tracker.py` (`save_results_samples`) passes `resps` through
//! `sanitize_list` (leaves become strings) and appends `json.dumps(sample,
//! ensure_ascii=False)` lines to `samples_{task_name}_{date_id}.jsonl`.
//!
//! The fields this reader relies on, and nothing else:
//!
//! * `doc_id`: a non-negative integer (the document's index in the task's split).
//! * `resps`: a list holding exactly one list of strings — a `generate_until` task sends one
//!   request per document, and its list holds the `repeats` raw generations. Each string is one
//!   row; `sample` is its position in that list. Several requests per document (a
//!   `loglikelihood` or multiple-choice task) are an error: there is nothing to generate.
//! * `filter` (optional, a string): a task with several filters (GSM8K's `strict-match` and
//!   `flexible-extract`) logs every document once per filter with the same raw `resps`. A
//!   later record for a doc_id already read is accepted as such a copy, and adds no row, when
//!   its `resps` are identical and its `filter` differs from every earlier copy's (records
//!   without `filter` never count as copies); anything else is a [`ReplayError::Duplicate`].
//!
//! `filtered_resps`, `doc`, `target` and the rest are ignored: dlm-bench extracts and scores
//! the raw generations itself. Rows carry no steps, nfe, seconds or sampler.
//!
//! ## human-eval ([`Format::HumanEval`]) and evalplus ([`Format::EvalPlus`])
//!
//! `{"task_id": "HumanEval/0", "completion": "..."}` (openai/human-eval,
//! `human_eval/evaluation.py`) and `{"task_id": "HumanEval/0", "solution": "..."}`
//! (evalplus/evalplus, `evalplus/evaluate.py`, which prefers `solution` when a line has both).
//! `task_id` (a string, or an integer as MBPP files written by other tools give it, stored as
//! its decimal text) becomes the doc_id. Several lines with one task_id are several samples,
//! numbered 0, 1, 2, … per task_id in file order — the `completion_id` counter both tools keep.
//! Other keys (`result` and `passed` in human-eval's `_results.jsonl`) are ignored. Note the
//! difference for scoring: a human-eval `completion` continues the prompt, an evalplus
//! `solution` is the whole program (evalplus/evalplus `evaluate.py`, commit 26d6d00, runs
//! `solution` as it is and `prompt + completion` only for lines without one);
//! [`ReplaySet::format`] says which the file holds, and the `replay` model answers an evalplus
//! file's rows as whole programs. A line with both `completion` and `solution` is refused under
//! [`Format::Auto`] (the two tools would run different programs); with an explicit format, each
//! takes its own tool's field.
//!
//! ## Detection ([`Format::Auto`])
//!
//! Each line's format is told by its keys, in this order:
//!
//! 1. any of `resps`, `filtered_resps`, `doc` → lm-eval;
//! 2. otherwise `task_id` with `solution` → evalplus (with `completion` too: an error);
//!    `task_id` without `solution` → human-eval;
//! 3. otherwise `doc_id` or `generation` → native;
//! 4. otherwise the line is an error.
//!
//! The first line fixes the file's format; a later line detected as another format is a
//! [`ReplayError::MixedFormats`]. With an explicit format every line is read as that format.
//!
//! # Errors
//!
//! Nothing is dropped silently: an unreadable file, a line that is not UTF-8, not JSON, not an
//! object, or lacks a field or has one of the wrong type, a duplicate (doc_id, sample, steps),
//! mixed formats and an empty file are all errors, each naming the file and line(s).
//! gzip-compressed files are not read (the error says to decompress them).

// The public API its readers use: every item documented. A crate-root attribute rather than the
// workspace's `[lints]`, which apply to every target of a package (criterion's generated bench
// functions have no docs) while this applies to the library alone.
#![warn(missing_docs)]

mod error;
mod parse;
pub mod plugin;
mod set;

use std::fmt;
use std::fs::File;
use std::io::{BufRead, BufReader};
use std::path::Path;
use std::str::FromStr;

pub use error::{Mismatch, ReplayError, FIRST_FEW};
pub use set::ReplaySet;

/// Which format a file is in; see the crate documentation for each.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Format {
    /// Tell the format from the first line's keys (see "Detection" in the crate docs).
    Auto,
    /// dlm-bench's own JSONL: `doc_id`, `generation` and the optional cost fields.
    Native,
    /// lm-evaluation-harness `--log_samples` output (`samples_<task>_<date>.jsonl`).
    LmEval,
    /// human-eval sample files: `task_id` and `completion` (continues the prompt).
    HumanEval,
    /// evalplus sample files: `task_id` and `solution` (the whole program).
    EvalPlus,
}

impl Format {
    /// The name [`FromStr`] reads and [`fmt::Display`] writes.
    pub fn name(self) -> &'static str {
        match self {
            Format::Auto => "auto",
            Format::Native => "native",
            Format::LmEval => "lm-eval",
            Format::HumanEval => "human-eval",
            Format::EvalPlus => "evalplus",
        }
    }
}

impl fmt::Display for Format {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

impl FromStr for Format {
    type Err = ReplayError;

    /// Reads `auto`, `native`, `lm-eval` (also `lm_eval`, `lm-evaluation-harness`),
    /// `human-eval` (also `humaneval`, `human_eval`) and `evalplus`, ignoring ASCII case.
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s.to_ascii_lowercase().as_str() {
            "auto" => Ok(Format::Auto),
            "native" => Ok(Format::Native),
            "lm-eval" | "lm_eval" | "lm-evaluation-harness" => Ok(Format::LmEval),
            "human-eval" | "humaneval" | "human_eval" => Ok(Format::HumanEval),
            "evalplus" => Ok(Format::EvalPlus),
            _ => Err(ReplayError::UnknownFormatName(s.to_owned())),
        }
    }
}

/// One replayed generation.
#[derive(Clone, Debug, PartialEq)]
pub struct ReplayRow {
    /// The document: native `doc_id` (integers as decimal text), lm-eval `doc_id`, or the
    /// human-eval / evalplus `task_id`.
    pub doc_id: String,
    /// The sample index within the document (see the crate docs for each format's rule).
    pub sample: u32,
    /// The generated text.
    pub generation: String,
    /// The number of denoising steps, if the file says (native only).
    pub steps: Option<u32>,
    /// The number of function evaluations spent, if the file says (native only).
    pub nfe: Option<u64>,
    /// The wall time spent in seconds, if the file says (native only).
    pub seconds: Option<f64>,
    /// The sampler's name, if the file says (native only).
    pub sampler: Option<String>,
    /// The line (1-based) the row was read from.
    pub line: usize,
}

/// Reads the replay file at `path` in `format` ([`Format::Auto`] detects it).
pub fn read(path: &Path, format: Format) -> Result<ReplaySet, ReplayError> {
    let file = File::open(path).map_err(|source| ReplayError::Io {
        path: path.to_owned(),
        source,
    })?;
    read_from(BufReader::new(file), path, format)
}

/// Reads replay lines from `reader`; `origin` names the source in errors and in
/// [`ReplaySet::path`].
pub fn read_from<R: BufRead>(
    reader: R,
    origin: &Path,
    format: Format,
) -> Result<ReplaySet, ReplayError> {
    parse::parse(reader, origin, format)
}
