//! Metrics computed from per-sample rows: TER (token-weighted generative perplexity under the
//! ground truth) with a bootstrap CI over sequences, SER with a Wilson CI, unigram entropy,
//! step accounting and speedups. Everything here is a pure function of `samples.jsonl` and
//! `cells.jsonl`, so summaries can always be recomputed.

use crate::registry::{Aggregate, MetricDef};
use crate::results::{CellRecord, CellStatus, SampleRecord};
use crate::stats::{bootstrap_ci, unigram_entropy, Resample, Z95};
pub use crate::summary::{CellSummary, MetricValue};
use std::collections::{BTreeMap, HashMap, HashSet};

/// `exp(-Σ log q / Σ |x|)`; `None` when some sequence has `q(x) = 0` (TER is infinite).
pub fn ter(log_q: &[Option<f64>], lengths: &[usize]) -> Option<f64> {
    let mut total = 0.0;
    for lq in log_q {
        total += (*lq)?;
    }
    let tokens: usize = lengths.iter().sum();
    if tokens == 0 {
        return None;
    }
    Some((-total / tokens as f64).exp())
}

/// Percentile bootstrap 95% CI of TER, resampling whole sequences ([`bootstrap_ci`]);
/// `None` without sequences. Deterministic for a seed.
pub fn ter_bootstrap_ci(log_q: &[f64], lengths: &[usize], seed: u64) -> Option<(f64, f64)> {
    bootstrap_ci(Resample::One(log_q.len()), seed, |drawn, _| {
        let log_q = drawn.iter().fold(0.0, |sum, &i| sum + log_q[i]);
        let tokens: usize = drawn.iter().map(|&i| lengths[i]).sum();
        (-log_q / tokens as f64).exp()
    })
}

/// Wilson score 95% interval for `k` successes in `n` trials.
pub fn wilson_ci(k: usize, n: usize) -> (f64, f64) {
    if n == 0 {
        return (0.0, 1.0);
    }
    let (k, n) = (k as f64, n as f64);
    let p = k / n;
    let z2 = Z95 * Z95;
    let denom = 1.0 + z2 / n;
    let center = (p + z2 / (2.0 * n)) / denom;
    let half = Z95 / denom * (p * (1.0 - p) / n + z2 / (4.0 * n * n)).sqrt();
    // At the boundaries the interval closes exactly (the formula leaves rounding residue).
    let lo = if k == 0.0 {
        0.0
    } else {
        (center - half).max(0.0)
    };
    let hi = if k == n {
        1.0
    } else {
        (center + half).min(1.0)
    };
    (lo, hi)
}

/// Whether a cell decodes a denoiser left to right, one token per step (as the model's plugin
/// describes its sampler; the harness never interprets sampler names).
fn is_left_to_right(cell: &CellRecord) -> bool {
    cell.one_step_per_token && !cell.model_autoregressive
}

/// The forwards a sample is charged (docs/user-guide.md, the counting rule): what its sampler
/// reports, except that a decoder emitting one token per forward (AR, left-to-right) is
/// charged one forward per token of its completion. The forwards it spent past the
/// completion's end (after its end-of-text token or stop string), which a decoder that stops
/// there never makes, are not charged, nor is the one that emitted the end marker (the
/// marker is not counted as a token either): such a decoder's tokens per forward is exactly 1
/// (an empty completion is charged nothing).
/// `batch_nfe` keeps the forwards actually made.
fn charged_nfe(r: &SampleRecord, one_per_token: bool) -> u64 {
    if one_per_token {
        r.nfe.min(r.generated_tokens)
    } else {
        r.nfe
    }
}

/// Whether a cell comes from an autoregressive model (the plugin's `autoregressive`
/// capability).
fn is_ar_model_cell(cell: &CellRecord) -> bool {
    cell.model_autoregressive
}

fn model_of(c: &CellRecord) -> Option<&str> {
    c.cell.model.as_ref().map(|m| m.name.as_str())
}

