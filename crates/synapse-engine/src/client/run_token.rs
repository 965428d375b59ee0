//! The per-run token every client's requests carry.

use crate::mono::Mono;
use crate::sys;

/// A per-run token: random, so another run's datagrams (or a restarted
/// run's, in the live display) are never taken for replies.
pub(crate) fn run_token(epoch: Mono) -> u64 {
    sys::random::random_u64().unwrap_or_else(|_| {
        // getrandom cannot fail on a kernel Synapse runs on; should it, the
        // clock's low bits still differ from run to run.
        let t = epoch.elapsed_ns() ^ sys::clock::realtime_ns();
        t.rotate_left(17) ^ u64::from(std::process::id())
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn two_runs_get_different_tokens() {
        let epoch = Mono::now();
        assert_ne!(run_token(epoch), run_token(epoch));
    }
}
