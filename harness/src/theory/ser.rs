//! Theorem 4.4: the steps SER ≤ target needs, against L.

use super::*;

// ---------------------------------------------------------------------------------------------
// Theorem 4.4.

pub(super) fn theorem_4_4(groups: &[(Kind, Vec<Obs>)]) -> Theorem44 {
    let tasks: Vec<SerTask> = groups.iter().map(|(k, obs)| ser_task(*k, obs)).collect();
    let primary: Vec<&SerTask> = tasks
        .iter()
        .filter(|t| t.role == SerRole::Primary)
        .collect();
    let verdict = if primary.is_empty() {
        Verdict {
            status: VerdictStatus::NotEnoughData,
            reason: "no primary task (interval language or sparse HMM) at two or more lengths"
                .into(),
        }
    } else {
        combine(
            primary.iter().map(|t| (t.task.as_str(), &t.verdict)),
            "every primary task",
        )
    };
    Theorem44 {
        claim: "Theorem 4.4 (Feng et al.): there is an HMM language for which an MDM needs a \
                number of sampling steps linear in the sequence length L to reach a low sequence \
                error rate, so its speed advantage over autoregressive decoding disappears."
            .into(),
        check: format!(
            "Exact oracle, MDLM ancestral sampling: for each L, the smallest number of steps with \
             SER ≤ {SER_TARGET} (interpolated between grid points; range from the Wilson 95% \
             bounds), fitted against L by least squares. Holds for a task when R² > {LINEAR_R2} \
             over at least 3 lengths and the slope's 95% CI lies above 0; the theorem's verdict \
             is over the interval language and the sparse HMM, the n-gram SER variants are \
             shown for comparison."
        ),
        target_ser: SER_TARGET,
        tasks,
        verdict,
    }
}

/// The closed form the task declares (the interval language's):
/// `(violation probability p_v, complete intervals ⌊L/k⌋)`, valid for the log-linear schedule.
fn interval_params(o: &Obs) -> Option<(f64, usize)> {
    let closed_form = o
        .cell
        .task_description
        .as_ref()?
        .theorem_checks
        .iter()
        .find_map(|c| match c {
            TheoremCheck::SerStepsLinearInLength {
                closed_form: Some(f),
                ..
            } => Some(*f),
            _ => None,
        })?;
    let schedule_ok = o
        .cell
        .cell
        .sampler
        .as_ref()
        .is_some_and(|s| s.schedule.as_deref().is_none_or(|x| x == "loglinear"));
    schedule_ok.then_some((
        closed_form.violation_probability,
        closed_form.complete_intervals,
    ))
}

/// Exact SER of the exact oracle on the interval language with `steps` log-linear steps.
pub fn interval_exact_ser(violation: f64, intervals: usize, steps: usize) -> f64 {
    1.0 - (1.0 - violation / steps as f64).powi(intervals as i32)
}

/// The exact smallest integer number of steps with `SER <= target` on the interval language.
pub fn interval_exact_steps(violation: f64, intervals: usize, target: f64) -> usize {
    if intervals == 0 || violation <= 0.0 {
        return 1;
    }
    let bound = violation / (1.0 - (1.0 - target).powf(1.0 / intervals as f64));
    let mut t = (bound.ceil() as usize).max(1);
    // Guard the rounding of the closed form in both directions.
    while t > 1 && interval_exact_ser(violation, intervals, t - 1) <= target {
        t -= 1;
    }
    while interval_exact_ser(violation, intervals, t) > target {
        t += 1;
    }
    t
}

