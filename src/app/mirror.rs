//! `mirror` and `record`'s files: the `--out` directory, made before the
//! proxy starts (so a bad one fails first), and the mirror-v1 document and
//! its page written there at the end.

use crate::mirror::doc::MirrorDoc;
use crate::report;
use anyhow::{Context, Result};
use std::path::{Path, PathBuf};

/// Makes `--out`'s directory; failing, names the flag.
pub fn create_out(dir: &Path) -> Result<()> {
    std::fs::create_dir_all(dir)
        .with_context(|| format!("cannot create {}; pick a writable --out", dir.display()))
}

/// Writes `dir`/mirror.json (atomically) and `dir`/mirror.html; returns
/// their paths.
pub fn write_out(dir: &Path, doc: &MirrorDoc) -> Result<(PathBuf, PathBuf)> {
    let json = dir.join("mirror.json");
    crate::store::write_json(&json, doc)
        .with_context(|| format!("cannot write {}", json.display()))?;
    let page = dir.join("mirror.html");
    std::fs::write(&page, report::mirror::page(doc))
        .with_context(|| format!("cannot write {}", page.display()))?;
    Ok((json, page))
}
