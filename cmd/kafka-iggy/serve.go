package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/rs/zerolog"

	"github.com/kafka-iggy/kafka-iggy/auth"
	"github.com/kafka-iggy/kafka-iggy/bridge"
	"github.com/kafka-iggy/kafka-iggy/bridge/cluster"
	"github.com/kafka-iggy/kafka-iggy/bridge/iggy"
	"github.com/kafka-iggy/kafka-iggy/budget"
	"github.com/kafka-iggy/kafka-iggy/codec/wire"
	"github.com/kafka-iggy/kafka-iggy/embedded"
	"github.com/kafka-iggy/kafka-iggy/proxy"
	"github.com/kafka-iggy/kafka-iggy/proxy/admin"
	"github.com/kafka-iggy/kafka-iggy/proxy/tlsfront"
)

// serve runs the sidecar until SIGINT or SIGTERM and returns the exit status.
func serve(args []string) int {
	cfg, err := loadConfig(args, os.Environ())
	if errors.Is(err, errHelp) {
		fmt.Fprint(os.Stderr, configUsage())
		return 0
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "kafka-iggy:", err)
		return 2
	}
	log := newLogger(cfg.Log, os.Stderr)
	log.Info().Object("config", cfg).Msg("effective configuration (secrets masked)")
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	defer stop()
	if err := runSidecar(ctx, cfg, log, nil); err != nil {
		log.Error().Err(err).Msg("kafka-iggy stopped with an error")
		return 1
	}
	return 0
}

// started reports the addresses a running sidecar listens on (tests use it).
type started struct {
	Kafka string // Kafka listener
	Admin string // admin listener ("" when disabled)
	Iggy  string // Iggy server the sidecar talks to
}

