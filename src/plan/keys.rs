//! Every key a plan may hold, in words: what its value must be and an
//! example line; and serde's refusals of a plan turned into those words,
//! at the file, the line and the key (issue 36: `repeats = "two"` came
//! out as `invalid type: string "two", expected u32`).
//!
//! The words live in one table, [`KEYS`], with a row per key of the schema
//! (schema.rs); a test reads the schema's own field lists (serde's
//! unknown-key answer) so a key added there without its row fails. Which
//! key a refusal is about comes from where its span falls in the file's
//! tree of values, not from the message, so the same words serve every
//! key. An empty plan gets the smallest plan that runs; a syntax error
//! gets its line, cut to a window around the column (a 10 MB plan of one
//! line once echoed the whole line, twice).
//!
//! It never checks one value against another (check.rs) and never reads
//! a file: it is given the text and the error.

use super::PlanError;

/// One key of the schema: its path (tables joined by dots, a `*` for a
/// name the user chooses, array tables without an index), what its value
/// must be, and an example line.
pub(super) struct Key {
    pub path: &'static str,
    pub must_be: &'static str,
    pub example: &'static str,
}

const fn key(path: &'static str, must_be: &'static str, example: &'static str) -> Key {
    Key {
        path,
        must_be,
        example,
    }
}

/// The smallest plan that runs: what an empty plan is answered with.
pub(super) const SMALLEST_PLAN: &str =
    "name = \"first\"\nservers = [\"installed\"]\napps = [\"hello\"]\n\n[load]\nconnections = [10]\n";

const WHOLE_LIST: &str = "a list of whole numbers";
const TIME: &str = "a duration in quotes (\"500ms\", \"10s\", \"2m\")";

