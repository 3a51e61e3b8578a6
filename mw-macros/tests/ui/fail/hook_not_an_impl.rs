#[mw::master]
struct Fire;

fn main() {}
