//! The bubblewrap sandbox: one fresh process tree per sample.
//!
//! Each run is (when the harness runs as root, prefixed by
//! `setpriv --reuid=65534 --regid=65534 --clear-groups --` so that bwrap itself, and the uid
//! the sandbox maps to on the host, is `nobody` rather than root):
//!
//! ```text
//! bwrap --unshare-all --unshare-user --disable-userns --die-with-parent --new-session
//!       --clearenv --setenv PATH /usr/bin:/bin --setenv HOME /sandbox --setenv LANG C.UTF-8
//!       --uid 65534 --gid 65534 --hostname sandbox
//!       --ro-bind /usr /usr  (+ /bin, /lib, /lib64, /sbin: symlinks into /usr, or read-only binds)
//!       --proc /proc
//!       --size 65536 --tmpfs /dev --dev-bind /dev/null /dev/null (+ zero, full, random, urandom)
//!       --symlink /proc/self/fd /dev/fd (+ stdin, stdout, stderr)
//!       --size <tmpfs_bytes> --tmpfs /dev/shm --remount-ro /dev
//!       --size <tmpfs_bytes> --tmpfs /sandbox --size <tmpfs_bytes> --tmpfs /tmp
//!       --remount-ro / --chdir /sandbox
//!       -- /usr/bin/prlimit --as=<bytes> --cpu=<s>:<s+1> --nproc=<n> --fsize=<bytes>
//!          --nofile=<n> --core=0 -- /usr/bin/python3 -I -
//! ```
//!
//! The program arrives on stdin. The root is bwrap's own tmpfs, remounted read-only; only
//! `/sandbox`, `/tmp` and `/dev/shm` (size-capped tmpfs) are writable. `/dev` is a 64 KiB tmpfs
//! holding five device nodes, remounted read-only (bwrap's `--dev` would be an uncapped tmpfs
//! the sample can fill with host memory). Nothing of the host is visible except `/usr`
//! (read-only): no `/etc`, `/home`, `/root`, `/work`, `/tmp` of the host. The network namespace
//! has only its own loopback. The wall-clock timeout kills bwrap (SIGKILL); its PID-1 reaper
//! inside the namespace dies with it (`--die-with-parent`), and the kernel then kills every
//! process left in the PID namespace, including daemonised ones. stdout and stderr are read by
//! threads and capped; passing the cap kills the sandbox too.
//!
//! The whole sandbox has a memory cap, [`SandboxConfig::memory_bytes`]: a fresh memory cgroup
//! per sample where one can be made, joined by a `/bin/sh` wrapper before it execs the line
//! above, else rlimits ([`cgroup`]). Every process the runner starts is waited for, including
//! bwrap's PID 1, which bwrap itself leaves unreaped (`sandbox/reap.rs`). See also
//! `docs/sandbox.md`.
//!
//! Before first use, [`Sandbox::new`] runs a probe; if bwrap is missing or cannot create its
//! namespaces, code execution is refused with a [`SandboxError::Unavailable`] that says why and
//! how to fix it. There is no unsandboxed fall-back.
use std::io::{Read, Write};
use std::os::unix::fs::MetadataExt;
use std::os::unix::process::{CommandExt, ExitStatusExt};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use serde::{Deserialize, Serialize};

use crate::program::{judge, Observed, Outcome, TestProgram};

pub mod cgroup;
mod reap;

use cgroup::SampleGroup;
pub use cgroup::{MemoryCap, MemoryCapMode, RLIMIT_MODE_PROCESSES};

/// The smallest accepted [`SandboxConfig::memory_bytes`]: under the rlimit cap, each of the
/// [`RLIMIT_MODE_PROCESSES`] processes then still gets the 64 MiB of address space Python
/// needs to start with a thread.
pub const MIN_MEMORY_BYTES: u64 = 512 << 20;

/// Device nodes bound into the sandbox's read-only `/dev`.
const DEVICES: [&str; 5] = ["null", "zero", "full", "random", "urandom"];

