//! The usage error: a failure the user caused and can fix, printed as one
//! line naming the fix, exit status 2. Its own file so that every
//! subcommand can make one without importing the mod.rs that dispatches
//! to it.

/// A failure the user caused and can fix: printed as one line, exit 2.
#[derive(Debug, thiserror::Error)]
#[error("{0}")]
pub struct UsageError(pub String);

/// A usage error (exit 2) whose message names the fix: the one way every
/// subcommand makes one.
pub fn usage(message: String) -> anyhow::Error {
    anyhow::Error::new(UsageError(message))
}
