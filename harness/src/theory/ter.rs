//! Theorem 4.2: excess TER against log L at each step count.

use super::*;

// ---------------------------------------------------------------------------------------------
// Theorem 4.2.

pub(super) fn theorem_4_2(groups: &[(Kind, Vec<Obs>)]) -> Theorem42 {
    let tasks: Vec<TerTask> = groups.iter().map(|(_, obs)| ter_task(obs)).collect();
    let verdict = combine(
        tasks.iter().map(|t| (t.task.as_str(), &t.verdict)),
        "every TER n-gram task",
    );
    Theorem42 {
        claim: "Theorem 4.2 (Feng et al.): for an n-gram language, an MDM reaches a token error \
                rate (generative perplexity) within ε of the optimum with a number of sampling \
                steps that does not depend on the sequence length L."
            .into(),
        check: format!(
            "Exact oracle, MDLM ancestral sampling: at each fixed step count the excess TER \
             (TER/optimum − 1) is fitted against ln L by least squares; the check holds when, at \
             every step count, the slope's confidence interval contains 0 or lies below it \
             (Bonferroni intervals at level 1 − {FAMILY_ALPHA}/m over a task's m step counts)."
        ),
        tasks,
        verdict,
    }
}

fn ter_task(obs: &[Obs]) -> TerTask {
    let first = &obs[0];
    let lengths = distinct(obs.iter().map(|o| o.cell.cell.length));
    let steps = distinct(obs.iter().map(steps_of));
    let mut points: Vec<TerPoint> = obs
        .iter()
        .filter_map(|o| {
            let s = o.summary;
            let (ter, opt) = (s.ter?, s.optimal_ter?);
            if !(ter.is_finite() && opt.is_finite() && opt > 0.0) {
                return None;
            }
            let ratio = ter / opt;
            Some(TerPoint {
                steps: steps_of(o),
                length: o.cell.cell.length,
                n: s.n,
                ter,
                ter_ci: s.ter_ci,
                optimal_ter: opt,
                ratio,
                ratio_ci: s.ter_ci.map(|(lo, hi)| (lo / opt, hi / opt)),
                excess: ratio - 1.0,
            })
        })
        .collect();
    points.sort_by_key(|p| (p.steps, p.length));
    let m = steps.len().max(1);
    let family_confidence = 1.0 - FAMILY_ALPHA / m as f64;
    let fits: Vec<TerFit> = steps
        .iter()
        .map(|&st| {
            let at: Vec<&TerPoint> = points.iter().filter(|p| p.steps == st).collect();
            let x: Vec<f64> = at.iter().map(|p| (p.length as f64).ln()).collect();
            let y: Vec<f64> = at.iter().map(|p| p.excess).collect();
            let se: Option<Vec<f64>> = at
                .iter()
                .map(|p| p.ratio_ci.map(|(lo, hi)| (hi - lo) / (2.0 * Z95)))
                .collect();
            let fit = fit_line(&x, &y, se.as_deref(), 0.95);
            let family = fit_line(&x, &y, se.as_deref(), family_confidence);
            let growth = fit.as_ref().map(|f| {
                let (lo, hi) = (x.iter().cloned().fold(f64::INFINITY, f64::min), x.iter().cloned().fold(f64::NEG_INFINITY, f64::max));
                f.slope * (hi - lo)
            });
            let slope_ci_family = family.as_ref().map(|f| f.slope_ci);
            let verdict = match (&fit, slope_ci_family) {
                (Some(f), Some((lo, hi))) if f.n >= 3 => {
                    if lo <= 0.0 {
                        Verdict {
                            status: VerdictStatus::Holds,
                            reason: format!(
                                "slope {} per ln L, {:.1}% CI [{}, {}] {} 0",
                                sig(f.slope),
                                100.0 * family_confidence,
                                sig(lo),
                                sig(hi),
                                if hi < 0.0 { "below" } else { "contains" }
                            ),
                        }
                    } else {
                        Verdict {
                            status: VerdictStatus::DoesNotHold,
                            reason: format!(
                                "excess TER grows with L: slope {} per ln L, {:.1}% CI [{}, {}] above 0",
                                sig(f.slope),
                                100.0 * family_confidence,
                                sig(lo),
                                sig(hi)
                            ),
                        }
                    }
                }
                (Some(f), _) => Verdict {
                    status: VerdictStatus::NotEnoughData,
                    reason: format!(
                        "{} lengths; a verdict needs at least 3 (slope {})",
                        f.n,
                        sig(f.slope)
                    ),
                },
                (None, _) => Verdict {
                    status: VerdictStatus::NotEnoughData,
                    reason: format!(
                        "{} length(s) with a finite TER at {st} steps; a fit needs 2",
                        at.len()
                    ),
                },
            };
            TerFit {
                steps: st,
                fit,
                slope_ci_family,
                family_confidence,
                growth_over_range: growth,
                verdict,
            }
        })
        .collect();
    let names: Vec<String> = fits.iter().map(|f| format!("{} steps", f.steps)).collect();
    let verdict = combine(
        names
            .iter()
            .map(String::as_str)
            .zip(fits.iter().map(|f| &f.verdict)),
        "every step count",
    );
    TerTask {
        task: first.cell.cell.task.name.clone(),
        label: label_of(obs),
        model: first.summary.model.clone(),
        sampler: sampler_label(first.cell),
        seed: first.cell.cell.seed,
        lengths,
        steps,
        points,
        fits,
        verdict,
    }
}
