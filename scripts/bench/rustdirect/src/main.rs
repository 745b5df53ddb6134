//! iggy-bench-direct: the "direct" baseline of scripts/bench. It sends the
//! benchmark's payloads straight to an Iggy server through the official Rust
//! SDK (`iggy` crate, 0.11 release line), so the gateway's cost can be set
//! against the physical path. scripts/bench starts it, creates the topic
//! beforehand, and reads the one JSON line it prints on stdout.
//!
//! Usage:
//!   iggy-bench-direct --addr HOST:PORT --mode produce|consume|latency
//!       --stream S --topic T [--partitions 4] [--conns 4] [--records N]
//!       [--seconds S] [--size 1024] [--batch 100] [--poll-count 1000]
//!       [--warmup 100] [--warm-seconds W] [--rate R]
//!       [--username iggy] [--password iggy]
//!
//! Modes (every loop stops at --records or after --seconds, whichever first):
//!   produce  --conns connections, connection i sends to partition i % P,
//!            one SEND_MESSAGES of --batch messages at a time (lockstep);
//!            with --rate, the connections together offer R messages per
//!            second (paced per batch) instead of sending as fast as they can.
//!   consume  one connection polls every partition from offset 0,
//!            --poll-count messages per poll, until --records are read or a
//!            partition has nothing more; with --warm-seconds it starts over
//!            from offset 0 (a steady-state read) until the window ends.
//!
//! Steady-state window (produce and consume, --warm-seconds W > 0): the run
//! lasts W + --seconds; only what completes in the last --seconds counts, and
//! elapsed is that window. The program prints `window-start` and
//! `window-end` lines on stderr when the window opens and closes, so that the
//! caller measures CPU over the same window.
//!   latency  one connection, one message per SEND_MESSAGES, each waited
//!            for; --warmup sends first that are not recorded.
//!
//! Output, one line: {"mode":..,"records":..,"bytes":..,"elapsed_ns":..,
//! "conns":..,"pool_hash":"..","lat_ns":[..],"error":".."}. bytes counts
//! payload bytes only. pool_hash is the FNV-1a hash of the payload pool, which
//! scripts/bench compares with its own to prove both send the same bytes.

use iggy::prelude::*;
use std::sync::Arc;
use std::time::{Duration, Instant};

/// Payloads in the pool; record j carries payload j % POOL_SIZE.
const POOL_SIZE: usize = 1024;

/// Words of the payload text (the same list, in the same order, as
/// scripts/bench/payload.go).
const WORDS: [&str; 64] = [
    "order", "customer", "amount", "currency", "status", "created", "updated", "region",
    "warehouse", "shipment", "invoice", "payment", "refund", "account", "session", "device",
    "latency", "request", "response", "timeout", "partition", "offset", "segment", "replica",
    "leader", "follower", "producer", "consumer", "topic", "stream", "message", "header",
    "alpha", "bravo", "charlie", "delta", "echo", "foxtrot", "golf", "hotel",
    "india", "juliet", "kilo", "lima", "mike", "november", "oscar", "papa",
    "quebec", "romeo", "sierra", "tango", "uniform", "victor", "whiskey", "xray",
    "yankee", "zulu", "north", "south", "east", "west", "true", "false",
];

/// xorshift64* generator, seeded with a fixed constant: the same sequence
/// as scripts/bench/payload.go.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        let mut x = self.0;
        x ^= x >> 12;
        x ^= x << 25;
        x ^= x >> 27;
        self.0 = x;
        x.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }
}

/// The payload pool: POOL_SIZE payloads of `size` bytes, each a run of
/// space-separated tokens; every 8th token is a six-digit number, the others
/// words from WORDS. Text like this compresses with lz4 about as log or JSON
/// records do, unlike random bytes.
fn payload_pool(size: usize) -> Vec<Vec<u8>> {
    let mut rng = Rng(0x9E37_79B9_7F4A_7C15);
    let mut pool = Vec::with_capacity(POOL_SIZE);
    for _ in 0..POOL_SIZE {
        let mut buf = Vec::with_capacity(size + 16);
        let mut token = 0u64;
        while buf.len() < size {
            let r = rng.next();
            if token % 8 == 7 {
                buf.extend_from_slice(format!("{:06}", r % 1_000_000).as_bytes());
            } else {
                buf.extend_from_slice(WORDS[(r >> 58) as usize].as_bytes());
            }
            buf.push(b' ');
            token += 1;
        }
        buf.truncate(size);
        pool.push(buf);
    }
    pool
}

