//! What a run says while it works.
//!
//! * One bar over all of a run's work — trainings and cells together, each weighted by its
//!   estimated cost ([`cell_cost`], [`training_cost`]) — so the time left counts the trainings
//!   and cells still to come, and moves while a long training or cell runs (their workers report
//!   their steps and samples).
//! * One line per finished training and cell, `[ 37/142 cells | 4m12s elapsed | ~6m left] …`:
//!   above the bars in a terminal; on stderr, plain, without one (cron, nohup, CI), where
//!   indicatif hides the bars and these lines are all a log shows. A last line gives the total.
//! * [`LogWriter`]: the writer of the tracing subscriber, which lifts the bars while a log line
//!   is printed so that log lines never tear them.
//!
//! Time left is `elapsed × (work left / work done)`: the run's own average pace, so it is
//! honest about the estimate it is (the costs are estimates of relative work, not seconds).

use crate::suite::{CellSpec, TrainSpec};
use indicatif::{MultiProgress, ProgressBar, ProgressState, ProgressStyle};
use std::collections::BTreeMap;
use std::io::Write;
use std::sync::Mutex;
use std::time::{Duration, Instant};

/// Estimated cost of a cell: network calls × positions (samples × length × steps; a reference
/// row, samples × length) — the only measure of its work a plan knows before running.
pub fn cell_cost(cell: &CellSpec) -> f64 {
    let steps = cell.sampler.as_ref().map_or(1, |s| s.steps.max(1));
    (cell.n * cell.length * steps) as f64
}

/// Estimated cost of a training, in the unit of [`cell_cost`] (positions through the network):
/// an optimiser step is a forward and a backward pass over `batch_size` sequences (about three
/// forward passes), and every validation a forward pass over the held-out set.
pub fn training_cost(spec: &TrainSpec, length: usize) -> f64 {
    let validations = spec.steps / spec.validation_every.max(1) + 1;
    ((3 * spec.steps * spec.batch_size + validations * spec.validation_samples) * length) as f64
}

/// The run's work in counts and costs: what is done, what is under way, what is left.
#[derive(Debug, Clone, Default)]
pub struct Tally {
    pub cells_total: usize,
    pub cells_done: usize,
    pub cells_failed: usize,
    pub trainings_total: usize,
    pub trainings_done: usize,
    pub trainings_failed: usize,
    cost_total: f64,
    cost_done: f64,
    /// Cost done so far of the work items under way, by key.
    under_way: BTreeMap<String, f64>,
}

/// Which counter a finished item advances.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Item {
    Cell,
    Training,
}

impl Tally {
    pub fn new(cell_costs: &[f64], training_costs: &[f64]) -> Self {
        Tally {
            cells_total: cell_costs.len(),
            trainings_total: training_costs.len(),
            cost_total: cell_costs.iter().chain(training_costs).sum(),
            ..Tally::default()
        }
    }

    /// Share of the run's estimated work done, in [0, 1] (1 when there is no work).
    pub fn fraction(&self) -> f64 {
        if self.cost_total <= 0.0 {
            return 1.0;
        }
        let done = self.cost_done + self.under_way.values().sum::<f64>();
        (done / self.cost_total).clamp(0.0, 1.0)
    }

    /// An item under way has done `done` of its `cost` (never moves back: a worker's scoring
    /// phase counts its samples again from zero).
    pub fn advance(&mut self, key: &str, cost: f64, done: f64) {
        let slot = self.under_way.entry(key.to_string()).or_insert(0.0);
        *slot = slot.max(done.clamp(0.0, cost));
    }

    /// An item finished (or failed: its work is over either way).
    pub fn finish(&mut self, item: Item, key: &str, cost: f64, failed: bool) {
        self.under_way.remove(key);
        self.cost_done += cost;
        let (done, failures) = match item {
            Item::Cell => (&mut self.cells_done, &mut self.cells_failed),
            Item::Training => (&mut self.trainings_done, &mut self.trainings_failed),
        };
        *done += 1;
        *failures += usize::from(failed);
    }

    /// A training found in the checkpoint cache: counted as finished, its cost taken out of the
    /// run's work (it never happens), so the time left is not measured against free work.
    pub fn skip_training(&mut self, key: &str, cost: f64) {
        self.under_way.remove(key);
        self.cost_total = (self.cost_total - cost).max(0.0);
        self.trainings_done += 1;
    }

