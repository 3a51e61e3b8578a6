//! How master and workers talk: the protocol messages and the backends that carry them.
//!
//! One protocol, private flavors: [`local`] moves values through channels between threads; the
//! `mpi` flavor sends the same messages encoded with the codec. Message volumes are always the
//! encoded sizes, so the performance model sees the same bytes on every backend.

pub(crate) mod local;
#[cfg(feature = "mpi")]
pub(crate) mod mpi;

use crate::clock::Instant;
use std::sync::Arc;
use std::time::Duration;

use crate::codec::{DecodeError, Message, Reader};
use crate::error::Result;
use crate::layout::Layout;
use crate::measure::Moments;
use crate::trace::Heard;

/// Master → worker.
#[derive(Debug)]
pub(crate) enum ToWorker<T, S> {
    /// The shared part of iteration `iteration`; the worker keeps both for the chunks that
    /// follow.
    Shared { iteration: usize, part: Arc<S> },
    /// Tasks to process.
    Chunk(Chunk<T>),
    /// No more work: run `final_work` and exit.
    Stop,
}

/// Worker → master.
#[derive(Debug)]
pub(crate) enum FromWorker<T, R> {
    /// `Worker::initialize` finished (with the error message if it failed).
    Ready { error: Option<String> },
    /// A chunk's results.
    Done(Done<R>),
    /// `do_work` panicked: the chunk's tasks come back to be re-run elsewhere.
    Failed(Failed<T>),
    /// `final_work` finished (with the error message if it failed).
    Finished { error: Option<String> },
    /// Made by the transport, never sent by a worker: the worker is gone (its process died, or
    /// its thread ended without finishing); `why` says what was seen. Nothing more comes from it.
    Lost { why: String },
}

/// Consecutive tasks `first..first + tasks.len()` of the current iteration.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Chunk<T> {
    pub id: u64,
    pub first: u64,
    pub tasks: Vec<T>,
}

/// The results of a chunk, with the worker's own measurements.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Done<R> {
    pub chunk: u64,
    /// One per task that did not fail, in task order.
    pub results: Vec<R>,
    /// The tasks that failed (their offsets in the chunk, rising) and why; they have no result.
    pub failed: Vec<(u32, String)>,
    /// Time spent in `do_work` for the whole chunk, in ns.
    pub busy_ns: u64,
    /// Thread CPU time the worker spent on the chunk, in ns, when it measured it (see
    /// `clock::CpuMeter`): how much of `busy_ns` kept a core busy.
    pub cpu_ns: Option<u64>,
    /// Time the worker was ready to compute but waited for a core, in ns, when it measured it
    /// (see `clock::CpuMeter`): the part of `busy_ns` that other threads' demand for the cores
    /// added.
    pub wait_ns: Option<u64>,
    /// Time the worker was ready to run but waited for a core between its answer before and
    /// the start of this chunk, in ns, when it measured it: its late wake-up for the chunk,
    /// which is in the chunk's trip but is not the link's.
    pub late_ns: Option<u64>,
    /// Per-task times in ms (count, sum, sum of squares).
    pub task_ms: Moments,
}

/// What a link on the master's own clock knows of the answer `recv` returned last, beyond the
/// message: a link between processes knows nothing of it (every field `None`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(crate) struct Stamps {
    /// When `do_work` began on the chunk, on the master's clock (threads share it): the trace
    /// places the worker's slice there.
    pub began: Option<Instant>,
    /// The runtime's own time in the chunk's round trip besides `do_work`, which the link did
    /// not charge, in ns, when the link charges time of its own (an emulated network): the
    /// receiving threads waking after the messages were due, and the worker's time between
    /// the chunk's arrival and `do_work`, and between `do_work` and its answer. Negative when a
    /// receiver woke early. Left out of the trip, the fit of `mo` sees the link alone.
    pub unbilled_ns: Option<i64>,
}

/// A chunk as the master sent it, encoded as [`Chunk`]: what the master keeps while it is out.
/// Under MPI it is the send buffer, shared with a send still in progress.
#[derive(Debug)]
pub(crate) struct SentChunk(Arc<Vec<u8>>);

