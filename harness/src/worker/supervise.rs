//! The parent side: start a worker for a job, enforce its time, memory and output limits,
//! read its events, and kill its whole process tree when it ends or overruns.

use super::*;

/// The executable to start workers from: this binary, unless `DLM_BENCH_WORKER_EXE` says
/// otherwise (tests that drive the library in-process point it at the real binary).
pub fn worker_exe() -> Result<PathBuf> {
    if let Some(p) = std::env::var_os("DLM_BENCH_WORKER_EXE") {
        return Ok(PathBuf::from(p));
    }
    std::env::current_exe().context("cannot find the dlm-bench executable to start workers")
}

/// How a worker ended.
pub enum Outcome {
    Described(PluginDescriptor),
    Finished(Box<CellOutput>),
    Trained(Box<TrainOutput>),
    /// The job failed; the cause says why (plugin error, crash signal, timeout, memory or
    /// output limit) and quotes the end of the worker's log. The kind is the plugin's own
    /// classification of its error; `None` when the worker itself failed (crash, limits).
    Failed(String, Option<ErrorKind>),
}

/// The most a worker's stdout and stderr together may write to its log: past it the worker is
/// killed, the log cut at the limit, and the job fails with "output limit".
pub const OUTPUT_LIMIT: u64 = 10 << 20;

/// The default `memory_limit`: min(16 GiB, 3/4 of the machine's memory) — the smaller of
/// `MemTotal` and the cgroup's `memory.max` where one is set. 16 GiB where neither can be read.
pub fn default_memory_limit() -> u64 {
    const CAP: u64 = 16 << 30;
    physical_memory().map_or(CAP, |m| (m / 4 * 3).min(CAP))
}