    /// `[ 37/142 cells` or `[1/2 trainings`: the counter that opens a line.
    fn counter(&self, item: Item) -> String {
        let (done, total, what) = match item {
            Item::Cell => (self.cells_done, self.cells_total, "cells"),
            Item::Training => (self.trainings_done, self.trainings_total, "trainings"),
        };
        let width = total.to_string().len();
        format!("[{done:>width$}/{total} {what}")
    }

    /// The line for a finished item: `[ 37/142 cells | 4m12s elapsed | ~6m left] {what}`.
    pub fn line(&self, item: Item, elapsed: Duration, what: &str) -> String {
        format!(
            "{} | {} elapsed | {}] {what}",
            self.counter(item),
            clock(elapsed),
            left(time_left(self.fraction(), elapsed))
        )
    }

    /// The run's last line: what ran, what failed, the total time.
    pub fn final_line(&self, elapsed: Duration) -> String {
        let count = |done: usize, failed: usize, what: &str| {
            let plural = if done == 1 { "" } else { "s" };
            match failed {
                0 => format!("{done} {what}{plural}"),
                _ => format!("{done} {what}{plural} ({failed} failed)"),
            }
        };
        let mut parts = Vec::new();
        if self.cells_total > 0 || self.trainings_total == 0 {
            parts.push(count(self.cells_done, self.cells_failed, "cell"));
        }
        if self.trainings_total > 0 {
            let (done, failed) = (self.trainings_done, self.trainings_failed);
            parts.push(count(done, failed, "training"));
        }
        format!("done: {} in {} total", parts.join(", "), clock(elapsed))
    }
}

/// Time left at the pace so far: `elapsed × (1 − f) / f`; `None` before any work is done.
pub fn time_left(fraction: f64, elapsed: Duration) -> Option<Duration> {
    (fraction > 0.0)
        .then(|| Duration::from_secs_f64(elapsed.as_secs_f64() * (1.0 - fraction) / fraction))
}

fn left(remaining: Option<Duration>) -> String {
    match remaining {
        Some(d) => format!("~{} left", clock(d)),
        None => "time left unknown".into(),
    }
}

/// `37s`, `4m12s`, `1h05m`: a duration as a person reads it.
pub fn clock(d: Duration) -> String {
    let s = d.as_secs_f64().round() as u64;
    match s {
        0..=59 => format!("{s}s"),
        60..=3599 => format!("{}m{:02}s", s / 60, s % 60),
        _ => format!("{}h{:02}m", s / 3600, (s % 3600) / 60),
    }
}

/// The first line of a cause, cut to a length that fits a progress line.
pub fn short_cause(cause: &str) -> String {
    const MAX: usize = 160;
    let first = cause.lines().next().unwrap_or("").trim();
    let more = cause.trim().lines().count() > 1;
    if first.chars().count() > MAX {
        format!("{}…", first.chars().take(MAX).collect::<String>())
    } else if more {
        format!("{first} …")
    } else {
        first.to_string()
    }
}

/// Positions of the work bar per unit of cost: costs are whole numbers of positions.
fn ticks(cost: f64) -> u64 {
    cost.round().max(0.0) as u64
}

/// The progress of one run (or one `train`): the bars, the tally, the lines.
pub struct Progress {
    bars: MultiProgress,
    work: ProgressBar,
    tally: Mutex<Tally>,
    started: Instant,
}

impl Progress {
    /// Progress over `cells` (their costs) and `trainings` (their costs), starting now.
    pub fn new(cell_costs: &[f64], training_costs: &[f64]) -> Self {
        let bars = MultiProgress::new();
        let tally = Tally::new(cell_costs, training_costs);
        let work = bars.add(ProgressBar::new(ticks(tally.cost_total)));
        work.set_style(
            ProgressStyle::with_template(
                "{prefix:>8} [{bar:30}] {msg}  {elapsed_precise} elapsed, {left}",
            )
            .expect("valid template")
            .with_key(
                "left",
                |state: &ProgressState, w: &mut dyn std::fmt::Write| {
                    let fraction = match state.len() {
                        Some(len) if len > 0 => state.pos() as f64 / len as f64,
                        _ => 0.0,
                    };
                    let _ = w.write_str(&left(time_left(fraction, state.elapsed())));
                },
            )
            .progress_chars("=> "),
        );
        work.set_prefix("work");
        work.enable_steady_tick(Duration::from_secs(1));
        let progress = Progress {
            bars,
            work,
            tally: Mutex::new(tally),
            started: Instant::now(),
        };
        progress.redraw(&progress.lock());
        *ACTIVE.lock().unwrap_or_else(|e| e.into_inner()) = Some(progress.bars.clone());
        progress
    }

