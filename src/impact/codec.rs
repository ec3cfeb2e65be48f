//! The impact index's bytes: length-prefixed fields after a magic and a checksum, so an index
//! torn by a crash, damaged on disk or written by another version reads as nothing (and is
//! rebuilt), never as wrong postings. Hand-rolled because it is read on every `fix impact`:
//! a few megabytes parsed in milliseconds, with no framework to load.

/// The first bytes of an index file of this layout; another layout is rebuilt.
pub const MAGIC: &[u8; 8] = b"ONGIMP04";

/// Builds a file's bytes.
pub struct Writer {
    body: Vec<u8>,
}

impl Writer {
    pub fn new() -> Self {
        Self { body: Vec::with_capacity(1 << 16) }
    }

    pub fn u32(&mut self, v: u32) {
        self.body.extend_from_slice(&v.to_le_bytes());
    }

    pub fn u64(&mut self, v: u64) {
        self.body.extend_from_slice(&v.to_le_bytes());
    }

    pub fn str(&mut self, s: &str) {
        self.len(s.len());
        self.body.extend_from_slice(s.as_bytes());
    }

    /// A count: lengths beyond `u32` never occur in an index (it would be gigabytes).
    pub fn len(&mut self, n: usize) {
        self.u32(u32::try_from(n).unwrap_or(u32::MAX));
    }

    /// The whole file: magic, checksum, body.
    pub fn finish(self) -> Vec<u8> {
        let mut out = Vec::with_capacity(self.body.len() + 16);
        out.extend_from_slice(MAGIC);
        out.extend_from_slice(&checksum(&self.body).to_le_bytes());
        out.extend_from_slice(&self.body);
        out
    }
}

/// Reads a file's bytes; every read is bounds-checked and says `None` past the end.
pub struct Reader<'a> {
    rest: &'a [u8],
}

impl<'a> Reader<'a> {
    /// The body of `bytes`, if they are a whole index of this layout.
    pub fn open(bytes: &'a [u8]) -> Option<Self> {
        let rest = bytes.strip_prefix(MAGIC.as_slice())?;
        let (sum, body) = rest.split_first_chunk::<8>()?;
        (u64::from_le_bytes(*sum) == checksum(body)).then_some(Self { rest: body })
    }

    fn take(&mut self, n: usize) -> Option<&'a [u8]> {
        if n > self.rest.len() {
            return None;
        }
        let (head, tail) = self.rest.split_at(n);
        self.rest = tail;
        Some(head)
    }

    pub fn u32(&mut self) -> Option<u32> {
        Some(u32::from_le_bytes(self.take(4)?.try_into().ok()?))
    }

    pub fn u64(&mut self) -> Option<u64> {
        Some(u64::from_le_bytes(self.take(8)?.try_into().ok()?))
    }

    /// A count, no larger than the bytes left could hold at `each` bytes an item (a damaged
    /// count must not make a huge allocation).
    pub fn len(&mut self, each: usize) -> Option<usize> {
        let n = self.u32()? as usize;
        (n.saturating_mul(each.max(1)) <= self.rest.len()).then_some(n)
    }

    pub fn str(&mut self) -> Option<&'a str> {
        let n = self.len(1)?;
        std::str::from_utf8(self.take(n)?).ok()
    }

    pub fn is_done(&self) -> bool {
        self.rest.is_empty()
    }
}

/// FNV-1a over eight bytes at a time: fast, and any torn or flipped byte changes it.
fn checksum(bytes: &[u8]) -> u64 {
    const PRIME: u64 = 0x0000_0100_0000_01b3;
    let mut hash: u64 = 0xcbf2_9ce4_8422_2325 ^ bytes.len() as u64;
    let mut chunks = bytes.chunks_exact(8);
    for chunk in &mut chunks {
        let mut word = [0u8; 8];
        word.copy_from_slice(chunk);
        hash = (hash ^ u64::from_le_bytes(word)).wrapping_mul(PRIME);
        hash ^= hash >> 29;
    }
    for &b in chunks.remainder() {
        hash = (hash ^ u64::from(b)).wrapping_mul(PRIME);
    }
    hash
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn what_is_written_reads_back_and_any_damage_reads_as_nothing() {
        let mut w = Writer::new();
        w.str("ballpark ✓");
        w.u32(7);
        w.u64(1 << 40);
        let bytes = w.finish();
        let mut r = Reader::open(&bytes).expect("whole");
        assert_eq!((r.str(), r.u32(), r.u64()), (Some("ballpark ✓"), Some(7), Some(1 << 40)));
        assert!(r.is_done());
        assert_eq!(r.u32(), None, "past the end");
        for cut in [0, 5, 16, bytes.len() - 1] {
            assert!(Reader::open(&bytes[..cut]).is_none(), "torn at {cut}");
        }
        for i in 0..bytes.len() {
            let mut flipped = bytes.clone();
            flipped[i] ^= 0x10;
            assert!(Reader::open(&flipped).is_none(), "byte {i} flipped");
        }
        // A count larger than the bytes left is refused before anything is allocated.
        let mut w = Writer::new();
        w.u32(u32::MAX);
        let bytes = w.finish();
        assert_eq!(Reader::open(&bytes).expect("whole").len(8), None);
    }
}
