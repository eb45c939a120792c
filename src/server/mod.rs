//! Server processes: adapters as data (`spec`), command templates
//! (`template`), start/readiness/stop of a process tree (`supervisor`) and
//! the one-shot HTTP probe (`probe`). Knows nothing about load or results.

pub mod probe;
pub mod spec;
pub mod supervisor;
pub mod template;
