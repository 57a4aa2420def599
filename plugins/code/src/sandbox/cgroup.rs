//! The whole-sandbox memory cap: one memory cgroup per sample where the harness may create
//! one, else rlimits alone.
//!
//! A cgroup counts everything the sandbox's processes make resident, together: their
//! memory, every tmpfs page they write (`/sandbox`, `/tmp`, `/dev/shm`), SysV shared memory,
//! memfds, kernel memory. Past the limit the kernel reclaims, then OOM-kills inside the group
//! only. cgroup v2 is used where this process's cgroup delegates the `memory` controller;
//! cgroup v1 where its `memory` hierarchy is mounted and writable (as for root in containers on
//! v1 or hybrid hosts). Without either, the cap is enforced with rlimits (see
//! [`RLIMIT_MODE_PROCESSES`]), which bound mapped memory per process but not memory that no
//! process maps (SysV segments after `shmdt`, memfds kept open).
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use serde::{Deserialize, Serialize};

/// How to enforce [`crate::SandboxConfig::memory_bytes`].
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum MemoryCapMode {
    /// A memory cgroup when one can be created here, else rlimits.
    #[default]
    Auto,
    /// A memory cgroup, or refuse to run.
    Cgroup,
    /// rlimits only, even where a cgroup could be created.
    Rlimit,
}

/// Without a cgroup, the sandbox may hold at most this many processes and threads
/// (RLIMIT_NPROC, bwrap's own PID 1 included), each with `memory_bytes / this` of address
/// space (RLIMIT_AS): together they cannot map more than `memory_bytes`.
pub const RLIMIT_MODE_PROCESSES: u64 = 8;

/// The memory cap in force for a [`crate::Sandbox`].
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case", tag = "kind")]
pub enum MemoryCap {
    /// One cgroup v2 group per sample under `parent` (`memory.max`).
    CgroupV2 {
        /// The cgroup directory the per-sample groups are made in.
        parent: PathBuf,
    },
    /// One cgroup v1 memory group per sample under `parent` (`memory.limit_in_bytes`).
    CgroupV1 {
        /// The memory-hierarchy directory the per-sample groups are made in.
        parent: PathBuf,
    },
    /// RLIMIT_AS × RLIMIT_NPROC (see [`RLIMIT_MODE_PROCESSES`]).
    Rlimit,
}

impl MemoryCap {
    /// `cgroup v2 (<dir>)`, `cgroup v1 (<dir>)` or `rlimits`.
    pub fn label(&self) -> String {
        match self {
            MemoryCap::CgroupV2 { parent } => format!("cgroup v2 ({})", parent.display()),
            MemoryCap::CgroupV1 { parent } => format!("cgroup v1 ({})", parent.display()),
            MemoryCap::Rlimit => "rlimits".to_string(),
        }
    }

    /// `cgroup v2`, `cgroup v1` or `rlimits` (the label without the machine's path).
    pub fn kind(&self) -> &'static str {
        match self {
            MemoryCap::CgroupV2 { .. } => "cgroup v2",
            MemoryCap::CgroupV1 { .. } => "cgroup v1",
            MemoryCap::Rlimit => "rlimits",
        }
    }

    /// Whether a cgroup holds the cap.
    pub fn is_cgroup(&self) -> bool {
        !matches!(self, MemoryCap::Rlimit)
    }
}

/// The caps to try, in order, for `mode`; `Err` says why no cgroup can be used when the mode
/// demands one.
pub(crate) fn candidates(mode: MemoryCapMode) -> Result<Vec<MemoryCap>, String> {
    if mode == MemoryCapMode::Rlimit {
        return Ok(vec![MemoryCap::Rlimit]);
    }
    let mut found = Vec::new();
    let mut why = Vec::new();
    match usable_v2() {
        Ok(parent) => found.push(MemoryCap::CgroupV2 { parent }),
        Err(e) => why.push(format!("cgroup v2: {e}")),
    }
    match usable_v1() {
        Ok(parent) => found.push(MemoryCap::CgroupV1 { parent }),
        Err(e) => why.push(format!("cgroup v1: {e}")),
    }
    match mode {
        MemoryCapMode::Cgroup if found.is_empty() => Err(why.join("; ")),
        MemoryCapMode::Cgroup => Ok(found),
        _ => {
            found.push(MemoryCap::Rlimit);
            Ok(found)
        }
    }
}

/// One line of /proc/self/mountinfo: (root within the filesystem, mount point, fs type,
/// super-block options).
fn mounts() -> Vec<(String, PathBuf, String, String)> {
    parse_mountinfo(&std::fs::read_to_string("/proc/self/mountinfo").unwrap_or_default())
}

fn parse_mountinfo(text: &str) -> Vec<(String, PathBuf, String, String)> {
    text.lines()
        .filter_map(|l| {
            let (left, right) = l.split_once(" - ")?;
            let left: Vec<&str> = left.split_whitespace().collect();
            let right: Vec<&str> = right.split_whitespace().collect();
            Some((
                left.get(3)?.to_string(),
                PathBuf::from(left.get(4)?),
                right.first()?.to_string(),
                right.get(2).unwrap_or(&"").to_string(),
            ))
        })
        .collect()
}

