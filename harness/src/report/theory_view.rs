//! The report's "Theorem checks" section: the verdict rows and the plots of
//! [`crate::theory::TheoryReport`] (kept apart from `report/mod.rs`, which only places them).

use super::svg::{Chart, HLine, Marker, Point, Scale, Series, PALETTE};
use super::{fmt_num, Plot};
use crate::theory::{SerRole, TheoryReport, Verdict};
use serde::Serialize;

/// One row of the theorem-check table.
#[derive(Debug, Serialize)]
pub struct TheoryRow {
    pub theorem: &'static str,
    pub task: String,
    pub label: String,
    /// The measured fit in words.
    pub measurement: String,
    pub status: &'static str,
    pub reason: String,
    /// Shown for comparison; outside the theorem's verdict.
    pub supplementary: bool,
    /// Theorem 4.2: one fit per step count, with the interval that decides it.
    pub fits: Vec<FitRow>,
}

/// One step count of a Theorem 4.2 task: the slope of excess TER against `ln L`, its plain
/// 95% interval, and the Bonferroni interval (level `1 − 0.05/m`) that decides the verdict
/// (`theory` module docs: it holds when that interval contains 0 or lies below it).
#[derive(Debug, Serialize)]
pub struct FitRow {
    pub steps: usize,
    pub slope: String,
    pub ci95: String,
    /// e.g. `98.75%`.
    pub family_level: String,
    pub ci_family: String,
    /// Where the deciding interval lies: `contains 0`, `below 0`, `above 0`, or empty.
    pub position: &'static str,
    pub status: &'static str,
}

