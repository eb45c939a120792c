//! The usage error: a failure the user caused and can fix, printed as one
//! line naming the fix, exit status 2. Here, below the command line, so
//! that a use case can refuse a request the same way a subcommand does.

/// A failure the user caused and can fix: printed as one line, exit 2.
#[derive(Debug, thiserror::Error)]
#[error("{0}")]
pub struct UsageError(pub String);

/// A usage error (exit 2) whose message names the fix: the one way every
/// subcommand and use case makes one.
pub fn usage(message: String) -> anyhow::Error {
    anyhow::Error::new(UsageError(message))
}