/// The directory of this process's cgroup `path` (from /proc/self/cgroup) under a mount of
/// the hierarchy whose root within the filesystem is `root`.
fn under_mount(mount: &Path, root: &str, path: &str) -> PathBuf {
    let rel = path
        .strip_prefix(root)
        .unwrap_or(path)
        .trim_start_matches('/');
    mount.join(rel)
}

/// This process's cgroup v2 directory, if it delegates `memory` to new children.
fn usable_v2() -> Result<PathBuf, String> {
    let cgroups = std::fs::read_to_string("/proc/self/cgroup").map_err(|e| e.to_string())?;
    let path = cgroups
        .lines()
        .find_map(|l| l.strip_prefix("0::"))
        .ok_or("this process is in no cgroup v2 hierarchy")?;
    let (root, mount, ..) = mounts()
        .into_iter()
        .find(|m| m.2 == "cgroup2")
        .ok_or("no cgroup2 file system is mounted")?;
    let dir = under_mount(&mount, &root, path);
    let control = dir.join("cgroup.subtree_control");
    let delegates = |p: &Path| {
        std::fs::read_to_string(p).is_ok_and(|s| s.split_whitespace().any(|c| c == "memory"))
    };
    if !delegates(&control) {
        // Fails (EBUSY) when this group holds processes itself and is not the root.
        let _ = std::fs::write(&control, "+memory");
        if !delegates(&control) {
            return Err(format!(
                "{} does not enable the memory controller for child groups",
                control.display()
            ));
        }
    }
    trial(&dir, "memory.max").map(|()| dir)
}

/// This process's cgroup v1 memory directory, if a child group can be made there.
fn usable_v1() -> Result<PathBuf, String> {
    let cgroups = std::fs::read_to_string("/proc/self/cgroup").map_err(|e| e.to_string())?;
    let path = cgroups
        .lines()
        .find_map(|l| {
            let mut parts = l.splitn(3, ':');
            let (_, controllers, path) = (parts.next()?, parts.next()?, parts.next()?);
            controllers
                .split(',')
                .any(|c| c == "memory")
                .then(|| path.to_string())
        })
        .ok_or("no cgroup v1 memory hierarchy holds this process")?;
    let (root, mount, ..) = mounts()
        .into_iter()
        .find(|m| m.2 == "cgroup" && m.3.split(',').any(|o| o == "memory"))
        .ok_or("the cgroup v1 memory hierarchy is not mounted")?;
    let dir = under_mount(&mount, &root, &path);
    trial(&dir, "memory.limit_in_bytes").map(|()| dir)
}

/// A group name no other group of this process has: `dlm-sandbox-<pid>-<prefix><n>`.
fn group_name(prefix: &str) -> String {
    static NEXT: AtomicU64 = AtomicU64::new(0);
    let n = NEXT.fetch_add(1, Ordering::Relaxed);
    format!("dlm-sandbox-{}-{prefix}{n}", std::process::id())
}

/// Creates and removes a child group of `dir` that has the file `limit`.
fn trial(dir: &Path, limit: &str) -> Result<(), String> {
    let group = dir.join(group_name("probe-"));
    std::fs::create_dir(&group)
        .map_err(|e| format!("cannot create a group in {}: {e}", dir.display()))?;
    let ok = group.join(limit).is_file();
    let _ = std::fs::remove_dir(&group);
    if ok {
        Ok(())
    } else {
        Err(format!("a new group in {} has no {limit}", dir.display()))
    }
}

/// One sample's cgroup; removed on drop, once its processes are gone.
#[derive(Debug)]
pub(crate) struct SampleGroup {
    dir: PathBuf,
    v2: bool,
}

impl SampleGroup {
    /// Creates a fresh group under the cap's parent with `bytes` of memory (swap included).
    pub(crate) fn create(cap: &MemoryCap, bytes: u64) -> std::io::Result<SampleGroup> {
        let (parent, v2) = match cap {
            MemoryCap::CgroupV2 { parent } => (parent, true),
            MemoryCap::CgroupV1 { parent } => (parent, false),
            MemoryCap::Rlimit => {
                return Err(std::io::Error::other("the rlimit cap has no cgroup"));
            }
        };
        let dir = parent.join(group_name(""));
        std::fs::create_dir(&dir)?;
        let group = SampleGroup { dir, v2 };
        let bytes = bytes.to_string();
        if v2 {
            std::fs::write(group.dir.join("memory.max"), &bytes)?;
            // No swap: where swap exists, the limit would otherwise be memory.max + swap.
            let _ = std::fs::write(group.dir.join("memory.swap.max"), "0");
        } else {
            std::fs::write(group.dir.join("memory.limit_in_bytes"), &bytes)?;
            // Only with swap accounting; must come after the memory limit (memsw >= limit).
            let _ = std::fs::write(group.dir.join("memory.memsw.limit_in_bytes"), &bytes);
        }
        Ok(group)
    }

