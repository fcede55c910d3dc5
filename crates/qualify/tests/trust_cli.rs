//! End-to-end tests of signed receipts and the reproducibility layer with the real binary:
//! `keygen` → `run --sign` on a tiny spec → `verify` (signature, subject digest) → `gate --key`
//! (and `--vsa`) → tampering fails; secrets in the environment never reach the receipt; repeats
//! that agree close the reproducibility layer, repeats that differ fail it by cell.
//!
//! Exit statuses relied on: `verify` 0 verified / 1 a check failed / 2 unreadable input;
//! `gate --key` refuses a tampered or unsigned receipt with exit 1 naming the signature check.

use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use qualify_trust::Envelope;
use serde_json::Value;

const QUALIFY: &str = env!("CARGO_BIN_EXE_qualify");
const SECRET: &str = "sekrit-value-4711-do-not-leak";

struct TestDir(PathBuf);

impl Drop for TestDir {
    fn drop(&mut self) {
        if !std::thread::panicking() {
            let _ = std::fs::remove_dir_all(&self.0);
        }
    }
}

fn scratch(name: &str) -> TestDir {
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR"))
        .join("trust_cli")
        .join(format!("{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    TestDir(dir)
}

fn qualify(dir: &Path, args: &[&str]) -> Output {
    Command::new(QUALIFY)
        .args(args)
        .current_dir(dir)
        .env("MY_SERVICE_TOKEN", SECRET)
        .env(
            "DEPLOY_URL",
            format!("https://deploy:{SECRET}@example.invalid/x"),
        )
        .output()
        .unwrap()
}

fn text(o: &Output) -> String {
    format!(
        "status {:?}\n--- stdout\n{}\n--- stderr\n{}",
        o.status.code(),
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    )
}

fn expect(o: &Output, code: i32) -> String {
    assert_eq!(o.status.code(), Some(code), "{}", text(o));
    String::from_utf8_lossy(&o.stdout).into_owned()
}

/// A spec whose artifact prints `line` (a shell snippet) per cell, repeated twice.
fn write_spec(dir: &Path, line: &str) {
    let script = dir.join("art");
    std::fs::write(&script, format!("#!/bin/sh\n{line}\n")).unwrap();
    std::fs::set_permissions(&script, std::fs::Permissions::from_mode(0o755)).unwrap();
    std::fs::write(
        dir.join("qualify.toml"),
        r#"[artifact]
name = "art"
command = "./art {n}"

[claim]
level = "trial"

[functional]
command = "./art 0"

[[axis]]
name = "n"
kind = "workload"
values = [1, 2]

[environment]
tools = ["sh -c true", "no-such-tool-for-qualify --version"]

[reproducibility]
repeat = 2
"#,
    )
    .unwrap();
}

fn statement_of(receipt: &Path) -> Value {
    let text = std::fs::read_to_string(receipt).unwrap();
    let env = Envelope::from_json(&text).unwrap();
    serde_json::from_slice(&env.payload_unverified().unwrap()).unwrap()
}

#[test]
fn keygen_sign_verify_gate_and_tamper() {
    let d = scratch("e2e");
    let dir = d.0.as_path();
    write_spec(dir, "echo \"n=$1\"");

    // keygen: private 0600, public next to it, never overwritten.
    let out = expect(&qualify(dir, &["keygen", "--out", "k"]), 0);
    assert!(out.contains("key id"), "{out}");
    let mode = std::fs::metadata(dir.join("k"))
        .unwrap()
        .permissions()
        .mode()
        & 0o777;
    assert_eq!(mode, 0o600);
    assert!(dir.join("k.pub").is_file());
    let again = qualify(dir, &["keygen", "--out", "k"]);
    expect(&again, 2);
    assert!(text(&again).contains("already exists"));
    expect(
        &qualify(dir, &["keygen", "--out", "p", "--algorithm", "p256"]),
        0,
    );

    // run --sign writes a DSSE envelope.
    let run = qualify(
        dir,
        &["run", "qualify.toml", "--receipt", "r.json", "--sign", "k"],
    );
    expect(&run, 0);
    let raw = std::fs::read_to_string(dir.join("r.json")).unwrap();
    let doc: Value = serde_json::from_str(&raw).unwrap();
    assert_eq!(doc["payloadType"], "application/vnd.in-toto+json");
    let st = statement_of(&dir.join("r.json"));
    assert_eq!(st["_type"], "https://in-toto.io/Statement/v1");

    // The fingerprint is recorded, with secrets redacted everywhere.
    let envr = &st["predicate"]["environment"];
    assert_eq!(envr["env"]["MY_SERVICE_TOKEN"], "<redacted>");
    assert_eq!(envr["env"]["DEPLOY_URL"], "<redacted>");
    assert!(envr["os"]["kernel_release"].is_string());
    assert_eq!(envr["tools"][0]["status"], "ok");
    assert_eq!(envr["tools"][1]["status"], "not found");
    assert!(!raw.contains(SECRET));
    assert!(!st.to_string().contains(SECRET));
    // Two cells, each run twice with identical output: reproducibility closed.
    let repro = &st["predicate"]["layers"]["reproducibility"];
    assert_eq!(repro["status"], "closed", "{repro}");

    // verify: signature, then the subject digest against the artifact.
    let v = expect(&qualify(dir, &["verify", "r.json", "--key", "k.pub"]), 0);
    assert!(v.contains("ok: signature") && v.contains("VERIFIED"), "{v}");
    let v = expect(
        &qualify(
            dir,
            &["verify", "r.json", "--key", "k.pub", "--artifact", "art"],
        ),
        0,
    );
    assert!(v.contains("ok: subject digest matches"), "{v}");
    std::fs::write(dir.join("art-modified"), "#!/bin/sh\necho evil\n").unwrap();
    let v = expect(
        &qualify(
            dir,
            &[
                "verify",
                "r.json",
                "--key",
                "k.pub",
                "--artifact",
                "art-modified",
            ],
        ),
        1,
    );
    assert!(v.contains("subject digest check failed"), "{v}");
    let v = expect(&qualify(dir, &["verify", "r.json", "--key", "p.pub"]), 1);
    assert!(v.contains("signature check failed"), "{v}");
    expect(
        &qualify(dir, &["verify", "r.json", "--key", "missing.pub"]),
        2,
    );

    // gate --key verifies; --vsa writes a VSA for the accepted claim.
    let g = expect(
        &qualify(
            dir,
            &[
                "gate", "r.json", "--claim", "trial", "--key", "k.pub", "--vsa", "vsa.json",
            ],
        ),
        0,
    );
    assert!(g.contains("signature: verified"), "{g}");
    let vsa: Value =
        serde_json::from_str(&std::fs::read_to_string(dir.join("vsa.json")).unwrap()).unwrap();
    assert_eq!(vsa["_type"], "https://in-toto.io/Statement/v1");
    assert_eq!(
        vsa["predicateType"],
        "https://slsa.dev/verification_summary/v1"
    );
    let p = &vsa["predicate"];
    assert_eq!(p["verificationResult"], "PASSED");
    assert_eq!(p["verifiedLevels"][0], "QUALIFY_TRIAL");
    assert!(p["verifier"]["id"].is_string() && p["timeVerified"].is_string());
    assert!(p["policy"]["uri"].as_str().unwrap().ends_with("#trial"));
    assert_eq!(
        p["inputAttestations"][0]["digest"]["sha256"]
            .as_str()
            .unwrap()
            .len(),
        64
    );
    assert_eq!(vsa["subject"], st["subject"]);
    // A refused claim writes no VSA.
    expect(
        &qualify(
            dir,
            &[
                "gate",
                "r.json",
                "--claim",
                "production",
                "--vsa",
                "vsa2.json",
            ],
        ),
        1,
    );
    assert!(!dir.join("vsa2.json").exists());

    // Without --key the payload is read, and the output says the signature was not checked.
    let g = expect(&qualify(dir, &["gate", "r.json", "--claim", "trial"]), 0);
    assert!(g.contains("signature: NOT CHECKED"), "{g}");

    // Tamper with the payload (a layer status), re-encoded as valid base64.
    let mut env = Envelope::from_json(&raw).unwrap();
    let payload = String::from_utf8(env.payload_unverified().unwrap()).unwrap();
    let forged = payload.replacen("\"status\": \"failed\"", "\"status\": \"closed\"", 1);
    let forged = if forged == payload {
        payload.replacen("\"keep_going\": false", "\"keep_going\": true", 1)
    } else {
        forged
    };
    assert_ne!(forged, payload);
    let resigned = Envelope {
        payload: base64_of(forged.as_bytes()),
        ..env.clone()
    };
    std::fs::write(dir.join("t.json"), resigned.to_json()).unwrap();
    let v = expect(&qualify(dir, &["verify", "t.json", "--key", "k.pub"]), 1);
    assert!(v.contains("signature check failed"), "{v}");
    let g = expect(
        &qualify(
            dir,
            &[
                "gate", "t.json", "--claim", "trial", "--key", "k.pub", "--vsa", "v3.json",
            ],
        ),
        1,
    );
    assert!(g.contains("signature check failed"), "{g}");
    assert!(!dir.join("v3.json").exists());
    let g = expect(
        &qualify(
            dir,
            &[
                "gate", "t.json", "--claim", "trial", "--key", "k.pub", "--json",
            ],
        ),
        1,
    );
    let v: Value = serde_json::from_str(&g).unwrap();
    assert_eq!(v["supported"], false);
    assert_eq!(v["signature"]["status"], "invalid");

    // A key that cannot sign stops `run` before anything is probed (exit 2, names the flag).
    let bad = qualify(
        dir,
        &[
            "run",
            "qualify.toml",
            "--receipt",
            "x.json",
            "--sign",
            "k.pub",
        ],
    );
    expect(&bad, 2);
    assert!(text(&bad).contains("--sign"), "{}", text(&bad));
    assert!(!dir.join("x.json").exists());

    // One flipped character of the signature in the file.
    let sig = env.signatures[0].sig.clone();
    let mut chars: Vec<char> = sig.chars().collect();
    chars[5] = if chars[5] == 'A' { 'B' } else { 'A' };
    env.signatures[0].sig = chars.into_iter().collect();
    std::fs::write(dir.join("f.json"), env.to_json()).unwrap();
    expect(&qualify(dir, &["verify", "f.json", "--key", "k.pub"]), 1);

    // An unsigned receipt is refused when a signature is required.
    expect(
        &qualify(dir, &["run", "qualify.toml", "--receipt", "u.json"]),
        0,
    );
    let g = expect(
        &qualify(
            dir,
            &["gate", "u.json", "--claim", "trial", "--key", "k.pub"],
        ),
        1,
    );
    assert!(g.contains("not signed"), "{g}");
    let g = expect(&qualify(dir, &["gate", "u.json", "--claim", "trial"]), 0);
    assert!(g.contains("signature: none"), "{g}");

    // Reports say what was checked about the signature, and refuse one that does not verify.
    let md = expect(&qualify(dir, &["report", "r.json"]), 0);
    assert!(md.contains("signature: NOT CHECKED"), "{md}");
    let md = expect(&qualify(dir, &["report", "r.json", "--key", "k.pub"]), 0);
    let keyid = st_keyid(dir);
    assert!(
        md.contains(&format!("signature: verified by key {keyid}")),
        "{md}"
    );
    expect(
        &qualify(
            dir,
            &["report", "r.json", "--key", "k.pub", "--html", "r.html"],
        ),
        0,
    );
    let html = std::fs::read_to_string(dir.join("r.html")).unwrap();
    assert!(html.contains("signature: verified by key"), "{html}");
    let bad = qualify(
        dir,
        &["report", "t.json", "--key", "k.pub", "--html", "t.html"],
    );
    expect(&bad, 1);
    assert!(text(&bad).contains("REFUSED"), "{}", text(&bad));
    assert!(
        text(&bad).contains("signature check failed"),
        "{}",
        text(&bad)
    );
    assert!(!dir.join("t.html").exists(), "nothing is rendered");
    let other = qualify(dir, &["report", "r.json", "--key", "p.pub"]);
    expect(&other, 1);
    let md = expect(&qualify(dir, &["report", "u.json"]), 0);
    assert!(md.contains("signature: none"), "{md}");
    expect(&qualify(dir, &["report", "u.json", "--key", "k.pub"]), 1);
}

/// The key id `qualify keygen` printed for `k` (sha256 of its public key's DER).
fn st_keyid(dir: &Path) -> String {
    let out = expect(&qualify(dir, &["verify", "r.json", "--key", "k.pub"]), 0);
    out.lines()
        .find_map(|l| l.strip_prefix("ok: signature (key id "))
        .and_then(|rest| rest.strip_suffix(')'))
        .unwrap_or_else(|| panic!("no key id in {out}"))
        .to_string()
}

#[test]
fn differing_repeats_fail_the_reproducibility_layer_by_cell() {
    let d = scratch("differ");
    let dir = d.0.as_path();
    write_spec(dir, "cat /proc/sys/kernel/random/uuid");
    let run = qualify(
        dir,
        &["run", "qualify.toml", "--receipt", "r.json", "--json"],
    );
    expect(&run, 0);
    let st: Value =
        serde_json::from_str(&std::fs::read_to_string(dir.join("r.json")).unwrap()).unwrap();
    let repro = &st["predicate"]["layers"]["reproducibility"];
    assert_eq!(repro["status"], "failed", "{repro}");
    // --repeat 1 overrides the spec: nothing repeated, so agreement was not examined.
    let once = qualify(
        dir,
        &[
            "run",
            "qualify.toml",
            "--receipt",
            "once.json",
            "--repeat",
            "1",
        ],
    );
    expect(&once, 0);
    let st1: Value =
        serde_json::from_str(&std::fs::read_to_string(dir.join("once.json")).unwrap()).unwrap();
    assert_eq!(
        st1["predicate"]["layers"]["reproducibility"]["status"],
        "partial"
    );
    let summary = repro["summary"].as_str().unwrap();
    assert!(summary.contains("n=1 (2 distinct outputs)"), "{summary}");
    assert!(summary.contains("n=2 (2 distinct outputs)"), "{summary}");
}

fn base64_of(bytes: &[u8]) -> String {
    const A: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    let mut out = String::new();
    for chunk in bytes.chunks(3) {
        let b = [
            chunk[0],
            *chunk.get(1).unwrap_or(&0),
            *chunk.get(2).unwrap_or(&0),
        ];
        let n = (u32::from(b[0]) << 16) | (u32::from(b[1]) << 8) | u32::from(b[2]);
        for i in 0..4 {
            if i <= chunk.len() {
                out.push(A[((n >> (18 - 6 * i)) & 63) as usize] as char);
            } else {
                out.push('=');
            }
        }
    }
    out
}

#[test]
fn gap_and_waivers_reach_the_receipt_and_the_gate_output() {
    let d = scratch("gap");
    let dir = d.0.as_path();
    write_spec(dir, "echo \"n=$1\"");
    let spec = std::fs::read_to_string(dir.join("qualify.toml")).unwrap();
    let spec = spec.replace("level = \"trial\"", "level = \"production\"");
    let target = "\n[target]\ncores = 64\nconcurrency = 64\nworkload = { n = 1000 }\n";
    // Without waivers: every unreached target fact is a gap and a reason to refuse.
    std::fs::write(dir.join("qualify.toml"), format!("{spec}{target}")).unwrap();
    expect(
        &qualify(dir, &["run", "qualify.toml", "--receipt", "a.json"]),
        1,
    );
    let st: Value =
        serde_json::from_str(&std::fs::read_to_string(dir.join("a.json")).unwrap()).unwrap();
    let names: Vec<String> = st["predicate"]["gap"]
        .as_array()
        .unwrap()
        .iter()
        .map(|g| {
            let n = g["name"].as_str().unwrap().to_string();
            match g["axis"].as_str() {
                Some(a) => format!("{n}.{a}"),
                None => n,
            }
        })
        .collect();
    assert_eq!(names, ["cores", "concurrency", "workload.n"]);
    let g = expect(
        &qualify(dir, &["gate", "a.json", "--claim", "production"]),
        1,
    );
    assert!(
        g.contains("gap cores:") && g.contains("gap workload.n:"),
        "{g}"
    );
    assert!(!g.contains("waiver"), "{g}");

    // A waiver for a gap this target cannot produce is a spec error (exit 2, located).
    let impossible = "\n[[waiver]]\ngap = \"nodes\"\nreason = \"single node\"\n";
    std::fs::write(
        dir.join("qualify.toml"),
        format!("{spec}{target}{impossible}"),
    )
    .unwrap();
    let bad = qualify(dir, &["run", "qualify.toml", "--receipt", "x.json"]);
    assert_eq!(bad.status.code(), Some(2), "{}", text(&bad));
    let err = String::from_utf8_lossy(&bad.stderr);
    assert!(
        err.contains("waiver names gap `nodes`, which this spec's [target] cannot produce"),
        "{err}"
    );
    // With waivers: applied ones are listed and no longer reasons; a waiver for a gap that can
    // arise but did not in this run is listed as not applied.
    let target = format!("{target}memory = \"1GiB\"\n");
    let waivers = "\n[[waiver]]\ngap = \"cores\"\nreason = \"the target box is not available\"\n\n[[waiver]]\ngap = \"workload.n\"\nreason = \"n = 1000 is covered by the vendor's tests\"\n\n[[waiver]]\ngap = \"memory\"\nreason = \"the box has less memory\"\n";
    std::fs::write(dir.join("qualify.toml"), format!("{spec}{target}{waivers}")).unwrap();
    expect(
        &qualify(dir, &["run", "qualify.toml", "--receipt", "b.json"]),
        1,
    );
    let st: Value =
        serde_json::from_str(&std::fs::read_to_string(dir.join("b.json")).unwrap()).unwrap();
    assert_eq!(st["predicate"]["waivers"].as_array().unwrap().len(), 3);
    let g = expect(
        &qualify(dir, &["gate", "b.json", "--claim", "production"]),
        1,
    );
    assert!(
        !g.contains("gap cores:") && !g.contains("gap workload.n:"),
        "{g}"
    );
    assert!(g.contains("gap concurrency:"), "{g}");
    assert!(
        g.contains("waiver cores: the target box is not available (applied)"),
        "{g}"
    );
    assert!(
        g.contains("waiver memory: the box has less memory (NOT applied: no gap named `memory`"),
        "{g}"
    );
}

/// The receipt names the artifact, not its interpreter: `python3 job.py {n}` gets as subjects
/// the script and a digest of the workdir's files, while `python3` goes into the environment's
/// tools; `verify --artifact` accepts the script or the workdir, not the interpreter.
#[test]
fn subjects_are_the_artifacts_own_files_not_its_interpreter() {
    let dir = scratch("subjects");
    let dir = &dir.0;
    expect(&qualify(dir, &["keygen", "--out", "k"]), 0);
    let work = dir.join("work");
    std::fs::create_dir_all(work.join("lib")).unwrap();
    std::fs::write(
        work.join("job.py"),
        "import sys\nprint(int(sys.argv[1]) * 2)\n",
    )
    .unwrap();
    std::fs::write(work.join("lib/helper.py"), "X = 1\n").unwrap();
    std::fs::write(
        dir.join("qualify.toml"),
        "[artifact]\nname = \"job\"\ncommand = [\"python3\", \"-u\", \"job.py\", \"{n}\"]\nworkdir = \"work\"\n\n[claim]\nlevel = \"trial\"\n\n[[axis]]\nname = \"n\"\nkind = \"workload\"\nvalues = [1]\n",
    )
    .unwrap();
    expect(
        &qualify(
            dir,
            &["run", "--sign", "k", "--receipt", "r.json", "--no-ledger"],
        ),
        1,
    );
    let st = statement_of(&dir.join("r.json"));
    let subjects = st["subject"].as_array().unwrap();
    let names: Vec<&str> = subjects
        .iter()
        .map(|s| s["name"].as_str().unwrap())
        .collect();
    assert_eq!(names.len(), 3, "{names:?}");
    assert!(names[0].ends_with("work/job.py"), "{names:?}");
    assert!(names[1].ends_with("work/"), "{names:?}");
    assert!(names[2].ends_with("qualify.toml"), "{names:?}");
    assert!(!names.iter().any(|n| n.contains("python")), "{names:?}");
    let artifact = &st["predicate"]["run"]["artifact"];
    assert_eq!(artifact["interpreter"]["command"], "python3", "{artifact}");
    assert_eq!(artifact["tree"]["files"], 2, "{artifact}");
    assert_eq!(artifact["tree"]["method"], "files", "{artifact}");
    let tools = st["predicate"]["environment"]["tools"].to_string();
    assert!(tools.contains("python3 --version"), "{tools}");
    // verify accepts the script and the workdir.
    for accepted in ["work/job.py", "work"] {
        let out = expect(
            &qualify(
                dir,
                &["verify", "r.json", "--key", "k.pub", "--artifact", accepted],
            ),
            0,
        );
        assert!(out.contains("subject digest matches"), "{out}");
    }
    // …not the interpreter, and not a workdir whose files changed.
    let python = String::from_utf8(
        Command::new("sh")
            .args(["-c", "command -v python3"])
            .output()
            .unwrap()
            .stdout,
    )
    .unwrap();
    let v = expect(
        &qualify(
            dir,
            &[
                "verify",
                "r.json",
                "--key",
                "k.pub",
                "--artifact",
                python.trim(),
            ],
        ),
        1,
    );
    assert!(v.contains("subject digest check failed"), "{v}");
    std::fs::write(work.join("lib/helper.py"), "X = 2\n").unwrap();
    let v = expect(
        &qualify(
            dir,
            &["verify", "r.json", "--key", "k.pub", "--artifact", "work"],
        ),
        1,
    );
    assert!(v.contains("subject digest check failed"), "{v}");
}

/// A signed receipt (the evidence golden, signed here) with a second `"payload"` key holding a
/// forged Statement, and the same receipt cut in half. Every reader refuses both as unreadable
/// (exit 2, the duplicate named), so no reader judges another copy than the signed one.
#[test]
fn a_duplicate_payload_key_or_a_truncated_receipt_is_unreadable_everywhere() {
    use qualify_trust::{Algorithm, IN_TOTO_PAYLOAD_TYPE, PrivateKey};
    let d = scratch("duplicate");
    let dir = d.0.as_path();
    let key = PrivateKey::generate(Algorithm::P256);
    std::fs::write(dir.join("k.pub"), key.public_key().to_pem().unwrap()).unwrap();
    let golden = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../qualify-evidence/src/tests/golden/receipt.json");
    let statement = std::fs::read_to_string(golden).unwrap();
    let env = Envelope::sign(IN_TOTO_PAYLOAD_TYPE, statement.as_bytes(), &key);
    std::fs::write(dir.join("signed.json"), env.to_json()).unwrap();
    // The signed receipt: verified, and its functional claim refused (its functional layer failed).
    expect(
        &qualify(dir, &["verify", "signed.json", "--key", "k.pub"]),
        0,
    );
    expect(
        &qualify(dir, &["gate", "signed.json", "--claim", "functional"]),
        1,
    );

    let mut forged: Value = serde_json::from_str(&statement).unwrap();
    forged["predicate"]["layers"]["functional"]["status"] = "closed".into();
    forged["predicate"]["incomplete"] = false.into();
    let forged_payload = base64_of(forged.to_string().as_bytes());
    let signed = env.to_json();
    let doubled = signed.replacen(
        "\"signatures\"",
        &format!("\"payload\":\"{forged_payload}\",\"signatures\""),
        1,
    );
    assert_ne!(doubled, signed);
    std::fs::write(dir.join("doubled.json"), &doubled).unwrap();
    std::fs::write(dir.join("cut.json"), &signed[..signed.len() / 2]).unwrap();
    for (file, needle) in [
        ("doubled.json", "duplicate key `payload`"),
        ("cut.json", "EOF"),
    ] {
        for args in [
            vec!["verify", file, "--key", "k.pub"],
            vec!["gate", file, "--claim", "functional"],
            vec!["gate", file, "--claim", "functional", "--key", "k.pub"],
            vec!["report", file],
            vec!["report", file, "--key", "k.pub"],
            vec!["ledger", "--ledger", "l.sqlite", "append", file],
        ] {
            let o = qualify(dir, &args);
            assert_eq!(o.status.code(), Some(2), "{args:?}: {}", text(&o));
            let err = String::from_utf8_lossy(&o.stderr);
            assert!(
                err.contains(needle) && err.contains("line 1"),
                "{args:?}: {}",
                text(&o)
            );
            assert!(
                !String::from_utf8_lossy(&o.stdout).contains("ACCEPTED"),
                "{args:?}"
            );
        }
    }
}
