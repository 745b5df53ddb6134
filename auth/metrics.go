package auth

import "github.com/prometheus/client_golang/prometheus"

// promMetrics counts authentications in Prometheus.
type promMetrics struct {
	failed *prometheus.CounterVec
	ok     *prometheus.CounterVec
}

// NewPrometheusMetrics registers kafka_iggy_sasl_failures_total (labels
// remote_host, mechanism) and kafka_iggy_sasl_authentications_total
// (mechanism) with reg. remote_host is the client's IP address without
// port, so a host guessing passwords shows as one growing series.
func NewPrometheusMetrics(reg prometheus.Registerer) Metrics {
	m := &promMetrics{
		failed: prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: "kafka_iggy", Name: "sasl_failures_total",
			Help: "Refused SASL authentications (wrong credentials, unsupported mechanism), by client IP address and mechanism."},
			[]string{"remote_host", "mechanism"}),
		ok: prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: "kafka_iggy", Name: "sasl_authentications_total",
			Help: "Completed SASL authentications and re-authentications, by mechanism."}, []string{"mechanism"}),
	}
	reg.MustRegister(m.failed, m.ok)
	return m
}

func (m *promMetrics) Failed(host, mech string) { m.failed.WithLabelValues(host, mech).Inc() }
func (m *promMetrics) Succeeded(mech string)    { m.ok.WithLabelValues(mech).Inc() }