    /// The file a process writes its pid to, to join the group.
    pub(crate) fn procs(&self) -> PathBuf {
        self.dir.join("cgroup.procs")
    }

    /// Whether the kernel OOM-killed a process of the group (it passed the limit).
    pub(crate) fn oom_killed(&self) -> bool {
        let file = if self.v2 {
            "memory.events"
        } else {
            "memory.oom_control"
        };
        std::fs::read_to_string(self.dir.join(file)).is_ok_and(|s| {
            s.lines().any(|l| {
                l.strip_prefix("oom_kill ")
                    .and_then(|n| n.trim().parse::<u64>().ok())
                    .is_some_and(|n| n > 0)
            })
        })
    }
}

impl Drop for SampleGroup {
    /// The group can only be removed when empty: the sandbox's PID 1 may still be exiting.
    fn drop(&mut self) {
        let until = Instant::now() + Duration::from_secs(2);
        let mut killed = false;
        loop {
            match std::fs::remove_dir(&self.dir) {
                Ok(()) => return,
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => return,
                Err(_) if Instant::now() >= until => return,
                Err(_) => {}
            }
            if self.v2 && !killed {
                killed = std::fs::write(self.dir.join("cgroup.kill"), "1").is_ok();
            }
            std::thread::sleep(Duration::from_millis(2));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn mountinfo_and_cgroup_paths() {
        // A hybrid host (this project's CI machine) and a cgroup-v2-only container.
        let text = "30 25 0:26 / /sys/fs/cgroup/memory rw,relatime shared:9 - cgroup cgroup rw,memory\n\
                    31 25 0:27 / /sys/fs/cgroup/unified rw,relatime - cgroup2 cgroup2 rw\n\
                    40 39 0:30 /docker/abc /sys/fs/cgroup ro,nosuid - cgroup2 cgroup rw,nsdelegate\n";
        let m = parse_mountinfo(text);
        assert_eq!(m.len(), 3);
        assert_eq!(
            m[0],
            (
                "/".into(),
                PathBuf::from("/sys/fs/cgroup/memory"),
                "cgroup".into(),
                "rw,memory".into()
            )
        );
        assert_eq!(m[1].2, "cgroup2");
        assert_eq!(
            under_mount(&m[0].1, &m[0].0, "/process_api/c2b9"),
            PathBuf::from("/sys/fs/cgroup/memory/process_api/c2b9")
        );
        // A mount of a sub-tree: the process's path is relative to the file system's root.
        assert_eq!(
            under_mount(&m[2].1, &m[2].0, "/docker/abc/leaf"),
            PathBuf::from("/sys/fs/cgroup/leaf")
        );
        assert_eq!(under_mount(&m[1].1, &m[1].0, "/"), m[1].1);
    }

    #[test]
    fn rlimit_mode_tries_no_cgroup_and_auto_ends_with_rlimits() {
        assert_eq!(
            candidates(MemoryCapMode::Rlimit),
            Ok(vec![MemoryCap::Rlimit])
        );
        let auto = candidates(MemoryCapMode::Auto).unwrap();
        assert_eq!(auto.last(), Some(&MemoryCap::Rlimit));
        assert!(auto[..auto.len() - 1].iter().all(MemoryCap::is_cgroup));
    }

    /// The files a sample group writes and reads, on a stand-in directory (the kernel's
    /// interface names: Documentation/admin-guide/cgroup-v2.rst and cgroup-v1/memory.rst).
    #[test]
    fn sample_group_files() {
        let parent = std::env::temp_dir().join(format!("dlm-cgroup-test-{}", std::process::id()));
        std::fs::create_dir_all(&parent).unwrap();
        for (cap, limit, events, line) in [
            (
                MemoryCap::CgroupV2 {
                    parent: parent.clone(),
                },
                "memory.max",
                "memory.events",
                "low 0\nhigh 0\nmax 3\noom 1\noom_kill 1\n",
            ),
            (
                MemoryCap::CgroupV1 {
                    parent: parent.clone(),
                },
                "memory.limit_in_bytes",
                "memory.oom_control",
                "oom_kill_disable 0\nunder_oom 0\noom_kill 2\n",
            ),
        ] {
            let group = SampleGroup::create(&cap, 768 << 20).unwrap();
            let dir = group.dir.clone();
            assert_eq!(
                std::fs::read_to_string(dir.join(limit)).unwrap(),
                (768u64 << 20).to_string()
            );
            assert_eq!(group.procs(), dir.join("cgroup.procs"));
            assert!(!group.oom_killed());
            std::fs::write(dir.join(events), "oom 0\noom_kill 0\n").unwrap();
            assert!(!group.oom_killed());
            std::fs::write(dir.join(events), line).unwrap();
            assert!(group.oom_killed());
            // A real cgroup directory is removed with its control files; this stand-in is not.
            std::mem::forget(group);
        }
        std::fs::remove_dir_all(&parent).unwrap();
        assert!(SampleGroup::create(&MemoryCap::Rlimit, 1 << 30).is_err());
    }
}
