use mw::prelude::*;

struct Fire;

// A misspelt hook, a wrong signature and a missing hook: all reported at once, and no
// "`Fire` is not a `Master`" after them (a fallback impl is written).
#[mw::master]
impl Fire {
    fn initialise(&mut self, _setup: &mut Setup) -> mw::Result<()> {
        Ok(())
    }

    fn partition(&mut self, _iteration: Iteration) -> Work<(), u32> {
        Work::done()
    }
}

fn is_master<M: Master>(_: M) {}

fn main() {
    is_master(Fire);
}
