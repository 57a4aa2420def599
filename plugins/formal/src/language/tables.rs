//! Validation of explicit parameter tables ([`super::Language::from_ngram_tables`],
//! [`super::Language::from_hmm_tables`]).
//!
//! Rules (each broken rule is a [`LanguageError::InvalidTable`] naming the table and the row):
//!
//! * every table has the documented shape (row count and row length);
//! * every entry is finite and `>= 0`;
//! * the initial distribution sums to 1 within [`ROW_SUM_TOLERANCE`];
//! * every other row sums to 1 within the tolerance, **or** is all zero — allowed only for a
//!   context (n-gram) or hidden state (HMM) that can never occur, i.e. that is unreachable from
//!   the support of the initial distribution through positive-probability transitions;
//! * accepted rows are divided by their sum, so they sum to 1 up to rounding.
//!
//! Together these make the support non-empty for every length `L >= min_length`: every
//! reachable context or state has a positive-probability continuation (and an HMM state a
//! positive-probability emission), so some sequence of every length has positive probability,
//! and the probabilities of all sequences of each length sum to one.

use super::{LanguageError, MAX_TABLE_ENTRIES};

/// How far a row's sum may be from 1.
pub const ROW_SUM_TOLERANCE: f64 = 1e-9;

pub(crate) const INITIAL: &str = "initial distribution";
pub(crate) const TRANSITIONS: &str = "transition table";
pub(crate) const EMISSIONS: &str = "emission table";

fn invalid(table: &'static str, row: Option<usize>, problem: String) -> LanguageError {
    LanguageError::InvalidTable {
        table,
        row,
        problem,
    }
}

/// `x` with 12 decimals, trailing zeros removed (`0.8999999999999999` → `0.9`).
fn short(x: f64) -> String {
    let s = format!("{x:.12}");
    let s = s.trim_end_matches('0').trim_end_matches('.');
    s.to_string()
}

#[derive(PartialEq)]
enum RowKind {
    Stochastic,
    Zero,
}

/// Checks one row (length, entries, sum) and normalises it in place. `context` (the n-gram
/// context of the row) prefixes every problem.
fn check_row(
    table: &'static str,
    row: Option<usize>,
    values: &mut [f64],
    expected_len: usize,
    len_meaning: &str,
    zero_allowed: bool,
    context: &str,
) -> Result<RowKind, LanguageError> {
    let invalid = |table, row, problem: String| invalid(table, row, format!("{context}{problem}"));
    if values.len() != expected_len {
        return Err(invalid(
            table,
            row,
            format!(
                "has {} entries but {expected_len} were expected ({len_meaning})",
                values.len()
            ),
        ));
    }
    for (j, p) in values.iter_mut().enumerate() {
        if !(p.is_finite() && *p >= 0.0) {
            return Err(invalid(
                table,
                row,
                format!("entry {j} is {p}: probabilities must be finite and non-negative"),
            ));
        }
        if *p == 0.0 {
            *p = 0.0; // -0.0 becomes +0.0
        }
    }
    let sum: f64 = values.iter().sum();
    if sum == 0.0 && zero_allowed {
        return Ok(RowKind::Zero);
    }
    if (sum - 1.0).abs() > ROW_SUM_TOLERANCE {
        let hint = if zero_allowed {
            " (or be all zero for a context or state that can never occur)"
        } else {
            ""
        };
        return Err(invalid(
            table,
            row,
            format!(
                "sums to {} but must sum to 1 within {ROW_SUM_TOLERANCE:e}{hint}; \
                 write exact values (fractions such as 1/3 are accepted in files)",
                short(sum)
            ),
        ));
    }
    values.iter_mut().for_each(|p| *p /= sum);
    Ok(RowKind::Stochastic)
}

fn check_row_count(
    table: &'static str,
    rows: usize,
    expected: usize,
    meaning: &str,
) -> Result<(), LanguageError> {
    if rows != expected {
        return Err(invalid(
            table,
            None,
            format!("has {rows} rows but {expected} were expected ({meaning})"),
        ));
    }
    Ok(())
}

