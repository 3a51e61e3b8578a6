//! Messages on the wire: a message of up to [`INLINE`] bytes travels whole on the inline
//! communicator; a longer one is announced there (its tag with [`FOLLOWS`] set) and its body
//! follows on the bulk communicator in parts ([`super::parts`]).

use std::sync::Arc;
use std::time::{Duration, Instant};

use mpi::Tag;
use mpi::datatype::Equivalence;
use mpi::topology::{Communicator, Rank, SimpleCommunicator};

use super::parts::{self, PART};
use super::posted::{self, Posted, Received};
use super::ulfm;
use crate::error::{Error, Result};

/// Set in the tag of an announcement: the body follows on the bulk communicator.
pub(super) const FOLLOWS: Tag = 1 << 8;

/// The longest message sent whole; the receive buffer each process keeps has this size.
pub(super) const INLINE: usize = 64 * 1024;

/// The longest message whose send is expected to complete as soon as it is posted under
/// `async`. Open MPI sends a message up to its transport's eager limit (4 KiB on shared memory,
/// 64 KiB on TCP, header included) by copying it out; this stays well inside the smallest of
/// those limits. Such a send is tested once right after it is posted and its buffer is reused
/// at once; when it is not complete (the peer stopped reading and the transport's queue to it
/// is full) it is kept with the sends in progress like a long one, so no send ever waits.
pub(super) const EAGER: usize = 2 * 1024;

/// A run's two communicators.
pub(super) struct Comms {
    /// Whole messages and announcements.
    pub(super) inline: SimpleCommunicator,
    /// Bodies of announced messages, in parts.
    pub(super) bulk: SimpleCommunicator,
}

/// One end of a run's two communicators, with the receive buffer kept across messages.
pub(super) struct Endpoint {
    pub(super) comms: Comms,
    pub(super) inbox: Vec<u8>,
}

/// Where a received message's bytes are.
pub(super) enum Body {
    /// The first bytes of the endpoint's buffer.
    Inline(usize),
    /// A body that followed its announcement.
    Bulk(Vec<u8>),
}

/// A message received: its sender, tag and body.
pub(super) type Incoming = (Rank, Tag, Body);

impl Endpoint {
    /// `world` and a duplicate of it (a collective call: every rank makes it together), both
    /// returning errors rather than aborting the job when a peer is gone.
    pub(super) fn new(world: SimpleCommunicator) -> Self {
        let bulk = world.duplicate();
        posted::errors_return(&world);
        posted::errors_return(&bulk);
        Endpoint {
            comms: Comms {
                inline: world,
                bulk,
            },
            inbox: vec![0; INLINE],
        }
    }

    #[inline]
    pub(super) fn bytes<'a>(&'a self, body: &'a Body) -> &'a [u8] {
        match body {
            Body::Inline(len) => &self.inbox[..*len],
            Body::Bulk(bytes) => bytes,
        }
    }
}

/// Waits for the next message from `from` (any rank when `None`) into `inbox`, the body of a
/// long one on `bulk`. `keep_waiting(None)` is asked between tests for the message (and does
/// the waiting), `keep_waiting(Some(rank))` between tests for the parts of a body from `rank`;
/// `Ok(None)` when it said to stop.
pub(super) fn receive(
    comms: &Comms,
    inbox: &mut Vec<u8>,
    from: Option<Rank>,
    mut keep_waiting: impl FnMut(Option<Rank>) -> bool,
) -> Result<Option<Incoming>> {
    let Heard::Head(head) = receive_head(comms, inbox, from, || keep_waiting(None))? else {
        return Ok(None);
    };
    Ok(
        match receive_rest(comms, inbox, head, None, keep_waiting)? {
            Rest::Whole(incoming) => Some(incoming),
            Rest::GaveUp | Rest::Stalled { .. } => None,
        },
    )
}

/// The pace a part of a long message is given to come at, on top of the patience: a slow
/// network's (10 MB/s), so that only a sender that stopped sending runs out of it.
const SLOW_PACE: f64 = 10e6;

/// What came of waiting for the rest of a long message.
pub(super) enum Rest {
    /// The whole message.
    Whole(Incoming),
    /// The caller said to stop waiting, or the sender failed.
    GaveUp,
    /// A part did not come within the patience given (and its time at [`SLOW_PACE`]): its
    /// sender stopped in the middle of the message. Without a bound the receiver would wait for
    /// as long as the sender is stopped, since a part beyond the transport's eager limit moves
    /// only while the sender's MPI makes progress (TCP's rendezvous).
    Stalled { rank: Rank, waited: Duration },
}

/// A message's first part, in the endpoint's buffer: the whole of a short message, or the
/// announcement of a long one.
#[derive(Debug, Clone, Copy)]
pub(super) struct Head {
    pub(super) rank: Rank,
    /// With [`FOLLOWS`] set for an announcement.
    pub(super) tag: Tag,
    pub(super) len: usize,
}

/// What came of waiting for the first part of a message.
pub(super) enum Heard {
    /// The first part, in the endpoint's buffer.
    Head(Head),
    /// The caller said to stop waiting, or a failure MPI reported (ULFM) ended the wait.
    Nothing,
    /// A message from this rank was lost: its process failed (ULFM) as it was received. A
    /// later message of the rank may still come, out of order: the rank is to be given up.
    Lost(Rank),
}

