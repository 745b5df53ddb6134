package e2e

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kfake"
)

// Targets are started once per test binary and shared by every test; each
// test works on topics of its own (uniqueTopic).
var (
	targetsOnce sync.Once
	allTargets  []Target
	targetsErr  error
	stopFuncs   []func()
)

func TestMain(m *testing.M) {
	code := m.Run()
	for i := len(stopFuncs) - 1; i >= 0; i-- {
		stopFuncs[i]()
	}
	os.Exit(code)
}

func startTargets() {
	kf, stop, err := startKfake()
	if err != nil {
		targetsErr = fmt.Errorf("start kfake: %w", err)
		return
	}
	stopFuncs = append(stopFuncs, stop)
	allTargets = append(allTargets, kf)

	sc, stopSC, ok, err := startSidecar()
	if err != nil {
		targetsErr = fmt.Errorf("start sidecar (sidecar_target.go): %w", err)
		return
	}
	if ok {
		if stopSC != nil {
			stopFuncs = append(stopFuncs, stopSC)
		}
		allTargets = append(allTargets, sc)
	}

	kafka, stopKafka, ok, err := startKafkaTarget()
	if err != nil {
		targetsErr = fmt.Errorf("start the Kafka broker (kafka_target.go): %w", err)
		return
	}
	if ok {
		if stopKafka != nil {
			stopFuncs = append(stopFuncs, stopKafka)
		}
		allTargets = append(allTargets, kafka)
	}

	ext, err := externalTargets(os.Getenv("KAFKA_IGGY_E2E_BROKERS"))
	if err != nil {
		targetsErr = err
		return
	}
	allTargets = append(allTargets, ext...)
}

// startKfake starts franz-go's in-process reference broker: one broker on
// 127.0.0.1 with a port the kernel picks, topics auto-created with one partition when a client
// asks for it.
func startKfake() (Target, func(), error) {
	c, err := kfake.NewCluster(
		kfake.NumBrokers(1),
		kfake.AllowAutoTopicCreation(),
		kfake.DefaultNumPartitions(1),
	)
	if err != nil {
		return Target{}, nil, err
	}
	return Target{
		Name:                 "kfake",
		Bootstrap:            c.ListenAddrs()[0],
		Reference:            true,
		KeepsProducerBatches: true,
	}, c.Close, nil
}

// externalTargets parses KAFKA_IGGY_E2E_BROKERS:
// "name=[kind@]host:port,...", kind "sidecar" (the default: a kafka-iggy
// sidecar, held to the sidecar's intended differences whatever its name)
// or "broker" (any other Kafka-protocol broker, held to Kafka's values).
func externalTargets(spec string) ([]Target, error) {
	var out []Target
	for _, item := range strings.Split(spec, ",") {
		item = strings.TrimSpace(item)
		if item == "" {
			continue
		}
		name, addr, ok := strings.Cut(item, "=")
		if !ok || name == "" || addr == "" {
			return nil, fmt.Errorf("KAFKA_IGGY_E2E_BROKERS: %q is not name=[sidecar@|broker@]host:port", item)
		}
		tg := Target{Name: name, Bootstrap: addr, Sidecar: true}
		if kind, rest, ok := strings.Cut(addr, "@"); ok {
			switch kind {
			case "sidecar":
			case "broker":
				tg.Sidecar = false
			default:
				return nil, fmt.Errorf("KAFKA_IGGY_E2E_BROKERS: %q: kind %q is neither sidecar nor broker", item, kind)
			}
			if rest == "" {
				return nil, fmt.Errorf("KAFKA_IGGY_E2E_BROKERS: %q has no host:port", item)
			}
			tg.Bootstrap = rest
		}
		out = append(out, tg)
	}
	return out, nil
}

// targets returns the brokers a test runs against, filtered by
// KAFKA_IGGY_E2E_TARGETS when that is set.
func targets(t *testing.T) []Target {
	t.Helper()
	targetsOnce.Do(startTargets)
	if targetsErr != nil {
		t.Fatal(targetsErr)
	}
	keep := os.Getenv("KAFKA_IGGY_E2E_TARGETS")
	if keep == "" {
		return allTargets
	}
	var out []Target
	for _, tg := range allTargets {
		for _, n := range strings.Split(keep, ",") {
			if strings.TrimSpace(n) == tg.Name {
				out = append(out, tg)
			}
		}
	}
	if len(out) == 0 {
		t.Fatalf("KAFKA_IGGY_E2E_TARGETS=%q matches none of the started targets %v", keep, targetNames(allTargets))
	}
	return out
}

// referenceTarget returns the real Kafka broker when one runs, else kfake,
// whatever KAFKA_IGGY_E2E_TARGETS says.
func referenceTarget(t *testing.T) Target {
	t.Helper()
	targetsOnce.Do(startTargets)
	if targetsErr != nil {
		t.Fatal(targetsErr)
	}
	for _, tg := range allTargets {
		if tg.Kafka {
			return tg
		}
	}
	for _, tg := range allTargets {
		if tg.Reference {
			return tg
		}
	}
	t.Fatal("no reference target")
	return Target{}
}

func targetNames(ts []Target) []string {
	var out []string
	for _, tg := range ts {
		out = append(out, tg.Name)
	}
	return out
}

// inCI reports whether the suite runs in CI, where a missing tool is a failure.
func inCI() bool { return os.Getenv("CI") == "true" }

// missingDependency fails the test in CI and skips it elsewhere; either way the
// message names what is missing and the script that installs it.
func missingDependency(t *testing.T, format string, args ...any) {
	t.Helper()
	msg := fmt.Sprintf(format, args...) + "; run scripts/install-test-deps.sh (make test-deps)"
	if inCI() {
		t.Fatal(msg)
	}
	t.Skip(msg)
}

// lookTool finds an executable on PATH or reports it as a missing dependency.
func lookTool(t *testing.T, name string) string {
	t.Helper()
	p, err := exec.LookPath(name)
	if err != nil {
		missingDependency(t, "%s not found on PATH", name)
	}
	return p
}

// testCtx returns a context bounded by d and by the test's own deadline.
func testCtx(t *testing.T, d time.Duration) context.Context {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), d)
	t.Cleanup(cancel)
	return ctx
}
