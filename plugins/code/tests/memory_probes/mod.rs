//! Python programs that probe the sandbox's memory and storage caps, shared by the tests
//! that run them (`hostile.rs` under the cap in force here, `rlimit_cap.rs` under rlimits).
#![allow(dead_code)]

/// Fills every mount point of the sandbox, and its working directory, with up to 1 GB in
/// files of 15 MiB (under the file-size rlimit), printing `dlm-fill <place> <bytes>` for each
/// and asserting that none took 1 GB.
pub const FILL_EVERY_PLACE: &str = r#"
import os
GB = 10 ** 9
CHUNK = b'z' * (1 << 20)
def fill(place):
    names, written = [], 0
    try:
        while written < GB:
            names.append(os.path.join(place, 'dlm-fill-%d' % len(names)))
            with open(names[-1], 'wb') as fh:
                for _ in range(15):
                    fh.write(CHUNK)
                    written += len(CHUNK)
    except OSError:
        pass
    for name in names:
        try:
            os.remove(name)
        except OSError:
            pass
    return written
places = {'.', '/', '/sandbox', '/tmp', '/dev', '/dev/shm'}
for line in open('/proc/self/mountinfo'):
    places.add(line.split()[4])
places -= {'/proc', '/sys'}
took = {}
for place in sorted(places):
    took[place] = fill(place)
    print('dlm-fill', place, took[place], flush=True)
assert took['/sandbox'] > 0 and took['/tmp'] > 0, took
assert all(n < GB for n in took.values()), took
"#;

/// Forks six children that each touch 900 MB and hold it for a moment; prints
/// `dlm-children <forked> <succeeded>` and asserts that not all six succeeded.
pub const SIX_CHILDREN_OF_900_MB: &str = r#"
import os, time
kids = []
for _ in range(6):
    try:
        pid = os.fork()
    except OSError:
        break
    if pid == 0:
        try:
            block = bytearray(b'\x01') * (900 * 10 ** 6)
            time.sleep(2)
            os._exit(0)
        except BaseException:
            os._exit(1)
    kids.append(pid)
ok = sum(1 for k in kids if os.waitpid(k, 0)[1] == 0)
print('dlm-children', len(kids), ok, flush=True)
assert ok < 6, 'all six children of 900 MB succeeded'
"#;

/// Tries to hold `cap` bytes in memory that no process maps and no rlimit counts: SysV shared
/// memory segments (attached, filled, detached) and memfds kept open. Only a memory cgroup
/// charges them; prints `dlm-unmapped <kind> <bytes>` and asserts neither reached `cap` (if the
/// cgroup's OOM killer has not ended it first).
pub fn fill_unmapped_memory(cap: u64) -> String {
    FILL_UNMAPPED_MEMORY.replace("CAP", &cap.to_string())
}

const FILL_UNMAPPED_MEMORY: &str = r#"
import ctypes, mmap, os
LIMIT = CAP
STEP = 15 << 20
libc = ctypes.CDLL(None, use_errno=True)
libc.shmat.restype = ctypes.c_void_p
libc.shmat.argtypes = [ctypes.c_int, ctypes.c_void_p, ctypes.c_int]
libc.shmdt.argtypes = [ctypes.c_void_p]
held = {'sysv-shm': 0, 'memfd': 0}
try:
    while held["sysv-shm"] < LIMIT:
        seg = libc.shmget(0, STEP, 0o1600)
        addr = libc.shmat(seg, None, 0)
        if seg < 0 or addr in (None, ctypes.c_void_p(-1).value):
            break
        ctypes.memset(addr, 1, STEP)
        libc.shmdt(addr)
        held['sysv-shm'] += STEP
except (OSError, MemoryError):
    pass
print('dlm-unmapped sysv-shm', held['sysv-shm'], flush=True)
fds = []
try:
    while held["memfd"] < LIMIT:
        fd = os.memfd_create('dlm')
        fds.append(fd)
        os.write(fd, b'm' * STEP)
        held['memfd'] += STEP
except (OSError, MemoryError):
    pass
print('dlm-unmapped memfd', held['memfd'], flush=True)
assert all(n < LIMIT for n in held.values()), held
"#;
