//! Whether a peer answers, and when it does not, why: in the live table,
//! the `--json` lines, `synapse_peer_up` and the summary on quitting. A
//! peer is up over a window when a probe had a timely reply in it; when
//! none did, the path's own word (an ICMP error, a TCP reset) names the
//! reason, else datagrams that came back but were no replies (a plain echo
//! server probed with STAMP echoes the request itself), else silence.

use super::window::Figures;

/// Whether the peer answered over the window (`None`: nothing was sent).
pub fn up(f: &Figures) -> Option<bool> {
    (f.sent > 0).then_some(f.rtt_p50_ns.is_some())
}

/// Why the peer did not answer over the window; `None` when it did (or
/// nothing was sent).
pub fn reason(f: &Figures) -> Option<String> {
    if up(f) != Some(false) {
        return None;
    }
    Some(if let Some(e) = f.last_error {
        format!("unreachable: {}", e.phrase())
    } else if f.stray > 0 && f.stray * 2 >= f.sent {
        "answers that are no replies (another protocol? STAMP to a plain echo server)".into()
    } else {
        "no reply".into()
    })
}

/// The reason, short, for a table cell: `port unreachable`, `no replies
/// of its kind`, `no reply`.
pub fn short_reason(f: &Figures) -> Option<&'static str> {
    reason(f)?;
    Some(if let Some(e) = f.last_error {
        e.kind.words()
    } else if f.stray > 0 && f.stray * 2 >= f.sent {
        "wrong protocol"
    } else {
        "no reply"
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use synapse_stats::{PathError, PathErrorKind};

    fn lost(n: u64) -> Figures {
        Figures {
            sent: n,
            lost: n,
            loss_percent: Some(100.0),
            ..Figures::default()
        }
    }

    #[test]
    fn a_silent_peer_is_down_with_the_paths_word_strays_or_silence() {
        assert_eq!(up(&Figures::default()), None, "nothing sent");
        let answered = Figures {
            sent: 10,
            rtt_p50_ns: Some(40_000),
            ..Figures::default()
        };
        assert_eq!((up(&answered), reason(&answered)), (Some(true), None));
        assert_eq!(reason(&lost(10)).as_deref(), Some("no reply"));
        let refused = Figures {
            path_errors: 10,
            last_error: Some(PathError {
                kind: PathErrorKind::PortUnreachable,
                from: "10.0.0.9".parse().ok(),
                mtu: None,
            }),
            ..lost(10)
        };
        assert_eq!(
            reason(&refused).as_deref(),
            Some("unreachable: port unreachable from 10.0.0.9")
        );
        assert_eq!(short_reason(&refused), Some("port unreachable"));
        let echoed = Figures {
            stray: 10,
            ..lost(10)
        };
        assert!(reason(&echoed).is_some_and(|r| r.starts_with("answers that are no replies")));
        assert_eq!(short_reason(&echoed), Some("wrong protocol"));
    }
}
