//! Random values that stand for a right: the tickets a gateway gives a
//! caller's node, the secrets that prove a message came from that gateway,
//! and the nonces that pair a ticket with the request for it.
//!
//! 128 bits from the operating system's generator, as 32 hex digits, since
//! they cross inside JSON.

use super::wire::RemoteError;

/// A fresh random token of 32 hex digits.
pub(crate) fn fresh() -> Result<String, RemoteError> {
    let mut bytes = [0u8; 16];
    getrandom::fill(&mut bytes).map_err(|e| RemoteError::NotAdmitted {
        reason: format!("no randomness from the operating system: {e}"),
    })?;
    Ok(bytes.iter().map(|b| format!("{b:02x}")).collect())
}

/// `a == b` in time that depends on the lengths only, not on where they
/// first differ.
pub(crate) fn same(a: &str, b: &str) -> bool {
    a.len() == b.len()
        && a.bytes()
            .zip(b.bytes())
            .fold(0u8, |acc, (x, y)| acc | (x ^ y))
            == 0
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tokens_are_32_hex_digits_and_differ() {
        let (a, b) = (fresh().unwrap(), fresh().unwrap());
        assert_eq!(a.len(), 32);
        assert!(a.bytes().all(|c| c.is_ascii_hexdigit()));
        assert_ne!(a, b);
        assert!(same(&a, &a.clone()));
        assert!(!same(&a, &b));
        assert!(!same(&a, &a[..31]));
    }
}
