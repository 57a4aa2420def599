//! Quality against cost: every non-reference cell as a point (NFE or wall seconds against TER or
//! SER), AR cells as squares, the efficiency–accuracy frontier ringed.

use super::*;

impl TaskView<'_> {
    /// Quality against cost: every non-reference cell as a point, AR cells as squares.
    pub(super) fn cost_plots(&self) -> Vec<Plot> {
        let mut plots = Vec::new();
        for quality in [Quality::Ter, Quality::Ser] {
            if quality == Quality::Ter && (self.text || self.no_ter_plot().is_some()) {
                continue;
            }
            if quality == Quality::Ser && self.ser_all_zero() {
                plots.push(Plot {
                    title: "SER vs cost".into(),
                    svg: None,
                    note: Some("SER is 0 in every cell, so there are no SER-vs-cost plots.".into()),
                });
                continue;
            }
            for cost in [Cost::Nfe, Cost::Wall] {
                plots.push(self.cost_plot(quality, cost));
            }
        }
        plots
    }

    /// The cells of one series (or one AR cell) as points of quality against cost; counts
    /// the cells it cannot draw.
    fn cost_series(
        &self,
        quality: Quality,
        cost: Cost,
        label: &str,
        cells: &[&CellSummary],
        marker: Marker,
        omitted: &mut usize,
    ) -> Series {
        let mut points = Vec::new();
        // Replayed cells cost nothing measurable: the plot's note counts them apart.
        for r in cells.iter().filter(|r| !replayed(r)) {
            match (cost.of(r), quality.of(r)) {
                (Some(x), Some((y, ci))) if x > 0.0 && y.is_finite() => points.push(Point {
                    x,
                    y,
                    lo: ci.map(|c| c.0),
                    hi: ci.map(|c| c.1),
                    tip: format!(
                        "{label}{}: {} {}, {} {}",
                        r.steps.map(|s| format!(", {s} steps")).unwrap_or_default(),
                        quality.name(),
                        fmt_num(Some(y), 4),
                        cost.name(),
                        fmt_num(Some(x), 3)
                    ),
                }),
                _ => *omitted += 1,
            }
        }
        Series {
            name: label.to_string(),
            color: self.run.color(label),
            points,
            line: marker == Marker::Circle,
            band: false,
            marker,
        }
    }

    fn cost_plot(&self, quality: Quality, cost: Cost) -> Plot {
        let q = quality.name();
        let mut series = Vec::new();
        let mut omitted = 0usize;
        for (label, points) in &self.series {
            series.push(self.cost_series(
                quality,
                cost,
                label,
                points,
                Marker::Circle,
                &mut omitted,
            ));
        }
        for a in &self.ar {
            let label = self.run.label(a);
            series.push(self.cost_series(
                quality,
                cost,
                &label,
                &[*a],
                Marker::Square,
                &mut omitted,
            ));
        }
        let mut hlines = Vec::new();
        if quality == Quality::Ter {
            self.optimal_line(&mut hlines);
        }
        let y_scale = match quality {
            Quality::Ter => ter_scale(&series, &hlines),
            Quality::Ser => Scale::Linear,
        };
        let chart = Chart {
            title: format!("{}: {q} vs {}", self.task, cost.name()),
            x_label: cost.axis_label().into(),
            y_label: if y_scale == Scale::Log10 {
                format!("{q} (log)")
            } else {
                q.into()
            },
            x_scale: cost.scale(),
            y_scale,
            y_zero: quality == Quality::Ser,
            series,
            hlines,
            frontier: match (quality, self.optimal_ter) {
                (Quality::Ter, Some(o)) => Some(Frontier::Toward(o)),
                _ => Some(Frontier::Lower),
            },
            x_hint: None,
            message: None,
            key: false,
        };
        let has = chart.series.iter().any(|s| !s.points.is_empty());
        let frontier = format!(
            "Ringed: the efficiency–accuracy frontier (cells no cheaper cell beats in {}).",
            match quality {
                Quality::Ter => "closeness to the optimal TER",
                Quality::Ser => "SER",
            }
        );
        Plot {
            title: format!("{q} vs {}", cost.name()),
            svg: has.then(|| chart.render()),
            note: Some(if !has {
                format!("No {q} vs {} plot: no cell has both.", cost.name())
            } else {
                let replays = self
                    .series
                    .iter()
                    .flat_map(|(_, v)| v.iter())
                    .filter(|r| replayed(r))
                    .count();
                let mut note = String::new();
                if omitted > 0 {
                    note += &format!("{omitted} cell(s) not drawn ({q} infinite or no cost). ");
                }
                if replays > 0 {
                    note += &format!("{replays} replayed cell(s) not drawn (no network calls, no sampling time). ");
                }
                note + &frontier
            }),
        }
    }
}

/// The quality axis of a cost plot.
#[derive(Clone, Copy, PartialEq)]
pub(super) enum Quality {
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

    fn of(self, r: &CellSummary) -> Option<(f64, Option<(f64, f64)>)> {
        match self {
            Quality::Ter => r.ter.map(|v| (v, r.ter_ci)),
            Quality::Ser => r.ser.map(|v| (v, r.ser_ci)),
        }
    }
}

/// The cost axis of a cost plot.
#[derive(Clone, Copy)]
pub(super) enum Cost {
    Nfe,
    Wall,
}

impl Cost {
    fn name(self) -> &'static str {
        match self {
            Cost::Nfe => "NFE",
            Cost::Wall => "wall",
        }
    }

    fn axis_label(self) -> &'static str {
        match self {
            Cost::Nfe => "network calls per sample (log)",
            Cost::Wall => "wall seconds for the cell (log)",
        }
    }

    fn scale(self) -> Scale {
        match self {
            Cost::Nfe => Scale::Log2,
            Cost::Wall => Scale::Log10,
        }
    }

    fn of(self, r: &CellSummary) -> Option<f64> {
        match self {
            Cost::Nfe => r.nfe,
            Cost::Wall => r.wall_seconds,
        }
    }
}