/// Every key of the schema, in its words.
#[rustfmt::skip]
pub(super) const KEYS: &[Key] = &[
    key("name", "the study's name, in quotes", "name = \"puma-vs-unicorn\""),
    key("description", "a string", "description = \"puma against unicorn on hello\""),
    key("follows", "the seed document it reproduces, in quotes", "follows = \"seed-001\""),
    key("repeats", "a whole number of runs of each trial, 1 or more", "repeats = 5"),
    key("servers", "a list of server names (or \"installed\")", "servers = [\"puma\", \"unicorn\"]"),
    key("server", "[[server]] tables, each with a name", "server = [{ name = \"puma\", workers = [2, 4] }]"),
    key("apps", "a list of app names", "apps = [\"hello\"]"),
    key("app_expect_body", "text in quotes", "app_expect_body = \"spent\""),
    key("soak", TIME, "soak = \"2h\""),
    key("database", "\"sqlite\" or \"postgres\"", "database = \"postgres\""),
    key("load", "a [load] table", "load = { connections = [10] }"),
    key("behind", "a list of \"none\" and/or \"nginx\"", "behind = [\"none\", \"nginx\"]"),
    key("nginx_workers", "a list of nginx worker counts", "nginx_workers = [1, 2]"),
    key("nginx_keepalive", "a list of \"off\" or upstream pool sizes", "nginx_keepalive = [\"off\", 64]"),
    key("nginx_http", "a list of HTTP versions, \"1.0\" or \"1.1\"", "nginx_http = [\"1.1\"]"),
    key("env", "a table of environment variables, each a string", "env = { RACK_ENV = \"production\" }"),
    key("env.*", "a string", "RACK_ENV = \"production\""),
    key("server_defs", "a table of your own servers, each with a command", "server_defs = { mine = { command = \"mine -p {{port}}\" } }"),
    key("server_defs.*", "a table with at least a command", "mine = { command = \"mine -p {{port}}\" }"),
    key("server_defs.*.description", "a string", "description = \"my server\""),
    key("server_defs.*.command", "a command template, in quotes", "command = \"mine -p {{port}}\""),
    key("server_defs.*.version_command", "a command, in quotes", "version_command = \"mine --version\""),
    key("server_defs.*.requires", "a list of executables", "requires = [\"mine\"]"),
    key("server_defs.*.config_template", "a file name, in quotes", "config_template = \"mine.conf\""),
    key("server_defs.*.stop_signal", "a signal name, in quotes", "stop_signal = \"QUIT\""),
    key("server_defs.*.processes", "true or false", "processes = true"),
    key("server_defs.*.threads", "true or false", "threads = true"),
    key("server_defs.*.unix_socket", "true or false", "unix_socket = true"),
    key("server_defs.*.keep_alive", "true or false", "keep_alive = false"),
    key("server_defs.*.default_workers", "a whole number, 0 or more", "default_workers = 2"),
    key("server_defs.*.default_threads", "a whole number, 0 or more", "default_threads = 5"),
    key("server_defs.*.settings", "a table of settings, each a string", "settings = { backlog = \"1024\" }"),
    key("server_defs.*.settings.*", "a string", "backlog = \"1024\""),
    key("server_defs.*.env", "a table of environment variables, each a string", "env = { RACK_ENV = \"production\" }"),
    key("server_defs.*.env.*", "a string", "RACK_ENV = \"production\""),
    key("server_defs.*.start_timeout_s", "a number of seconds", "start_timeout_s = 30.0"),
    key("server_defs.*.notes", "a string", "notes = \"needs a config file\""),
    key("server_defs.*.stats", "a table with path and fields", "stats = { path = \"/stats\", fields = [\"backlog\"] }"),
    key("server_defs.*.stats.path", "a path, in quotes", "path = \"/stats?token={{stats_token}}\""),
    key("server_defs.*.stats.fields", "a list of JSON keys", "fields = [\"backlog\", \"running\"]"),
    key("server_defs.*.restarts", "a table of restart kinds", "restarts = { phased = { signal = \"USR1\" } }"),
    key("server_defs.*.restarts.*", "a table with a signal or a command", "phased = { signal = \"USR1\" }"),
    key("server_defs.*.restarts.*.signal", "a signal name, in quotes", "signal = \"USR2\""),
    key("server_defs.*.restarts.*.then", "\"quit-old-master\"", "then = \"quit-old-master\""),
    key("server_defs.*.restarts.*.command", "a command template, in quotes", "command = \"pumactl -P {{pidfile}} phased-restart\""),
    key("server_defs.*.restarts.*.needs_workers", "true or false", "needs_workers = true"),
    key("server_defs.*.restarts.*.timeout_s", "a number of seconds", "timeout_s = 30.0"),
    key("breakpoint", "a [breakpoint] table", "breakpoint = { mode = \"rate\" }"),
    key("breakpoint.mode", "\"connections\" or \"rate\"", "mode = \"rate\""),
    key("breakpoint.start", "a number, the first level", "start = 100"),
    key("breakpoint.max", "a number, the highest level", "max = 5000"),
    key("breakpoint.growth", "a number above 1", "growth = 3.0"),
    key("breakpoint.resolution", "a fraction, 0.05 for 5%", "resolution = 0.05"),
    key("breakpoint.step_duration", TIME, "step_duration = \"5s\""),
    key("breakpoint.probe", TIME, "probe = \"500ms\""),
    key("breakpoint.slo", "a latency ceiling, in quotes", "slo = \"p99=200ms\""),
    key("breakpoint.and_fixed_loads", "true or false", "and_fixed_loads = true"),
    key("checks", "a list of thresholds, or a [checks] table", "checks = [\"p99<200ms\", \"errors<1%\"]"),
    key("checks.*", "a threshold, in quotes", "p99 = \"<200ms\""),
    key("sweep", "a [sweep] table with vary and values", "sweep = { vary = \"workers\", values = [1, 2, 4] }"),
    key("sweep.vary", "the name of the variable, in quotes", "vary = \"workers\""),
    key("sweep.values", "a list of numbers or strings", "values = [1, 2, 4, 8]"),
    key("telemetry", "true or false", "telemetry = true"),
    key("profile", "true or false", "profile = true"),
    key("primary_metric", "a metric name, in quotes", "primary_metric = \"throughput\""),
    key("rerun_disturbed", "a whole number of reruns", "rerun_disturbed = 2"),
    key("runtimes", "a list of runtime names", "runtimes = [\"system\", \"debian-13\"]"),
    key("yjit", "a list of true and/or false", "yjit = [false, true]"),
    key("allocator", "a list of \"glibc\" and/or \"jemalloc\"", "allocator = [\"glibc\", \"jemalloc\"]"),
    key("malloc_arena_max", "a list of arena counts", "malloc_arena_max = [2]"),
    key("runtime_defs", "a table of your own Rubies, each with ruby", "runtime_defs = { mine = { ruby = \"/opt/rubies/3.3/bin/ruby\" } }"),
    key("runtime_defs.*", "a table with ruby (and gemfile)", "mine = { ruby = \"/opt/rubies/3.3/bin/ruby\" }"),
    key("runtime_defs.*.ruby", "the interpreter's path, in quotes", "ruby = \"/opt/rubies/3.3/bin/ruby\""),
    key("runtime_defs.*.gemfile", "a Gemfile's path, in quotes", "gemfile = \"/srv/app/Gemfile\""),
    key("budget", "a [budget] table", "budget = { memory = \"512M\", cpus = 1.5 }"),
    key("budget.memory", "a size in quotes, or a list of them", "memory = [\"512M\", \"1G\"]"),
    key("budget.cpus", "a number of CPUs, or a list of them", "cpus = [1, 1.5]"),
    key("restart", "a [restart] table", "restart = { kind = \"phased\", at = \"3s\" }"),
    key("restart.kind", "a restart kind in quotes, or a list of them", "kind = [\"phased\", \"hot\"]"),
    key("restart.at", TIME, "at = \"3s\""),
    key("fit", "a [fit] table", "fit = { slo = \"p99=200ms\" }"),
    key("fit.slo", "a latency objective, in quotes", "slo = \"p99=200ms\""),
    key("fit.headroom", "a share in quotes", "headroom = \"10%\""),
    key("fit.repeats", "a whole number of trials per configuration", "repeats = 3"),
    key("fit.max_workers", "a whole number of worker processes", "max_workers = 8"),
    key("fit.max_threads", "a whole number of threads per worker", "max_threads = 16"),
    key("server.name", "a server name, in quotes", "name = \"puma\""),
    key("server.label", "a string", "label = \"puma tuned\""),
    key("server.workers", WHOLE_LIST, "workers = [2, 4]"),
    key("server.threads", WHOLE_LIST, "threads = [5, 16]"),
    key("server.instances", WHOLE_LIST, "instances = [1, 4]"),
    key("server.settings", "a table of settings, each a string", "settings = { backlog = \"1024\" }"),
    key("server.settings.*", "a string", "backlog = \"1024\""),
    key("server.env", "a table of environment variables, each a string", "env = { RACK_ENV = \"production\" }"),
    key("server.env.*", "a string", "RACK_ENV = \"production\""),
    key("server.runtimes", "a list of runtime names", "runtimes = [\"system\"]"),
    key("server.yjit", "a list of true and/or false", "yjit = [true]"),
    key("server.allocator", "a list of \"glibc\" and/or \"jemalloc\"", "allocator = [\"jemalloc\"]"),
    key("server.malloc_arena_max", "a list of arena counts", "malloc_arena_max = [2]"),
    key("load.connections", "a list of connection counts", "connections = [10, 100]"),
    key("load.app_connections", "a table of connection lists by app", "app_connections = { hello = [10, 100] }"),
    key("load.app_connections.*", "a list of connection counts", "hello = [10, 100]"),
    key("load.rates", "a list of rates, requests per second", "rates = [500, 1000]"),
    key("load.rate_connections", "a whole number of connections", "rate_connections = 100"),
    key("load.duration", TIME, "duration = \"10s\""),
    key("load.warmup", TIME, "warmup = \"2s\""),
    key("load.warmup_until_steady", "true or false", "warmup_until_steady = true"),
    key("load.timeout", TIME, "timeout = \"10s\""),
    key("load.keep_alive", "true or false", "keep_alive = false"),
    key("load.threads", "a whole number of load threads", "threads = 2"),
    key("load.replay", "a record file's path, in quotes", "replay = \"traffic.json\""),
    key("load.replay_speed", "a number, 2 for twice as fast", "replay_speed = 2.0"),
    key("load.replay_loop", "true or false", "replay_loop = true"),
    key("load.replay_max_gap", TIME, "replay_max_gap = \"10s\""),
    key("load.mix", "a mix file's path, in quotes", "mix = \"shop.toml\""),
    key("load.slack", TIME, "slack = \"2ms\""),
    key("load.slow_clients", "a count of slow clients, or a list of them", "slow_clients = [0, 4]"),
    key("load.slow_mode", "\"headers\", \"body\" or \"read\"", "slow_mode = \"body\""),
    key("load.slow_bytes", "a whole number of bytes", "slow_bytes = 4"),
    key("load.slow_every", TIME, "slow_every = \"1s\""),
];

