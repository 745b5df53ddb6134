// Package admin is the sidecar's admin listener: an HTTP server with
// Prometheus metrics on /metrics, liveness on /healthz and readiness on
// /readyz, plus the adapters that turn the front door's and the Iggy
// client's measurement hooks into Prometheus series.
//
// Wiring (what `kafka-iggy serve` does):
//
//	m := admin.NewMetrics(version)
//	ready := admin.NewReadiness()
//	client, _ := iggy.New(cfg.Iggy, log, iggy.WithMetrics(m.Iggy()))
//	srv, _ := proxy.New(cfg.Proxy, table, log, proxy.WithMetrics(m.Proxy()))
//	ready.AddCheck("listener", func() bool { return srv.Addr() != nil })
//	ready.AddCheck("iggy", client.Ready)
//	adm := admin.New(cfg.Admin, m, ready, log)
//	adm.Start(ctx)
//	// on SIGTERM:
//	ready.SetDraining()   // /readyz answers 503 from here on
//	srv.Shutdown(ctx)     // drain the Kafka listener
//	adm.Shutdown(ctx)     // last, so probes and scrapes see the drain
//
// /healthz answers 200 while the process runs (also while draining: a
// draining sidecar must not be restarted by its liveness probe). /readyz
// answers 200 when every check passes and the sidecar is not draining, else
// 503 with the failing checks, one per line. Both are plain text.
//
// Every series is named kafka_iggy_*; docs/OPERATIONS.md lists them (a test
// keeps that list equal to what NewMetrics registers).
package admin
