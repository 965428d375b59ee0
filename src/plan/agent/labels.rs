//! Topology labels: what discovery says of each host (rack, zone, role…),
//! and the allowed few that reach the series.
//!
//! A host's labels come from its peers-file table (`label = ["rack=r1"]`),
//! from its name (`--label-from-name rack=2`: the second dot-separated
//! part of `h7.r3.fleet.test` is `r3`), or, for this host, from `--label`.
//! Only the keys in `--series-label` are put on series, as `source_KEY`
//! (this host's value) and `peer_KEY` (the peer's): each key multiplies a
//! Prometheus' series by nothing (a host has one rack), but an unbounded
//! set of keys would let discovery invent labels.

pub use super::Labels;
pub use crate::cli::agent::{label_key, label_pair, name_rule};

/// Labels read off a host name by the rules: `h7.r3.fleet.test` with
/// `rack=2` is rack `r3`. A name with too few parts gets no such label.
pub fn from_name(name: &str, rules: &[(String, usize)]) -> Labels {
    let parts: Vec<&str> = name.trim_end_matches('.').split('.').collect();
    rules
        .iter()
        .filter_map(|(k, f)| {
            let v = parts.get(f - 1).filter(|v| !v.is_empty())?;
            Some((k.clone(), (*v).to_string()))
        })
        .collect()
}

/// The label pairs a peer's series carry: for each allowed key, this
/// host's value and the peer's (empty when one has none: Prometheus reads
/// an empty value as no label).
pub fn series_pairs(allowed: &[String], source: &Labels, peer: &Labels) -> Vec<(String, String)> {
    let value = |l: &Labels, k: &String| l.get(k).cloned().unwrap_or_default();
    let mut out = Vec::with_capacity(allowed.len() * 2);
    for k in allowed {
        out.push((format!("source_{k}"), value(source, k)));
    }
    for k in allowed {
        out.push((format!("peer_{k}"), value(peer, k)));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_and_pairs_are_checked() {
        assert_eq!(label_pair("rack=r1").unwrap(), ("rack".into(), "r1".into()));
        assert!(label_pair("rack").unwrap_err().contains("KEY=VALUE"));
        assert!(
            label_pair("1rack=x")
                .unwrap_err()
                .contains("not a label name")
        );
        assert!(label_pair("ra-ck=x").is_err());
        assert!(
            label_pair("__name__=x")
                .unwrap_err()
                .contains("Prometheus' own")
        );
        // Empty: no label (an environment variable left empty).
        assert_eq!(label_pair("rack=").unwrap(), ("rack".into(), String::new()));
    }

    #[test]
    fn a_name_rule_picks_a_dotted_part() {
        let rules = vec![name_rule("rack=2").unwrap(), name_rule("zone=3").unwrap()];
        let l = from_name("h7.r3.z1.fleet.test.", &rules);
        assert_eq!(l.get("rack").map(String::as_str), Some("r3"));
        assert_eq!(l.get("zone").map(String::as_str), Some("z1"));
        assert!(
            from_name("h7", &rules).is_empty(),
            "too few parts: no label"
        );
        assert!(name_rule("rack=0").is_err());
        assert!(name_rule("rack").unwrap_err().contains("KEY=FIELD"));
    }

    #[test]
    fn series_carry_source_and_peer_values_of_the_allowed_keys_only() {
        let me = Labels::from([("rack".into(), "r1".into()), ("role".into(), "db".into())]);
        let peer = Labels::from([("rack".into(), "r2".into())]);
        let allowed = vec!["rack".to_string(), "zone".to_string()];
        assert_eq!(
            series_pairs(&allowed, &me, &peer),
            [
                ("source_rack".to_string(), "r1".to_string()),
                ("source_zone".into(), String::new()),
                ("peer_rack".into(), "r2".into()),
                ("peer_zone".into(), String::new()),
            ]
        );
        assert!(series_pairs(&[], &me, &peer).is_empty());
    }
}
