//! Statistics over figures already measured. Never runs load or reads
//! files; callers hand it numbers.
//!
//! - [`spread`]: median and range across repeats of one trial.

pub mod spread;