fn ser_task(kind: Kind, obs: &[Obs]) -> SerTask {
    let first = &obs[0];
    let role = if kind == Kind::SerSupplementary {
        SerRole::Supplementary
    } else {
        SerRole::Primary
    };
    let lengths = distinct(obs.iter().map(|o| o.cell.cell.length));
    let steps = distinct(obs.iter().map(steps_of));
    let (points, exact_by_length) = ser_points(kind, obs);
    let steps_needed: Vec<StepsNeeded> = lengths
        .iter()
        .map(|&l| steps_needed_at(l, &points, exact_by_length.get(&l).copied()))
        .collect();
    let reached: Vec<&StepsNeeded> = steps_needed.iter().filter(|s| s.steps.is_some()).collect();
    let x: Vec<f64> = reached.iter().map(|s| s.length as f64).collect();
    let y: Vec<f64> = reached.iter().map(|s| s.steps.unwrap_or(0.0)).collect();
    let se: Option<Vec<f64>> = reached
        .iter()
        .map(|s| match (s.steps_low, s.steps_high) {
            (Some(lo), Some(hi)) => Some(((hi - lo) / (2.0 * Z95)).max(0.0)),
            _ => None,
        })
        .collect();
    let fit = fit_line(&x, &y, se.as_deref(), 0.95);
    let lx: Vec<f64> = x.iter().map(|v| v.ln()).collect();
    let ly: Vec<f64> = y.iter().map(|v| v.ln()).collect();
    let lse: Option<Vec<f64>> = se
        .as_ref()
        .map(|se| se.iter().zip(&y).map(|(s, v)| s / v).collect());
    let power_fit = fit_line(&lx, &ly, lse.as_deref(), 0.95);
    let exact_fit = if kind == Kind::SerClosedForm && !exact_by_length.is_empty() {
        let ex: Vec<f64> = steps_needed
            .iter()
            .filter(|s| s.exact_steps.is_some())
            .map(|s| s.length as f64)
            .collect();
        let ey: Vec<f64> = steps_needed
            .iter()
            .filter_map(|s| s.exact_steps.map(|v| v as f64))
            .collect();
        fit_line(&ex, &ey, None, 0.95)
    } else {
        None
    };
    let unreached: Vec<usize> = steps_needed
        .iter()
        .filter(|s| s.steps.is_none())
        .map(|s| s.length)
        .collect();
    let verdict = ser_verdict(fit.as_ref(), reached.len(), &unreached);
    SerTask {
        task: first.cell.cell.task.name.clone(),
        label: label_of(obs),
        kind: kind.name().into(),
        role,
        model: first.summary.model.clone(),
        sampler: sampler_label(first.cell),
        seed: first.cell.cell.seed,
        lengths,
        steps,
        points,
        steps_needed,
        fit,
        power_fit,
        exact_fit,
        verdict,
    }
}

/// The measured SER points, sorted by (length, steps), and each interval length's exact
/// parameters (violation probability, intervals) where the task is the interval language.
fn ser_points(kind: Kind, obs: &[Obs]) -> (Vec<SerPoint>, BTreeMap<usize, (f64, usize)>) {
    let mut exact_by_length: BTreeMap<usize, (f64, usize)> = BTreeMap::new();
    let mut points: Vec<SerPoint> = obs
        .iter()
        .filter_map(|o| {
            let ser = o.summary.ser?;
            let exact = if kind == Kind::SerClosedForm {
                interval_params(o)
            } else {
                None
            };
            if let Some(e) = exact {
                exact_by_length.insert(o.cell.cell.length, e);
            }
            Some(SerPoint {
                length: o.cell.cell.length,
                steps: steps_of(o),
                n: o.summary.n,
                ser,
                ser_ci: o.summary.ser_ci,
                exact_ser: exact.map(|(p, n)| interval_exact_ser(p, n, steps_of(o))),
            })
        })
        .collect();
    points.sort_by_key(|p| (p.length, p.steps));
    (points, exact_by_length)
}

/// Where the SER curve at one length crosses the target, with the crossings of its CI bounds.
fn steps_needed_at(length: usize, points: &[SerPoint], exact: Option<(f64, usize)>) -> StepsNeeded {
    let at: Vec<&SerPoint> = points.iter().filter(|p| p.length == length).collect();
    let grid: Vec<(f64, f64)> = at.iter().map(|p| (p.steps as f64, p.ser)).collect();
    let lower: Vec<(f64, f64)> = at
        .iter()
        .map(|p| (p.steps as f64, p.ser_ci.map_or(p.ser, |c| c.0)))
        .collect();
    let upper: Vec<(f64, f64)> = at
        .iter()
        .map(|p| (p.steps as f64, p.ser_ci.map_or(p.ser, |c| c.1)))
        .collect();
    let point = crossing(&grid, SER_TARGET);
    let exact_steps = exact.map(|(p, n)| interval_exact_steps(p, n, SER_TARGET));
    let note = match &point {
        Crossing::At { .. } => None,
        Crossing::NeverAbove => Some(format!(
            "SER ≤ {SER_TARGET} already at the smallest grid step"
        )),
        Crossing::NotReached => Some(format!(
            "SER ≤ {SER_TARGET} not reached within the grid (largest step {})",
            at.last().map_or(0, |p| p.steps)
        )),
        Crossing::Empty => Some("no measured SER at this length".into()),
    };
    StepsNeeded {
        length,
        steps: point.value(),
        steps_low: crossing(&lower, SER_TARGET).value(),
        steps_high: crossing(&upper, SER_TARGET).value(),
        bracket: point.bracket(),
        exact_steps,
        note,
    }
}

