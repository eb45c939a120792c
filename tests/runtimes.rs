//! Runtimes, through the binary: a Debian 13 root built (once per machine,
//! reused) and a server run from it, a user's own Ruby given as a plain
//! path, the switches (YJIT, jemalloc) and their refusals, and what the
//! trial record says the server ran with, read from inside the server
//! process. Each kind of runtime is checked against what its Ruby really
//! is: Debian 13's Ruby is 3.3 without YJIT, the host's (Debian 12) is 3.1
//! with it. Plans and sweeps over runtimes and switches too: a YJIT
//! sweep, a plan over two runtimes, a plan refused at its line.
//!
//! Roots live in the default runtimes directory, so a machine builds each
//! once (about 10 s); a test that cannot build one fails under
//! `RACKBENCH_REQUIRE=all` instead of skipping.

mod common;

use common::{have, rackbench_cmd, scratch};
use serde_json::Value;
use std::path::Path;
use std::process::Output;

fn run(args: &[&str], env: &[(&str, &str)]) -> Output {
    let mut c = rackbench_cmd();
    c.args(args);
    for (k, v) in env {
        c.env(k, v);
    }
    c.output().expect("run rackbench")
}

fn text(o: &Output) -> String {
    format!(
        "{}{}",
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    )
}

/// A short trial of `server` with `extra` flags; its record.
fn trial(server: &str, extra: &[&str], env: &[(&str, &str)]) -> Value {
    let dir = scratch(&format!(
        "runtimes-{server}-{}",
        extra.join("-").replace('/', "_")
    ));
    let mut args = vec![
        "trial",
        "--server",
        server,
        "--app",
        "hello",
        "--connections",
        "4",
        "--warmup",
        "0.3s",
        "--duration",
        "1s",
        "--json",
        "--work-dir",
        dir.to_str().unwrap(),
    ];
    args.extend_from_slice(extra);
    let out = run(&args, env);
    assert!(
        out.status.success(),
        "trial {args:?} failed:\n{}",
        text(&out)
    );
    serde_json::from_slice(&out.stdout).expect("a trial-v1 document")
}

fn errors(rec: &Value) -> u64 {
    common::error_count(&rec["load"]["errors"])
}

/// mmdebstrap is there and the root of `release` is built (or builds now).
fn have_root(release: &str) -> bool {
    if !have("mmdebstrap", "apt-get install mmdebstrap") {
        return false;
    }
    let out = run(&["runtime", "add", release], &[]);
    rackbench::require::require(
        &format!("the {release} runtime"),
        out.status.success(),
        &format!("`rackbench runtime add {release}` failed: {}", text(&out)),
    )
}

fn have_debian_13() -> bool {
    have_root("debian-13")
}

#[test]
fn a_server_from_the_debian_13_root_reports_ruby_3_3_and_its_own_puma_from_inside() {
    if !(have_debian_13() && have("puma", "apt-get install puma")) {
        return;
    }
    let rec = trial("puma", &["--runtime", "debian-13"], &[]);
    let rt = &rec["runtime"];
    assert_eq!(rt["name"], "debian-13");
    assert_eq!(rt["kind"], "debian");
    assert!(
        rt["ruby_version"].as_str().unwrap().starts_with("3.3."),
        "{rt}"
    );
    assert_eq!(rt["engine"], "ruby");
    assert_eq!(rt["yjit"], false);
    assert_eq!(rt["allocator"], "glibc");
    // Debian 13's Puma is 6.x, the host's (Debian 12) 5.6: the record's
    // is the root's, read from the server's own constant.
    assert!(
        rt["server_version"]
            .as_str()
            .unwrap()
            .starts_with("puma 6."),
        "{rt}"
    );
    assert_eq!(rt["server_version_from"], "process");
    assert_eq!(rec["server"]["version"], rt["server_version"]);
    assert_eq!(errors(&rec), 0);
    // The server ran under the host's view of processes: its PID is one
    // the sampler saw in the host's /proc.
    assert!(rt["read_from_pid"].as_u64().unwrap() > 1);
}

