//! The report's opening summary: one generated sentence per task naming its best finding —
//! which diffusion sampler matches the reference at the best speed, or that none does and
//! which comes closest — built from the same verdicts as the verdict tables.

use super::verdict::{MetricVerdict, Verdict, VerdictKind};
use serde::Serialize;

/// One task's summary sentence. Series names are in backticks; the page sets them as code.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct HeadlineLine {
    pub task: String,
    pub anchor: String,
    pub sentence: String,
    /// `sentence` after the task's name, split at its backticks: the odd pieces (counting
    /// from 0) are series names.
    pub pieces: Vec<String>,
}

/// One sentence per task of `tasks` (in that order), from the task's verdicts.
pub fn summarize(tasks: &[&str], verdicts: &[Verdict]) -> Vec<HeadlineLine> {
    tasks
        .iter()
        .map(|task| {
            let of_task: Vec<&Verdict> = verdicts.iter().filter(|v| v.task == *task).collect();
            let sentence = sentence(task, &of_task);
            HeadlineLine {
                task: task.to_string(),
                anchor: format!("task-{}", super::anchor(task)),
                pieces: sentence
                    .strip_prefix(task)
                    .unwrap_or(&sentence)
                    .split('`')
                    .map(str::to_string)
                    .collect(),
                sentence,
            }
        })
        .collect()
}

fn sentence(task: &str, verdicts: &[&Verdict]) -> String {
    let generated: Vec<&Verdict> = verdicts.iter().copied().filter(|v| !v.replay).collect();
    let replayed: Vec<&Verdict> = verdicts.iter().copied().filter(|v| v.replay).collect();
    if verdicts.is_empty() {
        return format!("{task}: no diffusion cell finished, so there is no verdict.");
    }
    if generated.is_empty() {
        return format!("{task} (replay): {}", replay_clause(&replayed));
    }
    let mut out = match generated[0].kind {
        VerdictKind::Formal => formal(task, &generated),
        VerdictKind::Text => text(task, &generated),
    };
    if !replayed.is_empty() {
        out.push_str(&format!(" Replayed: {}", replay_clause(&replayed)));
    }
    out
}

fn steps_word(s: usize) -> String {
    if s == 1 {
        "1 step".into()
    } else {
        format!("{s} steps")
    }
}

/// The matching series, fastest first (series without a speedup last, then fewest steps).
fn fastest_first<'a>(verdicts: &[&'a Verdict]) -> Vec<&'a Verdict> {
    let mut matched: Vec<&Verdict> = verdicts
        .iter()
        .copied()
        .filter(|v| v.match_steps.is_some())
        .collect();
    matched.sort_by(|a, b| {
        let speed = |v: &Verdict| v.match_speedup.unwrap_or(f64::NEG_INFINITY);
        speed(b)
            .total_cmp(&speed(a))
            .then(a.match_steps.cmp(&b.match_steps))
    });
    matched
}

/// "`s` matches AR's TER and SER from 64 steps at 1.04× AR's speed; no other sampler is
/// faster at equal quality."
fn best_clause(matched: &[&Verdict], what: &str) -> String {
    let best = matched[0];
    let speed = match best.match_speedup {
        Some(x) => format!(" at {x:.2}× AR's speed"),
        None => String::new(),
    };
    let others = match matched.len() - 1 {
        0 => "no other sampler matches".to_string(),
        n if best.match_speedup.is_some() => format!(
            "no other sampler is faster at equal quality ({n} other{} match{}, slower)",
            if n == 1 { "" } else { "s" },
            if n == 1 { "es" } else { "" }
        ),
        1 => "1 other sampler also matches".to_string(),
        n => format!("{n} other samplers also match"),
    };
    format!(
        "`{}` {what} from {}{speed}; {others}.",
        best.series,
        steps_word(best.match_steps.unwrap_or(0))
    )
}