fn physical_memory() -> Option<u64> {
    let meminfo = std::fs::read_to_string("/proc/meminfo").ok()?;
    let total = meminfo
        .lines()
        .find_map(|l| l.strip_prefix("MemTotal:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse::<u64>().ok())?
        * 1024;
    let cgroup = std::fs::read_to_string("/sys/fs/cgroup/memory.max")
        .ok()
        .and_then(|v| v.trim().parse::<u64>().ok());
    Some(cgroup.map_or(total, |c| c.min(total)))
}

/// `1 GiB`, `1.5 GiB`, `300 MiB`: sizes in causes.
pub fn format_bytes(n: u64) -> String {
    let (unit, name) = if n >= 1 << 30 {
        (1u64 << 30, "GiB")
    } else if n >= 1 << 20 {
        (1 << 20, "MiB")
    } else {
        (1 << 10, "KiB")
    };
    if n.is_multiple_of(unit) {
        format!("{} {name}", n / unit)
    } else {
        format!("{:.1} {name}", n as f64 / unit as f64)
    }
}

/// What one worker may use before the harness kills it (with every process it started).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Limits {
    /// Wall-clock time (`timeout_seconds`).
    pub timeout: Duration,
    /// Resident memory of the worker and its child processes (`memory_limit`); `None`: no limit.
    pub memory: Option<u64>,
    /// Whether `memory` came from the suite (otherwise it is the default), for the cause.
    pub memory_from_suite: bool,
    /// Bytes of stdout + stderr in the worker's log.
    pub output: u64,
}

impl Limits {
    /// `timeout` and the suite's `memory_limit`, with the default output limit.
    pub fn new(timeout: Duration, memory: MemoryLimit) -> Limits {
        let (memory, memory_from_suite) = match memory {
            MemoryLimit::Default => (Some(default_memory_limit()), false),
            MemoryLimit::Bytes(b) => (Some(b), true),
            MemoryLimit::Unlimited => (None, true),
        };
        Limits {
            timeout,
            memory,
            memory_from_suite,
            output: OUTPUT_LIMIT,
        }
    }
}

/// A time limit with the default memory and output limits.
impl From<Duration> for Limits {
    fn from(timeout: Duration) -> Limits {
        Limits::new(timeout, MemoryLimit::Default)
    }
}

/// The environment variable that marks every process a worker starts (inherited by the
/// plugin's children), so the harness finds and kills those that left the worker's process
/// group.
const TOKEN_VAR: &str = "DLM_BENCH_WORKER_TOKEN";
/// The harness's pid, so a worker whose parent died before it set its parent-death signal
/// notices and exits.
const PARENT_VAR: &str = "DLM_BENCH_WORKER_PARENT";

/// Child side of the containment, first thing in the worker: die with the harness. The worker
/// runs in its own process group, so a Ctrl-C at the terminal reaches only the harness; the
/// parent-death signal takes the worker down with it.
pub(super) fn contain_self() {
    #[cfg(target_os = "linux")]
    {
        use rustix::process::{getppid, set_parent_process_death_signal, Pid, Signal};
        let _ = set_parent_process_death_signal(Some(Signal::KILL));
        if let Some(parent) = std::env::var(PARENT_VAR)
            .ok()
            .and_then(|v| v.parse::<i32>().ok())
        {
            if Pid::as_raw(getppid()) != parent {
                // The harness died before the signal was armed.
                std::process::exit(1);
            }
        }
    }
}

/// Why the poll loop stopped.
enum Ended {
    Exited(std::process::ExitStatus),
    TimedOut,
    Memory(u64),
    Output,
}

/// Run `job` in a worker process and wait for it, within `limits` (a `Duration` is a time
/// limit with the default memory and output limits). `scratch` is a directory for the job,
/// event and log files (named by `name`).
///
/// The worker leads a process group of its own. Whatever ends the job — success, failure,
/// crash, or a limit — the whole group is killed afterwards, and so is every process that
/// carries the job's token in its environment (a child that left the group with `setsid`), so
/// nothing a plugin started outlives its job.
pub fn run_job(
    job: &Job,
    scratch: &Path,
    name: &str,
    limits: impl Into<Limits>,
    mut on_progress: impl FnMut(&str, usize, usize, Option<&str>),
) -> Result<Outcome> {
    let limits = limits.into();
    let files = JobFiles::new(scratch, name);
    std::fs::write(&files.job, serde_json::to_vec(job)?)?;
    let _ = std::fs::remove_file(&files.events);
    let log = std::fs::File::create(&files.log)?;
    let log_size = log.try_clone()?;
    let token = job_token();
    let started = Instant::now();
    let mut child = spawn_worker(&files, &token, log)?;
    let mut memory = MemoryWatch::new(child.id());
    let mut events = EventReader::new(&files.events);
    let mut poll = Duration::from_micros(500);
    let ended = loop {
        let exited = child.try_wait()?;
        events.read_new(&mut on_progress);
        if let Some(status) = exited {
            break Ended::Exited(status);
        }
        if started.elapsed() > limits.timeout {
            break Ended::TimedOut;
        }
        if log_size.metadata().map_or(0, |m| m.len()) > limits.output {
            break Ended::Output;
        }
        if let Some(limit) = limits.memory {
            let used = memory.sample();
            if used > limit {
                break Ended::Memory(used);
            }
        }
        // Back off from 1 ms to 20 ms: short jobs finish promptly, long ones cost no CPU.
        poll = (poll * 2).min(Duration::from_millis(20));
        std::thread::sleep(poll);
    };
    // Nothing the plugin started outlives the job: not the worker, not its children.
    kill_tree(child.id(), &token);
    let ended = match ended {
        // Limits hold however the worker ended: a finished job that wrote past the output
        // limit, or peaked over the memory limit between two polls, still fails.
        Ended::Exited(status) => {
            if log_size.metadata().map_or(0, |m| m.len()) > limits.output {
                Ended::Output
            } else if limits.memory.is_some_and(|limit| memory.peak > limit) {
                Ended::Memory(memory.peak)
            } else {
                Ended::Exited(status)
            }
        }
        other => {
            let _ = child.wait();
            other
        }
    };
    if matches!(ended, Ended::Output) {
        cut_log(&log_size, &files.log, limits.output);
    }
    // A flood of output needs only a glimpse.
    let tail = log_tail(
        &files.log,
        if matches!(ended, Ended::Output) {
            3
        } else {
            12
        },
    );
    let outcome = outcome_of(ended, events.last, &limits, &tail);
    files.clean_up(&outcome);
    Ok(outcome)
}

/// The files of one job in the scratch directory: the job the parent writes, the events the
/// worker writes, and the worker's stdout and stderr.
struct JobFiles {
    job: PathBuf,
    events: PathBuf,
    log: PathBuf,
}

impl JobFiles {
    fn new(scratch: &Path, name: &str) -> Self {
        JobFiles {
            job: scratch.join(format!("{name}.job.json")),
            events: scratch.join(format!("{name}.events.jsonl")),
            log: scratch.join(format!("{name}.log")),
        }
    }

    /// A finished job leaves nothing but a log with content; a failed one keeps its job and
    /// events for inspection.
    fn clean_up(&self, outcome: &Outcome) {
        if matches!(
            outcome,
            Outcome::Finished(_) | Outcome::Described(_) | Outcome::Trained(_)
        ) {
            let _ = std::fs::remove_file(&self.job);
            let _ = std::fs::remove_file(&self.events);
        }
        // A log the plugin wrote nothing to says nothing: keep only logs with content.
        if std::fs::metadata(&self.log).is_ok_and(|m| m.len() == 0) {
            let _ = std::fs::remove_file(&self.log);
        }
    }
}

/// glibc's allocator settings for workers: blocks up to 32 MiB come from the heap, and freed
/// memory stays there (trimmed only above 16 GiB, grown 256 MiB at a time). With glibc's
/// defaults a forward pass's large temporaries are fresh `mmap`s, each page faulted in and
/// zeroed by the kernel and unmapped again after every op: the 16 × 512 MDM forward took
/// 938 ms with them and 662 ms with these (docs/performance.md, issue 34). Values are the same
/// (only where blocks live changes); a worker's memory stays at its peak until it exits.
/// Other C libraries ignore the variable; a user's own `GLIBC_TUNABLES` is kept as it is.
pub(crate) const WORKER_MALLOC_TUNABLES: &str = "glibc.malloc.mmap_threshold=33554432:\
     glibc.malloc.trim_threshold=17179869184:glibc.malloc.top_pad=268435456";

/// The `GLIBC_TUNABLES` to give a worker when the harness's own environment has `existing`:
/// ours when there is none, nothing (the inherited value) otherwise.
fn worker_malloc_tunables(existing: Option<std::ffi::OsString>) -> Option<&'static str> {
    existing.is_none().then_some(WORKER_MALLOC_TUNABLES)
}