/// The row of a key path as the file has it (`["server", "0",
/// "workers"]` is `server.workers`; a name the user chose is `*`).
pub(super) fn row(segments: &[Segment]) -> Option<&'static Key> {
    let mut path = String::new();
    for s in segments {
        let Segment::Key(k) = s else { continue };
        let named = join(&path, k);
        let known = |p: &str| {
            KEYS.iter()
                .any(|r| r.path == p || r.path.starts_with(&format!("{p}.")))
        };
        path = if known(&named) {
            named
        } else {
            join(&path, "*")
        };
        if !known(&path) {
            return None;
        }
    }
    KEYS.iter().find(|r| r.path == path)
}

fn join(a: &str, b: &str) -> String {
    if a.is_empty() {
        b.to_string()
    } else {
        format!("{a}.{b}")
    }
}

/// One step of a key path: a table's key or an array's index.
#[derive(Debug, Clone, PartialEq)]
pub(super) enum Segment {
    Key(String),
    Index(usize),
}

/// The key as a user reads it in the file: `repeats`, `[load]
/// connections`, `[[server]] workers`.
fn shown(segments: &[Segment]) -> String {
    let segments = without_item(segments).0;
    let Some((Segment::Key(leaf), table)) = segments.split_last() else {
        return "the plan".into();
    };
    let mut head = String::new();
    let mut array = false;
    for s in table {
        match s {
            Segment::Key(k) => head = join(&head, k),
            Segment::Index(_) => array = true,
        }
    }
    match (head.is_empty(), array) {
        (true, _) => format!("`{leaf}`"),
        (false, true) => format!("[[{head}]] `{leaf}`"),
        (false, false) => format!("[{head}] `{leaf}`"),
    }
}