/// Whether a cell is an autoregressive reference for speedups.
pub fn is_ar_cell(cell: &CellRecord) -> bool {
    is_ar_model_cell(cell) || is_left_to_right(cell)
}

/// The baseline rule of a diffusion cell when the run has no AR cell for it to be judged
/// against at all (the report then falls back on the exact optimum, where the task has one).
pub const NO_AR_RULE: &str = "no left-to-right cell of this model and no AR model with this task, length, seed and batch size";

/// The AR baseline chosen for one cell: the index of the baseline cell (if any) and the rule.
#[derive(Debug, Clone, PartialEq)]
pub struct Baseline {
    pub cell: Option<usize>,
    pub rule: String,
}

/// Choose every cell's AR baseline, independent of the order of cells (and so of the order of
/// models in the suite). For a diffusion cell of model `m` on (task, length, seed, batch size),
/// among finished AR cells with the same four:
/// 1. `baseline: b` on `m` in the suite: model `b`'s AR cell;
/// 2. else `m`'s own left-to-right cell (the same denoiser decoding one token per step);
/// 3. else the suite's autoregressive model, if there is exactly one; several are ambiguous
///    and give no baseline (name one with `baseline:`).
///
/// AR cells themselves get no baseline unless the suite names one. Where a model has several
/// AR cells in the same place (e.g. two left-to-right cells with different temperatures), the
/// one with the smallest key is taken.
pub fn resolve_baselines(cells: &[CellRecord]) -> Vec<Option<Baseline>> {
    // Cells by place (task, length, seed, batch size): candidates are looked up in their own
    // place only, so a sweep of 100,000 cells is not 10^10 comparisons.
    fn place(c: &CellRecord) -> (&str, usize, u64, usize) {
        let s = &c.cell;
        (s.task.name.as_str(), s.length, s.seed, s.batch_size)
    }
    let mut places: HashMap<_, Vec<usize>> = HashMap::new();
    for (i, c) in cells.iter().enumerate() {
        places.entry(place(c)).or_default().push(i);
    }
    let group: Vec<&[usize]> = cells.iter().map(|c| places[&place(c)].as_slice()).collect();
    let same_place = |ci: usize| group[ci].iter().map(|&i| (i, &cells[i]));
    // The candidate with the smallest key among `filter`.
    let pick = |ci: usize, filter: &dyn Fn(&CellRecord) -> bool| -> Option<usize> {
        let c = &cells[ci];
        same_place(ci)
            .filter(|(_, b)| {
                b.status == CellStatus::Ok
                    && !b.cell.is_reference()
                    && b.unit != c.unit
                    && filter(b)
            })
            .min_by(|(_, x), (_, y)| x.key.cmp(&y.key))
            .map(|(i, _)| i)
    };
    cells
        .iter()
        .enumerate()
        .map(|(ci, c)| {
            let model = c.cell.model.as_ref()?;
            if let Some(named) = &model.baseline {
                let found = pick(ci, &|b| model_of(b) == Some(named.as_str()) && is_ar_cell(b));
                return Some(Baseline {
                    cell: found,
                    rule: match found {
                        Some(_) => format!("`baseline: {named}` in the suite"),
                        None => format!(
                            "`baseline: {named}` in the suite, but {named} has no finished AR cell with this task, length, seed and batch size"
                        ),
                    },
                });
            }
            if is_ar_cell(c) {
                return None;
            }
            if let Some(i) =
                pick(ci, &|b| model_of(b) == Some(model.name.as_str()) && is_left_to_right(b))
            {
                return Some(Baseline {
                    cell: Some(i),
                    rule: format!("{}'s own left-to-right decoding", model.name),
                });
            }
            let mut ar_models: Vec<&str> = same_place(ci)
                .filter(|(_, b)| b.status == CellStatus::Ok && is_ar_model_cell(b))
                .filter_map(|(_, b)| model_of(b))
                .collect();
            ar_models.sort_unstable();
            ar_models.dedup();
            Some(match ar_models.as_slice() {
                [] => Baseline {
                    cell: None,
                    rule: NO_AR_RULE.into(),
                },
                [only] => Baseline {
                    cell: pick(ci, &|b| model_of(b) == Some(*only) && is_ar_model_cell(b)),
                    rule: format!("the suite's AR model {only}"),
                },
                several => Baseline {
                    cell: None,
                    rule: format!(
                        "ambiguous: several AR models ({}); name one with `baseline:` on model {}",
                        several.join(", "),
                        model.name
                    ),
                },
            })
        })
        .collect()
}