/// Limits and paths of the sandbox.
#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(default)]
pub struct SandboxConfig {
    /// The bwrap binary (looked up on `PATH` when relative).
    pub bwrap: PathBuf,
    /// `setpriv` (util-linux), used to become `drop_uid` before bwrap when running as root.
    pub setpriv: PathBuf,
    /// `prlimit` (util-linux), run inside the sandbox to set the rlimits; must be under a bind.
    pub prlimit: PathBuf,
    /// The Python interpreter inside the sandbox; must be under a bind.
    pub python: PathBuf,
    /// Host directories bound read-only at the same path (default `/usr`).
    pub ro_binds: Vec<PathBuf>,
    /// Wall-clock limit per sample.
    pub timeout: Duration,
    /// RLIMIT_CPU soft limit, seconds (hard = soft + 1; SIGXCPU at soft).
    pub cpu_seconds: u64,
    /// RLIMIT_AS per process, bytes (lowered under the rlimit cap, see [`MemoryCap::Rlimit`]).
    pub address_space_bytes: u64,
    /// Memory cap for the whole sandbox, bytes: all its processes together and, under a
    /// cgroup, everything they write to its tmpfs (without one, see [`cgroup`]'s gaps). At
    /// least [`MIN_MEMORY_BYTES`].
    pub memory_bytes: u64,
    /// How the memory cap is enforced (default: a cgroup where possible, else rlimits).
    pub memory_cap: MemoryCapMode,
    /// RLIMIT_FSIZE, bytes.
    pub file_size_bytes: u64,
    /// Size of each writable tmpfs (`/sandbox`, `/tmp`, `/dev/shm`), bytes.
    pub tmpfs_bytes: u64,
    /// RLIMIT_NOFILE.
    pub open_files: u64,
    /// RLIMIT_NPROC (counted per uid inside the sample's own user namespace; threads count;
    /// at most [`RLIMIT_MODE_PROCESSES`] under the rlimit cap).
    pub processes: u64,
    /// Cap per output stream, bytes; more kills the sandbox ([`crate::Cause::OutputLimit`]).
    pub output_limit_bytes: usize,
    /// Samples run at once by [`Sandbox::run_many`]; 0 means the number of cores.
    pub parallelism: usize,
    /// The host uid/gid bwrap runs as when the harness is root (default 65534, `nobody`).
    pub drop_uid: u32,
}

impl Default for SandboxConfig {
    fn default() -> Self {
        SandboxConfig {
            bwrap: PathBuf::from("bwrap"),
            setpriv: PathBuf::from("/usr/bin/setpriv"),
            prlimit: PathBuf::from("/usr/bin/prlimit"),
            python: PathBuf::from("/usr/bin/python3"),
            ro_binds: vec![PathBuf::from("/usr")],
            timeout: Duration::from_secs(10),
            cpu_seconds: 10,
            address_space_bytes: 1 << 30,
            memory_bytes: 1 << 30,
            memory_cap: MemoryCapMode::Auto,
            file_size_bytes: 16 << 20,
            tmpfs_bytes: 64 << 20,
            open_files: 64,
            processes: 32,
            output_limit_bytes: 256 << 10,
            parallelism: 0,
            drop_uid: 65534,
        }
    }
}

/// Why the sandbox cannot be used.
#[derive(Debug, thiserror::Error)]
pub enum SandboxError {
    /// The caller did not opt in.
    #[error(
        "code execution is disabled: running model-generated code needs an explicit opt-in \
         (allow_code_execution = true)"
    )]
    NotAllowed,
    /// A limit is out of range.
    #[error("sandbox config: {0}")]
    InvalidConfig(String),
    /// The sandbox cannot run here.
    #[error(
        "code execution refused: the sandbox is unavailable: {reason}. {help} \
         (there is no unsandboxed fall-back)"
    )]
    Unavailable {
        /// What failed.
        reason: String,
        /// How to fix it.
        help: String,
    },
}

const HELP_INSTALL: &str = "Install bubblewrap with tools/install-sandbox.sh \
    (apt-get install bubblewrap)";
const HELP_USERNS: &str = "Enable unprivileged user namespaces: sysctl \
    kernel.unprivileged_userns_clone=1 and user.max_user_namespaces>0 (Debian/Ubuntu), \
    kernel.apparmor_restrict_unprivileged_userns=0 (Ubuntu 24.04+), or run the container \
    with a seccomp profile that allows clone(CLONE_NEWUSER) (e.g. docker --security-opt \
    seccomp=unconfined); then rerun tools/install-sandbox.sh to check";

/// The result of one run.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct ExecResult {
    /// The verdict.
    pub outcome: Outcome,
    /// Wall-clock time of the whole sandbox, start to exit.
    pub wall: Duration,
    /// The sandbox's exit status (None when killed by the harness).
    pub exit_code: Option<i32>,
    /// The last few KB of stdout (lossy UTF-8), for diagnostics.
    pub stdout_tail: String,
    /// The last few KB of stderr (lossy UTF-8), for diagnostics.
    pub stderr_tail: String,
}

