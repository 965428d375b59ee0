//! The stop check every client loop shares: no wait sleeps longer than
//! [`STOP_CHECK`] before it looks at the stop flag.

use crate::StopFlag;
use crate::mono::Mono;
use std::time::Duration;

/// The longest a wait sleeps before looking at the stop flag: a long
/// `--timeout` must not make Ctrl-C or the display's keys wait.
pub(crate) const STOP_CHECK: Duration = Duration::from_millis(100);

/// Sleeps until `deadline` in slices, so `stop` is still noticed. Returns
/// whether it was.
pub(crate) fn pause_until(deadline: Mono, stop: &StopFlag) -> bool {
    loop {
        if stop.is_raised() {
            return true;
        }
        let now = Mono::now();
        if now >= deadline {
            return false;
        }
        std::thread::sleep((deadline - now).min(STOP_CHECK));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_pause_ends_at_its_deadline_unless_stopped() {
        let stop = StopFlag::new();
        let deadline = Mono::now() + Duration::from_millis(5);
        assert!(!pause_until(deadline, &stop), "not stopped");
        assert!(Mono::now() >= deadline, "not before its deadline");
        stop.raise();
        let far = Mono::now() + Duration::from_secs(60);
        assert!(pause_until(far, &stop), "a raised flag ends it at once");
    }
}
