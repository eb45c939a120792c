//! Every command the README and the guide (docs/*.md but the code map,
//! ARCHITECTURE.md) show is run here, so the docs cannot rot.
//!
//! The convention: a ```sh block holds commands, one a line (a trailing
//! `\` joins the next line, `#` starts a comment); output and listings are
//! ```text, files ```toml (or their own language). A bare ``` is refused,
//! so a block of commands cannot leave the test by losing its tag.
//!
//! Per command:
//! - `rackbench ...`: its words are parsed by rackbench's own clap type
//!   (`rackbench::cli::Cli`), so an unknown or renamed flag, or a value clap
//!   refuses, fails here (the load flags after `k8s job|run --` too). Then
//!   the binary runs it: `run`, `sweep` and `fit PLAN` as a dry run (the
//!   plan read, checked and expanded, nothing started), `servers` as
//!   written (it only looks), any other with `--help` after its
//!   subcommand, which proves the subcommand exists without a server or a
//!   long study (`runtime list` is one: it probes every runtime's Ruby,
//!   half a minute here).
//! - `make TARGET`: the target is in the Makefile.
//! - a word naming a file under plans/, ruby/, bench/, schema/, tests/ or
//!   scripts/: the file exists.
//! - a script under bench/ or scripts/: it exists (a `NAME=value` before a
//!   program is the shell's and left out; a line of assignments only is
//!   skipped).
//! - `kubectl` and `docker` lines are shown, not run: they need a cluster.

use clap::{CommandFactory, Parser};
use std::path::{Path, PathBuf};
use std::process::Command;

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// The README and the guide's pages, as paths relative to the crate root.
fn pages() -> Vec<String> {
    let mut pages = vec!["README.md".to_string()];
    let mut docs: Vec<String> = std::fs::read_dir(root().join("docs"))
        .unwrap()
        .flatten()
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .filter(|n| n.ends_with(".md") && n != "ARCHITECTURE.md")
        .map(|n| format!("docs/{n}"))
        .collect();
    docs.sort();
    pages.extend(docs);
    pages
}

/// A fenced block: its tag (`sh`, `text`, ... or "" for none), the line its
/// fence opens on (1-based) and its lines.
struct Block {
    tag: String,
    line: usize,
    lines: Vec<String>,
}

fn blocks(text: &str) -> Vec<Block> {
    let mut out = Vec::new();
    let mut open: Option<Block> = None;
    for (i, line) in text.lines().enumerate() {
        let fence = line.trim_start().starts_with("```");
        match (&mut open, fence) {
            (None, true) => {
                let tag = line.trim_start().trim_start_matches('`').trim().to_string();
                open = Some(Block {
                    tag,
                    line: i + 1,
                    lines: Vec::new(),
                });
            }
            (Some(_), true) => out.push(open.take().unwrap()),
            (Some(b), false) => b.lines.push(line.to_string()),
            (None, false) => {}
        }
    }
    assert!(open.is_none(), "a fenced block is never closed");
    out
}

/// A block's commands: continuation lines joined, each with the line it
/// starts on; blank lines and whole-line comments left out.
fn commands(block: &Block) -> Vec<(usize, String)> {
    let mut out = Vec::new();
    let mut current: Option<(usize, String)> = None;
    for (i, line) in block.lines.iter().enumerate() {
        let n = block.line + 1 + i;
        let (start, mut text) = current.take().unwrap_or((n, String::new()));
        let trimmed = line.trim_end();
        if let Some(head) = trimmed.strip_suffix('\\') {
            text.push_str(head);
            text.push(' ');
            current = Some((start, text));
            continue;
        }
        text.push_str(trimmed);
        if !text.trim().is_empty() && !text.trim_start().starts_with('#') {
            out.push((start, text));
        }
    }
    assert!(current.is_none(), "a command ends with a lone `\\`");
    out
}