/// Summaries of `cells` (in order) from their sample rows.
pub fn summarize(cells: &[CellRecord], samples: &[SampleRecord]) -> Vec<CellSummary> {
    let mut by_unit: HashMap<&str, Vec<&SampleRecord>> = HashMap::new();
    for s in samples {
        by_unit.entry(s.unit.as_str()).or_default().push(s);
    }
    let mut rows: Vec<CellSummary> = cells
        .iter()
        .map(|c| {
            let mut rows = by_unit.get(c.unit.as_str()).cloned().unwrap_or_default();
            rows.sort_by_key(|r| r.index);
            summarize_cell(c, &rows)
        })
        .collect();
    for (i, baseline) in resolve_baselines(cells).into_iter().enumerate() {
        let Some(baseline) = baseline else { continue };
        rows[i].baseline_rule = Some(baseline.rule);
        if let Some(bi) = baseline.cell {
            rows[i].speedup_baseline = Some(cells[bi].key.clone());
            rows[i].speedup = match (rows[i].tokens_per_second, rows[bi].tokens_per_second) {
                (Some(a), Some(b)) if b > 0.0 => Some(a / b),
                _ => None,
            };
        }
    }
    rows
}

/// Summaries in suite order (cells of the suite first, then any others found in the run).
pub fn ordered_summary(
    cells: &[CellRecord],
    samples: &[SampleRecord],
    order: Option<&[crate::suite::CellSpec]>,
) -> Vec<CellSummary> {
    let mut ordered: Vec<CellRecord> = Vec::with_capacity(cells.len());
    if let Some(order) = order {
        let by_unit: BTreeMap<&str, &CellRecord> =
            cells.iter().map(|c| (c.unit.as_str(), c)).collect();
        for spec in order {
            if let Some(c) = by_unit.get(spec.unit_id().as_str()) {
                ordered.push((*c).clone());
            }
        }
        let placed: HashSet<String> = ordered.iter().map(|c| c.unit.clone()).collect();
        ordered.extend(cells.iter().filter(|c| !placed.contains(&c.unit)).cloned());
    } else {
        ordered = cells.to_vec();
    }
    summarize(&ordered, samples)
}

