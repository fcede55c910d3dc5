//! The HTML report in a real browser: headless Chromium (Debian's `chromium`) loads the file from
//! disk with networking features off, takes a screenshot and dumps the DOM. Checks that the page
//! renders (a large, many-coloured PNG) and that the plots are in the rendered DOM. Skips with a
//! message when /usr/bin/chromium is absent (`.ci/run` installs it). Screenshots stay under the
//! target dir (and `*.png` is gitignored).

use std::io::Read;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

const CHROMIUM: &str = "/usr/bin/chromium";

fn fresh_dir(name: &str) -> PathBuf {
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR"))
        .join(format!("chromium-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

/// Run Chromium headless with a fresh profile; kill it if it hangs (a safety net, not a timing
/// assertion).
fn chromium(profile: &Path, extra: &[String]) -> Output {
    let mut child = Command::new(CHROMIUM)
        .args([
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--disable-quic",
            "--no-first-run",
            "--disable-background-networking",
            "--disable-component-update",
            "--disable-sync",
            "--hide-scrollbars",
        ])
        .arg(format!("--user-data-dir={}", profile.display()))
        .args(extra)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("start chromium");
    let mut stdout = child.stdout.take().unwrap();
    let mut stderr = child.stderr.take().unwrap();
    let out_t = std::thread::spawn(move || {
        let mut b = Vec::new();
        let _ = stdout.read_to_end(&mut b);
        b
    });
    let err_t = std::thread::spawn(move || {
        let mut b = Vec::new();
        let _ = stderr.read_to_end(&mut b);
        b
    });
    let deadline = Instant::now() + Duration::from_secs(180);
    let status = loop {
        if let Some(s) = child.try_wait().unwrap() {
            break s;
        }
        if Instant::now() > deadline {
            let _ = child.kill();
            let _ = child.wait();
            panic!("chromium did not finish within 180 s: {extra:?}");
        }
        std::thread::sleep(Duration::from_millis(100));
    };
    Output {
        status,
        stdout: out_t.join().unwrap(),
        stderr: err_t.join().unwrap(),
    }
}

#[test]
fn chromium_renders_the_report_with_its_plots() {
    if !Path::new(CHROMIUM).exists() {
        assert!(
            std::env::var_os("QUALIFY_REQUIRE_CHROMIUM").is_none(),
            "QUALIFY_REQUIRE_CHROMIUM is set but {CHROMIUM} is absent"
        );
        eprintln!(
            "skipping: {CHROMIUM} is absent; install Debian's `chromium` package (.ci/run does) to \
             render the HTML report in a browser"
        );
        return;
    }
    let dir = fresh_dir("report");
    let fixture = format!("{}/tests/fixtures/perf.json", env!("CARGO_MANIFEST_DIR"));
    let receipt: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(fixture).unwrap()).unwrap();
    let html = qualify_render::html(&receipt);
    let page = dir.join("report.html");
    std::fs::write(&page, &html).unwrap();
    let url = format!("file://{}", page.display());

    // Screenshot.
    let shot = dir.join("shot.png");
    let out = chromium(
        &dir.join("profile-shot"),
        &[
            format!("--screenshot={}", shot.display()),
            "--window-size=1200,2000".into(),
            url.clone(),
        ],
    );
    assert!(
        shot.exists(),
        "no screenshot; chromium exited {:?}: {}",
        out.status,
        String::from_utf8_lossy(&out.stderr)
    );
    let size = std::fs::metadata(&shot).unwrap().len();
    assert!(size > 20_000, "screenshot is only {size} bytes");
    let decoder = png::Decoder::new(std::io::BufReader::new(std::fs::File::open(&shot).unwrap()));
    let mut reader = decoder.read_info().unwrap();
    let mut buf = vec![0; reader.output_buffer_size().unwrap()];
    let info = reader.next_frame(&mut buf).unwrap();
    assert_eq!((info.width, info.height), (1200, 2000));
    let bpp = info.color_type.samples()
        * if info.bit_depth == png::BitDepth::Sixteen {
            2
        } else {
            1
        };
    let pixels = &buf[..info.buffer_size()];
    let mut colours = std::collections::HashSet::new();
    let mut non_white = 0usize;
    for px in pixels.chunks(bpp) {
        colours.insert(px[..3.min(px.len())].to_vec());
        if px[..3.min(px.len())].iter().any(|c| *c < 240) {
            non_white += 1;
        }
    }
    let total = pixels.len() / bpp;
    assert!(
        colours.len() > 50,
        "only {} distinct colours: the page did not render",
        colours.len()
    );
    assert!(
        non_white * 20 > total,
        "only {non_white} of {total} pixels are not white"
    );
    // The heatmap's outcome colours are on screen (ok green, timeout blue).
    let has = |rgb: [u8; 3]| pixels.chunks(bpp).any(|px| px[..3] == rgb);
    assert!(
        has([0x2e, 0x7d, 0x32]),
        "no ok-green square in the screenshot"
    );
    assert!(
        has([0x15, 0x65, 0xc0]),
        "no timeout-blue square in the screenshot"
    );
    eprintln!("screenshot: {}", shot.display());

    // The rendered DOM has the plots.
    let out = chromium(&dir.join("profile-dom"), &["--dump-dom".into(), url]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let dom = String::from_utf8_lossy(&out.stdout);
    assert_eq!(
        dom.matches("<svg").count(),
        5,
        "one <svg> per plot in the DOM"
    );
    for label in [
        "envelope heatmap",
        "wall against n, log-log, with fitted model",
        "speedup against threads",
        "parallel efficiency against threads",
        "target gap",
    ] {
        assert!(dom.contains(&format!("aria-label=\"{label}\"")), "{label}");
    }
    assert!(dom.contains("<polyline"));
    assert!(dom.contains("<circle"));
}

/// The Service under load section in a browser: the orders receipt (`qualify run` on the orders
/// example) renders its heatmap with the service outcomes' colours on screen, and the DOM holds
/// the hockey stick, the achieved-rate plot and two timelines per cell (closed `<details>` keep
/// theirs in the DOM).
#[test]
fn chromium_renders_the_service_section() {
    if !Path::new(CHROMIUM).exists() {
        assert!(
            std::env::var_os("QUALIFY_REQUIRE_CHROMIUM").is_none(),
            "QUALIFY_REQUIRE_CHROMIUM is set but {CHROMIUM} is absent"
        );
        eprintln!("skipping: {CHROMIUM} is absent; install Debian's `chromium` package");
        return;
    }
    let dir = fresh_dir("service");
    let fixture = format!("{}/tests/fixtures/orders.json", env!("CARGO_MANIFEST_DIR"));
    let receipt: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(fixture).unwrap()).unwrap();
    let cells = receipt["predicate"]["cells"].as_array().unwrap().len();
    let page = dir.join("report.html");
    std::fs::write(&page, qualify_render::html(&receipt)).unwrap();
    let url = format!("file://{}", page.display());

    let shot = dir.join("shot.png");
    let out = chromium(
        &dir.join("profile-shot"),
        &[
            format!("--screenshot={}", shot.display()),
            "--window-size=1200,2400".into(),
            url.clone(),
        ],
    );
    assert!(
        shot.exists(),
        "no screenshot; chromium exited {:?}: {}",
        out.status,
        String::from_utf8_lossy(&out.stderr)
    );
    let decoder = png::Decoder::new(std::io::BufReader::new(std::fs::File::open(&shot).unwrap()));
    let mut reader = decoder.read_info().unwrap();
    let mut buf = vec![0; reader.output_buffer_size().unwrap()];
    let info = reader.next_frame(&mut buf).unwrap();
    let bpp = info.color_type.samples()
        * if info.bit_depth == png::BitDepth::Sixteen {
            2
        } else {
            1
        };
    let pixels = &buf[..info.buffer_size()];
    let rgb = |hex: &str| -> [u8; 3] {
        let n = u32::from_str_radix(hex.trim_start_matches('#'), 16).unwrap();
        [(n >> 16) as u8, (n >> 8) as u8, n as u8]
    };
    for o in [
        qualify_model::Outcome::Ok,
        qualify_model::Outcome::SloViolated,
        qualify_model::Outcome::Overloaded,
    ] {
        let want = rgb(o.style().fill);
        assert!(
            pixels.chunks(bpp).any(|px| px[..3] == want),
            "no {o} square ({}) in the screenshot",
            o.style().fill
        );
    }
    eprintln!("screenshot: {}", shot.display());

    let out = chromium(&dir.join("profile-dom"), &["--dump-dom".into(), url]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let dom = String::from_utf8_lossy(&out.stdout);
    for label in [
        "envelope heatmap",
        "corrected latency against rps",
        "answers and goodput against rps",
    ] {
        assert!(dom.contains(&format!("aria-label=\"{label}\"")), "{label}");
    }
    assert_eq!(
        dom.matches("aria-label=\"requests per second, ").count(),
        cells
    );
    assert_eq!(
        dom.matches("aria-label=\"corrected p99 per second, ")
            .count(),
        cells
    );
    assert!(
        dom.contains("<details open=\"\">"),
        "non-ok cells' timelines are open"
    );
}
