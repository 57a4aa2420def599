//! "Likelihood estimates": a suite's `likelihood:` section (`crate::likelihood`) per task —
//! each model's answer against the task's exact log-likelihood: the ELBO's bias (mean over
//! rows of estimate − exact, with its standard error over rows) and spread (the standard
//! deviation of one estimate across independent mask seeds) as functions of `mc_num`, the
//! autoregressive model's exact answer as a reference, and the multiple-choice accuracy each
//! implies against the exact choice. Runs without `likelihood.jsonl` get no section.

use super::svg::{Chart, HLine, Marker, Point, Scale, Series, PALETTE};
use super::{anchor, fmt_num, Plot};
use crate::likelihood::LikelihoodRecord;
use serde::Serialize;

/// One task's likelihood section.
#[derive(Debug, Serialize)]
pub struct LikelihoodSection {
    pub task: String,
    pub anchor: String,
    pub length: usize,
    pub context: usize,
    /// Rows measured (those whose exact value and every estimate are finite).
    pub rows: usize,
    pub repeats: usize,
    /// Multiple-choice items and options per item.
    pub items: usize,
    pub choices: usize,
    /// Mean exact `log q(y | c)` over the rows (nats).
    pub exact_mean: Option<f64>,
    pub table: Vec<LikelihoodRow>,
    pub bias_plot: Plot,
    pub spread_plot: Plot,
    /// Measurements that failed, as "model (mc_num): cause".
    pub failures: Vec<String>,
}

/// One (model, `mc_num`) measurement.
#[derive(Debug, Clone, Serialize)]
pub struct LikelihoodRow {
    pub model: String,
    pub oracle: bool,
    pub method: String,
    pub mc_num: Option<usize>,
    /// Mean over rows of (mean estimate − exact), nats, and its standard error over rows.
    pub bias: Option<f64>,
    pub bias_se: Option<f64>,
    /// Standard deviation of one estimate over the mask seeds (root mean per-row variance).
    pub spread: Option<f64>,
    /// The mean standard error the model reported for one estimate.
    pub reported_se: Option<f64>,
    /// Items whose pick equals the exact choice, and the fraction.
    pub mc_agree: usize,
    pub mc_accuracy: Option<f64>,
    /// Rows left out because a value was −∞ (probability 0).
    pub infinite_rows: usize,
    pub nfe: u64,
    pub wall_seconds: f64,
}

fn mean(v: &[f64]) -> Option<f64> {
    (!v.is_empty()).then(|| v.iter().sum::<f64>() / v.len() as f64)
}

/// Sample variance (n − 1); `None` below two values.
fn variance(v: &[f64]) -> Option<f64> {
    let m = mean(v)?;
    (v.len() > 1).then(|| v.iter().map(|x| (x - m).powi(2)).sum::<f64>() / (v.len() - 1) as f64)
}

/// The figures of one record.
pub fn row_of(r: &LikelihoodRecord) -> LikelihoodRow {
    let (mut diffs, mut variances, mut infinite) = (Vec::new(), Vec::new(), 0);
    for (i, exact) in r.exact.iter().enumerate() {
        let estimates: Option<Vec<f64>> = r
            .estimates
            .iter()
            .map(|e| e.get(i).copied().flatten())
            .collect();
        match (exact, estimates) {
            (Some(e), Some(est)) if !est.is_empty() => {
                diffs.push(mean(&est).unwrap_or(f64::NAN) - e);
                variances.extend(variance(&est));
            }
            _ => infinite += 1,
        }
    }
    let mc_agree = r.picked.iter().zip(&r.gold).filter(|(a, b)| a == b).count();
    LikelihoodRow {
        model: r.model.clone(),
        oracle: r.oracle,
        method: r.method.clone(),
        mc_num: r.mc_num,
        bias: mean(&diffs),
        bias_se: variance(&diffs).map(|v| (v / diffs.len() as f64).sqrt()),
        spread: mean(&variances).map(f64::sqrt),
        reported_se: r.mean_std_error,
        mc_agree,
        mc_accuracy: (!r.gold.is_empty()).then(|| mc_agree as f64 / r.gold.len() as f64),
        infinite_rows: infinite,
        nfe: r.nfe,
        wall_seconds: r.wall_seconds,
    }
}

/// The section of every task with records, in the order the tasks first appear.
pub fn sections(records: &[LikelihoodRecord]) -> Vec<LikelihoodSection> {
    let mut tasks: Vec<&str> = Vec::new();
    for r in records {
        if !tasks.contains(&r.task.as_str()) {
            tasks.push(&r.task);
        }
    }
    tasks.into_iter().map(|t| section(t, records)).collect()
}

