//! iggy-conformance-edge: drives a server in protocol 0.12 mode through the
//! newest published official Rust SDK (`iggy` 0.11.1-edge.9, protocol 0.12.2)
//! over every command the kafka-iggy gateway uses, and checks what comes back.
//!
//! Every step prints `PASS <step>` or `FAIL <step>: <detail>`; the run ends
//! with `N passed, M failed` and exits non-zero when anything failed. A step's
//! name carries the Iggy commands it exercises, so a failure names the command
//! whose layout or behaviour differs (see docs/iggy-protocol-0.12.md).
//!
//! Usage: iggy-conformance-edge [--addr HOST:PORT] [--username U] [--password P]
//! Environment: IGGY_ADDR, IGGY_USERNAME, IGGY_PASSWORD (flags win).

#[path = "../../src/common.rs"]
mod common;

use common::*;
use iggy::prelude::*;
use std::str::FromStr;
use std::time::Duration;

const STEP_TIMEOUT: Duration = Duration::from_secs(60);
const SDK_CRATE_VERSION: &str = "0.11.1-edge.9";
const PARTITIONS: u32 = 3;
const TARGET_PARTITION: u32 = 1;
const MESSAGES: u32 = 10;

fn payload(i: u32) -> String {
    format!("edge-message-{i:03}")
}

#[tokio::main(flavor = "multi_thread", worker_threads = 2)]
async fn main() {
    let config = match parse_args("usage: iggy-conformance-edge [--addr HOST:PORT] [--username U] [--password P]") {
        Ok(config) => config,
        Err(error) => {
            eprintln!("iggy-conformance-edge: {error}");
            std::process::exit(2);
        }
    };
    println!(
        "iggy-conformance-edge: official iggy Rust SDK {SDK_CRATE_VERSION} against {}",
        config.addr
    );
    let mut runner = Runner { passed: 0, failed: 0 };
    run(&mut runner, &config).await;
    println!("{} passed, {} failed", runner.passed, runner.failed);
    std::process::exit(if runner.failed == 0 { 0 } else { 1 });
}