fn summarize_cell(c: &CellRecord, rows: &[&SampleRecord]) -> CellSummary {
    let spec = &c.cell;
    let mut s = CellSummary {
        key: c.key.clone(),
        unit: c.unit.clone(),
        task: spec.task.name.clone(),
        model: spec
            .model
            .as_ref()
            .map(|m| m.name.clone())
            .unwrap_or_else(|| "reference".into()),
        sampler: spec.sampler.as_ref().map(|x| x.name.clone()),
        steps: spec.sampler.as_ref().map(|x| x.steps),
        length: spec.length,
        seed: spec.seed,
        batch_size: spec.batch_size,
        status: c.status,
        cause: c.cause.clone(),
        error_kind: c.error_kind,
        n: rows.len(),
        ter: None,
        ter_ci: None,
        zero_probability_samples: 0,
        optimal_ter: c.task_description.as_ref().and_then(|d| d.optimal_ter),
        ser: None,
        ser_ci: None,
        unigram_entropy: None,
        mean_first_error: None,
        invalid_transition_rate: None,
        nfe: None,
        batch_nfe: None,
        tokens_per_forward: None,
        positions_computed: None,
        forward_equivalents: None,
        edits: None,
        wall_seconds: None,
        tokens_per_second: None,
        tokens_per_second_iqr: None,
        timed_batches: 0,
        tokens_per_cpu_second: None,
        speedup: None,
        speedup_baseline: None,
        baseline_rule: None,
        one_step_per_token: c.one_step_per_token,
        device: c.device.clone(),
        metrics: BTreeMap::new(),
        provenance: c
            .task_description
            .as_ref()
            .and_then(|d| d.provenance.clone()),
        documents: c.documents,
        trace: None,
    };
    if c.status != CellStatus::Ok || rows.is_empty() {
        return s;
    }
    let n = rows.len();
    for decl in c.task_description.iter().flat_map(|d| d.metrics.iter()) {
        let def = MetricDef::declared(decl);
        let value = match decl.kind {
            dlm_plugin_api::MetricKind::PassAtK { k } => {
                let prompts = c
                    .task_description
                    .as_ref()
                    .and_then(|d| d.text.as_ref()?.prompts);
                pass_at_k_value(decl, &def, rows, k, &c.unit, prompts)
            }
            _ => {
                let values: Vec<f64> = rows.iter().filter_map(|r| def.per_sample(r)).collect();
                aggregate(decl, &def, &values, &c.unit)
            }
        };
        s.metrics.insert(decl.name.clone(), value);
    }
    // Text tasks score completions, not sequences under a known distribution: no `log q`,
    // so no TER; their SER is the share of completions that are not fully correct.
    let text = c
        .task_description
        .as_ref()
        .is_some_and(|d| d.text.is_some());
    let log_q: Vec<Option<f64>> = rows.iter().map(|r| r.log_q).collect();
    let lengths: Vec<usize> = rows.iter().map(|r| r.tokens.len()).collect();
    if !text {
        s.zero_probability_samples = log_q.iter().filter(|l| l.is_none()).count();
        s.ter = ter(&log_q, &lengths);
    }
    if s.ter.is_some() {
        let finite: Vec<f64> = log_q.iter().map(|l| l.unwrap_or(0.0)).collect();
        s.ter_ci = ter_bootstrap_ci(&finite, &lengths, seed_of(&c.unit));
    }
    let errors = rows.iter().filter(|r| !r.in_support).count();
    s.ser = Some(errors as f64 / n as f64);
    s.ser_ci = Some(wilson_ci(errors, n));
    if !text {
        s.unigram_entropy =
            Some(rows.iter().map(|r| unigram_entropy(&r.tokens)).sum::<f64>() / n as f64);
    }
    let firsts: Vec<usize> = rows.iter().filter_map(|r| r.first_invalid).collect();
    if !firsts.is_empty() {
        s.mean_first_error = Some(firsts.iter().sum::<usize>() as f64 / firsts.len() as f64);
    }
    let total_tokens: usize = lengths.iter().sum();
    s.invalid_transition_rate = Some(
        rows.iter().map(|r| r.invalid_transitions).sum::<usize>() as f64
            / total_tokens.max(1) as f64,
    );
    if !spec.is_reference() {
        let one_per_token = c.one_step_per_token || c.model_autoregressive;
        let nfe: u64 = rows.iter().map(|r| charged_nfe(r, one_per_token)).sum();
        let generated: u64 = rows.iter().map(|r| r.generated_tokens).sum();
        s.nfe = Some(nfe as f64 / n as f64);
        s.tokens_per_forward = (nfe > 0).then(|| generated as f64 / nfe as f64);
        s.batch_nfe = Some(c.batches.iter().map(|b| b.nfe).sum());
        (s.positions_computed, s.forward_equivalents, s.edits) = work_per_sample(rows, spec.length);
        s.trace = crate::trace::summarize(rows.iter().filter_map(|r| r.trace.as_ref()));
        let wall: f64 = c.batches.iter().map(|b| b.wall_seconds).sum();
        s.wall_seconds = Some(wall);
        let throughputs = batch_throughputs(c, rows, Clock::Wall);
        s.timed_batches = throughputs.len();
        if let Some((median, q1, q3)) = crate::stats::quartiles(&throughputs) {
            s.tokens_per_second = Some(median);
            s.tokens_per_second_iqr = Some((q1, q3));
        }
        s.tokens_per_cpu_second =
            crate::stats::quartiles(&batch_throughputs(c, rows, Clock::Cpu)).map(|q| q.0);
    }
    s
}