/// Waits for the first part of the next message from `from` (any rank when `None`) into
/// `inbox`, asking `keep_waiting` between tests.
pub(super) fn receive_head(
    comms: &Comms,
    inbox: &mut Vec<u8>,
    from: Option<Rank>,
    keep_waiting: impl FnMut() -> bool,
) -> Result<Heard> {
    let whole = 0..inbox.len();
    let status = match posted::receive(&comms.inline, from, None, inbox, whole, keep_waiting) {
        Received::Message(status) => status,
        Received::GaveUp => return Ok(Heard::Nothing),
        Received::Dropped(rank) => {
            ulfm::acknowledge(&comms.inline);
            return Ok(Heard::Lost(rank));
        }
        Received::Failed(code) if ulfm::process_failed(code) => {
            ulfm::acknowledge(&comms.inline);
            return Ok(Heard::Nothing);
        }
        Received::Failed(code) => return Err(failed(code)),
    };
    let (rank, tag) = (status.source_rank(), status.tag());
    let len = usize::try_from(status.count(u8::equivalent_datatype())).unwrap_or(0);
    Ok(Heard::Head(Head { rank, tag, len }))
}

/// The message `head` begins: a short one is whole in `inbox` already; the body of a long one
/// is received on `bulk`, asking `keep_waiting(Some(rank))` between tests, each part for at
/// most `patience` (when given) plus its time at [`SLOW_PACE`].
pub(super) fn receive_rest(
    comms: &Comms,
    inbox: &[u8],
    head: Head,
    patience: Option<Duration>,
    mut keep_waiting: impl FnMut(Option<Rank>) -> bool,
) -> Result<Rest> {
    let Head { rank, tag, len } = head;
    if tag & FOLLOWS == 0 {
        return Ok(Rest::Whole((rank, tag, Body::Inline(len))));
    }
    let tag = tag & !FOLLOWS;
    let total = parts::announced(&inbox[..len.min(inbox.len())]).ok_or_else(|| {
        Error::backend(format!(
            "rank {rank} announced a message without its length"
        ))
    })?;
    // Zeroed pages come from the system untouched, so a large body costs no extra pass.
    let mut body = vec![0u8; total];
    for range in parts::parts(total, PART) {
        let expected = range.len();
        let bound = patience.map(|p| p + Duration::from_secs_f64(expected as f64 / SLOW_PACE));
        let started = bound.map(|_| Instant::now());
        let mut stalled = false;
        match posted::receive(&comms.bulk, Some(rank), Some(tag), &mut body, range, || {
            stalled = started
                .zip(bound)
                .is_some_and(|(started, bound)| started.elapsed() > bound);
            !stalled && keep_waiting(Some(rank))
        }) {
            Received::Message(status)
                if status.count(u8::equivalent_datatype()) as usize == expected => {}
            Received::Message(status) => {
                return Err(Error::backend(format!(
                    "rank {rank} sent a part of {} bytes where {expected} were announced",
                    status.count(u8::equivalent_datatype())
                )));
            }
            Received::GaveUp if stalled => {
                let waited = started.map_or(Duration::ZERO, |s| s.elapsed());
                return Ok(Rest::Stalled { rank, waited });
            }
            Received::GaveUp | Received::Dropped(_) => return Ok(Rest::GaveUp),
            Received::Failed(code) if ulfm::process_failed(code) => {
                ulfm::acknowledge(&comms.inline);
                return Ok(Rest::GaveUp);
            }
            Received::Failed(code) => return Err(failed(code)),
        }
    }
    Ok(Rest::Whole((rank, tag, Body::Bulk(body))))
}

fn failed(code: std::os::raw::c_int) -> Error {
    Error::backend(format!("MPI failed a receive (error code {code})"))
}

/// Posts `bytes` to `rank`: whole, or their announcement (written into `header`) and their
/// parts; `synchronous` sends complete only once the receiver has them. The bytes of a short
/// message that need not be synchronous ([`EAGER`]) and was sent at once are handed back, for
/// the next message; otherwise `None`, the bytes held by the sends in `posted` until they
/// complete.
#[must_use = "the bytes of a message sent at once are handed back for reuse"]
pub(super) fn post_message(
    comms: &Comms,
    rank: Rank,
    tag: Tag,
    bytes: Outgoing,
    synchronous: bool,
    mut header: Vec<u8>,
    posted: &mut impl Extend<Posted>,
) -> Option<Outgoing> {
    let len = bytes.bytes().len();
    if !synchronous && len <= EAGER {
        // A send MPI refuses (its peer is gone) is complete at once: the message is dropped.
        let mut send = Posted::send(&comms.inline, rank, tag, bytes, 0..len, false);
        if send.test() {
            return Some(send.finish());
        }
        posted.extend([send]);
        return None;
    }
    if len <= INLINE {
        let whole = Posted::send(&comms.inline, rank, tag, bytes, 0..len, synchronous);
        posted.extend([whole]);
        return None;
    }
    header.clear();
    header.extend_from_slice(&parts::announcement(len));
    let header = Outgoing::Own(header);
    let tag_follows = tag | FOLLOWS;
    let header = Posted::send(&comms.inline, rank, tag_follows, header, 0..8, synchronous);
    posted.extend([header]);
    let body = bytes.into_shared();
    posted.extend(parts::parts(len, PART).map(|range| {
        let part = Outgoing::Shared(Arc::clone(&body));
        Posted::send(&comms.bulk, rank, tag, part, range, synchronous)
    }));
    None
}

/// Encoded bytes being sent: the shared part is encoded once for every worker, and a long
/// message is shared by its parts.
pub(super) enum Outgoing {
    Own(Vec<u8>),
    Shared(Arc<Vec<u8>>),
}

impl Outgoing {
    pub(super) fn bytes(&self) -> &[u8] {
        match self {
            Outgoing::Own(bytes) => bytes,
            Outgoing::Shared(bytes) => bytes,
        }
    }

    pub(super) fn into_shared(self) -> Arc<Vec<u8>> {
        match self {
            Outgoing::Own(bytes) => Arc::new(bytes),
            Outgoing::Shared(bytes) => bytes,
        }
    }
}
