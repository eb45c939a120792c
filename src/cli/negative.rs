//! Negative-looking values for flags that take a number, a duration or a
//! size: `-d -1s`, `--rate -5`, `-c=-3`. Left to clap, `-d -1s` reads
//! `-1s` as flags and answers with a tip to write `-- -1s` (issue 36),
//! which is no reason at all: no such flag takes a value below zero. So
//! before clap sees the command line, each value given to such a flag
//! that starts with a minus is refused here with the real reason, the
//! flag and an example.
//!
//! Which flags take a number is not listed by hand: a flag does if its
//! own value parser takes `1` and refuses `x` (numbers, durations, sizes,
//! CPU lists), or if it is a string named for a duration or a size. The
//! command line is read only when some value looks negative, so no other
//! run pays for it. It never changes a value and never runs a command.

use clap::Command;

/// `-5`, `-1s`, `-.5`: a value that starts with a minus and a number.
fn looks_negative(v: &str) -> bool {
    v.strip_prefix('-')
        .is_some_and(|r| r.starts_with(|c: char| c.is_ascii_digit() || c == '.'))
}

/// The refusal of the first negative value given to a flag of rackbench's
/// that takes a number, in the command line `args` (the program first),
/// or None; clap's command is built only when some value looks negative.
pub fn check(args: &[String], command: impl FnOnce() -> Command) -> Option<String> {
    let any = args
        .iter()
        .any(|a| looks_negative(a) || a.split_once('=').is_some_and(|(_, v)| looks_negative(v)));
    if !any {
        return None;
    }
    refusal(&command(), args)
}

/// [`check`] against `cmd`, built.
pub fn refusal(cmd: &Command, args: &[String]) -> Option<String> {
    // The subcommand the line names: its names come first.
    let mut sub = cmd;
    let mut rest = args.get(1..).unwrap_or(&[]);
    while let Some((first, tail)) = rest.split_first() {
        match sub.find_subcommand(first) {
            Some(s) => (sub, rest) = (s, tail),
            None => break,
        }
    }
    first_negative(&numeric_flags(sub), rest)
}

/// The refusal of the first negative value that `rest` (a subcommand's
/// arguments) gives one of `numeric`, its flags that take a number.
pub fn first_negative(numeric: &[clap::Arg], rest: &[String]) -> Option<String> {
    let mut tokens = rest.iter().take_while(|t| *t != "--").peekable();
    while let Some(token) = tokens.next() {
        let (flag, value) = match token.split_once('=') {
            Some((f, v)) if f.starts_with('-') => (f, Some(v)),
            _ => (token.as_str(), None),
        };
        let Some(arg) = numeric.iter().find(|a| names(a).iter().any(|n| n == flag)) else {
            continue;
        };
        let value = match value {
            Some(v) => v,
            None => match tokens.peek() {
                Some(v) => v.as_str(),
                None => continue,
            },
        };
        if looks_negative(value) {
            return Some(in_words(arg, flag, value));
        }
    }
    None
}

/// `--rate -5 is negative: --rate takes a RATE, never below zero, e.g. --rate 5`.
fn in_words(arg: &clap::Arg, flag: &str, value: &str) -> String {
    let what = arg
        .get_value_names()
        .and_then(|v| v.first())
        .map_or_else(|| "a value".to_string(), |n| format!("{n}"));
    format!(
        "{flag} {value} is negative: {flag} takes {what}, never below zero, e.g. {flag} {}",
        &value[1..]
    )
}

/// The flag's spellings: `--duration`, `-d`.
pub fn names(arg: &clap::Arg) -> Vec<String> {
    let mut out: Vec<String> = arg
        .get_long_and_visible_aliases()
        .unwrap_or_default()
        .into_iter()
        .map(|l| format!("--{l}"))
        .collect();
    out.extend(
        arg.get_short_and_visible_aliases()
            .unwrap_or_default()
            .into_iter()
            .map(|s| format!("-{s}")),
    );
    out
}

