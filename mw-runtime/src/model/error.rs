//! Why the model could not be evaluated.

use std::fmt;

/// The inputs given to a model function make no sense; nothing was computed.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub enum ModelError {
    /// A parameter is NaN, infinite, negative, or out of its range. `name` is the field name
    /// (`tc_ms`, `alpha`, ...), `expected` says what would be accepted.
    InvalidParameter {
        name: &'static str,
        value: f64,
        expected: &'static str,
    },
    /// The model was asked about zero workers.
    NoWorkers,
    /// `Tc = 0`: efficiency and the performance index divide by the work, and there is none.
    NoWork,
    /// A sweep range is empty or longer than [`MAX_SWEEP_POINTS`](super::MAX_SWEEP_POINTS).
    InvalidRange { min: usize, max: usize },
}

impl fmt::Display for ModelError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ModelError::InvalidParameter {
                name,
                value,
                expected,
            } => write!(f, "`{name}` must be {expected}, got {value}"),
            ModelError::NoWorkers => f.write_str("the number of workers must be at least 1"),
            ModelError::NoWork => f.write_str(
                "the total processing time `tc_ms` must be > 0 for efficiency and the performance index",
            ),
            ModelError::InvalidRange { min, max } if min > max || *min == 0 => {
                write!(f, "the worker range {min}..={max} is empty or starts at 0")
            }
            ModelError::InvalidRange { min, max } => write!(
                f,
                "the worker range {min}..={max} is longer than {} points",
                super::MAX_SWEEP_POINTS
            ),
        }
    }
}

impl std::error::Error for ModelError {}
