//! SQLite: the database file in the trial's directory, fresh for every
//! trial. It lives inside the app's processes, so there is no server to
//! start or sample.

use super::setup::DatabaseError;
use std::path::{Path, PathBuf};

/// The file's name and the extra files SQLite may leave beside it.
const FILE: &str = "blog.sqlite3";
const BESIDE: &[&str] = &["-wal", "-shm", "-journal"];

/// Removes an earlier trial's file in `dir`; returns the app's URL (with a
/// 5 s busy timeout, since forked workers write to one file) and the path.
pub(super) fn prepare(dir: &Path) -> Result<(String, PathBuf), DatabaseError> {
    let file = dir.join(FILE);
    remove(&file);
    if file.exists() {
        return Err(DatabaseError::Io {
            dir: dir.display().to_string(),
            source: std::io::Error::other(format!("{} cannot be removed", file.display())),
        });
    }
    Ok((format!("sqlite3:{}?timeout=5000", file.display()), file))
}

/// Removes the file and the files SQLite keeps beside it.
pub(super) fn remove(file: &Path) {
    let _ = std::fs::remove_file(file);
    for suffix in BESIDE {
        let mut p = file.as_os_str().to_owned();
        p.push(suffix);
        let _ = std::fs::remove_file(PathBuf::from(p));
    }
}