impl SentChunk {
    /// The encoded chunk, for a backend that sends it as it is.
    #[cfg(feature = "mpi")]
    pub(crate) fn bytes(&self) -> &Arc<Vec<u8>> {
        &self.0
    }

    /// Its encoded length: the chunk's bytes on every link.
    pub(crate) fn len(&self) -> usize {
        self.0.len()
    }

    /// The chunk's tasks, decoded.
    pub(crate) fn tasks<T: Message>(&self) -> Result<Vec<T>, DecodeError> {
        crate::codec::decode::<Chunk<T>>(&self.0).map(|chunk| chunk.tasks)
    }
}

/// Buffers of answered chunks' encodings, for the next chunks': with chunks of a task or two,
/// an allocation per chunk costs as much as sending it.
#[derive(Debug, Default)]
pub(crate) struct SentBuffers(Vec<Arc<Vec<u8>>>);

/// Buffers kept for reuse, at most, and the largest one kept.
const SENT_BUFFERS: usize = 64;
const SENT_BUFFER_BYTES: usize = 4096;

impl SentBuffers {
    /// Encodes `chunk` into a kept buffer, or a new one.
    pub(crate) fn encode<T: Message>(&mut self, chunk: &Chunk<T>) -> SentChunk {
        // Only buffers no send shares are kept, so a kept one is always free to write.
        let mut bytes = self.0.pop().unwrap_or_default();
        match Arc::get_mut(&mut bytes) {
            Some(buffer) => {
                buffer.clear();
                chunk.encode(buffer);
            }
            None => bytes = Arc::new(crate::codec::encode(chunk)),
        }
        SentChunk(bytes)
    }

    /// Keeps the buffer of `sent` for a later chunk, unless a send still shares it, it is
    /// large, or enough are kept.
    #[inline]
    pub(crate) fn keep(&mut self, sent: SentChunk) {
        let mut bytes = sent.0;
        let free = Arc::get_mut(&mut bytes).is_some_and(|b| b.capacity() <= SENT_BUFFER_BYTES);
        if free && self.0.len() < SENT_BUFFERS {
            self.0.push(bytes);
        }
    }
}

/// A chunk the worker could not process at all (it holds no shared part, or could not be
/// built again after a panic): its tasks come back unprocessed.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Failed<T> {
    pub chunk: u64,
    pub tasks: Vec<T>,
    pub message: String,
}

/// What the trace reads of an answer.
impl<'a, T, R> From<&'a FromWorker<T, R>> for Heard<'a> {
    fn from(message: &'a FromWorker<T, R>) -> Self {
        Heard::from((message, Stamps::default()))
    }
}

/// What the trace reads of an answer and of what its link knows of it.
impl<'a, T, R> From<(&'a FromWorker<T, R>, Stamps)> for Heard<'a> {
    fn from((message, stamps): (&'a FromWorker<T, R>, Stamps)) -> Self {
        match message {
            FromWorker::Done(done) => Heard::Results {
                chunk: done.chunk,
                tasks: done.results.len(),
                failed: done
                    .failed
                    .first()
                    .map(|(_, why)| (done.failed.len(), why.as_str())),
                began: stamps.began,
                busy_ns: done.busy_ns,
            },
            FromWorker::Failed(failed) => Heard::Failure {
                chunk: failed.chunk,
                message: &failed.message,
            },
            FromWorker::Ready { .. } | FromWorker::Finished { .. } | FromWorker::Lost { .. } => {
                Heard::Other
            }
        }
    }
}

