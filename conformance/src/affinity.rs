//! Keeping each job and its adapter process on one CPU (Linux; elsewhere a no-op).
//!
//! A job and its adapter take turns: the job writes a request and waits, the adapter
//! answers and waits. When they sit on different CPUs, every turn wakes an idle
//! CPU, which on a virtual machine is slow: on the 2-CPU machine this project is
//! measured on, a request/response round trip over a pipe takes about 130 µs across
//! CPUs and 8–10 µs on one. So each job pins its thread to one CPU before it starts
//! its adapter; the adapter process inherits the pin, and jobs are spread over the
//! CPUs the run may use.

/// The CPUs this process may run on, in order (empty when unknown).
pub fn available() -> Vec<usize> {
    imp::available()
}

/// Pins the calling thread to `cpu`; threads and processes it starts afterwards
/// inherit the pin. Returns whether it took effect.
pub fn pin_current_thread(cpu: usize) -> bool {
    imp::pin_current_thread(cpu)
}

#[cfg(target_os = "linux")]
mod imp {
    use rustix::thread::{sched_getaffinity, sched_setaffinity, CpuSet};

    pub fn available() -> Vec<usize> {
        sched_getaffinity(None).map_or_else(
            |_| Vec::new(),
            |set| (0..CpuSet::MAX_CPU).filter(|&c| set.is_set(c)).collect(),
        )
    }

    pub fn pin_current_thread(cpu: usize) -> bool {
        if cpu >= CpuSet::MAX_CPU {
            return false;
        }
        let mut set = CpuSet::new();
        set.set(cpu);
        sched_setaffinity(None, &set).is_ok()
    }
}

#[cfg(not(target_os = "linux"))]
mod imp {
    pub fn available() -> Vec<usize> {
        Vec::new()
    }

    pub fn pin_current_thread(_cpu: usize) -> bool {
        false
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_pinned_thread_runs_on_that_cpu_only() {
        let cpus = available();
        let Some(&last) = cpus.last() else {
            return; // not Linux: nothing to pin
        };
        let seen = std::thread::spawn(move || {
            assert!(pin_current_thread(last));
            available()
        })
        .join()
        .expect("thread");
        assert_eq!(seen, [last]);
        // The caller's own mask is untouched.
        assert_eq!(available(), cpus);
    }
}