/// FNV-1a (64-bit) over every payload of the pool, in order.
fn pool_hash(pool: &[Vec<u8>]) -> u64 {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for p in pool {
        for &b in p {
            h ^= b as u64;
            h = h.wrapping_mul(0x0000_0100_0000_01b3);
        }
    }
    h
}

#[derive(Clone)]
struct Args {
    addr: String,
    username: String,
    password: String,
    mode: String,
    stream: String,
    topic: String,
    partitions: u32,
    conns: u32,
    records: u64,
    seconds: f64,
    size: usize,
    batch: u32,
    poll_count: u32,
    warmup: u32,
    warm_seconds: f64,
    rate: f64,
}

fn parse_args() -> Result<Args, String> {
    let mut a = Args {
        addr: "127.0.0.1:8090".into(),
        username: "iggy".into(),
        password: "iggy".into(),
        mode: String::new(),
        stream: String::new(),
        topic: String::new(),
        partitions: 4,
        conns: 4,
        records: 100_000,
        seconds: 10.0,
        size: 1024,
        batch: 100,
        poll_count: 1000,
        warmup: 100,
        warm_seconds: 0.0,
        rate: 0.0,
    };
    let mut it = std::env::args().skip(1);
    while let Some(flag) = it.next() {
        let mut value = || it.next().ok_or_else(|| format!("{flag} needs a value"));
        let num = |v: String| v.parse::<u64>().map_err(|e| format!("{flag}: {e}"));
        match flag.as_str() {
            "--addr" => a.addr = value()?,
            "--username" => a.username = value()?,
            "--password" => a.password = value()?,
            "--mode" => a.mode = value()?,
            "--stream" => a.stream = value()?,
            "--topic" => a.topic = value()?,
            "--partitions" => a.partitions = num(value()?)? as u32,
            "--conns" => a.conns = num(value()?)? as u32,
            "--records" => a.records = num(value()?)?,
            "--seconds" => {
                a.seconds = value()?.parse::<f64>().map_err(|e| format!("--seconds: {e}"))?
            }
            "--size" => a.size = num(value()?)? as usize,
            "--batch" => a.batch = num(value()?)? as u32,
            "--poll-count" => a.poll_count = num(value()?)? as u32,
            "--warmup" => a.warmup = num(value()?)? as u32,
            "--warm-seconds" => {
                a.warm_seconds = value()?.parse::<f64>().map_err(|e| format!("--warm-seconds: {e}"))?
            }
            "--rate" => a.rate = value()?.parse::<f64>().map_err(|e| format!("--rate: {e}"))?,
            other => return Err(format!("unknown argument {other}")),
        }
    }
    if a.stream.is_empty() || a.topic.is_empty() {
        return Err("--stream and --topic are required".into());
    }
    if a.partitions == 0 || a.conns == 0 || a.batch == 0 || a.poll_count == 0 || a.size == 0 {
        return Err("--partitions, --conns, --batch, --poll-count and --size must be positive".into());
    }
    if !(a.warm_seconds >= 0.0 && a.warm_seconds <= 60.0) || !(a.rate >= 0.0) {
        return Err("--warm-seconds must be in [0, 60] and --rate not negative".into());
    }
    if !(a.seconds > 0.0 && a.seconds <= 600.0) {
        return Err("--seconds must be in (0, 600]".into());
    }
    Ok(a)
}

/// What one run measured.
#[derive(Default)]
struct Outcome {
    records: u64,
    bytes: u64,
    elapsed: Duration,
    lat_ns: Vec<u64>,
}

/// The steady-state window: [t0, t1) of the run (t0 = t1 - --seconds).
/// Without --warm-seconds the whole run is the window.
#[derive(Clone, Copy)]
struct Window {
    t0: Instant,
    t1: Instant,
}

impl Window {
    fn contains(&self, t: Instant) -> bool {
        t >= self.t0 && t < self.t1
    }
}

/// Prints the window markers on stderr at t0 and t1 (only in window mode).
fn mark_window(w: Window) {
    tokio::spawn(async move {
        tokio::time::sleep_until(w.t0.into()).await;
        eprintln!("window-start");
        tokio::time::sleep_until(w.t1.into()).await;
        eprintln!("window-end");
    });
}

fn err(what: &str, e: impl std::fmt::Display) -> String {
    format!("{what}: {e}")
}

