//! The one error type of the crate. Every variant that concerns a row names the file and the
//! line (1-based, counting every physical line, blank ones included).

use std::fmt;
use std::path::PathBuf;

use crate::Format;

/// How many doc_ids (or rows) a [`Mismatch`] lists before it only counts.
pub const FIRST_FEW: usize = 5;

/// Why a replay file could not be read, or does not fit the task it is replayed against.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ReplayError {
    /// The file could not be opened or read.
    #[error("cannot read {}: {source}", .path.display())]
    Io {
        /// The file.
        path: PathBuf,
        /// What the operating system said.
        #[source]
        source: std::io::Error,
    },

    /// A line holds bytes that are not UTF-8.
    #[error(
        "{}:{line}: not UTF-8 text (invalid byte at column {column}){}",
        .path.display(),
        if *.gzip { "; the file looks gzip-compressed: decompress it first (gunzip)" } else { "" }
    )]
    NotUtf8 {
        /// The file.
        path: PathBuf,
        /// The line (1-based).
        line: usize,
        /// The byte column (1-based) of the first invalid byte.
        column: usize,
        /// The file starts with the gzip magic bytes.
        gzip: bool,
    },

    /// A line is not JSON, not an object, lacks a field, or holds a field of the wrong type.
    #[error("{}:{line}: {}{message}", .path.display(), field_prefix(.field))]
    Malformed {
        /// The file.
        path: PathBuf,
        /// The line (1-based).
        line: usize,
        /// The field at fault (a JSON path such as `resps[0][2]`), if one is.
        field: Option<String>,
        /// What is wrong and what was expected.
        message: String,
    },

    /// Two rows share (doc_id, sample, steps).
    #[error(
        "{}: doc_id {doc_id:?} sample {sample} ({}) appears twice, on line {first_line} and on line {second_line}",
        .path.display(),
        steps_text(*.steps)
    )]
    Duplicate {
        /// The file.
        path: PathBuf,
        /// The doc_id both rows name.
        doc_id: String,
        /// The sample index both rows name.
        sample: u32,
        /// The step count both rows name.
        steps: Option<u32>,
        /// The line of the first row.
        first_line: usize,
        /// The line of the second row.
        second_line: usize,
    },

    /// The file mixes formats: one file holds one format.
    #[error(
        "{}:{line}: this line is in the {found} format but line {first_line} is in the {first} format; one file must hold one format",
        .path.display()
    )]
    MixedFormats {
        /// The file.
        path: PathBuf,
        /// The format of the first row.
        first: Format,
        /// The line of the first row.
        first_line: usize,
        /// The format of the offending line.
        found: Format,
        /// The offending line.
        line: usize,
    },

    /// The file holds no row (it is empty or holds only blank lines).
    #[error("{}: no generations: the file is empty or holds only blank lines", .path.display())]
    Empty {
        /// The file.
        path: PathBuf,
    },

    /// [`crate::ReplaySet::check_against`] asked for a step count the file has no row at.
    #[error(
        "{}: no generations {}; the file's rows have: {}",
        .path.display(),
        at_steps(*.steps),
        .available.iter().map(|s| steps_text(*s)).collect::<Vec<_>>().join(", ")
    )]
    NoSuchSteps {
        /// The file.
        path: PathBuf,
        /// The step count asked for.
        steps: Option<u32>,
        /// The step counts the file has rows at.
        available: Vec<Option<u32>>,
    },

    /// The rows at one step count do not match the task's documents and sample count.
    #[error("{0}")]
    Mismatch(Box<Mismatch>),

    /// A format name that is none of `auto`, `native`, `lm-eval`, `human-eval`, `evalplus`.
    #[error(
        "unknown replay format {0:?}: expected one of auto, native, lm-eval, human-eval, evalplus"
    )]
    UnknownFormatName(String),
}

fn field_prefix(field: &Option<String>) -> String {
    match field {
        Some(f) => format!("field `{f}`: "),
        None => String::new(),
    }
}