/// The raw observation of running some stdin through the sandbox's python.
#[derive(Clone, Debug, Default)]
pub struct RawRun {
    /// Captured stdout, up to the cap.
    pub stdout: Vec<u8>,
    /// Captured stderr, up to the cap.
    pub stderr: Vec<u8>,
    /// Exit status (None when killed by the harness).
    pub exit_code: Option<i32>,
    /// Killed at the wall-clock timeout.
    pub timed_out: bool,
    /// Killed because an output stream passed its cap.
    pub output_limited: bool,
    /// The sandbox's memory cgroup OOM-killed a process (its memory cap was reached).
    pub memory_limited: bool,
    /// Wall-clock time.
    pub wall: Duration,
}

/// A probed, usable sandbox. Build it with [`Sandbox::new`]; it is `Sync`, so one can serve
/// many threads.
#[derive(Debug)]
pub struct Sandbox {
    config: SandboxConfig,
    bwrap: PathBuf,
    as_root: bool,
    memory_cap: MemoryCap,
}

impl Sandbox {
    /// Opts in to code execution and probes the sandbox. Refuses with
    /// [`SandboxError::NotAllowed`] unless `allow_code_execution`, and with
    /// [`SandboxError::Unavailable`] when bwrap is missing or cannot create its namespaces.
    pub fn new(allow_code_execution: bool, config: SandboxConfig) -> Result<Self, SandboxError> {
        if !allow_code_execution {
            return Err(SandboxError::NotAllowed);
        }
        if config.memory_bytes < MIN_MEMORY_BYTES {
            return Err(SandboxError::InvalidConfig(format!(
                "memory_bytes must be at least {MIN_MEMORY_BYTES} (512 MiB), got {}",
                config.memory_bytes
            )));
        }
        let unavailable = |reason: String, help: &str| SandboxError::Unavailable {
            reason,
            help: help.to_string(),
        };
        let bwrap = resolve(&config.bwrap).ok_or_else(|| {
            unavailable(
                format!("`{}` not found on PATH", config.bwrap.display()),
                HELP_INSTALL,
            )
        })?;
        let as_root = std::fs::metadata("/proc/self")
            .map(|m| m.uid() == 0)
            .unwrap_or(false);
        if as_root && !config.setpriv.is_file() {
            return Err(unavailable(
                format!(
                    "running as root, and `{}` (util-linux), needed to drop to uid {} before \
                     bwrap, is missing",
                    config.setpriv.display(),
                    config.drop_uid
                ),
                "Install util-linux (setpriv), or run as an unprivileged user",
            ));
        }
        for (what, p) in [("python", &config.python), ("prlimit", &config.prlimit)] {
            if !p.is_file() {
                return Err(unavailable(
                    format!("{what} `{}` does not exist", p.display()),
                    "Install python3 and util-linux, or set SandboxConfig paths",
                ));
            }
            if !config.ro_binds.iter().any(|b| p.starts_with(b)) {
                return Err(unavailable(
                    format!("{what} `{}` is not under a read-only bind", p.display()),
                    "Add its directory to SandboxConfig::ro_binds",
                ));
            }
        }
        reap::become_subreaper().map_err(|e| unavailable(e, HELP_INSTALL))?;
        let caps = cgroup::candidates(config.memory_cap).map_err(|e| {
            unavailable(
                format!("memory_cap is `cgroup` but no memory cgroup can be made here ({e})"),
                "Run as root on a host with a writable memory cgroup hierarchy, delegate a \
                 cgroup v2 subtree with the memory controller to this user, or use \
                 memory_cap `auto`",
            )
        })?;
        // The first cap under which the real command line works; a cgroup that cannot be
        // joined falls through to the next (ending with rlimits unless `cgroup` was asked).
        let mut failure = None;
        for memory_cap in caps {
            let sandbox = Sandbox {
                config: config.clone(),
                bwrap: bwrap.clone(),
                as_root,
                memory_cap,
            };
            match sandbox.probe() {
                Ok(()) => return Ok(sandbox),
                Err(e) => failure = failure.or(Some(e)),
            }
        }
        Err(failure.expect("at least one memory cap is tried"))
    }

