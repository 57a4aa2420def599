//! A real one-node Slurm cluster on loopback (issue 20): `dlm-bench slurm --submit` sends a
//! 4-shard job array and its dependent merge job; the merged summary equals a local `--jobs 1`
//! run apart from timings. The daemons (munged, slurmctld, slurmd) run with a private config
//! under the test's directory and are stopped by PID when the test ends, also when it fails.
//!
//! Needs Debian's `slurmctld slurmd slurm-client munge` (`tools/install-slurm.sh`, which
//! `.ci/run` runs) and root. Skipped (visibly) without them, unless `DLM_BENCH_REQUIRE_SLURM=1` or
//! `CI=true`, where the test fails (tests/common/skip.rs).

mod common;
use common::*;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// Daemons killed when dropped.
struct Daemons(Vec<Child>);

impl Drop for Daemons {
    fn drop(&mut self) {
        for child in &mut self.0 {
            let _ = Command::new("kill")
                .args(["-TERM", &child.id().to_string()])
                .status();
        }
        for child in &mut self.0 {
            let deadline = Instant::now() + Duration::from_secs(5);
            while Instant::now() < deadline {
                if let Ok(Some(_)) = child.try_wait() {
                    break;
                }
                std::thread::sleep(Duration::from_millis(100));
            }
            let _ = child.kill();
            let _ = child.wait();
        }
    }
}

fn available() -> bool {
    let root = Command::new("id")
        .arg("-u")
        .output()
        .is_ok_and(|o| String::from_utf8_lossy(&o.stdout).trim() == "0");
    let tools = ["slurmctld", "slurmd", "sbatch", "munged", "sinfo"]
        .iter()
        .all(|t| {
            Command::new("sh")
                .args(["-c", &format!("command -v {t}")])
                .output()
                .is_ok_and(|o| o.status.success())
        });
    root && tools
}

fn config(dir: &Path) -> PathBuf {
    for sub in ["state", "spool", "log"] {
        std::fs::create_dir_all(dir.join(sub)).unwrap();
    }
    let cpus = std::thread::available_parallelism().map_or(2, |n| n.get());
    let conf = format!(
        "ClusterName=dlmbench
SlurmctldHost=localhost
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
CredType=cred/munge
StateSaveLocation={d}/state
SlurmdSpoolDir={d}/spool
SlurmctldPidFile={d}/slurmctld.pid
SlurmdPidFile={d}/slurmd.pid
SlurmctldLogFile={d}/log/slurmctld.log
SlurmdLogFile={d}/log/slurmd.log
SlurmctldPort=16817
SlurmdPort=16818
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
JobCompType=jobcomp/none
SchedulerType=sched/backfill
SelectType=select/cons_tres
SelectTypeParameters=CR_Core
ReturnToService=2
MpiDefault=none
MailProg=/bin/true
MinJobAge=300
SlurmdParameters=config_overrides
SchedulerParameters=batch_sched_delay=0
NodeName=localhost CPUs={cpus} RealMemory=2048 State=UNKNOWN
PartitionName=debug Nodes=ALL Default=YES MaxTime=INFINITE State=UP
",
        d = dir.display()
    );
    let path = dir.join("slurm.conf");
    std::fs::write(&path, conf).unwrap();
    path
}

fn spawn(cmd: &mut Command, log: &Path) -> Child {
    let log = std::fs::File::create(log).unwrap();
    cmd.stdin(Stdio::null())
        .stdout(log.try_clone().unwrap())
        .stderr(log)
        .spawn()
        .unwrap_or_else(|e| panic!("cannot start {cmd:?}: {e}"))
}

fn wait_for(what: &str, timeout: Duration, mut ok: impl FnMut() -> bool) {
    let deadline = Instant::now() + timeout;
    while Instant::now() < deadline {
        if ok() {
            return;
        }
        std::thread::sleep(Duration::from_millis(250));
    }
    panic!("timed out waiting for {what}");
}

#[test]
fn a_job_array_on_a_real_cluster_merges_into_the_local_run() {
    if !available() {
        skip::absent(&skip::SLURM, "Slurm is not installed or this is not root");
        return;
    }
    let dir = scratch("slurm");
    let conf = config(&dir.join("cluster"));
    let mut daemons = Daemons(Vec::new());
    std::fs::create_dir_all("/run/munge").unwrap();
    let _ = Command::new("chown")
        .args(["munge:munge", "/run/munge"])
        .status();
    let munge_running = Command::new("munge")
        .arg("-n")
        .output()
        .is_ok_and(|o| o.status.success());
    if !munge_running {
        daemons.0.push(spawn(
            Command::new("runuser").args(["-u", "munge", "--", "/usr/sbin/munged", "-F"]),
            &dir.join("munged.log"),
        ));
        wait_for("munged", Duration::from_secs(20), || {
            Command::new("munge")
                .arg("-n")
                .output()
                .is_ok_and(|o| o.status.success())
        });
    }
    daemons.0.push(spawn(
        Command::new("/usr/sbin/slurmctld")
            .args(["-D", "-c", "-f"])
            .arg(&conf),
        &dir.join("slurmctld.out"),
    ));
    daemons.0.push(spawn(
        Command::new("/usr/sbin/slurmd")
            .args(["-D", "-f"])
            .arg(&conf),
        &dir.join("slurmd.out"),
    ));
    wait_for("the node to be idle", Duration::from_secs(60), || {
        Command::new("sinfo")
            .args(["-h", "-o", "%T"])
            .env("SLURM_CONF", &conf)
            .output()
            .is_ok_and(|o| String::from_utf8_lossy(&o.stdout).contains("idle"))
    });

    // The local reference run.
    let local = dir.join("local");
    let r = run(&[
        "run",
        "tests/suites/tiny.yaml",
        "--jobs",
        "1",
        "--out",
        local.to_str().unwrap(),
    ]);
    assert!(r.status.success(), "{}", text(&r));

    // Scripts, submitted; the merge job writes jobs/merged.
    let jobs = dir.join("jobs");
    let r = command()
        .args([
            "slurm",
            "tests/suites/tiny.yaml",
            "--shards",
            "4",
            "--submit",
            "--out",
        ])
        .arg(&jobs)
        .env("SLURM_CONF", &conf)
        .output()
        .unwrap();
    assert!(r.status.success(), "{}", text(&r));
    let merged = jobs.join("merged");
    wait_for("the merge job", Duration::from_secs(600), || {
        merged.join("summary.json").exists() && merged.join("report.html").exists()
    });
    for k in 0..4 {
        assert!(
            jobs.join(format!("shard-{k}/summary.json")).exists(),
            "shard {k}"
        );
    }
    assert_eq!(
        without_timings(&summary(&merged)),
        without_timings(&summary(&local))
    );
    drop(daemons);
}
