// Messages of a small expression evaluator: each task is one expression to evaluate.
use mw::Message;

/// How deep an expression may nest.
pub const MAX_DEPTH: usize = 32;

/// One expression to evaluate, with its variables.
#[mw(task)]
#[derive(Debug)]
struct Job(Expr, Vec<(String, f64)>);

/// An arithmetic expression.
enum Expr {
    Add(Box<Expr>, Box<Expr>),
    Mul(Box<Self>, Box<Self>),
    Var(String),
    Num(f64),
}

/// The value of an expression, or why there is none.
struct Result {
    value: Option<f64>,
    error: Option<String>,
    /// Filled in by the master, never sent.
    #[mw(skip)]
    received_at: Option<std::time::Instant>,
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
