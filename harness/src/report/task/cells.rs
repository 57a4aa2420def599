//! The "All cells" table of a task: which of its columns carry a value for this task.

use super::*;
use crate::report::CellColumns;

impl TaskView<'_> {
    /// The table's optional columns: each shown when some row has a value in it, costs taken
    /// only from cells that made forwards (a replay's NFE is 0 and its timings are not a
    /// model's; the reference row has none).
    pub(super) fn columns(&self, task_metrics: &[crate::registry::MetricDef]) -> CellColumns {
        let no_forwards: Vec<&CellSummary> = self
            .rows
            .iter()
            .copied()
            .filter(|r| replayed(r) && r.status == CellStatus::Ok)
            .collect();
        let forwarding: Vec<&CellSummary> = self
            .rows
            .iter()
            .copied()
            .filter(|r| !replayed(r) && r.status == CellStatus::Ok)
            .collect();
        let any =
            |rows: &[&CellSummary], has: &dyn Fn(&CellSummary) -> bool| rows.iter().any(|r| has(r));
        let (metrics, empty): (Vec<_>, Vec<_>) = task_metrics.iter().partition(|m| {
            self.rows.iter().any(|r| {
                r.metrics
                    .get(&m.name)
                    .is_some_and(|v| v.value.is_some() || v.note.is_some())
            })
        });
        CellColumns {
            steps: any(&forwarding, &|r| r.steps.is_some()),
            ter: any(&self.rows, &|r| {
                r.ter.is_some() || r.zero_probability_samples > 0
            }),
            ser: any(&self.rows, &|r| r.ser.is_some()),
            unigram_entropy: any(&self.rows, &|r| r.unigram_entropy.is_some()),
            first_error: any(&self.rows, &|r| r.mean_first_error.is_some()),
            nfe: any(&forwarding, &|r| r.nfe.is_some()),
            tokens_per_forward: any(&forwarding, &|r| r.tokens_per_forward.is_some()),
            wall: any(&forwarding, &|r| r.wall_seconds.is_some()),
            tokens_per_second: any(&forwarding, &|r| r.tokens_per_second.is_some()),
            speedup: any(&forwarding, &|r| r.speedup.is_some()),
            metrics: metrics.iter().map(|m| m.name.clone()).collect(),
            empty_metrics: empty.iter().map(|m| m.label.clone()).collect(),
            no_forwards: no_forwards.iter().map(|r| r.unit.clone()).collect(),
        }
    }
}
