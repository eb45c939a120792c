//! Statistics over figures already measured: the median and range across
//! repeats of one trial (`spread`), medians and bootstrap intervals
//! (`bootstrap`), rank tests and multiple-comparison control
//! (`significance`), the Universal Scalability Law fit and the knee of a
//! sweep (`usl`), merged latency histograms (`histogram`), the
//! A-versus-B comparison of two sides' samples (`compare`), a sweep's
//! analysis (`sweep`), the count of runs the machine disturbed
//! (`disturbance`), a soak's robust slope with its interval
//! (`theil_sen`), and the always-valid interval of paired A/B rounds
//! judged after every round (`sequential`). Methods and assumptions: docs/STATISTICS.md.
//!
//! Arithmetic over samples only: nothing here starts a server, drives
//! load, reads a file or a JSON record (`store::samples` reads results
//! directories and hands over plain numbers; tests/architecture.rs holds
//! the rule). It takes numbers and returns numbers and words.

pub mod bootstrap;
pub mod compare;
pub mod disturbance;
pub mod histogram;
pub mod sequential;
pub mod significance;
pub mod spread;
pub mod sweep;
pub mod theil_sen;
pub mod usl;
