package main

import (
	"fmt"
	"os"
)

// serve runs the sidecar. Until the Kafka data path lands it says so and exits 0.
func serve(args []string) int {
	fmt.Fprintln(os.Stderr, "kafka-iggy: the Kafka front door is not wired yet; `kafka-iggy embedded-iggy` runs the embedded Iggy server")
	return 0
}

// embeddedIggy runs the embedded Iggy server.
func embeddedIggy(args []string) int {
	fmt.Fprintln(os.Stderr, "kafka-iggy: the embedded Iggy server is not built yet")
	return 1
}