/// A command line's words as a POSIX shell would split them, without
/// expansion: quotes ('...', "...") and backslashes kept literal text, a
/// `$(...)` kept whole in its word, a word-initial `#` ends the line, and
/// so does an unquoted `>`, `|`, `;` or `&` (what follows is the shell's,
/// not rackbench's).
fn words(line: &str) -> Result<Vec<String>, String> {
    let mut out = Vec::new();
    let mut word: Option<String> = None;
    let mut chars = line.chars().peekable();
    while let Some(c) = chars.next() {
        match c {
            '$' if chars.peek() == Some(&'(') => {
                let w = word.get_or_insert_with(String::new);
                w.push(c);
                let mut depth = 0;
                for x in chars.by_ref() {
                    w.push(x);
                    depth += match x {
                        '(' => 1,
                        ')' => -1,
                        _ => 0,
                    };
                    if depth == 0 {
                        break;
                    }
                }
                if depth != 0 {
                    return Err(format!("an unclosed $( in: {line}"));
                }
            }
            ' ' | '\t' => {
                out.extend(word.take());
            }
            '#' if word.is_none() => break,
            '>' | '|' | ';' | '&' => break,
            '\'' | '"' => {
                let w = word.get_or_insert_with(String::new);
                loop {
                    match chars.next() {
                        Some(q) if q == c => break,
                        Some(x) => w.push(x),
                        None => return Err(format!("an unclosed {c} in: {line}")),
                    }
                }
            }
            '\\' => {
                let w = word.get_or_insert_with(String::new);
                w.extend(chars.next());
            }
            _ => word.get_or_insert_with(String::new).push(c),
        }
    }
    out.extend(word);
    Ok(out)
}

/// The subcommand path a command line names (`["k8s", "job"]`), found in
/// rackbench's own command tree.
fn subcommand_path(args: &[String]) -> Vec<String> {
    let mut cmd = rackbench::cli::Cli::command();
    let mut path = Vec::new();
    for a in args.iter().skip(1) {
        match cmd.find_subcommand(a) {
            Some(sub) => {
                path.push(a.clone());
                cmd = sub.clone();
            }
            None => break,
        }
    }
    path
}

/// The arguments the binary is run with for a command line whose
/// subcommand is `path` and whose other words are `rest`.
fn invocation(path: &[String], rest: &[String]) -> Vec<String> {
    let has = |flag: &str| rest.iter().any(|w| w == flag);
    let first = path.first().map(String::as_str);
    let mut args: Vec<String> = path.to_vec();
    match first {
        // A dry run reads, checks and expands the plan and starts nothing.
        // `--resume` needs a run on disk, `--analyse` a sweep on disk.
        Some("run") if !has("--resume") => {
            args.extend(rest.iter().cloned());
            if !has("--dry-run") {
                args.push("--dry-run".into());
            }
        }
        Some("sweep") if !has("--analyse") => {
            args.extend(rest.iter().cloned());
            if !has("--dry-run") {
                args.push("--dry-run".into());
            }
        }
        // `fit PLAN --dry-run` lists the plan's fits; a fit from flags
        // alone has no dry run.
        Some("fit") if rest.first().is_some_and(|w| w.ends_with(".toml")) => {
            args.extend(rest.iter().cloned());
            if !has("--dry-run") {
                args.push("--dry-run".into());
            }
        }
        Some("servers") => args.extend(rest.iter().cloned()),
        _ => args.push("--help".into()),
    }
    args
}

/// Checks one `rackbench ...` line: parsed by the library's clap type,
/// then run by the binary. Returns what is wrong, if anything.
fn check_rackbench(words: &[String]) -> Option<String> {
    if let Err(e) = rackbench::cli::Cli::try_parse_from(words) {
        return Some(format!("rackbench's parser refuses it: {}", e.render()));
    }
    let path = subcommand_path(words);
    if path.is_empty() {
        return Some("it names no subcommand".into());
    }
    // k8s job|run take the load's flags after `--`: the load's own parser
    // must take them too.
    if path[0] == "k8s" {
        if let Some(i) = words.iter().position(|w| w == "--") {
            let mut load = vec!["rackbench".to_string()];
            load.extend(words[i + 1..].iter().cloned());
            if let Err(e) = rackbench::cli::Cli::try_parse_from(&load) {
                return Some(format!("the load after `--` is refused: {}", e.render()));
            }
        }
    }
    let rest = &words[1 + path.len()..];
    let args = invocation(&path, rest);
    let out = Command::new(env!("CARGO_BIN_EXE_rackbench"))
        .args(&args)
        .current_dir(root())
        .output()
        .unwrap();
    if out.status.success() {
        return None;
    }
    Some(format!(
        "`rackbench {}` exited with {}: {}{}",
        args.join(" "),
        out.status,
        String::from_utf8_lossy(&out.stderr),
        String::from_utf8_lossy(&out.stdout)
    ))
}