fn formal(task: &str, verdicts: &[&Verdict]) -> String {
    let with_ar = verdicts.iter().any(|v| v.baseline.is_some());
    let (reference, matching) = if with_ar {
        ("AR's", "matches AR's TER and SER")
    } else {
        (
            "the exact optimum's",
            "is consistent with the exact optimum (TER) and zero SER",
        )
    };
    let matched = fastest_first(verdicts);
    if !matched.is_empty() {
        return format!("{task}: {}", best_clause(&matched, matching));
    }
    // Nobody matches both: the series matching one of them from the fewest steps.
    let partial = |steps: fn(&Verdict) -> Option<usize>, which: &str| {
        verdicts
            .iter()
            .filter_map(|v| steps(v).map(|s| (s, v)))
            .min_by_key(|(s, _)| *s)
            .map(|(s, v)| format!("`{}` matches its {which} from {}", v.series, steps_word(s)))
    };
    let closest = [
        partial(|v| v.ser_match_steps, "SER"),
        partial(|v| v.ter_match_steps, "TER"),
    ]
    .into_iter()
    .flatten()
    .collect::<Vec<_>>();
    if closest.is_empty() {
        format!(
            "{task}: no diffusion sampler matches {reference} TER or SER at any step count tested."
        )
    } else {
        format!(
            "{task}: no diffusion sampler matches {reference} TER and SER together; {}.",
            closest.join(", ")
        )
    }
}

fn labels(metrics: &[MetricVerdict]) -> String {
    let l: Vec<&str> = metrics.iter().map(|m| m.label.as_str()).collect();
    match l.len() {
        0 => String::new(),
        1 => l[0].to_string(),
        n => format!("{} and {}", l[..n - 1].join(", "), l[n - 1]),
    }
}

fn text(task: &str, verdicts: &[&Verdict]) -> String {
    let metrics = &verdicts[0].metrics;
    if metrics.is_empty() {
        return format!("{task}: the task declares no quality metric to judge its samplers on.");
    }
    let primary = &metrics[0];
    // Every series' value of metric `label` (verdicts of a task list the same metrics), the
    // best first.
    let ranked = |label: &str| {
        let mut rows: Vec<(&Verdict, &MetricVerdict, String)> = verdicts
            .iter()
            .filter_map(|v| {
                let mv = v.metrics.iter().find(|x| x.label == label)?;
                Some((*v, mv, mv.best_short.clone()?))
            })
            .collect();
        rows.sort_by(|a, b| {
            let (x, y) = (
                a.1.best_value.unwrap_or(f64::NAN),
                b.1.best_value.unwrap_or(f64::NAN),
            );
            if a.1.higher_is_better {
                y.total_cmp(&x)
            } else {
                x.total_cmp(&y)
            }
        });
        rows
    };
    if verdicts.iter().all(|v| v.baseline.is_none()) {
        let shown: Vec<String> = ranked(&primary.label)
            .into_iter()
            .map(|(v, _, b)| format!("`{}` {b}", v.series))
            .collect();
        return format!(
            "{task}: no AR baseline, so nothing is judged; {}: {}.",
            primary.label,
            shown.join(", ")
        );
    }
    let matched = fastest_first(verdicts);
    if let Some(best) = matched.first() {
        // Named: the metrics it was judged on; the others (no signal, no AR value) said so.
        let (judged, unjudged): (Vec<MetricVerdict>, Vec<MetricVerdict>) =
            best.metrics.iter().cloned().partition(|m| m.judged);
        let mut out = format!(
            "{task}: {}",
            best_clause(&matched, &format!("reaches AR's {}", labels(&judged)))
        );
        if !unjudged.is_empty() {
            out.pop();
            out.push_str(&format!(
                " ({} not judged: {}).",
                labels(&unjudged),
                if unjudged.iter().all(|m| m.no_signal.is_some()) {
                    "no signal"
                } else {
                    "no signal or no AR value"
                }
            ));
        }
        return out;
    }
    let silent = |m: &MetricVerdict| {
        verdicts
            .iter()
            .all(|v| v.metrics.iter().any(|x| x.label == m.label && !x.judged))
    };
    if metrics.iter().all(|m| m.no_signal.is_some()) && metrics.iter().all(silent) {
        return format!(
            "{task}: AR and every diffusion sampler score {} on {}: no signal.",
            primary
                .no_signal
                .as_deref()
                .and_then(|n| n.strip_prefix("both "))
                .and_then(|n| n.split(':').next())
                .unwrap_or("the worst value"),
            labels(metrics)
        );
    }
    let judged = metrics.iter().find(|m| !silent(m)).unwrap_or(primary);
    let ar = judged
        .baseline_short
        .as_deref()
        .map(|b| format!(" ({b})"))
        .unwrap_or_default();
    // Some series reach AR on this metric but not on all of them: name the earliest.
    let partial = verdicts
        .iter()
        .filter_map(|v| {
            let mv = v.metrics.iter().find(|x| x.label == judged.label)?;
            mv.match_steps.map(|s| (s, v))
        })
        .min_by_key(|(s, _)| *s);
    if let Some((steps, v)) = partial {
        return format!(
            "{task}: no diffusion sampler reaches AR's {} together; `{}` reaches its {}{ar} from {}.",
            labels(metrics),
            v.series,
            judged.label,
            steps_word(steps),
        );
    }
    match ranked(&judged.label).first() {
        Some((v, mv, best)) => format!(
            "{task}: no diffusion sampler reaches AR's {}{ar}; the closest is `{}` with {best}{}.",
            judged.label,
            v.series,
            mv.best_steps
                .map(|s| format!(" at {}", steps_word(s)))
                .unwrap_or_default()
        ),
        None => format!(
            "{task}: no diffusion sampler reaches AR's {}{ar}.",
            judged.label
        ),
    }
}

