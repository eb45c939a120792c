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

/// What a file under `src/stats/` may not mention: the statistics are
/// arithmetic over samples, and `store` is the only reader of a results
/// directory (issue 26: compare and sweep read trial files through
/// `serde_json::Value`, so the layer test could not see that statistics
/// depended on the store's format).
const STATS_MAY_NOT: &[&str] = &[
    "std::fs",
    "fs::",
    "File::open",
    "read_to_string",
    "read_dir",
    ".exists()",
    ".is_dir()",
    "serde_json::Value",
    "serde_json::from_",
    "use serde_json::{",
];

/// The lines of `text` (comments and strings aside) that mention one of
/// `STATS_MAY_NOT`: (line number from 1, what it mentions).
fn file_access(text: &str) -> Vec<(usize, &'static str)> {
    let code = String::from_utf8(code_only(text)).unwrap();
    let mut out = Vec::new();
    for (i, line) in code.lines().enumerate() {
        for word in STATS_MAY_NOT {
            if line.contains(word) {
                out.push((i + 1, *word));
            }
        }
    }
    out
}

#[test]
fn the_file_access_check_sees_code_and_skips_comments_and_strings() {
    let text = "//! never std::fs\nuse std::fs;\nlet s = \"read_to_string\";\n\
                let v: serde_json::Value = x;\nfn f(p: &Path) -> bool { p.exists() }\n";
    assert_eq!(
        file_access(text),
        vec![(2, "std::fs"), (4, "serde_json::Value"), (5, ".exists()")]
    );
}

#[test]
fn statistics_read_no_file_and_no_json_value() {
    let mut src = Vec::new();
    rust_files(&root().join("src/stats"), &mut src);
    assert!(src.len() > 3, "src/stats was not read: {src:?}");
    let mut problems = Vec::new();
    for file in &src {
        let text = std::fs::read_to_string(root().join(file)).unwrap();
        for (line, word) in file_access(&text) {
            problems.push(format!(
                "{file}:{line} mentions `{word}`: src/stats/ is arithmetic over samples; \
                 read the results directory in `store` (store::read, store::figures, \
                 store::samples) and hand stats plain numbers"
            ));
        }
    }
    assert!(problems.is_empty(), "{}", problems.join("\n"));
}

/// The longest a function in `src/` may be, in lines from its `fn` to its
/// closing brace. Issue 13: a reader should see a function whole on a
/// screen or two; longer ones read better as named steps.
const MAX_FN_LINES: usize = 120;

/// Functions over [`MAX_FN_LINES`] that are known and to be split, as
/// `file::name`. Empty since issue 13 split the last of them; it stays so
/// a long function owned by work in progress can wait here rather than be
/// marked `// whole:` untruthfully. This list may only shrink: a function that is split
/// must leave it (the test fails on a stale entry), and a new long
/// function is not added here but split, or marked `// whole: <why>` on
/// the line before its `fn` (or in its doc comment) when it really reads
/// better in one piece.
const TO_BE_SPLIT: &[&str] = &[];

/// `text` with the insides of comments, strings and char literals blanked
/// to spaces (newlines kept), so braces in them do not count.
fn code_only(text: &str) -> Vec<u8> {
    let b = text.as_bytes();
    let mut out = b.to_vec();
    let blank = |out: &mut Vec<u8>, from: usize, to: usize| {
        for c in &mut out[from..to] {
            if *c != b'\n' {
                *c = b' ';
            }
        }
    };
    let ident = |c: u8| c.is_ascii_alphanumeric() || c == b'_';
    let mut i = 0;
    while i < b.len() {
        let c = b[i];
        if b[i..].starts_with(b"//") {
            let end = b[i..]
                .iter()
                .position(|&c| c == b'\n')
                .map_or(b.len(), |p| i + p);
            blank(&mut out, i, end);
            i = end;
        } else if b[i..].starts_with(b"/*") {
            // Block comments nest in Rust.
            let (mut depth, mut j) = (0usize, i);
            while j < b.len() {
                if b[j..].starts_with(b"/*") {
                    depth += 1;
                    j += 2;
                } else if b[j..].starts_with(b"*/") {
                    depth -= 1;
                    j += 2;
                    if depth == 0 {
                        break;
                    }
                } else {
                    j += 1;
                }
            }
            blank(&mut out, i, j);
            i = j;
        } else if c == b'r' && (i == 0 || !ident(b[i - 1]) || b[i - 1] == b'b') && {
            let hashes = b[i + 1..].iter().take_while(|&&c| c == b'#').count();
            b.get(i + 1 + hashes) == Some(&b'"')
        } {
            let hashes = b[i + 1..].iter().take_while(|&&c| c == b'#').count();
            let open = i + 1 + hashes;
            let mut close = b"\"".to_vec();
            close.extend(std::iter::repeat_n(b'#', hashes));
            let end = b[open + 1..]
                .windows(close.len())
                .position(|w| w == close.as_slice())
                .map_or(b.len(), |p| open + 1 + p + close.len());
            blank(&mut out, open + 1, end - close.len().min(end));
            i = end;
        } else if c == b'"' {
            let mut j = i + 1;
            while j < b.len() && b[j] != b'"' {
                j += if b[j] == b'\\' { 2 } else { 1 };
            }
            blank(&mut out, i + 1, j.min(b.len()));
            i = j + 1;
        } else if c == b'\'' {
            // A char literal ('x', '\n', '{') or a lifetime ('a).
            if b.get(i + 1) == Some(&b'\\') {
                let end = b[i + 2..]
                    .iter()
                    .position(|&c| c == b'\'')
                    .map_or(b.len(), |p| i + 2 + p);
                blank(&mut out, i + 1, end);
                i = end + 1;
            } else {
                let width = text[i + 1..].chars().next().map_or(1, char::len_utf8);
                if b.get(i + 1 + width) == Some(&b'\'') {
                    blank(&mut out, i + 1, i + 1 + width);
                    i += 2 + width;
                } else {
                    i += 1;
                }
            }
        } else {
            i += 1;
        }
    }
    out
}

