//! The protobuf wire format: keys, varints, fixed-width and length-delimited values.

use super::ProtoError;

/// How a field's value is laid out on the wire.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum WireType {
    /// A base-128 varint.
    Varint,
    /// Eight little-endian bytes.
    Fixed64,
    /// A varint length, then that many bytes.
    Len,
    /// Four little-endian bytes.
    Fixed32,
}

/// A cursor over one message's bytes.
#[derive(Debug)]
pub(crate) struct Reader<'a> {
    bytes: &'a [u8],
}

impl<'a> Reader<'a> {
    /// A reader at the start of `bytes`.
    pub(crate) fn new(bytes: &'a [u8]) -> Reader<'a> {
        Reader { bytes }
    }

    /// Whether every byte was read.
    pub(crate) fn is_empty(&self) -> bool {
        self.bytes.is_empty()
    }

    /// The next field's tag and wire type; `None` at the end of the message.
    pub(crate) fn key(&mut self) -> Result<Option<(u32, WireType)>, ProtoError> {
        if self.bytes.is_empty() {
            return Ok(None);
        }
        let key = self.varint()?;
        let wire = match key & 7 {
            0 => WireType::Varint,
            1 => WireType::Fixed64,
            2 => WireType::Len,
            5 => WireType::Fixed32,
            other => return Err(ProtoError::UnsupportedWireType(other)),
        };
        let tag = u32::try_from(key >> 3).map_err(|_| ProtoError::Varint)?;
        Ok(Some((tag, wire)))
    }

    /// A varint.
    pub(crate) fn varint(&mut self) -> Result<u64, ProtoError> {
        let mut value = 0u64;
        for i in 0..10 {
            let (&byte, rest) = self.bytes.split_first().ok_or(ProtoError::Truncated)?;
            self.bytes = rest;
            value |= u64::from(byte & 0x7f) << (7 * i);
            if byte & 0x80 == 0 {
                return Ok(value);
            }
        }
        Err(ProtoError::Varint)
    }

    /// Eight little-endian bytes.
    pub(crate) fn fixed64(&mut self) -> Result<u64, ProtoError> {
        let head = self.take(8)?;
        let mut buf = [0u8; 8];
        buf.copy_from_slice(head);
        Ok(u64::from_le_bytes(buf))
    }

    /// A length-delimited value's bytes.
    pub(crate) fn bytes(&mut self) -> Result<&'a [u8], ProtoError> {
        let len = usize::try_from(self.varint()?).map_err(|_| ProtoError::Truncated)?;
        self.take(len)
    }

    /// A length-delimited UTF-8 string.
    pub(crate) fn string(&mut self) -> Result<String, ProtoError> {
        String::from_utf8(self.bytes()?.to_vec()).map_err(ProtoError::Utf8)
    }

    /// Skips a value of the given wire type.
    pub(crate) fn skip(&mut self, wire: WireType) -> Result<(), ProtoError> {
        match wire {
            WireType::Varint => {
                self.varint()?;
            }
            WireType::Fixed64 => {
                self.take(8)?;
            }
            WireType::Len => {
                self.bytes()?;
            }
            WireType::Fixed32 => {
                self.take(4)?;
            }
        }
        Ok(())
    }

    fn take(&mut self, len: usize) -> Result<&'a [u8], ProtoError> {
        if self.bytes.len() < len {
            return Err(ProtoError::Truncated);
        }
        let (head, rest) = self.bytes.split_at(len);
        self.bytes = rest;
        Ok(head)
    }
}