/// "`canonical · replay` pass@1 100% [100, 100]; replayed, so no speed comparison."
fn replay_clause(replayed: &[&Verdict]) -> String {
    let shown: Vec<String> = replayed
        .iter()
        .map(|v| match v.metrics.first() {
            Some(m) => format!(
                "`{}` {} {}",
                v.series,
                m.label,
                m.best_short.as_deref().unwrap_or("—")
            ),
            None => format!("`{}`", v.series),
        })
        .collect();
    format!("{}; replayed, so no speed comparison.", shown.join(", "))
}

#[cfg(test)]
mod tests {
    use super::super::verdict::{verdict, Headline, Verdict};
    use super::*;
    use crate::metrics::CellSummary;
    use crate::registry::{Better, MetricDecl, MetricDef, MetricKind};
    use serde_json::{json, Value};

    /// A summary row as `summary.json` holds it, with `extra` fields set.
    fn row(task: &str, model: &str, sampler: &str, steps: usize, extra: Value) -> CellSummary {
        let mut v = json!({
            "key": format!("{task}/{model}/{sampler}@{steps}/L64/seed0"),
            "unit": format!("{task}-{model}-{sampler}-{steps}"),
            "task": task, "model": model, "sampler": sampler, "steps": steps,
            "length": 64, "seed": 0, "batch_size": 8, "status": "ok", "n": 200,
            "zero_probability_samples": 0,
        });
        for (k, x) in extra.as_object().unwrap() {
            v[k] = x.clone();
        }
        serde_json::from_value(v).expect("a summary row")
    }

    /// A formal cell: TER and SER with their CIs, NFE, and its speedup against AR.
    fn formal(
        model: &str,
        sampler: &str,
        steps: usize,
        ter: [f64; 3],
        ser: [f64; 3],
        speedup: f64,
    ) -> CellSummary {
        row(
            "3gram-ter",
            model,
            sampler,
            steps,
            json!({
                "ter": ter[0], "ter_ci": [ter[1], ter[2]], "ser": ser[0], "ser_ci": [ser[1], ser[2]],
                "nfe": steps as f64, "speedup": speedup,
            }),
        )
    }

    /// A text cell with one declared rate (`name`: value and CI) and its cost.
    fn text(
        task: &str,
        model: &str,
        sampler: &str,
        steps: usize,
        metric: (&str, MetricKind),
        v: [f64; 3],
        (nfe, speedup): (f64, f64),
    ) -> CellSummary {
        let decl = MetricDecl::new(
            metric.0,
            metric.0.replace("pass_at_", "pass@"),
            metric.1,
            Better::Higher,
        )
        .with_headline();
        row(
            task,
            model,
            sampler,
            steps,
            json!({
                "nfe": nfe, "speedup": speedup,
                "metrics": {metric.0: {"value": v[0], "ci": [v[1], v[2]], "n": 200, "declared": decl}},
            }),
        )
    }

    fn headline_of(name: &str, label: &str, kind: MetricKind) -> Vec<Headline> {
        vec![Headline {
            def: MetricDef::declared(
                &MetricDecl::new(name, label, kind, Better::Higher).with_headline(),
            ),
        }]
    }

    fn judge(
        task: &str,
        series: &[CellSummary],
        baseline: Option<&CellSummary>,
        headline: Option<&[Headline]>,
    ) -> Verdict {
        let points: Vec<&CellSummary> = series.iter().collect();
        let label = format!(
            "{} · {}",
            series[0].model,
            series[0].sampler.as_deref().unwrap_or("?")
        );
        verdict(task, &label, &points, baseline, None, false, headline)
    }

