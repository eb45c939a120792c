//! A started process waited on until it answers, then its answer to the
//! app's request checked (status and body): the one readiness-and-verify
//! path for the server's copies and for nginx alike. It waits for a real
//! answer, never a fixed sleep; it never starts or stops a process.

// A failed trial's error carries the log tail and the answer seen; it is
// built once per failure, so its size does not matter.
#![allow(clippy::result_large_err)]

use super::apps::AppSpec;
use super::spec::{TrialError, TrialSpec};
use crate::load::{self, Endpoint};
use crate::server::probe::Answer;
use crate::server::supervisor::{self, Probe, Running};
use std::time::Duration;

/// Waits until a started process answers at `endpoint`, then checks its
/// answer to the app's request: the one readiness-and-verify path for the
/// server's copies and for nginx alike.
pub(super) fn verify(
    process: &mut Running,
    endpoint: &Endpoint,
    host: &str,
    spec: &TrialSpec,
    start_timeout: Duration,
) -> Result<Answer, TrialError> {
    let ready = supervisor::wait_ready(
        process,
        &Probe {
            endpoint: endpoint.clone(),
            host: host.into(),
            path: spec.app.path.clone(),
            timeout: Duration::from_secs(5),
            max_body_bytes: spec.app.check_max_body_bytes,
        },
        start_timeout,
        &spec.interrupt,
    )?;
    let answer = app_answer(process, &spec.app, endpoint, host, ready)?;
    check_answer(process, &spec.app, &answer)?;
    Ok(answer)
}

/// The app's answer: the readiness probe's own when the app is asked
/// with a bare GET, else the answer to the trial's request (method,
/// headers, body), sent once.
fn app_answer(
    server: &Running,
    app: &AppSpec,
    endpoint: &Endpoint,
    host: &str,
    ready: crate::server::probe::Answer,
) -> Result<crate::server::probe::Answer, TrialError> {
    if app.is_plain_get() {
        return Ok(ready);
    }
    let url = load::Url::parse(&format!("http://{host}{}", app.path)).expect("a valid path");
    let spec = app.request_spec(false).map_err(TrialError::Request)?;
    let request = load::target::render_request(&url, &spec).map_err(TrialError::Request)?;
    let cap = app.check_max_body_bytes;
    crate::server::probe::send_capped(endpoint, &request, Duration::from_secs(5), cap).map_err(
        |e| TrialError::Verify {
            server: server.launch.name.clone(),
            method: app.method.clone(),
            path: app.path.clone(),
            source: e,
        },
    )
}

/// The answer against the app's status and text. The text is looked
/// for in the whole body read; a body cut at the cap without it is
/// refused as too big to check, in words, never as a wrong answer.
fn check_answer(server: &Running, app: &AppSpec, answer: &Answer) -> Result<(), TrialError> {
    let status = answer.status;
    if status == app.expect_status && answer.body_contains(&app.expect_body) {
        return Ok(());
    }
    if let (Some(cut), true) = (answer.cut, status == app.expect_status) {
        let mib = |b: u64| format!("{} MiB", crate::units::fmt_mib(b as f64));
        return Err(TrialError::AnswerTooBig {
            server: server.launch.name.clone(),
            path: app.path.clone(),
            status,
            size: cut
                .total_bytes
                .map_or_else(|| format!("more than {}", mib(cut.read_bytes)), mib),
            cap: mib(cut.read_bytes),
            expect_body: app.expect_body.clone(),
        });
    }
    Err(TrialError::WrongAnswer {
        server: server.launch.name.clone(),
        path: app.path.clone(),
        status,
        body: answer.body_snippet(200),
        expect_status: app.expect_status,
        expect_body: app.expect_body.clone(),
        log: server.launch.log.display().to_string(),
        tail: server.log_tail(10),
    })
}