/// The Makefile's targets.
fn make_targets() -> Vec<String> {
    let text = std::fs::read_to_string(root().join("Makefile")).unwrap();
    text.lines()
        .filter(|l| !l.starts_with(['\t', '#', ' ']))
        .filter_map(|l| l.split_once(':'))
        .filter(|(name, rest)| !rest.starts_with('=') && !name.contains(['=', '$', ' ']))
        .map(|(name, _)| name.to_string())
        .collect()
}

/// The words of a command that name a file of this repository; each must
/// exist (a plan, an app, a script).
fn missing_paths(words: &[String]) -> Vec<String> {
    const TREES: [&str; 6] = ["plans/", "ruby/", "bench/", "schema/", "tests/", "scripts/"];
    let mut missing = Vec::new();
    for w in words {
        // `--mix=ruby/x.toml`, `config=ruby/x.ru`: the value after `=`.
        let value = w.rsplit('=').next().unwrap_or(w);
        if TREES.iter().any(|t| value.starts_with(t)) && !root().join(value).exists() {
            missing.push(value.to_string());
        }
    }
    missing
}

/// A command's words less the `NAME=value` assignments before its program
/// (`RACKBENCH=target/release/rackbench bench/truth.sh`): the program is
/// what is checked; a line that only assigns is the shell's.
fn without_assignments(words: Vec<String>) -> Vec<String> {
    let assignment = |w: &String| {
        w.split_once('=').is_some_and(|(name, _)| {
            !name.is_empty() && name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_')
        })
    };
    words.into_iter().skip_while(assignment).collect()
}

/// Programs a page may show without the test running them (and the
/// shell's `export`, which sets what the commands after it read).
const SHOWN_ONLY: [&str; 3] = ["kubectl", "docker", "export"];

/// Every problem with the commands of one page's text.
fn page_problems(page: &str, text: &str, targets: &[String]) -> Vec<String> {
    let mut problems = Vec::new();
    for block in blocks(text) {
        if block.tag.is_empty() {
            problems.push(format!(
                "{page}:{}: a ``` block without a tag: ```sh for commands (each run by this \
                 test), ```text for output or a listing",
                block.line
            ));
            continue;
        }
        if block.tag != "sh" {
            continue;
        }
        for (line, command) in commands(&block) {
            let at = format!("{page}:{line}: {}", command.trim());
            let words = match words(&command) {
                Ok(w) => without_assignments(w),
                Err(e) => {
                    problems.push(format!("{at}: {e}"));
                    continue;
                }
            };
            let Some(program) = words.first() else {
                continue;
            };
            for p in missing_paths(&words) {
                problems.push(format!("{at}: {p} does not exist"));
            }
            match program.as_str() {
                "rackbench" => {
                    problems.extend(check_rackbench(&words).map(|e| format!("{at}: {e}")))
                }
                "make" => {
                    for t in words[1..]
                        .iter()
                        .filter(|w| !w.contains('=') && !w.starts_with('-'))
                    {
                        if !targets.contains(t) {
                            problems.push(format!("{at}: the Makefile has no target {t}"));
                        }
                    }
                }
                p if SHOWN_ONLY.contains(&p) => {}
                // A script of this repository (missing_paths checked it).
                p if p.starts_with("bench/") || p.starts_with("scripts/") => {}
                p => problems.push(format!(
                    "{at}: `{p}` is neither rackbench nor make: show it as ```text, or teach \
                     tests/docs.rs to check it"
                )),
            }
        }
    }
    problems
}

#[test]
fn every_command_the_readme_and_the_guide_show_runs() {
    let targets = make_targets();
    assert!(
        targets.iter().any(|t| t == "run"),
        "no run target in {targets:?}"
    );
    let mut problems = Vec::new();
    let mut checked = 0;
    for page in pages() {
        let text = std::fs::read_to_string(root().join(&page)).unwrap();
        checked += blocks(&text)
            .iter()
            .filter(|b| b.tag == "sh")
            .map(|b| commands(b).len())
            .sum::<usize>();
        problems.extend(page_problems(&page, &text, &targets));
    }
    assert!(
        checked > 50,
        "only {checked} commands found: is the block tag still sh?"
    );
    assert!(problems.is_empty(), "{}", problems.join("\n"));
}

