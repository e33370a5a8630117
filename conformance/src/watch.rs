//! An adapter's failures contained to its case ([`Watched`]): a call that panics is the
//! case's `crash`, with the panic's message, and a call that does not return within the
//! case's time limit is its `timeout`, so no case ends or stalls a whole run.
//!
//! Invariant: every wait of the harness on an adapter has a limit. An adapter process
//! keeps time itself ([`Adapter::keeps_time`]: it is killed at the limit) and is called
//! on the job's own thread; any other adapter (the reference, a typed implementation, an
//! implementer's own `Adapter`) is called on a thread of its own, waited for at most the
//! limit. A call that never returns keeps its thread (and its adapter) until the process
//! exits; the harness goes on with a fresh adapter from its factory.

use std::any::Any;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::mpsc;
use std::thread;
use std::time::Duration;

use crate::adapter::{Adapter, Failure};
use crate::protocol::{Hello, Request, Response};

/// An adapter whose calls cannot panic out of the harness or keep it waiting past their
/// limit. Once a call has panicked or not returned, the adapter is gone
/// ([`Watched::is_lost`]) and every later call is a crash that says why: make a fresh one.
pub struct Watched {
    adapter: Option<Box<dyn Adapter>>,
    /// Why there is no adapter (any more).
    lost: String,
    /// The limit of `hello`.
    hello_timeout: Duration,
}

impl Watched {
    /// Watches `adapter`; its `hello` may take at most `hello_timeout`.
    pub fn new(adapter: Box<dyn Adapter>, hello_timeout: Duration) -> Watched {
        Watched {
            adapter: Some(adapter),
            lost: String::new(),
            hello_timeout,
        }
    }

    /// An adapter made by `make`, watched; a `make` that panics gives a watched adapter
    /// that is lost already, each call a crash with the panic's message.
    pub fn make(make: &(dyn Fn() -> Box<dyn Adapter> + Sync), hello_timeout: Duration) -> Watched {
        match catch_unwind(AssertUnwindSafe(make)) {
            Ok(adapter) => Watched::new(adapter, hello_timeout),
            Err(payload) => Watched {
                adapter: None,
                lost: format!(
                    "making the adapter panicked: {}",
                    panic_message(payload.as_ref())
                ),
                hello_timeout,
            },
        }
    }

    /// Whether the adapter is gone: a call panicked or did not return in time.
    pub fn is_lost(&self) -> bool {
        self.adapter.is_none()
    }

    /// Runs `f` on the adapter, within `limit` unless the adapter keeps time itself.
    fn run<R: Send + 'static>(
        &mut self,
        limit: Duration,
        f: impl FnOnce(&mut dyn Adapter) -> Result<R, Failure> + Send + 'static,
    ) -> Result<R, Failure> {
        let Some(adapter) = self.adapter.take() else {
            return Err(Failure::Crash(self.lost.clone()));
        };
        let outcome = if adapter.keeps_time() {
            Some(attempt(adapter, f))
        } else {
            on_own_thread(adapter, f, limit)
        };
        match outcome {
            Some((Some(adapter), result)) => {
                self.adapter = Some(adapter);
                result
            }
            Some((None, result)) => {
                self.lost = match &result {
                    Err(Failure::Crash(why)) => format!("an earlier call {why}"),
                    _ => "an earlier call panicked".into(),
                };
                result
            }
            None => {
                self.lost = format!(
                    "an earlier call did not return within {} ms; the adapter is still in it",
                    limit.as_millis()
                );
                Err(Failure::Timeout)
            }
        }
    }
}

/// How a call ended: the adapter, unless it was dropped after a panic, and the result.
type Attempt<R> = (Option<Box<dyn Adapter>>, Result<R, Failure>);

/// Runs `f` on `adapter`, catching a panic: the adapter back with `f`'s result, or,
/// after a panic, no adapter (it is dropped, a panic of its drop caught too) and a crash
/// with the panic's message.
fn attempt<R>(
    mut adapter: Box<dyn Adapter>,
    f: impl FnOnce(&mut dyn Adapter) -> Result<R, Failure>,
) -> Attempt<R> {
    match catch_unwind(AssertUnwindSafe(|| f(adapter.as_mut()))) {
        Ok(result) => (Some(adapter), result),
        Err(payload) => {
            let why = format!("panicked: {}", panic_message(payload.as_ref()));
            let _ = catch_unwind(AssertUnwindSafe(move || drop(adapter)));
            (None, Err(Failure::Crash(why)))
        }
    }
}

