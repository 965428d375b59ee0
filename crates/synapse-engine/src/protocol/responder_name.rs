//! A responder's name in its plain echo answers. One request to a
//! multicast group draws an answer from every member; the client tells
//! them apart by the name each puts in its answer (`synapse server
//! --name`), not only by the address it comes from: two reflectors on one
//! host answer from one address, and a host may answer from another
//! address than last time.
//!
//! A request that asks carries, after the sequence number and the run's
//! token, eight octets `SYN?NAME` and sixteen free ones. A Synapse
//! reflector with a name writes `SYN=NAME` over the first eight and its
//! name (UTF-8, zero-padded) into the sixteen; one without a name, or any
//! other RFC 862 echo server, returns them as they came, and the client
//! knows that responder by its address alone. Nothing else changes: the
//! answer is as long as the request.

/// Octets of a name.
pub const NAME_LEN: usize = 16;
/// Where the question starts: after the sequence number and the token.
const AT: usize = 16;
/// The smallest request that can ask.
pub const NAMED_SIZE: usize = AT + 8 + NAME_LEN;

const ASK: [u8; 8] = *b"SYN?NAME";
const TOLD: [u8; 8] = *b"SYN=NAME";

/// A responder's name: 1 to 16 octets of UTF-8, no NUL.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub struct ResponderName([u8; NAME_LEN]);

impl ResponderName {
    /// The name as text.
    pub fn as_str(&self) -> &str {
        let len = self.0.iter().position(|&b| b == 0).unwrap_or(NAME_LEN);
        std::str::from_utf8(&self.0[..len]).unwrap_or("?")
    }

    /// The name's octets, zero-padded.
    pub fn octets(&self) -> &[u8; NAME_LEN] {
        &self.0
    }

    /// A name read off the wire: `None` when empty or not UTF-8.
    pub fn from_octets(octets: &[u8]) -> Option<Self> {
        let mut name = [0u8; NAME_LEN];
        let n = octets.len().min(NAME_LEN);
        name[..n].copy_from_slice(&octets[..n]);
        let out = Self(name);
        let len = name.iter().position(|&b| b == 0).unwrap_or(NAME_LEN);
        (len > 0 && std::str::from_utf8(&name[..len]).is_ok()).then_some(out)
    }
}

impl std::fmt::Display for ResponderName {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

impl std::str::FromStr for ResponderName {
    type Err = String;

    fn from_str(s: &str) -> Result<Self, String> {
        if s.is_empty() || s.len() > NAME_LEN || s.contains('\0') {
            return Err(format!(
                "'{s}' is not a responder name: 1 to {NAME_LEN} bytes, no NUL"
            ));
        }
        let mut name = [0u8; NAME_LEN];
        name[..s.len()].copy_from_slice(s.as_bytes());
        Ok(Self(name))
    }
}

/// Makes a request ask for the responder's name (it must hold
/// [`NAMED_SIZE`] octets; a shorter one is left as it is).
pub fn ask(request: &mut [u8]) {
    if let Some(q) = request.get_mut(AT..NAMED_SIZE) {
        q[..8].copy_from_slice(&ASK);
        q[8..].fill(0);
    }
}

/// A reflector answers a request that asks with its name, in place.
/// Returns whether it did.
#[inline]
pub fn tell(datagram: &mut [u8], name: &ResponderName) -> bool {
    match datagram.get_mut(AT..NAMED_SIZE) {
        Some(q) if q[..8] == ASK => {
            q[..8].copy_from_slice(&TOLD);
            q[8..].copy_from_slice(&name.0);
            true
        }
        _ => false,
    }
}

/// The name an answer carries, if its responder told one.
#[inline]
pub fn told(reply: &[u8]) -> Option<ResponderName> {
    let q = reply.get(AT..NAMED_SIZE)?;
    if q[..8] != TOLD {
        return None;
    }
    ResponderName::from_octets(&q[8..])
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    #[test]
    fn a_named_reflector_tells_a_request_that_asks_and_only_that() {
        let name: ResponderName = "r2".parse().unwrap();
        let mut req = vec![7u8; 48];
        assert!(!tell(&mut req.clone(), &name), "not asked");
        ask(&mut req);
        let mut answer = req.clone();
        assert!(tell(&mut answer, &name));
        assert_eq!(told(&answer).unwrap().as_str(), "r2");
        assert_eq!(told(&req), None, "a plain echo returns the question");
        assert_eq!(answer.len(), req.len());
        assert_eq!(answer[..16], req[..16], "sequence and token untouched");
        assert_eq!(answer[40..], req[40..], "padding untouched");
        let mut short = vec![0u8; 39];
        ask(&mut short);
        assert!(short.iter().all(|&b| b == 0), "too short to ask");
        assert!(!tell(&mut short, &name));
    }

    #[test]
    fn names_are_one_to_sixteen_bytes() {
        assert!("".parse::<ResponderName>().is_err());
        assert!("a".repeat(17).parse::<ResponderName>().is_err());
        let n: ResponderName = "sixteen-bytes-ok".parse().unwrap();
        assert_eq!(n.to_string(), "sixteen-bytes-ok");
        assert_eq!(ResponderName::from_octets(&[0; 16]), None);
        assert_eq!(ResponderName::from_octets(&[0xff, 0xfe]), None, "not UTF-8");
    }
}