/// Start `dlm-bench worker` on the job in its own process group, tagged with `token`.
fn spawn_worker(files: &JobFiles, token: &str, log: std::fs::File) -> Result<Child> {
    let mut command = Command::new(worker_exe()?);
    // Symbolising a panic backtrace of a large plugin can outlast a cell's time limit, and the
    // panic message already reaches the report; opt back in with DLM_BENCH_WORKER_BACKTRACE=1.
    if std::env::var_os("DLM_BENCH_WORKER_BACKTRACE").is_none() {
        command.env("RUST_BACKTRACE", "0");
    }
    if let Some(tunables) = worker_malloc_tunables(std::env::var_os("GLIBC_TUNABLES")) {
        command.env("GLIBC_TUNABLES", tunables);
    }
    #[cfg(unix)]
    {
        use std::os::unix::process::CommandExt;
        command.process_group(0);
    }
    command
        .env(TOKEN_VAR, token)
        .env(PARENT_VAR, std::process::id().to_string())
        .arg("worker")
        .arg("--job")
        .arg(&files.job)
        .arg("--events")
        .arg(&files.events)
        .stdin(Stdio::null())
        .stdout(log.try_clone()?)
        .stderr(log)
        .spawn()
        .context("cannot start a worker process")
}

/// Reads the worker's events file as it grows: progress goes to the callback, the last other
/// event is kept.
struct EventReader<'a> {
    path: &'a Path,
    seen_lines: usize,
    last: Option<Event>,
}

impl<'a> EventReader<'a> {
    fn new(path: &'a Path) -> Self {
        EventReader {
            path,
            seen_lines: 0,
            last: None,
        }
    }

    fn read_new(&mut self, on_progress: &mut impl FnMut(&str, usize, usize, Option<&str>)) {
        let Ok(f) = std::fs::File::open(self.path) else {
            return;
        };
        let lines: Vec<String> = std::io::BufReader::new(f)
            .lines()
            .map_while(Result::ok)
            .collect();
        for line in lines.iter().skip(self.seen_lines) {
            match serde_json::from_str::<Event>(line) {
                Ok(Event::Progress {
                    phase,
                    done,
                    total,
                    message,
                }) => on_progress(&phase, done, total, message.as_deref()),
                Ok(e) => self.last = Some(e),
                Err(_) => {} // a line being written; read again next round
            }
        }
        // Only count lines that parsed fully, so a half-written line is re-read.
        self.seen_lines = lines
            .iter()
            .take_while(|l| serde_json::from_str::<Event>(l).is_ok())
            .count();
    }
}

/// Keep the log at the limit, with a note where it was cut.
fn cut_log(log: &std::fs::File, path: &Path, limit: u64) {
    let _ = log.set_len(limit);
    if let Ok(mut f) = std::fs::OpenOptions::new().append(true).open(path) {
        let _ = writeln!(
            f,
            "\n[dlm-bench: log cut at {} (output limit)]",
            format_bytes(limit)
        );
    }
}

