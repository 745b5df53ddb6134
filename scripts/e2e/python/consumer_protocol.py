"""One member of a consumer group on the consumer group protocol (KIP-848,
group.protocol=consumer) with confluent-kafka (librdkafka inside), for
consumer_protocol_test.go, the twin of javacg/ConsumerProtocol.java:

  python consumer_protocol.py BOOTSTRAP TOPIC GROUP

It prints one JSON line per event on stdout: {"event":"assigned","p":[..]}
and {"event":"revoked","p":[..]} (incremental, as librdkafka calls the
rebalance callbacks on this protocol), {"event":"record","p":[partition,
offset]}, and {"event":"error","error":".."}. It commits after every poll
that returned records and stops (closing the consumer, which leaves the
group) when stdin closes.
"""

import json
import sys
import threading

from confluent_kafka import Consumer, KafkaException


def emit(event, **kw):
    kw["event"] = event
    sys.stdout.write(json.dumps(kw) + "\n")
    sys.stdout.flush()


def main():
    bootstrap, topic, group = sys.argv[1:4]
    consumer = Consumer({
        "bootstrap.servers": bootstrap,
        "group.id": group,
        "group.protocol": "consumer",
        "auto.offset.reset": "earliest",
        "enable.auto.commit": False,
    })
    stop = threading.Event()

    def wait_stdin():
        while sys.stdin.buffer.read(4096):
            pass
        stop.set()

    threading.Thread(target=wait_stdin, daemon=True).start()

    def parts(tps):
        return sorted(tp.partition for tp in tps)

    def on_assign(c, tps):
        emit("assigned", p=parts(tps))

    def on_revoke(c, tps):
        if tps:
            try:
                c.commit(asynchronous=False)
            except KafkaException:
                pass  # nothing consumed since the last commit
            emit("revoked", p=parts(tps))

    def on_lost(c, tps):
        if tps:
            emit("revoked", p=parts(tps))

    consumer.subscribe([topic], on_assign=on_assign, on_revoke=on_revoke, on_lost=on_lost)
    try:
        while not stop.is_set():
            msgs = consumer.consume(num_messages=500, timeout=0.2)
            got = False
            for m in msgs:
                if m.error():
                    emit("error", error=str(m.error()))
                    continue
                emit("record", p=[m.partition(), m.offset()])
                got = True
            if got:
                consumer.commit(asynchronous=False)
    except Exception as e:  # noqa: BLE001 - reported to the test
        emit("error", error=repr(e))
    finally:
        consumer.close()


if __name__ == "__main__":
    main()
