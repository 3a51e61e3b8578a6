//! The encodings only this backend needs: the shared part with its iteration index, and a
//! failed chunk.

use std::sync::Arc;

use super::super::{Failed, ToWorker};
use crate::codec::{self, DecodeError, DecodeErrorKind, Message, Reader};

pub(super) fn decode<T: Message>(bytes: &[u8]) -> std::result::Result<T, DecodeError> {
    codec::decode(bytes)
}

/// The iteration index (a varint) then the shared part, as `MpiMaster::send` writes them.
pub(super) fn decode_shared<T, S: Message>(
    bytes: &[u8],
) -> std::result::Result<ToWorker<T, S>, DecodeError> {
    let mut input = Reader::new(bytes);
    let index = input.read_varint("Shared")?;
    let iteration = usize::try_from(index)
        .map_err(|_| input.error(DecodeErrorKind::OutOfRange(index), "Shared"))?;
    let part = S::decode(&mut input).map_err(|e| e.in_field("Shared", "part"))?;
    input.finish("Shared")?;
    Ok(ToWorker::Shared {
        iteration,
        part: Arc::new(part),
    })
}

impl<T: Message> Message for Failed<T> {
    const MIN_ENCODED_LEN: usize = 1 + <Vec<T>>::MIN_ENCODED_LEN + 1;

    fn encoded_len(&self) -> usize {
        codec::varint_len(self.chunk) + self.tasks.encoded_len() + self.message.encoded_len()
    }

    fn encode(&self, out: &mut Vec<u8>) {
        codec::write_varint(out, self.chunk);
        self.tasks.encode(out);
        self.message.encode(out);
    }

    fn decode(input: &mut Reader<'_>) -> std::result::Result<Self, DecodeError> {
        Ok(Failed {
            chunk: input.read_varint("Failed")?,
            tasks: Vec::decode(input).map_err(|e| e.in_field("Failed", "tasks"))?,
            message: String::decode(input).map_err(|e| e.in_field("Failed", "message"))?,
        })
    }
}
