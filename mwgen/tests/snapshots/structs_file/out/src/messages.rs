//! The messages of calc:
//! - `Job`: the task a worker receives
//! - `Result`: the result it sends back for one task
//!
//! `#[derive(Message)]` writes each type's compact binary codec. Change the fields freely: they
//! can be numbers, `bool`, `char`, `String`, `()`, tuples, `Vec<T>`, `[T; N]`, `Option<T>`,
//! `Box<T>` and other types of this file that derive `Message`.

use mw::Message;

/// How deep an expression may nest.
pub const MAX_DEPTH: usize = 32;

/// One expression to evaluate, with its variables.
#[derive(Message, Debug, Clone, PartialEq)]
pub struct Job(pub Expr, pub Vec<(String, f64)>);

/// An arithmetic expression.
#[derive(Message, Debug, Clone, PartialEq)]
pub enum Expr {
    Add(Box<Expr>, Box<Expr>),
    Mul(Box<Self>, Box<Self>),
    Var(String),
    Num(f64),
}

/// The value of an expression, or why there is none.
#[derive(Message, Debug, Clone, PartialEq)]
pub struct Result {
    pub value: Option<f64>,
    pub error: Option<String>,
    /// Filled in by the master, never sent.
    #[mw(skip)]
    pub received_at: Option<std::time::Instant>,
}

impl Expr {
    /// How deep the expression nests.
    pub fn depth(&self) -> usize {
        match self {
            Expr::Add(a, b) | Expr::Mul(a, b) => 1 + a.depth().max(b.depth()),
            Expr::Var(_) | Expr::Num(_) => 1,
        }
    }
}