#[test]
fn a_flag_that_does_not_exist_fails_the_check() {
    let targets = make_targets();
    let bad = [
        "```sh\nrackbench trial --server puma --wokers 2\n```\n",
        "```sh\nrackbench run plans/default.toml --repeat 3\n```\n",
        "```sh\nrackbench sweep --server puma --vary workers=1,2 \\\n  --no-such-flag\n```\n",
        "```sh\nrackbench k8s job --segments 2 --image i -- load http://127.0.0.1:1/ --conections 5\n```\n",
        "```sh\nrackbench run plans/no-such-plan.toml\n```\n",
        "```sh\nrackbench frobnicate\n```\n",
        "```sh\nmake no-such-target\n```\n",
        "```sh\ncurl http://127.0.0.1/\n```\n",
        "```sh\nRACKBENCH=x bench/no-such-script.sh\n```\n",
        "```sh\nX=1 rackbench trial --bogus\n```\n",
        "```\nrackbench servers\n```\n",
    ];
    for text in bad {
        let problems = page_problems("example.md", text, &targets);
        assert!(!problems.is_empty(), "no problem found in:\n{text}");
    }
    let good = "```sh\nrackbench trial --server puma --workers 2   # a comment\nmake test\n```\n\n```text\nrackbench no-such-command (output)\n```\n";
    assert_eq!(
        page_problems("example.md", good, &targets),
        Vec::<String>::new()
    );
}

/// Guide pages with no command to show, and why.
const NO_EXAMPLE: [(&str, &str); 1] = [("docs/README.md", "the guide's index: links only")];

#[test]
fn every_guide_page_shows_commands_to_run() {
    for page in pages() {
        let text = std::fs::read_to_string(root().join(&page)).unwrap();
        let shown = blocks(&text).iter().any(|b| b.tag == "sh");
        let excused = NO_EXAMPLE.iter().any(|(p, _)| *p == page);
        assert!(
            shown || excused,
            "{page} shows no ```sh block: give it a command to run, or add it to NO_EXAMPLE \
             with the reason"
        );
        assert!(
            !(shown && excused),
            "{page} shows commands now: take it out of NO_EXAMPLE"
        );
    }
}

#[test]
fn words_split_as_the_shell_splits_them() {
    let w = |l: &str| words(l).unwrap();
    assert_eq!(
        w(r#"rackbench trial --command 'a {{port}} b' --env "X=1 2" # note"#),
        [
            "rackbench",
            "trial",
            "--command",
            "a {{port}} b",
            "--env",
            "X=1 2"
        ]
    );
    assert_eq!(
        w("rackbench merge seg-*.json --json > out.json"),
        ["rackbench", "merge", "seg-*.json", "--json"]
    );
    assert_eq!(w(r"a\ b c"), ["a b", "c"]);
    assert!(words("rackbench 'open").is_err());
    assert_eq!(
        without_assignments(w("A=1 B_2=x bench/truth.sh --flag=3")),
        ["bench/truth.sh", "--flag=3"]
    );
    assert!(without_assignments(w("AT=$(date -u -d '+30 sec') # x")).is_empty());
    assert_eq!(w("a \"$AT\" $(b (c)) d"), ["a", "$AT", "$(b (c))", "d"]);
}

#[test]
fn the_readme_is_a_front_door_that_opens_with_the_two_commands() {
    let text = std::fs::read_to_string(root().join("README.md")).unwrap();
    let lines = text.lines().count();
    assert!(
        lines <= 300,
        "README.md has {lines} lines: the manual goes in docs/"
    );
    let first = blocks(&text)
        .into_iter()
        .next()
        .expect("README.md has no block");
    let first: Vec<String> = commands(&first)
        .iter()
        .map(|(_, c)| words(c).unwrap().join(" "))
        .collect();
    assert_eq!(
        first,
        ["make run", "make test"],
        "the README's first commands"
    );
}

#[test]
fn every_relative_link_of_the_readme_and_the_guide_leads_to_a_file() {
    let mut broken = Vec::new();
    for page in pages() {
        let text = std::fs::read_to_string(root().join(&page)).unwrap();
        let dir = Path::new(&page).parent().unwrap().to_path_buf();
        for (i, line) in text.lines().enumerate() {
            for part in line.split("](").skip(1) {
                let Some(end) = part.find(')') else { continue };
                let target = &part[..end];
                let file = target.split('#').next().unwrap();
                if file.is_empty() || target.contains("://") || target.starts_with("mailto:") {
                    continue;
                }
                if !root().join(&dir).join(file).exists() {
                    broken.push(format!("{page}:{}: {target}", i + 1));
                }
            }
        }
    }
    assert!(
        broken.is_empty(),
        "links to nothing:\n{}",
        broken.join("\n")
    );
}
