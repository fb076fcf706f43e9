//! Diagnostics behind the bench's targets: `--diag-spawn` (what a spawn
//! costs with single options changed), `--diag-ping` (the ping round
//! trip with the scheduler's CPU placement taken out) and `--diag-op` (one
//! kind of operation, for profilers).

use std::path::Path;
use std::time::Instant;

use conduit_mcp::EraPreference;

use super::http::{self, Conn, Flow, HttpChild};
use super::peers::{ChildKind, Conduit, Floor, Rmcp};
use super::{floor_ping_series, percentile, ping_series, us, vm_rss_kib};

/// `--diag-spawn N`: spawn-to-ready of conduit with its default config and
/// with single options changed, against rmcp, interleaved N times; prints
/// min / median / p90 (min is the least disturbed by other load).
pub fn spawn(exe: &Path, n: usize) {
    let rt = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .expect("runtime");
    // (name, environment, era, child): conduit's default config (era auto)
    // against a legacy-only server and against the dual-era child, each era
    // pinned, and single options changed.
    let variants: &[(&str, &[&str], EraPreference, ChildKind)] = &[
        (
            "conduit auto, legacy-only server",
            &[],
            EraPreference::Auto,
            ChildKind::FloorLegacyOnly,
        ),
        (
            "conduit auto, dual-era server",
            &[],
            EraPreference::Auto,
            ChildKind::Floor,
        ),
        (
            "conduit era=legacy",
            &[],
            EraPreference::Stateful,
            ChildKind::Floor,
        ),
        (
            "conduit era=modern",
            &[],
            EraPreference::Stateless,
            ChildKind::Floor,
        ),
        (
            "conduit legacy die_with_parent=false",
            &["BENCH_DIAG_NO_PDEATHSIG"],
            EraPreference::Stateful,
            ChildKind::Floor,
        ),
        (
            "conduit legacy kill_process_group=false",
            &["BENCH_DIAG_NO_PGROUP"],
            EraPreference::Stateful,
            ChildKind::Floor,
        ),
        ("rmcp", &[], EraPreference::Auto, ChildKind::Floor),
    ];
    let all = ["BENCH_DIAG_NO_PDEATHSIG", "BENCH_DIAG_NO_PGROUP"];
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
        for (i, (name, env, era, child)) in variants.iter().enumerate() {
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
                    let c = Conduit::start(exe, *era, *child).await?;
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
    for ((name, ..), mut t) in variants.iter().zip(times) {
        t.sort_by(|a, b| a.total_cmp(b));
        println!(
            "{name:<40} min {:>7.0} us  median {:>7.0} us  p90 {:>7.0} us",
            percentile(&t, 0.0),
            percentile(&t, 0.5),
            percentile(&t, 0.9)
        );
    }
}

/// `--diag-ping N`: ping p50 of the floor, of conduit on a multi-thread and
/// a current-thread runtime (legacy era), of conduit in the modern era, and
/// of rmcp, N interleaved rounds of 5,000 pings.
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
        pin_to_cpu(super::pin_cpu());
    }
    let mt = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .expect("runtime");
    let ct = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("runtime");
    let mut p50s: [Vec<f64>; 5] = Default::default();
    for _ in 0..rounds {
        match floor_pings(exe, WARMUP, PINGS) {
            Ok(mut lat) => p50s[0].push(p50(&mut lat)),
            Err(e) => eprintln!("floor: {e}"),
        }
        for (i, rt, era) in [
            (1, &mt, EraPreference::Stateful),
            (2, &ct, EraPreference::Stateful),
            (3, &mt, EraPreference::Stateless),
        ] {
            let r = rt.block_on(async {
                let c = Conduit::start(exe, era, ChildKind::Floor).await?;
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
            Ok(mut lat) => p50s[4].push(p50(&mut lat)),
            Err(e) => eprintln!("rmcp: {e}"),
        }
    }
    let names = [
        "floor",
        "conduit, multi-thread runtime",
        "conduit, current-thread runtime",
        "conduit modern, multi-thread runtime",
        "rmcp, multi-thread runtime",
    ];
    let floor = p50(&mut p50s[0].clone());
    println!(
        "ping p50, median of {rounds} rounds x {PINGS} pings ({})",
        if pin {
            format!("pinned to CPU {}", super::pin_cpu())
        } else {
            "not pinned".to_owned()
        }
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

/// Restricts the calling thread, and the threads and children it starts
/// from now on, to CPU `cpu`. Called first thing in `main`, before any
/// thread exists, it pins the whole process and everything it starts.
pub fn pin_to_cpu(cpu: usize) {
    // SAFETY: cpu_set_t is plain data, initialised by CPU_ZERO; the call
    // only reads it.
    unsafe {
        let mut set: libc::cpu_set_t = std::mem::zeroed();
        libc::CPU_ZERO(&mut set);
        libc::CPU_SET(cpu, &mut set);
        if libc::sched_setaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &set) != 0 {
            eprintln!(
                "could not pin to CPU {cpu}: {}",
                std::io::Error::last_os_error()
            );
        }
    }
}

/// `--diag-op PEER OP N`: `n` operations of one kind against one peer and
/// nothing else, for profilers (`perf record`, `strace -c -f`,
/// `valgrind --tool=callgrind`: run it with two values of `n` and divide
/// the difference by the difference of `n` for a per-operation cost).
///
/// PEER: `floor`, `conduit` (legacy era), `modern`, `rmcp`, or a server
/// driven by our client: `conduit-server`, `rmcp-server` (legacy era),
/// `conduit-server-modern`, `rmcp-server-modern`. OP: `ping` (sequential),
/// `window` (64 in flight, `n` in all), `big` (8 MiB results), `echo`
/// (sequential echo tool calls), `echo-window` (64 in flight), `spawn`
/// (start to ready, then close). Prints the time per operation.
///
/// The HTTP servers, driven by the bench's HTTP client: `conduit-http`,
/// `rmcp-http` (2025-11-25 sessions), `conduit-http-modern`,
/// `rmcp-http-modern` (2026-07-28), the floor (`floor-http`,
/// `floor-http-modern`: axum answering fixed bytes), OP `echo`
/// (sequential) or `echo-50`
/// (50 clients, one call in flight each). The server's pid is printed
/// first: `perf record -g -- bench --diag-op ...`, then
/// `perf report --pid PID`.
pub fn op(exe: &Path, peer: &str, op: &str, n: usize) {
    let t = Instant::now();
    let done = if peer.contains("-http") {
        http_op(exe, peer, op, n)
    } else if peer == "floor" {
        floor_op(exe, op, n)
    } else {
        let rt = tokio::runtime::Builder::new_multi_thread()
            .enable_all()
            .build()
            .expect("runtime");
        // In a task, as the bench's headline metrics run.
        let (exe, peer, op) = (exe.to_owned(), peer.to_owned(), op.to_owned());
        rt.block_on(async move {
            tokio::spawn(async move { client_op(&exe, &peer, &op, n).await })
                .await
                .map_err(|e| e.to_string())?
        })
    };
    let el = t.elapsed();
    match done {
        Ok(()) => println!(
            "{peer} {op} x {n}: {:.3} s, {:.2} us per operation",
            el.as_secs_f64(),
            us(el) / n.max(1) as f64
        ),
        Err(e) => eprintln!("{peer} {op}: {e}"),
    }
}

fn http_op(exe: &Path, peer: &str, op: &str, n: usize) -> Result<(), String> {
    let (mode, flow) = match peer {
        "conduit-http" => ("conduit-http", Flow::Legacy),
        "rmcp-http" => ("rmcp-http", Flow::Legacy),
        "conduit-http-modern" => ("conduit-http", Flow::Modern),
        "rmcp-http-modern" => ("rmcp-http", Flow::Modern),
        "floor-http" => ("http-floor", Flow::Legacy),
        "floor-http-modern" => ("http-floor", Flow::Modern),
        other => return Err(format!("unknown peer {other}")),
    };
    let child = HttpChild::start(exe, mode)?;
    eprintln!("{peer}: server pid {}", child.pid());
    let addr = child.addr;
    let rt = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .expect("runtime");
    let cpu = child.cpu_ns();
    let done = rt.block_on(async move {
        match op {
            "echo" => http::sequential(addr, flow, 0, n).await.map(|_| ()),
            "echo-50" => {
                let clients: Vec<_> = (0..50).map(|k| n / 50 + usize::from(k < n % 50)).collect();
                let mut set = tokio::task::JoinSet::new();
                for share in clients {
                    set.spawn(async move {
                        let mut c = Conn::open(addr, flow).await?;
                        for _ in 0..share {
                            c.echo().await?;
                        }
                        Ok::<_, String>(())
                    });
                }
                while let Some(r) = set.join_next().await {
                    r.map_err(|e| e.to_string())??;
                }
                Ok(())
            }
            other => Err(format!("unknown op {other} for {peer}")),
        }
    });
    let cpu = child.cpu_ns().saturating_sub(cpu);
    eprintln!(
        "{peer} {op}: server CPU {:.2} us per operation",
        cpu as f64 / 1e3 / n.max(1) as f64
    );
    done
}

fn floor_op(exe: &Path, op: &str, n: usize) -> Result<(), String> {
    let e = |e: std::io::Error| e.to_string();
    if op == "spawn" {
        for _ in 0..n {
            Floor::start(exe).map_err(e)?.close();
        }
        return Ok(());
    }
    let mut f = Floor::start(exe).map_err(e)?;
    match op {
        "ping" => {
            for _ in 0..n {
                f.ping().map_err(e)?;
            }
        }
        "window" => {
            f.window_count(64, n).map_err(e)?;
        }
        "big" => {
            for _ in 0..n {
                f.big().map_err(e)?;
            }
        }
        other => return Err(format!("unknown op {other} for the floor")),
    }
    f.close();
    Ok(())
}

async fn client_op(exe: &Path, peer: &str, op: &str, n: usize) -> Result<(), String> {
    let echo = serde_json::json!({ "name": "echo", "arguments": { "text": "hello" } });
    if peer == "rmcp" {
        if op == "spawn" {
            for _ in 0..n {
                Rmcp::start(exe).await?.close().await;
            }
            return Ok(());
        }
        let c = Rmcp::start(exe).await?;
        let r = match op {
            "ping" => {
                let ping = c.ping_fn();
                run_seq(&ping, n).await
            }
            "window" => {
                window(|| c.ping_fn(), n).await;
                Ok(())
            }
            "big" => {
                for _ in 0..n {
                    c.big().await?;
                }
                Ok(())
            }
            other => Err(format!("unknown op {other} for rmcp")),
        };
        c.close().await;
        return r;
    }
    let (era, child) = match peer {
        "conduit" => (EraPreference::Stateful, ChildKind::Floor),
        "modern" => (EraPreference::Stateless, ChildKind::Floor),
        "conduit-server" => (EraPreference::Stateful, ChildKind::Server("conduit-server")),
        "rmcp-server" => (EraPreference::Stateful, ChildKind::Server("rmcp-server")),
        "conduit-server-modern" => (
            EraPreference::Stateless,
            ChildKind::Server("conduit-server"),
        ),
        "rmcp-server-modern" => (EraPreference::Stateless, ChildKind::Server("rmcp-server")),
        other => return Err(format!("unknown peer {other}")),
    };
    if op == "spawn" {
        for _ in 0..n {
            Conduit::start(exe, era, child).await?.close().await;
        }
        return Ok(());
    }
    let c = Conduit::start(exe, era, child).await?;
    let r = match op {
        "ping" => run_seq(&c.ping_fn(), n).await,
        "echo" => run_seq(&c.call_fn("tools/call", Some(echo)), n).await,
        "window" => {
            window(|| c.ping_fn(), n).await;
            Ok(())
        }
        "echo-window" => {
            window(|| c.call_fn("tools/call", Some(echo.clone())), n).await;
            Ok(())
        }
        "big" => {
            for _ in 0..n {
                c.big().await?;
            }
            Ok(())
        }
        other => Err(format!("unknown op {other}")),
    };
    c.close().await;
    r
}

/// `n` sequential calls from a task on the runtime.
async fn run_seq(call: &super::PingFn, n: usize) -> Result<(), String> {
    for _ in 0..n {
        if !call().await {
            return Err("call failed".into());
        }
    }
    Ok(())
}

/// 64 tasks sharing `n` calls.
async fn window(make: impl Fn() -> super::PingFn, n: usize) {
    let mut set = tokio::task::JoinSet::new();
    for k in 0..64 {
        let call = make();
        let share = n / 64 + usize::from(k < n % 64);
        set.spawn(async move {
            for _ in 0..share {
                if !call().await {
                    break;
                }
            }
        });
    }
    while set.join_next().await.is_some() {}
}