#[test]
fn jemalloc_from_the_roots_own_library_is_mapped_by_the_server_and_yjit_is_refused_there() {
    if !(have_debian_13() && have("unicorn", "apt-get install unicorn")) {
        return;
    }
    let rec = trial(
        "unicorn",
        &["--runtime", "debian-13", "--allocator", "jemalloc"],
        &[],
    );
    assert_eq!(
        rec["runtime"]["allocator"], "jemalloc",
        "{}",
        rec["runtime"]
    );
    assert_eq!(rec["runtime"]["asked"]["allocator"], "jemalloc");
    assert!(rec["runtime"]["server_version"]
        .as_str()
        .unwrap()
        .starts_with("unicorn"));

    let out = run(
        &[
            "trial",
            "--server",
            "puma",
            "--runtime",
            "debian-13",
            "--yjit",
        ],
        &[],
    );
    assert_eq!(out.status.code(), Some(2), "{}", text(&out));
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(err.trim().lines().count(), 1, "{err}");
    assert!(err.contains("has no YJIT"), "{err}");
}

#[test]
fn yjit_on_the_hosts_ruby_3_1_is_enabled_in_every_worker() {
    if !have("puma", "apt-get install puma") {
        return;
    }
    let rec = trial("puma", &["--yjit", "--workers", "2"], &[]);
    let rt = &rec["runtime"];
    assert_eq!(rt["name"], "system");
    assert_eq!(rt["yjit"], true, "{rt}");
    assert!(rt["ruby_version"].as_str().unwrap().starts_with("3.1."));
    assert!(rt.get("mismatches").is_none(), "{rt}");
    let off = trial("puma", &["--workers", "2"], &[]);
    assert_eq!(off["runtime"]["yjit"], false);
}

#[test]
fn a_users_own_ruby_given_as_a_plain_path_runs_its_servers_and_says_so() {
    if !have("unicorn", "apt-get install unicorn") {
        return;
    }
    // Its own runtimes directory, so the saved Ruby is this test's alone.
    let home = scratch("runtimes-user-ruby");
    let env = [("RACKBENCH_RUNTIMES", home.to_str().unwrap())];
    let ruby = std::fs::canonicalize("/usr/bin/ruby").unwrap();
    let add = run(
        &["runtime", "add", "mine", "--ruby", ruby.to_str().unwrap()],
        &env,
    );
    assert!(add.status.success(), "{}", text(&add));
    let rec = trial("unicorn", &["--runtime", "mine"], &env);
    let rt = &rec["runtime"];
    assert_eq!(rt["name"], "mine");
    assert_eq!(rt["kind"], "ruby");
    assert!(rt["ruby_description"]
        .as_str()
        .unwrap()
        .starts_with("ruby "));
    assert!(rt["server_version"]
        .as_str()
        .unwrap()
        .starts_with("unicorn "));
    assert_eq!(errors(&rec), 0);

    let list = run(&["runtime", "list", "--json"], &env);
    let rows: Value = serde_json::from_slice(&list.stdout).unwrap();
    let mine = rows
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r["name"] == "mine")
        .expect("the saved Ruby is listed");
    assert_eq!(mine["ready"], true);
    assert!(mine["servers"]
        .as_array()
        .unwrap()
        .iter()
        .any(|s| s.as_str().unwrap().contains("unicorn")));

    let gone = run(&["runtime", "remove", "mine"], &env);
    assert!(gone.status.success(), "{}", text(&gone));
    let after = run(&["trial", "--server", "unicorn", "--runtime", "mine"], &env);
    assert_eq!(after.status.code(), Some(2));
    assert!(
        text(&after).contains("unknown runtime 'mine'"),
        "{}",
        text(&after)
    );
}

#[test]
fn an_unknown_runtime_lists_the_known_ones_and_a_missing_server_names_its_package() {
    let out = run(
        &["trial", "--server", "puma", "--runtime", "debian-14"],
        &[],
    );
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("known runtimes: system, jruby, debian-12"),
        "{err}"
    );

    if !(have_debian_13() && have("passenger", "apt-get install passenger")) {
        return;
    }
    // The default root has no passenger.
    let out = run(
        &["trial", "--server", "passenger", "--runtime", "debian-13"],
        &[],
    );
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("--with passenger"), "{err}");
}

