//! A trial's acknowledgements, checked as they come (`PROTOCOL.md` "Ack mode"): the
//! open's first, then each planned step once and in order, an append's result an entry
//! id (or an error) that no earlier step returned.
//!
//! An ack that breaks these rules is a protocol failure of the trial ([`AckError`]),
//! and the acks after it are not read: at most one ack per planned step and the open's
//! is kept, so a trial's memory stays proportional to its plan.

use std::collections::HashMap;
use std::fmt;

use serde_json::Value;

use super::plan::StepKind;
use super::process::Ack;

/// An ack the protocol does not allow, and where it came.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AckError {
    /// The 1-based line of the adapter's output since the request.
    pub line: usize,
    /// What is wrong.
    pub kind: AckErrorKind,
}

/// Kinds of [`AckError`].
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum AckErrorKind {
    /// Not an ack of the protocol's shape: what is wrong with it.
    Malformed(String),
    /// A step acknowledged before the open was.
    BeforeOpen {
        /// The step.
        step: usize,
    },
    /// The open acknowledged a second time.
    OpenAgain,
    /// A step acknowledged a second time.
    Duplicate {
        /// The step.
        step: usize,
    },
    /// A step acknowledged before the step after the last acknowledged one.
    OutOfOrder {
        /// The step.
        step: usize,
        /// The step whose ack was due.
        expected: usize,
    },
    /// A step the plan does not have.
    OutOfRange {
        /// The step.
        step: usize,
        /// How many steps the plan has.
        steps: usize,
    },
    /// An append's result that is neither an entry id nor an error.
    NoEntryId {
        /// The step.
        step: usize,
        /// The result, clipped.
        result: String,
    },
    /// An entry id that an earlier step returned already.
    SameId {
        /// The step.
        step: usize,
        /// The id.
        id: String,
        /// The step that returned it first.
        first: usize,
    },
}

impl fmt::Display for AckErrorKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            AckErrorKind::Malformed(why) => write!(f, "a malformed ack: {why}"),
            AckErrorKind::BeforeOpen { step } => {
                write!(f, "step {step} acknowledged before the open")
            }
            AckErrorKind::OpenAgain => f.write_str("the open acknowledged twice"),
            AckErrorKind::Duplicate { step } => write!(f, "step {step} acknowledged twice"),
            AckErrorKind::OutOfOrder { step, expected } => write!(
                f,
                "step {step} acknowledged out of order; step {expected} was due"
            ),
            AckErrorKind::OutOfRange { step, steps } => write!(
                f,
                "step {step} acknowledged, but the plan has {steps} steps (0 to {})",
                steps.saturating_sub(1)
            ),
            AckErrorKind::NoEntryId { step, result } => write!(
                f,
                "step {step} appends an entry, but its result {result} is neither an entry id nor an error"
            ),
            AckErrorKind::SameId { step, id, first } => write!(
                f,
                "step {step} returned entry id {id}, which step {first} returned already"
            ),
        }
    }
}

impl fmt::Display for AckError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "ack line {}: {}", self.line, self.kind)
    }
}

impl std::error::Error for AckError {}

/// The acks of one trial accepted so far.
#[derive(Debug, Clone)]
pub struct Ledger {
    /// What each planned step is.
    kinds: Vec<StepKind>,
    /// The accepted acks, in order: the open's, then steps 0, 1, …
    acks: Vec<Ack>,
    /// The entry ids the accepted acks returned, each with its step.
    ids: HashMap<String, usize>,
}

impl Ledger {
    /// An empty ledger for a plan of `kinds`.
    pub fn new(kinds: &[StepKind]) -> Ledger {
        Ledger {
            kinds: kinds.to_vec(),
            acks: Vec::new(),
            ids: HashMap::new(),
        }
    }

    /// Accepts `ack`, read on `line` of the adapter's output, or says why not (and
    /// keeps nothing of it).
    pub fn accept(&mut self, ack: Ack, line: usize) -> Result<(), AckError> {
        let error = |kind| AckError { line, kind };
        let step = self.due(ack.step).map_err(error)?;
        if let Some(step) = step {
            if let Some(id) = self.entry_id(step, &ack.result).map_err(error)? {
                self.ids.insert(id, step);
            }
        }
        self.acks.push(ack);
        Ok(())
    }

    /// The accepted acks, in order.
    pub fn acks(&self) -> &[Ack] {
        &self.acks
    }

    /// Gives the accepted acks up.
    pub fn into_acks(self) -> Vec<Ack> {
        self.acks
    }

