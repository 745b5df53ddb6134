# Apache Kafka versions the compatibility run uses, sourced by the scripts in
# this folder. Each is the newest of its line that Maven Central serves (the
# 4.x line is the reference broker; 3.9.x is the last line with ZooKeeper
# support and still common in the field). Bump a version here and the
# installer fetches the new jars on its next run.
KAFKA_4_VERSION=4.4.0
KAFKA_3_VERSION=3.9.2
# Every version installed by default; the first is the reference broker.
KAFKA_VERSIONS="$KAFKA_4_VERSION $KAFKA_3_VERSION"