pub(crate) fn check_vocab(vocab: usize) -> Result<(), LanguageError> {
    let max = u32::MAX as usize;
    if !(2..=max).contains(&vocab) {
        return Err(LanguageError::InvalidVocab { vocab, max });
    }
    Ok(())
}

fn too_large(entries: String) -> LanguageError {
    LanguageError::TooLarge {
        entries,
        limit: MAX_TABLE_ENTRIES,
    }
}

/// Number of windows `V^(n-1)` of an n-gram, checked against [`MAX_TABLE_ENTRIES`].
pub(crate) fn ngram_windows(order: usize, vocab: usize) -> Result<usize, LanguageError> {
    if order < 2 {
        return Err(LanguageError::InvalidOrder { order });
    }
    check_vocab(vocab)?;
    let described = || format!("{vocab}^{order} + {vocab}^{}", order - 1);
    let exp = u32::try_from(order - 1).map_err(|_| too_large(described()))?;
    let nstates = vocab
        .checked_pow(exp)
        .ok_or_else(|| too_large(described()))?;
    let entries = nstates
        .checked_mul(vocab)
        .and_then(|e| e.checked_add(nstates))
        .ok_or_else(|| too_large(described()))?;
    if entries > MAX_TABLE_ENTRIES {
        return Err(too_large(entries.to_string()));
    }
    Ok(nstates)
}

/// Checks the HMM table sizes against [`MAX_TABLE_ENTRIES`].
pub(crate) fn hmm_size(states: usize, vocab: usize) -> Result<(), LanguageError> {
    if states == 0 {
        return Err(LanguageError::InvalidStates { states });
    }
    check_vocab(vocab)?;
    let entries = states
        .checked_mul(states)
        .and_then(|e| e.checked_add(states.checked_mul(vocab)?))
        .and_then(|e| e.checked_add(states))
        .ok_or_else(|| too_large(format!("{states}^2 + {states}·{vocab} + {states}")))?;
    if entries > MAX_TABLE_ENTRIES {
        return Err(too_large(entries.to_string()));
    }
    Ok(())
}

/// The tokens of window `w` of an n-gram, oldest first.
pub(crate) fn window_tokens(w: usize, vocab: usize, order: usize) -> Vec<usize> {
    let mut out = vec![0; order - 1];
    let mut rest = w;
    for slot in out.iter_mut().rev() {
        *slot = rest % vocab;
        rest /= vocab;
    }
    out
}

/// Validated, normalised n-gram tables: `(init, cond)` with `cond` row-major `V^(n-1) × V`.
pub(crate) fn ngram(
    order: usize,
    vocab: usize,
    initial: &[f64],
    transitions: &[Vec<f64>],
) -> Result<(usize, Vec<f64>, Vec<f64>), LanguageError> {
    let nstates = ngram_windows(order, vocab)?;
    let mut init = initial.to_vec();
    check_row(
        INITIAL,
        None,
        &mut init,
        nstates,
        &format!(
            "one per window of the first {} token(s): vocab^(order-1) = {nstates}",
            order - 1
        ),
        false,
        "",
    )?;
    check_row_count(
        TRANSITIONS,
        transitions.len(),
        nstates,
        &format!("one per context window: vocab^(order-1) = {nstates}"),
    )?;
    let mut cond = Vec::with_capacity(nstates * vocab);
    let mut zero_rows = vec![false; nstates];
    for (w, row) in transitions.iter().enumerate() {
        let mut row = row.clone();
        let kind = check_row(
            TRANSITIONS,
            Some(w),
            &mut row,
            vocab,
            "one per token",
            true,
            &format!("context {:?}: ", window_tokens(w, vocab, order)),
        )?;
        zero_rows[w] = kind == RowKind::Zero;
        cond.extend_from_slice(&row);
    }
    // Reachable windows: from the initial support through positive transitions.
    let r = nstates / vocab;
    let mut seen = vec![false; nstates];
    let mut stack: Vec<usize> = (0..nstates).filter(|&w| init[w] > 0.0).collect();
    stack.iter().for_each(|&w| seen[w] = true);
    while let Some(w) = stack.pop() {
        if zero_rows[w] {
            return Err(invalid(
                TRANSITIONS,
                Some(w),
                format!(
                    "context {:?}: is all zero, but this context can occur (it is reachable \
                     from the initial distribution), so sequences reaching it could not \
                     continue; give it a distribution over the next token",
                    window_tokens(w, vocab, order)
                ),
            ));
        }
        for t in 0..vocab {
            if cond[w * vocab + t] > 0.0 {
                let next = (w % r) * vocab + t;
                if !seen[next] {
                    seen[next] = true;
                    stack.push(next);
                }
            }
        }
    }
    Ok((nstates, init, cond))
}

