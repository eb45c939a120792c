//! The two maps of the code stay true: every file under `src/` has a line
//! in docs/ARCHITECTURE.md's layout block, every line there names a file
//! that exists, every top-level module is in `src/lib.rs`'s `# Layout`
//! list, and every test file under `tests/` is named in the map.
//!
//! It exists because both maps had drifted (CLI files listed under
//! `src/load/`, `tests/report.rs` missing, lib.rs naming 3 of 11 modules)
//! and a newcomer reads them first.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// Every `.rs` file under `dir`, as a path relative to the crate root.
fn rust_files(dir: &Path, out: &mut Vec<String>) {
    let mut entries: Vec<_> = std::fs::read_dir(dir).unwrap().flatten().collect();
    entries.sort_by_key(|e| e.path());
    for e in entries {
        let p = e.path();
        if p.is_dir() {
            rust_files(&p, out);
        } else if p.extension().is_some_and(|x| x == "rs") {
            let rel = p.strip_prefix(root()).unwrap();
            out.push(rel.to_string_lossy().replace('\\', "/"));
        }
    }
}

/// The layout block of ARCHITECTURE.md: its text, and the `src/` files it
/// names. A line `src/x.rs` names a file; a line `src/dir/` opens a folder
/// whose files follow as lines indented by two spaces (`  file.rs  ...`).
fn map_of(doc: &str) -> (String, BTreeSet<String>) {
    let start = doc
        .find("```\n")
        .expect("docs/ARCHITECTURE.md has no ``` layout block")
        + 4;
    let len = doc[start..]
        .find("```")
        .expect("the layout block is not closed");
    let block = &doc[start..start + len];
    let mut files = BTreeSet::new();
    let mut folder: Option<String> = None;
    for line in block.lines() {
        let first = line.split_whitespace().next().unwrap_or("");
        if line.starts_with("src/") {
            if first.ends_with('/') {
                folder = Some(first.to_string());
            } else {
                files.insert(first.to_string());
                folder = None;
            }
        } else if line.starts_with("  ") && !line.starts_with("   ") && first.ends_with(".rs") {
            if let Some(dir) = &folder {
                files.insert(format!("{dir}{first}"));
            }
        } else if !line.starts_with(' ') {
            folder = None;
        }
    }
    (block.to_string(), files)
}

#[test]
fn every_source_file_and_module_is_on_both_maps() {
    let doc = std::fs::read_to_string(root().join("docs/ARCHITECTURE.md")).unwrap();
    let (block, mapped) = map_of(&doc);
    let lib = std::fs::read_to_string(root().join("src/lib.rs")).unwrap();
    let layout = lib
        .split("# Layout")
        .nth(1)
        .expect("src/lib.rs has no `# Layout` section");

    let mut src = Vec::new();
    rust_files(&root().join("src"), &mut src);
    let mut problems = Vec::new();
    for file in &src {
        if mapped.contains(file) {
            continue;
        }
        let (dir, name) = file.rsplit_once('/').unwrap();
        if dir == "src" {
            problems.push(format!(
                "{file} is not in docs/ARCHITECTURE.md's layout block: add a line \
                 `{file}  <what it holds>` beside the other src/*.rs lines"
            ));
        } else if block.lines().any(|l| l.starts_with(&format!("{dir}/ "))) {
            problems.push(format!(
                "{file} is not in docs/ARCHITECTURE.md's layout block: add a line \
                 `  {name}  <what it holds>` (two spaces in) under `{dir}/`"
            ));
        } else {
            problems.push(format!(
                "{file} is not in docs/ARCHITECTURE.md's layout block: add a line \
                 `{dir}/  <what it is for>` and under it `  {name}  <what it holds>`"
            ));
        }
    }
    for file in &mapped {
        if !src.contains(file) {
            problems.push(format!(
                "docs/ARCHITECTURE.md's layout block names {file}, which does not exist: \
                 fix or remove that line"
            ));
        }
    }

    let modules: BTreeSet<String> = src
        .iter()
        .filter_map(|f| f.strip_prefix("src/"))
        .map(|f| {
            f.split('/')
                .next()
                .unwrap()
                .trim_end_matches(".rs")
                .to_string()
        })
        .filter(|m| m != "lib" && m != "main")
        .collect();
    for m in &modules {
        if !layout.contains(&format!("[`{m}`]")) {
            problems.push(format!(
                "module `{m}` is not in src/lib.rs's `# Layout` list: add a line \
                 `//! - [`{m}`]: <what it is for>` there"
            ));
        }
    }

    let mut tests = Vec::new();
    rust_files(&root().join("tests"), &mut tests);
    for file in tests.iter().filter(|f| f.matches('/').count() == 1) {
        let name = file.trim_start_matches("tests/");
        if !block.contains(name) {
            problems.push(format!(
                "{file} is not named in docs/ARCHITECTURE.md's layout block: add it, \
                 with what it tests, to the `tests/` entry"
            ));
        }
    }

    assert!(
        problems.is_empty(),
        "the maps of the code are out of date:\n{}",
        problems.join("\n")
    );
}

#[test]
fn the_map_reader_sees_folders_files_and_stray_lines() {
    let doc = "text\n```\nsrc/a.rs  x\nsrc/d/   y\n  b.rs   z\n                     c.rs in a sentence\n  e.rs\nplans/  p\n  f.rs\n```\n";
    let (_, files) = map_of(doc);
    let want: BTreeSet<String> = ["src/a.rs", "src/d/b.rs", "src/d/e.rs"]
        .iter()
        .map(|s| s.to_string())
        .collect();
    assert_eq!(files, want);
}

/// The modules in the order src/lib.rs's `# Layout` lists them.
fn layout_order(lib: &str) -> Vec<String> {
    let layout = lib.split("# Layout").nth(1).unwrap();
    layout
        .lines()
        .skip(1) // the rest of the `# Layout` line
        .take_while(|l| l.starts_with("//!"))
        .filter_map(|l| l.strip_prefix("//! - [`"))
        .filter_map(|l| l.split('`').next())
        .map(str::to_string)
        .collect()
}

#[test]
fn dependencies_point_down_the_layout_list() {
    // lib.rs promises that each part uses only parts listed below it; a
    // `crate::x` path to a part listed above is a circle in the making.
    let lib = std::fs::read_to_string(root().join("src/lib.rs")).unwrap();
    let order = layout_order(&lib);
    assert!(
        order.len() > 10,
        "src/lib.rs's `# Layout` list was not read: {order:?}"
    );
    let rank = |m: &str| order.iter().position(|o| o == m);
    let mut src = Vec::new();
    rust_files(&root().join("src"), &mut src);
    let mut problems = Vec::new();
    for file in &src {
        let Some(rel) = file.strip_prefix("src/") else {
            continue;
        };
        let me = rel.split('/').next().unwrap().trim_end_matches(".rs");
        let Some(my_rank) = rank(me) else { continue };
        let text = std::fs::read_to_string(root().join(file)).unwrap();
        let mut used = BTreeSet::new();
        for piece in text.split("crate::").skip(1) {
            let name: String = piece
                .chars()
                .take_while(|c| c.is_ascii_alphanumeric() || *c == '_')
                .collect();
            used.insert(name);
        }
        for name in used {
            if let Some(r) = rank(&name) {
                if r < my_rank {
                    problems.push(format!(
                        "{file} uses crate::{name}, which src/lib.rs lists above `{me}`: \
                         move what it needs down, or reorder the list if the new order is true"
                    ));
                }
            }
        }
    }
    assert!(problems.is_empty(), "{}", problems.join("\n"));
}