async fn run(r: &mut Runner, cfg: &Config) {
    let suffix = unique_suffix();
    let stream_name = format!("edge-{suffix}");
    let topic_name = "edge-topic".to_owned();
    let sid = Identifier::named(&stream_name).expect("stream name");
    let tid = Identifier::named(&topic_name).expect("topic name");

    let client = match new_client(&cfg.addr) {
        Ok(client) => client,
        Err(error) => {
            r.record("connect", Err(error));
            return;
        }
    };
    let ok = r
        .step("login_register(40, bind secret, version 0.12.2 through the 0.12.0 gate)", async {
            client.connect().await.map_err(|error| e("connect", error))?;
            client
                .login_user(&cfg.username, &cfg.password)
                .await
                .map_err(|error| e("login_user", error))?;
            Ok(())
        })
        .await;
    if !ok {
        println!("FAIL remaining steps: not run, login failed");
        r.failed += 1;
        return;
    }
    r.step("ping(1)", async { client.ping().await.map_err(|error| e("ping", error)) })
        .await;
    r.step("get_cluster_metadata(12, replica_id per node)", async {
        let md = client
            .get_cluster_metadata()
            .await
            .map_err(|error| e("get_cluster_metadata", error))?;
        ensure(md.nodes.len() == 1, || format!("{} nodes, want 1", md.nodes.len()))?;
        let node = &md.nodes[0];
        ensure(node.replica_id == 0, || format!("replica_id {}", node.replica_id))?;
        ensure(node.role == ClusterNodeRole::Leader, || format!("role {:?}", node.role))
    })
    .await;

    r.step("describe_options(13, flags byte per descriptor)", async {
        let specs = client
            .describe_options(OptionsScope::Topic)
            .await
            .map_err(|error| e("describe_options", error))?;
        let expiry = specs
            .iter()
            .find(|spec| spec.key == "message_expiry")
            .ok_or("message_expiry not described")?;
        ensure(expiry.updatable, || "message_expiry not updatable".to_owned())?;
        let segment = specs
            .iter()
            .find(|spec| spec.key == "segment_size")
            .ok_or("segment_size not described")?;
        ensure(!segment.updatable, || "segment_size described as updatable".to_owned())
    })
    .await;

    r.step("create_stream(202), get_stream(200), get_streams(201) (derived options block)", async {
        let created = client
            .create_stream(&stream_name, &StreamCreateOptions::default())
            .await
            .map_err(|error| e("create_stream", error))?;
        ensure(created.name == stream_name, || format!("created {:?}", created.name))?;
        let got = client
            .get_stream(&sid)
            .await
            .map_err(|error| e("get_stream", error))?
            .ok_or("get_stream: none")?;
        ensure(got.topics_count == 0, || format!("topics_count {}", got.topics_count))?;
        let all = client.get_streams().await.map_err(|error| e("get_streams", error))?;
        ensure(all.iter().any(|s| s.name == stream_name), || "stream not listed".to_owned())
    })
    .await;

    let expiry = IggyExpiry::ExpireDuration(IggyDuration::from(Duration::from_secs(3600)));
    let topic_ok = r
        .step("create_topic(302, typed options), get_topic(300, 0.12 header and partitions)", async {
            let options = TopicCreateOptions {
                partitions_count: Some(PARTITIONS),
                message_expiry: Some(expiry),
                ..TopicCreateOptions::default()
            };
            let created = client
                .create_topic(&sid, &topic_name, &options)
                .await
                .map_err(|error| e("create_topic", error))?;
            ensure(created.partitions_count == PARTITIONS, || {
                format!("created with {} partitions", created.partitions_count)
            })?;
            let got = client
                .get_topic(&sid, &tid)
                .await
                .map_err(|error| e("get_topic", error))?
                .ok_or("get_topic: none")?;
            ensure(got.partitions.len() == PARTITIONS as usize, || {
                format!("{} partition entries", got.partitions.len())
            })?;
            ensure(got.partitions.iter().all(|p| p.members == vec![0]), || {
                "partition members are not [0] (one-node cluster)".to_owned()
            })?;
            let resolved = got.resolved_options();
            ensure(resolved.message_expiry == expiry, || {
                format!("message_expiry {:?}, want {expiry:?}", resolved.message_expiry)
            })
        })
        .await;
    if topic_ok {
        r.step("get_topics(301)", async {
            let topics = client.get_topics(&sid).await.map_err(|error| e("get_topics", error))?;
            ensure(topics.len() == 1 && topics[0].name == topic_name, || format!("{topics:?}"))
        })
        .await;
        r.step("update_resource(16, topic set/reset patch) replaces update_topic(304)", async {
            let longer = IggyExpiry::ExpireDuration(IggyDuration::from(Duration::from_secs(7200)));
            client
                .update_topic(
                    &sid,
                    &tid,
                    &TopicUpdateOptions {
                        message_expiry: Some(longer),
                        ..TopicUpdateOptions::default()
                    },
                )
                .await
                .map_err(|error| e("update_topic (set)", error))?;
            let got = client
                .get_topic(&sid, &tid)
                .await
                .map_err(|error| e("get_topic", error))?
                .ok_or("get_topic: none")?;
            ensure(got.resolved_options().message_expiry == longer, || {
                format!("after set: {:?}", got.resolved_options().message_expiry)
            })?;
            let mut reset = TopicUpdateOptions::default();
            reset.raw_reset.insert("message_expiry".to_owned());
            client
                .update_topic(&sid, &tid, &reset)
                .await
                .map_err(|error| e("update_topic (reset)", error))?;
            let got = client
                .get_topic(&sid, &tid)
                .await
                .map_err(|error| e("get_topic", error))?
                .ok_or("get_topic: none")?;
            ensure(got.resolved_options().message_expiry != longer, || {
                "reset left message_expiry as set".to_owned()
            })
        })
        .await;

        let sent = r
            .step("send_messages(101) to one partition (after get_partition_route(105))", async {
                let mut messages: Vec<IggyMessage> = (0..MESSAGES)
                    .map(|i| IggyMessage::from_str(&payload(i)).expect("message"))
                    .collect();
                client
                    .send_messages(&sid, &tid, &Partitioning::partition_id(TARGET_PARTITION), &mut messages)
                    .await
                    .map_err(|error| e("send_messages", error))?;
                Ok(())
            })
            .await;
        if sent {
            let consumer = Consumer::new(Identifier::named("edge-consumer").expect("name"));
            r.step("poll_messages(100/106, 40-byte reply head) by offset", async {
                let polled = client
                    .poll_messages(&sid, &tid, TARGET_PARTITION, &consumer, &PollingStrategy::offset(0), PollOptions::default())
                    .await
                    .map_err(|error| e("poll_messages", error))?;
                let offsets: Vec<u64> = polled.messages.iter().map(|m| m.header.offset).collect();
                ensure(offsets == (0..MESSAGES as u64).collect::<Vec<_>>(), || format!("offsets {offsets:?}"))?;
                for m in &polled.messages {
                    let want = payload(m.header.offset as u32);
                    ensure(m.payload.as_ref() == want.as_bytes(), || {
                        format!("offset {}: payload {:?}", m.header.offset, String::from_utf8_lossy(&m.payload))
                    })?;
                }
                ensure(polled.current_offset == MESSAGES as u64 - 1, || format!("current_offset {}", polled.current_offset))
            })
            .await;
            r.step("store_consumer_offset(121), get_consumer_offset(120), delete_consumer_offset(122)", async {
                client
                    .store_consumer_offset(&consumer, &sid, &tid, Some(TARGET_PARTITION), 4)
                    .await
                    .map_err(|error| e("store_consumer_offset", error))?;
                let got = client
                    .get_consumer_offset(&consumer, &sid, &tid, Some(TARGET_PARTITION))
                    .await
                    .map_err(|error| e("get_consumer_offset", error))?
                    .ok_or("get_consumer_offset: none after store")?;
                ensure(got.stored_offset == 4, || format!("stored_offset {}", got.stored_offset))?;
                client
                    .delete_consumer_offset(&consumer, &sid, &tid, Some(TARGET_PARTITION))
                    .await
                    .map_err(|error| e("delete_consumer_offset", error))?;
                let after = client
                    .get_consumer_offset(&consumer, &sid, &tid, Some(TARGET_PARTITION))
                    .await
                    .map_err(|error| e("get_consumer_offset after delete", error))?;
                ensure(after.is_none(), || format!("offset after delete: {after:?}"))
            })
            .await;
            r.step("consumer kind 3 (external group kafka.cg.<group>): store, get", async {
                let external = Consumer::external_group(Identifier::named("kafka.cg.edge").expect("name"));
                client
                    .store_consumer_offset(&external, &sid, &tid, Some(TARGET_PARTITION), 7)
                    .await
                    .map_err(|error| e("store_consumer_offset(kind 3)", error))?;
                let got = client
                    .get_consumer_offset(&external, &sid, &tid, Some(TARGET_PARTITION))
                    .await
                    .map_err(|error| e("get_consumer_offset(kind 3)", error))?
                    .ok_or("get_consumer_offset(kind 3): none after store")?;
                ensure(got.stored_offset == 7, || format!("stored_offset {}", got.stored_offset))
            })
            .await;
        }

        r.step("create_partitions(402)", async {
            client
                .create_partitions(&sid, &tid, 1)
                .await
                .map_err(|error| e("create_partitions", error))?;
            let got = client
                .get_topic(&sid, &tid)
                .await
                .map_err(|error| e("get_topic", error))?
                .ok_or("get_topic: none")?;
            ensure(got.partitions_count == PARTITIONS + 1, || format!("partitions_count {}", got.partitions_count))
        })
        .await;
        r.step("create_consumer_group(602), get_consumer_group(600), delete_consumer_group(603)", async {
            let group = client
                .create_consumer_group(&sid, &tid, "edge-group")
                .await
                .map_err(|error| e("create_consumer_group", error))?;
            ensure(group.name == "edge-group", || format!("group {:?}", group.name))?;
            let gid = Identifier::named("edge-group").expect("name");
            let got = client
                .get_consumer_group(&sid, &tid, &gid)
                .await
                .map_err(|error| e("get_consumer_group", error))?;
            ensure(got.is_some(), || "group not found".to_owned())?;
            client
                .delete_consumer_group(&sid, &tid, &gid)
                .await
                .map_err(|error| e("delete_consumer_group", error))
        })
        .await;
        r.step("delete_topic(303)", async {
            client.delete_topic(&sid, &tid).await.map_err(|error| e("delete_topic", error))
        })
        .await;
    }
    r.step("delete_stream(203)", async {
        client.delete_stream(&sid).await.map_err(|error| e("delete_stream", error))
    })
    .await;

    let token_name = format!("edge-pat-{suffix}");
    let mut token = String::new();
    let created = r
        .step("create_personal_access_token(42)", async {
            let raw = client
                .create_personal_access_token(&token_name, PersonalAccessTokenExpiry::NeverExpire)
                .await
                .map_err(|error| e("create_personal_access_token", error))?;
            token = raw.token;
            Ok(())
        })
        .await;
    if created {
        r.step("login_register_with_pat(45, bind secret) on a second client", async {
            let other = new_client(&cfg.addr)?;
            other.connect().await.map_err(|error| e("connect", error))?;
            other
                .login_with_personal_access_token(&token)
                .await
                .map_err(|error| e("login_with_personal_access_token", error))?;
            other.ping().await.map_err(|error| e("ping after PAT login", error))?;
            let _ = other.shutdown().await;
            client
                .delete_personal_access_token(&token_name)
                .await
                .map_err(|error| e("delete_personal_access_token", error))
        })
        .await;
    }
    let _ = client.shutdown().await;
}
