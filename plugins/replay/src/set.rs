//! The rows of one file, indexed by (steps, doc_id, sample).

use std::collections::{BTreeMap, HashMap, HashSet};
use std::path::{Path, PathBuf};

use crate::error::{Mismatch, ReplayError, FIRST_FEW};
use crate::{Format, ReplayRow};

/// The generations read from one file, indexed by (steps, doc_id, sample). Never empty.
#[derive(Clone, Debug)]
pub struct ReplaySet {
    path: PathBuf,
    format: Format,
    rows: Vec<ReplayRow>,
    /// steps → doc_id → sample → index into `rows`.
    index: BTreeMap<Option<u32>, HashMap<String, BTreeMap<u32, usize>>>,
}

impl ReplaySet {
    pub(crate) fn new(path: PathBuf, format: Format) -> Self {
        ReplaySet {
            path,
            format,
            rows: Vec::new(),
            index: BTreeMap::new(),
        }
    }

    /// Adds a row, refusing a second row with the same (steps, doc_id, sample).
    pub(crate) fn insert(&mut self, row: ReplayRow) -> Result<(), ReplayError> {
        let samples = self
            .index
            .entry(row.steps)
            .or_default()
            .entry(row.doc_id.clone())
            .or_default();
        if let Some(&first) = samples.get(&row.sample) {
            return Err(ReplayError::Duplicate {
                path: self.path.clone(),
                doc_id: row.doc_id,
                sample: row.sample,
                steps: row.steps,
                first_line: self.rows[first].line,
                second_line: row.line,
            });
        }
        samples.insert(row.sample, self.rows.len());
        self.rows.push(row);
        Ok(())
    }

    /// The file the rows came from.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// The file's format (never [`Format::Auto`]).
    pub fn format(&self) -> Format {
        self.format
    }

    /// All rows, in file order.
    pub fn rows(&self) -> &[ReplayRow] {
        &self.rows
    }

    /// The number of rows.
    pub fn len(&self) -> usize {
        self.rows.len()
    }

    /// Whether there is no row (never true for a set [`crate::read`] returned).
    pub fn is_empty(&self) -> bool {
        self.rows.is_empty()
    }

    /// The distinct step counts, ascending, `None` (rows without steps) first.
    pub fn step_counts(&self) -> Vec<Option<u32>> {
        self.index.keys().copied().collect()
    }

    /// The row for (steps, doc_id, sample), if the file has one.
    pub fn get(&self, steps: Option<u32>, doc_id: &str, sample: u32) -> Option<&ReplayRow> {
        let index = *self.index.get(&steps)?.get(doc_id)?.get(&sample)?;
        Some(&self.rows[index])
    }

    /// The rows at one step count, in file order.
    pub fn rows_at(&self, steps: Option<u32>) -> impl Iterator<Item = &ReplayRow> + '_ {
        self.rows.iter().filter(move |row| row.steps == steps)
    }

    /// Checks that the rows at `steps` are exactly samples `0..samples_per_doc` of each of
    /// `expected_doc_ids`: no document lacks a sample, no row names a doc_id the task does
    /// not have, and no row has a sample index `>= samples_per_doc`. Duplicates in
    /// `expected_doc_ids` are harmless.
    ///
    /// # Errors
    ///
    /// [`ReplayError::NoSuchSteps`] when the file has no row at `steps`;
    /// [`ReplayError::Mismatch`] listing the first few missing documents (with the samples
    /// they lack), unknown doc_ids and surplus samples (with their lines), and their counts.
    pub fn check_against(
        &self,
        expected_doc_ids: &[String],
        samples_per_doc: usize,
        steps: Option<u32>,
    ) -> Result<(), ReplayError> {
        let Some(group) = self.index.get(&steps) else {
            return Err(ReplayError::NoSuchSteps {
                path: self.path.clone(),
                steps,
                available: self.step_counts(),
            });
        };

        let mut expected: HashSet<&str> = HashSet::with_capacity(expected_doc_ids.len());
        let mut mismatch = Mismatch {
            path: self.path.clone(),
            steps,
            expected_docs: 0,
            samples_per_doc,
            missing_docs: 0,
            missing_rows: 0,
            missing_first: Vec::new(),
            unknown_docs: 0,
            unknown_rows: 0,
            unknown_first: Vec::new(),
            surplus_rows: 0,
            surplus_first: Vec::new(),
        };

        // Sample indices are u32; a count beyond that can never be met.
        let wanted = u32::try_from(samples_per_doc).unwrap_or(u32::MAX);
        for doc in expected_doc_ids {
            if !expected.insert(doc.as_str()) {
                continue;
            }
            let present = group.get(doc.as_str());
            let lacking = (0..wanted)
                .filter(|s| present.is_none_or(|samples| !samples.contains_key(s)))
                .count()
                + (samples_per_doc - wanted as usize);
            if lacking > 0 {
                mismatch.missing_docs += 1;
                mismatch.missing_rows += lacking;
                if mismatch.missing_first.len() < FIRST_FEW {
                    let list = (0..wanted)
                        .filter(|s| present.is_none_or(|samples| !samples.contains_key(s)))
                        .collect();
                    mismatch.missing_first.push((doc.clone(), list));
                }
            }
        }
        mismatch.expected_docs = expected.len();

        let mut unknown_seen: HashSet<&str> = HashSet::new();
        for row in self.rows_at(steps) {
            if !expected.contains(row.doc_id.as_str()) {
                mismatch.unknown_rows += 1;
                if unknown_seen.insert(row.doc_id.as_str()) {
                    mismatch.unknown_docs += 1;
                    if mismatch.unknown_first.len() < FIRST_FEW {
                        mismatch.unknown_first.push((row.doc_id.clone(), row.line));
                    }
                }
            } else if row.sample >= wanted {
                mismatch.surplus_rows += 1;
                if mismatch.surplus_first.len() < FIRST_FEW {
                    mismatch
                        .surplus_first
                        .push((row.doc_id.clone(), row.sample, row.line));
                }
            }
        }

        if mismatch.missing_rows + mismatch.unknown_rows + mismatch.surplus_rows == 0 {
            Ok(())
        } else {
            Err(ReplayError::Mismatch(Box::new(mismatch)))
        }
    }
}