/// A path without the index of a list's item at its end, and that
/// item's number counted from 1 (`workers = [1, "x"]`'s "x" is item 2
/// of `workers`).
fn without_item(segments: &[Segment]) -> (&[Segment], Option<usize>) {
    match segments.split_last() {
        Some((Segment::Index(i), rest)) if matches!(rest.last(), Some(Segment::Key(_))) => {
            (rest, Some(i + 1))
        }
        _ => (segments, None),
    }
}

/// A table as a user reads it: `the plan`, `[load]`, `a [[server]]`.
fn shown_table(segments: &[Segment]) -> String {
    match segments.last() {
        None => "the plan".into(),
        Some(Segment::Index(_)) => format!("[[{}]]", keys_of(segments)),
        Some(Segment::Key(_)) => format!("[{}]", keys_of(segments)),
    }
}

fn keys_of(segments: &[Segment]) -> String {
    segments
        .iter()
        .filter_map(|s| match s {
            Segment::Key(k) => Some(k.as_str()),
            Segment::Index(_) => None,
        })
        .collect::<Vec<_>>()
        .join(".")
}

/// serde's refusal of `text` (a plan read from `file`) in words: the
/// file, the line, the key, what it must be and an example; an empty
/// plan answered with the smallest one that runs.
pub(super) fn refusal(text: &str, file: &str, e: &toml::de::Error) -> PlanError {
    if text.parse::<toml::Table>().is_ok_and(|t| t.is_empty()) {
        return PlanError::Invalid {
            file: file.to_string(),
            message: format!(
                "the plan is empty: a plan needs a name, its servers, its apps and a load shape; the smallest that runs (on every installed server):\n\n{}",
                SMALLEST_PLAN.trim_end()
            ),
        };
    }
    let Some(span) = e.span() else {
        return PlanError::Invalid {
            file: file.to_string(),
            message: cut(e.message(), 300),
        };
    };
    let (line, column) = line_and_column(text, span.start);
    let excerpt = excerpt(text, span.clone());
    let table = text.parse::<toml::Table>();
    if table.is_err() {
        // The text is not TOML: no key to name, the place is all there is.
        return PlanError::Syntax {
            file: file.to_string(),
            line,
            column,
            message: format!("{}\n{excerpt}", cut(&e.message().replace('\n', "; "), 300)),
        };
    }
    let message = {
        let segments = toml_edit::ImDocument::parse(text)
            .map(|doc| path_at(doc.as_table(), span.start))
            .unwrap_or_default();
        let found = cut(text.get(span).unwrap_or(""), 40);
        format!("{}\n{excerpt}", in_words(e.message(), &segments, &found))
    };
    PlanError::At {
        file: file.to_string(),
        line,
        message,
    }
}

