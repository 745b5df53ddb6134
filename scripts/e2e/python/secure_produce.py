"""One record produced with confluent-kafka (Python) over the given client
configuration, for scripts/e2e/security_diff_test.go.

    python secure_produce.py CONFIG_JSON TOPIC

Prints the outcome class: ok (delivered), sasl_failed (a SASL
authentication error was reported) or refused (anything else: the TLS
handshake failed, the broker closed the connection, timeout).
"""
import json
import sys

from confluent_kafka import KafkaError, Producer


def main():
    conf = json.loads(sys.argv[1])
    topic = sys.argv[2]
    errors = []
    delivered = []
    conf["error_cb"] = errors.append
    conf["message.timeout.ms"] = 8000
    conf["log_level"] = 0  # librdkafka's own log lines: the outcome is enough
    producer = Producer(conf)
    producer.produce(topic, b"secure", on_delivery=lambda err, msg: delivered.append(err))
    producer.flush(15)
    if delivered and delivered[0] is None:
        print("ok")
    elif any(e.code() == KafkaError._AUTHENTICATION and "SASL" in e.str() for e in errors):
        print("sasl_failed")
    else:
        for e in errors[:3]:
            print("error:", e.str(), file=sys.stderr)
        print("refused")


if __name__ == "__main__":
    main()
