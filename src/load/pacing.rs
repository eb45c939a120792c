//! When the loop sends and when it sleeps: the due time of each request
//! under `--rate` or a replay, the slack grid an open loop wakes on, and
//! how many responses a closed loop on io_uring waits for ([`batch_plan`]).
//!
//! Pacing is data, not a second loop (see `worker/`): these are pure
//! functions of the thread's plan and the clock, read by the one loop.
//! Pacing never does I/O, holds connections, or counts.

use super::thread::ThreadPlan;
use super::Pacing;
use std::time::{Duration, Instant};

/// "Never" for a schedule that has ended: past any deadline.
const FAR: Duration = Duration::from_secs(365 * 86_400);

/// When a thread's requests fall due: its plan read against the run's
/// start and its end.
pub(super) struct Clock<'a> {
    pub(super) plan: &'a ThreadPlan,
    pub(super) t0: Instant,
    pub(super) deadline: Instant,
}

impl Clock<'_> {
    /// When this thread's k-th request falls due.
    pub(super) fn due_at(&self, k: u64) -> Instant {
        match self.plan.pacing {
            Pacing::Rate(rate) => {
                self.t0 + self.plan.phase + Duration::from_secs_f64(k as f64 / rate)
            }
            Pacing::Schedule => {
                // This thread's k-th request is the schedule's
                // (k * threads + thread)-th; past the end of a schedule
                // that does not repeat, nothing is ever due.
                let (lane, lanes) = self.plan.lane;
                self.schedule()
                    .due_offset(k * lanes + lane)
                    .and_then(|d| self.t0.checked_add(d))
                    .unwrap_or(self.deadline.max(self.t0) + FAR)
            }
            Pacing::Closed => self.t0,
        }
    }

    /// The replayed schedule (only called under `Pacing::Schedule`).
    fn schedule(&self) -> &super::schedule::Schedule {
        self.plan
            .config
            .schedule
            .as_deref()
            .expect("Pacing::Schedule comes with a schedule")
    }

    /// Which schedule entry this thread's k-th request sends (0 when not replaying).
    pub(super) fn request_of(&self, k: u64) -> u32 {
        match self.plan.pacing {
            Pacing::Schedule => {
                let (lane, lanes) = self.plan.lane;
                self.schedule().index(k * lanes + lane)
            }
            _ => 0,
        }
    }

    /// Open loop, after `Worker::dispatch_due`: when the loop must wake
    /// to send the next request, or `None` when a wake-up could not send it.
    ///
    /// A request already due is still waiting only because every connection
    /// is busy. Waking for its (past) due time would be a timeout of zero,
    /// and the loop would spin at a full core, taken from the server that is
    /// being measured exactly when it is overloaded (measured: 69% of a core
    /// at `--rate 2000 -c 100` against a server answering in 1 s). Only a
    /// connection freeing can send it, and that is a socket event, which
    /// ends the wait by itself; the request's latency still counts from its
    /// due time.
    ///
    /// With a slack, it wakes on a grid one slack apart ([`slack_line`]),
    /// at the first line at or after the due time, and every request due
    /// by then goes out on that one wake-up: each is between zero and one
    /// slack late, half of one on average whatever the rate. (Waking a
    /// whole slack after the first due time would make the first of every
    /// batch the latest.) Near the end of the run, a request whose wake-up
    /// would fall past it goes at its due time: the loop ends at the
    /// deadline, and it would never be sent.
    pub(super) fn next_send_at(&self, next_due: u64, now: Instant) -> Option<Instant> {
        let due = self.due_at(next_due);
        if due <= now {
            return None;
        }
        let slack = self.plan.config.slack;
        if slack.is_zero() {
            return Some(due);
        }
        let since = due.saturating_duration_since(self.t0);
        let at = self.t0 + slack_line(since, slack, self.plan.lane);
        Some(if at < self.deadline { at } else { due })
    }
}

/// A closed loop on io_uring that would sleep waits for the responses due
/// within this share of the recent latency...
const HOLD_SHARE: f64 = 0.25;
/// ...but no longer than this...
const HOLD_MAX_US: f64 = 100.0;
/// ...and for no more than this many.
const BATCH_MAX: usize = 64;

