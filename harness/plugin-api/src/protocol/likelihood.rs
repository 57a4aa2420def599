//! Likelihood requests (`model.loglikelihood`, `task.loglikelihood`). Since API 1.8.
//!
//! lm-evaluation-harness asks a model for `loglikelihood(context, continuation)`: the
//! log-probability of the continuation's tokens given the context's. A rolling log-likelihood
//! (perplexity) is the same request with an empty context. An autoregressive model answers
//! exactly (the chain rule over the continuation); a masked diffusion model answers with a
//! Monte-Carlo estimate of its ELBO (LLaDA's `get_log_likelihood`, Dream's `mc_num`), whose
//! settings are [`ElboSettings`]. A task that knows its ground truth (`exact_loglikelihood`
//! capability) answers the same request with the exact value.

use serde::{Deserialize, Serialize};
use serde_json::Value;

/// One row of a likelihood request: (context, continuation) token ids.
pub type ContinuationRow = (Vec<u32>, Vec<u32>);

/// `model.loglikelihood` / `task.loglikelihood` request. The token buffer holds every row's
/// context followed by its continuation, rows one after another (`context_lengths[i] +
/// continuation_lengths[i]` ids for row `i`). Since API 1.8.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct LoglikelihoodRequest {
    /// Tokens of each row's context (0 for a rolling log-likelihood).
    pub context_lengths: Vec<usize>,
    /// Tokens of each row's continuation (at least 1).
    pub continuation_lengths: Vec<usize>,
    /// The length of the sequences the rows are the beginnings of (the task's length): a
    /// model of fixed length pads each row's end with mask tokens up to it, which it then
    /// marginalises, as it was trained. `None`: each row as it is.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub length: Option<usize>,
    /// How a diffusion model estimates its ELBO; `None`: the model's defaults
    /// ([`ElboSettings::default`]). Ignored by models and tasks that answer exactly.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub elbo: Option<ElboSettings>,
}

impl LoglikelihoodRequest {
    /// A request for `rows` (context, continuation), packed into (request, token buffer).
    pub fn pack(rows: &[(Vec<u32>, Vec<u32>)], elbo: Option<ElboSettings>) -> (Self, Vec<u32>) {
        let request = LoglikelihoodRequest {
            context_lengths: rows.iter().map(|(c, _)| c.len()).collect(),
            continuation_lengths: rows.iter().map(|(_, k)| k.len()).collect(),
            length: None,
            elbo,
        };
        let buffer = rows
            .iter()
            .flat_map(|(c, k)| c.iter().chain(k).copied())
            .collect();
        (request, buffer)
    }

    /// The same request for rows that begin sequences of `length` tokens.
    pub fn with_length(mut self, length: usize) -> Self {
        self.length = Some(length);
        self
    }

    /// The rows (context, continuation) of `buffer`, checking that the sizes agree and that no
    /// continuation is empty.
    pub fn unpack(&self, buffer: &[u32]) -> Result<Vec<ContinuationRow>, String> {
        if self.context_lengths.len() != self.continuation_lengths.len() {
            return Err(format!(
                "{} context lengths but {} continuation lengths; give one of each per row",
                self.context_lengths.len(),
                self.continuation_lengths.len()
            ));
        }
        if let Some(row) = self.continuation_lengths.iter().position(|&k| k == 0) {
            return Err(format!(
                "row {row} has an empty continuation; a log-likelihood needs at least one token"
            ));
        }
        let total: usize = self
            .context_lengths
            .iter()
            .chain(&self.continuation_lengths)
            .sum();
        if total != buffer.len() {
            return Err(format!(
                "token buffer holds {} ids but the request's lengths add up to {total}",
                buffer.len()
            ));
        }
        let mut rows = Vec::with_capacity(self.context_lengths.len());
        let mut at = 0;
        for (row, (&c, &k)) in self
            .context_lengths
            .iter()
            .zip(&self.continuation_lengths)
            .enumerate()
        {
            if let Some(length) = self.length.filter(|&n| c + k > n) {
                return Err(format!(
                    "row {row} has {} tokens, more than the request's sequence length {length}",
                    c + k
                ));
            }
            rows.push((
                buffer[at..at + c].to_vec(),
                buffer[at + c..at + c + k].to_vec(),
            ));
            at += c + k;
        }
        Ok(rows)
    }
}

/// How the masks of a Monte-Carlo ELBO are drawn. Every scheme draws each mask with the right
/// marginal (a masked count `l` uniform on `1..=L` over the continuation's `L` tokens, then a
/// uniformly random set of `l` positions), so every scheme is unbiased; they differ in how
/// the draws of one estimate are coupled. Since API 1.8.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum DrawScheme {
    /// LLaDA's `get_log_likelihood`: within each group of `batch` draws the masked counts are
    /// spread evenly over `1..=L` from one random start.
    #[default]
    Stratified,
    /// Pairs of draws share one random order of the positions: the first `l` of it, then the
    /// last `L + 1 - l`.
    Antithetic,
    /// Every draw independent.
    Independent,
}

impl DrawScheme {
    /// The name used in suites and JSON.
    pub fn as_str(self) -> &'static str {
        match self {
            DrawScheme::Stratified => "stratified",
            DrawScheme::Antithetic => "antithetic",
            DrawScheme::Independent => "independent",
        }
    }
}

