//! Blob stores (docs/stores.md): `ksym-pack --store`, and
//! `ksym-resolve --store` picking each trace's kernel, against real
//! servers: python3's `http.server` over a store directory, elfutils'
//! `debuginfod` serving an ELF file's `.ksym` section and a `cc -g`
//! program's debuginfo, a server answering 500 and one that never answers.
//! Every server listens on 127.0.0.1 inside a network namespace the test
//! makes (`unshare -n`, then `ip link set lo up`), so no traffic can reach
//! any other address; every wait is bounded.

mod common;
use common::*;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};

const ID_618: &str = "1111111111111111111111111111111111111111";
const ID_61A: &str = "2222222222222222222222222222222222222222";
const ID_61B: &str = "3333333333333333333333333333333333333333";

/// True when this user can make a network namespace (root, as in CI).
fn can_unshare() -> bool {
    let ok = Command::new("unshare")
        .args(["-n", "true"])
        .stderr(Stdio::null())
        .status()
        .is_ok_and(|s| s.success());
    if !ok {
        assert!(
            std::env::var_os("CI").is_none(),
            "CI must run as root: unshare -n failed"
        );
        eprintln!("SKIPPED: cannot unshare -n (not root)");
    }
    ok
}

/// Runs `script` (sh) in a fresh network namespace with loopback up,
/// with `timeout 120` around it: no test can hang.
fn in_netns(dir: &Path, script: &str) -> Output {
    let path = dir.join("script.sh");
    let bins = Path::new(env!("CARGO_BIN_EXE_ksym-resolve"))
        .parent()
        .unwrap();
    let full = format!(
        "set -e\nip link set lo up\nexport PATH={}:$PATH\ncd {}\n{script}\n",
        bins.display(),
        dir.display()
    );
    std::fs::write(&path, full).unwrap();
    Command::new("timeout")
        .args(["120", "unshare", "-n", "sh"])
        .arg(&path)
        .output()
        .expect("unshare")
}

fn check(out: &Output) -> String {
    let err = String::from_utf8_lossy(&out.stderr).into_owned();
    assert!(
        out.status.success(),
        "script failed: {err}\n{}",
        String::from_utf8_lossy(&out.stdout)
    );
    err
}

/// Packs the two sample kernels into `store`: 6.18 once, 6.1 twice (two
/// builds of one release).
fn fill_store(dir: &Path, store: &Path) -> (Vec<u8>, Vec<u8>) {
    let k618 = run_ok("ksym-filter", &[], &sample("kallsyms-6.18-sample.txt.xz"));
    let k61 = run_ok("ksym-filter", &[], &sample("System.map-6.1.0-56-sample.xz"));
    let s = store.to_str().unwrap();
    for (list, rel, id) in [
        (&k618, "6.18.0-test", ID_618),
        (&k61, "6.1.0-56-amd64", ID_61A),
        (&k61, "6.1.0-56-amd64", ID_61B),
    ] {
        let f = dir.join(format!("{id}.txt"));
        std::fs::write(&f, list).unwrap();
        let out = run(
            "ksym-pack",
            &[
                "--format",
                "v2",
                "--release",
                rel,
                "--build-id",
                id,
                "--store",
                s,
                f.to_str().unwrap(),
            ],
            b"",
        );
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
    }
    (k618, k61)
}

/// The address and name of line `n` of a ksym-filter list.
fn sym(list: &[u8], n: usize) -> (String, String) {
    let l = String::from_utf8_lossy(lines(list).nth(n).unwrap()).into_owned();
    (l[..16].to_string(), l[19..].to_string())
}

/// A dmesg with oopses of three kernels and an unknown one.
fn mixed_dmesg(k618: &[u8], k61: &[u8]) -> (String, String, String) {
    let (a1, n1) = sym(k618, 500);
    let (a2, n2) = sym(k61, 800);
    let text = format!(
        "[   10.000001] CPU: 1 PID: 7 Comm: kworker/1:0 Not tainted 6.18.0-test #1\n\
         [   10.000002] RIP: 0010:0x{a1}\n\
         [   20.000001] CPU: 0 PID: 1 Comm: init Tainted: G        W          6.1.0-56-amd64 #1 Debian 6.1.192-2 {ID_61A}\n\
         [   20.000002] RIP: 0010:0x{a2}\n\
         [   30.000001] CPU: 0 PID: 1 Comm: init Not tainted 6.1.0-56-amd64 #1 Debian 6.1.192-2\n\
         [   30.000002] RIP: 0010:0x{a2}\n\
         [   40.000001] CPU: 0 PID: 1 Comm: init Not tainted 5.10.0-99-amd64 #1 Debian\n\
         [   40.000002] RIP: 0010:0x{a2}\n"
    );
    (text, n1, n2)
}

