"""Consume-transform-produce in transactions with confluent-kafka
(librdkafka inside), for txnctp_python_test.go (the scenario of
txnctp_test.go):

  python txn_ctp.py BOOTSTRAP IN OUT GROUP TRANSACTIONAL_ID PER_TXN

A consumer of IN in GROUP (subscribe, read_committed, no auto commit) and a
transactional producer run two transactions of PER_TXN input records each:
every record goes to OUT as "out-" + value, alternating between partitions
0 and 1, and send_offsets_to_transaction adds the group's next offset; the
first commits, the second aborts (its records flushed first, so that they
reach the broker). Then OUT's two partitions are read from the start at
read_committed and at read_uncommitted. It prints one JSON line:
{"read_committed": [values], "read_uncommitted": [values]}, and exits 1
with the error on stderr when a step fails.
"""

import json
import sys
import time

from confluent_kafka import Consumer, KafkaException, Producer, TopicPartition


def fail(msg):
    sys.stderr.write("txn_ctp.py: %s\n" % msg)
    sys.exit(1)


def read_all(bootstrap, topic, level, n):
    """Partitions 0 and 1 of topic from the start until n values, then one
    more second (to see anything it must not read)."""
    c = Consumer({
        "bootstrap.servers": bootstrap,
        "group.id": "txn-ctp-read-%d" % time.time_ns(),
        "isolation.level": level,
        "enable.auto.commit": False,
    })
    c.assign([TopicPartition(topic, p, 0) for p in (0, 1)])
    got = []
    deadline = time.time() + 30
    extra = None
    while time.time() < deadline and (extra is None or time.time() < extra):
        m = c.poll(0.1)
        if m is None:
            pass
        elif m.error():
            fail("%s consumer: %s" % (level, m.error()))
        else:
            got.append(m.value().decode())
        if len(got) >= n and extra is None:
            extra = time.time() + 1
    c.close()
    return got


def main():
    bootstrap, src, out, group, txid, per = sys.argv[1:7]
    per = int(per)
    consumer = Consumer({
        "bootstrap.servers": bootstrap,
        "group.id": group,
        "isolation.level": "read_committed",
        "enable.auto.commit": False,
        "auto.offset.reset": "earliest",
    })
    consumer.subscribe([src])
    errors = []

    def delivered(err, _msg):
        if err is not None:
            errors.append(str(err))

    producer = Producer({"bootstrap.servers": bootstrap, "transactional.id": txid})
    try:
        producer.init_transactions(60)
        deadline = time.time() + 60
        for commit in (True, False):
            producer.begin_transaction()
            n, nxt = 0, None
            while n < per:
                if time.time() > deadline:
                    fail("consumed %d records of %d" % (n, per))
                m = consumer.poll(0.1)
                if m is None:
                    continue
                if m.error():
                    fail("consumer: %s" % m.error())
                producer.produce(out, value=b"out-" + m.value(), partition=n % 2, on_delivery=delivered)
                producer.poll(0)
                nxt = m.offset() + 1
                n += 1
            producer.send_offsets_to_transaction([TopicPartition(src, 0, nxt)], consumer.consumer_group_metadata(), 30)
            if commit:
                producer.commit_transaction(30)
            else:
                # abort_transaction purges what is still queued: flush first
                # so that the aborted records are on the broker.
                if producer.flush(30) != 0:
                    fail("records not flushed before the abort")
                producer.abort_transaction(30)
    except KafkaException as e:
        fail("transaction: %s" % e)
    finally:
        consumer.close()
    if errors:
        fail("delivery: %s" % errors[0])
    print(json.dumps({
        "read_committed": read_all(bootstrap, out, "read_committed", per),
        "read_uncommitted": read_all(bootstrap, out, "read_uncommitted", 2 * per),
    }))


if __name__ == "__main__":
    main()