    #[test]
    fn the_fastest_sampler_at_ar_quality_is_named_and_the_others_are_placed() {
        let ar = formal(
            "oracle",
            "left_to_right",
            64,
            [3.158, 3.10, 3.22],
            [0.0, 0.0, 0.018],
            f64::NAN,
        );
        let eb = [formal(
            "oracle",
            "eb",
            64,
            [3.153, 3.09, 3.21],
            [0.0, 0.0, 0.018],
            1.07,
        )];
        let ddpm = [
            formal(
                "oracle",
                "ddpm_cache",
                1,
                [29.9, 28.0, 31.0],
                [0.0, 0.0, 0.018],
                95.1,
            ),
            formal(
                "oracle",
                "ddpm_cache",
                64,
                [3.24, 3.18, 3.30],
                [0.0, 0.0, 0.018],
                0.93,
            ),
        ];
        let low = [
            formal(
                "oracle",
                "low_confidence",
                4,
                [3.63, 3.55, 3.70],
                [0.0, 0.0, 0.018],
                17.3,
            ),
            formal(
                "oracle",
                "low_confidence",
                64,
                [1.76, 1.70, 1.80],
                [0.0, 0.0, 0.018],
                1.08,
            ),
        ];
        let verdicts: Vec<Verdict> = [&eb[..], &ddpm, &low]
            .iter()
            .map(|s| judge("3gram-ter", s, Some(&ar), None))
            .collect();
        // ddpm_cache at 1 step is 95× faster at TER 29.9: that speedup is not at AR's quality.
        assert_eq!(verdicts[1].fewest_speedup, Some(95.1));
        assert!(!verdicts[1].fewest_matches);
        assert_eq!(verdicts[2].ser_match_steps, Some(4));
        assert_eq!(verdicts[2].match_steps, None);
        let lines = summarize(&["3gram-ter"], &verdicts);
        assert_eq!(
            lines[0].sentence,
            "3gram-ter: `oracle · eb` matches AR's TER and SER from 64 steps at 1.07× AR's speed; no other sampler is faster at equal quality (1 other matches, slower)."
        );
        assert_eq!(lines[0].pieces, [": ", "oracle · eb", " matches AR's TER and SER from 64 steps at 1.07× AR's speed; no other sampler is faster at equal quality (1 other matches, slower)."]);
    }

    #[test]
    fn without_ar_the_reference_is_the_optimum_and_partial_matches_are_named() {
        let low = [
            formal(
                "oracle",
                "low_confidence",
                4,
                [3.63, 3.55, 3.70],
                [0.9, 0.85, 0.95],
                f64::NAN,
            ),
            formal(
                "oracle",
                "low_confidence",
                64,
                [1.76, 1.70, 1.80],
                [0.0, 0.0, 0.018],
                f64::NAN,
            ),
        ];
        let points: Vec<&CellSummary> = low.iter().collect();
        let v = verdict(
            "3gram-ser",
            "oracle · low_confidence",
            &points,
            None,
            Some(3.12),
            false,
            None,
        );
        assert_eq!(
            v.match_steps, None,
            "TER 1.76 [1.70, 1.80] excludes the optimum 3.12"
        );
        assert_eq!(
            summarize(&["3gram-ser"], &[v])[0].sentence,
            "3gram-ser: no diffusion sampler matches the exact optimum's TER and SER together; `oracle · low_confidence` matches its SER from 64 steps."
        );
    }