/// The master's side of a backend.
pub(crate) trait MasterLink<T, S, R> {
    /// Whether the link has a steady path of its own ([`answer_into`](Self::answer_into)): the
    /// engine asks it only then, and spends nothing on it with a link that has none.
    const STEADY_PATH: bool = false;
    /// Workers started.
    fn pool(&self) -> usize;
    /// `"local"` or `"mpi"`.
    fn backend(&self) -> &'static str;
    /// The workers' nodes and their cores, when the backend knows them.
    fn layout(&self) -> Option<Layout> {
        None
    }
    /// Sends one message to `worker`; under the sync protocol it returns once delivered.
    fn send(&mut self, worker: usize, message: ToWorker<T, S>) -> Result<()>;
    /// Sends `chunk` to `worker` as [`send`](Self::send) does, and returns it encoded: what
    /// the master keeps to copy the chunk or run its tasks again. A backend that encodes to
    /// send returns its send buffer itself, so the master keeps no second copy.
    fn send_chunk(&mut self, worker: usize, chunk: Chunk<T>) -> Result<SentChunk>;
    /// Takes back a chunk's encoding once the chunk is answered or its worker lost, for the
    /// next chunk's.
    fn reclaim(&mut self, sent: SentChunk) {
        drop(sent);
    }
    /// When the link took the last message sent, if it keeps time of its own (an emulated
    /// network): the message's trip starts there, not at the engine's clock read before the
    /// send. `None` on a real network.
    fn handed(&self) -> Option<Instant> {
        None
    }
    /// What the link knows of the answer [`recv`](Self::recv) returned last beyond its
    /// message; nothing on a link between processes.
    #[inline]
    fn stamps(&self) -> Stamps {
        Stamps::default()
    }
    /// An empty vector for the tasks of the next chunk: one a chunk sent before left behind
    /// (a backend that copies tasks out keeps it), saving an allocation per chunk.
    fn spare_tasks(&mut self) -> Vec<T> {
        Vec::new()
    }
    /// Takes back the emptied results vector of an answer, for a backend that decodes answers
    /// to fill it again.
    fn reuse_results(&mut self, results: Vec<R>) {
        drop(results);
    }
    /// The next message from any worker, with the worker's number.
    fn recv(&mut self) -> Result<(usize, FromWorker<T, R>)>;
    /// Like [`recv`](Self::recv), but gives up after `timeout`: `Ok(None)` when nothing came.
    fn recv_within(&mut self, timeout: Duration) -> Result<Option<(usize, FromWorker<T, R>)>>;
    /// The engine's steady path: an answer that is there or comes within a few microseconds,
    /// decoded into `done` (whose vectors it reuses), with its worker and its encoded length
    /// (what `encoded_len` would count). `Ok(None)` when nothing
    /// came that soon, or something else did, or the link has news of its own (a worker lost):
    /// [`recv_within`](Self::recv_within) returns it next. A link without a path of its own
    /// leaves every message to `recv_within`, and says so in [`STEADY_PATH`](Self::STEADY_PATH).
    fn answer_into(&mut self, done: &mut Done<R>) -> Result<Option<(usize, usize)>> {
        let _ = done;
        Ok(None)
    }
    /// The master gives up on `worker` (lost, or silent for too long): nothing is sent to it or
    /// waited for from it again, not at shutdown either, and what it may still send is dropped.
    fn forsake(&mut self, worker: usize);
    /// Whether a parked worker (one `nworkers` leaves out) can be released, so that it costs
    /// nothing while it waits: a thread can; a rank launched by mpirun or srun holds its share
    /// of the allocation until the job ends. Decides the default objective of the tuner.
    fn parked_released(&self) -> bool {
        true
    }
    /// What holds of parked workers when one word of [`parked_released`](Self::parked_released)
    /// cannot say it (some are released, some not), for the summary's objective reason.
    fn parked_note(&self) -> Option<String> {
        None
    }
    /// Time spent bringing new workers in (spawning processes) since the last call: the tuner
    /// leaves it out of its measurements.
    fn joining(&mut self) -> Duration {
        Duration::ZERO
    }
    /// `worker`, holding nothing, takes no part in the iteration that starts: a backend that
    /// started a process for it may release it.
    fn park(&mut self, worker: usize) {
        let _ = worker;
    }
    /// The iteration is over: a backend that keeps its shared part (or the part's encoding)
    /// for workers joining late lets go of it, so that the next iteration's part, made before
    /// the next send, is never held beside it.
    fn iteration_over(&mut self) {}
    /// Whether a worker still busy when the run ends can be left behind at no cost: a detached
    /// thread can; an MPI rank only when mpirun keeps the job going once it is ended.
    fn can_leave_behind(&self) -> bool {
        true
    }
}