#[test]
fn a_root_that_cannot_be_built_fails_in_one_line_and_leaves_nothing_half_built() {
    if !have("mmdebstrap", "apt-get install mmdebstrap") {
        return;
    }
    let home = scratch("runtimes-no-mirror");
    // A leftover of a build that was interrupted: never used, removed.
    let leftover = home.join("debian-12.building-999999999");
    std::fs::create_dir_all(leftover.join("usr")).unwrap();
    let env = [
        ("RACKBENCH_RUNTIMES", home.to_str().unwrap()),
        ("RACKBENCH_DEBIAN_MIRROR", "http://127.0.0.1:9/debian"),
    ];
    let out = run(&["runtime", "add", "debian-12"], &env);
    assert_eq!(out.status.code(), Some(2), "{}", text(&out));
    let err = String::from_utf8_lossy(&out.stderr);
    let line = err.lines().find(|l| l.starts_with("error:")).unwrap();
    assert!(line.contains("not reachable"), "{err}");
    assert!(line.contains("RACKBENCH_DEBIAN_MIRROR"), "{err}");
    assert!(
        !leftover.exists(),
        "the interrupted build's leftover is removed"
    );
    assert!(!home.join("debian-12").exists(), "nothing counts as built");
    let building = std::fs::read_dir(&home)
        .unwrap()
        .flatten()
        .any(|e| e.file_name().to_string_lossy().contains(".building-"));
    assert!(!building, "no half-built root is left");
    assert!(!Path::new(&home.join("debian-12/.rackbench-runtime")).exists());
}

#[test]
fn a_bundler_app_runs_its_server_through_bundle_exec_with_the_gemfiles_gems() {
    if !(have("bundle", "apt-get install ruby-bundler") && have("puma", "apt-get install puma")) {
        return;
    }
    let home = common::work_dir("runtimes-bundler");
    let app = home.join("app");
    std::fs::create_dir_all(&app).unwrap();
    std::fs::write(
        app.join("Gemfile"),
        "source \"https://rubygems.org\"\ngem \"puma\"\ngem \"rack\"\n",
    )
    .unwrap();
    // Debian's gems are installed: Bundler resolves them with no network.
    let lock = std::process::Command::new("bundle")
        .args(["lock", "--local"])
        .current_dir(&app)
        .output()
        .unwrap();
    assert!(lock.status.success(), "{}", text(&lock));
    let env = [("RACKBENCH_RUNTIMES", home.to_str().unwrap())];
    let gemfile = app.join("Gemfile");
    let add = run(
        &[
            "runtime",
            "add",
            "bundled",
            "--ruby",
            "/usr/bin/ruby",
            "--gemfile",
            gemfile.to_str().unwrap(),
        ],
        &env,
    );
    assert!(add.status.success(), "{}", text(&add));
    let rec = trial("puma", &["--runtime", "bundled"], &env);
    assert!(rec["server"]["command"]
        .as_str()
        .unwrap()
        .starts_with("bundle exec puma "));
    let rt = &rec["runtime"];
    assert!(
        rt["bundler"].as_str().is_some_and(|v| !v.is_empty()),
        "{rt}"
    );
    assert_eq!(rt["gemfile"], gemfile.to_str().unwrap());
    assert_eq!(errors(&rec), 0);
}

/// Each release root's servers, each reporting its own version from
/// inside (Thin 2's version is a string where Thin 1's was a module): the
/// Puma upgrade path of seed 002's study, 5.6 to 6.6 to 8.0, is real.
#[test]
fn every_release_roots_servers_answer_and_report_their_own_versions() {
    let cases: &[(&str, &[(&str, &str)])] = &[
        ("debian-12", &[("puma", "puma 5.6"), ("thin", "thin 1.8")]),
        (
            "debian-13",
            &[
                ("puma", "puma 6.6"),
                ("unicorn", "unicorn 6.1"),
                ("thin", "thin 1.8"),
                ("webrick", "webrick 1."),
            ],
        ),
        (
            "debian-unstable",
            &[("puma", "puma 8."), ("thin", "thin 2.")],
        ),
    ];
    for (release, servers) in cases {
        if !have_root(release) {
            continue;
        }
        for (server, version) in *servers {
            let rec = trial(server, &["--runtime", release], &[]);
            let rt = &rec["runtime"];
            let got = rt["server_version"].as_str().unwrap_or("");
            assert!(got.starts_with(version), "{release} {server}: {rt}");
            assert_eq!(rt["server_version_from"], "process", "{release} {server}");
            assert_eq!(errors(&rec), 0, "{release} {server}");
        }
    }
}