/// A connected, logged-in TCP client without automatic reconnection (a
/// dropped connection must fail the run, not be hidden).
async fn connect(a: &Args) -> Result<IggyClient, String> {
    let mut config = TcpClientConfig {
        server_address: a.addr.clone(),
        nodelay: true,
        ..TcpClientConfig::default()
    };
    config.reconnection.enabled = false;
    config.reconnection.max_retries = Some(0);
    let tcp = TcpClient::create(Arc::new(config)).map_err(|e| err("create TCP client", e))?;
    let client = IggyClient::builder()
        .with_client(ClientWrapper::Tcp(tcp))
        .build()
        .map_err(|e| err("build client", e))?;
    client.connect().await.map_err(|e| err("connect", e))?;
    client
        .login_user(&a.username, &a.password)
        .await
        .map_err(|e| err("login", e))?;
    Ok(client)
}

fn ids(a: &Args) -> Result<(Identifier, Identifier), String> {
    Ok((
        Identifier::named(&a.stream).map_err(|e| err("stream id", e))?,
        Identifier::named(&a.topic).map_err(|e| err("topic id", e))?,
    ))
}

fn message(payload: &[u8]) -> Result<IggyMessage, String> {
    IggyMessage::builder()
        .payload(payload.to_vec().into())
        .build()
        .map_err(|e| err("build message", e))
}

async fn produce(a: Args, pool: Arc<Vec<Vec<u8>>>, deadline: Instant) -> Result<Outcome, String> {
    let mut clients = Vec::with_capacity(a.conns as usize);
    for _ in 0..a.conns {
        clients.push(connect(&a).await?);
    }
    let per = a.records / a.conns as u64;
    let start = Instant::now();
    let w = window(&a, start, deadline);
    if a.warm_seconds > 0.0 {
        mark_window(w);
    }
    let per_conn_rate = a.rate / a.conns as f64;
    let mut tasks = Vec::new();
    for (i, client) in clients.into_iter().enumerate() {
        let a = a.clone();
        let pool = pool.clone();
        let quota = if i as u32 == a.conns - 1 { a.records - per * (a.conns as u64 - 1) } else { per };
        let first = per * i as u64;
        tasks.push(tokio::spawn(async move {
            let (stream, topic) = ids(&a)?;
            let partitioning = Partitioning::partition_id(i as u32 % a.partitions);
            let (mut sent, mut counted, mut bytes) = (0u64, 0u64, 0u64);
            while sent < quota && Instant::now() < w.t1 {
                if per_conn_rate > 0.0 {
                    // Paced: batch k leaves at start + k*batch/rate.
                    let due = start + Duration::from_secs_f64(sent as f64 / per_conn_rate);
                    if due >= w.t1 {
                        break;
                    }
                    tokio::time::sleep_until(due.into()).await;
                }
                let n = (quota - sent).min(a.batch as u64);
                let mut msgs = Vec::with_capacity(n as usize);
                let mut b = 0u64;
                for k in 0..n {
                    let p = &pool[((first + sent + k) % POOL_SIZE as u64) as usize];
                    b += p.len() as u64;
                    msgs.push(message(p)?);
                }
                client
                    .send_messages(&stream, &topic, &partitioning, &mut msgs)
                    .await
                    .map_err(|e| err("send_messages", e))?;
                sent += n;
                if w.contains(Instant::now()) {
                    counted += n;
                    bytes += b;
                }
            }
            Ok::<(u64, u64), String>((counted, bytes))
        }));
    }
    let mut out = Outcome::default();
    for t in tasks {
        let (sent, bytes) = t.await.map_err(|e| err("join", e))??;
        out.records += sent;
        out.bytes += bytes;
    }
    out.elapsed = if a.warm_seconds > 0.0 { w.t1 - w.t0 } else { start.elapsed() };
    Ok(out)
}

/// The run's window: the last --seconds of a run of --warm-seconds +
/// --seconds from start, or the whole run without --warm-seconds.
fn window(a: &Args, start: Instant, deadline: Instant) -> Window {
    if a.warm_seconds > 0.0 {
        let t0 = start + Duration::from_secs_f64(a.warm_seconds);
        Window { t0, t1: t0 + Duration::from_secs_f64(a.seconds) }
    } else {
        Window { t0: start, t1: deadline.max(start) }
    }
}