/// A worker's side of a backend.
pub(crate) trait WorkerLink<T, S, R> {
    /// The next message from the master; `None` when the master is gone.
    fn recv(&mut self) -> Option<ToWorker<T, S>>;
    /// Sends one message to the master; `false` when the master is gone.
    fn send(&mut self, message: FromWorker<T, R>) -> bool;
    /// Takes back the task vector of a processed chunk, for a backend that decodes chunks to
    /// fill it again.
    fn reuse_tasks(&mut self, tasks: Vec<T>) {
        drop(tasks);
    }
    /// An empty vector for a chunk's results: the one an earlier answer carried, when the
    /// backend kept it.
    fn spare_results(&mut self) -> Vec<R> {
        Vec::new()
    }
}

// The envelopes of chunks and answers are fixed-width: per chunk, a varint's loop costs more
// than the few bytes it saves.

impl<T: Message> Message for Chunk<T> {
    const MIN_ENCODED_LEN: usize = 16 + <Vec<T>>::MIN_ENCODED_LEN;

    fn encoded_len(&self) -> usize {
        16 + self.tasks.encoded_len()
    }

    fn encode(&self, out: &mut Vec<u8>) {
        write_words(out, [self.id, self.first]);
        self.tasks.encode(out);
    }

    fn decode(input: &mut Reader<'_>) -> Result<Self, DecodeError> {
        Chunk::decode_into(input, Vec::new())
    }
}

impl<T: Message> Chunk<T> {
    /// Decodes a chunk whose tasks go into `spare` when it has room for them: with chunks of a
    /// task or two, the allocation of a task vector per chunk is a good share of the worker's
    /// work.
    pub(crate) fn decode_into(input: &mut Reader<'_>, spare: Vec<T>) -> Result<Self, DecodeError> {
        let [id, first] = read_words(input).map_err(|e| e.in_field("Chunk", "id, first"))?;
        let tasks = decode_vec_into(input, spare).map_err(|e| e.in_field("Chunk", "tasks"))?;
        Ok(Chunk { id, first, tasks })
    }
}

/// Writes `N` fixed-width fields (`u64`, or `f64` by its bits) as the codec writes them one
/// by one (little-endian), in one write: a chunk or an answer of a task or two is mostly these.
fn write_words<const N: usize>(out: &mut Vec<u8>, values: [u64; N]) {
    const { assert!(N <= 8) };
    let mut bytes = [0u8; 64];
    for (i, value) in values.iter().enumerate() {
        bytes[i * 8..i * 8 + 8].copy_from_slice(&value.to_le_bytes());
    }
    out.extend_from_slice(&bytes[..N * 8]);
}

/// Reads `N` fields written by [`write_words`], with one bounds check rather than one per field.
fn read_words<const N: usize>(input: &mut Reader<'_>) -> Result<[u64; N], DecodeError> {
    let bytes = input.take(N * 8, "u64")?;
    Ok(std::array::from_fn(|i| {
        u64::from_le_bytes(std::array::from_fn(|j| bytes[i * 8 + j]))
    }))
}

/// Decodes a `Vec<T>` into `spare` when it has room, else into a new vector.
fn decode_vec_into<T: Message>(
    input: &mut Reader<'_>,
    mut spare: Vec<T>,
) -> Result<Vec<T>, DecodeError> {
    decode_vec_in_place(input, &mut spare)?;
    Ok(spare)
}

/// Decodes a `Vec<T>` into `items`, over what they held, when it has room; else into a new
/// vector.
fn decode_vec_in_place<T: Message>(
    input: &mut Reader<'_>,
    items: &mut Vec<T>,
) -> Result<(), DecodeError> {
    input.nested("Vec", |input| {
        let len = input.read_len::<T>("Vec")?;
        if len > items.capacity() {
            *items = T::decode_vec(input, len)?;
            return Ok(());
        }
        items.clear();
        for index in 0..len {
            items.push(T::decode(input).map_err(|e| e.at_index(index))?);
        }
        Ok(())
    })
}

