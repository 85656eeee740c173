//! Just enough of the ZIP format to take named files out of a wheel (and the archive a wheel
//! may carry inside it): the central directory, stored and deflated entries, nothing else.
//!
//! An archive is input like any other, so every offset and size is checked against the bytes
//! before use, the inflated size is bounded by both the directory's word and the caller's
//! limit (a deflate bomb stops at the limit), and what the format allows but a wheel never
//! needs (ZIP64, encryption, a size known only after the data) is refused rather than guessed.

use std::collections::HashMap;

/// The archive could not be read as a wheel's ZIP, and why.
#[derive(Debug, thiserror::Error)]
#[error("{0}")]
pub struct ZipError(pub String);

fn bad(what: impl Into<String>) -> ZipError {
    ZipError(what.into())
}

/// Entries a directory may list.
const MAX_ENTRIES: usize = 100_000;
const END_SIGNATURE: u32 = 0x0605_4b50;
const CENTRAL_SIGNATURE: u32 = 0x0201_4b50;
const LOCAL_SIGNATURE: u32 = 0x0403_4b50;
const STORED: u16 = 0;
const DEFLATED: u16 = 8;

/// One entry as the central directory describes it.
#[derive(Debug, Clone, Copy)]
struct Entry {
    method: u16,
    compressed: usize,
    size: usize,
    local_header: usize,
}

/// An archive in memory and its directory.
pub struct Archive<'a> {
    bytes: &'a [u8],
    entries: HashMap<String, Entry>,
}

fn u16_at(b: &[u8], at: usize) -> Result<u16, ZipError> {
    b.get(at..at + 2)
        .map(|s| u16::from_le_bytes([s[0], s[1]]))
        .ok_or_else(|| bad("a header runs past the end of the archive"))
}

fn u32_at(b: &[u8], at: usize) -> Result<u32, ZipError> {
    b.get(at..at + 4)
        .map(|s| u32::from_le_bytes([s[0], s[1], s[2], s[3]]))
        .ok_or_else(|| bad("a header runs past the end of the archive"))
}

