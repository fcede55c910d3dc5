//! The proxy started on a thread that first joins a cell's network namespace (the integration's
//! pattern: setns is per thread): its listener lives in that namespace only, and connects refused
//! during `down` are counted from the namespace's TCP counters. Needs root (CAP_SYS_ADMIN) to
//! create the namespace; skips with a message otherwise.

mod common;

use std::fs::File;
use std::io;
use std::os::fd::AsRawFd;
use std::sync::mpsc;
use std::time::{Duration, Instant};

use common::*;
use qualify_faults::{Fault, Proxy, ProxyConfig, Window};

/// Bring the loopback interface of the current thread's namespace up.
fn loopback_up() -> io::Result<()> {
    unsafe {
        let fd = libc::socket(libc::AF_INET, libc::SOCK_DGRAM, 0);
        if fd < 0 {
            return Err(io::Error::last_os_error());
        }
        let mut ifr: libc::ifreq = std::mem::zeroed();
        for (i, b) in b"lo".iter().enumerate() {
            ifr.ifr_name[i] = *b as libc::c_char;
        }
        let result = if libc::ioctl(fd, libc::SIOCGIFFLAGS, &mut ifr) < 0 {
            Err(io::Error::last_os_error())
        } else {
            ifr.ifr_ifru.ifru_flags |= libc::IFF_UP as libc::c_short;
            if libc::ioctl(fd, libc::SIOCSIFFLAGS, &ifr) < 0 {
                Err(io::Error::last_os_error())
            } else {
                Ok(())
            }
        };
        libc::close(fd);
        result
    }
}

fn join_netns(ns: &File) -> io::Result<()> {
    if unsafe { libc::setns(ns.as_raw_fd(), libc::CLONE_NEWNET) } != 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(())
}

#[test]
fn a_proxy_in_a_cells_namespace_counts_refused_connects_while_down() {
    // The "cell" thread: a fresh namespace with redis in it. It keeps redis (and so the
    // namespace) alive until told to stop, then drops the server guard.
    let (ready_tx, ready_rx) = mpsc::channel();
    let (stop_tx, stop_rx) = mpsc::channel::<()>();
    let cell = std::thread::spawn(move || {
        if unsafe { libc::unshare(libc::CLONE_NEWNET) } != 0 {
            let _ = ready_tx.send(Err(io::Error::last_os_error()));
            return;
        }
        if let Err(e) = loopback_up() {
            let _ = ready_tx.send(Err(e));
            return;
        }
        let dir = tempfile::tempdir().expect("temp dir");
        let server = redis(dir.path());
        let ns = File::open("/proc/thread-self/ns/net").expect("open own netns");
        let _ = ready_tx.send(Ok((server.addr, ns)));
        let _ = stop_rx.recv();
        drop(server);
    });
    let (redis_addr, ns) = match ready_rx.recv().expect("cell thread answers") {
        Ok(v) => v,
        Err(e) => {
            eprintln!("SKIP: cannot create a network namespace here ({e}); needs root");
            let _ = cell.join();
            return;
        }
    };

    let mut config = ProxyConfig::new(
        "db",
        redis_addr,
        "down".parse::<Fault>().unwrap(),
        Window {
            start: Duration::from_millis(200),
            end: Duration::from_secs(60),
        },
    );
    config.count_failed_connects = true;
    let ns_for_proxy = ns.try_clone().unwrap();
    let proxy = Proxy::start_with(config, move || join_netns(&ns_for_proxy)).unwrap();
    let addr = proxy.local_addr();

    // From the host's namespace the proxy is not there (redis is not either).
    assert!(std::net::TcpStream::connect(addr).is_err());

    // A client in the cell's namespace: clean before the window, refused in it.
    let client_ns = ns.try_clone().unwrap();
    let (refused, proxy) = std::thread::spawn(move || {
        join_netns(&client_ns).unwrap();
        let mut c = connect(addr, Duration::from_secs(10)).unwrap();
        ping(&mut c).unwrap();
        drop(c);
        proxy.arm(Instant::now()).unwrap();
        wait_window_start(&proxy);
        let mut refused = 0;
        for _ in 0..5 {
            let e = std::net::TcpStream::connect(addr).unwrap_err();
            assert_eq!(e.kind(), io::ErrorKind::ConnectionRefused);
            refused += 1;
        }
        assert_eq!(listening_on_in_thread_netns(addr.port()), 0);
        (refused, proxy)
    })
    .join()
    .unwrap();

    let s = proxy.stop();
    assert_eq!(s.unarmed.connections_opened, 1);
    assert_eq!(s.unarmed.failed_connects, Some(0));
    assert_eq!(s.before.failed_connects, Some(0));
    assert_eq!(s.during.failed_connects, Some(refused), "{:?}", s.during);
    assert_eq!(s.during.connections_opened, 0);
    assert!(s.errors.is_empty(), "{:?}", s.errors);
    let _ = stop_tx.send(());
    cell.join().unwrap();
}

/// `listening_on` reads /proc/net/tcp, which is the calling thread's namespace view only when
/// read through /proc/thread-self.
fn listening_on_in_thread_netns(port: u16) -> usize {
    let text = std::fs::read_to_string("/proc/thread-self/net/tcp").unwrap_or_default();
    text.lines()
        .skip(1)
        .filter(|l| {
            let f: Vec<&str> = l.split_whitespace().collect();
            f.len() > 3
                && f[1]
                    .rsplit(':')
                    .next()
                    .and_then(|p| u16::from_str_radix(p, 16).ok())
                    == Some(port)
                && f[3] == "0A"
        })
        .count()
}
