//! What both conformance drivers share (this crate's and edge/'s, which
//! includes this file by path): the step runner, error helpers, the command
//! line and the client. Written against the API both pinned SDKs have.

use iggy::prelude::*;
use std::future::Future;
use std::sync::Arc;
use std::time::{SystemTime, UNIX_EPOCH};

use crate::STEP_TIMEOUT;

pub(crate) type StepResult = Result<(), String>;

/// Counts the steps and prints `PASS <step>` or `FAIL <step>: <detail>`.
pub(crate) struct Runner {
    pub(crate) passed: u32,
    pub(crate) failed: u32,
}

impl Runner {
    pub(crate) fn record(&mut self, step: &str, result: StepResult) -> bool {
        match result {
            Ok(()) => {
                self.passed += 1;
                println!("PASS {step}");
                true
            }
            Err(detail) => {
                self.failed += 1;
                println!("FAIL {step}: {}", detail.replace('\n', " "));
                false
            }
        }
    }

    pub(crate) async fn step<F>(&mut self, step: &str, fut: F) -> bool
    where
        F: Future<Output = StepResult>,
    {
        let result = match tokio::time::timeout(STEP_TIMEOUT, fut).await {
            Ok(result) => result,
            Err(_) => Err(format!("timed out after {}s", STEP_TIMEOUT.as_secs())),
        };
        self.record(step, result)
    }

    #[allow(dead_code)] // the edge driver skips nothing
    pub(crate) fn skip(&mut self, step: &str, why: &str) {
        self.record(step, Err(format!("not run: {why}")));
    }
}

pub(crate) fn e(context: &str, error: IggyError) -> String {
    format!("{context}: {error} (code {})", error.as_code())
}

pub(crate) fn ensure(condition: bool, detail: impl FnOnce() -> String) -> StepResult {
    if condition { Ok(()) } else { Err(detail()) }
}

pub(crate) struct Config {
    pub(crate) addr: String,
    pub(crate) username: String,
    pub(crate) password: String,
}

/// Reads --addr, --username, --password (or --flag=value), else IGGY_ADDR,
/// IGGY_USERNAME, IGGY_PASSWORD, else 127.0.0.1:8090 and iggy/iggy; --help
/// prints usage and exits.
pub(crate) fn parse_args(usage: &str) -> Result<Config, String> {
    let mut config = Config {
        addr: std::env::var("IGGY_ADDR").unwrap_or_else(|_| "127.0.0.1:8090".to_owned()),
        username: std::env::var("IGGY_USERNAME").unwrap_or_else(|_| "iggy".to_owned()),
        password: std::env::var("IGGY_PASSWORD").unwrap_or_else(|_| "iggy".to_owned()),
    };
    let mut args = std::env::args().skip(1);
    while let Some(arg) = args.next() {
        let (flag, inline) = match arg.split_once('=') {
            Some((flag, value)) => (flag.to_owned(), Some(value.to_owned())),
            None => (arg.clone(), None),
        };
        let mut value = |name: &str| -> Result<String, String> {
            inline
                .clone()
                .or_else(|| args.next())
                .ok_or_else(|| format!("{name} needs a value"))
        };
        match flag.as_str() {
            "--addr" => config.addr = value("--addr")?,
            "--username" => config.username = value("--username")?,
            "--password" => config.password = value("--password")?,
            "-h" | "--help" => {
                println!("{usage}");
                std::process::exit(0);
            }
            other => return Err(format!("unknown argument: {other}")),
        }
    }
    Ok(config)
}

/// A TCP client with automatic reconnection switched off, so that a server
/// dropping the connection shows up as a failure instead of being papered
/// over by a transparent reconnect and re-login.
pub(crate) fn new_client(addr: &str) -> Result<IggyClient, String> {
    let mut config = TcpClientConfig {
        server_address: addr.to_owned(),
        nodelay: true,
        ..TcpClientConfig::default()
    };
    config.reconnection.enabled = false;
    config.reconnection.max_retries = Some(0);
    let tcp = TcpClient::create(Arc::new(config)).map_err(|error| e("create TCP client", error))?;
    IggyClient::builder()
        .with_client(ClientWrapper::Tcp(tcp))
        .build()
        .map_err(|error| e("build IggyClient", error))
}

pub(crate) fn unique_suffix() -> String {
    let nanos = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_nanos())
        .unwrap_or_default();
    format!("{:x}{:x}", nanos & 0xffff_ffff_ffff, std::process::id())
}