/// Every function with a body in `text`: (name, line of its `fn`, lines
/// from that line to its closing brace).
fn function_lengths(text: &str) -> Vec<(String, usize, usize)> {
    let code = code_only(text);
    let line_at = |pos: usize| code[..pos].iter().filter(|&&c| c == b'\n').count() + 1;
    let ident = |c: u8| c.is_ascii_alphanumeric() || c == b'_';
    let mut found = Vec::new();
    let mut i = 0;
    while let Some(p) = code[i..].windows(3).position(|w| w == b"fn ") {
        let at = i + p;
        i = at + 3;
        if at > 0 && ident(code[at - 1]) {
            continue;
        }
        let name: String = code[i..]
            .iter()
            .skip_while(|c| c.is_ascii_whitespace())
            .take_while(|&&c| ident(c))
            .map(|&c| c as char)
            .collect();
        if name.is_empty() {
            continue;
        }
        // The body opens at the first `{` after the signature; a `;` first
        // means a declaration without one (a trait method).
        let Some(q) = code[i..].iter().position(|&c| c == b'{' || c == b';') else {
            break;
        };
        if code[i + q] == b';' {
            continue;
        }
        let open = i + q;
        let mut depth = 0usize;
        let mut close = open;
        for (k, &c) in code[open..].iter().enumerate() {
            match c {
                b'{' => depth += 1,
                b'}' => {
                    depth -= 1;
                    if depth == 0 {
                        close = open + k;
                        break;
                    }
                }
                _ => {}
            }
        }
        let first = line_at(at);
        found.push((name, first, line_at(close) - first + 1));
    }
    found
}

/// Whether the `fn` on line `line` (1-based) has a `// whole:` note on the
/// line before it or among the doc comments and attributes above it.
fn marked_whole(text: &str, line: usize) -> bool {
    let lines: Vec<&str> = text.lines().collect();
    lines[..line - 1]
        .iter()
        .rev()
        .take_while(|l| {
            let t = l.trim_start();
            t.starts_with("//") || t.starts_with("#[")
        })
        .any(|l| l.contains("// whole:"))
}

#[test]
fn the_function_measure_skips_strings_comments_and_chars() {
    let text = "fn a() {\n    let s = \"}}}\"; // }\n    let c = '}';\n    let r = r#\"{\"#;\n}\n\
                trait T { fn d(&self); }\nfn b<'x>(v: &'x str) -> impl Fn() {\n    /* { */\n    || ()\n}\n";
    let got = function_lengths(text);
    let want = vec![("a".to_string(), 1, 5), ("b".to_string(), 7, 4)];
    assert_eq!(got, want);
    let marked = "/// Doc.\n// whole: one state machine\n#[inline]\nfn c() {}\n";
    assert!(marked_whole(marked, 4));
    assert!(!marked_whole("// whole: no\n\nfn c() {}\n", 3));
}

#[test]
fn no_function_in_src_is_over_the_limit_unless_marked_whole() {
    let mut src = Vec::new();
    rust_files(&root().join("src"), &mut src);
    let mut problems = Vec::new();
    let mut known = Vec::new();
    let mut whole = Vec::new();
    for file in &src {
        let text = std::fs::read_to_string(root().join(file)).unwrap();
        for (name, line, len) in function_lengths(&text) {
            if len <= MAX_FN_LINES {
                continue;
            }
            let key = format!("{file}::{name}");
            if marked_whole(&text, line) {
                whole.push(format!("{file}:{line} {name} ({len} lines)"));
            } else if TO_BE_SPLIT.contains(&key.as_str()) {
                known.push(key.clone());
                println!("to be split: {file}:{line} {name} ({len} lines)");
            } else {
                problems.push(format!(
                    "{file}:{line} fn {name} is {len} lines (over {MAX_FN_LINES}): split it into \
                     named steps, or put `// whole: <why>` on the line before its `fn` if it \
                     really reads better in one piece"
                ));
            }
        }
    }
    for w in &whole {
        println!("whole by choice: {w}");
    }
    for entry in TO_BE_SPLIT {
        if !known.iter().any(|k| k == entry) {
            problems.push(format!(
                "{entry} is in TO_BE_SPLIT (tests/architecture.rs) but is no longer over \
                 {MAX_FN_LINES} lines (or no longer exists): remove it from the list"
            ));
        }
    }
    assert!(problems.is_empty(), "{}", problems.join("\n"));
}
