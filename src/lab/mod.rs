//! The lab: test apps, trials (start, verify, load, sample, stop) and the
//! record of where they ran. Builds on `server` (processes) and `load`.

pub mod apps;
pub mod environment;
pub mod failure;
pub mod faults;
pub mod front;
mod instances;
mod prepare;
mod profiled;
mod readback;
pub mod record;
pub mod restart;
pub mod soak;
pub mod spec;
mod start;
pub mod trial;
mod verify;
mod watch;
