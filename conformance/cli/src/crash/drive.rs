//! One trial's `apply`, driven live: the request sent, the adapter's acks (through the
//! [`Ledger`]), journal lines and other lines read as they come, the kill at the kill
//! point, and what was left in the pipe; then what was wrong with the adapter itself.

use std::path::Path;
use std::time::{Duration, Instant};

use serde_json::Value;
use session_conformance::answers;

use super::acks::{self, AckError, Ledger};
use super::check::{Finding, FindingKind};
use super::plan::{Anchor, KillPoint, StepKind};
use super::power;
use super::process::{Ack, Event, Process};

/// The lines of a calibration run: when each anchor's next line came.
#[derive(Debug, Clone, Default)]
pub(super) struct Timeline {
    /// (anchor, time since the request) of each acknowledgement, in order; the response last.
    events: Vec<(Anchor, Duration)>,
    /// When the response came.
    end: Duration,
}

impl Timeline {
    /// The time from `anchor` to the line after it.
    pub(super) fn gap(&self, anchor: Anchor) -> Duration {
        let at = |a: Anchor| {
            if a == Anchor::Request {
                Some((0, Duration::ZERO))
            } else {
                self.events
                    .iter()
                    .position(|(x, _)| *x == a)
                    .map(|i| (i + 1, self.events[i].1))
            }
        };
        let Some((next, start)) = at(anchor) else {
            return Duration::from_millis(1);
        };
        let next_time = self.events.get(next).map_or(self.end, |(_, t)| *t);
        next_time.saturating_sub(start)
    }
}

/// The most a trial's journal may hold, in bytes written plus a little per call (omp
/// 13.19.0 writes about 50 MB in a default trial); the rest is refused, and the trial
/// fails.
const MAX_JOURNAL_BYTES: usize = 1 << 30;

/// What was wrong with the adapter itself in a trial: a failed or missing answer, lines
/// that are not acks (the first one).
pub(super) fn adapter_findings(outcome: &Outcome, stderr: &str, timeout: Duration) -> Vec<Finding> {
    let adapter = |reason: String| Finding {
        file: String::new(),
        line: None,
        kind: FindingKind::Adapter { reason },
    };
    let mut findings = Vec::new();
    match &outcome.end {
        End::Killed | End::Answered(Ok(_)) => {}
        End::Answered(Err(e)) => findings.push(adapter(format!("the apply failed: {e}"))),
        End::Refused(e) => findings.push(adapter(format!(
            "{e} (PROTOCOL.md \"Ack mode\"); the trial was stopped there"
        ))),
        End::Exited(None) => findings.push(adapter(format!(
            "it closed its stdout before its answer{stderr}"
        ))),
        End::Exited(Some(status)) => findings.push(adapter(format!(
            "it exited with {status} before its answer{stderr}"
        ))),
        End::TimedOut => findings.push(adapter(format!(
            "no answer within {} s{stderr}",
            timeout.as_secs()
        ))),
    }
    if let Some(junk) = outcome.junk.first() {
        findings.push(adapter(format!(
            "a line that is not an ack or the response: {junk}"
        )));
    }
    findings
}

/// How a trial's `apply` ended.
pub(super) enum End {
    /// Killed at its kill point.
    Killed,
    /// It answered (before any kill).
    Answered(Result<Value, String>),
    /// It exited on its own (with this status, in words, when known).
    Exited(Option<String>),
    /// It sent an ack the protocol does not allow, and was killed at once.
    Refused(AckError),
    /// It did not answer in time.
    TimedOut,
}

/// What the adapter said in a trial.
pub(super) struct Outcome {
    /// The acks accepted ([`Ledger`]): at most the open's and one per planned step.
    pub(super) acks: Vec<Ack>,
    /// The journal's calls (`PROTOCOL.md` "Journal"), each with the number of acks
    /// written before it.
    pub(super) journal: Vec<(power::FsOp, usize)>,
    junk: Vec<String>,
    pub(super) timeline: Timeline,
    pub(super) end: End,
}

/// A trial's `apply`: the request and what its acks are checked against.
pub(super) struct Request<'a> {
    /// The request's case name (acks name it).
    pub(super) case: &'a str,
    /// The request.
    pub(super) value: &'a Value,
    /// What each planned step is.
    pub(super) kinds: &'a [StepKind],
    /// The trial directory (journal paths are read inside it).
    pub(super) dir: &'a Path,
}

/// What is read of a trial's adapter while it runs.
struct Reading<'a> {
    request: &'a Request<'a>,
    t0: Instant,
    kill: Option<(KillPoint, Duration)>,
    /// When to kill (set once the kill point's anchor has come).
    kill_at: Option<Instant>,
    acks: Ledger,
    /// Lines read since the request (an ack error names its line).
    lines: usize,
    journal: Vec<(power::FsOp, usize)>,
    journal_bytes: usize,
    junk: Vec<String>,
    timeline: Timeline,
    end: End,
}

