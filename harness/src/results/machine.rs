//! What the machine was doing while a run timed its cells: one [`RunSession`] per invocation
//! of `run` (the first, and each `--resume`), so that a reader of a nightly comparison can
//! tell timings taken alone from timings taken beside other work.
//!
//! Read from `/proc/cpuinfo` and `/proc/loadavg` on Linux; elsewhere the CPU model and the
//! load are recorded as unknown (`None`) rather than guessed.

use serde::{Deserialize, Serialize};

/// One invocation of `run` on one machine: its worker slots, the CPU and the load around it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RunSession {
    pub started_at: String,
    pub finished_at: Option<String>,
    pub host: String,
    /// Cells run at once (`--jobs`, after its default and the number of cells to run).
    pub jobs: usize,
    /// Cells this invocation ran (a resumed run skips the finished ones).
    pub cells: usize,
    /// `model name` of `/proc/cpuinfo` (`None`: not available on this system).
    pub cpu_model: Option<String>,
    /// Cores this process may use (`std::thread::available_parallelism`: affinity and cgroup
    /// quotas included), which the `jobs` workers shared.
    pub cores: usize,
    /// 1-minute load average when the invocation started, before plugins were built or
    /// models trained: the machine's load from other work.
    pub load_start: Option<f64>,
    /// 1-minute load average when its last cell finished: this run's own workers included.
    pub load_end: Option<f64>,
}

impl RunSession {
    /// A session starting now on this machine (jobs and cells are filled in once known).
    pub fn begin(host: String) -> Self {
        RunSession {
            started_at: super::now_rfc3339(),
            finished_at: None,
            host,
            jobs: 1,
            cells: 0,
            cpu_model: cpu_model(),
            cores: std::thread::available_parallelism().map_or(1, |n| n.get()),
            load_start: load_average(),
            load_end: None,
        }
    }

    /// Record the end of the session: the time and the load.
    pub fn finish(&mut self) {
        self.finished_at = Some(super::now_rfc3339());
        self.load_end = load_average();
    }

    /// Whether cells of this session were timed while sharing the cores with each other.
    pub fn shared_cores(&self) -> bool {
        self.jobs > 1 && self.cells > 1
    }

    /// "--jobs 2 on 2 × AMD EPYC (host), load 1.90 → 2.40".
    pub fn describe(&self) -> String {
        let load = |l: Option<f64>| l.map_or("unknown".to_string(), |l| format!("{l:.2}"));
        format!(
            "--jobs {} on {} × {} ({}), load {} → {}",
            self.jobs,
            self.cores,
            self.cpu_model.as_deref().unwrap_or("unknown CPU"),
            self.host,
            load(self.load_start),
            load(self.load_end)
        )
    }
}

/// The CPU's model name: the first `model name` line of `/proc/cpuinfo` (x86 and most
/// others), `None` where there is none.
fn cpu_model() -> Option<String> {
    let text = std::fs::read_to_string("/proc/cpuinfo").ok()?;
    parse_cpu_model(&text)
}

fn parse_cpu_model(cpuinfo: &str) -> Option<String> {
    cpuinfo.lines().find_map(|line| {
        let (key, value) = line.split_once(':')?;
        let value = value.trim();
        (key.trim() == "model name" && !value.is_empty()).then(|| value.to_string())
    })
}

/// The 1-minute load average (`/proc/loadavg`'s first field), `None` where unavailable.
fn load_average() -> Option<f64> {
    let text = std::fs::read_to_string("/proc/loadavg").ok()?;
    parse_load(&text)
}

fn parse_load(loadavg: &str) -> Option<f64> {
    loadavg.split_whitespace().next()?.parse::<f64>().ok()
}

/// The report's one line about how the run's cells were timed, or `None` for runs written
/// before sessions were recorded. Several sessions (a resumed or merged run) are listed in
/// order of their start.
pub fn timing_line(sessions: &[RunSession]) -> Option<String> {
    let mut sorted: Vec<&RunSession> = sessions.iter().collect();
    sorted.sort_by(|a, b| a.started_at.cmp(&b.started_at));
    match sorted.as_slice() {
        [] => None,
        [one] => Some(format!("ran with {}", one.describe())),
        many => Some(format!(
            "ran in {} sessions: {}",
            many.len(),
            many.iter()
                .map(|s| format!("{} cells with {}", s.cells, s.describe()))
                .collect::<Vec<_>>()
                .join("; ")
        )),
    }
}

/// The speed verdict's caveat when cells were timed several at a time, or `None` when every
/// session ran its cells alone.
pub fn shared_cores_note(sessions: &[RunSession]) -> Option<String> {
    let shared: Vec<&RunSession> = sessions.iter().filter(|s| s.shared_cores()).collect();
    let most = shared.iter().map(|s| s.jobs).max()?;
    let cells: usize = shared.iter().map(|s| s.cells).sum();
    Some(format!(
        "Timings shared cores: {cells} cells were timed up to {most} at a time (--jobs {most}), so tokens/s and the speedups below \
         include contention between them; for speed figures run with --jobs 1."
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_the_model_name_and_the_one_minute_load() {
        let cpuinfo = "processor\t: 0\nvendor_id\t: AuthenticAMD\nmodel name\t: AMD EPYC 7B13\nflags\t\t: fpu\n\nprocessor\t: 1\nmodel name\t: AMD EPYC 7B13\n";
        assert_eq!(parse_cpu_model(cpuinfo).as_deref(), Some("AMD EPYC 7B13"));
        // aarch64's cpuinfo has no model name: unknown, not a guess.
        assert_eq!(parse_cpu_model("processor\t: 0\nBogoMIPS\t: 50.00\n"), None);
        assert_eq!(parse_load("1.90 2.67 2.94 6/125 29559\n"), Some(1.9));
        assert_eq!(parse_load(""), None);
    }

    fn session(started_at: &str, jobs: usize, cells: usize) -> RunSession {
        RunSession {
            started_at: started_at.into(),
            finished_at: None,
            host: "h".into(),
            jobs,
            cells,
            cpu_model: Some("AMD EPYC".into()),
            cores: 2,
            load_start: Some(1.9),
            load_end: Some(2.4),
        }
    }

    #[test]
    fn the_timing_line_and_the_shared_cores_note() {
        assert_eq!(timing_line(&[]), None);
        assert_eq!(
            timing_line(&[session("2026-01-01T00:00:00Z", 2, 10)]).as_deref(),
            Some("ran with --jobs 2 on 2 × AMD EPYC (h), load 1.90 → 2.40")
        );
        let resumed = [
            session("2026-01-02T00:00:00Z", 1, 3),
            session("2026-01-01T00:00:00Z", 2, 7),
        ];
        let line = timing_line(&resumed).unwrap();
        assert!(
            line.starts_with("ran in 2 sessions: 7 cells with --jobs 2")
                && line.contains("; 3 cells with --jobs 1"),
            "{line}"
        );
        let note = shared_cores_note(&resumed).unwrap();
        assert!(
            note.contains("7 cells") && note.contains("--jobs 2"),
            "{note}"
        );
        // Alone: one job, or a single cell to run.
        assert_eq!(shared_cores_note(&[session("t", 1, 9)]), None);
        assert_eq!(shared_cores_note(&[session("t", 4, 1)]), None);
        assert_eq!(shared_cores_note(&[]), None);
    }
}
