package main

// kfake as a child process of the bench's own binary, so that its CPU and
// memory are measured from /proc like every other target's:
//
//	bench kfake -listen 127.0.0.1:P -metrics 127.0.0.1:M
//
// It serves Go runtime metrics in Prometheus text format on -metrics and
// runs until SIGTERM/SIGINT (or until the bench dies: Pdeathsig).

import (
	"context"
	"flag"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/signal"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/prometheus/client_golang/prometheus/promhttp"
	"github.com/twmb/franz-go/pkg/kfake"
)

// serveMetrics serves the default Prometheus registry (Go runtime and
// process collectors) on addr.
func serveMetrics(addr string) (func(), error) {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, err
	}
	srv := &http.Server{Handler: promhttp.Handler(), ReadHeaderTimeout: 5 * time.Second}
	go func() { _ = srv.Serve(ln) }()
	return func() { _ = srv.Close() }, nil
}

// kfakeMain runs franz-go's kfake, one broker on -listen, until signalled.
func kfakeMain(args []string) int {
	fs := flag.NewFlagSet("kfake", flag.ContinueOnError)
	listen := fs.String("listen", "127.0.0.1:0", "broker listen address (loopback)")
	metrics := fs.String("metrics", "", "Prometheus text endpoint address (empty: none)")
	if err := fs.Parse(args); err != nil {
		return 2
	}
	_, portS, err := net.SplitHostPort(*listen)
	if err != nil {
		fmt.Fprintln(os.Stderr, "kfake:", err)
		return 2
	}
	port, _ := strconv.Atoi(portS)
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	c, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.Ports(port), kfake.AllowAutoTopicCreation())
	if err != nil {
		fmt.Fprintln(os.Stderr, "kfake:", err)
		return 1
	}
	defer c.Close()
	if *metrics != "" {
		closeM, err := serveMetrics(*metrics)
		if err != nil {
			fmt.Fprintln(os.Stderr, "kfake metrics:", err)
			return 1
		}
		defer closeM()
	}
	fmt.Println("kfake listening on", strings.Join(c.ListenAddrs(), ","))
	<-ctx.Done()
	return 0
}
