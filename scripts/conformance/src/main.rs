//! iggy-conformance: drives an Iggy-protocol server through the official Rust
//! SDK (`iggy` crate, 0.11 release line) and checks what comes back.
//!
//! Every step prints `PASS <step>` or `FAIL <step>: <detail>`; the run ends
//! with a line `N passed, M failed` and exits non-zero when anything failed.
//!
//! Usage: iggy-conformance [--addr HOST:PORT] [--username U] [--password P]
//! Environment: IGGY_ADDR, IGGY_USERNAME, IGGY_PASSWORD (flags win).

mod common;

use common::*;
use iggy::prelude::*;
use std::collections::BTreeMap;
use std::str::FromStr;
use std::time::Duration;

/// Upper bound for one step. The SDK's own reply timeout is 30 s; a step
/// makes at most a few round trips, so a server that stays silent is reported
/// here instead of hanging the run.
const STEP_TIMEOUT: Duration = Duration::from_secs(75);

const PARTITIONS: u32 = 3;
const TARGET_PARTITION: u32 = 1;
const BATCHES: u32 = 3;
const BATCH_SIZE: u32 = 10;
const MESSAGE_EXPIRY_MICROS: u64 = 3_600_000_000; // 1 hour
const MAX_TOPIC_SIZE_BYTES: u64 = 2 * 1024 * 1024 * 1024; // 2 GiB (>= default segment size)

/// The 8 topic option keys of the protocol reference (section 6.2) with the
/// canonical kind and default bytes DESCRIBE_OPTIONS reports for each.
fn reference_topic_options() -> Vec<(&'static str, HeaderKind, Vec<u8>)> {
    vec![
        (
            "compression_algorithm",
            HeaderKind::String,
            b"none".to_vec(),
        ),
        (
            "message_expiry",
            HeaderKind::Uint64,
            u64::MAX.to_le_bytes().to_vec(),
        ),
        (
            "max_topic_size",
            HeaderKind::Uint64,
            u64::MAX.to_le_bytes().to_vec(),
        ),
        (
            "segment_size",
            HeaderKind::Uint64,
            (1u64 << 30).to_le_bytes().to_vec(),
        ),
        ("enforce_fsync", HeaderKind::Bool, vec![0]),
        (
            "messages_required_to_save",
            HeaderKind::Uint32,
            1024u32.to_le_bytes().to_vec(),
        ),
        (
            "size_of_messages_required_to_save",
            HeaderKind::Uint64,
            (1u64 << 20).to_le_bytes().to_vec(),
        ),
        ("preallocate_segments", HeaderKind::Bool, vec![0]),
    ]
}

/// Keys the 0.11.0 SDK knows besides the reference's 8. It always sends them
/// on CREATE_TOPIC, so GET_TOPIC must report them back as explicit options;
/// DESCRIBE_OPTIONS may list them (tolerated, not required).
const SDK_EXTRA_TOPIC_KEYS: &[&str] = &["durability", "consumer_offset_durability"];

fn expect_code<T: std::fmt::Debug>(
    what: &str,
    result: Result<T, IggyError>,
    code: u32,
) -> StepResult {
    match result {
        Ok(value) => Err(format!(
            "{what}: expected error {code}, got success {value:?}"
        )),
        Err(error) if error.as_code() == code => Ok(()),
        Err(error) => Err(format!(
            "{what}: expected error {code}, got {error} (code {})",
            error.as_code()
        )),
    }
}

fn header_key(name: &str) -> HeaderKey {
    HeaderKey::from_str(name).expect("valid header key")
}

fn expected_payload(index: u32) -> String {
    format!("conformance-message-{index:03}")
}

fn build_message(index: u32, batch: u32) -> Result<IggyMessage, IggyError> {
    let mut headers = BTreeMap::new();
    headers.insert(
        header_key("source"),
        HeaderValue::from_str("iggy-conformance")?,
    );
    headers.insert(header_key("seq"), HeaderValue::from(index));
    headers.insert(header_key("batch"), HeaderValue::from(batch));
    IggyMessage::builder()
        .payload(expected_payload(index).into())
        .user_headers(headers)
        .build()
}

