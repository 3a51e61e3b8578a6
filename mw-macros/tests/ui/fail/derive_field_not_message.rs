struct Handle;

#[derive(mw::Message)]
struct Job {
    id: u32,
    handle: Handle,
}

fn main() {}