    /// The bars, to add a worker's or a training's own bar under the work bar.
    pub fn bars(&self) -> &MultiProgress {
        &self.bars
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Tally> {
        self.tally.lock().unwrap_or_else(|e| e.into_inner())
    }

    fn redraw(&self, tally: &Tally) {
        self.work.set_length(ticks(tally.cost_total).max(1));
        self.work
            .set_position(ticks(tally.fraction() * tally.cost_total));
        let mut msg = format!("{}/{} cells", tally.cells_done, tally.cells_total);
        if tally.trainings_total > 0 {
            msg = format!(
                "{}/{} trainings, {msg}",
                tally.trainings_done, tally.trainings_total
            );
        }
        self.work.set_message(msg);
    }

    /// An item under way has done `done` of `total` of its steps or samples.
    pub fn advance(&self, key: &str, cost: f64, done: usize, total: usize) {
        let mut tally = self.lock();
        tally.advance(key, cost, cost * done as f64 / total.max(1) as f64);
        self.redraw(&tally);
    }

    /// A cell finished: its line (`ok` or the first line of its cause) and the bar moved.
    pub fn cell_finished(&self, cell: &CellSpec, seconds: f64, cause: Option<&str>) {
        let what = match cause {
            None => format!("{}: ok ({seconds:.1} s)", cell.key()),
            Some(c) => format!(
                "{}: FAILED ({seconds:.1} s): {}",
                cell.key(),
                short_cause(c)
            ),
        };
        let key = cell.unit_id();
        self.finished(Item::Cell, &key, cell_cost(cell), cause.is_some(), &what);
    }

    /// A training finished (or failed); `what` says what came of it.
    pub fn training_finished(&self, key: &str, cost: f64, failed: bool, what: &str) {
        self.finished(Item::Training, key, cost, failed, what);
    }

    /// A training's checkpoint came from the cache: no work, one line.
    pub fn training_reused(&self, key: &str, cost: f64, what: &str) {
        let line = {
            let mut tally = self.lock();
            tally.skip_training(key, cost);
            self.redraw(&tally);
            tally.line(Item::Training, self.started.elapsed(), what)
        };
        self.print(&line);
    }

    fn finished(&self, item: Item, key: &str, cost: f64, failed: bool, what: &str) {
        let line = {
            let mut tally = self.lock();
            tally.finish(item, key, cost, failed);
            self.redraw(&tally);
            tally.line(item, self.started.elapsed(), what)
        };
        self.print(&line);
    }

    /// A line above the bars, or plain on stderr where there are none.
    fn print(&self, line: &str) {
        if self.bars.is_hidden() {
            eprintln!("{line}");
        } else {
            let _ = self.bars.println(line);
        }
    }

    /// Take the bars off the screen (the work is over; the report is being written).
    pub fn clear(&self) {
        self.work.finish_and_clear();
    }

    /// The last line: what ran and the whole command's time, `total` (plugin builds and the
    /// report included).
    pub fn finish(&self, total: Duration) {
        self.clear();
        let line = self.lock().final_line(total);
        eprintln!("{line}");
    }
}

impl Drop for Progress {
    fn drop(&mut self) {
        self.work.finish_and_clear();
        let mut active = ACTIVE.lock().unwrap_or_else(|e| e.into_inner());
        *active = None;
    }
}

/// The bars on screen, if any: log lines lift them while they print.
static ACTIVE: Mutex<Option<MultiProgress>> = Mutex::new(None);

/// The tracing subscriber's writer: stderr, with the bars lifted while a log line prints (so
/// log lines never land inside a bar). Never call tracing inside `MultiProgress::suspend`:
/// this writer suspends the same bars and would wait for itself.
#[derive(Debug, Clone, Copy, Default)]
pub struct LogWriter;

/// One log line, buffered until the subscriber has written all of it.
pub struct LogLine(Vec<u8>);

impl Write for LogLine {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.0.extend_from_slice(buf);
        Ok(buf.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

impl Drop for LogLine {
    fn drop(&mut self) {
        if self.0.is_empty() {
            return;
        }
        let bars = ACTIVE.lock().unwrap_or_else(|e| e.into_inner()).clone();
        let write = || {
            let _ = std::io::stderr().lock().write_all(&self.0);
        };
        match bars {
            Some(bars) if !bars.is_hidden() => bars.suspend(write),
            _ => write(),
        }
    }
}

impl<'a> tracing_subscriber::fmt::MakeWriter<'a> for LogWriter {
    type Writer = LogLine;

    fn make_writer(&'a self) -> LogLine {
        LogLine(Vec::new())
    }
}

#[cfg(test)]
mod tests;
