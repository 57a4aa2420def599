//! One matched cell of two runs: its rows, one per metric (TER, the registry's per-sample
//! metrics, throughput), each with its delta, CI and status.

use super::judge::{confirm_with_cpu, cpu_bound, judge, judge_timing};
use super::{Better, Flip, Options, Row, Status};
use super::{MIN_ABS_RATE_CHANGE, MIN_REL_CHANGE};
use crate::metrics::{self, CellSummary, Clock};
use crate::registry::{self, Aggregate};
use crate::results::{CellRecord, SampleRecord};
use crate::stats::{bootstrap_ci, Resample};
use std::collections::HashMap;

/// A base cell and its match in the new run, with their samples paired by index when the unit
/// is the same (the same random streams) and unpaired otherwise.
pub(super) struct CellPair<'a> {
    pub b: &'a CellSummary,
    pub n: &'a CellSummary,
    pub brec: &'a CellRecord,
    pub nrec: &'a CellRecord,
    pub bs: &'a [SampleRecord],
    pub ns: &'a [SampleRecord],
    bv: Vec<&'a SampleRecord>,
    nv: Vec<&'a SampleRecord>,
    paired: bool,
    method: String,
}

impl<'a> CellPair<'a> {
    pub fn new(
        (b, brec, bs): (&'a CellSummary, &'a CellRecord, &'a [SampleRecord]),
        (n, nrec, ns): (&'a CellSummary, &'a CellRecord, &'a [SampleRecord]),
        same_unit: bool,
    ) -> Self {
        // Pair samples by index when the unit is the same.
        let (bv, nv, paired): (Vec<&SampleRecord>, Vec<&SampleRecord>, bool) = if same_unit {
            let by_index: HashMap<u64, &SampleRecord> = ns.iter().map(|s| (s.index, s)).collect();
            let pairs: Vec<(&SampleRecord, &SampleRecord)> = bs
                .iter()
                .filter_map(|s| by_index.get(&s.index).map(|t| (s, *t)))
                .collect();
            if !pairs.is_empty() && pairs.len() == bs.len() && pairs.len() == ns.len() {
                (
                    pairs.iter().map(|p| p.0).collect(),
                    pairs.iter().map(|p| p.1).collect(),
                    true,
                )
            } else {
                (bs.iter().collect(), ns.iter().collect(), false)
            }
        } else {
            (bs.iter().collect(), ns.iter().collect(), false)
        };
        let method = if paired {
            format!("paired bootstrap over {} samples", bv.len())
        } else {
            format!("unpaired bootstrap ({} vs {} samples)", bv.len(), nv.len())
        };
        CellPair {
            b,
            n,
            brec,
            nrec,
            bs,
            ns,
            bv,
            nv,
            paired,
            method,
        }
    }

    /// Every row of the cell: TER, the registry's per-sample metrics, throughput.
    pub fn rows(&self, opts: &Options) -> Vec<Row> {
        let mut out: Vec<Row> = self.ter_row().into_iter().collect();
        out.extend(self.registry_rows());
        out.extend(self.timing_rows(opts));
        out
    }

    /// A row of this cell for `metric`, before judging.
    fn template(&self, metric: &str, better: Better, digits: usize) -> Row {
        Row {
            status: Status::WithinNoise,
            status_label: Status::WithinNoise.label(),
            key: self.n.key.clone(),
            unit: self.n.unit.clone(),
            task: self.n.task.clone(),
            model: self.n.model.clone(),
            sampler: self.n.sampler.clone(),
            steps: self.n.steps,
            length: self.n.length,
            seed: self.n.seed,
            metric: metric.to_string(),
            better: Some(better),
            base: None,
            new: None,
            delta: None,
            rel: None,
            ci: None,
            rel_ci: None,
            n_base: self.bv.len(),
            n_new: self.nv.len(),
            method: self.method.clone(),
            paired: self.paired,
            digits,
            note: None,
            flips: Vec::new(),
        }
    }

    /// The bootstrap seed of one metric of this cell.
    fn seed(&self, metric: &str) -> u64 {
        seed_of(&self.n.unit, metric)
    }

    /// How the bootstrap draws this pair's samples.
    fn resample(&self) -> Resample {
        if self.paired {
            Resample::Paired(self.bv.len())
        } else {
            Resample::Unpaired(self.bv.len(), self.nv.len())
        }
    }

    /// TER, from the samples' log-probabilities; `None` when infinite in both runs (SER
    /// carries the comparison then).
    fn ter_row(&self) -> Option<Row> {
        let (b, n, bv, nv, paired) = (self.b, self.n, &self.bv, &self.nv, self.paired);
        let mut row = self.template("TER", Better::Lower, 4);
        row.base = b.ter;
        row.new = n.ter;
        let (bz, nz) = (b.zero_probability_samples, n.zero_probability_samples);
        match (b.ter, n.ter) {
            (Some(bt), Some(nt)) => {
                let ter_of = |v: &[&SampleRecord], idx: &[usize]| -> f64 {
                    let (mut lq, mut len) = (0.0, 0usize);
                    for &i in idx {
                        lq += v[i].log_q.unwrap_or(f64::NEG_INFINITY);
                        len += v[i].tokens.len();
                    }
                    (-lq / len.max(1) as f64).exp()
                };
                let identical = paired && bv.iter().zip(nv).all(|(x, y)| x.log_q == y.log_q);
                let ci = if identical {
                    Some((0.0, 0.0))
                } else {
                    bootstrap_ci(self.resample(), self.seed("TER"), |ib, inn| {
                        ter_of(nv, inn) - ter_of(bv, ib)
                    })
                };
                judge(
                    &mut row,
                    bt,
                    nt,
                    ci,
                    identical,
                    MIN_REL_CHANGE * bt.abs(),
                    false,
                );
            }
            (Some(bt), None) => {
                row.new = Some(f64::INFINITY);
                row.delta = Some(f64::INFINITY);
                row.rel = Some(f64::INFINITY);
                row.status = Status::Regressed;
                let _ = bt;
                row.note = Some(format!("became infinite: {nz}/{} samples with q = 0", n.n));
            }
            (None, Some(_)) => {
                row.base = Some(f64::INFINITY);
                row.delta = Some(f64::NEG_INFINITY);
                row.rel = Some(-1.0);
                row.status = Status::Improved;
                row.note = Some(format!(
                    "became finite (base: {bz}/{} samples with q = 0)",
                    b.n
                ));
            }
            // Infinite in both runs: SER carries the comparison.
            (None, None) => row.status = Status::Identical,
        }
        row.status_label = row.status.label();
        (!(b.ter.is_none() && n.ter.is_none())).then_some(row)
    }

    /// Every per-sample metric of the registry (SER, NFE, unigram entropy and whatever the task
    /// declares): the difference of means, paired per sample when the unit is the same.
    fn registry_rows(&self) -> Vec<Row> {
        let (b, n, brec, nrec, bv, nv, paired) = (
            self.b,
            self.n,
            self.brec,
            self.nrec,
            &self.bv,
            &self.nv,
            self.paired,
        );
        let mut out = Vec::new();
        // declares): the difference of means, paired per sample when the unit is the same.
        let defs = registry::for_cells(&[brec.clone(), nrec.clone()]);
        for def in defs
            .iter()
            .filter(|d| matches!(d.aggregate, Aggregate::Rate | Aggregate::Mean))
        {
            let (Some(bt), Some(nt)) = (def.value(b), def.value(n)) else {
                continue;
            };
            if bv.is_empty() || nv.is_empty() {
                continue;
            }
            let rate = def.aggregate == Aggregate::Rate;
            let f = |s: &SampleRecord| def.per_sample(s).unwrap_or(f64::NAN);
            let mut row = self.template(&def.label, def.better, def.digits);
            row.base = Some(bt);
            row.new = Some(nt);
            let identical = paired
                && bv
                    .iter()
                    .zip(nv)
                    .all(|(x, y)| f(x).to_bits() == f(y).to_bits());
            let ci = if identical {
                Some((0.0, 0.0))
            } else {
                // Samples without a value (NaN) are left out of both means.
                let mean = |v: &[&SampleRecord], idx: &[usize]| -> f64 {
                    let (sum, k) = idx
                        .iter()
                        .map(|&i| f(v[i]))
                        .filter(|x| !x.is_nan())
                        .fold((0.0, 0usize), |a, x| (a.0 + x, a.1 + 1));
                    sum / k as f64
                };
                bootstrap_ci(self.resample(), self.seed(&def.name), |ib, inn| {
                    mean(nv, inn) - mean(bv, ib)
                })
            };
            let floor = if rate {
                MIN_ABS_RATE_CHANGE
            } else {
                MIN_REL_CHANGE * bt.abs()
            };
            judge(&mut row, bt, nt, ci, identical, floor, rate);
            if def.name == "ser" && paired && nt > bt {
                row.flips = bv
                    .iter()
                    .zip(nv)
                    .filter(|(x, y)| x.in_support && !y.in_support)
                    .take(3)
                    .map(|(x, y)| Flip {
                        index: y.index,
                        base_tokens: tokens_string(&x.tokens),
                        new_tokens: tokens_string(&y.tokens),
                        new_first_invalid: y.first_invalid,
                    })
                    .collect();
            }
            row.status_label = row.status.label();
            out.push(row);
        }
        out
    }

    /// Throughput: repeated measurements (timed batches) on each side, asv's rule, on the wall
    /// clock and, for work done on the CPU, on the worker's CPU clock too.
    fn timing_rows(&self, opts: &Options) -> Vec<Row> {
        let (b, n, brec, nrec, bs, ns) = (self.b, self.n, self.brec, self.nrec, self.bs, self.ns);
        if let (Some(bt), Some(nt)) = (b.tokens_per_second, n.tokens_per_second) {
            let mut wall = self.template("tokens/s", Better::Higher, 0);
            wall.base = Some(bt);
            wall.new = Some(nt);
            let bsr: Vec<&SampleRecord> = bs.iter().collect();
            let nsr: Vec<&SampleRecord> = ns.iter().collect();
            let throughputs = |rec: &CellRecord, s: &[&SampleRecord], clock| {
                metrics::batch_throughputs(rec, s, clock)
            };
            let (bw, nw) = (
                throughputs(brec, &bsr, Clock::Wall),
                throughputs(nrec, &nsr, Clock::Wall),
            );
            judge_timing(&mut wall, &bw, &nw, opts.timing_noise, self.seed("tps"));
            if cpu_bound(brec) && cpu_bound(nrec) {
                let mut cpu = self.template("tokens/CPU-s", Better::Higher, 0);
                let (bc, nc) = (
                    throughputs(brec, &bsr, Clock::Cpu),
                    throughputs(nrec, &nsr, Clock::Cpu),
                );
                judge_timing(&mut cpu, &bc, &nc, opts.timing_noise, self.seed("tpc"));
                confirm_with_cpu(&mut wall, &cpu);
                vec![wall, cpu]
            } else {
                vec![wall]
            }
        } else {
            Vec::new()
        }
    }
}

/// The bootstrap seed of `metric` in the cell of `unit`.
fn seed_of(unit: &str, metric: &str) -> u64 {
    dlm_plugin_api::hash::fnv1a_64(unit.bytes().chain(metric.bytes()))
}

/// Tokens separated by spaces (single digits would otherwise run together).
fn tokens_string(t: &[u32]) -> String {
    let parts: Vec<String> = t.iter().map(|x| x.to_string()).collect();
    parts.join(" ")
}