/// The job's outcome from how the worker ended and the last event it wrote.
fn outcome_of(ended: Ended, last: Option<Event>, limits: &Limits, tail: &str) -> Outcome {
    match (ended, last) {
        (Ended::TimedOut, _) => Outcome::Failed(
            format!(
                "timed out after {:.0} s (the limit `timeout_seconds`); worker killed{tail}",
                limits.timeout.as_secs_f64()
            ),
            None,
        ),
        (Ended::Memory(used), _) => Outcome::Failed(
            format!(
            "memory limit ({}, {}) exceeded: the worker and its child processes reached {} resident; worker killed{tail}",
            format_bytes(limits.memory.unwrap_or_default()),
            if limits.memory_from_suite {
                "the suite's `memory_limit`"
            } else {
                "the default `memory_limit`, min(16 GiB, 3/4 of physical memory)"
            },
            format_bytes(used)
            ),
            None,
        ),
        (Ended::Output, _) => Outcome::Failed(
            format!(
                "output limit ({} of log) exceeded: the worker wrote more than that to stdout and stderr; worker killed and its log cut at the limit{tail}",
                format_bytes(limits.output)
            ),
            None,
        ),
        (Ended::Exited(_), Some(Event::Described { descriptor })) => {
            Outcome::Described(descriptor)
        }
        (Ended::Exited(_), Some(Event::Finished { output })) => Outcome::Finished(output),
        (Ended::Exited(_), Some(Event::Trained { output })) => Outcome::Trained(output),
        (Ended::Exited(_), Some(Event::Failed { message, kind })) => Outcome::Failed(message, kind),
        (Ended::Exited(status), _) => {
            Outcome::Failed(format!("worker {}{tail}", describe_exit(status)), None)
        }
    }
}

/// A token unique to one job: this process, a counter and the clock.
fn job_token() -> String {
    static COUNTER: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
    let n = COUNTER.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos());
    format!("{}-{n}-{nanos:x}", std::process::id())
}

/// Kill the worker's process group (the worker leads it), then every process still carrying
/// the job's token (those that left the group with `setsid`), a few rounds in case one was
/// forking meanwhile.
fn kill_tree(pgid: u32, token: &str) {
    #[cfg(unix)]
    {
        use rustix::process::{kill_process, kill_process_group, Pid, Signal};
        if let Some(pid) = Pid::from_raw(pgid as i32) {
            let _ = kill_process_group(pid, Signal::KILL);
        }
        for _ in 0..8 {
            let found = processes_with_token(token);
            if found.is_empty() {
                break;
            }
            for pid in found {
                if let Some(pid) = Pid::from_raw(pid) {
                    let _ = kill_process(pid, Signal::KILL);
                }
            }
            std::thread::sleep(Duration::from_millis(2));
        }
    }
}

/// Processes (other than this one) whose environment holds `TOKEN_VAR=token` — found through
/// `/proc`, so only on Linux and only those of this user.
fn processes_with_token(token: &str) -> Vec<i32> {
    let needle = format!("{TOKEN_VAR}={token}\0").into_bytes();
    let me = std::process::id() as i32;
    proc_pids()
        .filter(|&pid| pid != me)
        .filter(|pid| {
            std::fs::read(format!("/proc/{pid}/environ"))
                .is_ok_and(|env| env.windows(needle.len()).any(|w| w == needle.as_slice()))
        })
        .collect()
}

fn proc_pids() -> impl Iterator<Item = i32> {
    std::fs::read_dir("/proc")
        .into_iter()
        .flatten()
        .filter_map(|e| e.ok()?.file_name().to_str()?.parse::<i32>().ok())
}

/// A `/proc/PID/status` field in bytes (`VmRSS`, `VmHWM`: given in kB).
fn status_bytes(pid: i32, field: &str) -> Option<u64> {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
    let kb = status
        .lines()
        .find_map(|l| l.strip_prefix(field)?.strip_prefix(':'))?
        .trim()
        .trim_end_matches("kB")
        .trim()
        .parse::<u64>()
        .ok()?;
    Some(kb * 1024)
}

/// The process group of `pid` (field 5 of `/proc/PID/stat`, after the parenthesised name).
fn process_group_of(pid: i32) -> Option<i32> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    let rest = &stat[stat.rfind(')')? + 1..];
    rest.split_whitespace().nth(2)?.parse().ok()
}

/// Resident memory of a worker and its process group, from `/proc` (Linux; elsewhere nothing
/// is measured). The worker's own figure is its peak (`VmHWM`), read at every poll; the rest of
/// the group is summed every quarter second.
struct MemoryWatch {
    pid: i32,
    /// The latest total of the group's other processes.
    others: u64,
    last_scan: Option<Instant>,
    /// The highest total seen.
    peak: u64,
}

