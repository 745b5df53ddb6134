package embedded

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"

	"github.com/rs/zerolog"
	"github.com/spf13/pflag"
)

// Main runs a standalone embedded Iggy server (the `kafka-iggy
// embedded-iggy` subcommand) until SIGINT or SIGTERM and returns the exit
// status: 0 after a clean stop, 1 when the server failed, 2 for bad flags.
// args are the subcommand's arguments; usage and flag errors go to stderr.
//
// Flags: --listen, --data-dir, --root-user, --root-password, plus
// --reply-to-malformed, --external-groups and --pprof-addr (see Config).
func Main(args []string, log zerolog.Logger) int {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	return runMain(ctx, args, log, os.Stderr, nil)
}

// runMain is Main until ctx ends, with the error output and an optional
// callback that receives the started server (tests use it to learn the
// port).
func runMain(ctx context.Context, args []string, log zerolog.Logger, stderr io.Writer, started func(*Server)) int {
	cfg := DefaultConfig()
	fs := pflag.NewFlagSet("embedded-iggy", pflag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.StringVar(&cfg.Listen, "listen", cfg.Listen, "TCP listen address host:port (port 0 picks one)")
	fs.StringVar(&cfg.DataDir, "data-dir", cfg.DataDir, "data directory; empty keeps everything in memory")
	fs.StringVar(&cfg.RootUsername, "root-user", cfg.RootUsername, "root user name at first start")
	fs.StringVar(&cfg.RootPassword, "root-password", cfg.RootPassword, "root user password at first start")
	fs.BoolVar(&cfg.ReplyToMalformed, "reply-to-malformed", cfg.ReplyToMalformed, "answer requests the real server drops silently (debugging)")
	fs.StringVar(&cfg.PprofAddr, "pprof-addr", cfg.PprofAddr, "serve net/http/pprof on this loopback host:port (off when empty)")
	fs.StringVar(&cfg.Protocol, "protocol", cfg.Protocol, "protocol generation: 0.11 (Iggy server 0.9) or 0.12 (Iggy server 0.10)")
	fs.BoolVar(&cfg.ExternalGroups, "external-groups", cfg.ExternalGroups, "enable consumer kind 3 (external groups, post-0.11 semantics)")
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, pflag.ErrHelp) {
			return 0
		}
		fmt.Fprintf(stderr, "embedded-iggy: %v\n", err)
		return 2
	}
	if fs.NArg() > 0 {
		fmt.Fprintf(stderr, "embedded-iggy: unexpected arguments %q\n", fs.Args())
		return 2
	}
	srv, err := New(cfg, log)
	if err != nil {
		fmt.Fprintf(stderr, "embedded-iggy: %v\n", err)
		return 2
	}
	if err := srv.Start(ctx); err != nil {
		log.Error().Err(err).Msg("embedded Iggy server failed to start")
		return 1
	}
	if started != nil {
		started(srv)
	}
	<-ctx.Done()
	if err := srv.Close(); err != nil {
		log.Error().Err(err).Msg("embedded Iggy server stopped with an error")
		return 1
	}
	return 0
}
