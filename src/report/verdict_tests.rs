use super::*;
use synapse_stats::{Record, RecordKind};

/// 100 replies of `rtt`, one of `slow`, then `lost` lost and `late` late.
fn run(rtt: u64, slow: u64, lost: u64, late: u64) -> (Stats, Summary) {
    let mut stats = Stats::new();
    let mut seq = 0;
    for r in std::iter::repeat_n(rtt, 100).chain([slow]) {
        stats.record(&Record::sample(seq, 0, r, false));
        seq += 1;
    }
    for _ in 0..lost + late {
        stats.record(&Record::event(RecordKind::Lost, seq, 0, false));
        seq += 1;
    }
    for s in 0..late {
        stats.record(&Record::event(
            RecordKind::Late { reordered: false },
            101 + s,
            0,
            false,
        ));
    }
    let summary = Summary::from_stats(&stats, Duration::from_secs(1));
    (stats, summary)
}

fn t(s: &str) -> Threshold {
    s.parse().unwrap()
}

#[test]
fn loss_counts_lost_and_late_of_sent() {
    let (stats, s) = run(50_000, 90_000, 1, 1);
    assert_eq!(s.packets.sent, 103);
    let limits = |loss_percent| Limits {
        loss_percent: Some(loss_percent),
        ..Limits::none()
    };
    let v = Verdict::judge(&stats, &s, &[t("1ms")], limits(1.0), None);
    assert!(!v.pass, "2 of 103 unanswered is above 1 %");
    let failed: Vec<_> = v.failed().map(Criterion::describe).collect();
    assert_eq!(failed, ["loss 1.94 %, above 1 %"]);
    assert!(v.mean_ok);
    let v = Verdict::judge(&stats, &s, &[t("1ms")], limits(2.0), None);
    assert!(v.pass);
    assert_eq!(v.criteria[1].describe(), "loss 1.94 %, within 2 %");
}

#[test]
fn a_failed_criterion_reads_as_a_failure() {
    let (stats, s) = run(50_000, 900_000, 0, 0);
    let v = Verdict::judge(
        &stats,
        &s,
        &[t("1ms"), t("max=500us")],
        Limits::none(),
        None,
    );
    assert!(!v.pass);
    let failed: Vec<_> = v.failed().map(Criterion::describe).collect();
    assert_eq!(failed.len(), 1);
    assert!(failed[0].starts_with("max 900."), "{failed:?}");
    assert!(failed[0].ends_with("µs, above 500 µs"), "{failed:?}");
    assert!(
        v.criteria[0].describe().ends_with(", below 1 ms"),
        "{:?}",
        v.criteria[0]
    );
    assert!(Verdict::judge(&stats, &s, &[t("p99=100us")], Limits::none(), None).pass);
}

#[test]
fn a_p99_threshold_fails_when_more_than_one_percent_got_no_reply() {
    // 101 replies of 50 µs and 3 lost: 2.9 % got no reply, so p99 is
    // among them: at least the timeout, whatever the replies say.
    let (stats, s) = run(50_000, 50_000, 3, 0);
    let v = Verdict::judge(&stats, &s, &[t("p99=1ms")], Limits::none(), None);
    assert!(!v.pass);
    let p99 = &v.criteria[0];
    assert!(p99.at_least);
    assert_eq!(p99.samples, Some(104));
    assert_eq!(
        p99.describe(),
        "p99 ≥ 100 ms (no timely reply), above 1 ms (not resolved: 1 beyond it of 104)"
    );
    // p50 is among the replies.
    let v = Verdict::judge(&stats, &s, &[t("p50=1ms")], Limits::none(), None);
    assert!(v.pass, "{:?}", v.criteria[0]);
}

#[test]
fn an_outage_longer_than_the_limit_fails_a_run_of_little_loss() {
    let (mut stats, _) = run(50_000, 60_000, 0, 0);
    stats.record(&Record::outage(101, 19, 0, 2_000_000_000));
    let s = Summary::from_stats(&stats, Duration::from_secs(4));
    let limits = Limits {
        loss_percent: Some(100.0),
        outage: Some(Duration::from_secs(1)),
        timeout: Duration::from_millis(100),
    };
    let v = Verdict::judge(&stats, &s, &[t("1ms")], limits, None);
    let failed: Vec<_> = v.failed().map(Criterion::describe).collect();
    assert_eq!(failed, ["outage 2.00 s, above 1 s"]);
}

#[test]
fn no_replies_holds_no_rtt_criterion() {
    let mut stats = Stats::new();
    stats.record(&Record::event(RecordKind::Lost, 0, 0, false));
    let s = Summary::from_stats(&stats, Duration::from_secs(1));
    let v = Verdict::judge(&stats, &s, &[t("1ms")], Limits::none(), None);
    assert!(!v.pass, "a verdict never passes what it did not check");
    let mean = &v.criteria[0];
    assert_eq!((mean.value, mean.held), (None, false));
    assert_eq!(mean.describe(), "mean — (no replies), so not below 1 ms");
}

#[test]
fn an_unresolved_percentile_says_so() {
    let (stats, s) = run(50_000, 60_000, 0, 0);
    let v = Verdict::judge(&stats, &s, &[t("p99.9=1ms")], Limits::none(), None);
    assert!(v.criteria[0].unresolved());
    assert!(
        v.criteria[0]
            .describe()
            .ends_with("below 1 ms (not resolved: 0 beyond it of 101)"),
        "{}",
        v.criteria[0].describe()
    );
}

/// A multicast run's responder criteria each say whose they are, an
/// outage of none too (it once lost the name: `✓ outage: none`).
#[test]
fn every_responder_criterion_names_its_responder() {
    let (stats, s) = run(50_000, 90_000, 0, 0);
    let limits = Limits {
        outage: Some(Duration::from_secs(1)),
        ..Limits::none()
    };
    let v = Verdict::judge(&stats, &s, &[t("1ms")], limits, None).with_responders(
        [("r2".to_string(), &stats, &s)].into_iter(),
        &[t("1ms")],
        limits,
    );
    let own: Vec<String> = v
        .criteria
        .iter()
        .filter(|c| c.responder.is_some())
        .map(Criterion::describe)
        .collect();
    assert_eq!(
        own,
        [
            "r2: mean 50.4 µs, below 1 ms",
            "r2: loss 0.00 %, within 100 %",
            "r2: outage: none, within 1 s"
        ]
    );
}
