use super::*;
use synapse_stats::Record;
use synapse_stats::intervals::{IntervalRecorder, RTT};

fn intervals() -> Vec<Interval> {
    let mut r = IntervalRecorder::new(Duration::from_millis(250));
    for i in 0..1_000u64 {
        r.add_record(
            i * 1_000_000,
            &Record::sample(i, 0, 20_000 + i * 37, false),
            0,
            "",
        );
    }
    r.finish(1_000_000_000)
}

#[test]
fn what_is_written_reads_back_with_the_same_counts_and_percentiles() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("run.hlog");
    let base = UNIX_EPOCH + Duration::from_millis(1_795_000_000_250);
    let log = HdrLogWriter::create(&path, base, &["synapse test".into()]).unwrap();
    let written = intervals();
    log.write(written.clone());
    log.comment("the end");
    let outcome = log.finish();
    assert_eq!(outcome.intervals, 4);
    assert_eq!(outcome.error, None);
    let text = std::fs::read_to_string(&path).unwrap();
    assert!(
        text.starts_with(
            "#synapse test\n#[Histogram log format version 1.3]\n#[StartTime: 1795000000.250 (seconds since epoch)]\n#[BaseTime: 1795000000.250 (seconds since epoch)]\n#[MaxValueDivisor: 1000000.000]\n\"StartTimestamp\""
        ),
        "{text}"
    );
    assert_eq!(text.matches("#[MaxValueDivisor").count(), 1);
    assert!(text.contains("\nTag=rtt,0.250,0.250,"), "{text}");
    assert!(text.ends_with("#the end\n"));
    let back = read(&path).unwrap();
    assert_eq!(back.start_time, Some(1_795_000_000.25));
    assert_eq!(back.intervals.len(), 4);
    for (w, r) in written.iter().zip(&back.intervals) {
        assert_eq!((w.start_ns, w.length_ns), (r.start_ns, r.length_ns));
        let (a, b) = (w.get(RTT).unwrap(), r.get(RTT).unwrap());
        assert_eq!(a.len(), b.len());
        for q in [0.5, 0.99, 1.0] {
            assert_eq!(a.value_at_quantile(q), b.value_at_quantile(q));
        }
    }
    assert_eq!(back.tags(), ["rtt"]);
}

#[test]
fn an_existing_file_is_kept_and_a_full_disk_is_an_error() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("old.hlog");
    std::fs::write(&path, "rows of an earlier run\n").unwrap();
    let e = HdrLogWriter::create(&path, UNIX_EPOCH, &[]).unwrap_err();
    assert!(e.to_string().contains("the file exists"), "{e}");
    assert_eq!(
        std::fs::read_to_string(&path).unwrap(),
        "rows of an earlier run\n"
    );
    let full = HdrLogWriter::create(Path::new("/dev/full"), UNIX_EPOCH, &[]).unwrap_err();
    assert!(full.to_string().contains("No space left"), "{full}");
}

#[test]
fn garbage_is_refused_with_its_line() {
    let e = read_text(
        b"#[BaseTime: 1.000 (seconds since epoch)]\nTag=rtt,0.000,1.000,2.0,HISTFAAA\nnot a log\n",
    )
    .unwrap_err();
    assert!(e.contains("entry 2"), "{e}");
    let e = read_text(b"# comment\nhello, world\n").unwrap_err();
    assert_eq!(e, "line 2: not an HdrHistogram interval log line");
}

#[test]
fn absolute_timestamps_of_other_writers_count_from_the_first_interval() {
    let mut buf = Vec::new();
    let mut iv = intervals();
    for i in &mut iv {
        i.start_ns += 1_700_000_000_000_000_000;
    }
    encode(&iv, &mut buf).unwrap();
    let back = read_text(&buf).unwrap();
    assert_eq!(back.intervals[0].start_ns, 0);
    assert_eq!(back.intervals[1].start_ns, 250_000_000);
}

/// Issue 51: an outage is a line spanning it, read back where it began;
/// an older log's outage (in the interval it ended in) reads from its
/// length back from that interval's end.
#[test]
fn an_outage_is_read_back_where_it_began() {
    use synapse_stats::intervals::OUTAGE;
    let mut r = IntervalRecorder::new(Duration::from_secs(1));
    let ms = 1_000_000u64;
    r.add_record(500 * ms, &Record::sample(0, 0, 20_000, false), 0, "");
    r.add_record(5_120 * ms, &Record::outage(1, 31, 0, 3_100 * ms), 0, "");
    let mut all = r.finish(5_200 * ms);
    all.extend(r.take_spans());
    let mut buf = Vec::new();
    encode(&all, &mut buf).unwrap();
    let back = read_text(&buf).unwrap();
    assert_eq!(
        back.intervals.len(),
        1,
        "the outage is not one of the run's intervals"
    );
    assert_eq!(back.outages(OUTAGE), [(2_020 * ms, 5_120 * ms)]);
    // As Synapse wrote it before: in the interval it ended in.
    let old = b"#[BaseTime: 1.000 (seconds since epoch)]\n";
    let mut legacy = old.to_vec();
    let mut h = synapse_stats::intervals::empty_histogram();
    h.record(3_100 * ms).unwrap();
    let span = Interval {
        start_ns: 5_000 * ms,
        length_ns: 1_000 * ms,
        series: vec![(OUTAGE.into(), h.clone())],
    };
    encode(&[span], &mut legacy).unwrap();
    let back = read_text(&legacy).unwrap();
    let end = 6_000 * ms;
    assert_eq!(back.outages(OUTAGE), [(end - h.max(), end)]);
}

/// Issue 51: a log cut mid-line (its writer stopped) is read up to its
/// last whole interval, and says so; one broken in the middle is refused.
#[test]
fn a_log_cut_short_reads_up_to_its_last_whole_interval() {
    let mut buf = Vec::new();
    encode(&intervals(), &mut buf).unwrap();
    let text = String::from_utf8(buf.clone()).unwrap();
    let last_line = text.trim_end().rfind('\n').unwrap() + 1;
    // Cut inside the last interval's line: three whole intervals remain.
    let cut = &buf[..last_line + 30];
    let back = read_text(cut).unwrap();
    assert_eq!(back.intervals.len(), 3);
    let note = back.cut_short.unwrap();
    assert!(
        note.contains("read up to its last whole interval, 3 whole intervals (0.750 s)"),
        "{note}"
    );
    // The same bytes with garbage after them and a newline: refused.
    let mut broken = cut.to_vec();
    broken.extend_from_slice(b"\nTag=rtt,1.000,0.250,1.0,HISTFAAA\n");
    assert!(read_text(&broken).is_err());
    assert!(read_text(&buf).unwrap().cut_short.is_none());
}
