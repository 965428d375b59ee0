//! Which transport carries the requests: UDP datagrams, or one TCP
//! connection (or one per transaction, `--connect-each`).

/// The transport a client measures over.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Transport {
    /// One datagram per request (the default).
    #[default]
    Udp,
    /// Request and response over a TCP connection.
    Tcp,
}

impl Transport {
    /// The names the command line and the configuration file take.
    pub const NAMES: [&'static str; 2] = ["udp", "tcp"];

    /// Its name.
    pub fn name(self) -> &'static str {
        match self {
            Transport::Udp => "udp",
            Transport::Tcp => "tcp",
        }
    }
}

impl std::fmt::Display for Transport {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

impl std::str::FromStr for Transport {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        match s {
            "udp" => Ok(Transport::Udp),
            "tcp" => Ok(Transport::Tcp),
            _ => Err(format!(
                "'{s}' is not a transport (expected one of: {})",
                Self::NAMES.join(", ")
            )),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_round_trip_and_others_are_refused() {
        for t in [Transport::Udp, Transport::Tcp] {
            assert_eq!(t.to_string().parse::<Transport>(), Ok(t));
        }
        assert_eq!(
            "sctp".parse::<Transport>().unwrap_err(),
            "'sctp' is not a transport (expected one of: udp, tcp)"
        );
        assert_eq!(Transport::default(), Transport::Udp);
    }
}