// runSidecar starts every part in dependency order — the embedded Iggy server
// (when no upstream is configured), the Iggy session pool, the bridge, the
// Kafka front door, the admin listener — and runs until ctx ends. Then
// readiness drops first, the front door drains in-flight requests within
// limits.drain_timeout, and everything closes in reverse order.
func runSidecar(ctx context.Context, cfg Config, log zerolog.Logger, onStart func(started)) error {
	metrics := admin.NewMetrics(version)
	// One memory budget for the process: the front door and the fetches
	// draw from it, GOMEMLIMIT follows it.
	var budgetSource string
	cfg.Proxy, budgetSource = cfg.Proxy.Resolved()
	if err := cfg.Proxy.Validate(); err != nil {
		return err
	}
	budget := budget.New(cfg.Proxy.Limits.MemoryBytes)
	metrics.SetBudget(budget)
	memLimit := applyGoMemLimit(budget.Total(), log)
	wire.SetKeepBudget(budget.Total()) // the large Fetch and reply buffers kept across collections
	log.Info().Int64("memory_budget_bytes", budget.Total()).Str("memory_budget_source", budgetSource).
		Int64("gomemlimit_bytes", memLimit).Int("max_frame_bytes", cfg.Proxy.Limits.MaxFrameBytes).Msg("memory budget")
	go returnAfterBursts(ctx, budget, log)
	ready := admin.NewReadiness()
	var closers []func()
	defer func() {
		for i := len(closers) - 1; i >= 0; i-- {
			closers[i]()
		}
	}()

	if cfg.UseEmbedded() {
		emb, err := embedded.New(cfg.Embedded.Server, log)
		if err != nil {
			return err
		}
		if err := emb.Start(context.Background()); err != nil {
			return fmt.Errorf("embedded Iggy server: %w", err)
		}
		closers = append(closers, func() { _ = emb.Close() })
		cfg.Iggy.Address = emb.Addr().String()
		log.Info().Str("iggy_address", cfg.Iggy.Address).Msg("embedded Iggy server started (no iggy.address configured)")
	}

	client, err := iggy.New(cfg.Iggy, log.With().Str("component", "iggy").Logger(),
		iggy.WithMetrics(metrics.Iggy()), iggy.WithClientVersion(version))
	if err != nil {
		return err
	}
	closers = append(closers, func() { _ = client.Close() })
	// The pool keeps reconnecting on its own; the sidecar starts serving
	// right away and /readyz says when Iggy is reachable.
	go func() {
		if err := client.Start(ctx); err != nil && ctx.Err() == nil {
			log.Error().Err(err).Str("iggy_address", cfg.Iggy.Address).Msg("Iggy refused the login; check iggy.username/password or iggy.personal_access_token")
		}
	}()

	bopts := bridge.Options{Config: cfg.Bridge, Client: client, Log: log.With().Str("component", "bridge").Logger(), Metrics: metrics.Bridge(), Budget: budget}
	if bopts.Users = principalPools(cfg, client, budget, log); bopts.Users != nil {
		closers = append(closers, bopts.Users.Close)
	}
	scramStore, err := loadScram(cfg, log)
	if err != nil {
		return err
	}
	bopts.Scram = auth.NewScramLog(scramStore, client, log.With().Str("component", "scram").Logger())
	var router *cluster.Router
	if cfg.Peers.Enabled() {
		// One Kafka group across the sidecars of the domain: a control
		// session of its own holds this sidecar's membership in the
		// domain's Iggy group (a data-lane reset must not drop it).
		ccfg := cfg.Iggy
		ccfg.PoolSize = 1
		ccfg.KeepaliveInterval = 0
		ctl, err := iggy.New(ccfg, log.With().Str("component", "coordination").Logger(), iggy.WithClientVersion(version))
		if err != nil {
			return err
		}
		closers = append(closers, func() { _ = ctl.Close() })
		go func() { _ = ctl.Start(ctx) }()
		router, err = cluster.NewRouter(cluster.Options{Peers: cfg.Peers, Coordination: cfg.Coordination, Control: ctl, Data: client,
			Log: log.With().Str("component", "coordination").Logger()})
		if err != nil {
			return err
		}
		bopts.Groups = router.Wrap
		bopts.ConsumerGroups = router.WrapConsumer
		bopts.Transactions = router.WrapTxn
		bopts.TxnOffsets = router.WrapTxnOffsets
	}
	br, err := bridge.New(bopts)
	if err != nil {
		if router != nil {
			router.Close()
		}
		return err
	}
	br.Start() // the transaction coordinator's sweep (bridge/txn)
	closers = append(closers, br.Close)
	if t := br.Telemetry(); t != nil {
		metrics.Registry().MustRegister(t) // client metrics (KIP-714) on /metrics
	}
	if router != nil {
		router.Start()
		metrics.SetCoordination(cfg.Coordination.Domain, func() admin.CoordinationStats {
			st := router.Stats()
			return admin.CoordinationStats{Shards: st.Shards, Owned: st.Owned, Peers: st.Peers, PeersIn: st.PeersIn, PeersRefused: st.PeersRefused}
		})
		// Runs before the Iggy clients close (closers run in reverse).
		closers = append(closers, router.Close)
	}
	pxOpts := []proxy.Option{proxy.WithMetrics(metrics.Proxy()), proxy.WithBudget(budget)}
	if cfg.SASL.Enabled {
		a, err := newAuthenticator(cfg, scramStore, metrics, log.With().Str("component", "sasl").Logger())
		if err != nil {
			return err
		}
		pxOpts = append(pxOpts, proxy.WithAuth(a))
	}
	if cu, err := certUsers(cfg, log); err != nil {
		return err
	} else if cu != nil {
		pxOpts = append(pxOpts, proxy.WithCertUsers(cu))
	}
	pcfg := cfg.Proxy
	var front *tlsfront.Front
	if cfg.TLS.Enabled {
		// TLS is terminated in front of the gnet loops (proxy/tlsfront);
		// gnet listens on loopback behind it.
		if front, pcfg, err = startTLSFront(cfg, metrics.Registry(), budget, log.With().Str("component", "tls").Logger()); err != nil {
			return err
		}
		pxOpts = append(pxOpts, proxy.WithFront(frontLookup(front)))
	}
	px, err := proxy.New(pcfg, br.Table(), log, pxOpts...)
	if err != nil {
		if front != nil {
			front.Close()
		}
		return err
	}
	if err := px.Start(ctx); err != nil {
		if front != nil {
			front.Close()
		}
		return fmt.Errorf("kafka listener: %w", err)
	}
	kafkaAddr := px.Addr().String()
	if front != nil {
		front.Start(kafkaAddr)
		kafkaAddr = front.Addr().String()
		defer front.Close()
	}
	host, port := px.Advertised()
	br.SetBroker(bridge.Broker{NodeID: 0, Host: host, Port: port})
	ready.AddCheck("kafka_listener", func() bool { return true })
	ready.AddCheck("iggy_session", client.Ready)
	ready.AddLiveness("proxy", func() string { return px.Stalled(cfg.Admin.StallTimeout) })

	var adm *admin.Server
	if cfg.Admin.Enabled {
		adm = admin.New(cfg.Admin, metrics, ready, log.With().Str("component", "admin").Logger())
		if err := adm.Start(ctx); err != nil {
			_ = px.Shutdown(context.Background())
			return fmt.Errorf("admin listener: %w", err)
		}
		closers = append(closers, func() {
			sctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			defer cancel()
			_ = adm.Shutdown(sctx)
		})
	}
	st := started{Kafka: kafkaAddr, Iggy: cfg.Iggy.Address}
	if adm != nil {
		st.Admin = adm.Addr().String()
	}
	log.Info().Str("kafka_address", st.Kafka).Str("advertised", fmt.Sprintf("%s:%d", host, port)).
		Str("admin_address", st.Admin).Str("iggy_address", st.Iggy).Str("security_protocol", cfg.SecurityProtocol()).Str("version", version).Msg("kafka-iggy ready for Kafka clients")
	if onStart != nil {
		onStart(st)
	}

	<-ctx.Done()
	log.Info().Msg("shutting down: readiness off, draining in-flight requests")
	ready.SetDraining()
	if d := cfg.Shutdown.UnreadyDelay; d > 0 {
		t := time.NewTimer(d)
		<-t.C
	}
	// Group requests parked for a rebalance answer NOT_COORDINATOR now, so
	// they do not hold the drain until their rebalance timeout.
	br.Drain()
	if router != nil {
		// Release owned shards now (markers: their next owners start at
		// once) so the rest of the domain takes over while this one drains.
		router.Close()
	}
	if front != nil {
		front.StopAccepting() // new connections refused; open ones drain behind
	}
	dctx, cancel := context.WithTimeout(context.Background(), cfg.Proxy.Limits.DrainTimeout)
	defer cancel()
	if err := px.Shutdown(dctx); err != nil && !errors.Is(err, context.DeadlineExceeded) {
		log.Warn().Err(err).Msg("kafka listener shutdown")
	}
	return nil
}

// embeddedIggy runs only the embedded Iggy-protocol server.
func embeddedIggy(args []string) int {
	log := zerolog.New(os.Stderr).With().Timestamp().Logger()
	return embedded.Main(args, log)
}
