//! The safetensors container: an 8-byte little-endian header length, a JSON header naming each
//! tensor's type, shape and byte range, then the raw data. Read by hand because the format is
//! that small; every length, range and shape is checked against the file before a byte of it is
//! used, since a model file is input like any other.

use crate::EmbedError;
use serde_json::Value;
use std::collections::HashMap;

/// The largest header read; real headers are tens of kilobytes.
const MAX_HEADER: u64 = 16 * 1024 * 1024;

/// One tensor's place in the data section.
#[derive(Debug, Clone)]
struct Entry {
    dtype: String,
    shape: Vec<usize>,
    start: usize,
    end: usize,
}

/// A parsed file: the bytes and the table of tensors in them.
#[derive(Debug)]
pub struct Tensors {
    bytes: Vec<u8>,
    data_start: usize,
    entries: HashMap<String, Entry>,
}

fn damaged(rule: &str) -> EmbedError {
    EmbedError::Damaged(format!("model.safetensors: {rule}"))
}

impl Tensors {
    /// Parses the header of `bytes` (the whole file) and checks every range lies in the data.
    pub fn parse(bytes: Vec<u8>) -> Result<Tensors, EmbedError> {
        let length: [u8; 8] = bytes
            .get(..8)
            .and_then(|b| b.try_into().ok())
            .ok_or_else(|| damaged("shorter than its 8-byte header length"))?;
        let header_len = u64::from_le_bytes(length);
        if header_len > MAX_HEADER || header_len > (bytes.len() as u64).saturating_sub(8) {
            return Err(damaged(
                "the header length runs past the file or the 16 MiB bound",
            ));
        }
        let data_start = 8 + header_len as usize;
        let header: Value = serde_json::from_slice(&bytes[8..data_start])
            .map_err(|_| damaged("the header is not JSON"))?;
        let table = header
            .as_object()
            .ok_or_else(|| damaged("the header is not a JSON object"))?;
        let data_len = bytes.len() - data_start;
        let mut entries = HashMap::new();
        for (name, value) in table.iter().filter(|(n, _)| *n != "__metadata__") {
            entries.insert(name.clone(), entry(name, value, data_len)?);
        }
        Ok(Tensors {
            bytes,
            data_start,
            entries,
        })
    }

    /// The named tensor as `f32`s, refused unless it is stored as F32 with exactly `shape`.
    pub fn f32s(&self, name: &str, shape: &[usize]) -> Result<Vec<f32>, EmbedError> {
        let e = self
            .entries
            .get(name)
            .ok_or_else(|| damaged(&format!("the tensor {name} is missing")))?;
        if e.dtype != "F32" || e.shape != shape {
            return Err(damaged(&format!(
                "the tensor {name} is {} {:?}, not F32 {shape:?}",
                e.dtype, e.shape
            )));
        }
        let data = &self.bytes[self.data_start + e.start..self.data_start + e.end];
        Ok(data
            .chunks_exact(4)
            .map(|c| f32::from_le_bytes([c[0], c[1], c[2], c[3]]))
            .collect())
    }
}

fn entry(name: &str, value: &Value, data_len: usize) -> Result<Entry, EmbedError> {
    let bad = |what: &str| damaged(&format!("the tensor {name}: {what}"));
    let dtype = value["dtype"]
        .as_str()
        .ok_or_else(|| bad("no dtype"))?
        .to_owned();
    let shape: Vec<usize> = value["shape"]
        .as_array()
        .filter(|s| s.len() <= 8)
        .ok_or_else(|| bad("no shape of at most 8 dimensions"))?
        .iter()
        .map(|d| d.as_u64().and_then(|d| usize::try_from(d).ok()))
        .collect::<Option<_>>()
        .ok_or_else(|| bad("a dimension is not a size"))?;
    let offsets = value["data_offsets"]
        .as_array()
        .filter(|o| o.len() == 2)
        .ok_or_else(|| bad("data_offsets is not a pair"))?;
    let at = |i: usize| offsets[i].as_u64().and_then(|o| usize::try_from(o).ok());
    let (Some(start), Some(end)) = (at(0), at(1)) else {
        return Err(bad("data_offsets are not sizes"));
    };
    if start > end || end > data_len {
        return Err(bad("its bytes lie outside the file"));
    }
    let width = match dtype.as_str() {
        "F32" | "I32" | "U32" => 4,
        "F64" | "I64" | "U64" => 8,
        "F16" | "BF16" | "I16" | "U16" => 2,
        _ => 1,
    };
    let elements = shape
        .iter()
        .try_fold(1usize, |n, d| n.checked_mul(*d))
        .and_then(|n| n.checked_mul(width));
    if elements != Some(end - start) {
        return Err(bad("its byte range does not hold its shape"));
    }
    Ok(Entry {
        dtype,
        shape,
        start,
        end,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn file(header: &str, data: &[u8]) -> Vec<u8> {
        let mut out = (header.len() as u64).to_le_bytes().to_vec();
        out.extend_from_slice(header.as_bytes());
        out.extend_from_slice(data);
        out
    }

    #[test]
    fn a_tensor_reads_back_and_every_lie_in_the_header_is_refused() {
        let data: Vec<u8> = [1.5f32, -2.0]
            .iter()
            .flat_map(|f| f.to_le_bytes())
            .collect();
        let good = file(
            r#"{"w":{"dtype":"F32","shape":[2],"data_offsets":[0,8]}}"#,
            &data,
        );
        let t = Tensors::parse(good).expect("parse");
        assert_eq!(t.f32s("w", &[2]).expect("w"), [1.5, -2.0]);
        assert!(t.f32s("w", &[1, 2]).is_err(), "shape checked");
        assert!(t.f32s("x", &[2]).is_err(), "missing");
        for header in [
            r#"{"w":{"dtype":"F32","shape":[2],"data_offsets":[0,16]}}"#,
            r#"{"w":{"dtype":"F32","shape":[3],"data_offsets":[0,8]}}"#,
            r#"{"w":{"dtype":"F32","shape":[4611686018427387904,4],"data_offsets":[0,8]}}"#,
            r#"{"w":{"dtype":"F32","shape":[2],"data_offsets":[8,0]}}"#,
            r#"[1]"#,
        ] {
            assert!(Tensors::parse(file(header, &data)).is_err(), "{header}");
        }
        let mut huge = u64::MAX.to_le_bytes().to_vec();
        huge.extend_from_slice(b"{}");
        assert!(Tensors::parse(huge).is_err());
        assert!(Tensors::parse(vec![1, 2]).is_err());
    }
}