/// The resolved dmesg: the first two kernels' frames named, the shared
/// release and the unknown one left as they are, with one note each.
fn assert_mixed(stdout: &[u8], stderr: &str, n1: &str, n2: &str, a2: &str) {
    let out = String::from_utf8_lossy(stdout);
    let l: Vec<&str> = out.lines().collect();
    assert_eq!(l.len(), 8, "{out}");
    assert!(l[1].contains(&format!("RIP: 0010:{n1}+0x0/")), "{out}");
    assert!(l[3].contains(&format!("RIP: 0010:{n2}+0x0/")), "{out}");
    assert!(l[5].ends_with(&format!("RIP: 0010:0x{a2}")), "{out}");
    assert!(l[7].ends_with(&format!("RIP: 0010:0x{a2}")), "{out}");
    assert!(
        stderr.contains(&format!(
            "release 6.1.0-56-amd64: 2 builds in the store ({ID_61A}, {ID_61B})"
        )),
        "{stderr}"
    );
    assert!(
        stderr.contains("release 5.10.0-99-amd64: not in the store"),
        "{stderr}"
    );
}

#[test]
fn directory_store_and_concurrent_packs() {
    let dir = scratch("store-dir");
    let store = dir.join("store");
    let (k618, k61) = fill_store(&dir, &store);
    let (text, n1, n2) = mixed_dmesg(&k618, &k61);
    let a2 = sym(&k61, 800).0;
    for spec in [
        store.to_str().unwrap().to_string(),
        format!("file://{}", store.display()),
    ] {
        let out = run("ksym-resolve", &["--store", &spec], text.as_bytes());
        assert!(out.status.success());
        assert_mixed(
            &out.stdout,
            &String::from_utf8_lossy(&out.stderr),
            &n1,
            &n2,
            &a2,
        );
    }
    // --build-id forces one kernel for every line.
    let out = run(
        "ksym-resolve",
        &["--store", store.to_str().unwrap(), "--build-id", ID_61B],
        format!("0x{a2}\n").as_bytes(),
    );
    assert!(String::from_utf8_lossy(&out.stdout).contains(&n2));

    // Eight packs at once into one store, one release: every blob opens and
    // the release lists all eight.
    let s = store.to_str().unwrap().to_string();
    let list = dir.join(format!("{ID_618}.txt"));
    let children: Vec<_> = (0..8)
        .map(|i| {
            let id = format!("{i:02x}{}", "ab".repeat(19));
            Command::new(bin("ksym-pack"))
                .args([
                    "--format",
                    "v2",
                    "--release",
                    "6.18.0-many",
                    "--build-id",
                    &id,
                    "--store",
                    &s,
                ])
                .arg(&list)
                .stderr(Stdio::piped())
                .spawn()
                .unwrap()
        })
        .collect();
    for c in children {
        let o = c.wait_with_output().unwrap();
        assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    }
    let rel = std::fs::read_to_string(store.join("release/6.18.0-many")).unwrap();
    assert_eq!(rel.lines().count(), 8, "{rel}");
    for id in rel.lines() {
        let b = store.join(format!("buildid/{id}/section/.ksym"));
        run_ok("ksym-pack", &["--check", b.to_str().unwrap()], b"");
    }
}

/// A python3 script serving the store directory on PORT (`http.server`),
/// answering 500 on PORT+1 and never answering on PORT+2.
const SERVERS: &str = r#"
import http.server, socket, sys, threading, functools
port, root = int(sys.argv[1]), sys.argv[2]
h = functools.partial(http.server.SimpleHTTPRequestHandler, directory=root)
class Quiet(http.server.SimpleHTTPRequestHandler):
    def log_message(self, *a): pass