/// Seed 004's "Puma (JVM)" row: Puma with its Java HTTP parser on JRuby,
/// a full trial with no error, the record saying JRuby from inside, and
/// the switches JRuby has no use for refused.
#[test]
fn puma_on_jruby_answers_a_full_trial_and_says_it_is_jruby() {
    if !(have("java", "apt-get install openjdk-17-jdk-headless")
        && have("mvn", "apt-get install maven")
        && have("dpkg-source", "apt-get install dpkg-dev"))
    {
        return;
    }
    let rec = trial(
        "puma",
        &[
            "--runtime",
            "jruby",
            "--threads",
            "8",
            "--start-timeout",
            "120s",
        ],
        &[],
    );
    let rt = &rec["runtime"];
    assert_eq!(rt["engine"], "jruby", "{rt}");
    assert_eq!(rt["kind"], "jruby");
    assert!(rt["ruby_description"]
        .as_str()
        .unwrap()
        .starts_with("jruby 9."));
    assert!(rt["server_version"].as_str().unwrap().starts_with("puma "));
    assert_eq!(errors(&rec), 0);
    assert!(rec["load"]["requests"]["ok"].as_u64().unwrap() > 100);

    for flag in [["--yjit", ""], ["--allocator", "jemalloc"]] {
        let mut args = vec!["trial", "--server", "puma", "--runtime", "jruby"];
        args.extend(flag.iter().filter(|a| !a.is_empty()));
        let out = run(&args, &[]);
        assert_eq!(out.status.code(), Some(2), "{}", text(&out));
        assert_eq!(
            String::from_utf8_lossy(&out.stderr).trim().lines().count(),
            1
        );
    }
}

/// Each trial record of the results directory `dir`, by file name.
fn records(dir: &Path) -> Vec<(String, Value)> {
    common::plan::json_docs(&dir.join("trials"))
        .into_iter()
        .map(|(path, doc)| {
            let name = path.file_name().unwrap().to_string_lossy().into_owned();
            (name, doc)
        })
        .collect()
}

#[test]
fn a_yjit_sweep_runs_each_level_with_yjit_as_its_record_says() {
    if !have("puma", "apt-get install puma") {
        return;
    }
    let dir = common::work_dir("runtimes-yjit-sweep");
    let out = dir.join("results");
    let args = [
        "sweep",
        "--server",
        "puma",
        "--vary",
        "yjit=false,true",
        "--repeats",
        "1",
        "--connections",
        "2",
        "--duration",
        "1s",
        "--warmup",
        "200ms",
        "--no-pin",
        "--json",
        "--out",
        out.to_str().unwrap(),
    ];
    let o = run(&args, &[]);
    assert!(o.status.success(), "{}", text(&o));
    let doc: Value = serde_json::from_slice(&o.stdout).expect("a sweep-v1 document");
    assert_eq!(doc["variable"], "yjit");
    assert_eq!(doc["ordered"], false, "YJIT off and on are alternatives");
    let recs = records(&out);
    let got: Vec<(&str, &Value, &Value)> = recs
        .iter()
        .map(|(name, r)| {
            (
                name.as_str(),
                &r["planned"]["switches"]["yjit"],
                &r["trial"]["runtime"]["yjit"],
            )
        })
        .collect();
    assert_eq!(
        got,
        [
            (
                "puma-no-yjit__hello__direct__c2__rep1.json",
                &Value::Bool(false),
                &Value::Bool(false)
            ),
            (
                "puma-yjit__hello__direct__c2__rep1.json",
                &Value::Bool(true),
                &Value::Bool(true)
            ),
        ],
        "each level's record says what the server ran with"
    );
}