/// serde's message about the value at `segments` (its text `found`) in
/// the key's words.
fn in_words(message: &str, segments: &[Segment], found: &str) -> String {
    if let Some(missing) = quoted(message, "missing field `") {
        let mut at = segments.to_vec();
        at.push(Segment::Key(missing.clone()));
        return match row(&at) {
            Some(k) => format!(
                "{} needs `{missing}`: {}, e.g. {}",
                shown_table(segments),
                k.must_be,
                k.example
            ),
            None => format!("{} needs `{missing}`", shown_table(segments)),
        };
    }
    if let Some(unknown) = quoted(message, "unknown field `") {
        let known = expected(message);
        return format!(
            "{} has no key `{unknown}`{}",
            shown_table(segments),
            if known.is_empty() {
                String::new()
            } else {
                format!(": its keys are {}", known.join(", "))
            }
        );
    }
    if let Some(value) = quoted(message, "unknown variant `") {
        let choices = expected(message);
        let example = row(without_item(segments).0)
            .map(|k| format!(": e.g. {}", k.example))
            .unwrap_or_default();
        return format!(
            "{}: {value} is none of {}{example}",
            shown(segments),
            choices.join(", ")
        );
    }
    let Some(k) = row(without_item(segments).0) else {
        return format!("{}: {}", shown(segments), message);
    };
    let wrong_shape = [
        "invalid type",
        "invalid value",
        "invalid length",
        "data did not match",
    ]
    .iter()
    .any(|p| message.starts_with(p));
    if wrong_shape {
        let not = match without_item(segments).1 {
            Some(n) => format!("; its item {n} is {found}"),
            None => format!(", not {found}"),
        };
        format!(
            "{} must be {}{not}: e.g. {}",
            shown(segments),
            k.must_be,
            example_from(k, found)
        )
    } else {
        // A refusal with its own reason (a size, a threshold, a choice).
        format!("{}: {message}: e.g. {}", shown(segments), k.example)
    }
}

/// The example for a key: a list's example made of the value given
/// when that value is one of the list's kind (`connections = 2` gets
/// `connections = [2]`).
fn example_from(k: &Key, found: &str) -> String {
    let Some((lhs, rhs)) = k.example.split_once(" = ") else {
        return k.example.to_string();
    };
    let kind = |v: &str| match v.trim().chars().next() {
        Some('"' | '\'') => 's',
        Some('t' | 'f') => 'b',
        Some(c) if c.is_ascii_digit() => 'n',
        _ => '?',
    };
    match rhs.strip_prefix('[') {
        Some(first)
            if kind(found) != '?' && kind(found) == kind(first) && !found.contains('\n') =>
        {
            format!("{lhs} = [{found}]")
        }
        _ => k.example.to_string(),
    }
}

/// The names serde lists after "expected", each in backticks.
fn expected(message: &str) -> Vec<&str> {
    message
        .split_once("expected")
        .map(|(_, l)| l.split('`').skip(1).step_by(2).collect())
        .unwrap_or_default()
}

/// The text between `prefix` (at the start of `message`) and the next
/// backtick.
fn quoted(message: &str, prefix: &str) -> Option<String> {
    let rest = message.strip_prefix(prefix)?;
    rest.split('`').next().map(str::to_string)
}

/// Line and column (both from 1, the column in characters) of a byte
/// offset.
fn line_and_column(text: &str, at: usize) -> (usize, usize) {
    let at = floor_boundary(text, at.min(text.len()));
    let before = &text[..at];
    let line = before.matches('\n').count() + 1;
    let start = before.rfind('\n').map_or(0, |i| i + 1);
    (line, before[start..].chars().count() + 1)
}

