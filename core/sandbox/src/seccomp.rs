//! The network filter for kernels whose Landlock cannot confine TCP (ABI below 4): a
//! seccomp program that makes `socket(AF_INET | AF_INET6, …)` fail with `EACCES` and
//! `io_uring_setup` with `EPERM` (io_uring could open sockets past the filter). Unix sockets
//! stay usable. System calls of another ABI on the same machine (x86's x32 numbers, a
//! foreign architecture) kill the process, so they cannot go around the filter.

/// `seccomp_data` offsets: the system call number, the architecture, the first argument's
/// low 32 bits (little-endian).
const NR: u32 = 0;
const ARCH: u32 = 4;
const ARG0: u32 = 16;

const LD_W_ABS: u16 = 0x20;
const JEQ_K: u16 = 0x15;
const JGE_K: u16 = 0x35;
const RET_K: u16 = 0x06;

const RET_KILL_PROCESS: u32 = 0x8000_0000;
const RET_ERRNO: u32 = 0x0005_0000;
const RET_ALLOW: u32 = 0x7fff_0000;
/// x32 system calls set this bit in their number.
const X32_SYSCALL_BIT: u32 = 0x4000_0000;

#[cfg(target_arch = "x86_64")]
const NATIVE_ARCH: u32 = 0xc000_003e;
#[cfg(target_arch = "aarch64")]
const NATIVE_ARCH: u32 = 0xc000_00b7;

fn statement(code: u16, k: u32) -> libc::sock_filter {
    libc::sock_filter {
        code,
        jt: 0,
        jf: 0,
        k,
    }
}

fn jump(code: u16, k: u32, jt: u8, jf: u8) -> libc::sock_filter {
    libc::sock_filter { code, jt, jf, k }
}

fn number(syscall: libc::c_long) -> u32 {
    u32::try_from(syscall).expect("system call numbers are small")
}

fn family(family: libc::c_int) -> u32 {
    u32::try_from(family).expect("address families are small")
}

/// The filter program; see the module documentation.
pub(crate) fn network_filter() -> Vec<libc::sock_filter> {
    let errno = |code: i32| RET_ERRNO | u32::try_from(code).expect("errno values are small");
    vec![
        statement(LD_W_ABS, ARCH),
        jump(JEQ_K, NATIVE_ARCH, 1, 0),
        statement(RET_K, RET_KILL_PROCESS),
        statement(LD_W_ABS, NR),
        jump(JGE_K, X32_SYSCALL_BIT, 0, 1),
        statement(RET_K, RET_KILL_PROCESS),
        jump(JEQ_K, number(libc::SYS_io_uring_setup), 0, 1),
        statement(RET_K, errno(libc::EPERM)),
        jump(JEQ_K, number(libc::SYS_socket), 0, 4),
        statement(LD_W_ABS, ARG0),
        jump(JEQ_K, family(libc::AF_INET), 1, 0),
        jump(JEQ_K, family(libc::AF_INET6), 0, 1),
        statement(RET_K, errno(libc::EACCES)),
        statement(RET_K, RET_ALLOW),
    ]
}

/// Installs `filter` on the calling thread (after `no_new_privs`, which Landlock set
/// already or which is set here). Meant for the child between fork and exec.
pub(crate) fn install(filter: &[libc::sock_filter]) -> std::io::Result<()> {
    let program = libc::sock_fprog {
        len: u16::try_from(filter.len()).expect("the filter is short"),
        filter: filter.as_ptr().cast_mut(),
    };
    // SAFETY: prctl with these arguments reads `program`, which points at `filter` and lives
    // until the call returns; it changes only this thread's (and its children's) filters.
    #[allow(unsafe_code)]
    unsafe {
        if libc::prctl(libc::PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0 {
            return Err(std::io::Error::last_os_error());
        }
        if libc::prctl(
            libc::PR_SET_SECCOMP,
            libc::SECCOMP_MODE_FILTER,
            &raw const program,
        ) != 0
        {
            return Err(std::io::Error::last_os_error());
        }
    }
    Ok(())
}