    /// Runs the real command line once: python must run as uid 65534 in an empty /sandbox.
    fn probe(&self) -> Result<(), SandboxError> {
        let probe = "import os\nprint('dlm-probe', os.getuid(), len(os.listdir('/sandbox')))\n";
        let run = self.run_raw(probe.as_bytes());
        let out = String::from_utf8_lossy(&run.stdout);
        if out.contains("dlm-probe 65534 0") {
            return Ok(());
        }
        let err = String::from_utf8_lossy(&run.stderr).trim().to_string();
        let help = if err.contains("namespace")
            || err.contains("uid map")
            || err.contains("Operation not permitted")
            || err.contains("Permission denied")
        {
            HELP_USERNS
        } else {
            HELP_INSTALL
        };
        Err(SandboxError::Unavailable {
            reason: format!(
                "the probe run failed (memory cap: {}, exit {:?}, timed out: {}): {}",
                self.memory_cap.label(),
                run.exit_code,
                run.timed_out,
                if err.is_empty() { out.trim() } else { &err }
            ),
            help: help.to_string(),
        })
    }

    /// How the whole-sandbox memory cap is enforced here.
    pub fn memory_cap(&self) -> &MemoryCap {
        &self.memory_cap
    }

    /// `(RLIMIT_AS, RLIMIT_NPROC)` of the sandbox's processes: the configured ones, except that
    /// under the rlimit cap their product may not pass the memory cap.
    pub fn process_limits(&self) -> (u64, u64) {
        let c = &self.config;
        match self.memory_cap {
            MemoryCap::Rlimit => {
                let processes = c.processes.clamp(1, RLIMIT_MODE_PROCESSES);
                let per_process = c.memory_bytes / RLIMIT_MODE_PROCESSES;
                (c.address_space_bytes.min(per_process), processes)
            }
            _ => (c.address_space_bytes, c.processes),
        }
    }

    /// The configuration.
    pub fn config(&self) -> &SandboxConfig {
        &self.config
    }

    /// The samples run at once by [`Sandbox::run_many`].
    pub fn parallelism(&self) -> usize {
        if self.config.parallelism > 0 {
            self.config.parallelism
        } else {
            std::thread::available_parallelism()
                .map(|n| n.get())
                .unwrap_or(1)
        }
    }

    /// The command line of one run (program on stdin). Under a cgroup cap each run is
    /// prefixed by `/bin/sh -c 'echo $$ > <its group>/cgroup.procs && exec "$@"'`.
    pub fn command_line(&self) -> Vec<String> {
        let c = &self.config;
        let mut v: Vec<String> = Vec::new();
        if self.as_root {
            v.push(c.setpriv.display().to_string());
            v.push(format!("--reuid={}", c.drop_uid));
            v.push(format!("--regid={}", c.drop_uid));
            v.push("--clear-groups".into());
            v.push("--".into());
        }
        v.push(self.bwrap.display().to_string());
        let s = |x: &str| x.to_string();
        v.extend(
            [
                "--unshare-all",
                "--unshare-user",
                "--disable-userns",
                "--die-with-parent",
                "--new-session",
                "--clearenv",
                "--setenv",
                "PATH",
                "/usr/bin:/bin",
                "--setenv",
                "HOME",
                "/sandbox",
                "--setenv",
                "LANG",
                "C.UTF-8",
                "--uid",
                "65534",
                "--gid",
                "65534",
                "--hostname",
                "sandbox",
            ]
            .map(s),
        );
        if self.memory_cap == MemoryCap::Rlimit {
            // glibc reserves 64 MiB of address space per thread arena; under a 128 MiB
            // RLIMIT_AS a four-thread program then fails a 64 MB allocation about 1 run in 50.
            v.extend(["--setenv", "MALLOC_ARENA_MAX", "1"].map(s));
        }
        for b in &c.ro_binds {
            let b = b.display().to_string();
            v.extend([s("--ro-bind"), b.clone(), b]);
        }
        // Merged-/usr systems have /bin, /lib… as symlinks into /usr; older ones as directories.
        for top in ["/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32"] {
            let p = Path::new(top);
            if c.ro_binds.iter().any(|b| b == p) {
                continue;
            }
            match std::fs::symlink_metadata(p) {
                Ok(m) if m.file_type().is_symlink() => {
                    if let Ok(t) = std::fs::read_link(p) {
                        v.extend([s("--symlink"), t.display().to_string(), s(top)]);
                    }
                }
                Ok(m) if m.is_dir() => v.extend([s("--ro-bind"), s(top), s(top)]),
                _ => {}
            }
        }
        let size = c.tmpfs_bytes.to_string();
        v.extend(["--proc", "/proc", "--size", "65536", "--tmpfs", "/dev"].map(s));
        for dev in DEVICES {
            let node = format!("/dev/{dev}");
            v.extend([s("--dev-bind"), node.clone(), node]);
        }
        for (link, target) in [
            ("fd", "/proc/self/fd"),
            ("stdin", "/proc/self/fd/0"),
            ("stdout", "/proc/self/fd/1"),
            ("stderr", "/proc/self/fd/2"),
        ] {
            v.extend([s("--symlink"), s(target), format!("/dev/{link}")]);
        }
        // /dev/shm before /dev goes read-only (its mount point must be made); the remount
        // does not reach the mounts below /dev.
        v.extend(
            [
                "--size",
                &size,
                "--tmpfs",
                "/dev/shm",
                "--remount-ro",
                "/dev",
                "--size",
                &size,
                "--tmpfs",
                "/sandbox",
                "--size",
                &size,
                "--tmpfs",
                "/tmp",
                "--remount-ro",
                "/",
                "--chdir",
                "/sandbox",
                "--",
            ]
            .map(s),
        );
        let (address_space, processes) = self.process_limits();
        v.push(c.prlimit.display().to_string());
        v.push(format!("--as={address_space}"));
        v.push(format!("--cpu={}:{}", c.cpu_seconds, c.cpu_seconds + 1));
        v.push(format!("--nproc={processes}"));
        v.push(format!("--fsize={}", c.file_size_bytes));
        v.push(format!("--nofile={}", c.open_files));
        v.push("--core=0".into());
        v.push("--".into());
        v.push(c.python.display().to_string());
        v.push("-I".into());
        v.push("-".into());
        v
    }

