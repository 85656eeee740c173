//! New ULIDs: 48 bits of milliseconds and 80 random bits in Crockford base32, so ids sort by
//! creation time (index builds, and later proposals).

const ALPHABET: &[u8; 32] = b"0123456789ABCDEFGHJKMNPQRSTVWXYZ";

/// `n` fresh ULIDs from one instant, each the previous plus one, so they sort in the order
/// they were minted (a proposal, then its migration, then its revision).
pub fn monotonic(n: usize) -> Vec<String> {
    let first = value();
    (0..n as u128)
        .map(|i| encode(first.wrapping_add(i)))
        .collect()
}

/// A fresh ULID.
pub fn new() -> String {
    encode(value())
}

fn value() -> u128 {
    let millis = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_millis())
        .unwrap_or(0);
    let mut random = [0u8; 10];
    let _ = getrandom::fill(&mut random);
    let mut value: u128 = millis << 80;
    for (i, b) in random.iter().enumerate() {
        value |= (*b as u128) << (8 * (9 - i));
    }
    // The random part's top bit stays clear, so incrementing never carries into the time.
    value & !(1u128 << 79)
}

fn encode(value: u128) -> String {
    (0..26)
        .rev()
        .map(|i| ALPHABET[((value >> (5 * i)) & 31) as usize] as char)
        .collect()
}

#[cfg(test)]
mod tests {
    #[test]
    fn ulids_are_26_crockford_characters_and_sort_by_time() {
        let a = super::new();
        std::thread::sleep(std::time::Duration::from_millis(2));
        let b = super::new();
        assert_eq!(a.len(), 26);
        assert!(a.chars().all(|c| super::ALPHABET.contains(&(c as u8))));
        assert!(a < b);
        assert!(a.as_bytes()[0] <= b'7');
        let run = super::monotonic(3);
        assert!(run[0] < run[1] && run[1] < run[2] && run[0][..10] == run[2][..10]);
    }
}
