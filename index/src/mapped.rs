//! What the build's own mapped files (`passages.bin`, `runs.bin`) share: mapping one through
//! tantivy's `MmapDirectory` (safe API, no `unsafe` of ours), the header every such file opens
//! with, and little-endian reads that answer `None` past the end instead of panicking.

use std::path::Path;
use tantivy::directory::{Directory, MmapDirectory, OwnedBytes};

/// Maps `name` in `dir`; an error names the file.
pub fn map(dir: &Path, name: &str) -> Result<OwnedBytes, String> {
    let directory = MmapDirectory::open(dir).map_err(|e| format!("{name}: {e}"))?;
    directory
        .open_read(Path::new(name))
        .map_err(|e| format!("{name}: {e}"))?
        .read_bytes()
        .map_err(|e| format!("{name}: {e}"))
}

/// Checks that `data` opens with `magic`, and returns the record count that follows it and
/// where the table of `count` records of `record` bytes after a `header`-byte header ends (it
/// must lie inside the file). `damaged` words the refusal.
pub fn records(
    data: &[u8],
    magic: &[u8; 8],
    header: usize,
    record: usize,
    damaged: impl Fn(&str) -> String,
) -> Result<(u64, usize), String> {
    if data.len() < header || &data[..8] != magic {
        return Err(damaged("it does not start with the expected magic"));
    }
    let count = u64_at(data, 8).unwrap_or(u64::MAX);
    let end = usize::try_from(count)
        .ok()
        .and_then(|c| c.checked_mul(record))
        .and_then(|r| r.checked_add(header))
        .filter(|end| *end <= data.len())
        .ok_or_else(|| damaged("the record table is longer than the file"))?;
    Ok((count, end))
}

/// The little-endian u64 at `at`.
pub fn u64_at(data: &[u8], at: usize) -> Option<u64> {
    Some(u64::from_le_bytes(data.get(at..at + 8)?.try_into().ok()?))
}

/// The little-endian u32 at `at`.
pub fn u32_at(data: &[u8], at: usize) -> Option<u32> {
    Some(u32::from_le_bytes(data.get(at..at + 4)?.try_into().ok()?))
}
