//! `rankscope report` in a real browser: headless Chromium (the Debian package `chromium`)
//! loads the page of samples/tp8-custom-ar against samples/tp8-baseline, and the DOM after
//! the page's script ran, the console, and a screenshot are checked; the hostile page's
//! DOM holds no element made of log text.
//!
//! Ignored in a plain `cargo test` (it needs Chromium); `.ci/run` installs the package and
//! runs it with `cargo test --test report_browser -- --ignored`, so a missing browser fails
//! CI rather than passing. `RANKSCOPE_CHROMIUM` names another binary.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::io::Read;
use std::path::{Path, PathBuf};
use std::process::Command;

fn chromium() -> String {
    std::env::var("RANKSCOPE_CHROMIUM").unwrap_or_else(|_| "chromium".into())
}

/// Headless Chromium on `page` with `args`: (stdout, stderr). Panics when it cannot run.
fn browse(page: &Path, args: &[&str]) -> (String, String) {
    let out = Command::new(chromium())
        .args([
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--hide-scrollbars",
            "--no-first-run",
            "--enable-logging=stderr",
            "--v=0",
            // Nothing may be fetched; were anything asked for, it would fail here too.
            "--host-resolver-rules=MAP * ~NOTFOUND",
        ])
        .args(args)
        .arg(format!("file://{}", page.display()))
        .output()
        .unwrap_or_else(|e| {
            panic!(
                "cannot run {} ({e}): install the Debian package `chromium` (.ci/run does)",
                chromium()
            )
        });
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    (
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

/// The page's console: every message Chromium logged from it.
fn console(stderr: &str) -> Vec<&str> {
    stderr.lines().filter(|l| l.contains(":CONSOLE")).collect()
}

fn write_page(dir: &Path, args: &[&str]) -> PathBuf {
    let page = dir.join("page.html");
    let out = assert_cmd::Command::cargo_bin("rankscope")
        .expect("binary built")
        .env_remove("RANKSCOPE_GRAMMAR_DIR")
        .env("XDG_CONFIG_HOME", "/nonexistent")
        .arg("report")
        .args(args)
        .arg("-o")
        .arg(&page)
        .output()
        .expect("runs");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    page
}

/// An 8-bit RGB or RGBA PNG, not interlaced (what Chromium writes), as RGB rows.
struct Image {
    width: usize,
    height: usize,
    rgb: Vec<[u8; 3]>,
}

impl Image {
    fn pixel(&self, x: usize, y: usize) -> [u8; 3] {
        self.rgb[y * self.width + x]
    }
}

fn decode_png(bytes: &[u8]) -> Image {
    assert_eq!(&bytes[..8], b"\x89PNG\r\n\x1a\n", "a PNG");
    let (mut pos, mut idat) = (8, Vec::new());
    let (mut width, mut height, mut channels) = (0, 0, 0);
    while pos + 8 <= bytes.len() {
        let len = u32::from_be_bytes(bytes[pos..pos + 4].try_into().expect("4 bytes")) as usize;
        let kind = &bytes[pos + 4..pos + 8];
        let data = &bytes[pos + 8..pos + 8 + len];
        match kind {
            b"IHDR" => {
                width = u32::from_be_bytes(data[0..4].try_into().expect("4")) as usize;
                height = u32::from_be_bytes(data[4..8].try_into().expect("4")) as usize;
                assert_eq!(data[8], 8, "bit depth");
                channels = match data[9] {
                    2 => 3,
                    6 => 4,
                    t => panic!("colour type {t}"),
                };
                assert_eq!(data[12], 0, "not interlaced");
            }
            b"IDAT" => idat.extend_from_slice(data),
            _ => {}
        }
        pos += 12 + len;
    }
    let mut raw = Vec::new();
    flate2::read::ZlibDecoder::new(&idat[..])
        .read_to_end(&mut raw)
        .expect("zlib");
    let stride = width * channels;
    let mut prev = vec![0u8; stride];
    let mut rgb = Vec::with_capacity(width * height);
    for y in 0..height {
        let line = &raw[y * (stride + 1)..(y + 1) * (stride + 1)];
        let mut cur = line[1..].to_vec();
        for i in 0..stride {
            let a = if i >= channels { cur[i - channels] } else { 0 };
            let b = prev[i];
            let c = if i >= channels { prev[i - channels] } else { 0 };
            let add = match line[0] {
                0 => 0,
                1 => a,
                2 => b,
                3 => ((a as u16 + b as u16) / 2) as u8,
                4 => {
                    let p = a as i16 + b as i16 - c as i16;
                    let (pa, pb, pc) = (
                        (p - a as i16).abs(),
                        (p - b as i16).abs(),
                        (p - c as i16).abs(),
                    );
                    if pa <= pb && pa <= pc {
                        a
                    } else if pb <= pc {
                        b
                    } else {
                        c
                    }
                }
                f => panic!("filter {f}"),
            };
            cur[i] = cur[i].wrapping_add(add);
        }
        rgb.extend(cur.chunks(channels).map(|p| [p[0], p[1], p[2]]));
        prev = cur;
    }
    Image { width, height, rgb }
}

fn near(p: [u8; 3], q: [u8; 3], tolerance: i16) -> bool {
    p.iter()
        .zip(q)
        .all(|(a, b)| (*a as i16 - b as i16).abs() <= tolerance)
}

/// The page's light-scheme colours (src/render/html/mod.rs): weight_load's bars and the
/// failure's marks.
const WEIGHT_LOAD: [u8; 3] = [0x00, 0x9e, 0x73];
const FAIL: [u8; 3] = [0xd6, 0x27, 0x28];

#[test]
#[ignore = "needs Chromium: .ci/run installs it and runs this with --ignored"]
fn tp8_page_in_chromium() {
    let dir = tempfile::tempdir().expect("tempdir");
    let page = write_page(
        dir.path(),
        &["samples/tp8-custom-ar", "--vs", "samples/tp8-baseline"],
    );
    let (dom, log) = browse(&page, &["--dump-dom"]);
    assert_eq!(console(&log), Vec::<&str>::new(), "console messages");
    // The verdict and its evidence, as the browser parsed them.
    assert!(dom.contains(
        "candidate: all 8 ranks ran out of memory in cuda_graph; baseline reached ready"
    ));
    assert!(dom.contains("samples/tp8-custom-ar/server.log:82"));
    assert!(
        dom.contains("torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 20.00 MiB.")
    );
    // The script ran to its end: it counts the lanes it laid out.
    assert!(dom.contains("<span class=\"muted\" id=\"tl-cand-count\">8 of 8 lanes</span>"));
    let start = dom.find("id=\"tl-cand\"").expect("timeline");
    let tl = &dom[start..start + dom[start..].find("</svg>").expect("svg ends")];
    assert_eq!(tl.matches("<g class=\"lane").count(), 8);
    // Every rank failed in cuda_graph: each lane's last bar marked.
    assert_eq!(tl.matches("failph").count(), 8);
    // Nothing to fetch: no element names a source.
    for needle in [" src=", " href=", "<link", "<iframe"] {
        assert!(!dom.contains(needle), "{needle}");
    }

    // The screenshot, light scheme: not blank, and the failure's red in the timeline.
    let shot = dir.path().join("light.png");
    let (_, log) = browse(
        &page,
        &[
            "--window-size=1280,2600",
            &format!("--screenshot={}", shot.display()),
        ],
    );
    assert_eq!(console(&log), Vec::<&str>::new(), "console messages");
    let img = decode_png(&std::fs::read(&shot).expect("screenshot"));
    assert_eq!(img.pixel(2, 2), [255, 255, 255], "light background");
    let inked = img.rgb.iter().filter(|p| **p != [255, 255, 255]).count();
    assert!(
        inked * 20 > img.rgb.len(),
        "blank page? {inked} inked pixels"
    );
    // The timeline: the first cluster of rows where weight_load's bars span 100 pixels (the
    // legend's swatch is 14 wide; lanes are 20 apart; the memory bars come much further down).
    let green: Vec<usize> = (0..img.height)
        .filter(|&y| {
            (0..img.width)
                .filter(|&x| near(img.pixel(x, y), WEIGHT_LOAD, 4))
                .count()
                >= 100
        })
        .collect();
    let top = *green.first().expect("timeline bars");
    let mut bottom = top;
    for &y in &green {
        if y > bottom + 12 {
            break;
        }
        bottom = y;
    }
    assert!(
        bottom - top > 7 * 20 - 10,
        "eight lanes: rows {top}..{bottom}"
    );
    let red = (top.saturating_sub(4)..bottom + 4)
        .flat_map(|y| (0..img.width).map(move |x| (x, y)))
        .filter(|&(x, y)| near(img.pixel(x, y), FAIL, 8))
        .count();
    eprintln!("timeline rows {top}..{bottom}: {red} pixels of the failure's red");
    assert!(
        red >= 100,
        "failure marks in the timeline: {red} red pixels"
    );

    // The dark scheme: the page follows prefers-color-scheme.
    let dark = dir.path().join("dark.png");
    browse(
        &page,
        &[
            "--force-dark-mode",
            "--blink-settings=preferredColorScheme=0",
            "--window-size=1280,800",
            &format!("--screenshot={}", dark.display()),
        ],
    );
    let img = decode_png(&std::fs::read(&dark).expect("screenshot"));
    let [r, g, b] = img.pixel(2, 2);
    assert!(
        u16::from(r) + u16::from(g) + u16::from(b) < 120,
        "dark background, got {:?}",
        [r, g, b]
    );
}

/// Markup in log text stays text once a browser has parsed the page: no element of it.
#[test]
#[ignore = "needs Chromium: .ci/run installs it and runs this with --ignored"]
fn hostile_page_in_chromium() {
    let dir = tempfile::tempdir().expect("tempdir");
    let run = dir.path().join("run");
    std::fs::create_dir(&run).expect("run dir");
    std::fs::write(
        run.join("server.log"),
        "[2026-11-29 09:18:30] server_args=ServerArgs(model_path='</svg><script>document.title=1</script>', tp_size=1)\n\
         [2026-11-29 09:18:33 TP0] Init torch distributed begin.\n\
         <img src=x onerror=\"document.title=2\"> </table></svg>\n\
         [2026-11-29 09:18:36 TP0] Scheduler hit an exception: Traceback (most recent call last):\n  \
         File \"/opt/x.py\", line 3, in load\n    \
         load('javascript:document.title=3')\n\
         RuntimeError: bad <script>document.title=4</script> <a href=\"javascript:document.title=5\">x</a>\n\n",
    )
    .expect("log written");
    let page = write_page(dir.path(), &[run.to_str().expect("UTF-8 path")]);
    let (dom, log) = browse(&page, &["--dump-dom"]);
    assert_eq!(console(&log), Vec::<&str>::new(), "console messages");
    assert_eq!(
        dom.matches("<script").count(),
        1,
        "only the page's own script"
    );
    for element in ["<img", "<a "] {
        assert!(!dom.contains(element), "{element} became markup");
    }
    // The title is the page's own: no log text ran.
    assert!(dom.contains("<title>rankscope report: "));
    assert!(dom.contains("RuntimeError: bad &lt;script&gt;document.title=4&lt;/script&gt;"));
    assert!(dom.contains("&lt;img src=x onerror=\"document.title=2\"&gt;"));
}
