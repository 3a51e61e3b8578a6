//! The signals that stop a run (SIGINT, SIGTERM), as the error, the exit status and the metrics
//! name them. Watching for them is `interrupt`'s.

/// A signal that stops a run.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum Signal {
    Int,
    Term,
}

impl Signal {
    /// The signal's name, as the metrics record it (`"SIGINT"`, `"SIGTERM"`).
    pub fn name(self) -> &'static str {
        match self {
            Signal::Int => "SIGINT",
            Signal::Term => "SIGTERM",
        }
    }

    /// The exit status of a process ended by this signal: `128 + signal number`.
    pub fn exit_code(self) -> i32 {
        128 + self.number()
    }

    fn number(self) -> i32 {
        match self {
            Signal::Int => 2,
            Signal::Term => 15,
        }
    }

    pub(crate) fn from_number(number: usize) -> Option<Signal> {
        match number {
            2 => Some(Signal::Int),
            15 => Some(Signal::Term),
            _ => None,
        }
    }
}