/// `(H, init, trans, emit)`: validated, normalised HMM tables, row-major.
pub(crate) type HmmTables = (usize, Vec<f64>, Vec<f64>, Vec<f64>);

/// Validated, normalised HMM tables `(H, init, trans, emit)`, row-major.
pub(crate) fn hmm(
    vocab: usize,
    initial: &[f64],
    transitions: &[Vec<f64>],
    emissions: &[Vec<f64>],
) -> Result<HmmTables, LanguageError> {
    let h = initial.len();
    hmm_size(h, vocab)?;
    let mut init = initial.to_vec();
    check_row(
        INITIAL,
        None,
        &mut init,
        h,
        "one per hidden state",
        false,
        "",
    )?;
    check_row_count(
        TRANSITIONS,
        transitions.len(),
        h,
        &format!("one per hidden state: {h}"),
    )?;
    check_row_count(
        EMISSIONS,
        emissions.len(),
        h,
        &format!("one per hidden state: {h}"),
    )?;
    let mut trans = Vec::with_capacity(h * h);
    let mut zero_trans = vec![false; h];
    for (i, row) in transitions.iter().enumerate() {
        let mut row = row.clone();
        let kind = check_row(
            TRANSITIONS,
            Some(i),
            &mut row,
            h,
            "one per hidden state",
            true,
            "",
        )?;
        zero_trans[i] = kind == RowKind::Zero;
        trans.extend_from_slice(&row);
    }
    let mut emit = Vec::with_capacity(h * vocab);
    let mut zero_emit = vec![false; h];
    for (i, row) in emissions.iter().enumerate() {
        let mut row = row.clone();
        let kind = check_row(
            EMISSIONS,
            Some(i),
            &mut row,
            vocab,
            "one per token",
            true,
            "",
        )?;
        zero_emit[i] = kind == RowKind::Zero;
        emit.extend_from_slice(&row);
    }
    let mut seen = vec![false; h];
    let mut stack: Vec<usize> = (0..h).filter(|&j| init[j] > 0.0).collect();
    stack.iter().for_each(|&j| seen[j] = true);
    while let Some(i) = stack.pop() {
        if zero_emit[i] {
            return Err(invalid(
                EMISSIONS,
                Some(i),
                format!(
                    "is all zero, but hidden state {i} can occur (it is reachable from the \
                     initial distribution); give it a distribution over the tokens it emits"
                ),
            ));
        }
        if zero_trans[i] {
            return Err(invalid(
                TRANSITIONS,
                Some(i),
                format!(
                    "is all zero, but hidden state {i} can occur (it is reachable from the \
                     initial distribution), so sequences reaching it could not continue; give \
                     it a distribution over next states"
                ),
            ));
        }
        for j in 0..h {
            if trans[i * h + j] > 0.0 && !seen[j] {
                seen[j] = true;
                stack.push(j);
            }
        }
    }
    Ok((h, init, trans, emit))
}

/// `(1 - ε)·p + ε/n` for every row of length `n` of a row-major table (all-zero rows, which
/// belong to unreachable contexts or states, become uniform).
pub(crate) fn smooth(table: &[f64], row_len: usize, epsilon: f64) -> Vec<Vec<f64>> {
    table
        .chunks_exact(row_len)
        .map(|row| {
            if row.iter().all(|&p| p == 0.0) {
                // An unreachable context or state: any distribution will do.
                return vec![1.0 / row_len as f64; row_len];
            }
            row.iter()
                .map(|&p| (1.0 - epsilon) * p + epsilon / row_len as f64)
                .collect()
        })
        .collect()
}