async fn consume(a: Args, deadline: Instant) -> Result<Outcome, String> {
    let client = connect(&a).await?;
    let (stream, topic) = ids(&a)?;
    let consumer = Consumer::new(Identifier::numeric(1).map_err(|e| err("consumer id", e))?);
    let mut out = Outcome::default();
    let start = Instant::now();
    let w = window(&a, start, deadline);
    let steady = a.warm_seconds > 0.0;
    if steady {
        mark_window(w);
    }
    'passes: loop {
        let mut read_any = false;
        for p in 0..a.partitions {
            let mut offset = 0u64;
            loop {
                if (!steady && out.records >= a.records) || Instant::now() >= w.t1 {
                    break 'passes;
                }
                let polled = client
                    .poll_messages(&stream, &topic, Some(p), &consumer, &PollingStrategy::offset(offset), a.poll_count, false)
                    .await
                    .map_err(|e| err("poll_messages", e))?;
                let Some(last) = polled.messages.last() else { break };
                offset = last.header.offset + 1;
                read_any = true;
                if w.contains(Instant::now()) {
                    for m in &polled.messages {
                        out.bytes += m.payload.len() as u64;
                    }
                    out.records += polled.messages.len() as u64;
                }
            }
        }
        if !steady || !read_any {
            break;
        }
    }
    out.elapsed = if steady { w.t1 - w.t0 } else { start.elapsed() };
    Ok(out)
}

async fn latency(a: Args, pool: Arc<Vec<Vec<u8>>>, deadline: Instant) -> Result<Outcome, String> {
    let client = connect(&a).await?;
    let (stream, topic) = ids(&a)?;
    let partitioning = Partitioning::partition_id(0);
    let mut out = Outcome { lat_ns: Vec::with_capacity(a.records.min(1 << 20) as usize), ..Outcome::default() };
    let mut j = 0u64;
    for _ in 0..a.warmup {
        let mut msgs = vec![message(&pool[(j % POOL_SIZE as u64) as usize])?];
        client.send_messages(&stream, &topic, &partitioning, &mut msgs).await.map_err(|e| err("warm-up send", e))?;
        j += 1;
    }
    let start = Instant::now();
    while out.records < a.records && Instant::now() < deadline {
        let p = &pool[(j % POOL_SIZE as u64) as usize];
        let mut msgs = vec![message(p)?];
        let t0 = Instant::now();
        client.send_messages(&stream, &topic, &partitioning, &mut msgs).await.map_err(|e| err("send_messages", e))?;
        out.lat_ns.push(t0.elapsed().as_nanos() as u64);
        out.records += 1;
        out.bytes += p.len() as u64;
        j += 1;
    }
    out.elapsed = start.elapsed();
    Ok(out)
}

fn json_escape(s: &str) -> String {
    let mut o = String::with_capacity(s.len());
    for c in s.chars() {
        match c {
            '"' => o.push_str("\\\""),
            '\\' => o.push_str("\\\\"),
            c if (c as u32) < 0x20 => o.push_str(&format!("\\u{:04x}", c as u32)),
            c => o.push(c),
        }
    }
    o
}

#[tokio::main(flavor = "multi_thread", worker_threads = 2)]
async fn main() {
    let a = match parse_args() {
        Ok(a) => a,
        Err(e) => {
            println!("{{\"error\":\"{}\"}}", json_escape(&e));
            std::process::exit(2);
        }
    };
    let pool = Arc::new(payload_pool(a.size));
    let hash = pool_hash(&pool);
    let budget = Duration::from_secs_f64(a.seconds + a.warm_seconds);
    let deadline = Instant::now() + budget;
    // Connecting and the last in-flight request may run past the deadline;
    // this hard bound makes sure the program always ends.
    let hard = budget + Duration::from_secs(30);
    let mode = a.mode.clone();
    let run = async {
        match mode.as_str() {
            "produce" => produce(a.clone(), pool.clone(), deadline).await,
            "consume" => consume(a.clone(), deadline).await,
            "latency" => latency(a.clone(), pool.clone(), deadline).await,
            other => Err(format!("unknown --mode {other:?}")),
        }
    };
    let result = match tokio::time::timeout(hard, run).await {
        Ok(r) => r,
        Err(_) => Err(format!("did not finish within {:?}", hard)),
    };
    let (o, error) = match result {
        Ok(o) => (o, String::new()),
        Err(e) => (Outcome::default(), e),
    };
    let lat: Vec<String> = o.lat_ns.iter().map(|v| v.to_string()).collect();
    println!(
        "{{\"mode\":\"{}\",\"records\":{},\"bytes\":{},\"elapsed_ns\":{},\"conns\":{},\"pool_hash\":\"{:016x}\",\"lat_ns\":[{}],\"error\":\"{}\"}}",
        json_escape(&a.mode),
        o.records,
        o.bytes,
        o.elapsed.as_nanos(),
        if a.mode == "produce" { a.conns } else { 1 },
        hash,
        lat.join(","),
        json_escape(&error)
    );
    std::process::exit(if error.is_empty() { 0 } else { 1 });
}
