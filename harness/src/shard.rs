//! Scale-out without a scheduler of our own: a suite's cells as content-hashed **work units**
//! with an estimated cost, a stable **shard** assignment (`run --shard K/N`, or Slurm's array
//! variables), and an exactly-once **merge** of shard run directories into one run directory
//! whose summary and report are those of a single-machine run.

use crate::report;
use crate::results::{now_rfc3339, CellRecord, CellStatus, Manifest, RunDir, SampleRecord};
use crate::suite::{CellSpec, Suite};
use anyhow::{Context, Result};
use serde::Serialize;
use std::collections::{BTreeMap, BinaryHeap};
use std::path::{Path, PathBuf};

/// One cell as a unit of work.
#[derive(Debug, Clone, Serialize)]
pub struct Unit {
    /// The cell's content hash ([`CellSpec::unit_id`]).
    pub id: String,
    /// `task/model/sampler@steps/L/seed`.
    pub key: String,
    /// Estimated cost: network calls × positions (samples × length × steps, a reference row
    /// samples × length), the only thing a plan knows before running.
    pub cost: f64,
}

/// The units of a suite, in suite order.
pub fn units(cells: &[CellSpec]) -> Vec<Unit> {
    cells
        .iter()
        .map(|c| Unit {
            id: c.unit_id(),
            key: c.key(),
            cost: crate::progress::cell_cost(c),
        })
        .collect()
}

/// Shard of each unit (same order as `units`): longest processing time first — units by cost,
/// descending, ties by id, each to the least-loaded shard (ties: the lowest index). Depends only
/// on the set of units, so every shard of a job array computes the same assignment.
pub fn assign(units: &[Unit], shards: usize) -> Vec<usize> {
    let shards = shards.max(1);
    let mut order: Vec<usize> = (0..units.len()).collect();
    order.sort_by(|&a, &b| {
        units[b]
            .cost
            .total_cmp(&units[a].cost)
            .then_with(|| units[a].id.cmp(&units[b].id))
    });
    // Min-heap of (load, shard) through Reverse ordering on both.
    let mut loads: BinaryHeap<std::cmp::Reverse<(u64, usize)>> =
        (0..shards).map(|s| std::cmp::Reverse((0, s))).collect();
    let mut out = vec![0; units.len()];
    for i in order {
        let std::cmp::Reverse((load, shard)) = loads.pop().expect("at least one shard");
        out[i] = shard;
        loads.push(std::cmp::Reverse((load + units[i].cost as u64, shard)));
    }
    out
}

/// `K/N`: shard `K` (0-based) of `N`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct Shard {
    pub index: usize,
    pub count: usize,
}

impl std::str::FromStr for Shard {
    type Err = String;
    fn from_str(s: &str) -> std::result::Result<Self, String> {
        let parsed = s
            .split_once('/')
            .and_then(|(k, n)| Some((k.trim().parse().ok()?, n.trim().parse().ok()?)));
        match parsed {
            Some((index, count)) if count > 0 && index < count => Ok(Shard { index, count }),
            _ => Err(format!(
                "`{s}` is not a shard: write K/N with 0 <= K < N, e.g. 0/4"
            )),
        }
    }
}

impl Shard {
    /// From a Slurm job array (`SLURM_ARRAY_TASK_ID` relative to `SLURM_ARRAY_TASK_MIN`, out of
    /// `SLURM_ARRAY_TASK_COUNT`), when the process runs in one.
    pub fn from_slurm() -> Option<Shard> {
        let var = |name| std::env::var(name).ok()?.parse::<usize>().ok();
        let (id, count) = (var("SLURM_ARRAY_TASK_ID")?, var("SLURM_ARRAY_TASK_COUNT")?);
        let min = var("SLURM_ARRAY_TASK_MIN").unwrap_or(0);
        let index = id.checked_sub(min)?;
        (index < count).then_some(Shard { index, count })
    }

    /// The cells of the suite this shard runs.
    pub fn select(&self, cells: &[CellSpec]) -> Vec<CellSpec> {
        let assigned = assign(&units(cells), self.count);
        cells
            .iter()
            .zip(assigned)
            .filter(|(_, s)| *s == self.index)
            .map(|(c, _)| c.clone())
            .collect()
    }
}

/// What `merge` found and wrote.
#[derive(Debug)]
pub struct Merged {
    pub dir: PathBuf,
    pub cells: usize,
    pub missing: Vec<String>,
}