/// Strings that are a duration or a size all the same (checked after
/// clap, by the subcommand).
const MEASURE_NAMES: &[&str] = &["DURATION", "WARMUP", "MEMORY", "CPU", "SIZE", "TIME"];

/// The flags of `cmd` that take a number, a duration or a size.
pub fn numeric_flags(cmd: &Command) -> Vec<clap::Arg> {
    cmd.get_arguments()
        .filter(|a| a.get_action().takes_values() && a.get_long().is_some())
        .filter(|a| {
            let named = a
                .get_value_names()
                .is_some_and(|v| v.iter().any(|n| MEASURE_NAMES.contains(&n.as_str())));
            named || (parses(cmd, a, "1") && !parses(cmd, a, "x"))
        })
        .cloned()
        .collect()
}

/// Whether `arg`'s own value parser takes `value`: the subcommand parsed
/// with that one flag, a refusal of anything else (a missing argument)
/// not counted.
fn parses(cmd: &Command, arg: &clap::Arg, value: &str) -> bool {
    use clap::error::ErrorKind;
    let flag = format!("--{}", arg.get_long().unwrap_or_default());
    let line = [cmd.get_name(), flag.as_str(), value];
    match cmd.clone().try_get_matches_from(line) {
        Ok(_) => true,
        Err(e) => !matches!(
            e.kind(),
            ErrorKind::ValueValidation | ErrorKind::InvalidValue
        ),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::{value_parser, Arg};

    /// A command of each kind of flag (the whole CLI is held in
    /// tests/cli.rs).
    fn cmd() -> Command {
        Command::new("t").subcommand(
            Command::new("go")
                .arg(
                    Arg::new("rate")
                        .long("rate")
                        .value_parser(value_parser!(f64)),
                )
                .arg(
                    Arg::new("n")
                        .short('n')
                        .long("count")
                        .value_parser(value_parser!(usize)),
                )
                .arg(
                    Arg::new("d")
                        .short('d')
                        .long("duration")
                        .value_name("DURATION"),
                )
                .arg(Arg::new("header").long("header"))
                .arg(
                    Arg::new("json")
                        .long("json")
                        .action(clap::ArgAction::SetTrue),
                ),
        )
    }

    #[test]
    fn a_negative_value_of_a_number_flag_is_refused_in_each_form_and_others_pass() {
        let cases: &[(&str, Option<&str>)] = &[
            (
                "t go --rate -5",
                Some(
                    "--rate -5 is negative: --rate takes a value, never below zero, e.g. --rate 5",
                ),
            ),
            ("t go --rate=-5", Some("--rate -5 is negative")),
            ("t go -n -3", Some("-n -3 is negative")),
            ("t go --count=-.5", Some("--count -.5 is negative")),
            (
                "t go -d -1s",
                Some("-d -1s is negative: -d takes DURATION, never below zero, e.g. -d 1s"),
            ),
            ("t go --header -1", None),
            ("t go --json -1", None),
            ("t go --rate 5 -d 1s", None),
            ("t go -- --rate -5", None),
            ("t go --rate", None),
        ];
        for &(line, want) in cases {
            let args: Vec<String> = line.split_whitespace().map(String::from).collect();
            let got = check(&args, cmd);
            match (got.as_deref(), want) {
                (None, None) => {}
                (Some(got), Some(want)) => assert!(got.starts_with(want), "{line}: {got}"),
                (got, want) => panic!("{line}: got {got:?}, want {want:?}"),
            }
        }
    }

    #[test]
    fn numbers_and_measures_are_number_flags_and_words_and_switches_are_not() {
        let c = cmd();
        let go = c.find_subcommand("go").unwrap();
        let got: Vec<String> = numeric_flags(go)
            .iter()
            .map(|a| a.get_id().to_string())
            .collect();
        assert_eq!(got, ["rate", "n", "d"]);
    }
}