    #[test]
    fn both_at_zero_is_no_signal_and_a_replay_has_no_speed() {
        let pass1 = ("pass_at_1", MetricKind::PassAtK { k: 1 });
        let headline = headline_of("pass_at_1", "pass@1", MetricKind::PassAtK { k: 1 });
        let ar = text(
            "humaneval",
            "qwen",
            "ar",
            32,
            pass1,
            [0.0, 0.0, 0.0],
            (32.0, f64::NAN),
        );
        let llada = [
            text(
                "humaneval",
                "llada",
                "low_confidence",
                8,
                pass1,
                [0.0, 0.0, 0.0],
                (8.0, 1.23),
            ),
            text(
                "humaneval",
                "llada",
                "low_confidence",
                32,
                pass1,
                [0.0, 0.0, 0.0],
                (32.0, 0.23),
            ),
        ];
        // Replayed generations: no network call, and a speedup of 0 from their zero wall time.
        let canonical = [text(
            "humaneval",
            "canonical",
            "replay",
            32,
            pass1,
            [1.0, 1.0, 1.0],
            (0.0, 0.0),
        )];
        let v = judge("humaneval", &llada, Some(&ar), Some(&headline));
        assert_eq!(v.match_steps, None, "0% beside AR's 0% is no match");
        assert_eq!(
            v.metrics[0].no_signal.as_deref(),
            Some("both 0%: no signal")
        );
        assert_eq!(
            (v.baseline_ter, v.ter_match_steps, v.fewest_ter),
            (None, None, None)
        );
        assert!(
            !v.sentence.contains("TER") && !v.sentence.contains("SER"),
            "{}",
            v.sentence
        );
        let r = judge("humaneval", &canonical, Some(&ar), Some(&headline));
        assert!(r.replay);
        assert_eq!(
            (r.fewest_speedup, r.match_speedup, r.fewest_steps),
            (None, None, None)
        );
        assert_eq!(r.metrics[0].match_steps, Some(32), "100% is above AR's 0%");
        assert!(r.metrics[0].better);
        assert_eq!(
            summarize(&["humaneval"], &[v, r])[0].sentence,
            "humaneval: AR and every diffusion sampler score 0% on pass@1: no signal. Replayed: `canonical · replay` pass@1 100% [100, 100]; replayed, so no speed comparison."
        );
        let only = judge("humaneval", &canonical, Some(&ar), Some(&headline));
        assert_eq!(
            summarize(&["humaneval"], &[only])[0].sentence,
            "humaneval (replay): `canonical · replay` pass@1 100% [100, 100]; replayed, so no speed comparison."
        );
    }

    #[test]
    fn a_text_task_below_ar_names_its_closest_sampler() {
        let strict = ("accuracy_strict", MetricKind::Rate);
        let headline = headline_of("accuracy_strict", "accuracy (strict)", MetricKind::Rate);
        let ar = text(
            "gsm8k",
            "ar",
            "ar",
            256,
            strict,
            [0.41, 0.35, 0.47],
            (256.0, f64::NAN),
        );
        let low = [
            text(
                "gsm8k",
                "mdm",
                "low_confidence",
                16,
                strict,
                [0.20, 0.15, 0.26],
                (16.0, 4.1),
            ),
            text(
                "gsm8k",
                "mdm",
                "low_confidence",
                64,
                strict,
                [0.28, 0.23, 0.33],
                (64.0, 1.2),
            ),
        ];
        let ddpm = [text(
            "gsm8k",
            "mdm",
            "ddpm_cache",
            64,
            strict,
            [0.25, 0.19, 0.31],
            (64.0, 1.3),
        )];
        let verdicts = [
            judge("gsm8k", &ddpm, Some(&ar), Some(&headline)),
            judge("gsm8k", &low, Some(&ar), Some(&headline)),
        ];
        assert_eq!(
            verdicts[1].sentence,
            "mdm · low_confidence vs AR (ar · ar): accuracy (strict) never at AR's level (AR 0.410 [0.350, 0.470]); best 0.280 [0.230, 0.330] at 64 steps."
        );
        assert_eq!(
            summarize(&["gsm8k"], &verdicts)[0].sentence,
            "gsm8k: no diffusion sampler reaches AR's accuracy (strict) (41% [35, 47]); the closest is `mdm · low_confidence` with 28% [23, 33] at 64 steps."
        );
        // At 64 steps the CIs overlap: AR's level from there, at that cell's speed.
        let near = [
            text(
                "gsm8k",
                "mdm",
                "low_confidence",
                16,
                strict,
                [0.20, 0.15, 0.26],
                (16.0, 4.1),
            ),
            text(
                "gsm8k",
                "mdm",
                "low_confidence",
                64,
                strict,
                [0.38, 0.32, 0.44],
                (64.0, 1.2),
            ),
        ];
        let v = judge("gsm8k", &near, Some(&ar), Some(&headline));
        assert_eq!(v.match_steps, Some(64));
        assert_eq!(
            summarize(&["gsm8k"], &[v])[0].sentence,
            "gsm8k: `mdm · low_confidence` reaches AR's accuracy (strict) from 64 steps at 1.20× AR's speed; no other sampler matches."
        );
    }
}