#[test]
fn a_plan_over_two_runtimes_runs_ruby_3_1_and_3_3_side_by_side() {
    if !(have_debian_13() && have("puma", "apt-get install puma")) {
        return;
    }
    let plan = common::Plan::write(
        "runtimes-plan",
        "two.toml",
        "name = \"two\"\nruntimes = [\"system\", \"debian-13\"]\nservers = [\"puma\"]\napps = [\"hello\"]\n[load]\nconnections = [2]\nduration = \"1s\"\nwarmup = \"200ms\"\n",
    );
    let o = plan.run(&["--no-pin"]);
    assert!(o.status.success(), "{}", text(&o));
    let recs = records(&plan.out);
    let got: Vec<(&str, &str, String)> = recs
        .iter()
        .map(|(_, r)| {
            let version = r["trial"]["runtime"]["ruby_version"].as_str().unwrap();
            (
                r["planned"]["variant"].as_str().unwrap(),
                r["planned"]["runtime"].as_str().unwrap(),
                version.rsplit_once('.').unwrap().0.to_string(),
            )
        })
        .collect();
    assert_eq!(
        got,
        [
            ("puma@debian-13", "debian-13", "3.3".to_string()),
            ("puma@system", "system", "3.1".to_string()),
        ]
    );
    for (name, r) in &recs {
        assert_eq!(r["outcome"], "ok", "{name}");
        assert_eq!(errors(&r["trial"]), 0, "{name}");
    }
}

#[test]
fn a_plan_asking_yjit_of_debian_13_is_refused_at_its_line_before_any_trial() {
    if !have_debian_13() {
        return;
    }
    let plan = common::Plan::write(
        "runtimes-plan-refused",
        "bad.toml",
        "name = \"bad\"\nruntimes = [\"debian-13\"]\nyjit = [true]\nservers = [\"puma\"]\napps = [\"hello\"]\n[load]\nconnections = [2]\n",
    );
    let o = plan.run(&[]);
    assert_eq!(o.status.code(), Some(2), "{}", text(&o));
    let t = text(&o);
    assert!(
        t.contains("bad.toml, line 3: runtime 'debian-13'") && t.contains("has no YJIT"),
        "{t}"
    );
    assert!(!plan.out.join("trials").exists(), "no trial ran");
}

/// `run --runtime debian-13` on a plan naming a server the root lacks:
/// that server is skipped and named with the package that gives it, the
/// others run from the root (the default plan's passenger and uWSGI).
#[test]
fn a_server_a_runtime_lacks_is_skipped_in_a_plan_with_its_package_named() {
    if !(have_debian_13() && have("puma", "apt-get install puma")) {
        return;
    }
    let plan = common::Plan::write(
        "runtimes-plan-skip",
        "skip.toml",
        "name = \"skip\"\nservers = [\"puma\", \"passenger\"]\napps = [\"hello\"]\n[load]\nconnections = [2]\nduration = \"500ms\"\nwarmup = \"200ms\"\n",
    );
    let o = plan.run(&["--runtime", "debian-13", "--no-pin"]);
    assert!(o.status.success(), "{}", text(&o));
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(
        err.contains("skipped: runtime 'debian-13' has no passenger")
            && err.contains("--with passenger"),
        "{err}"
    );
    let recs = records(&plan.out);
    assert_eq!(recs.len(), 1, "only puma ran");
    assert_eq!(recs[0].1["planned"]["runtime"], "debian-13");
}

/// A sweep from flags takes the runtime flags as fixed for every value,
/// and refuses one that fixes what it varies.
#[test]
fn a_sweep_fixes_the_runtime_flags_for_every_value_and_refuses_one_it_varies() {
    let out = run(
        &[
            "sweep",
            "--server",
            "puma",
            "--vary",
            "workers=1,2",
            "--runtime",
            "debian-13",
            "--allocator",
            "jemalloc",
            "--dry-run",
        ],
        &[],
    );
    assert!(out.status.success(), "{}", text(&out));
    let ids = String::from_utf8_lossy(&out.stdout);
    assert!(ids.contains("puma-w1-debian-13-jemalloc__"), "{ids}");
    assert!(ids.contains("puma-w2-debian-13-jemalloc__"), "{ids}");

    let out = run(
        &[
            "sweep",
            "--server",
            "puma",
            "--vary",
            "yjit=false,true",
            "--yjit",
            "--dry-run",
        ],
        &[],
    );
    assert_eq!(out.status.code(), Some(2), "{}", text(&out));
    assert!(text(&out).contains("drop one of the two"), "{}", text(&out));
}
