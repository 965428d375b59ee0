//! Profiles and baselines through the real binary, in a temporary config
//! directory (never the user's).

#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::common::*;
use std::path::{Path, PathBuf};
use std::process::Output;

struct Env {
    dir: tempfile::TempDir,
}

impl Env {
    fn new() -> Self {
        Self {
            dir: tempfile::tempdir().unwrap(),
        }
    }

    fn config(&self) -> PathBuf {
        self.dir.path().join("synapse").join("config.toml")
    }

    fn write(&self, text: &str) {
        std::fs::create_dir_all(self.config().parent().unwrap()).unwrap();
        std::fs::write(self.config(), text).unwrap();
    }

    fn read(&self) -> String {
        std::fs::read_to_string(self.config()).unwrap()
    }

    fn run(&self, args: &[&str]) -> Output {
        synapse()
            .args(args)
            .env("XDG_CONFIG_HOME", self.dir.path())
            .env("HOME", self.dir.path())
            .output()
            .unwrap()
    }
}

fn text(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

fn addr(port: u16) -> String {
    format!("127.0.0.1:{port}")
}

#[test]
fn save_list_show_run_baseline_and_regression_round_trip() {
    let env = Env::new();
    let (_server, port) = start_server(&[]);
    let a = addr(port);

    // Save a profile from a run, with a baseline.
    let out = env.run(&[
        "client",
        &a,
        "--packets",
        "500",
        "--size",
        "64",
        "--timestamps",
        "user",
        "--json",
        "--threshold",
        "1s",
        "--save-profile",
        "lab",
        "--set-baseline",
    ]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let err = text(&out.stderr);
    assert!(
        err.contains(&format!(
            "synapse: note: saved profile 'lab' in {}",
            env.config().display()
        )),
        "{err}"
    );
    assert!(
        err.contains("synapse: note: baseline of profile 'lab' set: "),
        "{err}"
    );

    // list and show.
    let list = text(&env.run(&["profiles", "list"]).stdout);
    assert!(
        list.starts_with(&format!("lab  any → {a}  (baseline ")),
        "{list}"
    );
    let show = env.run(&["profiles", "show", "lab"]);
    assert_eq!(show.status.code(), Some(0));
    let show = text(&show.stdout);
    let value = |key: &str| {
        show.lines()
            .find_map(|l| {
                l.trim_start()
                    .strip_prefix(key)
                    .filter(|v| v.starts_with(' '))
            })
            .map(str::trim)
            .unwrap_or_else(|| panic!("no {key} in:\n{show}"))
            .to_string()
    };
    for (key, want) in [
        ("server", a.to_string()),
        ("packets", "500".into()),
        ("size", "64".into()),
        ("threshold", "1s".into()),
        ("timestamps", "user".into()),
        ("stamp", "false".into()),
    ] {
        assert_eq!(value(key), want, "{show}");
    }
    assert!(value("baseline").starts_with("20"), "{show}");
    // Issue 51: one column for every value, however long a key.
    let columns: std::collections::BTreeSet<usize> = show
        .lines()
        .skip(1)
        .map(|l| {
            let key_end = 2 + l[2..].find(' ').unwrap();
            key_end + l[key_end..].find(|c: char| c != ' ').unwrap()
        })
        .collect();
    assert_eq!(columns.len(), 1, "values in more than one column:\n{show}");

    // Running by name uses the profile's host pair and options.
    let out = env.run(&["client", "--profile", "lab", "--json"]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let j = json_of(&out.stdout);
    assert_eq!(j["config"]["profile"], "lab");
    assert_eq!(j["config"]["size"], 64);
    assert_eq!(j["config"]["timestamps"], "user", "the profile's source");
    assert!(j["breakdown"].is_null());
    assert_eq!(j["packets"]["sent"], 500);
    assert!(j["baseline"]["change_percent"]["p50"].is_number());

    // The same address with no profile picks the matching one, and says so.
    let out = env.run(&["client", &a, "--json"]);
    assert_eq!(out.status.code(), Some(0));
    assert!(text(&out.stderr).contains(&format!(
        "synapse: note: using profile 'lab': its host pair matches {a} (--profile to choose another)"
    )));
    assert_eq!(json_of(&out.stdout)["config"]["size"], 64);

    // The baseline kept its run's interval log beside the file.
    let runs = env.config().parent().unwrap().join("baselines").join("lab");
    assert!(runs.join("run-1.hlog").is_file());

    // An old baseline (no interval logs) far faster than anything real:
    // the old rule judges it, says so, and fails.
    std::fs::remove_dir_all(&runs).unwrap();
    let doctored = regex_free_replace(&env.read(), "p50_ns = ", "\n", "p50_ns = 1");
    env.write(&doctored);
    assert_usage_error(
        &env.run(&[
            "client",
            "--profile",
            "lab",
            "--no-ui",
            "--fail-on-regression",
        ]),
        "--fail-on-regression: the baseline of profile 'lab' has no interval logs (it was set before Synapse kept them), so only the old rule on its stored p50 and p99 can judge it, and that rule needs --min-effect PERCENT (or set the baseline again)",
    );
    let out = env.run(&[
        "client",
        "--profile",
        "lab",
        "--no-ui",
        "--fail-on-regression",
        "--min-effect",
        "10",
    ]);
    assert_eq!(out.status.code(), Some(3), "{}", text(&out.stderr));
    let report = text(&out.stdout);
    assert!(
        report.contains("Against the baseline of profile 'lab'"),
        "{report}"
    );
    assert!(
        report.contains("--fail-on-regression (old rule): regressed the 10 % limit on p50 and p99"),
        "{report}"
    );
    assert!(
        report.contains("Method: the baseline has no interval logs (it was set before Synapse kept them; set it again for the test of synapse compare): judged by the old rule instead"),
        "{report}"
    );
    assert!(
        report.contains("✗ FAIL: p50 change against the baseline "),
        "{report}"
    );
    let out = env.run(&[
        "client",
        "--profile",
        "lab",
        "--json",
        "--fail-on-regression",
        "--min-effect",
        "10",
    ]);
    assert_eq!(out.status.code(), Some(3));
    let j = json_of(&out.stdout);
    assert_eq!(j["verdict"]["regressed"], true);
    assert_eq!(j["verdict"]["mean_ok"], true);
    assert_eq!(j["verdict"]["pass"], false);
    assert_eq!(j["baseline"]["regressed"], true);
    assert_eq!(j["baseline"]["limit_percent"], 10.0);
    assert_eq!(j["baseline"]["rule"], "fixed_percent");

    // rm.
    let out = env.run(&["profiles", "rm", "lab"]);
    assert_eq!(
        text(&out.stdout),
        format!("removed profile 'lab' from {}\n", env.config().display())
    );
    assert!(!env.read().contains("[profiles.lab]"));
}

/// Replaces the text between `start` and the next `end` with `with`.
fn regex_free_replace(s: &str, start: &str, end: &str, with: &str) -> String {
    let a = s.find(start).unwrap();
    let b = a + s[a..].find(end).unwrap();
    format!("{}{with}{}", &s[..a], &s[b..])
}

#[test]
fn saving_over_a_profile_keeps_the_users_comments() {
    let env = Env::new();
    let (_server, port) = start_server(&[]);
    let a = addr(port);
    env.write(&format!(
        "# Synapse profiles, hand-kept.\n\n[defaults]\nwarmup = 20 # short warm-up on this box\n\n\
         # The lab pair.\n[profiles.lab]\nserver = \"{a}\" # far end\nsize = 16\n"
    ));
    let out = env.run(&[
        "client",
        "--profile",
        "lab",
        "--packets",
        "300",
        "--size",
        "32",
        "--json",
        "--save-profile",
        "lab",
    ]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let after = env.read();
    assert!(after.starts_with("# Synapse profiles, hand-kept.\n\n[defaults]\nwarmup = 20 # short warm-up on this box\n\n# The lab pair.\n[profiles.lab]\n"), "{after}");
    assert!(
        after.contains(&format!("server = \"{a}\" # far end\n")),
        "{after}"
    );
    assert!(after.contains("size = 32\n"), "{after}");
    assert!(after.contains("packets = 300\n"), "{after}");
    assert!(
        after.contains("warmup = 20\n"),
        "the effective warm-up came from [defaults]: {after}"
    );
}

#[test]
fn defaults_table_applies_and_the_command_line_wins_with_a_note() {
    let env = Env::new();
    let (_server, port) = start_server(&[]);
    let a = addr(port);
    env.write(&format!("[defaults]\nwarmup = 7\nsize = 24\n\n[profiles.p]\nserver = \"{a}\"\npackets = 200\nsize = 40\n"));
    let out = env.run(&["--json", "--packets", "100", "--threshold", "1s"]);
    let j = json_of(&out.stdout);
    assert_eq!(
        (j["config"]["warmup"].as_u64(), j["config"]["size"].as_u64()),
        (Some(7), Some(24))
    );
    let out = env.run(&[
        "client",
        "--profile",
        "p",
        "--duration",
        "300ms",
        "--size",
        "48",
        "--json",
        "--threshold",
        "1s",
    ]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    assert_eq!(
        text(&out.stderr),
        "synapse: note: --size on the command line wins over profile 'p' (size = 40)\n\
         synapse: note: --duration on the command line wins over profile 'p' (packets = 200)\n"
    );
    let j = json_of(&out.stdout);
    assert_eq!(j["config"]["size"], 48);
    assert_eq!(j["config"]["warmup"], 7);
    assert_eq!(j["config"]["packets"], serde_json::Value::Null);
}

fn assert_usage_error(out: &Output, expected: &str) {
    assert_eq!(out.status.code(), Some(2), "{}", text(&out.stderr));
    assert_eq!(text(&out.stderr), format!("synapse: error: {expected}\n"));
    assert!(out.stdout.is_empty());
}

#[test]
fn bad_configuration_is_exit_2_with_file_line_column_and_key() {
    let env = Env::new();
    let c = env.config();
    let c = c.display();
    env.write("[profiles.lab]\nserver = \"127.0.0.1:9\"\nwramup = 5\n");
    assert_usage_error(
        &env.run(&["client", "--no-ui"]),
        &format!(
            "{c}:3:1: profiles.lab.wramup: unknown key 'wramup' (known: bind, server, packets, duration, warmup, interval, rate, poisson, transport, connect_each, timeout_ms, timestamps, mc_ttl, mc_if, mc_loop, mc_join, responders, tx_stamp_every, update, size, stamp, ssid, dscp, ecn, tlv, hmac_key_file, stamp_format, cpu, busy_poll, rt, keep_awake, threshold, max_loss, load, load_phase, load_streams, load_cc, load_port, max_inflation, min_rpm, max_outage, give_up_after, fps, baseline)"
        ),
    );
    env.write("[defaults]\nsize = \"big\"\n");
    assert_usage_error(
        &env.run(&["--no-ui"]),
        &format!("{c}:2:8: defaults.size: expected an integer, found a string"),
    );
    env.write("[profiles.lab]\nserver = \"127.0.0.1:99999\"\n");
    assert_usage_error(
        &env.run(&["client", "--profile", "lab", "--no-ui"]),
        &format!(
            "{c}:2:10: profiles.lab.server: '127.0.0.1:99999' is not an address (port 99999 out of range 0-65535)"
        ),
    );
    env.write("[profiles.lab]\nserver = \"no-such-host.invalid:8080\"\n");
    let out = env.run(&["client", "--profile", "lab", "--no-ui"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(
        text(&out.stderr).starts_with(&format!("synapse: error: {c}:2:1: profiles.lab.server: cannot resolve 'no-such-host.invalid:8080'")),
        "{}",
        text(&out.stderr)
    );
    env.write("[profiles.a]\nserver = \"127.0.0.1:9\"\n");
    assert_usage_error(
        &env.run(&["client", "--profile", "b", "--no-ui"]),
        &format!("{c}: profiles.b: no such profile (known: a)"),
    );
    assert_usage_error(
        &env.run(&["profiles", "show", "b"]),
        &format!("{c}: profiles.b: no such profile (known: a)"),
    );
    assert_usage_error(
        &env.run(&["profiles", "rm", "b"]),
        &format!("{c}: profiles.b: no such profile (known: a)"),
    );
    env.write("[defaults\n");
    let out = env.run(&["--no-ui"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(
        text(&out.stderr).starts_with(&format!("synapse: error: {c}:1:10: not valid TOML")),
        "{}",
        text(&out.stderr)
    );
}

#[test]
fn other_mistakes_are_exit_2_too() {
    let env = Env::new();
    let missing = env.dir.path().join("nope.toml");
    assert_usage_error(
        &env.run(&["client", "--config", missing.to_str().unwrap(), "--no-ui"]),
        &format!(
            "{}: No such file or directory (os error 2)",
            missing.display()
        ),
    );
    assert_usage_error(
        &env.run(&["client", "127.0.0.1:9", "--set-baseline", "--no-ui"]),
        "--set-baseline needs a profile to keep it in (--profile NAME or --save-profile NAME)",
    );
    let out = env.run(&["client", "--min-effect", "ten"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(text(&out.stderr).contains("'ten' is not a percentage"));
    assert!(!Path::new(&env.config()).exists(), "nothing was written");
}

#[test]
fn an_explicit_config_path_is_used_and_created_on_save() {
    let env = Env::new();
    let (_server, port) = start_server(&[]);
    let path = env.dir.path().join("elsewhere").join("synapse.toml");
    let p = path.to_str().unwrap();
    let out = env.run(&[
        "client",
        &addr(port),
        "--config",
        p,
        "--packets",
        "100",
        "--json",
        "--save-profile",
        "x",
    ]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    assert!(
        std::fs::read_to_string(&path)
            .unwrap()
            .contains("[profiles.x]")
    );
    let list = env.run(&["profiles", "list", "--config", p]);
    assert!(
        text(&list.stdout).starts_with("x  any → "),
        "{}",
        text(&list.stdout)
    );
    assert!(
        !env.config().exists(),
        "the default location was left alone"
    );
}

/// A baseline remembers the kind of run it was (issue 50): a run of
/// another kind (TCP against UDP, another size) is not compared with it,
/// the report says why and shows no change; `--fail-on-regression`
/// against it is a clear error before anything is measured; a run of the
/// same kind is compared as ever.
#[test]
fn a_baseline_is_compared_only_with_runs_of_its_kind() {
    let env = Env::new();
    let (_server, port) = start_server(&[]);
    let a = addr(port);
    let set = env.run(&[
        "client",
        &a,
        "--no-ui",
        "--packets",
        "300",
        "--timestamps",
        "user",
        "--save-profile",
        "lab",
        "--set-baseline",
    ]);
    assert_eq!(set.status.code(), Some(0), "{}", text(&set.stderr));
    let kept = env.read();
    assert!(kept.contains("[profiles.lab.baseline.kind]"), "{kept}");
    assert!(kept.contains("transport = \"udp\""), "{kept}");
    // TCP against the UDP baseline: not compared, no change shown.
    let out = env.run(&[
        "client",
        &a,
        "--json",
        "--packets",
        "200",
        "--tcp",
        "--timestamps",
        "user",
        "--profile",
        "lab",
    ]);
    let j = json_of(&out.stdout);
    let b = &j["baseline"];
    let why = b["not_compared"].as_str().unwrap_or_default();
    assert!(why.contains("this one has transport tcp, not udp"), "{b}");
    assert!(
        b["change_percent"].is_null() && b["loss_change_points"].is_null(),
        "{b}"
    );
    let out = env.run(&[
        "client",
        &a,
        "--no-ui",
        "--packets",
        "200",
        "--tcp",
        "--timestamps",
        "user",
        "--profile",
        "lab",
    ]);
    let t = text(&out.stdout);
    assert!(t.contains("  Not compared: the baseline ("), "{t}");
    assert!(
        !t.contains("P50:") || !t.contains(" %)"),
        "no change shown: {t}"
    );
    // --fail-on-regression against another kind: one line, exit 2, nothing measured.
    let out = env.run(&[
        "client",
        &a,
        "--no-ui",
        "--packets",
        "200",
        "--size",
        "1400",
        "--timestamps",
        "user",
        "--profile",
        "lab",
        "--fail-on-regression",
    ]);
    assert_eq!(out.status.code(), Some(2));
    let err = text(&out.stderr);
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(
        err.contains("the baseline of profile 'lab' is of another kind of run (this one has size 1400 bytes, not 8 bytes)"),
        "{err}"
    );
    assert!(out.stdout.is_empty(), "nothing was measured");
    // Another timestamp source is another kind too, found once it runs.
    let out = env.run(&[
        "client",
        &a,
        "--json",
        "--packets",
        "200",
        "--timestamps",
        "software",
        "--profile",
        "lab",
    ]);
    let j = json_of(&out.stdout);
    let why = j["baseline"]["not_compared"].as_str().unwrap_or_default();
    assert!(
        why.contains("timestamps software, not user"),
        "{}",
        j["baseline"]
    );
    // The same kind: compared.
    let out = env.run(&[
        "client",
        &a,
        "--json",
        "--packets",
        "200",
        "--timestamps",
        "user",
        "--profile",
        "lab",
    ]);
    let j = json_of(&out.stdout);
    assert!(j["baseline"]["not_compared"].is_null(), "{}", j["baseline"]);
    assert!(j["baseline"]["change_percent"]["p50"].is_number());
}
