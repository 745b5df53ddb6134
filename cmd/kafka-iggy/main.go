// Command kafka-iggy is a Kafka-protocol sidecar for Apache Iggy.
//
// Subcommands:
//
//	serve          run the sidecar (default)
//	embedded-iggy  run only the embedded Iggy-protocol server
//	check-config   print the effective configuration and every problem in it
//	inject         serve the Kubernetes sidecar injector (mutating webhook)
//	scram          print a SCRAM credential line for sasl.scram_file
//	version        print the version
package main

import (
	"fmt"
	"os"
)

// version is set at build time with -ldflags "-X main.version=...".
var version = "dev"

func main() {
	os.Exit(run(os.Args[1:]))
}

func run(args []string) int {
	cmd := "serve"
	if len(args) > 0 && len(args[0]) > 0 && args[0][0] != '-' {
		cmd, args = args[0], args[1:]
	}
	switch cmd {
	case "version":
		fmt.Println("kafka-iggy", version)
		return 0
	case "serve":
		return serve(args)
	case "embedded-iggy":
		return embeddedIggy(args)
	case "check-config":
		return runCheckConfig(args, os.Stdout, os.Stderr)
	case "inject":
		return runInject(args, os.Stderr)
	case "scram":
		return runScram(args, os.Stdin, os.Stdout, os.Stderr)
	case "iggy-user":
		return runIggyUser(args, os.Getenv, os.Stdout, os.Stderr)
	case "help", "-h", "--help":
		usage()
		return 0
	}
	fmt.Fprintf(os.Stderr, "kafka-iggy: unknown command %q\n", cmd)
	usage()
	return 2
}

func usage() {
	fmt.Fprint(os.Stderr, `usage: kafka-iggy [command] [flags]

commands:
  serve          run the sidecar (default)
  embedded-iggy  run only the embedded Iggy-protocol server
  check-config   print the effective configuration (secrets masked) and every problem
  inject         serve the Kubernetes sidecar injector (a mutating admission
                 webhook over TLS; kafka-iggy inject -h for its flags)
  scram          print a SCRAM credential line for sasl.scram_file (password on stdin)
  iggy-user      create the app's Iggy user with only its streams' permissions
                 (logged in as an Iggy admin; kafka-iggy iggy-user -h)
  version        print the version

serve and check-config take --config FILE, KAFKA_IGGY_* environment variables
("__" between nested keys) and one --<key>=<value> flag per key; see
docs/OPERATIONS.md.
`)
}