/// Merge shard run directories into `out`: every unit of the suite's plan exactly once (from
/// shards of the same suite, commit and plugin versions), then the summary and report. With
/// `allow_partial`, missing units are listed rather than refused.
pub fn merge(out: &Path, shard_dirs: &[PathBuf], allow_partial: bool) -> Result<Merged> {
    if shard_dirs.is_empty() {
        anyhow::bail!("merge needs at least one shard run directory");
    }
    let mut shards = Vec::new();
    for dir in shard_dirs {
        let run = RunDir::open_read_only(dir)
            .with_context(|| format!("cannot read shard {}", dir.display()))?;
        let manifest = run.read_manifest()?;
        let (cells, samples) = run.load_consistent()?;
        shards.push((dir.clone(), manifest, cells, samples));
    }
    check_same_run(&shards)?;
    let first = &shards[0].1;
    let suite = Suite::parse(&first.suite_path, first.suite_text.clone())
        .map_err(|e| anyhow::anyhow!("the shards' suite no longer parses: {e}"))?;
    // Shards ran work cells (cells split by sample range where the suite says so).
    let plan = suite.work_cells();
    let (found, problems) = index_units(&plan, &shards);
    let missing: Vec<String> = plan
        .iter()
        .filter(|c| !found.contains_key(&c.unit_id()))
        .map(|c| format!("{} ({})", c.key(), c.unit_id()))
        .collect();
    let mut errors = problems;
    if !missing.is_empty() && !allow_partial {
        errors.push(format!(
            "{} unit(s) of the plan are in no shard (re-run their shards, or --allow-partial): {}",
            missing.len(),
            shown(&missing)
        ));
    }
    if !errors.is_empty() {
        anyhow::bail!("cannot merge: {}", errors.join("; "));
    }
    let run = RunDir::create(out)?;
    let mut manifest = first.clone();
    manifest.started_at = shards
        .iter()
        .map(|s| s.1.started_at.clone())
        .min()
        .unwrap_or_default();
    manifest.finished_at = Some(now_rfc3339());
    manifest.cells_total = plan.len();
    // Every shard's machine record: each shard timed its own cells on its own node.
    manifest.sessions = shards.iter().flat_map(|s| s.1.sessions.clone()).collect();
    manifest.command = std::env::args().collect();
    run.write_manifest(&manifest)?;
    let whole_cells = suite.cells();
    let mut joined = Vec::new();
    for whole in &whole_cells {
        let parts = match suite.shard_samples {
            Some(most) => whole.split(most),
            None => vec![whole.clone()],
        };
        let found_parts: Option<Vec<_>> = parts.iter().map(|p| found.get(&p.unit_id())).collect();
        if let Some(found_parts) = found_parts {
            joined.push(join_parts(whole, &found_parts));
        }
    }
    let cells = joined.len();
    let rows: Vec<_> = joined.iter().map(|(r, s)| (s.as_slice(), r)).collect();
    run.append_cells(&rows)?;
    report::write_all(&run, Some(&whole_cells))?;
    Ok(Merged {
        dir: out.to_path_buf(),
        cells,
        missing,
    })
}

type ShardRun = (PathBuf, Manifest, Vec<CellRecord>, Vec<SampleRecord>);

/// One cell from its parts (in sample order): their samples and batches in order, the first
/// failure as the cell's, worker time summed. A whole cell comes back as it was.
fn join_parts(
    whole: &CellSpec,
    parts: &[&(&CellRecord, Vec<SampleRecord>)],
) -> (CellRecord, Vec<SampleRecord>) {
    if let [(record, samples)] = parts {
        if record.cell.part.is_none() {
            return ((*record).clone(), samples.clone());
        }
    }
    let (unit, key) = (whole.unit_id(), whole.key());
    let mut record = parts[0].0.clone();
    record.unit.clone_from(&unit);
    record.key.clone_from(&key);
    record.cell = whole.clone();
    record.batches = parts.iter().flat_map(|p| p.0.batches.clone()).collect();
    record.worker_seconds = parts.iter().map(|p| p.0.worker_seconds).sum();
    record.finished_at = parts
        .iter()
        .map(|p| p.0.finished_at.clone())
        .max()
        .unwrap_or_default();
    if let Some(failed) = parts.iter().find(|p| p.0.status != CellStatus::Ok) {
        record.status = failed.0.status;
        record.cause = failed
            .0
            .cause
            .clone()
            .map(|c| format!("{}: {c}", failed.0.key));
    }
    if record.status != CellStatus::Ok {
        return (record, Vec::new());
    }
    let samples = parts
        .iter()
        .flat_map(|p| p.1.iter().cloned())
        .map(|mut s| {
            s.unit.clone_from(&unit);
            s.key.clone_from(&key);
            s
        })
        .collect();
    (record, samples)
}