    /// Runs one test program in a fresh sandbox and judges it.
    pub fn run(&self, program: &TestProgram) -> ExecResult {
        let rendered = program.render();
        let raw = self.run_raw(rendered.source.as_bytes());
        let outcome = judge(
            &rendered.token,
            &Observed {
                stdout: &raw.stdout,
                stderr: &raw.stderr,
                exit_code: raw.exit_code,
                timed_out: raw.timed_out,
                output_limited: raw.output_limited,
                memory_limited: raw.memory_limited,
            },
        );
        ExecResult {
            outcome,
            wall: raw.wall,
            exit_code: raw.exit_code,
            stdout_tail: tail(&raw.stdout, 4096),
            stderr_tail: tail(&raw.stderr, 4096),
        }
    }

    /// Runs many programs, [`Sandbox::parallelism`] at a time; results in input order. Each
    /// program gets its own sandbox and nonce, so results do not depend on the parallelism.
    pub fn run_many(&self, programs: &[TestProgram]) -> Vec<ExecResult> {
        let next = AtomicUsize::new(0);
        let workers = self.parallelism().min(programs.len()).max(1);
        let mut results: Vec<Option<ExecResult>> = vec![None; programs.len()];
        let done: Vec<Vec<(usize, ExecResult)>> = std::thread::scope(|scope| {
            let handles: Vec<_> = (0..workers)
                .map(|_| {
                    scope.spawn(|| {
                        let mut mine = Vec::new();
                        loop {
                            let i = next.fetch_add(1, Ordering::Relaxed);
                            if i >= programs.len() {
                                break mine;
                            }
                            mine.push((i, self.run(&programs[i])));
                        }
                    })
                })
                .collect();
            handles
                .into_iter()
                .map(|h| h.join().expect("sandbox worker panicked"))
                .collect()
        });
        for (i, r) in done.into_iter().flatten() {
            results[i] = Some(r);
        }
        results
            .into_iter()
            .map(|r| r.expect("every program ran"))
            .collect()
    }

