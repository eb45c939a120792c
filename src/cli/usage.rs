//! The usage error, made in `app::usage` (a use case refuses a request
//! the same way); named here so that every subcommand file can make one
//! without importing the mod.rs that dispatches to it.

pub use crate::app::usage::{usage, UsageError};