/// Mean positions computed, forward equivalents (positions ÷ `length`) and edits per sample.
/// Positions only when every sample reports them: a model that does not count them ran full
/// forwards, which a mean over the samples that do would hide. Edits when some sample reports
/// them; a sample without a count made none (the SDK leaves a zero count out).
fn work_per_sample(
    rows: &[&SampleRecord],
    length: usize,
) -> (Option<f64>, Option<f64>, Option<f64>) {
    let n = rows.len() as f64;
    let positions: Option<u64> = rows.iter().map(|r| r.positions_computed).sum();
    let positions = positions.filter(|_| !rows.is_empty()).map(|p| p as f64 / n);
    let forward_equivalents = positions.filter(|_| length > 0).map(|p| p / length as f64);
    let edits = rows
        .iter()
        .any(|r| r.edits.is_some())
        .then(|| rows.iter().filter_map(|r| r.edits).sum::<u64>() as f64 / n);
    (positions, forward_equivalents, edits)
}

/// Which clock a throughput is measured with.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Clock {
    /// Wall-clock seconds of the `generate` call: what a user waits.
    Wall,
    /// CPU seconds of the worker process (all threads) during the call: insensitive to other
    /// processes competing for the cores, meaningless when the work runs on a GPU.
    Cpu,
}

/// Generated tokens per second (of `clock`) of each timed batch of a cell: the repeated
/// measurements its timing is judged by. Every batch of a cell does the same work (same model,
/// sampler, steps, length and batch size), so batches are repeats; the first one also pays for
/// warm-up (lazy initialisation, cold caches, page faults), so it is left out whenever another
/// batch remains. Batches without a positive time on that clock are skipped.
pub fn batch_throughputs(cell: &CellRecord, samples: &[&SampleRecord], clock: Clock) -> Vec<f64> {
    let generated: HashMap<u64, u64> = samples
        .iter()
        .map(|s| (s.index, s.generated_tokens))
        .collect();
    let mut batches: Vec<_> = cell.batches.iter().collect();
    batches.sort_by_key(|b| b.first_index);
    let timed = if batches.len() >= 2 {
        &batches[1..]
    } else {
        &batches[..]
    };
    timed
        .iter()
        .filter_map(|b| {
            let seconds = match clock {
                Clock::Wall => Some(b.wall_seconds),
                Clock::Cpu => b.cpu_seconds,
            }
            .filter(|&s| s > 0.0)?;
            let tokens: u64 = (b.first_index..b.first_index + b.size as u64)
                .filter_map(|i| generated.get(&i))
                .sum();
            Some(tokens as f64 / seconds)
        })
        .collect()
}

/// A task-declared metric's figure and 95% CI from its per-sample values: rates with Wilson's
/// interval, means with a percentile bootstrap over samples (seeded by the unit and name).
fn aggregate(
    decl: &dlm_plugin_api::MetricDecl,
    def: &MetricDef,
    values: &[f64],
    unit: &str,
) -> MetricValue {
    let n = values.len();
    if n == 0 {
        return MetricValue {
            value: None,
            ci: None,
            n,
            declared: decl.clone(),
            note: None,
        };
    }
    let mean = values.iter().sum::<f64>() / n as f64;
    let ci = match def.aggregate {
        Aggregate::Rate => {
            let k = values.iter().filter(|&&v| v != 0.0).count();
            Some(wilson_ci(k, n))
        }
        _ => mean_bootstrap_ci(values, seed_of(unit) ^ seed_of_name(&def.name)),
    };
    MetricValue {
        value: Some(mean),
        ci,
        n,
        declared: decl.clone(),
        note: None,
    }
}