/// Offsets of a poll result, for messages.
fn offsets(polled: &PolledMessages) -> Vec<u64> {
    polled.messages.iter().map(|m| m.header.offset).collect()
}

fn check_offsets(
    what: &str,
    polled: &PolledMessages,
    expected: std::ops::Range<u64>,
) -> StepResult {
    let got = offsets(polled);
    let want: Vec<u64> = expected.collect();
    ensure(got == want, || {
        format!("{what}: offsets {got:?}, expected {want:?}")
    })?;
    ensure(polled.count as usize == want.len(), || {
        format!(
            "{what}: count field {} but {} messages expected",
            polled.count,
            want.len()
        )
    })
}

/// Payload and user headers of every message must match what was sent for
/// its offset (offset i carries message i on the target partition).
fn check_round_trip(polled: &PolledMessages) -> StepResult {
    for message in &polled.messages {
        let index = message.header.offset as u32;
        let payload = String::from_utf8_lossy(&message.payload);
        ensure(payload == expected_payload(index), || {
            format!(
                "offset {index}: payload {payload:?}, expected {:?}",
                expected_payload(index)
            )
        })?;
        let headers = message
            .user_headers_map()
            .map_err(|error| e(&format!("offset {index}: decode user headers"), error))?
            .ok_or_else(|| format!("offset {index}: no user headers"))?;
        ensure(headers.len() == 3, || {
            format!("offset {index}: {} user headers, expected 3", headers.len())
        })?;
        let source = headers
            .get(&header_key("source"))
            .ok_or_else(|| format!("offset {index}: header 'source' missing"))?;
        ensure(source.kind() == HeaderKind::String, || {
            format!("offset {index}: header 'source' kind {:?}", source.kind())
        })?;
        let source = source
            .as_str()
            .map_err(|error| e("header 'source'", error))?;
        ensure(source == "iggy-conformance", || {
            format!("offset {index}: header 'source' = {source:?}")
        })?;
        let seq = headers
            .get(&header_key("seq"))
            .ok_or_else(|| format!("offset {index}: header 'seq' missing"))?;
        ensure(seq.kind() == HeaderKind::Uint32, || {
            format!("offset {index}: header 'seq' kind {:?}", seq.kind())
        })?;
        let seq = seq.as_uint32().map_err(|error| e("header 'seq'", error))?;
        ensure(seq == index, || {
            format!("offset {index}: header 'seq' = {seq}")
        })?;
        let batch = headers
            .get(&header_key("batch"))
            .and_then(|v| v.as_uint32().ok())
            .ok_or_else(|| format!("offset {index}: header 'batch' missing or not u32"))?;
        ensure(batch == index / BATCH_SIZE, || {
            format!(
                "offset {index}: header 'batch' = {batch}, expected {}",
                index / BATCH_SIZE
            )
        })?;
    }
    Ok(())
}

fn option_value<'a>(options: &'a ResourceOptions, key: &str) -> Option<&'a OptionValue> {
    options.get(&header_key(key))
}

#[tokio::main(flavor = "multi_thread", worker_threads = 2)]
async fn main() {
    let config = match parse_args(
        "usage: iggy-conformance [--addr HOST:PORT] [--username U] [--password P]\n\
         env: IGGY_ADDR (default 127.0.0.1:8090), IGGY_USERNAME, IGGY_PASSWORD (default iggy/iggy)",
    ) {
        Ok(config) => config,
        Err(error) => {
            eprintln!("iggy-conformance: {error}");
            std::process::exit(2);
        }
    };
    println!(
        "iggy-conformance: official iggy Rust SDK {} against {}",
        SDK_CRATE_VERSION, config.addr
    );
    let mut runner = Runner {
        passed: 0,
        failed: 0,
    };
    run(&mut runner, &config).await;
    println!("{} passed, {} failed", runner.passed, runner.failed);
    std::process::exit(if runner.failed == 0 { 0 } else { 1 });
}

/// The SDK version this binary was built against (pinned in Cargo.toml).
const SDK_CRATE_VERSION: &str = "0.11.0";