impl<R: Message> Message for Done<R> {
    /// Chunk id, busy time, CPU time and the run-queue waits in and before the chunk
    /// (`u64::MAX` when not measured), task count, the two sums, the results, then the failed
    /// tasks.
    const MIN_ENCODED_LEN: usize =
        64 + <Vec<R>>::MIN_ENCODED_LEN + <Vec<(u32, String)>>::MIN_ENCODED_LEN;

    fn encoded_len(&self) -> usize {
        64 + self.results.encoded_len() + self.failed.encoded_len()
    }

    fn encode(&self, out: &mut Vec<u8>) {
        write_words(
            out,
            [
                self.chunk,
                self.busy_ns,
                self.cpu_ns.unwrap_or(u64::MAX),
                self.wait_ns.unwrap_or(u64::MAX),
                self.late_ns.unwrap_or(u64::MAX),
                self.task_ms.count(),
                self.task_ms.sum().to_bits(),
                self.task_ms.sum_sq().to_bits(),
            ],
        );
        self.results.encode(out);
        // Usually none failed: an empty list is its length, one zero byte.
        if self.failed.is_empty() {
            out.push(0);
        } else {
            self.failed.encode(out);
        }
    }

    fn decode(input: &mut Reader<'_>) -> Result<Self, DecodeError> {
        Done::decode_into(input, Vec::new())
    }
}

impl<R> Default for Done<R> {
    fn default() -> Self {
        Done {
            chunk: 0,
            results: Vec::new(),
            failed: Vec::new(),
            busy_ns: 0,
            cpu_ns: None,
            wait_ns: None,
            late_ns: None,
            task_ms: Moments::default(),
        }
    }
}

impl<R: Message> Done<R> {
    /// Decodes an answer whose results go into `spare` when it has room for them: with chunks
    /// of a task or two, the allocation of a results vector per answer is a good share of the
    /// master's work.
    pub(crate) fn decode_into(input: &mut Reader<'_>, spare: Vec<R>) -> Result<Self, DecodeError> {
        let mut done = Done {
            results: spare,
            ..Done::default()
        };
        done.decode_in_place(input)?;
        Ok(done)
    }