/// How many responses a sleeping closed loop waits for before it wakes.
///
/// The loop waits for about as many responses as should come in within a
/// share of the latency: in a closed loop they come at about `inflight`
/// per latency (Little's law). With few in flight, or slow responses, that
/// is one: no batching. If they stop coming, the guard timer ends the wait
/// (`uring::GUARD`).
///
/// Batching is for a saturated server: it has the other requests in flight
/// to work on, and is spared waking the loop once per response, which it
/// pays for (against nginx here, a quarter of the latency as the share
/// gave both more requests per second and fewer generator CPU-seconds per
/// request than a tenth or a twentieth). The price is paid by a server
/// that is not saturated: a held response delays the next request on its
/// connection by about half the hold on average, so such a server sees up
/// to an eighth fewer requests in flight at latencies under 0.4 ms, and
/// less above (the hold is capped at 100 us). The latency figures are
/// unaffected either way: a response ends when it reached the socket (see
/// `recv_stamped`), not when it was read.
pub(super) fn batch_plan(inflight: usize, recent_latency_us: f64) -> usize {
    if recent_latency_us <= 0.0 {
        return 1;
    }
    let hold_us = (recent_latency_us * HOLD_SHARE).min(HOLD_MAX_US);
    let due = inflight as f64 * hold_us / recent_latency_us;
    (due as usize).clamp(1, BATCH_MAX)
}

/// The first line of a lane's slack grid at or after `due` (both from the
/// run's start). Lane l of n draws its grid l/n of a slack after the
/// start, so the threads (and segments) of one run take turns instead of
/// all sending their batches at the same instant: the server sees n
/// smaller bursts per slack rather than one n times the size.
pub(super) fn slack_line(due: Duration, slack: Duration, (lane, lanes): (u64, u64)) -> Duration {
    let slack = slack.as_nanos();
    let origin = slack * u128::from(lane) / u128::from(lanes.max(1));
    let since = due.as_nanos().saturating_sub(origin);
    Duration::from_nanos((origin + since.div_ceil(slack) * slack) as u64)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_lane_sends_on_its_own_slack_grid_within_one_slack_of_the_due_time() {
        let ms = Duration::from_millis;
        let us = Duration::from_micros;
        let slack = ms(2);
        // One lane: the grid is 0, 2, 4 ms; a due time on a line stays.
        assert_eq!(slack_line(ms(0), slack, (0, 1)), ms(0));
        assert_eq!(slack_line(us(1), slack, (0, 1)), ms(2));
        assert_eq!(slack_line(ms(2), slack, (0, 1)), ms(2));
        assert_eq!(slack_line(us(2001), slack, (0, 1)), ms(4));
        // Two lanes: the second's grid is 1, 3, 5 ms; its due times before
        // its first line wait for it.
        assert_eq!(slack_line(ms(0), slack, (1, 2)), ms(1));
        assert_eq!(slack_line(us(1500), slack, (1, 2)), ms(3));
        assert_eq!(slack_line(ms(3), slack, (1, 2)), ms(3));
        // Four lanes over a spread of due times: never early, never a
        // slack late, and on the lane's own grid.
        for lane in 0..4 {
            for due in (0..20_000).step_by(37).map(us) {
                let at = slack_line(due, slack, (lane, 4));
                assert!(
                    at >= due && at - due < slack,
                    "lane {lane}: {due:?} -> {at:?}"
                );
                let offset = us(500) * lane as u32;
                assert_eq!(
                    (at - offset).as_nanos() % slack.as_nanos(),
                    0,
                    "lane {lane}: {at:?}"
                );
            }
        }
    }

    #[test]
    fn a_batch_is_what_should_arrive_within_a_share_of_the_latency() {
        // Few in flight: every response wakes the loop.
        assert_eq!(batch_plan(4, 1000.0), 1);
        assert_eq!(batch_plan(9, 1000.0), 1);
        // No latency seen yet: no batching.
        assert_eq!(batch_plan(50, 0.0), 1);
        // 50 in flight at 300 us (nginx here): 12.5 are due within 75 us.
        assert_eq!(batch_plan(50, 300.0), 12);
        // At 1 ms the hold is capped at 100 us: 5 are due.
        assert_eq!(batch_plan(50, 1000.0), 5);
        // Slow responses: one is due; no batching.
        assert_eq!(batch_plan(1000, 100_000.0), 1);
        assert_eq!(batch_plan(5000, 10_000.0), 50);
        // Many due: the batch is capped.
        assert_eq!(batch_plan(10_000, 1000.0), 64);
    }
}