async fn run(r: &mut Runner, cfg: &Config) {
    let suffix = unique_suffix();
    let stream_name = format!("conf-{suffix}");
    let topic_name = "conf-topic".to_owned();
    let token_name = format!("conf-pat-{suffix}");

    // ---- a. connect + login with username/password, get_me ------------------
    let client = match new_client(&cfg.addr) {
        Ok(client) => client,
        Err(error) => {
            r.record("a.connect", Err(error));
            return;
        }
    };
    let mut user_id = 0u32;
    let ok = r
        .step("a.connect+login(password)", async {
            client
                .connect()
                .await
                .map_err(|error| e("connect", error))?;
            let identity = client
                .login_user(&cfg.username, &cfg.password)
                .await
                .map_err(|error| e("login_user", error))?;
            user_id = identity.user_id;
            Ok(())
        })
        .await;
    if !ok {
        r.skip("remaining steps", "password login failed");
        let _ = client.shutdown().await;
        return;
    }
    r.step("a.ping", async {
        client.ping().await.map_err(|error| e("ping", error))
    })
    .await;
    r.step("a.get_me", async {
        let me = client.get_me().await.map_err(|error| e("get_me", error))?;
        ensure(me.user_id == Some(user_id), || {
            format!("get_me user_id {:?}, login said {user_id}", me.user_id)
        })?;
        ensure(me.transport == "TCP", || {
            format!("get_me transport {:?}", me.transport)
        })?;
        ensure(!me.address.is_empty(), || "get_me address empty".to_owned())?;
        ensure(
            me.consumer_groups_count == 0 && me.consumer_groups.is_empty(),
            || {
                format!(
                    "get_me lists {} consumer groups on a fresh session",
                    me.consumer_groups_count
                )
            },
        )
    })
    .await;

    // ---- b. personal access token --------------------------------------------
    let mut token = String::new();
    let created = r
        .step("b.create_personal_access_token", async {
            let raw = client
                .create_personal_access_token(&token_name, PersonalAccessTokenExpiry::NeverExpire)
                .await
                .map_err(|error| e("create_personal_access_token", error))?;
            ensure(!raw.token.is_empty(), || "empty token returned".to_owned())?;
            token = raw.token;
            Ok(())
        })
        .await;
    if created {
        let pat_client = new_client(&cfg.addr);
        let logged_in = match &pat_client {
            Err(error) => r.record("b.login(pat) on a second client", Err(error.clone())),
            Ok(pat_client) => {
                r.step("b.login(pat) on a second client", async {
                    pat_client
                        .connect()
                        .await
                        .map_err(|error| e("connect", error))?;
                    let identity = pat_client
                        .login_with_personal_access_token(&token)
                        .await
                        .map_err(|error| e("login_with_personal_access_token", error))?;
                    ensure(identity.user_id == user_id, || {
                        format!(
                            "PAT login user_id {}, password login {user_id}",
                            identity.user_id
                        )
                    })
                })
                .await
            }
        };
        if let (true, Ok(pat_client)) = (logged_in, &pat_client) {
            r.step("b.get_me(pat client)", async {
                let me = pat_client
                    .get_me()
                    .await
                    .map_err(|error| e("get_me", error))?;
                ensure(me.user_id == Some(user_id), || {
                    format!("get_me user_id {:?}, expected {user_id}", me.user_id)
                })
            })
            .await;
        } else {
            r.skip("b.get_me(pat client)", "PAT login failed");
        }
        if let Ok(pat_client) = pat_client {
            let _ = pat_client.shutdown().await;
        }
        r.step("b.delete_personal_access_token", async {
            client
                .delete_personal_access_token(&token_name)
                .await
                .map_err(|error| e("delete_personal_access_token", error))?;
            let tokens = client
                .get_personal_access_tokens()
                .await
                .map_err(|error| e("get_personal_access_tokens", error))?;
            ensure(tokens.iter().all(|t| t.name != token_name), || {
                "token still listed after delete".to_owned()
            })
        })
        .await;
    } else {
        for step in [
            "b.login(pat) on a second client",
            "b.get_me(pat client)",
            "b.delete_personal_access_token",
        ] {
            r.skip(step, "token creation failed");
        }
    }

    // ---- c. stream + topic with options ---------------------------------------
    let stream_id = Identifier::named(&stream_name).expect("valid stream name");
    let topic_id = Identifier::named(&topic_name).expect("valid topic name");
    let stream_ok = r
        .step("c.create_stream", async {
            let stream = client
                .create_stream(&stream_name)
                .await
                .map_err(|error| e("create_stream", error))?;
            ensure(stream.name == stream_name, || {
                format!("stream name {:?}", stream.name)
            })?;
            ensure(stream.topics_count == 0 && stream.topics.is_empty(), || {
                format!("new stream reports {} topics", stream.topics_count)
            })
        })
        .await;
    if !stream_ok {
        r.skip("remaining steps", "stream creation failed");
        let _ = client.shutdown().await;
        return;
    }
    let topic_ok = r
        .step("c.create_topic(3 partitions, options)", async {
            let options = TopicCreateOptions {
                partitions_count: Some(PARTITIONS),
                compression_algorithm: Some(CompressionAlgorithm::Gzip),
                message_expiry: Some(IggyExpiry::ExpireDuration(IggyDuration::from(
                    MESSAGE_EXPIRY_MICROS,
                ))),
                max_topic_size: Some(MaxTopicSize::Custom(IggyByteSize::from(
                    MAX_TOPIC_SIZE_BYTES,
                ))),
                ..TopicCreateOptions::default()
            };
            let topic = client
                .create_topic(&stream_id, &topic_name, &options)
                .await
                .map_err(|error| e("create_topic", error))?;
            ensure(topic.name == topic_name, || {
                format!("topic name {:?}", topic.name)
            })?;
            ensure(topic.partitions_count == PARTITIONS, || {
                format!("create reply partitions_count {}", topic.partitions_count)
            })
        })
        .await;
    if !topic_ok {
        r.skip("remaining steps", "topic creation failed");
        cleanup(&client, &stream_id).await;
        let _ = client.shutdown().await;
        return;
    }
    r.step("c.get_topic(partitions, options)", async {
        let topic = client
            .get_topic(&stream_id, &topic_id)
            .await
            .map_err(|error| e("get_topic", error))?
            .ok_or_else(|| "get_topic returned none".to_owned())?;
        ensure(topic.partitions_count == PARTITIONS, || {
            format!("partitions_count {}", topic.partitions_count)
        })?;
        let ids: Vec<u32> = topic.partitions.iter().map(|p| p.id).collect();
        ensure(ids == vec![0, 1, 2], || {
            format!("partition ids {ids:?}, expected [0, 1, 2]")
        })?;
        ensure(
            topic.compression_algorithm == CompressionAlgorithm::Gzip,
            || format!("compression_algorithm {:?}", topic.compression_algorithm),
        )?;
        ensure(
            u64::from(topic.message_expiry) == MESSAGE_EXPIRY_MICROS,
            || format!("message_expiry {:?}", topic.message_expiry),
        )?;
        ensure(
            u64::from(topic.max_topic_size) == MAX_TOPIC_SIZE_BYTES,
            || format!("max_topic_size {:?}", topic.max_topic_size),
        )?;
        // Explicit options: the three keys this client set, in canonical kinds.
        let compression = option_value(&topic.options, "compression_algorithm")
            .ok_or_else(|| "option compression_algorithm missing".to_owned())?;
        ensure(
            compression.explicit
                && compression.value.kind() == HeaderKind::String
                && compression.value.as_str().ok() == Some("gzip"),
            || format!("option compression_algorithm = {compression:?}"),
        )?;
        for (key, want) in [
            ("message_expiry", MESSAGE_EXPIRY_MICROS),
            ("max_topic_size", MAX_TOPIC_SIZE_BYTES),
        ] {
            let option =
                option_value(&topic.options, key).ok_or_else(|| format!("option {key} missing"))?;
            ensure(
                option.explicit && option.value.as_uint64().ok() == Some(want),
                || format!("option {key} = {option:?}, expected explicit Uint64 {want}"),
            )?;
        }
        // The SDK always sends the two durability keys (String "replicated" by
        // default); a server that accepted them reports them as explicit.
        for key in SDK_EXTRA_TOPIC_KEYS {
            let option = option_value(&topic.options, key)
                .ok_or_else(|| format!("option {key} (always sent by the SDK) missing"))?;
            ensure(
                option.explicit
                    && option.value.kind() == HeaderKind::String
                    && option.value.as_str().ok() == Some("replicated"),
                || format!("option {key} = {option:?}, expected explicit String \"replicated\""),
            )?;
        }
        // Derived options: every other reference key, filled with its default.
        for (key, kind, default) in reference_topic_options() {
            if matches!(
                key,
                "compression_algorithm" | "message_expiry" | "max_topic_size"
            ) {
                continue;
            }
            let option = option_value(&topic.options, key)
                .ok_or_else(|| format!("derived option {key} missing"))?;
            ensure(!option.explicit, || format!("option {key} marked explicit"))?;
            ensure(option.value.kind() == kind, || {
                format!(
                    "option {key} kind {:?}, expected {kind:?}",
                    option.value.kind()
                )
            })?;
            ensure(option.value.as_bytes() == default.as_slice(), || {
                format!(
                    "option {key} value {:?}, expected default {default:?}",
                    option.value.as_bytes()
                )
            })?;
        }
        Ok(())
    })
    .await;

    // ---- d. describe options ----------------------------------------------------
    r.step("d.describe_options(topic)", async {
        let specs = client
            .describe_options(OptionsScope::Topic)
            .await
            .map_err(|error| e("describe_options", error))?;
        for (key, kind, default) in reference_topic_options() {
            let spec = specs
                .iter()
                .find(|s| s.key == key)
                .ok_or_else(|| format!("key {key} missing (got {:?})", keys_of(&specs)))?;
            ensure(spec.kind == kind, || {
                format!("{key}: kind {:?}, expected {kind:?}", spec.kind)
            })?;
            ensure(spec.default_value == default, || {
                format!(
                    "{key}: default {:?}, expected {default:?}",
                    spec.default_value
                )
            })?;
        }
        let unknown: Vec<&str> = specs
            .iter()
            .map(|s| s.key.as_str())
            .filter(|k| {
                !reference_topic_options().iter().any(|(key, _, _)| key == k)
                    && !SDK_EXTRA_TOPIC_KEYS.contains(k)
            })
            .collect();
        ensure(unknown.is_empty(), || {
            format!("unexpected keys {unknown:?}")
        })
    })
    .await;

    // ---- e. send 3 batches of 10 with user headers -----------------------------
    let partitioning = Partitioning::partition_id(TARGET_PARTITION);
    let mut between_batches: Option<IggyTimestamp> = None;
    let sent = r
        .step("e.send_messages(3 x 10, user headers)", async {
            for batch in 0..BATCHES {
                if batch == BATCHES - 1 {
                    // A timestamp strictly between the append times of batch 2
                    // and batch 3 (used by the Timestamp poll below).
                    tokio::time::sleep(Duration::from_millis(20)).await;
                    between_batches = Some(IggyTimestamp::now());
                    tokio::time::sleep(Duration::from_millis(20)).await;
                }
                let mut messages = (0..BATCH_SIZE)
                    .map(|i| build_message(batch * BATCH_SIZE + i, batch))
                    .collect::<Result<Vec<_>, _>>()
                    .map_err(|error| e("build message", error))?;
                client
                    .send_messages(&stream_id, &topic_id, &partitioning, &mut messages)
                    .await
                    .map_err(|error| e(&format!("send batch {batch}"), error))?;
            }
            Ok(())
        })
        .await;
    let single = Consumer::new(Identifier::numeric(1).expect("numeric id"));
    let poll = |consumer: Consumer, strategy: PollingStrategy, count: u32, auto_commit: bool| {
        let client = &client;
        let stream_id = &stream_id;
        let topic_id = &topic_id;
        async move {
            client
                .poll_messages(
                    stream_id,
                    topic_id,
                    Some(TARGET_PARTITION),
                    &consumer,
                    &strategy,
                    count,
                    auto_commit,
                )
                .await
        }
    };
    if sent {
        r.step(
            "e.poll(offset 0, count 100): offsets 0..29, payloads, headers",
            async {
                let polled = poll(single.clone(), PollingStrategy::offset(0), 100, false)
                    .await
                    .map_err(|error| e("poll_messages", error))?;
                ensure(polled.partition_id == TARGET_PARTITION, || {
                    format!("partition_id {}", polled.partition_id)
                })?;
                check_offsets("offset 0", &polled, 0..30)?;
                ensure(polled.current_offset == 29, || {
                    format!("current_offset {}, expected 29", polled.current_offset)
                })?;
                check_round_trip(&polled)
            },
        )
        .await;

        // ---- f. polling strategies ---------------------------------------------
        r.step("f.poll(first, count 5)", async {
            let polled = poll(single.clone(), PollingStrategy::first(), 5, false)
                .await
                .map_err(|error| e("poll_messages", error))?;
            check_offsets("first", &polled, 0..5)?;
            check_round_trip(&polled)
        })
        .await;
        r.step("f.poll(last, count 5): offsets 25..29", async {
            let polled = poll(single.clone(), PollingStrategy::last(), 5, false)
                .await
                .map_err(|error| e("poll_messages", error))?;
            check_offsets("last", &polled, 25..30)?;
            check_round_trip(&polled)
        })
        .await;
        r.step("f.poll(offset 12, count 5)", async {
            let polled = poll(single.clone(), PollingStrategy::offset(12), 5, false)
                .await
                .map_err(|error| e("poll_messages", error))?;
            check_offsets("offset 12", &polled, 12..17)?;
            check_round_trip(&polled)
        })
        .await;
        r.step(
            "f.poll(timestamp between batch 2 and 3): first offset 20",
            async {
                let at = between_batches.ok_or_else(|| "no timestamp recorded".to_owned())?;
                let polled = poll(single.clone(), PollingStrategy::timestamp(at), 100, false)
                    .await
                    .map_err(|error| e("poll_messages", error))?;
                check_offsets("timestamp", &polled, 20..30)?;
                check_round_trip(&polled)
            },
        )
        .await;
        r.step(
            "f.poll(next, named consumer, auto_commit): 0..9 then 10..19",
            async {
                let named = Consumer::new(
                    Identifier::named(&format!("conf-next-{suffix}")).expect("valid consumer name"),
                );
                let first = poll(named.clone(), PollingStrategy::next(), 10, true)
                    .await
                    .map_err(|error| e("poll_messages #1", error))?;
                check_offsets("next #1", &first, 0..10)?;
                let second = poll(named.clone(), PollingStrategy::next(), 10, true)
                    .await
                    .map_err(|error| e("poll_messages #2", error))?;
                check_offsets("next #2", &second, 10..20)?;
                check_round_trip(&second)?;
                let stored = client
                    .get_consumer_offset(&named, &stream_id, &topic_id, Some(TARGET_PARTITION))
                    .await
                    .map_err(|error| e("get_consumer_offset", error))?
                    .ok_or_else(|| "auto_commit stored no offset".to_owned())?;
                ensure(stored.stored_offset == 19, || {
                    format!(
                        "auto_commit stored offset {}, expected 19",
                        stored.stored_offset
                    )
                })
            },
        )
        .await;
    } else {
        for step in [
            "e.poll(offset 0, count 100): offsets 0..29, payloads, headers",
            "f.poll(first, count 5)",
            "f.poll(last, count 5): offsets 25..29",
            "f.poll(offset 12, count 5)",
            "f.poll(timestamp between batch 2 and 3): first offset 20",
            "f.poll(next, named consumer, auto_commit): 0..9 then 10..19",
        ] {
            r.skip(step, "send_messages failed");
        }
    }

    // ---- g. consumer offsets (single consumer, numeric id 1) --------------------
    let p = Some(TARGET_PARTITION);
    r.step("g.store_consumer_offset(15)", async {
        client
            .store_consumer_offset(&single, &stream_id, &topic_id, p, 15)
            .await
            .map_err(|error| e("store_consumer_offset", error))
    })
    .await;
    r.step("g.get_consumer_offset == 15", async {
        let info = client
            .get_consumer_offset(&single, &stream_id, &topic_id, p)
            .await
            .map_err(|error| e("get_consumer_offset", error))?
            .ok_or_else(|| "no offset stored".to_owned())?;
        ensure(info.stored_offset == 15, || {
            format!("stored_offset {}", info.stored_offset)
        })?;
        ensure(info.partition_id == TARGET_PARTITION, || {
            format!("partition_id {}", info.partition_id)
        })?;
        ensure(info.current_offset == 29, || {
            format!("current_offset {}", info.current_offset)
        })
    })
    .await;
    r.step(
        "g.store_consumer_offset(beyond current) fails 4100",
        async {
            let result = client
                .store_consumer_offset(&single, &stream_id, &topic_id, p, 1_000)
                .await;
            expect_code("store offset 1000", result, 4100)
        },
    )
    .await;
    r.step("g.delete_consumer_offset", async {
        client
            .delete_consumer_offset(&single, &stream_id, &topic_id, p)
            .await
            .map_err(|error| e("delete_consumer_offset", error))
    })
    .await;
    r.step("g.get_consumer_offset after delete is none", async {
        let info = client
            .get_consumer_offset(&single, &stream_id, &topic_id, p)
            .await
            .map_err(|error| e("get_consumer_offset", error))?;
        ensure(info.is_none(), || format!("still stored: {info:?}"))
    })
    .await;
    r.step("g.delete_consumer_offset again fails 3021", async {
        let result = client
            .delete_consumer_offset(&single, &stream_id, &topic_id, p)
            .await;
        expect_code("second delete", result, 3021)
    })
    .await;

    // ---- h. consumer group --------------------------------------------------------
    let group_id = Identifier::named("g1").expect("valid group name");
    let group_consumer = Consumer::group(group_id.clone());
    let group_ok = r
        .step("h.create_consumer_group(g1)", async {
            let group = client
                .create_consumer_group(&stream_id, &topic_id, "g1")
                .await
                .map_err(|error| e("create_consumer_group", error))?;
            ensure(group.name == "g1", || {
                format!("group name {:?}", group.name)
            })?;
            ensure(group.members_count == 0 && group.members.is_empty(), || {
                format!("new group has {} members", group.members_count)
            })?;
            ensure(group.partitions_count == PARTITIONS, || {
                format!("group partitions_count {}", group.partitions_count)
            })
        })
        .await;
    if group_ok {
        r.step("h.join_consumer_group", async {
            client
                .join_consumer_group(&stream_id, &topic_id, &group_id)
                .await
                .map_err(|error| e("join_consumer_group", error))
        })
        .await;
        r.step(
            "h.get_consumer_group: 1 member holding 3 partitions",
            async {
                let group = client
                    .get_consumer_group(&stream_id, &topic_id, &group_id)
                    .await
                    .map_err(|error| e("get_consumer_group", error))?
                    .ok_or_else(|| "group not found".to_owned())?;
                ensure(group.members_count == 1 && group.members.len() == 1, || {
                    format!(
                        "members_count {} / {} listed",
                        group.members_count,
                        group.members.len()
                    )
                })?;
                let member = &group.members[0];
                let mut partitions = member.partitions.clone();
                partitions.sort_unstable();
                ensure(
                    member.partitions_count == PARTITIONS && partitions == vec![0, 1, 2],
                    || {
                        format!(
                            "member holds {} partitions {:?}",
                            member.partitions_count, member.partitions
                        )
                    },
                )
            },
        )
        .await;
        r.step("h.get_me lists the membership", async {
            let me = client.get_me().await.map_err(|error| e("get_me", error))?;
            ensure(
                me.consumer_groups_count == 1 && me.consumer_groups.len() == 1,
                || format!("get_me consumer_groups_count {}", me.consumer_groups_count),
            )
        })
        .await;
        r.step("h.poll as member (explicit partition, next)", async {
            let polled = poll(group_consumer.clone(), PollingStrategy::next(), 5, false)
                .await
                .map_err(|error| e("poll_messages", error))?;
            ensure(polled.partition_id == TARGET_PARTITION, || {
                format!(
                    "partition_id {} (0xFFFFFFFF = not owned)",
                    polled.partition_id
                )
            })?;
            check_offsets("group next", &polled, 0..5)?;
            check_round_trip(&polled)
        })
        .await;
        r.step(
            "h.poll as member (no partition: SDK syncs the assignment)",
            async {
                let polled = client
                    .poll_messages(
                        &stream_id,
                        &topic_id,
                        None,
                        &group_consumer,
                        &PollingStrategy::offset(0),
                        1,
                        false,
                    )
                    .await
                    .map_err(|error| e("poll_messages", error))?;
                ensure(polled.partition_id < PARTITIONS, || {
                    format!(
                        "partition_id {} is not an assigned partition",
                        polled.partition_id
                    )
                })
            },
        )
        .await;
        r.step("h.store_consumer_offset as member + read back", async {
            client
                .store_consumer_offset(&group_consumer, &stream_id, &topic_id, p, 4)
                .await
                .map_err(|error| e("store_consumer_offset", error))?;
            let info = client
                .get_consumer_offset(&group_consumer, &stream_id, &topic_id, p)
                .await
                .map_err(|error| e("get_consumer_offset", error))?
                .ok_or_else(|| "group offset not stored".to_owned())?;
            ensure(info.stored_offset == 4, || {
                format!("stored_offset {}", info.stored_offset)
            })
        })
        .await;
        r.step("h.leave_consumer_group", async {
            client
                .leave_consumer_group(&stream_id, &topic_id, &group_id)
                .await
                .map_err(|error| e("leave_consumer_group", error))
        })
        .await;
        r.step("h.get_consumer_group: 0 members", async {
            let group = client
                .get_consumer_group(&stream_id, &topic_id, &group_id)
                .await
                .map_err(|error| e("get_consumer_group", error))?
                .ok_or_else(|| "group not found".to_owned())?;
            ensure(group.members_count == 0 && group.members.is_empty(), || {
                format!("members_count {} after leave", group.members_count)
            })
        })
        .await;
        r.step("h.delete_consumer_group", async {
            client
                .delete_consumer_group(&stream_id, &topic_id, &group_id)
                .await
                .map_err(|error| e("delete_consumer_group", error))?;
            let group = client
                .get_consumer_group(&stream_id, &topic_id, &group_id)
                .await
                .map_err(|error| e("get_consumer_group", error))?;
            ensure(group.is_none(), || {
                "group still present after delete".to_owned()
            })
        })
        .await;
    } else {
        for step in [
            "h.join_consumer_group",
            "h.get_consumer_group: 1 member holding 3 partitions",
            "h.get_me lists the membership",
            "h.poll as member (explicit partition, next)",
            "h.poll as member (no partition: SDK syncs the assignment)",
            "h.store_consumer_offset as member + read back",
            "h.leave_consumer_group",
            "h.get_consumer_group: 0 members",
            "h.delete_consumer_group",
        ] {
            r.skip(step, "group creation failed");
        }
    }

    // ---- i. delete topic and stream -------------------------------------------------
    r.step("i.delete_topic", async {
        client
            .delete_topic(&stream_id, &topic_id)
            .await
            .map_err(|error| e("delete_topic", error))
    })
    .await;
    r.step("i.get_topic after delete is none", async {
        match client.get_topic(&stream_id, &topic_id).await {
            Ok(None) => Ok(()),
            Ok(Some(topic)) => Err(format!("topic still present: {}", topic.name)),
            Err(error) if error.as_code() == 2010 => Ok(()),
            Err(error) => Err(e("get_topic", error)),
        }
    })
    .await;
    r.step("i.delete_stream", async {
        client
            .delete_stream(&stream_id)
            .await
            .map_err(|error| e("delete_stream", error))?;
        let stream = client
            .get_stream(&stream_id)
            .await
            .map_err(|error| e("get_stream", error))?;
        ensure(stream.is_none(), || {
            "stream still present after delete".to_owned()
        })
    })
    .await;

    let _ = client.shutdown().await;
}

fn keys_of(specs: &[OptionSpec]) -> Vec<&str> {
    specs.iter().map(|s| s.key.as_str()).collect()
}

/// Best-effort removal of the stream after an early abort.
async fn cleanup(client: &IggyClient, stream_id: &Identifier) {
    let _ = tokio::time::timeout(STEP_TIMEOUT, client.delete_stream(stream_id)).await;
}