class Fail(http.server.BaseHTTPRequestHandler):
    def do_GET(self):
        self.send_response(500); self.end_headers(); self.wfile.write(b"no")
    def log_message(self, *a): pass
def serve(port, handler):
    http.server.ThreadingHTTPServer(("127.0.0.1", port), handler).serve_forever()
threading.Thread(target=serve, args=(port, functools.partial(Quiet, directory=root)), daemon=True).start()
threading.Thread(target=serve, args=(port + 1, Fail), daemon=True).start()
s = socket.socket(); s.bind(("127.0.0.1", port + 2)); s.listen(16)
conns = []
while True:
    c, _ = s.accept(); conns.append(c)  # never answers
"#;

#[test]
fn http_store_cache_and_failures() {
    if !can_unshare() {
        return;
    }
    if !has("python3") || !has("curl") {
        assert!(
            std::env::var_os("CI").is_none(),
            "python3 and curl are needed; .ci/run installs them"
        );
        eprintln!("SKIPPED: python3 or curl missing");
        return;
    }
    let dir = scratch("store-http");
    let store = dir.join("store");
    let (k618, k61) = fill_store(&dir, &store);
    let (text, n1, n2) = mixed_dmesg(&k618, &k61);
    let a2 = sym(&k61, 800).0;
    std::fs::write(dir.join("mixed.txt"), &text).unwrap();
    std::fs::write(dir.join("servers.py"), SERVERS).unwrap();
    // A store whose blob is cut short.
    let bad = dir.join("bad");
    let src = store.join(format!("buildid/{ID_618}/section/.ksym"));
    let cut = bad.join(format!("buildid/{ID_618}/section/.ksym"));
    std::fs::create_dir_all(cut.parent().unwrap()).unwrap();
    let bytes = std::fs::read(&src).unwrap();
    std::fs::write(&cut, &bytes[..bytes.len() / 2]).unwrap();
    std::fs::create_dir_all(bad.join("release")).unwrap();
    std::fs::write(bad.join("release/6.18.0-test"), format!("{ID_618}\n")).unwrap();
    let perf = format!(
        "# ========\n# os release : 6.18.0-test\n# ========\n#\nswapper 0 [000] 1.0: cycles:\n\t{} [unknown] ([kernel.kallsyms])\n",
        sym(&k618, 500).0
    );
    std::fs::write(dir.join("perf.txt"), perf).unwrap();
    let script = r#"
python3 servers.py 18080 store >servers.log 2>&1 &
P1=$!
python3 -m http.server 18090 --bind 127.0.0.1 --directory bad >/dev/null 2>&1 &
P2=$!
# The same store with every blob compressed by gzip(1) (FORMAT.md §17).
cp -r store gzstore
for f in gzstore/buildid/*/section/.ksym; do gzip -n -c "$f" > "$f.gz" && mv "$f.gz" "$f"; done
python3 -m http.server 18091 --bind 127.0.0.1 --directory gzstore >/dev/null 2>&1 &
P3=$!
trap 'kill $P1 $P2 $P3 2>/dev/null; wait' EXIT
for i in $(seq 100); do curl -s -o /dev/null http://127.0.0.1:18080/ && curl -s -o /dev/null http://127.0.0.1:18090/ && curl -s -o /dev/null http://127.0.0.1:18091/ && break; sleep 0.1; done
export XDG_CACHE_HOME=$PWD/cache KSYM_TIMEOUT=2
ksym-resolve --store http://127.0.0.1:18080 mixed.txt > cold.out 2> cold.err
ksym-resolve --store http://127.0.0.1:18080 mixed.txt > warm.out 2> warm.err
# A damaged blob in the cache is fetched again.
f=cache/ksym/buildid/1111111111111111111111111111111111111111/section/.ksym
printf 'XXXX' | dd of=$f bs=1 seek=100 conv=notrunc 2>/dev/null
ksym-resolve --store http://127.0.0.1:18080 mixed.txt > refetch.out 2> refetch.err
ksym-resolve --store http://127.0.0.1:18080 perf.txt > perf.out 2> perf.err
XDG_CACHE_HOME=$PWD/gzcache ksym-resolve --store http://127.0.0.1:18091 mixed.txt > gz.out 2> gz.err
XDG_CACHE_HOME=$PWD/gzcache ksym-resolve --store http://127.0.0.1:18091 mixed.txt > gzwarm.out 2> gzwarm.err
# A build the store lacks: one request, then remembered for a while.
echo 0xffffffff81000000 | ksym-resolve --store http://127.0.0.1:18080 --build-id 4444444444444444444444444444444444444444 > miss.out 2> miss.err
# (a cache of its own: build-id 1111's good blob is cached already)
rc=0; XDG_CACHE_HOME=$PWD/cache2 ksym-resolve --store http://127.0.0.1:18090 mixed.txt > trunc.out 2> trunc.err || rc=$?; echo $rc > trunc.rc
rc=0; ksym-resolve --store http://127.0.0.1:18081 mixed.txt > e500.out 2> e500.err || rc=$?; echo $rc > e500.rc
start=$(date +%s%N)
rc=0; ksym-resolve --store http://127.0.0.1:18082 mixed.txt > hang.out 2> hang.err || rc=$?; echo $rc > hang.rc
echo $(( ($(date +%s%N) - start) / 1000000 )) > hang.ms
"#;
    check(&in_netns(&dir, script));
    let read = |n: &str| std::fs::read(dir.join(n)).unwrap();
    let read_path = |p: &Path| std::fs::read(p).unwrap();
    let text_of = |n: &str| String::from_utf8_lossy(&read(n)).into_owned();
    for run in ["cold", "warm", "refetch", "gz", "gzwarm"] {
        assert_mixed(
            &read(&format!("{run}.out")),
            &text_of(&format!("{run}.err")),
            &n1,
            &n2,
            &a2,
        );
    }
    assert_eq!(
        read("gz.out"),
        read("cold.out"),
        "a gzip store answers alike"
    );
    let gz_served = dir.join(format!("gzstore/buildid/{ID_618}/section/.ksym"));
    assert_eq!(&read_path(&gz_served)[..2], &[0x1f, 0x8b]);
    assert_eq!(
        read_path(&dir.join(format!("gzcache/ksym/buildid/{ID_618}/section/.ksym"))),
        bytes,
        "the cache keeps the blob inflated"
    );
    let cached = dir.join(format!("cache/ksym/buildid/{ID_618}/section/.ksym"));
    assert_eq!(
        std::fs::read(&cached).unwrap(),
        bytes,
        "the cache holds the blob, repaired"
    );
    assert!(
        text_of("perf.out").contains(&format!("{}+0x0 ([kernel.kallsyms])", sym(&k618, 500).1)),
        "{}",
        text_of("perf.out")
    );
    assert!(
        text_of("miss.err").contains("no blob in the store"),
        "{}",
        text_of("miss.err")
    );
    assert_eq!(text_of("miss.out"), "0xffffffff81000000\n");
    let marker =
        dir.join("cache/ksym/buildid/4444444444444444444444444444444444444444/section/.ksym.miss");
    assert!(marker.exists(), "the miss is remembered");
    let log = text_of("servers.log");
    assert!(!log.contains("Traceback"), "{log}");
    // A truncated blob: refused, nothing used, the lines unchanged.
    assert_eq!(text_of("trunc.rc").trim(), "1");
    assert!(
        text_of("trunc.err").contains("is damaged, not used"),
        "{}",
        text_of("trunc.err")
    );
    assert!(text_of("trunc.out").contains(&format!("RIP: 0010:0x{}", sym(&k618, 500).0)));
    // 500: a clear error; no answer: an error within the 2 s limit.
    assert_eq!(text_of("e500.rc").trim(), "1");
    assert!(
        text_of("e500.err").contains("HTTP 500"),
        "{}",
        text_of("e500.err")
    );
    assert_eq!(text_of("hang.rc").trim(), "1");
    let ms: u64 = text_of("hang.ms").trim().parse().unwrap();
    assert!(ms < 15_000, "a silent server took {ms} ms");
    assert!(
        text_of("hang.err").contains("127.0.0.1:18082"),
        "{}",
        text_of("hang.err")
    );
}

fn has(tool: &str) -> bool {
    Command::new("sh")
        .args(["-c", &format!("command -v {tool}")])
        .stdout(Stdio::null())
        .status()
        .is_ok_and(|s| s.success())
}

/// elfutils' debuginfod: `/section/.ksym` of an ELF carrying the blob, and
/// `ksym-pack --debuginfod` fetching a program's debuginfo by build-id.
#[test]
fn debuginfod_serves_sections_and_debuginfo() {
    if !can_unshare() {
        return;
    }
    if !has("debuginfod") || !has("curl") {
        assert!(
            std::env::var_os("CI").is_none(),
            "debuginfod is missing; .ci/run installs it"
        );
        eprintln!("SKIPPED: no debuginfod (apt-get install debuginfod)");
        return;
    }
    let dir = scratch("store-debuginfod");
    let data = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/lines");
    let served = dir.join("served");
    std::fs::create_dir_all(&served).unwrap();
    let prog: PathBuf = served.join("inl.elf");
    std::fs::copy(data.join("inl.elf"), &prog).unwrap();
    let id = {
        let bytes = std::fs::read(&prog).unwrap();
        use object::Object;
        let f = object::File::parse(&*bytes).unwrap();
        f.build_id()
            .unwrap()
            .expect("the test program has a build-id")
            .to_vec()
    };
    let idh: String = id.iter().map(|b| format!("{b:02x}")).collect();
    // The blob the local way, then an ELF carrying it as `.ksym`.
    let nm = Command::new("nm").arg("-n").arg(&prog).output().unwrap();
    let list = dir.join("syms");
    std::fs::write(&list, run_ok("ksym-filter", &[], &nm.stdout)).unwrap();
    let local = pack_file(&dir, &list, "v2", &["--lines", prog.to_str().unwrap()]);
    let carrier = dir.join("carrier");
    std::fs::create_dir_all(&carrier).unwrap();
    let out = Command::new("objcopy")
        .arg(format!("--add-section=.ksym={}", local.display()))
        .arg(&prog)
        .arg(carrier.join("inl-with-ksym.elf"))
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let addr = sym(&std::fs::read(&list).unwrap(), 3);
    let script = format!(
        r#"
debuginfod -F -d :memory: -p 18100 carrier > d1.log 2>&1 &
P1=$!
debuginfod -F -d :memory: -p 18101 served > d2.log 2>&1 &
P2=$!
trap 'kill $P1 $P2 2>/dev/null; wait' EXIT
for i in $(seq 200); do
  curl -sf -o /dev/null http://127.0.0.1:18100/buildid/{idh}/section/.ksym &&
  curl -sf -o /dev/null http://127.0.0.1:18101/buildid/{idh}/debuginfo && break
  sleep 0.1
done
export XDG_CACHE_HOME=$PWD/cache DEBUGINFOD_CACHE_PATH=$PWD/dcache KSYM_TIMEOUT=10
echo 0x{a} | ksym-resolve --store http://127.0.0.1:18100 --build-id {idh} > section.out
DEBUGINFOD_URLS="http://127.0.0.1:18109 http://127.0.0.1:18101" ksym-pack --format v2 --debuginfod {idh} -o fetched.bin 2> fetch.err
"#,
        a = addr.0
    );
    let err = check(&in_netns(&dir, &script));
    let section = std::fs::read_to_string(dir.join("section.out")).unwrap();
    assert!(section.contains(&addr.1), "{section} {err}");
    // The fetched program packs to the same symbols and lines.
    let dump = |p: &Path| run_ok("ksym-pack", &["--dump", p.to_str().unwrap()], b"");
    assert_eq!(dump(&dir.join("fetched.bin")), dump(&local));
    let probe = format!("0x{}\n", addr.0);
    let a = run_ok("ksym-resolve", &[local.to_str().unwrap()], probe.as_bytes());
    let b = run_ok(
        "ksym-resolve",
        &[dir.join("fetched.bin").to_str().unwrap()],
        probe.as_bytes(),
    );
    assert_eq!(a, b);
    assert!(
        String::from_utf8_lossy(&a).contains(".c:"),
        "lines from the fetched DWARF"
    );
}