impl MemoryWatch {
    fn new(pid: u32) -> MemoryWatch {
        MemoryWatch {
            pid: pid as i32,
            others: 0,
            last_scan: None,
            peak: 0,
        }
    }

    /// The current total: the worker's peak resident set plus its group's current ones.
    fn sample(&mut self) -> u64 {
        let own = status_bytes(self.pid, "VmHWM").unwrap_or(0);
        if self
            .last_scan
            .is_none_or(|t| t.elapsed() >= Duration::from_millis(250))
        {
            self.last_scan = Some(Instant::now());
            self.others = proc_pids()
                .filter(|&p| p != self.pid && process_group_of(p) == Some(self.pid))
                .filter_map(|p| status_bytes(p, "VmRSS"))
                .sum();
        }
        let total = own + self.others;
        self.peak = self.peak.max(total);
        total
    }
}

fn describe_exit(status: std::process::ExitStatus) -> String {
    #[cfg(unix)]
    {
        use std::os::unix::process::ExitStatusExt;
        if let Some(sig) = status.signal() {
            let name = match sig {
                6 => " (SIGABRT: the plugin aborted)",
                9 => " (SIGKILL; from outside the harness, e.g. the system's out-of-memory killer)",
                11 => " (SIGSEGV: the plugin crashed)",
                7 => " (SIGBUS)",
                4 => " (SIGILL)",
                8 => " (SIGFPE)",
                _ => "",
            };
            return format!("killed by signal {sig}{name}");
        }
    }
    match status.code() {
        Some(c) => format!("exited with code {c} without reporting a result"),
        None => "ended abnormally".to_string(),
    }
}

/// The last `lines` non-empty lines of the log (read from its last 64 KiB; each cut at 300
/// characters, so a flood of output does not flood the cause).
pub(super) fn log_tail(path: &Path, lines: usize) -> String {
    use std::io::{Read, Seek, SeekFrom};
    const WINDOW: u64 = 64 << 10;
    let mut bytes = Vec::new();
    if let Ok(mut f) = std::fs::File::open(path) {
        let len = f.metadata().map_or(0, |m| m.len());
        if f.seek(SeekFrom::Start(len.saturating_sub(WINDOW))).is_ok() {
            let _ = f.take(WINDOW).read_to_end(&mut bytes);
        }
    }
    let text = String::from_utf8_lossy(&bytes);
    let all: Vec<String> = text
        .lines()
        .filter(|l| !l.trim().is_empty())
        .map(|l| {
            if l.chars().count() > 300 {
                format!("{}…", l.chars().take(300).collect::<String>())
            } else {
                l.to_string()
            }
        })
        .collect();
    if all.is_empty() {
        return String::new();
    }
    let start = all.len().saturating_sub(lines);
    format!(
        "; last log lines ({}):\n  {}",
        path.display(),
        all[start..].join("\n  ")
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn workers_get_the_malloc_tunables_unless_the_user_set_their_own() {
        assert_eq!(worker_malloc_tunables(None), Some(WORKER_MALLOC_TUNABLES));
        assert_eq!(
            worker_malloc_tunables(Some("glibc.malloc.arena_max=1".into())),
            None
        );
    }

    /// glibc ignores a malformed `GLIBC_TUNABLES` without a word, so ask its loader which
    /// values it took (`ld.so --list-tunables`, glibc ≥ 2.33: Debian 12 and CI have 2.36).
    #[cfg(all(target_os = "linux", target_arch = "x86_64", target_env = "gnu"))]
    #[test]
    fn glibc_takes_every_worker_malloc_tunable() {
        let out = Command::new("/lib64/ld-linux-x86-64.so.2")
            .arg("--list-tunables")
            .env("GLIBC_TUNABLES", WORKER_MALLOC_TUNABLES)
            .output()
            .expect("glibc's loader runs");
        let listed = String::from_utf8_lossy(&out.stdout);
        for (name, hex) in [
            ("glibc.malloc.mmap_threshold", "0x2000000"),
            ("glibc.malloc.trim_threshold", "0x400000000"),
            ("glibc.malloc.top_pad", "0x10000000"),
        ] {
            assert!(
                listed
                    .lines()
                    .any(|l| l.starts_with(&format!("{name}: {hex} "))),
                "glibc did not take {name} = {hex} from {WORKER_MALLOC_TUNABLES:?}:\n{listed}"
            );
        }
    }
}
