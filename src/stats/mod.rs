//! Statistics over figures already measured: the median and range across
//! repeats of one trial (`spread`), medians and bootstrap intervals
//! (`bootstrap`), rank tests and multiple-comparison control
//! (`significance`), the Universal Scalability Law fit and the knee of a
//! sweep (`usl`), merged latency histograms (`histogram`), the
//! A-versus-B comparison of two results directories (`compare`), and the
//! count of runs the machine disturbed (`disturbance`). Methods
//! and assumptions: docs/STATISTICS.md.
//!
//! Nothing here starts a server or drives load: it reads numbers (and, for
//! `compare`, results directories) and returns numbers and words.

pub mod bootstrap;
pub mod compare;
pub mod disturbance;
pub mod histogram;
pub mod significance;
pub mod spread;
pub mod sweep;
pub mod usl;
