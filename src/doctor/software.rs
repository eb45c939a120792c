//! What a study runs: Ruby, the server adapters (as `rackbench servers`
//! finds them) and nginx.

use super::Finding;
use crate::server::spec::{installed_version, which, Registry};

/// How to get Ruby and Debian's servers.
const INSTALL: &str = "apt-get install ruby puma unicorn thin (or `make run`, whose \
     scripts/deps.sh installs Debian's servers)";

pub(super) fn findings(ruby_version: Option<&str>) -> Vec<Finding> {
    let servers: Vec<(String, bool, Option<String>)> = Registry::builtin()
        .servers
        .iter()
        .map(|s| {
            let (installed, version) = installed_version(s);
            (s.name.clone(), installed, version)
        })
        .collect();
    let nginx_version = which("nginx").map(|nginx| {
        let out = std::process::Command::new(nginx)
            .arg("-v")
            .stdin(std::process::Stdio::null())
            .output();
        // nginx -v writes "nginx version: nginx/1.22.1" to stderr.
        out.ok()
            .map(|o| String::from_utf8_lossy(&o.stderr).trim().to_string())
            .unwrap_or_default()
    });
    vec![
        ruby(ruby_version),
        servers_finding(&servers),
        nginx(nginx_version.as_deref()),
    ]
}

/// `ruby -v`'s first line, if Ruby runs.
pub(super) fn ruby(version: Option<&str>) -> Finding {
    match version {
        Some(v) => Finding::ok("ruby", v),
        None => Finding::problem(
            "ruby",
            "no `ruby` on PATH: no Rack server can start",
            INSTALL,
        ),
    }
}

/// (adapter, installed, version) of each built-in adapter.
pub(super) fn servers_finding(rows: &[(String, bool, Option<String>)]) -> Finding {
    let installed: Vec<String> = rows
        .iter()
        .filter(|r| r.1)
        .map(|(name, _, v)| match v {
            Some(v) if v.contains(name.as_str()) => v.clone(),
            Some(v) => format!("{name} {v}"),
            None => name.clone(),
        })
        .collect();
    let missing: Vec<&str> = rows.iter().filter(|r| !r.1).map(|r| r.0.as_str()).collect();
    let missing_text = if missing.is_empty() {
        String::new()
    } else {
        format!("; not installed: {}", missing.join(", "))
    };
    if installed.is_empty() {
        return Finding::problem(
            "servers",
            format!("no server adapter is installed{missing_text}"),
            INSTALL,
        );
    }
    Finding::ok("servers", format!("{}{missing_text}", installed.join(", ")))
}

/// `nginx -v`'s answer, or None when nginx is not on PATH.
pub(super) fn nginx(version: Option<&str>) -> Finding {
    match version {
        Some(v) => Finding::ok(
            "nginx",
            if v.is_empty() { "installed" } else { v }.to_string(),
        ),
        None => Finding::note(
            "nginx",
            "not installed: plans with `behind = [\"nginx\"]` (laas-2010, sportsengine-2012) \
             and `--behind nginx` cannot run",
            "apt-get install nginx-light",
        ),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::doctor::Status;

    #[test]
    fn no_ruby_is_a_problem_naming_the_install() {
        assert_eq!(ruby(Some("ruby 3.1.2p20")).status, Status::Ok);
        let none = ruby(None);
        assert_eq!(none.status, Status::Problem);
        assert!(none.fix.unwrap().contains("apt-get install ruby puma"));
    }

    #[test]
    fn servers_list_the_installed_with_versions_and_name_the_missing() {
        let row = |n: &str, i: bool, v: Option<&str>| (n.to_string(), i, v.map(str::to_string));
        let some = servers_finding(&[
            row("puma", true, Some("puma version 6.4.0")),
            row("unicorn", true, Some("6.1.0")),
            row("thin", false, None),
        ]);
        assert_eq!(some.status, Status::Ok);
        assert_eq!(
            some.found,
            "puma version 6.4.0, unicorn 6.1.0; not installed: thin"
        );
        let none = servers_finding(&[row("thin", false, None)]);
        assert_eq!(none.status, Status::Problem);
    }

    #[test]
    fn no_nginx_is_a_note_naming_the_package() {
        assert_eq!(
            nginx(Some("nginx version: nginx/1.22.1")).status,
            Status::Ok
        );
        let none = nginx(None);
        assert_eq!(none.status, Status::Note);
        assert_eq!(none.fix.as_deref(), Some("apt-get install nginx-light"));
    }
}
