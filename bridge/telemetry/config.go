// Package telemetry accepts the metrics Kafka clients push (KIP-714:
// GetTelemetrySubscriptions and PushTelemetry) and exports them as
// Prometheus series labelled with the pushing client's client_id and
// client_instance_id. Store holds the client instances, checks their
// pushes as Kafka's ClientMetricsManager does, decodes the OTLP payload
// (otlp.go) and is the prometheus.Collector the admin listener's /metrics
// gathers. It knows neither Iggy nor the front door: bridge's API files 71
// and 72 call it, and cmd registers it on the metrics registry.
package telemetry

import (
	"errors"
	"fmt"
	"strings"
	"time"
)

// Config is the telemetry section (telemetry.*).
type Config struct {
	// Enabled advertises GetTelemetrySubscriptions and PushTelemetry in
	// ApiVersions and serves them. A Kafka broker advertises them only with
	// a metrics reporter that accepts client metrics. Default false.
	Enabled bool `koanf:"enabled"`
	// Metrics are the metric name prefixes clients are asked to push; an
	// empty string asks for every metric. Default the Java client's
	// producer and consumer metrics: org.apache.kafka.producer. and
	// org.apache.kafka.consumer.
	Metrics []string `koanf:"metrics"`
	// PushInterval is how often a client pushes (Kafka's client-metrics
	// interval.ms); a push sooner than that after the previous one is
	// answered THROTTLING_QUOTA_EXCEEDED. 100ms..1h. Default 5m (Kafka's).
	PushInterval time.Duration `koanf:"push_interval"`
	// MaxBytes is the largest push payload accepted as sent (Kafka's
	// telemetry.max.bytes; larger: TELEMETRY_TOO_LARGE); decompressed it
	// may be up to 8 times that, drawn from the memory budget while it is
	// decoded. Default 1048576 (Kafka's).
	MaxBytes int `koanf:"max_bytes"`
	// MaxClients bounds the client instances whose metrics are kept; a new
	// one beyond it evicts the one seen least recently (counted in
	// kafka_iggy_telemetry_evicted_clients_total). Default 1000.
	MaxClients int `koanf:"max_clients"`
	// MaxSeriesPerClient bounds the series one client's push exports;
	// data points beyond it are dropped (counted in
	// kafka_iggy_telemetry_dropped_series_total). Default 2000.
	MaxSeriesPerClient int `koanf:"max_series_per_client"`
}

// DefaultConfig returns the documented defaults.
func DefaultConfig() Config {
	return Config{
		Metrics:            []string{"org.apache.kafka.producer.", "org.apache.kafka.consumer."},
		PushInterval:       5 * time.Minute,
		MaxBytes:           1 << 20,
		MaxClients:         1000,
		MaxSeriesPerClient: 2000,
	}
}

// Validate reports every bad value, with its telemetry.* key.
func (c Config) Validate() error {
	var errs []error
	if c.PushInterval < 100*time.Millisecond || c.PushInterval > time.Hour {
		errs = append(errs, fmt.Errorf("telemetry.push_interval: must be 100ms..1h, got %s", c.PushInterval))
	}
	if c.MaxBytes < 1 || c.MaxBytes > 64<<20 {
		errs = append(errs, fmt.Errorf("telemetry.max_bytes: must be 1..67108864, got %d", c.MaxBytes))
	}
	if c.MaxClients < 1 {
		errs = append(errs, fmt.Errorf("telemetry.max_clients: must be at least 1, got %d", c.MaxClients))
	}
	if c.MaxSeriesPerClient < 1 {
		errs = append(errs, fmt.Errorf("telemetry.max_series_per_client: must be at least 1, got %d", c.MaxSeriesPerClient))
	}
	for _, m := range c.Metrics {
		if strings.TrimSpace(m) != m {
			errs = append(errs, fmt.Errorf("telemetry.metrics: %q has surrounding spaces", m))
		}
	}
	return errors.Join(errs...)
}
