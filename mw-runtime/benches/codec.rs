//! The codec against its references, each as an encode-then-decode round trip of one message:
//!
//! - `bodies_100k`: a `Vec` of 100 000 five-`f64` structs, `#[derive(Message)]` against bincode
//!   1.3 with serde derives on the same type (target ≥ 1×, aim ≥ 5×);
//! - `f64_1m`: a `Vec<f64>` of 1 000 000, against a plain memory copy of the same bytes into a
//!   buffer and back out into a fresh `Vec<f64>` (target ≥ 0.7×);
//! - `pairs_500k`: a `Vec<[f64; 2]>` of 500 000, against the same memory copy.
//!
//! Each group holds both sides; the ratio is the reference's median time over the codec's.
//!
//!     cargo bench -p mw-runtime --bench codec
//!     cargo bench -p mw-runtime --bench codec -- --measurement-time 2   # shorter

use std::hint::black_box;
use std::time::Duration;

use criterion::{Criterion, Throughput, criterion_group, criterion_main};
use mw_runtime::codec;
use serde::{Deserialize, Serialize};

#[derive(mw_runtime::Message, Serialize, Deserialize, Debug, Clone, Copy, PartialEq)]
struct Body {
    m: f64,
    x: f64,
    y: f64,
    vx: f64,
    vy: f64,
}

fn bodies(n: usize) -> Vec<Body> {
    (0..n)
        .map(|i| {
            let f = i as f64;
            Body {
                m: 1.0 / (f + 1.0),
                x: f.sin(),
                y: f.cos(),
                vx: 0.1 * f,
                vy: -0.1 * f,
            }
        })
        .collect()
}

fn codec_round_trip<T: mw_runtime::Message>(value: &T) -> T {
    let bytes = codec::encode(value);
    codec::decode(&bytes).expect("decodes")
}

/// Copy the values' bytes into a byte buffer, then into a fresh vector: the floor for a codec.
fn memcpy_round_trip(values: &[f64]) -> Vec<f64> {
    let mut bytes = Vec::with_capacity(size_of_val(values));
    bytes.extend_from_slice(bytemuck::cast_slice(values));
    let mut out = vec![0.0f64; values.len()];
    bytemuck::cast_slice_mut::<f64, u8>(&mut out).copy_from_slice(&bytes);
    out
}

fn memcpy_pairs_round_trip(values: &[[f64; 2]]) -> Vec<[f64; 2]> {
    let mut bytes = Vec::with_capacity(size_of_val(values));
    bytes.extend_from_slice(bytemuck::cast_slice(values.as_flattened()));
    let mut out = vec![[0.0f64; 2]; values.len()];
    bytemuck::cast_slice_mut::<f64, u8>(out.as_flattened_mut()).copy_from_slice(&bytes);
    out
}

fn bench_bodies(c: &mut Criterion) {
    let bodies = bodies(100_000);
    assert_eq!(codec_round_trip(&bodies), bodies);
    let bincode_bytes = bincode::serialize(&bodies).expect("serializes");
    assert_eq!(
        bincode::deserialize::<Vec<Body>>(&bincode_bytes).expect("deserializes"),
        bodies
    );

    let mut group = c.benchmark_group("bodies_100k");
    group.throughput(Throughput::Bytes(size_of_val(bodies.as_slice()) as u64));
    group.bench_function("mw", |b| b.iter(|| codec_round_trip(black_box(&bodies))));
    group.bench_function("bincode", |b| {
        b.iter(|| {
            let bytes = bincode::serialize(black_box(&bodies)).expect("serializes");
            bincode::deserialize::<Vec<Body>>(&bytes).expect("deserializes")
        })
    });
    group.finish();
}

fn bench_f64(c: &mut Criterion) {
    let values: Vec<f64> = (0..1_000_000).map(|i| f64::from(i) * 0.5).collect();
    assert_eq!(codec_round_trip(&values), values);
    assert_eq!(memcpy_round_trip(&values), values);

    let mut group = c.benchmark_group("f64_1m");
    group.throughput(Throughput::Bytes(size_of_val(values.as_slice()) as u64));
    group.bench_function("mw", |b| b.iter(|| codec_round_trip(black_box(&values))));
    group.bench_function("memcpy", |b| {
        b.iter(|| memcpy_round_trip(black_box(&values)))
    });
    group.finish();
}

fn bench_pairs(c: &mut Criterion) {
    let pairs: Vec<[f64; 2]> = (0..500_000)
        .map(|i| [f64::from(i), -f64::from(i)])
        .collect();
    assert_eq!(codec_round_trip(&pairs), pairs);
    assert_eq!(memcpy_pairs_round_trip(&pairs), pairs);

    let mut group = c.benchmark_group("pairs_500k");
    group.throughput(Throughput::Bytes(size_of_val(pairs.as_slice()) as u64));
    group.bench_function("mw", |b| b.iter(|| codec_round_trip(black_box(&pairs))));
    group.bench_function("memcpy", |b| {
        b.iter(|| memcpy_pairs_round_trip(black_box(&pairs)))
    });
    group.finish();
}

fn config() -> Criterion {
    Criterion::default()
        .sample_size(30)
        .warm_up_time(Duration::from_secs(1))
        .measurement_time(Duration::from_secs(3))
}

criterion_group! {
    name = benches;
    config = config();
    targets = bench_bodies, bench_f64, bench_pairs
}
criterion_main!(benches);
