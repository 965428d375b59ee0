//! Which CPUs a thread may run on, and pinning it to one.

use super::errno::zero;
use std::io;
use std::mem::{size_of, zeroed};

/// CPUs the calling thread may run on.
pub fn allowed_cpus() -> io::Result<Vec<usize>> {
    // SAFETY: cpu_set_t is plain old data; all-zero is the empty set.
    let mut set: libc::cpu_set_t = unsafe { zeroed() };
    // SAFETY: set is a live cpu_set_t of the size passed.
    zero(unsafe { libc::sched_getaffinity(0, size_of::<libc::cpu_set_t>(), &raw mut set) })?;
    let max = 8 * size_of::<libc::cpu_set_t>();
    // SAFETY: CPU_ISSET only reads the set, for indices below its capacity.
    Ok((0..max)
        .filter(|&c| unsafe { libc::CPU_ISSET(c, &set) })
        .collect())
}

/// Pins the calling thread to one CPU.
pub fn pin_current_thread(cpu: usize) -> io::Result<()> {
    if cpu >= 8 * size_of::<libc::cpu_set_t>() {
        return Err(io::Error::from_raw_os_error(libc::EINVAL));
    }
    // SAFETY: cpu_set_t is plain old data; all-zero is the empty set.
    let mut set: libc::cpu_set_t = unsafe { zeroed() };
    // SAFETY: cpu is below the set's capacity (checked above).
    unsafe { libc::CPU_SET(cpu, &mut set) };
    // SAFETY: set is a live cpu_set_t of the size passed; pid 0 is this thread.
    let rc = unsafe { libc::sched_setaffinity(0, size_of::<libc::cpu_set_t>(), &raw const set) };
    zero(rc)
}

/// Lets the calling thread run on any of `cpus` (those beyond the set's
/// capacity are left out; none left is an error).
pub fn allow_current_thread(cpus: &[usize]) -> io::Result<()> {
    // SAFETY: cpu_set_t is plain old data; all-zero is the empty set.
    let mut set: libc::cpu_set_t = unsafe { zeroed() };
    let max = 8 * size_of::<libc::cpu_set_t>();
    let mut any = false;
    for &cpu in cpus.iter().filter(|&&c| c < max) {
        // SAFETY: cpu is below the set's capacity (filtered above).
        unsafe { libc::CPU_SET(cpu, &mut set) };
        any = true;
    }
    if !any {
        return Err(io::Error::from_raw_os_error(libc::EINVAL));
    }
    // SAFETY: set is a live cpu_set_t of the size passed; pid 0 is this thread.
    let rc = unsafe { libc::sched_setaffinity(0, size_of::<libc::cpu_set_t>(), &raw const set) };
    zero(rc)
}

/// The CPU the calling thread is running on right now.
#[cfg(test)]
pub fn current_cpu() -> Option<usize> {
    // SAFETY: sched_getcpu takes no arguments and only returns a number.
    let cpu = unsafe { libc::sched_getcpu() };
    usize::try_from(cpu).ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pinning_to_an_allowed_cpu_works_and_reports_it() {
        let cpus = allowed_cpus().unwrap();
        assert!(!cpus.is_empty());
        let last = *cpus.last().unwrap();
        std::thread::spawn(move || {
            pin_current_thread(last).unwrap();
            assert_eq!(current_cpu(), Some(last));
        })
        .join()
        .unwrap();
    }

    #[test]
    fn a_thread_may_be_allowed_a_set_of_cpus() {
        let cpus = allowed_cpus().unwrap();
        let first = cpus[0];
        std::thread::spawn(move || {
            allow_current_thread(&[first]).unwrap();
            assert_eq!(allowed_cpus().unwrap(), vec![first]);
            assert!(allow_current_thread(&[1 << 20]).is_err(), "none left");
        })
        .join()
        .unwrap();
    }

    #[test]
    fn pinning_to_an_impossible_cpu_is_an_error() {
        assert!(pin_current_thread(1 << 20).is_err());
    }
}
