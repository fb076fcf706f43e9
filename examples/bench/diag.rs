//! Diagnostics behind the bench's targets: `--diag-spawn` (what a spawn
//! costs with single options changed) and `--diag-ping` (the ping round
//! trip with the scheduler's CPU placement taken out).

use std::path::Path;
use std::time::Instant;

use super::peers::{Conduit, Floor, Rmcp};
use super::{floor_ping_series, percentile, ping_series, us, vm_rss_kib};

/// `--diag-spawn N`: spawn-to-ready of conduit with its default config and
/// with single options changed, against rmcp, interleaved N times; prints
/// min / median / p90 (min is the least disturbed by other load).
pub fn spawn(exe: &Path, n: usize) {
    let rt = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .expect("runtime");
    let variants: &[(&str, &[&str])] = &[
        ("conduit default", &[]),
        (
            "conduit die_with_parent=false",
            &["BENCH_DIAG_NO_PDEATHSIG"],
        ),
        ("conduit era=legacy", &["BENCH_DIAG_LEGACY"]),
        ("rmcp", &[]),
    ];
    let all = [
        "BENCH_DIAG_NO_PDEATHSIG",
        "BENCH_DIAG_NO_PGROUP",
        "BENCH_DIAG_LEGACY",
    ];
    // Optional touched ballast: a fork() would copy its page tables; a
    // posix_spawn-like clone(CLONE_VM | CLONE_VFORK) does not.
    let ballast_mib: usize = std::env::var("BENCH_DIAG_BALLAST_MIB")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(0);
    let ballast = vec![1u8; ballast_mib << 20];
    println!("parent VmRSS {} KiB", vm_rss_kib());
    let mut times: Vec<Vec<f64>> = vec![Vec::new(); variants.len()];
    for _ in 0..n {
        for (i, (name, env)) in variants.iter().enumerate() {
            for k in all {
                std::env::remove_var(k);
            }
            for k in env.iter() {
                std::env::set_var(k, "1");
            }
            let t = Instant::now();
            let res = rt.block_on(async {
                if name.starts_with("rmcp") {
                    let c = Rmcp::start(exe).await?;
                    let el = t.elapsed();
                    c.close().await;
                    Ok::<_, String>(el)
                } else {
                    let c = Conduit::start(exe, None).await?;
                    let el = t.elapsed();
                    c.close().await;
                    Ok(el)
                }
            });
            match res {
                Ok(el) => times[i].push(us(el)),
                Err(e) => eprintln!("{name}: {e}"),
            }
        }
    }
    for k in all {
        std::env::remove_var(k);
    }
    drop(ballast);
    for ((name, _), mut t) in variants.iter().zip(times) {
        t.sort_by(|a, b| a.total_cmp(b));
        println!(
            "{name:<32} min {:>7.0} us  median {:>7.0} us  p90 {:>7.0} us",
            percentile(&t, 0.0),
            percentile(&t, 0.5),
            percentile(&t, 0.9)
        );
    }
}

/// `--diag-ping N`: ping p50 of the floor, of conduit on a multi-thread and
/// a current-thread runtime, and of rmcp, N interleaved rounds of 5,000
/// pings.
///
/// With `pin` (the default) this process, and so every child, runs on CPU 0
/// only. Unpinned, a round trip on this kind of virtual machine is bimodal:
/// when the scheduler puts the two processes on different CPUs, each wake of
/// an idle CPU costs tens of microseconds, for the floor as for anyone, and
/// which mode a run lands in is chance. Pinned, what is left is the work.
pub fn ping(exe: &Path, rounds: usize, pin: bool) {
    const PINGS: usize = 5000;
    const WARMUP: usize = 500;
    if pin {
        pin_to_cpu0();
    }
    let mt = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .expect("runtime");
    let ct = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("runtime");
    let mut p50s: [Vec<f64>; 4] = Default::default();
    for _ in 0..rounds {
        match floor_pings(exe, WARMUP, PINGS) {
            Ok(mut lat) => p50s[0].push(p50(&mut lat)),
            Err(e) => eprintln!("floor: {e}"),
        }
        for (i, rt) in [(1, &mt), (2, &ct)] {
            let r = rt.block_on(async {
                let c = Conduit::start(exe, None).await?;
                let lat = ping_series(c.ping_fn(), WARMUP, PINGS).await;
                c.close().await;
                lat
            });
            match r {
                Ok(mut lat) => p50s[i].push(p50(&mut lat)),
                Err(e) => eprintln!("conduit: {e}"),
            }
        }
        let r = mt.block_on(async {
            let c = Rmcp::start(exe).await?;
            let lat = ping_series(c.ping_fn(), WARMUP, PINGS).await;
            c.close().await;
            lat
        });
        match r {
            Ok(mut lat) => p50s[3].push(p50(&mut lat)),
            Err(e) => eprintln!("rmcp: {e}"),
        }
    }
    let names = [
        "floor",
        "conduit, multi-thread runtime",
        "conduit, current-thread runtime",
        "rmcp, multi-thread runtime",
    ];
    let floor = p50(&mut p50s[0].clone());
    println!(
        "ping p50, median of {rounds} rounds x {PINGS} pings ({})",
        if pin { "pinned to CPU 0" } else { "not pinned" }
    );
    for (name, v) in names.iter().zip(p50s.iter_mut()) {
        let m = p50(v);
        println!("{name:<34} {m:>7.2} us  {:>5.2} x floor", m / floor);
    }
}

fn floor_pings(exe: &Path, warmup: usize, n: usize) -> std::io::Result<Vec<f64>> {
    let mut f = Floor::start(exe)?;
    let lat = floor_ping_series(&mut f, warmup, n);
    let _ = f.close();
    lat
}

fn p50(v: &mut [f64]) -> f64 {
    if v.is_empty() {
        return f64::NAN;
    }
    v.sort_by(|a, b| a.total_cmp(b));
    percentile(v, 0.5)
}

/// Restricts this process (and the children it spawns from now on) to CPU 0.
fn pin_to_cpu0() {
    // SAFETY: cpu_set_t is plain data, initialised by CPU_ZERO; the call
    // only reads it.
    unsafe {
        let mut set: libc::cpu_set_t = std::mem::zeroed();
        libc::CPU_ZERO(&mut set);
        libc::CPU_SET(0, &mut set);
        if libc::sched_setaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &set) != 0 {
            eprintln!(
                "could not pin to CPU 0: {}",
                std::io::Error::last_os_error()
            );
        }
    }
}