/// Holds when steps grow linearly in L (R² above [`LINEAR_R2`]) with a positive slope.
fn ser_verdict(fit: Option<&LinearFit>, reached: usize, unreached: &[usize]) -> Verdict {
    match fit {
        Some(f) if f.n >= 3 => {
            let r2 = f.r_squared.unwrap_or(0.0);
            let linear = r2 > LINEAR_R2;
            let positive = f.slope_ci.0 > 0.0;
            let text = format!(
                "steps ≈ {} + {}·L (slope 95% CI [{}, {}]), R² = {:.3} over {} lengths",
                sig(f.intercept),
                sig(f.slope),
                sig(f.slope_ci.0),
                sig(f.slope_ci.1),
                r2,
                f.n
            );
            let skipped = if unreached.is_empty() {
                String::new()
            } else {
                format!("; lengths without an estimate: {unreached:?}")
            };
            if linear && positive {
                Verdict {
                    status: VerdictStatus::Holds,
                    reason: format!("{text}{skipped}"),
                }
            } else {
                Verdict {
                    status: VerdictStatus::DoesNotHold,
                    reason: format!(
                        "{text}{skipped}: {}",
                        match (linear, positive) {
                            (false, false) => "not linear and no positive slope",
                            (false, true) => "not linear",
                            _ => "no positive slope",
                        }
                    ),
                }
            }
        }
        Some(f) => Verdict {
            status: VerdictStatus::NotEnoughData,
            reason: format!(
                "{} lengths with an estimate; a verdict needs at least 3 (slope {}){}",
                f.n,
                sig(f.slope),
                if unreached.is_empty() {
                    String::new()
                } else {
                    format!("; lengths without an estimate: {unreached:?}")
                }
            ),
        },
        None => Verdict {
            status: VerdictStatus::NotEnoughData,
            reason: format!(
                "{} length(s) with an estimate; a fit needs 2{}",
                reached,
                if unreached.is_empty() {
                    String::new()
                } else {
                    format!(" (widen the step grid: no estimate at {unreached:?})")
                }
            ),
        },
    }
}

/// Where a measured SER curve crosses the target.
#[derive(Debug, Clone, PartialEq)]
pub(super) enum Crossing {
    /// Between grid steps `lo` (SER above the target) and `hi` (at or below it from there on).
    At {
        value: f64,
        lo: usize,
        hi: usize,
    },
    /// At or below the target already at the first grid step.
    NeverAbove,
    /// Above the target at the last grid step.
    NotReached,
    Empty,
}

impl Crossing {
    pub(super) fn value(&self) -> Option<f64> {
        match self {
            Crossing::At { value, .. } => Some(*value),
            _ => None,
        }
    }
    pub(super) fn bracket(&self) -> (Option<usize>, Option<usize>) {
        match self {
            Crossing::At { lo, hi, .. } => (Some(*lo), Some(*hi)),
            _ => (None, None),
        }
    }
}

/// The crossing of `(steps, ser)` points (ascending steps) with `target` (module docs).
pub(super) fn crossing(curve: &[(f64, f64)], target: f64) -> Crossing {
    let Some(last) = curve.last() else {
        return Crossing::Empty;
    };
    if last.1 > target {
        return Crossing::NotReached;
    }
    // The first index from which every point is at or below the target.
    let mut j = curve.len() - 1;
    while j > 0 && curve[j - 1].1 <= target {
        j -= 1;
    }
    if j == 0 {
        return Crossing::NeverAbove;
    }
    let (t0, s0) = curve[j - 1];
    let (t1, s1) = curve[j];
    let (x0, x1) = (t0.ln(), t1.ln());
    let transformed = |s: f64| (-(1.0 - s).ln()).ln();
    let x = if s0 < 1.0 && s1 > 0.0 {
        let (y0, y1, yt) = (transformed(s0), transformed(s1), transformed(target));
        x0 + (yt - y0) * (x1 - x0) / (y1 - y0)
    } else {
        x0 + (target - s0) * (x1 - x0) / (s1 - s0)
    };
    Crossing::At {
        value: x.exp().clamp(t0, t1),
        lo: t0 as usize,
        hi: t1 as usize,
    }
}