/// [`attempt`] on a thread of its own, waited for at most `limit`; `None` when it did not
/// end in time (the thread keeps the adapter).
fn on_own_thread<R: Send + 'static>(
    adapter: Box<dyn Adapter>,
    f: impl FnOnce(&mut dyn Adapter) -> Result<R, Failure> + Send + 'static,
    limit: Duration,
) -> Option<Attempt<R>> {
    let (done, outcome) = mpsc::sync_channel(1);
    let spawned = thread::Builder::new()
        .name("session-conformance call".into())
        .spawn(move || {
            let _ = done.send(attempt(adapter, f));
        });
    if let Err(e) = spawned {
        // The adapter went with the closure that could not run.
        return Some((
            None,
            Err(Failure::Crash(format!("no thread for the call: {e}"))),
        ));
    }
    match outcome.recv_timeout(limit) {
        Ok(outcome) => Some(outcome),
        Err(mpsc::RecvTimeoutError::Timeout) => None,
        // The thread ended without an answer: only a panic out of `send` could do that.
        Err(mpsc::RecvTimeoutError::Disconnected) => Some((
            None,
            Err(Failure::Crash(
                "the call's thread ended without an answer".into(),
            )),
        )),
    }
}

/// A panic's message: its payload when that is text (as `panic!`, `todo!` and
/// `unwrap` give), else a placeholder.
pub fn panic_message(payload: &(dyn Any + Send)) -> String {
    payload
        .downcast_ref::<&str>()
        .map(|s| (*s).to_owned())
        .or_else(|| payload.downcast_ref::<String>().cloned())
        .unwrap_or_else(|| "(a payload that is not text)".into())
}

impl Adapter for Watched {
    fn hello(&mut self) -> Result<Hello, Failure> {
        self.run(self.hello_timeout, |adapter| adapter.hello())
    }

    fn call(&mut self, request: &Request, timeout: Duration) -> Result<Response, Failure> {
        let request = request.clone();
        self.run(timeout, move |adapter| adapter.call(&request, timeout))
    }

    fn start_allowance(&self) -> Duration {
        self.adapter
            .as_ref()
            .map_or(Duration::ZERO, |adapter| adapter.start_allowance())
    }

    /// Every call ends within its limit, or is left behind when it does not.
    fn keeps_time(&self) -> bool {
        true
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::protocol::Args;
    use std::time::Instant;

    /// An adapter that answers, panics or never returns, as told.
    struct Acting(&'static str);

    impl Adapter for Acting {
        fn hello(&mut self) -> Result<Hello, Failure> {
            self.call(&request(), Duration::ZERO).map(|_| Hello {
                kind: "hello".into(),
                implementation: "acting".into(),
                version: "0".into(),
                profile: "pi".into(),
                operations: vec![],
                capabilities: vec![],
            })
        }
        fn call(&mut self, request: &Request, _timeout: Duration) -> Result<Response, Failure> {
            match self.0 {
                "panic" => panic!("not yet implemented: load"),
                "hang" => loop {
                    thread::sleep(Duration::from_hours(1));
                },
                _ => Ok(Response::unsupported(&request.case)),
            }
        }
    }

    fn request() -> Request {
        Request {
            kind: "request".into(),
            case: "0001".into(),
            op: crate::protocol::Operation::Load,
            profile: "pi".into(),
            dir: "/x".into(),
            args: Args::from(serde_json::json!({})),
            faults: vec![],
        }
    }

    /// A panic is a crash with its message and a hang is a timeout at the limit; either
    /// way the adapter is lost, and later calls say why instead of waiting on it.
    #[test]
    fn a_panic_is_a_crash_and_a_hang_a_timeout() {
        let limit = Duration::from_millis(300);
        let cases = [
            ("answer", Ok(()), false, ""),
            (
                "panic",
                Err(Failure::Crash("panicked: not yet implemented: load".into())),
                true,
                "an earlier call panicked: not yet implemented: load",
            ),
            (
                "hang",
                Err(Failure::Timeout),
                true,
                "an earlier call did not return within 300 ms",
            ),
        ];
        for (act, expected, lost, later) in cases {
            let mut watched = Watched::new(Box::new(Acting(act)), limit);
            let started = Instant::now();
            let got = watched.call(&request(), limit).map(|_| ());
            assert_eq!(got, expected, "{act}");
            assert!(
                started.elapsed() < limit * 10,
                "{act}: {:?}",
                started.elapsed()
            );
            assert_eq!(watched.is_lost(), lost, "{act}");
            if lost {
                let again = watched.call(&request(), limit);
                assert!(
                    matches!(&again, Err(Failure::Crash(why)) if why.starts_with(later)),
                    "{act}: {again:?}"
                );
            }
            let hello = Watched::new(Box::new(Acting(act)), limit).hello();
            assert_eq!(hello.is_ok(), !lost, "{act}: {hello:?}");
        }
    }

    #[test]
    fn a_factory_that_panics_gives_a_lost_adapter() {
        let make = || -> Box<dyn Adapter> { panic!("no port yet") };
        let mut watched = Watched::make(&make, Duration::from_secs(1));
        assert!(watched.is_lost());
        let got = watched.call(&request(), Duration::from_secs(1));
        assert_eq!(
            got,
            Err(Failure::Crash(
                "making the adapter panicked: no port yet".into()
            ))
        );
    }
}