    /// Feeds `stdin` to `python3 -I -` in a fresh sandbox and records what happened; no
    /// judging. The pass/fail logic is in [`Sandbox::run`].
    pub fn run_raw(&self, stdin: &[u8]) -> RawRun {
        let start = Instant::now();
        let failed = |message: String| RawRun {
            stderr: message.into_bytes(),
            exit_code: Some(127),
            wall: start.elapsed(),
            ..Default::default()
        };
        let mut argv = self.command_line();
        let group = match &self.memory_cap {
            MemoryCap::Rlimit => None,
            cap => match SampleGroup::create(cap, self.config.memory_bytes) {
                Ok(g) => Some(g),
                Err(e) => {
                    return failed(format!(
                        "bwrap: (dlm-code) cannot make the sample's memory cgroup under {}: {e}",
                        cap.label()
                    ))
                }
            },
        };
        if let Some(g) = &group {
            // The shell joins the group before it execs (setpriv and) bwrap, so every
            // process of the sandbox starts inside it; no window, no unsafe pre_exec.
            let join = "echo $$ > \"$0\" || { echo \"bwrap: (dlm-code) cannot join the \
                        memory cgroup $0\" >&2; exit 125; }; exec \"$@\"";
            let procs = g.procs().display().to_string();
            argv.splice(0..0, ["/bin/sh".into(), "-c".into(), join.into(), procs]);
        }
        let mut cmd = Command::new(&argv[0]);
        cmd.args(&argv[1..])
            .env_clear()
            .env("PATH", "/usr/bin:/bin")
            .current_dir("/")
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            // Its own process group, away from the harness's terminal signals.
            .process_group(0);
        let mut child = match reap::spawn_registered(&mut cmd) {
            Ok(c) => c,
            Err(e) => return failed(format!("bwrap: cannot start {}: {e}", argv[0])),
        };
        let overflow = Arc::new(AtomicBool::new(false));
        let cap = self.config.output_limit_bytes;
        let out_reader = spawn_reader(child.stdout.take().expect("piped"), cap, overflow.clone());
        let err_reader = spawn_reader(child.stderr.take().expect("piped"), cap, overflow.clone());
        let mut input = child.stdin.take().expect("piped");
        let data = stdin.to_vec();
        // A broken pipe just means the program died early; its outcome says why.
        let writer = std::thread::spawn(move || {
            let _ = input.write_all(&data);
        });
        let deadline = start + self.config.timeout;
        let mut timed_out = false;
        let mut output_limited = false;
        let mut sleep = Duration::from_micros(200);
        let status = loop {
            match child.try_wait() {
                Ok(Some(st)) => break Some(st),
                Ok(None) => {}
                // Not expected for our own child; make sure it is gone and waited for.
                Err(_) => break reap::kill_sandbox(&mut child),
            }
            if overflow.load(Ordering::Relaxed) {
                output_limited = true;
            } else if Instant::now() >= deadline {
                timed_out = true;
            }
            if output_limited || timed_out {
                reap::kill_sandbox(&mut child);
                break None;
            }
            std::thread::sleep(sleep);
            sleep = (sleep * 2).min(Duration::from_millis(5));
        };
        reap::waited(child.id());
        reap::reap_orphans(Duration::from_secs(10));
        let _ = writer.join();
        let (stdout, _) = out_reader.join().unwrap_or_default();
        let (stderr, _) = err_reader.join().unwrap_or_default();
        let memory_limited = group.as_ref().is_some_and(SampleGroup::oom_killed);
        drop(group);
        let exit_code = status.and_then(|s| s.code().or_else(|| s.signal().map(|n| 128 + n)));
        RawRun {
            stdout,
            stderr,
            exit_code,
            timed_out,
            output_limited,
            memory_limited,
            wall: start.elapsed(),
        }
    }
}

/// Reads a stream to EOF, keeping at most `cap` bytes; sets `overflow` when more arrive.
fn spawn_reader<R: Read + Send + 'static>(
    mut r: R,
    cap: usize,
    overflow: Arc<AtomicBool>,
) -> std::thread::JoinHandle<(Vec<u8>, bool)> {
    std::thread::spawn(move || {
        let mut kept = Vec::new();
        let mut over = false;
        let mut buf = [0u8; 16 << 10];
        loop {
            match r.read(&mut buf) {
                Ok(0) | Err(_) => break,
                Ok(n) => {
                    let room = cap.saturating_sub(kept.len());
                    kept.extend_from_slice(&buf[..n.min(room)]);
                    if n > room && !over {
                        over = true;
                        overflow.store(true, Ordering::Relaxed);
                    }
                }
            }
        }
        (kept, over)
    })
}

fn tail(bytes: &[u8], n: usize) -> String {
    let start = bytes.len().saturating_sub(n);
    String::from_utf8_lossy(&bytes[start..]).into_owned()
}

/// Finds `p` on PATH when it has no slash; checks it exists otherwise.
fn resolve(p: &Path) -> Option<PathBuf> {
    if p.components().count() > 1 {
        return p.is_file().then(|| p.to_path_buf());
    }
    let path = std::env::var_os("PATH")?;
    std::env::split_paths(&path)
        .map(|d| d.join(p))
        .find(|c| c.is_file())
}