fn floor_boundary(text: &str, mut at: usize) -> usize {
    while !text.is_char_boundary(at) {
        at -= 1;
    }
    at
}

/// Characters either side of the column that an excerpt shows.
const WINDOW_CHARS: usize = 40;

/// The line at `span` with a caret under it, cut to [`WINDOW_CHARS`]
/// either side of the span's start, so a plan of one huge line is
/// echoed in a few dozen characters, not whole.
fn excerpt(text: &str, span: std::ops::Range<usize>) -> String {
    let at = floor_boundary(text, span.start.min(text.len()));
    let start = text[..at].rfind('\n').map_or(0, |i| i + 1);
    let end = text[at..].find('\n').map_or(text.len(), |i| at + i);
    let before: Vec<char> = text[start..at].chars().collect();
    let after: Vec<char> = text[at..end].chars().collect();
    let skip = before.len().saturating_sub(WINDOW_CHARS);
    let head: String = before[skip..].iter().collect();
    let tail: String = after.iter().take(WINDOW_CHARS).collect();
    let (lead, trail) = (
        if skip > 0 { "…" } else { "" },
        if after.len() > WINDOW_CHARS {
            "…"
        } else {
            ""
        },
    );
    let span_chars = text
        .get(at..span.end.min(end).max(at))
        .map_or(1, |s| s.chars().count())
        .clamp(1, WINDOW_CHARS);
    let line = line_and_column(text, at).0;
    let gutter = " ".repeat(line.to_string().len());
    format!(
        "{gutter} |\n{line} | {lead}{head}{tail}{trail}\n{gutter} | {}{}",
        " ".repeat(lead.chars().count() + head.chars().count()),
        "^".repeat(span_chars)
    )
}

/// `s` cut to `max` characters, with an ellipsis when cut; only its
/// first line.
fn cut(s: &str, max: usize) -> String {
    let first = s.lines().next().unwrap_or("");
    let more = first.chars().count() > max || first.len() < s.trim_end().len();
    let mut out: String = first.chars().take(max).collect();
    if more {
        out.push('…');
    }
    out
}

/// The path to the innermost key whose value's span holds byte `at`:
/// a value for a wrong value, a table for a missing or unknown key (an
/// implicit table, `[a.b]`'s `a`, has no span: its children are searched).
fn path_at(table: &toml_edit::Table, at: usize) -> Vec<Segment> {
    in_table(table, at).unwrap_or_default()
}

fn holds(span: Option<std::ops::Range<usize>>, at: usize) -> bool {
    span.is_some_and(|s| s.contains(&at))
}

fn in_table(t: &toml_edit::Table, at: usize) -> Option<Vec<Segment>> {
    t.iter()
        .find_map(|(k, item)| prefixed(Segment::Key(k.to_string()), in_item(item, at)))
        .or_else(|| holds(t.span(), at).then(Vec::new))
}

fn in_item(item: &toml_edit::Item, at: usize) -> Option<Vec<Segment>> {
    use toml_edit::Item;
    match item {
        Item::Value(v) => in_value(v, at),
        Item::Table(t) => in_table(t, at),
        Item::ArrayOfTables(a) => a
            .iter()
            .enumerate()
            .find_map(|(i, t)| prefixed(Segment::Index(i), in_table(t, at))),
        Item::None => None,
    }
}

fn in_value(v: &toml_edit::Value, at: usize) -> Option<Vec<Segment>> {
    use toml_edit::Value;
    let inner = match v {
        Value::Array(a) => a
            .iter()
            .enumerate()
            .find_map(|(i, x)| prefixed(Segment::Index(i), in_value(x, at))),
        Value::InlineTable(t) => t
            .iter()
            .find_map(|(k, x)| prefixed(Segment::Key(k.to_string()), in_value(x, at))),
        _ => None,
    };
    inner.or_else(|| holds(v.span(), at).then(Vec::new))
}

fn prefixed(head: Segment, rest: Option<Vec<Segment>>) -> Option<Vec<Segment>> {
    rest.map(|mut r| {
        r.insert(0, head);
        r
    })
}