    /// `step` (`None`: the open) when it is the ack due next.
    fn due(&self, step: Option<usize>) -> Result<Option<usize>, AckErrorKind> {
        // The open's ack, then one per step: the next step is the number of acks less one.
        let expected = self.acks.len().checked_sub(1);
        match (step, expected) {
            (None, None) => Ok(None),
            (None, Some(_)) => Err(AckErrorKind::OpenAgain),
            (Some(step), None) => Err(AckErrorKind::BeforeOpen { step }),
            (Some(step), Some(_)) if step >= self.kinds.len() => Err(AckErrorKind::OutOfRange {
                step,
                steps: self.kinds.len(),
            }),
            (Some(step), Some(expected)) if step < expected => {
                Err(AckErrorKind::Duplicate { step })
            }
            (Some(step), Some(expected)) if step > expected => {
                Err(AckErrorKind::OutOfOrder { step, expected })
            }
            (Some(step), Some(_)) => Ok(Some(step)),
        }
    }

    /// The entry id an append step's `result` names (`None` for a failed step or a
    /// step that appends nothing), when it is one no earlier step returned.
    fn entry_id(&self, step: usize, result: &Value) -> Result<Option<String>, AckErrorKind> {
        if !matches!(self.kinds.get(step), Some(StepKind::Append { .. })) {
            return Ok(None);
        }
        match result {
            Value::String(id) if !id.is_empty() => match self.ids.get(id) {
                Some(&first) => Err(AckErrorKind::SameId {
                    step,
                    id: session_conformance::guard::printable(id).into_owned(),
                    first,
                }),
                None => Ok(Some(id.clone())),
            },
            Value::Object(o) if o.contains_key("error") => Ok(None),
            other => Err(AckErrorKind::NoEntryId {
                step,
                result: clip(&other.to_string()),
            }),
        }
    }
}

/// At most 80 characters of `text`, for a message.
fn clip(text: &str) -> String {
    match text.char_indices().nth(80) {
        Some((i, _)) => format!("{}…", &text[..i]),
        None => text.to_owned(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn kinds() -> Vec<StepKind> {
        vec![
            StepKind::Append {
                entry_type: "message",
            },
            StepKind::Flush,
            StepKind::Append {
                entry_type: "label",
            },
        ]
    }

    fn ack(step: Option<usize>, result: Value) -> Ack {
        Ack {
            step,
            result,
            durable: true,
            entry: None,
        }
    }

    /// The error of the ack after `before`, all accepted.
    fn refused(before: &[Ack], last: Ack) -> AckErrorKind {
        let mut ledger = Ledger::new(&kinds());
        for (n, a) in before.iter().enumerate() {
            ledger.accept(a.clone(), n + 1).expect("accepted");
        }
        let error = ledger.accept(last, before.len() + 1).expect_err("refused");
        assert_eq!(error.line, before.len() + 1);
        assert_eq!(ledger.acks().len(), before.len(), "nothing kept of it");
        error.kind
    }

    #[test]
    fn the_open_then_each_step_once_in_order_is_accepted() {
        let mut ledger = Ledger::new(&kinds());
        let acks = [
            ack(None, Value::Null),
            ack(Some(0), json!("aaaa1111")),
            ack(Some(1), Value::Null),
            ack(Some(2), json!({"error": {"kind": "exception"}})),
        ];
        for (n, a) in acks.iter().enumerate() {
            ledger.accept(a.clone(), n + 1).expect("accepted");
        }
        assert_eq!(ledger.into_acks(), acks);
    }

    #[test]
    fn acks_out_of_place_are_refused() {
        let open = ack(None, Value::Null);
        let first = ack(Some(0), json!("aaaa1111"));
        assert_eq!(
            refused(&[], first.clone()),
            AckErrorKind::BeforeOpen { step: 0 }
        );
        assert_eq!(
            refused(std::slice::from_ref(&open), open.clone()),
            AckErrorKind::OpenAgain
        );
        assert_eq!(
            refused(&[open.clone(), first.clone()], first.clone()),
            AckErrorKind::Duplicate { step: 0 }
        );
        assert_eq!(
            refused(std::slice::from_ref(&open), ack(Some(2), json!("bbbb2222"))),
            AckErrorKind::OutOfOrder {
                step: 2,
                expected: 0
            }
        );
        assert_eq!(
            refused(
                std::slice::from_ref(&open),
                ack(Some(9999), json!("bbbb2222"))
            ),
            AckErrorKind::OutOfRange {
                step: 9999,
                steps: 3
            }
        );
    }

    #[test]
    fn an_append_returns_a_new_entry_id_or_an_error() {
        let open = ack(None, Value::Null);
        assert!(matches!(
            refused(std::slice::from_ref(&open), ack(Some(0), Value::Null)),
            AckErrorKind::NoEntryId { step: 0, .. }
        ));
        let twice = [
            open,
            ack(Some(0), json!("aaaa1111")),
            ack(Some(1), Value::Null),
        ];
        assert_eq!(
            refused(&twice, ack(Some(2), json!("aaaa1111"))),
            AckErrorKind::SameId {
                step: 2,
                id: "aaaa1111".into(),
                first: 0
            }
        );
    }

    #[test]
    fn the_message_names_the_ack_line() {
        let error = AckError {
            line: 7,
            kind: AckErrorKind::Duplicate { step: 3 },
        };
        assert_eq!(error.to_string(), "ack line 7: step 3 acknowledged twice");
    }
}