fn section(task: &str, records: &[LikelihoodRecord]) -> LikelihoodSection {
    // A resumed run may have measured a (model, mc_num) twice: the last line counts.
    let mut latest: Vec<&LikelihoodRecord> = Vec::new();
    for r in records.iter().filter(|r| r.task == task) {
        latest.retain(|o| o.key() != r.key());
        latest.push(r);
    }
    let failures = latest
        .iter()
        .filter_map(|r| {
            let at = r
                .mc_num
                .map(|m| format!(" (mc_num {m})"))
                .unwrap_or_default();
            r.error.as_ref().map(|e| format!("{}{at}: {e}", r.model))
        })
        .collect();
    let ok: Vec<&LikelihoodRecord> = latest.into_iter().filter(|r| r.error.is_none()).collect();
    let mut table: Vec<LikelihoodRow> = ok.iter().map(|r| row_of(r)).collect();
    table.sort_by_key(|row| {
        (
            !row.oracle,
            row.mc_num.is_none(),
            row.model.clone(),
            row.mc_num,
        )
    });
    let first = ok.first();
    let exact: Vec<f64> = first
        .map(|r| r.exact.iter().flatten().copied().collect())
        .unwrap_or_default();
    LikelihoodSection {
        task: task.into(),
        anchor: format!("likelihood-{}", anchor(task)),
        length: first.map_or(0, |r| r.length),
        context: first.map_or(0, |r| r.context),
        rows: first.map_or(0, |r| r.exact.len()),
        repeats: ok.iter().map(|r| r.estimates.len()).max().unwrap_or(0),
        items: first.map_or(0, |r| r.gold.len()),
        choices: first.map_or(0, |r| r.choices),
        exact_mean: mean(&exact),
        bias_plot: plot(task, &table, Figure::Bias),
        spread_plot: plot(task, &table, Figure::Spread),
        table,
        failures,
    }
}

#[derive(Clone, Copy, PartialEq)]
enum Figure {
    Bias,
    Spread,
}

fn plot(task: &str, table: &[LikelihoodRow], figure: Figure) -> Plot {
    let mut models: Vec<&str> = Vec::new();
    for row in table.iter().filter(|r| r.mc_num.is_some()) {
        if !models.contains(&row.model.as_str()) {
            models.push(&row.model);
        }
    }
    let series: Vec<Series> = models
        .iter()
        .enumerate()
        .map(|(i, &model)| Series {
            name: model.into(),
            color: PALETTE[i % PALETTE.len()].into(),
            points: table
                .iter()
                .filter(|r| r.model == model)
                .filter_map(|r| point(r, figure))
                .collect(),
            line: true,
            band: figure == Figure::Bias,
            marker: Marker::Circle,
        })
        .collect();
    let mut hlines = Vec::new();
    if figure == Figure::Bias {
        hlines.push(HLine {
            y: 0.0,
            band: None,
            label: "exact log-likelihood".into(),
            color: "#111".into(),
            dash: "",
            text: "exact".into(),
        });
        for row in table.iter().filter(|r| r.mc_num.is_none()) {
            let Some(bias) = row.bias else { continue };
            hlines.push(HLine {
                y: bias,
                band: None,
                label: format!(
                    "{} (exact answer): {} nats vs the language",
                    row.model,
                    fmt_num(Some(bias), 3)
                ),
                color: "#888".into(),
                dash: "4 3",
                text: row.model.clone(),
            });
        }
    }
    let (what, y_label) = match figure {
        Figure::Bias => ("bias", "mean estimate − exact (nats)"),
        Figure::Spread => ("spread", "SD of one estimate (nats)"),
    };
    let chart = Chart {
        title: format!("{task}: ELBO {what} vs mc_num"),
        x_label: "mc_num (log)".into(),
        y_label: y_label.into(),
        x_scale: Scale::Log2,
        y_scale: if figure == Figure::Spread {
            Scale::Log10
        } else {
            Scale::Linear
        },
        y_zero: figure == Figure::Bias,
        series,
        hlines,
        frontier: None,
        x_hint: None,
        message: None,
        key: true,
    };
    let drawn = chart.series.iter().any(|s| !s.points.is_empty());
    Plot {
        title: format!("ELBO {what} vs mc_num"),
        svg: drawn.then(|| chart.render()),
        note: (!drawn).then(|| format!("No chart: no ELBO estimate of {task} was measured.")),
    }
}

fn point(r: &LikelihoodRow, figure: Figure) -> Option<Point> {
    let x = r.mc_num? as f64;
    match figure {
        Figure::Bias => {
            let y = r.bias?;
            let half = r.bias_se.map(|se| 1.96 * se);
            Some(Point {
                x,
                y,
                lo: half.map(|h| y - h),
                hi: half.map(|h| y + h),
                tip: format!(
                    "{}, mc_num {x}: bias {} ± {} nats",
                    r.model,
                    fmt_num(Some(y), 3),
                    fmt_num(half, 3)
                ),
            })
        }
        Figure::Spread => {
            let y = r.spread.filter(|s| *s > 0.0)?;
            Some(Point {
                x,
                y,
                lo: None,
                hi: None,
                tip: format!(
                    "{}, mc_num {x}: spread {} nats",
                    r.model,
                    fmt_num(Some(y), 3)
                ),
            })
        }
    }
}

impl LikelihoodSection {
    /// The section in `report.json`: the figures without the SVG.
    pub fn twin(&self) -> serde_json::Value {
        serde_json::json!({
            "task": self.task,
            "length": self.length,
            "context": self.context,
            "rows": self.rows,
            "repeats": self.repeats,
            "items": self.items,
            "choices": self.choices,
            "exact_mean": self.exact_mean,
            "table": self.table,
            "failures": self.failures,
        })
    }
}