/// A pass@k metric of a cell: per problem (`extra["prompt_id"]`) the estimator over its
/// samples, averaged, with a bootstrap CI over problems. Chen et al.'s estimator needs `k`
/// samples of every problem; where one has fewer there is no figure, and the note says why and
/// how many samples the cell needs (`prompts`: the task's problem count, when it has one).
fn pass_at_k_value(
    decl: &dlm_plugin_api::MetricDecl,
    def: &MetricDef,
    rows: &[&SampleRecord],
    k: u64,
    unit: &str,
    prompts: Option<usize>,
) -> MetricValue {
    let mut problems: BTreeMap<String, (u64, u64)> = BTreeMap::new();
    for r in rows {
        let (Some(id), Some(v)) = (
            r.extra.get("prompt_id").and_then(|p| p.as_str()),
            def.per_sample(r),
        ) else {
            continue;
        };
        let e = problems.entry(id.to_string()).or_default();
        e.0 += 1;
        e.1 += u64::from(v != 0.0);
    }
    let fewest = problems.values().map(|&(n, _)| n).min();
    let mut note = None;
    let per_problem: Option<Vec<f64>> = match fewest {
        Some(fewest) if fewest < k => {
            note = Some(too_few_samples(k, fewest, &problems, prompts));
            None
        }
        _ => problems
            .values()
            .map(|&(n, c)| crate::stats::pass_at_k(n, c, k))
            .collect(),
    };
    let (value, ci) = match per_problem {
        Some(v) if !v.is_empty() => (
            Some(v.iter().sum::<f64>() / v.len() as f64),
            mean_bootstrap_ci(&v, seed_of(unit) ^ seed_of_name(&def.name)),
        ),
        _ => (None, None),
    };
    MetricValue {
        value,
        ci,
        n: problems.len(),
        declared: decl.clone(),
        note,
    }
}

/// Why a cell has no pass@k: too few samples of some problem, and what would do.
fn too_few_samples(
    k: u64,
    fewest: u64,
    problems: &BTreeMap<String, (u64, u64)>,
    prompts: Option<usize>,
) -> String {
    let most = problems.values().map(|&(n, _)| n).max().unwrap_or(fewest);
    let spread = if most == fewest {
        format!("{fewest}")
    } else {
        format!("{fewest} to {most}")
    };
    let total = prompts.unwrap_or(problems.len()) as u64;
    let samples: u64 = problems.values().map(|&(n, _)| n).sum();
    let plural = |n: u64, what: &str| format!("{n} {what}{}", if n == 1 { "" } else { "s" });
    format!(
        "pass@{k} needs at least {k} samples of every problem (k ≤ n); this cell has {spread} \
         per problem ({} over {}): set `samples` to at least {} (samples are dealt to the \
         task's {} in turn) or leave {k} out of the task's `k`",
        plural(samples, "sample"),
        plural(problems.len() as u64, "problem"),
        k * total,
        plural(total, "problem"),
    )
}

/// Percentile bootstrap 95% CI of a mean ([`bootstrap_ci`]); `None` without values.
/// Deterministic for a seed.
pub fn mean_bootstrap_ci(values: &[f64], seed: u64) -> Option<(f64, f64)> {
    bootstrap_ci(Resample::One(values.len()), seed, |drawn, _| {
        drawn.iter().fold(0.0, |sum, &i| sum + values[i]) / drawn.len() as f64
    })
}

/// The seed of a task-declared metric's bootstrap, from its name.
fn seed_of_name(name: &str) -> u64 {
    dlm_plugin_api::hash::fnv1a_64(name.bytes())
}

/// A stable 64-bit seed from a unit id (hex).
fn seed_of(unit: &str) -> u64 {
    u64::from_str_radix(&unit[..unit.len().min(16)], 16).unwrap_or(0)
}

#[cfg(test)]
mod tests;
