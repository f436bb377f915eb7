//! A seccomp filter for the processes of a shared server's sessions, on top of bubblewrap's
//! namespaces and dropped capabilities. It refuses (EPERM) what reaches kernel state the
//! namespaces do not separate — the keyrings, which belong to the server's own user — and the
//! kernel's unprivileged attack surface that no build or test needs: new user namespaces
//! (`unshare`, `setns`, `clone` with `CLONE_NEWUSER`), `bpf`, `userfaultfd`, `io_uring`,
//! `perf_event_open`, module and kexec loading, `open_by_handle_at`, and the like. `clone3`,
//! whose flags a filter cannot read, fails with ENOSYS, so the C library uses `clone`.
//!
//! The filters are compiled once (for this machine's architecture) and written to files that
//! a launcher opens on fixed descriptors for `bwrap --add-seccomp-fd`, which installs them
//! right before the command starts.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use seccompiler::{
    sock_filter, BpfProgram, SeccompAction, SeccompCmpArgLen, SeccompCmpOp, SeccompCondition, SeccompFilter,
    SeccompRule, TargetArch,
};

/// Refused with EPERM whatever their arguments.
const REFUSED: &[libc::c_long] = &[
    libc::SYS_keyctl,
    libc::SYS_add_key,
    libc::SYS_request_key,
    libc::SYS_unshare,
    libc::SYS_setns,
    libc::SYS_bpf,
    libc::SYS_userfaultfd,
    libc::SYS_perf_event_open,
    libc::SYS_io_uring_setup,
    libc::SYS_io_uring_enter,
    libc::SYS_io_uring_register,
    libc::SYS_open_by_handle_at,
    libc::SYS_name_to_handle_at,
    libc::SYS_init_module,
    libc::SYS_finit_module,
    libc::SYS_delete_module,
    libc::SYS_kexec_load,
    libc::SYS_kexec_file_load,
    libc::SYS_mount,
    libc::SYS_umount2,
    libc::SYS_pivot_root,
    libc::SYS_acct,
    libc::SYS_swapon,
    libc::SYS_swapoff,
    libc::SYS_reboot,
    libc::SYS_syslog,
    libc::SYS_quotactl,
    libc::SYS_settimeofday,
    libc::SYS_clock_settime,
    libc::SYS_clock_adjtime,
];

/// The descriptors the launcher opens the filters on (see [`Seccomp::redirects`]).
pub(crate) const FDS: [u32; 2] = [9, 8];

/// The compiled filters, as files.
#[derive(Debug, PartialEq, Eq)]
pub struct Seccomp {
    files: [PathBuf; 2],
}

impl Seccomp {
    /// Compiles the filters and writes them under `dir` (created, the server's alone).
    pub fn install(dir: &Path) -> Result<Self, String> {
        let arch: TargetArch = std::env::consts::ARCH
            .try_into()
            .map_err(|_| format!("no seccomp filter for this architecture ({})", std::env::consts::ARCH))?;
        let mut refused: BTreeMap<i64, Vec<SeccompRule>> = REFUSED.iter().map(|nr| (*nr, Vec::new())).collect();
        let new_user = SeccompCondition::new(
            0,
            SeccompCmpArgLen::Qword,
            SeccompCmpOp::MaskedEq(libc::CLONE_NEWUSER as u64),
            libc::CLONE_NEWUSER as u64,
        )
        .and_then(|c| SeccompRule::new(vec![c]))
        .map_err(|e| e.to_string())?;
        refused.insert(libc::SYS_clone, vec![new_user]);
        let eperm = compile(refused, libc::EPERM, arch)?;
        let enosys = compile(BTreeMap::from([(libc::SYS_clone3, Vec::new())]), libc::ENOSYS, arch)?;
        std::fs::create_dir_all(dir).map_err(|e| format!("creating {}: {e}", dir.display()))?;
        let files = [dir.join("seccomp-eperm.bpf"), dir.join("seccomp-enosys.bpf")];
        for (file, program) in files.iter().zip([eperm, enosys]) {
            std::fs::write(file, bytes(&program)).map_err(|e| format!("writing {}: {e}", file.display()))?;
        }
        Ok(Self { files })
    }

    /// `bwrap` arguments that install the filters from [`FDS`].
    pub(crate) fn bwrap_args(&self) -> Vec<String> {
        FDS.iter().flat_map(|fd| ["--add-seccomp-fd".to_string(), fd.to_string()]).collect()
    }

    /// The filter files, in the order of [`FDS`].
    pub(crate) fn files(&self) -> &[PathBuf; 2] {
        &self.files
    }
}

fn compile(rules: BTreeMap<i64, Vec<SeccompRule>>, errno: i32, arch: TargetArch) -> Result<BpfProgram, String> {
    let filter = SeccompFilter::new(rules, SeccompAction::Allow, SeccompAction::Errno(errno as u32), arch)
        .map_err(|e| e.to_string())?;
    filter.try_into().map_err(|e: seccompiler::BackendError| e.to_string())
}

/// The program as the kernel (and `bwrap`) reads it: `struct sock_filter` after another.
fn bytes(program: &[sock_filter]) -> Vec<u8> {
    let mut out = Vec::with_capacity(program.len() * 8);
    for i in program {
        out.extend(i.code.to_ne_bytes());
        out.push(i.jt);
        out.push(i.jf);
        out.extend(i.k.to_ne_bytes());
    }
    out
}