/// What the report shows of a theory analysis.
#[derive(Debug, Serialize)]
pub struct TheoryView {
    pub claim_4_2: Option<String>,
    pub check_4_2: Option<String>,
    pub verdict_4_2: Option<(&'static str, String)>,
    pub claim_4_4: Option<String>,
    pub check_4_4: Option<String>,
    pub verdict_4_4: Option<(&'static str, String)>,
    pub rows: Vec<TheoryRow>,
    pub plots: Vec<Plot>,
}

/// A step count's fit as the table shows it.
fn fit_row(f: &crate::theory::TerFit) -> FitRow {
    let interval =
        |(lo, hi): (f64, f64)| format!("[{}, {}]", fmt_num(Some(lo), 4), fmt_num(Some(hi), 4));
    FitRow {
        steps: f.steps,
        slope: f
            .fit
            .as_ref()
            .map(|x| fmt_num(Some(x.slope), 4))
            .unwrap_or_else(|| "—".into()),
        ci95: f
            .fit
            .as_ref()
            .map(|x| interval(x.slope_ci))
            .unwrap_or_else(|| "—".into()),
        family_level: format!("{}%", fmt_sig(100.0 * f.family_confidence)),
        ci_family: f
            .slope_ci_family
            .map(interval)
            .unwrap_or_else(|| "—".into()),
        position: match f.slope_ci_family {
            _ if f.verdict.status == crate::theory::VerdictStatus::NotEnoughData => "",
            Some((_, hi)) if hi < 0.0 => "below 0",
            Some((lo, _)) if lo > 0.0 => "above 0",
            Some(_) => "contains 0",
            None => "",
        },
        status: f.verdict.status.label(),
    }
}

/// A percentage with as many decimals as it needs (95, 98.75, 99.1667 → 99.17).
fn fmt_sig(v: f64) -> String {
    let s = format!("{v:.2}");
    s.trim_end_matches('0').trim_end_matches('.').to_string()
}

fn verdict(v: &Verdict) -> (&'static str, String) {
    (v.status.label(), v.reason.clone())
}

/// The rows and plots of `t`.
pub fn view(t: &TheoryReport) -> TheoryView {
    let mut rows = Vec::new();
    let mut plots = Vec::new();
    if let Some(th) = &t.theorem_4_2 {
        for task in &th.tasks {
            rows.push(TheoryRow {
                theorem: "4.2",
                task: task.task.clone(),
                label: task.label.clone(),
                measurement: format!(
                    "slope of excess TER (TER/optimum − 1) against ln L, L ∈ {:?}; the verdict at each step count is decided by the Bonferroni interval",
                    task.lengths
                ),
                status: task.verdict.status.label(),
                reason: task.verdict.reason.clone(),
                supplementary: false,
                fits: task.fits.iter().map(fit_row).collect(),
            });
            plots.push(ter_plot(task));
        }
    }
    if let Some(th) = &t.theorem_4_4 {
        for task in &th.tasks {
            let fit = task.fit.as_ref().map(|f| {
                format!(
                    "steps ≈ {} + {}·L (slope 95% CI [{}, {}]), R² {}",
                    fmt_num(Some(f.intercept), 1),
                    fmt_num(Some(f.slope), 3),
                    fmt_num(Some(f.slope_ci.0), 3),
                    fmt_num(Some(f.slope_ci.1), 3),
                    fmt_num(f.r_squared, 3)
                )
            });
            let needed: Vec<String> = task
                .steps_needed
                .iter()
                .map(|s| format!("L {}: {}", s.length, fmt_num(s.steps, 1)))
                .collect();
            rows.push(TheoryRow {
                theorem: "4.4",
                task: task.task.clone(),
                label: task.label.clone(),
                measurement: format!(
                    "steps for SER ≤ {}: {}; {}",
                    th.target_ser,
                    needed.join(", "),
                    fit.unwrap_or_else(|| "no fit".into())
                ),
                status: task.verdict.status.label(),
                reason: task.verdict.reason.clone(),
                supplementary: task.role == SerRole::Supplementary,
                fits: Vec::new(),
            });
            plots.push(steps_plot(task, th.target_ser));
        }
    }
    TheoryView {
        claim_4_2: t.theorem_4_2.as_ref().map(|t| t.claim.clone()),
        check_4_2: t.theorem_4_2.as_ref().map(|t| t.check.clone()),
        verdict_4_2: t.theorem_4_2.as_ref().map(|t| verdict(&t.verdict)),
        claim_4_4: t.theorem_4_4.as_ref().map(|t| t.claim.clone()),
        check_4_4: t.theorem_4_4.as_ref().map(|t| t.check.clone()),
        verdict_4_4: t.theorem_4_4.as_ref().map(|t| verdict(&t.verdict)),
        rows,
        plots,
    }
}

/// Theorem 4.2: TER / optimum against steps, one line per length.
fn ter_plot(task: &crate::theory::TerTask) -> Plot {
    let series = task
        .lengths
        .iter()
        .enumerate()
        .map(|(i, &l)| Series {
            name: format!("L = {l}"),
            color: PALETTE[i % PALETTE.len()].to_string(),
            points: task
                .points
                .iter()
                .filter(|p| p.length == l)
                .map(|p| Point {
                    x: p.steps as f64,
                    y: p.ratio,
                    lo: p.ratio_ci.map(|c| c.0),
                    hi: p.ratio_ci.map(|c| c.1),
                    tip: format!(
                        "L = {l}, {} steps: TER/optimum {}",
                        p.steps,
                        fmt_num(Some(p.ratio), 4)
                    ),
                })
                .collect(),
            line: true,
            band: true,
            marker: Marker::Circle,
        })
        .collect();
    let chart = Chart {
        title: format!("{}: TER / optimum vs steps, per L", task.task),
        x_label: "sampling steps (log scale)".into(),
        y_label: "TER / optimal TER".into(),
        x_scale: Scale::Log2,
        y_scale: Scale::Linear,
        y_zero: false,
        series,
        hlines: vec![HLine {
            y: 1.0,
            band: None,
            label: "the exact optimum".into(),
            color: "#111".into(),
            dash: "2 3",
            text: "optimum".into(),
        }],
        frontier: None,
        x_hint: None,
        message: None,
        key: true,
    };
    Plot {
        title: chart.title.clone(),
        svg: chart.has_data().then(|| chart.render()),
        note: Some(format!(
            "One line per length L ∈ {:?} (key under the plot); bands: 95% CI; dotted: the exact optimum. Theorem 4.2: the lines coincide as L grows.",
            task.lengths
        )),
    }
}

/// Theorem 4.4: steps needed for the target SER against L, with the fitted line.
fn steps_plot(task: &crate::theory::SerTask, target: f64) -> Plot {
    let mut series = vec![Series {
        name: "measured (bars: Wilson-bound range)".into(),
        color: PALETTE[0].to_string(),
        points: task
            .steps_needed
            .iter()
            .filter_map(|s| {
                s.steps.map(|y| Point {
                    x: s.length as f64,
                    y,
                    lo: s.steps_low,
                    hi: s.steps_high,
                    tip: format!(
                        "L = {}: {} steps for SER ≤ {target}",
                        s.length,
                        fmt_num(Some(y), 1)
                    ),
                })
            })
            .collect(),
        line: false,
        band: false,
        marker: Marker::Circle,
    }];
    let exact: Vec<Point> = task
        .steps_needed
        .iter()
        .filter_map(|s| {
            s.exact_steps.map(|e| Point {
                x: s.length as f64,
                y: e as f64,
                lo: None,
                hi: None,
                tip: format!("L = {}: exactly {e} steps (closed form)", s.length),
            })
        })
        .collect();
    if !exact.is_empty() {
        series.push(Series {
            name: "exact (closed form)".into(),
            color: PALETTE[4].to_string(),
            points: exact,
            line: false,
            band: false,
            marker: Marker::Square,
        });
    }
    if let Some(fit) = &task.fit {
        let xs = task.lengths.iter().map(|&l| l as f64);
        series.push(Series {
            name: "least-squares line".into(),
            color: "#666".into(),
            points: xs
                .map(|x| Point {
                    x,
                    y: fit.intercept + fit.slope * x,
                    lo: None,
                    hi: None,
                    tip: format!("fit at L = {x}"),
                })
                .collect(),
            line: true,
            band: false,
            marker: Marker::Circle,
        });
    }
    let chart = Chart {
        title: format!("{}: steps for SER ≤ {target} vs L", task.task),
        x_label: "sequence length L".into(),
        y_label: "sampling steps needed".into(),
        x_scale: Scale::Linear,
        y_scale: Scale::Linear,
        y_zero: true,
        series,
        hlines: Vec::new(),
        frontier: None,
        x_hint: None,
        message: None,
        key: true,
    };
    Plot {
        title: chart.title.clone(),
        svg: chart.has_data().then(|| chart.render()),
        note: Some(match task.role {
            SerRole::Primary => {
                "Circles: interpolated on the step grid, bars from the Wilson bounds; squares: the exact steps from the closed form (where the task has one); grey: the least-squares line. Theorem 4.4: linear growth.".into()
            }
            SerRole::Supplementary => {
                "Shown for comparison (n-gram SER variant): outside Theorem 4.4's verdict.".into()
            }
        }),
    }
}
