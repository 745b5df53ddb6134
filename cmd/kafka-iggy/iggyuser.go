package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"time"

	"github.com/rs/zerolog"
	"github.com/spf13/pflag"

	"github.com/kafka-iggy/kafka-iggy/bridge/iggy"
	icodec "github.com/kafka-iggy/kafka-iggy/codec/iggy"
)

// sidecarStream is the stream the sidecar keeps its own state in (the
// coordination, topic-config, quota, SCRAM, producer-id and offset logs).
const sidecarStream = "__kafka_iggy"

// runIggyUser is `kafka-iggy iggy-user`: logged in as an Iggy
// administrator, it creates the app's streams (and the sidecar's own
// __kafka_iggy) when missing and the app's Iggy user with only the
// permissions a sidecar needs on those streams (read the stream, manage,
// read, poll and send its topics), or sets those permissions on an
// existing user. The deploy/ Job runs it, so the sidecar never logs in as
// root. Credentials come from the environment (mounted Secrets):
// IGGY_ADMIN_USERNAME, IGGY_ADMIN_PASSWORD, IGGY_APP_USERNAME,
// IGGY_APP_PASSWORD.
func runIggyUser(args []string, getenv func(string) string, stdout, stderr io.Writer) int {
	fs := pflag.NewFlagSet("iggy-user", pflag.ContinueOnError)
	fs.SetOutput(stderr)
	addr := fs.String("address", "", "the Iggy server's TCP host:port (required)")
	streams := fs.StringSlice("stream", []string{"kafka"}, "the app's Kafka streams (topics.default_stream and the overrides' streams)")
	timeout := fs.Duration("timeout", time.Minute, "how long to keep trying to reach Iggy")
	fs.Usage = func() {
		fmt.Fprintln(stderr, "usage: IGGY_ADMIN_USERNAME=.. IGGY_ADMIN_PASSWORD=.. IGGY_APP_USERNAME=.. IGGY_APP_PASSWORD=.. kafka-iggy iggy-user --address HOST:PORT [--stream kafka]...")
		fs.PrintDefaults()
	}
	if err := fs.Parse(args); err != nil {
		return 2
	}
	need := map[string]string{}
	for _, k := range []string{"IGGY_ADMIN_USERNAME", "IGGY_ADMIN_PASSWORD", "IGGY_APP_USERNAME", "IGGY_APP_PASSWORD"} {
		if need[k] = getenv(k); need[k] == "" {
			fmt.Fprintf(stderr, "kafka-iggy iggy-user: %s is not set\n", k)
			return 2
		}
	}
	if *addr == "" {
		fmt.Fprintln(stderr, "kafka-iggy iggy-user: --address is required")
		return 2
	}
	ctx, cancel := context.WithTimeout(context.Background(), *timeout)
	defer cancel()
	if err := provisionIggyUser(ctx, *addr, need["IGGY_ADMIN_USERNAME"], need["IGGY_ADMIN_PASSWORD"],
		need["IGGY_APP_USERNAME"], need["IGGY_APP_PASSWORD"], append(*streams, sidecarStream)); err != nil {
		fmt.Fprintln(stderr, "kafka-iggy iggy-user:", err)
		return 1
	}
	fmt.Fprintf(stdout, "Iggy user %s may use streams %v\n", need["IGGY_APP_USERNAME"], append(*streams, sidecarStream))
	return 0
}

// provisionIggyUser makes streams exist and user exist with the sidecar's
// permissions on them (and no other).
func provisionIggyUser(ctx context.Context, addr, adminUser, adminPassword, user, password string, streams []string) error {
	cfg := iggy.DefaultConfig()
	cfg.Address, cfg.Username, cfg.Password, cfg.PoolSize = addr, adminUser, adminPassword, 1
	cl, err := iggy.New(cfg, zerolog.Nop())
	if err != nil {
		return err
	}
	defer func() { _ = cl.Close() }()
	if err := cl.Start(ctx); err != nil {
		return fmt.Errorf("admin login: %w", err)
	}
	perms := &icodec.SizedPermissions{}
	seen := map[uint32]bool{}
	for _, name := range streams {
		id, err := cl.EnsureStream(ctx, name)
		if err != nil {
			return fmt.Errorf("stream %s: %w", name, err)
		}
		if seen[id] {
			continue
		}
		seen[id] = true
		perms.Permissions.Streams = append(perms.Permissions.Streams, icodec.StreamPermissions{StreamID: id,
			ReadStream: true, ManageTopics: true, ReadTopics: true, PollMessages: true, SendMessages: true})
	}
	err = cl.Do(ctx, &icodec.CreateUserRequest{Username: user, Password: password, Status: icodec.UserStatusActive, Permissions: perms}, nil)
	if errors.Is(err, icodec.StatusUserAlreadyExists) {
		err = cl.Do(ctx, &icodec.UpdatePermissionsRequest{UserID: icodec.Identifier{Kind: icodec.IdentifierKindString, Value: []byte(user)}, Permissions: perms}, nil)
	}
	return err
}