    /// Decodes an answer over this one, its results into the same vector when it has room: the
    /// master's steady path keeps one answer for all, which is neither built nor moved.
    pub(crate) fn decode_in_place(&mut self, input: &mut Reader<'_>) -> Result<(), DecodeError> {
        let field = |name| move |e: DecodeError| e.in_field("Done", name);
        let [chunk, busy_ns, cpu_ns, wait_ns, late_ns, count, sum, sum_sq] = read_words(input)
            .map_err(field("chunk, busy_ns, cpu_ns, wait_ns, late_ns, task_ms"))?;
        let (sum, sum_sq) = (f64::from_bits(sum), f64::from_bits(sum_sq));
        self.chunk = chunk;
        self.busy_ns = busy_ns;
        self.cpu_ns = (cpu_ns != u64::MAX).then_some(cpu_ns);
        self.wait_ns = (wait_ns != u64::MAX).then_some(wait_ns);
        self.late_ns = (late_ns != u64::MAX).then_some(late_ns);
        self.task_ms = Moments::from_sums(count, sum, sum_sq);
        decode_vec_in_place(input, &mut self.results).map_err(field("results"))?;
        // Usually none failed: an empty list is its length alone.
        self.failed = match input
            .read_len::<(u32, String)>("Vec")
            .map_err(field("failed"))?
        {
            0 if self.failed.is_empty() => return Ok(()),
            0 => Vec::new(),
            len => input
                .nested("Vec", |input| <(u32, String)>::decode_vec(input, len))
                .map_err(field("failed"))?,
        };
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::codec;

    #[test]
    fn fixed_fields_keep_the_codecs_field_by_field_layout() {
        let chunk = Chunk {
            id: 7,
            first: 40,
            tasks: vec![3u64, 1],
        };
        let mut by_field = Vec::new();
        (7u64, 40u64, vec![3u64, 1]).encode(&mut by_field);
        assert_eq!(codec::encode(&chunk), by_field);
        let done = Done {
            chunk: 9,
            results: vec![2.5f64],
            failed: vec![(0u32, "boom".to_owned())],
            busy_ns: 1234,
            cpu_ns: None,
            wait_ns: Some(56),
            late_ns: None,
            task_ms: Moments::from_sums(2, 1.5, 1.25),
        };
        let mut by_field = Vec::new();
        (
            9u64,
            1234u64,
            u64::MAX,
            56u64,
            u64::MAX,
            2u64,
            1.5f64,
            1.25f64,
        )
            .encode(&mut by_field);
        (vec![2.5f64], vec![(0u32, "boom".to_owned())]).encode(&mut by_field);
        let bytes = codec::encode(&done);
        assert_eq!(bytes, by_field);
        let back: Done<f64> = codec::decode(&bytes).unwrap();
        assert_eq!(
            (back.chunk, back.busy_ns, back.cpu_ns, back.wait_ns),
            (9, 1234, None, Some(56))
        );
        assert_eq!((back.results, back.failed), (done.results, done.failed));
        assert_eq!(back.task_ms.count(), 2);
        assert_eq!((back.task_ms.sum(), back.task_ms.sum_sq()), (1.5, 1.25));
        // Cut anywhere, an answer is an error, not a panic.
        for len in 0..bytes.len() {
            assert!(codec::decode::<Done<f64>>(&bytes[..len]).is_err(), "{len}");
        }
    }

    /// The trace reads an answer, with what its link knows of it, as its own `Heard`.
    #[test]
    fn the_trace_hears_an_answer_with_its_stamps_and_a_failure_with_its_message() {
        let began = crate::clock::now();
        let done: FromWorker<u32, u32> = FromWorker::Done(Done {
            chunk: 4,
            results: vec![0, 0],
            failed: vec![(2, "boom".to_owned()), (3, "again".to_owned())],
            busy_ns: 10,
            cpu_ns: None,
            wait_ns: None,
            late_ns: None,
            task_ms: Moments::default(),
        });
        let stamps = Stamps {
            began: Some(began),
            unbilled_ns: None,
        };
        assert_eq!(
            Heard::from((&done, stamps)),
            Heard::Results {
                chunk: 4,
                tasks: 2,
                failed: Some((2, "boom")),
                began: Some(began),
                busy_ns: 10,
            }
        );
        let failed: FromWorker<u32, u32> = FromWorker::Failed(Failed {
            chunk: 5,
            tasks: vec![1, 2, 3],
            message: "index out of bounds".into(),
        });
        assert_eq!(
            Heard::from(&failed),
            Heard::Failure {
                chunk: 5,
                message: "index out of bounds"
            }
        );
        let lost: FromWorker<u32, u32> = FromWorker::Lost { why: String::new() };
        assert_eq!(Heard::from(&lost), Heard::Other);
    }

    #[test]
    fn a_chunk_decodes_into_a_spare_vector_with_room_and_afresh_without() {
        let chunk = Chunk {
            id: 7,
            first: 40,
            tasks: vec![3u64, 1, 4],
        };
        let bytes = codec::encode(&chunk);
        let spare: Vec<u64> = Vec::with_capacity(8);
        let at = spare.as_ptr();
        let decoded = Chunk::decode_into(&mut Reader::new(&bytes), spare).unwrap();
        assert_eq!((decoded.id, decoded.first), (7, 40));
        assert_eq!(decoded.tasks, [3, 1, 4]);
        assert_eq!(decoded.tasks.as_ptr(), at, "the spare vector was reused");
        let small: Vec<u64> = Vec::with_capacity(2);
        let decoded = Chunk::decode_into(&mut Reader::new(&bytes), small).unwrap();
        assert_eq!(decoded.tasks, [3, 1, 4]);
        let plain: Chunk<u64> = codec::decode(&bytes).unwrap();
        assert_eq!(plain.tasks, [3, 1, 4]);
    }
}
