use mw::prelude::*;

struct Fire;

#[mw::master]
impl Fire {
    fn partition(&mut self, _iteration: &Iteration) -> Work<(), u32> {
        Work::done()
    }

    fn recover(&mut self, _task: TaskId, _result: u32) {}

    fn final_work(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

struct NotClone(u32);

impl mw::Message for NotClone {
    const MIN_ENCODED_LEN: usize = 4;
    fn encoded_len(&self) -> usize {
        4
    }
    fn encode(&self, out: &mut Vec<u8>) {
        self.0.encode(out);
    }
    fn decode(input: &mut mw::codec::Reader<'_>) -> Result<Self, mw::DecodeError> {
        u32::decode(input).map(NotClone)
    }
}

struct Walker;

#[mw::worker]
impl Walker {
    fn do_work(&mut self, _shared: &(), task: NotClone) -> u32 {
        task.0
    }
}

fn main() {}