impl<'a> Archive<'a> {
    /// Reads the directory of `bytes`.
    pub fn open(bytes: &'a [u8]) -> Result<Archive<'a>, ZipError> {
        // The end record is 22 bytes plus a comment of at most 65,535.
        let earliest = bytes.len().saturating_sub(22 + 0xFFFF);
        let end = (earliest..bytes.len().saturating_sub(21))
            .rev()
            .find(|at| u32_at(bytes, *at).is_ok_and(|s| s == END_SIGNATURE))
            .ok_or_else(|| bad("no end-of-directory record: not a ZIP archive"))?;
        let count = usize::from(u16_at(bytes, end + 10)?);
        let start = u32_at(bytes, end + 16)? as usize;
        if count == 0xFFFF || start == 0xFFFF_FFFF {
            return Err(bad("a ZIP64 archive, which a wheel never needs"));
        }
        if count > MAX_ENTRIES {
            return Err(bad("more entries than an archive may list"));
        }
        let mut entries = HashMap::with_capacity(count);
        let mut at = start;
        for _ in 0..count {
            let (name, entry, next) = central_entry(bytes, at)?;
            entries.insert(name, entry);
            at = next;
        }
        Ok(Archive { bytes, entries })
    }

    /// The named entry's bytes, refused when they would be larger than `limit`.
    pub fn read(&self, name: &str, limit: usize) -> Result<Vec<u8>, ZipError> {
        let entry = self
            .entries
            .get(name)
            .ok_or_else(|| bad(format!("the archive holds no {name}")))?;
        if entry.size > limit {
            return Err(bad(format!(
                "{name} is larger than the {limit} bytes allowed"
            )));
        }
        let at = entry.local_header;
        if u32_at(self.bytes, at)? != LOCAL_SIGNATURE {
            return Err(bad(format!("the local header of {name} is damaged")));
        }
        let name_len = usize::from(u16_at(self.bytes, at + 26)?);
        let extra_len = usize::from(u16_at(self.bytes, at + 28)?);
        let data = at + 30 + name_len + extra_len;
        let raw = self
            .bytes
            .get(data..data + entry.compressed)
            .ok_or_else(|| bad(format!("the data of {name} runs past the archive")))?;
        let out = match entry.method {
            STORED => raw.to_vec(),
            DEFLATED => miniz_oxide::inflate::decompress_to_vec_with_limit(raw, entry.size)
                .map_err(|_| bad(format!("{name} does not inflate to its stated size")))?,
            _ => {
                return Err(bad(format!(
                    "{name} uses an unsupported compression method"
                )))
            }
        };
        if out.len() != entry.size {
            return Err(bad(format!("{name} does not inflate to its stated size")));
        }
        Ok(out)
    }
}

/// One central-directory record at `at`: its name, entry and where the next one starts.
fn central_entry(bytes: &[u8], at: usize) -> Result<(String, Entry, usize), ZipError> {
    if u32_at(bytes, at)? != CENTRAL_SIGNATURE {
        return Err(bad("the central directory is damaged"));
    }
    let flags = u16_at(bytes, at + 8)?;
    let method = u16_at(bytes, at + 10)?;
    let compressed = u32_at(bytes, at + 20)?;
    let size = u32_at(bytes, at + 24)?;
    let name_len = usize::from(u16_at(bytes, at + 28)?);
    let extra_len = usize::from(u16_at(bytes, at + 30)?);
    let comment_len = usize::from(u16_at(bytes, at + 32)?);
    let local_header = u32_at(bytes, at + 42)? as usize;
    let name = bytes
        .get(at + 46..at + 46 + name_len)
        .and_then(|n| std::str::from_utf8(n).ok())
        .ok_or_else(|| bad("an entry's name is not UTF-8 inside the archive"))?
        .to_owned();
    if flags & 0x1 != 0 {
        return Err(bad(format!("{name} is encrypted")));
    }
    if [compressed, size, local_header as u32].contains(&0xFFFF_FFFF) {
        return Err(bad("a ZIP64 entry, which a wheel never needs"));
    }
    if method != STORED && method != DEFLATED {
        return Err(bad(format!(
            "{name} uses a compression method other than stored or deflate"
        )));
    }
    let entry = Entry {
        method,
        compressed: compressed as usize,
        size: size as usize,
        local_header,
    };
    Ok((name, entry, at + 46 + name_len + extra_len + comment_len))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A one-entry archive, written by hand: local header, data, central record, end record.
    fn archive(name: &str, method: u16, data: &[u8], size: u32) -> Vec<u8> {
        let mut out = Vec::new();
        let push16 = |v: u16, out: &mut Vec<u8>| out.extend_from_slice(&v.to_le_bytes());
        let push32 = |v: u32, out: &mut Vec<u8>| out.extend_from_slice(&v.to_le_bytes());
        push32(LOCAL_SIGNATURE, &mut out);
        for v in [20, 0, method, 0, 0] {
            push16(v, &mut out);
        }
        for v in [0, data.len() as u32, size] {
            push32(v, &mut out);
        }
        push16(name.len() as u16, &mut out);
        push16(0, &mut out);
        out.extend_from_slice(name.as_bytes());
        out.extend_from_slice(data);
        let central = out.len() as u32;
        push32(CENTRAL_SIGNATURE, &mut out);
        for v in [20, 20, 0, method, 0, 0] {
            push16(v, &mut out);
        }
        for v in [0, data.len() as u32, size] {
            push32(v, &mut out);
        }
        for v in [name.len() as u16, 0, 0, 0, 0] {
            push16(v, &mut out);
        }
        push32(0, &mut out);
        push32(0, &mut out);
        out.extend_from_slice(name.as_bytes());
        let central_len = out.len() as u32 - central;
        push32(END_SIGNATURE, &mut out);
        for v in [0, 0, 1, 1] {
            push16(v, &mut out);
        }
        push32(central_len, &mut out);
        push32(central, &mut out);
        push16(0, &mut out);
        out
    }

    #[test]
    fn stored_and_deflated_entries_come_out_and_bombs_and_lies_do_not() {
        let stored = archive("a.txt", STORED, b"hello", 5);
        assert_eq!(
            Archive::open(&stored)
                .expect("open")
                .read("a.txt", 100)
                .expect("read"),
            b"hello"
        );
        let text = vec![b'x'; 10_000];
        let packed = miniz_oxide::deflate::compress_to_vec(&text, 6);
        let deflated = archive("b.bin", DEFLATED, &packed, 10_000);
        let zip = Archive::open(&deflated).expect("open");
        assert_eq!(zip.read("b.bin", 10_000).expect("read"), text);
        assert!(
            zip.read("b.bin", 9_999).is_err(),
            "the caller's limit holds"
        );
        assert!(zip.read("missing", 10).is_err());
        let understated = archive("c.bin", DEFLATED, &packed, 100);
        assert!(
            Archive::open(&understated)
                .expect("open")
                .read("c.bin", 1 << 20)
                .is_err(),
            "inflation stops at the stated size"
        );
        assert!(Archive::open(b"not a zip at all, just bytes").is_err());
        let mut cut = stored.clone();
        cut.truncate(10);
        assert!(Archive::open(&cut).is_err());
    }
}