#[cfg(test)]
mod tests {
    use super::super::Plan;
    use super::*;

    fn refused(text: &str) -> String {
        Plan::parse(text, "t.toml").unwrap_err().to_string()
    }

    /// The keys of each table of the schema, as serde lists them when it
    /// refuses an unknown one: the schema's own word for what exists.
    fn schema_keys(table: &str, header: &str) -> Vec<String> {
        let text = format!("name = \"t\"\napps = [\"hello\"]\n{header}zzz_no_such_key = 1\n");
        let err = refused(&text);
        let list = err
            .split_once("its keys are ")
            .unwrap_or_else(|| panic!("{table}: {err}"))
            .1
            .lines()
            .next()
            .unwrap();
        list.split(", ")
            .map(|k| {
                if table.is_empty() {
                    k.to_string()
                } else {
                    format!("{table}.{k}")
                }
            })
            .collect()
    }

    #[test]
    fn every_key_of_the_schema_has_its_words() {
        let tables = [
            ("", ""),
            ("load", "[load]\n"),
            ("breakpoint", "[breakpoint]\n"),
            ("sweep", "[sweep]\n"),
            ("budget", "[budget]\n"),
            ("restart", "[restart]\n"),
            ("fit", "[fit]\n"),
            ("server", "[[server]]\nname = \"puma\"\n"),
            ("server_defs.*", "[server_defs.x]\n"),
            ("server_defs.*.stats", "[server_defs.x.stats]\n"),
            ("server_defs.*.restarts.*", "[server_defs.x.restarts.y]\n"),
            ("runtime_defs.*", "[runtime_defs.x]\n"),
        ];
        for (table, header) in tables {
            let keys = schema_keys(table, header);
            assert!(keys.len() >= 2, "{table}: {keys:?}");
            for k in keys {
                assert!(
                    KEYS.iter().any(|r| r.path == k),
                    "the plan key {k} has no row in plan::keys::KEYS: add what it must be and an example"
                );
            }
        }
    }

    /// A plan that sets `row`'s key to a value of the wrong shape, and
    /// the line that value is on.
    fn wrong_value_plan(row: &Key) -> (String, usize, &'static str) {
        // No key but a switch takes a bare boolean.
        let wrong = if row.must_be == "true or false" {
            "\"yes\""
        } else {
            "true"
        };
        let path = row.path.replace('*', "x");
        let (table, leaf) = path.rsplit_once('.').unwrap_or(("", &path));
        let mut text = String::new();
        for (k, v) in [("name", "\"t\""), ("apps", "[\"hello\"]")] {
            if path != k {
                text.push_str(&format!("{k} = {v}\n"));
            }
        }
        if table == "server" || table.starts_with("server.") {
            text.push_str("[[server]]\n");
            if path != "server.name" {
                text.push_str("name = \"puma\"\n");
            }
            if table != "server" {
                text.push_str(&format!("[{table}]\n"));
            }
        } else if !table.is_empty() {
            text.push_str(&format!("[{table}]\n"));
        }
        let line = text.lines().count() + 1;
        text.push_str(&format!("{leaf} = {wrong}\n"));
        (text, line, wrong)
    }

    #[test]
    fn every_key_refused_names_the_file_line_key_what_it_must_be_and_an_example() {
        for row in KEYS {
            let (text, line, wrong) = wrong_value_plan(row);
            let err = refused(&text);
            let first = err.lines().next().unwrap();
            let leaf = row.path.rsplit('.').next().unwrap().replace('*', "x");
            for want in [
                format!("t.toml, line {line}: "),
                format!("`{leaf}`"),
                format!("e.g. {}", example_from(row, wrong)),
            ] {
                assert!(
                    first.contains(&want),
                    "{}: no {want:?} in\n{err}\n(plan:\n{text})",
                    row.path
                );
            }
            assert!(!first.contains("expected"), "serde's words: {first}");
        }
    }

