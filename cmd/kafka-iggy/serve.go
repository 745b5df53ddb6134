package main

import (
	"fmt"
	"os"

	"github.com/rs/zerolog"

	"github.com/kafka-iggy/kafka-iggy/embedded"
)

// serve runs the sidecar. Until the Kafka data path lands it says so and exits 0.
func serve(args []string) int {
	fmt.Fprintln(os.Stderr, "kafka-iggy: the Kafka front door is not wired yet; `kafka-iggy embedded-iggy` runs the embedded Iggy server")
	return 0
}

// embeddedIggy runs only the embedded Iggy-protocol server.
func embeddedIggy(args []string) int {
	log := zerolog.New(os.Stderr).With().Timestamp().Str("component", "embedded").Logger()
	return embedded.Main(args, log)
}
