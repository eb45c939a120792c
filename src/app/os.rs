//! What a command asks of its own process: the signals that stop it
//! gently, and the CPUs its servers and its load generator run on.

use std::sync::atomic::AtomicBool;
use std::sync::Arc;

/// Sets `flag` on Ctrl-C or SIGTERM. With `hard_second`, a second signal
/// exits at once (safe only when no child process depends on a clean stop).
pub fn stop_on_signals(flag: &Arc<AtomicBool>, hard_second: bool) {
    use signal_hook::consts::{SIGINT, SIGTERM};
    for sig in [SIGINT, SIGTERM] {
        if hard_second {
            let _ = signal_hook::flag::register_conditional_shutdown(sig, 130, Arc::clone(flag));
        }
        let _ = signal_hook::flag::register(sig, Arc::clone(flag));
    }
}

/// The default CPU split: on 2+ cores the generator gets the last core and
/// the server the others, so they do not steal each other's cycles. The
/// cores are the ones this process may use (a cpuset may leave out CPU 0).
pub fn default_pinning() -> (Vec<usize>, Vec<usize>) {
    let mut cores = crate::load::cpus::allowed();
    if cores.len() < 2 {
        return (Vec::new(), Vec::new());
    }
    let last = cores.pop().expect("two or more");
    (cores, vec![last])
}
