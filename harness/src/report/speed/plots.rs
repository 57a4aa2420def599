//! The price-of-speed charts: quality against tokens per second, NFE and forward equivalents
//! (one series per decoding configuration), and quality against the model's block size.

use super::super::svg::{Chart, Frontier, HLine, Marker, Point, Scale, Series, PALETTE};
use super::super::task::ter_scale;
use super::{fmt_num, Plot, SpeedPoint};
use std::collections::BTreeSet;

/// The quality axis.
#[derive(Clone, Copy, PartialEq)]
enum Quality {
    Ter,
    Ser,
}

impl Quality {
    fn name(self) -> &'static str {
        match self {
            Quality::Ter => "TER",
            Quality::Ser => "SER",
        }
    }

    fn of(self, p: &SpeedPoint) -> Option<(f64, Option<(f64, f64)>)> {
        match self {
            Quality::Ter => p.ter.map(|v| (v, p.ter_ci)),
            Quality::Ser => p.ser.map(|v| (v, p.ser_ci)),
        }
        .filter(|(v, _)| v.is_finite())
    }
}

/// The cost axis.
#[derive(Clone, Copy)]
enum Cost {
    TokensPerSecond,
    Nfe,
    ForwardEquivalents,
}

impl Cost {
    fn name(self) -> &'static str {
        match self {
            Cost::TokensPerSecond => "tokens/s",
            Cost::Nfe => "NFE",
            Cost::ForwardEquivalents => "forward equivalents",
        }
    }

    fn axis_label(self) -> &'static str {
        match self {
            Cost::TokensPerSecond => "generated tokens per second (log; right is faster)",
            Cost::Nfe => "network calls per sample (log)",
            Cost::ForwardEquivalents => "positions computed ÷ length per sample (log)",
        }
    }

    fn of(self, p: &SpeedPoint) -> Option<f64> {
        match self {
            Cost::TokensPerSecond => p.tokens_per_second,
            Cost::Nfe => p.nfe,
            Cost::ForwardEquivalents => p.forward_equivalents,
        }
        .filter(|x| x.is_finite() && *x > 0.0)
    }
}

fn ci_text(ci: Option<(f64, f64)>, digits: usize) -> String {
    ci.map(|(a, b)| {
        format!(
            " [{}, {}]",
            fmt_num(Some(a), digits),
            fmt_num(Some(b), digits)
        )
    })
    .unwrap_or_default()
}

/// The series labels in the order their first cell appears, each with its colour.
fn palette(points: &[&SpeedPoint]) -> Vec<(String, String)> {
    let mut out: Vec<(String, String)> = Vec::new();
    for p in points {
        if !out.iter().any(|(l, _)| *l == p.series) {
            let color = PALETTE[out.len() % PALETTE.len()].to_string();
            out.push((p.series.clone(), color));
        }
    }
    out
}

fn optimal_line(optimal_ter: Option<f64>) -> Option<HLine> {
    optimal_ter.map(|o| HLine {
        y: o,
        band: None,
        label: "optimal TER (exact)".into(),
        color: "#111".into(),
        dash: "2 3",
        text: format!("optimal {}", fmt_num(Some(o), 3)),
    })
}

/// The cells each family of charts shows, so that no chart carries every configuration: the
/// cache study (denoisers without a block size; where trained ones ran, the exact oracle's
/// uncached series are their reference — its cached ones give the same samples) and block
/// diffusion (models with a block size); the AR cells in both.
fn groups(points: &[SpeedPoint]) -> Vec<(&'static str, Vec<&SpeedPoint>)> {
    let ar = points.iter().filter(|p| p.ar);
    let plain = |p: &&SpeedPoint| !p.ar && p.config.block_size.is_none();
    let trained: Vec<&SpeedPoint> = points.iter().filter(plain).filter(|p| !p.exact).collect();
    let cache: Vec<&SpeedPoint> = if trained.is_empty() {
        points.iter().filter(plain).collect()
    } else {
        let reference = points
            .iter()
            .filter(plain)
            .filter(|p| p.exact && !p.config.cached());
        reference.chain(trained).collect()
    };
    let block: Vec<&SpeedPoint> = points
        .iter()
        .filter(|p| !p.ar && p.config.block_size.is_some())
        .collect();
    [("caches", cache), ("block diffusion", block)]
        .into_iter()
        .filter(|(_, members)| !members.is_empty())
        .map(|(name, members)| (name, members.into_iter().chain(ar.clone()).collect()))
        .collect()
}