impl Reading<'_> {
    /// Records one event; `true` when the `apply` has ended.
    fn record(&mut self, event: Event) -> bool {
        if !matches!(event, Event::Eof | Event::Exited(_) | Event::Timeout) {
            self.lines += 1;
        }
        match event {
            Event::Ack(ack) => self.ack(ack),
            Event::BadAck(why) => {
                self.end = End::Refused(AckError {
                    line: self.lines,
                    kind: acks::AckErrorKind::Malformed(why),
                });
                true
            }
            Event::Response(r) => {
                self.timeline.end = self.t0.elapsed();
                self.end = End::Answered(r);
                true
            }
            Event::Fs(line) => {
                self.fs(&line);
                false
            }
            Event::Junk(j) => {
                self.junk(j);
                false
            }
            Event::Eof => {
                self.end = End::Exited(None);
                true
            }
            Event::Exited(status) => {
                self.end = End::Exited(Some(answers::describe_exit(status)));
                true
            }
            Event::Timeout => false,
        }
    }

    /// An ack: accepted (and the kill timed from it when it is the kill point's
    /// anchor), or the end of the `apply`.
    fn ack(&mut self, ack: Ack) -> bool {
        let anchor = ack.step.map_or(Anchor::Open, Anchor::Step);
        if let Err(e) = self.acks.accept(ack, self.lines) {
            self.end = End::Refused(e);
            return true;
        }
        self.timeline.events.push((anchor, self.t0.elapsed()));
        if let Some((k, delay)) = self.kill {
            if k.after == anchor && self.kill_at.is_none() {
                self.kill_at = Some(Instant::now() + delay);
            }
        }
        false
    }

    /// A journal line, kept up to [`MAX_JOURNAL_BYTES`].
    fn fs(&mut self, line: &Value) {
        match power::FsOp::read(line, self.request.dir) {
            Ok(_) if self.journal_bytes >= MAX_JOURNAL_BYTES => self.junk(format!(
                "a journal of more than {} MiB",
                MAX_JOURNAL_BYTES >> 20
            )),
            Ok(op) => {
                self.journal_bytes += op.size();
                self.journal.push((op, self.acks.acks().len()));
            }
            Err(why) => self.junk(format!("a journal line: {why}")),
        }
    }

    /// A line that is neither an ack nor the response: the first five are kept.
    fn junk(&mut self, line: String) {
        if self.junk.len() < 5 {
            self.junk.push(line);
        }
    }

    fn into_outcome(self) -> Outcome {
        Outcome {
            acks: self.acks.into_acks(),
            journal: self.journal,
            junk: self.junk,
            timeline: self.timeline,
            end: self.end,
        }
    }
}

/// Sends `request`, reads acknowledgements, and kills at `kill`; then reads every line
/// the adapter wrote before it died. An ack the protocol does not allow ends the
/// `apply` at once (the adapter is killed).
pub(super) fn drive(
    process: &mut Process,
    request: &Request<'_>,
    kill: Option<(KillPoint, Duration)>,
    timeout: Duration,
) -> Outcome {
    process.send(serde_json::to_vec(request.value).unwrap_or_default());
    let t0 = Instant::now();
    let deadline = t0 + timeout;
    let mut reading = Reading {
        request,
        t0,
        kill,
        kill_at: match kill {
            Some((k, delay)) if k.after == Anchor::Request => Some(t0 + delay),
            _ => None,
        },
        acks: Ledger::new(request.kinds),
        lines: 0,
        journal: Vec::new(),
        journal_bytes: 0,
        junk: Vec::new(),
        timeline: Timeline::default(),
        end: End::TimedOut,
    };
    loop {
        let now = Instant::now();
        if reading.kill_at.is_some_and(|at| now >= at) {
            process.kill();
            reading.end = End::Killed;
            break;
        }
        if now >= deadline {
            break;
        }
        let until = reading.kill_at.map_or(deadline, |at| at.min(deadline));
        let event = process.next(request.case, until);
        if reading.record(event) {
            break;
        }
    }
    process.kill();
    // Lines written before the kill are still in the pipe: they were acknowledged.
    if matches!(reading.end, End::Killed) {
        drain(process, &mut reading);
    }
    reading.into_outcome()
}

/// Reads what a killed adapter left in the pipe, for at most 5 s (the kill point is
/// not moved by the acks read here).
fn drain(process: &mut Process, reading: &mut Reading<'_>) {
    reading.kill = None;
    let until = Instant::now() + Duration::from_secs(5);
    loop {
        let event = process.next(reading.request.case, until);
        if matches!(event, Event::Eof | Event::Exited(_) | Event::Timeout) {
            break;
        }
        if reading.record(event) {
            break;
        }
    }
}
