//! Pinning each of `prof peak`'s threads to a CPU of its own (Linux; elsewhere nothing is
//! pinned). Measured on a 2-core VM shared with other builds: unpinned, the scheduler now and
//! then left both GEMM threads on one CPU for a whole run, which halved that run's figure (the
//! spread across runs went from about 5% pinned to over 50% unpinned); see the `prof peak`
//! section of docs/overhead.md.

/// The CPUs the threads are pinned to, `cpus[t]` for thread `t`: the CPUs this process may run
/// on, in order, when there are at least `threads` of them; `None` (nothing pinned) when there
/// are fewer, when the system does not say, or off Linux.
pub fn plan(threads: usize) -> Option<Vec<usize>> {
    let cpus = allowed()?;
    (cpus.len() >= threads).then(|| cpus[..threads].to_vec())
}

/// Pins the calling thread to `cpu`; whether it was.
pub fn pin(cpu: usize) -> bool {
    imp::pin(cpu)
}

/// The CPUs this process may run on (its affinity mask), in order.
fn allowed() -> Option<Vec<usize>> {
    imp::allowed()
}

#[cfg(target_os = "linux")]
mod imp {
    use std::mem::{size_of, zeroed};

    pub fn allowed() -> Option<Vec<usize>> {
        // SAFETY: cpu_set_t is a plain bit array, for which all zeros is a valid (empty) set;
        // sched_getaffinity writes at most the size it is given into it.
        let set = unsafe {
            let mut set: libc::cpu_set_t = zeroed();
            if libc::sched_getaffinity(0, size_of::<libc::cpu_set_t>(), &mut set) != 0 {
                return None;
            }
            set
        };
        let cpus: Vec<usize> = (0..libc::CPU_SETSIZE as usize)
            // SAFETY: cpu is below CPU_SETSIZE, the set's capacity.
            .filter(|&cpu| unsafe { libc::CPU_ISSET(cpu, &set) })
            .collect();
        (!cpus.is_empty()).then_some(cpus)
    }

    pub fn pin(cpu: usize) -> bool {
        if cpu >= libc::CPU_SETSIZE as usize {
            return false;
        }
        // SAFETY: as above; cpu was checked against the set's capacity; pid 0 is the calling
        // thread, and the set is only read.
        unsafe {
            let mut set: libc::cpu_set_t = zeroed();
            libc::CPU_SET(cpu, &mut set);
            libc::sched_setaffinity(0, size_of::<libc::cpu_set_t>(), &set) == 0
        }
    }
}

#[cfg(not(target_os = "linux"))]
mod imp {
    pub fn allowed() -> Option<Vec<usize>> {
        None
    }

    pub fn pin(_cpu: usize) -> bool {
        false
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn no_more_threads_are_pinned_than_there_are_cpus() {
        match allowed() {
            Some(cpus) => {
                assert_eq!(plan(cpus.len()).as_deref(), Some(&cpus[..]));
                assert_eq!(plan(1).as_deref(), Some(&cpus[..1]));
                assert_eq!(plan(cpus.len() + 1), None);
            }
            None => assert_eq!(plan(1), None),
        }
    }

    #[test]
    fn a_thread_can_be_pinned_to_a_cpu_it_may_use() {
        // On a scratch thread, so that the test harness's threads keep their mask.
        let pinned = std::thread::spawn(|| allowed().map(|cpus| pin(cpus[0])))
            .join()
            .unwrap();
        if cfg!(target_os = "linux") {
            assert_ne!(pinned, Some(false));
        }
        assert!(!pin(usize::MAX));
    }
}