    #[test]
    fn issue_36_repeats_two_is_answered_in_words_not_serdes() {
        let err = refused("name = \"t\"\napps = [\"hello\"]\nrepeats = \"two\"\n");
        assert!(
            err.starts_with("t.toml, line 3: `repeats` must be a whole number")
                && err.contains("not \"two\"")
                && err.contains("e.g. repeats = 5"),
            "{err}"
        );
        assert!(!err.contains("u32"), "{err}");
        let err = refused("name = \"t\"\napps = [\"hello\"]\nrepeats = -1\n");
        assert!(
            err.starts_with("t.toml, line 3: `repeats` must be") && err.contains("not -1"),
            "{err}"
        );
    }

    #[test]
    fn issue_36_connections_2_gets_the_list_it_meant() {
        let err = refused("name = \"t\"\napps = [\"hello\"]\n[load]\nconnections = 2\n");
        assert!(
            err.starts_with("t.toml, line 4: [load] `connections` must be a list")
                && err.contains("e.g. connections = [2]"),
            "{err}"
        );
        assert!(!err.contains("sequence"), "{err}");
    }

    #[test]
    fn an_item_of_a_list_and_a_missing_key_are_named_where_they_are() {
        let cases = [
            (
                "name = \"t\"\napps = [\"hello\"]\n[[server]]\nname = \"puma\"\nworkers = [1,\n  \"two\"]\n",
                "t.toml, line 6: [[server]] `workers` must be a list of whole numbers; its item 2 is \"two\"",
            ),
            (
                "name = \"t\"\napps = [\"hello\"]\n[[server]]\nname = \"puma\"\n[[server]]\nworkers = [2]\n",
                "t.toml, line 5: [[server]] needs `name`: a server name, in quotes, e.g. name = \"puma\"",
            ),
            (
                "apps = [\"hello\"]\n",
                "t.toml, line 1: the plan needs `name`: the study's name",
            ),
            (
                "name = \"t\"\napps = [\"hello\"]\n[load]\nconections = [2]\n",
                "t.toml, line 4: [load] has no key `conections`: its keys are connections,",
            ),
            (
                "name = \"t\"\napps = [\"hello\"]\n[server_defs.mine.restarts.phased]\nsignal = 1\n",
                "t.toml, line 4: [server_defs.mine.restarts.phased] `signal` must be a signal name",
            ),
        ];
        for (text, want) in cases {
            let err = refused(text);
            assert!(err.starts_with(want), "want {want:?}, got\n{err}");
        }
    }

    #[test]
    fn issue_36_an_empty_plan_gets_the_smallest_working_plan() {
        for text in ["", "\n\n", "# nothing yet\n"] {
            let err = refused(text);
            assert!(
                err.starts_with("t.toml: the plan is empty")
                    && err.contains(SMALLEST_PLAN.trim_end()),
                "{err}"
            );
            assert!(!err.contains("missing field"), "{err}");
        }
        // The plan offered runs: it parses and expands to trials.
        let e = Plan::parse(SMALLEST_PLAN, "smallest.toml")
            .and_then(|p| {
                p.expand(
                    SMALLEST_PLAN,
                    "smallest.toml",
                    &super::super::tests::all_installed(),
                )
            })
            .unwrap_or_else(|e| panic!("{e}"));
        assert!(!e.trials.is_empty());
    }

    #[test]
    fn issue_36_a_10_mb_plan_of_one_line_echoes_a_window_not_the_line() {
        let text = format!("name = \"t\" {}", "garbage ".repeat(10 << 17));
        let err = refused(&text);
        assert!(err.len() < 500, "{} bytes of error", err.len());
        assert!(err.starts_with("t.toml, line 1, column "), "{err}");
        assert!(err.contains('…') && err.contains('^'), "{err}");
    }

    #[test]
    fn excerpts_cut_long_lines_around_the_column_and_keep_short_ones() {
        let short = excerpt("a = 1\nb = \"x\"\n", 10..13);
        assert_eq!(short, "  |\n2 | b = \"x\"\n  |     ^^^");
        let long = format!("{}X{}", "a".repeat(100), "b".repeat(100));
        let cut = excerpt(&long, 100..101);
        let lines: Vec<&str> = cut.lines().collect();
        assert_eq!(
            lines[1],
            format!("1 | …{}X{}…", "a".repeat(40), "b".repeat(39))
        );
        let column = |l: &str, c: char| l.chars().position(|x| x == c);
        assert_eq!(column(lines[2], '^'), column(lines[1], 'X'));
    }
}