/// Shards must come from one suite, commit and set of plugin versions.
fn check_same_run(shards: &[ShardRun]) -> Result<()> {
    let first = &shards[0];
    let versions = |m: &Manifest| -> BTreeMap<String, String> {
        m.plugins
            .iter()
            .map(|p| (p.name.clone(), p.version.clone()))
            .collect()
    };
    for (dir, m, _, _) in &shards[1..] {
        let what = if m.suite_hash != first.1.suite_hash {
            Some("another suite (its hash differs)")
        } else if m.git_commit != first.1.git_commit {
            Some("another commit")
        } else if versions(m) != versions(&first.1) {
            Some("other plugin versions")
        } else {
            None
        };
        if let Some(what) = what {
            anyhow::bail!(
                "shard {} comes from {what} than shard {}; merge only shards of one run",
                dir.display(),
                first.0.display()
            );
        }
    }
    Ok(())
}

/// Each planned unit's record and samples, by unit id.
type Found<'s> = BTreeMap<String, (&'s CellRecord, Vec<SampleRecord>)>;

/// Each planned unit's record and samples; duplicates and units outside the plan as problems.
fn index_units<'s>(plan: &[CellSpec], shards: &'s [ShardRun]) -> (Found<'s>, Vec<String>) {
    let planned: std::collections::HashSet<String> = plan.iter().map(|c| c.unit_id()).collect();
    let mut found: BTreeMap<String, (&CellRecord, Vec<SampleRecord>)> = BTreeMap::new();
    let mut whence: BTreeMap<String, &Path> = BTreeMap::new();
    let (mut duplicated, mut unknown) = (Vec::new(), Vec::new());
    for (dir, _, cells, samples) in shards {
        let mut by_unit: BTreeMap<&str, Vec<SampleRecord>> = BTreeMap::new();
        for s in samples {
            by_unit.entry(s.unit.as_str()).or_default().push(s.clone());
        }
        for c in cells {
            if !planned.contains(&c.unit) {
                unknown.push(format!("{} in {}", c.key, dir.display()));
            } else if let Some(other) = whence.get(&c.unit) {
                duplicated.push(format!(
                    "{} in {} and {}",
                    c.key,
                    other.display(),
                    dir.display()
                ));
            } else {
                whence.insert(c.unit.clone(), dir);
                found.insert(
                    c.unit.clone(),
                    (c, by_unit.remove(c.unit.as_str()).unwrap_or_default()),
                );
            }
        }
    }
    let mut problems = Vec::new();
    if !duplicated.is_empty() {
        problems.push(format!(
            "{} unit(s) in more than one shard: {}",
            duplicated.len(),
            shown(&duplicated)
        ));
    }
    if !unknown.is_empty() {
        problems.push(format!(
            "{} unit(s) not in the suite's plan: {}",
            unknown.len(),
            shown(&unknown)
        ));
    }
    (found, problems)
}

/// The first few items of a long list, and how many more.
fn shown(items: &[String]) -> String {
    const FEW: usize = 8;
    let mut s = items[..items.len().min(FEW)].join(", ");
    if items.len() > FEW {
        s.push_str(&format!(", … and {} more", items.len() - FEW));
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    fn unit(id: &str, cost: f64) -> Unit {
        Unit {
            id: id.into(),
            key: id.into(),
            cost,
        }
    }

    #[test]
    fn shards_parse_and_refuse_nonsense() {
        assert_eq!("1/4".parse(), Ok(Shard { index: 1, count: 4 }));
        for bad in ["4/4", "1/0", "x/2", "3", "-1/2"] {
            assert!(bad.parse::<Shard>().is_err(), "{bad}");
        }
    }

    #[test]
    fn assignment_is_balanced_and_independent_of_order() {
        let mut us: Vec<Unit> = (0..40)
            .map(|i| unit(&format!("u{i:02}"), (1 + i % 7) as f64 * 100.0))
            .collect();
        let a = assign(&us, 4);
        let loads = |us: &[Unit], a: &[usize]| {
            let mut l = [0.0; 4];
            for (u, &s) in us.iter().zip(a) {
                l[s] += u.cost;
            }
            l
        };
        let l = loads(&us, &a);
        let (lo, hi) = (
            l.iter().copied().fold(f64::INFINITY, f64::min),
            l.iter().copied().fold(0.0, f64::max),
        );
        // LPT: no shard exceeds another by more than the largest unit.
        assert!(hi - lo <= 700.0, "{l:?}");
        // The same units in another order get the same shards.
        let before: BTreeMap<String, usize> =
            us.iter().zip(&a).map(|(u, &s)| (u.id.clone(), s)).collect();
        us.reverse();
        let b = assign(&us, 4);
        for (u, s) in us.iter().zip(b) {
            assert_eq!(before[&u.id], s, "{}", u.id);
        }
    }

    #[test]
    fn a_hundred_thousand_units_plan_in_well_under_a_second_of_work() {
        let us: Vec<Unit> = (0..100_000)
            .map(|i| unit(&format!("{i:016x}"), (i % 13) as f64))
            .collect();
        let a = assign(&us, 64);
        assert_eq!(a.len(), 100_000);
        assert!(a.iter().all(|&s| s < 64));
    }
}
