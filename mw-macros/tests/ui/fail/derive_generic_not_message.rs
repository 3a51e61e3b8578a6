use mw::Message;

#[derive(Message)]
struct Tagged<T> {
    id: u64,
    value: T,
}

struct Handle;

fn main() {
    let tagged = Tagged { id: 1, value: Handle };
    let _ = mw::codec::encode(&tagged);
}
