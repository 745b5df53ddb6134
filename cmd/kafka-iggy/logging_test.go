package main

import (
	"bytes"
	"encoding/json"
	"os"
	"regexp"
	"strings"
	"testing"
	"time"
)

func TestJSONLogger(t *testing.T) {
	var buf bytes.Buffer
	log := newLogger(LogConfig{Level: "info", Format: "json"}, &buf)
	log.Debug().Msg("hidden")
	log.Info().Uint64("conn_id", 7).Int16("api_key", 0).Int32("corr_id", 3).Msg("shown")
	lines := strings.Split(strings.TrimSpace(buf.String()), "\n")
	if len(lines) != 1 {
		t.Fatalf("want one line (debug filtered), got %q", buf.String())
	}
	var rec map[string]any
	if err := json.Unmarshal([]byte(lines[0]), &rec); err != nil {
		t.Fatal(err)
	}
	if rec["level"] != "info" || rec["message"] != "shown" || rec["conn_id"] != float64(7) || rec["corr_id"] != float64(3) {
		t.Errorf("record = %v", rec)
	}
	ts, ok := rec["time"].(string)
	if !ok {
		t.Fatalf("no time in %v", rec)
	}
	if tm, err := time.Parse(time.RFC3339Nano, ts); err != nil || time.Since(tm) > time.Minute {
		t.Errorf("time %q: %v", ts, err)
	}
}

func TestConsoleLoggerAndLevels(t *testing.T) {
	var buf bytes.Buffer
	log := newLogger(LogConfig{Level: "DEBUG", Format: "console"}, &buf)
	log.Debug().Str("component", "proxy").Uint64("conn_id", 7).Msg("human readable")
	out := buf.String()
	// time, level, component, message, the other fields; no colour off a
	// terminal.
	if !regexp.MustCompile(`^\d\d:\d\d:\d\d\.\d{3} DBG proxy: human readable conn_id=7\n$`).MatchString(out) {
		t.Errorf("console output = %q", out)
	}
	// Milliseconds, not whole seconds: two lines 5 ms apart differ.
	buf.Reset()
	log.Info().Msg("a")
	time.Sleep(5 * time.Millisecond) // lets the clock move; synchronises nothing
	log.Info().Msg("b")
	lines := strings.Split(strings.TrimSpace(buf.String()), "\n")
	if len(lines) != 2 || lines[0][:12] == lines[1][:12] {
		t.Errorf("console timestamps without milliseconds: %q", lines)
	}
	for level, logged := range map[string][]bool{
		"trace": {true, true, true}, "debug": {false, true, true}, "warn": {false, false, true}, "error": {false, false, false},
	} {
		buf.Reset()
		l := newLogger(LogConfig{Level: level, Format: "json"}, &buf)
		l.Trace().Msg("t")
		got := []bool{buf.Len() > 0}
		l.Debug().Msg("d")
		got = append(got, buf.Len() > 0)
		l.Warn().Msg("w")
		got = append(got, buf.Len() > 0)
		if got[0] != logged[0] || got[1] != logged[1] || got[2] != logged[2] {
			t.Errorf("level %s: trace/debug/warn logged %v, want %v", level, got, logged)
		}
	}
}

// log.format auto is console on a terminal and JSON otherwise; json and
// console force either.
func TestLogFormatAuto(t *testing.T) {
	for _, c := range []struct {
		format   string
		terminal bool
		console  bool
	}{
		{"auto", true, true}, {"auto", false, false},
		{"json", true, false}, {"json", false, false},
		{"console", true, true}, {"console", false, true},
	} {
		if got := useConsole(c.format, c.terminal); got != c.console {
			t.Errorf("format %s, terminal %v: console %v", c.format, c.terminal, got)
		}
	}
	// Off a terminal (a buffer, a pipe, /dev/null) auto writes JSON.
	var buf bytes.Buffer
	auto := newLogger(LogConfig{Level: "info", Format: "auto"}, &buf)
	auto.Info().Msg("m")
	if !strings.HasPrefix(buf.String(), "{") {
		t.Errorf("auto into a buffer = %q", buf.String())
	}
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	defer w.Close()
	null, err := os.OpenFile(os.DevNull, os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer null.Close()
	if isTerminal(w) || isTerminal(null) {
		t.Errorf("a pipe or %s taken for a terminal", os.DevNull)
	}
	// A pseudo-terminal is one.
	pty, err := os.OpenFile("/dev/ptmx", os.O_RDWR, 0)
	if err != nil {
		t.Skipf("no pseudo-terminal here: %v", err)
	}
	defer pty.Close()
	if !isTerminal(pty) {
		t.Error("/dev/ptmx not taken for a terminal")
	}
}

// The configuration logged as an object carries every key and no secret.
func TestConfigLoggedWithoutSecrets(t *testing.T) {
	cfg := DefaultConfig()
	cfg.Iggy.Address = "iggy:8090"
	cfg.Iggy.Password = "log-me-not-1"
	cfg.Iggy.PersonalAccessToken = "log-me-not-2"
	cfg.Embedded.Server.RootPassword = "log-me-not-3"
	cfg.SASL.Users = map[string]string{"bob": "log-me-not-4"}
	var buf bytes.Buffer
	log := newLogger(LogConfig{Level: "info", Format: "json"}, &buf)
	log.Info().Object("config", cfg).Msg("starting")
	out := buf.String()
	if strings.Contains(out, "log-me-not") {
		t.Fatalf("a secret reached the log: %s", out)
	}
	var rec struct {
		Config map[string]any `json:"config"`
	}
	if err := json.Unmarshal([]byte(out), &rec); err != nil {
		t.Fatal(err)
	}
	for _, lf := range leafIndex().list {
		if _, ok := rec.Config[lf.key]; !ok {
			t.Errorf("%s not logged", lf.key)
		}
	}
	if rec.Config["iggy.address"] != "iggy:8090" || rec.Config["iggy.password"] != maskedValue || rec.Config["sasl.users"] != "{bob: ******}" {
		t.Errorf("logged config: %v", rec.Config)
	}
}