/// Settings of a Monte-Carlo ELBO. Since API 1.8.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct ElboSettings {
    /// Draws (masks) per row; LLaDA and Dream use 128.
    #[serde(default = "default_mc_num")]
    pub mc_num: usize,
    /// How the draws are coupled.
    #[serde(default)]
    pub draws: DrawScheme,
    /// Draws per forward pass, and the group size of the stratified scheme.
    #[serde(default = "default_batch")]
    pub batch: usize,
    /// Seed of the masks; row `i` draws from its own stream `(seed, i)`.
    #[serde(default)]
    pub seed: u64,
    /// Return every draw's value ([`LoglikelihoodRow::draws`]), for the spread.
    #[serde(default)]
    pub per_draw: bool,
}

fn default_mc_num() -> usize {
    128
}
fn default_batch() -> usize {
    16
}

impl Default for ElboSettings {
    fn default() -> Self {
        ElboSettings {
            mc_num: default_mc_num(),
            draws: DrawScheme::default(),
            batch: default_batch(),
            seed: 0,
            per_draw: false,
        }
    }
}

impl ElboSettings {
    /// `mc_num` draws of `draws`, `batch` per forward pass, masks from `seed`.
    pub fn new(mc_num: usize, draws: DrawScheme, batch: usize, seed: u64) -> Self {
        ElboSettings {
            mc_num,
            draws,
            batch,
            seed,
            per_draw: false,
        }
    }

    /// The same settings, returning every draw's value.
    pub fn with_per_draw(mut self) -> Self {
        self.per_draw = true;
        self
    }
}

/// One row's answer. Since API 1.8.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct LoglikelihoodRow {
    /// `log p(continuation | context)` in nats (exact), or its ELBO estimate; `None` where the
    /// model gives the continuation probability 0 (−∞).
    pub log_likelihood: Option<f64>,
    /// Standard error of an estimate (`None` for an exact answer).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub std_error: Option<f64>,
    /// Each draw's value, when [`ElboSettings::per_draw`] asked for them.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub draws: Option<Vec<f64>>,
}

impl LoglikelihoodRow {
    /// An exact answer (`-inf` becomes `None`).
    pub fn exact(log_likelihood: f64) -> Self {
        LoglikelihoodRow {
            log_likelihood: finite(log_likelihood),
            std_error: None,
            draws: None,
        }
    }

    /// An estimate with its standard error and, if kept, its draws.
    pub fn estimate(mean: f64, std_error: f64, draws: Option<Vec<f64>>) -> Self {
        LoglikelihoodRow {
            log_likelihood: finite(mean),
            std_error: std_error.is_finite().then_some(std_error),
            draws,
        }
    }
}

fn finite(x: f64) -> Option<f64> {
    x.is_finite().then_some(x)
}

/// `model.loglikelihood` / `task.loglikelihood` reply: one row per request row. Since API 1.8.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct LoglikelihoodReply {
    /// One answer per row, in request order.
    pub rows: Vec<LoglikelihoodRow>,
    /// `"exact"` or `"elbo"`.
    pub method: String,
    /// What the answer was computed with (the ELBO settings as used, the model's settings), as
    /// a JSON object; recorded, not interpreted.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub settings: Option<Value>,
    /// Network calls made.
    #[serde(default)]
    pub nfe: u64,
    /// Wall-clock seconds inside the plugin.
    #[serde(default)]
    pub wall_seconds: f64,
}

impl LoglikelihoodReply {
    /// A reply of `rows` computed by `method` (`"exact"` or `"elbo"`).
    pub fn new(rows: Vec<LoglikelihoodRow>, method: impl Into<String>) -> Self {
        LoglikelihoodReply {
            rows,
            method: method.into(),
            ..Default::default()
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rows_round_trip_and_bad_shapes_are_named() {
        let rows = vec![(vec![1, 2], vec![3]), (vec![], vec![4, 5, 6])];
        let (request, buffer) = LoglikelihoodRequest::pack(&rows, None);
        assert_eq!(buffer, vec![1, 2, 3, 4, 5, 6]);
        let json = serde_json::to_string(&request).unwrap();
        let back: LoglikelihoodRequest = serde_json::from_str(&json).unwrap();
        assert_eq!(back.unpack(&buffer).unwrap(), rows);
        assert!(back
            .unpack(&buffer[..5])
            .unwrap_err()
            .contains("add up to 6"));
        let empty = LoglikelihoodRequest::pack(&[(vec![1], vec![])], None).0;
        assert!(empty.unpack(&[1]).unwrap_err().contains("row 0"));
    }

    #[test]
    fn elbo_settings_default_missing_fields_and_minus_infinity_reads_as_none() {
        let s: ElboSettings =
            serde_json::from_str(r#"{"mc_num": 4, "draws": "antithetic"}"#).unwrap();
        assert_eq!(s, ElboSettings::new(4, DrawScheme::Antithetic, 16, 0));
        let row = LoglikelihoodRow::exact(f64::NEG_INFINITY);
        let back: LoglikelihoodRow =
            serde_json::from_str(&serde_json::to_string(&row).unwrap()).unwrap();
        assert_eq!(back.log_likelihood, None);
    }
}