/// `steps=16`, or `no step count` for rows that carry none.
fn steps_text(steps: Option<u32>) -> String {
    match steps {
        Some(s) => format!("steps={s}"),
        None => "no step count".to_owned(),
    }
}

/// `at steps=16`, or `without a step count`.
fn at_steps(steps: Option<u32>) -> String {
    match steps {
        Some(s) => format!("at steps={s}"),
        None => "without a step count".to_owned(),
    }
}

/// What [`crate::ReplaySet::check_against`] found wrong: the documents that lack samples, the
/// rows whose doc_id the task does not know, and the rows whose sample index is past the number
/// of samples per document. Each list holds at most [`FIRST_FEW`] entries; the counts are exact.
#[derive(Clone, Debug, PartialEq)]
#[non_exhaustive]
pub struct Mismatch {
    /// The file.
    pub path: PathBuf,
    /// The step count checked.
    pub steps: Option<u32>,
    /// How many documents the task expects.
    pub expected_docs: usize,
    /// How many samples per document the task expects (indices `0..samples_per_doc`).
    pub samples_per_doc: usize,
    /// How many expected documents lack at least one sample.
    pub missing_docs: usize,
    /// How many (doc_id, sample) pairs are missing in all.
    pub missing_rows: usize,
    /// The first few documents (in the task's order) that lack samples, with the sample
    /// indices they lack.
    pub missing_first: Vec<(String, Vec<u32>)>,
    /// How many distinct doc_ids the file has that the task does not.
    pub unknown_docs: usize,
    /// How many rows carry such a doc_id.
    pub unknown_rows: usize,
    /// The first few unknown doc_ids (in file order) with the line of their first row.
    pub unknown_first: Vec<(String, usize)>,
    /// How many rows of known documents have a sample index `>= samples_per_doc`.
    pub surplus_rows: usize,
    /// The first few such rows (in file order): doc_id, sample index, line.
    pub surplus_first: Vec<(String, u32, usize)>,
}

impl fmt::Display for Mismatch {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{}: the generations {} do not match the task ({} documents x {} samples)",
            self.path.display(),
            at_steps(self.steps),
            self.expected_docs,
            self.samples_per_doc
        )?;
        if self.missing_rows > 0 {
            let listed: Vec<String> = self
                .missing_first
                .iter()
                .map(|(doc, samples)| format!("{doc:?} (samples {})", index_list(samples)))
                .collect();
            write!(
                f,
                "; missing: {} documents lack {} samples in all, first {}",
                self.missing_docs,
                self.missing_rows,
                listed.join(", ")
            )?;
        }
        if self.unknown_rows > 0 {
            let listed: Vec<String> = self
                .unknown_first
                .iter()
                .map(|(doc, line)| format!("{doc:?} (line {line})"))
                .collect();
            write!(
                f,
                "; unknown doc_id: {} doc_ids ({} rows) the task does not have, first {}",
                self.unknown_docs,
                self.unknown_rows,
                listed.join(", ")
            )?;
        }
        if self.surplus_rows > 0 {
            let listed: Vec<String> = self
                .surplus_first
                .iter()
                .map(|(doc, sample, line)| format!("{doc:?} sample {sample} (line {line})"))
                .collect();
            write!(
                f,
                "; surplus: {} rows have a sample index >= {}, first {}",
                self.surplus_rows,
                self.samples_per_doc,
                listed.join(", ")
            )?;
        }
        Ok(())
    }
}

/// `0, 1, 2` — at most eight indices, then an ellipsis and the count.
fn index_list(indices: &[u32]) -> String {
    const SHOWN: usize = 8;
    let mut text: Vec<String> = indices.iter().take(SHOWN).map(u32::to_string).collect();
    if indices.len() > SHOWN {
        text.push(format!("... ({} in all)", indices.len()));
    }
    text.join(", ")
}