/// TER and SER against tokens/s, NFE and forward equivalents, for each family of cells
/// ([`groups`]), and the notes on what the charts leave out.
pub(super) fn quality_plots(
    task: &str,
    points: &[SpeedPoint],
    optimal_ter: Option<f64>,
) -> (Vec<Plot>, Vec<String>) {
    let mut plots = Vec::new();
    let mut notes = Vec::new();
    for quality in [Quality::Ter, Quality::Ser] {
        if !points.iter().any(|p| quality.of(p).is_some()) {
            notes.push(format!(
                "No {} charts: no cell has a finite {}.",
                quality.name(),
                quality.name()
            ));
            continue;
        }
        for (group, members) in groups(points) {
            // AR cells alone make no chart of a family: they are its reference.
            if !members.iter().any(|p| !p.ar && quality.of(p).is_some()) {
                notes.push(format!(
                    "No {} charts of the {group}: no diffusion cell of it has a finite {}.",
                    quality.name(),
                    quality.name()
                ));
                continue;
            }
            for cost in [Cost::TokensPerSecond, Cost::Nfe, Cost::ForwardEquivalents] {
                let what = (quality, cost, group);
                plots.push(quality_plot(task, &members, what, optimal_ter));
            }
        }
    }
    (plots, notes)
}

fn quality_plot(
    task: &str,
    points: &[&SpeedPoint],
    (quality, cost, group): (Quality, Cost, &str),
    optimal_ter: Option<f64>,
) -> Plot {
    let q = quality.name();
    let mut omitted = 0usize;
    let mut series = Vec::new();
    for (label, color) in palette(points) {
        let mut cells: Vec<&SpeedPoint> = points
            .iter()
            .copied()
            .filter(|p| p.series == label)
            .collect();
        cells.sort_by_key(|p| p.steps);
        let mut drawn = Vec::new();
        for p in &cells {
            match (cost.of(p), quality.of(p)) {
                (Some(x), Some((y, ci))) => drawn.push(Point {
                    x,
                    y,
                    lo: ci.map(|c| c.0),
                    hi: ci.map(|c| c.1),
                    tip: format!(
                        "{label}{}: {q} {}{}, {} {}",
                        p.steps.map(|s| format!(", {s} steps")).unwrap_or_default(),
                        fmt_num(Some(y), 4),
                        ci_text(ci, 4),
                        cost.name(),
                        fmt_num(Some(x), 2)
                    ),
                }),
                _ => omitted += 1,
            }
        }
        let (ar, exact) = (cells[0].ar, cells[0].exact);
        series.push(Series {
            name: if exact {
                format!("{label} (exact)")
            } else {
                label
            },
            color,
            points: drawn,
            line: !ar,
            band: exact,
            marker: if ar { Marker::Square } else { Marker::Circle },
        });
    }
    let hlines: Vec<HLine> = match quality {
        Quality::Ter => optimal_line(optimal_ter).into_iter().collect(),
        Quality::Ser => Vec::new(),
    };
    let y_scale = match quality {
        Quality::Ter => ter_scale(&series, &hlines),
        Quality::Ser => Scale::Linear,
    };
    let frontier = match (cost, quality, optimal_ter) {
        // The frontier rule reads lower x as cheaper; on tokens/s higher is cheaper.
        (Cost::TokensPerSecond, _, _) => None,
        (_, Quality::Ter, Some(o)) => Some(Frontier::Toward(o)),
        _ => Some(Frontier::Lower),
    };
    let chart = Chart {
        title: format!("{task}: {q} vs {} — {group} (price of speed)", cost.name()),
        x_label: cost.axis_label().into(),
        y_label: if y_scale == Scale::Log10 {
            format!("{q} (log)")
        } else {
            q.into()
        },
        x_scale: Scale::Log10,
        y_scale,
        y_zero: quality == Quality::Ser,
        series,
        hlines,
        frontier,
        x_hint: None,
        message: None,
        key: true,
    };
    let has = chart.series.iter().any(|s| !s.points.is_empty());
    Plot {
        title: format!("{q} vs {} — {group}", cost.name()),
        svg: has.then(|| chart.render()),
        note: if !has {
            Some(format!(
                "No {q} vs {} chart of the {group}: no cell has both.",
                cost.name()
            ))
        } else {
            (omitted > 0).then(|| {
                format!(
                    "{omitted} cell(s) not drawn ({q} infinite, or no {}).",
                    cost.name()
                )
            })
        },
    }
}

/// The block-size curve's series key: every decoding choice but the block itself (the
/// sampler's block length follows the model's block size).
fn block_series_label(p: &SpeedPoint) -> String {
    let c = &p.config;
    let mut label = format!(
        "{}{}",
        c.sampler,
        p.steps.map(|s| format!(" · {s} steps")).unwrap_or_default()
    );
    if let Some(cache) = c.cache.as_deref().filter(|_| c.cached()) {
        label.push_str(&format!(" · {cache} cache"));
    }
    if let Some(r) = c.refresh.as_deref().filter(|_| c.cached()) {
        label.push_str(&format!(" · refresh {r}"));
    }
    label
}

/// TER and SER against the model's block size (block size 1 decodes like an AR model, the
/// whole length like the MDM), with the AR cells as reference lines. Empty with fewer than two
/// block sizes.
pub(super) fn block_plots(
    task: &str,
    points: &[SpeedPoint],
    optimal_ter: Option<f64>,
) -> Vec<Plot> {
    let block: Vec<&SpeedPoint> = points
        .iter()
        .filter(|p| p.config.block_size.is_some() && !p.ar)
        .collect();
    let sizes: BTreeSet<u64> = block.iter().filter_map(|p| p.config.block_size).collect();
    if sizes.len() < 2 {
        return Vec::new();
    }
    let mut labels: Vec<String> = Vec::new();
    for p in &block {
        let l = block_series_label(p);
        if !labels.contains(&l) {
            labels.push(l);
        }
    }
    let mut plots = Vec::new();
    for quality in [Quality::Ter, Quality::Ser] {
        let q = quality.name();
        let series: Vec<Series> = labels
            .iter()
            .enumerate()
            .map(|(i, label)| {
                let mut pts: Vec<Point> = block
                    .iter()
                    .filter(|p| block_series_label(p) == *label)
                    .filter_map(|p| {
                        let (y, ci) = quality.of(p)?;
                        let b = p.config.block_size? as f64;
                        Some(Point {
                            x: b,
                            y,
                            lo: ci.map(|c| c.0),
                            hi: ci.map(|c| c.1),
                            tip: format!(
                                "{} (block size {b}), {label}: {q} {}{}",
                                p.config.model,
                                fmt_num(Some(y), 4),
                                ci_text(ci, 4)
                            ),
                        })
                    })
                    .collect();
                pts.sort_by(|a, b| a.x.total_cmp(&b.x));
                Series {
                    name: label.clone(),
                    color: PALETTE[i % PALETTE.len()].to_string(),
                    points: pts,
                    line: true,
                    band: false,
                    marker: Marker::Circle,
                }
            })
            .collect();
        let mut hlines: Vec<HLine> = points
            .iter()
            .filter(|p| p.ar && !p.exact)
            .filter_map(|a| {
                let (y, ci) = quality.of(a)?;
                Some(HLine {
                    y,
                    band: ci,
                    label: format!("AR {}", a.series),
                    color: "#555".into(),
                    dash: "6 3",
                    text: format!("AR {}", fmt_num(Some(y), 3)),
                })
            })
            .collect();
        if quality == Quality::Ter {
            hlines.extend(optimal_line(optimal_ter));
        }
        let has = series.iter().any(|s| !s.points.is_empty());
        let y_scale = match quality {
            Quality::Ter => ter_scale(&series, &hlines),
            Quality::Ser => Scale::Linear,
        };
        let chart = Chart {
            title: format!("{task}: {q} vs block size (price of speed)"),
            x_label: "model block size (log; 1 = AR, L = MDM)".into(),
            y_label: q.into(),
            x_scale: Scale::Log2,
            y_scale,
            y_zero: quality == Quality::Ser,
            series,
            hlines,
            frontier: None,
            x_hint: None,
            message: None,
            key: true,
        };
        plots.push(Plot {
            title: format!("{q} vs block size"),
            svg: has.then(|| chart.render()),
            note: (!has).then(|| format!("No {q} vs block size chart: no finite {q}.")),
        });
    }
    plots
}
